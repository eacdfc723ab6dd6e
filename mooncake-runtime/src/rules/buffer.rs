//! Primitive rules for buffers: reads, writes and growth of slices, `Vec`s and arrays of floats.
//!
//! Each primitive has a forward-mode rule `NAME_frule` and a reverse-mode rule `NAME_rrule`,
//! side by side, generic over the element type `T: Float` (`f32` or `f64`).
//!
//! # Representations
//!
//! | argument | forward mode | reverse mode |
//! | --- | --- | --- |
//! | `&[T]`, `&Vec<T>`, `&[T; N]` (read) | `Dual<B, BT>`, `B, BT: ReadBuffer<T>` | `CoDual<&'a S, SharedVec<T>>`, `S: ReadBuffer<T>` |
//! | `&mut [T]`, `&mut Vec<T>` (written) | `Dual<M, MT>`, `M, MT: WriteBuffer<T>` | `CoDual<SharedVec<T>, SharedVec<T>>` |
//! | `&mut Vec<T>` (`push`, `pop`) | `Dual<&'a mut Vec<T>, &'a mut Vec<T>>` | `CoDual<SharedVec<T>, SharedVec<T>>` |
//! | `Vec<T>` (a result) | `Dual<Vec<T>, Vec<T>>` | `CoDual<Vec<T>, SharedVec<T>>` (a fresh zero shadow) |
//! | `[T; N]` (by value) | `Dual<[T; N], [T; N]>` | `CoDual<[T; N], [NoFData; N]>` |
//! | `T` | `Dual<T, T>` | `CoDual<T, NoFData>` |
//! | `usize` (an index, a length) | `Dual<usize, NoTangent>` | `CoDual<usize, NoFData>` |
//!
//! A reverse-mode rule returns `(CoDual<output, output's fdata>, pullback)`, where the pullback
//! maps the output's rdata to a tuple of one rdata per argument: [`NoRData`] for buffers,
//! handles and indices, `T` for scalars, `[T; N]` for arrays passed by value.
//!
//! Reverse-mode *read* rules take the buffer by reference, `CoDual<&'a S, SharedVec<T>>`, with
//! `S` one of `[T]`, `Vec<T>`, `[T; N]` or [`SharedVec<T>`] (the handle of a buffer passed by
//! `&mut`, read through `&handle`). The reference is what keeps the pullback free of `'a`:
//! rustc requires an `impl Trait` to capture every *type* parameter in scope (`use<..>` may
//! leave out lifetimes only), so a rule generic over the whole argument type `B = &'a [T]` would
//! return a pullback that borrows the buffer. With `&'a S`, the pullbacks are
//! `impl FnOnce(..) -> .. + use<T, S>` and never borrow their arguments.
//!
//! # Mutation (seed 000, "AD With Mutable Data")
//!
//! A forward pass leaves primal state as the primal would. A pullback undoes the rule's change
//! to primal state (restoring saved values, never recomputing them), and leaves every shadow
//! holding the gradient with respect to the state on entry. A shadow is incremented, never
//! overwritten, except at locations the rule overwrites: for `x[i] = v` the forward pass saves
//! `x[i]` and `dx[i]` and zeroes `dx[i]` (the accumulator of the new value), and the pullback
//! reads `v̄ = dx[i]`, puts the saved `dx[i]` back and restores `x[i]`. The compound writes,
//! `fill` and `copy_from_slice` follow the same pattern.
//!
//! Out-of-range indices panic exactly as the primal would (a slice index panic naming the
//! index and the length), before any state is changed.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::rules::buffer::{index_set_rrule, sum_rrule};
//!
//! // x[1] = v, then the gradient of sum(x) with respect to v and to x on entry.
//! let x = SharedVec::from_vec(vec![1.0_f64, 2.0, 3.0]);
//! let dx = SharedVec::zeros(3);
//! let (_, pb_set) = index_set_rrule(
//!     CoDual::new(x.clone(), dx.clone()),
//!     CoDual::new(1, NoFData),
//!     CoDual::new(0.5, NoFData),
//! );
//! let (s, pb_sum) = sum_rrule(CoDual::new(&x, dx.clone()));
//! assert_eq!(s.primal, 4.5);
//! pb_sum(1.0);
//! let (_, _, v_bar) = pb_set(NoRData);
//! assert_eq!(v_bar, 1.0);
//! assert_eq!(dx.to_vec(), vec![1.0, 0.0, 1.0]);
//! assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0]); // restored
//! ```

// The signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::element::{Element, SumElement};
use crate::float::Float;
use crate::shared::SharedVec;
use crate::tangent::Primal;

// ---------------------------------------------------------------------------------------------
// Buffer access traits.

/// A buffer that a rule can read: `[T]`, `Vec<T>`, `[T; N]`, [`SharedVec<T>`], and any `&` or
/// `&mut` reference to one of them (so `&[T]`, `&Vec<T>`, `&[T; N]`, `&mut [T]`, ...).
pub trait ReadBuffer<T> {
    /// Runs `f` on a shared view of the elements.
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R;

    /// The number of elements.
    #[inline]
    fn len(&self) -> usize {
        self.with_slice(<[T]>::len)
    }

    /// Whether there are no elements.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `index`.
    ///
    /// # Panics
    /// If `index` is out of range, with the index and the length, as slice indexing does.
    #[inline]
    fn get(&self, index: usize) -> T
    where
        T: Copy,
    {
        self.with_slice(|s| s[index])
    }
}

/// A buffer that a forward-mode rule can write in place: `[T]`, `Vec<T>`, `[T; N]`,
/// [`SharedVec<T>`], and any `&mut` reference to one of them.
pub trait WriteBuffer<T>: ReadBuffer<T> {
    /// Runs `f` on a mutable view of the elements.
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R;

    /// Overwrites the element at `index` with `value`, returning the old value.
    ///
    /// # Panics
    /// If `index` is out of range, with the index and the length, as slice indexing does.
    #[inline]
    fn set(&mut self, index: usize, value: T) -> T {
        self.with_slice_mut(|s| std::mem::replace(&mut s[index], value))
    }

    /// Swaps the elements at `a` and `b`.
    ///
    /// # Panics
    /// If `a` or `b` is out of range, as `<[T]>::swap` does.
    #[inline]
    fn swap(&mut self, a: usize, b: usize) {
        self.with_slice_mut(|s| s.swap(a, b))
    }
}

impl<T> ReadBuffer<T> for [T] {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T> WriteBuffer<T> for [T] {
    #[inline(always)]
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R {
        f(self)
    }
}

impl<T> ReadBuffer<T> for Vec<T> {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T> WriteBuffer<T> for Vec<T> {
    #[inline(always)]
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R {
        f(self)
    }
}

impl<T, const N: usize> ReadBuffer<T> for [T; N] {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T, const N: usize> WriteBuffer<T> for [T; N] {
    #[inline(always)]
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R {
        f(self)
    }
}

impl<T> ReadBuffer<T> for SharedVec<T> {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        self.with(f)
    }
}

impl<T> WriteBuffer<T> for SharedVec<T> {
    #[inline(always)]
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R {
        self.with_mut(|v| f(v))
    }
}

impl<T, const N: usize> ReadBuffer<T> for crate::shared::SharedArray<T, N> {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        self.as_shared_vec().with(f)
    }
}

impl<T, S: ReadBuffer<T> + ?Sized> ReadBuffer<T> for &S {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        (**self).with_slice(f)
    }
}

impl<T, S: ReadBuffer<T> + ?Sized> ReadBuffer<T> for &mut S {
    #[inline(always)]
    fn with_slice<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        (**self).with_slice(f)
    }
}

impl<T, S: WriteBuffer<T> + ?Sized> WriteBuffer<T> for &mut S {
    #[inline(always)]
    fn with_slice_mut<R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> R {
        (**self).with_slice_mut(f)
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// `x.iter().sum::<T>()`, in the same order and from the same neutral element (`-0.0`) as `std`.
#[inline(always)]
fn sum_slice<T: Float>(s: &[T]) -> T {
    s.iter().fold(-T::ZERO, |acc, &x| acc + x)
}

/// `dst += src`, element-wise, for the shadows of a buffer of `T`.
#[inline(always)]
fn add_into<T: Element>(dst: &mut [T::Tangent], src: &[T::Tangent]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "mooncake: cannot add a gradient of length {} into a shadow of length {}",
        src.len(),
        dst.len()
    );
    dst.iter_mut().zip(src).for_each(|(d, &s)| T::add_rdata(d, T::tangent_rdata(s)));
}

const SHADOW_TOO_SHORT: &str =
    "mooncake: the shadow of a Vec is shorter than the Vec (the shadow was not kept in step)";

/// In debug builds, checks that a buffer and its shadow have one length.
#[inline(always)]
fn debug_check_shadow(primal_len: usize, shadow_len: usize) {
    debug_assert_eq!(
        primal_len, shadow_len,
        "mooncake: a buffer of length {primal_len} has a shadow of length {shadow_len}"
    );
}

// ---------------------------------------------------------------------------------------------
// len

/// Forward rule of `x.len()`: the length, which has no tangent.
#[inline]
pub fn len_frule<T, B: ReadBuffer<T>, BT>(x: Dual<B, BT>) -> Dual<usize, NoTangent> {
    Dual::new(x.primal.len(), NoTangent)
}

/// Reverse rule of `x.len()`: the length carries no gradient; the pullback does nothing.
#[inline]
pub fn len_rrule<T, S: ReadBuffer<T> + ?Sized, F>(
    x: CoDual<&S, F>,
) -> (CoDual<usize, NoFData>, impl FnOnce(NoRData) -> (NoRData,) + use<T, S, F>) {
    (CoDual::new(x.primal.len(), NoFData), |_: NoRData| (NoRData,))
}

// ---------------------------------------------------------------------------------------------
// x[i]

/// Forward rule of the read `x[i]`: `(x[i], dx[i])`.
///
/// # Panics
/// If `i` is out of range, as `x[i]` does.
#[inline]
pub fn index_frule<T: Element, B: ReadBuffer<T>, BT: ReadBuffer<T::Tangent>>(
    x: Dual<B, BT>,
    i: Dual<usize, NoTangent>,
) -> Dual<T, T::Tangent> {
    let i = i.primal;
    Dual::new(x.primal.get(i), x.tangent.get(i))
}

/// Reverse rule of the read `x[i]`: the pullback adds `ȳ` into `dx[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i]` does.
#[inline]
pub fn index_rrule<T: Element, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T::Tangent>>,
    i: CoDual<usize, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T::RData) -> (NoRData, NoRData) + use<T, S>) {
    let i = i.primal;
    let y = x.primal.get(i);
    let dx = x.fdata;
    let pullback = move |y_bar: T::RData| {
        dx.with_mut(|d| T::add_rdata(&mut d[i], y_bar));
        (NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// x[i] = v

/// Forward rule of the write `x[i] = v`: `x[i] = v`, `dx[i] = dv`.
///
/// # Panics
/// If `i` is out of range, as `x[i] = v` does.
#[inline]
pub fn index_set_frule<T: Element, M: WriteBuffer<T>, MT: WriteBuffer<T::Tangent>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T::Tangent>,
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    x.set(i.primal, v.primal);
    dx.set(i.primal, v.tangent);
    Dual::new((), NoTangent)
}

/// Reverse rule of the write `x[i] = v`. The forward pass saves `x[i]` and `dx[i]`, writes
/// `x[i] = v` and zeroes `dx[i]`; the pullback returns `v̄ = dx[i]`, puts the saved `dx[i]` back
/// (the old value of `x[i]` no longer reaches the output) and restores `x[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i] = v` does.
#[inline]
pub fn index_set_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T::RData) + use<T>) {
    let (x, dx) = x.into_parts();
    let i = i.primal;
    let old = x.set(i, v.primal);
    let old_d = dx.set(i, T::ZERO_TANGENT);
    let pullback = move |_: NoRData| {
        let v_bar = T::tangent_rdata(dx.set(i, old_d));
        x.set(i, old);
        (NoRData, NoRData, v_bar)
    };
    (CoDual::new((), NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// x[i] op= v

/// The forward rule of `x[i] op= v`, given `step(old, d_old, v, dv) = (new, d_new)`.
#[inline(always)]
fn compound_assign_frule<T: Float, M: WriteBuffer<T>, MT: WriteBuffer<T>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T>,
    step: impl FnOnce(T, T, T, T) -> (T, T),
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    let i = i.primal;
    let old = x.get(i);
    let (new, d_new) = step(old, dx.get(i), v.primal, v.tangent);
    x.set(i, new);
    dx.set(i, d_new);
    Dual::new((), NoTangent)
}

/// The reverse rule of `x[i] op= v`, given `op(old, v) = new` and
/// `adjoint(new_bar, old, v) = (old_bar, v_bar)`.
#[inline(always)]
fn compound_assign_rrule<T, Op, Adj>(
    x: CoDual<SharedVec<T>, SharedVec<T>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
    op: Op,
    adjoint: Adj,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T) + use<T, Op, Adj>)
where
    T: Float,
    Op: FnOnce(T, T) -> T,
    Adj: FnOnce(T, T, T) -> (T, T),
{
    let (x, dx) = x.into_parts();
    let (i, v) = (i.primal, v.primal);
    let old = x.with_mut(|s| {
        let old = s[i];
        s[i] = op(old, v);
        old
    });
    let old_d = dx.set(i, T::ZERO);
    let pullback = move |_: NoRData| {
        let new_bar = dx.get(i);
        let (old_bar, v_bar) = adjoint(new_bar, old, v);
        dx.set(i, old_d + old_bar);
        x.set(i, old);
        (NoRData, NoRData, v_bar)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x[i] += v`: `dx[i] += dv`.
///
/// # Panics
/// If `i` is out of range, as `x[i] += v` does.
#[inline]
pub fn index_add_assign_frule<T: Float, M: WriteBuffer<T>, MT: WriteBuffer<T>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T>,
) -> Dual<(), NoTangent> {
    compound_assign_frule(x, i, v, |a, da, b, db| (a + b, da + db))
}

/// Reverse rule of `x[i] += v`: `v̄ = x̄[i]`, `x[i]`'s gradient passes through, and the
/// pullback restores the saved `x[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i] += v` does.
#[inline]
pub fn index_add_assign_rrule<T: Float>(
    x: CoDual<SharedVec<T>, SharedVec<T>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T) + use<T>) {
    compound_assign_rrule(x, i, v, |a, b| a + b, |g, _, _| (g, g))
}

/// Forward rule of `x[i] -= v`: `dx[i] -= dv`.
///
/// # Panics
/// If `i` is out of range, as `x[i] -= v` does.
#[inline]
pub fn index_sub_assign_frule<T: Float, M: WriteBuffer<T>, MT: WriteBuffer<T>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T>,
) -> Dual<(), NoTangent> {
    compound_assign_frule(x, i, v, |a, da, b, db| (a - b, da - db))
}

/// Reverse rule of `x[i] -= v`: `v̄ = -x̄[i]`, `x[i]`'s gradient passes through, and the
/// pullback restores the saved `x[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i] -= v` does.
#[inline]
pub fn index_sub_assign_rrule<T: Float>(
    x: CoDual<SharedVec<T>, SharedVec<T>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T) + use<T>) {
    compound_assign_rrule(x, i, v, |a, b| a - b, |g, _, _| (g, -g))
}

/// Forward rule of `x[i] *= v`: `dx[i] = dx[i] * v + x[i] * dv`.
///
/// # Panics
/// If `i` is out of range, as `x[i] *= v` does.
#[inline]
pub fn index_mul_assign_frule<T: Float, M: WriteBuffer<T>, MT: WriteBuffer<T>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T>,
) -> Dual<(), NoTangent> {
    compound_assign_frule(x, i, v, |a, da, b, db| (a * b, da * b + a * db))
}

/// Reverse rule of `x[i] *= v`: with `g = x̄[i]` on exit, `v̄ = g * x[i]` and the gradient of
/// `x[i]` on entry is `g * v`; the pullback restores the saved `x[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i] *= v` does.
#[inline]
pub fn index_mul_assign_rrule<T: Float>(
    x: CoDual<SharedVec<T>, SharedVec<T>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T) + use<T>) {
    compound_assign_rrule(x, i, v, |a, b| a * b, |g, a, b| (g * b, g * a))
}

/// Forward rule of `x[i] /= v`: `dx[i] = (dx[i] - (x[i] / v) * dv) / v`.
///
/// # Panics
/// If `i` is out of range, as `x[i] /= v` does.
#[inline]
pub fn index_div_assign_frule<T: Float, M: WriteBuffer<T>, MT: WriteBuffer<T>>(
    x: Dual<M, MT>,
    i: Dual<usize, NoTangent>,
    v: Dual<T, T>,
) -> Dual<(), NoTangent> {
    compound_assign_frule(x, i, v, |a, da, b, db| {
        let q = a / b;
        (q, (da - q * db) / b)
    })
}

/// Reverse rule of `x[i] /= v`: with `g = x̄[i]` on exit, `v̄ = -g * x[i] / v²` and the gradient
/// of `x[i]` on entry is `g / v`; the pullback restores the saved `x[i]`.
///
/// # Panics
/// If `i` is out of range, as `x[i] /= v` does.
#[inline]
pub fn index_div_assign_rrule<T: Float>(
    x: CoDual<SharedVec<T>, SharedVec<T>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T) + use<T>) {
    compound_assign_rrule(x, i, v, |a, b| a / b, |g, a, b| (g / b, -(g * (a / b)) / b))
}

// ---------------------------------------------------------------------------------------------
// Construction: vec![x; n], vec![a, b, ..], Vec::new, Vec::with_capacity

/// Forward rule of `vec![x; n]`: `(vec![x; n], vec![dx; n])`.
#[inline]
pub fn vec_filled_frule<T: Element>(
    x: Dual<T, T::Tangent>,
    n: Dual<usize, NoTangent>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    let n = n.primal;
    Dual::new(vec![x.primal; n], vec![x.tangent; n])
}

/// Reverse rule of `vec![x; n]`: a fresh zero shadow for the result; the pullback returns
/// `x̄ = Σ ȳ`.
#[inline]
pub fn vec_filled_rrule<T: Element>(
    x: CoDual<T, NoFData>,
    n: CoDual<usize, NoFData>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> (T::RData, NoRData) + use<T>) {
    let n = n.primal;
    let dy = SharedVec::filled_kept(T::ZERO_TANGENT, n);
    let shadow = dy.clone();
    let pullback = move |_: NoRData| (shadow.with(T::sum_rdata), NoRData);
    (CoDual::new(crate::kept::filled(x.primal, n), dy), pullback)
}

/// Forward rule of `vec![a, b, ..]`, written as `Vec::from([a, b, ..])`: the tangent array
/// becomes the tangent `Vec`.
#[inline]
pub fn vec_from_array_frule<T: Element, const N: usize>(
    x: Dual<[T; N], [T::Tangent; N]>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    Dual::new(Vec::from(x.primal), Vec::from(x.tangent))
}

/// Reverse rule of `vec![a, b, ..]`, written as `Vec::from([a, b, ..])`: a fresh zero shadow
/// for the result; the pullback returns the array's rdata, `ȳ` element by element.
#[inline]
pub fn vec_from_array_rrule<T: Element, const N: usize>(
    x: CoDual<[T; N], [NoFData; N]>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> ([T::RData; N],) + use<T, N>) {
    let dy = SharedVec::filled(T::ZERO_TANGENT, N);
    let shadow = dy.clone();
    let pullback =
        move |_: NoRData| (shadow.with(|s| std::array::from_fn(|k| T::tangent_rdata(s[k]))),);
    (CoDual::new(Vec::from(x.primal), dy), pullback)
}

/// Reverse rule of `vec![a, b, ..]` of values with tangents of their own (`#[derive(Tangent)]`
/// structs, tuples): a shadow of zero tangents; the pullback gives each element's tangent to its
/// value (its fdata part added into the value's fdata, its rdata part returned).
#[inline]
#[allow(clippy::type_complexity)]
pub fn vec_from_values_rrule<T: Primal, const N: usize>(
    x: [CoDual<T, T::FData>; N],
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> ([T::RData; N],) + use<T, N>) {
    let (values, fdata): (Vec<T>, Vec<T::FData>) =
        x.into_iter().map(|c| (c.primal, c.fdata)).unzip();
    let dy = SharedVec::from_vec(values.iter().map(Primal::zero_tangent).collect());
    let shadow = dy.clone();
    let pullback = move |_: NoRData| {
        shadow.with(|g| {
            (std::array::from_fn(|k| {
                let (f, r) = T::split_tangent(g[k].clone());
                crate::tangent::FData::increment_from(&fdata[k], &f);
                r
            }),)
        })
    };
    (CoDual::new(values, dy), pullback)
}

/// Forward rule of `Vec::new()`: two empty `Vec`s.
#[inline]
pub fn vec_new_frule<T: Primal>() -> Dual<Vec<T>, Vec<T::Tangent>> {
    Dual::new(Vec::new(), Vec::new())
}

/// Reverse rule of `Vec::new()`: an empty `Vec` with a fresh empty shadow (the shadow's handle
/// is the one allocation); the pullback has no argument to return a gradient for.
#[inline]
pub fn vec_new_rrule<T: Primal>()
-> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) + use<T>) {
    (CoDual::new(Vec::new(), SharedVec::from_vec(Vec::new())), |_: NoRData| {})
}

/// Forward rule of `Vec::with_capacity(n)`: two empty `Vec`s with room for `n` elements.
#[inline]
pub fn vec_with_capacity_frule<T: Primal>(
    n: Dual<usize, NoTangent>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    Dual::new(Vec::with_capacity(n.primal), Vec::with_capacity(n.primal))
}

/// Reverse rule of `Vec::with_capacity(n)`: an empty `Vec` with a fresh empty shadow, both with
/// room for `n` elements; `n` gets no gradient.
#[inline]
pub fn vec_with_capacity_rrule<T: Primal>(
    n: CoDual<usize, NoFData>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> (NoRData,) + use<T>) {
    let n = n.primal;
    let pullback = |_: NoRData| (NoRData,);
    (CoDual::new(Vec::with_capacity(n), SharedVec::with_capacity(n)), pullback)
}

// ---------------------------------------------------------------------------------------------
// push, pop

/// Forward rule of `x.push(v)`: pushes `v` onto `x` and `dv` onto its tangent.
#[inline]
pub fn push_frule<T: Primal>(
    x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>,
    v: Dual<T, T::Tangent>,
) -> Dual<(), NoTangent> {
    x.primal.push(v.primal);
    x.tangent.push(v.tangent);
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.push(v)`: pushes `v` onto `x` and a zero onto its shadow; the pullback
/// pops both, returning the popped gradient as `v̄`.
#[inline]
pub fn push_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T::RData) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    x.push(v.primal);
    dx.push(T::ZERO_TANGENT);
    let pullback = move |_: NoRData| {
        let v_bar = T::tangent_rdata(dx.pop().expect(SHADOW_TOO_SHORT));
        x.pop();
        (NoRData, v_bar)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Reverse rule of `x.push(v)` of a value with a tangent of its own (a `#[derive(Tangent)]`
/// struct, a tuple) onto a buffer of such values the function builds: pushes `v` onto `x` and a
/// zero tangent onto its shadow; the pullback pops both and gives the popped tangent to `v`
/// (its fdata part added into `v`'s fdata, its rdata part returned as `v̄`).
#[inline]
#[allow(clippy::type_complexity)]
pub fn push_value_rrule<T: Primal>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    v: CoDual<T, T::FData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T::RData) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let (v, fd) = (v.primal, v.fdata);
    dx.push(v.zero_tangent());
    x.push(v);
    let pullback = move |_: NoRData| {
        let (f, r) = T::split_tangent(dx.pop().expect(SHADOW_TOO_SHORT));
        crate::tangent::FData::increment_from(&fd, &f);
        x.pop();
        (NoRData, r)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.pop()`: pops `x` and its tangent; `None` (with tangent `None`) if `x` is
/// empty.
///
/// # Panics
/// If the tangent is shorter than `x`.
#[inline]
pub fn pop_frule<T: Primal>(
    x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>,
) -> Dual<Option<T>, Option<T::Tangent>> {
    let y = x.primal.pop();
    let dy = y.as_ref().map(|_| x.tangent.pop().expect(SHADOW_TOO_SHORT));
    Dual::new(y, dy)
}

/// Reverse rule of `x.pop()` of a buffer of values with tangents of their own (tuples,
/// `#[derive(Tangent)]` structs; `while let Some((a, b)) = stack.pop()`): pops `x` and its
/// shadow; the popped value's fdata is its tangent's fdata part, and the pullback pushes the
/// value back with the tangent joined from that fdata and the rdata part plus `ȳ`. On an empty
/// `x` the result is `None` and the pullback does nothing.
///
/// # Panics
/// If the shadow is shorter than `x`.
#[inline]
#[allow(clippy::type_complexity)]
pub fn pop_value_rrule<T: Primal + Clone>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
) -> (CoDual<Option<T>, Option<T::FData>>, impl FnOnce(Option<T::RData>) -> (NoRData,) + use<T>)
where
    T::RData: crate::tangent::TangentSpace,
{
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let y = x.pop();
    let parts = y.as_ref().map(|_| T::split_tangent(dx.pop().expect(SHADOW_TOO_SHORT)));
    let fdata = parts.as_ref().map(|(f, _)| f.clone());
    let kept = y.clone();
    let pullback = move |y_bar: Option<T::RData>| {
        if let (Some(y), Some((f, mut r))) = (kept, parts) {
            if let Some(b) = y_bar {
                crate::tangent::TangentSpace::increment(&mut r, &b);
            }
            dx.push(T::join_tangent(&f, r));
            x.push(y);
        }
        (NoRData,)
    };
    (CoDual::new(y, fdata), pullback)
}

/// Reverse rule of `x.pop()`: pops `x` and its shadow, keeping the popped shadow value; the
/// pullback pushes the popped value back onto `x` and `popped shadow + ȳ` onto the shadow. On
/// an empty `x` the result is `None` and the pullback does nothing.
///
/// # Panics
/// If the shadow is shorter than `x`.
#[inline]
pub fn pop_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
) -> (CoDual<Option<T>, Option<NoFData>>, impl FnOnce(Option<T::RData>) -> (NoRData,) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let y = x.pop();
    let popped = y.map(|_| dx.pop().expect(SHADOW_TOO_SHORT));
    let pullback = move |y_bar: Option<T::RData>| {
        if let (Some(y), Some(mut d)) = (y, popped) {
            x.push(y);
            if let Some(r) = y_bar {
                T::add_rdata(&mut d, r);
            }
            dx.push(d);
        }
        (NoRData,)
    };
    (CoDual::new(y, y.map(|_| NoFData)), pullback)
}

// ---------------------------------------------------------------------------------------------
// buffers of buffers (`&[Vec<f64>]`, `Vec<Vec<f64>>`, `&[[f64; N]]`), read in reverse mode

/// A row of a buffer of buffers: a `Vec` or an array of elements.
pub trait Row {
    /// The element type.
    type Elem: Element;
    /// How derived reverse-mode code holds a copy of the row: a `SharedVec` of a `Vec`, a
    /// `SharedArray` of an array (so a row of `&[[f64; 2]]` lent to a call stays an array).
    type Held;
    /// The elements.
    fn row(&self) -> &[Self::Elem];
    /// The row moved into its handle.
    fn held(self) -> Self::Held;
}

impl<T: Element> Row for Vec<T> {
    type Elem = T;
    type Held = SharedVec<T>;
    #[inline(always)]
    fn row(&self) -> &[T] {
        self
    }
    #[inline(always)]
    fn held(self) -> SharedVec<T> {
        SharedVec::from_vec(self)
    }
}

impl<T: Element, const N: usize> Row for [T; N] {
    type Elem = T;
    type Held = crate::shared::SharedArray<T, N>;
    #[inline(always)]
    fn row(&self) -> &[T] {
        self
    }
    #[inline(always)]
    fn held(self) -> crate::shared::SharedArray<T, N> {
        crate::shared::SharedArray::from_array(self)
    }
}

/// A matrix as a row (`Vec<[[f64; 3]; 3]>`, a buffer of rotations): its elements in row-major
/// order.
impl<T: Element, const N: usize, const M: usize> Row for [[T; N]; M] {
    type Elem = T;
    type Held = crate::shared::SharedArray<[T; N], M>;
    #[inline(always)]
    fn row(&self) -> &[T] {
        self.as_flattened()
    }
    #[inline(always)]
    fn held(self) -> crate::shared::SharedArray<[T; N], M> {
        crate::shared::SharedArray::from_array(self)
    }
}

/// The tangent of a row, written by the pullbacks of reads of its elements.
pub trait TangentRow<E> {
    /// The element tangents.
    fn row_mut(&mut self) -> &mut [E];
}

impl<E> TangentRow<E> for Vec<E> {
    #[inline(always)]
    fn row_mut(&mut self) -> &mut [E] {
        self
    }
}

impl<E, const N: usize> TangentRow<E> for [E; N] {
    #[inline(always)]
    fn row_mut(&mut self) -> &mut [E] {
        self
    }
}

impl<E, const N: usize, const M: usize> TangentRow<E> for [[E; N]; M] {
    #[inline(always)]
    fn row_mut(&mut self) -> &mut [E] {
        self.as_flattened_mut()
    }
}

/// The shadow of a row a rule copies (see [`repeat_rows_rrule`]): the tangents of its elements in
/// order, whether it is one shadow of numbers (a `Vec` or array of numbers) or a shadow per row
/// (a held matrix, `[[f64; 3]; 3]`).
pub trait RowShadow<T> {
    /// Runs `f` on the tangents, in row-major order.
    fn with_flat_mut<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> R;
}

impl<T> RowShadow<T> for SharedVec<T> {
    #[inline]
    fn with_flat_mut<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> R {
        self.with_mut(|d| f(d))
    }
}

impl<T, const N: usize> RowShadow<T> for SharedVec<[T; N]> {
    #[inline]
    fn with_flat_mut<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> R {
        self.with_mut(|d| f(d.as_flattened_mut()))
    }
}

/// Reverse rule of a read `x[i][j]` of a buffer of rows: the element, and a pullback adding its
/// gradient into `dx[i][j]`.
///
/// # Panics
/// If an index is out of bounds, as indexing does.
#[inline]
pub fn get2_rrule<V, S>(
    x: CoDual<&S, SharedVec<V::Tangent>>,
    i: CoDual<usize, NoFData>,
    j: CoDual<usize, NoFData>,
) -> (
    CoDual<V::Elem, NoFData>,
    impl FnOnce(<V::Elem as Primal>::RData) -> (NoRData, NoRData, NoRData) + use<V, S>,
)
where
    V: Row + Primal,
    V::Tangent: TangentRow<<V::Elem as Primal>::Tangent>,
    S: ReadBuffer<V> + ?Sized,
{
    let (i, j) = (i.primal, j.primal);
    let y = x.primal.with_slice(|s| s[i].row()[j]);
    let dx = x.fdata;
    let pullback = move |r: <V::Elem as Primal>::RData| {
        dx.with_mut(|d| V::Elem::add_rdata(&mut d[i].row_mut()[j], r));
        (NoRData, NoRData, NoRData)
    };
    (CoDual::new(y, NoFData), pullback)
}

/// The length of row `i` of a buffer of rows (no derivative): rows of numbers, of tuples
/// (`&[Vec<(usize, f64)>]`, a sparse matrix's rows), of structs.
#[inline]
pub fn row_len<V: BufferLen, S: ReadBuffer<V> + ?Sized>(x: &S, i: usize) -> usize {
    x.with_slice(|s| s[i].buffer_len())
}

/// A buffer's length: slices, `Vec`s, arrays, and references to them. What derived code reads
/// of a row of a buffer of rows (`x[i].len()`, a loop over `x[i]`: rows of numbers, of tuples,
/// of structs), and what `value_and_derivative!` compares a buffer's tangent with
/// (`api::LenCheck`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read as a row (`x[i].len()`, a loop over `x[i]`), which it is not",
    label = "an element of a buffer of rows",
    note = "the rows of a buffer of rows are `Vec`s or arrays (`&[Vec<f64>]`, `&[[f64; 3]]`, `&[Vec<(usize, f64)>]`)"
)]
pub trait BufferLen {
    /// The number of elements.
    fn buffer_len(&self) -> usize;
}

impl<T> BufferLen for [T] {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        self.len()
    }
}

impl<T> BufferLen for Vec<T> {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        self.len()
    }
}

impl<T, const N: usize> BufferLen for [T; N] {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        N
    }
}

impl<T: BufferLen + ?Sized> BufferLen for &T {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        (**self).buffer_len()
    }
}

impl<T: BufferLen + ?Sized> BufferLen for &mut T {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        (**self).buffer_len()
    }
}

/// Reverse rule of a row `&x[i]` of a buffer of rows lent to a call: a copy of the row (a `Vec`
/// of a buffer of `Vec`s, an array of a buffer of arrays) with a fresh zero shadow, whose
/// gradient the pullback adds into `dx[i]`.
///
/// # Panics
/// If `i` is out of bounds, as indexing does.
#[inline]
pub fn row_to_vec_rrule<V, S>(
    x: CoDual<&S, SharedVec<V::Tangent>>,
    i: CoDual<usize, NoFData>,
) -> (
    CoDual<V::Held, SharedVec<<V::Elem as Primal>::Tangent>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<V, S>,
)
where
    V: Row + Primal + Clone,
    V::Tangent: TangentRow<<V::Elem as Primal>::Tangent>,
    S: ReadBuffer<V> + ?Sized,
{
    let i = i.primal;
    let (y, len) = x.primal.with_slice(|s| (s[i].clone().held(), s[i].row().len()));
    let dy = SharedVec::filled_kept(V::Elem::ZERO_TANGENT, len);
    let (dx, shadow) = (x.fdata, dy.clone());
    let pullback = move |_: NoRData| {
        shadow.with(|g| dx.with_mut(|d| add_into::<V::Elem>(d[i].row_mut(), g)));
        (NoRData, NoRData)
    };
    (CoDual::new(y, dy), pullback)
}

/// A row that can be written: a `Vec` or an array of elements.
pub trait RowWrite: Row {
    /// The elements, mutably.
    fn row_write(&mut self) -> &mut [Self::Elem];
}

impl<T: Element> RowWrite for Vec<T> {
    #[inline(always)]
    fn row_write(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Element, const N: usize> RowWrite for [T; N] {
    #[inline(always)]
    fn row_write(&mut self) -> &mut [T] {
        self
    }
}

/// Reverse rule of a store `x[i][j] = v` into a buffer of rows: keeps the element and its
/// shadow it overwrites (the shadow's element is zeroed); the pullback returns the element's
/// gradient as `v̄` and puts both back.
///
/// # Panics
/// If an index is out of bounds, as indexing does.
#[inline]
pub fn set2_rrule<V: RowWrite + Primal>(
    x: CoDual<SharedVec<V>, SharedVec<V::Tangent>>,
    i: CoDual<usize, NoFData>,
    j: CoDual<usize, NoFData>,
    v: CoDual<V::Elem, NoFData>,
) -> (
    CoDual<(), NoFData>,
    impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData, <V::Elem as Primal>::RData) + use<V>,
)
where
    V::Tangent: TangentRow<<V::Elem as Primal>::Tangent>,
{
    let (x, dx) = x.into_parts();
    let (i, j) = (i.primal, j.primal);
    let old = x.with_mut(|s| std::mem::replace(&mut s[i].row_write()[j], v.primal));
    let old_d = dx.with_mut(|d| std::mem::replace(&mut d[i].row_mut()[j], V::Elem::ZERO_TANGENT));
    let pullback = move |_: NoRData| {
        let g = dx.with_mut(|d| std::mem::replace(&mut d[i].row_mut()[j], old_d));
        x.with_mut(|s| s[i].row_write()[j] = old);
        (NoRData, NoRData, NoRData, V::Elem::tangent_rdata(g))
    };
    (CoDual::new((), NoFData), pullback)
}

/// A buffer that can become a row of a buffer of rows (`m.push(row)` of `m: Vec<Vec<f64>>`,
/// `ps.push([a, b])` of `ps: Vec<[f64; 2]>`, `vec![[0.0; 2]; n]`): a local `Vec` or array
/// behind its reverse-mode handle, a `Vec`, an array or a slice.
pub trait RowValue {
    /// The row: a `Vec` of a `Vec` or slice, an array of an array.
    type Row: Row;
    /// A copy of the elements as a row.
    fn row_value(&self) -> Self::Row;
}

impl<T: Element> RowValue for SharedVec<T> {
    type Row = Vec<T>;
    #[inline]
    fn row_value(&self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Element, const N: usize> RowValue for crate::shared::SharedArray<T, N> {
    type Row = [T; N];
    #[inline]
    fn row_value(&self) -> [T; N] {
        self.to_array()
    }
}

impl<T: Element, const N: usize, const M: usize> RowValue
    for crate::shared::SharedArray<[T; N], M>
{
    type Row = [[T; N]; M];
    #[inline]
    fn row_value(&self) -> [[T; N]; M] {
        self.to_array()
    }
}

impl<T: Element> RowValue for Vec<T> {
    type Row = Vec<T>;
    #[inline]
    fn row_value(&self) -> Vec<T> {
        self.clone()
    }
}

impl<T: Element> RowValue for [T] {
    type Row = Vec<T>;
    #[inline]
    fn row_value(&self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Element, const N: usize> RowValue for [T; N] {
    type Row = [T; N];
    #[inline(always)]
    fn row_value(&self) -> [T; N] {
        *self
    }
}

impl<T: Element, const N: usize, const M: usize> RowValue for [[T; N]; M] {
    type Row = [[T; N]; M];
    #[inline(always)]
    fn row_value(&self) -> [[T; N]; M] {
        *self
    }
}

impl<B: RowValue + ?Sized> RowValue for &B {
    type Row = B::Row;
    #[inline(always)]
    fn row_value(&self) -> B::Row {
        (**self).row_value()
    }
}

/// Reverse rule of `x.push(row)` of a buffer `row` onto a buffer of rows the function builds
/// (`m.push(row)` of `m: Vec<Vec<f64>>`, `ps.push([a, b])` of `ps: Vec<[f64; 2]>`): pushes a
/// copy of the row onto `x` and a zero row onto its shadow; the pullback pops both and adds the
/// popped row's gradient into `row`'s shadow.
///
/// # Panics
/// If the shadow is shorter than `x`, or the row's shadow is not as long as the row.
#[inline]
#[allow(clippy::type_complexity)]
pub fn push_row_rrule<V, H, L>(
    x: CoDual<SharedVec<V>, SharedVec<V::Tangent>>,
    row: CoDual<H, L>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, L::RData) + use<V, H, L>)
where
    V: Row + Primal,
    V::Tangent: TangentRow<<V::Elem as Primal>::Tangent>,
    H: RowValue<Row = V>,
    L: RowLink<V::Elem>,
{
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let (v, link) = (row.primal.row_value(), row.fdata);
    dx.push(v.zero_tangent());
    x.push(v);
    let pullback = move |_: NoRData| {
        let mut g = dx.pop().expect(SHADOW_TOO_SHORT);
        let r = link.give(g.row_mut());
        x.pop();
        (NoRData, r)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Where a row copied into a buffer of rows gives its gradient back (see [`push_row_rrule`]):
/// into the shadow of the buffer it was copied from, or, for an array value (a call's result,
/// `ps.push(pair(a))`), as the array's rdata.
pub trait RowLink<E: Element> {
    /// The row's rdata: `NoRData` for a buffer with a shadow, the elements' for an array value.
    type RData;
    /// Gives the row's gradient `g` back.
    fn give(self, g: &[E::Tangent]) -> Self::RData;
}

/// A row held with a shadow: a buffer of numbers, or a held matrix (`[[f64; 3]; 3]` built in the
/// body) with a shadow per row.
impl<E: Element, T> RowLink<E> for SharedVec<T>
where
    SharedVec<T>: RowShadow<E::Tangent>,
{
    type RData = NoRData;
    #[inline]
    fn give(self, g: &[E::Tangent]) -> NoRData {
        self.with_flat_mut(|d| add_into::<E>(d, g));
        NoRData
    }
}

impl<E: Element, const N: usize> RowLink<E> for [NoFData; N] {
    type RData = [E::RData; N];
    #[inline]
    fn give(self, g: &[E::Tangent]) -> [E::RData; N] {
        std::array::from_fn(|k| E::tangent_rdata(g[k]))
    }
}

impl<E: Element, const N: usize, const M: usize> RowLink<E> for [[NoFData; N]; M] {
    type RData = [[E::RData; N]; M];
    #[inline]
    fn give(self, g: &[E::Tangent]) -> [[E::RData; N]; M] {
        std::array::from_fn(|i| std::array::from_fn(|j| E::tangent_rdata(g[i * N + j])))
    }
}

/// Reverse rule of a buffer of rows built from rows the function holds (`[[a, b], [c, d]]`,
/// `vec![r0, r1]` of arrays or `Vec`s): copies of the rows with zero shadows; the pullback adds
/// each row's gradient into the shadow of the row it was copied from.
#[inline]
#[allow(clippy::type_complexity)]
pub fn vec_from_rows_rrule<H: RowValue, const M: usize>(
    rows: [CoDual<H, SharedVec<<<H::Row as Row>::Elem as Primal>::Tangent>>; M],
) -> (
    CoDual<Vec<H::Row>, SharedVec<<H::Row as Primal>::Tangent>>,
    impl FnOnce(NoRData) -> ([NoRData; M],) + use<H, M>,
)
where
    H::Row: Primal,
    <H::Row as Primal>::Tangent: TangentRow<<<H::Row as Row>::Elem as Primal>::Tangent>,
{
    let mut y = Vec::with_capacity(M);
    let mut shadows = Vec::with_capacity(M);
    for r in rows {
        y.push(r.primal.row_value());
        shadows.push(r.fdata);
    }
    let dy = SharedVec::from_vec(y.iter().map(Primal::zero_tangent).collect());
    let shadow = dy.clone();
    let pullback = move |_: NoRData| {
        shadow.with_mut(|g| {
            g.iter_mut().zip(&shadows).for_each(|(g, d)| {
                d.with_mut(|d| add_into::<<H::Row as Row>::Elem>(d, g.row_mut()))
            })
        });
        ([NoRData; M],)
    };
    (CoDual::new(y, dy), pullback)
}

/// Reverse rule of `vec![row; n]` for a buffer `row` (a matrix of `n` equal rows; rows of a
/// `Vec` or slice are `Vec`s, rows of an array arrays): `n` copies with zero shadows; the
/// pullback adds every row's gradient into `row`'s shadow.
#[inline]
#[allow(clippy::type_complexity)]
pub fn repeat_rows_rrule<B: RowValue, D>(
    row: CoDual<B, D>,
    n: CoDual<usize, NoFData>,
) -> (
    CoDual<Vec<B::Row>, SharedVec<<B::Row as Primal>::Tangent>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData) + use<B, D>,
)
where
    B::Row: Primal + Clone,
    <B::Row as Primal>::Tangent: TangentRow<<<B::Row as Row>::Elem as Primal>::Tangent> + Clone,
    D: RowShadow<<<B::Row as Row>::Elem as Primal>::Tangent>,
{
    let r = row.primal.row_value();
    let zero = r.zero_tangent();
    let y = vec![r; n.primal];
    let dy = SharedVec::from_vec(vec![zero; n.primal]);
    let (d_row, shadow) = (row.fdata, dy.clone());
    let pullback = move |_: NoRData| {
        shadow.with_mut(|rows| {
            d_row.with_flat_mut(|d| {
                rows.iter_mut().for_each(|g| add_into::<<B::Row as Row>::Elem>(d, g.row_mut()))
            })
        });
        (NoRData, NoRData)
    };
    (CoDual::new(y, dy), pullback)
}

/// Reverse rule of a read of a number inside an element of a buffer (`layers[k].w[j]`,
/// `ps[k].0`, `net.layers[k].b`), or of a `Copy` value of numbers (an array in a tuple,
/// `data[k].0` of `[([f64; 2], f64); 4]`, whose gradient is all rdata): `get` reads it from the
/// elements, and the pullback has `add` add its gradient into the shadow's element (derived code
/// writes both as the same path).
#[inline]
pub fn deep_read_rrule<E, T, S, G, A>(
    x: CoDual<&S, SharedVec<E::Tangent>>,
    get: G,
    add: A,
) -> (CoDual<T, T::FData>, impl FnOnce(T::RData) + use<E, T, S, G, A>)
where
    E: Primal,
    S: ReadBuffer<E> + ?Sized,
    T: Primal + Copy,
    G: FnOnce(&[E]) -> T,
    A: FnOnce(&mut [E::Tangent], T::RData),
{
    let y = x.primal.with_slice(get);
    let dx = x.fdata;
    (CoDual::new(y, y.zero_fdata()), move |r: T::RData| dx.with_mut(|d| add(d, r)))
}

/// Reverse rule of a store of a number inside an element of a buffer (`ps[k].x = v`,
/// `layers[k].b[o] = v`): `at` and `at_d` reach the number in the elements and in the shadow
/// (derived code writes both as the same path). The number and its shadow are kept (the
/// shadow's is zeroed); the pullback returns the shadow's number as `v̄` and puts both back.
#[inline]
pub fn deep_write_rrule<E, T, G, H>(
    x: CoDual<SharedVec<E>, SharedVec<E::Tangent>>,
    at: G,
    at_d: H,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> T::RData + use<E, T, G, H>)
where
    E: Primal,
    T: Element,
    G: Fn(&mut [E]) -> &mut T,
    H: Fn(&mut [E::Tangent]) -> &mut T::Tangent,
{
    let (x, dx) = x.into_parts();
    let old = x.with_mut(|s| std::mem::replace(at(s), v.primal));
    let old_d = dx.with_mut(|d| std::mem::replace(at_d(d), T::ZERO_TANGENT));
    let pullback = move |_: NoRData| {
        let g = dx.with_mut(|d| std::mem::replace(at_d(d), old_d));
        x.with_mut(|s| *at(s) = old);
        T::tangent_rdata(g)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Reverse rule of a buffer inside an element of a buffer lent to a call (`dot(&layers[k].w,
/// x)`, `norm2(&bodies[k].p)` of an array field): a copy (`get`), held as its type is (a `Vec`
/// as a `SharedVec`, an array as a `SharedArray`), with a fresh zero shadow, whose gradient the
/// pullback has `add` add into the shadow's element.
#[inline]
#[allow(clippy::type_complexity)]
pub fn deep_to_vec_rrule<E, V, S, G, A>(
    x: CoDual<&S, SharedVec<E::Tangent>>,
    get: G,
    add: A,
) -> (
    CoDual<V::Held, SharedVec<<V::Elem as Primal>::Tangent>>,
    impl FnOnce(NoRData) + use<E, V, S, G, A>,
)
where
    E: Primal,
    S: ReadBuffer<E> + ?Sized,
    V: Row,
    G: FnOnce(&[E]) -> V,
    A: FnOnce(&mut [E::Tangent], &[<V::Elem as Primal>::Tangent]),
{
    let y = x.primal.with_slice(get);
    let dy = SharedVec::filled_kept(V::Elem::ZERO_TANGENT, y.row().len());
    let (dx, shadow) = (x.fdata, dy.clone());
    let pullback = move |_: NoRData| shadow.with(|g| dx.with_mut(|d| add(d, g)));
    (CoDual::new(y.held(), dy), pullback)
}

/// Reverse rule of a copy of an element of a buffer lent whole to a user function or method
/// (`for l in net.layers.iter() { h = l.forward(&h); }`, `f(&bodies[i])`): `get` clones the
/// element, which gets a zero fdata of its own; the pullback joins that fdata with the rdata
/// given into the copy's tangent and `add`s it into the element's place in the shadow (derived
/// code writes both as the same path). The borrow was shared, so the callee only read the copy.
#[inline]
#[allow(clippy::type_complexity)]
pub fn deep_clone_rrule<E, V, S, G, A>(
    x: CoDual<&S, SharedVec<E::Tangent>>,
    get: G,
    add: A,
) -> (CoDual<V, V::FData>, impl FnOnce(V::RData) + use<E, V, S, G, A>)
where
    E: Primal,
    S: ReadBuffer<E> + ?Sized,
    V: Primal,
    G: FnOnce(&[E]) -> V,
    A: FnOnce(&mut [E::Tangent], V::Tangent),
{
    let y = x.primal.with_slice(get);
    let f = y.zero_fdata();
    let (dx, fd) = (x.fdata, f.clone());
    let pullback = move |r: V::RData| {
        let t = V::join_tangent(&fd, r);
        dx.with_mut(|d| add(d, t));
    };
    (CoDual::new(y, f), pullback)
}

/// Reverse rule of `p.clone()` of a value behind a shared reference (`let mut q = p.clone();` of
/// `p: &S`, a `#[derive(Tangent)]` struct): a copy with a zero fdata of its own; the pullback
/// joins that fdata with the rdata given into the copy's tangent and adds it into `p`'s shadow.
#[inline]
#[allow(clippy::type_complexity)]
pub fn clone_ref_rrule<S: Primal + Clone>(
    x: CoDual<&S, S::Shadow>,
) -> (CoDual<S, S::FData>, impl FnOnce(S::RData) + use<S>) {
    let y = x.primal.clone();
    let f = y.zero_fdata();
    let (dx, fd) = (x.fdata, f.clone());
    let pullback = move |r: S::RData| {
        let t = S::join_tangent(&fd, r);
        crate::tangent::FData::increment_from(&dx, &S::tangent_to_shadow(t));
    };
    (CoDual::new(y, f), pullback)
}

/// Reverse rule of `p.clone()` of a value held by value (`let mut q = p.clone();` of `p: S`): a
/// copy with a zero fdata of its own; the pullback joins that fdata with the rdata given into
/// the copy's tangent, adds its fdata part into `p`'s fdata and returns its rdata part as `p`'s.
#[inline]
#[allow(clippy::type_complexity)]
pub fn clone_value_rrule<S: Primal + Clone>(
    x: &CoDual<S, S::FData>,
) -> (CoDual<S, S::FData>, impl FnOnce(S::RData) -> S::RData + use<S>) {
    let y = x.primal.clone();
    let f = y.zero_fdata();
    let (dx, fd) = (x.fdata.clone(), f.clone());
    let pullback = move |r: S::RData| {
        let (f, r) = S::split_tangent(S::join_tangent(&fd, r));
        crate::tangent::FData::increment_from(&dx, &f);
        r
    };
    (CoDual::new(y, f), pullback)
}

/// Reverse rule of the store that puts back a copy of an element of a buffer the function may
/// write, after a user method ran on the copy (`bodies[i].advance(dt)` of `bodies: &mut [Body]`
/// is the copy [`deep_clone_rrule`], the method on the copy, then this): `at` and `at_d` reach
/// the element in the elements and in the shadow (derived code writes both as the same path).
/// The element and its shadow are kept (the shadow's element is zeroed); the pullback gives the
/// shadow's element to the copy (its fdata part added into the copy's fdata, its rdata part
/// returned) and puts both back.
#[inline]
#[allow(clippy::type_complexity)]
pub fn deep_put_rrule<E, V, G, H>(
    x: CoDual<SharedVec<E>, SharedVec<E::Tangent>>,
    at: G,
    at_d: H,
    v: CoDual<V, V::FData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> V::RData + use<E, V, G, H>)
where
    E: Primal,
    V: Primal,
    G: Fn(&mut [E]) -> &mut V,
    H: Fn(&mut [E::Tangent]) -> &mut V::Tangent,
{
    let (x, dx) = x.into_parts();
    let (v, fd) = (v.primal, v.fdata);
    let zero = v.zero_tangent();
    let old = x.with_mut(|s| std::mem::replace(at(s), v));
    let old_d = dx.with_mut(|d| std::mem::replace(at_d(d), zero));
    let pullback = move |_: NoRData| {
        let g = dx.with_mut(|d| std::mem::replace(at_d(d), old_d));
        x.with_mut(|s| *at(s) = old);
        let (f, r) = V::split_tangent(g);
        crate::tangent::FData::increment_from(&fd, &f);
        r
    };
    (CoDual::new((), NoFData), pullback)
}

/// Adds the tangent `t` into `d` (see [`deep_clone_rrule`]).
#[inline(always)]
pub fn add_tangent<T: crate::tangent::TangentSpace>(d: &mut T, t: &T) {
    d.increment(t);
}

/// Adds `r` into the tangent `d` (a number's gradient, or nothing for a number with none).
#[inline(always)]
pub fn add_rdata_to<D: crate::element::AddRData<R>, R>(d: &mut D, r: R) {
    d.add_rdata(r);
}

/// Adds the tangents `g` into the row `dst` element by element.
#[inline]
pub fn add_row<R: TangentRow<E> + ?Sized, E: crate::tangent::TangentSpace>(dst: &mut R, g: &[E]) {
    for (a, b) in dst.row_mut().iter_mut().zip(g) {
        a.increment(b);
    }
}

// ---------------------------------------------------------------------------------------------
// sub-slices: `&x[a..b]` read as a copy, `&mut x[a..b]` written back

/// Forward rule of a sub-slice `&x[start..end]` as derived code reads it: copies of the
/// elements and of their tangents.
///
/// # Panics
/// If the range is out of bounds, as slicing does.
#[inline]
pub fn sub_to_vec_frule<T: Primal + Clone, B: ReadBuffer<T>, BT: ReadBuffer<T::Tangent>>(
    x: Dual<B, BT>,
    start: Dual<usize, NoTangent>,
    end: Dual<usize, NoTangent>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    let r = start.primal..end.primal;
    Dual::new(
        x.primal.with_slice(|s| s[r.clone()].to_vec()),
        x.tangent.with_slice(|s| s[r.clone()].to_vec()),
    )
}

/// Reverse rule of a sub-slice `&x[start..end]` read as a copy: the copy gets a fresh zero
/// shadow, and the pullback adds it into `dx[start..end]`.
///
/// # Panics
/// If the range is out of bounds, as slicing does.
#[inline]
pub fn sub_to_vec_rrule<T: Primal + Clone, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T::Tangent>>,
    start: CoDual<usize, NoFData>,
    end: CoDual<usize, NoFData>,
) -> (
    CoDual<Vec<T>, SharedVec<T::Tangent>>,
    impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<T, S>,
) {
    let r = start.primal..end.primal;
    let y = x.primal.with_slice(|s| s[r.clone()].to_vec());
    let dy = SharedVec::from_vec(y.iter().map(Primal::zero_tangent).collect());
    let (dx, shadow) = (x.fdata, dy.clone());
    let pullback = move |_: NoRData| {
        shadow.with(|g| {
            dx.with_mut(|d| {
                for (a, b) in d[r].iter_mut().zip(g) {
                    crate::tangent::TangentSpace::increment(a, b);
                }
            })
        });
        (NoRData, NoRData, NoRData)
    };
    (CoDual::new(y, dy), pullback)
}

/// Forward rule of writing a copy back into a sub-slice (`x[start..start + n]` from a
/// buffer of length `n`, after `&mut x[a..b]` was lent as a copy): a `copy_from_slice` into the
/// range, of the values and of the tangents.
///
/// # Panics
/// If the range is out of bounds.
#[inline]
pub fn sub_assign_frule<T, M, MT>(
    x: Dual<M, MT>,
    start: Dual<usize, NoTangent>,
    src: Dual<&[T], &[T::Tangent]>,
) -> Dual<(), NoTangent>
where
    T: Element,
    M: WriteBuffer<T>,
    MT: WriteBuffer<T::Tangent>,
{
    let (mut x, mut dx) = x.into_parts();
    let r = start.primal..start.primal + src.primal.len();
    x.with_slice_mut(|d| d[r.clone()].copy_from_slice(src.primal));
    dx.with_slice_mut(|d| d[r.clone()].copy_from_slice(src.tangent));
    Dual::new((), NoTangent)
}

/// Reverse rule of writing a copy back into a sub-slice: saves the range of `x` and of its
/// shadow (the only allocations), writes the copy and zeroes the shadow's range; the pullback
/// adds the range's gradient into the copy's shadow, then puts back the saved shadow and
/// values.
///
/// # Panics
/// If the range is out of bounds.
#[inline]
pub fn sub_assign_rrule<T: Element, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    start: CoDual<usize, NoFData>,
    src: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<T, S>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let r = start.primal..start.primal + src.primal.len();
    let old = x.with_mut(|d| {
        let old = d[r.clone()].to_vec();
        src.primal.with_slice(|s| d[r.clone()].copy_from_slice(s));
        old
    });
    let old_d = dx.with_mut(|d| {
        let old = d[r.clone()].to_vec();
        d[r.clone()].fill(T::ZERO_TANGENT);
        old
    });
    let d_src = src.fdata;
    let pullback = move |_: NoRData| {
        let g = dx.with_mut(|d| {
            let g = d[r.clone()].to_vec();
            d[r.clone()].copy_from_slice(&old_d);
            g
        });
        d_src.with_mut(|d| add_into::<T>(d, &g));
        x.with_mut(|d| d[r].copy_from_slice(&old));
        (NoRData, NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// clear, truncate, resize, extend_from_slice

/// Forward rule of `x.clear()`: clears `x` and its tangent.
#[inline]
pub fn clear_frule<T: Primal>(x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>) -> Dual<(), NoTangent> {
    x.primal.clear();
    x.tangent.clear();
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.clear()`: takes `x` and its shadow whole (no copy) and leaves both
/// empty; the pullback puts them back. The cleared elements reach nothing after the clear, so
/// their shadow comes back as it was.
#[inline]
pub fn clear_rrule<T: Primal>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData,) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let old = x.replace(Vec::new());
    let old_d = dx.replace(Vec::new());
    let pullback = move |_: NoRData| {
        x.replace(old);
        dx.replace(old_d);
        (NoRData,)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.truncate(n)`: truncates `x` and its tangent.
#[inline]
pub fn truncate_frule<T: Primal>(
    x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>,
    n: Dual<usize, NoTangent>,
) -> Dual<(), NoTangent> {
    x.primal.truncate(n.primal);
    x.tangent.truncate(n.primal);
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.truncate(n)`: splits off the elements past `n` and their shadow; the
/// pullback puts them back. Nothing is removed if `n` is at least the length.
#[inline]
pub fn truncate_rrule<T: Primal>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    n: CoDual<usize, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let at = n.primal.min(x.len());
    let tail = x.with_mut(|v| v.split_off(at));
    let d_tail = dx.with_mut(|v| v.split_off(at.min(v.len())));
    let pullback = move |_: NoRData| {
        x.with_mut(|v| v.extend(tail));
        dx.with_mut(|v| v.extend(d_tail));
        (NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.resize(n, v)`: resizes `x` with `v` and its tangent with `dv`.
#[inline]
pub fn resize_frule<T: Element>(
    x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>,
    n: Dual<usize, NoTangent>,
    v: Dual<T, T::Tangent>,
) -> Dual<(), NoTangent> {
    x.primal.resize(n.primal, v.primal);
    x.tangent.resize(n.primal, v.tangent);
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.resize(n, v)`. Shrinking splits off the elements past `n` and their
/// shadow, and the pullback puts them back (`v̄ = 0`); growing appends copies of `v` and zeros
/// to the shadow, and the pullback returns `v̄` as the sum of the new elements' gradients and
/// truncates both back.
#[inline]
pub fn resize_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    n: CoDual<usize, NoFData>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, T::RData) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let (old_len, n) = (x.len(), n.primal);
    let (tail, d_tail) = if n < old_len {
        (x.with_mut(|s| s.split_off(n)), dx.with_mut(|s| s.split_off(n.min(s.len()))))
    } else {
        x.with_mut(|s| s.resize(n, v.primal));
        dx.with_mut(|s| s.resize(n, T::ZERO_TANGENT));
        (Vec::new(), Vec::new())
    };
    let pullback = move |_: NoRData| {
        let v_bar = if n < old_len {
            x.with_mut(|s| s.extend_from_slice(&tail));
            dx.with_mut(|s| s.extend_from_slice(&d_tail));
            T::sum_rdata(&[])
        } else {
            x.with_mut(|s| s.truncate(old_len));
            dx.with_mut(|s| T::sum_rdata(&s.split_off(old_len.min(s.len()))))
        };
        (NoRData, NoRData, v_bar)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.extend_from_slice(src)`: appends `src` to `x` and its tangent to `x`'s.
#[inline]
pub fn extend_from_slice_frule<T: Primal + Clone>(
    x: Dual<&mut Vec<T>, &mut Vec<T::Tangent>>,
    src: Dual<&[T], &[T::Tangent]>,
) -> Dual<(), NoTangent> {
    x.primal.extend_from_slice(src.primal);
    x.tangent.extend_from_slice(src.tangent);
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.extend_from_slice(src)`: appends `src` to `x` and zeros to its shadow;
/// the pullback adds the appended elements' gradients into `src`'s shadow and truncates both
/// back.
#[inline]
pub fn extend_from_slice_rrule<T: Primal + Clone, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    src: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T, S>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let old_len = x.len();
    let zeros: Vec<T::Tangent> = src.primal.with_slice(|t| {
        x.with_mut(|s| s.extend_from_slice(t));
        t.iter().map(Primal::zero_tangent).collect()
    });
    dx.with_mut(|s| s.extend(zeros));
    let d_src = src.fdata;
    let pullback = move |_: NoRData| {
        x.with_mut(|s| s.truncate(old_len));
        let g = dx.with_mut(|s| s.split_off(old_len.min(s.len())));
        d_src.with_mut(|d| {
            assert_eq!(d.len(), g.len(), "mooncake: a shadow of the wrong length");
            d.iter_mut().zip(&g).for_each(|(d, g)| crate::tangent::TangentSpace::increment(d, g));
        });
        (NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// to_vec, clone

/// Forward rule of `x.to_vec()`: copies of `x` and of its tangent.
#[inline]
pub fn to_vec_frule<T: Primal + Clone, B: ReadBuffer<T>, BT: ReadBuffer<T::Tangent>>(
    x: Dual<B, BT>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    Dual::new(x.primal.with_slice(<[T]>::to_vec), x.tangent.with_slice(<[T::Tangent]>::to_vec))
}

/// Reverse rule of `x.to_vec()`: a copy of `x` with a fresh zero shadow; the pullback adds the
/// copy's gradient into `dx`.
#[inline]
pub fn to_vec_rrule<T: Element, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> (NoRData,) + use<T, S>) {
    let y = x.primal.with_slice(crate::kept::copy_of);
    let dy = SharedVec::filled_kept(T::ZERO_TANGENT, y.len());
    let (dx, shadow) = (x.fdata, dy.clone());
    let pullback = move |_: NoRData| {
        shadow.with(|g| dx.with_mut(|d| add_into::<T>(d, g)));
        (NoRData,)
    };
    (CoDual::new(y, dy), pullback)
}

/// Reverse rule of `x.to_vec()` / `x.clone()` of a buffer of values with tangents of their own
/// (`#[derive(Tangent)]` structs, tuples: `let mut bodies = init.to_vec();`): a copy with a
/// fresh zero shadow; the pullback adds the copy's gradient into `dx`, element by element.
#[inline]
pub fn values_to_vec_rrule<T: Primal + Clone, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> (NoRData,) + use<T, S>) {
    let y = x.primal.with_slice(<[T]>::to_vec);
    let dy = SharedVec::from_vec(y.iter().map(Primal::zero_tangent).collect());
    let (dx, shadow) = (x.fdata, dy.clone());
    let pullback = move |_: NoRData| {
        shadow.with(|g| {
            dx.with_mut(|d| {
                d.iter_mut().zip(g).for_each(|(d, g)| crate::tangent::TangentSpace::increment(d, g))
            });
        });
        (NoRData,)
    };
    (CoDual::new(y, dy), pullback)
}

/// Forward rule of `x.clone()` for a `Vec` `x`: as [`to_vec_frule`].
#[inline]
pub fn vec_clone_frule<T: Primal + Clone, B: ReadBuffer<T>, BT: ReadBuffer<T::Tangent>>(
    x: Dual<B, BT>,
) -> Dual<Vec<T>, Vec<T::Tangent>> {
    to_vec_frule(x)
}

/// Reverse rule of `x.clone()` for a `Vec` `x`: as [`to_vec_rrule`].
#[inline]
pub fn vec_clone_rrule<T: Element, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<Vec<T>, SharedVec<T::Tangent>>, impl FnOnce(NoRData) -> (NoRData,) + use<T, S>) {
    to_vec_rrule(x)
}

// ---------------------------------------------------------------------------------------------
// fill, copy_from_slice, swap

/// Forward rule of `x.fill(v)`: fills `x` with `v` and its tangent with `dv`.
#[inline]
pub fn fill_frule<T: Element, M: WriteBuffer<T>, MT: WriteBuffer<T::Tangent>>(
    x: Dual<M, MT>,
    v: Dual<T, T::Tangent>,
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    x.with_slice_mut(|s| s.fill(v.primal));
    dx.with_slice_mut(|s| s.fill(v.tangent));
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.fill(v)`. The forward pass saves copies of `x` and `dx` (the only
/// allocations), fills `x` with `v` and zeroes `dx`; the pullback returns `v̄ = Σ dx`, puts the
/// saved `dx` back and restores `x`.
#[inline]
pub fn fill_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    v: CoDual<T, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T::RData) + use<T>) {
    let (x, dx) = x.into_parts();
    debug_check_shadow(x.len(), dx.len());
    let old = x.with_mut(|s| {
        let old = s.clone();
        s.fill(v.primal);
        old
    });
    let old_d = dx.with_mut(|s| {
        let old = s.clone();
        s.fill(T::ZERO_TANGENT);
        old
    });
    let pullback = move |_: NoRData| {
        let g = dx.replace(old_d);
        x.with_mut(|s| s.copy_from_slice(&old));
        (NoRData, T::sum_rdata(&g))
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `dst.copy_from_slice(src)`: copies `src` into `dst` and `src`'s tangent into
/// `dst`'s.
///
/// # Panics
/// If the lengths differ, as `copy_from_slice` does (naming both lengths).
#[inline]
pub fn copy_from_slice_frule<T, M, MT, B, BT>(
    dst: Dual<M, MT>,
    src: Dual<B, BT>,
) -> Dual<(), NoTangent>
where
    T: Element,
    M: WriteBuffer<T>,
    MT: WriteBuffer<T::Tangent>,
    B: ReadBuffer<T>,
    BT: ReadBuffer<T::Tangent>,
{
    let (mut dst, mut d_dst) = dst.into_parts();
    dst.with_slice_mut(|d| src.primal.with_slice(|s| d.copy_from_slice(s)));
    d_dst.with_slice_mut(|d| src.tangent.with_slice(|s| d.copy_from_slice(s)));
    Dual::new((), NoTangent)
}

/// Reverse rule of `dst.copy_from_slice(src)`. The forward pass saves copies of `dst` and its
/// shadow (the only allocations), copies `src` into `dst` and zeroes `dst`'s shadow; the
/// pullback adds `dst`'s shadow into `src`'s, puts the saved shadow back and restores `dst`.
///
/// # Panics
/// If the lengths differ, as `copy_from_slice` does (naming both lengths).
#[inline]
pub fn copy_from_slice_rrule<T: Element, S: ReadBuffer<T> + ?Sized>(
    dst: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    src: CoDual<&S, SharedVec<T::Tangent>>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData) + use<T, S>) {
    let (dst, d_dst) = dst.into_parts();
    debug_check_shadow(dst.len(), d_dst.len());
    let old = dst.with_mut(|d| {
        let old = d.clone();
        src.primal.with_slice(|s| d.copy_from_slice(s));
        old
    });
    let old_d = d_dst.with_mut(|s| {
        let old = s.clone();
        s.fill(T::ZERO_TANGENT);
        old
    });
    let d_src = src.fdata;
    let pullback = move |_: NoRData| {
        let g = d_dst.replace(old_d);
        d_src.with_mut(|d| add_into::<T>(d, &g));
        dst.with_mut(|d| d.copy_from_slice(&old));
        (NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

/// The order `x.sort_by(cmp)` puts the elements of `x` in: `perm[k]` is the index in `x` of the
/// element that goes to `k`. Stable, as `sort_by` is. `descending` sorts greatest first (`|a, b|
/// b.partial_cmp(a)`); `total` orders a NaN after every number (as `total_cmp` orders a
/// positive one), where `partial_cmp(..).unwrap()` panics on it as the primal does.
fn sort_permutation<T: PartialOrd>(x: &[T], descending: bool, total: bool) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..x.len()).collect();
    #[allow(clippy::eq_op)] // `a != a`: a NaN
    let order = |a: &T, b: &T| match a.partial_cmp(b) {
        Some(o) => o,
        None if total => (a != a).cmp(&(b != b)),
        None => panic!(
            "called `Option::unwrap()` on a `None` value: `partial_cmp` of a NaN in `sort_by`"
        ),
    };
    perm.sort_by(|&i, &j| {
        let o = order(&x[i], &x[j]);
        if descending { o.reverse() } else { o }
    });
    perm
}

/// `x` rearranged so that element `k` is the old element `perm[k]`.
fn permute<T: Clone>(x: &mut [T], perm: &[usize]) {
    let old = x.to_vec();
    for (k, &p) in perm.iter().enumerate() {
        x[k] = old[p].clone();
    }
}

/// The inverse of [`permute`]: element `perm[k]` gets back element `k`.
fn unpermute<T: Clone>(x: &mut [T], perm: &[usize]) {
    let new = x.to_vec();
    for (k, &p) in perm.iter().enumerate() {
        x[p] = new[k].clone();
    }
}

/// Forward rule of `x.sort_by(cmp)` for a comparator that orders the elements themselves: in
/// ascending order, or greatest first if `descending`; a NaN after every number if `total` (as
/// `total_cmp` orders a positive one). Stable, as `sort_by` is. The tangent moves with its
/// element.
///
/// # Panics
/// On a NaN when not `total`, as `partial_cmp(..).unwrap()` does.
#[inline]
pub fn sort_by_frule<T: Element, M: WriteBuffer<T>, MT: WriteBuffer<T::Tangent>>(
    x: Dual<M, MT>,
    descending: Dual<bool, NoTangent>,
    total: Dual<bool, NoTangent>,
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    let perm = x.with_slice(|s| sort_permutation(s, descending.primal, total.primal));
    x.with_slice_mut(|s| permute(s, &perm));
    dx.with_slice_mut(|s| permute(s, &perm));
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.sort_by(cmp)` (see [`sort_by_frule`]): sorts `x` and moves its shadow
/// with it; the pullback moves both back (a permutation's adjoint is its inverse).
///
/// # Panics
/// On a NaN when not `total`, as `partial_cmp(..).unwrap()` does.
#[inline]
pub fn sort_by_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    descending: CoDual<bool, NoFData>,
    total: CoDual<bool, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<T>) {
    let (x, dx) = x.into_parts();
    let perm = x.with_vec(|s| sort_permutation(s, descending.primal, total.primal));
    x.with_mut(|s| permute(s, &perm));
    dx.with_mut(|s| permute(s, &perm));
    let pullback = move |_: NoRData| {
        dx.with_mut(|s| unpermute(s, &perm));
        x.with_mut(|s| unpermute(s, &perm));
        (NoRData, NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.sort_by(cmp)` with a comparator of keys computed from the elements
/// (`idx.sort_by(|&a, &b| v[a].partial_cmp(&v[b]).unwrap())`, which derived code writes as the
/// keys `idx.iter().map(|&a| v[a]).collect()`, then this): sorts `x` and its tangent by `keys`,
/// stably. No derivative flows through the keys: they only choose the permutation.
///
/// # Panics
/// On a NaN key when not `total`, as `partial_cmp(..).unwrap()` does.
#[inline]
pub fn sort_by_keys_frule<T: Clone, D: Clone, K: PartialOrd>(
    x: &mut [T],
    dx: &mut [D],
    keys: &[K],
    descending: bool,
    total: bool,
) {
    let perm = sort_permutation(keys, descending, total);
    permute(x, &perm);
    if dx.len() == x.len() {
        permute(dx, &perm);
    }
}

/// Reverse rule of `x.sort_by(cmp)` with a comparator of keys (see [`sort_by_keys_frule`]):
/// sorts `x` and its shadow by `keys`; the pullback moves both back. The keys get no gradient.
///
/// # Panics
/// On a NaN key when not `total`, as `partial_cmp(..).unwrap()` does.
#[inline]
#[allow(clippy::type_complexity)]
pub fn sort_by_keys_rrule<T: Primal + Clone, K: PartialOrd + Clone, F>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    keys: CoDual<SharedVec<K>, F>,
    descending: CoDual<bool, NoFData>,
    total: CoDual<bool, NoFData>,
) -> (
    CoDual<(), NoFData>,
    impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData, NoRData) + use<T, K, F>,
) {
    let (x, dx) = x.into_parts();
    let perm = keys.primal.with_vec(|k| sort_permutation(k, descending.primal, total.primal));
    x.with_mut(|s| permute(s, &perm));
    let shadowed = dx.len() == x.len();
    if shadowed {
        dx.with_mut(|s| permute(s, &perm));
    }
    let pullback = move |_: NoRData| {
        if shadowed {
            dx.with_mut(|s| unpermute(s, &perm));
        }
        x.with_mut(|s| unpermute(s, &perm));
        (NoRData, NoRData, NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.reverse()`: reverses `x` and its tangent.
#[inline]
pub fn reverse_frule<T: Element, M: WriteBuffer<T>, MT: WriteBuffer<T::Tangent>>(
    x: Dual<M, MT>,
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    x.with_slice_mut(|s| s.reverse());
    dx.with_slice_mut(|s| s.reverse());
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.reverse()`: reverses `x` and its shadow; the pullback reverses both back.
#[inline]
pub fn reverse_rrule<T: Element>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData,) + use<T>) {
    let (x, dx) = x.into_parts();
    x.with_mut(|s| s.reverse());
    dx.with_mut(|s| s.reverse());
    let pullback = move |_: NoRData| {
        dx.with_mut(|s| s.reverse());
        x.with_mut(|s| s.reverse());
        (NoRData,)
    };
    (CoDual::new((), NoFData), pullback)
}

/// Forward rule of `x.swap(a, b)`: swaps in `x` and in its tangent.
///
/// # Panics
/// If `a` or `b` is out of range, as `swap` does.
#[inline]
pub fn swap_frule<T: Primal, M: WriteBuffer<T>, MT: WriteBuffer<T::Tangent>>(
    x: Dual<M, MT>,
    a: Dual<usize, NoTangent>,
    b: Dual<usize, NoTangent>,
) -> Dual<(), NoTangent> {
    let (mut x, mut dx) = x.into_parts();
    x.swap(a.primal, b.primal);
    dx.swap(a.primal, b.primal);
    Dual::new((), NoTangent)
}

/// Reverse rule of `x.swap(a, b)`: swaps in `x` and in its shadow; the pullback swaps both
/// back (a permutation's adjoint is its inverse).
///
/// # Panics
/// If `a` or `b` is out of range, as `swap` does.
#[inline]
pub fn swap_rrule<T: Primal>(
    x: CoDual<SharedVec<T>, SharedVec<T::Tangent>>,
    a: CoDual<usize, NoFData>,
    b: CoDual<usize, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, NoRData) + use<T>) {
    let (x, dx) = x.into_parts();
    let (a, b) = (a.primal, b.primal);
    x.swap(a, b);
    dx.swap(a, b);
    let pullback = move |_: NoRData| {
        dx.swap(a, b);
        x.swap(a, b);
        (NoRData, NoRData, NoRData)
    };
    (CoDual::new((), NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// sum

/// Forward rule of `x.iter().sum::<T>()`: `(Σ x, Σ dx)`.
#[inline]
pub fn sum_frule<T: SumElement, B: ReadBuffer<T>, BT: ReadBuffer<T::Tangent>>(
    x: Dual<B, BT>,
) -> Dual<T, T::Tangent> {
    Dual::new(x.primal.with_slice(T::sum), x.tangent.with_slice(T::sum_tangents))
}

/// Reverse rule of `x.iter().sum::<T>()`: the pullback adds `ȳ` into every element of `dx`.
#[inline]
pub fn sum_rrule<T: Float, S: ReadBuffer<T> + ?Sized>(
    x: CoDual<&S, SharedVec<T>>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T, S>) {
    let y = x.primal.with_slice(sum_slice);
    let dx = x.fdata;
    let pullback = move |y_bar: T| {
        dx.add_to_all(y_bar);
        (NoRData,)
    };
    (CoDual::new(y, NoFData), pullback)
}
