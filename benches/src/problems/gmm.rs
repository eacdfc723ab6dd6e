//! `gmm`: the negative log-likelihood-style objective of a Gaussian mixture model with a
//! Wishart prior, as defined by ADBench (Srajer, Kukelova and Fitzgibbon, "A benchmark of
//! selected algorithmic differentiation tools on some problems in computer vision and machine
//! learning", 2018), written with slices and index loops like ADBench's C++ reference.
//!
//! Parameters, for `k` components in `d` dimensions: `alphas` (`k` unnormalised log weights),
//! `means` (`k × d`) and `icf` (`k × d(d+1)/2` inverse covariance factors: per component, the
//! logs of the `d` diagonal entries of the lower-triangular `Q`, then its strictly lower part
//! column by column). Data: `x` (`n × d`), the Wishart parameters `gamma` and `m`.
#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// `log Σᵢ exp vᵢ`, shifted by the largest entry.
#[differentiable]
pub fn logsumexp(v: &[f64]) -> f64 {
    let mut m = v[0];
    for u in v.iter() {
        if *u > m {
            m = *u;
        }
    }
    let mut s = 0.0;
    for u in v.iter() {
        s += (u - m).exp();
    }
    s.ln() + m
}

/// `ln Γ(t / 2)` for an integer `t ≥ 1`.
fn ln_gamma_half(t: usize) -> f64 {
    // Γ(1) = 1, Γ(1/2) = √π, Γ(z + 1) = z Γ(z).
    let (mut z, mut acc) =
        if t.is_multiple_of(2) { (1.0, 0.0) } else { (0.5, 0.5 * std::f64::consts::PI.ln()) };
    while z < t as f64 / 2.0 {
        acc += z.ln();
        z += 1.0;
    }
    acc
}

/// `ln Γ_d(n / 2)`, the log of the multivariate gamma function at a half-integer.
pub fn ln_multigamma_half(d: usize, n: usize) -> f64 {
    let mut acc = (d * d.saturating_sub(1)) as f64 / 4.0 * std::f64::consts::PI.ln();
    for j in 1..=d {
        acc += ln_gamma_half(n + 1 - j);
    }
    acc
}

zero_adjoint! {
    pub fn ln_multigamma_half(d: usize, n: usize) -> f64;
}

/// The part of ADBench's log Wishart prior that does not depend on the parameters, per
/// component: `n_w d (ln γ − ½ ln 2) − ln Γ_d(n_w / 2)` with `n_w = d + m + 1`.
#[differentiable]
pub fn wishart_constant(d: usize, gamma: f64, m: usize) -> f64 {
    let nw = d + m + 1;
    ((nw * d) as f64) * (gamma.ln() - 0.5 * 2.0_f64.ln()) - ln_multigamma_half(d, nw)
}

/// ADBench's GMM objective: `Σᵢ logsumexpₖ(αₖ + Σ log diag Qₖ − ½ ‖Qₖ (xᵢ − μₖ)‖²)
/// − n logsumexp(α) − n d ½ ln 2π` plus the log Wishart prior.
#[differentiable]
pub fn gmm_objective(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    gamma: f64,
    m: usize,
) -> f64 {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let mut qdiags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for c in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            let q = icf[c * icf_sz + j];
            s += q;
            qdiags[c * d + j] = q.exp();
        }
        sum_qs[c] = s;
    }
    let mut xc = vec![0.0; d];
    let mut qxc = vec![0.0; d];
    let mut main = vec![0.0; k];
    let mut slse = 0.0;
    for i in 0..n {
        for c in 0..k {
            for j in 0..d {
                xc[j] = x[i * d + j] - means[c * d + j];
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
            let mut sq = 0.0;
            for j in 0..d {
                sq += qxc[j] * qxc[j];
            }
            main[c] = alphas[c] + sum_qs[c] - 0.5 * sq;
        }
        slse += logsumexp(&main);
    }
    let mut prior = 0.0;
    for c in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += qdiags[c * d + j] * qdiags[c * d + j];
        }
        for j in d..icf_sz {
            frobenius += icf[c * icf_sz + j] * icf[c * icf_sz + j];
        }
        prior += 0.5 * gamma * gamma * frobenius - (m as f64) * sum_qs[c];
    }
    let nf = n as f64;
    let constant = -nf * (d as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    constant + slse - nf * logsumexp(alphas) + prior - (k as f64) * wishart_constant(d, gamma, m)
}

/// Scratch buffers of [`gmm_objective_gradient`], allocated once.
#[derive(Clone, Debug)]
pub struct GmmWorkspace {
    qdiags: Vec<f64>,
    xc: Vec<f64>,
    qxc: Vec<f64>,
    dxc: Vec<f64>,
    main: Vec<f64>,
}

impl GmmWorkspace {
    /// Scratch for `k` components in `d` dimensions.
    pub fn new(k: usize, d: usize) -> GmmWorkspace {
        GmmWorkspace {
            qdiags: vec![0.0; k * d],
            xc: vec![0.0; k * d],
            qxc: vec![0.0; k * d],
            dxc: vec![0.0; d],
            main: vec![0.0; k],
        }
    }
}

/// `logsumexp` of plain values.
fn lse_plain(v: &[f64]) -> f64 {
    let m = v.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
    v.iter().map(|u| (u - m).exp()).sum::<f64>().ln() + m
}

/// The gradient of [`gmm_objective`] with respect to `alphas`, `means` and `icf`, by hand.
#[allow(clippy::too_many_arguments)]
pub fn gmm_objective_gradient(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    gamma: f64,
    m: usize,
    ws: &mut GmmWorkspace,
    (ga, gm, gi): (&mut [f64], &mut [f64], &mut [f64]),
) -> f64 {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    ga.fill(0.0);
    gm.fill(0.0);
    gi.fill(0.0);
    for c in 0..k {
        for j in 0..d {
            ws.qdiags[c * d + j] = icf[c * icf_sz + j].exp();
        }
    }
    let mut slse = 0.0;
    for i in 0..n {
        let xi = &x[i * d..(i + 1) * d];
        for c in 0..k {
            let base = c * icf_sz;
            let (xc, qxc) = (&mut ws.xc[c * d..(c + 1) * d], &mut ws.qxc[c * d..(c + 1) * d]);
            let mut sum_q = 0.0;
            for j in 0..d {
                xc[j] = xi[j] - means[c * d + j];
                qxc[j] = ws.qdiags[c * d + j] * xc[j];
                sum_q += icf[base + j];
            }
            let mut idx = base + d;
            for col in 0..d {
                for row in (col + 1)..d {
                    qxc[row] += icf[idx] * xc[col];
                    idx += 1;
                }
            }
            let sq: f64 = qxc.iter().map(|v| v * v).sum();
            ws.main[c] = alphas[c] + sum_q - 0.5 * sq;
        }
        let lse = lse_plain(&ws.main);
        slse += lse;
        for c in 0..k {
            let w = (ws.main[c] - lse).exp();
            let base = c * icf_sz;
            let (xc, qxc) = (&ws.xc[c * d..(c + 1) * d], &ws.qxc[c * d..(c + 1) * d]);
            ga[c] += w;
            // main = α + Σq − ½‖Q xc‖²: the cotangent of Q xc is −w Q xc.
            for j in 0..d {
                let dq = -w * qxc[j];
                gi[base + j] += w + dq * xc[j] * ws.qdiags[c * d + j];
                ws.dxc[j] = ws.qdiags[c * d + j] * dq;
            }
            let mut idx = base + d;
            for col in 0..d {
                for row in (col + 1)..d {
                    let dq = -w * qxc[row];
                    gi[idx] += dq * xc[col];
                    ws.dxc[col] += icf[idx] * dq;
                    idx += 1;
                }
            }
            for j in 0..d {
                gm[c * d + j] -= ws.dxc[j];
            }
        }
    }
    let nf = n as f64;
    let lse_alphas = lse_plain(alphas);
    for c in 0..k {
        ga[c] -= nf * (alphas[c] - lse_alphas).exp();
    }
    let mut prior = 0.0;
    let g2 = gamma * gamma;
    for c in 0..k {
        let base = c * icf_sz;
        let mut frobenius = 0.0;
        let mut sum_q = 0.0;
        for j in 0..d {
            let qd = ws.qdiags[c * d + j];
            frobenius += qd * qd;
            sum_q += icf[base + j];
            gi[base + j] += g2 * qd * qd - m as f64;
        }
        for j in d..icf_sz {
            frobenius += icf[base + j] * icf[base + j];
            gi[base + j] += g2 * icf[base + j];
        }
        prior += 0.5 * g2 * frobenius - (m as f64) * sum_q;
    }
    let constant = -nf * (d as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    constant + slse - nf * lse_alphas + prior - (k as f64) * wishart_constant(d, gamma, m)
}
