// `value_and_gradient_forward!` refuses `&mut` arguments, options other than `chunk = N`, and a
// `chunk` read from a variable (the number of directions is fixed at compile time).
use mooncake_runtime::prelude::*;

#[differentiable]
fn scale(x: &mut [f64], s: f64) -> f64 {
    x[0] *= s;
    x[0]
}

#[differentiable]
fn norm2(x: &[f64]) -> f64 {
    x[0] * x[0] + x[1] * x[1]
}

fn main() {
    let mut x = vec![1.0, 2.0];
    let _ = value_and_gradient_forward!(scale(&mut x, 2.0));
    let _ = value_and_gradient_forward!(norm2(&x), mode = forward);
    let k = 2;
    let _ = value_and_gradient_forward!(norm2(&x), chunk = k);
    let _ = value_and_gradient_forward!(norm2(&x), chunk = 2 * x.len());
    const K: usize = 2;
    let _ = value_and_gradient_forward!(norm2(&x), chunk = K + 1);
}
