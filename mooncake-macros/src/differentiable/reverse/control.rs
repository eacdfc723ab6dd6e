//! The control flow of a reverse rule: the forward sweep as the primal's structured code, and
//! the reverse sweep as the same structure backwards (seed 002's block stack and the `loop {
//! match block }` state machine are gone).
//!
//! The reverse sweep visits the structured program ([`Node`]) from the end: a sequence
//! backwards, an `if` through the arm that ran, a loop as many times as it ran. What it needs
//! to know of the execution the forward sweep records on one *control tape* (a stack of
//! `usize`), and only at the points where control leaves a construct:
//!
//! * an `if` records the arm it took, when the arm ends or a jump leaves it;
//! * a loop records how many iterations it ran, when a jump leaves it;
//! * a sequence records which child a jump left it from, if a child before the last can jump
//!   out of it (otherwise every child ran, and nothing is recorded).
//!
//! A jump (`break`, `continue`, `return`) leaves several constructs at once; it records them
//! innermost first, so that the reverse sweep, which enters the outermost first, finds each
//! record on top of the tape when it needs it. Constructs that complete normally record in the
//! same order by nesting. So a reverse sweep pops exactly what its forward sweep pushed, in
//! reverse order, and the tape is empty at the end.
//!
//! One `if` per loop needs no record: the loop's *exit test*, the `if` that ends a loop body
//! whose one arm always leaves the loop and whose other never does (how `while` and `for`
//! lower). Its arm is known from the iteration: the exit arm in the last one, the other arm in
//! all others. A `while` or `for` loop thus records one number per execution, its trip count,
//! and nothing per iteration.

use super::super::codegen::FastMap as HashMap;
use super::super::codegen::{braced, if_else, then_block};
use super::super::ir::{BlockId, Local};
use super::super::structure::Node;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// The code the forward sweep is made of (see [`Control::forward`]).
struct Forward<'a> {
    statements: &'a dyn Fn(BlockId) -> TokenStream,
    exit: &'a dyn Fn(BlockId) -> TokenStream,
    cond: &'a dyn Fn(Local) -> TokenStream,
    loop_exit: &'a dyn Fn(BlockId) -> TokenStream,
    /// What the loop with header `h` declares at its entry for its windows (see
    /// `windows::Of::FwdArg`).
    windows: &'a dyn Fn(BlockId) -> TokenStream,
}

/// Where a jump goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Target {
    /// `break 'bN`: past the block labelled N.
    Block(BlockId),
    /// `continue 'lN`: to the top of the loop labelled N.
    Loop(BlockId),
    /// Out of the function (`return`, a panic).
    Out,
}

pub(super) fn target(n: &Node) -> Option<Target> {
    match n {
        Node::Break(b) => Some(Target::Block(*b)),
        Node::Continue(b) => Some(Target::Loop(*b)),
        Node::Exit(_) => Some(Target::Out),
        _ => None,
    }
}

/// A node's address, as the key of what the analysis found about it.
fn key(n: &Node) -> usize {
    n as *const Node as usize
}

/// What the reverse sweep needs to be told about a node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Record {
    /// Nothing.
    None,
    /// A sequence: the index of the child a jump left it from (its length if none did).
    SeqChild,
    /// An `if`: the arm it took (0 then, 1 else).
    Arm,
    /// An `if` that is the exit test of the loop with this header: the arm is known from the
    /// iteration (`exit_arm` in the last one).
    ExitTest { header: BlockId, exit_arm: usize },
    /// A loop: how many iterations it ran.
    Trips,
}

/// The analysis of a structured program's control flow (see the module documentation).
pub(crate) struct Control {
    records: HashMap<usize, Record>,
    /// Per sequence that records: the first child that can jump out of it (the children up
    /// to it always run).
    first_jumper: HashMap<usize, usize>,
    /// The buffers a loop may borrow once rather than once per element.
    pub(crate) guards: Guards,
    /// Per loop: what its forward sweep does with the buffers (see [`Guards::apply`]).
    read_only: std::cell::RefCell<HashMap<usize, Found>>,
    /// Where the nodes and labels are (see [`Labels`]).
    labels: Labels,
    /// The loops whose trip count goes on the tape of what their exit records, with it, rather
    /// than on the control tape (one push and one pop per execution instead of two: see
    /// `Reverse::loop_exit`).
    pub(crate) counted_in_record: Vec<BlockId>,
}

/// What a loop's forward sweep does with the buffers of a [`Guards`] (indices into its `reads`),
/// for the guards of its reverse sweep.
#[derive(Clone, Default)]
pub(crate) struct Found {
    /// Buffers it only loads from and stores into keeping no record.
    reads: Vec<usize>,
    /// Buffers it only loads from and stores into (with records or not).
    shadows: Vec<usize>,
}

/// Buffers whose per-element borrows a loop can replace by one borrow before it, where the
/// loop's code (its exit arm included) uses them in no other way: loads of a buffer built in
/// the body (`read_at(&__lN, i)`, one shared borrow of the handle, or a mutable one if the loop
/// also has stores that keep no record, `store_fresh(&__lN, i, v)`, or of the handle and the
/// shadow if it has stores that keep one, `store_at(&__lN, i, v)`) and, in the reverse sweep,
/// adds into a buffer's captured shadow (`shadow_add(&__shN, i, r)`) and the reverses of those
/// stores (`unstore_fresh(&__shN, ..)`, `unstore_at(&__shN, ..)`), one mutable borrow.
/// Any other use of the name (a call, a copy) leaves the loop as it is, so that no other borrow
/// of the same buffer can happen while the guard is held.
/// A window of a captured shadow (see `windows::Of::Shadow`), cut from the shadow's guard when
/// the reverse sweep of its loop takes one: every use of the shadow in the loop is then an add,
/// or the reverse of a store, at the window's slot. Or the same of a buffer built in the body
/// (`windows::Of::Built`), whose uses in the loop's reverse sweep are then loads at the slot.
pub(crate) struct ShadowWindow {
    pub(crate) header: BlockId,
    /// Whether it is a window of the forward sweep (`windows::Of::FwdBuilt`).
    pub(crate) forward: bool,
    /// The captured shadow's name (or the buffer's).
    pub(crate) shadow: syn::Ident,
    /// The window's name.
    pub(crate) name: syn::Ident,
    /// The slot of the loop's iteration (`__it`, or counted down).
    pub(crate) slot: TokenStream,
    /// The number of the loop's complete iterations (declared with the loop's windows).
    pub(crate) m: syn::Ident,
    /// The lowest index.
    pub(crate) lo: TokenStream,
}

#[derive(Default)]
pub(crate) struct Guards {
    /// The handle locals whose loads may be guarded.
    reads: Vec<syn::Ident>,
    /// The captured shadows whose adds may be guarded.
    adds: Vec<syn::Ident>,
    /// Each name of `reads` then `adds`, to its index in [`Uses`].
    index: HashMap<syn::Ident, usize>,
    /// The blocks whose code cannot name any of them (their statements touch none of the
    /// buffers): not searched.
    pub(crate) quiet: Vec<bool>,
    /// The windows of shadows the reverse sweep cuts from its guards.
    pub(crate) windows: Vec<ShadowWindow>,
}

/// How often each name of a [`Guards`] (its `reads`, then its `adds`) appears in some code, how
/// often as the first argument of a call it may be guarded in (`read_at(&x, ..)`,
/// `store_fresh(&x, ..)`, `store_at(&x, ..)`, `shadow_add(&x, ..)`, `unstore_fresh(&x, ..)`,
/// `unstore_at(&x, ..)`), how often of those in a store (`store_fresh`, `store_at`,
/// `store_zero_at`), how often in a store that keeps a record (`store_at`, `store_zero_at`), and
/// how often in one whose record keeps the shadow (`store_at`). Counted once per block's code and summed
/// up the tree, so that a loop decides its guards without walking the code of the loops inside
/// it again.
#[derive(Clone, Default)]
pub(crate) struct Uses(Vec<[usize; 5]>);

impl Uses {
    fn add(&mut self, other: &Uses) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), [0; 5]);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

impl Guards {
    pub(crate) fn new(reads: Vec<syn::Ident>, adds: Vec<syn::Ident>) -> Self {
        let index = reads.iter().chain(&adds).cloned().enumerate().map(|(k, x)| (x, k)).collect();
        Guards { reads, adds, index, quiet: Vec::new(), windows: Vec::new() }
    }

    /// Adds the uses in `tokens` to `uses`; returns `tokens` (rebuilt, see [`regroup`]).
    fn count(&self, tokens: TokenStream, uses: &mut Uses) -> TokenStream {
        if self.index.is_empty() {
            return tokens;
        }
        let mut here = Uses(vec![[0; 5]; self.index.len()]);
        let tokens = scan(tokens, self, &mut here.0);
        uses.add(&here);
        tokens
    }

    /// `body` (whose uses are `uses`) with the guarded uses rewritten, the guards' `let`s to put
    /// before the loop, what the loop's forward sweep does with the buffers (see [`Found`]), and
    /// the uses of the whole (the guards' `let`s included). In the reverse sweep
    /// (`forward_only` given: what the forward sweep found for the same loop), only buffers the
    /// forward sweep of the loop only loads from and stores into are guarded, since the
    /// pullbacks on its tapes may hold the others' handles and shadows out of sight of their
    /// names.
    /// In the reverse sweep of a loop (`header` given) whose shadow guard has a window (see
    /// [`ShadowWindow`]), the shadow's uses go to the window's slots, and the window is cut
    /// after the loop's own windows (the last item: declarations to put after them).
    fn apply(
        &self,
        body: TokenStream,
        uses: &Uses,
        forward_only: Option<&Found>,
        header: Option<BlockId>,
    ) -> (TokenStream, TokenStream, Found, Uses, TokenStream) {
        // Candidates: (name, whether it is a shadow, index into `reads`, index into `uses`).
        let mut cands: Vec<(&syn::Ident, bool, usize, usize)> = Vec::new();
        for (k, x) in self.reads.iter().enumerate() {
            if forward_only.is_none_or(|f| f.reads.contains(&k)) {
                cands.push((x, false, k, k));
            }
        }
        if let Some(f) = forward_only {
            let n = self.reads.len();
            for (k, x) in self.adds.iter().enumerate() {
                if f.shadows.contains(&k) {
                    cands.push((x, true, k, n + k));
                }
            }
        }
        let mut after = uses.clone();
        let mut lets = Vec::new();
        let mut found = Found::default();
        let mut swaps: Vec<(&syn::Ident, &str, &str, TokenStream)> = Vec::new();
        let mut cut = TokenStream::new();
        for &(x, shadow, k, u) in &cands {
            let [total, called, stores, recorded, shadowed] =
                uses.0.get(u).copied().unwrap_or([0; 5]);
            if total == 0 || total != called {
                continue;
            }
            let g = format_ident!("__g{}", x, span = Span::mixed_site());
            // The guard itself (a `Ref` / `RefMut` of the `Vec`) is held under another name and
            // the loop reads the slice it lends: a slice's pointer and length are values LLVM
            // keeps in registers, where the `Vec` behind the guard is memory that every store
            // of the loop might change as far as it can tell (one load of each per access).
            let held = format_ident!("__gh{}", x, span = Span::mixed_site());
            let rt = quote!(::mooncake_runtime::__private);
            let forward = forward_only.is_none();
            let window = self
                .windows
                .iter()
                .find(|w| Some(w.header) == header && w.shadow == *x && w.forward == forward);
            let make = if let (true, Some(w)) = (shadow, window) {
                let (name, slot, m, lo) = (&w.name, &w.slot, &w.m, &w.lo);
                swaps.push((x, "shadow_add", "window_add", quote!(&mut #name, #slot)));
                swaps.push((x, "unstore_fresh", "window_unstore", quote!(&mut #name, #slot)));
                swaps.push((x, "unstore_at", "window_unstore_at", quote!(&mut #name, #slot)));
                swaps.push((
                    x,
                    "unstore_zero_at",
                    "window_unstore_zero_at",
                    quote!(&mut #name, #slot),
                ));
                cut.extend(quote!(let mut #name = #rt::rev::shadow_window(&mut *#g, #m, || #lo);));
                Some(quote!(shadow_guard))
            } else if shadow {
                swaps.push((x, "shadow_add", "guarded_add", quote!(&mut *#g)));
                swaps.push((x, "unstore_fresh", "guarded_unstore", quote!(&mut *#g)));
                swaps.push((x, "unstore_at", "guarded_unstore_at", quote!(&mut *#g)));
                swaps.push((x, "unstore_zero_at", "guarded_unstore_zero_at", quote!(&mut *#g)));
                Some(quote!(shadow_guard))
            } else if let (0, true) = (shadowed, recorded > 0) {
                // Records that hold no shadow (see `rev::store_zero_at`): the buffer alone is
                // borrowed. (Cut to a window as well, the small loops of `gmm` measured slower:
                // 38.6M -> 40.0M instructions.)
                swaps.push((x, "read_at", "guarded_at", quote!(&*#g)));
                swaps.push((x, "store_fresh", "guarded_store", quote!(&mut *#g)));
                swaps.push((x, "store_zero_at", "slice_store_zero_at", quote!(&mut *#g)));
                Some(quote!(write_guard))
            } else if recorded > 0 {
                // Stores that keep a record read the element's shadow too: both borrowed.
                swaps.push((x, "read_at", "guarded_at", quote!(&#g)));
                swaps.push((x, "store_fresh", "guarded_store", quote!(&mut #g)));
                swaps.push((x, "store_at", "guarded_store_at", quote!(&mut #g)));
                swaps.push((x, "store_zero_at", "guarded_store_zero_at", quote!(&mut #g)));
                None
            } else if let (Some(w), 0, true) = (window, recorded, stores > 0) {
                let (name, slot, m, lo) = (&w.name, &w.slot, &w.m, &w.lo);
                swaps.push((x, "read_at", "window_get", quote!(&#name, #slot)));
                swaps.push((x, "store_fresh", "window_put", quote!(&mut #name, #slot)));
                cut.extend(
                    quote!(let mut #name = #rt::rev::slice_window_mut(&mut *#g, #m, || #lo);),
                );
                Some(quote!(write_guard))
            } else if let (Some(w), 0) = (window, stores) {
                let (name, slot, m, lo) = (&w.name, &w.slot, &w.m, &w.lo);
                swaps.push((x, "read_at", "window_read", quote!(&#name, #slot)));
                cut.extend(quote!(let #name = #rt::rev::slice_window(#g, #m, || #lo);));
                Some(quote!(read_guard))
            } else if stores > 0 {
                swaps.push((x, "read_at", "guarded_at", quote!(&*#g)));
                swaps.push((x, "store_fresh", "guarded_store", quote!(&mut *#g)));
                Some(quote!(write_guard))
            } else {
                swaps.push((x, "read_at", "guarded_at", quote!(#g)));
                Some(quote!(read_guard))
            };
            lets.push(match make {
                None => quote!(let mut #g = #rt::rev::record_guard(&#x);),
                Some(make) if shadow || stores > 0 => quote! {
                    let mut #held = #rt::rev::#make(&#x);
                    let #g: &mut [_] = &mut #held;
                },
                Some(make) => quote! {
                    let #held = #rt::rev::#make(&#x);
                    let #g: &[_] = &#held;
                },
            });
            // Outside the loop, the name's one use is the guard's `let`.
            after.0[u] = [1, 0, 0, 0, 0];
            // The loop's forward sweep only loads from the buffer and stores into it: no
            // pullback of its tapes holds the buffer or its shadow. Its reverse sweep may
            // borrow the shadow once; the buffer too if no store keeps a record (the reverse of
            // one puts the element back through another name of the buffer, its captured
            // handle).
            if !shadow {
                found.shadows.push(k);
                if recorded == 0 {
                    found.reads.push(k);
                }
            }
        }
        let body = if swaps.is_empty() { body } else { rewrite(body, &swaps) };
        (quote!(#(#lets)*), body, found, after, cut)
    }
}

/// For each name of `guards`, how often it appears in `tokens`, and how often as the first
/// argument of its call, `read_at(&x, ..)` or `shadow_add(&x, ..)` (one walk, a hash lookup
/// per identifier). Returns `tokens`, rebuilt without copying them (see [`regroup`]).
fn scan(tokens: TokenStream, guards: &Guards, uses: &mut [[usize; 5]]) -> TokenStream {
    use proc_macro2::TokenTree as Tt;
    let tts: Vec<Tt> = tokens
        .into_iter()
        .map(|tt| match tt {
            Tt::Group(g) => regroup(g, |inner| scan(inner, guards, uses)),
            other => other,
        })
        .collect();
    let n = guards.reads.len();
    for (k, tt) in tts.iter().enumerate() {
        let Tt::Ident(i) = tt else { continue };
        if let Some(&u) = guards.index.get(i) {
            uses[u][0] += 1;
            continue;
        }
        let (call, store, recorded, shadowed) = if i == "read_at" {
            (0..n, false, false, false)
        } else if i == "store_fresh" {
            (0..n, true, false, false)
        } else if i == "store_zero_at" {
            (0..n, true, true, false)
        } else if i == "store_at" {
            (0..n, true, true, true)
        } else if i == "shadow_add"
            || i == "unstore_fresh"
            || i == "unstore_at"
            || i == "unstore_zero_at"
        {
            (n..uses.len(), false, false, false)
        } else {
            continue;
        };
        if let Some(a) = first_argument(tts.get(k + 1))
            && let Some(&u) = guards.index.get(&a)
            && call.contains(&u)
        {
            uses[u][1] += 1;
            uses[u][2] += usize::from(store);
            uses[u][3] += usize::from(recorded);
            uses[u][4] += usize::from(shadowed);
        }
    }
    tts.into_iter().collect()
}

/// `g` with its stream replaced by `f(stream)`. The group is dropped before `f` walks its
/// stream, so that the stream is the only owner of its tokens and walking it moves them (a
/// shared stream copies every token it yields).
fn regroup(
    g: proc_macro2::Group,
    f: impl FnOnce(TokenStream) -> TokenStream,
) -> proc_macro2::TokenTree {
    let (delimiter, span, stream) = (g.delimiter(), g.span(), g.stream());
    drop(g);
    let mut ng = proc_macro2::Group::new(delimiter, f(stream));
    ng.set_span(span);
    proc_macro2::TokenTree::Group(ng)
}

/// `x` of an argument list `(&x, ..)`.
fn first_argument(tt: Option<&proc_macro2::TokenTree>) -> Option<proc_macro2::Ident> {
    use proc_macro2::TokenTree as Tt;
    let Some(Tt::Group(g)) = tt else { return None };
    if g.delimiter() != proc_macro2::Delimiter::Parenthesis {
        return None;
    }
    let mut it = g.stream().into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(Tt::Punct(a)), Some(Tt::Ident(i)), Some(Tt::Punct(c)))
            if a.as_char() == '&' && c.as_char() == ',' =>
        {
            Some(i)
        }
        _ => None,
    }
}

/// `tokens` with every `from(&x, ..)` of `swaps` made `to(g, ..)` (`g` a borrow of the guard).
fn rewrite(tokens: TokenStream, swaps: &[(&syn::Ident, &str, &str, TokenStream)]) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tts.len());
    let mut it = tts.into_iter().peekable();
    while let Some(tt) = it.next() {
        match tt {
            TokenTree::Ident(i) => {
                let swap = if swaps.iter().any(|(_, from, _, _)| i == from) {
                    first_argument(it.peek())
                        .and_then(|a| swaps.iter().find(|(x, from, _, _)| a == **x && i == from))
                } else {
                    None
                };
                match swap {
                    Some((_, _, to, g)) => {
                        let Some(TokenTree::Group(args)) = it.next() else { unreachable!() };
                        out.push(TokenTree::Ident(syn::Ident::new(to, i.span())));
                        let rest: Vec<TokenTree> = args.stream().into_iter().skip(2).collect();
                        let mut ng = Group::new(args.delimiter(), quote!(#g #(#rest)*));
                        ng.set_span(args.span());
                        out.push(TokenTree::Group(ng));
                    }
                    None => out.push(TokenTree::Ident(i)),
                }
            }
            TokenTree::Group(grp) => out.push(regroup(grp, |inner| rewrite(inner, swaps))),
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

impl Control {
    /// The analysis of `root`, whose labels are `labels` (`Labels::of(root)`, made once for
    /// this and the windows: see `Reverse::plan_windows`).
    pub(crate) fn new(root: &Node, labels: Labels) -> Self {
        let mut c = Control {
            records: HashMap::default(),
            first_jumper: HashMap::default(),
            guards: Guards::default(),
            read_only: std::cell::RefCell::new(HashMap::default()),
            labels,
            counted_in_record: Vec::new(),
        };
        c.analyse(root);
        c
    }

    /// Whether the forward sweep records anything at all.
    pub(crate) fn needs_tape(&self) -> bool {
        self.records.values().any(|r| !matches!(r, Record::None | Record::ExitTest { .. }))
    }

    fn record(&self, n: &Node) -> Record {
        self.records.get(&key(n)).copied().unwrap_or(Record::None)
    }

    fn analyse(&mut self, n: &Node) {
        match n {
            Node::Seq(children) => {
                // A child before the last that can leave the sequence.
                let first = children
                    .iter()
                    .enumerate()
                    .take(children.len().saturating_sub(1))
                    .find(|(_, c)| leaves(c, n, &self.labels))
                    .map(|(i, _)| i);
                if let Some(i) = first {
                    self.records.insert(key(n), Record::SeqChild);
                    self.first_jumper.insert(key(n), i);
                }
                children.iter().for_each(|c| self.analyse(c));
            }
            Node::If(_, t, e) => {
                self.records.insert(key(n), Record::Arm);
                self.analyse(t);
                self.analyse(e);
            }
            Node::Loop(h, body) => {
                self.records.insert(key(n), Record::Trips);
                if let Some((test, exit_arm)) = exit_test(*h, body, &self.labels) {
                    self.records.insert(key(test), Record::ExitTest { header: *h, exit_arm });
                }
                self.analyse(body);
                // `analyse(body)` set the exit test's record to `Arm`: put it back.
                if let Some((test, exit_arm)) = exit_test(*h, body, &self.labels) {
                    self.records.insert(key(test), Record::ExitTest { header: *h, exit_arm });
                }
            }
            Node::Block(_, inner) => self.analyse(inner),
            Node::Statements(_) | Node::Break(_) | Node::Continue(_) | Node::Exit(_) => {}
        }
    }

    /// The forward sweep: the structured program, with the records. `statements(b)` is the
    /// code of block `b`'s statements, `exit(b)` that of its terminator when it leaves the
    /// function (after which it breaks out of the body), `cond(l)` the `bool` a branch tests,
    /// `loop_exit(h)` what the loop with header `h` records besides its trip count, wherever
    /// it exits.
    pub(crate) fn forward(
        &self,
        root: &Node,
        statements: &dyn Fn(BlockId) -> TokenStream,
        exit: &dyn Fn(BlockId) -> TokenStream,
        cond: &dyn Fn(Local) -> TokenStream,
        loop_exit: &dyn Fn(BlockId) -> TokenStream,
        windows: &dyn Fn(BlockId) -> TokenStream,
    ) -> TokenStream {
        let mut path = Vec::new();
        let f = Forward { statements, exit, cond, loop_exit, windows };
        self.fwd(root, &mut path, &f, &mut Uses::default())
    }

    /// `n`'s forward sweep; adds its uses of the guards' names to `uses`.
    fn fwd<'n>(
        &self,
        n: &'n Node,
        path: &mut Vec<(&'n Node, usize)>,
        f: &Forward<'_>,
        uses: &mut Uses,
    ) -> TokenStream {
        let push = |v: TokenStream| quote!(__ctl.push(#v););
        match n {
            Node::Seq(children) => {
                let mut parts = Vec::new();
                for (i, c) in children.iter().enumerate() {
                    path.push((n, i));
                    parts.push(self.fwd(c, path, f, uses));
                    path.pop();
                }
                let len = children.len();
                let done =
                    if self.record(n) == Record::SeqChild { push(quote!(#len)) } else { quote!() };
                parts.into_iter().chain([done]).collect()
            }
            Node::Block(b, inner) => {
                path.push((n, 0));
                let inner = self.fwd(inner, path, f, uses);
                path.pop();
                let label = block_label(*b);
                then_block(quote!(#label:), inner)
            }
            Node::Loop(b, inner) => {
                path.push((n, 0));
                let mut within = Uses::default();
                let body = self.fwd(inner, path, f, &mut within);
                path.pop();
                let (label, count) = (loop_label(*b), trips(*b));
                // The innermost loop that only loads from a buffer takes its guard (an inner
                // loop's guard is a use of the name that the outer loop does not guard).
                let (guards, body, found, within, cut) =
                    self.guards.apply(body, &within, None, Some(*b));
                uses.add(&within);
                self.read_only.borrow_mut().insert(key(n), found);
                let mut inner = quote!(#count += 1;);
                inner.extend(body);
                let looped = then_block(quote!(let mut #count: usize = 0; #label: loop), inner);
                let mut entry = (f.windows)(*b);
                if guards.is_empty() && entry.is_empty() {
                    return looped;
                }
                entry.extend(guards);
                entry.extend(cut);
                entry.extend(looped);
                TokenStream::from(braced(entry))
            }
            Node::Statements(b) if self.guards.quiet.get(b.index()) == Some(&true) => {
                (f.statements)(*b)
            }
            Node::Statements(b) => self.guards.count((f.statements)(*b), uses),
            Node::If(c, t, e) => {
                let record = matches!(self.record(n), Record::Arm);
                let mut arm = |i: usize, a: &'n Node, path: &mut Vec<(&'n Node, usize)>| {
                    path.push((n, i));
                    let mut code = self.fwd(a, path, f, uses);
                    path.pop();
                    if record {
                        code.extend(push(quote!(#i)));
                    }
                    code
                };
                let (t, e) = (arm(0, t, path), arm(1, e, path));
                if_else((f.cond)(*c), t, e)
            }
            Node::Break(_) | Node::Continue(_) | Node::Exit(_) => {
                let records = self.leaving(n, path, f.loop_exit);
                let jump = match n {
                    Node::Break(b) => {
                        let label = block_label(*b);
                        quote!(break #label;)
                    }
                    Node::Continue(b) => {
                        let label = loop_label(*b);
                        quote!(continue #label;)
                    }
                    Node::Exit(b) => {
                        let e = (f.exit)(*b);
                        quote!(#e break '__body;)
                    }
                    _ => quote!(),
                };
                self.guards.count(quote!(#records #jump), uses)
            }
        }
    }

    /// The records of the constructs a jump leaves, innermost first.
    fn leaving(
        &self,
        jump: &Node,
        path: &[(&Node, usize)],
        loop_exit: &dyn Fn(BlockId) -> TokenStream,
    ) -> TokenStream {
        let Some(to) = target(jump) else { return quote!() };
        let mut out = Vec::new();
        for &(node, i) in path.iter().rev() {
            match (node, to) {
                (Node::Block(b, _), Target::Block(t)) if *b == t => break,
                (Node::Loop(b, _), Target::Loop(t)) if *b == t => break,
                _ => {}
            }
            match self.record(node) {
                Record::SeqChild => out.push(quote!(__ctl.push(#i);)),
                Record::Arm => out.push(quote!(__ctl.push(#i);)),
                Record::Trips => {
                    if let Node::Loop(b, _) = node {
                        let count = trips(*b);
                        out.push(loop_exit(*b));
                        if !self.counted_in_record.contains(b) {
                            out.push(quote!(__ctl.push(#count);));
                        }
                    }
                }
                Record::ExitTest { .. } | Record::None => {}
            }
        }
        quote!(#(#out)*)
    }

    /// Whether the reverse sweep of the loop with header `h` tests its last iteration (an exit
    /// test recorded for `h`, which is in the loop's body, is reversed as `if __lastH { .. }`).
    fn tests_exit(&self, h: BlockId) -> bool {
        self.records.values().any(|r| matches!(r, Record::ExitTest { header, .. } if *header == h))
    }

    /// The reverse sweep: `statements(b)` is the reverse code of block `b`'s statements,
    /// `loop_entry(h)` what entering the loop with header `h` takes back of what its exit
    /// recorded (see [`Control::forward`]), `windows(h, m)` the windows its iterations add into
    /// and read, given the number of complete iterations `m` (see `Reverse::window_decls`).
    pub(crate) fn reverse(
        &self,
        root: &Node,
        statements: &dyn Fn(BlockId) -> TokenStream,
        loop_entry: &dyn Fn(BlockId) -> TokenStream,
        windows: &dyn Fn(BlockId, TokenStream) -> TokenStream,
    ) -> TokenStream {
        let f = Funcs { statements, loop_entry, windows, peel: std::cell::Cell::new(None) };
        self.rev(root, &f, &mut Uses::default())
    }

    /// `n`'s reverse sweep; adds its uses of the guards' names to `uses`.
    fn rev(&self, n: &Node, f: &Funcs<'_>, uses: &mut Uses) -> TokenStream {
        let (statements, loop_entry) = (f.statements, f.loop_entry);
        let pop = quote!(match __ctl.pop() {
            ::core::option::Option::Some(v) => v,
            ::core::option::Option::None => ::core::unreachable!(),
        });
        match n {
            Node::Seq(children) => {
                if self.record(n) == Record::SeqChild {
                    let first = self.first_jumper.get(&key(n)).copied().unwrap_or(0);
                    let parts = children.iter().enumerate().rev().map(|(m, c)| {
                        let code = self.rev(c, f, uses);
                        if m <= first { code } else { then_block(quote!(if __s >= #m), code) }
                    });
                    let mut out = quote!(let __s: usize = #pop;);
                    out.extend(parts);
                    TokenStream::from(braced(out))
                } else {
                    let parts = children.iter().rev();
                    parts.map(|c| self.rev(c, f, uses)).collect()
                }
            }
            Node::Block(_, inner) => self.rev(inner, f, uses),
            Node::Loop(b, inner) => {
                let mut within = Uses::default();
                let last = last_iteration(*b);
                // Only an innermost loop is peeled: peeling one that holds loops would copy
                // them, and the copies multiply with the depth of the nest. The peeled last
                // iteration runs only the exit test's exit arm, the others only its other arm:
                // each is made with that arm alone.
                let mentioned = self.tests_exit(*b);
                let peeled = mentioned && !holds_loop(inner);
                let outer = f.peel.get();
                let (body, first_body) = if peeled {
                    f.peel.set(Some((*b, true)));
                    let first = self.rev(inner, f, &mut within);
                    f.peel.set(Some((*b, false)));
                    let rest = self.rev(inner, f, &mut within);
                    f.peel.set(outer);
                    (rest, Some(first))
                } else {
                    (self.rev(inner, f, &mut within), None)
                };
                let read_only = self.read_only.borrow().get(&key(n)).cloned().unwrap_or_default();
                let (guards, body, first_body, cut) = if read_only.shadows.is_empty() {
                    uses.add(&within);
                    (quote!(), body, first_body, quote!())
                } else {
                    let h = Some(*b);
                    let (guards, body, _, after, cut) =
                        self.guards.apply(body, &within, Some(&read_only), h);
                    let first_body =
                        first_body.map(|fb| self.guards.apply(fb, &within, Some(&read_only), h).1);
                    uses.add(&after);
                    (guards, body, first_body, cut)
                };
                // The trip count, from the control tape or with what the loop's exit recorded
                // (`loop_entry` then declares `__n`).
                let mut head = if self.counted_in_record.contains(b) {
                    quote!()
                } else {
                    quote!(let __n: usize = #pop;)
                };
                head.extend(self.guards.count(loop_entry(*b), uses));
                head.extend(guards);
                head.extend(quote!(let mut __it: usize = __n;));
                if !peeled {
                    let mut step = quote!(__it -= 1;);
                    if mentioned {
                        step.extend(quote!(let #last = __it + 1 == __n;));
                    }
                    step.extend(body);
                    head.extend((f.windows)(*b, quote!(__n - 1)));
                    head.extend(cut);
                    head.extend(then_block(quote!(while __it > 0), step));
                    return TokenStream::from(braced(head));
                }
                // The last iteration of an innermost loop, the first one undone, is peeled
                // off: in the loop, the test that chose the exit arm is a constant, and the arm
                // is gone.
                let mut first = quote!(__it -= 1;);
                first.extend(first_body.unwrap_or_default());
                let mut rest = quote!(__it -= 1;);
                rest.extend(body);
                let mut decls = (f.windows)(*b, quote!(__n - 1));
                decls.extend(cut);
                if decls.is_empty() {
                    head.extend(then_block(quote!(if __it > 0), first));
                } else {
                    // The windows are cut before the peeled iteration, from the count of the
                    // complete ones, `__n - 1`: the loop's header ran at least once (`__n > 0`),
                    // so the peeled iteration is unconditional and the loop's counter starts
                    // from the same expression, which is how the optimiser sees the slots in
                    // bounds.
                    head.extend(decls);
                    head.extend([braced(first)]);
                }
                head.extend(then_block(quote!(while __it > 0), rest));
                TokenStream::from(braced(head))
            }
            Node::Statements(b) if self.guards.quiet.get(b.index()) == Some(&true) => {
                statements(*b)
            }
            Node::Statements(b) => self.guards.count(statements(*b), uses),
            Node::If(_, t, e) => {
                if let Record::ExitTest { header, exit_arm } = self.record(n)
                    && let Some((h, last)) = f.peel.get()
                    && h == header
                {
                    // In a peeled iteration the arm is known (see `Node::Loop` above).
                    let exit = if exit_arm == 0 { t } else { e };
                    let other = if exit_arm == 0 { e } else { t };
                    return self.rev(if last { exit } else { other }, f, uses);
                }
                let t = self.rev(t, f, uses);
                let e = self.rev(e, f, uses);
                match self.record(n) {
                    Record::ExitTest { header, exit_arm } => {
                        let last = last_iteration(header);
                        if exit_arm == 0 {
                            if_else(quote!(#last), t, e)
                        } else {
                            if_else(quote!(#last), e, t)
                        }
                    }
                    _ => if_else(quote!(#pop == 0), t, e),
                }
            }
            Node::Break(_) | Node::Continue(_) | Node::Exit(_) => quote!(),
        }
    }
}

/// The code [`Control::reverse`] asks of its caller.
struct Funcs<'a> {
    statements: &'a dyn Fn(BlockId) -> TokenStream,
    loop_entry: &'a dyn Fn(BlockId) -> TokenStream,
    windows: &'a dyn Fn(BlockId, TokenStream) -> TokenStream,
    /// While the code of a peeled loop's iteration is made: the loop's header, and whether it
    /// is the last iteration (whose exit test takes the exit arm) or one of the others.
    peel: std::cell::Cell<Option<(BlockId, bool)>>,
}

fn block_label(b: BlockId) -> syn::Lifetime {
    syn::Lifetime::new(&format!("'__b{}", b.0), Span::mixed_site())
}

fn loop_label(b: BlockId) -> syn::Lifetime {
    syn::Lifetime::new(&format!("'__l{}", b.0), Span::mixed_site())
}

/// The trip counter of the loop with header `b`.
pub(super) fn trips(b: BlockId) -> syn::Ident {
    format_ident!("__trips{}", b.0, span = Span::mixed_site())
}

/// In the reverse sweep, whether this is the last iteration of the loop with header `b`.
fn last_iteration(b: BlockId) -> syn::Ident {
    format_ident!("__last{}", b.0, span = Span::mixed_site())
}

/// Whether control can leave `n` by a jump to outside `within` (a node containing `n`).
fn leaves(n: &Node, within: &Node, labels: &Labels) -> bool {
    let mut found = false;
    visit_jumps(n, &mut |j| {
        if let Some(t) = target(j)
            && !labels.inside(within, t)
        {
            found = true;
        }
    });
    found
}

/// Where each node and each label is in the tree, numbered in preorder: whether a jump's
/// target lies inside a node is then two comparisons, not a walk of the node.
#[derive(Default)]
pub(super) struct Labels {
    /// A node's key to the preorder numbers of it and of the first node after it.
    span: HashMap<usize, (usize, usize)>,
    /// A label to the preorder number of the block or loop that defines it.
    def: HashMap<Target, usize>,
}

impl Labels {
    pub(super) fn of(root: &Node) -> Labels {
        fn number(n: &Node, next: &mut usize, l: &mut Labels) {
            let start = *next;
            *next += 1;
            match n {
                Node::Block(b, _) => {
                    l.def.insert(Target::Block(*b), start);
                }
                Node::Loop(b, _) => {
                    l.def.insert(Target::Loop(*b), start);
                }
                _ => {}
            }
            match n {
                Node::Seq(cs) => cs.iter().for_each(|c| number(c, next, l)),
                Node::Block(_, i) | Node::Loop(_, i) => number(i, next, l),
                Node::If(_, t, e) => {
                    number(t, next, l);
                    number(e, next, l);
                }
                _ => {}
            }
            l.span.insert(key(n), (start, *next));
        }
        let mut l = Labels::default();
        number(root, &mut 0, &mut l);
        l
    }

    /// Whether the target of a jump lies inside `n` (so that the jump does not leave `n`).
    pub(super) fn inside(&self, n: &Node, t: Target) -> bool {
        match (self.span.get(&key(n)), self.def.get(&t)) {
            (Some(&(start, end)), Some(&d)) => start <= d && d < end,
            _ => false,
        }
    }
}

pub(super) fn visit(n: &Node, f: &mut dyn FnMut(&Node)) {
    f(n);
    match n {
        Node::Seq(cs) => cs.iter().for_each(|c| visit(c, f)),
        Node::Block(_, i) | Node::Loop(_, i) => visit(i, f),
        Node::If(_, t, e) => {
            visit(t, f);
            visit(e, f);
        }
        _ => {}
    }
}

pub(super) fn visit_jumps(n: &Node, f: &mut dyn FnMut(&Node)) {
    visit(n, &mut |m| {
        if target(m).is_some() {
            f(m)
        }
    });
}

/// Whether control can reach the end of `n` (not every path ends in a jump).
fn completes(n: &Node) -> bool {
    match n {
        Node::Seq(cs) => cs.iter().all(completes),
        Node::If(_, t, e) => completes(t) || completes(e),
        Node::Block(b, inner) => {
            let mut breaks_here = false;
            visit_jumps(inner, &mut |j| {
                if matches!(j, Node::Break(x) if x == b) {
                    breaks_here = true;
                }
            });
            completes(inner) || breaks_here
        }
        Node::Loop(..) => false,
        Node::Statements(_) => true,
        Node::Break(_) | Node::Continue(_) | Node::Exit(_) => false,
    }
}

/// The exit test of the loop with header `h` and body `body`, if it has one (see the module
/// documentation): an `if`, the last child of the body, before which nothing jumps, one of
/// whose arms always leaves the loop (it cannot complete and does not continue the loop)
/// while the other never does. Returns the `if` and its exit arm.
pub(super) fn exit_test<'n>(
    h: BlockId,
    body: &'n Node,
    labels: &Labels,
) -> Option<(&'n Node, usize)> {
    let (before, last): (&[Node], &Node) = match body {
        Node::Seq(cs) => {
            let (last, before) = cs.split_last()?;
            (before, last)
        }
        other => (&[], other),
    };
    let Node::If(_, t, e) = last else { return None };
    if before.iter().any(|c| {
        let mut jumps = false;
        visit_jumps(c, &mut |_| jumps = true);
        jumps
    }) {
        return None;
    }
    let leaves_loop = |a: &Node| {
        let mut out = false;
        visit_jumps(a, &mut |j| match target(j) {
            Some(Target::Loop(x)) if x == h => {}
            Some(t) if !labels.inside(a, t) => out = true,
            _ => {}
        });
        out
    };
    let continues = |a: &Node| {
        let mut c = false;
        visit_jumps(a, &mut |j| {
            if matches!(target(j), Some(Target::Loop(x)) if x == h) {
                c = true;
            }
        });
        c
    };
    let always_leaves = |a: &Node| !completes(a) && !continues(a);
    match (leaves_loop(t), leaves_loop(e)) {
        (true, false) if always_leaves(t) => Some((last, 0)),
        (false, true) if always_leaves(e) => Some((last, 1)),
        _ => None,
    }
}

/// Whether `n` holds a loop.
pub(super) fn holds_loop(n: &Node) -> bool {
    match n {
        Node::Loop(..) => true,
        Node::Seq(children) => children.iter().any(holds_loop),
        Node::Block(_, inner) => holds_loop(inner),
        Node::If(_, t, e) => holds_loop(t) || holds_loop(e),
        Node::Statements(_) | Node::Break(_) | Node::Continue(_) | Node::Exit(_) => false,
    }
}

/// How many times `__ctl.push(..)` is written in `tokens`: in a body with no loop, a bound on
/// how many entries the control tape holds.
pub(super) fn count_pushes(tokens: &TokenStream) -> usize {
    use proc_macro2::TokenTree as Tt;
    let tts: Vec<Tt> = tokens.clone().into_iter().collect();
    let mut n = 0;
    for (k, tt) in tts.iter().enumerate() {
        match tt {
            Tt::Group(g) => n += count_pushes(&g.stream()),
            Tt::Ident(i) if i == "__ctl" => {
                if let (Some(Tt::Punct(p)), Some(Tt::Ident(m))) = (tts.get(k + 1), tts.get(k + 2))
                    && p.as_char() == '.'
                    && m == "push"
                {
                    n += 1;
                }
            }
            _ => {}
        }
    }
    n
}
