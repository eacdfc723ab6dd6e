//! Training a small neural network: a multilayer perceptron (2 inputs, one hidden layer of 16
//! `tanh` units, 1 output) fitted by full-batch gradient descent to a synthetic regression task,
//! `y = sin(2 x₀) + x₀ x₁ - 0.5 x₁² + noise` on 256 points of `[-1, 1]²`.
//!
//! The parameters live in a `#[derive(Tangent)]` struct, `Mlp`, and the forward pass is written
//! as `&self` methods in a `#[differentiable] impl Mlp` block; the gradient of the loss comes
//! back as an `MlpTangent` with the same field names, which the update step reads field by
//! field; the training loop uses the prepared form of the gradient (`cache = &mut cache`). The
//! gradient is checked once against finite differences and forward mode. Prints the loss every
//! 100 steps and checks that it fell by at least a factor of 100 over 2,000 steps; exits
//! non-zero otherwise.
//!
//! Run with `cargo run --release --example mlp` (a few seconds).

use mooncake_examples::{Checks, Rng, finite_difference_gradient, max_relative_difference};
use mooncake_runtime::prelude::*;

/// The network's parameters and shape.
#[derive(Tangent, Clone, Debug, PartialEq)]
pub struct Mlp {
    /// Hidden-layer weights, row-major: `hidden` rows of `inputs`.
    pub w1: Vec<f64>,
    /// Hidden-layer biases.
    pub b1: Vec<f64>,
    /// Output weights, one per hidden unit.
    pub w2: Vec<f64>,
    /// Output bias.
    pub b2: f64,
    /// Number of inputs.
    pub inputs: usize,
    /// Number of hidden units.
    pub hidden: usize,
}

#[differentiable]
impl Mlp {
    /// The network's output for row `row` of `xs` (row-major, `self.inputs` per row).
    fn forward(&self, xs: &[f64], row: usize) -> f64 {
        let mut out = self.b2;
        for k in 0..self.hidden {
            let mut a = self.b1[k];
            for j in 0..self.inputs {
                a += self.w1[k * self.inputs + j] * xs[row * self.inputs + j];
            }
            out += self.w2[k] * a.tanh();
        }
        out
    }

    /// The mean squared error over the data set.
    fn loss(&self, xs: &[f64], ys: &[f64]) -> f64 {
        let mut total = 0.0;
        for (i, y) in ys.iter().enumerate() {
            let r = self.forward(xs, i) - *y;
            total += r * r;
        }
        total / (ys.len() as f64)
    }
}

impl Mlp {
    /// A network with weights drawn at scale `1/sqrt(fan_in)` and zero biases.
    fn init(inputs: usize, hidden: usize, rng: &mut Rng) -> Mlp {
        let s1 = 1.0 / (inputs as f64).sqrt();
        let s2 = 1.0 / (hidden as f64).sqrt();
        Mlp {
            w1: (0..hidden * inputs).map(|_| s1 * rng.normal()).collect(),
            b1: vec![0.0; hidden],
            w2: (0..hidden).map(|_| s2 * rng.normal()).collect(),
            b2: 0.0,
            inputs,
            hidden,
        }
    }

    /// One gradient-descent step: every parameter moves against its gradient.
    fn step(&mut self, g: &MlpTangent, learning_rate: f64) {
        let descend = |p: &mut [f64], g: &[f64]| {
            p.iter_mut().zip(g).for_each(|(p, g)| *p -= learning_rate * g);
        };
        descend(&mut self.w1, &g.w1);
        descend(&mut self.b1, &g.b1);
        descend(&mut self.w2, &g.w2);
        self.b2 -= learning_rate * g.b2;
    }

    /// The parameters as one flat vector `[w1, b1, w2, b2]` (for finite differences).
    fn flat(&self) -> Vec<f64> {
        let mut v = [self.w1.clone(), self.b1.clone(), self.w2.clone()].concat();
        v.push(self.b2);
        v
    }

    /// A network of this shape with the parameters of the flat vector `v`.
    fn with_flat(&self, v: &[f64]) -> Mlp {
        let (n1, h) = (self.w1.len(), self.hidden);
        Mlp {
            w1: v[..n1].to_vec(),
            b1: v[n1..n1 + h].to_vec(),
            w2: v[n1 + h..n1 + 2 * h].to_vec(),
            b2: v[n1 + 2 * h],
            ..self.clone()
        }
    }
}

/// An `MlpTangent` flattened like [`Mlp::flat`].
fn flat_tangent(g: &MlpTangent) -> Vec<f64> {
    let mut v = [g.w1.clone(), g.b1.clone(), g.w2.clone()].concat();
    v.push(g.b2);
    v
}

fn main() {
    let (steps, report_every, required_factor) = (2000, 100, 100.0);
    let learning_rate = 0.2;
    let mut checks = Checks::new();

    // ---- the data -------------------------------------------------------------------------
    let (n, inputs, hidden) = (256, 2, 16);
    let mut rng = Rng::new(5);
    let mut xs = Vec::with_capacity(n * inputs);
    let mut ys = Vec::with_capacity(n);
    for _ in 0..n {
        let (a, b) = (2.0 * rng.uniform() - 1.0, 2.0 * rng.uniform() - 1.0);
        xs.extend([a, b]);
        ys.push((2.0 * a).sin() + a * b - 0.5 * b * b + 0.05 * rng.normal());
    }
    let mut mlp = Mlp::init(inputs, hidden, &mut rng);
    println!(
        "MLP {inputs}-{hidden}-1 (tanh), {} parameters, {n} points of y = sin(2x₀) + x₀x₁ - 0.5x₁² + noise",
        mlp.flat().len()
    );

    // ---- the gradient, checked once ---------------------------------------------------------
    let (loss0, (g, _, _)) = value_and_gradient!(Mlp::loss(&mlp, &xs, &ys));
    let g = flat_tangent(&g);
    let fd = finite_difference_gradient(|v| mlp.with_flat(v).loss(&xs, &ys), &mlp.flat(), 1e-6);
    let mut direction = Rng::new(3);
    let v: Vec<f64> = (0..g.len()).map(|_| direction.normal()).collect();
    let t = mlp.with_flat(&v); // a tangent of `Mlp`, built like a value
    let tangent =
        MlpTangent { w1: t.w1, b1: t.b1, w2: t.w2, b2: t.b2, inputs: NoTangent, hidden: NoTangent };
    let (_, forward) = value_and_derivative!(
        Mlp::loss(&mlp, &xs, &ys),
        (tangent, vec![0.0; n * inputs], vec![0.0; n])
    );
    let projected: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    let fd_error = max_relative_difference(&g, &fd);
    let forward_error = (forward - projected).abs() / (1.0 + forward.abs());
    println!("loss {loss0:.6}; its gradient (reverse mode) against");
    println!("  finite differences: max rel. diff {fd_error:.1e}");
    println!("  forward mode along a random v: {forward:.8}, <gradient, v> {projected:.8}");
    checks.check(fd_error < 1e-6, "loss gradient disagrees with finite differences");
    checks.check(forward_error < 1e-12, "loss gradient disagrees with forward mode");

    // ---- gradient descent -------------------------------------------------------------------
    println!();
    println!("gradient descent, learning rate {learning_rate}, {steps} steps:");
    let started = std::time::Instant::now();
    // The prepared form of the gradient: one set of buffers reused by every step.
    let mut cache = GradientCache::new();
    let mut final_loss = loss0;
    for step in 0..=steps {
        let (l, (g, _, _)) = value_and_gradient!(Mlp::loss(&mlp, &xs, &ys), cache = &mut cache);
        final_loss = l;
        if step % report_every == 0 {
            println!("  step {step:>5}   loss {l:.6}");
        }
        if step < steps {
            mlp.step(g, learning_rate);
        }
    }
    let factor = loss0 / final_loss;
    println!(
        "loss fell from {loss0:.6} to {final_loss:.6}, a factor of {factor:.1} (required: {required_factor}), in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    checks
        .check(factor >= required_factor, format!("the loss fell by a factor of only {factor:.1}"));

    println!();
    checks.finish("mlp");
}
