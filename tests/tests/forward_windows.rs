//! Counted loops whose forward sweep (in reverse mode) loads and stores through windows cut at
//! the loop's entry (issue 13, `reverse/windows.rs`, `Of::FwdArg` and `Of::FwdBuilt`): a loop
//! tested `c < n`, its counter stepped up by one and nothing leaving it early, runs `n - c`
//! iterations, known before it starts, so the elements its loads and stores reach at the counter
//! are cut once. `test_rule!` checks both modes against finite differences and each other (in
//! these debug builds every access checks that its slot is the index the primal used), and a
//! loop that reads past the end panics with the primal's message.

#![allow(clippy::needless_range_loop)] // written as users write them

use mooncake_runtime::prelude::*;

/// Loads at the counter and ahead of it, from two arguments.
#[differentiable]
fn shifted_dot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..y.len() {
        s += x[i + 2] * y[i];
    }
    s
}

/// A loop from a start that may lie past its end.
#[differentiable]
fn tail_sum(x: &[f64], start: usize) -> f64 {
    let mut s = 0.0;
    for i in start..x.len() {
        s += x[i] * x[i];
    }
    s
}

/// A buffer built in the body, written and read back in the same loop.
#[differentiable]
fn write_then_read(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = vec![0.0; n];
    let mut s = 0.0;
    for i in 0..n {
        k[i] = x[i].sin();
        s += k[i] * 2.0;
    }
    s + k.iter().sum::<f64>()
}

/// Rows of a matrix: the inner loop's window starts at a base the outer counter sets.
#[differentiable]
fn matvec_sq(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for r in 0..a.len() / n {
        let mut row = 0.0;
        for c in 0..n {
            row += a[r * n + c] * x[c];
        }
        s += row * row;
    }
    s
}

/// A `while` loop written with its test and step, as the `for` loops lower.
#[differentiable]
fn while_counted(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 1;
    while i < x.len() {
        s += x[i] * x[i - 1];
        i += 1;
    }
    s
}

/// An argument held by value, an array behind a reference, a buffer field of a struct and a
/// generic element type: each loaded at the counter through a window of its own kind.
#[differentiable]
fn by_value(x: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
    }
    s
}

#[differentiable]
fn array_ref(x: &[f64; 4], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += x[i] * y[i];
    }
    s
}

#[derive(Clone, Debug, Tangent)]
struct Weights {
    w: Vec<f64>,
    n: usize,
}

#[differentiable]
fn field_loads(p: &Weights, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..p.n {
        s += p.w[i] * x[i].sin();
    }
    s
}

#[differentiable]
fn generic_dot<T: Float>(x: &[T], y: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    s
}

/// A loop told to read past the end of its argument.
#[differentiable]
fn reads_past(x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += x[i] * x[i];
    }
    s
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|k| ((k as f64 + 1.0) * seed).sin() * 1.3 + 0.1).collect()
}

#[test]
fn counted_loops() {
    for n in [1, 2, 5, 9] {
        let (x, y) = (xs(n + 2, 0.7), xs(n, 1.9));
        test_rule!(shifted_dot(&x, &y));
        for start in [0, 1, n, n + 3] {
            test_rule!(tail_sum(&y, start));
        }
        test_rule!(write_then_read(&y));
        test_rule!(while_counted(&y));
        test_rule!(reads_past(&y, n));
        test_rule!(by_value(y.clone()));
        test_rule!(generic_dot(&x[..n], &y));
        let w = Weights { w: x.clone(), n };
        test_rule!(field_loads(&w, &y));
        for rows in [1, 3] {
            let a = xs(rows * n, 0.45);
            test_rule!(matvec_sq(&a, &y));
        }
    }
}

#[test]
fn windows_of_arrays() {
    let (x, y) = ([0.3, -1.2, 0.7, 2.0], xs(5, 0.9));
    test_rule!(array_ref(&x, &y));
}

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("expected a panic");
    match (err.downcast_ref::<String>(), err.downcast_ref::<&str>()) {
        (Some(s), _) => s.clone(),
        (None, Some(s)) => s.to_string(),
        _ => String::from("<not a string>"),
    }
}

#[test]
fn reading_past_the_end_panics_as_the_primal_does() {
    let x = xs(3, 0.5);
    let primal = panic_message(|| {
        reads_past(&x, 5);
    });
    let reverse = panic_message(|| {
        let _ = value_and_gradient!(reads_past(&x, 5));
    });
    assert_eq!(primal, "index out of bounds: the len is 3 but the index is 3");
    assert_eq!(reverse, primal);
}
