//! A step size tuned by differentiating through gradient descent (nested AD).
//!
//! `descend(x0, log_eta)` runs 30 steps of gradient descent on a potential, each step's
//! gradient taken by `value_and_gradient!` inside the function, and returns the potential where
//! it ends. Its derivative with respect to `log_eta` (the hypergradient) runs through every
//! step's gradient: in reverse mode each step's pullback is a Hessian-vector product of the
//! potential. The example checks the hypergradient against central finite differences and
//! against forward mode, then tunes the step size by gradient descent on `log_eta`.
//!
//! ```sh
//! cargo run --release --example tuned_step
//! ```

use mooncake_runtime::prelude::*;
use std::process::ExitCode;

/// An ill-conditioned potential with a quartic wall and couplings between neighbours:
/// `Σ (cᵢ xᵢ² / 2 + xᵢ⁴ / 4) + k Σ xᵢ xᵢ₊₁` with curvatures `cᵢ` from 1 to 20. Generic over
/// `T: Float`, so that its gradient can be differentiated.
#[differentiable]
fn potential<T: Float>(x: &[T], k: T) -> T {
    let n = x.len();
    let mut u = T::zero();
    for i in 0..n {
        let c = T::from_f64(1.0 + 19.0 * i as f64 / (n - 1) as f64);
        u += T::from_f64(0.5) * c * x[i] * x[i] + T::from_f64(0.25) * x[i] * x[i] * x[i] * x[i];
        if i + 1 < n {
            u += k * x[i] * x[i + 1];
        }
    }
    u
}

/// Thirty steps of gradient descent from `x0` with step `exp(log_eta)`, then the potential.
#[differentiable]
fn descend(x0: &[f64], log_eta: f64) -> f64 {
    let eta = log_eta.exp();
    let mut x = x0.to_vec();
    for _ in 0..30 {
        let (_, (g, _)) = value_and_gradient!(potential(&x, 0.3));
        for i in 0..x.len() {
            x[i] -= eta * g[i];
        }
    }
    potential(&x, 0.3)
}

fn main() -> ExitCode {
    let x0: Vec<f64> = (0..10).map(|i| 1.0 - 0.15 * i as f64).collect();
    let mut ok = true;

    // The hypergradient at a small step, three ways.
    let log_eta = (0.01_f64).ln();
    let (loss, (_, hyper)) = value_and_gradient!(descend(&x0, log_eta));
    let (_, forward) = value_and_derivative!(descend(&x0, log_eta), (vec![0.0; x0.len()], 1.0));
    let h = 1e-5;
    let fd = (descend(&x0, log_eta + h) - descend(&x0, log_eta - h)) / (2.0 * h);
    println!("loss after 30 steps with eta = 0.01: {loss:.6}");
    println!(
        "d loss / d log(eta): reverse {hyper:.8}, forward {forward:.8}, finite differences {fd:.8}"
    );
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()));
    if !close(hyper, forward, 1e-10) {
        eprintln!("FAILED: reverse and forward hypergradients differ");
        ok = false;
    }
    if !close(hyper, fd, 1e-6) {
        eprintln!("FAILED: the hypergradient disagrees with finite differences");
        ok = false;
    }

    // Tune the step: gradient descent on log(eta), with a step halved whenever the loss rises.
    let (mut p, mut rate) = (log_eta, 0.5);
    let (mut current, (_, mut g)) = value_and_gradient!(descend(&x0, p));
    for it in 0..40 {
        let candidate = p - rate * g.signum() * g.abs().min(1.0 / rate);
        let (value, (_, grad)) = value_and_gradient!(descend(&x0, candidate));
        if value < current {
            (p, current, g) = (candidate, value, grad);
        } else {
            rate *= 0.5;
        }
        if it % 10 == 9 {
            println!("outer step {:2}: eta = {:.5}, loss = {current:.3e}", it + 1, p.exp());
        }
    }
    println!("tuned: eta = {:.5} (from 0.01), loss {current:.3e} (from {loss:.3e})", p.exp());
    if current >= 0.1 * loss || current.is_nan() {
        eprintln!("FAILED: tuning the step did not lower the loss tenfold");
        ok = false;
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
