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

// Forward mode covers a buffer field of a struct held by value read by a buffer method;
// reverse mode does not yet, and says so.
#[differentiable]
fn f(a: f64) -> f64 {
    let p = Pair { w: vec![a, 2.0], b: a };
    let mut v = vec![a];
    v.extend_from_slice(&p.w);
    first(&v) * p.b
}

fn main() {
    let _ = value_and_gradient!(f(1.5));
}
