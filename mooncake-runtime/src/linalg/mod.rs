//! nalgebra's heap matrices as primal types (feature `nalgebra`, issue 15): `DVector<T>`,
//! `RowDVector<T>` and `DMatrix<T>` with `T` = `f64` or `f32` ([`MatScalar`]).
//!
//! They are **address-identified**, like `Vec<f64>`: the tangent is a matrix of the same type and
//! shape (a `DMatrix`'s gradient is a `DMatrix`), the fdata and the shadow are one shared matrix
//! ([`SharedRef`]) that every rule touching the value increments in place, and the rdata is
//! [`NoRData`]. A heap matrix is a buffer: passing `&m` to two calls must send both gradients to
//! one place (the unique-gradient-address rule), and value-identified rdata would need a zero
//! with no shape ([`crate::tangent::ZeroRData`]), which a matrix whose size is known only at run
//! time does not have.
//!
//! The rules are in [`rules`]; the dispatch of methods and operators in derived code to them in
//! [`dispatch`].

use crate::dual::NoRData;
use crate::float::Float;
use crate::rng::TestRng;
use crate::shared::SharedRef;
use crate::tangent::{FromHandle, Primal, ShapeMismatch, TangentSpace, close};
use nalgebra::{DMatrix, DVector, RowDVector};

pub mod chol;
pub mod dispatch;
pub mod fixed;
pub mod rules;

/// The element type of a heap matrix: `f64` or `f32` (this crate's [`Float`] and nalgebra's
/// `RealField`; the two share method names, so generic code calls those by their trait's path).
pub trait MatScalar: Float + nalgebra::RealField {}

impl MatScalar for f32 {}
impl MatScalar for f64 {}

/// A heap matrix (`DVector`, `RowDVector`, `DMatrix`) of a [`MatScalar`]: what the rules of
/// [`rules`] are written over. Every method is one call of nalgebra's own kernels.
pub trait HeapMatrix:
    Primal<
        Tangent = Self,
        TangentRef = Self,
        FData = SharedRef<Self>,
        RData = NoRData,
        Shadow = SharedRef<Self>,
        Handle = SharedRef<Self>,
    > + Clone
    + std::fmt::Debug
    + PartialEq
    + 'static
{
    /// The element type.
    type Scalar: MatScalar;
    /// The type of the transpose (`DVector` and `RowDVector` are each other's).
    type Transposed: HeapMatrix<Transposed = Self, Scalar = Self::Scalar>;
    /// `(rows, columns)`.
    fn dims(&self) -> (usize, usize);
    /// A zero matrix of the same shape.
    fn zeros_like(&self) -> Self;
    /// The entries, column-major.
    fn entries(&self) -> &[Self::Scalar];
    /// The entries, column-major, mutably.
    fn entries_mut(&mut self) -> &mut [Self::Scalar];
    /// The transpose.
    fn transposed(&self) -> Self::Transposed;
    /// `self += a * x` (BLAS axpy over the entries).
    fn add_scaled(&mut self, a: Self::Scalar, x: &Self) {
        let n = x.entries().len();
        let x = nalgebra::DVectorView::from_slice(x.entries(), n);
        nalgebra::DVectorViewMut::from_slice(self.entries_mut(), n).axpy(a, &x, Float::ONE);
    }
    /// `self *= a` (nalgebra's `scale_mut`).
    fn scale_by(&mut self, a: Self::Scalar);
    /// `self /= a` (nalgebra's `unscale_mut`: each entry divided, as `m / a` does).
    fn unscale_by(&mut self, a: Self::Scalar);
    /// `self += a * x ∘ y` (element-wise product; nalgebra's `cmpy`).
    fn add_component_mul(&mut self, a: Self::Scalar, x: &Self, y: &Self);
    /// `<self, other>` (the Frobenius inner product; nalgebra's `dot`).
    fn dot_with(&self, other: &Self) -> Self::Scalar;
    /// The sum of the entries (nalgebra's `sum`).
    fn total(&self) -> Self::Scalar;
    /// Adds `a` to every entry (nalgebra's `add_scalar_mut`).
    fn add_to_all(&mut self, a: Self::Scalar);
}

macro_rules! heap_matrix {
    ($ty:ty, $tr:ty, $S:ty, $zeros:expr) => {
        impl HeapMatrix for $ty {
            type Scalar = $S;
            type Transposed = $tr;
            #[inline]
            fn dims(&self) -> (usize, usize) {
                self.shape()
            }
            #[inline]
            fn zeros_like(&self) -> Self {
                let (r, c) = self.shape();
                $zeros(r, c)
            }
            #[inline]
            fn entries(&self) -> &[$S] {
                self.as_slice()
            }
            #[inline]
            fn entries_mut(&mut self) -> &mut [$S] {
                self.as_mut_slice()
            }
            #[inline]
            fn scale_by(&mut self, a: $S) {
                self.scale_mut(a);
            }
            #[inline]
            fn unscale_by(&mut self, a: $S) {
                self.unscale_mut(a);
            }
            #[inline]
            fn transposed(&self) -> $tr {
                self.transpose()
            }
            #[inline]
            fn add_component_mul(&mut self, a: $S, x: &Self, y: &Self) {
                self.cmpy(a, x, y, 1.0);
            }
            #[inline]
            fn dot_with(&self, other: &Self) -> $S {
                self.dot(other)
            }
            #[inline]
            fn total(&self) -> $S {
                self.sum()
            }
            #[inline]
            fn add_to_all(&mut self, a: $S) {
                self.add_scalar_mut(a);
            }
        }

        impl crate::elementwise::Elementwise for $ty {
            type Elem = $S;
            #[inline]
            fn zeros_like(&self) -> Self {
                HeapMatrix::zeros_like(self)
            }
            #[inline]
            fn map_pairs(
                &self,
                other: &Self,
                mut f: impl FnMut($S, $S) -> ($S, $S),
            ) -> (Self, Self) {
                let (mut a, mut b) = (HeapMatrix::zeros_like(self), HeapMatrix::zeros_like(self));
                let it = a.entries_mut().iter_mut().zip(b.entries_mut()).zip(self.entries());
                for (((a, b), &x), &y) in it.zip(other.entries()) {
                    (*a, *b) = f(x, y);
                }
                (a, b)
            }
            #[inline]
            fn map_first(&self, mut f: impl FnMut($S) -> ($S, $S)) -> Self {
                self.map(|x| f(x).0)
            }
            #[inline]
            fn add_product(&mut self, g: &Self, d: &Self) {
                self.add_component_mul(1.0, g, d);
            }
        }

        impl TangentSpace for $ty {
            fn increment(&mut self, other: &Self) {
                assert_eq!(
                    self.shape(),
                    other.shape(),
                    "mooncake: cannot add a tangent of shape {:?} to one of shape {:?}",
                    other.shape(),
                    self.shape()
                );
                self.add_scaled(1.0, other);
            }
            fn inner(&self, other: &Self) -> f64 {
                if self.shape() != other.shape() {
                    return f64::NAN;
                }
                f64::from(self.dot(other))
            }
            fn scale(&mut self, a: f64) {
                *self *= a as $S;
            }
            fn settle(&mut self) {
                self.add_scalar_mut(0.0);
            }
        }

        impl Primal for $ty {
            type Tangent = $ty;
            type TangentRef = $ty;
            type FData = SharedRef<$ty>;
            type RData = NoRData;
            type Shadow = SharedRef<$ty>;
            type Handle = SharedRef<$ty>;

            crate::tangent::address_identified_methods!(<$ty as HeapMatrix>::zeros_like);
            fn random_tangent(&self, rng: &mut TestRng) -> $ty {
                self.map(|_| rng.normal() as $S)
            }
            fn reset_shadow(&self, shadow: &mut SharedRef<$ty>) -> Result<(), ShapeMismatch> {
                let live = shadow.is_live();
                shadow.with_mut(|s| {
                    if s.shape() != self.shape() {
                        return Err(ShapeMismatch { prepared: s.len(), given: self.len() });
                    }
                    // A constant shadow is never read: no need to zero it.
                    if live {
                        s.entries_mut().fill(0.0);
                    }
                    Ok(())
                })
            }
            fn perturb(&mut self, tangent: &$ty, h: f64) {
                assert_eq!(self.shape(), tangent.shape(), "mooncake: tangent of the wrong shape");
                self.add_scaled(h as $S, tangent);
            }
            fn inner_difference(tangent: &$ty, a: &Self, b: &Self) -> f64 {
                if a.shape() != b.shape() || a.shape() != tangent.shape() {
                    return f64::NAN;
                }
                // In `f64`: an `f32` difference of nearby values would lose its digits.
                tangent
                    .iter()
                    .zip(a.iter().zip(b.iter()))
                    .map(|(t, (x, y))| f64::from(*t) * (f64::from(*x) - f64::from(*y)))
                    .sum()
            }
            fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
                self.shape() == other.shape()
                    && self
                        .iter()
                        .zip(other.iter())
                        .all(|(a, b)| close(f64::from(*a), f64::from(*b), rtol, atol))
            }
        }

        impl crate::elements::ElementArray for $ty {
            type Elem = $S;
            #[inline(always)]
            fn count(&self) -> usize {
                self.len()
            }
        }

        impl crate::elements::ElementAt<usize> for $ty {
            #[inline(always)]
            fn at(&self, i: usize) -> $S {
                self[i]
            }
            #[inline(always)]
            fn at_mut(&mut self, i: usize) -> &mut $S {
                &mut self[i]
            }
        }

        impl crate::elements::ElementAt<(usize, usize)> for $ty {
            #[inline(always)]
            fn at(&self, ij: (usize, usize)) -> $S {
                self[ij]
            }
            #[inline(always)]
            fn at_mut(&mut self, ij: (usize, usize)) -> &mut $S {
                &mut self[ij]
            }
        }

        impl FromHandle for $ty {
            fn from_handle(handle: &SharedRef<$ty>) -> $ty {
                handle.with(Clone::clone)
            }
        }
    };
}

heap_matrix!(DVector<f64>, RowDVector<f64>, f64, |r, _| DVector::zeros(r));
heap_matrix!(RowDVector<f64>, DVector<f64>, f64, |_, c| RowDVector::zeros(c));
heap_matrix!(DMatrix<f64>, DMatrix<f64>, f64, DMatrix::zeros);
heap_matrix!(DVector<f32>, RowDVector<f32>, f32, |r, _| DVector::zeros(r));
heap_matrix!(RowDVector<f32>, DVector<f32>, f32, |_, c| RowDVector::zeros(c));
heap_matrix!(DMatrix<f32>, DMatrix<f32>, f32, DMatrix::zeros);
