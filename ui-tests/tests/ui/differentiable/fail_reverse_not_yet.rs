use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Pair {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
fn first(x: &[f64]) -> f64 {
    x[0]
}

// Forward mode covers a field of a struct held by value lent to a call; reverse mode does not
// yet, and says so.
#[differentiable]
fn f(a: f64) -> f64 {
    let p = Pair { w: vec![a, 2.0], b: a };
    first(&p.w) * p.b
}

fn main() {
    let _ = value_and_gradient!(f(1.5));
}
