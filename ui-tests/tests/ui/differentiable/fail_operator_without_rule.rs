use mooncake_runtime::prelude::*;
use std::ops::Add;

// Arithmetic on values of a user type is their operator traits' methods: on a variable of the
// type, and on a field whose type the function's text does not show (`p.a + p.b`), which
// each mode dispatches by type. Here `Add` has no rule (its `impl` is not `#[differentiable]`):
// both modes say so at the operator.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

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
