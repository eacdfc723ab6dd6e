//! Closures (issue 14): bound by `let` and called, capturing arguments and locals by reference
//! or by `move`, called in loops, passed by name to iterator adaptors, and closures passed to
//! adaptors inline. Each function's rules are checked by `test_rule!` (finite differences, and
//! forward mode against reverse mode).

#![allow(clippy::redundant_closure, clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

#[differentiable]
fn squares(x: f64, y: f64) -> f64 {
    let sq = |v: f64| v * v;
    sq(x) + sq(y) * sq(x - y)
}

#[differentiable]
fn captures_argument(x: &[f64], k: f64) -> f64 {
    let scaled = |i: usize| k * x[i];
    let mut s = 0.0;
    for i in 0..x.len() {
        s += scaled(i).sin();
    }
    s
}

#[differentiable]
fn captures_local(x: &[f64]) -> f64 {
    let m = x[0] * 0.5;
    let centred = |v: f64| (v - m) * (v - m);
    x.iter().copied().map(centred).sum::<f64>() + centred(1.0)
}

#[differentiable]
fn move_closure_keeps_its_value(x: f64) -> f64 {
    let mut a = x * 2.0;
    let f = move |v: f64| v * a;
    a = a.sin();
    f(x) + a
}

#[differentiable]
fn shadowed_after_definition(x: f64) -> f64 {
    let c = x.exp();
    let g = |v: f64| v + c;
    let c = 10.0 * x;
    g(x) * c
}

#[differentiable]
fn two_arguments_and_a_block(x: &[f64], y: &[f64]) -> f64 {
    let huber = |r: f64, delta: f64| {
        let a = r.abs();
        if a <= delta { 0.5 * r * r } else { delta * (a - 0.5 * delta) }
    };
    let mut s = 0.0;
    for i in 0..x.len() {
        s += huber(x[i] - y[i], 0.7);
    }
    s
}

#[differentiable]
fn closure_calls_closure(x: f64) -> f64 {
    let sq = |v: f64| v * v;
    let quartic = |v: f64| sq(sq(v));
    quartic(x) - sq(x)
}

#[differentiable]
fn closure_mutating_a_capture(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    let mut add = |v: f64| acc += v * v;
    for i in 0..x.len() {
        add(x[i]);
    }
    acc
}

#[differentiable]
fn closure_in_map_and_fold(x: &[f64], w: f64) -> f64 {
    let act = |z: f64| (w * z).tanh();
    x.iter().map(|v| act(*v)).fold(0.0, |a, t| a + t * t)
}

#[differentiable]
fn generic_closure<T: Float>(x: T, y: T) -> T {
    let f = |a: T, b: T| a * b + a;
    f(x, y) * f(y, x)
}

#[test]
fn closures_have_the_right_gradients() {
    let x = vec![0.3, -1.2, 0.8, 1.9];
    let y = vec![1.1, 0.4, -0.7, 0.2];
    test_rule!(squares(0.7, -0.4));
    test_rule!(captures_argument(&x, 1.3));
    test_rule!(captures_local(&x));
    test_rule!(move_closure_keeps_its_value(0.6));
    test_rule!(shadowed_after_definition(0.6));
    test_rule!(two_arguments_and_a_block(&x, &y));
    test_rule!(closure_calls_closure(0.9));
    test_rule!(closure_mutating_a_capture(&x));
    test_rule!(closure_in_map_and_fold(&x, 0.8));
    test_rule!(generic_closure(0.4, 1.7));
}

/// The values are those of the closures as Rust runs them (`move` copies, shadowing after the
/// definition does not reach the closure).
#[test]
fn closures_mean_what_rust_says() {
    let (v, (g,)) = value_and_gradient!(move_closure_keeps_its_value(0.6));
    assert_eq!(v, move_closure_keeps_its_value(0.6));
    // f(x) + sin(2x) with f(v) = v · 2x: 4x + 2 cos(2x).
    assert!((g - (4.0 * 0.6 + 2.0 * (1.2f64).cos())).abs() < 1e-12);
    let (v, (g,)) = value_and_gradient!(shadowed_after_definition(0.6));
    assert_eq!(v, shadowed_after_definition(0.6));
    // (x + eˣ) · 10x.
    let e = 0.6f64.exp();
    assert!((g - ((1.0 + e) * 6.0 + (0.6 + e) * 10.0)).abs() < 1e-12);
}
