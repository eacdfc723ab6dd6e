use mooncake_runtime::prelude::*;

// `c - d` of two values the function holds whose gradients live in shadows (a buffer inside a
// struct here; a nalgebra or ndarray matrix alike, where the text does not show it is one) is
// not supported in reverse mode yet: the reverse sweep writes sums as numbers' sums. The error
// names the case.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Field {
    v: Vec<f64>,
}

impl std::ops::Sub for Field {
    type Output = Field;
    fn sub(self, other: Field) -> Field {
        Field { v: self.v.iter().zip(&other.v).map(|(a, b)| a - b).collect() }
    }
}

#[differentiable]
fn make(x: &[f64]) -> Field {
    Field { v: x.to_vec() }
}

#[differentiable]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let c = make(x);
    let d = make(y);
    let e = c - d;
    e.v[0]
}

fn main() {}
