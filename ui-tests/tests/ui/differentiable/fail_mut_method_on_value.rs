//! Reverse mode lends a `&mut self` method only a receiver behind a `&mut` argument so far; on
//! a value the function holds, the error names the reason at the method call.
use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Point {
    fn scale(&mut self, a: f64) {
        self.x *= a;
        self.y *= a;
    }
}

#[differentiable]
fn f(a: f64) -> f64 {
    let mut p = Point { x: a, y: 1.0 };
    p.scale(2.0);
    p.x * p.y
}

fn main() {
    let _ = value_and_derivative!(f(1.0), (1.0,));
}
