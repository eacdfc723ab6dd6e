use mooncake_runtime::prelude::*;

// A tuple holding borrowed buffers as an argument: forward mode covers it; reverse mode does not
// yet, and says so at the call, pointing at the argument's type.
#[differentiable]
fn dot_pair(p: (&[f64], &[f64])) -> f64 {
    let (a, b) = p;
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

fn main() {
    let (a, b) = (vec![0.5, 1.0], vec![2.0, -1.0]);
    let _ = value_and_gradient!(dot_pair((&a[..], &b[..])));
}
