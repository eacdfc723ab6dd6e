//! One-step simplifications of a raw case, for the driver's shrinker: drop a helper, a
//! parameter or a statement, inline a statement's body, replace an expression by a leaf or by
//! one of its operands, shorten the inputs. Every simplification is again a raw case, so it
//! resolves to a valid program; the driver compiles many of them at once and keeps the smallest
//! that still fails the same way.

use super::ast::*;

fn fe_leaves() -> Vec<FE> {
    vec![FE::Var(0), FE::Lit(1), FE::Lit(0)]
}

/// Simplifications of a float expression.
fn fe(e: &FE) -> Vec<FE> {
    let mut out = Vec::new();
    let leaf = matches!(e, FE::Var(0) | FE::Lit(_));
    if !leaf {
        out.extend(fe_leaves());
    }
    let b = |x: FE| Box::new(x);
    match e {
        FE::Var(k) if *k > 0 => out.push(FE::Var(k / 2)),
        FE::Var(_) | FE::Lit(_) | FE::Const(_) => {}
        FE::Bin(op, x, y) => {
            out.push((**x).clone());
            out.push((**y).clone());
            out.extend(fe(x).into_iter().map(|x| FE::Bin(*op, b(x), y.clone())));
            out.extend(fe(y).into_iter().map(|y| FE::Bin(*op, x.clone(), b(y))));
            if *op != FOp::Add {
                out.push(FE::Bin(FOp::Add, x.clone(), y.clone()));
            }
        }
        FE::Neg(x) => {
            out.push((**x).clone());
            out.extend(fe(x).into_iter().map(|x| FE::Neg(b(x))));
        }
        FE::Un(m, f, x) => {
            out.push((**x).clone());
            if *f != 0 {
                out.push(FE::Un(*m, 0, x.clone()));
            }
            out.extend(fe(x).into_iter().map(|x| FE::Un(*m, *f, b(x))));
        }
        FE::Bin2(m, f, x, y) => {
            out.push((**x).clone());
            out.push((**y).clone());
            out.extend(fe(x).into_iter().map(|x| FE::Bin2(*m, *f, b(x), y.clone())));
            out.extend(fe(y).into_iter().map(|y| FE::Bin2(*m, *f, x.clone(), b(y))));
        }
        FE::Powi(k, x) => {
            out.push((**x).clone());
            out.extend(fe(x).into_iter().map(|x| FE::Powi(*k, b(x))));
        }
        FE::MulAdd(abc) => {
            let (x, y, z) = &**abc;
            out.extend([x.clone(), y.clone(), z.clone()]);
        }
        FE::Clamp(k, x) => {
            out.push((**x).clone());
            out.extend(fe(x).into_iter().map(|x| FE::Clamp(*k, b(x))));
        }
        FE::Cast(i) => out.extend(ie(i).into_iter().map(|i| FE::Cast(b_ie(i)))),
        FE::Elem(k, i) => {
            out.extend(ie(i).into_iter().map(|i| FE::Elem(*k, b_ie(i))));
            if *k > 0 {
                out.push(FE::Elem(0, i.clone()));
            }
        }
        FE::Sum(_) => {}
        FE::Call(c) | FE::CallField(c, _) => {
            for c2 in call(c) {
                out.push(match e {
                    FE::Call(_) => FE::Call(Box::new(c2)),
                    FE::CallField(_, s) => FE::CallField(Box::new(c2), *s),
                    _ => unreachable!(),
                });
            }
        }
        FE::If(cab) => {
            let (c, x, y) = &**cab;
            out.push(x.clone());
            out.push(y.clone());
            out.extend(be(c).into_iter().map(|c| FE::If(Box::new((c, x.clone(), y.clone())))));
            out.extend(fe(x).into_iter().map(|x| FE::If(Box::new((c.clone(), x, y.clone())))));
            out.extend(fe(y).into_iter().map(|y| FE::If(Box::new((c.clone(), x.clone(), y)))));
        }
        FE::Match(i, arms) => {
            out.extend(arms.iter().map(|(_, e)| e.clone()));
            for k in 0..arms.len() {
                if arms.len() > 1 {
                    let mut a = arms.clone();
                    a.remove(k);
                    out.push(FE::Match(i.clone(), a));
                }
                for e2 in fe(&arms[k].1) {
                    let mut a = arms.clone();
                    a[k].1 = e2;
                    out.push(FE::Match(i.clone(), a));
                }
            }
        }
        FE::Block(stmts, x) => {
            out.push((**x).clone());
            out.extend(stmt_list(stmts).into_iter().map(|s| FE::Block(s, x.clone())));
            out.extend(fe(x).into_iter().map(|x| FE::Block(stmts.clone(), b(x))));
        }
    }
    out
}

fn b_ie(i: IE) -> Box<IE> {
    Box::new(i)
}

/// Simplifications of an integer expression.
fn ie(e: &IE) -> Vec<IE> {
    let mut out = Vec::new();
    match e {
        IE::Lit(k) => {
            if *k > 0 {
                out.push(IE::Lit(k - 1));
            }
        }
        IE::Var(k) => {
            out.push(IE::Lit(1));
            if *k > 0 {
                out.push(IE::Var(k / 2));
            }
        }
        IE::Len(_) => out.push(IE::Lit(2)),
        IE::Add(a, b) | IE::Mul(a, b) | IE::Min(a, b) | IE::Max(a, b) => {
            out.push(IE::Lit(1));
            out.push((**a).clone());
            out.push((**b).clone());
        }
        IE::Rem(a, _) | IE::Div(a, _) => {
            out.push(IE::Lit(1));
            out.push((**a).clone());
        }
    }
    out
}

/// Simplifications of a boolean expression.
fn be(e: &BE) -> Vec<BE> {
    let mut out = Vec::new();
    if !matches!(e, BE::Lit(_)) {
        out.push(BE::Lit(true));
        out.push(BE::Lit(false));
    }
    let bb = |x: BE| Box::new(x);
    match e {
        BE::CmpF(op, a, b) => {
            out.extend(fe(a).into_iter().map(|a| BE::CmpF(*op, Box::new(a), b.clone())));
            out.extend(fe(b).into_iter().map(|b| BE::CmpF(*op, a.clone(), Box::new(b))));
        }
        BE::CmpI(op, a, b) => {
            out.extend(ie(a).into_iter().map(|a| BE::CmpI(*op, b_ie(a), b.clone())));
            out.extend(ie(b).into_iter().map(|b| BE::CmpI(*op, a.clone(), b_ie(b))));
        }
        BE::And(a, b) | BE::Or(a, b) => {
            out.push((**a).clone());
            out.push((**b).clone());
            let and = matches!(e, BE::And(..));
            for a2 in be(a) {
                out.push(if and { BE::And(bb(a2), b.clone()) } else { BE::Or(bb(a2), b.clone()) });
            }
            for b2 in be(b) {
                out.push(if and { BE::And(a.clone(), bb(b2)) } else { BE::Or(a.clone(), bb(b2)) });
            }
        }
        BE::Not(a) => out.push((**a).clone()),
        BE::IsFinite(a) => out.extend(fe(a).into_iter().map(|a| BE::IsFinite(Box::new(a)))),
        BE::Var(_) | BE::Lit(_) => {}
    }
    out
}

fn call(c: &RawCall) -> Vec<RawCall> {
    let mut out = Vec::new();
    if c.func > 0 {
        out.push(RawCall { func: c.func / 2, ..c.clone() });
        out.push(RawCall { func: c.func - 1, ..c.clone() });
    }
    for k in 0..c.fargs.len() {
        for a in fe(&c.fargs[k]) {
            let mut c2 = c.clone();
            c2.fargs[k] = a;
            out.push(c2);
        }
    }
    for k in 0..c.iargs.len() {
        for a in ie(&c.iargs[k]) {
            let mut c2 = c.clone();
            c2.iargs[k] = a;
            out.push(c2);
        }
    }
    for k in 0..c.bargs.len() {
        let mut c2 = c.clone();
        c2.bargs[k] = BE::Lit(true);
        out.push(c2);
    }
    for k in 0..c.picks.len() {
        if c.picks[k] > 0 {
            let mut c2 = c.clone();
            c2.picks[k] = 0;
            out.push(c2);
        }
    }
    out
}

fn tail(t: &RawTail) -> Vec<RawTail> {
    let mut out = Vec::new();
    if t.pick > 0 {
        out.push(RawTail { pick: 0, ..t.clone() });
    }
    for k in 0..t.fs.len() {
        for e in fe(&t.fs[k]) {
            let mut t2 = t.clone();
            t2.fs[k] = e;
            out.push(t2);
        }
    }
    out
}

/// The statements nested in a statement (bodies that could replace it).
fn bodies(s: &RawStmt) -> Vec<Vec<RawStmt>> {
    match s {
        RawStmt::If { then, elifs, els, .. } => {
            let mut v = vec![then.clone()];
            v.extend(elifs.iter().map(|(_, b)| b.clone()));
            v.extend(els.clone());
            v
        }
        RawStmt::Match { arms, .. } => arms.iter().map(|(_, b)| b.clone()).collect(),
        RawStmt::For { body, .. }
        | RawStmt::While { body, .. }
        | RawStmt::Loop { body, .. }
        | RawStmt::LetLoop { body, .. } => vec![body.clone()],
        _ => vec![],
    }
}

/// Simplifications of one statement (in place).
fn stmt(s: &RawStmt) -> Vec<RawStmt> {
    let mut out = Vec::new();
    match s {
        RawStmt::LetF { mutable, annotate, shadow, init } => {
            if shadow.is_some() {
                out.push(RawStmt::LetF {
                    mutable: *mutable,
                    annotate: *annotate,
                    shadow: None,
                    init: init.clone(),
                });
            }
            if *annotate {
                out.push(RawStmt::LetF {
                    mutable: *mutable,
                    annotate: false,
                    shadow: *shadow,
                    init: init.clone(),
                });
            }
            out.extend(fe(init).into_iter().map(|e| RawStmt::LetF {
                mutable: *mutable,
                annotate: *annotate,
                shadow: *shadow,
                init: e,
            }));
        }
        RawStmt::LetLate(e) => {
            out.push(RawStmt::LetF {
                mutable: false,
                annotate: false,
                shadow: None,
                init: e.clone(),
            });
            out.extend(fe(e).into_iter().map(RawStmt::LetLate));
        }
        RawStmt::LetI(i) => out.extend(ie(i).into_iter().map(RawStmt::LetI)),
        RawStmt::LetB(b) => out.extend(be(b).into_iter().map(RawStmt::LetB)),
        RawStmt::LetVec { mutable, init } => {
            let m = *mutable;
            match init {
                VecInit::Lit(fs) => {
                    for k in 0..fs.len() {
                        if fs.len() > 1 {
                            let mut f2 = fs.clone();
                            f2.remove(k);
                            out.push(RawStmt::LetVec { mutable: m, init: VecInit::Lit(f2) });
                        }
                        for e in fe(&fs[k]) {
                            let mut f2 = fs.clone();
                            f2[k] = e;
                            out.push(RawStmt::LetVec { mutable: m, init: VecInit::Lit(f2) });
                        }
                    }
                }
                VecInit::Rep(e, n) => {
                    out.push(RawStmt::LetVec { mutable: m, init: VecInit::Lit(vec![e.clone()]) });
                    out.extend(
                        fe(e).into_iter().map(|e| RawStmt::LetVec {
                            mutable: m,
                            init: VecInit::Rep(e, n.clone()),
                        }),
                    );
                    out.extend(
                        ie(n).into_iter().map(|n| RawStmt::LetVec {
                            mutable: m,
                            init: VecInit::Rep(e.clone(), n),
                        }),
                    );
                }
                VecInit::Pushed(c, fs) => {
                    out.push(RawStmt::LetVec { mutable: m, init: VecInit::Lit(fs.clone()) });
                    if fs.len() > 1 {
                        out.push(RawStmt::LetVec {
                            mutable: m,
                            init: VecInit::Pushed(*c, fs[..1].to_vec()),
                        });
                    }
                    for k in 0..fs.len() {
                        for e in fe(&fs[k]) {
                            let mut f2 = fs.clone();
                            f2[k] = e;
                            out.push(RawStmt::LetVec { mutable: m, init: VecInit::Pushed(*c, f2) });
                        }
                    }
                }
                VecInit::ToVec(_) | VecInit::Clone(_) => {
                    out.push(RawStmt::LetVec { mutable: m, init: VecInit::Lit(vec![FE::Lit(0)]) });
                }
            }
            if m {
                out.push(RawStmt::LetVec { mutable: false, init: init.clone() });
            }
        }
        RawStmt::LetArr { mutable, lit, fs } => {
            for k in 0..fs.len() {
                for e in fe(&fs[k]) {
                    let mut f2 = fs.clone();
                    f2[k] = e;
                    out.push(RawStmt::LetArr { mutable: *mutable, lit: *lit, fs: f2 });
                }
            }
        }
        RawStmt::LetTuple { destructure, a, b } => {
            out.push(RawStmt::LetF {
                mutable: false,
                annotate: false,
                shadow: None,
                init: a.clone(),
            });
            out.extend(fe(a).into_iter().map(|a| RawStmt::LetTuple {
                destructure: *destructure,
                a,
                b: b.clone(),
            }));
            out.extend(fe(b).into_iter().map(|b| RawStmt::LetTuple {
                destructure: *destructure,
                a: a.clone(),
                b,
            }));
        }
        RawStmt::LetStruct { q, mutable, destructure, a, b } => {
            out.push(RawStmt::LetF {
                mutable: false,
                annotate: false,
                shadow: None,
                init: a.clone(),
            });
            let mk = |a: FE, b: FE| RawStmt::LetStruct {
                q: *q,
                mutable: *mutable,
                destructure: *destructure,
                a,
                b,
            };
            out.extend(fe(a).into_iter().map(|a2| mk(a2, b.clone())));
            out.extend(fe(b).into_iter().map(|b2| mk(a.clone(), b2)));
        }
        RawStmt::LetS { a, k, buf, px, py } => {
            out.push(RawStmt::LetS {
                a: FE::Lit(0),
                k: IE::Lit(0),
                buf: 0,
                px: FE::Lit(0),
                py: FE::Lit(0),
            });
            out.extend(fe(a).into_iter().map(|a| RawStmt::LetS {
                a,
                k: k.clone(),
                buf: *buf,
                px: px.clone(),
                py: py.clone(),
            }));
        }
        RawStmt::LetCall { call: c, destructure } => {
            out.extend(
                call(c)
                    .into_iter()
                    .map(|c| RawStmt::LetCall { call: c, destructure: *destructure }),
            );
        }
        RawStmt::LetLoop { bound, label, body, exit } => {
            out.push(RawStmt::LetF {
                mutable: false,
                annotate: false,
                shadow: None,
                init: exit.clone(),
            });
            if *bound > 1 {
                out.push(RawStmt::LetLoop {
                    bound: 1,
                    label: *label,
                    body: body.clone(),
                    exit: exit.clone(),
                });
            }
            out.extend(stmt_list(body).into_iter().map(|b| RawStmt::LetLoop {
                bound: *bound,
                label: *label,
                body: b,
                exit: exit.clone(),
            }));
            out.extend(fe(exit).into_iter().map(|e| RawStmt::LetLoop {
                bound: *bound,
                label: *label,
                body: body.clone(),
                exit: e,
            }));
        }
        RawStmt::Assign { place, index, op, value } => {
            if *op != AOp::Set {
                out.push(RawStmt::Assign {
                    place: *place,
                    index: index.clone(),
                    op: AOp::Set,
                    value: value.clone(),
                });
            }
            if *place > 0 {
                out.push(RawStmt::Assign {
                    place: place / 2,
                    index: index.clone(),
                    op: *op,
                    value: value.clone(),
                });
            }
            out.extend(fe(value).into_iter().map(|v| RawStmt::Assign {
                place: *place,
                index: index.clone(),
                op: *op,
                value: v,
            }));
            out.extend(ie(index).into_iter().map(|i| RawStmt::Assign {
                place: *place,
                index: i,
                op: *op,
                value: value.clone(),
            }));
        }
        RawStmt::Push { buf, value } => {
            out.extend(fe(value).into_iter().map(|v| RawStmt::Push { buf: *buf, value: v }));
        }
        RawStmt::Fill { buf, value } => {
            out.extend(fe(value).into_iter().map(|v| RawStmt::Fill { buf: *buf, value: v }));
        }
        RawStmt::Call(c) => out.extend(call(c).into_iter().map(RawStmt::Call)),
        RawStmt::If { cond, then, elifs, els } => {
            if !elifs.is_empty() {
                out.push(RawStmt::If {
                    cond: cond.clone(),
                    then: then.clone(),
                    elifs: vec![],
                    els: els.clone(),
                });
            }
            if els.is_some() {
                out.push(RawStmt::If {
                    cond: cond.clone(),
                    then: then.clone(),
                    elifs: elifs.clone(),
                    els: None,
                });
            }
            out.extend(be(cond).into_iter().map(|c| RawStmt::If {
                cond: c,
                then: then.clone(),
                elifs: elifs.clone(),
                els: els.clone(),
            }));
            out.extend(stmt_list(then).into_iter().map(|t| RawStmt::If {
                cond: cond.clone(),
                then: t,
                elifs: elifs.clone(),
                els: els.clone(),
            }));
            if let Some(e) = els {
                out.extend(stmt_list(e).into_iter().map(|e| RawStmt::If {
                    cond: cond.clone(),
                    then: then.clone(),
                    elifs: elifs.clone(),
                    els: Some(e),
                }));
            }
        }
        RawStmt::Match { scrut, arms } => {
            for k in 0..arms.len() {
                if arms.len() > 1 {
                    let mut a = arms.clone();
                    a.remove(k);
                    out.push(RawStmt::Match { scrut: scrut.clone(), arms: a });
                }
                for b in stmt_list(&arms[k].1) {
                    let mut a = arms.clone();
                    a[k].1 = b;
                    out.push(RawStmt::Match { scrut: scrut.clone(), arms: a });
                }
            }
        }
        RawStmt::For { iter, label, body } => {
            if *label {
                out.push(RawStmt::For { iter: iter.clone(), label: false, body: body.clone() });
            }
            if let RawIter::Range { lo, hi, inclusive, rev, step } = iter {
                let simple = RawIter::Range {
                    lo: IE::Lit(0),
                    hi: hi.clone(),
                    inclusive: false,
                    rev: false,
                    step: 0,
                };
                if !matches!(lo, IE::Lit(0)) || *inclusive || *rev || *step > 1 {
                    out.push(RawStmt::For { iter: simple, label: *label, body: body.clone() });
                }
                for h in ie(hi) {
                    let it = RawIter::Range {
                        lo: lo.clone(),
                        hi: h,
                        inclusive: *inclusive,
                        rev: *rev,
                        step: *step,
                    };
                    out.push(RawStmt::For { iter: it, label: *label, body: body.clone() });
                }
            }
            out.extend(stmt_list(body).into_iter().map(|b| RawStmt::For {
                iter: iter.clone(),
                label: *label,
                body: b,
            }));
        }
        RawStmt::While { bound, cond, label, body } => {
            if cond.is_some() {
                out.push(RawStmt::While {
                    bound: bound.clone(),
                    cond: None,
                    label: *label,
                    body: body.clone(),
                });
            }
            out.extend(ie(bound).into_iter().map(|b| RawStmt::While {
                bound: b,
                cond: cond.clone(),
                label: *label,
                body: body.clone(),
            }));
            out.extend(stmt_list(body).into_iter().map(|b| RawStmt::While {
                bound: bound.clone(),
                cond: cond.clone(),
                label: *label,
                body: b,
            }));
        }
        RawStmt::Loop { bound, label, body } => {
            if *bound > 1 {
                out.push(RawStmt::Loop { bound: 1, label: *label, body: body.clone() });
            }
            out.extend(stmt_list(body).into_iter().map(|b| RawStmt::Loop {
                bound: *bound,
                label: *label,
                body: b,
            }));
        }
        RawStmt::Break(t, e) => out.extend(fe(e).into_iter().map(|e| RawStmt::Break(*t, e))),
        RawStmt::Return(t) => out.extend(tail(t).into_iter().map(RawStmt::Return)),
        _ => {}
    }
    out
}

/// Simplifications of a statement list: drop one, inline one's body, simplify one.
fn stmt_list(ss: &[RawStmt]) -> Vec<Vec<RawStmt>> {
    let mut out = Vec::new();
    for k in 0..ss.len() {
        let mut v = ss.to_vec();
        v.remove(k);
        out.push(v);
        for body in bodies(&ss[k]) {
            let mut v = ss[..k].to_vec();
            v.extend(body);
            v.extend_from_slice(&ss[k + 1..]);
            out.push(v);
        }
        for s in stmt(&ss[k]) {
            let mut v = ss.to_vec();
            v[k] = s;
            out.push(v);
        }
    }
    out
}

/// All one-step simplifications of a case.
pub fn candidates(c: &RawCase) -> Vec<RawCase> {
    let mut out = Vec::new();
    for k in 1..c.funcs.len() {
        let mut c2 = c.clone();
        c2.funcs.remove(k);
        out.push(c2);
    }
    if c.alias {
        out.push(RawCase { alias: false, ..c.clone() });
    }
    for (k, f) in c.funcs.iter().enumerate() {
        let with = |g: RawFn| {
            let mut c2 = c.clone();
            c2.funcs[k] = g;
            c2
        };
        if f.recursive {
            out.push(with(RawFn { recursive: false, ..f.clone() }));
        }
        if f.kind != FnKind::Free {
            out.push(with(RawFn { kind: FnKind::Free, ..f.clone() }));
        }
        if f.ret != RTy::F64 {
            out.push(with(RawFn { ret: RTy::F64, ..f.clone() }));
        }
        for j in 0..f.params.len() {
            if k == 0 && f.params.len() == 1 {
                continue;
            }
            let mut g = f.clone();
            g.params.remove(j);
            out.push(with(g));
            if f.params[j] != PTy::F64 {
                let mut g = f.clone();
                g.params[j] = PTy::F64;
                out.push(with(g));
            }
        }
        for body in stmt_list(&f.body) {
            out.push(with(RawFn { body, ..f.clone() }));
        }
        for t in tail(&f.tail) {
            out.push(with(RawFn { tail: t, ..f.clone() }));
        }
        if f.recursive {
            for t in tail(&f.base) {
                out.push(with(RawFn { base: t, ..f.clone() }));
            }
        }
    }
    for k in 0..c.inputs.len() {
        let i = &c.inputs[k];
        if i.floats.len() > 1 {
            let mut c2 = c.clone();
            c2.inputs[k].floats.truncate(i.floats.len() - 1);
            out.push(c2);
        }
        if !i.int.is_multiple_of(5) {
            let mut c2 = c.clone();
            c2.inputs[k].int = i.int - 1;
            out.push(c2);
        }
    }
    out
}
