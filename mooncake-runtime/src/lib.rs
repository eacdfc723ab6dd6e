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

#[doc(hidden)]
pub mod api;
pub mod cache;
pub mod dual;
pub mod element;
#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
pub mod elements;
pub mod elementwise;
pub mod enums;
pub mod float;
pub mod forward;
pub mod fwd;
#[doc(hidden)]
pub mod hessian;
mod impls;
pub mod jacobian;
pub(crate) mod kept;
pub mod keys;
pub mod lanes;
#[cfg(feature = "nalgebra")]
pub mod linalg;
#[cfg(feature = "ndarray")]
pub mod nd;
pub mod nested;
pub mod reverse;
pub mod rng;
pub mod rules;
#[path = "docs_rules.rs"]
pub mod rules_guide;
pub mod shared;
pub mod tangent;
pub mod test_utils;
pub mod views;

pub use cache::GradientCache;
pub use dual::{CoDual, Const, Dual, NoFData, NoRData, NoTangent};
pub use element::Element;
pub use elementwise::ElementMap;
pub use float::Float;
pub use fwd::Fwd;
pub use hessian::HvpCache;
pub use jacobian::{FlatTangent, Jacobian};
pub use mooncake_macros::Tangent;

/// Derives the rules of a function: `NAME_frule` (forward mode) and `NAME_rrule` (reverse mode)
/// beside the function, which is left exactly as written.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn f(x: &[f64], y: f64) -> f64 {
///     let mut s = 0.0;
///     for (i, v) in x.iter().enumerate() {
///         if *v > 0.0 {
///             s += v.sin() * y;
///         } else {
///             s -= (i as f64) * v * v;
///         }
///     }
///     s
/// }
///
/// let x = vec![0.5, -2.0, 1.5];
/// // The derived rule takes each argument paired with its tangent:
/// let d = f_frule(Dual::new(&x[..], &[0.0, 0.0, 0.0][..]), Dual::new(2.0, 1.0));
/// assert_eq!(d.primal, f(&x, 2.0));
/// assert_eq!(d.tangent, 0.5_f64.sin() + 1.5_f64.sin()); // d/dy
/// ```
///
/// What it accepts: arguments and results of any type with a tangent ([`Primal`]): scalars,
/// integers, `bool`, slices, `Vec`s and arrays by value and by reference, `&mut` anything,
/// tuples, `#[derive(Tangent)]` structs. In the body: `let` (with patterns), blocks, assignment
/// and compound assignment to variables, indices and fields, arithmetic, comparisons, `&&`,
/// `||`, `!`, `as` casts, every `std` float method in method or path syntax, `if`, `match` on
/// integers, `bool`, ranges and fieldless enums (with guards), `for` over ranges,
/// `(a..b).rev()`, `(a..b).step_by(k)`, `x.iter()`, `&x`, `.enumerate()`, `.zip()`, `while`,
/// `loop` with `break value`, labelled `break`/`continue`, early `return`, `vec!`,
/// `Vec::new`/`with_capacity`/`push`/`pop`, `to_vec`, `clone`, `x.iter().sum()`, calls of other
/// differentiable functions (any path, any crate, recursion), methods, `assert!`-style macros
/// and `panic!`, `Option` and `Result` values (built, matched, `if let`, `let .. else`,
/// `while let`, `?`, `unwrap`: see [`enums`]), and much more: the README's subset table. Anything else is a compile error at the offending tokens saying what to do
/// instead.
///
/// Put it on an `impl` block to make its methods callable with method syntax (`p.loss(x)`)
/// from other derived code; on a single method, its rule is an associated function
/// (`Type::method_frule`).
///
/// Arguments: `#[differentiable(dump_ir)]` prints the IR of each pass at expansion time (also
/// `MOONCAKE_DUMP_IR=1` or `MOONCAKE_DUMP_IR=name` in the environment of the build);
/// `#[differentiable(debug)]` makes the rules panic, naming the variable, as soon as a float
/// they compute is not finite (forward mode: values and tangents; reverse mode: the values of
/// its forward sweep); `forward_only` / `reverse_only` derive one rule only;
/// `second_order` derives the reverse rule from a copy of a function over `f64` written over a
/// float type parameter, so that [`hvp!`], [`hessian!`] and nested gradients apply to it (a
/// leaf of numbers and buffers; what cannot be copied with certainty is refused with a message);
/// `recursive` boxes the pullback of every call in the body (no longer needed: see below).
///
/// Recursion, direct or mutual (`f` calls `g`, `g` calls `f`), needs no attribute: the reverse
/// rule of a function that calls other user functions or methods returns its pullback behind a
/// type that does not name it (in a box from a thread-local pool, reused by the next gradient,
/// so that the prepared form still allocates nothing; generic functions use a plain box and
/// bound their type parameters by `'static`). Functions that call none (the leaves, such as a
/// helper called in a hot loop) keep unboxed pullbacks, which the compiler inlines. The
/// depth is limited by the stack, as for the primal (release build: 10,000 levels in a 2 MiB
/// thread).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn even(x: f64, n: u32) -> f64 {
///     if n == 0 { x } else { odd(x * 1.5, n - 1) }
/// }
///
/// #[differentiable]
/// fn odd(x: f64, n: u32) -> f64 {
///     if n == 0 { x * x } else { even(x.sin(), n - 1) }
/// }
///
/// let (_, (dx, _)) = value_and_gradient!(even(0.5, 3));
/// let (y, dy) = value_and_derivative!(even(0.5, 3), (1.0, NoTangent));
/// assert!((dx - dy).abs() < 1e-12, "{dx} {dy} {y}");
/// ```
#[doc(inline)]
pub use mooncake_macros::differentiable;

/// The value of a `#[differentiable]` function and its directional derivative along the given
/// tangents, one per argument (`NoTangent` for non-differentiable ones; a `Vec` for a slice, the
/// derived `<Struct>Tangent` for a struct).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn energy(x: &[f64], k: f64) -> f64 {
///     let mut e = 0.0;
///     for v in x.iter() {
///         e += 0.5 * k * v * v;
///     }
///     e
/// }
///
/// let x = vec![1.0, 2.0];
/// // Along x only: d/dt energy(x + t v) = k <x, v>.
/// let (value, derivative) = value_and_derivative!(energy(&x, 3.0), (vec![1.0, 0.0], 0.0));
/// assert_eq!(value, 7.5);
/// assert_eq!(derivative, 3.0);
/// ```
#[doc(inline)]
pub use mooncake_macros::value_and_derivative;

/// A second body of an existing function that only AD sees (seed 004, "Simplifying Code via
/// Overlays"): the rules `NAME_frule` / `NAME_rrule` of the function are derived from the
/// overlay, while the function keeps its own body. Write it beside the function (the rules are
/// placed where the overlay is); its signature must be the function's, or it is a compile error
/// at the overlay.
///
/// The seed's worked example: `scale(x) = 2x` overlaid with `3x` makes the rules compute `3x`
/// and its derivative 3, while `scale` itself still returns `2x`. (Do this to replace code AD
/// cannot handle with code it can, not to change results.)
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// fn scale(x: f64) -> f64 {
///     2.0 * x
/// }
///
/// #[mooncake_overlay]
/// fn scale(x: f64) -> f64 {
///     3.0 * x
/// }
///
/// assert_eq!(scale(5.0), 10.0);
/// assert_eq!(value_and_gradient!(scale(5.0)), (15.0, (3.0,)));
/// assert_eq!(value_and_derivative!(scale(5.0), (1.0,)), (15.0, 3.0));
/// ```
#[doc(inline)]
pub use mooncake_macros::mooncake_overlay;

/// Checks a hand-written forward rule's signature against the function it is for, at the
/// rule: the primal types of the rule's `Dual<P, T>` arguments and result must be the
/// function's, and each `T` the tangent type `Primal` gives `P`.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// fn cube(x: f64) -> f64 {
///     x * x * x
/// }
///
/// #[frule(for = cube)]
/// fn cube_frule(x: Dual<f64, f64>) -> Dual<f64, f64> {
///     Dual::new(cube(x.primal), 3.0 * x.primal * x.primal * x.tangent)
/// }
///
/// #[rrule(for = cube)]
/// fn cube_rrule(x: CoDual<f64, NoFData>) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (f64,)) {
///     let d = 3.0 * x.primal * x.primal;
///     (CoDual::new(cube(x.primal), NoFData), move |dy| (d * dy,))
/// }
///
/// test_rule!(cube(1.5));
/// ```
///
/// A rule whose signature does not fit the function is a compile error at the rule.
#[doc(inline)]
pub use mooncake_macros::frule;

/// Checks a hand-written reverse rule's signature against the function it is for, at the
/// rule: the primal types of its `CoDual<P, F>` arguments and result must be the function's,
/// and each `F` the fdata type `Primal` gives `P`. See [`frule`](macro@frule) for an example.
#[doc(inline)]
pub use mooncake_macros::rrule;

/// The value of a `#[differentiable]` function with an `f64` or `f32` result and its gradient:
/// `(value, (g1, g2, ..))`, one gradient per argument, each of its argument's tangent type
/// (`f64` for `f64`, `Vec<f64>` for `&[f64]`, `NoTangent` for integers). Arguments are written
/// as in the call; `&mut` arguments are left as they were on entry.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn f(x: f64, y: f64) -> f64 {
///     let mut s = 0.0;
///     let mut k = 0;
///     while k < 3 {
///         s += (x * y).sin();
///         k += 1;
///     }
///     s
/// }
///
/// let (value, (dx, dy)) = value_and_gradient!(f(0.5, 2.0));
/// assert_eq!(value, 3.0 * 1.0_f64.sin());
/// assert!((dx - 3.0 * 2.0 * 1.0_f64.cos()).abs() < 1e-12);
/// assert!((dy - 3.0 * 0.5 * 1.0_f64.cos()).abs() < 1e-12);
/// ```
///
/// For a result that is not a scalar, use [`value_and_pullback!`]. A function returning an
/// `Option` or a `Result` of a scalar gives `Some((value, gradients))` / `Ok((value,
/// gradients))`, or its `None` / error unchanged (see [`enums`]).
///
/// The prepared form, `value_and_gradient!(f(a, &b), cache = &mut cache)` with a
/// [`GradientCache`], reuses the shadows and gradients of the first call, so that repeated
/// gradients at the same sizes allocate nothing; it returns each gradient borrowed from the
/// cache (`&Vec<f64>` for a slice, `&f64` for a scalar), and refuses other sizes with a message
/// naming the argument.
///
/// An argument written `Const(x)` gets no gradient ([`NoTangent`] in its place), and the
/// derived rule skips the adjoint work only its gradient needs: see [`Const`].
#[doc(inline)]
pub use mooncake_macros::value_and_gradient;

/// The value of a `#[differentiable]` function and the pullback of `ybar`, a cotangent of its
/// result (of the result's tangent type): `(value, (g1, g2, ..))`.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn scale(x: f64, a: f64) -> f64 {
///     x * a
/// }
///
/// let (value, (dx, da)) = value_and_pullback!(scale(3.0, 2.0), 10.0);
/// assert_eq!((value, dx, da), (6.0, 20.0, 30.0));
/// ```
#[doc(inline)]
pub use mooncake_macros::value_and_pullback;

/// The value of a `#[differentiable]` function and its Jacobian with respect to each argument:
/// `(value, (J1, J2, ..))`, one [`Jacobian`] block per argument, `rows x cols` = (components of
/// the result) x (components of the argument), row-major (`J[(i, j)]` is `∂y_i/∂x_j`).
/// Components are counted as [`FlatTangent`] lists them: a buffer's or an array's elements in
/// order, a tuple's or a struct's fields in order; a scalar result gives one row (its gradient).
/// Like [`value_and_gradient!`], an argument with no differentiable part (an integer) gets
/// [`NoTangent`] in its place, and so does an argument written `Const(x)`, whose components are
/// not differentiated. Arguments are written as in the call; `&mut` arguments are refused.
///
/// The result may be an `f64` or `f32`, a `Vec`, an array, a tuple of them, or a
/// `#[derive(Tangent)]` struct (its fields flattened in order) or enum (the fields of the
/// value's variant) made of them: whatever has a [`FlatTangent`] tangent.
///
/// **Mode.** Forward mode runs `NAME_frule` once per input component (`n` passes, each giving
/// a column); reverse mode runs `NAME_rrule` and its pullback once per output component (`m`
/// passes, each seeded with a basis cotangent, giving a row). By default the first pass is a
/// forward one, which also gives `m`; then forward mode is used if `n <= m`, else reverse (the
/// first pass then serves only for the value). `value_and_jacobian!(f(..), mode = forward)` or
/// `mode = reverse` asks for one mode (and needs only that rule, so it works for a function
/// with a hand-written rule of one mode). Here `n` counts the components of the arguments that
/// are not `Const(..)`.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// /// Polar to Cartesian coordinates, scaled.
/// #[differentiable]
/// fn to_xy(p: &[f64], s: f64) -> [f64; 2] {
///     [s * p[0] * p[1].cos(), s * p[0] * p[1].sin()]
/// }
///
/// let p = [2.0, 0.0];
/// let (xy, (jp, js)) = value_and_jacobian!(to_xy(&p, 3.0));
/// assert_eq!(xy, [6.0, 0.0]);
/// assert_eq!(jp.shape(), (2, 2)); // d(x, y) / d(r, θ)
/// assert_eq!(jp.as_slice(), &[3.0, 0.0, 0.0, 6.0]);
/// assert_eq!(js.shape(), (2, 1)); // d(x, y) / ds
/// assert_eq!(js.column(0), vec![2.0, 0.0]);
///
/// // 3 input components, 2 output ones: that was reverse mode. The same in forward mode, and
/// // without a block for the constant scale:
/// let (_, (jf, s)) = value_and_jacobian!(to_xy(&p, Const(3.0)), mode = forward);
/// assert_eq!(jf, jp);
/// assert_eq!(s, NoTangent);
/// ```
///
/// # Panics
/// Only if the function's result changes shape from one pass to the next (it is called once
/// per pass with the same arguments), with a message saying so. A result with no components
/// gives blocks with no rows.
#[doc(inline)]
pub use mooncake_macros::value_and_jacobian;

/// The value of a `#[differentiable]` function with a scalar result and its gradient, by
/// forward mode: `(value, (g1, g2, ..))` shaped as [`value_and_gradient!`]'s (`Vec<f64>` for a
/// slice, the `<Struct>Tangent` for a derived struct, [`NoTangent`] for an integer or a
/// `Const(..)` argument). It runs `NAME_frule` once per input component (a `Dual` along each
/// basis direction), so it costs about `n` forward passes where reverse mode costs one pass and
/// its pullback: use it for functions of few inputs, or where reverse mode refuses a construct
/// that forward mode takes. Arguments are written as in the call; `&mut` arguments are
/// refused.
///
/// `value_and_gradient_forward!(f(..), chunk = N)` carries `N` directions per pass (`N` a
/// constant expression, at least one): each float's tangent is a [`Lanes<T, N>`](lanes::Lanes),
/// so the primal, the control flow and every partial derivative are computed once per pass,
/// and a gradient of `n` inputs takes `ceil(n / N)` passes of the derived forward rule's batched
/// form (`NAME__lanes`, emitted beside the function) instead of `n`. The result is the same as
/// with one direction per pass, to the bit. A function has a batched form when it is a free
/// function whose arguments are numbers, buffers of numbers or shared references to them, whose
/// result is a float, and whose body calls no other function (arithmetic, float and integer
/// methods, `len`, casts, indexing, loops and branches, local buffers and arrays); for any other
/// function `chunk` runs one direction per pass, with the same result. `NAME__lanes` must be in
/// scope where the function is named, as `NAME_frule` must (a glob import brings both).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn energy(x: &[f64], k: f64, steps: usize) -> f64 {
///     let mut e = 0.0;
///     for _ in 0..steps {
///         for v in x.iter() {
///             e += 0.5 * k * v * v;
///         }
///     }
///     e
/// }
///
/// let x = vec![1.0, 2.0];
/// let (e, (gx, gk, gs)) = value_and_gradient_forward!(energy(&x, 3.0, 2));
/// assert_eq!(e, 15.0);
/// assert_eq!(gx, vec![6.0, 12.0]); // 2 k x
/// assert_eq!(gk, 5.0);
/// assert_eq!(gs, NoTangent);
/// let (_, (gx2, _, _)) = value_and_gradient!(energy(&x, 3.0, 2));
/// assert_eq!(gx, gx2);
/// // Both components of x in one pass:
/// let (_, (gx3, gk3, _)) = value_and_gradient_forward!(energy(&x, Const(3.0), 2), chunk = 4);
/// assert_eq!((gx3, gk3), (gx, NoTangent));
/// ```
///
/// # Panics
/// If the result is not a scalar (use [`value_and_jacobian!`]), or `chunk` is zero.
#[doc(inline)]
pub use mooncake_macros::value_and_gradient_forward;

/// The value, the gradient and a Hessian-vector product of a `#[differentiable]` function
/// generic over `T: Float`, or written over `f64` and marked `#[differentiable(second_order)]`,
/// with a scalar result: `(value, (g1, g2, ..), (hv1, hv2, ..))`, one
/// gradient and one block of `H v` per argument, shaped as [`value_and_gradient!`]'s
/// (`NoTangent` for an integer or a `Const(..)` argument). The directions are given one per
/// argument, as a tuple written out (for one argument, also as a bare expression): a number
/// for a scalar argument, a slice, `Vec` or array for a buffer, `NoTangent` for an integer or a
/// `Const(..)`.
///
/// **How.** Forward over reverse: the function's derived reverse rule, run at `T = Fwd<f64>`
/// ([`Fwd`]) with the arguments' dual parts set to the direction and the pullback seeded with
/// `1 + 0ε`, gives the gradient in the real parts and `H v` in the dual parts, at about twice
/// a gradient's cost. No second derivation: this needs the reverse rule generic over the float.
/// A function generic over `T: Float` has one (constants written `T::from_f64(..)`,
/// `T::ZERO`, ..). A function written over `f64` gets one from `#[differentiable(second_order)]`,
/// which derives its reverse rule from a copy over a float type parameter (a function of numbers
/// and buffers, calling only functions that are generic over `T: Float` or marked
/// `second_order` themselves; no `&mut` or struct arguments; what cannot be copied with
/// certainty is refused with a message). For any other function the call does not
/// compile, with a message saying so (arguments of a parameter that is not generic may be
/// passed as `Const(..)`).
///
/// **Arguments**: `f64` / `f32` and integers by value, buffers of them (`[T]`, `Vec<T>`,
/// `[T; N]`) as `&x` or by value, `Const(..)` of any of these. `&mut` arguments are refused
/// (the Hessian is that of the result alone). `hvp!(f(..), dirs, cache = &mut cache)` is the
/// prepared form, with an [`HvpCache`], which allocates nothing of its own after its first
/// call when buffers are passed as `&x` (see [`HvpCache`] for what the rule itself allocates).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// // f(x, a) = a Σ x_i² x_{i+1}
/// #[differentiable]
/// fn chain<T: Float>(x: &[T], a: T) -> T {
///     let mut s = T::ZERO;
///     for i in 0..x.len() - 1 {
///         s += x[i] * x[i] * x[i + 1];
///     }
///     a * s
/// }
///
/// let x = vec![1.0, 2.0, 3.0];
/// // H v along x_0 only: the column ∂²f/∂x∂x_0 = a (2 x_1, 2 x_0, 0), and ∂²f/∂a∂x_0 = 2 x_0 x_1.
/// let (y, (gx, ga), (hx, ha)) = hvp!(chain(&x, 2.0), (&[1.0, 0.0, 0.0], 0.0));
/// assert_eq!(y, 2.0 * (2.0 + 12.0));
/// assert_eq!((gx, ga), (vec![8.0, 2.0 + 24.0, 8.0], 14.0));
/// assert_eq!((hx, ha), (vec![8.0, 4.0, 0.0], 4.0));
///
/// // A constant argument gets no gradient; its direction is `NoTangent`.
/// let (_, (_, c), (hx2, _)) = hvp!(chain(&x, Const(2.0)), (&[1.0, 0.0, 0.0], NoTangent));
/// assert_eq!((c, hx2), (NoTangent, vec![8.0, 4.0, 0.0]));
///
/// // The same function written over `f64`, with `second_order`.
/// #[differentiable(second_order)]
/// fn chain64(x: &[f64], a: f64) -> f64 {
///     let mut s = 0.0;
///     for i in 0..x.len() - 1 {
///         s += x[i] * x[i] * x[i + 1];
///     }
///     a * s
/// }
/// let (y64, (gx64, _), (hx64, ha64)) = hvp!(chain64(&x, 2.0), (&[1.0, 0.0, 0.0], 0.0));
/// assert_eq!((y64, gx64, hx64, ha64), (y, vec![8.0, 26.0, 8.0], vec![8.0, 4.0, 0.0], 4.0));
/// ```
///
/// # Panics
/// If a direction has another number of components than its argument, with a message naming
/// the argument.
#[doc(inline)]
pub use mooncake_macros::hvp;

/// The value, the gradient and the dense Hessian of a `#[differentiable]` function generic over
/// `T: Float` with a scalar result: `(value, gradient, H)`, where the components of all the
/// arguments that are not `Const(..)` are counted in order (as [`FlatTangent`] lists them: a
/// scalar is one, a buffer its elements; integers none), `gradient` is a `Vec<f64>` of them and
/// `H` an `n x n` [`Jacobian`] (row-major, `H[(i, j)] = ∂²f/∂x_i∂x_j`). It is built from `n`
/// Hessian-vector products with the unit directions (see [`hvp!`], whose argument rules
/// apply): column `j` is `H e_j`. The function must be generic over `T: Float`, or written over
/// `f64` and marked `#[differentiable(second_order)]`.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn rosenbrock<T: Float>(x: &[T]) -> T {
///     let (one, hundred) = (T::ONE, T::from_f64(100.0));
///     let mut s = T::ZERO;
///     for i in 0..x.len() - 1 {
///         let a = x[i + 1] - x[i] * x[i];
///         let b = one - x[i];
///         s += hundred * a * a + b * b;
///     }
///     s
/// }
///
/// let (y, g, h) = hessian!(rosenbrock(&[1.0, 1.0]));
/// assert_eq!((y, g), (0.0, vec![0.0, 0.0]));
/// assert_eq!(h.shape(), (2, 2));
/// assert_eq!(h.as_slice(), &[802.0, -400.0, -400.0, 200.0]);
///
/// // Several scalar arguments are counted in order:
/// #[differentiable]
/// fn xy<T: Float>(x: T, y: T) -> T {
///     x * x * y + y.sin()
/// }
/// let (_, g, h) = hessian!(xy(2.0, 0.0));
/// assert_eq!(g, vec![0.0, 5.0]);
/// assert_eq!(h.as_slice(), &[0.0, 4.0, 4.0, 0.0]);
/// ```
///
/// `hessian!(f(..), cache = &mut cache)` is the prepared form, with an [`HvpCache`]: the
/// lifted buffers, shadows and the matrix are reused, and the gradient and the Hessian are
/// returned borrowed from the cache (`(value, &[f64], &Jacobian)`); it allocates nothing of its
/// own after the first call (see [`HvpCache`] for what the rule itself allocates).
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn quartic<T: Float>(x: &[T]) -> T {
///     x[0] * x[0] * x[0] * x[0] + x[0] * x[1]
/// }
///
/// let mut cache = HvpCache::new();
/// let x = vec![1.0, 2.0];
/// let (y, g, h) = hessian!(quartic(&x), cache = &mut cache);
/// assert_eq!((y, g), (3.0, &[6.0, 1.0][..]));
/// assert_eq!(h.as_slice(), &[12.0, 1.0, 1.0, 0.0]);
/// ```
#[doc(inline)]
pub use mooncake_macros::hessian;

/// Declares that existing functions have derivative zero, and generates their rules
/// (`NAME_frule`, `NAME_rrule`) where it is invoked: see the [`rules_guide`] for the details.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// fn count_positive(x: &[f64]) -> usize {
///     x.iter().filter(|v| **v > 0.0).count()
/// }
///
/// zero_adjoint! {
///     fn count_positive(x: &[f64]) -> usize;
/// }
///
/// let x = [1.0, -2.0, 3.0];
/// let y = count_positive_frule(Dual::new(&x[..], &[1.0, 1.0, 1.0][..]));
/// assert_eq!((y.primal, y.tangent), (2, NoTangent));
/// ```
#[doc(inline)]
pub use mooncake_macros::zero_adjoint;

/// Adapts a ChainRules-style rule, `fn NAME_chainrule(args) -> (value, pullback)` with a
/// pullback from the output's tangent to one tangent per argument, into a full `NAME_rrule`:
/// see the [`rules_guide`] for the details.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// fn scale(x: f64, a: f64) -> f64 {
///     x * a
/// }
///
/// fn scale_chainrule(x: f64, a: f64) -> (f64, impl FnOnce(f64) -> (f64, f64)) {
///     (x * a, move |dy| (dy * a, dy * x))
/// }
///
/// from_rrule!(fn scale(x: f64, a: f64) -> f64 => scale_chainrule);
///
/// let (y, pullback) = scale_rrule(CoDual::new(2.0, NoFData), CoDual::new(3.0, NoFData));
/// assert_eq!(y.primal, 6.0);
/// assert_eq!(pullback(1.0), (3.0, 2.0));
/// ```
#[doc(inline)]
pub use mooncake_macros::from_rrule;

/// The examples of the README, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
pub use rng::TestRng;
pub use rules::stop_gradient::{stop_gradient, stop_gradient_frule, stop_gradient_rrule};
pub use shared::{SharedArray, SharedCell, SharedRef, SharedVec};
pub use tangent::{FData, FromHandle, Primal, RData, ShapeMismatch, TangentSpace};

/// Everything a user of Mooncake needs in scope: `use mooncake_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::cache::GradientCache;
    pub use crate::dual::{CoDual, Const, Dual, NoFData, NoRData, NoTangent};
    pub use crate::float::Float;
    pub use crate::fwd::Fwd;
    pub use crate::hessian::HvpCache;
    pub use crate::jacobian::{FlatTangent, Jacobian};
    #[cfg(feature = "nalgebra")]
    pub use crate::linalg::fixed::{NewMatrix2, NewMatrix3, NewVector2, NewVector3, NewVector4};
    #[cfg(feature = "nalgebra")]
    pub use crate::linalg::rules::{DMatrixConstructors, DVectorConstructors};
    #[cfg(feature = "ndarray")]
    pub use crate::nd::rules::{Array1Constructors, ArrayConstructors};
    pub use crate::rules::stop_gradient::{
        stop_gradient, stop_gradient_frule, stop_gradient_rrule,
    };
    pub use crate::shared::{SharedArray, SharedCell, SharedRef, SharedVec};
    pub use crate::tangent::{FData, FromHandle, Primal, RData, ShapeMismatch, TangentSpace};
    pub use mooncake_macros::{
        Tangent, check_rule, differentiable, frule, mooncake_overlay, rrule, test_rule,
        value_and_derivative, value_and_gradient, value_and_gradient_forward, value_and_jacobian,
        value_and_pullback,
    };
    pub use mooncake_macros::{from_rrule, zero_adjoint};
    pub use mooncake_macros::{hessian, hvp};
}

/// The one path through which generated code reaches the runtime. Not part of the public API:
/// anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::api;
    pub use crate::cache::GradientCache;
    pub use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
    pub use crate::elementwise::{
        ElementMap, map_elements, map_elements_frule, map_elements_rrule,
    };
    pub use crate::enums;
    pub use crate::forward as fwd;
    pub use crate::hessian as hess;
    pub use crate::jacobian as jac;
    pub use crate::lanes;
    pub use crate::nested;
    pub use crate::reverse as rev;
    pub use crate::rng::TestRng;
    pub use crate::rules;
    pub use crate::rules::scalar::{
        float_from_f64, float_from_f64_frule, float_from_f64_rrule, float_from_i32,
        float_from_i32_frule, float_from_i32_rrule,
    };
    pub use crate::shared::{SharedArray, SharedCell, SharedRef, SharedVec};
    pub use crate::tangent::{
        FData, FromHandle, Primal, RData, ShapeMismatch, TangentSpace, close,
    };
    pub use crate::test_utils;
    pub use crate::views::owned_arg;
    pub use core;
    pub use std;
}
