use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    println!("x = {x}");
    x * 2.0
}

fn main() {}
