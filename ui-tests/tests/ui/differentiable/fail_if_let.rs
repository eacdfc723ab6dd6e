use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64, n: i32) -> f64 {
    if let 0 = n { x } else { 2.0 * x }
}

fn main() {}
