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
    tangents: Tangents,
}

/// The tangents of `value_and_derivative!`: a tuple written out (one expression per
/// argument), or any expression of the tuple's type (`(tx,)` for one argument, as a variable).
enum Tangents {
    Listed(Vec<Expr>),
    Tuple(Box<Expr>),
}

/// The call the API macros start with: `f(args..)`, by path.
pub(crate) fn parse_call(input: ParseStream<'_>) -> syn::Result<syn::ExprCall> {
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
        let tangents = match ungroup(tangents) {
            Expr::Tuple(t) => Tangents::Listed(t.elems.into_iter().collect()),
            Expr::Paren(p) => Tangents::Listed(vec![*p.expr]),
            other => Tangents::Tuple(Box::new(other)),
        };
        Ok(DerivativeInput { call, tangents })
    }
}

/// An expression without the invisible group a `macro_rules!` fragment puts around it.
pub(crate) fn ungroup(e: Expr) -> Expr {
    match e {
        Expr::Group(g) => ungroup(*g.expr),
        other => other,
    }
}

/// The path of a function written through its trait (`<B as Model>::logp`) as the type's own
/// (`B::logp`): the rules of a `#[differentiable]` trait impl's methods are the type's
/// associated functions, not the trait's. Any other path as it is.
pub(crate) fn unqualified(p: &syn::ExprPath) -> syn::Path {
    let Some(q) = &p.qself else { return p.path.clone() };
    let syn::Type::Path(ty) = &*q.ty else { return p.path.clone() };
    if ty.qself.is_some() || q.position == 0 {
        return p.path.clone();
    }
    let mut path = ty.path.clone();
    // In expression position, a generic type's arguments take a turbofish (`Foo::<T>::f`).
    for seg in path.segments.iter_mut() {
        if let syn::PathArguments::AngleBracketed(a) = &mut seg.arguments {
            a.colon2_token = Some(Default::default());
        }
    }
    path.segments.extend(p.path.segments.iter().skip(q.position).cloned());
    path
}

pub(crate) fn rule_path(func: &Expr, suffix: &str) -> syn::Result<syn::Path> {
    let Expr::Path(p) = func else {
        return Err(syn::Error::new(
            func.span(),
            "expected a path to a #[differentiable] function",
        ));
    };
    let mut path = unqualified(p);
    if path.is_ident("Const") {
        return Err(syn::Error::new(
            func.span(),
            "`Const(..)` marks one argument as a constant: write it around the argument, \
             `f(Const(&x), y)`, not around the call",
        ));
    }
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

/// A gradient as the user sees it: `NoTangent` for an argument with no differentiable part
/// (the rules' tangent of `&[usize]` is a `Vec` of `NoTangent`s), decided by the type of the
/// primal `primal` (a reference to the argument's value) belongs to.
fn friendly(g: &TokenStream, primal: &TokenStream) -> TokenStream {
    let rt = quote!(::mooncake_runtime::__private);
    quote!({
        #[allow(unused_imports)]
        use #rt::api::{FriendlyAsIs as _, FriendlyNoTangent as _};
        (&#rt::api::Friendly::of(#g, #primal)).friendly()
    })
}

/// The gradient of an argument as the user sees it (`NoTangent` for a constant).
fn shown_gradient(constant: bool, grad: &TokenStream, primal: &TokenStream) -> TokenStream {
    let rt = quote!(::mooncake_runtime::__private);
    if constant { quote!(#rt::NoTangent) } else { friendly(grad, primal) }
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
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    // The tangents as one expression each: written out, or the fields of a tuple given whole.
    let (tuple, tangents): (TokenStream, Vec<TokenStream>) = match &input.tangents {
        Tangents::Listed(ts) => {
            if ts.len() != n {
                return syn::Error::new(
                    if ts.is_empty() { input.call.span() } else { ts[0].span() },
                    format!(
                        "`{}` takes {n} argument{} but {} tangent{} given: pass one tangent per \
                         argument (`NoTangent` for non-differentiable ones)",
                        func_text,
                        if n == 1 { "" } else { "s" },
                        ts.len(),
                        if ts.len() == 1 { " is" } else { "s are" },
                    ),
                )
                .to_compile_error();
            }
            (quote!(), ts.iter().map(|t| quote!(#t)).collect())
        }
        Tangents::Tuple(e) => {
            let ts = format_ident!("__ts", span = site);
            let fields = (0..n).map(|k| {
                let k = syn::Index::from(k);
                quote_spanned!(e.span()=> #ts.#k)
            });
            // Up to 8 arguments, a tuple of another length is refused with a message.
            let tuple = if n <= 8 {
                quote_spanned!(e.span()=> let #ts = #rt::api::tangents::<#n, _>(#e);)
            } else {
                quote_spanned!(e.span()=> let #ts = #e;)
            };
            (tuple, fields.collect())
        }
    };
    let rule = match rule_path(&input.call.func, "frule") {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let mut lets = Vec::new();
    let mut args = Vec::new();
    for (i, (arg, tangent)) in input.call.args.iter().zip(&tangents).enumerate() {
        let t = format_ident!("__t{}", i, span = site);
        let a = format_ident!("__a{}", i, span = site);
        let span = arg.span();
        // The tangent as the argument's tangent type (`NoTangent` standing for the zero tangent
        // of an argument with no differentiable part).
        let user = |primal: TokenStream| {
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use #rt::api::{TangentAsIs as _, TangentFromNoTangent as _};
                (&#rt::api::UserTangent::new(#tangent, #primal)).to_tangent()
            })
        };
        match arg {
            Expr::Reference(r) => {
                let inner = &r.expr;
                let value = user(quote!(&#inner));
                let check = quote_spanned!(span=> {
                    #[allow(unused_imports)]
                    use #rt::api::{LenCheckBuffers as _, LenCheckOther as _};
                    (&#rt::api::LenCheck::new(&#inner, &#t)).check_len(#i, #func_text);
                });
                if r.mutability.is_some() {
                    lets.push(quote_spanned!(span=> let mut #t = #value; #check));
                    args.push(quote_spanned!(span=> { let __d = #rt::Dual::new(&mut #inner, &mut #t); #rt::Dual::new(__d.primal, __d.tangent) }));
                } else {
                    lets.push(quote_spanned!(span=> let #t = #value; #check));
                    args.push(quote_spanned!(span=> { let __d = #rt::Dual::new(&#inner, &#t); #rt::Dual::new(__d.primal, __d.tangent) }));
                }
            }
            other => {
                // A reference passed by name (`x` with `x: &[f64]`) is paired with a borrow of
                // its tangent, a value with the tangent: whichever the argument's type is.
                let value = user(quote!(&#a));
                lets.push(quote_spanned!(span=>
                    let #a = #other;
                    let #t = #value;
                    {
                        #[allow(unused_imports)]
                        use #rt::api::{LenCheckBuffers as _, LenCheckOther as _};
                        (&#rt::api::LenCheck::new(&#a, &#t)).check_len(#i, #func_text);
                    }
                    let mut #t = ::core::option::Option::Some(#t);
                ));
                args.push(quote_spanned!(span=> {
                    #[allow(unused_imports)]
                    use #rt::api::{RefArgDual as _, ValueArgDual as _};
                    let __d = (&#rt::api::ArgOf::new(#a)).arg_dual(&mut #t);
                    #rt::Dual::new(__d.primal, __d.tangent)
                }));
            }
        }
    }
    quote!({
        #tuple
        #(#lets)*
        let __d = #rule(#(#args),*);
        let __t = {
            #[allow(unused_imports)]
            use #rt::api::{FriendlyAsIs as _, FriendlyNoTangent as _};
            (&#rt::api::Friendly::of(__d.tangent, &__d.primal)).friendly()
        };
        (__d.primal, __t)
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

/// An argument written `Const(x)`: `x`, and whether it was so wrapped.
pub(crate) fn constant(arg: &Expr) -> (bool, Expr) {
    if let Expr::Call(c) = arg
        && let Expr::Path(p) = &*c.func
        && p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Const" && s.arguments.is_empty())
        && c.args.len() == 1
    {
        return (true, ungroup(c.args[0].clone()));
    }
    (false, arg.clone())
}

/// The rule a gradient calls and the arguments it passes first: `NAME_rrule`, or, when some
/// argument is `Const(..)`, `NAME_rrule_wrt` with the mask of the others (see `rev::Wrt`).
pub(crate) fn gradient_rule(
    call: &syn::ExprCall,
    args: &[(bool, Expr)],
) -> syn::Result<(syn::Path, Option<TokenStream>)> {
    let rt = quote!(::mooncake_runtime::__private);
    if !args.iter().any(|(c, _)| *c) {
        return Ok((rule_path(&call.func, "rrule")?, None));
    }
    let mut mask = 0u64;
    for (k, ((constant, _), arg)) in args.iter().zip(&call.args).enumerate() {
        match (k < 64, *constant) {
            (true, false) => mask |= 1 << k,
            (true, true) => {}
            (false, true) => {
                return Err(syn::Error::new(
                    arg.span(),
                    "`Const(..)` is supported for the first 64 arguments: pass this one as it \
                     is (its gradient is then computed)",
                ));
            }
            (false, false) => {}
        }
    }
    let mask = proc_macro2::Literal::u64_suffixed(mask);
    Ok((rule_path(&call.func, "rrule_wrt")?, Some(quote!(#rt::rev::Wrt::<#mask>,))))
}

/// The rule a second-order macro (`hvp!`, `hessian!`) calls, with the mask of the arguments that
/// are not `Const(..)` (every bit when none is): the rule it runs on dual numbers must be generic
/// over the float. For a function named by a plain path that is `NAME_rrule_twin`: the reverse
/// rule of a function over `f64` derived from its generic twin (`differentiable/twin.rs`), and
/// another name of `NAME_rrule_wrt` for any other function. Through a type (`Type::f`) or with
/// generic arguments, `NAME_rrule_wrt`.
pub(crate) fn second_order_rule(
    call: &syn::ExprCall,
    args: &[(bool, Expr)],
) -> syn::Result<(syn::Path, Option<TokenStream>)> {
    let rt = quote!(::mooncake_runtime::__private);
    let (wrt, mask) = match gradient_rule(call, args)? {
        (rule, Some(mask)) => (rule, mask),
        (_, None) => (rule_path(&call.func, "rrule_wrt")?, quote!(#rt::rev::Wrt::<{ u64::MAX }>,)),
    };
    let through_type = match &*call.func {
        Expr::Path(p) => {
            let n = p.path.segments.len();
            p.qself.is_some()
                || p.path.segments.iter().any(|s| !s.arguments.is_none())
                || p.path
                    .segments
                    .iter()
                    .take(n.saturating_sub(1))
                    .any(|s| s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()))
        }
        _ => true,
    };
    let rule = if through_type { wrt } else { rule_path(&call.func, "rrule_twin")? };
    Ok((rule, Some(mask)))
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
    let call_args: Vec<(bool, Expr)> = input.call.args.iter().map(constant).collect();
    let (rule, mask) = match gradient_rule(&input.call, &call_args) {
        Ok(r) => r,
        Err(e) => return e.to_compile_error(),
    };
    if let Some(cache) = &input.cache {
        return value_and_gradient_cached(&input.call, &call_args, &rule, mask, cache);
    }
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    // Names the expansion binds and reads, all with one span (an argument's span would put a
    // use in another hygiene context than the binding when the call comes from a macro).
    let (r, ybar_name) = (format_ident!("__r", span = site), format_ident!("__ybar", span = site));
    let y = format_ident!("__y", span = site);
    let mut lets = Vec::new();
    let mut args = Vec::new();
    let mut grads = Vec::new();
    let mut restores = Vec::new();
    for (i, (constant, arg)) in call_args.iter().enumerate() {
        let p = format_ident!("__p{}", i, span = site);
        let f = format_ident!("__f{}", i, span = site);
        let span = arg.span();
        let idx = syn::Index::from(i);
        let (grad, primal) = match arg {
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
                (quote_spanned!(span=> #rt::api::shadow_gradient(&*#m, &#f)), quote!(&*#m))
            }
            Expr::Reference(r) => {
                // The borrow taken once, so that a literal (`&[0.5, -0.5]`) is one value whose
                // type the rule's call fixes before its gradient is shaped.
                let inner = &r.expr;
                let m = format_ident!("__ref{}", i, span = site);
                let make = if *constant { quote!(constant_shadow) } else { quote!(zero_shadow) };
                lets.push(quote_spanned!(span=>
                    let #m = &#inner;
                    let #f = #rt::Primal::#make(#m);
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::CoDual::new(#m, ::core::clone::Clone::clone(&#f)); #rt::CoDual::new(__c.primal, __c.fdata) }));
                (quote_spanned!(span=> #rt::api::shadow_gradient(#m, &#f)), quote!(#m))
            }
            other => {
                let m = format_ident!("__m{}", i, span = site);
                lets.push(quote_spanned!(span=>
                    let #p = #other;
                    let #f = #rt::Primal::zero_fdata(&#p);
                    let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
                ));
                if !constant {
                    lets.push(quote_spanned!(span=> let #m = #rt::rev::primal_marker(&#p);));
                }
                args.push(quote_spanned!(span=> { let __c = #rt::rev::pass(&#p); #rt::CoDual::new(__c.primal, __c.fdata) }));
                (
                    quote_spanned!(span=> #rt::api::value_gradient(#m, &#f, #r.#idx)),
                    quote!(&#p.primal),
                )
            }
        };
        grads.push(shown_gradient(*constant, &grad, &primal));
    }
    let with_gradient = match &input.ybar {
        None => quote!(#rt::api::with_gradient(#y.primal, (#(#grads,)*))),
        Some(_) => quote!((#y.primal, (#(#grads,)*))),
    };
    let seed = match &input.ybar {
        None => quote!(
            let #ybar_name = #rt::api::seed_one(&#y.primal);
        ),
        Some(ybar) => {
            let seed = quote_spanned!(ybar.span()=> #rt::api::seed_cotangent(&#y, #ybar));
            quote!(let #ybar_name = #seed;)
        }
    };
    quote!({
        #(#lets)*
        let (#y, __pb) = #rule(#mask #(#args),*);
        #seed
        let #r = __pb(#ybar_name);
        let _ = &#r;
        #(#restores)*
        #with_gradient
    })
}

/// `value_and_gradient!(f(a, &b, &mut c), cache = &mut cache)`: the prepared form, whose
/// shadows, handles and gradients live in a `GradientCache` and are reused.
fn value_and_gradient_cached(
    call: &syn::ExprCall,
    call_args: &[(bool, Expr)],
    rule: &syn::Path,
    mask: Option<TokenStream>,
    cache: &Expr,
) -> TokenStream {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let func = &call.func;
    let name = quote!(#func).to_string().replace(' ', "");
    let n = call.args.len();
    let c = format_ident!("__cache", span = site);
    let r = format_ident!("__r", span = site);
    let mut lets = Vec::new();
    let mut args = Vec::new();
    let mut done = Vec::new();
    let mut grads = Vec::new();
    for (k, (constant, arg)) in call_args.iter().enumerate() {
        let p = format_ident!("__p{}", k, span = site);
        let f = format_ident!("__f{}", k, span = site);
        let span = arg.span();
        let idx = syn::Index::from(k);
        let (grad, primal) = match arg {
            Expr::Reference(r) if r.mutability.is_some() => {
                let inner = &r.expr;
                let m = format_ident!("__mut{}", k, span = site);
                lets.push(quote_spanned!(span=>
                    let #m = &mut #inner;
                    let (#p, #f) = #c.mut_handle(#k, &*#m);
                ));
                args.push(quote_spanned!(span=> #rt::CoDual::new(#p, #f)));
                done.push(quote_spanned!(span=> #c.mut_done(#k, &mut *#m);));
                (quote_spanned!(span=> #c.mut_gradient(#k, &*#m)), quote!(&*#m))
            }
            Expr::Reference(r) => {
                let inner = &r.expr;
                let m = format_ident!("__ref{}", k, span = site);
                let make = if *constant { quote!(ref_constant_shadow) } else { quote!(ref_shadow) };
                lets.push(quote_spanned!(span=>
                    let #m = &#inner;
                    let #f = #c.#make(#k, #m);
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::CoDual::new(#m, #f); #rt::CoDual::new(__c.primal, __c.fdata) }));
                if !constant {
                    done.push(quote_spanned!(span=> #c.ref_done(#k, #m);));
                }
                (quote_spanned!(span=> #c.ref_gradient(#k, #m)), quote!(#m))
            }
            other => {
                let mk = format_ident!("__m{}", k, span = site);
                lets.push(quote_spanned!(span=>
                    let #p = #other;
                    let #f = #rt::Primal::zero_fdata(&#p);
                    let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
                ));
                args.push(quote_spanned!(span=> { let __c = #rt::rev::pass(&#p); #rt::CoDual::new(__c.primal, __c.fdata) }));
                if !constant {
                    lets.push(quote_spanned!(span=> let #mk = #rt::rev::primal_marker(&#p);));
                    done.push(quote_spanned!(span=> #c.value_done(#k, #mk, &#f, #r.#idx);));
                }
                (quote_spanned!(span=> #c.value_gradient(#k, #mk)), quote!(&#p.primal))
            }
        };
        // No gradient for a constant (a `&mut` one is still restored).
        grads.push(shown_gradient(*constant, &grad, &primal));
    }
    quote!({
        let #c: &mut #rt::GradientCache = #cache;
        let #c = #c.begin(#name, #n);
        #(#lets)*
        let (__y, __pb) = #rule(#mask #(#args),*);
        let __ybar = #rt::api::seed_one(&__y.primal);
        let #r = __pb(__ybar);
        let _ = &#r;
        #(#done)*
        let #c: &#rt::GradientCache = #c;
        #rt::api::with_gradient(__y.primal, (#(#grads,)*))
    })
}
