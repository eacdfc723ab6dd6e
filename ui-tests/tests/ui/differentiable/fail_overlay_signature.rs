use mooncake_runtime::prelude::*;

fn scale(x: f64) -> f64 {
    2.0 * x
}

// The overlay's signature must be the function's.
#[mooncake_overlay]
fn scale(x: f32) -> f32 {
    3.0 * x
}

fn main() {}
