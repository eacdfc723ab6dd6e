use mooncake_runtime::prelude::*;

// Forward mode covers tuples by value; reverse mode does not yet, and says so.
#[differentiable]
fn product(t: (f64, f64)) -> f64 {
    t.0 * t.1
}

fn main() {
    let _ = value_and_gradient!(product((2.0, 3.0)));
}
