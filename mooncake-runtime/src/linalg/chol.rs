//! Cholesky solve and log-determinant of a symmetric positive definite matrix: the
//! statistician's API (feature `nalgebra`, issue 15).
//!
//! nalgebra's own `a.clone().cholesky()` returns an `Option<Cholesky>`, which derived code cannot
//! carry through its rules. So the runtime offers the two results a model needs as functions of
//! the matrix, each computed with **one** call of nalgebra's factorisation (not a differentiated
//! loop), with rules in both modes:
//!
//! * [`cholesky_solve`]`(&a, &b)`: `x = A⁻¹ b`, for `b` a `DVector<f64>` or a `DMatrix<f64>`
//!   (several right-hand sides), and [`cholesky_logdet`]`(&a)`: `log det A`. In a
//!   `#[differentiable]` body call them by name, with the module's items in scope
//!   (`use mooncake_runtime::linalg::chol::*;` brings the functions and their rules
//!   `cholesky_solve_frule` / `_rrule`, which the derived call names).
//! * The same as methods of `DMatrix<f64>` through the extension trait [`CholeskyExt`]
//!   (`a.cholesky_solve(&b)` for a vector `b`, `a.cholesky_logdet()`), dispatched from derived
//!   code in both modes like nalgebra's own methods.
//!
//! **Symmetry.** nalgebra's factorisation reads only the lower triangle. These functions read
//! `A` as its symmetric part `(A + Aᵀ) / 2` instead (equal to `A` for a symmetric input, one
//! `O(n²)` copy beside the `O(n³)` factorisation), so they are functions of every entry and the
//! gradients are the symmetric ones: for `x = A⁻¹ b`, `b̄ = A⁻¹ x̄` and
//! `Ā = -(b̄ xᵀ + x b̄ᵀ) / 2`; for `log det A`, `Ā = ȳ A⁻¹`. Finite differences in any direction
//! (symmetric or not) agree with them.
//!
//! **No panics.** A matrix that is not square, not positive definite (the factorisation fails),
//! or a right-hand side whose row count differs, gives `NaN` results (every entry of `x`, or the
//! log-determinant) and `NaN` derivatives, as `f64::sqrt` of a negative number does.

// Rule signatures spell out the rule interface.
#![allow(clippy::type_complexity)]

use super::HeapMatrix;
use crate::dual::{CoDual, Dual, NoFData, NoRData};
use crate::shared::SharedRef;
use nalgebra::{Cholesky, DMatrix, DMatrixView, DMatrixViewMut, DVector, Dyn};

/// The factorisation of `(A + Aᵀ) / 2`, or `None` if `A` is not square or that matrix is not
/// positive definite.
fn factor(a: &DMatrix<f64>) -> Option<Cholesky<f64, Dyn>> {
    if !a.is_square() {
        return None;
    }
    let mut s = a.transpose();
    s += a;
    s *= 0.5;
    Cholesky::new(s)
}

/// `b` seen as the `n x k` matrix of its entries (column-major).
fn as_matrix<B: HeapMatrix<Scalar = f64>>(b: &B) -> DMatrixView<'_, f64> {
    let (r, c) = b.dims();
    DMatrixView::from_slice(b.entries(), r, c)
}

/// `b` seen as the `n x k` matrix of its entries, mutably.
fn as_matrix_mut<B: HeapMatrix<Scalar = f64>>(b: &mut B) -> DMatrixViewMut<'_, f64> {
    let (r, c) = b.dims();
    DMatrixViewMut::from_slice(b.entries_mut(), r, c)
}

/// `A⁻¹ b` with the factor, or `None` if the shapes do not fit.
fn solve_with<B: HeapMatrix<Scalar = f64>>(chol: &Cholesky<f64, Dyn>, b: &B) -> Option<B> {
    if chol.l_dirty().nrows() != b.dims().0 {
        return None;
    }
    let mut x = b.clone();
    chol.solve_mut(&mut as_matrix_mut(&mut x));
    Some(x)
}

/// A copy of `b` with every entry `NaN`.
fn nan_like<B: HeapMatrix<Scalar = f64>>(b: &B) -> B {
    let mut y = b.zeros_like();
    y.add_to_all(f64::NAN);
    y
}

/// `d += alpha (u vᵀ + v uᵀ) / 2` for `n x k` matrices `u`, `v` (two `gemm`s).
fn add_sym_outer<B: HeapMatrix<Scalar = f64>>(d: &mut DMatrix<f64>, alpha: f64, u: &B, v: &B) {
    let (u, v) = (as_matrix(u), as_matrix(v));
    d.gemm(0.5 * alpha, &u, &v.transpose(), 1.0);
    d.gemm(0.5 * alpha, &v, &u.transpose(), 1.0);
}

/// `x = A⁻¹ b` for a symmetric positive definite `A` (read as `(A + Aᵀ) / 2`), by one Cholesky
/// factorisation; `b` is a `DVector<f64>` (one right-hand side) or a `DMatrix<f64>` (several).
/// `NaN` entries if `A` is not square, not positive definite, or has another row count than `b`.
///
/// ```
/// use mooncake_runtime::linalg::chol::cholesky_solve;
/// use nalgebra::{DMatrix, DVector};
/// let a = DMatrix::from_row_slice(2, 2, &[4.0, 1.0, 1.0, 3.0]);
/// let b = DVector::from_vec(vec![1.0, 2.0]);
/// let x = cholesky_solve(&a, &b);
/// assert!((&a * &x - &b).norm() < 1e-12);
/// assert!(cholesky_solve(&(-a), &b).iter().all(|v| v.is_nan()));
/// ```
pub fn cholesky_solve<B: HeapMatrix<Scalar = f64>>(a: &DMatrix<f64>, b: &B) -> B {
    factor(a).and_then(|c| solve_with(&c, b)).unwrap_or_else(|| nan_like(b))
}

/// `log det A` for a symmetric positive definite `A` (read as `(A + Aᵀ) / 2`): twice the sum of
/// the logarithms of the Cholesky factor's diagonal. `NaN` if `A` is not square or not positive
/// definite.
///
/// ```
/// use mooncake_runtime::linalg::chol::cholesky_logdet;
/// use nalgebra::DMatrix;
/// let a = DMatrix::from_row_slice(2, 2, &[4.0, 1.0, 1.0, 3.0]);
/// assert!((cholesky_logdet(&a) - 11f64.ln()).abs() < 1e-12);
/// assert!(cholesky_logdet(&DMatrix::from_element(2, 2, 1.0)).is_nan());
/// ```
pub fn cholesky_logdet(a: &DMatrix<f64>) -> f64 {
    factor(a).map_or(f64::NAN, |c| logdet_of(&c))
}

fn logdet_of(chol: &Cholesky<f64, Dyn>) -> f64 {
    2.0 * chol.l_dirty().diagonal().iter().map(|d| d.ln()).sum::<f64>()
}

/// The two functions as methods of `DMatrix<f64>` (`a.cholesky_solve(&b)`, `a.cholesky_logdet()`),
/// which `#[differentiable]` bodies dispatch to their rules in both modes. The method takes a
/// vector right-hand side; for several, call [`cholesky_solve`] with a `DMatrix`.
///
/// ```
/// use mooncake_runtime::linalg::chol::CholeskyExt;
/// use nalgebra::{DMatrix, DVector};
/// let a = DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 0.0, 8.0]);
/// let x = a.cholesky_solve(&DVector::from_vec(vec![2.0, 4.0]));
/// assert!((x - DVector::from_vec(vec![1.0, 0.5])).norm() < 1e-12);
/// assert!((a.cholesky_logdet() - 16f64.ln()).abs() < 1e-12);
/// ```
pub trait CholeskyExt {
    /// `A⁻¹ b`: [`cholesky_solve`].
    fn cholesky_solve(&self, b: &DVector<f64>) -> DVector<f64>;
    /// `log det A`: [`cholesky_logdet`].
    fn cholesky_logdet(&self) -> f64;
}

impl CholeskyExt for DMatrix<f64> {
    #[inline]
    fn cholesky_solve(&self, b: &DVector<f64>) -> DVector<f64> {
        cholesky_solve(self, b)
    }
    #[inline]
    fn cholesky_logdet(&self) -> f64 {
        cholesky_logdet(self)
    }
}

/// Forward rule of [`cholesky_solve`]: `dx = A⁻¹ (db - sym(dA) x)`, one factorisation and one
/// solve of the tangent.
pub fn cholesky_solve_frule<B: HeapMatrix<Scalar = f64>>(
    a: Dual<&DMatrix<f64>, &DMatrix<f64>>,
    b: Dual<&B, &B>,
) -> Dual<B, B> {
    let Some((chol, x)) = factor(a.primal).and_then(|c| solve_with(&c, b.primal).map(|x| (c, x)))
    else {
        return Dual::new(nan_like(b.primal), nan_like(b.primal));
    };
    // r = db - (dA x + dAᵀ x) / 2
    let mut r = b.tangent.clone();
    {
        let xv = as_matrix(&x);
        let mut rv = as_matrix_mut(&mut r);
        rv.gemm(-0.5, a.tangent, &xv, 1.0);
        rv.gemm_tr(-0.5, a.tangent, &xv, 1.0);
    }
    chol.solve_mut(&mut as_matrix_mut(&mut r));
    Dual::new(x, r)
}

/// Reverse rule of [`cholesky_solve`]: with `w = A⁻¹ x̄` (one solve with the kept factor),
/// `b̄ += w`, `Ā -= (w xᵀ + x wᵀ) / 2`.
pub fn cholesky_solve_rrule<B: HeapMatrix<Scalar = f64>>(
    a: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
    b: CoDual<&B, SharedRef<B>>,
) -> (CoDual<B, SharedRef<B>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<B>) {
    let solved = factor(a.primal).and_then(|c| solve_with(&c, b.primal).map(|x| (c, x)));
    let y = match &solved {
        Some((_, x)) => x.clone(),
        None => nan_like(b.primal),
    };
    let s = SharedRef::new(y.zeros_like());
    let out = CoDual::new(y, s.clone());
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        match solved {
            Some((chol, x)) => {
                let mut w = s.with(Clone::clone);
                chol.solve_mut(&mut as_matrix_mut(&mut w));
                db.accumulate(|d| d.add_scaled(1.0, &w));
                da.accumulate(|d| add_sym_outer(d, -1.0, &w, &x));
            }
            None => {
                db.accumulate(|d| d.add_to_all(f64::NAN));
                da.accumulate(|d| d.add_to_all(f64::NAN));
            }
        }
        (NoRData, NoRData)
    };
    (out, pullback)
}

/// Forward rule of [`cholesky_logdet`]: `tr(A⁻¹ dA) = <A⁻¹, dA>`.
pub fn cholesky_logdet_frule(a: Dual<&DMatrix<f64>, &DMatrix<f64>>) -> Dual<f64, f64> {
    match factor(a.primal) {
        Some(chol) => Dual::new(logdet_of(&chol), chol.inverse().dot(a.tangent)),
        None => Dual::new(f64::NAN, f64::NAN),
    }
}

/// Reverse rule of [`cholesky_logdet`]: `Ā += ȳ A⁻¹` (the inverse from the kept factor, formed
/// in the pullback).
pub fn cholesky_logdet_rrule(
    a: CoDual<&DMatrix<f64>, SharedRef<DMatrix<f64>>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<>) {
    let chol = factor(a.primal);
    let y = chol.as_ref().map_or(f64::NAN, logdet_of);
    let da = a.fdata;
    let pullback = move |y_bar: f64| {
        match chol {
            Some(chol) => da.accumulate(|d| d.add_scaled(y_bar, &chol.inverse())),
            None => da.accumulate(|d| d.add_to_all(f64::NAN)),
        }
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}
