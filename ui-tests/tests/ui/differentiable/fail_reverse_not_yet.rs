use mooncake_runtime::prelude::*;

// Forward mode covers `&mut` arguments; reverse mode does not yet, and says so.
#[differentiable]
fn scale(x: &mut [f64], a: f64) {
    for i in 0..x.len() {
        x[i] *= a;
    }
}

fn main() {
    let mut x = vec![1.0, 2.0];
    let _ = value_and_gradient!(scale(&mut x, 2.0));
}
