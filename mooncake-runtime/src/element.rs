//! [`Element`]: what a buffer the primitive rules read and write may hold. A float, whose
//! tangent (and rdata) is itself, or a non-differentiable scalar (an integer, `bool`, `char`),
//! whose tangent is [`NoTangent`] and rdata [`NoRData`]: so `vec![0usize; n]`, an index table
//! `&[usize]` or a mask `&[bool]` go through the same rules as a `Vec<f64>`, and their shadows
//! (of the zero-sized `NoTangent`) hold no memory and every addition into them is a no-op.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::rules::buffer::index_rrule;
//!
//! // Reading an index table: the element's rdata is `NoRData`, its shadow holds nothing.
//! let idx = vec![2_usize, 0, 1];
//! let shadow = SharedVec::from_vec(vec![NoTangent; 3]);
//! let (y, pullback) = index_rrule(CoDual::new(&idx[..], shadow), CoDual::new(1, NoFData));
//! assert_eq!(y.primal, 0);
//! let (NoRData, NoRData) = pullback(NoRData);
//! ```

use crate::dual::{NoFData, NoRData, NoTangent};
use crate::tangent::Primal;

/// A buffer element the primitive rules handle: `f32`, `f64`, the integers, `bool` and
/// `char`. Its tangent is a `Copy` value (itself for a float, [`NoTangent`] otherwise), so a
/// buffer's shadow is a `SharedVec<Self::Tangent>`, and the rules convert between the tangent
/// an element has in a shadow and the rdata a pullback returns for it.
#[diagnostic::on_unimplemented(
    message = "a flat buffer in #[differentiable] code holds numbers (`f64`, `f32`, integers, `bool`, `char`), not `{Self}`",
    label = "a buffer of `{Self}`",
    note = "buffers of buffers (`Vec<Vec<f64>>`) and of `#[derive(Tangent)]` structs are read by index and by rows; for other element types (`Option<f64>`, enums), keep the values in separate buffers or in fields of a struct"
)]
pub trait Element:
    Primal<FData = NoFData, Tangent: Copy + 'static> + Copy + PartialOrd + 'static
{
    /// The zero tangent.
    const ZERO_TANGENT: Self::Tangent;
    /// `*d += r`: an element's rdata added into its place in a shadow.
    fn add_rdata(d: &mut Self::Tangent, r: Self::RData);
    /// The rdata of an element whose tangent (in a shadow) is `d`.
    fn tangent_rdata(d: Self::Tangent) -> Self::RData;
    /// The sum of a shadow's tangents, as rdata (the adjoint of a value copied into every
    /// element: `vec![x; n]`, `fill`).
    fn sum_rdata(d: &[Self::Tangent]) -> Self::RData;
}

/// An element whose buffers can be summed (`x.iter().sum()`): a float (tangents summed too) or
/// an integer (no tangent).
pub trait SumElement: Element {
    /// The sum of the elements, as `Iterator::sum` adds them.
    fn sum(x: &[Self]) -> Self;
    /// The sum of their tangents.
    fn sum_tangents(t: &[Self::Tangent]) -> Self::Tangent;
}

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl SumElement for $t {
            #[inline(always)]
            fn sum(x: &[$t]) -> $t {
                x.iter().sum()
            }
            #[inline(always)]
            fn sum_tangents(t: &[$t]) -> $t {
                t.iter().sum()
            }
        }

        impl Element for $t {
            const ZERO_TANGENT: $t = 0.0;
            #[inline(always)]
            fn add_rdata(d: &mut $t, r: $t) {
                *d += r;
            }
            #[inline(always)]
            fn tangent_rdata(d: $t) -> $t {
                d
            }
            #[inline(always)]
            fn sum_rdata(d: &[$t]) -> $t {
                // The order and neutral element (`-0.0`) of `Iterator::sum`.
                d.iter().fold(-0.0, |acc, &x| acc + x)
            }
        }
    )*};
}

float_element!(f32, f64);

macro_rules! nondiff_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const ZERO_TANGENT: NoTangent = NoTangent;
            #[inline(always)]
            fn add_rdata(_: &mut NoTangent, _: NoRData) {}
            #[inline(always)]
            fn tangent_rdata(_: NoTangent) -> NoRData {
                NoRData
            }
            #[inline(always)]
            fn sum_rdata(_: &[NoTangent]) -> NoRData {
                NoRData
            }
        }
    )*};
}

nondiff_element!(usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, bool, char);

macro_rules! integer_sum {
    ($($t:ty),*) => {$(
        impl SumElement for $t {
            #[inline(always)]
            fn sum(x: &[$t]) -> $t {
                x.iter().sum()
            }
            #[inline(always)]
            fn sum_tangents(_: &[NoTangent]) -> NoTangent {
                NoTangent
            }
        }
    )*};
}

integer_sum!(usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);

/// An element tangent held in a shadow, and the rdata added into it: `f64` and `f32` (rdata
/// itself), [`NoTangent`] (rdata [`NoRData`], and nothing to do). Lets derived code add a load's
/// adjoint into a shadow whose element type it does not know.
pub trait AddRData<R>: Copy {
    /// `*self += r`.
    fn add_rdata(&mut self, r: R);
    /// `*self = r`, where `*self` is zero: the same as [`AddRData::add_rdata`] then, without
    /// reading `*self` (what an add into memory known to be zero does).
    #[inline(always)]
    fn set_rdata(&mut self, r: R) {
        self.add_rdata(r);
    }
}

/// An array's elements, one by one (the shadow of a buffer of arrays, `&[[f64; 3]]`, whose row
/// was loaded whole and passed on by value).
impl<R, T: AddRData<R>, const N: usize> AddRData<[R; N]> for [T; N] {
    #[inline(always)]
    fn add_rdata(&mut self, r: [R; N]) {
        for (t, r) in self.iter_mut().zip(r) {
            t.add_rdata(r);
        }
    }
}

/// A tuple's parts, one by one (an array of pairs, `[(f64, f64); N]`, returned or passed on).
macro_rules! tuple_add_rdata {
    ($(($($T:ident $R:ident $i:tt),+))*) => {$(
        impl<$($R, $T: AddRData<$R>),+> AddRData<($($R,)+)> for ($($T,)+) {
            #[inline(always)]
            fn add_rdata(&mut self, r: ($($R,)+)) {
                $( self.$i.add_rdata(r.$i); )+
            }
        }
    )*};
}

tuple_add_rdata! {
    (A RA 0, B RB 1)
    (A RA 0, B RB 1, C RC 2)
    (A RA 0, B RB 1, C RC 2, D RD 3)
}

impl AddRData<f64> for f64 {
    #[inline(always)]
    fn add_rdata(&mut self, r: f64) {
        *self += r;
    }
    #[inline(always)]
    fn set_rdata(&mut self, r: f64) {
        *self = r;
    }
}

impl AddRData<f32> for f32 {
    #[inline(always)]
    fn add_rdata(&mut self, r: f32) {
        *self += r;
    }
    #[inline(always)]
    fn set_rdata(&mut self, r: f32) {
        *self = r;
    }
}

impl AddRData<NoRData> for NoTangent {
    #[inline(always)]
    fn add_rdata(&mut self, _: NoRData) {}
}
