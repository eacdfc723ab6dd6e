//! Buffers of rows that the function builds, and nested arrays, in both modes: a
//! `Vec<Vec<f64>>` grown by `push` (of a local row, its clone, `vec![..]`, a call's `Vec`) or by
//! a `collect` of rows; a `Vec<[f64; 2]>` grown by `push`; `vec![[0.0; 2]; n]` written and lent to
//! a call; a row of `&[[f64; 2]]` lent as `&[f64; 2]` and as `&[f64]`; a local `[[0.0; 3]; 3]`
//! written by loops and returned (`-> [[f64; 3]; 3]`), and a nested array literal returned. Each
//! was a type error inside the reverse-mode expansion until probe programs written as users
//! write found them. `test_rule!` checks each function against finite differences and both
//! modes against each other; the closed forms below check values and gradients exactly.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// Outer products pushed row by row onto a declared `Vec<Vec<f64>>`.
#[differentiable]
fn pushed_outer(x: &[f64]) -> f64 {
    let mut m: Vec<Vec<f64>> = Vec::new();
    for a in x.iter() {
        let mut row = Vec::new();
        for b in x.iter() {
            row.push(a * b);
        }
        m.push(row);
    }
    let mut s = 0.0;
    for i in 0..m.len() {
        s += m[i][i] * m[0][i];
    }
    s
}

#[differentiable]
fn features(a: f64) -> Vec<f64> {
    vec![a, a * a, a.sin()]
}

/// Rows of different kinds pushed onto an undeclared buffer, read by loops over its rows.
#[differentiable]
fn pushed_kinds(x: &[f64]) -> f64 {
    let mut m = Vec::new();
    for i in 0..x.len() {
        let mut row = vec![0.0; x.len()];
        for j in 0..x.len() {
            row[j] = x[i] - x[j];
        }
        m.push(row.clone());
        m.push(vec![x[i], 2.0 * x[i]]);
        m.push(features(x[i]));
    }
    let mut s = 0.0;
    for row in m.iter() {
        for v in row.iter() {
            s += v * v;
        }
    }
    s + m[1][0] * m[2][2]
}

/// A Gram matrix collected row by row.
#[differentiable]
fn collected_gram(x: &[f64]) -> f64 {
    let m: Vec<Vec<f64>> =
        (0..x.len()).map(|i| (0..x.len()).map(|j| x[i] * x[j]).collect()).collect();
    let mut s = 0.0;
    for row in m.iter() {
        for v in row.iter() {
            s += v;
        }
    }
    s
}

/// Points on the unit circle pushed as arrays, then all pairwise squared distances.
#[differentiable]
fn pushed_points(x: &[f64]) -> f64 {
    let mut ps = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        let p = [x[i].cos(), x[i].sin()];
        ps.push(p);
    }
    let mut s = 0.0;
    for i in 0..ps.len() {
        for j in 0..ps.len() {
            let dx = ps[i][0] - ps[j][0];
            let dy = ps[i][1] - ps[j][1];
            s += dx * dx * x[j] + dy * dy;
        }
    }
    s
}

#[differentiable]
fn norm2(p: &[f64; 2]) -> f64 {
    p[0] * p[0] + p[1] * p[1]
}

#[differentiable]
fn sum_sq(p: &[f64]) -> f64 {
    p.iter().map(|v| v * v).sum()
}

/// Rows of a buffer of arrays lent to a function taking an array and to one taking a slice.
#[differentiable]
fn lent_rows(ps: &[[f64; 2]]) -> f64 {
    let mut s = 0.0;
    for k in 0..ps.len() {
        s += norm2(&ps[k]) * ps[k][0] + sum_sq(&ps[k]);
    }
    s
}

#[differentiable]
fn pair_energy(ps: &[[f64; 2]]) -> f64 {
    let mut s = 0.0;
    for p in ps.iter() {
        s += p[0] * p[1];
    }
    s
}

/// A local `vec![[0.0; 2]; n]` written element by element and lent to a call.
#[differentiable]
fn filled_points(x: &[f64]) -> f64 {
    let n = x.len();
    let mut ps = vec![[0.0; 2]; n];
    for i in 0..n {
        ps[i][0] = x[i];
        ps[i][1] = x[i] * 3.0;
    }
    pair_energy(&ps)
}

/// A 3 x 3 product of nested arrays, built in a local `[[0.0; 3]; 3]` and returned.
#[differentiable]
fn matmul3(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut c = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            for k in 0..3 {
                c[i][j] += a[i][k] * b[k][j];
            }
        }
    }
    c
}

/// `tr(A A)`, through `matmul3`'s nested array.
#[differentiable]
fn trace_of_square(a: &[[f64; 3]; 3]) -> f64 {
    let c = matmul3(a, a);
    c[0][0] + c[1][1] + c[2][2]
}

/// A rotation matrix as a nested array literal.
#[differentiable]
fn rotation(t: f64) -> [[f64; 2]; 2] {
    [[t.cos(), -t.sin()], [t.sin(), t.cos()]]
}

/// `v · R(t) w`, through `rotation`'s nested array.
#[differentiable]
fn rotated_dot(t: f64, v: &[f64; 2], w: &[f64; 2]) -> f64 {
    let r = rotation(t);
    let mut s = 0.0;
    for i in 0..2 {
        for j in 0..2 {
            s += v[i] * r[i][j] * w[j];
        }
    }
    s
}

#[test]
fn rows_pushed_and_collected() {
    let x = [0.3, -1.2, 2.0];
    test_rule!(pushed_outer(&x));
    test_rule!(pushed_kinds(&x));
    test_rule!(collected_gram(&x));
    test_rule!(pushed_points(&x));
    // sum_ij x_i x_j = (sum x)^2: gradient 2 sum x in every component.
    let (v, (g,)) = value_and_gradient!(collected_gram(&x));
    let s: f64 = x.iter().sum();
    assert_relative_eq!(v, s * s, max_relative = 1e-12);
    for gi in g {
        assert_relative_eq!(gi, 2.0 * s, max_relative = 1e-12);
    }
    // sum_i x_i^2 x_i x_0 over the diagonal of the outer product.
    let (v, (g,)) = value_and_gradient!(pushed_outer(&x));
    let direct: f64 = x.iter().map(|a| a * a * a * x[0]).sum();
    assert_relative_eq!(v, direct, max_relative = 1e-12);
    let sum_cubes: f64 = x.iter().map(|a| a * a * a).sum();
    assert_relative_eq!(g[0], 4.0 * x[0].powi(3) + sum_cubes - x[0].powi(3), max_relative = 1e-12);
    assert_relative_eq!(g[1], 3.0 * x[1] * x[1] * x[0], max_relative = 1e-12);
}

#[test]
fn rows_of_arrays_lent_and_filled() {
    let ps = vec![[0.3, -1.2], [2.0, 0.5], [-0.7, 1.1]];
    test_rule!(lent_rows(&ps));
    let x = [0.3, -1.2, 2.0];
    test_rule!(filled_points(&x));
    // sum 3 x_i^2: gradient 6 x.
    let (v, (g,)) = value_and_gradient!(filled_points(&x));
    assert_relative_eq!(v, 3.0 * x.iter().map(|a| a * a).sum::<f64>(), max_relative = 1e-12);
    for (gi, xi) in g.iter().zip(&x) {
        assert_relative_eq!(*gi, 6.0 * xi, max_relative = 1e-12);
    }
}

#[test]
fn nested_arrays_built_and_returned() {
    let a = [[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 1.5, -0.7]];
    let b = [[0.2, -0.4, 1.0], [1.3, 0.1, -2.0], [0.6, 0.5, 0.9]];
    test_rule!(matmul3(&a, &b));
    test_rule!(trace_of_square(&a));
    // d tr(A A) / dA = 2 Aᵀ.
    let (v, (g,)) = value_and_gradient!(trace_of_square(&a));
    let mut tr = 0.0;
    for i in 0..3 {
        for k in 0..3 {
            tr += a[i][k] * a[k][i];
        }
    }
    assert_relative_eq!(v, tr, max_relative = 1e-12);
    for i in 0..3 {
        for j in 0..3 {
            assert_relative_eq!(g[i][j], 2.0 * a[j][i], max_relative = 1e-12);
        }
    }
    test_rule!(rotation(0.4));
    let (v, w) = ([1.0, 2.0], [-0.5, 0.3]);
    test_rule!(rotated_dot(0.4, &v, &w));
    // v · R(t) w = (v0 w0 + v1 w1) cos t + (v1 w0 - v0 w1) sin t.
    let t: f64 = 0.4;
    let (y, (gt, _, _)) = value_and_gradient!(rotated_dot(t, &v, &w));
    let (c, s) = (v[0] * w[0] + v[1] * w[1], v[1] * w[0] - v[0] * w[1]);
    assert_relative_eq!(y, c * t.cos() + s * t.sin(), max_relative = 1e-12);
    assert_relative_eq!(gt, -c * t.sin() + s * t.cos(), max_relative = 1e-12);
}

#[differentiable]
fn pair(a: f64) -> [f64; 2] {
    [a, a * a]
}

/// Arrays a call returns pushed onto a `Vec<[f64; 2]>`, directly and through a `let`.
#[differentiable]
fn pushed_call_results(x: &[f64]) -> f64 {
    let mut v: Vec<[f64; 2]> = Vec::new();
    for &a in x {
        v.push(pair(a));
        let p = pair(2.0 * a);
        v.push(p);
    }
    let mut s = 0.0;
    for r in v.iter() {
        s += r[0] * r[1];
    }
    s
}

#[test]
fn arrays_returned_by_calls_pushed() {
    let x = [0.4, 1.3, -0.6];
    test_rule!(pushed_call_results(&x));
    // Σ a³ + (2a)³ = 9 Σ a³: gradient 27 a².
    let (v, (g,)) = value_and_gradient!(pushed_call_results(&x));
    assert_relative_eq!(v, 9.0 * x.iter().map(|a| a * a * a).sum::<f64>(), max_relative = 1e-12);
    for (gi, a) in g.iter().zip(&x) {
        assert_relative_eq!(*gi, 27.0 * a * a, max_relative = 1e-12);
    }
}

/// A stack of pairs the function builds, emptied by `while let Some((x, y)) = q.pop()` and by a
/// `pop()` kept as an `Option`. Both failed to compile (the truncation and the pop had rules
/// for buffers of numbers only) until probe programs found them.
#[differentiable]
fn stack_of_pairs(a: f64, b: f64) -> f64 {
    let mut q: Vec<(f64, f64)> = Vec::new();
    q.push((a, b));
    q.push((b, 2.0 * a));
    q.push((a * a, 1.0));
    let top = q.pop();
    let mut s = match top {
        Some((u, v)) => u * v,
        None => 0.0,
    };
    while let Some((x, y)) = q.pop() {
        s += x * y;
    }
    s
}

#[differentiable]
fn pair_product(v: [(f64, f64); 2]) -> f64 {
    v[0].0 * v[1].1 + v[1].0
}

/// An array of pairs passed by value to another function.
#[differentiable]
fn pairs_passed_on(v: [(f64, f64); 2]) -> f64 {
    pair_product(v) * v[0].1
}

#[test]
fn buffers_of_pairs_popped_and_passed() {
    test_rule!(stack_of_pairs(0.5, 1.5));
    // a² + ab + 2ab: gradient (2a + 3b, 3a).
    let (v, (ga, gb)) = value_and_gradient!(stack_of_pairs(0.5, 1.5));
    assert_relative_eq!(v, 0.25 + 0.75 + 1.5, max_relative = 1e-12);
    assert_relative_eq!(ga, 1.0 + 4.5, max_relative = 1e-12);
    assert_relative_eq!(gb, 1.5, max_relative = 1e-12);
    test_rule!(pairs_passed_on([(0.5, 1.5), (2.0, -1.0)]));
}

/// Forward kinematics: each joint's position pushed (a copy of `p`, which goes on changing).
#[differentiable]
fn joint_chain(angles: &[f64], lengths: &[f64], joints: &mut Vec<[f64; 2]>) -> f64 {
    joints.clear();
    let mut p = [0.0, 0.0];
    let mut theta = 0.0;
    for i in 0..angles.len() {
        joints.push(p);
        theta += angles[i];
        p[0] += lengths[i] * theta.cos();
        p[1] += lengths[i] * theta.sin();
    }
    joints.push(p);
    let mut s = 0.0;
    for j in 0..joints.len() {
        s += joints[j][0] * joints[j][1];
    }
    s + p[0] * p[0]
}

#[differentiable]
fn cleared_rows(x: f64) -> f64 {
    let mut j: Vec<[f64; 2]> = vec![[x, x]];
    let mut r: Vec<Vec<f64>> = vec![vec![x; 3]];
    j.clear();
    r.clear();
    j.push([x, 2.0 * x]);
    r.push(vec![x * x, 1.0]);
    j[0][1] * x + r[0][0]
}

/// An array pushed and read again (`joints.push(p); .. p[0]`), and `clear()` of buffers of rows
/// (an argument's and the function's own), in both modes.
#[test]
fn arrays_pushed_then_changed_and_rows_cleared() {
    let joints = vec![[9.0, 9.0]];
    test_rule!(joint_chain(&[0.3, -0.5, 0.8], &[1.0, 0.7, 0.4], &mut joints));
    test_rule!(cleared_rows(0.7));
    let (v, (g,)) = value_and_gradient!(cleared_rows(0.7));
    assert_relative_eq!(v, 3.0 * 0.49, max_relative = 1e-12);
    assert_relative_eq!(g, 6.0 * 0.7, max_relative = 1e-12);
}

/// Rows built by `collect` and pushed onto a buffer with no declared type, returned inside a
/// tuple (the buffer's type shows only in the function's result).
#[differentiable]
fn outer_rows(x: &[f64]) -> (f64, Vec<Vec<f64>>) {
    let mut m = Vec::new();
    for &v in x.iter() {
        m.push(x.iter().map(|w| w * v).collect::<Vec<f64>>());
    }
    (x[0], m)
}

#[differentiable]
fn outer_rows_sum(x: &[f64]) -> f64 {
    let (a, m) = outer_rows(x);
    let mut s = a;
    for row in m.iter() {
        s += row[0] * row[row.len() - 1];
    }
    s
}

#[test]
fn rows_pushed_onto_untyped_buffers_returned_in_tuples() {
    test_rule!(outer_rows_sum(&[1.0, 2.0, 3.0][..]));
}
