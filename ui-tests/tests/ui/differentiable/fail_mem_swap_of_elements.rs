use mooncake_runtime::prelude::*;

// `std::mem::swap` of two variables is differentiated (`tests/tests/user_programs.rs`); of two
// elements of a buffer it is refused with what to write instead.
#[differentiable]
fn f(x: &mut [f64]) -> f64 {
    let (a, b) = x.split_at_mut(1);
    std::mem::swap(&mut a[0], &mut b[0]);
    x[0] * 2.0
}

fn main() {}
