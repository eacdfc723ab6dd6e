// An assertion runs on primal values, outside the derivative: one that changes a variable of
// the function is refused at the variable it changes.
use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &mut [f64], a: f64) -> f64 {
    debug_assert!({
        x[0] = 2.0 * a;
        a.is_finite()
    });
    x[0] * a
}

fn main() {}
