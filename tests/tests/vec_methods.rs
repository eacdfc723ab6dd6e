//! `Vec::clear`, `extend_from_slice`, `resize` and `truncate` (issue 14, item 9) in both modes,
//! on buffers built in the body and on `&mut Vec` arguments (which reverse mode restores), of
//! numbers and of integers. `test_rule!` checks both rules of each function against finite
//! differences and against each other; the values are checked against the primal.

#![allow(clippy::needless_range_loop)] // index loops, as kernels are written

use mooncake_runtime::prelude::*;

#[differentiable]
fn concat_then_reuse(x: &[f64], y: &[f64]) -> f64 {
    let mut v = Vec::new();
    v.extend_from_slice(x);
    v.extend_from_slice(y);
    v.push(1.0);
    let s = v.iter().map(|a| a * a).sum::<f64>();
    v.clear();
    v.push(s.sqrt());
    v[0] * x[0]
}

#[differentiable]
fn padded(x: &[f64], pad: f64) -> f64 {
    let mut v = x.to_vec();
    v.resize(x.len() + 3, pad * pad);
    let mut s = 0.0;
    for i in 0..v.len() {
        s += (i as f64 + 1.0) * v[i];
    }
    v.resize(2, 0.0);
    v.truncate(1);
    s * v[0]
}

#[differentiable]
fn scratch_per_row(a: &[f64], n: usize) -> f64 {
    // A scratch buffer cleared and refilled on every row, as a kernel's work space is.
    let mut row: Vec<f64> = Vec::with_capacity(n);
    let mut total = 0.0;
    for i in 0..a.len() / n {
        row.clear();
        for j in 0..n {
            row.push(a[i * n + j]);
        }
        row.extend_from_slice(a);
        row.truncate(n);
        row.resize(n + 1, a[i * n]);
        let mut r = 0.0;
        for j in 0..row.len() {
            r += row[j] * row[j];
        }
        total += r.sqrt();
    }
    total
}

#[differentiable]
fn grow_argument(v: &mut Vec<f64>, x: &[f64]) -> f64 {
    let s = v.iter().sum::<f64>();
    v.truncate(2);
    v.extend_from_slice(x);
    v.resize(6, s);
    let mut p = 1.0;
    for i in 0..v.len() {
        p *= v[i];
    }
    v.clear();
    p
}

#[differentiable]
fn integer_buffer(x: &[f64]) -> f64 {
    let mut idx: Vec<usize> = Vec::new();
    idx.extend_from_slice(&[2, 0]);
    idx.resize(4, 1);
    let mut s = 0.0;
    for k in 0..idx.len() {
        s += x[idx[k]] * (k as f64 + 1.0);
    }
    idx.truncate(1);
    idx.clear();
    s
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin() + 1.5).collect()
}

#[test]
fn vec_methods_have_the_right_gradients() {
    let (x, y) = (xs(4, 0.7), xs(3, 1.3));
    test_rule!(concat_then_reuse(&x, &y));
    test_rule!(padded(&x, 0.8));
    let a = xs(6, 0.4);
    test_rule!(scratch_per_row(&a, 3));
    test_rule!(scratch_per_row(&a, 2));
    let v = xs(4, 2.1);
    test_rule!(grow_argument(&mut v, &y));
    assert_eq!(v, xs(4, 2.1), "test_rule! runs on copies");
    test_rule!(integer_buffer(&x));
}

#[test]
fn vec_methods_compute_what_std_computes() {
    let (x, y) = (xs(4, 0.7), xs(3, 1.3));
    let mut v: Vec<f64> = x.iter().chain(y.iter()).copied().collect();
    v.push(1.0);
    let s = v.iter().map(|a| a * a).sum::<f64>();
    assert_eq!(value_and_gradient!(concat_then_reuse(&x, &y)).0, s.sqrt() * x[0]);
    // The pullback restores the argument to what it was passed as, and its gradient is shaped
    // like it.
    let mut w = xs(4, 2.1);
    let (p, (gw, gx)) = value_and_gradient!(grow_argument(&mut w, &y));
    let mut w0 = xs(4, 2.1);
    assert_eq!(p, grow_argument(&mut w0, &y));
    assert!(w0.is_empty());
    assert_eq!(w, xs(4, 2.1));
    assert_eq!(gw.len(), 4);
    assert_eq!(gx.len(), 3);
    let (s, (g,)) = value_and_gradient!(integer_buffer(&x));
    assert_eq!(s, x[2] + 2.0 * x[0] + 3.0 * x[1] + 4.0 * x[1]);
    assert_eq!(g, [2.0, 7.0, 1.0, 0.0]);
}

/// `[a, b].concat()` of slices (read as a copy of `a` extended by `b`), and `extend` by an
/// iterator chain. `concat` was a type error in both modes until probe programs found it.
#[differentiable]
fn concatenated(x: &[f64], y: &[f64]) -> f64 {
    let mut z = x.to_vec();
    z.extend(y.iter().map(|v| v * 2.0));
    let w = [x, y, &z[..1]].concat();
    z.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>() + w[w.len() - 1]
}

#[test]
fn concat_of_slices() {
    let (x, y) = (vec![0.3, -1.2], vec![2.0, 0.7]);
    test_rule!(concatenated(&x, &y));
    // x·x + 2 y·y + x0.
    let (v, (gx, gy)) = value_and_gradient!(concatenated(&x, &y));
    assert!((v - (0.09 + 1.44 + 2.0 * (4.0 + 0.49) + 0.3)).abs() < 1e-12);
    assert!((gx[0] - (2.0 * 0.3 + 1.0)).abs() < 1e-12 && (gx[1] + 2.4).abs() < 1e-12);
    assert!((gy[0] - 8.0).abs() < 1e-12 && (gy[1] - 2.8).abs() < 1e-12);
}

#[differentiable]
fn norm3(p: [f64; 3]) -> f64 {
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
}

/// Slices converted to arrays, `let p: [f64; 3] = c.try_into().unwrap();` (of a chunk, and of a
/// range with `expect`): the array of the slice's elements after the conversion's length check.
/// Was refused with "no rule for this method call" until probe programs found it.
#[differentiable]
fn norms_of_chunks(flat: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in flat.chunks_exact(3) {
        let p: [f64; 3] = c.try_into().unwrap();
        s += norm3(p);
    }
    let q: [f64; 2] = flat[1..3].try_into().expect("two elements");
    s + q[0] * q[1]
}

#[test]
fn slices_converted_to_arrays() {
    let flat = [0.3, -1.2, 2.0, 0.7, 1.1, -0.4];
    test_rule!(norms_of_chunks(&flat));
    let (v, (g,)) = value_and_gradient!(norms_of_chunks(&flat));
    let (n1, n2) = (norm3([0.3, -1.2, 2.0]), norm3([0.7, 1.1, -0.4]));
    assert!((v - (n1 + n2 - 2.4)).abs() < 1e-12);
    assert!((g[1] - (-1.2 / n1 + 2.0)).abs() < 1e-12);
    assert!((g[5] - (-0.4 / n2)).abs() < 1e-12);
}
