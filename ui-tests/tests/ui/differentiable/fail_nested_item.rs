use mooncake_runtime::prelude::*;

// `fn`, `const` and `use` items at the top level of the body are supported; items in an inner
// block, and other kinds of item, are not.
#[differentiable]
fn f(x: f64) -> f64 {
    struct Scale(f64);
    let _ = Scale(2.0);
    if x > 0.0 {
        const K: f64 = 2.0;
        return x * K;
    }
    x
}

fn main() {}
