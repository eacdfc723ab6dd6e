//! `#[differentiable(second_order)]` derives the reverse rule from a copy of the function over a
//! float type parameter. What the copy cannot be written for with certainty is refused at the
//! tokens that stand in the way, with what to do instead.
use mooncake_runtime::prelude::*;

const SCALE: f64 = 2.0;

// A constant from outside keeps its type `f64`.
#[differentiable(second_order)]
fn outside_constant(x: &[f64]) -> f64 {
    x[0] * SCALE
}

// A cast of a float.
#[differentiable(second_order)]
fn float_cast(x: &[f64]) -> f64 {
    let k = x[0] as usize;
    x[k]
}

// `&mut` arguments.
#[differentiable(second_order)]
fn mutates(x: &mut [f64]) -> f64 {
    x[0] *= 2.0;
    x[0]
}

// `f32` in the body.
#[differentiable(second_order)]
fn single(x: f64) -> f64 {
    let y = x as f32;
    x * 2.0 + f64::from(y)
}

// With `forward_only`, there is no reverse rule.
#[differentiable(forward_only, second_order)]
fn forward(x: f64) -> f64 {
    x * x
}

fn main() {}
