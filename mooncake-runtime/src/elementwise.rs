//! [`ElementMap`]: a scalar function given to `m.map(..)` of a matrix or array in derived code,
//! as its forward rule.
//!
//! `#[differentiable]` turns `m.map(|v| v.max(0.0))` (nalgebra) or `a.mapv(f64::tanh)`
//! (ndarray) into a method `__map_elements` of the matrix whose argument is an `ElementMap`
//! holding the closure's forward rule, derived from the closure's body (written out as a nested
//! `fn` of one scalar). The rules of `map` apply it to each element: forward mode pushes each
//! element's tangent through it; reverse mode takes each element's derivative from it (a
//! tangent of one) in the forward pass and multiplies the result's cotangent by them in the
//! pullback. No element of the closure is taped or differentiated twice.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::ElementMap;
//!
//! #[differentiable]
//! fn softplus(v: f64) -> f64 {
//!     (1.0 + v.exp()).ln()
//! }
//!
//! let f = ElementMap::new(softplus_frule);
//! let (y, dy) = f.value_and_derivative(0.0);
//! assert!((y - 2.0_f64.ln()).abs() < 1e-15);
//! assert!((dy - 0.5).abs() < 1e-15); // the logistic function at 0
//! ```

use crate::dual::Dual;
use crate::float::Float;

/// The forward rule of a scalar function `F -> F`, applied element by element by the rules of
/// `map` (see the [module](self)).
pub struct ElementMap<F>(fn(Dual<F, F>) -> Dual<F, F>);

impl<F> Clone for ElementMap<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for ElementMap<F> {}

impl<F> std::fmt::Debug for ElementMap<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElementMap")
    }
}

impl<F: Float> ElementMap<F> {
    /// Wraps a forward rule (`NAME_frule` of a `#[differentiable]` function of one scalar).
    pub fn new(frule: fn(Dual<F, F>) -> Dual<F, F>) -> Self {
        ElementMap(frule)
    }

    /// The function's value and its derivative at `x`.
    #[inline]
    pub fn value_and_derivative(&self, x: F) -> (F, F) {
        let y = (self.0)(Dual::new(x, F::ONE));
        (y.primal, y.tangent)
    }

    /// The function's value at `x` and its tangent along `dx`.
    #[inline]
    pub fn push_forward(&self, x: F, dx: F) -> (F, F) {
        let y = (self.0)(Dual::new(x, dx));
        (y.primal, y.tangent)
    }
}
