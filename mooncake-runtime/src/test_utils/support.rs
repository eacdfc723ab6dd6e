//! Small generic functions through which the code that `test_rule!` generates builds each
//! argument's `Dual` or `CoDual` from the harness's slots, leaving the types to inference.

use super::slots::SlotValues;
use crate::dual::{CoDual, Dual};
use crate::tangent::{Primal, TangentSpace};
use std::marker::PhantomData;

/// `Dual(p, t)` for an argument passed by value (both cloned).
#[inline]
pub fn dual_val<P: Primal + Clone>(p: &P, t: &P::Tangent) -> Dual<P, P::Tangent> {
    Dual::new(p.clone(), t.clone())
}

/// An argument passed by value (`f(x)`) given to a forward rule: a `Dual` of a clone of the value
/// and of its tangent ([`CloneValDual`]), or, when the value is itself a shared reference passed
/// by name (`x: &str`, `x: &[f64]`), of the reference and a borrow of its tangent
/// ([`RefValDual`]), as the rule takes it. The macro calls `(&ValArg(..)).val_dual()`, and
/// method resolution picks the impl for references where it applies.
pub struct ValArg<'s, P: Primal>(pub &'s P, pub &'s P::Tangent);

/// See [`ValArg`]: a shared reference passed by name.
pub trait RefValDual<'a, 's, T: ?Sized + Primal> {
    /// The `Dual` of the reference and a borrow of its tangent.
    fn val_dual(&self) -> Dual<&'a T, &'s T::TangentRef>;
}

impl<'a, 's, T: ?Sized + Primal> RefValDual<'a, 's, T> for ValArg<'s, &'a T> {
    #[inline]
    fn val_dual(&self) -> Dual<&'a T, &'s T::TangentRef> {
        Dual::new(*self.0, T::tangent_ref(self.1))
    }
}

/// See [`ValArg`]: any other value.
pub trait CloneValDual<P: Primal> {
    /// The `Dual` of clones of the value and its tangent.
    fn val_dual(&self) -> Dual<P, P::Tangent>;
}

impl<P: Primal + Clone> CloneValDual<P> for &ValArg<'_, P> {
    #[inline]
    fn val_dual(&self) -> Dual<P, P::Tangent> {
        dual_val(self.0, self.1)
    }
}

/// An argument passed by value as `test_rule!` stores it (`(&SlotArg(&x)).slot()`, see
/// [`RefSlotCheck`] and [`ValueSlot`]): a shared reference passed by name to data with a
/// derivative (`f(x)` with `x: &[f64]`) is refused with a message, since finite differences
/// cannot perturb through it; any other value is cloned.
pub struct SlotArg<'s, P>(pub &'s P);

/// See [`SlotArg`]: a shared reference passed by name.
pub trait RefSlotCheck<'a, T: ?Sized + Primal> {
    /// The reference, if its referent has no derivative.
    ///
    /// # Panics
    /// If the referent has a derivative (`&[f64]`, `&f64`).
    fn slot(self) -> &'a T;
}

impl<'a, T: ?Sized + Primal> RefSlotCheck<'a, T> for &SlotArg<'_, &'a T> {
    #[track_caller]
    fn slot(self) -> &'a T {
        assert!(
            std::mem::size_of::<T::Tangent>() == 0,
            "test_rule!: an argument passed by name is a shared reference to data with a \
             derivative (`&{}`), which finite differences cannot perturb through the reference; \
             write it `&*x` (the test then owns a copy) or `&v` of the buffer it borrows",
            std::any::type_name::<T>()
        );
        self.0
    }
}

/// See [`SlotArg`]: any other value.
pub trait ValueSlot<P> {
    /// A clone of the value.
    fn slot(self) -> P;
}

impl<P: Clone> ValueSlot<P> for &&SlotArg<'_, P> {
    fn slot(self) -> P {
        self.0.clone()
    }
}

/// `Dual(&p, &t)` for an argument passed by shared reference.
#[inline]
pub fn dual_ref<'a, P: Primal + ?Sized>(
    p: &'a P,
    t: &'a P::Tangent,
) -> Dual<&'a P, &'a P::TangentRef> {
    Dual::new(p, P::tangent_ref(t))
}

/// `Dual(&mut p, &mut t)` for an argument passed by mutable reference.
#[inline]
pub fn dual_mut<'a, P: Primal + ?Sized>(
    p: &'a mut P,
    t: &'a mut P::Tangent,
) -> Dual<&'a mut P, &'a mut P::TangentRef> {
    Dual::new(p, P::tangent_mut(t))
}

/// `CoDual(p, fdata)` for an argument passed by value (both cloned; cloning fdata aliases).
#[inline]
pub fn codual_val<P: Primal + Clone>(p: &P, fdata: &P::FData) -> CoDual<P, P::FData> {
    CoDual::new(p.clone(), fdata.clone())
}

/// `CoDual(&p, shadow)` for an argument passed by shared reference.
#[inline]
pub fn codual_ref<'a, P: Primal + ?Sized>(
    p: &'a P,
    shadow: &P::Shadow,
) -> CoDual<&'a P, P::Shadow> {
    CoDual::new(p, shadow.clone())
}

/// `CoDual(handle, shadow)` for an argument passed by mutable reference (`p` only fixes the type).
#[inline]
pub fn codual_mut<P: Primal + ?Sized>(
    _p: &P,
    handle: &P::Handle,
    shadow: &P::Shadow,
) -> CoDual<P::Handle, P::Shadow> {
    CoDual::new(handle.clone(), shadow.clone())
}

/// A zero-sized token naming the type of `p`, for the functions below.
#[inline]
pub fn marker<P: ?Sized>(_p: &P) -> PhantomData<fn() -> Box<P>> {
    PhantomData
}

/// Adds the gradient that a by-value argument's rdata (and fdata) carry into `gradient`.
#[inline]
pub fn accumulate_rdata<P: Primal>(
    _: PhantomData<fn() -> Box<P>>,
    gradient: &mut P::Tangent,
    fdata: &P::FData,
    rdata: P::RData,
) {
    gradient.increment(&P::join_tangent(fdata, rdata));
}

/// Fixes the signature of a test pullback wrapper for slots `V`.
#[inline]
pub fn pullback_for<V: SlotValues, RD, F: FnOnce(RD, &mut V::Tangents)>(_: &V, f: F) -> F {
    f
}
