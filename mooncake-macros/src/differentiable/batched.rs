//! The batched form of a derived forward rule: `NAME__lanes`, which
//! `value_and_gradient_forward!(f(..), chunk = N)` calls to carry `N` directions per pass
//! (issue 16; the runtime's `lanes` module).
//!
//! For a free function whose arguments are numbers and buffers of numbers and whose body uses
//! only what has batched rules (arithmetic, float methods, `len`, `iter().sum()`, `to_vec`,
//! `push`, `fill`, `swap`, `reverse`, casts, loads and stores,
//! control flow, locals of those types), it emits
//!
//! ```text
//! fn f__lanes<'a, T: Float, const __N: usize>(x: &'a [T], s: T, n: usize,
//!     __first: usize, __offsets: &[usize]) -> Dual<T, Lanes<T, __N>> {
//!     fn __rule<..>(x: Dual<&[T], &[Lanes<T, __N>]>, ..) -> Dual<T, Lanes<T, __N>> { .. }
//!     // each argument's tangent seeded with directions __first .. __first + __N
//!     __rule(Dual::new(x, ..), ..)
//! }
//! ```
//!
//! where `__rule`'s body is the tokens of `f_frule`'s body, cloned: [`super::forward::Forward`]
//! writes what differs between the two rules (constants, casts, arithmetic, method dispatch,
//! empty buffers) as names under `__fwd::`, which each rule imports from one of the runtime's
//! two dialects (`fwd::dialect::one`, `fwd::dialect::lanes`). So the batched rule is not a
//! second derivation, and its body is not generated twice. Every other free function gets the
//! runtime's stub `lanes::unbatched::aK` under that name instead, which tells the API to run one
//! direction per pass.

use super::codegen::{Names, rt};
use super::ir::{Body, Local, NUMBER_METHODS, Operand, Place, Rvalue, StatementKind};
use super::{FnParts, local_declarations, parse};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The suffix of the batched entry's name.
pub(crate) const SUFFIX: &str = "__lanes";

/// Methods with batched rules besides the numbers' ([`NUMBER_METHODS`], whose float rules are
/// generic over the tangent's directions and whose integer rules have no tangent).
const OTHER_METHODS: &[&str] = &["sin_cos", "len"];

/// Buffer methods with batched rules (`fwd::lanes`, dispatched in a batched rule under `__lanes_`
/// and the name: `Forward::method_call` writes both keys, the dialect picks one).
pub(crate) const LANES_BUFFER_METHODS: &[&str] =
    &["__iter_sum", "to_vec", "push", "fill", "swap", "reverse"];

const INTS: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool",
    "char",
];

/// What a type is, as far as batched tangents go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Float,
    Int,
}

fn scalar(ty: &syn::Type, floats: &[syn::Ident]) -> Option<Scalar> {
    match ty {
        syn::Type::Paren(p) => scalar(&p.elem, floats),
        syn::Type::Path(p) if p.qself.is_none() => {
            let id = p.path.get_ident()?;
            if id == "f64" || id == "f32" || floats.iter().any(|f| f == id) {
                Some(Scalar::Float)
            } else if INTS.iter().any(|i| id == i) {
                Some(Scalar::Int)
            } else {
                None
            }
        }
        syn::Type::Tuple(t) if t.elems.is_empty() => Some(Scalar::Int),
        _ => None,
    }
}

/// A buffer of numbers (`Vec<E>`, `[E]`, `[E; K]`), or a number.
fn batched_value(ty: &syn::Type, floats: &[syn::Ident]) -> bool {
    number_or_buffer(ty, &|t| scalar(t, floats).is_some())
}

/// Whether `ty` is a number (as `number` says), or a `Vec` (`Vec<E>`, `std::vec::Vec<E>`),
/// array or slice of numbers: the values the batched rule and `second_order`'s twin
/// (`twin.rs`) know how to handle.
pub(crate) fn number_or_buffer(ty: &syn::Type, number: &dyn Fn(&syn::Type) -> bool) -> bool {
    match ty {
        syn::Type::Paren(p) => number_or_buffer(&p.elem, number),
        syn::Type::Array(a) => number(&a.elem),
        syn::Type::Slice(s) => number(&s.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
            if number(ty) {
                return true;
            }
            let Some(last) = p.path.segments.last() else { return false };
            let is_vec = last.ident == "Vec"
                && (p.path.segments.len() == 1
                    || p.path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .eq(["std", "vec", "Vec"]));
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if is_vec && a.args.len() == 1 => {
                    matches!(&a.args[0], syn::GenericArgument::Type(e) if number(e))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a value of type `ty` can be an argument or a local of the batched rule: a number, a
/// buffer of numbers, or a shared reference to one.
fn batched_type(ty: &syn::Type, floats: &[syn::Ident]) -> bool {
    match ty {
        syn::Type::Reference(r) if r.mutability.is_none() => batched_value(&r.elem, floats),
        syn::Type::Reference(_) => false,
        ty => !matches!(ty, syn::Type::Slice(_)) && batched_value(ty, floats),
    }
}

/// The type of a `Dual` of a value of type `ty` in the batched rule.
fn lanes_dual_type(ty: &syn::Type) -> Option<TokenStream> {
    let rt = rt();
    Some(match ty {
        syn::Type::Reference(r) => {
            let (lt, inner) = (&r.lifetime, &r.elem);
            quote!(#rt::Dual<&#lt #inner, &#lt <#inner as #rt::lanes::LanesPrimal<__N>>::LanesRef>)
        }
        syn::Type::Paren(p) => return lanes_dual_type(&p.elem),
        ty => quote!(#rt::Dual<#ty, <#ty as #rt::lanes::LanesPrimal<__N>>::Lanes>),
    })
}

/// Whether the function has a batched form: a free function (not a method), generic at most
/// over `T: Float` parameters, lifetimes and constants, with arguments and result that
/// [`batched_type`] accepts (the result a float), and a body whose every statement has a batched
/// rule (see [`NUMBER_METHODS`], [`OTHER_METHODS`], [`LANES_BUFFER_METHODS`]; no calls but `T::from_f64` and the `Vec` constructors, no struct
/// literals, no locals declared with other types).
pub(crate) fn qualifies(func: &FnParts<'_>, sig: &parse::Sig, body: &Body) -> bool {
    if func.in_impl || super::is_associated(func) {
        return false;
    }
    let floats = super::float_params(&func.sig.generics);
    let generics_ok = func.sig.generics.params.iter().all(|p| match p {
        syn::GenericParam::Type(t) => floats.contains(&t.ident),
        _ => true,
    });
    generics_ok
        && constants_read_by_element(body)
        && sig.args.iter().all(|a| batched_type(&a.ty, &floats))
        && scalar(&sig.ret, &floats) == Some(Scalar::Float)
        && body.locals.iter().all(|l| l.ty.as_ref().is_none_or(|t| batched_type(t, &floats)))
        && body.blocks.iter().all(|b| {
            b.statements.iter().all(|s| match &s.kind {
                StatementKind::Assign(_, rv) => batched_rvalue(rv),
                StatementKind::Check(_) => true,
            })
        })
}

/// Whether every use of a named constant (`ir::constant_locals`) is one a batched rule can make
/// whatever the constant's type: an element or field read (a constant itself, `W[k]`), `len`,
/// or a number's method. A constant's type is not known to the macro, and one without batched
/// tangents (`const V: &[f64]`, a constant struct) has its ordinary tangent in a batched rule,
/// so a borrow of its elements (`V.iter().zip(x)`) or another method on it would mix the two
/// kinds of tangent.
fn constants_read_by_element(body: &Body) -> bool {
    let consts = super::ir::constant_locals(body);
    let constant = |q: &Place| consts[q.local.index()];
    // A named field of a local that is not a constant: a struct the function holds (a copy of
    // a constant struct, `let mut c = BASE; c.a = x;`, or `Cfg { a, ..BASE }`), whose tangent
    // has no batched form.
    let named_field = |q: &Place| {
        !constant(q)
            && q.projections
                .iter()
                .any(|pr| matches!(pr, super::ir::Projection::Field(syn::Member::Named(_))))
    };
    body.blocks.iter().flat_map(|b| &b.statements).all(|s| {
        let StatementKind::Assign(p, rv) = &s.kind else { return true };
        let mut places_ok = !named_field(p);
        super::reverse::for_each_place_ref(rv, &mut |q| places_ok &= !named_field(q));
        if !places_ok {
            return false;
        }
        let operand_ok = |o: &Operand| !matches!(o, Operand::Ref(q, _) if constant(q));
        let receiver_ok = match rv {
            Rvalue::Method { receiver, method, .. } => {
                !constant(receiver) || method == "len" || NUMBER_METHODS.iter().any(|m| method == m)
            }
            _ => true,
        };
        receiver_ok && rv.operands().into_iter().all(operand_ok)
    })
}

fn batched_rvalue(rv: &Rvalue) -> bool {
    match rv {
        Rvalue::Use(_)
        | Rvalue::Binary(..)
        | Rvalue::Unary(..)
        | Rvalue::Tuple(_)
        | Rvalue::Array(_)
        | Rvalue::Repeat(..)
        | Rvalue::VecList(_)
        | Rvalue::VecRepeat(..)
        | Rvalue::Matches(..) => true,
        Rvalue::Cast(_, ty) => scalar(ty, &[]).is_some(),
        Rvalue::Method { method, .. } => leaf_method(method),
        Rvalue::Call { func, .. } => leaf_call(func),
        Rvalue::Struct { .. } | Rvalue::Convert(..) => false,
    }
}

/// Whether a method has rules for every kind of number a leaf holds (one direction, batched
/// directions, and `T: Float` for `second_order`'s twin): the numbers' methods, `sin_cos`,
/// `len`, and the buffer methods with batched rules.
pub(crate) fn leaf_method(method: &syn::Ident) -> bool {
    NUMBER_METHODS.iter().chain(OTHER_METHODS).chain(LANES_BUFFER_METHODS).any(|m| method == m)
}

/// Whether a call is one a leaf may make (see [`leaf_method`]): `Vec`'s constructors,
/// `T::from_f64`, a number's method called through its type (`f64::sqrt(x)`).
pub(crate) fn leaf_call(func: &syn::Path) -> bool {
    let segs: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["Vec", "new" | "with_capacity"] | ["std", "vec", "Vec", "new" | "with_capacity"] => true,
        ["mooncake_runtime", "__private", "float_from_f64"] => true,
        [ty, m] if *ty == "f64" || *ty == "f32" => {
            NUMBER_METHODS.contains(m) || OTHER_METHODS.contains(m)
        }
        _ => false,
    }
}

/// The batched entry `NAME__lanes` with its rule (see the module's documentation).
pub(crate) fn items(
    func: &FnParts<'_>,
    sig: &parse::Sig,
    body: &Body,
    code: &TokenStream,
    names: &Names,
) -> TokenStream {
    let rt = rt();
    let decls = local_declarations(body, names, lanes_dual_type);
    let items = super::lower::body_items(func.block);
    let primal = super::primal_path(func);
    let allow = super::allow_attrs();
    let ret_local = names.local(Local::RETURN);
    let ret_ty = lanes_dual_type(&sig.ret).unwrap_or_default();

    let span = func.sig.ident.span();
    let site = Span::mixed_site();
    let name = format_ident!("{}{}", func.sig.ident, SUFFIX, span = span);
    let vis = func.vis;
    let generics = &func.sig.generics;
    let mut params: Vec<TokenStream> = generics.params.iter().map(|p| quote!(#p)).collect();
    params.push(quote!(const __N: usize));
    let where_clause = super::where_clause(generics, &[]);
    // The rule: the forward code over `Dual`s with batched tangents.
    let rule_params = sig.args.iter().enumerate().map(|(i, a)| {
        let l = names.local(Local((i + 1) as u32));
        let ty = lanes_dual_type(&a.ty).unwrap_or_default();
        quote!(mut #l: #ty)
    });
    let rule = format_ident!("__rule", span = site);
    // The entry: each argument's tangent seeded, then the rule.
    let (first, offsets) =
        (format_ident!("__first", span = site), format_ident!("__offsets", span = site));
    let mut entry_params = Vec::new();
    let mut seeds = Vec::new();
    let mut duals = Vec::new();
    for (k, a) in sig.args.iter().enumerate() {
        let (x, t) =
            (format_ident!("__x{}", k, span = site), format_ident!("__t{}", k, span = site));
        let ty = &a.ty;
        entry_params.push(quote!(#x: #ty));
        let (inner, reference) = match ty {
            syn::Type::Reference(r) => (&*r.elem, quote!(#x)),
            ty => (ty, quote!(&#x)),
        };
        seeds.push(quote!(
            let mut #t = <#inner as #rt::lanes::LanesPrimal<__N>>::zero_lanes(#reference);
            #rt::lanes::seed_lanes::<#inner, __N>(#reference, &mut #t, #first, #offsets[#k]);
        ));
        duals.push(match ty {
            syn::Type::Reference(_) => {
                quote!(#rt::Dual::new(#x, <#inner as #rt::lanes::LanesPrimal<__N>>::lanes_ref(&#t)))
            }
            _ => quote!(#rt::Dual::new(#x, #t)),
        });
    }
    let doc = format!(
        "The batched forward-mode entry of [`{}`]: its derived forward rule carrying `__N` \
         directions, the arguments' tangents seeded with directions `__first ..`; called by \
         `value_and_gradient_forward!(.., chunk = N)`.",
        func.sig.ident
    );
    quote_spanned!(span=>
        #[doc = #doc]
        #[doc(hidden)]
        #[allow(dead_code)]
        #allow
        #vis fn #name<#(#params),*>(#(#entry_params,)* #first: usize, #offsets: &[usize]) -> #ret_ty
            #where_clause
        {
            #allow
            #[inline]
            fn #rule<#(#params),*>(#(#rule_params),*) -> #ret_ty #where_clause {
                let _ = #primal;
                // The dialect of `__N` directions (the runtime's `fwd::dialect`).
                #[allow(unused_imports)]
                use #rt::fwd::dialect::lanes::{
                    self as __fwd, FloatConstOperand as _, LanesConstant as _,
                    LanesConstantOther as _, OtherConstOperand as _,
                };
                #items
                let mut #ret_local: #ret_ty;
                #decls
                #code
            }
            #(#seeds)*
            #rule(#(#duals),*)
        }
    )
}

/// The most arguments a function whose batched entry is a stub can have (the runtime's
/// `lanes::unbatched::a0 ..= a14` take the arguments, `__first` and `__offsets`).
const MAX_STUB_ARGS: usize = 12;

/// `lanes::unbatched::aK as NAME__lanes`, the stub of a function without a batched rule, as the
/// inside of a `use` of the runtime's private module; `None` past [`MAX_STUB_ARGS`].
pub(crate) fn stub_import(sig: &syn::Signature) -> Option<TokenStream> {
    let n = sig.inputs.len();
    if n > MAX_STUB_ARGS {
        return None;
    }
    let span = sig.ident.span();
    let stub = format_ident!("a{}", n + 2, span = span);
    let name = format_ident!("{}{}", sig.ident, SUFFIX, span = span);
    Some(quote_spanned!(span=> lanes::unbatched::#stub as #name))
}

/// The stub of the batched entry as a `use` item of its own (nothing without `wanted`).
pub(crate) fn stub(vis: &syn::Visibility, sig: &syn::Signature, wanted: bool) -> TokenStream {
    match stub_import(sig) {
        Some(import) if wanted => quote_spanned!(sig.ident.span()=>
            #[doc(hidden)]
            #[allow(unused_imports)]
            #vis use ::mooncake_runtime::__private::#import;
        ),
        _ => TokenStream::new(),
    }
}
