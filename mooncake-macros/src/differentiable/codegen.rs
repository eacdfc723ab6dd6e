//! Codegen: structured Rust from the IR's blocks, and the companion functions' signatures.

use super::ir::*;
use super::structure::Node;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote};

/// The path through which generated code reaches the runtime. Built once per expansion inside
/// an [`RtScope`] (the generators ask for it at nearly every statement: building its tokens was
/// about 4% of a large function's expansion), and afresh outside one: a token stream of the
/// compiler must not outlive the macro invocation that made it.
pub(crate) fn rt() -> TokenStream {
    RT.with(|c| match &mut *c.borrow_mut() {
        (0, _) => quote!(::mooncake_runtime::__private),
        (_, cached) => cached.get_or_insert_with(|| quote!(::mooncake_runtime::__private)).clone(),
    })
}

/// [`rt`] placed at `span` (with the expansion's hygiene, so it resolves as [`rt`] does): a call
/// through it whose bounds fail is reported at the user's tokens, not at the attribute.
pub(crate) fn rt_at(span: Span) -> TokenStream {
    let at = Span::call_site().located_at(span);
    rt().into_iter()
        .map(|mut t| {
            t.set_span(at);
            t
        })
        .collect()
}

thread_local! {
    /// How many [`RtScope`]s are open on this thread, and the path [`rt`] built in them.
    static RT: std::cell::RefCell<(usize, Option<TokenStream>)> =
        const { std::cell::RefCell::new((0, None)) };
}

/// While one is alive, [`rt`] builds its tokens once; the last one dropped forgets them.
pub(crate) struct RtScope(());

impl RtScope {
    pub(crate) fn open() -> RtScope {
        RT.with(|c| c.borrow_mut().0 += 1);
        RtScope(())
    }
}

impl Drop for RtScope {
    fn drop(&mut self) {
        // The thread's statics may be gone if this runs while they are being destroyed.
        let _ = RT.try_with(|c| {
            let mut c = c.borrow_mut();
            c.0 -= 1;
            if c.0 == 0 {
                c.1 = None;
            }
        });
    }
}

/// The names of the type and const parameters of `generics`, in order (what a turbofish or a
/// `use<..>` names).
pub(crate) fn type_and_const_params(generics: &syn::Generics) -> Vec<&syn::Ident> {
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(&t.ident),
            syn::GenericParam::Const(c) => Some(&c.ident),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// `{ inner }`, taking `inner` as it is: interpolating a stream with `quote!` copies every
/// token, and a structured program nests its loops and blocks, so that copying at each level
/// costs the program's size times its depth.
pub(crate) fn braced(inner: TokenStream) -> TokenTree {
    TokenTree::Group(proc_macro2::Group::new(proc_macro2::Delimiter::Brace, inner))
}

/// `head { inner }`, without copying `inner` (see [`braced`]).
pub(crate) fn then_block(mut head: TokenStream, inner: TokenStream) -> TokenStream {
    head.extend([braced(inner)]);
    head
}

/// `if cond { t } else { e }`, without copying the arms (see [`braced`]).
pub(crate) fn if_else(cond: TokenStream, t: TokenStream, e: TokenStream) -> TokenStream {
    let mut out = quote!(if #cond);
    out.extend([braced(t)]);
    out.extend(quote!(else));
    out.extend([braced(e)]);
    out
}

/// Hygienic names of locals and labels.
pub(crate) struct Names {
    pub(crate) n_locals: usize,
    /// `__lN` for each local, made on first use (a clone is cheaper than a format and a
    /// check of the name).
    made: std::cell::RefCell<Vec<Option<syn::Ident>>>,
}

impl Names {
    pub(crate) fn new(body: &Body) -> Self {
        Names::with_locals(body.locals.len())
    }

    pub(crate) fn with_locals(n_locals: usize) -> Self {
        Names { n_locals, made: std::cell::RefCell::new(vec![None; n_locals]) }
    }

    pub(crate) fn local(&self, l: Local) -> syn::Ident {
        debug_assert!(l.index() < self.n_locals);
        let make = || format_ident!("__l{}", l.0, span = Span::mixed_site());
        match self.made.borrow_mut().get_mut(l.index()) {
            Some(slot) => slot.get_or_insert_with(make).clone(),
            None => make(),
        }
    }

    fn block_label(&self, b: BlockId) -> syn::Lifetime {
        syn::Lifetime::new(&format!("'__b{}", b.0), Span::mixed_site())
    }

    fn loop_label(&self, b: BlockId) -> syn::Lifetime {
        syn::Lifetime::new(&format!("'__l{}", b.0), Span::mixed_site())
    }

    /// Replaces the `__mooncake_local_N` markers that lowering put in assertion and panic
    /// macros by the primal value of local N.
    pub(crate) fn substitute_primals(&self, tokens: TokenStream) -> TokenStream {
        // Most tokens given here are constants with no marker: returned as they are.
        if !has_marker(&tokens) {
            return tokens;
        }
        self.substitute(tokens, &|l| {
            let l = self.local(l);
            quote!(#l.primal)
        })
    }

    /// Replaces the `__mooncake_local_N` markers by `value(N)`, in parentheses.
    pub(crate) fn substitute(
        &self,
        tokens: TokenStream,
        value: &dyn Fn(Local) -> TokenStream,
    ) -> TokenStream {
        tokens
            .into_iter()
            .map(|tt| match tt {
                TokenTree::Ident(ref i) => {
                    let s = i.to_string();
                    match s.strip_prefix("__mooncake_local_").and_then(|n| n.parse::<u32>().ok()) {
                        Some(n) => {
                            let g = proc_macro2::Group::new(
                                proc_macro2::Delimiter::Parenthesis,
                                value(Local(n)),
                            );
                            TokenTree::Group(g)
                        }
                        None => tt,
                    }
                }
                TokenTree::Group(g) => {
                    let mut ng =
                        proc_macro2::Group::new(g.delimiter(), self.substitute(g.stream(), value));
                    ng.set_span(g.span());
                    TokenTree::Group(ng)
                }
                other => other,
            })
            .collect()
    }
}

/// Whether `tokens` hold a `__mooncake_local_N` marker (see `Names::substitute`).
fn has_marker(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i.to_string().starts_with("__mooncake_local_"),
        TokenTree::Group(g) => has_marker(&g.stream()),
        _ => false,
    })
}

/// Emits a structured program: `statements(b)` gives the code of block `b`'s statements,
/// `exit(b)` the code of its terminator when it leaves the function, `cond(l)` the `bool`
/// expression a branch tests.
pub(crate) fn emit(
    node: &Node,
    names: &Names,
    statements: &dyn Fn(BlockId) -> TokenStream,
    exit: &dyn Fn(BlockId) -> TokenStream,
    cond: &dyn Fn(Local) -> TokenStream,
) -> TokenStream {
    let rec = |n: &Node| emit(n, names, statements, exit, cond);
    match node {
        Node::Seq(nodes) => nodes.iter().map(rec).collect(),
        Node::Block(b, inner) => {
            let label = names.block_label(*b);
            then_block(quote!(#label:), rec(inner))
        }
        Node::Loop(b, inner) => {
            let label = names.loop_label(*b);
            then_block(quote!(#label: loop), rec(inner))
        }
        Node::Statements(b) => statements(*b),
        Node::If(c, t, e) => if_else(cond(*c), rec(t), rec(e)),
        Node::Break(b) => {
            let label = names.block_label(*b);
            quote!(break #label;)
        }
        Node::Continue(b) => {
            let label = names.loop_label(*b);
            quote!(continue #label;)
        }
        Node::Exit(b) => exit(*b),
    }
}

/// The lints that generated bodies allow: they come from the shape of generated code (one
/// variable per IR local, labels on every block), not from the user's code.
pub(crate) fn allow_attrs() -> TokenStream {
    quote!(
        #[allow(
            unused_mut,
            unused_variables,
            unused_assignments,
            unused_labels,
            unreachable_code,
            non_snake_case,
            clippy::all,
            clippy::pedantic,
            clippy::nursery
        )]
    )
}

/// A hasher for the macro's own maps (keys are node addresses, identifiers, locals): the
/// multiply-and-rotate hash rustc uses for its maps. Deterministic, so that an expansion does
/// the same work each time it runs, and several times cheaper than the default SipHash on
/// keys this small; the macro's inputs are the user's own code, not an adversary's.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` hashed by [`FastHasher`].
pub(crate) type FastMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;
