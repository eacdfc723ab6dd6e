use mooncake_runtime::prelude::*;

// Every unsupported construct in a body is reported, not just the first.
#[differentiable]
fn f(x: f64) -> f64 {
    let a = unsafe { x.to_int_unchecked::<i64>() };
    let _b = [|y: f64| y];
    let _s = concat!("a", "b");
    x
}

fn main() {}
