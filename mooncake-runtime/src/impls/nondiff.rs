//! Non-differentiable data: integers, `bool`, `char`, `()`, `String`, `str`. Tangent
//! `NoTangent`, fdata `NoFData`, rdata `NoRData`, at no run-time cost.

use crate::dual::{NoFData, NoRData, NoTangent};
use crate::rng::TestRng;
use crate::shared::{SharedCell, SharedRef};
use crate::tangent::Primal;

macro_rules! nondiff_common {
    () => {
        type Tangent = NoTangent;
        type TangentRef = NoTangent;
        type FData = NoFData;
        type RData = NoRData;
        type Shadow = NoFData;

        #[inline(always)]
        fn zero_tangent(&self) -> NoTangent {
            NoTangent
        }
        #[inline(always)]
        fn random_tangent(&self, _: &mut TestRng) -> NoTangent {
            NoTangent
        }
        #[inline(always)]
        fn zero_fdata(&self) -> NoFData {
            NoFData
        }
        #[inline(always)]
        fn zero_rdata(&self) -> NoRData {
            NoRData
        }
        #[inline(always)]
        fn zero_shadow(&self) -> NoFData {
            NoFData
        }
        #[inline(always)]
        fn split_tangent(_: NoTangent) -> (NoFData, NoRData) {
            (NoFData, NoRData)
        }
        #[inline(always)]
        fn join_tangent(_: &NoFData, _: NoRData) -> NoTangent {
            NoTangent
        }
        #[inline(always)]
        fn tangent_to_shadow(_: NoTangent) -> NoFData {
            NoFData
        }
        #[inline(always)]
        fn shadow_to_tangent(_: &NoFData) -> NoTangent {
            NoTangent
        }
        #[inline(always)]
        fn tangent_ref(tangent: &NoTangent) -> &NoTangent {
            tangent
        }
        #[inline(always)]
        fn tangent_mut(tangent: &mut NoTangent) -> &mut NoTangent {
            tangent
        }
        #[inline(always)]
        fn perturb(&mut self, _: &NoTangent, _: f64) {}
        #[inline(always)]
        fn inner_difference(_: &NoTangent, _: &Self, _: &Self) -> f64 {
            0.0
        }
    };
}

macro_rules! nondiff_copy {
    ($($t:ty),*) => {$(
        impl Primal for $t {
            nondiff_common!();
            type Handle = SharedCell<$t>;
            #[inline(always)]
            fn add_rdata_to_shadow(&self, _: &NoFData, _: NoRData) {}
            #[inline(always)]
            fn add_cotangent_to_shadow(_: &NoFData, _: &NoFData, _: NoRData) {}
            #[inline(always)]
            fn move_cotangent_to_shadow(_: &NoFData, _: &NoFData, _: NoRData) {}
            fn to_handle(&self) -> SharedCell<$t> {
                SharedCell::new(*self)
            }
            fn load_handle(&mut self, handle: &SharedCell<$t>) {
                *self = handle.get();
            }
            fn approx_eq(&self, other: &Self, _: f64, _: f64) -> bool {
                self == other
            }
        }
    )*};
}

nondiff_copy!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool, char, ());

macro_rules! from_cell {
    ($($t:ty),*) => {$(
        impl crate::tangent::FromHandle for $t {
            #[inline(always)]
            fn from_handle(handle: &SharedCell<$t>) -> $t {
                handle.get()
            }
        }
    )*};
}

from_cell!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool, char, ());

// The result of comparing two numbers (`a.total_cmp(&b)`, `a.partial_cmp(&b)`).
nondiff_copy!(std::cmp::Ordering);
from_cell!(std::cmp::Ordering);

// The gradient `value_and_gradient!` gives an integer or a `Const(..)` argument, which a
// `#[differentiable]` function that computes a gradient inside holds as a value.
nondiff_copy!(crate::dual::NoTangent);
from_cell!(crate::dual::NoTangent);

// ndarray's axis index (`a.sum_axis(Axis(0))`): an integer.
#[cfg(feature = "ndarray")]
nondiff_copy!(ndarray::Axis);
#[cfg(feature = "ndarray")]
from_cell!(ndarray::Axis);

impl crate::tangent::FromHandle for String {
    fn from_handle(handle: &SharedRef<String>) -> String {
        handle.with(String::clone)
    }
}

impl Primal for String {
    nondiff_common!();
    type Handle = SharedRef<String>;
    fn to_handle(&self) -> SharedRef<String> {
        SharedRef::new(self.clone())
    }
    fn load_handle(&mut self, handle: &SharedRef<String>) {
        handle.with(|s| self.clone_from(s));
    }
    fn approx_eq(&self, other: &Self, _: f64, _: f64) -> bool {
        self == other
    }
}

/// `str` is unsized and cannot change length in place. A `&mut str` argument is seen through a
/// handle holding a copy; mutating it is not supported, and [`Primal::load_handle`] says so.
impl Primal for str {
    nondiff_common!();
    type Handle = SharedRef<String>;
    fn to_handle(&self) -> SharedRef<String> {
        SharedRef::new(self.to_owned())
    }
    fn load_handle(&mut self, handle: &SharedRef<String>) {
        handle.with(|s| {
            assert!(
                s.as_str() == &*self,
                "mooncake: mutating a `&mut str` argument is not supported; pass `&mut String`"
            )
        })
    }
    fn approx_eq(&self, other: &Self, _: f64, _: f64) -> bool {
        self == other
    }
}

/// The kind of an `Option` or `Result` (which variant types it has), with no value: what
/// `map` needs to put its result back together (see [`crate::enums::TryMap`]).
impl<S: 'static> Primal for crate::enums::Kind<S> {
    nondiff_common!();
    type Handle = SharedCell<()>;
    fn to_handle(&self) -> SharedCell<()> {
        SharedCell::new(())
    }
    fn load_handle(&mut self, _: &SharedCell<()>) {}
    fn approx_eq(&self, _: &Self, _: f64, _: f64) -> bool {
        true
    }
}

/// The forward rule given to `map` of a matrix or array in derived code
/// ([`crate::elementwise::ElementMap`]): a constant of the call, with no derivative of its own.
impl<G: Copy + 'static> Primal for crate::elementwise::ElementMap<G> {
    nondiff_common!();
    type Handle = SharedCell<Self>;
    fn to_handle(&self) -> SharedCell<Self> {
        SharedCell::new(*self)
    }
    fn load_handle(&mut self, handle: &SharedCell<Self>) {
        *self = handle.get();
    }
    fn approx_eq(&self, _: &Self, _: f64, _: f64) -> bool {
        true
    }
}
