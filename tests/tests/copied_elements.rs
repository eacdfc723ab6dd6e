//! Elements of buffers of `Copy` structs taken out by value (`let q = *p;` of a loop's element,
//! `let p = ps[i];` then a method, `g(ps[i])`), in both modes: each is a copy of the element
//! whose gradient goes back into the buffer's shadow. N-body and geometry code writes them; each
//! was a type error inside the reverse-mode expansion (the copy was read as a number) until
//! probe programs found it.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// A point.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct P {
    /// Abscissa.
    pub x: f64,
    /// Ordinate.
    pub y: f64,
}

#[differentiable]
impl P {
    fn prod(&self) -> f64 {
        self.x * self.y
    }
    fn dist2(&self, o: &P) -> f64 {
        (self.x - o.x) * (self.x - o.x) + (self.y - o.y) * (self.y - o.y)
    }
}

#[differentiable]
fn energy(p: P) -> f64 {
    p.x * p.x + 3.0 * p.y
}

#[differentiable]
fn copies(ps: &[P]) -> f64 {
    let mut s = 0.0;
    for p in ps.iter() {
        let q = *p;
        s += q.x * q.y;
    }
    for i in 0..ps.len() {
        let p = ps[i];
        s += p.prod() + energy(ps[i]);
    }
    for i in 1..ps.len() {
        let (a, b) = (ps[i - 1], ps[i]);
        s += a.dist2(&b);
    }
    s
}

#[differentiable]
fn copies_by_value(ps: Vec<P>) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        s += energy(ps[i]);
    }
    s
}

#[test]
fn copies_of_elements_in_both_modes() {
    let ps = vec![P { x: 0.5, y: 1.5 }, P { x: -0.3, y: 2.0 }, P { x: 1.2, y: -0.7 }];
    test_rule!(copies(&ps));
    test_rule!(copies_by_value(ps.clone()));
    let (_, (g,)) = value_and_gradient!(copies_by_value(ps.clone()));
    for (gi, p) in g.iter().zip(&ps) {
        assert_relative_eq!(gi.x, 2.0 * p.x, max_relative = 1e-12);
        assert_relative_eq!(gi.y, 3.0, max_relative = 1e-12);
    }
    // d/dx0 of x0 y0 + x0 y0 + x0² + 3 y0 + (x0 - x1)² + (y0 - y1)²: 2 y0 + 2 x0 + 2 (x0 - x1).
    let (_, (g,)) = value_and_gradient!(copies(&ps));
    let expected = 2.0 * ps[0].y + 2.0 * ps[0].x + 2.0 * (ps[0].x - ps[1].x);
    assert_relative_eq!(g[0].x, expected, max_relative = 1e-12);
}

/// A body: a point and a weight. Its point is a struct field of a buffer's element.
#[derive(Tangent, Clone, Debug)]
pub struct Body {
    /// Position.
    pub p: P,
    /// Weight.
    pub w: f64,
}

#[differentiable]
impl P {
    fn scale(&mut self, s: f64) {
        self.x *= s;
        self.y = self.y * s + 1.0;
    }
}

#[differentiable]
fn field_methods(bs: &[Body], o: &P) -> f64 {
    let mut s = 0.0;
    for i in 0..bs.len() {
        s += bs[i].p.prod() * bs[i].w + bs[i].p.dist2(o);
    }
    s
}

#[differentiable]
fn field_methods_mut(bs: &mut [Body], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..bs.len() {
        bs[i].p.scale(k);
        s += bs[i].p.prod() * bs[i].w;
    }
    s
}

#[differentiable]
fn field_methods_local(xs: &[f64]) -> f64 {
    let mut bs = Vec::new();
    for &x in xs {
        bs.push(Body { p: P { x, y: 2.0 * x }, w: x * x });
    }
    bs[1].p.scale(0.5);
    bs[0].p.prod() + bs[1].p.prod() * bs[1].w
}

/// A user method on a struct field of an element (`bs[i].p.prod()`), on a buffer behind `&`,
/// behind `&mut` (a `&mut self` method that writes the field) and built by the function.
#[test]
fn methods_on_struct_fields_of_elements() {
    let bs =
        vec![Body { p: P { x: 0.5, y: 0.2 }, w: 2.0 }, Body { p: P { x: -0.3, y: 0.7 }, w: 1.5 }];
    test_rule!(field_methods(&bs, &P { x: 0.1, y: -0.4 }));
    let mut m = bs.clone();
    test_rule!(field_methods_mut(&mut m, 1.3));
    let (v, (g, dk)) = value_and_gradient!(field_methods_mut(&mut m, 1.3));
    // s = Σ (k x)(k y + 1) w: d/dx0 = k (k y0 + 1) w0, d/dk = Σ (x (k y + 1) + k x y) w.
    let k = 1.3;
    assert_relative_eq!(g[0].p.x, k * (k * 0.2 + 1.0) * 2.0, max_relative = 1e-12);
    let dk_expected: f64 =
        bs.iter().map(|b| (b.p.x * (k * b.p.y + 1.0) + k * b.p.x * b.p.y) * b.w).sum();
    assert_relative_eq!(dk, dk_expected, max_relative = 1e-12);
    assert_relative_eq!(v, bs.iter().map(|b| k * b.p.x * (k * b.p.y + 1.0) * b.w).sum::<f64>());
    assert_relative_eq!(m[0].p.x, 0.5); // put back by the pullback
    test_rule!(field_methods_local(&[0.4, 0.9]));
}
