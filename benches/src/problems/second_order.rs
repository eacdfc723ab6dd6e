//! Second-order problems (issue 16): copies of `rosenbrock_1000` and `gmm` generic over
//! `T: Float`, as `hvp!` needs (forward over reverse runs their derived reverse rules at
//! `T = Fwd<f64>`), with Hessian-vector products written by hand beside them.
//!
//! Each generic copy keeps the algorithm of its original line for line (the crate's tests check
//! that both give the same value and gradient at `f64`), so that the cost of a product can be
//! read against the cost of the original's gradient.
#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// [`crate::rosenbrock`] generic over `T: Float`.
#[differentiable]
pub fn rosenbrock_generic<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    let mut i = 0;
    while i + 1 < x.len() {
        let a = x[i + 1] - x[i] * x[i];
        let b = T::ONE - x[i];
        s += T::from_f64(100.0) * a * a + b * b;
        i += 1;
    }
    s
}

/// The value, gradient (into `gx`) and Hessian-vector product `H v` (into `hv`) of
/// [`rosenbrock_generic`], by hand: the hand-written gradient differentiated forward along `v`
/// (each term's `a`, `b` and their tangents `da`, `db`).
pub fn rosenbrock_hvp(x: &[f64], v: &[f64], gx: &mut [f64], hv: &mut [f64]) -> f64 {
    gx.fill(0.0);
    hv.fill(0.0);
    let mut s = 0.0;
    for i in 0..x.len().saturating_sub(1) {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        let da = v[i + 1] - 2.0 * x[i] * v[i];
        let db = -v[i];
        s += 100.0 * a * a + b * b;
        gx[i] += -400.0 * a * x[i] - 2.0 * b;
        gx[i + 1] += 200.0 * a;
        hv[i] += -400.0 * (da * x[i] + a * v[i]) - 2.0 * db;
        hv[i + 1] += 200.0 * da;
    }
    s
}

/// [`crate::logsumexp`] generic over `T: Float`.
#[differentiable]
pub fn logsumexp_generic<T: Float>(v: &[T]) -> T {
    let mut m = v[0];
    for u in v.iter() {
        if *u > m {
            m = *u;
        }
    }
    let mut s = T::ZERO;
    for u in v.iter() {
        s += (*u - m).exp();
    }
    s.ln() + m
}

/// [`crate::gmm_objective`] generic over `T: Float` in its parameters (`alphas`, `means`,
/// `icf`); the data (`x`, `d`, `gamma`, `m`) stays `f64` / `usize`, converted with
/// `T::from_f64` where it meets a parameter, and is passed as `Const(..)` to `hvp!`.
#[differentiable]
pub fn gmm_objective_generic<T: Float>(
    alphas: &[T],
    means: &[T],
    icf: &[T],
    x: &[f64],
    d: usize,
    gamma: f64,
    m: usize,
) -> T {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let mut qdiags = vec![T::ZERO; k * d];
    let mut sum_qs = vec![T::ZERO; k];
    for c in 0..k {
        let mut s = T::ZERO;
        for j in 0..d {
            let q = icf[c * icf_sz + j];
            s += q;
            qdiags[c * d + j] = q.exp();
        }
        sum_qs[c] = s;
    }
    let mut xc = vec![T::ZERO; d];
    let mut qxc = vec![T::ZERO; d];
    let mut main = vec![T::ZERO; k];
    let mut slse = T::ZERO;
    for i in 0..n {
        for c in 0..k {
            for j in 0..d {
                xc[j] = T::from_f64(x[i * d + j]) - means[c * d + j];
            }
            for j in 0..d {
                qxc[j] = qdiags[c * d + j] * xc[j];
            }
            let mut idx = c * icf_sz + d;
            for col in 0..d {
                for row in (col + 1)..d {
                    qxc[row] += icf[idx] * xc[col];
                    idx += 1;
                }
            }
            let mut sq = T::ZERO;
            for j in 0..d {
                sq += qxc[j] * qxc[j];
            }
            main[c] = alphas[c] + sum_qs[c] - T::from_f64(0.5) * sq;
        }
        slse += logsumexp_generic(&main);
    }
    let mut prior = T::ZERO;
    for c in 0..k {
        let mut frobenius = T::ZERO;
        for j in 0..d {
            frobenius += qdiags[c * d + j] * qdiags[c * d + j];
        }
        for j in d..icf_sz {
            frobenius += icf[c * icf_sz + j] * icf[c * icf_sz + j];
        }
        prior += T::from_f64(0.5 * gamma * gamma) * frobenius - T::from_f64(m as f64) * sum_qs[c];
    }
    let nf = n as f64;
    let constant = -nf * (d as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln()
        - (k as f64) * crate::wishart_constant(d, gamma, m);
    T::from_f64(constant) + slse - T::from_f64(nf) * logsumexp_generic(alphas) + prior
}
