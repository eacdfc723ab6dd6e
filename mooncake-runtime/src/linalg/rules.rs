//! Rules of nalgebra's heap matrices, both modes side by side. Each computes its value and its
//! derivative with nalgebra's own kernels (`dot`, `gemv`, `gemm`, `ger`, `axpy`, `cmpy`, ...):
//! no rule loops over elements.
//!
//! Arguments come as the rules of buffers take them: matrices behind references
//! (`Dual<&M, &M>`, `CoDual<&M, SharedRef<M>>`), scalars and indices by value. A matrix result
//! has a fresh zero shadow, which the pullback reads. Pullbacks capture no borrow: they keep a
//! copy of the primal matrices they need (`+ use<..>` without lifetimes), as the buffer rules do.

// Rule signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use super::HeapMatrix;
use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::shared::{SharedRef, SharedVec};
use nalgebra::{DMatrix, DMatrixViewMut, DVector, DVectorViewMut, RowDVector};

/// A matrix result of a reverse rule with a fresh zero shadow, and a handle on that shadow for
/// the pullback.
fn fresh<M: HeapMatrix>(y: M) -> (CoDual<M, SharedRef<M>>, SharedRef<M>) {
    let s = SharedRef::new(y.zeros_like());
    (CoDual::new(y, s.clone()), s)
}

// ---------------------------------------------------------------------------------------------
// Reductions: `a.dot(&b)`, `a.norm_squared()`, `a.norm()`, `a.sum()`.

/// Forward rule of `a.dot(&b)`: `da·b + a·db`.
pub fn dot_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<f64, f64> {
    Dual::new(
        a.primal.dot_with(b.primal),
        a.tangent.dot_with(b.primal) + a.primal.dot_with(b.tangent),
    )
}

/// Reverse rule of `a.dot(&b)`: `ā += ȳ b`, `b̄ += ȳ a`.
pub fn dot_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<M>) {
    let y = a.primal.dot_with(b.primal);
    let (pa, pb) = (a.primal.clone(), b.primal.clone());
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |y_bar: f64| {
        da.accumulate(|d| d.add_scaled(y_bar, &pb));
        db.accumulate(|d| d.add_scaled(y_bar, &pa));
        (NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.norm_squared()`: `2 a·da`.
pub fn norm_squared_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<f64, f64> {
    Dual::new(a.primal.dot_with(a.primal), 2.0 * a.primal.dot_with(a.tangent))
}

/// Reverse rule of `a.norm_squared()`: `ā += 2ȳ a`.
pub fn norm_squared_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<M>) {
    let y = a.primal.dot_with(a.primal);
    let pa = a.primal.clone();
    let da = a.fdata;
    let pullback = move |y_bar: f64| {
        da.accumulate(|d| d.add_scaled(2.0 * y_bar, &pa));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.norm()` (Euclidean / Frobenius): `a·da / |a|`.
pub fn norm_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<f64, f64> {
    let y = a.primal.dot_with(a.primal).sqrt();
    Dual::new(y, a.primal.dot_with(a.tangent) / y)
}

/// Reverse rule of `a.norm()`: `ā += (ȳ / |a|) a`.
pub fn norm_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<M>) {
    let y = a.primal.dot_with(a.primal).sqrt();
    let pa = a.primal.clone();
    let da = a.fdata;
    let pullback = move |y_bar: f64| {
        da.accumulate(|d| d.add_scaled(y_bar / y, &pa));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.sum()`: `da.sum()`.
pub fn sum_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<f64, f64> {
    Dual::new(a.primal.total(), a.tangent.total())
}

/// Reverse rule of `a.sum()`: `ȳ` added to every entry of `ā`.
pub fn sum_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<M>) {
    let y = a.primal.total();
    let da = a.fdata;
    let pullback = move |y_bar: f64| {
        da.accumulate(|d| d.add_to_all(y_bar));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// `a.transpose()`.

/// Forward rule of `a.transpose()`.
pub fn transpose_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<M::Transposed, M::Transposed> {
    Dual::new(a.primal.transposed(), a.tangent.transposed())
}

/// Reverse rule of `a.transpose()`: `ā += ȳᵀ`.
pub fn transpose_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M::Transposed, SharedRef<M::Transposed>>, impl FnOnce(NoRData) -> (NoRData,) + use<M>)
{
    let (y, dy) = fresh(a.primal.transposed());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| d.add_scaled(1.0, &g.transposed())));
        (NoRData,)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Element-wise: `a + b`, `a - b`, `-a`, `a * s`, `a.component_mul(&b)`.

/// Forward rule of `a + b`.
pub fn add_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.clone();
    y.add_scaled(1.0, b.primal);
    let mut t = a.tangent.clone();
    t.add_scaled(1.0, b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a + b`: `ā += ȳ`, `b̄ += ȳ`.
pub fn add_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.clone();
    y.add_scaled(1.0, b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| d.add_scaled(1.0, g));
            db.accumulate(|d| d.add_scaled(1.0, g));
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a - b`.
pub fn sub_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.clone();
    y.add_scaled(-1.0, b.primal);
    let mut t = a.tangent.clone();
    t.add_scaled(-1.0, b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a - b`: `ā += ȳ`, `b̄ -= ȳ`.
pub fn sub_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.clone();
    y.add_scaled(-1.0, b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| d.add_scaled(1.0, g));
            db.accumulate(|d| d.add_scaled(-1.0, g));
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `-a`.
pub fn neg_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.zeros_like();
    y.add_scaled(-1.0, a.primal);
    let mut t = a.tangent.zeros_like();
    t.add_scaled(-1.0, a.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `-a`: `ā -= ȳ`.
pub fn neg_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData,) + use<M>) {
    let mut y = a.primal.zeros_like();
    y.add_scaled(-1.0, a.primal);
    let (y, dy) = fresh(y);
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| d.add_scaled(-1.0, g)));
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `a * s` (and `s * a`) for a scalar `s`: `da s + a ds`.
pub fn scale_frule<M: HeapMatrix>(a: Dual<&M, &M>, s: Dual<f64, f64>) -> Dual<M, M> {
    let mut y = a.primal.zeros_like();
    y.add_scaled(s.primal, a.primal);
    let mut t = a.primal.zeros_like();
    t.add_scaled(s.primal, a.tangent);
    t.add_scaled(s.tangent, a.primal);
    Dual::new(y, t)
}

/// Reverse rule of `a * s`: `ā += s ȳ`, `s̄ = <a, ȳ>`.
pub fn scale_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    s: CoDual<f64, NoFData>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, f64) + use<M>) {
    let mut y = a.primal.zeros_like();
    y.add_scaled(s.primal, a.primal);
    let (y, dy) = fresh(y);
    let pa = a.primal.clone();
    let (da, s) = (a.fdata, s.primal);
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.add_scaled(s, g));
            pa.dot_with(g)
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

/// Forward rule of `a.component_mul(&b)`: `da ∘ b + a ∘ db`.
pub fn component_mul_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.zeros_like();
    y.add_component_mul(1.0, a.primal, b.primal);
    let mut t = a.primal.zeros_like();
    t.add_component_mul(1.0, a.tangent, b.primal);
    t.add_component_mul(1.0, a.primal, b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a.component_mul(&b)`: `ā += ȳ ∘ b`, `b̄ += ȳ ∘ a`.
pub fn component_mul_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.zeros_like();
    y.add_component_mul(1.0, a.primal, b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    // Each copy only where the other side's gradient is wanted (`SharedRef::is_live`).
    let pa = db.is_live().then(|| a.primal.clone());
    let pb = da.is_live().then(|| b.primal.clone());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(pb) = pb {
                da.accumulate(|d| d.add_component_mul(1.0, g, &pb));
            }
            if let Some(pa) = pa {
                db.accumulate(|d| d.add_component_mul(1.0, g, &pa));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Products: `m * x` (matrix-vector) and `a * b` (matrix-matrix).

/// Forward rule of `m * x`: `dm x + m dx` (two `gemv`s).
pub fn mat_vec_frule(
    m: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    x: Dual<&DVector<f64>, &DVector<f64>>,
) -> Dual<DVector<f64>, DVector<f64>> {
    let y = m.primal * x.primal;
    let mut t = m.tangent * x.primal;
    t.gemv(1.0, m.primal, x.tangent, 1.0);
    Dual::new(y, t)
}

/// Reverse rule of `m * x`: `m̄ += ȳ xᵀ` (`ger`), `x̄ += mᵀ ȳ` (`gemv_tr`).
pub fn mat_vec_rrule(
    m: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    x: CoDual<&DVector<f64>, SharedRef<DVector<f64>>>,
) -> (
    CoDual<DVector<f64>, SharedRef<DVector<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let (y, dy) = fresh(m.primal * x.primal);
    let (dm, dx) = (m.fdata, x.fdata);
    let pm = dx.is_live().then(|| m.primal.clone());
    let px = dm.is_live().then(|| x.primal.clone());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(px) = px {
                dm.accumulate(|d| d.ger(1.0, g, &px, 1.0));
            }
            if let Some(pm) = pm {
                dx.accumulate(|d| d.gemv_tr(1.0, &pm, g, 1.0));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a * b`: `da b + a db` (two `gemm`s).
pub fn mat_mat_frule(
    a: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    b: Dual<&DMatrix<f64>, &DMatrix<f64>>,
) -> Dual<DMatrix<f64>, DMatrix<f64>> {
    let y = a.primal * b.primal;
    let mut t = a.tangent * b.primal;
    t.gemm(1.0, a.primal, b.tangent, 1.0);
    Dual::new(y, t)
}

/// Reverse rule of `a * b`: `ā += ȳ bᵀ`, `b̄ += aᵀ ȳ`: two `gemm`s, with the transposes
/// taken in the forward pass (nalgebra's `gemm` runs matrixmultiply's blocked kernel, where
/// `gemm_tr` would take one dot product per entry).
pub fn mat_mat_rrule(
    a: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    b: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
) -> (
    CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let (y, dy) = fresh(a.primal * b.primal);
    // The transposes, not copies: the pullback's two products are then plain `gemm`s. Each
    // only where its side's gradient is wanted (an argument passed `Const(&x)` has a constant
    // shadow: `SharedRef::is_live`).
    let (da, db) = (a.fdata, b.fdata);
    let pat = db.is_live().then(|| a.primal.transpose());
    let pbt = da.is_live().then(|| b.primal.transpose());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(pbt) = pbt {
                da.accumulate(|d| d.gemm(1.0, g, &pbt, 1.0));
            }
            if let Some(pat) = pat {
                db.accumulate(|d| d.gemm(1.0, &pat, g, 1.0));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Construction: `DVector::from_vec(v)`, `DMatrix::from_row_slice(r, c, s)`, `zeros`.

/// `DVector::from_vec(v)` as a free function, which a `#[differentiable]` body can call by name
/// (`use mooncake_runtime::linalg::rules::*` brings it with its rules): derived code does not
/// dispatch nalgebra's associated constructors yet.
///
/// ```
/// use mooncake_runtime::linalg::rules::from_vec;
/// assert_eq!(from_vec(vec![1.0, 2.0]).len(), 2);
/// ```
pub fn from_vec(v: Vec<f64>) -> DVector<f64> {
    DVector::from_vec(v)
}

/// `DMatrix::from_row_slice(nrows, ncols, s)` as a free function, which a `#[differentiable]`
/// body can call by name (see [`from_vec`]).
///
/// # Panics
/// If `s` is shorter than `nrows * ncols`, as nalgebra's `from_row_slice` does.
///
/// ```
/// use mooncake_runtime::linalg::rules::from_row_slice;
/// let m = from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// assert_eq!(m[(1, 0)], 4.0);
/// ```
pub fn from_row_slice(nrows: usize, ncols: usize, s: &[f64]) -> DMatrix<f64> {
    DMatrix::from_row_slice(nrows, ncols, s)
}

/// Forward rule of `DVector::from_vec(v)`.
pub fn from_vec_frule(v: Dual<Vec<f64>, Vec<f64>>) -> Dual<DVector<f64>, DVector<f64>> {
    Dual::new(DVector::from_vec(v.primal), DVector::from_vec(v.tangent))
}

/// Reverse rule of `DVector::from_vec(v)`: `v̄ += ȳ` (`axpy` into a view of `v`'s shadow).
pub fn from_vec_rrule(
    v: CoDual<Vec<f64>, SharedVec<f64>>,
) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,) + use<>) {
    let (y, dy) = fresh(DVector::from_vec(v.primal));
    let dv = v.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            dv.with_mut(|d| {
                let n = d.len();
                DVectorViewMut::from_slice(d, n).axpy(1.0, g, 1.0)
            })
        });
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
pub fn from_row_slice_frule(
    nrows: Dual<usize, NoTangent>,
    ncols: Dual<usize, NoTangent>,
    s: Dual<&[f64], &[f64]>,
) -> Dual<DMatrix<f64>, DMatrix<f64>> {
    let (r, c) = (nrows.primal, ncols.primal);
    Dual::new(DMatrix::from_row_slice(r, c, s.primal), DMatrix::from_row_slice(r, c, s.tangent))
}

/// Reverse rule of `DMatrix::from_row_slice(nrows, ncols, s)`: `s̄ += ȳ` read row by row (the
/// shadow of `s` seen as the column-major `ncols x nrows` matrix `ȳᵀ`).
pub fn from_row_slice_rrule(
    nrows: CoDual<usize, NoFData>,
    ncols: CoDual<usize, NoFData>,
    s: CoDual<&[f64], SharedVec<f64>>,
) -> (
    CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<>,
) {
    let (r, c) = (nrows.primal, ncols.primal);
    let (y, dy) = fresh(DMatrix::from_row_slice(r, c, s.primal));
    let ds = s.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            ds.with_mut(|d| {
                let mut view = DMatrixViewMut::from_slice(&mut d[..r * c], c, r);
                view += g.transpose();
            })
        });
        (NoRData, NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `DVector::zeros(n)`: no derivative.
pub fn zeros_vector_frule(n: Dual<usize, NoTangent>) -> Dual<DVector<f64>, DVector<f64>> {
    Dual::new(DVector::zeros(n.primal), DVector::zeros(n.primal))
}

/// Reverse rule of `DVector::zeros(n)`: a fresh zero shadow; nothing flows back.
pub fn zeros_vector_rrule(
    n: CoDual<usize, NoFData>,
) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,) + use<>) {
    (fresh(DVector::zeros(n.primal)).0, |_: NoRData| (NoRData,))
}

/// Forward rule of `DMatrix::zeros(nrows, ncols)`: no derivative.
pub fn zeros_matrix_frule(
    nrows: Dual<usize, NoTangent>,
    ncols: Dual<usize, NoTangent>,
) -> Dual<DMatrix<f64>, DMatrix<f64>> {
    let (r, c) = (nrows.primal, ncols.primal);
    Dual::new(DMatrix::zeros(r, c), DMatrix::zeros(r, c))
}

/// Reverse rule of `DMatrix::zeros(nrows, ncols)`: a fresh zero shadow; nothing flows back.
pub fn zeros_matrix_rrule(
    nrows: CoDual<usize, NoFData>,
    ncols: CoDual<usize, NoFData>,
) -> (
    CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let y = DMatrix::zeros(nrows.primal, ncols.primal);
    (fresh(y).0, |_: NoRData| (NoRData, NoRData))
}

// ---------------------------------------------------------------------------------------------
// Indexed reads: `v[i]`, `m[(i, j)]`.

/// Forward rule of the read `v[i]` (any heap matrix, column-major linear index, as nalgebra's
/// `Index<usize>`).
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn index_frule<M: HeapMatrix>(v: Dual<&M, &M>, i: Dual<usize, NoTangent>) -> Dual<f64, f64> {
    Dual::new(v.primal.entries()[i.primal], v.tangent.entries()[i.primal])
}

/// Reverse rule of the read `v[i]`: `v̄[i] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn index_rrule<M: HeapMatrix>(
    v: CoDual<&M, SharedRef<M>>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<M>) {
    let i = i.primal;
    let y = v.primal.entries()[i];
    let dv = v.fdata;
    let pullback = move |y_bar: f64| {
        dv.accumulate(|d| d.entries_mut()[i] += y_bar);
        (NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of the read `m[(i, j)]`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn index2_frule<M: HeapMatrix + std::ops::Index<(usize, usize), Output = f64>>(
    m: Dual<&M, &M>,
    ij: Dual<(usize, usize), (NoTangent, NoTangent)>,
) -> Dual<f64, f64> {
    Dual::new(m.primal[ij.primal], m.tangent[ij.primal])
}

/// Reverse rule of the read `m[(i, j)]`: `m̄[(i, j)] += ȳ`.
///
/// # Panics
/// If `(i, j)` is out of range, as `m[(i, j)]` does.
pub fn index2_rrule<M: HeapMatrix + std::ops::IndexMut<(usize, usize), Output = f64>>(
    m: CoDual<&M, SharedRef<M>>,
    ij: CoDual<(usize, usize), (NoFData, NoFData)>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, (NoRData, NoRData)) + use<M>) {
    let ij = ij.primal;
    let y = m.primal[ij];
    let dm = m.fdata;
    let pullback = move |y_bar: f64| {
        dm.accumulate(|d| d[ij] += y_bar);
        (NoRData, (NoRData, NoRData))
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// `y.gemv(α, a, x, β)` and `c.gemm(α, a, b, β)`: `y ← α (a x) + β y`, in place. Each rule is
// the product's own rule (`t = a x`) and the update `y ← α t + β y`, whose derivative is written
// once for both (`update_frule`, `update_rrule`).

/// Forward rule of the update `y ← α t + β y` of a product `t`: `ẏ ← α̇ t + α ṫ + β̇ y + β ẏ`.
fn update_frule<M: HeapMatrix>(
    y: Dual<&mut M, &mut M>,
    alpha: Dual<f64, f64>,
    t: Dual<M, M>,
    beta: Dual<f64, f64>,
) -> Dual<(), NoTangent> {
    let (a, b) = (alpha.primal, beta.primal);
    let dy = &mut *y.tangent;
    dy.entries_mut().iter_mut().for_each(|v| *v *= b);
    dy.add_scaled(beta.tangent, y.primal);
    dy.add_scaled(alpha.tangent, &t.primal);
    dy.add_scaled(a, &t.tangent);
    let py = &mut *y.primal;
    py.entries_mut().iter_mut().for_each(|v| *v *= b);
    py.add_scaled(a, &t.primal);
    Dual::new((), NoTangent)
}

/// Reverse rule of the update `y ← α t + β y` of a product `t` (with its shadow `t.fdata`, read
/// by the product's pullback `pb`): the new value of `y` (from `y_old`), and the pullback,
/// which takes `ȳ` out of `y`'s shadow `dy`: `t̄ += α ȳ` (then the product's pullback runs),
/// `ᾱ = ȳ·t`, `β̄ = ȳ·y_old`, and `dy ← β ȳ`, the gradient of `y` before the update; it
/// returns `(ᾱ, β̄)` and `y_old`, for a caller that restores it.
pub fn update_rrule<M: HeapMatrix>(
    y_old: M,
    dy: SharedRef<M>,
    alpha: f64,
    t: CoDual<M, SharedRef<M>>,
    pb: impl FnOnce(NoRData) -> (NoRData, NoRData),
    beta: f64,
) -> (M, impl FnOnce() -> (f64, f64, M)) {
    let mut y = y_old.clone();
    y.entries_mut().iter_mut().for_each(|v| *v *= beta);
    y.add_scaled(alpha, &t.primal);
    let pullback = move || {
        let mut rets = (0.0, 0.0);
        if dy.is_live() {
            dy.with_mut(|g| {
                rets = (g.dot_with(&t.primal), g.dot_with(&y_old));
                t.fdata.with_mut(|dt| dt.add_scaled(alpha, g));
                g.entries_mut().iter_mut().for_each(|v| *v *= beta);
            });
        }
        let _ = pb(NoRData);
        (rets.0, rets.1, y_old)
    };
    (y, pullback)
}

/// Forward rule of `y.gemv(α, a, x, β)`: `y ← α a x + β y`.
///
/// # Panics
/// If the shapes do not fit, as `gemv` does.
pub fn gemv_frule(
    y: Dual<&mut DVector<f64>, &mut DVector<f64>>,
    alpha: Dual<f64, f64>,
    a: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    x: Dual<&DVector<f64>, &DVector<f64>>,
    beta: Dual<f64, f64>,
) -> Dual<(), NoTangent> {
    update_frule(y, alpha, mat_vec_frule(a, x), beta)
}

/// Forward rule of `c.gemm(α, a, b, β)`: `c ← α a b + β c`.
///
/// # Panics
/// If the shapes do not fit, as `gemm` does.
pub fn gemm_frule(
    c: Dual<&mut DMatrix<f64>, &mut DMatrix<f64>>,
    alpha: Dual<f64, f64>,
    a: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    b: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    beta: Dual<f64, f64>,
) -> Dual<(), NoTangent> {
    update_frule(c, alpha, mat_mat_frule(a, b), beta)
}

// ---------------------------------------------------------------------------------------------
// `m.column(j)`, `m.row(i)`: owned copies in derived code (nalgebra's are views, which derived
// code does not hold; the primal keeps its view).

/// Forward rule of `m.column(j)`, an owned `DVector`.
///
/// # Panics
/// If `j` is out of range, as `m.column(j)` does.
pub fn column_frule(
    m: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    j: Dual<usize, NoTangent>,
) -> Dual<DVector<f64>, DVector<f64>> {
    Dual::new(m.primal.column(j.primal).into_owned(), m.tangent.column(j.primal).into_owned())
}

/// Reverse rule of `m.column(j)`: `m̄[.., j] += ȳ`.
///
/// # Panics
/// If `j` is out of range, as `m.column(j)` does.
pub fn column_rrule(
    m: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    j: CoDual<usize, NoFData>,
) -> (
    CoDual<DVector<f64>, SharedRef<DVector<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let j = j.primal;
    let (y, dy) = fresh(m.primal.column(j).into_owned());
    let dm = m.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| dm.accumulate(|d| d.column_mut(j).axpy(1.0, g, 1.0)));
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `m.row(i)`, an owned `RowDVector`.
///
/// # Panics
/// If `i` is out of range, as `m.row(i)` does.
pub fn row_frule(
    m: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    i: Dual<usize, NoTangent>,
) -> Dual<RowDVector<f64>, RowDVector<f64>> {
    Dual::new(m.primal.row(i.primal).into_owned(), m.tangent.row(i.primal).into_owned())
}

/// Reverse rule of `m.row(i)`: `m̄[i, ..] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `m.row(i)` does.
pub fn row_rrule(
    m: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    i: CoDual<usize, NoFData>,
) -> (
    CoDual<RowDVector<f64>, SharedRef<RowDVector<f64>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
) {
    let i = i.primal;
    let (y, dy) = fresh(m.primal.row(i).into_owned());
    let dm = m.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| dm.accumulate(|d| d.row_mut(i).zip_apply(g, |a, b| *a += b)));
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Associated constructors in derived code: a `#[differentiable]` body's path call
// `DMatrix::from_row_slice(r, c, &s)` becomes `DMatrix::from_row_slice_rrule(..)` (and
// `_frule`), which nalgebra's types cannot have as inherent functions; these traits give them,
// in the prelude with the feature, each rule the free function's above.

/// The rules of `DMatrix<f64>`'s constructors, as associated functions that derived code calls
/// by the constructor's path (`DMatrix::from_row_slice(2, 3, &s)`, `DMatrix::zeros(2, 3)` in a
/// `#[differentiable]` body). In the prelude with the feature `nalgebra`.
///
/// ```
/// use mooncake_runtime::prelude::*;
/// use nalgebra::DMatrix;
///
/// #[differentiable]
/// fn weighted(s: &[f64], w: &[f64]) -> f64 {
///     let m = DMatrix::from_row_slice(2, 2, s);
///     let z = DMatrix::<f64>::zeros(2, 2);
///     let c = DMatrix::from_row_slice(2, 2, w);
///     m.component_mul(&c).sum() + z.norm_squared()
/// }
///
/// let (s, w) = (vec![1.0, 2.0, 3.0, 4.0], vec![0.5, -1.0, 2.0, 0.25]);
/// let (v, (gs, gw)) = value_and_gradient!(weighted(&s, &w));
/// assert_eq!(v, 0.5 - 2.0 + 6.0 + 1.0);
/// assert_eq!((gs, gw), (w.clone(), s.clone()));
/// ```
pub trait DMatrixConstructors {
    /// Forward rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
    fn from_row_slice_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
        s: Dual<&[f64], &[f64]>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>>;
    /// Reverse rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
    #[allow(clippy::type_complexity)]
    fn from_row_slice_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
        s: CoDual<&[f64], SharedVec<f64>>,
    ) -> (
        CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<Self>,
    );
    /// Forward rule of `DMatrix::zeros(nrows, ncols)`.
    fn zeros_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>>;
    /// Reverse rule of `DMatrix::zeros(nrows, ncols)`.
    #[allow(clippy::type_complexity)]
    fn zeros_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
    ) -> (CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>, impl FnOnce(NoRData) -> (NoRData, NoRData));
}

impl DMatrixConstructors for DMatrix<f64> {
    #[inline]
    fn from_row_slice_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
        s: Dual<&[f64], &[f64]>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>> {
        from_row_slice_frule(nrows, ncols, s)
    }
    #[inline]
    fn from_row_slice_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
        s: CoDual<&[f64], SharedVec<f64>>,
    ) -> (
        CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<>,
    ) {
        from_row_slice_rrule(nrows, ncols, s)
    }
    #[inline]
    fn zeros_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>> {
        zeros_matrix_frule(nrows, ncols)
    }
    #[inline]
    fn zeros_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
    ) -> (CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>, impl FnOnce(NoRData) -> (NoRData, NoRData))
    {
        zeros_matrix_rrule(nrows, ncols)
    }
}

/// The rules of `DVector<f64>`'s constructors, as associated functions that derived code calls
/// by the constructor's path (`DVector::from_vec(v)`, `DVector::zeros(n)` in a
/// `#[differentiable]` body). In the prelude with the feature `nalgebra`.
///
/// ```
/// use mooncake_runtime::prelude::*;
/// use nalgebra::DVector;
///
/// #[differentiable]
/// fn squared_norm(x: &[f64]) -> f64 {
///     let v = DVector::from_vec(x.to_vec());
///     let z = DVector::<f64>::zeros(2);
///     v.norm_squared() + z.sum()
/// }
///
/// let x = vec![1.0, 2.0];
/// let (v, (g,)) = value_and_gradient!(squared_norm(&x));
/// assert_eq!((v, g), (5.0, vec![2.0, 4.0]));
/// ```
pub trait DVectorConstructors {
    /// Forward rule of `DVector::from_vec(v)`.
    fn from_vec_frule(v: Dual<Vec<f64>, Vec<f64>>) -> Dual<DVector<f64>, DVector<f64>>;
    /// Reverse rule of `DVector::from_vec(v)`.
    fn from_vec_rrule(
        v: CoDual<Vec<f64>, SharedVec<f64>>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,));
    /// Forward rule of `DVector::zeros(n)`.
    fn zeros_frule(n: Dual<usize, NoTangent>) -> Dual<DVector<f64>, DVector<f64>>;
    /// Reverse rule of `DVector::zeros(n)`.
    fn zeros_rrule(
        n: CoDual<usize, NoFData>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,));
}

impl DVectorConstructors for DVector<f64> {
    #[inline]
    fn from_vec_frule(v: Dual<Vec<f64>, Vec<f64>>) -> Dual<DVector<f64>, DVector<f64>> {
        from_vec_frule(v)
    }
    #[inline]
    fn from_vec_rrule(
        v: CoDual<Vec<f64>, SharedVec<f64>>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,)) {
        from_vec_rrule(v)
    }
    #[inline]
    fn zeros_frule(n: Dual<usize, NoTangent>) -> Dual<DVector<f64>, DVector<f64>> {
        zeros_vector_frule(n)
    }
    #[inline]
    fn zeros_rrule(
        n: CoDual<usize, NoFData>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,)) {
        zeros_vector_rrule(n)
    }
}
