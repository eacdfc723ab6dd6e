//! nalgebra's statically sized matrices as primal types (feature `nalgebra`, issue 15):
//! `SMatrix<f64, R, C>`, hence `SVector<f64, N>` (`SMatrix<f64, N, 1>`), `Matrix3<f64>`,
//! `Vector3<f64>`, `RowSVector<f64, N>`, ...
//!
//! They are `Copy` values of a shape known at compile time, so they are **value-identified**
//! like `f64` and `[f64; N]`: the tangent and the rdata are the same matrix type, the fdata is
//! [`NoFData`], and behind a reference the shadow is a [`SharedCell`] of the matrix. A zero
//! rdata needs no shape ([`ZeroRData`]).
//!
//! The rules (`NAME_frule` / `NAME_rrule`, both modes) take their matrix operands behind
//! references (`Dual<&S, &S>`, `CoDual<&S, SharedCell<S>>`) as the rules of heap matrices do;
//! derived code reaches them through the methods and operators of [`super::dispatch`], which
//! lend a matrix held by value with a fresh shadow and give its gradient back as rdata. Each
//! rule is one of nalgebra's own operations on the whole matrix.

// Rule signatures spell out the rule interface.
#![allow(clippy::type_complexity)]

use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::rng::TestRng;
use crate::shared::SharedCell;
use crate::tangent::{FromHandle, Primal, TangentSpace, ZeroRData, close};
use nalgebra::SMatrix;

impl<const R: usize, const C: usize> TangentSpace for SMatrix<f64, R, C> {
    #[inline]
    fn increment(&mut self, other: &Self) {
        *self += other;
    }
    #[inline]
    fn inner(&self, other: &Self) -> f64 {
        self.dot(other)
    }
    #[inline]
    fn scale(&mut self, a: f64) {
        *self *= a;
    }
    fn settle(&mut self) {
        self.add_scalar_mut(0.0);
    }
}

impl<const R: usize, const C: usize> ZeroRData for SMatrix<f64, R, C> {
    #[inline]
    fn zero() -> Self {
        Self::zeros()
    }
}

impl<const R: usize, const C: usize> crate::elements::ElementArray for SMatrix<f64, R, C> {
    type Elem = f64;
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
}

impl<const R: usize, const C: usize> crate::elements::ElementAt<usize> for SMatrix<f64, R, C> {
    #[inline(always)]
    fn at(&self, i: usize) -> f64 {
        self[i]
    }
    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut f64 {
        &mut self[i]
    }
}

impl<const R: usize, const C: usize> crate::elements::ElementAt<(usize, usize)>
    for SMatrix<f64, R, C>
{
    #[inline(always)]
    fn at(&self, ij: (usize, usize)) -> f64 {
        self[ij]
    }
    #[inline(always)]
    fn at_mut(&mut self, ij: (usize, usize)) -> &mut f64 {
        &mut self[ij]
    }
}

impl<const R: usize, const C: usize> Primal for SMatrix<f64, R, C> {
    type Tangent = Self;
    type TangentRef = Self;
    type FData = NoFData;
    type RData = Self;
    type Shadow = SharedCell<Self>;
    type Handle = SharedCell<Self>;

    crate::tangent::value_identified_methods!(Self::zeros());
    fn random_tangent(&self, rng: &mut TestRng) -> Self {
        Self::from_fn(|_, _| rng.normal())
    }
    fn perturb(&mut self, tangent: &Self, h: f64) {
        *self += tangent * h;
    }
    fn inner_difference(tangent: &Self, a: &Self, b: &Self) -> f64 {
        tangent.dot(&(a - b))
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.iter().zip(other.iter()).all(|(a, b)| close(*a, *b, rtol, atol))
    }
}

impl<const R: usize, const C: usize> FromHandle for SMatrix<f64, R, C> {
    #[inline]
    fn from_handle(handle: &SharedCell<Self>) -> Self {
        handle.get()
    }
}

/// A static matrix behind `&` with its shadow, as reverse rules take it.
type Ref<'a, const R: usize, const C: usize> =
    CoDual<&'a SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>;
/// A static matrix result of a reverse rule: value-identified, no fdata.
type Out<const R: usize, const C: usize> = CoDual<SMatrix<f64, R, C>, NoFData>;
/// A static matrix behind `&` with its tangent, as forward rules take it.
type FRef<'a, const R: usize, const C: usize> =
    Dual<&'a SMatrix<f64, R, C>, &'a SMatrix<f64, R, C>>;
/// A static matrix forward-rule result.
type FOut<const R: usize, const C: usize> = Dual<SMatrix<f64, R, C>, SMatrix<f64, R, C>>;

// ---------------------------------------------------------------------------------------------
// Reductions.

/// Forward rule of `a.dot(&b)`.
pub fn sdot_frule<const R: usize, const C: usize>(
    a: FRef<'_, R, C>,
    b: FRef<'_, R, C>,
) -> Dual<f64, f64> {
    Dual::new(a.primal.dot(b.primal), a.tangent.dot(b.primal) + a.primal.dot(b.tangent))
}

/// Reverse rule of `a.dot(&b)`: `ā += ȳ b`, `b̄ += ȳ a`.
pub fn sdot_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
    b: Ref<'_, R, C>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<R, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa.dot(&pb), NoFData), move |y_bar: f64| {
        da.add(pb * y_bar);
        db.add(pa * y_bar);
        (NoRData, NoRData)
    })
}

/// Forward rule of `a.norm_squared()`.
pub fn snorm_squared_frule<const R: usize, const C: usize>(a: FRef<'_, R, C>) -> Dual<f64, f64> {
    Dual::new(a.primal.norm_squared(), 2.0 * a.primal.dot(a.tangent))
}

/// Reverse rule of `a.norm_squared()`: `ā += 2ȳ a`.
pub fn snorm_squared_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<R, C>) {
    let (pa, da) = (*a.primal, a.fdata);
    (CoDual::new(pa.norm_squared(), NoFData), move |y_bar: f64| {
        da.add(pa * (2.0 * y_bar));
        (NoRData,)
    })
}

/// Forward rule of `a.norm()`.
pub fn snorm_frule<const R: usize, const C: usize>(a: FRef<'_, R, C>) -> Dual<f64, f64> {
    let y = a.primal.norm();
    Dual::new(y, a.primal.dot(a.tangent) / y)
}

/// Reverse rule of `a.norm()`: `ā += (ȳ / |a|) a`.
pub fn snorm_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<R, C>) {
    let (pa, da) = (*a.primal, a.fdata);
    let y = pa.norm();
    (CoDual::new(y, NoFData), move |y_bar: f64| {
        da.add(pa * (y_bar / y));
        (NoRData,)
    })
}

/// Forward rule of `a.sum()`.
pub fn ssum_frule<const R: usize, const C: usize>(a: FRef<'_, R, C>) -> Dual<f64, f64> {
    Dual::new(a.primal.sum(), a.tangent.sum())
}

/// Reverse rule of `a.sum()`: `ȳ` added to every entry of `ā`.
pub fn ssum_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<R, C>) {
    let da = a.fdata;
    (CoDual::new(a.primal.sum(), NoFData), move |y_bar: f64| {
        da.add(SMatrix::repeat(y_bar));
        (NoRData,)
    })
}

// ---------------------------------------------------------------------------------------------
// Transpose, element-wise operations, products.

/// Forward rule of `a.transpose()`.
pub fn stranspose_frule<const R: usize, const C: usize>(a: FRef<'_, R, C>) -> FOut<C, R> {
    Dual::new(a.primal.transpose(), a.tangent.transpose())
}

/// Reverse rule of `a.transpose()`: `ā += ȳᵀ`.
pub fn stranspose_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
) -> (Out<C, R>, impl FnOnce(SMatrix<f64, C, R>) -> (NoRData,) + use<R, C>) {
    let da = a.fdata;
    (CoDual::new(a.primal.transpose(), NoFData), move |g: SMatrix<f64, C, R>| {
        da.add(g.transpose());
        (NoRData,)
    })
}

/// Forward rule of `a + b`.
pub fn sadd_frule<const R: usize, const C: usize>(
    a: FRef<'_, R, C>,
    b: FRef<'_, R, C>,
) -> FOut<R, C> {
    Dual::new(a.primal + b.primal, a.tangent + b.tangent)
}

/// Reverse rule of `a + b`: `ā += ȳ`, `b̄ += ȳ`.
pub fn sadd_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
    b: Ref<'_, R, C>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData, NoRData) + use<R, C>) {
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(a.primal + b.primal, NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(g);
        db.add(g);
        (NoRData, NoRData)
    })
}

/// Forward rule of `a - b`.
pub fn ssub_frule<const R: usize, const C: usize>(
    a: FRef<'_, R, C>,
    b: FRef<'_, R, C>,
) -> FOut<R, C> {
    Dual::new(a.primal - b.primal, a.tangent - b.tangent)
}

/// Reverse rule of `a - b`: `ā += ȳ`, `b̄ -= ȳ`.
pub fn ssub_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
    b: Ref<'_, R, C>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData, NoRData) + use<R, C>) {
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(a.primal - b.primal, NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(g);
        db.add(-g);
        (NoRData, NoRData)
    })
}

/// Forward rule of `-a`.
pub fn sneg_frule<const R: usize, const C: usize>(a: FRef<'_, R, C>) -> FOut<R, C> {
    Dual::new(-a.primal, -a.tangent)
}

/// Reverse rule of `-a`: `ā -= ȳ`.
pub fn sneg_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData,) + use<R, C>) {
    let da = a.fdata;
    (CoDual::new(-a.primal, NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(-g);
        (NoRData,)
    })
}

/// Forward rule of `a * s` (and `s * a`) for a scalar `s`.
pub fn sscale_frule<const R: usize, const C: usize>(
    a: FRef<'_, R, C>,
    s: Dual<f64, f64>,
) -> FOut<R, C> {
    Dual::new(a.primal * s.primal, a.tangent * s.primal + a.primal * s.tangent)
}

/// Reverse rule of `a * s`: `ā += s ȳ`, `s̄ = <a, ȳ>`.
pub fn sscale_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
    s: CoDual<f64, NoFData>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData, f64) + use<R, C>) {
    let (pa, da, s) = (*a.primal, a.fdata, s.primal);
    (CoDual::new(pa * s, NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(g * s);
        (NoRData, pa.dot(&g))
    })
}

/// Forward rule of `a.component_mul(&b)`.
pub fn scomponent_mul_frule<const R: usize, const C: usize>(
    a: FRef<'_, R, C>,
    b: FRef<'_, R, C>,
) -> FOut<R, C> {
    Dual::new(
        a.primal.component_mul(b.primal),
        a.tangent.component_mul(b.primal) + a.primal.component_mul(b.tangent),
    )
}

/// Reverse rule of `a.component_mul(&b)`: `ā += ȳ ∘ b`, `b̄ += ȳ ∘ a`.
pub fn scomponent_mul_rrule<const R: usize, const C: usize>(
    a: Ref<'_, R, C>,
    b: Ref<'_, R, C>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData, NoRData) + use<R, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa.component_mul(&pb), NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(g.component_mul(&pb));
        db.add(g.component_mul(&pa));
        (NoRData, NoRData)
    })
}

/// Forward rule of the product `a * b` (`R x K` times `K x C`; matrix-vector when `C = 1`).
pub fn smul_frule<const R: usize, const K: usize, const C: usize>(
    a: FRef<'_, R, K>,
    b: FRef<'_, K, C>,
) -> FOut<R, C> {
    Dual::new(a.primal * b.primal, a.tangent * b.primal + a.primal * b.tangent)
}

/// Reverse rule of the product `a * b`: `ā += ȳ bᵀ`, `b̄ += aᵀ ȳ`.
pub fn smul_rrule<const R: usize, const K: usize, const C: usize>(
    a: Ref<'_, R, K>,
    b: Ref<'_, K, C>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData, NoRData) + use<R, K, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa * pb, NoFData), move |g: SMatrix<f64, R, C>| {
        da.add(g * pb.transpose());
        db.add(pa.tr_mul(&g));
        (NoRData, NoRData)
    })
}

// ---------------------------------------------------------------------------------------------
// Indexed reads and construction.

/// Forward rule of the read `v[i]` (column-major linear index, as nalgebra's `Index<usize>`).
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn sindex_frule<const R: usize, const C: usize>(
    v: FRef<'_, R, C>,
    i: Dual<usize, NoTangent>,
) -> Dual<f64, f64> {
    Dual::new(v.primal[i.primal], v.tangent[i.primal])
}

/// Reverse rule of the read `v[i]`: `v̄[i] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn sindex_rrule<const R: usize, const C: usize>(
    v: Ref<'_, R, C>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<R, C>) {
    let i = i.primal;
    let dv = v.fdata;
    (CoDual::new(v.primal[i], NoFData), move |y_bar: f64| {
        let mut g = SMatrix::<f64, R, C>::zeros();
        g[i] = y_bar;
        dv.add(g);
        (NoRData, NoRData)
    })
}

/// Forward rule of the read `m[(i, j)]`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn sindex2_frule<const R: usize, const C: usize>(
    m: FRef<'_, R, C>,
    ij: Dual<(usize, usize), (NoTangent, NoTangent)>,
) -> Dual<f64, f64> {
    Dual::new(m.primal[ij.primal], m.tangent[ij.primal])
}

/// Reverse rule of the read `m[(i, j)]`: `m̄[(i, j)] += ȳ`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn sindex2_rrule<const R: usize, const C: usize>(
    m: Ref<'_, R, C>,
    ij: CoDual<(usize, usize), (NoFData, NoFData)>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, (NoRData, NoRData)) + use<R, C>) {
    let ij = ij.primal;
    let dm = m.fdata;
    (CoDual::new(m.primal[ij], NoFData), move |y_bar: f64| {
        let mut g = SMatrix::<f64, R, C>::zeros();
        g[ij] = y_bar;
        dm.add(g);
        (NoRData, (NoRData, NoRData))
    })
}

/// Forward rule of `SMatrix::from_row_slice(s)`.
///
/// # Panics
/// If `s` is shorter than `R * C`, as `from_row_slice` does.
pub fn sfrom_row_slice_frule<const R: usize, const C: usize>(
    s: Dual<&[f64], &[f64]>,
) -> FOut<R, C> {
    Dual::new(SMatrix::from_row_slice(s.primal), SMatrix::from_row_slice(s.tangent))
}

/// Reverse rule of `SMatrix::from_row_slice(s)`: `s̄[C i + j] += ȳ[(i, j)]`.
///
/// # Panics
/// If `s` is shorter than `R * C`, as `from_row_slice` does.
pub fn sfrom_row_slice_rrule<const R: usize, const C: usize>(
    s: CoDual<&[f64], crate::shared::SharedVec<f64>>,
) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (NoRData,) + use<R, C>) {
    let ds = s.fdata;
    (CoDual::new(SMatrix::from_row_slice(s.primal), NoFData), move |g: SMatrix<f64, R, C>| {
        ds.with_mut(|d| {
            // `g` read row by row: the entries of `gᵀ`, column-major (one `axpy`).
            let gt = g.transpose();
            let g = nalgebra::DVectorView::from_slice(gt.as_slice(), R * C);
            nalgebra::DVectorViewMut::from_slice(&mut d[..R * C], R * C).axpy(1.0, &g, 1.0);
        });
        (NoRData,)
    })
}

/// Forward rule of `SMatrix::zeros()`.
pub fn szeros_frule<const R: usize, const C: usize>() -> FOut<R, C> {
    Dual::new(SMatrix::zeros(), SMatrix::zeros())
}

/// Reverse rule of `SMatrix::zeros()`: nothing flows back.
pub fn szeros_rrule<const R: usize, const C: usize>()
-> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) + use<R, C>) {
    (CoDual::new(SMatrix::zeros(), NoFData), |_: SMatrix<f64, R, C>| ())
}

// ---------------------------------------------------------------------------------------------
// Dispatch from derived code. Forward mode: `std::ops` on `Dual`s of static matrices by value or
// behind `&`, and `MethodFrule` impls keyed by `StaticKey`. Reverse mode: `rev::RevAdd` and its
// siblings and the user-method dispatch (`RecvMarker` / `UserMethodRrule`) on how the operand
// is held: by value (`CoDual<S, NoFData>`, its gradient returned as rdata), behind `&`
// (`CoDual<&S, SharedCell<S>>`) or as the owned copy `rev::operand` makes of that
// (`CoDual<S, SharedCell<S>>`), whose gradients go into the shadow.

use crate::forward::{MethodFrule, method_key};
use crate::reverse::{
    ByRef, ByValue, Operand, RecvMarker, RevAdd, RevMul, RevNeg, RevSub, UserMethodRrule,
};
use std::marker::PhantomData;

/// Key type of the method rules on static matrices of type `S`.
pub struct StaticKey<S>(PhantomData<S>);

/// How a static matrix is held in a forward-mode dual: by value, behind `&` or `&mut`.
pub trait HeldStatic<S> {
    /// The matrix.
    fn get(&self) -> &S;
}

impl<const R: usize, const C: usize> HeldStatic<SMatrix<f64, R, C>> for SMatrix<f64, R, C> {
    #[inline(always)]
    fn get(&self) -> &Self {
        self
    }
}
impl<const R: usize, const C: usize> HeldStatic<SMatrix<f64, R, C>> for &SMatrix<f64, R, C> {
    #[inline(always)]
    fn get(&self) -> &SMatrix<f64, R, C> {
        self
    }
}
impl<const R: usize, const C: usize> HeldStatic<SMatrix<f64, R, C>> for &mut SMatrix<f64, R, C> {
    #[inline(always)]
    fn get(&self) -> &SMatrix<f64, R, C> {
        self
    }
}

#[inline(always)]
fn fview<S, P: HeldStatic<S>, T: HeldStatic<S>>(d: &Dual<P, T>) -> Dual<&S, &S> {
    Dual::new(d.primal.get(), d.tangent.get())
}

macro_rules! s_unary_methods {
    ($($name:literal => $rule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, const R: usize, const C: usize, P, T> MethodFrule<{ method_key($name) }, StaticKey<SMatrix<f64, R, C>>>
            for &'b mut Dual<P, T>
        where
            P: HeldStatic<SMatrix<f64, R, C>>,
            T: HeldStatic<SMatrix<f64, R, C>>,
        {
            type Receiver = FRef<'b, R, C>;
            type Rule = fn(FRef<'b, R, C>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (fview(self), $rule::<R, C>)
            }
        }
    )*};
}

s_unary_methods! {
    "norm_squared" => snorm_squared_frule -> f64,
    "norm" => snorm_frule -> f64,
    "sum" => ssum_frule -> f64,
    "transpose" => stranspose_frule -> SMatrix<f64, C, R>,
}

macro_rules! s_binary_methods {
    ($($name:literal => $rule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, const R: usize, const C: usize, P, T> MethodFrule<{ method_key($name) }, StaticKey<SMatrix<f64, R, C>>>
            for &'b mut Dual<P, T>
        where
            P: HeldStatic<SMatrix<f64, R, C>>,
            T: HeldStatic<SMatrix<f64, R, C>>,
        {
            type Receiver = FRef<'b, R, C>;
            type Rule = for<'s> fn(FRef<'b, R, C>, FRef<'s, R, C>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (fview(self), $rule::<R, C>)
            }
        }
    )*};
}

s_binary_methods! {
    "dot" => sdot_frule -> f64,
    "component_mul" => scomponent_mul_frule -> SMatrix<f64, R, C>,
}

/// Forward operators for every pair of operands by value or behind `&`.
macro_rules! s_binop {
    ($Tr:ident $m:ident $rule:ident [$($g:tt)*] $A:ty, $B:ty => $Out:ty) => {
        impl<$($g)*> std::ops::$Tr<Dual<$B, $B>> for Dual<$A, $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<$B, $B>) -> Dual<$Out, $Out> {
                $rule(fview(&self), fview(&rhs))
            }
        }
        impl<'a, 'b, $($g)*> std::ops::$Tr<Dual<$B, $B>> for Dual<&'a $A, &'b $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<$B, $B>) -> Dual<$Out, $Out> {
                $rule(fview(&self), fview(&rhs))
            }
        }
        impl<'c, 'd, $($g)*> std::ops::$Tr<Dual<&'c $B, &'d $B>> for Dual<$A, $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<&'c $B, &'d $B>) -> Dual<$Out, $Out> {
                $rule(fview(&self), fview(&rhs))
            }
        }
        impl<'a, 'b, 'c, 'd, $($g)*> std::ops::$Tr<Dual<&'c $B, &'d $B>> for Dual<&'a $A, &'b $A> {
            type Output = Dual<$Out, $Out>;
            #[inline]
            fn $m(self, rhs: Dual<&'c $B, &'d $B>) -> Dual<$Out, $Out> {
                $rule(fview(&self), fview(&rhs))
            }
        }
    };
}

s_binop!(Add add sadd_frule [const R: usize, const C: usize] SMatrix<f64, R, C>, SMatrix<f64, R, C> => SMatrix<f64, R, C>);
s_binop!(Sub sub ssub_frule [const R: usize, const C: usize] SMatrix<f64, R, C>, SMatrix<f64, R, C> => SMatrix<f64, R, C>);
s_binop!(Mul mul smul_frule [const R: usize, const K: usize, const C: usize] SMatrix<f64, R, K>, SMatrix<f64, K, C> => SMatrix<f64, R, C>);

impl<const R: usize, const C: usize> std::ops::Neg
    for Dual<SMatrix<f64, R, C>, SMatrix<f64, R, C>>
{
    type Output = FOut<R, C>;
    #[inline]
    fn neg(self) -> FOut<R, C> {
        sneg_frule(fview(&self))
    }
}
impl<const R: usize, const C: usize> std::ops::Neg
    for Dual<&SMatrix<f64, R, C>, &SMatrix<f64, R, C>>
{
    type Output = FOut<R, C>;
    #[inline]
    fn neg(self) -> FOut<R, C> {
        sneg_frule(self)
    }
}

macro_rules! s_scale {
    ($($A:ty; $($l:lifetime),*);*) => {$(
        impl<$($l,)* const R: usize, const C: usize> std::ops::Mul<Dual<f64, f64>> for Dual<$A, $A> {
            type Output = FOut<R, C>;
            #[inline]
            fn mul(self, s: Dual<f64, f64>) -> FOut<R, C> {
                sscale_frule(fview(&self), s)
            }
        }
        impl<$($l,)* const R: usize, const C: usize> std::ops::Mul<Dual<$A, $A>> for Dual<f64, f64> {
            type Output = FOut<R, C>;
            #[inline]
            fn mul(self, a: Dual<$A, $A>) -> FOut<R, C> {
                sscale_frule(fview(&a), self)
            }
        }
    )*};
}

s_scale!(SMatrix<f64, R, C>; ; &'a SMatrix<f64, R, C>; 'a);

// ---- reverse mode ----------------------------------------------------------------------------

/// A reverse-mode static-matrix operand: by value (its gradient returned as rdata), behind `&`,
/// or an owned copy with the shadow of the place it was read from (its gradient added there).
pub trait StaticOperand<S> {
    /// The operand's rdata: `S` by value, `NoRData` when the gradient goes into a shadow.
    type R;
    /// The value, and the shadow the rule adds its gradient into.
    fn lend(&self) -> (S, SharedCell<S>);
    /// The operand's rdata from that shadow after the rule's pullback.
    fn back(shadow: SharedCell<S>) -> Self::R;
}

impl<const R: usize, const C: usize> StaticOperand<SMatrix<f64, R, C>> for Out<R, C> {
    type R = SMatrix<f64, R, C>;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>) {
        (self.primal, SharedCell::new(SMatrix::zeros()))
    }
    #[inline(always)]
    fn back(shadow: SharedCell<SMatrix<f64, R, C>>) -> SMatrix<f64, R, C> {
        shadow.get()
    }
}

impl<const R: usize, const C: usize> StaticOperand<SMatrix<f64, R, C>>
    for CoDual<SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>
{
    type R = NoRData;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>) {
        (self.primal, self.fdata.clone())
    }
    #[inline(always)]
    fn back(_: SharedCell<SMatrix<f64, R, C>>) -> NoRData {
        NoRData
    }
}

impl<const R: usize, const C: usize> StaticOperand<SMatrix<f64, R, C>> for Ref<'_, R, C> {
    type R = NoRData;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>) {
        (*self.primal, self.fdata.clone())
    }
    #[inline(always)]
    fn back(_: SharedCell<SMatrix<f64, R, C>>) -> NoRData {
        NoRData
    }
}

impl<const R: usize, const C: usize> Operand for Out<R, C> {
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        *self
    }
}

impl<const R: usize, const C: usize> Operand
    for CoDual<SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>
{
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        self.clone()
    }
}

impl<const R: usize, const C: usize> Operand for Ref<'_, R, C> {
    type Owned = CoDual<SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>;
    #[inline(always)]
    fn operand(&self) -> Self::Owned {
        CoDual::new(*self.primal, self.fdata.clone())
    }
}

macro_rules! s_rev_binop {
    ($Tr:ident $m:ident $rule:ident $g:tt $SA:ty, $SB:ty => $O:ty; $($A:ty, $B:ty; $($l:lifetime),*);*) => {$(
        s_rev_binop!(@one $Tr $m $rule $g [$($l),*] $SA, $SB => $O; $A, $B);
    )*};
    (@one $Tr:ident $m:ident $rule:ident [$($g:tt)*] [$($l:lifetime),*] $SA:ty, $SB:ty => $O:ty; $A:ty, $B:ty) => {
        impl<$($l,)* $($g)*> $Tr<$B> for $A {
            type Out = $O;
            type RA = <$A as StaticOperand<$SA>>::R;
            type RB = <$B as StaticOperand<$SB>>::R;
            #[inline]
            fn $m(self, rhs: $B) -> (
                CoDual<$O, NoFData>,
                impl FnOnce($O) -> (Self::RA, Self::RB),
            ) {
                let ((pa, sa), (pb, sb)) = (self.lend(), rhs.lend());
                let (y, pb_) = $rule(CoDual::new(&pa, sa.clone()), CoDual::new(&pb, sb.clone()));
                (y, move |g| {
                    let _ = pb_(g);
                    (<$A as StaticOperand<$SA>>::back(sa), <$B as StaticOperand<$SB>>::back(sb))
                })
            }
        }
    };
}

macro_rules! s_rev_binop_all {
    ($Tr:ident $m:ident $rule:ident $g:tt $SA:ty, $SB:ty => $O:ty) => {
        s_rev_binop!($Tr $m $rule $g $SA, $SB => $O;
            CoDual<$SA, NoFData>, CoDual<$SB, NoFData>; ;
            CoDual<$SA, NoFData>, CoDual<$SB, SharedCell<$SB>>; ;
            CoDual<$SA, NoFData>, CoDual<&'b $SB, SharedCell<$SB>>; 'b;
            CoDual<$SA, SharedCell<$SA>>, CoDual<$SB, NoFData>; ;
            CoDual<$SA, SharedCell<$SA>>, CoDual<$SB, SharedCell<$SB>>; ;
            CoDual<$SA, SharedCell<$SA>>, CoDual<&'b $SB, SharedCell<$SB>>; 'b;
            CoDual<&'a $SA, SharedCell<$SA>>, CoDual<$SB, NoFData>; 'a;
            CoDual<&'a $SA, SharedCell<$SA>>, CoDual<$SB, SharedCell<$SB>>; 'a;
            CoDual<&'a $SA, SharedCell<$SA>>, CoDual<&'b $SB, SharedCell<$SB>>; 'a, 'b
        );
    };
}

s_rev_binop_all!(RevAdd add sadd_rrule [const R: usize, const C: usize] SMatrix<f64, R, C>, SMatrix<f64, R, C> => SMatrix<f64, R, C>);
s_rev_binop_all!(RevSub sub ssub_rrule [const R: usize, const C: usize] SMatrix<f64, R, C>, SMatrix<f64, R, C> => SMatrix<f64, R, C>);
s_rev_binop_all!(RevMul mul smul_rrule [const R: usize, const K: usize, const C: usize] SMatrix<f64, R, K>, SMatrix<f64, K, C> => SMatrix<f64, R, C>);

macro_rules! s_rev_unary {
    ($($A:ty; $($l:lifetime),*);*) => {$(
        impl<$($l,)* const R: usize, const C: usize> RevNeg for $A {
            type Out = SMatrix<f64, R, C>;
            type R = <$A as StaticOperand<SMatrix<f64, R, C>>>::R;
            #[inline]
            fn neg(self) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (Self::R,)) {
                let (p, s) = self.lend();
                let (y, pb) = sneg_rrule(CoDual::new(&p, s.clone()));
                (y, move |g| {
                    let _ = pb(g);
                    (<$A as StaticOperand<SMatrix<f64, R, C>>>::back(s),)
                })
            }
        }
        impl<$($l,)* const R: usize, const C: usize> RevMul<CoDual<f64, NoFData>> for $A {
            type Out = SMatrix<f64, R, C>;
            type RA = <$A as StaticOperand<SMatrix<f64, R, C>>>::R;
            type RB = f64;
            #[inline]
            fn mul(self, t: CoDual<f64, NoFData>) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (Self::RA, f64)) {
                let (p, s) = self.lend();
                let (y, pb) = sscale_rrule(CoDual::new(&p, s.clone()), t);
                (y, move |g| {
                    let (_, rt) = pb(g);
                    (<$A as StaticOperand<SMatrix<f64, R, C>>>::back(s), rt)
                })
            }
        }
        impl<$($l,)* const R: usize, const C: usize> RevMul<$A> for CoDual<f64, NoFData> {
            type Out = SMatrix<f64, R, C>;
            type RA = f64;
            type RB = <$A as StaticOperand<SMatrix<f64, R, C>>>::R;
            #[inline]
            fn mul(self, a: $A) -> (Out<R, C>, impl FnOnce(SMatrix<f64, R, C>) -> (f64, Self::RB)) {
                let (p, s) = a.lend();
                let (y, pb) = sscale_rrule(CoDual::new(&p, s.clone()), self);
                (y, move |g| {
                    let (_, rt) = pb(g);
                    (rt, <$A as StaticOperand<SMatrix<f64, R, C>>>::back(s))
                })
            }
        }
    )*};
}

s_rev_unary!(
    CoDual<SMatrix<f64, R, C>, NoFData>; ;
    CoDual<SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>; ;
    CoDual<&'a SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>>; 'a
);

/// Reverse-mode methods: the receiver by value (`ByValue`, its gradient returned as rdata) or
/// behind `&` (`ByRef`); a matrix argument behind `&` (`a.dot(&b)`).
macro_rules! s_rev_methods {
    ($($name:literal => $rule:ident ($($arg:ident),*) -> $out:ty),* $(,)?) => {$(
        impl<'a, const R: usize, const C: usize> RecvMarker<{ method_key($name) }, StaticKey<SMatrix<f64, R, C>>>
            for Ref<'a, R, C>
        {
            type Marker = ByRef<SMatrix<f64, R, C>>;
        }
        impl<const R: usize, const C: usize> RecvMarker<{ method_key($name) }, StaticKey<SMatrix<f64, R, C>>>
            for Out<R, C>
        {
            type Marker = ByValue<SMatrix<f64, R, C>>;
        }
        s_rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByRef, Ref<'a, R, C>, NoRData);
        s_rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByValue, Out<R, C>, SMatrix<f64, R, C>);
    )*};
    (@rule $name:literal $rule:ident ($($arg:ident),*) -> $out:ty: $marker:ident, $recv:ty, $rr:ty) => {
        impl<const R: usize, const C: usize> UserMethodRrule<{ method_key($name) }, StaticKey<SMatrix<f64, R, C>>>
            for $marker<SMatrix<f64, R, C>>
        {
            type Recv<'a> = $recv;
            type Args<'b> = ($(s_rev_methods!(@arg $arg 'b),)*);
            type Out = $out;
            type RecvRData = $rr;
            type Rets = ($rr, $(s_rev_methods!(@rdata $arg),)*);
            #[inline]
            #[allow(clippy::type_complexity, non_snake_case)]
            fn method_rrule<'a, 'b>(
                self,
                recv: &mut Self::Recv<'a>,
                args: Self::Args<'b>,
            ) -> (
                CoDual<$out, <$out as Primal>::FData>,
                impl FnOnce(<$out as Primal>::RData, $rr) -> Self::Rets + use<R, C>,
            ) {
                let ($($arg,)*) = args;
                let (p, s) = StaticOperand::<SMatrix<f64, R, C>>::lend(&*recv);
                let (y, pb) = $rule::<R, C>(CoDual::new(&p, s.clone()) $(, $arg)*);
                (y, move |y_bar, ra: $rr| {
                    let r = pb(y_bar);
                    let mut back = <$recv as StaticOperand<SMatrix<f64, R, C>>>::back(s);
                    TangentSpace::increment(&mut back, &ra);
                    s_rev_methods!(@rets r back ($($arg),*))
                })
            }
        }
    };
    (@arg $arg:ident $l:lifetime) => { CoDual<&$l SMatrix<f64, R, C>, SharedCell<SMatrix<f64, R, C>>> };
    (@rdata $arg:ident) => { NoRData };
    (@rets $r:ident $back:ident ()) => { { let _ = $r; ($back,) } };
    (@rets $r:ident $back:ident ($a:ident)) => { { let _ = $r; ($back, NoRData) } };
}

s_rev_methods! {
    "norm_squared" => snorm_squared_rrule() -> f64,
    "norm" => snorm_rrule() -> f64,
    "sum" => ssum_rrule() -> f64,
    "transpose" => stranspose_rrule() -> SMatrix<f64, C, R>,
    "dot" => sdot_rrule(B) -> f64,
    "component_mul" => scomponent_mul_rrule(B) -> SMatrix<f64, R, C>,
}

// ---------------------------------------------------------------------------------------------
// Elements in reverse mode (`crate::elements`): `v[i]`, `m[(i, j)]` read and written, `len()`,
// `clone()`, with the receiver by value (its gradient returned as rdata), behind `&` (its
// gradient added into its `SharedCell`) or behind `&mut` (through its handle, restored by the
// pullback).

use crate::elements::{ElementArray, ElementAt, ElementKey};
use crate::reverse::ByHandle;

type Handle<const R: usize, const C: usize> =
    CoDual<SharedCell<SMatrix<f64, R, C>>, SharedCell<SMatrix<f64, R, C>>>;

/// `g` with `y_bar` added at `i`.
#[inline]
fn plus_at<const R: usize, const C: usize, I>(
    mut g: SMatrix<f64, R, C>,
    i: I,
    y_bar: f64,
) -> SMatrix<f64, R, C>
where
    SMatrix<f64, R, C>: ElementAt<I> + ElementArray<Elem = f64>,
{
    *g.at_mut(i) += y_bar;
    g
}

/// The element of `g` at `i`, and `g` with it zeroed.
#[inline]
fn take_at<const R: usize, const C: usize, I: Copy>(
    mut g: SMatrix<f64, R, C>,
    i: I,
) -> (f64, SMatrix<f64, R, C>)
where
    SMatrix<f64, R, C>: ElementAt<I> + ElementArray<Elem = f64>,
{
    let v = std::mem::replace(g.at_mut(i), 0.0);
    (v, g)
}

macro_rules! s_element_markers {
    ($($name:literal),*) => {$(
        impl<'a, const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<f64, R, C>>> for Ref<'a, R, C>
        {
            type Marker = ByRef<SMatrix<f64, R, C>>;
        }
        impl<const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<f64, R, C>>> for Out<R, C>
        {
            type Marker = ByValue<SMatrix<f64, R, C>>;
        }
        impl<const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<f64, R, C>>> for Handle<R, C>
        {
            type Marker = ByHandle<SMatrix<f64, R, C>>;
        }
    )*};
}

s_element_markers!("__element", "__set_element", "__matrix_len", "__matrix_clone");

type S<const R: usize, const C: usize> = SMatrix<f64, R, C>;

/// `UserMethodRrule` for a static matrix's element method: `$recv` the receiver as held, `$rr`
/// its rdata, `$body` the rule (`|recv, args| -> (output, pullback)`).
macro_rules! s_element_rule {
    ($name:literal, $marker:ident, $recv:ty, [$($I:ident)?], ($($arg:ty),* $(,)?), $out:ty, $rr:ty, ($($ret:ty),* $(,)?),
     |$r:ident, $a:pat_param| $body:block) => {
        impl<const R: usize, const C: usize $(, $I: Primal + Copy + 'static)?>
            UserMethodRrule<{ method_key($name) }, ElementKey<S<R, C>, s_element_rule!(@i $($I)?)>>
            for $marker<S<R, C>>
        where
            S<R, C>: $(ElementAt<$I> +)? ElementArray<Elem = f64>
                + Primal<FData = NoFData, RData = S<R, C>>,
        {
            type Recv<'a> = $recv;
            type Args<'b> = ($($arg,)*);
            type Out = $out;
            type RecvRData = $rr;
            type Rets = ($($ret,)*);
            #[inline]
            #[allow(clippy::type_complexity)]
            fn method_rrule<'a, 'b>(
                self,
                $r: &mut Self::Recv<'a>,
                $a: Self::Args<'b>,
            ) -> (
                CoDual<$out, <$out as Primal>::FData>,
                impl FnOnce(<$out as Primal>::RData, $rr) -> ($($ret,)*) + use<R, C $(, $I)?>,
            ) $body
        }
    };
    (@i) => { () };
    (@i $I:ident) => { $I };
}

// Reads.
s_element_rule!("__element", ByValue, Out<R, C>, [I], (CoDual<I, I::FData>), f64, S<R, C>,
    (S<R, C>, I::RData), |recv, (i,)| {
    let i = i.primal;
    (CoDual::new(recv.primal.at(i), NoFData), move |y_bar, ra| (plus_at(ra, i, y_bar), i.zero_rdata()))
});
s_element_rule!(
    "__element",
    ByRef,
    Ref<'a, R, C>,
    [I],
    (CoDual<I, I::FData>),
    f64,
    NoRData,
    (NoRData, I::RData),
    |recv, (i,)| {
        let (i, shadow) = (i.primal, recv.fdata.clone());
        (CoDual::new(recv.primal.at(i), NoFData), move |y_bar, _| {
            shadow.add(plus_at(S::zeros(), i, y_bar));
            (NoRData, i.zero_rdata())
        })
    }
);
s_element_rule!("__element", ByHandle, Handle<R, C>, [I], (CoDual<I, I::FData>), f64, NoRData,
    (NoRData, I::RData), |recv, (i,)| {
    let (i, shadow) = (i.primal, recv.fdata.clone());
    (CoDual::new(recv.primal.get().at(i), NoFData), move |y_bar, _| {
        shadow.add(plus_at(S::zeros(), i, y_bar));
        (NoRData, i.zero_rdata())
    })
});

// Writes: the element's cotangent moves from the matrix's to the value's; behind `&mut` the old
// value is put back.
s_element_rule!("__set_element", ByValue, Out<R, C>, [I], (CoDual<I, I::FData>, CoDual<f64, NoFData>),
    (), S<R, C>, (S<R, C>, I::RData, f64), |recv, (i, x)| {
    let i = i.primal;
    *recv.primal.at_mut(i) = x.primal;
    (CoDual::new((), NoFData), move |_, ra| {
        let (v, ra) = take_at(ra, i);
        (ra, i.zero_rdata(), v)
    })
});
s_element_rule!("__set_element", ByHandle, Handle<R, C>, [I], (CoDual<I, I::FData>, CoDual<f64, NoFData>),
    (), NoRData, (NoRData, I::RData, f64), |recv, (i, x)| {
    let i = i.primal;
    let old = recv.primal.get();
    let mut new = old;
    *new.at_mut(i) = x.primal;
    recv.primal.set(new);
    let (primal, shadow) = (recv.primal.clone(), recv.fdata.clone());
    (CoDual::new((), NoFData), move |_, _| {
        primal.set(old);
        let (v, rest) = take_at(shadow.get(), i);
        shadow.set(rest);
        (NoRData, i.zero_rdata(), v)
    })
});

// `len()`: no derivative.
s_element_rule!("__matrix_len", ByValue, Out<R, C>, [], (), usize, S<R, C>, (S<R, C>,), |_recv, ()| {
    (CoDual::new(R * C, NoFData), |_, ra| (ra,))
});
s_element_rule!(
    "__matrix_len",
    ByRef,
    Ref<'a, R, C>,
    [],
    (),
    usize,
    NoRData,
    (NoRData,),
    |_recv, ()| { (CoDual::new(R * C, NoFData), |_, _| (NoRData,)) }
);
s_element_rule!("__matrix_len", ByHandle, Handle<R, C>, [], (), usize, NoRData, (NoRData,), |_recv, ()| {
    (CoDual::new(R * C, NoFData), |_, _| (NoRData,))
});

// `clone()`: a copy, its cotangent back to the receiver.
s_element_rule!("__matrix_clone", ByValue, Out<R, C>, [], (), S<R, C>, S<R, C>, (S<R, C>,), |recv, ()| {
    (CoDual::new(recv.primal, NoFData), |y_bar: S<R, C>, ra: S<R, C>| (ra + y_bar,))
});
s_element_rule!("__matrix_clone", ByRef, Ref<'a, R, C>, [], (), S<R, C>, NoRData, (NoRData,), |recv, ()| {
    let shadow = recv.fdata.clone();
    (CoDual::new(*recv.primal, NoFData), move |y_bar, _| {
        shadow.add(y_bar);
        (NoRData,)
    })
});
s_element_rule!("__matrix_clone", ByHandle, Handle<R, C>, [], (), S<R, C>, NoRData, (NoRData,), |recv, ()| {
    let shadow = recv.fdata.clone();
    (CoDual::new(recv.primal.get(), NoFData), move |y_bar, _| {
        shadow.add(y_bar);
        (NoRData,)
    })
});
