//! The standard library's number functions as users call them, in both modes: `x.sin_cos()`
//! (a pair, destructured), `f64::from(k)` of integers and of an `f32` (the lossless conversion,
//! read as the cast `k as f64`). Found missing in reverse mode by probe programs: `sin_cos` was
//! dispatched as a user's method ("no reverse-mode rule"), and `f64::from` as a call of a
//! function `from_frule` / `from_rrule` on `i32` in both modes. Comparisons as values
//! (`a.total_cmp(&b)`, `a.partial_cmp(&b)`), matched on or compared with `Some(Ordering::Less)`.

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// A rotation's angle through `sin_cos`, and a weight by position through `f64::from`.
#[differentiable]
fn rotated_weighted(x: &[f64], theta: f64) -> f64 {
    let (s, c) = theta.sin_cos();
    let mut total = 0.0;
    for (i, v) in x.iter().enumerate() {
        let k = i as i32;
        total += f64::from(k + 1) * v * c + f64::from(0.5f32) * f64::from(2u8) * s;
    }
    total
}

#[test]
fn sin_cos_and_conversions_in_both_modes() {
    let x = [0.3, -1.2, 2.0, 0.7];
    let theta = 0.4;
    test_rule!(rotated_weighted(&x, theta));
    let (v, (gx, gt)) = value_and_gradient!(rotated_weighted(&x, theta));
    let weighted: f64 = x.iter().enumerate().map(|(i, v)| (i + 1) as f64 * v).sum();
    assert_relative_eq!(v, weighted * theta.cos() + 4.0 * theta.sin(), max_relative = 1e-12);
    for (i, g) in gx.iter().enumerate() {
        assert_relative_eq!(*g, (i + 1) as f64 * theta.cos(), max_relative = 1e-12);
    }
    assert_relative_eq!(gt, -weighted * theta.sin() + 4.0 * theta.cos(), max_relative = 1e-12);
}

/// Comparisons as values: `match a.total_cmp(&b)` on `Ordering`'s variants, and
/// `partial_cmp(..) == Some(Ordering::Less)`. Both were type errors (no rule for the method;
/// `Ordering` had no tangent type) until probe programs found them.
#[differentiable]
fn ordered_branches(a: f64, b: f64) -> f64 {
    match a.total_cmp(&b) {
        std::cmp::Ordering::Less => a * b,
        std::cmp::Ordering::Equal => a,
        std::cmp::Ordering::Greater => a - b * b,
    }
}

#[differentiable]
fn huber(r: f64, d: f64) -> f64 {
    if r.abs().partial_cmp(&d) == Some(std::cmp::Ordering::Less) {
        0.5 * r * r
    } else {
        d * (r.abs() - 0.5 * d)
    }
}

#[test]
fn comparisons_as_values_in_both_modes() {
    for (a, b) in [(0.3, 1.2), (2.3, 1.2)] {
        test_rule!(ordered_branches(a, b));
    }
    let (v, (ga, gb)) = value_and_gradient!(ordered_branches(0.3, 1.2));
    assert_relative_eq!(v, 0.36, max_relative = 1e-12);
    assert_relative_eq!(ga, 1.2, max_relative = 1e-12);
    assert_relative_eq!(gb, 0.3, max_relative = 1e-12);
    let (v, (ga, gb)) = value_and_gradient!(ordered_branches(2.3, 1.2));
    assert_relative_eq!(v, 2.3 - 1.44, max_relative = 1e-12);
    assert_relative_eq!(ga, 1.0, max_relative = 1e-12);
    assert_relative_eq!(gb, -2.4, max_relative = 1e-12);
    for r in [0.3, -2.3] {
        test_rule!(huber(r, 1.0));
    }
    let (_, (gr, _)) = value_and_gradient!(huber(-2.3, 1.0));
    assert_relative_eq!(gr, -1.0, max_relative = 1e-12);
    let (_, (gr, gd)) = value_and_gradient!(huber(0.3, 1.0));
    assert_relative_eq!(gr, 0.3, max_relative = 1e-12);
    assert_relative_eq!(gd, 0.0, max_relative = 1e-12);
}
