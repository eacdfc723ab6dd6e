//! Hessian-vector products (`hvp!`) and Hessians (`hessian!`) by forward-over-reverse, and the
//! dual number `Fwd<T>` they run the derived reverse rules on.
//!
//! Every product is checked against central differences of the gradient (`check_hvp`, the
//! gradient from `value_and_gradient!` at `f64`), every gradient `hvp!` returns against central
//! differences of the value (`check_jacobian` of a one-row block), every Hessian for symmetry
//! and against the finite-difference Hessian (`check_hessian`); `Fwd<f64>`'s float methods are
//! checked one by one against finite differences of the `f64` methods.

#![allow(clippy::needless_range_loop)] // index loops, as written

use mooncake_runtime::TestRng;
use mooncake_runtime::prelude::*;
use mooncake_runtime::test_utils::{check_hessian, check_hvp, check_jacobian};

// ---------------------------------------------------------------------------------------------
// `Fwd<f64>`: every method's derivative against central differences.

/// `(f(x + h) - f(x - h)) / 2h` at the step among a few where the estimate is most stable.
fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6 * x.abs().max(1.0);
    (f(x + h) - f(x - h)) / (2.0 * h)
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-6 + 1e-6 * a.abs().max(b.abs()),
        "{what}: dual part {a}, central differences {b}"
    );
}

/// A unary method: value and derivative at several points.
fn unary(name: &str, d: impl Fn(Fwd<f64>) -> Fwd<f64>, p: impl Fn(f64) -> f64, xs: &[f64]) {
    for &x in xs {
        let y = d(Fwd::new(x, 1.0));
        assert_eq!(y.re, p(x), "{name}({x}): value");
        close(y.eps, central(&p, x), &format!("{name}({x})"));
        // A constant stays a constant.
        assert_eq!(d(Fwd::constant(x)).eps, 0.0, "{name}({x}) of a constant");
    }
}

/// A binary method: the derivative along each argument, and along both at once.
fn binary(
    name: &str,
    d: impl Fn(Fwd<f64>, Fwd<f64>) -> Fwd<f64>,
    p: impl Fn(f64, f64) -> f64,
    points: &[(f64, f64)],
) {
    for &(a, b) in points {
        let da = d(Fwd::new(a, 1.0), Fwd::constant(b));
        let db = d(Fwd::constant(a), Fwd::new(b, 1.0));
        let both = d(Fwd::new(a, 0.3), Fwd::new(b, -0.7));
        assert_eq!(da.re, p(a, b), "{name}({a}, {b}): value");
        close(da.eps, central(|t| p(t, b), a), &format!("{name}({a}, {b}) along the first"));
        close(db.eps, central(|t| p(a, t), b), &format!("{name}({a}, {b}) along the second"));
        close(both.eps, 0.3 * da.eps - 0.7 * db.eps, &format!("{name}({a}, {b}) along both"));
    }
}

#[test]
fn fwd_unary_methods_against_finite_differences() {
    let pos = [0.3, 0.7, 1.9, 4.2];
    let any = [-2.3, -0.4, 0.3, 1.7];
    let unit = [-0.8, -0.2, 0.35, 0.9];
    unary("sin", Float::sin, f64::sin, &any);
    unary("cos", Float::cos, f64::cos, &any);
    unary("tan", Float::tan, f64::tan, &unit);
    unary("asin", Float::asin, f64::asin, &unit);
    unary("acos", Float::acos, f64::acos, &unit);
    unary("atan", Float::atan, f64::atan, &any);
    unary("sinh", Float::sinh, f64::sinh, &any);
    unary("cosh", Float::cosh, f64::cosh, &any);
    unary("tanh", Float::tanh, f64::tanh, &any);
    unary("asinh", Float::asinh, f64::asinh, &any);
    unary("acosh", Float::acosh, f64::acosh, &[1.2, 2.5, 7.0]);
    unary("atanh", Float::atanh, f64::atanh, &unit);
    unary("exp", Float::exp, f64::exp, &any);
    unary("exp2", Float::exp2, f64::exp2, &any);
    unary("exp_m1", Float::exp_m1, f64::exp_m1, &any);
    unary("ln", Float::ln, f64::ln, &pos);
    unary("ln_1p", Float::ln_1p, f64::ln_1p, &unit);
    unary("log2", Float::log2, f64::log2, &pos);
    unary("log10", Float::log10, f64::log10, &pos);
    unary("sqrt", Float::sqrt, f64::sqrt, &pos);
    unary("cbrt", Float::cbrt, f64::cbrt, &any);
    unary("abs", Float::abs, f64::abs, &any);
    unary("recip", Float::recip, f64::recip, &any);
    unary("to_degrees", Float::to_degrees, f64::to_degrees, &any);
    unary("to_radians", Float::to_radians, f64::to_radians, &any);
    unary("fract", Float::fract, f64::fract, &any);
    unary("neg", |x: Fwd<f64>| -x, |x: f64| -x, &any);
    for n in [-3, -1, 0, 1, 2, 5] {
        unary("powi", |x: Fwd<f64>| x.powi(n), |x: f64| x.powi(n), &any);
    }
    // Piecewise constant: a zero derivative away from the jumps.
    unary("signum", Float::signum, f64::signum, &any);
    unary("floor", Float::floor, f64::floor, &any);
    unary("ceil", Float::ceil, f64::ceil, &any);
    unary("round", Float::round, f64::round, &any);
    unary("trunc", Float::trunc, f64::trunc, &any);
}

#[test]
fn fwd_binary_methods_against_finite_differences() {
    let pts = [(0.7, 1.3), (-1.2, 0.4), (2.5, -0.8), (0.3, 0.3 + 1e-3)];
    let pos = [(0.7, 1.3), (1.9, 0.4), (2.5, -0.8), (0.3, 2.0)];
    binary("add", |a, b| a + b, |a, b| a + b, &pts);
    binary("sub", |a, b| a - b, |a, b| a - b, &pts);
    binary("mul", |a, b| a * b, |a, b| a * b, &pts);
    binary("div", |a, b| a / b, |a, b| a / b, &pts);
    binary("rem", |a, b| a % b, |a, b| a % b, &[(2.7, 1.3), (-1.9, 0.7), (5.1, -1.1)]);
    binary("atan2", Float::atan2, f64::atan2, &pts);
    binary("hypot", Float::hypot, f64::hypot, &pts);
    binary("powf", Float::powf, f64::powf, &pos);
    binary("log", Float::log, f64::log, &[(0.7, 2.0), (3.5, 10.0), (1.9, 0.4)]);
    binary("min", Float::min, f64::min, &pts);
    binary("max", Float::max, f64::max, &pts);
    binary(
        "rem_euclid",
        Float::rem_euclid,
        f64::rem_euclid,
        &[(2.7, 1.3), (-1.9, 0.7), (5.1, -1.1)],
    );
    binary("copysign", Float::copysign, f64::copysign, &[(0.7, 1.3), (-1.2, 0.4), (2.5, -0.8)]);
    // mul_add and clamp, along each argument.
    for (a, b, c) in [(0.7, 1.3, -0.4), (-1.2, 0.4, 2.0)] {
        binary(
            "mul_add(., ., c)",
            |x, y| x.mul_add(y, Fwd::constant(c)),
            |x, y| x.mul_add(y, c),
            &[(a, b)],
        );
        binary(
            "mul_add(a, ., .)",
            |y, z| Fwd::constant(a).mul_add(y, z),
            |y, z| a.mul_add(y, z),
            &[(b, c)],
        );
    }
    for x in [-2.0, -0.5, 0.2, 0.9, 3.0] {
        binary(
            "clamp(x, lo, .)",
            |x, hi| x.clamp(Fwd::constant(-1.0), hi),
            |x, hi| x.clamp(-1.0, hi),
            &[(x, 1.0)],
        );
        binary(
            "clamp(x, ., hi)",
            |x, lo| x.clamp(lo, Fwd::constant(1.0)),
            |x, lo| x.clamp(lo, 1.0),
            &[(x, -1.0)],
        );
    }
    // Assignment operators.
    let mut a = Fwd::new(1.5, 1.0);
    a += Fwd::new(0.5, 2.0);
    a -= Fwd::new(0.25, 0.5);
    a *= Fwd::new(2.0, 0.0);
    a /= Fwd::new(4.0, 1.0);
    let p = |t: f64| ((1.5 + t + 0.5 + 2.0 * t) - (0.25 + 0.5 * t)) * 2.0 / (4.0 + t);
    assert_eq!(a.re, p(0.0));
    close(a.eps, central(p, 0.0), "assignment operators");
}

#[test]
fn fwd_comparisons_conventions_and_traits() {
    // Comparisons look at the real parts.
    assert!(Fwd::new(1.0, 5.0) == Fwd::new(1.0, -3.0));
    assert!(Fwd::new(1.0, 5.0) < Fwd::new(2.0, -3.0));
    assert!(Fwd::new(f64::NAN, 0.0) != Fwd::new(f64::NAN, 0.0));
    // min / max carry the chosen argument's derivative, the first at a tie.
    assert_eq!(Fwd::new(1.0, 2.0).min(Fwd::new(1.0, 3.0)).eps, 2.0);
    assert_eq!(Fwd::new(1.0, 2.0).max(Fwd::new(1.0, 3.0)).eps, 2.0);
    assert_eq!(Fwd::new(f64::NAN, 2.0).min(Fwd::new(1.0, 3.0)), Fwd::new(1.0, 0.0));
    // The guarded rules' conventions: a zero dual part stays exactly zero where the derivative
    // is infinite; abs and hypot have a zero derivative at their kinks.
    assert_eq!(Fwd::new(0.0, 0.0).sqrt().eps, 0.0);
    assert_eq!(Fwd::new(0.0, 1.0).sqrt().eps, f64::INFINITY);
    assert_eq!(Fwd::new(1.0, 0.0).asin().eps, 0.0);
    assert_eq!(Fwd::new(0.0, 1.0).abs().eps, 0.0);
    assert_eq!(Fwd::new(0.0, 1.0).hypot(Fwd::new(0.0, 1.0)).eps, 0.0);
    assert_eq!(Fwd::new(0.0, 1.0).powf(Fwd::new(2.0, 1.0)).eps, 0.0);
    assert_eq!(Fwd::new(2.0, 0.0).powf(Fwd::new(0.0, 1.0)).eps, 2.0_f64.ln());
    // mul_guarded, componentwise.
    let g = Fwd::new(f64::INFINITY, 1.0).mul_guarded(Fwd::new(0.0, 0.0));
    assert_eq!((g.re, g.eps), (0.0, 0.0));
    let g = Fwd::new(3.0, 1.0).mul_guarded(Fwd::new(0.0, 2.0));
    assert_eq!((g.re, g.eps), (0.0, 6.0));
    // Constants, conversions, formatting.
    assert_eq!(Fwd::<f64>::ONE, Fwd::new(1.0, 0.0));
    assert_eq!(Fwd::<f64>::from_i32(3).eps, 0.0);
    assert_eq!(Fwd::new(2.5, 1.0).to_f64(), 2.5);
    assert_eq!(format!("{}", Fwd::new(1.5_f64, -2.0)), "1.5 + -2ε");
    assert_eq!(format!("{:?}", Fwd::new(1.5_f64, 2.0)), "Fwd { re: 1.5, eps: 2.0 }");
    assert!(Fwd::new(1.0, f64::NAN).is_finite());
    // Nested: a second derivative of x³ by Fwd<Fwd<f64>>.
    let x = Fwd::new(Fwd::new(2.0, 1.0), Fwd::new(1.0, 0.0));
    let y = x * x * x;
    assert_eq!((y.re.re, y.eps.re, y.eps.eps), (8.0, 12.0, 12.0));
    // Sums (`Float` has `Sum`, so generic code can write `x.iter().sum::<T>()`).
    let xs = [Fwd::new(1.0, 2.0), Fwd::new(3.0, -1.0)];
    let (s1, s2): (Fwd<f64>, Fwd<f64>) = (xs.iter().sum(), xs.into_iter().sum());
    assert_eq!((s1.re, s1.eps, s2.re, s2.eps), (4.0, 1.0, 4.0, 1.0));
    // The rule system's view: the tangent and rdata are itself.
    let z = Fwd::new(1.0_f64, 2.0);
    assert_eq!(z.zero_tangent(), Fwd::new(0.0, 0.0));
    assert_eq!(TangentSpace::inner(&z, &z), 5.0);
}

// ---------------------------------------------------------------------------------------------
// The functions (generic over `T: Float`).

#[differentiable]
fn sum_of_products<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        for j in i..x.len() {
            s += x[i] * x[j] * T::from_f64((i + j + 1) as f64);
        }
    }
    s
}

#[differentiable]
fn elementary<T: Float>(x: &[T]) -> T {
    let a = x[0].sin() * x[1].exp() + x[2].ln() * x[1];
    let b = x[2].powf(x[0]) + x[1].powi(3) - x[2].sqrt() * x[0];
    let c = (x[0] * x[1]).tanh() + x[1].atan2(x[2]) + x[0].hypot(x[2]);
    a * b + c
}

#[differentiable]
fn more_elementary<T: Float>(x: &[T]) -> T {
    let a = x[0].cos() / x[1].cosh() + x[2].asinh() - x[0].atan();
    let b = x[1].exp_m1() * x[2].ln_1p() + x[0].cbrt() * x[1].exp2();
    let c = x[2].log(x[1] + T::TWO) + x[0].mul_add(x[1], x[2]) + x[1].recip();
    a * b - c * c
}

#[differentiable]
fn rosenbrock<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() - 1 {
        let a = T::ONE - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + T::from_f64(100.0) * b * b;
    }
    s
}

#[differentiable]
fn branches<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        if x[i] > T::ZERO {
            s += x[i] * x[i] * x[i];
        } else if x[i] < T::from_f64(-1.0) {
            s -= x[i].sin() * x[i];
        } else {
            s += x[i].exp() * T::from_f64(i as f64);
        }
    }
    s * s.abs().sqrt()
}

#[differentiable]
fn local_buffers<T: Float>(x: &[T]) -> T {
    let n = x.len();
    let mut h = vec![T::ZERO; n];
    for i in 0..n {
        h[i] = x[i] * x[(i + 1) % n];
    }
    for i in 0..n {
        let prev = h[(i + n - 1) % n].sin();
        h[i] += prev;
    }
    let mut out = Vec::new();
    for v in h.iter() {
        out.push(*v * *v);
    }
    let mut s = T::ZERO;
    for v in out.iter() {
        s += *v;
    }
    s
}

#[differentiable]
fn scale_in_place<T: Float>(x: &mut [T], a: T) {
    for i in 0..x.len() {
        x[i] *= a;
    }
}

#[differentiable]
fn mutates_a_copy<T: Float>(x: &[T], a: T) -> T {
    let mut y = x.to_vec();
    scale_in_place(&mut y, a);
    scale_in_place(&mut y, a.sin());
    let mut s = T::ZERO;
    for v in y.iter() {
        s += v.tanh();
    }
    s * a
}

#[differentiable]
fn helper<T: Float>(x: T, y: T) -> T {
    x * y.exp() - y
}

#[differentiable]
fn calls<T: Float>(x: &[T], a: T) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += helper(x[i], a) * sum_of_products(x);
    }
    s + rosenbrock(x) * a
}

#[differentiable]
fn power_tower<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x } else { power_tower(x, n - 1).sin() * x + x * x }
}

#[differentiable]
fn gen_ping<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x * x } else { gen_pong(x.sin(), n - 1) + x }
}

#[differentiable]
fn gen_pong<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x.exp() } else { gen_ping(x * x, n - 1) * x }
}

#[differentiable]
fn scalars<T: Float>(x: T, y: T, z: T) -> T {
    let a = x * y + x / y - z;
    let b = -a * T::TWO + x % T::from_f64(0.7);
    a * b + (x * z).sin() * y.min(z) + x.max(z).powi(2) + y.clamp(T::ZERO, T::ONE)
}

#[differentiable]
fn weighted<T: Float>(w: &[T], x: &[T], b: T, k: usize) -> T {
    let mut s = b;
    for i in 0..k {
        s += w[i] * x[i];
    }
    s.tanh() * s + b * b
}

#[differentiable]
fn array_arg<T: Float>(p: [T; 3], q: &[T; 3]) -> T {
    p[0] * q[1] - p[1] * q[0] + (p[2] * q[2]).exp() + p[0] * p[1] * p[2]
}

#[differentiable]
fn vec_by_value<T: Float>(x: Vec<T>) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += x[i].sin() * x[(i + 1) % x.len()];
    }
    s
}

#[differentiable]
fn early_exit<T: Float>(x: &[T], limit: T) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += x[i] * x[i] * x[(i + 2) % x.len()];
        if s > limit {
            return s * s;
        }
    }
    s.exp()
}

#[differentiable]
fn single<T: Float>(x: T) -> T {
    x.sin() * x.exp() + x.powf(T::from_f64(2.5))
}

// ---------------------------------------------------------------------------------------------
// The checks.

fn directions(n: usize, count: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = TestRng::seed_from_u64(seed);
    (0..count).map(|_| (0..n).map(|_| rng.normal()).collect()).collect()
}

/// Checks a function of one slice: for a few random directions, `hvp!`'s value against the
/// function, its gradient against finite differences of the value, its product against finite
/// differences of the gradient; then `hessian!` against the finite-difference Hessian.
macro_rules! check_slice_fn {
    ($f:ident, $x:expr) => {{
        let x: Vec<f64> = $x;
        let f = |x: &Vec<f64>| $f(&x[..]);
        let grad = |x: &Vec<f64>| value_and_gradient!($f(&x[..])).1.0;
        for v in directions(x.len(), 3, 7) {
            let (y, (g,), (hv,)) = hvp!($f(&x[..]), (&v[..],));
            assert_eq!(y, f(&x), "{}: value", stringify!($f));
            let g = Jacobian::from_row_major(1, x.len(), g).unwrap();
            check_jacobian(&g, &x, f)
                .unwrap_or_else(|e| panic!("{}: gradient: {e}", stringify!($f)));
            check_hvp(&hv, &x, &v, grad).unwrap_or_else(|e| panic!("{}: {e}", stringify!($f)));
        }
        let (y, g, h) = hessian!($f(&x[..]));
        assert_eq!((y, g.len(), h.shape()), (f(&x), x.len(), (x.len(), x.len())));
        check_hessian(&h, &x, grad).unwrap_or_else(|e| panic!("{}: Hessian: {e}", stringify!($f)));
    }};
}

#[test]
fn products_of_slice_functions() {
    check_slice_fn!(sum_of_products, vec![0.3, -1.2, 0.8, 2.0]);
    check_slice_fn!(elementary, vec![0.7, 0.4, 1.3]);
    check_slice_fn!(more_elementary, vec![0.7, 0.4, 1.3]);
    check_slice_fn!(rosenbrock, vec![-1.2, 1.0, 0.5, 0.8, 1.1]);
    check_slice_fn!(branches, vec![0.5, -1.5, -0.3, 1.2]);
    check_slice_fn!(local_buffers, vec![0.5, -1.5, -0.3, 1.2]);
}

#[test]
fn products_with_several_arguments() {
    let x = vec![0.3, -0.7, 1.1];
    // Calls between generic functions, and `&mut` of a local copy.
    for (name, a) in [("calls", 0.8), ("mutates_a_copy", 1.3)] {
        let f = |p: &(Vec<f64>, f64)| match name {
            "calls" => calls(&p.0, p.1),
            _ => mutates_a_copy(&p.0, p.1),
        };
        let grad = |p: &(Vec<f64>, f64)| {
            let (_, (mut gx, ga)) = match name {
                "calls" => value_and_gradient!(calls(&p.0, p.1)),
                _ => value_and_gradient!(mutates_a_copy(&p.0, p.1)),
            };
            gx.push(ga);
            gx
        };
        for v in directions(4, 3, 11) {
            let (vx, va) = (v[..3].to_vec(), v[3]);
            let (y, (gx, ga), (hx, ha)) = match name {
                "calls" => hvp!(calls(&x, a), (&vx, va)),
                _ => hvp!(mutates_a_copy(&x, a), (&vx, va)),
            };
            let p = (x.clone(), a);
            assert_eq!(y, f(&p));
            let mut g = gx.clone();
            g.push(ga);
            let gj = Jacobian::from_row_major(1, 4, g).unwrap();
            check_jacobian(&gj, &p, f).unwrap_or_else(|e| panic!("{name}: gradient: {e}"));
            let mut hv = hx.clone();
            hv.push(ha);
            check_hvp(&hv, &p, &(vx.clone(), va), grad).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let (_, g, h) = match name {
            "calls" => hessian!(calls(&x, a)),
            _ => hessian!(mutates_a_copy(&x, a)),
        };
        assert_eq!(g.len(), 4);
        check_hessian(&h, &(x.clone(), a), grad).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn scalar_arguments_and_recursion() {
    // Three scalars: the Hessian counts them in order.
    let p = (0.9, 1.3, -0.4);
    let f = |p: &(f64, f64, f64)| scalars(p.0, p.1, p.2);
    let grad = |p: &(f64, f64, f64)| {
        let (_, (a, b, c)) = value_and_gradient!(scalars(p.0, p.1, p.2));
        vec![a, b, c]
    };
    let (y, (a, b, c), (ha, hb, hc)) = hvp!(scalars(p.0, p.1, p.2), (0.5, -1.0, 2.0));
    assert_eq!(y, f(&p));
    check_jacobian(&Jacobian::from_row_major(1, 3, vec![a, b, c]).unwrap(), &p, f).unwrap();
    check_hvp(&[ha, hb, hc], &p, &(0.5, -1.0, 2.0), grad).unwrap();
    let (_, g, h) = hessian!(scalars(p.0, p.1, p.2));
    assert_eq!(g, vec![a, b, c]);
    check_hessian(&h, &p, grad).unwrap();
    // Recursion, direct and mutual, with an integer argument (`NoTangent`).
    for n in [0, 1, 4] {
        let x = 0.7;
        let g1 = |x: &f64| vec![value_and_gradient!(power_tower(*x, n)).1.0];
        let (y, (gx, gn), (hx, hn)) = hvp!(power_tower(x, n), (1.0, NoTangent));
        assert_eq!((y, gn, hn), (power_tower(x, n), NoTangent, NoTangent));
        check_jacobian(&Jacobian::from_row_major(1, 1, vec![gx]).unwrap(), &x, |x| {
            power_tower(*x, n)
        })
        .unwrap();
        check_hvp(&[hx], &x, &1.0, g1).unwrap_or_else(|e| panic!("power_tower {n}: {e}"));
        let g2 = |x: &f64| vec![value_and_gradient!(gen_ping(*x, n)).1.0];
        let (_, _, (hx, _)) = hvp!(gen_ping(x, n), (1.0, NoTangent));
        check_hvp(&[hx], &x, &1.0, g2).unwrap_or_else(|e| panic!("gen_ping {n}: {e}"));
        let (_, g, h) = hessian!(gen_ping(x, n));
        assert_eq!(g.len(), 1);
        check_hessian(&h, &x, g2).unwrap();
    }
    // One scalar, the direction as a bare expression; f32.
    let (_, (g,), (h,)) = hvp!(single(1.3), 1.0);
    check_hvp(&[h], &1.3, &1.0, |x: &f64| vec![value_and_gradient!(single(*x)).1.0]).unwrap();
    check_jacobian(&Jacobian::from_row_major(1, 1, vec![g]).unwrap(), &1.3, |x| single(*x))
        .unwrap();
    let (y32, (g32,), (h32,)) = hvp!(single(1.3_f32), 1.0_f32);
    assert!((f64::from(y32) - single(1.3)).abs() < 1e-5);
    assert!((f64::from(g32) - g).abs() < 1e-4 && (f64::from(h32) - h).abs() < 1e-3);
}

#[test]
fn constants_integers_arrays_and_vecs_by_value() {
    let (w, x) = (vec![0.5, -1.0, 2.0, 0.1], vec![1.0, 0.3, -0.2, 0.7]);
    let grad = |w: &Vec<f64>| value_and_gradient!(weighted(&w[..], Const(&x[..]), 0.4, 3)).1.0;
    let v = vec![1.0, 2.0, -1.0, 0.5];
    // `x` constant, `b` with a zero direction, `k` an integer.
    let (y, (gw, gx, _, gk), (hw, hx, hb, hk)) =
        hvp!(weighted(&w, Const(&x), 0.4, 3), (&v, NoTangent, 0.0, NoTangent));
    assert_eq!(y, weighted(&w, &x, 0.4, 3));
    assert_eq!((gx, gk, hx, hk), (NoTangent, NoTangent, NoTangent, NoTangent));
    check_jacobian(&Jacobian::from_row_major(1, 4, gw.clone()).unwrap(), &w, |w| {
        weighted(w, &x, 0.4, 3)
    })
    .unwrap();
    check_hvp(&hw, &w, &v, grad).unwrap();
    // ∂²f/∂b∂w along v, against differences of ∂f/∂b.
    let gb = |w: &Vec<f64>| vec![value_and_gradient!(weighted(&w[..], Const(&x[..]), 0.4, 3)).1.2];
    check_hvp(&[hb], &w, &v, gb).unwrap();
    // The Hessian of the non-constant arguments: w (4) then b (1).
    let (_, g, h) = hessian!(weighted(&w, Const(&x), 0.4, 3));
    assert_eq!((g.len(), h.shape()), (5, (5, 5)));
    let gwb = |p: &(Vec<f64>, f64)| {
        let (_, (mut gw, _, gb, _)) =
            value_and_gradient!(weighted(&p.0[..], Const(&x[..]), p.1, 3));
        gw.push(gb);
        gw
    };
    check_hessian(&h, &(w.clone(), 0.4), gwb).unwrap();
    // A constant of the generic type keeps its value (zero dual part): the same as a zero
    // direction for it.
    let (_, (gw2, _, gb2, _), (hw2, _, hb2, _)) =
        hvp!(weighted(&w, Const(&x), Const(0.4), 3), (&v, NoTangent, NoTangent, NoTangent));
    assert_eq!((gw2, gb2, hw2, hb2), (gw, NoTangent, hw, NoTangent));

    // Arrays by value and by reference.
    let (p, q) = ([0.3, -0.8, 0.5], [1.2, 0.4, -0.6]);
    let (_, (gp, gq), (hp, hq)) = hvp!(array_arg(p, &q), ([1.0, 0.0, 0.5], [0.0, -1.0, 2.0]));
    let gpq = |pq: &([f64; 3], [f64; 3])| {
        let (_, (gp, gq)) = value_and_gradient!(array_arg(pq.0, &pq.1));
        gp.iter().chain(gq.iter()).copied().collect::<Vec<_>>()
    };
    let flat: Vec<f64> = hp.iter().chain(hq.iter()).copied().collect();
    check_hvp(&flat, &(p, q), &([1.0, 0.0, 0.5], [0.0, -1.0, 2.0]), gpq).unwrap();
    assert_eq!(gpq(&(p, q)), gp.iter().chain(gq.iter()).copied().collect::<Vec<_>>());
    let (_, _, h) = hessian!(array_arg(p, &q));
    check_hessian(&h, &(p, q), gpq).unwrap();

    // A `Vec` by value.
    let xv = vec![0.2, -0.9, 1.4];
    let (_, _, (hv,)) = hvp!(vec_by_value(xv.clone()), (&[0.0, 1.0, -1.0],));
    let g = |x: &Vec<f64>| value_and_gradient!(vec_by_value(x.clone())).1.0;
    check_hvp(&hv, &xv, &vec![0.0, 1.0, -1.0], g).unwrap();
    let (_, _, h) = hessian!(vec_by_value(xv.clone()));
    check_hessian(&h, &xv, g).unwrap();

    // An early return, on both sides of the limit.
    for limit in [0.1, 100.0] {
        let xe = vec![0.5, 0.9, -0.4];
        let g = |x: &Vec<f64>| value_and_gradient!(early_exit(&x[..], Const(limit))).1.0;
        let (_, _, h) = hessian!(early_exit(&xe, Const(limit)));
        check_hessian(&h, &xe, g).unwrap_or_else(|e| panic!("limit {limit}: {e}"));
    }
}

#[test]
fn nothing_to_differentiate() {
    // Every argument constant: no products, an empty Hessian, the value.
    let (y, g, h) = hessian!(single(Const(1.3)));
    assert_eq!((y, g, h.shape()), (single(1.3), vec![], (0, 0)));
    let (y, (g,), (hv,)) = hvp!(single(Const(1.3)), (NoTangent,));
    assert_eq!((y, g, hv), (single(1.3), NoTangent, NoTangent));
}

#[test]
fn a_stationary_point_keeps_its_second_derivatives() {
    // At the minimum of Rosenbrock the cotangents of the squared terms are exactly zero while
    // their dual parts are not: the guarded rules (`sqrt` here) must keep those.
    #[differentiable]
    fn root_terms<T: Float>(x: &[T]) -> T {
        let a = (x[0] * x[0]).sqrt() - T::ONE;
        let b = x[1] - x[0];
        a * a + b * b
    }
    let x = vec![1.0, 1.0];
    let (y, g, h) = hessian!(root_terms(&x));
    assert_eq!((y, g), (0.0, vec![0.0, 0.0]));
    assert_eq!(h.as_slice(), &[4.0, -2.0, -2.0, 2.0]);
    let (_, _, h) = hessian!(rosenbrock(&x));
    assert_eq!(h.as_slice(), &[802.0, -400.0, -400.0, 200.0]);
}

#[test]
fn prepared_products_match_the_plain_form() {
    let x = vec![-1.2, 1.0, 0.5, 0.8];
    let mut cache = HvpCache::new();
    assert!(!cache.is_prepared());
    for v in directions(4, 3, 3) {
        let (y0, (g0, a0), (h0, ha0)) = hvp!(calls(&x, 0.8), (&v, 0.5));
        let (y, (g, a), (h, ha)) = hvp!(calls(&x, 0.8), (&v, 0.5), cache = &mut cache);
        assert_eq!((y, g, *a, h, *ha), (y0, &g0, a0, &h0, ha0));
    }
    assert!(cache.is_prepared());
    // One argument: the direction as a bare expression.
    let mut c1 = HvpCache::new();
    let v = vec![0.5, -1.0, 2.0, 0.0];
    let (_, (g1,), (h1,)) = hvp!(rosenbrock(&x), &v, cache = &mut c1);
    let (_, (g0,), (h0,)) = hvp!(rosenbrock(&x), &v);
    assert_eq!((g1, h1), (&g0, &h0));
    // Constants in the prepared form.
    let mut c2 = HvpCache::new();
    let w = vec![0.5, -1.0, 2.0];
    for _ in 0..2 {
        let (y, (gw, gx, _, _), (hw, _, hb, _)) = hvp!(
            weighted(&w, Const(&x), 0.4, 3),
            (&[1.0, 0.0, 0.0], NoTangent, 1.0, NoTangent),
            cache = &mut c2
        );
        let (y0, (gw0, ..), (hw0, _, hb0, _)) =
            hvp!(weighted(&w, Const(&x), 0.4, 3), (&[1.0, 0.0, 0.0], NoTangent, 1.0, NoTangent));
        assert_eq!((y, gw, gx, hw, *hb), (y0, &gw0, NoTangent, &hw0, hb0));
    }
}

#[test]
fn prepared_hessians_match_the_plain_form() {
    let x = vec![-1.2, 1.0, 0.5, 0.8];
    let mut cache = HvpCache::new();
    for a in [0.8, 1.3] {
        let (y0, g0, h0) = hessian!(calls(&x, a));
        let (y, g, h) = hessian!(calls(&x, a), cache = &mut cache);
        assert_eq!((y, g, h), (y0, &g0[..], &h0));
    }
    // Arrays by value and by reference, and nothing to differentiate.
    let (p, q) = ([0.3, -0.8, 0.5], [1.2, 0.4, -0.6]);
    let mut c2 = HvpCache::new();
    let (y0, g0, h0) = hessian!(array_arg(p, &q));
    let (y, g, h) = hessian!(array_arg(p, &q), cache = &mut c2);
    assert_eq!((y, g, h), (y0, &g0[..], &h0));
    let mut c3 = HvpCache::new();
    let (y, g, h) = hessian!(single(Const(1.3)), cache = &mut c3);
    assert_eq!((y, g.len(), h.shape()), (single(1.3), 0, (0, 0)));
}

#[test]
#[should_panic(
    expected = "argument 1 of `rosenbrock` is a buffer of length 3, where the cache was prepared for length 4"
)]
fn a_prepared_product_at_another_size_is_refused() {
    let mut cache = HvpCache::new();
    let (x4, x3) = (vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 2.0, 3.0]);
    let _ = hvp!(rosenbrock(&x4), (&[1.0, 0.0, 0.0, 0.0],), cache = &mut cache);
    let _ = hvp!(rosenbrock(&x3), (&[1.0, 0.0, 0.0],), cache = &mut cache);
}

#[test]
#[should_panic(
    expected = "the direction of argument 1 of `rosenbrock` has 2 components, the argument 3"
)]
fn a_direction_of_the_wrong_length_is_refused() {
    let _ = hvp!(rosenbrock(&[1.0, 2.0, 3.0]), (&[1.0, 0.0],));
}
