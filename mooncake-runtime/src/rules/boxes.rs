//! `Box<T>` in derived code: a `Box<T>` argument is opened at the start of the rule
//! ([`unbox_frule`], [`unbox_rrule`]) and its value used as a `T` (`*b` reads it, `b.x` its
//! field), and `Box::new(x)` builds one ([`new_frule`], [`new_rrule`]). A box has the tangent,
//! fdata and rdata of what it holds (see the `Primal` impl), so its derivative is that of the
//! value inside.

use crate::dual::{CoDual, Dual};
use crate::tangent::Primal;

/// The value of a `Box<T>` argument, in forward mode.
#[inline(always)]
pub fn unbox_frule<T: Primal + Clone>(b: Dual<Box<T>, T::Tangent>) -> Dual<T, T::Tangent> {
    Dual::new(*b.primal, b.tangent)
}

/// The value of a `Box<T>` argument, in reverse mode: its rdata is the box's.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn unbox_rrule<T: Primal + Clone>(
    b: CoDual<Box<T>, T::FData>,
) -> (CoDual<T, T::FData>, impl FnOnce(T::RData) -> (T::RData,)) {
    (CoDual::new(*b.primal, b.fdata), |r| (r,))
}

/// `Box::new(x)`, in forward mode.
#[inline(always)]
pub fn new_frule<T: Primal + Clone>(x: Dual<T, T::Tangent>) -> Dual<Box<T>, T::Tangent> {
    Dual::new(Box::new(x.primal), x.tangent)
}

/// `Box::new(x)`, in reverse mode.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn new_rrule<T: Primal + Clone>(
    x: CoDual<T, T::FData>,
) -> (CoDual<Box<T>, T::FData>, impl FnOnce(T::RData) -> (T::RData,)) {
    (CoDual::new(Box::new(x.primal), x.fdata), |r| (r,))
}
