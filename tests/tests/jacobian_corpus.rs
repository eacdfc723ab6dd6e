//! Jacobians across the corpus (issue 16: "every function of the reverse corpus has ... its
//! Jacobian (for vector outputs) against finite differences"): each `#[differentiable]` function
//! of the test corpus whose result has more than one component (a `Vec`, an array, a tuple, a
//! `Box`, a derived struct or enum, a `Vec<Vec<f64>>`), through `value_and_jacobian!` in
//! forward and in reverse mode: the two modes agree with each other (to `MODE_TOL`, never a mode
//! against itself), and every block agrees with central finite differences
//! (`mooncake_runtime::test_utils::check_jacobian`, which steps along each basis tangent of the
//! argument and tries several step sizes; its own test is at the end).
//!
//! The functions are private to their test files, so they are copied here, each under a comment
//! naming its file (the bodies unchanged; a `PartialEq` added to a copied type where the test
//! compares values). Left out, and why:
//!
//! * results of type `Option<..>` / `Result<..>` (`enum_values.rs`, `idioms.rs` `p49`, `p51`):
//!   their tangent (`Option<T::Tangent>`) has no fixed number of components, so no flat view;
//!   their `Some` / `Ok` values are checked by `test_rule!` where they are defined;
//! * results with no differentiable component (`usize`, `bool`: `integer_helpers`,
//!   `let_pop_ok`): a Jacobian with no rows (`jacobian.rs` covers that shape);
//! * functions whose vector output is an argument written through `&mut` (`update_nested`,
//!   the in-place corpus): `value_and_jacobian!` refuses `&mut` arguments;
//! * generic functions over `T: Float` (all return a scalar `T`);
//! * scalar results: their Jacobian is the gradient, which `test_rule!` checks in each file.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;
use mooncake_runtime::test_utils::check_jacobian;

/// Forward and reverse mode agree to this (relative, and absolute near zero).
const MODE_TOL: f64 = 1e-12;

/// Forward-mode and reverse-mode blocks of one shape, equal up to rounding.
fn agree(fwd: &Jacobian, rev: &Jacobian, what: &str) {
    assert_eq!(fwd.shape(), rev.shape(), "{what}: shapes differ");
    for (a, b) in fwd.as_slice().iter().zip(rev.as_slice()) {
        assert!(
            (a - b).abs() <= MODE_TOL * (1.0 + a.abs().max(b.abs())),
            "{what}: forward {fwd:?} vs reverse {rev:?}"
        );
    }
}

/// `block` against central finite differences of `f` at `x`.
fn fd<X, Y>(what: &str, block: &Jacobian, x: &X, f: impl FnMut(&X) -> Y)
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    if let Err(e) = check_jacobian(block, x, f) {
        panic!("{what}: {e}");
    }
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin() + 0.1 * i as f64).collect()
}

// ---- reverse_corpus.rs (and forward_corpus.rs, forward_structs.rs) --------------------------

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

// reverse_corpus.rs, forward_corpus.rs
#[differentiable]
fn tuple_in_out(p: (f64, f64), n: i32) -> (f64, f64) {
    let (a, b) = p;
    (a * b, a.powi(n) - b)
}

// reverse_corpus.rs, forward_structs.rs
#[differentiable]
fn make_point(a: f64) -> Point {
    Point { x: a, y: a * 2.0 }
}

// forward_structs.rs
#[differentiable]
impl Point {
    fn new(x: f64, y: f64) -> Point {
        Point { x, y }
    }
}

// reverse_corpus.rs
#[differentiable]
fn array_result(a: f64, x: &[f64]) -> [f64; 3] {
    let mut r = [0.0; 3];
    r[0] = a * x[0];
    r[1] = x[1].sin();
    r[2] = r[0] + r[1] * a;
    r
}

// reverse_corpus.rs
#[differentiable]
fn pair(a: f64) -> [f64; 2] {
    if a > 0.0 {
        return [a, 2.0 * a];
    }
    [a * a, 1.0]
}

#[test]
fn reverse_corpus() {
    let p = (1.3, 0.7);
    let (y, (fp, fnn)) = value_and_jacobian!(tuple_in_out(p, 3), mode = forward);
    let (yr, (rp, _)) = value_and_jacobian!(tuple_in_out(p, 3), mode = reverse);
    assert_eq!((y, yr), (tuple_in_out(p, 3), y));
    assert_eq!(fnn, NoTangent);
    agree(&fp, &rp, "tuple_in_out");
    fd("tuple_in_out", &fp, &p, |p| tuple_in_out(*p, 3));

    let (y, (fa,)) = value_and_jacobian!(make_point(0.4), mode = forward);
    let (yr, (ra,)) = value_and_jacobian!(make_point(0.4), mode = reverse);
    assert_eq!((y, yr), (make_point(0.4), y));
    agree(&fa, &ra, "make_point");
    fd("make_point", &fa, &0.4, |a| make_point(*a));
    assert_eq!(fa.as_slice(), &[1.0, 2.0]);

    let (y, (fx, fy)) = value_and_jacobian!(Point::new(0.4, -1.1), mode = forward);
    let (_, (rx, ry)) = value_and_jacobian!(Point::new(0.4, -1.1), mode = reverse);
    assert_eq!(y, Point { x: 0.4, y: -1.1 });
    agree(&fx, &rx, "Point::new: x");
    agree(&fy, &ry, "Point::new: y");
    fd("Point::new: x", &fx, &0.4, |x| Point::new(*x, -1.1));
    fd("Point::new: y", &fy, &-1.1, |y| Point::new(0.4, *y));

    let (a, x) = (0.8, xs(3, 0.9));
    let (y, (fa, fx)) = value_and_jacobian!(array_result(a, &x), mode = forward);
    let (yr, (ra, rx)) = value_and_jacobian!(array_result(a, &x), mode = reverse);
    assert_eq!((y, yr), (array_result(a, &x), y));
    assert_eq!(fx.shape(), (3, 3));
    agree(&fa, &ra, "array_result: a");
    agree(&fx, &rx, "array_result: x");
    fd("array_result: a", &fa, &a, |a| array_result(*a, &x));
    fd("array_result: x", &fx, &x, |x| array_result(a, x));

    // Both branches.
    for a in [0.8, -0.5] {
        let (y, (f,)) = value_and_jacobian!(pair(a), mode = forward);
        let (yr, (r,)) = value_and_jacobian!(pair(a), mode = reverse);
        assert_eq!((y, yr), (pair(a), y));
        agree(&f, &r, "pair");
        fd("pair", &f, &a, |a| pair(*a));
    }
}

// ---- everyday.rs ----------------------------------------------------------------------------

// everyday.rs
#[differentiable]
fn softmax(x: &[f64]) -> Vec<f64> {
    let v: Vec<f64> = x.iter().map(|a| a.exp()).collect();
    let z: f64 = v.iter().sum();
    v.iter().map(|e| e / z).collect::<Vec<f64>>()
}

// everyday.rs
#[differentiable]
fn tanh_into(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.tanh();
    }
    out
}

// everyday.rs
#[differentiable]
fn mat_vec_rows(x: &[f64], w: &[Vec<f64>]) -> Vec<f64> {
    w.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>()).collect()
}

// everyday.rs
#[derive(Tangent, Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
    n_in: usize,
}

// everyday.rs
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

// everyday.rs
#[derive(Tangent, Clone, Copy, Debug)]
struct Vec2 {
    x: f64,
    y: f64,
}

// everyday.rs
#[differentiable]
impl Vec2 {
    fn scale(self, k: f64) -> Vec2 {
        Vec2 { x: self.x * k, y: self.y * k }
    }
}

// everyday.rs
#[differentiable]
fn tuple_ret(x: &[f64]) -> (f64, f64) {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (m, x.iter().map(|v| (v - m).powi(2)).sum::<f64>())
}

#[test]
fn everyday() {
    let x = xs(4, 0.7);
    for (name, f) in [("softmax", softmax as fn(&[f64]) -> Vec<f64>), ("tanh_into", tanh_into)] {
        let (fj, rj, y) = if name == "softmax" {
            let (y, (f,)) = value_and_jacobian!(softmax(&x), mode = forward);
            let (_, (r,)) = value_and_jacobian!(softmax(&x), mode = reverse);
            (f, r, y)
        } else {
            let (y, (f,)) = value_and_jacobian!(tanh_into(&x), mode = forward);
            let (_, (r,)) = value_and_jacobian!(tanh_into(&x), mode = reverse);
            (f, r, y)
        };
        assert_eq!(y, f(&x));
        agree(&fj, &rj, name);
        fd(name, &fj, &x, |x| f(x));
    }

    let w = vec![xs(4, 1.1), xs(4, 0.3), xs(4, 2.3)];
    let (y, (fx, fw)) = value_and_jacobian!(mat_vec_rows(&x, &w[..]), mode = forward);
    let (_, (rx, rw)) = value_and_jacobian!(mat_vec_rows(&x, &w[..]), mode = reverse);
    assert_eq!(y, mat_vec_rows(&x, &w));
    assert_eq!((fx.shape(), fw.shape()), ((3, 4), (3, 12)));
    agree(&fx, &rx, "mat_vec_rows: x");
    agree(&fw, &rw, "mat_vec_rows: w");
    fd("mat_vec_rows: x", &fx, &x, |x| mat_vec_rows(x, &w));
    fd("mat_vec_rows: w", &fw, &w, |w| mat_vec_rows(&x, w));

    // A method, by its path; the struct argument's columns are `w` then `b`.
    let layer = Layer { w: xs(6, 0.5), b: vec![0.1, -0.2], n_in: 3 };
    let x3 = xs(3, 1.4);
    let (y, (fl, fx)) = value_and_jacobian!(Layer::forward(&layer, &x3), mode = forward);
    let (_, (rl, rx)) = value_and_jacobian!(Layer::forward(&layer, &x3), mode = reverse);
    assert_eq!(y, layer.forward(&x3));
    assert_eq!((fl.shape(), fx.shape()), ((2, 8), (2, 3)));
    agree(&fl, &rl, "Layer::forward: layer");
    agree(&fx, &rx, "Layer::forward: x");
    fd("Layer::forward: layer", &fl, &layer, |l| l.forward(&x3));
    fd("Layer::forward: x", &fx, &x3, |x| layer.forward(x));

    let v = Vec2 { x: 0.6, y: -1.4 };
    let (y, (fv, fk)) = value_and_jacobian!(Vec2::scale(v, 2.5), mode = forward);
    let (_, (rv, rk)) = value_and_jacobian!(Vec2::scale(v, 2.5), mode = reverse);
    assert_eq!((y.x, y.y), (1.5, -3.5));
    assert_eq!(fv.as_slice(), &[2.5, 0.0, 0.0, 2.5]);
    agree(&fv, &rv, "Vec2::scale: self");
    agree(&fk, &rk, "Vec2::scale: k");
    fd("Vec2::scale: self", &fv, &v, |v| v.scale(2.5));
    fd("Vec2::scale: k", &fk, &2.5, |k| v.scale(*k));

    let (y, (f,)) = value_and_jacobian!(tuple_ret(&x), mode = forward);
    let (_, (r,)) = value_and_jacobian!(tuple_ret(&x), mode = reverse);
    assert_eq!(y, tuple_ret(&x));
    agree(&f, &r, "tuple_ret");
    fd("tuple_ret", &f, &x, |x| tuple_ret(x));
}

// ---- forward_corpus.rs, local_arrays.rs, left_in_code.rs --------------------------------------

// forward_corpus.rs
#[differentiable]
fn returns_vec(x: &[f64], a: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for v in x.iter() {
        out.push(*v * a);
    }
    out
}

// local_arrays.rs
#[differentiable]
fn returned(x: &[f64]) -> [f64; 2] {
    let mut r = [0.0; 2];
    r[0] = x[0] * x[1];
    r[1] = x[1].cos();
    r
}

// left_in_code.rs
#[differentiable]
fn boxed_scale(x: f64) -> Box<f64> {
    Box::new(2.0 * x)
}

#[test]
fn forward_corpus_local_arrays_and_boxes() {
    let (x, a) = (xs(3, 0.8), 1.7);
    let (y, (fx, fa)) = value_and_jacobian!(returns_vec(&x, a), mode = forward);
    let (_, (rx, ra)) = value_and_jacobian!(returns_vec(&x, a), mode = reverse);
    assert_eq!(y, returns_vec(&x, a));
    agree(&fx, &rx, "returns_vec: x");
    agree(&fa, &ra, "returns_vec: a");
    fd("returns_vec: x", &fx, &x, |x| returns_vec(x, a));
    fd("returns_vec: a", &fa, &a, |a| returns_vec(&x, *a));

    let (y, (f,)) = value_and_jacobian!(returned(&x), mode = forward);
    let (_, (r,)) = value_and_jacobian!(returned(&x), mode = reverse);
    assert_eq!(y, returned(&x));
    assert_eq!(f.shape(), (2, 3));
    agree(&f, &r, "returned");
    fd("returned", &f, &x, |x| returned(x));

    let (y, (f,)) = value_and_jacobian!(boxed_scale(0.7), mode = forward);
    let (_, (r,)) = value_and_jacobian!(boxed_scale(0.7), mode = reverse);
    assert_eq!(*y, 1.4);
    agree(&f, &r, "boxed_scale");
    fd("boxed_scale", &f, &0.7, |x| boxed_scale(*x));
}

// ---- reverse_gaps.rs ----------------------------------------------------------------------------

// reverse_gaps.rs
/// Rotates `x` by the axis-angle vector `w` (Rodrigues' formula), as a bundle adjustment does.
#[differentiable]
fn rotate(w: [f64; 3], x: [f64; 3]) -> [f64; 3] {
    let theta = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
    let k = [w[0] / theta, w[1] / theta, w[2] / theta];
    let (c, s) = (theta.cos(), theta.sin());
    let kx = [k[1] * x[2] - k[2] * x[1], k[2] * x[0] - k[0] * x[2], k[0] * x[1] - k[1] * x[0]];
    let kd = k[0] * x[0] + k[1] * x[1] + k[2] * x[2];
    let mut r = [0.0; 3];
    for i in 0..3 {
        r[i] = x[i] * c + kx[i] * s + k[i] * kd * (1.0 - c);
    }
    r
}

// reverse_gaps.rs
/// An array returned through several calls.
#[differentiable]
fn scaled(a: f64, v: [f64; 3]) -> [f64; 3] {
    [a * v[0], a * v[1], a * v[2]]
}

// reverse_gaps.rs
#[differentiable]
fn twice_scaled(a: f64, v: [f64; 3]) -> [f64; 3] {
    let u = scaled(a, v);
    scaled(a, u)
}

// reverse_gaps.rs
/// A `Vec` returned by a call, then grown and written.
#[differentiable]
fn make_vec(a: f64, n: usize) -> Vec<f64> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(a * (i as f64 + 1.0));
    }
    v
}

// reverse_gaps.rs
#[differentiable]
fn step3(r: [f64; 3], h: f64) -> [f64; 3] {
    [r[0] + h * r[1], r[1] - h * r[0], r[2] * (1.0 - h)]
}

#[test]
fn reverse_gaps() {
    let (w, x) = ([0.3, -0.5, 0.8], [1.0, 0.2, -0.7]);
    let (y, (fw, fx)) = value_and_jacobian!(rotate(w, x), mode = forward);
    let (_, (rw, rx)) = value_and_jacobian!(rotate(w, x), mode = reverse);
    assert_eq!(y, rotate(w, x));
    agree(&fw, &rw, "rotate: w");
    agree(&fx, &rx, "rotate: x");
    fd("rotate: w", &fw, &w, |w| rotate(*w, x));
    fd("rotate: x", &fx, &x, |x| rotate(w, *x));

    let (a, v) = (1.3, [0.4, -0.9, 2.0]);
    for (name, f) in
        [("scaled", scaled as fn(f64, [f64; 3]) -> [f64; 3]), ("twice_scaled", twice_scaled)]
    {
        let ((y, (fa, fv)), (_, (ra, rv))) = if name == "scaled" {
            (
                value_and_jacobian!(scaled(a, v), mode = forward),
                value_and_jacobian!(scaled(a, v), mode = reverse),
            )
        } else {
            (
                value_and_jacobian!(twice_scaled(a, v), mode = forward),
                value_and_jacobian!(twice_scaled(a, v), mode = reverse),
            )
        };
        assert_eq!(y, f(a, v));
        agree(&fa, &ra, name);
        agree(&fv, &rv, name);
        fd(name, &fa, &a, |a| f(*a, v));
        fd(name, &fv, &v, |v| f(a, *v));
    }

    let (y, (fa, n)) = value_and_jacobian!(make_vec(0.6, 4), mode = forward);
    let (_, (ra, _)) = value_and_jacobian!(make_vec(0.6, 4), mode = reverse);
    assert_eq!(y, make_vec(0.6, 4));
    assert_eq!(n, NoTangent);
    agree(&fa, &ra, "make_vec");
    fd("make_vec", &fa, &0.6, |a| make_vec(*a, 4));

    let (r, h) = ([0.5, -1.5, 2.5], 0.1);
    let (y, (fr, fh)) = value_and_jacobian!(step3(r, h), mode = forward);
    let (_, (rr, rh)) = value_and_jacobian!(step3(r, h), mode = reverse);
    assert_eq!(y, step3(r, h));
    agree(&fr, &rr, "step3: r");
    agree(&fh, &rh, "step3: h");
    fd("step3: r", &fr, &r, |r| step3(*r, h));
    fd("step3: h", &fh, &h, |h| step3(r, *h));
}

// ---- enum_values.rs -----------------------------------------------------------------------------

// enum_values.rs (`PartialEq` added)
#[derive(Tangent, Clone, Debug, PartialEq)]
enum Kernel {
    Weights(Vec<f64>),
    Gauss(f64),
}

// enum_values.rs
#[differentiable]
fn make_kernel(scale: f64, n: usize) -> Kernel {
    if n > 0 {
        let mut w = vec![0.0; n];
        for (i, wi) in w.iter_mut().enumerate() {
            *wi = scale / (1.0 + i as f64);
        }
        Kernel::Weights(w)
    } else {
        Kernel::Gauss(scale)
    }
}

#[test]
fn enum_values() {
    // Both variants: the rows are the fields of the value's variant.
    for (n, rows) in [(3, 3), (0, 1)] {
        let (y, (f, _)) = value_and_jacobian!(make_kernel(1.7, n), mode = forward);
        let (_, (r, _)) = value_and_jacobian!(make_kernel(1.7, n), mode = reverse);
        assert_eq!(y, make_kernel(1.7, n));
        assert_eq!(f.shape(), (rows, 1));
        agree(&f, &r, "make_kernel");
        fd("make_kernel", &f, &1.7, |s| make_kernel(*s, n));
    }
}

// ---- idioms.rs ------------------------------------------------------------------------------------

// idioms.rs
#[differentiable]
fn p4(x: &[f64]) -> Vec<f64> {
    let v: Vec<f64> = x.iter().map(|a| a.exp()).collect();
    let s: f64 = v.iter().sum();
    v.iter().map(|e| e / s).collect()
}

// idioms.rs
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

// idioms.rs
#[differentiable]
fn g37(x: f64) -> (f64, f64) {
    (x.sin(), x.cos())
}

// idioms.rs
#[differentiable]
fn q7(x: &[f64]) -> (f64, f64) {
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / x.len() as f64;
    (mean, var)
}

// idioms.rs
#[differentiable]
#[allow(clippy::ptr_arg)]
fn q9(a: &Vec<Vec<f64>>, x: &[f64]) -> Vec<f64> {
    a.iter().map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
}

// idioms.rs
#[derive(Tangent, Clone, Copy, Debug)]
struct State {
    x: f64,
    v: f64,
}

// idioms.rs
#[differentiable]
fn r5(s: State, x: f64) -> State {
    State { x, ..s }
}

// idioms.rs
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

// idioms.rs
#[differentiable]
fn r15(x: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for w in x.windows(2) {
        out.push(w[1] - w[0]);
    }
    out
}

// idioms.rs
#[differentiable]
fn u8(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    out.copy_from_slice(x);
    out.reverse();
    out.iter_mut().enumerate().for_each(|(i, v)| *v *= i as f64);
    out
}

// idioms.rs
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

// idioms.rs
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct V2 {
    x: f64,
    y: f64,
}

// idioms.rs
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
}

// idioms.rs
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

// idioms.rs
#[differentiable]
fn f9(x: &[f64]) -> Vec<f64> {
    x.iter()
        .scan(0.0, |s, &v| {
            *s += v;
            Some(*s)
        })
        .collect()
}

// idioms.rs
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

// idioms.rs
#[differentiable]
fn h4(p: &[f64; 4], t: &[f64]) -> Vec<f64> {
    t.iter().map(|&ti| p[0] * (-p[1] * ti).exp() + p[2] * (p[3] * ti).sin()).collect()
}

type SliceToVec = fn(&[f64]) -> Vec<f64>;

#[test]
fn idioms_of_one_slice() {
    let x = xs(5, 0.6);
    let cases: [(&str, SliceToVec); 5] = [
        ("p4", p4),
        ("r15", r15),
        ("u8", u8),
        ("f9", f9),
        ("q7", |x| {
            let (a, b) = q7(x);
            vec![a, b]
        }),
    ];
    for (name, f) in cases {
        let (fj, rj) = match name {
            "p4" => (
                value_and_jacobian!(p4(&x), mode = forward).1.0,
                value_and_jacobian!(p4(&x), mode = reverse).1.0,
            ),
            "r15" => (
                value_and_jacobian!(r15(&x), mode = forward).1.0,
                value_and_jacobian!(r15(&x), mode = reverse).1.0,
            ),
            "u8" => (
                value_and_jacobian!(u8(&x), mode = forward).1.0,
                value_and_jacobian!(u8(&x), mode = reverse).1.0,
            ),
            "f9" => (
                value_and_jacobian!(f9(&x), mode = forward).1.0,
                value_and_jacobian!(f9(&x), mode = reverse).1.0,
            ),
            _ => (
                value_and_jacobian!(q7(&x), mode = forward).1.0,
                value_and_jacobian!(q7(&x), mode = reverse).1.0,
            ),
        };
        agree(&fj, &rj, name);
        fd(name, &fj, &x, |x| f(x));
    }
    assert_eq!(value_and_jacobian!(q7(&x)).0, q7(&x));
    assert_eq!(value_and_jacobian!(f9(&x)).0, f9(&x));
}

#[test]
fn idioms_of_several_arguments() {
    let (a, b) = (xs(3, 0.4), xs(2, 1.9));
    let (y, (fa, fb)) = value_and_jacobian!(p32(&a, &b), mode = forward);
    let (_, (ra, rb)) = value_and_jacobian!(p32(&a, &b), mode = reverse);
    assert_eq!(y, p32(&a, &b));
    assert_eq!((fa.shape(), fb.shape()), ((6, 3), (6, 2)));
    agree(&fa, &ra, "p32: a");
    agree(&fb, &rb, "p32: b");
    fd("p32: a", &fa, &a, |a| p32(a, &b));
    fd("p32: b", &fb, &b, |b| p32(&a, b));

    let (y, (f,)) = value_and_jacobian!(g37(0.9), mode = forward);
    let (_, (r,)) = value_and_jacobian!(g37(0.9), mode = reverse);
    assert_eq!(y, g37(0.9));
    agree(&f, &r, "g37");
    fd("g37", &f, &0.9, |x| g37(*x));

    let m = vec![xs(2, 0.3), xs(2, 1.2), xs(2, 2.1)];
    let v = vec![0.2, 0.4];
    let (y, (fm, fv)) = value_and_jacobian!(q9(&m, &v), mode = forward);
    let (_, (rm, rv)) = value_and_jacobian!(q9(&m, &v), mode = reverse);
    assert_eq!(y, q9(&m, &v));
    agree(&fm, &rm, "q9: a");
    agree(&fv, &rv, "q9: x");
    fd("q9: a", &fm, &m, |m| q9(m, &v));
    fd("q9: x", &fv, &v, |v| q9(&m, v));

    let s = State { x: 1.0, v: 0.5 };
    let (y, (fs, fx)) = value_and_jacobian!(r5(s, 2.0), mode = forward);
    let (_, (rs, rx)) = value_and_jacobian!(r5(s, 2.0), mode = reverse);
    assert_eq!((y.x, y.v), (2.0, 0.5));
    // The result's `x` is the argument `x`, its `v` the state's `v`.
    assert_eq!(fs.as_slice(), &[0.0, 0.0, 0.0, 1.0]);
    assert_eq!(fx.as_slice(), &[1.0, 0.0]);
    agree(&fs, &rs, "r5: s");
    agree(&fx, &rx, "r5: x");
    fd("r5: s", &fs, &s, |s| r5(*s, 2.0));
    fd("r5: x", &fx, &2.0, |x| r5(s, *x));

    let (ma, mb) = (vec![xs(3, 0.2), xs(3, 0.9)], vec![xs(2, 1.3), xs(2, 0.5), xs(2, 2.7)]);
    let (y, (fa, fb)) = value_and_jacobian!(r10(&ma[..], &mb[..]), mode = forward);
    let (_, (ra, rb)) = value_and_jacobian!(r10(&ma[..], &mb[..]), mode = reverse);
    assert_eq!(y, r10(&ma, &mb));
    assert_eq!((fa.shape(), fb.shape()), ((4, 6), (4, 6)));
    agree(&fa, &ra, "r10: a");
    agree(&fb, &rb, "r10: b");
    fd("r10: a", &fa, &ma, |a| r10(a, &mb));
    fd("r10: b", &fb, &mb, |b| r10(&ma, b));

    let l = vec![2.0, 0.0, 0.0, 0.5, 3.0, 0.0, -0.4, 0.7, 1.5];
    let (y, (f, n)) = value_and_jacobian!(v7(&l, 3), mode = forward);
    let (_, (r, _)) = value_and_jacobian!(v7(&l, 3), mode = reverse);
    assert_eq!(y, v7(&l, 3));
    assert_eq!(n, NoTangent);
    agree(&f, &r, "v7");
    fd("v7", &f, &l, |l| v7(l, 3));

    let (y, (fx, fy)) = value_and_jacobian!(V2::new(0.3, 0.8), mode = forward);
    let (_, (rx, ry)) = value_and_jacobian!(V2::new(0.3, 0.8), mode = reverse);
    assert_eq!(y, V2 { x: 0.3, y: 0.8 });
    agree(&fx, &rx, "V2::new: x");
    agree(&fy, &ry, "V2::new: y");
    fd("V2::new: x", &fx, &0.3, |x| V2::new(*x, 0.8));
    fd("V2::new: y", &fy, &0.8, |y| V2::new(0.3, *y));

    // Methods taking `self` by value, by their paths.
    let (u, w) = (V2 { x: 0.3, y: -0.8 }, V2 { x: 1.1, y: 0.2 });
    let (y, (fu, fw)) = value_and_jacobian!(V2::add(u, w), mode = forward);
    let (_, (ru, rw)) = value_and_jacobian!(V2::add(u, w), mode = reverse);
    assert_eq!(y, u.add(w));
    assert_eq!(fu.as_slice(), &[1.0, 0.0, 0.0, 1.0]);
    agree(&fu, &ru, "V2::add: self");
    agree(&fw, &rw, "V2::add: o");
    fd("V2::add: self", &fu, &u, |u| u.add(w));
    fd("V2::add: o", &fw, &w, |w| u.add(*w));
    let (y, (fu, fk)) = value_and_jacobian!(V2::scale(u, 1.7), mode = forward);
    let (_, (ru, rk)) = value_and_jacobian!(V2::scale(u, 1.7), mode = reverse);
    assert_eq!(y, u.scale(1.7));
    agree(&fu, &ru, "V2::scale: self");
    agree(&fk, &rk, "V2::scale: k");
    fd("V2::scale: self", &fu, &u, |u| u.scale(1.7));
    fd("V2::scale: k", &fk, &1.7, |k| u.scale(*k));

    let (px, py) = (vec![1.0, 2.0, 3.5], vec![0.5, 1.7, 2.2]);
    for (name, f) in [
        (
            "a3",
            (|x: &[f64], y: &[f64]| {
                let v = a3(x, y);
                (v.x, v.y)
            }) as fn(&[f64], &[f64]) -> (f64, f64),
        ),
        ("h2", h2),
    ] {
        let ((fx, fy), (rx, ry)) = if name == "a3" {
            (
                value_and_jacobian!(a3(&px, &py), mode = forward).1,
                value_and_jacobian!(a3(&px, &py), mode = reverse).1,
            )
        } else {
            (
                value_and_jacobian!(h2(&px, &py), mode = forward).1,
                value_and_jacobian!(h2(&px, &py), mode = reverse).1,
            )
        };
        assert_eq!((fx.shape(), fy.shape()), ((2, 3), (2, 3)));
        agree(&fx, &rx, name);
        agree(&fy, &ry, name);
        fd(name, &fx, &px, |x| f(x, &py));
        fd(name, &fy, &py, |y| f(&px, y));
    }
    // `a3` and `h2` fit the same line, as (slope, intercept) and (intercept, slope).
    let (_, (ax, _)) = value_and_jacobian!(a3(&px, &py), mode = forward);
    let (_, (hx, _)) = value_and_jacobian!(h2(&px, &py), mode = forward);
    for j in 0..3 {
        assert!((ax[(0, j)] - hx[(1, j)]).abs() < 1e-9);
        assert!((ax[(1, j)] - hx[(0, j)]).abs() < 1e-9);
    }

    let (p, t) = ([1.5, 0.3, 0.7, 2.0], xs(5, 0.5));
    let (y, (fp, ft)) = value_and_jacobian!(h4(&p, &t), mode = forward);
    let (_, (rp, rt)) = value_and_jacobian!(h4(&p, &t), mode = reverse);
    assert_eq!(y, h4(&p, &t));
    assert_eq!((fp.shape(), ft.shape()), ((5, 4), (5, 5)));
    agree(&fp, &rp, "h4: p");
    agree(&ft, &rt, "h4: t");
    fd("h4: p", &fp, &p, |p| h4(p, &t));
    fd("h4: t", &ft, &t, |t| h4(&p, t));
}

// ---- the checker itself ---------------------------------------------------------------------------

#[test]
fn the_checker_catches_a_wrong_entry_and_a_wrong_shape() {
    use mooncake_runtime::test_utils::{JacobianConfig, check_jacobian_with, fd_jacobian};
    let x = xs(3, 0.8);
    let (_, (good,)) = value_and_jacobian!(softmax(&x), mode = reverse);
    fd("softmax", &good, &x, |x| softmax(x));
    // One entry off by 1e-4: caught, and named.
    let mut data = good.clone().into_vec();
    data[5] += 1e-4;
    let bad = Jacobian::from_row_major(3, 3, data).unwrap();
    let e = check_jacobian(&bad, &x, |x| softmax(x)).unwrap_err().to_string();
    assert!(e.contains("column 2") && e.contains("entry (1, 2)"), "{e}");
    // A looser tolerance lets it pass.
    let loose = JacobianConfig { rtol: 1e-3, atol: 1e-3, ..JacobianConfig::default() };
    assert!(check_jacobian_with(&loose, &bad, &x, |x| softmax(x)).is_ok());
    // Another shape.
    let e = check_jacobian(&Jacobian::zeros(3, 2), &x, |x| softmax(x)).unwrap_err().to_string();
    assert!(e.contains("3 components and the argument 3"), "{e}");
    // `fd_jacobian` at one step is close to the exact block.
    let j = fd_jacobian(&x, 1e-6, |x| softmax(x));
    for (a, b) in j.as_slice().iter().zip(good.as_slice()) {
        assert!((a - b).abs() < 1e-8);
    }
}
