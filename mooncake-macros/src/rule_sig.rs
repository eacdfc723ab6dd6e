//! The signatures that `zero_adjoint!` and `from_rrule!` take: an existing function's
//! signature written without a body, its name possibly a path.
//!
//! ```text
//! [#[attr]]* [vis] fn path::to::name[<generics>](arg: Type, ..) [-> Type] [where ..]
//! ```
//!
//! Shared here: parsing (with spanned errors, never a panic), the refusals common to both
//! macros (`&mut` arguments, references in the output, `impl Trait`, receivers, patterns), and
//! the pieces of the generated rules' signatures (argument types of `Dual` / `CoDual`, `Primal`
//! bounds, the turbofish of the primal call and the `use<..>` of the pullback).

use crate::differentiable::parse::unambiguous_type;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::visit::Visit;
use syn::{Attribute, Generics, Ident, Path, Token, Type, Visibility};

/// The one path through which generated code reaches the runtime.
pub(crate) fn rt() -> TokenStream {
    quote!(::mooncake_runtime::__private)
}

/// The lints generated rules allow: they come from the shape of generated code (a unit
/// output bound to a variable, long pullback types), not from the user's code; `dead_code`
/// because declaring a function's rules must not warn when only one mode is used.
pub(crate) fn allow_attrs() -> TokenStream {
    quote!(
        #[allow(
            dead_code,
            unused_variables,
            non_snake_case,
            clippy::all,
            clippy::pedantic,
            clippy::nursery
        )]
    )
}

/// One argument of a declared signature.
pub(crate) struct Arg {
    /// The argument's name as the user wrote it (for messages only: generated code uses
    /// hygienic names).
    pub(crate) name: Ident,
    /// Its type.
    pub(crate) ty: Type,
}

impl Arg {
    /// The referent `T` when the argument is a shared reference `&T`.
    pub(crate) fn referent(&self) -> Option<&Type> {
        match strip(&self.ty) {
            Type::Reference(r) if r.mutability.is_none() => Some(&r.elem),
            _ => None,
        }
    }
}

/// A declared signature: `[vis] fn path<generics>(args) -> ret where ..`.
pub(crate) struct RuleSig {
    /// Outer attributes, forwarded to every generated rule.
    pub(crate) attrs: Vec<Attribute>,
    /// The visibility the generated rules get.
    pub(crate) vis: Visibility,
    /// The `fn` keyword (a span for messages about the whole signature).
    pub(crate) fn_token: Token![fn],
    /// The path of the primal function.
    pub(crate) path: Path,
    /// Its generic parameters and where clause.
    pub(crate) generics: Generics,
    /// Its arguments.
    pub(crate) args: Vec<Arg>,
    /// Its output type (`()` when none is written).
    pub(crate) ret: Type,
}

/// `T` behind any number of parentheses or invisible groups.
pub(crate) fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => strip(&p.elem),
        Type::Group(g) => strip(&g.elem),
        other => other,
    }
}

impl Parse for RuleSig {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        for (kw, what) in [
            (input.peek(Token![const]), "const"),
            (input.peek(Token![async]), "async"),
            (input.peek(Token![unsafe]), "unsafe"),
            (input.peek(Token![extern]), "extern"),
        ] {
            if kw {
                return Err(input.error(format!(
                    "`{what}` functions are not supported here: declare an ordinary `fn`"
                )));
            }
        }
        if !input.peek(Token![fn]) {
            return Err(input.error(
                "expected a function signature without a body, such as \
                 `fn name(x: &[f64], n: usize) -> f64;`",
            ));
        }
        let fn_token: Token![fn] = input.parse()?;
        let path = Path::parse_mod_style(input)?;
        let mut generics: Generics = input.parse()?;
        let content;
        syn::parenthesized!(content in input);
        let mut args = Vec::new();
        while !content.is_empty() {
            let _ = content.call(Attribute::parse_outer)?;
            if content.peek(Token![self])
                || (content.peek(Token![&])
                    && (content.peek2(Token![self])
                        || content.peek2(Token![mut])
                        || content.peek2(syn::Lifetime)))
                || (content.peek(Token![mut]) && content.peek2(Token![self]))
            {
                // `self`, `&self`, `&mut self`, `&'a self`: a receiver.
                let fork = content.fork();
                let _ = fork.parse::<Option<Token![&]>>();
                let _ = fork.parse::<Option<syn::Lifetime>>();
                let _ = fork.parse::<Option<Token![mut]>>();
                if fork.peek(Token![self]) {
                    return Err(content.error(
                        "methods cannot be declared with a receiver here: name the method by \
                         its path and pass the receiver as an ordinary argument, as in \
                         `fn Type::method(this: &Type, x: f64) -> f64;`",
                    ));
                }
            }
            if content.peek(Token![mut]) {
                return Err(content.error(
                    "remove `mut`: argument names here only name the arguments (the function \
                     already exists)",
                ));
            }
            if !(content.peek(Ident) || content.peek(Token![_])) {
                return Err(content
                    .error("expected an argument `name: Type`; patterns are not supported here"));
            }
            let name: Ident = if content.peek(Token![_]) {
                let u: Token![_] = content.parse()?;
                Ident::new("_unnamed", u.span)
            } else {
                content.parse()?
            };
            content.parse::<Token![:]>()?;
            // A trait object with `+` goes into `<T as Primal>` and `fn(..)` types in
            // parentheses (found by the fuzz test).
            let ty = unambiguous_type(&content.parse()?);
            args.push(Arg { name, ty });
            if content.is_empty() {
                break;
            }
            content.parse::<Token![,]>()?;
        }
        let ret: Type = if input.peek(Token![->]) {
            input.parse::<Token![->]>()?;
            unambiguous_type(&input.parse()?)
        } else {
            syn::parse_quote!(())
        };
        generics.where_clause = input.parse()?;
        if input.peek(syn::token::Brace) {
            return Err(input.error(
                "write the signature without a body: the function already exists elsewhere, \
                 and this macro only declares its rules",
            ));
        }
        Ok(RuleSig { attrs, vis, fn_token, path, generics, args, ret })
    }
}

/// Parses `sig ; sig ; ..` (the last `;` optional); at least one signature. With `arrow`,
/// each signature is followed by `=> path` (the `from_rrule!` form), returned beside it.
pub(crate) fn parse_list<T>(
    input: ParseStream<'_>,
    mut tail: impl FnMut(ParseStream<'_>) -> syn::Result<T>,
    what: &str,
) -> syn::Result<Vec<(RuleSig, T)>> {
    let mut out = Vec::new();
    if input.is_empty() {
        return Err(input.error(format!("expected at least one signature: {what}")));
    }
    while !input.is_empty() {
        let sig: RuleSig = input.parse()?;
        let t = tail(input)?;
        out.push((sig, t));
        if input.is_empty() {
            break;
        }
        if !input.peek(Token![;]) {
            return Err(input.error("expected `;` after the signature"));
        }
        input.parse::<Token![;]>()?;
    }
    Ok(out)
}

/// Finds `&mut` types, references and `impl Trait` types inside a type (as tokens, so that
/// errors cover them whole).
#[derive(Default)]
struct Finder {
    muts: Vec<TokenStream>,
    refs: Vec<TokenStream>,
    impls: Vec<TokenStream>,
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_type_reference(&mut self, r: &'ast syn::TypeReference) {
        if r.mutability.is_some() {
            self.muts.push(r.to_token_stream());
        }
        self.refs.push(r.to_token_stream());
        syn::visit::visit_type_reference(self, r);
    }
    fn visit_type_impl_trait(&mut self, t: &'ast syn::TypeImplTrait) {
        self.impls.push(t.to_token_stream());
        syn::visit::visit_type_impl_trait(self, t);
    }
}

fn find(ty: &Type) -> Finder {
    let mut f = Finder::default();
    f.visit_type(ty);
    f
}

/// Collects errors, so that every problem of every signature is reported at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Records an error.
    pub(crate) fn add(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// Records an error covering `tokens`.
    pub(crate) fn push(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.add(syn::Error::new_spanned(tokens, msg));
    }

    /// The errors as `compile_error!` invocations (empty when there are none).
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0.as_ref().map(syn::Error::to_compile_error).unwrap_or_default()
    }

    /// Whether any error was recorded.
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }
}

impl RuleSig {
    /// The last segment of the primal's path (`parse_mod_style` always yields one).
    pub(crate) fn name(&self) -> Ident {
        match self.path.segments.last() {
            Some(s) => s.ident.clone(),
            None => Ident::new("__mooncake_unnamed", self.fn_token.span),
        }
    }

    /// `NAME_suffix`, spanned at the user's name so that it resolves where the macro is invoked.
    pub(crate) fn rule_name(&self, suffix: &str) -> Ident {
        let name = self.name();
        format_ident!("{}_{}", name, suffix, span = name.span())
    }

    /// The refusals common to both macros. `why_mut` explains why `&mut` arguments are
    /// refused; `why_ref_out` why reference outputs are.
    pub(crate) fn check(&self, errors: &mut Errors, why_mut: &str, why_ref_out: &str) {
        for arg in &self.args {
            let f = find(&arg.ty);
            for tokens in f.muts {
                errors.push(tokens, format!("argument `{}`: {why_mut}", arg.name));
            }
            for tokens in f.impls {
                errors.push(
                    tokens,
                    "`impl Trait` arguments are not supported here: name a type parameter \
                     instead (`fn name<T: Trait>(x: T)`)",
                );
            }
        }
        let f = find(&self.ret);
        if !f.refs.is_empty() {
            errors.push(&self.ret, why_ref_out);
        }
        for tokens in f.impls {
            errors.push(tokens, "`impl Trait` outputs are not supported here: name the type");
        }
    }

    /// The primal call's path with a turbofish of the type and const parameters (so that
    /// parameters that appear in no argument are still fixed), unless the user wrote one.
    pub(crate) fn call_path(&self, path: &Path) -> TokenStream {
        let params = self.type_and_const_params();
        let has_args = path.segments.last().is_some_and(|s| !s.arguments.is_none());
        if params.is_empty() || has_args { quote!(#path) } else { quote!(#path::<#(#params),*>) }
    }

    /// The names of the type and const parameters, in order.
    pub(crate) fn type_and_const_params(&self) -> Vec<&Ident> {
        crate::differentiable::codegen::type_and_const_params(&self.generics)
    }

    /// `<params>` and the user's `where` clause for a generated rule. No `T: Primal` bounds are
    /// added: a where-clause bound such as `[T]: Primal` would hide the impl from rustc, so that
    /// `<[T] as Primal>::Tangent` would no longer normalise to `Vec<T>`. The declared bounds
    /// (`T: Float`) must suffice, and rustc says which bound is missing otherwise.
    pub(crate) fn generics_and_bounds(&self) -> (TokenStream, TokenStream) {
        let params = &self.generics.params;
        let where_clause = &self.generics.where_clause;
        (quote!(<#params>), quote!(#where_clause))
    }

    /// `NAME_rrule_wrt`, which the gradient macros call when an argument is `Const(..)` (see
    /// `rev::Wrt`): a rule these macros declare computes every gradient anyway, so it is
    /// `NAME_rrule` itself.
    pub(crate) fn wrt_forwarder(&self) -> TokenStream {
        let rt = rt();
        let (attrs, vis, fn_token, ret) = (&self.attrs, &self.vis, &self.fn_token, &self.ret);
        let (rrule, name) = (self.rule_name("rrule"), self.rule_name("rrule_wrt"));
        let twin = self.rule_name("rrule_twin");
        let mask = format_ident!("__WRT", span = Span::mixed_site());
        let params = self.generics.params.iter().map(|p| quote!(#p));
        let params = params.chain(std::iter::once(quote!(const #mask: u64)));
        let where_clause = &self.generics.where_clause;
        let args = self.arg_idents("__a");
        let (rparams, rtypes) = (self.reverse_params(&args), self.rdata_types());
        let named = self.type_and_const_params();
        let turbofish = if named.is_empty() { quote!() } else { quote!(::<#(#named),*>) };
        let allow = allow_attrs();
        quote!(
            #(#attrs)*
            #[doc(hidden)]
            #allow
            #[inline]
            #vis #fn_token #name<#(#params),*>(_: #rt::rev::Wrt<#mask>, #(#rparams),*) -> (
                #rt::CoDual<#ret, <#ret as #rt::Primal>::FData>,
                impl ::core::ops::FnOnce(<#ret as #rt::Primal>::RData) -> (#(#rtypes,)*)
                    + use<#(#named,)* #mask>
            )
            #where_clause
            {
                #rrule #turbofish(#(#args),*)
            }
            // The name `hvp!` calls (see `differentiable/twin.rs`).
            #[doc(hidden)]
            #[allow(unused_imports)]
            #vis use #name as #twin;
        )
    }

    /// The hygienic names of the arguments in generated code: `__a0`, `__a1`, ...
    pub(crate) fn arg_idents(&self, prefix: &str) -> Vec<Ident> {
        (0..self.args.len())
            .map(|i| format_ident!("{prefix}{i}", span = Span::mixed_site()))
            .collect()
    }

    /// The reverse rule's parameters, named `args`: `CoDual<&T, <T as Primal>::Shadow>` for
    /// `&T`, `CoDual<A, <A as Primal>::FData>` otherwise.
    pub(crate) fn reverse_params(&self, args: &[Ident]) -> Vec<TokenStream> {
        let rt = rt();
        self.args
            .iter()
            .zip(args)
            .map(|(arg, a)| match arg.referent() {
                Some(inner) => quote!(#a: #rt::CoDual<&#inner, <#inner as #rt::Primal>::Shadow>),
                None => {
                    let ty = &arg.ty;
                    quote!(#a: #rt::CoDual<#ty, <#ty as #rt::Primal>::FData>)
                }
            })
            .collect()
    }

    /// The rdata types the reverse rule's pullback returns: `NoRData` for a reference,
    /// `<A as Primal>::RData` otherwise.
    pub(crate) fn rdata_types(&self) -> Vec<TokenStream> {
        let rt = rt();
        self.args
            .iter()
            .map(|arg| match arg.referent() {
                Some(_) => quote!(#rt::NoRData),
                None => {
                    let ty = &arg.ty;
                    quote!(<#ty as #rt::Primal>::RData)
                }
            })
            .collect()
    }

    /// A documentation line naming the primal as the user wrote it.
    pub(crate) fn display_path(&self) -> String {
        self.path.to_token_stream().to_string().replace(' ', "")
    }
}
