//! Derived forward-mode rules (`NAME_frule`), checked against finite differences by the test
//! utility in forward mode.

use mooncake_runtime::prelude::*;

#[differentiable]
fn branch(x: f64) -> f64 {
    if x > 0.0 { x.sin() } else { -x }
}

#[differentiable]
fn weighted_loop(x: &[f64], y: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 1.0 {
            continue;
        }
        s += x[i] * y;
    }
    s
}

#[test]
fn branch_forward() {
    test_rule!(branch(0.7), mode = forward);
    test_rule!(branch(-0.7), mode = forward);
}

#[test]
fn weighted_loop_forward() {
    let x = vec![0.5, 2.0, -0.25, 0.75];
    test_rule!(weighted_loop(&x, 1.5), mode = forward);
}
