use mooncake_runtime::prelude::*;

// Forward mode covers an array of arrays; reverse mode refuses `m[i][j]` with a message that
// points at it and says what to write instead.
#[differentiable]
fn trace(m: [[f64; 2]; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 {
        s += m[i][i];
    }
    s
}

fn main() {
    let m = [[1.0, 2.0], [3.0, 4.0]];
    let _ = value_and_derivative!(trace(m), ([[1.0, 0.0], [0.0, 1.0]],));
    let _ = value_and_gradient!(trace(m));
}
