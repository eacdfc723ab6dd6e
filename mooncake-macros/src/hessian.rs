//! `hvp!(f(args..), (v1, v2, ..))`, its prepared form `hvp!(f(args..), dirs, cache = &mut c)`,
//! and `hessian!(f(args..))`: forward-over-reverse, by the function's derived reverse rule run
//! on dual numbers (`T = Fwd<f64>`; see `mooncake_runtime::hessian`).
//!
//! Each argument is bound once, lifted to dual numbers (the direction's components as dual
//! parts; a unit direction per pass for `hessian!`), and handed to the rule through
//! `hess::pass`, whose type the rule's parameter decides (the check that the function is
//! generic over `T: Float`); the result is pinned to `Fwd<F>`, the pullback seeded with `1 + 0ε`
//! and every gradient split into its real and dual parts. As in the other API macros, the macro
//! decides structure only and rustc the types.

use crate::api::{constant, parse_call, second_order_rule};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Expr, Token};

const HVP_USAGE: &str = "expected `hvp!(f(args..), (v1, v2, ..))` with one direction per \
                         argument (`NoTangent` for an integer or a `Const(..)`), or `hvp!(f(args..), \
                         dirs, cache = &mut cache)` (an `HvpCache`)";

const HESSIAN_USAGE: &str =
    "expected `hessian!(f(args..))` or `hessian!(f(args..), cache = &mut cache)` (an `HvpCache`)";

struct HvpInput {
    call: syn::ExprCall,
    dirs: Vec<Expr>,
    cache: Option<Expr>,
}

fn parse_hvp(input: ParseStream<'_>) -> syn::Result<HvpInput> {
    let call = parse_call(input)?;
    let n = call.args.len();
    if input.is_empty() {
        return Err(syn::Error::new(
            call.span(),
            format!("{HVP_USAGE}: the directions are missing"),
        ));
    }
    input.parse::<Token![,]>()?;
    let dirs: Expr = input.parse().map_err(|e| syn::Error::new(e.span(), HVP_USAGE))?;
    let dirs_span = dirs.span();
    let dirs = match crate::api::ungroup(dirs) {
        Expr::Tuple(t) => t.elems.into_iter().collect(),
        Expr::Paren(p) => vec![*p.expr],
        other if n == 1 => vec![other],
        _ => {
            return Err(syn::Error::new(
                dirs_span,
                format!(
                    "give the directions as a tuple written out, `(v1, v2, ..)`, one per \
                     argument ({n} here; `NoTangent` for an integer or a `Const(..)`)"
                ),
            ));
        }
    };
    if dirs.len() != n {
        let func = &call.func;
        return Err(syn::Error::new(
            dirs_span,
            format!(
                "`{}` takes {n} argument{} but {} direction{} given: pass one direction per \
                 argument (`NoTangent` for an integer or a `Const(..)`)",
                quote!(#func).to_string().replace(' ', ""),
                if n == 1 { "" } else { "s" },
                dirs.len(),
                if dirs.len() == 1 { " is" } else { "s are" },
            ),
        ));
    }
    let _ = input.parse::<Option<Token![,]>>()?;
    let mut cache = None;
    if !input.is_empty() {
        let key: syn::Ident = input.parse().map_err(|e| syn::Error::new(e.span(), HVP_USAGE))?;
        if key != "cache" {
            return Err(syn::Error::new(
                key.span(),
                format!("unknown option `{key}`: {HVP_USAGE}"),
            ));
        }
        input.parse::<Token![=]>().map_err(|e| syn::Error::new(e.span(), HVP_USAGE))?;
        cache = Some(input.parse().map_err(|e| syn::Error::new(e.span(), HVP_USAGE))?);
        let _ = input.parse::<Option<Token![,]>>()?;
    }
    if !input.is_empty() {
        return Err(input.error(HVP_USAGE));
    }
    let dirs = dirs.into_iter().map(f64_literal).collect();
    Ok(HvpInput { call, dirs, cache })
}

/// An unsuffixed float literal (`1.5`, `-2.0`) given to `hvp!` / `hessian!`, suffixed `f64`:
/// the rules run at `Fwd<f64>` and their float type is a type parameter, which a literal alone
/// would leave unknown ("type annotations needed" on the result).
fn f64_literal(e: Expr) -> Expr {
    match e {
        Expr::Lit(syn::ExprLit { attrs, lit: syn::Lit::Float(f) }) if f.suffix().is_empty() => {
            let lit = syn::LitFloat::new(&format!("{}f64", f.base10_digits()), f.span());
            Expr::Lit(syn::ExprLit { attrs, lit: syn::Lit::Float(lit) })
        }
        Expr::Unary(syn::ExprUnary { attrs, op: syn::UnOp::Neg(n), expr }) => {
            Expr::Unary(syn::ExprUnary {
                attrs,
                op: syn::UnOp::Neg(n),
                expr: Box::new(f64_literal(*expr)),
            })
        }
        Expr::Group(g) if matches!(&*g.expr, Expr::Lit(_) | Expr::Unary(_)) => f64_literal(*g.expr),
        other => other,
    }
}

fn parse_hessian(input: ParseStream<'_>) -> syn::Result<(syn::ExprCall, Option<Expr>)> {
    let call = parse_call(input)?;
    let _ = input.parse::<Option<Token![,]>>()?;
    let mut cache = None;
    if !input.is_empty() {
        let key: syn::Ident =
            input.parse().map_err(|e| syn::Error::new(e.span(), HESSIAN_USAGE))?;
        if key != "cache" {
            return Err(syn::Error::new(
                key.span(),
                format!(
                    "unknown option `{key}`: {HESSIAN_USAGE} (for a product with a direction, \
                     use `hvp!`)"
                ),
            ));
        }
        input.parse::<Token![=]>().map_err(|e| syn::Error::new(e.span(), HESSIAN_USAGE))?;
        cache = Some(input.parse().map_err(|e| syn::Error::new(e.span(), HESSIAN_USAGE))?);
        let _ = input.parse::<Option<Token![,]>>()?;
    }
    if !input.is_empty() {
        return Err(input.error(HESSIAN_USAGE));
    }
    Ok((call, cache))
}

/// `&mut` arguments are refused: the Hessian is that of the result alone.
fn refuse_mut(args: &[(bool, Expr)], mac: &str) -> syn::Result<()> {
    for (_, arg) in args {
        if let Expr::Reference(r) = arg
            && r.mutability.is_some()
        {
            return Err(syn::Error::new_spanned(
                arg,
                format!(
                    "`{mac}!` does not take `&mut` arguments: pass the value as `&x` (the \
                     function may copy it into a local buffer it mutates)"
                ),
            ));
        }
    }
    Ok(())
}

/// The expansion of `hvp!`.
pub(crate) fn hvp(input: TokenStream) -> TokenStream {
    match syn::parse::Parser::parse2(parse_hvp, input).and_then(|i| expand_hvp(&i)) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

/// The expansion of `hessian!`.
pub(crate) fn hessian(input: TokenStream) -> TokenStream {
    match syn::parse::Parser::parse2(parse_hessian, input).and_then(|(call, cache)| match cache {
        None => expand_hessian(&call),
        Some(cache) => expand_hessian_cached(&call, &cache),
    }) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

fn expand_hvp(input: &HvpInput) -> syn::Result<TokenStream> {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let call = &input.call;
    let func = &call.func;
    let name = quote!(#func).to_string().replace(' ', "");
    let n = call.args.len();
    let args: Vec<(bool, Expr)> =
        call.args.iter().map(constant).map(|(c, e)| (c, f64_literal(e))).collect();
    refuse_mut(&args, "hvp")?;
    let (rule, mask) = second_order_rule(call, &args)?;
    let cached = input.cache.is_some();
    let (y, r, c) = (
        format_ident!("__y", span = site),
        format_ident!("__r", span = site),
        format_ident!("__cache", span = site),
    );
    let mut lets = Vec::new();
    let mut call_args = Vec::new();
    let mut dones = Vec::new();
    let mut puts = Vec::new();
    let mut grads = Vec::new();
    let mut hvs = Vec::new();
    for (k, ((is_const, arg), dir)) in args.iter().zip(&input.dirs).enumerate() {
        let span = arg.span();
        let x = format_ident!("__x{}", k, span = site);
        let l = format_ident!("__l{}", k, span = site);
        let p = format_ident!("__p{}", k, span = site);
        let f = format_ident!("__f{}", k, span = site);
        let m = format_ident!("__m{}", k, span = site);
        let t = format_ident!("__t{}", k, span = site);
        let g = format_ident!("__g{}", k, span = site);
        let h = format_ident!("__h{}", k, span = site);
        let idx = syn::Index::from(k);
        if *is_const {
            lets.push(quote_spanned!(dir.span()=> let _: #rt::NoTangent = #dir;));
        }
        let pass = if *is_const { quote!(pass_const) } else { quote!(pass) };
        match arg {
            Expr::Reference(re) => {
                let inner = &re.expr;
                lets.push(quote_spanned!(span=> let #x = &#inner;));
                lets.push(match (cached, is_const) {
                    (false, false) => {
                        quote_spanned!(span=> let #l = #rt::hess::lift(#x, &#dir, #k, #name);)
                    }
                    (false, true) => quote_spanned!(span=> let #l = #rt::hess::lift_const(#x);),
                    (true, false) => {
                        quote_spanned!(span=> let #l = #c.take_lifted(#k, #x, ::core::option::Option::Some(&#dir));)
                    }
                    (true, true) => {
                        quote_spanned!(span=> let #l = #c.take_lifted(#k, #x, ::core::option::Option::None::<&#rt::NoTangent>);)
                    }
                });
                lets.push(quote_spanned!(span=> let #p = #rt::hess::#pass((#x, &#l));));
                lets.push(if cached {
                    quote_spanned!(span=> let #f = #c.ref_shadow(#k, #p);)
                } else {
                    quote_spanned!(span=> let #f = #rt::Primal::zero_shadow(#p);)
                });
                call_args.push(
                    quote_spanned!(span=> #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f))),
                );
                if cached {
                    if !is_const {
                        dones.push(quote_spanned!(span=>
                            #c.ref_done(#k, #p, &#f);
                            let #t = #rt::hess::tangent_marker(#p);
                        ));
                    }
                    puts.push(quote_spanned!(span=> #c.put_lifted(#k, #l);));
                } else if !is_const {
                    dones.push(quote_spanned!(span=>
                        let (#g, #h) = #rt::hess::split(#rt::api::shadow_gradient(#p, &#f));
                    ));
                }
            }
            other => {
                lets.push(quote_spanned!(span=> let #x = #other;));
                lets.push(if *is_const {
                    quote_spanned!(span=> let #l = #rt::hess::lift_const(&#x);)
                } else {
                    quote_spanned!(span=> let #l = #rt::hess::lift(&#x, &#dir, #k, #name);)
                });
                lets.push(quote_spanned!(span=>
                    let #p = #rt::hess::#pass((#x, #l));
                    let #f = #rt::Primal::zero_fdata(&#p);
                    let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
                ));
                if !is_const {
                    lets.push(quote_spanned!(span=> let #m = #rt::rev::primal_marker(&#p);));
                }
                call_args.push(quote_spanned!(span=> {
                    let __c = #rt::rev::pass(&#p);
                    #rt::CoDual::new(__c.primal, __c.fdata)
                }));
                if !is_const {
                    dones.push(if cached {
                        quote_spanned!(span=>
                            #c.value_done(#k, #m, &#f, #r.#idx);
                            let #t = #rt::hess::codual_tangent_marker(&#p);
                        )
                    } else {
                        quote_spanned!(span=>
                            let (#g, #h) = #rt::hess::split(#rt::api::value_gradient(#m, &#f, #r.#idx));
                        )
                    });
                }
            }
        }
        if *is_const {
            grads.push(quote!(#rt::NoTangent));
            hvs.push(quote!(#rt::NoTangent));
        } else {
            grads.push(quote!(#g));
            hvs.push(quote!(#h));
        }
    }
    // In the prepared form the parts are borrowed from the cache once it is done with.
    let parts = if cached {
        let fetch = args.iter().enumerate().filter(|(_, (is_const, _))| !is_const).map(|(k, _)| {
            let t = format_ident!("__t{}", k, span = site);
            let g = format_ident!("__g{}", k, span = site);
            let h = format_ident!("__h{}", k, span = site);
            quote!(let (#g, #h) = #c.parts(#k, #t);)
        });
        quote!(
            let #c: &#rt::hess::HvpCache = #c;
            #(#fetch)*
        )
    } else {
        quote!()
    };
    let begin = match &input.cache {
        Some(cache) => quote_spanned!(cache.span()=>
            let #c: &mut #rt::hess::HvpCache = #cache;
            let #c = #c.begin(#name, #n);
        ),
        None => quote!(),
    };
    Ok(quote!({
        #begin
        #(#lets)*
        let (#y, __pb) = #rule(#mask #(#call_args),*);
        #rt::hess::Pin(&#y.primal).pin();
        let __ybar = #rt::hess::seed(&#y.primal);
        let #r = __pb(__ybar);
        let _ = &#r;
        #(#dones)*
        #(#puts)*
        #parts
        (#rt::hess::value(#y.primal), (#(#grads,)*), (#(#hvs,)*))
    }))
}

/// The per-argument parts of a `hessian!` pass, shared by the plain and the prepared form:
/// what binds the arguments once, the flat lengths of the differentiable ones, what each pass
/// builds (the argument lifted with its unit direction, its fdata), the call's arguments, what
/// gathers the gradient and the product after the pullback, and (prepared) what gives the lifted
/// buffers back. `cache` is the prepared form's `HvpCache`; without it the parts go into fresh
/// memory and the flat buffers `grad` / `hv` of `hess::dense`.
struct HessianArgs {
    binds: Vec<TokenStream>,
    dims: Vec<TokenStream>,
    lets: Vec<TokenStream>,
    call_args: Vec<TokenStream>,
    dones: Vec<TokenStream>,
    puts: Vec<TokenStream>,
}

fn hessian_args(args: &[(bool, Expr)], cache: Option<&syn::Ident>) -> HessianArgs {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let (r, j, off) = (
        format_ident!("__r", span = site),
        format_ident!("__j", span = site),
        format_ident!("__off", span = site),
    );
    let (grad, hv) = (format_ident!("__grad", span = site), format_ident!("__hv", span = site));
    let mut out = HessianArgs {
        binds: Vec::new(),
        dims: Vec::new(),
        lets: Vec::new(),
        call_args: Vec::new(),
        dones: Vec::new(),
        puts: Vec::new(),
    };
    for (k, (is_const, arg)) in args.iter().enumerate() {
        let span = arg.span();
        let x = format_ident!("__x{}", k, span = site);
        let l = format_ident!("__l{}", k, span = site);
        let p = format_ident!("__p{}", k, span = site);
        let f = format_ident!("__f{}", k, span = site);
        let m = format_ident!("__m{}", k, span = site);
        let idx = syn::Index::from(k);
        let pass = if *is_const { quote!(pass_const) } else { quote!(pass) };
        let by_ref = matches!(arg, Expr::Reference(_));
        out.binds.push(quote_spanned!(span=> let #x = #arg;));
        let x_ref = if by_ref { quote!(#x) } else { quote!(&#x) };
        let unit = if *is_const {
            quote!(::core::option::Option::None)
        } else {
            out.dims.push(quote_spanned!(span=> #rt::hess::flat_len(#x_ref)));
            quote_spanned!(span=> #rt::hess::unit_in(#j, &mut #off, #rt::hess::flat_len(#x_ref)))
        };
        if by_ref {
            out.lets.push(match cache {
                Some(c) => quote_spanned!(span=>
                    let #l = #c.take_lifted_unit(#k, #x, #unit);
                    let #p = #rt::hess::#pass((#x, &#l));
                    let #f = #c.ref_shadow(#k, #p);
                ),
                None => quote_spanned!(span=>
                    let #l = #rt::hess::lift_unit(#x_ref, #unit);
                    let #p = #rt::hess::#pass((#x, &#l));
                    let #f = #rt::Primal::zero_shadow(#p);
                ),
            });
            out.call_args.push(
                quote_spanned!(span=> #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f))),
            );
            if !is_const {
                out.dones.push(match cache {
                    Some(c) => quote_spanned!(span=> #c.ref_push(#k, #p, &#f);),
                    None => quote_spanned!(span=>
                        #rt::hess::extend_flat(#rt::api::shadow_gradient(#p, &#f), #grad, #hv);
                    ),
                });
            }
            if let Some(c) = cache {
                out.puts.push(quote_spanned!(span=> #c.put_lifted(#k, #l);));
            }
        } else {
            out.lets.push(quote_spanned!(span=>
                let #l = #rt::hess::lift_unit(#x_ref, #unit);
                let #p = #rt::hess::#pass((::core::clone::Clone::clone(&#x), #l));
                let #f = #rt::Primal::zero_fdata(&#p);
                let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
            ));
            if !is_const {
                out.lets.push(quote_spanned!(span=> let #m = #rt::rev::primal_marker(&#p);));
                out.dones.push(match cache {
                    Some(c) => quote_spanned!(span=> #c.value_push(#k, #m, &#f, #r.#idx);),
                    None => quote_spanned!(span=>
                        #rt::hess::extend_flat(#rt::api::value_gradient(#m, &#f, #r.#idx), #grad, #hv);
                    ),
                });
            }
            out.call_args.push(quote_spanned!(span=> {
                let __c = #rt::rev::pass(&#p);
                #rt::CoDual::new(__c.primal, __c.fdata)
            }));
        }
    }
    out
}

fn expand_hessian(call: &syn::ExprCall) -> syn::Result<TokenStream> {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let args: Vec<(bool, Expr)> =
        call.args.iter().map(constant).map(|(c, e)| (c, f64_literal(e))).collect();
    refuse_mut(&args, "hessian")?;
    let (rule, mask) = second_order_rule(call, &args)?;
    let (y, r, j) = (
        format_ident!("__y", span = site),
        format_ident!("__r", span = site),
        format_ident!("__j", span = site),
    );
    let (grad, hv, off) = (
        format_ident!("__grad", span = site),
        format_ident!("__hv", span = site),
        format_ident!("__off", span = site),
    );
    let HessianArgs { binds, dims, lets, call_args, dones, .. } = hessian_args(&args, None);
    Ok(quote!({
        #(#binds)*
        let __n: usize = 0 #(+ #dims)*;
        #rt::hess::dense(__n, |#j: ::core::option::Option<usize>, #grad: &mut ::std::vec::Vec<f64>, #hv: &mut ::std::vec::Vec<f64>| {
            #[allow(unused_mut, unused_variables)]
            let mut #off = 0usize;
            #(#lets)*
            let (#y, __pb) = #rule(#mask #(#call_args),*);
            #rt::hess::Pin(&#y.primal).pin();
            let __ybar = #rt::hess::seed(&#y.primal);
            let #r = __pb(__ybar);
            let _ = (&#r, &#grad, &#hv, &#j);
            #(#dones)*
            #rt::hess::value(#y.primal)
        })
    }))
}

/// `hessian!(f(args..), cache = &mut cache)`: the passes run in a loop over the unit
/// directions, every buffer (lifted copies, shadows, the flat gradient and product, the matrix)
/// in the `HvpCache`; the gradient and the Hessian are returned borrowed from it.
fn expand_hessian_cached(call: &syn::ExprCall, cache: &Expr) -> syn::Result<TokenStream> {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let func = &call.func;
    let name = quote!(#func).to_string().replace(' ', "");
    let nargs = call.args.len();
    let args: Vec<(bool, Expr)> =
        call.args.iter().map(constant).map(|(c, e)| (c, f64_literal(e))).collect();
    refuse_mut(&args, "hessian")?;
    let (rule, mask) = second_order_rule(call, &args)?;
    let (y, r, j, c, off) = (
        format_ident!("__y", span = site),
        format_ident!("__r", span = site),
        format_ident!("__j", span = site),
        format_ident!("__cache", span = site),
        format_ident!("__off", span = site),
    );
    let HessianArgs { binds, dims, lets, call_args, dones, puts } = hessian_args(&args, Some(&c));
    Ok(quote_spanned!(cache.span()=> {
        let #c: &mut #rt::hess::HvpCache = #cache;
        let #c = #c.begin(#name, #nargs);
        #(#binds)*
        let __n: usize = 0 #(+ #dims)*;
        #c.begin_hessian(__n);
        let mut __value = ::core::option::Option::None;
        for __pass in 0..__n.max(1) {
            let #j: ::core::option::Option<usize> =
                if __n == 0 { ::core::option::Option::None } else { ::core::option::Option::Some(__pass) };
            #[allow(unused_mut, unused_variables)]
            let mut #off = 0usize;
            #(#lets)*
            let (#y, __pb) = #rule(#mask #(#call_args),*);
            #rt::hess::Pin(&#y.primal).pin();
            let __ybar = #rt::hess::seed(&#y.primal);
            let #r = __pb(__ybar);
            let _ = &#r;
            #c.begin_pass();
            #(#dones)*
            #(#puts)*
            #c.end_pass(#j);
            __value = ::core::option::Option::Some(#rt::hess::value(#y.primal));
        }
        let #c: &#rt::hess::HvpCache = #c;
        let (__g, __h) = #c.hessian_parts();
        (#rt::hess::last_value(__value), __g, __h)
    }))
}

#[cfg(test)]
mod tests {
    use super::{hessian, hvp};
    use proc_macro2::{TokenStream, TokenTree};

    /// Expands `input`: never a panic, always one expression (a block, or a `compile_error!`).
    fn expands(f: fn(TokenStream) -> TokenStream, input: TokenStream) -> TokenStream {
        let text = input.to_string();
        let out = std::panic::catch_unwind(|| f(input))
            .unwrap_or_else(|_| panic!("expansion of ({text}) panicked"));
        if let Err(e) = syn::parse2::<syn::Expr>(out.clone()) {
            panic!("({text}) expanded to something that is not one expression: {e}");
        }
        out
    }

    fn is_error(out: &TokenStream) -> bool {
        out.to_string().contains("compile_error")
    }

    #[test]
    fn good_input_expands_without_errors() {
        for text in [
            "f(&x), (&v,)",
            "f(&x), &v",
            "f(&x), (v)",
            "f(&x, 2.0, n), (&v, 1.0, NoTangent)",
            "f(x.clone(), Const(&y), Const(s)), (v, NoTangent, NoTangent)",
            "m::f::<f64>(&x[..],), (&v[..],)",
            "f(&x), (&v,), cache = &mut c",
            "f(&x, Const(&y), a), (&v, NoTangent, 0.5), cache = &mut c,",
            "f(), ()",
        ] {
            let out = expands(hvp, text.parse().unwrap());
            assert!(!is_error(&out), "{text}: {out}");
        }
        for text in [
            "f(&x)",
            "f(&x, 2.0, n)",
            "f(x.clone(), Const(&y), Const(s))",
            "f()",
            "f(&x), cache = &mut c",
            "f(&x, Const(&y), 2.0), cache = &mut c,",
        ] {
            let out = expands(hessian, text.parse().unwrap());
            assert!(!is_error(&out), "{text}: {out}");
        }
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        for text in [
            "",
            "f",
            "f(&x)",
            "f(&x),",
            "f(&mut x), (v,)",
            "f(Const(&mut x)), (NoTangent,)",
            "x.f(y), (v,)",
            "f(&x, y), v",
            "f(&x, y), (v,)",
            "f(&x), (v, w)",
            "f(&x), (v,), cache",
            "f(&x), (v,), cache =",
            "f(&x), (v,), mode = forward",
            "f(&x), (v,), cache = &mut c extra",
        ] {
            let out = expands(hvp, text.parse().unwrap());
            assert!(is_error(&out), "{text}: {out}");
        }
        for text in [
            "",
            "f",
            "f(&mut x)",
            "x.f(y)",
            "f(x), v",
            "f(x), mode = forward",
            "f(x), cache",
            "f(x), cache = &mut c extra",
            "f(&mut x), cache = &mut c",
        ] {
            let out = expands(hessian, text.parse().unwrap());
            assert!(is_error(&out), "{text}: {out}");
        }
    }

    /// Every prefix of some valid inputs, and each with one token left out: errors or
    /// expansions, never panics.
    #[test]
    fn truncated_and_mutilated_input_never_panics() {
        for text in [
            "f(&x, Const(&y), 2.0), (&v, NoTangent, 1.0), cache = &mut c,",
            "a::b(x, &y[..]), (v, w)",
        ] {
            let tokens: Vec<TokenTree> = text.parse::<TokenStream>().unwrap().into_iter().collect();
            for k in 0..=tokens.len() {
                for f in [hvp as fn(TokenStream) -> TokenStream, hessian] {
                    expands(f, tokens[..k].iter().cloned().collect());
                    if k < tokens.len() {
                        let mut left_out = tokens.clone();
                        left_out.remove(k);
                        expands(f, left_out.into_iter().collect());
                    }
                }
            }
        }
    }
}
