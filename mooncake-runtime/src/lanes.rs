//! Batched tangents: [`Lanes<T, N>`], `N` directional derivatives of one float carried side by
//! side, so that one pass of a derived forward rule computes `N` columns of a Jacobian (the
//! batched form `value_and_gradient_forward!(f(..), chunk = N)` runs).
//!
//! The primitive forward rules are written once over a tangent type `D: Directions<T>`: the
//! float itself (one direction, the ordinary `Dual<T, T>`) or `Lanes<T, N>`. A rule computes its
//! primal value and its partial derivatives once, and applies them to every lane
//! ([`Directions::scale`]), which is what makes a batched pass cheaper than `N` passes: the
//! primal, the control flow and the derivatives are shared.
//!
//! [`LanesPrimal`] gives each argument type of a batched rule its batched tangent: `f64` carries
//! `Lanes<f64, N>`, a buffer of floats a buffer of lanes, an integer [`NoTangent`].
//!
//! ```
//! use mooncake_runtime::lanes::{Directions, Lanes};
//! use mooncake_runtime::rules::scalar::sin_frule;
//! use mooncake_runtime::Dual;
//!
//! // d sin(x) along three directions at once, at x = 0.5:
//! let y = sin_frule(Dual::new(0.5_f64, Lanes([1.0, 2.0, 0.0])));
//! let c = 0.5_f64.cos();
//! assert_eq!(y.tangent, Lanes([c, 2.0 * c, 0.0]));
//! assert_eq!(Lanes::<f64, 2>::zero(), Lanes([0.0, 0.0]));
//! ```

use crate::dual::NoTangent;
use crate::float::Float;

/// `N` tangents of one float, one per direction (a batched tangent).
///
/// ```
/// use mooncake_runtime::lanes::Lanes;
/// let t = Lanes([1.0_f64, -2.0]);
/// assert_eq!(t.0[1], -2.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes<T, const N: usize>(pub [T; N]);

impl<T: Float, const N: usize> Default for Lanes<T, N> {
    #[inline(always)]
    fn default() -> Self {
        Lanes([T::ZERO; N])
    }
}

/// A tangent type of the float `T` as the primitive forward rules see it: a vector space over
/// `T` in which a partial derivative is applied by scaling. Implemented by `T` itself (one
/// direction) and by [`Lanes<T, N>`] (`N` directions).
pub trait Directions<T: Float>: Copy {
    /// The zero tangent.
    fn zero() -> Self;
    /// `d * t`, in every direction.
    fn scale(self, d: T) -> Self;
    /// `d * t`, but exactly `0` in a direction where `t == 0` (see
    /// [`guarded_scale`](crate::rules::scalar::guarded_scale)).
    fn scale_guarded(self, d: T) -> Self;
    /// `t + u`, direction by direction.
    fn plus(self, other: Self) -> Self;
    /// The tangent in each direction converted to another float type (`x as f32`).
    fn convert<U: Float, E: Directions<U>>(self, f: impl Fn(T) -> U) -> E;
    /// The tangent of direction `k` (`0` for the one direction of a scalar).
    fn lane(&self, k: usize) -> T;
    /// Sets the tangent of direction `k`.
    fn set_lane(&mut self, k: usize, v: T);
    /// How many directions this type carries.
    const LANES: usize;
}

impl<T: Float> Directions<T> for T {
    #[inline(always)]
    fn zero() -> Self {
        T::ZERO
    }
    #[inline(always)]
    fn scale(self, d: T) -> Self {
        d * self
    }
    #[inline(always)]
    fn scale_guarded(self, d: T) -> Self {
        d.mul_guarded(self)
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn convert<U: Float, E: Directions<U>>(self, f: impl Fn(T) -> U) -> E {
        let mut e = E::zero();
        e.set_lane(0, f(self));
        e
    }
    #[inline(always)]
    fn lane(&self, _: usize) -> T {
        *self
    }
    #[inline(always)]
    fn set_lane(&mut self, _: usize, v: T) {
        *self = v;
    }
    const LANES: usize = 1;
}

impl<T: Float, const N: usize> Directions<T> for Lanes<T, N> {
    #[inline(always)]
    fn zero() -> Self {
        Lanes([T::ZERO; N])
    }
    #[inline(always)]
    fn scale(self, d: T) -> Self {
        Lanes(self.0.map(|t| d * t))
    }
    #[inline(always)]
    fn scale_guarded(self, d: T) -> Self {
        Lanes(self.0.map(|t| d.mul_guarded(t)))
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        let mut out = self.0;
        for (o, b) in out.iter_mut().zip(other.0) {
            *o += b;
        }
        Lanes(out)
    }
    #[inline(always)]
    fn convert<U: Float, E: Directions<U>>(self, f: impl Fn(T) -> U) -> E {
        let mut e = E::zero();
        for (k, t) in self.0.into_iter().enumerate() {
            e.set_lane(k, f(t));
        }
        e
    }
    #[inline(always)]
    fn lane(&self, k: usize) -> T {
        self.0[k]
    }
    #[inline(always)]
    fn set_lane(&mut self, k: usize, v: T) {
        self.0[k] = v;
    }
    const LANES: usize = N;
}

/// The batched tangent of a primal type: what a derived rule's batched form
/// (`NAME__frule_lanes`) takes and returns beside each value when it carries `N` directions.
///
/// | primal | batched tangent |
/// | --- | --- |
/// | `f64`, `f32` | [`Lanes<f64, N>`], [`Lanes<f32, N>`] |
/// | integers, `bool`, `char`, `()` | [`NoTangent`] |
/// | `[T]` (behind `&`) | `[T::Lanes]` |
/// | `Vec<T>` | `Vec<T::Lanes>` |
/// | `[T; K]` | `[T::Lanes; K]` |
///
/// ```
/// use mooncake_runtime::lanes::{Lanes, LanesPrimal};
/// let x = vec![1.0_f64, 2.0];
/// let t: Vec<Lanes<f64, 3>> = <Vec<f64> as LanesPrimal<3>>::zero_lanes(&x);
/// assert_eq!(t, vec![Lanes([0.0; 3]); 2]);
/// ```
pub trait LanesPrimal<const N: usize> {
    /// The batched tangent of an owned value.
    type Lanes: Clone;
    /// What a reference to a batched tangent points at (`[T::Lanes]` for `[T]`).
    type LanesRef: ?Sized;
    /// The zero batched tangent, shaped like `self`.
    fn zero_lanes(&self) -> Self::Lanes;
    /// A batched tangent seen as what a reference to one points at.
    fn lanes_ref(t: &Self::Lanes) -> &Self::LanesRef;
    /// The number of float components of `self` (what one row of its gradient holds).
    fn components(&self) -> usize;
    /// Sets direction `lane` of component `c` to `v` (components in the order of
    /// [`FlatTangent`](crate::jacobian::FlatTangent)).
    fn seed(t: &mut Self::Lanes, c: usize, lane: usize, v: f64);
}

impl<T: Float, const N: usize> LanesPrimal<N> for T {
    type Lanes = Lanes<T, N>;
    type LanesRef = Lanes<T, N>;
    #[inline(always)]
    fn zero_lanes(&self) -> Lanes<T, N> {
        Lanes([T::ZERO; N])
    }
    fn lanes_ref(t: &Lanes<T, N>) -> &Lanes<T, N> {
        t
    }
    fn components(&self) -> usize {
        1
    }
    fn seed(t: &mut Lanes<T, N>, _: usize, lane: usize, v: f64) {
        t.0[lane] = T::from_f64(v);
    }
}

macro_rules! no_lanes {
    ($($t:ty),*) => {$(
        impl<const N: usize> LanesPrimal<N> for $t {
            type Lanes = NoTangent;
            type LanesRef = NoTangent;
            #[inline(always)]
            fn zero_lanes(&self) -> NoTangent {
                NoTangent
            }
            fn lanes_ref(t: &NoTangent) -> &NoTangent {
                t
            }
            fn components(&self) -> usize {
                0
            }
            fn seed(_: &mut NoTangent, _: usize, _: usize, _: f64) {}
        }
    )*};
}

no_lanes!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool, char, ());

macro_rules! tuple_lanes {
    ($(($($t:ident $i:tt),*))*) => {$(
        impl<$($t: LanesPrimal<N>,)* const N: usize> LanesPrimal<N> for ($($t,)*) {
            type Lanes = ($($t::Lanes,)*);
            type LanesRef = ($($t::Lanes,)*);
            fn zero_lanes(&self) -> Self::Lanes {
                ($(self.$i.zero_lanes(),)*)
            }
            fn lanes_ref(t: &Self::Lanes) -> &Self::LanesRef {
                t
            }
            fn components(&self) -> usize {
                0 $(+ self.$i.components())*
            }
            fn seed(_: &mut Self::Lanes, _: usize, _: usize, _: f64) {
                // Tuples are never arguments of a batched rule, only its constants.
            }
        }
    )*};
}

tuple_lanes! {
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
}

impl<T: LanesPrimal<N>, const N: usize> LanesPrimal<N> for [T] {
    type Lanes = Vec<T::Lanes>;
    type LanesRef = [T::Lanes];
    fn zero_lanes(&self) -> Vec<T::Lanes> {
        self.iter().map(T::zero_lanes).collect()
    }
    fn lanes_ref(t: &Vec<T::Lanes>) -> &[T::Lanes] {
        t
    }
    fn components(&self) -> usize {
        self.iter().map(T::components).sum()
    }
    fn seed(t: &mut Vec<T::Lanes>, c: usize, lane: usize, v: f64) {
        // Elements of one type have one width (floats: 1; integers: 0, never seeded).
        T::seed(&mut t[c], 0, lane, v);
    }
}

impl<T: LanesPrimal<N>, const N: usize> LanesPrimal<N> for Vec<T> {
    type Lanes = Vec<T::Lanes>;
    type LanesRef = Vec<T::Lanes>;
    fn zero_lanes(&self) -> Vec<T::Lanes> {
        self.as_slice().zero_lanes()
    }
    fn lanes_ref(t: &Vec<T::Lanes>) -> &Vec<T::Lanes> {
        t
    }
    fn components(&self) -> usize {
        self.as_slice().components()
    }
    fn seed(t: &mut Vec<T::Lanes>, c: usize, lane: usize, v: f64) {
        <[T] as LanesPrimal<N>>::seed(t, c, lane, v);
    }
}

impl<T: LanesPrimal<N>, const N: usize, const K: usize> LanesPrimal<N> for [T; K]
where
    T::Lanes: Copy,
{
    type Lanes = [T::Lanes; K];
    type LanesRef = [T::Lanes; K];
    fn zero_lanes(&self) -> [T::Lanes; K] {
        std::array::from_fn(|i| self[i].zero_lanes())
    }
    fn lanes_ref(t: &[T::Lanes; K]) -> &[T::Lanes; K] {
        t
    }
    fn components(&self) -> usize {
        self.iter().map(T::components).sum()
    }
    fn seed(t: &mut [T::Lanes; K], c: usize, lane: usize, v: f64) {
        T::seed(&mut t[c], 0, lane, v);
    }
}

/// Seeds the batched tangent `t` of an argument `p` whose components are directions `offset ..
/// offset + p.components()` of the whole gradient: lane `k` gets a one in the component that is
/// direction `first + k`, if it is one of them. An `offset` of `usize::MAX` (an argument passed
/// `Const(..)`) seeds nothing.
///
/// ```
/// use mooncake_runtime::lanes::{Lanes, LanesPrimal, seed_lanes};
/// // x has components 2, 3, 4 of the gradient; a pass carrying directions 3 and 4:
/// let x = [1.0_f64, 2.0, 3.0];
/// let mut t = <[f64] as LanesPrimal<2>>::zero_lanes(&x[..]);
/// seed_lanes::<[f64], 2>(&x[..], &mut t, 3, 2);
/// assert_eq!(t, vec![Lanes([0.0, 0.0]), Lanes([1.0, 0.0]), Lanes([0.0, 1.0])]);
/// ```
pub fn seed_lanes<P: LanesPrimal<N> + ?Sized, const N: usize>(
    p: &P,
    t: &mut P::Lanes,
    first: usize,
    offset: usize,
) {
    if offset == usize::MAX {
        return;
    }
    let m = p.components();
    for k in 0..N {
        let d = first + k;
        if d >= offset && d < offset + m {
            P::seed(t, d - offset, k, 1.0);
        }
    }
}

/// What a batched entry returned: the value and its `N` directional derivatives, or (from a
/// function without a batched rule, [`Unbatched`]) nothing.
pub trait LanesOutcome<const N: usize> {
    /// The primal result's type.
    type Value;
    /// Whether a batched rule ran.
    const BATCHED: bool;
    /// The value and the directional derivatives, as `f64`s.
    fn split(self) -> Option<(Self::Value, [f64; N])>;
}

impl<T: Float, const N: usize> LanesOutcome<N> for crate::Dual<T, Lanes<T, N>> {
    type Value = T;
    const BATCHED: bool = true;
    fn split(self) -> Option<(T, [f64; N])> {
        Some((self.primal, self.tangent.0.map(Float::to_f64)))
    }
}

/// What the stub of a function without a batched rule returns: the sign for
/// `value_and_gradient_forward!` to run one direction per pass instead.
pub struct Unbatched<Y>(std::marker::PhantomData<Y>);

impl<Y, const N: usize> LanesOutcome<N> for Unbatched<Y> {
    type Value = Y;
    const BATCHED: bool = false;
    fn split(self) -> Option<(Y, [f64; N])> {
        None
    }
}

/// The stubs imported as `NAME__lanes` beside a function that has no batched rule: `aK` takes
/// `K` arguments (the function's, then `__first` and `__offsets`) and returns [`Unbatched`].
#[doc(hidden)]
pub mod unbatched {
    use super::Unbatched;

    macro_rules! stubs {
        ($($name:ident($($a:ident),*);)*) => {$(
            /// A stub: this function has no batched rule.
            #[allow(clippy::too_many_arguments, non_camel_case_types)]
            pub fn $name<$($a,)* Y>($(_: $a),*) -> Unbatched<Y> {
                Unbatched(std::marker::PhantomData)
            }
        )*};
    }

    stubs! {
        a2(A0, A1);
        a3(A0, A1, A2);
        a4(A0, A1, A2, A3);
        a5(A0, A1, A2, A3, A4);
        a6(A0, A1, A2, A3, A4, A5);
        a7(A0, A1, A2, A3, A4, A5, A6);
        a8(A0, A1, A2, A3, A4, A5, A6, A7);
        a9(A0, A1, A2, A3, A4, A5, A6, A7, A8);
        a10(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9);
        a11(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10);
        a12(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11);
        a13(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12);
        a14(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13);
    }
}
