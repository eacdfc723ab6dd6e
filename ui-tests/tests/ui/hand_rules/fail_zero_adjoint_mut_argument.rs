use mooncake_runtime::prelude::*;

fn sort_and_count(x: &mut [f64]) -> usize {
    x.sort_by(f64::total_cmp);
    x.len()
}

zero_adjoint! {
    fn sort_and_count(x: &mut [f64]) -> usize;
}

fn main() {
    let _ = sort_and_count;
}
