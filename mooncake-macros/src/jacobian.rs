//! `value_and_jacobian!(f(args..))` and `value_and_jacobian!(f(args..), mode = forward |
//! reverse | auto)`.
//!
//! The expansion binds each argument once, then builds two closures over the call: a forward
//! pass (`NAME_frule`, every argument's tangent zero but one basis component) and a reverse
//! pass (`NAME_rrule` and its pullback, seeded with the basis cotangent of one output
//! component, every differentiable argument's gradient appended to its row). It hands them to
//! a driver in `mooncake_runtime::jacobian` that runs as many as the chosen mode needs; a mode
//! asked for builds only its own closure. As in the other API macros, the macro decides
//! structure only and rustc the types.

use crate::api::{constant, gradient_rule, parse_call, rule_path};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, Token};

/// Which passes the Jacobian is built from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    Forward,
    Reverse,
}

struct JacobianInput {
    call: syn::ExprCall,
    mode: Mode,
    /// `value_and_gradient_forward!`: a scalar result's gradient, shaped per argument as
    /// `value_and_gradient!` shapes it, with its `chunk = N` if given.
    gradient: Option<Option<Expr>>,
}

const GRADIENT_USAGE: &str = "expected `value_and_gradient_forward!(f(args..))` or \
                              `value_and_gradient_forward!(f(args..), chunk = N)`";

/// The input of `value_and_gradient_forward!`.
fn parse_gradient(input: ParseStream<'_>) -> syn::Result<JacobianInput> {
    let call = parse_call(input)?;
    let mut chunk = None;
    if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
        let key: syn::Ident =
            input.parse().map_err(|e| syn::Error::new(e.span(), GRADIENT_USAGE))?;
        if key != "chunk" {
            return Err(syn::Error::new(
                key.span(),
                format!("unknown option `{key}`: {GRADIENT_USAGE}"),
            ));
        }
        input.parse::<Token![=]>().map_err(|e| syn::Error::new(e.span(), GRADIENT_USAGE))?;
        let n = input.parse::<Expr>()?;
        if let Some(at) = runtime_value(&n) {
            return Err(syn::Error::new_spanned(
                at,
                "`chunk = N` takes a constant (a literal or a `const`): the number of directions \
                 a pass carries is the length of the tangents' arrays, fixed at compile time",
            ));
        }
        chunk = Some(n);
        let _ = input.parse::<Option<Token![,]>>()?;
    }
    if !input.is_empty() {
        return Err(input.error(GRADIENT_USAGE));
    }
    Ok(JacobianInput { call, mode: Mode::Forward, gradient: Some(chunk) })
}

/// The part of a `chunk = N` expression that reads a value known only at run time, as far as
/// syntax tells: a variable (a path in lower case), a field or a method call.
fn runtime_value(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Path(p) => {
            let last = p.path.segments.last()?.ident.to_string();
            last.chars().any(|c| c.is_lowercase()).then_some(e)
        }
        Expr::Field(_) | Expr::MethodCall(_) | Expr::Index(_) => Some(e),
        Expr::Binary(b) => runtime_value(&b.left).or_else(|| runtime_value(&b.right)),
        Expr::Paren(p) => runtime_value(&p.expr),
        Expr::Group(g) => runtime_value(&g.expr),
        _ => None,
    }
}

/// The expansion of `value_and_gradient_forward!`.
pub(crate) fn value_and_gradient_forward(input: TokenStream) -> TokenStream {
    match syn::parse::Parser::parse2(parse_gradient, input).and_then(|i| expand(&i)) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

const USAGE: &str = "expected `value_and_jacobian!(f(args..))` or `value_and_jacobian!(f(args..), \
                     mode = forward)` (or `mode = reverse`, `mode = auto`)";

impl Parse for JacobianInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let call = parse_call(input)?;
        let mut mode = Mode::Auto;
        if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let key: syn::Ident = input.parse().map_err(|e| syn::Error::new(e.span(), USAGE))?;
            if key != "mode" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown option `{key}`: {USAGE}"),
                ));
            }
            input.parse::<Token![=]>().map_err(|e| syn::Error::new(e.span(), USAGE))?;
            let value: syn::Ident = input.parse().map_err(|e| {
                syn::Error::new(e.span(), "expected `forward`, `reverse` or `auto` after `mode =`")
            })?;
            mode = match value.to_string().as_str() {
                "forward" => Mode::Forward,
                "reverse" => Mode::Reverse,
                "auto" => Mode::Auto,
                other => {
                    return Err(syn::Error::new(
                        value.span(),
                        format!(
                            "unknown mode `{other}`: the modes are `forward` (one forward pass \
                             per input component), `reverse` (one reverse pass per output \
                             component) and `auto` (the default: forward when there are no \
                             more input components than output ones)"
                        ),
                    ));
                }
            };
            let _ = input.parse::<Option<Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(USAGE));
        }
        Ok(JacobianInput { call, mode, gradient: None })
    }
}

/// The expansion of `value_and_jacobian!`.
pub(crate) fn value_and_jacobian(input: TokenStream) -> TokenStream {
    match syn::parse2::<JacobianInput>(input).and_then(|i| expand(&i)) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

fn expand(input: &JacobianInput) -> syn::Result<TokenStream> {
    let rt = quote!(::mooncake_runtime::__private);
    let site = proc_macro2::Span::mixed_site();
    let call = &input.call;
    let func = &call.func;
    let name = quote!(#func).to_string().replace(' ', "");
    let args: Vec<(bool, Expr)> = call.args.iter().map(constant).collect();
    for (_, arg) in &args {
        if let Expr::Reference(r) = arg
            && r.mutability.is_some()
        {
            let mac = if input.gradient.is_some() {
                "value_and_gradient_forward"
            } else {
                "value_and_jacobian"
            };
            return Err(syn::Error::new_spanned(
                arg,
                format!(
                    "`{mac}!` does not take `&mut` arguments: a {} is that of the result alone; \
                     pass the value as `&x` (or make the function return what it writes)",
                    if input.gradient.is_some() { "gradient" } else { "Jacobian" }
                ),
            ));
        }
    }
    let (dir, i_out, rows) = (
        format_ident!("__dir", span = site),
        format_ident!("__i", span = site),
        format_ident!("__rows", span = site),
    );
    let (y, r) = (format_ident!("__y", span = site), format_ident!("__r", span = site));
    let blocks = format_ident!("__blocks", span = site);

    // Each argument bound once, the widths of the differentiable ones.
    let mut binds = Vec::new();
    let mut dims = Vec::new();
    // Forward pass: the tangents and the duals.
    let mut f_lets = Vec::new();
    let mut f_args = Vec::new();
    // Reverse pass: the fdata, the codual arguments and each block's row.
    let mut r_lets = Vec::new();
    let mut r_args = Vec::new();
    let mut r_rows = Vec::new();
    // The blocks given to the user.
    let mut outs = Vec::new();
    let mut block = 0usize;
    for (k, (is_const, arg)) in args.iter().enumerate() {
        let span = arg.span();
        let a = format_ident!("__a{}", k, span = site);
        let t = format_ident!("__t{}", k, span = site);
        let p = format_ident!("__p{}", k, span = site);
        let f = format_ident!("__f{}", k, span = site);
        let m = format_ident!("__m{}", k, span = site);
        let idx = syn::Index::from(k);
        let by_ref = matches!(arg, Expr::Reference(_));
        binds.push(quote_spanned!(span=> let #a = #arg;));
        let b = block;
        if !is_const {
            dims.push(quote_spanned!(span=> #rt::jac::width(&#a)));
            block += 1;
        }
        // Forward: a constant's tangent is zero (no block matches `usize::MAX`).
        let seed_block = if *is_const { quote!(usize::MAX) } else { quote!(#b) };
        f_lets.push(quote_spanned!(span=>
            let mut #t = ::core::option::Option::Some(#rt::jac::seed(&#a, #dir, #seed_block));
        ));
        f_args.push(quote_spanned!(span=> {
            #[allow(unused_imports)]
            use #rt::api::{RefArgDual as _, ValueArgDual as _};
            let __d = (&#rt::api::ArgOf::new(::core::clone::Clone::clone(&#a))).arg_dual(&mut #t);
            #rt::Dual::new(__d.primal, __d.tangent)
        }));
        // Reverse: as `value_and_gradient!` passes the argument.
        let grad = if by_ref {
            r_lets.push(quote_spanned!(span=> let #f = #rt::Primal::zero_shadow(#a);));
            r_args.push(quote_spanned!(span=> {
                let __c = #rt::CoDual::new(#a, ::core::clone::Clone::clone(&#f));
                #rt::CoDual::new(__c.primal, __c.fdata)
            }));
            quote_spanned!(span=> #rt::api::shadow_gradient(#a, &#f))
        } else {
            r_lets.push(quote_spanned!(span=>
                let #p = ::core::clone::Clone::clone(&#a);
                let #f = #rt::Primal::zero_fdata(&#p);
                let #p = #rt::CoDual::new(#p, ::core::clone::Clone::clone(&#f));
            ));
            if !is_const {
                r_lets.push(quote_spanned!(span=> let #m = #rt::rev::primal_marker(&#p);));
            }
            r_args.push(quote_spanned!(span=> {
                let __c = #rt::rev::pass(&#p);
                #rt::CoDual::new(__c.primal, __c.fdata)
            }));
            quote_spanned!(span=> #rt::api::value_gradient(#m, &#f, #r.#idx))
        };
        if *is_const {
            outs.push(quote!(#rt::NoTangent));
        } else {
            r_rows.push(quote_spanned!(span=> #rt::jac::push_row(&mut #rows[#b], &#grad);));
            let block = quote_spanned!(span=> {
                #[allow(unused_imports)]
                use #rt::jac::{BlockAsIs as _, BlockNoTangent as _};
                (&#rt::jac::Block::new(
                    #rt::jac::next_block(&mut #blocks),
                    #rt::jac::primal_marker(&#a),
                ))
                    .block()
            });
            // A gradient (`value_and_gradient_forward!`): the block's row as the tangent.
            outs.push(if input.gradient.is_some() {
                quote_spanned!(span=> #rt::jac::gradient(#block, &#a))
            } else {
                block
            });
        }
    }

    let fwd = if input.mode == Mode::Reverse {
        quote!()
    } else {
        let frule = rule_path(func, "frule")?;
        quote!(
            let __fwd = |#dir: ::core::option::Option<(usize, usize)>| {
                #(#f_lets)*
                let __d = #frule(#(#f_args),*);
                (__d.primal, __d.tangent)
            };
        )
    };
    let rev = if input.mode == Mode::Forward {
        quote!()
    } else {
        let (rrule, mask) = gradient_rule(call, &args)?;
        quote!(
            let __rev = |#i_out: usize, #rows: &mut [::std::vec::Vec<f64>]| {
                #(#r_lets)*
                let (#y, __pb) = #rrule(#mask #(#r_args),*);
                match #rt::jac::unit_cotangent(&#y.primal, #i_out) {
                    ::core::option::Option::Some(__ybar) => {
                        let #r = __pb(#rt::api::seed_cotangent(&#y, __ybar));
                        let _ = &#r;
                        let _ = &#rows;
                        #(#r_rows)*
                        (#y.primal, true)
                    }
                    ::core::option::Option::None => (#y.primal, false),
                }
            };
        )
    };
    // `chunk = N`: the batched entry `NAME__lanes` (a stub where the function has none), `N`
    // directions per pass; `N` is a constant, the lanes' length.
    let n_const = format_ident!("__N", span = site);
    let path = match &input.gradient {
        Some(Some(_)) => lanes_path(func),
        _ => None,
    };
    let chunk = match &input.gradient {
        Some(Some(n)) if path.is_some() => quote_spanned!(n.span()=>
            const #n_const: usize = #n;
            let _: usize = #rt::jac::check_chunk(#name, #n_const);
        ),
        Some(Some(n)) => {
            quote_spanned!(n.span()=> let _: usize = #rt::jac::check_chunk(#name, #n);)
        }
        _ => quote!(),
    };
    let (lanes, drive) = match path {
        Some(path) => {
            let consts = args.iter().map(|(c, _)| c);
            let values = (0..args.len()).map(|k| {
                let a = format_ident!("__a{}", k, span = site);
                // Bound first, so that the call coerces it (`&Vec<f64>` to `&[f64]`).
                quote!({ let __v = ::core::clone::Clone::clone(&#a); __v })
            });
            (
                quote!(
                    let __offsets = #rt::jac::lanes_offsets(&__dims, [#(#consts),*]);
                    let __lanes = |__first: usize| #path(#(#values,)* __first, &__offsets);
                ),
                quote!(#rt::jac::forward_gradient_lanes::<#n_const, _, _, _>(
                    #name, &__dims, __fwd, __lanes
                )),
            )
        }
        None => (
            quote!(),
            match input.mode {
                _ if input.gradient.is_some() => {
                    quote!(#rt::jac::forward_gradient(#name, &__dims, __fwd))
                }
                Mode::Auto => quote!(#rt::jac::auto(#name, &__dims, __fwd, __rev)),
                Mode::Forward => quote!(#rt::jac::forward(#name, &__dims, __fwd)),
                Mode::Reverse => quote!(#rt::jac::reverse(#name, &__dims, __rev)),
            },
        ),
    };
    Ok(quote!({
        #chunk
        #(#binds)*
        let __dims: [usize; #block] = [#(#dims),*];
        #fwd
        #rev
        #lanes
        let (__value, #blocks) = #drive;
        #[allow(unused_mut, unused_variables)]
        let mut #blocks = ::core::iter::IntoIterator::into_iter(#blocks);
        (__value, (#(#outs,)*))
    }))
}

/// `m::f` to `m::f__lanes`, the batched entry `#[differentiable]` emits beside a free function
/// (or its stub); `None` for a path that names an associated function (`Type::f`, `Self::f`,
/// read by the capital letter of the segment before the last) or gives generic arguments,
/// which run one direction per pass.
fn lanes_path(func: &Expr) -> Option<syn::Path> {
    let Expr::Path(p) = func else { return None };
    let mut path = p.path.clone();
    let n = path.segments.len();
    let typed = path.segments.iter().take(n.saturating_sub(1)).any(|s| {
        s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()) || !s.arguments.is_none()
    });
    let last = path.segments.last_mut()?;
    if typed || p.qself.is_some() || !last.arguments.is_none() {
        return None;
    }
    last.ident = format_ident!("{}__lanes", last.ident, span = last.ident.span());
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::value_and_jacobian;
    use proc_macro2::{TokenStream, TokenTree};

    /// Expands `input`: never a panic, always one expression (a block, or a `compile_error!`).
    fn expands_to_an_expression(input: TokenStream) -> TokenStream {
        let text = input.to_string();
        let out = std::panic::catch_unwind(|| value_and_jacobian(input))
            .unwrap_or_else(|_| panic!("value_and_jacobian!({text}) panicked"));
        if let Err(e) = syn::parse2::<syn::Expr>(out.clone()) {
            panic!(
                "value_and_jacobian!({text}) expanded to something that is not one expression: {e}"
            );
        }
        out
    }

    fn is_error(out: &TokenStream) -> bool {
        out.to_string().contains("compile_error")
    }

    #[test]
    fn good_input_expands_without_errors() {
        for text in [
            "f(&x)",
            "f(&x, 2.0, n)",
            "f(x.clone(), Const(&y), Const(s))",
            "m::f::<f64>(&x[..],)",
            "f(&x), mode = forward",
            "f(&x), mode = reverse,",
            "f(&x), mode = auto",
            "f()",
        ] {
            let out = expands_to_an_expression(text.parse().unwrap());
            assert!(!is_error(&out), "{text}: {out}");
        }
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        for text in [
            "",
            "f",
            "f(&mut x)",
            "f(Const(&mut x))",
            "x.f(y)",
            "(f)(x)",
            "f(x), mode",
            "f(x), mode =",
            "f(x), mode = 3",
            "f(x), mode = sideways",
            "f(x), cache = &mut c",
            "f(x), mode = forward mode = reverse",
            "f(x) g(y)",
            ", mode = forward",
        ] {
            let out = expands_to_an_expression(text.parse().unwrap());
            assert!(is_error(&out), "{text}: {out}");
        }
    }

    /// Every prefix of some valid inputs, and each with one token left out: errors or
    /// expansions, never panics.
    #[test]
    fn truncated_and_mutilated_input_never_panics() {
        for text in ["f(&x, Const(&y), 2.0), mode = reverse,", "a::b(x, &y[..]), mode = forward"] {
            let tokens: Vec<TokenTree> = text.parse::<TokenStream>().unwrap().into_iter().collect();
            for k in 0..=tokens.len() {
                expands_to_an_expression(tokens[..k].iter().cloned().collect());
                if k < tokens.len() {
                    let mut left_out = tokens.clone();
                    left_out.remove(k);
                    expands_to_an_expression(left_out.into_iter().collect());
                }
            }
        }
    }
}
