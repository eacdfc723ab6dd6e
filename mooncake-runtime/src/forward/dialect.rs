//! The two dialects of a derived forward rule's body: one direction ([`one`], what `NAME_frule`
//! runs) and `N` directions at once ([`lanes`], what the batched entry `NAME__lanes` runs).
//!
//! The macro writes a forward rule's body once. Where the two kinds of rule differ (constants,
//! casts, empty buffers, `T::from_f64`, arithmetic, method dispatch, the debug checks) the body
//! calls a name under `__fwd::`, and each rule begins by importing one of these modules under
//! that name:
//!
//! ```text
//! fn f_frule(..) { use ::mooncake_runtime::__private::fwd::dialect::one as __fwd;
//!                  const __N: usize = 1; BODY }
//! fn __rule<const __N: usize>(..) { use ::mooncake_runtime::__private::fwd::dialect::lanes as __fwd; BODY }
//! ```
//!
//! so that the batched rule's body is the ordinary rule's tokens, cloned: it costs the macro no
//! second derivation. Both modules export the same names with the same generic parameters (the
//! number of directions last; [`one`]'s ignore it).

/// One direction per pass: the dialect of `NAME_frule`, each name the ordinary forward rule's.
pub mod one {
    use crate::dual::{Dual, NoTangent};
    use crate::float::Float;
    use crate::rules::scalar::CastRule;
    use crate::tangent::Primal;

    pub use super::super::const_operand::{ConstOperand, FloatConstOperand, OtherConstOperand};
    pub use super::super::lanes::Chunk;
    pub use crate::forward::{DebugCheck, DebugCheckFallback, MethodFrule as MethodRule};

    /// A constant, given its zero tangent by [`Const::constant`] (the shape of the batched
    /// dialect's constants, which pick an impl by autoref).
    pub struct Const<P>(core::cell::Cell<Option<P>>);

    impl<P> Const<P> {
        /// Wraps the constant.
        #[inline(always)]
        pub fn new(p: P) -> Self {
            Const(core::cell::Cell::new(Some(p)))
        }
    }

    impl<P: Primal> Const<P> {
        /// The constant with its zero tangent ([`crate::forward::constant`]).
        #[inline(always)]
        pub fn constant<const N: usize>(&self, _: Chunk<N>) -> Dual<P, P::Tangent> {
            match self.0.take() {
                Some(p) => crate::forward::constant(p),
                None => unreachable!("mooncake: a constant taken twice"),
            }
        }
    }

    /// [`crate::forward::constant`] of a known type (a literal receiver, `f64::abs(0.5)`).
    #[inline(always)]
    pub fn constant<P: Primal, const N: usize>(p: P) -> Dual<P, P::Tangent> {
        crate::forward::constant(p)
    }

    /// `x as B` ([`crate::forward::cast`]).
    #[inline(always)]
    pub fn cast<A: CastRule<B>, B: Primal, const N: usize>(
        x: Dual<A, A::Tangent>,
    ) -> Dual<B, B::Tangent> {
        crate::forward::cast(x)
    }

    /// `Vec::new()` ([`crate::forward::vec_new`]).
    #[inline(always)]
    pub fn vec_new<E: Primal, const N: usize>() -> Dual<Vec<E>, Vec<E::Tangent>> {
        crate::forward::vec_new()
    }

    /// `Vec::with_capacity(n)` ([`crate::forward::vec_with_capacity`]).
    #[inline(always)]
    pub fn vec_with_capacity<E: Primal, const N: usize>(
        n: Dual<usize, NoTangent>,
    ) -> Dual<Vec<E>, Vec<E::Tangent>> {
        crate::forward::vec_with_capacity(n)
    }

    /// `T::from_f64(x)` ([`crate::rules::scalar::float_from_f64_frule`]).
    #[inline(always)]
    pub fn float_from_f64_frule<T: Float, const N: usize>(x: Dual<f64, f64>) -> Dual<T, T> {
        crate::rules::scalar::float_from_f64_frule(x)
    }

    /// The key a buffer method is dispatched under: the ordinary rule's.
    pub const fn key(one: u64, _lanes: u64) -> u64 {
        one
    }

    /// `a + b`, `a - b`, `a * b`, `a / b` of a forward rule: `core::ops`'s operators on duals,
    /// under a trait whose message, where the operands have none (values of a user type whose
    /// arithmetic is its operator traits' methods), says what to write instead.
    macro_rules! forward_operators {
        ($($trait:ident $f:ident $op:ident $sym:literal),*) => {$(
            #[doc = concat!("`a ", $sym, " b` in a forward rule: `core::ops::", stringify!($op), "` on duals.")]
            #[diagnostic::on_unimplemented(
                message = "arithmetic in #[differentiable] code on a value with none in forward mode (`{Self}`)",
                label = "an operand of this arithmetic is a value of a user type the function's text does not show to be one",
                note = "arithmetic on a value of a `#[derive(Tangent)]` type is its operator trait's method (`a + b` is `a.add(b)`, which a `#[differentiable] impl Add for V3` differentiates), used where the text shows the operand to be such a value (a variable declared with its type or bound to a struct literal, `V3::new(..)` or arithmetic of one) or reads it from a field; for another value (a call's or a method's result), bind it to a variable with its type (`let c: V3 = a.cross(&b);`) or call the method (`a.cross(&b).add(v)`)"
            )]
            pub trait $trait<B> {
                /// The result.
                type Output;
                #[doc = concat!("`self ", $sym, " b`.")]
                fn $f(self, b: B) -> Self::Output;
            }

            #[diagnostic::do_not_recommend]
            impl<A: core::ops::$op<B>, B> $trait<B> for A {
                type Output = A::Output;
                #[inline(always)]
                fn $f(self, b: B) -> A::Output {
                    core::ops::$op::$f(self, b)
                }
            }

            #[doc = concat!("`a ", $sym, " b` through [`", stringify!($trait), "`].")]
            #[inline(always)]
            pub fn $f<A: $trait<B>, B>(a: A, b: B) -> A::Output {
                $trait::$f(a, b)
            }
        )*};
    }

    forward_operators!(
        ForwardAdd add Add "+",
        ForwardSub sub Sub "-",
        ForwardMul mul Mul "*",
        ForwardDiv div Div "/"
    );

    /// The key of the impls of [`FieldAdd`] and its kin for operands with `core::ops` arithmetic.
    pub struct StdKey;

    /// The key of the impls of [`FieldAdd`] and its kin for values of a user type `P`: the
    /// key of the numbers' method path's impl for user types too (`rev::MethodRrule`).
    pub use crate::keys::UserKey;

    /// `a + b`, `a - b`, `a * b`, `a / b` where an operand's type is one the function's text
    /// does not show (read from a named field, `p.pos + p.vel * dt`): `core::ops` on duals of
    /// numbers and matrices (key [`StdKey`]), and for a value of a `#[derive(Tangent)]` type
    /// the operator trait's method's rule, as for a variable declared with the type (key
    /// [`UserKey`]; `rev::UserValue` marks those types). The keys keep the impls apart, and
    /// for any operands at most one applies, which rustc infers.
    macro_rules! field_operators {
        ($($trait:ident $f:ident $method:ident $op:ident),*) => {$(
            #[doc = concat!("`a.", stringify!($method), "(b)` of an operand read from a field (see [`StdKey`], [`UserKey`]).")]
            #[diagnostic::on_unimplemented(
                message = "arithmetic in #[differentiable] code on a value with none in forward mode (`{Self}`)",
                label = "an operand of this arithmetic is read from a field, and has no arithmetic in forward mode",
                note = "arithmetic on a value of a `#[derive(Tangent)]` type is its operator trait's method (`a + b` is `a.add(b)`), which a `#[differentiable] impl Add for V3` differentiates"
            )]
            pub trait $trait<B, K> {
                /// The result.
                type Output;
                #[doc = concat!("`self.", stringify!($method), "(b)`.")]
                fn $f(self, b: B) -> Self::Output;
            }

            #[diagnostic::do_not_recommend]
            impl<A: core::ops::$op<B>, B> $trait<B, StdKey> for A {
                type Output = A::Output;
                #[inline(always)]
                fn $f(self, b: B) -> A::Output {
                    core::ops::$op::$method(self, b)
                }
            }

            #[diagnostic::do_not_recommend]
            impl<P, B, O> $trait<B, UserKey<P>> for Dual<P, P::Tangent>
            where
                P: Primal,
                P: crate::reverse::UserValue,
                P::FData: crate::reverse::DerivedFData,
                for<'m> &'m mut Dual<P, P::Tangent>: crate::forward::MethodFrule<
                    { crate::keys::method_key(stringify!($method)) },
                    P,
                    Receiver = Dual<P, P::Tangent>,
                    Rule = fn(Dual<P, P::Tangent>, B) -> O,
                >,
            {
                type Output = O;
                #[inline(always)]
                fn $f(mut self, b: B) -> O {
                    let (r, rule) = crate::forward::MethodFrule::<
                        { crate::keys::method_key(stringify!($method)) },
                        P,
                    >::method_frule(&mut self);
                    rule(r, b)
                }
            }

            #[doc = concat!("`a.", stringify!($method), "(b)` through [`", stringify!($trait), "`].")]
            #[inline(always)]
            pub fn $f<A: $trait<B, K>, B, K>(a: A, b: B) -> A::Output {
                $trait::$f(a, b)
            }
        )*};
    }

    field_operators!(
        FieldAdd field_add add Add,
        FieldSub field_sub sub Sub,
        FieldMul field_mul mul Mul,
        FieldDiv field_div div Div
    );

    /// `-a` of an operand read from a field (see [`StdKey`], [`UserKey`]).
    #[diagnostic::on_unimplemented(
        message = "arithmetic in #[differentiable] code on a value with none in forward mode (`{Self}`)",
        label = "an operand of this arithmetic is read from a field, and has no arithmetic in forward mode",
        note = "arithmetic on a value of a `#[derive(Tangent)]` type is its operator trait's method (`-a` is `a.neg()`), which a `#[differentiable] impl Neg for V3` differentiates"
    )]
    pub trait FieldNeg<K> {
        /// The result.
        type Output;
        /// `-self`.
        fn field_neg(self) -> Self::Output;
    }

    #[diagnostic::do_not_recommend]
    impl<A: core::ops::Neg> FieldNeg<StdKey> for A {
        type Output = A::Output;
        #[inline(always)]
        fn field_neg(self) -> A::Output {
            core::ops::Neg::neg(self)
        }
    }

    #[diagnostic::do_not_recommend]
    impl<P, O> FieldNeg<UserKey<P>> for Dual<P, P::Tangent>
    where
        P: Primal,
        P: crate::reverse::UserValue,
        P::FData: crate::reverse::DerivedFData,
        for<'m> &'m mut Dual<P, P::Tangent>: crate::forward::MethodFrule<
                { crate::keys::method_key("neg") },
                P,
                Receiver = Dual<P, P::Tangent>,
                Rule = fn(Dual<P, P::Tangent>) -> O,
            >,
    {
        type Output = O;
        #[inline(always)]
        fn field_neg(mut self) -> O {
            let (r, rule) =
                crate::forward::MethodFrule::<{ crate::keys::method_key("neg") }, P>::method_frule(
                    &mut self,
                );
            rule(r)
        }
    }

    /// `-a` through [`FieldNeg`].
    #[inline(always)]
    pub fn field_neg<A: FieldNeg<K>, K>(a: A) -> A::Output {
        FieldNeg::field_neg(a)
    }

    /// `a.rem(b)` through `core::ops::Rem`.
    #[inline(always)]
    pub fn rem<A: core::ops::Rem<B>, B>(a: A, b: B) -> A::Output {
        core::ops::Rem::rem(a, b)
    }

    /// `-a` through `core::ops::Neg`.
    #[inline(always)]
    pub fn neg<A: core::ops::Neg>(a: A) -> A::Output {
        core::ops::Neg::neg(a)
    }
}

/// `N` directions per pass: the dialect of the batched rule (the names of
/// [`super::lanes`] under the names of [`one`]).
pub mod lanes {
    pub use super::super::const_operand::{ConstOperand, FloatConstOperand, OtherConstOperand};
    pub use super::super::lanes::{
        Chunk, DebugCheck, DebugCheckFallback, LanesConst as Const, LanesConstant,
        LanesConstantOther, LanesMethodFrule as MethodRule, add, add as field_add, cast, constant,
        div, div as field_div, float_from_f64_frule, mul, mul as field_mul, neg, neg as field_neg,
        rem, sub, sub as field_sub, vec_new, vec_with_capacity,
    };

    /// The key a buffer method is dispatched under: its batched rule's (`__lanes_` and the
    /// name).
    pub const fn key(_one: u64, lanes: u64) -> u64 {
        lanes
    }
}
