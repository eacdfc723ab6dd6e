use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().skip(1) {
        s += v;
    }
    let m = x.iter().copied().max_by(|a, b| a.total_cmp(b)).unwrap();
    s + m + x.iter().skip(1).map(|v| v * v).sum::<f64>()
}

fn main() {}
