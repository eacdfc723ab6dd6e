//! Arithmetic with one operand a constant (`STEP * du`, `x / 2.0`, `1.0 - p`, `PI * r`) in forward
//! mode: the derived rules take the constant as a number (`rules::scalar::const_mul_frule` and
//! its kin) when both operands are floats, and run the ordinary operator otherwise (integers, a
//! constant of another type). Checked by `test_rule!` (both modes against finite differences
//! and each other), batched gradients against one direction per pass (to the bit) and against
//! reverse mode, and at an infinite input, where a constant's zero tangent used to give
//! `0 · inf = NaN`.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

const STEP: f64 = 0.01;
const HALF: f32 = 0.5;
const SHIFT: usize = 1;
const SCALE: f64 = -1.0;

/// Every operator with the constant on either side, as literals and as paths.
#[differentiable]
fn both_sides(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let v = x[i];
        let a = 2.0 * v + v * 3.0;
        let b = (1.5 - v) + (v - 0.25);
        let c = 4.0 / (v + 3.0) + v / 8.0;
        let d = STEP * v + v * std::f64::consts::PI - 1e-3 / (v * v + 1.0);
        s += a * b + c * d + (0.5 + v) * (v + 0.5);
    }
    s
}

/// Integer constants beside float ones: `i + SHIFT`, `2 * i`, `n - 1`.
#[differentiable]
fn indices_and_floats(x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i + SHIFT < n {
        let j = i + SHIFT;
        s += 0.5 * x[j] * x[i] - x[2 * i % n] / 4.0;
        i += 1;
    }
    s + x[n - 1] * SCALE
}

/// `f32` numbers with a constant of their type.
#[differentiable]
fn single_precision(x: f32, y: f32) -> f32 {
    let t = HALF * x - y / 3.0;
    (2.0 - t) * (t + 1.0) + HALF / y
}

/// The benchmark's Euler steps, with a named step.
#[differentiable]
fn euler(p: &[f64], u0: &[f64], steps: usize) -> f64 {
    let (a, b, c, d) = (p[0], p[1], p[2], p[3]);
    let mut u = u0[0];
    let mut v = u0[1];
    for _ in 0..steps {
        let du = a * u - b * u * v;
        let dv = d * u * v - c * v;
        u += STEP * du;
        v += STEP * dv;
    }
    u * u + v * v
}

/// A constant scaling a scalar argument, alone.
#[differentiable]
fn scaled(x: f64) -> f64 {
    3.0 * x
}

#[test]
fn constant_operands_pass_test_rule() {
    let x = vec![0.3, -1.2, 0.7, 2.1, -0.4];
    test_rule!(both_sides(&x));
    test_rule!(indices_and_floats(&x, 5));
    test_rule!(indices_and_floats(&x, 2));
    test_rule!(single_precision(0.7_f32, 1.3_f32));
    test_rule!(euler(&[1.1, 0.4, 0.9, 0.3], &[1.2, 0.8], 30));
    test_rule!(scaled(-0.8));
}

#[test]
fn batched_gradients_match_one_direction_and_reverse_mode() {
    let x = vec![0.3, -1.2, 0.7, 2.1, -0.4];
    let (yr, (gr,)) = value_and_gradient!(both_sides(&x));
    let (y1, (g1,)) = value_and_gradient_forward!(both_sides(&x));
    let (y3, (g3,)) = value_and_gradient_forward!(both_sides(&x), chunk = 3);
    assert_eq!((y1, y3), (yr, yr));
    // The batched rule does one direction's arithmetic lane by lane.
    assert_eq!(g1, g3);
    for (a, b) in g3.iter().zip(&gr) {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{g3:?} against {gr:?}");
    }
    let (p, u0) = (vec![1.1, 0.4, 0.9, 0.3], vec![1.2, 0.8]);
    let (_, (rp, ru, _)) = value_and_gradient!(euler(&p, &u0, 100));
    let (_, (fp, fu, _)) = value_and_gradient_forward!(euler(&p, &u0, 100));
    let (_, (bp, bu, _)) = value_and_gradient_forward!(euler(&p, &u0, 100), chunk = 6);
    assert_eq!((&bp, &bu), (&fp, &fu));
    for (a, b) in bp.iter().chain(&bu).zip(rp.iter().chain(&ru)) {
        assert!((a - b).abs() <= 1e-10 * (1.0 + b.abs()), "{a} against {b}");
    }
}

#[test]
fn a_constant_factor_keeps_the_derivative_finite_at_infinity() {
    // `3 x` has derivative 3 everywhere; with the constant's zero tangent multiplied by the
    // infinite primal, forward mode gave NaN here while reverse mode gave 3.
    let d = scaled_frule(Dual::new(f64::INFINITY, 1.0));
    assert_eq!((d.primal, d.tangent), (f64::INFINITY, 3.0));
    let (_, (g,)) = value_and_gradient!(scaled(f64::INFINITY));
    assert_eq!(g, 3.0);
}
