//! Windows of sinks: the adds of a loop's reverse sweep into an argument's sink at indices the
//! optimiser can prove in bounds.
//!
//! A load `x[i]` of an argument in a loop adds its adjoint into the argument's sink at `i` in
//! the reverse sweep (see `sinks`). Each add checks `i` against the sink's length, and the check
//! (a branch to a panic) keeps LLVM from vectorising the loop: `_sum_1000`'s reverse loop costs 8
//! instructions per element where the forward one costs 1.4. A person writing the gradient by
//! hand walks a sub-slice cut once; so does the reverse sweep here, where it can show that the
//! indices of a loop's iterations are consecutive:
//!
//! * the loop is a loop with an exit test (`while c { .. }`, `for i in a..b`), whose other arm
//!   runs its top-level blocks once per iteration: nothing in it jumps anywhere but back to the
//!   loop (a nested loop is fine; an `if` that only falls through is fine too, though the blocks
//!   inside it are not counted);
//! * a counter `c` the loop's exit records (see `counters`), which the loop assigns exactly once
//!   per iteration, by `c = c + 1` or `c = c - 1` in one of those top-level blocks;
//! * every load of the argument in the loop is in one of those blocks, at an index `c + base + e`
//!   (`base` built from integers the loop never assigns and the reverse sweep has at the loop's
//!   entry, `e` a literal offset, counting the step if it comes first), the same for all of
//!   them.
//!
//! The loop's `m` complete iterations then load `x[c_j + base + e]` (`c_j` the counter at the
//! start of iteration `j`): `m` consecutive indices. At the reverse sweep's entry into the loop
//! (where the counter holds its value at the exit, `c₀ ± m`) the sink is cut once to those `m`
//! elements (`rev::sink_window`, empty if the loop ran no complete iteration). The add of the
//! iteration the sweep's `__it` counts down to goes to the window's slot `__it` (or `m - 1 -
//! __it` for a counter stepped down): an index LLVM proves in bounds from the loop's own trip
//! count, so the loop can be vectorised. The index the load used is still computed (by the
//! re-run, or read from the tape) and checked against the slot in debug builds
//! (`rev::window_add`). Loads at several offsets (`x[i]` and `x[i + 1]`) keep the sink as it is:
//! a window spanning them measured slower (see `loop_windows`).
//!
//! The same analysis gives three more kinds of windows (see [`Of`]):
//!
//! * in the reverse sweep, of a buffer built in the body, cut from the slice the loop's guard
//!   lends (`control::Guards`): its shadow, for the adds of its loads' adjoints and the
//!   reverses of stores into it, and the buffer, for re-run loads. The guard is decided as the
//!   loop's code is made, so these are listed by loop and name (`control::ShadowWindow`) and
//!   cut by the guard's rewrite where it takes the guard;
//! * in the forward sweep, at the entry of a loop whose header tests `c < n` (`c` a counter
//!   stepped up, `n` a value the loop never changes; see `Reverse::counted_test`), whose count
//!   `n - c` is known there: of each stable argument the loop loads at `c + base + e` before
//!   the counter's step, and of a buffer built in the body whose uses in the loop are loads and
//!   stores keeping no record at one such index (cut from its guard). The slot of an iteration
//!   is `c - c₀`. Every index the loop will use is an element of the window, so a loop that
//!   would read past the end panics at the cut, with the primal's message.

use super::super::codegen::FastMap as HashMap;
use super::super::ir::*;
use super::super::structure::Node;
use super::control::{Labels, exit_test, target, visit, visit_jumps};
use super::counters::steps;
use super::{Access, Reverse, access};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeMap;

/// A window in one loop (see the module documentation): of an argument's sink, or of the
/// copy of an argument that re-run loads read.
pub(super) struct Window {
    /// The loop's header.
    pub(super) header: BlockId,
    /// The argument whose sink (or copy) it is, or the buffer built in the body whose shadow
    /// it is.
    pub(super) sink: Local,
    /// What it is a window of.
    pub(super) of: Of,
    /// Whether the indices grow with the forward iteration (the counter is stepped up).
    pub(super) up: bool,
    /// The lowest index, at the reverse sweep's entry into the loop (`__mH` complete
    /// iterations, the counter at its exit value).
    pub(super) lo: TokenStream,
}

/// What a [`Window`] is cut from.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Of {
    /// An argument's sink (`rev::sink_window`).
    Sink,
    /// The copy of an argument that re-run loads read (`rev::read_window`).
    Copy,
    /// The captured shadow of a buffer built in the body, through the loop's guard on it
    /// (`rev::shadow_window`; see `control::Guards`): made only if the reverse sweep of the
    /// loop takes that guard, which it decides after the loop's code is made.
    Shadow,
    /// A buffer built in the body that re-run loads read, through the loop's guard on it
    /// (`rev::slice_window`; made as [`Of::Shadow`] is).
    Built,
    /// A stable argument that the forward sweep loads from (`rev::read_window`, cut where the
    /// loop is entered, its count known there: see `Reverse::counted_test`).
    FwdArg,
    /// A buffer built in the body that the forward sweep loads from and stores into, through
    /// the loop's guard on it (`rev::slice_window`, `rev::slice_window_mut`).
    FwdBuilt,
}

/// The windows of a body's loops and the loads whose adds go through them.
#[derive(Default)]
pub(super) struct Windows {
    pub(super) list: Vec<Window>,
    /// Per load `(block, statement)`: its window.
    pub(super) at: HashMap<(usize, usize), usize>,
    /// Per load `(block, statement)` that a re-run block runs again: the window of the copy it
    /// reads.
    pub(super) reads: HashMap<(usize, usize), usize>,
    /// The integers the windows' starts read, per loop: its exit records them (see `counters`).
    pub(super) record: Vec<(BlockId, Local)>,
    /// Per load `(block, statement)` of a stable argument in the forward sweep: its window
    /// (see [`Of::FwdArg`]).
    pub(super) fwd_reads: HashMap<(usize, usize), usize>,
    /// The loops with windows in the forward sweep: header, the test's counter and the bound
    /// it is tested against (see `Reverse::counted_test`).
    pub(super) fwd_loops: Vec<(BlockId, Local, TokenStream)>,
}

/// The counter's value at the entry of the loop with header `h`, in the forward sweep.
pub(super) fn first_count(h: BlockId) -> syn::Ident {
    format_ident!("__c0_{}", h.0, span = Span::mixed_site())
}

/// The number of complete iterations of the loop with header `h`, in its forward sweep.
pub(super) fn fwd_iterations(h: BlockId) -> syn::Ident {
    format_ident!("__fm{}", h.0, span = Span::mixed_site())
}

/// The local holding window `k`.
pub(super) fn window_name(k: usize) -> syn::Ident {
    format_ident!("__w{}", k, span = Span::mixed_site())
}

/// The number of complete iterations of the loop with header `h`, in its reverse sweep.
pub(super) fn complete_iterations(h: BlockId) -> syn::Ident {
    format_ident!("__mi{}", h.0, span = Span::mixed_site())
}

/// The lowest index of a window: the counter's value there (`start`), plus the base and the
/// offset of its loads.
fn lowest(start: TokenStream, base: Option<TokenStream>, e: i64) -> TokenStream {
    let lo = match base {
        Some(b) => quote!((#start + #b)),
        None => start,
    };
    match e {
        0 => lo,
        v if v > 0 => {
            let v = v as usize;
            quote!((#lo + #v))
        }
        v => {
            let v = v.unsigned_abs() as usize;
            quote!((#lo - #v))
        }
    }
}

/// A value the loop never changes: an expression over literals and integers the reverse
/// sweep has at the loop's entry, written out only for the windows made.
#[derive(Clone, PartialEq)]
enum Inv {
    Lit(i64),
    /// An integer argument the body never assigns, a local with a snapshot slot (see
    /// `replay`), or (`recorded`) a local the loop's exit must record (see `counters`).
    Local {
        l: Local,
        recorded: bool,
    },
    Bin(BinOp, std::rc::Rc<Inv>, std::rc::Rc<Inv>),
}

impl Inv {
    fn lit(&self) -> Option<i64> {
        match self {
            Inv::Lit(v) => Some(*v),
            _ => None,
        }
    }

    /// The locals the loop's exit must record for it.
    fn uses(&self, out: &mut Vec<Local>) {
        match self {
            Inv::Lit(_) => {}
            Inv::Local { l, recorded } => {
                if *recorded {
                    out.push(*l)
                }
            }
            Inv::Bin(_, a, b) => {
                a.uses(out);
                b.uses(out);
            }
        }
    }

    /// The value in the forward sweep, where every local the loop never assigns holds it.
    fn fwd_tokens(&self, r: &Reverse<'_>) -> TokenStream {
        match self {
            Inv::Lit(v) => {
                let v = proc_macro2::Literal::i64_unsuffixed(*v);
                quote!(#v)
            }
            Inv::Local { l, .. } => {
                let x = r.names.local(*l);
                quote!(#x.primal)
            }
            Inv::Bin(op, a, b) => {
                let (a, b) = (a.fwd_tokens(r), b.fwd_tokens(r));
                match op {
                    BinOp::Add => quote!((#a + #b)),
                    BinOp::Sub => quote!((#a - #b)),
                    _ => quote!((#a * #b)),
                }
            }
        }
    }

    fn tokens(&self, r: &Reverse<'_>, whole: &Whole) -> TokenStream {
        match self {
            Inv::Lit(v) => {
                let v = proc_macro2::Literal::i64_unsuffixed(*v);
                quote!(#v)
            }
            Inv::Local { l, .. } if whole.snapshots[l.index()] => {
                let slot = super::snapshot_slot(*l);
                quote!((match &#slot {
                    ::core::option::Option::Some(v) => v.primal,
                    ::core::option::Option::None => ::core::unreachable!(),
                }))
            }
            Inv::Local { l, .. } => {
                let x = r.names.local(*l);
                quote!(#x.primal)
            }
            Inv::Bin(op, a, b) => {
                let (a, b) = (a.tokens(r, whole), b.tokens(r, whole));
                match op {
                    BinOp::Add => quote!((#a + #b)),
                    BinOp::Sub => quote!((#a - #b)),
                    _ => quote!((#a * #b)),
                }
            }
        }
    }
}

/// An integer's value in terms of the loop, as far as the windows need it.
#[derive(Clone)]
enum Sym {
    Unknown,
    Inv(Inv),
    /// `c + base + k`, `c` the counter's value when the iteration started.
    Aff {
        c: Local,
        base: Option<Inv>,
        k: i64,
    },
}

/// An integer literal's value (see `scalarise::literal_usize`).
fn literal(t: &TokenStream) -> Option<i64> {
    super::scalarise::literal_usize(t).and_then(|v| i64::try_from(v).ok())
}

/// `a op b` of two invariants (literals folded).
fn combine(a: &Inv, b: &Inv, op: BinOp) -> Option<Inv> {
    if let (Some(x), Some(y)) = (a.lit(), b.lit()) {
        let v = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y).filter(|v| *v >= 0),
            BinOp::Mul => x.checked_mul(y),
            _ => None,
        };
        if let Some(v) = v {
            return Some(Inv::Lit(v));
        }
    }
    matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
        .then(|| Inv::Bin(op, std::rc::Rc::new(a.clone()), std::rc::Rc::new(b.clone())))
}

/// `c + base + k` plus an invariant.
fn aff_plus(c: Local, base: &Option<Inv>, k: i64, inv: &Inv) -> Sym {
    if let Some(v) = inv.lit() {
        return match k.checked_add(v) {
            Some(k) => Sym::Aff { c, base: base.clone(), k },
            None => Sym::Unknown,
        };
    }
    let base = match base {
        None => Some(inv.clone()),
        Some(b) => combine(b, inv, BinOp::Add),
    };
    Sym::Aff { c, base, k }
}

struct Loop<'a> {
    r: &'a Reverse<'a>,
    /// Locals some block of the loop assigns.
    assigned: Vec<bool>,
    /// The counters: per local, whether its one step is up.
    counters: BTreeMap<Local, bool>,
    /// What the whole body tells (see [`Whole`]).
    whole: &'a Whole,
}

/// What the windows of every loop need to know of the whole body.
struct Whole {
    /// Locals with a snapshot slot (see `replay`): at hand in the whole pullback.
    snapshots: Vec<bool>,
    /// Locals some statement of the body assigns.
    assigned: Vec<bool>,
}

impl Loop<'_> {
    /// A local's value at an iteration's start.
    fn initial(&self, l: Local) -> Sym {
        if self.counters.contains_key(&l) {
            return Sym::Aff { c: l, base: None, k: 0 };
        }
        // Not always known to be an integer (`p.n` of a struct), but one all the same where
        // it meets the counter: Rust has no arithmetic that mixes types.
        if self.assigned[l.index()] {
            return Sym::Unknown;
        }
        // An integer argument the body never assigns is at hand in the whole pullback, and so
        // is a snapshot; any other local the loop never assigns is recorded by its exit.
        let stable_arg = (1..=self.r.body.n_args).contains(&l.index())
            && !self.r.refs[l.index()]
            && !self.whole.assigned[l.index()];
        let recorded = !stable_arg && !self.whole.snapshots[l.index()];
        Sym::Inv(Inv::Local { l, recorded })
    }

    fn operand(&self, env: &HashMap<Local, Sym>, o: &Operand) -> Sym {
        match o {
            Operand::Const(t) => literal(t).map_or(Sym::Unknown, |v| Sym::Inv(Inv::Lit(v))),
            Operand::Use(p) if p.projections.is_empty() => {
                env.get(&p.local).cloned().unwrap_or_else(|| self.initial(p.local))
            }
            _ => Sym::Unknown,
        }
    }

    fn eval(&self, env: &HashMap<Local, Sym>, rv: &Rvalue) -> Sym {
        match rv {
            Rvalue::Use(o) => self.operand(env, o),
            Rvalue::Binary(op, a, b) => {
                let (a, b) = (self.operand(env, a), self.operand(env, b));
                match (op, &a, &b) {
                    (BinOp::Add, Sym::Aff { c, base, k }, Sym::Inv(inv))
                    | (BinOp::Add, Sym::Inv(inv), Sym::Aff { c, base, k }) => {
                        aff_plus(*c, base, *k, inv)
                    }
                    (BinOp::Sub, Sym::Aff { c, base, k }, Sym::Inv(Inv::Lit(v))) => {
                        match k.checked_sub(*v) {
                            Some(k) => Sym::Aff { c: *c, base: base.clone(), k },
                            None => Sym::Unknown,
                        }
                    }
                    (_, Sym::Inv(x), Sym::Inv(y)) => {
                        combine(x, y, *op).map_or(Sym::Unknown, Sym::Inv)
                    }
                    _ => Sym::Unknown,
                }
            }
            _ => Sym::Unknown,
        }
    }
}

/// Adds to `out` the blocks of `n` that run whenever `n` does, in order, given that no jump in
/// `n` leaves it; returns whether control always reaches `n`'s end without a jump.
fn runs_through(n: &Node, out: &mut Vec<BlockId>) -> bool {
    match n {
        Node::Statements(b) => {
            out.push(*b);
            true
        }
        Node::Seq(cs) => cs.iter().all(|c| runs_through(c, out)),
        // Every jump inside lands at the block's end at the latest: what follows runs.
        Node::Block(_, inner) => {
            runs_through(inner, out);
            true
        }
        // A loop is left by a jump (to the end of the block around it), and the blocks of an
        // `if` run on one arm only.
        Node::Loop(..) | Node::If(..) | Node::Break(_) | Node::Continue(_) | Node::Exit(_) => false,
    }
}

/// The statements whose reverse names the captured shadow of a buffer built in the body (see
/// `Reverse::reverse_statement`): its stores (`rev::unstore_fresh`, `rev::unstore_at`) and its
/// loads by index (`rev::shadow_add`), as `(buffer, index, whether it is a load)`.
fn shadow_use(
    r: &Reverse<'_>,
    b: BlockId,
    i: usize,
    s: &Statement,
) -> Option<(Local, Local, bool)> {
    let StatementKind::Assign(place, rv) = &s.kind else { return None };
    if let Some(Access::Index(base, idx)) = access(place) {
        let mut reads_base = false;
        super::normalise::for_each_place_ref(rv, &mut |q| reads_base |= q.local == base);
        let stored = r.is_fresh(b, i) || r.stored[base.index()];
        return (r.captured_locals[base.index()]
            && stored
            && matches!(rv, Rvalue::Use(_))
            && !reads_base)
            .then_some((base, idx, false));
    }
    let (base, idx) = index_load(s)?;
    let b_ = base.index();
    (place.local != base && r.captured_locals[b_] && r.index_only[b_] && !r.inactive.bufs[b_])
        .then_some((base, idx, true))
}

/// `(base, index)` of a load `y = x[i]` into a local.
fn index_load(s: &Statement) -> Option<(Local, Local)> {
    let StatementKind::Assign(place, Rvalue::Use(Operand::Use(p))) = &s.kind else { return None };
    if !place.projections.is_empty() {
        return None;
    }
    match access(p) {
        Some(Access::Index(base, i)) => Some((base, i)),
        _ => None,
    }
}

/// The loads of stable arguments in the forward sweep that may read a window (see
/// [`Of::FwdArg`]): `(base, index)`.
fn fwd_arg_load(r: &Reverse<'_>, s: &Statement) -> Option<(Local, Local)> {
    index_load(s).filter(|(base, _)| {
        let b = base.index();
        r.index_only[b] && !r.inactive.bufs[b] && !r.handles[b] && !r.captured_locals[b]
    })
}

/// The loads whose adds go into a sink (see `Reverse::reverse_statement`): `(base, index)`.
fn sink_load(r: &Reverse<'_>, s: &Statement) -> Option<(Local, Local)> {
    index_load(s).filter(|(base, _)| {
        let b = base.index();
        r.index_only[b] && !r.inactive.bufs[b] && r.sinks[b]
    })
}

impl Reverse<'_> {
    /// Calls `f` with each buffer built in the body (with a captured shadow) that `s` names.
    fn built_mentioned(&self, s: &Statement, f: &mut dyn FnMut(Local)) {
        let StatementKind::Assign(place, rv) = &s.kind else { return };
        let mut seen: Vec<Local> = Vec::new();
        let mut note = |l: Local| {
            if self.captured_locals[l.index()] && !seen.contains(&l) {
                seen.push(l);
            }
        };
        note(place.local);
        super::normalise::for_each_place_ref(rv, &mut |q| note(q.local));
        seen.into_iter().for_each(f);
    }

    /// The counter and bound of a loop whose header tests `c < n` (`test`), `c` a counter of
    /// `lp` stepped up and `n` a value the loop never changes: its number of complete
    /// iterations is `n - c` at its entry, or zero.
    fn counted_test(&self, h: BlockId, test: Local, lp: &Loop<'_>) -> Option<(Local, Inv)> {
        let block = &self.body.blocks[h.index()];
        let assigns = |s: &&Statement| matches!(&s.kind, StatementKind::Assign(p, _) if p.local == test && p.projections.is_empty());
        let s = block.statements.iter().rfind(assigns)?;
        let StatementKind::Assign(_, Rvalue::Binary(BinOp::Lt, a, b)) = &s.kind else {
            return None;
        };
        let env = HashMap::default();
        let Sym::Aff { c, base: None, k: 0 } = lp.operand(&env, a) else { return None };
        let Sym::Inv(n) = lp.operand(&env, b) else { return None };
        lp.counters.get(&c).copied().unwrap_or(false).then_some((c, n))
    }

    /// The windows of the loops of `root` (see the module documentation).
    pub(super) fn plan_windows(&self, root: &Node) -> Windows {
        let labels = Labels::of(root);
        let mut out = Windows::default();
        let mut assigned = vec![false; self.body.locals.len()];
        for s in self.body.blocks.iter().flat_map(|b| &b.statements) {
            if let StatementKind::Assign(p, _) = &s.kind {
                assigned[p.local.index()] = true;
            }
        }
        let whole = Whole { snapshots: self.replayed(|p| &p.snapshots), assigned };
        visit(root, &mut |n| {
            if let Node::Loop(h, body) = n {
                self.loop_windows(*h, body, &labels, &whole, &mut out);
            }
        });
        self.labels.set(Some(labels));
        out
    }

    fn loop_windows(
        &self,
        h: BlockId,
        body: &Node,
        labels: &Labels,
        whole: &Whole,
        out: &mut Windows,
    ) {
        let Some((Node::If(test, t, e), exit_arm)) = exit_test(h, body, labels) else { return };
        let arm: &Node = if exit_arm == 0 { e } else { t };
        fn flatten<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
            match n {
                Node::Seq(cs) => cs.iter().for_each(|c| flatten(c, out)),
                other => out.push(other),
            }
        }
        let mut children = Vec::new();
        flatten(arm, &mut children);
        // The top-level blocks of the arm, each run once per complete iteration.
        let mut straight = Vec::new();
        for (i, c) in children.iter().enumerate() {
            if i + 1 == children.len() && matches!(c, Node::Continue(x) if *x == h) {
                break;
            }
            let mut jumps = false;
            visit_jumps(c, &mut |j| {
                if !target(j).is_some_and(|t| labels.inside(c, t)) {
                    jumps = true;
                }
            });
            if jumps {
                return;
            }
            runs_through(c, &mut straight);
        }
        let mut blocks = Vec::new();
        visit(body, &mut |n| {
            if let Node::Statements(b) = n {
                blocks.push(*b);
            }
        });
        let nlocals = self.body.locals.len();
        let mut assigned = vec![false; nlocals];
        for b in &blocks {
            for s in &self.body.blocks[b.index()].statements {
                if let StatementKind::Assign(p, _) = &s.kind
                    && p.projections.is_empty()
                {
                    assigned[p.local.index()] = true;
                }
            }
        }
        // The counters: integers assigned once per iteration, by a step of one. Per local: its
        // steps of one (block, up), and whether anything else assigns it.
        let mut found: HashMap<Local, (Vec<(BlockId, bool)>, bool)> = HashMap::default();
        for b in &blocks {
            let block = &self.body.blocks[b.index()];
            let st = steps(block);
            for (i, s) in block.statements.iter().enumerate() {
                let StatementKind::Assign(p, _) = &s.kind else { continue };
                if !p.projections.is_empty() || !self.inactive.ints[p.local.index()] {
                    continue;
                }
                let entry = found.entry(p.local).or_default();
                match st.iter().find(|(k, step)| *k == i && step.local == p.local) {
                    Some((_, step)) if literal(&step.by) == Some(1) => {
                        entry.0.push((*b, step.adds))
                    }
                    _ => entry.1 = true,
                }
            }
        }
        let mut counters = BTreeMap::new();
        for (c, (steps, other)) in found {
            if let ([(b, up)], false) = (steps.as_slice(), other)
                && straight.contains(b)
                && !self.counters.whole.contains(&c)
            {
                counters.insert(c, *up);
            }
        }
        if counters.is_empty() {
            return;
        }
        let lp = Loop { r: self, assigned, counters, whole };
        // The forward sweep's windows need the number of complete iterations at the loop's
        // entry: a test `c < n` in the header (the arm runs while it holds), `c` a counter
        // stepped up and `n` a value the loop never changes, make it `n - c` (or none).
        let fwd_counter = if exit_arm == 1 { self.counted_test(h, *test, &lp) } else { None };
        // Per sink: its loads in the loop, each `Some((block, statement, counter, base, e))` if
        // it can go through a window.
        type Load = Option<(usize, usize, Local, Option<Inv>, i64)>;
        let mut loads: BTreeMap<Local, Vec<Load>> = BTreeMap::new();
        // The re-run loads in the loop that read an argument's copy at `c + base + e`, by
        // argument, counter, base and offset: each group can have a window of the copy (shared
        // borrows, so a load that cannot stands in no one's way).
        type ReadKey = (Local, Local, Option<Inv>, i64);
        let mut reads: Vec<(ReadKey, Vec<Load>)> = Vec::new();
        // The straight blocks in order, from the arm's start (where the counters hold their
        // values at the iteration's start), carrying what is known of the integers from one to
        // the next but for those a block off the straight path may assign in between.
        let mut elsewhere = vec![false; nlocals];
        for b in blocks.iter().filter(|b| !straight.contains(b)) {
            for s in &self.body.blocks[b.index()].statements {
                if let StatementKind::Assign(p, _) = &s.kind {
                    elsewhere[p.local.index()] = true;
                }
            }
        }
        // Per buffer built in the body: the statements of the loop whose reverse names its
        // captured shadow, as `loads` (any other mention of the buffer in the loop is a `None`).
        let mut shadows: BTreeMap<Local, Vec<Load>> = BTreeMap::new();
        // Per buffer built in the body: the loads of the loop run again by its reverse sweep
        // (`None` for one off the straight path).
        let mut built: BTreeMap<Local, Vec<Load>> = BTreeMap::new();
        // The forward sweep's loads of stable arguments at `c + base + e` (`fwd_counter`'s
        // counter, before its step), by argument, base and offset; and, per buffer built in the
        // body, its loads and stores as `shadows` has them (`None` for one that cannot be in a
        // window of the forward sweep).
        let mut fwd_reads: Vec<(ReadKey, Vec<Load>)> = Vec::new();
        let mut fwd_built: BTreeMap<Local, Vec<Load>> = BTreeMap::new();
        let mut env: HashMap<Local, Sym> = HashMap::default();
        for b in &straight {
            env.retain(|l, _| !elsewhere[l.index()]);
            let rerun = self.replays[b.index()].as_ref().map(|p| &p.statements);
            for (i, s) in self.body.blocks[b.index()].statements.iter().enumerate() {
                let at =
                    |idx: Local| match env.get(&idx).cloned().unwrap_or_else(|| lp.initial(idx)) {
                        Sym::Aff { c, base: inv, k } => Some((b.index(), i, c, inv, k)),
                        _ => None,
                    };
                // The same in the forward sweep: at the test's counter, not yet stepped.
                let fwd_at = |idx: Local| {
                    let (c, _) = fwd_counter.as_ref()?;
                    let unstepped = match env.get(c) {
                        None => true,
                        Some(Sym::Aff { c: x, base: None, k: 0 }) => x == c,
                        Some(_) => false,
                    };
                    at(idx).filter(|l| unstepped && l.2 == *c)
                };
                if let Some((base, idx)) = fwd_arg_load(self, s)
                    && let Some(l) = fwd_at(idx)
                {
                    let key = (base, l.2, l.3.clone(), l.4);
                    match fwd_reads.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, ls)) => ls.push(Some(l)),
                        None => fwd_reads.push((key, vec![Some(l)])),
                    }
                }
                match shadow_use(self, *b, i, s) {
                    Some((base, idx, load)) => {
                        shadows.entry(base).or_default().push(at(idx));
                        if load && rerun.is_some_and(|r| r.contains(&i)) {
                            built.entry(base).or_default().push(at(idx));
                        }
                        // A store that keeps a record: no window (see `control::Guards`).
                        let fresh = load || self.is_fresh(*b, i);
                        fwd_built.entry(base).or_default().push(fwd_at(idx).filter(|_| fresh));
                    }
                    None => self.built_mentioned(s, &mut |l| {
                        shadows.entry(l).or_default().push(None);
                        built.entry(l).or_default().push(None);
                        fwd_built.entry(l).or_default().push(None);
                    }),
                }
                if let Some((base, idx)) = sink_load(self, s) {
                    let load = at(idx);
                    if let Some((_, _, c, inv, e)) = &load
                        && self.copied[base.index()]
                        && rerun.is_some_and(|r| r.contains(&i))
                    {
                        let group = reads
                            .iter_mut()
                            .find(|(k, _)| k.0 == base && k.1 == *c && k.2 == *inv && k.3 == *e);
                        match group {
                            Some((_, ls)) => ls.push(load.clone()),
                            None => reads.push(((base, *c, inv.clone(), *e), vec![load.clone()])),
                        }
                    }
                    loads.entry(base).or_default().push(load);
                }
                // Only integers meet the counter in an index.
                if let StatementKind::Assign(p, rv) = &s.kind
                    && p.projections.is_empty()
                    && self.inactive.ints[p.local.index()]
                {
                    let v = lp.eval(&env, rv);
                    env.insert(p.local, v);
                }
            }
        }
        // Loads off the straight path (the header, an arm of an `if`, a nested loop): the
        // argument gets no window of its sink in this loop (its copy may still have one: the
        // copy is only read, and the windows of it only lend their slices).
        for b in blocks.iter().filter(|b| !straight.contains(b)) {
            for s in &self.body.blocks[b.index()].statements {
                if let Some((base, _)) = sink_load(self, s) {
                    loads.entry(base).or_default().push(None);
                }
                self.built_mentioned(s, &mut |l| {
                    shadows.entry(l).or_default().push(None);
                    built.entry(l).or_default().push(None);
                    fwd_built.entry(l).or_default().push(None);
                });
            }
        }
        let groups = loads.into_iter().map(|(b, ls)| (b, ls, Of::Sink));
        let groups = groups.chain(reads.into_iter().map(|(key, ls)| (key.0, ls, Of::Copy)));
        let groups = groups.chain(shadows.into_iter().map(|(b, ls)| (b, ls, Of::Shadow)));
        let groups = groups.chain(built.into_iter().map(|(b, ls)| (b, ls, Of::Built)));
        let groups = groups.chain(fwd_reads.into_iter().map(|(key, ls)| (key.0, ls, Of::FwdArg)));
        let groups = groups.chain(fwd_built.into_iter().map(|(b, ls)| (b, ls, Of::FwdBuilt)));
        let m = complete_iterations(h);
        for (sink, ls, of) in groups {
            let Some(ls) = ls.into_iter().collect::<Option<Vec<_>>>() else { continue };
            let (c, inv) = (ls[0].2, ls[0].3.clone());
            if ls.iter().any(|l| l.2 != c || l.3 != inv) {
                continue;
            }
            let e = ls[0].4;
            if ls.iter().any(|l| l.4 != e) {
                // Loads at several offsets (`x[i]`, `x[i + 1]`): a window of `m + e_max -
                // e_min` slots would hold them, but LLVM keeps the check of `__it + 1` against
                // that length (measured on `rosenbrock_1000`: 50.3k -> 53.3k instructions), so
                // the sink stays as it is.
                continue;
            }
            let up = lp.counters[&c];
            let x = self.names.local(c);
            if matches!(of, Of::FwdArg | Of::FwdBuilt) {
                // Cut at the loop's entry, where the counter holds its first value (see
                // `fwd_window_decls`); nothing to record.
                let c0 = first_count(h);
                let lo = lowest(quote!(#c0), inv.as_ref().map(|b| b.fwd_tokens(self)), e);
                if !out.fwd_loops.iter().any(|l| l.0 == h)
                    && let Some((_, n)) = &fwd_counter
                {
                    out.fwd_loops.push((h, c, n.fwd_tokens(self)));
                }
                let k = out.list.len();
                out.list.push(Window { header: h, sink, of, up, lo });
                if of == Of::FwdArg {
                    for l in ls {
                        out.fwd_reads.insert((l.0, l.1), k);
                    }
                }
                continue;
            }
            // The counter's value at the lowest index: the first complete iteration's (stepped
            // up), or the last's (stepped down, one above the exit value).
            let start = if up { quote!((#x.primal - #m)) } else { quote!((#x.primal + 1)) };
            let lo = lowest(start, inv.as_ref().map(|b| b.tokens(self, whole)), e);
            // What the window's start reads, recorded by the loop's exit (see `counters`). A
            // loop inside a loop records on a tape, a push and a pop per execution of the loop:
            // measured on `gmm`'s triangular loop (4.5 iterations on average), a window whose
            // counter had to be added to its tape cost 28 instructions per execution more than
            // the checks it saved, so there a window only reads what the loop records already.
            let mut reads = vec![c];
            if let Some(b) = &inv {
                b.uses(&mut reads);
            }
            let missing = reads.iter().filter(|l| !self.counters.at_hand(h, **l));
            if self.counters.nested.contains(&h) && missing.clone().next().is_some() {
                continue;
            }
            for &l in missing {
                if !out.record.contains(&(h, l)) {
                    out.record.push((h, l));
                }
            }
            let k = out.list.len();
            out.list.push(Window { header: h, sink, of, up, lo });
            // A shadow's window is found by the guard's rewrite of the loop's code (see
            // `control::Guards`), not by statement.
            let at = match of {
                Of::Sink => &mut out.at,
                Of::Copy => &mut out.reads,
                Of::Shadow | Of::Built | Of::FwdArg | Of::FwdBuilt => continue,
            };
            for l in ls {
                at.insert((l.0, l.1), k);
            }
        }
    }

    /// The windows of the loop with header `h`, declared where its reverse sweep starts (see
    /// [`Self::plan_windows`]), `m` the number of complete iterations.
    pub(super) fn window_decls(&self, h: BlockId, m: TokenStream) -> TokenStream {
        let rt = super::rt();
        let mh = complete_iterations(h);
        let mut out = TokenStream::new();
        let reverse = |w: &&Window| !matches!(w.of, Of::FwdArg | Of::FwdBuilt);
        let windows = self.windows.list.iter().enumerate();
        for (k, w) in windows.filter(|(_, w)| w.header == h && reverse(w)) {
            if out.is_empty() {
                out = quote!(let #mh: usize = #m;);
            }
            let (name, lo) = (window_name(k), &w.lo);
            if matches!(w.of, Of::Shadow | Of::Built) {
                // Cut where the guard is taken (see `Self::shadow_window_decl`).
                continue;
            }
            if w.of == Of::Copy {
                let x = self.names.local(w.sink);
                out.extend(quote!(let #name = #rt::rev::read_window(&#x, #mh, || #lo);));
            } else {
                let acc = super::accumulator(w.sink);
                let live = self.live(w.sink).unwrap_or_else(|| quote!(true));
                // One add per iteration: if the sink is still zero, the adds write.
                let once = self.windows.at.values().filter(|&&j| j == k).count() == 1;
                out.extend(quote!(
                    let mut #name = #rt::rev::sink_window(&mut #acc, #live, #once, #mh, || #lo);
                ));
            }
        }
        out
    }

    /// The windows of captured shadows, for the guards that cut them (see [`Of::Shadow`]):
    /// per loop header and shadow, the window's name, its slot in the loop and its lowest
    /// index.
    pub(super) fn shadow_windows(&self) -> Vec<super::control::ShadowWindow> {
        let windows = self.windows.list.iter().enumerate();
        let windows =
            windows.filter(|(_, w)| matches!(w.of, Of::Shadow | Of::Built | Of::FwdBuilt));
        windows
            .map(|(k, w)| {
                let forward = w.of == Of::FwdBuilt;
                super::control::ShadowWindow {
                    header: w.header,
                    forward,
                    shadow: match w.of {
                        Of::Shadow => super::shadow_capture(w.sink),
                        _ => self.names.local(w.sink),
                    },
                    name: window_name(k),
                    slot: if forward { self.fwd_slot(w.header) } else { self.window_slot(k) },
                    m: if forward {
                        fwd_iterations(w.header)
                    } else {
                        complete_iterations(w.header)
                    },
                    lo: w.lo.clone(),
                }
            })
            .collect()
    }

    /// The slot of the current iteration in the forward sweep's windows of the loop with
    /// header `h`: the counter's steps since the loop's entry.
    pub(super) fn fwd_slot(&self, h: BlockId) -> TokenStream {
        let rt = super::rt();
        let Some((_, c, _)) = self.windows.fwd_loops.iter().find(|l| l.0 == h) else {
            return quote!(0);
        };
        let (x, c0) = (self.names.local(*c), first_count(h));
        quote!(#rt::rev::slot_up(#x.primal, #c0))
    }

    /// The forward sweep's windows of stable arguments in the loop with header `h`, and the
    /// count of its complete iterations they and the guards' windows are cut to, declared at
    /// the loop's entry (see [`Of::FwdArg`]).
    pub(super) fn fwd_window_decls(&self, h: BlockId) -> TokenStream {
        let rt = super::rt();
        let Some((_, c, n)) = self.windows.fwd_loops.iter().find(|l| l.0 == h) else {
            return quote!();
        };
        let (x, c0, m) = (self.names.local(*c), first_count(h), fwd_iterations(h));
        let mut out = quote! {
            let #c0: usize = #x.primal;
            let #m: usize = #rt::rev::trips_below(#c0, #n);
        };
        let windows = self.windows.list.iter().enumerate();
        for (k, w) in windows.filter(|(_, w)| w.header == h && w.of == Of::FwdArg) {
            let (name, lo, b) = (window_name(k), &w.lo, self.names.local(w.sink));
            out.extend(quote!(let #name = #rt::rev::read_window(&#b, #m, || #lo);));
        }
        out
    }

    /// The slot of a load's add in its window (see [`Self::plan_windows`]).
    pub(super) fn window_slot(&self, k: usize) -> TokenStream {
        let rt = super::rt();
        let w = &self.windows.list[k];
        let mh = complete_iterations(w.header);
        if w.up { quote!(__it) } else { quote!(#rt::rev::slot_down(#mh, __it)) }
    }
}

#[cfg(test)]
mod tests {
    /// How many windows of sinks `f`'s reverse rule cuts (`tests/tests/sink_windows.rs` checks
    /// the gradients of the same shapes).
    fn windows(f: &str) -> usize {
        count(f, "rev :: sink_window")
    }

    /// How many windows of copies its re-run loads read.
    fn read_windows(f: &str) -> usize {
        count_in(f, "rev :: read_window", "__mi")
    }

    /// How many windows of `f`'s forward sweep (cut to `__fmH` iterations) are made by `what`.
    fn forward_windows(f: &str, what: &str) -> usize {
        count_in(f, what, "__fm")
    }

    fn count(f: &str, what: &str) -> usize {
        crate::differentiable::rrule_source(f).matches(what).count()
    }

    /// How many calls `what` have an argument list that names `sweep` (the number of
    /// iterations of the reverse sweep, `__mi`, or of the forward sweep, `__fm`).
    fn count_in(f: &str, what: &str, sweep: &str) -> usize {
        let src = crate::differentiable::rrule_source(f);
        src.match_indices(what)
            .filter(|(k, _)| {
                let rest = &src[k + what.len()..];
                let args = &rest[..rest.find(';').unwrap_or(rest.len())];
                args.contains(sweep)
            })
            .count()
    }

    #[test]
    fn re_run_loads_read_windows_of_copies() {
        // Both loads are run again (for the product's pullback): one window per argument.
        let dot = "fn f(x: &[f64], y: &[f64]) -> f64 { let mut s = 0.0; \
                   for i in 0..x.len() { s += x[i] * y[i]; } s }";
        assert_eq!(read_windows(dot), 2);
        // Loads at three offsets: a window each (they only lend the copy).
        let stencil = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 1..x.len() - 1 { \
                       let d = x[i - 1] - 2.0 * x[i] + x[i + 1]; s += d * d; } s }";
        assert_eq!(read_windows(stencil), 3);
        // A sum needs no value of the load: nothing is read again.
        let sum =
            "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 0..x.len() { s += x[i]; } s }";
        assert_eq!(read_windows(sum), 0);
        // Generic code: `T::from_f64` of a literal is a constant, so the block is run again
        // like its `f64` twin rather than taped (the same two windows as `rosenbrock`).
        let generic = "fn f<T: Float>(x: &[T]) -> T { let mut s = T::zero(); let mut i = 0; \
                       while i + 1 < x.len() { let a = x[i + 1] - x[i] * x[i]; \
                       s += T::from_f64(100.0) * a * a; i += 1; } s }";
        assert_eq!(read_windows(generic), 2);
        // A stride of two: no window.
        let strided = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; \
                       for i in 0..x.len() / 2 { s += x[2 * i] * x[2 * i + 1]; } s }";
        assert_eq!(read_windows(strided), 0);
    }

    #[test]
    fn consecutive_loads_get_windows() {
        let sum = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = 0; \
                   while i < x.len() { s += x[i]; i += 1; } s }";
        assert_eq!(windows(sum), 1);
        let dot = "fn f(x: &[f64], y: &[f64]) -> f64 { let mut s = 0.0; \
                   for i in 0..x.len() { s += x[i] * y[i]; } s }";
        assert_eq!(windows(dot), 2);
        let stencil = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 1..x.len() - 1 { \
                       let d = x[i - 1] - 2.0 * x[i] + x[i + 1]; s += d * d; } s }";
        // Loads at three offsets: no window (see `loop_windows`).
        assert_eq!(windows(stencil), 0);
        let ahead = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; \
                     for i in 0..x.len() - 1 { s += 2.0 * x[i + 1]; } s }";
        assert_eq!(windows(ahead), 1);
        let step_first = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = 0; \
                          while i + 1 < x.len() { i += 1; s += x[i] * x[i - 1]; } s }";
        assert_eq!(windows(step_first), 0);
        let after_step = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = 0; \
                          while i < x.len() { i += 1; s += x[i - 1].sin(); } s }";
        assert_eq!(windows(after_step), 1);
        let down = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = x.len(); \
                    while i > 0 { i -= 1; s = s * 0.5 + x[i] * x[i]; } s }";
        assert_eq!(windows(down), 1);
        let rows = "fn f(a: &[f64], n: usize) -> f64 { let mut t = 0.0; \
                    for r in 0..a.len() / n { let mut row = 0.0; \
                    for c in 0..n { row += a[r * n + c]; } t += row * row; } t }";
        assert_eq!(windows(rows), 1);
    }

    #[test]
    fn other_loads_keep_the_sink() {
        let branch = "fn f(x: &[f64], y: &[f64]) -> f64 { let mut s = 0.0; \
                      for i in 0..x.len() { if x[i] > 0.0 { s += y[i]; } s += x[i] * 0.5; } s }";
        // `x[i]` in the loop's test block and `x[i]` after the `if` both run every iteration,
        // but the test's block is a top-level block too: only `y`, loaded under the branch,
        // keeps its sink.
        assert_eq!(windows(branch), 1);
        let brk = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; \
                   for i in 0..x.len() { s += x[i] * x[i]; if s > 2.0 { break; } } s }";
        assert_eq!(windows(brk), 0);
        let strided = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; \
                       for i in 0..x.len() / 2 { s += x[2 * i] * x[2 * i + 1]; } s }";
        assert_eq!(windows(strided), 0);
        let step_two = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = 0; \
                        while i < x.len() { s += x[i]; i += 2; } s }";
        assert_eq!(windows(step_two), 0);
    }

    #[test]
    fn counted_loops_get_windows_in_the_forward_sweep() {
        let reads = |f: &str| forward_windows(f, "rev :: read_window");
        let writes = |f: &str| forward_windows(f, "rev :: slice_window_mut");
        // `for i in a..b`: the count is known at the loop's entry; each argument loaded at the
        // counter gets a window.
        let dot = "fn f(x: &[f64], y: &[f64]) -> f64 { let mut s = 0.0; \
                   for i in 0..x.len() { s += x[i] * y[i]; } s }";
        assert_eq!(reads(dot), 2);
        // Two offsets of one argument: a window each (they only read).
        let stencil = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 1..x.len() - 1 { \
                       let d = x[i - 1] - 2.0 * x[i] + x[i + 1]; s += d * d; } s }";
        assert_eq!(reads(stencil), 3);
        // A buffer built in the body and written at the counter, through its guard.
        let fill = "fn f(x: &[f64]) -> f64 { let mut k = vec![0.0; x.len()]; \
                    for i in 0..x.len() { k[i] = x[i] * 2.0; } k.iter().sum::<f64>() }";
        assert_eq!(writes(fill), 1);
        assert_eq!(reads(fill), 1);
        // A `while` loop whose test is not `counter < bound`, a counter stepped down, a load
        // after the step: no count at the entry, or no slot, so no window.
        let down = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = x.len(); \
                    while i > 0 { i -= 1; s += x[i]; } s }";
        assert_eq!(reads(down), 0);
        let after_step = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; let mut i = 0; \
                          while i < x.len() { i += 1; s += x[i - 1].sin(); } s }";
        assert_eq!(reads(after_step), 0);
        // A `break`: the count is not known.
        let brk = "fn f(x: &[f64]) -> f64 { let mut s = 0.0; \
                   for i in 0..x.len() { s += x[i] * x[i]; if s > 2.0 { break; } } s }";
        assert_eq!(reads(brk), 0);
    }

    #[test]
    fn buffers_built_in_the_body_get_windows_through_their_guards() {
        let shadow = |f: &str| count(f, "rev :: shadow_window");
        let built = |f: &str| count_in(f, "rev :: slice_window", "__mi");
        // Stores that keep no record, then a sum: the store loop's reverse takes the stored
        // elements' adjoints from a window of the shadow.
        let fill = "fn f(x: &[f64]) -> f64 { let mut k = vec![0.0; x.len()]; \
                    for i in 0..x.len() { k[i] = x[i] * 2.0; } k.iter().sum::<f64>() }";
        assert_eq!(shadow(fill), 1);
        // A scratch buffer rewritten per outer iteration (records) and read back by a product:
        // a window of the shadow and one of the buffer in the product's loop (its re-run loads
        // make its exit record the counter), and one of the shadow in the store loop, whose
        // block is run again with its records on the tape (see `replay`), so that its exit
        // records the counter as well (without it, a window there would cost a push per
        // execution of a nested loop: see `loop_windows`).
        let scratch = "fn f(x: &[f64], y: &[f64]) -> f64 { let n = x.len(); \
                       let mut h = vec![0.0; n]; let mut l = 0.0; for s in 0..y.len() { \
                       for j in 0..n { h[j] = x[j] * (s as f64); } let mut o = 0.0; \
                       for j in 0..n { o += y[j] * h[j]; } l += o * o; } l }";
        assert_eq!(shadow(scratch), 2);
        assert_eq!(built(scratch), 1);
        // Two offsets in one loop, or a load under a branch: the guard stays as it was.
        let offsets = "fn f(x: &[f64]) -> f64 { let n = x.len(); let mut h = vec![0.0; n]; \
                       for j in 0..n { h[j] = x[j].cos(); } let mut s = 0.0; \
                       for j in 0..n - 1 { s += h[j] * h[j + 1]; } s }";
        assert_eq!(shadow(offsets), 1);
        assert_eq!(built(offsets), 0);
        let branch = "fn f(x: &[f64]) -> f64 { let n = x.len(); let mut h = vec![0.0; n]; \
                      for j in 0..n { h[j] = x[j] * x[j]; } let mut s = 0.0; \
                      for j in 0..n { if x[j] > 0.0 { s += h[j] * 3.0; } s += x[j]; } s }";
        assert_eq!(shadow(branch), 1);
    }
}
