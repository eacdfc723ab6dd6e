use mooncake_runtime::prelude::*;

// Forward mode covers arrays by value; reverse mode does not yet, and says so.
#[differentiable]
fn product(x: [f64; 2]) -> f64 {
    x[0] * x[1]
}

fn main() {
    let _ = value_and_gradient!(product([2.0, 3.0]));
}
