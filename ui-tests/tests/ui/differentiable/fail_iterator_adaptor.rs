use mooncake_runtime::prelude::*;

#[differentiable]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().chain(y.iter()) {
        s += v;
    }
    let m = x.iter().copied().max_by(|a, b| a.total_cmp(b)).unwrap();
    s + m + x.iter().scan(0.0, |acc, v| Some(*acc + v)).sum::<f64>()
}

fn main() {}
