//! The arithmetic operators of a derived forward rule with one operand a constant (`STEP * du`,
//! `x / 2.0`, `1.0 - p`), in both dialects ([`super::dialect`]).
//!
//! A constant's tangent is zero, but the general rules cannot drop its term: `0 · t` is not `0`
//! in IEEE arithmetic, so the product stays in the code, once per direction. Where the macro
//! sees a literal or a path as one operand of `+`, `-`, `*` or `/`, it writes
//!
//! ```text
//! (&__fwd::ConstOperand::new(CONSTANT, x)).mul_l(__fwd::mul)    // CONSTANT * x
//! ```
//!
//! with `CONSTANT` the constant as the dialect gives it any other operand (a `Dual` with a zero
//! tangent). When both are duals of one float type with its tangents (`T`, or `Lanes<T, N>`),
//! [`FloatConstOperand`] applies and the rule of `crate::rules::scalar` that takes the constant
//! as a number runs (`const_mul_frule`: `c x'` alone). Otherwise (integers, matrices, a constant
//! of another type) rustc picks [`OtherConstOperand`], one autoref further, which calls the
//! operator the dialect would have called (the function passed in), as before.
//!
//! ```
//! use mooncake_runtime::forward::const_operand::{ConstOperand, FloatConstOperand as _, OtherConstOperand as _};
//! use mooncake_runtime::forward::dialect::one as fwd;
//! use mooncake_runtime::Dual;
//! // `2.0 * x` on floats: the constant's rule.
//! let y = (&ConstOperand::new(Dual::new(2.0, 0.0), Dual::new(3.0, 1.0))).mul_l(fwd::mul);
//! assert_eq!((y.primal, y.tangent), (6.0, 2.0));
//! // `i + 1` on integers: the ordinary operator.
//! let i = Dual::new(4_usize, mooncake_runtime::NoTangent);
//! let j = (&ConstOperand::new(i, Dual::new(1_usize, mooncake_runtime::NoTangent))).add_r(fwd::add);
//! assert_eq!(j.primal, 5);
//! ```

use crate::dual::Dual;
use crate::float::Float;
use crate::lanes::Directions;
use crate::rules::scalar;

/// The two operands of a binary operator one of which is a constant, in the order written; see
/// the module's documentation.
pub struct ConstOperand<A, B>(core::cell::Cell<Option<(A, B)>>);

impl<A, B> ConstOperand<A, B> {
    /// Wraps the operands `a` and `b` of `a OP b`.
    #[inline(always)]
    pub fn new(a: A, b: B) -> Self {
        ConstOperand(core::cell::Cell::new(Some((a, b))))
    }

    #[inline(always)]
    fn take(&self) -> (A, B) {
        match self.0.take() {
            Some(pair) => pair,
            None => unreachable!("mooncake: an operator's operands taken twice"),
        }
    }
}

macro_rules! const_operand_traits {
    ($($(#[$doc:meta])* $l:ident $r:ident: $lrule:ident $rrule:ident;)*) => {
        /// The operators of duals of one float type with one operand a constant: the rules of
        /// `crate::rules::scalar` that take the constant as a number. Methods ending in `_l`
        /// have the constant on the left (`c * x`), in `_r` on the right (`x * c`). The
        /// function passed is the dialect's operator, which [`OtherConstOperand`] calls
        /// instead; here it is not called.
        pub trait FloatConstOperand<T: Float, D: Directions<T>> {
            $(
                $(#[$doc])*
                fn $l<O, F: FnOnce(Dual<T, D>, Dual<T, D>) -> O>(&self, op: F) -> Dual<T, D>;
                $(#[$doc])*
                fn $r<O, F: FnOnce(Dual<T, D>, Dual<T, D>) -> O>(&self, op: F) -> Dual<T, D>;
            )*
        }

        impl<T: Float, D: Directions<T>> FloatConstOperand<T, D>
            for ConstOperand<Dual<T, D>, Dual<T, D>>
        {
            $(
                #[inline(always)]
                fn $l<O, F: FnOnce(Dual<T, D>, Dual<T, D>) -> O>(&self, _: F) -> Dual<T, D> {
                    let (c, x) = self.take();
                    scalar::$lrule(c.primal, x)
                }
                #[inline(always)]
                fn $r<O, F: FnOnce(Dual<T, D>, Dual<T, D>) -> O>(&self, _: F) -> Dual<T, D> {
                    let (x, c) = self.take();
                    scalar::$rrule(x, c.primal)
                }
            )*
        }

        /// Any other operands: the dialect's operator, passed in, on the two operands as
        /// written (see [`FloatConstOperand`]).
        pub trait OtherConstOperand<A, B> {
            $(
                $(#[$doc])*
                fn $l<O, F: FnOnce(A, B) -> O>(&self, op: F) -> O;
                $(#[$doc])*
                fn $r<O, F: FnOnce(A, B) -> O>(&self, op: F) -> O;
            )*
        }

        impl<A, B> OtherConstOperand<A, B> for &ConstOperand<A, B> {
            $(
                #[inline(always)]
                fn $l<O, F: FnOnce(A, B) -> O>(&self, op: F) -> O {
                    let (a, b) = self.take();
                    op(a, b)
                }
                #[inline(always)]
                fn $r<O, F: FnOnce(A, B) -> O>(&self, op: F) -> O {
                    let (a, b) = self.take();
                    op(a, b)
                }
            )*
        }
    };
}

const_operand_traits! {
    /// `a + b`.
    add_l add_r: const_add_frule add_const_frule;
    /// `a - b`.
    sub_l sub_r: const_sub_frule sub_const_frule;
    /// `a * b`.
    mul_l mul_r: const_mul_frule mul_const_frule;
    /// `a / b`.
    div_l div_r: const_div_frule div_const_frule;
}
