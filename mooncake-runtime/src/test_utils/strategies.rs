//! [proptest](https://docs.rs/proptest) strategies for random inputs of the supported primal
//! types (enabled by the `proptest` feature).
//!
//! ```
//! use mooncake_runtime::test_utils::strategies;
//! use proptest::prelude::*;
//!
//! proptest!(|(x in strategies::float::<f64>(-2.0, 2.0), v in strategies::vector::<f32>(1..5, 0.0, 1.0))| {
//!     prop_assert!((-2.0..2.0).contains(&x));
//!     prop_assert!(!v.is_empty() && v.iter().all(|e| (0.0..1.0).contains(e)));
//! });
//! ```

use crate::float::Float;
use proptest::prelude::*;
use std::ops::Range;

/// A float uniformly distributed in `[lo, hi)`.
pub fn float<T: Float>(lo: f64, hi: f64) -> impl Strategy<Value = T> {
    (lo..hi).prop_map(T::from_f64)
}

/// A float in `[lo, hi)` at least `gap` away from zero: for inputs of rules with a kink or a
/// pole at zero (`abs`, `recip`, ..).
pub fn float_away_from_zero<T: Float>(lo: f64, hi: f64, gap: f64) -> impl Strategy<Value = T> {
    (lo..hi)
        .prop_filter("at least `gap` away from zero", move |x: &f64| x.abs() >= gap)
        .prop_map(T::from_f64)
}

/// A `Vec` of floats in `[lo, hi)` with a length in `len`.
pub fn vector<T: Float>(len: Range<usize>, lo: f64, hi: f64) -> impl Strategy<Value = Vec<T>> {
    proptest::collection::vec(float::<T>(lo, hi), len)
}

/// An array of floats in `[lo, hi)`.
pub fn array<T: Float, const N: usize>(lo: f64, hi: f64) -> impl Strategy<Value = [T; N]> {
    proptest::collection::vec(float::<T>(lo, hi), N).prop_map(|v| {
        let mut a = [T::ZERO; N];
        a.copy_from_slice(&v);
        a
    })
}

/// A `Vec` of floats together with a valid index into it.
pub fn vector_and_index<T: Float>(
    len: Range<usize>,
    lo: f64,
    hi: f64,
) -> impl Strategy<Value = (Vec<T>, usize)> {
    vector::<T>(len, lo, hi).prop_flat_map(|v| {
        let n = v.len().max(1);
        (Just(v), 0..n)
    })
}
