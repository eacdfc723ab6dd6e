use mooncake_runtime::prelude::*;

// Printing and `dbg!` are supported; a macro that makes a value other than `vec!` is not.
#[differentiable]
fn f(x: f64) -> f64 {
    println!("x = {x}");
    let label = format!("x = {x}");
    let _ = label;
    x * 2.0
}

fn main() {}
