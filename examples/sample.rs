//! Sampling with a client crate: draws from the posterior of a Bayesian logistic regression
//! with **nuts-rs** (the No-U-Turn Sampler), the log-density's gradient supplied by our reverse
//! mode through nuts-rs's `CpuLogpFunc` trait.
//!
//! The data (400 points, 2 features) are drawn from a logistic model with known coefficients;
//! the prior on each coefficient is `N(0, 2²)`. The log-posterior is an ordinary
//! `#[differentiable]` function over slices, and `CpuLogpFunc::logp` fills nuts-rs's gradient
//! buffer from `value_and_gradient!` in its prepared form (`cache = &mut cache`, a
//! `GradientCache`), so that the thousands of gradients nuts-rs asks for reuse one set of
//! buffers. The gradient is first checked against finite differences and forward mode. Prints the posterior means and standard deviations and checks that the
//! means are near the coefficients that generated the data (within 4 posterior standard
//! deviations); exits non-zero otherwise.
//!
//! Run with `cargo run --release --example sample` (about a second).

use std::collections::HashMap;
use std::time::Instant;

use mooncake_examples::{Checks, Rng, finite_difference_gradient, max_relative_difference, show};
use mooncake_runtime::prelude::*;
use nuts_rs::rand::SeedableRng;
use nuts_rs::rand::rngs::ChaCha8Rng;
use nuts_rs::{
    Chain, CpuLogpFunc, CpuMath, CpuMathError, DiagNutsSettings, HasDims, LogpError, Settings,
};

/// `log(1 + exp(t))`, computed without overflow.
#[differentiable]
fn softplus(t: f64) -> f64 {
    if t > 0.0 { t + (-t).exp().ln_1p() } else { t.exp().ln_1p() }
}

/// The log-posterior (up to a constant) of coefficients `theta = [w_0, .., w_{d-1}, b]` given
/// features `xs` (row-major, `d` per point) and labels `ys` (0 or 1), under independent
/// `N(0, prior_sd²)` priors.
#[differentiable]
fn log_posterior(theta: &[f64], xs: &[f64], ys: &[f64], prior_sd: f64) -> f64 {
    let d = theta.len() - 1;
    let mut logp = 0.0;
    for i in 0..ys.len() {
        let mut eta = theta[d];
        for j in 0..d {
            eta += theta[j] * xs[i * d + j];
        }
        // log P(y | eta) = y eta - log(1 + e^eta)
        logp += ys[i] * eta - softplus(eta);
    }
    for t in theta.iter() {
        let u = *t / prior_sd;
        logp -= 0.5 * u * u;
    }
    logp
}

/// The posterior as nuts-rs sees it: the data, and a prepared gradient cache, so that the many
/// gradients nuts-rs asks for reuse one set of buffers.
#[derive(Debug)]
struct Posterior {
    xs: Vec<f64>,
    ys: Vec<f64>,
    prior_sd: f64,
    dim: usize,
    cache: GradientCache,
}

/// A log-density that is not finite (nuts-rs treats it as a divergence).
#[derive(Debug)]
struct NonFinite;

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the log-density is not finite")
    }
}

impl std::error::Error for NonFinite {}

impl LogpError for NonFinite {
    fn is_recoverable(&self) -> bool {
        true
    }
}

impl HasDims for Posterior {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([("unconstrained_parameter".to_string(), self.dim as u64)])
    }
}

impl CpuLogpFunc for Posterior {
    type LogpError = NonFinite;
    type FlowParameters = ();
    type ExpandedVector = Vec<f64>;

    fn dim(&self) -> usize {
        self.dim
    }

    /// The log-density at `position`, its gradient (reverse mode, borrowed from the cache)
    /// copied into `gradient`.
    fn logp(&mut self, position: &[f64], gradient: &mut [f64]) -> Result<f64, NonFinite> {
        let (logp, (g, _, _, _)) = value_and_gradient!(
            log_posterior(position, &self.xs, &self.ys, self.prior_sd),
            cache = &mut self.cache
        );
        if !logp.is_finite() {
            return Err(NonFinite);
        }
        gradient.copy_from_slice(g);
        Ok(logp)
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        position: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(position.to_vec())
    }
}

fn main() {
    let mut checks = Checks::new();

    // ---- synthetic data from known coefficients ----------------------------------------------
    let (n, d) = (400, 2);
    let truth = [1.0, -1.5, 0.5]; // w_0, w_1, b
    let mut rng = Rng::new(11);
    let mut xs = Vec::with_capacity(n * d);
    let mut ys = Vec::with_capacity(n);
    for _ in 0..n {
        let mut eta = truth[d];
        for w in &truth[..d] {
            let x = rng.normal();
            xs.push(x);
            eta += w * x;
        }
        ys.push(if rng.uniform() < 1.0 / (1.0 + (-eta).exp()) { 1.0 } else { 0.0 });
    }
    let mut posterior =
        Posterior { xs, ys, prior_sd: 2.0, dim: d + 1, cache: GradientCache::new() };
    println!(
        "Bayesian logistic regression: {n} points, {d} features + intercept, data drawn with \
         (w_0, w_1, b) = {truth:?}, prior N(0, 2²)"
    );

    // ---- the gradient nuts-rs will get, checked once ----------------------------------------
    let probe = [0.3, -0.2, 0.1];
    let mut g = vec![0.0; d + 1];
    let logp = posterior.logp(&probe, &mut g).expect("finite at the probe");
    let fd = finite_difference_gradient(
        |t| log_posterior(t, &posterior.xs, &posterior.ys, posterior.prior_sd),
        &probe,
        1e-6,
    );
    let v = [1.0, 0.5, -2.0];
    let (_, forward) = value_and_derivative!(
        log_posterior(&probe, &posterior.xs, &posterior.ys, posterior.prior_sd),
        (v.to_vec(), vec![0.0; n * d], vec![0.0; n], 0.0)
    );
    let projected: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    let fd_error = max_relative_difference(&g, &fd);
    let forward_error = (forward - projected).abs() / (1.0 + forward.abs());
    println!("log-density at {probe:?}: {logp:.6}");
    println!("  gradient (reverse mode)  {}", show(&g, 6));
    println!("  finite differences       {}  max rel. diff {fd_error:.1e}", show(&fd, 6));
    println!("  along v = {v:?}: forward mode {forward:.8}, <gradient, v> {projected:.8}");
    checks.check(fd_error < 1e-6, "log-density gradient disagrees with finite differences");
    checks.check(forward_error < 1e-12, "log-density gradient disagrees with forward mode");

    // ---- NUTS --------------------------------------------------------------------------------
    let (num_tune, num_draws) = (1000, 2000);
    let settings = DiagNutsSettings { num_tune, num_draws, seed: 42, ..Default::default() };
    let mut sampler_rng = ChaCha8Rng::seed_from_u64(42);
    // The posterior, its cache already prepared by the check above, goes to nuts-rs.
    let math = CpuMath::new(posterior);
    let mut chain = settings.new_chain(0, math, &mut sampler_rng).expect("valid settings");
    chain.set_position(&[0.0; 3]).expect("a finite starting point");
    let started = Instant::now();
    let mut draws: Vec<Vec<f64>> = Vec::with_capacity(num_draws as usize);
    let (mut gradients, mut divergences, mut step_size) = (0, 0, 0.0);
    for _ in 0..num_tune + num_draws {
        let (draw, progress) = chain.draw().expect("no unrecoverable error");
        gradients += progress.num_gradients;
        if !progress.tuning {
            draws.push(draw.to_vec());
            divergences += usize::from(progress.diverging);
            step_size = progress.step_size;
        }
    }
    let elapsed = started.elapsed();
    println!();
    println!(
        "NUTS: {num_tune} tuning steps + {num_draws} draws, {gradients} gradients, step size \
         {step_size:.3}, {divergences} divergences, {:.2} s",
        elapsed.as_secs_f64()
    );

    // ---- posterior summaries, checked against the generating coefficients --------------------
    let names = ["w_0", "w_1", "b"];
    println!("  {:<4} {:>9} {:>9} {:>9} {:>13}", "", "mean", "sd", "truth", "|mean-truth|");
    for k in 0..d + 1 {
        let m = draws.len() as f64;
        let mean = draws.iter().map(|x| x[k]).sum::<f64>() / m;
        let sd = (draws.iter().map(|x| (x[k] - mean).powi(2)).sum::<f64>() / (m - 1.0)).sqrt();
        let off = (mean - truth[k]).abs();
        println!(
            "  {:<4} {mean:>9.3} {sd:>9.3} {:>9.3} {:>8.3} = {:.1} sd",
            names[k],
            truth[k],
            off,
            off / sd
        );
        checks.check(
            sd > 0.0 && off < 4.0 * sd,
            format!("posterior mean of {} is {:.1} sd from the truth", names[k], off / sd),
        );
    }
    checks.check(divergences == 0, format!("{divergences} divergent transitions"));

    println!();
    checks.finish("sample");
}
