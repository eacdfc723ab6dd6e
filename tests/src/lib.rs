//! Shared helpers of the integration tests, and `#[differentiable]` functions that the tests call
//! from another crate (each file under `tests/` is its own crate).

use mooncake_runtime::prelude::*;

/// `ln(1 + e^x)`, computed stably: a function other crates differentiate through.
#[differentiable]
pub fn softplus(x: f64) -> f64 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

/// The mean of `x`.
#[differentiable]
pub fn mean(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    s / (x.len() as f64)
}
