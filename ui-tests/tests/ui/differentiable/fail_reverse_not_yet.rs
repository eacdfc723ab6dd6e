use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Params {
    scale: f64,
}

// Forward mode covers structs; reverse mode does not yet, and says so.
#[differentiable]
fn scaled(p: &Params, x: f64) -> f64 {
    p.scale * x
}

fn main() {
    let p = Params { scale: 2.0 };
    let _ = value_and_gradient!(scaled(&p, 3.0));
}
