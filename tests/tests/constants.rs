//! Arguments marked `Const(..)` in `value_and_gradient!` / `value_and_pullback!` (issue 13): no
//! gradient for them (`NoTangent` in their place), and every other gradient exactly what the
//! call without `Const` returns, which is itself checked against finite differences and
//! forward mode by `test_rule!` (and here once more against forward mode along a direction).
//! Covered: slices read in loops (the loads whose adjoints go into a sink), struct arguments
//! whose buffer fields are viewed, scalars and arrays by value, a `&mut` argument (still
//! restored), arguments handed to other differentiable functions, generic functions, methods,
//! the prepared form and `value_and_pullback!`.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;
use mooncake_tests::prepared::*;

/// `(w·x − y)²`.
#[differentiable]
fn dot_loss(w: &[f64], x: &[f64], y: f64) -> f64 {
    let mut p = 0.0;
    for i in 0..w.len() {
        p += w[i] * x[i];
    }
    (p - y) * (p - y)
}

/// A layer over rows of `x`: `Σ_r scale · tanh(b + Σ_i w_i x_{r,i})`.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Layer {
    w: Vec<f64>,
    b: f64,
    n: usize,
}

#[differentiable]
fn layer_loss(l: &Layer, x: &[f64], scale: f64) -> f64 {
    let mut s = 0.0;
    for r in 0..x.len() / l.n {
        let mut z = l.b;
        for i in 0..l.n {
            z += l.w[i] * x[r * l.n + i];
        }
        s += scale * z.tanh();
    }
    s
}

#[differentiable]
fn weighted_sum(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (k * x[i]).sin();
    }
    s
}

/// Constants handed on to another differentiable function.
#[differentiable]
fn with_calls(a: &[f64], b: &[f64], k: f64) -> f64 {
    weighted_sum(a, k) * weighted_sum(b, 2.0 * k) + a[0] * b[1]
}

#[differentiable]
fn arrays(p: [f64; 3], q: [f64; 3]) -> f64 {
    p[0] * q[1] - p[2] * q[0] + (p[1] * q[2]).sin()
}

/// A `&mut` state, written and read.
#[differentiable]
fn stateful(acc: &mut [f64], x: &[f64], rate: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..acc.len() {
        acc[i] = acc[i] * rate + x[i];
        s += acc[i] * acc[i];
    }
    s
}

#[differentiable]
fn generic_norm<T: Float>(x: &[T], s: T) -> T {
    let mut t = T::ZERO;
    for i in 0..x.len() {
        t += s * x[i] * x[i];
    }
    t.sqrt()
}

#[differentiable]
impl Layer {
    fn apply(&self, x: &[f64]) -> f64 {
        let mut z = self.b;
        for i in 0..self.n {
            z += self.w[i] * x[i];
        }
        z * z
    }
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[test]
fn the_rules_are_right() {
    let (w, x) = (xs(5, 0.7), xs(5, 1.3));
    test_rule!(dot_loss(&w, &x, 0.4));
    let l = Layer { w: xs(3, 0.4), b: 0.1, n: 3 };
    let x6 = xs(6, 0.9);
    test_rule!(layer_loss(&l, &x6, 1.5));
    test_rule!(with_calls(&w, &x, 0.8));
    test_rule!(arrays([0.1, 0.2, 0.3], [1.0, -0.5, 2.0]));
    let acc = xs(4, 0.2);
    let x4 = x[..4].to_vec();
    test_rule!(stateful(&mut acc, &x4, 0.9));
    test_rule!(generic_norm(&x, 2.0));
}

#[test]
fn constants_get_no_gradient_and_the_rest_is_unchanged() {
    let (w, x) = (xs(5, 0.7), xs(5, 1.3));
    let (v, (gw, gx, gy)) = value_and_gradient!(dot_loss(&w, &x, 0.4));
    let (v1, (cw, cx, cy)) = value_and_gradient!(dot_loss(&w, Const(&x), Const(0.4)));
    assert_eq!((v, &gw), (v1, &cw));
    assert_eq!((cx, cy), (NoTangent, NoTangent));
    let (v2, (cw, cx, cy)) = value_and_gradient!(dot_loss(Const(&w), &x, 0.4));
    assert_eq!((v, &gx, gy), (v2, &cx, cy));
    assert_eq!(cw, NoTangent);
    let (_, all) = value_and_gradient!(dot_loss(Const(&w), Const(&x), Const(0.4)));
    assert_eq!(all, (NoTangent, NoTangent, NoTangent));

    // Against forward mode along a direction in `w`, with `x` and `y` constant.
    let dw = xs(5, 2.1);
    let (_, d) = value_and_derivative!(dot_loss(&w, &x, 0.4), (dw.clone(), vec![0.0; 5], 0.0));
    let (_, (cw, _, _)) = value_and_gradient!(dot_loss(&w, Const(&x), Const(0.4)));
    assert!((dot(&cw, &dw) - d).abs() < 1e-12 * (1.0 + d.abs()));
}

#[test]
fn struct_fields_and_scalars() {
    let l = Layer { w: xs(3, 0.4), b: 0.1, n: 3 };
    let x = xs(12, 0.9);
    let (v, (gl, gx, gs)) = value_and_gradient!(layer_loss(&l, &x, 1.5));
    let (v1, (cl, cx, cs)) = value_and_gradient!(layer_loss(&l, Const(&x), Const(1.5)));
    assert_eq!(v, v1);
    assert_eq!((&gl.w, gl.b), (&cl.w, cl.b));
    assert_eq!((cx, cs), (NoTangent, NoTangent));
    let (_, (cl, cx, cs)) = value_and_gradient!(layer_loss(Const(&l), &x, 1.5));
    assert_eq!(cl, NoTangent);
    assert_eq!((&gx, gs), (&cx, cs));
    let (_, (cl, cx, cs)) = value_and_gradient!(layer_loss(Const(&l), Const(&x), 1.5));
    assert_eq!((cl, cx, cs), (NoTangent, NoTangent, gs));
}

#[test]
fn constants_handed_to_calls() {
    let (a, b) = (xs(4, 0.3), xs(4, 1.7));
    let (_, (ga, gb, gk)) = value_and_gradient!(with_calls(&a, &b, 0.8));
    let (_, (ca, cb, ck)) = value_and_gradient!(with_calls(&a, Const(&b), 0.8));
    assert_eq!((&ga, gk), (&ca, ck));
    assert_eq!(cb, NoTangent);
    let (_, (ca, cb, ck)) = value_and_gradient!(with_calls(Const(&a), &b, Const(0.8)));
    assert_eq!(&gb, &cb);
    assert_eq!((ca, ck), (NoTangent, NoTangent));
}

#[test]
fn arrays_by_value() {
    let (p, q) = ([0.1, 0.2, 0.3], [1.0, -0.5, 2.0]);
    let (_, (gp, gq)) = value_and_gradient!(arrays(p, q));
    let (_, (cp, cq)) = value_and_gradient!(arrays(p, Const(q)));
    assert_eq!((gp, cq), (cp, NoTangent));
    let (_, (cp, cq)) = value_and_gradient!(arrays(Const(p), q));
    assert_eq!((cp, gq), (NoTangent, cq));
}

#[test]
fn a_constant_mut_argument_is_still_restored() {
    let x = xs(4, 1.1);
    let mut acc = xs(4, 0.2);
    let entry = acc.clone();
    let (v, (_, gx, gr)) = value_and_gradient!(stateful(&mut acc, &x, 0.9));
    assert_eq!(acc, entry);
    let (v1, (ca, cx, cr)) = value_and_gradient!(stateful(Const(&mut acc), &x, 0.9));
    assert_eq!(acc, entry);
    assert_eq!((v, &gx, gr), (v1, &cx, cr));
    assert_eq!(ca, NoTangent);
}

#[test]
fn generic_functions_and_methods() {
    let x = xs(5, 0.6);
    let (_, (gx, gs)) = value_and_gradient!(generic_norm(&x, 2.0));
    let (_, (cx, cs)) = value_and_gradient!(generic_norm(&x, Const(2.0)));
    assert_eq!((&gx, cs), (&cx, NoTangent));
    let (_, (cx, cs)) = value_and_gradient!(generic_norm(Const(&x), 2.0));
    assert_eq!((cx, gs), (NoTangent, cs));
    let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (_, (cx, _)) = value_and_gradient!(generic_norm(&xf, Const(2.0_f32)));
    assert_eq!(cx.len(), 5);

    let l = Layer { w: xs(3, 0.4), b: 0.1, n: 3 };
    let (_, (gl, gx)) = value_and_gradient!(Layer::apply(&l, &x[..3]));
    let (_, (cl, cx)) = value_and_gradient!(Layer::apply(&l, Const(&x[..3])));
    assert_eq!((&gl.w, gl.b, cx), (&cl.w, cl.b, NoTangent));
    assert_eq!(gx.len(), 3);
}

#[test]
fn prepared_form_and_pullback() {
    let (m, x, y, mut state) = data(6, 3);
    let entry = state.clone();
    let (v, (gm, _, _, gs, gscale)) = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5));
    let mut cache = GradientCache::new();
    for _ in 0..3 {
        let (v1, (cm, cx, cy, cs, cscale)) = value_and_gradient!(
            loss(&m, Const(&x), Const(&y), &mut state, 1.5),
            cache = &mut cache
        );
        assert_eq!(v, v1);
        assert_eq!((&gm.w, gm.b), (&cm.w, cm.b));
        assert_eq!((&gs, gscale), (cs, *cscale));
        assert_eq!((cx, cy), (NoTangent, NoTangent));
        assert_eq!(state, entry);
    }
    // The same cache, now with every gradient: the constants' shadows were kept zero.
    let (_, (cm, cx, _, _, _)) =
        value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
    let (_, (_, gx, _, _, _)) = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5));
    assert_eq!((&gm.w, &gx), (&cm.w, cx));

    let (_, (gm, _, _, _, _)) = value_and_pullback!(loss(&m, &x, &y, &mut state, 1.5), 2.0);
    let (_, (pm, px, py, _, ps)) =
        value_and_pullback!(loss(&m, Const(&x), Const(&y), &mut state, Const(1.5)), 2.0);
    assert_eq!((&gm.w, gm.b), (&pm.w, pm.b));
    assert_eq!((px, py, ps), (NoTangent, NoTangent, NoTangent));
    let _: Model = m;
}

// ---- Constants of functions whose rules are written by hand: every gradient is computed by
// the rule, and the constant's is dropped. ----------------------------------------------------

fn scaled_sum(x: &[f64], a: f64) -> f64 {
    a * x.iter().sum::<f64>()
}

fn scaled_sum_frule(x: Dual<&[f64], &[f64]>, a: Dual<f64, f64>) -> Dual<f64, f64> {
    let s: f64 = x.primal.iter().sum();
    let ds: f64 = x.tangent.iter().sum();
    Dual::new(a.primal * s, a.tangent * s + a.primal * ds)
}

#[rrule(for = scaled_sum)]
fn scaled_sum_rrule(
    x: CoDual<&[f64], SharedVec<f64>>,
    a: CoDual<f64, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, f64) + use<>) {
    let s: f64 = x.primal.iter().sum();
    let (ap, dx) = (a.primal, x.fdata);
    (CoDual::new(ap * s, NoFData), move |ys: f64| {
        for i in 0..dx.len() {
            dx.add(i, ys * ap);
        }
        (NoRData, ys * s)
    })
}

fn cube_chain(x: f64) -> (f64, impl FnOnce(f64) -> (f64,)) {
    (x * x * x, move |t| (3.0 * x * x * t,))
}

fn cube(x: f64) -> f64 {
    x * x * x
}

fn product(x: f64, y: f64) -> f64 {
    cube(x) * y
}

from_rrule! {
    fn cube(x: f64) -> f64 => cube_chain;
}

fn product_chain(x: f64, y: f64) -> (f64, impl FnOnce(f64) -> (f64, f64)) {
    (cube(x) * y, move |t| (3.0 * x * x * y * t, cube(x) * t))
}

from_rrule! {
    fn product(x: f64, y: f64) -> f64 => product_chain;
}

fn count_above(x: &[f64], t: f64) -> f64 {
    x.iter().filter(|v| **v > t).count() as f64
}

zero_adjoint! {
    fn count_above(x: &[f64], t: f64) -> f64;
}

#[test]
fn hand_written_rules() {
    let x = xs(4, 0.8);
    let (v, (gx, ga)) = value_and_gradient!(scaled_sum(&x, 1.5));
    let (v1, (cx, ca)) = value_and_gradient!(scaled_sum(Const(&x), 1.5));
    assert_eq!((v, ga, cx), (v1, ca, NoTangent));
    let (_, (cx, ca)) = value_and_gradient!(scaled_sum(&x, Const(1.5)));
    assert_eq!((&gx, ca), (&cx, NoTangent));
    // Against forward mode.
    let (_, d) = value_and_derivative!(scaled_sum(&x, 1.5), (vec![0.0; 4], 1.0));
    assert_eq!(d, ga);

    let (pv, (gx, gy)) = value_and_gradient!(product(1.2, 0.5));
    assert_eq!(pv, product(1.2, 0.5));
    let (_, (cx, cy)) = value_and_gradient!(product(1.2, Const(0.5)));
    assert_eq!((gx, cy), (cx, NoTangent));
    assert!((gx - 3.0 * 1.44 * 0.5).abs() < 1e-12 && (gy - 1.728).abs() < 1e-12);
    let (_, (c,)) = value_and_gradient!(cube(Const(2.0)));
    assert_eq!(c, NoTangent);

    let (v, (cx, ct)) = value_and_gradient!(count_above(Const(&x), 0.5));
    assert_eq!((v, ct), (count_above(&x, 0.5), 0.0));
    assert_eq!(cx, NoTangent);
}
