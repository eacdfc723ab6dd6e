use mooncake_runtime::prelude::*;

// `matches!(e, pat)` is supported (tests/tests/idioms.rs); a guard in it is not.
#[differentiable]
fn f(x: f64, o: Option<f64>) -> f64 {
    let a = matches!(o, Some(v) if v > 0.0);
    let b = matches!(o, Some(_));
    if a && b { x } else { 2.0 * x }
}

fn main() {}
