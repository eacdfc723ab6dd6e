//! What the batched form of a derived forward rule (`NAME__lanes`, see [`crate::lanes`])
//! calls besides the ordinary forward-mode support, through the dialect
//! [`super::dialect::lanes`]: constants, casts and empty buffers whose tangents carry `N`
//! directions, the operators on duals of a float with [`Lanes`] tangents, the dispatch of method
//! calls ([`LanesMethodFrule`]) and the batched buffer rules. Comparisons go through the ordinary
//! functions, which ignore tangents.

use crate::dual::{Dual, NoTangent};
use crate::element::SumElement;
use crate::float::Float;
use crate::forward::MethodFrule;
use crate::keys::{BufferKey, FloatKey, IntKey, method_key};
use crate::lanes::{Directions, Lanes, LanesPrimal};
use crate::rules::buffer::{ReadBuffer, WriteBuffer};
use crate::rules::scalar;

/// A constant with `N` zero directions.
///
/// ```
/// use mooncake_runtime::forward::lanes::constant;
/// use mooncake_runtime::lanes::Lanes;
/// let c = constant::<f64, 2>(1.5);
/// assert_eq!((c.primal, c.tangent), (1.5, Lanes([0.0, 0.0])));
/// ```
#[inline(always)]
pub fn constant<P: LanesPrimal<N>, const N: usize>(p: P) -> Dual<P, P::Lanes> {
    let t = p.zero_lanes();
    Dual::new(p, t)
}

/// The marker of the number of directions a batched rule carries, passed where a method must
/// know it ([`LanesConstant::constant`]).
#[derive(Clone, Copy, Debug)]
pub struct Chunk<const N: usize>;

/// A constant of a batched rule, of any type: see [`LanesConstant`].
pub struct LanesConst<P>(std::cell::Cell<Option<P>>);

impl<P> LanesConst<P> {
    /// Wraps the constant.
    #[inline(always)]
    pub fn new(p: P) -> Self {
        LanesConst(std::cell::Cell::new(Some(p)))
    }
    #[inline(always)]
    fn take(&self) -> P {
        match self.0.take() {
            Some(p) => p,
            None => unreachable!("mooncake: a constant taken twice"),
        }
    }
}

/// A constant of a type with batched tangents (numbers, buffers and tuples of them) gets zero
/// lanes ([`constant`]); any other (an enum's variant, a string), through
/// [`LanesConstantOther`], its ordinary zero tangent. Generated code calls
/// `(&LanesConst::new(c)).constant(Chunk::<N>)`, so that rustc picks the first that
/// applies (autoref).
pub trait LanesConstant<P: LanesPrimal<N>, const N: usize> {
    /// The constant with zero lanes.
    fn constant(&self, n: Chunk<N>) -> Dual<P, P::Lanes>;
}

impl<P: LanesPrimal<N>, const N: usize> LanesConstant<P, N> for LanesConst<P> {
    #[inline(always)]
    fn constant(&self, _: Chunk<N>) -> Dual<P, P::Lanes> {
        constant::<P, N>(self.take())
    }
}

/// See [`LanesConstant`].
pub trait LanesConstantOther<P: crate::tangent::Primal, const N: usize> {
    /// The constant with its zero tangent.
    fn constant(&self, n: Chunk<N>) -> Dual<P, P::Tangent>;
}

impl<P: crate::tangent::Primal, const N: usize> LanesConstantOther<P, N> for &LanesConst<P> {
    #[inline(always)]
    fn constant(&self, _: Chunk<N>) -> Dual<P, P::Tangent> {
        crate::forward::constant(self.take())
    }
}

/// `Vec::new()` with batched tangents.
#[inline(always)]
pub fn vec_new<E: LanesPrimal<N>, const N: usize>() -> Dual<Vec<E>, Vec<E::Lanes>> {
    Dual::new(Vec::new(), Vec::new())
}

/// `Vec::with_capacity(n)` with batched tangents.
#[inline(always)]
pub fn vec_with_capacity<E: LanesPrimal<N>, const N: usize>(
    n: Dual<usize, NoTangent>,
) -> Dual<Vec<E>, Vec<E::Lanes>> {
    Dual::new(Vec::with_capacity(n.primal), Vec::with_capacity(n.primal))
}

/// `T::from_f64(x)` in generic code, with batched tangents.
#[inline(always)]
pub fn float_from_f64_frule<T: Float, const N: usize>(
    x: Dual<f64, Lanes<f64, N>>,
) -> Dual<T, Lanes<T, N>> {
    Dual::new(T::from_f64(x.primal), x.tangent.convert(T::from_f64))
}

/// `x as B` with batched tangents: the rule of [`scalar::CastRule`] applied in every direction
/// (a float's tangents converted, an integer's none).
pub trait LanesCast<B: LanesPrimal<N>, const N: usize>: LanesPrimal<N> + Sized {
    /// The cast.
    fn cast(x: Dual<Self, Self::Lanes>) -> Dual<B, B::Lanes>;
}

/// `x as B`, through [`LanesCast`].
#[inline(always)]
pub fn cast<A: LanesCast<B, N>, B: LanesPrimal<N>, const N: usize>(
    x: Dual<A, A::Lanes>,
) -> Dual<B, B::Lanes> {
    A::cast(x)
}

macro_rules! lanes_casts {
    (float_float: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@ff $from => $tos); )* };
    (int_float: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@if $from => $tos); )* };
    (float_int: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@fi $from => $tos); )* };
    (int_int: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@ii $from => $tos); )* };
    (@ff $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, Lanes<$from, N>>) -> Dual<$to, Lanes<$to, N>> {
                Dual::new(x.primal as $to, Lanes(x.tangent.0.map(|t| t as $to)))
            }
        }
    )*};
    (@if $from:ty => [$($to:ty),*]) => {$(
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, NoTangent>) -> Dual<$to, Lanes<$to, N>> {
                Dual::new(x.primal as $to, Lanes([0.0; N]))
            }
        }
    )*};
    (@fi $from:ty => [$($to:ty),*]) => {$(
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, Lanes<$from, N>>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
        }
    )*};
    (@ii $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, NoTangent>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
        }
    )*};
}

lanes_casts!(float_float: f32, f64 => [f32, f64]);
lanes_casts!(int_float: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
    => [f32, f64]);
lanes_casts!(float_int: f32, f64
    => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);
lanes_casts!(int_int: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
    => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);

// Arithmetic in a batched rule goes through [`Arith`] and [`Negate`] rather than the operator
// traits: an operator impl on `Dual<T, Lanes<T, N>>` would make `0.5 + 0.5` in an ordinary
// forward rule ambiguous (its tangent type is still a projection of an uninferred float type
// there, so two impls could apply), and a batched rule has no `Dual<T, T>` for the same
// reason in reverse.

/// `a + b`, `a - b`, `a * b`, `a / b`, `a % b` in a batched rule: duals of a float with batched
/// tangents (by value or behind references, through the scalar rules), or of an integer.
pub trait Arith<Rhs> {
    /// The result.
    type Output;
    /// `self + rhs`.
    fn add(self, rhs: Rhs) -> Self::Output;
    /// `self - rhs`.
    fn sub(self, rhs: Rhs) -> Self::Output;
    /// `self * rhs`.
    fn mul(self, rhs: Rhs) -> Self::Output;
    /// `self / rhs`.
    fn div(self, rhs: Rhs) -> Self::Output;
    /// `self % rhs`.
    fn rem(self, rhs: Rhs) -> Self::Output;
}

/// `-a` in a batched rule.
pub trait Negate {
    /// The result.
    type Output;
    /// `-self`.
    fn neg(self) -> Self::Output;
}

/// `a + b` in a batched rule.
#[inline(always)]
pub fn add<A: Arith<B>, B>(a: A, b: B) -> A::Output {
    a.add(b)
}
/// `a - b` in a batched rule.
#[inline(always)]
pub fn sub<A: Arith<B>, B>(a: A, b: B) -> A::Output {
    a.sub(b)
}
/// `a * b` in a batched rule.
#[inline(always)]
pub fn mul<A: Arith<B>, B>(a: A, b: B) -> A::Output {
    a.mul(b)
}
/// `a / b` in a batched rule.
#[inline(always)]
pub fn div<A: Arith<B>, B>(a: A, b: B) -> A::Output {
    a.div(b)
}
/// `a % b` in a batched rule.
#[inline(always)]
pub fn rem<A: Arith<B>, B>(a: A, b: B) -> A::Output {
    a.rem(b)
}
/// `-a` in a batched rule.
#[inline(always)]
pub fn neg<A: Negate>(a: A) -> A::Output {
    a.neg()
}

macro_rules! float_arith {
    ($(impl<$($lt:lifetime),*> $lhs:ty, $rhs:ty => |$a:ident, $b:ident| ($x:expr, $y:expr);)*) => {$(
        impl<$($lt,)* T: Float, const N: usize> Arith<$rhs> for $lhs {
            type Output = Dual<T, Lanes<T, N>>;
            #[inline(always)]
            fn add(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                scalar::add_frule($x, $y)
            }
            #[inline(always)]
            fn sub(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                scalar::sub_frule($x, $y)
            }
            #[inline(always)]
            fn mul(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                scalar::mul_frule($x, $y)
            }
            #[inline(always)]
            fn div(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                scalar::div_frule($x, $y)
            }
            #[inline(always)]
            fn rem(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                scalar::rem_frule($x, $y)
            }
        }
    )*};
}

float_arith! {
    impl<> Dual<T, Lanes<T, N>>, Dual<T, Lanes<T, N>> => |a, b| (a, b);
    impl<'b> Dual<T, Lanes<T, N>>, Dual<&'b T, &'b Lanes<T, N>> =>
        |a, b| (a, Dual::new(*b.primal, *b.tangent));
    impl<'a> Dual<&'a T, &'a Lanes<T, N>>, Dual<T, Lanes<T, N>> =>
        |a, b| (Dual::new(*a.primal, *a.tangent), b);
    impl<'a, 'b> Dual<&'a T, &'a Lanes<T, N>>, Dual<&'b T, &'b Lanes<T, N>> =>
        |a, b| (Dual::new(*a.primal, *a.tangent), Dual::new(*b.primal, *b.tangent));
}

impl<T: Float, const N: usize> Negate for Dual<T, Lanes<T, N>> {
    type Output = Dual<T, Lanes<T, N>>;
    #[inline(always)]
    fn neg(self) -> Self::Output {
        scalar::neg_frule(self)
    }
}

impl<T: Float, const N: usize> Negate for Dual<&T, &Lanes<T, N>> {
    type Output = Dual<T, Lanes<T, N>>;
    #[inline(always)]
    fn neg(self) -> Self::Output {
        scalar::neg_frule(Dual::new(*self.primal, *self.tangent))
    }
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        int_arith!(@one $t, Dual<$t, NoTangent>, Dual<$t, NoTangent>, |a, b| (a.primal, b.primal));
        int_arith!(@one $t, Dual<$t, NoTangent>, Dual<&'b $t, &'b NoTangent>, |a, b| (a.primal, *b.primal), 'b);
        int_arith!(@one $t, Dual<&'a $t, &'a NoTangent>, Dual<$t, NoTangent>, |a, b| (*a.primal, b.primal), 'a);
        int_arith!(@one $t, Dual<&'a $t, &'a NoTangent>, Dual<&'b $t, &'b NoTangent>, |a, b| (*a.primal, *b.primal), 'a, 'b);
    )*};
    (@one $t:ty, $lhs:ty, $rhs:ty, |$a:ident, $b:ident| ($x:expr, $y:expr) $(, $lt:lifetime)*) => {
        impl<$($lt),*> Arith<$rhs> for $lhs {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn add(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                Dual::new($x + $y, NoTangent)
            }
            #[inline(always)]
            fn sub(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                Dual::new($x - $y, NoTangent)
            }
            #[inline(always)]
            fn mul(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                Dual::new($x * $y, NoTangent)
            }
            #[inline(always)]
            fn div(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                Dual::new($x / $y, NoTangent)
            }
            #[inline(always)]
            fn rem(self, rhs: $rhs) -> Self::Output {
                let ($a, $b) = (self, rhs);
                Dual::new($x % $y, NoTangent)
            }
        }
    };
}

int_arith!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! int_negate {
    ($($t:ty),*) => {$(
        impl Negate for Dual<$t, NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn neg(self) -> Self::Output {
                Dual::new(-self.primal, NoTangent)
            }
        }
        impl Negate for Dual<&$t, &NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn neg(self) -> Self::Output {
                Dual::new(-*self.primal, NoTangent)
            }
        }
    )*};
}

int_negate!(i8, i16, i32, i64, i128, isize);

/// A batched rule's method calls: `LanesMethodFrule::<M, _>::method_frule(&mut x)`, as
/// [`MethodFrule`] in an ordinary rule. The float methods have impls of their own for receivers
/// whose tangents are [`Lanes`] ([`LanesFloatDual`]); integer and buffer methods are the
/// ordinary rules' (`IntKey`, `BufferKey`, the batched buffer rules below included). The two
/// traits are kept apart so that in each kind of rule a float receiver has exactly one impl
/// family, which rustc needs to infer the type of a literal.
#[diagnostic::on_unimplemented(
    message = "no batched forward-mode rule for this method call on `{Self}`",
    label = "this method has no batched rule"
)]
pub trait LanesMethodFrule<const M: u64, K> {
    /// The receiver as the rule takes it.
    type Receiver;
    /// The rule: a function pointer taking the receiver, then the method's arguments.
    type Rule;
    /// The receiver, and the rule to call with it.
    fn method_frule(self) -> (Self::Receiver, Self::Rule);
}

impl<const M: u64, I, R: MethodFrule<M, IntKey<I>>> LanesMethodFrule<M, IntKey<I>> for R {
    type Receiver = R::Receiver;
    type Rule = R::Rule;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        MethodFrule::method_frule(self)
    }
}

impl<const M: u64, X, R: MethodFrule<M, BufferKey<X>>> LanesMethodFrule<M, BufferKey<X>> for R {
    type Receiver = R::Receiver;
    type Rule = R::Rule;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        MethodFrule::method_frule(self)
    }
}

/// A dual of a float with batched tangents, by value or behind a reference: a float method's
/// receiver in a batched rule.
pub trait LanesFloatDual<F: Float> {
    /// The tangent type.
    type Dirs: Directions<F>;
    /// The dual's value.
    fn value(&self) -> Dual<F, Self::Dirs>;
}

impl<F: Float, const N: usize> LanesFloatDual<F> for Dual<F, Lanes<F, N>> {
    type Dirs = Lanes<F, N>;
    #[inline(always)]
    fn value(&self) -> Dual<F, Lanes<F, N>> {
        *self
    }
}

impl<F: Float, const N: usize> LanesFloatDual<F> for Dual<&F, &Lanes<F, N>> {
    type Dirs = Lanes<F, N>;
    #[inline(always)]
    fn value(&self) -> Dual<F, Lanes<F, N>> {
        Dual::new(*self.primal, *self.tangent)
    }
}

impl<F: Float, const N: usize> LanesFloatDual<F> for Dual<&mut F, &mut Lanes<F, N>> {
    type Dirs = Lanes<F, N>;
    #[inline(always)]
    fn value(&self) -> Dual<F, Lanes<F, N>> {
        Dual::new(*self.primal, *self.tangent)
    }
}

macro_rules! lanes_float_methods {
    ($($name:ident($($a:ident),*) -> $out:ty => $rule:expr;)*) => {$(
        impl<F: Float, D: LanesFloatDual<F>>
            LanesMethodFrule<{ method_key(stringify!($name)) }, FloatKey<F>> for &mut D
        {
            type Receiver = Dual<F, D::Dirs>;
            type Rule = fn(Dual<F, D::Dirs> $(, lanes_float_methods!(@ty $a F D))*) -> $out;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), $rule)
            }
        }
    )*};
    (@ty x $f:ident $d:ident) => { Dual<$f, $d::Dirs> };
    (@ty n $f:ident $d:ident) => { Dual<i32, NoTangent> };
}

lanes_float_methods! {
    sin() -> Dual<F, D::Dirs> => scalar::sin_frule;
    cos() -> Dual<F, D::Dirs> => scalar::cos_frule;
    tan() -> Dual<F, D::Dirs> => scalar::tan_frule;
    asin() -> Dual<F, D::Dirs> => scalar::asin_frule;
    acos() -> Dual<F, D::Dirs> => scalar::acos_frule;
    atan() -> Dual<F, D::Dirs> => scalar::atan_frule;
    sinh() -> Dual<F, D::Dirs> => scalar::sinh_frule;
    cosh() -> Dual<F, D::Dirs> => scalar::cosh_frule;
    tanh() -> Dual<F, D::Dirs> => scalar::tanh_frule;
    asinh() -> Dual<F, D::Dirs> => scalar::asinh_frule;
    acosh() -> Dual<F, D::Dirs> => scalar::acosh_frule;
    atanh() -> Dual<F, D::Dirs> => scalar::atanh_frule;
    exp() -> Dual<F, D::Dirs> => scalar::exp_frule;
    exp2() -> Dual<F, D::Dirs> => scalar::exp2_frule;
    exp_m1() -> Dual<F, D::Dirs> => scalar::exp_m1_frule;
    ln() -> Dual<F, D::Dirs> => scalar::ln_frule;
    ln_1p() -> Dual<F, D::Dirs> => scalar::ln_1p_frule;
    log2() -> Dual<F, D::Dirs> => scalar::log2_frule;
    log10() -> Dual<F, D::Dirs> => scalar::log10_frule;
    sqrt() -> Dual<F, D::Dirs> => scalar::sqrt_frule;
    cbrt() -> Dual<F, D::Dirs> => scalar::cbrt_frule;
    abs() -> Dual<F, D::Dirs> => scalar::abs_frule;
    signum() -> Dual<F, D::Dirs> => scalar::signum_frule;
    recip() -> Dual<F, D::Dirs> => scalar::recip_frule;
    to_degrees() -> Dual<F, D::Dirs> => scalar::to_degrees_frule;
    to_radians() -> Dual<F, D::Dirs> => scalar::to_radians_frule;
    floor() -> Dual<F, D::Dirs> => scalar::floor_frule;
    ceil() -> Dual<F, D::Dirs> => scalar::ceil_frule;
    round() -> Dual<F, D::Dirs> => scalar::round_frule;
    trunc() -> Dual<F, D::Dirs> => scalar::trunc_frule;
    fract() -> Dual<F, D::Dirs> => scalar::fract_frule;
    atan2(x) -> Dual<F, D::Dirs> => scalar::atan2_frule;
    hypot(x) -> Dual<F, D::Dirs> => scalar::hypot_frule;
    rem_euclid(x) -> Dual<F, D::Dirs> => scalar::rem_euclid_frule;
    copysign(x) -> Dual<F, D::Dirs> => scalar::copysign_frule;
    powf(x) -> Dual<F, D::Dirs> => scalar::powf_frule;
    log(x) -> Dual<F, D::Dirs> => scalar::log_frule;
    min(x) -> Dual<F, D::Dirs> => scalar::min_frule;
    max(x) -> Dual<F, D::Dirs> => scalar::max_frule;
    mul_add(x, x) -> Dual<F, D::Dirs> => scalar::mul_add_frule;
    clamp(x, x) -> Dual<F, D::Dirs> => scalar::clamp_frule;
    powi(n) -> Dual<F, D::Dirs> => scalar::powi_frule;
    sin_cos() -> Dual<(F, F), (D::Dirs, D::Dirs)> => scalar::sin_cos_frule;
    is_nan() -> Dual<bool, NoTangent> => |x| Dual::new(x.primal.is_nan(), NoTangent);
    is_finite() -> Dual<bool, NoTangent> => |x| Dual::new(x.primal.is_finite(), NoTangent);
    is_infinite() -> Dual<bool, NoTangent> => |x| Dual::new(x.primal.is_infinite(), NoTangent);
    is_sign_positive() -> Dual<bool, NoTangent> =>
        |x| Dual::new(x.primal.is_sign_positive(), NoTangent);
    is_sign_negative() -> Dual<bool, NoTangent> =>
        |x| Dual::new(x.primal.is_sign_negative(), NoTangent);
    total_cmp(x) -> Dual<std::cmp::Ordering, NoTangent> =>
        |a, b| Dual::new(super::total_cmp_of(a.primal, b.primal), NoTangent);
    partial_cmp(x) -> Dual<Option<std::cmp::Ordering>, Option<NoTangent>> => |a, b| {
        let o = a.primal.partial_cmp(&b.primal);
        Dual::new(o, o.map(|_| NoTangent))
    };
}

/// The check `#[differentiable(debug)]` inserts after each assignment of a float dual in a
/// batched rule: panics, naming the variable and the line, if the primal or a tangent in any
/// direction is not finite (see [`super::DebugCheck`]; every other value takes
/// [`DebugCheckFallback`]).
pub trait DebugCheck {
    /// Panics if the value or one of its tangents is not finite.
    fn mooncake_debug_check(&self, what: &str, line: u32);
}

pub use super::DebugCheckFallback;

impl<F: Float, const N: usize> DebugCheck for Dual<F, Lanes<F, N>> {
    #[track_caller]
    fn mooncake_debug_check(&self, what: &str, line: u32) {
        if !self.primal.is_finite() || self.tangent.0.iter().any(|t| !t.is_finite()) {
            panic!(
                "#[differentiable(debug)]: {what} (line {line}) is not finite: value {}, tangents {:?}",
                self.primal, self.tangent.0
            );
        }
    }
}

// Buffer methods in a batched rule: a buffer of floats has batched tangents (`[Lanes<T, N>]`),
// which the ordinary buffer rules (typed by `E::Tangent`) do not take. Generated code names
// them by the method's name with `__lanes_` before it (`Forward::method_call`); each impl is
// generic over the elements' tangent type `L`, so that it also serves buffers of integers,
// whose tangents are `NoTangent`.

/// The sum of batched tangents, in the order and from the `-0.0` that `iter().sum()` of one
/// direction uses, lane by lane.
#[inline(always)]
fn sum_of_lanes<T: Float, L: Directions<T>>(t: &[L]) -> L {
    let mut acc = L::zero();
    for k in 0..L::LANES {
        acc.set_lane(k, -T::ZERO);
    }
    t.iter().fold(acc, |a, b| a.plus(*b))
}

/// `x.iter().sum()` of floats.
#[diagnostic::do_not_recommend]
impl<'b, E: Float, const N: usize, P: ReadBuffer<E>, T: ReadBuffer<Lanes<E, N>>>
    MethodFrule<{ method_key("__lanes___iter_sum") }, BufferKey<Lanes<E, N>>>
    for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<E, Lanes<E, N>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), |x| {
            Dual::new(
                x.primal.with_slice(<E as SumElement>::sum),
                x.tangent.with_slice(sum_of_lanes::<E, _>),
            )
        })
    }
}

/// `x.iter().sum()` of integers.
#[diagnostic::do_not_recommend]
impl<'b, E: SumElement<Tangent = NoTangent>, P: ReadBuffer<E>, T: ReadBuffer<NoTangent>>
    MethodFrule<{ method_key("__lanes___iter_sum") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<E, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), |x| {
            Dual::new(x.primal.with_slice(E::sum), NoTangent)
        })
    }
}

/// `x.to_vec()`.
#[diagnostic::do_not_recommend]
impl<'b, E: Clone, L: Clone, P: ReadBuffer<E>, T: ReadBuffer<L>>
    MethodFrule<{ method_key("__lanes_to_vec") }, BufferKey<(E, L)>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<Vec<E>, Vec<L>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), |x| {
            Dual::new(x.primal.with_slice(<[E]>::to_vec), x.tangent.with_slice(<[L]>::to_vec))
        })
    }
}

/// `v.push(x)` of a `Vec` the rule holds.
#[diagnostic::do_not_recommend]
impl<'b, E, L> MethodFrule<{ method_key("__lanes_push") }, BufferKey<(E, L)>>
    for &'b mut Dual<Vec<E>, Vec<L>>
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<L>>;
    type Rule = fn(Dual<&'b mut Vec<E>, &'b mut Vec<L>>, Dual<E, L>) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |v, x| {
            v.primal.push(x.primal);
            v.tangent.push(x.tangent);
            Dual::new((), NoTangent)
        })
    }
}

/// `v.fill(x)`.
#[diagnostic::do_not_recommend]
impl<'b, E: Clone, L: Clone, P: WriteBuffer<E>, T: WriteBuffer<L>>
    MethodFrule<{ method_key("__lanes_fill") }, BufferKey<(E, L)>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = fn(Dual<&'b mut P, &'b mut T>, Dual<E, L>) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |v, x| {
            v.primal.with_slice_mut(|s| s.fill(x.primal.clone()));
            v.tangent.with_slice_mut(|s| s.fill(x.tangent.clone()));
            Dual::new((), NoTangent)
        })
    }
}

/// `v.swap(a, b)`.
#[diagnostic::do_not_recommend]
impl<'b, E, L, P: WriteBuffer<E>, T: WriteBuffer<L>>
    MethodFrule<{ method_key("__lanes_swap") }, BufferKey<(E, L)>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = fn(
        Dual<&'b mut P, &'b mut T>,
        Dual<usize, NoTangent>,
        Dual<usize, NoTangent>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |v, a, b| {
            v.primal.with_slice_mut(|s| s.swap(a.primal, b.primal));
            v.tangent.with_slice_mut(|s| s.swap(a.primal, b.primal));
            Dual::new((), NoTangent)
        })
    }
}

/// `v.reverse()`.
#[diagnostic::do_not_recommend]
impl<'b, E, L, P: WriteBuffer<E>, T: WriteBuffer<L>>
    MethodFrule<{ method_key("__lanes_reverse") }, BufferKey<(E, L)>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = fn(Dual<&'b mut P, &'b mut T>) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |v| {
            v.primal.with_slice_mut(<[E]>::reverse);
            v.tangent.with_slice_mut(<[L]>::reverse);
            Dual::new((), NoTangent)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_apply_each_rule_in_every_direction() {
        let x = Dual::new(2.0_f64, Lanes([1.0, 0.0, 3.0]));
        let y = Dual::new(5.0_f64, Lanes([0.0, 1.0, -1.0]));
        let p = mul(x, y);
        assert_eq!(p.primal, 10.0);
        assert_eq!(p.tangent, Lanes([5.0, 2.0, 13.0]));
        let q = div(x, y);
        for k in 0..3 {
            let (dx, dy) = (x.tangent.0[k], y.tangent.0[k]);
            assert!((q.tangent.0[k] - (dx / 5.0 - 2.0 * dy / 25.0)).abs() < 1e-15);
        }
        let n = neg((&x.primal, &x.tangent).into_dual());
        assert_eq!(add(Dual::new(2_usize, NoTangent), Dual::new(3, NoTangent)).primal, 5);
        assert_eq!(n.tangent, Lanes([-1.0, 0.0, -3.0]));
        let c = cast::<usize, f64, 3>(Dual::new(4, NoTangent));
        assert_eq!(c.tangent, Lanes([0.0; 3]));
        let s = cast::<f64, f32, 3>(x);
        assert_eq!(s.tangent, Lanes([1.0_f32, 0.0, 3.0]));
    }

    trait IntoDual<'a> {
        fn into_dual(self) -> Dual<&'a f64, &'a Lanes<f64, 3>>;
    }
    impl<'a> IntoDual<'a> for (&'a f64, &'a Lanes<f64, 3>) {
        fn into_dual(self) -> Dual<&'a f64, &'a Lanes<f64, 3>> {
            Dual::new(self.0, self.1)
        }
    }
}
