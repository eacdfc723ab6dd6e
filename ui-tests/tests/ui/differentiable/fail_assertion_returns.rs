// An assertion runs on primal values, outside the derivative: one that returns from the
// function is refused at the `return`.
use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    debug_assert!({
        if x > 10.0 {
            return 0.0;
        }
        x.is_finite()
    });
    x * x
}

fn main() {}
