use mooncake_runtime::prelude::*;

#[differentiable(dumpir)]
fn f(x: f64) -> f64 {
    x * 2.0
}

fn main() {}
