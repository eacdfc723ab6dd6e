//! `test_rule!` and `check_rule!`: turn a call written as in ordinary code into a
//! `mooncake_runtime::test_utils::RuleTest` and its three closures (primal, frule, rrule).
//!
//! The macro decides structure only: which arguments are passed by value, by `&` or by `&mut`,
//! and which alias (the same expression behind `&` twice). Types are left to inference, and the
//! rules are called with `Dual::new(..)` / `CoDual::new(..)` re-wrapping so that the compiler's
//! coercions (`&Vec<f64>` to `&[f64]`) apply as in the primal call.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, ExprCall, Ident, Path, Token};

/// What the expansion does when a check fails.
pub(crate) enum OnFailure {
    /// `test_rule!`: panic with the failure's message.
    Panic,
    /// `check_rule!`: evaluate to the `Result`.
    Return,
}

const OPTIONS: &[&str] = &["frule", "rrule", "rtol", "atol", "dot_tol", "seed", "mode"];
const MAX_SLOTS: usize = 8;

struct Input {
    call: ExprCall,
    options: Vec<(Ident, Expr)>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        let call = match expr {
            Expr::Call(call) => call,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected a call of the primal function, such as `f(&x, 2.0)`; \
                     write a method `x.f(y)` as `Type::f(&x, y)`",
                ));
            }
        };
        let mut options = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value: Expr = input.parse()?;
            options.push((key, value));
        }
        Ok(Input { call, options })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Val,
    Ref,
    Mut,
    /// `a.view()` of an array the test owns (ndarray's read-only view): as `&a`, with the view
    /// passed where `&a` would be.
    View,
}

struct Arg {
    kind: Kind,
    slot: usize,
}

struct Slot {
    kind: Kind,
    init: Expr,
    name: String,
}

/// The tokens as a person would write them (`&mut x`, `f(&x, -1.0)`), for messages. Spans
/// cannot be joined on stable, so the text is rebuilt from the tokens: a space between words
/// and after commas, none elsewhere.
fn display(tokens: &impl quote::ToTokens) -> String {
    fn walk(ts: TokenStream, out: &mut String, prev_word: &mut bool) {
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::Brace => ("{ ", " }"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push_str(open);
                    *prev_word = false;
                    walk(g.stream(), out, prev_word);
                    out.push_str(close);
                    *prev_word = true;
                }
                proc_macro2::TokenTree::Ident(i) => {
                    if *prev_word {
                        out.push(' ');
                    }
                    out.push_str(&i.to_string());
                    *prev_word = true;
                }
                proc_macro2::TokenTree::Literal(l) => {
                    if *prev_word {
                        out.push(' ');
                    }
                    out.push_str(&l.to_string());
                    *prev_word = true;
                }
                proc_macro2::TokenTree::Punct(p) => {
                    match p.as_char() {
                        ',' => out.push_str(", "),
                        '=' if p.spacing() == proc_macro2::Spacing::Alone => out.push_str(" = "),
                        c => out.push(c),
                    }
                    *prev_word = false;
                }
            }
        }
    }
    let mut out = String::new();
    walk(tokens.to_token_stream(), &mut out, &mut false);
    out
}

fn suggestion(key: &str) -> Option<&'static str> {
    // A typo within two edits of an option gets a "did you mean".
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let sub = prev[j] + usize::from(ca != *cb);
                cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    OPTIONS.iter().copied().filter(|o| distance(key, o) <= 2).min_by_key(|o| distance(key, o))
}

fn rule_path(func: &Expr, suffix: &str) -> syn::Result<Path> {
    let Expr::Path(p) = func else {
        return Err(syn::Error::new(
            func.span(),
            "expected a path to the primal function, such as `f` or `module::f`",
        ));
    };
    let mut path = crate::api::unqualified(p);
    let Some(last) = path.segments.last_mut() else {
        return Err(syn::Error::new(func.span(), "expected a path to the primal function"));
    };
    last.ident = format_ident!("{}_{}", last.ident, suffix, span = last.ident.span());
    Ok(path)
}

/// A rule given as `frule = expr`, ready to be called: a path as it is, anything else in
/// parentheses (`frule = x as F` or a closure would otherwise swallow the call's arguments;
/// found by the fuzz test).
fn callee(rule: &Expr) -> TokenStream {
    match rule {
        Expr::Path(_) => quote!(#rule),
        other => quote!((#other)),
    }
}

pub(crate) fn expand(input: TokenStream, on_failure: OnFailure) -> TokenStream {
    match syn::parse2::<Input>(input).and_then(|input| generate(input, on_failure)) {
        Ok(tokens) => tokens,
        // In a block: several `compile_error!`s side by side are not one expression, and
        // `check_rule!` stands where an expression must (found by the fuzz test).
        Err(err) => {
            let errors = err.to_compile_error();
            quote!({ #errors })
        }
    }
}

fn generate(input: Input, on_failure: OnFailure) -> syn::Result<TokenStream> {
    let Input { call, options } = input;
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };

    // Options.
    let mut frule: Option<Expr> = None;
    let mut rrule: Option<Expr> = None;
    let mut config = Vec::new();
    let mut mode: Option<Ident> = None;
    let mut seen: Vec<String> = Vec::new();
    for (key, value) in options {
        let name = key.to_string();
        if seen.contains(&name) {
            push_error(syn::Error::new(key.span(), format!("`{name}` is given twice")));
            continue;
        }
        seen.push(name.clone());
        match name.as_str() {
            "frule" => frule = Some(value),
            "rrule" => rrule = Some(value),
            "rtol" | "atol" | "dot_tol" | "seed" => config.push(quote!(#key: #value)),
            "mode" => match &value {
                Expr::Path(p) if p.path.is_ident("forward") || p.path.is_ident("reverse") => {
                    mode = p.path.get_ident().cloned();
                }
                _ => push_error(syn::Error::new(
                    value.span(),
                    "expected `mode = forward` or `mode = reverse` (leave `mode` out to check both)",
                )),
            },
            other => {
                let hint = match suggestion(other) {
                    Some(s) => format!("; did you mean `{s}`?"),
                    None => String::new(),
                };
                push_error(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown option `{other}`: expected one of {}{hint}",
                        OPTIONS.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }

    // Arguments and slots.
    let mut slots: Vec<Slot> = Vec::new();
    let mut args: Vec<Arg> = Vec::new();
    for arg in &call.args {
        let name = display(arg);
        let (kind, inner) = match arg {
            Expr::Reference(r) if r.mutability.is_some() => (Kind::Mut, (*r.expr).clone()),
            Expr::Reference(r) => (Kind::Ref, (*r.expr).clone()),
            Expr::MethodCall(m) if m.method == "view" && m.args.is_empty() => {
                (Kind::View, (*m.receiver).clone())
            }
            other => (Kind::Val, other.clone()),
        };
        let key = quote!(#inner).to_string();
        let shared = matches!(kind, Kind::Ref | Kind::View)
            .then(|| {
                slots.iter().position(|s| {
                    let init = &s.init;
                    s.kind == kind && quote!(#init).to_string() == key
                })
            })
            .flatten();
        let slot = match shared {
            Some(k) => k,
            None => {
                slots.push(Slot { kind, init: inner, name });
                slots.len() - 1
            }
        };
        args.push(Arg { kind, slot });
    }
    if slots.is_empty() {
        push_error(syn::Error::new(
            call.span(),
            "the call has no arguments: there is nothing to differentiate",
        ));
    }
    if slots.len() > MAX_SLOTS {
        push_error(syn::Error::new(
            call.args.span(),
            format!(
                "test_rule! supports at most {MAX_SLOTS} distinct arguments; group some into a \
                 tuple or a `#[derive(Tangent)]` struct"
            ),
        ));
    }
    let only = |m: &str| mode.as_ref().is_some_and(|mode| mode == m);
    // A call that names no function is reported once, not once per rule.
    let mut no_path = false;
    let frule = match frule {
        _ if only("reverse") => None,
        Some(f) => Some(callee(&f)),
        None => match rule_path(&call.func, "frule") {
            Ok(p) => Some(quote!(#p)),
            Err(e) => {
                no_path = true;
                push_error(e);
                None
            }
        },
    };
    let rrule = match rrule {
        _ if only("forward") => None,
        Some(r) => Some(callee(&r)),
        None if no_path => None,
        None => match rule_path(&call.func, "rrule") {
            Ok(p) => Some(quote!(#p)),
            Err(e) => {
                push_error(e);
                None
            }
        },
    };
    if let Some(e) = errors {
        return Err(e);
    }

    let site = Span::mixed_site();
    let rt = quote!(::mooncake_runtime::__private);
    let tu = quote!(#rt::test_utils);
    let sup = quote!(#tu::support);
    let s = Ident::new("__s", site);
    let t = Ident::new("__t", site);
    let h = Ident::new("__h", site);
    let sh = Ident::new("__sh", site);
    let fd = Ident::new("__fd", site);
    let g = Ident::new("__g", site);
    let index = |k: usize| syn::Index::from(k);

    let inits = slots.iter().map(|slot| {
        let init = &slot.init;
        match (slot.kind, init) {
            // `&*x` of a slice or `str` passed by name, `&v[a..b]`: the test owns a copy.
            (Kind::Ref, Expr::Unary(u)) if matches!(u.op, syn::UnOp::Deref(_)) => {
                quote_spanned!(init.span()=> ::std::borrow::ToOwned::to_owned(&(#init)))
            }
            (Kind::Ref, Expr::Index(ix)) if matches!(&*ix.index, Expr::Range(_)) => {
                quote_spanned!(init.span()=> ::std::borrow::ToOwned::to_owned(&(#init)))
            }
            (Kind::Val, _) => quote_spanned!(init.span()=> {
                #[allow(unused_imports)]
                use #sup::{RefSlotCheck as _, ValueSlot as _};
                (&#sup::SlotArg(&(#init))).slot()
            }),
            _ => quote_spanned!(init.span()=> ::core::clone::Clone::clone(&(#init))),
        }
    });
    let kinds = slots.iter().map(|slot| match slot.kind {
        Kind::Val => quote!(#tu::ArgKind::Val),
        Kind::Ref | Kind::View => quote!(#tu::ArgKind::Ref),
        Kind::Mut => quote!(#tu::ArgKind::Mut),
    });
    let names = slots.iter().map(|slot| &slot.name);
    let call_text = display(&call);

    let func = &call.func;
    let primal_args = args.iter().map(|a| {
        let k = index(a.slot);
        match a.kind {
            Kind::Val => quote!(::core::clone::Clone::clone(&#s.#k)),
            Kind::Ref => quote!(&#s.#k),
            Kind::Mut => quote!(&mut #s.#k),
            Kind::View => quote!(#s.#k.view()),
        }
    });
    let primal = quote!(|#s| #func(#(#primal_args),*));

    let frule_closure = frule.map(|frule| {
        let fargs = args.iter().map(|a| {
            let k = index(a.slot);
            let make = match a.kind {
                Kind::Val => quote!({
                    #[allow(unused_imports)]
                    use #sup::{CloneValDual as _, RefValDual as _};
                    (&#sup::ValArg(&#s.#k, &#t.#k)).val_dual()
                }),
                Kind::Ref => quote!(#sup::dual_ref(&#s.#k, &#t.#k)),
                Kind::Mut => quote!(#sup::dual_mut(&mut #s.#k, &mut #t.#k)),
                Kind::View => {
                    quote!(#rt::Dual::new(#s.#k.view(), ::core::clone::Clone::clone(&#t.#k)))
                }
            };
            quote!({ let __d = #make; #rt::Dual::new(__d.primal, __d.tangent) })
        });
        quote!(|#s, #t| #frule(#(#fargs),*))
    });

    let rrule_closure = rrule.map(|rrule| {
        let mut captures = Vec::new();
        let mut accumulate = Vec::new();
        let rargs: Vec<TokenStream> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let k = index(a.slot);
                let make = match a.kind {
                    Kind::Val => {
                        let m = format_ident!("__m{}", i, span = site);
                        let f = format_ident!("__f{}", i, span = site);
                        let ri = index(i);
                        captures.push(quote!(
                            let #m = #sup::marker(&#s.#k);
                            let #f = ::core::clone::Clone::clone(&#fd.#k);
                        ));
                        accumulate
                            .push(quote!(#sup::accumulate_rdata(#m, &mut #g.#k, &#f, __r.#ri);));
                        quote!(#sup::codual_val(&#s.#k, &#fd.#k))
                    }
                    Kind::Ref => quote!(#sup::codual_ref(&#s.#k, &#sh.#k)),
                    Kind::Mut => quote!(#sup::codual_mut(&#s.#k, &#h.#k, &#sh.#k)),
                    Kind::View => quote!(#rt::CoDual::new(
                        #s.#k.view(),
                        ::core::clone::Clone::clone(&#sh.#k)
                    )),
                };
                quote!({ let __c = #make; #rt::CoDual::new(__c.primal, __c.fdata) })
            })
            .collect();
        let body = if accumulate.is_empty() {
            quote!(let _ = __pb(__ybar); let _ = #g;)
        } else {
            quote!(let __r = __pb(__ybar); #(#accumulate)*)
        };
        quote!(|#s, #h, #sh, #fd| {
            let (__y, __pb) = #rrule(#(#rargs),*);
            #(#captures)*
            (__y, #sup::pullback_for(#s, move |__ybar, #g| { #body }))
        })
    });

    let run = match (frule_closure, rrule_closure) {
        (Some(f), Some(r)) => quote!(__test.run(#primal, #f, #r)),
        (Some(f), None) => quote!(__test.run_forward(#primal, #f)),
        (None, Some(r)) => quote!(__test.run_reverse(#primal, #r)),
        (None, None) => {
            return Err(syn::Error::new(call.span(), "no rule to check"));
        }
    };
    let finish = match on_failure {
        OnFailure::Panic => quote!(if let ::core::result::Result::Err(__e) = __result {
            ::core::panic!("{}", __e);
        }),
        OnFailure::Return => quote!(__result),
    };

    Ok(quote!({
        let __test = #tu::RuleTest::new(
            #call_text,
            (#(#inits,)*),
            &[#(#kinds),*],
            &[#(#names),*],
        )
        .with_config(#tu::Config { #(#config,)* ..::core::default::Default::default() });
        let __result = #run;
        #finish
    }))
}
