//! Gradients inside differentiated code (nested AD): what `value_and_gradient!` written in the
//! body of a `#[differentiable]` function compiles to in that function's rules.
//!
//! `#[differentiable]` on a free function generic over one `T: Float`, whose arguments are
//! numbers, integers and buffers of numbers (`T`, `&[T]`, `&Vec<T>`, `Vec<T>`, `[T; N]`,
//! `&[T; N]`) and whose result is `T`, also emits, at `T = f64`, the function
//! `NAME__nested_gradient` (what `value_and_gradient!(NAME(..))` returns) with its two rules:
//!
//! * forward (`NAME__nested_gradient_frule`): forward over reverse. The tangent of the gradient
//!   in the direction `ẋ` of the arguments is the Hessian-vector product `H ẋ`, and that of
//!   the value is `∇f · ẋ`; both come from one `hvp!`.
//! * reverse (`NAME__nested_gradient_rrule`, through `from_rrule!`): the pullback of the
//!   cotangents `(v̄, ḡ)` of the value and of the gradient adds `v̄ ∇f + H ḡ` to each argument's
//!   gradient, again from one `hvp!`, run when the pullback runs on the arguments saved by the
//!   forward pass.
//!
//! In a differentiated body, `value_and_gradient!(f(a, b))` is lowered to a call of
//! `f__nested_gradient(a, b)`; a `Const(..)` argument is passed as itself and its place in the
//! result is then [`NoTangent`] ([`no_tangent`]). For every other free `#[differentiable]`
//! function the macro imports refusing stubs ([`refused`]) under the same names, whose bound
//! ([`NestedGradient`]) fails at the call with a message saying what the function needs.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! #[differentiable]
//! fn energy<T: Float>(x: &[T]) -> T {
//!     let mut e = T::zero();
//!     for v in x.iter() {
//!         e += *v * *v * *v * *v;
//!     }
//!     e
//! }
//!
//! /// One gradient step on `energy`, then its energy again: the result depends on `x` through
//! /// the gradient too.
//! #[differentiable]
//! fn after_step(x: &[f64], lr: f64) -> f64 {
//!     let (_, (g,)) = value_and_gradient!(energy(x));
//!     let mut y = x.to_vec();
//!     for i in 0..y.len() {
//!         y[i] -= lr * g[i];
//!     }
//!     energy(&y)
//! }
//!
//! let x = vec![0.5, -1.0];
//! let (e, (gx, glr)) = value_and_gradient!(after_step(&x, 0.1));
//! // y = x - 4 lr x³, e = Σ y⁴: de/dx = 4 y³ (1 - 12 lr x²), de/dlr = Σ 4 y³ (-4 x³).
//! let y: Vec<f64> = x.iter().map(|v| v - 0.4 * v * v * v).collect();
//! assert!((e - y.iter().map(|v| v.powi(4)).sum::<f64>()).abs() < 1e-12);
//! for i in 0..2 {
//!     let want = 4.0 * y[i].powi(3) * (1.0 - 1.2 * x[i] * x[i]);
//!     assert!((gx[i] - want).abs() < 1e-12);
//! }
//! let want: f64 = (0..2).map(|i| 4.0 * y[i].powi(3) * (-4.0 * x[i].powi(3))).sum();
//! assert!((glr - want).abs() < 1e-12);
//! ```

use crate::dual::{CoDual, Dual, NoFData, NoTangent};
use crate::hessian::Dir;

/// `Σ gᵢ dᵢ`: the tangent of a nested gradient's value, `∇f · ẋ`, one argument at a time (a
/// number, a buffer, or [`NoTangent`], whose components are none).
#[inline]
pub fn dot<G: Dir<f64> + ?Sized, D: Dir<f64> + ?Sized>(g: &G, d: &D) -> f64 {
    let (g, d) = (g.dir_slice(), d.dir_slice());
    g.iter().zip(d).map(|(a, b)| a * b).sum()
}

/// `a g + b h` of one argument's gradient `g` and Hessian-vector product `h`: the cotangent a
/// nested gradient's or derivative's pullback gives that argument.
pub trait Combine: Sized {
    /// `a * g + b * h`, reusing `h`'s storage.
    fn combine(a: f64, g: Self, b: f64, h: Self) -> Self;

    /// A zero of `self`'s shape.
    fn zero_like(&self) -> Self;
}

impl Combine for f64 {
    #[inline(always)]
    fn combine(a: f64, g: f64, b: f64, h: f64) -> f64 {
        a * g + b * h
    }
    #[inline(always)]
    fn zero_like(&self) -> f64 {
        0.0
    }
}

impl Combine for Vec<f64> {
    #[inline]
    fn combine(a: f64, g: Vec<f64>, b: f64, mut h: Vec<f64>) -> Vec<f64> {
        for (h, g) in h.iter_mut().zip(&g) {
            *h = a * g + b * *h;
        }
        h
    }
    #[inline]
    fn zero_like(&self) -> Vec<f64> {
        vec![0.0; self.len()]
    }
}

impl<const N: usize> Combine for [f64; N] {
    #[inline]
    fn combine(a: f64, g: [f64; N], b: f64, mut h: [f64; N]) -> [f64; N] {
        for (h, g) in h.iter_mut().zip(&g) {
            *h = a * g + b * *h;
        }
        h
    }
    #[inline]
    fn zero_like(&self) -> [f64; N] {
        [0.0; N]
    }
}

impl Combine for NoTangent {
    #[inline(always)]
    fn combine(_: f64, _: NoTangent, _: f64, _: NoTangent) -> NoTangent {
        NoTangent
    }
    #[inline(always)]
    fn zero_like(&self) -> NoTangent {
        NoTangent
    }
}

/// [`Combine::combine`] as a function.
#[inline(always)]
pub fn combine<G: Combine>(a: f64, g: G, b: f64, h: G) -> G {
    G::combine(a, g, b, h)
}

/// The gradient of a `Const(..)` argument of a nested `value_and_gradient!`: [`NoTangent`], a
/// constant of the derivative.
#[inline(always)]
pub fn no_tangent() -> NoTangent {
    NoTangent
}

/// The forward rule of [`no_tangent`].
#[inline(always)]
pub fn no_tangent_frule() -> Dual<NoTangent, NoTangent> {
    Dual::new(NoTangent, NoTangent)
}

/// The reverse rule of [`no_tangent`].
#[inline(always)]
pub fn no_tangent_rrule() -> (CoDual<NoTangent, NoFData>, impl FnOnce(crate::dual::NoRData)) {
    (CoDual::new(NoTangent, NoFData), |_| ())
}

/// Why `value_and_gradient!` of a function cannot be differentiated: the function is not generic
/// over one `T: Float`, or takes an argument the nested rules do not cover, or is a method.
#[derive(Clone, Copy, Debug)]
pub struct Refused;

/// Implemented for no type: the bound of the stubs `#[differentiable]` emits for a function whose
/// gradient cannot be differentiated, so that a `value_and_gradient!` of it inside a
/// `#[differentiable]` function fails at the call with this message.
#[diagnostic::on_unimplemented(
    message = "`value_and_gradient!` / `value_and_derivative!` inside a #[differentiable] function needs the function it calls to be generic over one `T: Float`, or over `f64` with `#[differentiable(second_order)]`",
    label = "the derivatives of this function cannot be differentiated",
    note = "put `#[differentiable(second_order)]` on the called function if it is written over `f64`, or write it over a type parameter `T: Float` (`fn f<T: Float>(x: &[T]) -> T`), with arguments that are numbers, integers or buffers of numbers (`T`, `&[T]`, `Vec<T>`, `[T; N]`) and a result `T`: its Hessian-vector products then give the derivative of its gradient"
)]
pub trait NestedGradient<A> {}

/// The refusing stubs, one per arity (`a2` takes two arguments): `#[differentiable]` imports
/// them under the nested rules' names of a function whose derivatives cannot be differentiated,
/// so that a call of one fails at [`NestedGradient`]'s bound with its message.
pub mod refused {
    use super::{NestedGradient, Refused};

    macro_rules! stubs {
        ($($name:ident($($a:ident: $t:ident),*) <$($p:ident),*> ($($q:ident,)*);)*) => {$(
            /// A refusing stub (see the module).
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            pub fn $name<$($p),*>($($a: $t),*) -> Refused
            where
                Refused: NestedGradient<($($q,)*)>,
            {
                let _ = ($($a,)*);
                Refused
            }
        )*};
    }

    stubs! {
    a1(a0: A0) <A0> (A0,);
    a2(a0: A0, a1: A1) <A0, A1> (A0, A1,);
    a3(a0: A0, a1: A1, a2: A2) <A0, A1, A2> (A0, A1, A2,);
    a4(a0: A0, a1: A1, a2: A2, a3: A3) <A0, A1, A2, A3> (A0, A1, A2, A3,);
    a5(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4) <A0, A1, A2, A3, A4> (A0, A1, A2, A3, A4,);
    a6(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5) <A0, A1, A2, A3, A4, A5> (A0, A1, A2, A3, A4, A5,);
    a7(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6) <A0, A1, A2, A3, A4, A5, A6> (A0, A1, A2, A3, A4, A5, A6,);
    a8(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7) <A0, A1, A2, A3, A4, A5, A6, A7> (A0, A1, A2, A3, A4, A5, A6, A7,);
    a9(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8) <A0, A1, A2, A3, A4, A5, A6, A7, A8> (A0, A1, A2, A3, A4, A5, A6, A7, A8,);
    a10(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9,);
    a11(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10,);
    a12(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11,);
    a13(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12,);
    a14(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13,);
    a15(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14,);
    a16(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15,);
    a17(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16,);
    a18(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,);
    a19(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18,);
    a20(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18, a19: A19) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19,);
    a21(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18, a19: A19, a20: A20) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20,);
    a22(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18, a19: A19, a20: A20, a21: A21) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21,);
    a23(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18, a19: A19, a20: A20, a21: A21, a22: A22) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21, A22> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21, A22,);
    a24(a0: A0, a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6, a7: A7, a8: A8, a9: A9, a10: A10, a11: A11, a12: A12, a13: A13, a14: A14, a15: A15, a16: A16, a17: A17, a18: A18, a19: A19, a20: A20, a21: A21, a22: A22, a23: A23) <A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21, A22, A23> (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18, A19, A20, A21, A22, A23,);
    }
}
