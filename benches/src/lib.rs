//! Benchmark problems of Mooncake for Rust (issue 6), named after Mooncake.jl's suite where
//! it has them. Each problem is a `#[differentiable]` function with a gradient written by hand
//! beside it (the adjoint of the same algorithm, allocation-free: the practical limit), so that
//! `benches/gradients.rs` can report the derived rules as ratios to the primal, to the
//! hand-written gradient and to peer crates measured in the same run.
//!
//! The peers (`easy-ml`, `reverse`, `num-dual`) are dev-dependencies: their versions of the
//! problems are in `src/peers.rs`, compiled into the bench and into this crate's tests only.
//! The tests below check every hand-written gradient against finite differences and against
//! the derived gradient, and every peer's gradient against the hand-written one.

pub mod problems;

// Every problem with its derived rules (`NAME_frule`, `NAME_rrule`), at the crate root.
pub use problems::{
    gmm::*, kron::*, linalg::*, mlp::*, ode::*, recursive::*, second_order::*, sums::*,
};

/// Deterministic inputs of length `n` in `[-1, 1)`.
pub fn inputs(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The largest entry-wise difference of `a` and `b` relative to the largest entry of `b`
/// (the norm-wise relative error in the max norm; `0` when both are zero). Infinite when the
/// lengths differ or an entry is not finite.
pub fn relative_difference(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let diff = a.iter().zip(b).fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
    let scale = b.iter().fold(0.0_f64, |m, y| m.max(y.abs()));
    if diff == 0.0 { 0.0 } else { diff / scale }
}

/// Panics unless `value` and `gradient` agree with the reference ones to `rtol` relative
/// (see [`relative_difference`]; the value relative to `max(|reference|, 1)`), naming `what`.
pub fn assert_agrees(
    what: &str,
    (value, gradient): (f64, &[f64]),
    (ref_value, ref_gradient): (f64, &[f64]),
    rtol: f64,
) {
    let dv = (value - ref_value).abs() / ref_value.abs().max(1.0);
    assert!(dv <= rtol, "{what}: value {value} vs {ref_value} (relative difference {dv:.1e})");
    let dg = relative_difference(gradient, ref_gradient);
    assert!(dg <= rtol, "{what}: gradient differs from the reference by {dg:.1e} relative");
}

/// Central finite differences of `f` at `x` (step `h`), one entry per coordinate.
pub fn central_differences(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            xp[i] = x[i] + h;
            let up = f(&xp);
            xp[i] = x[i] - h;
            let down = f(&xp);
            xp[i] = x[i];
            (up - down) / (2.0 * h)
        })
        .collect()
}

#[cfg(test)]
mod peers;

#[cfg(test)]
mod tests;
