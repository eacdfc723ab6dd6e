//! Parse: the attribute's arguments (darling) and the function's signature.

use super::errors::Errors;
use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

/// The arguments of `#[differentiable(...)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct Args {
    /// Print the primal IR, its structured form and the generated rules at expansion time.
    #[darling(default)]
    pub(crate) dump_ir: bool,
    /// Insert run-time checks (finite values) into the generated rules.
    #[darling(default)]
    pub(crate) debug: bool,
    /// Derive `NAME_frule` only (the reverse rule is written by hand, `from_rrule!`, or not
    /// needed).
    #[darling(default)]
    pub(crate) forward_only: bool,
    /// Derive `NAME_rrule` only.
    #[darling(default)]
    pub(crate) reverse_only: bool,
    /// Box the pullback of every call in the body (reverse mode), not only of calls of the
    /// function itself: needed on one function of each cycle of mutual recursion, whose
    /// pullback types would otherwise contain themselves.
    #[darling(default)]
    pub(crate) recursive: bool,
    /// Derive the reverse rule from a copy of the function generic over the float
    /// (`differentiable/twin.rs`), so that `hvp!` and `hessian!` can run it on dual numbers.
    #[darling(default)]
    pub(crate) second_order: bool,
}

impl Args {
    pub(crate) fn parse(attr: TokenStream, errors: &mut Errors) -> Args {
        if attr.is_empty() {
            return Args::default();
        }
        match NestedMeta::parse_meta_list(attr) {
            Ok(items) => match Args::from_list(&items) {
                Ok(args) => args,
                Err(e) => {
                    errors.push(e.into());
                    Args::default()
                }
            },
            Err(e) => {
                errors.push(darling::Error::from(e).into());
                Args::default()
            }
        }
    }
}

/// How a method takes `self`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Receiver {
    Value,
    Ref,
    Mut,
}

/// One argument: its name, declared type and, for `self`, how it is taken.
pub(crate) struct Arg {
    pub(crate) name: syn::Ident,
    pub(crate) ty: syn::Type,
    pub(crate) receiver: Option<Receiver>,
}

/// The parts of the signature the transforms need.
pub(crate) struct Sig {
    pub(crate) args: Vec<Arg>,
    pub(crate) ret: syn::Type,
}

/// Checks the signature and extracts what the transforms need; every unsupported part is
/// reported with its span and what to write instead.
pub(crate) fn signature(sig: &syn::Signature, errors: &mut Errors) -> Sig {
    if let Some(c) = &sig.constness {
        errors.error_spanned(c, "`const fn` cannot be #[differentiable]; remove `const`");
    }
    if let Some(a) = &sig.asyncness {
        errors.error_spanned(a, "`async fn` cannot be #[differentiable]");
    }
    if let Some(u) = &sig.unsafety {
        errors.error_spanned(
            u,
            "`unsafe fn` cannot be #[differentiable]; give it a hand-written rule instead",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.error_spanned(abi, "`extern` functions cannot be #[differentiable]");
    }
    if let Some(v) = &sig.variadic {
        errors.error_spanned(v, "variadic functions cannot be #[differentiable]");
    }
    let mut args = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                let kind = match (&r.reference, r.mutability) {
                    (Some(_), Some(_)) => Receiver::Mut,
                    (Some(_), None) => Receiver::Ref,
                    (None, _) => Receiver::Value,
                };
                if r.colon_token.is_some() {
                    errors.error_spanned(
                        &r.ty,
                        "typed `self` receivers (`self: Box<Self>`) are not supported; use \
                         `self`, `&self` or `&mut self`",
                    );
                }
                args.push(Arg {
                    name: syn::Ident::new("self", r.self_token.span),
                    ty: (*r.ty).clone(),
                    receiver: Some(kind),
                });
            }
            syn::FnArg::Typed(pt) => {
                if let syn::Type::ImplTrait(it) = &*pt.ty {
                    errors.error_spanned(
                        it,
                        "`impl Trait` arguments are not supported; use a named generic parameter",
                    );
                }
                match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        args.push(Arg {
                            name: pi.ident.clone(),
                            ty: unambiguous_type(&pt.ty),
                            receiver: None,
                        })
                    }
                    other => errors.error_spanned(
                        other,
                        "#[differentiable] arguments must be plain names (`x: T`); destructure \
                         inside the body with `let`",
                    ),
                }
            }
        }
    }
    user_trait_bounds(&sig.generics, errors);
    let ret = match &sig.output {
        syn::ReturnType::Default => syn::parse_quote!(()),
        syn::ReturnType::Type(_, ty) => {
            if let syn::Type::Reference(r) = &**ty {
                errors.error_spanned(
                    r,
                    "#[differentiable] functions cannot return references yet; return an owned \
                     value",
                );
            }
            if let syn::Type::ImplTrait(it) = &**ty {
                errors.error_spanned(it, "`impl Trait` return types are not supported");
            }
            unambiguous_type(ty)
        }
    };
    let _ = sig.span();
    Sig { args, ret }
}

/// A type that may stand in a function pointer type or before `as`: `dyn A + 'b` and
/// `impl A + B` (or with a trailing `+`) in parentheses (`fn() -> dyn A + 'b` is an ambiguous
/// `+`; found by the fuzz test).
pub(crate) fn unambiguous(ty: &syn::Type) -> TokenStream {
    let ty = unambiguous_type(ty);
    quote!(#ty)
}

/// [`unambiguous`] as a type.
pub(crate) fn unambiguous_type(ty: &syn::Type) -> syn::Type {
    let ambiguous = match ty {
        syn::Type::TraitObject(t) => t.bounds.len() > 1 || t.bounds.trailing_punct(),
        syn::Type::ImplTrait(t) => t.bounds.len() > 1 || t.bounds.trailing_punct(),
        _ => false,
    };
    if ambiguous {
        syn::Type::Paren(syn::TypeParen {
            paren_token: syn::token::Paren(ty.span()),
            elem: Box::new(ty.clone()),
        })
    } else {
        ty.clone()
    }
}

/// Refuses a type parameter bounded by a trait of the user's own and by no float trait
/// (`fn sse<M: Model>(m: &M, ..)`, `impl<M: Model> Fit<M>`): a call of the trait's method on it
/// reaches no rule, since the derived rules can name no bound that would give them the method's
/// rule (the trait's declaration, which says the method's types, is out of the macro's sight).
/// Before this check such a function failed with type errors that advised putting
/// `#[differentiable]` on an `impl` block that already had it.
pub(crate) fn user_trait_bounds(generics: &syn::Generics, errors: &mut Errors) {
    // Bounds that leave a parameter a number, and the standard library's and the numeric
    // crates' traits (not the user's: what happens with them is the rules' business).
    const FLOATS: &[&str] = &["Float", "Real", "FloatCore", "RealField", "ComplexField"];
    // The operator traits, which leave a parameter a number only beside `Float` or `Primal`.
    const OPERATORS: &[&str] = &[
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Rem",
        "Neg",
        "AddAssign",
        "SubAssign",
        "MulAssign",
        "DivAssign",
    ];
    const MARKERS: &[&str] = &[
        "Copy",
        "Clone",
        "Debug",
        "Default",
        "Send",
        "Sync",
        "Sized",
        "Unpin",
        "PartialEq",
        "Eq",
        "PartialOrd",
        "Ord",
        "Hash",
        "Display",
        "Primal",
        "Sum",
        "Product",
        "From",
        "Into",
        "TryFrom",
        "TryInto",
        "AsRef",
        "AsMut",
        "Borrow",
        "Iterator",
        "IntoIterator",
        "Fn",
        "FnMut",
        "FnOnce",
        "Num",
        "NumCast",
        "FromPrimitive",
        "ToPrimitive",
        "Zero",
        "One",
        "Signed",
        "Bounded",
        "Scalar",
        "Dimension",
        "Dim",
        "Data",
        "DataMut",
        "RawData",
        "Storage",
        "StorageMut",
        "IsContiguous",
        "Any",
    ];
    let params: Vec<&syn::TypeParam> = generics.type_params().collect();
    for p in params {
        let mut bounds: Vec<&syn::TraitBound> = p
            .bounds
            .iter()
            .filter_map(|b| match b {
                syn::TypeParamBound::Trait(t) => Some(t),
                _ => None,
            })
            .collect();
        if let Some(w) = &generics.where_clause {
            for pred in &w.predicates {
                if let syn::WherePredicate::Type(pt) = pred
                    && matches!(&pt.bounded_ty, syn::Type::Path(tp)
                        if tp.qself.is_none() && tp.path.is_ident(&p.ident))
                {
                    bounds.extend(pt.bounds.iter().filter_map(|b| match b {
                        syn::TypeParamBound::Trait(t) => Some(t),
                        _ => None,
                    }));
                }
            }
        }
        let name = |t: &syn::TraitBound| {
            t.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
        };
        if bounds.iter().any(|t| FLOATS.contains(&name(t).as_str())) {
            continue;
        }
        // A number bounded by operator traits alone (`T: Copy + Mul<Output = T>`): the rules
        // know a number by `Float`, which gives them its arithmetic and methods.
        if !bounds.iter().any(|t| name(t) == "Primal")
            && let Some(op) = bounds.iter().find(|t| OPERATORS.contains(&name(t).as_str()))
        {
            let (param, tr) = (&p.ident, name(op));
            errors.error_spanned(
                &op.path,
                format!(
                    "a type parameter used as a number in #[differentiable] code is bounded by \
                     `Float` (`{param}: Float`, from the prelude), which gives the derived rules \
                     its arithmetic and methods; a bound by `{tr}` alone does not"
                ),
            );
            continue;
        }
        let Some(user) = bounds.iter().find(|t| {
            !MARKERS.contains(&name(t).as_str())
                && !OPERATORS.contains(&name(t).as_str())
                && !matches!(t.modifier, syn::TraitBoundModifier::Maybe(_))
        }) else {
            continue;
        };
        let (param, tr) = (&p.ident, name(user));
        errors.error_spanned(
            &user.path,
            format!(
                "#[differentiable] functions cannot be generic over a trait of your own \
                 (`{param}: {tr}`): the derived rules cannot reach the rules of `{tr}`'s methods \
                 through `{param}`; write the function for the concrete type (a `macro_rules!` \
                 can stamp out one per type), or make it generic over `T: Float` only"
            ),
        );
    }
}
