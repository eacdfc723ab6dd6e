//! Local fixed-size arrays (issue 13): an array read and written only at constant indices
//! (`let mut r = [0.0; 3]; r[0] = ..;`) is one local per element in reverse mode, its adjoints
//! plain locals of the pullback (`reverse/scalarise.rs`); any other use (an index computed at
//! run time, the whole array passed, returned or looped over) keeps it whole, held as before.
//! Each function mixes the two the way small geometric code does, and `test_rule!` checks both
//! modes against finite differences and each other. A local array lent as `&mut s` to a
//! function taking `&mut [f64]` is written through its own handle.

#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)] // written as users write them

use mooncake_runtime::prelude::*;

/// A bundle-adjustment residual: rotate a point in the plane, translate, project, compare.
#[differentiable]
fn projection_residual(cam: &[f64], pt: &[f64], obs: &[f64]) -> f64 {
    let mut p = [0.0; 3];
    p[0] = cam[0] * pt[0] - cam[1] * pt[1] + cam[3];
    p[1] = cam[1] * pt[0] + cam[0] * pt[1] + cam[4];
    p[2] = pt[2] + cam[5];
    let mut r = [0.0; 2];
    r[0] = cam[2] * p[0] / p[2] - obs[0];
    r[1] = cam[2] * p[1] / p[2] - obs[1];
    r[0] * r[0] + r[1] * r[1]
}

/// A cross product built from a literal array, its squared norm, and an element's method.
#[differentiable]
fn cross_norm(a: &[f64], b: &[f64]) -> f64 {
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    c[0] * c[0] + c[1] * c[1] + c[2].sin()
}

/// A whole copy (`let mut q = p;`), then writes to the copy: the original keeps its values.
#[differentiable]
fn copied_then_written(x: &[f64]) -> f64 {
    let mut p = [x[0], x[1]];
    let mut q = p;
    q[0] = q[0] * x[2];
    p[1] = p[1] + q[0];
    p[0] * q[0] + p[1] * q[1]
}

/// Indices held in named constants, and compound assignment.
#[differentiable]
fn named_indices(x: &[f64]) -> f64 {
    let first = 0;
    let second = 1;
    let mut m = [1.0; 2];
    m[first] *= x[0];
    m[second] += x[1] * m[first];
    m[second] -= x[2];
    m[first] * m[second]
}

/// Accumulators in an array across the iterations of a loop (mean and second moment), an
/// array built afresh in each iteration, and a write on one branch.
#[differentiable]
fn moments(x: &[f64]) -> f64 {
    let mut acc = [0.0; 2];
    for i in 0..x.len() {
        let mut t = [x[i], x[i] * x[i]];
        if x[i] > 0.0 {
            t[1] = t[1] * 2.0;
        } else {
            t[0] = -t[0];
        }
        acc[0] += t[0];
        acc[1] += t[1];
    }
    let n = x.len() as f64;
    let mean = acc[0] / n;
    acc[1] / n - mean * mean
}

/// Elements that are tuples, written and read through a field.
#[differentiable]
fn tuple_elements(x: &[f64]) -> f64 {
    let mut pts = [(0.0, 0.0); 2];
    pts[0].0 = x[0];
    pts[0].1 = x[1] * x[0];
    pts[1] = (x[2], pts[0].1);
    let dx = pts[1].0 - pts[0].0;
    let dy = pts[1].1 - pts[0].1;
    dx * dx + dy.exp()
}

/// A 2x2 matrix as an array of arrays, written and read at constant indices; its determinant.
#[differentiable]
fn nested_matrix(x: &[f64]) -> f64 {
    let mut m = [[0.0; 2]; 2];
    m[0][0] = x[0];
    m[0][1] = x[1] * x[2];
    m[1][0] = x[2];
    m[1][1] = x[3] - x[0];
    m[0][0] * m[1][1] - m[0][1] * m[1][0]
}

/// An element lent to a function that writes it.
#[differentiable]
fn scale_in_place(v: &mut f64, k: f64) {
    *v *= k;
}

#[differentiable]
fn element_lent(x: &[f64]) -> f64 {
    let mut r = [x[0], x[1]];
    scale_in_place(&mut r[1], x[2]);
    r[0] * r[1]
}

/// Arrays kept whole: one indexed at run time, one passed to a function, one looped over,
/// beside one that is not (all four in one body).
#[differentiable]
fn sum_of(v: &[f64; 3]) -> f64 {
    v[0] + v[1] + v[2]
}

#[differentiable]
fn kept_whole(x: &[f64]) -> f64 {
    let mut dynamic = [0.0; 3];
    for i in 0..3 {
        dynamic[i] = x[i] * x[i];
    }
    let mut passed = [0.0; 3];
    passed[0] = x[0];
    passed[2] = x[1] * x[2];
    let mut looped = [0.0; 2];
    looped[1] = x[2].sin();
    let mut s = 0.0;
    for v in looped.iter() {
        s += v;
    }
    let mut scalar = [0.0; 2];
    scalar[0] = s * x[0];
    scalar[1] = dynamic[2];
    sum_of(&passed) + scalar[0] * scalar[1] + dynamic[1]
}

/// An array returned whole is kept whole; one of `f32` with its type written.
#[differentiable]
fn returned(x: &[f64]) -> [f64; 2] {
    let mut r = [0.0; 2];
    r[0] = x[0] * x[1];
    r[1] = x[1].cos();
    r
}

#[differentiable]
fn typed_f32(x: &[f32]) -> f32 {
    let mut r: [f32; 2] = [0.0; 2];
    r[0] = x[0] * x[1];
    r[1] = r[0] + x[1];
    r[1] * r[0]
}

/// A 3x3 matrix built by nested loops over literal ranges (unrolled: the indices become
/// constants), applied to a point by another loop, then the squared norm.
#[differentiable]
fn rotate_then_norm(angles: &[f64], pt: &[f64]) -> f64 {
    let (c, s) = (angles[0].cos(), angles[0].sin());
    let mut m = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = if i == j { 1.0 } else { 0.0 };
        }
    }
    m[0][0] = c;
    m[0][1] = -s;
    m[1][0] = s;
    m[1][1] = c;
    let mut q = [0.0; 3];
    for i in 0..3 {
        let mut acc = 0.0;
        for j in 0..3 {
            acc += m[i][j] * pt[j] * angles[1];
        }
        q[i] = acc;
    }
    let mut n2 = 0.0;
    for k in 0..=2 {
        n2 += q[k] * q[k];
    }
    n2
}

/// A `return` inside a loop over a literal range, and a `break` (whose loop stays a loop).
#[differentiable]
fn early_exits(x: &[f64]) -> f64 {
    let mut r = [0.0; 4];
    for i in 0..4 {
        if x[i] > 10.0 {
            return x[i];
        }
        r[i] = x[i] * x[i];
    }
    let mut s = 0.0;
    for i in 0..4 {
        if r[i] > 5.0 {
            break;
        }
        s += r[i] * x[i];
    }
    s + r[3]
}

fn xs(n: usize, shift: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64) * 0.7 + shift).sin() + 0.3 * (i as f64)).collect()
}

#[test]
fn arrays_at_constant_indices() {
    let cam = vec![0.9, 0.1, 1.5, 0.2, -0.3, 4.0];
    let pt = vec![0.5, -0.2, 1.0];
    let obs = vec![0.1, -0.1];
    test_rule!(projection_residual(&cam, &pt, &obs));
    let (a, b) = (xs(3, 0.1), xs(3, 0.9));
    test_rule!(cross_norm(&a, &b));
    let x = xs(4, 0.4);
    test_rule!(copied_then_written(&x));
    test_rule!(named_indices(&x));
    test_rule!(tuple_elements(&x));
    test_rule!(nested_matrix(&x));
    test_rule!(element_lent(&x));
    let signs = vec![0.5, -1.2, 0.8, -0.3, 1.7];
    test_rule!(moments(&signs));
    test_rule!(rotate_then_norm(&[0.3, 1.2], &[0.5, -0.7, 0.9]));
    test_rule!(early_exits(&[0.5, -1.2, 0.8, 1.1]));
    test_rule!(early_exits(&[0.5, 11.0, 0.8, 1.1]));
    test_rule!(early_exits(&[2.5, -1.2, 0.8, 1.1]));
}

#[test]
fn arrays_kept_whole() {
    let x = xs(4, 0.2);
    test_rule!(kept_whole(&x));
    test_rule!(returned(&x));
    let xf: Vec<f32> = vec![0.5, 1.5];
    let (y, (g,)) = value_and_gradient!(typed_f32(&xf));
    // y = (a + b) a with a = x0 x1, b = x1.
    let (x0, x1) = (0.5f32, 1.5f32);
    let a = x0 * x1;
    assert!((y - (a + x1) * a).abs() < 1e-5);
    let dy_da = 2.0 * a + x1;
    assert!((g[0] - dy_da * x1).abs() < 1e-4, "{g:?}");
    assert!((g[1] - (dy_da * x0 + a)).abs() < 1e-4, "{g:?}");
}

/// The gradient of the residual by hand, against the derived one (not only finite differences).
#[test]
fn projection_residual_by_hand() {
    let cam = [0.9, 0.1, 1.5, 0.2, -0.3, 4.0];
    let pt = [0.5, -0.2, 1.0];
    let obs = [0.1, -0.1];
    let (_, (gc, gp, go)) = value_and_gradient!(projection_residual(&cam[..], &pt[..], &obs[..]));
    let p0 = cam[0] * pt[0] - cam[1] * pt[1] + cam[3];
    let p1 = cam[1] * pt[0] + cam[0] * pt[1] + cam[4];
    let p2 = pt[2] + cam[5];
    let r0 = cam[2] * p0 / p2 - obs[0];
    let r1 = cam[2] * p1 / p2 - obs[1];
    let (dp0, dp1) = (2.0 * r0 * cam[2] / p2, 2.0 * r1 * cam[2] / p2);
    let dp2 = -2.0 * r0 * cam[2] * p0 / (p2 * p2) - 2.0 * r1 * cam[2] * p1 / (p2 * p2);
    let want_cam = [
        dp0 * pt[0] + dp1 * pt[1],
        -dp0 * pt[1] + dp1 * pt[0],
        2.0 * r0 * p0 / p2 + 2.0 * r1 * p1 / p2,
        dp0,
        dp1,
        dp2,
    ];
    let want_pt = [dp0 * cam[0] + dp1 * cam[1], -dp0 * cam[1] + dp1 * cam[0], dp2];
    for (g, w) in gc.iter().zip(want_cam).chain(gp.iter().zip(want_pt)) {
        assert!((g - w).abs() < 1e-12, "{g} against {w}");
    }
    assert!((go[0] + 2.0 * r0).abs() < 1e-12 && (go[1] + 2.0 * r1).abs() < 1e-12);
}

#[differentiable]
fn scale_slice(s: &mut [f64], k: f64) {
    for v in s.iter_mut() {
        *v *= k;
    }
    s[0] += s[1];
}

/// A local array lent as `&mut s` to a function taking `&mut [f64]`: the slice is the array's
/// own memory, in both modes. Was a type error in reverse mode (with a message about a `&`
/// parameter) until probe programs found it.
#[differentiable]
fn local_array_lent_mutably(a: f64, k: f64) -> f64 {
    let mut s = [a, 2.0 * a, a * a];
    scale_slice(&mut s, k);
    s[0] * s[1] + s[2]
}

#[test]
fn local_arrays_lent_mutably_to_slices() {
    test_rule!(local_array_lent_mutably(0.4, 1.3));
    // s = [k (a + 2a), 2 k a, k a²]: f = 6 k² a² + k a², df/da = 12 k² a + 2 k a.
    let (a, k) = (0.4, 1.3);
    let (v, (ga, gk)) = value_and_gradient!(local_array_lent_mutably(a, k));
    assert!((v - (6.0 * k * k * a * a + k * a * a)).abs() < 1e-12);
    assert!((ga - (12.0 * k * k * a + 2.0 * k * a)).abs() < 1e-12);
    assert!((gk - (12.0 * k * a * a + a * a)).abs() < 1e-12);
}

/// Gaussian elimination with partial pivoting on a copy of an array of arrays (`let mut m = a;`,
/// rows swapped, elements written): the copy's gradient goes back into the argument's.
#[differentiable]
fn solve_pivoted<const N: usize>(a: [[f64; N]; N], b: [f64; N]) -> [f64; N] {
    let mut m = a;
    let mut r = b;
    for k in 0..N {
        let mut piv = k;
        for i in (k + 1)..N {
            if m[i][k].abs() > m[piv][k].abs() {
                piv = i;
            }
        }
        if piv != k {
            m.swap(k, piv);
            r.swap(k, piv);
        }
        for i in (k + 1)..N {
            let f = m[i][k] / m[k][k];
            for j in k..N {
                m[i][j] -= f * m[k][j];
            }
            r[i] -= f * r[k];
        }
    }
    let mut x = [0.0; N];
    for i in (0..N).rev() {
        let mut s = r[i];
        for j in (i + 1)..N {
            s -= m[i][j] * x[j];
        }
        x[i] = s / m[i][i];
    }
    x
}

#[differentiable]
fn solve_loss(a: [[f64; 3]; 3], b: [f64; 3]) -> f64 {
    let x = solve_pivoted(a, b);
    x[0] * x[0] + 2.0 * x[1] - x[2].sin()
}

#[test]
fn arrays_of_arrays_copied_and_written() {
    let a = [[0.5, 2.0, 0.3], [1.5, 0.2, -0.4], [0.1, -0.6, 1.8]];
    let b = [1.0, -0.5, 0.7];
    test_rule!(solve_loss(a, b));
    test_rule!(solve_pivoted(a, b));
    // The solution solves the system.
    let x = solve_pivoted(a, b);
    for i in 0..3 {
        let ax: f64 = (0..3).map(|j| a[i][j] * x[j]).sum();
        assert!((ax - b[i]).abs() < 1e-12);
    }
}
