//! ndarray's read-only views `ArrayView<'a, F, D>` (`ArrayView1`, `ArrayView2`) as arguments of
//! derived functions.
//!
//! A view is seen as `&Array<F, D>` is: address-identified, its tangent an owned array of its
//! shape, its fdata the shadow of the memory it views (a [`SharedRef`] of an array), its rdata
//! [`NoRData`]. A derived rule copies a view argument into an owned array at entry
//! ([`crate::views::owned_arg`]), keeping its tangent or shadow, so that every rule of
//! [`super::rules`] applies to it unchanged; the gradient lands in the caller's shadow.
//!
//! `test_rule!(f(a.view()))` and `value_and_gradient!(f(a.view()))` take the view of an array the
//! caller owns: the test perturbs the array, and the gradient is an array of its shape.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
//!
//! #[differentiable]
//! fn quad(m: ArrayView2<f64>, x: ArrayView1<f64>) -> f64 {
//!     let y: Array1<f64> = m.dot(&x);
//!     y.dot(&x)
//! }
//!
//! let m = Array2::from_shape_vec((2, 2), vec![2.0, 1.0, 1.0, 3.0]).unwrap();
//! let x = Array1::from_vec(vec![1.0, -1.0]);
//! let (v, (gm, gx)) = value_and_gradient!(quad(m.view(), x.view()));
//! assert_eq!(v, 3.0);
//! assert_eq!(gx, m.dot(&x) * 2.0); // (M + Mᵀ) x, M symmetric
//! assert_eq!(gm[[0, 1]], -1.0); // x xᵀ
//! test_rule!(quad(m.view(), x.view()));
//! ```

use super::NdScalar;
use crate::dual::{CoDual, Dual, NoRData};
use crate::float::Float;
use crate::rng::TestRng;
use crate::shared::SharedRef;
use crate::tangent::{Primal, ShapeMismatch, close};
use crate::views::OwnedArg;
use ndarray::{Array, ArrayView, Dimension, Zip};

impl<'a, F: NdScalar, D: Dimension + 'static> Primal for ArrayView<'a, F, D> {
    type Tangent = Array<F, D>;
    type TangentRef = Array<F, D>;
    type FData = SharedRef<Array<F, D>>;
    type RData = NoRData;
    type Shadow = SharedRef<Array<F, D>>;
    /// A view cannot be written through: its handle is itself (as a `&T`'s is).
    type Handle = ArrayView<'a, F, D>;

    fn zero_tangent(&self) -> Array<F, D> {
        Array::zeros(self.raw_dim())
    }
    fn random_tangent(&self, rng: &mut TestRng) -> Array<F, D> {
        self.map(|_| F::from_f64(rng.normal()))
    }
    fn zero_fdata(&self) -> SharedRef<Array<F, D>> {
        SharedRef::new(self.zero_tangent())
    }
    #[inline(always)]
    fn zero_rdata(&self) -> NoRData {
        NoRData
    }
    fn zero_shadow(&self) -> SharedRef<Array<F, D>> {
        SharedRef::new(self.zero_tangent())
    }
    fn constant_shadow(&self) -> SharedRef<Array<F, D>> {
        SharedRef::constant(self.zero_tangent())
    }
    fn constant_fdata(&self) -> SharedRef<Array<F, D>> {
        SharedRef::constant(self.zero_tangent())
    }
    fn fdata_as_shadow(
        fdata: &SharedRef<Array<F, D>>,
    ) -> Option<(SharedRef<Array<F, D>>, NoRData)> {
        Some((fdata.clone(), NoRData))
    }
    fn fdata_of_shadow(&self, shadow: &SharedRef<Array<F, D>>) -> SharedRef<Array<F, D>> {
        shadow.clone()
    }
    fn split_tangent(tangent: Array<F, D>) -> (SharedRef<Array<F, D>>, NoRData) {
        (SharedRef::new(tangent), NoRData)
    }
    fn join_tangent(fdata: &SharedRef<Array<F, D>>, _: NoRData) -> Array<F, D> {
        fdata.with(Clone::clone)
    }
    fn tangent_to_shadow(tangent: Array<F, D>) -> SharedRef<Array<F, D>> {
        SharedRef::new(tangent)
    }
    fn shadow_to_tangent(shadow: &SharedRef<Array<F, D>>) -> Array<F, D> {
        shadow.with(Clone::clone)
    }
    #[inline(always)]
    fn tangent_ref(tangent: &Array<F, D>) -> &Array<F, D> {
        tangent
    }
    #[inline(always)]
    fn tangent_mut(tangent: &mut Array<F, D>) -> &mut Array<F, D> {
        tangent
    }
    fn to_handle(&self) -> ArrayView<'a, F, D> {
        self.clone()
    }
    fn load_handle(&mut self, handle: &ArrayView<'a, F, D>) {
        *self = handle.clone();
    }
    /// Finite differences perturb the array a view looks at, which the test utility owns when
    /// the argument is written `a.view()` (`test_rule!(f(a.view()))`); a view it does not own
    /// (`m.row(0)`, a view held in a variable) cannot be perturbed.
    ///
    /// # Panics
    /// Always, with a message saying how to pass the argument instead.
    #[track_caller]
    fn perturb(&mut self, _: &Array<F, D>, _: f64) {
        panic!(
            "mooncake: a test cannot perturb a view of memory it does not own; pass the \
             argument as `a.view()` of an array `a` (the test perturbs a copy of `a`), or \
             `&a.row(0).to_owned()`"
        )
    }
    fn inner_difference(tangent: &Array<F, D>, a: &Self, b: &Self) -> f64 {
        if a.shape() != b.shape() || a.shape() != tangent.shape() {
            return f64::NAN;
        }
        Zip::from(tangent).and(a).and(b).fold(0.0, |acc, t, x, y| {
            acc + Float::to_f64(*t) * (Float::to_f64(*x) - Float::to_f64(*y))
        })
    }
    fn reset_shadow(&self, shadow: &mut SharedRef<Array<F, D>>) -> Result<(), ShapeMismatch> {
        let live = shadow.is_live();
        shadow.with_mut(|s| {
            if s.shape() != self.shape() {
                return Err(ShapeMismatch { prepared: s.len(), given: self.len() });
            }
            if live {
                s.fill(F::ZERO);
            }
            Ok(())
        })
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.shape() == other.shape()
            && Zip::from(self)
                .and(other)
                .all(|a, b| close(Float::to_f64(*a), Float::to_f64(*b), rtol, atol))
    }
}

/// Forward mode: a view argument and its tangent, as an owned array and the same tangent.
impl<'a, F: NdScalar, D: Dimension + 'static> OwnedArg for Dual<ArrayView<'a, F, D>, Array<F, D>> {
    type Owned = Dual<Array<F, D>, Array<F, D>>;
    #[inline]
    fn owned_arg(self) -> Self::Owned {
        Dual::new(self.primal.to_owned(), self.tangent)
    }
}

/// Reverse mode: a view argument and its shadow, as an owned array with the same shadow.
impl<'a, F: NdScalar, D: Dimension + 'static> OwnedArg
    for CoDual<ArrayView<'a, F, D>, SharedRef<Array<F, D>>>
{
    type Owned = CoDual<Array<F, D>, SharedRef<Array<F, D>>>;
    #[inline]
    fn owned_arg(self) -> Self::Owned {
        CoDual::new(self.primal.to_owned(), self.fdata)
    }
}
