//! The shrunk programs of bugs the program generator (`tests/generated.rs`) found, as it
//! printed them (names and layout kept), each fixed since and checked here in both modes by
//! `test_rule!`. The README's "Testing" section lists every bug the generator found; the tests
//! written with the fixes are in `generator_regressions.rs` and `reverse_gaps.rs`.

// Written the way the generator writes them, including the forms clippy would rewrite.
#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::reversed_empty_ranges,
    clippy::assign_op_pattern,
    clippy::useless_vec,
    clippy::len_zero,
    clippy::eq_op,
    clippy::explicit_counter_loop,
    clippy::identity_op,
    clippy::if_same_then_else,
    clippy::match_single_binding,
    unused_parens,
    unused_variables,
    unused_mut,
    dead_code
)]

/// Found by the generator: forward mode: integer arithmetic on literals only was typed `i32` (`Avoid::int_literal_arith`).
mod b01_int_literal_arith {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x: &mut [f64; 3], a: f64) -> f64 {
        for i in 0..1 * 2 {
            x[i] *= a;
        }
        a
    }
    #[test]
    fn regression() {
        let x = [0.5, -1.0, 2.0];
        test_rule!(f(&mut x, 0.7));
    }
}

/// Found by the generator: forward mode: no rule for `clone` of a `&mut Vec<f64>` (`Avoid::clone_vec_behind_ref`).
mod b02_clone_mut_vec {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x0: &mut Vec<f64>) -> f64 {
        let v0 = x0.clone();
        v0[0] * 0.5
    }
    #[test]
    fn regression() {
        let a0 = vec![1.293];
        test_rule!(f(&mut a0));
    }
}

/// Found by the generator: reverse mode: no `StoreRule` for a field of a tuple or struct held by value in a local.
mod b03_local_field_store {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[differentiable]
    fn f(x0: f64) -> f64 {
        let mut p0 = P { x: x0, y: x0 };
        p0.y = x0 * x0;
        let mut t = (x0, x0);
        t.0 = x0 * 2.0;
        p0.x * p0.y + t.0 * t.1
    }
    #[test]
    fn regression() {
        test_rule!(f(1.303));
    }
}

/// Found by the generator: reverse mode: a struct literal with a buffer field was a type error.
mod b04_struct_literal_with_vec {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(a: f64) -> f64 {
        let q = S { a, k: 2, w: vec![a], p: P { x: a, y: a } };
        q.a * q.w[0] + q.p.x
    }
    #[test]
    fn regression() {
        test_rule!(f(0.7));
    }
}

/// Found by the generator: reverse mode: an integer field read through `&mut` was a type error.
mod b05_int_field_of_mut_struct {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(s: &mut S, a: f64) -> f64 {
        let k = s.k;
        a * (k as f64)
    }
    #[test]
    fn regression() {
        let s = S { a: 0.5, k: 2, w: vec![1.0], p: P { x: 0.1, y: 0.2 } };
        test_rule!(f(&mut s, 0.7));
    }
}

/// Found by the generator: forward mode: `v.push(v[0])` was a borrow error in the expansion (`Avoid::push_reads_itself`).
mod b06_push_reads_itself {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(a: f64) -> f64 {
        let mut v = vec![a; 2];
        v.push(v[0]);
        v[2]
    }
    #[test]
    fn regression() {
        test_rule!(f(0.7));
    }
}

/// Found by the generator: both modes: `for w in y { .. *w .. }` over a `&[f64]` did not compile (`Avoid::direct_iteration_deref`).
mod b07_direct_iteration_deref {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(y: &[f64]) -> f64 {
        let mut s = 0.0;
        for w in y {
            s += *w;
        }
        s
    }
    #[test]
    fn regression() {
        let y = vec![0.5, 1.5];
        test_rule!(f(&y));
    }
}

/// Found by the generator: forward mode: `(n..=1).rev()` typed the literal `i32` (`Avoid::inclusive_rev_range`).
mod b08_inclusive_rev_range {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(a: f64, n: usize) -> f64 {
        let mut s = a;
        for i in (n..=1).rev() {
            s *= a;
        }
        s
    }
    #[test]
    fn regression() {
        test_rule!(f(0.7, 0));
    }
}

/// Found by the generator: reverse mode: an assertion reading a value held through a handle (`*m`, `v[0]`) did not compile.
mod b09_assert_reads_handle {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(m: &mut f64, a: f64) -> f64 {
        assert!(*m < 100.0);
        let v = vec![a];
        debug_assert!(v[0].is_finite());
        *m *= a;
        a
    }
    #[test]
    fn regression() {
        let m = 0.5;
        test_rule!(f(&mut m, 0.7));
    }
}

/// Found by the generator: reverse mode: `fill` and `swap` on a buffer field of a `&mut` struct were type errors.
mod b10_slice_method_on_mut_field {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: &mut S) -> f64 {
        x0.w.fill(0.5);
        x0.w.swap(0, 1);
        x0.a
    }
    #[test]
    fn regression() {
        let a0 = S { a: 0.324, k: 0, w: vec![0.324, 1.5], p: P { x: 0.324, y: 0.324 } };
        test_rule!(f(&mut a0));
    }
}

/// Found by the generator: forward mode: no rule for `s.k.min(3)` on an integer field of a struct held by value (`Avoid::int_field_method`).
mod b11_int_field_method_by_value {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: S) -> f64 {
        let m = x0.k.min(3);
        x0.a * (m as f64)
    }
    #[test]
    fn regression() {
        let a0 = S { a: 0.345, k: 2, w: vec![0.345], p: P { x: 0.345, y: 0.345 } };
        test_rule!(f(a0));
    }
}

/// Found by the generator: forward mode: `x.len()` in a loop over a `&mut` array it iterates was a borrow error (`Avoid::reads_of_iterated_mut`).
mod b12_read_iterated_mut_array {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x0: &mut [f64; 3]) -> f64 {
        let mut s = 0.0;
        for (i0, e0) in x0.iter().enumerate() {
            s += x0[x0.len() % 3] * *e0;
        }
        s
    }
    #[test]
    fn regression() {
        let a0 = [1.686, 0.5, -0.25];
        test_rule!(f(&mut a0));
    }
}

/// Found by the generator: `assert!(x.len() > 0)` of an array held by value did not compile (`Avoid::assert_len_of_array`).
mod b13_assert_len_of_array_value {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x0: [f64; 3]) -> f64 {
        assert!(x0.len() > 0, "a buffer is never empty");
        x0[0] * 0.5
    }
    #[test]
    fn regression() {
        let a0 = [-1.383, -1.528, 1.47];
        test_rule!(f(a0));
    }
}

/// Found by the generator: forward mode: the same in a range bound (`Avoid::int_field_method`).
mod b11b_int_field_method_by_value_in_range {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: S) -> f64 {
        let mut s = x0.a;
        for i0 in (x0.k.min(3)..0).rev() {
            s *= x0.a;
        }
        s
    }
    #[test]
    fn regression() {
        let a0 = S { a: 0.345, k: 0, w: vec![0.345], p: P { x: 0.345, y: 0.345 } };
        test_rule!(f(a0));
    }
}

/// Found by the generator: reverse mode: `push` on a buffer field of a `&mut` struct was a type error.
mod b14_push_on_mut_field {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: &mut S) -> f64 {
        x0.w.push(0.5);
        x0.a
    }
    #[test]
    fn regression() {
        let a0 = S { a: 0.324, k: 0, w: vec![0.324, 1.5], p: P { x: 0.324, y: 0.324 } };
        test_rule!(f(&mut a0));
    }
}

/// Found by the generator: forward mode: a method on an element of a `&mut` buffer being iterated was a borrow error (`Avoid::reads_of_iterated_mut`).
mod b16_method_on_iterated_mut {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x0: &mut [f64]) -> f64 {
        let mut s = 0.0;
        for e0 in x0.iter() {
            s += x0[0].max(0.5) * *e0;
        }
        s
    }
    #[test]
    fn regression() {
        let a0 = vec![-1.284, 0.5];
        test_rule!(f(&mut a0));
    }
}

/// Found by the generator: forward mode: `clone` of a `&Vec<f64>`: "lifetime may not live long enough" (`Avoid::clone_vec_behind_ref`).
mod b17_clone_of_vec_ref {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(x0: &Vec<f64>) -> f64 {
        let v0 = x0.clone();
        v0[0] * 2.0
    }
    #[test]
    fn regression() {
        let a0 = vec![-1.891];
        test_rule!(f(&a0));
    }
}

/// Found by the generator: reverse mode: `match` on an integer field of a struct was not covered (`BorrowsInLocalsOrStdCalls`).
mod b18_match_on_field {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: S) -> f64 {
        match x0.k {
            4 | 1 => 1.0,
            _ => x0.a,
        }
    }
    #[test]
    fn regression() {
        let a0 = S { a: 0.887, k: 0, w: vec![0.887], p: P { x: 0.887, y: 0.887 } };
        test_rule!(f(a0));
    }
}

/// Found by the generator: reverse mode: a struct-typed field read by value out of `&S` / `&mut S` was a type error.
mod b20_struct_field_of_ref_by_value {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(m: &mut S, r: &S) -> f64 {
        let p = m.p;
        let q = r.p;
        p.x * q.y
    }
    #[test]
    fn regression() {
        let m = S { a: -1.511, k: 0, w: vec![-1.511], p: P { x: -1.511, y: 0.5 } };
        let r = m.clone();
        test_rule!(f(&mut m, &r));
    }
}

/// Found by the generator: forward mode: a `Copy` struct passed by value and used again: "use of moved value" (`Avoid::copy_struct_reused`).
mod b21_copy_struct_reused_after_call {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[differentiable]
    fn g(p: P) -> f64 {
        p.x * p.y
    }
    #[differentiable]
    fn f(p: P) -> f64 {
        g(p) + p.x
    }
    #[test]
    fn regression() {
        test_rule!(f(P { x: 0.592, y: -0.3 }));
    }
}

/// Found by the generator: forward mode: `v.len()` in a loop over `v.iter()`, `v` a `Vec` by value, was a borrow error (`Avoid::reads_of_iterated_mut`).
mod b22_len_of_iterated_vec_value {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(v: Vec<f64>) -> f64 {
        let mut s = 0.0;
        for e in v.iter() {
            s += v.len() as f64 * *e;
        }
        s
    }
    #[test]
    fn regression() {
        test_rule!(f(vec![-1.889, 0.5]));
    }
}

/// Found by the generator: reverse mode: `copy_from_slice(&r.w)` from a buffer field of a `&S` was not covered.
mod b23_copy_from_field_of_ref {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct S {
        a: f64,
        k: usize,
        w: Vec<f64>,
        p: P,
    }
    #[differentiable]
    fn f(x0: f64, x2: &mut [f64], x3: &S) -> f64 {
        x2.copy_from_slice(&x3.w);
        x0 * x2[0]
    }
    #[test]
    fn regression() {
        let a2 = vec![0.842, 1.037];
        let a3 = S { a: -1.926, k: 0, w: vec![-1.926, -1.357], p: P { x: -1.357, y: 1.905 } };
        test_rule!(f(0.041, &mut a2, &a3));
    }
}

/// Found by the generator: a method argument reading the receiver, `self.g2(self.x)`, was a borrow error (`Avoid::method_arg_reads_receiver`).
mod b24_method_arg_reads_receiver {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[differentiable]
    impl P {
        fn g1(&mut self) -> f64 {
            self.g2(self.x)
        }
        fn g2(&self, a: f64) -> f64 {
            a * self.y
        }
    }
    #[differentiable]
    fn f(a: f64) -> f64 {
        let mut p = P { x: a, y: 2.0 };
        p.g1()
    }
    #[test]
    fn regression() {
        test_rule!(f(-0.241));
    }
}

/// Found by the generator: forward mode: a `Copy` struct lent and passed by value in one call: "cannot move out of value because it is borrowed" (`Avoid::copy_struct_reused`).
mod b26_copy_struct_lent_and_passed {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[differentiable]
    fn g(q: &P, p: P) -> f64 {
        q.x * p.y
    }
    #[differentiable]
    fn f(p: P) -> f64 {
        g(&p, p)
    }
    #[test]
    fn regression() {
        test_rule!(f(P { x: 0.446, y: 1.5 }));
    }
}

/// Found by the generator: forward mode: a `Copy` struct passed by value, then a field of it read in the same call (`Avoid::copy_struct_reused`).
mod b27_copy_struct_passed_then_field_read {
    use mooncake_runtime::prelude::*;
    #[derive(Tangent, Clone, Copy, Debug, PartialEq)]
    struct P {
        x: f64,
        y: f64,
    }
    #[differentiable]
    fn g(p: P, a: f64) -> f64 {
        p.y * a
    }
    #[differentiable]
    fn f(p: P) -> f64 {
        g(p, p.x)
    }
    #[test]
    fn regression() {
        test_rule!(f(P { x: 1.495, y: -0.5 }));
    }
}

/// Found by the generator: both modes, wrong values: the left operand was read after the right one had run (`Avoid::operand_order`).
mod b31_operand_order {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn g(x: &mut [f64]) -> f64 {
        x[0] = 10.0 * x[1];
        1.0
    }
    #[differentiable]
    fn f(x: &mut [f64]) -> f64 {
        x[0] + g(x)
    }
    #[differentiable]
    fn h(x: f64) -> f64 {
        let mut a: f64 = x;
        a * {
            a = 2.0 * x;
            a
        }
    }
    #[test]
    fn regression() {
        let x = vec![-0.664, 0.5];
        test_rule!(f(&mut x));
        test_rule!(h(0.7));
    }
}

/// Found by the generator: reverse mode: "type annotations needed" for an integer method on a local initialised by a literal after a loop (`Avoid::int_local_method`).
mod b33_int_local_method_after_loop {
    use mooncake_runtime::prelude::*;
    #[differentiable]
    fn f(a: f64) -> f64 {
        for i in 0..2 {}
        let k: usize = 0;
        let j = k.max(1);
        a * (j as f64)
    }
    #[test]
    fn regression() {
        test_rule!(f(0.7));
    }
}

/// Found by the generator (seed 777, the session of batched forward mode): forward mode: "type
/// annotations needed" for a float method on the result of a generic function called with a
/// literal, once float methods had impls for batched receivers too (the float type of the
/// literal could no longer be told from the impl).
mod b34_float_method_on_literal_result {
    use mooncake_runtime::prelude::*;

    #[differentiable]
    fn f(mut x0: Vec<f64>) -> Vec<f64> {
        let a0 = f64::atan2(0.5, g1(0.5).powi(2) + 0.5);
        x0
    }

    #[differentiable]
    fn g1<T: Float>(x0: T) -> T {
        x0
    }

    #[test]
    fn regression() {
        let a0 = vec![0.883];
        test_rule!(f(a0), seed = 41590);
    }
}

/// Found by the generator (seed 778): the same, for `f64::abs` of an `if` of literals.
mod b35_float_method_on_literal_if {
    use mooncake_runtime::prelude::*;

    #[differentiable]
    fn f(x0: f64) -> f64 {
        let (a, b) = g1();
        x0 * a + b
    }

    #[differentiable]
    fn g1() -> (f64, f64) {
        (0.5 + f64::abs(if true { 1.0 } else { 1.0 }), 0.5)
    }

    #[test]
    fn regression() {
        test_rule!(f(0.3), seed = 28966);
    }
}

/// Found by the generator (seed 4712, case 18) while operators on values of user types were
/// being added: an impl of `rev::Operand` for any codual whose fdata was a derived type left a
/// literal's float type uninferred (its fdata a projection of the literal's type), a type
/// error inside the expansion. The impls now also ask the primal type to be a user type's
/// (`rev::UserValue`), which no float is.
mod b36_literal_operands_with_user_type_impls {
    use mooncake_runtime::prelude::*;

    #[differentiable]
    fn f(x0: f64) -> f64 {
        let v = g1();
        x0 * v[0] + g2()
    }

    #[differentiable]
    fn g1() -> Vec<f64> {
        let v0 = vec![-(f64::cbrt(0.5) * 0.5)];
        v0
    }

    #[differentiable]
    fn g2() -> f64 {
        -((match 0_usize {
            _ => 0.5,
        }) / (0.5 * 0.5 + 1.0))
    }

    #[test]
    fn regression() {
        test_rule!(f(0.768), seed = 54679);
    }
}
