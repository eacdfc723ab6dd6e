//! Sub-slices (issue 14, item 3): `&x[a..b]` and `&mut x[a..b]` passed to calls and methods,
//! kept in locals (shared), iterated (`x[a..].iter()`, `&x[..k]`, `iter_mut`), measured, summed
//! and split (`split_at`, `split_at_mut`: `&mut` parts kept in locals), in both modes; `for c in
//! x.chunks_mut(k)`. `test_rule!` checks each function's rules against
//! finite differences and against each other; values are checked against the primal.

#![allow(clippy::needless_range_loop)] // index loops, as kernels are written

use mooncake_runtime::prelude::*;

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable]
fn scale_in_place(v: &mut [f64], k: f64) {
    for i in 0..v.len() {
        v[i] *= k;
    }
}

#[differentiable]
fn halves_dot(x: &[f64]) -> f64 {
    let n = x.len() / 2;
    dot(&x[..n], &x[n..2 * n])
}

#[differentiable]
fn block_sums(x: &[f64], k: usize) -> f64 {
    // Σ over blocks of (Σ block)², each block a sub-slice kept in a local.
    let mut total = 0.0;
    let mut start = 0;
    while start < x.len() {
        let end = (start + k).min(x.len());
        let block = &x[start..end];
        let s: f64 = block.iter().sum();
        total += s * s / block.len() as f64;
        start = end;
    }
    total
}

#[differentiable]
fn tail_chain(x: &[f64]) -> f64 {
    x[1..].iter().zip(x[..x.len() - 1].iter()).map(|(a, b)| (a - b).powi(2)).sum::<f64>()
        + x[2..=3].iter().sum::<f64>()
}

#[differentiable]
fn scaled_middle(x: &[f64], k: f64) -> f64 {
    let mut y = x.to_vec();
    let n = y.len();
    scale_in_place(&mut y[1..n - 1], k);
    y[1..3].copy_from_slice(&x[..2]);
    for v in y[2..].iter_mut() {
        *v = v.sin();
    }
    for v in &mut y[..1] {
        *v *= 3.0;
    }
    dot(&y, x)
}

#[differentiable]
fn split_and_combine(x: &[f64]) -> f64 {
    let (left, right) = x.split_at(2);
    let l: f64 = left.iter().map(|v| v * v).sum();
    let mut r = 0.0;
    for v in right {
        r += v.exp();
    }
    l * r + x[1..].len() as f64
}

#[differentiable]
fn sub_slice_of_vec(v: &mut Vec<f64>, x: &[f64]) -> f64 {
    v.extend_from_slice(&x[1..]);
    let m = v.len();
    dot(&v[m - 2..], &x[..2])
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn sub_slices_have_the_right_gradients() {
    let x = xs(7, 0.7);
    test_rule!(halves_dot(&x));
    test_rule!(block_sums(&x, 3));
    test_rule!(block_sums(&x, 7));
    test_rule!(tail_chain(&x));
    test_rule!(scaled_middle(&x, 1.3));
    test_rule!(split_and_combine(&x));
    let v = xs(3, 1.1);
    test_rule!(sub_slice_of_vec(&mut v, &x));
}

#[test]
fn sub_slices_compute_what_the_primal_computes() {
    let x = xs(7, 0.7);
    assert_eq!(value_and_gradient!(halves_dot(&x)).0, halves_dot(&x));
    assert_eq!(value_and_gradient!(block_sums(&x, 3)).0, block_sums(&x, 3));
    assert_eq!(value_and_gradient!(tail_chain(&x)).0, tail_chain(&x));
    assert_eq!(value_and_gradient!(scaled_middle(&x, 1.3)).0, scaled_middle(&x, 1.3));
    assert_eq!(value_and_gradient!(split_and_combine(&x)).0, split_and_combine(&x));
    // By hand: ∂/∂x of x[0]x[3] + x[1]x[4] + x[2]x[5].
    let (_, (g,)) = value_and_gradient!(halves_dot(&x));
    assert_eq!(g, [x[3], x[4], x[5], x[0], x[1], x[2], 0.0]);
}

#[test]
#[should_panic(expected = "out of range")]
fn a_range_out_of_bounds_panics_as_slicing_does() {
    let x = xs(3, 0.7);
    let _ = value_and_gradient!(block_sums_bad(&x));
}

#[differentiable]
fn block_sums_bad(x: &[f64]) -> f64 {
    dot(&x[..2], &x[2..4])
}

/// A state split into positions and momenta (`split_at_mut`), as a leapfrog step writes it: the
/// halves indexed, measured, iterated mutably, lent to calls (`&mut` as it is, `&` as `&*q` or
/// `&p[..]`) and sub-sliced.
#[differentiable]
fn leapfrog_energy(state: &mut [f64], dt: f64) -> f64 {
    let n = state.len() / 2;
    let (q, p) = state.split_at_mut(n);
    for i in 0..q.len() {
        p[i] -= 0.5 * dt * q[i].sin();
        q[i] += dt * p[i];
    }
    scale_in_place(p, 0.9);
    let e = dot(&*q, &*q) + dot(&p[..], &p[..]);
    for v in q.iter_mut() {
        *v = v.tanh();
    }
    e + p[1..].iter().sum::<f64>() + q[q.len() - 1]
}

/// `let w = &mut x[a..b];` kept in a local, then written through, lent and measured; `x` is read
/// after the part's last use.
#[differentiable]
#[allow(clippy::ptr_arg)] // a `&mut Vec`, as users write it
fn middle_window(x: &mut Vec<f64>, a: f64) -> f64 {
    let w = &mut x[1..=2];
    w[0] = w[1] * a;
    w[1] += a * w.len() as f64;
    scale_in_place(w, a);
    x[0] + x[1] * x[2] + x[3]
}

/// Rows of a row-major matrix written through `chunks_mut`.
#[differentiable]
fn normalise_rows(m: &mut [f64], cols: usize) -> f64 {
    for row in m.chunks_mut(cols) {
        let mut s = 0.0;
        for j in 0..row.len() {
            s += row[j] * row[j];
        }
        let inv = 1.0 / s.sqrt();
        for j in 0..row.len() {
            row[j] *= inv;
        }
    }
    let mut t = 0.0;
    for j in 0..m.len() {
        t += m[j] * (j as f64 + 1.0);
    }
    t
}

#[test]
fn parts_kept_in_locals() {
    let x = xs(6, 0.7);
    let s = x.clone();
    test_rule!(leapfrog_energy(&mut s, 0.1));
    let v = x[..4].to_vec();
    test_rule!(middle_window(&mut v, 0.8));
    let m = x.clone();
    test_rule!(normalise_rows(&mut m, 3));
    let (mut a, mut b) = (x.clone(), x.clone());
    assert_eq!(value_and_gradient!(leapfrog_energy(&mut a, 0.1)).0, leapfrog_energy(&mut b, 0.1));
    let (mut a, mut b) = (x[..4].to_vec(), x[..4].to_vec());
    assert_eq!(value_and_gradient!(middle_window(&mut a, 0.8)).0, middle_window(&mut b, 0.8));
    let (mut a, mut b) = (x.clone(), x.clone());
    assert_eq!(value_and_gradient!(normalise_rows(&mut a, 2)).0, normalise_rows(&mut b, 2));
}

#[test]
#[should_panic(expected = "index out of bounds")]
fn a_part_indexed_past_its_end_panics_as_the_primal_does() {
    let mut x = xs(4, 0.7);
    let _ = value_and_gradient!(part_past_end(&mut x));
}

#[differentiable]
fn part_past_end(x: &mut [f64]) -> f64 {
    let (a, _b) = x.split_at_mut(2);
    a[2]
}

#[differentiable]
fn head_pairs(entries: &[(f64, f64)], k: usize) -> f64 {
    let mut s = 0.0;
    for &(a, b) in &entries[..k] {
        s += a * b;
    }
    for (a, b) in entries[k..].iter() {
        s += a.sin() * b;
    }
    for (i, (a, b)) in entries[1..].iter().enumerate() {
        s += (i as f64) * *a * *b;
    }
    s
}

/// Sub-slices of a buffer of pairs (`&entries[..k]`), iterated with patterns (`&(a, b)`, and
/// `(a, b)` whose parts are references, dereferenced as `*a`), in both modes.
#[test]
fn sub_slices_of_buffers_of_pairs() {
    let e = vec![(0.5, 1.0), (2.0, -1.0), (0.3, 0.3), (1.2, 0.4)];
    test_rule!(head_pairs(&e, 2));
    let (_, (g, _)) = value_and_gradient!(head_pairs(&e, 2));
    assert!((g[0].0 - 1.0).abs() < 1e-12 && (g[3].1 - (1.2f64.sin() + 2.0 * 1.2)).abs() < 1e-12);
}
