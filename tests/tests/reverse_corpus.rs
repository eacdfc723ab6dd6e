//! Reverse-mode tests written for the reverse transform (`NAME_rrule`): mutation through each
//! kind of `&mut`, aliasing, recursion depth, the gradient API, and functions whose reverse
//! pass exercises a particular path (tapes, block stack, loans). Each is checked by the test
//! utility in both modes: finite differences against the forward and the reverse rule, and the
//! two rules against each other. The corpus of the subset (`forward_corpus.rs`) is also checked
//! in both modes and is not repeated here.

#![allow(
    clippy::neg_cmp_op_on_partial_ord,
    clippy::assign_op_pattern,
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::useless_vec
)]

use mooncake_runtime::prelude::*;
use mooncake_tests::recursion::{ping, ping_frule, ping_rrule, pong, pong_frule, pong_rrule};

#[differentiable]
fn branch(x: f64) -> f64 {
    if x > 0.0 { x.sin() } else { -x }
}

#[differentiable]
fn scalars(x: f64, y: f64) -> f64 {
    let a = x * y + x / y - y;
    let b = -a * 2.0 + x % 0.7;
    a * b
}

#[differentiable]
fn scalar_f32(x: f32, y: f32) -> f32 {
    x * y + x.sin() - y.exp()
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Mode {
    Square,
    Cube,
}

#[differentiable]
fn matches_and_guards(x: f64, n: i32, m: Mode) -> f64 {
    let a = match n {
        0 => x,
        1 | 2 => x * x,
        3..=5 if x > 0.0 => x.sqrt(),
        k => x * (k as f64),
    };
    let b = match m {
        Mode::Square => x * x,
        Mode::Cube => x * x * x,
    };
    a + b
}

#[differentiable]
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

#[differentiable]
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

#[differentiable]
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
fn calls(x: f64, y: f64) -> f64 {
    square(x) + inner::cube(y) + self::square(x * y) + mooncake_tests::softplus(x)
}

#[differentiable]
fn factorial_like(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * factorial_like(x, n - 1) }
}

#[differentiable]
fn casts_and_integers(x: f64, y: f32, n: usize) -> f64 {
    let mut k = n * 2 + 1;
    k -= 1;
    let a = (x as f32) * y;
    (a as f64) * (k as f64) + (y as f64) * x + (n as f64) / 2.0
}

#[differentiable]
fn checked(x: f64) -> f64 {
    assert!(x > 0.0, "x must be positive, got {}", x);
    debug_assert!(x < 1e6);
    if x > 100.0 {
        panic!("too large: {}", x);
    }
    x.ln()
}

#[differentiable]
fn guarded(x: f64, k: i32) -> f64 {
    let safe = if x.is_nan() || !x.is_finite() { 0.0 } else { x };
    safe * (k.abs().pow(2) as f64)
}

// ---- read-only buffers -----------------------------------------------------------------------

#[differentiable]
fn slice_arg(x: &[f64]) -> f64 {
    x[0] * x[1] - x[2]
}

#[differentiable]
fn vec_ref_arg(x: &Vec<f64>, k: usize) -> f64 {
    x[0] * x[0] + x[k]
}

#[differentiable]
fn sum_sin(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
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
    s + x.iter().sum::<f64>()
}

#[differentiable]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[differentiable]
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

#[differentiable]
fn slices_through_calls(x: &[f64], y: &[f64], a: f64) -> f64 {
    sum_sin(x) * a + slice_arg(y) + mooncake_tests::mean(x) + rosenbrock(x)
}

// ---- mutation through `&mut` ------------------------------------------------------------------

#[differentiable]
fn scale_in_place(x: &mut [f64], a: f64) {
    for i in 0..x.len() {
        x[i] *= a;
    }
}

#[differentiable]
fn overwrite_then_read(x: &mut Vec<f64>, y: &[f64]) -> f64 {
    x[0] = y[1] * 2.0;
    x[1] = x[0] * x[2];
    x[2] = 0.5;
    x[0] + x[1] * y[0]
}

#[differentiable]
fn two_mutated(a: &mut f64, b: &mut [f64], s: f64) -> f64 {
    *a = *a * s + b[0];
    b[1] = *a - s;
    *a * b[1]
}

#[differentiable]
fn calls_mutating(x: &mut [f64], a: f64) -> f64 {
    scale_in_place(x, a);
    scale_in_place(x, a);
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
    }
    s
}

// ---- buffers built in the body ----------------------------------------------------------------

#[differentiable]
fn two_layer_loss(w1: &[f64], w2: &[f64], x: &[f64]) -> f64 {
    let mut h = Vec::new();
    for i in 0..2 {
        let mut s = 0.0;
        for j in 0..x.len() {
            s += w1[i * x.len() + j] * x[j];
        }
        h.push(s.tanh());
    }
    let y = weighted(w2, &h);
    y * y
}

#[differentiable]
fn weighted(w: &[f64], h: &Vec<f64>) -> f64 {
    let mut s = 0.0;
    for (a, b) in w.iter().zip(h.iter()) {
        s += a * b;
    }
    s
}

// ---- structs: reading fields ------------------------------------------------------------------

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Params {
    w: Vec<f64>,
    b: f64,
    n: usize,
}

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Outer {
    inner: Point,
    scale: f64,
    params: Params,
}

#[differentiable]
fn predict(p: &Params, x: &[f64]) -> f64 {
    let mut s = p.b;
    for i in 0..p.n {
        s += p.w[i] * x[i];
    }
    s + p.w.iter().sum::<f64>() * 0.1 + (p.w.len() as f64)
}

#[differentiable]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

#[differentiable]
fn nested(o: &Outer, x: &[f64]) -> f64 {
    let mut s = o.inner.x * o.scale + o.inner.y.sin();
    for (w, v) in o.params.w.iter().zip(x.iter()) {
        s += w * v;
    }
    s * o.params.b
}

#[differentiable]
fn point_by_value_and_ref(p: Point, q: &Point) -> f64 {
    p.x * q.y - p.y * q.x + norm(p)
}

#[differentiable]
fn update(p: &mut Params, g: f64) -> f64 {
    p.b += g * p.w[0];
    p.w[1] = p.w[1] * g;
    let mut s = 0.0;
    for i in 0..p.w.len() {
        s += p.w[i];
    }
    s * p.b
}

#[differentiable]
fn update_nested(o: &mut Outer, g: f64) {
    o.inner.x *= g;
    o.params.w[0] += o.scale * g;
}

// ---- tuples, struct literals, more buffer methods ----------------------------------------------

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Pair(f64, f64);

#[differentiable]
fn tuple_in_out(p: (f64, f64), n: i32) -> (f64, f64) {
    let (a, b) = p;
    (a * b, a.powi(n) - b)
}

#[differentiable]
fn make_point(a: f64) -> Point {
    Point { x: a, y: a * 2.0 }
}

#[differentiable]
fn literals(a: f64) -> f64 {
    let p = Pair(a, a.sin());
    let Pair(u, v) = p;
    let q = make_point(u);
    let Point { x, y } = q;
    p.0 * p.1 + u - v + x * y + norm(q)
}

#[differentiable]
fn buffer_methods(x: &mut [f64], y: &[f64], a: f64) -> f64 {
    let mut tmp = vec![0.0; x.len()];
    tmp.copy_from_slice(y);
    tmp.swap(0, 1);
    x.copy_from_slice(&tmp);
    x[2] *= a;
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * (i as f64 + 1.0);
    }
    x.fill(a);
    s + x[0]
}

#[test]
fn scalar_code() {
    test_rule!(branch(0.7));
    test_rule!(branch(-0.7));
    test_rule!(scalars(0.6, 1.3));
    test_rule!(scalar_f32(0.7_f32, 1.3_f32), rtol = 1e-2, atol = 1e-2, dot_tol = 1e-4);
    test_rule!(casts_and_integers(0.7, 1.5_f32, 4), rtol = 1e-2, atol = 1e-2, dot_tol = 1e-4);
    test_rule!(checked(2.5));
    test_rule!(guarded(0.7, -3));
}

#[test]
fn branches_and_matches() {
    for n in [0, 1, 2, 4, 7] {
        for m in [Mode::Square, Mode::Cube] {
            test_rule!(matches_and_guards(0.7, n, m));
            test_rule!(matches_and_guards(1.7, n, m));
        }
    }
}

#[test]
fn control_flow() {
    test_rule!(loops(0.7, 5));
    test_rule!(loops(0.7, 0));
    test_rule!(while_and_loop(0.3));
    test_rule!(labelled_and_early_return(0.3, 1.0));
    test_rule!(labelled_and_early_return(0.3, 1000.0));
}

#[test]
fn calls_and_recursion() {
    test_rule!(calls(0.7, -0.4));
    test_rule!(factorial_like(0.9, 6));
    // Mutual recursion: `forward_corpus.rs::calls_and_recursion` checks it in both modes.
}

#[test]
fn read_only_buffers() {
    let x = vec![0.5, -1.5, 2.0, 0.25];
    let y = vec![1.0, 0.5, -0.5, 2.0];
    test_rule!(slice_arg(&x));
    test_rule!(vec_ref_arg(&x, 3));
    test_rule!(sum_sin(&x));
    test_rule!(iterators(&x, &y));
    test_rule!(iterators(&x, &x));
    test_rule!(rosenbrock(&x));
    test_rule!(early_exit(&x, 1.0));
    test_rule!(early_exit(&x, 100.0));
    test_rule!(slices_through_calls(&x, &y, 1.5));
    // The same buffer passed twice shares one shadow: the gradient is the sum over both uses.
    test_rule!(slices_through_calls(&x, &x, 1.5));
}

#[test]
fn mutation() {
    let x = vec![1.0, -2.0, 0.5];
    test_rule!(scale_in_place(&mut x, 1.5));
    let v = vec![1.0, 2.0, 3.0];
    let y = vec![0.5, -1.5];
    test_rule!(overwrite_then_read(&mut v, &y));
    test_rule!(two_mutated(&mut 0.5, &mut x, 1.5));
    test_rule!(calls_mutating(&mut x, 0.7));
}

#[test]
fn gradient_with_mutable_arguments_leaves_them_as_on_entry() {
    let mut x = vec![1.0, -2.0, 0.5];
    let (v, (g, da)) = value_and_gradient!(calls_mutating(&mut x, 0.7));
    assert_eq!(x, vec![1.0, -2.0, 0.5]);
    let mut y = x.clone();
    assert_eq!(v, calls_mutating(&mut y, 0.7));
    // sum_i sin(a^2 x_i): d/dx_i = a^2 cos(a^2 x_i), d/da = sum_i 2 a x_i cos(a^2 x_i).
    let a2 = 0.49_f64;
    for i in 0..3 {
        assert!((g[i] - a2 * (a2 * x[i]).cos()).abs() < 1e-12);
    }
    let expected: f64 = x.iter().map(|xi| 2.0 * 0.7 * xi * (a2 * xi).cos()).sum();
    assert!((da - expected).abs() < 1e-12);
}

#[test]
fn buffers_built_in_the_body() {
    let w1 = vec![0.1, -0.2, 0.3, 0.4, 0.5, -0.6];
    let w2 = vec![0.7, -0.8];
    let x = vec![1.0, 0.5, -0.5];
    test_rule!(two_layer_loss(&w1, &w2, &x));
}

#[test]
fn struct_fields() {
    let p = Params { w: vec![0.5, -1.0, 2.0], b: 0.3, n: 3 };
    let x = vec![1.0, 2.0, -0.5];
    test_rule!(predict(&p, &x));
    test_rule!(norm(Point { x: 0.3, y: -1.2 }));
    let o = Outer {
        inner: Point { x: 0.3, y: -1.2 },
        scale: 2.0,
        params: Params { w: vec![0.5, -1.0], b: 0.1, n: 2 },
    };
    test_rule!(nested(&o, &x));
    test_rule!(point_by_value_and_ref(Point { x: 0.3, y: -1.2 }, &Point { x: 1.5, y: 0.5 }));
    let q = p.clone();
    test_rule!(update(&mut q, 1.5));
    let mut oo = o.clone();
    test_rule!(update_nested(&mut oo, 1.5));
    // A complete gradient computation leaves `&mut` arguments as they were on entry.
    let (_, (go, gg)) = value_and_gradient!(update(&mut oo.params, 0.5));
    assert_eq!(oo, o);
    assert_eq!(go.n, NoTangent);
    assert!(gg.is_finite());
    // The gradient of a struct is its tangent type, with the same field names.
    let (_, (g, gx)) = value_and_gradient!(predict(&p, &x));
    assert_eq!(g.b, 1.0);
    assert_eq!(g.n, NoTangent);
    assert!((g.w[0] - (x[0] + 0.1)).abs() < 1e-12);
    assert_eq!(gx, vec![0.5, -1.0, 2.0]);
}

#[test]
fn tuples_literals_and_buffer_methods() {
    test_rule!(tuple_in_out((1.5, -0.5), 3));
    test_rule!(make_point(0.7));
    test_rule!(literals(0.7));
    let x = vec![1.0, -2.0, 0.5];
    let y = vec![0.3, 0.7, -1.1];
    test_rule!(buffer_methods(&mut x, &y, 1.5));
    let (v, ((da, db), dn)) = value_and_pullback!(tuple_in_out((1.5, -0.5), 2), (1.0, 0.0));
    assert_eq!(v, (-0.75, 2.75));
    assert_eq!((da, db, dn), (-0.5, 1.5, NoTangent));
}

#[test]
fn gradient_api_with_buffers() {
    let x = vec![1.0, 2.0, 3.0];
    let (v, (g,)) = value_and_gradient!(rosenbrock(&x));
    assert_eq!(v, rosenbrock(&x));
    // d/dx of sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 by hand.
    let mut expected = vec![0.0; 3];
    for i in 0..2 {
        let b = x[i + 1] - x[i] * x[i];
        expected[i] += -2.0 * (1.0 - x[i]) - 400.0 * x[i] * b;
        expected[i + 1] += 200.0 * b;
    }
    assert_eq!(g.len(), 3);
    for i in 0..3 {
        assert!((g[i] - expected[i]).abs() < 1e-10, "{g:?} vs {expected:?}");
    }
}

#[test]
fn gradient_api() {
    // A path to a function in another module.
    let (v, (d,)) = value_and_gradient!(inner::cube(2.0));
    assert_eq!((v, d), (8.0, 12.0));
    let (v, (dx, dy)) = value_and_gradient!(scalars(0.6, 1.3));
    assert_eq!(v, scalars(0.6, 1.3));
    // Against the forward mode along each axis.
    let (_, fx) = value_and_derivative!(scalars(0.6, 1.3), (1.0, 0.0));
    let (_, fy) = value_and_derivative!(scalars(0.6, 1.3), (0.0, 1.0));
    assert!((dx - fx).abs() < 1e-12 && (dy - fy).abs() < 1e-12);
    // Integer arguments get `NoRData`-backed `NoTangent` gradients.
    let (_, (dx, dn)) = value_and_gradient!(factorial_like(0.9, 3));
    assert!((dx - 3.0 * 0.81).abs() < 1e-12);
    assert_eq!(dn, NoTangent);
    let (v, (dx, dk)) = value_and_pullback!(guarded(0.5, 3), 2.0);
    assert_eq!((v, dx, dk), (4.5, 18.0, NoTangent));
}

#[test]
fn deep_recursion_in_the_pullback() {
    // 10,000 nested calls, each with a boxed pullback, so the pullback recurses as deep as the
    // primal. Like the primal, the rule needs stack in proportion to the depth (the documented
    // limit, measured: in a release build depth 10,000 fits the 2 MiB stack of a spawned thread
    // and 20,000 the 8 MiB main thread; an unoptimised build needs about four times as much, so
    // this test, built unoptimised, runs on a thread with a 256 MiB stack).
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| value_and_gradient!(factorial_like(1.00001, 10_000)))
        .expect("spawn a thread");
    let (v, (dx, _)) = worker.join().expect("no stack overflow");
    let expected = 1.00001_f64.powi(10_000);
    assert!((v - expected).abs() < 1e-9 * expected);
    let expected_dx = 10_000.0 * 1.00001_f64.powi(9_999);
    assert!((dx - expected_dx).abs() < 1e-6 * expected_dx);
}

// ---- mutual recursion, with no attribute -----------------------------------------------------

/// A cycle of three, through a slice and a method.
#[differentiable]
fn tri_a(v: &[f64], k: usize) -> f64 {
    if k == 0 { v[0] * v[1] } else { tri_b(v, k - 1) + v[k % v.len()] }
}

#[differentiable]
fn tri_b(v: &[f64], k: usize) -> f64 {
    let s = Scaler { c: 0.5 };
    s.tri_c(v, k).cos()
}

#[derive(Clone, Copy, Tangent)]
struct Scaler {
    c: f64,
}

#[differentiable]
impl Scaler {
    fn tri_c(&self, v: &[f64], k: usize) -> f64 {
        let mut t = 0.0;
        for i in 0..v.len() {
            t += self.c * v[i] * v[i];
        }
        t + tri_a(v, k)
    }
}

/// A generic cycle: the boxed pullbacks bound `T: 'static`, which `Float` implies.
#[differentiable]
fn gen_ping<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x * x } else { gen_pong(x.sin(), n - 1) + x }
}

#[differentiable]
fn gen_pong<T: Float>(x: T, n: u32) -> T {
    if n == 0 { x.exp() } else { gen_ping(x * x, n - 1) * x }
}

#[test]
fn mutual_recursion() {
    test_rule!(gen_ping(0.8, 5));
    test_rule!(gen_ping(0.8_f32, 3));
    test_rule!(ping(0.7, 0));
    test_rule!(ping(0.7, 5));
    test_rule!(pong(0.3, 4));
    let v = vec![0.4, -0.3, 0.9];
    test_rule!(tri_a(&v, 4));
    test_rule!(tri_b(&v, 2));
    // Against forward mode.
    let (y, (dx, _)) = value_and_gradient!(ping(0.7, 7));
    let (y1, d) = value_and_derivative!(ping(0.7, 7), (1.0, NoTangent));
    assert_eq!(y, y1);
    assert!((dx - d).abs() < 1e-12 * (1.0 + d.abs()));
}

#[test]
fn deep_mutual_recursion_in_the_pullback() {
    // As `deep_recursion_in_the_pullback`, through two functions.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| value_and_gradient!(ping(0.5, 10_000)))
        .expect("spawn a thread");
    let (v, (dx, _)) = worker.join().expect("no stack overflow");
    assert!(v.is_finite() && dx.is_finite());
    let h = 1e-6;
    let fd = (ping(0.5 + h, 10_000) - ping(0.5 - h, 10_000)) / (2.0 * h);
    assert!((dx - fd).abs() < 1e-5 * (1.0 + fd.abs()), "{dx} vs {fd}");
}

// ---- whole buffers stored through `&mut` ------------------------------------------------------

#[differentiable]
fn replace_all(s: &mut Vec<f64>, z: &[f64], a: f64) -> f64 {
    let mut t = Vec::with_capacity(z.len());
    for i in 0..z.len() {
        t.push(a * z[i]);
    }
    let before = s[0] * s[1];
    *s = t;
    before + s[0] * s[2]
}

#[test]
fn whole_buffer_stores() {
    // `s` changes length; its state on entry comes back after the pullback, and the gradient
    // of the stored buffer reaches `z` and `a`.
    let s = vec![1.0, -2.0];
    let z = vec![0.5, 3.0, -1.5];
    test_rule!(replace_all(&mut s, &z, 1.5));
}

// ---- pop ------------------------------------------------------------------------------------

#[differentiable]
fn pops(s: &mut Vec<f64>, a: f64) -> f64 {
    s.push(a * 2.0);
    s.pop();
    s.pop();
    let n = s.len();
    s[n - 1] * a
}

#[test]
fn pop_from_a_mut_vec() {
    // `s` is shorter after the call; its state on entry comes back after the pullback.
    let s = vec![1.0, -2.0, 3.0];
    test_rule!(pops(&mut s, 1.5));
}

// ---- arrays by value ----------------------------------------------------------------------

#[differentiable]
fn array_written(mut x: [f64; 3], a: f64) -> f64 {
    x[1] = x[0] * a;
    x[2] += x[1];
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    s + x.len() as f64
}

#[differentiable]
fn array_result(a: f64, x: &[f64]) -> [f64; 3] {
    let mut r = [0.0; 3];
    r[0] = a * x[0];
    r[1] = x[1].sin();
    r[2] = r[0] + r[1] * a;
    r
}

#[differentiable]
fn pair(a: f64) -> [f64; 2] {
    if a > 0.0 {
        return [a, 2.0 * a];
    }
    [a * a, 1.0]
}

#[test]
fn arrays_by_value() {
    // Returned (built by a literal or by `[v; n]` and writes), on two return paths.
    let x = vec![0.3, -1.2];
    test_rule!(array_result(1.5, &x));
    test_rule!(pair(0.7));
    test_rule!(pair(-0.7));
    let (v, (da,)) = value_and_pullback!(pair(0.7), [1.0, 10.0]);
    assert_eq!((v, da), ([0.7, 1.4], 21.0));
    // Written in the body (the caller's array is a copy), read through `iter()`: both modes
    // against finite differences and each other; the gradient comes back as an array.
    test_rule!(array_written([0.5, -1.0, 2.0], 1.5));
    let (_, (dx, da)) = value_and_gradient!(array_written([0.5, -1.0, 2.0], 1.5));
    // s = x0^2 + (x0 a)^2 + (x2 + x0 a)^2
    let (x0, x2, a) = (0.5, 2.0, 1.5);
    let dx0 = 2.0 * x0 + 2.0 * x0 * a * a + 2.0 * (x2 + x0 * a) * a;
    let dda = 2.0 * x0 * a * x0 + 2.0 * (x2 + x0 * a) * x0;
    assert!((dx[0] - dx0).abs() < 1e-12 && dx[1] == 0.0);
    assert!((dx[2] - 2.0 * (x2 + x0 * a)).abs() < 1e-12 && (da - dda).abs() < 1e-12);
}

// ---- forward_only / reverse_only ------------------------------------------------------------

#[differentiable]
fn mutating_helper(x: &mut f64, a: f64) {
    *x *= a;
}

/// Calls a function reverse mode does not cover yet; forward mode alone is derived.
#[differentiable(forward_only)]
fn calls_mutating_helper(x: f64, a: f64) -> f64 {
    let mut y = x;
    mutating_helper(&mut y, a);
    y * y
}

#[differentiable(reverse_only)]
fn only_reverse(x: f64) -> f64 {
    x.sin() * x
}

fn only_reverse_frule(x: Dual<f64, f64>) -> Dual<f64, f64> {
    Dual::new(x.primal.sin() * x.primal, (x.primal.cos() * x.primal + x.primal.sin()) * x.tangent)
}

#[test]
fn one_mode_only() {
    test_rule!(calls_mutating_helper(0.7, 1.5), mode = forward);
    test_rule!(only_reverse(0.7));
}
