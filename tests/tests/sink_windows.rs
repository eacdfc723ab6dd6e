//! Index loops whose reverse sweep adds into a window of the argument's gradient (issue 13,
//! `reverse/windows.rs`): the loads of a loop's iterations are at consecutive indices (a counter
//! stepped by one, plus offsets and a base the loop never changes), so the sweep cuts the
//! gradient once per loop and adds at slots the optimiser proves in bounds. Every shape the
//! analysis accepts is here, with the ones next to them it must refuse; `test_rule!` checks both
//! modes against finite differences and each other, and in these debug builds every add checks
//! that its slot is the index the load used.

#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)] // written as users write them

use mooncake_runtime::prelude::*;

/// `while` over indices, the step last.
#[differentiable]
fn sum_while(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i];
        i += 1;
    }
    s
}

/// `for` over a range, two arguments (a dot product).
#[differentiable]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    s
}

/// Offsets on both sides of the counter into one argument (a stencil), the loop starting at 1.
#[differentiable]
fn stencil(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() - 1 {
        let d = x[i - 1] - 2.0 * x[i] + x[i + 1];
        s += d * d;
    }
    s
}

/// The step before the loads (`i += 1` first), so they see the counter one further along.
#[differentiable]
fn step_first(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i + 1 < x.len() {
        i += 1;
        s += x[i] * x[i - 1];
    }
    s
}

/// A counter stepped down.
#[differentiable]
fn downwards(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = x.len();
    while i > 0 {
        i -= 1;
        s = s * 0.5 + x[i] * x[i];
    }
    s
}

/// A counter stepped down, the loads before the step.
#[differentiable]
fn downwards_late_step(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = x.len() - 1;
    while i > 0 {
        s += x[i] * x[i - 1];
        i -= 1;
    }
    s
}

/// Rows of a matrix: the index `r * n + c` has a base the inner loop never changes.
#[differentiable]
fn row_sums_squared(a: &[f64], n: usize) -> f64 {
    let rows = a.len() / n;
    let mut total = 0.0;
    for r in 0..rows {
        let mut row = 0.0;
        for c in 0..n {
            row += a[r * n + c];
        }
        total += row * row;
    }
    total
}

/// A matrix-vector product written with indices, its result squared.
#[differentiable]
fn matvec_norm(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..a.len() / n {
        let mut y = 0.0;
        for j in 0..n {
            y += a[i * n + j] * x[j];
        }
        s += y * y;
    }
    s
}

/// A loop that may run no complete iteration at all (`start` past the end), and one whose
/// counter starts past the buffer on its way down: no window may be cut out of bounds.
#[differentiable]
fn maybe_empty(x: &[f64], start: usize) -> f64 {
    let mut s = 0.0;
    let mut i = start;
    while i < x.len() {
        s += x[i].sin();
        i += 1;
    }
    s
}

/// A load under a branch: its block does not run every iteration, so the loop gets no window
/// for that argument (and must still be right).
#[differentiable]
fn branch_inside(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s += y[i];
        }
        s += x[i] * 0.5;
    }
    s
}

/// A `break` out of the loop: no window (the iterations are not all complete).
#[differentiable]
fn early_break(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
        if s > 2.0 {
            break;
        }
    }
    s
}

/// A stride of two (`x[2 i]`): not consecutive, no window.
#[differentiable]
fn strided(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() / 2 {
        s += x[2 * i] * x[2 * i + 1];
    }
    s
}

/// The counter stepped by two: no window.
#[differentiable]
fn step_two(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() {
        s += x[i];
        i += 2;
    }
    s
}

/// Two loads at one offset: two adds into each slot per iteration, so the window adds even
/// into a gradient that starts at zero.
#[differentiable]
fn squares(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
    }
    s
}

/// The inner loop's window is cut once per outer iteration, over the same slots: only the
/// first cut may write them.
#[differentiable]
fn repeated_sweeps(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        let w = k as f64 + 0.5;
        for i in 0..x.len() {
            s += w * x[i].sin();
        }
    }
    s
}

/// A window and a rule (`sum`) adding into the same gradient.
#[differentiable]
fn window_and_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i].cos();
    }
    s * x.iter().sum::<f64>()
}

/// Two calls whose pullbacks add into one gradient, each through its own window.
#[differentiable]
fn two_calls(x: &[f64]) -> f64 {
    sum_while(x) + 2.0 * repeated_sweeps(x)
}

/// `sum` twice: the first pullback writes the gradient, the second adds.
#[differentiable]
fn sum_twice(x: &[f64]) -> f64 {
    let a = x.iter().sum::<f64>();
    let b = x.iter().sum::<f64>();
    a * b + a
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|k| ((k as f64 + 1.0) * seed).sin() * 1.3 + 0.1).collect()
}

#[test]
fn loops_with_windows() {
    for n in [1, 2, 5, 9] {
        let (x, y) = (xs(n, 0.7), xs(n, 1.9));
        test_rule!(sum_while(&x));
        test_rule!(dot(&x, &y));
        test_rule!(downwards(&x));
        test_rule!(maybe_empty(&x, 0));
        test_rule!(maybe_empty(&x, 1));
        if n >= 2 {
            test_rule!(stencil(&x));
            test_rule!(step_first(&x));
            test_rule!(downwards_late_step(&x));
        }
    }
}

#[test]
fn loops_over_rows() {
    for (rows, n) in [(1, 1), (2, 3), (4, 2), (3, 5)] {
        let a = xs(rows * n, 0.45);
        let x = xs(n, 1.1);
        test_rule!(row_sums_squared(&a, n));
        test_rule!(matvec_norm(&a, &x));
    }
}

#[test]
fn loops_without_complete_iterations() {
    let x = xs(3, 0.3);
    // Past the end: the loop's header runs once, no iteration completes.
    test_rule!(maybe_empty(&x, 3));
    test_rule!(maybe_empty(&x, 7));
    let (v, (g, _)) = value_and_gradient!(maybe_empty(&x, 7));
    assert_eq!(v, 0.0);
    assert_eq!(g, vec![0.0; 3]);
    let (v, (g, _)) = value_and_gradient!(maybe_empty(&x, 2));
    assert_eq!(v, x[2].sin());
    assert_eq!(g, vec![0.0, 0.0, x[2].cos()]);
}

#[test]
fn loops_the_windows_refuse() {
    for n in [1, 4, 7] {
        let (x, y) = (xs(n, 0.9), xs(n, 0.35));
        test_rule!(branch_inside(&x, &y));
        test_rule!(early_break(&x));
        test_rule!(strided(&x));
        test_rule!(step_two(&x));
    }
}

#[test]
fn windows_with_constant_arguments() {
    // `Const(..)`: the constant's gradient is not wanted, its sink holds nothing, and its
    // window is empty.
    let (x, y) = (xs(6, 0.8), xs(6, 0.2));
    let (v, (gx, gy)) = value_and_gradient!(dot(&x, Const(&y)));
    let expect: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    assert!((v - expect).abs() < 1e-12);
    assert_eq!(gx, y);
    assert_eq!(gy, NoTangent);
    let (_, (gx, gy)) = value_and_gradient!(dot(Const(&x), &y));
    assert_eq!(gx, NoTangent);
    assert_eq!(gy, x);
}

#[test]
fn gradients_that_start_at_zero() {
    // The first add into a gradient known to be zero writes (a window cut from a zero sink
    // whose loop adds once per slot, `sum`'s pullback into a zero shadow); every later add
    // adds. Checked against finite differences and the forward mode, and prepared gradients
    // repeated through one cache against the plain one.
    for n in [1, 3, 8] {
        let mut cache = GradientCache::new();
        let x = xs(n, 0.55);
        test_rule!(squares(&x));
        test_rule!(repeated_sweeps(&x));
        test_rule!(window_and_sum(&x));
        test_rule!(two_calls(&x));
        test_rule!(sum_twice(&x));
        let (v, (g,)) = value_and_gradient!(two_calls(&x));
        for _ in 0..3 {
            let (vc, (gc,)) = value_and_gradient!(two_calls(&x), cache = &mut cache);
            assert_eq!(vc, v);
            assert_eq!(*gc, g);
        }
        let expect: Vec<f64> = x.iter().map(|v| 1.0 + 2.0 * 4.5 * v.cos()).collect();
        for (a, b) in g.iter().zip(&expect) {
            assert!((a - b).abs() < 1e-12, "{g:?} against {expect:?}");
        }
    }
}
