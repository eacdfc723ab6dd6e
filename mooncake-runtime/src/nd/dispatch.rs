//! How derived code reaches the rules of [`super::rules`].
//!
//! Forward mode: operators (`a + b`, `a - b`, `a * b` element-wise, `-a`, `a * s`, `s * a`,
//! `a / s`) are
//! `std::ops` impls on [`Dual`]s of arrays held by value or behind `&`, and methods (`sum`, `t`,
//! `to_owned`, `dot`, `row`, `column`, the element-wise float methods, `nrows`, `ncols`) are
//! [`MethodFrule`] impls keyed by [`ArrayKey`] (by [`DotKey`] for `dot`, whose rule depends on the
//! argument's type too), as the methods of nalgebra's matrices are keyed by `MatrixKey`. Reverse
//! mode: the same methods through the dispatch of user methods ([`RecvMarker`] /
//! [`UserMethodRrule`]), and the operators through [`RevAdd`], [`RevSub`], [`RevMul`],
//! [`RevNeg`]. A method without a rule gets `MethodFrule`'s (or `RecvMarker`'s) message naming
//! the receiver's type.
//!
//! The methods whose names are float methods' (`exp`, `ln`, `sqrt`, `sin`, `cos`, `tanh`, `abs`,
//! `recip`, `powi`) reach reverse mode through [`crate::reverse::MethodRrule`] instead, where
//! the reverse generator sends those names, with the receiver moved into the call: a receiver
//! used again afterwards is written `a.to_owned().exp()` (a temporary or a last use needs
//! nothing).
//!
//! `mapv` is not dispatched: derived code passes its argument (`f64::exp`) through
//! `constant`, which needs a primal type, and a function item is not one. The element-wise
//! methods are its dispatchable spelling (`a.exp()` for `a.mapv(f64::exp)`).
//!
//! `dot` has one rule per pair of operand types ([`NdDot`]): its key [`DotKey<A, R>`] carries
//! the argument's type `R`, left free by the one generic impl, so that rustc selects the impl
//! from the receiver alone and infers `R` from the argument when derived code calls the rule.

use super::NdScalar;
use super::rules::{self, NdDot};
use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::forward::{MethodFrule, method_key};
use crate::reverse::{
    ByRef, ByValue, RecvMarker, RevAdd, RevDiv, RevMul, RevNeg, RevSub, UserMethodRrule,
};
use crate::shared::SharedRef;
use crate::tangent::Primal;
use ndarray::{Array, Array1, Array2, Dimension};
use std::marker::PhantomData;

/// Key type of the method rules on ndarray's arrays of type `A`.
pub struct ArrayKey<A>(PhantomData<A>);

impl<A> crate::reverse::HandleReads for ArrayKey<A> {}

/// Key type of `a.dot(&b)` with `a: A`, `b: R` (see the module's documentation).
pub struct DotKey<A, R>(PhantomData<(A, R)>);

/// How an array is held in a forward-mode dual: by value, behind `&` or behind `&mut`.
pub trait HeldArray<A> {
    /// The array.
    fn array(&self) -> &A;
}

impl<F: NdScalar, D: Dimension> HeldArray<Array<F, D>> for Array<F, D> {
    #[inline(always)]
    fn array(&self) -> &Array<F, D> {
        self
    }
}

impl<F: NdScalar, D: Dimension> HeldArray<Array<F, D>> for &Array<F, D> {
    #[inline(always)]
    fn array(&self) -> &Array<F, D> {
        self
    }
}

impl<F: NdScalar, D: Dimension> HeldArray<Array<F, D>> for &mut Array<F, D> {
    #[inline(always)]
    fn array(&self) -> &Array<F, D> {
        self
    }
}

/// A shared view of an array dual, however it is held.
#[inline(always)]
fn view<A, P: HeldArray<A>, T: HeldArray<A>>(d: &Dual<P, T>) -> Dual<&A, &A> {
    Dual::new(d.primal.array(), d.tangent.array())
}

// ---------------------------------------------------------------------------------------------
// Forward-mode methods.

macro_rules! unary_methods {
    ($($name:literal => $rule:ident -> $out:ty;)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: NdScalar, D: Dimension + 'static, P, T>
            MethodFrule<{ method_key($name) }, ArrayKey<Array<F, D>>> for &'b mut Dual<P, T>
        where
            P: HeldArray<Array<F, D>>,
            T: HeldArray<Array<F, D>>,
        {
            type Receiver = Dual<&'b Array<F, D>, &'b Array<F, D>>;
            type Rule = fn(Dual<&'b Array<F, D>, &'b Array<F, D>>) -> $out;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$rule::<F, D>)
            }
        }
    )*};
}

unary_methods! {
    "sum" => sum_frule -> Dual<F, F>;
    "__mean" => mean_frule -> Dual<F, F>;
    "t" => t_frule -> Dual<Array<F, D>, Array<F, D>>;
    "to_owned" => to_owned_frule -> Dual<Array<F, D>, Array<F, D>>;
    "exp" => exp_frule -> Dual<Array<F, D>, Array<F, D>>;
    "ln" => ln_frule -> Dual<Array<F, D>, Array<F, D>>;
    "sqrt" => sqrt_frule -> Dual<Array<F, D>, Array<F, D>>;
    "sin" => sin_frule -> Dual<Array<F, D>, Array<F, D>>;
    "cos" => cos_frule -> Dual<Array<F, D>, Array<F, D>>;
    "tanh" => tanh_frule -> Dual<Array<F, D>, Array<F, D>>;
    "abs" => abs_frule -> Dual<Array<F, D>, Array<F, D>>;
    "recip" => recip_frule -> Dual<Array<F, D>, Array<F, D>>;
    "pow2" => pow2_frule -> Dual<Array<F, D>, Array<F, D>>;
}

#[diagnostic::do_not_recommend]
impl<'b, F: NdScalar, D: Dimension + 'static, P, T>
    MethodFrule<{ method_key("powi") }, ArrayKey<Array<F, D>>> for &'b mut Dual<P, T>
where
    P: HeldArray<Array<F, D>>,
    T: HeldArray<Array<F, D>>,
{
    type Receiver = Dual<&'b Array<F, D>, &'b Array<F, D>>;
    type Rule = fn(
        Dual<&'b Array<F, D>, &'b Array<F, D>>,
        Dual<i32, NoTangent>,
    ) -> Dual<Array<F, D>, Array<F, D>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), rules::powi_frule::<F, D>)
    }
}

macro_rules! matrix_methods {
    ($($name:literal => $rule:ident -> $out:ty;)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: NdScalar, P, T> MethodFrule<{ method_key($name) }, ArrayKey<Array2<F>>>
            for &'b mut Dual<P, T>
        where
            P: HeldArray<Array2<F>>,
            T: HeldArray<Array2<F>>,
        {
            type Receiver = Dual<&'b Array2<F>, &'b Array2<F>>;
            type Rule = fn(Dual<&'b Array2<F>, &'b Array2<F>>, Dual<usize, NoTangent>) -> $out;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$rule::<F>)
            }
        }
    )*};
}

matrix_methods! {
    "row" => row_frule -> Dual<Array1<F>, Array1<F>>;
    "column" => column_frule -> Dual<Array1<F>, Array1<F>>;
}

#[diagnostic::do_not_recommend]
impl<'b, A: NdDot<R> + 'b, R, P: HeldArray<A>, T: HeldArray<A>>
    MethodFrule<{ method_key("dot") }, DotKey<A, R>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b A, &'b A>;
    type Rule =
        for<'s, 't> fn(Dual<&'b A, &'b A>, Dual<&'s R, &'t R>) -> Dual<A::Output, A::Output>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), rules::dot_frule::<A, R>)
    }
}

// ---------------------------------------------------------------------------------------------
// Forward-mode operators, for every pair of operands held by value or behind `&`.

macro_rules! binop {
    ($($Tr:ident $m:ident $rule:ident;)*) => {$(
        impl<F: NdScalar, D: Dimension> std::ops::$Tr<Dual<Array<F, D>, Array<F, D>>>
            for Dual<Array<F, D>, Array<F, D>>
        {
            type Output = Dual<Array<F, D>, Array<F, D>>;
            #[inline]
            fn $m(self, rhs: Dual<Array<F, D>, Array<F, D>>) -> Self::Output {
                rules::$rule(view(&self), view(&rhs))
            }
        }
        impl<'a, 'b, F: NdScalar, D: Dimension> std::ops::$Tr<Dual<Array<F, D>, Array<F, D>>>
            for Dual<&'a Array<F, D>, &'b Array<F, D>>
        {
            type Output = Dual<Array<F, D>, Array<F, D>>;
            #[inline]
            fn $m(self, rhs: Dual<Array<F, D>, Array<F, D>>) -> Self::Output {
                rules::$rule(self, view(&rhs))
            }
        }
        impl<'c, 'd, F: NdScalar, D: Dimension> std::ops::$Tr<Dual<&'c Array<F, D>, &'d Array<F, D>>>
            for Dual<Array<F, D>, Array<F, D>>
        {
            type Output = Dual<Array<F, D>, Array<F, D>>;
            #[inline]
            fn $m(self, rhs: Dual<&'c Array<F, D>, &'d Array<F, D>>) -> Self::Output {
                rules::$rule(view(&self), rhs)
            }
        }
        impl<'a, 'b, 'c, 'd, F: NdScalar, D: Dimension>
            std::ops::$Tr<Dual<&'c Array<F, D>, &'d Array<F, D>>>
            for Dual<&'a Array<F, D>, &'b Array<F, D>>
        {
            type Output = Dual<Array<F, D>, Array<F, D>>;
            #[inline]
            fn $m(self, rhs: Dual<&'c Array<F, D>, &'d Array<F, D>>) -> Self::Output {
                rules::$rule(self, rhs)
            }
        }
    )*};
}

binop! {
    Add add add_frule;
    Sub sub sub_frule;
    Mul mul mul_frule;
}

impl<F: NdScalar, D: Dimension> std::ops::Neg for Dual<Array<F, D>, Array<F, D>> {
    type Output = Dual<Array<F, D>, Array<F, D>>;
    #[inline]
    fn neg(self) -> Self::Output {
        rules::neg_frule(view(&self))
    }
}

impl<F: NdScalar, D: Dimension> std::ops::Neg for Dual<&Array<F, D>, &Array<F, D>> {
    type Output = Dual<Array<F, D>, Array<F, D>>;
    #[inline]
    fn neg(self) -> Self::Output {
        rules::neg_frule(self)
    }
}

macro_rules! scalings {
    ($($F:ty),*) => {$(
        impl<D: Dimension> std::ops::Mul<Dual<$F, $F>> for Dual<Array<$F, D>, Array<$F, D>> {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn mul(self, s: Dual<$F, $F>) -> Self::Output {
                rules::scale_frule(view(&self), s)
            }
        }
        impl<'a, 'b, D: Dimension> std::ops::Mul<Dual<$F, $F>>
            for Dual<&'a Array<$F, D>, &'b Array<$F, D>>
        {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn mul(self, s: Dual<$F, $F>) -> Self::Output {
                rules::scale_frule(self, s)
            }
        }
        impl<D: Dimension> std::ops::Mul<Dual<Array<$F, D>, Array<$F, D>>> for Dual<$F, $F> {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn mul(self, a: Dual<Array<$F, D>, Array<$F, D>>) -> Self::Output {
                rules::scale_frule(view(&a), self)
            }
        }
        impl<'a, 'b, D: Dimension> std::ops::Mul<Dual<&'a Array<$F, D>, &'b Array<$F, D>>>
            for Dual<$F, $F>
        {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn mul(self, a: Dual<&'a Array<$F, D>, &'b Array<$F, D>>) -> Self::Output {
                rules::scale_frule(a, self)
            }
        }
    )*};
}

scalings!(f32, f64);

/// `a + s`, `a - s`, `s + a`, `s - a` of an array and a scalar (`F` = `$F`): the rules
/// `shift_frule` / `shift_rrule`, forward here and reverse in `rev_shifts!`.
macro_rules! shifts {
    ($($F:ty),*) => {$(
        shifts!(@one $F, Add add 1.0, 1.0, 1.0);
        shifts!(@one $F, Sub sub 1.0, -1.0, -1.0);
    )*};
    (@one $F:ty, $Tr:ident $m:ident $ca:expr, $cs:expr, $ca_left:expr) => {
        impl<D: Dimension> std::ops::$Tr<Dual<$F, $F>> for Dual<Array<$F, D>, Array<$F, D>> {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn $m(self, s: Dual<$F, $F>) -> Self::Output {
                rules::shift_frule(view(&self), s, $ca, $cs)
            }
        }
        impl<'a, 'b, D: Dimension> std::ops::$Tr<Dual<$F, $F>>
            for Dual<&'a Array<$F, D>, &'b Array<$F, D>>
        {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn $m(self, s: Dual<$F, $F>) -> Self::Output {
                rules::shift_frule(self, s, $ca, $cs)
            }
        }
        impl<D: Dimension> std::ops::$Tr<Dual<Array<$F, D>, Array<$F, D>>> for Dual<$F, $F> {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn $m(self, a: Dual<Array<$F, D>, Array<$F, D>>) -> Self::Output {
                rules::shift_frule(view(&a), self, $ca_left, 1.0)
            }
        }
        impl<'a, 'b, D: Dimension> std::ops::$Tr<Dual<&'a Array<$F, D>, &'b Array<$F, D>>>
            for Dual<$F, $F>
        {
            type Output = Dual<Array<$F, D>, Array<$F, D>>;
            #[inline]
            fn $m(self, a: Dual<&'a Array<$F, D>, &'b Array<$F, D>>) -> Self::Output {
                rules::shift_frule(a, self, $ca_left, 1.0)
            }
        }
    };
}

shifts!(f32, f64);

impl<F: NdScalar, D: Dimension> std::ops::Div<Dual<F, F>> for Dual<Array<F, D>, Array<F, D>> {
    type Output = Dual<Array<F, D>, Array<F, D>>;
    #[inline]
    fn div(self, s: Dual<F, F>) -> Self::Output {
        rules::div_scalar_frule(view(&self), s)
    }
}

impl<F: NdScalar, D: Dimension> std::ops::Div<Dual<F, F>> for Dual<&Array<F, D>, &Array<F, D>> {
    type Output = Dual<Array<F, D>, Array<F, D>>;
    #[inline]
    fn div(self, s: Dual<F, F>) -> Self::Output {
        rules::div_scalar_frule(self, s)
    }
}

// ---------------------------------------------------------------------------------------------
// Reverse mode. Methods go through the dispatch of user methods (`rev::RecvMarker` picks the
// marker of how the receiver is held, `rev::UserMethodRrule` on the marker calls the rule);
// operators through `rev::RevAdd` and its siblings.

/// A reverse-mode array operand, by value or behind `&`: its shared view.
pub trait HeldArrayCoDual<X> {
    /// The array behind `&`, with its shadow.
    fn rview(&self) -> CoDual<&X, SharedRef<X>>;
}

impl<F: NdScalar, D: Dimension> HeldArrayCoDual<Array<F, D>>
    for CoDual<Array<F, D>, SharedRef<Array<F, D>>>
{
    #[inline(always)]
    fn rview(&self) -> CoDual<&Array<F, D>, SharedRef<Array<F, D>>> {
        CoDual::new(&self.primal, self.fdata.clone())
    }
}

impl<F: NdScalar, D: Dimension> HeldArrayCoDual<Array<F, D>>
    for CoDual<&Array<F, D>, SharedRef<Array<F, D>>>
{
    #[inline(always)]
    fn rview(&self) -> CoDual<&Array<F, D>, SharedRef<Array<F, D>>> {
        CoDual::new(self.primal, self.fdata.clone())
    }
}

/// An array as an operand of an operator's rule in derived code: cloned into an owned codual
/// with the same shadow (see [`Operand`](crate::reverse::Operand)), so that the rule's pullback
/// borrows nothing from the call.
impl<F: NdScalar, D: Dimension> crate::reverse::Operand
    for CoDual<Array<F, D>, SharedRef<Array<F, D>>>
{
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        self.clone()
    }
}

impl<F: NdScalar, D: Dimension> crate::reverse::Operand
    for CoDual<&Array<F, D>, SharedRef<Array<F, D>>>
{
    type Owned = CoDual<Array<F, D>, SharedRef<Array<F, D>>>;
    #[inline(always)]
    fn operand(&self) -> Self::Owned {
        CoDual::new(self.primal.clone(), self.fdata.clone())
    }
}

/// The receiver markers of a method on arrays `Array<F, D>` held behind `&` or by value.
macro_rules! rev_markers {
    ($key:ty, $name:literal, [$($g:tt)*], $X:ty) => {
        impl<'a, $($g)*> RecvMarker<{ method_key($name) }, $key> for CoDual<&'a $X, SharedRef<$X>> {
            type Marker = ByRef<$X>;
        }
        impl<$($g)*> RecvMarker<{ method_key($name) }, $key> for CoDual<$X, SharedRef<$X>> {
            type Marker = ByValue<$X>;
        }
    };
}

macro_rules! rev_methods {
    (@markers [$($g:tt)*] $X:ty, $name:literal) => {
        rev_markers!(ArrayKey<$X>, $name, [$($g)*], $X);
    };
    (@rule [$($g:tt)*] [$($p:ident),*] $X:ty, $name:literal $rule:ident ($($arg:ident: $aty:ty),*) -> $out:ty: $marker:ident, $recv:ty) => {
        impl<$($g)*> UserMethodRrule<{ method_key($name) }, ArrayKey<$X>> for $marker<$X> {
            type Recv<'a> = $recv;
            type Args<'b> = ($(CoDual<$aty, <$aty as Primal>::FData>,)*);
            type Out = $out;
            type RecvRData = NoRData;
            type Rets = (NoRData, $(<$aty as Primal>::RData,)*);
            #[inline]
            #[allow(clippy::type_complexity, non_snake_case)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                args: Self::Args<'b>,
            ) -> (
                CoDual<$out, <$out as Primal>::FData>,
                impl FnOnce(<$out as Primal>::RData, NoRData) -> Self::Rets + use<$($p),*>,
            ) {
                let ($($arg,)*) = args;
                let (y, pb) = rules::$rule(recv.rview() $(, $arg)*);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    };
    ($g:tt $p:tt $X:ty: $($name:literal => $rule:ident ($($arg:ident: $aty:ty),*) -> $out:ty;)*) => {$(
        rev_methods!(@markers $g $X, $name);
        rev_methods!(@rule $g $p $X, $name $rule ($($arg: $aty),*) -> $out: ByRef, CoDual<&'a $X, SharedRef<$X>>);
        rev_methods!(@rule $g $p $X, $name $rule ($($arg: $aty),*) -> $out: ByValue, CoDual<$X, SharedRef<$X>>);
    )*};
}

rev_methods! {
    [F: NdScalar, D: Dimension + 'static] [F, D] Array<F, D>:
        "sum" => sum_rrule() -> F;
        "__mean" => mean_rrule() -> F;
        "t" => t_rrule() -> Array<F, D>;
        "to_owned" => to_owned_rrule() -> Array<F, D>;
        "pow2" => pow2_rrule() -> Array<F, D>;
}

rev_methods! {
    [F: NdScalar] [F] Array2<F>:
        "row" => row_rrule(i: usize) -> Array1<F>;
        "column" => column_rrule(j: usize) -> Array1<F>;
}

// `a.dot(&b)`: the key carries the argument's type (see the module's documentation).
// The marker carries `R` too, so that the dispatch's `R` is the one its argument fixes.
impl<A: NdDot<R> + 'static, R> RecvMarker<{ method_key("dot") }, DotKey<A, R>>
    for CoDual<&A, SharedRef<A>>
{
    type Marker = ByRef<DotKey<A, R>>;
}

impl<A: NdDot<R> + 'static, R> RecvMarker<{ method_key("dot") }, DotKey<A, R>>
    for CoDual<A, SharedRef<A>>
{
    type Marker = ByValue<DotKey<A, R>>;
}

macro_rules! rev_dot {
    ($($marker:ident, $recv:ty, $borrow:tt;)*) => {$(
        impl<A, R> UserMethodRrule<{ method_key("dot") }, DotKey<A, R>> for $marker<DotKey<A, R>>
        where
            A: NdDot<R> + HeldArrayCoDualOf + 'static,
            R: 'static,
        {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<&'b R, SharedRef<R>>,);
            type Out = A::Output;
            type RecvRData = NoRData;
            type Rets = (NoRData, NoRData);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                args: Self::Args<'b>,
            ) -> (
                CoDual<A::Output, <A::Output as Primal>::FData>,
                impl FnOnce(<A::Output as Primal>::RData, NoRData) -> (NoRData, NoRData) + use<A, R>,
            ) {
                let recv = CoDual::new(rev_dot!(@borrow $borrow recv), recv.fdata.clone());
                let (y, pb) = rules::dot_rrule(recv, args.0);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    )*};
    (@borrow ref $r:ident) => { $r.primal };
    (@borrow value $r:ident) => { &$r.primal };
}

/// The arrays `dot` is dispatched on (`Array1<F>`, `Array2<F>`): sealed by the impls.
pub trait HeldArrayCoDualOf {}
impl<F: NdScalar, D: Dimension> HeldArrayCoDualOf for Array<F, D> {}

rev_dot! {
    ByRef, CoDual<&'a A, SharedRef<A>>, ref;
    ByValue, CoDual<A, SharedRef<A>>, value;
}

// Operators.

macro_rules! rev_binop {
    ($($Tr:ident $m:ident $rule:ident;)*) => {$(
        rev_binop!(@one $Tr $m $rule: CoDual<Array<F, D>, SharedRef<Array<F, D>>>, CoDual<Array<F, D>, SharedRef<Array<F, D>>>; );
        rev_binop!(@one $Tr $m $rule: CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>, CoDual<Array<F, D>, SharedRef<Array<F, D>>>; 'a);
        rev_binop!(@one $Tr $m $rule: CoDual<Array<F, D>, SharedRef<Array<F, D>>>, CoDual<&'c Array<F, D>, SharedRef<Array<F, D>>>; 'c);
        rev_binop!(@one $Tr $m $rule: CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>, CoDual<&'c Array<F, D>, SharedRef<Array<F, D>>>; 'a, 'c);
    )*};
    (@one $Tr:ident $m:ident $rule:ident: $A:ty, $B:ty; $($l:lifetime),*) => {
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> $Tr<$B> for $A {
            type Out = Array<F, D>;
            type RA = NoRData;
            type RB = NoRData;
            #[inline]
            fn $m(self, rhs: $B) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData, NoRData),
            ) {
                rules::$rule(self.rview(), rhs.rview())
            }
        }
    };
}

rev_binop! {
    RevAdd add add_rrule;
    RevSub sub sub_rrule;
    RevMul mul mul_rrule;
}

macro_rules! rev_unary_ops {
    ($($A:ty; $($l:lifetime),*;)*) => {$(
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> RevNeg for $A {
            type Out = Array<F, D>;
            type R = NoRData;
            #[inline]
            fn neg(self) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData,)) {
                rules::neg_rrule(self.rview())
            }
        }
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> RevMul<CoDual<F, NoFData>> for $A {
            type Out = Array<F, D>;
            type RA = NoRData;
            type RB = F;
            #[inline]
            fn mul(self, s: CoDual<F, NoFData>) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData, F),
            ) {
                rules::scale_rrule(self.rview(), s)
            }
        }
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> RevDiv<CoDual<F, NoFData>> for $A {
            type Out = Array<F, D>;
            type RA = NoRData;
            type RB = F;
            #[inline]
            fn div(self, s: CoDual<F, NoFData>) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData, F),
            ) {
                rules::div_scalar_rrule(self.rview(), s)
            }
        }
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> RevMul<$A> for CoDual<F, NoFData> {
            type Out = Array<F, D>;
            type RA = F;
            type RB = NoRData;
            #[inline]
            fn mul(self, a: $A) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (F, NoRData),
            ) {
                let (y, pb) = rules::scale_rrule(a.rview(), self);
                (y, move |r| {
                    let (ra, rs) = pb(r);
                    (rs, ra)
                })
            }
        }
    )*};
}

rev_unary_ops! {
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>; ;
    CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>; 'a;
}

/// Reverse `a + s`, `a - s`, `s + a`, `s - a` (see `shifts!`).
macro_rules! rev_shifts {
    ($($A:ty; $($l:lifetime),*;)*) => {$(
        rev_shifts!(@one $A; $($l),*; RevAdd add 1, 1, 1);
        rev_shifts!(@one $A; $($l),*; RevSub sub 1, -1, -1);
    )*};
    (@one $A:ty; $($l:lifetime),*; $Tr:ident $m:ident $ca:literal, $cs:literal, $ca_left:literal) => {
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> $Tr<CoDual<F, NoFData>> for $A {
            type Out = Array<F, D>;
            type RA = NoRData;
            type RB = F;
            #[inline]
            fn $m(self, s: CoDual<F, NoFData>) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData, F),
            ) {
                rules::shift_rrule(self.rview(), s, F::from_i32($ca), F::from_i32($cs))
            }
        }
        impl<$($l,)* F: NdScalar, D: Dimension + 'static> $Tr<$A> for CoDual<F, NoFData> {
            type Out = Array<F, D>;
            type RA = F;
            type RB = NoRData;
            #[inline]
            fn $m(self, a: $A) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (F, NoRData),
            ) {
                let (y, pb) = rules::shift_rrule(a.rview(), self, F::from_i32($ca_left), F::ONE);
                (y, move |r| {
                    let (ra, rs) = pb(r);
                    (rs, ra)
                })
            }
        }
    };
}

rev_shifts! {
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>; ;
    CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>; 'a;
}

// ---------------------------------------------------------------------------------------------
// Shape queries of matrices, without derivative: `nrows`, `ncols`, both modes. (Not `len`: the
// reverse generator reads `x.len()` as a buffer's length, through `rev::AsRead`.)

macro_rules! shape_methods {
    ($($name:literal => $method:ident),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, F: NdScalar, P, T> MethodFrule<{ method_key($name) }, ArrayKey<Array2<F>>>
            for &'b mut Dual<P, T>
        where
            P: HeldArray<Array2<F>>,
            T: HeldArray<Array2<F>>,
        {
            type Receiver = Dual<&'b Array2<F>, &'b Array2<F>>;
            type Rule = fn(Dual<&'b Array2<F>, &'b Array2<F>>) -> Dual<usize, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), |m| Dual::new(m.primal.$method(), NoTangent))
            }
        }
        rev_markers!(ArrayKey<Array2<F>>, $name, [F: NdScalar], Array2<F>);
        shape_methods!(@rule $name $method: ByRef, CoDual<&'a Array2<F>, SharedRef<Array2<F>>>);
        shape_methods!(@rule $name $method: ByValue, CoDual<Array2<F>, SharedRef<Array2<F>>>);
    )*};
    (@rule $name:literal $method:ident: $marker:ident, $recv:ty) => {
        impl<F: NdScalar> UserMethodRrule<{ method_key($name) }, ArrayKey<Array2<F>>>
            for $marker<Array2<F>>
        {
            type Recv<'a> = $recv;
            type Args<'b> = ();
            type Out = usize;
            type RecvRData = NoRData;
            type Rets = (NoRData,);
            #[inline]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                _: (),
            ) -> (CoDual<usize, NoFData>, impl FnOnce(NoRData, NoRData) -> (NoRData,) + use<F>) {
                let y = recv.rview().primal.$method();
                (CoDual::new(y, NoFData), |_: NoRData, _: NoRData| (NoRData,))
            }
        }
    };
}

shape_methods! {
    "nrows" => nrows,
    "ncols" => ncols,
}

// `a.sum_axis(Axis(k))` of an `Array2`, both modes.

#[diagnostic::do_not_recommend]
impl<'b, F: NdScalar, P, T> MethodFrule<{ method_key("sum_axis") }, ArrayKey<Array2<F>>>
    for &'b mut Dual<P, T>
where
    P: HeldArray<Array2<F>>,
    T: HeldArray<Array2<F>>,
{
    type Receiver = Dual<&'b Array2<F>, &'b Array2<F>>;
    type Rule = fn(
        Dual<&'b Array2<F>, &'b Array2<F>>,
        Dual<ndarray::Axis, NoTangent>,
    ) -> Dual<ndarray::Array1<F>, ndarray::Array1<F>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), rules::sum_axis_frule::<F>)
    }
}

rev_markers!(ArrayKey<Array2<F>>, "sum_axis", [F: NdScalar], Array2<F>);

macro_rules! sum_axis_rule {
    ($($marker:ident, $recv:ty);*) => {$(
        impl<F: NdScalar> UserMethodRrule<{ method_key("sum_axis") }, ArrayKey<Array2<F>>>
            for $marker<Array2<F>>
        {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<ndarray::Axis, NoFData>,);
            type Out = ndarray::Array1<F>;
            type RecvRData = NoRData;
            type Rets = (NoRData, NoRData);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (axis,): Self::Args<'b>,
            ) -> (
                CoDual<ndarray::Array1<F>, SharedRef<ndarray::Array1<F>>>,
                impl FnOnce(NoRData, NoRData) -> (NoRData, NoRData) + use<F>,
            ) {
                let (y, pb) = rules::sum_axis_rrule(recv.rview(), axis);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    )*};
}

sum_axis_rule!(
    ByRef, CoDual<&'a Array2<F>, SharedRef<Array2<F>>>;
    ByValue, CoDual<Array2<F>, SharedRef<Array2<F>>>
);

// ---------------------------------------------------------------------------------------------
// Reverse mode: the element-wise methods whose names are float methods (`exp`, `tanh`, `powi`,
// ...), which the reverse generator sends through `rev::MethodRrule` with the receiver by value.

macro_rules! rev_float_named {
    ($($name:literal => $rule:ident;)*) => {$(
        rev_float_named!(@one $name $rule: CoDual<Array<F, D>, SharedRef<Array<F, D>>>; );
        rev_float_named!(@one $name $rule: CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>; 'a);
    )*};
    (@one $name:literal $rule:ident: $A:ty; $($l:lifetime),*) => {
        #[diagnostic::do_not_recommend]
        impl<$($l,)* F: NdScalar, D: Dimension + 'static>
            crate::reverse::MethodRrule<{ method_key($name) }, ArrayKey<Array<F, D>>, ()> for $A
        {
            type Out = Array<F, D>;
            type Rets = (NoRData,);
            #[inline]
            #[allow(refining_impl_trait)]
            fn method_rrule(
                self,
                _: (),
            ) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData,) + use<F, D>,
            ) {
                rules::$rule(self.rview())
            }
        }
    };
}

rev_float_named! {
    "exp" => exp_rrule;
    "ln" => ln_rrule;
    "sqrt" => sqrt_rrule;
    "sin" => sin_rrule;
    "cos" => cos_rrule;
    "tanh" => tanh_rrule;
    "abs" => abs_rrule;
    "recip" => recip_rrule;
}

macro_rules! rev_powi {
    ($($A:ty; $($l:lifetime),*;)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<$($l,)* F: NdScalar, D: Dimension + 'static>
            crate::reverse::MethodRrule<
                { method_key("powi") },
                ArrayKey<Array<F, D>>,
                (CoDual<i32, NoFData>,),
            > for $A
        {
            type Out = Array<F, D>;
            type Rets = (NoRData, NoRData);
            #[inline]
            fn method_rrule(
                self,
                args: (CoDual<i32, NoFData>,),
            ) -> (
                CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
                impl FnOnce(NoRData) -> (NoRData, NoRData),
            ) {
                rules::powi_rrule(self.rview(), args.0)
            }
        }
    )*};
}

rev_powi! {
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>; ;
    CoDual<&'a Array<F, D>, SharedRef<Array<F, D>>>; 'a;
}
