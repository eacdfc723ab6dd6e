//! Support for the high-level API macros (`value_and_gradient!`, `value_and_pullback!`): seeding
//! the pullback and turning fdata and rdata back into gradients.

use crate::dual::CoDual;
use crate::float::Float;
use crate::tangent::{FData, Primal};

/// A scalar result: what `value_and_gradient!` seeds with one.
#[diagnostic::on_unimplemented(
    message = "`value_and_gradient!` needs a function with an `f64` or `f32` result, not `{Self}`",
    label = "this result is not a scalar",
    note = "for any other result, use `value_and_pullback!(f(..), ybar)` with `ybar` a cotangent of the result"
)]
pub trait ScalarResult: Primal {
    /// The rdata `1`.
    fn one() -> Self::RData;
}

impl<F: Float> ScalarResult for F {
    #[inline(always)]
    fn one() -> F {
        F::ONE
    }
}

/// The seed of `value_and_gradient!`: one, for a scalar result.
#[inline(always)]
pub fn seed_one<Y: ScalarResult>(_: &Y) -> Y::RData {
    Y::one()
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
    P::join_tangent(fdata, rdata)
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
