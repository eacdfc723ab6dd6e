use mooncake_runtime::prelude::*;

// A window or chunk is supported indexed, measured, iterated and passed on; a macro naming it
// (which would see the view itself) is refused.
#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        println!("{:?}", w);
        s += w.iter().sum::<f64>();
    }
    s
}

fn main() {}
