//! Iterator chains in value position (`x.iter().map(|v| v * v).sum::<f64>()`), lowered as the
//! `for` loop a person would write for them, so that they cost what the loop costs and get the
//! loop's derivative in both modes.
//!
//! A chain is a *source* the `for` loop lowering plans (a range, `x.iter()`, `x.iter_mut()`,
//! with `.zip(..)`, `.enumerate()`, `.rev()`, `.step_by(k)`, `.skip(k)`, `.take(k)`; or `x.windows(k)`, `x.chunks(k)`,
//! `x.chunks_exact(k)`, whose views the loop body may only index and measure: see
//! `lower_views`), then *element adaptors* applied to
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

use super::lower::{Lower, strip_parens};
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
    /// `max_by(cmp)` (`true`) or `min_by(cmp)`: an `Option`.
    Best(Expr, bool),
    /// `reduce(f)`: an `Option`.
    Reduce(Expr),
    /// `any(f)` (`true`) or `all(f)`: a `bool`.
    AnyAll(Expr, bool),
    /// `position(f)`: an `Option<usize>`.
    Position(Expr),
    /// `find(p)`: an `Option` of the item.
    Find(Expr),
    /// The body of `for pat in chain { body }` (with the loop's label).
    Loop(Pat, syn::Block, Option<syn::Label>),
}

/// A chain written out as tokens: the statements that compute it (a loop, and the locals it
/// fills), the expression of its value after them, and for a consumer that returns an `Option`
/// (`max_by`, `min_by`, `reduce`) the test of `Some` (the value is then meaningful only when
/// the test holds).
pub(super) struct ChainParts {
    pub(super) stmts: TokenStream,
    pub(super) value: TokenStream,
    pub(super) some: Option<TokenStream>,
}

/// The message for a consumer returning an `Option` whose value is not taken apart.
const OPTION_CONSUMER: &str = "this iterator method returns an `Option`: follow it with \
     `.unwrap()`, `.expect(..)`, `.unwrap_or(..)` or `.unwrap_or_else(|| ..)`, or take it apart \
     with `if let Some(v) = ..`, `let Some(v) = .. else { .. }` or `match`";

/// The element adaptors, from the source outwards.
enum Adaptor {
    Map(Expr),
    Filter(Expr),
    /// `filter_map(f)`: the values of the items for which `f` gives `Some(v)`.
    FilterMap(Expr),
    /// `take_while(p)`: the items up to the first that fails `p`.
    TakeWhile(Expr),
    /// `skip_while(p)`: the items from the first that fails `p`.
    SkipWhile(Expr),
    /// `scan(init, f)`: `f` applied to a state started at `init` and to each item, its value
    /// (`Some(v)`) the new item.
    Scan(Box<(Expr, Expr)>),
    Copied,
    Enumerate,
}

/// Methods that end a chain (their receiver is an iterator).
pub(super) const CONSUMERS: &[&str] = &[
    "sum", "product", "count", "fold", "for_each", "collect", "max_by", "min_by", "reduce", "any",
    "all", "position", "find",
];

pub(super) const MESSAGE: &str = "this iterator method is not supported in #[differentiable] \
     functions; supported chains: a source (a range, `x.iter()`, `x.iter_mut()`, \
     `x.into_iter()`, with `.zip(..)`, `.enumerate()`, `.rev()`, `.step_by(k)`, `.skip(k)`, \
     `.take(k)`; or `x.windows(k)`, \
     `x.chunks(k)`, `x.chunks_exact(k)`, indexed), then `.map(..)`, \
     `.filter(..)`, `.filter_map(..)`, `.take_while(..)`, `.skip_while(..)`, `.scan(..)`, `.copied()`, `.cloned()`, ending in `.sum()`, `.product()`, `.count()`, \
     `.fold(..)`, `.for_each(..)`, `.collect::<Vec<_>>()`, `.any(..)`, `.all(..)`, or (taken \
     apart as an `Option`) `.max_by(..)`, `.min_by(..)`, `.reduce(..)`, `.position(..)`, \
     `.find(..)` (and `for` loops over such a source, or two joined by `.chain(..)`); write \
     anything else as a `for` loop";

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
        Some(match self.chain_parts(m) {
            Ok(ChainParts { stmts, value, some: None }) => {
                self.lower_tokens(quote!({ #stmts #value }), m)
            }
            // An `Option` of values (`x.iter().copied().reduce(f64::max)`) kept or passed on:
            // built (see `variants`). One Rust types as holding references stays refused.
            Ok(ChainParts { stmts, value, some: Some(some) }) if holds_values(m) => self
                .lower_tokens(
                    quote!({
                        #stmts
                        if #some {
                            ::core::option::Option::Some(#value)
                        } else {
                            ::core::option::Option::None
                        }
                    }),
                    m,
                ),
            Ok(_) => self.refuse(&m.method, OPTION_CONSUMER),
            Err(()) => super::lower::unit(),
        })
    }

    /// The statements and the value of the chain `m` ends (see [`ChainParts`]); `Err` once an
    /// error is reported.
    pub(super) fn chain_parts(&mut self, m: &syn::ExprMethodCall) -> Result<ChainParts, ()> {
        self.chain_parts_as(m, None)
    }

    /// [`Self::chain_parts`] with the consumer given (a `for` loop's body), or read off `m`.
    fn chain_parts_as(
        &mut self,
        m: &syn::ExprMethodCall,
        given: Option<Consumer>,
    ) -> Result<ChainParts, ()> {
        // Statements before the loops (an `enumerate`'s count).
        let mut prelude = TokenStream::new();
        let parts = self.chain_loops(m, given, &mut prelude)?;
        let stmts = parts.stmts;
        Ok(ChainParts { stmts: quote!(#prelude #stmts), ..parts })
    }

    /// [`Self::chain_parts_as`] but for the statements before the loops, which the adaptors add
    /// to `prelude`.
    fn chain_loops(
        &mut self,
        m: &syn::ExprMethodCall,
        given: Option<Consumer>,
        prelude: &mut TokenStream,
    ) -> Result<ChainParts, ()> {
        let name = m.method.to_string();
        let span = m.method.span();
        let ty = m.turbofish.as_ref().and_then(|t| match t.args.first() {
            Some(syn::GenericArgument::Type(ty)) => Some(ty.clone()),
            _ => None,
        });
        let consumer = match (name.as_str(), m.args.len()) {
            _ if given.is_some() => given.expect("checked"),
            ("sum", 0) => Consumer::Sum(ty),
            ("product", 0) => Consumer::Product(ty),
            ("count", 0) => Consumer::Count,
            ("fold", 2) => Consumer::Fold(m.args[0].clone(), m.args[1].clone()),
            ("for_each", 1) => Consumer::ForEach(m.args[0].clone()),
            ("collect", 0) => Consumer::Collect,
            ("max_by", 1) => Consumer::Best(m.args[0].clone(), true),
            ("min_by", 1) => Consumer::Best(m.args[0].clone(), false),
            ("reduce", 1) => Consumer::Reduce(m.args[0].clone()),
            ("any", 1) => Consumer::AnyAll(m.args[0].clone(), true),
            ("all", 1) => Consumer::AnyAll(m.args[0].clone(), false),
            ("position", 1) => Consumer::Position(m.args[0].clone()),
            ("find", 1) => Consumer::Find(m.args[0].clone()),
            _ => {
                self.refuse(&m.method, MESSAGE);
                return Err(());
            }
        };
        // The adaptors, outermost first, down to the source.
        let mut adaptors = Vec::new();
        let mut source: &Expr = &m.receiver;
        while let Expr::MethodCall(a) = strip(source) {
            let adaptor = match (a.method.to_string().as_str(), a.args.len()) {
                ("map", 1) => Adaptor::Map(a.args[0].clone()),
                ("filter", 1) => Adaptor::Filter(a.args[0].clone()),
                ("filter_map", 1) => Adaptor::FilterMap(a.args[0].clone()),
                ("take_while", 1) => Adaptor::TakeWhile(a.args[0].clone()),
                ("skip_while", 1) => Adaptor::SkipWhile(a.args[0].clone()),
                ("scan", 2) => Adaptor::Scan(Box::new((a.args[0].clone(), a.args[1].clone()))),
                ("copied" | "cloned", 0) => Adaptor::Copied,
                // `x.iter().map(..).enumerate()`: counts the items an adaptor made (an
                // `enumerate` with no adaptor inside is the source's).
                // After `rev`, `skip`, `take`, `step_by` too: the count of the items visited.
                ("enumerate", 0) if has_adaptor(&a.receiver) || narrowed(&a.receiver) => {
                    Adaptor::Enumerate
                }
                _ => break,
            };
            adaptors.push(adaptor);
            source = &a.receiver;
        }
        adaptors.reverse();
        // The source: what a `for` loop plans; `x.into_iter()` is `x.iter().copied()`.
        let mut by_ref = source_by_ref(source);
        let sources: Vec<TokenStream> = match strip(source) {
            Expr::MethodCall(s) if s.method == "into_iter" && s.args.is_empty() => {
                let r = &s.receiver;
                adaptors.insert(0, Adaptor::Copied);
                by_ref = true;
                vec![quote_spanned!(s.method.span()=> #r.iter())]
            }
            // `a.chain(b)`: one loop over `a`, then one over `b`, with the same body.
            Expr::MethodCall(s) if s.method == "chain" && s.args.len() == 1 => {
                let (a, b) = (&s.receiver, &s.args[0]);
                vec![quote!(#a), quote!(#b)]
            }
            other => vec![quote!(#other)],
        };
        // `a.chain(b)` only as the outermost method of the source, each side a source.
        let bad = match strip(source) {
            Expr::MethodCall(c) if c.method == "chain" && c.args.len() == 1 => {
                unplannable(&c.receiver).or_else(|| unplannable(&c.args[0]))
            }
            other => unplannable(other),
        };
        if let Some(bad) = bad {
            self.refuse(bad, MESSAGE);
            return Err(());
        }
        // `max_by` and `min_by` keep a number: the items must be numbers (mapped, or a source
        // of numbers rather than of tuples or views).
        if matches!(consumer, Consumer::Best(..) | Consumer::Find(_))
            && !adaptors.iter().any(|a| matches!(a, Adaptor::Map(_)))
            && makes_tuples_or_views(source)
            && (makes_views(source) || tuple_leaves(source, &mut 0).is_none())
        {
            self.refuse(
                &m.method,
                "`max_by` / `min_by` / `find` over views (after `windows`, `chunks`) are not \
                 supported; `map` the items to the numbers compared, or write a `for` loop that \
                 keeps the best item",
            );
            return Err(());
        }
        let e = syn::Ident::new("__mooncake_item", Span::mixed_site());
        let acc = syn::Ident::new("__mooncake_acc", Span::mixed_site());
        // The first closure to take the raw item binds its pattern in the loop's head (`for (a,
        // b) in x.iter().zip(y.iter())`), as a written loop would, rather than through a tuple.
        // A typed parameter (`|v: &f64|`) binds its pattern alone (a `for` loop's head takes no
        // type; the item has it).
        let takes_item = |f: &Expr, n: usize| match f {
            Expr::Closure(c) if c.inputs.len() == n => {
                let p = match &c.inputs[n - 1] {
                    Pat::Type(pt) => &*pt.pat,
                    p => p,
                };
                (!matches!(p, Pat::Reference(_))).then(|| p.clone())
            }
            _ => None,
        };
        let head = match (adaptors.first(), &consumer) {
            (Some(Adaptor::Map(f)), _) => takes_item(f, 1),
            (None, Consumer::ForEach(f) | Consumer::AnyAll(f, _) | Consumer::Position(f)) => {
                takes_item(f, 1)
            }
            (None, Consumer::Fold(_, f)) => takes_item(f, 2),
            _ => None,
        };
        let mut item_arg = match head {
            Some(_) => None,
            None => Some(quote!(#e)),
        };
        // A source of tuples (`zip`, `enumerate`) taken whole: the head names each part, so
        // that closures taking the item apart bind the parts themselves (no tuple holding a
        // borrow is kept in a local), and the item is also the tuple of the parts.
        let mut leaves = match head {
            None => tuple_leaves(source, &mut 0),
            Some(_) => None,
        };
        let mut body = TokenStream::new();
        let head = match (head, &leaves) {
            (Some(p), _) => quote!(#p),
            (None, Some(l)) => {
                let expr = l.tokens();
                body.extend(quote_spanned!(span=> let #e = #expr;));
                l.tokens()
            }
            (None, None) => quote!(#e),
        };
        for (k, a) in adaptors.into_iter().enumerate() {
            match a {
                Adaptor::Copied => {
                    if by_ref {
                        body.extend(quote_spanned!(span=> let #e = *#e;));
                    }
                    by_ref = false;
                    leaves = None;
                }
                Adaptor::Enumerate
                    if !matches!(
                        consumer,
                        Consumer::Best(..) | Consumer::Find(_) | Consumer::Reduce(_)
                    ) =>
                {
                    // The count of the items that reach it, with the item, as two parts that
                    // patterns taking the pair apart bind (`for (k, v) in x.iter().rev()
                    // .enumerate()`): no tuple holding a borrow is kept in a local. The pair
                    // itself, where a closure takes it whole, is built where it is passed.
                    let cnt = syn::Ident::new("__mooncake_enumerate", Span::mixed_site());
                    let part =
                        syn::Ident::new(&format!("__mooncake_counted{k}"), Span::mixed_site());
                    prelude.extend(quote_spanned!(span=> let mut #cnt: usize = 0;));
                    let inner = match leaves.take() {
                        Some(l) => l,
                        None => {
                            let value = item_arg.take().unwrap_or_else(|| quote!(#e));
                            let item = syn::Ident::new(
                                &format!("__mooncake_enumerated{k}"),
                                Span::mixed_site(),
                            );
                            body.extend(quote_spanned!(span=> let #item = #value;));
                            Leaves::Leaf(item)
                        }
                    };
                    body.extend(quote_spanned!(span=> let #part = #cnt; #cnt += 1;));
                    let pair = Leaves::Tuple(vec![Leaves::Leaf(part), inner]);
                    let tokens = pair.tokens();
                    body.extend(quote_spanned!(span=> let #e = #tokens;));
                    item_arg = Some(quote!(#e));
                    leaves = Some(pair);
                }
                Adaptor::Enumerate => {
                    // The count of the items that reach it, with the item.
                    let cnt = syn::Ident::new("__mooncake_enumerate", Span::mixed_site());
                    let value = item_arg.take().unwrap_or_else(|| quote!(#e));
                    prelude.extend(quote_spanned!(span=> let mut #cnt: usize = 0;));
                    body.extend(quote_spanned!(span=> let #e = (#cnt, #value); #cnt += 1;));
                    item_arg = Some(quote!(#e));
                    leaves = None;
                }
                Adaptor::Scan(ref scan) => {
                    let (init, f) = &**scan;
                    let state = syn::Ident::new(&format!("__mooncake_scan{k}"), Span::mixed_site());
                    prelude.extend(quote_spanned!(span=> let mut #state = #init;));
                    let Some(f) = scan_closure(f) else {
                        self.refuse(
                            f,
                            "`scan` is supported with a closure `|state, item| ..` that always \
                             yields `Some(v)` and names no `None` (so no `Option` state, no early \
                             end): `|acc, &v| { *acc += v; Some(*acc) }`; write other scans as a \
                             `for` loop",
                        );
                        return Err(());
                    };
                    let args = [Some(quote!(&mut #state)), item_arg.take()];
                    let call = self.apply_with(&f, &args, by_ref, leaves.take())?;
                    body.extend(quote_spanned!(span=> let #e = #call;));
                    by_ref = false;
                    item_arg = Some(quote!(#e));
                }
                Adaptor::Map(f) => {
                    let call = self.apply_with(&f, &[item_arg.take()], by_ref, leaves.take())?;
                    body.extend(quote_spanned!(span=> let #e = #call;));
                    by_ref = false;
                    item_arg = Some(quote!(#e));
                }
                Adaptor::FilterMap(f) => {
                    let call = self.apply_with(&f, &[item_arg.take()], by_ref, leaves.take())?;
                    body.extend(quote_spanned!(span=>
                        let ::core::option::Option::Some(#e) = (#call) else { continue; };
                    ));
                    by_ref = false;
                    item_arg = Some(quote!(#e));
                }
                Adaptor::Filter(p) => {
                    let test = match leaves.as_ref().and_then(|l| filter_on_leaves(&p, l)) {
                        Some(test) => test,
                        None => self.predicate(&p, &e, by_ref)?,
                    };
                    body.extend(quote_spanned!(span=> if !(#test) { continue; }));
                }
                Adaptor::TakeWhile(ref p) | Adaptor::SkipWhile(ref p) => {
                    let test = match leaves.as_ref().and_then(|l| filter_on_leaves(p, l)) {
                        Some(test) => test,
                        None => self.predicate(p, &e, by_ref)?,
                    };
                    // A flag before the loops: whether the iteration has stopped (`take_while`;
                    // a chain's second loop then stops at once) or is still skipping
                    // (`skip_while`).
                    let flag = syn::Ident::new(&format!("__mooncake_while{k}"), Span::mixed_site());
                    if matches!(a, Adaptor::TakeWhile(_)) {
                        prelude.extend(quote_spanned!(span=> let mut #flag = false;));
                        body.extend(quote_spanned!(span=>
                            if #flag { break; }
                            if !(#test) { #flag = true; break; }
                        ));
                    } else {
                        prelude.extend(quote_spanned!(span=> let mut #flag = true;));
                        body.extend(quote_spanned!(span=>
                            if #flag {
                                if #test { continue; }
                                #flag = false;
                            }
                        ));
                    }
                }
            }
        }
        let item = match (&leaves, &consumer) {
            // A tuple kept whole (`enumerate().max_by(..)`): its values, not its borrows.
            (Some(l), Consumer::Best(..) | Consumer::Find(_) | Consumer::Reduce(_)) => {
                tuple_values(source, l)
            }
            _ if by_ref => quote_spanned!(span=> *#e),
            _ => quote!(#e),
        };
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
                let call = self.apply_with(
                    &f,
                    &[Some(quote!(#acc)), item_arg.take()],
                    by_ref,
                    leaves.take(),
                )?;
                (quote!(#init), quote_spanned!(span=> #acc = #call;))
            }
            Consumer::ForEach(f) => {
                let call = self.apply_with(&f, &[item_arg.take()], by_ref, leaves.take())?;
                let stmts = loops(&head, &sources, quote!(#body #call;));
                return Ok(ChainParts { stmts, value: quote!(()), some: None });
            }
            Consumer::Best(cmp, max) => {
                // `max_by` keeps the last of equal items, `min_by` the first, as std does.
                let greater = self.comparator(&cmp, quote!(#acc), item.clone())?;
                let take = if max { quote!(!(#greater)) } else { greater };
                let n = syn::Ident::new("__mooncake_count", Span::mixed_site());
                // The first item is taken before any comparison: the kept item's type is known
                // where the comparator first reads it.
                let step = quote!(if #n == 0 { #acc = #item; } else if #take { #acc = #item; });
                return Ok(counted(&head, &sources, body, &acc, &n, step, span));
            }
            Consumer::Loop(pat, block, label) => {
                if sources.len() > 1
                    && let Some(b) = breaks_out(
                        &block,
                        label.as_ref().map(|l| l.name.ident.to_string()).as_deref(),
                    )
                {
                    self.refuse(
                        b,
                        "`break` out of a `for` loop over `a.chain(b)` is not supported; write two \
                         loops, or keep a flag and `continue`",
                    );
                    return Err(());
                }
                let item_value = match item_arg.take() {
                    Some(a) => a,
                    None => quote!(#e),
                };
                let bind = match leaves.as_ref().and_then(|l| bind_leaves(&pat, l, &mut Vec::new()))
                {
                    Some(lets) => lets,
                    None => quote_spanned!(span=> let #pat = #item_value;),
                };
                let stmts: TokenStream = sources
                    .iter()
                    .map(|s| quote_spanned!(span=> #label for #head in #s { #body #bind #block }))
                    .collect();
                return Ok(ChainParts { stmts, value: quote!(()), some: None });
            }
            Consumer::AnyAll(f, any) => {
                let call = self.apply_with(&f, &[item_arg.take()], by_ref, leaves.take())?;
                let (init, stop, hit) = if any {
                    (quote!(false), quote!(#acc), quote!(#call))
                } else {
                    (quote!(true), quote!(!#acc), quote!(!(#call)))
                };
                let each = loops(
                    &head,
                    &sources,
                    quote_spanned!(span=>
                        if #stop { break; }
                        #body
                        if #hit { #acc = !#init; break; }
                    ),
                );
                let stmts = quote_spanned!(span=> let mut #acc = #init; #each);
                return Ok(ChainParts { stmts, value: quote!(#acc), some: None });
            }
            Consumer::Position(f) => {
                let call = self.apply_with(&f, &[item_arg.take()], by_ref, leaves.take())?;
                let found = syn::Ident::new("__mooncake_found", Span::mixed_site());
                let each = loops(
                    &head,
                    &sources,
                    quote_spanned!(span=>
                        if #found { break; }
                        #body
                        if #call { #found = true; break; }
                        #acc += 1;
                    ),
                );
                return Ok(searched(quote!(let mut #acc: usize = 0;), &acc, &found, each, span));
            }
            Consumer::Find(p) => {
                let test = match leaves.as_ref().and_then(|l| filter_on_leaves(&p, l)) {
                    Some(test) => test,
                    None => self.predicate(&p, &e, by_ref)?,
                };
                let found = syn::Ident::new("__mooncake_found", Span::mixed_site());
                let each = loops(
                    &head,
                    &sources,
                    quote_spanned!(span=>
                        if #found { break; }
                        #body
                        if #test { #acc = #item; #found = true; break; }
                    ),
                );
                let init = quote!(let mut #acc = ::mooncake_runtime::__private::item_default(););
                return Ok(searched(init, &acc, &found, each, span));
            }
            Consumer::Reduce(f) => {
                let call = self.apply(&f, &[Some(quote!(#acc)), Some(item.clone())], false)?;
                let n = syn::Ident::new("__mooncake_count", Span::mixed_site());
                let step = quote!(if #n == 0 { #acc = #item; } else { #acc = #call; });
                return Ok(counted(&head, &sources, body, &acc, &n, step, span));
            }
        };
        let each = loops(&head, &sources, quote!(#body #step));
        let stmts = quote_spanned!(span=>
            let mut #acc = #init;
            #each
        );
        Ok(ChainParts { stmts, value: quote!(#acc), some: None })
    }

    /// The test of a predicate taking a reference to the item `e` (`filter`, `find`): a pattern
    /// `|&v|` binds the item itself, a name `|v|` the item with one `*` fewer wherever the body
    /// dereferences it (a borrow kept in a local is outside reverse mode, and the predicate has
    /// no derivative), anything else the item's reference.
    fn predicate(&mut self, p: &Expr, e: &syn::Ident, by_ref: bool) -> Result<TokenStream, ()> {
        match p {
            Expr::Closure(c) if c.inputs.len() == 1 => match &c.inputs[0] {
                Pat::Reference(r) => {
                    let inner = Expr::Closure(syn::ExprClosure {
                        inputs: std::iter::once((*r.pat).clone()).collect(),
                        ..c.clone()
                    });
                    self.apply(&inner, &[Some(quote!(#e))], by_ref)
                }
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    let mut inner = c.clone();
                    let mut strip = StripDeref(&pi.ident);
                    syn::visit_mut::VisitMut::visit_expr_mut(&mut strip, &mut inner.body);
                    self.apply(&Expr::Closure(inner), &[Some(quote!(#e))], false)
                }
                _ => self.apply(p, &[Some(quote!(&#e))], false),
            },
            _ => self.apply(p, &[Some(quote!(&#e))], false),
        }
    }

    /// The test "`cmp(a, b)` is `Greater`" for a comparator of `max_by` / `min_by`: a closure
    /// comparing two keys with `partial_cmp` (then `unwrap`, `expect` or `unwrap_or`) or
    /// `total_cmp`, or the path `f64::total_cmp`; `a` and `b` are numbers.
    fn comparator(&mut self, f: &Expr, a: TokenStream, b: TokenStream) -> Result<TokenStream, ()> {
        const HOW: &str = "a comparator of `max_by` / `min_by` must compare two keys with \
             `partial_cmp` or `total_cmp` (`|a, b| a.partial_cmp(b).unwrap()`, \
             `|a, b| (a - c).abs().total_cmp(&(b - c).abs())`, `f64::total_cmp`); write other \
             comparisons as a `for` loop";
        match f {
            Expr::Path(p)
                if p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "total_cmp" || s.ident == "partial_cmp") =>
            {
                Ok(quote!((#a) > (#b)))
            }
            Expr::Closure(c) if c.inputs.len() == 2 => {
                let Some((l, r)) = compared(&c.body) else {
                    self.refuse(&c.body, HOW);
                    return Err(());
                };
                let (mut l, mut r) = (l.clone(), r.clone());
                let mut lets = Vec::new();
                for (p, v) in c.inputs.iter().zip([a, b]) {
                    // The parameters are references to the items: a name is bound to the item
                    // with one `*` fewer where it is dereferenced; `&name` to the item.
                    let p = match p {
                        Pat::Type(pt) => &*pt.pat,
                        p => p,
                    };
                    match p {
                        Pat::Reference(rp) => {
                            let inner = &rp.pat;
                            lets.push(quote!(let #inner = #v;));
                        }
                        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            let mut strip = StripDeref(&pi.ident);
                            syn::visit_mut::VisitMut::visit_expr_mut(&mut strip, &mut l);
                            syn::visit_mut::VisitMut::visit_expr_mut(&mut strip, &mut r);
                            let name = &pi.ident;
                            lets.push(quote!(let #name = #v;));
                        }
                        // `|(_, a), (_, b)|` on tuples kept as values: each part bound to its
                        // value, its `*`s dropped.
                        Pat::Tuple(_) => {
                            let (values, names) = values_pattern(p);
                            let mut strip = StripDerefs(&names);
                            syn::visit_mut::VisitMut::visit_expr_mut(&mut strip, &mut l);
                            syn::visit_mut::VisitMut::visit_expr_mut(&mut strip, &mut r);
                            lets.push(quote!(let #values = #v;));
                        }
                        other => {
                            self.refuse(other, HOW);
                            return Err(());
                        }
                    }
                }
                Ok(quote!({ #(#lets)* (#l) > (#r) }))
            }
            other => {
                self.refuse(other, HOW);
                Err(())
            }
        }
    }

    /// [`Self::apply`], the last argument a tuple item whose parts are the names `leaves`: a
    /// closure taking it apart by a tuple pattern binds each part (see `bind_leaves`).
    fn apply_with(
        &mut self,
        f: &Expr,
        args: &[Option<TokenStream>],
        by_ref: bool,
        leaves: Option<Leaves>,
    ) -> Result<TokenStream, ()> {
        if let (Some(l), Expr::Closure(c)) = (&leaves, f)
            && c.inputs.len() == args.len()
            && escapes(&c.body).is_none()
            && let Some(last) = c.inputs.last()
            && let Some(lets) = bind_leaves(last, l, &mut Vec::new())
        {
            let firsts = c.inputs.iter().zip(args).take(args.len() - 1).map(|(p, a)| match a {
                Some(a) => quote_spanned!(p.span()=> let #p = #a;),
                None => quote!(),
            });
            let body = &c.body;
            return Ok(quote_spanned!(c.body.span()=> { #(#firsts)* #lets #body }));
        }
        self.apply(f, args, by_ref)
    }

    /// The expression `f(args..)` for a closure (its parameters bound by `let`, its body
    /// inlined) or a path to a function (`f64::sin`, a `#[differentiable]` function). The last
    /// argument is the item, a reference when `by_ref`.
    fn apply(
        &mut self,
        f: &Expr,
        args: &[Option<TokenStream>],
        by_ref: bool,
    ) -> Result<TokenStream, ()> {
        match f {
            Expr::Closure(c) => {
                if c.inputs.len() != args.len() {
                    self.refuse(
                        &c.inputs,
                        &format!("this closure should take {} argument(s) here", args.len()),
                    );
                    return Err(());
                }
                if let Some(bad) = escapes(&c.body) {
                    self.refuse(
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
            // A reference item is passed to a function as it is: Rust passes `&f64` items to
            // `map(sq)`, which compiles only for `fn sq(v: &f64)` (a function taking the
            // number is given `.copied()` items). A closure bound by `let` takes the number
            // (its `&f64` parameter is bound to the number where it is inlined).
            Expr::Path(p) => {
                let mut args: Vec<TokenStream> = args.iter().flatten().cloned().collect();
                let closure = p.path.get_ident().is_some_and(|i| self.lookup_closure(i).is_some());
                if by_ref
                    && closure
                    && let Some(last) = args.last_mut()
                {
                    *last = quote!(*#last);
                }
                Ok(quote_spanned!(p.span()=> #p(#(#args),*)))
            }
            other => {
                self.refuse(
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
            Err(_) => self.refuse(at, MESSAGE),
        }
    }
}

impl Lower<'_> {
    /// `for p in a.chain(b) { body }`: `for p in a { body }` then `for p in b { body }` (with
    /// the loop's label on both); `None` if the loop is over something else. A `break` out of
    /// the loop is refused (it would leave only the first of the two loops).
    pub(super) fn lower_chained_for(&mut self, f: &syn::ExprForLoop) -> Option<super::ir::Operand> {
        let Expr::MethodCall(c) = strip(&f.expr) else { return None };
        if c.method != "chain" || c.args.len() != 1 {
            return None;
        }
        let label = f.label.as_ref().map(|l| l.name.ident.to_string());
        if let Some(b) = breaks_out(&f.body, label.as_deref()) {
            return Some(self.refuse(
                b,
                "`break` out of a `for` loop over `a.chain(b)` is not supported; write two \
                 loops, or keep a flag and `continue`",
            ));
        }
        if let Some(bad) = unplannable(&c.receiver).or_else(|| unplannable(&c.args[0])) {
            return Some(self.refuse(bad, MESSAGE));
        }
        let (a, b) = (&c.receiver, &c.args[0]);
        let (label, pat, body) = (&f.label, &f.pat, &f.body);
        let tokens = quote_spanned!(f.span()=> {
            #label for #pat in #a #body
            #label for #pat in #b #body
        });
        Some(match syn::parse2::<Expr>(tokens) {
            Ok(e) => self.lower_expr(&e),
            Err(_) => self.refuse(&c.method, MESSAGE),
        })
    }
}

impl Lower<'_> {
    /// `for pat in x.iter().map(..).filter(..) { body }`: a loop over the source, the adaptors
    /// applied to each item, then `pat` bound and the body run (`break`, `continue` and `return`
    /// mean what they mean in the loop); `None` if the loop's iterator has no adaptor.
    pub(super) fn lower_adapted_for(&mut self, f: &syn::ExprForLoop) -> Option<super::ir::Operand> {
        let Expr::MethodCall(m) = strip(&f.expr) else { return None };
        let adapted = ADAPTORS.contains(&m.method.to_string().as_str())
            || (m.method == "enumerate" && (has_adaptor(&m.receiver) || narrowed(&m.receiver)));
        if !adapted || !is_iterator(&m.receiver) {
            return None;
        }
        // The chain as if it ended in a consumer taking the loop's body.
        let call = syn::ExprMethodCall {
            attrs: Vec::new(),
            receiver: Box::new(f.expr.as_ref().clone()),
            dot_token: Default::default(),
            method: syn::Ident::new("for_each", m.method.span()),
            turbofish: None,
            paren_token: Default::default(),
            args: Default::default(),
        };
        let consumer = Consumer::Loop((*f.pat).clone(), f.body.clone(), f.label.clone());
        Some(match self.chain_parts_as(&call, Some(consumer)) {
            Ok(ChainParts { stmts, .. }) => self.lower_tokens(quote!({ #stmts }), &call),
            Err(()) => super::lower::unit(),
        })
    }
}

/// A `break` in `body` that leaves the loop it is the body of (unlabelled and not inside an
/// inner loop, or naming `label`); closures are not entered.
fn breaks_out(body: &syn::Block, label: Option<&str>) -> Option<TokenStream> {
    use syn::visit::Visit;
    struct Find<'l> {
        depth: usize,
        label: Option<&'l str>,
        found: Option<TokenStream>,
    }
    impl<'a> Visit<'a> for Find<'_> {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            let named = b.label.as_ref().map(|l| l.ident.to_string());
            let out = match &named {
                None => self.depth == 0,
                Some(n) => Some(n.as_str()) == self.label,
            };
            if out && self.found.is_none() {
                let t = b.break_token;
                self.found = Some(quote!(#t));
            }
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_for_loop(&mut self, l: &'a syn::ExprForLoop) {
            self.visit_expr(&l.expr);
            self.depth += 1;
            self.visit_block(&l.body);
            self.depth -= 1;
        }
        fn visit_expr_while(&mut self, l: &'a syn::ExprWhile) {
            self.visit_expr(&l.cond);
            self.depth += 1;
            self.visit_block(&l.body);
            self.depth -= 1;
        }
        fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
            self.depth += 1;
            self.visit_block(&l.body);
            self.depth -= 1;
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Find { depth: 0, label, found: None };
    f.visit_block(body);
    f.found
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
pub(super) fn is_iterator(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            matches!(
                name.as_str(),
                "iter" | "iter_mut" | "into_iter" | "windows" | "chunks" | "chunks_exact"
            ) || is_iterator(&m.receiver)
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
                "rev" | "step_by" | "skip" | "take" | "chain" => source_by_ref(&m.receiver),
                _ => false,
            }
        }
        _ => false,
    }
}

/// A consumer that keeps one number and counts the items (`max_by`, `min_by`, `reduce`): `acc`
/// set to `step` (which may read `acc` and the count `n`) for each item, an `Option` that is
/// `Some` when there was one.
fn counted(
    head: &TokenStream,
    sources: &[TokenStream],
    body: TokenStream,
    acc: &syn::Ident,
    n: &syn::Ident,
    step: TokenStream,
    span: Span,
) -> ChainParts {
    let each = loops(head, sources, quote_spanned!(span=> #body #step #n += 1;));
    // The item's type is the acc's: a number or a tuple, started at its default.
    let stmts = quote_spanned!(span=>
        let mut #acc = ::mooncake_runtime::__private::item_default();
        let mut #n: usize = 0;
        #each
    );
    ChainParts { stmts, value: quote!(#acc), some: Some(quote!(#n > 0)) }
}

/// A consumer that stops at the first item found (`position`, `find`): `acc` declared by
/// `init`, the loops `each`, an `Option` that is `Some` when one was found.
fn searched(
    init: TokenStream,
    acc: &syn::Ident,
    found: &syn::Ident,
    each: TokenStream,
    span: Span,
) -> ChainParts {
    let stmts = quote_spanned!(span=> #init let mut #found = false; #each);
    ChainParts { stmts, value: quote!(#acc), some: Some(quote!(#found)) }
}

/// `for head in source { inner }` for each source in turn.
fn loops(head: &TokenStream, sources: &[TokenStream], inner: TokenStream) -> TokenStream {
    sources.iter().map(|s| quote!(for #head in #s { #inner })).collect()
}

/// Whether the items reaching the consumer `m` are references in Rust's types (a source by
/// reference, no `copied`, `cloned` or `map` after it).
pub(super) fn source_by_ref_items(m: &syn::ExprMethodCall) -> bool {
    let mut e: &Expr = &m.receiver;
    while let Expr::MethodCall(a) = strip(e) {
        match a.method.to_string().as_str() {
            "map" | "filter_map" | "scan" | "copied" | "cloned" => return false,
            "into_iter" if a.args.is_empty() => return false,
            "filter" | "take_while" | "skip_while" => e = &a.receiver,
            _ => return source_by_ref(e),
        }
    }
    false
}

/// The parts of a tuple item, each a fresh name (see `tuple_leaves`).
#[derive(Clone)]
enum Leaves {
    Leaf(syn::Ident),
    Tuple(Vec<Leaves>),
}

impl Leaves {
    /// The pattern, or the expression, of the parts (`(__mooncake_part0, __mooncake_part1)`).
    fn tokens(&self) -> TokenStream {
        match self {
            Leaves::Leaf(i) => quote!(#i),
            Leaves::Tuple(parts) => {
                let parts = parts.iter().map(Leaves::tokens);
                quote!((#(#parts),*))
            }
        }
    }
}

/// The parts of the items of a source of tuples (`x.iter().zip(y.iter())`, `.enumerate()`),
/// as its `for` loop binds them; `None` for a source of single items.
fn tuple_leaves(e: &Expr, next: &mut usize) -> Option<Leaves> {
    fn shape(e: &Expr, next: &mut usize) -> Leaves {
        let leaf = |next: &mut usize| {
            *next += 1;
            Leaves::Leaf(syn::Ident::new(
                &format!("__mooncake_part{}", *next - 1),
                Span::mixed_site(),
            ))
        };
        match strip(e) {
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "enumerate" => {
                    let counter = leaf(next);
                    Leaves::Tuple(vec![counter, shape(&m.receiver, next)])
                }
                "zip" if m.args.len() == 1 => {
                    let a = shape(&m.receiver, next);
                    Leaves::Tuple(vec![a, shape(&m.args[0], next)])
                }
                "rev" | "skip" | "take" | "step_by" | "chain" => shape(&m.receiver, next),
                _ => leaf(next),
            },
            _ => leaf(next),
        }
    }
    match shape(e, next) {
        Leaves::Leaf(_) => None,
        tuple => Some(tuple),
    }
}

/// The item of the source `e`, whose parts are the names `leaves` (see [`tuple_leaves`]), as a
/// tuple of values: each part that is a reference in Rust's types (an element of `x.iter()`)
/// read through it, so that a consumer keeping the item (`max_by`, `min_by`, `find`) keeps
/// numbers rather than borrows.
fn tuple_values(e: &Expr, leaves: &Leaves) -> TokenStream {
    match (strip(e), leaves) {
        (Expr::MethodCall(m), Leaves::Tuple(parts))
            if m.method == "enumerate" && parts.len() == 2 =>
        {
            let (c, v) = (parts[0].tokens(), tuple_values(&m.receiver, &parts[1]));
            quote!((#c, #v))
        }
        (Expr::MethodCall(m), Leaves::Tuple(parts))
            if m.method == "zip" && m.args.len() == 1 && parts.len() == 2 =>
        {
            let (a, b) =
                (tuple_values(&m.receiver, &parts[0]), tuple_values(&m.args[0], &parts[1]));
            quote!((#a, #b))
        }
        (Expr::MethodCall(m), _)
            if matches!(
                m.method.to_string().as_str(),
                "rev" | "skip" | "take" | "step_by" | "chain"
            ) =>
        {
            tuple_values(&m.receiver, leaves)
        }
        (other, Leaves::Leaf(l)) => {
            if source_by_ref(other) {
                quote!(*#l)
            } else {
                quote!(#l)
            }
        }
        (_, l) => l.tokens(),
    }
}

/// The `let`s binding a closure parameter's tuple pattern to the parts `leaves` (`|(i, v)|`,
/// `|((a, b), c)|`, `_` and `&v` parts), and the names bound; `None` if the pattern does not
/// take the tuple apart as it is shaped.
fn bind_leaves(p: &Pat, leaves: &Leaves, names: &mut Vec<syn::Ident>) -> Option<TokenStream> {
    match (p, leaves) {
        (Pat::Paren(pp), l) => bind_leaves(&pp.pat, l, names),
        (Pat::Tuple(t), Leaves::Tuple(parts))
            if t.elems.len() == parts.len()
                && !t.elems.iter().any(|e| matches!(e, Pat::Rest(_))) =>
        {
            let mut out = TokenStream::new();
            for (e, l) in t.elems.iter().zip(parts) {
                out.extend(bind_leaves(e, l, names)?);
            }
            Some(out)
        }
        (Pat::Wild(_), _) => Some(quote!()),
        (Pat::Ident(pi), l) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            names.push(pi.ident.clone());
            let value = l.tokens();
            Some(quote!(let #pi = #value;))
        }
        (Pat::Reference(r), Leaves::Leaf(l)) if r.mutability.is_none() => {
            let inner = &r.pat;
            Some(quote!(let #inner = *#l;))
        }
        _ => None,
    }
}

/// The test of a `filter` closure taking a tuple item apart (`|(i, v)| i % 2 == 0`,
/// `|&(i, v)| ..`): its names bound to the parts, each with one `*` fewer where the body
/// dereferences it (the predicate sees references to the parts); `None` for any other closure.
fn filter_on_leaves(p: &Expr, leaves: &Leaves) -> Option<TokenStream> {
    let Expr::Closure(c) = p else { return None };
    if c.inputs.len() != 1 || escapes(&c.body).is_some() {
        return None;
    }
    let (pat, strip_names) = match &c.inputs[0] {
        Pat::Reference(r) if r.mutability.is_none() => (&*r.pat, false),
        other => (other, true),
    };
    if !matches!(pat, Pat::Tuple(_)) {
        return None;
    }
    let mut names = Vec::new();
    let lets = bind_leaves(pat, leaves, &mut names)?;
    let mut body = (*c.body).clone();
    if strip_names {
        for n in &names {
            syn::visit_mut::VisitMut::visit_expr_mut(&mut StripDeref(n), &mut body);
        }
    }
    Some(quote!({ #lets #body }))
}

/// The element adaptors a chain may have after its source.
const ADAPTORS: &[&str] =
    &["map", "filter", "filter_map", "take_while", "skip_while", "scan", "copied", "cloned"];

/// Whether the chain `e` has an element adaptor ([`ADAPTORS`]) somewhere.
fn has_adaptor(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => {
            ADAPTORS.contains(&m.method.to_string().as_str()) || has_adaptor(&m.receiver)
        }
        _ => false,
    }
}

/// Whether the source `e` visits a part of its elements or visits them out of order (`rev`,
/// `skip`, `take`, `step_by`, `chain`), so that an `enumerate` after it counts the items it
/// visits rather than their indices.
fn narrowed(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "rev" | "skip" | "take" | "step_by" | "chain" => true,
            "zip" => narrowed(&m.receiver) || m.args.iter().any(narrowed),
            _ => false,
        },
        _ => false,
    }
}

/// Whether the source `e` makes views (`windows`, `chunks`) somewhere.
fn makes_views(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => {
            matches!(m.method.to_string().as_str(), "windows" | "chunks" | "chunks_exact")
                || makes_views(&m.receiver)
                || m.args.iter().any(makes_views)
        }
        _ => false,
    }
}

/// Whether the source `e` makes tuples (`zip`, `enumerate`) or views (`windows`, `chunks`).
fn makes_tuples_or_views(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "zip" | "enumerate" | "windows" | "chunks" | "chunks_exact"
            ) || makes_tuples_or_views(&m.receiver)
        }
        _ => false,
    }
}

/// The two keys a comparator's body compares: `L.partial_cmp(R)` (then `.unwrap()`,
/// `.expect(..)` or `.unwrap_or(..)`) or `L.total_cmp(R)`, with a leading `&` taken off `R`.
fn compared(e: &Expr) -> Option<(&Expr, &Expr)> {
    match strip(e) {
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => compared(e),
            _ => None,
        },
        Expr::MethodCall(m)
            if matches!(m.method.to_string().as_str(), "unwrap" | "expect" | "unwrap_or")
                && matches!(strip(&m.receiver), Expr::MethodCall(i) if i.method == "partial_cmp") =>
        {
            compared(&m.receiver)
        }
        Expr::MethodCall(m)
            if (m.method == "partial_cmp" || m.method == "total_cmp") && m.args.len() == 1 =>
        {
            let r = match strip(&m.args[0]) {
                Expr::Reference(r) if r.mutability.is_none() => &*r.expr,
                other => other,
            };
            Some((&m.receiver, r))
        }
        _ => None,
    }
}

/// A comparator closure `|a, b| l.partial_cmp(&r).unwrap()` (or `.expect(..)`,
/// `.unwrap_or(..)`, or `l.total_cmp(&r)`): its two parameters' names, the comparison's two
/// sides (`r` without its `&`), and whether NaNs are ordered (`total_cmp`, `unwrap_or`).
fn comparison(c: &syn::ExprClosure) -> Option<(&syn::Ident, &syn::Ident, &Expr, &Expr, bool)> {
    fn param(p: &Pat) -> Option<&syn::Ident> {
        match p {
            Pat::Type(pt) => param(&pt.pat),
            Pat::Reference(r) => param(&r.pat),
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(&pi.ident),
            _ => None,
        }
    }
    if c.inputs.len() != 2 {
        return None;
    }
    let (a, b) = (param(&c.inputs[0])?, param(&c.inputs[1])?);
    let mut body = strip(&c.body);
    if let Expr::Block(bl) = body
        && let [syn::Stmt::Expr(e, None)] = bl.block.stmts.as_slice()
    {
        body = strip(e);
    }
    let (cmp, total) = match body {
        // `Ord::cmp` (of integer keys, `|p, q| p.0.cmp(&q.0)`) never panics, as `total_cmp`.
        Expr::MethodCall(m) if m.method == "total_cmp" || m.method == "cmp" => (m, true),
        Expr::MethodCall(m)
            if matches!(m.method.to_string().as_str(), "unwrap" | "expect" | "unwrap_or") =>
        {
            match strip(&m.receiver) {
                Expr::MethodCall(i) if i.method == "partial_cmp" => (i, m.method == "unwrap_or"),
                _ => return None,
            }
        }
        _ => return None,
    };
    let right = match strip(cmp.args.first()?) {
        Expr::Reference(r) => strip(&r.expr),
        other => other,
    };
    Some((a, b, strip(&cmp.receiver), right, total))
}

/// The order a comparator of `sort_by` sorts in, if it compares the elements themselves:
/// `(descending, total)`, `total` when it does not panic on a NaN (`total_cmp`, or
/// `partial_cmp(..)` then `unwrap_or(..)`).
pub(super) fn sort_order(f: &Expr) -> Option<(bool, bool)> {
    fn name(e: &Expr) -> Option<&syn::Ident> {
        match strip(e) {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => name(&u.expr),
            Expr::Reference(r) => name(&r.expr),
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
            _ => None,
        }
    }
    match strip(f) {
        Expr::Path(p) => {
            let last = p.path.segments.last()?;
            (last.ident == "total_cmp").then_some((false, true))
        }
        Expr::Closure(c) => {
            let (a, b, left, right, total) = comparison(c)?;
            let (l, r) = (name(left)?, name(right)?);
            match (l == a && r == b, l == b && r == a) {
                (true, _) => Some((false, total)),
                (_, true) => Some((true, total)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A comparator of keys computed from the elements (`|&a, &b| x[a].partial_cmp(&x[b]).unwrap()`,
/// `|p, q| q.1.total_cmp(&p.1)`): the first parameter's pattern, the key as an expression of it
/// (the comparison's side that reads the first parameter), whether the order is descending
/// (the first parameter's key on the right) and whether it is `total_cmp`'s. `None` unless each
/// side reads one parameter only and the two sides are the same expression of their
/// parameters.
pub(super) fn sort_key(f: &Expr) -> Option<(Pat, Expr, bool, bool)> {
    use quote::ToTokens;
    fn renamed(e: &Expr, from: &syn::Ident, to: &syn::Ident) -> String {
        fn go(ts: TokenStream, from: &syn::Ident, to: &syn::Ident) -> TokenStream {
            ts.into_iter()
                .map(|t| match t {
                    proc_macro2::TokenTree::Ident(i) if i == *from => {
                        proc_macro2::TokenTree::Ident(to.clone())
                    }
                    proc_macro2::TokenTree::Group(g) => proc_macro2::TokenTree::Group(
                        proc_macro2::Group::new(g.delimiter(), go(g.stream(), from, to)),
                    ),
                    other => other,
                })
                .collect()
        }
        go(e.to_token_stream(), from, to).to_string()
    }
    fn mentions(e: &Expr, name: &syn::Ident) -> bool {
        fn go(ts: TokenStream, name: &syn::Ident) -> bool {
            ts.into_iter().any(|t| match t {
                proc_macro2::TokenTree::Ident(i) => i == *name,
                proc_macro2::TokenTree::Group(g) => go(g.stream(), name),
                _ => false,
            })
        }
        go(e.to_token_stream(), name)
    }
    let Expr::Closure(c) = strip(f) else { return None };
    let (a, b, left, right, total) = comparison(c)?;
    let (left, right) = (left.clone(), right.clone());
    let only = |e: &Expr, x: &syn::Ident, y: &syn::Ident| mentions(e, x) && !mentions(e, y);
    let key = c.inputs[0].clone();
    if only(&left, a, b)
        && only(&right, b, a)
        && renamed(&left, a, b) == right.to_token_stream().to_string()
    {
        return Some((key, left, false, total));
    }
    if only(&left, b, a)
        && only(&right, a, b)
        && renamed(&right, a, b) == left.to_token_stream().to_string()
    {
        return Some((key, right, true, total));
    }
    None
}

/// The first method of the source `e` that a `for` loop cannot plan, if any.
fn unplannable(e: &Expr) -> Option<&syn::Ident> {
    match strip(e) {
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            if matches!(
                name.as_str(),
                "iter" | "iter_mut" | "into_iter" | "windows" | "chunks" | "chunks_exact"
            ) {
                return None;
            }
            if !matches!(name.as_str(), "zip" | "enumerate" | "rev" | "step_by" | "skip" | "take") {
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

/// A closure bound by `let`: its syntax, and the locals its free names meant where it was
/// defined (copies of them, for a `move` closure), which its body keeps meaning wherever it is
/// called.
pub(super) struct ClosureDef {
    closure: syn::ExprClosure,
    captures: Vec<(syn::Ident, super::ir::Local)>,
    /// What each other free name called where it was defined: a closure, or nothing (so that
    /// a closure defined later under the same name, or the closure's own name, is not called).
    callees: Vec<(syn::Ident, Option<std::rc::Rc<ClosureDef>>)>,
    /// Refused where it was defined (the error is reported there): its calls lower to nothing.
    refused: bool,
}

impl Lower<'_> {
    /// `let name = |..| ..;`: checks the closure and records it for its calls.
    pub(super) fn define_closure(&mut self, name: &syn::Ident, c: &syn::ExprClosure) {
        let refused = |cx: &mut Self| {
            let def = ClosureDef {
                closure: c.clone(),
                captures: Vec::new(),
                callees: Vec::new(),
                refused: true,
            };
            if let Some(scope) = cx.closures.last_mut() {
                scope.push((name.clone(), Some(std::rc::Rc::new(def))));
            }
        };
        if let Some(bad) = escapes(&c.body) {
            self.refuse(
                bad,
                "`return` and `?` in a closure are not supported in #[differentiable] functions; \
                 compute the value and return it from the function",
            );
            return refused(self);
        }
        let by_ref = |p: &Pat| match p {
            Pat::Type(pt) => matches!(&*pt.pat, Pat::Reference(_)),
            p => matches!(p, Pat::Reference(_)),
        };
        if let Some(p) = c.inputs.iter().find(|p| by_ref(p)) {
            self.refuse(
                p,
                "a `&` pattern in the parameters of a closure bound by `let` is not supported; \
                 take the value (`|v: f64|`) and pass it",
            );
            return refused(self);
        }
        let mut params = Vec::new();
        for p in &c.inputs {
            pattern_names(p, &mut params);
        }
        let mut names = Vec::new();
        free_names(&c.body, &mut names);
        let span = c.span();
        let mut captures: Vec<(syn::Ident, super::ir::Local)> = Vec::new();
        let mut callees: Vec<(syn::Ident, Option<std::rc::Rc<ClosureDef>>)> = Vec::new();
        for n in names {
            if params.contains(&n)
                || captures.iter().any(|(m, _)| *m == n)
                || callees.iter().any(|(m, _)| *m == n)
            {
                continue;
            }
            let Some(l) = self.lookup(&n) else {
                callees.push((n.clone(), self.lookup_closure(&n)));
                continue;
            };
            let l = if c.capture.is_some() {
                // A `move` closure keeps the value the name had here.
                let t = self.temp(span);
                let value = super::ir::Operand::Use(super::ir::Place::local(l));
                self.assign(super::ir::Place::local(t), super::ir::Rvalue::Use(value), span);
                t
            } else {
                l
            };
            captures.push((n, l));
        }
        let def =
            std::rc::Rc::new(ClosureDef { closure: c.clone(), captures, callees, refused: false });
        if let Some(scope) = self.closures.last_mut() {
            scope.push((name.clone(), Some(def)));
        }
    }

    /// The closure `name` calls, if it names one in scope.
    pub(super) fn lookup_closure(&self, name: &syn::Ident) -> Option<std::rc::Rc<ClosureDef>> {
        self.closures.iter().rev().flat_map(|s| s.iter().rev()).find(|(n, _)| n == name)?.1.clone()
    }

    /// A call of a closure bound by `let`: the arguments evaluated where the call is, then the
    /// body with the parameters bound to them and the free names to what they meant where the
    /// closure was defined.
    pub(super) fn call_closure(
        &mut self,
        def: &ClosureDef,
        call: &syn::ExprCall,
    ) -> super::ir::Operand {
        let c = &def.closure;
        if def.refused {
            return super::lower::unit();
        }
        if call.args.len() != c.inputs.len() {
            return self
                .refuse(&call.args, &format!("this closure takes {} argument(s)", c.inputs.len()));
        }
        // A parameter typed `&f64` (a reference to a number) given `&e`: bound to the number
        // `e`, and `*v` reads it (the rules take numbers by value).
        let number_ref = |p: &Pat| match p {
            Pat::Type(pt) => match &*pt.ty {
                syn::Type::Reference(r)
                    if r.mutability.is_none() && super::reverse::scalar_type(&r.elem) =>
                {
                    Some((*r.elem).clone())
                }
                _ => None,
            },
            _ => None,
        };
        let exprs: Vec<Expr> = c
            .inputs
            .iter()
            .zip(call.args.iter())
            .map(|(p, a)| match (number_ref(p), strip_parens(a)) {
                (Some(_), Expr::Reference(r)) if r.mutability.is_none() => (*r.expr).clone(),
                _ => a.clone(),
            })
            .collect();
        let args = self.lower_operands(exprs.iter());
        let span = call.span();
        self.scoped(|cx| {
            if let Some(scope) = cx.closures.last_mut() {
                scope.extend(def.callees.iter().cloned());
            }
            for (n, l) in &def.captures {
                cx.bind(n.clone(), *l);
            }
            for (p, a) in c.inputs.iter().zip(args) {
                let number = number_ref(p);
                let (p, ty) = match p {
                    Pat::Type(pt) => (&*pt.pat, Some((*pt.ty).clone())),
                    p => (p, None),
                };
                let by_number = number.is_some();
                cx.bind_pattern(p, number.or(ty), a, span);
                if by_number
                    && let Pat::Ident(pi) = p
                    && let Some(l) = cx.lookup(&pi.ident)
                {
                    cx.number_refs.push(l);
                }
            }
            cx.lower_expr(&c.body)
        })
    }
}

/// The names a pattern binds.
pub(super) fn pattern_names(p: &Pat, out: &mut Vec<syn::Ident>) {
    match p {
        Pat::Ident(pi) => out.push(pi.ident.clone()),
        Pat::Type(pt) => pattern_names(&pt.pat, out),
        Pat::Paren(pp) => pattern_names(&pp.pat, out),
        Pat::Reference(r) => pattern_names(&r.pat, out),
        Pat::Tuple(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| pattern_names(&f.pat, out)),
        _ => {}
    }
}

/// The single-segment names an expression reads (a superset of its free variables: names it
/// binds itself are included, and the caller skips those that resolve to nothing).
pub(super) fn free_names(e: &Expr, out: &mut Vec<syn::Ident>) {
    use syn::visit::Visit;
    struct Names<'o>(&'o mut Vec<syn::Ident>);
    impl<'a> Visit<'a> for Names<'_> {
        fn visit_path(&mut self, p: &'a syn::Path) {
            if let Some(i) = p.get_ident() {
                self.0.push(i.clone());
            }
            syn::visit::visit_path(self, p);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            // `println!("{x}", y)`: every identifier in the tokens may name a local.
            fn idents(ts: TokenStream, out: &mut Vec<syn::Ident>) {
                for tt in ts {
                    match tt {
                        proc_macro2::TokenTree::Ident(i) => out.push(i),
                        proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                        _ => {}
                    }
                }
            }
            idents(m.tokens.clone(), self.0);
        }
    }
    Names(out).visit_expr(e);
}

#[cfg(test)]
mod tests {
    /// A closure naming itself (which Rust refuses) or a later closure of the same name is not
    /// inlined into itself: the expansion ends.
    #[test]
    fn a_closure_never_inlines_itself() {
        let own = "fn f(x: f64) -> f64 { let g = |v: f64| g(v) + 1.0; g(x) }";
        let _ = crate::differentiable::expand_source(own);
        let later = "fn f(x: f64) -> f64 {
            let g = |v: f64| v * 2.0;
            let g = |v: f64| g(v) + 1.0;
            g(g(x))
        }";
        let out = crate::differentiable::expand_source(later);
        assert!(!out.contains("compile_error"), "{out}");
    }

    /// Chains and closures lower to loops and inlined code, with no call of the closures left.
    #[test]
    fn chains_and_closures_expand_to_plain_code() {
        let f = "fn f(x: &[f64], k: f64) -> f64 {
            let sq = |v: f64| k * v * v;
            x.iter().map(|v| sq(*v)).sum::<f64>() + (0..3).map(|i| i as f64).product::<f64>()
        }";
        let out = crate::differentiable::expand_source(f);
        assert!(!out.contains("compile_error"), "{out}");
        // Only the primal function, emitted as written, calls `sq`.
        assert_eq!(out.matches("sq (").count(), 1, "{out}");
    }
}

/// `for (w, v) in x.chunks(k).zip(y.iter())` (the view on either side; `&y`, `y` of a slice,
/// `y.iter_mut()`, `&mut y` on the other) as the view's loop enumerated, the other side's element read at the
/// count, stopping at the shorter of the two as `zip` does:
/// `for (k, w) in x.chunks(k).enumerate() { if k >= y.len() { break; } let v = &y[k]; .. }`.
fn zipped_view(f: &syn::ExprForLoop) -> Option<syn::ExprForLoop> {
    let Expr::MethodCall(z) = strip(&f.expr) else { return None };
    let Pat::Tuple(t) = &*f.pat else { return None };
    if z.method != "zip" || z.args.len() != 1 || t.elems.len() != 2 {
        return None;
    }
    let is_view = |e: &Expr| {
        matches!(strip(e), Expr::MethodCall(v) if v.args.len() == 1
            && ["windows", "chunks", "chunks_exact", "chunks_mut", "chunks_exact_mut"]
                .contains(&v.method.to_string().as_str()))
    };
    let elements = |e: &Expr| -> Option<(Expr, bool)> {
        match strip(e) {
            Expr::MethodCall(c)
                if c.args.is_empty() && (c.method == "iter" || c.method == "iter_mut") =>
            {
                Some(((*c.receiver).clone(), c.method == "iter_mut"))
            }
            Expr::Reference(r) => Some(((*r.expr).clone(), r.mutability.is_some())),
            // A slice by name (`zip(y)` of `y: &[f64]`): its elements by reference.
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                Some((strip(e).clone(), false))
            }
            _ => None,
        }
    };
    let (view, other, pv, po) = if is_view(&z.receiver) {
        (&*z.receiver, &z.args[0], &t.elems[0], &t.elems[1])
    } else if is_view(&z.args[0]) {
        (&z.args[0], &*z.receiver, &t.elems[1], &t.elems[0])
    } else {
        return None;
    };
    let (ys, mutable) = elements(other)?;
    let k = syn::Ident::new("__mooncake_zip_k", Span::mixed_site());
    let r = if mutable { quote!(&mut) } else { quote!(&) };
    let body = &f.body;
    let body: syn::Block = syn::parse_quote!({
        if #k >= (#ys).len() {
            break;
        }
        let #po = #r (#ys)[#k];
        #body
    });
    let pat: Pat = syn::parse_quote!((#k, #pv));
    let expr: Expr = syn::parse_quote!(#view.enumerate());
    Some(syn::ExprForLoop { pat: Box::new(pat), expr: Box::new(expr), body, ..f.clone() })
}

/// How a view of a buffer steps along it.
#[derive(Clone, Copy, PartialEq)]
enum View {
    Windows,
    Chunks,
    ChunksExact,
}

impl Lower<'_> {
    /// `for w in x.windows(k) { .. w[j] .. w.len() .. }` (also `chunks(k)`, `chunks_exact(k)`)
    /// as the index loop it stands for: `w[j]` read as `x[start + j]` and `w.len()` as the
    /// view's length. The view must only be indexed and measured in the body, and `x` must be
    /// a name or a field; `None` if `f` is not such a loop.
    pub(super) fn lower_views(&mut self, f: &syn::ExprForLoop) -> Option<super::ir::Operand> {
        if let Some(g) = zipped_view(f) {
            return Some(self.lower_for(&g));
        }
        let Expr::MethodCall(m) = strip(&f.expr) else { return None };
        // `for (b, w) in x.chunks(k).enumerate()`: the view's index is the count.
        let (m, pat, counter) = match (strip(&m.receiver), &*f.pat) {
            (Expr::MethodCall(inner), Pat::Tuple(t))
                if m.method == "enumerate" && m.args.is_empty() && t.elems.len() == 2 =>
            {
                (inner, &t.elems[1], Some(&t.elems[0]))
            }
            _ => (m, &*f.pat, None),
        };
        let view = match m.method.to_string().as_str() {
            "windows" => View::Windows,
            "chunks" | "chunks_mut" => View::Chunks,
            "chunks_exact" | "chunks_exact_mut" => View::ChunksExact,
            _ => return None,
        };
        let span = m.method.span();
        let refuse = |cx: &mut Self, at: &dyn quote::ToTokens, what: &str| {
            Some(cx.refuse(
                at,
                &format!(
                    "`.{}(k)` is supported as the iterator of a `for` loop (or the source of a \
                     chain) whose view is indexed (`w[j]`, `w[a..b]`), measured (`w.len()`), \
                     iterated or passed on, not rebound or named in a macro, over a buffer named \
                     by a variable or a field; {what}",
                    m.method
                ),
            ))
        };
        if m.args.len() != 1 {
            return refuse(self, &m.method, "give one length");
        }
        let Pat::Ident(pi) = pat else {
            return refuse(self, pat, "bind the view to a name");
        };
        // The views of a range of a buffer (`x[a..b].chunks(k)`, as the views of a view lower
        // to: `for c in x.chunks(4) { for r in c.chunks(2) { .. } }`): of the buffer, offset.
        // The range's start and end (its end `None` for a whole buffer).
        let (base, offset, end): (&Expr, TokenStream, Option<TokenStream>) =
            match strip(&m.receiver) {
                Expr::Index(ix)
                    if matches!(strip(&ix.expr), Expr::Path(_) | Expr::Field(_))
                        && matches!(strip(&ix.index), Expr::Range(r)
                            if matches!(r.limits, syn::RangeLimits::HalfOpen(_))) =>
                {
                    let Expr::Range(r) = strip(&ix.index) else { unreachable!() };
                    let b = &ix.expr;
                    let lo = match &r.start {
                        Some(lo) => quote!((#lo)),
                        None => quote!(0usize),
                    };
                    let hi = match &r.end {
                        Some(hi) => quote!((#hi)),
                        None => quote!(#b.len()),
                    };
                    (&**b, lo, Some(hi))
                }
                Expr::Path(_) | Expr::Field(_) => (&*m.receiver, quote!(0usize), None),
                _ => return refuse(self, &m.receiver, "bind the buffer to a variable first"),
            };
        let (x, k, w) = (base, &m.args[0], &pi.ident);
        let start = syn::Ident::new("__mooncake_start", Span::mixed_site());
        let len = syn::Ident::new("__mooncake_len", Span::mixed_site());
        let mut body = f.body.clone();
        let mutable = m.method.to_string().ends_with("_mut");
        let mut rw = ViewUses { view: w, x, start: &start, len: &len, mutable, bad: None };
        syn::visit_mut::VisitMut::visit_block_mut(&mut rw, &mut body);
        if let Some(bad) = rw.bad {
            return refuse(self, &bad, "here it is used otherwise");
        }
        let n = syn::Ident::new("__mooncake_n", Span::mixed_site());
        let o = syn::Ident::new("__mooncake_o", Span::mixed_site());
        let kk = syn::Ident::new("__mooncake_k", Span::mixed_site());
        let s = syn::Ident::new("__mooncake_s", Span::mixed_site());
        let (count, start_of, len_of) = match view {
            View::Windows => (
                quote_spanned!(span=> if #n >= #kk { #n - #kk + 1 } else { 0 }),
                quote_spanned!(span=> #s),
                quote_spanned!(span=> #kk),
            ),
            View::ChunksExact => (
                quote_spanned!(span=> #n / #kk),
                quote_spanned!(span=> #s * #kk),
                quote_spanned!(span=> #kk),
            ),
            View::Chunks => (
                quote_spanned!(span=> (#n + #kk - 1) / #kk),
                quote_spanned!(span=> #s * #kk),
                quote_spanned!(span=> (#n + #o - #start).min(#kk)),
            ),
        };
        let label = &f.label;
        let stmts = &body.stmts;
        let count_binding = match counter {
            Some(c) => quote_spanned!(span=> let #c = #s;),
            None => quote!(),
        };
        let n_of = match &end {
            // A range of a buffer: its bounds checked as slicing checks them.
            Some(hi) => quote_spanned!(span=> #x[#o..#hi].len()),
            None => quote_spanned!(span=> #x.len()),
        };
        let tokens = quote_spanned!(span=> {
            let #kk: usize = #k;
            assert!(#kk != 0, "window or chunk size must be non-zero");
            let #o: usize = #offset;
            let #n: usize = #n_of;
            #label for #s in 0..#count {
                let #start: usize = #o + #start_of;
                let #len: usize = #len_of;
                #count_binding
                #(#stmts)*
            }
        });
        match syn::parse2::<Expr>(tokens) {
            Ok(e) => Some(self.lower_expr(&e)),
            Err(_) => refuse(self, &f.expr, "write an index loop"),
        }
    }
}

/// Rewrites the uses of a view `w` in a loop body: `w[j]` to `x[start + (j)]`, `w.len()` to
/// the length; records any other use (or a rebinding of the name) in `bad`.
struct ViewUses<'a> {
    view: &'a syn::Ident,
    x: &'a Expr,
    start: &'a syn::Ident,
    len: &'a syn::Ident,
    /// Whether the views are `&mut` (`chunks_mut`).
    mutable: bool,
    bad: Option<TokenStream>,
}

impl ViewUses<'_> {
    fn is_view(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.view))
    }
}

impl syn::visit_mut::VisitMut for ViewUses<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Index(ix) = e
            && self.is_view(&ix.expr)
        {
            self.visit_expr_mut(&mut ix.index);
            let (x, start, len, j) = (self.x, self.start, self.len, &ix.index);
            let span = ix.bracket_token.span.join();
            *e = match strip(j) {
                // `w[a..b]`: the same range of `x`, shifted.
                Expr::Range(r) => {
                    let lo = match &r.start {
                        Some(lo) => quote!(#start + (#lo)),
                        None => quote!(#start),
                    };
                    let hi = match (&r.end, &r.limits) {
                        (Some(hi), syn::RangeLimits::Closed(_)) => quote!(#start + (#hi) + 1),
                        (Some(hi), _) => quote!(#start + (#hi)),
                        (None, _) => quote!(#start + #len),
                    };
                    // Bounded by the view, as slicing the view would be.
                    let end = syn::Ident::new("__mooncake_end", Span::mixed_site());
                    syn::parse_quote_spanned!(span=> #x[(#lo)..{
                        let #end: usize = #hi;
                        assert!(
                            #end <= #start + #len,
                            "range end index {} out of range for slice of length {}",
                            #end - #start,
                            #len
                        );
                        #end
                    }])
                }
                // Bounded by the view: an index past it panics as indexing the view does,
                // rather than reading the buffer's next element.
                _ => {
                    let at = syn::Ident::new("__mooncake_at", Span::mixed_site());
                    syn::parse_quote_spanned!(span=> #x[{
                        let #at: usize = #j;
                        assert!(
                            #at < #len,
                            "index out of bounds: the len is {} but the index is {}",
                            #len,
                            #at
                        );
                        #start + #at
                    }])
                }
            };
            return;
        }
        if let Expr::MethodCall(mc) = e
            && mc.method == "len"
            && mc.args.is_empty()
            && self.is_view(&mc.receiver)
        {
            let len = self.len;
            *e = syn::parse_quote!(#len);
            return;
        }
        let (x, start, len) = (self.x, self.start, self.len);
        // Any other method (`w.iter().sum()`): on the sub-slice the view is.
        if let Expr::MethodCall(mc) = e
            && self.is_view(&mc.receiver)
        {
            for a in mc.args.iter_mut() {
                self.visit_expr_mut(a);
            }
            *mc.receiver = syn::parse_quote!(#x[#start..(#start + #len)]);
            return;
        }
        // Passed on (`g(w)`, `&w[..]` is indexed above): the sub-slice, borrowed as the view is.
        if self.is_view(e) {
            *e = if self.mutable {
                syn::parse_quote!((&mut #x[#start..(#start + #len)]))
            } else {
                syn::parse_quote!((&#x[#start..(#start + #len)]))
            };
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
    fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
        if p.ident == *self.view {
            let i = &p.ident;
            self.bad.get_or_insert_with(|| quote!(#i));
        }
    }
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        // Named as an argument, or captured by a format string (`"{w:?}"`).
        let open = format!("{{{}", self.view);
        let mentions = m.tokens.clone().into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == *self.view,
            proc_macro2::TokenTree::Literal(l) => {
                let text = l.to_string();
                text.match_indices(&open)
                    .any(|(k, _)| matches!(text[k + open.len()..].chars().next(), Some('}' | ':')))
            }
            _ => false,
        });
        if mentions {
            self.bad.get_or_insert_with(|| quote!(#m));
        }
    }
}

/// The closure of `scan` with its value's `Some(..)` taken off (`|acc, &v| { *acc += v;
/// Some(*acc) }` gives `*acc` as the item); `None` if its value is not `Some(..)` or it names
/// `None` (a scan that stops).
fn scan_closure(f: &Expr) -> Option<Expr> {
    let Expr::Closure(c) = strip(f) else { return None };
    fn names_none(ts: TokenStream) -> bool {
        ts.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "None",
            proc_macro2::TokenTree::Group(g) => names_none(g.stream()),
            _ => false,
        })
    }
    let body = &c.body;
    if c.inputs.len() != 2 || names_none(quote!(#body)) {
        return None;
    }
    fn unwrap_some(e: &Expr) -> Option<Expr> {
        match strip(e) {
            Expr::Call(call)
                if call.args.len() == 1
                    && matches!(&*call.func, Expr::Path(p) if p.path.is_ident("Some")) =>
            {
                Some(call.args[0].clone())
            }
            _ => None,
        }
    }
    let mut c = c.clone();
    let body = match &*c.body {
        Expr::Block(b) => {
            let mut b = b.clone();
            let Some(syn::Stmt::Expr(last, None)) = b.block.stmts.last_mut() else { return None };
            *last = unwrap_some(last)?;
            Expr::Block(b)
        }
        other => unwrap_some(other)?,
    };
    c.body = Box::new(body);
    Some(Expr::Closure(c))
}

/// Whether the consumer `m` (`max_by`, `min_by`, `find`, `reduce`) keeps an item that Rust
/// types as a tuple holding references (`x.iter().enumerate()`'s `(usize, &f64)`), which the
/// lowering keeps as a tuple of values (see `tuple_values`): no `map` or `copied` makes the
/// items before it, and the source makes tuples, not views.
/// Whether the `Option` the consumer `m` returns holds values in Rust's types (not references
/// to items, nor tuples of them), so that it can be built as it is.
fn holds_values(m: &syn::ExprMethodCall) -> bool {
    let by_ref = matches!(m.method.to_string().as_str(), "max_by" | "min_by" | "reduce" | "find")
        && source_by_ref_items(m);
    !by_ref && !keeps_tuple_of_refs(m)
}

pub(super) fn keeps_tuple_of_refs(m: &syn::ExprMethodCall) -> bool {
    if !matches!(m.method.to_string().as_str(), "max_by" | "min_by" | "find" | "reduce") {
        return false;
    }
    let mut e: &Expr = &m.receiver;
    while let Expr::MethodCall(a) = strip(e) {
        match a.method.to_string().as_str() {
            "map" | "filter_map" | "scan" | "copied" | "cloned" => return false,
            "filter" | "take_while" | "skip_while" => e = &a.receiver,
            _ => break,
        }
    }
    tuple_leaves(e, &mut 0).is_some() && !makes_views(e)
}

/// A pattern taking apart such a kept tuple of values (see [`keeps_tuple_of_refs`]): `&v`
/// parts bind `v` itself; with the names bound, whose `*`s the code that uses them drops (see
/// [`StripDerefs`]).
pub(super) fn values_pattern(p: &Pat) -> (Pat, Vec<syn::Ident>) {
    fn walk(p: &Pat, names: &mut Vec<syn::Ident>) -> Pat {
        match p {
            Pat::Reference(r) => walk(&r.pat, names),
            Pat::Tuple(t) => {
                let mut t = t.clone();
                for e in t.elems.iter_mut() {
                    *e = walk(e, names);
                }
                Pat::Tuple(t)
            }
            Pat::Paren(pp) => walk(&pp.pat, names),
            Pat::Ident(pi) => {
                names.push(pi.ident.clone());
                p.clone()
            }
            // `let Some((i, &m)) = .. else { .. };`
            Pat::TupleStruct(ts) if ts.path.is_ident("Some") => {
                let mut ts = ts.clone();
                for e in ts.elems.iter_mut() {
                    *e = walk(e, names);
                }
                Pat::TupleStruct(ts)
            }
            other => other.clone(),
        }
    }
    let mut names = Vec::new();
    let p = walk(p, &mut names);
    (p, names)
}

/// Drops the `*` of `*v` and of `*v.k` for each name `v` (items kept as values where Rust has
/// references to them); stops at a closure or a `let` that rebinds one of the names.
pub(super) struct StripDerefs<'a>(pub(super) &'a [syn::Ident]);

impl syn::visit_mut::VisitMut for StripDerefs<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Unary(u) = e
            && matches!(u.op, syn::UnOp::Deref(_))
        {
            let base = match strip(&u.expr) {
                Expr::Field(f) => strip(&f.base),
                other => other,
            };
            if matches!(base, Expr::Path(p) if p.qself.is_none()
                && p.path.get_ident().is_some_and(|i| self.0.contains(i)))
            {
                *e = (*u.expr).clone();
                self.visit_expr_mut(e);
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Takes one `*` off every dereference of the name `v` (`**v` becomes `*v`, `*v` becomes `v`),
/// for a filter's parameter bound to the item rather than to a reference to it. A closure
/// inside that rebinds the name is left alone.
struct StripDeref<'a>(&'a syn::Ident);

impl syn::visit_mut::VisitMut for StripDeref<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Unary(u) = e
            && matches!(u.op, syn::UnOp::Deref(_))
            && matches!(strip(&u.expr), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.0))
        {
            *e = (*u.expr).clone();
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
}

/// `body` with each call of the free function `zip(a, b)` (`std::iter::zip`, `iter::zip`, or
/// `zip` brought in by `use`) written as the method chain `a.iter().zip(b.iter())`, which
/// chains and `for` loops read (an operand that is already an iterator is kept as it is). A
/// body that declares a function of its own named `zip` is left alone.
pub(super) fn free_zips(body: &syn::Block) -> syn::Block {
    struct Zips;
    impl syn::visit_mut::VisitMut for Zips {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            syn::visit_mut::visit_expr_mut(self, e);
            let Expr::Call(c) = e else { return };
            let Expr::Path(p) = &*c.func else { return };
            let names: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let free_zip = p.qself.is_none()
                && matches!(
                    names.iter().map(String::as_str).collect::<Vec<_>>().as_slice(),
                    ["zip"] | ["iter", "zip"] | ["std" | "core", "iter", "zip"]
                );
            if !free_zip || c.args.len() != 2 {
                return;
            }
            let side = |a: &Expr| -> Expr {
                if is_iterator(a) {
                    a.clone()
                } else {
                    syn::parse_quote_spanned!(a.span()=> (#a).iter())
                }
            };
            let (a, b) = (side(&c.args[0]), side(&c.args[1]));
            *e = syn::parse_quote_spanned!(c.func.span()=> #a.zip(#b));
        }
    }
    let declares_zip = body
        .stmts
        .iter()
        .any(|s| matches!(s, syn::Stmt::Item(syn::Item::Fn(f)) if f.sig.ident == "zip"));
    let mut body = body.clone();
    if !declares_zip {
        syn::visit_mut::VisitMut::visit_block_mut(&mut Zips, &mut body);
    }
    body
}
