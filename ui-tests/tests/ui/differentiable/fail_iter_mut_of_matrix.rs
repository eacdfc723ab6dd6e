use mooncake_runtime::prelude::*;

// A matrix's elements are read by its own rules in a `for` loop (`for v in m.iter()`); iterating
// mutably (`iter_mut`) is refused, with the index loop to write instead. (The type stands for a
// nalgebra matrix here: the macro knows matrices by their types' names.)
#[derive(Clone, Debug, Tangent)]
pub struct MatrixOfMine {
    pub v: Vec<f64>,
}

impl MatrixOfMine {
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, f64> {
        self.v.iter_mut()
    }
}

#[differentiable]
fn f(m: &mut MatrixOfMine, x: f64) -> f64 {
    for v in m.iter_mut() {
        *v *= x;
    }
    x
}

fn main() {}
