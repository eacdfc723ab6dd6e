//! Iterator chains in value position (issue 14): each function is written the way numerical
//! Rust writes it, and `test_rule!` checks both of its rules against finite differences and
//! against each other. The chains are lowered as the `for` loops they stand for
//! (`mooncake-macros/src/differentiable/chains.rs`).

#![allow(clippy::unnecessary_fold, clippy::never_loop)] // written as users write them

use mooncake_runtime::prelude::*;

#[differentiable]
fn sum_of_squares(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>()
}

#[differentiable]
fn sum_sin(x: &[f64]) -> f64 {
    x.iter().map(|v| v.sin()).sum()
}

#[differentiable]
fn sum_sin_path(x: &[f64]) -> f64 {
    x.iter().copied().map(f64::sin).sum()
}

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

#[differentiable]
fn dot_fold(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).fold(0.0, |acc, (x, y)| acc + x * y)
}

#[differentiable]
fn weighted_by_index(x: &[f64]) -> f64 {
    x.iter().enumerate().map(|(i, v)| (i as f64 + 1.0) * v * v).sum()
}

#[differentiable]
fn range_map(x: &[f64]) -> f64 {
    let n = x.len();
    (0..n - 1).map(|i| (x[i + 1] - x[i]).powi(2)).sum::<f64>()
}

#[differentiable]
fn rosenbrock(x: &[f64]) -> f64 {
    (0..x.len() - 1).map(|i| 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2)).sum()
}

#[differentiable]
fn positive_part(x: &[f64]) -> f64 {
    x.iter().filter(|&&v| v > 0.0).map(|v| v * v).sum()
}

#[differentiable]
fn filter_by_value(x: &[f64]) -> f64 {
    x.iter().copied().filter(|&v| v < 0.5).map(|v| v.exp()).sum()
}

/// Predicates that take the item's reference by name, as std's `filter` gives it.
#[differentiable]
fn filter_by_name(x: &[f64]) -> f64 {
    let a: f64 = x.iter().filter(|v| **v > 0.0).map(|v| v * v).sum();
    let b: f64 = x.iter().copied().filter(|v| *v < 0.5).map(|v| v.exp()).sum();
    let c = x.iter().filter(|v| v.abs() > 0.3).fold(0.0, |s, v| s + v.sin());
    a + b * c
}

#[differentiable]
fn product_of(x: &[f64]) -> f64 {
    x.iter().product::<f64>()
}

#[differentiable]
fn product_mapped(x: &[f64]) -> f64 {
    x.iter().map(|v| 1.0 + v * v).product()
}

#[differentiable]
fn max_fold(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

#[differentiable]
fn mean_of_positive(x: &[f64]) -> f64 {
    let n = x.iter().filter(|&&v| v > 0.0).count();
    let s: f64 = x.iter().filter(|&&v| v > 0.0).sum();
    s / n as f64
}

#[differentiable]
fn collected(x: &[f64]) -> f64 {
    let y: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
    let mut s = 0.0;
    for i in 0..y.len() {
        s += y[i] * x[i];
    }
    s
}

#[differentiable]
fn for_each_accumulates(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    x.iter().for_each(|v| s += k * v.cos());
    s
}

#[differentiable]
fn into_iter_of_vec(x: &[f64]) -> f64 {
    let v = vec![x[0] * x[1], x[1], x[2].sin()];
    v.into_iter().map(|t| t * t).sum()
}

#[differentiable]
fn reversed_range(x: &[f64]) -> f64 {
    (0..x.len()).rev().map(|i| x[i] * (i as f64 + 0.5)).fold(0.0, |a, t| 0.5 * a + t)
}

#[differentiable]
fn stepped(x: &[f64]) -> f64 {
    (0..x.len()).step_by(2).map(|i| x[i].exp()).sum()
}

#[differentiable]
fn three_way(a: &[f64], b: &[f64], c: &[f64]) -> f64 {
    a.iter().zip(b.iter()).zip(c.iter()).map(|((x, y), z)| x * y - z).sum()
}

/// Writes through `iter_mut` (forward mode only: reverse mode refuses `iter_mut`, as in `for`
/// loops).
#[differentiable(forward_only)]
fn axpy_in_place(y: &mut [f64], x: &[f64], a: f64) {
    y.iter_mut().zip(x.iter()).for_each(|(yi, xi)| *yi += a * xi * xi);
}

#[differentiable]
fn square(v: f64) -> f64 {
    v * v
}

#[differentiable]
fn calls_in_map(x: &[f64]) -> f64 {
    x.iter().map(|v| square(*v) + 1.0).sum::<f64>().ln()
}

#[differentiable]
fn path_to_user_function(x: &[f64]) -> f64 {
    x.iter().copied().map(square).sum()
}

#[differentiable]
fn nested_chains(a: &[f64], b: &[f64]) -> f64 {
    a.iter().map(|x| b.iter().map(|y| (x - y).powi(2)).sum::<f64>()).sum()
}

#[differentiable]
fn generic_sum<T: Float>(x: &[T]) -> T {
    x.iter().fold(T::ZERO, |acc, v| acc + *v * *v)
}

#[differentiable]
fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    x.iter().map(|v| (v - m).exp()).sum::<f64>().ln() + m
}

#[differentiable]
fn chained_sum(a: &[f64], b: &[f64]) -> f64 {
    a.iter().chain(b.iter()).map(|v| v * v).sum::<f64>()
        + a.iter().chain(b).copied().fold(0.0, |s, v| s * 0.5 + v)
}

#[differentiable]
fn chained_loop(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut k = 0.0;
    for v in a.iter().chain(b.iter().rev()) {
        k += 1.0;
        if *v < 0.0 {
            continue;
        }
        s += k * v.sin();
    }
    s
}

#[differentiable]
fn chained_ranges(x: &[f64]) -> f64 {
    // The ends of `x` (indices 0, 1 and n - 2, n - 1), by ranges.
    let n = x.len();
    (0..2).chain(n - 2..n).map(|i| x[i] * x[i]).sum::<f64>()
}

#[differentiable]
fn chained_max(a: &[f64], b: &[f64]) -> f64 {
    a.iter().chain(b.iter()).copied().max_by(|p, q| p.total_cmp(q)).unwrap()
}

#[differentiable]
fn for_over_adaptors(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for v in x.iter().filter(|v| v.abs() > 0.5) {
        acc += v * v;
    }
    for y in x.iter().map(|v| v * 2.0) {
        if y > 2.0 {
            break;
        }
        if y < -1.0 {
            continue;
        }
        acc += y.exp();
    }
    acc
}

#[differentiable]
fn first_above_by_loop(x: &[f64], t: f64) -> f64 {
    for v in x.iter().copied().filter(|v| *v > t) {
        return v * v;
    }
    -1.0
}

#[differentiable]
fn stepped_elements(x: &[f64]) -> f64 {
    x.iter().step_by(2).map(|v| v * v).sum::<f64>()
        + x.iter().skip(1).step_by(2).sum::<f64>()
        + x.iter().take(4).step_by(3).fold(0.0, |a, v| a + v.sin())
}
#[differentiable]
fn stepped_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().skip(1).step_by(2) {
        s += v.exp();
    }
    s
}
#[differentiable]
fn enumerate_after_adaptors(x: &[f64]) -> f64 {
    let a: f64 = x.iter().map(|v| v.sin()).enumerate().map(|(i, s)| s * (i + 1) as f64).sum();
    let b: f64 =
        x.iter().copied().filter(|v| *v > 0.0).enumerate().map(|(i, v)| v * i as f64).sum();
    let mut c = 0.0;
    for (i, s) in x.iter().map(|v| v * v).enumerate() {
        c += s / (i as f64 + 1.0);
    }
    a + b + c
}
/// Tuples taken apart by `filter`, `map`, `fold` and a `for` loop, in both modes (the parts
/// are bound one by one, so no tuple holding a borrow is kept in a local).
#[differentiable]
fn filters_on_tuples(x: &[f64], y: &[f64]) -> f64 {
    let a: f64 = x.iter().enumerate().filter(|(i, _)| i % 2 == 0).map(|(_, v)| v * v).sum();
    let b: f64 = x.iter().zip(y.iter()).filter(|(p, q)| **p > **q).map(|(p, q)| p - q).sum();
    let c: f64 =
        x.iter().enumerate().filter(|&(i, v)| i > 0 && *v > 0.0).map(|(i, v)| v * i as f64).sum();
    let d = x.iter().zip(y).filter(|(p, _)| p.abs() < 1.0).count() as f64;
    let e: f64 = x.iter().enumerate().fold(0.0, |acc, (i, v)| acc + v * i as f64);
    let mut f = 0.0;
    for (i, v) in x.iter().enumerate().filter(|(_, v)| **v < 0.5) {
        f += v.exp() * i as f64;
    }
    a + b + c + d + e + f
}

/// Generic code converting constants with `T::from_f64` (the runtime's conversion has rules for
/// any `T: Float`), checked in `f64` and `f32`.
#[differentiable]
fn generic_half_squares<T: Float>(x: &[T]) -> T {
    let half = T::from_f64(0.5);
    x.iter().fold(T::ZERO, |acc, v| acc + half * *v * *v) * T::from_f64(2.0)
}

/// Generic code starting an accumulator at `T::zero()` (the prelude's zero of a float type,
/// which was a type error in the expansion: no `zero_frule`), checked in `f64` and `f32`.
#[differentiable]
fn generic_weighted<T: Float>(x: &[T], w: T) -> T {
    let mut s = T::zero();
    for v in x.iter() {
        s = s * w + *v * *v;
    }
    s + x.iter().fold(T::zero(), |a, v| a + v.sin())
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn chains_have_the_right_gradients() {
    let (x, y, z) = (xs(5, 0.7), xs(5, 1.3), xs(5, 2.1));
    test_rule!(sum_of_squares(&x));
    test_rule!(sum_sin(&x));
    test_rule!(sum_sin_path(&x));
    test_rule!(dot(&x, &y));
    test_rule!(dot_fold(&x, &y));
    test_rule!(weighted_by_index(&x));
    test_rule!(range_map(&x));
    test_rule!(rosenbrock(&x));
    test_rule!(positive_part(&x));
    test_rule!(filter_by_value(&x));
    test_rule!(filter_by_name(&x));
    assert_eq!(value_and_gradient!(filter_by_name(&x)).0, filter_by_name(&x));
    test_rule!(product_of(&x));
    test_rule!(product_mapped(&x));
    test_rule!(max_fold(&x));
    test_rule!(mean_of_positive(&x));
    test_rule!(collected(&x));
    test_rule!(for_each_accumulates(&x, 0.7));
    test_rule!(into_iter_of_vec(&x));
    test_rule!(reversed_range(&x));
    test_rule!(stepped(&x));
    test_rule!(three_way(&x, &y, &z));
    test_rule!(calls_in_map(&x));
    test_rule!(path_to_user_function(&x));
    test_rule!(nested_chains(&x, &y));
    test_rule!(generic_sum(&x));
    test_rule!(log_sum_exp(&x));
    test_rule!(chained_sum(&x, &y));
    test_rule!(chained_loop(&x, &y));
    test_rule!(chained_ranges(&x));
    test_rule!(chained_max(&x, &y));
    test_rule!(for_over_adaptors(&x));
    test_rule!(stepped_elements(&x));
    test_rule!(stepped_loop(&x));
    test_rule!(enumerate_after_adaptors(&x));
    test_rule!(filters_on_tuples(&x, &y));
    test_rule!(generic_half_squares(&x));
    test_rule!(generic_weighted(&x, 0.7));
    let xf32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (v32, (g32, _)) = value_and_gradient!(generic_weighted(&xf32, 0.7f32));
    let (v64, (g64, _)) = value_and_gradient!(generic_weighted(&x, 0.7));
    assert!((f64::from(v32) - v64).abs() < 1e-5);
    assert!(g32.iter().zip(&g64).all(|(a, b)| (f64::from(*a) - b).abs() < 1e-5));
    let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (v, (g,)) = value_and_gradient!(generic_half_squares(&xf));
    assert!((v - xf.iter().map(|a| a * a).sum::<f32>()).abs() < 1e-5);
    assert!(g.iter().zip(&xf).all(|(g, a)| (g - 2.0 * a).abs() < 1e-5));
    assert_eq!(value_and_gradient!(filters_on_tuples(&x, &y)).0, filters_on_tuples(&x, &y));
    let a: f64 = x.iter().map(|v| v.sin()).enumerate().map(|(i, s)| s * (i + 1) as f64).sum();
    let b: f64 =
        x.iter().copied().filter(|v| *v > 0.0).enumerate().map(|(i, v)| v * i as f64).sum();
    let c: f64 = x.iter().map(|v| v * v).enumerate().map(|(i, s)| s / (i as f64 + 1.0)).sum();
    assert!((value_and_gradient!(enumerate_after_adaptors(&x)).0 - (a + b + c)).abs() < 1e-12);
    let stepped: f64 = x.iter().step_by(2).map(|v| v * v).sum::<f64>()
        + x.iter().skip(1).step_by(2).sum::<f64>()
        + x.iter().take(4).step_by(3).fold(0.0, |a, v| a + v.sin());
    assert_eq!(value_and_gradient!(stepped_elements(&x)).0, stepped);
    assert_eq!(value_and_gradient!(for_over_adaptors(&x)).0, for_over_adaptors(&x));
    for t in [0.35, 5.0] {
        test_rule!(first_above_by_loop(&x, t));
        assert_eq!(value_and_gradient!(first_above_by_loop(&x, t)).0, first_above_by_loop(&x, t));
    }
    let std_sum = x.iter().chain(y.iter()).map(|v| v * v).sum::<f64>()
        + x.iter().chain(&y).copied().fold(0.0, |s, v| s * 0.5 + v);
    assert_eq!(value_and_gradient!(chained_sum(&x, &y)).0, std_sum);
    assert_eq!(value_and_gradient!(chained_loop(&x, &y)).0, chained_loop(&x, &y));
    let m = x.iter().chain(y.iter()).copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(value_and_gradient!(chained_max(&x, &y)).0, m);
    let acc = xs(5, 0.3);
    test_rule!(axpy_in_place(&mut acc, &x, 1.5), mode = forward);
}

/// The values are the chains' own (the primal function is the user's code, untouched), and a
/// gradient by hand where it is short.
#[test]
fn chains_compute_what_they_say() {
    let x = [0.5, -2.0, 1.5];
    let (v, (g,)) = value_and_gradient!(positive_part(&x));
    assert_eq!(v, 0.25 + 2.25);
    assert_eq!(g, [1.0, 0.0, 3.0]);
    let (m, (g,)) = value_and_gradient!(max_fold(&x));
    assert_eq!(m, 1.5);
    assert_eq!(g, [0.0, 0.0, 1.0]);
    let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (v, (g,)) = value_and_gradient!(generic_sum(&xf));
    assert!((v - 6.5).abs() < 1e-6);
    assert_eq!(g, [1.0f32, -4.0, 3.0]);
}

// ---- skip, take and rev over elements -------------------------------------------------------

#[differentiable]
fn skip_take(x: &[f64]) -> f64 {
    x.iter().skip(1).take(3).map(|v| v * v).sum()
}

#[differentiable]
fn reversed_elements(x: &[f64]) -> f64 {
    x.iter().rev().fold(0.0, |acc, v| 0.5 * acc + v)
}

#[differentiable]
fn from_the_back(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, (a, b)) in x.iter().zip(y.iter()).enumerate().rev().skip(1).take(2) {
        s += (i as f64 + 1.0) * a * b;
    }
    s
}

#[differentiable]
fn take_more_than_there_is(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter().skip(2).take(100) {
        s += v.sin();
    }
    for v in x.iter().take(2).rev().skip(5) {
        s += v.cos();
    }
    s
}

#[test]
fn windows_of_elements() {
    let (x, y) = (xs(5, 0.7), xs(5, 1.3));
    test_rule!(skip_take(&x));
    test_rule!(reversed_elements(&x));
    test_rule!(from_the_back(&x, &y));
    test_rule!(take_more_than_there_is(&x));
    // Against the std iterators the primal runs.
    let s: f64 = x.iter().skip(1).take(3).map(|v| v * v).sum();
    assert_eq!(value_and_gradient!(skip_take(&x)).0, s);
    let f: f64 = x.iter().rev().fold(0.0, |acc, v| 0.5 * acc + v);
    assert_eq!(value_and_gradient!(reversed_elements(&x)).0, f);
    assert_eq!(value_and_gradient!(from_the_back(&x, &y)).0, from_the_back(&x, &y));
    assert_eq!(value_and_gradient!(take_more_than_there_is(&x)).0, take_more_than_there_is(&x));
}

// ---- in models -------------------------------------------------------------------------------
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Model {
    w: Vec<f64>,
    b: f64,
}
#[differentiable]
impl Model {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x.iter()).map(|(w, x)| w * x).sum::<f64>() + self.b
    }
}
#[differentiable]
fn loss(m: &Model, xs: &[f64], ys: &[f64]) -> f64 {
    let n = ys.len();
    let d = xs.len() / n;
    (0..n)
        .map(|i| {
            let mut p = m.b;
            for j in 0..d {
                p += m.w[j] * xs[i * d + j];
            }
            (p - ys[i]).powi(2)
        })
        .sum::<f64>()
        / n as f64
}
#[differentiable]
fn by_value(v: Vec<f64>, k: f64) -> f64 {
    v.iter().map(|&t| t * k).fold(0.0, |a, b| a + b * b)
}
#[differentiable]
fn f32s(x: &[f32]) -> f32 {
    x.iter().map(|v| v.exp()).sum::<f32>().ln()
}
#[differentiable]
fn method_chain(m: &Model, x: &[f64]) -> f64 {
    let p = m.predict(x);
    let l1: f64 = m.w.iter().map(|w| w.abs()).sum();
    p * p + 0.1 * l1
}
/// Chains in a model's method and loss, over a field, a `Vec` by value, `f32`.
#[test]
fn chains_in_models() {
    let m = Model { w: vec![0.3, -0.2], b: 0.1 };
    let xs = vec![1.0, 2.0, -1.0, 0.5, 0.3, 0.3];
    let ys = vec![0.5, 0.1, -0.2];
    test_rule!(loss(&m, &xs, &ys));
    test_rule!(by_value(vec![0.3, 0.4, -1.0], 0.7));
    let xf = vec![0.3f32, 0.1];
    let (v, (g,)) = value_and_gradient!(f32s(&xf));
    let e = (0.3f32.exp(), 0.1f32.exp());
    assert!((v - (e.0 + e.1).ln()).abs() < 1e-6);
    assert!((g[0] - e.0 / (e.0 + e.1)).abs() < 1e-6);
    let x2 = xs[..2].to_vec();
    test_rule!(method_chain(&m, &x2));
}

/// A series summed until its terms are small: `take_while` on the terms.
#[differentiable]
fn series_until_small(a: f64, r: f64) -> f64 {
    (0..60).map(|k| a * r.powi(k)).take_while(|t| t.abs() > 1e-3).sum()
}
/// The tail of the data after a leading run of negatives: `skip_while`.
#[differentiable]
fn after_leading_negatives(x: &[f64]) -> f64 {
    x.iter().skip_while(|v| **v < 0.0).map(|v| v * v).sum()
}
/// `take_while` with a pattern, then `enumerate` counting the items it lets through, and a
/// `for` loop over `skip_while` with a `break`.
#[differentiable]
fn weighted_prefix(x: &[f64], limit: f64) -> f64 {
    let head: f64 =
        x.iter().take_while(|&&v| v < limit).enumerate().map(|(i, v)| (i as f64 + 1.0) * v).sum();
    let mut tail = 0.0;
    for v in x.iter().skip_while(|v| v.abs() < 0.5) {
        if *v > 3.0 {
            break;
        }
        tail += v.sin();
    }
    head + tail
}
/// Over a zip taken apart by the predicate, and over a chain of two slices (the second stops at
/// once once the first has stopped).
#[differentiable]
fn while_on_pairs(x: &[f64], y: &[f64]) -> f64 {
    let a: f64 = x.iter().zip(y.iter()).take_while(|(u, v)| *u < *v).map(|(u, v)| u * v).sum();
    let n = x.iter().chain(y.iter()).take_while(|v| **v < 1.0).count();
    let b: f64 = x.iter().chain(y.iter()).take_while(|v| **v < 1.0).map(|v| v.exp()).sum();
    a + b * n as f64
}

/// `take_while` and `skip_while` in chains and `for` loops, against the std iterators the
/// primal runs and against finite differences.
#[test]
fn take_and_skip_while() {
    test_rule!(series_until_small(0.8, 0.6));
    test_rule!(series_until_small(-1.5, -0.7));
    let x = vec![-0.3, -1.2, 0.4, 2.0, -0.1, 3.5, 0.7];
    let y = vec![0.1, 0.6, 0.2, 1.4, 0.9];
    test_rule!(after_leading_negatives(&x));
    test_rule!(weighted_prefix(&x, 0.3));
    test_rule!(weighted_prefix(&y, 1.0));
    test_rule!(while_on_pairs(&x, &y));
    test_rule!(while_on_pairs(&y, &x));
    let s: f64 = x.iter().skip_while(|v| **v < 0.0).map(|v| v * v).sum();
    assert_eq!(value_and_gradient!(after_leading_negatives(&x)).0, s);
    let (v, (g,)) = value_and_gradient!(after_leading_negatives(&x));
    assert_eq!(v, s);
    assert_eq!(g, [0.0, 0.0, 0.8, 4.0, -0.2, 7.0, 1.4]);
    let t: f64 = (0..60).map(|k| 0.8 * 0.6f64.powi(k)).take_while(|t| t.abs() > 1e-3).sum();
    assert_eq!(value_and_derivative!(series_until_small(0.8, 0.6), (1.0, 0.0)).0, t);
    let n = x.iter().chain(y.iter()).take_while(|v| **v < 1.0).count();
    assert_eq!(n, 3);
    let w = value_and_gradient!(while_on_pairs(&x, &y)).0;
    let a: f64 = x.iter().zip(y.iter()).take_while(|(u, v)| *u < *v).map(|(u, v)| u * v).sum();
    let b: f64 = x.iter().chain(y.iter()).take_while(|v| **v < 1.0).map(|v| v.exp()).sum();
    assert_eq!(a, -0.3 * 0.1 - 1.2 * 0.6);
    assert!((w - (a + b * n as f64)).abs() < 1e-12);
}

/// Closures whose parameter is typed `&f64`, as `x.iter()` hands items to them: inline
/// (`map(|v: &f64| ..)`), bound by `let` and passed by name (`map(f)`, `fold(0.0, g)`), and
/// called on a borrow (`f(&x[1])`). Found by probe programs: a type error in reverse mode, and
/// a wrong refusal of the inline form.
#[differentiable]
fn reference_parameters(x: &[f64], r: f64) -> f64 {
    let f = |v: &f64| *v * r + v.sin();
    let g = |acc: f64, v: &f64| acc + v * v;
    let inline = x.iter().map(|v: &f64| v * r).sum::<f64>();
    inline + x.iter().map(f).sum::<f64>() + x.iter().fold(0.0, g) + f(&x[1])
}

#[test]
fn closures_with_reference_parameters() {
    let x = [0.3, -1.2, 2.0, 0.7];
    test_rule!(reference_parameters(&x, 0.9));
    let direct = |x: &[f64], r: f64| {
        let f = |v: f64| v * r + v.sin();
        x.iter().map(|v| v * r).sum::<f64>()
            + x.iter().map(|&v| f(v)).sum::<f64>()
            + x.iter().map(|v| v * v).sum::<f64>()
            + f(x[1])
    };
    approx::assert_relative_eq!(
        reference_parameters(&x, 0.9),
        direct(&x, 0.9),
        max_relative = 1e-12
    );
}

/// The free function `zip` (`std::iter::zip(x, y)`, or `zip` brought in by `use`) as a chain's
/// source and a `for` loop's: read as `x.iter().zip(y.iter())`. Was refused with the chain
/// message (at the adaptor after it) until probe programs found it.
#[differentiable]
fn free_zip(x: &[f64], y: &[f64]) -> f64 {
    use std::iter::zip;
    let s: f64 = std::iter::zip(x, y).map(|(a, b)| a * b).sum();
    let mut t = 0.0;
    for (a, b) in zip(x, y) {
        t += a * b * b;
    }
    s + t
}

#[test]
fn free_zip_as_a_source() {
    let (x, y) = (vec![0.3, -1.2, 2.0], vec![1.5, 0.4, -0.8]);
    test_rule!(free_zip(&x, &y));
    let (v, (gx, gy)) = value_and_gradient!(free_zip(&x, &y));
    let direct = x.iter().zip(&y).map(|(a, b)| a * b + a * b * b).sum::<f64>();
    assert!((v - direct).abs() < 1e-12);
    for i in 0..3 {
        assert!((gx[i] - (y[i] + y[i] * y[i])).abs() < 1e-12);
        assert!((gy[i] - (x[i] + 2.0 * x[i] * y[i])).abs() < 1e-12);
    }
}

/// A `for` loop over a `zip` whose side is narrowed by `skip` / `take` (consecutive
/// differences, `x.iter().skip(1).zip(x.iter())`): read as the sub-slice's elements. Was
/// refused ("`.zip()` is only supported between `x.iter()`s") until probe programs found it.
#[differentiable]
fn consecutive_differences(x: &[f64], w: &[f64]) -> f64 {
    let mut s = 0.0;
    for (a, b) in x.iter().skip(1).zip(x.iter()) {
        s += (a - b) * (a - b);
    }
    for (v, c) in x.iter().zip(w.iter().take(2)) {
        s += v * c;
    }
    s
}

#[test]
fn zipped_sides_narrowed() {
    let (x, w) = (vec![0.3, -1.2, 2.0, 0.7], vec![1.5, -0.5, 9.0]);
    test_rule!(consecutive_differences(&x, &w));
    let (v, (gx, gw)) = value_and_gradient!(consecutive_differences(&x, &w));
    let direct: f64 =
        x.windows(2).map(|p| (p[1] - p[0]).powi(2)).sum::<f64>() + x[0] * w[0] + x[1] * w[1];
    assert!((v - direct).abs() < 1e-12);
    assert!((gx[3] - 2.0 * (x[3] - x[2])).abs() < 1e-12);
    assert!((gx[0] - (-2.0 * (x[1] - x[0]) + w[0])).abs() < 1e-12);
    assert!(gw[2] == 0.0 && (gw[1] - x[1]).abs() < 1e-12);
}

/// `filter_map` (the values of the items its closure gives `Some` for), after a `zip` and
/// followed by a `map`, and as a `for` loop's source. Was refused with the chain message until
/// probe programs found it.
#[differentiable]
fn filtered_maps(x: &[f64], mask: &[bool]) -> f64 {
    let a: f64 =
        x.iter().zip(mask.iter()).filter_map(|(v, m)| if *m { Some(v * v) } else { None }).sum();
    let b: f64 =
        x.iter().filter_map(|&v| if v > 0.0 { Some(v.ln()) } else { None }).map(|l| 2.0 * l).sum();
    let mut c = 0.0;
    for w in x.iter().filter_map(|v| if *v < 1.0 { Some(3.0 * v) } else { None }) {
        c += w * w;
    }
    a + b + c
}

#[test]
fn filter_map_in_chains_and_loops() {
    let (x, m) = (vec![0.3, -1.2, 2.0, 0.7], vec![true, false, true, true]);
    test_rule!(filtered_maps(&x, &m));
    let (v, (g, _)) = value_and_gradient!(filtered_maps(&x, &m));
    let direct = (0.09 + 4.0 + 0.49)
        + 2.0 * (0.3f64.ln() + 2.0f64.ln() + 0.7f64.ln())
        + 9.0 * (0.09 + 1.44 + 0.49);
    assert!((v - direct).abs() < 1e-12);
    // x1 = -1.2: masked out and not positive, only the third term: 18 x1.
    assert!((g[1] - 18.0 * -1.2).abs() < 1e-12);
    // x2 = 2.0: 2 x2 + 2 / x2.
    assert!((g[2] - (4.0 + 1.0)).abs() < 1e-12);
}

/// `enumerate()` after `rev()` / `skip(k)`, in a `for` loop (`*v`, and a `&v` pattern) and in a
/// chain whose closures take the pair apart: the count and the item are bound as two parts, no
/// tuple holding a borrow. Reverse mode failed on each (a type error, or a refusal of the `&v`
/// pattern) until probe programs found it.
#[differentiable]
fn counted_backwards(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (k, v) in x.iter().rev().enumerate() {
        s += *v * k as f64;
    }
    for (k, &v) in x.iter().skip(1).enumerate() {
        s += v * v * (k + 1) as f64;
    }
    let t: f64 =
        x.iter().rev().enumerate().filter(|(_, v)| **v > 0.0).map(|(k, v)| v * k as f64).sum();
    s + t
}

#[test]
fn enumerate_after_rev_and_skip() {
    let x = [0.2, -1.5, 0.8, 1.1];
    test_rule!(counted_backwards(&x));
    let (v, (g,)) = value_and_gradient!(counted_backwards(&x));
    let n = x.len();
    let mut direct = 0.0;
    let mut g0 = vec![0.0; n];
    for (i, xi) in x.iter().enumerate() {
        let k = (n - 1 - i) as f64;
        direct += xi * k + if *xi > 0.0 { xi * k } else { 0.0 };
        g0[i] += k + if *xi > 0.0 { k } else { 0.0 };
        if i >= 1 {
            direct += xi * xi * i as f64;
            g0[i] += 2.0 * xi * i as f64;
        }
    }
    assert!((v - direct).abs() < 1e-12);
    for (a, b) in g.iter().zip(&g0) {
        assert!((a - b).abs() < 1e-12);
    }
}

/// Generic code converting a count with `T::from_i32` (the runtime's conversion, with rules for
/// any `T: Float`; it had none), and a generic function marked `reverse_only` (whose nested
/// derivative named a forward rule it does not have).
#[differentiable]
fn generic_counted<T: Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for (i, v) in x.iter().enumerate() {
        s += T::from_i32(i as i32 + 1) * *v * *v;
    }
    s
}

#[differentiable(reverse_only)]
fn generic_reverse_only<T: Float>(x: T) -> T {
    x * x.sin()
}

#[test]
fn generic_conversions_of_counts() {
    let x = xs(4, 0.7);
    test_rule!(generic_counted(&x));
    let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    test_rule!(generic_counted(&xf));
    test_rule!(generic_reverse_only(0.5_f64), mode = reverse);
    let (_, (g,)) = value_and_gradient!(generic_counted(&x));
    for (i, (gi, v)) in g.iter().zip(&x).enumerate() {
        assert!((gi - 2.0 * (i + 1) as f64 * v).abs() < 1e-12);
    }
}

#[differentiable]
fn square_of_ref(v: &f64) -> f64 {
    v * v
}

#[differentiable]
fn accumulate_ref(acc: f64, v: &f64) -> f64 {
    acc + v.sin()
}

/// A `#[differentiable]` function taking `&f64` given by name to `map` and `fold` over
/// `x.iter()` (as Rust hands it the references): was a type error in both modes until probe
/// programs found it.
#[differentiable]
fn named_functions_of_references(x: &[f64]) -> f64 {
    x.iter().map(square_of_ref).sum::<f64>() + x.iter().fold(0.0, accumulate_ref)
}

#[test]
fn named_functions_given_references() {
    let x = xs(4, 0.9);
    test_rule!(named_functions_of_references(&x));
    let (_, (g,)) = value_and_gradient!(named_functions_of_references(&x));
    for (gi, v) in g.iter().zip(&x) {
        assert!((gi - (2.0 * v + v.cos())).abs() < 1e-12);
    }
}
