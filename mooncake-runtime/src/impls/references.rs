//! References `&T` and `&mut T`: address-identified. The tangent is the referent's tangent; the
//! fdata is the referent's *shadow* ([`Primal::Shadow`]); the rdata is `NoRData`, because the
//! whole gradient of memory seen through a reference lives in its shadow.

use crate::dual::NoRData;
use crate::rng::TestRng;
use crate::tangent::{Primal, ShapeMismatch};

macro_rules! reference_common {
    () => {
        type Tangent = T::Tangent;
        type TangentRef = T::TangentRef;
        type FData = T::Shadow;
        type RData = NoRData;
        type Shadow = T::Shadow;

        fn zero_tangent(&self) -> T::Tangent {
            (**self).zero_tangent()
        }
        fn zero_fdata(&self) -> T::Shadow {
            (**self).zero_shadow()
        }
        #[inline(always)]
        fn zero_rdata(&self) -> NoRData {
            NoRData
        }
        fn zero_shadow(&self) -> T::Shadow {
            (**self).zero_shadow()
        }
        fn split_tangent(tangent: T::Tangent) -> (T::Shadow, NoRData) {
            (T::tangent_to_shadow(tangent), NoRData)
        }
        fn join_tangent(fdata: &T::Shadow, _: NoRData) -> T::Tangent {
            T::shadow_to_tangent(fdata)
        }
        fn tangent_to_shadow(tangent: T::Tangent) -> T::Shadow {
            T::tangent_to_shadow(tangent)
        }
        fn shadow_to_tangent(shadow: &T::Shadow) -> T::Tangent {
            T::shadow_to_tangent(shadow)
        }
        fn reset_shadow(&self, shadow: &mut T::Shadow) -> Result<(), ShapeMismatch> {
            (**self).reset_shadow(shadow)
        }
        fn shadow_into_tangent(shadow: &T::Shadow, out: &mut T::Tangent) {
            T::shadow_into_tangent(shadow, out)
        }
        fn take_shadow_into_tangent(shadow: &T::Shadow, out: &mut T::Tangent) {
            T::take_shadow_into_tangent(shadow, out)
        }
        #[inline(always)]
        fn tangent_ref(tangent: &T::Tangent) -> &T::TangentRef {
            T::tangent_ref(tangent)
        }
        #[inline(always)]
        fn tangent_mut(tangent: &mut T::Tangent) -> &mut T::TangentRef {
            T::tangent_mut(tangent)
        }
        fn inner_difference(tangent: &T::Tangent, a: &Self, b: &Self) -> f64 {
            T::inner_difference(tangent, a, b)
        }
        fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
            (**self).approx_eq(other, rtol, atol)
        }
    };
}

/// A shared reference cannot be written through, so its handle is the reference itself and
/// perturbing it is a no-op: finite differences perturb the referent, which the test utility
/// owns. A reference *inside* a value the test utility owns (`Option<&[f64]>`, a field
/// `x: &'a [f64]`) points at memory it does not own and cannot perturb: its random tangent is
/// zero, so that the rule test holds what it points at constant in both modes.
impl<'a, T: Primal + ?Sized> Primal for &'a T {
    reference_common!();
    type Handle = &'a T;

    fn random_tangent(&self, _: &mut TestRng) -> T::Tangent {
        (**self).zero_tangent()
    }

    fn to_handle(&self) -> &'a T {
        self
    }
    fn load_handle(&mut self, handle: &&'a T) {
        *self = handle;
    }
    fn perturb(&mut self, _: &T::Tangent, _: f64) {}
}

impl<T: Primal + ?Sized> Primal for &mut T {
    reference_common!();
    type Handle = T::Handle;

    fn random_tangent(&self, rng: &mut TestRng) -> T::Tangent {
        (**self).random_tangent(rng)
    }

    fn to_handle(&self) -> T::Handle {
        (**self).to_handle()
    }
    fn load_handle(&mut self, handle: &T::Handle) {
        (**self).load_handle(handle)
    }
    fn reset_handle(&self, handle: &mut T::Handle) -> Result<(), ShapeMismatch> {
        (**self).reset_handle(handle)
    }
    fn perturb(&mut self, tangent: &T::Tangent, h: f64) {
        (**self).perturb(tangent, h)
    }
}

impl<'a, T: Primal + ?Sized> crate::tangent::FromHandle for &'a T {
    #[inline(always)]
    fn from_handle(handle: &&'a T) -> &'a T {
        handle
    }
}
