//! ndarray's owned arrays as primal types (feature `ndarray`, issue 15): `Array1<F>`, `Array2<F>`
//! (and `Array<F, D>` of any dimension) with elements `F` = `f64` or `f32` ([`NdScalar`]).
//!
//! They are **address-identified**, like nalgebra's heap matrices ([`crate::tangent`]'s shared
//! helpers serve both): the tangent is an array of the same type and shape (an `Array2`'s
//! gradient is an `Array2`), the fdata and the shadow are one shared array ([`SharedRef`]) that
//! every rule touching the value increments in place, and the rdata is [`NoRData`]. An array is a
//! buffer: passing `&a` to two calls must send both gradients to one place, and value-identified
//! rdata would need a zero with no shape, which an array whose shape is known only at run time
//! does not have.
//!
//! The rules are in [`rules`]; the dispatch of methods, operators and constructors in derived
//! code to them in [`dispatch`]. Views (`ArrayView1`, `ArrayView2`) are primal types as
//! arguments, seen as `&Array` is (see [`views`]); the methods that return views in ndarray
//! (`a.t()`, `a.row(i)`, `a.column(j)`) return owned arrays in derived code (see [`rules`]).

use crate::dual::NoRData;
use crate::float::Float;
use crate::rng::TestRng;
use crate::shared::SharedRef;
use crate::tangent::{FromHandle, Primal, ShapeMismatch, TangentSpace, close};
use ndarray::{Array, ArrayView1, Dimension, Zip};

pub mod dispatch;
pub mod rules;
pub mod views;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types of the arrays that are primal types: `f64` and `f32` (sealed). Every rule
/// is written once over it. (Both this crate's [`Float`] and ndarray's `NdFloat` are among its
/// supertraits, so the rules call the methods the two share, `to_f64` say, by their trait's
/// path.)
pub trait NdScalar: Float + ndarray::NdFloat + sealed::Sealed {}

impl NdScalar for f32 {}
impl NdScalar for f64 {}

/// A zero array of the shape of `a` (standard layout).
#[inline]
pub(crate) fn zeros_like<F: NdScalar, D: Dimension>(a: &Array<F, D>) -> Array<F, D> {
    Array::zeros(a.raw_dim())
}

/// `<a, b>`, the sum of the products of the entries at equal indices: ndarray's `dot` over the
/// memory of two arrays of standard layout, a `Zip` fold otherwise.
///
/// # Panics
/// If the shapes differ.
pub(crate) fn inner<F: NdScalar, D: Dimension>(a: &Array<F, D>, b: &Array<F, D>) -> F {
    assert_shapes(a, b, "an inner product");
    match (a.as_slice(), b.as_slice()) {
        (Some(x), Some(y)) => ArrayView1::from(x).dot(&ArrayView1::from(y)),
        _ => Zip::from(a).and(b).fold(F::ZERO, |acc, &x, &y| acc + x * y),
    }
}

/// Panics with a message naming the operation if `a` and `b` have different shapes (the rules
/// do not broadcast).
#[inline]
#[track_caller]
pub(crate) fn assert_shapes<F, G, D: Dimension>(a: &Array<F, D>, b: &Array<G, D>, what: &str) {
    if a.shape() != b.shape() {
        panic!(
            "mooncake: {what} of arrays of shapes {:?} and {:?} (the rules of ndarray's \
             arrays need equal shapes; they do not broadcast)",
            a.shape(),
            b.shape()
        );
    }
}

impl<F: NdScalar, D: Dimension + 'static> TangentSpace for Array<F, D> {
    fn increment(&mut self, other: &Self) {
        assert_eq!(
            self.shape(),
            other.shape(),
            "mooncake: cannot add a tangent of shape {:?} to one of shape {:?}",
            other.shape(),
            self.shape()
        );
        *self += other;
    }
    fn inner(&self, other: &Self) -> f64 {
        if self.shape() != other.shape() {
            return f64::NAN;
        }
        Zip::from(self)
            .and(other)
            .fold(0.0, |acc, x, y| acc + Float::to_f64(*x) * Float::to_f64(*y))
    }
    fn scale(&mut self, a: f64) {
        *self *= F::from_f64(a);
    }
    fn settle(&mut self) {
        *self += F::ZERO;
    }
}

impl<F: NdScalar, D: Dimension + 'static> Primal for Array<F, D> {
    type Tangent = Self;
    type TangentRef = Self;
    type FData = SharedRef<Self>;
    type RData = NoRData;
    type Shadow = SharedRef<Self>;
    type Handle = SharedRef<Self>;

    crate::tangent::address_identified_methods!(zeros_like);

    fn random_tangent(&self, rng: &mut TestRng) -> Self {
        self.map(|_| F::from_f64(rng.normal()))
    }
    fn reset_shadow(&self, shadow: &mut SharedRef<Self>) -> Result<(), ShapeMismatch> {
        let live = shadow.is_live();
        shadow.with_mut(|s| {
            if s.shape() != self.shape() {
                return Err(ShapeMismatch { prepared: s.len(), given: self.len() });
            }
            // A constant shadow is never read: no need to zero it.
            if live {
                s.fill(F::ZERO);
            }
            Ok(())
        })
    }
    fn perturb(&mut self, tangent: &Self, h: f64) {
        assert_eq!(self.shape(), tangent.shape(), "mooncake: tangent of the wrong shape");
        self.scaled_add(F::from_f64(h), tangent);
    }
    fn inner_difference(tangent: &Self, a: &Self, b: &Self) -> f64 {
        if a.shape() != b.shape() || a.shape() != tangent.shape() {
            return f64::NAN;
        }
        Zip::from(tangent).and(a).and(b).fold(0.0, |acc, t, x, y| {
            acc + Float::to_f64(*t) * (Float::to_f64(*x) - Float::to_f64(*y))
        })
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.shape() == other.shape()
            && Zip::from(self)
                .and(other)
                .all(|a, b| close(Float::to_f64(*a), Float::to_f64(*b), rtol, atol))
    }
}

impl<F: NdScalar, D: Dimension + 'static> FromHandle for Array<F, D> {
    fn from_handle(handle: &SharedRef<Self>) -> Self {
        handle.with(Clone::clone)
    }
}

impl<F: NdScalar, D: Dimension + 'static> crate::elements::ElementArray for Array<F, D> {
    type Elem = F;
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
}

impl<F: NdScalar> crate::elements::ElementAt<usize> for ndarray::Array1<F> {
    #[inline(always)]
    fn at(&self, i: usize) -> F {
        self[i]
    }
    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut F {
        &mut self[i]
    }
}

/// The `k`-th element in ndarray's logical (row-major) order: what `for v in a.iter()` visits
/// `k`-th (an `Array2` has no `a[k]` in ndarray; derived code reads iterated elements so).
impl<F: NdScalar> crate::elements::ElementAt<usize> for ndarray::Array2<F> {
    #[inline(always)]
    fn at(&self, k: usize) -> F {
        let c = self.ncols();
        self[[k / c, k % c]]
    }
    #[inline(always)]
    fn at_mut(&mut self, k: usize) -> &mut F {
        let c = self.ncols();
        &mut self[[k / c, k % c]]
    }
}

impl<F: NdScalar> crate::elements::ElementAt<[usize; 2]> for ndarray::Array2<F> {
    #[inline(always)]
    fn at(&self, i: [usize; 2]) -> F {
        self[i]
    }
    #[inline(always)]
    fn at_mut(&mut self, i: [usize; 2]) -> &mut F {
        &mut self[i]
    }
}

impl<F: NdScalar> crate::elements::ElementAt<(usize, usize)> for ndarray::Array2<F> {
    #[inline(always)]
    fn at(&self, (i, j): (usize, usize)) -> F {
        self[[i, j]]
    }
    #[inline(always)]
    fn at_mut(&mut self, (i, j): (usize, usize)) -> &mut F {
        &mut self[[i, j]]
    }
}

impl<F: NdScalar, D: Dimension + 'static> crate::elementwise::Elementwise for Array<F, D> {
    type Elem = F;
    #[inline]
    fn zeros_like(&self) -> Self {
        Array::zeros(self.raw_dim())
    }
    #[inline]
    fn map_pairs(&self, other: &Self, mut f: impl FnMut(F, F) -> (F, F)) -> (Self, Self) {
        let mut b = Array::zeros(self.raw_dim());
        let a = Zip::from(&mut b).and(self).and(other).map_collect(|b, &x, &y| {
            let (p, q) = f(x, y);
            *b = q;
            p
        });
        (a, b)
    }
    #[inline]
    fn map_first(&self, mut f: impl FnMut(F) -> (F, F)) -> Self {
        self.mapv(|x| f(x).0)
    }
    #[inline]
    fn add_product(&mut self, g: &Self, d: &Self) {
        Zip::from(self).and(g).and(d).for_each(|s, &g, &d| *s += g * d);
    }
}
