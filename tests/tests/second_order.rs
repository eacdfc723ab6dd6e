//! `#[differentiable(second_order)]`: Hessian-vector products and Hessians of functions written
//! over `f64`, whose reverse rule is derived from a copy generic over the float
//! (`differentiable/twin.rs`).
//!
//! The functions are those of the reverse corpus (`reverse_corpus.rs`) that qualify (leaves of
//! numbers and buffers), as written there, with the option. Each is checked twice:
//! - `test_rule!`: the `f64` rule derived from the twin, against central differences and
//!   forward mode (`NAME_frule`, derived from the function as written);
//! - `check_corpus`: `hvp!` and `hessian!` against central differences of the gradient, of
//!   the value, and against each other.
//!
//! A function with `second_order` may call others whose reverse rules are generic over the float
//! (marked `second_order` too, or generic over `T: Float`): its twin calls their
//! `NAME_rrule_twin` (`calls_of_other_functions`). The rest of the corpus has no twin (structs,
//! `&mut`, `f32`): `hessian_corpus.rs` checks its generic copies.

#![allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::ptr_arg,
    clippy::borrow_deref_ref
)] // the corpus as written

use mooncake_runtime::prelude::*;
use mooncake_tests::{check_corpus, one_slice, slice_and_scalar, two_slices};

#[differentiable(second_order)]
fn branch(x: f64) -> f64 {
    if x > 0.0 { x.sin() } else { -x }
}

#[differentiable(second_order)]
fn scalars(x: f64, y: f64) -> f64 {
    let a = x * y + x / y - y;
    let b = -a * 2.0 + x % 0.7;
    a * b
}

#[differentiable(second_order)]
fn loops(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += x * (i as f64);
    }
    for i in (0..n).rev() {
        s = s * 0.5 + x.sin() * (i as f64);
    }
    for _ in (0..n).step_by(2) {
        s += x * x;
    }
    for i in 1..=3 {
        if i == 2 {
            continue;
        }
        s = s * x;
    }
    s
}

#[differentiable(second_order)]
fn while_and_loop(x: f64) -> f64 {
    let mut y = x;
    let mut k = 0;
    while k < 5 {
        y = y * 0.9 + 0.1;
        k += 1;
    }
    let r = loop {
        y = y.sin() + 0.5;
        k += 1;
        if k == 9 {
            break y * 2.0;
        }
    };
    r + y
}

#[differentiable(second_order)]
fn labelled_and_early_return(x: f64, limit: f64) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..4 {
        for j in 0..4 {
            if j > i {
                continue 'outer;
            }
            s += x * (j as f64) + 0.1;
            if s > limit {
                return s * 2.0;
            }
            if s > 100.0 {
                break 'outer;
            }
        }
    }
    s
}

#[differentiable(second_order)]
fn square(x: f64) -> f64 {
    x * x
}

#[differentiable(second_order)]
fn checked(x: f64) -> f64 {
    assert!(x > 0.0, "x must be positive, got {}", x);
    debug_assert!(x < 1e6);
    if x > 100.0 {
        panic!("too large: {}", x);
    }
    x.ln()
}

#[differentiable(second_order)]
fn guarded(x: f64, k: i32) -> f64 {
    let safe = if x.is_nan() || !x.is_finite() { 0.0 } else { x };
    safe * (k.abs().pow(2) as f64)
}

#[differentiable(second_order)]
fn slice_arg(x: &[f64]) -> f64 {
    x[0] * x[1] - x[2]
}

#[differentiable(second_order)]
fn vec_ref_arg(x: &Vec<f64>, k: usize) -> f64 {
    x[0] * x[0] + x[k]
}

#[differentiable(second_order)]
fn sum_sin(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
    }
    s
}

#[differentiable(second_order)]
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
    s + x.iter().sum::<f64>()
}

#[differentiable(second_order)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[differentiable(second_order)]
fn early_exit(x: &[f64], limit: f64) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if j > i {
                continue 'outer;
            }
            s += x[i] * x[j];
            if s > limit {
                return s * 2.0;
            }
        }
    }
    s
}

#[differentiable(second_order)]
fn weighted(w: &[f64], h: &Vec<f64>) -> f64 {
    let mut s = 0.0;
    for (a, b) in w.iter().zip(h.iter()) {
        s += a * b;
    }
    s
}

#[differentiable(second_order)]
fn array_written(mut x: [f64; 3], a: f64) -> f64 {
    x[1] = x[0] * a;
    x[2] += x[1];
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    s + x.len() as f64
}

/// What the rewrite covers besides the corpus: `f64::` functions and constants, a chain's
/// untyped `sum()` (which starts from a literal lowering writes), `vec!`, casts of counters.
#[differentiable(second_order)]
fn rewritten(x: &[f64], a: f64, n: usize) -> f64 {
    let mut v = vec![0.0; n];
    let mut t = 0.0;
    for k in 0..n {
        let tk = k as f64 * 0.5;
        v[k] = (x[k % x.len()] * a + tk).sin() + f64::max(a, 0.1) * std::f64::consts::PI;
        t += v[k] * v[k] + f64::EPSILON;
    }
    let chain: f64 = x.iter().map(|xi| xi * xi * a).sum();
    t.sqrt() + v.iter().sum::<f64>() / (n as f64) + chain + x.iter().map(|xi| xi.exp()).sum::<f64>()
}

/// A function of one float.
macro_rules! one_float {
    ($name:expr, $x:expr, |$v:ident| $call:expr) => {
        check_corpus(
            $name,
            $x,
            |$v: &f64| $call,
            |$v| vec![value_and_gradient!($call).1.0],
            |$v, t| {
                let (y, (g,), (h,)) = hvp!($call, (*t,));
                (y, vec![g], vec![h])
            },
            |$v| hessian!($call),
        )
    };
}

/// A function of one float and one constant argument.
macro_rules! float_and_constant {
    ($name:expr, $x:expr, |$v:ident| $call:expr) => {
        check_corpus(
            $name,
            $x,
            |$v: &f64| $call,
            |$v| vec![value_and_gradient!($call).1.0],
            |$v, t| {
                let (y, (g, _), (h, _)) = hvp!($call, (*t, NoTangent));
                (y, vec![g], vec![h])
            },
            |$v| hessian!($call),
        )
    };
}

#[test]
fn scalar_functions() {
    for x in [0.7, -0.7] {
        test_rule!(branch(x));
        one_float!("branch", x, |x| branch(*x));
    }
    test_rule!(square(1.3));
    one_float!("square", 1.3, |x| square(*x));
    test_rule!(scalars(0.6, 1.3));
    check_corpus(
        "scalars",
        (0.6, 1.3),
        |p| scalars(p.0, p.1),
        |p| {
            let (_, (a, b)) = value_and_gradient!(scalars(p.0, p.1));
            vec![a, b]
        },
        |p, v| {
            let (y, (a, b), (ha, hb)) = hvp!(scalars(p.0, p.1), (v.0, v.1));
            (y, vec![a, b], vec![ha, hb])
        },
        |p| hessian!(scalars(p.0, p.1)),
    );
    test_rule!(checked(2.5));
    one_float!("checked", 2.5, |x| checked(*x));
    test_rule!(guarded(0.7, -3));
    float_and_constant!("guarded", 0.7, |x| guarded(*x, -3));
    for n in [0, 1, 4] {
        test_rule!(loops(0.8, n));
        float_and_constant!("loops", 0.8, |x| loops(*x, n));
    }
    test_rule!(while_and_loop(0.4));
    one_float!("while_and_loop", 0.4, |x| while_and_loop(*x));
    for limit in [0.5, 3.0, 400.0] {
        test_rule!(labelled_and_early_return(0.9, limit));
        check_corpus(
            "labelled_and_early_return",
            (0.9, limit),
            |p| labelled_and_early_return(p.0, p.1),
            |p| {
                let (_, (a, b)) = value_and_gradient!(labelled_and_early_return(p.0, p.1));
                vec![a, b]
            },
            |p, v| {
                let (y, (a, b), (ha, hb)) = hvp!(labelled_and_early_return(p.0, p.1), (v.0, v.1));
                (y, vec![a, b], vec![ha, hb])
            },
            |p| hessian!(labelled_and_early_return(p.0, p.1)),
        );
    }
}

#[test]
fn buffer_functions() {
    let x = vec![0.4, -0.3, 0.9, 1.2];
    let y = vec![0.2, 0.8, -0.5, 0.3];
    test_rule!(slice_arg(&x));
    test_rule!(sum_sin(&x));
    test_rule!(rosenbrock(&x));
    one_slice!(slice_arg, x.clone());
    one_slice!(sum_sin, x.clone());
    one_slice!(rosenbrock, vec![-1.2, 1.0, 0.5, 0.8]);
    test_rule!(iterators(&x, &y));
    two_slices!(iterators, x.clone(), y.clone());
    test_rule!(weighted(&x, &y));
    two_slices!(weighted, x.clone(), y.clone());
    for k in [0, 2] {
        test_rule!(vec_ref_arg(&x, k));
        check_corpus(
            "vec_ref_arg",
            x.clone(),
            |x| vec_ref_arg(x, k),
            |x| value_and_gradient!(vec_ref_arg(x, k)).1.0,
            |x, v| {
                let (y, (g, _), (h, _)) = hvp!(vec_ref_arg(&*x, k), (v, NoTangent));
                (y, g, h)
            },
            |x| hessian!(vec_ref_arg(&*x, k)),
        );
    }
    for limit in [0.2, 100.0] {
        test_rule!(early_exit(&x, limit));
        slice_and_scalar!(early_exit, x.clone(), limit);
    }
    let arr = [0.3, -1.1, 0.8];
    test_rule!(array_written(arr, 1.7));
    check_corpus(
        "array_written",
        (arr, 1.7),
        |p| array_written(p.0, p.1),
        |p| {
            let (_, (g, a)) = value_and_gradient!(array_written(p.0, p.1));
            let mut g = g.to_vec();
            g.push(a);
            g
        },
        |p, v| {
            let (y, (g, a), (h, ha)) = hvp!(array_written(p.0, p.1), (v.0, v.1));
            let (mut g, mut h) = (g.to_vec(), h.to_vec());
            g.push(a);
            h.push(ha);
            (y, g, h)
        },
        |p| hessian!(array_written(p.0, p.1)),
    );
    for n in [1, 5] {
        test_rule!(rewritten(&x, 0.7, n));
        check_corpus(
            "rewritten",
            (x.clone(), 0.7),
            |p| rewritten(&p.0, p.1, n),
            |p| {
                let (_, (mut g, a, _)) = value_and_gradient!(rewritten(&p.0[..], p.1, n));
                g.push(a);
                g
            },
            |p, v| {
                let (y, (mut g, a, _), (mut h, ha, _)) =
                    hvp!(rewritten(&p.0[..], p.1, n), (&v.0, v.1, NoTangent));
                g.push(a);
                h.push(ha);
                (y, g, h)
            },
            |p| hessian!(rewritten(&p.0[..], p.1, n)),
        );
    }
}

/// The rule at `f64` keeps the function's own signature: `Const(..)` arguments given as
/// literals (`vec![1.0, ..]`, whose element type is known only from the rule) get their
/// gradients typed, and the rule's value is the function's, to the bit.
#[test]
fn the_f64_rule_keeps_the_signature() {
    let (w, x) = (vec![1.0, 2.0], vec![3.0, -1.0]);
    let (e, (gw, gx)) = value_and_gradient!(weighted(&w, Const(&x)));
    assert_eq!(e, weighted(&w, &x));
    assert_eq!(gw, vec![3.0, -1.0]);
    assert_eq!(gx, NoTangent);
    let (y, pb) = rosenbrock_rrule(CoDual::new(&x[..], Primal::zero_shadow(&x[..])));
    assert_eq!(y.primal, rosenbrock(&x));
    let _ = pb(1.0);
}

/// `Σ x⁴ / 4`, over `f64`, with `second_order`: a gradient of it can be taken inside another
/// differentiated function (nested AD runs `hvp!` in the outer rules).
#[differentiable(second_order)]
fn quartic(x: &[f64]) -> f64 {
    let mut u = 0.0;
    for v in x.iter() {
        u += *v * *v * *v * *v * 0.25;
    }
    u
}

/// One step of gradient descent on `quartic`, then `quartic` where it lands.
#[differentiable]
fn one_step(x: &[f64], lr: f64) -> f64 {
    let (_, (g,)) = value_and_gradient!(quartic(x));
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] - lr * g[i];
    }
    quartic(&y)
}

/// `y = x − lr x³`, `e = Σ y⁴ / 4`: `de/dx = y³ (1 − 3 lr x²)`, `de/dlr = −Σ y³ x³`; both
/// modes by `test_rule!`.
#[test]
fn a_nested_gradient_of_a_function_over_f64() {
    let (x, lr) = (vec![0.5, -1.0, 0.25], 0.1);
    test_rule!(one_step(&x, lr));
    let (_, (gx, glr)) = value_and_gradient!(one_step(&x, lr));
    let y: Vec<f64> = x.iter().map(|v| v - lr * v * v * v).collect();
    for i in 0..x.len() {
        let want = y[i].powi(3) * (1.0 - 3.0 * lr * x[i] * x[i]);
        assert!((gx[i] - want).abs() < 1e-12, "{} against {want}", gx[i]);
    }
    let want: f64 = -y.iter().zip(&x).map(|(y, x)| y.powi(3) * x.powi(3)).sum::<f64>();
    assert!((glr - want).abs() < 1e-12, "{glr} against {want}");
}

#[differentiable(second_order)]
fn sq_norm(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    s
}

#[differentiable]
fn log_sum_exp<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for v in x.iter() {
        s += v.exp();
    }
    s.ln()
}

#[differentiable(second_order)]
fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Calls of a `second_order` function of a buffer, of one of a number (in a loop), and of a
/// generic one.
#[differentiable(second_order)]
fn model(x: &[f64], a: f64) -> f64 {
    let r = sq_norm(x);
    let l = log_sum_exp(x);
    let mut s = 0.0;
    for i in 0..x.len() {
        s += sigmoid(a * x[i]);
    }
    a * r + l + s
}

/// A call of a function that itself calls others.
#[differentiable(second_order)]
fn outer(x: &[f64]) -> f64 {
    let m = model(x, 0.7);
    m * sigmoid(x[0])
}

#[test]
fn calls_of_other_functions() {
    let x = vec![0.3, -0.2, 0.5];
    test_rule!(model(&x, 1.5));
    test_rule!(outer(&x));
    one_slice!(outer, x.clone());
    check_corpus(
        "model",
        x.clone(),
        |x| model(x, 1.5),
        |x| value_and_gradient!(model(x, 1.5)).1.0,
        |x, v| {
            let (y, (g, _), (h, _)) = hvp!(model(&*x, 1.5), (v, 0.0));
            (y, g, h)
        },
        |x| {
            let (y, g, h) = hessian!(model(&*x, Const(1.5)));
            (y, g, h)
        },
    );
}

/// `hessian!` and `hvp!` given unsuffixed float literals, as arguments and as directions
/// (negative ones too): the literals are `f64`, as the rules are.
#[test]
fn literal_arguments() {
    let (v, _, h) = hessian!(scalars(1.5, -2.0));
    let (w, (gx, _), (hx, hy)) = hvp!(scalars(1.5, -2.0), (1.0, -0.5));
    assert_eq!(v, w);
    assert!((hx - (h[(0, 0)] - 0.5 * h[(0, 1)])).abs() < 1e-12);
    assert!((hy - (h[(1, 0)] - 0.5 * h[(1, 1)])).abs() < 1e-12);
    let (_, (g, _)) = value_and_gradient!(scalars(1.5, -2.0));
    assert_eq!(gx, g);
}
