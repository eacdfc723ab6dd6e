//! A user type's methods named like the buffers' (`push`, `fill`, `len`, `clear`): reverse mode
//! took them for the runtime's buffer rules by name, and failed with type errors inside its
//! expansion (`CoDual<Hist, HistFData>: Hold`, "reads `CoDual<&Hist, ..>` as a buffer").
//! Lowering now marks such a call as a user method when its receiver is a user type's value, a
//! reference to one (`h: &Hist`, `self`), or a clone of one (`let mut g = h.clone();`), as it
//! already did for methods named like a number's (`c.abs()`). Found by probe programs (a
//! histogram, a ring buffer).

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// Values scaled by `k` as they are recorded.
#[derive(Tangent, Clone, Debug)]
pub struct Hist {
    /// The values.
    pub vals: Vec<f64>,
    /// The scale.
    pub k: f64,
}

#[differentiable]
impl Hist {
    fn push(&mut self, v: f64) {
        self.vals.push(self.k * v);
    }

    fn fill(&mut self, v: f64) {
        for i in 0..self.vals.len() {
            self.vals[i] = v * self.k;
        }
    }

    fn len(&self) -> usize {
        self.vals.len()
    }

    fn total(&self) -> f64 {
        let mut s = 0.0;
        for i in 0..self.len() {
            s += self.vals[i];
        }
        s
    }
}

#[differentiable]
fn pushed(h: &Hist, x: f64) -> f64 {
    let mut g = h.clone();
    g.push(x);
    g.push(x * x);
    g.total() * x + g.len() as f64
}

#[differentiable]
fn filled(h: &Hist, x: f64) -> f64 {
    let mut g = h.clone();
    g.fill(x);
    g.vals[0] + g.vals[1] * x + h.vals[0] * h.len() as f64
}

#[test]
fn user_methods_named_like_buffer_methods() {
    let h = Hist { vals: vec![0.5, 1.5], k: 2.0 };
    test_rule!(pushed(&h, 0.7));
    test_rule!(filled(&h, 0.7));
    // `pushed`: (0.5 + 1.5 + k x + k x²) x + 4.
    let (v, (gh, gx)) = value_and_gradient!(pushed(&h, 0.7));
    let (x, k) = (0.7, 2.0);
    assert_relative_eq!(v, (2.0 + k * x + k * x * x) * x + 4.0, max_relative = 1e-12);
    assert_relative_eq!(gx, 2.0 + 2.0 * k * x + 3.0 * k * x * x, max_relative = 1e-12);
    assert_relative_eq!(gh.k, x * x + x * x * x, max_relative = 1e-12);
    assert_eq!(gh.vals, vec![x, x]);
}
