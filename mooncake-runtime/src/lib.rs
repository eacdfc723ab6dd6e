//! # Mooncake for Rust: the runtime
//!
//! Source-transformation automatic differentiation for stable Rust, after
//! [Mooncake.jl](https://github.com/chalk-lab/Mooncake.jl)'s rule system. This crate is the one
//! users depend on: it holds the types rules pass around ([`Dual`], [`CoDual`], [`NoTangent`],
//! [`NoFData`], [`NoRData`]), the traits that give every primal type its one tangent, fdata and
//! rdata type ([`Primal`], [`TangentSpace`], [`FData`]), the primitive rules for scalars and
//! buffers ([`rules`]), and the rule-testing utility ([`test_utils`]).
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::rules::scalar::{mul_frule, mul_rrule};
//!
//! // d(x * y) along (1, 0) at (2, 3) is 3:
//! let y = mul_frule(Dual::new(2.0_f64, 1.0), Dual::new(3.0, 0.0));
//! assert_eq!((y.primal, y.tangent), (6.0, 3.0));
//!
//! // the gradient of x * y at (2, 3) is (3, 2):
//! let (y, pullback) = mul_rrule(CoDual::new(2.0_f64, NoFData), CoDual::new(3.0, NoFData));
//! assert_eq!(y.primal, 6.0);
//! assert_eq!(pullback(1.0), (3.0, 2.0));
//! ```
//!
//! See `ARCHITECTURE.md` in the repository for how the pieces fit.

// Lets `::mooncake_runtime::...` paths in macro output resolve inside this crate's own tests.
#[allow(unused_extern_crates)]
extern crate self as mooncake_runtime;

pub mod dual;
pub mod float;
pub mod forward;
mod impls;
pub mod rng;
pub mod rules;
pub mod shared;
pub mod tangent;
pub mod test_utils;

pub use dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
pub use float::Float;
pub use mooncake_macros::{Tangent, differentiable, value_and_derivative};
pub use rng::TestRng;
pub use shared::{SharedCell, SharedRef, SharedVec};
pub use tangent::{FData, Primal, RData, TangentSpace};

/// Everything a user of Mooncake needs in scope: `use mooncake_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
    pub use crate::float::Float;
    pub use crate::shared::{SharedCell, SharedRef, SharedVec};
    pub use crate::tangent::{FData, Primal, RData, TangentSpace};
    pub use mooncake_macros::{
        Tangent, check_rule, differentiable, test_rule, value_and_derivative,
    };
}

/// The one path through which generated code reaches the runtime. Not part of the public API:
/// anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
    pub use crate::forward as fwd;
    pub use crate::rng::TestRng;
    pub use crate::shared::{SharedCell, SharedRef, SharedVec};
    pub use crate::tangent::{FData, Primal, RData, TangentSpace, close};
    pub use crate::test_utils;
    pub use core;
    pub use std;
}
