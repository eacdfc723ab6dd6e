//! Small programs of the kinds numerical code is made of, written as users write them, each
//! checked by `test_rule!` (both modes against central finite differences and against each
//! other): table interpolation, `std::mem::swap` / `mem::replace` of variables, a fold with a
//! tuple accumulator, differences over `windows(2)`, `x.get(i)`, a match on ranges, a model's
//! method in a loss, an Adam step on `&mut` state, generic functions calling generic functions,
//! a logistic regression over rows, a result built by `collect` and passed on; a state cloned
//! from a reference and stepped by its `&mut self` methods; methods returning structs.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// Linear interpolation in a table with step `h`.
#[differentiable]
fn interp(tab: &[f64], x: f64, h: f64) -> f64 {
    let s = x / h;
    let i = (s.floor() as usize).min(tab.len() - 2);
    let t = s - i as f64;
    (1.0 - t) * tab[i] + t * tab[i + 1]
}

/// The larger minus twice the smaller, by a swap.
#[differentiable]
fn ordered(a: f64, b: f64) -> f64 {
    let (mut x, mut y) = (a, b);
    if x > y {
        std::mem::swap(&mut x, &mut y);
    }
    y - x * 2.0
}

/// A running value replaced, its old value kept: `mem::replace`.
#[differentiable]
fn replaced(x: &[f64]) -> f64 {
    use std::mem;
    let mut prev = x[0];
    let mut s = 0.0;
    for i in 1..x.len() {
        let next = x[i] * prev;
        let old = mem::replace(&mut prev, next);
        s += old.sin();
    }
    s + prev
}

/// Buffers swapped between iterations (a double buffer).
#[differentiable]
fn double_buffer(x: &[f64], steps: usize) -> f64 {
    let mut cur = x.to_vec();
    let mut next = vec![0.0; x.len()];
    for _ in 0..steps {
        for i in 0..x.len() {
            let l = if i > 0 { cur[i - 1] } else { cur[i] };
            next[i] = 0.5 * (cur[i] + l);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    cur.iter().map(|v| v * v).sum()
}

#[differentiable]
fn variance(x: &[f64]) -> f64 {
    let (s, ss) = x.iter().fold((0.0, 0.0), |(s, ss), &v| (s + v, ss + v * v));
    ss / x.len() as f64 - (s / x.len() as f64).powi(2)
}

#[differentiable]
fn roughness(x: &[f64]) -> f64 {
    x.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum()
}

#[differentiable]
fn at_or_zero(x: &[f64], i: usize) -> f64 {
    if let Some(v) = x.get(i) { v * 2.0 } else { 0.0 }
}

#[differentiable]
fn by_order(x: f64, k: u32) -> f64 {
    match k {
        0 => x,
        1..=3 => x * x,
        _ => x.powf(k as f64),
    }
}

#[derive(Tangent, Clone, Debug)]
struct Linear {
    a: f64,
    b: f64,
}

#[differentiable]
impl Linear {
    fn eval(&self, x: f64) -> f64 {
        self.a * x + self.b
    }
}

#[differentiable]
fn mse(m: &Linear, xs: &[f64], ys: &[f64]) -> f64 {
    let mut s = 0.0;
    for (x, y) in xs.iter().zip(ys) {
        let r = m.eval(*x) - y;
        s += r * r;
    }
    s / xs.len() as f64
}

#[derive(Tangent, Clone, Debug)]
struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: usize,
}

/// One Adam step, in place.
#[differentiable]
fn adam_step(x: &mut [f64], g: &[f64], st: &mut Adam, lr: f64) {
    st.t += 1;
    let (b1, b2) = (0.9, 0.999);
    for i in 0..x.len() {
        st.m[i] = b1 * st.m[i] + (1.0 - b1) * g[i];
        st.v[i] = b2 * st.v[i] + (1.0 - b2) * g[i] * g[i];
        let mh = st.m[i] / (1.0 - b1.powi(st.t as i32));
        let vh = st.v[i] / (1.0 - b2.powi(st.t as i32));
        x[i] -= lr * mh / (vh.sqrt() + 1e-8);
    }
}

#[differentiable]
fn generic_norm<T: Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for v in x {
        s += *v * *v;
    }
    s.sqrt()
}

#[differentiable]
fn generic_caller<T: Float>(x: &[T]) -> T {
    generic_norm(x) * T::from_f64(2.0)
}

#[differentiable]
fn logistic_nll(w: &[f64], xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let mut nll = 0.0;
    for (x, &y) in xs.iter().zip(ys) {
        let z: f64 = w.iter().zip(x).map(|(a, b)| a * b).sum();
        let p = 1.0 / (1.0 + (-z).exp());
        nll -= y * p.ln() + (1.0 - y) * (1.0 - p).ln();
    }
    nll
}

#[differentiable]
fn exps(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| v.exp()).collect()
}

#[differentiable]
fn softplus_sum(x: &[f64]) -> f64 {
    let e = exps(x);
    e.iter().map(|v| (1.0 + v).ln()).sum()
}

#[derive(Tangent, Clone, Debug)]
struct Particles {
    x: Vec<f64>,
    v: Vec<f64>,
}

#[differentiable]
impl Particles {
    fn kick(&mut self, dt: f64, k: f64) {
        for i in 0..self.x.len() {
            self.v[i] -= dt * k * self.x[i];
        }
    }
    fn drift(&mut self, dt: f64) {
        for i in 0..self.x.len() {
            self.x[i] += dt * self.v[i];
        }
    }
    fn energy(&self, k: f64) -> f64 {
        let mut e = 0.0;
        for i in 0..self.x.len() {
            e += 0.5 * self.v[i] * self.v[i] + 0.5 * k * self.x[i] * self.x[i];
        }
        e
    }
}

/// A state cloned from a reference, then stepped by its `&mut self` methods (leapfrog).
#[differentiable]
fn leapfrog_energy(p: &Particles, k: f64, dt: f64, n: usize) -> f64 {
    let mut q = p.clone();
    for _ in 0..n {
        q.kick(0.5 * dt, k);
        q.drift(dt);
        q.kick(0.5 * dt, k);
    }
    q.energy(k) + p.energy(k)
}

#[derive(Tangent, Clone, Copy, Debug)]
struct State {
    x: f64,
    v: f64,
}

#[derive(Tangent, Clone, Debug)]
struct Oscillator {
    k: f64,
    c: f64,
    dt: f64,
}

#[differentiable]
impl Oscillator {
    fn accel(&self, s: State) -> f64 {
        -self.k * s.x - self.c * s.v
    }
    fn step(&self, s: State) -> State {
        let a = self.accel(s);
        State { x: s.x + self.dt * s.v, v: s.v + self.dt * a }
    }
    fn run(&self, s0: State, n: usize) -> State {
        let mut s = s0;
        for _ in 0..n {
            s = self.step(s);
        }
        s
    }
}

/// Methods returning a `Copy` struct, chained through a loop.
#[differentiable]
fn final_energy(osc: &Oscillator, x0: f64, v0: f64) -> f64 {
    let s = osc.run(State { x: x0, v: v0 }, 50);
    0.5 * s.v * s.v + 0.5 * osc.k * s.x * s.x
}

#[derive(Tangent, Clone, Debug)]
struct Params {
    a: f64,
    w: Vec<f64>,
}

#[differentiable]
impl Params {
    fn scale(&mut self, k: f64) {
        self.a *= k;
        for i in 0..self.w.len() {
            self.w[i] *= k;
        }
    }
    fn energy(&self) -> f64 {
        let mut e = self.a * self.a;
        for i in 0..self.w.len() {
            e += self.w[i].sin();
        }
        e
    }
}

/// A struct held by value, cloned, the copy changed by a `&mut self` method.
#[differentiable]
fn cloned_by_value(p: Params, k: f64) -> f64 {
    let mut q = p.clone();
    q.scale(k);
    q.energy() * p.energy()
}

#[test]
fn everyday_programs_pass_test_rule() {
    let tab = vec![0.0, 0.5, 1.7, 1.1, -0.3];
    test_rule!(interp(&tab, 1.3, 0.5));
    test_rule!(ordered(0.7, -0.4));
    test_rule!(ordered(-0.7, 0.4));
    let x = vec![0.3, -1.2, 0.7, 2.1];
    test_rule!(replaced(&x));
    test_rule!(double_buffer(&x, 3));
    test_rule!(variance(&x));
    test_rule!(roughness(&x));
    test_rule!(at_or_zero(&x, 2));
    test_rule!(at_or_zero(&x, 9));
    test_rule!(by_order(0.8, 2));
    test_rule!(by_order(0.8, 5));
    let m = Linear { a: 0.7, b: -0.2 };
    test_rule!(mse(&m, &x, &[0.1, 0.4, -0.3, 0.9]));
    let st = Adam { m: vec![0.1, -0.2, 0.0, 0.3], v: vec![0.01, 0.02, 0.03, 0.04], t: 2 };
    let w = x.clone();
    test_rule!(adam_step(&mut w, &[0.5, -0.1, 0.2, 0.05], &mut st, 0.01));
    test_rule!(generic_caller(&x));
    let rows = vec![vec![0.5, -1.0], vec![1.5, 0.3], vec![-0.7, 0.8]];
    test_rule!(logistic_nll(&[0.4, -0.6], &rows, &[1.0, 0.0, 1.0]));
    test_rule!(softplus_sum(&x));
    let p = Particles { x: vec![0.3, -0.8, 1.1], v: vec![0.5, 0.1, -0.4] };
    test_rule!(leapfrog_energy(&p, 1.3, 0.05, 10));
    let osc = Oscillator { k: 2.0, c: 0.3, dt: 0.02 };
    test_rule!(final_energy(&osc, 0.7, -0.2));
    test_rule!(cloned_by_value(Params { a: 0.4, w: vec![0.3, -1.1] }, 1.7));
}

#[test]
fn literal_arrays_can_be_passed_to_the_gradient() {
    // `&[..]` of float literals: one value, typed by the rule's call (before, the literal's
    // element type was still open where the gradient was shaped, and the call did not compile).
    let (y, (g,)) = value_and_gradient!(roughness(&[0.5, -0.5, 2.0]));
    assert_eq!(y, 7.25);
    assert_eq!(g, [2.0, -7.0, 5.0]);
    let (y, (g, _)) = value_and_gradient!(at_or_zero(&[1.5, 2.5], 1));
    assert_eq!((y, g), (5.0, [0.0, 2.0]));
}

#[test]
fn a_swap_orders_and_a_double_buffer_smooths() {
    // `ordered` is `max - 2 min`: its gradient is (−2, 1) or (1, −2).
    let (_, (ga, gb)) = value_and_gradient!(ordered(0.7, -0.4));
    assert_eq!((ga, gb), (1.0, -2.0));
    let (_, (ga, gb)) = value_and_gradient!(ordered(-0.7, 0.4));
    assert_eq!((ga, gb), (-2.0, 1.0));
    // One smoothing step of a constant signal leaves it constant.
    let flat = vec![2.0, 2.0, 2.0];
    let (y, _) = value_and_gradient!(double_buffer(&flat, 1));
    assert_eq!(y, 12.0);
}

#[derive(Tangent, Clone, Debug)]
struct LinearModel {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
impl LinearModel {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x.iter()).map(|(a, b)| a * b).sum::<f64>() + self.b
    }
}

/// A dataset of `(features, target)` pairs, taken apart by patterns: the features are bound
/// by reference (Rust's default binding mode), and lent to the model.
#[differentiable]
fn dataset_loss(model: &LinearModel, data: &[(Vec<f64>, f64)]) -> f64 {
    let mut s = 0.0;
    for (x, y) in data.iter() {
        let r = model.predict(x) - y;
        s += r * r;
    }
    for k in 0..data.len() {
        let (x, y) = &data[k];
        s += 0.5 * (model.predict(x) - y).abs();
    }
    s / data.len() as f64
}

#[test]
fn datasets_of_tuples_holding_buffers() {
    let model = LinearModel { w: vec![0.5, -0.2], b: 0.1 };
    let data = vec![(vec![1.0, 2.0], 0.5), (vec![-1.0, 0.5], -0.3), (vec![0.3, 0.1], 0.9)];
    test_rule!(dataset_loss(&model, &data));
    // The gradient in closed form: with r_k = w·x_k + b - y_k, d/dw = Σ (2 r_k + sign(r_k) / 2)
    // x_k / n, d/db the same without x_k; the data's features get (2 r_k + sign(r_k) / 2) w / n.
    let (_, (gm, gd)) = value_and_gradient!(dataset_loss(&model, &data));
    let n = data.len() as f64;
    let (mut gw, mut gb) = (vec![0.0; 2], 0.0);
    for (k, (x, y)) in data.iter().enumerate() {
        let r = model.w[0] * x[0] + model.w[1] * x[1] + model.b - y;
        let c = (2.0 * r + 0.5 * r.signum()) / n;
        gw[0] += c * x[0];
        gw[1] += c * x[1];
        gb += c;
        for j in 0..2 {
            assert!((gd[k].0[j] - c * model.w[j]).abs() < 1e-14);
        }
        assert!((gd[k].1 + c).abs() < 1e-14);
    }
    assert!((gm.w[0] - gw[0]).abs() < 1e-14 && (gm.w[1] - gw[1]).abs() < 1e-14);
    assert!((gm.b - gb).abs() < 1e-14);
}

/// An explicit heat-equation solver whose state holds the solution and a scratch buffer.
#[derive(Tangent, Clone, Debug)]
pub struct HeatState {
    /// The solution.
    pub u: Vec<f64>,
    /// The next step's solution.
    pub next: Vec<f64>,
    /// Diffusion number.
    pub k: f64,
}

/// Steps on a copy of the state, the two buffers swapped after each step
/// (`std::mem::swap(&mut h.u, &mut h.next)` of fields of a struct held by value), and
/// `mem::replace` of a field.
#[differentiable]
fn heat_steps(h0: &HeatState, steps: usize) -> f64 {
    let mut h = h0.clone();
    let n = h.u.len();
    for _ in 0..steps {
        for i in 1..n - 1 {
            h.next[i] = h.u[i] + h.k * (h.u[i - 1] - 2.0 * h.u[i] + h.u[i + 1]);
        }
        h.next[0] = h.u[0];
        h.next[n - 1] = h.u[n - 1];
        std::mem::swap(&mut h.u, &mut h.next);
    }
    let old_k = std::mem::replace(&mut h.k, 0.5);
    h.u.iter().map(|v| v * v).sum::<f64>() * old_k + h.k * h.u[2]
}

#[test]
fn fields_of_a_local_struct_swapped() {
    let h = HeatState { u: vec![0.0, 1.0, 0.5, -0.3, 0.0], next: vec![0.0; 5], k: 0.2 };
    test_rule!(heat_steps(&h, 3));
    assert!((value_and_gradient!(heat_steps(&h, 3)).0 - heat_steps(&h, 3)).abs() < 1e-12);
}
