// A side of a `zip` in a `for` loop's source that is reversed has no plan: refused at the
// `zip`, with the index loop to write instead.
use mooncake_runtime::prelude::*;

#[differentiable]
fn flipped_dot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for (a, b) in x.iter().zip(y.iter().rev()) {
        s += a * b;
    }
    s
}

fn main() {
    let _ = flipped_dot(&[1.0], &[2.0]);
}
