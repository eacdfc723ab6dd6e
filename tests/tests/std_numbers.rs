//! The standard library's number functions as users call them, in both modes: `x.sin_cos()`
//! (a pair, destructured), `f64::from(k)` of integers and of an `f32` (the lossless conversion,
//! read as the cast `k as f64`). Found missing in reverse mode by probe programs: `sin_cos` was
//! dispatched as a user's method ("no reverse-mode rule"), and `f64::from` as a call of a
//! function `from_frule` / `from_rrule` on `i32` in both modes. Comparisons as values
//! (`a.total_cmp(&b)`, `a.partial_cmp(&b)`), matched on or compared with `Some(Ordering::Less)`.
//! Integer functions of index arithmetic: `saturating_sub`, `rem_euclid`, `abs_diff`, the
//! wrapping arithmetic, bit counts, and integer methods called through their type or
//! `std::cmp` (`usize::min(k, n)`, `std::cmp::max(1, n)`).

#![allow(clippy::needless_range_loop, clippy::manual_saturating_arithmetic)] // written as users write them

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

/// `Ordering`'s predicates (`is_lt`, `is_eq`, ..) on a comparison's result.
#[differentiable]
fn ordered_predicates(x: f64, y: f64) -> f64 {
    if x.total_cmp(&1.0).is_lt() && !y.total_cmp(&x).is_eq() { x * y } else { x - y }
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
    for x in [0.5, 1.5] {
        test_rule!(ordered_predicates(x, 2.0));
    }
    assert_relative_eq!(value_and_gradient!(ordered_predicates(0.5, 2.0)).1.0, 2.0);
    assert_relative_eq!(value_and_gradient!(ordered_predicates(1.5, 2.0)).1.1, -1.0);
    let (_, (gr, _)) = value_and_gradient!(huber(-2.3, 1.0));
    assert_relative_eq!(gr, -1.0, max_relative = 1e-12);
    let (_, (gr, gd)) = value_and_gradient!(huber(0.3, 1.0));
    assert_relative_eq!(gr, 0.3, max_relative = 1e-12);
    assert_relative_eq!(gd, 0.0, max_relative = 1e-12);
}

/// Integer functions as index arithmetic writes them: methods with no derivative
/// (`saturating_sub`, `rem_euclid`, `abs_diff`, `wrapping_add`, `count_ones`), and integer
/// functions called through their type or `std::cmp` (`usize::min(k, n)`, `i32::pow(2, 3)`,
/// `std::cmp::max(1, n)`). Each had no rule in either mode until probe programs found them.
#[differentiable]
fn indexed_by_integer_functions(x: &[f64], k: usize, j: i64) -> f64 {
    let n = usize::min(k, x.len());
    let m = std::cmp::max(1, n);
    let p = i32::pow(2, 3);
    let q = usize::max(k, 1).saturating_sub(1);
    let r = j.rem_euclid(3) as usize;
    let d = k.abs_diff(2).wrapping_add(0) + (k.count_ones() as usize - 1);
    x[n - 1] * x[m - 1] * (p as f64) + x[q] * x[r] + x[d]
}

#[test]
fn integer_functions_in_both_modes() {
    let x = [0.3, 1.2, 2.0, -0.7];
    test_rule!(indexed_by_integer_functions(&x, 2, -4));
    // n = 2, m = 2, p = 8, q = 1, r = 2, d = 0: 8 x1² + x1 x2 + x0.
    let (v, (g, _, _)) = value_and_gradient!(indexed_by_integer_functions(&x, 2, -4));
    assert_relative_eq!(v, 8.0 * 1.44 + 1.2 * 2.0 + 0.3, max_relative = 1e-12);
    assert_relative_eq!(g[1], 16.0 * 1.2 + 2.0, max_relative = 1e-12);
    assert_relative_eq!(g[0], 1.0, max_relative = 1e-12);
}

/// `k.clamp(lo, hi)` of an integer, and `r.partial_cmp(&0.0)` matched inside a loop whose body
/// the reverse sweep runs again (the comparison's argument lent again there).
#[differentiable]
fn clamped_and_compared(x: &[f64], k: usize) -> f64 {
    let j = k.clamp(1, x.len() - 2);
    let mut l = x[j] * x[j - 1];
    for i in 0..x.len() {
        let r = x[i];
        l += match r.partial_cmp(&0.0) {
            Some(std::cmp::Ordering::Greater) => r,
            _ => -r,
        };
    }
    l
}

#[test]
fn clamps_and_comparisons_in_loops() {
    let x = [0.5, -0.3, 1.25, 2.0];
    for k in [0, 2, 9] {
        test_rule!(clamped_and_compared(&x, k));
    }
    let (_, (g, _)) = value_and_gradient!(clamped_and_compared(&x, 9));
    // j = 2: x2 x1 + Σ |x|.
    assert_relative_eq!(g[1], 1.25 - 1.0, max_relative = 1e-12);
    assert_relative_eq!(g[2], -0.3 + 1.0, max_relative = 1e-12);
}

/// A float's `rem_euclid` and `copysign`, and an integer's `checked_sub` (an `Option`), in both
/// modes. None had a rule until probe programs found them.
#[differentiable]
fn wrapped_and_signed(th: f64, x: f64, y: f64, v: &[f64]) -> f64 {
    let last = v.len().checked_sub(1).unwrap_or(0);
    (th * 3.0).rem_euclid(std::f64::consts::TAU) + x.copysign(y) * y + v[last]
}

#[test]
fn euclidean_remainders_signs_and_checked_arithmetic() {
    let v = [0.5, 1.5];
    for (th, x, y) in [(2.5, 0.7, -1.2), (-0.4, -1.5, 2.0)] {
        test_rule!(wrapped_and_signed(th, x, y, &v));
    }
    // d/dth = 3; d/dx = sgn(x) sgn(y) y; d/dy = |x| sgn(y); the last element's gradient is 1.
    let (_, (gt, gx, gy, gv)) = value_and_gradient!(wrapped_and_signed(2.5, 0.7, -1.2, &v));
    assert_relative_eq!(gt, 3.0);
    assert_relative_eq!(gx, 1.2, max_relative = 1e-12);
    assert_relative_eq!(gy, -0.7, max_relative = 1e-12);
    assert_eq!(gv, [0.0, 1.0]);
}
