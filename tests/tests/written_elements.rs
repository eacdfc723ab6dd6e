//! Elements of buffers of structs that the function writes, in reverse mode: a `&mut self`
//! method called on an element of a `&mut` buffer (`bodies[i].advance(dt)`, `for b in
//! bodies.iter_mut() { b.kick(..) }`, `sys.bodies[i].pull(&other, ..)`), an element replaced
//! whole (`bodies[0] = Body { .. }`, `pts[i] = (a, b)`) or cloned (`let other =
//! bodies[j].clone();`). A method runs on a copy of the element that is put back after it
//! (`rules::buffer::deep_clone_rrule`, then `deep_put_rrule`); a whole store keeps the element it
//! overwrites. Checked by `test_rule!` (both modes against central finite differences and each
//! other, and the arguments restored by the pullback), and a simulation against the same
//! simulation written over flat buffers of numbers.
//!
//! Buffers of structs or tuples the function builds itself work the same way: copies of an
//! argument (`init.to_vec()`), `Vec::new()` grown by `push` of values built in the body,
//! `vec![a.clone(), b.clone()]`, a `Vec` of structs returned by a call
//! (`rules::buffer::values_to_vec_rrule`, `push_value_rrule`, `vec_from_values_rrule`: each
//! element keeps its own tangent).

#![allow(clippy::needless_range_loop, clippy::ptr_arg, clippy::clone_on_copy, clippy::useless_vec)]

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Body {
    pos: [f64; 2],
    vel: [f64; 2],
    mass: f64,
}

#[derive(Tangent, Clone, Debug)]
struct System {
    bodies: Vec<Body>,
    g: f64,
}

#[differentiable]
impl Body {
    fn advance(&mut self, dt: f64) {
        self.pos[0] += dt * self.vel[0];
        self.pos[1] += dt * self.vel[1];
    }

    /// A spring to the origin of stiffness `k`.
    fn kick(&mut self, k: f64, dt: f64) {
        self.vel[0] -= dt * k * self.pos[0] / self.mass;
        self.vel[1] -= dt * k * self.pos[1] / self.mass;
    }

    fn kinetic(&self) -> f64 {
        0.5 * self.mass * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1])
    }

    /// Pulls `self` toward `other` (softened gravity) and returns the force's magnitude.
    fn pull(&mut self, other: &Body, g: f64, dt: f64) -> f64 {
        let dx = other.pos[0] - self.pos[0];
        let dy = other.pos[1] - self.pos[1];
        let f = g * other.mass / (dx * dx + dy * dy + 0.1);
        self.vel[0] += dt * f * dx;
        self.vel[1] += dt * f * dy;
        f
    }

    fn dist2(&self, other: &Body) -> f64 {
        let mut s = 0.0;
        for k in 0..2 {
            let d = self.pos[k] - other.pos[k];
            s += d * d;
        }
        s
    }
}

fn bodies() -> Vec<Body> {
    vec![
        Body { pos: [1.0, 2.0], vel: [0.5, -0.5], mass: 2.0 },
        Body { pos: [0.0, 1.0], vel: [1.5, 0.5], mass: 1.0 },
        Body { pos: [-1.0, 0.5], vel: [0.0, 0.3], mass: 1.5 },
    ]
}

/// Symplectic Euler steps through `iter_mut()`, then the energy.
#[differentiable]
fn springs_by_iteration(bodies: &mut [Body], k: f64, dt: f64) -> f64 {
    for _ in 0..4 {
        for b in bodies.iter_mut() {
            b.kick(k, dt);
            b.advance(dt);
        }
    }
    let mut e = 0.0;
    for b in bodies.iter() {
        e += b.kinetic() + 0.5 * k * (b.pos[0] * b.pos[0] + b.pos[1] * b.pos[1]);
    }
    e
}

/// The same steps by index, on a `&mut Vec`.
#[differentiable]
fn springs_by_index(bodies: &mut Vec<Body>, k: f64, dt: f64) -> f64 {
    for _ in 0..4 {
        for i in 0..bodies.len() {
            bodies[i].kick(k, dt);
            bodies[i].advance(dt);
        }
    }
    let mut e = 0.0;
    for i in 0..bodies.len() {
        let b = &bodies[i];
        e += b.kinetic() + 0.5 * k * (b.pos[0] * b.pos[0] + b.pos[1] * b.pos[1]);
    }
    e
}

/// The same steps over flat buffers of numbers, written out.
#[differentiable]
fn springs_flat(pos: &mut [f64], vel: &mut [f64], mass: &[f64], k: f64, dt: f64) -> f64 {
    for _ in 0..4 {
        for i in 0..mass.len() {
            for c in 0..2 {
                vel[2 * i + c] -= dt * k * pos[2 * i + c] / mass[i];
                pos[2 * i + c] += dt * vel[2 * i + c];
            }
        }
    }
    let mut e = 0.0;
    for i in 0..mass.len() {
        let v2 = vel[2 * i] * vel[2 * i] + vel[2 * i + 1] * vel[2 * i + 1];
        let p2 = pos[2 * i] * pos[2 * i] + pos[2 * i + 1] * pos[2 * i + 1];
        e += 0.5 * mass[i] * v2 + 0.5 * k * p2;
    }
    e
}

/// Pairwise pulls between elements of a buffer in a field, each reading a clone of the other.
#[differentiable]
fn gravity_step(sys: &mut System, dt: f64) -> f64 {
    let n = sys.bodies.len();
    let mut work = 0.0;
    for i in 0..n {
        for j in 0..n {
            if i != j {
                let other = sys.bodies[j].clone();
                work += sys.bodies[i].pull(&other, sys.g, dt);
            }
        }
    }
    for i in 0..n {
        sys.bodies[i].advance(dt);
    }
    let mut e = work;
    for b in sys.bodies.iter() {
        e += b.kinetic();
    }
    e
}

/// A method of an element of a `&mut` buffer given another element (`&bodies[j]`).
#[differentiable]
fn potential(bodies: &mut [Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            e -= bodies[i].mass * bodies[j].mass / bodies[i].dist2(&bodies[j]).sqrt();
        }
    }
    e
}

/// Elements written through `&mut` borrows and replaced whole.
#[differentiable]
fn replaced(bodies: &mut [Body], dt: f64) -> f64 {
    for i in 0..bodies.len() {
        let b = &mut bodies[i];
        b.advance(dt);
        b.pos[0] += 1.0;
    }
    bodies[0] = Body { pos: [dt, 2.0 * dt], vel: [1.0, dt], mass: 3.0 };
    let mut e = 0.0;
    for b in bodies.iter() {
        e += b.kinetic() * b.pos[1];
    }
    e
}

/// Elements of a buffer of tuples replaced whole and cloned.
#[differentiable]
fn tuples(pts: &mut [(f64, f64)], k: f64) -> f64 {
    for i in 0..pts.len() {
        let (a, b) = pts[i];
        pts[i] = (a * k, b + a * a);
    }
    let c = pts[0].clone();
    c.0 * c.1 + pts[1].1
}

/// A `Vec` of structs held by value.
#[differentiable]
fn owned(mut bodies: Vec<Body>, dt: f64) -> f64 {
    bodies[0].advance(dt);
    bodies[1].pos[0] += dt;
    bodies[0].kinetic() + bodies[0].pos[0] * bodies[1].pos[0]
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Particle {
    x: f64,
    v: f64,
}

#[differentiable]
impl Particle {
    fn drift(&mut self, dt: f64) {
        self.x += dt * self.v;
    }
}

/// A simulation on a copy of its initial state.
#[differentiable]
fn simulate(init: &[Body], k: f64, dt: f64) -> f64 {
    let mut bodies = init.to_vec();
    for _ in 0..5 {
        for b in bodies.iter_mut() {
            b.kick(k, dt);
            b.advance(dt);
        }
    }
    let mut e = 0.0;
    for b in bodies.iter() {
        e += b.kinetic();
    }
    e
}

/// Particles built by `push`, stepped in place through `iter_mut()`.
#[differentiable]
fn oscillators(x0: &[f64], k: f64, dt: f64) -> f64 {
    let mut ps: Vec<Particle> = Vec::new();
    for i in 0..x0.len() {
        ps.push(Particle { x: x0[i], v: 0.0 });
    }
    for _ in 0..10 {
        for p in ps.iter_mut() {
            p.v -= dt * k * p.x;
            p.x += dt * p.v;
        }
    }
    let mut e = 0.0;
    for p in ps.iter() {
        e += p.x * p.x + p.v * p.v;
    }
    e
}

/// One step of every particle, into a new buffer.
#[differentiable]
fn step_all(ps: &[Particle], k: f64, dt: f64) -> Vec<Particle> {
    let mut out = Vec::with_capacity(ps.len());
    for p in ps.iter() {
        let v = p.v - dt * k * p.x;
        out.push(Particle { x: p.x + dt * v, v });
    }
    out
}

/// A buffer of structs replaced by what a call returns, an element replaced, then a chain.
#[differentiable]
fn stepped_by_calls(x0: &[f64], k: f64, dt: f64) -> f64 {
    let mut ps = Vec::new();
    for i in 0..x0.len() {
        let p = Particle { x: x0[i], v: 0.1 * x0[i] };
        ps.push(p);
    }
    for _ in 0..5 {
        ps = step_all(&ps, k, dt);
    }
    ps[0] = Particle { x: ps[0].x * 2.0, v: ps[1].v };
    ps[1].drift(dt);
    let n = ps.len();
    ps.iter().map(|p| p.x * p.x + p.v).sum::<f64>() / n as f64
}

/// A buffer of tuples built by `push`.
#[differentiable]
fn pairs(x: &[f64], y: &[f64]) -> f64 {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for i in 0..x.len() {
        pts.push((x[i], y[i] * y[i]));
    }
    let mut s = 0.0;
    for (a, b) in pts.iter() {
        s += a * b;
    }
    s + pts[0].0
}

/// A buffer of structs written out, `vec![a, b]`.
#[differentiable]
fn listed(a: &Body, b: &Body, dt: f64) -> f64 {
    let mut bodies = vec![a.clone(), b.clone()];
    bodies[0].advance(dt);
    bodies[0].kinetic() + bodies[1].pos[0] * bodies[0].pos[1]
}

/// The same as an array.
#[differentiable]
fn listed_array(a: &Body, b: &Body, dt: f64) -> f64 {
    let mut bodies = [a.clone(), b.clone()];
    bodies[0].advance(dt);
    bodies[0].kinetic() + bodies[1].pos[0] * bodies[0].pos[1]
}

#[test]
fn buffers_of_structs_built_in_the_body_pass_test_rule() {
    let b = bodies();
    test_rule!(listed_array(&b[0], &b[1], 0.1));
    test_rule!(simulate(&b, 2.0, 0.1));
    test_rule!(listed(&b[0], &b[1], 0.1));
    test_rule!(oscillators(&[1.0, -0.5, 2.0], 1.5, 0.1));
    test_rule!(stepped_by_calls(&[1.0, -0.5, 2.0], 1.5, 0.1));
    test_rule!(pairs(&[1.0, -0.5, 2.0], &[0.3, 0.2, 0.1]));
    let ps = vec![Particle { x: 1.0, v: 0.5 }, Particle { x: -1.0, v: 0.2 }];
    test_rule!(step_all(&ps, 1.5, 0.1));
}

#[test]
fn oscillators_built_by_push_match_their_closed_form_gradient() {
    // Each particle's update is linear: (x, v) <- M (x, v) with M = [[1 - h²k, h], [-hk, 1]],
    // so after ten steps (x, v) = M¹⁰ (x0, 0) and e = Σ |M¹⁰ (x0, 0)|², whose gradient with
    // respect to x0 is 2 x0 |M¹⁰ e₁|².
    let (k, dt) = (1.5, 0.1);
    let m = [[1.0 - dt * dt * k, dt], [-dt * k, 1.0]];
    let mut col = [1.0, 0.0];
    for _ in 0..10 {
        col = [m[0][0] * col[0] + m[0][1] * col[1], m[1][0] * col[0] + m[1][1] * col[1]];
    }
    let norm2 = col[0] * col[0] + col[1] * col[1];
    let x0 = [1.0, -0.5, 2.0];
    let (e, (g, _, _)) = value_and_gradient!(oscillators(&x0, k, dt));
    let e_exact: f64 = x0.iter().map(|x| x * x * norm2).sum();
    assert!((e - e_exact).abs() < 1e-12);
    for i in 0..3 {
        assert!((g[i] - 2.0 * x0[i] * norm2).abs() < 1e-12, "{} {}", g[i], 2.0 * x0[i] * norm2);
    }
}

#[test]
fn methods_of_written_elements_pass_test_rule() {
    let b = bodies();
    test_rule!(springs_by_iteration(&mut b, 2.0, 0.1));
    test_rule!(springs_by_index(&mut b, 2.0, 0.1));
    test_rule!(potential(&mut b));
    test_rule!(replaced(&mut b, 0.1));
    test_rule!(owned(b.clone(), 0.1));
    let sys = System { bodies: bodies(), g: 0.7 };
    test_rule!(gravity_step(&mut sys, 0.1));
    let p = vec![(1.0, 2.0), (0.5, -1.0)];
    test_rule!(tuples(&mut p, 1.5));
}

#[test]
fn a_simulation_of_structs_matches_the_same_over_numbers() {
    let start = bodies();
    let mut b = start.clone();
    let (e, (gb, gk, gdt)) = value_and_gradient!(springs_by_iteration(&mut b, 2.0, 0.1));
    // The pullback puts the bodies back as they were.
    assert_eq!(b, start);
    let mut pos: Vec<f64> = start.iter().flat_map(|b| b.pos).collect();
    let mut vel: Vec<f64> = start.iter().flat_map(|b| b.vel).collect();
    let mass: Vec<f64> = start.iter().map(|b| b.mass).collect();
    let (e2, (gp, gv, gm, gk2, gdt2)) =
        value_and_gradient!(springs_flat(&mut pos, &mut vel, &mass, 2.0, 0.1));
    assert!((e - e2).abs() < 1e-14 * e.abs().max(1.0));
    assert!((gk - gk2).abs() < 1e-12 && (gdt - gdt2).abs() < 1e-12);
    for i in 0..start.len() {
        for c in 0..2 {
            assert!((gb[i].pos[c] - gp[2 * i + c]).abs() < 1e-12);
            assert!((gb[i].vel[c] - gv[2 * i + c]).abs() < 1e-12);
        }
        assert!((gb[i].mass - gm[i]).abs() < 1e-12);
    }
    let mut b2 = start.clone();
    let (e3, (gb3, gk3, _)) = value_and_gradient!(springs_by_index(&mut b2, 2.0, 0.1));
    assert_eq!((e3, gk3), (e, gk));
    assert_eq!(gb3.len(), gb.len());
}
