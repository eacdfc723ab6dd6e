//! `#[frule(for = f)]` / `#[rrule(for = f)]`: hand-written rules whose signatures are checked
//! against their functions at the rule, for each kind of argument; the rules are also checked
//! numerically, and used by derived code.

use mooncake_runtime::prelude::*;

fn weighted(w: &[f64], x: &mut [f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        x[i] *= a;
        s += w[i] * x[i];
    }
    s
}

#[frule(for = weighted)]
fn weighted_frule(
    w: Dual<&[f64], &[f64]>,
    x: Dual<&mut [f64], &mut [f64]>,
    a: Dual<f64, f64>,
) -> Dual<f64, f64> {
    let (mut s, mut ds) = (0.0, 0.0);
    for i in 0..x.primal.len() {
        x.tangent[i] = x.tangent[i] * a.primal + x.primal[i] * a.tangent;
        x.primal[i] *= a.primal;
        s += w.primal[i] * x.primal[i];
        ds += w.tangent[i] * x.primal[i] + w.primal[i] * x.tangent[i];
    }
    Dual::new(s, ds)
}

#[rrule(for = weighted)]
fn weighted_rrule(
    w: CoDual<&[f64], SharedVec<f64>>,
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    a: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData, f64) + use<>) {
    let wv = w.primal.to_vec();
    let old = x.primal.to_vec();
    let ap = a.primal;
    x.primal.with_mut(|v| v.iter_mut().for_each(|e| *e *= ap));
    let s: f64 = wv.iter().zip(&old).map(|(w, o)| w * o * ap).sum();
    let (dw, xp, dx) = (w.fdata, x.primal, x.fdata);
    (CoDual::new(s, NoFData), move |ds: f64| {
        let mut da = 0.0;
        for i in 0..old.len() {
            // s = sum w_i x_i' with x_i' = a x_i; and x' itself is an output.
            let dxi_new = dx.get(i) + ds * wv[i];
            dw.add(i, ds * old[i] * ap);
            da += dxi_new * old[i];
            dx.set(i, dxi_new * ap);
        }
        xp.assign(&old);
        (NoRData, NoRData, da)
    })
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

fn cross(p: Point, q: &Point) -> f64 {
    p.x * q.y - p.y * q.x
}

#[frule(for = cross)]
fn cross_frule(p: Dual<Point, PointTangent>, q: Dual<&Point, &PointTangent>) -> Dual<f64, f64> {
    let (a, b) = (p.primal, q.primal);
    let (da, db) = (p.tangent, q.tangent);
    Dual::new(cross(a, b), da.x * b.y + a.x * db.y - da.y * b.x - a.y * db.x)
}

fn double<T: Float>(x: T) -> T {
    x + x
}

#[frule(for = double)]
fn double_frule<T: Float>(x: Dual<T, T>) -> Dual<T, T> {
    Dual::new(x.primal + x.primal, x.tangent + x.tangent)
}

#[differentiable(forward_only)]
fn uses_hand_rules(w: &[f64], x: &mut [f64], p: Point, a: f64) -> f64 {
    let q = Point { x: a, y: 1.0 };
    weighted(w, x, a) + cross(p, &q) + double(a)
}

#[test]
fn checked_rules_are_right() {
    let w = vec![0.5, -1.0, 2.0];
    let x = vec![1.0, 2.0, -0.5];
    test_rule!(weighted(&w, &mut x, 1.5));
    test_rule!(cross(Point { x: 0.3, y: -1.2 }, &Point { x: 1.5, y: 0.5 }), mode = forward);
    test_rule!(double(0.7), mode = forward);
    test_rule!(double(0.7_f32), mode = forward, rtol = 1e-2, atol = 1e-2);
    test_rule!(uses_hand_rules(&w, &mut x, Point { x: 0.3, y: -1.2 }, 0.7), mode = forward);
}

#[rrule(for = double)]
fn double_rrule<T: Float>(x: CoDual<T, NoFData>) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,)) {
    (CoDual::new(x.primal + x.primal, NoFData), move |dy: T| (dy + dy,))
}

/// Derived code in both modes calls the checked hand-written rules, including `weighted`'s
/// rule for a `&mut` argument.
#[differentiable]
fn through_hand_rules(w: &[f64], x: &mut [f64], a: f64) -> f64 {
    let s = weighted(w, x, a);
    double(s) * x[0] + double(a)
}

#[test]
fn derived_rules_compose_with_checked_hand_rules_in_both_modes() {
    let w = vec![0.5, -1.0, 2.0];
    let x = vec![1.0, 2.0, -0.5];
    test_rule!(double(0.7));
    // Both modes against finite differences, and against each other.
    test_rule!(through_hand_rules(&w, &mut x, 1.5));
    let mut xs = x.clone();
    let (y, (dw, dx, da)) = value_and_gradient!(through_hand_rules(&w, &mut xs, 1.5));
    assert!((y - (2.0 * weighted(&w, &mut x.clone(), 1.5) * 1.5 * x[0] + 3.0)).abs() < 1e-12);
    assert_eq!((dw.len(), dx.len()), (3, 3));
    assert!(da.is_finite());
}

/// Deliberately wrong: the signature is right (the check passes), the derivative is not.
fn square(x: f64) -> f64 {
    x * x
}

#[frule(for = square)]
fn square_frule(x: Dual<f64, f64>) -> Dual<f64, f64> {
    Dual::new(x.primal * x.primal, x.primal * x.tangent) // should be 2x ẋ
}

#[rrule(for = square)]
fn square_rrule(x: CoDual<f64, NoFData>) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64,)) {
    (CoDual::new(x.primal * x.primal, NoFData), move |dy: f64| (2.0 * x.primal * dy,))
}

#[test]
fn a_wrong_hand_rule_with_a_right_signature_is_caught() {
    use mooncake_runtime::test_utils::Check;
    let failure = check_rule!(square(1.3), mode = forward).unwrap_err();
    assert_eq!(failure.check, Check::ForwardVsFiniteDifferences);
    // The reverse rule alone is right; with both, the modes disagree or the forward one fails.
    check_rule!(square(1.3), mode = reverse).unwrap();
    assert!(check_rule!(square(1.3)).is_err());
}
