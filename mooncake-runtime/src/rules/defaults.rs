//! `T::default()` in differentiable code: a value that depends on nothing, so its tangent is
//! zero and its pullback gives nothing back.

use crate::dual::{CoDual, Dual};
use crate::tangent::Primal;

/// `T::default()` itself, what a reverse sweep calls when it runs a block again.
#[inline(always)]
pub fn default_value<T: Default>() -> T {
    T::default()
}

/// Forward rule of `T::default()`: the default with a zero tangent.
#[inline]
pub fn default_value_frule<T: Default + Primal>() -> Dual<T, T::Tangent> {
    let v = T::default();
    let t = v.zero_tangent();
    Dual::new(v, t)
}

/// Reverse rule of `T::default()`: the default with zero fdata; the pullback has no argument
/// to give a gradient to.
#[inline]
#[allow(clippy::type_complexity)]
pub fn default_value_rrule<T: Default + Primal>()
-> (CoDual<T, T::FData>, impl FnOnce(T::RData) + use<T>) {
    let v = T::default();
    let f = v.zero_fdata();
    (CoDual::new(v, f), |_| {})
}
