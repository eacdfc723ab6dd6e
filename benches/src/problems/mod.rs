//! The problems, one module per family. Every `#[differentiable]` function here is also what
//! `mooncake-macros`' `expand` bench expands, so the expansion times it reports are theirs.

pub mod gmm;
pub mod kron;
pub mod linalg;
pub mod mlp;
pub mod ode;
pub mod recursive;
pub mod second_order;
pub mod sums;
