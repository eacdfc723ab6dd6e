//! Tests of the rule-testing utility itself: correct hand-written rules pass, and each kind of
//! mistake is caught by the check that should catch it, naming the argument.

use mooncake_runtime::prelude::*;
use mooncake_runtime::test_utils::{Check, RuleTestFailure};

// ---- a correct scalar rule, and broken variants -------------------------------------------

fn square_sin(x: f64, y: f64) -> f64 {
    x.sin() * y * y
}

fn square_sin_frule(x: Dual<f64, f64>, y: Dual<f64, f64>) -> Dual<f64, f64> {
    let (s, c) = x.primal.sin_cos();
    let v = s * y.primal * y.primal;
    Dual::new(v, c * y.primal * y.primal * x.tangent + 2.0 * s * y.primal * y.tangent)
}

fn square_sin_rrule(
    x: CoDual<f64, NoFData>,
    y: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64, f64)) {
    let (s, c) = x.primal.sin_cos();
    let yp = y.primal;
    (CoDual::new(s * yp * yp, NoFData), move |g: f64| (g * c * yp * yp, g * 2.0 * s * yp))
}

/// Gets the derivative with respect to `y` wrong by a factor of 1.5.
fn wrong_tangent_frule(x: Dual<f64, f64>, y: Dual<f64, f64>) -> Dual<f64, f64> {
    let d = square_sin_frule(x, y);
    Dual::new(d.primal, d.tangent + x.primal.sin() * y.primal * y.tangent)
}

fn wrong_primal_frule(x: Dual<f64, f64>, y: Dual<f64, f64>) -> Dual<f64, f64> {
    let d = square_sin_frule(x, y);
    Dual::new(d.primal + 1e-3, d.tangent)
}

fn wrong_gradient_rrule(
    x: CoDual<f64, NoFData>,
    y: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64, f64)) {
    let (out, pb) = square_sin_rrule(x, y);
    (out, move |g| {
        let (dx, dy) = pb(g);
        (-dx, dy)
    })
}

fn failure(r: Result<(), RuleTestFailure>) -> RuleTestFailure {
    match r {
        Ok(()) => panic!("expected the rule test to fail"),
        Err(e) => e,
    }
}

#[test]
fn correct_scalar_rule_passes() {
    test_rule!(square_sin(0.7, -1.3));
    test_rule!(square_sin(-2.0, 0.25), seed = 9);
}

#[test]
fn wrong_forward_derivative_is_caught_for_the_right_argument() {
    let e =
        failure(check_rule!(square_sin(0.7, -1.3), frule = wrong_tangent_frule, mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
    assert_eq!(e.argument.as_deref(), Some("-1.3"));
    let msg = e.to_string();
    assert!(msg.contains("forward rule disagrees with finite differences"), "{msg}");
    assert!(msg.contains("finite differences:"), "{msg}");
    assert!(msg.starts_with("rule test of `square_sin(0.7, -1.3)` failed"), "{msg}");
    // With both modes checked, the wrong forward rule is caught either against finite
    // differences or against the (correct) reverse rule.
    let e = failure(check_rule!(square_sin(0.7, -1.3), frule = wrong_tangent_frule));
    assert!(matches!(e.check, Check::ForwardVsFiniteDifferences | Check::ForwardVsReverse));
}

#[test]
fn wrong_primal_is_caught() {
    let e = failure(check_rule!(square_sin(0.7, -1.3), frule = wrong_primal_frule));
    assert_eq!(e.check, Check::PrimalOutput);
}

#[test]
fn wrong_reverse_gradient_is_caught_for_the_right_argument() {
    let e = failure(check_rule!(square_sin(0.7, -1.3), rrule = wrong_gradient_rrule));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
    assert_eq!(e.argument.as_deref(), Some("0.7"));
}

#[test]
fn one_mode_only() {
    // A broken rrule is not looked at when only the forward mode is checked, and vice versa.
    check_rule!(square_sin(0.7, -1.3), rrule = wrong_gradient_rrule, mode = forward).unwrap();
    check_rule!(square_sin(0.7, -1.3), frule = wrong_tangent_frule, mode = reverse).unwrap();
}

// ---- buffers behind & and &mut -------------------------------------------------------------

fn weighted_sum(w: &[f64], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

fn weighted_sum_frule(w: Dual<&[f64], &[f64]>, x: Dual<&[f64], &[f64]>) -> Dual<f64, f64> {
    let mut v = 0.0;
    let mut t = 0.0;
    for i in 0..w.primal.len() {
        v += w.primal[i] * x.primal[i];
        t += w.tangent[i] * x.primal[i] + w.primal[i] * x.tangent[i];
    }
    Dual::new(v, t)
}

fn weighted_sum_rrule<'a>(
    w: CoDual<&'a [f64], SharedVec<f64>>,
    x: CoDual<&'a [f64], SharedVec<f64>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<>) {
    let (wp, xp) = (w.primal.to_vec(), x.primal.to_vec());
    let (dw, dx) = (w.fdata, x.fdata);
    (CoDual::new(weighted_sum(&wp, &xp), NoFData), move |g: f64| {
        for i in 0..wp.len() {
            dw.add(i, g * xp[i]);
            dx.add(i, g * wp[i]);
        }
        (NoRData, NoRData)
    })
}

/// Overwrites the shadows instead of incrementing them: right when nothing else writes the
/// shadow, wrong as soon as it is seeded or aliased.
fn overwriting_rrule<'a>(
    w: CoDual<&'a [f64], SharedVec<f64>>,
    x: CoDual<&'a [f64], SharedVec<f64>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<>) {
    let (wp, xp) = (w.primal.to_vec(), x.primal.to_vec());
    let (dw, dx) = (w.fdata, x.fdata);
    (CoDual::new(weighted_sum(&wp, &xp), NoFData), move |g: f64| {
        for i in 0..wp.len() {
            dw.set(i, g * xp[i]);
            dx.set(i, g * wp[i]);
        }
        (NoRData, NoRData)
    })
}

#[test]
fn slices_by_reference() {
    let w = vec![1.0, -2.0, 0.5];
    let x = vec![0.3, 0.2, 4.0];
    test_rule!(weighted_sum(&w, &x));
}

#[test]
fn aliased_arguments_share_one_shadow() {
    let x = vec![1.0, -2.0, 0.5];
    // `weighted_sum(&x, &x)` is `|x|^2`: its gradient is `2x`, the sum over both uses.
    test_rule!(weighted_sum(&x, &x));
}

#[test]
fn overwriting_a_shadow_is_caught() {
    let w = vec![1.0, -2.0, 0.5];
    let x = vec![0.3, 0.2, 4.0];
    let e = failure(check_rule!(weighted_sum(&w, &x), rrule = overwriting_rrule));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
    let e = failure(check_rule!(weighted_sum(&x, &x), rrule = overwriting_rrule));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}

// x <- x * a (in place); returns the old first element.
fn scale_in_place(x: &mut [f64], a: f64) -> f64 {
    let first = x[0];
    x.iter_mut().for_each(|v| *v *= a);
    first
}

fn scale_in_place_frule(x: Dual<&mut [f64], &mut [f64]>, a: Dual<f64, f64>) -> Dual<f64, f64> {
    let out = Dual::new(x.primal[0], x.tangent[0]);
    for i in 0..x.primal.len() {
        x.tangent[i] = x.tangent[i] * a.primal + x.primal[i] * a.tangent;
        x.primal[i] *= a.primal;
    }
    out
}

fn scale_in_place_rrule(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    a: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64)) {
    restoring_scale(x, a, true)
}

fn forgetful_scale_rrule(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    a: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64)) {
    restoring_scale(x, a, false)
}

fn restoring_scale(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    a: CoDual<f64, NoFData>,
    restore: bool,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64)) {
    let old = x.primal.to_vec();
    let ap = a.primal;
    x.primal.with_mut(|v| v.iter_mut().for_each(|e| *e *= ap));
    let (xp, dx) = (x.primal, x.fdata);
    (CoDual::new(old[0], NoFData), move |g: f64| {
        // out = x_old[0]; x_new = a x_old.
        let mut da = 0.0;
        for (i, &o) in old.iter().enumerate() {
            let d = dx.get(i);
            da += d * o;
            dx.set(i, d * ap);
        }
        dx.add(0, g);
        if restore {
            xp.assign(&old);
        }
        (NoRData, da)
    })
}

#[test]
fn mutation_through_mut_reference() {
    let x = vec![1.0, -2.0, 0.5];
    test_rule!(scale_in_place(&mut x, 1.5));
}

#[test]
fn unrestored_state_is_caught() {
    let x = vec![1.0, -2.0, 0.5];
    let e = failure(check_rule!(scale_in_place(&mut x, 1.5), rrule = forgetful_scale_rrule));
    assert_eq!(e.check, Check::StateNotRestored);
    assert_eq!(e.argument.as_deref(), Some("&mut x"));
}

// A frule that forgets to mutate its argument.
fn pure_scale_frule(x: Dual<&mut [f64], &mut [f64]>, _a: Dual<f64, f64>) -> Dual<f64, f64> {
    Dual::new(x.primal[0], x.tangent[0])
}

#[test]
fn missing_mutation_is_caught() {
    let x = vec![1.0, -2.0, 0.5];
    let e =
        failure(check_rule!(scale_in_place(&mut x, 1.5), frule = pure_scale_frule, mode = forward));
    assert_eq!(e.check, Check::ArgumentState);
}

// ---- growth: the state after the call has another shape ------------------------------------

fn push_square(v: &mut Vec<f64>, x: f64) {
    v.push(x * x);
}

fn push_square_frule(
    v: Dual<&mut Vec<f64>, &mut Vec<f64>>,
    x: Dual<f64, f64>,
) -> Dual<(), NoTangent> {
    v.primal.push(x.primal * x.primal);
    v.tangent.push(2.0 * x.primal * x.tangent);
    Dual::new((), NoTangent)
}

fn push_square_rrule(
    v: CoDual<SharedVec<f64>, SharedVec<f64>>,
    x: CoDual<f64, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, f64)) {
    let xp = x.primal;
    v.primal.push(xp * xp);
    v.fdata.push(0.0);
    let (vp, dv) = (v.primal, v.fdata);
    (CoDual::new((), NoFData), move |_| {
        vp.pop();
        let d = dv.pop().unwrap_or(0.0);
        (NoRData, 2.0 * xp * d)
    })
}

#[test]
fn growing_a_vec() {
    let v = vec![1.0, 2.0];
    test_rule!(push_square(&mut v, 0.75));
}

// ---- by-value buffers and tuples -------------------------------------------------------------

fn total(v: Vec<f64>, t: (f64, usize)) -> f64 {
    v.iter().sum::<f64>() * t.0 + t.1 as f64
}

fn total_frule(
    v: Dual<Vec<f64>, Vec<f64>>,
    t: Dual<(f64, usize), (f64, NoTangent)>,
) -> Dual<f64, f64> {
    let s: f64 = v.primal.iter().sum();
    let ds: f64 = v.tangent.iter().sum();
    Dual::new(s * t.primal.0 + t.primal.1 as f64, ds * t.primal.0 + s * t.tangent.0)
}

#[allow(clippy::type_complexity)]
fn total_rrule(
    v: CoDual<Vec<f64>, SharedVec<f64>>,
    t: CoDual<(f64, usize), (NoFData, NoFData)>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, (f64, NoRData))) {
    let s: f64 = v.primal.iter().sum();
    let (a, n) = t.primal;
    let dv = v.fdata;
    let len = v.primal.len();
    (CoDual::new(s * a + n as f64, NoFData), move |g: f64| {
        for i in 0..len {
            dv.add(i, g * a);
        }
        (NoRData, (g * s, NoRData))
    })
}

#[test]
fn buffers_and_tuples_by_value() {
    let v = vec![0.5, 1.5, -1.0];
    test_rule!(total(v, (2.0, 3)));
}

// ---- tolerances scale with the random directions ------------------------------------------

fn sin1(x: f64) -> f64 {
    x.sin()
}

fn sign_flipped_sin_frule(x: Dual<f64, f64>) -> Dual<f64, f64> {
    Dual::new(x.primal.sin(), -x.primal.cos() * x.tangent)
}

#[test]
fn a_small_random_direction_does_not_hide_a_wrong_rule() {
    // With seed 1 the random tangent and cotangent of a scalar are small (|ẋ ȳ| ~ 4e-4), so an
    // absolute tolerance of 1e-3 that ignored their size would pass this sign error.
    for seed in 1..=5 {
        let e = failure(check_rule!(
            sin1(0.7),
            frule = sign_flipped_sin_frule,
            mode = forward,
            seed = seed
        ));
        assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
    }
}

#[differentiable]
fn by_mode(x: f64, mode: &str) -> f64 {
    match mode {
        "sq" => x * x,
        "cube" => x * x * x,
        _ => x.sin(),
    }
}

#[differentiable]
fn first_times(x: &[f64], k: f64) -> f64 {
    x[0] * k + x[x.len() - 1]
}

/// References passed to `test_rule!` by name: a `&str` (no derivative) as it is; a slice as
/// `&*x` or a sub-slice `&v[a..b]`, of which the test owns a copy.
#[test]
fn references_passed_by_name() {
    let mode = "cube";
    test_rule!(by_mode(0.3, mode));
    test_rule!(by_mode(0.3, "sq"));
    let v = vec![1.0, 2.0, 3.0];
    let x: &[f64] = &v;
    test_rule!(first_times(&*x, 2.0));
    test_rule!(first_times(&v[1..], 2.0));
}

/// A slice passed by name cannot be perturbed through the reference: refused with a message
/// saying what to write, rather than reported as a wrong derivative.
#[test]
#[should_panic(expected = "write it `&*x`")]
fn a_slice_passed_by_name_is_refused() {
    let v = vec![1.0, 2.0];
    let x: &[f64] = &v;
    test_rule!(first_times(x, 2.0));
}

fn cube(x: f64) -> f64 {
    x * x * x
}

// 2x instead of 3x²: 1.4 at 0.7, where the derivative is 1.47 (5% off).
fn cube_frule_5_percent_off(x: Dual<f64, f64>) -> Dual<f64, f64> {
    Dual::new(cube(x.primal), 2.0 * x.primal * x.tangent)
}

fn cube_rrule_5_percent_off(
    x: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64,)) {
    let v = x.primal;
    (CoDual::new(cube(v), NoFData), move |g: f64| (2.0 * v * g,))
}

/// A derivative a few percent off is caught for a number passed by value: the cotangent of its
/// state after the call (the number itself) pairs with its tangent on both sides of the checks,
/// and is left out of the comparison (it once hid this error).
#[test]
fn small_errors_in_scalar_rules_are_caught() {
    let e = failure(check_rule!(cube(0.7), frule = cube_frule_5_percent_off, mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
    let e = failure(check_rule!(cube(0.7), rrule = cube_rrule_5_percent_off, mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}
