//! `value_and_jacobian!` of a function whose result's tangent has no flat view: a
//! `#[derive(Tangent)]` struct with an `Option` field, whose tangent (`Option<f64>`) has none, so
//! the derive leaves `FlatTangent` out. The error names the tangent type and says what has one.
use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Pair {
    a: f64,
    b: Option<f64>,
}

#[differentiable]
fn pair(x: f64) -> Pair {
    Pair { a: x, b: Some(2.0 * x) }
}

fn main() {
    let _ = value_and_jacobian!(pair(1.0), mode = reverse);
    let _ = pair(1.0);
}
