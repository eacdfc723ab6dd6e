//! Checking rules: the Rust counterpart of `Mooncake.TestUtils.test_rule` (seeds 000, 001, 002,
//! "Testing").
//!
//! [`test_rule!`](crate::prelude::test_rule) takes a call of the primal function, written as in
//! ordinary code, and the forward and reverse rules to check against it:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::rules::scalar::{mul_frule, mul_rrule};
//!
//! fn mul(a: f64, b: f64) -> f64 {
//!     a * b
//! }
//! test_rule!(mul(2.0, 3.0), frule = mul_frule, rrule = mul_rrule);
//! ```
//!
//! Each argument is written `expr` (by value), `&expr` or `&mut expr`; the harness keeps its own
//! copies, so the caller's values are never touched. Arguments written identically behind `&`
//! (`f(&x, &x)`) alias: they share one copy and, in reverse mode, one shadow. Without
//! `frule = ..` / `rrule = ..` the rules are found by name: `m::f` is checked with `m::f_frule`
//! and `m::f_rrule`. Options: `rtol = ..`, `atol = ..` (default `1e-3`, Mooncake's),
//! `seed = ..`, `mode = forward` or `mode = reverse` to check one rule only.
//!
//! The checks, each reported with the argument and the numbers when it fails:
//!
//! 1. **Primal agreement.** Each rule's primal output, and the state of every argument after
//!    it, equal the primal function's.
//! 2. **Finite differences.** For each argument in turn, central differences along a random
//!    tangent (trying several step sizes, passing if any agrees) match the forward mode's
//!    directional derivative and the reverse mode's gradient, both measured against a random
//!    cotangent of the output *and of every argument's state after the call*. An argument
//!    passed by value or by `&` cannot change, so its state's part, its cotangent paired with
//!    its own tangent, is the same on both sides: it is left out of the comparison and of the
//!    tolerance (it would hide a small error in the output's derivative), and still seeds the
//!    shadows, so that a pullback overwriting a shadow instead of adding into it is caught.
//! 3. **Forward/reverse agreement.** `<ȳ, J ẋ>` from the forward rule equals `<J^T ȳ, ẋ>`
//!    from the reverse rule, to a tighter tolerance.
//! 4. **Restoration.** After the pullback, every argument passed by `&mut` is back to its
//!    value on entry (seed 000, "AD With Mutable Data").
//! 5. **Aliasing.** Aliased arguments share one shadow, so the gradient is the sum over their
//!    uses; this is what the finite-difference check sees when one copy is perturbed.
//!
//! [`check_rule!`](crate::prelude::check_rule) runs the same checks and returns a
//! `Result<(), RuleTestFailure>` instead of panicking, and [`RuleTest`] is the function-level
//! interface both macros expand to.
//!
//! Jacobians (`value_and_jacobian!`) are checked against finite differences by
//! [`check_jacobian`] (module [`jacobian`]), for any argument and result whose tangents have a
//! flat view; Hessian-vector products and Hessians (`hvp!`, `hessian!`) against finite
//! differences of the gradient by [`check_hvp`] and [`check_hessian`] (module [`hessian`]).

mod harness;
pub mod hessian;
pub mod jacobian;
mod slots;
#[cfg(feature = "proptest")]
pub mod strategies;
#[doc(hidden)]
pub mod support;

pub use harness::{ArgKind, Check, Config, RuleTest, RuleTestFailure};
pub use hessian::{
    HvpMismatch, check_hessian, check_hessian_with, check_hvp, check_hvp_with, fd_hvp,
};
pub use jacobian::{
    JacobianConfig, JacobianMismatch, check_jacobian, check_jacobian_with, fd_jacobian,
};
pub use slots::SlotValues;
