//! The high-level API macros: `value_and_derivative!` (forward mode).
//!
//! Like `test_rule!`, they decide structure only (how each argument is passed, which rule path
//! to call) and leave types to rustc.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, Token};

struct DerivativeInput {
    call: syn::ExprCall,
    tangents: Vec<Expr>,
}

/// The call the API macros start with: `f(args..)`, by path.
fn parse_call(input: ParseStream<'_>) -> syn::Result<syn::ExprCall> {
    match ungroup(input.parse::<Expr>()?) {
        Expr::Call(mut c) => {
            // Arguments passed through a `macro_rules!` fragment arrive in invisible groups;
            // how each is passed (`&`, `&mut`, by value) must still be seen.
            c.args = c.args.into_iter().map(ungroup).collect();
            Ok(c)
        }
        other => Err(syn::Error::new(
            other.span(),
            "expected a call of a #[differentiable] function, such as `f(&x, 2.0)`; write a \
             method call `s.f(x)` as `Type::f(&s, x)`",
        )),
    }
}

impl Parse for DerivativeInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let call = parse_call(input)?;
        input.parse::<Token![,]>()?;
        let tangents: Expr = input.parse()?;
        let _ = input.parse::<Option<Token![,]>>()?;
        let tangents = match tangents {
            Expr::Tuple(t) => t.elems.into_iter().collect(),
            Expr::Paren(p) => vec![*p.expr],
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected the tangents as a tuple, one per argument: `(tx, ty)` (or `(tx,)`)",
                ));
            }
        };
        Ok(DerivativeInput { call, tangents })
    }
}

/// An expression without the invisible group a `macro_rules!` fragment puts around it.
fn ungroup(e: Expr) -> Expr {
    match e {
        Expr::Group(g) => ungroup(*g.expr),
        other => other,
    }
}

fn rule_path(func: &Expr, suffix: &str) -> syn::Result<syn::Path> {
    let Expr::Path(p) = func else {
        return Err(syn::Error::new(
            func.span(),
            "expected a path to a #[differentiable] function",
        ));
    };
    let mut path = p.path.clone();
    match path.segments.last_mut() {
        Some(last) => {
            last.ident = format_ident!("{}_{}", last.ident, suffix, span = last.ident.span());
            Ok(path)
        }
        None => {
            Err(syn::Error::new(func.span(), "expected a path to a #[differentiable] function"))
        }
    }
}

/// `value_and_derivative!(f(a, &b, &mut c), (ta, tb, tc))`.
pub(crate) fn value_and_derivative(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<DerivativeInput>(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let n = input.call.args.len();
    let func = &input.call.func;
    let func_text = quote!(#func).to_string().replace(' ', "");
    if input.tangents.len() != n {
        return syn::Error::new(
            if input.tangents.is_empty() { input.call.span() } else { input.tangents[0].span() },
            format!(
                "`{}` takes {n} argument{} but {} tangent{} given: pass one tangent per argument \
                 (`NoTangent` for non-differentiable ones)",
                func_text,
                if n == 1 { "" } else { "s" },
                input.tangents.len(),
                if input.tangents.len() == 1 { " is" } else { "s are" },
            ),
        )
        .to_compile_error();
    }
    let rule = match rule_path(&input.call.func, "frule") {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let rt = quote!(::mooncake_runtime::__private);
    let mut lets = Vec::new();
    let mut args = Vec::new();
    for (i, (arg, tangent)) in input.call.args.iter().zip(&input.tangents).enumerate() {
        let t = format_ident!("__t{}", i, span = proc_macro2::Span::mixed_site());
        let span = arg.span();
        match arg {
            Expr::Reference(r) => {
                let inner = &r.expr;
                if r.mutability.is_some() {
                    lets.push(quote_spanned!(tangent.span()=> let mut #t = #tangent;));
                    args.push(quote_spanned!(span=> { let __d = #rt::Dual::new(&mut #inner, &mut #t); #rt::Dual::new(__d.primal, __d.tangent) }));
                } else {
                    lets.push(quote_spanned!(tangent.span()=> let #t = #tangent;));
                    args.push(quote_spanned!(span=> { let __d = #rt::Dual::new(&#inner, &#t); #rt::Dual::new(__d.primal, __d.tangent) }));
                }
            }
            other => {
                lets.push(quote_spanned!(tangent.span()=> let #t = #tangent;));
                args.push(quote_spanned!(span=> #rt::Dual::new(#other, #t)));
            }
        }
    }
    quote!({
        #(#lets)*
        let __d = #rule(#(#args),*);
        (__d.primal, __d.tangent)
    })
}

struct GradientInput {
    call: syn::ExprCall,
    ybar: Option<Expr>,
    /// `cache = expr`: the prepared form.
    cache: Option<Expr>,
}

fn parse_gradient_input(input: ParseStream<'_>, with_ybar: bool) -> syn::Result<GradientInput> {
    let call = parse_call(input)?;
    let ybar = if with_ybar {
        input.parse::<Token![,]>()?;
        Some(input.parse()?)
    } else {
        None
    };
    let _ = input.parse::<Option<Token![,]>>()?;
    let mut cache = None;
    if !with_ybar && input.peek(syn::Ident) && input.peek2(Token![=]) {
        let key: syn::Ident = input.parse()?;
        if key != "cache" {
            return Err(syn::Error::new(
                key.span(),
                "expected `cache = &mut cache` (a `GradientCache`) after the call",
            ));
        }
        input.parse::<Token![=]>()?;
        cache = Some(input.parse()?);
        let _ = input.parse::<Option<Token![,]>>()?;
    }
    if !input.is_empty() {
        return Err(input.error(if with_ybar {
            "expected `value_and_pullback!(f(args..), ybar)`"
        } else {
            "expected `value_and_gradient!(f(args..))` or `value_and_gradient!(f(args..), cache \
             = &mut cache)`; for a cotangent of the result use `value_and_pullback!(f(args..), \
             ybar)`"
        }));
    }
    Ok(GradientInput { call, ybar, cache })
}

/// `value_and_gradient!(f(a, &b, &mut c))` and `value_and_pullback!(f(..), ybar)`.
pub(crate) fn value_and_gradient(input: TokenStream, with_ybar: bool) -> TokenStream {
    let input = match syn::parse::Parser::parse2(
        |s: ParseStream<'_>| parse_gradient_input(s, with_ybar),
        input,
    ) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let rule = match rule_path(&input.call.func, "rrule") {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    if let Some(cache) = &input.cache {
        return value_and_gradient_cached(&input.call, &rule, cache);
    }
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let mut lets = Vec::new();
    let mut args = Vec::new();
    let mut grads = Vec::new();
    let mut restores = Vec::new();
    for (i, arg) in input.call.args.iter().enumerate() {
        let p = format_ident!("__p{}", i, span = site);
        let f = format_ident!("__f{}", i, span = site);
        let span = arg.span();
        let idx = syn::Index::from(i);
        match arg {
            Expr::Reference(r) if r.mutability.is_some() => {
                // Seen through a handle holding a copy: the caller's value is left as it was
                // on entry, which is where a complete gradient computation leaves it.
                let inner = &r.expr;
                let m = format_ident!("__mut{}", i, span = site);
                lets.push(quote_spanned!(span=>
                    let #m = &mut #inner;
                    let #p = #rt::Primal::to_handle(&*#m);
                    let #f = #rt::Primal::zero_shadow(&*#m);
                ));
                args.push(quote_spanned!(span=> #rt::CoDual::new(::core::clone::Clone::clone(&#p), ::core::clone::Clone::clone(&#f))));
                // After the pullback the handle holds the state on entry again: write it back.
                restores.push(quote_spanned!(span=> #rt::Primal::load_handle(&mut *#m, &#p);));
                grads.push(quote_spanned!(span=> #rt::api::shadow_gradient(&*#m, &#f)));
            }
            Expr::Reference(r) => {
                let inner = &r.expr;
                lets.push(quote_spanned!(span=> let #f = #rt::Primal::zero_shadow(&#inner);));
                args.push(quote_spanned!(span=> { let __c = #rt::CoDual::new(&#inner, ::core::clone::Clone::clone(&#f)); #rt::CoDual::new(__c.primal, __c.fdata) }));
                grads.push(quote_spanned!(span=> #rt::api::shadow_gradient(&#inner, &#f)));
            }
            other => {
                let m = format_ident!("__m{}", i, span = site);
                lets.push(quote_spanned!(span=>
                    let #p = #other;
                    let #f = #rt::Primal::zero_fdata(&#p);
                    let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
                    let #m = #rt::rev::primal_marker(&#p);
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::rev::pass(&#p); #rt::CoDual::new(__c.primal, __c.fdata) }));
                grads.push(quote_spanned!(span=> #rt::api::value_gradient(#m, &#f, __r.#idx)));
            }
        }
    }
    let seed = match &input.ybar {
        None => quote!(
            let __ybar = #rt::api::seed_one(&__y.primal);
        ),
        Some(ybar) => quote_spanned!(ybar.span()=>
            let __ybar = #rt::api::seed_cotangent(&__y, #ybar);
        ),
    };
    quote!({
        #(#lets)*
        let (__y, __pb) = #rule(#(#args),*);
        #seed
        let __r = __pb(__ybar);
        let _ = &__r;
        #(#restores)*
        (__y.primal, (#(#grads,)*))
    })
}

/// `value_and_gradient!(f(a, &b, &mut c), cache = &mut cache)`: the prepared form, whose
/// shadows, handles and gradients live in a `GradientCache` and are reused.
fn value_and_gradient_cached(call: &syn::ExprCall, rule: &syn::Path, cache: &Expr) -> TokenStream {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let func = &call.func;
    let name = quote!(#func).to_string().replace(' ', "");
    let n = call.args.len();
    let c = format_ident!("__cache", span = site);
    let mut lets = Vec::new();
    let mut args = Vec::new();
    let mut done = Vec::new();
    let mut grads = Vec::new();
    for (k, arg) in call.args.iter().enumerate() {
        let p = format_ident!("__p{}", k, span = site);
        let f = format_ident!("__f{}", k, span = site);
        let span = arg.span();
        let idx = syn::Index::from(k);
        match arg {
            Expr::Reference(r) if r.mutability.is_some() => {
                let inner = &r.expr;
                let m = format_ident!("__mut{}", k, span = site);
                lets.push(quote_spanned!(span=>
                    let #m = &mut #inner;
                    let (#p, #f) = #c.mut_handle(#k, &*#m);
                ));
                args.push(quote_spanned!(span=> #rt::CoDual::new(#p, #f)));
                done.push(quote_spanned!(span=> #c.mut_done(#k, &mut *#m);));
                grads.push(quote_spanned!(span=> #c.mut_gradient(#k, &*#m)));
            }
            Expr::Reference(r) => {
                let inner = &r.expr;
                let m = format_ident!("__ref{}", k, span = site);
                lets.push(quote_spanned!(span=>
                    let #m = &#inner;
                    let #f = #c.ref_shadow(#k, #m);
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::CoDual::new(#m, #f); #rt::CoDual::new(__c.primal, __c.fdata) }));
                done.push(quote_spanned!(span=> #c.ref_done(#k, #m);));
                grads.push(quote_spanned!(span=> #c.ref_gradient(#k, #m)));
            }
            other => {
                let mk = format_ident!("__m{}", k, span = site);
                lets.push(quote_spanned!(span=>
                    let #p = #other;
                    let #f = #rt::Primal::zero_fdata(&#p);
                    let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
                    let #mk = #rt::rev::primal_marker(&#p);
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::rev::pass(&#p); #rt::CoDual::new(__c.primal, __c.fdata) }));
                done.push(quote_spanned!(span=> #c.value_done(#k, #mk, &#f, __r.#idx);));
                grads.push(quote_spanned!(span=> #c.value_gradient(#k, #mk)));
            }
        }
    }
    quote!({
        let #c: &mut #rt::GradientCache = #cache;
        let #c = #c.begin(#name, #n);
        #(#lets)*
        let (__y, __pb) = #rule(#(#args),*);
        let __ybar = #rt::api::seed_one(&__y.primal);
        let __r = __pb(__ybar);
        let _ = &__r;
        #(#done)*
        let #c: &#rt::GradientCache = #c;
        (__y.primal, (#(#grads,)*))
    })
}
