//! [`Float`]: the two IEEE float types, `f32` and `f64`, behind one trait so that each primitive
//! rule is written once; and the dual numbers over them, [`Fwd<T>`](crate::fwd::Fwd), so that
//! a derived reverse rule of a generic function can run in forward mode (`hvp!`).

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, Sub, SubAssign};

pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

macro_rules! float_methods {
    ($( $(#[$doc:meta])* fn $name:ident(self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*) => {
        /// An IEEE float, `f32` or `f64`, or a dual number over one ([`Fwd<T>`](crate::fwd::Fwd),
        /// which differentiates every method). Sealed: the primitive rules are written once
        /// against it.
        pub trait Float:
            'static
            + sealed::Sealed
            + crate::tangent::Primal<
                Tangent = Self,
                RData = Self,
                FData = crate::dual::NoFData,
                Shadow = crate::shared::SharedCell<Self>,
            >
            + crate::tangent::TangentSpace
            + crate::tangent::ZeroRData
            + crate::element::SumElement
            + crate::element::AddRData<Self>
            + Copy
            + Debug
            + Display
            + Default
            + PartialEq
            + PartialOrd
            + Add<Output = Self>
            + Sub<Output = Self>
            + Mul<Output = Self>
            + Div<Output = Self>
            + Rem<Output = Self>
            + Neg<Output = Self>
            + AddAssign
            + SubAssign
            + MulAssign
            + DivAssign
            + std::iter::Sum
            + for<'a> std::iter::Sum<&'a Self>
            + Send
            + Sync
            + 'static
        {
            /// Zero.
            const ZERO: Self;
            /// One.
            const ONE: Self;
            /// Two.
            const TWO: Self;
            /// The type's machine epsilon.
            const EPSILON: Self;
            /// `ln(2)`.
            const LN_2: Self;
            /// `ln(10)`.
            const LN_10: Self;
            /// `pi / 180`, the derivative of `to_radians`.
            const DEG_TO_RAD: Self;
            /// `180 / pi`, the derivative of `to_degrees`.
            const RAD_TO_DEG: Self;
            /// The type's name, `"f32"` or `"f64"` (`"Fwd"` for a dual number).
            const NAME: &'static str;
            /// Converts from `f64` (rounding for `f32`).
            fn from_f64(x: f64) -> Self;
            /// Converts to `f64` (exactly; a dual number's real part).
            fn to_f64(self) -> f64;
            /// Converts from `i32`.
            fn from_i32(x: i32) -> Self;
            /// One, as generic code written against `num_traits` spells it (`T::one()`; zero
            /// is `T::zero()`, from [`ZeroRData`](crate::tangent::ZeroRData)).
            #[inline(always)]
            fn one() -> Self {
                Self::ONE
            }
            /// `self * t`, but exactly zero where `t` is zero, also where `self` is infinite or
            /// NaN: how the guarded rules apply a derivative (`rules::scalar::guarded_scale`).
            /// Componentwise for a dual number, so that a zero part of `t` stays zero.
            ///
            /// ```
            /// use mooncake_runtime::prelude::*;
            ///
            /// assert_eq!(f64::INFINITY.mul_guarded(0.0), 0.0);
            /// assert_eq!(3.0_f64.mul_guarded(2.0), 6.0);
            /// // (3 + ε)(0 + 2ε) = 0 + 6ε: the zero real part of `t` stays zero, its dual part not.
            /// let p = Fwd::new(3.0_f64, 1.0).mul_guarded(Fwd::new(0.0, 2.0));
            /// assert_eq!((p.re, p.eps), (0.0, 6.0));
            /// ```
            fn mul_guarded(self, t: Self) -> Self;
            $( $(#[$doc])* fn $name(self $(, $arg: $ty)*) -> $ret; )*
        }

        macro_rules! impl_float {
            ($t:ident, $name_str:literal) => {
                impl Float for $t {
                    const ZERO: Self = 0.0;
                    const ONE: Self = 1.0;
                    const TWO: Self = 2.0;
                    const EPSILON: Self = $t::EPSILON;
                    const LN_2: Self = std::$t::consts::LN_2;
                    const LN_10: Self = std::$t::consts::LN_10;
                    const DEG_TO_RAD: Self = std::$t::consts::PI / 180.0;
                    const RAD_TO_DEG: Self = 180.0 / std::$t::consts::PI;
                    const NAME: &'static str = $name_str;
                    #[inline(always)]
                    fn from_f64(x: f64) -> Self { x as $t }
                    #[inline(always)]
                    fn to_f64(self) -> f64 { self as f64 }
                    #[inline(always)]
                    fn from_i32(x: i32) -> Self { x as $t }
                    #[inline(always)]
                    fn mul_guarded(self, t: Self) -> Self { if t == 0.0 { 0.0 } else { self * t } }
                    $( #[inline(always)] fn $name(self $(, $arg: $ty)*) -> $ret { $t::$name(self $(, $arg)*) } )*
                }
            };
        }
        impl_float!(f32, "f32");
        impl_float!(f64, "f64");
    };
}

float_methods! {
    /// `sin`.
    fn sin(self) -> Self;
    /// `cos`.
    fn cos(self) -> Self;
    /// `tan`.
    fn tan(self) -> Self;
    /// `asin`.
    fn asin(self) -> Self;
    /// `acos`.
    fn acos(self) -> Self;
    /// `atan`.
    fn atan(self) -> Self;
    /// `atan2`.
    fn atan2(self, other: Self) -> Self;
    /// `sinh`.
    fn sinh(self) -> Self;
    /// `cosh`.
    fn cosh(self) -> Self;
    /// `tanh`.
    fn tanh(self) -> Self;
    /// `asinh`.
    fn asinh(self) -> Self;
    /// `acosh`.
    fn acosh(self) -> Self;
    /// `atanh`.
    fn atanh(self) -> Self;
    /// `exp`.
    fn exp(self) -> Self;
    /// `exp2`.
    fn exp2(self) -> Self;
    /// `exp_m1`.
    fn exp_m1(self) -> Self;
    /// `ln`.
    fn ln(self) -> Self;
    /// `ln_1p`.
    fn ln_1p(self) -> Self;
    /// `log`.
    fn log(self, base: Self) -> Self;
    /// `log2`.
    fn log2(self) -> Self;
    /// `log10`.
    fn log10(self) -> Self;
    /// `sqrt`.
    fn sqrt(self) -> Self;
    /// `cbrt`.
    fn cbrt(self) -> Self;
    /// `powi`.
    fn powi(self, n: i32) -> Self;
    /// `powf`.
    fn powf(self, n: Self) -> Self;
    /// `hypot`.
    fn hypot(self, other: Self) -> Self;
    /// `rem_euclid`.
    fn rem_euclid(self, rhs: Self) -> Self;
    /// `copysign`.
    fn copysign(self, sign: Self) -> Self;
    /// `abs`.
    fn abs(self) -> Self;
    /// `signum`.
    fn signum(self) -> Self;
    /// `mul_add`.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `recip`.
    fn recip(self) -> Self;
    /// `min`.
    fn min(self, other: Self) -> Self;
    /// `max`.
    fn max(self, other: Self) -> Self;
    /// `clamp`.
    fn clamp(self, lo: Self, hi: Self) -> Self;
    /// `to_degrees`.
    fn to_degrees(self) -> Self;
    /// `to_radians`.
    fn to_radians(self) -> Self;
    /// `floor`.
    fn floor(self) -> Self;
    /// `ceil`.
    fn ceil(self) -> Self;
    /// `round`.
    fn round(self) -> Self;
    /// `trunc`.
    fn trunc(self) -> Self;
    /// `fract`.
    fn fract(self) -> Self;
    /// `is_finite`.
    fn is_finite(self) -> bool;
    /// `is_nan`.
    fn is_nan(self) -> bool;
    /// `is_infinite`.
    fn is_infinite(self) -> bool;
    /// `is_sign_positive`.
    fn is_sign_positive(self) -> bool;
    /// `is_sign_negative`.
    fn is_sign_negative(self) -> bool;
}
