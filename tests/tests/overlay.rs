//! `#[mooncake_overlay]`: rules derived from a second body that only AD sees.

use mooncake_runtime::prelude::*;

fn scale(x: f64) -> f64 {
    2.0 * x
}

// The seed's worked example: the overlay changes what AD sees, not the function.
#[mooncake_overlay]
fn scale(x: f64) -> f64 {
    3.0 * x
}

/// Written with a closure, which `#[differentiable]` refuses; the overlay computes the same
/// function in a form it accepts.
fn soft_clip(x: &[f64], limit: f64) -> f64 {
    let clip = |v: f64| limit * (v / limit).tanh();
    x.iter().map(|v| clip(*v)).sum()
}

#[mooncake_overlay]
fn soft_clip(x: &[f64], limit: f64) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += limit * (*v / limit).tanh();
    }
    s
}

/// Derived code calls the overlay's rules like any other rule.
#[differentiable]
fn uses_overlay(x: &[f64], a: f64) -> f64 {
    soft_clip(x, 2.0) * a + scale(a)
}

#[test]
fn the_seed_example() {
    assert_eq!(scale(5.0), 10.0);
    assert_eq!(value_and_gradient!(scale(5.0)), (15.0, (3.0,)));
    assert_eq!(value_and_derivative!(scale(5.0), (1.0,)), (15.0, 3.0));
}

#[test]
fn an_overlay_of_code_ad_cannot_read() {
    let x = vec![0.5, -3.0, 1.5];
    // The overlay computes the original function: its rules check out against it.
    test_rule!(soft_clip(&x, 2.0));
    let (v, (g, dl)) = value_and_gradient!(soft_clip(&x, 2.0));
    assert!((v - soft_clip(&x, 2.0)).abs() < 1e-12);
    for (gi, xi) in g.iter().zip(&x) {
        let t = (xi / 2.0_f64).tanh();
        assert!((gi - (1.0 - t * t)).abs() < 1e-12);
    }
    assert!(dl.is_finite());
}

#[test]
fn derived_code_uses_overlay_rules() {
    let x = vec![0.5, -3.0, 1.5];
    // `scale`'s overlay is 3a where the function is 2a: check against the overlay's maths.
    let (v, (_, da)) = value_and_gradient!(uses_overlay(&x, 0.7));
    // The function itself still computes with `scale`'s own body (2a).
    assert!((uses_overlay(&x, 0.7) - (soft_clip(&x, 2.0) * 0.7 + 1.4)).abs() < 1e-12);
    assert!((v - (soft_clip(&x, 2.0) * 0.7 + 2.1)).abs() < 1e-12);
    assert!((da - (soft_clip(&x, 2.0) + 3.0)).abs() < 1e-12);
}
