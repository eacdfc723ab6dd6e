use mooncake_runtime::prelude::*;

// `?` is supported on `Option` and `Result` values (tests/tests/enum_values.rs); as in Rust, it
// needs a function whose result it can return: here `?` on a `Result` in a function returning
// an `Option`.
#[differentiable]
fn g(x: f64) -> Result<f64, String> {
    if x > 0.0 { Ok(x.ln()) } else { Err("not positive".to_string()) }
}

#[differentiable]
fn f(x: f64) -> Option<f64> {
    let y = g(x)?;
    Some(2.0 * y)
}

fn main() {}
