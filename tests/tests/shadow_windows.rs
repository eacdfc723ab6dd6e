//! Index loops over buffers built in the body whose reverse sweep reaches the buffer's shadow,
//! and the buffer itself, through windows (issue 13, `reverse/windows.rs`, `Of::Shadow` and
//! `Of::Built`): when a loop's reverse sweep borrows a buffer's shadow once (its guard) and every
//! use of it in the loop is at one consecutive index per iteration, the guard's slice is cut once
//! to the loop's slots. Each shape the analysis accepts is here, beside ones it must refuse;
//! `test_rule!` checks both modes against finite differences and each other, and in these debug
//! builds every access through a window checks that its slot is the index the primal used.

#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)] // written as users write them

use mooncake_runtime::prelude::*;

/// A buffer written once per element (stores that keep no record), then summed: `kron_sum`'s
/// shape in one dimension.
#[differentiable]
fn fill_then_sum(x: &[f64], w: f64) -> f64 {
    let n = x.len();
    let mut k = vec![0.0; n];
    for i in 0..n {
        k[i] = x[i] * w;
    }
    k.iter().sum::<f64>()
}

/// The same in two dimensions, the row's base from the outer counter.
#[differentiable]
fn outer_product_sum(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len(), b.len());
    let mut k = vec![0.0; na * nb];
    for r in 0..na {
        let ar = a[r];
        for c in 0..nb {
            k[r * nb + c] = ar * b[c];
        }
    }
    let mut s = 0.0;
    for v in k.iter() {
        s += v * v;
    }
    s
}

/// A scratch buffer rewritten in every outer iteration (stores that keep a record) and read back
/// by a second loop, whose reverse adds into its shadow and reads it again: `simple_mlp`'s
/// hidden layer.
#[differentiable]
fn scratch_layer(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    let mut loss = 0.0;
    for s in 0..3 {
        let t = s as f64 + 0.5;
        for j in 0..n {
            h[j] = (x[j] * t).max(0.1 * x[j]);
        }
        let mut out = 0.0;
        for j in 0..n {
            out += y[j] * h[j];
        }
        loss += out * out;
    }
    loss
}

/// Stores one ahead of the counter, which steps down.
#[differentiable]
fn shifted_down(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = vec![0.0; n + 1];
    let mut i = n;
    while i > 0 {
        i -= 1;
        k[i + 1] = x[i].sin();
    }
    let mut s = 0.0;
    for j in 0..n + 1 {
        s += k[j] * k[j];
    }
    s
}

/// A buffer read at two offsets in one loop (`h[j]`, `h[j + 1]`): no window of its shadow.
#[differentiable]
fn two_offsets(x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    for j in 0..n {
        h[j] = x[j].cos();
    }
    let mut s = 0.0;
    for j in 0..n - 1 {
        s += h[j] * h[j + 1];
    }
    s
}

/// A buffer read under a branch: no window of its shadow.
#[differentiable]
fn read_under_branch(x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    for j in 0..n {
        h[j] = x[j] * x[j];
    }
    let mut s = 0.0;
    for j in 0..n {
        if x[j] > 0.0 {
            s += h[j] * 3.0;
        }
        s += x[j];
    }
    s
}

/// A loop that may run no complete iteration (its start past the end).
#[differentiable]
fn from_start(x: &[f64], start: usize) -> f64 {
    let n = x.len();
    let mut k = vec![0.0; n];
    for i in start..n {
        k[i] = x[i].exp();
    }
    let mut s = 0.0;
    for i in 0..n {
        s += k[i] * x[i];
    }
    s
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|k| ((k as f64 + 1.0) * seed).sin() * 1.3 + 0.1).collect()
}

#[test]
fn buffers_built_in_the_body() {
    for n in [1, 2, 5, 9] {
        let (x, y) = (xs(n, 0.7), xs(n, 1.9));
        test_rule!(fill_then_sum(&x, 1.7));
        test_rule!(outer_product_sum(&x, &y));
        test_rule!(outer_product_sum(&y[..1], &x));
        test_rule!(scratch_layer(&x, &y));
        test_rule!(shifted_down(&x));
        test_rule!(read_under_branch(&x));
        if n >= 2 {
            test_rule!(two_offsets(&x));
        }
        for start in [0, 1, n, n + 2] {
            test_rule!(from_start(&x, start));
        }
    }
}

#[test]
fn gradients_through_windows_match_closed_forms() {
    // `fill_then_sum`: d/dx_i = w, d/dw = Σ x.
    let x = xs(6, 0.4);
    let (v, (gx, gw)) = value_and_gradient!(fill_then_sum(&x, 2.5));
    let sum: f64 = x.iter().sum();
    assert!((v - 2.5 * sum).abs() < 1e-12);
    assert!(gx.iter().all(|g| (g - 2.5).abs() < 1e-12));
    assert!((gw - sum).abs() < 1e-12);
    // `outer_product_sum`: s = (Σ a²)(Σ b²), d/da_r = 2 a_r Σ b², d/db_c = 2 b_c Σ a².
    let (a, b) = (xs(3, 0.9), xs(4, 0.3));
    let (sa, sb): (f64, f64) = (a.iter().map(|v| v * v).sum(), b.iter().map(|v| v * v).sum());
    let (v, (ga, gb)) = value_and_gradient!(outer_product_sum(&a, &b));
    assert!((v - sa * sb).abs() < 1e-12);
    for (g, v) in ga.iter().zip(&a) {
        assert!((g - 2.0 * v * sb).abs() < 1e-12);
    }
    for (g, v) in gb.iter().zip(&b) {
        assert!((g - 2.0 * v * sa).abs() < 1e-12);
    }
}
