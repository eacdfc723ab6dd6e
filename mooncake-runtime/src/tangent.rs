//! The type system of the rules (seed 000, "Representing Gradients"): every primal type has
//! exactly one tangent type, one fdata type and one rdata type, given by [`Primal`].
//!
//! | primal | `Tangent` | `FData` | `RData` |
//! | --- | --- | --- | --- |
//! | `f64`, `f32` | itself | [`NoFData`] | itself |
//! | integers, `bool`, `char`, `()`, `String`, `str` | [`NoTangent`] | [`NoFData`] | [`NoRData`] |
//! | `Vec<T>`, `[T]` | `Vec<T::Tangent>` | [`SharedVec<T::Tangent>`] | [`NoRData`] |
//! | `[T; N]` | `[T::Tangent; N]` | `[T::FData; N]` | `[T::RData; N]` |
//! | `(A, B, ..)` (up to 8) | `(A::Tangent, ..)` | `(A::FData, ..)` | `(A::RData, ..)` |
//! | `Option<T>` | `Option<T::Tangent>` | `Option<T::FData>` | `Option<T::RData>` |
//! | `&T`, `&mut T` | `T::Tangent` | `T::Shadow` | [`NoRData`] |
//! | `#[derive(Tangent)] struct S` | `STangent` | `SFData` | `SRData` |
//!
//! Value-identified data (scalars, arrays, tuples and structs of them, passed by value) sends its
//! gradient back as rdata; address-identified data (buffers, anything behind a reference) has a
//! *shadow* as fdata, shared by every rule that touches that memory and incremented in place.
//! `T::Shadow` is the fdata of a `T` seen at an address: a [`SharedCell`] for a scalar,
//! a [`SharedVec`] for a buffer or an array, a field-wise struct for a derived struct.

use crate::dual::{NoFData, NoRData, NoTangent};
use crate::rng::TestRng;
use crate::shared::{SharedCell, SharedVec};
use std::fmt::Debug;

/// A tangent space (the set that [`Primal::Tangent`] ranges over). Tangents and gradients
/// share one representation; rdata types are tangent spaces too.
pub trait TangentSpace: Clone + Debug {
    /// `self += other`: the increment of a gradient.
    fn increment(&mut self, other: &Self);
    /// The Euclidean inner product `<self, other>`, accumulated in `f64`.
    fn inner(&self, other: &Self) -> f64;
    /// `self *= a`.
    fn scale(&mut self, a: f64);
    /// Turns every `-0.0` into `0.0`, leaving everything else as it is. Derived reverse rules
    /// start their adjoints at `-0.0`, the additive identity (`-0.0 + x` is `x` for every `x`,
    /// where `0.0 + -0.0` is `0.0`), so that the optimiser can drop the adds into a fresh
    /// adjoint; the high-level API settles a gradient before giving it out, so that an argument
    /// nothing depends on gets `0.0`. The default does nothing (right for types without floats).
    #[inline(always)]
    fn settle(&mut self) {}
}

/// Forward data: [`NoFData`] or a shadow (a structure of shared handles, so that cloning
/// aliases). Incremented in place through `&self`.
pub trait FData: Clone + Debug {
    /// Adds the values held by `other` into the memory `self` points to.
    fn increment_from(&self, other: &Self);
}

/// Reverse data: the part of a gradient that travels back as a value, returned by pullbacks.
pub trait RData: TangentSpace {}
impl<T: TangentSpace> RData for T {}

/// A primal type: what a rule's arguments and results can be. Fixes the one tangent, fdata and
/// rdata type of the type (seed 000), and the operations on them that rules, the high-level API
/// and [`crate::test_utils`] need.
///
/// Implemented here for the scalar, buffer, tuple and reference types of the standard library,
/// and by `#[derive(Tangent)]` for user structs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no tangent type, so differentiable code cannot hold it",
    label = "a value of a type with no tangent type",
    note = "differentiable code holds numbers, `Vec`s, slices, arrays, tuples, `Option`s, `#[derive(Tangent)]` structs and enums, and (with the crate's features) nalgebra and ndarray matrices; keep a queue's or a map's values in a `Vec` (a ring buffer indexed modulo its length, a table indexed by position), or derive `Tangent` on a struct of your own"
)]
pub trait Primal {
    /// The tangent type: the owned, user-visible gradient (`Vec<f64>` for `&[f64]`).
    type Tangent: TangentSpace;
    /// What a reference to a tangent of this type points at: `[T::Tangent]` for `[T]`,
    /// `Self::Tangent` for sized types. The forward-mode tangent of a `&P` argument is a
    /// `&P::TangentRef`.
    type TangentRef: ?Sized;
    /// The forward data of a value of this type in a reverse-mode rule.
    type FData: FData;
    /// The reverse data of a value of this type.
    type RData: RData;
    /// The fdata of a value of this type when it is seen at an address (behind `&` or `&mut`).
    type Shadow: FData;
    /// The shared handle through which a reverse-mode rule sees a value of this type behind
    /// `&mut`, so that pullbacks can restore it (see `ARCHITECTURE.md`).
    type Handle: Clone;

    /// The zero tangent (its shape, e.g. a buffer's length, taken from `self`).
    fn zero_tangent(&self) -> Self::Tangent;
    /// A tangent with independent standard-normal entries, for testing.
    fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent;
    /// Fresh zero fdata (a new shadow, aliasing nothing, for address-identified data).
    fn zero_fdata(&self) -> Self::FData;
    /// Zero rdata.
    fn zero_rdata(&self) -> Self::RData;
    /// A fresh zero shadow for this value seen at an address.
    fn zero_shadow(&self) -> Self::Shadow;
    /// The shadow of an argument passed `Const(&x)` to `value_and_gradient!`, whose gradient
    /// nobody reads. The default is [`Primal::zero_shadow`]; nalgebra's heap matrices give a
    /// constant [`crate::shared::SharedRef`], so that their products skip that gradient's work.
    fn constant_shadow(&self) -> Self::Shadow {
        self.zero_shadow()
    }
    /// For a type whose fdata is its shadow (nalgebra's heap matrices: one `SharedRef`), that
    /// shadow and zero rdata: a value a derived rule holds is then lent to a call (`g(&m)`) as
    /// itself, and the callee adds straight into its gradient. `None` (the default): the call
    /// gets a fresh zero shadow, whose content is added to the value's fdata after the call's
    /// pullback (`rev::ValueBack`).
    fn fdata_as_shadow(fdata: &Self::FData) -> Option<(Self::Shadow, Self::RData)> {
        let _ = fdata;
        None
    }
    /// The fdata of a result whose gradient nobody reads: the result of a rule declared with
    /// `zero_adjoint!`, whose pullback ignores its cotangent. The default is
    /// [`Primal::zero_fdata`]; nalgebra's heap matrices give a constant
    /// [`crate::shared::SharedRef`] (see [`Primal::constant_shadow`]).
    fn constant_fdata(&self) -> Self::FData {
        self.zero_fdata()
    }
    /// Splits a tangent into its fdata part (in fresh shadows) and its rdata part.
    fn split_tangent(tangent: Self::Tangent) -> (Self::FData, Self::RData);
    /// Joins fdata and rdata back into a tangent (copying out of shadows).
    fn join_tangent(fdata: &Self::FData, rdata: Self::RData) -> Self::Tangent;
    /// A fresh shadow holding `tangent`.
    fn tangent_to_shadow(tangent: Self::Tangent) -> Self::Shadow;
    /// A copy of the tangent held by `shadow`.
    fn shadow_to_tangent(shadow: &Self::Shadow) -> Self::Tangent;
    /// Views a tangent as what a reference to it points at.
    fn tangent_ref(tangent: &Self::Tangent) -> &Self::TangentRef;
    /// Views a tangent mutably as what a reference to it points at.
    fn tangent_mut(tangent: &mut Self::Tangent) -> &mut Self::TangentRef;
    /// A new handle holding a copy of `self`.
    fn to_handle(&self) -> Self::Handle;
    /// Overwrites `self` with the value held by `handle`.
    ///
    /// # Panics
    /// If the handle holds a buffer of another length than an unsized `self`.
    fn load_handle(&mut self, handle: &Self::Handle);
    /// `self += h * tangent`: a step along a tangent, for finite differences. Non-differentiable
    /// parts are left alone.
    fn perturb(&mut self, tangent: &Self::Tangent, h: f64);
    /// `<tangent, a - b>`, accumulated in `f64`: the inner product of a tangent with the
    /// difference of two primals, for finite differences.
    fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64;
    /// Makes `shadow`, a shadow of an earlier value of this type, a zero shadow of `self`, in
    /// place: what a prepared gradient ([`crate::GradientCache`]) does instead of allocating.
    /// An error if the shapes differ (a buffer of another length). The default allocates a
    /// new shadow; buffers, scalars, references and derived structs reuse the old one.
    fn reset_shadow(&self, shadow: &mut Self::Shadow) -> Result<(), ShapeMismatch> {
        *shadow = self.zero_shadow();
        Ok(())
    }
    /// Makes `handle`, a handle of an earlier value of this type, hold a copy of `self`, in
    /// place (see [`Primal::reset_shadow`]). The default allocates a new handle.
    fn reset_handle(&self, handle: &mut Self::Handle) -> Result<(), ShapeMismatch> {
        *handle = self.to_handle();
        Ok(())
    }
    /// `shadow += r`: the rdata of this value, read through an address whose shadow is
    /// `shadow`, added into it (the reverse rule of a load). The default goes through a tangent
    /// and a fresh shadow; scalars add in place.
    fn add_rdata_to_shadow(&self, shadow: &Self::Shadow, r: Self::RData)
    where
        Self: Sized,
    {
        let t = Self::join_tangent(&self.zero_fdata(), r);
        shadow.increment_from(&Self::tangent_to_shadow(t));
    }
    /// `shadow += (fdata, r)`: the cotangent of a copy of a value of this type read through an
    /// address whose shadow is `shadow` (its fdata, where the copy's buffers gathered their
    /// gradients, and its rdata `r`), added into it: the reverse rule of a load of a value that a
    /// `&mut self` method then changed (`o.inner.scale(k)`). The default joins the two into a
    /// tangent; scalars add `r` in place.
    fn add_cotangent_to_shadow(shadow: &Self::Shadow, fdata: &Self::FData, r: Self::RData)
    where
        Self: Sized,
    {
        shadow.increment_from(&Self::tangent_to_shadow(Self::join_tangent(fdata, r)));
    }
    /// As [`Primal::add_cotangent_to_shadow`], and `fdata` left zero: the cotangent moves into
    /// `shadow` (the seed of a value lent `&mut` to a call, whose callee's pullback then works on
    /// the shadow alone). The default goes through tangents; scalars add `r` in place.
    fn move_cotangent_to_shadow(shadow: &Self::Shadow, fdata: &Self::FData, r: Self::RData)
    where
        Self: Sized,
    {
        let t = Self::join_tangent(fdata, r);
        let mut negated = t.clone();
        negated.scale(-1.0);
        shadow.increment_from(&Self::tangent_to_shadow(t));
        fdata.increment_from(&Self::split_tangent(negated).0);
    }
    /// The fdata of a copy of `self` read out of a place whose shadow is `shadow` (the whole
    /// value behind a `&` taken apart, `match k { .. }` of `k: &E`): the parts of `shadow` that
    /// fdata can alias (a buffer's shadow is its fdata), so that the gradient given to them lands
    /// in the place's shadow; zero elsewhere, whose gradient comes back as rdata. The default is
    /// fresh zero fdata, right for types whose fdata holds no buffer.
    fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
        let _ = shadow;
        self.zero_fdata()
    }
    /// Copies the tangent held by `shadow` into `out`, reusing `out`'s memory where it can
    /// (the default allocates, as [`Primal::shadow_to_tangent`]).
    fn shadow_into_tangent(shadow: &Self::Shadow, out: &mut Self::Tangent) {
        *out = Self::shadow_to_tangent(shadow);
    }
    /// Moves the tangent held by `shadow` into `out`, leaving in `shadow` contents of the same
    /// shape that only [`Primal::reset_shadow`] may read next: the prepared form's copy-out,
    /// which a buffer does by exchanging memory with `out` instead of copying. The default
    /// copies ([`Primal::shadow_into_tangent`]).
    fn take_shadow_into_tangent(shadow: &Self::Shadow, out: &mut Self::Tangent) {
        Self::shadow_into_tangent(shadow, out);
    }
    /// Whether `self` and `other` are equal up to `|a - b| <= atol + rtol * max(|a|, |b|)` in
    /// every differentiable component, and exactly equal in every other.
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool;
}

/// A primal type whose value can be read back out of its handle (a copy): how reverse mode lends
/// a value held through a handle (a `&mut T` argument) to a `&self` method. Implemented for
/// the std types with handles and by `#[derive(Tangent)]` (when every field's type implements
/// it).
pub trait FromHandle: Primal + Sized {
    /// A copy of the value `handle` holds.
    fn from_handle(handle: &Self::Handle) -> Self;
}

/// A value whose shape (a buffer's length) differs from the one a prepared gradient was made
/// for: see [`Primal::reset_shadow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeMismatch {
    /// The length the prepared buffers have.
    pub prepared: usize,
    /// The length of the value given now.
    pub given: usize,
}

impl std::fmt::Display for ShapeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a buffer of length {}, where the cache was prepared for length {}",
            self.given, self.prepared
        )
    }
}

/// `|a - b| <= atol + rtol * max(|a|, |b|)`, treating two NaNs (or two equal infinities) as equal.
pub fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    (a - b).abs() <= atol + rtol * a.abs().max(b.abs())
}

// ---------------------------------------------------------------------------------------------
// The markers.

impl TangentSpace for NoTangent {
    #[inline(always)]
    fn increment(&mut self, _: &Self) {}
    #[inline(always)]
    fn inner(&self, _: &Self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn scale(&mut self, _: f64) {}
}

impl TangentSpace for NoRData {
    #[inline(always)]
    fn increment(&mut self, _: &Self) {}
    #[inline(always)]
    fn inner(&self, _: &Self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn scale(&mut self, _: f64) {}
}

impl FData for NoFData {
    #[inline(always)]
    fn increment_from(&self, _: &Self) {}
}

impl<T: Copy + Debug + std::ops::AddAssign> FData for SharedCell<T> {
    fn increment_from(&self, other: &Self) {
        self.add(other.get());
    }
}

/// The shadow of an address-identified value that is one tangent (a heap matrix of nalgebra, an
/// array of ndarray): incremented in place by [`TangentSpace::increment`], doubled when it is
/// incremented by itself (two aliasing arguments).
impl<T: TangentSpace> FData for crate::shared::SharedRef<T> {
    fn increment_from(&self, other: &Self) {
        if self.ptr_eq(other) {
            self.with_mut(|m| m.scale(2.0));
            return;
        }
        other.with(|src| self.with_mut(|dst| dst.increment(src)));
    }
}

impl<T: TangentSpace> FData for SharedVec<T> {
    fn increment_from(&self, other: &Self) {
        if self.ptr_eq(other) {
            self.with_mut(|v| v.iter_mut().for_each(|x| x.scale(2.0)));
            return;
        }
        other.with(|src| {
            self.with_mut(|dst| {
                assert_eq!(
                    dst.len(),
                    src.len(),
                    "mooncake: cannot increment a shadow of length {} by one of length {}",
                    dst.len(),
                    src.len()
                );
                dst.iter_mut().zip(src).for_each(|(d, s)| d.increment(s));
            })
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Zeros of rdata, which accumulators of derived reverse rules start from.

/// Rdata types with a zero that does not depend on a primal's shape: every rdata type is one,
/// because buffers (whose size varies) keep their gradient in fdata.
///
/// The zero of a float is `-0.0`, the additive identity (see [`TangentSpace::settle`]): the
/// adjoint of a local starts there, so `0 + r` folds to `r`.
pub trait ZeroRData: TangentSpace {
    /// Zero.
    fn zero() -> Self;
}

impl ZeroRData for f64 {
    #[inline(always)]
    fn zero() -> Self {
        -0.0
    }
}

impl ZeroRData for f32 {
    #[inline(always)]
    fn zero() -> Self {
        -0.0
    }
}

impl ZeroRData for NoRData {
    #[inline(always)]
    fn zero() -> Self {
        NoRData
    }
}

impl<T: ZeroRData, const N: usize> ZeroRData for [T; N] {
    fn zero() -> Self {
        std::array::from_fn(|_| T::zero())
    }
}

impl<T: ZeroRData> ZeroRData for Option<T> {
    fn zero() -> Self {
        None
    }
}

macro_rules! tuple_zero {
    ($(($($T:ident),+))+) => {$(
        impl<$($T: ZeroRData),+> ZeroRData for ($($T,)+) {
            #[inline(always)]
            fn zero() -> Self {
                ($($T::zero(),)+)
            }
        }
    )+};
}

tuple_zero! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
}

/// The [`Primal`] methods of a value-identified type (tangent and rdata the type itself, fdata
/// [`NoFData`](crate::dual::NoFData), shadow and handle
/// [`SharedCell<Self>`](crate::shared::SharedCell)), written once for `f32` / `f64`, `Fwd<T>` and
/// nalgebra's `SMatrix`: everything but the random tangent and the finite-difference helpers,
/// given the type's zero.
macro_rules! value_identified_methods {
    ($zero:expr) => {
        #[inline(always)]
        fn zero_tangent(&self) -> Self {
            $zero
        }
        #[inline(always)]
        fn zero_fdata(&self) -> $crate::dual::NoFData {
            $crate::dual::NoFData
        }
        #[inline(always)]
        fn zero_rdata(&self) -> Self {
            $zero
        }
        fn zero_shadow(&self) -> $crate::shared::SharedCell<Self> {
            $crate::shared::SharedCell::new($zero)
        }
        #[inline(always)]
        fn split_tangent(tangent: Self) -> ($crate::dual::NoFData, Self) {
            ($crate::dual::NoFData, tangent)
        }
        #[inline(always)]
        fn join_tangent(_: &$crate::dual::NoFData, rdata: Self) -> Self {
            rdata
        }
        fn tangent_to_shadow(tangent: Self) -> $crate::shared::SharedCell<Self> {
            $crate::shared::SharedCell::new(tangent)
        }
        fn shadow_to_tangent(shadow: &$crate::shared::SharedCell<Self>) -> Self {
            shadow.get()
        }
        #[inline(always)]
        fn tangent_ref(tangent: &Self) -> &Self {
            tangent
        }
        #[inline(always)]
        fn tangent_mut(tangent: &mut Self) -> &mut Self {
            tangent
        }
        fn to_handle(&self) -> $crate::shared::SharedCell<Self> {
            $crate::shared::SharedCell::new(*self)
        }
        fn load_handle(&mut self, handle: &$crate::shared::SharedCell<Self>) {
            *self = handle.get();
        }
        fn reset_shadow(
            &self,
            shadow: &mut $crate::shared::SharedCell<Self>,
        ) -> Result<(), $crate::tangent::ShapeMismatch> {
            shadow.set($zero);
            Ok(())
        }
        #[inline(always)]
        fn add_rdata_to_shadow(&self, shadow: &$crate::shared::SharedCell<Self>, r: Self) {
            shadow.add(r);
        }
        #[inline(always)]
        fn add_cotangent_to_shadow(
            shadow: &$crate::shared::SharedCell<Self>,
            _: &$crate::dual::NoFData,
            r: Self,
        ) {
            shadow.add(r);
        }
        #[inline(always)]
        fn move_cotangent_to_shadow(
            shadow: &$crate::shared::SharedCell<Self>,
            _: &$crate::dual::NoFData,
            r: Self,
        ) {
            shadow.add(r);
        }
        fn reset_handle(
            &self,
            handle: &mut $crate::shared::SharedCell<Self>,
        ) -> Result<(), $crate::tangent::ShapeMismatch> {
            handle.set(*self);
            Ok(())
        }
    };
}
pub(crate) use value_identified_methods;

/// The [`Primal`] methods of an address-identified array type whose tangent is the type itself
/// (fdata, shadow and handle [`SharedRef<Self>`](crate::shared::SharedRef), rdata
/// [`NoRData`](crate::dual::NoRData)), written once for nalgebra's heap matrices and ndarray's
/// arrays: everything but the random tangent, the finite-difference helpers and the reset of a
/// shadow (which compare shapes), given a function making the zero array of a value's shape.
/// The shadow of a `Const(&x)` argument and the fdata of a `zero_adjoint!` result are constant
/// ([`SharedRef::constant`](crate::shared::SharedRef::constant): the rules' pullbacks skip
/// adding into them), and the fdata of a value is its shadow, so a value held by a derived rule
/// is lent to a call as itself ([`Primal::fdata_as_shadow`]).
#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
macro_rules! address_identified_methods {
    ($zeros_like:expr) => {
        fn zero_tangent(&self) -> Self {
            ($zeros_like)(self)
        }
        fn zero_fdata(&self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::new(($zeros_like)(self))
        }
        #[inline(always)]
        fn zero_rdata(&self) -> $crate::dual::NoRData {
            $crate::dual::NoRData
        }
        fn zero_shadow(&self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::new(($zeros_like)(self))
        }
        #[inline(always)]
        fn fdata_of_shadow(
            &self,
            shadow: &$crate::shared::SharedRef<Self>,
        ) -> $crate::shared::SharedRef<Self> {
            shadow.clone()
        }
        fn split_tangent(
            tangent: Self,
        ) -> ($crate::shared::SharedRef<Self>, $crate::dual::NoRData) {
            ($crate::shared::SharedRef::new(tangent), $crate::dual::NoRData)
        }
        fn join_tangent(fdata: &$crate::shared::SharedRef<Self>, _: $crate::dual::NoRData) -> Self {
            fdata.with(Clone::clone)
        }
        fn tangent_to_shadow(tangent: Self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::new(tangent)
        }
        fn shadow_to_tangent(shadow: &$crate::shared::SharedRef<Self>) -> Self {
            shadow.with(Clone::clone)
        }
        #[inline(always)]
        fn tangent_ref(tangent: &Self) -> &Self {
            tangent
        }
        #[inline(always)]
        fn tangent_mut(tangent: &mut Self) -> &mut Self {
            tangent
        }
        fn to_handle(&self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::new(self.clone())
        }
        fn load_handle(&mut self, handle: &$crate::shared::SharedRef<Self>) {
            handle.with(|h| self.clone_from(h));
        }
        fn shadow_into_tangent(shadow: &$crate::shared::SharedRef<Self>, out: &mut Self) {
            shadow.with(|s| out.clone_from(s));
        }
        fn constant_shadow(&self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::constant(($zeros_like)(self))
        }
        fn constant_fdata(&self) -> $crate::shared::SharedRef<Self> {
            $crate::shared::SharedRef::constant(($zeros_like)(self))
        }
        fn fdata_as_shadow(
            fdata: &$crate::shared::SharedRef<Self>,
        ) -> Option<($crate::shared::SharedRef<Self>, $crate::dual::NoRData)> {
            Some((fdata.clone(), $crate::dual::NoRData))
        }
    };
}
#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
pub(crate) use address_identified_methods;
