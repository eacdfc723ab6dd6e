use mooncake_runtime::prelude::*;
use std::ops::{Index, IndexMut};

// An element of a matrix (any value indexed by a pair, here a grid of the user's) is read and
// written by the matrix's own rules: a `&mut` borrow of one, which could write it behind the
// rules' back, is refused.
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

fn bump(x: &mut f64, by: f64) {
    *x += by;
}

#[differentiable]
fn f(g: &mut Grid, x: f64) -> f64 {
    bump(&mut g[(0, 1)], x);
    g[(0, 1)] * x
}

fn main() {}
