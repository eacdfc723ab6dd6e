// Forms of the nested derivative macros that a #[differentiable] function refuses: the prepared
// form, a `&mut` argument, tangents given as one tuple variable, and a nested gradient in a
// function that is itself generic.
use mooncake_runtime::prelude::*;

#[differentiable]
fn energy<T: Float>(x: &[T]) -> T {
    x[0] * x[0] * x[0]
}

#[differentiable]
fn halve<T: Float>(x: &mut [T]) -> T {
    x[0] = x[0] * T::from_f64(0.5);
    x[0]
}

#[differentiable]
fn prepared(x: &[f64]) -> f64 {
    let mut cache = GradientCache::new();
    let (e, _) = value_and_gradient!(energy(x), cache = &mut cache);
    e
}

#[differentiable]
fn mutable(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    let (e, _) = value_and_gradient!(halve(&mut v));
    e
}

#[differentiable]
fn tangents_whole(x: &[f64], d: &[f64]) -> f64 {
    let t = (d.to_vec(),);
    let (_, slope) = value_and_derivative!(energy(x), t);
    slope
}

#[differentiable]
fn generic_outer<T: Float>(x: &[T]) -> T {
    let (e, (g,)) = value_and_gradient!(energy(x));
    e + g[0]
}

fn main() {}
