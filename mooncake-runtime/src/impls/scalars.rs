//! `f32` and `f64`: value-identified; tangent and rdata are the float itself, fdata is
//! `NoFData`.

use crate::dual::NoFData;
use crate::rng::TestRng;
use crate::shared::SharedCell;
use crate::tangent::{Primal, TangentSpace, close};

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

            crate::tangent::value_identified_methods!(0.0);
            fn random_tangent(&self, rng: &mut TestRng) -> $t {
                rng.normal() as $t
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
