//! Iterators kept in a variable before they are consumed (`let squares = x.iter().map(|v| v *
//! v); squares.sum()`, `let pairs = a.iter().zip(b); for (p, q) in pairs { .. }`): the rest of
//! the block is rewritten with the chain written where the name is used, so that the chains of
//! `chains.rs` see it whole. An iterator borrows its sources, so nothing it reads can change
//! between the `let` and the use; what could change is the meaning of a name, if a later `let`
//! rebinds one the chain reads: that is refused with a message.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat, Stmt};

/// The adaptors and sources whose value is an iterator not yet consumed.
const LAZY: &[&str] = &[
    "iter",
    "iter_mut",
    "into_iter",
    "map",
    "filter",
    "filter_map",
    "zip",
    "enumerate",
    "rev",
    "skip",
    "take",
    "step_by",
    "copied",
    "cloned",
    "chain",
    "windows",
    "chunks",
    "chunks_exact",
    "chunks_mut",
    "chunks_exact_mut",
    "take_while",
    "skip_while",
    "scan",
];

/// Whether `e` is a chain of iterator adaptors with nothing consuming it, and no `move`
/// closure in it (whose copies the rewrite would not keep).
pub(super) fn is_lazy_chain(e: &Expr) -> bool {
    let Expr::MethodCall(m) = e else { return false };
    if !LAZY.contains(&m.method.to_string().as_str()) {
        return false;
    }
    struct Moves(bool);
    impl<'a> syn::visit::Visit<'a> for Moves {
        fn visit_expr_closure(&mut self, c: &'a syn::ExprClosure) {
            self.0 |= c.capture.is_some();
            syn::visit::visit_expr_closure(self, c);
        }
    }
    let mut moves = Moves(false);
    syn::visit::Visit::visit_expr(&mut moves, e);
    !moves.0
}

/// `stmts` with `name` replaced by `chain`: up to and including a statement that rebinds
/// `name` (whose initial value may use it: `let it = it.skip(1);`). A `let` that rebinds one of
/// `free` (the names the chain reads) before the last use of `name` is an error, given as the
/// tokens to point at.
pub(super) fn substitute(
    stmts: &[Stmt],
    name: &syn::Ident,
    chain: &Expr,
    free: &[syn::Ident],
) -> Result<Vec<Stmt>, TokenStream> {
    let mut out = Vec::with_capacity(stmts.len());
    let mut rw = Replace { name, chain };
    let mut rebound: Option<TokenStream> = None;
    let mut done = false;
    for s in stmts {
        let mut s = s.clone();
        if done {
            out.push(s);
            continue;
        }
        if let Some(at) = &rebound
            && mentions(&s, name)
        {
            return Err(at.clone());
        }
        let binds = match &s {
            Stmt::Local(l) => {
                let mut names = Vec::new();
                super::chains::pattern_names(&l.pat, &mut names);
                names
            }
            _ => Vec::new(),
        };
        if let Stmt::Local(l) = &mut s {
            if let Some(init) = &mut l.init {
                rw.visit_expr_mut(&mut init.expr);
                if let Some((_, d)) = &mut init.diverge {
                    rw.visit_expr_mut(d);
                }
            }
        } else {
            rw.visit_stmt_mut(&mut s);
        }
        if binds.contains(name) {
            done = true;
        } else if rebound.is_none()
            && let Some(n) = binds.iter().find(|n| free.contains(n))
        {
            rebound = Some(n.to_token_stream());
        }
        out.push(s);
    }
    Ok(out)
}

/// Whether `s` names `name` anywhere.
pub(super) fn mentions(s: &Stmt, name: &syn::Ident) -> bool {
    struct Finds<'n>(&'n syn::Ident, bool);
    impl<'a> syn::visit::Visit<'a> for Finds<'_> {
        fn visit_path(&mut self, p: &'a syn::Path) {
            self.1 |= p.is_ident(self.0);
            syn::visit::visit_path(self, p);
        }
    }
    let mut f = Finds(name, false);
    syn::visit::Visit::visit_stmt(&mut f, s);
    f.1
}

/// The rewriter of [`substitute`].
struct Replace<'a> {
    name: &'a syn::Ident,
    chain: &'a Expr,
}

impl VisitMut for Replace<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e
            && p.qself.is_none()
            && p.path.is_ident(self.name)
        {
            *e = self.chain.clone();
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        // A parameter of the same name hides the iterator.
        let mut params = Vec::new();
        for p in &c.inputs {
            super::chains::pattern_names(p, &mut params);
        }
        if !params.contains(self.name) {
            syn::visit_mut::visit_expr_closure_mut(self, c);
        }
    }
}

/// Whether the `let` binds one name, by value, with no type (`let it = ..;`).
pub(super) fn simple_name(pat: &Pat) -> Option<&syn::Ident> {
    match pat {
        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(&pi.ident),
        _ => None,
    }
}
