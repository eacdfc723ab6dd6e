//! `#[frule(for = f)]` and `#[rrule(for = f)]`: check a hand-written rule's signature against
//! the function it is for, at the rule.
//!
//! The attribute reads the rule's own signature: the primal types are the first parameters of
//! its `Dual<P, T>` (or `CoDual<P, F>`) arguments and result. It emits the rule unchanged and,
//! beside it, a function that is never called whose body only type-checks if
//!
//! 1. `f` is a function of exactly those primal types (`let _: fn(P1, ..) -> R = f;`), and
//! 2. each tangent (fdata) type is the one `Primal` gives the primal type (for a reference,
//!    what the runtime's rules use: `&T::TangentRef` forward, `T::Shadow` reverse).
//!
//! so that a wrong signature is an error at the rule, not at a distant call in derived code.
//! A reverse rule's argument seen through a handle (a `&mut` argument) is checked by position
//! only (`_`): the handle does not say whether the argument was `&mut [T]` or `&mut Vec<T>`.

use crate::differentiable::parse::unambiguous;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, Token, Type};

/// Which rule is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Forward,
    Reverse,
}

struct For {
    path: syn::Path,
}

impl Parse for For {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error("expected `for = path`, the function this rule is for"));
        }
        input.parse::<Token![for]>()?;
        input.parse::<Token![=]>()?;
        let path: syn::Path = input.parse()?;
        if !input.is_empty() {
            return Err(input.error("expected only `for = path`"));
        }
        Ok(For { path })
    }
}

/// The two generic arguments of `Dual<P, T>` / `CoDual<P, F>` (by the last path segment).
fn pair<'a>(ty: &'a Type, name: &str) -> Option<(&'a Type, &'a Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let (a, b) = (types.next()?, types.next()?);
    if types.next().is_some() { None } else { Some((a, b)) }
}

/// Whether a reverse rule's primal type is a handle (the primal of a `&mut` argument).
fn is_handle(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            let n = s.ident.to_string();
            n == "SharedVec" || n == "SharedCell" || n == "SharedRef" || n.ends_with("Handle")
        }),
        _ => false,
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream, mode: Mode) -> TokenStream {
    let target = match syn::parse2::<For>(attr) {
        Ok(f) => f.path,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let rule: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "this attribute goes on a rule function")
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    let rt = quote!(::mooncake_runtime::__private);
    let (wrapper, what) = match mode {
        Mode::Forward => ("Dual", "a forward rule takes every argument as `Dual<P, T>`"),
        Mode::Reverse => ("CoDual", "a reverse rule takes every argument as `CoDual<P, F>`"),
    };
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let mut primal_args = Vec::new();
    let mut checks = Vec::new();
    for input in &rule.sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            push(syn::Error::new(input.span(), "a rule is a free function: no `self`"));
            continue;
        };
        let Some((p, t)) = pair(&pt.ty, wrapper) else {
            push(syn::Error::new(
                pt.ty.span(),
                format!("{what}, where `P` is the argument's primal type"),
            ));
            continue;
        };
        let span = pt.ty.span();
        match mode {
            Mode::Forward => {
                primal_args.push(unambiguous(p));
                let expected = match p {
                    Type::Reference(r) => {
                        let (lt, m, inner) = (&r.lifetime, &r.mutability, &r.elem);
                        quote!(&#lt #m <#inner as #rt::Primal>::TangentRef)
                    }
                    other => quote!(<#other as #rt::Primal>::Tangent),
                };
                checks.push(quote_spanned!(span=> #rt::api::same_type::<#t, #expected>();));
            }
            Mode::Reverse if is_handle(p) => primal_args.push(quote!(_)),
            Mode::Reverse => {
                primal_args.push(unambiguous(p));
                let expected = match p {
                    Type::Reference(r) => {
                        let inner = &r.elem;
                        quote!(<#inner as #rt::Primal>::Shadow)
                    }
                    other => quote!(<#other as #rt::Primal>::FData),
                };
                checks.push(quote_spanned!(span=> #rt::api::same_type::<#t, #expected>();));
            }
        }
    }
    // The result.
    let output = match &rule.sig.output {
        syn::ReturnType::Type(_, ty) => Some(&**ty),
        syn::ReturnType::Default => None,
    };
    let result = match (mode, output) {
        (Mode::Forward, Some(ty)) => pair(ty, "Dual").map(|(r, t)| {
            checks.push(quote_spanned!(ty.span()=> #rt::api::same_type::<#t, <#r as #rt::Primal>::Tangent>();));
            unambiguous(r)
        }),
        (Mode::Reverse, Some(Type::Tuple(tuple))) if tuple.elems.len() == 2 => {
            let first = &tuple.elems[0];
            pair(first, "CoDual").map(|(r, f)| {
                checks.push(quote_spanned!(first.span()=> #rt::api::same_type::<#f, <#r as #rt::Primal>::FData>();));
                unambiguous(r)
            })
        }
        _ => None,
    };
    let result = match result {
        Some(r) => r,
        None => {
            let span = output.map_or_else(|| rule.sig.ident.span(), Spanned::span);
            push(syn::Error::new(
                span,
                match mode {
                    Mode::Forward => {
                        "a forward rule returns `Dual<R, T>`, `R` the function's result type"
                    }
                    Mode::Reverse => {
                        "a reverse rule returns `(CoDual<R, F>, pullback)`, `R` the function's result type"
                    }
                },
            ));
            quote!(_)
        }
    };
    if let Some(e) = errors {
        let e = e.to_compile_error();
        return quote!(#rule #e);
    }
    let generics = &rule.sig.generics;
    let where_clause = &generics.where_clause;
    let params = &generics.params;
    let check_fn = format_ident!("__mooncake_check_{}", rule.sig.ident, span = Span::mixed_site());
    let target_span = target.span();
    let signature_check =
        quote_spanned!(target_span=> let _: fn(#(#primal_args),*) -> #result = #target;);
    let forwarder = match mode {
        Mode::Reverse => wrt_forwarder(&rule, &target),
        Mode::Forward => quote!(),
    };
    quote!(
        #rule
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::all)]
        fn #check_fn<#params>() #where_clause {
            #signature_check
            #(#checks)*
        }
        #forwarder
    )
}

/// Beside a hand-written `NAME_rrule`, the `NAME_rrule_wrt` that the gradient macros call when
/// an argument is `Const(..)` (see `rev::Wrt`): the rule computes every gradient anyway, so it
/// is called as it is. Its pullback's type is written from the primal types (a copied
/// `impl .. + use<..>` would not name the mask), capturing what the edition captures by default,
/// which is at least what the rule's own captures.
fn wrt_forwarder(rule: &syn::ItemFn, target: &syn::Path) -> TokenStream {
    let rt = quote!(::mooncake_runtime::__private);
    let name = rule.sig.ident.to_string();
    if !name.ends_with("_rrule") {
        return quote!();
    }
    let syn::ReturnType::Type(_, ret) = &rule.sig.output else { return quote!() };
    let Type::Tuple(tuple) = &**ret else { return quote!() };
    let Some((r, _)) = tuple.elems.first().and_then(|t| pair(t, "CoDual")) else {
        return quote!();
    };
    let first = &tuple.elems[0];
    let mut params = Vec::new();
    let mut rdata = Vec::new();
    let mut args = Vec::new();
    for (k, input) in rule.sig.inputs.iter().enumerate() {
        let syn::FnArg::Typed(pt) = input else { return quote!() };
        let Some((p, _)) = pair(&pt.ty, "CoDual") else { return quote!() };
        let a = format_ident!("__a{}", k, span = Span::mixed_site());
        let ty = &pt.ty;
        params.push(quote!(#a: #ty));
        args.push(a);
        rdata.push(match p {
            Type::Reference(_) => quote!(#rt::NoRData),
            _ if is_handle(p) => quote!(#rt::NoRData),
            other => quote!(<#other as #rt::Primal>::RData),
        });
    }
    let mask = format_ident!("__WRT", span = Span::mixed_site());
    let generics = &rule.sig.generics;
    let where_clause = &generics.where_clause;
    let gparams = generics.params.iter().map(|p| quote!(#p));
    let gparams = gparams.chain(std::iter::once(quote!(const #mask: u64)));
    let named = crate::differentiable::codegen::type_and_const_params(generics);
    let turbofish = if named.is_empty() { quote!() } else { quote!(::<#(#named),*>) };
    let wrt_name = format_ident!("{}_wrt", rule.sig.ident, span = rule.sig.ident.span());
    let rule_name = &rule.sig.ident;
    // A rule for a method (`for = Type::f`) sits in an `impl` block.
    let n = target.segments.len();
    let method = n >= 2
        && target.segments[n - 2].ident.to_string().starts_with(|c: char| c.is_ascii_uppercase());
    let call = if method { quote!(Self::#rule_name) } else { quote!(#rule_name) };
    let vis = &rule.vis;
    let cfgs = rule.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    // The name `hvp!` calls (see `differentiable/twin.rs`), beside a free rule.
    let alias = if method {
        quote!()
    } else {
        let twin_name = format_ident!(
            "{}_twin",
            wrt_name.to_string().trim_end_matches("_wrt"),
            span = rule.sig.ident.span()
        );
        let cfgs = rule.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        quote!(
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(unused_imports)]
            #vis use #wrt_name as #twin_name;
        )
    };
    quote!(
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::all)]
        #[inline]
        #vis fn #wrt_name<#(#gparams),*>(_: #rt::rev::Wrt<#mask>, #(#params),*) -> (
            #first,
            impl ::core::ops::FnOnce(<#r as #rt::Primal>::RData) -> (#(#rdata,)*)
        )
        #where_clause
        {
            #call #turbofish(#(#args),*)
        }
        #alias
    )
}
