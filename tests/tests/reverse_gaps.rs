//! Constructs inside the reverse-mode subset that once failed as type errors inside the
//! expansion (issue 11): integer and `bool` buffers, arrays passed to and returned by calls, and
//! their combinations. Each function is checked by `test_rule!` in both modes (finite
//! differences against each rule, and the two rules against each other).

#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::useless_vec,
    clippy::assign_op_pattern
)]

use mooncake_runtime::prelude::*;

// ---- 1. integer and bool buffers -------------------------------------------------------------

/// An index table read from an integer slice argument.
#[differentiable]
fn gather(x: &[f64], obs: &[usize]) -> f64 {
    let mut s = 0.0;
    for k in 0..obs.len() {
        s += x[obs[k]] * (k as f64 + 1.0);
    }
    s
}

/// An integer slice iterated, and a `&Vec<usize>`.
#[differentiable]
fn gather_iter(x: &[f64], obs: &Vec<usize>) -> f64 {
    let mut s = 0.0;
    for j in obs.iter() {
        s += x[*j].sin();
    }
    s
}

/// A mask of `bool`s.
#[differentiable]
fn masked(x: &[f64], mask: &[bool]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if mask[i] {
            s += x[i] * x[i];
        }
    }
    s
}

/// A local integer buffer built by `vec!` and written.
#[differentiable]
fn local_int_buffer(x: &[f64], n: usize) -> f64 {
    let mut cols = vec![0usize; n];
    for j in 0..n {
        cols[j] = (j * 2) % x.len();
    }
    let mut s = 0.0;
    for j in 0..n {
        s += x[cols[j]] * x[j];
    }
    s
}

/// A local integer buffer grown by `push`, and a `bool` buffer.
#[differentiable]
fn pushed_int_buffer(x: &[f64]) -> f64 {
    let mut idx: Vec<usize> = Vec::new();
    let mut seen = vec![false; x.len()];
    for i in 0..x.len() {
        if x[i] > 0.0 {
            idx.push(i);
            seen[i] = true;
        }
    }
    let mut s = 0.0;
    for k in 0..idx.len() {
        s += x[idx[k]].exp();
    }
    for i in 0..x.len() {
        if !seen[i] {
            s += x[i];
        }
    }
    s
}

/// A `&mut [usize]` argument written (and restored by the pullback).
#[differentiable]
fn permute(x: &[f64], p: &mut [usize]) -> f64 {
    p.swap(0, 1);
    p[2] = p[0];
    let mut s = 0.0;
    for k in 0..p.len() {
        s += x[p[k]] * (k as f64 + 1.0);
    }
    s
}

/// Integer and float buffers together: a `&mut Vec<usize>` grown and a float buffer written.
#[differentiable]
fn ints_and_floats(x: &[f64], y: &mut [f64], counts: &mut Vec<usize>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let k = i % y.len();
        y[k] += x[i] * 2.0;
        counts.push(k);
    }
    for j in 0..counts.len() {
        s += y[counts[j]];
    }
    s
}

/// An integer buffer passed to another differentiable function.
#[differentiable]
fn sum_at(x: &[f64], idx: &[usize]) -> f64 {
    let mut s = 0.0;
    for k in 0..idx.len() {
        s += x[idx[k]];
    }
    s
}

#[differentiable]
fn calls_with_int_buffers(x: &[f64], idx: &[usize]) -> f64 {
    let local = vec![0usize, 2];
    sum_at(x, idx) * sum_at(x, &local)
}

#[test]
fn integer_buffers() {
    let x = vec![0.5, -1.25, 2.0, 0.75];
    let obs = vec![3usize, 0, 0, 2];
    test_rule!(gather(&x, &obs));
    test_rule!(gather_iter(&x, &obs));
    test_rule!(masked(&x, &[true, false, true, true]));
    test_rule!(local_int_buffer(&x, 3));
    test_rule!(pushed_int_buffer(&x));
    // `test_rule!` checks that the pullback restores `&mut` state.
    let p = vec![2usize, 1, 3, 0];
    test_rule!(permute(&x, &mut p));
    let y = vec![0.3, -0.4];
    let counts = vec![1usize];
    test_rule!(ints_and_floats(&x, &mut y, &mut counts));
    test_rule!(calls_with_int_buffers(&x, &obs));
}

#[test]
fn integer_buffers_get_no_tangent() {
    // The gradient of an integer buffer argument is `NoTangent`, whatever the mode.
    let x = vec![0.5, -1.25, 2.0, 0.75];
    let obs = vec![3usize, 0];
    let (v, (dx, dobs)) = value_and_gradient!(gather(&x, &obs));
    assert_eq!(v, x[3] + 2.0 * x[0]);
    assert_eq!(dx, vec![2.0, 0.0, 0.0, 1.0]);
    let _: NoTangent = dobs;
    // `&mut` integer state is restored after the gradient.
    let mut p = vec![2usize, 1, 3, 0];
    let (_, (_, dp)) = value_and_gradient!(permute(&x, &mut p));
    let _: NoTangent = dp;
    assert_eq!(p, vec![2, 1, 3, 0]);
}

// ---- 2. arrays across calls ------------------------------------------------------------------

#[differentiable]
fn norm3(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// An array literal and a by-value parameter passed on by value.
#[differentiable]
fn passes_arrays(a: f64, w: [f64; 3]) -> f64 {
    let u = [a, 2.0 * a, a * a];
    norm3(u) + norm3(w) * a
}

/// Rotates `x` by the axis-angle vector `w` (Rodrigues' formula), as a bundle adjustment does.
#[differentiable]
fn rotate(w: [f64; 3], x: [f64; 3]) -> [f64; 3] {
    let theta = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
    let k = [w[0] / theta, w[1] / theta, w[2] / theta];
    let (c, s) = (theta.cos(), theta.sin());
    let kx = [k[1] * x[2] - k[2] * x[1], k[2] * x[0] - k[0] * x[2], k[0] * x[1] - k[1] * x[0]];
    let kd = k[0] * x[0] + k[1] * x[1] + k[2] * x[2];
    let mut r = [0.0; 3];
    for i in 0..3 {
        r[i] = x[i] * c + kx[i] * s + k[i] * kd * (1.0 - c);
    }
    r
}

/// Indexing an array returned by a call.
#[differentiable]
fn uses_rotation(w: [f64; 3], x: [f64; 3]) -> f64 {
    let r = rotate(w, x);
    r[0] * r[1] + r[2]
}

/// An array returned through several calls.
#[differentiable]
fn scaled(a: f64, v: [f64; 3]) -> [f64; 3] {
    [a * v[0], a * v[1], a * v[2]]
}

#[differentiable]
fn twice_scaled(a: f64, v: [f64; 3]) -> [f64; 3] {
    let u = scaled(a, v);
    scaled(a, u)
}

#[differentiable]
fn through_calls(a: f64, w: [f64; 3]) -> f64 {
    let r = twice_scaled(a, w);
    let q = rotate(w, r);
    q[0] + q[1] * q[2] + norm3(q)
}

/// Arrays behind references passed to calls.
#[differentiable]
fn dot3(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[differentiable]
fn refs_to_arrays(w: [f64; 3], a: f64) -> f64 {
    let u = [a, a * a, 1.0];
    dot3(&u, &w) + dot3(&w, &w)
}

#[test]
fn arrays_across_calls() {
    let w = [0.3, -0.2, 0.9];
    let x = [1.5, -0.5, 0.25];
    test_rule!(norm3(w));
    test_rule!(passes_arrays(0.7, w));
    test_rule!(rotate(w, x));
    test_rule!(uses_rotation(w, x));
    test_rule!(twice_scaled(0.7, x));
    test_rule!(through_calls(0.7, w));
    test_rule!(refs_to_arrays(w, 0.7));
}

// ---- 3. combinations -------------------------------------------------------------------------

/// An array of arrays.
#[differentiable]
fn matrix2(m: [[f64; 2]; 2], v: [f64; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 {
        for j in 0..2 {
            s += m[i][j] * v[j] * (i as f64 + 1.0);
        }
    }
    s
}

/// A camera of a bundle adjustment: arrays in a struct.
#[derive(Tangent, Clone, Debug)]
pub struct Camera {
    /// The rotation, as an axis-angle vector.
    pub rot: [f64; 3],
    /// The translation.
    pub shift: [f64; 3],
    /// The focal length.
    pub focal: f64,
}

/// Arrays in a struct, read through `&`, passed to a call.
#[differentiable]
fn project(cam: &Camera, x: [f64; 3]) -> f64 {
    let p = rotate(cam.rot, x);
    let q = [p[0] + cam.shift[0], p[1] + cam.shift[1], p[2] + cam.shift[2]];
    cam.focal * q[0] / q[2]
}

/// An array struct field written through `&mut`.
#[differentiable]
fn move_camera(cam: &mut Camera, d: f64) -> f64 {
    cam.shift[0] += d;
    cam.shift[2] = cam.shift[2] * d;
    cam.shift[0] * cam.focal + cam.shift[2]
}

#[test]
fn combinations() {
    // Arrays of arrays: forward mode; reverse mode refuses them with a message at the
    // indexing (`ui-tests/tests/ui/differentiable/fail_nested_indexing.rs`).
    test_rule!(matrix2([[0.5, -1.0], [2.0, 0.25]], [0.3, -0.7]), mode = forward);
    let cam = Camera { rot: [0.1, -0.2, 0.3], shift: [0.5, -0.25, 4.0], focal: 1.5 };
    test_rule!(project(&cam, [1.5, -0.5, 0.25]));
    let c = cam.clone();
    test_rule!(move_camera(&mut c, 0.7));
}

/// A copy of an array is a copy: writing it leaves the original alone.
#[differentiable]
fn array_copies(x: [f64; 3], a: f64) -> f64 {
    let mut y = x;
    y[0] = a * y[1];
    let mut z = [a, 1.0, 2.0];
    let w = z;
    z[1] = y[0] * 3.0;
    x[0] * y[0] + z[1] * w[1] + w[0]
}

/// A `Vec` returned by a call, then grown and written.
#[differentiable]
fn make_vec(a: f64, n: usize) -> Vec<f64> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(a * (i as f64 + 1.0));
    }
    v
}

#[differentiable]
fn grows_a_returned_vec(a: f64) -> f64 {
    let mut v = make_vec(a, 3);
    v.push(a * a);
    v[0] = v[1] * v[3];
    let typed: Vec<f64> = Vec::new();
    let mut s = typed.len() as f64;
    for i in 0..v.len() {
        s += v[i];
    }
    s
}

/// A built `Vec` passed by value to a function taking `Vec<f64>`.
#[differentiable]
fn consume(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

#[differentiable]
fn passes_a_built_vec(a: f64) -> f64 {
    let v = vec![a, 2.0 * a];
    consume(v)
}

#[test]
fn copies_and_returned_buffers() {
    test_rule!(array_copies([0.5, -1.0, 2.0], 1.5));
    test_rule!(grows_a_returned_vec(0.7));
    test_rule!(passes_a_built_vec(0.7));
}

// ---- 4-6. the API macros -------------------------------------------------------------------

#[differentiable]
fn weighted_sum(x: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * w * (i as f64 + 1.0);
    }
    s
}

fn tangent_pair(a: f64) -> (Vec<f64>, f64) {
    (vec![a, 0.0, -a], 1.0)
}

#[test]
fn api_accepts_references_by_name() {
    let v = vec![0.5, -1.5, 2.0];
    let x: &[f64] = &v;
    let w = 0.7;
    // `x` is already a reference: both macros take the call as written.
    let (y1, d1) = value_and_derivative!(weighted_sum(x, w), (vec![1.0, 0.0, -1.0], 1.0));
    let (y2, d2) = value_and_derivative!(weighted_sum(&v, w), (vec![1.0, 0.0, -1.0], 1.0));
    let (y3, (g, gw)) = value_and_gradient!(weighted_sum(x, w));
    assert_eq!((y1, d1), (y2, d2));
    assert_eq!(y1, y3);
    // The directional derivative against the gradient: <g, (1, 0, -1)> + gw * 1.
    assert!((d1 - (g[0] - g[2] + gw)).abs() < 1e-12);
    assert_eq!(g, vec![w, 2.0 * w, 3.0 * w]);
}

#[test]
fn api_tangents_and_cotangents_as_expressions() {
    let v = vec![0.5, -1.5, 2.0];
    // The tangents as a variable holding the tuple, and as a call returning it.
    let ts = (vec![1.0, 0.0, -1.0], 1.0);
    let (_, d1) = value_and_derivative!(weighted_sum(&v, 0.7), ts);
    let (_, d2) = value_and_derivative!(weighted_sum(&v, 0.7), tangent_pair(1.0));
    let (_, d3) = value_and_derivative!(weighted_sum(&v, 0.7), (vec![1.0, 0.0, -1.0], 1.0));
    assert_eq!((d1, d2), (d3, d3));
    // A one-argument function: the tuple `(t,)` as a variable.
    let t1 = ([1.0, 0.0, 0.0],);
    let (value, d) = value_and_derivative!(norm3([3.0, 0.0, 4.0]), t1);
    assert_eq!(value, 5.0);
    assert!((d - 0.6).abs() < 1e-12);
    // The cotangent of `value_and_pullback!` as a variable and as a call.
    let ybar = [1.0, 10.0, 100.0];
    let (r1, (dw1, dx1)) = value_and_pullback!(rotate([0.3, -0.2, 0.9], [1.5, -0.5, 0.25]), ybar);
    let (r2, (dw2, dx2)) = value_and_pullback!(
        rotate([0.3, -0.2, 0.9], [1.5, -0.5, 0.25]),
        std::array::from_fn(|k| [1.0, 10.0, 100.0][k])
    );
    assert_eq!((r1, dw1, dx1), (r2, dw2, dx2));
    // ... and it is the gradient of <ybar, rotate(w, x)>: checked against forward mode.
    let (_, fd) = value_and_derivative!(
        rotate([0.3, -0.2, 0.9], [1.5, -0.5, 0.25]),
        ([0.0; 3], [1.0, 0.0, 0.0])
    );
    let dot: f64 = fd.iter().zip(ybar).map(|(a, b)| a * b).sum();
    assert!((dot - dx1[0]).abs() < 1e-12);
}

#[test]
fn api_no_tangent_for_integer_buffers() {
    let x = vec![0.5, -1.25, 2.0, 0.75];
    let obs = vec![3usize, 0, 0, 2];
    // Forward mode takes `NoTangent` for an integer buffer, as reverse mode gives it.
    let (y, d) = value_and_derivative!(gather(&x, &obs), (vec![1.0, 0.0, 0.0, 0.0], NoTangent));
    let (y2, (g, dobs)) = value_and_gradient!(gather(&x, &obs));
    let _: NoTangent = dobs;
    assert_eq!(y, y2);
    assert_eq!(d, g[0]);
    // The prepared form gives the same.
    let mut cache = GradientCache::new();
    let (y3, (g3, dobs3)) = value_and_gradient!(gather(&x, &obs), cache = &mut cache);
    let _: NoTangent = dobs3;
    assert_eq!((y3, g3), (y2, &g));
    // A mask of `bool`s passed by name.
    let mask: &[bool] = &[true, false, true, true];
    let (_, d) = value_and_derivative!(masked(&x, mask), (vec![1.0; 4], NoTangent));
    let (_, (g, _)) = value_and_gradient!(masked(&x, mask));
    assert!((d - g.iter().sum::<f64>()).abs() < 1e-12);
}

// ---- 3. more combinations, looked for on purpose ----------------------------------------------

/// An array field, an integer buffer field and a scalar.
#[derive(Tangent, Clone, Debug)]
pub struct Frame {
    /// An array field.
    pub origin: [f64; 3],
    /// An integer buffer field.
    pub idx: Vec<usize>,
    /// A scalar field.
    pub scale: f64,
}

/// An array field of a struct held by value, indexed; an integer buffer field behind `&`.
#[differentiable]
fn frame_by_value(f: Frame, x: &[f64], g: &Frame) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        s += f.origin[k] * f.scale * x[g.idx[k]];
    }
    s + f.origin.len() as f64
}

/// A `&mut [f64; 3]` argument written, passed on, and an array passed to a slice parameter.
#[differentiable]
fn bump(v: &mut [f64; 3], a: f64) {
    v[0] += a;
    v[2] = v[1] * a;
}

#[differentiable]
fn slice_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i];
    }
    s
}

#[differentiable]
fn mut_array_arg(v: &mut [f64; 3], a: f64) -> f64 {
    bump(v, a);
    let w = [a, 2.0 * a, 3.0];
    v[1] * slice_sum(&w) + slice_sum(&*v)
}

/// An integer array by value, an integer sum, a loop-carried array through a call.
#[differentiable]
fn step3(r: [f64; 3], h: f64) -> [f64; 3] {
    [r[0] + h * r[1], r[1] - h * r[0], r[2] * (1.0 - h)]
}

#[differentiable]
fn int_arrays_and_loops(x: &[f64], idx: [usize; 3], h: f64) -> f64 {
    let total: usize = idx.iter().sum();
    let mut r = [x[idx[0]], x[idx[1]], x[idx[2]]];
    for _ in 0..total {
        r = step3(r, h);
    }
    let (p, q) = (r, step3(r, h));
    p[0] * q[1] + p.len() as f64
}

/// A const-generic array length.
#[differentiable]
fn sum_sq<const N: usize>(x: [f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += x[i] * x[i];
    }
    s
}

#[differentiable]
fn calls_const_generic(a: f64) -> f64 {
    sum_sq([a, 2.0 * a]) + sum_sq([a; 3])
}

/// Integer and bool buffers behind `&mut`, popped, pushed and written.
#[differentiable]
fn int_mut_buffers(x: &[f64], stack: &mut Vec<usize>, seen: &mut [bool]) -> f64 {
    let mut s = 0.0;
    while let_pop_ok(stack.len()) {
        let k = stack.len() - 1;
        let i = stack[k];
        stack.pop();
        if !seen[i] {
            seen[i] = true;
            s += x[i] * x[i];
        }
    }
    stack.push(0);
    s
}

#[differentiable]
fn let_pop_ok(n: usize) -> bool {
    n > 0
}

#[test]
fn more_combinations() {
    let x = vec![0.5, -1.25, 2.0, 0.75];
    let f = Frame { origin: [0.3, -0.2, 0.9], idx: vec![3, 1, 0], scale: 1.5 };
    test_rule!(frame_by_value(f.clone(), &x, &f));
    let v = [0.5, -1.0, 2.0];
    test_rule!(mut_array_arg(&mut v, 0.7));
    test_rule!(int_arrays_and_loops(&x, [3usize, 0, 2], 0.1));
    test_rule!(sum_sq([0.5, -1.0, 2.0]));
    test_rule!(calls_const_generic(0.7));
    let stack = vec![2usize, 0, 2, 1];
    let seen = vec![false, true, false, false];
    test_rule!(int_mut_buffers(&x, &mut stack, &mut seen));
}

/// Fields of a struct held by value, written: a scalar and an array element.
#[differentiable]
fn frame_written(mut f: Frame, a: f64) -> f64 {
    f.scale = f.scale * a;
    f.origin[1] = f.origin[0] * a;
    f.origin[2] += f.scale;
    f.origin[0] * f.origin[1] + f.origin[2]
}

#[test]
fn struct_fields_by_value_written() {
    let f = Frame { origin: [0.3, -0.2, 0.9], idx: vec![3, 1, 0], scale: 1.5 };
    test_rule!(frame_written(f, 0.7));
}

/// An integer literal compared with a `usize` (found by the program generator).
#[differentiable]
fn literal_compared(x: f64, k: usize) -> f64 {
    if 1 > k.max(2) || 3 <= k { x * x } else { x }
}

#[test]
fn literals_in_comparisons() {
    test_rule!(literal_compared(0.7, 1));
    test_rule!(literal_compared(0.7, 5));
}

/// Methods of a generic struct (`impl<T: Float>`).
#[derive(Tangent, Clone, Copy, Debug)]
pub struct Pair<T> {
    /// First.
    pub a: T,
    /// Second.
    pub b: T,
}

#[differentiable]
impl<T: Float> Pair<T> {
    fn weighted(&self, w: T) -> T {
        self.a * w + self.b
    }
    fn total(self, y: T) -> T {
        self.a + self.b * y
    }
}

#[differentiable]
fn uses_generic_methods(a: f64, b: f64) -> f64 {
    let p = Pair { a, b };
    p.weighted(2.0) * p.total(3.0)
}

#[test]
fn generic_impls() {
    test_rule!(uses_generic_methods(0.7, -1.2));
}

// ---- found by the program generator (issue 12) -------------------------------------------------

/// A struct with an integer, a buffer and a struct field.
#[derive(Tangent, Clone, Debug)]
pub struct Bag {
    /// A scalar.
    pub a: f64,
    /// An integer.
    pub k: usize,
    /// A buffer.
    pub w: Vec<f64>,
    /// A struct.
    pub p: Point2,
}

/// A `Copy` struct of two floats.
#[derive(Tangent, Clone, Copy, Debug)]
pub struct Point2 {
    /// First.
    pub x: f64,
    /// Second.
    pub y: f64,
}

#[differentiable]
fn norm2(p: Point2) -> f64 {
    p.x * p.x + p.y * p.y
}

/// Fields of a `&mut S`: an integer read, buffer methods, a match on an integer field, a struct
/// field passed by value, an assertion reading the handle.
#[differentiable]
fn mut_bag(s: &mut Bag, _x: &mut [f64], m: &mut f64, a: f64) -> f64 {
    let k = s.k;
    s.w.push(a * a);
    s.w.swap(0, 1);
    let mut t = match s.k {
        0 => a,
        _ => 2.0 * a,
    };
    t += norm2(s.p) + (k as f64);
    assert!(*m < 10.0);
    *m *= a;
    t * s.w[0] + *m
}

/// Fields of a `&S`: a struct field by value, a buffer field copied, a match on an integer field.
#[differentiable]
fn ref_bag(s: &Bag, x: &mut [f64], a: f64) -> f64 {
    x.copy_from_slice(&s.w);
    let t = match s.k {
        3 => a,
        _ => -a,
    };
    norm2(s.p) * t + x[0]
}

/// Local tuples and structs written by field; a struct literal with a buffer field.
#[differentiable]
fn local_fields(a: f64) -> f64 {
    let mut t = (a, 2.0 * a);
    t.0 = t.1 * a;
    let mut p = Point2 { x: a, y: 1.0 };
    p.y = p.x * t.0;
    let b = Bag { a, k: 2, w: vec![a, a * a], p };
    b.w[1] * b.p.y + b.a
}

#[test]
fn generator_findings() {
    let s = Bag { a: 0.5, k: 2, w: vec![0.3, -0.7, 1.1], p: Point2 { x: 0.2, y: -0.4 } };
    let x: Vec<f64> = vec![];
    test_rule!(mut_bag(&mut s, &mut x, &mut 0.8, 1.3));
    let x3 = vec![0.0; 3];
    let s3 = Bag { a: 0.5, k: 3, w: vec![0.3, -0.7, 1.1], p: Point2 { x: 0.2, y: -0.4 } };
    test_rule!(ref_bag(&s3, &mut x3, 1.3));
    test_rule!(local_fields(0.7));
}

/// The API macros called from a `macro_rules!` that passes the call on as tokens.
macro_rules! through_a_macro {
    ($($call:tt)*) => {{
        let mut cache = GradientCache::new();
        let plain = value_and_gradient!($($call)*);
        let (v, (gx, ga)) = value_and_gradient!($($call)*, cache = &mut cache);
        let prepared = (v, (gx.clone(), *ga));
        let pulled = value_and_pullback!($($call)*, 2.0);
        (plain, prepared, pulled)
    }};
}

#[differentiable]
fn scaled_sum(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i];
    }
    s * a
}

#[test]
fn api_macros_inside_macro_rules() {
    let x = vec![1.0, 2.0];
    let (plain, prepared, pulled) = through_a_macro!(scaled_sum(&x, 3.0));
    assert_eq!(plain, (9.0, (vec![3.0, 3.0], 3.0)));
    assert_eq!(prepared, (9.0, (vec![3.0, 3.0], 3.0)));
    assert_eq!(pulled, (9.0, (vec![6.0, 6.0], 6.0)));
}

// ---- numbers behind references, and `&mut` of a local number lent to a call ---------------------

/// Methods on, and a store through, a `&mut usize` argument.
#[differentiable]
fn counted_pick(x: &[f64], n: &mut usize) -> f64 {
    let j = (*n).max(1) + n.pow(1) - *n;
    *n = (*n).min(j);
    x[j] * x[0]
}

/// Float methods called on `&f64` and `&mut f64` arguments, and `*x` of a `&f64`.
#[differentiable]
fn methods_through_refs(x: &f64, y: &mut f64) -> f64 {
    let a = x.sin() + y.cos() * x.powi(2) + *x;
    *y = y.exp() * 0.5;
    a * *y
}

#[differentiable]
fn doubled_in_place(b: &mut f64) -> f64 {
    *b = *b * 2.0;
    1.5 * *b
}

/// `&mut` of a local number and of a value argument lent to a call.
#[differentiable]
fn lends_numbers(a: f64, mut c: f64) -> f64 {
    let mut b = a * a;
    let z = doubled_in_place(&mut b);
    let w = doubled_in_place(&mut c);
    z * w + b * a + c
}

#[test]
fn numbers_behind_references() {
    let x = [0.5, -1.5, 2.0];
    let n = 2usize;
    test_rule!(counted_pick(&x, &mut n));
    let y = 0.3;
    test_rule!(methods_through_refs(&0.7, &mut y));
    test_rule!(lends_numbers(0.7, -0.4));
}

/// A copy of a loop's element borrow, then dereferenced (`let v = u; *v`): reverse mode read
/// the copy as a `&mut` handle, a type error in the expansion (found while making iterator
/// chains' `filter(|v| **v > 0.0)` bind the item itself).
#[differentiable]
fn copied_element_borrow(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for u in x.iter() {
        let v = u;
        let w = v;
        if *v > 0.0 {
            s += *w * *v;
        }
    }
    s
}

#[test]
fn copies_of_element_borrows() {
    let x = vec![0.35, -0.5, 1.2];
    test_rule!(copied_element_borrow(&x));
    assert_eq!(value_and_gradient!(copied_element_borrow(&x)).1.0, [0.7, 0.0, 2.4]);
}

/// A state with an array field.
#[derive(Tangent, Clone, Debug)]
pub struct Damped {
    /// Position and velocity.
    pub x: [f64; 2],
    /// Accumulated energy.
    pub k: f64,
}

#[differentiable]
impl Damped {
    fn absorb(&mut self, c: f64) {
        let m = self.x;
        self.k += c * m[0] * m[1];
    }
}

/// `let m = self.x;` (and `let mut q = d.x;` then written back) of an array field of a struct
/// behind `&mut`: a copy of the field's elements. Was a type error in reverse mode (the field's
/// handle has no length in its type) until probe programs found it.
#[differentiable]
fn absorbed(d: &mut Damped, c: f64) -> f64 {
    d.absorb(c);
    let mut q = d.x;
    q[0] *= c;
    q[1] += q[0];
    d.x = q;
    d.k + d.x[0] * d.x[1]
}

#[test]
fn array_fields_of_mut_structs_copied() {
    let d = Damped { x: [0.5, -1.5], k: 0.25 };
    test_rule!(absorbed(&mut d.clone(), 1.3));
}

#[differentiable]
fn product_of(x: &[f64; 2]) -> f64 {
    x[0] * x[1]
}

#[differentiable]
impl Damped {
    fn settle(&mut self) -> f64 {
        let v = product_of(&self.x);
        self.k += v;
        v
    }
}

/// An array field of a struct behind `&mut` lent to a function taking `&[f64; N]`
/// (`product_of(&d.x)`, and `&self.x` in a `&mut self` method): the field's elements as the
/// array. Was a type error in reverse mode (a `&Vec` where the array was wanted) until probe
/// programs found it.
#[differentiable]
fn lent_array_field(d: &mut Damped, c: f64) -> f64 {
    d.k += c * product_of(&d.x);
    d.settle() + d.k
}

#[test]
fn array_fields_of_mut_structs_lent() {
    let d = Damped { x: [0.5, -1.5], k: 0.25 };
    test_rule!(lent_array_field(&mut d.clone(), 1.3));
}

/// Gaussian elimination with partial pivoting on rows of a `Vec<Vec<f64>>`: `m.swap(i, p)`
/// swaps rows (and their shadows). Was a type error in both modes until probe programs found it.
#[differentiable]
fn pivoted_determinant(a: &Vec<Vec<f64>>) -> f64 {
    let n = a.len();
    let mut m = a.clone();
    let mut det = 1.0;
    for col in 0..n {
        let mut p = col;
        for r in col + 1..n {
            if m[r][col].abs() > m[p][col].abs() {
                p = r;
            }
        }
        if p != col {
            m.swap(p, col);
            det = -det;
        }
        det *= m[col][col];
        for r in col + 1..n {
            let f = m[r][col] / m[col][col];
            for c in col..n {
                m[r][c] -= f * m[col][c];
            }
        }
    }
    det
}

#[test]
fn rows_swapped_by_pivoting() {
    let a = vec![vec![0.5, 2.0, 1.0], vec![3.0, -1.0, 0.5], vec![1.0, 0.25, 2.0]];
    test_rule!(pivoted_determinant(&a));
    // The determinant's gradient is its cofactor matrix: d det / d a00 = a11 a22 - a12 a21.
    let (v, (g,)) = value_and_gradient!(pivoted_determinant(&a));
    let det = 0.5 * (-2.0 - 0.125) - 2.0 * (6.0 - 0.5) + 1.0 * (0.75 + 1.0);
    assert!((v - det).abs() < 1e-12);
    assert!((g[0][0] - (-2.0 - 0.125)).abs() < 1e-12);
}

/// A struct with a buffer field and an array field.
#[derive(Tangent, Clone, Debug)]
pub struct Weighted {
    /// Weights.
    pub w: Vec<f64>,
    /// A running total.
    pub k: f64,
    /// A pair.
    pub a: [f64; 2],
}

#[differentiable]
fn squares_total(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// `&s.w` (a `Vec` field) and `&s.a` (an array field) of a `&mut` argument lent to a function
/// taking `&[f64]`: each as the parameter takes it (`rev::into_parameter`).
#[differentiable]
fn lent_buffer_fields(s: &mut Weighted, c: f64) -> f64 {
    s.k += c * squares_total(&s.w) + squares_total(&s.a);
    s.k
}

#[test]
fn buffer_fields_of_mut_structs_lent_to_slices() {
    let s = Weighted { w: vec![0.5, -1.0], k: 0.3, a: [1.0, 2.0] };
    test_rule!(lent_buffer_fields(&mut s.clone(), 1.5));
}

/// A problem holding borrowed data, as argmin problems are written.
#[derive(Tangent, Clone, Debug)]
pub struct Borrowed<'a> {
    /// The observations (borrowed: held constant by `test_rule!`, which cannot perturb them).
    pub x: &'a [f64],
    /// Targets.
    pub y: Vec<f64>,
}

#[differentiable]
fn borrowed_cost(d: &Borrowed<'_>, p: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..d.x.len() {
        let r = p[0] * d.x[i] + p[1] - d.y[i];
        s += r * r;
    }
    s
}

/// A struct with a `&'a [f64]` field read in a loop (`d.x[i]`), in both modes: the gradient of
/// the parameters against finite differences, and the borrowed field's own gradient.
#[test]
fn structs_with_borrowed_slice_fields() {
    let x = vec![0.5, 1.0, 1.5];
    let d = Borrowed { x: &x, y: vec![1.0, 2.2, 2.9] };
    test_rule!(borrowed_cost(&d, &[1.5, 0.3]));
    let (_, (gd, gp)) = value_and_gradient!(borrowed_cost(&d, &[1.5, 0.3]));
    let r: Vec<f64> = (0..3).map(|i| 1.5 * x[i] + 0.3 - d.y[i]).collect();
    let dp0: f64 = (0..3).map(|i| 2.0 * r[i] * x[i]).sum();
    let dp1: f64 = r.iter().map(|r| 2.0 * r).sum();
    assert!((gp[0] - dp0).abs() < 1e-12 && (gp[1] - dp1).abs() < 1e-12);
    for i in 0..3 {
        assert!((gd.x[i] - 2.0 * r[i] * 1.5).abs() < 1e-12);
        assert!((gd.y[i] + 2.0 * r[i]).abs() < 1e-12);
    }
}

#[differentiable]
impl<'a> Borrowed<'a> {
    fn scaled_cost(&self, p: f64) -> f64 {
        let mut s = 0.0;
        for i in 0..self.x.len() {
            s += self.x[i] * p * p - self.y[i] * p;
        }
        s
    }
}

/// A method of a type with a lifetime parameter: forward mode covers it (reverse mode refuses
/// it with a message: UI `fail_method_of_type_with_lifetime.rs`).
#[test]
fn methods_of_types_with_lifetimes_in_forward_mode() {
    let x = vec![0.5, 1.0, 1.5];
    let d = Borrowed { x: &x, y: vec![1.0, 2.2, 2.9] };
    test_rule!(Borrowed::scaled_cost(&d, 0.7), mode = forward);
}

#[differentiable]
fn borrowed_rows_sum(rows: &[&[f64]]) -> f64 {
    let mut s = 0.0;
    for r in rows.iter() {
        let m: f64 = r.iter().sum();
        s += m * m;
    }
    s
}

#[differentiable]
fn borrowed_pair_dot(p: (&[f64], &[f64])) -> f64 {
    let (a, b) = p;
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// Buffers of borrowed rows and tuples of borrowed buffers as arguments: forward mode covers
/// them (reverse mode refuses them at the call: UI `fail_buffer_of_borrowed_rows.rs`,
/// `fail_tuple_of_borrowed_buffers.rs`).
#[test]
fn borrowed_rows_and_pairs_in_forward_mode() {
    let (a, b) = (vec![1.0, 2.0], vec![0.5]);
    let rows: Vec<&[f64]> = vec![&a, &b];
    let (v, d) =
        value_and_derivative!(borrowed_rows_sum(&rows), (vec![vec![1.0, 0.0], vec![0.0]],));
    assert!((v - 9.25).abs() < 1e-12 && (d - 6.0).abs() < 1e-12);
    let (c, e) = (vec![0.5, 1.0], vec![2.0, -1.0]);
    let (v, d) = value_and_derivative!(
        borrowed_pair_dot((&c[..], &e[..])),
        ((vec![1.0, 0.0], vec![0.0, 1.0]),)
    );
    assert!((v - 0.0).abs() < 1e-12 && (d - (2.0 + 1.0)).abs() < 1e-12);
}

/// A state with a buffer and a number.
#[derive(Tangent, Clone, Debug)]
pub struct Walker {
    /// Positions.
    pub x: Vec<f64>,
    /// Speed.
    pub v: f64,
}

#[differentiable]
fn walk(s: &mut Walker, c: f64) {
    s.x[0] += c * s.x[1] * s.v;
    s.v *= c;
}

/// A local copy of a struct with a buffer lent `&mut` to a function, then read: the buffer's
/// cotangent after the call reaches the callee's pullback (it did not, before: the gradient of
/// `c` through `x` was lost).
#[differentiable]
fn walked(s0: &Walker, c: f64) -> f64 {
    let mut s = s0.clone();
    walk(&mut s, c);
    let mid = s.x[0] * s.v;
    for _ in 0..2 {
        walk(&mut s, c);
    }
    s.x[0] + s.x[1] * s.v + mid
}

#[test]
fn local_structs_with_buffers_lent_mutably() {
    let s0 = Walker { x: vec![1.0, 2.0], v: 0.5 };
    test_rule!(walked(&s0, 0.7));
    let (_, (gs, gc)) = value_and_gradient!(walked(&s0, 0.7));
    let (_, (fs, fc)) = value_and_gradient_forward!(walked(&s0, 0.7));
    assert!((gc - fc).abs() < 1e-12 && gc.abs() > 0.1, "{gc} {fc}");
    assert!((gs.v - fs.v).abs() < 1e-12 && (gs.x[0] - fs.x[0]).abs() < 1e-12);
}

/// A layer with a weight buffer and a gain.
#[derive(Tangent, Clone, Debug)]
pub struct Gain {
    /// Weights.
    pub w: Vec<f64>,
    /// Gain.
    pub g: f64,
}

/// Two layers.
#[derive(Tangent, Clone, Debug)]
pub struct Stack {
    /// First layer.
    pub a: Gain,
    /// Second layer.
    pub b: Gain,
}

#[differentiable]
impl Gain {
    fn shrink(&mut self, k: f64) {
        self.w[0] *= k;
        self.g = self.g * k + self.w[1];
    }

    fn out(&self, x: f64) -> f64 {
        (self.w[0] * x + self.w[1]).tanh() * self.g
    }
}

#[differentiable]
impl Stack {
    fn settle(&mut self, k: f64) {
        self.a.shrink(k);
        self.b.shrink(k * k);
    }

    fn run(&self, x: f64) -> f64 {
        self.b.out(self.a.out(x))
    }
}

/// `&mut self` methods on fields: of a `&mut` argument, of a local copy, and inside a
/// `&mut self` method (`self.a.shrink(k)`); `&self` methods on fields of `&` and `&mut`
/// arguments. The value a `&mut self` method leaves in the field used to be dropped in reverse
/// mode (a wrong value and gradient, found by a probe).
#[differentiable]
fn settled(s: &mut Stack, s0: &Stack, k: f64, x: f64) -> f64 {
    s.a.shrink(k);
    let mut t = s0.clone();
    t.b.shrink(k);
    t.settle(0.5 * k);
    let mut y = s.run(x) + t.run(x) + s0.a.out(x);
    for _ in 0..2 {
        s.settle(k);
        y += s.b.out(x);
    }
    y
}

#[test]
fn mut_self_methods_on_fields() {
    let s0 =
        Stack { a: Gain { w: vec![0.8, 0.1], g: 1.2 }, b: Gain { w: vec![-0.4, 0.3], g: 0.7 } };
    let mut s = s0.clone();
    let primal = {
        let mut c = s0.clone();
        settled(&mut c, &s0, 0.9, 0.6)
    };
    let (v, _) = value_and_gradient!(settled(&mut s, &s0, 0.9, 0.6));
    assert!((v - primal).abs() < 1e-12, "{v} {primal}");
    let s1 = s0.clone();
    test_rule!(settled(&mut s1, &s0, 0.9, 0.6));
}
