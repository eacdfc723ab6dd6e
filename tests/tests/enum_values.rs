//! Enum values in derived rules (issue 14, items 6 and 7): `Option` and `Result` kept in
//! variables, passed, returned, built and taken apart by `match`, `if let`, `let .. else`,
//! `while let`, `?` and their methods, checked in both modes by `test_rule!`.

use mooncake_runtime::prelude::*;

#[differentiable]
fn safe_log(x: f64) -> Result<f64, String> {
    if x <= 0.0 {
        return Err(format!("log of {x}"));
    }
    Ok(x.ln())
}

#[differentiable]
fn twice_log(x: f64) -> Result<f64, String> {
    let y = safe_log(x)?;
    Ok(2.0 * y)
}

#[differentiable]
fn ratio(a: f64, b: f64) -> Option<f64> {
    if b == 0.0 { None } else { Some(a / b) }
}

#[differentiable]
fn ratio_or_zero(a: f64, b: f64) -> f64 {
    match ratio(a, b) {
        Some(r) => r * r,
        None => 0.0,
    }
}

#[test]
fn results_and_options() {
    test_rule!(twice_log(2.0));
    test_rule!(ratio_or_zero(1.5, 0.7));
    test_rule!(ratio(1.5, 0.7));
    let (y, (dx,)) = value_and_gradient!(twice_log(2.0)).unwrap();
    assert!((y - 2.0 * 2.0_f64.ln()).abs() < 1e-12);
    assert!((dx - 1.0).abs() < 1e-12);
    assert_eq!(value_and_gradient!(twice_log(-1.0)).unwrap_err(), "log of -1");
}
