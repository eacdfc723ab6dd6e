use mooncake_runtime::prelude::*;

// Reverse mode reads buffers of buffers (`m[i][j]`, rows lent to calls); a write into one is
// refused with a message that points at it. Forward mode covers it.
#[differentiable]
fn set_diagonal(m: &mut Vec<Vec<f64>>, x: f64) -> f64 {
    for i in 0..m.len() {
        m[i][i] = x * x;
    }
    m[0][0] + m[0][1]
}

fn main() {
    let mut m = vec![vec![1.0, 2.0], vec![3.0, 4.0]];
    let _ = value_and_derivative!(set_diagonal(&mut m, 1.5), (vec![vec![0.0; 2]; 2], 1.0));
    let _ = value_and_gradient!(set_diagonal(&mut m, 1.5));
}
