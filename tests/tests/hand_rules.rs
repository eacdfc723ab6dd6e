//! Rules by hand: `zero_adjoint!`, `stop_gradient` and `from_rrule!`, each checked by the test
//! utility in forward and reverse mode, composed with derived rules (forward mode) and with
//! each other by hand (reverse mode), and a wrong chain rule caught.

#![allow(clippy::ptr_arg)]

use mooncake_runtime::prelude::*;
use mooncake_runtime::rules::scalar::{add_rrule, mul_rrule};
use mooncake_runtime::test_utils::{Check, RuleTestFailure};

fn failure(r: Result<(), RuleTestFailure>) -> RuleTestFailure {
    match r {
        Ok(()) => panic!("expected the rule test to fail"),
        Err(e) => e,
    }
}

// ---- zero_adjoint!: several argument types ----------------------------------------------------

fn count_positive(x: &[f64]) -> usize {
    x.iter().filter(|v| **v > 0.0).count()
}

/// Piecewise constant in `x`.
fn bucket(x: f64, width: usize) -> f64 {
    (x / width as f64).floor()
}

fn argmax(v: Vec<f64>) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

fn positive_mask(x: [f64; 3]) -> [f64; 3] {
    x.map(|v| if v > 0.0 { 1.0 } else { 0.0 })
}

fn indicator_vec(x: &[f64], threshold: f64) -> Vec<f64> {
    x.iter().map(|v| if *v > threshold { 1.0 } else { 0.0 }).collect()
}

fn parity(n: i32, m: u64) -> bool {
    (n as i64 + m as i64) % 2 == 0
}

fn sign_count<T: Float>(x: &[T]) -> i64 {
    x.iter().map(|v| if *v > T::ZERO { 1 } else { -1 }).sum()
}

fn round_to<T: Float>(x: T, steps: u32) -> T {
    let s = T::from_f64(steps as f64);
    (x * s).round() / s
}

fn first_of<const N: usize>(x: [f64; N]) -> usize {
    x.iter().position(|v| *v > 0.0).unwrap_or(N)
}

zero_adjoint! {
    fn count_positive(x: &[f64]) -> usize;
    fn bucket(x: f64, width: usize) -> f64;
    fn argmax(v: Vec<f64>) -> usize;
    fn positive_mask(x: [f64; 3]) -> [f64; 3];
    fn indicator_vec(x: &[f64], threshold: f64) -> Vec<f64>;
    fn parity(n: i32, m: u64) -> bool;
    /// Generic signatures give generic rules.
    fn sign_count<T: Float>(x: &[T]) -> i64;
    fn round_to<T: Float>(x: T, steps: u32) -> T;
    fn first_of<const N: usize>(x: [f64; N]) -> usize;
}

mod stats {
    use mooncake_runtime::prelude::*;

    pub fn spread_bucket(x: &[f64]) -> f64 {
        let (lo, hi) =
            x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
        (hi - lo).floor()
    }

    // Invoked beside the function, with `pub`: callers reach the rules by the function's path.
    zero_adjoint! {
        pub fn spread_bucket(x: &[f64]) -> f64;
    }
}

mod foreign {
    pub fn clamp_index(i: usize, n: usize) -> usize {
        i.min(n.saturating_sub(1))
    }
}

// A function of another module, declared by path where it is used by its bare name.
use foreign::clamp_index;
zero_adjoint! {
    fn foreign::clamp_index(i: usize, n: usize) -> usize;
}

#[test]
fn zero_adjoint_rules_pass_the_rule_test_in_both_modes() {
    let x = vec![1.5, -2.0, 3.25, -0.75];
    test_rule!(count_positive(&x));
    test_rule!(bucket(7.3, 2));
    test_rule!(argmax(x));
    test_rule!(positive_mask([0.5, -1.0, 2.0]));
    test_rule!(indicator_vec(&x, 0.1));
    test_rule!(parity(3, 8));
    test_rule!(sign_count(&x));
    test_rule!(round_to(0.737, 4));
    test_rule!(round_to(0.737_f32, 4), rtol = 1e-2, atol = 1e-2);
    test_rule!(first_of([-1.0, 2.0, 0.5]));
    test_rule!(stats::spread_bucket(&x));
    test_rule!(clamp_index(7, 4));
}

#[test]
fn zero_adjoint_rules_one_mode_at_a_time() {
    let x = vec![1.5, -2.0, 3.25];
    test_rule!(count_positive(&x), frule = count_positive_frule, mode = forward);
    test_rule!(count_positive(&x), rrule = count_positive_rrule, mode = reverse);
    test_rule!(bucket(-4.6, 3), frule = bucket_frule, mode = forward);
    test_rule!(bucket(-4.6, 3), rrule = bucket_rrule, mode = reverse);
    test_rule!(sign_count(&x), rrule = sign_count_rrule, mode = reverse);
    test_rule!(round_to(1.26, 10), rrule = round_to_rrule, mode = reverse);
    test_rule!(stats::spread_bucket(&x), rrule = stats::spread_bucket_rrule, mode = reverse);
}

#[test]
fn zero_adjoint_rules_by_hand() {
    // Forward: primal result, zero tangent of the output's tangent type.
    let x = [0.5, -1.0, 2.0];
    let m = positive_mask_frule(Dual::new(x, [1.0, 1.0, 1.0]));
    assert_eq!((m.primal, m.tangent), ([1.0, 0.0, 1.0], [0.0; 3]));
    let r = round_to_frule(Dual::new(0.737_f64, 1.0), Dual::new(4, NoTangent));
    assert_eq!((r.primal, r.tangent), (0.75, 0.0));
    let n = sign_count_frule::<f64>(Dual::new(&x[..], &[1.0, 2.0, 3.0][..]));
    assert_eq!((n.primal, n.tangent), (1, NoTangent));

    // Reverse: fresh zero fdata for the output; zero rdata for every argument.
    let shadow = SharedVec::from_vec(vec![5.0, 6.0, 7.0]);
    let (y, pullback) =
        indicator_vec_rrule(CoDual::new(&x[..], shadow.clone()), CoDual::new(0.0, NoFData));
    assert_eq!(y.primal, vec![1.0, 0.0, 1.0]);
    assert_eq!(y.fdata.to_vec(), vec![0.0; 3]);
    assert!(!y.fdata.ptr_eq(&shadow));
    y.fdata.add(0, 10.0); // whatever reaches the output's shadow ...
    assert_eq!(pullback(NoRData), (NoRData, 0.0));
    assert_eq!(shadow.to_vec(), vec![5.0, 6.0, 7.0]); // ... does not reach the input's.

    let (y, pullback) = bucket_rrule(CoDual::new(7.3, NoFData), CoDual::new(2, NoFData));
    assert_eq!(y.primal, 3.0);
    assert_eq!(pullback(1.0), (0.0, NoRData));
    let (y, pullback) = positive_mask_rrule(CoDual::new(x, [NoFData; 3]));
    assert_eq!(y.primal, [1.0, 0.0, 1.0]);
    assert_eq!(pullback([1.0, 2.0, 3.0]), ([0.0; 3],));
    let (y, pullback) = argmax_rrule(CoDual::new(x.to_vec(), SharedVec::zeros(3)));
    assert_eq!(y.primal, 2);
    assert_eq!(pullback(NoRData), (NoRData,));
}

#[test]
fn a_function_that_is_not_zero_adjoint_is_caught() {
    fn twice(x: f64) -> f64 {
        2.0 * x
    }
    zero_adjoint! {
        fn twice(x: f64) -> f64;
    }
    let e = failure(check_rule!(twice(1.5), mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
    let e = failure(check_rule!(twice(1.5), mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}

// ---- stop_gradient ----------------------------------------------------------------------------

#[test]
fn stop_gradient_rules() {
    let y = stop_gradient_frule(Dual::new(2.5_f64, 1.0));
    assert_eq!((y.primal, y.tangent), (2.5, 0.0));
    let y = stop_gradient_frule(Dual::new(vec![1.0, 2.0], vec![3.0, 4.0]));
    assert_eq!((y.primal, y.tangent), (vec![1.0, 2.0], vec![0.0, 0.0]));
    let y = stop_gradient_frule(Dual::new((1.0_f64, 3_usize), (1.0, NoTangent)));
    assert_eq!(y.tangent, (0.0, NoTangent));

    let (y, pullback) = stop_gradient_rrule(CoDual::new(2.5_f64, NoFData));
    assert_eq!(y.primal, 2.5);
    assert_eq!(pullback(7.0), (0.0,));

    // A buffer by value: the output gets a fresh shadow, unrelated to the input's.
    let shadow = SharedVec::from_vec(vec![1.0, 1.0]);
    let (y, pullback) = stop_gradient_rrule(CoDual::new(vec![1.0, 2.0], shadow.clone()));
    assert_eq!(y.primal, vec![1.0, 2.0]);
    assert!(!y.fdata.ptr_eq(&shadow));
    y.fdata.add(1, 5.0);
    assert_eq!(pullback(NoRData), (NoRData,));
    assert_eq!(shadow.to_vec(), vec![1.0, 1.0]);

    // Deliberately not the identity's derivative: the rule checker says so.
    let e = failure(check_rule!(stop_gradient(2.5), mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
    let e = failure(check_rule!(stop_gradient(2.5), mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}

// ---- composition with derived rules (forward mode) ---------------------------------------------

/// Calls a zero-adjoint function and `stop_gradient` on a value that is locally constant, so
/// finite differences of the primal agree with the derived rule.
#[differentiable]
fn uses_hand_rules(x: &[f64], y: f64) -> f64 {
    let n = count_positive(x);
    let s = stop_gradient(n as f64 + 1.0);
    let b = bucket(y, 2);
    let spread = stats::spread_bucket(x);
    let k = clamp_index(n, 2);
    y * y * s + x[0] * y + b + spread * x[k]
}

/// `stop_gradient` on a value that does depend on `x`: the derivative differs from the
/// primal's, on purpose.
#[differentiable]
fn ratio(x: f64) -> f64 {
    let scale = stop_gradient(2.0 * x);
    x / scale
}

#[test]
fn composition_with_derived_rules_in_forward_mode() {
    let x = vec![1.5, -2.0, 3.25, -0.75];
    test_rule!(uses_hand_rules(&x, 1.3), mode = forward);
    test_rule!(uses_hand_rules(&x, -2.2), frule = uses_hand_rules_frule, mode = forward);

    // d/dx [x / stop_gradient(2x)] = 1 / (2x), where the primal is the constant 1/2.
    let d = ratio_frule(Dual::new(-4.0, 1.0));
    assert_eq!((d.primal, d.tangent), (0.5, -0.125));
    let e = failure(check_rule!(ratio(-4.0), mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
}

// ---- composition in reverse mode, by hand -----------------------------------------------------

fn uses_hand_rules_by_hand(x: &[f64], y: f64) -> f64 {
    let n = count_positive(x);
    let s = stop_gradient(n as f64 + 1.0);
    let b = bucket(y, 2);
    y * y * s + x[0] * y + b
}

/// The reverse rule of `uses_hand_rules_by_hand`, composed from the rules of its calls as
/// derived code will compose them.
#[allow(clippy::type_complexity)]
fn uses_hand_rules_by_hand_rrule(
    x: CoDual<&[f64], SharedVec<f64>>,
    y: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64) + use<>) {
    let dx = x.fdata.clone();
    let x0 = x.primal[0];
    // n = count_positive(x)
    let (n, pb_n) = count_positive_rrule(CoDual::new(x.primal, x.fdata.clone()));
    // s = stop_gradient(n as f64 + 1.0)
    let (s, pb_s) = stop_gradient_rrule(CoDual::new(n.primal as f64 + 1.0, NoFData));
    // b = bucket(y, 2)
    let (b, pb_b) = bucket_rrule(y, CoDual::new(2, NoFData));
    // t1 = y * y; t2 = t1 * s; t3 = x0 * y; t4 = t2 + t3; out = t4 + b
    let (t1, pb_t1) = mul_rrule(y, y);
    let (t2, pb_t2) = mul_rrule(t1, s);
    let (t3, pb_t3) = mul_rrule(CoDual::new(x0, NoFData), y);
    let (t4, pb_t4) = add_rrule(t2, t3);
    let (out, pb_out) = add_rrule(t4, b);
    (out, move |g: f64| {
        let (g4, gb) = pb_out(g);
        let (g2, g3) = pb_t4(g4);
        let (gx0, gy3) = pb_t3(g3);
        let (g1, gs) = pb_t2(g2);
        let (gy1a, gy1b) = pb_t1(g1);
        let (gy_b, NoRData) = pb_b(gb);
        let (gn,) = pb_s(gs);
        assert_eq!(gn, 0.0, "stop_gradient returns a zero gradient");
        let (NoRData,) = pb_n(NoRData);
        dx.add(0, gx0);
        (NoRData, gy3 + gy1a + gy1b + gy_b)
    })
}

#[test]
fn composition_in_reverse_mode_by_hand() {
    let x = vec![1.5, -2.0, 3.25, -0.75];
    test_rule!(
        uses_hand_rules_by_hand(&x, 1.3),
        rrule = uses_hand_rules_by_hand_rrule,
        mode = reverse
    );
    test_rule!(
        uses_hand_rules_by_hand(&x, -2.2),
        rrule = uses_hand_rules_by_hand_rrule,
        mode = reverse
    );
}

// ---- from_rrule! ------------------------------------------------------------------------------

fn my_dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn my_dot_frule(a: Dual<&[f64], &[f64]>, b: Dual<&[f64], &[f64]>) -> Dual<f64, f64> {
    let t = my_dot(a.tangent, b.primal) + my_dot(a.primal, b.tangent);
    Dual::new(my_dot(a.primal, b.primal), t)
}

fn my_dot_chainrule(
    a: &[f64],
    b: &[f64],
) -> (f64, impl FnOnce(f64) -> (Vec<f64>, Vec<f64>) + use<>) {
    let (a, b) = (a.to_vec(), b.to_vec());
    let y = my_dot(&a, &b);
    (y, move |dy: f64| (b.iter().map(|v| dy * v).collect(), a.iter().map(|v| dy * v).collect()))
}

fn scaled_square_norm(x: &[f64], a: f64) -> f64 {
    a * x.iter().map(|v| v * v).sum::<f64>()
}

fn scaled_square_norm_chainrule(
    x: &[f64],
    a: f64,
) -> (f64, impl FnOnce(f64) -> (Vec<f64>, f64) + use<>) {
    let x = x.to_vec();
    let s: f64 = x.iter().map(|v| v * v).sum();
    (a * s, move |dy: f64| (x.iter().map(|v| 2.0 * a * v * dy).collect(), s * dy))
}

/// A buffer by value and a buffer output: tangents split into fdata (added into the shadow)
/// and rdata.
fn axpy(a: f64, x: Vec<f64>, y: &[f64]) -> Vec<f64> {
    x.iter().zip(y).map(|(xi, yi)| a * xi + yi).collect()
}

#[allow(clippy::type_complexity)]
fn axpy_chainrule(
    a: f64,
    x: Vec<f64>,
    y: &[f64],
) -> (Vec<f64>, impl FnOnce(Vec<f64>) -> (f64, Vec<f64>, Vec<f64>) + use<>) {
    let out = axpy(a, x.clone(), y);
    (out, move |dz: Vec<f64>| {
        let da = dz.iter().zip(&x).map(|(d, xi)| d * xi).sum();
        let dx = dz.iter().map(|d| a * d).collect();
        (da, dx, dz)
    })
}

/// Generic, with a non-differentiable argument.
fn weighted_sum<T: Float>(x: &[T], w: T, skip: usize) -> T {
    let mut s = T::ZERO;
    for (i, v) in x.iter().enumerate() {
        if i != skip {
            s += w * *v;
        }
    }
    s
}

#[allow(clippy::type_complexity)]
fn weighted_sum_chainrule<T: Float>(
    x: &[T],
    w: T,
    skip: usize,
) -> (T, impl FnOnce(T) -> (Vec<T>, T, NoTangent) + use<T>) {
    let x = x.to_vec();
    let y = weighted_sum(&x, w, skip);
    (y, move |dy: T| {
        let mut s = T::ZERO;
        let dx = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if i == skip {
                    T::ZERO
                } else {
                    s += *v;
                    w * dy
                }
            })
            .collect();
        (dx, s * dy, NoTangent)
    })
}

fn cube(x: f64) -> f64 {
    x * x * x
}

/// Deliberately wrong: the derivative of x³ is 3x², not 2x².
fn cube_chainrule(x: f64) -> (f64, impl FnOnce(f64) -> (f64,)) {
    (cube(x), move |dy| (2.0 * x * x * dy,))
}

from_rrule! {
    fn my_dot(a: &[f64], b: &[f64]) -> f64 => my_dot_chainrule;
    fn scaled_square_norm(x: &[f64], a: f64) -> f64 => scaled_square_norm_chainrule;
    fn axpy(a: f64, x: Vec<f64>, y: &[f64]) -> Vec<f64> => axpy_chainrule;
    fn weighted_sum<T: Float>(x: &[T], w: T, skip: usize) -> T => weighted_sum_chainrule;
    fn cube(x: f64) -> f64 => cube_chainrule;
}

#[test]
fn from_rrule_on_a_dot_product() {
    let (a, b) = (vec![1.0, 2.0, -0.5], vec![3.0, -1.0, 4.0]);
    test_rule!(my_dot(&a, &b), rrule = my_dot_rrule, mode = reverse);
    // With a hand-written forward rule, both modes and their agreement.
    test_rule!(my_dot(&a, &b));
    // Aliased arguments: one shadow receives both cotangents (the gradient of |a|² is 2a).
    test_rule!(my_dot(&a, &a), rrule = my_dot_rrule, mode = reverse);

    // The shadows are incremented, not overwritten.
    let (da, db) = (SharedVec::from_vec(vec![1.0; 3]), SharedVec::zeros(3));
    let (y, pullback) =
        my_dot_rrule(CoDual::new(&a[..], da.clone()), CoDual::new(&b[..], db.clone()));
    assert_eq!(y.primal, -1.0);
    assert_eq!(pullback(2.0), (NoRData, NoRData));
    assert_eq!(da.to_vec(), vec![7.0, -1.0, 9.0]);
    assert_eq!(db.to_vec(), vec![2.0, 4.0, -1.0]);
}

#[test]
fn from_rrule_on_a_slice_and_a_scalar() {
    let x = vec![0.5, -1.0, 2.0];
    test_rule!(scaled_square_norm(&x, 1.5), rrule = scaled_square_norm_rrule, mode = reverse);
    test_rule!(scaled_square_norm(&x, -0.25), rrule = scaled_square_norm_rrule, mode = reverse);
    let dx = SharedVec::zeros(3);
    let (y, pullback) =
        scaled_square_norm_rrule(CoDual::new(&x[..], dx.clone()), CoDual::new(2.0, NoFData));
    assert_eq!(y.primal, 10.5);
    assert_eq!(pullback(1.0), (NoRData, 5.25));
    assert_eq!(dx.to_vec(), vec![2.0, -4.0, 8.0]);
}

#[test]
fn from_rrule_with_buffers_by_value_and_generics() {
    let (x, y) = (vec![1.0, -2.0], vec![0.5, 4.0]);
    test_rule!(axpy(1.5, x, &y), rrule = axpy_rrule, mode = reverse);
    // The output's fdata and rdata are joined into the tangent the chain rule sees.
    let (dx, dy) = (SharedVec::zeros(2), SharedVec::zeros(2));
    let (z, pullback) = axpy_rrule(
        CoDual::new(2.0, NoFData),
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(&y[..], dy.clone()),
    );
    assert_eq!(z.primal, vec![2.5, 0.0]);
    z.fdata.add(0, 1.0);
    z.fdata.add(1, 3.0);
    assert_eq!(pullback(NoRData), (-5.0, NoRData, NoRData));
    assert_eq!((dx.to_vec(), dy.to_vec()), (vec![2.0, 6.0], vec![1.0, 3.0]));

    let v = vec![0.5, -1.0, 2.0, 0.25];
    test_rule!(weighted_sum(&v, 1.5, 1), rrule = weighted_sum_rrule, mode = reverse);
    let v32: Vec<f32> = vec![0.5, -1.0, 2.0];
    test_rule!(
        weighted_sum(&v32, 1.5_f32, 0),
        rrule = weighted_sum_rrule,
        mode = reverse,
        rtol = 1e-2,
        atol = 1e-2
    );
}

#[test]
fn a_wrong_chain_rule_is_rejected() {
    let e = failure(check_rule!(cube(1.2), rrule = cube_rrule, mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
    assert_eq!(e.argument.as_deref(), Some("1.2"));
}
