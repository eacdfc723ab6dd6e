use mooncake_runtime::prelude::*;
use std::ops::Add;

// Arithmetic on values of a user type is their operator traits' methods, which the macro uses
// where the function's text shows an operand to be such a value. A field on its own does not
// (the macro does not see the struct's declaration): both modes say so at the operator, and
// what to write instead (`let a: V2 = p.a;`).
#[derive(Tangent, Clone, Copy, Debug)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Add for V2 {
    type Output = V2;
    fn add(self, o: V2) -> V2 {
        V2 { x: self.x + o.x, y: self.y + o.y }
    }
}

#[derive(Tangent, Clone, Copy, Debug)]
pub struct Pair {
    pub a: V2,
    pub b: V2,
}

#[differentiable]
fn sum_of_fields(p: &Pair) -> f64 {
    let s = p.a + p.b;
    s.x
}

fn main() {}
