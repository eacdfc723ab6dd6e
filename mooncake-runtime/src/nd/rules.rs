//! Rules of ndarray's owned arrays, both modes side by side. Each computes its value and its
//! derivative with ndarray's own kernels (`dot`, `general_mat_mul`, `general_mat_vec_mul`,
//! `scaled_add`, the arithmetic operators, `Zip`, `sum`): no rule loops over elements.
//!
//! Arguments come as the rules of buffers take them: arrays behind references
//! (`Dual<&A, &A>`, `CoDual<&A, SharedRef<A>>`), scalars and indices by value. An array result
//! has a fresh zero shadow, which the pullback reads. Pullbacks capture no borrow: they keep a
//! copy of the primal arrays they need (`+ use<..>` without lifetimes).
//!
//! The rules do not broadcast: operands of element-wise rules must have equal shapes (a panic
//! naming the operation and both shapes otherwise), and products must have matching inner
//! dimensions (ndarray's own panic).
//!
//! **Views.** ndarray's `a.t()`, `a.row(i)` and `a.column(j)` return views. Derived code holds no
//! views: their rules ([`t_frule`], [`row_frule`], [`column_frule`]) return owned arrays (a copy),
//! so that `let b = a.t();` in a `#[differentiable]` body is an `Array2` in the derived rules
//! (the primal keeps its view). A body that names the view's type (`let b: ArrayView2<f64> =
//! a.t();`) does not compile in derived code.

// Rule signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use super::{NdScalar, assert_shapes, inner, zeros_like};
use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::shared::{SharedRef, SharedVec};
use crate::tangent::Primal;
use ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use ndarray::{
    Array, Array1, Array2, ArrayViewMut, ArrayViewMut1, Axis, Dimension, NdIndex, ShapeBuilder,
    ShapeError, Zip,
};

/// An array result of a reverse rule with a fresh zero shadow, and a handle on that shadow for
/// the pullback.
fn fresh<F: NdScalar, D: Dimension + 'static>(
    y: Array<F, D>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, SharedRef<Array<F, D>>) {
    let s = SharedRef::new(zeros_like(&y));
    (CoDual::new(y, s.clone()), s)
}

// ---------------------------------------------------------------------------------------------
// `a.sum()`.

/// Forward rule of `a.sum()`: `da.sum()`.
pub fn sum_frule<F: NdScalar, D: Dimension>(a: Dual<&Array<F, D>, &Array<F, D>>) -> Dual<F, F> {
    Dual::new(a.primal.sum(), a.tangent.sum())
}

/// Reverse rule of `a.sum()`: `ȳ` added to every entry of `ā`.
pub fn sum_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (NoRData,) + use<F, D>) {
    let y = a.primal.sum();
    let da = a.fdata;
    let pullback = move |y_bar: F| {
        da.accumulate(|d| *d += y_bar);
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// `a.mean().unwrap()` (derived code's `a.__mean()`).

/// Forward rule of `a.mean().unwrap()`: the means of `a` and `ȧ`.
///
/// # Panics
/// If `a` is empty, as `a.mean().unwrap()` does.
pub fn mean_frule<F: NdScalar, D: Dimension>(a: Dual<&Array<F, D>, &Array<F, D>>) -> Dual<F, F> {
    let n = nonempty_len(a.primal);
    Dual::new(a.primal.sum() / n, a.tangent.sum() / n)
}

/// Reverse rule of `a.mean().unwrap()`: `ȳ / n` added to every entry of `ā`.
///
/// # Panics
/// If `a` is empty, as `a.mean().unwrap()` does.
pub fn mean_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (NoRData,) + use<F, D>) {
    let n = nonempty_len(a.primal);
    let y = a.primal.sum() / n;
    let da = a.fdata;
    let pullback = move |y_bar: F| {
        da.accumulate(|d| *d += y_bar / n);
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// The number of elements of `a`, as `F`.
///
/// # Panics
/// If `a` is empty, with the message of `a.mean().unwrap()`.
#[track_caller]
fn nonempty_len<F: NdScalar, D: Dimension>(a: &Array<F, D>) -> F {
    assert!(
        !a.is_empty(),
        "called `Option::unwrap()` on a `None` value: the mean of an empty array"
    );
    F::from_f64(a.len() as f64)
}

// ---------------------------------------------------------------------------------------------
// Element-wise: `a + b`, `a - b`, `a * b`, `-a`, `a * s`.

/// Forward rule of `a + b` (equal shapes).
///
/// # Panics
/// If the shapes differ.
pub fn add_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    b: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    assert_shapes(a.primal, b.primal, "`+`");
    Dual::new(a.primal + b.primal, a.tangent + b.tangent)
}

/// Reverse rule of `a + b`: `ā += ȳ`, `b̄ += ȳ`.
///
/// # Panics
/// If the shapes differ.
pub fn add_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    b: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F, D>,
) {
    assert_shapes(a.primal, b.primal, "`+`");
    let (y, dy) = fresh(a.primal + b.primal);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| *d += g);
            db.accumulate(|d| *d += g);
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a - b` (equal shapes).
///
/// # Panics
/// If the shapes differ.
pub fn sub_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    b: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    assert_shapes(a.primal, b.primal, "`-`");
    Dual::new(a.primal - b.primal, a.tangent - b.tangent)
}

/// Reverse rule of `a - b`: `ā += ȳ`, `b̄ -= ȳ`.
///
/// # Panics
/// If the shapes differ.
pub fn sub_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    b: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F, D>,
) {
    assert_shapes(a.primal, b.primal, "`-`");
    let (y, dy) = fresh(a.primal - b.primal);
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| *d += g);
            db.accumulate(|d| *d -= g);
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of the element-wise product `a * b` (equal shapes): `da ∘ b + a ∘ db`.
///
/// # Panics
/// If the shapes differ.
pub fn mul_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    b: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    assert_shapes(a.primal, b.primal, "the element-wise `*`");
    let y = a.primal * b.primal;
    let t = Zip::from(a.tangent)
        .and(b.primal)
        .and(a.primal)
        .and(b.tangent)
        .map_collect(|&da, &b, &a, &db| da * b + a * db);
    Dual::new(y, t)
}

/// Reverse rule of the element-wise product `a * b`: `ā += ȳ ∘ b`, `b̄ += ȳ ∘ a`.
///
/// # Panics
/// If the shapes differ.
pub fn mul_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    b: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F, D>,
) {
    assert_shapes(a.primal, b.primal, "the element-wise `*`");
    let (y, dy) = fresh(a.primal * b.primal);
    let (pa, pb) = (a.primal.clone(), b.primal.clone());
    let (da, db) = (a.fdata, b.fdata);
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| Zip::from(d).and(g).and(&pb).for_each(|d, &g, &b| *d += g * b));
            db.accumulate(|d| Zip::from(d).and(g).and(&pa).for_each(|d, &g, &a| *d += g * a));
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `-a`.
pub fn neg_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    Dual::new(-a.primal.clone(), -a.tangent.clone())
}

/// Reverse rule of `-a`: `ā -= ȳ`.
pub fn neg_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData,) + use<F, D>) {
    let (y, dy) = fresh(-a.primal.clone());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| *d -= g));
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `a * s` (and `s * a`) for a scalar `s`: `da s + a ds`.
pub fn scale_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    s: Dual<F, F>,
) -> Dual<Array<F, D>, Array<F, D>> {
    let y = a.primal * s.primal;
    let mut t = a.tangent * s.primal;
    t.scaled_add(s.tangent, a.primal);
    Dual::new(y, t)
}

/// Reverse rule of `a * s`: `ā += s ȳ`, `s̄ = <a, ȳ>`.
pub fn scale_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    s: CoDual<F, NoFData>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData, F) + use<F, D>)
{
    let (y, dy) = fresh(a.primal * s.primal);
    let pa = a.primal.clone();
    let (da, s) = (a.fdata, s.primal);
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.scaled_add(s, g));
            inner(&pa, g)
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

/// Forward rule of `ca a + cs s` for a scalar `s` added to every entry (ndarray's `a + s`,
/// `a - s`, `s - a`, `s + a`: `ca`, `cs` are `±1`): `ca da + cs ds`.
pub fn shift_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    s: Dual<F, F>,
    ca: F,
    cs: F,
) -> Dual<Array<F, D>, Array<F, D>> {
    let y = a.primal.mapv(|v| ca * v + cs * s.primal);
    let t = a.tangent.mapv(|v| ca * v + cs * s.tangent);
    Dual::new(y, t)
}

/// Reverse rule of `ca a + cs s` (see [`shift_frule`]): `ā += ca ȳ`, `s̄ = cs Σ ȳ`.
pub fn shift_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    s: CoDual<F, NoFData>,
    ca: F,
    cs: F,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData, F) + use<F, D>)
{
    let (y, dy) = fresh(a.primal.mapv(|v| ca * v + cs * s.primal));
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.scaled_add(ca, g));
            cs * g.sum()
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

/// `Axis(k)` in derived code: ndarray's axis index, a value without derivative (its rules
/// `axis_frule` / `axis_rrule`); `#[differentiable]` writes `Axis(k)` as a call of it.
#[inline]
pub fn axis(k: usize) -> Axis {
    Axis(k)
}

/// Forward rule of [`axis`]: no derivative.
#[inline]
pub fn axis_frule(k: Dual<usize, NoTangent>) -> Dual<Axis, NoTangent> {
    Dual::new(Axis(k.primal), NoTangent)
}

/// Reverse rule of [`axis`]: nothing flows back.
#[inline]
pub fn axis_rrule(
    k: CoDual<usize, NoFData>,
) -> (CoDual<Axis, NoFData>, impl FnOnce(NoRData) -> (NoRData,) + use<>) {
    (CoDual::new(Axis(k.primal), NoFData), |_: NoRData| (NoRData,))
}

/// Forward rule of `a.sum_axis(axis)` of a 2-d array: the sums along `axis` of `a` and of `ȧ`.
///
/// # Panics
/// If `axis` is not 0 or 1, as `sum_axis` does.
pub fn sum_axis_frule<F: NdScalar>(
    a: Dual<&Array2<F>, &Array2<F>>,
    axis: Dual<Axis, NoTangent>,
) -> Dual<Array1<F>, Array1<F>> {
    Dual::new(a.primal.sum_axis(axis.primal), a.tangent.sum_axis(axis.primal))
}

/// Reverse rule of `a.sum_axis(axis)`: `ȳ` broadcast along `axis` and added into `ā`.
///
/// # Panics
/// If `axis` is not 0 or 1, as `sum_axis` does.
pub fn sum_axis_rrule<F: NdScalar>(
    a: CoDual<&Array2<F>, SharedRef<Array2<F>>>,
    axis: CoDual<Axis, NoFData>,
) -> (CoDual<Array1<F>, SharedRef<Array1<F>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>)
{
    let axis = axis.primal;
    let (y, dy) = fresh(a.primal.sum_axis(axis));
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| {
                let dim = d.raw_dim();
                if let Some(b) = g.view().insert_axis(axis).broadcast(dim) {
                    *d += &b;
                }
            })
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a / s` for a scalar `s`: `da / s - a ds / s²`.
pub fn div_scalar_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    s: Dual<F, F>,
) -> Dual<Array<F, D>, Array<F, D>> {
    let y = a.primal / s.primal;
    let mut t = a.tangent / s.primal;
    t.scaled_add(-s.tangent / s.primal, &y);
    Dual::new(y, t)
}

/// Reverse rule of `a / s`: `ā += ȳ / s`, `s̄ = -<y, ȳ> / s` (with `y = a / s`).
pub fn div_scalar_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    s: CoDual<F, NoFData>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData, F) + use<F, D>)
{
    let py = a.primal / s.primal;
    let (y, dy) = fresh(py.clone());
    let (da, s) = (a.fdata, s.primal);
    let pullback = move |_: NoRData| {
        let s_bar = dy.with(|g| {
            da.accumulate(|d| d.scaled_add(Float::recip(s), g));
            -inner(&py, g) / s
        });
        (NoRData, s_bar)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Element-wise float methods of ndarray (`a.exp()`, `a.tanh()`, `a.powi(n)`, ...): what
// `a.mapv(f64::exp)` computes, as a method derived code can dispatch (see [`super`]).

macro_rules! elementwise {
    ($($name:ident $frule:ident $rrule:ident: |$x:ident, $y:ident| $d:expr;)*) => {$(
        #[doc = concat!("Forward rule of ndarray's element-wise `a.", stringify!($name), "()`: ")]
        #[doc = concat!("`ẏ = ", stringify!($d), " ẋ` at each entry (`x` the entry, `y` its image).")]
        #[allow(unused_variables)]
        pub fn $frule<F: NdScalar, D: Dimension>(
            a: Dual<&Array<F, D>, &Array<F, D>>,
        ) -> Dual<Array<F, D>, Array<F, D>> {
            let y = a.primal.$name();
            let t = Zip::from(a.primal)
                .and(&y)
                .and(a.tangent)
                .map_collect(|&$x, &$y, &t| Float::mul_guarded($d, t));
            Dual::new(y, t)
        }

        #[doc = concat!("Reverse rule of ndarray's element-wise `a.", stringify!($name), "()`: ")]
        #[doc = concat!("`x̄ += ", stringify!($d), " ȳ` at each entry.")]
        #[allow(unused_variables)]
        pub fn $rrule<F: NdScalar, D: Dimension + 'static>(
            a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
        ) -> (
            CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
            impl FnOnce(NoRData) -> (NoRData,) + use<F, D>,
        ) {
            let py = a.primal.$name();
            let px = a.primal.clone();
            let (y, dy) = fresh(py.clone());
            let da = a.fdata;
            let pullback = move |_: NoRData| {
                dy.with(|g| {
                    da.accumulate(|d| {
                        Zip::from(d).and(g).and(&px).and(&py).for_each(|d, &g, &$x, &$y| {
                            *d += Float::mul_guarded($d, g)
                        })
                    })
                });
                (NoRData,)
            };
            (y, pullback)
        }
    )*};
}

elementwise! {
    exp exp_frule exp_rrule: |x, y| y;
    ln ln_frule ln_rrule: |x, y| Float::recip(x);
    sqrt sqrt_frule sqrt_rrule: |x, y| Float::recip(y + y);
    sin sin_frule sin_rrule: |x, y| Float::cos(x);
    cos cos_frule cos_rrule: |x, y| -Float::sin(x);
    tanh tanh_frule tanh_rrule: |x, y| F::ONE - y * y;
    abs abs_frule abs_rrule: |x, y| crate::rules::scalar::sign_or_zero(x);
    recip recip_frule recip_rrule: |x, y| -(y * y);
    pow2 pow2_frule pow2_rrule: |x, y| x + x;
}

/// Forward rule of ndarray's element-wise `a.powi(n)`: `ẏ = n x^(n-1) ẋ` at each entry.
pub fn powi_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    n: Dual<i32, NoTangent>,
) -> Dual<Array<F, D>, Array<F, D>> {
    let n = n.primal;
    let y = a.primal.powi(n);
    let t = Zip::from(a.primal)
        .and(a.tangent)
        .map_collect(|&x, &t| Float::mul_guarded(F::from_i32(n) * Float::powi(x, n - 1), t));
    Dual::new(y, t)
}

/// Reverse rule of ndarray's element-wise `a.powi(n)`: `x̄ += n x^(n-1) ȳ` at each entry.
pub fn powi_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    n: CoDual<i32, NoFData>,
) -> (
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F, D>,
) {
    let n = n.primal;
    let (y, dy) = fresh(a.primal.powi(n));
    let px = a.primal.clone();
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| {
            da.accumulate(|d| {
                Zip::from(d).and(g).and(&px).for_each(|d, &g, &x| {
                    *d += Float::mul_guarded(F::from_i32(n) * Float::powi(x, n - 1), g)
                })
            })
        });
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// `a.t()`: an owned transpose in derived code.

/// Forward rule of `a.t()`, an owned array (ndarray's `t()` is a view; see the module's
/// documentation).
pub fn t_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    Dual::new(a.primal.t().to_owned(), a.tangent.t().to_owned())
}

/// Reverse rule of `a.t()`: `ā += ȳᵀ`.
pub fn t_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData,) + use<F, D>) {
    let (y, dy) = fresh(a.primal.t().to_owned());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| *d += &g.t()));
        (NoRData,)
    };
    (y, pullback)
}

/// Forward rule of `a.to_owned()`: a copy (in derived code the views of `a.t()`, `a.row(i)`,
/// `a.column(j)` are already owned, and `to_owned` of them copies again).
pub fn to_owned_frule<F: NdScalar, D: Dimension>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
) -> Dual<Array<F, D>, Array<F, D>> {
    Dual::new(a.primal.to_owned(), a.tangent.to_owned())
}

/// Reverse rule of `a.to_owned()`: `ā += ȳ`.
pub fn to_owned_rrule<F: NdScalar, D: Dimension + 'static>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (NoRData,) + use<F, D>) {
    let (y, dy) = fresh(a.primal.to_owned());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| *d += g));
        (NoRData,)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// `a.dot(&b)`: vector-vector, matrix-vector, vector-matrix, matrix-matrix.

/// `a.dot(&b)` for `a: Self`, `b: R`: the four products of ndarray's `dot` (`Array1 · Array1`,
/// `Array2 · Array1`, `Array1 · Array2`, `Array2 · Array2`), each rule one or two of ndarray's
/// kernels (`dot`, `general_mat_vec_mul`, `general_mat_mul`). [`dot_frule`] and [`dot_rrule`]
/// are the rules by name.
pub trait NdDot<R>: Sized {
    /// The product's type: the scalar for two vectors, else an array.
    type Output: Primal<Tangent = Self::Output>;
    /// The forward rule.
    fn dot_frule(a: Dual<&Self, &Self>, b: Dual<&R, &R>) -> Dual<Self::Output, Self::Output>;
    /// The reverse rule.
    fn dot_rrule(
        a: CoDual<&Self, SharedRef<Self>>,
        b: CoDual<&R, SharedRef<R>>,
    ) -> (
        CoDual<Self::Output, <Self::Output as Primal>::FData>,
        impl FnOnce(<Self::Output as Primal>::RData) -> (NoRData, NoRData) + use<Self, R>,
    );
}

/// Forward rule of `a.dot(&b)` (the four forms of [`NdDot`]).
///
/// # Panics
/// If the inner dimensions differ, as ndarray's `dot` does.
pub fn dot_frule<A: NdDot<R>, R>(a: Dual<&A, &A>, b: Dual<&R, &R>) -> Dual<A::Output, A::Output> {
    A::dot_frule(a, b)
}

/// Reverse rule of `a.dot(&b)` (the four forms of [`NdDot`]).
///
/// # Panics
/// If the inner dimensions differ, as ndarray's `dot` does.
pub fn dot_rrule<A: NdDot<R>, R>(
    a: CoDual<&A, SharedRef<A>>,
    b: CoDual<&R, SharedRef<R>>,
) -> (
    CoDual<A::Output, <A::Output as Primal>::FData>,
    impl FnOnce(<A::Output as Primal>::RData) -> (NoRData, NoRData) + use<A, R>,
) {
    A::dot_rrule(a, b)
}

/// `a` as a one-column matrix view.
fn as_column<F>(a: &Array1<F>) -> ndarray::ArrayView2<'_, F> {
    a.view().insert_axis(Axis(1))
}

/// `a` as a one-row matrix view.
fn as_row<F>(a: &Array1<F>) -> ndarray::ArrayView2<'_, F> {
    a.view().insert_axis(Axis(0))
}

/// Vector-vector: `y = a · b`; `ȧ·b + a·ḃ`; `ā += ȳ b`, `b̄ += ȳ a`.
impl<F: NdScalar> NdDot<Array1<F>> for Array1<F> {
    type Output = F;
    fn dot_frule(a: Dual<&Self, &Self>, b: Dual<&Self, &Self>) -> Dual<F, F> {
        Dual::new(a.primal.dot(b.primal), a.tangent.dot(b.primal) + a.primal.dot(b.tangent))
    }
    fn dot_rrule(
        a: CoDual<&Self, SharedRef<Self>>,
        b: CoDual<&Self, SharedRef<Self>>,
    ) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (NoRData, NoRData) + use<F>) {
        let y = a.primal.dot(b.primal);
        let (pa, pb) = (a.primal.clone(), b.primal.clone());
        let (da, db) = (a.fdata, b.fdata);
        let pullback = move |y_bar: F| {
            da.accumulate(|d| d.scaled_add(y_bar, &pb));
            db.accumulate(|d| d.scaled_add(y_bar, &pa));
            (NoRData, NoRData)
        };
        (CoDual::new(y, NoFData), pullback)
    }
}

/// Matrix-vector: `y = M x`; `Ṁ x + M ẋ`; `M̄ += ȳ xᵀ`, `x̄ += Mᵀ ȳ`.
impl<F: NdScalar> NdDot<Array1<F>> for Array2<F> {
    type Output = Array1<F>;
    fn dot_frule(
        m: Dual<&Self, &Self>,
        x: Dual<&Array1<F>, &Array1<F>>,
    ) -> Dual<Array1<F>, Array1<F>> {
        let y = m.primal.dot(x.primal);
        let mut t = m.tangent.dot(x.primal);
        general_mat_vec_mul(F::ONE, m.primal, x.tangent, F::ONE, &mut t);
        Dual::new(y, t)
    }
    fn dot_rrule(
        m: CoDual<&Self, SharedRef<Self>>,
        x: CoDual<&Array1<F>, SharedRef<Array1<F>>>,
    ) -> (
        CoDual<Array1<F>, SharedRef<Array1<F>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>,
    ) {
        let (y, dy) = fresh(m.primal.dot(x.primal));
        let (pm, px) = (m.primal.clone(), x.primal.clone());
        let (dm, dx) = (m.fdata, x.fdata);
        let pullback = move |_: NoRData| {
            dy.with(|g| {
                dm.accumulate(|d| general_mat_mul(F::ONE, &as_column(g), &as_row(&px), F::ONE, d));
                dx.accumulate(|d| general_mat_vec_mul(F::ONE, &pm.t(), g, F::ONE, d));
            });
            (NoRData, NoRData)
        };
        (y, pullback)
    }
}

/// Vector-matrix: `y = xᵀ M`; `ẋᵀ M + xᵀ Ṁ`; `x̄ += M ȳ`, `M̄ += x ȳᵀ`.
impl<F: NdScalar> NdDot<Array2<F>> for Array1<F> {
    type Output = Array1<F>;
    fn dot_frule(
        x: Dual<&Self, &Self>,
        m: Dual<&Array2<F>, &Array2<F>>,
    ) -> Dual<Array1<F>, Array1<F>> {
        let y = x.primal.dot(m.primal);
        let mut t = x.tangent.dot(m.primal);
        general_mat_vec_mul(F::ONE, &m.tangent.t(), x.primal, F::ONE, &mut t);
        Dual::new(y, t)
    }
    fn dot_rrule(
        x: CoDual<&Self, SharedRef<Self>>,
        m: CoDual<&Array2<F>, SharedRef<Array2<F>>>,
    ) -> (
        CoDual<Array1<F>, SharedRef<Array1<F>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>,
    ) {
        let (y, dy) = fresh(x.primal.dot(m.primal));
        let (px, pm) = (x.primal.clone(), m.primal.clone());
        let (dx, dm) = (x.fdata, m.fdata);
        let pullback = move |_: NoRData| {
            dy.with(|g| {
                dx.accumulate(|d| general_mat_vec_mul(F::ONE, &pm, g, F::ONE, d));
                dm.accumulate(|d| general_mat_mul(F::ONE, &as_column(&px), &as_row(g), F::ONE, d));
            });
            (NoRData, NoRData)
        };
        (y, pullback)
    }
}

/// Matrix-matrix: `C = A B`; `Ȧ B + A Ḃ`; `Ā += C̄ Bᵀ`, `B̄ += Aᵀ C̄`.
impl<F: NdScalar> NdDot<Array2<F>> for Array2<F> {
    type Output = Array2<F>;
    fn dot_frule(a: Dual<&Self, &Self>, b: Dual<&Self, &Self>) -> Dual<Array2<F>, Array2<F>> {
        let y = a.primal.dot(b.primal);
        let mut t = a.tangent.dot(b.primal);
        general_mat_mul(F::ONE, a.primal, b.tangent, F::ONE, &mut t);
        Dual::new(y, t)
    }
    fn dot_rrule(
        a: CoDual<&Self, SharedRef<Self>>,
        b: CoDual<&Self, SharedRef<Self>>,
    ) -> (
        CoDual<Array2<F>, SharedRef<Array2<F>>>,
        impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>,
    ) {
        let (y, dy) = fresh(a.primal.dot(b.primal));
        let (da, db) = (a.fdata, b.fdata);
        // Each copy only where the other side's gradient is wanted (`SharedRef::is_live`).
        let pa = db.is_live().then(|| a.primal.clone());
        let pb = da.is_live().then(|| b.primal.clone());
        let pullback = move |_: NoRData| {
            dy.with(|g| {
                if let Some(pb) = pb {
                    da.accumulate(|d| general_mat_mul(F::ONE, g, &pb.t(), F::ONE, d));
                }
                if let Some(pa) = pa {
                    db.accumulate(|d| general_mat_mul(F::ONE, &pa.t(), g, F::ONE, d));
                }
            });
            (NoRData, NoRData)
        };
        (y, pullback)
    }
}

// ---------------------------------------------------------------------------------------------
// Indexed reads: `a[i]`, `a[[i, j]]`, `a[(i, j)]`.

/// Forward rule of the read `a[i]` (any index ndarray accepts for the dimension: `usize` for an
/// `Array1`, `[usize; 2]` or `(usize, usize)` for an `Array2`).
///
/// # Panics
/// If the index is out of bounds, as `a[i]` does.
pub fn index_frule<F: NdScalar, D: Dimension, I: NdIndex<D> + Primal + Clone>(
    a: Dual<&Array<F, D>, &Array<F, D>>,
    i: Dual<I, I::Tangent>,
) -> Dual<F, F> {
    let i = i.primal;
    Dual::new(a.primal[i.clone()], a.tangent[i])
}

/// Reverse rule of the read `a[i]`: `ā[i] += ȳ`.
///
/// # Panics
/// If the index is out of bounds, as `a[i]` does.
pub fn index_rrule<
    F: NdScalar,
    D: Dimension + 'static,
    I: NdIndex<D> + Primal + Clone + 'static,
>(
    a: CoDual<&Array<F, D>, SharedRef<Array<F, D>>>,
    i: CoDual<I, I::FData>,
) -> (CoDual<F, NoFData>, impl FnOnce(F) -> (NoRData, I::RData) + use<F, D, I>) {
    let i = i.primal;
    let y = a.primal[i.clone()];
    let da = a.fdata;
    let pullback = move |y_bar: F| {
        let r = i.zero_rdata();
        da.accumulate(|d| d[i] += y_bar);
        (NoRData, r)
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// `a.row(i)`, `a.column(j)`: owned copies in derived code.

/// Forward rule of `a.row(i)`, an owned `Array1` (ndarray's `row` is a view; see the module's
/// documentation).
///
/// # Panics
/// If `i` is out of bounds, as `a.row(i)` does.
pub fn row_frule<F: NdScalar>(
    a: Dual<&Array2<F>, &Array2<F>>,
    i: Dual<usize, NoTangent>,
) -> Dual<Array1<F>, Array1<F>> {
    Dual::new(a.primal.row(i.primal).to_owned(), a.tangent.row(i.primal).to_owned())
}

/// Reverse rule of `a.row(i)`: `ā[i, ..] += ȳ`.
///
/// # Panics
/// If `i` is out of bounds, as `a.row(i)` does.
pub fn row_rrule<F: NdScalar>(
    a: CoDual<&Array2<F>, SharedRef<Array2<F>>>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<Array1<F>, SharedRef<Array1<F>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>)
{
    let i = i.primal;
    let (y, dy) = fresh(a.primal.row(i).to_owned());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| d.row_mut(i).scaled_add(F::ONE, g)));
        (NoRData, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `a.column(j)`, an owned `Array1` (ndarray's `column` is a view; see the
/// module's documentation).
///
/// # Panics
/// If `j` is out of bounds, as `a.column(j)` does.
pub fn column_frule<F: NdScalar>(
    a: Dual<&Array2<F>, &Array2<F>>,
    j: Dual<usize, NoTangent>,
) -> Dual<Array1<F>, Array1<F>> {
    Dual::new(a.primal.column(j.primal).to_owned(), a.tangent.column(j.primal).to_owned())
}

/// Reverse rule of `a.column(j)`: `ā[.., j] += ȳ`.
///
/// # Panics
/// If `j` is out of bounds, as `a.column(j)` does.
pub fn column_rrule<F: NdScalar>(
    a: CoDual<&Array2<F>, SharedRef<Array2<F>>>,
    j: CoDual<usize, NoFData>,
) -> (CoDual<Array1<F>, SharedRef<Array1<F>>>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<F>)
{
    let j = j.primal;
    let (y, dy) = fresh(a.primal.column(j).to_owned());
    let da = a.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| da.accumulate(|d| d.column_mut(j).scaled_add(F::ONE, g)));
        (NoRData, NoRData)
    };
    (y, pullback)
}

// ---------------------------------------------------------------------------------------------
// Construction: `Array1::from_vec(v)`, `Array::from_shape_vec(shape, v)`, `Array::zeros(shape)`.

/// Forward rule of `Array1::from_vec(v)`.
pub fn from_vec_frule<F: NdScalar>(v: Dual<Vec<F>, Vec<F>>) -> Dual<Array1<F>, Array1<F>> {
    Dual::new(Array1::from_vec(v.primal), Array1::from_vec(v.tangent))
}

/// Reverse rule of `Array1::from_vec(v)`: `v̄ += ȳ` (`scaled_add` into a view of `v`'s
/// shadow).
pub fn from_vec_rrule<F: NdScalar>(
    v: CoDual<Vec<F>, SharedVec<F>>,
) -> (CoDual<Array1<F>, SharedRef<Array1<F>>>, impl FnOnce(NoRData) -> (NoRData,) + use<F>) {
    let (y, dy) = fresh(Array1::from_vec(v.primal));
    let dv = v.fdata;
    let pullback = move |_: NoRData| {
        dy.with(|g| dv.with_mut(|d| ArrayViewMut1::from(&mut d[..]).scaled_add(F::ONE, g)));
        (NoRData,)
    };
    (y, pullback)
}

/// A shape argument of a constructor: `usize` for an `Array1`, `(usize, usize)` or
/// `[usize; 2]` for an `Array2`, with no derivative. (ndarray's column-major shapes, `(r, c).f()`,
/// are not primal types.)
pub trait NdShape<D: Dimension>: ShapeBuilder<Dim = D> + Primal + Clone + 'static {}
impl<D: Dimension, S: ShapeBuilder<Dim = D> + Primal + Clone + 'static> NdShape<D> for S {}

/// Forward rule of `Array::from_shape_vec(shape, v)` (`Array2::from_shape_vec((r, c), v)`):
/// the tangent laid out as the primal, `Err` (and no tangent) where the length does not fit the
/// shape.
pub fn from_shape_vec_frule<F: NdScalar, D: Dimension + 'static, S: NdShape<D>>(
    shape: Dual<S, S::Tangent>,
    v: Dual<Vec<F>, Vec<F>>,
) -> Dual<Result<Array<F, D>, ShapeError>, Option<Array<F, D>>> {
    let y = Array::from_shape_vec(shape.primal.clone(), v.primal);
    let t = Array::from_shape_vec(shape.primal, v.tangent).ok();
    Dual::new(y, t)
}

/// Reverse rule of `Array::from_shape_vec(shape, v)`: `v̄ += ȳ` laid out as the primal (the
/// shadow of `v` seen as an array of the same shape and memory order).
pub fn from_shape_vec_rrule<F: NdScalar, D: Dimension + 'static, S: NdShape<D>>(
    shape: CoDual<S, S::FData>,
    v: CoDual<Vec<F>, SharedVec<F>>,
) -> (
    CoDual<Result<Array<F, D>, ShapeError>, Option<SharedRef<Array<F, D>>>>,
    impl FnOnce(Option<NoRData>) -> (S::RData, NoRData) + use<F, D, S>,
) {
    let s = shape.primal;
    let r = s.zero_rdata();
    let dv = v.fdata;
    let (y, dy) = match Array::from_shape_vec(s.clone(), v.primal) {
        Ok(y) => {
            let (y, dy) = fresh(y);
            (CoDual::new(Ok(y.primal), Some(y.fdata)), Some(dy))
        }
        Err(e) => (CoDual::new(Err(e), None), None),
    };
    let pullback = move |_: Option<NoRData>| {
        if let Some(dy) = dy {
            dy.with(|g| {
                dv.with_mut(|d| {
                    let mut view = ArrayViewMut::from_shape(s, &mut d[..])
                        .expect("mooncake: the shadow of `from_shape_vec`'s buffer has its shape");
                    view += g;
                })
            });
        }
        (r, NoRData)
    };
    (y, pullback)
}

/// Forward rule of `Array::zeros(shape)` (`Array1::zeros(n)`, `Array2::zeros((r, c))`): no
/// derivative.
pub fn zeros_frule<F: NdScalar, D: Dimension, S: NdShape<D>>(
    shape: Dual<S, S::Tangent>,
) -> Dual<Array<F, D>, Array<F, D>> {
    let y = Array::zeros(shape.primal);
    let t = zeros_like(&y);
    Dual::new(y, t)
}

/// Reverse rule of `Array::zeros(shape)`: a fresh zero shadow; nothing flows back.
pub fn zeros_rrule<F: NdScalar, D: Dimension + 'static, S: NdShape<D>>(
    shape: CoDual<S, S::FData>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (S::RData,) + use<F, D, S>)
{
    let r = shape.primal.zero_rdata();
    (fresh(Array::zeros(shape.primal)).0, move |_: NoRData| (r,))
}

/// Forward rule of `Array::ones(shape)`: no derivative.
pub fn ones_frule<F: NdScalar, D: Dimension, S: NdShape<D>>(
    shape: Dual<S, S::Tangent>,
) -> Dual<Array<F, D>, Array<F, D>> {
    let y = Array::ones(shape.primal);
    let t = zeros_like(&y);
    Dual::new(y, t)
}

/// Reverse rule of `Array::ones(shape)`: a fresh zero shadow; nothing flows back.
pub fn ones_rrule<F: NdScalar, D: Dimension + 'static, S: NdShape<D>>(
    shape: CoDual<S, S::FData>,
) -> (CoDual<Array<F, D>, SharedRef<Array<F, D>>>, impl FnOnce(NoRData) -> (S::RData,) + use<F, D, S>)
{
    let r = shape.primal.zero_rdata();
    (fresh(Array::ones(shape.primal)).0, move |_: NoRData| (r,))
}

/// Forward rule of `Array::from_elem(shape, v)`: every entry's tangent `v̇`.
pub fn from_elem_frule<F: NdScalar, D: Dimension, S: NdShape<D>>(
    shape: Dual<S, S::Tangent>,
    v: Dual<F, F>,
) -> Dual<Array<F, D>, Array<F, D>> {
    Dual::new(
        Array::from_elem(shape.primal.clone(), v.primal),
        Array::from_elem(shape.primal, v.tangent),
    )
}

/// Reverse rule of `Array::from_elem(shape, v)`: `v̄ = Σ ȳ`.
pub fn from_elem_rrule<F: NdScalar, D: Dimension + 'static, S: NdShape<D>>(
    shape: CoDual<S, S::FData>,
    v: CoDual<F, NoFData>,
) -> (
    CoDual<Array<F, D>, SharedRef<Array<F, D>>>,
    impl FnOnce(NoRData) -> (S::RData, F) + use<F, D, S>,
) {
    let r = shape.primal.zero_rdata();
    let (y, dy) = fresh(Array::from_elem(shape.primal, v.primal));
    (y, move |_: NoRData| (r, dy.with(|g| g.sum())))
}

// ---------------------------------------------------------------------------------------------
// Associated constructors in derived code: a `#[differentiable]` body's path call
// `Array2::zeros((r, c))` becomes `Array2::zeros_frule(..)` (and `_rrule`), which ndarray's types
// cannot have as inherent functions; these traits give them, in the prelude with the feature,
// each rule the free function's above.

/// The rules of the constructors of `Array<F, D>` (`Array1`, `Array2`) that take a shape, as
/// associated functions that derived code calls by the constructor's path
/// (`Array2::zeros((2, 3))`, `Array2::from_shape_vec((2, 3), v)` in a `#[differentiable]` body).
/// In the prelude with the feature `ndarray`.
///
/// ```
/// use mooncake_runtime::prelude::*;
/// use ndarray::Array2;
///
/// #[differentiable]
/// fn weighted(s: &[f64], w: &[f64]) -> f64 {
///     let m = Array2::from_shape_vec((2, 2), s.to_vec()).unwrap();
///     let c = Array2::from_shape_vec((2, 2), w.to_vec()).unwrap();
///     let z = Array2::<f64>::zeros((2, 2));
///     (m * c).sum() + z.sum()
/// }
///
/// let (s, w) = (vec![1.0, 2.0, 3.0, 4.0], vec![0.5, -1.0, 2.0, 0.25]);
/// let (v, (gs, gw)) = value_and_gradient!(weighted(&s, &w));
/// assert_eq!(v, 0.5 - 2.0 + 6.0 + 1.0);
/// assert_eq!((gs, gw), (w.clone(), s.clone()));
/// ```
pub trait ArrayConstructors: Sized {
    /// The dimension of the array.
    type Dim: Dimension;
    /// The element type.
    type Elem;
    /// Forward rule of `Array::zeros(shape)`.
    fn zeros_frule<S: NdShape<Self::Dim>>(shape: Dual<S, S::Tangent>) -> Dual<Self, Self>;
    /// Reverse rule of `Array::zeros(shape)`.
    fn zeros_rrule<S: NdShape<Self::Dim>>(
        shape: CoDual<S, S::FData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (S::RData,) + use<Self, S>);
    /// Forward rule of `Array::from_shape_vec(shape, v)`.
    fn from_shape_vec_frule<S: NdShape<Self::Dim>>(
        shape: Dual<S, S::Tangent>,
        v: Dual<Vec<Self::Elem>, Vec<Self::Elem>>,
    ) -> Dual<Result<Self, ShapeError>, Option<Self>>;
    /// Reverse rule of `Array::from_shape_vec(shape, v)`.
    fn from_shape_vec_rrule<S: NdShape<Self::Dim>>(
        shape: CoDual<S, S::FData>,
        v: CoDual<Vec<Self::Elem>, SharedVec<Self::Elem>>,
    ) -> (
        CoDual<Result<Self, ShapeError>, Option<SharedRef<Self>>>,
        impl FnOnce(Option<NoRData>) -> (S::RData, NoRData) + use<Self, S>,
    );
    /// Forward rule of `Array::ones(shape)`.
    fn ones_frule<S: NdShape<Self::Dim>>(shape: Dual<S, S::Tangent>) -> Dual<Self, Self>;
    /// Reverse rule of `Array::ones(shape)`.
    fn ones_rrule<S: NdShape<Self::Dim>>(
        shape: CoDual<S, S::FData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (S::RData,) + use<Self, S>);
    /// Forward rule of `Array::from_elem(shape, v)`.
    fn from_elem_frule<S: NdShape<Self::Dim>>(
        shape: Dual<S, S::Tangent>,
        v: Dual<Self::Elem, Self::Elem>,
    ) -> Dual<Self, Self>;
    /// Reverse rule of `Array::from_elem(shape, v)`.
    #[allow(clippy::type_complexity)]
    fn from_elem_rrule<S: NdShape<Self::Dim>>(
        shape: CoDual<S, S::FData>,
        v: CoDual<Self::Elem, NoFData>,
    ) -> (
        CoDual<Self, SharedRef<Self>>,
        impl FnOnce(NoRData) -> (S::RData, Self::Elem) + use<Self, S>,
    );
}

impl<F: NdScalar, D: Dimension + 'static> ArrayConstructors for Array<F, D> {
    type Dim = D;
    type Elem = F;
    #[inline]
    fn zeros_frule<S: NdShape<D>>(shape: Dual<S, S::Tangent>) -> Dual<Self, Self> {
        zeros_frule(shape)
    }
    #[inline]
    fn zeros_rrule<S: NdShape<D>>(
        shape: CoDual<S, S::FData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (S::RData,) + use<F, D, S>) {
        zeros_rrule(shape)
    }
    #[inline]
    fn from_shape_vec_frule<S: NdShape<D>>(
        shape: Dual<S, S::Tangent>,
        v: Dual<Vec<F>, Vec<F>>,
    ) -> Dual<Result<Self, ShapeError>, Option<Self>> {
        from_shape_vec_frule(shape, v)
    }
    #[inline]
    fn from_shape_vec_rrule<S: NdShape<D>>(
        shape: CoDual<S, S::FData>,
        v: CoDual<Vec<F>, SharedVec<F>>,
    ) -> (
        CoDual<Result<Self, ShapeError>, Option<SharedRef<Self>>>,
        impl FnOnce(Option<NoRData>) -> (S::RData, NoRData) + use<F, D, S>,
    ) {
        from_shape_vec_rrule(shape, v)
    }
    #[inline]
    fn ones_frule<S: NdShape<D>>(shape: Dual<S, S::Tangent>) -> Dual<Self, Self> {
        ones_frule(shape)
    }
    #[inline]
    fn ones_rrule<S: NdShape<D>>(
        shape: CoDual<S, S::FData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (S::RData,) + use<F, D, S>) {
        ones_rrule(shape)
    }
    #[inline]
    fn from_elem_frule<S: NdShape<D>>(
        shape: Dual<S, S::Tangent>,
        v: Dual<F, F>,
    ) -> Dual<Self, Self> {
        from_elem_frule(shape, v)
    }
    #[inline]
    fn from_elem_rrule<S: NdShape<D>>(
        shape: CoDual<S, S::FData>,
        v: CoDual<F, NoFData>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (S::RData, F) + use<F, D, S>) {
        from_elem_rrule(shape, v)
    }
}

/// The rules of `Array1::from_vec(v)`, as associated functions that derived code calls by the
/// constructor's path. In the prelude with the feature `ndarray`.
///
/// ```
/// use mooncake_runtime::prelude::*;
/// use ndarray::Array1;
///
/// #[differentiable]
/// fn squared_norm(x: &[f64]) -> f64 {
///     let v = Array1::from_vec(x.to_vec());
///     v.dot(&v)
/// }
///
/// let x = vec![1.0, 2.0];
/// let (v, (g,)) = value_and_gradient!(squared_norm(&x));
/// assert_eq!((v, g), (5.0, vec![2.0, 4.0]));
/// ```
pub trait Array1Constructors: Sized {
    /// The element type.
    type Elem;
    /// Forward rule of `Array1::from_vec(v)`.
    fn from_vec_frule(v: Dual<Vec<Self::Elem>, Vec<Self::Elem>>) -> Dual<Self, Self>;
    /// Reverse rule of `Array1::from_vec(v)`.
    fn from_vec_rrule(
        v: CoDual<Vec<Self::Elem>, SharedVec<Self::Elem>>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData,) + use<Self>);
}

impl<F: NdScalar> Array1Constructors for Array1<F> {
    type Elem = F;
    #[inline]
    fn from_vec_frule(v: Dual<Vec<F>, Vec<F>>) -> Dual<Self, Self> {
        from_vec_frule(v)
    }
    #[inline]
    fn from_vec_rrule(
        v: CoDual<Vec<F>, SharedVec<F>>,
    ) -> (CoDual<Self, SharedRef<Self>>, impl FnOnce(NoRData) -> (NoRData,) + use<F>) {
        from_vec_rrule(v)
    }
}
