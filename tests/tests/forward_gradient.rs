//! `value_and_gradient_forward!`: gradients by forward mode (one `NAME_frule` pass per input
//! component), shaped as `value_and_gradient!`'s, checked against reverse mode (never a mode
//! against itself) and against central finite differences.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

/// Forward and reverse gradients agree to this.
const TOL: f64 = 1e-12;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn same(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (x, y) in a.iter().zip(b) {
        assert!(close(*x, *y, TOL), "{what}: forward {a:?} against reverse {b:?}");
    }
}

/// A loop, a branch and a call.
#[differentiable]
fn softplus_sum(x: &[f64], scale: f64, skip: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if i == skip {
            continue;
        }
        let v = scale * x[i];
        s += if v > 20.0 { v } else { (1.0 + v.exp()).ln() };
    }
    s
}

#[test]
fn slices_scalars_and_integers() {
    let x = vec![0.3, -1.2, 2.5, 0.7];
    let (y, (gx, gs, gk)) = value_and_gradient_forward!(softplus_sum(&x, 1.5, 2));
    let (y2, (rx, rs, _)) = value_and_gradient!(softplus_sum(&x, 1.5, 2));
    assert_eq!(y, y2);
    same(&gx, &rx, "x");
    assert!(close(gs, rs, TOL));
    assert_eq!(gk, NoTangent);
    assert_eq!(gx[2], 0.0);
    // Central differences along each component.
    let h = 1e-6;
    for i in 0..x.len() {
        let (mut p, mut m) = (x.clone(), x.clone());
        p[i] += h;
        m[i] -= h;
        let fd = (softplus_sum(&p, 1.5, 2) - softplus_sum(&m, 1.5, 2)) / (2.0 * h);
        assert!(close(gx[i], fd, 1e-7), "component {i}: {} against {fd}", gx[i]);
    }
    // `chunk` gives the same gradient; a constant gets `NoTangent`.
    let (_, (cx, cs, _)) = value_and_gradient_forward!(softplus_sum(&x, Const(1.5), 2), chunk = 3);
    assert_eq!((cx, cs), (gx, NoTangent));
}

/// Parameters in a derived struct, arrays and a `Vec` by value.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Line {
    w: [f64; 2],
    b: f64,
    label: usize,
}

#[differentiable]
fn squared_error(line: &Line, xs: Vec<f64>, ys: [f64; 3]) -> f64 {
    let mut e = 0.0;
    for i in 0..3 {
        let r = line.w[0] * xs[i] + line.w[1] * xs[i] * xs[i] + line.b - ys[i];
        e += r * r;
    }
    e
}

#[test]
fn structs_arrays_and_vecs() {
    let line = Line { w: [0.5, -0.25], b: 0.1, label: 3 };
    let (xs, ys) = (vec![1.0, 2.0, -0.5], [0.2, 0.9, -0.4]);
    let (y, (gl, gx, gy)) = value_and_gradient_forward!(squared_error(&line, xs.clone(), ys));
    let (y2, (rl, rx, ry)) = value_and_gradient!(squared_error(&line, xs.clone(), ys));
    assert_eq!(y, y2);
    same(&gl.w, &rl.w, "w");
    assert!(close(gl.b, rl.b, TOL));
    assert_eq!(gl.label, NoTangent);
    same(&gx, &rx, "xs");
    same(&gy, &ry, "ys");
}

/// A method of an element of a buffer: forward mode takes it, reverse mode refuses it, so the
/// forward gradient is the one there is (checked against finite differences).
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Body {
    x: f64,
    y: f64,
}

#[differentiable]
impl Body {
    fn dist2(&self, other: &Body) -> f64 {
        (self.x - other.x) * (self.x - other.x) + (self.y - other.y) * (self.y - other.y)
    }
}

#[differentiable]
fn potential(bodies: &[Body]) -> f64 {
    let mut u = 0.0;
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            u += 1.0 / bodies[i].dist2(&bodies[j]).sqrt();
        }
    }
    u
}

#[test]
fn where_reverse_mode_refuses() {
    let bodies = vec![Body { x: 0.0, y: 0.0 }, Body { x: 1.0, y: 0.5 }, Body { x: -0.5, y: 2.0 }];
    let (u, (g,)) = value_and_gradient_forward!(potential(&bodies));
    assert!(close(u, potential(&bodies), 0.0));
    let h = 1e-6;
    for i in 0..bodies.len() {
        for (k, gk) in [(0, g[i].x), (1, g[i].y)] {
            let (mut p, mut m) = (bodies.clone(), bodies.clone());
            if k == 0 {
                p[i].x += h;
                m[i].x -= h;
            } else {
                p[i].y += h;
                m[i].y -= h;
            }
            let fd = (potential(&p) - potential(&m)) / (2.0 * h);
            assert!(close(gk, fd, 1e-7), "body {i}, coordinate {k}: {gk} against {fd}");
        }
    }
}

#[differentiable]
fn two_values(x: &[f64]) -> Vec<f64> {
    vec![x[0] * x[1], x[0] + x[1]]
}

#[test]
#[should_panic(expected = "a gradient needs a scalar result")]
fn a_vector_result_is_refused() {
    let _ = value_and_gradient_forward!(two_values(&[1.0, 2.0]));
}

#[test]
#[should_panic(expected = "a pass carries at least one direction")]
fn a_chunk_of_zero_is_refused() {
    let _ = value_and_gradient_forward!(softplus_sum(&[1.0, 2.0], 1.0, 0), chunk = 0);
}

#[differentiable]
fn dot_for_tangent_lengths(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

/// A tangent of another length than its buffer argument is refused before the rule runs, with
/// a message naming the argument (a longer one was used in part, a shorter one panicked inside
/// the rule).
#[test]
#[should_panic(
    expected = "the tangent given for argument 1 of `dot_for_tangent_lengths` has 3 elements, where the argument has 2"
)]
fn tangents_longer_than_their_buffers_are_refused() {
    let (a, b) = (vec![1.0, 2.0], vec![3.0, 4.0]);
    let _ = value_and_derivative!(dot_for_tangent_lengths(&a, &b), (vec![1.0; 3], vec![0.0; 2]));
}

#[test]
#[should_panic(
    expected = "the tangent given for argument 2 of `dot_for_tangent_lengths` has 1 element, where the argument has 2"
)]
fn tangents_shorter_than_their_buffers_are_refused() {
    let (a, b) = (vec![1.0, 2.0], vec![3.0, 4.0]);
    let bs: &[f64] = &b;
    let _ = value_and_derivative!(dot_for_tangent_lengths(&a, bs), (vec![1.0; 2], vec![0.0; 1]));
}

#[differentiable]
fn generic_product<T: Float>(a: T, b: T) -> T {
    a * b.sin()
}

/// A generic function given unsuffixed literals: forward-mode gradients are numbers (chosen by
/// the argument's primal type), as reverse mode's are.
#[test]
fn forward_gradients_of_generic_functions_given_literals() {
    let (v, (da, db)) = value_and_gradient_forward!(generic_product(2.0, 0.5));
    let (v2, (ra, rb)) = value_and_gradient!(generic_product(2.0, 0.5));
    let (v, da, db, v2, ra, rb): (f64, f64, f64, f64, f64, f64) = (v, da, db, v2, ra, rb);
    assert!(close(v, v2, TOL) && close(da, ra, TOL) && close(db, rb, TOL));
    assert!(close(db, 2.0 * 0.5f64.cos(), TOL));
}
