//! Sub-slices (`&x[a..b]`, `&mut x[a..b]`, `x[a..].iter()`, `x.split_at(k)`), lowered as
//! copies: `&x[a..b]` reads the range into a fresh buffer (`__sub_to_vec`, whose rules add the
//! copy's gradient back into the range), which is what a shared borrow means while it lives
//! (nothing can write `x` then). `&mut x[a..b]` lends a copy the same way and writes it back
//! (`__sub_assign`) right after the call, method or loop that took it, before anything else can
//! read `x`. A `&mut` sub-slice kept in a local is refused: its write-back would have no place.

use super::ir::{Local, Operand, Place, Rvalue};
use super::lower::Lower;
use proc_macro2::Span;
use quote::quote;
use syn::Expr;
use syn::spanned::Spanned;

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
            self.refuse(
                &m.method,
                "`split_at_mut` is not supported in #[differentiable] functions; write through \
                 the buffer with indices (`x[i]`, `x[k + j]`)",
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
