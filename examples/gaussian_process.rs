//! A Gaussian process fitted by its marginal likelihood: nalgebra matrices inside
//! `#[differentiable]` code (feature `nalgebra` of the runtime), a Cholesky solve and
//! log-determinant with rules of their own (`mooncake_runtime::linalg::chol`), and **argmin**'s
//! L-BFGS on the hyperparameters.
//!
//! The model: `y = f(x) + ε`, `f ~ GP(0, k)` with the squared-exponential kernel
//! `k(x, x') = σf² exp(-(x - x')² / (2ℓ²))` and noise `ε ~ N(0, σn²)`. The negative log marginal
//! likelihood of the data is `½ yᵀ K⁻¹ y + ½ log det K + (n/2) log 2π` with
//! `K = k(X, X) + σn² I`. The kernel matrix is built element by element in the differentiated
//! body (a `Vec` filled in a loop, turned into a `DMatrix`), then factorised once per
//! evaluation by `cholesky_solve` / `cholesky_logdet`. The hyperparameters are optimised on the
//! log scale, `θ = (log ℓ, log σf, log σn)`.
//!
//! Checks: the gradient against central finite differences and against forward mode at the
//! start, and that L-BFGS stops at a point where the gradient is small (below `1e-5` relative
//! to the start's) with a lower cost. Exits non-zero if a check fails.
//!
//! Run with `cargo run --release -p mooncake-examples --features clients --example
//! gaussian_process`.

use argmin::core::{CostFunction, Error, Executor, Gradient, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use mooncake_examples::{
    Checks, Rng, finite_difference_gradient, max_relative_difference, norm, show,
};
use mooncake_runtime::linalg::chol::*;
use mooncake_runtime::linalg::rules::*;
use mooncake_runtime::prelude::*;
use nalgebra::DVector;

/// The negative log marginal likelihood of `y` at inputs `x`, hyperparameters
/// `theta = (log ℓ, log σf, log σn)`.
#[differentiable]
fn neg_log_marginal(theta: &[f64], x: &[f64], y: &DVector<f64>) -> f64 {
    let ell = theta[0].exp();
    let sf2 = (2.0 * theta[1]).exp();
    let sn2 = (2.0 * theta[2]).exp();
    let n = x.len();
    let mut k = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let d = (x[i] - x[j]) / ell;
            let mut kij = sf2 * (-0.5 * d * d).exp();
            if i == j {
                kij += sn2;
            }
            k.push(kij);
        }
    }
    let km = from_row_slice(n, n, &k);
    let alpha = km.cholesky_solve(y);
    let log_2pi = (2.0 * std::f64::consts::PI).ln();
    0.5 * y.dot(&alpha) + 0.5 * km.cholesky_logdet() + 0.5 * (n as f64) * log_2pi
}

/// The fitting problem handed to argmin.
#[derive(Clone)]
struct Marginal {
    x: Vec<f64>,
    y: DVector<f64>,
}

impl Marginal {
    fn value_and_gradient(&self, theta: &[f64]) -> (f64, Vec<f64>) {
        let (v, (g, _, _)) = value_and_gradient!(neg_log_marginal(theta, &*self.x, &self.y));
        (v, g)
    }
}

impl CostFunction for Marginal {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, theta: &Vec<f64>) -> Result<f64, Error> {
        Ok(neg_log_marginal(theta, &self.x, &self.y))
    }
}

impl Gradient for Marginal {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, theta: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(self.value_and_gradient(theta).1)
    }
}

fn main() -> Result<(), Error> {
    let mut checks = Checks::new();
    // 40 noisy observations of sin(3x) on [-2, 2].
    let mut rng = Rng::new(7);
    let n = 40;
    let x: Vec<f64> = (0..n).map(|i| -2.0 + 4.0 * i as f64 / (n - 1) as f64).collect();
    let y = DVector::from_iterator(n, x.iter().map(|&t| (3.0 * t).sin() + 0.1 * rng.normal()));
    let problem = Marginal { x, y };

    let theta0 = vec![0.0_f64, 0.0, -1.0];
    let (v0, g0) = problem.value_and_gradient(&theta0);
    println!("Gaussian process, {n} points, θ = (log ℓ, log σf, log σn)");
    println!("start θ = {}: cost {v0:.6}", show(&theta0, 4));
    println!("  gradient (reverse mode):  {}", show(&g0, 6));
    let fd =
        finite_difference_gradient(|t| neg_log_marginal(t, &problem.x, &problem.y), &theta0, 1e-5);
    println!("  finite differences:       {}", show(&fd, 6));
    let d_fd = max_relative_difference(&g0, &fd);
    checks.check(
        d_fd < 1e-6,
        format!("gradient against finite differences (max rel. diff {d_fd:.1e})"),
    );
    let dir = vec![0.3, -0.7, 0.5];
    let (_, dv) = value_and_derivative!(
        neg_log_marginal(&*theta0, &*problem.x, &problem.y),
        (dir.clone(), vec![0.0; n], DVector::zeros(n))
    );
    let dg: f64 = g0.iter().zip(&dir).map(|(a, b)| a * b).sum();
    println!("  along {}: forward mode {dv:.8}, <gradient, v> {dg:.8}", show(&dir, 2));
    checks.check((dv - dg).abs() < 1e-9 * (1.0 + dg.abs()), "forward mode against reverse mode");

    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7)
        .with_tolerance_grad(1e-8)?
        .with_tolerance_cost(0.0)?;
    let result = Executor::new(problem.clone(), solver)
        .configure(|state| state.param(theta0.clone()).max_iters(200))
        .run()?;
    let state = result.state();
    let theta = state.get_best_param().cloned().unwrap_or_default();
    let cost = state.get_best_cost();
    let (_, g) = problem.value_and_gradient(&theta);
    let exp: Vec<f64> = theta.iter().map(|t| t.exp()).collect();
    println!(
        "L-BFGS: {} iterations ({}), cost {v0:.6} -> {cost:.6}",
        state.get_iter(),
        state.get_termination_reason().map_or("none".into(), |r| r.text().to_string())
    );
    println!("  θ = {}: ℓ, σf, σn = {}", show(&theta, 4), show(&exp, 4));
    println!("  |gradient| = {:.2e} (start {:.2e})", norm(&g), norm(&g0));
    checks.check(cost < v0, "the fit lowers the cost");
    checks.check(norm(&g) < 1e-5 * norm(&g0), "the gradient at the fit is small");
    checks.check((exp[2] - 0.1).abs() < 0.05, "the noise level found is near the true 0.1");
    checks.finish("gaussian process");
    Ok(())
}
