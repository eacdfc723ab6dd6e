// `value_and_gradient!` of a function written over `f64` inside a #[differentiable] function:
// its gradient's derivative needs the function generic over `T: Float`.
use mooncake_runtime::prelude::*;

#[differentiable]
fn energy(x: &[f64]) -> f64 {
    x[0] * x[0] * x[0]
}

#[differentiable]
fn stepped(x: &[f64]) -> f64 {
    let (e, (g,)) = value_and_gradient!(energy(x));
    e - 0.1 * g[0]
}

fn main() {}
