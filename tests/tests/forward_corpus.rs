//! The corpus of derived rules: one or more functions per item of the supported Rust subset
//! (the counterpart of Mooncake's test resources), each checked by the test utility in both
//! modes: `NAME_frule` and `NAME_rrule` against finite differences, against each other and for
//! restored `&mut` state. The few functions reverse mode does not cover yet are checked in
//! forward mode only, with the reason beside them.

// The corpus deliberately writes loops, borrows and comparisons the way users do, including the
// forms clippy would rewrite, because those are what the macro must handle.
#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::neg_cmp_op_on_partial_ord,
    clippy::useless_vec,
    clippy::assign_op_pattern
)]

use mooncake_runtime::prelude::*;

// ---- 1. arguments and returns ------------------------------------------------------------------

#[differentiable]
fn scalar_f32(x: f32, y: f32) -> f32 {
    x * y + x.sin()
}

#[differentiable]
fn slice_arg(x: &[f64]) -> f64 {
    x[0] * x[1] - x[2]
}

#[differentiable]
fn vec_ref_arg(x: &Vec<f64>) -> f64 {
    x[0] * x[0] + x[1]
}

#[differentiable]
fn vec_by_value(x: Vec<f64>, k: usize) -> f64 {
    x[k] * 2.0
}

#[differentiable]
fn array_by_value(x: [f64; 3]) -> f64 {
    x[0] * x[1] * x[2]
}

#[differentiable]
fn array_by_ref(x: &[f64; 2]) -> f64 {
    x[0].exp() + x[1]
}

#[differentiable]
fn scale_in_place(x: &mut [f64], a: f64) {
    for i in 0..x.len() {
        x[i] *= a;
    }
}

#[differentiable]
fn accumulate(acc: &mut f64, x: f64) {
    *acc += x * x;
}

#[differentiable]
fn push_squares(v: &mut Vec<f64>, x: f64) {
    v.push(x * x);
    v.push(x.cos());
}

#[differentiable]
fn tuple_in_out(p: (f64, f64), n: i32) -> (f64, f64) {
    let (a, b) = p;
    (a * b, a.powi(n) - b)
}

#[differentiable]
fn integer_mix(x: f64, n: usize) -> f64 {
    let mut k = n * 2 + 1;
    k -= 1;
    x * (k as f64) + (n as f64) / 2.0
}

// ---- 2. let, shadowing, destructuring, blocks, assignment -------------------------------------

#[differentiable]
fn lets_and_shadowing(x: f64) -> f64 {
    let y: f64 = x * 2.0;
    let y = y + 1.0;
    let mut z;
    z = y * y;
    let w = {
        let t = z - x;
        t * 0.5
    };
    z += w;
    z
}

#[differentiable]
fn flat_2d(a: &mut [f64], n: usize, v: f64) {
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] += v * (i as f64) - a[j * n + i] * 0.1;
        }
    }
}

// ---- 3. operators ---------------------------------------------------------------------------

#[differentiable]
fn logic(x: f64, y: f64) -> f64 {
    let pos = x > 0.0 && y > 0.0;
    let either = x < -1.0 || !(y < 2.0);
    if pos || either { x / y } else { -x % 3.0 + y }
}

// ---- 4. float methods, path syntax, constants ----------------------------------------------

#[differentiable]
fn math(x: f64, y: f64) -> f64 {
    let a = x.sin() * y.cos() + x.tanh() - f64::exp(y * 0.1);
    let b = f64::sqrt(x * x + 1.0) + x.hypot(y) + x.atan2(y) + y.powf(1.5) + x.powi(3);
    let c = x.mul_add(y, 2.0) + x.max(y) - x.min(y) + x.abs() + y.ln() + y.log10() + x.exp_m1();
    a + b + c + std::f64::consts::PI * x + x.clamp(-0.5, 0.5) + x.to_degrees() + y.recip()
}

// ---- 5. if/else and match ---------------------------------------------------------------------

#[differentiable]
fn if_chain(x: f64) -> f64 {
    let y = if x < -1.0 {
        x * x
    } else if x < 1.0 {
        x.sin()
    } else {
        2.0 * x
    };
    y + 1.0
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Mode {
    Square,
    Cube,
    Identity,
}

#[differentiable]
fn match_ints(x: f64, n: i32, m: Mode) -> f64 {
    let a = match n {
        0 => x,
        1 | 2 => x * x,
        3..=5 if x > 0.0 => x.sqrt(),
        k => x * (k as f64),
    };
    let b = match m {
        Mode::Square => x * x,
        Mode::Cube => x * x * x,
        Mode::Identity => x,
    };
    let c = match x > 1.0 {
        true => 1.0,
        false => x,
    };
    a + b + c
}

// ---- 6. loops --------------------------------------------------------------------------------

#[differentiable]
fn ranges(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..=2 {
        s += x[i];
    }
    for i in (0..x.len()).rev() {
        s = s * 0.5 + x[i];
    }
    for i in (0..x.len()).step_by(2) {
        s += x[i] * x[i];
    }
    s
}

#[differentiable]
fn iterators(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v * 2.0;
    }
    for v in x {
        s += v.sin();
    }
    for (i, v) in y.iter().enumerate() {
        s += *v * (i as f64);
    }
    for (a, b) in x.iter().zip(y.iter()) {
        s += a * b;
    }
    s
}

#[differentiable]
fn while_loop(x: f64) -> f64 {
    let mut y = x;
    let mut k = 0;
    while k < 5 {
        y = y * 0.9 + 0.1;
        k += 1;
    }
    y
}

#[differentiable]
fn loop_break_value(x: f64) -> f64 {
    let mut y = x;
    let mut k = 0;
    let r = loop {
        y = y.sin() + 0.5;
        k += 1;
        if k == 4 {
            break y * 2.0;
        }
    };
    r + y
}

#[differentiable]
fn labelled(x: &[f64]) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if j > i {
                continue 'outer;
            }
            if x[i] * x[j] > 4.0 {
                break 'outer;
            }
            s += x[i] * x[j];
        }
    }
    s
}

#[differentiable]
fn early_return(x: &[f64], limit: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            s += x[i] * x[j];
            if s > limit {
                return s * 2.0;
            }
        }
    }
    s
}

// ---- 7. buffers ------------------------------------------------------------------------------

#[differentiable]
fn buffers(x: &[f64]) -> f64 {
    let n = x.len();
    let mut v = vec![0.0; n];
    let w = vec![x[0], x[1], 1.0];
    let mut u = Vec::with_capacity(n);
    for i in 0..n {
        v[i] = x[i] * x[i];
        u.push(v[i] + w[i % 3]);
    }
    let c = x.to_vec();
    let d = u.clone();
    v.iter().sum::<f64>() + c.iter().sum::<f64>() * d[0] + u.iter().sum::<f64>()
}

// ---- 8. calls --------------------------------------------------------------------------------

#[differentiable]
fn square(x: f64) -> f64 {
    x * x
}

mod inner {
    use mooncake_runtime::prelude::*;

    #[differentiable]
    pub fn cube(x: f64) -> f64 {
        x * x * x
    }
}

#[differentiable]
fn calls(x: f64, v: &[f64]) -> f64 {
    square(x) + inner::cube(x) + slice_arg(v) + self::square(v[0])
}

#[differentiable]
fn factorial_like(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * factorial_like(x, n - 1) }
}

// The attribute `recursive` (no longer needed for mutual recursion) still boxes every call.
#[differentiable(recursive)]
fn is_even_poly(x: f64, n: u32) -> f64 {
    if n == 0 { x } else { is_odd_poly(x * 1.1, n - 1) }
}

#[differentiable]
fn is_odd_poly(x: f64, n: u32) -> f64 {
    if n == 0 { x * x } else { is_even_poly(x.sin(), n - 1) }
}

// ---- 9. assertions and panics -------------------------------------------------------------

#[differentiable]
fn checked(x: f64, v: &[f64]) -> f64 {
    assert!(x > 0.0, "x must be positive, got {}", x);
    assert_eq!(v.len(), 2);
    debug_assert!(v[0] < 10.0);
    if x > 100.0 {
        panic!("too large: {}", x);
    }
    match v.len() {
        2 => x * v[0] + v[1],
        _ => unreachable!(),
    }
}

// ---- more of the subset ---------------------------------------------------------------------

#[differentiable]
fn bool_arg(x: f64, flip: bool, scale: f64) -> f64 {
    let s = if flip { -scale } else { scale };
    x * s
}

#[differentiable]
fn generic_poly<T: Float>(x: T, c: T) -> T {
    x * x * c + x.sin()
}

#[differentiable]
fn float_casts(x: f64, y: f32) -> f64 {
    let a = x as f32;
    let b = (a * y) as f64;
    b + (y as f64) * x
}

#[differentiable]
fn returns_vec(x: &[f64], a: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for v in x.iter() {
        out.push(*v * a);
    }
    out
}

/// Run-time misuse: a cotangent of the wrong length for the result of [`returns_vec`].
#[test]
#[should_panic(expected = "cannot increment a shadow of length 3 by one of length 2")]
fn a_cotangent_of_the_wrong_length_is_refused() {
    let x = vec![1.0, 2.0, 3.0];
    let _ = value_and_pullback!(returns_vec(&x, 2.0), vec![1.0, 1.0]);
}

#[differentiable]
fn mutate_array(x: &mut [f64; 3], a: f64) {
    x[0] *= a;
    x[2] = x[1] - a;
}

#[differentiable]
fn every_method(x: f64, y: f64) -> f64 {
    // x in (0, 1), y > 1: inside every function's domain.
    let a = x.sin() + x.cos() + x.tan() + x.asin() + x.acos() + x.atan() + x.atan2(y);
    let b = x.sinh() + x.cosh() + x.tanh() + x.asinh() + y.acosh() + x.atanh();
    let c =
        x.exp() + x.exp2() + x.exp_m1() + y.ln() + x.ln_1p() + y.log(3.0) + y.log2() + y.log10();
    let d = y.sqrt() + y.cbrt() + x.powi(3) + y.powf(x) + x.hypot(y) + (-x).abs() + x.signum();
    let e = x.mul_add(y, 1.0) + y.recip() + x.min(y) + x.max(y) + y.clamp(0.0, 1.5);
    let f =
        x.to_degrees() + x.to_radians() + y.floor() + y.ceil() + y.round() + y.trunc() + y.fract();
    a + b + c + d + e + f
}

#[differentiable]
fn every_method_path_syntax(x: f64, y: f64) -> f64 {
    f64::sin(x)
        + f64::cos(y)
        + f64::exp(x)
        + f64::ln(y)
        + f64::sqrt(y)
        + f64::powi(x, 2)
        + f64::powf(y, 0.5)
        + f64::atan2(x, y)
        + f64::hypot(x, y)
        + f64::max(x, y)
        + f64::abs(x)
        + f64::mul_add(x, y, 0.5)
        + std::f64::consts::E * x
        + f64::EPSILON
}

#[differentiable]
fn cross_crate(x: f64, v: &[f64]) -> f64 {
    mooncake_tests::softplus(x) * mooncake_tests::mean(v)
}

#[differentiable]
fn nested_loops_with_break(x: &[f64]) -> f64 {
    let mut total = 0.0;
    let mut i = 0;
    while i < x.len() {
        let mut j = i;
        loop {
            if j >= x.len() {
                break;
            }
            total += x[i] * x[j];
            j += 2;
        }
        i += 1;
    }
    total
}

#[differentiable]
fn integer_helpers(n: usize, k: usize) -> usize {
    let mut acc = 0;
    for i in 0..n {
        acc += i * k % 7;
    }
    acc
}

#[differentiable]
fn uses_integer_helper(x: f64, n: usize) -> f64 {
    x * (integer_helpers(n, 3) as f64)
}

#[differentiable]
fn unit_return_mutates_two(a: &mut f64, b: &mut [f64], s: f64) {
    *a = *a * s + b[0];
    b[1] = *a - s;
}

// ---- tests -----------------------------------------------------------------------------------

#[test]
fn arguments_and_returns() {
    test_rule!(scalar_f32(0.7_f32, 1.3_f32), rtol = 1e-2, atol = 1e-2);
    let x = vec![0.5, -1.5, 2.0];
    test_rule!(slice_arg(&x));
    test_rule!(vec_ref_arg(&x));
    test_rule!(vec_by_value(x, 1));
    test_rule!(array_by_value([1.0, 2.0, 3.0]));
    test_rule!(array_by_ref(&[0.5, 0.25]));
    let y = vec![1.0, -2.0, 3.0];
    test_rule!(scale_in_place(&mut y, 1.5));
    let acc = 0.5;
    test_rule!(accumulate(&mut acc, 1.5));
    let v = vec![1.0];
    test_rule!(push_squares(&mut v, 0.3));
    test_rule!(tuple_in_out((1.5, -0.5), 3));
    test_rule!(integer_mix(0.3, 4));
}

#[test]
fn lets_blocks_assignment() {
    test_rule!(lets_and_shadowing(0.7));
    let a = vec![1.0, 2.0, 3.0, 4.0];
    test_rule!(flat_2d(&mut a, 2, 0.5));
}

#[test]
fn operators() {
    test_rule!(logic(0.7, 1.3));
    test_rule!(logic(-2.0, 1.3));
    test_rule!(logic(-0.5, 3.0));
    test_rule!(logic(-0.5, 1.0));
}

#[test]
fn float_methods() {
    test_rule!(math(0.3, 1.7));
    test_rule!(math(-0.8, 2.5));
}

#[test]
fn branches_and_matches() {
    for x in [-2.0, 0.3, 1.5] {
        test_rule!(if_chain(x));
    }
    for n in [0, 1, 2, 4, 7] {
        for m in [Mode::Square, Mode::Cube, Mode::Identity] {
            test_rule!(match_ints(0.7, n, m));
            test_rule!(match_ints(1.7, n, m));
        }
    }
}

#[test]
fn loops() {
    let x = vec![0.5, -1.5, 2.0, 0.25, 1.0];
    let y = vec![1.0, 0.5, -0.5, 2.0, 0.1];
    test_rule!(ranges(&x));
    test_rule!(iterators(&x, &y));
    test_rule!(while_loop(0.3));
    test_rule!(loop_break_value(0.3));
    // Away from the `x[i] * x[j] > 4.0` threshold, where finite differences are meaningless.
    let z = vec![0.5, -1.5, 2.1, 0.25, 1.0];
    test_rule!(labelled(&z));
    let z = vec![0.5, -1.5, 1.9, 0.25, 1.0];
    test_rule!(labelled(&z));
    test_rule!(early_return(&x, 3.0));
    test_rule!(early_return(&x, 100.0));
}

#[test]
fn buffer_operations() {
    let x = vec![0.5, -1.5, 2.0, 0.25];
    test_rule!(buffers(&x));
}

#[test]
fn calls_and_recursion() {
    let v = vec![0.5, -1.5, 2.0];
    test_rule!(calls(0.7, &v));
    test_rule!(factorial_like(0.9, 5));
    test_rule!(is_even_poly(0.9, 6));
}

#[test]
fn assertions_kept() {
    let v = vec![0.5, 1.5];
    test_rule!(checked(0.7, &v));
}

#[test]
#[should_panic(expected = "x must be positive, got -1")]
fn assertion_fires_in_the_rule() {
    let v = vec![0.5, 1.5];
    let _ = checked_frule(Dual::new(-1.0, 1.0), Dual::new(&v[..], &[0.0, 0.0][..]));
}

#[test]
fn more_of_the_subset() {
    test_rule!(bool_arg(0.7, true, 1.5));
    test_rule!(bool_arg(0.7, false, 1.5));
    test_rule!(generic_poly(0.7, 1.5));
    test_rule!(generic_poly(0.7_f32, 1.5_f32), rtol = 1e-2, atol = 1e-2);
    test_rule!(float_casts(0.7, 1.5_f32), rtol = 1e-2, atol = 1e-2);
    let x = vec![0.5, -1.5, 2.0];
    test_rule!(returns_vec(&x, 1.5));
    let arr = [1.0, 2.0, 3.0];
    test_rule!(mutate_array(&mut arr, 1.5));
    test_rule!(every_method(0.3, 1.7));
    test_rule!(every_method_path_syntax(0.3, 1.7));
    test_rule!(cross_crate(0.4, &x));
    test_rule!(nested_loops_with_break(&x));
    test_rule!(uses_integer_helper(0.4, 6));
    let a = 0.5;
    test_rule!(unit_return_mutates_two(&mut a, &mut x, 1.5));
}

#[test]
fn value_and_derivative_api() {
    let v = vec![0.5, -1.5, 2.0];
    // d/dx (x^2 + x^3 + ..) at 0.7 along 1: 2x + 3x^2.
    let (_, d) = value_and_derivative!(calls(0.7, &v), (1.0, vec![0.0; 3]));
    assert!((d - (1.4 + 3.0 * 0.49)).abs() < 1e-12);
    let (value, d) = value_and_derivative!(inner::cube(2.0), (1.0,));
    assert_eq!((value, d), (8.0, 12.0));
    let mut acc = 1.0;
    let (value, d) = value_and_derivative!(accumulate(&mut acc, 3.0), (0.0, 1.0));
    assert_eq!((value, d, acc), ((), NoTangent, 10.0));
}

// ---- debug mode -------------------------------------------------------------------------------

#[differentiable(debug)]
fn log_shifted(x: f64) -> f64 {
    let shifted = x - 1.0;
    let y = shifted.ln();
    y * 2.0
}

#[test]
fn debug_mode() {
    // In its domain the debug checks are silent and the rule is correct.
    test_rule!(log_shifted(2.5));
}

#[test]
#[should_panic(expected = "#[differentiable(debug)]: an intermediate value (line")]
fn debug_mode_reports_the_first_non_finite_value() {
    // `shifted.ln()` is NaN at 0.5: reported on its line, before it reaches `y`.
    let _ = log_shifted_frule(Dual::new(0.5, 1.0));
}

#[test]
#[should_panic(expected = "is not finite in reverse mode's forward sweep")]
fn debug_mode_checks_reverse_mode_too() {
    let _ = value_and_gradient!(log_shifted(0.5));
}

/// Debug checks in code with loops, buffers built and written, structs and calls, in both modes.
#[differentiable(debug)]
fn debug_everywhere(x: &[f64], k: f64) -> f64 {
    let mut ys = Vec::new();
    let mut acc = [0.0; 2];
    for (i, v) in x.iter().enumerate() {
        let t = (v * k).exp() / (1.0 + i as f64);
        ys.push(t);
        acc[i % 2] += t.sqrt();
    }
    let mut s = log_shifted(2.0 + k * k);
    for j in 0..ys.len() {
        s += ys[j] * acc[j % 2];
    }
    s
}

#[test]
fn debug_mode_in_loops_buffers_and_calls() {
    test_rule!(debug_everywhere(&[0.3, -0.2, 0.5][..], 0.7));
}

// ---- non-differentiable methods in float code ----------------------------------------------

#[differentiable]
fn guarded(x: f64, k: i32, n: usize) -> f64 {
    let safe = if x.is_nan() || !x.is_finite() { 0.0 } else { x };
    let sign = if safe.is_sign_negative() { -1.0 } else { 1.0 };
    safe * sign * (k.abs().pow(2) as f64) + (n.pow(2) as f64)
}

#[test]
fn predicates_and_integer_methods() {
    test_rule!(guarded(0.7, -3, 2));
    test_rule!(guarded(-0.7, 2, 1));
    let (v, d) = value_and_derivative!(guarded(f64::NAN, 2, 1), (1.0, NoTangent, NoTangent));
    assert_eq!((v, d), (1.0, 0.0));
}
