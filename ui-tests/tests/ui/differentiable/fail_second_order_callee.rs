use mooncake_runtime::prelude::*;

// A `second_order` function may call functions whose reverse rules are generic over the float
// (marked `second_order` too, or generic over `T: Float`); a function over `f64` without
// `second_order` is refused at the call, saying what to do.
#[differentiable]
fn helper(v: f64) -> f64 {
    v * v
}

#[differentiable(second_order)]
fn square(v: f64) -> f64 {
    v * v
}

#[differentiable(second_order)]
fn calls(x: &[f64]) -> f64 {
    square(x[1]) + helper(x[0])
}

fn main() {}
