//! Jacobians: what [`value_and_jacobian!`](crate::value_and_jacobian) returns ([`Jacobian`]),
//! the flat view of tangents it is built from ([`FlatTangent`]), and the drivers its expansion
//! hands the passes to.
//!
//! The macro builds two closures over the call: one forward pass (`NAME_frule`) along a basis
//! tangent of one input component, and one reverse pass (`NAME_rrule` and its pullback) seeded
//! with a basis cotangent of one output component. A forward pass gives one column of every
//! block, a reverse pass one row. The drivers here decide how many of each to run:
//!
//! * forward: one pass per differentiable input component (`n` passes);
//! * reverse: one pass per output component (`m` passes);
//! * automatic (the default): the first pass is a forward one, which gives the value and `m`;
//!   then forward if `n <= m`, else reverse (the first pass is then spent only on the value).

use crate::dual::{NoRData, NoTangent};
use crate::tangent::Primal;
use std::fmt;

/// A tangent whose real components can be listed in a fixed order: the flat view that
/// Jacobians are made of. The order is the natural one: a buffer's elements in index order, an
/// array's likewise, a tuple's fields in order, each flattened in turn; `f32` components are
/// widened to `f64` (exactly). Non-differentiable tangents ([`NoTangent`]) have no components.
///
/// Implemented for the tangents of the standard types, and by `#[derive(Tangent)]` for the
/// tangent it generates: a struct's fields in declaration order, each flattened in turn; an
/// enum's, the fields of its variant (none for `Zero`). The derived impl is there whenever
/// every field's tangent has a flat view (not, say, for an `Option` field). For a type with a
/// hand-written `Primal`, implement it for the tangent by hand.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[derive(Tangent, Clone, Debug)]
/// struct State {
///     x: f64,
///     v: Vec<f64>,
///     steps: usize,
/// }
///
/// let t = StateTangent { x: 1.0, v: vec![2.0, 3.0], steps: NoTangent };
/// assert_eq!(t.flat_len(), 3);
/// let mut flat = Vec::new();
/// t.extend_flat(&mut flat);
/// assert_eq!(flat, [1.0, 2.0, 3.0]);
/// ```
///
/// The standard types:
///
/// ```
/// use mooncake_runtime::jacobian::FlatTangent;
///
/// let t = (vec![1.0, 2.0], 3.0_f32, [4.0, 5.0]);
/// assert_eq!(t.flat_len(), 5);
/// let mut flat = Vec::new();
/// t.extend_flat(&mut flat);
/// assert_eq!(flat, [1.0, 2.0, 3.0, 4.0, 5.0]);
///
/// let mut u = (vec![0.0; 2], 0.0_f32, [0.0; 2]);
/// assert!(u.set_flat(2, 7.0));
/// assert_eq!(u, (vec![0.0, 0.0], 7.0, [0.0, 0.0]));
/// assert!(!u.set_flat(5, 1.0));
/// ```
#[diagnostic::on_unimplemented(
    message = "the tangent type `{Self}` has no flat view of its components, which a Jacobian needs",
    label = "a Jacobian's result and arguments need tangents with a flat view",
    note = "`FlatTangent` is implemented for `f64`, `f32`, `NoTangent`, `Vec`s, arrays and tuples of them, and by `#[derive(Tangent)]` for a derived tangent whose fields' tangents all have it (an `Option` field's does not); for a type with a hand-written `Primal`, implement `mooncake_runtime::jacobian::FlatTangent` for its tangent"
)]
pub trait FlatTangent {
    /// The number of real components.
    fn flat_len(&self) -> usize;
    /// Appends the components, in order, to `out`.
    fn extend_flat(&self, out: &mut Vec<f64>);
    /// Sets component `k` (counted in the order of [`FlatTangent::extend_flat`]) to `v`;
    /// `false` (and nothing changed) if there are not more than `k` components.
    fn set_flat(&mut self, k: usize, v: f64) -> bool;
}

/// A float is one component, seen as an `f64` (an `f32` widened, and narrowed back when set).
macro_rules! float_flat {
    ($($t:ty),*) => {$(
        impl FlatTangent for $t {
            #[inline(always)]
            fn flat_len(&self) -> usize {
                1
            }
            #[inline(always)]
            fn extend_flat(&self, out: &mut Vec<f64>) {
                out.push(f64::from(*self));
            }
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation)]
            fn set_flat(&mut self, k: usize, v: f64) -> bool {
                if k == 0 {
                    *self = v as $t;
                }
                k == 0
            }
        }
    )*};
}

float_flat!(f64, f32);

impl FlatTangent for NoTangent {
    #[inline(always)]
    fn flat_len(&self) -> usize {
        0
    }
    #[inline(always)]
    fn extend_flat(&self, _: &mut Vec<f64>) {}
    #[inline(always)]
    fn set_flat(&mut self, _: usize, _: f64) -> bool {
        false
    }
}

impl FlatTangent for NoRData {
    #[inline(always)]
    fn flat_len(&self) -> usize {
        0
    }
    #[inline(always)]
    fn extend_flat(&self, _: &mut Vec<f64>) {}
    #[inline(always)]
    fn set_flat(&mut self, _: usize, _: f64) -> bool {
        false
    }
}

/// [`FlatTangent::set_flat`] over a sequence of tangents, flattened one after another.
fn set_flat_in<'a, T: FlatTangent + 'a>(
    items: impl IntoIterator<Item = &'a mut T>,
    mut k: usize,
    v: f64,
) -> bool {
    for x in items {
        let d = x.flat_len();
        if k < d {
            return x.set_flat(k, v);
        }
        k -= d;
    }
    false
}

impl<T: FlatTangent> FlatTangent for Vec<T> {
    #[inline]
    fn flat_len(&self) -> usize {
        self.as_slice().flat_len()
    }
    #[inline]
    fn extend_flat(&self, out: &mut Vec<f64>) {
        self.as_slice().extend_flat(out);
    }
    #[inline]
    fn set_flat(&mut self, k: usize, v: f64) -> bool {
        self.as_mut_slice().set_flat(k, v)
    }
}

impl<T: FlatTangent> FlatTangent for [T] {
    #[inline]
    fn flat_len(&self) -> usize {
        self.iter().map(T::flat_len).sum()
    }
    #[inline]
    fn extend_flat(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.extend_flat(out));
    }
    #[inline]
    fn set_flat(&mut self, k: usize, v: f64) -> bool {
        set_flat_in(self.iter_mut(), k, v)
    }
}

impl<T: FlatTangent, const N: usize> FlatTangent for [T; N] {
    #[inline]
    fn flat_len(&self) -> usize {
        self.as_slice().flat_len()
    }
    #[inline]
    fn extend_flat(&self, out: &mut Vec<f64>) {
        self.as_slice().extend_flat(out);
    }
    #[inline]
    fn set_flat(&mut self, k: usize, v: f64) -> bool {
        self.as_mut_slice().set_flat(k, v)
    }
}

macro_rules! flat_tuples {
    ($(($($T:ident . $i:tt),+))*) => {$(
        impl<$($T: FlatTangent),+> FlatTangent for ($($T,)+) {
            #[inline]
            fn flat_len(&self) -> usize {
                0 $(+ self.$i.flat_len())+
            }
            #[inline]
            fn extend_flat(&self, out: &mut Vec<f64>) {
                $(self.$i.extend_flat(out);)+
            }
            #[inline]
            fn set_flat(&mut self, k: usize, v: f64) -> bool {
                let mut k = k;
                $(
                    let d = self.$i.flat_len();
                    if k < d {
                        return self.$i.set_flat(k, v);
                    }
                    k -= d;
                )+
                let _ = k;
                false
            }
        }
    )*};
}

flat_tuples! {
    (A.0)
    (A.0, B.1)
    (A.0, B.1, C.2)
    (A.0, B.1, C.2, D.3)
    (A.0, B.1, C.2, D.3, E.4)
    (A.0, B.1, C.2, D.3, E.4, F.5)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7)
}

/// A dense Jacobian block `∂y/∂x`: `rows` output components by `cols` input components, stored
/// row-major (`data[i * cols + j]` is `∂y_i/∂x_j`), components counted as [`FlatTangent`]
/// lists them. Entries are `f64` whatever the float type of the function.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn f(x: &[f64]) -> Vec<f64> {
///     vec![x[0] * x[1], 3.0 * x[1]]
/// }
///
/// let (_, (j,)) = value_and_jacobian!(f(&[2.0, 5.0]));
/// assert_eq!(j.shape(), (2, 2));
/// assert_eq!(j[(0, 1)], 2.0);
/// assert_eq!(j.row(1), &[0.0, 3.0]);
/// assert_eq!(j.column(0), vec![5.0, 0.0]);
/// assert_eq!(j.as_slice(), &[5.0, 2.0, 0.0, 3.0]);
/// ```
#[derive(Clone, PartialEq)]
pub struct Jacobian {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Jacobian {
    /// The `rows` by `cols` zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Jacobian { rows, cols, data: vec![0.0; rows * cols] }
    }
    /// A `rows` by `cols` matrix from its entries in row-major order; `None` if `data` does not
    /// hold `rows * cols` of them.
    pub fn from_row_major(rows: usize, cols: usize, data: Vec<f64>) -> Option<Self> {
        (rows.checked_mul(cols) == Some(data.len())).then_some(Jacobian { rows, cols, data })
    }
    /// The number of rows: the result's components.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// The number of columns: the argument's components.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }
    /// The entry `∂y_i/∂x_j`, or `None` outside the matrix.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        (i < self.rows && j < self.cols).then(|| self.data[i * self.cols + j])
    }
    /// Sets the entry `(i, j)` (`hessian!`'s prepared form fills its matrix in place).
    ///
    /// # Panics
    /// Outside the matrix.
    pub(crate) fn set(&mut self, i: usize, j: usize, v: f64) {
        assert!(
            i < self.rows && j < self.cols,
            "entry ({i}, {j}) of a {} x {} matrix",
            self.rows,
            self.cols
        );
        self.data[i * self.cols + j] = v;
    }
    /// Row `i`: the gradient of output component `i` with respect to the argument.
    ///
    /// # Panics
    /// If `i >= rows`, with a message naming both.
    pub fn row(&self, i: usize) -> &[f64] {
        assert!(i < self.rows, "row {i} of a Jacobian with {} rows", self.rows);
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
    /// Column `j`: the derivative of the result along input component `j`.
    ///
    /// # Panics
    /// If `j >= cols`, with a message naming both.
    pub fn column(&self, j: usize) -> Vec<f64> {
        assert!(j < self.cols, "column {j} of a Jacobian with {} columns", self.cols);
        (0..self.rows).map(|i| self.data[i * self.cols + j]).collect()
    }
    /// The entries, row-major.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }
    /// The entries, row-major, taken out.
    pub fn into_vec(self) -> Vec<f64> {
        self.data
    }
    /// The transpose (`cols` by `rows`).
    pub fn transpose(&self) -> Jacobian {
        let mut t = Jacobian::zeros(self.cols, self.rows);
        for i in 0..self.rows {
            for j in 0..self.cols {
                t.data[j * self.rows + i] = self.data[i * self.cols + j];
            }
        }
        t
    }
    /// `J v`: the derivative along `v` (of length `cols`).
    ///
    /// # Panics
    /// If `v.len() != cols`, with a message naming both.
    pub fn mul_vec(&self, v: &[f64]) -> Vec<f64> {
        assert_eq!(
            v.len(),
            self.cols,
            "a vector of length {} times a Jacobian with {} columns",
            v.len(),
            self.cols
        );
        (0..self.rows).map(|i| self.row(i).iter().zip(v).map(|(a, b)| a * b).sum()).collect()
    }
}

impl std::ops::Index<(usize, usize)> for Jacobian {
    type Output = f64;
    /// The entry `∂y_i/∂x_j` at `(i, j)`.
    ///
    /// # Panics
    /// Outside the matrix, with a message naming the index and the shape.
    fn index(&self, (i, j): (usize, usize)) -> &f64 {
        assert!(
            i < self.rows && j < self.cols,
            "index ({i}, {j}) of a {} x {} Jacobian",
            self.rows,
            self.cols
        );
        &self.data[i * self.cols + j]
    }
}

impl fmt::Debug for Jacobian {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Jacobian {}x{} ", self.rows, self.cols)?;
        f.debug_list().entries((0..self.rows).map(|i| self.row(i))).finish()
    }
}

// ---------------------------------------------------------------------------------------------
// The drivers the expansion of `value_and_jacobian!` calls. Blocks are numbered over the
// differentiable arguments only (a `Const(..)` has none); `dims[b]` is block `b`'s width.

// A forward pass (`fwd`) goes along the basis tangent of component `c` of block `b`
// (`Some((b, c))`), or along zero (`None`), and returns the result and its tangent. A reverse
// pass (`rev`) is seeded with the basis cotangent of output component `i`: it returns the result
// and, if the result has more than `i` components, `true` after appending each block's row `i`
// (the flat gradient) to `rows[b]`, which it finds empty.

/// `1 component`, `n components`.
fn components(n: usize) -> String {
    format!("{n} component{}", if n == 1 { "" } else { "s" })
}

/// Panics with a message naming the call: the passes disagreed on a shape.
fn shape_error(call: &str, what: fmt::Arguments<'_>) -> ! {
    panic!(
        "mooncake: value_and_jacobian!({call}(..)): {what}; a Jacobian needs a result of the \
         same shape in every pass"
    )
}

/// The blocks of a forward-mode Jacobian, after the first pass (`first`, which went along
/// `start`): one more pass per remaining input component.
fn forward_rest<Y, T: FlatTangent>(
    call: &str,
    dims: &[usize],
    fwd: &mut impl FnMut(Option<(usize, usize)>) -> (Y, T),
    start: Option<(usize, usize)>,
    first: &T,
) -> Vec<Jacobian> {
    let m = first.flat_len();
    let mut blocks: Vec<Jacobian> = dims.iter().map(|&d| Jacobian::zeros(m, d)).collect();
    let mut col = Vec::with_capacity(m);
    let mut write = |blocks: &mut [Jacobian], (b, c): (usize, usize), t: &T| {
        col.clear();
        t.extend_flat(&mut col);
        if col.len() != m {
            shape_error(
                call,
                format_args!(
                    "its result's tangent had {} in the first pass and {} in another",
                    components(m),
                    components(col.len())
                ),
            );
        }
        let block = &mut blocks[b];
        for (i, v) in col.iter().enumerate() {
            block.data[i * block.cols + c] = *v;
        }
    };
    if let Some(s) = start {
        write(&mut blocks, s, first);
    }
    for (b, &d) in dims.iter().enumerate() {
        for c in 0..d {
            if Some((b, c)) == start {
                continue;
            }
            let (_, t) = fwd(Some((b, c)));
            write(&mut blocks, (b, c), &t);
        }
    }
    blocks
}

/// The first input component: where the first forward pass goes.
fn first_direction(dims: &[usize]) -> Option<(usize, usize)> {
    dims.iter().position(|&d| d > 0).map(|b| (b, 0))
}

/// The blocks of a reverse-mode Jacobian with `m` rows, `first_row` (row 0, if `m > 0`) already
/// computed: one more pass per remaining output component.
fn reverse_rest<Y>(
    call: &str,
    dims: &[usize],
    m: usize,
    rev: &mut impl FnMut(usize, &mut [Vec<f64>]) -> (Y, bool),
    first_row: Option<&[Vec<f64>]>,
) -> Vec<Jacobian> {
    let mut blocks: Vec<Jacobian> = dims.iter().map(|&d| Jacobian::zeros(m, d)).collect();
    let mut rows: Vec<Vec<f64>> = dims.iter().map(|&d| Vec::with_capacity(d)).collect();
    let write = |blocks: &mut [Jacobian], i: usize, rows: &[Vec<f64>]| {
        for (b, (block, row)) in blocks.iter_mut().zip(rows).enumerate() {
            if row.len() != block.cols {
                shape_error(
                    call,
                    format_args!(
                        "the gradient of its differentiable argument number {} had {} where the \
                         argument has {}",
                        b + 1,
                        components(row.len()),
                        components(block.cols)
                    ),
                );
            }
            block.data[i * block.cols..(i + 1) * block.cols].copy_from_slice(row);
        }
    };
    let mut start = 0;
    if let Some(r) = first_row {
        write(&mut blocks, 0, r);
        start = 1;
    }
    for i in start..m {
        rows.iter_mut().for_each(Vec::clear);
        let (_, done) = rev(i, &mut rows);
        if !done {
            shape_error(
                call,
                format_args!(
                    "its result had {} in the first pass and at most {i} in another",
                    components(m)
                ),
            );
        }
        write(&mut blocks, i, &rows);
    }
    blocks
}

/// `mode = forward`: one forward pass per input component (one, along zero, for the value when
/// there is none).
#[doc(hidden)]
pub fn forward<Y, T: FlatTangent>(
    call: &str,
    dims: &[usize],
    fwd: impl FnMut(Option<(usize, usize)>) -> (Y, T),
) -> (Y, Vec<Jacobian>) {
    forward_checked(call, dims, fwd, |_| ())
}

/// [`forward`], with `check` given the number of the result's components after the first pass.
fn forward_checked<Y, T: FlatTangent>(
    call: &str,
    dims: &[usize],
    mut fwd: impl FnMut(Option<(usize, usize)>) -> (Y, T),
    check: impl FnOnce(usize),
) -> (Y, Vec<Jacobian>) {
    let start = first_direction(dims);
    let (y, t) = fwd(start);
    check(t.flat_len());
    let blocks = forward_rest(call, dims, &mut fwd, start, &t);
    (y, blocks)
}

/// `value_and_gradient_forward!`: the forward passes of the Jacobian of a scalar result, one per
/// input component.
///
/// # Panics
/// If the result is not a scalar (its tangent has other than one component), with a message
/// that names the call.
#[doc(hidden)]
pub fn forward_gradient<Y, T: FlatTangent>(
    call: &str,
    dims: &[usize],
    fwd: impl FnMut(Option<(usize, usize)>) -> (Y, T),
) -> (Y, Vec<Jacobian>) {
    forward_checked(call, dims, fwd, |m| {
        assert!(
            m == 1,
            "mooncake: value_and_gradient_forward!({call}(..)): the result has {}; a gradient \
             needs a scalar result (use value_and_jacobian! for a vector)",
            components(m)
        );
    })
}

/// Checks the `chunk = N` of `value_and_gradient_forward!`: at least one direction per pass.
///
/// # Panics
/// If `n` is zero.
#[doc(hidden)]
#[inline]
pub fn check_chunk(call: &str, n: usize) -> usize {
    assert!(
        n >= 1,
        "mooncake: value_and_gradient_forward!({call}(..), chunk = 0): a pass carries at least one \
         direction"
    );
    n
}

/// The gradient of argument `p` from what [`Block`] gave for it: its tangent, with the one row
/// of its block (a scalar result's Jacobian) as the components, or [`NoTangent`] for an argument
/// with no differentiable part (`value_and_gradient_forward!`).
#[doc(hidden)]
pub trait IntoGradient<P: ?Sized> {
    /// The gradient's type.
    type Out;
    /// The gradient.
    fn into_gradient(self, p: &P) -> Self::Out;
}

impl<P: ?Sized> IntoGradient<P> for NoTangent {
    type Out = NoTangent;
    #[inline(always)]
    fn into_gradient(self, _: &P) -> NoTangent {
        NoTangent
    }
}

impl<P: Primal + ?Sized> IntoGradient<P> for Jacobian
where
    P::Tangent: FlatTangent,
{
    type Out = P::Tangent;
    fn into_gradient(self, p: &P) -> P::Tangent {
        let mut t = p.zero_tangent();
        for (c, v) in self.row(0).iter().enumerate() {
            t.set_flat(c, *v);
        }
        t
    }
}

/// [`IntoGradient::into_gradient`] as a function.
#[doc(hidden)]
#[inline]
pub fn gradient<P: ?Sized, B: IntoGradient<P>>(block: B, p: &P) -> B::Out {
    block.into_gradient(p)
}

/// `mode = reverse`: one reverse pass per output component (one, unseeded, for the value when
/// there is none).
#[doc(hidden)]
pub fn reverse<Y: Primal>(
    call: &str,
    dims: &[usize],
    mut rev: impl FnMut(usize, &mut [Vec<f64>]) -> (Y, bool),
) -> (Y, Vec<Jacobian>)
where
    Y::Tangent: FlatTangent,
{
    let mut rows: Vec<Vec<f64>> = dims.iter().map(|&d| Vec::with_capacity(d)).collect();
    let (y, done) = rev(0, &mut rows);
    let m = y.zero_tangent().flat_len();
    let blocks = reverse_rest(call, dims, m, &mut rev, done.then_some(&rows[..]));
    (y, blocks)
}

/// The default mode: a first forward pass gives the value and the number `m` of output
/// components; forward mode follows if the `n` input components are at most `m`, else reverse.
#[doc(hidden)]
pub fn auto<Y, T: FlatTangent>(
    call: &str,
    dims: &[usize],
    mut fwd: impl FnMut(Option<(usize, usize)>) -> (Y, T),
    mut rev: impl FnMut(usize, &mut [Vec<f64>]) -> (Y, bool),
) -> (Y, Vec<Jacobian>) {
    let n: usize = dims.iter().sum();
    let start = first_direction(dims);
    let (y, t) = fwd(start);
    let m = t.flat_len();
    let blocks = if n <= m {
        forward_rest(call, dims, &mut fwd, start, &t)
    } else {
        reverse_rest(call, dims, m, &mut rev, None)
    };
    (y, blocks)
}

/// The width of an argument's block: the components of its tangent.
#[doc(hidden)]
#[inline]
pub fn width<P: Primal + ?Sized>(p: &P) -> usize
where
    P::Tangent: FlatTangent,
{
    p.zero_tangent().flat_len()
}

/// The tangent of `p` for a forward pass along `dir`: the basis tangent of component `c` if
/// `dir` is `Some((b, c))` with `b` this argument's block, else zero.
#[doc(hidden)]
#[inline]
pub fn seed<P: Primal + ?Sized>(p: &P, dir: Option<(usize, usize)>, block: usize) -> P::Tangent
where
    P::Tangent: FlatTangent,
{
    let mut t = p.zero_tangent();
    if let Some((b, c)) = dir
        && b == block
    {
        t.set_flat(c, 1.0);
    }
    t
}

/// The basis cotangent of output component `i` of `y`, or `None` if `y` has no more than `i`
/// components.
#[doc(hidden)]
#[inline]
pub fn unit_cotangent<Y: Primal>(y: &Y, i: usize) -> Option<Y::Tangent>
where
    Y::Tangent: FlatTangent,
{
    let mut t = y.zero_tangent();
    t.set_flat(i, 1.0).then_some(t)
}

/// Appends a gradient's components to `row`.
#[doc(hidden)]
#[inline]
pub fn push_row<T: FlatTangent>(row: &mut Vec<f64>, g: &T) {
    g.extend_flat(row);
}

/// Takes the next block out of the driver's list.
#[doc(hidden)]
#[inline]
pub fn next_block(blocks: &mut std::vec::IntoIter<Jacobian>) -> Jacobian {
    match blocks.next() {
        Some(b) => b,
        None => unreachable!("mooncake: value_and_jacobian! made fewer blocks than arguments"),
    }
}

/// The block of an argument on its way to the user: [`NoTangent`] for an argument with no
/// differentiable part (an integer), as `value_and_gradient!` gives ([`BlockNoTangent`]), else
/// the [`Jacobian`] ([`BlockAsIs`]). Chosen by autoref on the argument's primal type `T`
/// (`api::NoDerivative`, which no float can be: see `api::Friendly`).
#[doc(hidden)]
pub struct Block<T: ?Sized>(
    std::cell::Cell<Option<Jacobian>>,
    std::marker::PhantomData<fn() -> *const T>,
);

impl<T: ?Sized> Block<T> {
    /// Wraps the block of an argument whose primal type `T` the marker names.
    #[inline(always)]
    pub fn new(j: Jacobian, _: std::marker::PhantomData<fn() -> *const T>) -> Self {
        Block(std::cell::Cell::new(Some(j)), std::marker::PhantomData)
    }
}

/// The block of an argument with no differentiable part: `NoTangent`.
#[doc(hidden)]
pub trait BlockNoTangent {
    /// `NoTangent`.
    fn block(&self) -> NoTangent;
}

impl<T: crate::api::NoDerivative + ?Sized> BlockNoTangent for Block<T> {
    #[inline(always)]
    fn block(&self) -> NoTangent {
        NoTangent
    }
}

/// The block of any other argument: the Jacobian.
#[doc(hidden)]
pub trait BlockAsIs {
    /// The Jacobian.
    fn block(&self) -> Jacobian;
}

impl<T: ?Sized> BlockAsIs for &Block<T> {
    #[inline(always)]
    fn block(&self) -> Jacobian {
        match self.0.take() {
            Some(j) => j,
            None => unreachable!("mooncake: a Jacobian block taken twice"),
        }
    }
}

/// The marker of the primal type of `p` (see [`Block`]).
#[doc(hidden)]
#[inline(always)]
pub fn primal_marker<P: ?Sized>(_: &P) -> std::marker::PhantomData<fn() -> *const P> {
    std::marker::PhantomData
}

/// The offsets of each argument's components among the gradient's directions, for the batched
/// entry (`usize::MAX` for a constant, which has none): `dims` holds the widths of the
/// arguments that are not constants, in order.
#[doc(hidden)]
pub fn lanes_offsets<const K: usize>(dims: &[usize], consts: [bool; K]) -> [usize; K] {
    let mut next = 0;
    let mut dims = dims.iter();
    consts.map(|c| {
        if c {
            usize::MAX
        } else {
            let at = next;
            next += dims.next().copied().unwrap_or(0);
            at
        }
    })
}

/// `value_and_gradient_forward!(f(..), chunk = N)`: the gradient of a scalar result from
/// `ceil(n / N)` passes of the batched entry `lanes` (`NAME__lanes`, called with the first
/// direction of each pass), each carrying `N` directions; or, where the function has no batched
/// rule ([`Unbatched`](crate::lanes::Unbatched)), from `fwd`, one direction per pass
/// ([`forward_gradient`]).
#[doc(hidden)]
pub fn forward_gradient_lanes<const N: usize, Y, T: FlatTangent, R>(
    call: &str,
    dims: &[usize],
    fwd: impl FnMut(Option<(usize, usize)>) -> (Y, T),
    mut lanes: impl FnMut(usize) -> R,
) -> (Y, Vec<Jacobian>)
where
    R: crate::lanes::LanesOutcome<N, Value = Y>,
{
    if !R::BATCHED {
        return forward_gradient(call, dims, fwd);
    }
    check_chunk(call, N);
    let n: usize = dims.iter().sum();
    let mut blocks: Vec<Jacobian> = dims.iter().map(|&d| Jacobian::zeros(1, d)).collect();
    // The block of direction `d`, and the first direction of that block.
    let (mut b, mut start) = (0, 0);
    let mut first = 0;
    loop {
        let Some((y, t)) = lanes(first).split() else {
            unreachable!("mooncake: a batched rule that did not run")
        };
        for (k, v) in t.into_iter().enumerate() {
            let d = first + k;
            if d >= n {
                break;
            }
            while d >= start + dims[b] {
                start += dims[b];
                b += 1;
            }
            blocks[b].set(0, d - start, v);
        }
        first += N;
        if first >= n {
            return (y, blocks);
        }
    }
}
