//! Sub-slices (`&x[a..b]`, `&mut x[a..b]`, `x[a..].iter()`, `x.split_at(k)`), lowered as
//! copies: `&x[a..b]` reads the range into a fresh buffer (`__sub_to_vec`, whose rules add the
//! copy's gradient back into the range), which is what a shared borrow means while it lives
//! (nothing can write `x` then). `&mut x[a..b]` lends a copy the same way and writes it back
//! (`__sub_assign`) right after the call, method or loop that took it, before anything else can
//! read `x`. A `&mut` part kept in a local (`let (a, b) = x.split_at_mut(k);`, `let w = &mut
//! x[a..b];`) is not a copy: the rest of the block reads and writes it through `x` at its offset
//! (see [`PartView`]).

use super::ir::{Local, Operand, Place, Rvalue};
use super::lower::Lower;
use proc_macro2::Span;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// `e` without parentheses around it.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// The range of `x[range]`, if the index is one.
pub(super) fn range_index(ix: &syn::ExprIndex) -> Option<&syn::ExprRange> {
    match strip(&ix.index) {
        Expr::Range(r) => Some(r),
        _ => None,
    }
}

/// Whether `e` is a sub-slice `x[a..b]`.
pub(super) fn is_sub_slice(e: &Expr) -> bool {
    matches!(strip(e), Expr::Index(ix) if range_index(ix).is_some())
}

/// A sub-slice copied and waiting to be written back: the buffer, the range's start and the
/// copy.
pub(super) struct WriteBack {
    base: Place,
    start: Operand,
    copy: Local,
}

impl Lower<'_> {
    /// The buffer, start and end of the sub-slice `x[range]` (the end `x.len()` when open, one
    /// past `b` for `..=b`).
    fn sub_slice_bounds(
        &mut self,
        ix: &syn::ExprIndex,
        r: &syn::ExprRange,
    ) -> (Place, Operand, Operand) {
        let span = ix.span();
        let base = self.place_of(&ix.expr);
        let start = match &r.start {
            Some(s) => self.lower_expr(s),
            None => Operand::Const(quote!(0usize)),
        };
        let end = match &r.end {
            Some(e) => {
                let e = self.lower_expr(e);
                if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                    self.emit(
                        Rvalue::Binary(super::ir::BinOp::Add, e, Operand::Const(quote!(1usize))),
                        span,
                    )
                } else {
                    e
                }
            }
            None => {
                let len = syn::Ident::new("len", span);
                self.emit(
                    Rvalue::Method { receiver: base.clone(), method: len, args: Vec::new() },
                    span,
                )
            }
        };
        (base, start, end)
    }

    /// The place of the sub-slice `x[range]`: a copy of the range (see the module). When
    /// `mutable`, the copy is written back at the next [`Lower::flush_write_backs`] that covers it.
    pub(super) fn sub_slice(&mut self, ix: &syn::ExprIndex, mutable: bool) -> Option<Place> {
        let r = range_index(ix)?;
        let span = ix.span();
        let (base, start, end) = self.sub_slice_bounds(ix, r);
        // The start is read again by the write-back: kept in a local of its own.
        let start = match start {
            Operand::Const(c) => Operand::Const(c),
            other => {
                let t = self.temp(span);
                self.assign(Place::local(t), Rvalue::Use(other), span);
                Operand::Use(Place::local(t))
            }
        };
        let method = syn::Ident::new("__sub_to_vec", span);
        let copy = self.temp(span);
        self.assign(
            Place::local(copy),
            Rvalue::Method { receiver: base.clone(), method, args: vec![start.clone(), end] },
            span,
        );
        if mutable {
            self.write_backs.push(WriteBack { base, start, copy });
        } else {
            self.slice_copies.insert(copy);
        }
        Some(Place::local(copy))
    }

    /// The arguments of a call with each name bound to a sub-slice (`let s = &x[a..b];`, which
    /// names the copy) lent as `&copy`, as the reference it stands for.
    pub(super) fn lend_slice_copies(&self, args: Vec<Operand>) -> Vec<Operand> {
        args.into_iter()
            .map(|a| match a {
                Operand::Use(p)
                    if p.projections.is_empty() && self.slice_copies.contains(&p.local) =>
                {
                    Operand::Ref(p, false)
                }
                other => other,
            })
            .collect()
    }

    /// `x[a..b].len()`: `b - a`, with no copy.
    pub(super) fn sub_slice_len(&mut self, e: &Expr) -> Option<Operand> {
        let Expr::Index(ix) = strip(e) else { return None };
        let r = range_index(ix)?;
        let (_, start, end) = self.sub_slice_bounds(ix, r);
        Some(self.emit(Rvalue::Binary(super::ir::BinOp::Sub, end, start), ix.span()))
    }

    /// Writes back the sub-slices lent mutably since `mark` (`self.write_backs.len()` before
    /// the call, method or loop that took them).
    pub(super) fn flush_write_backs(&mut self, mark: usize, span: Span) {
        if self.write_backs.len() <= mark {
            return;
        }
        let pending: Vec<WriteBack> = self.write_backs.drain(mark..).collect();
        for w in pending.into_iter().rev() {
            let method = syn::Ident::new("__sub_assign", span);
            let args = vec![w.start, Operand::Ref(Place::local(w.copy), false)];
            self.emit(Rvalue::Method { receiver: w.base, method, args }, span);
        }
    }

    /// `let (a, b) = x.split_at(k);`: `let a = &x[..k]; let b = &x[k..];` (`k` evaluated once);
    /// `None` for any other `let`.
    pub(super) fn lower_split_at(&mut self, local: &syn::Local) -> Option<()> {
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        let Expr::MethodCall(m) = strip(&init.expr) else { return None };
        if !(m.method == "split_at" || m.method == "split_at_mut") || m.args.len() != 1 {
            return None;
        }
        if m.method == "split_at_mut" {
            // The names it binds stay known, so that their uses report nothing more.
            let mut names = Vec::new();
            super::chains::pattern_names(&local.pat, &mut names);
            for n in names {
                let l = self.new_local(Some(n.clone()), None, n.span());
                self.bind(n, l);
            }
            self.refuse(
                &m.method,
                "`split_at_mut` is supported bound to two names (`let (a, b) = x.split_at_mut(k);`) \
                 of a buffer named by a variable or a field; otherwise write through the buffer \
                 with indices (`x[i]`, `x[k + j]`)",
            );
            return Some(());
        }
        let syn::Pat::Tuple(t) = &local.pat else {
            self.refuse(
                &local.pat,
                "bind `split_at`'s halves by a tuple pattern: `let (a, b) = ..`",
            );
            return Some(());
        };
        if t.elems.len() != 2 {
            self.refuse(
                &local.pat,
                "bind `split_at`'s halves by a tuple pattern: `let (a, b) = ..`",
            );
            return Some(());
        }
        let (x, k) = (&m.receiver, &m.args[0]);
        let (a, b) = (&t.elems[0], &t.elems[1]);
        let kn = syn::Ident::new("__mooncake_split", Span::mixed_site());
        let tokens = quote!({
            let #kn: usize = #k;
            assert!(#kn <= #x.len(), "mid > len");
            (&#x[..#kn], &#x[#kn..])
        });
        // The halves are bound in the enclosing scope: lowered part by part.
        let Ok(Expr::Block(block)) = syn::parse2::<Expr>(tokens) else {
            self.refuse(&m.method, "this use of `split_at` is not supported");
            return Some(());
        };
        let stmts = &block.block.stmts;
        let value = self.scoped_halves(stmts);
        let (ha, hb) = value;
        self.bind_pattern(a, None, ha, local.span());
        self.bind_pattern(b, None, hb, local.span());
        Some(())
    }

    /// Lowers `let k = ..; assert!(..); (&x[..k], &x[k..])` (the statements `lower_split_at`
    /// builds) and returns the two halves.
    fn scoped_halves(&mut self, stmts: &[syn::Stmt]) -> (Operand, Operand) {
        let mut halves = (super::lower::unit(), super::lower::unit());
        self.scoped(|cx| {
            for s in stmts {
                match s {
                    syn::Stmt::Local(l) => cx.lower_let_stmt(l),
                    syn::Stmt::Macro(m) => {
                        let e =
                            Expr::Macro(syn::ExprMacro { attrs: Vec::new(), mac: m.mac.clone() });
                        cx.lower_expr(&e);
                    }
                    syn::Stmt::Expr(Expr::Tuple(t), None) if t.elems.len() == 2 => {
                        halves = (cx.lower_expr(&t.elems[0]), cx.lower_expr(&t.elems[1]));
                    }
                    _ => {}
                }
            }
        });
        halves
    }
}

/// A `&mut` part of a buffer kept in a local: a half of `let (a, b) = x.split_at_mut(k);` or
/// `let r = &mut x[lo..hi];`. The rest of the block sees it through `x` (see [`ViewNames`]):
/// `a[j]` is `x[start + j]` (checked against the part's length first, as the primal checks
/// it), `a.len()` is the length, and any other use (`g(a)`, `a.iter_mut()`, `a.fill(..)`) is
/// the sub-slice `x[start..start + len]`, which the call or method takes as a copy written back
/// after it (see the module).
pub(super) struct PartView {
    name: syn::Ident,
    base: Expr,
    start: syn::Ident,
    len: syn::Ident,
}

impl Lower<'_> {
    /// `let (a, b) = x.split_at_mut(k);` or `let r = &mut x[lo..hi];` with `x` a name or a field:
    /// the statements that bind the parts' starts and lengths (each evaluated once, `k` checked
    /// as `split_at_mut` checks it), and the parts; `None` for any other `let`. `n` makes the
    /// names unique.
    pub(super) fn part_views(
        &mut self,
        local: &syn::Local,
        n: usize,
    ) -> Option<(Vec<syn::Stmt>, Vec<PartView>)> {
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        let named = |e: &Expr| matches!(strip(e), Expr::Path(_) | Expr::Field(_));
        let id = |what: &str, k: usize| {
            syn::Ident::new(&format!("__mooncake_{what}{n}_{k}"), Span::mixed_site())
        };
        match strip(&init.expr) {
            Expr::MethodCall(m) if m.method == "split_at_mut" && m.args.len() == 1 => {
                let syn::Pat::Tuple(t) = &local.pat else { return None };
                let (Some(Pat::Ident(a)), Some(Pat::Ident(b)), 2) =
                    (t.elems.first(), t.elems.get(1), t.elems.len())
                else {
                    return None;
                };
                if !named(&m.receiver) || a.by_ref.is_some() || b.by_ref.is_some() {
                    return None;
                }
                let (x, k) = (strip(&m.receiver).clone(), &m.args[0]);
                let (sa, la, sb, lb) = (id("start", 0), id("len", 0), id("start", 1), id("len", 1));
                let stmts: syn::Block = syn::parse_quote_spanned!(m.method.span()=> {
                    let #la: usize = #k;
                    assert!(#la <= #x.len(), "mid > len");
                    let #sa: usize = 0;
                    let #sb: usize = #la;
                    let #lb: usize = #x.len() - #la;
                });
                let views = vec![
                    PartView { name: a.ident.clone(), base: x.clone(), start: sa, len: la },
                    PartView { name: b.ident.clone(), base: x, start: sb, len: lb },
                ];
                Some((stmts.stmts, views))
            }
            Expr::Reference(r) if r.mutability.is_some() => {
                let Expr::Index(ix) = strip(&r.expr) else { return None };
                let range = range_index(ix)?;
                let Pat::Ident(p) = &local.pat else { return None };
                if !named(&ix.expr) || p.by_ref.is_some() {
                    return None;
                }
                let x = strip(&ix.expr).clone();
                let (s, l, e) = (id("start", 0), id("len", 0), id("end", 0));
                let lo = match &range.start {
                    Some(lo) => quote!(#lo),
                    None => quote!(0usize),
                };
                let hi = match (&range.end, &range.limits) {
                    (Some(hi), syn::RangeLimits::Closed(_)) => quote!((#hi) + 1),
                    (Some(hi), _) => quote!(#hi),
                    (None, _) => quote!(#x.len()),
                };
                let stmts: syn::Block = syn::parse_quote_spanned!(r.span()=> {
                    let #s: usize = #lo;
                    let #e: usize = #hi;
                    assert!(#s <= #e && #e <= #x.len(), "range out of bounds");
                    let #l: usize = #e - #s;
                });
                let views = vec![PartView { name: p.ident.clone(), base: x, start: s, len: l }];
                Some((stmts.stmts, views))
            }
            _ => None,
        }
    }
}

/// `stmts` (the rest of a block after a `let` of [`PartView`]s) with the parts' uses rewritten
/// through their buffer; `Err` with a use it cannot rewrite (a rebinding of a part's name, a
/// macro naming it).
pub(super) fn rewrite_part_uses(
    stmts: &[syn::Stmt],
    views: &[PartView],
) -> Result<Vec<syn::Stmt>, proc_macro2::TokenStream> {
    let mut rw = ViewNames { views, bad: None };
    let mut out = stmts.to_vec();
    for s in &mut out {
        syn::visit_mut::VisitMut::visit_stmt_mut(&mut rw, s);
    }
    match rw.bad {
        Some(bad) => Err(bad),
        None => Ok(out),
    }
}

/// The rewriter of [`rewrite_part_uses`].
struct ViewNames<'a> {
    views: &'a [PartView],
    bad: Option<proc_macro2::TokenStream>,
}

impl ViewNames<'_> {
    fn view(&self, e: &Expr) -> Option<&PartView> {
        match strip(e) {
            Expr::Path(p) if p.qself.is_none() => {
                let i = p.path.get_ident()?;
                self.views.iter().find(|v| v.name == *i)
            }
            _ => None,
        }
    }
}

impl syn::visit_mut::VisitMut for ViewNames<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Index(ix) = e
            && let Some(v) = self.view(&ix.expr)
        {
            let (x, s, l) = (v.base.clone(), v.start.clone(), v.len.clone());
            self.visit_expr_mut(&mut ix.index);
            let span = ix.bracket_token.span.join();
            let index = &ix.index;
            *e = match range_index(ix) {
                // `a[lo..hi]`: the same range of `x`, shifted.
                Some(r) => {
                    let lo = match &r.start {
                        Some(lo) => quote!(#s + (#lo)),
                        None => quote!(#s),
                    };
                    let hi = match (&r.end, &r.limits) {
                        (Some(hi), syn::RangeLimits::Closed(_)) => quote!(#s + (#hi) + 1),
                        (Some(hi), _) => quote!(#s + (#hi)),
                        (None, _) => quote!(#s + #l),
                    };
                    syn::parse_quote_spanned!(span=> #x[(#lo)..(#hi)])
                }
                None => {
                    let j = syn::Ident::new("__mooncake_j", Span::mixed_site());
                    syn::parse_quote_spanned!(span=> #x[{
                        let #j: usize = #index;
                        assert!(#j < #l, "index out of bounds: the len is {} but the index is {}", #l, #j);
                        #s + #j
                    }])
                }
            };
            return;
        }
        if let Expr::MethodCall(mc) = e
            && let Some(v) = self.view(&mc.receiver)
        {
            let (x, s, l) = (v.base.clone(), v.start.clone(), v.len.clone());
            for a in mc.args.iter_mut() {
                self.visit_expr_mut(a);
            }
            let span = mc.receiver.span();
            if mc.method == "len" && mc.args.is_empty() {
                *e = syn::parse_quote_spanned!(span=> #l);
            } else {
                *mc.receiver = syn::parse_quote_spanned!(span=> #x[#s..(#s + #l)]);
            }
            return;
        }
        // `&*a`, `&a` (lent shared, as `g(&*a)`), `&mut *a`, `&mut a`: the sub-slice, borrowed
        // the same way.
        if let Expr::Reference(r) = e {
            let inner = match strip(&r.expr) {
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &*u.expr,
                other => other,
            };
            if let Some(v) = self.view(inner) {
                let (x, s, l) = (v.base.clone(), v.start.clone(), v.len.clone());
                let span = r.span();
                *e = if r.mutability.is_some() {
                    syn::parse_quote_spanned!(span=> &mut #x[#s..(#s + #l)])
                } else {
                    syn::parse_quote_spanned!(span=> &#x[#s..(#s + #l)])
                };
                return;
            }
        }
        if let Some(v) = self.view(e) {
            // Passed on (`g(a)`), iterated (`for v in a`): the sub-slice, lent mutably.
            let (x, s, l) = (v.base.clone(), v.start.clone(), v.len.clone());
            let span = e.span();
            *e = syn::parse_quote_spanned!(span=> (&mut #x[#s..(#s + #l)]));
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
    fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
        if self.views.iter().any(|v| v.name == p.ident) {
            let i = &p.ident;
            self.bad.get_or_insert_with(|| quote!(#i));
        }
    }
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        // Named as an argument, or captured by a format string (`"{a:?}"`).
        let captured = |text: &str| {
            self.views.iter().any(|v| {
                let open = format!("{{{}", v.name);
                text.match_indices(&open)
                    .any(|(k, _)| matches!(text[k + open.len()..].chars().next(), Some('}' | ':')))
            })
        };
        let mentions = m.tokens.clone().into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => self.views.iter().any(|v| v.name == i),
            proc_macro2::TokenTree::Literal(l) => captured(&l.to_string()),
            _ => false,
        });
        if mentions {
            self.bad.get_or_insert_with(|| quote!(#m));
        }
    }
}
