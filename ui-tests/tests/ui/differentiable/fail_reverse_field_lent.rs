use mooncake_runtime::prelude::*;

#[derive(Clone, Debug, Tangent)]
struct S {
    w: Vec<f64>,
    a: f64,
}

#[differentiable]
fn total(v: &[f64]) -> f64 {
    v[0] + v[1]
}

// Forward mode covers a field of a `&mut` argument lent shared to a call; reverse mode does
// not yet, and points at the statement.
#[differentiable]
fn f(s: &mut S, x: f64) -> f64 {
    s.a = s.a * x;
    total(&s.w) * s.a
}

fn main() {
    let mut s = S { w: vec![0.5, 1.5], a: 0.7 };
    let _ = value_and_gradient!(f(&mut s, 0.3));
}
