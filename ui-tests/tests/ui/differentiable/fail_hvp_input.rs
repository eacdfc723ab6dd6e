//! `hvp!` and `hessian!` refuse malformed input with an error at the offending tokens: a `&mut`
//! argument (the Hessian is of the result alone), directions of the wrong number or not written
//! out, an unknown option, something other than a call, trailing tokens.
use mooncake_runtime::prelude::*;

#[differentiable]
fn energy<T: Float>(x: &[T], a: T) -> T {
    let mut s = T::ZERO;
    for v in x.iter() {
        s += a * *v * *v;
    }
    s
}

#[differentiable]
fn scale_in_place<T: Float>(x: &mut [T], a: T) -> T {
    for v in x.iter_mut() {
        *v *= a;
    }
    a
}

fn main() {
    let mut x = vec![1.0, 2.0];
    let v = (vec![1.0, 0.0], 0.0);
    let _ = hvp!(scale_in_place(&mut x, 2.0), (&[1.0, 0.0], 0.0));
    let _ = hvp!(energy(&x, 2.0), (&[1.0, 0.0],));
    let _ = hvp!(energy(&x, 2.0), v);
    let _ = hvp!(energy(&x, 2.0), (&[1.0, 0.0], 0.0), mode = forward);
    let _ = hvp!(energy(&x, 2.0));
    let _ = hessian!(energy(&x, 2.0), mode = forward);
    let _ = hessian!(scale_in_place(&mut x, 2.0));
    let _ = hvp!(x.len(), ());
}
