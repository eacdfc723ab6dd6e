use mooncake_runtime::prelude::*;

fn count_positive(x: &[f64]) -> usize {
    x.iter().filter(|v| **v > 0.0).count()
}

// The declared output type is not the function's.
zero_adjoint! {
    fn count_positive(x: &[f64]) -> f64;
}

fn main() {
    let _ = count_positive;
}
