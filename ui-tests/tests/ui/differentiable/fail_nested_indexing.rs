use mooncake_runtime::prelude::*;

// Reverse mode reads and writes elements of buffers of buffers (`m[i][j]`) and fields of
// structs in buffers (`ps[k].x`); a buffer method that grows a row (`m[i].push(v)`) is refused
// with a message that points at it. Forward mode covers it.
#[differentiable]
fn grow_rows(m: &mut Vec<Vec<f64>>, x: f64) -> f64 {
    for i in 0..m.len() {
        m[i].push(x * x);
    }
    m[0][m[0].len() - 1]
}

fn main() {
    let mut m = vec![vec![1.0, 2.0], vec![3.0]];
    let _ = value_and_derivative!(grow_rows(&mut m, 1.5), (vec![vec![0.0; 2], vec![0.0]], 1.0));
    let _ = value_and_gradient!(grow_rows(&mut m, 1.5));
}
