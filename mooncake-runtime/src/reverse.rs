//! Reverse-mode support for the code `#[differentiable]` generates: constants, operators on
//! [`CoDual`]s, casts, method-call dispatch ([`MethodRrule`]), and the accumulation of rdata.
//!
//! Every function here returns `(output, pullback)` like a rule, and calls the primitive rules
//! of [`crate::rules`]; nothing computes a derivative of its own.

use crate::dual::{CoDual, NoFData, NoRData};
use crate::float::Float;
use crate::keys::{FloatKey, IntKey, method_key};
use crate::rules::scalar::{self, CastRule};
pub use crate::tangent::ZeroRData;
use crate::tangent::{Primal, TangentSpace};

/// A constant: fresh zero fdata; nothing flows back.
#[inline(always)]
pub fn constant<P: Primal>(p: P) -> CoDual<P, P::FData> {
    let f = p.zero_fdata();
    CoDual::new(p, f)
}

/// The fdata of a value whose sums the reverse sweep writes inline, its adjoint carried as
/// rdata: [`NoFData`] (numbers, arrays and structs of them). A matrix's fdata is its shadow,
/// which an inline sum would not reach.
#[diagnostic::on_unimplemented(
    message = "`+`, `-` or unary `-` of two values with shadows (`{Self}`) both held by the function is not supported in reverse mode yet",
    label = "both operands are values of this function, and their gradients live in shadows",
    note = "for a value of a `#[derive(Tangent)]` type returned by a call or a method (`f(x) - g(y)`), bind it to a variable declared with its type (`let a: V2 = f(x);`), so that the sum is its `Sub` method; for nalgebra or ndarray matrices, declare the variables' types (`let c: DMatrix<f64> = g(x);`) so that the function's text shows them to be matrices; otherwise pass one operand in as an argument behind `&`, or use `#[differentiable(forward_only)]`"
)]
pub trait InlineSum {}

impl InlineSum for NoFData {}

/// `a + b`, `a - b` or `-a` of values the derived rule holds, its adjoint written inline by the
/// reverse sweep: the value with [`NoFData`].
#[inline(always)]
pub fn linear<P: Primal>(p: P) -> CoDual<P, NoFData>
where
    P::FData: InlineSum,
{
    CoDual::new(p, NoFData)
}

/// `x as B`, through [`scalar::cast_rrule`].
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn cast<A: CastRule<B>, B: Primal>(
    x: CoDual<A, NoFData>,
) -> (CoDual<B, NoFData>, impl FnOnce(<B as Primal>::RData) -> (<A as Primal>::RData,)) {
    scalar::cast_rrule(x)
}

/// `acc += r`: the accumulation of a gradient into an rdata accumulator.
#[inline(always)]
pub fn accumulate<R: TangentSpace>(acc: &mut R, r: R) {
    acc.increment(&r);
}

/// Takes the value of an accumulator, leaving zero (the adjoint of a local that is about to
/// be overwritten, going backwards).
#[inline(always)]
pub fn take<R: ZeroRData>(acc: &mut R) -> R {
    std::mem::replace(acc, R::zero())
}

/// A zero accumulator, its type inferred from use.
#[inline(always)]
pub fn zero<R: ZeroRData>() -> R {
    R::zero()
}

// ---------------------------------------------------------------------------------------------
// Operators on codual values: floats through the scalar rules, integers and `bool` with no
// derivative.

macro_rules! rev_binary {
    ($($trait:ident $method:ident $rule:ident $op:tt),*) => {$(
        /// The reverse-mode rule of this operator for operands of these types.
        #[diagnostic::on_unimplemented(
            message = "no reverse-mode rule for this arithmetic on `{Self}` and `{Rhs}`",
            label = "an operator with no reverse-mode rule for these operands",
            note = "arithmetic on a value of a `#[derive(Tangent)]` type is its operator trait's method (`a + b` is `a.add(b)`): put `#[differentiable]` on the trait's `impl` block (`#[differentiable] impl Add for V3`)"
        )]
        pub trait $trait<Rhs> {
            /// The result's primal type.
            type Out: Primal;
            /// The rdata of the left operand.
            type RA;
            /// The rdata of the right operand.
            type RB;
            /// `(self op rhs, pullback)`.
            #[allow(clippy::type_complexity)]
            fn $method(
                self,
                rhs: Rhs,
            ) -> (
                CoDual<Self::Out, <Self::Out as Primal>::FData>,
                impl FnOnce(<Self::Out as Primal>::RData) -> (Self::RA, Self::RB),
            );
        }

        impl<T: Float> $trait<CoDual<T, NoFData>> for CoDual<T, NoFData> {
            type Out = T;
            type RA = T;
            type RB = T;
            #[inline(always)]
            fn $method(self, rhs: Self) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, T)) {
                scalar::$rule(self, rhs)
            }
        }

        /// The free-function form generated code calls.
        #[inline(always)]
        #[allow(clippy::type_complexity)]
        pub fn $method<A: $trait<B>, B>(
            a: A,
            b: B,
        ) -> (
            CoDual<A::Out, <A::Out as Primal>::FData>,
            impl FnOnce(<A::Out as Primal>::RData) -> (A::RA, A::RB),
        ) {
            a.$method(b)
        }

        rev_binary!(@ints $trait $method $op: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
    )*};
    (@ints $trait:ident $method:ident $op:tt: $($t:ty),*) => {$(
        impl $trait<CoDual<$t, NoFData>> for CoDual<$t, NoFData> {
            type Out = $t;
            type RA = NoRData;
            type RB = NoRData;
            #[inline(always)]
            fn $method(self, rhs: Self) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData)) {
                (CoDual::new(self.primal $op rhs.primal, NoFData), |_| (NoRData, NoRData))
            }
        }
    )*};
}

rev_binary!(
    RevAdd add add_rrule +,
    RevSub sub sub_rrule -,
    RevMul mul mul_rrule *,
    RevDiv div div_rrule /,
    RevRem rem rem_rrule %
);

/// An operand of an operator's rule in derived code ([`operand`]): what the rule takes by
/// value, made from the local without giving it up. A number is copied; a matrix of the
/// `nalgebra` feature, owned or behind a reference, is cloned into an owned codual (the same
/// shadow), so that the rule's pullback owns what it needs and borrows nothing from the call.
#[diagnostic::on_unimplemented(
    message = "an operator in #[differentiable] code is given a value of another type than numbers and matrices (`{Self}`)",
    label = "an operand of an arithmetic operator",
    note = "arithmetic on a value of a user type is its operator trait's method (`a + b` is `a.add(b)`, which a `#[differentiable] impl Add for V3` differentiates) where the function's text shows the operand to be such a value: a variable declared with its type or bound to a struct literal, `V3::new(..)` or arithmetic of one; for a field (`self.pos + v`), bind it to a variable with its type (`let p: V3 = self.pos;`) or call the method (`self.pos.add(v)`)"
)]
pub trait Operand {
    /// What the rule takes.
    type Owned;
    /// The operand for the rule.
    fn operand(&self) -> Self::Owned;
}

impl<T: Float> Operand for CoDual<T, NoFData> {
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        *self
    }
}

macro_rules! int_operands {
    ($($t:ty),*) => {$(
        impl Operand for CoDual<$t, NoFData> {
            type Owned = Self;
            #[inline(always)]
            fn operand(&self) -> Self {
                *self
            }
        }
    )*};
}

int_operands!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// The free-function form generated code calls: `x` as an operand of an operator's rule (see
/// [`Operand`]).
#[inline(always)]
pub fn operand<X: Operand>(x: &X) -> X::Owned {
    x.operand()
}

/// The structs `#[derive(Tangent)]` derives for: the mark by which the operators' rules below
/// tell a value of a user type (read from a field, where the function's text does not show its
/// type) from a number or a matrix. On the primal type, not on its fdata: a literal's float
/// type is inferred later than its fdata would be needed, and no float is a `UserValue`.
pub trait UserValue {}

/// The fdata types `#[derive(Tangent)]` makes for its structs: with [`UserValue`], what keeps
/// the operators' impls for user types apart from the numbers' and matrices' to coherence
/// (`NoFData` and the matrices' shadows, the runtime's own or foreign types, are knowably not
/// `DerivedFData`; `UserValue` on the primal type alone would not be, and `DerivedFData` alone
/// leaves a literal's float type uninferred, its fdata a projection).
pub trait DerivedFData {}

/// A value of a user type as an operand of an operator's rule: the value itself (see
/// [`UserValue`]).
impl<P: UserValue + Clone, F: DerivedFData + Clone> Operand for CoDual<P, F> {
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        self.clone()
    }
}

/// The rdata of a binary method's pullback, split into the receiver's and the argument's.
pub trait SplitPair {
    /// The receiver's.
    type A;
    /// The argument's.
    type B;
    /// The two.
    fn split(self) -> (Self::A, Self::B);
}

impl<A, B> SplitPair for (A, B) {
    type A = A;
    type B = B;
    #[inline(always)]
    fn split(self) -> (A, B) {
        self
    }
}

/// `a + b` (and `-`, `*`, `/`) of a value of a user type the function's text does not show to
/// be one (`p.pos + p.vel * dt`, read from fields): the operator trait's method, through the
/// rule its `#[differentiable]` impl gives it (`RecvMarker` with the receiver's type as the
/// key, `UserMethodRrule`), as a variable declared with the type would have been.
macro_rules! user_value_operators {
    ($($trait:ident $method:ident $name:literal),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<P, F, B, Mk> $trait<B> for CoDual<P, F>
        where
            P: UserValue,
            F: DerivedFData,
            CoDual<P, F>: RecvMarker<{ method_key($name) }, P, Marker = Mk>,
            Mk: Default
                + for<'a, 'b> UserMethodRrule<
                    { method_key($name) },
                    P,
                    Recv<'a> = CoDual<P, F>,
                    Args<'b> = (B,),
                >,
            Mk::RecvRData: ZeroRData,
            Mk::Rets: SplitPair,
        {
            type Out = Mk::Out;
            type RA = <Mk::Rets as SplitPair>::A;
            type RB = <Mk::Rets as SplitPair>::B;
            #[inline(always)]
            fn $method(
                mut self,
                rhs: B,
            ) -> (
                CoDual<Self::Out, <Self::Out as Primal>::FData>,
                impl FnOnce(<Self::Out as Primal>::RData) -> (Self::RA, Self::RB),
            ) {
                let (o, pb) = Mk::default().method_rrule(&mut self, (rhs,));
                (o, move |r| pb(r, ZeroRData::zero()).split())
            }
        }
    )*};
}

user_value_operators!(RevAdd add "add", RevSub sub "sub", RevMul mul "mul", RevDiv div "div");

/// `-a` of a value of a user type the function's text does not show to be one (see
/// [`UserValue`]): `Neg::neg`'s rule.
#[diagnostic::do_not_recommend]
impl<P, F, Mk, R> RevNeg for CoDual<P, F>
where
    P: UserValue,
    F: DerivedFData,
    CoDual<P, F>: RecvMarker<{ method_key("neg") }, P, Marker = Mk>,
    Mk: Default
        + for<'a, 'b> UserMethodRrule<
            { method_key("neg") },
            P,
            Recv<'a> = CoDual<P, F>,
            Args<'b> = (),
            Rets = (R,),
        >,
    Mk::RecvRData: ZeroRData,
{
    type Out = Mk::Out;
    type R = R;
    #[inline(always)]
    fn neg(
        mut self,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData) -> (R,),
    ) {
        let (o, pb) = Mk::default().method_rrule(&mut self, ());
        (o, move |r| pb(r, ZeroRData::zero()))
    }
}

/// The reverse-mode rule of unary minus.
pub trait RevNeg {
    /// The result's primal type.
    type Out: Primal;
    /// The operand's rdata.
    type R;
    /// `(-self, pullback)`.
    #[allow(clippy::type_complexity)]
    fn neg(
        self,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData) -> (Self::R,),
    );
}

impl<T: Float> RevNeg for CoDual<T, NoFData> {
    type Out = T;
    type R = T;
    #[inline(always)]
    fn neg(self) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,)) {
        scalar::neg_rrule(self)
    }
}

macro_rules! int_neg {
    ($($t:ty),*) => {$(
        impl RevNeg for CoDual<$t, NoFData> {
            type Out = $t;
            type R = NoRData;
            #[inline(always)]
            fn neg(self) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData,)) {
                (CoDual::new(-self.primal, NoFData), |_| (NoRData,))
            }
        }
    )*};
}

int_neg!(i8, i16, i32, i64, i128, isize);

/// Unary minus, the free-function form generated code calls.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn neg<A: RevNeg>(
    a: A,
) -> (CoDual<A::Out, <A::Out as Primal>::FData>, impl FnOnce(<A::Out as Primal>::RData) -> (A::R,))
{
    a.neg()
}

// ---------------------------------------------------------------------------------------------
// Method calls.

/// The reverse-mode rule of the method named by `M` ([`method_key`]) on a receiver of type
/// `Self` (a `CoDual`, by value), with arguments `Args` (a tuple of `CoDual`s). The pullback maps
/// the output's rdata to the rdata of the receiver and of each argument.
#[diagnostic::on_unimplemented(
    message = "no reverse-mode rule for this method call on `{Self}`",
    label = "this method has no reverse-mode rule",
    note = "give the method a rule: put `#[differentiable]` on its `impl` block, write a hand-written \
            rule, or declare it with `zero_adjoint!`"
)]
pub trait MethodRrule<const M: u64, K, Args> {
    /// The result's primal type.
    type Out: Primal;
    /// The rdata of the receiver followed by those of the arguments.
    type Rets;
    /// `(output, pullback)`.
    #[allow(clippy::type_complexity)]
    fn method_rrule(
        self,
        args: Args,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData) -> Self::Rets,
    );
}

macro_rules! float_unary_methods {
    ($($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<F: Float> MethodRrule<{ method_key(stringify!($name)) }, FloatKey<F>, ()> for CoDual<F, NoFData> {
            type Out = F;
            type Rets = (F,);
            #[inline(always)]
            fn method_rrule(self, _: ()) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (F,)) {
                scalar::$rule(self)
            }
        }
    )*};
}

float_unary_methods!(
    sin => sin_rrule, cos => cos_rrule, tan => tan_rrule, asin => asin_rrule, acos => acos_rrule,
    atan => atan_rrule, sinh => sinh_rrule, cosh => cosh_rrule, tanh => tanh_rrule,
    asinh => asinh_rrule, acosh => acosh_rrule, atanh => atanh_rrule, exp => exp_rrule,
    exp2 => exp2_rrule, exp_m1 => exp_m1_rrule, ln => ln_rrule, ln_1p => ln_1p_rrule,
    log2 => log2_rrule, log10 => log10_rrule, sqrt => sqrt_rrule, cbrt => cbrt_rrule,
    abs => abs_rrule, signum => signum_rrule, recip => recip_rrule,
    to_degrees => to_degrees_rrule, to_radians => to_radians_rrule, floor => floor_rrule,
    ceil => ceil_rrule, round => round_rrule, trunc => trunc_rrule, fract => fract_rrule
);

macro_rules! float_binary_methods {
    ($($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<F: Float> MethodRrule<{ method_key(stringify!($name)) }, FloatKey<F>, (CoDual<F, NoFData>,)>
            for CoDual<F, NoFData>
        {
            type Out = F;
            type Rets = (F, F);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<F, NoFData>,)) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (F, F)) {
                scalar::$rule(self, args.0)
            }
        }
    )*};
}

float_binary_methods!(
    atan2 => atan2_rrule, hypot => hypot_rrule, powf => powf_rrule, log => log_rrule,
    min => min_rrule, max => max_rrule, rem_euclid => rem_euclid_rrule, copysign => copysign_rrule
);

macro_rules! float_ternary_methods {
    ($($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<F: Float> MethodRrule<{ method_key(stringify!($name)) }, FloatKey<F>, (CoDual<F, NoFData>, CoDual<F, NoFData>)>
            for CoDual<F, NoFData>
        {
            type Out = F;
            type Rets = (F, F, F);
            #[inline(always)]
            fn method_rrule(
                self,
                args: (CoDual<F, NoFData>, CoDual<F, NoFData>),
            ) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (F, F, F)) {
                scalar::$rule(self, args.0, args.1)
            }
        }
    )*};
}

float_ternary_methods!(mul_add => mul_add_rrule, clamp => clamp_rrule);

/// `x.sin_cos()`: the pair, and its cotangent `(s̄, c̄)` mapped to `x`'s.
#[diagnostic::do_not_recommend]
impl<F: Float> MethodRrule<{ method_key("sin_cos") }, FloatKey<F>, ()> for CoDual<F, NoFData> {
    type Out = (F, F);
    type Rets = (F,);
    #[inline(always)]
    fn method_rrule(
        self,
        _: (),
    ) -> (CoDual<(F, F), (NoFData, NoFData)>, impl FnOnce((F, F)) -> (F,)) {
        scalar::sin_cos_rrule(self)
    }
}

#[diagnostic::do_not_recommend]
impl<F: Float> MethodRrule<{ method_key("powi") }, FloatKey<F>, (CoDual<i32, NoFData>,)>
    for CoDual<F, NoFData>
{
    type Out = F;
    type Rets = (F, NoRData);
    #[inline(always)]
    fn method_rrule(
        self,
        args: (CoDual<i32, NoFData>,),
    ) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (F, NoRData)) {
        scalar::powi_rrule(self, args.0)
    }
}

macro_rules! float_predicates {
    ($($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<F: Float> MethodRrule<{ method_key(stringify!($name)) }, FloatKey<F>, ()> for CoDual<F, NoFData> {
            type Out = bool;
            type Rets = (F,);
            #[inline(always)]
            fn method_rrule(self, _: ()) -> (CoDual<bool, NoFData>, impl FnOnce(NoRData) -> (F,)) {
                (CoDual::new(self.primal.$name(), NoFData), |_| (F::ZERO,))
            }
        }
    )*};
}

float_predicates!(is_nan, is_finite, is_infinite, is_sign_positive, is_sign_negative);

/// The predicates of an `Ordering` (`a.total_cmp(&b).is_lt()`): no derivative.
macro_rules! ordering_predicates {
    ($($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key(stringify!($name)) }, IntKey<std::cmp::Ordering>, ()>
            for CoDual<std::cmp::Ordering, NoFData>
        {
            type Out = bool;
            type Rets = (NoRData,);
            #[inline(always)]
            fn method_rrule(self, _: ()) -> (CoDual<bool, NoFData>, impl FnOnce(NoRData) -> (NoRData,)) {
                (CoDual::new(self.primal.$name(), NoFData), |_| (NoRData,))
            }
        }
    )*};
}

ordering_predicates!(is_lt, is_le, is_gt, is_ge, is_eq, is_ne);

#[diagnostic::do_not_recommend]
impl<F: Float> MethodRrule<{ method_key("total_cmp") }, FloatKey<F>, (CoDual<F, NoFData>,)>
    for CoDual<F, NoFData>
{
    type Out = std::cmp::Ordering;
    type Rets = (F, F);
    #[inline(always)]
    fn method_rrule(
        self,
        args: (CoDual<F, NoFData>,),
    ) -> (CoDual<std::cmp::Ordering, NoFData>, impl FnOnce(NoRData) -> (F, F)) {
        let o = crate::forward::total_cmp_of(self.primal, args.0.primal);
        (CoDual::new(o, NoFData), |_| (F::ZERO, F::ZERO))
    }
}

#[diagnostic::do_not_recommend]
impl<F: Float> MethodRrule<{ method_key("partial_cmp") }, FloatKey<F>, (CoDual<F, NoFData>,)>
    for CoDual<F, NoFData>
{
    type Out = Option<std::cmp::Ordering>;
    type Rets = (F, F);
    #[inline(always)]
    fn method_rrule(
        self,
        args: (CoDual<F, NoFData>,),
    ) -> (CoDual<Option<std::cmp::Ordering>, Option<NoFData>>, impl FnOnce(Option<NoRData>) -> (F, F))
    {
        let o = self.primal.partial_cmp(&args.0.primal);
        (CoDual::new(o, o.map(|_| NoFData)), |_| (F::ZERO, F::ZERO))
    }
}

macro_rules! int_methods {
    ($($t:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key("min") }, IntKey<$t>, (CoDual<$t, NoFData>,)> for CoDual<$t, NoFData> {
            type Out = $t;
            type Rets = (NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<$t, NoFData>,)) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData)) {
                (CoDual::new(self.primal.min(args.0.primal), NoFData), |_| (NoRData, NoRData))
            }
        }
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key("max") }, IntKey<$t>, (CoDual<$t, NoFData>,)> for CoDual<$t, NoFData> {
            type Out = $t;
            type Rets = (NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<$t, NoFData>,)) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData)) {
                (CoDual::new(self.primal.max(args.0.primal), NoFData), |_| (NoRData, NoRData))
            }
        }
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key("pow") }, IntKey<$t>, (CoDual<u32, NoFData>,)> for CoDual<$t, NoFData> {
            type Out = $t;
            type Rets = (NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<u32, NoFData>,)) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData)) {
                (CoDual::new(self.primal.pow(args.0.primal), NoFData), |_| (NoRData, NoRData))
            }
        }
    )*};
}

int_methods!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// The rules of the integer methods with no derivative, one family at a time (the list is
/// `keys::integer_method_families`, shared with the other mode).
macro_rules! int_more_methods {
    (@clamp $t:ty) => {
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key("clamp") }, IntKey<$t>, (CoDual<$t, NoFData>, CoDual<$t, NoFData>)> for CoDual<$t, NoFData> {
            type Out = $t;
            type Rets = (NoRData, NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<$t, NoFData>, CoDual<$t, NoFData>)) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData)) {
                (CoDual::new(self.primal.clamp(args.0.primal, args.1.primal), NoFData), |_| (NoRData, NoRData, NoRData))
            }
        }
    };
    (@binary $t:ty, $out:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key(stringify!($name)) }, IntKey<$t>, (CoDual<$t, NoFData>,)> for CoDual<$t, NoFData> {
            type Out = $out;
            type Rets = (NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<$t, NoFData>,)) -> (CoDual<$out, NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData)) {
                (CoDual::new(self.primal.$name(args.0.primal), NoFData), |_| (NoRData, NoRData))
            }
        }
    )*};
    (@checked $t:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key(stringify!($name)) }, IntKey<$t>, (CoDual<$t, NoFData>,)> for CoDual<$t, NoFData> {
            type Out = Option<$t>;
            type Rets = (NoRData, NoRData);
            #[inline(always)]
            fn method_rrule(self, args: (CoDual<$t, NoFData>,)) -> (CoDual<Option<$t>, Option<NoFData>>, impl FnOnce(Option<NoRData>) -> (NoRData, NoRData)) {
                let y = self.primal.$name(args.0.primal);
                (CoDual::new(y, y.map(|_| NoFData)), |_| (NoRData, NoRData))
            }
        }
    )*};
    (@unary $t:ty, $out:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key(stringify!($name)) }, IntKey<$t>, ()> for CoDual<$t, NoFData> {
            type Out = $out;
            type Rets = (NoRData,);
            #[inline(always)]
            fn method_rrule(self, _: ()) -> (CoDual<$out, NoFData>, impl FnOnce(NoRData) -> (NoRData,)) {
                (CoDual::new(self.primal.$name(), NoFData), |_| (NoRData,))
            }
        }
    )*};
}

crate::keys::integer_method_families!(int_more_methods);

macro_rules! int_abs {
    ($($t:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodRrule<{ method_key("abs") }, IntKey<$t>, ()> for CoDual<$t, NoFData> {
            type Out = $t;
            type Rets = (NoRData,);
            #[inline(always)]
            fn method_rrule(self, _: ()) -> (CoDual<$t, NoFData>, impl FnOnce(NoRData) -> (NoRData,)) {
                (CoDual::new(self.primal.abs(), NoFData), |_| (NoRData,))
            }
        }
    )*};
}

int_abs!(i8, i16, i32, i64, i128, isize);

// ---------------------------------------------------------------------------------------------
// Typing the adjoints of generated code.

/// A zero-sized token naming the rdata type of a codual local: generated code keeps one beside
/// each local so that the local's adjoint can be given the local's rdata type. It names the
/// rdata type, not the primal one, so that it holds no lifetime of a borrowed argument (the
/// rdata of any reference is `NoRData`).
#[inline(always)]
pub fn marker<P: HasRData, F>(_: &CoDual<P, F>) -> std::marker::PhantomData<fn() -> P::RData> {
    std::marker::PhantomData
}

/// The rdata type of what a codual holds as its primal: a primal type's own, or `NoRData` for a
/// handle (the primal of a `&mut` argument in a reverse rule).
pub trait HasRData {
    /// The rdata type.
    type RData;
}

impl<P: Primal> HasRData for P {
    type RData = P::RData;
}

impl<T> HasRData for crate::shared::SharedVec<T> {
    type RData = NoRData;
}

impl<T, const N: usize> HasRData for crate::shared::SharedArray<T, N> {
    type RData = NoRData;
}

impl<T> HasRData for crate::shared::SharedCell<T> {
    type RData = NoRData;
}

impl<T> HasRData for crate::shared::SharedRef<T> {
    type RData = NoRData;
}

/// A zero-sized token naming the primal type of a codual (for the high-level API).
#[inline(always)]
pub fn primal_marker<P, F>(_: &CoDual<P, F>) -> std::marker::PhantomData<fn() -> P> {
    std::marker::PhantomData
}

/// The zero adjoint of a local whose rdata type `R` the marker names.
#[inline(always)]
pub fn zero_of<R: ZeroRData>(_: std::marker::PhantomData<fn() -> R>) -> R {
    R::zero()
}

/// The arguments a call of a derived `NAME_rrule_wrt` computes gradients for: bit `k` of `M`
/// for argument `k` (counted from 0); arguments from the 65th on always get one. `NAME_rrule`
/// is `NAME_rrule_wrt` with every bit set; `value_and_gradient!` clears the bits of the
/// arguments written `Const(..)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wrt<const M: u64>;

/// Implemented by the marker `NAME__order` beside a `#[differentiable]` free function whose
/// reverse rule is generic over the float (the function is generic over `T: Float`, or marked
/// `second_order`): what a `second_order` function may call.
#[diagnostic::on_unimplemented(
    message = "`second_order` needs each function it calls to have a reverse rule generic over the float, and this one's is over `f64` only (`{Self}`)",
    label = "this function's reverse rule cannot run on dual numbers",
    note = "mark the called function `#[differentiable(second_order)]` too, or write it generic over `T: Float` (`fn g<T: Float>(x: &[T]) -> T`): its reverse rule is then generic over the float"
)]
pub trait FloatGeneric {}

/// Checks, in the reverse rule of a `second_order` function's twin, that a function it calls
/// has a reverse rule generic over the float (see [`FloatGeneric`]).
#[inline(always)]
pub fn second_order_callee<M: FloatGeneric>() {}

/// Whether argument `k` gets a gradient under the mask `mask` (see [`Wrt`]). The mask is a
/// constant of each instance of a rule, so the adjoint code this guards is removed by the
/// compiler where it is false.
#[inline(always)]
pub const fn live(mask: u64, k: u32) -> bool {
    k >= 64 || (mask >> k) & 1 == 1
}

/// The rdata a pullback returns for argument `k`: its adjoint, or zero when it gets no
/// gradient (so that the adjoint's accumulation is dead code).
#[inline(always)]
pub fn wrt_rdata<R: ZeroRData>(live: bool, r: R) -> R {
    if live { r } else { R::zero() }
}

// ---------------------------------------------------------------------------------------------
// Buffers read in derived code.

/// A codual buffer whose elements can be read on the primal (with no derivative): every
/// buffer [`AsRead`] takes, and a constant array (`const W: [f64; 3]`, held by value with no
/// shadow) read where nothing is differentiated through it (`W[k]`, `W.len()`, `W.iter()`).
#[diagnostic::on_unimplemented(
    message = "reverse mode reads `{Self}` as a buffer (indexed, `len()`, `clone()`, iterated), which it is not",
    label = "read here as a `Vec`, slice or array",
    note = "a nalgebra or ndarray matrix is read by its own rules only where the function's text shows it is one: declare the variable's type (`let h: DMatrix<f64> = g(x);`) when it is the result of a call"
)]
pub trait ReadPrimal<T: Primal> {
    /// The buffer type behind the reference.
    type S: crate::rules::buffer::ReadBuffer<T> + ?Sized;
    /// The buffer, without its shadow.
    fn buffer(&self) -> &Self::S;
    /// The buffer's length (without touching the shadow).
    #[inline(always)]
    fn read_len(&self) -> usize {
        crate::rules::buffer::ReadBuffer::len(self.buffer())
    }
    /// Element `i` (without touching the shadow).
    #[inline(always)]
    fn read_at(&self, i: usize) -> T
    where
        T: Copy,
    {
        crate::rules::buffer::ReadBuffer::with_slice(self.buffer(), |s| s[i])
    }
}

/// A codual buffer that can be read: gives the buffer rules a `CoDual<&S, SharedVec<T>>` with
/// `S` free of the borrow's lifetime, so that their pullbacks capture no borrow.
#[diagnostic::on_unimplemented(
    message = "reverse mode reads `{Self}` as a buffer (indexed, `len()`, `clone()`, iterated), which it is not",
    label = "read here as a `Vec`, slice or array",
    note = "a nalgebra or ndarray matrix is read by its own rules only where the function's text shows it is one: declare the variable's type (`let h: DMatrix<f64> = g(x);`) when it is the result of a call"
)]
pub trait AsRead<T: Primal>: ReadPrimal<T> {
    /// The shadow.
    fn shadow(&self) -> &crate::shared::SharedVec<T::Tangent>;
    /// The buffer by reference, with (a clone of) its shadow.
    #[inline(always)]
    fn as_read(&self) -> CoDual<&Self::S, crate::shared::SharedVec<T::Tangent>> {
        CoDual::new(self.buffer(), self.shadow().clone())
    }
}

/// `AsRead` for a codual whose primal is the buffer (`by_value`) or a reference to it.
macro_rules! as_read_impls {
    ($([$($g:tt)*] $primal:ty => $s:ty, $by:tt;)*) => {$(
        impl<$($g)*> ReadPrimal<T> for CoDual<$primal, crate::shared::SharedVec<T::Tangent>> {
            type S = $s;
            #[inline(always)]
            fn buffer(&self) -> &$s {
                as_read_impls!(@buffer self $by)
            }
        }
        impl<$($g)*> AsRead<T> for CoDual<$primal, crate::shared::SharedVec<T::Tangent>> {
            #[inline(always)]
            fn shadow(&self) -> &crate::shared::SharedVec<T::Tangent> {
                &self.fdata
            }
        }
    )*};
    (@buffer $self:ident ref) => { $self.primal };
    (@buffer $self:ident value) => { &$self.primal };
    (@buffer $self:ident array) => { $self.primal.as_shared_vec() };
}

as_read_impls! {
    [T: Primal] &[T] => [T], ref;
    [T: Primal] &Vec<T> => Vec<T>, ref;
    [T: Primal, const N: usize] &[T; N] => [T; N], ref;
    [T: Primal] Vec<T> => Vec<T>, value;
    [T: Primal] crate::shared::SharedVec<T> => crate::shared::SharedVec<T>, value;
    [T: Primal, const N: usize] crate::shared::SharedArray<T, N> => crate::shared::SharedVec<T>, array;
}

/// A constant array held by value (`rev::constant(W)` of `const W: [f64; 3]`), which has no
/// shadow: read on the primal only.
impl<T: Primal, const N: usize> ReadPrimal<T> for CoDual<[T; N], [T::FData; N]> {
    type S = [T; N];
    #[inline(always)]
    fn buffer(&self) -> &[T; N] {
        &self.primal
    }
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn as_read<T: Primal, B: AsRead<T>>(
    b: &B,
) -> CoDual<&B::S, crate::shared::SharedVec<T::Tangent>> {
    b.as_read()
}

/// Element `i` of a codual buffer, however it is held (a load whose pullback derived code
/// writes inline: see [`shadow_add`]).
#[inline(always)]
pub fn read_at<T: Primal + Copy, B: ReadPrimal<T>>(b: &B, i: usize) -> T {
    b.read_at(i)
}

/// The shadow of a codual buffer (an `Rc` clone), captured once per call by derived code.
#[inline(always)]
pub fn shadow_of<T: Primal, B: AsRead<T>>(b: &B) -> crate::shared::SharedVec<T::Tangent> {
    b.shadow().clone()
}

/// The shadow of a buffer built in the body, captured into a slot when the buffer was made
/// (see [`shadow_of`]); a buffer never made (on a path the call did not take) has no loads to
/// take adjoints from, so an empty shadow stands in for it.
#[inline(always)]
pub fn captured_shadow<D>(
    slot: Option<crate::shared::SharedVec<D>>,
) -> crate::shared::SharedVec<D> {
    slot.unwrap_or_else(|| crate::shared::SharedVec::from_vec(Vec::new()))
}

/// `shadow[i] += r`: the adjoint of a load `x[i]` (nothing at all for a buffer of integers or
/// `bool`s, whose shadow holds `NoTangent`s).
#[inline(always)]
pub fn shadow_add<D: crate::element::AddRData<R>, R>(
    shadow: &crate::shared::SharedVec<D>,
    i: usize,
    r: R,
) {
    if std::mem::size_of::<D>() != 0 {
        shadow.with_mut(|s| s[i].add_rdata(r));
    }
}

/// A shared borrow of a buffer built in the body (held through a handle), taken once before a
/// loop that only reads it, so that its loads borrow nothing per element ([`guarded_at`]).
#[inline(always)]
pub fn read_guard<T: Primal, B: AsRead<T, S = crate::shared::SharedVec<T>>>(
    b: &B,
) -> std::cell::Ref<'_, Vec<T>> {
    b.buffer().borrow()
}

/// Element `i` through a [`read_guard`].
#[inline(always)]
pub fn guarded_at<T: Copy>(g: &[T], i: usize) -> T {
    g[i]
}

/// A mutable borrow of a buffer's shadow, taken once before a loop whose only use of the
/// shadow is to add loads' adjoints into it ([`guarded_add`]).
#[inline(always)]
pub fn shadow_guard<D>(shadow: &crate::shared::SharedVec<D>) -> std::cell::RefMut<'_, Vec<D>> {
    shadow.borrow_mut()
}

/// `shadow[i] += r` through a [`shadow_guard`] (nothing for a shadow of `NoTangent`s).
#[inline(always)]
pub fn guarded_add<D: crate::element::AddRData<R>, R>(g: &mut [D], i: usize, r: R) {
    if std::mem::size_of::<D>() != 0 {
        g[i].add_rdata(r);
    }
}

/// The length of a codual buffer, however it is held: `len()` has derivative zero, so derived
/// code computes it on the primal, with no rule and no tape.
#[inline(always)]
pub fn len_of<T: Primal, B: ReadPrimal<T>>(b: &B) -> usize {
    b.read_len()
}

/// Element `j` of row `i` of a buffer of rows read with no derivative (`C[i][j]` of a constant
/// table `const C: [[f64; 2]; 2]`).
#[inline(always)]
pub fn read2_at<V, B>(b: &B, i: usize, j: usize) -> V::Elem
where
    V: Primal + crate::rules::buffer::Row,
    V::Elem: Copy,
    B: ReadPrimal<V>,
{
    crate::rules::buffer::ReadBuffer::with_slice(b.buffer(), |s| s[i].row()[j])
}

/// `x.iter().sum()` of a buffer of integers, however it is held: no derivative, so derived code
/// computes it on the primal.
#[inline(always)]
pub fn sum_of<T: Primal + Copy + std::iter::Sum, B: ReadPrimal<T>>(b: &B) -> T {
    crate::rules::buffer::ReadBuffer::with_slice(b.buffer(), |s| s.iter().copied().sum())
}

/// A codual local passed on as an argument: cloned (a copy for values, an `Rc` increment for
/// shadows), because a codual of a reference is not `Copy` even where the reference is.
#[inline(always)]
pub fn pass<P: Clone, F: Clone>(x: &CoDual<P, F>) -> CoDual<P, F> {
    x.clone()
}

/// A `&mut` argument passed on to a call (see [`FromMutArgument`]).
pub struct MutArg<H, S>(CoDual<H, S>);

impl<H, S> MutArg<H, S> {
    /// Wraps the argument's handle and shadow.
    #[inline(always)]
    pub fn new(x: CoDual<H, S>) -> Self {
        MutArg(x)
    }

    /// The callee's parameter.
    #[inline(always)]
    pub fn into_param<P: FromMutArgument<H, S>>(self) -> P {
        P::from_mut_argument(self.0)
    }
}

/// A parameter a `&mut` argument can be passed to in reverse mode: a `&mut` parameter (the
/// argument's handle and shadow). A `&` parameter is refused with what to write instead, since
/// the handle cannot be borrowed for the call without saying so (`&*v`, a loan).
#[diagnostic::on_unimplemented(
    message = "reverse mode cannot pass a `&mut` argument on to a `&` parameter as it is",
    label = "a `&mut` argument passed to a `&` parameter",
    note = "reborrow it explicitly, `f(&*v)`: reverse mode lends it to the call with its shadow"
)]
pub trait FromMutArgument<H, S> {
    /// The parameter.
    fn from_mut_argument(x: CoDual<H, S>) -> Self;
}

#[diagnostic::do_not_recommend]
impl<H, S> FromMutArgument<H, S> for CoDual<H, S> {
    #[inline(always)]
    fn from_mut_argument(x: CoDual<H, S>) -> Self {
        x
    }
}

/// A local array (`let mut s = [a, b];`) passed as `&mut s` to a `&mut [T]` parameter: the
/// slice sees the array's own handle and shadow, so the callee's writes are the array's.
#[diagnostic::do_not_recommend]
impl<T, const N: usize, D>
    FromMutArgument<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<D>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>>
{
    #[inline(always)]
    fn from_mut_argument(
        x: CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<D>>,
    ) -> Self {
        CoDual::new(x.primal.as_shared_vec().clone(), x.fdata)
    }
}

// ---------------------------------------------------------------------------------------------
// `#[differentiable(debug)]` in reverse mode.

/// The check `#[differentiable(debug)]` inserts in the forward sweep after each assignment of a
/// float: panics, naming the variable and the line, if the value is not finite. Chosen over
/// forward mode's [`DebugCheckFallback`](crate::forward::DebugCheckFallback), the no-op every
/// other value takes, by method resolution when the value is a float's codual.
pub trait DebugCheck {
    /// Panics if the value is not finite.
    fn mooncake_debug_check(&self, what: &str, line: u32);
}

impl<F: Float> DebugCheck for CoDual<F, NoFData> {
    #[track_caller]
    fn mooncake_debug_check(&self, what: &str, line: u32) {
        if !self.primal.is_finite() {
            panic!(
                "#[differentiable(debug)]: {what} (line {line}) is not finite in reverse mode's forward sweep: value {}",
                self.primal
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Functions reverse mode does not cover yet.

/// Implemented by nothing: the bound of the stub `NAME_rrule` that `#[differentiable]` emits
/// for a function whose body reverse mode does not cover yet, so that calling it is a compile
/// error naming the reason (`Reason` is one of the types in [`unsupported`]).
#[diagnostic::on_unimplemented(
    message = "reverse mode does not cover this function yet: it uses {Reason}",
    label = "no reverse-mode rule for this function yet",
    note = "forward mode covers it (`value_and_derivative!`); if a function calling it only needs forward mode, mark the caller `#[differentiable(forward_only)]`; the README's feature table lists what reverse mode covers today"
)]
pub trait ReverseModeNotYet<Reason> {}

/// The reasons a body is outside reverse mode so far, named so that the compile error reads.
pub mod unsupported {
    /// Writes through indices, fields or references of anything but a plain value.
    pub struct WritesThroughPlaces;
    /// A borrow kept in a local (`let r = &v;`), a borrow of an element or of a field of a
    /// value passed on, or a call of a `std` function other than `Vec::new` /
    /// `Vec::with_capacity`.
    pub struct BorrowsInLocalsOrStdCalls;
    /// An element of an element, `a[i][j]` (arrays of arrays, `Vec<Vec<f64>>`): nested
    /// buffers are not covered yet; a flat buffer indexed `a[i * n + j]` is.
    pub struct NestedIndexing;
    /// A method of a user type called on an element of a buffer (`bodies[i].energy()`, a
    /// `&[S]` of `#[derive(Tangent)]` structs): bind the element's fields, or pass the buffer
    /// and the index to a function; forward mode covers it.
    pub struct MethodsOfElements;
    /// A method of a type with a lifetime parameter (`impl<'a> Data<'a>`, a struct holding
    /// `x: &'a [f64]`): write it as a free function taking the struct by reference
    /// (`fn cost(d: &Data, p: f64)`), which reverse mode covers; forward mode covers both.
    pub struct MethodsOfTypesWithLifetimes;
    /// A buffer of references as an argument (`rows: &[&[f64]]`, `Vec<&[f64]>`): pass the
    /// rows as a `&[Vec<f64>]` or a flat buffer with a row length; forward mode covers it.
    pub struct BuffersOfBorrowedRows;
    /// A tuple holding a borrowed buffer as an argument (`p: (&[f64], &[f64])`): pass the
    /// buffers as arguments of their own; forward mode covers it.
    pub struct TuplesOfBorrowedBuffers;
}

// ---------------------------------------------------------------------------------------------
// Memory written in derived code: buffers and scalars behind `&mut` (seen through handles).

/// A codual buffer that can be written: its handle and shadow (cloning aliases).
pub trait AsWrite<T: Primal> {
    /// The handle and the shadow.
    fn as_write(&self)
    -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>;
    /// The handle and the shadow, borrowed.
    fn parts(&self) -> (&crate::shared::SharedVec<T>, &crate::shared::SharedVec<T::Tangent>);
}

impl<T: Primal> AsWrite<T>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>
{
    #[inline(always)]
    fn as_write(
        &self,
    ) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>> {
        self.clone()
    }
    #[inline(always)]
    fn parts(&self) -> (&crate::shared::SharedVec<T>, &crate::shared::SharedVec<T::Tangent>) {
        (&self.primal, &self.fdata)
    }
}

impl<T: Primal, const N: usize> AsWrite<T>
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>
{
    #[inline(always)]
    fn as_write(
        &self,
    ) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>> {
        CoDual::new(self.primal.as_shared_vec().clone(), self.fdata.clone())
    }
    #[inline(always)]
    fn parts(&self) -> (&crate::shared::SharedVec<T>, &crate::shared::SharedVec<T::Tangent>) {
        (self.primal.as_shared_vec(), &self.fdata)
    }
}

/// What the reverse sweep needs to undo `x[i] = v` on a buffer built in the body (see
/// [`store_at`]): the index, and the element and its shadow as they were.
#[derive(Clone, Copy, Debug)]
pub struct Stored<T, D> {
    i: usize,
    old: T,
    old_d: D,
}

/// `x[i] = v` on a buffer held through a handle that derived code captured once (a buffer built
/// in the body): the rule of [`crate::rules::buffer::index_set_rrule`] without its pullback,
/// whose work [`unstore_at`] does inline from the returned record, so that the tape holds plain
/// data (no closure, no clone of the handles).
#[inline(always)]
pub fn store_at<T: crate::element::Element, B: AsWrite<T>>(
    b: &B,
    i: usize,
    v: CoDual<T, NoFData>,
) -> Stored<T, T::Tangent> {
    let (x, dx) = b.parts();
    let old = x.set_primal(i, v.primal);
    let old_d = dx.zero_at(i, T::ZERO_TANGENT);
    Stored { i, old, old_d }
}

/// The record of a store into a buffer built in the body from a constructor, whose shadow is
/// zero throughout the forward sweep (the macro proves it): the index and the element
/// overwritten. The reverse is [`unstore_zero_at`].
pub struct Overwritten<T> {
    i: usize,
    old: T,
}

/// `x[i] = v` into a buffer whose shadow is zero (see [`Overwritten`]): the shadow is left as
/// it is, and the record holds no shadow.
#[inline(always)]
pub fn store_zero_at<T: crate::element::Element, B: AsWrite<T>>(
    b: &B,
    i: usize,
    v: CoDual<T, NoFData>,
) -> Overwritten<T> {
    let old = b.parts().0.set_primal(i, v.primal);
    Overwritten { i, old }
}

/// The reverse of [`store_zero_at`]: the gradient of the value written (what the shadow
/// gathered at `i`, which goes back to zero), with the element put back.
#[inline(always)]
pub fn unstore_zero_at<T: crate::element::Element>(
    dx: &crate::shared::SharedVec<T::Tangent>,
    x: &crate::shared::SharedVec<T>,
    s: Overwritten<T>,
) -> T::RData {
    let v_bar = T::tangent_rdata(dx.zero_at(s.i, T::ZERO_TANGENT));
    x.set_primal(s.i, s.old);
    v_bar
}

/// [`store_zero_at`] through a [`record_guard`].
#[inline(always)]
pub fn guarded_store_zero_at<T: crate::element::Element>(
    g: &mut RecordGuard<'_, T, T::Tangent>,
    i: usize,
    v: CoDual<T, NoFData>,
) -> Overwritten<T> {
    let old = std::mem::replace(&mut g.x[i], v.primal);
    Overwritten { i, old }
}

/// [`store_zero_at`] through a [`write_guard`] (a loop whose stores' records hold no shadow).
#[inline(always)]
pub fn slice_store_zero_at<T: Copy>(
    g: &mut [T],
    i: usize,
    v: CoDual<T, NoFData>,
) -> Overwritten<T> {
    let old = std::mem::replace(&mut g[i], v.primal);
    Overwritten { i, old }
}

/// [`unstore_zero_at`] with the shadow through a [`shadow_guard`].
#[inline(always)]
pub fn guarded_unstore_zero_at<T: crate::element::Element>(
    g: &mut [T::Tangent],
    x: &crate::shared::SharedVec<T>,
    s: Overwritten<T>,
) -> T::RData {
    let v_bar = T::tangent_rdata(std::mem::replace(&mut g[s.i], T::ZERO_TANGENT));
    x.set_primal(s.i, s.old);
    v_bar
}

/// A store `x[i] = v` into a buffer built in the body that keeps no record: nothing has read
/// the buffer before it, so no pullback reads the element it overwrites and the element's
/// shadow is still zero (the macro proves both). The reverse is [`unstore_fresh`].
#[inline(always)]
pub fn store_fresh<T: crate::element::Element, B: AsWrite<T>>(
    b: &B,
    i: usize,
    v: CoDual<T, NoFData>,
) {
    b.parts().0.set_primal(i, v.primal);
}

/// The reverse of [`store_fresh`]: the gradient of the value written (what the shadow gathered
/// at `i`), with the shadow's element back at zero. `x` (the buffer) names the element type.
#[inline(always)]
pub fn unstore_fresh<T: crate::element::Element>(
    dx: &crate::shared::SharedVec<T::Tangent>,
    _x: &crate::shared::SharedVec<T>,
    i: usize,
) -> T::RData {
    T::tangent_rdata(dx.zero_at(i, T::ZERO_TANGENT))
}

/// A mutable borrow of a buffer built in the body, taken once before a loop whose only uses of
/// it are loads ([`guarded_at`]) and stores that keep no record ([`guarded_store`]).
#[inline(always)]
pub fn write_guard<T: Primal, B: AsWrite<T>>(b: &B) -> std::cell::RefMut<'_, Vec<T>> {
    b.parts().0.borrow_mut_unmarked()
}

/// [`store_fresh`] through a [`write_guard`].
#[inline(always)]
pub fn guarded_store<T: Copy>(g: &mut [T], i: usize, v: CoDual<T, NoFData>) {
    g[i] = v.primal;
}

/// [`unstore_fresh`] through a [`shadow_guard`].
#[inline(always)]
pub fn guarded_unstore<T: crate::element::Element>(
    g: &mut [T::Tangent],
    _x: &crate::shared::SharedVec<T>,
    i: usize,
) -> T::RData {
    T::tangent_rdata(std::mem::replace(&mut g[i], T::ZERO_TANGENT))
}

/// The reverse of [`store_at`]: the gradient of the value written (what the shadow gathered at
/// `i`), with the element and its shadow put back as they were. The shadow comes first, as in
/// [`guarded_unstore_at`], which a loop's guard on the shadow swaps in for it.
#[inline(always)]
pub fn unstore_at<T: crate::element::Element>(
    dx: &crate::shared::SharedVec<T::Tangent>,
    x: &crate::shared::SharedVec<T>,
    s: Stored<T, T::Tangent>,
) -> T::RData {
    let v_bar = T::tangent_rdata(dx.set(s.i, s.old_d));
    x.set_primal(s.i, s.old);
    v_bar
}

/// A buffer built in the body and its shadow, both borrowed mutably once before a loop whose
/// forward sweep only loads from the buffer and stores into it ([`record_guard`]): stores that
/// keep a record ([`guarded_store_at`]) read the old element and shadow through it, and loads
/// and stores that keep none see the buffer through `Deref`.
pub struct RecordGuard<'a, T, D> {
    x: std::cell::RefMut<'a, Vec<T>>,
    dx: std::cell::RefMut<'a, Vec<D>>,
}

impl<T, D> std::ops::Deref for RecordGuard<'_, T, D> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        &self.x
    }
}

impl<T, D> std::ops::DerefMut for RecordGuard<'_, T, D> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.x
    }
}

/// Borrows a buffer built in the body and its shadow once, for a loop (see [`RecordGuard`]).
#[inline(always)]
pub fn record_guard<T: Primal, B: AsWrite<T>>(b: &B) -> RecordGuard<'_, T, T::Tangent> {
    let (x, dx) = b.parts();
    // The shadow is written only with zeros through the guard (`guarded_store_at`).
    RecordGuard { x: x.borrow_mut_unmarked(), dx: dx.borrow_mut_unmarked() }
}

/// [`store_at`] through a [`record_guard`].
#[inline(always)]
pub fn guarded_store_at<T: crate::element::Element>(
    g: &mut RecordGuard<'_, T, T::Tangent>,
    i: usize,
    v: CoDual<T, NoFData>,
) -> Stored<T, T::Tangent> {
    let old = std::mem::replace(&mut g.x[i], v.primal);
    let old_d = std::mem::replace(&mut g.dx[i], T::ZERO_TANGENT);
    Stored { i, old, old_d }
}

/// [`unstore_at`] with the shadow through a [`shadow_guard`] (the element is put back through
/// the handle: in the reverse sweep the buffer's loads may be borrowing it).
#[inline(always)]
pub fn guarded_unstore_at<T: crate::element::Element>(
    g: &mut [T::Tangent],
    x: &crate::shared::SharedVec<T>,
    s: Stored<T, T::Tangent>,
) -> T::RData {
    let v_bar = T::tangent_rdata(std::mem::replace(&mut g[s.i], s.old_d));
    x.set_primal(s.i, s.old);
    v_bar
}

/// The handle of a buffer built in the body, captured into a slot when it is made (see
/// [`captured_shadow`]).
#[inline(always)]
pub fn primal_handle<T: Primal, B: AsWrite<T>>(b: &B) -> crate::shared::SharedVec<T> {
    b.parts().0.clone()
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn as_write<T: Primal, B: AsWrite<T>>(
    b: &B,
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>> {
    b.as_write()
}

/// The reverse rule of reading `*x` through a `&mut` scalar's handle: the pullback adds the
/// value's gradient into the shadow.
#[inline]
pub fn cell_load_rrule<T: Float>(
    x: &CoDual<crate::shared::SharedCell<T>, crate::shared::SharedCell<T>>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T>) {
    let shadow = x.fdata.clone();
    (CoDual::new(x.primal.get(), NoFData), move |dy: T| {
        shadow.add(dy);
        (NoRData,)
    })
}

/// The reverse rule of writing `*x = v` through a `&mut` scalar's handle (seed 000, mutation):
/// the forward pass saves the old value and shadow, writes, and zeroes the shadow; the pullback
/// reads `v̄` from the shadow and restores both.
#[inline]
pub fn cell_store_rrule<T: Float>(
    x: &CoDual<crate::shared::SharedCell<T>, crate::shared::SharedCell<T>>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T) + use<T>) {
    let (cell, shadow) = (x.primal.clone(), x.fdata.clone());
    let old = cell.set(v.primal);
    let old_shadow = shadow.set(T::ZERO);
    (CoDual::new((), NoFData), move |_| {
        let dv = shadow.set(old_shadow);
        cell.set(old);
        (NoRData, dv)
    })
}

/// A store `*x = v` (or `p.field = v`) through a handle, whatever the handle holds: a scalar
/// ([`cell_store_rrule`]) or a whole buffer, replaced by a built buffer or a `Vec` value. The
/// pullback restores the old contents and shadow and sends the gradient of the stored value to
/// `v`'s shadow (buffers) or rdata (scalars).
#[diagnostic::on_unimplemented(
    message = "reverse mode cannot yet store a value of this kind through a `&mut` reference or into a field behind one (`{Self}`)",
    label = "stored here",
    note = "stores through `&mut` are supported for numbers, integers, whole buffers and `#[derive(Tangent)]` structs; for an `Option`, an enum or a `String` behind `&mut`, return the new value instead, or hold it in a local and store numbers"
)]
pub trait StoreRule<V> {
    /// The stored value's rdata.
    type VRData;
    /// `(unit, pullback)`.
    #[allow(clippy::type_complexity)]
    fn store_rrule(
        &self,
        v: V,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, Self::VRData) + use<Self, V>);
}

/// The handle of a `#[derive(Tangent)]` struct (emitted by the derive beside [`HandleOf`]): a
/// whole struct stored into a place reached through `&mut` (`self.pos = p + v * dt` of a field
/// `pos: V3` of `&mut self`) has a rule of its own ([`value_store_rrule`]).
pub trait StructHandle: HandleOf {}

#[diagnostic::do_not_recommend]
impl<H: StructHandle> StoreRule<CoDual<H::Primal, <H::Primal as Primal>::FData>>
    for CoDual<H, <H::Primal as Primal>::Shadow>
{
    type VRData = <H::Primal as Primal>::RData;
    #[inline]
    fn store_rrule(
        &self,
        v: CoDual<H::Primal, <H::Primal as Primal>::FData>,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, Self::VRData) + use<H>) {
        value_store_rrule(self, v)
    }
}

/// `p.field = v` (or `*p = v`) of a struct value through a handle: the value written into the
/// handle in place and the shadow zeroed, the old value and shadow kept; the pullback gives the
/// shadow's gradient to `v` (its fdata part added into `v`'s fdata, its rdata part returned)
/// and puts the old value and shadow back.
///
/// # Panics
/// If the value's buffers have other lengths than the old value's (a shadow is reused in place).
#[allow(clippy::type_complexity)]
pub fn value_store_rrule<H: HandleOf>(
    h: &CoDual<H, <H::Primal as Primal>::Shadow>,
    v: CoDual<H::Primal, <H::Primal as Primal>::FData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, <H::Primal as Primal>::RData) + use<H>)
{
    const SHAPE: &str = "a struct stored through `&mut` keeps the lengths of its buffers";
    let (mut handle, mut shadow) = (h.primal.clone(), h.fdata.clone());
    let old = <H::Primal as crate::tangent::FromHandle>::from_handle(&handle);
    let old_d = <H::Primal as Primal>::shadow_to_tangent(&shadow);
    v.primal.reset_handle(&mut handle).expect(SHAPE);
    v.primal.reset_shadow(&mut shadow).expect(SHAPE);
    let fd = v.fdata;
    let pullback = move |_: NoRData| {
        let g = <H::Primal as Primal>::shadow_to_tangent(&shadow);
        old.reset_shadow(&mut shadow).expect(SHAPE);
        crate::tangent::FData::increment_from(
            &shadow,
            &<H::Primal as Primal>::tangent_to_shadow(old_d),
        );
        old.reset_handle(&mut handle).expect(SHAPE);
        let (f, r) = <H::Primal as Primal>::split_tangent(g);
        crate::tangent::FData::increment_from(&fd, &f);
        (NoRData, r)
    };
    (CoDual::new((), NoFData), pullback)
}

impl<T: Float> StoreRule<CoDual<T, NoFData>>
    for CoDual<crate::shared::SharedCell<T>, crate::shared::SharedCell<T>>
{
    type VRData = T;
    #[inline(always)]
    fn store_rrule(
        &self,
        v: CoDual<T, NoFData>,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T) + use<T>) {
        cell_store_rrule(self, v)
    }
}

macro_rules! int_cell_stores {
    ($($t:ty),*) => {$(
        /// `*n = v` through a `&mut` integer's handle: the pullback puts the old value back.
        impl StoreRule<CoDual<$t, NoFData>> for CoDual<crate::shared::SharedCell<$t>, NoFData> {
            type VRData = NoRData;
            #[inline(always)]
            fn store_rrule(
                &self,
                v: CoDual<$t, NoFData>,
            ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>) {
                let cell = self.primal.clone();
                let old = cell.set(v.primal);
                (CoDual::new((), NoFData), move |_| {
                    cell.set(old);
                    (NoRData, NoRData)
                })
            }
        }
    )*};
}

int_cell_stores!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// A whole buffer stored through a handle: the new contents (`new`) and the shadow they came
/// with (`from`), which the pullback increments.
fn buffer_store<T: crate::element::Element>(
    x: &CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>,
    new: Vec<T>,
    from: crate::shared::SharedVec<T::Tangent>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
    let (handle, shadow) = (x.primal.clone(), x.fdata.clone());
    let n = new.len();
    let old = handle.replace(new);
    let old_shadow = shadow.replace(vec![T::ZERO_TANGENT; n]);
    (CoDual::new((), NoFData), move |_| {
        let g = shadow.replace(old_shadow);
        from.with_mut(|d| {
            assert_eq!(d.len(), g.len(), "mooncake: a stored buffer's shadow changed length");
            d.iter_mut().zip(g).for_each(|(d, g)| T::add_rdata(d, T::tangent_rdata(g)));
        });
        handle.replace(old);
        (NoRData, NoRData)
    })
}

impl<T: crate::element::Element>
    StoreRule<CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>
{
    type VRData = NoRData;
    fn store_rrule(
        &self,
        v: CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
        buffer_store(self, v.primal.with(<[T]>::to_vec), v.fdata)
    }
}

impl<T: crate::element::Element> StoreRule<CoDual<Vec<T>, crate::shared::SharedVec<T::Tangent>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>
{
    type VRData = NoRData;
    fn store_rrule(
        &self,
        v: CoDual<Vec<T>, crate::shared::SharedVec<T::Tangent>>,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
        buffer_store(self, v.primal, v.fdata)
    }
}

/// The free-function form generated code calls.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn store_rrule<S: StoreRule<V>, V>(
    s: &S,
    v: V,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, S::VRData) + use<S, V>) {
    s.store_rrule(v)
}

// ---------------------------------------------------------------------------------------------
// Buffers built in derived code: held through handles from their creation.

/// A buffer a rule created, moved into a handle (no copy) so that later reads, writes and
/// `push`es can share it with the pullbacks that restore it.
#[inline(always)]
pub fn into_handle<T, D>(
    v: CoDual<Vec<T>, crate::shared::SharedVec<D>>,
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>> {
    CoDual::new(crate::shared::SharedVec::from_vec(v.primal), v.fdata)
}

/// As [`into_handle`], for a buffer of numbers a rule built (`vec![x; n]`, `x.to_vec()`): its
/// memory, if large, goes back to the thread's pool of large buffers when the rule is done
/// with it (see [`crate::shared::SharedVec::from_kept_vec`]), so that repeated gradients reuse
/// it instead of faulting its pages in again.
#[inline(always)]
pub fn into_kept_handle<T: 'static, D>(
    v: CoDual<Vec<T>, crate::shared::SharedVec<D>>,
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>> {
    CoDual::new(crate::shared::SharedVec::from_kept_vec(v.primal), v.fdata)
}

/// A buffer value moved into a handle (see [`hold_value`]): a `Vec` (its shadow kept, so
/// gradients flow through it as before), an array (a fresh zero shadow, read back as the
/// array's rdata by the pullback), or something already held (unchanged).
#[diagnostic::on_unimplemented(
    message = "reverse mode reads `{Self}` as a buffer (indexed, `len()`, grown), which it is not",
    label = "a value the function indexes or measures as a `Vec`, slice or array",
    note = "a nalgebra or ndarray matrix is read by its own rules only where the function's text shows it is one: declare the variable's type (`let h: DMatrix<f64> = g(x);`, `let z: Array1<f64> = x.dot(w);`) when it is the result of a call"
)]
pub trait Hold {
    /// The handle and its shadow.
    type Held;
    /// What the pullback needs to give the value its gradient back.
    type Link: HoldLink<RData = Self::RData>;
    /// The value's rdata.
    type RData;
    /// The value through a handle, and the link for the pullback.
    fn hold(self) -> (Self::Held, Self::Link);
}

/// What a pullback of [`Hold::hold`] keeps to give the value its rdata: a type of its own,
/// apart from the value's (which may borrow with a lifetime the pullback must not capture).
pub trait HoldLink {
    /// The value's rdata.
    type RData;
    /// The value's rdata, from what the handle's shadow gathered.
    fn rdata(self) -> Self::RData;
}

impl HoldLink for () {
    type RData = NoRData;
    #[inline(always)]
    fn rdata(self) -> NoRData {
        NoRData
    }
}

/// The link of an array held through a handle: the handle's shadow, read back as `N` rdata.
pub struct ArrayLink<T: Primal, const N: usize>(crate::shared::SharedVec<T::Tangent>);

impl<T: Primal, const N: usize> HoldLink for ArrayLink<T, N> {
    type RData = [T::RData; N];
    #[inline]
    fn rdata(self) -> [T::RData; N] {
        self.0.with(|s| std::array::from_fn(|k| T::split_tangent(s[k].clone()).1))
    }
}

impl<T, D> Hold for CoDual<Vec<T>, crate::shared::SharedVec<D>> {
    type Held = CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>>;
    type Link = ();
    type RData = NoRData;
    #[inline(always)]
    fn hold(self) -> (Self::Held, ()) {
        (into_handle(self), ())
    }
}

/// An array of numbers, or of arrays of numbers (`[[f64; 3]; 3]`, held as a buffer of rows).
impl<T: Primal + Copy, const N: usize> Hold for CoDual<[T; N], [T::FData; N]> {
    type Held = CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>;
    type Link = ArrayLink<T, N>;
    type RData = [T::RData; N];
    #[inline]
    fn hold(self) -> (Self::Held, Self::Link) {
        let shadow = crate::shared::SharedVec::from_vec(
            self.primal.iter().map(Primal::zero_tangent).collect(),
        );
        let held = CoDual::new(crate::shared::SharedArray::from_array(self.primal), shadow);
        let link = ArrayLink(held.fdata.clone());
        (held, link)
    }
}

/// `Hold` for what is held through a handle already: itself, with no link.
macro_rules! hold_handles {
    ($([$($g:tt)*] $primal:ty;)*) => {$(
        impl<$($g)*> Hold for CoDual<$primal, crate::shared::SharedVec<D>> {
            type Held = Self;
            type Link = ();
            type RData = NoRData;
            #[inline(always)]
            fn hold(self) -> (Self, ()) {
                (self, ())
            }
        }
    )*};
}

hold_handles! {
    [T, const N: usize, D] crate::shared::SharedArray<T, N>;
    [T, D] crate::shared::SharedVec<T>;
    // A borrowed slice taken out of a value (`Some(w) => w[i]` of `w: Option<&[f64]>`): read
    // where it is, as an argument slice is.
    ['a, T, D] &'a [T];
    ['a, T, D] &'a Vec<T>;
}

/// The forward half of the rule of holding a buffer value (a call's result, a field) through a
/// handle, which derived code does when the body indexes, measures or grows it: the buffer rules
/// read and write handles. Its pullback, [`hold_pullback`], returns the value's rdata (for an
/// array, what its handle's shadow gathered).
#[inline(always)]
pub fn hold_value<H: Hold>(x: H) -> (H::Held, H::Link) {
    x.hold()
}

/// The pullback of [`hold_value`], from its link alone: it captures nothing of the value's type,
/// so a borrowed value's lifetime does not reach the rule's pullback.
#[inline(always)]
pub fn hold_pullback<L: HoldLink>(link: L) -> impl FnOnce(NoRData) -> (L::RData,) + use<L> {
    move |_: NoRData| (link.rdata(),)
}

/// The rule of passing a buffer held through a handle by value to a call: a copy of it as the
/// value the callee takes (a `Vec` sharing the handle's shadow, or an array, whose rdata the
/// pullback adds into the shadow). See [`AsResult`].
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn release_rrule<T, S: AsResult<T>>(
    s: &S,
) -> (T, impl FnOnce(S::Ret) -> (S::Own,) + use<T, S>) {
    let (v, link) = s.as_result();
    (v, move |r: S::Ret| (S::return_adjoint(link, r),))
}

/// A buffer held through a handle that can be copied into a new handle of the same kind (see
/// [`copy_rrule`]).
pub trait CopyHandle: Sized {
    /// The element type.
    type T: crate::element::Element;
    /// A new handle holding a copy, with a fresh zero shadow, and the pullback that adds that
    /// shadow into this one's.
    #[allow(clippy::type_complexity)]
    fn copy_rrule(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<Self>);
}

impl<T: crate::element::Element> CopyHandle
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>
{
    type T = T;
    #[inline]
    fn copy_rrule(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<T>) {
        let (v, pb) = crate::rules::buffer::to_vec_rrule(self.as_read());
        (into_handle(v), pb)
    }
}

impl<T: crate::element::Element, const N: usize> CopyHandle
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>
{
    type T = T;
    #[inline]
    fn copy_rrule(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<T, N>) {
        let (v, pb) = crate::rules::buffer::to_vec_rrule(self.as_read());
        (CoDual::new(crate::shared::SharedArray::from_vec(v.primal), v.fdata), pb)
    }
}

/// A buffer of buffers or of structs held through a handle that can be copied element by
/// element into a new handle of the same kind (see [`values_copy_rrule`]): a `Vec` of rows or
/// values, or an array of arrays (`let mut m = a;` of `a: [[f64; 2]; 2]`).
pub trait ValuesCopy: Sized {
    /// The copy, and the pullback that adds its shadow into the original's.
    fn values_copy(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<Self>);
}

impl<T: Primal + Clone> ValuesCopy
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>>
{
    #[inline]
    fn values_copy(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<T>) {
        let (v, pb) = crate::rules::buffer::values_to_vec_rrule(self.as_read());
        (into_handle(v), pb)
    }
}

impl<T: Primal + Clone, const N: usize> ValuesCopy
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>
{
    #[inline]
    fn values_copy(&self) -> (Self, impl FnOnce(NoRData) -> (NoRData,) + use<T, N>) {
        let (v, pb) = crate::rules::buffer::values_to_vec_rrule(self.as_read());
        (CoDual::new(crate::shared::SharedArray::from_vec(v.primal), v.fdata), pb)
    }
}

/// The rule of copying a buffer of buffers or of structs held through a handle (`u = next;` of
/// `Vec<Vec<f64>>`s, `let mut m = a;` of an array of arrays, then written): a new handle holding
/// a copy with a fresh zero shadow, which the pullback adds into the original's, element by
/// element.
#[inline]
#[allow(clippy::type_complexity)]
pub fn values_copy_rrule<H: ValuesCopy>(h: &H) -> (H, impl FnOnce(NoRData) -> (NoRData,) + use<H>) {
    h.values_copy()
}

/// The rule of copying a buffer held through a handle (`let mut y = x;` of an array, then
/// written): a new handle with a fresh zero shadow, which the pullback adds into the
/// original's.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn copy_rrule<H: CopyHandle>(h: &H) -> (H, impl FnOnce(NoRData) -> (NoRData,) + use<H>) {
    h.copy_rrule()
}

/// An array built in the body (by the `Vec` rules), held through a handle that keeps its
/// length.
#[inline(always)]
pub fn into_array_handle<T, D, const N: usize>(
    v: CoDual<Vec<T>, crate::shared::SharedVec<D>>,
) -> CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<D>> {
    CoDual::new(crate::shared::SharedArray::from_vec(v.primal), v.fdata)
}

// ---------------------------------------------------------------------------------------------
// Fields of structs.

/// The reverse rule of reading a field of a struct seen through a reference (`p.b`, `p.rot`),
/// or the whole value (`match k { .. }` of `k: &E`): a copy of the value, whose fdata aliases
/// the buffers of the shadow (`Primal::fdata_of_shadow`), and a pullback that adds its rdata
/// into the shadow (`Primal::add_rdata_to_shadow`: in place for a scalar, nothing for an
/// integer).
#[inline(always)]
pub fn shadow_load_rrule<T: Primal + Clone>(
    value: &T,
    shadow: &T::Shadow,
) -> (CoDual<T, T::FData>, impl FnOnce(T::RData) + use<T>) {
    let (v, shadow) = (value.clone(), shadow.clone());
    (CoDual::new(value.clone(), value.fdata_of_shadow(&shadow)), move |r: T::RData| {
        v.add_rdata_to_shadow(&shadow, r)
    })
}

/// A handle through which reverse mode sees a value behind `&mut` (see `Primal::Handle`): the
/// value's type. Implemented for the scalars' `SharedCell`s and by `#[derive(Tangent)]` for
/// each struct's handle.
pub trait HandleOf: Clone {
    /// The type of the value the handle holds.
    type Primal: Primal<Handle = Self> + crate::tangent::FromHandle + Clone;
}

impl<T: Primal<Handle = crate::shared::SharedCell<T>> + crate::tangent::FromHandle + Copy> HandleOf
    for crate::shared::SharedCell<T>
{
    type Primal = T;
}

/// Values held through a shared reference cell: `Option`, `Result`, `String`, enums.
impl<T: Primal<Handle = crate::shared::SharedRef<T>> + crate::tangent::FromHandle + Clone> HandleOf
    for crate::shared::SharedRef<T>
{
    type Primal = T;
}

/// What an assertion of derived code sees of a value held through a handle: something that
/// dereferences to the value (`*m < 1.0` of `m: &mut f64`, `v[0]` and `v.len()` of a buffer).
pub trait PrimalView {
    /// The view.
    type View<'a>: std::ops::Deref
    where
        Self: 'a;
    /// The view.
    fn view(&self) -> Self::View<'_>;
}

/// A copy of a value, seen through `Deref` (see [`PrimalView`]).
pub struct ValueView<T>(T);

impl<T> std::ops::Deref for ValueView<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<H: HandleOf> PrimalView for H {
    type View<'a>
        = ValueView<H::Primal>
    where
        H: 'a;
    #[inline(always)]
    fn view(&self) -> ValueView<H::Primal> {
        ValueView(<H::Primal as crate::tangent::FromHandle>::from_handle(self))
    }
}

impl<T> PrimalView for crate::shared::SharedVec<T> {
    type View<'a>
        = std::cell::Ref<'a, Vec<T>>
    where
        T: 'a;
    #[inline(always)]
    fn view(&self) -> std::cell::Ref<'_, Vec<T>> {
        self.borrow()
    }
}

impl<T, const N: usize> PrimalView for crate::shared::SharedArray<T, N> {
    type View<'a>
        = std::cell::Ref<'a, Vec<T>>
    where
        T: 'a;
    #[inline(always)]
    fn view(&self) -> std::cell::Ref<'_, Vec<T>> {
        self.as_shared_vec().borrow()
    }
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn view<P: PrimalView>(p: &P) -> P::View<'_> {
    p.view()
}

/// The reverse rule of `*x` for `x: &T` (a number behind a shared reference): a copy of the
/// value, and a pullback that adds its gradient into `x`'s shadow.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn ref_load_rrule<T: Primal + Clone>(
    x: &CoDual<&T, T::Shadow>,
) -> (CoDual<T, T::FData>, impl FnOnce(T::RData) -> (NoRData,) + use<T>) {
    let (v, pb) = shadow_load_rrule(x.primal, &x.fdata);
    (v, move |r| {
        pb(r);
        (NoRData,)
    })
}

/// The reverse rule of reading the value a handle holds (`*x` of `x: &mut f64`, a field `s.k`
/// or `s.p` of `s: &mut S`): a copy of it, and a pullback that adds its gradient into the
/// shadow.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn handle_load_rrule<H: HandleOf>(
    x: &CoDual<H, <H::Primal as Primal>::Shadow>,
) -> (
    CoDual<H::Primal, <H::Primal as Primal>::FData>,
    impl FnOnce(<H::Primal as Primal>::RData) -> (NoRData,) + use<H>,
) {
    let v = <H::Primal as crate::tangent::FromHandle>::from_handle(&x.primal);
    let fdata = v.zero_fdata();
    let (shadow, fd) = (x.fdata.clone(), fdata.clone());
    (CoDual::new(v, fdata), move |r| {
        <H::Primal as Primal>::add_cotangent_to_shadow(&shadow, &fd, r);
        (NoRData,)
    })
}

// Fields of a struct held by value (a local, or an argument passed by value): an array field's
// gradient is part of the struct's rdata (the derived `SRData`, with the struct's field names),
// a buffer field's is in its shadow (the field's fdata). Derived code reaches the field in the
// struct's rdata with a closure `|d| &mut d.path`, since only it knows the field's name.

/// An element of a buffer field of a struct held by value, read or written: an array
/// (`[NoFData; N]` fdata: the gradient in the struct's rdata) or a `Vec` (a shadow).
pub trait ValueFieldIndex<P: ?Sized> {
    /// The element type.
    type Elem: crate::element::Element;
    /// The field's part of the struct's rdata.
    type FieldRData: ZeroRData;
    /// Element `i` of the field `p`.
    fn load(p: &P, f: &Self, i: usize) -> Self::Elem;
    /// Adds the gradient `r` of element `i` into the field's rdata or shadow.
    fn add(f: &Self, d: &mut Self::FieldRData, i: usize, r: <Self::Elem as Primal>::RData);
    /// `p[i] = v`, returning what the pullback needs: the element's old gradient (taken out of
    /// a shadow, which restarts at zero) or nothing (an array's, taken out of the rdata later).
    fn store(
        p: &mut P,
        f: &Self,
        i: usize,
        v: Self::Elem,
    ) -> Option<<Self::Elem as Primal>::Tangent>;
    /// The stored value's gradient: taken out of the field's rdata or shadow at `i`.
    fn take(
        f: &Self,
        d: &mut Self::FieldRData,
        i: usize,
        saved: Option<<Self::Elem as Primal>::Tangent>,
    ) -> <Self::Elem as Primal>::RData;
}

impl<T: crate::element::Element, const N: usize> ValueFieldIndex<[T; N]> for [NoFData; N]
where
    T::RData: ZeroRData,
{
    type Elem = T;
    type FieldRData = [T::RData; N];
    #[inline(always)]
    fn load(p: &[T; N], _: &Self, i: usize) -> T {
        p[i]
    }
    #[inline(always)]
    fn add(_: &Self, d: &mut [T::RData; N], i: usize, r: T::RData) {
        accumulate(&mut d[i], r);
    }
    #[inline(always)]
    fn store(p: &mut [T; N], _: &Self, i: usize, v: T) -> Option<T::Tangent> {
        p[i] = v;
        None
    }
    #[inline(always)]
    fn take(_: &Self, d: &mut [T::RData; N], i: usize, _: Option<T::Tangent>) -> T::RData {
        take(&mut d[i])
    }
}

impl<T: crate::element::Element> ValueFieldIndex<Vec<T>> for crate::shared::SharedVec<T::Tangent> {
    type Elem = T;
    type FieldRData = NoRData;
    #[inline(always)]
    fn load(p: &Vec<T>, _: &Self, i: usize) -> T {
        p[i]
    }
    #[inline(always)]
    fn add(f: &Self, _: &mut NoRData, i: usize, r: T::RData) {
        f.with_mut(|s| T::add_rdata(&mut s[i], r));
    }
    #[inline(always)]
    fn store(p: &mut Vec<T>, f: &Self, i: usize, v: T) -> Option<T::Tangent> {
        p[i] = v;
        Some(f.set(i, T::ZERO_TANGENT))
    }
    #[inline(always)]
    fn take(f: &Self, _: &mut NoRData, i: usize, saved: Option<T::Tangent>) -> T::RData {
        match saved {
            Some(old) => T::tangent_rdata(f.set(i, old)),
            None => unreachable!("mooncake: a buffer field's store kept no shadow"),
        }
    }
}

/// The reverse rule of `x = p.path[i]`, `p` a struct held by value whose rdata has type `R`:
/// the element, and a pullback that gives `p` the gradient (in the field's part of a zero
/// rdata, or in the field's shadow).
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn value_field_index_load_rrule<P: ?Sized, F, R, At>(
    p: &P,
    f: &F,
    i: usize,
    _r: std::marker::PhantomData<fn() -> R>,
    at: At,
) -> (
    CoDual<F::Elem, NoFData>,
    impl FnOnce(<F::Elem as Primal>::RData) -> (R, NoRData) + use<P, F, R, At>,
)
where
    F: ValueFieldIndex<P> + Clone,
    R: ZeroRData,
    At: FnOnce(&mut R) -> &mut F::FieldRData,
{
    let y = F::load(p, f, i);
    let f = f.clone();
    (CoDual::new(y, NoFData), move |r| {
        let mut d = R::zero();
        F::add(&f, at(&mut d), i, r);
        (d, NoRData)
    })
}

/// The reverse rule of `p.path[i] = v`, `p` a struct held by value whose rdata has type `R`:
/// writes, and a pullback that takes the struct's rdata after the write and returns it before
/// (the element's gradient taken out), with `v`'s.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn value_field_index_store_rrule<P: ?Sized, F, R, At>(
    p: &mut P,
    f: &F,
    i: usize,
    v: CoDual<F::Elem, NoFData>,
    _r: std::marker::PhantomData<fn() -> R>,
    at: At,
) -> impl FnOnce(NoRData, R) -> (R, NoRData, <F::Elem as Primal>::RData) + use<P, F, R, At>
where
    F: ValueFieldIndex<P> + Clone,
    At: FnOnce(&mut R) -> &mut F::FieldRData,
{
    let saved = F::store(p, f, i, v.primal);
    let f = f.clone();
    move |_: NoRData, mut d: R| {
        let vb = F::take(&f, at(&mut d), i, saved);
        (d, NoRData, vb)
    }
}

/// The pullback of `p.path = v`, `p` a struct held by value whose rdata has type `R`: takes the
/// struct's rdata after the write and returns it before (the field's gradient taken out, to
/// `v`). The write itself is derived code's (`p.primal.path = v.primal`, with the fdata).
#[inline(always)]
pub fn value_field_store_pullback<R, V, At>(
    _r: std::marker::PhantomData<fn() -> R>,
    at: At,
) -> impl FnOnce(NoRData, R) -> (R, V) + use<R, V, At>
where
    V: ZeroRData,
    At: FnOnce(&mut R) -> &mut V,
{
    move |_: NoRData, mut d: R| {
        let v = take(at(&mut d));
        (d, v)
    }
}

/// A view of a buffer field (`&p.w`) with its shadow, for the buffer rules.
#[inline(always)]
pub fn field_view<'a, P: ?Sized, S: Clone>(primal: &'a P, shadow: &S) -> CoDual<&'a P, S> {
    CoDual::new(primal, shadow.clone())
}

/// How a loop reads a buffer field: a `Vec` as the slice it holds, whose pointer and length
/// are values the optimiser keeps in registers (read through the `&Vec` at each access, they
/// are memory that any store of the loop might change, for all LLVM can tell); an array as
/// itself.
pub trait FieldSlice {
    /// The buffer as the loads see it.
    type View: ?Sized;
    /// The view.
    fn field_slice(&self) -> &Self::View;
}

impl<T> FieldSlice for Vec<T> {
    type View = [T];
    #[inline(always)]
    fn field_slice(&self) -> &[T] {
        self
    }
}

/// A borrowed slice held in a field (`struct Data<'a> { x: &'a [f64] }`): the slice.
impl<T> FieldSlice for &[T] {
    type View = [T];
    #[inline(always)]
    fn field_slice(&self) -> &[T] {
        self
    }
}

impl<T> FieldSlice for &Vec<T> {
    type View = [T];
    #[inline(always)]
    fn field_slice(&self) -> &[T] {
        self
    }
}

impl<T, const N: usize> FieldSlice for [T; N] {
    type View = [T; N];
    #[inline(always)]
    fn field_slice(&self) -> &[T; N] {
        self
    }
}

/// [`field_view`] of a buffer field the body only loads elements from (`p.w[i]` of `p: &P`),
/// through [`FieldSlice`].
#[inline(always)]
pub fn field_slice_view<'a, P: ?Sized + FieldSlice, S: Clone>(
    primal: &'a P,
    shadow: &S,
) -> CoDual<&'a P::View, S> {
    CoDual::new(primal.field_slice(), shadow.clone())
}

/// A field of a struct held by value lent shared to a call (`g(&p.w)` after `let p = P { .. }`):
/// the field's value with its shadow, which is the field's fdata for the types that implement
/// this (buffers), so that the call's pullback adds into the shadow that the struct's own
/// loads add into.
#[diagnostic::on_unimplemented(
    message = "reverse mode lends a field of a struct held by value to a call only if the field is a buffer (`Vec<T>`); this field is a `{Self}`",
    note = "copy the field into a local first (`let w = p.w; g(&w)`), or pass the struct itself"
)]
pub trait ValueFieldLoan: Primal {
    /// The field's shadow, from its fdata.
    fn loan_shadow(fdata: &Self::FData) -> Self::Shadow;
}

impl<T: Primal> ValueFieldLoan for Vec<T>
where
    Vec<T>: Primal<
            FData = crate::shared::SharedVec<T::Tangent>,
            Shadow = crate::shared::SharedVec<T::Tangent>,
        >,
{
    #[inline(always)]
    fn loan_shadow(fdata: &Self::FData) -> Self::Shadow {
        fdata.clone()
    }
}

/// The free-function form generated code calls (see [`ValueFieldLoan`]).
#[inline(always)]
pub fn value_field_loan<'a, P: ValueFieldLoan>(
    primal: &'a P,
    fdata: &P::FData,
) -> CoDual<&'a P, P::Shadow> {
    CoDual::new(primal, P::loan_shadow(fdata))
}

/// A field of a struct behind `&mut` lent shared to a call (`g(&s.w)`, `g(&s.b)`): its value
/// borrowed out of the field's handle for the statement of the call ([`field_loan`]).
pub trait FieldLoan {
    /// What derefs to the field's value.
    type Guard<'a>: std::ops::Deref
    where
        Self: 'a;
    /// The borrow.
    fn field_loan(&self) -> Self::Guard<'_>;
}

impl<T> FieldLoan for crate::shared::SharedVec<T> {
    type Guard<'a>
        = std::cell::Ref<'a, Vec<T>>
    where
        T: 'a;
    #[inline(always)]
    fn field_loan(&self) -> std::cell::Ref<'_, Vec<T>> {
        self.borrow()
    }
}

impl<T: Copy> FieldLoan for crate::shared::SharedCell<T> {
    type Guard<'a>
        = Copied<T>
    where
        T: 'a;
    #[inline(always)]
    fn field_loan(&self) -> Copied<T> {
        Copied(self.get())
    }
}

/// A number read out of its cell, lent by reference ([`FieldLoan`]).
pub struct Copied<T>(T);

impl<T> std::ops::Deref for Copied<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The free-function form generated code calls (see [`FieldLoan`]).
#[inline(always)]
pub fn field_loan<F: FieldLoan>(f: &F) -> F::Guard<'_> {
    f.field_loan()
}

/// A view of a field of a struct seen through its handle (`&mut S`): the field's own handle
/// and shadow, cloned (aliases).
#[inline(always)]
pub fn handle_view<H: Clone, S: Clone>(handle: &H, shadow: &S) -> CoDual<H, S> {
    CoDual::new(handle.clone(), shadow.clone())
}

// ---------------------------------------------------------------------------------------------
// Recompute instead of tape: a copy of a shared-reference argument, made at entry, which the
// reverse sweep reads when it runs a block of the forward sweep again (the pullback may not
// borrow the caller's data).

/// An argument a reverse rule can copy for its reverse sweep: `&[T]`, `&Vec<T>`, `&[T; N]`.
pub trait ReplaySource {
    /// The copy.
    type Copy: ReplayCopy + 'static;
    /// A copy, its buffer taken from `pool` if one is given (and given back by
    /// [`give_replay_copy`]).
    fn replay_copy(&self, pool: Option<&'static std::thread::LocalKey<TapePool>>) -> Self::Copy;
}

/// A copy of an argument (see [`ReplaySource`]), seen as the argument was.
pub trait ReplayCopy {
    /// What the argument was: `&[T]`, `&Vec<T>` or `&[T; N]`.
    type View<'c>
    where
        Self: 'c;
    /// The copy, seen as the argument.
    fn view(&self) -> Self::View<'_>;
    /// Gives the copy's buffer back to `pool`.
    fn give_back(self, pool: &'static std::thread::LocalKey<TapePool>);
}

// The copies keep the `Box<Vec<T>>` a tape pool hands out (`take_tape`), to give it back as is.
/// The copy of a `&[T]` argument.
#[allow(clippy::box_collection)]
pub struct SliceCopy<T>(Box<Vec<T>>);
/// The copy of a `&Vec<T>` argument.
#[allow(clippy::box_collection)]
pub struct VecCopy<T>(Box<Vec<T>>);
/// The copy of a `&[T; N]` argument.
pub struct ArrayCopy<T, const N: usize>([T; N]);

#[allow(clippy::box_collection)]
fn copy_into<T: Clone + 'static>(
    x: &[T],
    pool: Option<&'static std::thread::LocalKey<TapePool>>,
) -> Box<Vec<T>> {
    let mut v: Box<Vec<T>> = match pool {
        Some(p) => take_tape(p),
        None => Box::new(Vec::with_capacity(x.len())),
    };
    v.extend_from_slice(x);
    v
}

impl<T: Clone + 'static, S> ReplaySource for CoDual<&[T], S> {
    type Copy = SliceCopy<T>;
    #[inline]
    fn replay_copy(&self, pool: Option<&'static std::thread::LocalKey<TapePool>>) -> SliceCopy<T> {
        SliceCopy(copy_into(self.primal, pool))
    }
}

impl<T: Clone + 'static, S> ReplaySource for CoDual<&Vec<T>, S> {
    type Copy = VecCopy<T>;
    #[inline]
    fn replay_copy(&self, pool: Option<&'static std::thread::LocalKey<TapePool>>) -> VecCopy<T> {
        VecCopy(copy_into(self.primal, pool))
    }
}

impl<T: Copy + 'static, S, const N: usize> ReplaySource for CoDual<&[T; N], S> {
    type Copy = ArrayCopy<T, N>;
    #[inline]
    fn replay_copy(&self, _: Option<&'static std::thread::LocalKey<TapePool>>) -> ArrayCopy<T, N> {
        ArrayCopy(*self.primal)
    }
}

impl<T: 'static> ReplayCopy for SliceCopy<T> {
    type View<'c> = &'c [T];
    #[inline(always)]
    fn view(&self) -> &[T] {
        &self.0
    }
    #[inline]
    fn give_back(self, pool: &'static std::thread::LocalKey<TapePool>) {
        give_tape(pool, self.0)
    }
}

impl<T: 'static> ReplayCopy for VecCopy<T> {
    type View<'c> = &'c Vec<T>;
    #[inline(always)]
    fn view(&self) -> &Vec<T> {
        &self.0
    }
    #[inline]
    fn give_back(self, pool: &'static std::thread::LocalKey<TapePool>) {
        give_tape(pool, self.0)
    }
}

impl<T: 'static, const N: usize> ReplayCopy for ArrayCopy<T, N> {
    type View<'c> = &'c [T; N];
    #[inline(always)]
    fn view(&self) -> &[T; N] {
        &self.0
    }
    #[inline(always)]
    fn give_back(self, _: &'static std::thread::LocalKey<TapePool>) {}
}

/// Where the reverse sweep of a derived rule adds the gradients of an argument's loads
/// `x[i]`: the argument's shadow itself, borrowed once for the whole sweep, or plain zeroed
/// memory added into the shadow once at the end. Either way each load's adjoint is one add
/// into a slice (see [`sink`], [`acc_add`], [`close_sink`]), with no borrow per element.
///
/// Both are sound because the shadow of an argument behind `&` is only ever incremented during
/// a reverse sweep (nobody reads it before the pullback returns, and increments commute).
pub enum Sink<'s, D> {
    /// The shadow, borrowed until [`close_sink`], and whether it was known to be zero when it
    /// was borrowed ([`SharedVec::known_zero`](crate::shared::SharedVec::known_zero)).
    Direct(std::cell::RefMut<'s, Vec<D>>, bool),
    /// Zeroed memory as long as the shadow, from a tape pool.
    #[allow(clippy::box_collection)]
    Buffered(Box<Vec<D>>),
}

impl<D> Sink<'_, D> {
    /// The memory the adjoints go into.
    #[inline(always)]
    pub fn slice_mut(&mut self) -> Acc<'_, D> {
        match self {
            Sink::Direct(v, zero) => Acc { slots: v.as_mut_slice(), zero: *zero },
            Sink::Buffered(v) => Acc { slots: v.as_mut_slice(), zero: true },
        }
    }
}

/// The memory of a [`Sink`] as the reverse sweep adds into it, and whether every element is
/// still zero: true until the first mutable access (every `&mut` view through `DerefMut` clears
/// it), so that the first [`SinkWindow`] cut from a zero sink may write its slots instead of
/// adding into them.
pub struct Acc<'a, D> {
    slots: &'a mut [D],
    zero: bool,
}

impl<D> std::ops::Deref for Acc<'_, D> {
    type Target = [D];
    #[inline(always)]
    fn deref(&self) -> &[D] {
        self.slots
    }
}

impl<D> std::ops::DerefMut for Acc<'_, D> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [D] {
        self.zero = false;
        self.slots
    }
}

/// The [`Sink`] of an argument's shadow, of length `len` (read before any sink of the sweep is
/// made, since the shadow may be another's already borrowed). `direct` says the derived rule hands the argument to
/// nothing else (no call, no rule, no other local sees it), so that nothing else borrows its
/// shadow while the reverse sweep runs; the shadow is then borrowed directly unless it is the
/// shadow of an earlier sink of the same sweep (`taken`: their [`SharedVec::addr`]s, when two
/// arguments alias) or borrowed already. Otherwise the sink is buffered, its memory from `pool`
/// if one is given.
///
/// [`SharedVec::addr`]: crate::shared::SharedVec::addr
pub fn sink<'s, D: Copy + Default + 'static>(
    shadow: &'s crate::shared::SharedVec<D>,
    len: usize,
    direct: bool,
    taken: &[usize],
    pool: Option<&'static std::thread::LocalKey<TapePool>>,
) -> Sink<'s, D> {
    let zero = shadow.known_zero();
    if direct
        && !taken.contains(&shadow.addr())
        && let Some(v) = shadow.try_borrow_mut()
    {
        return Sink::Direct(v, zero);
    }
    let mut acc: Box<Vec<D>> = match pool {
        Some(p) => take_tape(p),
        None => Box::new(Vec::new()),
    };
    acc.resize(len, D::default());
    Sink::Buffered(acc)
}

/// The part of a [`Sink`] a loop's reverse sweep adds into: the elements its complete
/// iterations loaded, which are consecutive, cut once when the sweep enters the loop (see
/// [`sink_window`]). Its slots are counted by the sweep's iterations, so that the optimiser sees
/// every add in bounds; `lo` is the first slot's index in the sink.
pub struct SinkWindow<'a, D> {
    slots: &'a mut [D],
    lo: usize,
    /// The slots are zero and each is added into at most once: [`window_add`] writes.
    set: bool,
}

/// The window of `acc` for a loop whose `m` complete iterations loaded indices `lo() .. lo() +
/// m` (every one of them in bounds: they were loaded); empty if the loop ran no complete
/// iteration (then `lo()`, which counts from the first one, is not evaluated), or if the
/// argument's gradient is not wanted (`live`; its sink then holds nothing). `once` says the
/// loop adds into the window at one place only, so that each slot gets at most one add per
/// execution of the loop: if the sink is still zero, the adds are writes.
#[inline(always)]
pub fn sink_window<'a, D>(
    acc: &'a mut Acc<'_, D>,
    live: bool,
    once: bool,
    m: usize,
    lo: impl FnOnce() -> usize,
) -> SinkWindow<'a, D> {
    if !live {
        return SinkWindow { slots: &mut [], lo: 0, set: false };
    }
    let set = once && acc.zero;
    let lo = if m == 0 { 0 } else { lo() };
    let w = &mut acc[lo..lo + m];
    // Cut again to `m`, the bound the optimiser compares the slots with.
    SinkWindow { slots: &mut w[..m], lo, set }
}

/// `acc[i] += r` through a [`SinkWindow`]: into `slot`, which is `i`'s (checked in debug
/// builds); a write if the window's slots are zero and each is added into once.
#[inline(always)]
pub fn window_add<D: crate::element::AddRData<R>, R>(
    w: &mut SinkWindow<'_, D>,
    slot: usize,
    i: usize,
    r: R,
) {
    check_slot(w.lo, slot, i);
    if w.set { w.slots[slot].set_rdata(r) } else { w.slots[slot].add_rdata(r) }
}

/// The window of a shadow borrowed through a loop's guard ([`shadow_guard`]) for a loop whose
/// `m` complete iterations loaded from, or stored into, indices `lo() .. lo() + m` of the
/// buffer built in the body (every one in bounds: it was used); empty if the loop ran no
/// complete iteration. Its slots take the adds of [`window_add`] (as [`guarded_add`] does) and
/// the reverses of stores ([`window_unstore`], [`window_unstore_at`]), at indices the optimiser
/// sees in bounds.
#[inline(always)]
pub fn shadow_window<'a, D>(
    g: &'a mut [D],
    m: usize,
    lo: impl FnOnce() -> usize,
) -> SinkWindow<'a, D> {
    let lo = if m == 0 { 0 } else { lo() };
    let w = &mut g[lo..lo + m];
    SinkWindow { slots: &mut w[..m], lo, set: false }
}

/// [`guarded_unstore`] through a [`shadow_window`]: the element at `slot`, which is `i`'s
/// (checked in debug builds).
#[inline(always)]
pub fn window_unstore<T: crate::element::Element>(
    w: &mut SinkWindow<'_, T::Tangent>,
    slot: usize,
    _x: &crate::shared::SharedVec<T>,
    i: usize,
) -> T::RData {
    check_slot(w.lo, slot, i);
    T::tangent_rdata(std::mem::replace(&mut w.slots[slot], T::ZERO_TANGENT))
}

/// [`guarded_unstore_at`] through a [`shadow_window`]: the record's element at `slot`, which is
/// its index's (checked in debug builds).
#[inline(always)]
pub fn window_unstore_at<T: crate::element::Element>(
    w: &mut SinkWindow<'_, T::Tangent>,
    slot: usize,
    x: &crate::shared::SharedVec<T>,
    s: Stored<T, T::Tangent>,
) -> T::RData {
    check_slot(w.lo, slot, s.i);
    let v_bar = T::tangent_rdata(std::mem::replace(&mut w.slots[slot], s.old_d));
    x.set_primal(s.i, s.old);
    v_bar
}

/// [`guarded_unstore_zero_at`] through a [`shadow_window`]: the record's element at `slot`,
/// which is its index's (checked in debug builds).
#[inline(always)]
pub fn window_unstore_zero_at<T: crate::element::Element>(
    w: &mut SinkWindow<'_, T::Tangent>,
    slot: usize,
    x: &crate::shared::SharedVec<T>,
    s: Overwritten<T>,
) -> T::RData {
    check_slot(w.lo, slot, s.i);
    let v_bar = T::tangent_rdata(std::mem::replace(&mut w.slots[slot], T::ZERO_TANGENT));
    x.set_primal(s.i, s.old);
    v_bar
}

/// The part of an argument's copy that the re-run loads of a loop's reverse sweep read: the
/// elements its complete iterations loaded, consecutive, lent once when the sweep enters the
/// loop (see [`read_window`]); like [`SinkWindow`], its slots are counted by the sweep's
/// iterations.
pub struct ReadWindow<'a, T> {
    slots: &'a [T],
    lo: usize,
}

/// A codual whose primal is a slice, a `Vec` or an array behind a shared reference (the copy of
/// an argument a re-run block reads: see [`ReplayCopy::View`]), whose elements a
/// [`ReadWindow`] lends.
pub trait WindowSource<T> {
    /// The elements.
    fn window_slice(&self) -> &[T];
}

impl<T, F> WindowSource<T> for CoDual<&[T], F> {
    #[inline(always)]
    fn window_slice(&self) -> &[T] {
        self.primal
    }
}

impl<T, F> WindowSource<T> for CoDual<&Vec<T>, F> {
    #[inline(always)]
    fn window_slice(&self) -> &[T] {
        self.primal
    }
}

impl<T, F, const N: usize> WindowSource<T> for CoDual<&[T; N], F> {
    #[inline(always)]
    fn window_slice(&self) -> &[T] {
        self.primal
    }
}

impl<T, F> WindowSource<T> for CoDual<Vec<T>, F> {
    #[inline(always)]
    fn window_slice(&self) -> &[T] {
        &self.primal
    }
}

/// The range `lo .. lo + m` of a buffer of `len` elements, whose every index a loop is about to
/// read or write. If one is out of bounds, the loop would panic at the first such index as it
/// reached it; this panics with the same message, before the loop starts.
#[inline(always)]
#[track_caller]
fn window_range(len: usize, lo: usize, m: usize) -> std::ops::Range<usize> {
    match lo.checked_add(m) {
        Some(hi) if hi <= len => lo..hi,
        _ => out_of_bounds(len, lo),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(len: usize, lo: usize) -> ! {
    panic!("index out of bounds: the len is {len} but the index is {}", lo.max(len))
}

/// The window of `x`'s elements `lo() .. lo() + m` (see [`sink_window`]; empty if the loop ran
/// no complete iteration, or, in the forward sweep, runs none).
#[inline(always)]
pub fn read_window<T, B: WindowSource<T>>(
    x: &B,
    m: usize,
    lo: impl FnOnce() -> usize,
) -> ReadWindow<'_, T> {
    let lo = if m == 0 { 0 } else { lo() };
    let s = x.window_slice();
    let w = &s[window_range(s.len(), lo, m)];
    ReadWindow { slots: &w[..m], lo }
}

/// The number of iterations of a loop whose test is `c < n` and whose counter `c`, `c0` at its
/// entry, steps up by one per iteration: `n - c0`, or none.
#[inline(always)]
pub fn trips_below(c0: usize, n: usize) -> usize {
    n.saturating_sub(c0)
}

/// The slot of a window of the forward sweep for the iteration whose counter is `c` (`c0` at
/// the loop's entry): the steps taken since. Wrapping, so that no overflow check is left in the
/// loop (`c0 <= c < c0 + m` wherever a slot is used).
#[inline(always)]
pub fn slot_up(c: usize, c0: usize) -> usize {
    c.wrapping_sub(c0)
}

/// The part of a buffer built in the body that a loop of the forward sweep loads from and
/// stores into (keeping no record), through the loop's [`write_guard`]: the elements
/// `lo() .. lo() + m` of its `m` iterations, cut at the loop's entry (see [`read_window`]).
pub struct WriteWindow<'a, T> {
    slots: &'a mut [T],
    lo: usize,
}

/// The [`WriteWindow`] of `g` for a loop of `m` iterations from `lo()`.
#[inline(always)]
pub fn slice_window_mut<T>(
    g: &mut [T],
    m: usize,
    lo: impl FnOnce() -> usize,
) -> WriteWindow<'_, T> {
    let lo = if m == 0 { 0 } else { lo() };
    let len = g.len();
    let w = &mut g[window_range(len, lo, m)];
    WriteWindow { slots: &mut w[..m], lo }
}

/// [`guarded_at`] through a [`WriteWindow`]: `x[i]`, at `slot` (`i`'s, checked in debug
/// builds).
#[inline(always)]
pub fn window_get<T: Copy>(w: &WriteWindow<'_, T>, slot: usize, i: usize) -> T {
    check_slot(w.lo, slot, i);
    w.slots[slot]
}

/// [`guarded_store`] through a [`WriteWindow`]: `x[i] = v`, at `slot` (`i`'s, checked in debug
/// builds).
#[inline(always)]
pub fn window_put<T: Copy>(
    w: &mut WriteWindow<'_, T>,
    slot: usize,
    i: usize,
    v: CoDual<T, NoFData>,
) {
    check_slot(w.lo, slot, i);
    w.slots[slot] = v.primal;
}

/// The window of a buffer built in the body, borrowed through a loop's guard ([`read_guard`]),
/// whose elements `lo() .. lo() + m` the re-run loads of the loop's reverse sweep read (see
/// [`read_window`]).
#[inline(always)]
pub fn slice_window<T>(g: &[T], m: usize, lo: impl FnOnce() -> usize) -> ReadWindow<'_, T> {
    let lo = if m == 0 { 0 } else { lo() };
    let w = &g[window_range(g.len(), lo, m)];
    ReadWindow { slots: &w[..m], lo }
}

/// `x[i]` through a [`ReadWindow`]: its `slot`, which is `i`'s (checked in debug builds).
#[inline(always)]
pub fn window_read<T: Copy>(w: &ReadWindow<'_, T>, slot: usize, i: usize) -> T {
    check_slot(w.lo, slot, i);
    w.slots[slot]
}

/// Checks, in debug builds, that slot `slot` of a window whose first slot is index `lo` is index
/// `i`, the one the primal used (the macro's analysis says so; a failure is an internal error).
#[inline(always)]
#[track_caller]
fn check_slot(lo: usize, slot: usize, i: usize) {
    debug_assert_eq!(
        Some(i),
        lo.checked_add(slot),
        "mooncake: a window's slot disagrees with the index it stands for (an internal error)"
    );
}

/// The slot of a [`SinkWindow`] or [`ReadWindow`] for the iteration `it` (counted down from
/// `m - 1`) when the indices fall as the iterations go: `m - 1 - it`. Wrapping, so that no
/// overflow check is left in the loop (`it < m` wherever a slot is used).
#[inline(always)]
pub fn slot_down(m: usize, it: usize) -> usize {
    m.wrapping_sub(1).wrapping_sub(it)
}

/// `acc[i] += r`: a load's adjoint into the memory of a [`Sink`].
#[inline(always)]
pub fn acc_add<D: crate::element::AddRData<R>, R>(acc: &mut [D], i: usize, r: R) {
    acc[i].add_rdata(r);
}

/// A sink's slice cut to `len`, the length of the buffer whose loads' adjoints it takes (which
/// its shadow has), when the argument's gradient is wanted (`live`; otherwise the sink holds
/// nothing). Generated code adds into the sink at indices the reverse sweep's loads of the same
/// buffer checked against that length, and the optimiser drops the second check.
#[inline(always)]
pub fn fit_sink<D>(s: Acc<'_, D>, live: bool, len: usize) -> Acc<'_, D> {
    if live { Acc { slots: &mut s.slots[..len], zero: s.zero } } else { s }
}

/// Ends a [`Sink`]: a direct borrow is released; buffered memory is added into the shadow (one
/// borrow) and given back to `pool`. Sinks are closed in the order they were made, so that a
/// buffered one whose shadow is also a direct one's is added after that borrow ends.
pub fn close_sink<D: TangentSpace + Copy + 'static>(
    shadow: &crate::shared::SharedVec<D>,
    sink: Sink<'_, D>,
    pool: Option<&'static std::thread::LocalKey<TapePool>>,
) {
    let Sink::Buffered(acc) = sink else { return };
    if std::mem::size_of::<D>() != 0 {
        shadow.with_mut(|s| s.iter_mut().zip(acc.iter()).for_each(|(d, a)| d.increment(a)));
    }
    if let Some(p) = pool {
        give_tape(p, acc);
    }
}

/// The free-function form generated code calls: a copy of argument `x` for the reverse sweep.
#[inline(always)]
pub fn replay_copy<X: ReplaySource>(
    x: &X,
    pool: Option<&'static std::thread::LocalKey<TapePool>>,
) -> X::Copy {
    x.replay_copy(pool)
}

/// The free-function form generated code calls: the copy, seen as the argument.
#[inline(always)]
pub fn replay_view<C: ReplayCopy>(c: &C) -> C::View<'_> {
    c.view()
}

/// The free-function form generated code calls: the copy's buffer back to its pool.
#[inline(always)]
pub fn give_replay_copy<C: ReplayCopy>(pool: &'static std::thread::LocalKey<TapePool>, c: C) {
    c.give_back(pool)
}

// ---------------------------------------------------------------------------------------------
// Tape pools: a tape (the stack of one statement's pullbacks inside a loop, or the block stack)
// is taken from a thread-local pool at the start of a reverse rule and given back, empty but
// with its capacity, at the end of the pullback. Repeated gradients then reuse the memory the
// first one grew: no allocation, and no fresh pages to fault in.

/// The pool of one tape site (declared by generated code as a `thread_local!` static inside the
/// rule, one per site): type-erased, since a tape holds closures, whose types have no names.
pub type TapePool = std::cell::RefCell<Vec<Box<dyn std::any::Any>>>;

/// The last box of type `X` in `pool`. A site of a non-generic function pools one type only,
/// so the last box is the one; a generic function's site is shared by its instantiations (a
/// `static` cannot depend on a type parameter), whose boxes the pool holds side by side: a
/// last box of another type goes back, and one of this type is looked for below it.
#[inline(always)]
fn take_typed<X: 'static>(pool: &'static std::thread::LocalKey<TapePool>) -> Option<Box<X>> {
    // The pool is borrowed only to pop, so that the common case stays small enough to inline.
    match pool.with(|p| p.borrow_mut().pop())?.downcast::<X>() {
        Ok(b) => Some(b),
        Err(other) => take_typed_below(pool, other),
    }
}

/// [`take_typed`] when the last box is of another type: put it back, and take the last box of
/// type `X` below it.
#[cold]
#[inline(never)]
fn take_typed_below<X: 'static>(
    pool: &'static std::thread::LocalKey<TapePool>,
    other: Box<dyn std::any::Any>,
) -> Option<Box<X>> {
    pool.with(|p| {
        let mut p = p.borrow_mut();
        let found = p.iter().rposition(|b| b.is::<X>());
        p.push(other);
        found.and_then(|k| p.swap_remove(k).downcast::<X>().ok())
    })
}

/// A tape from `pool` (the last one of its type: a generic function's instantiations share
/// their sites' pools), or a new, empty one.
#[inline]
pub fn take_tape<T: 'static>(pool: &'static std::thread::LocalKey<TapePool>) -> Box<Vec<T>> {
    take_typed::<Vec<T>>(pool).unwrap_or_default()
}

/// Gives a tape back to `pool`, emptied, keeping its capacity for the next gradient.
#[inline]
pub fn give_tape<T: 'static>(
    pool: &'static std::thread::LocalKey<TapePool>,
    mut tape: Box<Vec<T>>,
) {
    tape.clear();
    // The pool may be gone if this runs while the thread's statics are being destroyed.
    let _ = pool.try_with(|p| p.borrow_mut().push(tape));
}

/// The control tape of a rule whose body has no loop: each of its `K` recording sites runs at
/// most once per call, so `K` entries on the stack hold all it records, with no pool to take
/// the tape from and give it back to (two thread-local accesses per call, which a recursive
/// rule pays at every level). The same `push` / `pop` / `is_empty` as the `Vec` of a body with
/// loops. What such a body records is which arm or block was taken (small constants, never a
/// trip count), kept as `u16`s so that the pullback that holds the tape stays small (it is
/// moved into and out of a pooled box at every level of a recursion).
pub struct FixedTape<const K: usize> {
    entries: [u16; K],
    len: u16,
}

impl<const K: usize> FixedTape<K> {
    /// An empty tape.
    #[inline(always)]
    pub fn new() -> Self {
        FixedTape { entries: [0; K], len: 0 }
    }

    /// Records `v`. A site that ran twice, or an arm index past `u16::MAX`, would be a bug of
    /// the macro: it panics rather than lose the entry.
    #[inline(always)]
    pub fn push(&mut self, v: usize) {
        let v = u16::try_from(v).expect("mooncake: a control-tape entry past u16::MAX");
        self.entries[usize::from(self.len)] = v;
        self.len += 1;
    }

    /// The last entry recorded, taken off.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<usize> {
        self.len = self.len.checked_sub(1)?;
        Some(usize::from(self.entries[usize::from(self.len)]))
    }

    /// Whether every entry was taken off.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<const K: usize> Default for FixedTape<K> {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Pullbacks behind a type that does not name them. The rule of a function that calls others
// returns its pullback this way, so that no pullback type contains itself through a cycle of
// calls (mutual recursion), without an allocation per call.

/// A pullback `C: FnOnce(R) -> T` kept in a box taken from a thread-local pool and given back
/// when it runs, behind a type that names only `R` and `T`: the box is reused by the next call
/// at the same site (one per level of recursion), so that a prepared gradient allocates
/// nothing after the first.
pub struct PooledPullback<R, T> {
    cell: Box<dyn std::any::Any>,
    run: fn(Box<dyn std::any::Any>, &'static std::thread::LocalKey<TapePool>, R) -> T,
    pool: &'static std::thread::LocalKey<TapePool>,
}

impl<R, T> PooledPullback<R, T> {
    /// Runs the pullback on `r`.
    #[inline]
    pub fn call(self, r: R) -> T {
        (self.run)(self.cell, self.pool, r)
    }
}

/// `c` in a box from `pool` (see [`PooledPullback`]).
#[inline]
pub fn pool_pullback<R, T, C: FnOnce(R) -> T + 'static>(
    pool: &'static std::thread::LocalKey<TapePool>,
    c: C,
) -> PooledPullback<R, T> {
    let reused = take_typed::<Option<C>>(pool);
    let cell: Box<dyn std::any::Any> = match reused {
        Some(mut slot) => {
            *slot = Some(c);
            slot
        }
        None => Box::new(Some(c)),
    };
    PooledPullback { cell, run: run_pooled::<R, T, C>, pool }
}

fn run_pooled<R, T, C: FnOnce(R) -> T + 'static>(
    mut cell: Box<dyn std::any::Any>,
    pool: &'static std::thread::LocalKey<TapePool>,
    r: R,
) -> T {
    let c = cell.downcast_mut::<Option<C>>().and_then(Option::take);
    // Back to the pool before it runs, for the calls its own reverse sweep makes. The pool may
    // be gone if this runs while the thread's statics are being destroyed.
    let _ = pool.try_with(|p| p.borrow_mut().push(cell));
    match c {
        Some(c) => c(r),
        None => unreachable!("mooncake: a pooled pullback held another type"),
    }
}

// ---------------------------------------------------------------------------------------------
// Methods of user types. A call `x.m(args)` in a derived reverse rule becomes
// `UserMethodRrule::<KEY, _>::method_rrule(method_marker::<KEY, _, _>(&x), x, args)`: the receiver's
// `CoDual` type picks a lifetime-free marker (`RecvMarker`, implemented by
// `#[differentiable] impl` blocks for each way the method's receiver can be held), and the
// marker's `UserMethodRrule` impl calls the method's reverse rule. The marker carries no
// lifetime, so the pullback captures none (`use<Self, M, K>`), which a trait keyed on the
// receiver's own type (holding a borrow) could not promise.

/// A method named like a number's (`c.powi(3)`, `z.abs()`) called on a receiver the function's
/// text does not show to be a value of a user type (a field, a method's result): the macro
/// calls it as a number's method ([`MethodRrule`]), and for a receiver of a user type held by
/// value, whose method takes `self`, this impl answers with the method's own rule (the
/// receiver's rdata after the call, which a `self` method does not change, is zero: the
/// caller adds what the pullback returns into the receiver's adjoint).
#[diagnostic::do_not_recommend]
impl<const M: u64, K, A, P, F, Mk> MethodRrule<M, crate::keys::UserKey<K>, A> for CoDual<P, F>
where
    CoDual<P, F>: RecvMarker<M, K, Marker = Mk>,
    Mk: Default + for<'a, 'b> UserMethodRrule<M, K, Recv<'a> = CoDual<P, F>, Args<'b> = A>,
    Mk::RecvRData: ZeroRData,
{
    type Out = Mk::Out;
    type Rets = Mk::Rets;
    #[inline(always)]
    fn method_rrule(
        mut self,
        args: A,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData) -> Self::Rets,
    ) {
        let (o, pb) = Mk::default().method_rrule(&mut self, args);
        (o, move |r| pb(r, ZeroRData::zero()))
    }
}

/// The marker of a method receiver held as `Self` (see [`UserMethodRrule`]).
#[diagnostic::on_unimplemented(
    message = "no reverse-mode rule for this method call on `{Self}`",
    label = "this method has no reverse-mode rule for a receiver held this way",
    note = "give the method a rule: put `#[differentiable]` on its `impl` block (reverse mode lends `&self` methods receivers held by value, behind `&` or behind `&mut`, `&mut self` methods receivers behind `&mut`, and `self` methods receivers held by value); a method of a standard type that has no rule (an integer's `isqrt`) can be called inside a function of your own declared with `zero_adjoint!`"
)]
pub trait RecvMarker<const M: u64, K> {
    /// The lifetime-free marker: [`ByRef`], [`ByValue`] or [`ByHandle`] of the receiver's type.
    type Marker: Default;
}

/// The marker of the receiver `r` (a value of the marker type, zero-sized).
#[inline(always)]
pub fn method_marker<const M: u64, K, R: RecvMarker<M, K>>(_: &R) -> R::Marker {
    R::Marker::default()
}

/// A method's reverse rule, reached through the marker of how its receiver is held. `K` is the
/// method's type (which makes the impls in the user's crate legal under the orphan rules).
pub trait UserMethodRrule<const M: u64, K> {
    /// The receiver's `CoDual`.
    type Recv<'a>;
    /// The arguments' `CoDual`s, as a tuple.
    type Args<'a>;
    /// The result's primal type.
    type Out: Primal;
    /// The receiver's rdata (`NoRData` behind a reference).
    type RecvRData;
    /// The rdata of the receiver, then of each argument.
    type Rets;
    /// `(output, pullback)`; the receiver is the caller's, which a `&mut self` method on a
    /// value changes in place. The pullback takes the output's rdata and the receiver's rdata
    /// after the call, and returns the receiver's rdata before the call (the two differ when a
    /// `&mut self` method changes a receiver held by value), then each argument's.
    #[allow(clippy::type_complexity)]
    fn method_rrule<'a, 'b>(
        self,
        recv: &mut Self::Recv<'a>,
        args: Self::Args<'b>,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData, Self::RecvRData) -> Self::Rets + use<Self, M, K>,
    );
}

macro_rules! receiver_markers {
    ($($(#[$doc:meta])* $name:ident),*) => {$(
        $(#[$doc])*
        pub struct $name<T: ?Sized>(std::marker::PhantomData<fn() -> Box<T>>);
        impl<T: ?Sized> Default for $name<T> {
            #[inline(always)]
            fn default() -> Self {
                $name(std::marker::PhantomData)
            }
        }
    )*};
}

receiver_markers!(
    /// A receiver behind `&` (`CoDual<&T, T::Shadow>`).
    ByRef,
    /// A receiver held by value (`CoDual<T, T::FData>`).
    ByValue,
    /// A receiver behind `&mut`, seen through its handle (`CoDual<T::Handle, T::Shadow>`).
    ByHandle
);

/// `a.add(b)`, `a.sub(b)`, `a.mul(b)`, `a.div(b)` and `a.neg()` of floats through the method
/// dispatch of user types: what derived code calls where lowering writes arithmetic as the
/// operator traits' methods because the text shows an operand of a capitalised type that may
/// be a user's vector type (`x * y` of `x, y: Real`), and the type is an alias of a float.
macro_rules! float_operator_methods {
    ($($name:literal => |$a:ident, $b:ident, $y:ident| ($value:expr, $da:expr, $db:expr)),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<T: Float> RecvMarker<{ method_key($name) }, FloatKey<T>> for CoDual<T, NoFData> {
            type Marker = ByValue<FloatKey<T>>;
        }
        impl<T: Float> UserMethodRrule<{ method_key($name) }, FloatKey<T>> for ByValue<FloatKey<T>> {
            type Recv<'a> = CoDual<T, NoFData>;
            type Args<'a> = (CoDual<T, NoFData>,);
            type Out = T;
            type RecvRData = T;
            type Rets = (T, T);
            #[inline(always)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut CoDual<T, NoFData>,
                args: (CoDual<T, NoFData>,),
            ) -> (CoDual<T, NoFData>, impl FnOnce(T, T) -> (T, T) + use<T>) {
                let ($a, $b) = (recv.primal, args.0.primal);
                let value = $value;
                (CoDual::new(value, NoFData), move |$y: T, ra: T| (ra + $da, $db))
            }
        }
    )*};
}

float_operator_methods!(
    "add" => |a, b, y| (a + b, y, y),
    "sub" => |a, b, y| (a - b, y, -y),
    "mul" => |a, b, y| (a * b, y * b, y * a),
    "div" => |a, b, y| (a / b, y / b, -(y * a) / (b * b))
);

#[diagnostic::do_not_recommend]
impl<T: Float> RecvMarker<{ method_key("neg") }, FloatKey<T>> for CoDual<T, NoFData> {
    type Marker = ByValue<FloatKey<T>>;
}

impl<T: Float> UserMethodRrule<{ method_key("neg") }, FloatKey<T>> for ByValue<FloatKey<T>> {
    type Recv<'a> = CoDual<T, NoFData>;
    type Args<'a> = ();
    type Out = T;
    type RecvRData = T;
    type Rets = (T,);
    #[inline(always)]
    fn method_rrule<'a, 'b>(
        self,
        recv: &mut CoDual<T, NoFData>,
        _: (),
    ) -> (CoDual<T, NoFData>, impl FnOnce(T, T) -> (T,) + use<T>) {
        (CoDual::new(-recv.primal, NoFData), move |y: T, ra: T| (ra - y,))
    }
}

#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
/// A key type whose methods, with a rule for a receiver behind `&` ([`ByRef`]), also read a
/// receiver behind `&mut` held through its handle `SharedRef` (a `&mut DMatrix` argument): the
/// rule runs on a shared borrow of the handle's value ([`ReadThroughHandle`]).
pub trait HandleReads {}

#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
/// The marker of a receiver behind `&mut`, held through its handle, given to a method that
/// only reads it (see [`HandleReads`]).
pub struct ReadThroughHandle<T: ?Sized>(std::marker::PhantomData<fn() -> Box<T>>);

#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
impl<T: ?Sized> Default for ReadThroughHandle<T> {
    #[inline(always)]
    fn default() -> Self {
        ReadThroughHandle(std::marker::PhantomData)
    }
}

#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
impl<const K: u64, Key: HandleReads, M: 'static> RecvMarker<K, Key>
    for CoDual<crate::shared::SharedRef<M>, crate::shared::SharedRef<M>>
where
    ByRef<M>: for<'a> UserMethodRrule<
            K,
            Key,
            Recv<'a> = CoDual<&'a M, crate::shared::SharedRef<M>>,
            RecvRData = NoRData,
        >,
{
    type Marker = ReadThroughHandle<M>;
}

#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
impl<const K: u64, Key: HandleReads, M: 'static> UserMethodRrule<K, Key> for ReadThroughHandle<M>
where
    ByRef<M>: for<'a> UserMethodRrule<
            K,
            Key,
            Recv<'a> = CoDual<&'a M, crate::shared::SharedRef<M>>,
            RecvRData = NoRData,
        >,
{
    type Recv<'a> = CoDual<crate::shared::SharedRef<M>, crate::shared::SharedRef<M>>;
    type Args<'b> = <ByRef<M> as UserMethodRrule<K, Key>>::Args<'b>;
    type Out = <ByRef<M> as UserMethodRrule<K, Key>>::Out;
    type RecvRData = NoRData;
    type Rets = <ByRef<M> as UserMethodRrule<K, Key>>::Rets;
    #[inline]
    #[allow(clippy::type_complexity)]
    fn method_rrule<'a, 'b>(
        self,
        recv: &mut Self::Recv<'a>,
        args: Self::Args<'b>,
    ) -> (
        CoDual<Self::Out, <Self::Out as Primal>::FData>,
        impl FnOnce(<Self::Out as Primal>::RData, NoRData) -> Self::Rets + use<K, Key, M>,
    ) {
        let shadow = recv.fdata.clone();
        recv.primal.with(|m| ByRef::<M>::default().method_rrule(&mut CoDual::new(m, shadow), args))
    }
}

/// What a local becomes when it is assigned to the result of a reverse rule, whose type the
/// signature fixes: itself (cloned), or, for a buffer built in the body and held through a
/// handle, a `Vec` or an array copied out of the handle, so that the caller's gradient of the
/// result reaches the pullbacks that built it: through the shared shadow for a `Vec`, through
/// [`return_adjoint`] for an array (whose cotangent is rdata).
pub trait AsResult<T> {
    /// The result's rdata.
    type Ret;
    /// The local's rdata.
    type Own;
    /// What the reverse pass needs to map the result's cotangent back (a shadow, or nothing).
    type Link;
    /// The result, and the link for the reverse pass.
    fn as_result(&self) -> (T, Self::Link);
    /// The local's share of the result's cotangent.
    fn return_adjoint(link: Self::Link, r: Self::Ret) -> Self::Own;
}

impl<P: Clone + Primal, F: Clone> AsResult<CoDual<P, F>> for CoDual<P, F> {
    type Ret = P::RData;
    type Own = P::RData;
    type Link = ();
    #[inline(always)]
    fn as_result(&self) -> (CoDual<P, F>, ()) {
        (self.clone(), ())
    }
    #[inline(always)]
    fn return_adjoint(_: (), r: P::RData) -> P::RData {
        r
    }
}

impl<T: Clone, D> AsResult<CoDual<Vec<T>, crate::shared::SharedVec<D>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>>
{
    type Ret = NoRData;
    type Own = NoRData;
    type Link = ();
    fn as_result(&self) -> (CoDual<Vec<T>, crate::shared::SharedVec<D>>, ()) {
        (CoDual::new(self.primal.with(<[T]>::to_vec), self.fdata.clone()), ())
    }
    #[inline(always)]
    fn return_adjoint(_: (), _: NoRData) -> NoRData {
        NoRData
    }
}

/// An array of numbers, or of arrays of numbers (`[[f64; 3]; 3]`).
impl<T: Primal + Copy, const N: usize> AsResult<CoDual<[T; N], [T::FData; N]>>
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>
where
    T::Tangent: crate::element::AddRData<T::RData>,
{
    type Ret = [T::RData; N];
    type Own = NoRData;
    type Link = crate::shared::SharedVec<T::Tangent>;
    #[inline]
    fn as_result(&self) -> (CoDual<[T; N], [T::FData; N]>, crate::shared::SharedVec<T::Tangent>) {
        let a = self.primal.to_array();
        (CoDual::new(a, std::array::from_fn(|k| a[k].zero_fdata())), self.fdata.clone())
    }
    fn return_adjoint(shadow: crate::shared::SharedVec<T::Tangent>, r: [T::RData; N]) -> NoRData {
        use crate::element::AddRData;
        shadow.with_mut(|s| s.iter_mut().zip(r).for_each(|(d, r)| d.add_rdata(r)));
        NoRData
    }
}

/// The free-function form generated code calls: see [`AsResult::return_adjoint`]. `_s` only
/// names the local's type.
#[inline(always)]
pub fn return_adjoint<T, S: AsResult<T>>(
    _s: std::marker::PhantomData<fn() -> S>,
    link: S::Link,
    r: S::Ret,
) -> S::Own {
    S::return_adjoint(link, r)
}

/// The type of a local, as a marker (see [`return_adjoint`]).
#[inline(always)]
pub fn type_marker<S>(_: &S) -> std::marker::PhantomData<fn() -> S> {
    std::marker::PhantomData
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn as_result<T, S: AsResult<T>>(s: &S) -> (T, S::Link) {
    s.as_result()
}

/// An array passed by value, moved into a handle (with a fresh zero shadow) so that the buffer
/// rules apply to it as to a buffer built in the body.
#[inline]
pub fn array_into_handle<T: Primal + Clone, const N: usize>(
    x: CoDual<[T; N], [T::FData; N]>,
) -> CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>> {
    let shadow =
        crate::shared::SharedVec::from_vec(x.primal.iter().map(Primal::zero_tangent).collect());
    CoDual::new(crate::shared::SharedArray::from_array(x.primal), shadow)
}

/// The rdata of an array passed by value, from its handle (whose element type names the
/// rdata's where the function's text does not: an argument of a type alias, `a: Vec3`).
#[inline]
pub fn held_array_rdata<T: Primal, const N: usize>(
    x: &CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<T::Tangent>>,
) -> [T::RData; N] {
    array_rdata::<T, N>(&x.fdata)
}

/// The rdata of an array passed by value: what its handle's shadow gathered.
#[inline]
pub fn array_rdata<T: Primal, const N: usize>(
    shadow: &crate::shared::SharedVec<T::Tangent>,
) -> [T::RData; N] {
    shadow.with(|s| {
        let v: Vec<T::RData> = s.iter().map(|t| T::split_tangent(t.clone()).1).collect();
        match <[T::RData; N]>::try_from(v) {
            Ok(a) => a,
            Err(_) => unreachable!("mooncake: an array's shadow changed length"),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Loans: `&v` of a local passed to a call or a method.

/// A local that `&v` lends to a call for the call only: a buffer held through a handle (lent
/// as `&Vec<T>` with its own shadow; nothing to give back), or a value the function holds (lent
/// as `&T` with a fresh shadow, whose gradient is given back to the value's fdata and rdata by
/// [`give_back`] in the reverse pass).
pub trait Lend {
    /// What the callee gets.
    type Loan<'s>;
    /// What the reverse pass gives back to the local ([`GiveBack`]).
    type Back: GiveBack;
    /// Runs `f` on the loan; returns its result and what to give back.
    fn lend<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> (R, Self::Back);
}

/// What a loan gives back in the reverse pass: the local's rdata.
pub trait GiveBack {
    /// The local's rdata.
    type RData;
    /// Adds the loan's fdata part into the local's fdata; returns the rdata part.
    fn give_back(self) -> Self::RData;
}

impl GiveBack for () {
    type RData = NoRData;
    #[inline(always)]
    fn give_back(self) -> NoRData {
        NoRData
    }
}

/// What lending a value gives back: the fresh shadow the callee wrote, and the value's fdata.
/// Also how a method's receiver held by value gets its gradient back from the shadow it was
/// lent with.
pub struct ValueBack<T: Primal>(Back<T>);

/// What a [`ValueBack`] gives back.
enum Back<T: Primal> {
    /// The content of `shadow`, added to the value's `fdata`.
    Copy { shadow: T::Shadow, fdata: T::FData },
    /// Nothing: the loan was the value's own fdata (`Primal::fdata_as_shadow`); its rdata.
    Shared(T::RData),
}

impl<T: Primal> ValueBack<T> {
    /// `shadow`'s content, to be given back to a value with fdata `fdata`.
    #[inline(always)]
    pub fn new(shadow: T::Shadow, fdata: T::FData) -> Self {
        ValueBack(Back::Copy { shadow, fdata })
    }
}

impl<T: Primal> GiveBack for ValueBack<T> {
    type RData = T::RData;
    fn give_back(self) -> T::RData {
        match self.0 {
            Back::Copy { shadow, fdata } => copy_back::<T>(&shadow, &fdata),
            Back::Shared(r) => r,
        }
    }
}

/// Adds the content of a loan's `shadow` to the value's `fdata`, and returns its rdata part.
fn copy_back<T: Primal>(shadow: &T::Shadow, fdata: &T::FData) -> T::RData {
    let (f, r) = T::split_tangent(T::shadow_to_tangent(shadow));
    crate::tangent::FData::increment_from(fdata, &f);
    r
}

impl<T: 'static, const N: usize, D: 'static> Lend
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<D>>
{
    type Loan<'s> = CoDual<&'s [T; N], crate::shared::SharedVec<D>>;
    type Back = ();
    #[inline(always)]
    fn lend<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> (R, ()) {
        let shadow = self.fdata.clone();
        (self.primal.with_array(|a| f(CoDual::new(a, shadow))), ())
    }
}

impl<T: Copy + 'static> Lend
    for CoDual<crate::shared::SharedCell<T>, crate::shared::SharedCell<T>>
{
    type Loan<'s> = CoDual<&'s T, crate::shared::SharedCell<T>>;
    type Back = ();
    #[inline(always)]
    fn lend<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> (R, ()) {
        let value = self.primal.get();
        (f(CoDual::new(&value, self.fdata.clone())), ())
    }
}

impl<T: 'static, D: 'static> Lend
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>>
{
    type Loan<'s> = CoDual<&'s Vec<T>, crate::shared::SharedVec<D>>;
    type Back = ();
    #[inline(always)]
    fn lend<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> (R, ()) {
        let shadow = self.fdata.clone();
        (self.primal.with_vec(|v| f(CoDual::new(v, shadow))), ())
    }
}

impl<T: Primal + 'static> Lend for CoDual<T, T::FData> {
    type Loan<'s> = CoDual<&'s T, T::Shadow>;
    type Back = ValueBack<T>;
    #[inline]
    fn lend<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> (R, ValueBack<T>) {
        if let Some((shadow, zero)) = T::fdata_as_shadow(&self.fdata) {
            return (f(CoDual::new(&self.primal, shadow)), ValueBack(Back::Shared(zero)));
        }
        let shadow = self.primal.zero_shadow();
        let r = f(CoDual::new(&self.primal, shadow.clone()));
        (r, ValueBack::new(shadow, self.fdata.clone()))
    }
}

/// `&mut v` of a value the function holds, lent to a call (`g(&mut b)` with `b: f64` a local):
/// the callee gets a fresh handle holding the value and a fresh zero shadow, as it gets any
/// `&mut` argument, and the value is read back out of the handle after the call. The reverse
/// pass seeds the shadow with the value's adjoint after the call ([`seed_back`]) before the
/// callee's pullback runs, and takes the adjoint before the call out of it ([`give_back`]).
pub trait LendMut {
    /// What the callee gets.
    type Loan;
    /// What the reverse pass needs.
    type Back: GiveBack;
    /// Runs `f` on the loan, then reads the value back; returns `f`'s result and the back.
    fn lend_mut<R>(&mut self, f: impl FnOnce(Self::Loan) -> R) -> (R, Self::Back);
}

/// What a mutable loan of a value gives back ([`LendMut`]).
pub struct MutBack<T: Primal> {
    shadow: T::Shadow,
    fdata: T::FData,
}

impl<T: Primal + crate::tangent::FromHandle + Clone> LendMut for CoDual<T, T::FData> {
    type Loan = CoDual<T::Handle, T::Shadow>;
    type Back = MutBack<T>;
    #[inline]
    fn lend_mut<R>(&mut self, f: impl FnOnce(Self::Loan) -> R) -> (R, MutBack<T>) {
        let handle = self.primal.to_handle();
        let shadow = self.primal.zero_shadow();
        let r = f(CoDual::new(handle.clone(), shadow.clone()));
        self.primal = T::from_handle(&handle);
        (r, MutBack { shadow, fdata: self.fdata.clone() })
    }
}

impl<T: Primal> GiveBack for MutBack<T> {
    type RData = T::RData;
    #[inline]
    fn give_back(self) -> T::RData {
        copy_back::<T>(&self.shadow, &self.fdata)
    }
}

/// Seeds the shadow of a mutable loan with the value's adjoint after the call (see
/// [`LendMut`]): its rdata `r`, and what the reverse of later statements added into its fdata
/// (the shadows of its buffers: `s.x[0]` read after `bump(&mut s)`), which moves into the loan's
/// shadow, leaving the fdata zero for [`give_back`] to add the adjoint before the call into.
#[inline]
pub fn seed_back<T: Primal>(b: &MutBack<T>, r: T::RData) {
    T::move_cotangent_to_shadow(&b.shadow, &b.fdata, r);
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn lend_mut<L: LendMut, R>(l: &mut L, f: impl FnOnce(L::Loan) -> R) -> (R, L::Back) {
    l.lend_mut(f)
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn lend<L: Lend, R>(l: &L, f: impl for<'s> FnOnce(L::Loan<'s>) -> R) -> (R, L::Back) {
    l.lend(f)
}

/// A field of a `&mut` argument lent shared to a call (`g(&s.w)`, `a.dot(&p.vel)` of `s, p:
/// &mut ..`), through the field's handle: a buffer borrowed out of it, a number or a
/// `#[derive(Tangent)]` struct read out of it; each with the field's own shadow, where the
/// callee's pullback adds. Nothing is given back: the shadow is the field's.
pub trait LendField {
    /// What the callee gets.
    type Loan<'s>;
    /// Runs `f` on the loan.
    fn lend_field<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> R;
}

impl<T: 'static, const N: usize, D: 'static> LendField
    for CoDual<crate::shared::SharedArray<T, N>, crate::shared::SharedVec<D>>
{
    type Loan<'s> = CoDual<&'s [T; N], crate::shared::SharedVec<D>>;
    #[inline(always)]
    fn lend_field<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> R {
        self.lend(f).0
    }
}

impl<T: Copy + 'static> LendField
    for CoDual<crate::shared::SharedCell<T>, crate::shared::SharedCell<T>>
{
    type Loan<'s> = CoDual<&'s T, crate::shared::SharedCell<T>>;
    #[inline(always)]
    fn lend_field<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> R {
        self.lend(f).0
    }
}

impl<T: 'static, D: 'static> LendField
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<D>>
{
    type Loan<'s> = CoDual<&'s Vec<T>, crate::shared::SharedVec<D>>;
    #[inline(always)]
    fn lend_field<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> R {
        self.lend(f).0
    }
}

/// A struct field: a copy read out of its handle, lent with the field's shadow.
impl<H: StructHandle> LendField for CoDual<H, <H::Primal as Primal>::Shadow>
where
    H::Primal: 'static,
{
    type Loan<'s> = CoDual<&'s H::Primal, <H::Primal as Primal>::Shadow>;
    #[inline]
    fn lend_field<R>(&self, f: impl for<'s> FnOnce(Self::Loan<'s>) -> R) -> R {
        let value = <H::Primal as crate::tangent::FromHandle>::from_handle(&self.primal);
        f(CoDual::new(&value, self.fdata.clone()))
    }
}

/// A field of a `&mut` argument lent to a call, as the parameter takes it (see [`into_parameter`]):
/// itself, or the `Vec` an array field's handle holds as the array (`&[T; N]`) or a slice.
pub trait IntoParameter<U> {
    /// The loan as the parameter.
    fn into_parameter(self) -> U;
}

impl<X> IntoParameter<X> for X {
    #[inline(always)]
    fn into_parameter(self) -> X {
        self
    }
}

impl<'s, T> IntoParameter<&'s [T]> for &'s Vec<T> {
    #[inline(always)]
    fn into_parameter(self) -> &'s [T] {
        self
    }
}

impl<'s, T, const N: usize> IntoParameter<&'s [T; N]> for &'s Vec<T> {
    /// # Panics
    /// If the field's handle does not hold `N` elements (an array field keeps its length).
    #[inline(always)]
    fn into_parameter(self) -> &'s [T; N] {
        self.as_slice().try_into().expect("mooncake: an array field's handle changed length")
    }
}

/// The free-function form generated code calls (see [`IntoParameter`]).
#[inline(always)]
pub fn into_parameter<L: IntoParameter<U>, U>(l: L) -> U {
    l.into_parameter()
}

/// The free-function form generated code calls (see [`LendField`]).
#[inline(always)]
pub fn lend_field<L: LendField, R>(l: &L, f: impl for<'s> FnOnce(L::Loan<'s>) -> R) -> (R, ()) {
    (l.lend_field(f), ())
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn give_back<B: GiveBack>(b: B) -> B::RData {
    b.give_back()
}
