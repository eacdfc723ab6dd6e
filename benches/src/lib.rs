//! Benchmark problems shared by the benches in `benches/benches/`: each is a
//! `#[differentiable]` function with a gradient written by hand beside it, so that a bench can
//! report the derived rules as ratios to the primal and to the hand-written gradient measured
//! in the same run. The tests below check every hand-written gradient against the derived one
//! and against finite differences, so that the baseline is right.

use mooncake_runtime::prelude::*;

/// `Σ xᵢ` through `iter().sum()` (Mooncake.jl's `sum_1000`).
#[differentiable]
pub fn sum_iter(x: &[f64]) -> f64 {
    x.iter().sum::<f64>()
}

/// `Σ xᵢ` as a written loop (Mooncake.jl's `_sum_1000`).
#[differentiable]
pub fn sum_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    s
}

/// The gradient of [`sum_iter`] and [`sum_loop`] by hand: ones.
pub fn sum_gradient(x: &[f64], grad: &mut [f64]) -> f64 {
    grad.fill(1.0);
    x.iter().sum()
}

/// `Σ sin xᵢ`: one load and one cheap operation per element.
#[differentiable]
pub fn sum_sin(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v.sin();
    }
    s
}

/// The gradient of [`sum_sin`] by hand: `cos xᵢ`, written into `grad`.
pub fn sum_sin_gradient(x: &[f64], grad: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for (g, v) in grad.iter_mut().zip(x) {
        s += v.sin();
        *g = v.cos();
    }
    s
}

/// Least squares of a linear model over `rows` rows of `a` (row-major, `w.len()` columns):
/// `Σᵣ (Σc a[r, c] w[c] − y[r])²`. Flat 2-D indexing and a nested loop.
#[differentiable]
pub fn least_squares(a: &[f64], y: &[f64], w: &[f64]) -> f64 {
    let n = w.len();
    let mut loss = 0.0;
    for r in 0..y.len() {
        let mut pred = 0.0;
        for c in 0..n {
            pred += a[r * n + c] * w[c];
        }
        let e = pred - y[r];
        loss += e * e;
    }
    loss
}

/// The gradient of [`least_squares`] with respect to `w` by hand, written into `grad`.
pub fn least_squares_gradient(a: &[f64], y: &[f64], w: &[f64], grad: &mut [f64]) -> f64 {
    let n = w.len();
    grad.fill(0.0);
    let mut loss = 0.0;
    for (r, yr) in y.iter().enumerate() {
        let row = &a[r * n..(r + 1) * n];
        let pred: f64 = row.iter().zip(w).map(|(a, w)| a * w).sum();
        let e = pred - yr;
        loss += e * e;
        for (g, a) in grad.iter_mut().zip(row) {
            *g += 2.0 * e * a;
        }
    }
    loss
}

/// Deterministic inputs of length `n` in `[-1, 1)`.
pub fn inputs(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_hand_gradient_is_the_derived_one() {
        let x = inputs(50, 1);
        test_rule!(sum_iter(&x));
        test_rule!(sum_loop(&x));
        let mut g = vec![0.0; x.len()];
        let v = sum_gradient(&x, &mut g);
        let (v1, (g1,)) = value_and_gradient!(sum_iter(&x));
        let (v2, (g2,)) = value_and_gradient!(sum_loop(&x));
        assert!((v - v1).abs() < 1e-12 && (v - v2).abs() < 1e-12);
        assert_eq!((&g1, &g2), (&g, &g));
    }

    #[test]
    fn sum_sin_hand_gradient_is_the_derived_one() {
        let x = inputs(50, 1);
        test_rule!(sum_sin(&x));
        let mut g = vec![0.0; x.len()];
        let v = sum_sin_gradient(&x, &mut g);
        let (dv, (dg,)) = value_and_gradient!(sum_sin(&x));
        assert!((v - dv).abs() < 1e-12);
        for (a, b) in g.iter().zip(&dg) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn least_squares_hand_gradient_is_the_derived_one() {
        let (rows, cols) = (7, 4);
        let (a, y, w) = (inputs(rows * cols, 2), inputs(rows, 3), inputs(cols, 4));
        test_rule!(least_squares(&a, &y, &w));
        let mut g = vec![0.0; cols];
        let v = least_squares_gradient(&a, &y, &w, &mut g);
        let (dv, (_, _, dw)) = value_and_gradient!(least_squares(&a, &y, &w));
        assert!((v - dv).abs() < 1e-12);
        for (a, b) in g.iter().zip(&dw) {
            assert!((a - b).abs() < 1e-10, "{a} vs {b}");
        }
    }
}
