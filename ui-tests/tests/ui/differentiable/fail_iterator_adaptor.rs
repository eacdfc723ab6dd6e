use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().skip(1) {
        s += v;
    }
    s + x.iter().map(|v| v * v).sum::<f64>()
}

fn main() {}
