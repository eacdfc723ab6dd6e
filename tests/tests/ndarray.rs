//! ndarray's arrays in differentiable code (feature `ndarray`, issue 15): every rule of
//! `mooncake_runtime::nd::rules` checked by `test_rule!` (finite differences, forward against
//! reverse) on random inputs of several shapes, non-square and `1 x n` / `n x 1` included, and
//! derived functions that combine them in both modes.

// Rule signatures spell out the rule interface.
#![allow(clippy::type_complexity)]

use mooncake_runtime::TestRng;
use mooncake_runtime::nd::rules::*;
use mooncake_runtime::prelude::*;
use ndarray::linalg::Dot;
use ndarray::{Array, Array1, Array2, ArrayView1, ArrayView2, Axis, Dimension, ShapeError};

/// Shapes `(rows, columns)` the tests run on.
const SHAPES: &[(usize, usize)] = &[(1, 1), (3, 3), (2, 5), (5, 2), (1, 4), (4, 1)];

fn mat(r: usize, c: usize, seed: u64) -> Array2<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    Array2::from_shape_simple_fn((r, c), || rng.normal())
}

fn vector(n: usize, seed: u64) -> Array1<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    Array1::from_shape_simple_fn(n, || rng.normal())
}

/// A matrix with entries in `[0.5, 2.5)`, inside the domain of `ln`, `sqrt`, `recip`.
fn positive(r: usize, c: usize, seed: u64) -> Array2<f64> {
    let mut rng = TestRng::seed_from_u64(seed);
    Array2::from_shape_simple_fn((r, c), || 0.5 + 2.0 * rng.uniform())
}

// -- the primals --------------------------------------------------------------------------------

fn sum<D: Dimension>(a: &Array<f64, D>) -> f64 {
    a.sum()
}
fn dot<A: Dot<B>, B>(a: &A, b: &B) -> A::Output {
    a.dot(b)
}
fn transpose<D: Dimension>(a: &Array<f64, D>) -> Array<f64, D> {
    a.t().to_owned()
}
fn to_owned<D: Dimension>(a: &Array<f64, D>) -> Array<f64, D> {
    a.to_owned()
}
fn add<D: Dimension>(a: &Array<f64, D>, b: &Array<f64, D>) -> Array<f64, D> {
    a + b
}
fn sub<D: Dimension>(a: &Array<f64, D>, b: &Array<f64, D>) -> Array<f64, D> {
    a - b
}
fn mul<D: Dimension>(a: &Array<f64, D>, b: &Array<f64, D>) -> Array<f64, D> {
    a * b
}
fn neg<D: Dimension>(a: &Array<f64, D>) -> Array<f64, D> {
    -a
}
fn scale<D: Dimension>(a: &Array<f64, D>, s: f64) -> Array<f64, D> {
    a * s
}
fn div_scalar<D: Dimension>(a: &Array<f64, D>, s: f64) -> Array<f64, D> {
    a / s
}
fn index<D: Dimension, I: ndarray::NdIndex<D>>(a: &Array<f64, D>, i: I) -> f64 {
    a[i]
}
fn row(a: &Array2<f64>, i: usize) -> Array1<f64> {
    a.row(i).to_owned()
}
fn column(a: &Array2<f64>, j: usize) -> Array1<f64> {
    a.column(j).to_owned()
}
fn from_vec(v: Vec<f64>) -> Array1<f64> {
    Array1::from_vec(v)
}
fn from_shape_vec(shape: (usize, usize), v: Vec<f64>) -> Result<Array2<f64>, ShapeError> {
    Array2::from_shape_vec(shape, v)
}
fn from_shape_vec_1(n: usize, v: Vec<f64>) -> Result<Array1<f64>, ShapeError> {
    Array1::from_shape_vec(n, v)
}
fn zeros2(shape: (usize, usize)) -> Array2<f64> {
    Array2::zeros(shape)
}
fn zeros1(n: usize) -> Array1<f64> {
    Array1::zeros(n)
}

macro_rules! element_wise_primals {
    ($($name:ident),*) => {$(
        fn $name<D: Dimension>(a: &Array<f64, D>) -> Array<f64, D> {
            a.$name()
        }
    )*};
}
element_wise_primals!(exp, ln, sqrt, sin, cos, tanh, abs, recip, pow2);
fn powi<D: Dimension>(a: &Array<f64, D>, n: i32) -> Array<f64, D> {
    a.powi(n)
}

// -- the rule tests -------------------------------------------------------------------------------

#[test]
fn sums() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(sum(&mat(r, c, s)), frule = sum_frule, rrule = sum_rrule, seed = s);
        test_rule!(sum(&vector(r, s)), frule = sum_frule, rrule = sum_rrule, seed = s);
    }
}

#[test]
fn dots() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s);
        let (x, y) = (vector(c, s + 1), vector(c, s + 2));
        let z = vector(r, s + 3);
        // Vector-vector, and the same vector twice (one slot, one shadow).
        test_rule!(dot(&x, &y), frule = dot_frule, rrule = dot_rrule, seed = s);
        test_rule!(dot(&x, &x), frule = dot_frule, rrule = dot_rrule, seed = s);
        // Matrix-vector and vector-matrix.
        test_rule!(dot(&m, &x), frule = dot_frule, rrule = dot_rrule, seed = s);
        test_rule!(dot(&z, &m), frule = dot_frule, rrule = dot_rrule, seed = s);
        // Matrix-matrix.
        for n in [1, 3] {
            let b = mat(c, n, s + 4);
            test_rule!(dot(&m, &b), frule = dot_frule, rrule = dot_rrule, seed = s);
        }
    }
    // A square matrix times itself: one shadow for both operands.
    let a = mat(3, 3, 7);
    test_rule!(dot(&a, &a), frule = dot_frule, rrule = dot_rrule);
}

#[test]
fn transposes_and_copies() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let a = mat(r, c, s);
        test_rule!(transpose(&a), frule = t_frule, rrule = t_rrule, seed = s);
        test_rule!(transpose(&vector(c, s)), frule = t_frule, rrule = t_rrule, seed = s);
        test_rule!(to_owned(&a), frule = to_owned_frule, rrule = to_owned_rrule, seed = s);
        // A transposed (column-major) array as an input: the rules follow its layout.
        let at = a.t().to_owned();
        test_rule!(transpose(&at), frule = t_frule, rrule = t_rrule, seed = s);
        test_rule!(sum(&at), frule = sum_frule, rrule = sum_rrule, seed = s);
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
        test_rule!(add(&x, &y), frule = add_frule, rrule = add_rrule, seed = s);
        test_rule!(sub(&a, &b), frule = sub_frule, rrule = sub_rrule, seed = s);
        test_rule!(sub(&x, &y), frule = sub_frule, rrule = sub_rrule, seed = s);
        test_rule!(mul(&a, &b), frule = mul_frule, rrule = mul_rrule, seed = s);
        test_rule!(mul(&a, &a), frule = mul_frule, rrule = mul_rrule, seed = s);
        test_rule!(mul(&x, &y), frule = mul_frule, rrule = mul_rrule, seed = s);
        test_rule!(neg(&a), frule = neg_frule, rrule = neg_rrule, seed = s);
        test_rule!(scale(&a, -1.5), frule = scale_frule, rrule = scale_rrule, seed = s);
        test_rule!(scale(&x, 0.7), frule = scale_frule, rrule = scale_rrule, seed = s);
        test_rule!(
            div_scalar(&a, -1.3),
            frule = div_scalar_frule,
            rrule = div_scalar_rrule,
            seed = s
        );
        test_rule!(
            div_scalar(&x, 0.8),
            frule = div_scalar_frule,
            rrule = div_scalar_rrule,
            seed = s
        );
        // A column-major operand beside a row-major one.
        let bt = mat(c, r, s + 400).t().to_owned();
        test_rule!(mul(&a, &bt), frule = mul_frule, rrule = mul_rrule, seed = s);
    }
}

#[test]
fn element_wise_float_methods() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let a = mat(r, c, s);
        let p = positive(r, c, s + 1);
        let x = vector(r, s + 2);
        test_rule!(exp(&a), frule = exp_frule, rrule = exp_rrule, seed = s);
        test_rule!(exp(&x), frule = exp_frule, rrule = exp_rrule, seed = s);
        test_rule!(ln(&p), frule = ln_frule, rrule = ln_rrule, seed = s);
        test_rule!(sqrt(&p), frule = sqrt_frule, rrule = sqrt_rrule, seed = s);
        test_rule!(sin(&a), frule = sin_frule, rrule = sin_rrule, seed = s);
        test_rule!(cos(&a), frule = cos_frule, rrule = cos_rrule, seed = s);
        test_rule!(tanh(&a), frule = tanh_frule, rrule = tanh_rrule, seed = s);
        test_rule!(abs(&p), frule = abs_frule, rrule = abs_rrule, seed = s);
        test_rule!(abs(&(-&p)), frule = abs_frule, rrule = abs_rrule, seed = s);
        test_rule!(recip(&p), frule = recip_frule, rrule = recip_rrule, seed = s);
        test_rule!(pow2(&a), frule = pow2_frule, rrule = pow2_rrule, seed = s);
        for n in [0, 1, 3, -2] {
            test_rule!(powi(&p, n), frule = powi_frule, rrule = powi_rrule, seed = s);
        }
    }
}

#[test]
fn indexed_reads_rows_and_columns() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s);
        let x = vector(r, s + 1);
        for i in [0, r - 1] {
            test_rule!(index(&x, i), frule = index_frule, rrule = index_rrule, seed = s);
            test_rule!(row(&m, i), frule = row_frule, rrule = row_rrule, seed = s);
            for j in [0, c - 1] {
                test_rule!(index(&m, [i, j]), frule = index_frule, rrule = index_rrule, seed = s);
                test_rule!(index(&m, (i, j)), frule = index_frule, rrule = index_rrule, seed = s);
                test_rule!(column(&m, j), frule = column_frule, rrule = column_rrule, seed = s);
            }
        }
    }
}

#[test]
fn construction() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let v: Vec<f64> = vector(r * c, s).to_vec();
        test_rule!(from_vec(v), frule = from_vec_frule, rrule = from_vec_rrule, seed = s);
        test_rule!(
            from_shape_vec((r, c), v),
            frule = from_shape_vec_frule,
            rrule = from_shape_vec_rrule,
            seed = s
        );
        test_rule!(
            from_shape_vec_1(r * c, v),
            frule = from_shape_vec_frule,
            rrule = from_shape_vec_rrule,
            seed = s
        );
        let shape = (r, c);
        test_rule!(zeros2(shape), frule = zeros_frule, rrule = zeros_rrule);
        test_rule!(zeros1(r), frule = zeros_frule, rrule = zeros_rrule);
    }
    // A length that does not fit the shape: `Err` in both modes, no derivative.
    let v = vec![1.0, 2.0, 3.0];
    test_rule!(
        from_shape_vec((2, 2), v),
        frule = from_shape_vec_frule,
        rrule = from_shape_vec_rrule
    );
}

/// The rules are generic over the element type: `f32` arrays, checked with the tolerances of
/// `f32` finite differences.
#[test]
fn f32_arrays() {
    fn dot32<A: Dot<B>, B>(a: &A, b: &B) -> A::Output {
        a.dot(b)
    }
    fn tanh32(a: &Array2<f32>) -> Array2<f32> {
        a.tanh()
    }
    fn mul32(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
        a * b
    }
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s).mapv(|v| v as f32);
        let b = mat(r, c, s + 1).mapv(|v| v as f32);
        let x = vector(c, s + 2).mapv(|v| v as f32);
        test_rule!(
            dot32(&m, &x),
            frule = dot_frule,
            rrule = dot_rrule,
            seed = s,
            rtol = 2e-2,
            atol = 2e-2,
            dot_tol = 1e-4
        );
        test_rule!(
            tanh32(&m),
            frule = tanh_frule,
            rrule = tanh_rrule,
            seed = s,
            rtol = 2e-2,
            atol = 2e-2,
            dot_tol = 1e-4
        );
        test_rule!(
            mul32(&m, &b),
            frule = mul_frule,
            rrule = mul_rrule,
            seed = s,
            rtol = 2e-2,
            atol = 2e-2,
            dot_tol = 1e-4
        );
    }
}

/// A reverse rule of `m.dot(&x)` whose `x̄` is twice too large: the checker must reject it.
fn mat_vec_wrong_rrule(
    m: CoDual<&Array2<f64>, SharedRef<Array2<f64>>>,
    x: CoDual<&Array1<f64>, SharedRef<Array1<f64>>>,
) -> (CoDual<Array1<f64>, SharedRef<Array1<f64>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>)
{
    let dx = x.fdata.clone();
    let before = dx.with(Clone::clone);
    let (y, pb) = dot_rrule(m, x);
    let pullback = move |r: NoRData| {
        let out = pb(r);
        // The increment `mᵀ ȳ` added a second time.
        dx.with_mut(|d| {
            let inc = &*d - &before;
            *d += &inc;
        });
        out
    };
    (y, pullback)
}

#[test]
fn a_wrong_rule_is_rejected() {
    let m = mat(3, 2, 1);
    let x = vector(2, 2);
    let e = check_rule!(dot(&m, &x), rrule = mat_vec_wrong_rrule, mode = reverse);
    assert!(e.is_err(), "a wrong pullback passed the checker");
}

#[test]
#[should_panic(expected = "they do not broadcast")]
fn shapes_that_differ_panic_with_a_message() {
    let _ =
        add_frule(Dual::new(&mat(2, 3, 1), &mat(2, 3, 2)), Dual::new(&mat(3, 2, 3), &mat(3, 2, 4)));
}

// -- derived rules ------------------------------------------------------------------------------

/// The quadratic form `xᵀ M x`.
#[differentiable]
fn quad_form(m: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let y = m.dot(x);
    x.dot(&y)
}

/// The least-squares loss `|A x - b|²`.
#[differentiable]
fn least_squares(a: &Array2<f64>, x: &Array1<f64>, b: &Array1<f64>) -> f64 {
    let r = a.dot(x) - b;
    r.dot(&r)
}

/// Operators on owned temporaries and on references mixed, scaling on both sides, unary minus,
/// products in all four forms, the transpose as an owned array. Not yet in reverse mode (as for
/// nalgebra's matrices): a borrow of a local as an operand (`&c * 2.0`:
/// `BorrowsInLocalsOrStdCalls`), and `+`, `-` between two arrays both held by value (`c - d`)
/// and unary `-` of one (`-c`), which the reverse sweep takes for numbers' sums.
#[differentiable]
fn operators(a: &Array2<f64>, b: &Array2<f64>, x: &Array1<f64>, s: f64) -> f64 {
    let c = a.dot(b);
    let t = c.sum() * s;
    let d = c * 2.0 - a;
    let y = d.t().dot(x) * s;
    let w = s * y;
    let v = x.dot(a);
    let e = -a * 0.5 + a;
    let es = e.sum();
    let f = (a / s).sum() + (e / s).sum();
    w.dot(&w) + t + v.sum() * es + f
}

/// Methods only, and the element-wise product of two arguments.
#[differentiable]
fn methods(a: &Array1<f64>, b: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let c = a * b;
    let r = m.row(0);
    let k = m.column(0);
    c.dot(a) + a.sum() * b.sum() + m.t().sum() + r.sum() * k.sum() + m.pow2().sum()
}

/// The element-wise float methods in derived code. In reverse mode their names are the float
/// methods', which the reverse generator sends through `rev::MethodRrule` with the receiver
/// moved: a receiver used again is written `a.to_owned().exp()`; a temporary or a last use
/// needs nothing (see `nd::dispatch`).
#[differentiable]
fn float_methods(a: &Array2<f64>, p: &Array2<f64>, s: f64) -> f64 {
    let e = a.to_owned().exp();
    let t = (a * s).tanh();
    let q = p.to_owned().sqrt() * p.to_owned().ln();
    let u = p.to_owned().powi(3).sum() + p.to_owned().recip().sum();
    let z = a.to_owned().sin() * a.to_owned().cos();
    let v = a.abs();
    e.sum() + t.sum() + q.sum() + u + z.sum() + v.sum() + p.sum()
}

#[test]
fn derived_both_modes() {
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
        let (u, v) = (vector(c, s + 7), vector(c, s + 8));
        test_rule!(methods(&u, &v, &m), seed = s);
        test_rule!(methods(&u, &u, &m), seed = s);
        test_rule!(float_methods(&m, &positive(r, c, s + 9), 0.6), seed = s);
    }
}

/// `c - d`, `-e + ..` and sums of temporaries, every operand an array the function holds by
/// value: rules, not inline sums of numbers. (`dot` may give a number or an array, so its
/// results are declared.)
#[differentiable]
fn held_sums(a: &Array2<f64>, b: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let c = a * 2.0;
    let d = b * 3.0;
    let e = c - d;
    let f = -e + (a * 0.5 - b * 0.25);
    let u: Array1<f64> = a.dot(x);
    let v: Array1<f64> = b.dot(x);
    let w = -(u + v) - a.dot(x);
    (f.clone() * f).sum() + w.dot(&w)
}

#[test]
fn derived_sums_of_held_arrays() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(held_sums(&mat(r, c, s), &mat(r, c, s + 1), &vector(c, s + 2)), seed = s);
    }
}

/// Borrows of locals as operands, the way ndarray code combines arrays without moving them
/// (`&c * &c`, `&d + ..`, `-&e`, `&y * &y`): the operators read them.
#[differentiable]
fn borrowed_operands(a: &Array2<f64>, b: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let c = a * 2.0;
    let d = &c * &c - b;
    let e = &d + &c * 0.5;
    let f = -&e;
    let y: Array1<f64> = f.dot(x);
    (&y * &y).sum() + (&c / 3.0).sum()
}

#[test]
fn derived_borrowed_operands() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let x = vector(c, s + 2);
        test_rule!(borrowed_operands(&mat(r, c, s), &mat(r, c, s + 1), &x), seed = s);
    }
}

/// A scalar added to or subtracted from every entry, on either side (`a - mean`, `1.0 - &c`),
/// in both modes, `f32` too.
#[differentiable]
fn shifted(a: &Array2<f64>, s: f64) -> f64 {
    let mean = a.sum() / (a.len() as f64);
    let c = a - mean;
    let d = 1.0 - &c;
    let e = d.clone() + s;
    let f = s - e;
    (&f * &d).sum() + (c + 0.5).sum() * s
}

#[differentiable]
fn shifted32(a: &Array1<f32>, s: f32) -> f32 {
    let c = a + s;
    let d = 2.0 - &c;
    (&c * &d).sum()
}

#[test]
fn scalar_shifts_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(shifted(&mat(r, c, s), 0.3), seed = s);
        let v = vector(r * c, s + 1).mapv(|v| v as f32);
        test_rule!(shifted32(&v, 0.3), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

/// Read-only views as arguments (`nd::views`): held as owned arrays in derived code, their
/// gradients arrays of their shapes; `test_rule!` perturbs the arrays behind `a.view()`.
#[differentiable]
fn view_model(m: ArrayView2<'_, f64>, x: ArrayView1<'_, f64>, s: f64) -> f64 {
    let y: Array1<f64> = m.dot(&x);
    let mut t = y.dot(&y) * s;
    for i in 0..m.nrows() {
        t += m[[i, 0]] * y[i];
    }
    let c = &m - s;
    t + (&c * &m).sum() + x.sum()
}

/// The same with the arguments behind `&`, the reference the views are checked against.
#[differentiable]
fn ref_model(m: &Array2<f64>, x: &Array1<f64>, s: f64) -> f64 {
    let y: Array1<f64> = m.dot(x);
    let mut t = y.dot(&y) * s;
    for i in 0..m.nrows() {
        t += m[[i, 0]] * y[i];
    }
    let c = m - s;
    t + (&c * m).sum() + x.sum()
}

#[differentiable]
fn view32(v: ArrayView1<'_, f32>) -> f32 {
    (&v * &v).sum()
}

#[test]
fn views_as_arguments_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let (m, x) = (mat(r, c, s), vector(c, s + 1));
        test_rule!(view_model(m.view(), x.view(), 0.4), seed = s);
        let (v, (gm, gx, gs)) = value_and_gradient!(view_model(m.view(), x.view(), 0.4));
        let (w, (hm, hx, hs)) = value_and_gradient!(ref_model(&m, &x, 0.4));
        assert_eq!((v, &gm, &gx, gs), (w, &hm, &hx, hs));
        let v32 = vector(r * c, s + 2).mapv(|v| v as f32);
        test_rule!(view32(v32.view()), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

/// `mapv` closures without a type on `f32` arrays: the element type comes from the array's
/// declared type (an argument's, a variable's, or arithmetic on one).
#[differentiable]
fn mapped_f32_untyped(w: &Array2<f32>, x: &Array1<f32>) -> f32 {
    let h: Array1<f32> = w.dot(x);
    let a = h.mapv(|v| v.tanh() * 0.5);
    let b = (w * 2.0).mapv(|v| v * v);
    let c = b.mapv(f32::sqrt);
    a.sum() + c.mapv(|v| v + 1.0).sum()
}

#[test]
fn untyped_closures_of_f32_arrays() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let w = positive(r, c, s).mapv(|v| v as f32);
        let x = vector(c, s + 1).mapv(|v| v as f32);
        test_rule!(mapped_f32_untyped(&w, &x), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

/// `for` loops over the elements of arrays (a 2-d array in ndarray's logical order).
#[differentiable]
fn iterated(x: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for &v in x.iter() {
        s += v.sin();
    }
    for (i, v) in m.iter().enumerate() {
        s += *v * (i as f64);
    }
    let y = x * 2.0;
    for (a, b) in x.iter().zip(y.iter()) {
        s += a * b;
    }
    let t: f64 = x.iter().sum();
    s + t * t + m.iter().map(|v| v * v).sum::<f64>()
}

#[test]
fn iterated_elements_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(iterated(&vector(c, s), &mat(r, c, s + 1)), seed = s);
    }
}

/// A model whose parameters are arrays in a `#[derive(Tangent)]` struct, with methods in a
/// `#[differentiable] impl` block: products of fields, a sum into a declared array
/// (`let z: Array1<f64> = w.dot(x) + &b - ..`), a map, a loop over the rows of the data.
#[derive(Clone, Debug, Tangent)]
pub struct TwoLayer {
    /// First layer's weights.
    pub w1: Array2<f64>,
    /// First layer's bias.
    pub b1: Array1<f64>,
    /// Output weights.
    pub w2: Array1<f64>,
}

#[differentiable]
impl TwoLayer {
    /// The hidden layer.
    pub fn hidden(&self, x: &Array1<f64>) -> Array1<f64> {
        let z: Array1<f64> = self.w1.dot(x) + &self.b1 - &self.b1 * 0.5;
        z.mapv(|v| v.tanh())
    }
    /// The prediction.
    pub fn predict(&self, x: &Array1<f64>) -> f64 {
        let h = self.hidden(x);
        self.w2.dot(&h)
    }
}

#[differentiable]
fn two_layer_loss(m: &TwoLayer, xs: &Array2<f64>, ys: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..xs.nrows() {
        let x = xs.row(i).to_owned();
        let e = m.predict(&x) - ys[i];
        s += e * e;
    }
    s / xs.nrows() as f64
}

#[test]
fn models_in_structs_with_methods_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = TwoLayer { w1: mat(3, c, s), b1: vector(3, s + 1), w2: vector(3, s + 2) };
        let (xs, ys) = (mat(r, c, s + 3), vector(r, s + 4));
        test_rule!(two_layer_loss(&m, &xs, &ys), seed = s);
    }
}

/// `Array2::from_shape_fn` / `Array1::from_shape_fn` with closures that read the function's
/// variables, written as loops over the elements.
#[differentiable]
fn from_shape_fns(x: &Array1<f64>, ell: f64) -> f64 {
    let n = x.len();
    let k = Array2::from_shape_fn((n, n + 1), |(i, j)| (x[i] - x[j % n]) * ell);
    let v = Array1::from_shape_fn(n, |i| x[i] * x[i]);
    (&k * &k).sum() + v.sum()
}

#[test]
fn from_shape_fn_both_modes() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(from_shape_fns(&vector(n, s), 0.7), seed = s);
    }
}

/// `a.sum_axis(Axis(k))` of 2-d arrays (an argument, a temporary), both axes.
#[differentiable]
fn axis_sums(a: &Array2<f64>, w: &Array1<f64>) -> f64 {
    let c = a.sum_axis(Axis(0));
    let r = a.sum_axis(Axis(1));
    let m = a * 2.0;
    let s = m.sum_axis(Axis(0));
    c.dot(w) + (&r * &r).sum() + s.sum()
}

#[test]
fn sum_axis_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(axis_sums(&mat(r, c, s), &vector(c, s + 1)), seed = s);
    }
}

/// `a.mean().unwrap()` / `.expect(..)` (ndarray's `mean` is an `Option`): centring and a
/// variance.
#[differentiable]
fn centred_variance(x: &Array1<f64>, a: &Array2<f64>) -> f64 {
    let mu = x.mean().unwrap();
    let c = x - mu;
    let var = (&c * &c).mean().expect("non-empty");
    var + a.mean().unwrap() * mu
}

#[test]
fn means_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(centred_variance(&vector(r * c, s), &mat(r, c, s + 1)), seed = s);
    }
}

/// `Array::ones(shape)` and `Array::from_elem(shape, v)` by path, `v` differentiated.
#[differentiable]
fn filled(x: &Array1<f64>, v: f64) -> f64 {
    let n = x.len();
    let o = Array1::ones(n);
    let e = Array2::from_elem((n, 2), v);
    let f = Array1::from_elem(n, v * v);
    x.dot(&o) + e.sum() * v + (&f * x).sum()
}

#[test]
fn ones_and_from_elem_both_modes() {
    for (k, n) in [1, 2, 5].into_iter().enumerate() {
        let s = k as u64;
        test_rule!(filled(&vector(n, s), 0.7), seed = s);
    }
}

/// A derived function whose result is an array, checked by `test_rule!` like any rule.
#[differentiable]
fn array_result(a: &Array2<f64>, x: &Array1<f64>, s: f64) -> Array1<f64> {
    let b = a * s;
    let y: Array1<f64> = b.dot(x);
    &y * &y - &y * 0.5
}

#[test]
fn derived_array_results() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(array_result(&mat(r, c, s), &vector(c, s + 1), 0.7), seed = s);
    }
}

/// Element writes and reads of arrays built in the body, by `[[i, j]]`, `[(i, j)]` and `[i]`
/// (`mooncake_runtime::elements`).
#[differentiable]
fn element_writes(m: &Array2<f64>, v: &Array1<f64>, x: f64) -> f64 {
    let mut c = m * x;
    let mut w = v * 2.0;
    c[[0, 1]] = x * x;
    c[[1, 0]] = c[[0, 0]] * v[1];
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

/// `tr(A²)` by a double loop over elements of an argument behind `&`.
#[differentiable]
fn trace_of_square(a: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..a.nrows() {
        for k in 0..a.ncols() {
            s += a[[i, k]] * a[[k, i]];
        }
    }
    s
}

/// A kernel matrix built element by element, then used in products.
#[differentiable]
fn kernel_quad(x: &Array1<f64>, ell: f64) -> f64 {
    let n = x.len();
    let mut k = Array2::zeros((n, n));
    for i in 0..n {
        for j in 0..n {
            let d = (x[i] - x[j]) / ell;
            k[[i, j]] = (-0.5 * d * d).exp();
        }
        k[[i, i]] += 0.5;
    }
    x.dot(&k.dot(x))
}

/// Writes into a `&mut` argument, read back afterwards; the rule must leave the argument as it
/// was on entry.
#[differentiable]
fn scale_first_column(a: &mut Array2<f64>, s: f64) -> f64 {
    for i in 0..a.nrows() {
        a[[i, 0]] *= s;
    }
    let (r, c) = (a.nrows() - 1, a.ncols() - 1);
    a[(r, c)] = s * a[[0, 0]];
    a.sum() + a[[0, 0]] * a[[r, c]]
}

/// An array written in a loop from another's elements, each element read after being
/// overwritten.
#[differentiable]
fn prefix_products(v: &Array1<f64>) -> f64 {
    let mut w = v.clone();
    for i in 1..w.len() {
        w[i] = w[i - 1] * v[i];
    }
    w.sum()
}

/// The same of `f32` arrays.
#[differentiable]
fn prefix_products32(v: &Array1<f32>) -> f32 {
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
        assert!((y - sq.dot(&sq).diag().sum()).abs() < 1e-12);
        assert!((g - 2.0 * &sq.t()).iter().all(|d| d.abs() < 1e-12));
        let mut a = mat(r, c, s + 1);
        let before = a.clone();
        test_rule!(scale_first_column(&mut a, 1.3), seed = s);
        let (_, (ga, gs)) = value_and_gradient!(scale_first_column(&mut a, 1.3));
        assert_eq!(a, before, "the argument is restored");
        assert_eq!(ga.dim(), (r, c));
        assert!(gs.is_finite());
        test_rule!(prefix_products(&vector(r * c, s + 2)), seed = s);
        let v32 = vector(r * c, s + 3).mapv(|v| v as f32);
        test_rule!(prefix_products32(&v32), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
    for n in [1, 2, 5] {
        let x = Array1::from_shape_fn(n, |i| 0.3 * i as f64 - 0.4);
        test_rule!(kernel_quad(&x, 0.9));
    }
}

/// Shape queries (`nrows`, `ncols`) in both modes: no derivative, used as numbers.
#[differentiable]
fn shapes(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let c = m * 2.0;
    let k = (c.nrows() + 10 * m.ncols()) as f64;
    c.sum() * k + v.dot(v)
}

#[test]
fn shape_queries_both_modes() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        test_rule!(shapes(&mat(r, c, s), &vector(c, s + 1)), seed = s);
    }
}

/// ndarray's associated constructors called by their paths in a derived body
/// (`Array2::from_shape_vec`, `Array2::zeros`, `Array1::from_vec`, `Array1::zeros`), which reach
/// their rules through the prelude's `ArrayConstructors` / `Array1Constructors`.
#[differentiable]
fn by_constructor_paths(s: &[f64], x: &[f64]) -> f64 {
    let m = Array2::from_shape_vec((2, 3), s.to_vec()).unwrap();
    let v = Array1::from_vec(x.to_vec());
    let z = Array2::<f64>::zeros((2, 3));
    let w = Array1::<f64>::zeros(3);
    let y = m.dot(&v);
    y.dot(&y) + z.sum() + w.sum()
}

#[test]
fn associated_constructors_by_path() {
    let s = vec![0.5, -1.0, 2.0, 0.25, 1.5, -0.75];
    let x = vec![0.3, -0.2, 0.9];
    test_rule!(by_constructor_paths(&*s, &*x));
}

/// Gradients shaped like the inputs, through the high-level API: an `Array2`'s gradient is an
/// `Array2`, checked against the closed form of `|A x - b|²`: `2 r xᵀ`, `2 Aᵀ r`, `-2 r`.
#[test]
fn gradients_are_arrays() {
    let (a, x, b) = (mat(3, 2, 1), vector(2, 2), vector(3, 3));
    let (v, (ga, gx, gb)) = value_and_gradient!(least_squares(&a, &x, &b));
    let r = a.dot(&x) - &b;
    assert!((v - r.dot(&r)).abs() < 1e-12);
    let ga_closed =
        r.view().insert_axis(ndarray::Axis(1)).dot(&x.view().insert_axis(ndarray::Axis(0))) * 2.0;
    assert!((&ga - &ga_closed).iter().all(|d| d.abs() < 1e-12), "{ga} vs {ga_closed}");
    assert!((&gx - &(a.t().dot(&r) * 2.0)).iter().all(|d| d.abs() < 1e-12));
    assert!((&gb + &(&r * 2.0)).iter().all(|d| d.abs() < 1e-12));
}

/// A derived function of `f32` arrays: products, scalings by an `f32`, element-wise methods.
#[differentiable]
fn model32(m: &Array2<f32>, x: &Array1<f32>, s: f32) -> f32 {
    let y = m.dot(x) * s;
    let z = (y * 0.5).tanh();
    z.sum() + x.dot(x) * s
}

#[test]
fn derived_f32() {
    for (k, &(r, c)) in SHAPES.iter().enumerate() {
        let s = k as u64;
        let m = mat(r, c, s).mapv(|v| v as f32);
        let x = vector(c, s + 1).mapv(|v| v as f32);
        test_rule!(model32(&m, &x, 0.8), seed = s, rtol = 2e-2, atol = 2e-2, dot_tol = 1e-4);
    }
}

// -- data arguments `Const(..)`, `zero_adjoint!` results, values lent to calls ------------------

/// The 0/1 mask of the positive entries: piecewise constant, declared with `zero_adjoint!`, so
/// its result has a constant shadow (`Primal::constant_fdata`).
fn positive_mask(h: &Array2<f64>) -> Array2<f64> {
    h.mapv(|v| if v > 0.0 { 1.0 } else { 0.0 })
}

zero_adjoint! {
    fn positive_mask(h: &Array2<f64>) -> Array2<f64>;
}

/// Every rule that skips work for a constant shadow (`SharedRef::accumulate`), with the data
/// `x`, `v`, `m`, `y` passed `Const(..)` below: products with the constant on either side,
/// element-wise products with a mask and with data, `dot`, `-`, and values held by the rule lent
/// to calls (`&h`).
#[differentiable]
fn two_layers(
    w1: &Array2<f64>,
    w2: &Array2<f64>,
    x: &Array2<f64>,
    v: &Array1<f64>,
    m: &Array2<f64>,
    y: &Array2<f64>,
) -> f64 {
    let h = w1.dot(x);
    let a = positive_mask(&h) * h.to_owned();
    let out = w2.dot(&a);
    let r = out - y;
    let z = w1.t().dot(v);
    r.pow2().sum() + z.dot(&z) + (h * m).sum()
}

fn max_abs(a: &Array2<f64>) -> f64 {
    a.iter().fold(0.0, |m, v| m.max(v.abs()))
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
        assert!(max_abs(&(&c1 - &g1)) <= 1e-12 * (1.0 + max_abs(&g1)), "w1: {c1} vs {g1}");
        assert!(max_abs(&(&c2 - &g2)) <= 1e-12 * (1.0 + max_abs(&g2)), "w2: {c2} vs {g2}");
        // The prepared form, twice on one cache (the constant shadows are reused unzeroed).
        let mut cache = GradientCache::new();
        for _ in 0..2 {
            let (fp, (p1, p2, ..)) = value_and_gradient!(
                two_layers(&w1, &w2, Const(&x), Const(&v), Const(&m), Const(&y)),
                cache = &mut cache
            );
            assert_eq!(f, fp);
            assert!(max_abs(&(p1 - &g1)) <= 1e-12 * (1.0 + max_abs(&g1)));
            assert!(max_abs(&(p2 - &g2)) <= 1e-12 * (1.0 + max_abs(&g2)));
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

// -- `mapv` with closures and paths --------------------------------------------------------------

/// `mapv` of arrays: closures of one element and a function's path, on a product, an argument
/// and a temporary.
#[differentiable]
fn mapped(w: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let h = w.dot(x);
    let a = h.mapv(|v| v.max(0.0));
    let s = a.mapv(|v: f64| 1.0 / (1.0 + (-v).exp()));
    let t = w.mapv(f64::tanh);
    let u = (w * 2.0).mapv(|v| v * v + 1.0);
    s.sum() + t.sum() + u.sum()
}

/// The same in `f32`.
#[differentiable]
fn mapped_f32(w: &Array2<f32>) -> f32 {
    let a = w.mapv(|v: f32| v * v.sin());
    a.mapv(f32::exp).sum()
}

#[test]
fn mapv_with_closures_and_paths_both_modes() {
    for (k, &(r, c)) in [(1, 1), (3, 3), (2, 5), (5, 2), (1, 4), (4, 1)].iter().enumerate() {
        let s = k as u64;
        let (w, x) = (mat(r, c, s + 40), vector(c, s + 41));
        test_rule!(mapped(&w, &x), seed = s);
        let w32 = w.mapv(|v| v as f32);
        let (_, (g,)) = value_and_gradient!(mapped_f32(&w32));
        // d/dw Σ exp(w sin w) = exp(w sin w) (sin w + w cos w).
        let want = w32.mapv(|v| (v * v.sin()).exp() * (v.sin() + v * v.cos()));
        let err = (&g - &want).mapv(f32::abs).sum() / (1.0 + want.mapv(f32::abs).sum());
        assert!(err < 1e-5, "{g} vs {want}");
    }
}

/// Float-named methods of an array used twice (an argument and a local): each call gets the
/// receiver, which stays usable.
#[differentiable]
fn float_methods_twice(a: &Array2<f64>) -> f64 {
    let e = a.exp();
    let s = a.sin();
    let b = e * 0.5;
    let t = b.tanh();
    let u = b.cos();
    t.sum() + u.sum() + s.sum()
}

#[test]
fn float_named_methods_keep_their_receiver() {
    for (k, &(r, c)) in [(1, 1), (3, 3), (2, 5)].iter().enumerate() {
        test_rule!(float_methods_twice(&mat(r, c, 60 + k as u64)), seed = k as u64);
    }
}
