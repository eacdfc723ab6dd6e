//! `simple_mlp` written with ndarray's arrays (feature `ndarray` of the runtime): the two-layer
//! perceptron of `mlp_nalgebra`, whose weights are `Array2<f64>`s and whose batch goes through
//! matrix-matrix products (`dot`), differentiated by `#[differentiable]` in both modes.
//!
//! The loss is `|W₂ relu(W₁ X) - Y|² / batch` for inputs `X` (`inputs x batch`) and targets `Y`
//! (`outputs x batch`). `relu` is `h ∘ mask(h)` with `mask(h)` the 0/1 array of the positive
//! entries, declared with `zero_adjoint!` (the mask is piecewise constant: its derivative is
//! zero wherever it is defined), so the element-wise product `*` carries the derivative: every
//! step is one of ndarray's kernels (`general_mat_mul`, `Zip`, `sum`).
//!
//! Checks: the gradient with respect to both weight matrices against central finite
//! differences and against forward mode, then 300 steps of gradient descent that must lower the
//! loss by at least a factor of 10. Exits non-zero if a check fails.
//!
//! Run with `cargo run --release -p mooncake-examples --features ndarray --example
//! mlp_ndarray`.

use mooncake_examples::{Checks, Rng, finite_difference_gradient, max_relative_difference};
use mooncake_runtime::prelude::*;
use ndarray::Array2;

/// The 0/1 array of the positive entries of `h` (`relu`'s derivative).
fn relu_mask(h: &Array2<f64>) -> Array2<f64> {
    h.mapv(|v| if v > 0.0 { 1.0 } else { 0.0 })
}

zero_adjoint! {
    fn relu_mask(h: &Array2<f64>) -> Array2<f64>;
}

/// The mean squared error of the network `W₂ relu(W₁ X)` on the batch `(x, y)`.
#[differentiable]
fn mlp_loss(w1: &Array2<f64>, w2: &Array2<f64>, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = w1.dot(x);
    let m = relu_mask(&h);
    let a = h * m;
    let out = w2.dot(&a);
    let r = out - y;
    r.pow2().sum() / (y.ncols() as f64)
}

/// The loss with the weights flattened (row-major, `W₁` then `W₂`), for finite differences.
fn flat_loss(p: &[f64], shapes: [(usize, usize); 2], x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let (w1, w2) = unflatten(p, shapes);
    mlp_loss(&w1, &w2, x, y)
}

fn unflatten(p: &[f64], [(r1, c1), (r2, c2)]: [(usize, usize); 2]) -> (Array2<f64>, Array2<f64>) {
    let w1 = Array2::from_shape_vec((r1, c1), p[..r1 * c1].to_vec()).expect("W₁'s shape");
    let w2 = Array2::from_shape_vec((r2, c2), p[r1 * c1..].to_vec()).expect("W₂'s shape");
    (w1, w2)
}

fn main() {
    let mut checks = Checks::new();
    let (inputs, hidden, outputs, batch) = (4, 16, 2, 64);
    let mut rng = Rng::new(3);
    let x = Array2::from_shape_simple_fn((inputs, batch), || rng.normal());
    // Targets from a fixed nonlinear map of the inputs.
    let y = Array2::from_shape_fn((outputs, batch), |(o, b)| {
        let (a, c) = (x[[o, b]], x[[o + 2, b]]);
        (a * c).tanh() + 0.5 * a.max(0.0)
    });
    let scale1 = (2.0 / inputs as f64).sqrt();
    let scale2 = (2.0 / hidden as f64).sqrt();
    let mut w1 = Array2::from_shape_simple_fn((hidden, inputs), || scale1 * rng.normal());
    let mut w2 = Array2::from_shape_simple_fn((outputs, hidden), || scale2 * rng.normal());

    // The gradient at the start, against finite differences and forward mode. The gradients
    // are arrays of the weights' shapes.
    let (loss0, (g1, g2, _, _)) = value_and_gradient!(mlp_loss(&w1, &w2, &x, &y));
    checks.check(g1.dim() == w1.dim() && g2.dim() == w2.dim(), "gradients shaped like the weights");
    let shapes = [w1.dim(), w2.dim()];
    let flat: Vec<f64> = w1.iter().chain(w2.iter()).copied().collect();
    let fd = finite_difference_gradient(|p| flat_loss(p, shapes, &x, &y), &flat, 1e-6);
    let ours: Vec<f64> = g1.iter().chain(g2.iter()).copied().collect();
    let d_fd = max_relative_difference(&ours, &fd);
    println!("mlp ({inputs}-{hidden}-{outputs}, batch {batch}) with ndarray arrays");
    println!("loss at the start: {loss0:.6}");
    println!("gradient against finite differences: max relative difference {d_fd:.1e}");
    checks.check(d_fd < 1e-5, "gradient against finite differences");
    let v1 = Array2::from_shape_simple_fn((hidden, inputs), || rng.normal());
    let v2 = Array2::from_shape_simple_fn((outputs, hidden), || rng.normal());
    let (_, dv) = value_and_derivative!(
        mlp_loss(&w1, &w2, &x, &y),
        (v1.clone(), v2.clone(), Array2::zeros((inputs, batch)), Array2::zeros((outputs, batch)))
    );
    let dg = (&g1 * &v1).sum() + (&g2 * &v2).sum();
    println!("along a random direction: forward mode {dv:.8}, <gradient, v> {dg:.8}");
    checks.check((dv - dg).abs() < 1e-9 * (1.0 + dg.abs()), "forward mode against reverse mode");

    // Gradient descent.
    let rate = 0.05;
    let mut loss = loss0;
    for step in 0..300 {
        let (l, (g1, g2, _, _)) = value_and_gradient!(mlp_loss(&w1, &w2, &x, &y));
        loss = l;
        if step % 100 == 0 {
            println!("step {step:3}: loss {l:.6}");
        }
        w1.scaled_add(-rate, &g1);
        w2.scaled_add(-rate, &g2);
    }
    let final_loss = mlp_loss(&w1, &w2, &x, &y);
    println!("after 300 steps: loss {final_loss:.6} (last step's {loss:.6})");
    checks.check(final_loss < loss0 / 10.0, "the loss fell by a factor of 10");
    checks.finish("mlp with ndarray");
}
