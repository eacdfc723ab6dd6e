// `mem::swap` of two buffers in fields of a struct behind `&mut` (a simulation's double
// buffer): refused with a message that says to copy the new values over.
use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
pub struct Heat {
    pub u: Vec<f64>,
    pub next: Vec<f64>,
}

#[differentiable]
fn step(h: &mut Heat, k: f64) {
    for i in 1..h.u.len() - 1 {
        h.next[i] = h.u[i] + k * (h.u[i - 1] - 2.0 * h.u[i] + h.u[i + 1]);
    }
    std::mem::swap(&mut h.u, &mut h.next);
}

fn main() {}
