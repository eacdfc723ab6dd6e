// A standard container with no tangent type (a queue) held in differentiable code: refused at
// the type, with the containers that work and what to write instead.
use mooncake_runtime::prelude::*;
use std::collections::VecDeque;

#[differentiable]
fn windowed(x: &[f64]) -> f64 {
    let mut buf: VecDeque<f64> = VecDeque::new();
    let mut s = 0.0;
    for v in x.iter() {
        buf.push_back(*v);
        s += v;
    }
    s
}

fn main() {
    let _ = windowed(&[1.0]);
}
