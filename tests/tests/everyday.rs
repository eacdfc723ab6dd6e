//! Everyday numerical Rust (issue 14): small functions as they are written in the ecosystem
//! (softmax, log-sum-exp, standard deviation, axpy through `for_each`, rows of a matrix as
//! `Vec`s mapped to dot products, `for &v in x`, medians and trimmed means through `sort_by`,
//! a likelihood through a struct's method, Huber loss, Horner's rule, running sums by `scan`),
//! each checked by `test_rule!` in both modes.

#![allow(clippy::ptr_arg, clippy::needless_range_loop, clippy::unnecessary_sort_by)]
use mooncake_runtime::prelude::*;

#[differentiable]
fn dot_zip(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}
#[differentiable]
fn softmax(x: &[f64]) -> Vec<f64> {
    let v: Vec<f64> = x.iter().map(|a| a.exp()).collect();
    let z: f64 = v.iter().sum();
    v.iter().map(|e| e / z).collect::<Vec<f64>>()
}
#[differentiable]
fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::MIN, f64::max);
    let y: Vec<f64> = x.iter().map(|&v| (v - m).exp()).collect();
    y.iter().sum::<f64>().ln() + m
}
#[differentiable]
fn axpy_for_each(y: &mut [f64], x: &[f64], a: f64) {
    y.iter_mut().zip(x.iter()).for_each(|(yi, xi)| *yi += a * xi);
}
#[differentiable]
fn tanh_into(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.tanh();
    }
    out
}
#[differentiable]
fn std_dev(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt()
}
#[differentiable]
fn weighted_after_swap(x: &[f64]) -> f64 {
    let mut sorted = x.to_vec();
    sorted.swap(0, 1);
    sorted.iter().enumerate().map(|(i, v)| v * (i + 1) as f64).sum()
}
#[differentiable]
fn mat_vec_rows(x: &[f64], w: &[Vec<f64>]) -> Vec<f64> {
    w.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>()).collect()
}
#[differentiable]
fn by_value_patterns(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for &v in x {
        acc += v * v;
    }
    for (i, &v) in x.iter().enumerate() {
        acc += v * i as f64;
    }
    acc
}

#[test]
fn everyday_functions_have_the_right_gradients() {
    let x = vec![0.3, -0.7, 1.1, 0.4, -0.2];
    let y = vec![0.5, 0.1, -0.3, 0.9, 0.2];
    test_rule!(dot_zip(&x, &y));
    test_rule!(softmax(&x));
    test_rule!(log_sum_exp(&x));
    test_rule!(axpy_for_each(&mut y, &x, 0.5));
    test_rule!(tanh_into(&x));
    test_rule!(std_dev(&x));
    test_rule!(weighted_after_swap(&x));
    let w = vec![x.clone(), y.clone()];
    test_rule!(mat_vec_rows(&x, &w));
    test_rule!(by_value_patterns(&x));
    // Against the primal, for the ones returning buffers.
    assert_eq!(value_and_pullback!(softmax(&x), vec![1.0; 5]).0, softmax(&x));
    assert_eq!(value_and_pullback!(mat_vec_rows(&x, &w), vec![1.0; 2]).0, mat_vec_rows(&x, &w));
}

/// The median, through a sorted copy (`sort_by` with `partial_cmp`).
#[differentiable]
fn median(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) }
}

/// A trimmed sum of squares: sorted by `f64::total_cmp`, the extremes dropped.
#[differentiable]
fn trimmed_squares(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let mut s = 0.0;
    for i in 1..v.len() - 1 {
        s += v[i] * v[i];
    }
    s
}

/// Sorted in place, greatest first (`sort_unstable_by` with `b.total_cmp(a)`), then reversed.
#[differentiable]
fn largest_two(x: &mut Vec<f64>) -> f64 {
    x.sort_unstable_by(|a, b| b.total_cmp(a));
    let top = 2.0 * x[0] + x[1];
    x.reverse();
    top + x[0]
}

#[test]
fn sorting_routes_gradients_to_the_elements_that_moved() {
    let x = vec![0.3, -0.7, 1.1, 0.2, 0.5];
    test_rule!(median(&*x));
    test_rule!(median(&x[..4].to_vec()));
    test_rule!(trimmed_squares(&*x));
    let y = x.clone();
    test_rule!(largest_two(&mut y));
    // The median of five is the element 0.3: the gradient is that element's indicator.
    let (m, (g,)) = value_and_gradient!(median(&x));
    assert_eq!(m, 0.3);
    assert_eq!(g, [1.0, 0.0, 0.0, 0.0, 0.0]);
    let (t, (g,)) = value_and_gradient!(trimmed_squares(&x));
    assert_eq!(t, 0.2 * 0.2 + 0.3 * 0.3 + 0.5 * 0.5);
    assert_eq!(g, [0.6, 0.0, 0.0, 0.4, 1.0]);
    let mut z = x.clone();
    let (v, (g,)) = value_and_gradient!(largest_two(&mut z));
    assert_eq!(v, 2.0 * 1.1 + 0.5 - 0.7);
    assert_eq!(g, [0.0, 1.0, 2.0, 0.0, 1.0]);
}

/// Ranks by an argsort: indices sorted by the values they point at (a comparator of keys).
#[differentiable]
fn rank_weighted(x: &[f64]) -> f64 {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].partial_cmp(&x[b]).unwrap());
    let mut s = 0.0;
    for (r, &i) in idx.iter().enumerate() {
        s += (r as f64 + 1.0) * x[i];
    }
    s
}

/// The values sorted by their distance to `c`, farthest first (a key of each element, descending).
#[differentiable]
fn farthest_two(x: &[f64], c: f64) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| (b - c).abs().total_cmp(&(a - c).abs()));
    2.0 * v[0] + v[1]
}

/// Pairs sorted by their second part.
#[differentiable]
fn by_second(p: &[(f64, f64)]) -> f64 {
    let mut q = p.to_vec();
    q.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap());
    q[0].0 * 3.0 + q[1].0
}

#[test]
fn sorting_by_keys() {
    let x = vec![0.3, -0.7, 1.1, 0.2, 0.5];
    test_rule!(rank_weighted(&x));
    test_rule!(farthest_two(&x, 0.4));
    let p = vec![(0.3, 0.9), (-0.7, 0.1), (1.1, 0.5)];
    test_rule!(by_second(&p));
    // Ranks: -0.7 (1), 0.2 (2), 0.3 (3), 0.5 (4), 1.1 (5); the gradient is each element's rank.
    let (_, (g,)) = value_and_gradient!(rank_weighted(&x));
    assert_eq!(g, [3.0, 1.0, 5.0, 2.0, 4.0]);
    // Farthest from 0.4: -0.7 (1.1 away), then 1.1 (0.7 away).
    let (v, (g, gc)) = value_and_gradient!(farthest_two(&x, 0.4));
    assert_eq!(v, 2.0 * -0.7 + 1.1);
    assert_eq!((g, gc), (vec![0.0, 2.0, 1.0, 0.0, 0.0], 0.0));
    let (v, (g,)) = value_and_gradient!(by_second(&p));
    assert_eq!(v, -0.7 * 3.0 + 1.1);
    assert_eq!(g, vec![(0.0, 0.0), (3.0, 0.0), (1.0, 0.0)]);
}

#[test]
#[should_panic(expected = "partial_cmp` of a NaN")]
fn sorting_a_nan_by_partial_cmp_panics_as_the_primal_does() {
    let x = vec![0.3, f64::NAN, 1.1];
    let _ = value_and_gradient!(median(&x));
}

/// A distribution's parameters in a struct with a `#[differentiable]` method, the negative
/// log-likelihood summed by a chain calling it.
#[derive(Tangent, Clone, Debug)]
struct Gaussian {
    mu: f64,
    log_sigma: f64,
}

#[differentiable]
impl Gaussian {
    fn log_pdf(&self, x: f64) -> f64 {
        let s = self.log_sigma.exp();
        let z = (x - self.mu) / s;
        -0.5 * z * z - self.log_sigma - 0.5 * (2.0 * std::f64::consts::PI).ln()
    }
}

#[differentiable]
fn gaussian_nll(g: &Gaussian, data: &[f64]) -> f64 {
    -data.iter().map(|&x| g.log_pdf(x)).sum::<f64>()
}

/// The Huber loss of residuals, a branch in the closure.
#[differentiable]
fn huber(r: &[f64], delta: f64) -> f64 {
    r.iter()
        .map(|&e| if e.abs() <= delta { 0.5 * e * e } else { delta * (e.abs() - 0.5 * delta) })
        .sum()
}

/// Horner's rule over the coefficients, highest first: `rev().fold`.
#[differentiable]
fn horner(coeffs: &[f64], x: f64) -> f64 {
    coeffs.iter().rev().fold(0.0, |acc, &c| acc * x + c)
}

/// A pairwise energy over `i < j`, and an exponential moving average over `&x[1..]`.
#[differentiable]
fn pairwise_and_ema(x: &[f64], alpha: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..x.len() {
        for j in (i + 1)..x.len() {
            let d = x[i] - x[j];
            e += 1.0 / (d * d + 0.1);
        }
    }
    let mut s = x[0];
    for &v in &x[1..] {
        s = alpha * v + (1.0 - alpha) * s;
    }
    e + s
}

/// Running sums by `scan`, collected, and a running maximum of squares by `scan` summed.
#[differentiable]
fn running(x: &[f64]) -> f64 {
    let c: Vec<f64> = x
        .iter()
        .scan(0.0, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect();
    let peaks: f64 = x
        .iter()
        .map(|v| v * v)
        .scan(f64::NEG_INFINITY, |m, v| {
            *m = m.max(v);
            Some(*m)
        })
        .sum();
    c[c.len() - 1] * c[0] + peaks
}

#[test]
fn models_losses_and_scans() {
    let g = Gaussian { mu: 0.3, log_sigma: -0.2 };
    let d = vec![0.1, 0.5, -0.3, 0.8];
    test_rule!(gaussian_nll(&g, &*d));
    test_rule!(huber(&*d, 0.2));
    test_rule!(horner(&*d, 0.7));
    test_rule!(pairwise_and_ema(&*d, 0.3));
    test_rule!(running(&*d));
    let c: Vec<f64> = d
        .iter()
        .scan(0.0, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect();
    let peaks: f64 = d
        .iter()
        .map(|v| v * v)
        .scan(f64::NEG_INFINITY, |m, v| {
            *m = m.max(v);
            Some(*m)
        })
        .sum();
    assert_eq!(value_and_gradient!(running(&d)).0, c[c.len() - 1] * c[0] + peaks);
    let h: f64 = d.iter().rev().fold(0.0, |acc, &c| acc * 0.7 + c);
    assert_eq!(value_and_gradient!(horner(&d, 0.7)).0, h);
}

/// A layer as a struct with a method returning its output `Vec` (rows as sub-slices zipped with
/// the input), two of them composed; softplus; a clipped gradient step; an RK4 step through a
/// closure; rows of `&[Vec<f64>]` mapped; the mean of the positive entries (`is_empty`).
#[derive(Tangent, Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
    n_in: usize,
}

#[differentiable]
impl Layer {
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        let n_out = self.b.len();
        let mut y = vec![0.0; n_out];
        for o in 0..n_out {
            let row = &self.w[o * self.n_in..(o + 1) * self.n_in];
            y[o] = row.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + self.b[o];
        }
        y
    }
}

#[differentiable]
fn two_layers(l1: &Layer, l2: &Layer, x: &[f64]) -> f64 {
    let h: Vec<f64> = l1.forward(x).iter().map(|v| v.tanh()).collect();
    let y = l2.forward(&h);
    y.iter().map(|v| v * v).sum()
}

#[differentiable]
fn softplus_sum(x: &[f64]) -> f64 {
    x.iter().map(|&v| if v > 20.0 { v } else { v.exp().ln_1p() }).sum()
}

#[differentiable]
fn clipped_step(theta: &mut [f64], grad: &[f64], lr: f64) -> f64 {
    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
    let scale = if norm > 1.0 { 1.0 / norm } else { 1.0 };
    for (t, g) in theta.iter_mut().zip(grad.iter()) {
        *t -= lr * scale * g;
    }
    theta.iter().sum()
}

#[differentiable]
fn rk4_step(y: &[f64], h: f64, k: f64) -> f64 {
    let f = |v: f64| -k * v;
    let mut out = 0.0;
    for &v in y {
        let k1 = f(v);
        let k2 = f(v + 0.5 * h * k1);
        let k3 = f(v + 0.5 * h * k2);
        let k4 = f(v + h * k3);
        out += v + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
    out
}

#[differentiable]
fn matvec_rows(a: &[Vec<f64>], x: &[f64]) -> f64 {
    a.iter().map(|row| row.iter().zip(x).map(|(r, v)| r * v).sum::<f64>()).map(|s| s * s).sum()
}

#[differentiable]
fn count_and_mean(x: &[f64]) -> f64 {
    let pos: Vec<f64> = x.iter().copied().filter(|v| *v > 0.0).collect();
    if pos.is_empty() { 0.0 } else { pos.iter().sum::<f64>() / pos.len() as f64 }
}

#[test]
fn layers_steps_and_filters() {
    let l1 = Layer { w: vec![0.1, -0.2, 0.3, 0.4, 0.5, -0.6], b: vec![0.01, 0.02], n_in: 3 };
    let l2 = Layer { w: vec![0.7, -0.8], b: vec![0.05], n_in: 2 };
    let x = vec![0.3, -0.1, 0.8];
    test_rule!(two_layers(&l1, &l2, &*x));
    test_rule!(softplus_sum(&*x));
    let theta = vec![0.5, 0.5, -0.5];
    test_rule!(clipped_step(&mut theta.clone(), &*x, 0.1));
    test_rule!(rk4_step(&*x, 0.1, 0.7));
    let a = vec![vec![0.1, 0.2, 0.3], vec![-0.4, 0.5, 0.6]];
    test_rule!(matvec_rows(&*a, &*x));
    test_rule!(count_and_mean(&*x));
    assert_eq!(value_and_gradient!(count_and_mean(&x)).0, (0.3 + 0.8) / 2.0);
    let none = vec![-1.0, -2.0];
    assert_eq!(value_and_gradient!(count_and_mean(&none)), (0.0, (vec![0.0, 0.0],)));
}

/// An Adam optimiser as a struct with a `&mut self` method run twice on `&mut` parameters;
/// Newton's iteration in a `while` loop with a convergence test; an early `return` out of an
/// enumerated loop; chunk means through `chunks(k).enumerate()`; `match` on integer ranges;
/// `rev().enumerate()`.
#[derive(Tangent, Clone, Debug)]
struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: usize,
}

#[differentiable]
impl Adam {
    fn step(&mut self, theta: &mut [f64], g: &[f64], lr: f64) {
        self.t += 1;
        let (b1, b2) = (0.9, 0.999);
        for i in 0..theta.len() {
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * g[i];
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * g[i] * g[i];
            let mh = self.m[i] / (1.0 - b1.powi(self.t as i32));
            let vh = self.v[i] / (1.0 - b2.powi(self.t as i32));
            theta[i] -= lr * mh / (vh.sqrt() + 1e-8);
        }
    }
}

#[differentiable]
fn adam_two_steps(theta: &mut Vec<f64>, g: &[f64]) -> f64 {
    let mut opt = Adam { m: vec![0.0; theta.len()], v: vec![0.0; theta.len()], t: 0 };
    opt.step(theta, g, 0.1);
    opt.step(theta, g, 0.1);
    theta.iter().map(|t| t * t).sum()
}

#[differentiable]
fn newton_sqrt(a: f64) -> f64 {
    let mut x = a;
    let mut it = 0;
    while (x * x - a).abs() > 1e-12 && it < 50 {
        x = 0.5 * (x + a / x);
        it += 1;
    }
    x
}

#[differentiable]
fn first_over(x: &[f64], t: f64) -> f64 {
    for (i, &v) in x.iter().enumerate() {
        if v > t {
            return v * i as f64;
        }
    }
    0.0
}

#[differentiable]
fn block_means(x: &[f64], k: usize) -> f64 {
    let mut s = 0.0;
    for (b, chunk) in x.chunks(k).enumerate() {
        let m = chunk.iter().sum::<f64>() / chunk.len() as f64;
        s += m * (b + 1) as f64;
    }
    s
}

#[differentiable]
fn piecewise(x: f64, n: u32) -> f64 {
    match n {
        0 => x,
        1..=3 => x.powf(1.5),
        _ => x.sqrt() * n as f64,
    }
}

#[differentiable]
fn weighted_rev(x: &[f64]) -> f64 {
    x.iter().rev().enumerate().map(|(i, v)| v * (i as f64 + 1.0)).sum()
}

#[test]
fn optimisers_iterations_and_early_exits() {
    let x = vec![0.3, -0.1, 0.8, 0.5];
    let th = vec![0.5, -0.2, 0.1, 0.4];
    test_rule!(adam_two_steps(&mut th.clone(), &*x));
    test_rule!(newton_sqrt(2.0));
    test_rule!(first_over(&*x, 0.4));
    test_rule!(block_means(&*x, 3));
    test_rule!(piecewise(1.3, 2));
    test_rule!(piecewise(1.3, 7));
    test_rule!(weighted_rev(&*x));
    let (r, (d,)) = value_and_gradient!(newton_sqrt(2.0));
    assert!((r - 2f64.sqrt()).abs() < 1e-12 && (d - 0.5 / 2f64.sqrt()).abs() < 1e-9);
    let w: f64 = x.iter().rev().enumerate().map(|(i, v)| v * (i as f64 + 1.0)).sum();
    assert_eq!(value_and_gradient!(weighted_rev(&x)).0, w);
    let b: f64 = x
        .chunks(3)
        .enumerate()
        .map(|(b, c)| c.iter().sum::<f64>() / c.len() as f64 * (b + 1) as f64)
        .sum();
    assert_eq!(value_and_gradient!(block_means(&x, 3)).0, b);
}

/// A `Copy` point with methods taking `self` and `&self` (springs over `windows(2)` of points,
/// a centroid's spread), logistic regression over `&[Vec<f64>]` rows, an array by value, a
/// tuple returned and taken apart.
#[derive(Tangent, Clone, Copy, Debug)]
struct Vec2 {
    x: f64,
    y: f64,
}

#[differentiable]
impl Vec2 {
    fn dot(self, o: Vec2) -> f64 {
        self.x * o.x + self.y * o.y
    }
    fn scale(self, k: f64) -> Vec2 {
        Vec2 { x: self.x * k, y: self.y * k }
    }
    fn norm(&self) -> f64 {
        self.dot(*self).sqrt()
    }
}

#[differentiable]
fn spring(ps: &[Vec2], k: f64) -> f64 {
    let mut e = 0.0;
    for w in ps.windows(2) {
        let d = Vec2 { x: w[1].x - w[0].x, y: w[1].y - w[0].y };
        e += 0.5 * k * (d.norm() - 1.0).powi(2);
    }
    e
}

#[differentiable]
fn centroid(ps: &[Vec2]) -> f64 {
    let n = ps.len() as f64;
    let cx = ps.iter().map(|p| p.x).sum::<f64>() / n;
    let cy = ps.iter().map(|p| p.y).sum::<f64>() / n;
    ps.iter().map(|p| (p.x - cx).powi(2) + (p.y - cy).powi(2)).sum()
}

#[differentiable]
fn logistic_loss(w: &[f64], xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let mut l = 0.0;
    for (x, &y) in xs.iter().zip(ys) {
        let z: f64 = w.iter().zip(x).map(|(a, b)| a * b).sum();
        let p = 1.0 / (1.0 + (-z).exp());
        l -= y * p.ln() + (1.0 - y) * (1.0 - p).ln();
    }
    l / ys.len() as f64
}

#[differentiable]
fn arr_fn(a: [f64; 3]) -> f64 {
    let b = [a[0] * 2.0, a[1] + a[2], a[2].sin()];
    b.iter().sum::<f64>() + a.iter().map(|v| v * v).sum::<f64>()
}

#[differentiable]
fn tuple_ret(x: &[f64]) -> (f64, f64) {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (m, x.iter().map(|v| (v - m).powi(2)).sum::<f64>())
}

#[differentiable]
fn use_tuple(x: &[f64]) -> f64 {
    let (m, v) = tuple_ret(x);
    m * v
}

#[test]
fn points_rows_arrays_and_tuples() {
    let ps = vec![Vec2 { x: 0.0, y: 0.1 }, Vec2 { x: 1.1, y: 0.3 }, Vec2 { x: 1.9, y: 1.2 }];
    test_rule!(spring(&*ps, 2.0));
    test_rule!(centroid(&*ps));
    let w = vec![0.2, -0.3];
    let xs = vec![vec![1.0, 0.5], vec![-0.3, 0.8], vec![0.4, -1.2]];
    let ys = vec![1.0, 0.0, 1.0];
    test_rule!(logistic_loss(&*w, &*xs, &*ys));
    test_rule!(arr_fn([0.3, 0.4, 0.5]));
    test_rule!(use_tuple(&*w));
}

/// Linear interpolation in a table (an index from `floor`), cross-entropy through a max by
/// `fold(f64::NEG_INFINITY, f64::max)`, a ReLU convolution built by `push`, a symmetric Gram
/// matrix, an integrator over a `[p, v]` state taken apart by an array pattern.
#[differentiable]
fn lerp_table(t: f64, table: &[f64]) -> f64 {
    let n = table.len() - 1;
    let u = (t.clamp(0.0, 1.0) * n as f64).min(n as f64 - 1e-9);
    let i = u.floor() as usize;
    let f = u - i as f64;
    table[i] * (1.0 - f) + table[i + 1] * f
}

#[differentiable]
fn cross_entropy(logits: &[f64], target: usize) -> f64 {
    let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = logits.iter().map(|z| (z - m).exp()).sum::<f64>().ln() + m;
    lse - logits[target]
}

#[differentiable]
fn conv1d(x: &[f64], k: &[f64]) -> f64 {
    let n = x.len() - k.len() + 1;
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = 0.0;
        for j in 0..k.len() {
            s += x[i + j] * k[j];
        }
        y.push(s.max(0.0));
    }
    y.iter().sum()
}

#[differentiable]
fn gram(x: &[f64], n: usize) -> f64 {
    let d = x.len() / n;
    let mut g = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = 0.0;
            for k in 0..d {
                s += x[i * d + k] * x[j * d + k];
            }
            g[i * n + j] = s;
            g[j * n + i] = s;
        }
    }
    g.iter().map(|v| v.abs().sqrt()).sum()
}

#[differentiable]
fn integrate(f0: f64, steps: usize, dt: f64) -> f64 {
    let mut state = [f0, 0.0];
    for _ in 0..steps {
        let [p, v] = state;
        state = [p + dt * v, v - dt * p.sin()];
    }
    state[0] + state[1]
}

#[test]
fn tables_convolutions_and_array_patterns() {
    let table = vec![0.0, 0.5, 0.7, 1.4];
    test_rule!(lerp_table(0.4, &*table));
    let z = vec![0.3, 1.2, -0.4];
    test_rule!(cross_entropy(&*z, 1));
    let x = vec![0.3, -0.1, 0.8, 0.5, 0.2, 0.9];
    let k = vec![0.5, -0.25];
    test_rule!(conv1d(&*x, &*k));
    test_rule!(gram(&*x, 3));
    test_rule!(integrate(0.7, 20, 0.05));
}

/// A backward recurrence over `(0..n - 1).rev()` then a product; a generic norm with `T::zero()`
/// and `T::EPSILON`; a nested `fn`, a `const` and `as` conversions in the body.
#[differentiable]
fn backward_recurrence(x: &[f64]) -> f64 {
    let n = x.len();
    let mut b = vec![0.0; n];
    b[n - 1] = x[n - 1];
    for i in (0..n - 1).rev() {
        b[i] = x[i] + 0.5 * b[i + 1].tanh();
    }
    b.iter().product::<f64>()
}

/// Generic code as written against `num_traits`: `T::one()`, `T::zero()`, `T::from_f64`.
#[differentiable]
fn generic_logistic<T: Float>(x: &[T], w: T) -> T {
    let mut s = T::zero();
    for &v in x {
        s += T::one() / (T::one() + (-(w * v)).exp()) * T::from_f64(0.5);
    }
    s
}

#[differentiable]
fn generic_norm<T: Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for &v in x {
        s += v * v;
    }
    s.sqrt() + T::EPSILON
}

#[differentiable]
fn with_helpers(x: f64) -> f64 {
    fn sq(v: f64) -> f64 {
        v * v
    }
    const SCALE: f64 = std::f64::consts::E;
    let k = (x * 3.0) as i32;
    let y = sq(x) * SCALE;
    let y = y + k as f64 * x;
    y * 1.0
}

#[test]
fn recurrences_generics_and_items() {
    let x = vec![0.3, -0.1, 0.8, 0.5];
    test_rule!(backward_recurrence(&*x));
    test_rule!(generic_norm(&*x));
    test_rule!(generic_logistic(&*x, 0.7));
    let v = vec![0.2, 0.4, -0.3, 0.1];
    let (_, (_, _), (hx, hw)) = hvp!(generic_logistic(&x, 0.7), (&v, 0.5));
    let flat: Vec<f64> = hx.iter().copied().chain([hw]).collect();
    mooncake_runtime::test_utils::check_hvp(
        &flat,
        &vec![0.3, -0.1, 0.8, 0.5, 0.7],
        &vec![0.2, 0.4, -0.3, 0.1, 0.5],
        |xs: &Vec<f64>| {
            let (_, (gx, gw)) = value_and_gradient!(generic_logistic(&xs[..4], xs[4]));
            gx.into_iter().chain([gw]).collect()
        },
    )
    .unwrap();
    test_rule!(with_helpers(0.45));
    let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (n32, _) = value_and_gradient!(generic_norm(&xf));
    assert!((f64::from(n32) - generic_norm(&x)).abs() < 1e-5);
}

/// A linear model with `predict` and `loss` methods (the loss calling `predict` over rows), its
/// loss through a function, an SGD pass through `m.w.iter_mut().zip(..)` on a `&mut` model then
/// its loss; `any`, `all` and a filtered `count` steering the result; a range by
/// `fold(f64::MIN, f64::max)` and `fold(f64::MAX, f64::min)`.
#[derive(Tangent, Clone, Debug)]
struct LinearModel {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
impl LinearModel {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + self.b
    }
    fn loss(&self, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
        let mut l = 0.0;
        for (x, y) in xs.iter().zip(ys.iter()) {
            let r = self.predict(x) - y;
            l += r * r;
        }
        l / xs.len() as f64 + 0.01 * self.w.iter().map(|w| w * w).sum::<f64>()
    }
}

#[differentiable]
fn fit_loss(m: &LinearModel, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    m.loss(xs, ys)
}

#[differentiable]
fn sgd_then_loss(m: &mut LinearModel, xs: &[Vec<f64>], ys: &[f64], lr: f64) -> f64 {
    for (x, y) in xs.iter().zip(ys) {
        let r = m.predict(x) - y;
        for (w, v) in m.w.iter_mut().zip(x.iter()) {
            *w -= lr * r * v;
        }
        m.b -= lr * r;
    }
    m.loss(xs, ys)
}

#[differentiable]
fn any_all(x: &[f64]) -> f64 {
    let pos = x.iter().all(|v| *v > -1.0);
    let big = x.iter().any(|&v| v > 0.7);
    let n = x.iter().filter(|v| v.abs() < 0.5).count();
    let s: f64 = x.iter().sum();
    if pos && !big { s } else { s * n as f64 }
}

#[differentiable]
fn minmax(x: &[f64]) -> f64 {
    let mx = x.iter().cloned().fold(f64::MIN, f64::max);
    let mn = x.iter().copied().fold(f64::MAX, f64::min);
    (mx - mn) / (mx + mn).abs().max(1e-3)
}

#[test]
fn models_fitted_and_summaries() {
    let m = LinearModel { w: vec![0.3, -0.2], b: 0.1 };
    let xs = vec![vec![1.0, 0.5], vec![-0.3, 0.8], vec![0.4, -1.2]];
    let ys = vec![0.4, 0.1, -0.2];
    test_rule!(fit_loss(&m, &*xs, &*ys));
    test_rule!(sgd_then_loss(&mut m.clone(), &*xs, &*ys, 0.1));
    let x = vec![0.3, -0.1, 0.8, 0.45];
    test_rule!(any_all(&*x));
    test_rule!(minmax(&*x));
}

/// `sort_by` with `Ord::cmp` of integer keys or elements: a sparse vector's entries (extended
/// by `extend_from_slice`, which had rules for buffers of numbers only) sorted by index (`|p,
/// q| p.0.cmp(&q.0)`), and indices sorted in reverse (`|a, b| b.cmp(a)`). Refused (only
/// `partial_cmp` / `total_cmp` comparators were read) until probe programs found it.
#[differentiable]
fn sorted_sparse(entries: &[(usize, f64)], x: &[f64]) -> f64 {
    let mut all = entries.to_vec();
    all.extend_from_slice(entries);
    all.sort_by(|p, q| p.0.cmp(&q.0));
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|a, b| b.cmp(a));
    let mut s = 0.0;
    for k in 0..all.len() {
        s += all[k].1 * x[all[k].0] * (k as f64 + 1.0);
    }
    for k in 0..idx.len() {
        s += x[idx[k]] * k as f64;
    }
    s
}

#[test]
fn sorting_by_integer_keys() {
    let e = vec![(2, 0.5), (0, -1.5), (1, 2.0)];
    let x = vec![0.3, 1.2, -0.7];
    test_rule!(sorted_sparse(&e, &x));
    // With the entries appended again, sorted: (0, -1.5) twice, (1, 2.0) twice, (2, 0.5)
    // twice, weighted 1..6; the index loop reads indices 2, 1, 0 weighted 0, 1, 2.
    let (_, (ge, gx)) = value_and_gradient!(sorted_sparse(&e, &x));
    assert!((gx[0] - (-1.5 * 3.0 + 2.0)).abs() < 1e-12);
    assert!((ge[0].1 - (5.0 + 6.0) * x[2]).abs() < 1e-12);
}

#[differentiable]
fn generic_scalar<T: Float>(x: T, y: T) -> T {
    x * x.sin() + x * y
}

/// A generic function given unsuffixed literals (`value_and_gradient!(f(0.5, -1.5))`,
/// `let x = vec![0.5, -1.5];`): the gradients are numbers and buffers (their type is fixed by
/// the literals' fallback to `f64` only after the macro's expansion has been type-checked), in
/// the plain and the prepared form; a suffixed `f32` literal gives `f32` gradients.
#[test]
fn generic_functions_given_literals() {
    let (v, (gx, gy)) = value_and_gradient!(generic_scalar(0.5, -1.5));
    assert!((v - (0.5 * 0.5f64.sin() - 0.75)).abs() < 1e-12);
    assert!((gx - (0.5f64.sin() + 0.5 * 0.5f64.cos() - 1.5)).abs() < 1e-12);
    assert!((gy - 0.5).abs() < 1e-15);
    let (_, (gx, _)) = value_and_gradient!(generic_scalar(0.5_f32, 2.0));
    let gx: f32 = gx;
    assert!((gx - (0.5f32.sin() + 0.5 * 0.5f32.cos() + 2.0)).abs() < 1e-6);
    let mut cache = GradientCache::new();
    let (_, (gx, gy)) = value_and_gradient!(generic_scalar(1.0, 2.0), cache = &mut cache);
    let (gx, gy): (f64, f64) = (*gx, *gy);
    assert!((gx - (1.0f64.sin() + 1.0f64.cos() + 2.0)).abs() < 1e-12);
    assert!((gy - 1.0).abs() < 1e-15);
    // A buffer of unsuffixed literals given to a generic function: its gradient is a `Vec`.
    let x = vec![0.5, -1.5];
    let (_, (g,)) = value_and_gradient!(generic_norm(&x));
    let g: Vec<f64> = g;
    let norm = (0.5f64 * 0.5 + 1.5 * 1.5).sqrt();
    assert!((g[0] - 0.5 / norm).abs() < 1e-12 && (g[1] + 1.5 / norm).abs() < 1e-12);
    let (_, (g, gw)) = value_and_gradient!(generic_logistic(&x, 0.7));
    let (g, gw): (Vec<f64>, f64) = (g, gw);
    assert_eq!(g.len(), 2);
    assert!(gw.abs() > 0.0);
}

/// A least-squares loss over data written as an array literal of pairs, iterated by value, by
/// `iter()` and by index.
#[differentiable]
fn fit_to_pairs(w: f64, b: f64) -> f64 {
    let data = [(1.0, 3.0), (0.5, 1.0), (-1.0, -0.5)];
    let mut l = 0.0;
    for (x, y) in data {
        l += (w * x + b - y).powi(2);
    }
    for &(x, y) in data.iter() {
        l += 0.5 * (w * x - y).abs();
    }
    for i in 0..data.len() {
        let (x, _) = data[i];
        l += b * x;
    }
    l
}

#[test]
fn array_literals_of_pairs() {
    test_rule!(fit_to_pairs(0.7, -0.2));
    let (_, (gw, gb)) = value_and_gradient!(fit_to_pairs(0.7, -0.2));
    let (_, (fw, fb)) = value_and_gradient_forward!(fit_to_pairs(0.7, -0.2));
    assert!((gw - fw).abs() < 1e-12 && (gb - fb).abs() < 1e-12);
}

#[differentiable]
fn neuron(w: &[f64; 2], b: f64, x: &[f64; 2]) -> f64 {
    (w[0] * x[0] + w[1] * x[1] + b).tanh()
}

/// A dataset written as an array literal of (input, label) pairs whose inputs are arrays (the
/// XOR table), iterated by value, each input lent to a function and read by index.
#[differentiable]
fn xor_loss(w: &[f64; 2], b: f64) -> f64 {
    let data = [([0.0, 0.0], 0.0), ([0.0, 1.0], 1.0), ([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)];
    let mut l = 0.0;
    for (x, y) in data {
        l += (neuron(w, b, &x) - y).powi(2) + 0.1 * x[1] * b;
    }
    l
}

#[test]
fn array_literals_of_arrays_and_labels() {
    test_rule!(xor_loss(&[0.4, -0.7], 0.2));
    let (v, _) = value_and_gradient!(xor_loss(&[0.4, -0.7], 0.2));
    assert!((v - xor_loss(&[0.4, -0.7], 0.2)).abs() < 1e-12);
}
