//! [`SlotValues`]: the tuple of values a rule test owns (one per distinct argument), and the
//! component-wise operations the harness needs on it.

use crate::rng::TestRng;
use crate::tangent::{FData, Primal, TangentSpace};
use std::fmt::Debug;

/// The values a rule test owns, one *slot* per distinct argument (arguments that alias, such as
/// `f(&x, &x)`, share one slot). Implemented for tuples of 1 to 8 primal values.
///
/// Every method that takes `k` acts on slot `k` only.
pub trait SlotValues: Clone {
    /// The tangents of all slots.
    type Tangents: Clone + Debug;
    /// The shadows of all slots (their fdata when seen through a reference).
    type Shadows;
    /// The handles of all slots (their representation behind `&mut` in reverse mode).
    type Handles;
    /// The fdata of all slots when passed by value.
    type FDatas;
    /// The number of slots.
    const LEN: usize;

    /// Random tangents for every slot.
    fn random_tangents(&self, rng: &mut TestRng) -> Self::Tangents;
    /// Zero tangents for every slot.
    fn zero_tangents(&self) -> Self::Tangents;
    /// `t` with every slot but `k` scaled to zero.
    fn restrict(t: &Self::Tangents, k: usize) -> Self::Tangents;
    /// Steps every slot along `t`: `self += h * t`.
    fn perturb(&mut self, t: &Self::Tangents, h: f64);
    /// `<t_k, a_k - b_k>`.
    fn inner_difference(t: &Self::Tangents, a: &Self, b: &Self, k: usize) -> f64;
    /// `<a_k, b_k>`.
    fn inner(a: &Self::Tangents, b: &Self::Tangents, k: usize) -> f64;
    /// `a_k += b_k`.
    fn increment(a: &mut Self::Tangents, b: &Self::Tangents, k: usize);
    /// Whether slot `k` of `a` and `b` agree.
    fn approx_eq(a: &Self, b: &Self, k: usize, rtol: f64, atol: f64) -> bool;
    /// Slot `k`, formatted.
    fn debug(&self, k: usize) -> String;
    /// Tangent `k`, formatted.
    fn debug_tangent(t: &Self::Tangents, k: usize) -> String;
    /// New handles holding copies of every slot.
    fn to_handles(&self) -> Self::Handles;
    /// Overwrites every slot with the value its handle holds.
    fn load_handles(&mut self, handles: &Self::Handles);
    /// Fresh zero shadows for every slot.
    fn zero_shadows(&self) -> Self::Shadows;
    /// Adds `t_k` into shadow `k`, for every `k` with `mask[k]`.
    fn seed_shadows(shadows: &Self::Shadows, t: &Self::Tangents, mask: &[bool]);
    /// Copies of the tangents the shadows hold.
    fn shadow_tangents(shadows: &Self::Shadows) -> Self::Tangents;
    /// Zero fdata for every slot.
    fn zero_fdatas(&self) -> Self::FDatas;
}

macro_rules! slot_values {
    ($( $len:literal: ($($T:ident $i:tt),+) )+) => {$(
        impl<$($T: Primal + Clone + Debug),+> SlotValues for ($($T,)+) {
            type Tangents = ($($T::Tangent,)+);
            type Shadows = ($($T::Shadow,)+);
            type Handles = ($($T::Handle,)+);
            type FDatas = ($($T::FData,)+);
            const LEN: usize = $len;

            fn random_tangents(&self, rng: &mut TestRng) -> Self::Tangents {
                ($(self.$i.random_tangent(rng),)+)
            }
            fn zero_tangents(&self) -> Self::Tangents {
                ($(self.$i.zero_tangent(),)+)
            }
            fn restrict(t: &Self::Tangents, k: usize) -> Self::Tangents {
                let mut t = t.clone();
                $( if k != $i { t.$i.scale(0.0); } )+
                t
            }
            fn perturb(&mut self, t: &Self::Tangents, h: f64) {
                $( self.$i.perturb(&t.$i, h); )+
            }
            fn inner_difference(t: &Self::Tangents, a: &Self, b: &Self, k: usize) -> f64 {
                match k {
                    $( $i => $T::inner_difference(&t.$i, &a.$i, &b.$i), )+
                    _ => 0.0,
                }
            }
            fn inner(a: &Self::Tangents, b: &Self::Tangents, k: usize) -> f64 {
                match k {
                    $( $i => a.$i.inner(&b.$i), )+
                    _ => 0.0,
                }
            }
            fn increment(a: &mut Self::Tangents, b: &Self::Tangents, k: usize) {
                match k {
                    $( $i => a.$i.increment(&b.$i), )+
                    _ => {}
                }
            }
            fn approx_eq(a: &Self, b: &Self, k: usize, rtol: f64, atol: f64) -> bool {
                match k {
                    $( $i => a.$i.approx_eq(&b.$i, rtol, atol), )+
                    _ => true,
                }
            }
            fn debug(&self, k: usize) -> String {
                match k {
                    $( $i => format!("{:?}", self.$i), )+
                    _ => String::new(),
                }
            }
            fn debug_tangent(t: &Self::Tangents, k: usize) -> String {
                match k {
                    $( $i => format!("{:?}", t.$i), )+
                    _ => String::new(),
                }
            }
            fn to_handles(&self) -> Self::Handles {
                ($(self.$i.to_handle(),)+)
            }
            fn load_handles(&mut self, handles: &Self::Handles) {
                $( self.$i.load_handle(&handles.$i); )+
            }
            fn zero_shadows(&self) -> Self::Shadows {
                ($(self.$i.zero_shadow(),)+)
            }
            fn seed_shadows(shadows: &Self::Shadows, t: &Self::Tangents, mask: &[bool]) {
                $(
                    if mask.get($i).copied().unwrap_or(false) {
                        shadows.$i.increment_from(&$T::tangent_to_shadow(t.$i.clone()));
                    }
                )+
            }
            fn shadow_tangents(shadows: &Self::Shadows) -> Self::Tangents {
                ($($T::shadow_to_tangent(&shadows.$i),)+)
            }
            fn zero_fdatas(&self) -> Self::FDatas {
                ($(self.$i.zero_fdata(),)+)
            }
        }
    )+};
}

slot_values! {
    1: (A 0)
    2: (A 0, B 1)
    3: (A 0, B 1, C 2)
    4: (A 0, B 1, C 2, D 3)
    5: (A 0, B 1, C 2, D 3, E 4)
    6: (A 0, B 1, C 2, D 3, E 4, F 5)
    7: (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    8: (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}
