//! Local arrays read and written only at constant indices become one local per element before
//! reverse mode plans anything (scalar replacement of aggregates, as LLVM's SROA does for
//! memory).
//!
//! A local array (`let mut r = [0.0; 3]; r[0] = a - b; .. r[0] * r[0] + ..`) would otherwise be
//! held through a handle (a reference-counted buffer and a shadow, two allocations each), and
//! each element store would keep a record for the pullback. As separate locals the elements are
//! value-identified like any other number: they stay in registers or on the stack, their
//! adjoints are plain locals of the pullback, and a store is an assignment. Small fixed-size
//! computations (a residual, a rotation, a cross product) are written this way.
//!
//! A local qualifies when every place that names it is an element at an index held by a local
//! assigned once, a constant smaller than the array's length (`r[0]`, `r[k]` after `let k = 1;`,
//! also followed by further projections: `pts[1].x`), or a whole copy to or from another such
//! array of the same length (`let mut q = p;`); it is built by `[c; N]` (`N` a literal) or
//! `[a, b, ..]`. Anything else (a call or method that takes the array, a loop over its
//! elements, an index computed at run time, a return of the whole array, a mention in an
//! assertion's text) leaves the array as it was.

use super::*;
use std::collections::BTreeMap;

/// Replaces each local array that qualifies (see the module documentation) by one local per
/// element; again on the elements, for arrays of arrays (`m[1][0]`), until none qualifies.
pub(super) fn scalarise_arrays(body: &mut Body) {
    for _ in 0..4 {
        if !scalarise_once(body) {
            break;
        }
    }
}

/// One round of [`scalarise_arrays`]; whether it replaced any array.
fn scalarise_once(body: &mut Body) -> bool {
    let n = body.locals.len();
    let consts = constant_indices(body);
    // The length of each candidate, from the arrays it is built from; `None` after a use that
    // disqualifies it.
    let mut len: Vec<Option<Option<usize>>> = vec![Some(None); n];
    // The return place and the arguments are not the body's to split.
    len.iter_mut().take(body.n_args + 1).for_each(|l| *l = None);
    let mut copies: Vec<(Local, Local)> = Vec::new();
    let mut named = vec![false; n];
    let set_len = |len: &mut Vec<Option<Option<usize>>>, l: Local, k: usize| {
        if let Some(cur) = len[l.index()] {
            len[l.index()] = match cur {
                None => Some(Some(k)),
                Some(c) if c == k => Some(Some(k)),
                Some(_) => None,
            };
        }
    };
    for b in &body.blocks {
        for s in &b.statements {
            match &s.kind {
                StatementKind::Assign(p, rv) => {
                    if p.projections.is_empty() {
                        match rv {
                            Rvalue::Repeat(o, count) => {
                                visit_operand(o, &consts, &mut len, &mut named);
                                match literal_usize(count) {
                                    Some(k) => set_len(&mut len, p.local, k),
                                    None => len[p.local.index()] = None,
                                }
                                continue;
                            }
                            Rvalue::Array(items) => {
                                for o in items {
                                    visit_operand(o, &consts, &mut len, &mut named);
                                }
                                set_len(&mut len, p.local, items.len());
                                continue;
                            }
                            Rvalue::Use(Operand::Use(q))
                                if q.projections.is_empty() && q.local != p.local =>
                            {
                                copies.push((p.local, q.local));
                                continue;
                            }
                            _ => len[p.local.index()] = None,
                        }
                    } else {
                        visit_place(p, &consts, &mut len);
                    }
                    visit_rvalue(rv, &consts, &mut len, &mut named);
                }
                StatementKind::Check(tokens) => locals_named_in(tokens, &mut named),
            }
        }
        if let TerminatorKind::Panic(tokens) = &b.terminator.kind {
            locals_named_in(tokens, &mut named);
        }
    }
    for (l, named) in named.iter().enumerate() {
        if *named {
            len[l] = None;
        }
    }
    // A copy joins its two sides: both qualify, with one length, or neither does; an index
    // out of bounds (a panic the primal makes at run time) leaves the array as it was, and,
    // through the copies, every array copied to or from it (`let r = [..]` is a temporary and
    // a copy).
    join_copies(&copies, &mut len);
    if out_of_bounds(body, &consts, &mut len) {
        join_copies(&copies, &mut len);
    }
    // The elements' locals, for every candidate of known length (one never built is left).
    let mut elements: BTreeMap<Local, Vec<Local>> = BTreeMap::new();
    for (l, known) in len.iter().enumerate() {
        let Some(Some(k)) = known else { continue };
        let decl = body.locals[l].clone();
        let elem_ty = match &decl.ty {
            Some(syn::Type::Array(a)) => Some((*a.elem).clone()),
            _ => None,
        };
        let locals = (0..*k)
            .map(|_| {
                body.locals.push(LocalDecl { name: None, ty: elem_ty.clone(), span: decl.span });
                Local((body.locals.len() - 1) as u32)
            })
            .collect();
        elements.insert(Local(l as u32), locals);
    }
    if elements.is_empty() {
        return false;
    }
    let element = |p: &mut Place| {
        if let Some(els) = elements.get(&p.local)
            && let Some(Projection::Index(i)) = p.projections.first()
            && let Some(k) = consts.get(i)
        {
            p.local = els[*k];
            p.projections.remove(0);
        }
    };
    for b in &mut body.blocks {
        let mut statements = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            if let StatementKind::Assign(p, rv) = &mut s.kind {
                if p.projections.is_empty()
                    && let Some(els) = elements.get(&p.local)
                {
                    let items: Vec<Operand> = match rv {
                        Rvalue::Repeat(o, _) => vec![o.clone(); els.len()],
                        Rvalue::Array(items) => items.clone(),
                        Rvalue::Use(Operand::Use(q)) => elements[&q.local]
                            .iter()
                            .map(|e| Operand::Use(Place::local(*e)))
                            .collect(),
                        _ => unreachable!("a candidate is assigned only builds and copies"),
                    };
                    for (e, mut o) in els.iter().zip(items) {
                        if let Operand::Use(q) | Operand::Ref(q, _) = &mut o {
                            element(q);
                        }
                        statements.push(Statement {
                            kind: StatementKind::Assign(Place::local(*e), Rvalue::Use(o)),
                            span: s.span,
                        });
                    }
                    continue;
                }
                element(p);
                for_each_place(rv, &mut |q| element(q));
            }
            statements.push(s);
        }
        b.statements = statements;
    }
    true
}

/// Joins the two sides of each copy (see [`scalarise_once`]), to a fixed point.
fn join_copies(copies: &[(Local, Local)], len: &mut [Option<Option<usize>>]) {
    loop {
        let mut changed = false;
        for (d, s) in copies {
            let (a, b) = (len[d.index()], len[s.index()]);
            let joined = match (a, b) {
                (Some(x), Some(y)) if x.is_none() || y.is_none() || x == y => Some(x.or(y)),
                _ => None,
            };
            if joined != a || joined != b {
                len[d.index()] = joined;
                len[s.index()] = joined;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Disqualifies each candidate read or written at an index out of its bounds; whether any was.
fn out_of_bounds(
    body: &Body,
    consts: &BTreeMap<Local, usize>,
    len: &mut [Option<Option<usize>>],
) -> bool {
    let mut any = false;
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, rv) = &s.kind {
                let mut check = |q: &Place| {
                    if let Some(Some(k)) = len[q.local.index()]
                        && let Some(Projection::Index(i)) = q.projections.first()
                        && consts.get(i).is_none_or(|v| *v >= k)
                    {
                        len[q.local.index()] = None;
                        any = true;
                    }
                };
                check(p);
                for_each_place_ref(rv, &mut |q| check(q));
            }
        }
    }
    any
}

/// The locals assigned exactly once, that assignment an integer literal (`_3 = const 1;`), or
/// a copy of such a local; each with its value.
fn constant_indices(body: &Body) -> BTreeMap<Local, usize> {
    let mut assigned = vec![0usize; body.locals.len()];
    let mut value: Vec<Option<Result<usize, Local>>> = vec![None; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, rv) = &s.kind {
                assigned[p.local.index()] += 1;
                if !p.projections.is_empty() {
                    // Written through a projection: never a constant.
                    assigned[p.local.index()] += 1;
                    continue;
                }
                value[p.local.index()] = match rv {
                    Rvalue::Use(Operand::Const(c)) => literal_usize(c).map(Ok),
                    Rvalue::Use(Operand::Use(q)) if q.projections.is_empty() => Some(Err(q.local)),
                    _ => None,
                };
            }
        }
    }
    let mut out = BTreeMap::new();
    // Copies of constants, to a fixed point (chains are short: an index copied at a borrow).
    loop {
        let mut changed = false;
        for l in 0..value.len() {
            if assigned[l] != 1 || out.contains_key(&Local(l as u32)) || l <= body.n_args {
                continue;
            }
            let v = match value[l] {
                Some(Ok(v)) => Some(v),
                Some(Err(src)) => out.get(&src).copied(),
                None => None,
            };
            if let Some(v) = v {
                out.insert(Local(l as u32), v);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// The value of an integer literal (`3`, `3usize`, `1_0`), if the tokens are one.
pub(super) fn literal_usize(tokens: &TokenStream) -> Option<usize> {
    syn::parse2::<syn::LitInt>(tokens.clone()).ok()?.base10_parse().ok()
}

/// Disqualifies the candidates an rvalue names other than as elements at constant indices, and
/// the locals a constant's text names (a `format!` reads them by name).
fn visit_rvalue(
    rv: &Rvalue,
    consts: &BTreeMap<Local, usize>,
    len: &mut [Option<Option<usize>>],
    named: &mut [bool],
) {
    if let Rvalue::Method { receiver, .. } | Rvalue::Matches(receiver, _) = rv {
        visit_place(receiver, consts, len);
    }
    let mut rv = rv.clone();
    for_each_operand(&mut rv, &mut |o| visit_operand(o, consts, len, named));
}

fn visit_operand(
    o: &Operand,
    consts: &BTreeMap<Local, usize>,
    len: &mut [Option<Option<usize>>],
    named: &mut [bool],
) {
    match o {
        Operand::Use(p) | Operand::Ref(p, _) => visit_place(p, consts, len),
        Operand::Const(tokens) => locals_named_in(tokens, named),
    }
}

/// A place qualifies its local only as `local[i]..` with `i` a constant index; the index is
/// checked against the length once the length is known (`scalarise_arrays`).
fn visit_place(p: &Place, consts: &BTreeMap<Local, usize>, len: &mut [Option<Option<usize>>]) {
    match p.projections.first() {
        Some(Projection::Index(i)) if consts.contains_key(i) => {}
        _ => len[p.local.index()] = None,
    }
}

#[cfg(test)]
mod tests {
    /// How many arrays `f`'s reverse rule holds through a handle.
    fn handles(f: &str) -> usize {
        let rrule = crate::differentiable::rrule_source(f);
        ["into_array_handle", "rev :: into_handle", "rev :: into_kept_handle", "rev :: hold_value"]
            .iter()
            .map(|h| rrule.matches(h).count())
            .sum()
    }

    #[test]
    fn arrays_at_constant_indices_are_elements() {
        let filled = "fn f(x: f64) -> f64 { let mut r = [0.0; 3]; r[0] = x; r[2] = x * x; \
                      r[0] + r[2] }";
        assert_eq!(handles(filled), 0);
        let listed = "fn f(x: f64) -> f64 { let c = [x, 2.0 * x]; c[0] * c[1] }";
        assert_eq!(handles(listed), 0);
        let copied = "fn f(x: f64) -> f64 { let mut p = [x, x]; let mut q = p; q[0] = 2.0; \
                      p[1] = q[0] * x; p[1] + q[1] }";
        assert_eq!(handles(copied), 0);
        let nested = "fn f(x: f64) -> f64 { let mut m = [[0.0; 2]; 2]; m[1][0] = x; \
                      m[0][1] = x * x; m[1][0] * m[0][1] }";
        assert_eq!(handles(nested), 0);
        let named = "fn f(x: f64) -> f64 { let k = 1; let mut r = [x; 2]; r[k] = x * x; r[k] }";
        assert_eq!(handles(named), 0);
        // Loops over a few literal values are unrolled (`differentiable/unroll.rs`).
        let looped = "fn f(x: &[f64]) -> f64 { let mut r = [0.0; 3]; \
                      for k in 0..3 { r[k] = x[k] * x[k]; } \
                      let mut m = [[0.0; 2]; 2]; \
                      for i in 0..2 { for j in 0..=1 { m[i][j] = r[i] * r[j]; } } \
                      m[0][1] + m[1][0] + r[2] }";
        assert_eq!(handles(looped), 0);
    }

    #[test]
    fn other_uses_keep_the_array_whole() {
        let dynamic = "fn f(x: &[f64], n: usize) -> f64 { let mut r = [0.0; 2]; \
                       for i in 0..n { r[i] = x[i]; } r[0] * r[1] }";
        assert_eq!(handles(dynamic), 1);
        let breaks = "fn f(x: &[f64]) -> f64 { let mut r = [0.0; 2]; \
                      for i in 0..2 { if x[i] > 0.0 { break; } r[i] = x[i]; } r[0] * r[1] }";
        assert_eq!(handles(breaks), 1);
        let long = "fn f(x: &[f64]) -> f64 { let mut r = [0.0; 20]; \
                    for i in 0..20 { r[i] = x[i]; } r[0] * r[1] }";
        assert_eq!(handles(long), 1);
        let reassigned = "fn f(x: f64) -> f64 { let mut k = 0; let mut r = [x; 2]; \
                          r[k] = x * x; k = 1; r[k] }";
        assert_eq!(handles(reassigned), 1);
        let measured = "fn f(x: f64) -> f64 { let r = [x; 2]; r[0] * r.len() as f64 }";
        assert_eq!(handles(measured), 1);
        let out_of_bounds = "fn f(x: f64) -> f64 { let mut r = [x; 2]; r[0] = x; r[0] * r[2] }";
        assert_eq!(handles(out_of_bounds), 1);
        let lengths_differ = "fn f(x: f64, c: bool) -> f64 { let mut r = [x; 2]; \
                              if c { r = [x; 3]; } r[0] }";
        assert_eq!(handles(lengths_differ), 2);
    }
}
