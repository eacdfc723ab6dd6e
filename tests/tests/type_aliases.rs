//! Type aliases of arrays (`type Vec3 = [f64; 3];`), as physics and geometry code writes them:
//! arguments by value, results, typed `let`s, fields of derived structs, and slices of them, in
//! both modes. The macro cannot see an alias's definition, so reverse mode reads a local or
//! argument of a name it does not know that is indexed (and never reached by a field) as an
//! array, and a local of such a name built from an array literal as the array it holds. Each
//! form was a type error inside the reverse-mode expansion until probe programs found it.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

type Vec3 = [f64; 3];
type Mat2 = [[f64; 2]; 2];

/// A point mass whose position is an alias of an array.
#[derive(Tangent, Clone, Debug)]
pub struct Particle {
    /// Position.
    pub pos: Vec3,
    /// Mass.
    pub mass: f64,
}

#[differentiable]
fn norm2(a: Vec3) -> f64 {
    a[0] * a[0] + a[1] * a[1] + a[2] * a[2]
}

#[differentiable]
fn scaled(a: Vec3, k: f64) -> Vec3 {
    let mut r: Vec3 = a;
    for i in 0..3 {
        r[i] *= k;
    }
    r
}

#[differentiable]
fn cross(a: &Vec3, b: &Vec3) -> Vec3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// `|k a × b|² + m |p|²`, through the functions above and a typed `let` of a field.
#[differentiable]
fn moment(a: Vec3, b: &Vec3, k: f64, p: &Particle) -> f64 {
    let c = cross(&scaled(a, k), b);
    let q: Vec3 = p.pos;
    norm2(c) + p.mass * (q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
}

#[differentiable]
fn centroid_spread(ps: &[Vec3]) -> f64 {
    let mut c: Vec3 = [0.0; 3];
    for p in ps.iter() {
        for i in 0..3 {
            c[i] += p[i] / ps.len() as f64;
        }
    }
    let mut s = 0.0;
    for p in ps.iter() {
        for i in 0..3 {
            s += (p[i] - c[i]) * (p[i] - c[i]);
        }
    }
    s
}

/// A product of two aliases of nested arrays by value, built in a local.
#[differentiable]
fn mat_mul(a: Mat2, b: Mat2) -> Mat2 {
    let mut c = [[0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            for k in 0..2 {
                c[i][j] += a[i][k] * b[k][j];
            }
        }
    }
    c
}

#[differentiable]
fn rotation(t: f64) -> Mat2 {
    [[t.cos(), -t.sin()], [t.sin(), t.cos()]]
}

#[test]
fn aliases_of_arrays_in_both_modes() {
    let (a, b) = ([1.0, 0.5, -0.3], [0.2, -1.1, 0.7]);
    let p = Particle { pos: [0.3, -0.4, 1.2], mass: 2.0 };
    test_rule!(norm2(a));
    test_rule!(scaled(a, 1.5));
    test_rule!(cross(&a, &b));
    test_rule!(moment(a, &b, 1.5, &p));
    let ps = vec![[1.0, 0.5, -0.3], [0.2, -1.1, 0.7], [0.0, 2.0, 0.4]];
    test_rule!(centroid_spread(&ps));
    test_rule!(rotation(0.4));
    let m = [[1.0, 0.5], [0.2, 2.0]];
    test_rule!(mat_mul(m, rotation(0.3)));
    // d|a|²/da = 2a; d(k a)/dk · ȳ with ȳ = ones is Σ a.
    let (v, (g,)) = value_and_gradient!(norm2(a));
    assert_relative_eq!(v, 1.34, max_relative = 1e-12);
    for i in 0..3 {
        assert_relative_eq!(g[i], 2.0 * a[i], max_relative = 1e-12);
    }
    let (_, (_, _, _, gp)) = value_and_gradient!(moment(Const(a), Const(&b), Const(1.5), &p));
    for i in 0..3 {
        assert_relative_eq!(gp.pos[i], 2.0 * p.mass * p.pos[i], max_relative = 1e-12);
    }
    assert_relative_eq!(gp.mass, 0.09 + 0.16 + 1.44, max_relative = 1e-12);
}
