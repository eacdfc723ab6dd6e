use mooncake_runtime::prelude::*;

// A window or chunk is supported indexed (`w[j]`) and measured (`w.len()`), not used whole.
#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        s += w.iter().sum::<f64>();
    }
    s
}

fn main() {}
