//! Recompute instead of tape: which blocks of a loop the reverse sweep re-runs rather than
//! keeping their statements' pullbacks on a tape (`REVERSE-CODEGEN.md`, shape (b)).
//!
//! A block inside a loop whose rules are all pure (arithmetic, float methods, loads of a
//! shared-reference argument) can be run again in the reverse sweep: the rules then make the
//! same pullbacks from the same values. What the re-run needs is only what the block reads
//! before it assigns it:
//!
//! * a shared-reference argument (`x: &[f64]`, never reassigned): it cannot change while the
//!   rule runs, so the reverse sweep reads a copy made at entry (the pullback may not borrow
//!   the caller's data);
//! * an integer (a loop counter, an index): taped at the block's start, one `usize` or so per
//!   execution;
//! * a value assigned once, outside every loop (a loop-invariant coefficient): kept in a slot
//!   when it is assigned;
//! * an argument passed by value and never reassigned: the pullback holds it.
//!
//! Anything else a rule of the block needs (a float carried from one iteration to the next, a
//! buffer held through a handle, a call's result) keeps the block on the tape. Statements whose
//! values no rule of the block needs (the running sum of `s += ..`) are not run again.
//!
//! For `rosenbrock` (`a = x[i+1] - x[i]^2; b = 1 - x[i]; s += 100 a^2 + b^2`), the tape holds one
//! integer per iteration (`i`) instead of four pullbacks and two indices.

use super::super::ir::*;
use super::{Access, Kind, Reverse, access, kind, reverse_method};

/// Float methods that cost more to run again than their pullback costs to keep (a
/// transcendental function: running it again in the reverse sweep computes it twice more, where
/// the tape keeps the derivative its rule computed once).
const COSTLY: &[&str] = &[
    "sin", "cos", "tan", "sin_cos", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "exp", "exp2", "exp_m1", "ln", "log", "log2", "log10", "ln_1p",
    "powf", "cbrt", "hypot",
];

/// How the reverse sweep re-runs a block.
pub(super) struct Replay {
    /// The statements to run again, in order.
    pub(super) statements: Vec<usize>,
    /// Loads `x[i]` whose value nothing re-run needs: only their index is computed again (their
    /// adjoint goes to `x`'s shadow at that index).
    pub(super) indices: Vec<usize>,
    /// Integers read before being assigned: taped at the block's start.
    pub(super) ints: Vec<Local>,
    /// Other values read before being assigned and changed by the loop (a float carried from
    /// one iteration to the next): taped at the block's start, whole.
    pub(super) values: Vec<Local>,
    /// Values assigned once outside every loop, read by the block: from their slots.
    pub(super) snapshots: Vec<Local>,
    /// Shared-reference arguments read by the block: from the copies made at entry.
    pub(super) args: Vec<Local>,
    /// Stores into buffers built in the body that keep a record (the element they overwrite):
    /// not run again. Their records go on the block's tape with its integers, and their
    /// reverses put the elements back, as in a block kept on the tape.
    pub(super) stores: Vec<usize>,
}

impl Replay {
    /// Whether the block keeps a tape entry per execution: integers, values or records.
    pub(super) fn tapes(&self) -> bool {
        !self.ints.is_empty() || !self.values.is_empty() || !self.stores.is_empty()
    }
}

/// The locals a statement reads (operands, receivers, the bases and indices of places).
fn uses(place: &Place, rv: &Rvalue) -> Vec<Local> {
    let mut out = Vec::new();
    let of_place = |p: &Place, out: &mut Vec<Local>, read_base: bool| {
        if read_base || !p.projections.is_empty() {
            out.push(p.local);
        }
        for pr in &p.projections {
            if let Projection::Index(i) = pr {
                out.push(*i);
            }
        }
    };
    // A store reads its place's base and indices.
    if !place.projections.is_empty() {
        of_place(place, &mut out, true);
    }
    let operand = |o: &Operand, out: &mut Vec<Local>| {
        if let Operand::Use(p) | Operand::Ref(p, _) = o {
            of_place(p, out, true);
        }
    };
    match rv {
        Rvalue::Use(o) | Rvalue::Unary(_, o) | Rvalue::Cast(o, _) | Rvalue::Repeat(o, _) => {
            operand(o, &mut out)
        }
        Rvalue::Convert(_, o) => operand(o, &mut out),
        Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => {
            operand(a, &mut out);
            operand(b, &mut out);
        }
        Rvalue::Call { args, .. }
        | Rvalue::Tuple(args)
        | Rvalue::Array(args)
        | Rvalue::VecList(args) => args.iter().for_each(|a| operand(a, &mut out)),
        Rvalue::Method { receiver, args, .. } => {
            of_place(receiver, &mut out, true);
            args.iter().for_each(|a| operand(a, &mut out));
        }
        Rvalue::Struct { fields, .. } => fields.iter().for_each(|(_, o)| operand(o, &mut out)),
        Rvalue::Matches(p, _) => of_place(p, &mut out, true),
    }
    out
}

impl Reverse<'_> {
    /// A shared-reference argument the body never reassigns: a copy made at entry reads as it.
    /// Not a buffer of structs or tuples, whose elements' tangents have no zero to make its
    /// sink of (`rev::sink` takes `Copy + Default` elements).
    pub(super) fn copyable_arg(&self, l: Local) -> bool {
        self.stable_args[l.index()] && !self.mut_refs[l.index()] && !self.value_buffers[l.index()]
    }

    /// Whether statement `s` can be run again in the reverse sweep with the same result: no
    /// side effect, and what it reads is a value (see the module documentation for where the
    /// values come from).
    fn pure(&self, place: &Place, rv: &Rvalue) -> bool {
        if !place.projections.is_empty() || place.local == Local::RETURN {
            return false;
        }
        match kind(place, rv, &self.refs, &self.inactive) {
            Kind::Rule(_) => match rv {
                Rvalue::Binary(op, ..) => op.is_arithmetic(),
                Rvalue::Unary(UnOp::Neg, _) | Rvalue::Cast(..) => true,
                Rvalue::Method { receiver, method, .. } => {
                    let name = method.to_string();
                    receiver.projections.is_empty()
                        && reverse_method(&name)
                        && !super::BUFFER_METHODS.contains(&name.as_str())
                        && !super::WRITE_METHODS.contains(&name.as_str())
                        && !COSTLY.contains(&name.as_str())
                }
                Rvalue::Call { func, .. } => {
                    let float =
                        |t: &syn::Ident| t == "f64" || t == "f32" || self.float_params.contains(t);
                    // `T::from_f64(x)`, lowered to the runtime's conversion.
                    let conversion =
                        func.segments.last().is_some_and(|s| s.ident == "float_from_f64");
                    conversion
                        || (func.segments.len() == 2
                            && float(&func.segments[0].ident)
                            && !COSTLY.contains(&func.segments[1].ident.to_string().as_str()))
                }
                Rvalue::Use(Operand::Use(q)) => matches!(access(q),
                    Some(Access::Index(base, _))
                        if self.copyable_arg(base) || self.held_arg(base)),
                _ => false,
            },
            Kind::Linear(_) => match rv {
                // `x.len()` (a row's length, `__len2`, reads a buffer of buffers, whose copy
                // the replay does not make).
                Rvalue::Method { receiver, method, .. } => {
                    method == "len"
                        && receiver.projections.is_empty()
                        && self.copyable_arg(receiver.local)
                }
                _ => true,
            },
            Kind::Copy(_) => true,
            Kind::NoDerivative => match rv {
                Rvalue::Use(Operand::Use(q)) => match access(q) {
                    None => q.projections.is_empty(),
                    Some(Access::Index(base, _)) => self.copyable_arg(base),
                    Some(_) => false,
                },
                Rvalue::Method { receiver, .. } => {
                    receiver.projections.is_empty() && self.copyable_arg(receiver.local)
                }
                Rvalue::Matches(p, _) => p.projections.is_empty(),
                Rvalue::Use(_) | Rvalue::Binary(..) | Rvalue::Unary(..) | Rvalue::Cast(..) => true,
                _ => false,
            },
            Kind::Build(_) | Kind::FieldCopy(..) | Kind::RuleArray(_) => false,
        }
    }

    /// How the reverse sweep can re-run block `b` instead of taping it, if it can.
    pub(super) fn plan_replay(&self, b: BlockId) -> Option<Replay> {
        if !self.in_loop.contains(&b) {
            return None;
        }
        let statements = &self.body.blocks[b.index()].statements;
        let mut replay = vec![false; statements.len()];
        let mut indices = vec![false; statements.len()];
        let mut need: Vec<Local> = Vec::new();
        let mut any_rule = false;
        // The buffers the block's kept stores write, and the statements they are.
        let mut stored: Vec<Local> = Vec::new();
        let mut stores: Vec<usize> = Vec::new();
        for (i, s) in statements.iter().enumerate().rev() {
            let StatementKind::Assign(place, rv) = &s.kind else {
                // An assertion is run by the forward sweep only.
                continue;
            };
            if let Some(base) = self.kept_store(b, i, place, rv) {
                // Its record holds the index and the element it overwrote; the reverse needs
                // nothing else of the block's values but the stored value's adjoint.
                stores.push(i);
                any_rule = true;
                if !stored.contains(&base) {
                    stored.push(base);
                }
                continue;
            }
            let is_rule = matches!(
                kind(place, rv, &self.refs, &self.inactive),
                Kind::Rule(_) | Kind::RuleArray(_)
            );
            if self.is_fresh(b, i)
                && let Some(Access::Index(_, index)) = access(place)
            {
                // A store that keeps no record: its index (the value's statement is run again
                // for its own rule, if it has one).
                indices[i] = true;
                any_rule = true;
                if !need.contains(&index) {
                    need.push(index);
                }
                continue;
            }
            let defines = place.projections.is_empty().then_some(place.local);
            let needed = defines.is_some_and(|l| need.contains(&l));
            if !needed
                && let Rvalue::Use(Operand::Use(q)) = rv
                && let Some(Access::Index(base, index)) = access(q)
                && self.index_only[base.index()]
                && !self.inactive.bufs[base.index()]
            {
                // A load whose value no re-run statement reads: its index only.
                indices[i] = true;
                any_rule = true;
                if !need.contains(&index) {
                    need.push(index);
                }
                continue;
            }
            if !(is_rule || needed) {
                continue;
            }
            if !self.pure(place, rv) {
                return None;
            }
            any_rule |= is_rule;
            replay[i] = true;
            if let Some(l) = defines {
                need.retain(|n| *n != l);
            }
            for u in uses(place, rv) {
                if !need.contains(&u) {
                    need.push(u);
                }
            }
        }
        if !any_rule {
            return None;
        }
        // A value loaded from a buffer the block stores into would be read again after the
        // store, not before it as the forward sweep read it.
        if !stored.is_empty()
            && statements.iter().enumerate().any(|(i, s)| {
                replay[i]
                    && matches!(&s.kind, StatementKind::Assign(_, Rvalue::Use(Operand::Use(q)))
                        if matches!(access(q), Some(Access::Index(base, _)) if stored.contains(&base)))
            })
        {
            return None;
        }
        stores.sort();
        // Where each value the re-run reads comes from.
        let (mut ints, mut snapshots, mut args) = (Vec::new(), Vec::new(), Vec::new());
        let mut values = Vec::new();
        for l in need {
            if self.copyable_arg(l) {
                args.push(l);
                continue;
            }
            if self.value_arg(l) || self.held_arg(l) {
                continue;
            }
            if self.inactive.ints[l.index()] {
                ints.push(l);
            } else if self.invariant(l) {
                snapshots.push(l);
            } else if self.refs[l.index()]
                || self.handles[l.index()]
                || l.index() <= self.body.n_args
            {
                return None;
            } else {
                values.push(l);
            }
        }
        values.sort();
        ints.sort();
        snapshots.sort();
        args.sort();
        let indices = (0..statements.len()).filter(|i| indices[*i]).collect();
        let statements = (0..statements.len()).filter(|i| replay[*i]).collect();
        Some(Replay { statements, indices, ints, values, snapshots, args, stores })
    }

    /// Statement `i` of block `b`, `place = rv`, as a store of a number into a buffer built in
    /// the body that keeps a record (`rev::store_zero_at`, `rev::store_at`): the buffer.
    fn kept_store(&self, b: BlockId, i: usize, place: &Place, rv: &Rvalue) -> Option<Local> {
        let (Some(Access::Index(base, _)), Rvalue::Use(_)) = (access(place), rv) else {
            return None;
        };
        let kept = !self.is_fresh(b, i)
            && self.captured_locals[base.index()]
            && self.stored[base.index()]
            && !self.inactive.bufs[base.index()]
            && matches!(kind(place, rv, &self.refs, &self.inactive), Kind::Rule(_));
        kept.then_some(base)
    }

    /// An argument passed by value that the body never reassigns: the pullback holds it.
    fn value_arg(&self, l: Local) -> bool {
        self.body.args().any(|a| a == l)
            && !self.refs[l.index()]
            && !self.handles[l.index()]
            && self.assignments(l) == 0
    }

    /// A `&mut` argument or a buffer argument by value, never reassigned: the pullback holds
    /// its handle, and reads it as the forward sweep read it, since every later change to it is
    /// undone by the reverse sweep (stores and `push` restore, callees restore what they
    /// change) before a block that read it is run again.
    ///
    /// The same holds of a buffer built in the function's first block and never reassigned
    /// (`let mut h = vec![0.0; n];` at the top): the pullback holds its handle, which is
    /// initialised on every path.
    fn held_arg(&self, l: Local) -> bool {
        let arg = self.body.args().any(|a| a == l);
        if !arg {
            return self.captured_locals[l.index()] && self.assigned_on_every_path(l);
        }
        self.handles[l.index()] && self.assignments(l) == 0
    }

    /// Whether the one assignment of `l` is in a block every path from the function's entry to
    /// a `return` goes through (the first block, or one after a loop or an `if` that every path
    /// reaches): the pullback, made after the body, can then hold `l` itself.
    fn assigned_on_every_path(&self, l: Local) -> bool {
        let body = self.body;
        let at = body.blocks.iter().position(|b| {
            b.statements.iter().any(|s| {
                matches!(&s.kind, StatementKind::Assign(p, _) if p.local == l && p.projections.is_empty())
            })
        });
        let Some(at) = at else { return false };
        // The blocks reachable from the entry without going through `at`: none may return.
        let mut seen = vec![false; body.blocks.len()];
        let mut stack = vec![0usize];
        while let Some(b) = stack.pop() {
            if b == at || b >= seen.len() || seen[b] {
                continue;
            }
            seen[b] = true;
            let t = &body.blocks[b].terminator.kind;
            if matches!(t, TerminatorKind::Return) {
                return false;
            }
            stack.extend(t.successors().into_iter().map(|s| s.index()));
        }
        true
    }

    /// A value assigned exactly once, in a block outside every loop, and not held through a
    /// handle or a reference: what it holds while a loop runs is what it holds at the end.
    pub(super) fn invariant(&self, l: Local) -> bool {
        if self.refs[l.index()] || self.handles[l.index()] {
            return false;
        }
        self.assigned_once_outside_loops(l)
    }

    /// Assigned by exactly one statement, in a block outside every loop (and not an
    /// argument).
    fn assigned_once_outside_loops(&self, l: Local) -> bool {
        if l.index() <= self.body.n_args {
            return false;
        }
        let mut at = None;
        let mut count = 0;
        for (bi, b) in self.body.blocks.iter().enumerate() {
            for s in &b.statements {
                if let StatementKind::Assign(p, _) = &s.kind
                    && p.projections.is_empty()
                    && p.local == l
                {
                    count += 1;
                    at = Some(BlockId(bi as u32));
                }
            }
        }
        count == 1 && at.is_some_and(|b| !self.in_loop.contains(&b))
    }

    /// How many statements assign `l` as a whole.
    fn assignments(&self, l: Local) -> usize {
        self.body
            .blocks
            .iter()
            .flat_map(|b| &b.statements)
            .filter(|s| {
                matches!(&s.kind, StatementKind::Assign(p, _) if p.projections.is_empty() && p.local == l)
            })
            .count()
    }
}
