//! How derived code reaches the rules of [`super::rules`].
//!
//! Forward mode: operators (`a + b`, `a - b`, `-a`, `m * x`, `a * b`, `a * s`, `s * a`) are
//! `std::ops` impls on [`Dual`]s of matrices held by value or behind `&`, and methods
//! (`dot`, `norm_squared`, `norm`, `sum`, `transpose`, `component_mul`) are
//! [`MethodFrule`] impls keyed by [`MatrixKey`], as the buffer methods are keyed by
//! [`crate::keys::BufferKey`]. A method without a rule gets `MethodFrule`'s message naming the
//! receiver's type.

use super::HeapMatrix;
use super::rules;
use crate::dual::{Dual, NoTangent};
use crate::forward::{MethodFrule, method_key};
use nalgebra::{DMatrix, DVector, RowDVector};
use std::marker::PhantomData;

/// Key type of the method rules on heap matrices of type `M`.
pub struct MatrixKey<M>(PhantomData<M>);

impl<M> crate::reverse::HandleReads for MatrixKey<M> {}

/// How a matrix is held in a forward-mode dual: by value, behind `&` or behind `&mut`.
pub trait HeldMatrix<M> {
    /// The matrix.
    fn matrix(&self) -> &M;
}

impl<M: HeapMatrix> HeldMatrix<M> for M {
    #[inline(always)]
    fn matrix(&self) -> &M {
        self
    }
}

impl<M: HeapMatrix> HeldMatrix<M> for &M {
    #[inline(always)]
    fn matrix(&self) -> &M {
        self
    }
}

impl<M: HeapMatrix> HeldMatrix<M> for &mut M {
    #[inline(always)]
    fn matrix(&self) -> &M {
        self
    }
}

/// A shared view of a matrix dual, however it is held.
#[inline(always)]
fn view<M, P: HeldMatrix<M>, T: HeldMatrix<M>>(d: &Dual<P, T>) -> Dual<&M, &M> {
    Dual::new(d.primal.matrix(), d.tangent.matrix())
}

// ---------------------------------------------------------------------------------------------
// Methods.

macro_rules! unary_methods {
    ($($name:literal => $rule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, M: HeapMatrix, P: HeldMatrix<M>, T: HeldMatrix<M>>
            MethodFrule<{ method_key($name) }, MatrixKey<M>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b M, &'b M>;
            type Rule = fn(Dual<&'b M, &'b M>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$rule::<M>)
            }
        }
    )*};
}

unary_methods! {
    "norm_squared" => norm_squared_frule -> M::Scalar,
    "norm" => norm_frule -> M::Scalar,
    "sum" => sum_frule -> M::Scalar,
    "mean" => mean_frule -> M::Scalar,
    "transpose" => transpose_frule -> M::Transposed,
}

macro_rules! binary_methods {
    ($($name:literal => $rule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, M: HeapMatrix, P: HeldMatrix<M>, T: HeldMatrix<M>>
            MethodFrule<{ method_key($name) }, MatrixKey<M>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b M, &'b M>;
            type Rule = for<'s, 't> fn(Dual<&'b M, &'b M>, Dual<&'s M, &'t M>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$rule::<M>)
            }
        }
    )*};
}

binary_methods! {
    "dot" => dot_frule -> M::Scalar,
    "component_mul" => component_mul_frule -> M,
}

// ---------------------------------------------------------------------------------------------
// Operators, for every pair of operands held by value or behind `&`.

macro_rules! binop {
    ($Tr:ident $m:ident $rule:path: $A:ty, $B:ty => $Out:ty) => {
        impl std::ops::$Tr<Dual<$B, $B>> for Dual<$A, $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<$B, $B>) -> Dual<$Out, $Out> {
                $rule(view(&self), view(&rhs))
            }
        }
        impl<'a, 'b> std::ops::$Tr<Dual<$B, $B>> for Dual<&'a $A, &'b $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<$B, $B>) -> Dual<$Out, $Out> {
                $rule(self, view(&rhs))
            }
        }
        impl<'c, 'd> std::ops::$Tr<Dual<&'c $B, &'d $B>> for Dual<$A, $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<&'c $B, &'d $B>) -> Dual<$Out, $Out> {
                $rule(view(&self), rhs)
            }
        }
        impl<'a, 'b, 'c, 'd> std::ops::$Tr<Dual<&'c $B, &'d $B>> for Dual<&'a $A, &'b $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<&'c $B, &'d $B>) -> Dual<$Out, $Out> {
                $rule(self, rhs)
            }
        }
    };
}

macro_rules! matrix_ops {
    ($($M:ty: $S:ty),*) => {$(
        binop!(Add add rules::add_frule: $M, $M => $M);
        binop!(Sub sub rules::sub_frule: $M, $M => $M);

        impl std::ops::Neg for Dual<$M, $M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn neg(self) -> Dual<$M, $M> {
                rules::neg_frule(view(&self))
            }
        }
        impl std::ops::Neg for Dual<&$M, &$M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn neg(self) -> Dual<$M, $M> {
                rules::neg_frule(self)
            }
        }

        impl std::ops::Mul<Dual<$S, $S>> for Dual<$M, $M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn mul(self, s: Dual<$S, $S>) -> Dual<$M, $M> {
                rules::scale_frule(view(&self), s)
            }
        }
        impl<'a, 'b> std::ops::Mul<Dual<$S, $S>> for Dual<&'a $M, &'b $M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn mul(self, s: Dual<$S, $S>) -> Dual<$M, $M> {
                rules::scale_frule(self, s)
            }
        }
        impl std::ops::Mul<Dual<$M, $M>> for Dual<$S, $S> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn mul(self, a: Dual<$M, $M>) -> Dual<$M, $M> {
                rules::scale_frule(view(&a), self)
            }
        }
        impl<'a, 'b> std::ops::Mul<Dual<&'a $M, &'b $M>> for Dual<$S, $S> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn mul(self, a: Dual<&'a $M, &'b $M>) -> Dual<$M, $M> {
                rules::scale_frule(a, self)
            }
        }
        impl std::ops::Div<Dual<$S, $S>> for Dual<$M, $M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn div(self, s: Dual<$S, $S>) -> Dual<$M, $M> {
                rules::div_scalar_frule(view(&self), s)
            }
        }
        impl<'a, 'b> std::ops::Div<Dual<$S, $S>> for Dual<&'a $M, &'b $M> {
            type Output = Dual<$M, $M>;
            #[inline]
            fn div(self, s: Dual<$S, $S>) -> Dual<$M, $M> {
                rules::div_scalar_frule(self, s)
            }
        }
    )*};
}

matrix_ops!(
    DVector<f64>: f64, RowDVector<f64>: f64, DMatrix<f64>: f64,
    DVector<f32>: f32, RowDVector<f32>: f32, DMatrix<f32>: f32
);

binop!(Mul mul rules::mat_vec_frule: DMatrix<f64>, DVector<f64> => DVector<f64>);
binop!(Mul mul rules::mat_mat_frule: DMatrix<f64>, DMatrix<f64> => DMatrix<f64>);
binop!(Mul mul rules::mat_vec_frule: DMatrix<f32>, DVector<f32> => DVector<f32>);
binop!(Mul mul rules::mat_mat_frule: DMatrix<f32>, DMatrix<f32> => DMatrix<f32>);
binop!(Mul mul rules::row_mat_frule: RowDVector<f64>, DMatrix<f64> => RowDVector<f64>);
binop!(Mul mul rules::row_mat_frule: RowDVector<f32>, DMatrix<f32> => RowDVector<f32>);
binop!(Mul mul rules::row_vec_frule: RowDVector<f64>, DVector<f64> => nalgebra::SMatrix<f64, 1, 1>);
binop!(Mul mul rules::row_vec_frule: RowDVector<f32>, DVector<f32> => nalgebra::SMatrix<f32, 1, 1>);

// ---------------------------------------------------------------------------------------------
// Reverse mode. Methods go through the dispatch of user methods (`rev::RecvMarker` picks the
// marker of how the receiver is held, `rev::UserMethodRrule` on the marker calls the rule);
// operators through `rev::RevAdd` and its siblings.

use crate::dual::{CoDual, NoFData, NoRData};
use crate::reverse::{ByRef, ByValue, RecvMarker, RevAdd, RevMul, RevNeg, RevSub, UserMethodRrule};
use crate::shared::SharedRef;

/// A reverse-mode matrix operand, by value or behind `&`: its shared view.
pub trait HeldCoDual<X> {
    /// The matrix behind `&`, with its shadow.
    fn rview(&self) -> CoDual<&X, SharedRef<X>>;
}

impl<X: HeapMatrix> HeldCoDual<X> for CoDual<X, SharedRef<X>> {
    #[inline(always)]
    fn rview(&self) -> CoDual<&X, SharedRef<X>> {
        CoDual::new(&self.primal, self.fdata.clone())
    }
}

impl<X: HeapMatrix> HeldCoDual<X> for CoDual<&X, SharedRef<X>> {
    #[inline(always)]
    fn rview(&self) -> CoDual<&X, SharedRef<X>> {
        CoDual::new(self.primal, self.fdata.clone())
    }
}

/// A matrix as an operand of an operator's rule in derived code: cloned into an owned codual
/// with the same shadow (see [`Operand`](crate::reverse::Operand)), so that the rule's pullback
/// borrows nothing from the call (an `O(n)` copy per operator; the products cost more).
impl<X: HeapMatrix> crate::reverse::Operand for CoDual<X, SharedRef<X>> {
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        self.clone()
    }
}

impl<X: HeapMatrix> crate::reverse::Operand for CoDual<&X, SharedRef<X>> {
    type Owned = CoDual<X, SharedRef<X>>;
    #[inline(always)]
    fn operand(&self) -> Self::Owned {
        CoDual::new(self.primal.clone(), self.fdata.clone())
    }
}

macro_rules! rev_methods {
    ($($name:literal => $rule:ident ($($arg:ident),*) -> $out:ty),* $(,)?) => {$(
        impl<'a, X: HeapMatrix> RecvMarker<{ method_key($name) }, MatrixKey<X>>
            for CoDual<&'a X, SharedRef<X>>
        {
            type Marker = ByRef<X>;
        }
        impl<X: HeapMatrix> RecvMarker<{ method_key($name) }, MatrixKey<X>>
            for CoDual<X, SharedRef<X>>
        {
            type Marker = ByValue<X>;
        }
        rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByRef, CoDual<&'a X, SharedRef<X>>);
        rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByValue, CoDual<X, SharedRef<X>>);
    )*};
    (@rule $name:literal $rule:ident ($($arg:ident),*) -> $out:ty: $marker:ident, $recv:ty) => {
        impl<X: HeapMatrix> UserMethodRrule<{ method_key($name) }, MatrixKey<X>> for $marker<X> {
            type Recv<'a> = $recv;
            type Args<'b> = ($(rev_methods!(@arg $arg 'b),)*);
            type Out = $out;
            type RecvRData = NoRData;
            type Rets = (NoRData, $(rev_methods!(@rdata $arg),)*);
            #[inline]
            #[allow(clippy::type_complexity, non_snake_case)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                args: Self::Args<'b>,
            ) -> (
                CoDual<$out, <$out as crate::tangent::Primal>::FData>,
                impl FnOnce(<$out as crate::tangent::Primal>::RData, NoRData) -> Self::Rets + use<X>,
            ) {
                let ($($arg,)*) = args;
                let (y, pb) = rules::$rule::<X>(recv.rview() $(, $arg)*);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    };
    (@arg $arg:ident $l:lifetime) => { CoDual<&$l X, SharedRef<X>> };
    (@rdata $arg:ident) => { NoRData };
}

rev_methods! {
    "norm_squared" => norm_squared_rrule() -> X::Scalar,
    "norm" => norm_rrule() -> X::Scalar,
    "sum" => sum_rrule() -> X::Scalar,
    "mean" => mean_rrule() -> X::Scalar,
    "transpose" => transpose_rrule() -> X::Transposed,
    "dot" => dot_rrule(B) -> X::Scalar,
    "component_mul" => component_mul_rrule(B) -> X,
}

macro_rules! rev_binop {
    ($Tr:ident $m:ident $rule:path: $A:ty, $B:ty => $Out:ty) => {
        rev_binop!(@one $Tr $m $rule: CoDual<$A, SharedRef<$A>>, CoDual<$B, SharedRef<$B>> => $Out; );
        rev_binop!(@one $Tr $m $rule: CoDual<&'a $A, SharedRef<$A>>, CoDual<$B, SharedRef<$B>> => $Out; 'a);
        rev_binop!(@one $Tr $m $rule: CoDual<$A, SharedRef<$A>>, CoDual<&'c $B, SharedRef<$B>> => $Out; 'c);
        rev_binop!(@one $Tr $m $rule: CoDual<&'a $A, SharedRef<$A>>, CoDual<&'c $B, SharedRef<$B>> => $Out; 'a, 'c);
    };
    (@one $Tr:ident $m:ident $rule:path: $A:ty, $B:ty => $Out:ty; $($l:lifetime),*) => {
        impl<$($l),*> $Tr<$B> for $A {
            type Out = $Out;
            type RA = NoRData;
            type RB = NoRData;
            #[inline]
            fn $m(self, rhs: $B) -> (
                CoDual<$Out, SharedRef<$Out>>,
                impl FnOnce(NoRData) -> (NoRData, NoRData),
            ) {
                $rule(self.rview(), rhs.rview())
            }
        }
    };
}

macro_rules! rev_matrix_ops {
    ($($M:ty: $S:ty),*) => {$(
        rev_binop!(RevAdd add rules::add_rrule: $M, $M => $M);
        rev_binop!(RevSub sub rules::sub_rrule: $M, $M => $M);
        rev_matrix_ops!(@neg $M, CoDual<$M, SharedRef<$M>>; );
        rev_matrix_ops!(@neg $M, CoDual<&'a $M, SharedRef<$M>>; 'a);
        rev_matrix_ops!(@scale $M, $S, CoDual<$M, SharedRef<$M>>; );
        rev_matrix_ops!(@scale $M, $S, CoDual<&'a $M, SharedRef<$M>>; 'a);
    )*};
    (@neg $M:ty, $A:ty; $($l:lifetime),*) => {
        impl<$($l),*> RevNeg for $A {
            type Out = $M;
            type R = NoRData;
            #[inline]
            fn neg(self) -> (CoDual<$M, SharedRef<$M>>, impl FnOnce(NoRData) -> (NoRData,)) {
                rules::neg_rrule(self.rview())
            }
        }
    };
    (@scale $M:ty, $S:ty, $A:ty; $($l:lifetime),*) => {
        impl<$($l),*> RevMul<CoDual<$S, NoFData>> for $A {
            type Out = $M;
            type RA = NoRData;
            type RB = $S;
            #[inline]
            fn mul(self, s: CoDual<$S, NoFData>) -> (
                CoDual<$M, SharedRef<$M>>,
                impl FnOnce(NoRData) -> (NoRData, $S),
            ) {
                rules::scale_rrule(self.rview(), s)
            }
        }
        impl<$($l),*> crate::reverse::RevDiv<CoDual<$S, NoFData>> for $A {
            type Out = $M;
            type RA = NoRData;
            type RB = $S;
            #[inline]
            fn div(self, s: CoDual<$S, NoFData>) -> (
                CoDual<$M, SharedRef<$M>>,
                impl FnOnce(NoRData) -> (NoRData, $S),
            ) {
                rules::div_scalar_rrule(self.rview(), s)
            }
        }
        impl<$($l),*> RevMul<$A> for CoDual<$S, NoFData> {
            type Out = $M;
            type RA = $S;
            type RB = NoRData;
            #[inline]
            fn mul(self, a: $A) -> (
                CoDual<$M, SharedRef<$M>>,
                impl FnOnce(NoRData) -> ($S, NoRData),
            ) {
                let (y, pb) = rules::scale_rrule(a.rview(), self);
                (y, move |r| {
                    let (ra, rs) = pb(r);
                    (rs, ra)
                })
            }
        }
    };
}

rev_matrix_ops!(
    DVector<f64>: f64, RowDVector<f64>: f64, DMatrix<f64>: f64,
    DVector<f32>: f32, RowDVector<f32>: f32, DMatrix<f32>: f32
);

rev_binop!(RevMul mul rules::mat_vec_rrule: DMatrix<f64>, DVector<f64> => DVector<f64>);
rev_binop!(RevMul mul rules::mat_mat_rrule: DMatrix<f64>, DMatrix<f64> => DMatrix<f64>);
rev_binop!(RevMul mul rules::mat_vec_rrule: DMatrix<f32>, DVector<f32> => DVector<f32>);
rev_binop!(RevMul mul rules::mat_mat_rrule: DMatrix<f32>, DMatrix<f32> => DMatrix<f32>);
rev_binop!(RevMul mul rules::row_mat_rrule: RowDVector<f64>, DMatrix<f64> => RowDVector<f64>);
rev_binop!(RevMul mul rules::row_mat_rrule: RowDVector<f32>, DMatrix<f32> => RowDVector<f32>);

/// `r * v` of a row vector and a vector: a `1 x 1` static matrix, whose gradient is rdata.
macro_rules! rev_row_vec {
    ($($T:ty),*) => {$(
        rev_row_vec!(@one $T; CoDual<RowDVector<$T>, SharedRef<RowDVector<$T>>>, CoDual<DVector<$T>, SharedRef<DVector<$T>>>; );
        rev_row_vec!(@one $T; CoDual<&'a RowDVector<$T>, SharedRef<RowDVector<$T>>>, CoDual<DVector<$T>, SharedRef<DVector<$T>>>; 'a);
        rev_row_vec!(@one $T; CoDual<RowDVector<$T>, SharedRef<RowDVector<$T>>>, CoDual<&'c DVector<$T>, SharedRef<DVector<$T>>>; 'c);
        rev_row_vec!(@one $T; CoDual<&'a RowDVector<$T>, SharedRef<RowDVector<$T>>>, CoDual<&'c DVector<$T>, SharedRef<DVector<$T>>>; 'a, 'c);
    )*};
    (@one $T:ty; $A:ty, $B:ty; $($l:lifetime),*) => {
        impl<$($l),*> RevMul<$B> for $A {
            type Out = nalgebra::SMatrix<$T, 1, 1>;
            type RA = NoRData;
            type RB = NoRData;
            #[inline]
            fn mul(self, rhs: $B) -> (
                CoDual<nalgebra::SMatrix<$T, 1, 1>, NoFData>,
                impl FnOnce(nalgebra::SMatrix<$T, 1, 1>) -> (NoRData, NoRData),
            ) {
                rules::row_vec_rrule(self.rview(), rhs.rview())
            }
        }
    };
}

rev_row_vec!(f64, f32);

// ---------------------------------------------------------------------------------------------
// The Cholesky methods of `DMatrix<f64>` (`super::chol::CholeskyExt`): `a.cholesky_solve(&b)`
// with a vector `b`, `a.cholesky_logdet()`, in both modes.

use super::chol;

type Mat = DMatrix<f64>;
type Vector = DVector<f64>;

#[diagnostic::do_not_recommend]
impl<'b, P: HeldMatrix<Mat>, T: HeldMatrix<Mat>>
    MethodFrule<{ method_key("cholesky_solve") }, MatrixKey<Mat>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b Mat, &'b Mat>;
    type Rule = for<'s, 't> fn(
        Dual<&'b Mat, &'b Mat>,
        Dual<&'s Vector, &'t Vector>,
    ) -> Dual<Vector, Vector>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), chol::cholesky_solve_frule::<Vector>)
    }
}

#[diagnostic::do_not_recommend]
impl<'b, P: HeldMatrix<Mat>, T: HeldMatrix<Mat>>
    MethodFrule<{ method_key("cholesky_logdet") }, MatrixKey<Mat>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b Mat, &'b Mat>;
    type Rule = fn(Dual<&'b Mat, &'b Mat>) -> Dual<f64, f64>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), chol::cholesky_logdet_frule)
    }
}

macro_rules! rev_chol_methods {
    ($($marker:ident, $recv:ty);*) => {$(
        impl<'a> RecvMarker<{ method_key("cholesky_solve") }, MatrixKey<Mat>> for $recv {
            type Marker = $marker<Mat>;
        }
        impl<'a> RecvMarker<{ method_key("cholesky_logdet") }, MatrixKey<Mat>> for $recv {
            type Marker = $marker<Mat>;
        }
        impl UserMethodRrule<{ method_key("cholesky_solve") }, MatrixKey<Mat>> for $marker<Mat> {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<&'b Vector, SharedRef<Vector>>,);
            type Out = Vector;
            type RecvRData = NoRData;
            type Rets = (NoRData, NoRData);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                args: Self::Args<'b>,
            ) -> (
                CoDual<Vector, SharedRef<Vector>>,
                impl FnOnce(NoRData, NoRData) -> (NoRData, NoRData) + use<>,
            ) {
                let (y, pb) = chol::cholesky_solve_rrule(recv.rview(), args.0);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
        impl UserMethodRrule<{ method_key("cholesky_logdet") }, MatrixKey<Mat>> for $marker<Mat> {
            type Recv<'a> = $recv;
            type Args<'b> = ();
            type Out = f64;
            type RecvRData = NoRData;
            type Rets = (NoRData,);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                _: (),
            ) -> (CoDual<f64, NoFData>, impl FnOnce(f64, NoRData) -> (NoRData,) + use<>) {
                let (y, pb) = chol::cholesky_logdet_rrule(recv.rview());
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    )*};
}

rev_chol_methods!(ByRef, CoDual<&'a Mat, SharedRef<Mat>>; ByValue, CoDual<Mat, SharedRef<Mat>>);

// ---------------------------------------------------------------------------------------------
// `m.column(j)`, `m.row(i)` of a `DMatrix<f64>`, both modes: owned copies (`rules::column_rrule`).

macro_rules! slice_methods {
    ($($name:literal => $frule:ident, $rrule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, P: HeldMatrix<Mat>, T: HeldMatrix<Mat>>
            MethodFrule<{ method_key($name) }, MatrixKey<Mat>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b Mat, &'b Mat>;
            type Rule = fn(Dual<&'b Mat, &'b Mat>, Dual<usize, NoTangent>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$frule)
            }
        }
        slice_methods!(@rev $name $rrule $out: ByRef, CoDual<&'a Mat, SharedRef<Mat>>);
        slice_methods!(@rev $name $rrule $out: ByValue, CoDual<Mat, SharedRef<Mat>>);
    )*};
    (@rev $name:literal $rrule:ident $out:ty: $marker:ident, $recv:ty) => {
        impl<'a> RecvMarker<{ method_key($name) }, MatrixKey<Mat>> for $recv {
            type Marker = $marker<Mat>;
        }
        impl UserMethodRrule<{ method_key($name) }, MatrixKey<Mat>> for $marker<Mat> {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<usize, NoFData>,);
            type Out = $out;
            type RecvRData = NoRData;
            type Rets = (NoRData, NoRData);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (k,): Self::Args<'b>,
            ) -> (
                CoDual<$out, SharedRef<$out>>,
                impl FnOnce(NoRData, NoRData) -> (NoRData, NoRData) + use<>,
            ) {
                let (y, pb) = rules::$rrule(recv.rview(), k);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    };
}

// `a.add_scalar(s)` of any heap matrix, both modes.

#[diagnostic::do_not_recommend]
impl<'b, M: HeapMatrix, P: HeldMatrix<M>, T: HeldMatrix<M>>
    MethodFrule<{ method_key("add_scalar") }, MatrixKey<M>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b M, &'b M>;
    type Rule = fn(Dual<&'b M, &'b M>, Dual<M::Scalar, M::Scalar>) -> Dual<M, M>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), rules::add_scalar_frule::<M>)
    }
}

macro_rules! add_scalar_method {
    ($($marker:ident, $recv:ty);*) => {$(
        impl<'a, X: HeapMatrix> RecvMarker<{ method_key("add_scalar") }, MatrixKey<X>> for $recv {
            type Marker = $marker<X>;
        }
        impl<X: HeapMatrix> UserMethodRrule<{ method_key("add_scalar") }, MatrixKey<X>> for $marker<X> {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<X::Scalar, NoFData>,);
            type Out = X;
            type RecvRData = NoRData;
            type Rets = (NoRData, X::Scalar);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (s,): Self::Args<'b>,
            ) -> (
                CoDual<X, SharedRef<X>>,
                impl FnOnce(NoRData, NoRData) -> (NoRData, X::Scalar) + use<X>,
            ) {
                let (y, pb) = rules::add_scalar_rrule(recv.rview(), s);
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    )*};
}

add_scalar_method!(
    ByRef, CoDual<&'a X, SharedRef<X>>;
    ByValue, CoDual<X, SharedRef<X>>
);

/// `m.trace()`, `m.determinant()` and `m.__inverse()` (`m.try_inverse().unwrap()`) of a
/// `DMatrix` (`Mat`), both modes.
macro_rules! trace_method {
    () => {
        trace_method!(@one "trace", trace_frule, trace_rrule -> Sc<Mat>);
        trace_method!(@one "determinant", determinant_frule, determinant_rrule -> Sc<Mat>);
        trace_method!(@one "__inverse", inverse_frule, inverse_rrule -> Mat);
    };
    (@one $name:literal, $frule:ident, $rrule:ident -> $out:ty) => {
        #[diagnostic::do_not_recommend]
        impl<'b, P: HeldMatrix<Mat>, T: HeldMatrix<Mat>>
            MethodFrule<{ method_key($name) }, MatrixKey<Mat>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b Mat, &'b Mat>;
            type Rule = fn(Dual<&'b Mat, &'b Mat>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), rules::$frule)
            }
        }
        trace_method!(@rev $name, $rrule, $out: ByRef, CoDual<&'a Mat, SharedRef<Mat>>);
        trace_method!(@rev $name, $rrule, $out: ByValue, CoDual<Mat, SharedRef<Mat>>);
    };
    (@rev $name:literal, $rrule:ident, $out:ty: $marker:ident, $recv:ty) => {
        impl<'a> RecvMarker<{ method_key($name) }, MatrixKey<Mat>> for $recv {
            type Marker = $marker<Mat>;
        }
        impl UserMethodRrule<{ method_key($name) }, MatrixKey<Mat>> for $marker<Mat> {
            type Recv<'a> = $recv;
            type Args<'b> = ();
            type Out = $out;
            type RecvRData = NoRData;
            type Rets = (NoRData,);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                _: (),
            ) -> (
                CoDual<$out, <$out as crate::tangent::Primal>::FData>,
                impl FnOnce(<$out as crate::tangent::Primal>::RData, NoRData) -> (NoRData,) + use<>,
            ) {
                let (y, pb) = rules::$rrule(recv.rview());
                (y, move |y_bar, _: NoRData| pb(y_bar))
            }
        }
    };
}

trace_method!();

slice_methods! {
    "column" => column_frule, column_rrule -> Vector,
    "row" => row_frule, row_rrule -> RowDVector<f64>,
}

// ---------------------------------------------------------------------------------------------
// `y.gemv(α, a, x, β)` of a `DVector<f64>` and `c.gemm(α, a, b, β)` of a `DMatrix<f64>`, both
// modes, the receiver by value or behind `&mut` (restored by the pullback): `rules::gemv_rrule`,
// `rules::gemm_rrule`.

use crate::elements::HeldViewMut;
use crate::reverse::ByHandle;

/// The element type of a heap matrix `M`.
type Sc<M> = <M as HeapMatrix>::Scalar;

macro_rules! update_methods {
    ($($name:literal: $Y:ty, $X:ty => $frule:ident, $prule:ident;)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, P: HeldViewMut<$Y>, T: HeldViewMut<$Y>>
            MethodFrule<{ method_key($name) }, MatrixKey<$Y>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b mut $Y, &'b mut $Y>;
            type Rule = for<'s, 't, 'u, 'v> fn(
                Dual<&'b mut $Y, &'b mut $Y>,
                Dual<Sc<$Y>, Sc<$Y>>,
                Dual<&'s Mat, &'t Mat>,
                Dual<&'u $X, &'v $X>,
                Dual<Sc<$Y>, Sc<$Y>>,
            ) -> Dual<(), NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (Dual::new(self.primal.view_mut(), self.tangent.view_mut()), rules::$frule)
            }
        }
        impl RecvMarker<{ method_key($name) }, MatrixKey<$Y>> for CoDual<$Y, SharedRef<$Y>> {
            type Marker = ByValue<$Y>;
        }
        impl RecvMarker<{ method_key($name) }, MatrixKey<$Y>>
            for CoDual<SharedRef<$Y>, SharedRef<$Y>>
        {
            type Marker = ByHandle<$Y>;
        }
        update_methods!(@rule $name $Y, $X, $prule: ByValue, CoDual<$Y, SharedRef<$Y>>);
        update_methods!(@rule $name $Y, $X, $prule: ByHandle, CoDual<SharedRef<$Y>, SharedRef<$Y>>);
    )*};
    (@rule $name:literal $Y:ty, $X:ty, $prule:ident: $marker:ident, $recv:ty) => {
        impl UserMethodRrule<{ method_key($name) }, MatrixKey<$Y>> for $marker<$Y> {
            type Recv<'a> = $recv;
            type Args<'b> = (
                CoDual<Sc<$Y>, NoFData>,
                CoDual<&'b Mat, SharedRef<Mat>>,
                CoDual<&'b $X, SharedRef<$X>>,
                CoDual<Sc<$Y>, NoFData>,
            );
            type Out = ();
            type RecvRData = NoRData;
            type Rets = (NoRData, Sc<$Y>, NoRData, NoRData, Sc<$Y>);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (alpha, a, x, beta): Self::Args<'b>,
            ) -> (
                CoDual<(), NoFData>,
                impl FnOnce(NoRData, NoRData) -> Self::Rets + use<>,
            ) {
                let old = UpdateTarget::<$Y>::value(&recv.primal);
                let (y, pb) =
                    rules::$prule(old, recv.fdata.clone(), alpha.primal, a, x, beta.primal);
                let restore = UpdateTarget::<$Y>::put(&mut recv.primal, y);
                (CoDual::new((), NoFData), move |_: NoRData, _: NoRData| {
                    let (da, db, old) = pb();
                    if let Some(h) = restore {
                        h.with_mut(|v| *v = old);
                    }
                    (NoRData, da, NoRData, NoRData, db)
                })
            }
        }
    };
}

/// The receiver of an in-place update, by value or through its handle.
trait UpdateTarget<M> {
    /// Its value before the update.
    fn value(&self) -> M;
    /// Puts the new value in; returns the handle to restore the old one through (behind
    /// `&mut`).
    fn put(&mut self, y: M) -> Option<SharedRef<M>>;
}

impl<M: HeapMatrix> UpdateTarget<M> for M {
    #[inline]
    fn value(&self) -> M {
        self.clone()
    }
    #[inline]
    fn put(&mut self, y: M) -> Option<SharedRef<M>> {
        *self = y;
        None
    }
}

impl<M: HeapMatrix> UpdateTarget<M> for SharedRef<M> {
    #[inline]
    fn value(&self) -> M {
        self.with(Clone::clone)
    }
    #[inline]
    fn put(&mut self, y: M) -> Option<SharedRef<M>> {
        self.with_mut(|v| *v = y);
        Some(self.clone())
    }
}

update_methods! {
    "gemv": Vector, Vector => gemv_frule, gemv_rrule;
    "gemm": Mat, Mat => gemm_frule, gemm_rrule;
}

/// `column`, `row`, `gemv` and `gemm` of `f32` matrices: the same macros, with `Mat` and `Vector`
/// the `f32` types.
mod single {
    use super::*;
    type Mat = DMatrix<f32>;
    type Vector = DVector<f32>;

    slice_methods! {
        "column" => column_frule, column_rrule -> Vector,
        "row" => row_frule, row_rrule -> RowDVector<f32>,
    }

    trace_method!();

    update_methods! {
        "gemv": Vector, Vector => gemv_frule, gemv_rrule;
        "gemm": Mat, Mat => gemm_frule, gemm_rrule;
    }
}

// ---------------------------------------------------------------------------------------------
// Shape queries of heap matrices, without derivative: `nrows`, `ncols`, both modes. (Not `len`:
// the reverse generator reads `x.len()` as a buffer's length, through `rev::AsRead`.)

/// Forward rule of `m.nrows()`: no derivative.
pub fn nrows_frule<M: HeapMatrix>(m: Dual<&M, &M>) -> Dual<usize, NoTangent> {
    Dual::new(m.primal.dims().0, NoTangent)
}

/// Forward rule of `m.ncols()`: no derivative.
pub fn ncols_frule<M: HeapMatrix>(m: Dual<&M, &M>) -> Dual<usize, NoTangent> {
    Dual::new(m.primal.dims().1, NoTangent)
}

macro_rules! shape_methods {
    ($($name:literal => $rule:ident),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, M: HeapMatrix, P: HeldMatrix<M>, T: HeldMatrix<M>>
            MethodFrule<{ method_key($name) }, MatrixKey<M>> for &'b mut Dual<P, T>
        {
            type Receiver = Dual<&'b M, &'b M>;
            type Rule = fn(Dual<&'b M, &'b M>) -> Dual<usize, NoTangent>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (view(self), $rule::<M>)
            }
        }
        impl<'a, X: HeapMatrix> RecvMarker<{ method_key($name) }, MatrixKey<X>>
            for CoDual<&'a X, SharedRef<X>>
        {
            type Marker = ByRef<X>;
        }
        impl<X: HeapMatrix> RecvMarker<{ method_key($name) }, MatrixKey<X>>
            for CoDual<X, SharedRef<X>>
        {
            type Marker = ByValue<X>;
        }
        shape_methods!(@rule $name $rule: ByRef, CoDual<&'a X, SharedRef<X>>);
        shape_methods!(@rule $name $rule: ByValue, CoDual<X, SharedRef<X>>);
    )*};
    (@rule $name:literal $rule:ident: $marker:ident, $recv:ty) => {
        impl<X: HeapMatrix> UserMethodRrule<{ method_key($name) }, MatrixKey<X>> for $marker<X> {
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
            ) -> (CoDual<usize, NoFData>, impl FnOnce(NoRData, NoRData) -> (NoRData,) + use<X>) {
                let d = recv.rview();
                let y = $rule::<X>(Dual::new(d.primal, d.primal)).primal;
                (CoDual::new(y, NoFData), |_: NoRData, _: NoRData| (NoRData,))
            }
        }
    };
}

shape_methods! {
    "nrows" => nrows_frule,
    "ncols" => ncols_frule,
}
