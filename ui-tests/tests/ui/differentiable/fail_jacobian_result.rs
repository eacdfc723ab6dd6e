//! `value_and_jacobian!` of a function whose result's tangent has no flat view (a
//! `#[derive(Tangent)]` struct without `flat_tangent!`): the error says how to give it one.
use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Pair {
    a: f64,
    b: f64,
}

#[differentiable]
fn pair(x: f64) -> Pair {
    Pair { a: x, b: 2.0 * x }
}

fn main() {
    let _ = value_and_jacobian!(pair(1.0), mode = reverse);
    let _ = pair(1.0);
}
