//! proptest strategies for raw cases ([`RawCase`]): context-free, so proptest's own shrinking
//! (towards earlier alternatives, shorter vectors, smaller numbers) always yields a raw case the
//! resolver can turn into a valid program. Float inputs do not shrink: a shrunk input would drift
//! towards 0.0, where the kinks of `abs`, `min` or a branch threshold are.

use super::ast::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Union;

/// How deep statements and expressions nest (levels 0..=DEPTH).
const DEPTH: usize = 3;

fn union<T: std::fmt::Debug + 'static>(arms: Vec<(u32, BoxedStrategy<T>)>) -> BoxedStrategy<T> {
    Union::new_weighted(arms).boxed()
}

fn cmp_op() -> BoxedStrategy<CmpOp> {
    prop_oneof![
        Just(CmpOp::Lt),
        Just(CmpOp::Gt),
        Just(CmpOp::Le),
        Just(CmpOp::Ge),
        Just(CmpOp::Eq),
        Just(CmpOp::Ne)
    ]
    .boxed()
}

/// Strategies at every level, built bottom-up once and shared (each level's strategy is an
/// `Arc` underneath, so the tree of strategies is as small as the number of levels).
struct Levels {
    ie: Vec<BoxedStrategy<IE>>,
    fe: Vec<BoxedStrategy<FE>>,
    be: Vec<BoxedStrategy<BE>>,
    stmts: Vec<BoxedStrategy<Vec<RawStmt>>>,
}

fn ie_level(prev: Option<&BoxedStrategy<IE>>) -> BoxedStrategy<IE> {
    let leaf = union(vec![
        (5, any::<u8>().prop_map(IE::Var).boxed()),
        (3, (0u8..5).prop_map(IE::Lit).boxed()),
        (2, any::<u8>().prop_map(IE::Len).boxed()),
    ]);
    let Some(p) = prev else { return leaf };
    let b = |s: &BoxedStrategy<IE>| s.clone().prop_map(Box::new);
    union(vec![
        (8, leaf),
        (2, (b(p), b(p)).prop_map(|(x, y)| IE::Add(x, y)).boxed()),
        (1, (b(p), b(p)).prop_map(|(x, y)| IE::Mul(x, y)).boxed()),
        (1, (b(p), 1u8..5).prop_map(|(x, k)| IE::Rem(x, k)).boxed()),
        (1, (b(p), 1u8..4).prop_map(|(x, k)| IE::Div(x, k)).boxed()),
        (1, (b(p), b(p)).prop_map(|(x, y)| IE::Min(x, y)).boxed()),
        (1, (b(p), b(p)).prop_map(|(x, y)| IE::Max(x, y)).boxed()),
    ])
}

fn raw_call(
    fe: &BoxedStrategy<FE>,
    ie: &BoxedStrategy<IE>,
    be: &BoxedStrategy<BE>,
) -> BoxedStrategy<RawCall> {
    (
        any::<u8>(),
        vec(fe.clone(), 0..4),
        vec(ie.clone(), 0..3),
        vec(any::<u8>(), 0..4),
        vec(be.clone(), 0..2),
    )
        .prop_map(|(func, fargs, iargs, picks, bargs)| RawCall { func, fargs, iargs, picks, bargs })
        .boxed()
}

fn raw_pat(be: &BoxedStrategy<BE>) -> BoxedStrategy<RawPat> {
    union(vec![
        (4, (0u8..5).prop_map(RawPat::Lit).boxed()),
        (2, (0u8..5, 0u8..5).prop_map(|(a, b)| RawPat::Or(a, b)).boxed()),
        (2, (0u8..5, 0u8..4).prop_map(|(a, b)| RawPat::Range(a, b)).boxed()),
        (1, be.clone().prop_map(RawPat::Guard).boxed()),
    ])
}

impl Levels {
    fn new() -> Levels {
        let mut ie = vec![ie_level(None)];
        ie.push(ie_level(Some(&ie[0])));
        ie.push(ie_level(Some(&ie[1])));
        let mut lv = Levels { ie, fe: Vec::new(), be: Vec::new(), stmts: Vec::new() };
        for level in 0..=DEPTH {
            let fe = lv.fe_level(level);
            lv.fe.push(fe);
            let be = lv.be_level(level);
            lv.be.push(be);
            let stmts = lv.stmts_level(level);
            lv.stmts.push(stmts);
        }
        lv
    }

    fn ie_at(&self, level: usize) -> BoxedStrategy<IE> {
        self.ie[level.min(self.ie.len() - 1)].clone()
    }

    fn fe_level(&self, level: usize) -> BoxedStrategy<FE> {
        let ie0 = self.ie_at(0);
        let leaf = union(vec![
            (10, any::<u8>().prop_map(FE::Var).boxed()),
            (2, (0u8..8).prop_map(FE::Lit).boxed()),
            (1, (0u8..4).prop_map(FE::Const).boxed()),
            (1, ie0.clone().prop_map(|i| FE::Cast(Box::new(i))).boxed()),
            (5, (any::<u8>(), ie0).prop_map(|(b, i)| FE::Elem(b, Box::new(i))).boxed()),
            (1, any::<u8>().prop_map(FE::Sum).boxed()),
        ]);
        if level == 0 {
            return leaf;
        }
        let p = self.fe[level - 1].clone();
        let b = move || p.clone().prop_map(Box::new);
        let ie = self.ie_at(level);
        let be = self.be[level - 1].clone();
        let stmts = self.stmts[level - 1].clone();
        let m1 = proptest::sample::select(M1_ALL.to_vec());
        let op = prop_oneof![
            3 => Just(FOp::Add),
            2 => Just(FOp::Sub),
            3 => Just(FOp::Mul),
            1 => Just(FOp::Div),
            1 => Just(FOp::DivSq),
            1 => Just(FOp::Rem),
        ];
        let m2 = prop_oneof![
            Just(M2::Atan2),
            Just(M2::Hypot),
            Just(M2::Powf),
            Just(M2::Min),
            Just(M2::Max),
            Just(M2::Log),
        ];
        let call = raw_call(&self.fe[level - 1], &self.ie_at(1), &self.be[level - 1]);
        union(vec![
            (14, leaf),
            (12, (op, b(), b()).prop_map(|(o, x, y)| FE::Bin(o, x, y)).boxed()),
            (1, b().prop_map(FE::Neg).boxed()),
            (8, (m1, any::<u8>(), b()).prop_map(|(m, f, x)| FE::Un(m, f, x)).boxed()),
            (3, (m2, any::<u8>(), b(), b()).prop_map(|(m, f, x, y)| FE::Bin2(m, f, x, y)).boxed()),
            (1, (-2i8..4, b()).prop_map(|(k, x)| FE::Powi(k, x)).boxed()),
            (1, (b(), b(), b()).prop_map(|(x, y, z)| FE::MulAdd(Box::new((*x, *y, *z)))).boxed()),
            (1, (0u8..3, b()).prop_map(|(k, x)| FE::Clamp(k, x)).boxed()),
            (2, ie.clone().prop_map(|i| FE::Cast(Box::new(i))).boxed()),
            (5, call.clone().prop_map(|c| FE::Call(Box::new(c))).boxed()),
            (1, (call, any::<bool>()).prop_map(|(c, s)| FE::CallField(Box::new(c), s)).boxed()),
            (2, (be, b(), b()).prop_map(|(c, x, y)| FE::If(Box::new((c, *x, *y)))).boxed()),
            (
                1,
                (ie, vec((raw_pat(&self.be[level - 1]), self.fe[level - 1].clone()), 1..4))
                    .prop_map(|(i, arms)| FE::Match(Box::new(i), arms))
                    .boxed(),
            ),
            (1, (stmts, b()).prop_map(|(s, e)| FE::Block(s, e)).boxed()),
        ])
    }

    fn be_level(&self, level: usize) -> BoxedStrategy<BE> {
        let fe = self.fe[level.min(2)].clone();
        let ie = self.ie_at(1);
        let leaf = union(vec![
            (
                6,
                (cmp_op(), fe.clone(), fe.clone())
                    .prop_map(|(o, a, b)| BE::CmpF(o, Box::new(a), Box::new(b)))
                    .boxed(),
            ),
            (
                4,
                (cmp_op(), ie.clone(), ie)
                    .prop_map(|(o, a, b)| BE::CmpI(o, Box::new(a), Box::new(b)))
                    .boxed(),
            ),
            (2, any::<u8>().prop_map(BE::Var).boxed()),
            (1, any::<bool>().prop_map(BE::Lit).boxed()),
            (1, fe.prop_map(|e| BE::IsFinite(Box::new(e))).boxed()),
        ]);
        if level == 0 {
            return leaf;
        }
        let p = self.be[level - 1].clone();
        let b = move || p.clone().prop_map(Box::new);
        union(vec![
            (8, leaf),
            (1, (b(), b()).prop_map(|(x, y)| BE::And(x, y)).boxed()),
            (1, (b(), b()).prop_map(|(x, y)| BE::Or(x, y)).boxed()),
            (1, b().prop_map(BE::Not).boxed()),
        ])
    }

    fn tail(&self, level: usize) -> BoxedStrategy<RawTail> {
        (vec(self.fe[level].clone(), 3), any::<u8>())
            .prop_map(|(fs, pick)| RawTail { fs, pick })
            .boxed()
    }

    fn stmts_level(&self, level: usize) -> BoxedStrategy<Vec<RawStmt>> {
        let fe = self.fe[level].clone();
        let ie = self.ie_at(1);
        let be = self.be[level].clone();
        let call = raw_call(&fe, &ie, &be);
        let u8s = any::<u8>;
        let mut arms: Vec<(u32, BoxedStrategy<RawStmt>)> = vec![
            (
                10,
                (any::<bool>(), any::<bool>(), proptest::option::weighted(0.2, u8s()), fe.clone())
                    .prop_map(|(mutable, annotate, shadow, init)| RawStmt::LetF {
                        mutable,
                        annotate,
                        shadow,
                        init,
                    })
                    .boxed(),
            ),
            (1, fe.clone().prop_map(RawStmt::LetLate).boxed()),
            (2, ie.clone().prop_map(RawStmt::LetI).boxed()),
            (1, be.clone().prop_map(RawStmt::LetB).boxed()),
            (
                3,
                (
                    any::<bool>(),
                    union(vec![
                        (2, vec(fe.clone(), 1..4).prop_map(VecInit::Lit).boxed()),
                        (2, (fe.clone(), ie.clone()).prop_map(|(e, n)| VecInit::Rep(e, n)).boxed()),
                        (
                            2,
                            (any::<bool>(), vec(fe.clone(), 1..4))
                                .prop_map(|(c, es)| VecInit::Pushed(c, es))
                                .boxed(),
                        ),
                        (1, u8s().prop_map(VecInit::ToVec).boxed()),
                        (1, u8s().prop_map(VecInit::Clone).boxed()),
                    ]),
                )
                    .prop_map(|(mutable, init)| RawStmt::LetVec { mutable, init })
                    .boxed(),
            ),
            (
                1,
                (any::<bool>(), any::<bool>(), vec(fe.clone(), 3))
                    .prop_map(|(mutable, lit, fs)| RawStmt::LetArr { mutable, lit, fs })
                    .boxed(),
            ),
            (
                1,
                (any::<bool>(), fe.clone(), fe.clone())
                    .prop_map(|(destructure, a, b)| RawStmt::LetTuple { destructure, a, b })
                    .boxed(),
            ),
            (
                2,
                (any::<bool>(), any::<bool>(), any::<bool>(), fe.clone(), fe.clone())
                    .prop_map(|(q, mutable, destructure, a, b)| RawStmt::LetStruct {
                        q,
                        mutable,
                        destructure,
                        a,
                        b,
                    })
                    .boxed(),
            ),
            (
                1,
                (fe.clone(), ie.clone(), u8s(), fe.clone(), fe.clone())
                    .prop_map(|(a, k, buf, px, py)| RawStmt::LetS { a, k, buf, px, py })
                    .boxed(),
            ),
            (
                2,
                (call.clone(), any::<bool>())
                    .prop_map(|(call, destructure)| RawStmt::LetCall { call, destructure })
                    .boxed(),
            ),
            (
                12,
                (
                    u8s(),
                    ie.clone(),
                    prop_oneof![
                        3 => Just(AOp::Set),
                        3 => Just(AOp::Add),
                        1 => Just(AOp::Sub),
                        2 => Just(AOp::Mul),
                        1 => Just(AOp::Div),
                    ],
                    fe.clone(),
                )
                    .prop_map(|(place, index, op, value)| RawStmt::Assign {
                        place,
                        index,
                        op,
                        value,
                    })
                    .boxed(),
            ),
            (
                1,
                (u8s(), any::<bool>(), ie.clone())
                    .prop_map(|(var, add, value)| RawStmt::AssignI { var, add, value })
                    .boxed(),
            ),
            (3, (u8s(), fe.clone()).prop_map(|(buf, value)| RawStmt::Push { buf, value }).boxed()),
            (1, u8s().prop_map(RawStmt::Pop).boxed()),
            (1, (u8s(), fe.clone()).prop_map(|(buf, value)| RawStmt::Fill { buf, value }).boxed()),
            (
                1,
                (u8s(), ie.clone(), ie.clone())
                    .prop_map(|(buf, i, j)| RawStmt::Swap { buf, i, j })
                    .boxed(),
            ),
            (1, (u8s(), u8s()).prop_map(|(dst, src)| RawStmt::CopyFrom { dst, src }).boxed()),
            (1, (u8s(), u8s()).prop_map(|(dst, src)| RawStmt::Store { dst, src }).boxed()),
            (3, call.prop_map(RawStmt::Call).boxed()),
            (1, (u8s(), fe.clone()).prop_map(|(t, e)| RawStmt::Break(t, e)).boxed()),
            (1, u8s().prop_map(RawStmt::Continue).boxed()),
            (1, self.tail(level).prop_map(RawStmt::Return).boxed()),
            (
                1,
                union(vec![
                    (1, u8s().prop_map(RawAssert::Len).boxed()),
                    (1, fe.clone().prop_map(RawAssert::Finite).boxed()),
                    (1, u8s().prop_map(RawAssert::EqLen).boxed()),
                    (1, ie.clone().prop_map(RawAssert::Panic).boxed()),
                ])
                .prop_map(RawStmt::Assert)
                .boxed(),
            ),
        ];
        if level > 0 {
            let body = self.stmts[level - 1].clone();
            let pat = raw_pat(&be);
            arms.extend([
                (
                    6,
                    (
                        be.clone(),
                        body.clone(),
                        vec((be.clone(), body.clone()), 0..2),
                        proptest::option::of(body.clone()),
                    )
                        .prop_map(|(cond, then, elifs, els)| RawStmt::If { cond, then, elifs, els })
                        .boxed(),
                ),
                (
                    2,
                    (
                        union(vec![
                            (3, ie.clone().prop_map(Scrut::Int).boxed()),
                            (1, ie.clone().prop_map(Scrut::Mod3).boxed()),
                            (1, be.clone().prop_map(Scrut::Bool).boxed()),
                            (1, u8s().prop_map(Scrut::Enum).boxed()),
                        ]),
                        vec((pat, body.clone()), 1..4),
                    )
                        .prop_map(|(scrut, arms)| RawStmt::Match { scrut, arms })
                        .boxed(),
                ),
                (
                    6,
                    (
                        union(vec![
                            (
                                3,
                                (ie.clone(), ie.clone(), any::<bool>(), any::<bool>(), 0u8..4)
                                    .prop_map(|(lo, hi, inclusive, rev, step)| RawIter::Range {
                                        lo,
                                        hi,
                                        inclusive,
                                        rev,
                                        step,
                                    })
                                    .boxed(),
                            ),
                            (
                                2,
                                (u8s(), u8s(), u8s())
                                    .prop_map(|(buf, other, kind)| RawIter::Buf {
                                        buf,
                                        other,
                                        kind,
                                    })
                                    .boxed(),
                            ),
                        ]),
                        any::<bool>(),
                        body.clone(),
                    )
                        .prop_map(|(iter, label, body)| RawStmt::For { iter, label, body })
                        .boxed(),
                ),
                (
                    2,
                    (
                        ie.clone(),
                        proptest::option::weighted(0.3, be.clone()),
                        any::<bool>(),
                        body.clone(),
                    )
                        .prop_map(|(bound, cond, label, body)| RawStmt::While {
                            bound,
                            cond,
                            label,
                            body,
                        })
                        .boxed(),
                ),
                (
                    1,
                    (1u8..5, any::<bool>(), body.clone())
                        .prop_map(|(bound, label, body)| RawStmt::Loop { bound, label, body })
                        .boxed(),
                ),
                (
                    1,
                    (1u8..5, any::<bool>(), body, fe.clone())
                        .prop_map(|(bound, label, body, exit)| RawStmt::LetLoop {
                            bound,
                            label,
                            body,
                            exit,
                        })
                        .boxed(),
                ),
            ]);
        }
        let max = if level == DEPTH { 7 } else { 4 };
        vec(union(arms), 1..max).boxed()
    }
}

fn pty(entry: bool) -> BoxedStrategy<PTy> {
    let mut arms: Vec<(u32, BoxedStrategy<PTy>)> = vec![
        (10, Just(PTy::F64).boxed()),
        (4, Just(PTy::Usize).boxed()),
        (1, Just(PTy::Bool).boxed()),
        (1, Just(PTy::Enum).boxed()),
        (5, Just(PTy::Slice).boxed()),
        (4, Just(PTy::SliceMut).boxed()),
        (2, Just(PTy::VecRef).boxed()),
        (2, Just(PTy::VecMut).boxed()),
        (2, Just(PTy::F64Mut).boxed()),
        (1, Just(PTy::Tuple).boxed()),
        (1, Just(PTy::P).boxed()),
        (1, Just(PTy::PRef).boxed()),
        (1, Just(PTy::PMut).boxed()),
        (1, Just(PTy::SRef).boxed()),
        (1, Just(PTy::SMut).boxed()),
    ];
    if entry {
        arms.extend([
            (1, Just(PTy::F32).boxed()),
            (1, Just(PTy::VecVal).boxed()),
            (1, Just(PTy::VecValMut).boxed()),
            (1, Just(PTy::Arr).boxed()),
            (1, Just(PTy::ArrValMut).boxed()),
            (1, Just(PTy::ArrRef).boxed()),
            (1, Just(PTy::ArrMut).boxed()),
            (1, Just(PTy::S).boxed()),
        ]);
    }
    union(arms)
}

fn rty(entry: bool) -> BoxedStrategy<RTy> {
    let mut arms: Vec<(u32, BoxedStrategy<RTy>)> = vec![
        (12, Just(RTy::F64).boxed()),
        (2, Just(RTy::Unit).boxed()),
        (1, Just(RTy::Tuple).boxed()),
        (1, Just(RTy::Vec).boxed()),
        (1, Just(RTy::P).boxed()),
    ];
    if entry {
        arms.push((1, Just(RTy::Arr).boxed()));
    }
    union(arms)
}

fn raw_fn(lv: &Levels, entry: bool) -> BoxedStrategy<RawFn> {
    let params = vec(pty(entry), if entry { 1..6 } else { 0..4 });
    let recursive = if entry { Just(false).boxed() } else { proptest::bool::weighted(0.3).boxed() };
    let kind = if entry {
        Just(FnKind::Free).boxed()
    } else {
        prop_oneof![
            10 => Just(FnKind::Free),
            2 => Just(FnKind::Module),
            1 => Just(FnKind::MethodRef),
            1 => Just(FnKind::MethodMut),
            1 => Just(FnKind::MethodVal),
            1 => Just(FnKind::Generic),
        ]
        .boxed()
    };
    (params, rty(entry), recursive, lv.stmts[DEPTH].clone(), lv.tail(DEPTH), lv.tail(1), kind)
        .prop_map(|(params, ret, recursive, body, tail, base, kind)| RawFn {
            params,
            ret,
            recursive,
            body,
            tail,
            base,
            kind,
        })
        .boxed()
}

fn raw_input() -> BoxedStrategy<RawInput> {
    // Three decimals, so that printed inputs read well; no shrinking (see the module's doc).
    let float = (-2000i32..=2000).prop_map(|k| f64::from(k) / 1000.0).no_shrink();
    (vec(float, 1..7), any::<u8>(), any::<bool>())
        .prop_map(|(floats, int, flag)| RawInput { floats, int, flag })
        .boxed()
}

/// The strategy of raw cases: an entry point and up to three helpers.
pub fn raw_case() -> BoxedStrategy<RawCase> {
    let lv = Levels::new();
    let entry = raw_fn(&lv, true);
    let helper = raw_fn(&lv, false);
    (entry, vec(helper, 0..4), vec(raw_input(), 6), any::<bool>(), any::<u16>())
        .prop_map(|(entry, helpers, inputs, alias, seed)| {
            let mut funcs = vec![entry];
            funcs.extend(helpers);
            RawCase { funcs, inputs, alias, seed }
        })
        .boxed()
}
