//! Gradients inside differentiated code: the functions `#[differentiable]` emits beside a free
//! function so that `value_and_gradient!` of it, written in another `#[differentiable]` body,
//! has rules (see the runtime's `nested` module for the mathematics).
//!
//! For `fn f<T: Float>(x: &[T], s: T, n: usize) -> T` it emits, at `T = f64`:
//!
//! * `f__nested_gradient(x, s, n)`: `value_and_gradient!(f(&*x, s, n))`;
//! * `f__nested_gradient_frule`: one `hvp!` along the arguments' tangents (the gradient's tangent
//!   is the product, the value's the gradient's inner product with the tangents);
//! * `f__nested_gradient_rrule`: `from_rrule!` of a chain rule whose pullback runs one `hvp!`
//!   along the gradient's cotangent, on copies of the arguments taken by the forward pass.
//!
//! and `f__nested_derivative(x, s, n, tx, ts, tn)` (`value_and_derivative!`) with its two rules
//! ([`derivative_rules`]).
//!
//! A function that does not qualify (not generic over one `T: Float`, an argument of another
//! kind, a result that is not `T`) gets the runtime's refusing stubs imported under the rules'
//! names (one `use` item), whose bound fails at the call with a message. The lowering turns
//! `value_and_gradient!(f(..))` in a body into a call of `f__nested_gradient` ([`call_path`]).

use super::codegen::rt;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The suffix of the emitted functions' names.
const SUFFIX: &str = "__nested_gradient";

/// The suffix of the functions of `value_and_derivative!`.
const DERIVATIVE: &str = "__nested_derivative";

/// `m::f` to `m::f__nested_gradient` (the call the lowering makes of `value_and_gradient!`),
/// or with `derivative`, `m::f__nested_derivative` (of `value_and_derivative!`).
pub(crate) fn call_path(func: &syn::Path, derivative: bool) -> Option<syn::Path> {
    let mut path = func.clone();
    let last = path.segments.last_mut()?;
    let suffix = if derivative { DERIVATIVE } else { SUFFIX };
    last.ident = format_ident!("{}{}", last.ident, suffix, span = last.ident.span());
    Some(path)
}

/// In a function generic over `T: Float`, a nested gradient or derivative is refused: the
/// nested rules are at `f64`, not at the caller's `T`.
pub(crate) fn refuse_in_generic(body: &super::ir::Body, errors: &mut super::errors::Errors) {
    for block in &body.blocks {
        for s in &block.statements {
            if let super::ir::StatementKind::Assign(_, super::ir::Rvalue::Call { func, .. }) =
                &s.kind
                && let Some(last) = func.segments.last()
            {
                let name = last.ident.to_string();
                if name.ends_with(SUFFIX) || name.ends_with(DERIVATIVE) {
                    errors.error(
                        s.span,
                        "`value_and_gradient!` / `value_and_derivative!` inside a function \
                         generic over `T: Float` is not supported: the nested rules are at \
                         `f64`; write this function over `f64`",
                    );
                }
            }
        }
    }
}

/// How one argument is passed: behind `&` (the referent's type) or by value.
enum Arg {
    Ref(syn::Type),
    Value(syn::Type),
}

impl Arg {
    /// The parameter's type (`&[f64]`, `f64`, ..).
    fn ty(&self) -> syn::Type {
        match self {
            Arg::Ref(inner) => syn::parse_quote!(&#inner),
            Arg::Value(ty) => ty.clone(),
        }
    }

    /// The gradient's (and the tangent's) type: `<X as Primal>::Tangent` of the referent or
    /// value `X`.
    fn tangent(&self) -> syn::Type {
        let rt = rt();
        match self {
            Arg::Ref(ty) | Arg::Value(ty) => syn::parse_quote!(<#ty as #rt::Primal>::Tangent),
        }
    }
}

/// `k` hygienic names `{prefix}0, {prefix}1, ..`.
fn ids(prefix: &str, k: usize) -> Vec<syn::Ident> {
    (0..k).map(|i| format_ident!("{}{}", prefix, i, span = Span::mixed_site())).collect()
}

/// Each argument in a call of the function: `&*x` for a reference, `x` for a value (with
/// `field` after the name: `.primal` of a `Dual`).
fn call_args(args: &[Arg], x: &[syn::Ident], field: &TokenStream) -> Vec<TokenStream> {
    args.iter()
        .zip(x)
        .map(|(arg, x)| match arg {
            Arg::Ref(_) => quote!(&*#x #field),
            Arg::Value(_) => quote!(#x #field),
        })
        .collect()
}

/// A chain rule's copies of its arguments (`s = a.to_owned()` / `a.clone()`), and the reads of
/// them in its pullback (`s: &X = s.borrow()` for a reference).
fn saved(args: &[Arg], a: &[syn::Ident], s: &[syn::Ident]) -> (TokenStream, TokenStream) {
    let saves = args.iter().zip(a).zip(s).map(|((arg, a), s)| match arg {
        Arg::Ref(_) => quote!(let #s = ::std::borrow::ToOwned::to_owned(#a);),
        Arg::Value(_) => quote!(let #s = ::core::clone::Clone::clone(&#a);),
    });
    let reads = args.iter().zip(s).map(|(arg, s)| match arg {
        Arg::Ref(inner) => quote!(let #s: &#inner = ::core::borrow::Borrow::borrow(&#s);),
        Arg::Value(_) => quote!(),
    });
    (quote!(#(#saves)*), quote!(#(#reads)*))
}

/// `ty` with the float parameter `t` replaced by `f64`, if it is one of the kinds the nested
/// rules cover: `T`, an integer, `Vec<T>`, `[T; N]`, or `&` of a slice, `Vec` or array of `T`.
fn argument(ty: &syn::Type, t: &syn::Ident) -> Option<Arg> {
    let f64_ty: syn::Type = syn::parse_quote!(f64);
    let is_t = |ty: &syn::Type| matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(t));
    let buffer = |ty: &syn::Type| -> Option<syn::Type> {
        match ty {
            syn::Type::Slice(s) if is_t(&s.elem) => Some(syn::parse_quote!([f64])),
            syn::Type::Array(a) if is_t(&a.elem) => {
                let n = &a.len;
                Some(syn::parse_quote!([f64; #n]))
            }
            syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let seg = &p.path.segments[0];
                let syn::PathArguments::AngleBracketed(args) = &seg.arguments else { return None };
                match (seg.ident == "Vec", args.args.first()) {
                    (true, Some(syn::GenericArgument::Type(e)))
                        if args.args.len() == 1 && is_t(e) =>
                    {
                        Some(syn::parse_quote!(Vec<f64>))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    };
    match ty {
        syn::Type::Paren(p) => argument(&p.elem, t),
        syn::Type::Group(g) => argument(&g.elem, t),
        syn::Type::Reference(r) if r.mutability.is_none() => buffer(&r.elem).map(Arg::Ref),
        ty if is_t(ty) => Some(Arg::Value(f64_ty)),
        syn::Type::Path(p) if p.qself.is_none() => {
            let name = p.path.get_ident().map(ToString::to_string).unwrap_or_default();
            let integer = matches!(
                name.as_str(),
                "usize" | "isize" | "u8" | "u16" | "u32" | "u64" | "i8" | "i16" | "i32" | "i64"
            );
            if integer { Some(Arg::Value(ty.clone())) } else { buffer(ty).map(Arg::Value) }
        }
        syn::Type::Array(_) => buffer(ty).map(Arg::Value),
        _ => None,
    }
}

/// The arguments' kinds, if `sig` qualifies: free, generic over exactly one `T: Float` and
/// nothing else, every argument a plain name of a kind [`argument`] covers, result `T`.
fn qualifying(sig: &syn::Signature, float_params: &[syn::Ident]) -> Option<Vec<Arg>> {
    let [t] = float_params else { return None };
    let others =
        sig.generics.params.iter().filter(|p| !matches!(p, syn::GenericParam::Lifetime(_)));
    if others.count() != 1 || sig.asyncness.is_some() || sig.unsafety.is_some() {
        return None;
    }
    match &sig.output {
        syn::ReturnType::Type(_, ty) if matches!(&**ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(t)) =>
            {}
        _ => return None,
    }
    sig.inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Typed(pt) if matches!(&*pt.pat, syn::Pat::Ident(_)) => argument(&pt.ty, t),
            _ => None,
        })
        .collect()
}

/// The items emitted beside the free function `sig` (with visibility `vis`): the nested rules
/// if it qualifies, else the refusing stubs.
/// With `lanes_stub`, also the stub of the batched entry (`batched::stub`), in the same `use`
/// item as the refusing stubs where there is one.
pub(crate) fn items(
    vis: &syn::Visibility,
    sig: &syn::Signature,
    float_params: &[syn::Ident],
    lanes_stub: bool,
    forward: bool,
) -> TokenStream {
    match qualifying(sig, float_params) {
        // (A function of no arguments has no gradient to take; its stubs' bound would name no
        // parameter, and fail where they are defined.)
        _ if sig.inputs.is_empty() => super::batched::stub(vis, sig, lanes_stub),
        Some(args) => {
            let mut items = rules(vis, sig, &args, forward);
            items.extend(super::batched::stub(vis, sig, lanes_stub));
            items
        }
        None => stubs(vis, sig, lanes_stub),
    }
}

fn allow() -> TokenStream {
    quote!(#[doc(hidden)] #[allow(non_snake_case, dead_code, unused_mut, unused_variables, clippy::all)])
}

/// The runtime's refusing stubs (`nested::refused::aN`, of the arity of each rule) imported
/// under the rules' names: one `use` item, a few tokens (this is emitted for every free
/// function, so its cost is that of every expansion).
fn stubs(vis: &syn::Visibility, sig: &syn::Signature, lanes_stub: bool) -> TokenStream {
    let span = sig.ident.span();
    let n = sig.inputs.len();
    if n > 12 {
        return super::batched::stub(vis, sig, lanes_stub);
    }
    let lanes = lanes_stub.then(|| super::batched::stub_import(sig)).flatten();
    let lanes = lanes.map(|l| quote!(, #l));
    let (g, d) = (format_ident!("a{}", n, span = span), format_ident!("a{}", 2 * n, span = span));
    let name =
        |suffix: &str, rule: &str| format_ident!("{}{}_{}", sig.ident, suffix, rule, span = span);
    let (gf, gr) = (name(SUFFIX, "frule"), name(SUFFIX, "rrule"));
    let (df, dr) = (name(DERIVATIVE, "frule"), name(DERIVATIVE, "rrule"));
    quote_spanned!(span=>
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use ::mooncake_runtime::__private::{
            nested::refused::{#g as #gf, #g as #gr, #d as #df, #d as #dr} #lanes
        };
    )
}

/// The nested gradient's function and its two rules.
///
/// `forward`: whether the function has a forward rule (not `reverse_only`), which
/// `value_and_derivative!`, and so the nested derivative, calls; without one, the nested
/// derivative's names are the refusing stubs.
fn rules(vis: &syn::Visibility, sig: &syn::Signature, args: &[Arg], forward: bool) -> TokenStream {
    let rt = rt();
    let allow = allow();
    let span = sig.ident.span();
    let site = Span::mixed_site();
    let f = &sig.ident;
    let name = format_ident!("{}{}", f, SUFFIX, span = span);
    let frule = format_ident!("{}_frule", name);
    let chain = format_ident!("{}_chainrule", name);
    let n = args.len();
    let (a, g, h, d, s) =
        (ids("__a", n), ids("__g", n), ids("__h", n), ids("__d", n), ids("__s", n));
    let types: Vec<syn::Type> = args.iter().map(Arg::ty).collect();
    let grads: Vec<syn::Type> = args.iter().map(Arg::tangent).collect();
    let out = quote!((f64, (#(#grads,)*)));
    let (v, dv, vb, y) = (
        syn::Ident::new("__v", site),
        syn::Ident::new("__dv", site),
        syn::Ident::new("__vb", site),
        syn::Ident::new("__y", site),
    );
    // The primal.
    let primal_args = call_args(args, &a, &quote!());
    let params = quote!(#(#a: #types),*);
    let primal = quote_spanned!(span=>
        #allow
        #vis fn #name(#params) -> #out {
            ::mooncake_runtime::value_and_gradient!(#f(#(#primal_args),*))
        }
    );
    // Forward over reverse.
    let dual_params = types.iter().zip(&a).map(|(ty, a)| {
        let dty = super::dual_type(ty);
        quote!(#a: #dty)
    });
    let dual_out = super::dual_type(&syn::parse_quote!(#out));
    let fwd_args = call_args(args, &a, &quote!(.primal));
    let frule_item = quote_spanned!(span=>
        #allow
        #vis fn #frule(#(#dual_params),*) -> #dual_out {
            let (#v, (#(#g,)*), (#(#h,)*)) =
                ::mooncake_runtime::hvp!(#f(#(#fwd_args),*), (#(#a.tangent,)*));
            let #dv = 0.0 #(+ #rt::nested::dot(&#g, &#a.tangent))*;
            #rt::Dual::new((#v, (#(#g,)*)), (#dv, (#(#h,)*)))
        }
    );
    // Reverse: a chain rule whose pullback is a Hessian-vector product along the cotangent.
    let (saves, reads) = saved(args, &a, &s);
    let back_args = call_args(args, &s, &quote!());
    let chain_item = quote_spanned!(span=>
        #allow
        #vis fn #chain(#params) -> (#out, impl ::core::ops::FnOnce(#out) -> (#(#grads,)*) + use<>) {
            #saves
            let #y = ::mooncake_runtime::value_and_gradient!(#f(#(#primal_args),*));
            (#y, move |(#vb, (#(#d,)*))| {
                #reads
                let (_, (#(#g,)*), (#(#h,)*)) =
                    ::mooncake_runtime::hvp!(#f(#(#back_args),*), (#(#d,)*));
                (#(#rt::nested::combine(#vb, #g, 1.0, #h),)*)
            })
        }
    );
    let adapted = crate::from_rrule::expand(quote!(#vis fn #name(#params) -> #out => #chain));
    let derivative = if forward {
        derivative_rules(vis, sig, args)
    } else {
        let n = 2 * sig.inputs.len();
        let d = format_ident!("a{}", n, span = span);
        let (df, dr) = (
            format_ident!("{}{}_frule", f, DERIVATIVE, span = span),
            format_ident!("{}{}_rrule", f, DERIVATIVE, span = span),
        );
        quote_spanned!(span=>
            #[doc(hidden)]
            #[allow(unused_imports)]
            #vis use ::mooncake_runtime::__private::nested::refused::{#d as #df, #d as #dr};
        )
    };
    quote!(#primal #frule_item #chain_item #adapted #derivative)
}

/// `f__nested_derivative(args.., tangents..)`: `value_and_derivative!(f(args..), (tangents..))`
/// with its rules. With `y' = ∇f · t`, the tangent of `y'` along `(δx, δt)` is `(H δx) · t + ∇f ·
/// δt` (one `hvp!` along `δx`), and the pullback of `(ȳ, ȳ')` gives `x̄ = ȳ ∇f + ȳ' H t` (one
/// `hvp!` along `t`) and `t̄ = ȳ' ∇f`.
fn derivative_rules(vis: &syn::Visibility, sig: &syn::Signature, args: &[Arg]) -> TokenStream {
    let rt = rt();
    let allow = allow();
    let span = sig.ident.span();
    let site = Span::mixed_site();
    let f = &sig.ident;
    let name = format_ident!("{}{}", f, DERIVATIVE, span = span);
    let frule = format_ident!("{}_frule", name);
    let chain = format_ident!("{}_chainrule", name);
    let n = args.len();
    let (a, t, g, h, s, st) =
        (ids("__a", n), ids("__t", n), ids("__g", n), ids("__h", n), ids("__s", n), ids("__st", n));
    let types: Vec<syn::Type> = args.iter().map(Arg::ty).collect();
    let tangent_types: Vec<syn::Type> = args.iter().map(Arg::tangent).collect();
    let (v, dv, y, yb, ydb) = (
        syn::Ident::new("__v", site),
        syn::Ident::new("__dv", site),
        syn::Ident::new("__y", site),
        syn::Ident::new("__yb", site),
        syn::Ident::new("__ydb", site),
    );
    let params = quote!(#(#a: #types,)* #(#t: #tangent_types),*);
    let primal_args = call_args(args, &a, &quote!());
    let primal = quote_spanned!(span=>
        #allow
        #vis fn #name(#params) -> (f64, f64) {
            ::mooncake_runtime::value_and_derivative!(#f(#(#primal_args),*), (#(#t,)*))
        }
    );
    let dual_params = types.iter().zip(&a).chain(tangent_types.iter().zip(&t)).map(|(ty, x)| {
        let dty = super::dual_type(ty);
        quote!(#x: #dty)
    });
    let out: syn::Type = syn::parse_quote!((f64, f64));
    let dual_out = super::dual_type(&out);
    let fwd_args = call_args(args, &a, &quote!(.primal));
    let value_args: Vec<TokenStream> = args
        .iter()
        .zip(&a)
        .map(|(arg, x)| match arg {
            Arg::Ref(_) => quote!(&*#x.primal),
            Arg::Value(_) => quote!(::core::clone::Clone::clone(&#x.primal)),
        })
        .collect();
    let frule_item = quote_spanned!(span=>
        #allow
        #vis fn #frule(#(#dual_params),*) -> #dual_out {
            // The values as the primal computes them (forward mode), then the derivatives.
            let (#v, __yd) = ::mooncake_runtime::value_and_derivative!(
                #f(#(#value_args),*),
                (#(::core::clone::Clone::clone(&#t.primal),)*)
            );
            let (_, (#(#g,)*), (#(#h,)*)) =
                ::mooncake_runtime::hvp!(#f(#(#fwd_args),*), (#(#a.tangent,)*));
            let #dv = 0.0 #(+ #rt::nested::dot(&#g, &#a.tangent))*;
            let #y = 0.0
                #(+ #rt::nested::dot(&#h, &#t.primal) + #rt::nested::dot(&#g, &#t.tangent))*;
            #rt::Dual::new((#v, __yd), (#dv, #y))
        }
    );
    let (saves, reads) = saved(args, &a, &s);
    let back_args = call_args(args, &s, &quote!());
    let chain_item = quote_spanned!(span=>
        #allow
        #vis fn #chain(#params)
            -> ((f64, f64), impl ::core::ops::FnOnce((f64, f64)) -> (#(#tangent_types,)* #(#tangent_types,)*) + use<>)
        {
            #saves
            #(let #st = ::core::clone::Clone::clone(&#t);)*
            let #y = ::mooncake_runtime::value_and_derivative!(#f(#(#primal_args),*), (#(#t,)*));
            (#y, move |(#yb, #ydb)| {
                #reads
                let (_, (#(#g,)*), (#(#h,)*)) =
                    ::mooncake_runtime::hvp!(#f(#(#back_args),*), (#(#st,)*));
                (
                    #(#rt::nested::combine(#yb, ::core::clone::Clone::clone(&#g), #ydb, #h),)*
                    #(#rt::nested::combine(#ydb, #g, 0.0, #rt::nested::Combine::zero_like(&#st)),)*
                )
            })
        }
    );
    let adapted = crate::from_rrule::expand(quote!(#vis fn #name(#params) -> (f64, f64) => #chain));
    quote!(#primal #frule_item #chain_item #adapted)
}
