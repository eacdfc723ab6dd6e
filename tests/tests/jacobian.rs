//! `value_and_jacobian!` (issue 16): Jacobians of functions with vector, array, tuple and struct
//! results, checked against central finite differences of the primal and forward mode against
//! reverse mode (never a mode against itself). Covered: element-wise maps, loops with branches,
//! two slices and a scalar, an array result, struct results (flat views from
//! `#[derive(Tangent)]`: flat, nested with buffer, array, tuple-struct and integer fields, and a
//! struct argument), an enum-with-data result, an integer argument (no block),
//! `Const(..)` arguments, by-value and by-name arguments, `f32`, 1 x N and N x 1 shapes, a
//! result with no components, the automatic choice of mode (passes counted), the message of a
//! result that changes shape between passes, and the methods of `Jacobian`.

#![allow(clippy::needless_range_loop)]

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;
use std::cell::Cell;

// ---- the functions ------------------------------------------------------------------------

/// Element-wise: `y_i = x_i sin x_i + exp(x_i / 2)`; a diagonal Jacobian.
#[differentiable]
fn elementwise(x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] * x[i].sin() + (0.5 * x[i]).exp();
    }
    y
}

/// A running accumulator with a branch on each element: a lower-triangular Jacobian.
#[differentiable]
fn running(x: &[f64], t: f64) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    let mut acc = 0.0;
    for i in 0..x.len() {
        if x[i] > t {
            acc += x[i] * x[i];
        } else {
            acc = 0.5 * acc + t * x[i];
        }
        if acc > 1.0 {
            out[i] = acc.ln();
        } else {
            out[i] = acc.tanh();
        }
    }
    out
}

/// Two slices and a scalar; `a.len() + 1` outputs from `2 a.len() + 1` inputs.
#[differentiable]
fn mix(a: &[f64], b: &[f64], s: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut total = 0.0;
    for i in 0..a.len() {
        out.push(a[i] * b[i] + s * a[i] * a[i]);
        total += b[i].cos();
    }
    out.push(s * total);
    out
}

/// An array result: `u × v`.
#[differentiable]
fn cross(u: [f64; 3], v: &[f64]) -> [f64; 3] {
    [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
}

/// A struct result, with a buffer field and a field with no tangent.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Summary {
    mean: f64,
    centred: Vec<f64>,
    count: usize,
}

#[differentiable]
fn summarise(x: &[f64], w: f64) -> Summary {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    let mean = s / x.len() as f64;
    let mut centred = vec![0.0; x.len()];
    for i in 0..x.len() {
        centred[i] = w * (x[i] - mean) * (x[i] - mean);
    }
    Summary { mean, centred, count: x.len() }
}

/// A nested result: a tuple struct, a buffer, an array and integers among the fields (the
/// derived tangents' flat views, no `FlatTangent` written by hand).
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Moments(f64, f64);

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Fit {
    level: f64,
    steps: usize,
    residuals: Vec<f64>,
    moments: Moments,
    ends: [f64; 2],
    label: u32,
}

#[differentiable]
fn fit(x: &[f64], a: f64, b: f64) -> Fit {
    let mut residuals = vec![0.0; x.len()];
    let mut s1 = 0.0;
    let mut s2 = 1.0;
    for i in 0..x.len() {
        let r = x[i] - (a + b * i as f64);
        residuals[i] = r;
        s1 += r;
        s2 += r * r;
    }
    let ends = [residuals[0] * a, residuals[x.len() - 1] / b];
    Fit { level: a * b, steps: x.len(), residuals, moments: Moments(s1, s2.sqrt()), ends, label: 7 }
}

/// `fit`'s result in the order of its flat view: `level`, `residuals`, `moments`, `ends`.
fn flat_fit(f: Fit) -> Vec<f64> {
    let mut v = vec![f.level];
    v.extend(f.residuals);
    v.extend([f.moments.0, f.moments.1]);
    v.extend(f.ends);
    v
}

/// A struct argument (its tangent's flat view gives the columns) and a struct result.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Line {
    a: f64,
    b: f64,
    n: usize,
}

#[differentiable]
fn line_fit(x: &[f64], line: &Line) -> Fit {
    fit(x, line.a, line.b)
}

/// An enum with data as the result: the Jacobian's rows are the fields of the value's variant.
#[derive(Tangent, Clone, Debug, PartialEq)]
enum Shape {
    Flat,
    Weights(Vec<f64>, f64),
    Gauss(f64),
}

#[differentiable]
fn make_shape(scale: f64, n: usize) -> Shape {
    if n > 1 {
        let mut w = vec![0.0; n];
        for (i, wi) in w.iter_mut().enumerate() {
            *wi = scale / (1.0 + i as f64);
        }
        Shape::Weights(w, scale * scale)
    } else if n == 1 {
        Shape::Gauss(scale.exp())
    } else {
        Shape::Flat
    }
}

/// An integer argument: `x, x², .., x^k` (an N x 1 Jacobian).
#[differentiable]
fn powers(x: f64, k: usize) -> Vec<f64> {
    let mut out = Vec::new();
    let mut p = 1.0;
    for _ in 0..k {
        p *= x;
        out.push(p);
    }
    out
}

/// A scalar result: a 1 x N Jacobian, the gradient.
#[differentiable]
fn soft_norm(x: &[f64]) -> f64 {
    let mut s = 1.0;
    for v in x.iter() {
        s += v * v;
    }
    s.sqrt()
}

/// A buffer by value and a tuple result.
#[differentiable]
fn shift_and_sum(x: Vec<f64>, s: f64) -> (Vec<f64>, f64) {
    let mut y = vec![0.0; x.len()];
    let mut t = 0.0;
    for i in 0..x.len() {
        y[i] = (x[i] + s).sin();
        t += x[i] * s;
    }
    (y, t)
}

/// `f32` throughout.
#[differentiable]
fn scale32(x: &[f32], a: f32) -> Vec<f32> {
    let mut y = vec![0.0_f32; x.len()];
    for i in 0..x.len() {
        y[i] = a * x[i] * x[i];
    }
    y
}

/// The first `k` elements, squared (none for `k = 0`).
#[differentiable]
fn first_squares(x: &[f64], k: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..k {
        out.push(x[i] * x[i]);
    }
    out
}

// ---- counting the passes: a scalar with hand-written rules that count their calls ------------

thread_local! {
    static FORWARD_CALLS: Cell<usize> = const { Cell::new(0) };
    static REVERSE_CALLS: Cell<usize> = const { Cell::new(0) };
}

fn tick(x: f64) -> f64 {
    x
}

#[frule(for = tick)]
fn tick_frule(x: Dual<f64, f64>) -> Dual<f64, f64> {
    FORWARD_CALLS.with(|c| c.set(c.get() + 1));
    x
}

#[rrule(for = tick)]
fn tick_rrule(x: CoDual<f64, NoFData>) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64,)) {
    REVERSE_CALLS.with(|c| c.set(c.get() + 1));
    (x, |dy| (dy,))
}

/// `k` outputs from `x.len()` inputs, each pass calling `tick` once.
#[differentiable]
fn fan(x: &[f64], k: usize) -> Vec<f64> {
    let s = tick(x[0]);
    let mut out = Vec::new();
    for j in 0..k {
        out.push(s * x[j % x.len()] + j as f64);
    }
    out
}

fn passes() -> (usize, usize) {
    let f = FORWARD_CALLS.with(|c| c.replace(0));
    let r = REVERSE_CALLS.with(|c| c.replace(0));
    (f, r)
}

// ---- the checks ---------------------------------------------------------------------------

/// The central-difference Jacobian of `f` at `x`.
fn fd_jacobian(x: &[f64], f: impl Fn(&[f64]) -> Vec<f64>) -> Jacobian {
    let m = f(x).len();
    let n = x.len();
    let mut data = vec![0.0; m * n];
    for j in 0..n {
        let h = 1e-6 * x[j].abs().max(1.0);
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[j] += h;
        xm[j] -= h;
        let (yp, ym) = (f(&xp), f(&xm));
        for i in 0..m {
            data[i * n + j] = (yp[i] - ym[i]) / (2.0 * h);
        }
    }
    Jacobian::from_row_major(m, n, data).unwrap()
}

/// `a` and `b` of one shape and equal entries up to `tol` (relative, and absolute near zero).
fn assert_jacobians_close(a: &Jacobian, b: &Jacobian, tol: f64, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes differ");
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            assert_relative_eq!(a[(i, j)], b[(i, j)], epsilon = tol, max_relative = tol);
        }
    }
}

/// Finite differences agree to this (the functions are smooth at the points chosen).
const FD_TOL: f64 = 1e-6;
/// Forward and reverse mode agree to this.
const MODE_TOL: f64 = 1e-12;

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin()).collect()
}

#[test]
fn elementwise_map_is_diagonal() {
    let x = xs(5, 0.7);
    let (y, (jf,)) = value_and_jacobian!(elementwise(&x), mode = forward);
    let (yr, (jr,)) = value_and_jacobian!(elementwise(&x), mode = reverse);
    assert_eq!(y, elementwise(&x));
    assert_eq!(yr, y);
    assert_eq!(jf.shape(), (5, 5));
    assert_jacobians_close(&jf, &jr, MODE_TOL, "forward vs reverse");
    assert_jacobians_close(&jf, &fd_jacobian(&x, elementwise), FD_TOL, "forward vs FD");
    for i in 0..5 {
        for j in 0..5 {
            if i != j {
                assert_eq!(jf[(i, j)], 0.0);
                assert_eq!(jr[(i, j)], 0.0);
            }
        }
    }
    // Square: the default is forward mode, and gives the same.
    let (_, (ja,)) = value_and_jacobian!(elementwise(&x));
    assert_eq!(ja, jf);
}

#[test]
fn loops_and_branches() {
    // Elements on both sides of the threshold, and the accumulator on both sides of 1.
    let x = vec![0.3, 1.2, -0.4, 0.9, 1.5, -1.1];
    let t = 0.5;
    let (y, (jx, jt)) = value_and_jacobian!(running(&x, t), mode = forward);
    let (yr, (rx, rt)) = value_and_jacobian!(running(&x, t), mode = reverse);
    assert_eq!(y, running(&x, t));
    assert_eq!(yr, y);
    assert_eq!((jx.shape(), jt.shape()), ((6, 6), (6, 1)));
    assert_jacobians_close(&jx, &rx, MODE_TOL, "x: forward vs reverse");
    assert_jacobians_close(&jt, &rt, MODE_TOL, "t: forward vs reverse");
    assert_jacobians_close(&jx, &fd_jacobian(&x, |x| running(x, t)), FD_TOL, "x vs FD");
    assert_jacobians_close(&jt, &fd_jacobian(&[t], |t| running(&x, t[0])), FD_TOL, "t vs FD");
    // Lower triangular: no output depends on a later input.
    for i in 0..6 {
        for j in i + 1..6 {
            assert_eq!(jx[(i, j)], 0.0);
        }
    }
}

#[test]
fn two_slices_and_a_scalar() {
    let (a, b, s) = (xs(3, 0.9), xs(3, 1.7), 0.8);
    let (y, (ja, jb, js)) = value_and_jacobian!(mix(&a, &b, s));
    assert_eq!(y, mix(&a, &b, s));
    assert_eq!((ja.shape(), jb.shape(), js.shape()), ((4, 3), (4, 3), (4, 1)));
    let (_, (fa, fb, fs)) = value_and_jacobian!(mix(&a, &b, s), mode = forward);
    let (_, (ra, rb, rs)) = value_and_jacobian!(mix(&a, &b, s), mode = reverse);
    assert_jacobians_close(&fa, &ra, MODE_TOL, "a: forward vs reverse");
    assert_jacobians_close(&fb, &rb, MODE_TOL, "b: forward vs reverse");
    assert_jacobians_close(&fs, &rs, MODE_TOL, "s: forward vs reverse");
    // 7 inputs, 4 outputs: the default is reverse mode.
    assert_eq!((&ja, &jb, &js), (&ra, &rb, &rs));
    assert_jacobians_close(&fa, &fd_jacobian(&a, |a| mix(a, &b, s)), FD_TOL, "a vs FD");
    assert_jacobians_close(&fb, &fd_jacobian(&b, |b| mix(&a, b, s)), FD_TOL, "b vs FD");
    assert_jacobians_close(&fs, &fd_jacobian(&[s], |s| mix(&a, &b, s[0])), FD_TOL, "s vs FD");
}

#[test]
fn constants_have_no_block() {
    let (a, b, s) = (xs(3, 0.9), xs(3, 1.7), 0.8);
    let (_, (ja, jb, js)) = value_and_jacobian!(mix(&a, &b, s), mode = forward);
    for (mode_forward, (y, (ca, cb, cs))) in [
        (true, value_and_jacobian!(mix(&a, Const(&b), s), mode = forward)),
        (false, value_and_jacobian!(mix(&a, Const(&b), s), mode = reverse)),
        (false, value_and_jacobian!(mix(&a, Const(&b), s))),
    ] {
        assert_eq!(y, mix(&a, &b, s));
        assert_eq!(cb, NoTangent);
        let tol = if mode_forward { 0.0 } else { MODE_TOL };
        assert_jacobians_close(&ca, &ja, tol, "a with b constant");
        assert_jacobians_close(&cs, &js, tol, "s with b constant");
    }
    let (_, (ca, cb, cs)) = value_and_jacobian!(mix(Const(&a), &b, Const(s)), mode = reverse);
    assert_eq!((ca, cs), (NoTangent, NoTangent));
    assert_jacobians_close(&cb, &jb, MODE_TOL, "b alone");
}

#[test]
fn array_result_and_argument() {
    let (u, v) = ([0.3, -1.2, 0.7], vec![1.1, 0.4, -0.6]);
    let (y, (fu, fv)) = value_and_jacobian!(cross(u, &v), mode = forward);
    let (_, (ru, rv)) = value_and_jacobian!(cross(u, &v), mode = reverse);
    assert_eq!(y, cross(u, &v));
    assert_jacobians_close(&fu, &ru, MODE_TOL, "u: forward vs reverse");
    assert_jacobians_close(&fv, &rv, MODE_TOL, "v: forward vs reverse");
    let as3 = |x: &[f64]| [x[0], x[1], x[2]];
    assert_jacobians_close(&fu, &fd_jacobian(&u, |u| cross(as3(u), &v).to_vec()), FD_TOL, "u");
    assert_jacobians_close(&fv, &fd_jacobian(&v, |v| cross(u, v).to_vec()), FD_TOL, "v");
    // ∂(u × v)/∂v is the cross-product matrix of u.
    let ux = [0.0, -u[2], u[1], u[2], 0.0, -u[0], -u[1], u[0], 0.0];
    assert_eq!(fv.as_slice(), &ux);
}

#[test]
fn struct_result() {
    let (x, w) = (xs(4, 1.3), 1.5);
    let (y, (fx, fw)) = value_and_jacobian!(summarise(&x, w), mode = forward);
    let (yr, (rx, rw)) = value_and_jacobian!(summarise(&x, w), mode = reverse);
    assert_eq!(y, summarise(&x, w));
    assert_eq!(yr, y);
    // `mean`, then the 4 of `centred`; `count` has no components.
    assert_eq!((fx.shape(), fw.shape()), ((5, 4), (5, 1)));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "x: forward vs reverse");
    assert_jacobians_close(&fw, &rw, MODE_TOL, "w: forward vs reverse");
    let flat = |s: Summary| {
        let mut v = vec![s.mean];
        v.extend(s.centred);
        v
    };
    assert_jacobians_close(&fx, &fd_jacobian(&x, |x| flat(summarise(x, w))), FD_TOL, "x vs FD");
    assert_jacobians_close(&fw, &fd_jacobian(&[w], |w| flat(summarise(&x, w[0]))), FD_TOL, "w");
    assert_eq!(fx.row(0), &[0.25; 4]);
}

#[test]
fn nested_struct_result() {
    let (x, a, b) = (xs(4, 0.9), 0.4, 1.3);
    let (y, (fx, fa, fb)) = value_and_jacobian!(fit(&x, a, b), mode = forward);
    let (yr, (rx, ra, rb)) = value_and_jacobian!(fit(&x, a, b), mode = reverse);
    assert_eq!(y, fit(&x, a, b));
    assert_eq!(yr, y);
    // `level`, the 4 `residuals`, the 2 of `moments` and the 2 `ends`; `steps` and `label` have
    // no components.
    assert_eq!((fx.shape(), fa.shape(), fb.shape()), ((9, 4), (9, 1), (9, 1)));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "x: forward vs reverse");
    assert_jacobians_close(&fa, &ra, MODE_TOL, "a: forward vs reverse");
    assert_jacobians_close(&fb, &rb, MODE_TOL, "b: forward vs reverse");
    let fd = fd_jacobian(&x, |x| flat_fit(fit(x, a, b)));
    assert_jacobians_close(&fx, &fd, FD_TOL, "x vs FD");
    let fd = fd_jacobian(&[a], |a| flat_fit(fit(&x, a[0], b)));
    assert_jacobians_close(&fa, &fd, FD_TOL, "a vs FD");
    let fd = fd_jacobian(&[b], |b| flat_fit(fit(&x, a, b[0])));
    assert_jacobians_close(&fb, &fd, FD_TOL, "b vs FD");
    // ∂residuals/∂x is the identity, ∂level/∂a = b.
    for i in 0..4 {
        assert_eq!(
            fx.row(1 + i),
            &(0..4).map(|j| f64::from(u8::from(i == j))).collect::<Vec<_>>()[..]
        );
    }
    assert_eq!(fa[(0, 0)], b);
    // The flat view itself, on the derived tangent.
    let mut t = y.zero_tangent();
    assert_eq!(t.flat_len(), 9);
    assert!(t.set_flat(6, 2.5));
    assert_eq!(t.moments.1, 2.5);
    assert!(t.set_flat(8, -1.0));
    assert_eq!(t.ends, [0.0, -1.0]);
    assert!(!t.set_flat(9, 1.0));
    let mut flat = Vec::new();
    t.extend_flat(&mut flat);
    assert_eq!(flat, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.5, 0.0, -1.0]);
}

#[test]
fn struct_argument() {
    let x = xs(3, 1.9);
    let line = Line { a: -0.3, b: 0.8, n: 11 };
    let (y, (fx, fl)) = value_and_jacobian!(line_fit(&x, &line), mode = forward);
    let (_, (rx, rl)) = value_and_jacobian!(line_fit(&x, &line), mode = reverse);
    let (_, (ax, al)) = value_and_jacobian!(line_fit(&x, &line));
    assert_eq!(y, fit(&x, line.a, line.b));
    // Columns: `a` and `b` (`n` has none).
    assert_eq!((fx.shape(), fl.shape()), ((8, 3), (8, 2)));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "x: forward vs reverse");
    assert_jacobians_close(&fl, &rl, MODE_TOL, "line: forward vs reverse");
    assert_eq!((&ax, &al), (&fx, &fl));
    let (_, (_, ja, jb)) = value_and_jacobian!(fit(&x, line.a, line.b), mode = forward);
    assert_eq!(fl.column(0), ja.column(0));
    assert_eq!(fl.column(1), jb.column(0));
    let fd = fd_jacobian(&[line.a, line.b], |p| flat_fit(fit(&x, p[0], p[1])));
    assert_jacobians_close(&fl, &fd, FD_TOL, "line vs FD");
}

#[test]
fn enum_result() {
    let s = 0.7;
    // `Weights`: the 3 weights, then the scalar.
    let (y, (fs, _)) = value_and_jacobian!(make_shape(s, 3), mode = forward);
    let (_, (rs, _)) = value_and_jacobian!(make_shape(s, 3), mode = reverse);
    assert_eq!(y, make_shape(s, 3));
    assert_eq!(fs.shape(), (4, 1));
    assert_jacobians_close(&fs, &rs, MODE_TOL, "weights: forward vs reverse");
    let flat = |sh: Shape| match sh {
        Shape::Weights(w, q) => w.into_iter().chain([q]).collect::<Vec<f64>>(),
        Shape::Gauss(g) => vec![g],
        Shape::Flat => vec![],
    };
    let fd = fd_jacobian(&[s], |p| flat(make_shape(p[0], 3)));
    assert_jacobians_close(&fs, &fd, FD_TOL, "weights vs FD");
    // `Gauss`: one component.
    let (_, (fg, _)) = value_and_jacobian!(make_shape(s, 1), mode = forward);
    let (_, (rg, _)) = value_and_jacobian!(make_shape(s, 1), mode = reverse);
    assert_eq!(fg.shape(), (1, 1));
    assert_jacobians_close(&fg, &rg, MODE_TOL, "gauss: forward vs reverse");
    assert_relative_eq!(fg[(0, 0)], s.exp(), max_relative = 1e-14);
    // `Flat`: none.
    let (_, (f0, _)) = value_and_jacobian!(make_shape(s, 0));
    assert_eq!(f0.shape(), (0, 1));
}

#[test]
fn integer_argument_and_n_by_1() {
    let x = 1.3;
    let (y, (fx, k)) = value_and_jacobian!(powers(x, 4), mode = forward);
    let (_, (rx, _)) = value_and_jacobian!(powers(x, 4), mode = reverse);
    assert_eq!(y, powers(x, 4));
    assert_eq!(k, NoTangent);
    assert_eq!(fx.shape(), (4, 1));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "forward vs reverse");
    assert_jacobians_close(&fx, &fd_jacobian(&[x], |x| powers(x[0], 4)), FD_TOL, "FD");
    // d x^j / dx = j x^(j-1).
    for j in 1..=4 {
        assert_relative_eq!(fx[(j - 1, 0)], j as f64 * x.powi(j as i32 - 1), max_relative = 1e-14);
    }
}

#[test]
fn scalar_result_is_1_by_n_and_the_gradient() {
    let x = xs(6, 0.4);
    let (y, (fx,)) = value_and_jacobian!(soft_norm(&x), mode = forward);
    let (_, (rx,)) = value_and_jacobian!(soft_norm(&x), mode = reverse);
    let (yg, (g,)) = value_and_gradient!(soft_norm(&x));
    assert_eq!(y, yg);
    assert_eq!(fx.shape(), (1, 6));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "forward vs reverse");
    assert_jacobians_close(&fx, &fd_jacobian(&x, |x| vec![soft_norm(x)]), FD_TOL, "FD");
    assert_eq!(rx.row(0), &g[..]);
}

#[test]
fn buffer_by_value_tuple_result_and_arguments_by_name() {
    let (x, s) = (xs(3, 0.6), 0.25);
    let (y, (fx, fs)) = value_and_jacobian!(shift_and_sum(x.clone(), s), mode = forward);
    let (_, (rx, rs)) = value_and_jacobian!(shift_and_sum(x.clone(), s), mode = reverse);
    assert_eq!(y, shift_and_sum(x.clone(), s));
    assert_eq!((fx.shape(), fs.shape()), ((4, 3), (4, 1)));
    assert_jacobians_close(&fx, &rx, MODE_TOL, "x: forward vs reverse");
    assert_jacobians_close(&fs, &rs, MODE_TOL, "s: forward vs reverse");
    let flat = |(mut y, t): (Vec<f64>, f64)| {
        y.push(t);
        y
    };
    let fd = fd_jacobian(&x, |x| flat(shift_and_sum(x.to_vec(), s)));
    assert_jacobians_close(&fx, &fd, FD_TOL, "x vs FD");
    let fd = fd_jacobian(&[s], |s| flat(shift_and_sum(x.clone(), s[0])));
    assert_jacobians_close(&fs, &fd, FD_TOL, "s vs FD");

    // A slice passed by name, and an argument that is an expression.
    let view: &[f64] = &x;
    let (_, (jv,)) = value_and_jacobian!(elementwise(view), mode = reverse);
    let (_, (je,)) = value_and_jacobian!(elementwise(&x[..]), mode = forward);
    assert_jacobians_close(&jv, &je, MODE_TOL, "by name vs by reference");
}

#[test]
fn f32_functions() {
    let x = vec![0.5_f32, -1.5, 2.0];
    let (y, (fx, fa)) = value_and_jacobian!(scale32(&x, 3.0), mode = forward);
    let (_, (rx, ra)) = value_and_jacobian!(scale32(&x, 3.0), mode = reverse);
    assert_eq!(y, scale32(&x, 3.0));
    assert_eq!(fx, rx);
    assert_eq!(fa, ra);
    for i in 0..3 {
        assert_eq!(fx[(i, i)], f64::from(6.0 * x[i]));
        assert_eq!(fa[(i, 0)], f64::from(x[i] * x[i]));
    }
    let x64: Vec<f64> = x.iter().map(|v| f64::from(*v)).collect();
    let f = |x: &[f64]| x.iter().map(|v| 3.0 * v * v).collect::<Vec<f64>>();
    assert_jacobians_close(&fx, &fd_jacobian(&x64, f), 1e-6, "FD");
}

#[test]
fn a_result_with_no_components_gives_no_rows() {
    let x = xs(3, 0.5);
    for (y, (j, k)) in [
        value_and_jacobian!(first_squares(&x, 0)),
        value_and_jacobian!(first_squares(&x, 0), mode = forward),
        value_and_jacobian!(first_squares(&x, 0), mode = reverse),
    ] {
        assert!(y.is_empty());
        assert_eq!(j.shape(), (0, 3));
        assert_eq!(k, NoTangent);
    }
    // And 1 x N, N < len.
    let (_, (f, _)) = value_and_jacobian!(first_squares(&x, 1), mode = forward);
    let (_, (r, _)) = value_and_jacobian!(first_squares(&x, 1), mode = reverse);
    assert_eq!(f.shape(), (1, 3));
    assert_jacobians_close(&f, &r, MODE_TOL, "forward vs reverse");
}

#[test]
fn the_default_mode_follows_the_shape() {
    let x = xs(4, 0.8);
    passes();
    // 4 inputs, 8 outputs: forward, one pass per input.
    let (_, (jf, _)) = value_and_jacobian!(fan(&x, 8));
    assert_eq!(passes(), (4, 0));
    // 4 inputs, 2 outputs: the first (forward) pass, then one reverse pass per output.
    let (_, (jr, _)) = value_and_jacobian!(fan(&x, 2));
    assert_eq!(passes(), (1, 2));
    // 4 inputs, 4 outputs: forward.
    let _ = value_and_jacobian!(fan(&x, 4));
    assert_eq!(passes(), (4, 0));
    // Asked for: only that mode.
    let (_, (f2, _)) = value_and_jacobian!(fan(&x, 2), mode = forward);
    assert_eq!(passes(), (4, 0));
    let (_, (r8, _)) = value_and_jacobian!(fan(&x, 8), mode = reverse);
    assert_eq!(passes(), (0, 8));
    assert_jacobians_close(&jr, &f2, MODE_TOL, "2 outputs");
    assert_jacobians_close(&jf, &r8, MODE_TOL, "8 outputs");
    let fd = fd_jacobian(&x, |x| fan(x, 8));
    assert_jacobians_close(&jf, &fd, FD_TOL, "FD");
}

// ---- run-time errors and the matrix type ---------------------------------------------------

thread_local! {
    static GROWTH: Cell<usize> = const { Cell::new(0) };
}

/// A function whose forward rule (by hand) returns a longer result at each call: what no
/// honest function does, but the one run-time error `value_and_jacobian!` has. (Its caller is
/// `forward_only`: `mode = forward` needs no reverse rule.)
fn unsteady(x: f64) -> Vec<f64> {
    vec![x]
}

#[frule(for = unsteady)]
fn unsteady_frule(x: Dual<f64, f64>) -> Dual<Vec<f64>, Vec<f64>> {
    let n = GROWTH.with(|g| g.replace(g.get() + 1)) + 1;
    Dual::new(vec![x.primal; n], vec![x.tangent; n])
}

#[differentiable(forward_only)]
fn unsteady_pair(x: f64, y: f64) -> Vec<f64> {
    unsteady(x * y)
}

#[test]
#[should_panic(
    expected = "value_and_jacobian!(unsteady_pair(..)): its result's tangent had 1 component in the first pass and 2 components in another"
)]
fn a_result_that_changes_shape_is_a_clear_panic() {
    GROWTH.with(|g| g.set(0));
    let _ = value_and_jacobian!(unsteady_pair(1.0, 2.0), mode = forward);
}

#[test]
fn jacobian_methods() {
    let j = Jacobian::from_row_major(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    assert_eq!(j.shape(), (2, 3));
    assert_eq!((j.rows(), j.cols()), (2, 3));
    assert_eq!(j.get(1, 2), Some(6.0));
    assert_eq!(j.get(2, 0), None);
    assert_eq!(j[(0, 1)], 2.0);
    assert_eq!(j.row(1), &[4.0, 5.0, 6.0]);
    assert_eq!(j.column(2), vec![3.0, 6.0]);
    assert_eq!(j.mul_vec(&[1.0, 0.0, -1.0]), vec![-2.0, -2.0]);
    let t = j.transpose();
    assert_eq!(t.shape(), (3, 2));
    assert_eq!(t.as_slice(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(t.transpose(), j);
    assert_eq!(format!("{j:?}"), "Jacobian 2x3 [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]");
    assert!(Jacobian::from_row_major(2, 2, vec![0.0; 3]).is_none());
    assert_eq!(Jacobian::zeros(0, 4).into_vec(), Vec::<f64>::new());
    let caught = std::panic::catch_unwind(|| j[(2, 0)]).unwrap_err();
    assert_eq!(caught.downcast_ref::<String>().unwrap(), "index (2, 0) of a 2 x 3 Jacobian");
}

/// Only a reverse rule: `mode = reverse` needs no forward one.
#[differentiable(reverse_only)]
fn reverse_only_map(x: &[f64], s: f64) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = (s * x[i]).sin();
    }
    y
}

#[test]
fn a_function_with_one_rule_in_that_mode() {
    let (x, s) = (xs(3, 1.1), 0.7);
    let (y, (jx, js)) = value_and_jacobian!(reverse_only_map(&x, s), mode = reverse);
    assert_eq!(y, reverse_only_map(&x, s));
    let fd = fd_jacobian(&x, |x| reverse_only_map(x, s));
    assert_jacobians_close(&jx, &fd, FD_TOL, "x vs FD");
    let fd = fd_jacobian(&[s], |s| reverse_only_map(&x, s[0]));
    assert_jacobians_close(&js, &fd, FD_TOL, "s vs FD");
}
