use mooncake_runtime::prelude::*;

// `if let` and `while let` are supported (tests/tests/enum_values.rs); a `let` chain is not,
// nor `while let` over an iterator's `next()`.
#[differentiable]
fn f(x: f64, o: Option<f64>) -> f64 {
    if let Some(v) = o && v > 0.0 { x * v } else { 2.0 * x }
}

#[differentiable]
fn g(x: &[f64]) -> f64 {
    let mut it = x.iter();
    let mut s = 0.0;
    while let Some(v) = it.next() {
        s += v;
    }
    s
}

fn main() {}
