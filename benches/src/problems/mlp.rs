//! `simple_mlp`: the squared-error loss of a two-layer perceptron with ReLU activations over a
//! batch, its parameters in a `#[derive(Tangent)]` struct (Mooncake.jl's `simple_mlp` is
//! `sum(abs2, Y - W2 * relu(W1 * X))`; here with biases, 64 hidden units and a batch of 32).
//! The primal is written with index loops on purpose, the way matrix products are written by
//! hand.
#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// The parameters of a two-layer perceptron: `W1` (`hidden × inputs`), `b1`, `W2`
/// (`outputs × hidden`), `b2`, row-major, and the three widths.
#[derive(Tangent, Clone, Debug, PartialEq)]
pub struct Mlp {
    /// First layer's weights, `hidden × inputs`, row-major.
    pub w1: Vec<f64>,
    /// First layer's biases, `hidden`.
    pub b1: Vec<f64>,
    /// Second layer's weights, `outputs × hidden`, row-major.
    pub w2: Vec<f64>,
    /// Second layer's biases, `outputs`.
    pub b2: Vec<f64>,
    /// Input width.
    pub inputs: usize,
    /// Hidden width.
    pub hidden: usize,
    /// Output width.
    pub outputs: usize,
}

impl Mlp {
    /// Deterministic parameters of the given widths, scaled like a usual initialisation.
    pub fn new(inputs: usize, hidden: usize, outputs: usize, seed: u64) -> Mlp {
        let scale = |v: Vec<f64>, fan_in: usize| -> Vec<f64> {
            let s = 1.0 / (fan_in as f64).sqrt();
            v.into_iter().map(|w| w * s).collect()
        };
        Mlp {
            w1: scale(crate::inputs(hidden * inputs, seed), inputs),
            b1: crate::inputs(hidden, seed + 1),
            w2: scale(crate::inputs(outputs * hidden, seed + 2), hidden),
            b2: crate::inputs(outputs, seed + 3),
            inputs,
            hidden,
            outputs,
        }
    }

    /// Every parameter in one vector, in the order `w1, b1, w2, b2` (how the peers see them).
    pub fn flatten(&self) -> Vec<f64> {
        [&self.w1[..], &self.b1, &self.w2, &self.b2].concat()
    }
}

impl MlpTangent {
    /// Every entry in one vector, in the order of [`Mlp::flatten`].
    pub fn flatten(&self) -> Vec<f64> {
        [&self.w1[..], &self.b1, &self.w2, &self.b2].concat()
    }
}

/// `Σ_b Σ_o (y[b, o] − (W2 relu(W1 x_b + b1) + b2)[o])²` over a batch of `x.len() / inputs`
/// samples (`x`: `batch × inputs`, `y`: `batch × outputs`, row-major).
#[differentiable]
pub fn simple_mlp(p: &Mlp, x: &[f64], y: &[f64]) -> f64 {
    let batch = x.len() / p.inputs;
    let mut h = vec![0.0; p.hidden];
    let mut loss = 0.0;
    for s in 0..batch {
        for j in 0..p.hidden {
            let mut z = p.b1[j];
            for i in 0..p.inputs {
                z += p.w1[j * p.inputs + i] * x[s * p.inputs + i];
            }
            h[j] = z.max(0.0);
        }
        for o in 0..p.outputs {
            let mut out = p.b2[o];
            for j in 0..p.hidden {
                out += p.w2[o * p.hidden + j] * h[j];
            }
            let e = y[s * p.outputs + o] - out;
            loss += e * e;
        }
    }
    loss
}

/// The gradient of [`simple_mlp`] with respect to the parameters, by hand, into `g` (its
/// width fields are not touched). `scratch` holds at least `hidden + outputs` entries.
pub fn simple_mlp_gradient(
    p: &Mlp,
    x: &[f64],
    y: &[f64],
    g: &mut MlpTangent,
    scratch: &mut [f64],
) -> f64 {
    let (ni, nh, no) = (p.inputs, p.hidden, p.outputs);
    let batch = x.len() / ni;
    let (h, dout) = scratch.split_at_mut(nh);
    g.w1.fill(0.0);
    g.b1.fill(0.0);
    g.w2.fill(0.0);
    g.b2.fill(0.0);
    let mut loss = 0.0;
    for s in 0..batch {
        let xs = &x[s * ni..(s + 1) * ni];
        for (j, hj) in h.iter_mut().enumerate() {
            let row = &p.w1[j * ni..(j + 1) * ni];
            let z = p.b1[j] + row.iter().zip(xs).map(|(w, v)| w * v).sum::<f64>();
            *hj = z.max(0.0);
        }
        for o in 0..no {
            let row = &p.w2[o * nh..(o + 1) * nh];
            let out = p.b2[o] + row.iter().zip(h.iter()).map(|(w, v)| w * v).sum::<f64>();
            let e = y[s * no + o] - out;
            loss += e * e;
            dout[o] = -2.0 * e;
            g.b2[o] += dout[o];
            for (gw, hj) in g.w2[o * nh..(o + 1) * nh].iter_mut().zip(h.iter()) {
                *gw += dout[o] * hj;
            }
        }
        for (j, hj) in h.iter().enumerate() {
            if *hj <= 0.0 {
                continue;
            }
            let dh: f64 = (0..no).map(|o| dout[o] * p.w2[o * nh + j]).sum();
            g.b1[j] += dh;
            for (gw, v) in g.w1[j * ni..(j + 1) * ni].iter_mut().zip(xs) {
                *gw += dh * v;
            }
        }
    }
    loss
}
