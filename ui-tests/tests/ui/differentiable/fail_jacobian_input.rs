//! `value_and_jacobian!` refuses malformed input with an error at the offending tokens: a
//! `&mut` argument (a Jacobian is of the result alone), an unknown mode or option, something
//! other than a call, trailing tokens.
use mooncake_runtime::prelude::*;

#[differentiable]
fn scaled(x: &[f64], a: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for v in x.iter() {
        out.push(*v * a);
    }
    out
}

#[differentiable]
fn scale_in_place(x: &mut [f64], a: f64) -> f64 {
    for v in x.iter_mut() {
        *v *= a;
    }
    a
}

fn main() {
    let mut x = vec![1.0, 2.0];
    let _ = value_and_jacobian!(scale_in_place(&mut x, 2.0));
    let _ = value_and_jacobian!(scaled(&x, 2.0), mode = sideways);
    let _ = value_and_jacobian!(scaled(&x, 2.0), cache = &mut x);
    let _ = value_and_jacobian!(scaled(&x, 2.0), mode = forward, 3);
    let _ = value_and_jacobian!(x.len());
    let _ = scaled(&x, 1.0);
}
