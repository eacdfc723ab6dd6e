//! Elements of buffers lent whole to user functions and methods in reverse mode: layers of a
//! network kept in a `Vec<Layer>` (`for l in net.layers.iter() { h = l.forward(&h); }`,
//! `layer(&net.layers[k], &h)`), bodies of a simulation (`for b in bodies.iter() { e +=
//! b.kinetic(); }`), a number lent as `&x[i]`. Each element is copied for the call and the
//! copy's gradient added into the element's (`rules::buffer::deep_clone_rrule`). Checked by
//! `test_rule!` (both modes against central finite differences and each other), and the network
//! against the same network written with one function per layer count.

#![allow(clippy::needless_range_loop)]

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
    nin: usize,
    nout: usize,
}

#[derive(Tangent, Clone, Debug)]
struct Net {
    layers: Vec<Layer>,
}

#[differentiable]
impl Layer {
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        let mut y = self.b.clone();
        for o in 0..self.nout {
            for i in 0..self.nin {
                y[o] += self.w[o * self.nin + i] * x[i];
            }
            y[o] = y[o].tanh();
        }
        y
    }
}

#[differentiable]
fn layer(l: &Layer, x: &[f64]) -> Vec<f64> {
    l.forward(x)
}

/// The layers by a loop over their borrows, each one's method called.
#[differentiable]
fn loss_by_methods(net: &Net, x: &[f64], t: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for l in net.layers.iter() {
        h = l.forward(&h);
    }
    h.iter().zip(t).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// The layers by index, each lent to a function.
#[differentiable]
fn loss_by_calls(net: &Net, x: &[f64], t: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for k in 0..net.layers.len() {
        h = layer(&net.layers[k], &h);
    }
    let mut s = 0.0;
    for i in 0..t.len() {
        s += (h[i] - t[i]) * (h[i] - t[i]);
    }
    s
}

/// A slice of layers, a borrow kept in a local, a field read beside the method.
#[differentiable]
fn loss_of_slice(layers: &[Layer], x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for k in 0..layers.len() {
        let l = &layers[k];
        h = l.forward(&h);
        h[0] += l.b[0] * l.w[1];
    }
    h.iter().sum()
}

/// Two layers written out: what the loops above compute for a two-layer network.
#[differentiable]
fn loss_written_out(l0: &Layer, l1: &Layer, x: &[f64], t: &[f64]) -> f64 {
    let h = l0.forward(x);
    let y = l1.forward(&h);
    let mut s = 0.0;
    for i in 0..t.len() {
        s += (y[i] - t[i]) * (y[i] - t[i]);
    }
    s
}

#[derive(Tangent, Clone, Copy, Debug)]
struct Particle {
    m: f64,
    v: [f64; 2],
}

#[differentiable]
impl Particle {
    fn kinetic(&self) -> f64 {
        0.5 * self.m * (self.v[0] * self.v[0] + self.v[1] * self.v[1])
    }
}

#[differentiable]
fn momentum_x(p: &Particle) -> f64 {
    p.m * p.v[0]
}

/// Copy elements of a slice, by method and by function.
#[differentiable]
fn energy(ps: &[Particle]) -> f64 {
    let mut e = 0.0;
    for p in ps.iter() {
        e += p.kinetic();
    }
    for i in 0..ps.len() {
        e += momentum_x(&ps[i]) * ps[i].m;
    }
    e
}

#[derive(Tangent, Clone, Debug)]
struct Body {
    pos: [f64; 3],
    mass: f64,
}

#[differentiable]
impl Body {
    fn dist2(&self, other: &Body) -> f64 {
        let mut s = 0.0;
        for k in 0..3 {
            let d = self.pos[k] - other.pos[k];
            s += d * d;
        }
        s
    }
}

/// A method called on an element behind a shared reference, given another element
/// (`bodies[i].dist2(&bodies[j])`).
#[differentiable]
fn potential(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bodies.len() {
        for j in (i + 1)..bodies.len() {
            e -= bodies[i].mass * bodies[j].mass / bodies[i].dist2(&bodies[j]).sqrt();
        }
    }
    e
}

/// Methods of the layers of a network behind `&`, called on the elements directly.
#[differentiable]
fn loss_by_element_methods(net: &Net, x: &[f64]) -> f64 {
    let h = net.layers[0].forward(x);
    let y = net.layers[1].forward(&h);
    y[0] * y[1]
}

#[differentiable]
fn cube(v: &f64) -> f64 {
    v * v * v
}

/// A number lent as `&x[i]`.
#[differentiable]
fn cubes(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += cube(&x[i]);
    }
    s
}

fn layer_of(nin: usize, nout: usize, seed: f64) -> Layer {
    let w = (0..nin * nout).map(|k| ((k as f64 + seed) * 0.37).sin() * 0.8).collect();
    let b = (0..nout).map(|k| ((k as f64 - seed) * 0.53).cos() * 0.3).collect();
    Layer { w, b, nin, nout }
}

#[test]
fn networks_in_vectors_pass_test_rule() {
    let net = Net { layers: vec![layer_of(3, 4, 1.0), layer_of(4, 2, 2.0)] };
    let (x, t) = (vec![0.3, -0.7, 1.1], vec![0.2, -0.1]);
    test_rule!(loss_by_methods(&net, &x, &t));
    test_rule!(loss_by_calls(&net, &x, &t));
    test_rule!(loss_of_slice(&net.layers, &x));
}

#[test]
fn a_loop_over_layers_gives_the_gradient_of_the_layers_written_out() {
    let net = Net { layers: vec![layer_of(3, 4, 1.0), layer_of(4, 2, 2.0)] };
    let (x, t) = (vec![0.3, -0.7, 1.1], vec![0.2, -0.1]);
    let (y, (g0, g1, gx, _)) =
        value_and_gradient!(loss_written_out(&net.layers[0], &net.layers[1], &x, &t));
    for (v, (gnet, gx2, _)) in [
        value_and_gradient!(loss_by_methods(&net, &x, &t)),
        value_and_gradient!(loss_by_calls(&net, &x, &t)),
    ] {
        assert!((v - y).abs() < 1e-15);
        for (a, b) in [(&gnet.layers[0], &g0), (&gnet.layers[1], &g1)] {
            for (p, q) in a.w.iter().chain(&a.b).zip(b.w.iter().chain(&b.b)) {
                assert!((p - q).abs() < 1e-14, "{p} against {q}");
            }
        }
        for (p, q) in gx2.iter().zip(&gx) {
            assert!((p - q).abs() < 1e-14, "{p} against {q}");
        }
    }
}

#[test]
fn copied_elements_and_numbers_pass_test_rule() {
    let ps = vec![Particle { m: 1.5, v: [0.3, -0.2] }, Particle { m: 0.7, v: [-1.1, 0.4] }];
    test_rule!(energy(&ps));
    let (_, (g,)) = value_and_gradient!(energy(&ps));
    // e = Σ m |v|² / 2 + m² v_x.
    for (p, gp) in ps.iter().zip(&g) {
        let dm = 0.5 * (p.v[0] * p.v[0] + p.v[1] * p.v[1]) + 2.0 * p.m * p.v[0];
        let dv = [p.m * p.v[0] + p.m * p.m, p.m * p.v[1]];
        assert!((gp.m - dm).abs() < 1e-14 && (gp.v[0] - dv[0]).abs() < 1e-14);
        assert!((gp.v[1] - dv[1]).abs() < 1e-14);
    }
    test_rule!(cubes(&[0.3, -1.2, 0.8]));
    let bodies = vec![
        Body { pos: [0.0, 0.1, -0.2], mass: 1.0 },
        Body { pos: [1.0, 0.5, 0.3], mass: 2.0 },
        Body { pos: [-0.4, 1.2, 0.9], mass: 0.5 },
    ];
    test_rule!(potential(&bodies));
    let net = Net { layers: vec![layer_of(3, 4, 1.0), layer_of(4, 2, 2.0)] };
    test_rule!(loss_by_element_methods(&net, &[0.3, -0.7, 1.1]));
}

/// A body: position and mass.
#[derive(Tangent, Clone, Debug)]
pub struct Mass {
    /// Position.
    pub x: f64,
    /// Mass.
    pub m: f64,
}

#[differentiable]
fn pair_force(p: &Mass, q: &Mass) -> f64 {
    p.m * q.m / (1.0 + (p.x - q.x) * (p.x - q.x))
}

/// A copy of the particles (`to_vec`, no declared type) whose elements are lent to a function
/// and read by field in the same expression (`pair_force(&ps[i], &ps[j]) / ps[i].m`), then
/// moved.
#[differentiable]
fn particle_step(init: &[Mass], dt: f64) -> f64 {
    let mut ps = init.to_vec();
    let n = ps.len();
    for i in 0..n {
        let mut f = 0.0;
        for j in 0..n {
            if i != j {
                f += pair_force(&ps[i], &ps[j]) / ps[i].m;
            }
        }
        ps[i].x += dt * f;
    }
    let mut e = 0.0;
    for i in 0..n {
        e += ps[i].x * ps[i].x * ps[i].m;
    }
    e
}

#[test]
fn elements_of_copied_buffers_lent_and_read() {
    let init = vec![Mass { x: 0.3, m: 1.0 }, Mass { x: -0.5, m: 2.0 }, Mass { x: 1.1, m: 0.7 }];
    test_rule!(particle_step(&init, 0.1));
}

/// A point with a buffer of coordinates (not `Copy`).
#[derive(Tangent, Clone, Debug)]
pub struct Coords {
    /// Coordinates.
    pub x: Vec<f64>,
}

#[differentiable]
fn make_coords(a: f64) -> Vec<Coords> {
    vec![Coords { x: vec![a, 2.0 * a] }, Coords { x: vec![a * a, a.sin()] }]
}

/// A `Vec` of structs returned by a call, iterated (`for p in ps.iter()`, `ps.iter().map(..)`)
/// and read by field.
#[differentiable]
fn coords_total(a: f64) -> f64 {
    let ps = make_coords(a);
    let mut s = 0.0;
    for p in ps.iter() {
        s += p.x[0] * p.x[1];
    }
    s + ps.iter().map(|p| p.x[1]).sum::<f64>()
}

#[test]
fn structs_returned_by_calls_iterated() {
    test_rule!(coords_total(0.7));
}

/// A point with an array field and a mass.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct PointMass {
    /// Position.
    pub p: [f64; 2],
    /// Mass.
    pub m: f64,
}

#[differentiable]
fn norm_sq(p: &[f64; 2]) -> f64 {
    p[0] * p[0] + p[1] * p[1]
}

/// Array fields of elements lent to a function taking `&[f64; 2]`, by index and by a loop's
/// element.
#[differentiable]
fn array_fields_lent(bs: &[PointMass]) -> f64 {
    let mut s = 0.0;
    for i in 0..bs.len() {
        s += bs[i].m * norm_sq(&bs[i].p);
    }
    for b in bs {
        s += norm_sq(&b.p).sqrt();
    }
    s
}

#[test]
fn array_fields_of_elements_lent() {
    let bs = vec![PointMass { p: [1.0, 2.0], m: 0.5 }, PointMass { p: [-0.3, 0.7], m: 1.5 }];
    test_rule!(array_fields_lent(&*bs));
    let (_, (g,)) = value_and_gradient!(array_fields_lent(&bs));
    let r = (1.0_f64 + 4.0).sqrt();
    assert!((g[0].m - 5.0).abs() < 1e-12);
    assert!((g[0].p[0] - (2.0 * 0.5 * 1.0 + 1.0 / r)).abs() < 1e-12, "{g:?}");
}
