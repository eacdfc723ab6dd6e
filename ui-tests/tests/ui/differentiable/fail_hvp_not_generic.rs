//! `hvp!` and `hessian!` run a function's derived reverse rule on dual numbers (`T = Fwd<f64>`),
//! so they need that rule generic over the float: a function generic over `T: Float`, or a
//! function over `f64` whose rule `#[differentiable]` derives from a generic twin (a leaf of
//! numbers and buffers). A function over `f64` that calls another function has no twin and is
//! refused with a message saying so, at the argument whose parameter is not generic and at the
//! call (the result). A generic function with one `f64` parameter is refused at that argument
//! only.
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

#[differentiable]
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
    // Fine: a leaf over `f64` has a generic twin.
    let _ = hvp!(leaf(&x, 2.0), (&[1.0, 0.0], 0.0));
    let _ = hessian!(leaf(&x, Const(2.0)));
}
