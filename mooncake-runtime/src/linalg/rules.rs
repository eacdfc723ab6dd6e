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

use super::{HeapMatrix, MatScalar};
use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::shared::{SharedRef, SharedVec};
use nalgebra::{DMatrix, DMatrixViewMut, DVector, DVectorViewMut, RowDVector};

/// The element type of a heap matrix `M`.
type S<M> = <M as HeapMatrix>::Scalar;

/// One and two of `M`'s element type.
#[inline(always)]
fn one<M: HeapMatrix>() -> S<M> {
    <S<M> as Float>::ONE
}
#[inline(always)]
fn two<M: HeapMatrix>() -> S<M> {
    <S<M> as Float>::TWO
}

/// A matrix result of a reverse rule with a fresh zero shadow, and a handle on that shadow for
/// the pullback.
fn fresh<M: HeapMatrix>(y: M) -> (CoDual<M, SharedRef<M>>, SharedRef<M>) {
    let s = SharedRef::new(y.zeros_like());
    (CoDual::new(y, s.clone()), s)
}

// ---------------------------------------------------------------------------------------------
// Reductions: `a.dot(&b)`, `a.norm_squared()`, `a.norm()`, `a.sum()`.

/// Forward rule of `a.dot(&b)`: `da·b + a·db`.
pub fn dot_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<S<M>, S<M>> {
    Dual::new(
        a.primal.dot_with(b.primal),
        a.tangent.dot_with(b.primal) + a.primal.dot_with(b.tangent),
    )
}

/// Reverse rule of `a.dot(&b)`: `ā += ȳ b`, `b̄ += ȳ a`.
pub fn dot_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData, NoRData) + use<M>) {
    let y = a.primal.dot_with(b.primal);
    let (pa, pb) = (a.primal.clone(), b.primal.clone());
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |y_bar: S<M>| {
        da.accumulate(|d| d.add_scaled(y_bar, &pb));
        db.accumulate(|d| d.add_scaled(y_bar, &pa));
        (NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.norm_squared()`: `2 a·da`.
pub fn norm_squared_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<S<M>, S<M>> {
    Dual::new(a.primal.dot_with(a.primal), two::<M>() * a.primal.dot_with(a.tangent))
}

/// Reverse rule of `a.norm_squared()`: `ā += 2ȳ a`.
pub fn norm_squared_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData,) + use<M>) {
    let y = a.primal.dot_with(a.primal);
    let pa = a.primal.clone();
    let da = a.fdata;
    let pullback = move |y_bar: S<M>| {
        da.accumulate(|d| d.add_scaled(two::<M>() * y_bar, &pa));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.norm()` (Euclidean / Frobenius): `a·da / |a|`.
pub fn norm_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<S<M>, S<M>> {
    let y = Float::sqrt(a.primal.dot_with(a.primal));
    Dual::new(y, a.primal.dot_with(a.tangent) / y)
}

/// Reverse rule of `a.norm()`: `ā += (ȳ / |a|) a`.
pub fn norm_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData,) + use<M>) {
    let y = Float::sqrt(a.primal.dot_with(a.primal));
    let pa = a.primal.clone();
    let da = a.fdata;
    let pullback = move |y_bar: S<M>| {
        da.accumulate(|d| d.add_scaled(y_bar / y, &pa));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.sum()`: `da.sum()`.
pub fn sum_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<S<M>, S<M>> {
    Dual::new(a.primal.total(), a.tangent.total())
}

/// Reverse rule of `a.sum()`: `ȳ` added to every entry of `ā`.
pub fn sum_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData,) + use<M>) {
    let y = a.primal.total();
    let da = a.fdata;
    let pullback = move |y_bar: S<M>| {
        da.accumulate(|d| d.add_to_all(y_bar));
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// Forward rule of `a.mean()`: the means of `a` and `ȧ` (zero for an empty matrix, as nalgebra's).
pub fn mean_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<S<M>, S<M>> {
    let n = a.primal.entries().len();
    if n == 0 {
        return Dual::new(<S<M> as Float>::ZERO, <S<M> as Float>::ZERO);
    }
    let n = <S<M> as Float>::from_f64(n as f64);
    Dual::new(a.primal.total() / n, a.tangent.total() / n)
}

/// Reverse rule of `a.mean()`: `ȳ / n` added to every entry of `ā`.
pub fn mean_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData,) + use<M>) {
    let y = mean_frule(Dual::new(a.primal, a.primal)).primal;
    let n = <S<M> as Float>::from_f64(a.primal.entries().len().max(1) as f64);
    let da = a.fdata;
    let pullback = move |y_bar: S<M>| {
        da.accumulate(|d| d.add_to_all(y_bar / n));
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
        dy.with(|g| da.accumulate(|d| d.add_scaled(one::<M>(), &g.transposed())));
        (NoRData,)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Element-wise: `a + b`, `a - b`, `-a`, `a * s`, `a.component_mul(&b)`.

/// Forward rule of `a + b`.
pub fn add_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.clone();
    y.add_scaled(one::<M>(), b.primal);
    let mut t = a.tangent.clone();
    t.add_scaled(one::<M>(), b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a + b`: `ā += ȳ`, `b̄ += ȳ`.
pub fn add_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.clone();
    y.add_scaled(one::<M>(), b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| d.add_scaled(one::<M>(), g));
            db.accumulate(|d| d.add_scaled(one::<M>(), g));
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a - b`.
pub fn sub_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.clone();
    y.add_scaled(-one::<M>(), b.primal);
    let mut t = a.tangent.clone();
    t.add_scaled(-one::<M>(), b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a - b`: `ā += ȳ`, `b̄ -= ȳ`.
pub fn sub_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.clone();
    y.add_scaled(-one::<M>(), b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| d.add_scaled(one::<M>(), g));
            db.accumulate(|d| d.add_scaled(-one::<M>(), g));
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `-a`.
pub fn neg_frule<M: HeapMatrix>(a: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.zeros_like();
    y.add_scaled(-one::<M>(), a.primal);
    let mut t = a.tangent.zeros_like();
    t.add_scaled(-one::<M>(), a.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `-a`: `ā -= ȳ`.
pub fn neg_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData,) + use<M>) {
    let mut y = a.primal.zeros_like();
    y.add_scaled(-one::<M>(), a.primal);
    let (y, dy) = fresh(y);
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| d.add_scaled(-one::<M>(), g)));
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `a * s` (and `s * a`) for a scalar `s`: `da s + a ds`.
pub fn scale_frule<M: HeapMatrix>(a: Dual<&M, &M>, s: Dual<S<M>, S<M>>) -> Dual<M, M> {
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
    s: CoDual<S<M>, NoFData>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, S<M>) + use<M>) {
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

/// Forward rule of `a.add_scalar(s)`: `ȧ + ṡ` at every entry.
pub fn add_scalar_frule<M: HeapMatrix>(a: Dual<&M, &M>, s: Dual<S<M>, S<M>>) -> Dual<M, M> {
    let (mut y, mut t) = (a.primal.clone(), a.tangent.clone());
    y.add_to_all(s.primal);
    t.add_to_all(s.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a.add_scalar(s)`: `ā += ȳ`, `s̄ = Σ ȳ`.
pub fn add_scalar_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    s: CoDual<S<M>, NoFData>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, S<M>) + use<M>) {
    let mut y = a.primal.clone();
    y.add_to_all(s.primal);
    let (y, dy) = fresh(y);
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.add_scaled(one::<M>(), g));
            g.total()
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

/// Forward rule of `a / s` for a scalar `s`: `da / s - y ds / s` (with `y = a / s`).
pub fn div_scalar_frule<M: HeapMatrix>(a: Dual<&M, &M>, s: Dual<S<M>, S<M>>) -> Dual<M, M> {
    let r = <S<M> as Float>::ONE / s.primal;
    let mut y = a.primal.clone();
    y.unscale_by(s.primal);
    let mut t = a.primal.zeros_like();
    t.add_scaled(r, a.tangent);
    t.add_scaled(-s.tangent * r, &y);
    Dual::new(y, t)
}

/// Reverse rule of `a / s`: `ā += ȳ / s`, `s̄ = -<y, ȳ> / s` (with `y = a / s`).
pub fn div_scalar_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    s: CoDual<S<M>, NoFData>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, S<M>) + use<M>) {
    let r = <S<M> as Float>::ONE / s.primal;
    let mut py = a.primal.clone();
    py.unscale_by(s.primal);
    let (y, dy) = fresh(py.clone());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.add_scaled(r, g));
            -py.dot_with(g) * r
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

/// Forward rule of `a.component_mul(&b)`: `da ∘ b + a ∘ db`.
pub fn component_mul_frule<M: HeapMatrix>(a: Dual<&M, &M>, b: Dual<&M, &M>) -> Dual<M, M> {
    let mut y = a.primal.zeros_like();
    y.add_component_mul(one::<M>(), a.primal, b.primal);
    let mut t = a.primal.zeros_like();
    t.add_component_mul(one::<M>(), a.tangent, b.primal);
    t.add_component_mul(one::<M>(), a.primal, b.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `a.component_mul(&b)`: `ā += ȳ ∘ b`, `b̄ += ȳ ∘ a`.
pub fn component_mul_rrule<M: HeapMatrix>(
    a: CoDual<&M, SharedRef<M>>,
    b: CoDual<&M, SharedRef<M>>,
) -> (CoDual<M, SharedRef<M>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<M>) {
    let mut y = a.primal.zeros_like();
    y.add_component_mul(one::<M>(), a.primal, b.primal);
    let (y, dy) = fresh(y);
    let (da, db) = (a.fdata, b.fdata);
    // Each copy only where the other side's gradient is wanted (`SharedRef::is_live`).
    let pa = db.is_live().then(|| a.primal.clone());
    let pb = da.is_live().then(|| b.primal.clone());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(pb) = pb {
                da.accumulate(|d| d.add_component_mul(one::<M>(), g, &pb));
            }
            if let Some(pa) = pa {
                db.accumulate(|d| d.add_component_mul(one::<M>(), g, &pa));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Products: `m * x` (matrix-vector) and `a * b` (matrix-matrix).

/// Forward rule of `m * x`: `dm x + m dx` (two `gemv`s).
pub fn mat_vec_frule<T: MatScalar>(
    m: Dual<&DMatrix<T>, &DMatrix<T>>,
    x: Dual<&DVector<T>, &DVector<T>>,
) -> Dual<DVector<T>, DVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let y = m.primal * x.primal;
    let mut t = m.tangent * x.primal;
    t.gemv(T::ONE, m.primal, x.tangent, T::ONE);
    Dual::new(y, t)
}

/// Reverse rule of `m * x`: `m̄ += ȳ xᵀ` (`ger`), `x̄ += mᵀ ȳ` (`gemv_tr`).
pub fn mat_vec_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    x: CoDual<&DVector<T>, SharedRef<DVector<T>>>,
) -> (CoDual<DVector<T>, SharedRef<DVector<T>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let (y, dy) = fresh(m.primal * x.primal);
    let (dm, dx) = (m.fdata, x.fdata);
    let pm = dx.is_live().then(|| m.primal.clone());
    let px = dm.is_live().then(|| x.primal.clone());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(px) = px {
                dm.accumulate(|d| d.ger(T::ONE, g, &px, T::ONE));
            }
            if let Some(pm) = pm {
                dx.accumulate(|d| d.gemv_tr(T::ONE, &pm, g, T::ONE));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a * b`: `da b + a db` (two `gemm`s).
pub fn mat_mat_frule<T: MatScalar>(
    a: Dual<&DMatrix<T>, &DMatrix<T>>,
    b: Dual<&DMatrix<T>, &DMatrix<T>>,
) -> Dual<DMatrix<T>, DMatrix<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let y = a.primal * b.primal;
    let mut t = a.tangent * b.primal;
    t.gemm(T::ONE, a.primal, b.tangent, T::ONE);
    Dual::new(y, t)
}

/// Reverse rule of `a * b`: `ā += ȳ bᵀ`, `b̄ += aᵀ ȳ`: two `gemm`s, with the transposes
/// taken in the forward pass (nalgebra's `gemm` runs matrixmultiply's blocked kernel, where
/// `gemm_tr` would take one dot product per entry).
pub fn mat_mat_rrule<T: MatScalar>(
    a: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    b: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
) -> (CoDual<DMatrix<T>, SharedRef<DMatrix<T>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
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
                da.accumulate(|d| d.gemm(T::ONE, g, &pbt, T::ONE));
            }
            if let Some(pat) = pat {
                db.accumulate(|d| d.gemm(T::ONE, &pat, g, T::ONE));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Row vectors on the left: `r * m` (a row vector) and `r * v` (a 1 x 1 matrix), as in the
// quadratic form `x.transpose() * &a * &x`.

/// Forward rule of `r * m`: `ṙ m + r ṁ`.
pub fn row_mat_frule<T: MatScalar>(
    r: Dual<&RowDVector<T>, &RowDVector<T>>,
    m: Dual<&DMatrix<T>, &DMatrix<T>>,
) -> Dual<RowDVector<T>, RowDVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let y = r.primal * m.primal;
    let t = r.tangent * m.primal + r.primal * m.tangent;
    Dual::new(y, t)
}

/// Reverse rule of `r * m`: `r̄ += ȳ mᵀ`, `m̄ += rᵀ ȳ`.
pub fn row_mat_rrule<T: MatScalar>(
    r: CoDual<&RowDVector<T>, SharedRef<RowDVector<T>>>,
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
) -> (
    CoDual<RowDVector<T>, SharedRef<RowDVector<T>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>,
)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let (y, dy) = fresh(r.primal * m.primal);
    let (dr, dm) = (r.fdata, m.fdata);
    let mt = dr.is_live().then(|| m.primal.transpose());
    let pr = dm.is_live().then(|| r.primal.transpose());
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            if let Some(mt) = mt {
                dr.accumulate(|d| d.add_scaled(T::ONE, &(g * &mt)));
            }
            if let Some(pr) = pr {
                dm.accumulate(|d| d.ger(T::ONE, &pr, &g.transpose(), T::ONE));
            }
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `r * v`, a `1 x 1` matrix: `ṙ v + r v̇`.
pub fn row_vec_frule<T: MatScalar>(
    r: Dual<&RowDVector<T>, &RowDVector<T>>,
    v: Dual<&DVector<T>, &DVector<T>>,
) -> Dual<nalgebra::SMatrix<T, 1, 1>, nalgebra::SMatrix<T, 1, 1>> {
    let y = r.primal * v.primal;
    let t = r.tangent * v.primal + r.primal * v.tangent;
    Dual::new(y, t)
}

/// Reverse rule of `r * v`: `r̄ += ȳ vᵀ`, `v̄ += ȳ rᵀ` (`ȳ` the one entry of the cotangent).
pub fn row_vec_rrule<T: MatScalar>(
    r: CoDual<&RowDVector<T>, SharedRef<RowDVector<T>>>,
    v: CoDual<&DVector<T>, SharedRef<DVector<T>>>,
) -> (
    CoDual<nalgebra::SMatrix<T, 1, 1>, NoFData>,
    impl FnOnce(nalgebra::SMatrix<T, 1, 1>) -> (NoRData, NoRData) + use<T>,
)
where
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let y = r.primal * v.primal;
    let (pr, pv) = (r.primal.clone(), v.primal.clone());
    let (dr, dv) = (r.fdata, v.fdata);
    let pullback = move |g: nalgebra::SMatrix<T, 1, 1>| {
        let g = g[(0, 0)];
        dr.accumulate(|d| d.add_scaled(g, &pv.transpose()));
        dv.accumulate(|d| d.add_scaled(g, &pr.transpose()));
        (NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
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
pub fn from_vec<T: MatScalar>(v: Vec<T>) -> DVector<T>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
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
pub fn from_row_slice<T: MatScalar>(nrows: usize, ncols: usize, s: &[T]) -> DMatrix<T>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    DMatrix::from_row_slice(nrows, ncols, s)
}

/// Forward rule of `DVector::from_vec(v)`.
pub fn from_vec_frule<T: MatScalar>(v: Dual<Vec<T>, Vec<T>>) -> Dual<DVector<T>, DVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    Dual::new(DVector::from_vec(v.primal), DVector::from_vec(v.tangent))
}

/// Reverse rule of `DVector::from_vec(v)`: `v̄ += ȳ` (`axpy` into a view of `v`'s shadow).
pub fn from_vec_rrule<T: MatScalar>(
    v: CoDual<Vec<T>, SharedVec<T>>,
) -> (CoDual<DVector<T>, SharedRef<DVector<T>>>, impl FnOnce(NoRData) -> (NoRData,) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let (y, dy) = fresh(DVector::from_vec(v.primal));
    let dv = v.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            dv.with_mut(|d| {
                let n = d.len();
                DVectorViewMut::from_slice(d, n).axpy(T::ONE, g, T::ONE)
            })
        });
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
pub fn from_row_slice_frule<T: MatScalar>(
    nrows: Dual<usize, NoTangent>,
    ncols: Dual<usize, NoTangent>,
    s: Dual<&[T], &[T]>,
) -> Dual<DMatrix<T>, DMatrix<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let (r, c) = (nrows.primal, ncols.primal);
    Dual::new(DMatrix::from_row_slice(r, c, s.primal), DMatrix::from_row_slice(r, c, s.tangent))
}

/// Reverse rule of `DMatrix::from_row_slice(nrows, ncols, s)`: `s̄ += ȳ` read row by row (the
/// shadow of `s` seen as the column-major `ncols x nrows` matrix `ȳᵀ`).
pub fn from_row_slice_rrule<T: MatScalar>(
    nrows: CoDual<usize, NoFData>,
    ncols: CoDual<usize, NoFData>,
    s: CoDual<&[T], SharedVec<T>>,
) -> (
    CoDual<DMatrix<T>, SharedRef<DMatrix<T>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<T>,
)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
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
pub fn zeros_vector_frule<T: MatScalar>(n: Dual<usize, NoTangent>) -> Dual<DVector<T>, DVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    Dual::new(DVector::zeros(n.primal), DVector::zeros(n.primal))
}

/// Reverse rule of `DVector::zeros(n)`: a fresh zero shadow; nothing flows back.
pub fn zeros_vector_rrule<T: MatScalar>(
    n: CoDual<usize, NoFData>,
) -> (CoDual<DVector<T>, SharedRef<DVector<T>>>, impl FnOnce(NoRData) -> (NoRData,) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    (fresh(DVector::zeros(n.primal)).0, |_: NoRData| (NoRData,))
}

/// Forward rule of `DMatrix::zeros(nrows, ncols)`: no derivative.
pub fn zeros_matrix_frule<T: MatScalar>(
    nrows: Dual<usize, NoTangent>,
    ncols: Dual<usize, NoTangent>,
) -> Dual<DMatrix<T>, DMatrix<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let (r, c) = (nrows.primal, ncols.primal);
    Dual::new(DMatrix::zeros(r, c), DMatrix::zeros(r, c))
}

/// Reverse rule of `DMatrix::zeros(nrows, ncols)`: a fresh zero shadow; nothing flows back.
pub fn zeros_matrix_rrule<T: MatScalar>(
    nrows: CoDual<usize, NoFData>,
    ncols: CoDual<usize, NoFData>,
) -> (CoDual<DMatrix<T>, SharedRef<DMatrix<T>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
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
pub fn index_frule<M: HeapMatrix>(v: Dual<&M, &M>, i: Dual<usize, NoTangent>) -> Dual<S<M>, S<M>> {
    Dual::new(v.primal.entries()[i.primal], v.tangent.entries()[i.primal])
}

/// Reverse rule of the read `v[i]`: `v̄[i] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `v[i]` does.
pub fn index_rrule<M: HeapMatrix>(
    v: CoDual<&M, SharedRef<M>>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<S<M>, NoFData>, impl FnOnce(S<M>) -> (NoRData, NoRData) + use<M>) {
    let i = i.primal;
    let y = v.primal.entries()[i];
    let dv = v.fdata;
    let pullback = move |y_bar: S<M>| {
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
// `y.gemv(α, a, x, β)` and `c.gemm(α, a, b, β)`: `y ← α a x + β y`, in place. The value is
// nalgebra's own `gemv` / `gemm` (the same bits as the primal's); the pullbacks reuse `aᵀ ȳ`,
// which `x̄` needs, for `ᾱ = ȳ·(a x) = (aᵀ ȳ)·x`.

/// Forward rule of `y.gemv(α, a, x, β)`: `ẏ ← α̇ a x + α (ȧ x + a ẋ) + β̇ y + β ẏ`.
///
/// # Panics
/// If the shapes do not fit, as `gemv` does.
pub fn gemv_frule<T: MatScalar>(
    y: Dual<&mut DVector<T>, &mut DVector<T>>,
    alpha: Dual<T, T>,
    a: Dual<&DMatrix<T>, &DMatrix<T>>,
    x: Dual<&DVector<T>, &DVector<T>>,
    beta: Dual<T, T>,
) -> Dual<(), NoTangent> {
    let (al, be) = (alpha.primal, beta.primal);
    let dy = y.tangent;
    dy.gemv(al, a.tangent, x.primal, be);
    dy.gemv(al, a.primal, x.tangent, T::ONE);
    dy.gemv(alpha.tangent, a.primal, x.primal, T::ONE);
    dy.axpy(beta.tangent, &*y.primal, T::ONE);
    y.primal.gemv(al, a.primal, x.primal, be);
    Dual::new((), NoTangent)
}

/// Forward rule of `c.gemm(α, a, b, β)`: `ċ ← α̇ a b + α (ȧ b + a ḃ) + β̇ c + β ċ`.
///
/// # Panics
/// If the shapes do not fit, as `gemm` does.
pub fn gemm_frule<T: MatScalar>(
    c: Dual<&mut DMatrix<T>, &mut DMatrix<T>>,
    alpha: Dual<T, T>,
    a: Dual<&DMatrix<T>, &DMatrix<T>>,
    b: Dual<&DMatrix<T>, &DMatrix<T>>,
    beta: Dual<T, T>,
) -> Dual<(), NoTangent> {
    let (al, be) = (alpha.primal, beta.primal);
    let dc = c.tangent;
    dc.gemm(al, a.tangent, b.primal, be);
    dc.gemm(al, a.primal, b.tangent, T::ONE);
    dc.gemm(alpha.tangent, a.primal, b.primal, T::ONE);
    dc.zip_apply(&*c.primal, |d, v| *d += beta.tangent * v);
    c.primal.gemm(al, a.primal, b.primal, be);
    Dual::new((), NoTangent)
}

/// Reverse rule of `y.gemv(α, a, x, β)` on `y`'s old value `y_old` (whose shadow is `dy`): the
/// new value and the pullback, which takes `ȳ` out of `dy`: `ā += α ȳ xᵀ`, `x̄ += α aᵀ ȳ`,
/// `ᾱ = (aᵀ ȳ)·x`, `β̄ = ȳ·y_old`, and `dy ← β ȳ`, the gradient of `y` before the update. It
/// returns `(ᾱ, β̄)` and `y_old` (for a caller that restores it).
///
/// # Panics
/// If the shapes do not fit, as `gemv` does.
pub fn gemv_rrule<T: MatScalar>(
    y_old: DVector<T>,
    dy: SharedRef<DVector<T>>,
    alpha: T,
    a: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    x: CoDual<&DVector<T>, SharedRef<DVector<T>>>,
    beta: T,
) -> (DVector<T>, impl FnOnce() -> (T, T, DVector<T>) + use<T>) {
    let mut y = y_old.clone();
    y.gemv(alpha, a.primal, x.primal, beta);
    let (pa, px) = (a.primal.clone(), x.primal.clone());
    let (da, dx) = (a.fdata, x.fdata);
    let pullback = move || {
        if !dy.is_live() {
            return (T::ZERO, T::ZERO, y_old);
        }
        let rets = dy.with_mut(|g| {
            let mut u = DVector::zeros(pa.ncols());
            u.gemv_tr(T::ONE, &pa, g, T::ZERO);
            dx.accumulate(|d| d.axpy(alpha, &u, T::ONE));
            da.accumulate(|d| d.ger(alpha, g, &px, T::ONE));
            let rets = (u.dot(&px), g.dot(&y_old));
            *g *= beta;
            rets
        });
        (rets.0, rets.1, y_old)
    };
    (y, pullback)
}

/// Reverse rule of `c.gemm(α, a, b, β)` on `c`'s old value `c_old` (shadow `dc`): as
/// [`gemv_rrule`], with `ā += α c̄ bᵀ`, `b̄ += α aᵀ c̄`, `ᾱ = (aᵀ c̄)·b`, `β̄ = c̄·c_old`.
///
/// # Panics
/// If the shapes do not fit, as `gemm` does.
pub fn gemm_rrule<T: MatScalar>(
    c_old: DMatrix<T>,
    dc: SharedRef<DMatrix<T>>,
    alpha: T,
    a: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    b: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    beta: T,
) -> (DMatrix<T>, impl FnOnce() -> (T, T, DMatrix<T>) + use<T>) {
    let mut c = c_old.clone();
    c.gemm(alpha, a.primal, b.primal, beta);
    // The transposes, for plain `gemm`s in the pullback (see `mat_mat_rrule`).
    let (at, bt, pb) = (a.primal.transpose(), b.primal.transpose(), b.primal.clone());
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move || {
        if !dc.is_live() {
            return (T::ZERO, T::ZERO, c_old);
        }
        let rets = dc.with_mut(|g| {
            let v = &at * &*g;
            db.accumulate(|d| d.zip_apply(&v, |d, v| *d += alpha * v));
            da.accumulate(|d| d.gemm(alpha, g, &bt, T::ONE));
            let rets = (v.dot(&pb), g.dot(&c_old));
            *g *= beta;
            rets
        });
        (rets.0, rets.1, c_old)
    };
    (c, pullback)
}

// ---------------------------------------------------------------------------------------------
// `m.determinant()` and `m.try_inverse().unwrap()` (derived code's `m.__inverse()`) of a square
// matrix, each one LU factorisation of nalgebra's.

/// The inverse of `m`.
///
/// # Panics
/// If `m` is not square or is singular, as `m.try_inverse().unwrap()` does.
#[track_caller]
fn inverse_of<T: MatScalar>(m: &DMatrix<T>) -> DMatrix<T> {
    match m.clone().try_inverse() {
        Some(inv) => inv,
        None => panic!(
            "called `Option::unwrap()` on a `None` value: `try_inverse` of a singular or non-square matrix"
        ),
    }
}

/// Forward rule of `m.determinant()`: `det(m) tr(m⁻¹ ṁ)`.
///
/// # Panics
/// If `m` is not square, as `determinant` does.
pub fn determinant_frule<T: MatScalar>(m: Dual<&DMatrix<T>, &DMatrix<T>>) -> Dual<T, T> {
    let d = m.primal.determinant();
    // `tr(adj(m) ṁ)`, with `adj(m) = det(m) m⁻¹` where `m` is invertible; zero otherwise.
    let t = match m.primal.clone().try_inverse() {
        Some(inv) => d * (inv * m.tangent).trace(),
        None => <T as Float>::ZERO,
    };
    Dual::new(d, t)
}

/// Reverse rule of `m.determinant()`: `m̄ += ȳ det(m) m⁻ᵀ` (zero for a singular `m`).
///
/// # Panics
/// If `m` is not square, as `determinant` does.
pub fn determinant_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T>) {
    let d = m.primal.determinant();
    let inv_t = m.primal.clone().try_inverse().map(|inv| inv.transpose());
    let dm = m.fdata;
    (CoDual::new(d, NoFData), move |y_bar: T| {
        if let Some(inv_t) = inv_t {
            dm.accumulate(|g| g.zip_apply(&inv_t, |g, v| *g += y_bar * d * v));
        }
        (NoRData,)
    })
}

/// Forward rule of `m.try_inverse().unwrap()`: `-m⁻¹ ṁ m⁻¹`.
///
/// # Panics
/// If `m` is not square or is singular, as `m.try_inverse().unwrap()` does.
pub fn inverse_frule<T: MatScalar>(
    m: Dual<&DMatrix<T>, &DMatrix<T>>,
) -> Dual<DMatrix<T>, DMatrix<T>> {
    let y = inverse_of(m.primal);
    let t = -(&y * m.tangent * &y);
    Dual::new(y, t)
}

/// Reverse rule of `m.try_inverse().unwrap()`: `m̄ -= yᵀ ȳ yᵀ` (with `y = m⁻¹`).
///
/// # Panics
/// If `m` is not square or is singular, as `m.try_inverse().unwrap()` does.
pub fn inverse_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
) -> (CoDual<DMatrix<T>, SharedRef<DMatrix<T>>>, impl FnOnce(NoRData) -> (NoRData,) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
{
    let inv = inverse_of(m.primal);
    let yt = inv.transpose();
    let (y, dy) = fresh(inv);
    let dm = m.fdata;
    (y, move |_: NoRData| {
        dy.with(|g| dm.accumulate(|d| d.gemm(-T::ONE, &(&yt * g), &yt, T::ONE)));
        (NoRData,)
    })
}

// ---------------------------------------------------------------------------------------------
// `m.trace()`: the sum of the diagonal.

/// Forward rule of `m.trace()`: `tr(ṁ)`.
pub fn trace_frule<T: MatScalar>(m: Dual<&DMatrix<T>, &DMatrix<T>>) -> Dual<T, T> {
    Dual::new(m.primal.trace(), m.tangent.trace())
}

/// Reverse rule of `m.trace()`: `ȳ` added to the diagonal of `m̄`.
pub fn trace_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T>) {
    let y = m.primal.trace();
    let dm = m.fdata;
    (CoDual::new(y, NoFData), move |y_bar: T| {
        dm.accumulate(|d| d.set_partial_diagonal(d.diagonal().add_scalar(y_bar).iter().copied()));
        (NoRData,)
    })
}

// ---------------------------------------------------------------------------------------------
// `m.column(j)`, `m.row(i)`: owned copies in derived code (nalgebra's are views, which derived
// code does not hold; the primal keeps its view).

/// Forward rule of `m.column(j)`, an owned `DVector`.
///
/// # Panics
/// If `j` is out of range, as `m.column(j)` does.
pub fn column_frule<T: MatScalar>(
    m: Dual<&DMatrix<T>, &DMatrix<T>>,
    j: Dual<usize, NoTangent>,
) -> Dual<DVector<T>, DVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    Dual::new(m.primal.column(j.primal).into_owned(), m.tangent.column(j.primal).into_owned())
}

/// Reverse rule of `m.column(j)`: `m̄[.., j] += ȳ`.
///
/// # Panics
/// If `j` is out of range, as `m.column(j)` does.
pub fn column_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    j: CoDual<usize, NoFData>,
) -> (CoDual<DVector<T>, SharedRef<DVector<T>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    let j = j.primal;
    let (y, dy) = fresh(m.primal.column(j).into_owned());
    let dm = m.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| dm.accumulate(|d| d.column_mut(j).axpy(T::ONE, g, T::ONE)));
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `m.row(i)`, an owned `RowDVector`.
///
/// # Panics
/// If `i` is out of range, as `m.row(i)` does.
pub fn row_frule<T: MatScalar>(
    m: Dual<&DMatrix<T>, &DMatrix<T>>,
    i: Dual<usize, NoTangent>,
) -> Dual<RowDVector<T>, RowDVector<T>>
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
    Dual::new(m.primal.row(i.primal).into_owned(), m.tangent.row(i.primal).into_owned())
}

/// Reverse rule of `m.row(i)`: `m̄[i, ..] += ȳ`.
///
/// # Panics
/// If `i` is out of range, as `m.row(i)` does.
pub fn row_rrule<T: MatScalar>(
    m: CoDual<&DMatrix<T>, SharedRef<DMatrix<T>>>,
    i: CoDual<usize, NoFData>,
) -> (
    CoDual<RowDVector<T>, SharedRef<RowDVector<T>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>,
)
where
    DMatrix<T>: HeapMatrix<Scalar = T>,
    DVector<T>: HeapMatrix<Scalar = T>,
    RowDVector<T>: HeapMatrix<Scalar = T>,
{
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
pub trait DMatrixConstructors: Sized {
    /// The element type (`f64` or `f32`).
    type Scalar;
    /// Forward rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
    fn from_row_slice_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
        s: Dual<&[Self::Scalar], &[Self::Scalar]>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `DMatrix::from_row_slice(nrows, ncols, s)`.
    #[allow(clippy::type_complexity)]
    fn from_row_slice_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
        s: CoDual<&[Self::Scalar], SharedVec<Self::Scalar>>,
    ) -> (
        CoDual<Self, SharedRef<Self>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<Self>,
    );
    /// Forward rule of `DMatrix::zeros(nrows, ncols)`.
    fn zeros_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `DMatrix::zeros(nrows, ncols)`.
    #[allow(clippy::type_complexity)]
    fn zeros_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<Self>);
    /// Forward rule of `DMatrix::from_element(nrows, ncols, v)`: every entry's tangent `v̇`.
    fn from_element_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
        v: Dual<Self::Scalar, Self::Scalar>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `DMatrix::from_element(nrows, ncols, v)`: `v̄ = Σ ȳ`.
    #[allow(clippy::type_complexity)]
    fn from_element_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
        v: CoDual<Self::Scalar, NoFData>,
    ) -> (
        CoDual<Self, SharedRef<Self>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData, Self::Scalar) + use<Self>,
    );
    /// Forward rule of `DMatrix::identity(nrows, ncols)`: no derivative.
    fn identity_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `DMatrix::identity(nrows, ncols)`: a fresh zero shadow; nothing flows
    /// back.
    #[allow(clippy::type_complexity)]
    fn identity_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<Self>);
}

// `f64` only: with one impl, `DMatrix::zeros(n, n)` in a body infers its element type as the
// primal does (from the `f64` values written into it); an `f32` impl beside it would leave the
// derived code's type unknown.
impl DMatrixConstructors for DMatrix<f64> {
    type Scalar = f64;
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
    ) -> (
        CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
    ) {
        zeros_matrix_rrule(nrows, ncols)
    }
    #[inline]
    fn from_element_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
        v: Dual<f64, f64>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>> {
        let (r, c) = (nrows.primal, ncols.primal);
        Dual::new(DMatrix::from_element(r, c, v.primal), DMatrix::from_element(r, c, v.tangent))
    }
    #[inline]
    fn from_element_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
        v: CoDual<f64, NoFData>,
    ) -> (
        CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData, f64) + use<>,
    ) {
        let (y, dy) = fresh(DMatrix::from_element(nrows.primal, ncols.primal, v.primal));
        (y, move |_: NoRData| (NoRData, NoRData, dy.with(|g| g.sum())))
    }
    #[inline]
    fn identity_frule(
        nrows: Dual<usize, NoTangent>,
        ncols: Dual<usize, NoTangent>,
    ) -> Dual<DMatrix<f64>, DMatrix<f64>> {
        let (r, c) = (nrows.primal, ncols.primal);
        Dual::new(DMatrix::identity(r, c), DMatrix::zeros(r, c))
    }
    #[inline]
    fn identity_rrule(
        nrows: CoDual<usize, NoFData>,
        ncols: CoDual<usize, NoFData>,
    ) -> (
        CoDual<DMatrix<f64>, SharedRef<DMatrix<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData) + use<>,
    ) {
        let y = DMatrix::identity(nrows.primal, ncols.primal);
        (fresh(y).0, |_: NoRData| (NoRData, NoRData))
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
pub trait DVectorConstructors: Sized {
    /// The element type (`f64` or `f32`).
    type Scalar;
    /// Forward rule of `DVector::from_vec(v)`.
    fn from_vec_frule(v: Dual<Vec<Self::Scalar>, Vec<Self::Scalar>>) -> Dual<Self, Self>;
    /// Reverse rule of `DVector::from_vec(v)`.
    #[allow(clippy::type_complexity)]
    fn from_vec_rrule(
        v: CoDual<Vec<Self::Scalar>, SharedVec<Self::Scalar>>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData,) + use<Self>);
    /// Forward rule of `DVector::from_element(n, v)`: every entry's tangent `v̇`.
    fn from_element_frule(
        n: Dual<usize, NoTangent>,
        v: Dual<Self::Scalar, Self::Scalar>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `DVector::from_element(n, v)`: `v̄ = Σ ȳ`.
    #[allow(clippy::type_complexity)]
    fn from_element_rrule(
        n: CoDual<usize, NoFData>,
        v: CoDual<Self::Scalar, NoFData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData, Self::Scalar) + use<Self>);
    /// Forward rule of `DVector::zeros(n)`.
    fn zeros_frule(n: Dual<usize, NoTangent>) -> Dual<Self, Self>;
    /// Reverse rule of `DVector::zeros(n)`.
    fn zeros_rrule(
        n: CoDual<usize, NoFData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData,) + use<Self>);
}

// `f64` only: with one impl, `DMatrix::zeros(n, n)` in a body infers its element type as the
// primal does (from the `f64` values written into it); an `f32` impl beside it would leave the
// derived code's type unknown.
impl DVectorConstructors for DVector<f64> {
    type Scalar = f64;
    #[inline]
    fn from_vec_frule(v: Dual<Vec<f64>, Vec<f64>>) -> Dual<DVector<f64>, DVector<f64>> {
        from_vec_frule(v)
    }
    #[inline]
    fn from_vec_rrule(
        v: CoDual<Vec<f64>, SharedVec<f64>>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,) + use<>)
    {
        from_vec_rrule(v)
    }
    #[inline]
    fn from_element_frule(
        n: Dual<usize, NoTangent>,
        v: Dual<f64, f64>,
    ) -> Dual<DVector<f64>, DVector<f64>> {
        Dual::new(
            DVector::from_element(n.primal, v.primal),
            DVector::from_element(n.primal, v.tangent),
        )
    }
    #[inline]
    fn from_element_rrule(
        n: CoDual<usize, NoFData>,
        v: CoDual<f64, NoFData>,
    ) -> (
        CoDual<DVector<f64>, SharedRef<DVector<f64>>>,
        impl FnOnce(NoRData) -> (NoRData, f64) + use<>,
    ) {
        let (y, dy) = fresh(DVector::from_element(n.primal, v.primal));
        (y, move |_: NoRData| (NoRData, dy.with(|g| g.sum())))
    }
    #[inline]
    fn zeros_frule(n: Dual<usize, NoTangent>) -> Dual<DVector<f64>, DVector<f64>> {
        zeros_vector_frule(n)
    }
    #[inline]
    fn zeros_rrule(
        n: CoDual<usize, NoFData>,
    ) -> (CoDual<DVector<f64>, SharedRef<DVector<f64>>>, impl FnOnce(NoRData) -> (NoRData,) + use<>)
    {
        zeros_vector_rrule(n)
    }
}
