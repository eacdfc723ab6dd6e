use mooncake_runtime::prelude::*;

// A buffer of borrowed rows as an argument: forward mode covers it; reverse mode does not yet,
// and says so at the call, pointing at the argument's type.
#[differentiable]
fn row_sums_sq(rows: &[&[f64]]) -> f64 {
    let mut s = 0.0;
    for r in rows.iter() {
        let m: f64 = r.iter().sum();
        s += m * m;
    }
    s
}

fn main() {
    let (a, b) = (vec![1.0, 2.0], vec![0.5]);
    let rows: Vec<&[f64]> = vec![&a, &b];
    let _ = value_and_gradient!(row_sums_sq(&rows));
}
