use mooncake_runtime::prelude::*;

// `Const(..)` marks an argument; written around the whole call, it is refused with a message
// saying where it goes.
#[differentiable]
fn scaled(w: f64, x: f64) -> f64 {
    w * x
}

fn main() {
    let _ = value_and_gradient!(Const(scaled(2.0, 3.0)));
}
