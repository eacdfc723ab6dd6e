//! Procedural macros of Mooncake for Rust. Users reach them through `mooncake_runtime`
//! (`use mooncake_runtime::prelude::*;`); the entry points here are one-liners that hand over
//! to one module each.

use proc_macro::TokenStream;

mod api;
mod derive_tangent;
mod differentiable;
#[cfg(test)]
mod fuzz;
mod hessian;
mod jacobian;
mod test_rule;

/// Derives the tangent machinery of a struct: see `mooncake_runtime::Tangent`.
#[proc_macro_derive(Tangent)]
pub fn derive_tangent(input: TokenStream) -> TokenStream {
    derive_tangent::expand(input.into()).into()
}

/// Derives forward-mode (`NAME_frule`) rules for a function: see
/// `mooncake_runtime::differentiable`.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    differentiable::expand(attr.into(), item.into()).into()
}

/// Checks a rule against finite differences and the other mode: see
/// `mooncake_runtime::test_utils`.
#[proc_macro]
pub fn test_rule(input: TokenStream) -> TokenStream {
    test_rule::expand(input.into(), test_rule::OnFailure::Panic).into()
}

/// Like `test_rule!`, but evaluates to a `Result` instead of panicking on failure.
#[proc_macro]
pub fn check_rule(input: TokenStream) -> TokenStream {
    test_rule::expand(input.into(), test_rule::OnFailure::Return).into()
}

/// The value of a #[differentiable] function and its directional derivative along the given
/// tangents: see `mooncake_runtime::value_and_derivative`.
#[proc_macro]
pub fn value_and_derivative(input: TokenStream) -> TokenStream {
    api::value_and_derivative(input.into()).into()
}

mod from_rrule;
mod rule_check;
mod rule_sig;
mod zero_adjoint;

/// Declares that existing functions have derivative zero and generates their `NAME_frule` and
/// `NAME_rrule`: see `mooncake_runtime::zero_adjoint`.
#[proc_macro]
pub fn zero_adjoint(input: TokenStream) -> TokenStream {
    zero_adjoint::expand(input.into()).into()
}

/// Adapts a ChainRules-style rule (`(value, pullback)` over tangents) into a full `NAME_rrule`:
/// see `mooncake_runtime::from_rrule`.
#[proc_macro]
pub fn from_rrule(input: TokenStream) -> TokenStream {
    from_rrule::expand(input.into()).into()
}

/// The value of a #[differentiable] function with a scalar result and its gradient with
/// respect to every argument: see `mooncake_runtime::value_and_gradient`.
#[proc_macro]
pub fn value_and_gradient(input: TokenStream) -> TokenStream {
    api::value_and_gradient(input.into(), false).into()
}

/// The value of a #[differentiable] function and the pullback of a cotangent of its result:
/// see `mooncake_runtime::value_and_pullback`.
#[proc_macro]
pub fn value_and_pullback(input: TokenStream) -> TokenStream {
    api::value_and_gradient(input.into(), true).into()
}

/// The value of a #[differentiable] function and its Jacobian with respect to every argument,
/// in forward or reverse mode: see `mooncake_runtime::value_and_jacobian`.
#[proc_macro]
pub fn value_and_jacobian(input: TokenStream) -> TokenStream {
    jacobian::value_and_jacobian(input.into()).into()
}

/// `value_and_gradient_forward!(f(args..))`: a scalar result's gradient by forward mode, one pass
/// of `NAME_frule` per input component: see `mooncake_runtime::value_and_gradient_forward`.
#[proc_macro]
pub fn value_and_gradient_forward(input: TokenStream) -> TokenStream {
    jacobian::value_and_gradient_forward(input.into()).into()
}

/// The value, gradient and Hessian-vector product of a #[differentiable] function generic over
/// `T: Float`, by forward-over-reverse: see `mooncake_runtime::hvp`.
#[proc_macro]
pub fn hvp(input: TokenStream) -> TokenStream {
    hessian::hvp(input.into()).into()
}

/// The value, gradient and dense Hessian of a #[differentiable] function generic over
/// `T: Float`: see `mooncake_runtime::hessian`.
#[proc_macro]
pub fn hessian(input: TokenStream) -> TokenStream {
    hessian::hessian(input.into()).into()
}

/// A second body of an existing function that only AD sees: see
/// `mooncake_runtime::mooncake_overlay`.
#[proc_macro_attribute]
pub fn mooncake_overlay(attr: TokenStream, item: TokenStream) -> TokenStream {
    differentiable::expand_overlay(attr.into(), item.into()).into()
}

/// Checks a hand-written forward rule's signature against the function it is for, at the rule:
/// see `mooncake_runtime::frule`.
#[proc_macro_attribute]
pub fn frule(attr: TokenStream, item: TokenStream) -> TokenStream {
    rule_check::expand(attr.into(), item.into(), rule_check::Mode::Forward).into()
}

/// Checks a hand-written reverse rule's signature against the function it is for, at the rule:
/// see `mooncake_runtime::rrule`.
#[proc_macro_attribute]
pub fn rrule(attr: TokenStream, item: TokenStream) -> TokenStream {
    rule_check::expand(attr.into(), item.into(), rule_check::Mode::Reverse).into()
}
