//! Named constants as numerical code uses them: tables of coefficients (`const C: [f64; 5]`)
//! indexed, measured, iterated, zipped, summed and lent to other functions; `static` tables;
//! integer tables used as indices; methods on named numbers (`LN_2PI.sqrt()`). Before, reverse
//! mode failed on every read of a constant array with a type error inside the expansion
//! (`AsRead` not implemented for `CoDual<[f64; 3], [NoFData; 3]>`), and a method call on a
//! constant (`W.len()`, `W.iter()`) was refused in both modes. Every function is checked by
//! `test_rule!` (both modes against central finite differences and against each other) and its
//! gradient against the closed form.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// Horner coefficients of `1 + x/2 - x²/8 + x³/16 - 5x⁴/128` (`sqrt(1 + x)`'s Taylor series).
const SQRT_SERIES: [f64; 5] = [1.0, 0.5, -0.125, 0.0625, -0.0390625];
/// Gauss-Legendre nodes and weights on `[-1, 1]`, three points.
const NODES: [f64; 3] = [-0.774_596_669_241_483_4, 0.0, 0.774_596_669_241_483_4];
static WEIGHTS: [f64; 3] =
    [0.555_555_555_555_555_6, 0.888_888_888_888_889, 0.555_555_555_555_555_6];
/// The stages of Heun's method (an explicit Runge-Kutta tableau).
const RK_A: [[f64; 2]; 2] = [[0.0, 0.0], [1.0, 0.0]];
const RK_B: [f64; 2] = [0.5, 0.5];
const PERMUTATION: [usize; 3] = [2, 0, 1];
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Horner's rule over the coefficients, from the highest: `for c in C.iter().rev()`.
#[differentiable]
fn horner(x: f64) -> f64 {
    let mut y = 0.0;
    for k in (0..SQRT_SERIES.len()).rev() {
        y = y * x + SQRT_SERIES[k];
    }
    y
}

/// The same polynomial through an iterator over the table.
#[differentiable]
fn horner_iter(x: f64) -> f64 {
    let mut y = 0.0;
    for c in SQRT_SERIES.iter().rev() {
        y = y * x + c;
    }
    y
}

/// `∫_a^b p(t) dt` of the cubic with coefficients `p`, by three-point Gauss-Legendre
/// quadrature (exact for it).
#[differentiable]
fn quadrature(p: &[f64], a: f64, b: f64) -> f64 {
    let (half, mid) = (0.5 * (b - a), 0.5 * (a + b));
    let mut s = 0.0;
    for k in 0..NODES.len() {
        let t = mid + half * NODES[k];
        s += WEIGHTS[k] * (p[0] + t * (p[1] + t * (p[2] + t * p[3])));
    }
    half * s
}

/// One step of Heun's method for `u' = -k u²`, written from its tableau.
#[differentiable]
fn heun_step(u: f64, k: f64, h: f64) -> f64 {
    let mut stages = [0.0; 2];
    for i in 0..2 {
        let mut ui = u;
        for j in 0..i {
            ui += h * RK_A[i][j] * stages[j];
        }
        stages[i] = -k * ui * ui;
    }
    let mut next = u;
    for i in 0..2 {
        next += h * RK_B[i] * stages[i];
    }
    next
}

/// A table zipped with an argument, summed, and lent to another function.
#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable]
fn tables_used_whole(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (w, v) in WEIGHTS.iter().zip(x.iter()) {
        s += w * v * v;
    }
    let total: f64 = NODES.iter().sum();
    s + total * x[0] + dot(&NODES, x) + WEIGHTS.iter().map(|w| w * x[1]).sum::<f64>()
}

/// An integer table choosing the elements, and a method of a named number.
#[differentiable]
fn permuted(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..PERMUTATION.len() {
        s += (k as f64 + 1.0) * x[PERMUTATION[k]] * x[k];
    }
    s - 0.5 * LN_2PI.sqrt() * x[2] + NODES[2].abs() * x[1]
}

/// A copy of a table kept in a local, read in a loop.
#[differentiable]
fn copied_table(x: &[f64]) -> f64 {
    let w = SQRT_SERIES;
    let mut s = 0.0;
    for k in 0..x.len() {
        s += w[k % w.len()] * x[k].sin();
    }
    s
}

/// A constant slice, ranges of a table, a copy grown into a buffer.
const SLICE: &[f64] = &[0.25, -0.5, 1.5];

#[differentiable]
fn ranges_and_copies(x: &[f64]) -> f64 {
    let tail = &NODES[1..];
    let mut acc = vec![0.0; SLICE.len()];
    for i in 0..SLICE.len() {
        acc[i] = SLICE[i] * x[i];
    }
    let c = WEIGHTS.to_vec();
    tail[1] * x[0]
        + NODES.first().copied().unwrap_or(0.0) * x[1]
        + NODES[..2].iter().sum::<f64>() * x[2]
        + acc.iter().sum::<f64>()
        + c[1] * x[0]
        + SLICE.iter().zip(x).map(|(a, b)| a * b * b).sum::<f64>()
}

/// A constant of a derived struct, its fields read.
#[derive(Tangent, Clone, Debug)]
struct Prior {
    mean: f64,
    scale: f64,
}

const PRIOR: Prior = Prior { mean: 0.5, scale: 2.0 };

#[differentiable]
fn log_prior(x: f64) -> f64 {
    let p = PRIOR;
    let z = (x - p.mean) / PRIOR.scale;
    -0.5 * z * z - PRIOR.scale.ln()
}

/// Loops over constants and array literals by value, and rows of a constant table.
const CORNERS: [[f64; 2]; 3] = [[0.0, 1.0], [1.0, -0.5], [-0.25, 0.75]];

#[differentiable]
fn loops_by_value(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in SQRT_SERIES {
        s += c * x[0];
    }
    for v in [x[1], x[2], 3.0] {
        s += v * v;
    }
    for p in CORNERS {
        let d = (p[0] - x[0]) * (p[0] - x[0]) + (p[1] - x[1]) * (p[1] - x[1]);
        s += d.sqrt();
    }
    let corner = CORNERS[1];
    s + corner[0] * x[2]
}

#[test]
fn tables_of_constants_pass_test_rule() {
    let x = vec![0.3, -1.2, 0.7, 2.1];
    test_rule!(horner(0.3));
    test_rule!(horner_iter(-0.45));
    test_rule!(quadrature(&x, -0.5, 1.25));
    test_rule!(heun_step(0.8, 1.3, 0.1));
    test_rule!(tables_used_whole(&x[..3]));
    test_rule!(permuted(&x[..3]));
    test_rule!(copied_table(&x));
    test_rule!(ranges_and_copies(&x[..3]));
    test_rule!(log_prior(1.7));
    test_rule!(loops_by_value(&x[..3]));
}

#[test]
fn batched_forward_gradients_read_tables_as_constants() {
    let p = [0.3, -1.2, 0.7, 2.1];
    let (yr, (rp, ra, rb)) = value_and_gradient!(quadrature(&p, -0.5, 1.25));
    let (y1, (fp, fa, fb)) = value_and_gradient_forward!(quadrature(&p, -0.5, 1.25));
    // A batched pass (`quadrature` has a batched rule) does one direction's arithmetic.
    let (y3, (bp, ba, bb)) = value_and_gradient_forward!(quadrature(&p, -0.5, 1.25), chunk = 3);
    assert_eq!((y1, y3), (yr, yr));
    assert_eq!((&bp, ba, bb), (&fp, fa, fb));
    for (a, b) in bp.iter().chain([&ba, &bb]).zip(rp.iter().chain([&ra, &rb])) {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} against {b}");
    }
    // Borrows of a constant's elements (`SLICE.iter().zip(x)`): one direction per pass.
    let x = [0.3, -1.2, 0.7];
    let (_, (gr,)) = value_and_gradient!(ranges_and_copies(&x));
    let (_, (g2,)) = value_and_gradient_forward!(ranges_and_copies(&x), chunk = 2);
    for (a, b) in g2.iter().zip(&gr) {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{g2:?} against {gr:?}");
    }
}

#[test]
fn gradients_against_closed_forms() {
    // d/dx of the series: 1/2 - x/4 + 3x²/16 - 5x³/32.
    let x = 0.3;
    let expected = 0.5 - x / 4.0 + 3.0 * x * x / 16.0 - 5.0 * x * x * x / 32.0;
    for (y, (g,)) in [value_and_gradient!(horner(x)), value_and_gradient!(horner_iter(x))] {
        assert!((g - expected).abs() < 1e-15, "{g} against {expected}");
        assert!((y - (1.0 + x).sqrt()).abs() < 1e-3);
    }
    // The quadrature is exact for a cubic: its gradient in `p` is `∫ tᵏ dt`, in `b` the
    // integrand at `b`, in `a` minus the integrand at `a`.
    let p = [0.3, -1.2, 0.7, 2.1];
    let (a, b) = (-0.5, 1.25);
    let (_, (gp, ga, gb)) = value_and_gradient!(quadrature(&p, a, b));
    let cubic = |t: f64| p[0] + t * (p[1] + t * (p[2] + t * p[3]));
    for k in 0..4 {
        let e = (k + 1) as i32;
        let moment = (b.powi(e) - a.powi(e)) / f64::from(e);
        assert!((gp[k] - moment).abs() < 1e-12, "p[{k}]: {} against {moment}", gp[k]);
    }
    assert!((gb - cubic(b)).abs() < 1e-12 && (ga + cubic(a)).abs() < 1e-12, "{ga} {gb}");
    // Heun's step: u + h/2 (f(u) + f(u + h f(u))) with f(u) = -k u².
    let (u, k, h) = (0.8, 1.3, 0.1);
    let (_, (gu, _, _)) = value_and_gradient!(heun_step(u, k, h));
    let f = |u: f64| -k * u * u;
    let df = |u: f64| -2.0 * k * u;
    let u1 = u + h * f(u);
    let expected = 1.0 + 0.5 * h * (df(u) + df(u1) * (1.0 + h * df(u)));
    assert!((gu - expected).abs() < 1e-14, "{gu} against {expected}");
}

/// A configuration with two weights.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct Weights {
    /// The first weight.
    pub a: f64,
    /// The second weight.
    pub b: f64,
}

/// A constant struct.
const BASE_WEIGHTS: Weights = Weights { a: 1.0, b: 2.0 };

/// A constant struct as the base of struct update syntax, and copied then written: the copy is
/// not a constant once a field is written into it. Reverse mode gave a zero gradient (the copy
/// was taken for the constant) and forward mode's batched rule mixed tangents until probe
/// programs found it.
#[differentiable]
fn updated_constant(a: f64) -> f64 {
    let c = Weights { a, ..BASE_WEIGHTS };
    let mut d = BASE_WEIGHTS;
    d.b = a * a;
    c.a * c.b + d.a * d.b
}

#[test]
fn constant_structs_copied_and_updated() {
    test_rule!(updated_constant(0.5));
    // 2a + a²: gradient 2 + 2a.
    let (v, (g,)) = value_and_gradient!(updated_constant(0.5));
    assert!((v - 1.25).abs() < 1e-12 && (g - 3.0).abs() < 1e-12);
    let (_, (gf,)) = value_and_gradient_forward!(updated_constant(0.5), chunk = 2);
    assert!((gf - 3.0).abs() < 1e-12);
}
