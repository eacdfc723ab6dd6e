//! `for` loops over a range of integer literals with a few iterations (`for k in 0..3`) are
//! lowered unrolled: one copy of the body per value, each in a block of its own that binds the
//! loop's pattern to the value (`{ let k = 0; { body } } { let k = 1; { body } } ..`).
//!
//! Small fixed-size computations loop over the axes of a point or the entries of a small matrix
//! this way. Unrolled, the indices are constants, so a local array they index
//! (`let mut p = [0.0; 3]; for k in 0..3 { p[k] = .. }`) becomes one number per element in
//! reverse mode (`reverse/scalarise.rs`) instead of a buffer behind a handle, and the reverse
//! sweep is straight-line code with no loop tape. Only the derived rules see the copies: the
//! function itself is emitted as written.
//!
//! A loop is unrolled when its range is `a..b` or `a..=b` of integer literals with at most
//! [`MAX_COPIES`] values, it has no label, and its body has no `break` or `continue` of its own
//! (those of loops inside it are theirs); loops unrolled inside unrolled loops multiply their
//! copies, and stop being unrolled past [`MAX_COPIES`] copies in all.

use super::lower::Lower;
use super::*;
use syn::Expr;
use syn::spanned::Spanned;

/// The most copies of a loop body unrolling makes, nested loops' copies multiplied.
pub(super) const MAX_COPIES: usize = 16;

impl Lower<'_> {
    /// Lowers `f` unrolled if it qualifies (see the module documentation); `None` otherwise,
    /// having lowered nothing.
    pub(super) fn lower_unrolled(&mut self, f: &syn::ExprForLoop) -> Option<Operand> {
        if f.label.is_some() || self.has_errors() || breaks_out(&f.body.stmts) {
            return None;
        }
        let (values, suffix) = literal_range(&f.expr)?;
        let copies = self.unroll_factor.checked_mul(values.len())?;
        if values.is_empty() || copies > MAX_COPIES {
            return None;
        }
        let outer = std::mem::replace(&mut self.unroll_factor, copies);
        for v in values {
            let value = Expr::Lit(syn::ExprLit {
                attrs: Vec::new(),
                lit: syn::Lit::Int(syn::LitInt::new(&format!("{v}{suffix}"), f.expr.span())),
            });
            let bind = syn::Stmt::Local(syn::Local {
                attrs: Vec::new(),
                let_token: syn::Token![let](f.for_token.span),
                pat: (*f.pat).clone(),
                init: Some(syn::LocalInit {
                    eq_token: syn::Token![=](f.in_token.span),
                    expr: Box::new(value),
                    diverge: None,
                }),
                semi_token: syn::Token![;](f.in_token.span),
            });
            let body = syn::Stmt::Expr(
                Expr::Block(syn::ExprBlock {
                    attrs: Vec::new(),
                    label: None,
                    block: f.body.clone(),
                }),
                None,
            );
            let copy = Expr::Block(syn::ExprBlock {
                attrs: Vec::new(),
                label: None,
                block: syn::Block { brace_token: f.body.brace_token, stmts: vec![bind, body] },
            });
            self.lower_expr(&copy);
            // An error in the body is reported once, not once per copy.
            if self.has_errors() {
                break;
            }
        }
        self.unroll_factor = outer;
        Some(lower::unit())
    }
}

/// The values of `a..b` / `a..=b` of integer literals (in parentheses or not), with the
/// literals' suffix (`usize` of `0usize..3`); `None` for any other iterator.
fn literal_range(e: &Expr) -> Option<(Vec<u64>, String)> {
    let Expr::Range(r) = peel(e) else { return None };
    let int = |e: &Option<Box<Expr>>| -> Option<(u64, String)> {
        match peel(e.as_deref()?) {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => {
                Some((n.base10_parse().ok()?, n.suffix().to_string()))
            }
            _ => None,
        }
    };
    let (start, s1) = int(&r.start)?;
    let (end, s2) = int(&r.end)?;
    let end = match r.limits {
        syn::RangeLimits::HalfOpen(_) => end,
        syn::RangeLimits::Closed(_) => end.checked_add(1)?,
    };
    if end.saturating_sub(start) > MAX_COPIES as u64 {
        return None;
    }
    let suffix = if s1.is_empty() { s2 } else { s1 };
    Some(((start..end).collect(), suffix))
}

fn peel(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => peel(&p.expr),
        Expr::Group(g) => peel(&g.expr),
        other => other,
    }
}

/// Whether `stmts` hold a `break` or `continue` of the loop they are the body of: one without a
/// label outside any loop nested in them (closures and nested items cannot hold one).
fn breaks_out(stmts: &[syn::Stmt]) -> bool {
    use syn::visit::Visit;
    struct Finder {
        found: bool,
    }
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            if b.label.is_none() {
                self.found = true;
            }
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            if c.label.is_none() {
                self.found = true;
            }
        }
        // Their own `break` / `continue` are theirs (a labelled one aimed past them is not
        // ours either: this loop has no label).
        fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
            self.visit_expr(&f.expr);
        }
        fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
            self.visit_expr(&w.cond);
        }
        fn visit_expr_loop(&mut self, _: &'a syn::ExprLoop) {}
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder { found: false };
    for s in stmts {
        f.visit_stmt(s);
    }
    f.found
}
