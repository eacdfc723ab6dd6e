//! [`Fwd`]: a scalar dual number `re + eps·ε` (`ε² = 0`) that is itself a [`Float`], so that a
//! derived reverse rule of a function generic over `T: Float` can be run at `T = Fwd<f64>`:
//! forward mode over reverse mode, which is how [`hvp!`](crate::hvp) computes Hessian-vector
//! products (see `ARCHITECTURE.md`, "Hessians").
//!
//! Every method propagates the derivative exactly: `x.sin()` is `sin(re) + cos(re)·eps·ε`.
//! Comparisons (`==`, `<`, ..) compare the real parts only, so a branch takes the same arm as
//! the primal at the same real values; the piecewise functions (`abs`, `min`, `max`, `clamp`,
//! `signum`, `floor`, ..) differentiate the piece the real part lies on, with the conventions of
//! the scalar rules (`mooncake_runtime::rules::scalar`) at the kinks.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! // d/dx (x² sin x) at x = 1.5, by carrying the tangent 1 along:
//! let x = Fwd::new(1.5_f64, 1.0);
//! let y = x * x * x.sin();
//! assert_eq!(y.re, 1.5_f64 * 1.5 * 1.5_f64.sin());
//! assert!((y.eps - (2.0 * 1.5 * 1.5_f64.sin() + 1.5 * 1.5 * 1.5_f64.cos())).abs() < 1e-12);
//! ```

use crate::dual::NoFData;
use crate::element::{AddRData, Element, SumElement};
use crate::float::Float;
use crate::rng::TestRng;
use crate::shared::SharedCell;
use crate::tangent::{FromHandle, Primal, TangentSpace, ZeroRData};
use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, Sub, SubAssign};

/// A dual number `re + eps·ε` with `ε² = 0`: the value `re` and its derivative `eps` along one
/// direction. A [`Float`] for every `T: Float` (so `Fwd<Fwd<f64>>` is one too), which lets any
/// `#[differentiable]` function generic over `T: Float`, and its derived rules, run on it.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// // A generic function and its derivative at x = 2 along 1:
/// fn f<T: Float>(x: T) -> T {
///     x.powi(3) + x.exp()
/// }
/// let y = f(Fwd::new(2.0_f64, 1.0));
/// assert_eq!(y.re, 8.0 + 2.0_f64.exp());
/// assert!((y.eps - (12.0 + 2.0_f64.exp())).abs() < 1e-12);
/// // A constant has a zero derivative; comparisons look at the value only.
/// assert_eq!(Fwd::<f64>::from_f64(3.0).eps, 0.0);
/// assert!(Fwd::new(1.0, 5.0) == Fwd::new(1.0, -5.0));
/// assert_eq!(format!("{}", Fwd::new(1.0_f64, 2.0)), "1 + 2ε");
/// ```
#[derive(Clone, Copy, Default)]
pub struct Fwd<T> {
    /// The value.
    pub re: T,
    /// The derivative (the coefficient of `ε`).
    pub eps: T,
}

impl<T> Fwd<T> {
    /// `re + eps·ε`.
    ///
    /// ```
    /// use mooncake_runtime::prelude::*;
    /// let x = Fwd::new(2.0_f64, 1.0);
    /// assert_eq!((x.re, x.eps), (2.0, 1.0));
    /// ```
    #[inline(always)]
    pub const fn new(re: T, eps: T) -> Self {
        Fwd { re, eps }
    }
}

impl<T: Float> Fwd<T> {
    /// A constant: `re + 0·ε`.
    ///
    /// ```
    /// use mooncake_runtime::prelude::*;
    /// assert_eq!(Fwd::constant(2.5_f64).eps, 0.0);
    /// ```
    #[inline(always)]
    pub fn constant(re: T) -> Self {
        Fwd { re, eps: T::ZERO }
    }

    /// `f(re) + d·eps·ε`: a function with value `f` and derivative `d` at `re`.
    #[inline(always)]
    fn chain(self, f: T, d: T) -> Self {
        Fwd { re: f, eps: d * self.eps }
    }

    /// The derivative applied as the guarded rules apply it: exactly zero where `eps` is zero,
    /// also where `d` is infinite or NaN (`sqrt` at `0` of a constant).
    #[inline(always)]
    fn chain_guarded(self, f: T, d: T) -> Self {
        Fwd { re: f, eps: d.mul_guarded(self.eps) }
    }
}

impl<T: fmt::Display> fmt::Display for Fwd<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} + {}ε", self.re, self.eps)
    }
}

impl<T: fmt::Debug> fmt::Debug for Fwd<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fwd").field("re", &self.re).field("eps", &self.eps).finish()
    }
}

impl<T: PartialEq> PartialEq for Fwd<T> {
    /// The real parts are equal.
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.re == other.re
    }
}

impl<T: PartialOrd> PartialOrd for Fwd<T> {
    /// The order of the real parts.
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.re.partial_cmp(&other.re)
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic.

impl<T: Float> Add for Fwd<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Fwd { re: self.re + o.re, eps: self.eps + o.eps }
    }
}

impl<T: Float> Sub for Fwd<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Fwd { re: self.re - o.re, eps: self.eps - o.eps }
    }
}

impl<T: Float> Mul for Fwd<T> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Fwd { re: self.re * o.re, eps: self.eps * o.re + self.re * o.eps }
    }
}

impl<T: Float> Div for Fwd<T> {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let q = self.re / o.re;
        Fwd { re: q, eps: (self.eps - q * o.eps) / o.re }
    }
}

impl<T: Float> Rem for Fwd<T> {
    type Output = Self;
    /// `a % b = a - b·trunc(a / b)`: the derivative `eps_a - trunc(a / b)·eps_b` of the piece
    /// the real parts lie on (the scalar rule's convention).
    #[inline(always)]
    fn rem(self, o: Self) -> Self {
        let r = self.re % o.re;
        let q = ((self.re - r) / o.re).round();
        Fwd { re: r, eps: self.eps - q * o.eps }
    }
}

impl<T: Float> Neg for Fwd<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Fwd { re: -self.re, eps: -self.eps }
    }
}

macro_rules! assign_ops {
    ($($tr:ident $m:ident $op:tt;)*) => {$(
        impl<T: Float> $tr for Fwd<T> {
            #[inline(always)]
            fn $m(&mut self, o: Self) {
                *self = *self $op o;
            }
        }
    )*};
}

assign_ops! {
    AddAssign add_assign +;
    SubAssign sub_assign -;
    MulAssign mul_assign *;
    DivAssign div_assign /;
}

impl<T: Float> std::iter::Sum for Fwd<T> {
    /// The sum from `-0.0`, in order, as `Iterator::sum` adds floats.
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(<Self as ZeroRData>::zero(), |acc, x| acc + x)
    }
}

impl<'a, T: Float> std::iter::Sum<&'a Fwd<T>> for Fwd<T> {
    /// The sum from `-0.0`, in order, as `Iterator::sum` adds floats.
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(<Self as ZeroRData>::zero(), |acc, x| acc + *x)
    }
}

// ---------------------------------------------------------------------------------------------
// The rule system's traits: a `Fwd` is value-identified like `f64`, its tangent and rdata are
// itself, its fdata is `NoFData`.

impl<T: Float> TangentSpace for Fwd<T> {
    #[inline(always)]
    fn increment(&mut self, other: &Self) {
        *self += *other;
    }
    /// The Euclidean inner product of the two components.
    #[inline(always)]
    fn inner(&self, other: &Self) -> f64 {
        self.re.inner(&other.re) + self.eps.inner(&other.eps)
    }
    #[inline(always)]
    fn scale(&mut self, a: f64) {
        self.re.scale(a);
        self.eps.scale(a);
    }
    #[inline(always)]
    fn settle(&mut self) {
        self.re.settle();
        self.eps.settle();
    }
}

impl<T: Float> ZeroRData for Fwd<T> {
    #[inline(always)]
    fn zero() -> Self {
        Fwd { re: <T as ZeroRData>::zero(), eps: <T as ZeroRData>::zero() }
    }
}

impl<T: Float> Primal for Fwd<T> {
    type Tangent = Fwd<T>;
    type TangentRef = Fwd<T>;
    type FData = NoFData;
    type RData = Fwd<T>;
    type Shadow = SharedCell<Fwd<T>>;
    type Handle = SharedCell<Fwd<T>>;

    crate::tangent::value_identified_methods!(Fwd::new(T::ZERO, T::ZERO));
    fn random_tangent(&self, rng: &mut TestRng) -> Self {
        Fwd::new(self.re.random_tangent(rng), self.eps.random_tangent(rng))
    }
    fn perturb(&mut self, tangent: &Self, h: f64) {
        self.re.perturb(&tangent.re, h);
        self.eps.perturb(&tangent.eps, h);
    }
    fn inner_difference(tangent: &Self, a: &Self, b: &Self) -> f64 {
        T::inner_difference(&tangent.re, &a.re, &b.re)
            + T::inner_difference(&tangent.eps, &a.eps, &b.eps)
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.re.approx_eq(&other.re, rtol, atol) && self.eps.approx_eq(&other.eps, rtol, atol)
    }
}

impl<T: Float> FromHandle for Fwd<T> {
    #[inline(always)]
    fn from_handle(handle: &SharedCell<Self>) -> Self {
        handle.get()
    }
}

impl<T: Float> Element for Fwd<T> {
    const ZERO_TANGENT: Self = Fwd::new(T::ZERO, T::ZERO);
    #[inline(always)]
    fn add_rdata(d: &mut Self, r: Self) {
        *d += r;
    }
    #[inline(always)]
    fn tangent_rdata(d: Self) -> Self {
        d
    }
    #[inline(always)]
    fn sum_rdata(d: &[Self]) -> Self {
        d.iter().fold(<Self as ZeroRData>::zero(), |acc, &x| acc + x)
    }
}

impl<T: Float> SumElement for Fwd<T> {
    /// The sum from `-0.0`, in order, as `Iterator::sum` adds floats.
    #[inline(always)]
    fn sum(x: &[Self]) -> Self {
        x.iter().fold(<Self as ZeroRData>::zero(), |acc, &x| acc + x)
    }
    #[inline(always)]
    fn sum_tangents(t: &[Self]) -> Self {
        Self::sum(t)
    }
}

impl<T: Float> AddRData<Fwd<T>> for Fwd<T> {
    #[inline(always)]
    fn add_rdata(&mut self, r: Fwd<T>) {
        *self += r;
    }
}

impl<T: Float> crate::jacobian::FlatTangent for Fwd<T> {
    /// Two components: the value's and the derivative's.
    fn flat_len(&self) -> usize {
        2
    }
    fn extend_flat(&self, out: &mut Vec<f64>) {
        out.push(self.re.to_f64());
        out.push(self.eps.to_f64());
    }
    fn set_flat(&mut self, k: usize, v: f64) -> bool {
        match k {
            0 => self.re = T::from_f64(v),
            1 => self.eps = T::from_f64(v),
            _ => return false,
        }
        true
    }
}

// ---------------------------------------------------------------------------------------------
// `Float`.

impl<T: Float> crate::float::sealed::Sealed for Fwd<T> {}

impl<T: Float> Float for Fwd<T> {
    const ZERO: Self = Fwd::new(T::ZERO, T::ZERO);
    const ONE: Self = Fwd::new(T::ONE, T::ZERO);
    const TWO: Self = Fwd::new(T::TWO, T::ZERO);
    const EPSILON: Self = Fwd::new(T::EPSILON, T::ZERO);
    const LN_2: Self = Fwd::new(T::LN_2, T::ZERO);
    const LN_10: Self = Fwd::new(T::LN_10, T::ZERO);
    const DEG_TO_RAD: Self = Fwd::new(T::DEG_TO_RAD, T::ZERO);
    const RAD_TO_DEG: Self = Fwd::new(T::RAD_TO_DEG, T::ZERO);
    const NAME: &'static str = "Fwd";

    /// A constant (zero derivative).
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Fwd::constant(T::from_f64(x))
    }
    /// The real part (the derivative is dropped).
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.re.to_f64()
    }
    #[inline(always)]
    fn from_i32(x: i32) -> Self {
        Fwd::constant(T::from_i32(x))
    }
    /// Componentwise, so that a zero part of `t` stays exactly zero.
    #[inline(always)]
    fn mul_guarded(self, t: Self) -> Self {
        Fwd {
            re: self.re.mul_guarded(t.re),
            eps: self.re.mul_guarded(t.eps) + self.eps.mul_guarded(t.re),
        }
    }

    #[inline(always)]
    fn sin(self) -> Self {
        let (s, c) = (self.re.sin(), self.re.cos());
        self.chain(s, c)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        let (s, c) = (self.re.sin(), self.re.cos());
        self.chain(c, -s)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        let t = self.re.tan();
        self.chain(t, T::ONE + t * t)
    }
    #[inline(always)]
    fn asin(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.asin(), ((T::ONE - x) * (T::ONE + x)).sqrt().recip())
    }
    #[inline(always)]
    fn acos(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.acos(), -((T::ONE - x) * (T::ONE + x)).sqrt().recip())
    }
    #[inline(always)]
    fn atan(self) -> Self {
        let x = self.re;
        self.chain(x.atan(), (T::ONE + x * x).recip())
    }
    /// `atan2(a, b)`: `(b·eps_a - a·eps_b) / (a² + b²)`; at `(0, 0)` NaN unless both
    /// derivatives are zero (as the scalar rule).
    #[inline(always)]
    fn atan2(self, other: Self) -> Self {
        let (a, b) = (self.re, other.re);
        let r = a.hypot(b);
        let (da, db) = (b / r / r, -a / r / r);
        Fwd { re: a.atan2(b), eps: da.mul_guarded(self.eps) + db.mul_guarded(other.eps) }
    }
    #[inline(always)]
    fn sinh(self) -> Self {
        self.chain(self.re.sinh(), self.re.cosh())
    }
    #[inline(always)]
    fn cosh(self) -> Self {
        self.chain(self.re.cosh(), self.re.sinh())
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        let t = self.re.tanh();
        self.chain(t, (T::ONE - t) * (T::ONE + t))
    }
    #[inline(always)]
    fn asinh(self) -> Self {
        let x = self.re;
        self.chain(x.asinh(), x.hypot(T::ONE).recip())
    }
    #[inline(always)]
    fn acosh(self) -> Self {
        let x = self.re;
        self.chain_guarded(x.acosh(), ((x - T::ONE).sqrt() * (x + T::ONE).sqrt()).recip())
    }
    #[inline(always)]
    fn atanh(self) -> Self {
        let x = self.re;
        self.chain(x.atanh(), ((T::ONE - x) * (T::ONE + x)).recip())
    }
    #[inline(always)]
    fn exp(self) -> Self {
        let e = self.re.exp();
        self.chain(e, e)
    }
    #[inline(always)]
    fn exp2(self) -> Self {
        let e = self.re.exp2();
        self.chain(e, e * T::LN_2)
    }
    #[inline(always)]
    fn exp_m1(self) -> Self {
        self.chain(self.re.exp_m1(), self.re.exp())
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.chain(self.re.ln(), self.re.recip())
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        self.chain(self.re.ln_1p(), (T::ONE + self.re).recip())
    }
    /// `log_b(x) = ln x / ln b`: `eps_x / (x ln b) - log_b(x)·eps_b / (b ln b)`.
    #[inline(always)]
    fn log(self, base: Self) -> Self {
        let (x, b) = (self.re, base.re);
        let y = x.log(b);
        let lb = b.ln();
        Fwd { re: y, eps: self.eps / (x * lb) - y * base.eps / (b * lb) }
    }
    #[inline(always)]
    fn log2(self) -> Self {
        self.chain(self.re.log2(), (self.re * T::LN_2).recip())
    }
    #[inline(always)]
    fn log10(self) -> Self {
        self.chain(self.re.log10(), (self.re * T::LN_10).recip())
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = self.re.sqrt();
        self.chain_guarded(s, (T::TWO * s).recip())
    }
    #[inline(always)]
    fn cbrt(self) -> Self {
        let c = self.re.cbrt();
        self.chain_guarded(c, (T::from_i32(3) * c * c).recip())
    }
    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        let d = match n {
            0 => T::ZERO,
            _ => T::from_i32(n) * self.re.powi(n - 1),
        };
        self.chain(self.re.powi(n), d)
    }
    /// `x^p`: `p x^(p-1)·eps_x + x^p ln|x|·eps_p`, with the scalar rule's choices: the first
    /// term is zero for `p == 0`, the second for `x == 0`, and each is exactly zero where its
    /// `eps` is.
    #[inline(always)]
    fn powf(self, p: Self) -> Self {
        let (x, q) = (self.re, p.re);
        let y = x.powf(q);
        let dx = if q == T::ZERO { T::ZERO } else { q * x.powf(q - T::ONE) };
        let dp = if x == T::ZERO { T::ZERO } else { y * x.abs().ln() };
        Fwd { re: y, eps: dx.mul_guarded(self.eps) + dp.mul_guarded(p.eps) }
    }
    /// `(a·eps_a + b·eps_b) / hypot(a, b)`; zero at `(0, 0)` (the scalar rule's choice).
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        let (a, b) = (self.re, other.re);
        let h = a.hypot(b);
        let r = if h == T::ZERO { T::ONE } else { h };
        Fwd { re: h, eps: (a * self.eps + b * other.eps) / r }
    }
    /// `a - b q` with `q` the Euclidean quotient, piecewise constant: `eps_a - q eps_b`.
    #[inline(always)]
    fn rem_euclid(self, rhs: Self) -> Self {
        let y = self.re.rem_euclid(rhs.re);
        let q = ((self.re - y) / rhs.re).round();
        Fwd { re: y, eps: self.eps - q * rhs.eps }
    }
    /// `|a| sgn(b)`: `sgn(a) sgn(b) eps_a`, `0` at `a = ±0`.
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        let y = self.re.copysign(sign.re);
        let d = if self.re == T::ZERO { T::ZERO } else { self.re.signum() * y.signum() };
        Fwd { re: y, eps: d * self.eps }
    }
    /// `±eps` on either side of zero, `0` at `±0` (the scalar rule's choice).
    #[inline(always)]
    fn abs(self) -> Self {
        let x = self.re;
        let d = if x > T::ZERO {
            T::ONE
        } else if x < T::ZERO {
            -T::ONE
        } else if x.is_nan() {
            x
        } else {
            T::ZERO
        };
        self.chain(x.abs(), d)
    }
    /// Piecewise constant: zero derivative.
    #[inline(always)]
    fn signum(self) -> Self {
        Fwd::constant(self.re.signum())
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Fwd { re: self.re.mul_add(a.re, b.re), eps: self.eps * a.re + self.re * a.eps + b.eps }
    }
    #[inline(always)]
    fn recip(self) -> Self {
        let r = self.re.recip();
        self.chain(r, -r * r)
    }
    /// The argument with the smaller real part (the first at a tie, the other if one is NaN),
    /// derivative included.
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        if self.re <= other.re || other.re.is_nan() { self } else { other }
    }
    /// The argument with the larger real part (the first at a tie, the other if one is NaN),
    /// derivative included.
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        if self.re >= other.re || other.re.is_nan() { self } else { other }
    }
    /// `self` between the bounds (its derivative also at a bound), else the bound.
    ///
    /// # Panics
    /// As `f64::clamp`, if `lo > hi` or either is NaN.
    #[inline(always)]
    fn clamp(self, lo: Self, hi: Self) -> Self {
        let re = self.re.clamp(lo.re, hi.re);
        if self.re < lo.re {
            lo
        } else if self.re > hi.re {
            hi
        } else {
            Fwd { re, eps: self.eps }
        }
    }
    #[inline(always)]
    fn to_degrees(self) -> Self {
        Fwd { re: self.re.to_degrees(), eps: self.eps * T::RAD_TO_DEG }
    }
    #[inline(always)]
    fn to_radians(self) -> Self {
        Fwd { re: self.re.to_radians(), eps: self.eps * T::DEG_TO_RAD }
    }
    /// Zero derivative.
    #[inline(always)]
    fn floor(self) -> Self {
        Fwd::constant(self.re.floor())
    }
    /// Zero derivative.
    #[inline(always)]
    fn ceil(self) -> Self {
        Fwd::constant(self.re.ceil())
    }
    /// Zero derivative.
    #[inline(always)]
    fn round(self) -> Self {
        Fwd::constant(self.re.round())
    }
    /// Zero derivative.
    #[inline(always)]
    fn trunc(self) -> Self {
        Fwd::constant(self.re.trunc())
    }
    /// `x - trunc(x)`: derivative one.
    #[inline(always)]
    fn fract(self) -> Self {
        Fwd { re: self.re.fract(), eps: self.eps }
    }
    /// Of the real part.
    #[inline(always)]
    fn is_finite(self) -> bool {
        self.re.is_finite()
    }
    /// Of the real part.
    #[inline(always)]
    fn is_nan(self) -> bool {
        self.re.is_nan()
    }
    /// Of the real part.
    #[inline(always)]
    fn is_infinite(self) -> bool {
        self.re.is_infinite()
    }
    /// Of the real part.
    #[inline(always)]
    fn is_sign_positive(self) -> bool {
        self.re.is_sign_positive()
    }
    /// Of the real part.
    #[inline(always)]
    fn is_sign_negative(self) -> bool {
        self.re.is_sign_negative()
    }
}
