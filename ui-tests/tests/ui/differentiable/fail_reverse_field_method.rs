use mooncake_runtime::prelude::*;

#[derive(Clone, Debug, Tangent)]
struct S {
    w: Vec<f64>,
    a: f64,
}

// Forward mode covers a buffer method that changes a buffer field of a struct held by value;
// reverse mode does not yet, and points at the call.
#[differentiable]
fn f(a: f64) -> f64 {
    let mut s = S { w: vec![a, 2.0], a };
    s.w.push(3.0 * a);
    s.w[2] * s.a
}

fn main() {
    let _ = value_and_gradient!(f(1.5));
}
