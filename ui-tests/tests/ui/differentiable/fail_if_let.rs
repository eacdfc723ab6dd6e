use mooncake_runtime::prelude::*;

// `if let` is supported (tests/tests/enum_values.rs); a `let` chain is not.
#[differentiable]
fn f(x: f64, o: Option<f64>) -> f64 {
    if let Some(v) = o && v > 0.0 { x * v } else { 2.0 * x }
}

fn main() {}
