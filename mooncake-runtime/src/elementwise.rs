//! `m.map(|v| ..)` of a matrix or array in derived code: [`ElementMap`], a scalar function's
//! forward rule, applied element by element by [`map_elements_frule`] and
//! [`map_elements_rrule`] to any [`Elementwise`] type (nalgebra's heap matrices, ndarray's
//! arrays).
//!
//! `#[differentiable]` turns `m.map(|v| v.max(0.0))` (nalgebra) or `a.mapv(f64::tanh)`
//! (ndarray) into a call `map_elements(&m, f)` whose second argument is an `ElementMap` holding
//! the closure's forward rule, derived from the closure's body (written out as a nested `fn` of
//! one scalar). Forward mode pushes each element's tangent through the rule; reverse mode takes
//! each element's derivative from it (a tangent of one) in the forward pass, and multiplies the
//! result's cotangent by them in the pullback. The rule is a type parameter, so each map is
//! compiled with its closure inlined.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::ElementMap;
//!
//! #[differentiable]
//! fn softplus(v: f64) -> f64 {
//!     (1.0 + v.exp()).ln()
//! }
//!
//! let f = ElementMap::new(softplus_frule);
//! let (y, dy) = f.value_and_derivative(0.0);
//! assert!((y - 2.0_f64.ln()).abs() < 1e-15);
//! assert!((dy - 0.5).abs() < 1e-15); // the logistic function at 0
//! ```

// Rule signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::shared::SharedRef;

/// The forward rule `G` of a scalar function `F -> F` (`Fn(Dual<F, F>) -> Dual<F, F>`), applied
/// element by element by the rules of `map` (see the [module](self)).
#[derive(Clone, Copy)]
pub struct ElementMap<G>(G);

impl<G> std::fmt::Debug for ElementMap<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElementMap")
    }
}

impl<G> ElementMap<G> {
    /// Wraps a forward rule (`NAME_frule` of a `#[differentiable]` function of one scalar).
    pub fn new(frule: G) -> Self {
        ElementMap(frule)
    }

    /// The function's value and its derivative at `x`.
    #[inline(always)]
    pub fn value_and_derivative<F: Float>(&self, x: F) -> (F, F)
    where
        G: Fn(Dual<F, F>) -> Dual<F, F>,
    {
        let y = (self.0)(Dual::new(x, F::ONE));
        (y.primal, y.tangent)
    }

    /// The function's value at `x` and its tangent along `dx`.
    #[inline(always)]
    pub fn push_forward<F: Float>(&self, x: F, dx: F) -> (F, F)
    where
        G: Fn(Dual<F, F>) -> Dual<F, F>,
    {
        let y = (self.0)(Dual::new(x, dx));
        (y.primal, y.tangent)
    }
}

/// A matrix or array of floats that `map` applies a scalar function to, element by element,
/// with each of the crate's own loops (nalgebra's `zip_map`, ndarray's `Zip`).
pub trait Elementwise: Sized + 'static {
    /// The element type.
    type Elem: Float;
    /// A zero value of `self`'s shape.
    fn zeros_like(&self) -> Self;
    /// `f` of each element of `self` and the matching element of `other` (of the same shape),
    /// as two values of that shape.
    fn map_pairs(
        &self,
        other: &Self,
        f: impl FnMut(Self::Elem, Self::Elem) -> (Self::Elem, Self::Elem),
    ) -> (Self, Self);
    /// `f` of each element, keeping only the first of its pair.
    fn map_first(&self, f: impl FnMut(Self::Elem) -> (Self::Elem, Self::Elem)) -> Self;
    /// `self += g ∘ d` (element-wise product).
    fn add_product(&mut self, g: &Self, d: &Self);
}

/// `a.map(f)` as derived code calls it: `f` applied to each element.
pub fn map_elements<A: Elementwise, G>(a: &A, f: ElementMap<G>) -> A
where
    G: Fn(Dual<A::Elem, A::Elem>) -> Dual<A::Elem, A::Elem>,
{
    a.map_first(|x| f.push_forward(x, A::Elem::ZERO))
}

/// Forward rule of [`map_elements`]: each element's value and tangent through `f`'s forward
/// rule.
#[inline]
pub fn map_elements_frule<A: Elementwise, G>(
    a: Dual<&A, &A>,
    f: Dual<ElementMap<G>, NoTangent>,
) -> Dual<A, A>
where
    G: Fn(Dual<A::Elem, A::Elem>) -> Dual<A::Elem, A::Elem>,
{
    let f = f.primal;
    let (y, t) = a.primal.map_pairs(a.tangent, |x, dx| f.push_forward(x, dx));
    Dual::new(y, t)
}

/// Reverse rule of [`map_elements`]: the elements' derivatives taken in the forward pass (`f`'s
/// forward rule with a tangent of one), `ā += ȳ ∘ f'(a)` in the pullback; no derivatives for a
/// constant receiver (`SharedRef::is_live`).
#[inline]
pub fn map_elements_rrule<A: Elementwise, G>(
    a: CoDual<&A, SharedRef<A>>,
    f: CoDual<ElementMap<G>, NoFData>,
) -> (CoDual<A, SharedRef<A>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<A, G>)
where
    G: Fn(Dual<A::Elem, A::Elem>) -> Dual<A::Elem, A::Elem>,
{
    let f = f.primal;
    let (y, d) = if a.fdata.is_live() {
        let (y, d) = a.primal.map_pairs(a.primal, |x, _| f.value_and_derivative(x));
        (y, Some(d))
    } else {
        (a.primal.map_first(|x| f.push_forward(x, A::Elem::ZERO)), None)
    };
    let dy = SharedRef::new(y.zeros_like());
    let da = a.fdata;
    let y = CoDual::new(y, dy.clone());
    let pullback = move |_: NoRData| {
        if let Some(d) = d {
            dy.with(|g| da.accumulate(|s| s.add_product(g, &d)));
        }
        (NoRData, NoRData)
    };
    (y, pullback)
}
