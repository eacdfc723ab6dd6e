//! The prepared form of `value_and_gradient!`: a [`GradientCache`] keeps the shadows, handles
//! and gradients of one function's arguments between calls, so that repeated gradients at the
//! same sizes allocate nothing after the first (the reverse rules' tapes come from thread-local
//! pools, see `ARCHITECTURE.md`).

use crate::tangent::{Primal, ShapeMismatch};
use std::any::Any;
use std::marker::PhantomData;

/// Buffers reused by `value_and_gradient!(f(..), cache = &mut cache)` across gradients of one
/// function at fixed argument sizes.
///
/// The first call fixes the function and every argument's size; later calls reuse the shadows
/// (zeroed in place), the handles of `&mut` arguments and the gradients, which are returned
/// borrowed from the cache.
///
/// ```
/// use mooncake_runtime::prelude::*;
///
/// #[differentiable]
/// fn energy(x: &[f64], k: f64) -> f64 {
///     let mut e = 0.0;
///     for i in 1..x.len() {
///         let d = x[i] - x[i - 1];
///         e += k * d * d;
///     }
///     e
/// }
///
/// let mut cache = GradientCache::new();
/// let mut x = vec![0.0, 1.0, 3.0];
/// for _ in 0..100 {
///     let (_, (gx, _)) = value_and_gradient!(energy(&x, 0.5), cache = &mut cache);
///     let step: Vec<f64> = gx.iter().map(|g| 0.1 * g).collect();
///     x.iter_mut().zip(step).for_each(|(x, s)| *x -= s);
/// }
/// let (e, _) = value_and_gradient!(energy(&x, 0.5), cache = &mut cache);
/// assert!(e < 1e-6);
/// ```
///
/// # Panics
/// A call with another function, or with an argument of another size than the first call's, is
/// refused with a message naming the argument and both sizes: use a new cache for other sizes.
#[derive(Default)]
pub struct GradientCache {
    function: Option<&'static str>,
    slots: Vec<Option<Box<dyn Any>>>,
}

impl std::fmt::Debug for GradientCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradientCache")
            .field("function", &self.function)
            .field("arguments", &self.slots.len())
            .finish()
    }
}

/// The buffers of an argument behind `&`: its shadow and its gradient.
struct RefSlot<S, T> {
    shadow: S,
    gradient: T,
    /// Whether `shadow` was made by `Primal::constant_shadow` (for a `Const(&x)` argument): a
    /// call that wants the gradient replaces it with a zero shadow.
    constant: bool,
}

/// The buffers of an argument behind `&mut`: its handle, its shadow and its gradient.
struct MutSlot<H, S, T> {
    handle: H,
    shadow: S,
    gradient: T,
}

/// The gradient of an argument passed by value.
struct ValueSlot<T> {
    gradient: T,
}

impl GradientCache {
    /// An empty cache; the first gradient computed with it prepares it.
    pub fn new() -> Self {
        GradientCache::default()
    }

    /// Whether a gradient has been computed with this cache (which fixed the sizes).
    pub fn is_prepared(&self) -> bool {
        self.function.is_some()
    }

    /// Starts a gradient of `function` (its path as written) with `n` arguments.
    #[doc(hidden)]
    pub fn begin(&mut self, function: &'static str, n: usize) -> &mut Self {
        match self.function {
            None => {
                self.function = Some(function);
                self.slots.resize_with(n, || None);
            }
            Some(f) if f == function && self.slots.len() == n => {}
            Some(f) => panic!(
                "mooncake: this GradientCache was prepared for `{f}`, not `{function}`: use one \
                 cache per function"
            ),
        }
        self
    }

    fn slot<S: Any>(&mut self, k: usize, init: impl FnOnce() -> S) -> &mut S {
        let function = self.function.unwrap_or("?");
        let slot = self.slots[k].get_or_insert_with(|| Box::new(init()));
        match slot.downcast_mut::<S>() {
            Some(s) => s,
            None => panic!(
                "mooncake: argument {} of `{function}` has another type, or is passed another \
                 way (`&`, `&mut`, by value), than when this GradientCache was prepared: use one \
                 cache per call site",
                k + 1
            ),
        }
    }

    fn refuse(&self, k: usize, e: ShapeMismatch) -> ! {
        panic!(
            "mooncake: argument {} of `{}` is {e}; a GradientCache serves one set of sizes: \
             use a new cache (GradientCache::new()) for other sizes",
            k + 1,
            self.function.unwrap_or("?")
        )
    }

    /// The shadow of argument `k`, passed as `&x`: zeroed in place.
    #[doc(hidden)]
    pub fn ref_shadow<P>(&mut self, k: usize, x: &P) -> P::Shadow
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        self.ref_slot_shadow(k, x, false)
    }

    /// The shadow of argument `k`, passed as `Const(&x)`: made by `Primal::constant_shadow`
    /// (or the zero shadow of an earlier call that wanted the gradient), reset in place (its
    /// shape checked) on later calls.
    #[doc(hidden)]
    pub fn ref_constant_shadow<P>(&mut self, k: usize, x: &P) -> P::Shadow
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        self.ref_slot_shadow(k, x, true)
    }

    /// The shadow of argument `k` behind `&`, for a call that passes it `Const(..)` or not: made
    /// at the first call, then reset in place. A constant shadow made for `Const(..)` gives way
    /// to a zero one when a later call wants the gradient.
    fn ref_slot_shadow<P>(&mut self, k: usize, x: &P, constant: bool) -> P::Shadow
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        let mut fresh = false;
        let slot = self.slot(k, || {
            fresh = true;
            let shadow = if constant { x.constant_shadow() } else { x.zero_shadow() };
            RefSlot { shadow, gradient: x.zero_tangent(), constant }
        });
        if fresh {
            return slot.shadow.clone();
        }
        if slot.constant && !constant {
            slot.shadow = x.zero_shadow();
            slot.constant = false;
        }
        match x.reset_shadow(&mut slot.shadow) {
            Ok(()) => slot.shadow.clone(),
            Err(e) => self.refuse(k, e),
        }
    }

    /// The handle (holding a copy of `x`) and the zeroed shadow of argument `k`, passed as
    /// `&mut x`.
    #[doc(hidden)]
    pub fn mut_handle<P>(&mut self, k: usize, x: &P) -> (P::Handle, P::Shadow)
    where
        P: Primal + ?Sized,
        P::Handle: 'static,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        let mut fresh = false;
        let slot = self.slot(k, || {
            fresh = true;
            MutSlot { handle: x.to_handle(), shadow: x.zero_shadow(), gradient: x.zero_tangent() }
        });
        if fresh {
            return (slot.handle.clone(), slot.shadow.clone());
        }
        match x.reset_handle(&mut slot.handle).and_then(|()| x.reset_shadow(&mut slot.shadow)) {
            Ok(()) => (slot.handle.clone(), slot.shadow.clone()),
            Err(e) => self.refuse(k, e),
        }
    }

    /// Moves the gradient of argument `k` (passed as `&x`) out of its shadow, into the cache
    /// (a buffer's by exchanging memory: the shadow is zeroed at the next call anyway).
    #[doc(hidden)]
    pub fn ref_done<P>(&mut self, k: usize, _: &P)
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        let slot = self.slot::<RefSlot<P::Shadow, P::Tangent>>(k, || unreachable!());
        P::take_shadow_into_tangent(&slot.shadow, &mut slot.gradient);
    }

    /// Moves the gradient of argument `k` (passed as `&mut x`) out of its shadow, into the
    /// cache, and copies the value on entry back into `x`.
    #[doc(hidden)]
    pub fn mut_done<P>(&mut self, k: usize, x: &mut P)
    where
        P: Primal + ?Sized,
        P::Handle: 'static,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        let slot = self.slot::<MutSlot<P::Handle, P::Shadow, P::Tangent>>(k, || unreachable!());
        P::take_shadow_into_tangent(&slot.shadow, &mut slot.gradient);
        x.load_handle(&slot.handle);
    }

    /// Stores the gradient of argument `k`, passed by value: its fdata joined with its rdata.
    #[doc(hidden)]
    pub fn value_done<P>(
        &mut self,
        k: usize,
        _: PhantomData<fn() -> P>,
        fdata: &P::FData,
        rdata: P::RData,
    ) where
        P: Primal,
        P::Tangent: 'static,
    {
        let mut gradient = P::join_tangent(fdata, rdata);
        crate::tangent::TangentSpace::settle(&mut gradient);
        if self.slots[k].is_none() {
            self.slots[k] = Some(Box::new(ValueSlot { gradient }));
        } else {
            self.slot::<ValueSlot<P::Tangent>>(k, || unreachable!()).gradient = gradient;
        }
    }

    /// The gradient of argument `k`, passed as `&x`.
    #[doc(hidden)]
    pub fn ref_gradient<P>(&self, k: usize, _: &P) -> &P::Tangent
    where
        P: Primal + ?Sized,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        &self.get::<RefSlot<P::Shadow, P::Tangent>>(k).gradient
    }

    /// The gradient of argument `k`, passed as `&mut x`.
    #[doc(hidden)]
    pub fn mut_gradient<P>(&self, k: usize, _: &P) -> &P::Tangent
    where
        P: Primal + ?Sized,
        P::Handle: 'static,
        P::Shadow: 'static,
        P::Tangent: 'static,
    {
        &self.get::<MutSlot<P::Handle, P::Shadow, P::Tangent>>(k).gradient
    }

    /// The gradient of argument `k`, passed by value.
    #[doc(hidden)]
    pub fn value_gradient<P>(&self, k: usize, _: PhantomData<fn() -> P>) -> &P::Tangent
    where
        P: Primal,
        P::Tangent: 'static,
    {
        &self.get::<ValueSlot<P::Tangent>>(k).gradient
    }

    fn get<S: Any>(&self, k: usize) -> &S {
        match self.slots[k].as_ref().and_then(|s| s.downcast_ref::<S>()) {
            Some(s) => s,
            None => unreachable!("mooncake: a GradientCache slot was not prepared"),
        }
    }
}
