use mooncake_runtime::prelude::*;

#[differentiable]
fn total(x: &[f64]) -> f64 {
    x[0] + x[1]
}

// A `&mut` argument passed on to a `&` parameter: forward mode takes it; reverse mode asks for
// the reborrow to be written out, `total(&*x)`.
#[differentiable]
fn scale_then_total(x: &mut [f64], a: f64) -> f64 {
    x[0] *= a;
    total(x)
}

fn main() {
    let mut x = vec![1.0, 2.0];
    let _ = value_and_gradient!(scale_then_total(&mut x, 2.0));
}
