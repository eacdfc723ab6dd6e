//! Quick start: the value of `f(x) = Σᵢ sin(xᵢ)·xᵢ₊₁ (+ a branch)`, its gradient by reverse
//! mode, its directional derivative by forward mode, and their agreement with central finite
//! differences. Exits non-zero if they disagree.
//!
//! Both modes are derived by `#[differentiable]`: `f_frule` (forward) and `f_rrule` (reverse).
//! The reverse pass is also composed by hand from the primitive rules (`index_rrule`,
//! `sin_rrule`, `mul_rrule`), to show what the derived rule does.
//!
//! Run with `cargo run --release --example quickstart`.

use mooncake_runtime::prelude::*;
use mooncake_runtime::rules::buffer::index_rrule;
use mooncake_runtime::rules::scalar::{mul_rrule, sin_rrule};

/// The function: a loop over a slice with a branch.
#[differentiable]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let term = x[i].sin() * x[i + 1];
        if term > 0.0 {
            s += term;
        } else {
            s += 0.5 * term;
        }
    }
    s
}

/// `(f(x), ∇f(x))` by reverse mode, composed by hand from primitive rules: each term's rules
/// run forward, and their pullbacks run backward, incrementing one shared shadow of `x`.
fn value_and_gradient_by_hand(x: &[f64]) -> (f64, Vec<f64>) {
    let shadow = SharedVec::zeros(x.len());
    let mut value = 0.0;
    let mut pullbacks: Vec<Box<dyn FnOnce(f64)>> = Vec::new();
    for i in 0..x.len() - 1 {
        let (a, pb_a) = index_rrule(CoDual::new(x, shadow.clone()), CoDual::new(i, NoFData));
        let (s, pb_s) = sin_rrule(a);
        let (b, pb_b) = index_rrule(CoDual::new(x, shadow.clone()), CoDual::new(i + 1, NoFData));
        let (term, pb_term) = mul_rrule(s, b);
        let weight = if term.primal > 0.0 { 1.0 } else { 0.5 };
        value += weight * term.primal;
        pullbacks.push(Box::new(move |dvalue: f64| {
            let (ds, db) = pb_term(weight * dvalue);
            pb_b(db);
            let (da,) = pb_s(ds);
            pb_a(da);
        }));
    }
    for pullback in pullbacks.into_iter().rev() {
        pullback(1.0);
    }
    (value, shadow.to_vec())
}

fn central_difference(x: &[f64], direction: &[f64], h: f64) -> f64 {
    let plus: Vec<f64> = x.iter().zip(direction).map(|(a, d)| a + h * d).collect();
    let minus: Vec<f64> = x.iter().zip(direction).map(|(a, d)| a - h * d).collect();
    (f(&plus) - f(&minus)) / (2.0 * h)
}

fn main() {
    let x = vec![0.5, -1.25, 2.0, 0.75];
    let v = vec![1.0, 0.5, -0.25, 2.0];
    let h = 1e-6;

    let (value, (gradient,)) = value_and_gradient!(f(&x));
    let (hand_value, hand_gradient) = value_and_gradient_by_hand(&x);
    let fd_gradient: Vec<f64> = (0..x.len())
        .map(|i| {
            let mut e = vec![0.0; x.len()];
            e[i] = 1.0;
            central_difference(&x, &e, h)
        })
        .collect();
    let (forward_value, directional) = value_and_derivative!(f(&x), (v.clone(),));
    let projected: f64 = gradient.iter().zip(&v).map(|(g, d)| g * d).sum();
    let fd_directional = central_difference(&x, &v, h);

    let max_gradient_error =
        gradient.iter().zip(&fd_gradient).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let show = |v: &[f64]| v.iter().map(|x| format!("{x:.7}")).collect::<Vec<_>>().join(", ");
    println!("f(x) at x = {x:?}");
    println!("value:                     {value:.10}");
    println!("gradient (reverse mode):   [{}]", show(&gradient));
    println!("composed by hand:          [{}]", show(&hand_gradient));
    println!("finite differences:        [{}]", show(&fd_gradient));
    println!("max |reverse - fd|:        {max_gradient_error:.1e}");
    println!("directional derivative along v = {v:?}:");
    println!("  forward mode:            {directional:.7}");
    println!("  <gradient, v>:           {projected:.7}");
    println!("  finite differences:      {fd_directional:.7}");

    let by_hand_agrees = (hand_value - value).abs() < 1e-12
        && gradient.iter().zip(&hand_gradient).all(|(a, b)| (a - b).abs() < 1e-12);
    let ok = by_hand_agrees
        && (forward_value - value).abs() < 1e-12
        && max_gradient_error < 1e-6
        && (directional - projected).abs() < 1e-10
        && (directional - fd_directional).abs() < 1e-6;
    if ok {
        println!("agreement: ok");
    } else {
        println!("agreement: FAILED");
        std::process::exit(1);
    }
}
