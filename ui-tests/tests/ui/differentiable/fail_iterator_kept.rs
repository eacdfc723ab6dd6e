use mooncake_runtime::prelude::*;

// An iterator kept in a variable is supported (tests/tests/idioms.rs); rebinding a name it
// reads before it is used is not.
#[differentiable]
fn f(x: &[f64], k: f64) -> f64 {
    let it = x.iter().map(|v| v * k);
    let k = 2.0;
    it.sum::<f64>() + k
}

fn main() {}
