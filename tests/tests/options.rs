//! `Option`s made and taken apart at once (issue 14, item 6, part; item 3's `first`, `last`,
//! `get`; item 2's `max_by`, `min_by`): `x.first()`, `x.last()`, `x.get(i)` and chains ending
//! in `max_by`, `min_by` or `reduce`, taken apart by `unwrap`, `expect`, `unwrap_or`,
//! `unwrap_or_else`, `is_some`, `is_none`, `if let`, `let .. else` and `match`. Each function
//! is written as numerical Rust writes it; `test_rule!` checks both of its rules against finite
//! differences and against each other, and the values are checked against the primal.

#![allow(clippy::get_first, clippy::unnecessary_lazy_evaluations)] // written both ways on purpose

use mooncake_runtime::prelude::*;

#[differentiable]
fn ends(x: &[f64]) -> f64 {
    let a = x.first().copied().unwrap_or(0.0);
    let b = *x.last().unwrap();
    a * b
}

#[differentiable]
fn neighbour_or_zero(x: &[f64], i: usize) -> f64 {
    let left = if i > 0 { x.get(i - 1).copied().unwrap_or(0.0) } else { 0.0 };
    let right = x.get(i + 1).copied().unwrap_or(0.0);
    x[i] * (left + right)
}

#[differentiable]
fn if_let_get(x: &[f64], i: usize) -> f64 {
    if let Some(v) = x.get(i) { v * v } else { -1.0 }
}

#[differentiable]
fn if_let_ref_pattern(x: &[f64]) -> f64 {
    let mut s = 0.0;
    if let Some(&v) = x.first() {
        s += v.exp();
    }
    if let Some(w) = x.last() {
        s += *w * 3.0;
    }
    s
}

#[differentiable]
fn let_else_last(x: &[f64]) -> f64 {
    let Some(&last) = x.last() else {
        return 0.0;
    };
    let Some(first) = x.first() else {
        return 0.0;
    };
    last.sin() * first
}

#[differentiable]
fn match_first(x: &[f64], scale: f64) -> f64 {
    match x.first() {
        Some(v) => scale * v.cos(),
        None => scale,
    }
}

#[differentiable]
fn expect_and_checks(x: &[f64]) -> f64 {
    let a = x.get(1).copied().expect("at least two elements");
    let b = if x.get(10).is_none() { 1.0 } else { 2.0 };
    let c = if x.get(0).is_some() { x[0] } else { 0.0 };
    a * b + c * c
}

#[differentiable]
fn unwrap_or_else(x: &[f64], fallback: f64) -> f64 {
    x.get(7).copied().unwrap_or_else(|| fallback * fallback)
        + x.get(0).copied().unwrap_or_else(|| fallback)
}

#[differentiable]
fn max_by_partial(x: &[f64]) -> f64 {
    x.iter().copied().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap()
}

#[differentiable]
fn min_by_total(x: &[f64]) -> f64 {
    *x.iter().min_by(|a, b| a.total_cmp(b)).unwrap()
}

#[differentiable]
fn max_by_key_expression(x: &[f64], c: f64) -> f64 {
    // The element farthest from `c`.
    x.iter()
        .map(|v| v * 2.0)
        .max_by(|a, b| (a - c).abs().partial_cmp(&(b - c).abs()).unwrap())
        .unwrap()
}

#[differentiable]
fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().copied().max_by(f64::total_cmp).unwrap_or(0.0);
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

#[differentiable]
fn reduce_max(x: &[f64]) -> f64 {
    x.iter().copied().reduce(f64::max).unwrap() + x.iter().copied().reduce(|a, b| a * b).unwrap()
}

#[differentiable]
fn max_of_filtered(x: &[f64]) -> f64 {
    if let Some(m) = x.iter().copied().filter(|v| *v < 0.5).max_by(|a, b| a.total_cmp(b)) {
        m * m
    } else {
        0.0
    }
}

#[differentiable]
fn generic_first<T: Float>(x: &[T]) -> T {
    x.first().copied().unwrap() * x.get(1).copied().unwrap()
}

#[differentiable]
fn first_above(x: &[f64], t: f64) -> f64 {
    // The first element above `t` (or the last one), by `position` and by `find`.
    let i = x.iter().position(|v| *v > t).unwrap_or(x.len() - 1);
    let f = x.iter().find(|v| **v > t).copied().unwrap_or(x[x.len() - 1]);
    let g = *x.iter().find(|&&v| v > t).unwrap_or(&x[0]);
    x[i] * f + g
}

#[differentiable]
fn guarded(x: &[f64]) -> f64 {
    // `any` / `all` as guards, over elements and over mapped values.
    let all_positive = x.iter().all(|v| *v > 0.0);
    let any_large = x.iter().map(|v| v * v).any(|s| s > 0.5);
    let mut s = 0.0;
    if all_positive {
        s += x.iter().map(|v| v.ln()).sum::<f64>();
    }
    if any_large {
        s += x[0] * 3.0;
    }
    if x.iter().any(|v| v.is_nan()) { 0.0 } else { s + x[1] }
}

/// `v.pop()` taken apart: `while let`, `unwrap`, `unwrap_or`, `is_some` (which pops), `if let`.
#[differentiable]
fn stack_drained(x: &[f64]) -> f64 {
    let mut stack = x.to_vec();
    let mut s = 0.0;
    let mut k = 1.0;
    while let Some(v) = stack.pop() {
        s += k * v.sin();
        k += 1.0;
        if s > 10.0 {
            break;
        }
    }
    s
}
#[differentiable]
fn pops(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    let a = v.pop().unwrap();
    let b = v.pop().unwrap_or(0.0);
    let popped = v.pop().is_some();
    let c = if let Some(t) = v.pop() { t * t } else { 0.0 };
    a * b + c + v.len() as f64 + if popped { 1.0 } else { 0.0 }
}
#[differentiable]
fn drain_argument(stack: &mut Vec<f64>, y: f64) -> f64 {
    let mut s = 0.0;
    while let Some(v) = stack.pop() {
        s += v * y;
    }
    s
}
fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn options_have_the_right_gradients() {
    let x = xs(5, 0.7);
    let e: Vec<f64> = Vec::new();
    test_rule!(ends(&x));
    for i in 0..5 {
        test_rule!(neighbour_or_zero(&x, i));
        test_rule!(if_let_get(&x, i));
    }
    test_rule!(if_let_get(&x, 9));
    test_rule!(if_let_ref_pattern(&x));
    test_rule!(if_let_ref_pattern(&e));
    test_rule!(let_else_last(&x));
    test_rule!(let_else_last(&e));
    test_rule!(match_first(&x, 1.5));
    test_rule!(match_first(&e, 1.5));
    test_rule!(expect_and_checks(&x));
    test_rule!(unwrap_or_else(&x, 0.3));
    test_rule!(max_by_partial(&x));
    test_rule!(min_by_total(&x));
    test_rule!(max_by_key_expression(&x, 0.2));
    test_rule!(log_sum_exp(&x));
    test_rule!(reduce_max(&x));
    test_rule!(max_of_filtered(&x));
    test_rule!(generic_first(&x));
    for t in [-0.5, 0.0, 0.5, 2.0] {
        test_rule!(first_above(&x, t));
    }
    test_rule!(guarded(&x));
    let pos: Vec<f64> = x.iter().map(|v| v.abs() + 0.1).collect();
    test_rule!(guarded(&pos));
}

#[test]
fn pops_have_the_right_gradients() {
    let x = xs(6, 0.7);
    test_rule!(stack_drained(&x));
    test_rule!(pops(&x));
    let st = xs(3, 1.1);
    test_rule!(drain_argument(&mut st, 1.5));
    assert_eq!(value_and_gradient!(stack_drained(&x)).0, stack_drained(&x));
    assert_eq!(value_and_gradient!(pops(&x)).0, pops(&x));
}

#[test]
fn searches_compute_what_std_computes() {
    let x = xs(5, 0.7);
    for t in [-0.5, 0.0, 0.5, 2.0] {
        assert_eq!(value_and_gradient!(first_above(&x, t)).0, first_above(&x, t));
    }
    let pos: Vec<f64> = x.iter().map(|v| v.abs() + 0.1).collect();
    assert_eq!(value_and_gradient!(guarded(&x)).0, guarded(&x));
    assert_eq!(value_and_gradient!(guarded(&pos)).0, guarded(&pos));
}

#[test]
fn options_compute_what_std_computes() {
    let x = vec![0.5, -2.0, 1.5, 0.25];
    assert_eq!(value_and_gradient!(ends(&x)).0, 0.5 * 0.25);
    let (v, (g, _)) = value_and_gradient!(neighbour_or_zero(&x, 0));
    assert_eq!(v, 0.5 * -2.0);
    assert_eq!(g, [-2.0, 0.5, 0.0, 0.0]);
    assert_eq!(value_and_gradient!(if_let_get(&x, 9)).0, -1.0);
    let e: &[f64] = &[];
    assert_eq!(value_and_gradient!(let_else_last(e)).0, 0.0);
    assert_eq!(value_and_gradient!(match_first(e, 1.5)).0, 1.5);
    let (m, (g,)) = value_and_gradient!(max_by_partial(&x));
    assert_eq!(m, 1.5);
    assert_eq!(g, [0.0, 0.0, 1.0, 0.0]);
    let (m, (g,)) = value_and_gradient!(min_by_total(&x));
    assert_eq!(m, -2.0);
    assert_eq!(g, [0.0, 1.0, 0.0, 0.0]);
    // Ties: `max_by` keeps the last of equal items, `min_by` the first, as std does.
    let t = vec![1.0, 3.0, 3.0, 1.0];
    assert_eq!(value_and_gradient!(max_by_partial(&t)).1.0, [0.0, 0.0, 1.0, 0.0]);
    assert_eq!(value_and_gradient!(min_by_total(&t)).1.0, [1.0, 0.0, 0.0, 0.0]);
    let far = x
        .iter()
        .map(|v| v * 2.0)
        .max_by(|a, b| (a - 0.2).abs().partial_cmp(&(b - 0.2).abs()).unwrap())
        .unwrap();
    assert_eq!(value_and_gradient!(max_by_key_expression(&x, 0.2)).0, far);
    let lse = x.iter().map(|v| v.exp()).sum::<f64>().ln();
    assert!((value_and_gradient!(log_sum_exp(&x)).0 - lse).abs() < 1e-12);
    let r = x.iter().copied().reduce(f64::max).unwrap() + x.iter().product::<f64>();
    assert_eq!(value_and_gradient!(reduce_max(&x)).0, r);
    assert_eq!(value_and_gradient!(max_of_filtered(&x)).0, 0.25 * 0.25);
    let big = vec![1.0, 2.0];
    assert_eq!(value_and_gradient!(max_of_filtered(&big)).0, 0.0);
}

#[test]
#[should_panic(expected = "called `Option::unwrap()` on a `None` value")]
fn unwrap_of_none_panics_as_std_does() {
    let e: &[f64] = &[];
    let _ = value_and_gradient!(max_by_partial(e));
}

#[test]
#[should_panic(expected = "at least two elements")]
fn expect_of_none_panics_with_its_message() {
    let one = vec![1.0];
    let _ = value_and_gradient!(expect_and_checks(&one));
}

/// The index of the nearest point (k-means' assignment step): items mapped to `(index, distance)`
/// tuples, the least kept, its index read.
#[differentiable]
fn nearest_centre(x: &[f64], centres: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        let best = centres
            .iter()
            .enumerate()
            .map(|(k, c)| (k, (v - c).abs()))
            .min_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
            .unwrap()
            .0;
        let d = v - centres[best];
        s += d * d;
    }
    s
}

/// `enumerate()` then `max_by` over its tuples, taken apart by a pattern (`(i, &m)`), through
/// `.map(|(i, _)| i)`, `.unwrap().1` dereferenced, `if let` and `match`: Rust's items hold
/// references, which the lowering keeps as values (a `*` on them is dropped).
#[differentiable]
fn argmax_forms(x: &[f64], y: &[f64]) -> f64 {
    let (i, &m) = x.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    let j = x.iter().enumerate().min_by(|(_, a), (_, b)| a.total_cmp(b)).map(|(j, _)| j).unwrap();
    let best = y.iter().enumerate().max_by(|a, b| a.1.partial_cmp(b.1).unwrap()).unwrap();
    let mut s = m * (i as f64 + 1.0) + x[j] * *best.1;
    if let Some((k, v)) = y.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)) {
        s += *v * k as f64;
    }
    s + match x.iter().zip(y.iter()).find(|(a, _)| **a > 0.5) {
        Some((a, &b)) => *a * b,
        None => 0.0,
    }
}

#[test]
fn tuples_kept_by_max_by_min_by_and_find() {
    let x = vec![0.3, -0.7, 1.1, 0.2, 0.5];
    let y = vec![0.5, 0.1, -0.3, 0.9, 0.2];
    let c = vec![-0.5, 0.25, 1.0];
    test_rule!(nearest_centre(&*x, &*c));
    test_rule!(argmax_forms(&*x, &*y));
    // Against the std iterators the primal runs.
    assert_eq!(value_and_gradient!(argmax_forms(&x, &y)).0, argmax_forms(&x, &y));
    assert_eq!(value_and_gradient!(nearest_centre(&x, &c)).0, nearest_centre(&x, &c));
    let (_, (gx, _)) = value_and_gradient!(argmax_forms(&x, &y));
    // x[2] = 1.1 is the max (weight i + 1 = 3) and the first above 0.5 (times y[2] = -0.3);
    // x[1] = -0.7 the min, times y's max 0.9.
    assert!((gx[2] - (3.0 - 0.3)).abs() < 1e-12);
    assert!((gx[1] - 0.9).abs() < 1e-12);
}

// `Option` arguments: weights that may be absent, borrowed or owned, taken apart in a loop
// (`match w { Some(w) => w[i], .. }`, `match &w`, `if let Some(w) = w`).

#[differentiable]
fn weighted(x: &[f64], w: Option<&[f64]>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let wi = match w {
            Some(w) => w[i],
            None => 1.0,
        };
        s += wi * x[i] * x[i];
    }
    s
}

#[differentiable]
fn weighted_owned(x: &[f64], w: Option<Vec<f64>>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let wi = match &w {
            Some(w) => w[i],
            None => 1.0,
        };
        s += wi * x[i] * x[i];
    }
    s
}

#[differentiable]
fn if_let_weights(x: &[f64], w: Option<&[f64]>, scale: f64, label: Option<&str>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut wi = scale;
        if let Some(w) = w {
            wi *= w[i];
        }
        s += wi * x[i].sin();
    }
    match label {
        Some(_) => 2.0 * s,
        None => s,
    }
}

/// Central finite differences of `f` at `p`, one component at a time.
fn central(f: &dyn Fn(&[f64]) -> f64, p: &[f64]) -> Vec<f64> {
    (0..p.len())
        .map(|k| {
            let (mut a, mut b) = (p.to_vec(), p.to_vec());
            a[k] += 1e-6;
            b[k] -= 1e-6;
            (f(&a) - f(&b)) / 2e-6
        })
        .collect()
}

#[test]
fn option_arguments_borrowed_and_owned() {
    let x = vec![0.5, 1.0, -0.7];
    let w = vec![1.0, 2.0, 0.5];
    // A borrowed slice inside an `Option` cannot be perturbed by `test_rule!` (it perturbs what
    // it owns): both modes checked against finite differences here.
    let (v, (gx, gw)) = value_and_gradient!(weighted(&x, Some(&w[..])));
    assert!((v - weighted(&x, Some(&w))).abs() < 1e-14);
    let joint = |p: &[f64]| weighted(&p[..3], Some(&p[3..]));
    let fd = central(&joint, &[x.clone(), w.clone()].concat());
    let gw = gw.expect("a gradient for the weights given");
    for (g, d) in gx.iter().chain(&gw).zip(&fd) {
        assert!((g - d).abs() < 1e-6, "{g} against {d}");
    }
    let (_, d) = value_and_derivative!(
        weighted(&x, Some(&w[..])),
        (&[0.3, -0.2, 0.1][..], Some(vec![0.5, 0.0, -1.0]))
    );
    let along: f64 = [0.3, -0.2, 0.1, 0.5, 0.0, -1.0].iter().zip(&fd).map(|(t, g)| t * g).sum();
    assert!((d - along).abs() < 1e-6, "{d} against {along}");
    test_rule!(weighted(&x, None));
    // The borrowed weights held constant (`test_rule!` cannot perturb them); `x` checked.
    test_rule!(weighted(&x, Some(&w[..])));
    test_rule!(weighted_owned(&x, Some(w.clone())));
    test_rule!(weighted_owned(&x, None));
    let (_, (gx2, _)) = value_and_gradient!(weighted_owned(&x, Some(w.clone())));
    assert_eq!(gx2, gx);

    let (_, (gx, gw, gs, _)) =
        value_and_gradient!(if_let_weights(&x, Some(&w[..]), 1.5, Some("a")));
    let joint = |p: &[f64]| if_let_weights(&p[..3], Some(&p[3..6]), p[6], Some("a"));
    let fd = central(&joint, &[x.clone(), w.clone(), vec![1.5]].concat());
    let gw = gw.expect("a gradient for the weights given");
    for (g, d) in gx.iter().chain(&gw).chain([&gs]).zip(&fd) {
        assert!((g - d).abs() < 1e-6, "{g} against {d}");
    }
    test_rule!(if_let_weights(&x, None, 1.5, None));
}
