use mooncake_runtime::prelude::*;

// Forward mode covers arrays returned by value; reverse mode does not yet, and says so.
#[differentiable]
fn pair(a: f64) -> [f64; 2] {
    [a, 2.0 * a]
}

fn main() {
    let _ = value_and_pullback!(pair(1.5), [1.0, 1.0]);
}
