use mooncake_runtime::prelude::*;

// Printing, `dbg!` and `format!` are supported; a macro that makes a value other than `vec!`
// and `format!` is not.
#[differentiable]
fn f(x: f64) -> f64 {
    println!("x = {x}");
    let label = concat!("x", " = ");
    let _ = label;
    x * 2.0
}

fn main() {}
