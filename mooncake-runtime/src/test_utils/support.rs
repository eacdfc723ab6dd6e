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
