//! Buffers of small matrices (`Vec<[[f64; 2]; 2]>`, `&[[[f64; 3]; 3]]`): rotations of a
//! kinematic chain, per-element Jacobians. Built by `vec![[[0.0; 2]; 2]; n]` and written at three
//! indices, grown by `push` of a matrix built in the body or returned by a call, passed in
//! behind `&` and `&mut`, read by index, by copy and by iterator chains; both modes against
//! finite differences.

#![allow(clippy::needless_range_loop)] // index loops, as written

use mooncake_runtime::prelude::*;

#[differentiable]
fn rotz(t: f64) -> [[f64; 3]; 3] {
    let (c, s) = (t.cos(), t.sin());
    [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
}

/// A chain of rotations, pushed as calls' results, applied to `v` in turn.
#[differentiable]
fn chain(ts: &[f64], v: [f64; 3]) -> f64 {
    let mut ms: Vec<[[f64; 3]; 3]> = Vec::new();
    for &t in ts {
        ms.push(rotz(t));
    }
    let mut p = v;
    for m in ms.iter() {
        let mut q = [0.0; 3];
        for i in 0..3 {
            for j in 0..3 {
                q[i] += m[i][j] * p[j];
            }
        }
        p = q;
    }
    p[0] + 2.0 * p[1]
}

/// Matrices filled in place, then copied out and applied.
#[differentiable]
fn built_then_written(ts: &[f64]) -> f64 {
    let n = ts.len();
    let mut ms = vec![[[0.0; 2]; 2]; n];
    for k in 0..n {
        ms[k][0][0] = ts[k].cos();
        ms[k][0][1] = -ts[k].sin();
        ms[k][1][0] = ts[k].sin();
        ms[k][1][1] = ts[k].cos();
    }
    let mut p = [1.0, 0.0];
    for k in 0..n {
        let m = ms[k];
        p = [m[0][0] * p[0] + m[0][1] * p[1], m[1][0] * p[0] + m[1][1] * p[1]];
    }
    p[0] * p[1]
}

/// Matrices built in the loop's body and pushed.
#[differentiable]
fn pushed(ts: &[f64]) -> f64 {
    let mut ms: Vec<[[f64; 2]; 2]> = Vec::new();
    for &t in ts {
        let mut m = [[0.0; 2]; 2];
        m[0][0] = t.cos();
        m[1][1] = t * t;
        m[0][1] = -t;
        ms.push(m);
    }
    let mut s = 0.0;
    for m in &ms {
        s += m[0][0] * m[1][1] + m[0][1];
    }
    s
}

#[differentiable]
fn applied(ms: &[[[f64; 2]; 2]], v: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..ms.len() {
        for i in 0..2 {
            let y = ms[k][i][0] * v[0] + ms[k][i][1] * v[1];
            s += y.powi(2);
        }
    }
    s
}

#[differentiable]
fn determinants(ms: &[[[f64; 2]; 2]]) -> f64 {
    ms.iter().map(|m| m[0][0] * m[1][1] - m[0][1] * m[1][0]).sum()
}

#[differentiable]
fn scaled(ms: &mut [[[f64; 2]; 2]], a: f64) {
    for m in ms.iter_mut() {
        for i in 0..2 {
            for j in 0..2 {
                m[i][j] *= a;
            }
        }
    }
}

#[test]
fn matrices_built_pushed_and_written() {
    let ts = vec![0.3, -0.7, 1.1];
    test_rule!(chain(&*ts, [1.0, 0.5, -0.2]));
    test_rule!(built_then_written(&*ts));
    test_rule!(pushed(&*ts));
    // The chain of rotations about z keeps |p| and turns by the sum of the angles.
    let (v, (g, _)) = value_and_gradient!(chain(&ts, [1.0, 0.0, 0.0]));
    let a: f64 = ts.iter().sum();
    assert!((v - (a.cos() + 2.0 * a.sin())).abs() < 1e-12);
    for gk in &g {
        assert!((gk - (-a.sin() + 2.0 * a.cos())).abs() < 1e-12, "{g:?}");
    }
}

#[test]
fn matrices_passed_in() {
    let ms = vec![[[1.0, 0.2], [0.3, -0.5]], [[0.5, 0.1], [-0.2, 2.0]]];
    test_rule!(applied(&*ms, &[0.3, -0.8][..]));
    test_rule!(determinants(&*ms));
    let (_, (g,)) = value_and_gradient!(determinants(&ms));
    assert_eq!(g[1], [[2.0, 0.2], [-0.1, 0.5]]);
    let m2 = ms.clone();
    test_rule!(scaled(&mut m2, 1.5));
}
