//! Buffers of buffers (issue 14, item 5, part): `&[Vec<f64>]`, `&Vec<Vec<f64>>`, `Vec<Vec<f64>>`
//! and `&[[f64; N]]` arguments, read by `a[i][j]`, by rows (`for row in a`, `let r = &a[i];`,
//! `row[j]`, `row.len()`, `row.iter()`), with rows passed to calls (`dot(row, w)`,
//! `dot(&a[i], w)`), in both modes; gradients shaped like the input (`Vec<Vec<f64>>`).
//! `test_rule!` checks each function's rules against finite differences and against each other.

#![allow(clippy::needless_range_loop, clippy::ptr_arg)] // written as users write them

use mooncake_runtime::prelude::*;

#[differentiable]
fn frobenius_sq(a: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        for j in 0..a[i].len() {
            s += a[i][j] * a[i][j];
        }
    }
    s
}

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

/// Least squares over a data set given as rows, the weights first.
#[differentiable]
fn least_squares(w: &[f64], xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for (row, y) in xs.iter().zip(ys.iter()) {
        let r = dot(row, w) - y;
        loss += r * r;
    }
    loss / xs.len() as f64
}

#[differentiable]
fn logistic_nll(w: &[f64], xs: &Vec<Vec<f64>>, labels: &[f64]) -> f64 {
    let mut nll = 0.0;
    for i in 0..xs.len() {
        let z = dot(&xs[i], w);
        let p = 1.0 / (1.0 + (-z).exp());
        nll -= labels[i] * p.ln() + (1.0 - labels[i]) * (1.0 - p).ln();
    }
    nll
}

#[differentiable]
fn rows_by_borrow(m: &Vec<Vec<f64>>, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        let row = &m[i];
        let mut d = 0.0;
        for j in 0..row.len() {
            d += row[j] * x[j];
        }
        s += d.tanh();
    }
    s
}

#[differentiable]
fn nested_iteration(m: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for row in m {
        let mut p = 1.0;
        for v in row.iter() {
            p *= v.cos();
        }
        s += p;
    }
    s + m[0].iter().map(|v| v * v).sum::<f64>()
}

#[differentiable]
fn points(ps: &[[f64; 2]], c: [f64; 2]) -> f64 {
    // Σ ‖p - c‖ over 2-d points.
    let mut s = 0.0;
    for p in ps.iter() {
        let (dx, dy) = (p[0] - c[0], p[1] - c[1]);
        s += (dx * dx + dy * dy).sqrt();
    }
    s
}

#[differentiable]
fn owned_matrix(m: Vec<Vec<f64>>) -> f64 {
    let mut t = 0.0;
    for i in 0..m.len() {
        t += m[i][i].exp() * m[i][0];
    }
    t
}

#[differentiable]
fn trace(m: [[f64; 2]; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 {
        s += m[i][i] * m[1 - i][i];
    }
    s
}

fn data() -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs: Vec<Vec<f64>> =
        (0..6).map(|i| (0..3).map(|j| ((i * 3 + j) as f64 * 0.37).sin()).collect()).collect();
    let ys: Vec<f64> = (0..6).map(|i| (i as f64 * 0.5).cos()).collect();
    (xs, ys)
}

#[test]
fn buffers_of_buffers_have_the_right_gradients() {
    let (xs, ys) = data();
    let w = vec![0.3, -0.2, 0.5];
    test_rule!(frobenius_sq(&xs));
    test_rule!(least_squares(&w, &xs, &ys));
    let labels: Vec<f64> = ys.iter().map(|y| if *y > 0.0 { 1.0 } else { 0.0 }).collect();
    test_rule!(logistic_nll(&w, &xs, &labels));
    test_rule!(rows_by_borrow(&xs, &w));
    test_rule!(nested_iteration(&xs));
    let ragged = vec![vec![0.1, 0.2, 0.3], vec![0.4], vec![0.5, 0.6]];
    test_rule!(frobenius_sq(&ragged));
    test_rule!(nested_iteration(&ragged));
    let ps = [[0.1, 0.2], [1.0, -0.5], [0.3, 0.9]];
    test_rule!(points(&ps, [0.5, 0.5]));
    let sq = vec![vec![0.1, 0.2], vec![0.3, 0.4]];
    test_rule!(owned_matrix(sq));
    test_rule!(trace([[1.0, 2.0], [3.0, 4.0]]));
}

#[test]
fn gradients_are_shaped_like_the_input() {
    let (xs, ys) = data();
    let w = vec![0.3, -0.2, 0.5];
    let (v, (gw, gx, gy)) = value_and_gradient!(least_squares(&w, &xs, &ys));
    assert_eq!(v, least_squares(&w, &xs, &ys));
    assert_eq!(gw.len(), 3);
    assert_eq!(gx.len(), 6);
    assert!(gx.iter().all(|r| r.len() == 3));
    assert_eq!(gy.len(), 6);
    // By hand: ∂/∂xs[i][j] = 2 r_i w_j / n.
    for i in 0..6 {
        let r = dot(&xs[i], &w) - ys[i];
        for j in 0..3 {
            assert!((gx[i][j] - 2.0 * r * w[j] / 6.0).abs() < 1e-12);
        }
    }
    let ragged = vec![vec![0.1, 0.2, 0.3], vec![0.4]];
    let (_, (g,)) = value_and_gradient!(frobenius_sq(&ragged));
    assert_eq!(g, vec![vec![0.2, 0.4, 0.6], vec![0.8]]);
}
