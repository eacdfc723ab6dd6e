use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Pair {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
fn twice(x: &f64) -> f64 {
    2.0 * x
}

#[differentiable]
fn first(x: &[f64]) -> f64 {
    x[0]
}

// Reverse mode lends the buffer field of a struct held by value to a call (`first(&p.w)`), but
// not a scalar field (`twice(&p.b)`): it says so, naming the field's type.
#[differentiable]
fn f(a: f64) -> f64 {
    let p = Pair { w: vec![a, 2.0], b: a };
    first(&p.w) * twice(&p.b)
}

fn main() {
    let _ = value_and_gradient!(f(1.5));
}
