//! Generated rules compile warning-free under `#![deny(warnings)]`.
#![deny(warnings, missing_docs)]

use mooncake_runtime::prelude::*;

/// A documented function with loops, branches, calls and a slice argument.
#[differentiable]
pub fn f(x: &[f64], y: f64) -> f64 {
    let mut s = 0.0;
    for (i, v) in x.iter().enumerate() {
        if *v > 0.0 {
            s += v.sin() * y + (i as f64);
        } else {
            s -= g(*v);
        }
    }
    s
}

/// A helper.
#[differentiable]
pub fn g(x: f64) -> f64 {
    x * x
}

fn main() {
    let d = f_frule(Dual::new(&[1.0, -2.0][..], &[1.0, 0.0][..]), Dual::new(2.0, 0.0));
    assert!((d.tangent - 2.0 * 1.0_f64.cos()).abs() < 1e-12);
}
