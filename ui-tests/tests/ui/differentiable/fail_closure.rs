use mooncake_runtime::prelude::*;

fn apply(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    f(x)
}

// Closures bound by `let` and called, or passed to iterator adaptors, are supported; these
// are not: a closure handed to a function, a `return` inside a closure, a `&` parameter.
#[differentiable]
fn f(x: f64) -> f64 {
    let a = apply(|y: f64| y * y, x);
    let clipped = |y: f64| {
        if y > 1.0 {
            return 1.0;
        }
        y
    };
    let by_ref = |&y: &f64| y * 2.0;
    a + clipped(x) + by_ref(&x)
}

fn main() {}
