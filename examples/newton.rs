//! Second-order optimisation with a client crate: **argmin**'s Newton-CG method on the
//! 100-dimensional Rosenbrock function, its curvature supplied two ways by forward-over-reverse
//! (`#[differentiable]`'s reverse rule run on dual numbers):
//!
//! 1. matrix-free: argmin's `Hessian` trait returns an operator whose product with a vector is
//!    one `hvp!` (prepared, with an `HvpCache`); the conjugate-gradient inner solver asks for as
//!    many products as it needs, and the Hessian is never formed;
//! 2. dense: argmin's `Hessian` trait returns the 100 x 100 matrix from `hessian!` (100
//!    Hessian-vector products).
//!
//! The function is written over `f64`, as any other; `#[differentiable(second_order)]` derives
//! its reverse rule from a copy over a float type parameter, which is what lets the rule run at
//! `T = Fwd<f64>` (a function written generic over `T: Float` needs no option).
//!
//! The solver is argmin's trust-region method with Steihaug's truncated conjugate gradients for
//! the step (Newton-CG in a trust region): it needs only products with the Hessian, and copes
//! with the negative curvature Rosenbrock has away from its minimum (argmin's line-search
//! `NewtonCG` stalls there).
//!
//! Checks: at `(-1.2, 1, -1.2, 1, ..)`, a Hessian-vector product along a random direction and
//! the whole Hessian against central differences of the gradient (`test_utils::check_hvp`,
//! `check_hessian`), the prepared product against the plain one and against the dense Hessian
//! times the direction; from 0 both runs reach the minimum (cost below 1e-12, every
//! `|x_i - 1|` below 1e-6); from `(-1.2, 1, ..)` the method ends at a stationary point (the
//! function's other local minimum). Exits non-zero if a check fails.
//!
//! Run with `cargo run --release -p mooncake-examples --features clients --example newton`.

use argmin::core::{CostFunction, Error, Executor, Gradient, Hessian, State};
use argmin::solver::trustregion::{Steihaug, TrustRegion};
use argmin_math::ArgminDot;
use mooncake_examples::{Checks, Rng, norm};
use mooncake_runtime::prelude::*;
use mooncake_runtime::test_utils::{check_hessian, check_hvp};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

// ---- the function, generic so that it runs on dual numbers -----------------------------------

/// `Σ (1 - x_i)² + 100 (x_{i+1} - x_i²)²`.
#[differentiable(second_order)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

// ---- the problem, as argmin sees it ----------------------------------------------------------

/// The Rosenbrock problem, with the curvature `dense` (a matrix from `hessian!`) or not (a
/// product operator over `hvp!`), and a count of the Hessian-vector products made.
struct Problem {
    dense: bool,
    cache: Rc<RefCell<HvpCache>>,
    products: Rc<Cell<usize>>,
}

/// What argmin's `Hessian` trait returns: something it can multiply a vector by.
#[derive(Clone)]
enum Curvature {
    /// `H v` by one prepared `hvp!` at `x`.
    Products { x: Vec<f64>, cache: Rc<RefCell<HvpCache>>, products: Rc<Cell<usize>> },
    /// The matrix, from `hessian!`.
    Dense(Jacobian),
}

impl ArgminDot<Vec<f64>, Vec<f64>> for Curvature {
    fn dot(&self, v: &Vec<f64>) -> Vec<f64> {
        match self {
            Curvature::Products { x, cache, products } => {
                products.set(products.get() + 1);
                let mut cache = cache.borrow_mut();
                let (_, _, (hv,)) = hvp!(rosenbrock(&x[..]), (v,), cache = &mut cache);
                hv.clone()
            }
            Curvature::Dense(h) => h.mul_vec(v),
        }
    }
}

impl CostFunction for Problem {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        Ok(rosenbrock(x))
    }
}

impl Gradient for Problem {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(value_and_gradient!(rosenbrock(&x[..])).1.0)
    }
}

impl Hessian for Problem {
    type Param = Vec<f64>;
    type Hessian = Curvature;
    fn hessian(&self, x: &Vec<f64>) -> Result<Curvature, Error> {
        Ok(if self.dense {
            self.products.set(self.products.get() + x.len());
            Curvature::Dense(hessian!(rosenbrock(&x[..])).2)
        } else {
            Curvature::Products {
                x: x.clone(),
                cache: Rc::clone(&self.cache),
                products: Rc::clone(&self.products),
            }
        })
    }
}

/// Minimises from `x0` with a trust-region Newton-CG method (Steihaug's truncated conjugate
/// gradients for the step, which needs only products with the Hessian and copes with negative
/// curvature); returns the best point, its cost, the iterations and the Hessian-vector products
/// used.
fn newton_cg(dense: bool, x0: Vec<f64>) -> Result<(Vec<f64>, f64, u64, usize), Error> {
    let products = Rc::new(Cell::new(0));
    let problem = Problem {
        dense,
        cache: Rc::new(RefCell::new(HvpCache::new())),
        products: products.clone(),
    };
    let solver = TrustRegion::new(Steihaug::new().with_max_iters(200)).with_radius(1.0)?;
    let result = Executor::new(problem, solver)
        .configure(|state| state.param(x0).max_iters(300).target_cost(1e-20))
        .run()?;
    let state = result.state();
    let x = state.get_best_param().cloned().unwrap_or_default();
    Ok((x, state.get_best_cost(), state.get_iter(), products.get()))
}

fn main() -> Result<(), Error> {
    let mut checks = Checks::new();
    let dim = 100;
    let x0: Vec<f64> = (0..dim).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
    println!(
        "Rosenbrock, {dim} dimensions, from (-1.2, 1, -1.2, 1, ..): f = {:.4}",
        rosenbrock(&x0)
    );

    // ---- the derivatives at the start point --------------------------------------------------
    let grad = |x: &Vec<f64>| value_and_gradient!(rosenbrock(&x[..])).1.0;
    let mut rng = Rng::new(11);
    let v: Vec<f64> = (0..dim).map(|_| rng.normal()).collect();
    let (y, (g,), (hv,)) = hvp!(rosenbrock(&x0), (&v,));
    println!("  hvp!: value {y:.4}, |gradient| {:.4e}, |H v| {:.4e}", norm(&g), norm(&hv));
    let hvp_ok = check_hvp(&hv, &x0, &v, grad);
    if let Err(e) = &hvp_ok {
        println!("  {e}");
    }
    checks.check(hvp_ok.is_ok(), "H v disagrees with central differences of the gradient");
    let mut cache = HvpCache::new();
    let (_, _, (hv_prepared,)) = hvp!(rosenbrock(&x0), (&v,), cache = &mut cache);
    checks.check(*hv_prepared == hv, "the prepared H v differs from the plain one");
    let (_, _, h) = hessian!(rosenbrock(&x0));
    let hessian_ok = check_hessian(&h, &x0, grad);
    if let Err(e) = &hessian_ok {
        println!("  {e}");
    }
    println!(
        "  hessian!: {} x {}, symmetric and equal to central differences of the gradient: {}",
        h.rows(),
        h.cols(),
        if hessian_ok.is_ok() { "yes" } else { "no" }
    );
    checks.check(hessian_ok.is_ok(), "the Hessian disagrees with central differences");
    let hv_dense = h.mul_vec(&v);
    let diff = hv_dense.iter().zip(&hv).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    checks.check(diff < 1e-9 * (1.0 + norm(&hv)), "H v differs from the dense Hessian times v");

    // ---- Newton-CG, matrix-free and dense ----------------------------------------------------
    // From 0 to the minimum at (1, .., 1); from the derivative checks' start point, which
    // L-BFGS's path (the `optimize` example) takes to the minimum, a method that follows the
    // curvature ends in the function's other local minimum, near x_0 = -1 (cost 3.99): a
    // stationary point too, which is what Newton's method promises.
    let zero = vec![0.0; dim];
    for dense in [false, true] {
        let (x, cost, iterations, products) = newton_cg(dense, zero.clone())?;
        let distance = x.iter().map(|x| (x - 1.0).abs()).fold(0.0, f64::max);
        println!(
            "  trust-region Newton-CG from 0, curvature {}: {iterations} iterations, {products} \
             Hessian-vector products, final cost {cost:.3e}, max |x_i - 1| = {distance:.1e}",
            if dense { "as a dense hessian!" } else { "by hvp! products" },
        );
        let how = if dense { "dense" } else { "matrix-free" };
        checks.check(cost < 1e-12, format!("Newton-CG ({how}): final cost not near 0"));
        checks.check(distance < 1e-6, format!("Newton-CG ({how}): not at the optimum (1, .., 1)"));
    }
    let (x, cost, iterations, products) = newton_cg(false, x0)?;
    let g = grad(&x);
    println!(
        "  from (-1.2, 1, -1.2, 1, ..), by hvp! products: {iterations} iterations, {products} \
         Hessian-vector products, a local minimum at x_0 = {:.4}, cost {cost:.4}, |gradient| \
         {:.1e}",
        x[0],
        norm(&g)
    );
    checks.check(norm(&g) < 1e-6, "Newton-CG from (-1.2, 1, ..): not a stationary point");

    println!();
    checks.finish("newton");
    Ok(())
}
