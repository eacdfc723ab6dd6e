//! Mutation: the example function of Mooncake's rule system ("The Model", seed 000) written in
//! Rust with `&mut` arguments,
//!
//! ```julia
//! function f(x, y, z, s::Ref{Vector{Float64}})
//!     z .*= y .* x
//!     s[] = 2z
//!     return sum(z)
//! end
//! ```
//!
//! `z` is mutated in place, `s` is made to hold freshly built data (of a length other than its
//! own), and a value is returned. Mooncake models such a function as a map from the state of
//! its arguments *on entry* to their state *after the call* and its result:
//! `f(x, y, z, s) = ((x, y, x⊙y⊙z, 2·x⊙y⊙z), Σ x⊙y⊙z)`. A gradient is with respect to the state
//! on entry, and a complete gradient computation leaves the arguments as they were on entry.
//!
//! The example shows both, first through `value_and_gradient!` (a cotangent on the result only),
//! then through the derived `f_rrule` itself with cotangents on the state after the call as well,
//! and checks the gradients against their closed form and, through the dot-product identity,
//! against the derived forward rule `f_frule`. Exits non-zero if anything disagrees.
//!
//! Run with `cargo run --release --example mutation`.

// The body is written the way the seed's Julia reads, index by index.
#![allow(clippy::needless_range_loop)]

use mooncake_examples::{Checks, show};
use mooncake_runtime::prelude::*;

/// Seed 000's `f`, with `s: &mut Vec<f64>` for the seed's `s::Ref{Vector{Float64}}`.
#[differentiable]
fn f(x: &[f64], y: &[f64], z: &mut [f64], s: &mut Vec<f64>) -> f64 {
    // z .*= y .* x
    for i in 0..z.len() {
        z[i] *= y[i] * x[i];
    }
    // s[] = 2z
    let mut t = Vec::with_capacity(z.len());
    for i in 0..z.len() {
        t.push(2.0 * z[i]);
    }
    *s = t;
    // return sum(z)
    z.iter().sum::<f64>()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max)
}

fn main() {
    let x = vec![1.0, 2.0, 3.0];
    let y = vec![0.5, -1.0, 2.0];
    let z0 = vec![1.5, 0.25, -1.0];
    let s0 = vec![7.0, 8.0]; // S = 2 elements on entry, D = 3 after the call
    let n = x.len();
    let mut checks = Checks::new();

    // ---- the primal: it mutates `z` and `s` -----------------------------------------------
    let (mut z, mut s) = (z0.clone(), s0.clone());
    let value = f(&x, &y, &mut z, &mut s);
    println!(
        "x = {}, y = {}, z = {}, s = {}",
        show(&x, 3),
        show(&y, 3),
        show(&z0, 3),
        show(&s0, 3)
    );
    println!("f(x, y, z, s) = {value:.4}; after the call z = {}, s = {}", show(&z, 3), show(&s, 3));
    let xyz: Vec<f64> = (0..n).map(|i| x[i] * y[i] * z0[i]).collect();
    let twice: Vec<f64> = xyz.iter().map(|v| 2.0 * v).collect();
    checks
        .check(z == xyz && s == twice, "the primal's state after the call is not (x⊙y⊙z, 2·x⊙y⊙z)");

    // ---- value_and_gradient!: the gradient of the result w.r.t. the state on entry ----------
    let (mut z, mut s) = (z0.clone(), s0.clone());
    let (v, (gx, gy, gz, gs)) = value_and_gradient!(f(&x, &y, &mut z, &mut s));
    println!();
    println!("value_and_gradient!(f(&x, &y, &mut z, &mut s)):");
    println!("  value {v:.4}");
    println!("  d/dx = {} (y⊙z on entry)", show(&gx, 3));
    println!("  d/dy = {} (x⊙z on entry)", show(&gy, 3));
    println!("  d/dz = {} (x⊙y)", show(&gz, 3));
    println!("  d/ds = {} (s's entry contents reach nothing)", show(&gs, 3));
    println!("  afterwards z = {}, s = {} (as on entry)", show(&z, 3), show(&s, 3));
    let yz: Vec<f64> = (0..n).map(|i| y[i] * z0[i]).collect();
    let xz: Vec<f64> = (0..n).map(|i| x[i] * z0[i]).collect();
    let xy: Vec<f64> = (0..n).map(|i| x[i] * y[i]).collect();
    let gradient_error = max_diff(&gx, &yz)
        .max(max_diff(&gy, &xz))
        .max(max_diff(&gz, &xy))
        .max(max_diff(&gs, &[0.0, 0.0]));
    checks.check(
        v == value && gradient_error < 1e-12,
        "value_and_gradient! disagrees with the closed form",
    );
    checks.check(z == z0 && s == s0, "value_and_gradient! did not leave z and s as on entry");

    // ---- the whole model: cotangents of the result and of the state after the call ----------
    // The derived reverse rule, called directly: `&mut` arguments are seen through shared
    // handles, each argument has a shadow; the caller seeds the shadows with the cotangent of
    // the state *after* the call, runs the pullback with the result's cotangent, and reads the
    // gradient w.r.t. the state *on entry* from the same shadows.
    let (x_after_bar, y_after_bar) = (vec![0.1, 0.2, 0.3], vec![-0.5, 0.5, 1.0]);
    let (z_after_bar, s_after_bar, a_bar) = (vec![1.0, -1.0, 0.5], vec![0.25, 2.0, -1.5], 2.0);
    let (x_shadow, y_shadow) = (SharedVec::zeros(n), SharedVec::zeros(n));
    let (z_handle, z_shadow) = (SharedVec::from_slice(&z0), SharedVec::zeros(n));
    let (s_handle, s_shadow) = (SharedVec::from_slice(&s0), SharedVec::zeros(s0.len()));
    let (out, pullback) = f_rrule(
        CoDual::new(&x[..], x_shadow.clone()),
        CoDual::new(&y[..], y_shadow.clone()),
        CoDual::new(z_handle.clone(), z_shadow.clone()),
        CoDual::new(s_handle.clone(), s_shadow.clone()),
    );
    let (z_after, s_after) = (z_handle.to_vec(), s_handle.to_vec());
    for i in 0..n {
        x_shadow.add(i, x_after_bar[i]);
        y_shadow.add(i, y_after_bar[i]);
        z_shadow.add(i, z_after_bar[i]);
        s_shadow.add(i, s_after_bar[i]); // `s` now has n elements, and so has its shadow
    }
    let _: (NoRData, NoRData, NoRData, NoRData) = pullback(a_bar);
    let (x_bar, y_bar) = (x_shadow.to_vec(), y_shadow.to_vec());
    let (z_bar, s_bar) = (z_shadow.to_vec(), s_shadow.to_vec());
    println!();
    println!("f_rrule with cotangents ā = {a_bar} of the result and, of the state after the call,");
    println!("  x̄' = {}, ȳ' = {},", show(&x_after_bar, 3), show(&y_after_bar, 3));
    println!("  z̄' = {}, s̄' = {}:", show(&z_after_bar, 3), show(&s_after_bar, 3));
    println!(
        "  forward pass: value {:.4}, z = {}, s = {}",
        out.primal,
        show(&z_after, 3),
        show(&s_after, 3)
    );
    println!("  x̄ = {} (x̄' + w⊙y⊙z, w = ā + z̄' + 2s̄')", show(&x_bar, 3));
    println!("  ȳ = {} (ȳ' + w⊙x⊙z)", show(&y_bar, 3));
    println!("  z̄ = {} (w⊙x⊙y)", show(&z_bar, 3));
    println!("  s̄ = {} (zero, of s's length on entry)", show(&s_bar, 3));
    println!(
        "  after the pullback z = {}, s = {}",
        show(&z_handle.to_vec(), 3),
        show(&s_handle.to_vec(), 3)
    );
    let w: Vec<f64> = (0..n).map(|i| a_bar + z_after_bar[i] + 2.0 * s_after_bar[i]).collect();
    let expected_x: Vec<f64> = (0..n).map(|i| x_after_bar[i] + w[i] * y[i] * z0[i]).collect();
    let expected_y: Vec<f64> = (0..n).map(|i| y_after_bar[i] + w[i] * x[i] * z0[i]).collect();
    let expected_z: Vec<f64> = (0..n).map(|i| w[i] * x[i] * y[i]).collect();
    let model_error = max_diff(&x_bar, &expected_x)
        .max(max_diff(&y_bar, &expected_y))
        .max(max_diff(&z_bar, &expected_z))
        .max(max_diff(&s_bar, &vec![0.0; s0.len()]));
    checks.check(
        out.primal == value && z_after == xyz && s_after == twice,
        "f_rrule's forward pass does not give the primal's value and state",
    );
    checks.check(model_error < 1e-12, "f_rrule's gradient disagrees with the closed form");
    checks.check(
        z_handle.to_vec() == z0 && s_handle.to_vec() == s0,
        "f_rrule's pullback did not restore z and s",
    );

    // ---- forward mode, and the dot-product identity <ȳ, J ẋ> = <Jᵀ ȳ, ẋ> --------------------
    // The derived forward rule carries tangents of the state on entry to tangents of the state
    // after the call (updated in place beside the primal) and of the result.
    let (x_dot, y_dot) = (vec![0.3, -0.7, 1.1], vec![1.0, 0.4, -0.2]);
    let (z_dot, s_dot) = (vec![-0.6, 0.9, 0.5], vec![1.5, -2.5]);
    let (mut z_f, mut s_f) = (z0.clone(), s0.clone());
    let (mut z_t, mut s_t) = (z_dot.clone(), s_dot.clone());
    let out = f_frule(
        Dual::new(&x[..], &x_dot[..]),
        Dual::new(&y[..], &y_dot[..]),
        Dual::new(&mut z_f[..], &mut z_t[..]),
        Dual::new(&mut s_f, &mut s_t),
    );
    let forward_side = a_bar * out.tangent
        + dot(&x_after_bar, &x_dot)
        + dot(&y_after_bar, &y_dot)
        + dot(&z_after_bar, &z_t)
        + dot(&s_after_bar, &s_t);
    let reverse_side =
        dot(&x_bar, &x_dot) + dot(&y_bar, &y_dot) + dot(&z_bar, &z_dot) + dot(&s_bar, &s_dot);
    println!();
    println!(
        "f_frule along ẋ = {}, ẏ = {}, ż = {}, ṡ = {}:",
        show(&x_dot, 3),
        show(&y_dot, 3),
        show(&z_dot, 3),
        show(&s_dot, 3)
    );
    println!(
        "  result tangent {:.4}; after the call ż = {}, ṡ = {}",
        out.tangent,
        show(&z_t, 3),
        show(&s_t, 3)
    );
    println!("  <cotangent, forward tangent> = {forward_side:.10}");
    println!("  <reverse gradient, ẋ>        = {reverse_side:.10}");
    checks.check(
        (forward_side - reverse_side).abs() < 1e-12 * (1.0 + forward_side.abs()),
        "forward and reverse mode disagree (dot-product identity)",
    );

    println!();
    println!(
        "max differences: closed form {:.1e}, whole model {:.1e}, forward/reverse {:.1e}",
        gradient_error,
        model_error,
        (forward_side - reverse_side).abs()
    );
    checks.finish("mutation");
}
