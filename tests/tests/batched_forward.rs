//! Batched forward mode: `value_and_gradient_forward!(f(..), chunk = N)` runs the derived
//! forward rule carrying `N` directions per pass (`NAME__lanes`), checked against reverse mode,
//! against central finite differences and against the one-direction forward rule; functions
//! without a batched rule (a struct argument, a call of another function, a buffer grown by
//! `extend_from_slice`) fall back to one direction per pass and give the same gradients.

#![allow(clippy::needless_range_loop, clippy::useless_vec)] // the code as users write it

use mooncake_runtime::lanes::{Lanes, Unbatched};
use mooncake_runtime::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn same(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (x, y) in a.iter().zip(b) {
        assert!(close(*x, *y, tol), "{what}: {a:?} against {b:?}");
    }
}

/// Explicit Euler on Lotka-Volterra (the `ode_euler_1000` benchmark's shape).
#[differentiable]
fn ode(p: &[f64], u0: &[f64], steps: usize) -> f64 {
    let (a, b, c, d) = (p[0], p[1], p[2], p[3]);
    let mut u = u0[0];
    let mut v = u0[1];
    let mut k = 0;
    while k < steps {
        let du = a * u - b * u * v;
        let dv = d * u * v - c * v;
        u += 0.01 * du;
        v += 0.01 * dv;
        k += 1;
    }
    u * u + v * v
}

/// Every kind of argument and most float methods: arrays by value and behind `&`, a `Vec` by
/// value, a scalar, integers and a `bool`; casts, a local buffer written and read, a local
/// array, branches, `powi`, `mul_add`, `clamp`, `min`, `max`, `hypot`, `atan2`.
#[differentiable]
fn kinds(a: [f64; 3], v: Vec<f64>, r: &[f64; 2], s: f64, k: usize, flag: bool) -> f64 {
    let mut buf = vec![0.0; v.len()];
    for i in 0..v.len() {
        buf[i] = v[i] * s + (i as f64) * a[i % 3];
    }
    let mut acc = 0.0;
    for i in 0..buf.len() {
        let b = buf[i];
        acc += b.sin().mul_add(b.cos(), b.powi(2)) / (1.0 + b.abs());
    }
    let w = [r[0].hypot(r[1]), r[1].atan2(r[0]), a[2].clamp(-1.0, 1.0)];
    let mut t = w[0] * w[1] + w[2];
    if flag {
        t = t.max(a[0]) - a[1].min(s);
    }
    acc + t * (k as f64) + (s as f32 * 2.0) as f64
}

/// Generic over the float type: `T::from_f64` of a literal and of a computed value.
#[differentiable]
fn energy<T: Float>(x: &[T], k: T) -> T {
    let mut e = T::from_f64(0.0);
    for i in 0..x.len() {
        let w = T::from_f64((i + 1) as f64);
        e += w * k * x[i].powi(2) + (x[i] * T::from_f64(0.5)).exp();
    }
    e.sqrt()
}

#[test]
fn batched_gradients_agree_with_reverse_mode_and_one_direction_passes() {
    let (p, u0) = (vec![1.1, 0.4, 0.9, 0.3], vec![1.2, 0.8]);
    let (yr, (rp, ru, _)) = value_and_gradient!(ode(&p, &u0, 200));
    let (y1, (fp, fu, _)) = value_and_gradient_forward!(ode(&p, &u0, 200));
    macro_rules! each_chunk {
        ($($n:literal),*) => {$({
            let (y, (gp, gu, gs)) = value_and_gradient_forward!(ode(&p, &u0, 200), chunk = $n);
            assert_eq!(y, yr);
            assert_eq!(gs, NoTangent);
            // The same arithmetic as one direction per pass, lane by lane.
            assert_eq!((&gp, &gu), (&fp, &fu), "chunk = {}", $n);
            same(&gp, &rp, 1e-12, "p");
            same(&gu, &ru, 1e-12, "u0");
        })*};
    }
    each_chunk!(1, 2, 3, 4, 5, 6, 7, 16);
    assert_eq!(y1, yr);
    // Central differences.
    let h = 1e-6;
    for i in 0..4 {
        let (mut a, mut b) = (p.clone(), p.clone());
        a[i] += h;
        b[i] -= h;
        let fd = (ode(&a, &u0, 200) - ode(&b, &u0, 200)) / (2.0 * h);
        assert!(close(rp[i], fd, 1e-6), "p[{i}]: {} against {fd}", rp[i]);
    }
}

#[test]
fn the_batched_entry_is_the_derived_rule_carrying_lanes() {
    let (p, u0) = (vec![1.1, 0.4, 0.9, 0.3], vec![1.2, 0.8]);
    // Directions 2, 3, 4, 5 of the six (p[2], p[3], u0[0], u0[1]); offsets of p and u0: 0, 4.
    let d: Dual<f64, Lanes<f64, 4>> = ode__lanes(&p, &u0, 50, 2, &[0, 4, usize::MAX]);
    for (k, (dp, du)) in [
        ([0., 0., 1., 0.], [0., 0.]),
        ([0., 0., 0., 1.], [0., 0.]),
        ([0.; 4], [1., 0.]),
        ([0.; 4], [0., 1.]),
    ]
    .into_iter()
    .enumerate()
    {
        let one = ode_frule(
            Dual::new(&p[..], &dp[..]),
            Dual::new(&u0[..], &du[..]),
            Dual::new(50, NoTangent),
        );
        assert_eq!(d.primal, one.primal);
        assert_eq!(d.tangent.0[k], one.tangent, "lane {k}");
    }
}

#[test]
fn every_argument_kind() {
    let (a, v, r) = ([0.3, -0.7, 0.4], vec![0.5, -1.5, 2.0, 0.25], [0.6, -0.2]);
    for flag in [true, false] {
        let (yr, (ra, rv, rr, rs, _, _)) =
            value_and_gradient!(kinds(a, v.clone(), &r, 1.3, 2, flag));
        let (y, (ga, gv, gr, gs, gk, gf)) =
            value_and_gradient_forward!(kinds(a, v.clone(), &r, 1.3, 2, flag), chunk = 4);
        assert_eq!(y, yr);
        assert_eq!((gk, gf), (NoTangent, NoTangent));
        same(&ga, &ra, 1e-12, "a");
        same(&gv, &rv, 1e-12, "v");
        same(&gr, &rr, 1e-12, "r");
        assert!(close(gs, rs, 1e-12));
        // (A wide step: the result goes through `f32`, whose rounding finer steps would see.)
        let h = 1e-3;
        let fd = (kinds(a, v.clone(), &r, 1.3 + h, 2, flag)
            - kinds(a, v.clone(), &r, 1.3 - h, 2, flag))
            / (2.0 * h);
        assert!(close(gs, fd, 1e-3), "s: {gs} against {fd}");
    }
    // A batched entry exists for it.
    let d: Dual<f64, Lanes<f64, 2>> =
        kinds__lanes(a, v.clone(), &r, 1.3, 2, true, 0, &[0, 3, 7, 9, usize::MAX, usize::MAX]);
    assert_eq!(d.primal, kinds(a, v, &r, 1.3, 2, true));
}

#[test]
fn generic_functions_at_f64_and_f32() {
    let x = vec![0.2, -0.4, 0.9];
    let (yr, (rx, rk)) = value_and_gradient!(energy(&x, 1.5_f64));
    let (y, (gx, gk)) = value_and_gradient_forward!(energy(&x, 1.5_f64), chunk = 2);
    assert_eq!(y, yr);
    same(&gx, &rx, 1e-12, "x");
    assert!(close(gk, rk, 1e-12));
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let (yr, (rx, rk)) = value_and_gradient!(energy(&x32, 1.5_f32));
    let (y, (gx, gk)) = value_and_gradient_forward!(energy(&x32, 1.5_f32), chunk = 3);
    assert!((y - yr).abs() <= 1e-6 * yr.abs());
    for (g, r) in gx.iter().zip(&rx) {
        assert!((g - r).abs() <= 1e-5 * (1.0 + r.abs()), "{gx:?} against {rx:?}");
    }
    assert!((gk - rk).abs() <= 1e-5 * (1.0 + rk.abs()));
}

#[test]
fn constants_and_more_directions_than_inputs() {
    let (p, u0) = (vec![1.1, 0.4, 0.9, 0.3], vec![1.2, 0.8]);
    let (_, (rp, _, _)) = value_and_gradient!(ode(&p, &u0, 100));
    let (_, (gp, gu, _)) = value_and_gradient_forward!(ode(&p, Const(&u0), 100), chunk = 16);
    assert_eq!(gu, NoTangent);
    same(&gp, &rp, 1e-12, "p");
    // An empty buffer has no direction; the others are found around it.
    let y = [0.5, -2.0];
    let (_, (ge, gy)) = value_and_gradient_forward!(cubes(&[], &y), chunk = 3);
    assert!(ge.is_empty());
    same(&gy, &[0.75, 12.0], 1e-15, "y");
    let (_, (gx, ge)) = value_and_gradient_forward!(cubes(&y, &[]), chunk = 1);
    assert!(ge.is_empty());
    same(&gx, &[1.0, -4.0], 1e-15, "x");
}

#[differentiable]
fn cubes(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
    }
    for i in 0..y.len() {
        s += y[i] * y[i] * y[i];
    }
    s
}

// Functions without a batched rule: one direction per pass, the same gradients.

#[derive(Clone, Debug, Tangent)]
struct Spring {
    k: f64,
    rest: f64,
}

#[differentiable]
fn stretched(s: &Spring, x: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 1..x.len() {
        let d = x[i] - x[i - 1] - s.rest;
        e += 0.5 * s.k * d * d;
    }
    e
}

#[differentiable]
fn calls_another(p: &[f64], u0: &[f64]) -> f64 {
    2.0 * ode(p, u0, 10)
}

#[differentiable]
fn extends(x: &[f64]) -> f64 {
    let mut v = vec![1.0];
    v.extend_from_slice(x);
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i].sin();
    }
    s
}

#[test]
fn functions_without_a_batched_rule_run_one_direction_per_pass() {
    let s = Spring { k: 2.0, rest: 0.5 };
    let x = vec![0.1, 0.9, 1.3, 2.2];
    let (_, (rs, rx)) = value_and_gradient!(stretched(&s, &x));
    let (_, (gs, gx)) = value_and_gradient_forward!(stretched(&s, &x), chunk = 4);
    assert!(close(gs.k, rs.k, 1e-12) && close(gs.rest, rs.rest, 1e-12));
    same(&gx, &rx, 1e-12, "x");
    let _: Unbatched<f64> = stretched__lanes(&s, &x, 0, &[0, 2]);

    let (p, u0) = (vec![1.1, 0.4, 0.9, 0.3], vec![1.2, 0.8]);
    let (_, (rp, ru)) = value_and_gradient!(calls_another(&p, &u0));
    let (_, (gp, gu)) = value_and_gradient_forward!(calls_another(&p, &u0), chunk = 3);
    same(&gp, &rp, 1e-12, "p");
    same(&gu, &ru, 1e-12, "u0");
    let _: Unbatched<f64> = calls_another__lanes(&p, &u0, 0, &[0, 4]);

    let (_, (rx,)) = value_and_gradient!(extends(&x));
    let (_, (gx,)) = value_and_gradient_forward!(extends(&x), chunk = 2);
    same(&gx, &rx, 1e-12, "x");
    let _: Unbatched<f64> = extends__lanes(&x, 0, &[0]);
}

/// Buffer methods with batched rules: `iter().sum()` (of floats and of integers), `to_vec`,
/// `push`, `fill`, `swap`, `reverse`.
#[differentiable]
fn buffers(x: &[f64], w: Vec<f64>, idx: &[usize]) -> f64 {
    let mut v = x.to_vec();
    v.swap(0, 2);
    v.reverse();
    let mut grown = Vec::new();
    for i in 0..v.len() {
        grown.push(v[i] * w[i % w.len()]);
    }
    let mut scratch = vec![0.0; 3];
    scratch.fill(x[1]);
    let total: usize = idx.iter().sum();
    grown.iter().sum::<f64>() * scratch[2] + (total as f64) * x.iter().sum::<f64>()
}

#[test]
fn buffer_methods_in_batched_rules() {
    let (x, w, idx) = (vec![0.4, -1.1, 2.3, 0.7], vec![1.5, -0.5], vec![1_usize, 2]);
    let (yr, (rx, rw, _)) = value_and_gradient!(buffers(&x, w.clone(), &idx));
    let (y1, one) = value_and_gradient_forward!(buffers(&x, w.clone(), &idx));
    let (y, (gx, gw, gi)) = value_and_gradient_forward!(buffers(&x, w.clone(), &idx), chunk = 4);
    assert_eq!((y, y1), (yr, yr));
    assert_eq!(gi, NoTangent);
    assert_eq!((&gx, &gw), (&one.0, &one.1));
    same(&gx, &rx, 1e-12, "x");
    same(&gw, &rw, 1e-12, "w");
    let d: Dual<f64, Lanes<f64, 2>> = buffers__lanes(&x, w, &idx, 0, &[0, 4, usize::MAX]);
    assert_eq!(d.primal, yr);
}

/// `#[differentiable(debug)]` checks batched rules too: every direction's tangent.
#[differentiable(debug)]
fn root_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sqrt();
    }
    s
}

#[test]
fn debug_checks_every_direction() {
    let x = vec![4.0, 1.0, 9.0];
    let (_, (g,)) = value_and_gradient_forward!(root_sum(&x), chunk = 2);
    same(&g, &[0.25, 0.5, 1.0 / 6.0], 1e-15, "x");
    // d sqrt(x)/dx at 0 is infinite: the batched rule panics, as the ordinary one does.
    let zero = vec![4.0, 0.0];
    let caught =
        std::panic::catch_unwind(|| value_and_gradient_forward!(root_sum(&zero), chunk = 2));
    let message = caught.expect_err("an infinite tangent").downcast::<String>().map(|m| *m);
    assert!(message.is_ok_and(|m| m.contains("is not finite") && m.contains("tangents")));
}

/// Literals whose float type only the method call tells (the generator's `b34`, `b35` in a
/// batched rule).
#[differentiable]
fn literal_receivers(x: f64) -> f64 {
    let c = f64::abs(if x > 0.0 { 1.5 } else { -2.5 });
    let d = f64::atan2(0.5, f64::fract(0.5) * f64::fract(0.5) + 0.5);
    x * c + d * x.sin()
}

#[test]
fn literal_receivers_in_batched_rules() {
    let (_, (r,)) = value_and_gradient!(literal_receivers(0.7));
    let (_, (g,)) = value_and_gradient_forward!(literal_receivers(0.7), chunk = 2);
    assert!(close(g, r, 1e-12));
    let d: Dual<f64, Lanes<f64, 2>> = literal_receivers__lanes(0.7, 0, &[0]);
    assert_eq!(d.tangent.0[0], g);
}
