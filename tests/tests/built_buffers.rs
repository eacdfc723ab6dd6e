//! Stores into buffers built in the body (issue 13): a store into a buffer fresh from a
//! constructor that nothing has read before the store keeps no record on the tape (its
//! reverse is `v̄ = k̄[i]; k̄[i] = 0`), every other store keeps one. Each function below mixes
//! the two kinds the way numerical code does (a buffer filled then summed, filled then read by a
//! call then overwritten, overwritten in a loop that reads it, written twice at one index), and
//! `test_rule!` checks its reverse rule against finite differences and forward mode. Which
//! stores keep a record is pinned by the macro's own tests (`reverse/fresh.rs`).

#![allow(clippy::needless_range_loop, clippy::useless_vec)] // the buffers are meant as `Vec`s

use mooncake_runtime::prelude::*;

/// `Σ (a ⊗ b)`, the product built by loops (every element written once, then summed).
#[differentiable]
fn kron_sum(a: &[f64], b: &[f64], n: usize) -> f64 {
    let m = n * n;
    let mut k = vec![0.0; m * m];
    for i in 0..n {
        for j in 0..n {
            let aij = a[i * n + j];
            for r in 0..n {
                for c in 0..n {
                    k[(i * n + r) * m + j * n + c] = aij * b[r * n + c];
                }
            }
        }
    }
    k.iter().sum::<f64>()
}

/// Written, read by a call, written again at the same index: the second store must give the
/// call's pullback the element as the call saw it.
#[differentiable]
fn read_between(x: &[f64]) -> f64 {
    let mut k = vec![0.0; 3];
    k[0] = x[0] * x[1];
    k[1] = x[2].sin();
    let s = k.iter().sum::<f64>();
    k[0] = x[1] * s;
    k[2] = s * s;
    k.iter().sum::<f64>() * k[0]
}

/// The same index written on every iteration, never read in the loop: only the last value
/// reaches the result.
#[differentiable]
fn last_write_wins(x: &[f64]) -> f64 {
    let mut k = vec![0.0; 2];
    for i in 0..x.len() {
        k[0] = x[i] * x[i];
        k[1] = x[i].exp();
    }
    k[0] * k[1]
}

/// A scratch buffer overwritten in a loop that also reads it (every store keeps a record), and a
/// result buffer written once per iteration (none does).
#[differentiable]
fn scratch_and_result(x: &[f64], w: &[f64]) -> f64 {
    let n = w.len();
    let mut h = vec![0.0; n];
    let mut out = vec![0.0; x.len()];
    for s in 0..x.len() {
        for j in 0..n {
            h[j] = (w[j] * x[s]).tanh();
        }
        let mut acc = 0.0;
        for j in 0..n {
            acc += h[j] * h[j];
        }
        out[s] = acc;
    }
    let mut t = 0.0;
    for s in 0..out.len() {
        t += out[s] * (s as f64 + 1.0);
    }
    t
}

/// A buffer built from active values (`vec![a, b, c]`), one of them overwritten before any
/// read: the overwritten value gets no gradient through the buffer.
#[differentiable]
fn listed_then_overwritten(x: f64, y: f64, z: f64) -> f64 {
    let mut k = vec![x * y, y, z];
    k[1] = z * x;
    k[0] * k[1] + k[2]
}

/// Stack arrays, filled by index and read back.
#[differentiable]
fn array_filled(x: &[f64]) -> f64 {
    let mut r = [0.0; 3];
    r[0] = x[0] - x[1];
    r[1] = x[1] * x[2];
    r[2] = 1.0;
    r[0] * r[0] + r[1] * r[2]
}

/// Stores on one branch, the buffer read on the other, inside a loop: the read on an earlier
/// iteration precedes the store on a later one.
#[differentiable]
fn branch_in_loop(x: &[f64]) -> f64 {
    let mut k = vec![0.0; x.len()];
    let mut s = 0.0;
    for i in 0..x.len() {
        if i % 2 == 0 {
            k[i] = x[i] * x[i];
        } else {
            s += k[i - 1] * x[i];
        }
    }
    s + k[0]
}

/// A generic function: the fresh store through a `T: Float` element type.
#[differentiable]
fn squares_sum<T: Float>(x: &[T]) -> T {
    let mut k = vec![T::ZERO; x.len()];
    for i in 0..x.len() {
        k[i] = x[i] * x[i];
    }
    let mut s = T::ZERO;
    for i in 0..k.len() {
        s += k[i];
    }
    s
}

/// A buffer built, then handed to another differentiable function after its stores.
#[differentiable]
fn weighted(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * (i as f64 + 0.5);
    }
    s
}

#[differentiable]
fn built_then_called(x: &[f64]) -> f64 {
    let mut k = vec![0.0; x.len()];
    for i in 0..x.len() {
        k[i] = x[i].sin() * x[(i + 1) % x.len()];
    }
    weighted(&k) * k[0]
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn stores_into_built_buffers_have_the_right_gradients() {
    let (a, b) = (xs(4, 0.7), xs(4, 1.3));
    test_rule!(kron_sum(&a, &b, 2));
    let x = xs(3, 0.9);
    test_rule!(read_between(&x));
    let x5 = xs(5, 0.4);
    test_rule!(last_write_wins(&x5));
    let (x4, w3) = (xs(4, 0.6), xs(3, 1.1));
    test_rule!(scratch_and_result(&x4, &w3));
    test_rule!(listed_then_overwritten(0.3, -1.2, 0.8));
    test_rule!(array_filled(&x));
    let x6 = xs(6, 0.5);
    test_rule!(branch_in_loop(&x6));
    test_rule!(squares_sum(&x5));
    let x5f: Vec<f32> = x5.iter().map(|v| *v as f32).collect();
    let (_, (g,)) = value_and_gradient!(squares_sum(&x5f));
    for (gi, xi) in g.iter().zip(&x5f) {
        assert!((gi - 2.0 * xi).abs() < 1e-6, "{gi} against {}", 2.0 * xi);
    }
    test_rule!(built_then_called(&x5));
}

/// The gradients by hand where they are short: `last_write_wins` depends only on the last
/// element, `listed_then_overwritten` not on `k[1]`'s first value `y`.
#[test]
fn overwritten_values_get_no_gradient() {
    let x = [0.3, -0.7, 1.1];
    let (v, (g,)) = value_and_gradient!(last_write_wins(&x));
    let l = x[2];
    assert!((v - l * l * l.exp()).abs() < 1e-12);
    assert_eq!((g[0], g[1]), (0.0, 0.0));
    assert!((g[2] - (2.0 * l + l * l) * l.exp()).abs() < 1e-12);
    let (_, (gx, gy, gz)) = value_and_gradient!(listed_then_overwritten(0.3, -1.2, 0.8));
    // k = [x y, z x, z]: f = x y · z x + z.
    assert!((gx - 2.0 * 0.3 * -1.2 * 0.8).abs() < 1e-12);
    assert!((gy - 0.3 * 0.8 * 0.3).abs() < 1e-12);
    assert!((gz - (0.3 * -1.2 * 0.3 + 1.0)).abs() < 1e-12);
}
