use mooncake_runtime::prelude::*;

#[derive(Tangent, Clone, Debug)]
enum Kernel { Weights(Vec<f64>), Gauss(f64) }

#[differentiable]
fn b1(k: &Kernel, x: &[f64]) -> f64 {
    match k {
        Kernel::Weights(w) => w.iter().zip(x).map(|(a, b)| a * b).sum(),
        Kernel::Gauss(h) => x.iter().map(|v| (-v * v / (h * h)).exp()).sum(),
    }
}

#[differentiable]
fn b2(o: &Option<f64>, x: f64) -> f64 {
    match o {
        Some(v) => v * x,
        None => x,
    }
}

#[test]
fn probe11() {
    test_rule!(b1(&Kernel::Gauss(0.7), &[0.1, 0.5][..]));
    test_rule!(b1(&Kernel::Weights(vec![0.3, 0.2]), &[0.1, 0.5][..]));
    test_rule!(b2(&Some(0.4), 0.5));
}
