//! Regression tests of the bugs the program generator (`tests/generated.rs`) found in forward
//! mode and in lowering, one section per `resolve::Avoid` switch that the fix lets a run turn
//! off. Each function is the smallest program that failed to compile (or to agree with finite
//! differences) before its fix; each is checked in both modes where reverse mode covers it.

// Written the way the generator writes them, including the forms clippy would rewrite.
#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::explicit_counter_loop,
    clippy::identity_op,
    clippy::reversed_empty_ranges,
    clippy::assign_op_pattern,
    clippy::useless_vec,
    clippy::erasing_op,
    clippy::manual_is_multiple_of
)]

use mooncake_runtime::prelude::*;

// ---- `direct_iteration_deref`: `for v in x` over a shared reference ----------------------------

/// `for v in x` over a `&[f64]` binds `v: &f64`, as `for v in x.iter()` does.
#[differentiable]
fn direct_over_slice(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += *v * *v;
    }
    s
}

/// The same over a `&Vec<f64>`, with a method on the element and a copy of the reference.
#[differentiable]
fn direct_over_vec_ref(x: &Vec<f64>, a: f64) -> f64 {
    let y = x;
    let mut s = a;
    for v in y {
        s = s * v.sin() + *v;
    }
    s
}

/// The same over a `&mut [f64]`: `v: &mut f64`.
#[differentiable]
fn direct_over_mut_slice(x: &mut [f64], a: f64) {
    for v in x {
        *v = *v * a;
    }
}

#[test]
fn direct_iteration_deref() {
    test_rule!(direct_over_slice(&[0.5, -1.5, 2.0]));
    test_rule!(direct_over_vec_ref(&vec![0.3, 1.2], 0.7));
    // Reverse mode does not cover mutable element borrows (`for v in x.iter_mut()` either):
    // `BorrowsInLocalsOrStdCalls`.
    let x = [0.5, -1.5];
    test_rule!(direct_over_mut_slice(&mut x, 1.5), mode = forward);
}

// ---- `push_reads_itself`: `v.push(e)` where `e` reads `v` -------------------------------------

/// The pushed value is an element of the buffer itself.
#[differentiable]
fn push_own_element(v: &mut Vec<f64>, a: f64) {
    v.push(v[0]);
    v.push(v[1] * a);
}

/// The same on a local `Vec`.
#[differentiable]
fn push_own_element_local(a: f64) -> f64 {
    let mut v = vec![a, 2.0];
    v.push(v[0] * v[1]);
    v.push(v[2]);
    v[3] + v[0]
}

#[test]
fn push_reads_itself() {
    let v = vec![0.5, 1.5];
    test_rule!(push_own_element(&mut v, 0.7));
    test_rule!(push_own_element_local(0.7));
}

// ---- `int_literal_arith` and `inclusive_rev_range`: arithmetic on integer literals only --------

/// `0..1 * 2`: the bound is a `usize` by inference from the index, not an `i32`.
#[differentiable]
fn literal_bound(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..1 * 2 {
        s += x[i];
    }
    let k = (3 - 1) % 2 + 4 / 2;
    s * x[k]
}

/// `(n..=1).rev()`: the end plus one is literal arithmetic.
#[differentiable]
fn inclusive_rev(x: &[f64], n: usize) -> f64 {
    let mut s = 1.0;
    for i in (n..=1).rev() {
        s = s * x[i] + 0.5;
    }
    for i in (0..=1).rev() {
        s += x[i];
    }
    s
}

/// A counter that only literals and itself assign, used as an index only through arithmetic:
/// its type too comes from the index.
#[differentiable]
fn literal_counter(x: &[f64]) -> f64 {
    let mut k = 0;
    let mut s = 0.0;
    while k < 2 {
        let j = k + 1;
        s += x[j];
        k += 1;
    }
    s * x[k * 1 - 1]
}

/// Literal arithmetic cast, compared and passed on (found by the generator with the switch
/// off: the cast of `0 * 3` needed a type annotation).
#[differentiable]
fn literal_uses(x: f64, n: usize) -> f64 {
    let c = 1 * 0 == n % 2;
    let k = (1 + n).min(2 * 2);
    let y = x * ((0 * 3) as f64) + ((2 - 1) as f64) + (k as f64);
    if c { y } else { -y }
}

#[test]
fn int_literal_arith() {
    test_rule!(literal_uses(0.7, 3));
    test_rule!(literal_uses(0.7, 2));
    test_rule!(literal_bound(&[0.5, -1.5, 2.0]));
    test_rule!(literal_counter(&[0.5, -1.5, 2.0]));
}

#[test]
fn inclusive_rev_range() {
    let x = [0.5, -1.5, 2.0];
    test_rule!(inclusive_rev(&x, 0));
    test_rule!(inclusive_rev(&x, 1));
    test_rule!(inclusive_rev(&x, 2));
}

// ---- `clone_vec_behind_ref`: `x.clone()` of a `Vec` behind a reference -------------------------

#[differentiable]
fn clone_behind_shared(x: &Vec<f64>, a: f64) -> f64 {
    let mut y = x.clone();
    y[0] = y[0] * a;
    y[0] + y[1]
}

#[differentiable]
fn clone_behind_mut(x: &mut Vec<f64>, a: f64) -> f64 {
    let y = x.clone();
    x[0] = x[0] * a;
    y[0] * x[0]
}

/// `Vec` fields cloned: of a `&S`, of a `&mut S` and of an `S` held by value.
#[differentiable]
fn clone_fields(s: &Bag, t: &mut Bag, u: Bag, a: f64) -> f64 {
    let x = s.w.clone();
    let y = t.w.clone();
    let z = u.w.clone();
    t.a = t.a * a;
    x[0] * y[0] + z[0] * a + t.a
}

#[test]
fn clone_vec_behind_ref() {
    let b = Bag { a: 0.5, w: vec![1.5, -0.5] };
    let t = Bag { a: -0.3, w: vec![0.7] };
    test_rule!(clone_fields(&b, &mut t, Bag { a: 0.2, w: vec![2.0] }, 0.7));
    test_rule!(clone_behind_shared(&vec![0.5, 1.5], 0.7));
    let x = vec![0.5, 1.5];
    test_rule!(clone_behind_mut(&mut x, 0.7));
}

// ---- `reads_of_iterated_mut`: reads of a buffer inside a loop over its elements ----------------

/// `x.len()` and `x[0].max(a)` while `x.iter()` lends its elements: `x` is `&mut`.
#[differentiable]
fn reads_of_iterated_mut_arg(x: &mut [f64], a: f64) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v * (x.len() as f64) + x[0].max(a);
    }
    s
}

/// The same over a local `Vec`, with a `to_vec` of it.
#[differentiable]
fn reads_of_iterated_local(a: f64) -> f64 {
    let x = vec![a, 2.0 * a];
    let mut s = 0.0;
    for (i, v) in x.iter().enumerate() {
        let w = x.to_vec();
        s += *v * x[i].min(1.0) + w[0] * (x.len() as f64);
    }
    s
}

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Bag {
    pub a: f64,
    pub w: Vec<f64>,
}

/// A borrow of one field, live across a method call on another that needs `&mut`: the fields
/// are disjoint, so the receiver stays mutable. Reverse mode does not keep borrows in locals.
#[differentiable(forward_only)]
fn disjoint_field_borrow(s: Bag, x: f64) -> f64 {
    let mut s = s;
    let r = &s.a;
    s.w.push(x);
    *r * s.w[1]
}

#[test]
fn reads_of_iterated_mut() {
    let x = [0.5, -1.5, 2.0];
    test_rule!(reads_of_iterated_mut_arg(&mut x, 0.7));
    test_rule!(reads_of_iterated_mut_arg(&mut x, 0.1));
    test_rule!(reads_of_iterated_local(0.7));
    test_rule!(disjoint_field_borrow(Bag { a: 0.5, w: vec![1.5] }, 0.7), mode = forward);
}

// ---- `int_field_method`: integer methods on fields and through `&mut` --------------------------

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Counted {
    pub w: f64,
    pub k: usize,
}

#[differentiable]
fn int_field_min(s: Counted, x: &[f64], i: usize) -> f64 {
    let j = s.k.min(i);
    x[j] * s.w
}

#[differentiable]
fn int_field_of_mut(s: &mut Counted, x: &[f64]) -> f64 {
    let j = s.k.max(1).pow(1);
    s.w = s.w * x[j];
    s.w
}

/// An integer method on, and a store into, a `&mut usize` argument (reverse mode once had no
/// rule for either on the argument's handle).
#[differentiable]
fn int_behind_mut(x: &[f64], n: &mut usize) -> f64 {
    let j = (*n).max(1) + n.pow(1) - *n;
    *n = (*n).min(j);
    x[j]
}

#[test]
fn int_field_method() {
    let x = [0.5, -1.5, 2.0];
    test_rule!(int_field_min(Counted { w: 0.7, k: 2 }, &x, 1));
    test_rule!(int_field_min(Counted { w: 0.7, k: 0 }, &x, 1));
    let s = Counted { w: 0.7, k: 2 };
    test_rule!(int_field_of_mut(&mut s, &x));
    let n = 2;
    test_rule!(int_behind_mut(&x, &mut n));
}

// ---- `copy_struct_reused`: a `Copy` struct used after it is consumed ---------------------------

#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct P {
    pub a: f64,
    pub b: f64,
}

#[differentiable]
impl P {
    fn scaled(self, k: f64) -> f64 {
        self.a * k + self.b
    }
}

#[differentiable]
fn consume_p(p: P) -> f64 {
    p.a * p.b
}

#[differentiable]
fn copy_struct_reused_fn(p: P, x: f64) -> f64 {
    let u = consume_p(p);
    let v = p.scaled(x);
    let P { a, b } = p;
    let q = p;
    u + v * a - b + consume_p(q) + p.a
}

#[test]
fn copy_struct_reused() {
    test_rule!(copy_struct_reused_fn(P { a: 0.5, b: -1.5 }, 0.7));
}

fn assert_copy<T: Copy>() {}

/// The root of `copy_struct_reused`: the derived tangent, fdata and rdata of a `Copy` struct
/// are `Copy`, so its `Dual` and `CoDual` are (a compile-time check).
#[test]
fn derived_siblings_of_a_copy_struct_are_copy() {
    assert_copy::<PTangent>();
    assert_copy::<PFData>();
    assert_copy::<PRData>();
    assert_copy::<Dual<P, PTangent>>();
    assert_copy::<CoDual<P, PFData>>();
}

// ---- Found with the switches above off: an operand read, then written by a later operand -------

/// `[a, a, { a -= ..; a }]`: the first two elements are read before the block writes `a` (the
/// lowered array read every element's place after all of them had run).
#[differentiable]
fn operand_then_written(x: f64) -> f64 {
    let mut a = x;
    let r = [a, a, {
        a -= 0.5 * a;
        a
    }];
    let b = a * {
        a = a * 3.0;
        a
    };
    let t = (a, {
        a += 1.0;
        a
    });
    let p = P {
        a,
        b: {
            a *= a;
            a
        },
    };
    let v = vec![a, {
        a -= 2.0;
        a
    }];
    let c = consume_p(P { a: b, b: a })
        + f64::max(a, {
            a = -a;
            a
        });
    a + (a + r.iter().sum::<f64>()) + b + t.0 * t.1 + p.a - p.b + v[0] * v[1] + c
}

#[differentiable]
fn double_first(x: &mut [f64]) -> f64 {
    x[0] = x[0] * 2.0;
    x[1]
}

/// `x[0] + g(x)` with `g` writing through the `&mut` argument passed on: `x[0]` is read first.
#[differentiable]
fn operand_then_written_by_call(x: &mut [f64], a: f64) -> f64 {
    x[0] * double_first(x) * a + x[0]
}

/// `b * g(&mut b)`: `b` is read first. Reverse mode lends `&mut` of the local scalar through a
/// fresh handle (once a type error: `SharedCell<f64>` expected).
#[differentiable]
fn operand_then_lent_mut(a: f64) -> f64 {
    let mut b = a;
    let z = b * double_first_scalar(&mut b);
    z + b
}

#[differentiable]
fn double_first_scalar(b: &mut f64) -> f64 {
    *b = *b * 2.0;
    1.5
}

#[test]
fn operands_are_read_in_order() {
    test_rule!(operand_then_written(0.7));
    test_rule!(operand_then_written(-1.3));
    let x = [0.5, -1.5];
    test_rule!(operand_then_written_by_call(&mut x, 0.7));
    test_rule!(operand_then_lent_mut(0.7));
}

// ---- `assert_reads_loop_element`, `self_path_in_method_assert`, `block_in_assert` -------------
// Assertions are kept in the derived rules with the locals they read replaced by their primal
// values; these are the names inside them that are not locals, or not the same locals.

/// An assertion reading a loop's element borrow, which reverse mode holds as a value.
#[differentiable]
fn assert_on_element(x: &[f64], a: f64) -> f64 {
    let mut s = a;
    for e in x.iter() {
        debug_assert!((*e).is_finite() && e.abs() < 1e6 && *e >= -1e9);
        s += *e * a;
    }
    s
}

/// Statements inside an assertion: a `let` that shadows a local, a closure parameter named
/// like one, a struct literal's field name, a method name and a path segment named like one.
#[differentiable]
fn assert_with_bindings(x: &[f64], a: f64) -> f64 {
    let v = a * 2.0;
    let abs = 1.0;
    debug_assert!({
        let v = v + 1.0;
        v.is_finite()
    });
    debug_assert!(x.iter().all(|v| v.abs() < 1e6) && v.abs() >= 0.0);
    debug_assert!(self::helper_ok(a).is_finite() && abs > 0.0);
    v * abs + x[0]
}

fn helper_ok(a: f64) -> f64 {
    a
}

#[derive(Clone, Copy, Debug, Tangent)]
struct AssertP {
    x: f64,
}

#[differentiable]
impl AssertP {
    /// A method's assertion naming a free function by a `self::` path.
    fn scaled(&self, a: f64) -> f64 {
        debug_assert!(self::helper_ok(a).is_finite() && self.x.is_finite());
        self.x * a
    }
}

#[test]
fn names_inside_assertions() {
    test_rule!(assert_on_element(&[0.5, -1.5, 2.0], 0.7));
    test_rule!(assert_with_bindings(&[0.5, -1.5], 0.3));
    let p = AssertP { x: 1.25 };
    test_rule!(
        AssertP::scaled(&p, 0.6),
        frule = AssertP::scaled_frule,
        rrule = AssertP::scaled_rrule
    );
}

// ---- `method_vec_to_slice_arg`: coercions of a method's arguments --------------------------

#[derive(Clone, Debug, Tangent)]
struct VecArgQ {
    w: Vec<f64>,
    a: f64,
}

#[differentiable]
impl VecArgQ {
    fn dotw(&self, y: &[f64]) -> f64 {
        self.a * y[0] + self.w[0] * y[1]
    }
    fn addw(&self, y: &mut [f64]) {
        y[0] += self.a;
    }
}

/// A `&Vec<f64>` (a parameter, a local lent, a field) given to a method's `&[f64]` parameter, a
/// `&mut Vec<f64>` to its `&mut [f64]` one.
#[differentiable]
fn vec_to_slice(q: &VecArgQ, v: &Vec<f64>, m: &mut Vec<f64>) -> f64 {
    let local = vec![v[0], v[1] * 2.0];
    let r = q.dotw(v) + q.dotw(&local) + q.dotw(&q.w);
    q.addw(m);
    r + m[0]
}

#[test]
fn vec_to_slice_parameters_of_methods() {
    let q = VecArgQ { w: vec![0.5, 1.5], a: 0.7 };
    let m = vec![0.1, 0.2];
    test_rule!(vec_to_slice(&q, &vec![0.3, 1.2], &mut m));
}

// ---- `receiver_order`: a method's receiver is read before its arguments run -----------------

/// Arguments that assign the receiver's variable: a float receiver, one read through a `&mut`
/// reference, and a `Copy` struct taken by `self`.
#[differentiable]
#[allow(unused_assignments)]
fn receiver_then_arguments(x: f64, m: &mut f64) -> f64 {
    let mut a = x * 0.5;
    let b = a.max({
        a = 3.0 * x;
        0.1
    });
    let c = (*m).mul_add(2.0, {
        *m = x;
        0.0
    });
    let mut p = OrderP { v: x };
    let d = p.plus({
        p = OrderP { v: 2.0 * x };
        1.0
    });
    a * b + c + d * p.v
}

#[derive(Clone, Copy, Debug, Tangent)]
struct OrderP {
    v: f64,
}

#[differentiable]
impl OrderP {
    fn plus(self, k: f64) -> f64 {
        self.v * self.v + k
    }
}

#[test]
fn receiver_read_before_arguments() {
    let m = 0.75;
    test_rule!(receiver_then_arguments(1.3, &mut m));
    let m = -0.4;
    test_rule!(receiver_then_arguments(-0.6, &mut m));
}

// ---- `iterated_buffer_lent`: a buffer lent while a loop iterates it ---------------------------

#[differentiable]
fn read_pair(y: &[f64]) -> f64 {
    y[0] * y[1]
}

#[differentiable]
fn read_pair_vec(y: &Vec<f64>) -> f64 {
    y[0] * y[1]
}

/// Buffers read by a loop over `iter()` and lent shared in its body: a `&mut` argument to
/// `copy_from_slice` and, reborrowed, to calls; a local `Vec` and a `&mut` array to calls.
#[differentiable]
fn iterated_and_lent(v: &mut Vec<f64>, w: &mut Vec<f64>, a: &mut [f64; 2]) -> f64 {
    let mut s = 0.0;
    let loc = vec![v[0], 2.0];
    for e in v.iter() {
        w.copy_from_slice(v);
        s += *e * w[0] + read_pair(&*v);
    }
    for e in loc.iter() {
        s += *e * read_pair(&loc) + read_pair_vec(&loc);
    }
    for e in a.iter() {
        s += *e * read_pair(&*a);
    }
    s
}

#[test]
fn buffers_lent_while_iterated() {
    let v = vec![0.5, 1.5];
    let w = vec![0.1, 0.2];
    let a = [0.3, 0.4];
    test_rule!(iterated_and_lent(&mut v, &mut w, &mut a));
}

/// A `&mut self` method whose argument binds a new variable named like the receiver: the
/// receiver is not copied (found by the generator, seed 7000).
#[differentiable]
fn receiver_named_in_argument(x: f64) -> f64 {
    let mut v0: Vec<f64> = vec![0.5, x];
    v0.push({
        let v0 = x * 2.0;
        v0 + 1.0
    });
    v0[2] * v0[1] + v0.len() as f64
}

#[test]
fn receiver_shadowed_in_arguments() {
    test_rule!(receiver_named_in_argument(0.7));
}

// ---- `receiver_lent_as_argument`: `p.g(&p)` -------------------------------------------------

#[derive(Clone, Copy, Debug, Tangent)]
struct LentP {
    x: f64,
    y: f64,
}

#[differentiable]
impl LentP {
    fn dot(&self, o: &LentP) -> f64 {
        self.x * o.x + self.y * o.y.sin()
    }
    fn mixed(self, o: &LentP, a: f64) -> f64 {
        self.x * o.y + a * self.y
    }
}

#[derive(Clone, Debug, Tangent)]
struct LentS {
    w: Vec<f64>,
    a: f64,
}

#[differentiable]
impl LentS {
    fn cross(&self, o: &LentS) -> f64 {
        self.w[0] * o.w[1] + self.a * o.a
    }
}

/// A method whose receiver, a value the function holds, is also lent to it as an argument
/// (`&self` and `self` receivers; a struct with a buffer field).
#[differentiable]
fn receiver_also_argument(x: f64, y: f64) -> f64 {
    let p = LentP { x, y: 2.0 * y };
    let s = LentS { w: vec![x, y * y], a: y };
    p.dot(&p) + p.mixed(&p, x) + s.cross(&s)
}

/// A `self` method of a `Copy` type called on a receiver behind `&`.
#[differentiable]
fn self_method_behind_ref(p: &LentP, a: f64) -> f64 {
    p.mixed(p, a) * p.dot(p)
}

#[test]
fn receiver_lent_to_its_own_arguments() {
    let p = LentP { x: 0.3, y: -0.8 };
    test_rule!(self_method_behind_ref(&p, 1.7));
    test_rule!(receiver_also_argument(0.7, -1.3));
    test_rule!(receiver_also_argument(1.1, 0.4));
}

// ---- Found by the 5,000-program run (seed 5014): a typed integer local in a re-run loop ------

/// An integer local with a written type, in a loop body the reverse sweep runs again: its
/// fresh declaration in the pullback keeps the type (it was untyped: "type annotations needed"
/// for `k0.min(k0)`).
#[differentiable]
fn typed_int_in_replayed_loop(x: f64) -> f64 {
    let mut s = x;
    for i in 0..3_usize {
        let k0: usize = 2;
        let c0 = k0.min(k0) > i;
        if c0 {
            s = s * x;
        }
    }
    s
}

#[test]
fn typed_int_local_in_replayed_loop() {
    test_rule!(typed_int_in_replayed_loop(0.7));
    test_rule!(typed_int_in_replayed_loop(-1.3));
}

// ---- Found by the 1,000-program run (seed 8000): a receiver's name shadowed in an argument ---

#[derive(Tangent, Clone, Debug, PartialEq)]
struct Shadowed {
    a: f64,
    w: Vec<f64>,
}

/// The argument of `x0.w.push(..)` declares its own `x0`: the uses after that `let` are of the
/// new variable, not writes of the receiver's (which read `x0.w` into a temporary first, a
/// load of a whole buffer field the reverse rule does not have: a type error).
#[differentiable]
fn receiver_name_shadowed(x0: &mut Shadowed, y: f64) -> f64 {
    x0.w.push({
        let mut x0: f64 = y * y;
        let a0: f64 = x0;
        x0 += a0;
        x0
    });
    x0.a * x0.w[x0.w.len() - 1]
}

#[test]
fn a_receiver_name_shadowed_in_an_argument() {
    let s = Shadowed { a: 1.5, w: vec![0.5, -1.0] };
    test_rule!(receiver_name_shadowed(&mut s, 0.8));
}

// ---- Found by the 2,000-program run (seed 424242): an array copied, then indexed out of bounds

/// `let mut r0 = [..];` is a temporary array and a copy; `r0[k0]` with `k0 = 3` (on an arm
/// that never runs) is out of bounds, which left `r0` whole but split the temporary into one
/// local per element: the copy then read a temporary that no longer existed (`__l2` not found).
#[differentiable]
#[allow(unconditional_panic, unused_mut)]
fn copied_array_indexed_out_of_bounds(x0: &mut f64) -> f64 {
    *x0 = {
        let mut r0 = [*x0, 1.0, *x0];
        let mut k0: usize = 3;
        if *x0 > 100.0 {
            1.0
        } else if *x0 < -100.0 {
            r0[k0]
        } else {
            r0[0] * r0[2]
        }
    };
    *x0 * 2.0
}

#[test]
fn a_copied_array_indexed_out_of_bounds() {
    test_rule!(copied_array_indexed_out_of_bounds(&mut 0.7));
}
