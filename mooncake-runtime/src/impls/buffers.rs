//! Buffers: `Vec<T>` and `[T]`. Address-identified: the tangent is a `Vec` of element tangents,
//! the fdata a shared shadow ([`SharedVec`]) of the same length, the rdata `NoRData`.

use crate::dual::NoRData;
use crate::rng::TestRng;
use crate::shared::SharedVec;
use crate::tangent::{Primal, ShapeMismatch, TangentSpace};

impl<T: TangentSpace> TangentSpace for Vec<T> {
    fn increment(&mut self, other: &Self) {
        assert_eq!(
            self.len(),
            other.len(),
            "mooncake: cannot add a tangent of length {} to one of length {}",
            other.len(),
            self.len()
        );
        self.iter_mut().zip(other).for_each(|(a, b)| a.increment(b));
    }
    fn inner(&self, other: &Self) -> f64 {
        if self.len() != other.len() {
            return f64::NAN;
        }
        self.iter().zip(other).map(|(a, b)| a.inner(b)).sum()
    }
    fn scale(&mut self, a: f64) {
        self.iter_mut().for_each(|x| x.scale(a));
    }
    fn settle(&mut self) {
        self.iter_mut().for_each(|x| x.settle());
    }
}

fn zeros<T: Primal>(xs: &[T]) -> Vec<T::Tangent> {
    xs.iter().map(Primal::zero_tangent).collect()
}

macro_rules! buffer_primal_common {
    ($elem:ident) => {
        type FData = SharedVec<$elem::Tangent>;
        type RData = NoRData;
        type Shadow = SharedVec<$elem::Tangent>;
        type Handle = SharedVec<$elem>;

        fn zero_tangent(&self) -> Vec<$elem::Tangent> {
            zeros(self)
        }
        fn random_tangent(&self, rng: &mut TestRng) -> Vec<$elem::Tangent> {
            self.iter().map(|x| x.random_tangent(rng)).collect()
        }
        fn zero_fdata(&self) -> Self::FData {
            SharedVec::from_vec(zeros(self))
        }
        #[inline(always)]
        fn fdata_of_shadow(&self, shadow: &Self::Shadow) -> Self::FData {
            shadow.clone()
        }
        #[inline(always)]
        fn zero_rdata(&self) -> NoRData {
            NoRData
        }
        fn zero_shadow(&self) -> Self::Shadow {
            let shadow = SharedVec::from_vec(zeros(self));
            shadow.mark_zero();
            shadow
        }
        fn split_tangent(tangent: Vec<$elem::Tangent>) -> (Self::FData, NoRData) {
            (SharedVec::from_vec(tangent), NoRData)
        }
        fn join_tangent(fdata: &Self::FData, _: NoRData) -> Vec<$elem::Tangent> {
            fdata.with(|s| s.to_vec())
        }
        fn tangent_to_shadow(tangent: Vec<$elem::Tangent>) -> Self::Shadow {
            SharedVec::from_vec(tangent)
        }
        fn shadow_to_tangent(shadow: &Self::Shadow) -> Vec<$elem::Tangent> {
            shadow.with(|s| s.to_vec())
        }
        fn to_handle(&self) -> SharedVec<$elem> {
            SharedVec::from_vec(self.to_vec())
        }
        fn reset_shadow(&self, shadow: &mut Self::Shadow) -> Result<(), ShapeMismatch> {
            shadow.with_mut(|v| {
                if v.len() != self.len() {
                    return Err(ShapeMismatch { prepared: v.len(), given: self.len() });
                }
                v.iter_mut().zip(self.iter()).for_each(|(d, p)| *d = p.zero_tangent());
                Ok(())
            })?;
            shadow.mark_zero();
            Ok(())
        }
        fn shadow_into_tangent(shadow: &Self::Shadow, out: &mut Vec<$elem::Tangent>) {
            shadow.with_vec(|s| out.clone_from(s))
        }
        fn take_shadow_into_tangent(shadow: &Self::Shadow, out: &mut Vec<$elem::Tangent>) {
            shadow.with_mut(|s| {
                if s.len() == out.len() {
                    std::mem::swap(s, out);
                } else {
                    out.clone_from(s);
                }
            })
        }
        fn perturb(&mut self, tangent: &Vec<$elem::Tangent>, h: f64) {
            assert_eq!(self.len(), tangent.len(), "mooncake: tangent of the wrong length");
            self.iter_mut().zip(tangent).for_each(|(x, t)| x.perturb(t, h));
        }
        fn inner_difference(tangent: &Vec<$elem::Tangent>, a: &Self, b: &Self) -> f64 {
            if a.len() != b.len() || a.len() != tangent.len() {
                return f64::NAN;
            }
            tangent
                .iter()
                .zip(a.iter().zip(b.iter()))
                .map(|(t, (a, b))| $elem::inner_difference(t, a, b))
                .sum()
        }
        fn approx_eq(&self, other: &Self, rtol: f64, atol: f64) -> bool {
            self.len() == other.len()
                && self.iter().zip(other.iter()).all(|(a, b)| a.approx_eq(b, rtol, atol))
        }
    };
}

impl<T: Primal + Clone> Primal for Vec<T> {
    type Tangent = Vec<T::Tangent>;
    type TangentRef = Vec<T::Tangent>;
    buffer_primal_common!(T);

    #[inline(always)]
    fn tangent_ref(tangent: &Vec<T::Tangent>) -> &Vec<T::Tangent> {
        tangent
    }
    #[inline(always)]
    fn tangent_mut(tangent: &mut Vec<T::Tangent>) -> &mut Vec<T::Tangent> {
        tangent
    }
    fn load_handle(&mut self, handle: &SharedVec<T>) {
        handle.with(|s| self.clone_from_slice_or_resize(s));
    }
    fn reset_handle(&self, handle: &mut SharedVec<T>) -> Result<(), ShapeMismatch> {
        // A `Vec` behind `&mut` may change length (`push`): the handle adopts the new one.
        handle.with_mut(|h| h.clone_from_slice_or_resize(self));
        Ok(())
    }
}

impl<T: Primal + Clone> Primal for [T] {
    type Tangent = Vec<T::Tangent>;
    type TangentRef = [T::Tangent];
    buffer_primal_common!(T);

    #[inline(always)]
    fn tangent_ref(tangent: &Vec<T::Tangent>) -> &[T::Tangent] {
        tangent
    }
    #[inline(always)]
    fn tangent_mut(tangent: &mut Vec<T::Tangent>) -> &mut [T::Tangent] {
        tangent
    }
    fn load_handle(&mut self, handle: &SharedVec<T>) {
        handle.with(|s| {
            assert_eq!(
                self.len(),
                s.len(),
                "mooncake: a slice argument cannot change length (handle holds {} elements, \
                 the slice {})",
                s.len(),
                self.len()
            );
            self.clone_from_slice(s)
        });
    }
    fn reset_handle(&self, handle: &mut SharedVec<T>) -> Result<(), ShapeMismatch> {
        handle.with_mut(|h| {
            if h.len() != self.len() {
                return Err(ShapeMismatch { prepared: h.len(), given: self.len() });
            }
            h.clone_from_slice(self);
            Ok(())
        })
    }
}

/// `Vec::clone_from_slice` that also adopts the source's length.
trait CloneFromSliceOrResize<T> {
    fn clone_from_slice_or_resize(&mut self, src: &[T]);
}

impl<T: Clone> CloneFromSliceOrResize<T> for Vec<T> {
    fn clone_from_slice_or_resize(&mut self, src: &[T]) {
        self.clear();
        self.extend_from_slice(src);
    }
}

impl<T: Primal + Clone> crate::tangent::FromHandle for Vec<T> {
    fn from_handle(handle: &SharedVec<T>) -> Vec<T> {
        handle.with(<[T]>::to_vec)
    }
}
