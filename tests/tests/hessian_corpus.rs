//! Hessian-vector products of the reverse corpus (`reverse_corpus.rs`), its functions written
//! generic over `T: Float` (`hvp!` runs the derived reverse rule at `T = Fwd<f64>`, so it needs
//! them generic): literals become `T::from_f64(..)`, `i as f64` becomes
//! `T::from_f64(i as f64)`, and functions with `&mut` arguments (which `hvp!` refuses: the
//! Hessian is that of the result) mutate a local copy instead.
//!
//! Each is checked by `check_corpus`: `hvp!`'s value against the function, its gradient against
//! central differences of the value, its product along random directions against central
//! differences of the gradient (`value_and_gradient!` at `f64`), and `hessian!` for symmetry,
//! against the finite-difference Hessian and against the products.
//!
//! Left out, and why: the struct functions (`predict`, `norm`, `nested`, `update`, ..: `hvp!`
//! lifts numbers and buffers of numbers, not `#[derive(Tangent)]` structs), `matches_and_guards`
//! (an enum argument, which `hvp!` does not lift), `casts_and_integers` (`x as f32` has no
//! generic form), `tuple_in_out` and `make_point` (results that are not scalars),
//! `scale_in_place` and `update_nested` (no result).

#![allow(
    clippy::assign_op_pattern,
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::borrow_deref_ref
)] // the corpus as written; `&*x` lends a `&Vec` held by name, as `hvp!` takes it

use mooncake_runtime::prelude::*;
use mooncake_tests::{check_corpus, one_slice, slice_and_scalar, two_slices};

#[differentiable]
fn branch<T: Float>(x: T) -> T {
    if x > T::ZERO { x.sin() * x } else { -x * x * x }
}

#[differentiable]
fn scalars<T: Float>(x: T, y: T) -> T {
    let a = x * y + x / y - y;
    let b = -a * T::TWO + x % T::from_f64(0.7);
    a * b
}

#[differentiable]
fn loops<T: Float>(x: T, n: usize) -> T {
    let mut s = T::ZERO;
    for i in 0..n {
        s += x * T::from_f64(i as f64);
    }
    for i in (0..n).rev() {
        s = s * T::from_f64(0.5) + x.sin() * T::from_f64(i as f64);
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

#[differentiable]
fn while_and_loop<T: Float>(x: T) -> T {
    let mut y = x;
    let mut k = 0;
    while k < 5 {
        y = y * T::from_f64(0.9) + T::from_f64(0.1);
        k += 1;
    }
    let r = loop {
        y = y.sin() + T::from_f64(0.5);
        k += 1;
        if k == 9 {
            break y * T::TWO;
        }
    };
    r * y
}

#[differentiable]
fn labelled_and_early_return<T: Float>(x: T, limit: T) -> T {
    let mut s = T::ZERO;
    'outer: for i in 0..4 {
        for j in 0..4 {
            if j > i {
                continue 'outer;
            }
            s += x * x * T::from_f64(j as f64) + T::from_f64(0.1) * limit;
            if s > limit {
                return s * s;
            }
            if s > T::from_f64(100.0) {
                break 'outer;
            }
        }
    }
    s * x
}

#[differentiable]
fn square<T: Float>(x: T) -> T {
    x * x
}

mod inner {
    use mooncake_runtime::prelude::*;

    #[differentiable]
    pub fn cube<T: Float>(x: T) -> T {
        x * x * x
    }
}

#[differentiable]
fn softplus<T: Float>(x: T) -> T {
    if x > T::from_f64(20.0) { x } else { x.exp().ln_1p() }
}

#[differentiable]
fn calls<T: Float>(x: T, y: T) -> T {
    square(x) + inner::cube(y) + self::square(x * y) + softplus(x)
}

#[differentiable]
fn factorial_like<T: Float>(x: T, n: u32) -> T {
    if n == 0 { T::ONE } else { x * factorial_like(x, n - 1) }
}

#[differentiable]
fn checked<T: Float>(x: T) -> T {
    assert!(x > T::ZERO, "x must be positive, got {}", x);
    debug_assert!(x < T::from_f64(1e6));
    x.ln() * x
}

#[differentiable]
fn guarded<T: Float>(x: T, k: i32) -> T {
    let safe = if x.is_nan() || !x.is_finite() { T::ZERO } else { x };
    safe * safe * T::from_f64((k.abs().pow(2)) as f64)
}

#[differentiable]
fn slice_arg<T: Float>(x: &[T]) -> T {
    x[0] * x[1] - x[2] * x[0] * x[0]
}

#[differentiable]
fn vec_ref_arg<T: Float>(x: &Vec<T>, k: usize) -> T {
    x[0] * x[0] * x[k] + x[k].exp()
}

#[differentiable]
fn sum_sin<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += x[i].sin();
    }
    s
}

#[differentiable]
fn mean<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for v in x.iter() {
        s += *v;
    }
    s / T::from_f64(x.len() as f64)
}

#[differentiable]
fn iterators<T: Float>(x: &[T], y: &[T]) -> T {
    let mut s = T::ZERO;
    for v in x.iter() {
        s += *v * T::TWO;
    }
    for v in x {
        s += v.sin();
    }
    for (i, v) in y.iter().enumerate() {
        s += *v * *v * T::from_f64(i as f64);
    }
    for (a, b) in x.iter().zip(y.iter()) {
        s += *a * *b;
    }
    s + x.iter().sum::<T>()
}

#[differentiable]
fn rosenbrock<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() - 1 {
        let a = T::ONE - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + T::from_f64(100.0) * b * b;
    }
    s
}

#[differentiable]
fn early_exit<T: Float>(x: &[T], limit: T) -> T {
    let mut s = T::ZERO;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if j > i {
                continue 'outer;
            }
            s += x[i] * x[j];
            if s > limit {
                return s * T::TWO;
            }
        }
    }
    s
}

#[differentiable]
fn slices_through_calls<T: Float>(x: &[T], y: &[T], a: T) -> T {
    sum_sin(x) * a + slice_arg(y) + mean(x) * a + rosenbrock(x)
}

/// `overwrite_then_read` of the corpus, on a copy of its `&mut` argument.
#[differentiable]
fn overwrite_then_read<T: Float>(x0: &[T], y: &[T]) -> T {
    let mut x = x0.to_vec();
    x[0] = y[1] * T::TWO;
    x[1] = x[0] * x[2];
    x[2] = T::from_f64(0.5);
    x[0] + x[1] * y[0] + x[2] * x0[2]
}

#[differentiable]
fn scale_in_place<T: Float>(x: &mut [T], a: T) {
    for i in 0..x.len() {
        x[i] *= a;
    }
}

/// `calls_mutating` of the corpus, on a copy.
#[differentiable]
fn calls_mutating<T: Float>(x0: &[T], a: T) -> T {
    let mut x = x0.to_vec();
    scale_in_place(&mut x, a);
    scale_in_place(&mut x, a);
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += x[i].sin();
    }
    s
}

#[differentiable]
fn weighted<T: Float>(w: &[T], h: &Vec<T>) -> T {
    let mut s = T::ZERO;
    for (a, b) in w.iter().zip(h.iter()) {
        s += *a * *b;
    }
    s
}

#[differentiable]
fn two_layer_loss<T: Float>(w1: &[T], w2: &[T], x: &[T]) -> T {
    let mut h = Vec::new();
    for i in 0..2 {
        let mut s = T::ZERO;
        for j in 0..x.len() {
            s += w1[i * x.len() + j] * x[j];
        }
        h.push(s.tanh());
    }
    let y = weighted(w2, &h);
    y * y
}

/// `buffer_methods` of the corpus, on a copy of its `&mut` argument.
#[differentiable]
fn buffer_methods<T: Float>(x0: &[T], y: &[T], a: T) -> T {
    let mut x = x0.to_vec();
    let mut tmp = vec![T::ZERO; x.len()];
    tmp.copy_from_slice(y);
    tmp.swap(0, 1);
    x.copy_from_slice(&tmp);
    x[2] *= a;
    let mut s = T::ZERO;
    for i in 0..x.len() {
        s += x[i] * x[i] * T::from_f64(i as f64 + 1.0);
    }
    x.fill(a);
    s + x[0] * x0[0]
}

#[differentiable]
fn gen_ping<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x * x } else { gen_pong(x.sin(), n - 1) + x }
}

#[differentiable]
fn gen_pong<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x.exp() } else { gen_ping(x * x, n - 1) * x }
}

#[differentiable]
fn scalar_f32<T: Float>(x: T, y: T) -> T {
    x * y + x.sin() - y.exp()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn scalar_code() {
    for x in [0.7, -0.7] {
        check_corpus(
            "branch",
            x,
            |x| branch(*x),
            |x| vec![value_and_gradient!(branch(*x)).1.0],
            |x, v| {
                let (y, (g,), (h,)) = hvp!(branch(*x), (*v,));
                (y, vec![g], vec![h])
            },
            |x| hessian!(branch(*x)),
        );
    }
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
    check_corpus(
        "checked",
        2.5,
        |x| checked(*x),
        |x| vec![value_and_gradient!(checked(*x)).1.0],
        |x, v| {
            let (y, (g,), (h,)) = hvp!(checked(*x), (*v,));
            (y, vec![g], vec![h])
        },
        |x| hessian!(checked(*x)),
    );
    check_corpus(
        "guarded",
        0.7,
        |x| guarded(*x, -3),
        |x| vec![value_and_gradient!(guarded(*x, -3)).1.0],
        |x, v| {
            let (y, (g, _), (h, _)) = hvp!(guarded(*x, -3), (*v, NoTangent));
            (y, vec![g], vec![h])
        },
        |x| hessian!(guarded(*x, -3)),
    );
    // f32: the same function at f32, against the f64 instance.
    let (y, (a, b), (ha, hb)): (f32, (f32, f32), (f32, f32)) =
        hvp!(scalar_f32(0.7_f32, 1.3_f32), (1.0_f32, -0.5_f32));
    let (y64, (a64, b64), (ha64, hb64)): (f64, (f64, f64), (f64, f64)) =
        hvp!(scalar_f32(0.7, 1.3), (1.0, -0.5));
    for (p, q) in [(y, y64), (a, a64), (b, b64), (ha, ha64), (hb, hb64)] {
        assert!((f64::from(p) - q).abs() < 1e-5 * (1.0 + q.abs()), "scalar_f32: {p} against {q}");
    }
    check_corpus(
        "scalar_f32 at f64",
        (0.7, 1.3),
        |p| scalar_f32(p.0, p.1),
        |p| {
            let (_, (a, b)) = value_and_gradient!(scalar_f32(p.0, p.1));
            vec![a, b]
        },
        |p, v| {
            let (y, (a, b), (ha, hb)) = hvp!(scalar_f32(p.0, p.1), (v.0, v.1));
            (y, vec![a, b], vec![ha, hb])
        },
        |p| hessian!(scalar_f32(p.0, p.1)),
    );
}

#[test]
fn loops_and_control_flow() {
    for n in [0, 1, 4] {
        check_corpus(
            "loops",
            0.8,
            |x| loops(*x, n),
            |x| vec![value_and_gradient!(loops(*x, n)).1.0],
            |x, v| {
                let (y, (g, _), (h, _)) = hvp!(loops(*x, n), (*v, NoTangent));
                (y, vec![g], vec![h])
            },
            |x| hessian!(loops(*x, n)),
        );
    }
    check_corpus(
        "while_and_loop",
        0.4,
        |x| while_and_loop(*x),
        |x| vec![value_and_gradient!(while_and_loop(*x)).1.0],
        |x, v| {
            let (y, (g,), (h,)) = hvp!(while_and_loop(*x), (*v,));
            (y, vec![g], vec![h])
        },
        |x| hessian!(while_and_loop(*x)),
    );
    for limit in [0.5, 3.0, 400.0] {
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
fn calls_and_recursion() {
    check_corpus(
        "calls",
        (0.6, -1.1),
        |p| calls(p.0, p.1),
        |p| {
            let (_, (a, b)) = value_and_gradient!(calls(p.0, p.1));
            vec![a, b]
        },
        |p, v| {
            let (y, (a, b), (ha, hb)) = hvp!(calls(p.0, p.1), (v.0, v.1));
            (y, vec![a, b], vec![ha, hb])
        },
        |p| hessian!(calls(p.0, p.1)),
    );
    for n in [0, 1, 3, 6] {
        check_corpus(
            "factorial_like",
            1.3,
            |x| factorial_like(*x, n),
            |x| vec![value_and_gradient!(factorial_like(*x, n)).1.0],
            |x, v| {
                let (y, (g, _), (h, _)) = hvp!(factorial_like(*x, n), (*v, NoTangent));
                (y, vec![g], vec![h])
            },
            |x| hessian!(factorial_like(*x, n)),
        );
        check_corpus(
            "gen_ping",
            0.8,
            |x| gen_ping(*x, n),
            |x| vec![value_and_gradient!(gen_ping(*x, n)).1.0],
            |x, v| {
                let (y, (g, _), (h, _)) = hvp!(gen_ping(*x, n), (*v, NoTangent));
                (y, vec![g], vec![h])
            },
            |x| hessian!(gen_ping(*x, n)),
        );
    }
}

#[test]
fn read_only_buffers() {
    let x = vec![0.4, -0.3, 0.9, 1.2];
    one_slice!(slice_arg, x.clone());
    one_slice!(sum_sin, x.clone());
    one_slice!(mean, x.clone());
    one_slice!(rosenbrock, vec![-1.2, 1.0, 0.5, 0.8]);
    two_slices!(iterators, x.clone(), vec![0.2, 0.8, -0.5, 0.3]);
    for k in [0, 2] {
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
        slice_and_scalar!(early_exit, x.clone(), limit);
    }
    check_corpus(
        "slices_through_calls",
        (x.clone(), vec![0.1, 0.7, -0.6], 1.7),
        |p| slices_through_calls(&p.0, &p.1, p.2),
        |p| {
            let (_, (mut g, b, a)) =
                value_and_gradient!(slices_through_calls(&p.0[..], &p.1[..], p.2));
            g.extend(b);
            g.push(a);
            g
        },
        |p, v| {
            let (y, (mut g, b, a), (mut h, hb, ha)) =
                hvp!(slices_through_calls(&p.0, &p.1, p.2), (&v.0, &v.1, v.2));
            g.extend(b);
            g.push(a);
            h.extend(hb);
            h.push(ha);
            (y, g, h)
        },
        |p| hessian!(slices_through_calls(&p.0, &p.1, p.2)),
    );
}

#[test]
fn mutation_of_local_copies_and_built_buffers() {
    two_slices!(overwrite_then_read, vec![0.3, -0.6, 1.4], vec![0.8, 1.1]);
    slice_and_scalar!(calls_mutating, vec![0.3, -0.6, 1.4], 0.9);
    check_corpus(
        "buffer_methods",
        (vec![0.3, -0.6, 1.4], vec![0.8, 1.1, -0.2], 1.6),
        |p| buffer_methods(&p.0, &p.1, p.2),
        |p| {
            let (_, (mut g, b, a)) = value_and_gradient!(buffer_methods(&p.0[..], &p.1[..], p.2));
            g.extend(b);
            g.push(a);
            g
        },
        |p, v| {
            let (y, (mut g, b, a), (mut h, hb, ha)) =
                hvp!(buffer_methods(&p.0, &p.1, p.2), (&v.0, &v.1, v.2));
            g.extend(b);
            g.push(a);
            h.extend(hb);
            h.push(ha);
            (y, g, h)
        },
        |p| hessian!(buffer_methods(&p.0, &p.1, p.2)),
    );
    check_corpus(
        "two_layer_loss",
        (vec![0.2, -0.4, 0.6, 0.1, 0.3, -0.2], vec![0.7, -1.1]),
        |p| two_layer_loss(&p.0, &p.1, &[0.5, -1.0, 2.0]),
        |p| {
            let (_, (mut a, b, _)) = value_and_gradient!(two_layer_loss(
                &p.0[..],
                &p.1[..],
                Const(&[0.5, -1.0, 2.0][..])
            ));
            a.extend(b);
            a
        },
        |p, v| {
            let (y, (mut a, b, _), (mut ha, hb, _)) =
                hvp!(two_layer_loss(&p.0, &p.1, Const(&[0.5, -1.0, 2.0])), (&v.0, &v.1, NoTangent));
            a.extend(b);
            ha.extend(hb);
            (y, a, ha)
        },
        |p| hessian!(two_layer_loss(&p.0, &p.1, Const(&[0.5, -1.0, 2.0]))),
    );
}
