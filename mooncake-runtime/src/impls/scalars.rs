//! `f32` and `f64`: value-identified; tangent and rdata are the float itself, fdata is
//! `NoFData`.

use crate::dual::NoFData;
use crate::rng::TestRng;
use crate::shared::SharedCell;
use crate::tangent::{Primal, ShapeMismatch, TangentSpace, close};

macro_rules! float_primal {
    ($t:ty) => {
        impl TangentSpace for $t {
            #[inline(always)]
            fn increment(&mut self, other: &Self) {
                *self += *other;
            }
            #[inline(always)]
            fn inner(&self, other: &Self) -> f64 {
                *self as f64 * *other as f64
            }
            #[inline(always)]
            fn scale(&mut self, a: f64) {
                *self = (*self as f64 * a) as $t;
            }
            #[inline(always)]
            fn settle(&mut self) {
                *self += 0.0;
            }
        }

        impl Primal for $t {
            type Tangent = $t;
            type TangentRef = $t;
            type FData = NoFData;
            type RData = $t;
            type Shadow = SharedCell<$t>;
            type Handle = SharedCell<$t>;

            #[inline(always)]
            fn zero_tangent(&self) -> $t {
                0.0
            }
            fn random_tangent(&self, rng: &mut TestRng) -> $t {
                rng.normal() as $t
            }
            #[inline(always)]
            fn zero_fdata(&self) -> NoFData {
                NoFData
            }
            #[inline(always)]
            fn zero_rdata(&self) -> $t {
                0.0
            }
            fn zero_shadow(&self) -> SharedCell<$t> {
                SharedCell::new(0.0)
            }
            #[inline(always)]
            fn split_tangent(tangent: $t) -> (NoFData, $t) {
                (NoFData, tangent)
            }
            #[inline(always)]
            fn join_tangent(_: &NoFData, rdata: $t) -> $t {
                rdata
            }
            fn tangent_to_shadow(tangent: $t) -> SharedCell<$t> {
                SharedCell::new(tangent)
            }
            fn shadow_to_tangent(shadow: &SharedCell<$t>) -> $t {
                shadow.get()
            }
            #[inline(always)]
            fn tangent_ref(tangent: &$t) -> &$t {
                tangent
            }
            #[inline(always)]
            fn tangent_mut(tangent: &mut $t) -> &mut $t {
                tangent
            }
            fn to_handle(&self) -> SharedCell<$t> {
                SharedCell::new(*self)
            }
            fn load_handle(&mut self, handle: &SharedCell<$t>) {
                *self = handle.get();
            }
            fn reset_shadow(&self, shadow: &mut SharedCell<$t>) -> Result<(), ShapeMismatch> {
                shadow.set(0.0);
                Ok(())
            }
            #[inline(always)]
            fn add_rdata_to_shadow(&self, shadow: &SharedCell<$t>, r: $t) {
                shadow.add(r);
            }
            fn reset_handle(&self, handle: &mut SharedCell<$t>) -> Result<(), ShapeMismatch> {
                handle.set(*self);
                Ok(())
            }
            fn perturb(&mut self, tangent: &$t, h: f64) {
                *self = (*self as f64 + h * *tangent as f64) as $t;
            }
            fn inner_difference(tangent: &$t, a: &$t, b: &$t) -> f64 {
                *tangent as f64 * (*a as f64 - *b as f64)
            }
            fn approx_eq(&self, other: &$t, rtol: f64, atol: f64) -> bool {
                close(*self as f64, *other as f64, rtol, atol)
            }
        }
    };
}

impl crate::tangent::FromHandle for f64 {
    #[inline(always)]
    fn from_handle(handle: &SharedCell<f64>) -> f64 {
        handle.get()
    }
}

impl crate::tangent::FromHandle for f32 {
    #[inline(always)]
    fn from_handle(handle: &SharedCell<f32>) -> f32 {
        handle.get()
    }
}

float_primal!(f64);
float_primal!(f32);
