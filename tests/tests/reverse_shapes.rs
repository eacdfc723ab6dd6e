//! The shapes of loop the reverse pass compiles without a tape entry per iteration (issue 13):
//! blocks re-run in the reverse sweep, the integers they read recovered from what their loop
//! recorded when it exited (counters stepped up, down, by more than one, in branches, left by
//! `break`, `continue` and `return`), buffers built in the body read by index only, and read by
//! blocks the reverse sweep re-runs. Every function is checked by `test_rule!`: each rule
//! against finite differences, and the two modes against each other.

#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::assign_op_pattern,
    clippy::manual_memcpy
)]

use mooncake_runtime::prelude::*;

/// A `while` loop stepping by two, and another counting down.
#[differentiable]
fn strided(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i] * x[i];
        i += 2;
    }
    let mut k = x.len();
    while k > 0 {
        k -= 1;
        s += (x[k] * 0.5).sin() * (k as f64);
    }
    s
}

/// A counter stepped by different amounts in the two arms of an `if`.
#[differentiable]
fn uneven_steps(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i].exp() * 0.25;
        if x[i] > 0.0 {
            i = i + 3;
        } else {
            i = i + 1;
        }
    }
    s
}

/// Loops left by `break`, `continue` and an early `return`.
#[differentiable]
fn jumps(x: &[f64], limit: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] < -1.0 {
            continue;
        }
        s += x[i] * x[i] * 0.5;
        if s > limit {
            break;
        }
    }
    for j in 0..x.len() {
        s += (x[j] * s).tanh();
        if s > 2.0 * limit {
            return s * s;
        }
    }
    s
}

/// Nested loops: the outer counters are constant in the inner loop, the inner counter restarts.
#[differentiable]
fn nested(a: &[f64], x: &[f64], n: usize) -> f64 {
    let m = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let mut row = 0.0;
        for j in 0..m {
            row += a[i * m + j] * x[j];
        }
        s += row * row;
        for j in 0..m {
            s += 0.1 * a[i * m + j] * x[j] * (i as f64 + 1.0);
        }
    }
    s
}

/// A buffer built in the body, written, then read in a loop the reverse sweep re-runs (its
/// values change from one outer iteration to the next).
#[differentiable]
fn layer(w: &[f64], x: &[f64], n: usize) -> f64 {
    let m = x.len();
    let mut h = vec![0.0; n];
    let mut loss = 0.0;
    for round in 0..3 {
        for i in 0..n {
            let mut z = 0.0;
            for j in 0..m {
                z += w[i * m + j] * x[j] * (round as f64 + 1.0);
            }
            h[i] = z.max(0.0) + 0.1 * z;
        }
        for i in 0..n {
            loss += h[i] * h[i] * w[i];
        }
    }
    loss
}

/// A buffer built in a branch (on a path a call may not take), read by index.
#[differentiable]
fn built_in_branch(x: &[f64], build: bool) -> f64 {
    let mut s = x[0];
    if build {
        let mut t = vec![0.0; x.len()];
        for i in 0..x.len() {
            t[i] = x[i] * x[i];
        }
        for i in 0..x.len() {
            s += t[i] * 0.5;
        }
    }
    s
}

/// Float methods with constant arguments in a block the reverse sweep re-runs (its primal code
/// must draw no warning: `-D warnings` builds this file).
#[differentiable]
fn methods_with_constants(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].powi(2) * 0.5 + x[i].max(0.0) + x[i].min(1.0).sqrt().abs();
    }
    s
}

#[test]
fn counters_recovered_from_loop_records() {
    let x = vec![0.5, -1.25, 2.0, 0.75, -0.3, 1.1, 0.2];
    test_rule!(strided(&x));
    test_rule!(methods_with_constants(&[0.5, 0.25, 2.0, 0.75]));
    test_rule!(uneven_steps(&x));
    test_rule!(jumps(&x, 1.5));
    test_rule!(jumps(&x, 100.0));
    test_rule!(jumps(&x, 0.01));
    let a: Vec<f64> = (0..21).map(|k| ((k as f64) * 0.37).sin()).collect();
    test_rule!(nested(&a, &x, 3));
    test_rule!(nested(&a, &x, 0));
}

#[test]
fn buffers_built_in_the_body() {
    let x = vec![0.5, -1.25, 2.0];
    let w: Vec<f64> = (0..12).map(|k| ((k as f64) * 0.71).cos()).collect();
    test_rule!(layer(&w, &x, 4));
    test_rule!(built_in_branch(&x, true));
    test_rule!(built_in_branch(&x, false));
}

#[test]
fn counters_match_a_hand_gradient() {
    // `strided` by hand: s = Σ_{even i} x_i² + Σ_k sin(x_k / 2) k.
    let x = vec![0.5, -1.25, 2.0, 0.75, -0.3];
    let (_, (g,)) = value_and_gradient!(strided(&x));
    for (k, (gk, xk)) in g.iter().zip(&x).enumerate() {
        let even = if k % 2 == 0 { 2.0 * xk } else { 0.0 };
        let want = even + 0.5 * (xk * 0.5).cos() * k as f64;
        assert!((gk - want).abs() < 1e-12, "x[{k}]: {gk} vs {want}");
    }
}

/// Two arguments that may be the same buffer, each read by index only.
#[differentiable]
fn weighted_dot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i] * (i as f64 + 0.5);
    }
    s
}

/// Calls passing the same buffer twice: an argument, and a buffer built in the body.
#[differentiable]
fn self_dots(v: &[f64]) -> f64 {
    let w = v.to_vec();
    weighted_dot(v, v) + weighted_dot(&w, &w) * 0.5 + weighted_dot(v, &w)
}

#[test]
fn arguments_sharing_a_shadow() {
    let v = vec![0.5, -1.25, 2.0, 0.75];
    test_rule!(weighted_dot(&v, &v));
    test_rule!(self_dots(&v));
    // By hand: d/dv_i of Σ (1 + 0.5 + 1) v_i² (i + 1/2) is 5 v_i (i + 1/2).
    let (_, (g,)) = value_and_gradient!(self_dots(&v));
    for (i, (gi, vi)) in g.iter().zip(&v).enumerate() {
        let want = 5.0 * vi * (i as f64 + 0.5);
        assert!((gi - want).abs() < 1e-12, "v[{i}]: {gi} vs {want}");
    }
}

/// A function of its first argument only.
#[differentiable]
fn ignores_second(a: f64, _b: f64, p: [f64; 2]) -> f64 {
    a * 2.0 + p[0]
}

#[test]
fn gradients_hold_no_negative_zeros() {
    // Adjoints start at -0.0 inside the rules (the additive identity); the API gives out 0.0.
    let (_, (da, db, dp)) = value_and_gradient!(ignores_second(1.0, 2.0, [3.0, 4.0]));
    assert_eq!(da, 2.0);
    assert!(db == 0.0 && db.is_sign_positive(), "{db:?}");
    assert!(dp[1] == 0.0 && dp[1].is_sign_positive(), "{dp:?}");
    let mut cache = GradientCache::new();
    let (_, (_, db, dp)) =
        value_and_gradient!(ignores_second(1.0, 2.0, [3.0, 4.0]), cache = &mut cache);
    assert!(db.is_sign_positive() && dp[1].is_sign_positive(), "{db:?} {dp:?}");
    let (_, (_, db, _)) = value_and_pullback!(ignores_second(1.0, 2.0, [3.0, 4.0]), 1.0);
    assert!(db.is_sign_positive(), "{db:?}");
}

/// Sums `v`'s entries times `a`.
#[differentiable]
fn weighted_sum(v: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for e in v.iter() {
        s += *e * a;
    }
    s
}

/// A buffer built in the body, written in one loop, read and written in a second, read in a
/// third that also lends it to a call, and only read in the last ones (which borrow it once,
/// and its shadow once in the reverse sweep; the others do not).
#[differentiable]
fn buffer_borrowed_per_loop(x: &[f64], w: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    for i in 0..n {
        h[i] = (x[i] * w[i]).sin();
    }
    let mut out = 0.0;
    for i in 1..n {
        h[i] = h[i] * h[i - 1] + x[i];
    }
    for i in 0..n {
        out += h[i] * weighted_sum(&h, x[i]);
    }
    for k in 0..2 {
        for i in 0..n {
            out += w[i] * h[i] * h[n - 1 - i] * (k as f64 + 1.0);
        }
    }
    out
}

#[test]
fn buffers_borrowed_once_per_loop() {
    let x = [0.5, -1.25, 2.0, 0.75];
    let w = [0.3, 0.9, -0.4, 1.1];
    test_rule!(buffer_borrowed_per_loop(&x, &w));
    let (_, (gx, _)) = value_and_gradient!(buffer_borrowed_per_loop(&x, &w));
    let mut cache = GradientCache::new();
    for _ in 0..3 {
        let (_, (cx, _)) =
            value_and_gradient!(buffer_borrowed_per_loop(&x, &w), cache = &mut cache);
        assert_eq!(&gx, cx);
    }
}
