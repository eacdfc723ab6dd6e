//! [`stop_gradient`]: the identity, whose rules say its derivative is zero. Differentiated code
//! calls it to treat a value as a constant (a "detach"): the value passes through, the
//! tangent (forward mode) and the gradient (reverse mode) do not.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! // f(x) = x * stop_gradient(x): the value is x², the derivative is x (not 2x).
//! #[differentiable]
//! fn f(x: f64) -> f64 {
//!     x * stop_gradient(x)
//! }
//!
//! let d = f_frule(Dual::new(3.0, 1.0));
//! assert_eq!((d.primal, d.tangent), (9.0, 3.0));
//! ```

use crate::dual::{CoDual, Dual};
use crate::tangent::Primal;

/// The identity: returns `x`. Its rules ([`stop_gradient_frule`], [`stop_gradient_rrule`])
/// pass the value through with derivative zero, so a `#[differentiable]` function that calls
/// it treats `x` as a constant.
///
/// It is meant for values (scalars, tuples, arrays, `Vec`s, derived structs): to stop the
/// gradient of a buffer seen through a reference, pass an owned copy
/// (`stop_gradient(x.to_vec())`).
///
/// The rules deliberately disagree with the function's true derivative, so the rule checker
/// (`test_rule!`) rejects them when applied to `stop_gradient` itself.
#[inline(always)]
pub fn stop_gradient<T>(x: T) -> T {
    x
}

/// Forward-mode rule of [`stop_gradient`]: the primal passes through, the tangent is the zero
/// tangent of the value ([`Primal::zero_tangent`]).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// let y = stop_gradient_frule(Dual::new(2.0_f64, 1.0));
/// assert_eq!((y.primal, y.tangent), (2.0, 0.0));
/// ```
#[inline]
pub fn stop_gradient_frule<T: Primal>(x: Dual<T, T::Tangent>) -> Dual<T, T::Tangent> {
    let tangent = x.primal.zero_tangent();
    Dual::new(x.primal, tangent)
}

/// Reverse-mode rule of [`stop_gradient`]: the primal passes through with fresh zero fdata
/// ([`Primal::zero_fdata`], a new shadow for a buffer, so nothing written into the output's
/// shadow reaches the input's), and the pullback returns the zero rdata of the input
/// ([`Primal::zero_rdata`]), whatever the output's rdata.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// let (y, pullback) = stop_gradient_rrule(CoDual::new(2.0_f64, NoFData));
/// assert_eq!(y.primal, 2.0);
/// assert_eq!(pullback(5.0), (0.0,));
/// ```
#[allow(clippy::type_complexity)]
#[inline]
pub fn stop_gradient_rrule<T: Primal>(
    x: CoDual<T, T::FData>,
) -> (CoDual<T, T::FData>, impl FnOnce(T::RData) -> (T::RData,) + use<T>) {
    let rdata = x.primal.zero_rdata();
    let fdata = x.primal.zero_fdata();
    (CoDual::new(x.primal, fdata), move |_: T::RData| (rdata,))
}
