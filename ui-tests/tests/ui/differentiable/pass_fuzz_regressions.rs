//! Inputs a user may write whose derived rules did not parse until the fuzz test found them
//! (issue 12): a where clause in rustfmt's layout (ending in a comma), an empty where clause,
//! and a stray empty statement.
#![allow(redundant_semicolons)]

use mooncake_runtime::prelude::*;

#[differentiable]
fn scale<T>(x: T, k: T) -> T
where
    T: Float,
{
    x * k
}

#[differentiable]
fn square(x: f64) -> f64
where
{
    x * x
}

#[differentiable]
fn stray(x: f64) -> f64 {
    let y = x * 3.0;;
    y
}

fn main() {
    assert_eq!(value_and_gradient!(scale(2.0_f64, 3.0)), (6.0, (3.0, 2.0)));
    assert_eq!(value_and_gradient!(square(3.0)), (9.0, (6.0,)));
    assert_eq!(value_and_derivative!(stray(1.0), (1.0,)), (3.0, 3.0));
}
