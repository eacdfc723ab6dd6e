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
