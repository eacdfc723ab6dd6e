//! What the batched form of a derived forward rule (`NAME__frule_lanes`, see
//! [`crate::lanes`]) calls besides the ordinary forward-mode support: constants, casts and
//! empty buffers whose tangents carry `N` directions, and the operators on duals of a float
//! with [`Lanes`] tangents. Float methods dispatch through [`super::MethodFrule`] as in the
//! ordinary rule (its float impls take any [`super::FloatDual`]), and comparisons through the
//! same functions, which ignore tangents.

use crate::dual::{Dual, NoTangent};
use crate::float::Float;
use crate::lanes::{Directions, Lanes, LanesPrimal};
use crate::rules::scalar;

/// A constant with `N` zero directions.
///
/// ```
/// use mooncake_runtime::forward::lanes::constant;
/// use mooncake_runtime::lanes::Lanes;
/// let c = constant::<f64, 2>(1.5);
/// assert_eq!((c.primal, c.tangent), (1.5, Lanes([0.0, 0.0])));
/// ```
#[inline(always)]
pub fn constant<P: LanesPrimal<N>, const N: usize>(p: P) -> Dual<P, P::Lanes> {
    let t = p.zero_lanes();
    Dual::new(p, t)
}

/// `Vec::new()` with batched tangents.
#[inline(always)]
pub fn vec_new<E: LanesPrimal<N>, const N: usize>() -> Dual<Vec<E>, Vec<E::Lanes>> {
    Dual::new(Vec::new(), Vec::new())
}

/// `Vec::with_capacity(n)` with batched tangents.
#[inline(always)]
pub fn vec_with_capacity<E: LanesPrimal<N>, const N: usize>(
    n: Dual<usize, NoTangent>,
) -> Dual<Vec<E>, Vec<E::Lanes>> {
    Dual::new(Vec::with_capacity(n.primal), Vec::with_capacity(n.primal))
}

/// `T::from_f64(x)` in generic code, with batched tangents.
#[inline(always)]
pub fn float_from_f64_frule<T: Float, const N: usize>(
    x: Dual<f64, Lanes<f64, N>>,
) -> Dual<T, Lanes<T, N>> {
    Dual::new(T::from_f64(x.primal), x.tangent.convert(T::from_f64))
}

/// `x as B` with batched tangents: the rule of [`scalar::CastRule`] applied in every direction
/// (a float's tangents converted, an integer's none).
pub trait LanesCast<B: LanesPrimal<N>, const N: usize>: LanesPrimal<N> + Sized {
    /// The cast.
    fn cast(x: Dual<Self, Self::Lanes>) -> Dual<B, B::Lanes>;
}

/// `x as B`, through [`LanesCast`].
#[inline(always)]
pub fn cast<A: LanesCast<B, N>, B: LanesPrimal<N>, const N: usize>(
    x: Dual<A, A::Lanes>,
) -> Dual<B, B::Lanes> {
    A::cast(x)
}

macro_rules! lanes_casts {
    (float_float: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@ff $from => $tos); )* };
    (int_float: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@if $from => $tos); )* };
    (float_int: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@fi $from => $tos); )* };
    (int_int: $($from:ty),* => $tos:tt) => { $( lanes_casts!(@ii $from => $tos); )* };
    (@ff $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, Lanes<$from, N>>) -> Dual<$to, Lanes<$to, N>> {
                Dual::new(x.primal as $to, Lanes(x.tangent.0.map(|t| t as $to)))
            }
        }
    )*};
    (@if $from:ty => [$($to:ty),*]) => {$(
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, NoTangent>) -> Dual<$to, Lanes<$to, N>> {
                Dual::new(x.primal as $to, Lanes([0.0; N]))
            }
        }
    )*};
    (@fi $from:ty => [$($to:ty),*]) => {$(
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, Lanes<$from, N>>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
        }
    )*};
    (@ii $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl<const N: usize> LanesCast<$to, N> for $from {
            #[inline(always)]
            fn cast(x: Dual<$from, NoTangent>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
        }
    )*};
}

lanes_casts!(float_float: f32, f64 => [f32, f64]);
lanes_casts!(int_float: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
    => [f32, f64]);
lanes_casts!(float_int: f32, f64
    => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);
lanes_casts!(int_int: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
    => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);

// Operators on duals of floats with batched tangents, by value or behind references, through
// the scalar rules (generic over the tangent's directions).
macro_rules! lanes_binops {
    ($($trait:ident $method:ident $rule:ident),*) => {$(
        impl<T: Float, const N: usize> std::ops::$trait for Dual<T, Lanes<T, N>> {
            type Output = Dual<T, Lanes<T, N>>;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Self {
                scalar::$rule(self, rhs)
            }
        }
        impl<'a, T: Float, const N: usize> std::ops::$trait<Dual<&'a T, &'a Lanes<T, N>>>
            for Dual<T, Lanes<T, N>>
        {
            type Output = Dual<T, Lanes<T, N>>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'a T, &'a Lanes<T, N>>) -> Self {
                scalar::$rule(self, Dual::new(*rhs.primal, *rhs.tangent))
            }
        }
        impl<'a, T: Float, const N: usize> std::ops::$trait<Dual<T, Lanes<T, N>>>
            for Dual<&'a T, &'a Lanes<T, N>>
        {
            type Output = Dual<T, Lanes<T, N>>;
            #[inline(always)]
            fn $method(self, rhs: Dual<T, Lanes<T, N>>) -> Dual<T, Lanes<T, N>> {
                scalar::$rule(Dual::new(*self.primal, *self.tangent), rhs)
            }
        }
        impl<'a, 'b, T: Float, const N: usize> std::ops::$trait<Dual<&'b T, &'b Lanes<T, N>>>
            for Dual<&'a T, &'a Lanes<T, N>>
        {
            type Output = Dual<T, Lanes<T, N>>;
            #[inline(always)]
            fn $method(self, rhs: Dual<&'b T, &'b Lanes<T, N>>) -> Dual<T, Lanes<T, N>> {
                scalar::$rule(
                    Dual::new(*self.primal, *self.tangent),
                    Dual::new(*rhs.primal, *rhs.tangent),
                )
            }
        }
    )*};
}

lanes_binops!(Add add add_frule, Sub sub sub_frule, Mul mul mul_frule, Div div div_frule,
    Rem rem rem_frule);

impl<T: Float, const N: usize> std::ops::Neg for Dual<T, Lanes<T, N>> {
    type Output = Dual<T, Lanes<T, N>>;
    #[inline(always)]
    fn neg(self) -> Self {
        scalar::neg_frule(self)
    }
}

impl<T: Float, const N: usize> std::ops::Neg for Dual<&T, &Lanes<T, N>> {
    type Output = Dual<T, Lanes<T, N>>;
    #[inline(always)]
    fn neg(self) -> Dual<T, Lanes<T, N>> {
        scalar::neg_frule(Dual::new(*self.primal, *self.tangent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_apply_each_rule_in_every_direction() {
        let x = Dual::new(2.0_f64, Lanes([1.0, 0.0, 3.0]));
        let y = Dual::new(5.0_f64, Lanes([0.0, 1.0, -1.0]));
        let p = x * y;
        assert_eq!(p.primal, 10.0);
        assert_eq!(p.tangent, Lanes([5.0, 2.0, 13.0]));
        let q = x / y;
        for k in 0..3 {
            let (dx, dy) = (x.tangent.0[k], y.tangent.0[k]);
            assert!((q.tangent.0[k] - (dx / 5.0 - 2.0 * dy / 25.0)).abs() < 1e-15);
        }
        let n = -(&x.primal, &x.tangent).into_dual();
        assert_eq!(n.tangent, Lanes([-1.0, 0.0, -3.0]));
        let c = cast::<usize, f64, 3>(Dual::new(4, NoTangent));
        assert_eq!(c.tangent, Lanes([0.0; 3]));
        let s = cast::<f64, f32, 3>(x);
        assert_eq!(s.tangent, Lanes([1.0_f32, 0.0, 3.0]));
    }

    trait IntoDual<'a> {
        fn into_dual(self) -> Dual<&'a f64, &'a Lanes<f64, 3>>;
    }
    impl<'a> IntoDual<'a> for (&'a f64, &'a Lanes<f64, 3>) {
        fn into_dual(self) -> Dual<&'a f64, &'a Lanes<f64, 3>> {
            Dual::new(self.0, self.1)
        }
    }
}
