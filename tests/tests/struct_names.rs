//! User structs named by one capital letter (`struct P`, `struct B`), as short physics and
//! geometry code names them. The macro cannot see a type's declaration, and used to take every
//! one-letter type name for a type parameter (a number): a `&[P]` was then read as a buffer of
//! numbers, and reverse mode failed with type errors inside its expansion (`P: Copy`, "no field
//! `m` on type `NoFData`"). A name is now a type parameter only when the function or its `impl`
//! declares it one.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// A particle named as physics code names it.
#[derive(Tangent, Clone, Debug)]
pub struct P {
    /// Position.
    pub x: f64,
    /// Velocity.
    pub v: f64,
}

/// A second one-letter struct, held in a `Vec` argument.
#[derive(Tangent, Clone, Debug)]
pub struct B {
    /// Position.
    pub pos: f64,
    /// Mass.
    pub mass: f64,
}

#[differentiable]
fn momentum(ps: &[P]) -> f64 {
    let mut s = 0.0;
    for p in ps.iter() {
        s += p.x * p.v;
    }
    s
}

#[differentiable]
fn momentum_by_ref(ps: &[P]) -> f64 {
    let mut s = 0.0;
    for p in ps {
        s += p.x * p.v;
    }
    s
}

#[differentiable]
fn cloned_elements(ps: &[P]) -> f64 {
    let mut s = 0.0;
    for p in ps.iter() {
        let c = p.clone();
        s += c.x * c.v * c.v;
    }
    s
}

#[differentiable]
fn clone_then_write(p: &P, t: f64) -> f64 {
    let mut q = p.clone();
    q.x = t * t;
    p.x + q.x * q.v
}

#[differentiable]
fn first_two(bs: &[B]) -> f64 {
    bs[0].mass * bs[1].pos + bs[1].mass * bs[0].pos
}

/// Generic over a one-letter float parameter beside a one-letter struct: `T` is a number, `P`
/// is not.
#[differentiable]
fn scaled_momentum<T: Float>(ps: &[T], k: T) -> T {
    let mut s = T::from_f64(0.0);
    for p in ps.iter() {
        s += k * *p;
    }
    s
}

fn particles() -> Vec<P> {
    vec![P { x: 1.0, v: 2.0 }, P { x: 0.5, v: -1.5 }, P { x: -0.3, v: 0.8 }]
}

#[test]
fn slices_of_one_letter_structs_in_both_modes() {
    let ps = particles();
    test_rule!(momentum(&ps));
    test_rule!(momentum_by_ref(&ps));
    test_rule!(cloned_elements(&ps));
    let (v, (g,)) = value_and_gradient!(momentum(&ps));
    assert_relative_eq!(v, 2.0 - 0.75 - 0.24, max_relative = 1e-12);
    for (gp, p) in g.iter().zip(&ps) {
        assert_relative_eq!(gp.x, p.v, max_relative = 1e-12);
        assert_relative_eq!(gp.v, p.x, max_relative = 1e-12);
    }
}

#[test]
fn one_letter_structs_cloned_and_indexed() {
    let p = P { x: 0.3, v: 0.7 };
    test_rule!(clone_then_write(&p, 0.9));
    let (_, (gp, gt)) = value_and_gradient!(clone_then_write(&p, 0.9));
    assert_relative_eq!(gp.x, 1.0, max_relative = 1e-12);
    assert_relative_eq!(gp.v, 0.81, max_relative = 1e-12);
    assert_relative_eq!(gt, 2.0 * 0.9 * 0.7, max_relative = 1e-12);
    let bs = vec![B { pos: 0.5, mass: 2.0 }, B { pos: -1.0, mass: 3.0 }];
    test_rule!(first_two(&bs));
    test_rule!(scaled_momentum(&[0.5, -1.0, 2.0], 1.5));
}

/// A user's own vector type named like nalgebra's (`Vector3`), built by its own `new`: its
/// rules are its own. `Vector3::new(a, b, c)` was read as nalgebra's constructor, which failed
/// to compile without nalgebra (and with it, as the wrong type), until probe programs found it.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct Vector3 {
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
}

#[differentiable]
impl Vector3 {
    fn new(x: f64, y: f64, z: f64) -> Vector3 {
        Vector3 { x, y, z }
    }
    fn dot(&self, o: &Vector3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
}

#[differentiable]
fn own_vectors(a: f64, b: f64) -> f64 {
    let u = Vector3::new(a, b, 1.0);
    let w = Vector3::new(b, a * a, 2.0);
    u.dot(&w)
}

#[test]
fn a_user_type_named_like_a_matrix_type() {
    test_rule!(own_vectors(0.5, 1.5));
    // a b + b a² + 2: gradient (b + 2ab, a + a²).
    let (v, (ga, gb)) = value_and_gradient!(own_vectors(0.5, 1.5));
    assert!((v - (0.75 + 0.375 + 2.0)).abs() < 1e-12);
    assert!((ga - (1.5 + 1.5)).abs() < 1e-12 && (gb - (0.5 + 0.25)).abs() < 1e-12);
}
