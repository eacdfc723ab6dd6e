//! `#[differentiable]` on `impl` blocks that are generic over constants (`impl<const N: usize>
//! State<N>`), and on `impl` blocks derived for one mode only. Found by probe programs: the
//! methods' forward dispatch bounded `State<N>: Primal`, which hid the derived impl from rustc,
//! so that the tangent's two names (`Tangent`, `TangentRef`) no longer met (a type error in
//! both modes); and `reverse_only` on an `impl` block dispatched forward calls to rules it did
//! not derive.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// A state of `N` coordinates.
#[derive(Tangent, Clone, Debug)]
pub struct State<const N: usize> {
    /// The coordinates.
    pub x: [f64; N],
}

#[differentiable]
impl<const N: usize> State<N> {
    fn energy(&self) -> f64 {
        let mut e = 0.0;
        for i in 0..N {
            e += self.x[i] * self.x[i];
        }
        e
    }

    fn weighted(&self, w: f64) -> f64 {
        w * self.energy() + self.x[0]
    }
}

#[differentiable]
fn total(s: &State<3>, w: f64) -> f64 {
    s.weighted(w) + s.energy()
}

/// A point whose methods have reverse rules only, and one with forward rules only.
#[derive(Tangent, Clone, Debug)]
pub struct Pt {
    /// Abscissa.
    pub x: f64,
    /// Ordinate.
    pub y: f64,
}

#[differentiable(reverse_only)]
impl Pt {
    fn area(&self) -> f64 {
        self.x * self.y
    }
}

#[differentiable(forward_only)]
impl Pt {
    fn doubled_area(&self) -> f64 {
        2.0 * self.x * self.y
    }
}

#[differentiable(reverse_only)]
fn area_of(p: &Pt) -> f64 {
    p.area().sqrt()
}

#[differentiable(forward_only)]
fn doubled_area_of(p: &Pt) -> f64 {
    p.doubled_area().sqrt()
}

#[test]
fn methods_of_impls_generic_over_constants() {
    let s = State { x: [1.0, 0.5, -2.0] };
    test_rule!(total(&s, 0.7));
    let (v, (g, gw)) = value_and_gradient!(total(&s, 0.7));
    let e = 1.0 + 0.25 + 4.0;
    assert_relative_eq!(v, 1.7 * e + 1.0, max_relative = 1e-12);
    assert_relative_eq!(gw, e, max_relative = 1e-12);
    for i in 0..3 {
        let want = 2.0 * 1.7 * s.x[i] + if i == 0 { 1.0 } else { 0.0 };
        assert_relative_eq!(g.x[i], want, max_relative = 1e-12);
    }
}

#[test]
fn impls_derived_for_one_mode() {
    let p = Pt { x: 1.5, y: 0.5 };
    test_rule!(area_of(&p), mode = reverse);
    test_rule!(doubled_area_of(&p), mode = forward);
}

/// A line with a coefficient of a generic number type.
#[derive(Tangent, Clone, Debug)]
pub struct Line<T> {
    /// Slope.
    pub a: T,
}

#[differentiable]
impl<T: Float> Line<T> {
    fn eval(&self, x: T) -> T {
        self.a * x
    }
    fn sse(&self, xs: &[T]) -> T {
        let mut s = T::zero();
        for &x in xs {
            s += (self.a * x - T::one()) * (self.a * x - T::one());
        }
        s
    }
}

/// A method of a generic impl given values written as unsuffixed literals (`Line { a: 0.5 }`,
/// `vec![0.5, 1.0]`): the gradients of its number and buffer arguments are numbers and `Vec`s,
/// not `NoTangent` (the literals' type is fixed after the macro's choice is type-checked).
#[test]
fn generic_methods_given_literals() {
    let p = Line { a: 0.5 };
    let (_, (gp, gx)) = value_and_gradient!(Line::eval(&p, 0.7));
    let (gx, ga): (f64, f64) = (gx, gp.a);
    assert!((gx - 0.5).abs() < 1e-15 && (ga - 0.7).abs() < 1e-15);
    let xs = vec![0.5, 1.0];
    let (_, (gp, gxs)) = value_and_gradient!(Line::sse(&p, &xs));
    let (gxs, ga): (Vec<f64>, f64) = (gxs, gp.a);
    // d/da Σ (a x - 1)² = Σ 2 (a x - 1) x; d/dx_k = 2 (a x_k - 1) a.
    assert!((ga - (2.0 * (0.25 - 1.0) * 0.5 + 2.0 * (0.5 - 1.0))).abs() < 1e-12);
    assert!((gxs[1] - 2.0 * (0.5 - 1.0) * 0.5).abs() < 1e-12);
}
