use mooncake_runtime::prelude::*;

#[differentiable]
fn first(x: &[f64]) -> f64 {
    x[0]
}

// Forward mode covers a borrow kept in a local; reverse mode does not yet, and says so.
#[differentiable]
fn f(a: f64) -> f64 {
    let v = vec![a, 2.0];
    let r = &v;
    first(r)
}

fn main() {
    let _ = value_and_gradient!(f(1.5));
}
