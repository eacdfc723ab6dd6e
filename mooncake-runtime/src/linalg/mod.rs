//! nalgebra's heap matrices as primal types (feature `nalgebra`, issue 15): `DVector<f64>`,
//! `RowDVector<f64>` and `DMatrix<f64>`.
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
use crate::rng::TestRng;
use crate::shared::SharedRef;
use crate::tangent::{FromHandle, Primal, ShapeMismatch, TangentSpace, close};
use nalgebra::{DMatrix, DVector, RowDVector};

pub mod chol;
pub mod dispatch;
pub mod fixed;
pub mod rules;

/// A heap matrix of `f64` (`DVector`, `RowDVector`, `DMatrix`): what the rules of [`rules`] are
/// written over. Every method is one call of nalgebra's own kernels.
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
    /// The type of the transpose (`DVector` and `RowDVector` are each other's).
    type Transposed: HeapMatrix<Transposed = Self>;
    /// `(rows, columns)`.
    fn dims(&self) -> (usize, usize);
    /// A zero matrix of the same shape.
    fn zeros_like(&self) -> Self;
    /// The entries, column-major.
    fn entries(&self) -> &[f64];
    /// The entries, column-major, mutably.
    fn entries_mut(&mut self) -> &mut [f64];
    /// The transpose.
    fn transposed(&self) -> Self::Transposed;
    /// `self += a * x` (BLAS axpy over the entries).
    fn add_scaled(&mut self, a: f64, x: &Self) {
        let n = x.entries().len();
        let x = nalgebra::DVectorView::from_slice(x.entries(), n);
        nalgebra::DVectorViewMut::from_slice(self.entries_mut(), n).axpy(a, &x, 1.0);
    }
    /// `self += a * x ∘ y` (element-wise product; nalgebra's `cmpy`).
    fn add_component_mul(&mut self, a: f64, x: &Self, y: &Self);
    /// `<self, other>` (the Frobenius inner product; nalgebra's `dot`).
    fn dot_with(&self, other: &Self) -> f64;
    /// The sum of the entries (nalgebra's `sum`).
    fn total(&self) -> f64;
    /// Adds `a` to every entry (nalgebra's `add_scalar_mut`).
    fn add_to_all(&mut self, a: f64);
}

macro_rules! heap_matrix {
    ($ty:ty, $tr:ty, $zeros:expr) => {
        impl HeapMatrix for $ty {
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
            fn entries(&self) -> &[f64] {
                self.as_slice()
            }
            #[inline]
            fn entries_mut(&mut self) -> &mut [f64] {
                self.as_mut_slice()
            }
            #[inline]
            fn transposed(&self) -> $tr {
                self.transpose()
            }
            #[inline]
            fn add_component_mul(&mut self, a: f64, x: &Self, y: &Self) {
                self.cmpy(a, x, y, 1.0);
            }
            #[inline]
            fn dot_with(&self, other: &Self) -> f64 {
                self.dot(other)
            }
            #[inline]
            fn total(&self) -> f64 {
                self.sum()
            }
            #[inline]
            fn add_to_all(&mut self, a: f64) {
                self.add_scalar_mut(a);
            }
        }

        impl crate::elementwise::Elementwise for $ty {
            type Elem = f64;
            #[inline]
            fn zeros_like(&self) -> Self {
                HeapMatrix::zeros_like(self)
            }
            #[inline]
            fn map_pairs(
                &self,
                other: &Self,
                mut f: impl FnMut(f64, f64) -> (f64, f64),
            ) -> (Self, Self) {
                let (mut a, mut b) = (HeapMatrix::zeros_like(self), HeapMatrix::zeros_like(self));
                let it = a.entries_mut().iter_mut().zip(b.entries_mut()).zip(self.entries());
                for (((a, b), &x), &y) in it.zip(other.entries()) {
                    (*a, *b) = f(x, y);
                }
                (a, b)
            }
            #[inline]
            fn map_first(&self, mut f: impl FnMut(f64) -> (f64, f64)) -> Self {
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
                self.dot(other)
            }
            fn scale(&mut self, a: f64) {
                *self *= a;
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
                self.map(|_| rng.normal())
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
                self.add_scaled(h, tangent);
            }
            fn inner_difference(tangent: &$ty, a: &Self, b: &Self) -> f64 {
                if a.shape() != b.shape() || a.shape() != tangent.shape() {
                    return f64::NAN;
                }
                tangent.dot(&(a - b))
            }
            fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
                self.shape() == other.shape()
                    && self.iter().zip(other.iter()).all(|(a, b)| close(*a, *b, rtol, atol))
            }
        }

        impl crate::elements::ElementArray for $ty {
            type Elem = f64;
            #[inline(always)]
            fn count(&self) -> usize {
                self.len()
            }
        }

        impl crate::elements::ElementAt<usize> for $ty {
            #[inline(always)]
            fn at(&self, i: usize) -> f64 {
                self[i]
            }
            #[inline(always)]
            fn at_mut(&mut self, i: usize) -> &mut f64 {
                &mut self[i]
            }
        }

        impl crate::elements::ElementAt<(usize, usize)> for $ty {
            #[inline(always)]
            fn at(&self, ij: (usize, usize)) -> f64 {
                self[ij]
            }
            #[inline(always)]
            fn at_mut(&mut self, ij: (usize, usize)) -> &mut f64 {
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

heap_matrix!(DVector<f64>, RowDVector<f64>, |r, _| DVector::zeros(r));
heap_matrix!(RowDVector<f64>, DVector<f64>, |_, c| RowDVector::zeros(c));
heap_matrix!(DMatrix<f64>, DMatrix<f64>, DMatrix::zeros);
