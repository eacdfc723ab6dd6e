// A closure bound by `let` and handed to a plain function as a value: refused at the name, with
// what to write instead (it was called "not a local variable" before).
use mooncake_runtime::prelude::*;

fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    (0..n).map(|i| f(a + (i as f64 + 0.5) * h)).sum::<f64>() * h
}

#[differentiable]
fn expected_energy(k: f64) -> f64 {
    let f = |t: f64| (k * t).sin().powi(2);
    integrate(f, 0.0, 1.0, 100)
}

fn main() {}
