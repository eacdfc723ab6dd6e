//! Element reads and writes of matrices and arrays in derived code: `v[i]`, `m[(i, j)]`,
//! `a[[i, j]]`, and the writes `v[i] = x`, `m[(i, j)] = x`, `m[(i, j)] += x` of nalgebra's heap
//! matrices and ndarray's arrays, in both modes.
//!
//! `#[differentiable]` lowers an index of a matrix (a variable the syntax shows is one, or any
//! base indexed by a pair, `m[(i, j)]` / `a[[i, j]]`) to a method of the matrix: a read to
//! `m.__element(i)` (`i` the index as written: `usize`, `(usize, usize)`, `[usize; 2]`), a
//! write to `m.__set_element(i, x)`. The methods dispatch here, through [`MethodFrule`] in forward
//! mode and the dispatch of user methods ([`RecvMarker`] / [`UserMethodRrule`]) in reverse mode,
//! keyed by [`ElementKey`], to one rule per operation, written once over [`ElementAt`]: the
//! matrix and array types implement that trait with their own indexing (and its panics).
//!
//! In reverse mode a read adds its cotangent into the element of the matrix's shadow. A write
//! takes its value's cotangent out of that element and zeroes it (the element before the
//! write does not reach the result); behind `&mut` it also puts the old value back in the
//! pullback, so that the caller's matrix is as it was on entry.
//!
//! ```
//! # #[cfg(feature = "nalgebra")] {
//! use mooncake_runtime::prelude::*;
//! use nalgebra::DMatrix;
//!
//! #[differentiable]
//! fn trace_of_square(m: &DMatrix<f64>) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..m.nrows() {
//!         for k in 0..m.ncols() {
//!             s += m[(i, k)] * m[(k, i)];
//!         }
//!     }
//!     s
//! }
//!
//! let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
//! let (y, (g,)) = value_and_gradient!(trace_of_square(&m));
//! assert_eq!(y, 1.0 + 2.0 * 6.0 + 16.0);
//! assert_eq!(g, 2.0 * m.transpose()); // d tr(M²) / dM = 2 Mᵀ
//! # }
//! ```

// Rule signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::forward::{MethodFrule, method_key};
use crate::reverse::{ByHandle, ByRef, ByValue, RecvMarker, UserMethodRrule};
use crate::shared::SharedRef;
use crate::tangent::Primal;
use std::marker::PhantomData;

/// A matrix or array whose elements derived code reads and writes one at a time, with a
/// tangent of its own type: nalgebra's `DVector`, `RowDVector`, `DMatrix` and static `SMatrix`;
/// ndarray's arrays.
pub trait ElementArray: Primal<Tangent = Self> + Clone + 'static {
    /// The element type (`f64` or `f32`).
    type Elem: Float;
    /// The number of elements (`len()`).
    fn count(&self) -> usize;
}

/// An [`ElementArray`] that is address-identified, its shadow one [`SharedRef`] (the heap
/// matrices and the arrays): what the reverse rules here are written for.
pub trait SharedElements:
    ElementArray
    + Primal<
        FData = SharedRef<Self>,
        RData = NoRData,
        Shadow = SharedRef<Self>,
        Handle = SharedRef<Self>,
    >
{
}

impl<M> SharedElements for M where
    M: ElementArray
        + Primal<FData = SharedRef<M>, RData = NoRData, Shadow = SharedRef<M>, Handle = SharedRef<M>>
{
}

/// The elements of an [`ElementArray`] at indices of type `I`: `usize` (a vector's element, or
/// a matrix's in nalgebra's column-major order) or `(usize, usize)` (row, column).
pub trait ElementAt<I>: ElementArray {
    /// The element at `i`.
    ///
    /// # Panics
    /// If `i` is out of bounds, with the type's own message.
    fn at(&self, i: I) -> Self::Elem;
    /// The element at `i`, mutably.
    ///
    /// # Panics
    /// If `i` is out of bounds, with the type's own message.
    fn at_mut(&mut self, i: I) -> &mut Self::Elem;
}

/// Key type of the element methods of `M` at indices of type `I` (see the [module](self)).
/// The receiver's marker is picked with `I = ()`, before the index's type is known.
pub struct ElementKey<M, I = ()>(PhantomData<(M, I)>);

// ---------------------------------------------------------------------------------------------
// The rules.

/// Forward rule of the read `m[i]`: the element of the primal and of the tangent.
///
/// # Panics
/// If `i` is out of bounds, as `m[i]` does.
#[inline]
pub fn element_frule<M: ElementAt<I>, I: Copy>(m: Dual<&M, &M>, i: I) -> Dual<M::Elem, M::Elem> {
    Dual::new(m.primal.at(i), m.tangent.at(i))
}

/// Forward rule of the write `m[i] = x`: into the primal and the tangent.
///
/// # Panics
/// If `i` is out of bounds, as `m[i] = x` does.
#[inline]
pub fn set_element_frule<M: ElementAt<I>, I: Copy>(
    m: Dual<&mut M, &mut M>,
    i: I,
    x: Dual<M::Elem, M::Elem>,
) -> Dual<(), NoTangent> {
    *m.primal.at_mut(i) = x.primal;
    *m.tangent.at_mut(i) = x.tangent;
    Dual::new((), NoTangent)
}

/// Reverse rule of the read `m[i]` of `m` (read through `read`): the element; the pullback adds
/// the cotangent into the element of `m`'s shadow.
///
/// # Panics
/// If `i` is out of bounds, as `m[i]` does.
#[inline]
pub fn element_rrule<M: ElementAt<I> + SharedElements, I: Copy + 'static>(
    m: &M,
    shadow: &SharedRef<M>,
    i: I,
) -> (CoDual<M::Elem, NoFData>, impl FnOnce(M::Elem) + use<M, I>) {
    let y = m.at(i);
    let shadow = shadow.clone();
    (CoDual::new(y, NoFData), move |y_bar: M::Elem| {
        shadow.accumulate(|d| *d.at_mut(i) += y_bar);
    })
}

/// Reverse rule of the write `m[i] = x`, `m` held as `H` (by value, or behind `&mut` through its
/// handle): the write; the pullback puts the old value back (behind `&mut`), and moves the
/// cotangent of the element out of `m`'s shadow into `x`'s.
///
/// # Panics
/// If `i` is out of bounds, as `m[i] = x` does.
#[inline]
pub fn set_element_rrule<
    M: ElementAt<I> + SharedElements,
    I: Copy + 'static,
    H: WrittenElements<M>,
>(
    m: &mut H,
    shadow: &SharedRef<M>,
    i: I,
    x: M::Elem,
) -> impl FnOnce() -> M::Elem + use<M, I, H> {
    let old = m.replace(i, x);
    let (restore, shadow) = (m.restorer(), shadow.clone());
    move || {
        if let Some(h) = restore {
            h.with_mut(|m| *m.at_mut(i) = old);
        }
        if !shadow.is_live() {
            return M::Elem::ZERO;
        }
        shadow.with_mut(|d| std::mem::replace(d.at_mut(i), M::Elem::ZERO))
    }
}

/// Reverse rule of `m.clone()`: a copy with a fresh shadow (constant if `m`'s is), whose
/// gradient the pullback adds into `m`'s.
#[inline]
pub fn clone_rrule<M: SharedElements + crate::tangent::TangentSpace>(
    m: &M,
    shadow: &SharedRef<M>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce() + use<M>) {
    let y = m.clone();
    let dy = if shadow.is_live() { y.zero_fdata() } else { y.constant_fdata() };
    let (shadow, back) = (shadow.clone(), dy.clone());
    (CoDual::new(y, dy), move || {
        if shadow.is_live() {
            crate::tangent::FData::increment_from(&shadow, &back);
        }
    })
}

// ---------------------------------------------------------------------------------------------
// How a matrix is held.

/// How a reverse rule holds a matrix it reads: by value, behind `&`, or through its handle (a
/// `&mut` argument).
pub trait HeldElements<M: SharedElements> {
    /// Runs `f` on the matrix.
    fn read<R>(&self, f: impl FnOnce(&M) -> R) -> R;
}

/// How a reverse rule holds a matrix it writes: by value, or through its handle (a `&mut`
/// argument), which the pullback restores.
pub trait WrittenElements<M: SharedElements> {
    /// Writes `x` at `i`; returns the old element.
    fn replace<I>(&mut self, i: I, x: M::Elem) -> M::Elem
    where
        M: ElementAt<I>;
    /// The handle to put the old value back through (for a matrix behind `&mut`).
    fn restorer(&self) -> Option<SharedRef<M>>;
}

impl<M: SharedElements> HeldElements<M> for M {
    #[inline(always)]
    fn read<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        f(self)
    }
}

impl<M: SharedElements> HeldElements<M> for &M {
    #[inline(always)]
    fn read<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        f(self)
    }
}

impl<M: SharedElements> HeldElements<M> for SharedRef<M> {
    #[inline(always)]
    fn read<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        self.with(f)
    }
}

impl<M: SharedElements> WrittenElements<M> for M {
    #[inline(always)]
    fn replace<I>(&mut self, i: I, x: M::Elem) -> M::Elem
    where
        M: ElementAt<I>,
    {
        std::mem::replace(self.at_mut(i), x)
    }
    #[inline(always)]
    fn restorer(&self) -> Option<SharedRef<M>> {
        None
    }
}

impl<M: SharedElements> WrittenElements<M> for SharedRef<M> {
    #[inline(always)]
    fn replace<I>(&mut self, i: I, x: M::Elem) -> M::Elem
    where
        M: ElementAt<I>,
    {
        self.with_mut(|m| std::mem::replace(m.at_mut(i), x))
    }
    #[inline(always)]
    fn restorer(&self) -> Option<SharedRef<M>> {
        Some(self.clone())
    }
}

/// A forward-mode dual of a matrix however it is held: its shared view.
#[inline(always)]
fn view<M: ElementArray, P: HeldView<M>, T: HeldView<M>>(d: &Dual<P, T>) -> Dual<&M, &M> {
    Dual::new(d.primal.view(), d.tangent.view())
}

/// A matrix by value, behind `&` or behind `&mut`, in forward mode.
pub trait HeldView<M> {
    /// The matrix.
    fn view(&self) -> &M;
}

/// A matrix by value or behind `&mut`, in forward mode: what a write needs.
pub trait HeldViewMut<M>: HeldView<M> {
    /// The matrix, mutably.
    fn view_mut(&mut self) -> &mut M;
}

impl<M: ElementArray> HeldView<M> for M {
    #[inline(always)]
    fn view(&self) -> &M {
        self
    }
}

impl<M: ElementArray> HeldView<M> for &M {
    #[inline(always)]
    fn view(&self) -> &M {
        self
    }
}

impl<M: ElementArray> HeldView<M> for &mut M {
    #[inline(always)]
    fn view(&self) -> &M {
        self
    }
}

impl<M: ElementArray> HeldViewMut<M> for M {
    #[inline(always)]
    fn view_mut(&mut self) -> &mut M {
        self
    }
}

impl<M: ElementArray> HeldViewMut<M> for &mut M {
    #[inline(always)]
    fn view_mut(&mut self) -> &mut M {
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Forward-mode dispatch. One impl per method, generic in the index type `I` (carried by the key,
// as `nd::dispatch::DotKey` carries its argument's type): rustc selects the impl from the
// receiver alone and infers `I` from the index at the call.

type Elem<M> = <M as ElementArray>::Elem;

#[diagnostic::do_not_recommend]
impl<'b, M: ElementAt<I>, I: Primal + Copy, P: HeldView<M>, T: HeldView<M>>
    MethodFrule<{ method_key("__element") }, ElementKey<M, I>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b M, &'b M>;
    type Rule = fn(Dual<&'b M, &'b M>, Dual<I, I::Tangent>) -> Dual<Elem<M>, Elem<M>>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), |m, i| element_frule(m, i.primal))
    }
}

#[diagnostic::do_not_recommend]
impl<'b, M: ElementAt<I>, I: Primal + Copy, P: HeldViewMut<M>, T: HeldViewMut<M>>
    MethodFrule<{ method_key("__set_element") }, ElementKey<M, I>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b mut M, &'b mut M>;
    type Rule = fn(
        Dual<&'b mut M, &'b mut M>,
        Dual<I, I::Tangent>,
        Dual<Elem<M>, Elem<M>>,
    ) -> Dual<(), NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        let m = Dual::new(self.primal.view_mut(), self.tangent.view_mut());
        (m, |m, i, x| set_element_frule(m, i.primal, x))
    }
}

#[diagnostic::do_not_recommend]
impl<'b, M: ElementArray, P: HeldView<M>, T: HeldView<M>>
    MethodFrule<{ method_key("__matrix_len") }, ElementKey<M, ()>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b M, &'b M>;
    type Rule = fn(Dual<&'b M, &'b M>) -> Dual<usize, NoTangent>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), |m| Dual::new(m.primal.count(), NoTangent))
    }
}

#[diagnostic::do_not_recommend]
impl<'b, M: ElementArray, P: HeldView<M>, T: HeldView<M>>
    MethodFrule<{ method_key("__matrix_clone") }, ElementKey<M, ()>> for &'b mut Dual<P, T>
{
    type Receiver = Dual<&'b M, &'b M>;
    type Rule = fn(Dual<&'b M, &'b M>) -> Dual<M, M>;
    #[inline(always)]
    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
        (view(self), |m| Dual::new(m.primal.clone(), m.tangent.clone()))
    }
}

// ---------------------------------------------------------------------------------------------
// Reverse-mode dispatch: the receiver behind `&` (`ByRef`), by value (`ByValue`) or behind
// `&mut` through its handle (`ByHandle`).

macro_rules! markers {
    ($($name:literal),*) => {$(
        impl<'a, M: SharedElements> RecvMarker<{ method_key($name) }, ElementKey<M>>
            for CoDual<&'a M, SharedRef<M>>
        {
            type Marker = ByRef<M>;
        }
        impl<M: SharedElements> RecvMarker<{ method_key($name) }, ElementKey<M>>
            for CoDual<M, SharedRef<M>>
        {
            type Marker = ByValue<M>;
        }
        impl<M: SharedElements> RecvMarker<{ method_key($name) }, ElementKey<M>>
            for CoDual<SharedRef<M>, SharedRef<M>>
        {
            type Marker = ByHandle<M>;
        }
    )*};
}

markers!("__element", "__set_element", "__matrix_len", "__matrix_clone");

macro_rules! held {
    ($($marker:ident, $recv:ty);*) => {$(
        impl<M: SharedElements> UserMethodRrule<{ method_key("__matrix_len") }, ElementKey<M, ()>>
            for $marker<M>
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
            ) -> (CoDual<usize, NoFData>, impl FnOnce(NoRData, NoRData) -> (NoRData,) + use<M>) {
                let n = recv.primal.read(|m| m.count());
                (CoDual::new(n, NoFData), |_: NoRData, _: NoRData| (NoRData,))
            }
        }

        impl<M: SharedElements + crate::tangent::TangentSpace>
            UserMethodRrule<{ method_key("__matrix_clone") }, ElementKey<M, ()>> for $marker<M>
        {
            type Recv<'a> = $recv;
            type Args<'b> = ();
            type Out = M;
            type RecvRData = NoRData;
            type Rets = (NoRData,);
            #[inline]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                _: (),
            ) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData, NoRData) -> (NoRData,) + use<M>) {
                let (y, pb) = recv.primal.read(|m| clone_rrule(m, &recv.fdata));
                (y, move |_: NoRData, _: NoRData| {
                    pb();
                    (NoRData,)
                })
            }
        }

        impl<M: ElementAt<I> + SharedElements, I: Primal + Copy + 'static>
            UserMethodRrule<{ method_key("__element") }, ElementKey<M, I>> for $marker<M>
        {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<I, I::FData>,);
            type Out = Elem<M>;
            type RecvRData = NoRData;
            type Rets = (NoRData, I::RData);
            #[inline]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (i,): Self::Args<'b>,
            ) -> (
                CoDual<Elem<M>, NoFData>,
                impl FnOnce(Elem<M>, NoRData) -> (NoRData, I::RData) + use<M, I>,
            ) {
                let i = i.primal;
                let (y, pb) = recv.primal.read(|m| element_rrule(m, &recv.fdata, i));
                (y, move |y_bar, _: NoRData| {
                    pb(y_bar);
                    (NoRData, i.zero_rdata())
                })
            }
        }
    )*};
}

held!(
    ByRef, CoDual<&'a M, SharedRef<M>>;
    ByValue, CoDual<M, SharedRef<M>>;
    ByHandle, CoDual<SharedRef<M>, SharedRef<M>>
);

macro_rules! writes {
    ($($marker:ident, $recv:ty);*) => {$(
        impl<M: ElementAt<I> + SharedElements, I: Primal + Copy + 'static>
            UserMethodRrule<{ method_key("__set_element") }, ElementKey<M, I>> for $marker<M>
        {
            type Recv<'a> = $recv;
            type Args<'b> = (CoDual<I, I::FData>, CoDual<Elem<M>, NoFData>);
            type Out = ();
            type RecvRData = NoRData;
            type Rets = (NoRData, I::RData, Elem<M>);
            #[inline]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                (i, x): Self::Args<'b>,
            ) -> (
                CoDual<(), NoFData>,
                impl FnOnce(NoRData, NoRData) -> (NoRData, I::RData, Elem<M>) + use<M, I>,
            ) {
                let i = i.primal;
                let pb = set_element_rrule(&mut recv.primal, &recv.fdata, i, x.primal);
                (CoDual::new((), NoFData), move |_: NoRData, _: NoRData| {
                    (NoRData, i.zero_rdata(), pb())
                })
            }
        }
    )*};
}

writes!(
    ByValue, CoDual<M, SharedRef<M>>;
    ByHandle, CoDual<SharedRef<M>, SharedRef<M>>
);
