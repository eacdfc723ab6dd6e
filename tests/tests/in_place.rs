//! Writing through mutable borrows of elements (issue 14, items 2 and 4): `for v in
//! x.iter_mut()`, `&mut x`, zipped and enumerated, `iter_mut().for_each(..)`, and `let e = &mut
//! x[i];`, in both modes: reverse mode reads `*v` as the element it borrows. `test_rule!` checks
//! each function's rules against finite differences and against each other.

#![allow(clippy::ptr_arg)] // a `&mut Vec` argument, as users write them

use mooncake_runtime::prelude::*;

#[differentiable]
fn normalise_in_place(x: &mut [f64]) -> f64 {
    let s: f64 = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    for v in x.iter_mut() {
        *v /= s;
    }
    x[0] + 2.0 * x[1]
}

#[differentiable]
fn axpy(y: &mut Vec<f64>, a: f64, x: &[f64]) {
    for (yi, xi) in y.iter_mut().zip(x.iter()) {
        *yi += a * xi;
    }
}

#[differentiable]
fn relu_local(x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for v in &mut h {
        *v = v.max(0.0);
    }
    for (i, v) in h.iter_mut().enumerate() {
        *v *= i as f64 + 1.0;
    }
    h.iter_mut().for_each(|v| *v = v.sin());
    h.iter().sum()
}

#[differentiable]
fn through_element_borrow(x: &mut [f64], i: usize) -> f64 {
    let e = &mut x[i];
    *e = *e * *e + 1.0;
    let f = &mut x[0];
    *f += 0.5;
    x.iter().sum::<f64>()
}

#[differentiable]
fn momentum_step(w: &mut [f64], m: &mut [f64], g: &[f64], lr: f64) {
    for ((wi, mi), gi) in w.iter_mut().zip(m.iter_mut()).zip(g.iter()) {
        *mi = 0.9 * *mi + gi;
        *wi -= lr * *mi;
    }
}

#[differentiable]
fn after_momentum(w: &mut [f64], m: &mut [f64], g: &[f64]) -> f64 {
    momentum_step(w, m, g, 0.1);
    momentum_step(w, m, g, 0.1);
    w.iter().map(|v| v * v).sum()
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn writes_through_element_borrows_have_the_right_gradients() {
    let (x, y) = (xs(5, 0.7), xs(5, 1.3));
    test_rule!(normalise_in_place(&mut x));
    test_rule!(axpy(&mut y, 0.6, &x));
    test_rule!(relu_local(&x));
    test_rule!(through_element_borrow(&mut y, 3));
    test_rule!(through_element_borrow(&mut y, 0));
    let (m, g) = (xs(5, 2.3), xs(5, 0.4));
    test_rule!(after_momentum(&mut y, &mut m, &g));
}

#[test]
fn writes_through_element_borrows_compute_what_the_primal_computes() {
    let x = xs(5, 0.7);
    let mut a = x.clone();
    let primal = normalise_in_place(&mut a);
    let mut b = x.clone();
    assert_eq!(value_and_gradient!(normalise_in_place(&mut b)).0, primal);
    assert_eq!(value_and_gradient!(relu_local(&x)).0, relu_local(&x));
    let (w, m, g) = (xs(5, 1.3), xs(5, 2.3), xs(5, 0.4));
    let (mut w1, mut m1) = (w.clone(), m.clone());
    let primal = after_momentum(&mut w1, &mut m1, &g);
    let (mut w2, mut m2) = (w.clone(), m.clone());
    assert_eq!(value_and_gradient!(after_momentum(&mut w2, &mut m2, &g)).0, primal);
}
