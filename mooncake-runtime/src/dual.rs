//! The pairs that rules pass around: [`Dual`] (forward mode) and [`CoDual`] (reverse mode),
//! and the zero-sized markers [`NoTangent`], [`NoFData`] and [`NoRData`].

/// A primal value paired with its tangent: the argument and result type of every forward-mode
/// rule (`NAME_frule`).
///
/// For a reference argument the tangent is a reference to the tangent's storage, so that a rule
/// that mutates its argument can update the tangent in place:
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// let x = Dual::new(2.0_f64, 1.0);
/// let y = mooncake_runtime::rules::scalar::sin_frule(x);
/// assert_eq!(y.primal, 2.0_f64.sin());
/// assert_eq!(y.tangent, 2.0_f64.cos());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dual<P, T> {
    /// The primal value.
    pub primal: P,
    /// Its tangent (a direction in the primal's tangent space).
    pub tangent: T,
}

impl<P, T> Dual<P, T> {
    /// Pairs `primal` with `tangent`.
    #[inline(always)]
    pub const fn new(primal: P, tangent: T) -> Self {
        Dual { primal, tangent }
    }

    /// Splits the pair into `(primal, tangent)`.
    #[inline(always)]
    pub fn into_parts(self) -> (P, T) {
        (self.primal, self.tangent)
    }
}

/// A primal value paired with its forward data (fdata): the argument and result type of every
/// reverse-mode rule (`NAME_rrule`).
///
/// Value-identified data (`f64`, tuples and structs of scalars) has fdata [`NoFData`]: its
/// gradient travels back as rdata, returned by the pullback. Address-identified data (buffers,
/// data behind references) has a shadow as fdata, which pullbacks increment in place.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// let (y, pullback) = mooncake_runtime::rules::scalar::mul_rrule(
///     CoDual::new(2.0_f64, NoFData),
///     CoDual::new(3.0_f64, NoFData),
/// );
/// assert_eq!(y.primal, 6.0);
/// assert_eq!(pullback(1.0), (3.0, 2.0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CoDual<P, F> {
    /// The primal value (for `&mut` arguments, a shared handle to it; see `ARCHITECTURE.md`).
    pub primal: P,
    /// Its forward data.
    pub fdata: F,
}

impl<P, F> CoDual<P, F> {
    /// Pairs `primal` with `fdata`.
    #[inline(always)]
    pub const fn new(primal: P, fdata: F) -> Self {
        CoDual { primal, fdata }
    }

    /// Splits the pair into `(primal, fdata)`.
    #[inline(always)]
    pub fn into_parts(self) -> (P, F) {
        (self.primal, self.fdata)
    }
}

/// Marks an argument of `value_and_gradient!` or `value_and_pullback!` as a constant: no
/// gradient is computed for it, and the derived rule does none of the adjoint work that only
/// that gradient needs. Its place in the returned tuple holds [`NoTangent`].
///
/// Use it for data: the observations of a likelihood, the inputs of a network's batch.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn sq_error(w: &[f64], x: &[f64], y: f64) -> f64 {
///     let mut p = 0.0;
///     for i in 0..w.len() {
///         p += w[i] * x[i];
///     }
///     (p - y) * (p - y)
/// }
///
/// let (w, x) = (vec![1.0, 2.0], vec![3.0, -1.0]);
/// let (e, (gw, gx, gy)) = value_and_gradient!(sq_error(&w, Const(&x), Const(0.5)));
/// assert_eq!(e, 0.25);
/// assert_eq!(gw, vec![3.0, -1.0]); // 2 (p - y) x
/// assert_eq!((gx, gy), (NoTangent, NoTangent));
/// ```
///
/// Outside those macros it is a plain wrapper. A derived rule skips the work for the first 64
/// arguments; a hand-written rule (`#[rrule(for = ..)]`, `from_rrule!`, `zero_adjoint!`,
/// `#[mooncake_overlay]`) computes every gradient and the constant's is dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Const<T>(pub T);

/// The tangent of non-differentiable data (integers, `bool`, `char`, strings): the space that
/// holds only zero. Costs nothing at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NoTangent;

/// The fdata of data identified by its value (scalars, tuples and structs of scalars) and of
/// non-differentiable data. Costs nothing at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NoFData;

/// The rdata of data identified by its address (buffers, data behind references) and of
/// non-differentiable data. Costs nothing at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NoRData;
