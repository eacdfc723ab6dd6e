//! `simple_mlp` written with a linear-algebra crate's matrices (issue 15): Mooncake.jl's
//! `simple_mlp`, `Σ (W₂ relu(W₁ X) − Y)²` (no biases, the batch in the columns of `X` and `Y`),
//! with `DMatrix<f64>` weights and data, so that every step of the primal and of the derived
//! rules is one of nalgebra's kernels (`gemm`, `cmpy`, `dot`). The hand-written gradient uses
//! the same kernels into preallocated matrices ([`MlpScratch`]): the practical limit.
//!
//! `relu` is written as users of nalgebra write it in differentiable code today:
//! `h.component_mul(&relu_mask(&h))`, the 0/1 mask of the positive entries declared with
//! `zero_adjoint!` (it is piecewise constant).

use mooncake_runtime::prelude::*;
use nalgebra::DMatrix;

/// The problems of this module, each a criterion group of `benches/gradients.rs` and a problem
/// of `examples/profile.rs`: the network at `simple_mlp`'s widths and batch, and at Mooncake.jl's
/// 128-256-128 with a batch of 70. `(name, (inputs, hidden, outputs), batch)`.
pub const MLP_LINALG: [(&str, (usize, usize, usize), usize); 2] =
    [("mlp_nalgebra", (32, 64, 16), 32), ("mlp_nalgebra_128_256_128", (128, 256, 128), 70)];

/// The 0/1 matrix of the positive entries of `h`: `relu`'s derivative.
pub fn relu_mask(h: &DMatrix<f64>) -> DMatrix<f64> {
    h.map(|v| if v > 0.0 { 1.0 } else { 0.0 })
}

zero_adjoint! {
    fn relu_mask(h: &DMatrix<f64>) -> DMatrix<f64>;
}

/// `Σ (W₂ relu(W₁ X) − Y)²` for weights `w1` (`hidden × inputs`), `w2` (`outputs × hidden`),
/// inputs `x` (`inputs × batch`) and targets `y` (`outputs × batch`).
#[differentiable]
pub fn mlp_nalgebra(
    w1: &DMatrix<f64>,
    w2: &DMatrix<f64>,
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
) -> f64 {
    let h = w1 * x;
    let a = h.component_mul(&relu_mask(&h));
    let out = w2 * a;
    let r = out - y;
    r.norm_squared()
}

/// The preallocated matrices of [`mlp_nalgebra_gradient`].
#[derive(Clone, Debug)]
pub struct MlpScratch {
    h: DMatrix<f64>,
    a: DMatrix<f64>,
    at: DMatrix<f64>,
    w2t: DMatrix<f64>,
    xt: DMatrix<f64>,
    r: DMatrix<f64>,
    da: DMatrix<f64>,
}

impl MlpScratch {
    /// Scratch for widths `(inputs, hidden, outputs)` and a batch of `batch` columns.
    pub fn new((inputs, hidden, outputs): (usize, usize, usize), batch: usize) -> MlpScratch {
        MlpScratch {
            h: DMatrix::zeros(hidden, batch),
            a: DMatrix::zeros(hidden, batch),
            at: DMatrix::zeros(batch, hidden),
            w2t: DMatrix::zeros(hidden, outputs),
            xt: DMatrix::zeros(batch, inputs),
            r: DMatrix::zeros(outputs, batch),
            da: DMatrix::zeros(hidden, batch),
        }
    }
}

/// The gradient of [`mlp_nalgebra`] with respect to the weights, by hand, into `g1` and `g2`
/// (shaped like `w1` and `w2`), with nalgebra's kernels and no allocation (the transposes
/// copied into scratch, so that every product is a `gemm`, which runs matrixmultiply's blocked
/// kernel where `gemm_tr` takes a dot product per entry):
/// `R = W₂A − Y`, `W̄₂ = 2 R Aᵀ`, `Ā = 2 W₂ᵀ R`, `W̄₁ = (Ā ∘ [H > 0]) Xᵀ`.
pub fn mlp_nalgebra_gradient(
    w1: &DMatrix<f64>,
    w2: &DMatrix<f64>,
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    (g1, g2): (&mut DMatrix<f64>, &mut DMatrix<f64>),
    s: &mut MlpScratch,
) -> f64 {
    s.h.gemm(1.0, w1, x, 0.0);
    s.a.copy_from(&s.h);
    s.a.apply(|v| *v = v.max(0.0));
    s.r.copy_from(y);
    s.r.gemm(1.0, w2, &s.a, -1.0);
    let loss = s.r.norm_squared();
    s.a.transpose_to(&mut s.at);
    g2.gemm(2.0, &s.r, &s.at, 0.0);
    w2.transpose_to(&mut s.w2t);
    s.da.gemm(2.0, &s.w2t, &s.r, 0.0);
    s.da.zip_apply(&s.h, |d, h| {
        if h <= 0.0 {
            *d = 0.0;
        }
    });
    x.transpose_to(&mut s.xt);
    g1.gemm(1.0, &s.da, &s.xt, 0.0);
    loss
}

/// Deterministic weights and data for widths `(inputs, hidden, outputs)` and a batch of
/// `batch`: `(w1, w2, x, y)`, the weights scaled like a usual initialisation.
pub fn mlp_nalgebra_inputs(
    (inputs, hidden, outputs): (usize, usize, usize),
    batch: usize,
    seed: u64,
) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
    let matrix = |r: usize, c: usize, scale: f64, seed: u64| {
        DMatrix::from_vec(r, c, crate::inputs(r * c, seed)) * scale
    };
    (
        matrix(hidden, inputs, 1.0 / (inputs as f64).sqrt(), seed),
        matrix(outputs, hidden, 1.0 / (hidden as f64).sqrt(), seed + 1),
        matrix(inputs, batch, 1.0, seed + 2),
        matrix(outputs, batch, 1.0, seed + 3),
    )
}
