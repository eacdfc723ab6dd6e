//! `recursive`: a function that calls itself to depth 100.

use mooncake_runtime::prelude::*;

/// `r(0) = x₀`, `r(k) = sin(xₖ r(k − 1)) + xₖ`: depth `depth` of self-recursion over
/// `x[0..=depth]`.
#[differentiable]
pub fn recursive(x: &[f64], depth: usize) -> f64 {
    if depth == 0 {
        return x[0];
    }
    let inner = recursive(x, depth - 1);
    (x[depth] * inner).sin() + x[depth]
}

/// The gradient of [`recursive`] by hand: the intermediate values `r(k)` are kept in `r`
/// (at least `depth + 1` entries), then the chain is swept backwards.
pub fn recursive_gradient(x: &[f64], depth: usize, r: &mut [f64], gx: &mut [f64]) -> f64 {
    gx.fill(0.0);
    r[0] = x[0];
    for k in 1..=depth {
        r[k] = (x[k] * r[k - 1]).sin() + x[k];
    }
    let mut bar = 1.0;
    for k in (1..=depth).rev() {
        let c = (x[k] * r[k - 1]).cos();
        gx[k] += bar * (c * r[k - 1] + 1.0);
        bar *= c * x[k];
    }
    gx[0] += bar;
    r[depth]
}
