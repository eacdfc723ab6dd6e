use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64]) -> Option<f64> {
    let first = x.first()?;
    Some(*first)
}

fn main() {}
