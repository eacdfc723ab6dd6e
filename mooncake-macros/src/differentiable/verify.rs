//! The IR verifier: checks the invariants listed in [`super::ir`], naming each one it finds
//! broken. Runs after every pass in tests and debug builds; a failure is a bug in the macro,
//! not in the user's code, and is reported as such.

use super::ir::*;

/// Every broken invariant, as sentences naming it (empty when the body is well formed).
pub(crate) fn verify(body: &Body) -> Vec<String> {
    let mut problems = Vec::new();
    let n_locals = body.locals.len();
    let n_blocks = body.blocks.len();
    let check_local = |l: Local, what: &str, problems: &mut Vec<String>| {
        if l.index() >= n_locals {
            problems.push(format!(
                "invariant 3 (locals exist): {what} names {l}, but there are {n_locals} locals"
            ));
        }
    };
    if n_blocks == 0 {
        problems.push("invariant 1 (entry block): the body has no blocks".into());
    }
    if body.n_args + 1 > n_locals {
        problems.push(
            "invariant 3 (locals exist): fewer locals than the return place and arguments".into(),
        );
    }
    let place_locals = |p: &Place| {
        let mut v = vec![p.local];
        v.extend(p.projections.iter().filter_map(|pr| match pr {
            Projection::Index(i) => Some(*i),
            _ => None,
        }));
        v
    };
    let operand_locals = |o: &Operand| match o {
        Operand::Use(p) | Operand::Ref(p, _) => place_locals(p),
        Operand::Const(_) => Vec::new(),
    };
    for (i, block) in body.blocks.iter().enumerate() {
        let at = format!("bb{i}");
        for s in &block.statements {
            match &s.kind {
                StatementKind::Assign(p, r) => {
                    for l in place_locals(p) {
                        check_local(l, &at, &mut problems);
                    }
                    if let Rvalue::Method { receiver: p, .. } | Rvalue::Matches(p, _) = r {
                        for l in place_locals(p) {
                            check_local(l, &at, &mut problems);
                        }
                    }
                    for o in r.operands() {
                        for l in operand_locals(o) {
                            check_local(l, &at, &mut problems);
                        }
                    }
                }
                StatementKind::Check(_) => {}
            }
        }
        if let TerminatorKind::Branch { cond, .. } = &block.terminator.kind {
            check_local(*cond, &at, &mut problems);
        }
        for s in block.terminator.kind.successors() {
            if s.index() >= n_blocks {
                problems.push(format!("invariant 2 (targets exist): {at} jumps to {s}, but there are {n_blocks} blocks"));
            }
            if s == BlockId::ENTRY {
                problems
                    .push(format!("invariant 1 (entry block): {at} jumps back to the entry block"));
            }
        }
    }
    // Invariant 6: reachability.
    let mut seen = vec![false; n_blocks];
    let mut stack = vec![BlockId::ENTRY];
    while let Some(b) = stack.pop() {
        if b.index() >= n_blocks || seen[b.index()] {
            continue;
        }
        seen[b.index()] = true;
        stack.extend(body.blocks[b.index()].terminator.kind.successors());
    }
    for (i, s) in seen.iter().enumerate() {
        if !s {
            problems.push(format!("invariant 6 (reachable): bb{i} is unreachable from the entry"));
        }
    }
    problems
}
