//! Reductions over one vector: Mooncake.jl's `sum_1000`, `_sum_1000`, `sum_sin_1000`,
//! `_sum_sin_1000`, the `naive_map_sin_cos_exp` of issue 6 and `rosenbrock_1000`.
//!
//! Each primal is `#[differentiable]`; each hand-written gradient is the adjoint of the same
//! algorithm written by hand, returning the value and writing the gradient into a buffer the
//! caller owns (no allocation): the practical limit a source transformation can reach.

use mooncake_runtime::prelude::*;

/// `sum_1000`: `Σ xᵢ` through `iter().sum()`, which has a rule of its own (Mooncake.jl:
/// `sum(x)`).
#[differentiable]
pub fn sum_builtin(x: &[f64]) -> f64 {
    x.iter().sum::<f64>()
}

/// `_sum_1000`: `Σ xᵢ` as a written loop over indices, the shape of Mooncake.jl's
/// `_sum(identity, x)` (a `while` loop, so that no rule for `sum` can be used).
#[differentiable]
pub fn sum_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i];
        i += 1;
    }
    s
}

/// The gradient of [`sum_builtin`] and [`sum_loop`] by hand: ones.
pub fn sum_gradient(x: &[f64], gx: &mut [f64]) -> f64 {
    gx.fill(1.0);
    x.iter().sum()
}

/// `sum_sin_1000`: `Σ sin xᵢ` written the way Rust says `sum(sin, x)` in code
/// `#[differentiable]` accepts (no closures): a `for` loop over `x.iter()`.
#[differentiable]
pub fn sum_sin_iter(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v.sin();
    }
    s
}

/// `sum_sin_chain_1000`: `Σ sin xᵢ` as Rust writes Mooncake.jl's `sum(sin, x)`: an iterator
/// chain (lowered as the loop it stands for, so it costs what [`sum_sin_iter`] costs).
#[differentiable]
pub fn sum_sin_chain(x: &[f64]) -> f64 {
    x.iter().map(|v| v.sin()).sum()
}

/// `_sum_sin_1000`: `Σ sin xᵢ` in the shape of Mooncake.jl's `_sum(sin, x)`: a `while` loop
/// over indices.
#[differentiable]
pub fn sum_sin_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i].sin();
        i += 1;
    }
    s
}

/// The gradient of [`sum_sin_iter`], [`sum_sin_chain`] and [`sum_sin_loop`] by hand: `cos xᵢ`.
pub fn sum_sin_gradient(x: &[f64], gx: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for (g, v) in gx.iter_mut().zip(x) {
        s += v.sin();
        *g = v.cos();
    }
    s
}

/// `naive_map_sin_cos_exp`: a loop writes `sin xᵢ + cos xᵢ + exp xᵢ` into a buffer built in the
/// body, which is then summed.
#[differentiable]
pub fn naive_map_sin_cos_exp(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    for (i, v) in x.iter().enumerate() {
        y[i] = v.sin() + v.cos() + v.exp();
    }
    y.iter().sum::<f64>()
}

/// The gradient of [`naive_map_sin_cos_exp`] by hand. The buffer's cotangent is all ones, so
/// its adjoint needs no storage: `cos xᵢ − sin xᵢ + exp xᵢ`.
pub fn naive_map_sin_cos_exp_gradient(x: &[f64], gx: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for (g, v) in gx.iter_mut().zip(x) {
        let (sin, cos, exp) = (v.sin(), v.cos(), v.exp());
        s += sin + cos + exp;
        *g = cos - sin + exp;
    }
    s
}

/// `rosenbrock_1000`: `Σᵢ 100 (xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)²` for `i < n − 1`.
#[differentiable]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i + 1 < x.len() {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
        i += 1;
    }
    s
}

/// The gradient of [`rosenbrock`] by hand.
pub fn rosenbrock_gradient(x: &[f64], gx: &mut [f64]) -> f64 {
    gx.fill(0.0);
    let mut s = 0.0;
    for i in 0..x.len().saturating_sub(1) {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
        gx[i] += -400.0 * a * x[i] - 2.0 * b;
        gx[i + 1] += 200.0 * a;
    }
    s
}
