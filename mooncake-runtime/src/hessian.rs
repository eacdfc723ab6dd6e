//! Hessian-vector products and Hessians by forward-over-reverse: what
//! [`hvp!`](crate::hvp) and [`hessian!`](macro@crate::hessian) expand to.
//!
//! A `#[differentiable]` function generic over `T: Float` has a derived reverse rule generic
//! over `T` too. Run at `T = Fwd<f64>` ([`Fwd`]), with every argument's dual part seeded with
//! the direction `v` and the pullback seeded with `1 + 0ε`, that rule computes the gradient in
//! the real parts and the Hessian-vector product `H v` in the dual parts: forward mode over the
//! function's own reverse rule, with no second derivation.
//!
//! The expansion goes through four steps per argument, each a trait here:
//!
//! 1. [`Lift`]: the user's value (`f64`, `[f64]`, `Vec<f64>`, `[f64; N]`, integers) lifted to
//!    dual numbers with the direction's components as dual parts ([`Dir`] reads the direction:
//!    a number, a slice, a `Vec` or an array);
//! 2. [`pass`] (trait [`PassTo`]): the lifted value, or the user's own for a parameter that
//!    is not generic, given to the rule as the type its parameter has. The type comes from the
//!    rule's signature: for a parameter of type `T`, `&[T]`, .. it is the lifted value; for a
//!    parameter of type `f64` it is the user's, and then the argument is refused with the
//!    message of [`DualParameter`] unless it is a `Const(..)` (a constant keeps its value);
//! 3. [`Pin`]: the result must be `Fwd<F>`, which fixes `T` (the message of [`DualResult`]
//!    otherwise);
//! 4. [`SplitDual`]: each gradient (a tangent of dual numbers) split into its real parts (the
//!    gradient) and its dual parts (`H v`).

use crate::dual::NoTangent;
use crate::float::Float;
use crate::fwd::Fwd;
use crate::jacobian::Jacobian;
use crate::tangent::{Primal, ShapeMismatch};
use std::any::Any;

// ---------------------------------------------------------------------------------------------
// Directions.

/// A direction of `hvp!` for an argument whose elements are `E`: a number (for a scalar
/// argument), a slice, a `Vec` or an array (for a buffer), behind any number of references, or
/// `NoTangent` (for an argument with no differentiable part).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a direction of `hvp!` for an argument of `{E}`s",
    label = "not a direction of this argument",
    note = "give each argument a direction of its shape: an `{E}` for a scalar, a slice, `Vec` or array of `{E}`s for a buffer, `NoTangent` for an integer or a `Const(..)` argument"
)]
pub trait Dir<E> {
    /// The direction's components.
    fn dir_slice(&self) -> &[E];
}

impl Dir<f64> for f64 {
    #[inline(always)]
    fn dir_slice(&self) -> &[f64] {
        std::slice::from_ref(self)
    }
}

impl Dir<f32> for f32 {
    #[inline(always)]
    fn dir_slice(&self) -> &[f32] {
        std::slice::from_ref(self)
    }
}

impl<E> Dir<E> for [E] {
    #[inline(always)]
    fn dir_slice(&self) -> &[E] {
        self
    }
}

impl<E> Dir<E> for Vec<E> {
    #[inline(always)]
    fn dir_slice(&self) -> &[E] {
        self
    }
}

impl<E, const N: usize> Dir<E> for [E; N] {
    #[inline(always)]
    fn dir_slice(&self) -> &[E] {
        self
    }
}

impl<E> Dir<E> for NoTangent {
    #[inline(always)]
    fn dir_slice(&self) -> &[E] {
        &[]
    }
}

impl<E, D: Dir<E> + ?Sized> Dir<E> for &D {
    #[inline(always)]
    fn dir_slice(&self) -> &[E] {
        (**self).dir_slice()
    }
}

// ---------------------------------------------------------------------------------------------
// Lifting.

/// A value `hvp!` and `hessian!` can lift to dual numbers: `f64`, `f32` (to [`Fwd`]), their
/// slices, `Vec`s and arrays (elementwise), and the integers and `bool` (unchanged, no
/// components).
#[diagnostic::on_unimplemented(
    message = "`hvp!` and `hessian!` take arguments that are numbers, buffers of numbers or integers, not `{Self}`",
    label = "an argument of type `{Self}`",
    note = "pass `f64` / `f32` values and integers by value, buffers (`[f64]`, `Vec<f64>`, `[f64; N]`) as `&x` (a reference held in a variable as `&*x`) or by value; mark other arguments `Const(..)`"
)]
pub trait Lift {
    /// The element type: the float the components are.
    type Elem: Float;
    /// The lifted value (owned).
    type Lifted;
    /// The number of real components (the length of a direction).
    fn flat_len(&self) -> usize;
    /// The lifted value with the dual parts `dir` (zero for `None`; `dir` has
    /// [`Lift::flat_len`] components).
    fn lift(&self, dir: Option<&[Self::Elem]>) -> Self::Lifted;
    /// The same, into `out` (a lifted value of the same shape, reused).
    fn lift_into(&self, dir: Option<&[Self::Elem]>, out: &mut Self::Lifted);
    /// The lifted value whose dual parts are the unit vector `k` (zero for `None`).
    fn lift_unit(&self, k: Option<usize>) -> Self::Lifted;
    /// The same, into `out` (reused: buffers do not allocate).
    fn lift_unit_into(&self, k: Option<usize>, out: &mut Self::Lifted) {
        *out = self.lift_unit(k);
    }
}

macro_rules! float_lift {
    ($($t:ty),*) => {$(
        impl Lift for $t {
            type Elem = $t;
            type Lifted = Fwd<$t>;
            #[inline(always)]
            fn flat_len(&self) -> usize {
                1
            }
            #[inline(always)]
            fn lift(&self, dir: Option<&[$t]>) -> Fwd<$t> {
                Fwd::new(*self, dir.map_or(0.0, |d| d[0]))
            }
            #[inline(always)]
            fn lift_into(&self, dir: Option<&[$t]>, out: &mut Fwd<$t>) {
                *out = self.lift(dir);
            }
            #[inline(always)]
            fn lift_unit(&self, k: Option<usize>) -> Fwd<$t> {
                Fwd::new(*self, if k == Some(0) { 1.0 } else { 0.0 })
            }
        }

        impl Lift for [$t] {
            type Elem = $t;
            type Lifted = Vec<Fwd<$t>>;
            fn flat_len(&self) -> usize {
                self.len()
            }
            fn lift(&self, dir: Option<&[$t]>) -> Vec<Fwd<$t>> {
                let mut out = Vec::with_capacity(self.len());
                self.lift_into(dir, &mut out);
                out
            }
            fn lift_into(&self, dir: Option<&[$t]>, out: &mut Vec<Fwd<$t>>) {
                out.clear();
                match dir {
                    Some(d) => out.extend(self.iter().zip(d).map(|(&x, &e)| Fwd::new(x, e))),
                    None => out.extend(self.iter().map(|&x| Fwd::new(x, 0.0))),
                }
            }
            fn lift_unit(&self, k: Option<usize>) -> Vec<Fwd<$t>> {
                let mut out: Vec<Fwd<$t>> = self.lift(None);
                if let Some(k) = k {
                    out[k].eps = 1.0;
                }
                out
            }
            fn lift_unit_into(&self, k: Option<usize>, out: &mut Vec<Fwd<$t>>) {
                self.lift_into(None, out);
                if let Some(k) = k {
                    out[k].eps = 1.0;
                }
            }
        }

        impl Lift for Vec<$t> {
            type Elem = $t;
            type Lifted = Vec<Fwd<$t>>;
            fn flat_len(&self) -> usize {
                self.len()
            }
            fn lift(&self, dir: Option<&[$t]>) -> Vec<Fwd<$t>> {
                self[..].lift(dir)
            }
            fn lift_into(&self, dir: Option<&[$t]>, out: &mut Vec<Fwd<$t>>) {
                self[..].lift_into(dir, out)
            }
            fn lift_unit(&self, k: Option<usize>) -> Vec<Fwd<$t>> {
                self[..].lift_unit(k)
            }
            fn lift_unit_into(&self, k: Option<usize>, out: &mut Vec<Fwd<$t>>) {
                self[..].lift_unit_into(k, out)
            }
        }

        impl<const N: usize> Lift for [$t; N] {
            type Elem = $t;
            type Lifted = [Fwd<$t>; N];
            fn flat_len(&self) -> usize {
                N
            }
            fn lift(&self, dir: Option<&[$t]>) -> [Fwd<$t>; N] {
                std::array::from_fn(|i| Fwd::new(self[i], dir.map_or(0.0, |d| d[i])))
            }
            fn lift_into(&self, dir: Option<&[$t]>, out: &mut [Fwd<$t>; N]) {
                *out = self.lift(dir);
            }
            fn lift_unit(&self, k: Option<usize>) -> [Fwd<$t>; N] {
                std::array::from_fn(|i| Fwd::new(self[i], if k == Some(i) { 1.0 } else { 0.0 }))
            }
        }
    )*};
}

float_lift!(f64, f32);

macro_rules! int_lift {
    ($($t:ty),*) => {$(
        impl Lift for $t {
            type Elem = f64;
            type Lifted = $t;
            #[inline(always)]
            fn flat_len(&self) -> usize {
                0
            }
            #[inline(always)]
            fn lift(&self, _: Option<&[f64]>) -> $t {
                *self
            }
            #[inline(always)]
            fn lift_into(&self, _: Option<&[f64]>, out: &mut $t) {
                *out = *self;
            }
            #[inline(always)]
            fn lift_unit(&self, _: Option<usize>) -> $t {
                *self
            }
        }

        impl Lift for [$t] {
            type Elem = f64;
            type Lifted = Vec<$t>;
            fn flat_len(&self) -> usize {
                0
            }
            fn lift(&self, _: Option<&[f64]>) -> Vec<$t> {
                self.to_vec()
            }
            fn lift_into(&self, _: Option<&[f64]>, out: &mut Vec<$t>) {
                out.clear();
                out.extend_from_slice(self);
            }
            fn lift_unit(&self, _: Option<usize>) -> Vec<$t> {
                self.to_vec()
            }
            fn lift_unit_into(&self, _: Option<usize>, out: &mut Vec<$t>) {
                self.lift_into(None, out);
            }
        }

        impl Lift for Vec<$t> {
            type Elem = f64;
            type Lifted = Vec<$t>;
            fn flat_len(&self) -> usize {
                0
            }
            fn lift(&self, _: Option<&[f64]>) -> Vec<$t> {
                self.clone()
            }
            fn lift_into(&self, _: Option<&[f64]>, out: &mut Vec<$t>) {
                out.clear();
                out.extend_from_slice(self);
            }
            fn lift_unit(&self, _: Option<usize>) -> Vec<$t> {
                self.clone()
            }
            fn lift_unit_into(&self, _: Option<usize>, out: &mut Vec<$t>) {
                self.lift_into(None, out);
            }
        }

        impl<const N: usize> Lift for [$t; N] {
            type Elem = f64;
            type Lifted = [$t; N];
            fn flat_len(&self) -> usize {
                0
            }
            fn lift(&self, _: Option<&[f64]>) -> [$t; N] {
                *self
            }
            fn lift_into(&self, _: Option<&[f64]>, out: &mut [$t; N]) {
                *out = *self;
            }
            fn lift_unit(&self, _: Option<usize>) -> [$t; N] {
                *self
            }
        }
    )*};
}

int_lift!(usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, bool);

/// Checks that the direction `d` given for argument `k` (from 0) of `function` has as many
/// components as the argument.
///
/// # Panics
/// Otherwise, with a message naming the argument and both lengths.
#[inline]
pub fn check_dir<X: Lift + ?Sized, D: Dir<X::Elem> + ?Sized>(
    x: &X,
    d: &D,
    k: usize,
    function: &str,
) -> usize {
    let (n, m) = (x.flat_len(), d.dir_slice().len());
    assert!(
        n == m,
        "mooncake: hvp!: the direction of argument {} of `{function}` has {m} components, the \
         argument {n}",
        k + 1
    );
    n
}

/// The argument `x` lifted with the dual parts `d` (see [`Lift`]), after [`check_dir`].
#[inline]
pub fn lift<X: Lift + ?Sized, D: Dir<X::Elem> + ?Sized>(
    x: &X,
    d: &D,
    k: usize,
    function: &str,
) -> X::Lifted {
    check_dir(x, d, k, function);
    x.lift(Some(d.dir_slice()))
}

/// A constant argument lifted with zero dual parts.
#[inline]
pub fn lift_const<X: Lift + ?Sized>(x: &X) -> X::Lifted {
    x.lift(None)
}

// ---------------------------------------------------------------------------------------------
// Passing arguments as the rule's parameters take them.

/// The mark of an argument given to a parameter generic over `T: Float` (as dual numbers).
#[derive(Debug)]
pub struct Generic;

/// The mark of an argument given to a parameter that is not generic (`f64`, `&[f64]`): right
/// for a `Const(..)`, refused otherwise ([`DualParameter`]).
#[derive(Debug)]
pub struct NotGeneric;

/// Holds for [`Generic`] only: the check of a differentiable argument.
#[diagnostic::on_unimplemented(
    message = "`hvp!` and `hessian!` need a reverse rule generic over the float: they run it on dual numbers (`T = Fwd<f64>`), but this argument's parameter is `{P}`",
    label = "a parameter of type `{P}`, which cannot hold dual numbers",
    note = "for a function written over `f64`, put `#[differentiable(second_order)]` on it: its reverse rule is then derived from a copy generic over the float (a leaf of numbers and buffers: arguments `f64`, integers, `&[f64]`, `&Vec<f64>`, `Vec<f64>`, `[f64; N]`; calls only of functions generic over the float or marked `second_order`); or write it generic over `T: Float`, as `fn f<T: Float>(x: &[T], y: T) -> T`, with `T::from_f64(2.0)` for constants; an argument that is a constant of a non-generic parameter can be passed as `Const(..)`"
)]
pub trait DualParameter<P: ?Sized> {}

#[diagnostic::do_not_recommend]
impl<P: ?Sized> DualParameter<P> for Generic {}

/// An element type of a user's argument and the element type it is lifted to.
pub trait LiftedElem: Sized {
    /// The lifted element.
    type Lifted;
}

impl LiftedElem for f64 {
    type Lifted = Fwd<f64>;
}

impl LiftedElem for f32 {
    type Lifted = Fwd<f32>;
}

/// How a user's element (with its lifted element [`LiftedElem::Lifted`]) becomes the element a
/// parameter holds: the lifted one for a parameter generic over `T: Float` (mark [`Generic`]),
/// the user's own for one of `f64` (mark [`NotGeneric`]). Implemented on the user's element
/// type, for each element type `Y` a parameter may hold.
pub trait ElemPass<Y>: LiftedElem {
    /// [`Generic`] or [`NotGeneric`].
    type Mark;
    /// The element given.
    fn one(x: Self, l: Self::Lifted) -> Y;
    /// The elements given, as a slice.
    fn slice<'a>(x: &'a [Self], l: &'a [Self::Lifted]) -> &'a [Y];
    /// The elements given, as a `Vec`.
    fn vec(x: Vec<Self>, l: Vec<Self::Lifted>) -> Vec<Y>;
    /// The elements given, as a borrowed `Vec` (for a parameter `&Vec<T>`).
    #[allow(clippy::ptr_arg)]
    fn vec_ref<'a>(x: &'a Vec<Self>, l: &'a Vec<Self::Lifted>) -> &'a Vec<Y>;
    /// The elements given, as an array.
    fn array<const N: usize>(x: [Self; N], l: [Self::Lifted; N]) -> [Y; N];
    /// The elements given, as a borrowed array.
    fn array_ref<'a, const N: usize>(x: &'a [Self; N], l: &'a [Self::Lifted; N]) -> &'a [Y; N];
    /// The element given, borrowed.
    fn one_ref<'a>(x: &'a Self, l: &'a Self::Lifted) -> &'a Y;
}

macro_rules! elem_pass {
    ($pick:ident: $a:ty => $y:ty, lifted $l:ty, $mark:ident) => {
        impl ElemPass<$y> for $a {
            type Mark = $mark;
            #[inline(always)]
            fn one(x: Self, l: $l) -> $y {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn slice<'a>(x: &'a [Self], l: &'a [$l]) -> &'a [$y] {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn vec(x: Vec<Self>, l: Vec<$l>) -> Vec<$y> {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn vec_ref<'a>(x: &'a Vec<Self>, l: &'a Vec<$l>) -> &'a Vec<$y> {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn array<const N: usize>(x: [Self; N], l: [$l; N]) -> [$y; N] {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn array_ref<'a, const N: usize>(x: &'a [Self; N], l: &'a [$l; N]) -> &'a [$y; N] {
                elem_pass!(@$pick x, l)
            }
            #[inline(always)]
            fn one_ref<'a>(x: &'a Self, l: &'a $l) -> &'a $y {
                elem_pass!(@$pick x, l)
            }
        }
    };
    (@user $x:ident, $l:ident) => {{
        let _ = $l;
        $x
    }};
    (@lifted $x:ident, $l:ident) => {{
        let _ = $x;
        $l
    }};
}

elem_pass!(lifted: f64 => Fwd<f64>, lifted Fwd<f64>, Generic);
elem_pass!(user: f64 => f64, lifted Fwd<f64>, NotGeneric);
elem_pass!(lifted: f32 => Fwd<f32>, lifted Fwd<f32>, Generic);
elem_pass!(user: f32 => f32, lifted Fwd<f32>, NotGeneric);

macro_rules! int_pass {
    ($($t:ty),*) => {$(
        impl LiftedElem for $t {
            type Lifted = $t;
        }
        elem_pass!(user: $t => $t, lifted $t, Generic);
    )*};
}

int_pass!(usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, bool);

/// A pair (the user's argument, its lifted form) given to a parameter of type `P`: see
/// [`ElemPass`]. By value: `(f64, Fwd<f64>)`, `(Vec<f64>, Vec<Fwd<f64>>)`, arrays; borrowed:
/// `(&[f64], &Vec<Fwd<f64>>)` and the like, given to `&[T]`, `&Vec<T>`, `&[T; N]`, `&T`.
pub trait PassTo<P> {
    /// [`Generic`] or [`NotGeneric`].
    type Mark;
    /// The argument as the parameter takes it.
    fn pass_to(self) -> P;
}

macro_rules! scalar_pass {
    ($($t:ty),*) => {$(
        impl<Y> PassTo<Y> for ($t, <$t as LiftedElem>::Lifted)
        where
            $t: ElemPass<Y>,
        {
            type Mark = <$t as ElemPass<Y>>::Mark;
            #[inline(always)]
            fn pass_to(self) -> Y {
                <$t as ElemPass<Y>>::one(self.0, self.1)
            }
        }

        impl<'a, Y> PassTo<&'a Y> for (&'a $t, &'a <$t as LiftedElem>::Lifted)
        where
            $t: ElemPass<Y>,
        {
            type Mark = <$t as ElemPass<Y>>::Mark;
            #[inline(always)]
            fn pass_to(self) -> &'a Y {
                <$t as ElemPass<Y>>::one_ref(self.0, self.1)
            }
        }
    )*};
}

scalar_pass!(f64, f32, usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, bool);

impl<A: ElemPass<Y>, Y> PassTo<Vec<Y>> for (Vec<A>, Vec<A::Lifted>) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> Vec<Y> {
        A::vec(self.0, self.1)
    }
}

impl<A: ElemPass<Y>, Y, const N: usize> PassTo<[Y; N]> for ([A; N], [A::Lifted; N]) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> [Y; N] {
        A::array(self.0, self.1)
    }
}

impl<'a, A: ElemPass<Y>, Y> PassTo<&'a [Y]> for (&'a [A], &'a Vec<A::Lifted>) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> &'a [Y] {
        A::slice(self.0, self.1)
    }
}

impl<'a, A: ElemPass<Y>, Y> PassTo<&'a [Y]> for (&'a Vec<A>, &'a Vec<A::Lifted>) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> &'a [Y] {
        A::slice(self.0, self.1)
    }
}

impl<'a, A: ElemPass<Y>, Y> PassTo<&'a Vec<Y>> for (&'a Vec<A>, &'a Vec<A::Lifted>) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> &'a Vec<Y> {
        A::vec_ref(self.0, self.1)
    }
}

impl<'a, A: ElemPass<Y>, Y, const N: usize> PassTo<&'a [Y]> for (&'a [A; N], &'a [A::Lifted; N]) {
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> &'a [Y] {
        A::slice(self.0, self.1)
    }
}

impl<'a, A: ElemPass<Y>, Y, const N: usize> PassTo<&'a [Y; N]>
    for (&'a [A; N], &'a [A::Lifted; N])
{
    type Mark = A::Mark;
    #[inline(always)]
    fn pass_to(self) -> &'a [Y; N] {
        A::array_ref(self.0, self.1)
    }
}

/// A differentiable argument given to the rule: the pair of [`PassTo`], checked to go to a
/// parameter generic over `T: Float` ([`DualParameter`]).
#[inline(always)]
pub fn pass<L: PassTo<P>, P>(pair: L) -> P
where
    L::Mark: DualParameter<P>,
{
    pair.pass_to()
}

/// A `Const(..)` argument given to the rule: lifted (zero dual parts) for a generic parameter,
/// as it is for another.
#[inline(always)]
pub fn pass_const<L: PassTo<P>, P>(pair: L) -> P {
    pair.pass_to()
}

// ---------------------------------------------------------------------------------------------
// The result.

/// Holds only for `(A, A)`: the check that the function's result is `Fwd<F>`, which is what
/// fixes the rule's `T` to `Fwd<F>` ([`Pin::pin`]).
#[diagnostic::on_unimplemented(
    message = "`hvp!` and `hessian!` need a reverse rule generic over the float, whose result is the float; this function's rule returns `{Y}`",
    label = "the result is `{Y}`, which cannot hold a dual number",
    note = "for a function written over `f64`, put `#[differentiable(second_order)]` on it (see the note at its arguments); or write it generic over `T: Float`, as `fn f<T: Float>(x: &[T], y: T) -> T`, with `T::from_f64(2.0)` for constants"
)]
pub trait DualResult<Y> {}

#[diagnostic::do_not_recommend]
impl<A> DualResult<A> for A {}

/// The result of the rule, whose type [`Pin::pin`] fixes to `Fwd<F>`.
pub struct Pin<'a, Y>(pub &'a Y);

impl<Y> Pin<'_, Y> {
    /// Compiles only if `Y` is `Fwd<F>` (and makes it so while `Y` is still to be inferred).
    #[inline(always)]
    pub fn pin<F: Float>(&self)
    where
        Fwd<F>: DualResult<Y>,
    {
    }
}

/// A result's real part: what `hvp!` returns as the value. Implemented for plain floats too,
/// only so that an expansion [`Pin::pin`] refuses reports that error alone.
pub trait RealPart {
    /// The real type.
    type Re;
    /// The real part.
    fn real_part(self) -> Self::Re;
}

impl<F: Float> RealPart for Fwd<F> {
    type Re = F;
    #[inline(always)]
    fn real_part(self) -> F {
        self.re
    }
}

impl RealPart for f64 {
    type Re = f64;
    #[inline(always)]
    fn real_part(self) -> f64 {
        self
    }
}

impl RealPart for f32 {
    type Re = f32;
    #[inline(always)]
    fn real_part(self) -> f32 {
        self
    }
}

/// The value of the function: the result's real part.
#[inline(always)]
pub fn value<Y: RealPart>(y: Y) -> Y::Re {
    y.real_part()
}

/// The seed of the pullback: `1 + 0ε`.
#[inline(always)]
pub fn seed<Y: Float>(_: &Y) -> Y {
    Y::ONE
}

// ---------------------------------------------------------------------------------------------
// Gradients of dual numbers.

/// A gradient of dual numbers, split into the gradient (the real parts) and the
/// Hessian-vector product (the dual parts), each shaped as the argument's tangent:
/// `Fwd<f64>` into two `f64`s, `Vec<Fwd<f64>>` into two `Vec<f64>`s, arrays into arrays, an
/// integer argument's tangent into two `NoTangent`s.
pub trait SplitDual {
    /// The shape of each part.
    type Part: 'static;
    /// The two parts.
    fn split(&self) -> (Self::Part, Self::Part);
    /// The two parts, into `re` and `eps` (reusing their memory).
    fn split_into(&self, re: &mut Self::Part, eps: &mut Self::Part);
    /// Appends the real parts to `re` and the dual parts to `eps`, as `f64`s.
    fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>);
}

impl<F: Float> SplitDual for Fwd<F> {
    type Part = F;
    #[inline(always)]
    fn split(&self) -> (F, F) {
        (self.re, self.eps)
    }
    #[inline(always)]
    fn split_into(&self, re: &mut F, eps: &mut F) {
        (*re, *eps) = (self.re, self.eps);
    }
    fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
        re.push(self.re.to_f64());
        eps.push(self.eps.to_f64());
    }
}

impl<F: Float> SplitDual for Vec<Fwd<F>> {
    type Part = Vec<F>;
    fn split(&self) -> (Vec<F>, Vec<F>) {
        (self.iter().map(|x| x.re).collect(), self.iter().map(|x| x.eps).collect())
    }
    fn split_into(&self, re: &mut Vec<F>, eps: &mut Vec<F>) {
        re.clear();
        re.extend(self.iter().map(|x| x.re));
        eps.clear();
        eps.extend(self.iter().map(|x| x.eps));
    }
    fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
        self.iter().for_each(|x| x.extend_flat(re, eps));
    }
}

impl<F: Float, const N: usize> SplitDual for [Fwd<F>; N] {
    type Part = [F; N];
    fn split(&self) -> ([F; N], [F; N]) {
        (std::array::from_fn(|i| self[i].re), std::array::from_fn(|i| self[i].eps))
    }
    fn split_into(&self, re: &mut [F; N], eps: &mut [F; N]) {
        (*re, *eps) = self.split();
    }
    fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
        self.iter().for_each(|x| x.extend_flat(re, eps));
    }
}

impl SplitDual for NoTangent {
    type Part = NoTangent;
    fn split(&self) -> (NoTangent, NoTangent) {
        (NoTangent, NoTangent)
    }
    fn split_into(&self, _: &mut NoTangent, _: &mut NoTangent) {}
    fn extend_flat(&self, _: &mut Vec<f64>, _: &mut Vec<f64>) {}
}

impl SplitDual for Vec<NoTangent> {
    type Part = NoTangent;
    fn split(&self) -> (NoTangent, NoTangent) {
        (NoTangent, NoTangent)
    }
    fn split_into(&self, _: &mut NoTangent, _: &mut NoTangent) {}
    fn extend_flat(&self, _: &mut Vec<f64>, _: &mut Vec<f64>) {}
}

impl<const N: usize> SplitDual for [NoTangent; N] {
    type Part = NoTangent;
    fn split(&self) -> (NoTangent, NoTangent) {
        (NoTangent, NoTangent)
    }
    fn split_into(&self, _: &mut NoTangent, _: &mut NoTangent) {}
    fn extend_flat(&self, _: &mut Vec<f64>, _: &mut Vec<f64>) {}
}

/// Plain floats and their buffers: only in expansions that [`pass`] refuses (a parameter that
/// is not generic), implemented so that that error stands alone. The dual parts are zero.
macro_rules! plain_split {
    ($($t:ty),*) => {$(
        impl SplitDual for $t {
            type Part = $t;
            fn split(&self) -> ($t, $t) {
                (*self, 0.0)
            }
            fn split_into(&self, re: &mut $t, eps: &mut $t) {
                (*re, *eps) = (*self, 0.0);
            }
            fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
                re.push(f64::from(*self));
                eps.push(0.0);
            }
        }

        impl SplitDual for Vec<$t> {
            type Part = Vec<$t>;
            fn split(&self) -> (Vec<$t>, Vec<$t>) {
                (self.clone(), vec![0.0; self.len()])
            }
            fn split_into(&self, re: &mut Vec<$t>, eps: &mut Vec<$t>) {
                re.clone_from(self);
                eps.clear();
                eps.resize(self.len(), 0.0);
            }
            fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
                self.iter().for_each(|x| x.extend_flat(re, eps));
            }
        }

        impl<const N: usize> SplitDual for [$t; N] {
            type Part = [$t; N];
            fn split(&self) -> ([$t; N], [$t; N]) {
                (*self, [0.0; N])
            }
            fn split_into(&self, re: &mut [$t; N], eps: &mut [$t; N]) {
                (*re, *eps) = self.split();
            }
            fn extend_flat(&self, re: &mut Vec<f64>, eps: &mut Vec<f64>) {
                self.iter().for_each(|x| x.extend_flat(re, eps));
            }
        }
    )*};
}

plain_split!(f64, f32);

/// The gradient and the Hessian-vector product of one argument, from its gradient of dual
/// numbers.
#[inline(always)]
pub fn split<G: SplitDual>(g: G) -> (G::Part, G::Part) {
    g.split()
}

// ---------------------------------------------------------------------------------------------
// Hessians.

/// The number of components of a differentiable argument (a direction's length).
#[inline(always)]
pub fn flat_len<X: Lift + ?Sized>(x: &X) -> usize {
    x.flat_len()
}

/// Which component of an argument with `n` components the unit direction `j` (counted over all
/// the arguments, from `*offset` for this one) falls on; advances `*offset` past the argument.
#[inline(always)]
pub fn unit_in(j: Option<usize>, offset: &mut usize, n: usize) -> Option<usize> {
    let k = j.and_then(|j| (j >= *offset && j < *offset + n).then(|| j - *offset));
    *offset += n;
    k
}

/// The dense Hessian from `n` Hessian-vector products: `pass(Some(j), grad, hv)` runs the
/// reverse rule on dual numbers along the unit direction `j` and writes the flat gradient and
/// `H e_j` (column `j`); `pass(None, ..)` (only when `n == 0`) gives the value alone. Returns
/// the value, the gradient (of the first pass) and the `n` by `n` Hessian.
pub fn dense<Y>(
    n: usize,
    mut pass: impl FnMut(Option<usize>, &mut Vec<f64>, &mut Vec<f64>) -> Y,
) -> (Y, Vec<f64>, Jacobian) {
    let (mut grad, mut hv, mut g) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
    let mut data = vec![0.0; n * n];
    let mut value = None;
    for j in 0..n {
        grad.clear();
        hv.clear();
        let y = pass(Some(j), &mut grad, &mut hv);
        assert_eq!(hv.len(), n, "mooncake: hessian!: an argument changed size between passes");
        for (i, v) in hv.iter().enumerate() {
            data[i * n + j] = *v;
        }
        if value.is_none() {
            value = Some(y);
            g = grad.clone();
        }
    }
    let h = match Jacobian::from_row_major(n, n, data) {
        Some(h) => h,
        None => unreachable!("mooncake: a Hessian of the wrong size"),
    };
    match value {
        Some(y) => (y, g, h),
        None => (pass(None, &mut grad, &mut hv), grad, h),
    }
}

// ---------------------------------------------------------------------------------------------
// The prepared form.

/// Buffers reused by `hvp!(f(..), dirs, cache = &mut cache)` across Hessian-vector products of
/// one function at fixed argument sizes, as [`GradientCache`](crate::GradientCache) does for
/// gradients: the lifted copies of buffer arguments, their shadows and the two parts of each
/// gradient. After the first call, a product whose buffers are passed as `&x` allocates
/// nothing of its own; the results are borrowed from the cache. (The function's reverse rule
/// may: the reverse pass pools its loop tapes and its callees' pullbacks only in functions
/// without type parameters, so a generic function with loops or calls allocates those on every
/// call, as its own prepared gradient does; one without is allocation-free.)
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn quartic<T: Float>(x: &[T]) -> T {
///     let mut s = T::ZERO;
///     for i in 0..x.len() {
///         s += x[i] * x[i] * x[i] * x[i];
///     }
///     s
/// }
///
/// let mut cache = HvpCache::new();
/// let (x, v) = (vec![1.0, 2.0], vec![1.0, 0.0]);
/// for _ in 0..3 {
///     let (y, (g,), (hv,)) = hvp!(quartic(&x), (&v,), cache = &mut cache);
///     assert_eq!(y, 17.0);
///     assert_eq!(g, &[4.0, 32.0]);
///     assert_eq!(hv, &[12.0, 0.0]); // H = diag(12 x²)
/// }
/// ```
///
/// # Panics
/// A call with another function, or with an argument of another size than the first call's,
/// is refused with a message naming the argument: use a new cache for other sizes.
#[derive(Default)]
pub struct HvpCache {
    function: Option<&'static str>,
    lifted: Vec<Option<Box<dyn Any>>>,
    shadows: Vec<Option<Box<dyn Any>>>,
    outs: Vec<Option<Box<dyn Any>>>,
    /// `hessian!(.., cache = ..)`: the flat gradient and product of the current pass, the
    /// gradient of the first, and the Hessian.
    grad: Vec<f64>,
    hv: Vec<f64>,
    gradient: Vec<f64>,
    hessian: Option<Jacobian>,
}

impl std::fmt::Debug for HvpCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HvpCache")
            .field("function", &self.function)
            .field("arguments", &self.lifted.len())
            .finish()
    }
}

/// The two parts of an argument's gradient, and the gradient of dual numbers they come from.
struct Out<T, G> {
    tangent: T,
    grad: G,
    hv: G,
}

fn downcast<'c, S: Any>(
    slot: &'c mut Option<Box<dyn Any>>,
    init: impl FnOnce() -> S,
    k: usize,
    function: &str,
) -> &'c mut S {
    match slot.get_or_insert_with(|| Box::new(init())).downcast_mut::<S>() {
        Some(s) => s,
        None => panic!(
            "mooncake: argument {} of `{function}` has another type than when this HvpCache \
             was prepared",
            k + 1
        ),
    }
}

impl HvpCache {
    /// An empty cache; the first product computed with it prepares it.
    ///
    /// ```
    /// use mooncake_runtime::prelude::*;
    ///
    /// #[differentiable]
    /// fn cube<T: Float>(x: &[T]) -> T {
    ///     x[0] * x[0] * x[0]
    /// }
    ///
    /// let mut cache = HvpCache::new();
    /// assert!(!cache.is_prepared());
    /// let (_, _, (hv,)) = hvp!(cube(&[2.0]), (&[1.0],), cache = &mut cache);
    /// assert_eq!(hv, &[12.0]);
    /// assert!(cache.is_prepared());
    /// ```
    pub fn new() -> Self {
        HvpCache::default()
    }

    /// Whether a product has been computed with this cache (see [`HvpCache::new`]).
    pub fn is_prepared(&self) -> bool {
        self.function.is_some()
    }

    /// Starts a product of `function` (its path as written) with `n` arguments.
    #[doc(hidden)]
    pub fn begin(&mut self, function: &'static str, n: usize) -> &mut Self {
        match self.function {
            None => {
                self.function = Some(function);
                self.lifted.resize_with(n, || None);
                self.shadows.resize_with(n, || None);
                self.outs.resize_with(n, || None);
            }
            Some(f) if f == function && self.lifted.len() == n => {}
            Some(f) => panic!(
                "mooncake: this HvpCache was prepared for `{f}`, not `{function}`: use one cache \
                 per function"
            ),
        }
        self
    }

    fn name(&self) -> &'static str {
        self.function.unwrap_or("?")
    }

    /// The lifted copy of argument `k` (a buffer passed as `&x`), with the dual parts `d`
    /// (zero for `None`, a constant): taken out of the cache, to be put back by
    /// [`HvpCache::put_lifted`].
    #[doc(hidden)]
    pub fn take_lifted<X, D>(&mut self, k: usize, x: &X, d: Option<&D>) -> X::Lifted
    where
        X: Lift + ?Sized,
        X::Lifted: Default + 'static,
        D: Dir<X::Elem> + ?Sized,
    {
        let function = self.name();
        let dir = d.map(|d| {
            check_dir(x, d, k, function);
            d.dir_slice()
        });
        let mut l: X::Lifted =
            std::mem::take(downcast(&mut self.lifted[k], X::Lifted::default, k, function));
        x.lift_into(dir, &mut l);
        l
    }

    /// Puts back the lifted copy of argument `k`.
    #[doc(hidden)]
    pub fn put_lifted<L: 'static>(&mut self, k: usize, l: L) {
        match self.lifted[k].as_mut().and_then(|b| b.downcast_mut::<L>()) {
            Some(slot) => *slot = l,
            None => self.lifted[k] = Some(Box::new(l)),
        }
    }

    /// The shadow of argument `k`, passed as `&x` (`x` its lifted copy as the rule takes it):
    /// zeroed in place.
    #[doc(hidden)]
    pub fn ref_shadow<P>(&mut self, k: usize, x: &P) -> P::Shadow
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
    {
        let function = self.name();
        let mut fresh = false;
        let shadow = downcast(
            &mut self.shadows[k],
            || {
                fresh = true;
                x.zero_shadow()
            },
            k,
            function,
        );
        if !fresh && let Err(e) = x.reset_shadow(shadow) {
            refuse(k, function, e);
        }
        shadow.clone()
    }

    /// Splits the gradient of argument `k`, passed as `&x`, out of its shadow into the cache.
    #[doc(hidden)]
    pub fn ref_done<P>(&mut self, k: usize, x: &P, shadow: &P::Shadow)
    where
        P: Primal + ?Sized,
        P::Tangent: SplitDual + 'static,
    {
        let function = self.name();
        let out = downcast(
            &mut self.outs[k],
            || {
                let tangent = x.zero_tangent();
                let (grad, hv) = tangent.split();
                Out { tangent, grad, hv }
            },
            k,
            function,
        );
        P::shadow_into_tangent(shadow, &mut out.tangent);
        out.tangent.split_into(&mut out.grad, &mut out.hv);
    }

    /// Splits the gradient of argument `k`, passed by value, into the cache.
    #[doc(hidden)]
    pub fn value_done<P>(
        &mut self,
        k: usize,
        _: std::marker::PhantomData<fn() -> P>,
        fdata: &P::FData,
        rdata: P::RData,
    ) where
        P: Primal,
        P::Tangent: SplitDual + 'static,
    {
        let function = self.name();
        let mut tangent = P::join_tangent(fdata, rdata);
        crate::tangent::TangentSpace::settle(&mut tangent);
        let out = downcast(
            &mut self.outs[k],
            || {
                let (grad, hv) = tangent.split();
                Out { tangent: tangent.clone(), grad, hv }
            },
            k,
            function,
        );
        tangent.split_into(&mut out.grad, &mut out.hv);
    }

    /// The gradient and the Hessian-vector product of argument `k`, of the tangent type `T`.
    #[doc(hidden)]
    pub fn parts<T: SplitDual + 'static>(
        &self,
        k: usize,
        _: std::marker::PhantomData<fn() -> T>,
    ) -> (&T::Part, &T::Part) {
        match self.outs[k].as_ref().and_then(|s| s.downcast_ref::<Out<T, T::Part>>()) {
            Some(o) => (&o.grad, &o.hv),
            None => unreachable!("mooncake: an HvpCache slot was not prepared"),
        }
    }
}

impl HvpCache {
    /// The lifted copy of argument `k` (a buffer passed as `&x`) with the unit direction `unit`
    /// (`hessian!`), taken out of the cache (see [`HvpCache::take_lifted`]).
    #[doc(hidden)]
    pub fn take_lifted_unit<X>(&mut self, k: usize, x: &X, unit: Option<usize>) -> X::Lifted
    where
        X: Lift + ?Sized,
        X::Lifted: Default + 'static,
    {
        let function = self.name();
        let mut l: X::Lifted =
            std::mem::take(downcast(&mut self.lifted[k], X::Lifted::default, k, function));
        x.lift_unit_into(unit, &mut l);
        l
    }

    /// Starts a Hessian of `n` components (a new matrix only for the first, or for another
    /// `n`, which is refused).
    #[doc(hidden)]
    pub fn begin_hessian(&mut self, n: usize) {
        match &self.hessian {
            Some(h) if h.rows() == n => {}
            Some(h) => panic!(
                "mooncake: the arguments of `{}` have {n} components, where this HvpCache was \
                 prepared for {}: use a new cache for other sizes",
                self.name(),
                h.rows()
            ),
            None => self.hessian = Some(Jacobian::zeros(n, n)),
        }
    }

    /// Starts a pass: the flat gradient and product are emptied.
    #[doc(hidden)]
    pub fn begin_pass(&mut self) {
        self.grad.clear();
        self.hv.clear();
    }

    /// Appends the flat gradient and product of argument `k`, passed as `&x`, read out of its
    /// shadow.
    #[doc(hidden)]
    pub fn ref_push<P>(&mut self, k: usize, x: &P, shadow: &P::Shadow)
    where
        P: Primal + ?Sized,
        P::Tangent: SplitDual + 'static,
    {
        self.ref_done(k, x, shadow);
        let out = self.outs[k]
            .as_ref()
            .and_then(|s| s.downcast_ref::<Out<P::Tangent, <P::Tangent as SplitDual>::Part>>());
        match out {
            Some(o) => o.tangent.extend_flat(&mut self.grad, &mut self.hv),
            None => unreachable!("mooncake: an HvpCache slot was not prepared"),
        }
    }

    /// Appends the flat gradient and product of argument `k`, passed by value.
    #[doc(hidden)]
    pub fn value_push<P>(
        &mut self,
        _: usize,
        _: std::marker::PhantomData<fn() -> P>,
        fdata: &P::FData,
        rdata: P::RData,
    ) where
        P: Primal,
        P::Tangent: SplitDual,
    {
        let mut tangent = P::join_tangent(fdata, rdata);
        crate::tangent::TangentSpace::settle(&mut tangent);
        tangent.extend_flat(&mut self.grad, &mut self.hv);
    }

    /// Ends the pass along the unit direction `j`: its product is column `j` of the Hessian;
    /// the first pass's gradient is kept.
    #[doc(hidden)]
    pub fn end_pass(&mut self, j: Option<usize>) {
        let function = self.name();
        let Some(h) = self.hessian.as_mut() else {
            unreachable!("mooncake: a Hessian pass before begin_hessian")
        };
        let n = h.rows();
        assert!(
            self.hv.len() == n,
            "mooncake: hessian!: an argument of `{function}` changed size between passes"
        );
        if let Some(j) = j {
            for (i, v) in self.hv.iter().enumerate() {
                h.set(i, j, *v);
            }
        }
        if j.is_none_or(|j| j == 0) {
            self.gradient.clear();
            self.gradient.extend_from_slice(&self.grad);
        }
    }

    /// The gradient and the Hessian of the last `hessian!(.., cache = ..)`.
    #[doc(hidden)]
    pub fn hessian_parts(&self) -> (&[f64], &Jacobian) {
        match &self.hessian {
            Some(h) => (&self.gradient, h),
            None => unreachable!("mooncake: a Hessian read before it was computed"),
        }
    }
}

/// The value of the last pass of a prepared `hessian!` (there is always one).
#[doc(hidden)]
#[inline(always)]
pub fn last_value<Y>(y: Option<Y>) -> Y {
    match y {
        Some(y) => y,
        None => unreachable!("mooncake: a prepared hessian! ran no pass"),
    }
}

fn refuse(k: usize, function: &str, e: ShapeMismatch) -> ! {
    panic!(
        "mooncake: argument {} of `{function}` is {e}; an HvpCache serves one set of sizes: use a \
         new cache (HvpCache::new()) for other sizes",
        k + 1
    )
}

/// The tangent type of a primal, as a marker (for [`HvpCache::parts`]).
#[inline(always)]
pub fn tangent_marker<P: Primal + ?Sized>(_: &P) -> std::marker::PhantomData<fn() -> P::Tangent> {
    std::marker::PhantomData
}

/// The tangent type of a codual's primal, as a marker (for [`HvpCache::parts`]).
#[inline(always)]
pub fn codual_tangent_marker<P: Primal, F>(
    _: &crate::dual::CoDual<P, F>,
) -> std::marker::PhantomData<fn() -> P::Tangent> {
    std::marker::PhantomData
}

/// Argument `x` lifted with the unit direction `k` (zero for `None`), for `hessian!`.
#[inline(always)]
pub fn lift_unit<X: Lift + ?Sized>(x: &X, k: Option<usize>) -> X::Lifted {
    x.lift_unit(k)
}

/// Appends an argument's gradient (real parts) and `H e_j` (dual parts), flattened, to the
/// pass's two vectors, for `hessian!`.
#[inline(always)]
pub fn extend_flat<G: SplitDual>(g: G, grad: &mut Vec<f64>, hv: &mut Vec<f64>) {
    g.extend_flat(grad, hv);
}
