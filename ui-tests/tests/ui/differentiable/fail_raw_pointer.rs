use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let _p = &raw const x;
    x * 2.0
}

fn main() {}
