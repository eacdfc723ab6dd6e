//! Arithmetic on values of user types: `a + b`, `a - b`, `a * k`, `a / k`, `-a`, `a += b` of a
//! `#[derive(Tangent)]` vector type whose operator traits are implemented in a
//! `#[differentiable]` impl block. Where the text shows that the left operand (or either
//! operand of `+` and `-`) is such a value (a variable declared or bound as one, a struct
//! literal, `V3::new(..)`, arithmetic of one), the operation is the trait's method (`a.add(b)`),
//! in both modes. Checked by `test_rule!` (both modes against central finite differences and
//! each other) and against the same computation written on numbers. Whole vectors stored into
//! the fields of `&mut self` or through a `&mut V3` (`self.pos = p + self.vel * dt`) are
//! stores of struct values through handles (`rev::value_store_rrule`, `StructHandle`).

use mooncake_runtime::prelude::*;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct V3 {
    x: f64,
    y: f64,
    z: f64,
}

#[differentiable]
impl V3 {
    fn new(x: f64, y: f64, z: f64) -> V3 {
        V3 { x, y, z }
    }
    fn dot(&self, o: &V3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    fn norm(&self) -> f64 {
        self.dot(self).sqrt()
    }
    fn scaled(&self, k: f64) -> V3 {
        V3 { x: self.x * k, y: self.y * k, z: self.z * k }
    }
}

#[differentiable]
impl Add for V3 {
    type Output = V3;
    fn add(self, o: V3) -> V3 {
        V3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

#[differentiable]
impl Sub for V3 {
    type Output = V3;
    fn sub(self, o: V3) -> V3 {
        V3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

#[differentiable]
impl Mul<f64> for V3 {
    type Output = V3;
    fn mul(self, k: f64) -> V3 {
        V3 { x: self.x * k, y: self.y * k, z: self.z * k }
    }
}

#[differentiable]
impl Div<f64> for V3 {
    type Output = V3;
    fn div(self, k: f64) -> V3 {
        V3 { x: self.x / k, y: self.y / k, z: self.z / k }
    }
}

#[differentiable]
impl Neg for V3 {
    type Output = V3;
    fn neg(self) -> V3 {
        V3 { x: -self.x, y: -self.y, z: -self.z }
    }
}

#[differentiable]
impl AddAssign for V3 {
    fn add_assign(&mut self, o: V3) {
        self.x += o.x;
        self.y += o.y;
        self.z += o.z;
    }
}

/// A spring between two points and the norm of their midpoint.
#[differentiable]
fn spring(a: V3, b: V3, k: f64) -> f64 {
    let d = a - b;
    let m = (a + b) / 2.0;
    0.5 * k * d.dot(&d) + m.norm()
}

/// Symplectic Euler steps of a body around the origin (gravity with `GM = 1`).
#[differentiable]
fn orbit(p0: V3, v0: V3, dt: f64) -> f64 {
    let mut p = p0;
    let mut v = v0;
    for _ in 0..10 {
        let r = p.norm();
        let acc = -p * (1.0 / (r * r * r));
        v += acc * dt;
        p += v * dt;
    }
    let target = V3::new(1.0, 0.0, 0.0);
    (p - target).norm() + 0.5 * v.dot(&v)
}

/// The same orbit on numbers.
#[differentiable]
fn orbit_numbers(p0: [f64; 3], v0: [f64; 3], dt: f64) -> f64 {
    let mut p = p0;
    let mut v = v0;
    for _ in 0..10 {
        let r = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        let c = 1.0 / (r * r * r);
        for i in 0..3 {
            v[i] += -p[i] * c * dt;
        }
        for i in 0..3 {
            p[i] += v[i] * dt;
        }
    }
    let d = [p[0] - 1.0, p[1], p[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
        + 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
}

/// A function generic over a float type parameter with a long name keeps its arithmetic.
#[differentiable]
fn generic_named<Real: Float>(x: Real, y: Real) -> Real {
    x * y + x / y - y
}

#[derive(Tangent, Clone, Copy, Debug)]
struct Particle {
    pos: V3,
    vel: V3,
    mass: f64,
}

#[differentiable]
impl Particle {
    /// A drift: the right operand of `+` of a user value is one too, so `self.vel * dt` is
    /// `self.vel.mul(dt)` though the text does not show the field's type.
    fn moved(&self, dt: f64) -> Particle {
        let pos: V3 = self.pos;
        Particle { pos: pos + self.vel * dt, vel: self.vel, mass: self.mass }
    }
}

#[differentiable]
impl Particle {
    /// A damped drift in place: whole vectors stored into the fields of `&mut self`.
    fn step(&mut self, dt: f64) {
        let p: V3 = self.pos;
        self.pos = p + self.vel * dt;
        let v: V3 = self.vel;
        self.vel = v * 0.9;
    }
}

#[differentiable]
fn stepped(p: &mut Particle, dt: f64) -> f64 {
    for _ in 0..3 {
        p.step(dt);
    }
    // Methods of the fields of a `&mut` struct, a field lent to one of them.
    p.pos.norm() + p.vel.dot(&p.vel)
}

/// A whole vector stored through `&mut`.
#[differentiable]
fn scaled_in_place(a: &mut V3, k: f64) -> f64 {
    let b: V3 = *a;
    *a = b * k;
    a.norm()
}

#[differentiable]
fn particle_energy(p: &Particle) -> f64 {
    let v = p.vel;
    0.5 * p.mass * v.dot(&v) + p.pos.norm()
}

#[differentiable]
impl Particle {
    /// The same step as [`Particle::step`], the fields used as they are: their type is not in
    /// the text, so each mode dispatches the arithmetic by type (forward mode's
    /// `fwd::dialect::one::FieldAdd` and its kin, reverse mode's operators' rules for
    /// `rev::UserValue`), which for a `V3` is its operator traits' rules.
    #[allow(clippy::assign_op_pattern)] // written as users write it
    fn step_on_fields(&mut self, dt: f64) {
        self.pos = self.pos + self.vel * dt;
        self.vel = self.vel * 0.9;
    }
}

#[differentiable]
fn stepped_on_fields(p: &mut Particle, dt: f64) -> f64 {
    for _ in 0..3 {
        p.step_on_fields(dt);
    }
    p.pos.norm() + p.vel.dot(&p.vel)
}

/// Every operator on fields of a `&` argument, a field minus a field's product, a negation and
/// a quotient, beside arithmetic on the float field and on integers read from fields.
#[derive(Tangent, Clone, Copy, Debug)]
struct Frame {
    a: V3,
    b: V3,
    k: f64,
    n: usize,
}

#[differentiable]
fn frame_terms(f: &Frame, x: &[f64]) -> f64 {
    let d = f.a - f.b * f.k;
    let e = -f.a + d / f.k;
    let i = f.n * 2 - 1;
    d.dot(&e) + f.k * x[i] + (f.a + f.b).norm()
}

/// Arithmetic on methods' results of a user type, with no declared type (`a.scaled(k) + b`).
#[differentiable]
fn method_results(f: &Frame) -> f64 {
    let m = f.a.scaled(f.k) + f.b.scaled(2.0) - f.a;
    let n = -f.b.scaled(0.5) * f.k;
    m.dot(&n) + f.a.norm() * f.b.norm()
}

#[differentiable]
fn method_results_typed(f: &Frame) -> f64 {
    let (a, b): (V3, V3) = (f.a, f.b);
    let sa: V3 = a.scaled(f.k);
    let sb: V3 = b.scaled(2.0);
    let m: V3 = sa + sb - a;
    let hb: V3 = b.scaled(0.5);
    let n: V3 = -hb * f.k;
    m.dot(&n) + a.norm() * b.norm()
}

/// The same with the vectors' types written out.
#[differentiable]
fn frame_terms_typed(f: &Frame, x: &[f64]) -> f64 {
    let a: V3 = f.a;
    let b: V3 = f.b;
    let d: V3 = a - b * f.k;
    let e: V3 = -a + d / f.k;
    let i = f.n * 2 - 1;
    let s: V3 = a + b;
    d.dot(&e) + f.k * x[i] + s.norm()
}

#[differentiable]
fn drifted_energy(p: &Particle, dt: f64) -> f64 {
    let mut q = *p;
    for _ in 0..3 {
        q = q.moved(dt);
    }
    particle_energy(&q)
}

#[test]
fn operators_on_fields_of_user_types() {
    let p = Particle { pos: V3::new(0.1, -0.2, 0.3), vel: V3::new(0.5, 0.1, -0.4), mass: 1.5 };
    let q = p;
    test_rule!(stepped_on_fields(&mut q, 0.1));
    // Against the same step written with typed variables, both modes.
    let (mut p1, mut p2) = (p, p);
    let (y1, (g1, _)) = value_and_gradient!(stepped_on_fields(&mut p1, 0.1));
    let (y2, (g2, _)) = value_and_gradient!(stepped(&mut p2, 0.1));
    assert_eq!(y1, y2);
    assert_eq!((g1.pos.x, g1.vel.y, g1.vel.z), (g2.pos.x, g2.vel.y, g2.vel.z));
    let f = Frame { a: V3::new(0.3, -0.1, 0.7), b: V3::new(-0.4, 0.2, 0.5), k: 1.3, n: 2 };
    let x = [0.1, 0.2, 0.3, 0.4];
    test_rule!(frame_terms(&f, &x));
    let (y1, (g1, gx1)) = value_and_gradient!(frame_terms(&f, &x));
    let (y2, (g2, gx2)) = value_and_gradient!(frame_terms_typed(&f, &x));
    assert_eq!(y1, y2);
    assert_eq!((g1.a, g1.b, g1.k), (g2.a, g2.b, g2.k));
    assert_eq!(gx1, gx2);
    let t = FrameTangent {
        a: V3Tangent { x: 1.0, y: 0.5, z: -0.5 },
        b: V3Tangent { x: 0.0, y: 1.0, z: 0.0 },
        k: 0.3,
        n: NoTangent,
    };
    let (_, d1) = value_and_derivative!(frame_terms(&f, &x), (t, [0.0; 4]));
    let (_, d2) = value_and_derivative!(frame_terms_typed(&f, &x), (t, [0.0; 4]));
    assert_eq!(d1, d2);
    test_rule!(method_results(&f));
    let (y1, (g1,)) = value_and_gradient!(method_results(&f));
    let (y2, (g2,)) = value_and_gradient!(method_results_typed(&f));
    assert_eq!(y1, y2);
    assert_eq!((g1.a, g1.b, g1.k), (g2.a, g2.b, g2.k));
}

#[test]
fn operators_of_user_types_pass_test_rule() {
    let p = Particle {
        pos: V3 { x: 1.0, y: 0.2, z: 0.1 },
        vel: V3 { x: 0.0, y: 1.0, z: 0.5 },
        mass: 2.0,
    };
    test_rule!(particle_energy(&p));
    test_rule!(drifted_energy(&p, 0.1));
    let q = p;
    test_rule!(stepped(&mut q, 0.1));
    let a = V3 { x: 1.0, y: 0.2, z: 0.1 };
    test_rule!(scaled_in_place(&mut a, 1.5));
    // Three damped drifts from the start: the final position is pos0 + c vel0.
    let mut r = p;
    let (_, (g, _)) = value_and_gradient!(stepped(&mut r, 0.1));
    let q3 = {
        let mut q = p;
        for _ in 0..3 {
            q.pos = V3 {
                x: q.pos.x + q.vel.x * 0.1,
                y: q.pos.y + q.vel.y * 0.1,
                z: q.pos.z + q.vel.z * 0.1,
            };
            q.vel = V3 { x: q.vel.x * 0.9, y: q.vel.y * 0.9, z: q.vel.z * 0.9 };
        }
        q
    };
    let n = (q3.pos.x * q3.pos.x + q3.pos.y * q3.pos.y + q3.pos.z * q3.pos.z).sqrt();
    // d/dpos0 of |pos_final| is pos_final / |pos_final| (pos_final = pos0 + c v0).
    assert!((g.pos.x - q3.pos.x / n).abs() < 1e-12);
    assert!((g.pos.y - q3.pos.y / n).abs() < 1e-12);
    let a = V3 { x: 1.0, y: 0.2, z: 0.1 };
    let b = V3 { x: 0.0, y: 1.0, z: -0.5 };
    test_rule!(spring(a, b, 2.0));
    test_rule!(orbit(a, b, 0.05));
    test_rule!(generic_named(0.3, 0.7));
}

#[test]
fn an_orbit_of_vectors_matches_the_same_on_numbers() {
    let (p0, v0) = (V3 { x: 1.0, y: 0.2, z: 0.1 }, V3 { x: 0.0, y: 1.0, z: -0.5 });
    let (y, (gp, gv, gdt)) = value_and_gradient!(orbit(p0, v0, 0.05));
    let (y2, (gp2, gv2, gdt2)) =
        value_and_gradient!(orbit_numbers([1.0, 0.2, 0.1], [0.0, 1.0, -0.5], 0.05));
    assert!((y - y2).abs() < 1e-14);
    assert!((gdt - gdt2).abs() < 1e-12);
    for (g, h) in [(gp, gp2), (gv, gv2)] {
        assert!((g.x - h[0]).abs() < 1e-12 && (g.y - h[1]).abs() < 1e-12);
        assert!((g.z - h[2]).abs() < 1e-12);
    }
    // Forward mode along the first coordinate of the start gives the same component.
    let e1 = V3Tangent { x: 1.0, y: 0.0, z: 0.0 };
    let zero = V3Tangent { x: 0.0, y: 0.0, z: 0.0 };
    let (_, dy) = value_and_derivative!(orbit(p0, v0, 0.05), (e1, zero, 0.0));
    assert!((dy - gp.x).abs() < 1e-12);
}

/// A complex number with a one-letter name, its methods written with `Self` (in signatures,
/// struct literals, a pattern and paths), which the rules see as the block's type.
#[derive(Tangent, Clone, Copy, Debug)]
struct C {
    re: f64,
    im: f64,
}

#[differentiable]
impl C {
    const ONE: f64 = 1.0;
    fn new(re: f64, im: f64) -> Self {
        Self { re, im }
    }
    fn times(self, o: Self) -> Self {
        Self::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
    fn abs2(&self) -> f64 {
        self.re * self.re + self.im * self.im
    }
    /// The fields of `*self` bound by a pattern, and one read through the dereference: the
    /// fields themselves (a struct pattern on `*self` was a reverse-mode stub before).
    #[allow(clippy::explicit_auto_deref)] // written as users write it
    fn abs2_by_pattern(&self) -> f64 {
        let Self { re, im } = *self;
        let C { re: r2, .. } = *self;
        re * r2 + im * (*self).im
    }
    fn conj(self) -> Self {
        let Self { re, im } = self;
        Self { re, im: -im }
    }
    /// Named like a number's method: lowering marks it as the user's (`ir::USER_METHOD`).
    fn powi(self, n: i32) -> Self {
        let mut r = Self::new(Self::ONE, 0.0);
        for _ in 0..n {
            r = r.times(self);
        }
        r
    }
}

#[differentiable]
impl Add for C {
    type Output = Self;
    fn add(self, o: Self) -> Self::Output {
        Self { re: self.re + o.re, im: self.im + o.im }
    }
}

/// Five steps of `z ← z² + c`.
#[differentiable]
fn mandelbrot(cr: f64, ci: f64) -> f64 {
    let c = C::new(cr, ci);
    let mut z = C::new(0.0, 0.0);
    for _ in 0..5 {
        z = z.times(z) + c;
    }
    z.abs2() + c.powi(3).abs2_by_pattern() + c.conj().im
}

/// A complex number's methods named like a number's (`powi(self, n)`, `abs2` through
/// `sqrt(&self)`-style names) on a receiver the text does not show to be one: a field of an
/// argument and a method's result. Reverse mode calls them as numbers' methods, which a
/// receiver of a user type answers with the method's own rule (`rev::MethodRrule`'s impl keyed
/// by `keys::UserKey`).
#[derive(Tangent, Clone, Copy, Debug)]
struct Wave {
    c: C,
    k: f64,
}

#[differentiable]
impl C {
    /// `|z|`, named like a number's method, taking `&self`.
    fn abs(&self) -> f64 {
        (self.re * self.re + self.im * self.im).sqrt()
    }
}

#[differentiable]
fn wave_amplitude(w: &Wave) -> f64 {
    w.c.powi(3).abs() * w.k + w.c.abs() + w.k.sqrt()
}

/// The same with every value's type written out.
#[differentiable]
fn wave_amplitude_typed(w: &Wave) -> f64 {
    let c: C = w.c;
    let cubed: C = c.powi(3);
    cubed.abs() * w.k + c.abs() + w.k.sqrt()
}

/// A tuple and a struct taken apart behind references.
#[differentiable]
#[allow(clippy::explicit_auto_deref)] // written as users write it
fn parts_behind_references(p: &(f64, f64), c: &C) -> f64 {
    let (a, b) = *p;
    let C { re, im } = *c;
    a * re - b * im + (*c).re * (*p).1
}

type Real = f64;

/// A capitalised type that is an alias of a float: its arithmetic, written as the operators'
/// methods where the text cannot tell, still differentiates.
#[differentiable]
fn aliased(x: Real, y: Real) -> Real {
    let z: Real = x * y + x / y - y;
    -z + x
}

#[test]
fn self_types_one_letter_names_and_aliases() {
    test_rule!(mandelbrot(0.1, 0.2));
    test_rule!(aliased(0.3, 0.7));
    test_rule!(parts_behind_references(&(0.3, -1.1), &C { re: 0.5, im: 2.0 }));
    let w = Wave { c: C { re: 0.3, im: -0.4 }, k: 2.0 };
    test_rule!(wave_amplitude(&w));
    let (y, (g,)) = value_and_gradient!(wave_amplitude(&w));
    let (yt, (gt,)) = value_and_gradient!(wave_amplitude_typed(&w));
    assert_eq!(y, yt);
    assert_eq!((g.c.re, g.c.im, g.k), (gt.c.re, gt.c.im, gt.k));
    // |z|³ k + |z| + √k with |z| = 0.5: d/dk = |z|³ + 1 / (2 √k).
    assert!((g.k - (0.125 + 0.5 / 2f64.sqrt())).abs() < 1e-14);
    let (_, (gp, gc)) =
        value_and_gradient!(parts_behind_references(&(0.3, -1.1), &C { re: 0.5, im: 2.0 }));
    // f = a re - b im + re b: df/da = re, df/db = -im + re, df/dre = a + b, df/dim = -b.
    assert_eq!(gp, (0.5, -1.5));
    assert_eq!((gc.re, gc.im), (0.3 - 1.1, 1.1));
    let (_, (gx, gy)) = value_and_gradient!(aliased(0.3, 0.7));
    // d/dx (x - x y - x / y + y) = 1 - y - 1 / y; d/dy = -x + x / y² + 1.
    assert!((gx - (1.0 - 0.7 - 1.0 / 0.7)).abs() < 1e-14);
    assert!((gy - (-0.3 + 0.3 / 0.49 + 1.0)).abs() < 1e-14);
}

/// Operators on elements of a buffer of a user type (`pts[i] - pts[i - 1]` of `pts: &[V3]`):
/// the buffer's declared element type shows the operands to be user values. Was a type error in
/// both modes until probe programs found it.
#[differentiable]
fn polyline_length(pts: &[V3]) -> f64 {
    let mut l = 0.0;
    for i in 1..pts.len() {
        let d = pts[i] - pts[i - 1];
        l += d.dot(&d).sqrt();
    }
    l
}

#[test]
fn operators_on_elements_of_user_buffers() {
    let pts = vec![V3::new(0.0, 0.0, 0.0), V3::new(1.0, 2.0, 2.0), V3::new(1.0, 2.0, 5.0)];
    test_rule!(polyline_length(&pts));
    let (v, (g,)) = value_and_gradient!(polyline_length(&pts));
    assert!((v - 6.0).abs() < 1e-12);
    // The middle point moves both segments: (p1 - p0) / 3 - (p2 - p1) / 3.
    assert!((g[1].y - 2.0 / 3.0).abs() < 1e-12 && (g[1].z - (2.0 / 3.0 - 1.0)).abs() < 1e-12);
}

/// A length: a newtype over `f64`.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct Meters(pub f64);

#[differentiable]
impl std::ops::Sub for Meters {
    type Output = Meters;
    fn sub(self, o: Meters) -> Meters {
        Meters(self.0 - o.0)
    }
}

#[differentiable]
impl std::ops::Mul<f64> for Meters {
    type Output = Meters;
    fn mul(self, k: f64) -> Meters {
        Meters(self.0 * k)
    }
}

#[differentiable]
fn newtype_distance(x: f64, y: f64) -> f64 {
    let a = Meters(x);
    let b = Meters(y);
    let d = (a - b) * 2.0;
    let e: Meters = Meters(x * y) - Meters(1.0);
    d.0 * d.0 + e.0
}

/// Arithmetic on values built by a tuple struct's constructor (`Meters(x) - Meters(y)`), in
/// both modes.
#[test]
fn newtypes_built_by_their_constructor() {
    test_rule!(newtype_distance(1.5, 0.3));
    let (_, (gx, gy)) = value_and_gradient!(newtype_distance(1.5, 0.3));
    // d = 2 (x - y): d² has gradient 8 (x - y) (1, -1); e = x y - 1 adds (y, x).
    assert!((gx - (8.0 * 1.2 + 0.3)).abs() < 1e-12 && (gy - (-8.0 * 1.2 + 1.5)).abs() < 1e-12);
}
