use mooncake_runtime::prelude::*;

#[differentiable]
struct NotAFunction {
    x: f64,
}

fn main() {}
