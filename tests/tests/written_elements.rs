//! Elements of buffers of structs that the function writes, in reverse mode: a `&mut self`
//! method called on an element of a `&mut` buffer (`bodies[i].advance(dt)`, `for b in
//! bodies.iter_mut() { b.kick(..) }`, `sys.bodies[i].pull(&other, ..)`), an element replaced
//! whole (`bodies[0] = Body { .. }`, `pts[i] = (a, b)`) or cloned (`let other =
//! bodies[j].clone();`). A method runs on a copy of the element that is put back after it
//! (`rules::buffer::deep_clone_rrule`, then `deep_put_rrule`); a whole store keeps the element it
//! overwrites. Checked by `test_rule!` (both modes against central finite differences and each
//! other, and the arguments restored by the pullback), and a simulation against the same
//! simulation written over flat buffers of numbers.

#![allow(clippy::needless_range_loop, clippy::ptr_arg, clippy::clone_on_copy)]

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
