use mooncake_runtime::prelude::*;
use std::ops::{Add, Mul};

// Generic numeric code written against the operator traits: the derived rules know a number by
// `Float`, and say so at the bound.
#[differentiable]
fn sq_plus<T: Copy + Mul<Output = T> + Add<Output = T>>(a: T, b: T) -> T {
    a * a + b
}

fn main() {
    let _ = sq_plus(1.0, 2.0);
}
