use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64]) -> f64 {
    unsafe { *x.get_unchecked(0) }
}

fn main() {}
