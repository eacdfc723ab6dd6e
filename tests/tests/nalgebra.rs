//! nalgebra's heap matrices in differentiable code (feature `nalgebra`, issue 15): every rule of
//! `mooncake_runtime::linalg::rules` checked by `test_rule!` (finite differences, forward against
//! reverse) on random inputs of several shapes, non-square and `1 x n` / `n x 1` included.

// Rule signatures spell out the rule interface.
#![allow(clippy::type_complexity)]

use mooncake_runtime::TestRng;
use mooncake_runtime::linalg::rules::*;
use mooncake_runtime::prelude::*;
use nalgebra::{DMatrix, DVector, RowDVector};

/// Shapes `(rows, columns)` the tests run on.
const SHAPES: &[(usize, usize)] = &[(1, 1), (3, 3), (2, 5), (5, 2), (1, 4), (4, 1)];

fn mat(r: usize, c: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    DMatrix::from_fn(r, c, |_, _| rng.normal())
}

fn vector(n: usize, seed: u64) -> DVector<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    DVector::from_fn(n, |_, _| rng.normal())
}

fn row(n: usize, seed: u64) -> RowDVector<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    RowDVector::from_fn(n, |_, _| rng.normal())
}

// -- the primals --------------------------------------------------------------------------------

fn dot<M: DotLike>(a: &M, b: &M) -> f64 {
    a.dot_like(b)
}

/// `dot` for the three types (nalgebra's `dot` is generic over storages, which a primal
/// signature cannot name once for all three).
trait DotLike {
    fn dot_like(&self, b: &Self) -> f64;
}
macro_rules! dot_like {
    ($($t:ty),*) => {$(
        impl DotLike for $t {
            fn dot_like(&self, b: &Self) -> f64 {
                self.dot(b)
            }
        }
    )*};
}
dot_like!(DVector<f64>, RowDVector<f64>, DMatrix<f64>);

fn norm_squared(a: &DMatrix<f64>) -> f64 {
    a.norm_squared()
}
fn norm(a: &DMatrix<f64>) -> f64 {
    a.norm()
}
fn vnorm(a: &DVector<f64>) -> f64 {
    a.norm()
}
fn vnorm_squared(a: &DVector<f64>) -> f64 {
    a.norm_squared()
}
fn sum(a: &DMatrix<f64>) -> f64 {
    a.sum()
}
fn vsum(a: &DVector<f64>) -> f64 {
    a.sum()
}
fn transpose(a: &DMatrix<f64>) -> DMatrix<f64> {
    a.transpose()
}
fn vtranspose(a: &DVector<f64>) -> RowDVector<f64> {
    a.transpose()
}
fn rtranspose(a: &RowDVector<f64>) -> DVector<f64> {
    a.transpose()
}
fn add(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    a + b
}
fn sub(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    a - b
}
fn vadd(a: &DVector<f64>, b: &DVector<f64>) -> DVector<f64> {
    a + b
}
fn vsub(a: &DVector<f64>, b: &DVector<f64>) -> DVector<f64> {
    a - b
}
fn neg(a: &DMatrix<f64>) -> DMatrix<f64> {
    -a
}
fn scale(a: &DMatrix<f64>, s: f64) -> DMatrix<f64> {
    a * s
}
fn vscale(a: &DVector<f64>, s: f64) -> DVector<f64> {
    a * s
}
fn component_mul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    a.component_mul(b)
}
fn vcomponent_mul(a: &DVector<f64>, b: &DVector<f64>) -> DVector<f64> {
    a.component_mul(b)
}
fn mat_vec(m: &DMatrix<f64>, x: &DVector<f64>) -> DVector<f64> {
    m * x
}
fn mat_mat(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    a * b
}
fn from_vec(v: Vec<f64>) -> DVector<f64> {
    DVector::from_vec(v)
}
fn from_row_slice(r: usize, c: usize, s: &[f64]) -> DMatrix<f64> {
    DMatrix::from_row_slice(r, c, s)
}
fn zeros_vector(n: usize) -> DVector<f64> {
    DVector::zeros(n)
}
fn zeros_matrix(r: usize, c: usize) -> DMatrix<f64> {
    DMatrix::zeros(r, c)
}
fn vindex(v: &DVector<f64>, i: usize) -> f64 {
    v[i]
}
fn index2(m: &DMatrix<f64>, ij: (usize, usize)) -> f64 {
    m[ij]
}

// -- the rule tests -------------------------------------------------------------------------------

#[test]
fn reductions() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (a, b) = (mat(r, c, s), mat(r, c, s + 100));
        let (x, y) = (vector(r, s + 200), vector(r, s + 300));
        let (p, q) = (row(c, s + 400), row(c, s + 500));
        test_rule!(dot(&a, &b), frule = dot_frule, rrule = dot_rrule, seed = s);
        test_rule!(dot(&x, &y), frule = dot_frule, rrule = dot_rrule, seed = s);
        test_rule!(dot(&p, &q), frule = dot_frule, rrule = dot_rrule, seed = s);
        // The same matrix twice: one slot, one shadow.
        test_rule!(dot(&a, &a), frule = dot_frule, rrule = dot_rrule, seed = s);
        test_rule!(norm_squared(&a), frule = norm_squared_frule, rrule = norm_squared_rrule);
        test_rule!(vnorm_squared(&x), frule = norm_squared_frule, rrule = norm_squared_rrule);
        test_rule!(norm(&a), frule = norm_frule, rrule = norm_rrule, seed = s);
        test_rule!(vnorm(&x), frule = norm_frule, rrule = norm_rrule, seed = s);
        test_rule!(sum(&a), frule = sum_frule, rrule = sum_rrule, seed = s);
        test_rule!(vsum(&x), frule = sum_frule, rrule = sum_rrule, seed = s);
    }
}

#[test]
fn transposes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let a = mat(r, c, s);
        let x = vector(r, s + 1);
        let p = row(c, s + 2);
        test_rule!(transpose(&a), frule = transpose_frule, rrule = transpose_rrule, seed = s);
        test_rule!(vtranspose(&x), frule = transpose_frule, rrule = transpose_rrule, seed = s);
        test_rule!(rtranspose(&p), frule = transpose_frule, rrule = transpose_rrule, seed = s);
    }
}

#[test]
fn element_wise() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (a, b) = (mat(r, c, s), mat(r, c, s + 100));
        let (x, y) = (vector(r, s + 200), vector(r, s + 300));
        test_rule!(add(&a, &b), frule = add_frule, rrule = add_rrule, seed = s);
        test_rule!(add(&a, &a), frule = add_frule, rrule = add_rrule, seed = s);
        test_rule!(vadd(&x, &y), frule = add_frule, rrule = add_rrule, seed = s);
        test_rule!(sub(&a, &b), frule = sub_frule, rrule = sub_rrule, seed = s);
        test_rule!(vsub(&x, &y), frule = sub_frule, rrule = sub_rrule, seed = s);
        test_rule!(neg(&a), frule = neg_frule, rrule = neg_rrule, seed = s);
        test_rule!(scale(&a, -1.5), frule = scale_frule, rrule = scale_rrule, seed = s);
        test_rule!(vscale(&x, 0.7), frule = scale_frule, rrule = scale_rrule, seed = s);
        test_rule!(
            component_mul(&a, &b),
            frule = component_mul_frule,
            rrule = component_mul_rrule,
            seed = s
        );
        test_rule!(
            component_mul(&a, &a),
            frule = component_mul_frule,
            rrule = component_mul_rrule,
            seed = s
        );
        test_rule!(
            vcomponent_mul(&x, &y),
            frule = component_mul_frule,
            rrule = component_mul_rrule,
            seed = s
        );
    }
}

#[test]
fn products() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s);
        let x = vector(c, s + 1);
        test_rule!(mat_vec(&m, &x), frule = mat_vec_frule, rrule = mat_vec_rrule, seed = s);
        for n in [1, 3] {
            let b = mat(c, n, s + 2);
            test_rule!(mat_mat(&m, &b), frule = mat_mat_frule, rrule = mat_mat_rrule, seed = s);
        }
    }
    // A square matrix times itself: one shadow for both operands.
    let a = mat(3, 3, 7);
    test_rule!(mat_mat(&a, &a), frule = mat_mat_frule, rrule = mat_mat_rrule);
}

#[test]
fn construction() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let v: Vec<f64> = vector(r * c, s).iter().copied().collect();
        test_rule!(from_vec(v), frule = from_vec_frule, rrule = from_vec_rrule, seed = s);
        test_rule!(
            from_row_slice(r, c, &*v),
            frule = from_row_slice_frule,
            rrule = from_row_slice_rrule,
            seed = s
        );
        test_rule!(zeros_vector(r), frule = zeros_vector_frule, rrule = zeros_vector_rrule);
        test_rule!(zeros_matrix(r, c), frule = zeros_matrix_frule, rrule = zeros_matrix_rrule);
    }
}

#[test]
fn indexed_reads() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s);
        let x = vector(r, s + 1);
        for i in [0, r - 1] {
            test_rule!(vindex(&x, i), frule = index_frule, rrule = index_rrule, seed = s);
            for j in [0, c - 1] {
                test_rule!(
                    index2(&m, (i, j)),
                    frule = index2_frule,
                    rrule = index2_rrule,
                    seed = s
                );
            }
        }
    }
}

/// A reverse rule of `m * x` whose `x̄` is twice too large: the checker must reject it.
fn mat_vec_wrong_rrule(
    m: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    x: CoDual<&DVector<f64>, SharedRef<DVector<f64>>>,
) -> (
    CoDual<DVector<f64>, SharedRef<DVector<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let dx = x.fdata.clone();
    let before = dx.with(Clone::clone);
    let (y, pb) = mat_vec_rrule(m, x);
    let pullback = move |r: NoRData| {
        let out = pb(r);
        // The increment `mᵀ ȳ` added a second time.
        dx.with_mut(|d| {
            let inc = &*d - &before;
            *d += inc;
        });
        out
    };
    (y, pullback)
}

#[test]
fn a_wrong_rule_is_rejected() {
    let m = mat(3, 2, 1);
    let x = vector(2, 2);
    let e = check_rule!(mat_vec(&m, &x), rrule = mat_vec_wrong_rrule, mode = reverse);
    assert!(e.is_err(), "a wrong pullback passed the checker");
}

// -- derived rules ------------------------------------------------------------------------------

/// The quadratic form `xᵀ M x`.
#[differentiable]
fn quad_form(m: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let y = m * x;
    x.dot(&y)
}

/// The least-squares loss `|A x - b|²`.
#[differentiable]
fn least_squares(a: &DMatrix<f64>, x: &DVector<f64>, b: &DVector<f64>) -> f64 {
    let r = a * x - b;
    r.norm_squared()
}

/// Operators on owned temporaries and on references mixed, scaling on both sides, unary minus
/// and matrix products. Not yet in reverse mode: a borrow of a local (`&c * 2.0`:
/// `BorrowsInLocalsOrStdCalls`), and `+`, `-` between two matrices both held by value (`c - d`)
/// and unary `-` of one (`-c`), which the reverse sweep takes for numbers' sums (a type error
/// in the expansion).
#[differentiable]
fn operators(a: &DMatrix<f64>, b: &DMatrix<f64>, x: &DVector<f64>, s: f64) -> f64 {
    let c = a * b;
    let t = c.sum() * s;
    let d = c * 2.0 - a;
    let y = (d.transpose() * x) * s;
    let w = s * y;
    w.norm_squared() + t
}

/// Methods only: both modes.
#[differentiable]
fn methods(a: &DVector<f64>, b: &DVector<f64>, m: &DMatrix<f64>) -> f64 {
    let c = a.component_mul(b);
    c.dot(a) + a.norm() * b.sum() + m.transpose().norm_squared()
}

#[test]
fn derived_operators_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s + 1);
        let x = vector(c, s + 2);
        let b = vector(r, s + 3);
        test_rule!(least_squares(&m, &x, &b), seed = s);
        let q = mat(c, c, s + 4);
        test_rule!(quad_form(&q, &x), seed = s);
        let (a, bb) = (mat(r, c, s + 5), mat(c, c, s + 6));
        test_rule!(operators(&a, &bb, &b, 0.75), seed = s);
    }
}

#[test]
fn derived_forward() {
    for &(r, c) in SHAPES {
        let m = mat(r, c, 1);
        let x = vector(c, 2);
        let b = vector(r, 3);
        check_rule!(least_squares(&m, &x, &b), frule = least_squares_frule, mode = forward)
            .unwrap();
        let q = mat(c, c, 4);
        check_rule!(quad_form(&q, &x), frule = quad_form_frule, mode = forward).unwrap();
    }
}

#[test]
fn derived_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (a, b) = (vector(r, s), vector(r, s + 1));
        let m = mat(r, c, s + 2);
        test_rule!(methods(&a, &b, &m), seed = s);
        test_rule!(methods(&a, &a, &m), seed = s);
    }
}

// -- data arguments `Const(..)`, `zero_adjoint!` results, values lent to calls ------------------

/// The 0/1 mask of the positive entries: piecewise constant, declared with `zero_adjoint!`, so
/// its result has a constant shadow (`Primal::constant_fdata`).
fn positive(h: &DMatrix<f64>) -> DMatrix<f64> {
    h.map(|v| if v > 0.0 { 1.0 } else { 0.0 })
}

zero_adjoint! {
    fn positive(h: &DMatrix<f64>) -> DMatrix<f64>;
}

/// Every rule that skips work for a constant shadow (`SharedRef::is_live`), with the data `x`,
/// `v`, `m`, `y` passed `Const(..)` below: products with the constant on either side,
/// `component_mul` with a mask and with data, `dot`, `-`, and values held by the rule lent to
/// calls (`&h`, `&r`).
#[differentiable]
fn two_layers(
    w1: &DMatrix<f64>,
    w2: &DMatrix<f64>,
    x: &DMatrix<f64>,
    v: &DVector<f64>,
    m: &DMatrix<f64>,
    y: &DMatrix<f64>,
) -> f64 {
    let h = w1 * x;
    let a = h.component_mul(&positive(&h));
    let out = w2 * a;
    let r = out - y;
    let z = w1.transpose() * v;
    r.norm_squared() + z.dot(&z) + h.component_mul(m).sum()
}

#[test]
fn constant_arguments_skip_their_gradients_only() {
    for (k, &(hidden, inputs, outputs, batch)) in
        [(3, 2, 2, 4), (6, 7, 8, 9), (1, 1, 1, 1)].iter().enumerate()
    {
        let s = 10 * k as u64;
        let (w1, w2) = (mat(hidden, inputs, s), mat(outputs, hidden, s + 1));
        let (x, v) = (mat(inputs, batch, s + 2), vector(hidden, s + 3));
        let (m, y) = (mat(hidden, batch, s + 4), mat(outputs, batch, s + 5));
        test_rule!(two_layers(&w1, &w2, &x, &v, &m, &y), seed = s);
        let (f, (g1, g2, ..)) = value_and_gradient!(two_layers(&w1, &w2, &x, &v, &m, &y));
        let (fc, (c1, c2, cx, cv, cm, cy)) =
            value_and_gradient!(two_layers(&w1, &w2, Const(&x), Const(&v), Const(&m), Const(&y)));
        assert_eq!(f, fc);
        assert_eq!((cx, cv, cm, cy), (NoTangent, NoTangent, NoTangent, NoTangent));
        assert!((&c1 - &g1).amax() <= 1e-12 * (1.0 + g1.amax()), "w1: {c1} vs {g1}");
        assert!((&c2 - &g2).amax() <= 1e-12 * (1.0 + g2.amax()), "w2: {c2} vs {g2}");
        // The prepared form, twice on one cache (the constant shadows are reused unzeroed).
        let mut cache = GradientCache::new();
        for _ in 0..2 {
            let (fp, (p1, p2, ..)) = value_and_gradient!(
                two_layers(&w1, &w2, Const(&x), Const(&v), Const(&m), Const(&y)),
                cache = &mut cache
            );
            assert_eq!(f, fp);
            assert!((p1 - &g1).amax() <= 1e-12 * (1.0 + g1.amax()));
            assert!((p2 - &g2).amax() <= 1e-12 * (1.0 + g2.amax()));
        }
    }
}

#[test]
fn a_cache_serves_constants_and_gradients_in_turn() {
    let (w1, w2, x, v) = (mat(3, 2, 1), mat(2, 3, 2), mat(2, 4, 3), vector(3, 4));
    let (m, y) = (mat(3, 4, 5), mat(2, 4, 6));
    let (_, (_, _, gx, gv, gm, gy)) = value_and_gradient!(two_layers(&w1, &w2, &x, &v, &m, &y));
    let mut cache = GradientCache::new();
    let _ = value_and_gradient!(
        two_layers(&w1, &w2, Const(&x), Const(&v), Const(&m), Const(&y)),
        cache = &mut cache
    );
    // The constants' shadows (never zeroed, since nothing reads them) give way to zero ones.
    let (_, (_, _, cx, cv, cm, cy)) =
        value_and_gradient!(two_layers(&w1, &w2, &x, &v, &m, &y), cache = &mut cache);
    assert_eq!((cx, cv, cm, cy), (&gx, &gv, &gm, &gy));
}

// -- Cholesky solve and log-determinant -----------------------------------------------------------

use mooncake_runtime::linalg::chol::*;

/// A random symmetric positive definite `n x n` matrix: `M Mᵀ + n I`.
fn spd(n: usize, seed: u64) -> DMatrix<f64> {
    let m = mat(n, n, seed);
    &m * m.transpose() + DMatrix::identity(n, n) * n as f64
}

fn solve_vec(a: &DMatrix<f64>, b: &DVector<f64>) -> DVector<f64> {
    cholesky_solve(a, b)
}
fn solve_mat(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    cholesky_solve(a, b)
}

#[test]
fn cholesky_rules() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        let a = spd(n, s);
        let b = vector(n, s + 10);
        let bm = mat(n, 3, s + 20);
        // The rules read `A` as `(A + Aᵀ) / 2`: the checker's random (non-symmetric) directions
        // test the symmetric gradient.
        test_rule!(
            solve_vec(&a, &b),
            frule = cholesky_solve_frule,
            rrule = cholesky_solve_rrule,
            seed = s
        );
        test_rule!(
            solve_mat(&a, &bm),
            frule = cholesky_solve_frule,
            rrule = cholesky_solve_rrule,
            seed = s
        );
        test_rule!(
            cholesky_logdet(&a),
            frule = cholesky_logdet_frule,
            rrule = cholesky_logdet_rrule,
            seed = s
        );
    }
}

#[test]
fn cholesky_symmetric_gradient() {
    // `Ā` of the log-determinant is `A⁻¹`, symmetric; a symmetric perturbation of one pair
    // `(i, j)`, `(j, i)` changes `log det` by `2 Ā[(i, j)] h` to first order.
    let a = spd(4, 3);
    let (_, (g,)) = value_and_gradient!(cholesky_logdet(&a));
    let inv = a.clone().try_inverse().unwrap();
    assert!((&g - &inv).norm() < 1e-10);
    let h = 1e-6;
    let mut ap = a.clone();
    ap[(2, 1)] += h;
    ap[(1, 2)] += h;
    let mut am = a.clone();
    am[(2, 1)] -= h;
    am[(1, 2)] -= h;
    let fd = (cholesky_logdet(&ap) - cholesky_logdet(&am)) / (2.0 * h);
    assert!((fd - 2.0 * g[(2, 1)]).abs() < 1e-7, "{fd} vs {}", 2.0 * g[(2, 1)]);
}

#[test]
fn cholesky_not_positive_definite_is_nan() {
    let a = -spd(3, 1);
    let b = vector(3, 2);
    assert!(cholesky_solve(&a, &b).iter().all(|v| v.is_nan()));
    assert!(cholesky_logdet(&a).is_nan());
    assert!(cholesky_logdet(&mat(2, 3, 1)).is_nan());
    assert!(cholesky_solve(&spd(2, 1), &b).iter().all(|v| v.is_nan()));
    let (v, (g,)) = value_and_gradient!(cholesky_logdet(&a));
    assert!(v.is_nan() && g.iter().all(|x| x.is_nan()));
}

/// The Gaussian log-likelihood's data term and log-determinant, by the free functions.
#[differentiable]
fn gauss_free(a: &DMatrix<f64>, y: &DVector<f64>) -> f64 {
    let alpha = cholesky_solve(a, y);
    -0.5 * y.dot(&alpha) - 0.5 * cholesky_logdet(a)
}

/// The same by the methods.
#[differentiable]
fn gauss_methods(a: &DMatrix<f64>, y: &DVector<f64>) -> f64 {
    let alpha = a.cholesky_solve(y);
    -0.5 * y.dot(&alpha) - 0.5 * a.cholesky_logdet()
}

/// A covariance built in the body (`s (A - t I)`), then factorised: a local matrix as receiver.
#[differentiable]
fn gauss_local(a: &DMatrix<f64>, eye: &DMatrix<f64>, y: &DVector<f64>, s: f64, t: f64) -> f64 {
    let k = (a - eye * t) * s;
    let alpha = k.cholesky_solve(y);
    alpha.dot(y) + k.cholesky_logdet()
}

#[test]
fn cholesky_derived_both_modes() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        let a = spd(n, s + 1);
        let y = vector(n, s + 2);
        test_rule!(gauss_free(&a, &y), seed = s);
        test_rule!(gauss_methods(&a, &y), seed = s);
        test_rule!(gauss_local(&a, &DMatrix::identity(n, n), &y, 0.8, 0.5), seed = s);
    }
}

// -- static sizes: SVector / SMatrix (value-identified) ----------------------------------------

mod statics {
    use super::*;
    use mooncake_runtime::linalg::MatScalar;
    use mooncake_runtime::linalg::fixed::*;
    use nalgebra::{Matrix2x3, SMatrix, SVector, Vector3};

    fn smat<T: MatScalar, const R: usize, const C: usize>(seed: u64) -> SMatrix<T, R, C> {
        let mut rng = TestRng::seed_from_u64(seed);
        SMatrix::from_fn(|_, _| <T as Float>::from_f64(rng.normal()))
    }

    // The primals, generic in the element type (`f64` or `f32`).
    fn dot<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        b: &SMatrix<T, R, C>,
    ) -> T {
        a.dot(b)
    }
    fn norm<T: MatScalar, const R: usize, const C: usize>(a: &SMatrix<T, R, C>) -> T {
        a.norm()
    }
    fn norm_squared<T: MatScalar, const R: usize, const C: usize>(a: &SMatrix<T, R, C>) -> T {
        a.norm_squared()
    }
    fn sum<T: MatScalar, const R: usize, const C: usize>(a: &SMatrix<T, R, C>) -> T {
        a.sum()
    }
    fn transpose<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
    ) -> SMatrix<T, C, R> {
        a.transpose()
    }
    fn add<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        b: &SMatrix<T, R, C>,
    ) -> SMatrix<T, R, C> {
        a + b
    }
    fn sub<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        b: &SMatrix<T, R, C>,
    ) -> SMatrix<T, R, C> {
        a - b
    }
    fn neg<T: MatScalar, const R: usize, const C: usize>(a: &SMatrix<T, R, C>) -> SMatrix<T, R, C> {
        -a
    }
    fn scale<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        s: T,
    ) -> SMatrix<T, R, C> {
        a * s
    }
    fn component_mul<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        b: &SMatrix<T, R, C>,
    ) -> SMatrix<T, R, C> {
        a.component_mul(b)
    }
    fn product<T: MatScalar, const R: usize, const K: usize, const C: usize>(
        a: &SMatrix<T, R, K>,
        b: &SMatrix<T, K, C>,
    ) -> SMatrix<T, R, C> {
        a * b
    }
    fn index<T: MatScalar, const R: usize, const C: usize>(a: &SMatrix<T, R, C>, i: usize) -> T {
        a[i]
    }
    fn index2<T: MatScalar, const R: usize, const C: usize>(
        a: &SMatrix<T, R, C>,
        ij: (usize, usize),
    ) -> T {
        a[ij]
    }
    fn from_row_slice<T: MatScalar, const R: usize, const C: usize>(s: &[T]) -> SMatrix<T, R, C> {
        SMatrix::from_row_slice(s)
    }

    /// Every static rule on `T` matrices of shape `R x C` (products with `C x K` and `C x 1`),
    /// `test_rule!`'s options (tolerances) after the seed.
    macro_rules! rules_at {
        ($T:ty, $R:literal, $C:literal, $K:literal, $seed:expr $(, $opt:ident = $val:expr)*) => {{
            let s: u64 = $seed;
            let (a, b) = (smat::<$T, $R, $C>(s), smat::<$T, $R, $C>(s + 1));
            test_rule!(dot(&a, &b), frule = sdot_frule, rrule = sdot_rrule, seed = s $(, $opt = $val)*);
            test_rule!(dot(&a, &a), frule = sdot_frule, rrule = sdot_rrule, seed = s $(, $opt = $val)*);
            test_rule!(norm(&a), frule = snorm_frule, rrule = snorm_rrule, seed = s $(, $opt = $val)*);
            test_rule!(
                norm_squared(&a),
                frule = snorm_squared_frule,
                rrule = snorm_squared_rrule,
                seed = s
                $(, $opt = $val)*
            );
            test_rule!(sum(&a), frule = ssum_frule, rrule = ssum_rrule, seed = s $(, $opt = $val)*);
            test_rule!(
                transpose(&a),
                frule = stranspose_frule,
                rrule = stranspose_rrule,
                seed = s
                $(, $opt = $val)*
            );
            test_rule!(add(&a, &b), frule = sadd_frule, rrule = sadd_rrule, seed = s $(, $opt = $val)*);
            test_rule!(sub(&a, &b), frule = ssub_frule, rrule = ssub_rrule, seed = s $(, $opt = $val)*);
            test_rule!(neg(&a), frule = sneg_frule, rrule = sneg_rrule, seed = s $(, $opt = $val)*);
            test_rule!(
                scale(&a, 0.3),
                frule = sscale_frule,
                rrule = sscale_rrule,
                seed = s
                $(, $opt = $val)*
            );
            test_rule!(
                component_mul(&a, &b),
                frule = scomponent_mul_frule,
                rrule = scomponent_mul_rrule,
                seed = s
                $(, $opt = $val)*
            );
            let k = smat::<$T, $C, $K>(s + 2);
            test_rule!(product(&a, &k), frule = smul_frule, rrule = smul_rrule, seed = s $(, $opt = $val)*);
            let x = smat::<$T, $C, 1>(s + 3);
            test_rule!(product(&a, &x), frule = smul_frule, rrule = smul_rrule, seed = s $(, $opt = $val)*);
            for i in [0, $R * $C - 1] {
                test_rule!(
                    index(&a, i),
                    frule = sindex_frule,
                    rrule = sindex_rrule,
                    seed = s
                    $(, $opt = $val)*
                );
            }
            test_rule!(
                index2(&a, ($R - 1, 0)),
                frule = sindex2_frule,
                rrule = sindex2_rrule,
                seed = s
                $(, $opt = $val)*
            );
            let v: Vec<$T> = (0..$R * $C).map(|i| i as $T * 0.5 - 1.0).collect();
            test_rule!(
                from_row_slice::<$T, $R, $C>(&*v),
                frule = sfrom_row_slice_frule,
                rrule = sfrom_row_slice_rrule,
                seed = s
                $(, $opt = $val)*
            );
        }};
    }

    /// `zeros` has no argument, so nothing for `test_rule!` to differentiate: its rules give
    /// zeros and a pullback with nothing to return.
    #[test]
    fn static_zeros() {
        let d = szeros_frule::<f64, 2, 3>();
        assert_eq!((d.primal, d.tangent), (SMatrix::zeros(), SMatrix::zeros()));
        let (y, pb) = szeros_rrule::<f64, 2, 3>();
        assert_eq!(y.primal, Matrix2x3::zeros());
        pb(SMatrix::repeat(1.0));
        let d = szeros_frule::<f32, 3, 2>();
        assert_eq!((d.primal, d.tangent), (SMatrix::zeros(), SMatrix::zeros()));
        let (y, pb) = szeros_rrule::<f32, 3, 2>();
        assert_eq!(y.primal, SMatrix::<f32, 3, 2>::zeros());
        pb(SMatrix::repeat(1.0));
    }

    #[test]
    fn static_rules() {
        rules_at!(f64, 1, 1, 1, 1);
        rules_at!(f64, 3, 3, 2, 2);
        rules_at!(f64, 2, 5, 3, 3);
        rules_at!(f64, 5, 2, 1, 4);
        rules_at!(f64, 1, 4, 2, 5);
        rules_at!(f64, 4, 1, 3, 6);
    }

    /// The same rules on `f32` matrices, with the tolerances of the other `f32` tests.
    #[test]
    fn static_rules_f32() {
        macro_rules! rules32 {
            ($($R:literal, $C:literal, $K:literal, $seed:expr);*) => {$(
                rules_at!(f32, $R, $C, $K, $seed, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
            )*};
        }
        rules32!(1, 1, 1, 1; 3, 3, 2, 2; 2, 5, 3, 3; 5, 2, 1, 4; 1, 4, 2, 5; 4, 1, 3, 6);
    }

    /// Static values by value and behind `&`: operators between two values, scalings, products,
    /// methods.
    #[differentiable]
    fn static_model(m: &Matrix2x3<f64>, x: Vector3<f64>, b: &SVector<f64, 2>, s: f64) -> f64 {
        let y = m * x;
        let r = y - b;
        let z = r * s + y;
        let w = -z;
        let q = m.transpose() * w;
        q.dot(&x) + z.norm_squared() + w.component_mul(&r).sum() + m.norm() * x.sum()
    }

    #[test]
    fn static_derived_both_modes() {
        for s in 0..4 {
            let m = smat::<f64, 2, 3>(s);
            let x = smat::<f64, 3, 1>(s + 10);
            let b = smat::<f64, 2, 1>(s + 20);
            test_rule!(static_model(&m, x, &b, 0.7), seed = s);
        }
    }

    /// Elements of static values: read from an argument by value and one behind `&`, written
    /// into a copy (compound too) and into a `&mut` argument, `len()` and `clone()` (as a user
    /// may write it, though the type is `Copy`).
    #[allow(clippy::clone_on_copy)]
    #[differentiable]
    fn static_elements(m: &Matrix2x3<f64>, x: Vector3<f64>, out: &mut SVector<f64, 2>) -> f64 {
        let mut y = x.clone();
        for i in 0..y.len() {
            y[i] = y[i] * m[(0, i)] + m[(1, i)];
        }
        y[(2, 0)] *= x[0];
        out[1] = y[0] * y[2];
        out[0] += y[1];
        y.sum() + out[0] * out[1]
    }

    /// Static vectors built from numbers (`Vector3::new(..)`, `Vector2::new`, `SVector::new`),
    /// both modes, `f32` too.
    #[differentiable]
    fn built_vectors(x: f64, y: f64, z: f64) -> f64 {
        let a = Vector3::new(x, y * y, z);
        let b = Vector3::new(1.0, x, y + z);
        let c = a.component_mul(&b) * a.dot(&b);
        let p = nalgebra::Vector2::new(x * z, y);
        let q = SVector::<f64, 4>::new(x, y, z, x * y);
        c.norm_squared() + p.norm() + q.sum()
    }

    #[differentiable]
    fn built32(x: f32, y: f32) -> f32 {
        let v = nalgebra::Vector2::new(x, y * x);
        v.norm_squared()
    }

    #[test]
    fn built_static_vectors_both_modes() {
        for (k, (x, y, z)) in [(0.3, -1.2, 0.8), (1.5, 0.4, -0.9)].into_iter().enumerate() {
            let s = k as u64;
            test_rule!(built_vectors(x, y, z), seed = s);
            test_rule!(built32(x as f32, y as f32), seed = s, rtol = 2e-2, atol = 2e-2);
        }
    }

    #[test]
    fn static_elements_both_modes() {
        for s in 0..4 {
            let m = smat::<f64, 2, 3>(s);
            let x = smat::<f64, 3, 1>(s + 10);
            let mut out = smat::<f64, 2, 1>(s + 20);
            let before = out;
            test_rule!(static_elements(&m, x, &mut out), seed = s);
            let _ = value_and_gradient!(static_elements(&m, x, &mut out));
            assert_eq!(out, before, "the argument is restored");
        }
    }

    /// A derived function of `f32` static matrices: products, operators between values (a
    /// scaling by an `f32` or a literal on either side), methods, element reads and writes (of a copy and of a
    /// `&mut` argument), `len()` and `clone()`.
    #[allow(clippy::clone_on_copy)]
    #[differentiable]
    fn static_model32(
        m: &Matrix2x3<f32>,
        x: Vector3<f32>,
        b: &SVector<f32, 2>,
        out: &mut SVector<f32, 2>,
        s: f32,
    ) -> f32 {
        let y = m * x;
        let r = y - b;
        let z = r * s + y * 0.5;
        let w = -z;
        let t = s * w - 2.0 * r;
        let q = m.transpose() * t;
        let mut c = x.clone();
        for i in 0..c.len() {
            c[i] = c[i] * m[(0, i)] + q[i];
        }
        c[(2, 0)] *= s;
        out[1] = c[0] * r[1];
        out[0] += w[0];
        q.dot(&c) + z.norm_squared() + w.component_mul(&r).sum() + m.norm() * x.sum()
            - out[0] * out[1]
    }

    #[test]
    fn static_derived_f32_both_modes() {
        for s in 0..4 {
            let m = smat::<f32, 2, 3>(s);
            let x = smat::<f32, 3, 1>(s + 10);
            let b = smat::<f32, 2, 1>(s + 20);
            let mut out = smat::<f32, 2, 1>(s + 30);
            let before = out;
            test_rule!(
                static_model32(&m, x, &b, &mut out, 0.7),
                seed = s,
                rtol = 2e-2,
                atol = 2e-2,
                dot_tol = 1e-4
            );
            let _ = value_and_gradient!(static_model32(&m, x, &b, &mut out, 0.7));
            assert_eq!(out, before, "the argument is restored");
        }
    }
}

// -- sums of matrices the function holds ------------------------------------------------------

/// `c - d`, `-e + ..` and sums of temporaries, every operand a matrix the function holds by
/// value: rules, not inline sums of numbers (`Body::matrices`).
#[differentiable]
fn held_sums(a: &DMatrix<f64>, b: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let c = a * 2.0;
    let d = b * 3.0;
    let t = c.transpose();
    let e = c - d;
    let f = -e + (a * 0.5 - b * 0.25) + t;
    let u = a * x;
    let v = b * x;
    let w = -(u + v) - a * x;
    f.component_mul(&f).sum() + w.norm_squared()
}

#[test]
fn derived_sums_of_held_matrices() {
    for (k, n) in [1, 2, 4].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(held_sums(&mat(n, n, s), &mat(n, n, s + 1), &vector(n, s + 2)), seed = s);
    }
}

/// Borrows of locals as operands (`&c * &c`, `&d + ..`, `-&e`): the operators read them.
#[differentiable]
fn borrowed_operands(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    let c = a * 2.0;
    let d = &c * &c - b;
    let e = &d + &c * 0.5;
    (-&e).norm_squared() + c.sum()
}

#[test]
fn derived_borrowed_operands() {
    for (k, n) in [1, 2, 4].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(borrowed_operands(&mat(n, n, s), &mat(n, n, s + 1)), seed = s);
    }
}

/// Columns and rows (nalgebra's views, owned copies in derived code), of an argument behind `&`
/// and of a `&mut` argument.
#[differentiable]
fn columns_and_rows(m: &DMatrix<f64>, x: &DVector<f64>, w: &mut DMatrix<f64>) -> f64 {
    let mut s = 0.0;
    for j in 0..m.ncols() {
        let c = m.column(j);
        s += c.dot(x) * c.sum();
    }
    let r = m.row(0);
    let q = w.column(0);
    s + r.norm_squared() + q.dot(&q)
}

#[test]
fn columns_and_rows_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let w = mat(r, c, s + 2);
        test_rule!(columns_and_rows(&mat(r, c, s), &vector(r, s + 1), &mut w), seed = s);
    }
}

/// `gemm` and `gemv` in place, on matrices the function holds and on a `&mut` argument
/// (restored by the pullback), with gradients for `α` and `β`; a matrix's `clone()`.
#[differentiable]
fn in_place_products(
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    x: &DVector<f64>,
    y: &mut DVector<f64>,
    s: f64,
) -> f64 {
    let mut c = a * 0.5;
    let d = c.clone();
    c.gemm(s, a, b, 0.3);
    let mut v = x * 2.0;
    v.gemv(1.5, b, x, s);
    y.gemv(s, &c, &v, 0.7);
    v.norm_squared() + y.sum() * s + c.sum() + d.component_mul(&c).sum()
}

#[test]
fn gemv_and_gemm_both_modes() {
    for (k, &(r, n)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (a, b, x) = (mat(r, n, s), mat(n, n, s + 1), vector(n, s + 2));
        let mut y = vector(r, s + 3);
        let before = y.clone();
        test_rule!(in_place_products(&a, &b, &x, &mut y, 0.8), seed = s);
        let _ = value_and_gradient!(in_place_products(&a, &b, &x, &mut y, 0.8));
        assert_eq!(y, before, "the argument is restored");
    }
}

/// `for` loops and iterator chains over the elements of matrices: `x.iter()`, `&m`, `zip`,
/// `enumerate`, `x.iter().sum()`, `m.iter().map(..).sum()`, the element
/// as a reference (`*v`, `v * v`) or by pattern (`&v`).
#[differentiable]
fn iterated(x: &DVector<f64>, m: &DMatrix<f64>) -> f64 {
    let mut s = 0.0;
    for xi in x.iter() {
        s += xi * xi + (*xi).sin();
    }
    for (k, &v) in m.iter().enumerate() {
        s += v * (k as f64);
    }
    let y = x * 2.0;
    for (a, b) in x.iter().zip(y.iter()) {
        s += a * b;
    }
    for v in m {
        s += v.exp();
    }
    let t: f64 = x.iter().sum();
    s + t * t + m.iter().map(|v| v * v).sum::<f64>()
}

#[test]
fn iterated_elements_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(iterated(&vector(r, s), &mat(r, c, s + 1)), seed = s);
    }
}

/// A model whose parameters are matrices in a `#[derive(Tangent)]` struct: operators on borrowed
/// fields (`&net.w * x`), methods and element reads of fields; the gradient a struct of matrices.
#[derive(Clone, Debug, Tangent)]
pub struct Layer {
    /// The weights.
    pub w: DMatrix<f64>,
    /// The bias.
    pub b: DVector<f64>,
}

#[differentiable]
fn layer_loss(net: &Layer, x: &DVector<f64>) -> f64 {
    let h = &net.w * x + &net.b;
    let mut s = h.dot(&net.b) + net.w[(0, 0)];
    for i in 0..h.len() {
        s += h[i].tanh();
    }
    s
}

#[test]
fn matrices_in_structs_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let net = Layer { w: mat(r, c, s), b: vector(r, s + 1) };
        let x = vector(c, s + 2);
        test_rule!(layer_loss(&net, &x), seed = s);
        let (_, (g, _)) = value_and_gradient!(layer_loss(&net, &x));
        assert_eq!(g.w.shape(), (r, c));
    }
}

/// `DMatrix::identity` by path (`K + σ² I`), `trace()` (of a square matrix) and `mean()`, both
/// modes, `f32` trace too.
#[differentiable]
fn regularised(k: &DMatrix<f64>, s2: f64) -> f64 {
    let n = k.nrows();
    let a = k * k.transpose() + DMatrix::identity(n, n) * s2;
    let r = DMatrix::identity(n, k.ncols()).component_mul(k);
    a.trace() * s2 + a.cholesky_logdet() + r.sum() + k.mean() * a.mean()
}

#[differentiable]
fn trace32(m: &DMatrix<f32>) -> f32 {
    (m * m).trace()
}

#[test]
fn identity_and_trace_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(regularised(&mat(r, c, s), 0.7), seed = s);
        let n = r.max(c);
        let m = mat(n, n, s + 1).map(|v| v as f32);
        test_rule!(trace32(&m), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

/// `DMatrix::from_fn` / `DVector::from_fn` with closures that read the function's variables (a
/// kernel matrix), written as loops over the elements.
#[differentiable]
fn kernel_from_fn(x: &DVector<f64>, ell: f64) -> f64 {
    let n = x.len();
    let k = DMatrix::from_fn(n, n + 1, |i, j| (-(x[i] - x[j % n]).powi(2) / ell).exp());
    let v = DVector::from_fn(n, |i, _| x[i] * ell);
    k.sum() + v.norm_squared()
}

#[test]
fn from_fn_both_modes() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(kernel_from_fn(&vector(n, s), 0.7), seed = s);
    }
}

/// Row vectors on the left: `x.transpose() * a * y` (a `1 x 1` matrix read by its element),
/// `x.transpose() * a` (a row vector), `f32` too.
#[differentiable]
fn quadratic_forms(a: &DMatrix<f64>, x: &DVector<f64>, y: &DVector<f64>) -> f64 {
    let q = x.transpose() * a * y;
    let r = x.transpose() * a;
    q[(0, 0)] + r.sum() * (r * y)[0]
}

#[differentiable]
fn quadratic_form32(a: &DMatrix<f32>, x: &DVector<f32>) -> f32 {
    (x.transpose() * a * x)[0]
}

#[test]
fn row_vector_products_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (a, x, y) = (mat(r, c, s), vector(r, s + 1), vector(c, s + 2));
        test_rule!(quadratic_forms(&a, &x, &y), seed = s);
        let n = r.max(c);
        let a32 = mat(n, n, s + 3).map(|v| v as f32);
        let x32 = vector(n, s + 4).map(|v| v as f32);
        test_rule!(
            quadratic_form32(&a32, &x32),
            seed = s,
            rtol = 2e-2,
            atol = 2e-2,
            dot_tol = 1e-4
        );
    }
}

/// A matrix divided by a number (`x / x.norm()`, `m / s`) and shifted by one (`add_scalar`),
/// both modes, `f32` too.
#[differentiable]
fn divided(m: &DMatrix<f64>, x: &DVector<f64>, s: f64) -> f64 {
    let u = x / x.norm();
    let w = (m * 2.0) / s;
    let z = w.add_scalar(s * s);
    u.dot(x) + w.norm_squared() + (m / (s * s)).sum() + z.component_mul(&z).sum()
}

#[differentiable]
fn divided32(x: &DVector<f32>, s: f32) -> f32 {
    (x / s).norm_squared()
}

#[test]
fn division_by_a_number_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(divided(&mat(r, c, s), &vector(c, s + 1), 1.3), seed = s);
        let x32 = vector(r * c, s + 2).map(|v| v as f32);
        test_rule!(divided32(&x32, 1.3), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

/// `DMatrix::from_element` / `DVector::from_element` by path, the element differentiated.
#[differentiable]
fn from_elements(x: &DVector<f64>, v: f64) -> f64 {
    let n = x.len();
    let e = DMatrix::from_element(n, 2, v);
    let f = DVector::from_element(n, v * v);
    e.sum() * v + f.dot(x)
}

#[test]
fn from_element_both_modes() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(from_elements(&vector(n, s), 0.7), seed = s);
    }
}

/// `m.determinant()` and `m.try_inverse().unwrap()` of square matrices, both modes, `f32` too.
#[differentiable]
fn inverse_and_determinant(m: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let a = m * m.transpose() + DMatrix::identity(m.nrows(), m.nrows());
    let inv = a.clone().try_inverse().unwrap();
    (inv * x).dot(x) + a.determinant().ln() + m.determinant()
}

#[differentiable]
fn determinant32(m: &DMatrix<f32>) -> f32 {
    m.determinant() + m.clone().try_inverse().expect("invertible").sum()
}

#[test]
fn inverse_and_determinant_both_modes() {
    for (k, n) in [1, 2, 3, 4].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(inverse_and_determinant(&mat(n, n, s), &vector(n, s + 1)), seed = s);
        let m = (mat(n, n, s + 2) + DMatrix::identity(n, n) * 3.0).map(|v| v as f32);
        test_rule!(determinant32(&m), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-3);
    }
}

/// Derived functions whose results are matrices, checked by `test_rule!` like any rule.
#[differentiable]
fn matrix_result(a: &DMatrix<f64>, s: f64) -> DMatrix<f64> {
    let b = a * s;
    b.transpose() * 2.0 + b.transpose().map(|v| v * v)
}

#[differentiable]
fn vector_result(a: &DMatrix<f64>, x: &DVector<f64>) -> DVector<f64> {
    let y = a * x;
    y.component_mul(&y) - x * 0.5
}

#[test]
fn derived_matrix_results() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(matrix_result(&mat(r, c, s), 0.7), seed = s);
        let n = r.min(c);
        test_rule!(vector_result(&mat(n, n, s), &vector(n, s + 1)), seed = s);
    }
}

// -- f32 ----------------------------------------------------------------------------------------

/// Rules of `f32` heap matrices (the same rules, generic in the element type).
#[test]
fn f32_rules() {
    fn mat_vec32(m: &DMatrix<f32>, x: &DVector<f32>) -> DVector<f32> {
        m * x
    }
    fn mat_mat32(a: &DMatrix<f32>, b: &DMatrix<f32>) -> DMatrix<f32> {
        a * b
    }
    fn dot32(a: &DMatrix<f32>, b: &DMatrix<f32>) -> f32 {
        a.dot(b)
    }
    fn norm32(a: &DMatrix<f32>) -> f32 {
        a.norm()
    }
    fn scale32(a: &DMatrix<f32>, s: f32) -> DMatrix<f32> {
        a * s
    }
    fn component_mul32(a: &DMatrix<f32>, b: &DMatrix<f32>) -> DMatrix<f32> {
        a.component_mul(b)
    }
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s).map(|v| v as f32);
        let b = mat(r, c, s + 1).map(|v| v as f32);
        let sq = mat(c, r, s + 2).map(|v| v as f32);
        let x = vector(c, s + 3).map(|v| v as f32);
        macro_rules! check32 {
            ($f:ident, $r:ident; $($call:tt)+) => {
                test_rule!($($call)+, frule = $f, rrule = $r, seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4)
            };
        }
        check32!(mat_vec_frule, mat_vec_rrule; mat_vec32(&m, &x));
        check32!(mat_mat_frule, mat_mat_rrule; mat_mat32(&m, &sq));
        check32!(dot_frule, dot_rrule; dot32(&m, &b));
        check32!(norm_frule, norm_rrule; norm32(&m));
        check32!(scale_frule, scale_rrule; scale32(&m, 0.7));
        check32!(component_mul_frule, component_mul_rrule; component_mul32(&m, &b));
    }
}

/// A derived function of `f32` matrices: products, scalings by an `f32`, methods, a map (whose
/// closure names its element type: the lowering's default is `f64`), element reads and writes, a
/// column, `gemv`.
#[differentiable]
fn model32(m: &DMatrix<f32>, x: &DVector<f32>, s: f32) -> f32 {
    let y = m * x * s;
    let mut z = y.map(|v: f32| v.tanh());
    z[0] = z[0] * s + m[(0, 0)];
    let c = m.column(0);
    let mut w = c.clone_owned();
    w.gemv(0.5, m, x, s);
    z.norm_squared() + x.dot(x) * s + c.dot(&w) - (m.transpose() * &z).sum()
}

#[test]
fn derived_f32_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s).map(|v| v as f32);
        let x = vector(c, s + 1).map(|v| v as f32);
        test_rule!(model32(&m, &x, 0.8), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

// -- element reads and writes in derived code ---------------------------------------------------

/// Element writes and reads of a matrix and a vector built in the body, through a literal index
/// and one held in a variable (`mooncake_runtime::elements`).
#[differentiable]
fn element_writes(m: &DMatrix<f64>, v: &DVector<f64>, x: f64) -> f64 {
    let mut c = m * x;
    let mut w = v * 2.0;
    let ij = (0, 1);
    c[ij] = x * x;
    c[(1, 0)] = c[(0, 0)] * v[1];
    w[0] = c[(1, 1)] + x;
    c.sum() * w.dot(v)
}

#[test]
fn element_writes_both_modes() {
    for s in 0..3 {
        let m = mat(2, 3, s);
        let v = vector(2, s + 1);
        test_rule!(element_writes(&m, &v, 0.6), seed = s);
    }
}

/// `tr(M²)` by a double loop over elements of an argument behind `&`.
#[differentiable]
fn trace_of_square(m: &DMatrix<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..m.nrows() {
        for k in 0..m.ncols() {
            s += m[(i, k)] * m[(k, i)];
        }
    }
    s
}

/// A kernel matrix built element by element (written, then compound-assigned on the diagonal),
/// then factorised: the Gaussian-process shape.
#[differentiable]
fn kernel_quad(x: &DVector<f64>, ell: f64) -> f64 {
    let n = x.len();
    let mut k = DMatrix::zeros(n, n);
    for i in 0..n {
        for j in 0..n {
            let d = (x[i] - x[j]) / ell;
            k[(i, j)] = (-0.5 * d * d).exp();
        }
        k[(i, i)] += 0.5;
    }
    k.cholesky_solve(x).dot(x)
}

/// Writes into a `&mut` argument (scaling its first column, then an element overwritten), read
/// back afterwards; the rule must leave the argument as it was on entry.
#[differentiable]
fn scale_first_column(m: &mut DMatrix<f64>, a: f64) -> f64 {
    for i in 0..m.nrows() {
        m[(i, 0)] *= a;
    }
    let last = m.len() - 1;
    m[last] = a * m[0];
    m.sum() + m[(0, 0)] * m[last]
}

/// A vector written in a loop from another's elements, each element read after being
/// overwritten (the gradient of the value before a write must not reach the result).
#[differentiable]
fn prefix_products(v: &DVector<f64>) -> f64 {
    let mut w = v.clone();
    for i in 1..w.len() {
        w[i] = w[i - 1] * v[i];
    }
    w.sum()
}

#[test]
fn element_reads_and_writes_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let sq = mat(r.max(c), r.max(c), s);
        test_rule!(trace_of_square(&sq), seed = s);
        let (y, (g,)) = value_and_gradient!(trace_of_square(&sq));
        assert!((y - (&sq * &sq).trace()).abs() < 1e-12);
        assert!((g - 2.0 * sq.transpose()).abs().max() < 1e-12);
        let mut m = mat(r, c, s + 1);
        let before = m.clone();
        test_rule!(scale_first_column(&mut m, 1.3), seed = s);
        let (_, (gm, ga)) = value_and_gradient!(scale_first_column(&mut m, 1.3));
        assert_eq!(m, before, "the argument is restored");
        assert_eq!(gm.shape(), (r, c));
        assert!(ga.is_finite());
        test_rule!(prefix_products(&vector(r * c, s + 2)), seed = s);
    }
    for n in [1, 2, 5] {
        let x = DVector::from_fn(n, |i, _| 0.3 * i as f64 - 0.4);
        test_rule!(kernel_quad(&x, 0.9));
    }
}

/// Shape queries (`nrows`, `ncols`) in both modes: no derivative, used as numbers. (`len` is
/// not reachable in reverse mode: the reverse generator reads `x.len()` as a buffer's length.)
#[differentiable]
fn shapes(m: &DMatrix<f64>, v: &DVector<f64>) -> f64 {
    let c = m * 2.0;
    let k = (c.nrows() + 10 * m.ncols()) as f64;
    let n = v.nrows() as f64;
    c.sum() * k + v.norm_squared() / n
}

#[test]
fn shape_queries_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(shapes(&mat(r, c, s), &vector(c, s + 1)), seed = s);
    }
}

/// nalgebra's associated constructors called by their paths in a derived body
/// (`DMatrix::from_row_slice`, `DMatrix::zeros`, `DVector::from_vec`, `DVector::zeros`), which
/// reach their rules through the prelude's `DMatrixConstructors` / `DVectorConstructors`.
#[differentiable]
fn by_constructor_paths(s: &[f64], x: &[f64]) -> f64 {
    let m = DMatrix::from_row_slice(2, 3, s);
    let v = DVector::from_vec(x.to_vec());
    let z = DMatrix::<f64>::zeros(2, 3);
    let w = DVector::<f64>::zeros(3);
    let y = m * v;
    y.norm_squared() + z.sum() + w.sum()
}

#[test]
fn associated_constructors_by_path() {
    let s = vec![0.5, -1.0, 2.0, 0.25, 1.5, -0.75];
    let x = vec![0.3, -0.2, 0.9];
    test_rule!(by_constructor_paths(&*s, &*x));
}

// -- `map` with closures and paths ---------------------------------------------------------------

/// `map` of matrices and vectors: closures of one element (`relu`, the logistic function, one
/// with its types written) and a function's path, on a product, an argument and a temporary.
#[differentiable]
fn mapped(w: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let h = w * x;
    let a = h.map(|v| v.max(0.0));
    let s = a.map(|v: f64| -> f64 { 1.0 / (1.0 + (-v).exp()) });
    let t = w.map(f64::tanh);
    let u = (w * 2.0).map(|v| v * v + 1.0);
    s.sum() + t.norm_squared() + u.sum() + h.map(f64::sin).dot(&h)
}

/// A `map` whose receiver is data passed `Const(..)`: its derivatives are not taken.
#[differentiable]
fn mapped_data(w: &DVector<f64>, x: &DVector<f64>) -> f64 {
    let e = x.map(f64::exp);
    w.map(|v| v * v).dot(&e)
}

#[test]
fn map_with_closures_and_paths_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (w, x) = (mat(r, c, s + 40), vector(c, s + 41));
        test_rule!(mapped(&w, &x), seed = s);
        let (a, b) = (vector(r, s + 42), vector(r, s + 43));
        test_rule!(mapped_data(&a, &b), seed = s);
        let (v, (ga, gb)) = value_and_gradient!(mapped_data(&a, &b));
        let (vc, (ca, cb)) = value_and_gradient!(mapped_data(&a, Const(&b)));
        assert_eq!((v, &ga), (vc, &ca));
        assert_eq!(cb, NoTangent);
        // d/db of Σ a² eᵇ.
        let want = a.component_mul(&a).component_mul(&b.map(f64::exp));
        assert!((gb - want).amax() < 1e-12);
    }
}

// -- cross products ------------------------------------------------------------------------------

/// Torque and work of a force at a lever arm: `r.cross(f)` of `Vector3`s (and of a row vector),
/// in both modes. It had no rule until probe programs found it.
#[differentiable]
fn torque_energy(r: &nalgebra::Vector3<f64>, f: &nalgebra::Vector3<f64>) -> f64 {
    let tau = r.cross(f);
    let back = f.cross(&tau);
    tau.norm() + back.dot(r) + r.transpose().cross(&f.transpose()).sum()
}

#[test]
fn cross_products_both_modes() {
    let r = nalgebra::Vector3::new(0.5, 0.2, -0.1);
    let f = nalgebra::Vector3::new(1.0, -2.0, 0.3);
    test_rule!(torque_energy(&r, &f));
    let (v, _) = value_and_gradient!(torque_energy(&r, &f));
    let tau = r.cross(&f);
    assert!((v - (tau.norm() + f.cross(&tau).dot(&r) + tau.sum())).abs() < 1e-12);
}

/// `Matrix2::new(..)` / `Matrix3::new(..)` of entries computed in the body (row by row), in
/// both modes: a rotation about the z axis applied to a vector. They had no rules until probe
/// programs found them. (The local's type is written: the text does not show that a call's
/// result is a matrix.)
#[differentiable]
fn rotated_z(t: f64, v: &nalgebra::Vector3<f64>) -> f64 {
    let (s, c) = (t.sin(), t.cos());
    let r: nalgebra::Matrix3<f64> = nalgebra::Matrix3::new(c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0);
    let m: nalgebra::Matrix2<f64> = nalgebra::Matrix2::new(t, 2.0 * t, 0.5, t * t);
    let e = nalgebra::Vector3::new(1.0, 0.0, 0.0);
    (r * v).dot(&e) + m.sum() * v.sum()
}

#[test]
fn matrices_built_from_entries_both_modes() {
    let v = nalgebra::Vector3::new(0.5, -1.0, 2.0);
    test_rule!(rotated_z(0.3, &v));
    let t: f64 = 0.3;
    let (y, (gt, _)) = value_and_gradient!(rotated_z(t, &v));
    // (R v)₀ = c v₀ - s v₁, and Σ m = 3t + 0.5 + t², times Σ v = 1.5.
    assert!((y - (t.cos() * 0.5 + t.sin() + 1.5 * (3.0 * t + 0.5 + t * t))).abs() < 1e-12);
    assert!((gt - (-t.sin() * 0.5 + t.cos() + 1.5 * (3.0 + 2.0 * t))).abs() < 1e-12);
}
