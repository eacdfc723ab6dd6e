use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Model {
    w: f64,
}

impl Model {
    fn apply(&self, x: f64) -> f64 {
        self.w * x
    }
}

#[differentiable]
fn f(m: &Model, x: f64) -> f64 {
    m.apply(x)
}

fn main() {}
