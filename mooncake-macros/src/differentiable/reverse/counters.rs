//! Integers a re-run block reads, recovered per loop instead of taped per iteration.
//!
//! A block the reverse sweep runs again (see `replay`) needs the integers it reads before it
//! assigns them: the loop counters and the indices of outer loops. Taping them at the block's
//! start costs a push and a pop per iteration, the largest part of the tape of an inner loop.
//! Most of them need no tape entry per iteration:
//!
//! * an integer the loop never assigns (the counter of an outer loop, a length) holds one value
//!   for the whole execution of the loop: recorded once when the loop exits;
//! * an integer the loop assigns only by stepping it (`i = i + 1`, `k -= 2`, or the temporary
//!   then copy that lowering makes of `i += 1`) is recorded when the loop exits, and the
//!   reverse sweep steps it back as it goes back over the step: each block's reverse starts by
//!   undoing the steps the block made, so the integer holds, when a block is run again, what it
//!   held when the block first ran.
//!
//! The same holds of a value that is not an integer (a float read by an inner loop and
//! assigned by an outer one): recorded whole, once per execution of the loop that never assigns
//! it, rather than taped at every execution of the block.
//!
//! The record goes on a tape of the loop's own (one entry per execution of the loop, a slot
//! for a loop outside every loop), pushed where the loop's trip count is recorded (every exit
//! of the loop: see `control`), and popped where the reverse sweep enters the loop. An integer
//! that is neither stays on the block's tape.
//!
//! A local that no loop between the block and an outer loop assigns is recorded by the
//! outermost such loop: once per execution of it, and so fewer times than by the innermost
//! (`kron_sum`'s `aij`, assigned by the loop over `j` and read by the two loops inside it, is
//! recorded once per `j`, not once per `(j, r)`; its `n = na * nb`, assigned outside every loop,
//! once per call). The reverse sweep restores it where it enters that loop, and nothing inside
//! assigns it. An integer the inner loop only steps is recorded by the inner loop, as before:
//! recording it further out would have the reverse sweep undo the steps of every loop in
//! between: measured on `gmm` (`idx`, stepped by the triangular loop), 0.6M instructions per
//! call more than recording it by the inner loop.

use super::super::ir::*;
use super::super::structure::Node;
use super::replay::Replay;
use proc_macro2::TokenStream;
use std::collections::{BTreeMap, BTreeSet};

/// `x = x ± c` (or `x = t` after `t = x ± c` in the same block): a step of `x`.
#[derive(Clone)]
pub(super) struct Step {
    pub(super) local: Local,
    /// Whether the step adds `by` (else it subtracts it).
    pub(super) adds: bool,
    pub(super) by: TokenStream,
}

/// What the loops record of the integers their re-run blocks read (see the module
/// documentation).
#[derive(Default)]
pub(super) struct Counters {
    /// Per loop (by header): the integers recorded when it exits, in order.
    pub(super) records: BTreeMap<BlockId, Vec<Local>>,
    /// The locals recorded whole (as `CoDual`s, not integers): values a re-run block reads that
    /// its loop never assigns (see the module documentation).
    pub(super) whole: BTreeSet<Local>,
    /// The loops inside another loop: their records go on a tape (the others', in a slot).
    pub(super) nested: BTreeSet<BlockId>,
    /// Per loop inside another loop: the loop directly around it.
    pub(super) parent: BTreeMap<BlockId, BlockId>,
    /// Per block: the steps of recorded integers the block makes, which the start of its reverse
    /// undoes.
    pub(super) undo: Vec<Vec<Step>>,
}

/// The loops of a structured program: per header, the blocks inside (nested loops' included),
/// the innermost loop of each block, and the loops nested in another.
struct Loops {
    blocks: BTreeMap<BlockId, BTreeSet<BlockId>>,
    innermost: BTreeMap<BlockId, BlockId>,
    nested: BTreeSet<BlockId>,
    parent: BTreeMap<BlockId, BlockId>,
}

impl Counters {
    /// Whether the reverse sweep has `l` at hand where it enters the loop `h`: recorded by `h`'s
    /// exit or by the exit of a loop around it (which restored it on entering that loop, and
    /// which assigns it only by steps the reverse sweep undoes: see [`plan`]).
    pub(super) fn at_hand(&self, h: BlockId, l: Local) -> bool {
        let mut at = Some(h);
        while let Some(h) = at {
            if self.records.get(&h).is_some_and(|r| r.contains(&l)) {
                return true;
            }
            at = self.parent.get(&h).copied();
        }
        false
    }
}

fn loops(root: &Node) -> Loops {
    fn walk(n: &Node, stack: &mut Vec<BlockId>, out: &mut Loops) {
        match n {
            Node::Seq(cs) => cs.iter().for_each(|c| walk(c, stack, out)),
            Node::Block(_, inner) => walk(inner, stack, out),
            Node::Loop(h, body) => {
                if let Some(p) = stack.last() {
                    out.nested.insert(*h);
                    out.parent.insert(*h, *p);
                }
                out.blocks.entry(*h).or_default();
                stack.push(*h);
                walk(body, stack, out);
                stack.pop();
            }
            Node::Statements(b) => {
                for h in stack.iter() {
                    out.blocks.entry(*h).or_default().insert(*b);
                }
                if let Some(h) = stack.last() {
                    out.innermost.insert(*b, *h);
                }
            }
            Node::If(_, t, e) => {
                walk(t, stack, out);
                walk(e, stack, out);
            }
            Node::Break(_) | Node::Continue(_) | Node::Exit(_) => {}
        }
    }
    let mut out = Loops {
        blocks: BTreeMap::new(),
        innermost: BTreeMap::new(),
        nested: BTreeSet::new(),
        parent: BTreeMap::new(),
    };
    walk(root, &mut Vec::new(), &mut out);
    out
}

/// `x ± c` with `x` a plain local and `c` a constant: `(x, adds, c)`.
fn step_of(rv: &Rvalue) -> Option<(Local, bool, TokenStream)> {
    let Rvalue::Binary(op @ (BinOp::Add | BinOp::Sub), Operand::Use(x), Operand::Const(c)) = rv
    else {
        return None;
    };
    x.projections.is_empty().then(|| (x.local, *op == BinOp::Add, c.clone()))
}

/// The steps the statements of `block` make: statement index and step.
pub(super) fn steps(block: &Block) -> Vec<(usize, Step)> {
    let mut out = Vec::new();
    for (i, s) in block.statements.iter().enumerate() {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if !p.projections.is_empty() {
            continue;
        }
        // `x = x ± c`.
        if let Some((x, adds, by)) = step_of(rv)
            && x == p.local
        {
            out.push((i, Step { local: x, adds, by }));
            continue;
        }
        // `x = t` after `t = x ± c`, with nothing assigning `x` or `t` between.
        let Rvalue::Use(Operand::Use(t)) = rv else { continue };
        if !t.projections.is_empty() || t.local == p.local {
            continue;
        }
        let assigns = |s: &Statement, l: Local| matches!(&s.kind, StatementKind::Assign(q, _) if q.local == l && q.projections.is_empty());
        let def = block.statements[..i].iter().rposition(|s| assigns(s, t.local));
        let Some(j) = def else { continue };
        let StatementKind::Assign(_, def_rv) = &block.statements[j].kind else { continue };
        if let Some((x, adds, by)) = step_of(def_rv)
            && x == p.local
            && !block.statements[j + 1..i].iter().any(|s| assigns(s, x))
        {
            out.push((i, Step { local: x, adds, by }));
        }
    }
    out
}

/// Takes out of the re-run blocks' tapes the integers their loops can record instead (see
/// the module documentation); `ints` says which locals are integers.
pub(super) fn plan(
    body: &Body,
    root: &Node,
    replays: &mut [Option<Replay>],
    ints: &[bool],
) -> Counters {
    let loops = loops(root);
    let steps: Vec<Vec<(usize, Step)>> = body.blocks.iter().map(steps).collect();
    // Per loop: the locals its blocks assign, and those assigned other than by a step.
    let mut assigned: BTreeMap<BlockId, BTreeSet<Local>> = BTreeMap::new();
    let mut unstepped: BTreeMap<BlockId, BTreeSet<Local>> = BTreeMap::new();
    for (h, blocks) in &loops.blocks {
        let (a, u) = (assigned.entry(*h).or_default(), unstepped.entry(*h).or_default());
        for b in blocks {
            for (i, s) in body.blocks[b.index()].statements.iter().enumerate() {
                if let StatementKind::Assign(p, _) = &s.kind
                    && p.projections.is_empty()
                {
                    a.insert(p.local);
                    if !steps[b.index()].iter().any(|(k, st)| *k == i && st.local == p.local) {
                        u.insert(p.local);
                    }
                }
            }
        }
    }
    let mut counters = Counters {
        nested: loops.nested.clone(),
        parent: loops.parent.clone(),
        undo: vec![Vec::new(); body.blocks.len()],
        ..Counters::default()
    };
    for (b, plan) in replays.iter_mut().enumerate() {
        let Some(plan) = plan else { continue };
        let Some(h) = loops.innermost.get(&BlockId(b as u32)) else { continue };
        // The outermost of the loops around the block, from the innermost out, that all pass
        // `ok`: the fewer executions a loop has, the fewer records it pushes.
        let outermost = |ok: &dyn Fn(BlockId) -> bool| {
            let (mut at, mut found) = (Some(*h), None);
            while let Some(l) = at.filter(|l| ok(*l)) {
                found = Some(l);
                at = loops.parent.get(&l).copied();
            }
            found
        };
        // Values (floats, mostly) the loop never assigns: one per execution of the outermost
        // loop around it that never assigns them, as for integers (`let aij = a[i]; for r ..
        // { k[..] = aij * b[r] }`).
        let mut whole = Vec::new();
        for x in plan.values.clone() {
            if let Some(l) = outermost(&|l| !assigned[&l].contains(&x)) {
                whole.push(x);
                counters.whole.insert(x);
                let record = counters.records.entry(l).or_default();
                if !record.contains(&x) {
                    record.push(x);
                }
            }
        }
        plan.values.retain(|x| !whole.contains(x));
        let mut recorded = Vec::new();
        for x in plan.ints.clone() {
            if !ints[x.index()] {
                continue;
            }
            if let Some(l) = outermost(&|l| {
                !assigned[&l].contains(&x) || (l == *h && !unstepped[&l].contains(&x))
            }) {
                recorded.push((x, l));
            }
        }
        if recorded.is_empty() {
            continue;
        }
        plan.ints.retain(|x| !recorded.iter().any(|(r, _)| r == x));
        for (x, h) in recorded {
            let record = counters.records.entry(h).or_default();
            if !record.contains(&x) {
                record.push(x);
            }
            // A stepped integer: every step of it in the loop (the inner loops' included) is
            // undone by the reverse sweep (steps of integers commute, so their order does not
            // matter).
            if assigned[&h].contains(&x) {
                for inner in &loops.blocks[&h] {
                    let undo = &mut counters.undo[inner.index()];
                    if undo.iter().any(|u| u.local == x) {
                        continue;
                    }
                    undo.extend(
                        steps[inner.index()]
                            .iter()
                            .filter(|(_, s)| s.local == x)
                            .map(|(_, s)| s.clone()),
                    );
                }
            }
        }
    }
    counters
}
