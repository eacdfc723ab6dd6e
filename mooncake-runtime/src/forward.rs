//! Forward-mode support for the code `#[differentiable]` generates: constants, operators and
//! comparisons on [`Dual`]s, casts, and method-call dispatch ([`MethodFrule`]).
//!
//! Everything here calls the primitive rules of [`crate::rules`]; nothing computes a derivative
//! of its own.

use crate::dual::{Dual, NoTangent};
use crate::element::{Element, SumElement};
use crate::float::Float;
pub use crate::keys::{BufferKey, FloatKey, IntKey, method_key};
use crate::lanes::Directions;
#[cfg(doc)]
use crate::lanes::Lanes;
use crate::rules::buffer::{self, ReadBuffer, WriteBuffer};
use crate::rules::scalar::{self, CastRule};
use crate::tangent::Primal;

pub mod const_operand;
pub mod dialect;
pub mod lanes;

/// A constant: its tangent is zero.
///
/// ```
/// use mooncake_runtime::forward::constant;
/// let c = constant(2.5_f64);
/// assert_eq!((c.primal, c.tangent), (2.5, 0.0));
/// ```
#[inline(always)]
pub fn constant<P: Primal>(p: P) -> Dual<P, P::Tangent> {
    let t = p.zero_tangent();
    Dual::new(p, t)
}

/// `x as B`, through [`scalar::cast_frule`].
#[inline(always)]
pub fn cast<A: CastRule<B>, B: Primal>(x: Dual<A, A::Tangent>) -> Dual<B, B::Tangent> {
    scalar::cast_frule(x)
}

macro_rules! comparisons {
    ($($name:ident: $op:tt;)*) => {$(
        /// A comparison of primal values of one type (so that an integer literal takes the
        /// other side's type, `1 > n` with `n: usize`): a `bool` with no tangent.
        #[inline(always)]
        pub fn $name<P: PartialOrd, TA, TB>(a: Dual<P, TA>, b: Dual<P, TB>) -> Dual<bool, NoTangent> {
            Dual::new(a.primal $op b.primal, NoTangent)
        }
    )*};
}

/// `x == "literal"` for a string-like `x` (`String`, `&str`): the primal against the literal, a
/// `bool` with no tangent.
#[inline(always)]
pub fn eq_literal<P: PartialEq<L>, L, T>(a: &Dual<P, T>, lit: L) -> Dual<bool, NoTangent> {
    Dual::new(a.primal == lit, NoTangent)
}

/// `x != "literal"`: see [`eq_literal`].
#[inline(always)]
pub fn ne_literal<P: PartialEq<L>, L, T>(a: &Dual<P, T>, lit: L) -> Dual<bool, NoTangent> {
    Dual::new(a.primal != lit, NoTangent)
}

comparisons! {
    lt: <;
    le: <=;
    gt: >;
    ge: >=;
    eq: ==;
    ne: !=;
}

// ---------------------------------------------------------------------------------------------
// Operators on duals of floats (through the scalar rules), of integers and of `bool`.

// Value-value, reference-value and value-reference operators are generic over `T: Float`, so
// that generic `#[differentiable]` functions over `T: Float` work; reference-reference and
// negation of a reference are per type, because a generic impl of those would overlap the
// value-value one as far as coherence can tell.
macro_rules! float_binops {
    ($($trait:ident $method:ident $rule:ident),*) => {$(
        impl<T: Float> std::ops::$trait for Dual<T, T> {
            type Output = Dual<T, T>;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Dual<T, T> {
                scalar::$rule(self, rhs)
            }
        }
        impl<'a, T: Float> std::ops::$trait<Dual<&'a T, &'a T>> for Dual<T, T> {
            type Output = Dual<T, T>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'a T, &'a T>) -> Dual<T, T> {
                scalar::$rule(self, Dual::new(*rhs.primal, *rhs.tangent))
            }
        }
        impl<'a, T: Float> std::ops::$trait<Dual<T, T>> for Dual<&'a T, &'a T> {
            type Output = Dual<T, T>;
            #[inline(always)]
            fn $method(self, rhs: Dual<T, T>) -> Dual<T, T> {
                scalar::$rule(Dual::new(*self.primal, *self.tangent), rhs)
            }
        }
    )*};
}

float_binops!(Add add add_frule, Sub sub sub_frule, Mul mul mul_frule, Div div div_frule, Rem rem rem_frule);

impl<T: Float> std::ops::Neg for Dual<T, T> {
    type Output = Dual<T, T>;
    #[inline(always)]
    fn neg(self) -> Dual<T, T> {
        scalar::neg_frule(self)
    }
}

macro_rules! float_ref_ops {
    ($f:ty: $($trait:ident $method:ident $rule:ident),*) => {$(
        impl<'a, 'b> std::ops::$trait<Dual<&'b $f, &'b $f>> for Dual<&'a $f, &'a $f> {
            type Output = Dual<$f, $f>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'b $f, &'b $f>) -> Dual<$f, $f> {
                scalar::$rule(Dual::new(*self.primal, *self.tangent), Dual::new(*rhs.primal, *rhs.tangent))
            }
        }
    )*
        impl std::ops::Neg for Dual<&$f, &$f> {
            type Output = Dual<$f, $f>;
            #[inline(always)]
            fn neg(self) -> Dual<$f, $f> {
                scalar::neg_frule(Dual::new(*self.primal, *self.tangent))
            }
        }
    };
}

float_ref_ops!(f64: Add add add_frule, Sub sub sub_frule, Mul mul mul_frule, Div div div_frule, Rem rem rem_frule);
float_ref_ops!(f32: Add add add_frule, Sub sub sub_frule, Mul mul mul_frule, Div div div_frule, Rem rem rem_frule);

macro_rules! nondiff_binops {
    ($t:ty: $($trait:ident $method:ident $op:tt),*) => {$(
        impl std::ops::$trait for Dual<$t, NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Self::Output {
                Dual::new(self.primal $op rhs.primal, NoTangent)
            }
        }
        impl<'a> std::ops::$trait<Dual<&'a $t, &'a NoTangent>> for Dual<$t, NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'a $t, &'a NoTangent>) -> Self::Output {
                Dual::new(self.primal $op *rhs.primal, NoTangent)
            }
        }
        impl<'a> std::ops::$trait<Dual<$t, NoTangent>> for Dual<&'a $t, &'a NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn $method(self, rhs: Dual<$t, NoTangent>) -> Self::Output {
                Dual::new(*self.primal $op rhs.primal, NoTangent)
            }
        }
        impl<'a, 'b> std::ops::$trait<Dual<&'b $t, &'b NoTangent>> for Dual<&'a $t, &'a NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'b $t, &'b NoTangent>) -> Self::Output {
                Dual::new(*self.primal $op *rhs.primal, NoTangent)
            }
        }
    )*};
}

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        nondiff_binops!($t: Add add +, Sub sub -, Mul mul *, Div div /, Rem rem %,
            BitAnd bitand &, BitOr bitor |, BitXor bitxor ^, Shl shl <<, Shr shr >>);
        impl std::ops::Not for Dual<$t, NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn not(self) -> Self::Output {
                Dual::new(!self.primal, NoTangent)
            }
        }
    )*};
}

int_ops!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! int_neg {
    ($($t:ty),*) => {$(
        impl std::ops::Neg for Dual<$t, NoTangent> {
            type Output = Dual<$t, NoTangent>;
            #[inline(always)]
            fn neg(self) -> Self::Output {
                Dual::new(-self.primal, NoTangent)
            }
        }
    )*};
}

int_neg!(i8, i16, i32, i64, i128, isize);

nondiff_binops!(bool: BitAnd bitand &, BitOr bitor |, BitXor bitxor ^);

impl std::ops::Not for Dual<bool, NoTangent> {
    type Output = Dual<bool, NoTangent>;
    #[inline(always)]
    fn not(self) -> Self::Output {
        Dual::new(!self.primal, NoTangent)
    }
}

impl<'a> std::ops::Not for Dual<&'a bool, &'a NoTangent> {
    type Output = Dual<bool, NoTangent>;
    #[inline(always)]
    fn not(self) -> Self::Output {
        Dual::new(!*self.primal, NoTangent)
    }
}

// ---------------------------------------------------------------------------------------------
// Method calls.

/// The forward-mode rule of the method named by `M` ([`method_key`]) on a receiver of type
/// `Self` (always `&mut` a `Dual`; the impl reborrows or copies it as the method takes `self`).
/// `K` is a key type that keeps impls for different receivers apart (the receiver's primal type
/// for user methods).
///
/// Generated code calls `let (r, f) = MethodFrule::<M, _>::method_frule(&mut x); f(r, args..)`,
/// so that the arguments are passed to a function pointer and coerce as in the primal call.
#[diagnostic::on_unimplemented(
    message = "no forward-mode rule for this method call on `{Self}`",
    label = "this method has no rule",
    note = "give the method a rule: put `#[differentiable]` on its `impl` block, write a hand-written \
            rule, or declare it with `zero_adjoint!`"
)]
pub trait MethodFrule<const M: u64, K> {
    /// The receiver as the rule takes it.
    type Receiver;
    /// The rule: a function pointer taking the receiver, then the method's arguments.
    type Rule;
    /// The receiver, and the rule to call with it.
    fn method_frule(self) -> (Self::Receiver, Self::Rule);
}

/// A dual of a float, by value or behind a reference: what float methods accept as receiver.
/// (A batched rule's receivers, whose tangents are [`Lanes`], are `lanes::LanesFloatDual`s:
/// impls of this trait for them would leave the float type of a literal receiver ambiguous
/// here.)
pub trait FloatDual<F: Float> {
    /// The tangent type.
    type Dirs: Directions<F>;
    /// The dual's value.
    fn value(&self) -> Dual<F, Self::Dirs>;
}

impl<F: Float> FloatDual<F> for Dual<F, F> {
    type Dirs = F;
    #[inline(always)]
    fn value(&self) -> Dual<F, F> {
        *self
    }
}

impl<F: Float> FloatDual<F> for Dual<&F, &F> {
    type Dirs = F;
    #[inline(always)]
    fn value(&self) -> Dual<F, F> {
        Dual::new(*self.primal, *self.tangent)
    }
}

impl<F: Float> FloatDual<F> for Dual<&mut F, &mut F> {
    type Dirs = F;
    #[inline(always)]
    fn value(&self) -> Dual<F, F> {
        Dual::new(*self.primal, *self.tangent)
    }
}

macro_rules! float_methods {
    (unary: $($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: Float, D: FloatDual<F>> MethodFrule<{ method_key(stringify!($name)) }, FloatKey<F>> for &'b mut D {
            type Receiver = Dual<F, D::Dirs>;
            type Rule = fn(Dual<F, D::Dirs>) -> Dual<F, D::Dirs>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), scalar::$rule::<F, D::Dirs>)
            }
        }
    )*};
    (binary: $($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: Float, D: FloatDual<F>> MethodFrule<{ method_key(stringify!($name)) }, FloatKey<F>> for &'b mut D {
            type Receiver = Dual<F, D::Dirs>;
            type Rule = fn(Dual<F, D::Dirs>, Dual<F, D::Dirs>) -> Dual<F, D::Dirs>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), scalar::$rule::<F, D::Dirs>)
            }
        }
    )*};
    (ternary: $($name:ident => $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: Float, D: FloatDual<F>> MethodFrule<{ method_key(stringify!($name)) }, FloatKey<F>> for &'b mut D {
            type Receiver = Dual<F, D::Dirs>;
            type Rule = fn(Dual<F, D::Dirs>, Dual<F, D::Dirs>, Dual<F, D::Dirs>) -> Dual<F, D::Dirs>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), scalar::$rule::<F, D::Dirs>)
            }
        }
    )*};
}

float_methods!(unary:
    sin => sin_frule, cos => cos_frule, tan => tan_frule, asin => asin_frule, acos => acos_frule,
    atan => atan_frule, sinh => sinh_frule, cosh => cosh_frule, tanh => tanh_frule,
    asinh => asinh_frule, acosh => acosh_frule, atanh => atanh_frule, exp => exp_frule,
    exp2 => exp2_frule, exp_m1 => exp_m1_frule, ln => ln_frule, ln_1p => ln_1p_frule,
    log2 => log2_frule, log10 => log10_frule, sqrt => sqrt_frule, cbrt => cbrt_frule,
    abs => abs_frule, signum => signum_frule, recip => recip_frule,
    to_degrees => to_degrees_frule, to_radians => to_radians_frule, floor => floor_frule,
    ceil => ceil_frule, round => round_frule, trunc => trunc_frule, fract => fract_frule,
    neg => neg_frule
);
float_methods!(binary:
    atan2 => atan2_frule, hypot => hypot_frule, powf => powf_frule, log => log_frule,
    min => min_frule, max => max_frule, rem_euclid => rem_euclid_frule, copysign => copysign_frule,
    // The operators as their traits' methods (`x.mul(y)`): what derived code calls where
    // lowering reads a capitalised type as a user's vector type and it is an alias of a float.
    add => add_frule, sub => sub_frule, mul => mul_frule, div => div_frule
);
float_methods!(ternary: mul_add => mul_add_frule, clamp => clamp_frule);

#[diagnostic::do_not_recommend]
impl<F: Float, D: FloatDual<F>> MethodFrule<{ method_key("powi") }, FloatKey<F>> for &mut D {
    type Receiver = Dual<F, D::Dirs>;
    type Rule = fn(Dual<F, D::Dirs>, Dual<i32, NoTangent>) -> Dual<F, D::Dirs>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), scalar::powi_frule::<F, D::Dirs>)
    }
}

#[diagnostic::do_not_recommend]
impl<F: Float, D: FloatDual<F>> MethodFrule<{ method_key("sin_cos") }, FloatKey<F>> for &mut D {
    type Receiver = Dual<F, D::Dirs>;
    type Rule = fn(Dual<F, D::Dirs>) -> Dual<(F, F), (D::Dirs, D::Dirs)>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), scalar::sin_cos_frule::<F, D::Dirs>)
    }
}

/// A dual of an integer, by value or behind a reference.
pub trait IntDual<I> {
    /// The dual's value.
    fn value(&self) -> Dual<I, NoTangent>;
}

macro_rules! int_methods {
    ($($t:ty),*) => {$(
        impl IntDual<$t> for Dual<$t, NoTangent> {
            #[inline(always)]
            fn value(&self) -> Dual<$t, NoTangent> {
                *self
            }
        }
        impl IntDual<$t> for Dual<&$t, &NoTangent> {
            #[inline(always)]
            fn value(&self) -> Dual<$t, NoTangent> {
                Dual::new(*self.primal, NoTangent)
            }
        }
        impl IntDual<$t> for Dual<&mut $t, &mut NoTangent> {
            #[inline(always)]
            fn value(&self) -> Dual<$t, NoTangent> {
                Dual::new(*self.primal, NoTangent)
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
        impl<D: IntDual<$t>> MethodFrule<{ method_key("clamp") }, IntKey<$t>> for &mut D {
            type Receiver = Dual<$t, NoTangent>;
            type Rule = fn(Dual<$t, NoTangent>, Dual<$t, NoTangent>, Dual<$t, NoTangent>) -> Dual<$t, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), |a, lo, hi| Dual::new(a.primal.clamp(lo.primal, hi.primal), NoTangent))
            }
        }
    };
    (@binary $t:ty, $out:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<D: IntDual<$t>> MethodFrule<{ method_key(stringify!($name)) }, IntKey<$t>> for &mut D {
            type Receiver = Dual<$t, NoTangent>;
            type Rule = fn(Dual<$t, NoTangent>, Dual<$t, NoTangent>) -> Dual<$out, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), |a, b| Dual::new(a.primal.$name(b.primal), NoTangent))
            }
        }
    )*};
    (@checked $t:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<D: IntDual<$t>> MethodFrule<{ method_key(stringify!($name)) }, IntKey<$t>> for &mut D {
            type Receiver = Dual<$t, NoTangent>;
            type Rule = fn(Dual<$t, NoTangent>, Dual<$t, NoTangent>) -> Dual<Option<$t>, Option<NoTangent>>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), |a, b| {
                    let y = a.primal.$name(b.primal);
                    Dual::new(y, y.map(|_| NoTangent))
                })
            }
        }
    )*};
    (@unary $t:ty, $out:ty: $($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<D: IntDual<$t>> MethodFrule<{ method_key(stringify!($name)) }, IntKey<$t>> for &mut D {
            type Receiver = Dual<$t, NoTangent>;
            type Rule = fn(Dual<$t, NoTangent>) -> Dual<$out, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), |a| Dual::new(a.primal.$name(), NoTangent))
            }
        }
    )*};
}

crate::keys::integer_method_families!(int_more_methods);

fn int_min<I: Ord>(a: Dual<I, NoTangent>, b: Dual<I, NoTangent>) -> Dual<I, NoTangent> {
    Dual::new(a.primal.min(b.primal), NoTangent)
}

fn int_max<I: Ord>(a: Dual<I, NoTangent>, b: Dual<I, NoTangent>) -> Dual<I, NoTangent> {
    Dual::new(a.primal.max(b.primal), NoTangent)
}

#[diagnostic::do_not_recommend]
impl<I: Ord, D: IntDual<I>> MethodFrule<{ method_key("min") }, IntKey<I>> for &mut D {
    type Receiver = Dual<I, NoTangent>;
    type Rule = fn(Dual<I, NoTangent>, Dual<I, NoTangent>) -> Dual<I, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), int_min::<I>)
    }
}

#[diagnostic::do_not_recommend]
impl<I: Ord, D: IntDual<I>> MethodFrule<{ method_key("max") }, IntKey<I>> for &mut D {
    type Receiver = Dual<I, NoTangent>;
    type Rule = fn(Dual<I, NoTangent>, Dual<I, NoTangent>) -> Dual<I, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), int_max::<I>)
    }
}

// Buffers: the receiver is reborrowed (`&` for reads, `&mut` for writes), and the buffer rules
// are generic over how the buffer is held.

#[diagnostic::do_not_recommend]
impl<'b, E, P: ReadBuffer<E>, T> MethodFrule<{ method_key("len") }, BufferKey<E>>
    for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<usize, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), buffer::len_frule::<E, &'b P, &'b T>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: SumElement, P: ReadBuffer<E>, T: ReadBuffer<E::Tangent>>
    MethodFrule<{ method_key("__iter_sum") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<E, E::Tangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), buffer::sum_frule::<E, &'b P, &'b T>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + Clone, P: ReadBuffer<E>, T: ReadBuffer<E::Tangent>>
    MethodFrule<{ method_key("to_vec") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(Dual<&'b P, &'b T>) -> Dual<Vec<E>, Vec<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), buffer::to_vec_frule::<E, &'b P, &'b T>)
    }
}

/// A sub-slice `&x[a..b]` as derived code reads it: a copy (see `sub_to_vec_frule`).
#[diagnostic::do_not_recommend]
impl<'b, E: Primal + Clone, P: ReadBuffer<E>, T: ReadBuffer<E::Tangent>>
    MethodFrule<{ method_key("__sub_to_vec") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b P, &'b T>;
    type Rule = fn(
        Dual<&'b P, &'b T>,
        Dual<usize, NoTangent>,
        Dual<usize, NoTangent>,
    ) -> Dual<Vec<E>, Vec<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&self.primal, &self.tangent), buffer::sub_to_vec_frule::<E, &'b P, &'b T>)
    }
}

/// A copy written back into a sub-slice after `&mut x[a..b]` was lent (see
/// `sub_assign_frule`).
#[diagnostic::do_not_recommend]
impl<'b, E: Element, P: WriteBuffer<E>, T: WriteBuffer<E::Tangent>>
    MethodFrule<{ method_key("__sub_assign") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = for<'s> fn(
        Dual<&'b mut P, &'b mut T>,
        Dual<usize, NoTangent>,
        Dual<&'s [E], &'s [E::Tangent]>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |d, i, s| {
            buffer::sub_assign_frule(d, i, s)
        })
    }
}

/// `v.clone()` of a `Vec` held by value.
#[diagnostic::do_not_recommend]
impl<'b, E: Primal + Clone> MethodFrule<{ method_key("clone") }, BufferKey<E>>
    for &'b mut Dual<Vec<E>, Vec<E::Tangent>>
{
    type Receiver = Dual<&'b Vec<E>, &'b Vec<E::Tangent>>;
    type Rule = fn(Dual<&'b Vec<E>, &'b Vec<E::Tangent>>) -> Dual<Vec<E>, Vec<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (
            Dual::new(&self.primal, &self.tangent),
            buffer::vec_clone_frule::<E, &'b Vec<E>, &'b Vec<E::Tangent>>,
        )
    }
}

/// `v.clone()` of a `Vec` behind a shared reference (Rust's method lookup derefs to `Vec`).
/// The primal and the tangent may be borrowed for different lifetimes (a rule's argument
/// `&Vec<f64>` is `Dual<&Vec<f64>, &Vec<f64>>` with two elided lifetimes).
#[diagnostic::do_not_recommend]
impl<'a, 'c, E: Primal + Clone> MethodFrule<{ method_key("clone") }, BufferKey<E>>
    for &mut Dual<&'a Vec<E>, &'c Vec<E::Tangent>>
{
    type Receiver = Dual<&'a Vec<E>, &'c Vec<E::Tangent>>;
    type Rule = fn(Dual<&'a Vec<E>, &'c Vec<E::Tangent>>) -> Dual<Vec<E>, Vec<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (*self, buffer::vec_clone_frule::<E, &'a Vec<E>, &'c Vec<E::Tangent>>)
    }
}

/// `v.clone()` of a `Vec` behind `&mut`: reborrowed shared for the copy.
#[diagnostic::do_not_recommend]
impl<'b, E: Primal + Clone> MethodFrule<{ method_key("clone") }, BufferKey<E>>
    for &'b mut Dual<&mut Vec<E>, &mut Vec<E::Tangent>>
{
    type Receiver = Dual<&'b Vec<E>, &'b Vec<E::Tangent>>;
    type Rule = fn(Dual<&'b Vec<E>, &'b Vec<E::Tangent>>) -> Dual<Vec<E>, Vec<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (
            Dual::new(&*self.primal, &*self.tangent),
            buffer::vec_clone_frule::<E, &'b Vec<E>, &'b Vec<E::Tangent>>,
        )
    }
}

/// `v.clone()` of a value of a user type (a `#[derive(Tangent)]` struct) where the function's
/// text does not show its type: an element of a buffer of structs (`for p in ps.iter() { let c =
/// p.clone(); .. }`), a local read from a field or returned by a method, an element of
/// `iter_mut()`. The value and its tangent cloned; one impl per way the receiver is held.
macro_rules! user_value_clone {
    ($($(#[$doc:meta])* [$($lt:lifetime),*] $recv:ty => |$d:ident| ($p:expr, $t:expr);)*) => {$(
        $(#[$doc])*
        #[diagnostic::do_not_recommend]
        impl<'b, $($lt,)* S> MethodFrule<{ method_key("clone") }, crate::keys::UserKey<S>>
            for &'b mut $recv
        where
            S: Primal + Clone + crate::reverse::UserValue,
            S::Tangent: Clone,
        {
            type Receiver = Dual<&'b S, &'b S::Tangent>;
            type Rule = fn(Dual<&'b S, &'b S::Tangent>) -> Dual<S, S::Tangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                let $d = self;
                (Dual::new($p, $t), |d| Dual::new(d.primal.clone(), d.tangent.clone()))
            }
        }
    )*};
}

user_value_clone! {
    /// Behind a shared reference.
    ['a, 'c] Dual<&'a S, &'c S::Tangent> => |d| (d.primal, d.tangent);
    /// Held by value.
    [] Dual<S, S::Tangent> => |d| (&d.primal, &d.tangent);
    /// Behind `&mut`.
    [] Dual<&mut S, &mut S::Tangent> => |d| (&*d.primal, &*d.tangent);
}

macro_rules! write_methods {
    ($($name:literal => |$($arg:ident: $ty:ty),*| $rule:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, E: Element, P: WriteBuffer<E>, T: WriteBuffer<E::Tangent>> MethodFrule<{ method_key($name) }, BufferKey<E>>
            for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b mut P, &'b mut T>;
            type Rule = fn(Dual<&'b mut P, &'b mut T> $(, $ty)*) -> Dual<(), NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (Dual::new(&mut self.primal, &mut self.tangent), buffer::$rule::<E, &'b mut P, &'b mut T>)
            }
        }
    )*};
}

/// `x.swap(a, b)` of a buffer of any elements (rows of a `Vec<Vec<f64>>` too).
#[diagnostic::do_not_recommend]
impl<'b, E: Primal, P: WriteBuffer<E>, T: WriteBuffer<E::Tangent>>
    MethodFrule<{ method_key("swap") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = fn(
        Dual<&'b mut P, &'b mut T>,
        Dual<usize, NoTangent>,
        Dual<usize, NoTangent>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (
            Dual::new(&mut self.primal, &mut self.tangent),
            buffer::swap_frule::<E, &'b mut P, &'b mut T>,
        )
    }
}

write_methods!(
    "fill" => |v: Dual<E, E::Tangent>| fill_frule,
    "__sort_by" => |descending: Dual<bool, NoTangent>, total: Dual<bool, NoTangent>| sort_by_frule,
    "reverse" => | | reverse_frule
);

#[diagnostic::do_not_recommend]
impl<'b, E: Element, P: WriteBuffer<E>, T: WriteBuffer<E::Tangent>>
    MethodFrule<{ method_key("copy_from_slice") }, BufferKey<E>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut P, &'b mut T>;
    type Rule = for<'s> fn(
        Dual<&'b mut P, &'b mut T>,
        Dual<&'s [E], &'s [E::Tangent]>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (Dual::new(&mut self.primal, &mut self.tangent), |d, s| buffer::copy_from_slice_frule(d, s))
    }
}

/// A dual of a `Vec` that can grow: by value or behind `&mut`.
pub trait VecDual<E: Primal> {
    /// The `Vec`s, mutably.
    fn vecs(&mut self) -> Dual<&mut Vec<E>, &mut Vec<E::Tangent>>;
}

impl<E: Primal> VecDual<E> for Dual<Vec<E>, Vec<E::Tangent>> {
    #[inline(always)]
    fn vecs(&mut self) -> Dual<&mut Vec<E>, &mut Vec<E::Tangent>> {
        Dual::new(&mut self.primal, &mut self.tangent)
    }
}

impl<E: Primal> VecDual<E> for Dual<&mut Vec<E>, &mut Vec<E::Tangent>> {
    #[inline(always)]
    fn vecs(&mut self) -> Dual<&mut Vec<E>, &mut Vec<E::Tangent>> {
        Dual::new(&mut *self.primal, &mut *self.tangent)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + 'static, D: VecDual<E>> MethodFrule<{ method_key("push") }, BufferKey<E>>
    for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule = fn(
        Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>,
        Dual<E, E::Tangent>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), buffer::push_frule::<E>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + 'static, D: VecDual<E>> MethodFrule<{ method_key("pop") }, BufferKey<E>>
    for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule =
        fn(Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>) -> Dual<Option<E>, Option<E::Tangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), buffer::pop_frule::<E>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + 'static, D: VecDual<E>> MethodFrule<{ method_key("clear") }, BufferKey<E>>
    for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule = fn(Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), buffer::clear_frule::<E>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + 'static, D: VecDual<E>> MethodFrule<{ method_key("truncate") }, BufferKey<E>>
    for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule = fn(
        Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>,
        Dual<usize, NoTangent>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), buffer::truncate_frule::<E>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Element, D: VecDual<E>> MethodFrule<{ method_key("resize") }, BufferKey<E>>
    for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule = fn(
        Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>,
        Dual<usize, NoTangent>,
        Dual<E, E::Tangent>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), buffer::resize_frule::<E>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, E: Primal + Clone + 'static, D: VecDual<E>>
    MethodFrule<{ method_key("extend_from_slice") }, BufferKey<E>> for &'b mut D
{
    type Receiver = Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>;
    type Rule = for<'s> fn(
        Dual<&'b mut Vec<E>, &'b mut Vec<E::Tangent>>,
        Dual<&'s [E], &'s [E::Tangent]>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.vecs(), |x, s| buffer::extend_from_slice_frule::<E>(x, s))
    }
}

/// `Vec::new()`.
#[inline(always)]
pub fn vec_new<E: Primal>() -> Dual<Vec<E>, Vec<E::Tangent>> {
    buffer::vec_new_frule()
}

/// `Vec::with_capacity(n)`.
#[inline(always)]
pub fn vec_with_capacity<E: Primal>(n: Dual<usize, NoTangent>) -> Dual<Vec<E>, Vec<E::Tangent>> {
    buffer::vec_with_capacity_frule(n)
}

// ---------------------------------------------------------------------------------------------
// `#[differentiable(debug)]`: run-time checks that every float the rule computes is finite.

/// The check `#[differentiable(debug)]` inserts after each assignment of a float dual: panics,
/// naming the variable and the line, if the primal or the tangent is not finite. Chosen over
/// [`DebugCheckFallback`] by method resolution when the type is a float dual.
pub trait DebugCheck {
    /// Panics if the value or its tangent is not finite.
    fn mooncake_debug_check(&self, what: &str, line: u32);
}

impl<F: Float> DebugCheck for Dual<F, F> {
    #[track_caller]
    fn mooncake_debug_check(&self, what: &str, line: u32) {
        if !self.primal.is_finite() || !self.tangent.is_finite() {
            panic!(
                "#[differentiable(debug)]: {what} (line {line}) is not finite: value {}, tangent {}",
                self.primal, self.tangent
            );
        }
    }
}

/// The no-op check for every value that is not a float dual (see [`DebugCheck`]).
pub trait DebugCheckFallback {
    /// Does nothing.
    fn mooncake_debug_check(&self, _what: &str, _line: u32) {}
}

impl<T> DebugCheckFallback for &T {}

// ---------------------------------------------------------------------------------------------
// Non-differentiable methods on floats (predicates) and integers.

macro_rules! float_predicates {
    ($($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<F: Float, D: FloatDual<F>> MethodFrule<{ method_key(stringify!($name)) }, FloatKey<F>> for &mut D {
            type Receiver = Dual<F, D::Dirs>;
            type Rule = fn(Dual<F, D::Dirs>) -> Dual<bool, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (self.value(), |x| Dual::new(x.primal.$name(), NoTangent))
            }
        }
    )*};
}

float_predicates!(is_nan, is_finite, is_infinite, is_sign_positive, is_sign_negative);

/// The predicates of an `Ordering` (`a.total_cmp(&b).is_lt()`): no derivative.
macro_rules! ordering_predicates {
    ($($name:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl MethodFrule<{ method_key(stringify!($name)) }, IntKey<std::cmp::Ordering>>
            for &mut Dual<std::cmp::Ordering, NoTangent>
        {
            type Receiver = Dual<std::cmp::Ordering, NoTangent>;
            type Rule = fn(Dual<std::cmp::Ordering, NoTangent>) -> Dual<bool, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (*self, |o| Dual::new(o.primal.$name(), NoTangent))
            }
        }
    )*};
}

ordering_predicates!(is_lt, is_le, is_gt, is_ge, is_eq, is_ne);

/// `a.total_cmp(&b)`: the IEEE total order (of the real parts of dual numbers). Written with
/// the argument by value: lowering drops the `&` of a comparison of numbers.
#[inline(always)]
pub fn total_cmp_of<F: Float>(a: F, b: F) -> std::cmp::Ordering {
    a.to_f64().total_cmp(&b.to_f64())
}

#[diagnostic::do_not_recommend]
impl<F: Float, D: FloatDual<F>> MethodFrule<{ method_key("total_cmp") }, FloatKey<F>> for &mut D {
    type Receiver = Dual<F, D::Dirs>;
    type Rule = fn(Dual<F, D::Dirs>, Dual<F, D::Dirs>) -> Dual<std::cmp::Ordering, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), |a, b| Dual::new(total_cmp_of(a.primal, b.primal), NoTangent))
    }
}

#[diagnostic::do_not_recommend]
impl<F: Float, D: FloatDual<F>> MethodFrule<{ method_key("partial_cmp") }, FloatKey<F>> for &mut D {
    type Receiver = Dual<F, D::Dirs>;
    type Rule = fn(
        Dual<F, D::Dirs>,
        Dual<F, D::Dirs>,
    ) -> Dual<Option<std::cmp::Ordering>, Option<NoTangent>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (self.value(), |a, b| {
            let o = a.primal.partial_cmp(&b.primal);
            Dual::new(o, o.map(|_| NoTangent))
        })
    }
}

macro_rules! int_pow_abs {
    (pow: $($t:ty),*; abs: $($s:ty),*) => {
        $(
            #[diagnostic::do_not_recommend]
            impl<D: IntDual<$t>> MethodFrule<{ method_key("pow") }, IntKey<$t>> for &mut D {
                type Receiver = Dual<$t, NoTangent>;
                type Rule = fn(Dual<$t, NoTangent>, Dual<u32, NoTangent>) -> Dual<$t, NoTangent>;
                #[inline(always)]
                fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                    (self.value(), |x, n| Dual::new(x.primal.pow(n.primal), NoTangent))
                }
            }
        )*
        $(
            #[diagnostic::do_not_recommend]
            impl<D: IntDual<$s>> MethodFrule<{ method_key("abs") }, IntKey<$s>> for &mut D {
                type Receiver = Dual<$s, NoTangent>;
                type Rule = fn(Dual<$s, NoTangent>) -> Dual<$s, NoTangent>;
                #[inline(always)]
                fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                    (self.value(), |x| Dual::new(x.primal.abs(), NoTangent))
                }
            }
        )*
    };
}

int_pow_abs!(
    pow: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize;
    abs: i8, i16, i32, i64, i128, isize
);
