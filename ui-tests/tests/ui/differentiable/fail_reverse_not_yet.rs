use mooncake_runtime::prelude::*;

// Forward mode covers buffers built in the body; reverse mode does not yet, and says so.
#[differentiable]
fn normalised_first(x: &[f64]) -> f64 {
    let v = x.to_vec();
    v[0] / v.len() as f64
}

fn main() {
    let x = vec![1.0, 2.0];
    let _ = value_and_gradient!(normalised_first(&x));
}
