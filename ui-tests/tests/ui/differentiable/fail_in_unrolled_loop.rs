use mooncake_runtime::prelude::*;

// A `for` loop over a few literal values is unrolled for the derived rules (one copy of the
// body per value); an error in its body is reported once, at the user's tokens, not once per
// copy.
#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut p = [0.0; 3];
    for k in 0..3 {
        let label = concat!("axis", " ");
        let _ = label;
        p[k] = x[k] * x[k];
    }
    p[0] + p[1] + p[2]
}

fn main() {}
