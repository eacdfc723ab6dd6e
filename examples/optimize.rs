//! Optimisation with a client crate: **argmin**'s L-BFGS, its gradients supplied by our reverse
//! mode (`value_and_gradient!`), on two problems.
//!
//! 1. A logistic regression fitted to 400 synthetic points, its parameters in a
//!    `#[derive(Tangent)]` struct (`Params { w, b }`): the gradient comes back as a
//!    `ParamsTangent` with the same field names, which the example flattens for argmin. It
//!    checks that the fit is a stationary point (the loss is strictly convex, so it is the
//!    optimum) and that the weights are near those that generated the data.
//! 2. The 100-dimensional Rosenbrock function from the classic start `(-1.2, 1, -1.2, 1, ..)`; it
//!    checks convergence to the known optimum `(1, .., 1)`, where the value is 0.
//!
//! Each gradient is first checked against central finite differences and (Rosenbrock) against
//! forward mode (`value_and_derivative!`). Prints the iterations and final costs; exits non-zero
//! if a check fails.
//!
//! Run with `cargo run --release --example optimize`.

use argmin::core::observers::{Observe, ObserverMode};
use argmin::core::{CostFunction, Error, Executor, Gradient, IterState, KV, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use mooncake_examples::{
    Checks, Rng, finite_difference_gradient, max_relative_difference, norm, show,
};
use mooncake_runtime::prelude::*;

// ---- the functions, differentiated by #[differentiable] ------------------------------------

/// The parameters of the logistic regression: weights and intercept.
#[derive(Tangent, Clone, Debug, PartialEq)]
pub struct Params {
    /// One weight per feature.
    pub w: Vec<f64>,
    /// The intercept.
    pub b: f64,
}

/// `log(1 + exp(t))`, computed without overflow.
#[differentiable]
fn softplus(t: f64) -> f64 {
    if t > 0.0 { t + (-t).exp().ln_1p() } else { t.exp().ln_1p() }
}

/// The mean negative log-likelihood of labels `ys` (0 or 1) given features `xs` (row-major,
/// one row of `p.w.len()` features per label), plus a small ridge penalty `lambda/2 |w|²`.
#[differentiable]
fn logistic_loss(p: &Params, xs: &[f64], ys: &[f64], lambda: f64) -> f64 {
    let d = p.w.len();
    let n = ys.len();
    let mut total = 0.0;
    for i in 0..n {
        let mut eta = p.b;
        for j in 0..d {
            eta += p.w[j] * xs[i * d + j];
        }
        // -log P(y | eta) = log(1 + e^eta) - y eta
        total += softplus(eta) - ys[i] * eta;
    }
    let mut penalty = 0.0;
    for j in 0..d {
        penalty += p.w[j] * p.w[j];
    }
    total / (n as f64) + 0.5 * lambda * penalty
}

/// The Rosenbrock function in any dimension: `Σ (1 - x_i)² + 100 (x_{i+1} - x_i²)²`.
#[differentiable]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

// ---- the problems, as argmin sees them -------------------------------------------------------

/// Logistic regression over argmin's flat parameter vector `[w_0, .., w_{d-1}, b]`.
#[derive(Clone)]
struct Logistic {
    xs: Vec<f64>,
    ys: Vec<f64>,
    lambda: f64,
}

impl Logistic {
    fn params(flat: &[f64]) -> Params {
        let d = flat.len() - 1;
        Params { w: flat[..d].to_vec(), b: flat[d] }
    }

    fn loss(&self, flat: &[f64]) -> f64 {
        logistic_loss(&Logistic::params(flat), &self.xs, &self.ys, self.lambda)
    }

    /// The loss and its gradient by reverse mode, flattened like the parameters.
    fn loss_and_gradient(&self, flat: &[f64]) -> (f64, Vec<f64>) {
        let p = Logistic::params(flat);
        let (value, (gp, _, _, _)) =
            value_and_gradient!(logistic_loss(&p, &self.xs, &self.ys, self.lambda));
        // `gp` is a `ParamsTangent`: the gradient with `Params`' field names.
        let mut g = gp.w;
        g.push(gp.b);
        (value, g)
    }
}

impl CostFunction for Logistic {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        Ok(self.loss(p))
    }
}

impl Gradient for Logistic {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, p: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(self.loss_and_gradient(p).1)
    }
}

/// The Rosenbrock function for argmin.
struct Rosenbrock;

impl CostFunction for Rosenbrock {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        Ok(rosenbrock(x))
    }
}

impl Gradient for Rosenbrock {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let (_, (g,)) = value_and_gradient!(rosenbrock(&x[..]));
        Ok(g)
    }
}

/// Prints the iteration, the cost and the gradient's norm (argmin calls it every N iterations).
struct Progress;

type LbfgsState = IterState<Vec<f64>, Vec<f64>, (), (), (), f64>;

impl Observe<LbfgsState> for Progress {
    fn observe_iter(&mut self, state: &LbfgsState, _kv: &KV) -> Result<(), Error> {
        let gradient_norm = state.get_gradient().map_or(f64::NAN, |g| norm(g));
        println!(
            "  iteration {:>4}   cost {:>12.6e}   |gradient| {:.2e}",
            state.get_iter(),
            state.get_cost(),
            gradient_norm
        );
        Ok(())
    }
}

/// Runs L-BFGS (memory `m`, More-Thuente line search) from `x0`; returns the best parameters,
/// their cost, the iteration count and why it stopped.
fn lbfgs<P>(problem: P, x0: Vec<f64>, m: usize, report_every: u64) -> Result<Fit, Error>
where
    P: CostFunction<Param = Vec<f64>, Output = f64>
        + Gradient<Param = Vec<f64>, Gradient = Vec<f64>>,
{
    let start = problem.cost(&x0)?;
    println!("  L-BFGS (memory {m}) from cost {start:.6e} (argmin counts iterations from 0):");
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), m)
        .with_tolerance_grad(1e-10)?
        .with_tolerance_cost(0.0)?;
    let result = Executor::new(problem, solver)
        .configure(|state| state.param(x0).max_iters(1000))
        .add_observer(Progress, ObserverMode::Every(report_every))
        .run()?;
    let state = result.state();
    Ok(Fit {
        x: state.get_best_param().cloned().unwrap_or_default(),
        cost: state.get_best_cost(),
        iterations: state.get_iter(),
        gradient_evaluations: result.problem().counts.get("gradient_count").copied().unwrap_or(0),
        reason: state.get_termination_reason().map_or("none".into(), |r| r.text().to_string()),
    })
}

struct Fit {
    x: Vec<f64>,
    cost: f64,
    iterations: u64,
    gradient_evaluations: u64,
    reason: String,
}

fn main() -> Result<(), Error> {
    let mut checks = Checks::new();

    // ---- 1. logistic regression ------------------------------------------------------------
    let (n, d) = (400, 3);
    let (w_true, b_true) = ([1.5, -2.0, 0.5], 0.3);
    let mut rng = Rng::new(2024);
    let mut xs = Vec::with_capacity(n * d);
    let mut ys = Vec::with_capacity(n);
    for _ in 0..n {
        let mut eta = b_true;
        for w in w_true {
            let x = rng.normal();
            xs.push(x);
            eta += w * x;
        }
        let p = 1.0 / (1.0 + (-eta).exp());
        ys.push(if rng.uniform() < p { 1.0 } else { 0.0 });
    }
    let problem = Logistic { xs, ys, lambda: 1e-3 };
    println!(
        "logistic regression: {n} points, {d} features, data drawn with w = {w_true:?}, b = {b_true}"
    );

    let probe = vec![0.2, -0.1, 0.4, 0.05];
    let (_, g) = problem.loss_and_gradient(&probe);
    let fd = finite_difference_gradient(|p| problem.loss(p), &probe, 1e-6);
    let error = max_relative_difference(&g, &fd);
    println!("  gradient at {probe:?}:");
    println!("    reverse mode        {}", show(&g, 6));
    println!("    finite differences  {}  max rel. diff {error:.1e}", show(&fd, 6));
    checks.check(error < 1e-6, "logistic gradient disagrees with finite differences");

    let fit = lbfgs(problem.clone(), vec![0.0; d + 1], 7, 5)?;
    let (_, g) = problem.loss_and_gradient(&fit.x);
    let fitted = Logistic::params(&fit.x);
    println!(
        "  L-BFGS: {} iterations, {} gradients, stopped: {}",
        fit.iterations, fit.gradient_evaluations, fit.reason
    );
    println!("  final cost {:.10}, |gradient| {:.1e}", fit.cost, norm(&g));
    println!("  fitted w = {}, b = {:.3}", show(&fitted.w, 3), fitted.b);
    let weight_error = fitted
        .w
        .iter()
        .zip(w_true)
        .map(|(a, b)| (a - b).abs())
        .fold((fitted.b - b_true).abs(), f64::max);
    println!("  max |fitted - generating| = {weight_error:.3} (tolerance 0.5)");
    checks.check(norm(&g) < 1e-6, "logistic fit is not a stationary point");
    checks.check(weight_error < 0.5, "logistic weights far from those that generated the data");

    // ---- 2. Rosenbrock, 100 dimensions -------------------------------------------------------
    let dim = 100;
    let x0: Vec<f64> = (0..dim).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
    println!();
    println!(
        "Rosenbrock, {dim} dimensions, from (-1.2, 1, -1.2, 1, ..): f = {:.4}",
        rosenbrock(&x0)
    );
    let (_, (g,)) = value_and_gradient!(rosenbrock(&x0));
    let fd = finite_difference_gradient(rosenbrock, &x0, 1e-6);
    let mut direction_rng = Rng::new(7);
    let v: Vec<f64> = (0..dim).map(|_| direction_rng.normal()).collect();
    let (_, forward) = value_and_derivative!(rosenbrock(&x0), (v.clone(),));
    let projected: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    let fd_error = max_relative_difference(&g, &fd);
    let forward_error = (forward - projected).abs() / (1.0 + forward.abs());
    println!("  gradient: max rel. diff to finite differences {fd_error:.1e}");
    println!("  along a random v: forward mode {forward:.8}, <gradient, v> {projected:.8}");
    checks.check(fd_error < 1e-6, "Rosenbrock gradient disagrees with finite differences");
    checks.check(forward_error < 1e-12, "Rosenbrock gradient disagrees with forward mode");

    let fit = lbfgs(Rosenbrock, x0, 10, 50)?;
    let distance = fit.x.iter().map(|x| (x - 1.0).abs()).fold(0.0, f64::max);
    println!(
        "  L-BFGS: {} iterations, {} gradients, stopped: {}",
        fit.iterations, fit.gradient_evaluations, fit.reason
    );
    println!("  final cost {:.3e}, max |x_i - 1| = {distance:.1e}", fit.cost);
    checks.check(fit.cost < 1e-12, "Rosenbrock: final cost not near 0");
    checks.check(distance < 1e-6, "Rosenbrock: not at the optimum (1, .., 1)");

    println!();
    checks.finish("optimize");
    Ok(())
}
