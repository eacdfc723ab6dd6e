use mooncake_runtime::prelude::*;
use std::ops::{Index, IndexMut};

// An element write into a matrix held in a field (`n.w[(i, j)] = x`) is refused: the write
// method of a matrix takes a variable or argument holding it.
#[derive(Clone, Debug, Tangent)]
pub struct Grid(pub Vec<f64>, pub usize);

impl Index<(usize, usize)> for Grid {
    type Output = f64;
    fn index(&self, (i, j): (usize, usize)) -> &f64 {
        &self.0[i * self.1 + j]
    }
}

impl IndexMut<(usize, usize)> for Grid {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut f64 {
        &mut self.0[i * self.1 + j]
    }
}

#[derive(Clone, Debug, Tangent)]
pub struct Net {
    pub w: Grid,
}

#[differentiable]
fn f(n: &mut Net, x: f64) -> f64 {
    n.w[(0, 0)] = x;
    x * x
}

fn main() {}
