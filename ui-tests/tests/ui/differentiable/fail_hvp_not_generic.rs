//! `hvp!` and `hessian!` run a function's derived reverse rule on dual numbers (`T = Fwd<f64>`),
//! so they need that rule generic over the float: a function generic over `T: Float`, or a
//! function over `f64` marked `#[differentiable(second_order)]` (its rule derived from a generic
//! copy). A function over `f64` without the option is refused with a message saying so, at the
//! argument whose parameter is not generic and at the call (the result). A generic function with
//! one `f64` parameter is refused at that argument only.
use mooncake_runtime::prelude::*;

#[differentiable]
fn square(v: f64) -> f64 {
    v * v
}

#[differentiable]
fn calls_another(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += a * square(*v);
    }
    s
}

#[differentiable]
fn mixed<T: Float>(x: &[T], a: f64) -> T {
    let mut s = T::ZERO;
    for v in x.iter() {
        s += T::from_f64(a) * *v * *v;
    }
    s
}

#[differentiable(second_order)]
fn leaf(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += a * *v * *v;
    }
    s
}

fn main() {
    let x = vec![1.0, 2.0];
    let _ = hvp!(calls_another(&x, 2.0), (&[1.0, 0.0], 0.0));
    let _ = hessian!(calls_another(&x, Const(2.0)));
    let _ = hvp!(mixed(&x, 2.0), (&[1.0, 0.0], 0.0));
    // Fine: the non-generic argument is a constant.
    let _ = hvp!(mixed(&x, Const(2.0)), (&[1.0, 0.0], NoTangent));
    // Fine: a function over `f64` with `second_order`.
    let _ = hvp!(leaf(&x, 2.0), (&[1.0, 0.0], 0.0));
    let _ = hessian!(leaf(&x, Const(2.0)));
}
