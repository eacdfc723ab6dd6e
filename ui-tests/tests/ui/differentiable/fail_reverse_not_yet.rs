use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Params {
    scale: f64,
}

// Forward mode covers writes to fields; reverse mode does not yet, and says so.
#[differentiable]
fn rescale(p: &mut Params, x: f64) -> f64 {
    p.scale *= 2.0;
    p.scale * x
}

fn main() {
    let mut p = Params { scale: 2.0 };
    let _ = value_and_gradient!(rescale(&mut p, 3.0));
}
