//! Nonlinear least squares with a client crate: **argmin**'s Gauss-Newton method, its Jacobian
//! supplied by `value_and_jacobian!` on a `#[differentiable]` residual function returning
//! `Vec<f64>`.
//!
//! The model is a damped oscillation, `y(t) = A e^(-λt) cos(ωt + φ) + c`, fitted to 80 noisy
//! synthetic samples. argmin's `GaussNewton` needs the problem's `Operator` (the residuals) and
//! `Jacobian` traits, and a Jacobian type with products, a transpose and an inverse
//! (`argmin-math`'s `Vec` backend has no inverse), so the example wraps our `Jacobian` in a small
//! matrix type with those (`Mat`, a Gauss-Jordan inverse for the 5 x 5 normal matrix).
//!
//! Checks: the Jacobian at the start point against central finite differences and forward mode
//! against reverse mode; the fit recovers the parameters that generated the data (within 0.03,
//! the noise being 0.02), is a stationary point of the sum of squares (`|Jᵀr|` below 1e-6, from
//! about 40 at the start), and
//! leaves residuals of the size of the noise. Exits non-zero if a check fails.
//!
//! Run with `cargo run --release -p mooncake-examples --features clients --example
//! least_squares`.

use argmin::core::{Error, Executor, Jacobian as JacobianTrait, Operator, State};
use argmin::solver::gaussnewton::GaussNewton;
use argmin_math::{ArgminDot, ArgminInv, ArgminTranspose};
use mooncake_examples::{Checks, Rng, max_relative_difference, norm, show};
use mooncake_runtime::prelude::*;

// ---- the residuals, differentiated by #[differentiable] --------------------------------------

/// `r_i = A e^(-λ t_i) cos(ω t_i + φ) + c - y_i` for `p = [A, λ, ω, φ, c]`.
#[differentiable]
fn residuals(p: &[f64], t: &[f64], y: &[f64]) -> Vec<f64> {
    let mut r = vec![0.0; t.len()];
    for i in 0..t.len() {
        let envelope = p[0] * (-p[1] * t[i]).exp();
        r[i] = envelope * (p[2] * t[i] + p[3]).cos() + p[4] - y[i];
    }
    r
}

/// The fitting problem as argmin sees it: the data, and the residuals and their Jacobian with
/// respect to the parameters (the data are constants: `Const(..)`, no blocks computed for them).
struct Fit {
    t: Vec<f64>,
    y: Vec<f64>,
}

impl Operator for Fit {
    type Param = Vec<f64>;
    type Output = Vec<f64>;

    fn apply(&self, p: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(residuals(p, &self.t, &self.y))
    }
}

impl JacobianTrait for Fit {
    type Param = Vec<f64>;
    type Jacobian = Mat;

    fn jacobian(&self, p: &Vec<f64>) -> Result<Mat, Error> {
        // 5 parameters, 80 residuals: the default mode is forward, one pass per parameter.
        let (_, (j, _, _)) = value_and_jacobian!(residuals(p, Const(&self.t), Const(&self.y)));
        Ok(Mat(j))
    }
}

// ---- the matrix type argmin's Gauss-Newton method computes with ------------------------------

/// A dense matrix: our `Jacobian` (row-major), with the operations `GaussNewton` uses:
/// `(JᵀJ)⁻¹ Jᵀ r`.
#[derive(Clone, Debug)]
struct Mat(mooncake_runtime::Jacobian);

impl ArgminTranspose<Mat> for Mat {
    fn t(self) -> Mat {
        Mat(self.0.transpose())
    }
}

impl ArgminDot<Mat, Mat> for Mat {
    /// The matrix product `self · other`.
    fn dot(&self, other: &Mat) -> Mat {
        let (a, b) = (&self.0, &other.0);
        assert_eq!(a.cols(), b.rows(), "a {:?} matrix times a {:?} one", a.shape(), b.shape());
        let mut data = vec![0.0; a.rows() * b.cols()];
        for i in 0..a.rows() {
            for k in 0..a.cols() {
                let aik = a[(i, k)];
                for j in 0..b.cols() {
                    data[i * b.cols() + j] += aik * b[(k, j)];
                }
            }
        }
        Mat(mooncake_runtime::Jacobian::from_row_major(a.rows(), b.cols(), data)
            .expect("rows x cols entries"))
    }
}

impl ArgminDot<Vec<f64>, Vec<f64>> for Mat {
    /// The matrix-vector product.
    fn dot(&self, v: &Vec<f64>) -> Vec<f64> {
        self.0.mul_vec(v)
    }
}

impl ArgminInv<Mat> for Mat {
    /// The inverse by Gauss-Jordan elimination with partial pivoting; an error if the matrix is
    /// not square or is singular to working precision.
    fn inv(&self) -> Result<Mat, Error> {
        let n = self.0.rows();
        if self.0.cols() != n {
            return Err(Error::msg(format!("inverse of a non-square {:?} matrix", self.0.shape())));
        }
        // [A | I], reduced to [I | A⁻¹].
        let w = 2 * n;
        let mut m = vec![0.0; n * w];
        for i in 0..n {
            m[i * w..i * w + n].copy_from_slice(self.0.row(i));
            m[i * w + n + i] = 1.0;
        }
        let scale = self.0.as_slice().iter().fold(0.0_f64, |s, x| s.max(x.abs()));
        for c in 0..n {
            let pivot = (c..n)
                .max_by(|&a, &b| m[a * w + c].abs().total_cmp(&m[b * w + c].abs()))
                .unwrap_or(c);
            if m[pivot * w + c].abs() <= 1e-14 * scale {
                return Err(Error::msg("the normal matrix JᵀJ is singular"));
            }
            for k in 0..w {
                m.swap(c * w + k, pivot * w + k);
            }
            let d = m[c * w + c];
            for k in 0..w {
                m[c * w + k] /= d;
            }
            for r in 0..n {
                let f = m[r * w + c];
                if r != c && f != 0.0 {
                    for k in 0..w {
                        m[r * w + k] -= f * m[c * w + k];
                    }
                }
            }
        }
        let inverse: Vec<f64> = (0..n).flat_map(|i| m[i * w + n..(i + 1) * w].to_vec()).collect();
        Ok(Mat(mooncake_runtime::Jacobian::from_row_major(n, n, inverse).expect("n x n entries")))
    }
}

// ---- the run --------------------------------------------------------------------------------

/// The Jacobian of the residuals by central finite differences, row-major.
fn finite_difference_jacobian(fit: &Fit, p: &[f64], h: f64) -> Vec<f64> {
    let (m, n) = (fit.t.len(), p.len());
    let mut data = vec![0.0; m * n];
    let mut q = p.to_vec();
    for j in 0..n {
        q[j] = p[j] + h;
        let plus = residuals(&q, &fit.t, &fit.y);
        q[j] = p[j] - h;
        let minus = residuals(&q, &fit.t, &fit.y);
        q[j] = p[j];
        for i in 0..m {
            data[i * n + j] = (plus[i] - minus[i]) / (2.0 * h);
        }
    }
    data
}

fn main() -> Result<(), Error> {
    let mut checks = Checks::new();
    let names = ["A", "λ", "ω", "φ", "c"];
    let truth = [2.0, 0.3, 2.5, 0.4, 0.5];
    let noise = 0.02;

    // Synthetic data: 80 samples over 8 time units, Gaussian noise.
    let mut rng = Rng::new(7);
    let t: Vec<f64> = (0..80).map(|i| 0.1 * i as f64).collect();
    let clean = residuals(&truth, &t, &vec![0.0; t.len()]);
    let y: Vec<f64> = clean.iter().map(|v| v + noise * rng.normal()).collect();
    let fit = Fit { t, y };
    println!(
        "damped oscillation A e^(-λt) cos(ωt + φ) + c: {} samples, noise {noise}, data drawn with \
         [A, λ, ω, φ, c] = {truth:?}",
        fit.t.len()
    );

    // The Jacobian at the start point: default mode (forward), reverse mode, finite differences.
    let start = vec![1.5, 0.5, 2.3, 0.0, 0.0];
    let j = fit.jacobian(&start)?.0;
    let (_, (jr, _, _)) =
        value_and_jacobian!(residuals(&start, Const(&fit.t), Const(&fit.y)), mode = reverse);
    let fd = finite_difference_jacobian(&fit, &start, 1e-6);
    let fd_error = max_relative_difference(j.as_slice(), &fd);
    let mode_error = max_relative_difference(j.as_slice(), jr.as_slice());
    println!("  Jacobian at the start {start:?}: {} x {}", j.rows(), j.cols());
    println!("    row 10, forward mode   {}", show(j.row(10), 6));
    println!("    row 10, reverse mode   {}", show(jr.row(10), 6));
    println!("    row 10, finite diff.   {}", show(&fd[10 * 5..11 * 5], 6));
    println!(
        "    max rel. diff: forward vs finite differences {fd_error:.1e}, vs reverse {mode_error:.1e}"
    );
    checks.check(j.shape() == (80, 5), format!("Jacobian shape {:?}, not (80, 5)", j.shape()));
    checks.check(fd_error < 1e-6, "Jacobian disagrees with finite differences");
    checks.check(mode_error < 1e-12, "forward and reverse Jacobians disagree");

    // Gauss-Newton (argmin): full steps, stopping when the residual norm stops falling.
    let r0 = fit.apply(&start)?;
    let (cost0, g0) = (norm(&r0), norm(&j.transpose().mul_vec(&r0)));
    let solver = GaussNewton::new().with_tolerance(1e-12)?;
    let result =
        Executor::new(fit, solver).configure(|s| s.param(start.clone()).max_iters(50)).run()?;
    let state = result.state();
    let p = state.get_best_param().cloned().unwrap_or_default();
    let fit = result.problem().problem.as_ref().expect("the problem is handed back");
    let r = fit.apply(&p)?;
    let g = fit.jacobian(&p)?.0.transpose().mul_vec(&r);
    let rms = norm(&r) / (r.len() as f64).sqrt();
    println!(
        "  Gauss-Newton: {} iterations, stopped: {}",
        state.get_iter(),
        state.get_termination_reason().map_or("none".into(), |r| r.text().to_string())
    );
    println!(
        "    |r| {cost0:.4} -> {:.6}, rms residual {rms:.4}, |Jᵀr| {g0:.1e} -> {:.1e}",
        norm(&r),
        norm(&g)
    );
    println!("    fitted {}", show(&p, 4));
    println!("    truth  {}", show(&truth, 4));
    for (k, name) in names.iter().enumerate() {
        let error = (p.get(k).copied().unwrap_or(f64::NAN) - truth[k]).abs();
        checks.check(
            error < 0.03,
            format!("{name} = {:?} is not within 0.03 of {}", p.get(k), truth[k]),
        );
    }
    checks.check(norm(&g) < 1e-6, format!("not a stationary point: |Jᵀr| = {:.1e}", norm(&g)));
    checks.check(
        (0.5 * noise..2.0 * noise).contains(&rms),
        format!("rms residual {rms} is not of the size of the noise {noise}"),
    );
    checks.finish("least squares");
    Ok(())
}
