//! `value_and_gradient!` needs a scalar result; for any other, the error suggests
//! `value_and_pullback!`.
use mooncake_runtime::prelude::*;

#[differentiable]
fn scaled(x: &[f64], a: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for v in x.iter() {
        out.push(*v * a);
    }
    out
}

fn main() {
    let x = vec![1.0, 2.0];
    let _ = value_and_gradient!(scaled(&x, 2.0));
    let _ = scaled(&x, 1.0);
}
