//! nalgebra's statically sized matrices as primal types (feature `nalgebra`, issue 15):
//! `SMatrix<T, R, C>` with `T` = `f64` or `f32` ([`MatScalar`]), hence `SVector<T, N>`
//! (`SMatrix<T, N, 1>`), `Matrix3<T>`, `Vector3<T>`, `RowSVector<T, N>`, ...
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
//! rule is one of nalgebra's own operations on the whole matrix, generic in the element type.
//! The `Primal` methods that take or give an `f64` (`perturb`, `inner`, `scale`, `approx_eq`,
//! `random_tangent`) convert with [`Float::from_f64`] / [`Float::to_f64`], and
//! `inner_difference` is computed in `f64` (an `f32` difference of nearby values loses digits).

// Rule signatures spell out the rule interface.
#![allow(clippy::type_complexity)]

use super::MatScalar;
use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::rng::TestRng;
use crate::shared::SharedCell;
use crate::tangent::{FromHandle, Primal, TangentSpace, ZeroRData, close};
use nalgebra::SMatrix;

impl<T: MatScalar, const R: usize, const C: usize> TangentSpace for SMatrix<T, R, C> {
    #[inline]
    fn increment(&mut self, other: &Self) {
        *self += other;
    }
    #[inline]
    fn inner(&self, other: &Self) -> f64 {
        Float::to_f64(self.dot(other))
    }
    #[inline]
    fn scale(&mut self, a: f64) {
        *self *= <T as Float>::from_f64(a);
    }
    fn settle(&mut self) {
        self.add_scalar_mut(<T as Float>::ZERO);
    }
}

impl<T: MatScalar, const R: usize, const C: usize> ZeroRData for SMatrix<T, R, C> {
    #[inline]
    fn zero() -> Self {
        Self::zeros()
    }
}

impl<T: MatScalar, const R: usize, const C: usize> crate::elements::ElementArray
    for SMatrix<T, R, C>
{
    type Elem = T;
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T: MatScalar, const R: usize, const C: usize> crate::elements::ElementAt<usize>
    for SMatrix<T, R, C>
{
    #[inline(always)]
    fn at(&self, i: usize) -> T {
        self[i]
    }
    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut T {
        &mut self[i]
    }
}

impl<T: MatScalar, const R: usize, const C: usize> crate::elements::ElementAt<(usize, usize)>
    for SMatrix<T, R, C>
{
    #[inline(always)]
    fn at(&self, ij: (usize, usize)) -> T {
        self[ij]
    }
    #[inline(always)]
    fn at_mut(&mut self, ij: (usize, usize)) -> &mut T {
        &mut self[ij]
    }
}

impl<T: MatScalar, const R: usize, const C: usize> Primal for SMatrix<T, R, C> {
    type Tangent = Self;
    type TangentRef = Self;
    type FData = NoFData;
    type RData = Self;
    type Shadow = SharedCell<Self>;
    type Handle = SharedCell<Self>;

    crate::tangent::value_identified_methods!(Self::zeros());
    fn random_tangent(&self, rng: &mut TestRng) -> Self {
        Self::from_fn(|_, _| <T as Float>::from_f64(rng.normal()))
    }
    fn perturb(&mut self, tangent: &Self, h: f64) {
        *self += tangent * <T as Float>::from_f64(h);
    }
    fn inner_difference(tangent: &Self, a: &Self, b: &Self) -> f64 {
        // In `f64`: an `f32` difference of nearby values would lose its digits.
        tangent
            .iter()
            .zip(a.iter().zip(b.iter()))
            .map(|(t, (x, y))| Float::to_f64(*t) * (Float::to_f64(*x) - Float::to_f64(*y)))
            .sum()
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.iter()
            .zip(other.iter())
            .all(|(a, b)| close(Float::to_f64(*a), Float::to_f64(*b), rtol, atol))
    }
}

impl<T: MatScalar, const R: usize, const C: usize> FromHandle for SMatrix<T, R, C> {
    #[inline]
    fn from_handle(handle: &SharedCell<Self>) -> Self {
        handle.get()
    }
}

/// A static matrix behind `&` with its shadow, as reverse rules take it.
type Ref<'a, T, const R: usize, const C: usize> =
    CoDual<&'a SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>;
/// A static matrix result of a reverse rule: value-identified, no fdata.
type Out<T, const R: usize, const C: usize> = CoDual<SMatrix<T, R, C>, NoFData>;
/// A static matrix behind `&` with its tangent, as forward rules take it.
type FRef<'a, T, const R: usize, const C: usize> = Dual<&'a SMatrix<T, R, C>, &'a SMatrix<T, R, C>>;
/// A static matrix forward-rule result.
type FOut<T, const R: usize, const C: usize> = Dual<SMatrix<T, R, C>, SMatrix<T, R, C>>;

// ---------------------------------------------------------------------------------------------
// Reductions.

/// Forward rule of `a.dot(&b)`.
pub fn sdot_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    b: FRef<'_, T, R, C>,
) -> Dual<T, T> {
    Dual::new(a.primal.dot(b.primal), a.tangent.dot(b.primal) + a.primal.dot(b.tangent))
}

/// Reverse rule of `a.dot(&b)`: `ā += ȳ b`, `b̄ += ȳ a`.
pub fn sdot_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    b: Ref<'_, T, R, C>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, NoRData) + use<T, R, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa.dot(&pb), NoFData), move |y_bar: T| {
        da.add(pb * y_bar);
        db.add(pa * y_bar);
        (NoRData, NoRData)
    })
}

/// Forward rule of `a.norm_squared()`.
pub fn snorm_squared_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
) -> Dual<T, T> {
    Dual::new(a.primal.norm_squared(), <T as Float>::TWO * a.primal.dot(a.tangent))
}

/// Reverse rule of `a.norm_squared()`: `ā += 2ȳ a`.
pub fn snorm_squared_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T, R, C>) {
    let (pa, da) = (*a.primal, a.fdata);
    (CoDual::new(pa.norm_squared(), NoFData), move |y_bar: T| {
        da.add(pa * (<T as Float>::TWO * y_bar));
        (NoRData,)
    })
}

/// Forward rule of `a.norm()`.
pub fn snorm_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
) -> Dual<T, T> {
    let y = a.primal.norm();
    Dual::new(y, a.primal.dot(a.tangent) / y)
}

/// Reverse rule of `a.norm()`: `ā += (ȳ / |a|) a`.
pub fn snorm_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T, R, C>) {
    let (pa, da) = (*a.primal, a.fdata);
    let y = pa.norm();
    (CoDual::new(y, NoFData), move |y_bar: T| {
        da.add(pa * (y_bar / y));
        (NoRData,)
    })
}

/// Forward rule of `a.sum()`.
pub fn ssum_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
) -> Dual<T, T> {
    Dual::new(a.primal.sum(), a.tangent.sum())
}

/// Reverse rule of `a.sum()`: `ȳ` added to every entry of `ā`.
pub fn ssum_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T, R, C>) {
    let da = a.fdata;
    (CoDual::new(a.primal.sum(), NoFData), move |y_bar: T| {
        da.add(SMatrix::repeat(y_bar));
        (NoRData,)
    })
}

// ---------------------------------------------------------------------------------------------
// Transpose, element-wise operations, products.

/// Forward rule of `a.transpose()`.
pub fn stranspose_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
) -> FOut<T, C, R> {
    Dual::new(a.primal.transpose(), a.tangent.transpose())
}

/// Reverse rule of `a.transpose()`: `ā += ȳᵀ`.
pub fn stranspose_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
) -> (Out<T, C, R>, impl FnOnce(SMatrix<T, C, R>) -> (NoRData,) + use<T, R, C>) {
    let da = a.fdata;
    (CoDual::new(a.primal.transpose(), NoFData), move |g: SMatrix<T, C, R>| {
        da.add(g.transpose());
        (NoRData,)
    })
}

/// Forward rule of `a + b`.
pub fn sadd_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    b: FRef<'_, T, R, C>,
) -> FOut<T, R, C> {
    Dual::new(a.primal + b.primal, a.tangent + b.tangent)
}

/// Reverse rule of `a + b`: `ā += ȳ`, `b̄ += ȳ`.
pub fn sadd_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    b: Ref<'_, T, R, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, NoRData) + use<T, R, C>) {
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(a.primal + b.primal, NoFData), move |g: SMatrix<T, R, C>| {
        da.add(g);
        db.add(g);
        (NoRData, NoRData)
    })
}

/// Forward rule of `a - b`.
pub fn ssub_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    b: FRef<'_, T, R, C>,
) -> FOut<T, R, C> {
    Dual::new(a.primal - b.primal, a.tangent - b.tangent)
}

/// Reverse rule of `a - b`: `ā += ȳ`, `b̄ -= ȳ`.
pub fn ssub_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    b: Ref<'_, T, R, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, NoRData) + use<T, R, C>) {
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(a.primal - b.primal, NoFData), move |g: SMatrix<T, R, C>| {
        da.add(g);
        db.add(-g);
        (NoRData, NoRData)
    })
}

/// Forward rule of `-a`.
pub fn sneg_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
) -> FOut<T, R, C> {
    Dual::new(-a.primal, -a.tangent)
}

/// Reverse rule of `-a`: `ā -= ȳ`.
pub fn sneg_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData,) + use<T, R, C>) {
    let da = a.fdata;
    (CoDual::new(-a.primal, NoFData), move |g: SMatrix<T, R, C>| {
        da.add(-g);
        (NoRData,)
    })
}

/// Forward rule of `a * s` (and `s * a`) for a scalar `s`.
pub fn sscale_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    s: Dual<T, T>,
) -> FOut<T, R, C> {
    Dual::new(a.primal * s.primal, a.tangent * s.primal + a.primal * s.tangent)
}

/// Reverse rule of `a * s`: `ā += s ȳ`, `s̄ = <a, ȳ>`.
pub fn sscale_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    s: CoDual<T, NoFData>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, T) + use<T, R, C>) {
    let (pa, da, s) = (*a.primal, a.fdata, s.primal);
    (CoDual::new(pa * s, NoFData), move |g: SMatrix<T, R, C>| {
        da.add(g * s);
        (NoRData, pa.dot(&g))
    })
}

/// Forward rule of `a.component_mul(&b)`.
pub fn scomponent_mul_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    b: FRef<'_, T, R, C>,
) -> FOut<T, R, C> {
    Dual::new(
        a.primal.component_mul(b.primal),
        a.tangent.component_mul(b.primal) + a.primal.component_mul(b.tangent),
    )
}

/// Reverse rule of `a.component_mul(&b)`: `ā += ȳ ∘ b`, `b̄ += ȳ ∘ a`.
pub fn scomponent_mul_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    b: Ref<'_, T, R, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, NoRData) + use<T, R, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa.component_mul(&pb), NoFData), move |g: SMatrix<T, R, C>| {
        da.add(g.component_mul(&pb));
        db.add(g.component_mul(&pa));
        (NoRData, NoRData)
    })
}

/// `a × b` of two vectors of three elements (a column or a row), elementwise as nalgebra's
/// `cross`.
///
/// # Panics
/// If the vectors do not have three elements (nalgebra refuses those at compile time).
fn cross3<T: MatScalar, const R: usize, const C: usize>(
    a: &SMatrix<T, R, C>,
    b: &SMatrix<T, R, C>,
) -> SMatrix<T, R, C> {
    assert!(R * C == 3, "mooncake: the cross product is of vectors of three elements");
    let mut out = SMatrix::<T, R, C>::zeros();
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
    out
}

/// Forward rule of `a.cross(&b)`: `da × b + a × db`.
pub fn scross_frule<T: MatScalar, const R: usize, const C: usize>(
    a: FRef<'_, T, R, C>,
    b: FRef<'_, T, R, C>,
) -> FOut<T, R, C> {
    Dual::new(cross3(a.primal, b.primal), cross3(a.tangent, b.primal) + cross3(a.primal, b.tangent))
}

/// Reverse rule of `a.cross(&b)`: `ā += b × ȳ`, `b̄ += ȳ × a`.
pub fn scross_rrule<T: MatScalar, const R: usize, const C: usize>(
    a: Ref<'_, T, R, C>,
    b: Ref<'_, T, R, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, NoRData) + use<T, R, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(cross3(&pa, &pb), NoFData), move |g: SMatrix<T, R, C>| {
        da.add(cross3(&pb, &g));
        db.add(cross3(&g, &pa));
        (NoRData, NoRData)
    })
}

/// Forward rule of the product `a * b` (`R x K` times `K x C`; matrix-vector when `C = 1`).
pub fn smul_frule<T: MatScalar, const R: usize, const K: usize, const C: usize>(
    a: FRef<'_, T, R, K>,
    b: FRef<'_, T, K, C>,
) -> FOut<T, R, C> {
    Dual::new(a.primal * b.primal, a.tangent * b.primal + a.primal * b.tangent)
}

/// Reverse rule of the product `a * b`: `ā += ȳ bᵀ`, `b̄ += aᵀ ȳ`.
pub fn smul_rrule<T: MatScalar, const R: usize, const K: usize, const C: usize>(
    a: Ref<'_, T, R, K>,
    b: Ref<'_, T, K, C>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData, NoRData) + use<T, R, K, C>) {
    let (pa, pb) = (*a.primal, *b.primal);
    let (da, db) = (a.fdata, b.fdata);
    (CoDual::new(pa * pb, NoFData), move |g: SMatrix<T, R, C>| {
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
pub fn sindex_frule<T: MatScalar, const R: usize, const C: usize>(
    v: FRef<'_, T, R, C>,
    i: Dual<usize, NoTangent>,
) -> Dual<T, T> {
    Dual::new(v.primal[i.primal], v.tangent[i.primal])
}

/// Reverse rule of the read `v[i]`: `v̄[i] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn sindex_rrule<T: MatScalar, const R: usize, const C: usize>(
    v: Ref<'_, T, R, C>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, NoRData) + use<T, R, C>) {
    let i = i.primal;
    let dv = v.fdata;
    (CoDual::new(v.primal[i], NoFData), move |y_bar: T| {
        let mut g = SMatrix::<T, R, C>::zeros();
        g[i] = y_bar;
        dv.add(g);
        (NoRData, NoRData)
    })
}

/// Forward rule of the read `m[(i, j)]`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn sindex2_frule<T: MatScalar, const R: usize, const C: usize>(
    m: FRef<'_, T, R, C>,
    ij: Dual<(usize, usize), (NoTangent, NoTangent)>,
) -> Dual<T, T> {
    Dual::new(m.primal[ij.primal], m.tangent[ij.primal])
}

/// Reverse rule of the read `m[(i, j)]`: `m̄[(i, j)] += ȳ`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn sindex2_rrule<T: MatScalar, const R: usize, const C: usize>(
    m: Ref<'_, T, R, C>,
    ij: CoDual<(usize, usize), (NoFData, NoFData)>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, (NoRData, NoRData)) + use<T, R, C>) {
    let ij = ij.primal;
    let dm = m.fdata;
    (CoDual::new(m.primal[ij], NoFData), move |y_bar: T| {
        let mut g = SMatrix::<T, R, C>::zeros();
        g[ij] = y_bar;
        dm.add(g);
        (NoRData, (NoRData, NoRData))
    })
}

/// Forward rule of `SMatrix::from_row_slice(s)`.
///
/// # Panics
/// If `s` is shorter than `R * C`, as `from_row_slice` does.
pub fn sfrom_row_slice_frule<T: MatScalar, const R: usize, const C: usize>(
    s: Dual<&[T], &[T]>,
) -> FOut<T, R, C> {
    Dual::new(SMatrix::from_row_slice(s.primal), SMatrix::from_row_slice(s.tangent))
}

/// Reverse rule of `SMatrix::from_row_slice(s)`: `s̄[C i + j] += ȳ[(i, j)]`.
///
/// # Panics
/// If `s` is shorter than `R * C`, as `from_row_slice` does.
pub fn sfrom_row_slice_rrule<T: MatScalar, const R: usize, const C: usize>(
    s: CoDual<&[T], crate::shared::SharedVec<T>>,
) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (NoRData,) + use<T, R, C>) {
    let ds = s.fdata;
    (CoDual::new(SMatrix::from_row_slice(s.primal), NoFData), move |g: SMatrix<T, R, C>| {
        ds.with_mut(|d| {
            // `g` read row by row: the entries of `gᵀ`, column-major (one `axpy`).
            let gt = g.transpose();
            let g = nalgebra::DVectorView::from_slice(gt.as_slice(), R * C);
            nalgebra::DVectorViewMut::from_slice(&mut d[..R * C], R * C).axpy(
                <T as Float>::ONE,
                &g,
                <T as Float>::ONE,
            );
        });
        (NoRData,)
    })
}

/// `Vector2::new(a, b)` and its siblings of three and four entries, as functions that derived
/// code calls for `Vector2::new(..)`, `Vector3::new(..)`, `Vector4::new(..)` and `SVector::new(..)`
/// (with their rules `svectorN_frule` / `svectorN_rrule`: each entry's tangent, and each entry's
/// gradient out of the vector's cotangent).
macro_rules! svector_new {
    ($($name:ident $frule:ident $rrule:ident $n:literal: $($x:ident)*;)*) => {$(
        #[doc = concat!("`SVector::<T, ", stringify!($n), ">::new(..)` as a function (see the rules beside it).")]
        #[inline]
        pub fn $name<T: MatScalar>($($x: T),*) -> SMatrix<T, $n, 1> {
            SMatrix::<T, $n, 1>::from_column_slice(&[$($x),*])
        }
        #[doc = concat!("Forward rule of [`", stringify!($name), "`].")]
        #[inline]
        pub fn $frule<T: MatScalar>($($x: Dual<T, T>),*) -> FOut<T, $n, 1> {
            Dual::new(
                SMatrix::<T, $n, 1>::from_column_slice(&[$($x.primal),*]),
                SMatrix::<T, $n, 1>::from_column_slice(&[$($x.tangent),*]),
            )
        }
        #[doc = concat!("Reverse rule of [`", stringify!($name), "`]: each entry's gradient is the cotangent's entry.")]
        #[inline]
        #[allow(clippy::type_complexity)]
        pub fn $rrule<T: MatScalar>(
            $($x: CoDual<T, NoFData>),*
        ) -> (Out<T, $n, 1>, impl FnOnce(SMatrix<T, $n, 1>) -> ($(svector_new!(@t $x T),)*) + use<T>) {
            let y = SMatrix::<T, $n, 1>::from_column_slice(&[$($x.primal),*]);
            (CoDual::new(y, NoFData), |g: SMatrix<T, $n, 1>| {
                let mut k = 0usize;
                ($(svector_new!(@take g k $x),)*)
            })
        }
    )*};
    (@t $x:ident $T:ident) => { $T };
    (@take $g:ident $k:ident $x:ident) => {{
        let v = $g[$k];
        $k += 1;
        let _ = $k;
        v
    }};
}

svector_new! {
    svector2 svector2_frule svector2_rrule 2: a b;
    svector3 svector3_frule svector3_rrule 3: a b c;
    svector4 svector4_frule svector4_rrule 4: a b c d;
}

/// The rules of nalgebra's static constructors by their types' names (`Vector3::new(a, b, c)`,
/// `Matrix3::new(..)`), as associated functions of an extension trait per shape (in the
/// prelude): derived code calls `Vector3::new_rrule(..)` as it calls the rule of a user type's
/// `new`, so that a user's own type named `Vector3` keeps its own rules (an inherent function
/// comes before a trait's).
macro_rules! static_constructors {
    ($($tr:ident $r:literal $c:literal => $frule:ident $rrule:ident: $($x:ident)*;)*) => {$(
        #[doc = concat!("The rules of `new` of nalgebra's `SMatrix<T, ", stringify!($r), ", ", stringify!($c), ">` by its type's name (see the module).")]
        pub trait $tr<T>: Sized {
            /// Forward rule of `new`.
            #[allow(clippy::too_many_arguments)]
            fn new_frule($($x: Dual<T, T>),*) -> Dual<Self, Self>;
            /// Reverse rule of `new`.
            #[allow(clippy::type_complexity, clippy::too_many_arguments)]
            fn new_rrule($($x: CoDual<T, NoFData>),*)
                -> (CoDual<Self, NoFData>, impl FnOnce(Self) -> ($(svector_new!(@t $x T),)*) + use<Self, T>);
        }
        impl<T: MatScalar> $tr<T> for SMatrix<T, $r, $c> {
            #[inline]
            fn new_frule($($x: Dual<T, T>),*) -> Dual<Self, Self> {
                $frule($($x),*)
            }
            #[inline]
            fn new_rrule($($x: CoDual<T, NoFData>),*)
                -> (CoDual<Self, NoFData>, impl FnOnce(Self) -> ($(svector_new!(@t $x T),)*) + use<T>) {
                $rrule($($x),*)
            }
        }
    )*};
}

static_constructors! {
    NewVector2 2 1 => svector2_frule svector2_rrule: a b;
    NewVector3 3 1 => svector3_frule svector3_rrule: a b c;
    NewVector4 4 1 => svector4_frule svector4_rrule: a b c d;
    NewMatrix2 2 2 => smatrix2_frule smatrix2_rrule: a b c d;
    NewMatrix3 3 3 => smatrix3_frule smatrix3_rrule: a b c d e f g h i;
}

/// `Matrix2::new(..)` and `Matrix3::new(..)` (entries row by row, as nalgebra takes them), as
/// functions that derived code calls (with their rules `smatrixN_frule` / `smatrixN_rrule`).
macro_rules! smatrix_new {
    ($($name:ident $frule:ident $rrule:ident $n:literal: $($x:ident)*;)*) => {$(
        #[doc = concat!("`Matrix", stringify!($n), "::new(..)` as a function (see the rules beside it).")]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: MatScalar>($($x: T),*) -> SMatrix<T, $n, $n> {
            SMatrix::<T, $n, $n>::from_row_slice(&[$($x),*])
        }
        #[doc = concat!("Forward rule of [`", stringify!($name), "`].")]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub fn $frule<T: MatScalar>($($x: Dual<T, T>),*) -> FOut<T, $n, $n> {
            Dual::new(
                SMatrix::<T, $n, $n>::from_row_slice(&[$($x.primal),*]),
                SMatrix::<T, $n, $n>::from_row_slice(&[$($x.tangent),*]),
            )
        }
        #[doc = concat!("Reverse rule of [`", stringify!($name), "`]: each entry's gradient is the cotangent's entry.")]
        #[inline]
        #[allow(clippy::type_complexity, clippy::too_many_arguments)]
        pub fn $rrule<T: MatScalar>(
            $($x: CoDual<T, NoFData>),*
        ) -> (Out<T, $n, $n>, impl FnOnce(SMatrix<T, $n, $n>) -> ($(svector_new!(@t $x T),)*) + use<T>) {
            let y = SMatrix::<T, $n, $n>::from_row_slice(&[$($x.primal),*]);
            (CoDual::new(y, NoFData), |g: SMatrix<T, $n, $n>| {
                // Row by row, as the arguments.
                let g = g.transpose();
                let mut k = 0usize;
                ($(svector_new!(@take g k $x),)*)
            })
        }
    )*};
}

smatrix_new! {
    smatrix2 smatrix2_frule smatrix2_rrule 2: a b c d;
    smatrix3 smatrix3_frule smatrix3_rrule 3: a b c d e f g h i;
}

/// Forward rule of `SMatrix::zeros()`.
pub fn szeros_frule<T: MatScalar, const R: usize, const C: usize>() -> FOut<T, R, C> {
    Dual::new(SMatrix::zeros(), SMatrix::zeros())
}

/// Reverse rule of `SMatrix::zeros()`: nothing flows back.
pub fn szeros_rrule<T: MatScalar, const R: usize, const C: usize>()
-> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) + use<T, R, C>) {
    (CoDual::new(SMatrix::zeros(), NoFData), |_: SMatrix<T, R, C>| ())
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

impl<T: MatScalar, const R: usize, const C: usize> HeldStatic<SMatrix<T, R, C>>
    for SMatrix<T, R, C>
{
    #[inline(always)]
    fn get(&self) -> &Self {
        self
    }
}
impl<T: MatScalar, const R: usize, const C: usize> HeldStatic<SMatrix<T, R, C>>
    for &SMatrix<T, R, C>
{
    #[inline(always)]
    fn get(&self) -> &SMatrix<T, R, C> {
        self
    }
}
impl<T: MatScalar, const R: usize, const C: usize> HeldStatic<SMatrix<T, R, C>>
    for &mut SMatrix<T, R, C>
{
    #[inline(always)]
    fn get(&self) -> &SMatrix<T, R, C> {
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
        impl<'b, T: MatScalar, const R: usize, const C: usize, P, U> MethodFrule<{ method_key($name) }, StaticKey<SMatrix<T, R, C>>>
            for &'b mut Dual<P, U>
        where
            P: HeldStatic<SMatrix<T, R, C>>,
            U: HeldStatic<SMatrix<T, R, C>>,
        {
            type Receiver = FRef<'b, T, R, C>;
            type Rule = fn(FRef<'b, T, R, C>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (fview(self), $rule::<T, R, C>)
            }
        }
    )*};
}

s_unary_methods! {
    "norm_squared" => snorm_squared_frule -> T,
    "norm" => snorm_frule -> T,
    "sum" => ssum_frule -> T,
    "transpose" => stranspose_frule -> SMatrix<T, C, R>,
}

macro_rules! s_binary_methods {
    ($($name:literal => $rule:ident -> $out:ty),* $(,)?) => {$(
        #[diagnostic::do_not_recommend]
        impl<'b, T: MatScalar, const R: usize, const C: usize, P, U> MethodFrule<{ method_key($name) }, StaticKey<SMatrix<T, R, C>>>
            for &'b mut Dual<P, U>
        where
            P: HeldStatic<SMatrix<T, R, C>>,
            U: HeldStatic<SMatrix<T, R, C>>,
        {
            type Receiver = FRef<'b, T, R, C>;
            type Rule = for<'s> fn(FRef<'b, T, R, C>, FRef<'s, T, R, C>) -> Dual<$out, $out>;
            #[inline(always)]
            fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                (fview(self), $rule::<T, R, C>)
            }
        }
    )*};
}

s_binary_methods! {
    "dot" => sdot_frule -> T,
    "component_mul" => scomponent_mul_frule -> SMatrix<T, R, C>,
    "cross" => scross_frule -> SMatrix<T, R, C>,
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

s_binop!(Add add sadd_frule [T: MatScalar, const R: usize, const C: usize] SMatrix<T, R, C>, SMatrix<T, R, C> => SMatrix<T, R, C>);
s_binop!(Sub sub ssub_frule [T: MatScalar, const R: usize, const C: usize] SMatrix<T, R, C>, SMatrix<T, R, C> => SMatrix<T, R, C>);
s_binop!(Mul mul smul_frule [T: MatScalar, const R: usize, const K: usize, const C: usize] SMatrix<T, R, K>, SMatrix<T, K, C> => SMatrix<T, R, C>);

impl<T: MatScalar, const R: usize, const C: usize> std::ops::Neg
    for Dual<SMatrix<T, R, C>, SMatrix<T, R, C>>
{
    type Output = FOut<T, R, C>;
    #[inline]
    fn neg(self) -> FOut<T, R, C> {
        sneg_frule(fview(&self))
    }
}
impl<T: MatScalar, const R: usize, const C: usize> std::ops::Neg
    for Dual<&SMatrix<T, R, C>, &SMatrix<T, R, C>>
{
    type Output = FOut<T, R, C>;
    #[inline]
    fn neg(self) -> FOut<T, R, C> {
        sneg_frule(self)
    }
}

macro_rules! s_scale {
    ($($A:ty; $($l:lifetime),*);*) => {$(
        impl<$($l,)* T: MatScalar, const R: usize, const C: usize> std::ops::Mul<Dual<T, T>> for Dual<$A, $A> {
            type Output = FOut<T, R, C>;
            #[inline]
            fn mul(self, s: Dual<T, T>) -> FOut<T, R, C> {
                sscale_frule(fview(&self), s)
            }
        }
        impl<$($l,)* T: MatScalar, const R: usize, const C: usize> std::ops::Mul<Dual<$A, $A>> for Dual<T, T> {
            type Output = FOut<T, R, C>;
            #[inline]
            fn mul(self, a: Dual<$A, $A>) -> FOut<T, R, C> {
                sscale_frule(fview(&a), self)
            }
        }
    )*};
}

s_scale!(SMatrix<T, R, C>; ; &'a SMatrix<T, R, C>; 'a);

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

impl<T: MatScalar, const R: usize, const C: usize> StaticOperand<SMatrix<T, R, C>>
    for Out<T, R, C>
{
    type R = SMatrix<T, R, C>;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>) {
        (self.primal, SharedCell::new(SMatrix::zeros()))
    }
    #[inline(always)]
    fn back(shadow: SharedCell<SMatrix<T, R, C>>) -> SMatrix<T, R, C> {
        shadow.get()
    }
}

impl<T: MatScalar, const R: usize, const C: usize> StaticOperand<SMatrix<T, R, C>>
    for CoDual<SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>
{
    type R = NoRData;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>) {
        (self.primal, self.fdata.clone())
    }
    #[inline(always)]
    fn back(_: SharedCell<SMatrix<T, R, C>>) -> NoRData {
        NoRData
    }
}

impl<T: MatScalar, const R: usize, const C: usize> StaticOperand<SMatrix<T, R, C>>
    for Ref<'_, T, R, C>
{
    type R = NoRData;
    #[inline(always)]
    fn lend(&self) -> (SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>) {
        (*self.primal, self.fdata.clone())
    }
    #[inline(always)]
    fn back(_: SharedCell<SMatrix<T, R, C>>) -> NoRData {
        NoRData
    }
}

impl<T: MatScalar, const R: usize, const C: usize> Operand for Out<T, R, C> {
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        *self
    }
}

impl<T: MatScalar, const R: usize, const C: usize> Operand
    for CoDual<SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>
{
    type Owned = Self;
    #[inline(always)]
    fn operand(&self) -> Self {
        self.clone()
    }
}

impl<T: MatScalar, const R: usize, const C: usize> Operand for Ref<'_, T, R, C> {
    type Owned = CoDual<SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>;
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

s_rev_binop_all!(RevAdd add sadd_rrule [T: MatScalar, const R: usize, const C: usize] SMatrix<T, R, C>, SMatrix<T, R, C> => SMatrix<T, R, C>);
s_rev_binop_all!(RevSub sub ssub_rrule [T: MatScalar, const R: usize, const C: usize] SMatrix<T, R, C>, SMatrix<T, R, C> => SMatrix<T, R, C>);
s_rev_binop_all!(RevMul mul smul_rrule [T: MatScalar, const R: usize, const K: usize, const C: usize] SMatrix<T, R, K>, SMatrix<T, K, C> => SMatrix<T, R, C>);

macro_rules! s_rev_unary {
    ($($A:ty; $($l:lifetime),*);*) => {$(
        impl<$($l,)* T: MatScalar, const R: usize, const C: usize> RevNeg for $A {
            type Out = SMatrix<T, R, C>;
            type R = <$A as StaticOperand<SMatrix<T, R, C>>>::R;
            #[inline]
            fn neg(self) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (Self::R,)) {
                let (p, s) = self.lend();
                let (y, pb) = sneg_rrule(CoDual::new(&p, s.clone()));
                (y, move |g| {
                    let _ = pb(g);
                    (<$A as StaticOperand<SMatrix<T, R, C>>>::back(s),)
                })
            }
        }
        impl<$($l,)* T: MatScalar, const R: usize, const C: usize> RevMul<CoDual<T, NoFData>> for $A {
            type Out = SMatrix<T, R, C>;
            type RA = <$A as StaticOperand<SMatrix<T, R, C>>>::R;
            type RB = T;
            #[inline]
            fn mul(self, t: CoDual<T, NoFData>) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (Self::RA, T)) {
                let (p, s) = self.lend();
                let (y, pb) = sscale_rrule(CoDual::new(&p, s.clone()), t);
                (y, move |g| {
                    let (_, rt) = pb(g);
                    (<$A as StaticOperand<SMatrix<T, R, C>>>::back(s), rt)
                })
            }
        }
        impl<$($l,)* T: MatScalar, const R: usize, const C: usize> RevMul<$A> for CoDual<T, NoFData> {
            type Out = SMatrix<T, R, C>;
            type RA = T;
            type RB = <$A as StaticOperand<SMatrix<T, R, C>>>::R;
            #[inline]
            fn mul(self, a: $A) -> (Out<T, R, C>, impl FnOnce(SMatrix<T, R, C>) -> (T, Self::RB)) {
                let (p, s) = a.lend();
                let (y, pb) = sscale_rrule(CoDual::new(&p, s.clone()), self);
                (y, move |g| {
                    let (_, rt) = pb(g);
                    (rt, <$A as StaticOperand<SMatrix<T, R, C>>>::back(s))
                })
            }
        }
    )*};
}

s_rev_unary!(
    CoDual<SMatrix<T, R, C>, NoFData>; ;
    CoDual<SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>; ;
    CoDual<&'a SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>>; 'a
);

/// Reverse-mode methods: the receiver by value (`ByValue`, its gradient returned as rdata) or
/// behind `&` (`ByRef`); a matrix argument behind `&` (`a.dot(&b)`).
macro_rules! s_rev_methods {
    ($($name:literal => $rule:ident ($($arg:ident),*) -> $out:ty),* $(,)?) => {$(
        impl<'a, T: MatScalar, const R: usize, const C: usize> RecvMarker<{ method_key($name) }, StaticKey<SMatrix<T, R, C>>>
            for Ref<'a, T, R, C>
        {
            type Marker = ByRef<SMatrix<T, R, C>>;
        }
        impl<T: MatScalar, const R: usize, const C: usize> RecvMarker<{ method_key($name) }, StaticKey<SMatrix<T, R, C>>>
            for Out<T, R, C>
        {
            type Marker = ByValue<SMatrix<T, R, C>>;
        }
        s_rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByRef, Ref<'a, T, R, C>, NoRData);
        s_rev_methods!(@rule $name $rule ($($arg),*) -> $out: ByValue, Out<T, R, C>, SMatrix<T, R, C>);
    )*};
    (@rule $name:literal $rule:ident ($($arg:ident),*) -> $out:ty: $marker:ident, $recv:ty, $rr:ty) => {
        impl<T: MatScalar, const R: usize, const C: usize> UserMethodRrule<{ method_key($name) }, StaticKey<SMatrix<T, R, C>>>
            for $marker<SMatrix<T, R, C>>
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
                impl FnOnce(<$out as Primal>::RData, $rr) -> Self::Rets + use<T, R, C>,
            ) {
                let ($($arg,)*) = args;
                let (p, s) = StaticOperand::<SMatrix<T, R, C>>::lend(&*recv);
                let (y, pb) = $rule::<T, R, C>(CoDual::new(&p, s.clone()) $(, $arg)*);
                (y, move |y_bar, ra: $rr| {
                    let r = pb(y_bar);
                    let mut back = <$recv as StaticOperand<SMatrix<T, R, C>>>::back(s);
                    TangentSpace::increment(&mut back, &ra);
                    s_rev_methods!(@rets r back ($($arg),*))
                })
            }
        }
    };
    (@arg $arg:ident $l:lifetime) => { CoDual<&$l SMatrix<T, R, C>, SharedCell<SMatrix<T, R, C>>> };
    (@rdata $arg:ident) => { NoRData };
    (@rets $r:ident $back:ident ()) => { { let _ = $r; ($back,) } };
    (@rets $r:ident $back:ident ($a:ident)) => { { let _ = $r; ($back, NoRData) } };
}

s_rev_methods! {
    "norm_squared" => snorm_squared_rrule() -> T,
    "norm" => snorm_rrule() -> T,
    "sum" => ssum_rrule() -> T,
    "transpose" => stranspose_rrule() -> SMatrix<T, C, R>,
    "dot" => sdot_rrule(B) -> T,
    "component_mul" => scomponent_mul_rrule(B) -> SMatrix<T, R, C>,
    "cross" => scross_rrule(B) -> SMatrix<T, R, C>,
}

// ---------------------------------------------------------------------------------------------
// Elements in reverse mode (`crate::elements`): `v[i]`, `m[(i, j)]` read and written, `len()`,
// `clone()`, with the receiver by value (its gradient returned as rdata), behind `&` (its
// gradient added into its `SharedCell`) or behind `&mut` (through its handle, restored by the
// pullback).

use crate::elements::{ElementArray, ElementAt, ElementKey};
use crate::reverse::ByHandle;

type Handle<T, const R: usize, const C: usize> =
    CoDual<SharedCell<SMatrix<T, R, C>>, SharedCell<SMatrix<T, R, C>>>;

/// `g` with `y_bar` added at `i`.
#[inline]
fn plus_at<T: MatScalar, const R: usize, const C: usize, I>(
    mut g: SMatrix<T, R, C>,
    i: I,
    y_bar: T,
) -> SMatrix<T, R, C>
where
    SMatrix<T, R, C>: ElementAt<I> + ElementArray<Elem = T>,
{
    *g.at_mut(i) += y_bar;
    g
}

/// The element of `g` at `i`, and `g` with it zeroed.
#[inline]
fn take_at<T: MatScalar, const R: usize, const C: usize, I: Copy>(
    mut g: SMatrix<T, R, C>,
    i: I,
) -> (T, SMatrix<T, R, C>)
where
    SMatrix<T, R, C>: ElementAt<I> + ElementArray<Elem = T>,
{
    let v = std::mem::replace(g.at_mut(i), <T as Float>::ZERO);
    (v, g)
}

macro_rules! s_element_markers {
    ($($name:literal),*) => {$(
        impl<'a, T: MatScalar, const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<T, R, C>>> for Ref<'a, T, R, C>
        {
            type Marker = ByRef<SMatrix<T, R, C>>;
        }
        impl<T: MatScalar, const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<T, R, C>>> for Out<T, R, C>
        {
            type Marker = ByValue<SMatrix<T, R, C>>;
        }
        impl<T: MatScalar, const R: usize, const C: usize>
            RecvMarker<{ method_key($name) }, ElementKey<SMatrix<T, R, C>>> for Handle<T, R, C>
        {
            type Marker = ByHandle<SMatrix<T, R, C>>;
        }
    )*};
}

s_element_markers!("__element", "__set_element", "__matrix_len", "__matrix_clone");

type S<T, const R: usize, const C: usize> = SMatrix<T, R, C>;

/// `UserMethodRrule` for a static matrix's element method: `$recv` the receiver as held, `$rr`
/// its rdata, `$body` the rule (`|recv, args| -> (output, pullback)`).
macro_rules! s_element_rule {
    ($name:literal, $marker:ident, $recv:ty, [$($I:ident)?], ($($arg:ty),* $(,)?), $out:ty, $rr:ty, ($($ret:ty),* $(,)?),
     |$r:ident, $a:pat_param| $body:block) => {
        impl<T: MatScalar, const R: usize, const C: usize $(, $I: Primal + Copy + 'static)?>
            UserMethodRrule<{ method_key($name) }, ElementKey<S<T, R, C>, s_element_rule!(@i $($I)?)>>
            for $marker<S<T, R, C>>
        where
            S<T, R, C>: $(ElementAt<$I> +)? ElementArray<Elem = T>
                + Primal<FData = NoFData, RData = S<T, R, C>>,
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
                impl FnOnce(<$out as Primal>::RData, $rr) -> ($($ret,)*) + use<T, R, C $(, $I)?>,
            ) $body
        }
    };
    (@i) => { () };
    (@i $I:ident) => { $I };
}

// Reads.
s_element_rule!("__element", ByValue, Out<T, R, C>, [I], (CoDual<I, I::FData>), T, S<T, R, C>,
    (S<T, R, C>, I::RData), |recv, (i,)| {
    let i = i.primal;
    (CoDual::new(recv.primal.at(i), NoFData), move |y_bar, ra| (plus_at(ra, i, y_bar), i.zero_rdata()))
});
s_element_rule!(
    "__element",
    ByRef,
    Ref<'a, T, R, C>,
    [I],
    (CoDual<I, I::FData>),
    T,
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
s_element_rule!("__element", ByHandle, Handle<T, R, C>, [I], (CoDual<I, I::FData>), T, NoRData,
    (NoRData, I::RData), |recv, (i,)| {
    let (i, shadow) = (i.primal, recv.fdata.clone());
    (CoDual::new(recv.primal.get().at(i), NoFData), move |y_bar, _| {
        shadow.add(plus_at(S::zeros(), i, y_bar));
        (NoRData, i.zero_rdata())
    })
});

// Writes: the element's cotangent moves from the matrix's to the value's; behind `&mut` the old
// value is put back.
s_element_rule!("__set_element", ByValue, Out<T, R, C>, [I], (CoDual<I, I::FData>, CoDual<T, NoFData>),
    (), S<T, R, C>, (S<T, R, C>, I::RData, T), |recv, (i, x)| {
    let i = i.primal;
    *recv.primal.at_mut(i) = x.primal;
    (CoDual::new((), NoFData), move |_, ra| {
        let (v, ra) = take_at(ra, i);
        (ra, i.zero_rdata(), v)
    })
});
s_element_rule!("__set_element", ByHandle, Handle<T, R, C>, [I], (CoDual<I, I::FData>, CoDual<T, NoFData>),
    (), NoRData, (NoRData, I::RData, T), |recv, (i, x)| {
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
s_element_rule!("__matrix_len", ByValue, Out<T, R, C>, [], (), usize, S<T, R, C>, (S<T, R, C>,), |_recv, ()| {
    (CoDual::new(R * C, NoFData), |_, ra| (ra,))
});
s_element_rule!(
    "__matrix_len",
    ByRef,
    Ref<'a, T, R, C>,
    [],
    (),
    usize,
    NoRData,
    (NoRData,),
    |_recv, ()| { (CoDual::new(R * C, NoFData), |_, _| (NoRData,)) }
);
s_element_rule!("__matrix_len", ByHandle, Handle<T, R, C>, [], (), usize, NoRData, (NoRData,), |_recv, ()| {
    (CoDual::new(R * C, NoFData), |_, _| (NoRData,))
});

// `clone()`: a copy, its cotangent back to the receiver.
s_element_rule!("__matrix_clone", ByValue, Out<T, R, C>, [], (), S<T, R, C>, S<T, R, C>, (S<T, R, C>,), |recv, ()| {
    (CoDual::new(recv.primal, NoFData), |y_bar: S<T, R, C>, ra: S<T, R, C>| (ra + y_bar,))
});
s_element_rule!("__matrix_clone", ByRef, Ref<'a, T, R, C>, [], (), S<T, R, C>, NoRData, (NoRData,), |recv, ()| {
    let shadow = recv.fdata.clone();
    (CoDual::new(*recv.primal, NoFData), move |y_bar, _| {
        shadow.add(y_bar);
        (NoRData,)
    })
});
s_element_rule!("__matrix_clone", ByHandle, Handle<T, R, C>, [], (), S<T, R, C>, NoRData, (NoRData,), |recv, ()| {
    let shadow = recv.fdata.clone();
    (CoDual::new(recv.primal.get(), NoFData), move |y_bar, _| {
        shadow.add(y_bar);
        (NoRData,)
    })
});
