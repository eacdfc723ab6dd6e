//! # Rules by hand
//!
//! `#[differentiable]` derives a function's rules from its body. Some functions are better
//! served by a rule written or declared by hand (seed 004, "Defining Rules"): functions whose
//! derivative is zero, values that should be treated as constants, and functions for which a
//! simpler, ChainRules-style reverse rule is at hand. This chapter shows the tools for
//! those cases. Every rule they produce follows the rule interface of the rest of the crate, so
//! derived code calls them like any other rule: a call `g(x)` in a `#[differentiable]` body
//! becomes a call of `g_frule` (forward mode) or `g_rrule` (reverse mode), resolved in the
//! caller's scope.
//!
//! | tool | what it gives | modes |
//! | --- | --- | --- |
//! | [`zero_adjoint!`](crate::zero_adjoint) | `NAME_frule` and `NAME_rrule` of existing functions whose derivative is zero | both |
//! | [`stop_gradient`](crate::stop_gradient) | the identity, with derivative zero | both |
//! | [`from_rrule!`](crate::from_rrule) | `NAME_rrule` from a ChainRules-style rule | reverse |
//! | `NAME_frule` / `NAME_rrule` written by hand, checked by [`#[frule(for = NAME)]`](crate::frule) / [`#[rrule(for = NAME)]`](crate::rrule) | a primitive: rules for a function AD does not look into | both |
//! | [`#[mooncake_overlay]`](crate::mooncake_overlay) | both rules of an existing function, derived from a second body only AD sees | both |
//! | [`ReadBuffer`](crate::rules::buffer::ReadBuffer) / [`WriteBuffer`](crate::rules::buffer::WriteBuffer) | one rule for every way a buffer is held | both |
//!
//! Check every hand-written or declared rule with `test_rule!` (see
//! [`test_utils`](crate::test_utils)), in both modes where both exist.
//!
//! ## Primitives: rules written by hand
//!
//! A function that is not `#[differentiable]` (it calls C, uses SIMD intrinsics, or has a
//! derivative much cheaper than its body's) becomes a *primitive* once it has rules: write
//! `NAME_frule` and `NAME_rrule` beside it, and every derived rule that calls `NAME` uses them.
//! Mark each with `#[frule(for = NAME)]` / `#[rrule(for = NAME)]`: the attribute leaves the
//! rule as written and checks, at compile time, that its primal types are `NAME`'s and that
//! each tangent or fdata type is the one [`Primal`](crate::Primal) gives, so that a wrong
//! signature is an error at the rule instead of at a distant call in derived code.
//!
//! The shapes are those of the runtime's own rules:
//!
//! * forward: each argument `P` as `Dual<P, <P as Primal>::Tangent>`, a `&T` as
//!   `Dual<&T, &<T as Primal>::TangentRef>` (`Dual<&[f64], &[f64]>`), a `&mut T` as
//!   `Dual<&mut T, &mut <T as Primal>::TangentRef>`; the result a `Dual` of the output;
//! * reverse: each argument `P` as `CoDual<P, <P as Primal>::FData>`, a `&T` as
//!   `CoDual<&T, <T as Primal>::Shadow>` (`CoDual<&[f64], SharedVec<f64>>`), a `&mut T` as
//!   `CoDual<H, H>` with `H = <T as Primal>::Handle` (`SharedVec<f64>` for `&mut [f64]`),
//!   whose primal the rule mutates and its pullback restores; the result is the output's
//!   `CoDual` and a pullback from the output's rdata to one rdata per argument (gradients of
//!   references are added into their shadows instead, and their rdata is `NoRData`).
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! /// Σ xᵢ², computed some way AD should not look into.
//! fn sum_squares(x: &[f64]) -> f64 {
//!     x.iter().map(|v| v * v).sum()
//! }
//!
//! #[frule(for = sum_squares)]
//! fn sum_squares_frule(x: Dual<&[f64], &[f64]>) -> Dual<f64, f64> {
//!     let d: f64 = x.primal.iter().zip(x.tangent).map(|(v, t)| 2.0 * v * t).sum();
//!     Dual::new(sum_squares(x.primal), d)
//! }
//!
//! #[rrule(for = sum_squares)]
//! fn sum_squares_rrule(
//!     x: CoDual<&[f64], SharedVec<f64>>,
//! ) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData,) + use<>) {
//!     let (values, shadow) = (x.primal.to_vec(), x.fdata);
//!     (CoDual::new(sum_squares(&values), NoFData), move |dy: f64| {
//!         for (i, v) in values.iter().enumerate() {
//!             shadow.add(i, 2.0 * v * dy); // gradients of references are added
//!         }
//!         (NoRData,)
//!     })
//! }
//!
//! // Derived code calls the primitive's rules in both modes.
//! #[differentiable]
//! fn energy(x: &[f64], k: f64) -> f64 {
//!     0.5 * k * sum_squares(x)
//! }
//!
//! let x = vec![1.0, -2.0, 0.5];
//! test_rule!(sum_squares(&x)); // the rules themselves, both modes
//! test_rule!(energy(&x, 3.0)); // and composed with derived ones
//! let (e, (dx, dk)) = value_and_gradient!(energy(&x, 3.0));
//! assert_eq!(e, 0.5 * 3.0 * 5.25);
//! assert_eq!((dx, dk), (vec![3.0, -6.0, 1.5], 0.5 * 5.25));
//! ```
//!
//! A rule whose signature does not match its function does not compile, and the error points
//! at the rule:
//!
//! ```compile_fail
//! use mooncake_runtime::prelude::*;
//! fn scale(x: f64, a: f64) -> f64 {
//!     x * a
//! }
//! #[frule(for = scale)]
//! fn scale_frule(x: Dual<f64, f64>, a: Dual<f32, f32>) -> Dual<f64, f64> {
//!     Dual::new(x.primal * a.primal as f64, x.tangent * a.primal as f64)
//! }
//! ```
//!
//! **Overriding a derived rule.** A hand-written rule replaces what `#[differentiable]` would
//! derive when the function carries no `#[differentiable]` (both rules by hand, as above) or
//! derives one mode only: `#[differentiable(forward_only)]` derives `NAME_frule` and leaves
//! `NAME_rrule` to you, `#[differentiable(reverse_only)]` the other way round. Derived callers
//! cannot tell the difference, and `test_rule!` checks the pair against finite differences and
//! against each other.
//!
//! ## A body only AD sees: `#[mooncake_overlay]`
//!
//! When a function is written in a way `#[differentiable]` refuses (a closure, an iterator
//! chain, a call into C), write the same computation again in a form it accepts and mark it
//! `#[mooncake_overlay]`, beside the function (seed 004, "Simplifying Code via Overlays"). The
//! rules `NAME_frule` / `NAME_rrule` are derived from the overlay; the function keeps its own
//! body, and derived code that calls it uses the overlay's rules. The overlay's signature must
//! be the function's: a mismatch is a compile error at the overlay.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! fn soft_clip(x: &[f64], limit: f64) -> f64 {
//!     x.iter().map(|v| limit * (v / limit).tanh()).sum()
//! }
//!
//! #[mooncake_overlay]
//! fn soft_clip(x: &[f64], limit: f64) -> f64 {
//!     let mut s = 0.0;
//!     for v in x.iter() {
//!         s += limit * (*v / limit).tanh();
//!     }
//!     s
//! }
//!
//! let x = vec![0.5, -3.0];
//! test_rule!(soft_clip(&x, 2.0));
//! let (value, (gradient, _)) = value_and_gradient!(soft_clip(&x, 2.0));
//! assert_eq!(value, soft_clip(&x, 2.0));
//! assert_eq!(gradient.len(), 2);
//! ```
//!
//! The rules compute the overlay, so an overlay that is not the same function changes the
//! results (the seed shows it with `scale(x) = 2x` overlaid by `3x`: see
//! [`mooncake_overlay`](crate::mooncake_overlay)); keep them equal and check with
//! `test_rule!`, which compares the rules against the *function*.
//!
//! ## One rule for every way a buffer is held: canonicalisation
//!
//! A buffer reaches a rule as a slice, a `Vec`, an array, a shared handle (`SharedVec`, for
//! memory behind `&mut` in reverse mode), or a reference to any of these (seed 004,
//! "Canonicalising Tangent Types"). Rather than one rule per combination, write the rule over
//! [`ReadBuffer`](crate::rules::buffer::ReadBuffer) / [`WriteBuffer`](crate::rules::buffer::WriteBuffer),
//! which give one representation inside (`len`, `get`, `with_slice`, and `set`,
//! `with_slice_mut` for writes). The runtime's own buffer rules are written this way. A forward
//! rule of a dot product that takes its operands and their tangents however they are held:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::rules::buffer::ReadBuffer;
//!
//! fn dot(a: &[f64], b: &[f64]) -> f64 {
//!     a.iter().zip(b).map(|(x, y)| x * y).sum()
//! }
//!
//! fn dot_frule<A, TA, B, TB>(a: Dual<A, TA>, b: Dual<B, TB>) -> Dual<f64, f64>
//! where
//!     A: ReadBuffer<f64>,
//!     TA: ReadBuffer<f64>,
//!     B: ReadBuffer<f64>,
//!     TB: ReadBuffer<f64>,
//! {
//!     let (mut value, mut tangent) = (0.0, 0.0);
//!     for i in 0..a.primal.len() {
//!         let (x, y) = (a.primal.get(i), b.primal.get(i));
//!         value += x * y;
//!         tangent += a.tangent.get(i) * y + x * b.tangent.get(i);
//!     }
//!     Dual::new(value, tangent)
//! }
//!
//! // A `Vec` and an array, each with a tangent held another way:
//! let (x, y) = (vec![1.0, 2.0], [3.0, 4.0]);
//! let d = dot_frule(Dual::new(&x, &[1.0, 0.0][..]), Dual::new(&y, &vec![0.0, 0.0]));
//! assert_eq!((d.primal, d.tangent), (11.0, 3.0));
//! test_rule!(dot(&x, &y), frule = dot_frule, mode = forward);
//! ```
//!
//! ## Functions with zero adjoint: `zero_adjoint!`
//!
//! Many functions that differentiated code calls have a derivative that is zero wherever it
//! exists: counts, indices, comparisons, rounding, lookups of integer metadata. `zero_adjoint!`
//! takes one or more signatures of *existing* functions, each ending with `;`, and generates
//! their rules where it is invoked:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! fn count_positive(x: &[f64]) -> usize {
//!     x.iter().filter(|v| **v > 0.0).count()
//! }
//!
//! fn bucket(x: f64, width: usize) -> f64 {
//!     (x / width as f64).floor()
//! }
//!
//! fn sign_count<T: Float>(x: &[T]) -> i64 {
//!     x.iter().map(|v| if *v > T::ZERO { 1 } else { -1 }).sum()
//! }
//!
//! zero_adjoint! {
//!     fn count_positive(x: &[f64]) -> usize;
//!     fn bucket(x: f64, width: usize) -> f64;
//!     fn sign_count<T: Float>(x: &[T]) -> i64;
//! }
//!
//! // Forward mode: the primal result with a zero tangent.
//! let y = bucket_frule(Dual::new(7.5, 1.0), Dual::new(2, NoTangent));
//! assert_eq!((y.primal, y.tangent), (3.0, 0.0));
//!
//! // Reverse mode: fresh zero fdata, and a pullback returning zero rdata for every argument.
//! let x = vec![1.0, -2.0, 3.0];
//! let (n, pullback) = count_positive_rrule(CoDual::new(&x[..], SharedVec::zeros(3)));
//! assert_eq!(n.primal, 2);
//! assert_eq!(pullback(NoRData), (NoRData,));
//!
//! let s = sign_count_frule::<f32>(Dual::new(&[1.0_f32, -1.0, 2.0][..], &[0.0; 3][..]));
//! assert_eq!(s.primal, 1);
//!
//! // The declared rules are checked like any other.
//! test_rule!(bucket(7.5, 2));
//! test_rule!(count_positive(&x));
//! ```
//!
//! For each `fn name(a: A, ..) -> R;` it generates:
//!
//! * `name_frule(a: Dual<A, <A as Primal>::Tangent>, ..) -> Dual<R, <R as Primal>::Tangent>`
//!   (a `&T` argument is a `Dual<&T, &<T as Primal>::TangentRef>`), which calls the primal on
//!   the primals and pairs the result with its zero tangent ([`Primal::zero_tangent`]);
//! * `name_rrule(a: CoDual<A, <A as Primal>::FData>, ..)` (a `&T` argument is a
//!   `CoDual<&T, <T as Primal>::Shadow>`), which calls the primal, returns the result with fresh
//!   zero fdata ([`Primal::zero_fdata`]), and a pullback that returns zero rdata for every
//!   argument ([`Primal::zero_rdata`], computed from the arguments before the call; `NoRData`
//!   for references). The pullback captures no lifetime.
//!
//! The signature is the function's, without a body:
//!
//! * a **list** of signatures declares a family (Mooncake.jl's variadic signatures): one line
//!   per arity or argument type;
//! * **generic** signatures (`fn name<T: Float>(x: T) -> usize;`) give generic rules; their
//!   type and const parameters are passed to the primal by turbofish, in the order written;
//! * a **visibility** (`pub fn name(..)`) is given to both rules, so that other modules can
//!   call them; outer attributes (`#[cfg(..)]`, docs) are copied onto both;
//! * a **path** (`fn my_mod::helper(a: f64) -> f64;`) names a function elsewhere. The rules are
//!   still named `helper_frule` / `helper_rrule` and are placed **where the macro is
//!   invoked**.
//!
//! ### Where the rules must live
//!
//! Derived code turns a call `path::name(..)` into `path::name_frule(..)` /
//! `path::name_rrule(..)`: the rules must sit beside the name the caller uses. Invoke the macro
//! in the module that defines the function (callers then reach the rules by the same path as
//! the function), or, for a function of another module or crate, invoke it in the module that
//! calls it and call the function there by its bare name after a `use`:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! mod geometry {
//!     pub fn quadrant(x: f64, y: f64) -> u8 {
//!         match (x >= 0.0, y >= 0.0) {
//!             (true, true) => 1,
//!             (false, true) => 2,
//!             (false, false) => 3,
//!             (true, false) => 4,
//!         }
//!     }
//! }
//!
//! use geometry::quadrant;
//! // The rules `quadrant_frule` / `quadrant_rrule` are defined here, beside the `use`.
//! zero_adjoint! {
//!     fn geometry::quadrant(x: f64, y: f64) -> u8;
//! }
//!
//! #[differentiable]
//! fn weighted(x: f64, y: f64) -> f64 {
//!     let q = quadrant(x, y);
//!     (q as f64) * x * y
//! }
//!
//! let d = weighted_frule(Dual::new(2.0, 1.0), Dual::new(-3.0, 0.0));
//! assert_eq!((d.primal, d.tangent), (-24.0, -12.0));
//! ```
//!
//! ### What `zero_adjoint!` refuses
//!
//! * **`&mut` arguments**, with a compile error: a function that writes through a reference
//!   moves values from one place to another, and their gradients with them, so its adjoint is
//!   not zero in general. Write its rules by hand or derive them.
//! * **Outputs that are or hold references** (`-> &T`, `-> &mut T`, `-> (&T, usize)`), with a
//!   compile error at the output type. Seed 004's warning: a zero-adjoint rule is only correct
//!   if the output aliases no input, because the output gets a *fresh* zero shadow, unrelated to
//!   the shadow of the memory it points into. This is always the case for scalars, integers and
//!   other owned outputs; an owned output that shares memory with an input by other means (an
//!   `Rc` clone) is outside what the macro can see, and its rules must be written by hand.
//! * `impl Trait` arguments (name a type parameter), receivers (`&self`: write
//!   `fn Type::method(this: &Type) -> usize;`), patterns, bodies, and `const` / `async` /
//!   `unsafe` / `extern` functions.
//!
//! A function is only a zero-adjoint function if its output does not change (to first order)
//! when any differentiable input does; declaring one that does is a silent error that
//! `test_rule!` catches against finite differences:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::test_utils::Check;
//!
//! fn not_constant(x: f64) -> f64 {
//!     2.0 * x
//! }
//! zero_adjoint! {
//!     fn not_constant(x: f64) -> f64;
//! }
//!
//! let failure = check_rule!(not_constant(1.5)).unwrap_err();
//! assert_eq!(failure.check, Check::ForwardVsFiniteDifferences);
//! ```
//!
//! ## Treating a value as a constant: `stop_gradient`
//!
//! [`stop_gradient`](crate::stop_gradient) is the identity; its rules
//! ([`stop_gradient_frule`](crate::stop_gradient_frule),
//! [`stop_gradient_rrule`](crate::stop_gradient_rrule)) pass the value through with a zero
//! tangent, fresh zero fdata and zero rdata. The prelude exports all three, so derived code
//! finds the rules beside the function:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! // A ratio whose denominator is held constant: d/dx [x / stop_gradient(2x)] = 1 / (2x).
//! #[differentiable]
//! fn ratio(x: f64) -> f64 {
//!     let scale = stop_gradient(2.0 * x);
//!     x / scale
//! }
//!
//! let d = ratio_frule(Dual::new(-4.0, 1.0));
//! assert_eq!((d.primal, d.tangent), (0.5, -0.125));
//!
//! // In reverse mode, the gradient stops at the call.
//! let (y, pullback) = stop_gradient_rrule(CoDual::new(-4.0_f64, NoFData));
//! assert_eq!((y.primal, pullback(1.0)), (-4.0, (0.0,)));
//! ```
//!
//! It takes values (scalars, tuples, arrays, `Vec`s, derived structs); to stop the gradient of
//! a buffer seen through a reference, pass an owned copy (`stop_gradient(x.to_vec())`). Its
//! rules deliberately differ from the identity's derivative, so a function that calls it is
//! checked against finite differences only where the value it stops does not change the
//! result to first order (or against a reference function with the intended derivative).
//!
//! ## Rules in the ChainRules style: `from_rrule!`
//!
//! Reverse-mode rules of this crate work on fdata and rdata: shadows of address-identified
//! arguments are incremented in place, value-identified gradients are returned. A rule in the
//! simpler, non-mutating style of ChainRules.jl works on tangents only: it returns the value and
//! a pullback from the output's cotangent (as the output's *tangent* type) to one cotangent per
//! argument (as the arguments' tangent types: `Vec<f64>` for a `&[f64]`, `f64` for an `f64`,
//! `NoTangent` for an integer). `from_rrule!` adapts such a rule, named after `=>`, into a full
//! `NAME_rrule`:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! fn my_dot(a: &[f64], b: &[f64]) -> f64 {
//!     a.iter().zip(b).map(|(x, y)| x * y).sum()
//! }
//!
//! fn my_dot_chainrule(
//!     a: &[f64],
//!     b: &[f64],
//! ) -> (f64, impl FnOnce(f64) -> (Vec<f64>, Vec<f64>) + use<>) {
//!     let (a, b) = (a.to_vec(), b.to_vec());
//!     let y = my_dot(&a, &b);
//!     (y, move |dy: f64| {
//!         let da = b.iter().map(|v| dy * v).collect();
//!         let db = a.iter().map(|v| dy * v).collect();
//!         (da, db)
//!     })
//! }
//!
//! from_rrule!(fn my_dot(a: &[f64], b: &[f64]) -> f64 => my_dot_chainrule);
//!
//! let (a, b) = (vec![1.0, 2.0], vec![3.0, -1.0]);
//! let (da, db) = (SharedVec::zeros(2), SharedVec::zeros(2));
//! let (y, pullback) =
//!     my_dot_rrule(CoDual::new(&a[..], da.clone()), CoDual::new(&b[..], db.clone()));
//! assert_eq!(y.primal, 1.0);
//! assert_eq!(pullback(2.0), (NoRData, NoRData));
//! assert_eq!((da.to_vec(), db.to_vec()), (vec![6.0, -2.0], vec![2.0, 4.0]));
//!
//! test_rule!(my_dot(&a, &b), rrule = my_dot_rrule, mode = reverse);
//! // Aliased arguments share one shadow, which receives both cotangents.
//! test_rule!(my_dot(&a, &a), rrule = my_dot_rrule, mode = reverse);
//! ```
//!
//! The generated `NAME_rrule` takes `CoDual`s (`CoDual<&T, <T as Primal>::Shadow>` for a `&T`,
//! `CoDual<A, <A as Primal>::FData>` for a value), calls the chain rule on the primals, and
//! returns the value with fresh zero fdata. Its pullback joins the output's fdata and rdata into
//! the output's tangent ([`Primal::join_tangent`]), calls the chain rule's pullback, and for
//! each argument splits the returned tangent: the part that belongs to memory (a reference's
//! referent, a buffer by value) is **added** into the argument's fdata
//! ([`FData::increment_from`](crate::FData::increment_from)), the rest is returned as rdata.
//!
//! The same syntax as `zero_adjoint!` applies (lists separated by `;`, generics, a visibility,
//! paths, attributes). The chain rule:
//!
//! * takes the arguments as the primal does (by value or by `&`), and has the same type and
//!   const parameters in the same order (they are passed by turbofish unless the path after
//!   `=>` has its own);
//! * must return a pullback that borrows nothing from the arguments: copy what the reverse pass
//!   needs, and end the pullback's type with `+ use<..>` listing only type parameters (as in
//!   `my_dot_chainrule` above), because the generated rule's pullback captures no lifetime;
//! * must not mutate its arguments: `from_rrule!` refuses `&mut` arguments, and outputs that
//!   are or hold references, with a compile error.
//!
//! `from_rrule!` produces the **reverse** rule only. The forward rule is written by hand, as
//! here, or derived by `#[differentiable(forward_only)]` on the function (plain
//! `#[differentiable]` derives `NAME_rrule` too, which would collide with the adapted one). A
//! function of a slice and a scalar, with both rules checked, and their agreement:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! fn scaled_square_norm(x: &[f64], a: f64) -> f64 {
//!     a * x.iter().map(|v| v * v).sum::<f64>()
//! }
//!
//! fn scaled_square_norm_frule(x: Dual<&[f64], &[f64]>, a: Dual<f64, f64>) -> Dual<f64, f64> {
//!     let s: f64 = x.primal.iter().map(|v| v * v).sum();
//!     let ds: f64 = x.primal.iter().zip(x.tangent).map(|(v, t)| 2.0 * v * t).sum();
//!     Dual::new(a.primal * s, a.primal * ds + s * a.tangent)
//! }
//!
//! fn scaled_square_norm_chainrule(
//!     x: &[f64],
//!     a: f64,
//! ) -> (f64, impl FnOnce(f64) -> (Vec<f64>, f64) + use<>) {
//!     let x = x.to_vec();
//!     let s: f64 = x.iter().map(|v| v * v).sum();
//!     (a * s, move |dy: f64| (x.iter().map(|v| 2.0 * a * v * dy).collect(), s * dy))
//! }
//!
//! from_rrule!(fn scaled_square_norm(x: &[f64], a: f64) -> f64 => scaled_square_norm_chainrule);
//!
//! let x = vec![0.5, -1.0, 2.0];
//! test_rule!(scaled_square_norm(&x, 1.5)); // both modes, and their agreement
//! ```
//!
//! A wrong chain rule is caught like any wrong rule:
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::test_utils::Check;
//!
//! fn cube(x: f64) -> f64 {
//!     x * x * x
//! }
//! fn cube_chainrule(x: f64) -> (f64, impl FnOnce(f64) -> (f64,)) {
//!     (cube(x), move |dy| (2.0 * x * x * dy,)) // should be 3x²
//! }
//! from_rrule!(fn cube(x: f64) -> f64 => cube_chainrule);
//!
//! let failure = check_rule!(cube(1.2), rrule = cube_rrule, mode = reverse).unwrap_err();
//! assert_eq!(failure.check, Check::ReverseVsFiniteDifferences);
//! ```
//!
//! [`Primal::zero_tangent`]: crate::Primal::zero_tangent
//! [`Primal::zero_fdata`]: crate::Primal::zero_fdata
//! [`Primal::zero_rdata`]: crate::Primal::zero_rdata
//! [`Primal::join_tangent`]: crate::Primal::join_tangent
