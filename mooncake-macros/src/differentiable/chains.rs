//! Iterator chains in value position (`x.iter().map(|v| v * v).sum::<f64>()`), lowered as the
//! `for` loop a person would write for them, so that they cost what the loop costs and get the
//! loop's derivative in both modes.
//!
//! A chain is a *source* the `for` loop lowering plans (a range, `x.iter()`, `x.iter_mut()`,
//! with `.zip(..)`, `.enumerate()`, `.rev()`, `.step_by(k)`), then *element adaptors* applied to
//! each item in turn (`map`, `filter`, `copied`, `cloned`), then a *consumer* (`sum`,
//! `product`, `count`, `fold`, `for_each`, `collect::<Vec<_>>()`). The chain becomes
//!
//! ```text
//! { let mut acc = INIT; for item in SOURCE { ADAPTORS; acc = STEP(acc, item); } acc }
//! ```
//!
//! with each closure's parameters bound by `let` to the item and its body inlined (a closure
//! passed to an adaptor sees the variables around the chain, as the loop does). `x.into_iter()`
//! of a buffer of numbers reads as `x.iter().copied()`. What is outside this shape is refused
//! with a message naming the adaptor.

use super::lower::Lower;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// What a chain ends in.
enum Consumer {
    Sum(Option<syn::Type>),
    Product(Option<syn::Type>),
    Count,
    Fold(Expr, Expr),
    ForEach(Expr),
    Collect,
}

/// The element adaptors, from the source outwards.
enum Adaptor {
    Map(Expr),
    Filter(Expr),
    Copied,
}

/// Methods that end a chain (their receiver is an iterator).
pub(super) const CONSUMERS: &[&str] = &["sum", "product", "count", "fold", "for_each", "collect"];

const MESSAGE: &str = "supported iterator chains: a source (a range, `x.iter()`, `x.iter_mut()`, \
     `x.into_iter()`, with `.zip(..)`, `.enumerate()`, `.rev()`, `.step_by(k)`), then `.map(..)`, \
     `.filter(..)`, `.copied()`, `.cloned()`, ending in `.sum()`, `.product()`, `.count()`, \
     `.fold(..)`, `.for_each(..)` or `.collect::<Vec<_>>()`; write anything else as a `for` loop";

/// Whether `m` ends an iterator chain that [`Lower::lower_chain`] lowers (a consumer whose
/// receiver is an iterator).
pub(super) fn ends_chain(m: &syn::ExprMethodCall) -> bool {
    CONSUMERS.contains(&m.method.to_string().as_str()) && is_iterator(&m.receiver)
}

impl Lower<'_> {
    /// The lowering of `m` if it ends an iterator chain that is not `x.iter().sum()` (which has
    /// a rule of its own); `None` if `m` is not a consumer of an iterator.
    pub(super) fn lower_chain(&mut self, m: &syn::ExprMethodCall) -> Option<super::ir::Operand> {
        if !ends_chain(m) {
            return None;
        }
        let name = m.method.to_string();
        let span = m.method.span();
        let ty = m.turbofish.as_ref().and_then(|t| match t.args.first() {
            Some(syn::GenericArgument::Type(ty)) => Some(ty.clone()),
            _ => None,
        });
        let consumer = match (name.as_str(), m.args.len()) {
            ("sum", 0) => Consumer::Sum(ty),
            ("product", 0) => Consumer::Product(ty),
            ("count", 0) => Consumer::Count,
            ("fold", 2) => Consumer::Fold(m.args[0].clone(), m.args[1].clone()),
            ("for_each", 1) => Consumer::ForEach(m.args[0].clone()),
            ("collect", 0) => Consumer::Collect,
            _ => {
                return Some(self.refuse_chain(&m.method, MESSAGE));
            }
        };
        // The adaptors, outermost first, down to the source.
        let mut adaptors = Vec::new();
        let mut source: &Expr = &m.receiver;
        loop {
            let Expr::MethodCall(a) = strip(source) else { break };
            let adaptor = match (a.method.to_string().as_str(), a.args.len()) {
                ("map", 1) => Adaptor::Map(a.args[0].clone()),
                ("filter", 1) => Adaptor::Filter(a.args[0].clone()),
                ("copied" | "cloned", 0) => Adaptor::Copied,
                _ => break,
            };
            adaptors.push(adaptor);
            source = &a.receiver;
        }
        adaptors.reverse();
        // The source: what a `for` loop plans; `x.into_iter()` is `x.iter().copied()`.
        let mut by_ref = source_by_ref(source);
        let source_tokens = match strip(source) {
            Expr::MethodCall(s) if s.method == "into_iter" && s.args.is_empty() => {
                let r = &s.receiver;
                adaptors.insert(0, Adaptor::Copied);
                by_ref = true;
                quote_spanned!(s.method.span()=> #r.iter())
            }
            other => quote!(#other),
        };
        if let Some(bad) = unplannable(source) {
            return Some(self.refuse_chain(bad, MESSAGE));
        }
        let e = syn::Ident::new("__mooncake_item", Span::mixed_site());
        let acc = syn::Ident::new("__mooncake_acc", Span::mixed_site());
        // The first closure to take the raw item binds its pattern in the loop's head (`for (a,
        // b) in x.iter().zip(y.iter())`), as a written loop would, rather than through a tuple.
        let takes_item = |f: &Expr, n: usize| match f {
            Expr::Closure(c) if c.inputs.len() == n => {
                let p = &c.inputs[n - 1];
                (!matches!(p, Pat::Reference(_))).then(|| p.clone())
            }
            _ => None,
        };
        let head = match (adaptors.first(), &consumer) {
            (Some(Adaptor::Map(f)), _) => takes_item(f, 1),
            (None, Consumer::ForEach(f)) => takes_item(f, 1),
            (None, Consumer::Fold(_, f)) => takes_item(f, 2),
            _ => None,
        };
        let mut item_arg = match head {
            Some(_) => None,
            None => Some(quote!(#e)),
        };
        let head = match head {
            Some(p) => quote!(#p),
            None => quote!(#e),
        };
        let mut body = TokenStream::new();
        for a in adaptors {
            match a {
                Adaptor::Copied => {
                    if by_ref {
                        body.extend(quote_spanned!(span=> let #e = *#e;));
                    }
                    by_ref = false;
                }
                Adaptor::Map(f) => {
                    let call = match self.apply(&f, &[item_arg.take()], by_ref) {
                        Ok(call) => call,
                        Err(()) => return Some(super::lower::unit()),
                    };
                    body.extend(quote_spanned!(span=> let #e = #call;));
                    by_ref = false;
                    item_arg = Some(quote!(#e));
                }
                Adaptor::Filter(p) => {
                    // The predicate takes a reference to the item: a pattern `|&v|` binds the
                    // item itself, any other the item's reference.
                    let test = match &p {
                        Expr::Closure(c) if c.inputs.len() == 1 => match &c.inputs[0] {
                            Pat::Reference(r) => {
                                let inner = Expr::Closure(syn::ExprClosure {
                                    inputs: std::iter::once((*r.pat).clone()).collect(),
                                    ..c.clone()
                                });
                                self.apply(&inner, &[Some(quote!(#e))], by_ref)
                            }
                            _ => self.apply(&p, &[Some(quote!(&#e))], false),
                        },
                        _ => self.apply(&p, &[Some(quote!(&#e))], false),
                    };
                    let Ok(test) = test else { return Some(super::lower::unit()) };
                    body.extend(quote_spanned!(span=> if !(#test) { continue; }));
                }
            }
        }
        let item = if by_ref { quote_spanned!(span=> *#e) } else { quote!(#e) };
        let (init, step) = match consumer {
            Consumer::Sum(ty) => {
                (zero_or_one(ty.as_ref(), false, span), quote_spanned!(span=> #acc = #acc + #item;))
            }
            Consumer::Product(ty) => {
                (zero_or_one(ty.as_ref(), true, span), quote_spanned!(span=> #acc = #acc * #item;))
            }
            Consumer::Count => {
                (quote_spanned!(span=> 0usize), quote_spanned!(span=> #acc = #acc + 1;))
            }
            Consumer::Collect => {
                (quote_spanned!(span=> Vec::new()), quote_spanned!(span=> #acc.push(#item);))
            }
            Consumer::Fold(init, f) => {
                let Ok(call) = self.apply(&f, &[Some(quote!(#acc)), item_arg.take()], by_ref)
                else {
                    return Some(super::lower::unit());
                };
                (quote!(#init), quote_spanned!(span=> #acc = #call;))
            }
            Consumer::ForEach(f) => {
                let Ok(call) = self.apply(&f, &[item_arg.take()], by_ref) else {
                    return Some(super::lower::unit());
                };
                let tokens = quote_spanned!(span=> {
                    for #head in #source_tokens { #body #call; }
                });
                return Some(self.lower_tokens(tokens, m));
            }
        };
        let tokens = quote_spanned!(span=> {
            let mut #acc = #init;
            for #head in #source_tokens { #body #step }
            #acc
        });
        Some(self.lower_tokens(tokens, m))
    }

    /// The expression `f(args..)` for a closure (its parameters bound by `let`, its body
    /// inlined) or a path to a function (`f64::sin`, a `#[differentiable]` function). The last
    /// argument is the item, a reference when `by_ref` (dereferenced for a path, which takes
    /// the number).
    fn apply(
        &mut self,
        f: &Expr,
        args: &[Option<TokenStream>],
        by_ref: bool,
    ) -> Result<TokenStream, ()> {
        match f {
            Expr::Closure(c) => {
                if c.inputs.len() != args.len() {
                    self.refuse_chain(
                        &c.inputs,
                        &format!("this closure should take {} argument(s) here", args.len()),
                    );
                    return Err(());
                }
                if let Some(bad) = escapes(&c.body) {
                    self.refuse_chain(
                        bad,
                        "`return` and `?` in a closure passed to an iterator adaptor are not \
                         supported; compute the value and return it after the chain",
                    );
                    return Err(());
                }
                let lets = c.inputs.iter().zip(args).map(|(p, a)| match (p, a) {
                    // Bound by the loop's head already.
                    (_, None) => quote!(),
                    // `|&v|` of a reference item: the number.
                    (Pat::Reference(r), Some(a)) => {
                        let inner = &r.pat;
                        quote_spanned!(p.span()=> let #inner = *#a;)
                    }
                    (p, Some(a)) => quote_spanned!(p.span()=> let #p = #a;),
                });
                let body = &c.body;
                Ok(quote_spanned!(c.body.span()=> { #(#lets)* #body }))
            }
            Expr::Path(p) => {
                let mut args: Vec<TokenStream> = args.iter().flatten().cloned().collect();
                if by_ref && let Some(last) = args.last_mut() {
                    *last = quote!(*#last);
                }
                Ok(quote_spanned!(p.span()=> #p(#(#args),*)))
            }
            other => {
                self.refuse_chain(
                    other,
                    "pass a closure (`|v| ..`) or a function's path (`f64::sin`) to an iterator \
                     adaptor",
                );
                Err(())
            }
        }
    }

    fn lower_tokens(
        &mut self,
        tokens: TokenStream,
        at: &syn::ExprMethodCall,
    ) -> super::ir::Operand {
        match syn::parse2::<Expr>(tokens) {
            Ok(e) => self.lower_expr(&e),
            Err(_) => self.refuse_chain(at, MESSAGE),
        }
    }

    fn refuse_chain(&mut self, tokens: impl quote::ToTokens, message: &str) -> super::ir::Operand {
        self.refuse(tokens, message)
    }
}

/// `e` without parentheses around it.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        other => other,
    }
}

/// Whether `e` is an iterator the chain lowering knows: a range or a method chain whose
/// innermost call makes an iterator (`iter`, `iter_mut`, `into_iter`).
fn is_iterator(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            matches!(name.as_str(), "iter" | "iter_mut" | "into_iter") || is_iterator(&m.receiver)
        }
        _ => false,
    }
}

/// Whether the items of the `for` source `e` are references (`x.iter()`, `x.iter_mut()`, not a
/// range; a zip or an enumerate makes tuples, which the adaptors' patterns take apart).
fn source_by_ref(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            match name.as_str() {
                "iter" | "iter_mut" => true,
                "rev" | "step_by" => source_by_ref(&m.receiver),
                _ => false,
            }
        }
        _ => false,
    }
}

/// The first method of the source `e` that a `for` loop cannot plan, if any.
fn unplannable(e: &Expr) -> Option<&syn::Ident> {
    match strip(e) {
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            if matches!(name.as_str(), "iter" | "iter_mut" | "into_iter") {
                return None;
            }
            if !matches!(name.as_str(), "zip" | "enumerate" | "rev" | "step_by") {
                return Some(&m.method);
            }
            if name == "zip"
                && let Some(bad) = m.args.first().and_then(|a| unplannable(a))
            {
                return Some(bad);
            }
            unplannable(&m.receiver)
        }
        _ => None,
    }
}

/// The start of a sum (zero) or a product (one) of type `ty` (a float when not given).
fn zero_or_one(ty: Option<&syn::Type>, one: bool, span: Span) -> TokenStream {
    let float = |t: &syn::Type| matches!(t, syn::Type::Path(p) if p.path.is_ident("f64") || p.path.is_ident("f32"));
    match ty {
        Some(t) if !float(t) && !matches!(t, syn::Type::Infer(_)) => {
            if one {
                quote_spanned!(span=> #t::ONE)
            } else {
                quote_spanned!(span=> #t::ZERO)
            }
        }
        _ => {
            if one {
                quote_spanned!(span=> 1.0)
            } else {
                quote_spanned!(span=> 0.0)
            }
        }
    }
}

/// A `return` or `?` in a closure body (not inside a closure nested in it), which inlining
/// would turn into a return from the function.
fn escapes(e: &Expr) -> Option<TokenStream> {
    use syn::visit::Visit;
    struct Find(Option<TokenStream>);
    impl<'a> Visit<'a> for Find {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.0.get_or_insert_with(|| quote!(#r));
        }
        fn visit_expr_try(&mut self, t: &'a syn::ExprTry) {
            let q = &t.question_token;
            self.0.get_or_insert_with(|| quote!(#q));
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Find(None);
    f.visit_expr(e);
    f.0
}
