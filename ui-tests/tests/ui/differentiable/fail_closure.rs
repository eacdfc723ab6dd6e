use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let _square = |y: f64| y * y;
    x
}

fn main() {}
