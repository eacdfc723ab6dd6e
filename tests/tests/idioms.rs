//! Idioms of numerical Rust, each as a user would write it, checked in both modes by
//! `test_rule!`: chains ending in a method, `fold` with `&v` patterns, closures over ranges,
//! array patterns through a reference (`let [a, b, c] = *params;`), destructuring assignment
//! (`(a, b) = (b, a + b);`), `matches!`, `?` on `x.first()`, `String::from` in an error,
//! nested buffers returned, statistics through `sum::<f64>()`.

// Written as users write them, `&Vec` arguments and `vec!` of three included.
#![allow(clippy::ptr_arg, clippy::useless_vec)]

use mooncake_runtime::prelude::*;
use std::f64::consts::PI;

#[differentiable]
fn p1(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[differentiable]
fn p3(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y.iter()).map(|(a, b)| (a - b).powi(2)).sum()
}

#[differentiable]
fn p4(x: &[f64]) -> Vec<f64> {
    let v: Vec<f64> = x.iter().map(|a| a.exp()).collect();
    let s: f64 = v.iter().sum();
    v.iter().map(|e| e / s).collect()
}

#[differentiable]
fn p7(params: &[f64; 3], t: f64) -> f64 {
    let [a, b, c] = *params;
    a * t * t + b * t + c
}

#[differentiable]
fn p8(x: &[f64]) -> f64 {
    x.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

#[differentiable]
fn p10(a: f64, n: usize) -> f64 {
    let h = 0.1;
    let f = |t: f64| a * t.sin();
    (0..n).map(|i| f(i as f64 * h)).sum()
}

#[differentiable]
fn p11(x: &[f64]) -> f64 {
    match x.len() {
        0 => 0.0,
        n => x[n - 1],
    }
}

#[derive(Tangent, Clone, Debug)]
struct Params {
    a: f64,
    b: f64,
}

#[differentiable]
fn p13(p: &Params, data: &[(f64, f64)]) -> f64 {
    data.iter().map(|&(x, y)| (p.a * x + p.b - y).powi(2)).sum::<f64>() / data.len() as f64
}

#[differentiable]
fn p17(x: f64, n: usize) -> f64 {
    let (mut a, mut b) = (0.0, x);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a + b
}

#[differentiable]
fn p21(x: &[f64]) -> f64 {
    if x.iter().any(|&v| v < 0.0) {
        return f64::NAN;
    }
    x.iter().map(|v| v.ln()).sum()
}

#[differentiable]
fn p22(x: &[f64]) -> f64 {
    x.iter().cloned().fold(0.0_f64, |acc, v| acc.max(v.abs()))
}

#[differentiable]
fn p27(x: &[f64]) -> f64 {
    x.iter().max_by(|a, b| a.total_cmp(b)).copied().unwrap_or(0.0)
}

#[differentiable]
fn p30(x: f64, m: Mode) -> f64 {
    if matches!(m, Mode::A) { x } else { 2.0 * x }
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Mode {
    A,
    B,
}

#[differentiable]
fn p32(a: &[f64], b: &[f64]) -> Vec<Vec<f64>> {
    let mut out = vec![vec![0.0; b.len()]; a.len()];
    for i in 0..a.len() {
        for j in 0..b.len() {
            out[i][j] = a[i] * b[j];
        }
    }
    out
}

#[differentiable]
fn p35(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |acc, &v| acc + v * v)
}

#[differentiable]
fn g37(x: f64) -> (f64, f64) {
    (x.sin(), x.cos())
}

#[differentiable]
fn p37(x: f64) -> f64 {
    let (a, b) = g37(x);
    a * b
}

#[differentiable]
fn p41(x: f64) -> f64 {
    std::f64::consts::E.powf(x) + std::f64::consts::PI * x
}

#[differentiable]
fn p43(x: f64) -> f64 {
    x.abs().max(1e-12).ln()
}

#[differentiable]
fn p44(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt()
}

#[differentiable]
fn p45(x: &mut [f64], lr: f64) {
    for v in x.iter_mut() {
        *v -= lr * 2.0 * *v;
    }
}

#[differentiable]
fn p46(x: &[f64]) -> f64 {
    let mut best = x[0];
    for &v in &x[1..] {
        if v > best {
            best = v;
        }
    }
    best
}

#[differentiable]
fn p47(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    let mut s = 0.0;
    for i in 0..n {
        s += x[i] * y[i];
    }
    s
}

#[differentiable]
fn p48(x: &[f64]) -> f64 {
    let total: f64 = x.iter().sum();
    let logs: Vec<f64> = x.iter().map(|v| (v / total).ln()).collect();
    logs.iter().zip(x).map(|(l, v)| l * v).sum()
}

#[differentiable]
fn p49(x: &[f64]) -> Option<f64> {
    let first = *x.first()?;
    let last = *x.last()?;
    Some(last - first)
}

#[differentiable]
fn p50(x: &[f64]) -> f64 {
    x.iter().enumerate().map(|(i, v)| (i as f64 + 1.0) * v).sum()
}

#[differentiable]
fn p51(x: &[f64]) -> Result<f64, String> {
    if x.is_empty() {
        return Err(String::from("empty"));
    }
    Ok(x.iter().sum::<f64>())
}

#[differentiable]
fn p52(x: &[f64]) -> f64 {
    let v = x.to_vec();
    let mut s = 0.0;
    for w in v.windows(2) {
        s += (w[1] - w[0]).abs();
    }
    s
}

#[differentiable]
fn p53(x: f64) -> f64 {
    let xs = [x, 2.0 * x, x * x];
    xs.iter().sum::<f64>()
}

#[differentiable]
fn p54(x: &[f64]) -> f64 {
    let sq: Vec<f64> = x.iter().map(|v| v * v).collect();
    sq.into_iter().sum()
}

#[test]
fn idioms_in_both_modes() {
    let x = vec![0.5, 1.5, 2.0];
    let y = vec![1.0, -1.0, 0.3];
    test_rule!(p1(&x));
    test_rule!(p3(&x, &y));
    test_rule!(p4(&x));
    test_rule!(p7(&[1.0, 2.0, 3.0], 0.7));
    test_rule!(p8(&x));
    test_rule!(p10(1.3, 5));
    test_rule!(p11(&x));
    test_rule!(p13(&Params { a: 1.0, b: 0.5 }, &[(1.0, 2.0), (0.5, 0.1)]));
    test_rule!(p17(0.7, 4));
    test_rule!(p21(&x));
    test_rule!(p22(&[1.0, -1.2, 0.3]));
    test_rule!(p27(&y));
    test_rule!(p30(1.0, Mode::B));
    test_rule!(p30(1.0, Mode::A));
    test_rule!(p32(&x, &y));
    test_rule!(p35(&x));
    test_rule!(p37(0.4));
    test_rule!(p41(0.4));
    test_rule!(p43(0.4));
    test_rule!(p44(&x));
    test_rule!(p45(&mut x.clone(), 0.1));
    test_rule!(p46(&y));
    test_rule!(p47(&x, &y));
    test_rule!(p48(&x));
    test_rule!(p49(&x));
    test_rule!(p50(&x));
    test_rule!(p51(&x));
    test_rule!(p52(&y));
    test_rule!(p53(0.3));
    test_rule!(p54(&x));
}

// Methods of a model struct over rows, log-sum-exp, sorting then taking, arrays of pairs, a
// `loop` with `break`, tuples returned and taken apart, matrix rows mapped and collected, a
// `&mut Vec` grown and scaled, a polynomial over an array of coefficients, a filtered product,
// chunks summed, a fixed-point iteration on a `mut` argument.

#[derive(Tangent, Clone, Debug)]
struct Linear {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
impl Linear {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() + self.b
    }
    fn loss(&self, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
        let mut l = 0.0;
        for (x, y) in xs.iter().zip(ys) {
            let e = self.predict(x) - y;
            l += e * e;
        }
        l / ys.len() as f64
    }
}

#[differentiable]
fn q1(m: &Linear, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    m.loss(xs, ys)
}

#[differentiable]
fn q2(x: &[f64]) -> f64 {
    let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = x.iter().map(|v| (v - max).exp()).sum();
    max + sum.ln()
}

#[differentiable]
fn q3(x: &[f64], k: usize) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v.iter().take(k).sum()
}

#[differentiable]
fn q4(theta: &[f64; 2], data: &[[f64; 2]]) -> f64 {
    data.iter().map(|p| (theta[0] + theta[1] * p[0] - p[1]).powi(2)).sum()
}

#[differentiable]
fn q5(x: f64, y: f64) -> f64 {
    let r = (x * x + y * y).sqrt();
    let theta = y.atan2(x);
    r * theta.cos() + r.ln_1p()
}

#[differentiable]
fn q6(x: &[f64]) -> f64 {
    let n = x.len();
    let mut acc = 0.0;
    let mut i = 0;
    loop {
        if i >= n {
            break;
        }
        acc += x[i] * (i as f64);
        i += 1;
    }
    acc
}

#[differentiable]
fn q7(x: &[f64]) -> (f64, f64) {
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / x.len() as f64;
    (mean, var)
}

#[differentiable]
fn q8(x: &[f64]) -> f64 {
    let (m, v) = q7(x);
    m + v.sqrt()
}

#[differentiable]
fn q9(a: &Vec<Vec<f64>>, x: &[f64]) -> Vec<f64> {
    a.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
}

#[differentiable]
fn q10(a: &Vec<Vec<f64>>, x: &[f64]) -> f64 {
    q9(a, x).iter().map(|v| v * v).sum()
}

#[differentiable]
fn q11(x: &mut Vec<f64>, y: f64) {
    x.push(y * 2.0);
    for v in x.iter_mut() {
        *v *= y;
    }
}

#[differentiable]
fn q12(x: f64) -> f64 {
    let coeffs = [1.0, -0.5, 0.25, -0.125];
    let mut acc = 0.0;
    for (k, c) in coeffs.iter().enumerate() {
        acc += c * x.powi(k as i32);
    }
    acc
}

#[differentiable]
fn q13(x: &[f64]) -> f64 {
    let pos: Vec<f64> = x.iter().filter(|v| **v > 0.0).cloned().collect();
    if pos.is_empty() { 0.0 } else { pos.iter().product() }
}

#[differentiable]
fn q14(x: &[f64]) -> f64 {
    x.chunks(2).map(|c| c.iter().sum::<f64>().powi(2)).sum()
}

#[differentiable]
fn q15(mut x: f64, steps: usize) -> f64 {
    for _ in 0..steps {
        x = x - 0.1 * (x * x - 2.0);
    }
    x
}

#[differentiable]
fn q16(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::INFINITY, f64::min);
    x.iter().map(|v| v - m).sum()
}

#[differentiable]
fn q17(p: (f64, f64), x: f64) -> f64 {
    let (a, b) = p;
    a * x + b
}

#[test]
fn more_idioms_in_both_modes() {
    let m = Linear { w: vec![0.5, -0.3], b: 0.1 };
    let xs = vec![vec![1.0, 2.0], vec![0.5, -1.0]];
    let ys = vec![0.3, -0.2];
    let x = vec![0.5, 1.5, -2.0, 0.7];
    test_rule!(q1(&m, &xs, &ys));
    test_rule!(q2(&x));
    test_rule!(q3(&x, 2));
    test_rule!(q4(&[0.5, 1.5], &[[1.0, 2.0], [0.5, 0.3]]));
    test_rule!(q5(0.3, 0.8));
    test_rule!(q6(&x));
    test_rule!(q7(&x));
    test_rule!(q8(&x));
    test_rule!(q9(&xs, &[0.2, 0.4]));
    test_rule!(q10(&xs, &[0.2, 0.4]));
    test_rule!(q11(&mut vec![1.0, 2.0], 0.7));
    test_rule!(q12(0.6));
    test_rule!(q13(&x));
    test_rule!(q14(&x));
    test_rule!(q15(0.3, 5));
    test_rule!(q16(&x));
    test_rule!(q17((0.5, 1.0), 2.0));
}

/// Iterators kept in variables, then consumed.
#[differentiable]
fn kept_iterators(x: &[f64], y: &[f64], k: f64) -> f64 {
    let squares = x.iter().map(|v| v * v * k);
    let total: f64 = squares.sum();
    let pairs = x.iter().zip(y);
    let mut s = 0.0;
    for (a, b) in pairs {
        s += a * b;
    }
    let it = y.iter().skip(1);
    let it = it.copied();
    total + s + it.fold(0.0, |acc, v| acc + v.sin())
}

#[test]
fn iterators_kept_in_variables() {
    test_rule!(kept_iterators(&[0.5, 1.5, -2.0], &[1.0, -1.0, 0.3], 0.7));
}

// Particles stepped through `iter_mut`, kinetic energy over a slice of structs, a `Copy`
// state with `&mut self` / `&self` methods, RK4 through a closure, struct update syntax,
// arrays of points, a range mapped and collected, `f64::max` as a path, triple zips, a matrix
// product over `Vec<Vec<f64>>`, a labelled `break` out of nested loops, a generic function,
// `position` for an index, `last().unwrap()`, windows pushed into a `Vec`.

#[derive(Tangent, Clone, Debug)]
struct Particle {
    pos: [f64; 2],
    vel: [f64; 2],
    mass: f64,
}

#[differentiable]
fn r1(ps: &mut Vec<Particle>, dt: f64) {
    for p in ps.iter_mut() {
        p.pos[0] += dt * p.vel[0];
        p.pos[1] += dt * p.vel[1];
    }
}

#[differentiable]
fn r2(ps: &[Particle]) -> f64 {
    ps.iter().map(|p| 0.5 * p.mass * (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1])).sum()
}

#[derive(Tangent, Clone, Copy, Debug)]
struct State {
    x: f64,
    v: f64,
}

#[differentiable]
impl State {
    fn step(&mut self, dt: f64, k: f64) {
        let a = -k * self.x;
        self.v += dt * a;
        self.x += dt * self.v;
    }
    fn energy(&self, k: f64) -> f64 {
        0.5 * self.v * self.v + 0.5 * k * self.x * self.x
    }
}

#[differentiable]
fn r3(s0: State, k: f64, n: usize) -> f64 {
    let mut s = s0;
    for _ in 0..n {
        s.step(0.01, k);
    }
    s.energy(k)
}

#[differentiable]
fn r4(y0: f64, h: f64, n: usize) -> f64 {
    let f = |y: f64| -0.5 * y;
    let mut y = y0;
    for _ in 0..n {
        let k1 = f(y);
        let k2 = f(y + 0.5 * h * k1);
        let k3 = f(y + 0.5 * h * k2);
        let k4 = f(y + h * k3);
        y += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
    y
}

#[differentiable]
fn r5(s: State, x: f64) -> State {
    State { x, ..s }
}

#[differentiable]
fn r6(pts: &[[f64; 3]], w: &[f64; 3]) -> f64 {
    pts.iter().map(|p| p[0] * w[0] + p[1] * w[1] + p[2] * w[2]).map(|z| z.tanh()).sum()
}

#[differentiable]
fn r7(h: f64, n: usize) -> f64 {
    let v: Vec<f64> = (0..n).map(|i| (i as f64 * h).sin()).collect();
    v.iter().rev().take(3).sum()
}

#[differentiable]
fn r8(a: f64, b: f64, c: f64) -> f64 {
    f64::max(a, b).min(c) + a.min(b).max(c)
}

#[differentiable]
fn r9(x: &[f64], y: &[f64], z: &[f64]) -> f64 {
    x.iter().zip(y).zip(z).map(|((a, b), c)| a * b * c).sum()
}

#[differentiable]
fn r10(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    let m = b[0].len();
    let mut c = vec![vec![0.0; m]; n];
    for i in 0..n {
        for j in 0..m {
            for k in 0..b.len() {
                c[i][j] += a[i][k] * b[k][j];
            }
        }
    }
    c
}

#[differentiable]
fn r11(x: &[f64]) -> f64 {
    let mut best = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if x[i] * x[j] > 2.0 {
                best = x[i] + x[j];
                break 'outer;
            }
        }
    }
    best
}

#[differentiable]
fn r12<T: Float>(x: T, y: T) -> T {
    (x * y).sin() + x.powi(2)
}

#[differentiable]
fn r13(x: &[f64]) -> f64 {
    let i = x.iter().position(|&v| v > 0.5).unwrap_or(0);
    x[i] * 2.0
}

#[differentiable]
fn r14(x: &[f64]) -> f64 {
    *x.last().unwrap() * x.first().copied().unwrap_or(1.0)
}

#[differentiable]
fn r15(x: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for w in x.windows(2) {
        out.push(w[1] - w[0]);
    }
    out
}

#[differentiable]
fn r16(x: f64) -> f64 {
    let xs = vec![x, x * x, x.exp()];
    let s = xs.iter().fold(0.0, |a, b| a + b);
    s / xs.len() as f64
}

#[test]
fn simulations_and_structs_in_both_modes() {
    let ps = vec![
        Particle { pos: [0.0, 1.0], vel: [0.5, -0.2], mass: 2.0 },
        Particle { pos: [1.0, 0.0], vel: [-0.1, 0.3], mass: 1.0 },
    ];
    test_rule!(r1(&mut ps.clone(), 0.1));
    test_rule!(r2(&ps));
    test_rule!(r3(State { x: 1.0, v: 0.0 }, 2.0, 10));
    test_rule!(r4(1.0, 0.1, 5));
    test_rule!(r5(State { x: 1.0, v: 0.5 }, 2.0));
    test_rule!(r6(&[[1.0, 2.0, 0.5], [0.3, -0.2, 0.1]], &[0.1, 0.2, -0.3]));
    test_rule!(r7(0.3, 6));
    test_rule!(r8(0.3, 0.5, 0.4));
    test_rule!(r9(&[1.0, 2.0], &[0.5, 0.3], &[-1.0, 2.0]));
    test_rule!(r10(&[vec![1.0, 2.0], vec![0.5, -1.0]], &[vec![0.3, 0.2], vec![1.0, -0.5]]));
    test_rule!(r11(&[1.0, 1.5, 2.5]));
    test_rule!(r12(0.3_f64, 0.7_f64));
    test_rule!(r13(&[0.1, 0.7, 0.2]));
    test_rule!(r14(&[0.1, 0.7, 0.2]));
    test_rule!(r15(&[0.1, 0.7, 0.2]));
    test_rule!(r16(0.4));
}

// Arrays of structs by value and as fields (`[P; 3]`, `pts: [P; 2]`), a const-generic array.

#[derive(Tangent, Clone, Copy, Debug)]
struct P {
    x: f64,
    w: f64,
}

#[differentiable]
fn t1(ps: [P; 3], k: f64) -> f64 {
    let mut s = 0.0;
    for p in ps.iter() {
        s += p.w * (k * p.x).sin();
    }
    s + ps[0].x
}

#[derive(Tangent, Clone, Debug)]
struct Cloud {
    pts: [P; 2],
    scale: f64,
}

#[differentiable]
fn t2(c: &Cloud) -> f64 {
    c.scale * (c.pts[0].x * c.pts[1].w)
}

#[differentiable]
fn t3<const N: usize>(x: [f64; N]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

#[test]
fn arrays_of_structs_and_const_generics() {
    let ps = [P { x: 0.1, w: 1.0 }, P { x: 0.5, w: -0.3 }, P { x: 1.2, w: 0.7 }];
    test_rule!(t1(ps, 0.8));
    test_rule!(t2(&Cloud { pts: [P { x: 0.1, w: 1.0 }, P { x: 0.5, w: -0.3 }], scale: 2.0 }));
    test_rule!(t3([0.3, 0.4, 0.5]));
}

// A trait implemented under `#[differentiable]` and its method called, a stencil, `map` over
// arrays of known length (`state.map(..)`, then `.map(f64::sqrt)`), `iter_mut().for_each`,
// `[..].map(..)` of a literal, a logistic unit, entropy, `copy_from_slice` / `reverse` /
// `enumerate` writes on a built buffer.

trait Model {
    fn predict(&self, x: f64) -> f64;
}

#[derive(Tangent, Clone, Debug)]
struct Line {
    a: f64,
    b: f64,
}

#[differentiable]
impl Model for Line {
    fn predict(&self, x: f64) -> f64 {
        self.a * x + self.b
    }
}

#[differentiable]
fn u1(m: &Line, xs: &[f64], ys: &[f64]) -> f64 {
    let mut l = 0.0;
    for (x, y) in xs.iter().zip(ys) {
        let e = m.predict(*x) - y;
        l += e * e;
    }
    l
}

#[differentiable]
fn u2(x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 1..n - 1 {
        s += (x[i + 1] - 2.0 * x[i] + x[i - 1]).powi(2);
    }
    s
}

#[differentiable]
fn u3(state: [f64; 3], dt: f64) -> f64 {
    let next = state.map(|v| v + dt * v.sin());
    let scaled = next.map(f64::sqrt);
    scaled[0] + scaled[1] * scaled[2]
}

#[differentiable]
fn u4(x: &[f64]) -> f64 {
    let mut y = x.to_vec();
    y.iter_mut().for_each(|v| *v = v.tanh());
    y.iter().sum()
}

#[differentiable]
fn u5(x: f64) -> f64 {
    let v = [1.0, 2.0, 3.0].map(|c| c * x);
    v[0] + v[1] * v[2]
}

#[differentiable]
fn u6(w: &[f64], x: &[f64]) -> f64 {
    let z: f64 = w.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
    1.0 / (1.0 + (-z).exp())
}

#[differentiable]
fn u7(x: &[f64]) -> f64 {
    let total = x.iter().fold(0.0, |a, &b| a + b);
    x.iter().map(|&v| v / total).map(|p| -p * p.ln()).sum()
}

#[differentiable]
fn u8(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    out.copy_from_slice(x);
    out.reverse();
    out.iter_mut().enumerate().for_each(|(i, v)| *v *= i as f64);
    out
}

#[test]
fn traits_stencils_and_array_maps() {
    test_rule!(u1(&Line { a: 0.5, b: 0.1 }, &[1.0, 2.0], &[0.3, 0.9]));
    test_rule!(u2(&[0.1, 0.5, 0.3, 0.9]));
    test_rule!(u3([0.5, 1.0, 2.0], 0.1));
    test_rule!(u4(&[0.1, 0.5, 0.3, 0.9]));
    test_rule!(u5(0.7));
    test_rule!(u6(&[0.1, 0.5], &[0.3, 0.9]));
    test_rule!(u7(&[0.1, 0.5, 0.3, 0.9]));
    test_rule!(u8(&[0.1, 0.5, 0.3, 0.9]));
}

// A Gaussian log-likelihood, softmax cross-entropy over rows with integer labels, Rosenbrock
// over `windows(2)`, an elastic-net penalty, leapfrog steps on copies, the mean of the top two
// after a sort, a triangular solve, a Newton iteration under a `while` with two conditions.

#[differentiable]
fn v1(mu: f64, log_sigma: f64, data: &[f64]) -> f64 {
    let sigma = log_sigma.exp();
    let n = data.len() as f64;
    let ss: f64 = data.iter().map(|&x| ((x - mu) / sigma).powi(2)).sum();
    -0.5 * ss - n * (sigma.ln() + 0.5 * (2.0 * PI).ln())
}

#[differentiable]
fn v2(logits: &[f64], labels: &[usize], k: usize) -> f64 {
    let n = labels.len();
    let mut loss = 0.0;
    for i in 0..n {
        let row = &logits[i * k..(i + 1) * k];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|z| (z - m).exp()).sum::<f64>().ln();
        loss += lse - row[labels[i]];
    }
    loss / n as f64
}

#[differentiable]
fn v3(theta: &[f64]) -> f64 {
    // Rosenbrock written with windows
    theta.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
}

#[differentiable]
fn v4(x: &[f64], lambda: f64) -> f64 {
    let l1: f64 = x.iter().map(|v| v.abs()).sum();
    let l2: f64 = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    lambda * l1 + (1.0 - lambda) * l2
}

#[differentiable]
fn v5(q: &[f64], p: &[f64], eps: f64, steps: usize) -> f64 {
    let mut q = q.to_vec();
    let mut p = p.to_vec();
    for _ in 0..steps {
        for i in 0..p.len() {
            p[i] -= 0.5 * eps * q[i];
        }
        for i in 0..q.len() {
            q[i] += eps * p[i];
        }
        for i in 0..p.len() {
            p[i] -= 0.5 * eps * q[i];
        }
    }
    q.iter().chain(p.iter()).map(|v| v * v).sum::<f64>() * 0.5
}

#[differentiable]
fn v6(x: &[f64]) -> f64 {
    let mut sorted = x.to_vec();
    sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let top: f64 = sorted[..2].iter().sum();
    top / 2.0
}

#[differentiable]
fn v7(a: &[f64], n: usize) -> Vec<f64> {
    // lower triangular solve L y = b with L packed row-major n x n, b = ones
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = 1.0;
        for j in 0..i {
            s -= a[i * n + j] * y[j];
        }
        y[i] = s / a[i * n + i];
    }
    y
}

#[differentiable]
fn v8(x: f64) -> f64 {
    let mut t = x;
    let mut iters = 0;
    while (t * t - 2.0).abs() > 1e-10 && iters < 50 {
        t = 0.5 * (t + 2.0 / t);
        iters += 1;
    }
    t * x
}

#[test]
fn models_samplers_and_solvers() {
    test_rule!(v1(0.3, -0.2, &[0.1, 0.5, -0.3]));
    test_rule!(v2(&[0.1, 0.5, -0.3, 1.0, 0.2, 0.4], &[2, 0], 3));
    test_rule!(v3(&[0.1, 0.5, -0.3, 1.0]));
    test_rule!(v4(&[0.1, 0.5, -0.3, 1.0], 0.3));
    test_rule!(v5(&[0.1, 0.5], &[-0.3, 1.0], 0.1, 5));
    test_rule!(v6(&[0.1, 0.5, -0.3, 1.0]));
    test_rule!(v7(&[2.0, 0.0, 0.5, 3.0], 2));
    test_rule!(v8(1.3));
}

// A `Copy` 2-vector with `self` / `&self` methods and an associated constructor, stepped in a
// loop, mapped over a slice of points, and returned from a least-squares fit.

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct V2 {
    x: f64,
    y: f64,
}

#[differentiable]
impl V2 {
    fn new(x: f64, y: f64) -> V2 {
        V2 { x, y }
    }
    fn add(self, o: V2) -> V2 {
        V2 { x: self.x + o.x, y: self.y + o.y }
    }
    fn scale(self, k: f64) -> V2 {
        V2 { x: k * self.x, y: k * self.y }
    }
    fn dot(&self, o: &V2) -> f64 {
        self.x * o.x + self.y * o.y
    }
    fn norm(&self) -> f64 {
        self.dot(self).sqrt()
    }
}

#[differentiable]
fn a1(p: V2, v: V2, dt: f64, n: usize) -> f64 {
    let mut p = p;
    let mut v = v;
    for _ in 0..n {
        let acc = p.scale(-1.0);
        v = v.add(acc.scale(dt));
        p = p.add(v.scale(dt));
    }
    p.norm() + 0.5 * v.dot(&v)
}

#[differentiable]
fn a2(pts: &[V2], c: V2) -> f64 {
    pts.iter()
        .map(|p| {
            let d = V2::new(p.x - c.x, p.y - c.y);
            d.norm()
        })
        .sum()
}

#[differentiable]
fn a3(xs: &[f64], ys: &[f64]) -> V2 {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let cov: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let slope = cov / var;
    V2 { x: slope, y: my - slope * mx }
}

#[test]
fn value_type_methods_and_struct_results() {
    test_rule!(a1(V2 { x: 1.0, y: 0.0 }, V2 { x: 0.0, y: 1.0 }, 0.1, 5));
    test_rule!(a2(&[V2 { x: 1.0, y: 0.5 }, V2 { x: -0.3, y: 0.2 }], V2 { x: 0.1, y: 0.1 }));
    test_rule!(a3(&[1.0, 2.0, 3.5], &[0.5, 1.7, 2.2]));
}

// An objective behind a trait implemented under `#[differentiable]`, a closure capturing a
// value taken out of an `Option` argument.

#[derive(Tangent, Clone, Debug)]
struct Quad {
    a: f64,
}

trait Objective {
    fn value(&self, x: &[f64]) -> f64;
}

#[differentiable]
impl Objective for Quad {
    fn value(&self, x: &[f64]) -> f64 {
        self.a * x.iter().map(|v| v * v).sum::<f64>()
    }
}

#[differentiable]
fn d1(q: &Quad, x: &[f64]) -> f64 {
    let f = q.value(x);
    f * f
}

#[differentiable]
fn d2(x: &[f64], scale: Option<f64>) -> f64 {
    let s = scale.unwrap_or(1.0);
    let cl = |v: f64| -> f64 { s * v.tanh() };
    x.iter().map(|v| cl(*v)).sum()
}

#[test]
fn trait_objectives_and_captured_options() {
    test_rule!(d1(&Quad { a: 0.5 }, &[0.1, 0.5][..]));
    test_rule!(d2(&[0.1, 0.5][..], Some(2.0)));
    test_rule!(d2(&[0.1, 0.5][..], None));
}

// `v.extend(chain)` (items by value and by reference), a maximum and its position, `split_at`,
// a guarded weighted mean, a reversed copy, an array accumulator indexed modulo its length,
// running sums by `scan` collected, a count above the mean.

#[differentiable]
fn f1(x: &[f64]) -> f64 {
    let mut v: Vec<f64> = Vec::new();
    v.extend(x.iter().map(|a| a * 2.0));
    v.iter().sum()
}

#[differentiable]
fn f2(x: &[f64]) -> f64 {
    let m = x.iter().fold(f64::MIN, |a, &b| a.max(b));
    let idx = x.iter().position(|&v| v == m).unwrap();
    m + idx as f64
}

#[differentiable]
fn f3(x: &[f64]) -> f64 {
    let n = x.len();
    let half = n / 2;
    let (a, b) = x.split_at(half);
    a.iter().sum::<f64>() - b.iter().sum::<f64>()
}

#[differentiable]
fn f4(x: &[f64], w: &[f64]) -> f64 {
    let num: f64 = x.iter().zip(w).map(|(a, b)| a * b).sum();
    let den: f64 = w.iter().sum();
    if den.abs() < 1e-12 { 0.0 } else { num / den }
}

#[differentiable]
fn f5(x: &[f64]) -> f64 {
    let mut v = vec![1.0];
    v.extend(x.iter());
    v.extend(x.iter().skip(1).map(|a| a.sin()));
    v.iter().map(|a| a * a).sum()
}

#[differentiable]
fn f6(x: &[f64]) -> f64 {
    let v: Vec<f64> = x.iter().rev().cloned().collect();
    v[0] * 2.0 + v.last().copied().unwrap_or(0.0)
}

#[differentiable]
fn f7(x: f64, y: f64) -> f64 {
    let t = (x, y);
    let (a, b) = t;
    let arr = [a, b, a * b];
    let mx = arr.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    mx + arr.len() as f64
}

#[differentiable]
fn f8(x: &[f64]) -> f64 {
    let mut acc = [0.0; 3];
    for (i, v) in x.iter().enumerate() {
        acc[i % 3] += v;
    }
    acc.iter().map(|a| a * a).sum()
}

#[differentiable]
fn f9(x: &[f64]) -> Vec<f64> {
    x.iter()
        .scan(0.0, |s, &v| {
            *s += v;
            Some(*s)
        })
        .collect()
}

#[differentiable]
fn f10(x: &[f64]) -> f64 {
    let total: f64 = x.iter().copied().sum();
    let mean = total / x.len() as f64;
    x.iter().filter(|&&v| v > mean).count() as f64 * mean
}

#[test]
fn buffers_grown_split_and_scanned() {
    let x = vec![0.5, -1.5, 2.0, 0.7];
    test_rule!(f1(&x));
    test_rule!(f2(&x));
    test_rule!(f3(&x));
    test_rule!(f4(&x, &[0.1, 0.2, 0.3, 0.4][..]));
    test_rule!(f5(&x));
    test_rule!(f6(&x));
    test_rule!(f7(0.3, 0.8));
    test_rule!(f8(&x));
    test_rule!(f9(&x));
    test_rule!(f10(&x));
}

// A median by sorting, closed-form least squares returning a tuple, a residual through it, a
// model's predictions collected and fitted, a moving-average residual over sub-slices.

#[differentiable]
fn h1(x: &[f64]) -> f64 {
    let mut m = x.to_vec();
    m.sort_by(|a, b| a.total_cmp(b));
    let n = m.len();
    if n % 2 == 1 { m[n / 2] } else { 0.5 * (m[n / 2 - 1] + m[n / 2]) }
}

#[differentiable]
fn h2(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let sx: f64 = xs.iter().sum();
    let sy: f64 = ys.iter().sum();
    let sxx: f64 = xs.iter().map(|x| x * x).sum();
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| x * y).sum();
    let b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    let a = (sy - b * sx) / n;
    (a, b)
}

#[differentiable]
fn h3(xs: &[f64], ys: &[f64]) -> f64 {
    let (a, b) = h2(xs, ys);
    xs.iter().zip(ys).map(|(x, y)| (y - a - b * x).powi(2)).sum()
}

#[differentiable]
fn h4(p: &[f64; 4], t: &[f64]) -> Vec<f64> {
    t.iter().map(|&ti| p[0] * (-p[1] * ti).exp() + p[2] * (p[3] * ti).sin()).collect()
}

#[differentiable]
fn h5(p: &[f64; 4], t: &[f64], y: &[f64]) -> f64 {
    let pred = h4(p, t);
    pred.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / t.len() as f64
}

#[differentiable]
fn h6(x: &[f64], k: usize) -> f64 {
    let mut out = 0.0;
    for i in k..x.len() {
        let w = &x[i - k..i];
        let avg = w.iter().sum::<f64>() / k as f64;
        out += (x[i] - avg).powi(2);
    }
    out
}

#[test]
fn statistics_and_curve_fits() {
    let xs = vec![0.5, 1.5, 2.0, 3.1];
    let ys = vec![1.0, 2.1, 2.9, 4.2];
    test_rule!(h1(&xs));
    test_rule!(h1(&[0.5, 1.5, 2.0][..]));
    test_rule!(h3(&xs, &ys));
    test_rule!(h5(&[1.0, 0.5, 0.3, 2.0], &xs, &ys));
    test_rule!(h6(&xs, 2));
}

/// Settings with defaults.
#[derive(Tangent, Clone, Debug, Default)]
pub struct Settings {
    /// A rate.
    pub rate: f64,
    /// A scale.
    pub scale: f64,
    /// A count.
    pub steps: usize,
}

/// A hand-written default.
#[derive(Tangent, Clone, Debug)]
pub struct Prior {
    /// Mean.
    pub mu: f64,
    /// Spread.
    pub sigma: f64,
}

impl Default for Prior {
    fn default() -> Self {
        Prior { mu: 0.0, sigma: 2.0 }
    }
}

/// `S::default()` of a derived and of a hand-written `Default` (neither with rules of its
/// own), and `..Default::default()` in struct update syntax: values that depend on nothing.
/// Each failed to compile (no rule `default_rrule`, or "expected a type, found a trait") until
/// probe programs found it.
#[differentiable]
fn with_defaults(x: f64) -> f64 {
    let mut s = Settings::default();
    s.rate += x;
    s.steps = 3;
    let p = Prior { mu: x, ..Default::default() };
    let q = Prior::default();
    s.rate * x * s.steps as f64 + (p.mu - q.mu) / p.sigma
}

/// Running moments with a user method named like a buffer's (`push`).
#[derive(Tangent, Clone, Debug, Default)]
pub struct Moments {
    /// Σ x.
    pub sum: f64,
    /// Σ x².
    pub sum_sq: f64,
    /// How many.
    pub count: usize,
}

#[differentiable]
impl Moments {
    fn push(&mut self, x: f64) {
        self.sum += x;
        self.sum_sq += x * x;
        self.count += 1;
    }
    fn variance(&self) -> f64 {
        let n = self.count as f64;
        self.sum_sq / n - (self.sum / n).powi(2)
    }
}

/// A value built by `S::default()` is a user value: its `push` is its own method, not the
/// buffers' rule.
#[differentiable]
fn coefficient_of_variation(x: &[f64]) -> f64 {
    let mut st = Moments::default();
    for v in x {
        st.push(*v);
    }
    st.variance().sqrt() / (st.sum / st.count as f64)
}

#[test]
fn defaults_are_constants() {
    let x = vec![1.0, 2.5, 0.7, 1.9];
    test_rule!(coefficient_of_variation(&x));
    test_rule!(with_defaults(0.7));
    // 3x² + x/2: gradient 6x + 1/2.
    let (v, (g,)) = value_and_gradient!(with_defaults(0.7));
    assert!((v - (3.0 * 0.49 + 0.35)).abs() < 1e-12 && (g - 4.7).abs() < 1e-12);
}

/// The API macros given a method through its trait (`<Line as Model>::predict`), as generic
/// code names trait methods: the rules are the type's own.
#[test]
fn api_macros_through_a_trait_path() {
    let m = Line { a: 0.3, b: -1.0 };
    test_rule!(<Line as Model>::predict(&m, 0.5));
    let (v, (gm, gx)) = value_and_gradient!(<Line as Model>::predict(&m, 0.5));
    assert!((v - (0.15 - 1.0)).abs() < 1e-12);
    assert!((gm.a - 0.5).abs() < 1e-12 && (gm.b - 1.0).abs() < 1e-12 && (gx - 0.3).abs() < 1e-12);
    let (_, d) = value_and_derivative!(
        <Line as Model>::predict(&m, 0.5),
        (&LineTangent { a: 1.0, b: 0.0 }, 0.0)
    );
    assert!((d - 0.5).abs() < 1e-12);
}
