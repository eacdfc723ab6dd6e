//! Generated rules compile warning-free, public and private, used or not.
#![deny(warnings, missing_docs)]

use mooncake_runtime::prelude::*;

/// A count.
pub fn count_positive(x: &[f64]) -> usize {
    x.iter().filter(|v| **v > 0.0).count()
}

fn floor_of<T: Float>(x: T, unit: ()) -> T {
    let () = unit;
    x.floor()
}

fn nothing() {}

fn constant(_: f64) -> f64 {
    1.0
}

zero_adjoint! {
    pub fn count_positive(x: &[f64]) -> usize;
    fn floor_of<T: Float>(x: T, unit: ()) -> T;
    fn nothing();
    fn constant(_: f64) -> f64;
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[allow(clippy::type_complexity)]
fn dot_chainrule(a: &[f64], b: &[f64]) -> (f64, impl FnOnce(f64) -> (Vec<f64>, Vec<f64>) + use<>) {
    let (a, b) = (a.to_vec(), b.to_vec());
    (dot(&a, &b), move |g: f64| {
        (b.iter().map(|v| g * v).collect(), a.iter().map(|v| g * v).collect())
    })
}

from_rrule! {
    /// The reverse rule of `dot`.
    pub fn dot(a: &[f64], b: &[f64]) -> f64 => dot_chainrule;
}

#[differentiable]
fn uses(x: &[f64]) -> f64 {
    let n = count_positive(x);
    stop_gradient(n as f64) * x[0]
}

fn main() {
    let x = [1.0, 2.0];
    let _ = (floor_of::<f64>, nothing, constant, uses(&x), dot(&x, &x));
}
