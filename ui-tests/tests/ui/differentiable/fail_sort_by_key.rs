use mooncake_runtime::prelude::*;

// `sort_by` sorts by the elements themselves or by one key computed the same way from each
// (`tests/tests/everyday.rs::sorting_by_keys`); another comparator is refused, saying what to
// write instead.
#[differentiable]
fn f(x: &[f64], c: f64) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| (a - c).abs().partial_cmp(&(b * c)).unwrap());
    v[0]
}

fn main() {}
