//! Reverse-mode support for the code `#[differentiable]` generates: constants, operators on
//! [`CoDual`]s, casts, method-call dispatch ([`MethodRrule`]), and the accumulation of rdata.
//!
//! Every function here returns `(output, pullback)` like a rule, and calls the primitive rules
//! of [`crate::rules`]; nothing computes a derivative of its own.

use crate::dual::{CoDual, NoFData, NoRData};
use crate::float::Float;
use crate::forward::{FloatKey, IntKey, method_key};
use crate::rules::scalar::{self, CastRule};
use crate::tangent::{Primal, TangentSpace};

/// A constant: fresh zero fdata; nothing flows back.
#[inline(always)]
pub fn constant<P: Primal>(p: P) -> CoDual<P, P::FData> {
    let f = p.zero_fdata();
    CoDual::new(p, f)
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

/// Rdata types with a zero that does not depend on a primal's shape: every rdata type is one,
/// because buffers (whose size varies) keep their gradient in fdata.
pub trait ZeroRData: TangentSpace {
    /// Zero.
    fn zero() -> Self;
}

/// A zero accumulator, its type inferred from use.
#[inline(always)]
pub fn zero<R: ZeroRData>() -> R {
    R::zero()
}

impl ZeroRData for f64 {
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
}

impl ZeroRData for f32 {
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
}

impl ZeroRData for NoRData {
    #[inline(always)]
    fn zero() -> Self {
        NoRData
    }
}

impl<T: ZeroRData, const N: usize> ZeroRData for [T; N] {
    fn zero() -> Self {
        std::array::from_fn(|_| T::zero())
    }
}

impl<T: ZeroRData> ZeroRData for Option<T> {
    fn zero() -> Self {
        None
    }
}

macro_rules! tuple_zero {
    ($(($($T:ident),+))+) => {$(
        impl<$($T: ZeroRData),+> ZeroRData for ($($T,)+) {
            #[inline(always)]
            fn zero() -> Self {
                ($($T::zero(),)+)
            }
        }
    )+};
}

tuple_zero! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
}

// ---------------------------------------------------------------------------------------------
// Operators on codual values: floats through the scalar rules, integers and `bool` with no
// derivative.

macro_rules! rev_binary {
    ($($trait:ident $method:ident $rule:ident $op:tt),*) => {$(
        /// The reverse-mode rule of this operator for operands of these types.
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
    min => min_rrule, max => max_rrule
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

impl<T> HasRData for crate::shared::SharedCell<T> {
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

// ---------------------------------------------------------------------------------------------
// Buffers read in derived code.

/// A codual buffer that can be read: gives the buffer rules a `CoDual<&S, SharedVec<T>>` with
/// `S` free of the borrow's lifetime, so that their pullbacks capture no borrow.
pub trait AsRead<T> {
    /// The buffer type behind the reference.
    type S: crate::rules::buffer::ReadBuffer<T> + ?Sized;
    /// The buffer, without its shadow.
    fn buffer(&self) -> &Self::S;
    /// The shadow.
    fn shadow(&self) -> &crate::shared::SharedVec<T>;
    /// The buffer by reference, with (a clone of) its shadow.
    #[inline(always)]
    fn as_read(&self) -> CoDual<&Self::S, crate::shared::SharedVec<T>> {
        CoDual::new(self.buffer(), self.shadow().clone())
    }
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

/// `AsRead` for a codual whose primal is the buffer (`by_value`) or a reference to it.
macro_rules! as_read_impls {
    ($([$($g:tt)*] $primal:ty => $s:ty, $by:tt;)*) => {$(
        impl<$($g)*> AsRead<T> for CoDual<$primal, crate::shared::SharedVec<T>> {
            type S = $s;
            #[inline(always)]
            fn buffer(&self) -> &$s {
                as_read_impls!(@buffer self $by)
            }
            #[inline(always)]
            fn shadow(&self) -> &crate::shared::SharedVec<T> {
                &self.fdata
            }
        }
    )*};
    (@buffer $self:ident ref) => { $self.primal };
    (@buffer $self:ident value) => { &$self.primal };
}

as_read_impls! {
    [T] &[T] => [T], ref;
    [T] &Vec<T> => Vec<T>, ref;
    [T, const N: usize] &[T; N] => [T; N], ref;
    [T] Vec<T> => Vec<T>, value;
    [T] crate::shared::SharedVec<T> => crate::shared::SharedVec<T>, value;
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn as_read<T, B: AsRead<T>>(b: &B) -> CoDual<&B::S, crate::shared::SharedVec<T>> {
    b.as_read()
}

/// Element `i` of a codual buffer, however it is held (a load whose pullback derived code
/// writes inline: see [`shadow_add`]).
#[inline(always)]
pub fn read_at<T: Copy, B: AsRead<T>>(b: &B, i: usize) -> T {
    b.read_at(i)
}

/// The shadow of a codual buffer (an `Rc` clone), captured once per call by derived code.
#[inline(always)]
pub fn shadow_of<T, B: AsRead<T>>(b: &B) -> crate::shared::SharedVec<T> {
    b.shadow().clone()
}

/// `shadow[i] += r`: the adjoint of a load `x[i]`.
#[inline(always)]
pub fn shadow_add<T: Copy + std::ops::AddAssign>(
    shadow: &crate::shared::SharedVec<T>,
    i: usize,
    r: T,
) {
    shadow.add(i, r)
}

/// The length of a codual buffer, however it is held: `len()` has derivative zero, so derived
/// code computes it on the primal, with no rule and no tape.
#[inline(always)]
pub fn len_of<T, B: AsRead<T>>(b: &B) -> usize {
    b.read_len()
}

/// A codual local passed on as an argument: cloned (a copy for values, an `Rc` increment for
/// shadows), because a codual of a reference is not `Copy` even where the reference is.
#[inline(always)]
pub fn pass<P: Clone, F: Clone>(x: &CoDual<P, F>) -> CoDual<P, F> {
    x.clone()
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
}

// ---------------------------------------------------------------------------------------------
// Memory written in derived code: buffers and scalars behind `&mut` (seen through handles).

/// A codual buffer that can be written: its handle and shadow (cloning aliases).
pub trait AsWrite<T> {
    /// The handle and the shadow.
    fn as_write(&self) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>;
}

impl<T> AsWrite<T> for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>> {
    #[inline(always)]
    fn as_write(&self) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>> {
        self.clone()
    }
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn as_write<T, B: AsWrite<T>>(
    b: &B,
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>> {
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

/// A whole buffer stored through a handle: the new contents (`new`) and the shadow they came
/// with (`from`), which the pullback increments.
fn buffer_store<T: Float>(
    x: &CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>,
    new: Vec<T>,
    from: crate::shared::SharedVec<T>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
    let (handle, shadow) = (x.primal.clone(), x.fdata.clone());
    let n = new.len();
    let old = handle.replace(new);
    let old_shadow = shadow.replace(vec![T::ZERO; n]);
    (CoDual::new((), NoFData), move |_| {
        let g = shadow.replace(old_shadow);
        from.with_mut(|d| {
            assert_eq!(d.len(), g.len(), "mooncake: a stored buffer's shadow changed length");
            d.iter_mut().zip(g).for_each(|(d, g)| *d += g);
        });
        handle.replace(old);
        (NoRData, NoRData)
    })
}

impl<T: Float> StoreRule<CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>
{
    type VRData = NoRData;
    fn store_rrule(
        &self,
        v: CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>,
    ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
        buffer_store(self, v.primal.with(<[T]>::to_vec), v.fdata)
    }
}

impl<T: Float> StoreRule<CoDual<Vec<T>, crate::shared::SharedVec<T>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>
{
    type VRData = NoRData;
    fn store_rrule(
        &self,
        v: CoDual<Vec<T>, crate::shared::SharedVec<T>>,
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
pub fn into_handle<T>(
    v: CoDual<Vec<T>, crate::shared::SharedVec<T>>,
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>> {
    CoDual::new(crate::shared::SharedVec::from_vec(v.primal), v.fdata)
}

// ---------------------------------------------------------------------------------------------
// Fields of structs.

/// The reverse rule of reading a scalar field of a struct seen through a reference: the value,
/// and a pullback that adds its gradient into the field's shadow (a float's `SharedCell`;
/// nothing for an integer, whose shadow is `NoFData`).
pub trait ShadowLoad<T: Primal> {
    /// `(value, pullback)`.
    fn load(value: &T, shadow: &Self)
    -> (CoDual<T, NoFData>, impl FnOnce(T::RData) + use<T, Self>);
}

impl<T: Float> ShadowLoad<T> for crate::shared::SharedCell<T> {
    #[inline]
    fn load(value: &T, shadow: &Self) -> (CoDual<T, NoFData>, impl FnOnce(T) + use<T>) {
        let shadow = shadow.clone();
        (CoDual::new(*value, NoFData), move |dy: T| shadow.add(dy))
    }
}

impl<T: Primal<RData = NoRData> + Copy> ShadowLoad<T> for NoFData {
    #[inline]
    fn load(value: &T, _: &Self) -> (CoDual<T, NoFData>, impl FnOnce(NoRData) + use<T>) {
        (CoDual::new(*value, NoFData), |_| ())
    }
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn shadow_load_rrule<T: Primal, S: ShadowLoad<T>>(
    value: &T,
    shadow: &S,
) -> (CoDual<T, NoFData>, impl FnOnce(T::RData) + use<T, S>) {
    S::load(value, shadow)
}

/// A view of a buffer field (`&p.w`) with its shadow, for the buffer rules.
#[inline(always)]
pub fn field_view<'a, P: ?Sized, S: Clone>(primal: &'a P, shadow: &S) -> CoDual<&'a P, S> {
    CoDual::new(primal, shadow.clone())
}

/// A view of a field of a struct seen through its handle (`&mut S`): the field's own handle
/// and shadow, cloned (aliases).
#[inline(always)]
pub fn handle_view<H: Clone, S: Clone>(handle: &H, shadow: &S) -> CoDual<H, S> {
    CoDual::new(handle.clone(), shadow.clone())
}

// ---------------------------------------------------------------------------------------------
// Tape pools: a tape (the stack of one statement's pullbacks inside a loop, or the block stack)
// is taken from a thread-local pool at the start of a reverse rule and given back, empty but
// with its capacity, at the end of the pullback. Repeated gradients then reuse the memory the
// first one grew: no allocation, and no fresh pages to fault in.

/// The pool of one tape site (declared by generated code as a `thread_local!` static inside the
/// rule, one per site): type-erased, since a tape holds closures, whose types have no names.
pub type TapePool = std::cell::RefCell<Vec<Box<dyn std::any::Any>>>;

/// A tape from `pool`, or a new, empty one. A tape held by the pool always has the type `T`
/// (a site belongs to one non-generic function); one of another type is dropped.
#[inline]
pub fn take_tape<T: 'static>(pool: &'static std::thread::LocalKey<TapePool>) -> Box<Vec<T>> {
    pool.with(|p| match p.borrow_mut().pop().map(|b| b.downcast::<Vec<T>>()) {
        Some(Ok(tape)) => tape,
        _ => Box::new(Vec::new()),
    })
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

// ---------------------------------------------------------------------------------------------
// Methods of user types. A call `x.m(args)` in a derived reverse rule becomes
// `UserMethodRrule::<KEY, _>::method_rrule(method_marker::<KEY, _, _>(&x), x, args)`: the receiver's
// `CoDual` type picks a lifetime-free marker (`RecvMarker`, implemented by
// `#[differentiable] impl` blocks for each way the method's receiver can be held), and the
// marker's `UserMethodRrule` impl calls the method's reverse rule. The marker carries no
// lifetime, so the pullback captures none (`use<Self, M, K>`), which a trait keyed on the
// receiver's own type (holding a borrow) could not promise.

/// The marker of a method receiver held as `Self` (see [`UserMethodRrule`]).
#[diagnostic::on_unimplemented(
    message = "no reverse-mode rule for this method call on `{Self}`",
    label = "this method has no reverse-mode rule for a receiver held this way",
    note = "give the method a rule: put `#[differentiable]` on its `impl` block (reverse mode lends `&self` methods receivers held by value, behind `&` or behind `&mut`, `&mut self` methods receivers behind `&mut`, and `self` methods receivers held by value)"
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

impl<T: Clone> AsResult<CoDual<Vec<T>, crate::shared::SharedVec<T>>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>
{
    type Ret = NoRData;
    type Own = NoRData;
    type Link = ();
    fn as_result(&self) -> (CoDual<Vec<T>, crate::shared::SharedVec<T>>, ()) {
        (CoDual::new(self.primal.with(<[T]>::to_vec), self.fdata.clone()), ())
    }
    #[inline(always)]
    fn return_adjoint(_: (), _: NoRData) -> NoRData {
        NoRData
    }
}

impl<T: Float, const N: usize> AsResult<CoDual<[T; N], [NoFData; N]>>
    for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>>
{
    type Ret = [T; N];
    type Own = NoRData;
    type Link = crate::shared::SharedVec<T>;
    fn as_result(&self) -> (CoDual<[T; N], [NoFData; N]>, crate::shared::SharedVec<T>) {
        let v = self.primal.to_vec();
        match <[T; N]>::try_from(v) {
            Ok(a) => (CoDual::new(a, [NoFData; N]), self.fdata.clone()),
            Err(v) => panic!(
                "mooncake: an array result of length {N} was built with {} elements",
                v.len()
            ),
        }
    }
    fn return_adjoint(shadow: crate::shared::SharedVec<T>, r: [T; N]) -> NoRData {
        shadow.with_mut(|s| s.iter_mut().zip(r).for_each(|(d, r)| *d += r));
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
) -> CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T::Tangent>> {
    let shadow =
        crate::shared::SharedVec::from_vec(x.primal.iter().map(Primal::zero_tangent).collect());
    CoDual::new(crate::shared::SharedVec::from_vec(Vec::from(x.primal)), shadow)
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
pub struct ValueBack<T: Primal> {
    shadow: T::Shadow,
    fdata: T::FData,
}

impl<T: Primal> ValueBack<T> {
    /// `shadow`'s content, to be given back to a value with fdata `fdata`.
    #[inline(always)]
    pub fn new(shadow: T::Shadow, fdata: T::FData) -> Self {
        ValueBack { shadow, fdata }
    }
}

impl<T: Primal> GiveBack for ValueBack<T> {
    type RData = T::RData;
    fn give_back(self) -> T::RData {
        let (f, r) = T::split_tangent(T::shadow_to_tangent(&self.shadow));
        crate::tangent::FData::increment_from(&self.fdata, &f);
        r
    }
}

impl<T: 'static> Lend for CoDual<crate::shared::SharedVec<T>, crate::shared::SharedVec<T>> {
    type Loan<'s> = CoDual<&'s Vec<T>, crate::shared::SharedVec<T>>;
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
        let shadow = self.primal.zero_shadow();
        let r = f(CoDual::new(&self.primal, shadow.clone()));
        (r, ValueBack::new(shadow, self.fdata.clone()))
    }
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn lend<L: Lend, R>(l: &L, f: impl for<'s> FnOnce(L::Loan<'s>) -> R) -> (R, L::Back) {
    l.lend(f)
}

/// The free-function form generated code calls.
#[inline(always)]
pub fn give_back<B: GiveBack>(b: B) -> B::RData {
    b.give_back()
}
