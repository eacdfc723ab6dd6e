//! Borrows kept in locals (issue 14, item 4): a name bound to a borrow of a whole place (`let w =
//! &m.w;`, `let r = &v;`, `let b = &mut m.b;`, `let w = &mut m.w;`) stands for the place in both
//! modes: indexed, measured, iterated, dereferenced, written through and passed on as the
//! borrow; fields of a `&mut` argument lent shared to calls (`energy(&s.x, &s.k)`), and buffer fields of a
//! struct held by value (`dot(&p.w, &q.w)` after `let p = P { .. }`). `test_rule!` checks each function's rules against finite differences and against
//! each other. (Element borrows, `let e = &x[i];` and `&mut x[i]`, are in `in_place.rs`.)

#![allow(clippy::needless_range_loop, clippy::useless_vec)] // index loops and buffers, as written

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Model {
    w: Vec<f64>,
    b: f64,
}

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

#[differentiable]
fn field_borrows(m: &Model, x: &[f64]) -> f64 {
    let w = &m.w;
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * x[i];
    }
    let b = &m.b;
    s + dot(w, x) + *b * 2.0 + w.iter().map(|v| v.sin()).sum::<f64>()
}

#[differentiable]
fn mutable_field_borrows(m: &mut Model, x: f64) -> f64 {
    let w = &mut m.w;
    w[0] = x * x;
    for v in w.iter_mut() {
        *v *= 2.0;
    }
    let b = &mut m.b;
    *b += x;
    m.w[0] + m.b * m.w[1]
}

#[differentiable]
fn local_borrow(x: &[f64]) -> f64 {
    let v = x.to_vec();
    let r = &v;
    let mut s = 0.0;
    for e in r {
        s += e * e;
    }
    s + dot(r, x) + r[0]
}

/// A simulator's state behind `&mut`, its fields lent shared to calls (`energy(&s.x, &s.k)`)
/// between writes to them.
#[derive(Tangent, Clone, Debug)]
struct State {
    x: Vec<f64>,
    v: Vec<f64>,
    k: f64,
}

#[differentiable]
fn energy(x: &[f64], k: &f64) -> f64 {
    x.iter().map(|a| a * a).sum::<f64>() * *k
}

#[differentiable]
fn leapfrog(s: &mut State, dt: f64) -> f64 {
    let mut e = energy(&s.x, &s.k);
    for _ in 0..3 {
        for i in 0..s.x.len() {
            s.v[i] -= dt * s.k * s.x[i];
            s.x[i] += dt * s.v[i];
        }
        e += energy(&s.x, &s.k) + energy(&s.v, &s.k);
    }
    e
}

fn model() -> Model {
    Model { w: vec![0.1, 0.2, 0.3], b: 0.5 }
}

#[test]
fn borrows_in_locals_have_the_right_gradients() {
    let (m, x) = (model(), vec![1.0, 2.0, 0.5]);
    test_rule!(field_borrows(&m, &x));
    test_rule!(mutable_field_borrows(&mut m, 0.7));
    test_rule!(local_borrow(&x));
    let s = State { x: vec![0.1, 0.2, -0.3], v: vec![0.0, 0.1, 0.05], k: 1.5 };
    test_rule!(leapfrog(&mut s, 0.1));
}

#[test]
fn borrows_in_locals_compute_what_the_primal_computes() {
    let (m, x) = (model(), vec![1.0, 2.0, 0.5]);
    assert_eq!(value_and_gradient!(field_borrows(&m, &x)).0, field_borrows(&m, &x));
    let (mut a, mut b) = (model(), model());
    assert_eq!(
        value_and_gradient!(mutable_field_borrows(&mut a, 0.7)).0,
        mutable_field_borrows(&mut b, 0.7)
    );
    assert_eq!(value_and_gradient!(local_borrow(&x)).0, local_borrow(&x));
}

/// A particle held by value in the body: its buffer fields lent shared to calls.
#[derive(Tangent, Clone, Debug)]
struct Particle {
    pos: Vec<f64>,
    vel: Vec<f64>,
    mass: f64,
}

#[differentiable]
#[allow(clippy::ptr_arg)] // a `&Vec` parameter given a field, as users write it
fn dot_vec(a: &[f64], b: &Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[differentiable]
fn norm2(a: &[f64]) -> f64 {
    a.iter().map(|v| v * v).sum()
}

/// Kinetic energy and a drift, each reading the particle's fields through calls, with writes to
/// the fields between the calls.
#[differentiable]
fn drift_energy(x: &[f64], v: &[f64], m: f64, dt: f64) -> f64 {
    let mut p = Particle { pos: x.to_vec(), vel: v.to_vec(), mass: m };
    let mut e = 0.0;
    for _ in 0..3 {
        e += 0.5 * p.mass * norm2(&p.vel) + dot_vec(&p.pos, &p.vel);
        for i in 0..p.pos.len() {
            p.pos[i] += dt * p.vel[i];
            p.vel[i] -= dt * p.pos[i] / p.mass;
        }
    }
    e + norm2(&p.pos)
}

/// Two structs by value, their fields lent to the same call.
#[differentiable]
fn cross_fields(x: &[f64], y: &[f64]) -> f64 {
    let p = Particle { pos: x.to_vec(), vel: y.to_vec(), mass: 1.0 };
    let q = Particle { pos: y.to_vec(), vel: x.to_vec(), mass: 2.0 };
    dot_vec(&p.pos, &q.vel) * q.mass + dot_vec(&q.pos, &p.vel) * p.pos[0]
}

/// A buffer field of a struct held by value read by `extend_from_slice` and `copy_from_slice`.
#[differentiable]
fn appended_fields(x: &[f64], m: f64) -> f64 {
    let p = Particle { pos: x.to_vec(), vel: vec![m, 2.0 * m], mass: m };
    let mut v = vec![m * m];
    v.extend_from_slice(&p.vel);
    v.extend_from_slice(&p.pos);
    let mut u = vec![0.0; 2];
    u.copy_from_slice(&p.vel);
    norm2(&v) * p.mass + u[1] * p.pos[0]
}

/// `&f64` arguments in arithmetic as Rust allows it (`2.0 * x`, `s += x`), no `*` written.
#[differentiable]
fn scaled(x: &f64, y: &f64, k: f64) -> f64 {
    let mut s = k * x;
    s += y;
    s * x - y / k + x * y
}

#[test]
fn fields_of_values_lent_to_calls() {
    let (x, v) = (vec![0.3, -0.7, 1.1], vec![0.5, 0.2, -0.4]);
    test_rule!(drift_energy(&*x, &*v, 1.7, 0.1));
    test_rule!(cross_fields(&*x, &*v));
    test_rule!(appended_fields(&*x, 0.6));
    assert_eq!(value_and_gradient!(appended_fields(&x, 0.6)).0, appended_fields(&x, 0.6));
    assert_eq!(value_and_gradient!(cross_fields(&x, &v)).0, cross_fields(&x, &v));
    assert_eq!(
        value_and_gradient!(drift_energy(&x, &v, 1.7, 0.1)).0,
        drift_energy(&x, &v, 1.7, 0.1)
    );
    let (a, b) = (1.5, -0.4);
    test_rule!(scaled(&a, &b, 0.7));
    let (s, (_, _, _)) = value_and_gradient!(scaled(&a, &b, 0.7));
    assert_eq!(s, scaled(&a, &b, 0.7));
}
