//! `simple_mlp` written with a linear-algebra crate's matrices (issue 15): Mooncake.jl's
//! `simple_mlp`, `Σ (W₂ relu(W₁ X) − Y)²` (no biases, the batch in the columns of `X` and `Y`),
//! with nalgebra's `DMatrix<f64>` ([`mlp_nalgebra`]) and with ndarray's `Array2<f64>`
//! ([`mlp_ndarray`]) weights and data, so that every step of the primal and of the derived
//! rules is one of the crate's kernels (products, element-wise maps, sums). Each has a gradient
//! written by hand with the same crate's kernels into preallocated matrices: the practical
//! limit. `relu` is written as users write it, `h.map(|v| v.max(0.0))` (`mapv` for ndarray).

use mooncake_runtime::prelude::*;
use nalgebra::DMatrix;
use ndarray::Array2;
use ndarray::linalg::general_mat_mul;

/// The problems of this module, each a criterion group of `benches/gradients.rs` and a problem
/// of `examples/profile.rs`: the network at `simple_mlp`'s widths and batch, and at Mooncake.jl's
/// 128-256-128 with a batch of 70. `(name, (inputs, hidden, outputs), batch)`.
pub const MLP_LINALG: [(&str, (usize, usize, usize), usize); 4] = [
    ("mlp_nalgebra", (32, 64, 16), 32),
    ("mlp_nalgebra_128_256_128", (128, 256, 128), 70),
    ("mlp_ndarray", (32, 64, 16), 32),
    ("mlp_ndarray_128_256_128", (128, 256, 128), 70),
];

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
    let a = h.map(|v| v.max(0.0));
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

/// `Σ (W₂ relu(W₁ X) − Y)²` with ndarray's arrays: weights `w1` (`hidden × inputs`), `w2`
/// (`outputs × hidden`), inputs `x` (`inputs × batch`), targets `y` (`outputs × batch`).
#[differentiable]
pub fn mlp_ndarray(w1: &Array2<f64>, w2: &Array2<f64>, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = w1.dot(x);
    let a = h.mapv(|v| v.max(0.0));
    let out = w2.dot(&a);
    let r = out - y;
    r.mapv(|v| v * v).sum()
}

/// The preallocated arrays of [`mlp_ndarray_gradient`].
#[derive(Clone, Debug)]
pub struct NdScratch {
    h: Array2<f64>,
    a: Array2<f64>,
    r: Array2<f64>,
    da: Array2<f64>,
}

impl NdScratch {
    /// Scratch for widths `(inputs, hidden, outputs)` and a batch of `batch` columns.
    pub fn new((_, hidden, outputs): (usize, usize, usize), batch: usize) -> NdScratch {
        NdScratch {
            h: Array2::zeros((hidden, batch)),
            a: Array2::zeros((hidden, batch)),
            r: Array2::zeros((outputs, batch)),
            da: Array2::zeros((hidden, batch)),
        }
    }
}

/// The gradient of [`mlp_ndarray`] with respect to the weights, by hand, into `g1` and `g2`,
/// with ndarray's `general_mat_mul` (the transposes as views, which ndarray hands to
/// matrixmultiply with their strides) and no allocation.
pub fn mlp_ndarray_gradient(
    w1: &Array2<f64>,
    w2: &Array2<f64>,
    x: &Array2<f64>,
    y: &Array2<f64>,
    (g1, g2): (&mut Array2<f64>, &mut Array2<f64>),
    s: &mut NdScratch,
) -> f64 {
    general_mat_mul(1.0, w1, x, 0.0, &mut s.h);
    s.a.zip_mut_with(&s.h, |a, &h| *a = h.max(0.0));
    s.r.assign(y);
    general_mat_mul(1.0, w2, &s.a, -1.0, &mut s.r);
    let loss = s.r.iter().map(|v| v * v).sum();
    general_mat_mul(2.0, &s.r, &s.a.t(), 0.0, g2);
    general_mat_mul(2.0, &w2.t(), &s.r, 0.0, &mut s.da);
    s.da.zip_mut_with(&s.h, |d, &h| {
        if h <= 0.0 {
            *d = 0.0;
        }
    });
    general_mat_mul(1.0, &s.da, &x.t(), 0.0, g1);
    loss
}

/// [`mlp_nalgebra_inputs`] as ndarray's arrays (the same values).
pub fn mlp_ndarray_inputs(
    widths: (usize, usize, usize),
    batch: usize,
    seed: u64,
) -> (Array2<f64>, Array2<f64>, Array2<f64>, Array2<f64>) {
    let (w1, w2, x, y) = mlp_nalgebra_inputs(widths, batch, seed);
    let nd = |m: DMatrix<f64>| Array2::from_shape_fn(m.shape(), |(i, j)| m[(i, j)]);
    (nd(w1), nd(w2), nd(x), nd(y))
}
