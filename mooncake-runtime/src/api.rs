//! Support for the high-level API macros (`value_and_gradient!`, `value_and_pullback!`): seeding
//! the pullback and turning fdata and rdata back into gradients.

use crate::dual::CoDual;
use crate::float::Float;
use crate::tangent::{FData, Primal, TangentSpace};

/// A scalar result: what `value_and_gradient!` seeds with one. A function returning an
/// `Option` or a `Result` of a scalar has its gradient taken at the `Some` / `Ok` value; for
/// `None` or an error, `value_and_gradient!` returns that `None` or that error unchanged.
#[diagnostic::on_unimplemented(
    message = "`value_and_gradient!` needs a function with an `f64` or `f32` result (or an `Option` or `Result` of one), not `{Self}`",
    label = "this result is not a scalar",
    note = "for any other result, use `value_and_pullback!(f(..), ybar)` with `ybar` a cotangent of the result"
)]
pub trait ScalarResult: Primal {
    /// What `value_and_gradient!` returns for this result and the gradients `G`: `(y, G)` for
    /// a scalar `y`, `Option<(y, G)>` / `Result<(y, G), E>` for an `Option` / a `Result`.
    type WithGradient<G>;
    /// The rdata `1` (zero for `None` or an error).
    fn one(&self) -> Self::RData;
    /// The result paired with the gradients (which are dropped for `None` or an error).
    fn with_gradient<G>(self, g: G) -> Self::WithGradient<G>;
}

impl<F: Float> ScalarResult for F {
    type WithGradient<G> = (F, G);
    #[inline(always)]
    fn one(&self) -> F {
        F::ONE
    }
    #[inline(always)]
    fn with_gradient<G>(self, g: G) -> (F, G) {
        (self, g)
    }
}

impl<T: ScalarResult + Clone> ScalarResult for Option<T> {
    type WithGradient<G> = Option<T::WithGradient<G>>;
    #[inline(always)]
    fn one(&self) -> Option<T::RData> {
        self.as_ref().map(T::one)
    }
    #[inline(always)]
    fn with_gradient<G>(self, g: G) -> Self::WithGradient<G> {
        self.map(|y| y.with_gradient(g))
    }
}

impl<T: ScalarResult + Clone, E: Clone + std::fmt::Debug + 'static> ScalarResult for Result<T, E> {
    type WithGradient<G> = Result<T::WithGradient<G>, E>;
    #[inline(always)]
    fn one(&self) -> Option<T::RData> {
        self.as_ref().ok().map(T::one)
    }
    #[inline(always)]
    fn with_gradient<G>(self, g: G) -> Self::WithGradient<G> {
        self.map(|y| y.with_gradient(g))
    }
}

/// The seed of `value_and_gradient!`: one, for a scalar result.
#[inline(always)]
pub fn seed_one<Y: ScalarResult>(y: &Y) -> Y::RData {
    y.one()
}

/// What `value_and_gradient!` returns: the result with the gradients (see [`ScalarResult`]).
#[inline(always)]
pub fn with_gradient<Y: ScalarResult, G>(y: Y, g: G) -> Y::WithGradient<G> {
    y.with_gradient(g)
}

/// The seed of `value_and_pullback!`: the cotangent `ybar`, split into the part that goes into
/// the result's fdata (added in place) and the rdata returned to the pullback.
pub fn seed_cotangent<Y: Primal>(y: &CoDual<Y, Y::FData>, ybar: Y::Tangent) -> Y::RData {
    let (f, r) = Y::split_tangent(ybar);
    y.fdata.increment_from(&f);
    r
}

/// The gradient of an argument passed by value: its fdata (for buffers) joined with the rdata
/// the pullback returned.
pub fn value_gradient<P: Primal>(
    _: std::marker::PhantomData<fn() -> P>,
    fdata: &P::FData,
    rdata: P::RData,
) -> P::Tangent {
    let mut t = P::join_tangent(fdata, rdata);
    t.settle();
    t
}

/// The gradient of an argument passed by reference: what its shadow holds.
pub fn shadow_gradient<P: Primal + ?Sized>(_: &P, shadow: &P::Shadow) -> P::Tangent {
    P::shadow_to_tangent(shadow)
}

/// Compiles only if `A` and `B` are the same type: the checks of `#[frule(for = ..)]` and
/// `#[rrule(for = ..)]`.
#[inline(always)]
pub fn same_type<A, B>()
where
    A: ?Sized + SameType<B>,
    B: ?Sized,
{
}

/// Implemented only for `(A, A)`: see [`same_type`].
#[diagnostic::on_unimplemented(
    message = "this rule's tangent or fdata type is `{Self}`, but the primal type's is `{B}`",
    label = "not the type `Primal` gives this argument",
    note = "a forward rule takes `Dual<P, <P as Primal>::Tangent>` (`Dual<&P, &<P as Primal>::TangentRef>` for a reference); a reverse rule takes `CoDual<P, <P as Primal>::FData>` (`CoDual<&P, <P as Primal>::Shadow>` for a reference)"
)]
pub trait SameType<B: ?Sized> {}
impl<A: ?Sized> SameType<A> for A {}

// ---------------------------------------------------------------------------------------------
// What the user sees: non-differentiable tangents as `NoTangent`, and arguments that are
// references passed by name.
//
// The macros choose between two impls of one method name by *autoref specialisation*: a call
// `(&Wrapper(x)).method()` takes the impl on `Wrapper<..>` when it applies, and falls back to
// the impl on `&Wrapper<..>` otherwise. The types are concrete at the user's call site, so the
// choice is made there, at compile time (in a generic function, the fallback is taken).

/// A tangent type with no differentiable part: [`NoTangent`](crate::NoTangent), and `Vec`s,
/// arrays, tuples and options of such. The tangent of `&[usize]` is a `Vec` of `NoTangent`s
/// (zero-sized: it holds no memory) inside the rules; the API shows it as `NoTangent`.
#[diagnostic::on_unimplemented(
    message = "`NoTangent` was given for an argument with a differentiable part (`{Self}`)",
    label = "this argument needs a tangent of its own type",
    note = "`NoTangent` stands only for an argument with no differentiable part (an integer, a `bool`, a buffer of them); give a differentiable argument a tangent of its tangent type (`0.0` for an `f64`, `vec![0.0; n]` for a buffer of `n`)"
)]
pub trait NonDifferentiable {}

impl NonDifferentiable for crate::NoTangent {}
#[diagnostic::do_not_recommend]
impl<T: NonDifferentiable> NonDifferentiable for Vec<T> {}
#[diagnostic::do_not_recommend]
impl<T: NonDifferentiable + ?Sized> NonDifferentiable for &T {}
#[diagnostic::do_not_recommend]
impl<T: NonDifferentiable> NonDifferentiable for Option<T> {}
#[diagnostic::do_not_recommend]
impl<T: NonDifferentiable, const N: usize> NonDifferentiable for [T; N] {}
macro_rules! nondiff_tuples {
    ($(($($T:ident),+))*) => {$(
        #[diagnostic::do_not_recommend]
        impl<$($T: NonDifferentiable),+> NonDifferentiable for ($($T,)+) {}
    )*};
}
nondiff_tuples! { (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, F) }

/// Takes the value out of a one-shot cell.
#[inline(always)]
fn take_once<T>(c: &std::cell::Cell<Option<T>>) -> T {
    match c.take() {
        Some(v) => v,
        None => unreachable!("mooncake: an API value taken twice"),
    }
}

/// A primal type with no differentiable part: integers, `bool`, `char`, strings, fieldless
/// `#[derive(Tangent)]` enums, and references, `Vec`s, slices, arrays, options and tuples of
/// such. The API shows such an argument's gradient as `NoTangent` ([`Friendly`]).
///
/// The choice is made on the primal type rather than on its tangent: an argument written with
/// unsuffixed float literals (`vec![0.5, 1.0]` given to a generic function) has a type rustc
/// fixes only at the end of the caller's body, and no impl of this trait can match a float, so
/// such an argument is never taken for one with no differentiable part.
pub trait NoDerivative {}

macro_rules! no_derivative {
    ($($t:ty),*) => {$(impl NoDerivative for $t {})*};
}
no_derivative!(
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    bool,
    char,
    (),
    String,
    str,
    crate::NoTangent,
    std::cmp::Ordering
);
#[cfg(feature = "ndarray")]
impl NoDerivative for ndarray::Axis {}
impl<S: 'static> NoDerivative for crate::enums::Kind<S> {}
impl<T: NoDerivative + ?Sized> NoDerivative for &T {}
impl<T: NoDerivative + ?Sized> NoDerivative for &mut T {}
impl<T: NoDerivative> NoDerivative for Vec<T> {}
impl<T: NoDerivative> NoDerivative for [T] {}
impl<T: NoDerivative, const N: usize> NoDerivative for [T; N] {}
impl<T: NoDerivative> NoDerivative for Option<T> {}
impl<T: NoDerivative + ?Sized> NoDerivative for Box<T> {}
impl<T: NoDerivative, E> NoDerivative for Result<T, E> {}
macro_rules! no_derivative_tuples {
    ($(($($T:ident),+))*) => {$(
        impl<$($T: NoDerivative),+> NoDerivative for ($($T,)+) {}
    )*};
}
no_derivative_tuples! { (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, F) }

/// A gradient (or a result's tangent) on its way to the user: `NoTangent` if the primal `P` it
/// belongs to has no differentiable part ([`FriendlyNoTangent`], by [`NoDerivative`]), else as
/// it is ([`FriendlyAsIs`]).
pub struct Friendly<T, P: ?Sized>(std::cell::Cell<Option<T>>, std::marker::PhantomData<fn(&P)>);

impl<T, P: ?Sized> Friendly<T, P> {
    /// Wraps the gradient `t` of the primal `p` (only `p`'s type is used).
    #[inline(always)]
    pub fn of(t: T, _p: &P) -> Self {
        Friendly(std::cell::Cell::new(Some(t)), std::marker::PhantomData)
    }
}

/// The user-facing form of a tangent with no differentiable part.
pub trait FriendlyNoTangent {
    /// `NoTangent`.
    fn friendly(&self) -> crate::NoTangent;
}

impl<T, P: NoDerivative + ?Sized> FriendlyNoTangent for Friendly<T, P> {
    #[inline(always)]
    fn friendly(&self) -> crate::NoTangent {
        crate::NoTangent
    }
}

/// Every other tangent, as it is.
pub trait FriendlyAsIs {
    /// The tangent.
    type Out;
    /// The tangent.
    fn friendly(&self) -> Self::Out;
}

impl<T, P: ?Sized> FriendlyAsIs for &Friendly<T, P> {
    type Out = T;
    #[inline(always)]
    fn friendly(&self) -> T {
        take_once(&self.0)
    }
}

pub use crate::rules::buffer::BufferLen;

/// A buffer argument of `value_and_derivative!` and the tangent given for it, compared in
/// length before the rule runs ([`LenCheckBuffers`]); any other argument passes
/// ([`LenCheckOther`]).
pub struct LenCheck<'a, P: ?Sized, G: ?Sized>(&'a P, &'a G);

impl<'a, P: ?Sized, G: ?Sized> LenCheck<'a, P, G> {
    /// The argument `p` and its tangent `g`.
    #[inline(always)]
    pub fn new(p: &'a P, g: &'a G) -> Self {
        LenCheck(p, g)
    }
}

/// The check of a buffer argument's tangent: the same length as the buffer.
pub trait LenCheckBuffers {
    /// Panics, naming the argument (`k`, from 0) and the function, if the lengths differ.
    fn check_len(&self, k: usize, function: &str);
}

impl<P: BufferLen + ?Sized, G: BufferLen + ?Sized> LenCheckBuffers for LenCheck<'_, P, G> {
    #[inline]
    fn check_len(&self, k: usize, function: &str) {
        let (n, m) = (self.0.buffer_len(), self.1.buffer_len());
        let elements = if m == 1 { "element" } else { "elements" };
        assert!(
            n == m,
            "mooncake: the tangent given for argument {} of `{function}` has {m} {elements}, where the argument has {n}; give a tangent of the argument's length",
            k + 1
        );
    }
}

/// Any other argument: nothing to compare.
pub trait LenCheckOther {
    /// Nothing.
    fn check_len(&self, k: usize, function: &str);
}

impl<P: ?Sized, G: ?Sized> LenCheckOther for &LenCheck<'_, P, G> {
    #[inline(always)]
    fn check_len(&self, _: usize, _: &str) {}
}

/// A tangent the user gave for an argument whose primal is `p`: `NoTangent` for an argument
/// with no differentiable part stands for its zero tangent ([`TangentFromNoTangent`]); any
/// other tangent is taken as it is ([`TangentAsIs`]).
pub struct UserTangent<'p, G, P: ?Sized>(std::cell::Cell<Option<G>>, &'p P);

impl<'p, G, P: ?Sized> UserTangent<'p, G, P> {
    /// Wraps the tangent `g` given for the primal `p`.
    #[inline(always)]
    pub fn new(g: G, p: &'p P) -> Self {
        UserTangent(std::cell::Cell::new(Some(g)), p)
    }
}

/// `NoTangent` given for an argument with no differentiable part (an integer buffer, say).
pub trait TangentFromNoTangent<P: ?Sized + Primal> {
    /// The argument's (zero) tangent.
    fn to_tangent(&self) -> P::Tangent;
}

impl<P: ?Sized + Primal> TangentFromNoTangent<P> for UserTangent<'_, crate::NoTangent, P>
where
    P::Tangent: NonDifferentiable,
{
    #[inline(always)]
    fn to_tangent(&self) -> P::Tangent {
        self.1.zero_tangent()
    }
}

/// A tangent of the argument's own tangent type.
pub trait TangentAsIs<G> {
    /// The tangent.
    fn to_tangent(&self) -> G;
}

impl<G, P: ?Sized> TangentAsIs<G> for &UserTangent<'_, G, P> {
    #[inline(always)]
    fn to_tangent(&self) -> G {
        take_once(&self.0)
    }
}

/// An argument of `value_and_derivative!` written as an expression, not as `&x` or `&mut x`:
/// a shared reference (seen in its type) is paired with a borrow of its tangent
/// ([`RefArgDual`]), a value with the tangent itself ([`ValueArgDual`]), as the rule takes them.
pub struct ArgOf<P>(std::cell::Cell<Option<P>>);

impl<P> ArgOf<P> {
    /// Wraps the argument.
    #[inline(always)]
    pub fn new(p: P) -> Self {
        ArgOf(std::cell::Cell::new(Some(p)))
    }
}

/// A shared reference: the `Dual` of the reference and a borrow of its tangent.
pub trait RefArgDual<'a, 't, T: ?Sized + Primal> {
    /// The `Dual`.
    fn arg_dual(&self, t: &'t mut Option<T::Tangent>) -> crate::Dual<&'a T, &'t T::TangentRef>;
}

impl<'a, 't, T: ?Sized + Primal> RefArgDual<'a, 't, T> for ArgOf<&'a T> {
    #[inline(always)]
    fn arg_dual(&self, t: &'t mut Option<T::Tangent>) -> crate::Dual<&'a T, &'t T::TangentRef> {
        let t: &'t Option<T::Tangent> = t;
        match t {
            Some(t) => crate::Dual::new(take_once(&self.0), T::tangent_ref(t)),
            None => unreachable!("mooncake: a tangent taken twice"),
        }
    }
}

/// A value: the `Dual` of the value and its tangent.
pub trait ValueArgDual<P: Primal> {
    /// The `Dual`.
    fn arg_dual(&self, t: &mut Option<P::Tangent>) -> crate::Dual<P, P::Tangent>;
}

impl<P: Primal> ValueArgDual<P> for &ArgOf<P> {
    #[inline(always)]
    fn arg_dual(&self, t: &mut Option<P::Tangent>) -> crate::Dual<P, P::Tangent> {
        match t.take() {
            Some(t) => crate::Dual::new(take_once(&self.0), t),
            None => unreachable!("mooncake: a tangent taken twice"),
        }
    }
}

/// The tangents given to `value_and_derivative!` as one tuple: `N` of them, one per argument.
#[diagnostic::on_unimplemented(
    message = "`value_and_derivative!` needs one tangent per argument: a tuple of {N}, not `{Self}`",
    label = "not a tuple of {N} tangents",
    note = "give a tuple with one tangent per argument, in order (`NoTangent` for an argument with no differentiable part); for one argument, a 1-tuple `(t,)`"
)]
pub trait Tangents<const N: usize> {
    /// The tangents, one per argument.
    type Split;
    /// The tangents.
    fn split(self) -> Self::Split;
}

macro_rules! tangent_tuples {
    ($($n:literal: ($($T:ident),*);)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<$($T),*> Tangents<$n> for ($($T,)*) {
            type Split = ($($T,)*);
            #[inline(always)]
            fn split(self) -> Self::Split {
                self
            }
        }
    )*};
}

tangent_tuples! {
    0: ();
    1: (A);
    2: (A, B);
    3: (A, B, C);
    4: (A, B, C, D);
    5: (A, B, C, D, E);
    6: (A, B, C, D, E, F);
    7: (A, B, C, D, E, F, G);
    8: (A, B, C, D, E, F, G, H);
}

/// The tangents given to `value_and_derivative!` as one tuple, checked for their number.
#[inline(always)]
pub fn tangents<const N: usize, T: Tangents<N>>(t: T) -> T::Split {
    t.split()
}
