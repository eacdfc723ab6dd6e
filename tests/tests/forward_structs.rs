//! Derived rules over user structs (`#[derive(Tangent)]`): by value, by `&` and by `&mut`,
//! struct literals, tuple structs, nested fields, methods (`&self`, `&mut self`, `self`) and
//! associated functions. Checked in both modes, except where reverse mode does not cover the
//! function yet (user methods, nested field places), as noted beside those checks.

// The corpus deliberately writes loops, borrows and comparisons the way users do, including the
// forms clippy would rewrite, because those are what the macro must handle.
#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::neg_cmp_op_on_partial_ord,
    clippy::useless_vec,
    clippy::assign_op_pattern
)]

use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Params {
    w: Vec<f64>,
    pub b: f64,
    pub n: usize,
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Point {
    pub x: f64,
    pub y: f64,
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Pair(pub f64, pub f64);

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Outer {
    pub inner: Point,
    pub scale: f64,
    pub params: Params,
}

#[differentiable]
fn predict(p: &Params, x: &[f64]) -> f64 {
    let mut s = p.b;
    for i in 0..p.n {
        s += p.w[i] * x[i];
    }
    s
}

#[differentiable]
fn update(p: &mut Params, g: f64) {
    p.b += g * p.w[0];
    p.w[1] = p.w[1] * g;
}

#[differentiable]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

#[differentiable]
fn make_point(a: f64) -> Point {
    Point { x: a, y: a * 2.0 }
}

#[differentiable]
fn pair_product(a: f64) -> f64 {
    let p = Pair(a, a.sin());
    let Pair(u, v) = p;
    p.0 * p.1 + u - v
}

#[differentiable]
fn destructure(p: Point) -> f64 {
    let Point { x, y } = p;
    x * y
}

#[differentiable]
fn nested(o: &Outer, x: &[f64]) -> f64 {
    o.inner.x * o.scale + o.inner.y + predict(&o.params, x)
}

#[differentiable]
impl Point {
    fn new(x: f64, y: f64) -> Point {
        Point { x, y }
    }

    fn dot(&self, other: &Point) -> f64 {
        self.x * other.x + self.y * other.y
    }

    fn scale(&mut self, a: f64) {
        self.x *= a;
        self.y = self.y * a;
    }

    fn into_sum(self) -> f64 {
        self.x + self.y
    }

    fn norm2(&self) -> f64 {
        self.dot(self)
    }
}

// `p.scale(2.0)`: a `&mut self` method on a value the function holds; `p.dot(&q)` lends `q`, a
// struct the function holds by value.
#[differentiable]
fn use_methods(a: f64, b: f64) -> f64 {
    let mut p = Point::new(a, b);
    let q = Point { x: b, y: 1.0 };
    p.scale(2.0);
    let d = p.dot(&q) + p.norm2();
    d + q.into_sum()
}

#[differentiable]
impl Params {
    fn weighted(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..self.n {
            s += self.w[i] * x[i];
        }
        s
    }

    fn shift(&mut self, d: f64) {
        self.b += d;
        for i in 0..self.w.len() {
            self.w[i] += d * 0.5;
        }
    }
}

#[differentiable]
fn mut_method_on_value(a: f64, b: f64, r: &Point) -> f64 {
    let mut p = Point::new(a, b);
    let q = p.into_sum();
    p.scale(q);
    p.scale(2.0);
    p.dot(r) * p.y + p.norm2()
}

#[differentiable]
fn method_receivers(p: &Point, params: &Params, x: &[f64], a: f64, b: f64) -> f64 {
    let v = Point::new(a * b, b);
    let s = p.dot(p) + v.norm2() + params.weighted(x);
    s + v.into_sum() * p.norm2()
}

#[differentiable]
fn params_methods(p: &mut Params, x: &[f64]) -> f64 {
    p.shift(0.25);
    let a = p.weighted(x);
    a * a
}

#[test]
fn structs_by_reference() {
    let p = Params { w: vec![0.5, -1.0, 2.0], b: 0.3, n: 3 };
    let x = vec![1.0, 2.0, -0.5];
    test_rule!(predict(&p, &x));
    let q = p.clone();
    test_rule!(update(&mut q, 1.5));
}

#[test]
fn structs_by_value_and_literals() {
    test_rule!(norm(Point { x: 0.3, y: -1.2 }));
    test_rule!(make_point(0.7));
    test_rule!(pair_product(0.7));
    test_rule!(destructure(Point { x: 0.3, y: -1.2 }));
}

#[test]
fn nested_fields() {
    let o = Outer {
        inner: Point { x: 0.3, y: -1.2 },
        scale: 2.0,
        params: Params { w: vec![0.5, -1.0], b: 0.1, n: 2 },
    };
    let x = vec![1.0, 2.0];
    test_rule!(nested(&o, &x));
    let (v, (go, gx)) = value_and_gradient!(nested(&o, &x));
    assert_eq!(v, nested(&o, &x));
    // d/d(inner.x) = scale, d/d(inner.y) = 1, d/d(scale) = inner.x; predict is b + w·x.
    assert_eq!((go.inner.x, go.inner.y, go.scale), (2.0, 1.0, 0.3));
    assert_eq!((go.params.w.clone(), go.params.b), (x.clone(), 1.0));
    assert_eq!(gx, o.params.w);
}

#[test]
fn methods_and_associated_functions() {
    test_rule!(use_methods(0.7, -0.4));
    let r = Point { x: 1.5, y: -0.5 };
    test_rule!(mut_method_on_value(0.7, -0.4, &r));
    let p = Point { x: 0.3, y: -1.2 };
    let q = Point { x: 1.5, y: 0.5 };
    test_rule!(Point::dot(&p, &q), frule = Point::dot_frule, rrule = Point::dot_rrule);
    test_rule!(Point::norm2(&p), frule = Point::norm2_frule, rrule = Point::norm2_rrule);
    test_rule!(Point::into_sum(p), frule = Point::into_sum_frule, rrule = Point::into_sum_rrule);
    let r = p;
    test_rule!(Point::scale(&mut r, 1.5), frule = Point::scale_frule, rrule = Point::scale_rrule);
    let params = Params { w: vec![0.5, -1.0, 2.0], b: 0.3, n: 3 };
    let x = vec![1.0, 2.0, -0.5];
    // `&mut self` and `&self` methods on a `&mut` argument, in both modes.
    test_rule!(params_methods(&mut params, &x));
    // `&self` methods on `&` arguments and on values, `self` methods on values.
    test_rule!(method_receivers(&p, &params, &x, 0.5, -1.5));
}

#[test]
fn struct_tangents_from_the_high_level_api() {
    let p = Params { w: vec![0.5, -1.0, 2.0], b: 0.3, n: 3 };
    let x = vec![1.0, 2.0, -0.5];
    // Along the direction "b only": the derivative is 1.
    let t = ParamsTangent { w: vec![0.0; 3], b: 1.0, n: NoTangent };
    let (v, d) = value_and_derivative!(predict(&p, &x), (t, vec![0.0; 3]));
    assert_eq!(d, 1.0);
    assert!((v - (0.3 + 0.5 - 2.0 - 1.0)).abs() < 1e-12);
}

#[differentiable]
fn stretch(p: &mut Point, a: f64) {
    p.x *= a;
    p.y = p.y * a + p.x;
}

#[differentiable]
fn squares(w: &[f64]) -> f64 {
    let mut t = 0.0;
    for v in w.iter() {
        t += *v * *v;
    }
    t
}

/// A field lent to a callee that mutates it: `&mut o.inner` of `o: &mut Outer`.
#[differentiable]
fn fields_lent_mut(o: &mut Outer, a: f64) -> f64 {
    stretch(&mut o.inner, a);
    o.inner.x * o.scale + o.inner.y
}

/// Fields lent to callees that read them: `&o.params` and `&o.params.w` of `o: &Outer`.
#[differentiable]
fn fields_lent(o: &Outer, x: &[f64]) -> f64 {
    predict(&o.params, x) * o.scale + squares(&o.params.w)
}

#[test]
fn fields_lent_to_calls() {
    let o = Outer {
        inner: Point { x: 0.3, y: -1.2 },
        scale: 2.0,
        params: Params { w: vec![0.5, -1.0], b: 0.1, n: 2 },
    };
    let x = vec![1.0, 2.0];
    // Both modes, finite differences, their agreement, and `o` restored after the pullback.
    test_rule!(fields_lent_mut(&mut o, 1.5));
    test_rule!(fields_lent(&o, &x));
    let mut m = o.clone();
    let (_, (go, _)) = value_and_gradient!(fields_lent_mut(&mut m, 1.5));
    assert_eq!(m, o, "value_and_gradient! leaves `&mut` arguments as on entry");
    // y' = y a + x a; f = x a s + y'  =>  df/dx = a s + a, df/dy = a, df/ds = x a.
    assert!((go.inner.x - (1.5 * 2.0 + 1.5)).abs() < 1e-12);
    assert!((go.inner.y - 1.5).abs() < 1e-12);
    assert!((go.scale - 0.3 * 1.5).abs() < 1e-12);
}

#[test]
fn gradient_api_with_method_paths() {
    // `Type::method(&s, ..)` in the API macros reaches the method's derived reverse rule.
    let p = Point { x: 0.3, y: -1.2 };
    let q = Point { x: 1.5, y: 0.5 };
    let (v, (gp, gq)) = value_and_gradient!(Point::dot(&p, &q));
    assert_eq!(v, p.dot(&q));
    assert_eq!((gp.x, gp.y, gq.x, gq.y), (q.x, q.y, p.x, p.y));
    // Against forward mode along p.x.
    let (_, d) = value_and_derivative!(
        Point::dot(&p, &q),
        (PointTangent { x: 1.0, y: 0.0 }, PointTangent { x: 0.0, y: 0.0 })
    );
    assert_eq!(d, gp.x);
}
