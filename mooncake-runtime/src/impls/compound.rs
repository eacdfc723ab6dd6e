//! Compound value types: tuples (arity 1 to 8), arrays `[T; N]` and `Option<T>`. Passed by
//! value they are value-identified component-wise: each component keeps its own kind of
//! fdata and rdata. Seen at an address, an array's shadow is one contiguous [`SharedVec`].

use crate::rng::TestRng;
use crate::shared::{SharedRef, SharedVec};
use crate::tangent::{FData, Primal, ShapeMismatch, TangentSpace};

fn vec_to_array<T, const N: usize>(v: Vec<T>) -> [T; N] {
    let len = v.len();
    match v.try_into() {
        Ok(a) => a,
        Err(_) => panic!("mooncake: expected {N} elements for an array tangent, found {len}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Arrays.

impl<T: TangentSpace, const N: usize> TangentSpace for [T; N] {
    fn increment(&mut self, other: &Self) {
        self.iter_mut().zip(other).for_each(|(a, b)| a.increment(b));
    }
    fn inner(&self, other: &Self) -> f64 {
        self.iter().zip(other).map(|(a, b)| a.inner(b)).sum()
    }
    fn scale(&mut self, a: f64) {
        self.iter_mut().for_each(|x| x.scale(a));
    }
    fn settle(&mut self) {
        self.iter_mut().for_each(|x| x.settle());
    }
}

impl<T: FData, const N: usize> FData for [T; N] {
    fn increment_from(&self, other: &Self) {
        self.iter().zip(other).for_each(|(a, b)| a.increment_from(b));
    }
}

impl<T: Primal + Clone, const N: usize> Primal for [T; N] {
    type Tangent = [T::Tangent; N];
    type TangentRef = [T::Tangent; N];
    type FData = [T::FData; N];
    type RData = [T::RData; N];
    type Shadow = SharedVec<T::Tangent>;
    type Handle = SharedVec<T>;

    fn zero_tangent(&self) -> Self::Tangent {
        std::array::from_fn(|i| self[i].zero_tangent())
    }
    fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent {
        std::array::from_fn(|i| self[i].random_tangent(rng))
    }
    fn zero_fdata(&self) -> Self::FData {
        std::array::from_fn(|i| self[i].zero_fdata())
    }
    fn zero_rdata(&self) -> Self::RData {
        std::array::from_fn(|i| self[i].zero_rdata())
    }
    fn zero_shadow(&self) -> Self::Shadow {
        let shadow = SharedVec::from_vec(self.iter().map(Primal::zero_tangent).collect());
        shadow.mark_zero();
        shadow
    }
    fn split_tangent(tangent: Self::Tangent) -> (Self::FData, Self::RData) {
        let (f, r): (Vec<_>, Vec<_>) = tangent.into_iter().map(T::split_tangent).unzip();
        (vec_to_array(f), vec_to_array(r))
    }
    fn join_tangent(fdata: &Self::FData, rdata: Self::RData) -> Self::Tangent {
        let v: Vec<_> = fdata.iter().zip(rdata).map(|(f, r)| T::join_tangent(f, r)).collect();
        vec_to_array(v)
    }
    fn tangent_to_shadow(tangent: Self::Tangent) -> Self::Shadow {
        SharedVec::from_vec(Vec::from(tangent))
    }
    fn shadow_to_tangent(shadow: &Self::Shadow) -> Self::Tangent {
        vec_to_array(shadow.with(|s| s.to_vec()))
    }
    #[inline(always)]
    fn tangent_ref(tangent: &Self::Tangent) -> &Self::Tangent {
        tangent
    }
    #[inline(always)]
    fn tangent_mut(tangent: &mut Self::Tangent) -> &mut Self::Tangent {
        tangent
    }
    fn to_handle(&self) -> SharedVec<T> {
        SharedVec::from_vec(self.to_vec())
    }
    fn load_handle(&mut self, handle: &SharedVec<T>) {
        handle.with(|s| {
            assert_eq!(s.len(), N, "mooncake: an array handle changed length");
            self.clone_from_slice(s)
        })
    }
    fn reset_shadow(&self, shadow: &mut Self::Shadow) -> Result<(), ShapeMismatch> {
        shadow.with_mut(|v| {
            if v.len() != N {
                return Err(ShapeMismatch { prepared: v.len(), given: N });
            }
            v.iter_mut().zip(self.iter()).for_each(|(d, p)| *d = p.zero_tangent());
            Ok(())
        })?;
        shadow.mark_zero();
        Ok(())
    }
    fn reset_handle(&self, handle: &mut SharedVec<T>) -> Result<(), ShapeMismatch> {
        handle.with_mut(|h| {
            if h.len() != N {
                return Err(ShapeMismatch { prepared: h.len(), given: N });
            }
            h.clone_from_slice(self);
            Ok(())
        })
    }
    fn shadow_into_tangent(shadow: &Self::Shadow, out: &mut Self::Tangent) {
        shadow.with(|s| out.clone_from_slice(s))
    }
    fn perturb(&mut self, tangent: &Self::Tangent, h: f64) {
        self.iter_mut().zip(tangent).for_each(|(x, t)| x.perturb(t, h));
    }
    fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64 {
        (0..N).map(|i| T::inner_difference(&tangent[i], &a[i], &b[i])).sum()
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        self.iter().zip(other).all(|(a, b)| a.approx_eq(b, rtol, atol))
    }
}

// ---------------------------------------------------------------------------------------------
// Tuples.

macro_rules! tuple_impls {
    ($( ($($T:ident $i:tt),+) )+) => {$(
        impl<$($T: TangentSpace),+> TangentSpace for ($($T,)+) {
            fn increment(&mut self, other: &Self) {
                $( self.$i.increment(&other.$i); )+
            }
            fn inner(&self, other: &Self) -> f64 {
                0.0 $( + self.$i.inner(&other.$i) )+
            }
            fn scale(&mut self, a: f64) {
                $( self.$i.scale(a); )+
            }
            fn settle(&mut self) {
                $( self.$i.settle(); )+
            }
        }

        impl<$($T: FData),+> FData for ($($T,)+) {
            fn increment_from(&self, other: &Self) {
                $( self.$i.increment_from(&other.$i); )+
            }
        }

        impl<$($T: Primal),+> Primal for ($($T,)+) {
            type Tangent = ($($T::Tangent,)+);
            type TangentRef = ($($T::Tangent,)+);
            type FData = ($($T::FData,)+);
            type RData = ($($T::RData,)+);
            type Shadow = ($($T::Shadow,)+);
            type Handle = ($($T::Handle,)+);

            fn zero_tangent(&self) -> Self::Tangent {
                ($(self.$i.zero_tangent(),)+)
            }
            fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent {
                ($(self.$i.random_tangent(rng),)+)
            }
            fn zero_fdata(&self) -> Self::FData {
                ($(self.$i.zero_fdata(),)+)
            }
            fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
                ($(self.$i.fdata_of_shadow(&shadow.$i),)+)
            }
            fn zero_rdata(&self) -> Self::RData {
                ($(self.$i.zero_rdata(),)+)
            }
            fn zero_shadow(&self) -> Self::Shadow {
                ($(self.$i.zero_shadow(),)+)
            }
            fn split_tangent(tangent: Self::Tangent) -> (Self::FData, Self::RData) {
                let parts = ($($T::split_tangent(tangent.$i),)+);
                (($(parts.$i.0,)+), ($(parts.$i.1,)+))
            }
            fn join_tangent(fdata: &Self::FData, rdata: Self::RData) -> Self::Tangent {
                ($($T::join_tangent(&fdata.$i, rdata.$i),)+)
            }
            fn tangent_to_shadow(tangent: Self::Tangent) -> Self::Shadow {
                ($($T::tangent_to_shadow(tangent.$i),)+)
            }
            fn shadow_to_tangent(shadow: &Self::Shadow) -> Self::Tangent {
                ($($T::shadow_to_tangent(&shadow.$i),)+)
            }
            #[inline(always)]
            fn tangent_ref(tangent: &Self::Tangent) -> &Self::Tangent {
                tangent
            }
            #[inline(always)]
            fn tangent_mut(tangent: &mut Self::Tangent) -> &mut Self::Tangent {
                tangent
            }
            fn to_handle(&self) -> Self::Handle {
                ($(self.$i.to_handle(),)+)
            }
            fn load_handle(&mut self, handle: &Self::Handle) {
                $( self.$i.load_handle(&handle.$i); )+
            }
            fn perturb(&mut self, tangent: &Self::Tangent, h: f64) {
                $( self.$i.perturb(&tangent.$i, h); )+
            }
            fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64 {
                0.0 $( + $T::inner_difference(&tangent.$i, &a.$i, &b.$i) )+
            }
            fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
                true $( && self.$i.approx_eq(&other.$i, rtol, atol) )+
            }
        }
    )+};
}

tuple_impls! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// The `Primal` methods that `Option<T>` and `Result<T, E>` share: both have the tangent,
/// fdata, rdata and shadow `Option<T::..>` (an error has no derivative).
macro_rules! option_like_common {
    () => {
        fn split_tangent(tangent: Self::Tangent) -> (Self::FData, Self::RData) {
            tangent.map(T::split_tangent).unzip()
        }
        fn join_tangent(fdata: &Self::FData, rdata: Self::RData) -> Self::Tangent {
            match (fdata, rdata) {
                (Some(f), Some(r)) => Some(T::join_tangent(f, r)),
                _ => None,
            }
        }
        fn tangent_to_shadow(tangent: Self::Tangent) -> Self::Shadow {
            tangent.map(T::tangent_to_shadow)
        }
        fn shadow_to_tangent(shadow: &Self::Shadow) -> Self::Tangent {
            shadow.as_ref().map(T::shadow_to_tangent)
        }
        #[inline(always)]
        fn tangent_ref(tangent: &Self::Tangent) -> &Self::Tangent {
            tangent
        }
        #[inline(always)]
        fn tangent_mut(tangent: &mut Self::Tangent) -> &mut Self::Tangent {
            tangent
        }
        fn to_handle(&self) -> Self::Handle {
            SharedRef::new(self.clone())
        }
        fn load_handle(&mut self, handle: &Self::Handle) {
            handle.with(|v| self.clone_from(v))
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Option (the result of `Vec::pop`).

impl<T: TangentSpace> TangentSpace for Option<T> {
    fn increment(&mut self, other: &Self) {
        match (self.as_mut(), other) {
            (Some(a), Some(b)) => a.increment(b),
            (None, Some(b)) => *self = Some(b.clone()),
            _ => {}
        }
    }
    fn inner(&self, other: &Self) -> f64 {
        match (self, other) {
            (Some(a), Some(b)) => a.inner(b),
            _ => 0.0,
        }
    }
    fn scale(&mut self, a: f64) {
        if let Some(x) = self {
            x.scale(a)
        }
    }
    fn settle(&mut self) {
        if let Some(x) = self {
            x.settle()
        }
    }
}

impl<T: FData> FData for Option<T> {
    fn increment_from(&self, other: &Self) {
        if let (Some(a), Some(b)) = (self, other) {
            a.increment_from(b)
        }
    }
}

impl<T: Primal + Clone> Primal for Option<T> {
    type Tangent = Option<T::Tangent>;
    type TangentRef = Option<T::Tangent>;
    type FData = Option<T::FData>;
    type RData = Option<T::RData>;
    type Shadow = Option<T::Shadow>;
    type Handle = SharedRef<Option<T>>;

    fn zero_tangent(&self) -> Self::Tangent {
        self.as_ref().map(Primal::zero_tangent)
    }
    fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent {
        self.as_ref().map(|x| x.random_tangent(rng))
    }
    fn zero_fdata(&self) -> Self::FData {
        self.as_ref().map(Primal::zero_fdata)
    }
    fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
        match (self, shadow) {
            (Some(x), Some(s)) => Some(x.fdata_of_shadow(s)),
            _ => self.zero_fdata(),
        }
    }
    fn zero_rdata(&self) -> Self::RData {
        self.as_ref().map(Primal::zero_rdata)
    }
    fn zero_shadow(&self) -> Self::Shadow {
        self.as_ref().map(Primal::zero_shadow)
    }
    option_like_common!();
    fn perturb(&mut self, tangent: &Self::Tangent, h: f64) {
        if let (Some(x), Some(t)) = (self, tangent) {
            x.perturb(t, h)
        }
    }
    fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64 {
        match (tangent, a, b) {
            (Some(t), Some(a), Some(b)) => T::inner_difference(t, a, b),
            (_, None, None) => 0.0,
            _ => f64::NAN,
        }
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.approx_eq(b, rtol, atol),
            (None, None) => true,
            _ => false,
        }
    }
}

impl<T: Primal + Clone, const N: usize> crate::tangent::FromHandle for [T; N] {
    fn from_handle(handle: &SharedVec<T>) -> [T; N] {
        vec_to_array(handle.with(<[T]>::to_vec))
    }
}

impl<T: Primal + Clone> crate::tangent::FromHandle for Option<T> {
    fn from_handle(handle: &SharedRef<Option<T>>) -> Option<T> {
        handle.with(Option::clone)
    }
}

// ---------------------------------------------------------------------------------------------
// Result: the tangent of the `Ok` value, if there is one. An error carries no derivative (a
// gradient of a function that failed is the error itself), so `E` needs no tangent: any error
// type will do.

impl<T: Primal + Clone, E: Clone + std::fmt::Debug + 'static> Primal for Result<T, E> {
    type Tangent = Option<T::Tangent>;
    type TangentRef = Option<T::Tangent>;
    type FData = Option<T::FData>;
    type RData = Option<T::RData>;
    type Shadow = Option<T::Shadow>;
    type Handle = SharedRef<Result<T, E>>;

    fn zero_tangent(&self) -> Self::Tangent {
        self.as_ref().ok().map(Primal::zero_tangent)
    }
    fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent {
        self.as_ref().ok().map(|x| x.random_tangent(rng))
    }
    fn zero_fdata(&self) -> Self::FData {
        self.as_ref().ok().map(Primal::zero_fdata)
    }
    fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
        match (self, shadow) {
            (Ok(x), Some(s)) => Some(x.fdata_of_shadow(s)),
            _ => self.zero_fdata(),
        }
    }
    fn zero_rdata(&self) -> Self::RData {
        self.as_ref().ok().map(Primal::zero_rdata)
    }
    fn zero_shadow(&self) -> Self::Shadow {
        self.as_ref().ok().map(Primal::zero_shadow)
    }
    option_like_common!();
    fn perturb(&mut self, tangent: &Self::Tangent, h: f64) {
        if let (Ok(x), Some(t)) = (self, tangent) {
            x.perturb(t, h)
        }
    }
    fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64 {
        match (tangent, a, b) {
            (Some(t), Ok(a), Ok(b)) => T::inner_difference(t, a, b),
            (_, Err(a), Err(b)) if same_error(a, b) => 0.0,
            _ => f64::NAN,
        }
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        match (self, other) {
            (Ok(a), Ok(b)) => a.approx_eq(b, rtol, atol),
            (Err(a), Err(b)) => same_error(a, b),
            _ => false,
        }
    }
}

impl<T: Primal + Clone, E: Clone + std::fmt::Debug + 'static> crate::tangent::FromHandle
    for Result<T, E>
{
    fn from_handle(handle: &SharedRef<Result<T, E>>) -> Result<T, E> {
        handle.with(Result::clone)
    }
}

/// Two errors are the same when they print the same (`Debug`): error types need not be
/// `PartialEq`.
fn same_error<E: std::fmt::Debug>(a: &E, b: &E) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

// ---------------------------------------------------------------------------------------------
// Box: the tangent, fdata, rdata and shadow of what it holds.

impl<T: Primal + Clone> Primal for Box<T> {
    type Tangent = T::Tangent;
    type TangentRef = T::TangentRef;
    type FData = T::FData;
    type RData = T::RData;
    type Shadow = T::Shadow;
    type Handle = T::Handle;

    fn zero_tangent(&self) -> Self::Tangent {
        (**self).zero_tangent()
    }
    fn random_tangent(&self, rng: &mut TestRng) -> Self::Tangent {
        (**self).random_tangent(rng)
    }
    fn zero_fdata(&self) -> Self::FData {
        (**self).zero_fdata()
    }
    fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
        (**self).fdata_of_shadow(shadow)
    }
    fn zero_rdata(&self) -> Self::RData {
        (**self).zero_rdata()
    }
    fn zero_shadow(&self) -> Self::Shadow {
        (**self).zero_shadow()
    }
    fn split_tangent(tangent: Self::Tangent) -> (Self::FData, Self::RData) {
        T::split_tangent(tangent)
    }
    fn join_tangent(fdata: &Self::FData, rdata: Self::RData) -> Self::Tangent {
        T::join_tangent(fdata, rdata)
    }
    fn tangent_to_shadow(tangent: Self::Tangent) -> Self::Shadow {
        T::tangent_to_shadow(tangent)
    }
    fn shadow_to_tangent(shadow: &Self::Shadow) -> Self::Tangent {
        T::shadow_to_tangent(shadow)
    }
    fn tangent_ref(tangent: &Self::Tangent) -> &Self::TangentRef {
        T::tangent_ref(tangent)
    }
    fn tangent_mut(tangent: &mut Self::Tangent) -> &mut Self::TangentRef {
        T::tangent_mut(tangent)
    }
    fn to_handle(&self) -> Self::Handle {
        (**self).to_handle()
    }
    fn load_handle(&mut self, handle: &Self::Handle) {
        (**self).load_handle(handle)
    }
    fn perturb(&mut self, tangent: &Self::Tangent, h: f64) {
        (**self).perturb(tangent, h)
    }
    fn inner_difference(tangent: &Self::Tangent, a: &Self, b: &Self) -> f64 {
        T::inner_difference(tangent, a, b)
    }
    fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
        (**self).approx_eq(other, rtol, atol)
    }
}
