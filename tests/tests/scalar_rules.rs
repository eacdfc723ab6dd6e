//! Tests of the scalar primitive rules, `mooncake_runtime::rules::scalar`.
//!
//! Two independent lines of evidence, for `f64` and `f32`:
//!
//! * **Direct tests** call each `*_frule` / `*_rrule` and compare its primal with the `std`
//!   method, and its tangent and gradient with an analytic derivative written here, in textbook
//!   form, independently of the rule's (and itself checked against a finite difference computed
//!   here), at fixed inputs (zero, negative, large) and at random ones (proptest). Every
//!   documented choice at a kink or a jump has its own test.
//! * **`test_rule!`** checks every rule against finite differences, forward against reverse,
//!   and the restoration of `&mut` state, for both precisions.

use mooncake_runtime::Float;
use mooncake_runtime::prelude::*;
use mooncake_runtime::rules::scalar::*;
use mooncake_runtime::test_utils::Check;
use proptest::prelude::*;

// =============================================================================================
// Helpers.

/// `|a - b| <= atol + rtol * max(|a|, |b|)`; equal infinities and two NaNs are close.
fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    (a - b).abs() <= atol + rtol * a.abs().max(b.abs())
}

#[track_caller]
fn assert_close(what: &str, got: f64, want: f64, rtol: f64, atol: f64) {
    assert!(
        close(got, want, rtol, atol),
        "{what}: got {got:e}, want {want:e} (rtol {rtol:e}, atol {atol:e})"
    );
}

/// Equal, or both NaN: the primal of a rule must be the primal function's, bit for bit.
#[track_caller]
fn assert_same<T: Float>(what: &str, got: T, want: T) {
    assert!(got == want || (got.is_nan() && want.is_nan()), "{what}: primal {got} != {want}");
}

/// The step of the central differences at `x`: relative for small `|x|`, absolute beyond 1.
fn step_scale(x: f64) -> f64 {
    if x == 0.0 { 1.0 } else { x.abs().min(1.0) }
}

/// The step of the `f64` differences at `x`: `H64` on the scale of `x`, and at least a thousand
/// ulps of `x`.
fn step64(x: f64) -> f64 {
    (H64 * step_scale(x)).max(1024.0 * EPS64 * x.abs())
}

/// The step of the `f32` differences at `x`.
fn step32(x: f64) -> f64 {
    (H32 * step_scale(x)).max(1024.0 * EPS32 * x.abs())
}

/// A central difference of `f` at `x` with step `h`, improved by one Richardson extrapolation
/// (error `O(h^4)`), in the precision of `T`.
fn central_difference<T: Float>(f: impl Fn(T) -> T, x: T, h: T) -> T {
    // The step actually taken, so that `x + h` is exact (no rounding error of the input).
    let h = (x + h) - x;
    let two = T::TWO;
    let d1 = (f(x + h) - f(x - h)) / (two * h);
    let d2 = (f(x + h / two) - f(x - h / two)) / h;
    (T::from_i32(4) * d2 - d1) / T::from_i32(3)
}

/// Relative step of the `f64` differences, and of the `f32` ones.
const H64: f64 = 1e-4;
const H32: f64 = 1.0 / 64.0;

/// `f64::EPSILON` and `f32::EPSILON` as `f64`.
const EPS64: f64 = f64::EPSILON;
const EPS32: f64 = f32::EPSILON as f64;

/// Whether an `f64` value is comfortably inside the range of `f32`, so that a derivative can be
/// compared in `f32`.
fn f32_representable(v: f64) -> bool {
    v == 0.0 || (v.abs() < 1e36 && v.abs() > 1e-30)
}

/// The proptest configuration: 64 cases, and no regression files written into the source tree.
fn config() -> ProptestConfig {
    ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() }
}

// =============================================================================================
// Unary rules: the table.

/// A unary rule under test, in both precisions, with an independent analytic derivative.
struct Unary {
    name: &'static str,
    p64: fn(f64) -> f64,
    p32: fn(f32) -> f32,
    /// The derivative, written here independently of the rule.
    deriv: fn(f64) -> f64,
    f64_frule: fn(Dual<f64, f64>) -> Dual<f64, f64>,
    /// `(x, ȳ) -> (y, x̄)`.
    f64_rrule: fn(f64, f64) -> (f64, f64),
    f32_frule: fn(Dual<f32, f32>) -> Dual<f32, f32>,
    f32_rrule: fn(f32, f32) -> (f32, f32),
    /// Fixed inputs (smooth points).
    points: &'static [f64],
    /// Random inputs are drawn from this interval.
    sample: (f64, f64),
    /// Whether finite differences over `[a, b]` stay on one smooth piece.
    fd_ok: fn(f64, f64) -> bool,
}

macro_rules! unary {
    ($frule:ident, $rrule:ident, |$x:ident| $primal:expr, d = $deriv:expr,
     points = $points:expr, sample = $sample:expr $(, fd_ok = $fd_ok:expr)? $(,)?) => {
        Unary {
            name: stringify!($frule),
            p64: |$x: f64| $primal,
            p32: |$x: f32| $primal,
            deriv: |$x: f64| {
                let _ = $x;
                $deriv
            },
            f64_frule: $frule::<f64, f64>,
            f64_rrule: |x, dy| {
                let (y, pb) = $rrule::<f64>(CoDual::new(x, NoFData));
                (y.primal, pb(dy).0)
            },
            f32_frule: $frule::<f32, f32>,
            f32_rrule: |x, dy| {
                let (y, pb) = $rrule::<f32>(CoDual::new(x, NoFData));
                (y.primal, pb(dy).0)
            },
            points: &$points,
            sample: $sample,
            fd_ok: unary!(@fd_ok $($fd_ok)?),
        }
    };
    (@fd_ok) => { |_, _| true };
    (@fd_ok $f:expr) => { $f };
}

fn unary_cases() -> Vec<Unary> {
    use std::f64::consts::{LN_2, LN_10, PI};
    vec![
        unary!(
            neg_frule,
            neg_rrule,
            |x| -x,
            d = -1.0,
            points = [0.0, 1.5, -2.25, 1e10],
            sample = (-100.0, 100.0)
        ),
        unary!(
            sin_frule,
            sin_rrule,
            |x| x.sin(),
            d = x.cos(),
            points = [0.0, 0.7, -2.3, 10.0, 1000.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            cos_frule,
            cos_rrule,
            |x| x.cos(),
            d = -x.sin(),
            points = [0.0, 0.7, -2.3, 10.0, 1000.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            tan_frule,
            tan_rrule,
            |x| x.tan(),
            d = 1.0 / (x.cos() * x.cos()),
            points = [0.0, 0.7, -1.2, 3.0],
            sample = (-1.4, 1.4)
        ),
        unary!(
            asin_frule,
            asin_rrule,
            |x| x.asin(),
            d = 1.0 / (1.0 - x * x).sqrt(),
            points = [0.0, 0.5, -0.9, 0.99],
            sample = (-0.98, 0.98),
            fd_ok = |a, b| a > -1.0 && b < 1.0
        ),
        unary!(
            acos_frule,
            acos_rrule,
            |x| x.acos(),
            d = -1.0 / (1.0 - x * x).sqrt(),
            points = [0.0, 0.5, -0.9, 0.99],
            sample = (-0.98, 0.98),
            fd_ok = |a, b| a > -1.0 && b < 1.0
        ),
        unary!(
            atan_frule,
            atan_rrule,
            |x| x.atan(),
            d = 1.0 / (1.0 + x * x),
            points = [0.0, 0.5, -3.0, 1e3, 1e10],
            sample = (-20.0, 20.0)
        ),
        unary!(
            sinh_frule,
            sinh_rrule,
            |x| x.sinh(),
            d = (x.exp() + (-x).exp()) / 2.0,
            points = [0.0, 0.5, -3.0, 20.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            cosh_frule,
            cosh_rrule,
            |x| x.cosh(),
            d = (x.exp() - (-x).exp()) / 2.0,
            points = [0.0, 0.5, -3.0, 20.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            tanh_frule,
            tanh_rrule,
            |x| x.tanh(),
            d = 4.0 / (x.exp() + (-x).exp()).powi(2),
            points = [0.0, 0.5, -3.0, 15.0, -300.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            asinh_frule,
            asinh_rrule,
            |x| x.asinh(),
            d = 1.0 / (x * x + 1.0).sqrt(),
            points = [0.0, 0.5, -3.0, 1e3],
            sample = (-20.0, 20.0)
        ),
        unary!(
            acosh_frule,
            acosh_rrule,
            |x| x.acosh(),
            d = 1.0 / (x * x - 1.0).sqrt(),
            points = [1.5, 3.0, 1e3],
            sample = (1.05, 20.0),
            fd_ok = |a, _| a > 1.0
        ),
        unary!(
            atanh_frule,
            atanh_rrule,
            |x| x.atanh(),
            d = 1.0 / (1.0 - x * x),
            points = [0.0, 0.5, -0.9],
            sample = (-0.98, 0.98),
            fd_ok = |a, b| a > -1.0 && b < 1.0
        ),
        unary!(
            exp_frule,
            exp_rrule,
            |x| x.exp(),
            d = x.exp(),
            points = [0.0, 1.0, -3.0, 50.0, 700.0],
            sample = (-20.0, 20.0)
        ),
        unary!(
            exp2_frule,
            exp2_rrule,
            |x| x.exp2(),
            d = 2.0_f64.powf(x) * LN_2,
            points = [0.0, 1.0, -3.5, 50.0],
            sample = (-20.0, 20.0)
        ),
        unary!(
            exp_m1_frule,
            exp_m1_rrule,
            |x| x.exp_m1(),
            d = x.exp(),
            points = [0.0, 1e-10, -3.0, -40.0, 10.0],
            sample = (-20.0, 20.0)
        ),
        unary!(
            ln_frule,
            ln_rrule,
            |x| x.ln(),
            d = 1.0 / x,
            points = [0.1, 1.0, 7.5, 1e10, 1e-10],
            sample = (0.01, 100.0),
            fd_ok = |a, _| a > 0.0
        ),
        unary!(
            ln_1p_frule,
            ln_1p_rrule,
            |x| x.ln_1p(),
            d = 1.0 / (1.0 + x),
            points = [0.0, 1e-10, -0.5, 3.0],
            sample = (-0.9, 10.0),
            fd_ok = |a, _| a > -1.0
        ),
        unary!(
            log2_frule,
            log2_rrule,
            |x| x.log2(),
            d = 1.0 / (x * LN_2),
            points = [0.1, 1.0, 7.5, 1024.0],
            sample = (0.01, 100.0),
            fd_ok = |a, _| a > 0.0
        ),
        unary!(
            log10_frule,
            log10_rrule,
            |x| x.log10(),
            d = 1.0 / (x * LN_10),
            points = [0.1, 1.0, 7.5, 1e10],
            sample = (0.01, 100.0),
            fd_ok = |a, _| a > 0.0
        ),
        unary!(
            sqrt_frule,
            sqrt_rrule,
            |x| x.sqrt(),
            d = 0.5 * x.powf(-0.5),
            points = [0.25, 2.0, 1e10, 1e-10],
            sample = (0.01, 100.0),
            fd_ok = |a, _| a > 0.0
        ),
        unary!(
            cbrt_frule,
            cbrt_rrule,
            |x| x.cbrt(),
            d = x.abs().powf(-2.0 / 3.0) / 3.0,
            points = [0.125, -8.0, 2.0, 1e9, -1e-9],
            sample = (0.05, 30.0),
            fd_ok = |a, b| a > 0.0 || b < 0.0
        ),
        unary!(
            abs_frule,
            abs_rrule,
            |x| x.abs(),
            d = if x > 0.0 { 1.0 } else { -1.0 },
            points = [1.5, -2.0, 1e-300, -1e300, -1e-3],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a > 0.0 || b < 0.0
        ),
        unary!(
            recip_frule,
            recip_rrule,
            |x| x.recip(),
            d = -1.0 / (x * x),
            points = [0.5, -2.0, 1e-10, 1e100],
            sample = (0.05, 20.0),
            fd_ok = |a, b| a > 0.0 || b < 0.0
        ),
        unary!(
            to_degrees_frule,
            to_degrees_rrule,
            |x| x.to_degrees(),
            d = 180.0 / PI,
            points = [0.0, 1.0, -2.0],
            sample = (-10.0, 10.0)
        ),
        unary!(
            to_radians_frule,
            to_radians_rrule,
            |x| x.to_radians(),
            d = PI / 180.0,
            points = [0.0, 90.0, -720.0],
            sample = (-400.0, 400.0)
        ),
        unary!(
            fract_frule,
            fract_rrule,
            |x| x.fract(),
            d = 1.0,
            points = [1.3, -2.7, 0.2, 1e5 + 0.25],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.trunc() == b.trunc() && a.signum() == b.signum()
        ),
        unary!(
            signum_frule,
            signum_rrule,
            |x| x.signum(),
            d = 0.0,
            points = [1.5, -2.0, 1e-300],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.signum() == b.signum()
        ),
        unary!(
            floor_frule,
            floor_rrule,
            |x| x.floor(),
            d = 0.0,
            points = [1.3, -2.7, 0.2],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.floor() == b.floor()
        ),
        unary!(
            ceil_frule,
            ceil_rrule,
            |x| x.ceil(),
            d = 0.0,
            points = [1.3, -2.7, 0.2],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.ceil() == b.ceil()
        ),
        unary!(
            round_frule,
            round_rrule,
            |x| x.round(),
            d = 0.0,
            points = [1.3, -2.7, 0.2],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.round() == b.round()
        ),
        unary!(
            trunc_frule,
            trunc_rrule,
            |x| x.trunc(),
            d = 0.0,
            points = [1.3, -2.7, 0.2],
            sample = (-10.0, 10.0),
            fd_ok = |a, b| a.trunc() == b.trunc() && a.signum() == b.signum()
        ),
    ]
}

/// Checks one unary rule at `x` in `f64`: primal, forward tangent and reverse gradient against
/// the analytic derivative, and the analytic derivative against finite differences.
fn check_unary_f64(c: &Unary, x: f64, tx: f64, dy: f64) {
    let name = c.name;
    let want = (c.deriv)(x);
    let y = (c.p64)(x);

    let fwd = (c.f64_frule)(Dual::new(x, tx));
    assert_same(&format!("{name}({x:e}) forward"), fwd.primal, y);
    assert_close(&format!("{name}({x:e}) tangent"), fwd.tangent, want * tx, 1e-10, 1e-300);

    let (yr, dx) = (c.f64_rrule)(x, dy);
    assert_same(&format!("{name}({x:e}) reverse"), yr, y);
    assert_close(&format!("{name}({x:e}) gradient"), dx, want * dy, 1e-10, 1e-300);

    // The analytic derivative itself, against a central difference (rounding error allowed
    // for: about eps |f| / h).
    let h = step64(x);
    if (c.fd_ok)(x - 2.0 * h, x + 2.0 * h) {
        let fd = central_difference(c.p64, x, h);
        let atol = 1e3 * EPS64 * y.abs().max(f64::MIN_POSITIVE) / h;
        assert_close(
            &format!("{name}({x:e}) analytic derivative vs finite differences"),
            want,
            fd,
            1e-6,
            atol,
        );
        assert_close(
            &format!("{name}({x:e}) rule vs finite differences"),
            fwd.tangent,
            fd * tx,
            1e-6,
            atol * tx.abs(),
        );
    }
}

/// Checks one unary rule at `x` (rounded to `f32`) in `f32`, against the `f64` analytic
/// derivative at the same point and against `f32` finite differences.
fn check_unary_f32(c: &Unary, x: f64, tx: f64, dy: f64) {
    let name = c.name;
    let x32 = x as f32;
    let xr = x32 as f64;
    let want = (c.deriv)(xr);
    let y = (c.p32)(x32);
    if !y.is_finite()
        || (x == 0.0) != (xr == 0.0)
        || !f32_representable(xr)
        || !f32_representable(want * tx)
        || !f32_representable(want * dy)
    {
        return;
    }
    let (tx32, dy32) = (tx as f32, dy as f32);

    let fwd = (c.f32_frule)(Dual::new(x32, tx32));
    assert_same(&format!("{name}({x32:e}_f32) forward"), fwd.primal, y);
    assert_close(
        &format!("{name}({x32:e}_f32) tangent"),
        fwd.tangent as f64,
        want * tx32 as f64,
        3e-5,
        1e-30,
    );

    let (yr, dx) = (c.f32_rrule)(x32, dy32);
    assert_same(&format!("{name}({x32:e}_f32) reverse"), yr, y);
    assert_close(
        &format!("{name}({x32:e}_f32) gradient"),
        dx as f64,
        want * dy32 as f64,
        3e-5,
        1e-30,
    );

    let h = step32(xr);
    if (c.fd_ok)(xr - 2.0 * h, xr + 2.0 * h) {
        let fd = central_difference(c.p32, x32, h as f32) as f64;
        let atol = 30.0 * EPS32 * (y.abs() as f64) / h;
        assert_close(
            &format!("{name}({x32:e}_f32) rule vs f32 finite differences"),
            fwd.tangent as f64,
            fd * tx32 as f64,
            1e-2,
            atol * tx.abs(),
        );
    }
}

#[test]
fn unary_rules_at_fixed_points() {
    let cases = unary_cases();
    assert_eq!(cases.len(), 32);
    for c in &cases {
        for &x in c.points {
            for (tx, dy) in [(1.0, 1.0), (-0.37, 2.5)] {
                check_unary_f64(c, x, tx, dy);
                check_unary_f32(c, x, tx, dy);
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn unary_rules_at_random_points(u in 0.0..1.0_f64, tx in -2.0..2.0_f64, dy in -2.0..2.0_f64) {
        for c in &unary_cases() {
            let (lo, hi) = c.sample;
            let x = lo + u * (hi - lo);
            check_unary_f64(c, x, tx, dy);
            check_unary_f32(c, x, tx, dy);
        }
    }
}

// =============================================================================================
// Unary rules: large and tiny inputs, where a careless formula overflows or cancels.

#[test]
fn unary_rules_keep_accuracy_at_extreme_inputs() {
    // tanh'(x) = sech(x)^2 ~ 4 e^{-2|x|}: `1 - tanh^2` would round to 0 here.
    let d = tanh_frule(Dual::new(20.0_f64, 1.0)).tangent;
    assert_close("tanh'(20)", d, 4.0 * (-40.0_f64).exp(), 1e-10, 0.0);
    // asinh'(x) = 1/sqrt(x^2 + 1) ~ 1/x: `x^2` overflows at 1e200.
    let d = asinh_frule(Dual::new(1e200_f64, 1.0)).tangent;
    assert_close("asinh'(1e200)", d, 1e-200, 1e-12, 0.0);
    let d = asinh_frule(Dual::new(1e30_f32, 1.0)).tangent;
    assert_close("asinh'(1e30_f32)", d as f64, 1e-30, 1e-5, 0.0);
    // acosh'(x) ~ 1/x at 1e200, and accurate near 1: 1/sqrt(x^2 - 1) = 1/sqrt((x-1)(x+1)).
    let d = acosh_frule(Dual::new(1e200_f64, 1.0)).tangent;
    assert_close("acosh'(1e200)", d, 1e-200, 1e-12, 0.0);
    let x = 1.0 + 1e-12_f64;
    let d = acosh_frule(Dual::new(x, 1.0)).tangent;
    assert_close("acosh'(1 + 1e-12)", d, 1.0 / ((x - 1.0) * (x + 1.0)).sqrt(), 1e-10, 0.0);
    // asin near 1: 1/sqrt((1-x)(1+x)).
    let x = 1.0 - 1e-12_f64;
    let d = asin_frule(Dual::new(x, 1.0)).tangent;
    assert_close("asin'(1 - 1e-12)", d, 1.0 / ((1.0 - x) * (1.0 + x)).sqrt(), 1e-10, 0.0);
    // exp_m1'(x) = e^x, not exp_m1(x) + 1 (which is 0 or eps-coarse for very negative x).
    let (_, pb) = exp_m1_rrule(CoDual::new(-50.0_f64, NoFData));
    assert_close("exp_m1'(-50)", pb(1.0).0, (-50.0_f64).exp(), 1e-12, 0.0);
    // atan at huge x.
    let d = atan_frule(Dual::new(-1e200_f64, 1.0)).tangent;
    assert_close("atan'(-1e200)", d, 0.0, 0.0, 1e-300);
    // recip at 0: -1/x^2 = -inf.
    assert_eq!(recip_frule(Dual::new(0.0_f64, 1.0)).tangent, f64::NEG_INFINITY);
    // exp at 700 (large but finite).
    let d = exp_frule(Dual::new(700.0_f64, 1.0)).tangent;
    assert_close("exp'(700)", d, 700.0_f64.exp(), 1e-15, 0.0);
}

// =============================================================================================
// Unary rules: the documented choices where the derivative is not defined.

#[test]
fn abs_has_derivative_zero_at_zero() {
    for x in [0.0_f64, -0.0] {
        let y = abs_frule(Dual::new(x, 1.0));
        assert_eq!((y.primal, y.tangent), (0.0, 0.0));
        let (y, pb) = abs_rrule(CoDual::new(x, NoFData));
        assert_eq!((y.primal, pb(3.0).0), (0.0, 0.0));
        let y = abs_frule(Dual::new(x as f32, 1.0));
        assert_eq!((y.primal, y.tangent), (0.0, 0.0));
        let (_, pb) = abs_rrule(CoDual::new(x as f32, NoFData));
        assert_eq!(pb(3.0).0, 0.0);
    }
    // Not `signum`, which is 1 at +0 and -1 at -0; and +-1 just beside zero.
    assert_eq!(abs_frule(Dual::new(1e-300_f64, 2.0)).tangent, 2.0);
    assert_eq!(abs_frule(Dual::new(-1e-300_f64, 2.0)).tangent, -2.0);
    assert_eq!(abs_frule(Dual::new(-1e-30_f32, 2.0)).tangent, -2.0);
    // NaN propagates.
    assert!(abs_frule(Dual::new(f64::NAN, 1.0)).tangent.is_nan());
}

#[test]
fn piecewise_constant_rules_give_an_exact_zero_everywhere() {
    type R = fn(Dual<f64, f64>) -> Dual<f64, f64>;
    type P = fn(f64) -> f64;
    let rules: [(&str, R, P); 5] = [
        ("signum", signum_frule, f64::signum),
        ("floor", floor_frule, f64::floor),
        ("ceil", ceil_frule, f64::ceil),
        ("round", round_frule, f64::round),
        ("trunc", trunc_frule, f64::trunc),
    ];
    // Including the jumps (0 for signum, integers, half-integers), and with an infinite tangent
    // (an exact 0, not 0 * inf = NaN).
    for (name, frule, primal) in rules {
        for x in [0.0, -0.0, 1.0, -3.0, 2.5, -0.5, 0.3, 1e20] {
            for t in [1.0, -7.0, f64::INFINITY] {
                let y = frule(Dual::new(x, t));
                assert_same(name, y.primal, primal(x));
                assert!(y.tangent == 0.0, "{name}'({x}) with tangent {t} = {}", y.tangent);
            }
        }
    }
    let (y, pb) = signum_rrule(CoDual::new(0.0_f64, NoFData));
    assert_eq!((y.primal, pb(f64::INFINITY).0), (1.0, 0.0));
    let (y, pb) = floor_rrule(CoDual::new(2.0_f32, NoFData));
    assert_eq!((y.primal, pb(5.0).0), (2.0, 0.0));
    let (y, pb) = round_rrule(CoDual::new(-0.5_f32, NoFData));
    assert_eq!((y.primal, pb(5.0).0), (-1.0, 0.0));
    let (_, pb) = ceil_rrule(CoDual::new(-3.0_f64, NoFData));
    assert_eq!(pb(5.0).0, 0.0);
    let (_, pb) = trunc_rrule(CoDual::new(7.0_f64, NoFData));
    assert_eq!(pb(5.0).0, 0.0);
}

#[test]
fn fract_has_derivative_one_also_at_its_jumps() {
    for x in [3.0_f64, -2.0, 0.0, 2.5, -0.75] {
        let y = fract_frule(Dual::new(x, 1.5));
        assert_same("fract", y.primal, x.fract());
        assert_eq!(y.tangent, 1.5, "fract'({x})");
        let (_, pb) = fract_rrule(CoDual::new(x as f32, NoFData));
        assert_eq!(pb(2.0).0, 2.0, "fract'({x}_f32)");
    }
    // The one-sided difference from the side fract is continuous on, at an integer: slope 1.
    let h = 1e-6;
    assert_close("fract right difference at 3", (3.0_f64 + h).fract() / h, 1.0, 1e-6, 0.0);
}

#[test]
fn sqrt_and_cbrt_have_infinite_derivative_at_zero() {
    let y = sqrt_frule(Dual::new(0.0_f64, 1.0));
    assert_eq!((y.primal, y.tangent), (0.0, f64::INFINITY));
    let (_, pb) = sqrt_rrule(CoDual::new(0.0_f32, NoFData));
    assert_eq!(pb(1.0).0, f32::INFINITY);
    // Guarded: a zero tangent (a constant) or a zero cotangent stays an exact 0, not 0 * inf.
    assert_eq!(sqrt_frule(Dual::new(0.0_f64, 0.0)).tangent, 0.0);
    let (_, pb) = sqrt_rrule(CoDual::new(0.0_f64, NoFData));
    assert_eq!(pb(0.0).0, 0.0);
    assert_eq!(cbrt_frule(Dual::new(0.0_f32, 0.0)).tangent, 0.0);
    assert_eq!(asin_frule(Dual::new(1.0_f64, 0.0)).tangent, 0.0);
    let (_, pb) = acos_rrule(CoDual::new(-1.0_f32, NoFData));
    assert_eq!(pb(0.0).0, 0.0);
    assert_eq!(acosh_frule(Dual::new(1.0_f64, 0.0)).tangent, 0.0);
    // And a negative tangent gives -inf.
    assert_eq!(sqrt_frule(Dual::new(0.0_f64, -1.0)).tangent, f64::NEG_INFINITY);
    let y = cbrt_frule(Dual::new(0.0_f64, 1.0));
    assert_eq!((y.primal, y.tangent), (0.0, f64::INFINITY));
    let (_, pb) = cbrt_rrule(CoDual::new(0.0_f32, NoFData));
    assert_eq!(pb(2.0).0, f32::INFINITY);
    // Just beside zero the derivative is large and finite, matching the formula.
    let d = sqrt_frule(Dual::new(1e-300_f64, 1.0)).tangent;
    assert_close("sqrt'(1e-300)", d, 0.5e150, 1e-12, 0.0);
    // Domain boundaries of the inverse functions.
    assert_eq!(asin_frule(Dual::new(1.0_f64, 1.0)).tangent, f64::INFINITY);
    assert_eq!(acos_frule(Dual::new(-1.0_f64, 1.0)).tangent, f64::NEG_INFINITY);
    assert_eq!(atanh_frule(Dual::new(1.0_f64, 1.0)).tangent, f64::INFINITY);
    assert_eq!(acosh_frule(Dual::new(1.0_f64, 1.0)).tangent, f64::INFINITY);
    assert_eq!(ln_frule(Dual::new(0.0_f64, 1.0)).tangent, f64::INFINITY);
}

#[test]
fn sin_cos_matches_sin_and_cos() {
    for x in [0.0_f64, 0.7, -2.3, 100.0] {
        let y = sin_cos_frule(Dual::new(x, 0.5));
        assert_eq!(y.primal, x.sin_cos());
        assert_close("sin' in sin_cos", y.tangent.0, 0.5 * x.cos(), 1e-14, 1e-300);
        assert_close("cos' in sin_cos", y.tangent.1, -0.5 * x.sin(), 1e-14, 1e-300);
        let (y, pb) = sin_cos_rrule(CoDual::new(x, NoFData));
        assert_eq!(y.primal, x.sin_cos());
        // <(s̄, c̄), J> = s̄ cos x - c̄ sin x.
        assert_close(
            "sin_cos gradient",
            pb((2.0, -3.0)).0,
            2.0 * x.cos() + 3.0 * x.sin(),
            1e-14,
            1e-14,
        );
        let (y, pb) = sin_cos_rrule(CoDual::new(x as f32, NoFData));
        assert_eq!(y.primal, (x as f32).sin_cos());
        let xr = x as f32 as f64;
        assert_close(
            "sin_cos gradient f32",
            pb((2.0, -3.0)).0 as f64,
            2.0 * xr.cos() + 3.0 * xr.sin(),
            1e-5,
            1e-6,
        );
    }
}

// =============================================================================================
// Binary rules: the table.

/// A binary forward rule at one precision.
type BinaryFrule<T> = fn(Dual<T, T>, Dual<T, T>) -> Dual<T, T>;

struct Binary {
    name: &'static str,
    p64: fn(f64, f64) -> f64,
    p32: fn(f32, f32) -> f32,
    /// `(dy/da, dy/db)`, written here independently of the rule.
    deriv: fn(f64, f64) -> (f64, f64),
    f64_frule: BinaryFrule<f64>,
    /// `(a, b, ȳ) -> (y, ā, b̄)`.
    f64_rrule: fn(f64, f64, f64) -> (f64, f64, f64),
    f32_frule: BinaryFrule<f32>,
    f32_rrule: fn(f32, f32, f32) -> (f32, f32, f32),
    points: &'static [(f64, f64)],
    sample: ((f64, f64), (f64, f64)),
    /// Whether `(a, b)` is in the open set where the function is smooth, away from its jumps.
    fd_ok: fn(f64, f64) -> bool,
    /// Which smooth piece `(a, b)` is on, for functions with jumps.
    piece: fn(f64, f64) -> f64,
}

/// Whether central differences at `(a, b)` with steps `(±2 ha, ±2 hb)` stay on one smooth piece.
fn binary_fd_ok(c: &Binary, a: f64, b: f64, ha: f64, hb: f64) -> bool {
    let points =
        [(a, b), (a - 2.0 * ha, b), (a + 2.0 * ha, b), (a, b - 2.0 * hb), (a, b + 2.0 * hb)];
    let piece = (c.piece)(a, b);
    points.iter().all(|&(a, b)| (c.fd_ok)(a, b) && (c.piece)(a, b) == piece)
}

macro_rules! binary {
    ($frule:ident, $rrule:ident, |$a:ident, $b:ident| $primal:expr, d = $deriv:expr,
     points = $points:expr, sample = $sample:expr $(, fd_ok = $fd_ok:expr)?
     $(, piece = $piece:expr)? $(,)?) => {
        Binary {
            name: stringify!($frule),
            p64: |$a: f64, $b: f64| $primal,
            p32: |$a: f32, $b: f32| $primal,
            deriv: |$a: f64, $b: f64| {
                let _ = ($a, $b);
                $deriv
            },
            f64_frule: $frule::<f64, f64>,
            f64_rrule: |a, b, dy| {
                let (y, pb) = $rrule::<f64>(CoDual::new(a, NoFData), CoDual::new(b, NoFData));
                let (da, db) = pb(dy);
                (y.primal, da, db)
            },
            f32_frule: $frule::<f32, f32>,
            f32_rrule: |a, b, dy| {
                let (y, pb) = $rrule::<f32>(CoDual::new(a, NoFData), CoDual::new(b, NoFData));
                let (da, db) = pb(dy);
                (y.primal, da, db)
            },
            points: &$points,
            sample: $sample,
            fd_ok: binary!(@fd_ok $($fd_ok)?),
            piece: binary!(@piece $($piece)?),
        }
    };
    (@fd_ok) => { |_, _| true };
    (@fd_ok $f:expr) => { $f };
    (@piece) => { |_, _| 0.0 };
    (@piece $f:expr) => { $f };
}

fn binary_cases() -> Vec<Binary> {
    vec![
        binary!(
            add_frule,
            add_rrule,
            |a, b| a + b,
            d = (1.0, 1.0),
            points = [(1.5, -2.25), (0.0, 0.0), (1e10, 3.0)],
            sample = ((-10.0, 10.0), (-10.0, 10.0))
        ),
        binary!(
            sub_frule,
            sub_rrule,
            |a, b| a - b,
            d = (1.0, -1.0),
            points = [(1.5, -2.25), (0.0, 0.0), (1e10, 3.0)],
            sample = ((-10.0, 10.0), (-10.0, 10.0))
        ),
        binary!(
            mul_frule,
            mul_rrule,
            |a, b| a * b,
            d = (b, a),
            points = [(1.5, -2.25), (0.0, 3.0), (-4.0, 0.0), (1e10, 1e-10)],
            sample = ((-10.0, 10.0), (-10.0, 10.0))
        ),
        binary!(
            div_frule,
            div_rrule,
            |a, b| a / b,
            d = (1.0 / b, -a / (b * b)),
            points = [(1.5, -2.25), (0.0, 3.0), (7.0, 1e-3), (-1e10, 4.0)],
            sample = ((-10.0, 10.0), (0.1, 10.0)),
            fd_ok = |_, b| b.abs() > 1e-2
        ),
        binary!(
            rem_frule,
            rem_rrule,
            |a, b| a % b,
            d = (1.0, -(a / b).trunc()),
            points =
                [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (0.3, 5.0), (10.0, 3.0), (1e6 + 0.5, 7.0)],
            sample = ((-20.0, 20.0), (0.5, 5.0)),
            fd_ok = |a, b| {
                let f = (a / b).fract().abs();
                f > 0.05 && f < 0.95
            },
            piece = |a, b| (a / b).trunc()
        ),
        binary!(
            atan2_frule,
            atan2_rrule,
            |a, b| a.atan2(b),
            d = (b / (a * a + b * b), -a / (a * a + b * b)),
            points = [(1.0, 1.0), (-0.5, 2.0), (3.0, -4.0), (1e-3, -1.0), (0.0, 2.0)],
            sample = ((-5.0, 5.0), (0.1, 5.0))
        ),
        binary!(
            hypot_frule,
            hypot_rrule,
            |a, b| a.hypot(b),
            d = (a / (a * a + b * b).sqrt(), b / (a * a + b * b).sqrt()),
            points = [(3.0, 4.0), (-1.0, 0.5), (0.0, -2.0), (1e-3, 1e3)],
            sample = ((0.1, 5.0), (-5.0, 5.0))
        ),
        binary!(
            powf_frule,
            powf_rrule,
            |a, b| a.powf(b),
            d = (b * a.powf(b - 1.0), a.powf(b) * a.abs().ln()),
            points = [
                (1.5, 2.5),
                (0.3, -1.2),
                (2.0, 0.5),
                (-2.0, 3.0),
                (-1.5, -2.0),
                (7.0, 1.0),
                (3.0, 0.0)
            ],
            sample = ((0.1, 4.0), (-3.0, 3.0)),
            fd_ok = |a, _| a > 0.0
        ),
        binary!(
            log_frule,
            log_rrule,
            |a, b| a.log(b),
            d = (1.0 / (a * b.ln()), -a.ln() / (b * b.ln() * b.ln())),
            points = [(8.0, 2.0), (0.5, 10.0), (100.0, 0.5), (1.0, 3.0)],
            sample = ((0.1, 10.0), (1.5, 10.0)),
            fd_ok = |a, b| a > 0.0 && b > 0.0
        ),
        binary!(
            min_frule,
            min_rrule,
            |a, b| a.min(b),
            d = if a < b { (1.0, 0.0) } else { (0.0, 1.0) },
            points = [(1.0, 2.0), (2.0, 1.0), (-3.0, 0.5)],
            sample = ((-5.0, 5.0), (-5.0, 5.0)),
            fd_ok = |a, b| (a - b).abs() > 0.1,
            piece = |a, b| (a - b).signum()
        ),
        binary!(
            max_frule,
            max_rrule,
            |a, b| a.max(b),
            d = if a > b { (1.0, 0.0) } else { (0.0, 1.0) },
            points = [(1.0, 2.0), (2.0, 1.0), (-3.0, 0.5)],
            sample = ((-5.0, 5.0), (-5.0, 5.0)),
            fd_ok = |a, b| (a - b).abs() > 0.1,
            piece = |a, b| (a - b).signum()
        ),
    ]
}

fn check_binary_f64(c: &Binary, a: f64, b: f64, ta: f64, tb: f64, dy: f64) {
    let name = c.name;
    let (da, db) = (c.deriv)(a, b);
    let y = (c.p64)(a, b);
    let what = format!("{name}({a:e}, {b:e})");

    let fwd = (c.f64_frule)(Dual::new(a, ta), Dual::new(b, tb));
    assert_same(&format!("{what} forward"), fwd.primal, y);
    let want = da * ta + db * tb;
    let scale = (da * ta).abs() + (db * tb).abs();
    assert_close(&format!("{what} tangent"), fwd.tangent, want, 1e-10, 1e-12 * scale);

    let (yr, ga, gb) = (c.f64_rrule)(a, b, dy);
    assert_same(&format!("{what} reverse"), yr, y);
    assert_close(&format!("{what} gradient a"), ga, da * dy, 1e-10, 1e-300);
    assert_close(&format!("{what} gradient b"), gb, db * dy, 1e-10, 1e-300);

    let (ha, hb) = (step64(a), step64(b));
    if binary_fd_ok(c, a, b, ha, hb) {
        let atol_a = 1e3 * EPS64 * y.abs().max(f64::MIN_POSITIVE) / ha;
        let atol_b = 1e3 * EPS64 * y.abs().max(f64::MIN_POSITIVE) / hb;
        let fd_a = central_difference(|s| (c.p64)(s, b), a, ha);
        let fd_b = central_difference(|s| (c.p64)(a, s), b, hb);
        assert_close(&format!("{what} d/da vs finite differences"), da, fd_a, 1e-6, atol_a);
        assert_close(&format!("{what} d/db vs finite differences"), db, fd_b, 1e-6, atol_b);
        assert_close(
            &format!("{what} rule gradient a vs finite differences"),
            ga,
            fd_a * dy,
            1e-6,
            atol_a * dy.abs(),
        );
        assert_close(
            &format!("{what} rule gradient b vs finite differences"),
            gb,
            fd_b * dy,
            1e-6,
            atol_b * dy.abs(),
        );
    }
}

fn check_binary_f32(c: &Binary, a: f64, b: f64, ta: f64, tb: f64, dy: f64) {
    let name = c.name;
    let (a32, b32) = (a as f32, b as f32);
    let (ar, br) = (a32 as f64, b32 as f64);
    let (da, db) = (c.deriv)(ar, br);
    let y = (c.p32)(a32, b32);
    if !y.is_finite()
        || ![ar, br, da * ta, db * tb, da * dy, db * dy].iter().all(|&v| f32_representable(v))
    {
        return;
    }
    let what = format!("{name}({a32:e}_f32, {b32:e}_f32)");
    let (ta, tb, dy) = (ta as f32, tb as f32, dy as f32);

    let fwd = (c.f32_frule)(Dual::new(a32, ta), Dual::new(b32, tb));
    assert_same(&format!("{what} forward"), fwd.primal, y);
    let want = da * ta as f64 + db * tb as f64;
    let scale = (da * ta as f64).abs() + (db * tb as f64).abs();
    assert_close(&format!("{what} tangent"), fwd.tangent as f64, want, 3e-5, 3e-6 * scale);

    let (yr, ga, gb) = (c.f32_rrule)(a32, b32, dy);
    assert_same(&format!("{what} reverse"), yr, y);
    assert_close(&format!("{what} gradient a"), ga as f64, da * dy as f64, 3e-5, 1e-30);
    assert_close(&format!("{what} gradient b"), gb as f64, db * dy as f64, 3e-5, 1e-30);

    let (ha, hb) = (step32(ar), step32(br));
    if binary_fd_ok(c, ar, br, ha, hb) {
        let fd_a = central_difference(|s| (c.p32)(s, b32), a32, ha as f32) as f64;
        let fd_b = central_difference(|s| (c.p32)(a32, s), b32, hb as f32) as f64;
        let atol_a = 30.0 * EPS32 * (y.abs() as f64) / ha;
        let atol_b = 30.0 * EPS32 * (y.abs() as f64) / hb;
        assert_close(
            &format!("{what} gradient a vs f32 finite differences"),
            ga as f64,
            fd_a * dy as f64,
            1e-2,
            atol_a * (dy as f64).abs(),
        );
        assert_close(
            &format!("{what} gradient b vs f32 finite differences"),
            gb as f64,
            fd_b * dy as f64,
            1e-2,
            atol_b * (dy as f64).abs(),
        );
    }
}

#[test]
fn binary_rules_at_fixed_points() {
    let cases = binary_cases();
    assert_eq!(cases.len(), 11);
    for c in &cases {
        for &(a, b) in c.points {
            for (ta, tb, dy) in [(1.0, 0.0, 1.0), (0.0, 1.0, -1.0), (0.6, -1.3, 2.5)] {
                check_binary_f64(c, a, b, ta, tb, dy);
                check_binary_f32(c, a, b, ta, tb, dy);
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn binary_rules_at_random_points(
        u in 0.0..1.0_f64, v in 0.0..1.0_f64,
        ta in -2.0..2.0_f64, tb in -2.0..2.0_f64, dy in -2.0..2.0_f64,
    ) {
        for c in &binary_cases() {
            let ((alo, ahi), (blo, bhi)) = c.sample;
            let (a, b) = (alo + u * (ahi - alo), blo + v * (bhi - blo));
            check_binary_f64(c, a, b, ta, tb, dy);
            check_binary_f32(c, a, b, ta, tb, dy);
        }
    }
}

// =============================================================================================
// Binary rules: the documented choices.

#[test]
fn min_and_max_give_a_tie_to_the_first_argument() {
    for x in [0.0_f64, 1.5, -2.0] {
        let y = min_frule(Dual::new(x, 1.0), Dual::new(x, 10.0));
        assert_eq!((y.primal, y.tangent), (x, 1.0));
        let y = max_frule(Dual::new(x, 1.0), Dual::new(x, 10.0));
        assert_eq!((y.primal, y.tangent), (x, 1.0));
        let (_, pb) = min_rrule(CoDual::new(x, NoFData), CoDual::new(x, NoFData));
        assert_eq!(pb(2.0), (2.0, 0.0));
        let (_, pb) = max_rrule(CoDual::new(x as f32, NoFData), CoDual::new(x as f32, NoFData));
        assert_eq!(pb(2.0), (2.0, 0.0));
    }
    // +0 and -0 compare equal: a tie as well.
    let (_, pb) = max_rrule(CoDual::new(-0.0_f64, NoFData), CoDual::new(0.0, NoFData));
    assert_eq!(pb(1.0), (1.0, 0.0));
    // Away from a tie, the selected argument gets it all; an infinite tangent of the other
    // argument does not leak in (selection, not multiplication by 0).
    let y = min_frule(Dual::new(1.0_f64, f64::INFINITY), Dual::new(-1.0, 3.0));
    assert_eq!((y.primal, y.tangent), (-1.0, 3.0));
    let y = max_frule(Dual::new(1.0_f64, 3.0), Dual::new(-1.0, f64::NAN));
    assert_eq!((y.primal, y.tangent), (1.0, 3.0));
}

#[test]
fn min_and_max_follow_the_argument_returned_past_a_nan() {
    // `f64::min` and `max` return the non-NaN argument; the derivative follows it.
    let y = min_frule(Dual::new(f64::NAN, 1.0), Dual::new(2.0, 5.0));
    assert_eq!((y.primal, y.tangent), (2.0, 5.0));
    let y = max_frule(Dual::new(2.0_f64, 1.0), Dual::new(f64::NAN, 5.0));
    assert_eq!((y.primal, y.tangent), (2.0, 1.0));
    let (y, pb) = max_rrule(CoDual::new(f32::NAN, NoFData), CoDual::new(2.0, NoFData));
    assert_eq!((y.primal, pb(1.0)), (2.0, (0.0, 1.0)));
    let (y, pb) = min_rrule(CoDual::new(2.0_f32, NoFData), CoDual::new(f32::NAN, NoFData));
    assert_eq!((y.primal, pb(1.0)), (2.0, (1.0, 0.0)));
}

#[test]
fn hypot_has_derivative_zero_at_the_origin_and_atan2_nan() {
    let y = hypot_frule(Dual::new(0.0_f64, 1.0), Dual::new(0.0, -2.0));
    assert_eq!((y.primal, y.tangent), (0.0, 0.0));
    let (y, pb) = hypot_rrule(CoDual::new(0.0_f32, NoFData), CoDual::new(0.0, NoFData));
    assert_eq!((y.primal, pb(1.0)), (0.0, (0.0, 0.0)));
    // Beside the origin: the unit vector.
    let (_, pb) = hypot_rrule(CoDual::new(0.0_f64, NoFData), CoDual::new(-1e-300, NoFData));
    assert_eq!(pb(1.0), (0.0, -1.0));
    // No overflow for huge arguments.
    let (_, pb) = hypot_rrule(CoDual::new(3e300_f64, NoFData), CoDual::new(4e300, NoFData));
    let (da, db) = pb(1.0);
    assert_close("hypot d/da at 1e300", da, 0.6, 1e-14, 0.0);
    assert_close("hypot d/db at 1e300", db, 0.8, 1e-14, 0.0);
    let (_, pb) = atan2_rrule(CoDual::new(3e300_f64, NoFData), CoDual::new(4e300, NoFData));
    let (da, db) = pb(1.0);
    assert_close("atan2 d/da at 1e300", da, 0.8 / 5e300, 1e-14, 0.0);
    assert_close("atan2 d/db at 1e300", db, -0.6 / 5e300, 1e-14, 0.0);
    // atan2 is not continuous at the origin: NaN, as ChainRules.
    let (_, pb) = atan2_rrule(CoDual::new(0.0_f64, NoFData), CoDual::new(0.0, NoFData));
    let (da, db) = pb(1.0);
    assert!(da.is_nan() && db.is_nan());
    let y = atan2_frule(Dual::new(0.0_f32, 1.0), Dual::new(0.0, 0.0));
    assert!(y.tangent.is_nan());
    // Guarded: zero tangents and a zero cotangent stay an exact 0.
    let y = atan2_frule(Dual::new(0.0_f64, 0.0), Dual::new(0.0, 0.0));
    assert_eq!((y.primal, y.tangent), (0.0, 0.0));
    let (_, pb) = atan2_rrule(CoDual::new(0.0_f32, NoFData), CoDual::new(0.0, NoFData));
    assert_eq!(pb(0.0), (0.0, 0.0));
}

#[test]
fn powf_at_a_zero_base() {
    // (p, d/dx) at x = 0; d/dp is always 0 there (no NaN from ln 0).
    let cases = [
        (2.0_f64, 0.0),
        (1.0, 1.0),
        (0.5, f64::INFINITY),
        (0.0, 0.0),
        (-1.0, f64::NEG_INFINITY),
        (-0.5, f64::NEG_INFINITY),
        (3.0, 0.0),
    ];
    for (p, dx) in cases {
        let (y, pb) = powf_rrule(CoDual::new(0.0_f64, NoFData), CoDual::new(p, NoFData));
        assert_same("0^p", y.primal, 0.0_f64.powf(p));
        assert_eq!(pb(1.0), (dx, 0.0), "d 0^{p}");
        let (_, pb) = powf_rrule(CoDual::new(0.0_f32, NoFData), CoDual::new(p as f32, NoFData));
        assert_eq!(pb(1.0), (dx as f32, 0.0), "d 0^{p} f32");
    }
    // A constant exponent (tangent 0) never poisons the base's tangent: x^2 and x^0 at x = 0.
    let y = powf_frule(Dual::new(0.0_f64, 1.0), Dual::new(2.0, 0.0));
    assert_eq!((y.primal, y.tangent), (0.0, 0.0));
    let y = powf_frule(Dual::new(0.0_f64, 1.0), Dual::new(0.0, 0.0));
    assert_eq!((y.primal, y.tangent), (1.0, 0.0));
    let y = powf_frule(Dual::new(0.0_f32, 1.0), Dual::new(1.0, 0.0));
    assert_eq!((y.primal, y.tangent), (0.0, 1.0));
    // Guarded: at x = 0, 0 < p < 1, d/dx = inf, but a constant base (zero tangent) or a zero
    // cotangent stays an exact 0; a nonzero base tangent gives +inf.
    let y = powf_frule(Dual::new(0.0_f64, 0.0), Dual::new(0.5, 1.0));
    assert_eq!((y.primal, y.tangent), (0.0, 0.0));
    let y = powf_frule(Dual::new(0.0_f64, 1.0), Dual::new(0.5, 1.0));
    assert_eq!(y.tangent, f64::INFINITY);
    let (_, pb) = powf_rrule(CoDual::new(0.0_f32, NoFData), CoDual::new(0.5, NoFData));
    assert_eq!(pb(0.0), (0.0, 0.0));
    // The right-sided difference in p at x = 0, p = 2 is 0.
    assert_eq!((0.0_f64.powf(2.0 + 1e-6) - 0.0_f64.powf(2.0)) / 1e-6, 0.0);
    // x^0 has derivative 0 in x everywhere.
    let (_, pb) = powf_rrule(CoDual::new(-3.0_f64, NoFData), CoDual::new(0.0, NoFData));
    assert_eq!(pb(1.0).0, 0.0);
}

#[test]
fn powf_with_a_negative_base_uses_the_real_part_of_the_complex_log() {
    // (-2)^3 = -8; d/dx = 3 * 4 = 12; d/dp = -8 ln 2 (finite: no NaN from ln(-2)).
    let (y, pb) = powf_rrule(CoDual::new(-2.0_f64, NoFData), CoDual::new(3.0, NoFData));
    assert_eq!(y.primal, -8.0);
    let (dx, dp) = pb(1.0);
    assert_close("d/dx (-2)^3", dx, 12.0, 1e-14, 0.0);
    assert_close("d/dp (-2)^3", dp, -8.0 * std::f64::consts::LN_2, 1e-14, 0.0);
    // So a constant integer exponent keeps the forward tangent finite: d (x^2) at x = -1.5.
    let y = powf_frule(Dual::new(-1.5_f64, 1.0), Dual::new(2.0, 0.0));
    assert_eq!((y.primal, y.tangent), (2.25, -3.0));
}

#[test]
fn rem_uses_the_integer_quotient_of_the_primal() {
    // a % b = a - b q: derivative (1, -q), also where a / b is an integer (a jump), where it is
    // the derivative of the piece the primal lies on.
    let cases = [
        (7.5_f64, 2.0, -3.0),
        (-7.5, 2.0, 3.0),
        (7.5, -2.0, 3.0),
        (6.0, 3.0, -2.0), // jump: 6 % 3 = 0 lies on the piece q = 2
        (0.0, 3.0, 0.0),  // smooth in a at 0: a % b = a there
        (-9.0, 3.0, 3.0), // jump, negative
        (1e6 + 0.5, 7.0, -142857.0),
    ];
    for (a, b, db) in cases {
        let y = rem_frule(Dual::new(a, 1.0), Dual::new(b, 0.0));
        assert_same("a % b", y.primal, a % b);
        assert_eq!(y.tangent, 1.0, "d/da {a} % {b}");
        let (_, pb) = rem_rrule(CoDual::new(a, NoFData), CoDual::new(b, NoFData));
        assert_eq!(pb(1.0), (1.0, db), "{a} % {b}");
        let (_, pb) = rem_rrule(CoDual::new(a as f32, NoFData), CoDual::new(b as f32, NoFData));
        assert_eq!(pb(1.0), (1.0, db as f32), "{a} % {b} f32");
    }
    // Where `a / b` rounds up to an integer but `%` uses the exact quotient: 5 % 0.1 (0.1 is
    // slightly above 1/10, so the quotient is 49 and the remainder ~0.1), not -50.
    let (y, pb) = rem_rrule(CoDual::new(5.0_f64, NoFData), CoDual::new(0.1, NoFData));
    assert!(y.primal > 0.09, "{}", y.primal);
    assert_eq!(5.0_f64 / 0.1, 50.0);
    assert_eq!(pb(1.0), (1.0, -49.0));
    // The one-sided difference in b at the jump 6 % 3, from the side the primal lies on (b
    // decreasing keeps the quotient 2): slope -2.
    let h = 1e-7;
    assert_close(
        "left difference of 6 % b at 3",
        (6.0 % 3.0 - 6.0 % (3.0 - h)) / h,
        -2.0,
        1e-6,
        0.0,
    );
}

#[test]
fn log_with_a_base() {
    // log_2(8) = 3: d/dx = 1/(8 ln 2), d/dbase = -3/(2 ln 2).
    let (y, pb) = log_rrule(CoDual::new(8.0_f64, NoFData), CoDual::new(2.0, NoFData));
    assert_close("log_2 8", y.primal, 3.0, 1e-15, 0.0);
    let (dx, db) = pb(1.0);
    let ln2 = std::f64::consts::LN_2;
    assert_close("d/dx log_2 8", dx, 1.0 / (8.0 * ln2), 1e-14, 0.0);
    assert_close("d/dbase log_2 8", db, -3.0 / (2.0 * ln2), 1e-14, 0.0);
}

// =============================================================================================
// Ternary rules and powi.

#[test]
fn mul_add_rules() {
    for (x, a, b) in [(1.5_f64, -2.0, 0.25), (0.0, 3.0, -1.0), (1e10, 1e-10, 7.0)] {
        let (tx, ta, tb) = (0.3, -1.1, 2.0);
        let y = mul_add_frule(Dual::new(x, tx), Dual::new(a, ta), Dual::new(b, tb));
        assert_same("mul_add", y.primal, x.mul_add(a, b));
        assert_close("mul_add tangent", y.tangent, a * tx + x * ta + tb, 1e-14, 1e-14);
        let (y, pb) = mul_add_rrule(
            CoDual::new(x, NoFData),
            CoDual::new(a, NoFData),
            CoDual::new(b, NoFData),
        );
        assert_same("mul_add", y.primal, x.mul_add(a, b));
        assert_eq!(pb(2.0), (2.0 * a, 2.0 * x, 2.0));
        // Finite differences, x direction.
        let h = 1e-4 * step_scale(x);
        let fd = central_difference(|s: f64| s.mul_add(a, b), x, h);
        assert_close("mul_add d/dx vs finite differences", a, fd, 1e-6, 1e-6);

        let (x, a, b) = (x as f32, a as f32, b as f32);
        let y = mul_add_frule(Dual::new(x, 1.0), Dual::new(a, 0.0), Dual::new(b, 0.0));
        assert_same("mul_add f32", y.primal, x.mul_add(a, b));
        assert_eq!(y.tangent, a);
        let (_, pb) = mul_add_rrule(
            CoDual::new(x, NoFData),
            CoDual::new(a, NoFData),
            CoDual::new(b, NoFData),
        );
        assert_eq!(pb(-1.0), (-a, -x, -1.0));
    }
}

#[test]
fn clamp_gives_its_bounds_to_x() {
    // (x, which argument gets the derivative)
    let (lo, hi) = (-1.0_f64, 2.0);
    for (x, which) in [(0.5, 0), (-1.0, 0), (2.0, 0), (-3.0, 1), (5.0, 2)] {
        let y = clamp_frule(Dual::new(x, 1.0), Dual::new(lo, 10.0), Dual::new(hi, 100.0));
        assert_same("clamp", y.primal, x.clamp(lo, hi));
        assert_eq!(y.tangent, [1.0, 10.0, 100.0][which], "clamp'({x})");
        let (y, pb) = clamp_rrule(
            CoDual::new(x, NoFData),
            CoDual::new(lo, NoFData),
            CoDual::new(hi, NoFData),
        );
        assert_same("clamp", y.primal, x.clamp(lo, hi));
        let mut want = (0.0, 0.0, 0.0);
        *[&mut want.0, &mut want.1, &mut want.2][which] = 3.0;
        assert_eq!(pb(3.0), want, "clamp gradient at {x}");
        let (_, pb) = clamp_rrule(
            CoDual::new(x as f32, NoFData),
            CoDual::new(lo as f32, NoFData),
            CoDual::new(hi as f32, NoFData),
        );
        assert_eq!(pb(3.0), (want.0 as f32, want.1 as f32, want.2 as f32));
    }
    // An infinite tangent of an argument not returned does not leak in.
    let y =
        clamp_frule(Dual::new(0.0_f64, 1.0), Dual::new(lo, f64::INFINITY), Dual::new(hi, f64::NAN));
    assert_eq!(y.tangent, 1.0);
    // lo == hi: x == lo == hi gets it.
    let (_, pb) = clamp_rrule(
        CoDual::new(1.0_f64, NoFData),
        CoDual::new(1.0, NoFData),
        CoDual::new(1.0, NoFData),
    );
    assert_eq!(pb(1.0), (1.0, 0.0, 0.0));
}

#[test]
#[should_panic]
fn clamp_panics_like_the_primal_on_inverted_bounds() {
    let _ = clamp_frule(Dual::new(0.0_f64, 1.0), Dual::new(2.0, 0.0), Dual::new(1.0, 0.0));
}

#[test]
fn powi_rules() {
    // (x, n, d/dx)
    let cases = [
        (1.3_f64, 3, 3.0 * 1.3 * 1.3),
        (-2.0, 3, 12.0),
        (-2.0, -2, 0.25),
        (0.5, -1, -4.0),
        (0.0, 0, 0.0),
        (5.0, 0, 0.0),
        (0.0, 1, 1.0),
        (0.0, 3, 0.0),
        (0.0, -1, f64::NEG_INFINITY),
        (1.0, i32::MIN, i32::MIN as f64),
        (1.0, i32::MAX, i32::MAX as f64),
    ];
    for (x, n, d) in cases {
        let y = powi_frule(Dual::new(x, 2.0), Dual::new(n, NoTangent));
        assert_same("powi", y.primal, x.powi(n));
        assert_close(&format!("d {x}^{n}"), y.tangent, 2.0 * d, 1e-14, 0.0);
        let (y, pb) = powi_rrule(CoDual::new(x, NoFData), CoDual::new(n, NoFData));
        assert_same("powi", y.primal, x.powi(n));
        let (dx, NoRData) = pb(1.0);
        assert_close(&format!("grad {x}^{n}"), dx, d, 1e-14, 0.0);
        let (_, pb) = powi_rrule(CoDual::new(x as f32, NoFData), CoDual::new(n, NoFData));
        assert_close(&format!("grad {x}^{n} f32"), pb(1.0).0 as f64, d, 1e-6, 0.0);
        // Against finite differences where smooth.
        if x != 0.0 && n.unsigned_abs() < 100 {
            let h = 1e-4 * step_scale(x);
            let fd = central_difference(|s: f64| s.powi(n), x, h);
            assert_close(&format!("d {x}^{n} vs finite differences"), d, fd, 1e-6, 1e-9);
        }
    }
}

// =============================================================================================
// Compound assignment through `&mut`.

/// A compound-assignment forward rule at one precision.
type AssignFrule<T> = fn(Dual<&mut T, &mut T>, Dual<T, T>) -> Dual<(), NoTangent>;
/// A compound-assignment reverse rule at one precision, run up to its pullback: returns the
/// pullback, which returns `v̄`.
type AssignRrule<T> = fn(CoDual<SharedCell<T>, SharedCell<T>>, T) -> Box<dyn FnOnce() -> T>;

struct Assign {
    name: &'static str,
    op: fn(f64, f64) -> f64,
    /// `(∂new/∂x_old, ∂new/∂v)`, written here.
    partials: fn(f64, f64) -> (f64, f64),
    frule64: AssignFrule<f64>,
    rrule64: AssignRrule<f64>,
    frule32: AssignFrule<f32>,
    rrule32: AssignRrule<f32>,
}

macro_rules! assign {
    ($frule:ident, $rrule:ident, |$x:ident, $v:ident| $op:expr, d = $d:expr) => {
        Assign {
            name: stringify!($frule),
            op: |$x, $v| $op,
            partials: |$x, $v| {
                let _ = ($x, $v);
                $d
            },
            frule64: |x, v| $frule(x, v),
            rrule64: |x, v| {
                let (out, pb) = $rrule(x, CoDual::new(v, NoFData));
                let CoDual { primal: (), fdata: NoFData } = out;
                Box::new(move || {
                    let (NoRData, dv) = pb(NoRData);
                    dv
                })
            },
            frule32: |x, v| $frule(x, v),
            rrule32: |x, v| {
                let (_, pb) = $rrule(x, CoDual::new(v, NoFData));
                Box::new(move || pb(NoRData).1)
            },
        }
    };
}

fn assign_cases() -> [Assign; 4] {
    [
        assign!(add_assign_frule, add_assign_rrule, |x, v| x + v, d = (1.0, 1.0)),
        assign!(sub_assign_frule, sub_assign_rrule, |x, v| x - v, d = (1.0, -1.0)),
        assign!(mul_assign_frule, mul_assign_rrule, |x, v| x * v, d = (v, x)),
        assign!(div_assign_frule, div_assign_rrule, |x, v| x / v, d = (1.0 / v, -x / (v * v))),
    ]
}

#[test]
fn compound_assignment_forward_updates_primal_and_tangent_in_place() {
    for c in &assign_cases() {
        for (x0, v) in [(3.0_f64, 2.0), (-1.5, 0.25), (0.0, -4.0)] {
            let (tx, tv) = (0.5, -1.5);
            let (dx, dv) = (c.partials)(x0, v);
            let (mut x, mut t) = (x0, tx);
            let out = (c.frule64)(Dual::new(&mut x, &mut t), Dual::new(v, tv));
            assert_eq!(out, Dual::new((), NoTangent));
            assert_same(c.name, x, (c.op)(x0, v));
            assert_close(
                &format!("{} tangent at ({x0}, {v})", c.name),
                t,
                dx * tx + dv * tv,
                1e-14,
                1e-15,
            );

            let (mut x, mut t) = (x0 as f32, tx as f32);
            (c.frule32)(Dual::new(&mut x, &mut t), Dual::new(v as f32, tv as f32));
            assert_same(c.name, x, (c.op)(x0, v) as f32);
            assert_close(
                &format!("{} f32 tangent at ({x0}, {v})", c.name),
                t as f64,
                dx * tx + dv * tv,
                1e-6,
                1e-7,
            );
        }
    }
    // The worked examples of the brief: x' = x v with x = 3, v = 2, x' tangent 0.5, v' -1.5:
    // 0.5 * 2 + 3 * (-1.5) = -3.5; x' = x / v: (0.5 - 1.5 * (-1.5)) / 2 = 1.375.
    let (mut x, mut t) = (3.0_f64, 0.5);
    mul_assign_frule(Dual::new(&mut x, &mut t), Dual::new(2.0, -1.5));
    assert_eq!((x, t), (6.0, -3.5));
    let (mut x, mut t) = (3.0_f64, 0.5);
    div_assign_frule(Dual::new(&mut x, &mut t), Dual::new(2.0, -1.5));
    assert_eq!((x, t), (1.5, 1.375));
}

#[test]
fn compound_assignment_reverse_restores_the_primal_and_maps_the_shadow() {
    for c in &assign_cases() {
        for (x0, v) in [(3.0_f64, 2.0), (-1.5, 0.25), (0.0, -4.0)] {
            let (dx, dv) = (c.partials)(x0, v);
            let cell = SharedCell::new(x0);
            let shadow = SharedCell::new(0.0);
            let pullback = (c.rrule64)(CoDual::new(cell.clone(), shadow.clone()), v);
            // The forward pass mutates the primal, as the primal would.
            assert_same(c.name, cell.get(), (c.op)(x0, v));
            // Seed the shadow with the gradient w.r.t. the value on exit.
            let seed = 0.7;
            shadow.set(seed);
            let v_bar = pullback();
            assert_eq!(cell.get(), x0, "{}: primal not restored", c.name);
            assert_close(
                &format!("{} shadow at ({x0}, {v})", c.name),
                shadow.get(),
                seed * dx,
                1e-14,
                1e-15,
            );
            assert_close(&format!("{} v̄ at ({x0}, {v})", c.name), v_bar, seed * dv, 1e-14, 1e-15);

            // Finite differences of L(x_entry, v) = seed * op(x_entry, v).
            let h = 1e-4;
            let l = |x: f64, v: f64| seed * (c.op)(x, v);
            let fd_x = central_difference(|s| l(s, v), x0, h);
            let fd_v = central_difference(|s| l(x0, s), v, h * step_scale(v));
            assert_close(
                &format!("{} shadow vs finite differences", c.name),
                shadow.get(),
                fd_x,
                1e-7,
                1e-9,
            );
            assert_close(&format!("{} v̄ vs finite differences", c.name), v_bar, fd_v, 1e-7, 1e-9);

            let cell = SharedCell::new(x0 as f32);
            let shadow = SharedCell::new(0.0_f32);
            let pullback = (c.rrule32)(CoDual::new(cell.clone(), shadow.clone()), v as f32);
            assert_same(c.name, cell.get(), (c.op)(x0, v) as f32);
            shadow.set(seed as f32);
            let v_bar = pullback();
            assert_eq!(cell.get(), x0 as f32);
            assert_close(
                &format!("{} f32 shadow", c.name),
                shadow.get() as f64,
                seed * dx,
                1e-6,
                1e-7,
            );
            assert_close(&format!("{} f32 v̄", c.name), v_bar as f64, seed * dv, 1e-6, 1e-7);
        }
    }
    // The worked examples of the brief, with x = 3, v = 2, shadow 1: x' = x v: v̄ = 3, shadow 2;
    // x' = x / v: v̄ = -3/4, shadow 1/2.
    let (cell, shadow) = (SharedCell::new(3.0_f64), SharedCell::new(1.0));
    let (_, pb) =
        mul_assign_rrule(CoDual::new(cell.clone(), shadow.clone()), CoDual::new(2.0, NoFData));
    assert_eq!(cell.get(), 6.0);
    assert_eq!(pb(NoRData), (NoRData, 3.0));
    assert_eq!((cell.get(), shadow.get()), (3.0, 2.0));
    let (cell, shadow) = (SharedCell::new(3.0_f64), SharedCell::new(1.0));
    let (_, pb) =
        div_assign_rrule(CoDual::new(cell.clone(), shadow.clone()), CoDual::new(2.0, NoFData));
    assert_eq!(cell.get(), 1.5);
    assert_eq!(pb(NoRData), (NoRData, -0.75));
    assert_eq!((cell.get(), shadow.get()), (3.0, 0.5));
}

#[test]
fn chained_compound_assignments_compose() {
    // x += v1; x *= v2, in reverse order through the shadow: d(x v2 + v1 v2).
    let (x0, v1, v2) = (1.5_f64, 0.5, -3.0);
    let (cell, shadow) = (SharedCell::new(x0), SharedCell::new(0.0));
    let (_, pb1) =
        add_assign_rrule(CoDual::new(cell.clone(), shadow.clone()), CoDual::new(v1, NoFData));
    let (_, pb2) =
        mul_assign_rrule(CoDual::new(cell.clone(), shadow.clone()), CoDual::new(v2, NoFData));
    assert_eq!(cell.get(), (x0 + v1) * v2);
    shadow.set(1.0);
    let (NoRData, dv2) = pb2(NoRData);
    assert_eq!(cell.get(), x0 + v1);
    let (NoRData, dv1) = pb1(NoRData);
    assert_eq!(cell.get(), x0);
    assert_eq!((shadow.get(), dv1, dv2), (v2, v2, x0 + v1));
}

// =============================================================================================
// Comparisons.

#[test]
fn comparisons_have_no_derivative() {
    type F = fn(Dual<f64, f64>, Dual<f64, f64>) -> Dual<bool, NoTangent>;
    type R = fn(f64, f64) -> (bool, (f64, f64));
    type P = fn(&f64, &f64) -> bool;
    macro_rules! case {
        ($f:ident, $r:ident, $p:expr) => {
            (
                stringify!($f),
                $f::<f64, f64> as F,
                (|a, b| {
                    let (y, pb) = $r(CoDual::new(a, NoFData), CoDual::new(b, NoFData));
                    let CoDual { primal, fdata: NoFData } = y;
                    (primal, pb(NoRData))
                }) as R,
                $p as P,
            )
        };
    }
    let cases = [
        case!(eq_frule, eq_rrule, <f64 as PartialEq>::eq),
        case!(ne_frule, ne_rrule, <f64 as PartialEq>::ne),
        case!(lt_frule, lt_rrule, <f64 as PartialOrd>::lt),
        case!(le_frule, le_rrule, <f64 as PartialOrd>::le),
        case!(gt_frule, gt_rrule, <f64 as PartialOrd>::gt),
        case!(ge_frule, ge_rrule, <f64 as PartialOrd>::ge),
    ];
    let pairs = [
        (1.0, 2.0),
        (2.0, 1.0),
        (1.5, 1.5),
        (0.0, -0.0),
        (f64::NAN, 1.0),
        (1.0, f64::NAN),
        (f64::NAN, f64::NAN),
    ];
    let mut trues = 0;
    for (name, frule, rrule, primal) in cases {
        for (a, b) in pairs {
            let want = primal(&a, &b);
            trues += usize::from(want);
            let y = frule(Dual::new(a, 1.0), Dual::new(b, -1.0));
            assert_eq!(y, Dual::new(want, NoTangent), "{name}({a}, {b})");
            let (y, grads) = rrule(a, b);
            assert_eq!(y, want, "{name}({a}, {b})");
            assert_eq!(grads, (0.0, 0.0));
        }
    }
    // Not all true or all false: the table above exercises both outcomes.
    assert!(trues > 5 && trues < 6 * pairs.len() - 5, "{trues}");
    let y = lt_frule(Dual::new(1.0_f32, 1.0), Dual::new(2.0, 0.0));
    assert!(y.primal);
    let (y, pb) = ge_rrule(CoDual::new(1.0_f32, NoFData), CoDual::new(2.0, NoFData));
    assert!(!y.primal);
    assert_eq!(pb(NoRData), (0.0_f32, 0.0_f32));
}

// =============================================================================================
// Casts.

/// Every pair of numeric types has a cast rule whose primal is `as`.
#[test]
fn every_numeric_cast_has_a_rule_with_the_primal_of_as() {
    let mut count = 0;
    macro_rules! from_to {
        ($from:ty, $value:expr => $($to:ty),*) => {$({
            let x: $from = $value;
            let y = cast_frule::<$from, $to>(Dual::new(x, <$from as Primal>::zero_tangent(&x)));
            assert_eq!(y.primal, x as $to, "{} as {}", stringify!($from), stringify!($to));
            let (y, _pb) = cast_rrule::<$from, $to>(CoDual::new(x, NoFData));
            assert_eq!(y.primal, x as $to);
            count += 1;
        })*};
    }
    macro_rules! all {
        ($($from:ty = $value:expr),*) => {$(
            from_to!($from, $value => f32, f64, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
        )*};
    }
    all!(
        f32 = 100.75,
        f64 = -3.25e3,
        i8 = -7,
        i16 = 300,
        i32 = -70_000,
        i64 = 5_000_000_000,
        i128 = -1 << 100,
        isize = 123,
        u8 = 250,
        u16 = 65_000,
        u32 = 4_000_000_000,
        u64 = u64::MAX,
        u128 = 1 << 127,
        usize = 42
    );
    assert_eq!(count, 14 * 14);
}

#[test]
fn float_to_float_casts_pass_the_tangent_through() {
    let y = cast_frule::<f64, f32>(Dual::new(0.1, 2.5));
    assert_eq!((y.primal, y.tangent), (0.1_f32, 2.5_f32));
    let y = cast_frule::<f32, f64>(Dual::new(0.1, -1.25));
    assert_eq!((y.primal, y.tangent), (0.1_f32 as f64, -1.25));
    let y = cast_frule::<f64, f64>(Dual::new(0.1, 3.0));
    assert_eq!((y.primal, y.tangent), (0.1, 3.0));
    let (y, pb) = cast_rrule::<f64, f32>(CoDual::new(1.0 / 3.0, NoFData));
    assert_eq!(y.primal, (1.0_f64 / 3.0) as f32);
    assert_eq!(pb(0.5_f32), (0.5_f64,));
    let (_, pb) = cast_rrule::<f32, f64>(CoDual::new(2.0, NoFData));
    assert_eq!(pb(1.0 / 3.0), ((1.0_f64 / 3.0) as f32,));
    // Through the trait, too.
    let y = <f32 as CastRule<f32>>::cast_frule(Dual::new(1.5, 4.0));
    assert_eq!(y, Dual::new(1.5, 4.0));
}

#[test]
fn int_to_float_casts_have_zero_derivative() {
    let y = cast_frule::<i32, f64>(Dual::new(-7, NoTangent));
    assert_eq!((y.primal, y.tangent), (-7.0, 0.0));
    let y = cast_frule::<u64, f32>(Dual::new(u64::MAX, NoTangent));
    assert_eq!((y.primal, y.tangent), (u64::MAX as f32, 0.0));
    let (y, pb) = cast_rrule::<usize, f64>(CoDual::new(3, NoFData));
    assert_eq!(y.primal, 3.0);
    assert_eq!(pb(5.0), (NoRData,));
}

#[test]
fn float_to_int_casts_carry_no_tangent_and_a_zero_gradient() {
    let y = cast_frule::<f64, i32>(Dual::new(2.7, 1.0));
    assert_eq!(y, Dual::new(2, NoTangent));
    let y = cast_frule::<f32, u8>(Dual::new(-3.5, 1.0));
    assert_eq!(y, Dual::new(0, NoTangent)); // saturating, as `as`
    let (y, pb) = cast_rrule::<f64, i64>(CoDual::new(-2.7, NoFData));
    assert_eq!(y.primal, -2);
    assert_eq!(pb(NoRData), (0.0_f64,));
    let (_, pb) = cast_rrule::<f32, usize>(CoDual::new(1e3, NoFData));
    assert_eq!(pb(NoRData), (0.0_f32,));
}

#[test]
fn int_to_int_casts_carry_nothing() {
    let y = cast_frule::<i32, u8>(Dual::new(300, NoTangent));
    assert_eq!(y, Dual::new(44, NoTangent));
    let (y, pb) = cast_rrule::<u128, i8>(CoDual::new(255, NoFData));
    assert_eq!(y.primal, -1);
    assert_eq!(pb(NoRData), (NoRData,));
}

// =============================================================================================
// `test_rule!`: every rule, both precisions.

/// The primal functions, as a user would write them.
mod primal {
    use mooncake_runtime::Float;

    macro_rules! unary_primals {
        ($($name:ident),* $(,)?) => {$(
            pub fn $name<T: Float>(x: T) -> T {
                x.$name()
            }
        )*};
    }
    unary_primals!(
        sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, exp, exp2, exp_m1,
        ln, ln_1p, log2, log10, sqrt, cbrt, abs, signum, recip, to_degrees, to_radians, floor,
        ceil, round, trunc, fract,
    );

    macro_rules! binary_primals {
        ($($name:ident),* $(,)?) => {$(
            pub fn $name<T: Float>(a: T, b: T) -> T {
                a.$name(b)
            }
        )*};
    }
    binary_primals!(atan2, hypot, powf, log, min, max);

    pub fn neg<T: Float>(x: T) -> T {
        -x
    }
    pub fn sin_cos<T: Float>(x: T) -> (T, T) {
        (x.sin(), x.cos())
    }
    pub fn add<T: Float>(a: T, b: T) -> T {
        a + b
    }
    pub fn sub<T: Float>(a: T, b: T) -> T {
        a - b
    }
    pub fn mul<T: Float>(a: T, b: T) -> T {
        a * b
    }
    pub fn div<T: Float>(a: T, b: T) -> T {
        a / b
    }
    pub fn rem<T: Float>(a: T, b: T) -> T {
        a % b
    }
    pub fn mul_add<T: Float>(x: T, a: T, b: T) -> T {
        x.mul_add(a, b)
    }
    pub fn clamp<T: Float>(x: T, lo: T, hi: T) -> T {
        x.clamp(lo, hi)
    }
    pub fn powi<T: Float>(x: T, n: i32) -> T {
        x.powi(n)
    }
    pub fn add_assign<T: Float>(x: &mut T, v: T) {
        *x += v;
    }
    pub fn sub_assign<T: Float>(x: &mut T, v: T) {
        *x -= v;
    }
    pub fn mul_assign<T: Float>(x: &mut T, v: T) {
        *x *= v;
    }
    pub fn div_assign<T: Float>(x: &mut T, v: T) {
        *x /= v;
    }
    pub fn eq<T: Float>(a: T, b: T) -> bool {
        a == b
    }
    pub fn ne<T: Float>(a: T, b: T) -> bool {
        a != b
    }
    pub fn lt<T: Float>(a: T, b: T) -> bool {
        a < b
    }
    pub fn le<T: Float>(a: T, b: T) -> bool {
        a <= b
    }
    pub fn gt<T: Float>(a: T, b: T) -> bool {
        a > b
    }
    pub fn ge<T: Float>(a: T, b: T) -> bool {
        a >= b
    }
    pub fn cast_f64_f32(x: f64) -> f32 {
        x as f32
    }
    pub fn cast_f32_f64(x: f32) -> f64 {
        x as f64
    }
    pub fn cast_f64_i32(x: f64) -> i32 {
        x as i32
    }
    pub fn cast_i64_f64(x: i64) -> f64 {
        x as f64
    }
    pub fn cast_u8_f32(x: u8) -> f32 {
        x as f32
    }
    pub fn cast_f32_f32(x: f32) -> f32 {
        x
    }
    pub fn cast_i32_u16(x: i32) -> u16 {
        x as u16
    }
}

/// The seeds of the random tangents and cotangents each `test_rule!` below is run with.
const SEEDS: [u64; 3] = [1, 2, 3];

// Tolerances of the finite-difference checks, tighter than the defaults (`1e-3`). The harness
// scales the absolute tolerance by |ȳ| |ẋ|, the size of the random cotangent and direction, so
// a small random draw cannot hide a wrong rule (see `check_rule_rejects_a_wrong_rule`).
const RTOL64: f64 = 1e-5;
const ATOL64: f64 = 1e-8;
// `f32`: the harness perturbs the input in `f64` and rounds it to `f32`, so the differences
// carry errors of about `eps32 / h`.
const RTOL32: f64 = 2e-3;
const ATOL32: f64 = 2e-2;
const DOT_TOL32: f64 = 1e-5;

/// For each rule: a test module with an `f64` and an `f32` test, each running `test_rule!` at
/// the given inputs (written without a suffix, converted with `as`) for every seed in [`SEEDS`].
macro_rules! rule_tests {
    ($( $module:ident: $f:ident => $frule:ident, $rrule:ident: [$( ($($arg:expr),*) ),* $(,)?]; )*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn double() {
                for seed in SEEDS {
                    $( test_rule!(
                        primal::$f($($arg as f64),*),
                        frule = $frule,
                        rrule = $rrule,
                        rtol = RTOL64,
                        atol = ATOL64,
                        seed = seed,
                    ); )*
                }
            }

            #[test]
            fn single() {
                for seed in SEEDS {
                    $( test_rule!(
                        primal::$f($($arg as f32),*),
                        frule = $frule,
                        rrule = $rrule,
                        rtol = RTOL32,
                        atol = ATOL32,
                        dot_tol = DOT_TOL32,
                        seed = seed,
                    ); )*
                }
            }
        }
    )*};
}

rule_tests! {
    neg: neg => neg_frule, neg_rrule: [(0.7), (-2.5)];
    sin: sin => sin_frule, sin_rrule: [(0.7), (-2.3), (0.0)];
    cos: cos => cos_frule, cos_rrule: [(0.7), (-2.3), (0.0)];
    tan: tan => tan_frule, tan_rrule: [(0.7), (-1.1)];
    asin: asin => asin_frule, asin_rrule: [(0.3), (-0.8)];
    acos: acos => acos_frule, acos_rrule: [(0.3), (-0.8)];
    atan: atan => atan_frule, atan_rrule: [(0.3), (-4.0)];
    sinh: sinh => sinh_frule, sinh_rrule: [(0.3), (-2.0)];
    cosh: cosh => cosh_frule, cosh_rrule: [(0.3), (-2.0)];
    tanh: tanh => tanh_frule, tanh_rrule: [(0.3), (-2.0)];
    asinh: asinh => asinh_frule, asinh_rrule: [(0.3), (-4.0)];
    acosh: acosh => acosh_frule, acosh_rrule: [(1.5), (4.0)];
    atanh: atanh => atanh_frule, atanh_rrule: [(0.3), (-0.7)];
    exp: exp => exp_frule, exp_rrule: [(0.3), (-2.0), (3.0)];
    exp2: exp2 => exp2_frule, exp2_rrule: [(0.3), (-2.0), (3.0)];
    exp_m1: exp_m1 => exp_m1_frule, exp_m1_rrule: [(0.3), (-2.0), (1e-3)];
    ln: ln => ln_frule, ln_rrule: [(0.3), (5.0)];
    ln_1p: ln_1p => ln_1p_frule, ln_1p_rrule: [(0.3), (-0.5), (1e-3)];
    log2: log2 => log2_frule, log2_rrule: [(0.3), (5.0)];
    log10: log10 => log10_frule, log10_rrule: [(0.3), (5.0)];
    sqrt: sqrt => sqrt_frule, sqrt_rrule: [(0.3), (5.0)];
    cbrt: cbrt => cbrt_frule, cbrt_rrule: [(0.3), (-5.0)];
    abs: abs => abs_frule, abs_rrule: [(0.3), (-5.0), (0.0)];
    signum: signum => signum_frule, signum_rrule: [(0.3), (-5.0)];
    recip: recip => recip_frule, recip_rrule: [(0.3), (-5.0)];
    to_degrees: to_degrees => to_degrees_frule, to_degrees_rrule: [(0.3), (-5.0)];
    to_radians: to_radians => to_radians_frule, to_radians_rrule: [(30.0), (-5.0)];
    floor: floor => floor_frule, floor_rrule: [(0.3), (-5.5)];
    ceil: ceil => ceil_frule, ceil_rrule: [(0.3), (-5.5)];
    round: round => round_frule, round_rrule: [(0.3), (-5.2)];
    trunc: trunc => trunc_frule, trunc_rrule: [(0.3), (-5.5)];
    fract: fract => fract_frule, fract_rrule: [(0.3), (-5.5), (2.25)];
    sin_cos: sin_cos => sin_cos_frule, sin_cos_rrule: [(0.7), (-2.3)];

    add: add => add_frule, add_rrule: [(0.7, -1.2)];
    sub: sub => sub_frule, sub_rrule: [(0.7, -1.2)];
    mul: mul => mul_frule, mul_rrule: [(0.7, -1.2), (0.0, 3.0)];
    div: div => div_frule, div_rrule: [(0.7, -1.2), (3.0, 0.5)];
    rem: rem => rem_frule, rem_rrule: [(7.3, 2.0), (-7.3, 2.0), (2.5, -0.7)];
    atan2: atan2 => atan2_frule, atan2_rrule: [(0.7, -1.2), (-1.0, 2.0)];
    hypot: hypot => hypot_frule, hypot_rrule: [(0.7, -1.2), (3.0, 4.0)];
    powf: powf => powf_frule, powf_rrule: [(1.7, 2.5), (0.4, -1.3), (3.0, 0.5)];
    log: log => log_frule, log_rrule: [(8.0, 2.0), (0.4, 10.0)];
    min: min => min_frule, min_rrule: [(0.7, -1.2), (-0.7, 1.2)];
    max: max => max_frule, max_rrule: [(0.7, -1.2), (-0.7, 1.2)];

    mul_add: mul_add => mul_add_frule, mul_add_rrule: [(0.7, -1.2, 0.4), (2.0, 3.0, -1.0)];
    clamp: clamp => clamp_frule, clamp_rrule: [(0.3, -1.0, 1.0), (-2.0, -1.0, 1.0), (2.0, -1.0, 1.0)];

    eq: eq => eq_frule, eq_rrule: [(0.7, -1.2), (0.5, 0.5)];
    ne: ne => ne_frule, ne_rrule: [(0.7, -1.2), (0.5, 0.5)];
    lt: lt => lt_frule, lt_rrule: [(0.7, -1.2), (-0.7, 1.2)];
    le: le => le_frule, le_rrule: [(0.7, -1.2), (0.5, 0.5)];
    gt: gt => gt_frule, gt_rrule: [(0.7, -1.2), (-0.7, 1.2)];
    ge: ge => ge_frule, ge_rrule: [(0.7, -1.2), (0.5, 0.5)];
}

#[test]
fn powi_with_test_rule() {
    for seed in SEEDS {
        for n in [0, 1, 2, 3, -1, -2, 7] {
            for x in [1.3_f64, -0.8] {
                test_rule!(
                    primal::powi(x, n),
                    frule = powi_frule,
                    rrule = powi_rrule,
                    rtol = RTOL64,
                    atol = ATOL64,
                    seed = seed,
                );
                test_rule!(
                    primal::powi(x as f32, n),
                    frule = powi_frule,
                    rrule = powi_rrule,
                    rtol = RTOL32,
                    atol = ATOL32,
                    dot_tol = DOT_TOL32,
                    seed = seed,
                );
            }
        }
    }
}

/// The compound assignments through `&mut`, checked by `test_rule!` for both precisions:
/// besides the derivatives, the state of `x` after each rule and its restoration by the pullback.
macro_rules! assign_tests {
    ($($name:ident: $frule:ident, $rrule:ident, v = $v:expr;)*) => {$(
        #[test]
        fn $name() {
            for seed in SEEDS {
                for x in [1.25, -0.75] {
                    let x64: f64 = x;
                    test_rule!(
                        primal::$name(&mut x64, $v as f64),
                        frule = $frule,
                        rrule = $rrule,
                        rtol = RTOL64,
                        atol = ATOL64,
                        seed = seed,
                    );
                    let x32 = x as f32;
                    test_rule!(
                        primal::$name(&mut x32, $v as f32),
                        frule = $frule,
                        rrule = $rrule,
                        rtol = RTOL32,
                        atol = ATOL32,
                        dot_tol = DOT_TOL32,
                        seed = seed,
                    );
                }
            }
        }
    )*};
}

mod assign_with_test_rule {
    use super::*;

    assign_tests! {
        add_assign: add_assign_frule, add_assign_rrule, v = 0.5;
        sub_assign: sub_assign_frule, sub_assign_rrule, v = 0.5;
        mul_assign: mul_assign_frule, mul_assign_rrule, v = -1.5;
        div_assign: div_assign_frule, div_assign_rrule, v = 2.5;
    }
}

#[test]
fn casts_with_test_rule() {
    for seed in SEEDS {
        test_rule!(
            primal::cast_f64_f32(0.7),
            frule = cast_frule::<f64, f32>,
            rrule = cast_rrule::<f64, f32>,
            rtol = RTOL32,
            atol = ATOL32,
            dot_tol = DOT_TOL32,
            seed = seed,
        );
        test_rule!(
            primal::cast_f32_f64(0.7),
            frule = cast_frule::<f32, f64>,
            rrule = cast_rrule::<f32, f64>,
            rtol = RTOL32,
            atol = ATOL32,
            dot_tol = DOT_TOL32,
            seed = seed,
        );
        test_rule!(
            primal::cast_f32_f32(-2.5),
            frule = cast_frule::<f32, f32>,
            rrule = cast_rrule::<f32, f32>,
            rtol = RTOL32,
            atol = ATOL32,
            dot_tol = DOT_TOL32,
            seed = seed,
        );
        test_rule!(
            primal::cast_f64_i32(2.7),
            frule = cast_frule::<f64, i32>,
            rrule = cast_rrule::<f64, i32>,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        );
        test_rule!(
            primal::cast_i64_f64(-3),
            frule = cast_frule::<i64, f64>,
            rrule = cast_rrule::<i64, f64>,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        );
        test_rule!(
            primal::cast_u8_f32(200),
            frule = cast_frule::<u8, f32>,
            rrule = cast_rrule::<u8, f32>,
            seed = seed,
        );
        test_rule!(
            primal::cast_i32_u16(70_000),
            frule = cast_frule::<i32, u16>,
            rrule = cast_rrule::<i32, u16>,
            seed = seed,
        );
    }
}

#[test]
fn documented_kink_choices_that_finite_differences_agree_with() {
    for seed in SEEDS {
        // Central differences are symmetric, so they see 0 at the cone-shaped kinks of `abs` and
        // `hypot`, which is the rules' choice.
        test_rule!(
            primal::abs(0.0_f64),
            frule = abs_frule,
            rrule = abs_rrule,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        );
        test_rule!(
            primal::hypot(0.0_f64, 0.0_f64),
            frule = hypot_frule,
            rrule = hypot_rrule,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        );
        // And 0 in both directions for `0^2`: `(±h)^2` and `0^(2 ± h)`.
        test_rule!(
            primal::powf(0.0_f64, 2.0_f64),
            frule = powf_frule,
            rrule = powf_rrule,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        );
        test_rule!(
            primal::abs(0.0_f32),
            frule = abs_frule,
            rrule = abs_rrule,
            rtol = RTOL32,
            atol = ATOL32,
            seed = seed,
        );
    }
}

// =============================================================================================
// The checker catches a wrong rule.

/// `sin` with the wrong sign of the derivative.
fn bad_sin_frule<T: Float>(x: Dual<T, T>) -> Dual<T, T> {
    Dual::new(x.primal.sin(), -x.primal.cos() * x.tangent)
}

/// `sin` with the wrong sign of the gradient.
fn bad_sin_rrule<T: Float>(x: CoDual<T, NoFData>) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,)) {
    let (y, c) = (x.primal.sin(), x.primal.cos());
    (CoDual::new(y, NoFData), move |dy: T| (-c * dy,))
}

#[test]
fn check_rule_rejects_a_wrong_rule() {
    for seed in SEEDS {
        let e = check_rule!(
            primal::sin(0.7_f64),
            frule = bad_sin_frule,
            mode = forward,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        )
        .expect_err("a forward rule with the wrong sign must fail");
        assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
        assert!(e.to_string().contains("forward rule disagrees with finite differences"), "{e}");
        let e = check_rule!(
            primal::sin(0.7_f64),
            rrule = bad_sin_rrule,
            mode = reverse,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        )
        .expect_err("a reverse rule with the wrong sign must fail");
        assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
        // Both modes, f32: caught against finite differences or against the correct other mode.
        let e = check_rule!(
            primal::sin(0.7_f32),
            frule = bad_sin_frule,
            rrule = sin_rrule,
            rtol = RTOL32,
            atol = ATOL32,
            dot_tol = DOT_TOL32,
            seed = seed,
        )
        .expect_err("a wrong f32 rule must fail");
        assert!(
            matches!(e.check, Check::ForwardVsFiniteDifferences | Check::ForwardVsReverse),
            "{e}"
        );
        // The right rules pass the very same checks.
        check_rule!(
            primal::sin(0.7_f64),
            frule = sin_frule,
            rrule = sin_rrule,
            rtol = RTOL64,
            atol = ATOL64,
            seed = seed,
        )
        .unwrap();
        check_rule!(
            primal::sin(0.7_f32),
            frule = sin_frule,
            rrule = sin_rrule,
            rtol = RTOL32,
            atol = ATOL32,
            dot_tol = DOT_TOL32,
            seed = seed,
        )
        .unwrap();
    }
}

#[test]
fn a_tie_of_max_is_beyond_central_differences() {
    // At a tie, a central difference in either argument alone sees slope 1/2, so no choice of
    // a one-sided derivative passes `test_rule!` there; the documented choice (the first
    // argument) is pinned by `min_and_max_give_a_tie_to_the_first_argument` instead.
    let e = check_rule!(
        primal::max(0.5_f64, 0.5_f64),
        frule = max_frule,
        rrule = max_rrule,
        rtol = RTOL64,
        atol = ATOL64,
    )
    .expect_err("central differences see 1/2 at a tie");
    assert!(
        matches!(e.check, Check::ForwardVsFiniteDifferences | Check::ReverseVsFiniteDifferences),
        "{e}"
    );
}
