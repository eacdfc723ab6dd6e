//! Mutual recursion needs `#[differentiable(recursive)]` on one function of the cycle: without
//! it, each reverse rule's pullback type would contain the other's, and so itself.
use mooncake_runtime::prelude::*;

#[differentiable]
fn ping(x: f64, n: u32) -> f64 {
    if n == 0 { x } else { pong(x * 1.1, n - 1) }
}

#[differentiable]
fn pong(x: f64, n: u32) -> f64 {
    if n == 0 { x * x } else { ping(x.sin(), n - 1) }
}

fn main() {
    let _ = value_and_gradient!(ping(0.5, 3));
}
