//! Tests of the primitive buffer rules (`mooncake_runtime::rules::buffer`).
//!
//! Three layers:
//!
//! 1. Direct tests: each rule called by hand, its outputs, shadows and restored primal state
//!    compared with values computed by hand, for `f64` and `f32`, with edge cases (empty
//!    buffers, first and last index, overwrite then read, `pop` of an empty `Vec`, ...), and
//!    out-of-range panics compared with the primal's own panic message.
//! 2. `test_rule!` tests of every rule against its primal (finite differences, forward/reverse
//!    agreement, restoration, aliasing), for `f64` and `f32`, including rules composed from the
//!    primitives the way derived code composes them.
//! 3. Broken variants of the rules that `check_rule!` must reject, and property tests over
//!    random inputs.

// Rule signatures spell out the rule interface: `(CoDual<..>, impl FnOnce(..) -> (..))`.
#![allow(clippy::type_complexity)]

use mooncake_runtime::Float;
use mooncake_runtime::prelude::*;
use mooncake_runtime::rules::buffer::*;
use mooncake_runtime::test_utils::{Check, RuleTestFailure, strategies};
use proptest::prelude::*;
use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind};

// ---------------------------------------------------------------------------------------------
// Helpers.

fn f<T: Float>(x: f64) -> T {
    T::from_f64(x)
}

fn fv<T: Float>(xs: &[f64]) -> Vec<T> {
    xs.iter().map(|&x| T::from_f64(x)).collect()
}

fn shared<T: Float>(xs: &[f64]) -> SharedVec<T> {
    SharedVec::from_vec(fv(xs))
}

/// The message of the panic that `body` raises, or `None` if it returns.
fn panic_message(body: impl FnOnce()) -> Option<String> {
    let payload = catch_unwind(AssertUnwindSafe(body)).err()?;
    Some(
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default(),
    )
}

/// Generates `NAME_f64` and `NAME_f32` tests running `NAME::<f64>()` and `NAME::<f32>()`.
macro_rules! for_both_floats {
    ($($name:ident),* $(,)?) => {
        mod direct {
            $(
                #[test]
                fn $name() {
                    super::$name::<f64>();
                    super::$name::<f32>();
                }
            )*
        }
    };
}

for_both_floats!(
    read_buffer_impls,
    write_buffer_impls,
    len_direct,
    index_direct,
    index_out_of_range,
    index_set_direct,
    index_set_out_of_range,
    overwrite_then_read,
    overwrite_twice,
    compound_assign_direct,
    compound_assign_out_of_range,
    vec_filled_direct,
    vec_from_array_direct,
    vec_new_and_with_capacity_direct,
    push_direct,
    pop_direct,
    pop_empty,
    push_then_pop,
    to_vec_and_clone_direct,
    fill_direct,
    copy_from_slice_direct,
    copy_from_slice_length_mismatch,
    swap_direct,
    swap_out_of_range,
    sum_direct,
);

// ---------------------------------------------------------------------------------------------
// 1. Direct tests.

fn read_buffer_impls<T: Float>() {
    let v: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let a: [T; 3] = [f(1.0), f(2.0), f(3.0)];
    let h = shared::<T>(&[1.0, 2.0, 3.0]);
    let mut m = v.clone();
    fn check<T: Float, B: ReadBuffer<T>>(b: B) {
        assert_eq!(b.len(), 3);
        assert!(!b.is_empty());
        assert_eq!((b.get(0), b.get(2)), (f(1.0), f(3.0)));
        assert_eq!(b.with_slice(|s| s.to_vec()), fv::<T>(&[1.0, 2.0, 3.0]));
    }
    check::<T, _>(&v[..]);
    check::<T, _>(&v);
    check::<T, _>(&a);
    check::<T, _>(a);
    check::<T, _>(v.clone());
    check::<T, _>(h.clone());
    check::<T, _>(&h);
    check::<T, _>(&mut m[..]);
    check::<T, _>(&mut m);
    let e: Vec<T> = Vec::new();
    assert!(ReadBuffer::<T>::is_empty(&&e[..]));
    assert_eq!(ReadBuffer::<T>::len(&SharedVec::<T>::zeros(0)), 0);
}

fn write_buffer_impls<T: Float>() {
    fn check<T: Float, M: WriteBuffer<T>>(mut m: M) {
        assert_eq!(m.set(0, f(9.0)), f(1.0));
        m.swap(1, 2);
        m.with_slice_mut(|s| s[1] += f(0.5));
        assert_eq!(m.with_slice(|s| s.to_vec()), fv::<T>(&[9.0, 3.5, 2.0]));
    }
    let mut v: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    check::<T, _>(&mut v[..]);
    let mut v: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    check::<T, _>(&mut v);
    assert_eq!(v, fv::<T>(&[9.0, 3.5, 2.0]));
    let mut a: [T; 3] = [f(1.0), f(2.0), f(3.0)];
    check::<T, _>(&mut a);
    assert_eq!(a.to_vec(), fv::<T>(&[9.0, 3.5, 2.0]));
    let h = shared::<T>(&[1.0, 2.0, 3.0]);
    check::<T, _>(h.clone());
    assert_eq!(h.to_vec(), fv::<T>(&[9.0, 3.5, 2.0]));
}

fn len_direct<T: Float>() {
    let x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let dx: Vec<T> = fv(&[0.0, 0.0, 0.0]);
    assert_eq!(len_frule(Dual::new(&x[..], &dx[..])), Dual::new(3, NoTangent));
    assert_eq!(len_frule(Dual::new(&x, &dx)).primal, 3);
    let a = [f::<T>(1.0); 4];
    assert_eq!(len_frule(Dual::new(&a, &a)).primal, 4);
    let e: Vec<T> = Vec::new();
    assert_eq!(len_frule(Dual::new(&e[..], &e[..])).primal, 0);

    let shadow = shared::<T>(&[0.5, 0.5, 0.5]);
    let (y, pb) = len_rrule(CoDual::new(&x[..], shadow.clone()));
    assert_eq!(y, CoDual::new(3, NoFData));
    assert_eq!(pb(NoRData), (NoRData,));
    assert_eq!(shadow.to_vec(), fv::<T>(&[0.5, 0.5, 0.5]));
    let h = SharedVec::from_vec(x.clone());
    assert_eq!(len_rrule(CoDual::new(&h, shadow)).0.primal, 3);
    assert_eq!(len_rrule(CoDual::new(&e, SharedVec::<T>::zeros(0))).0.primal, 0);
}

fn index_direct<T: Float>() {
    let x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let dx: Vec<T> = fv(&[10.0, 20.0, 30.0]);
    let y = index_frule(Dual::new(&x[..], &dx[..]), Dual::new(0, NoTangent));
    assert_eq!(y, Dual::new(f(1.0), f(10.0)));
    let y = index_frule(Dual::new(&x, &dx), Dual::new(2, NoTangent));
    assert_eq!(y, Dual::new(f(3.0), f(30.0)));

    // The forward pass leaves the shadow alone; the pullback increments dx[i] only.
    let shadow = shared::<T>(&[0.5, 0.25, 0.125]);
    let (y, pb) = index_rrule(CoDual::new(&x[..], shadow.clone()), CoDual::new(2, NoFData));
    assert_eq!(y, CoDual::new(f(3.0), NoFData));
    assert_eq!(shadow.to_vec(), fv::<T>(&[0.5, 0.25, 0.125]));
    assert_eq!(pb(f(2.0)), (NoRData, NoRData));
    assert_eq!(shadow.to_vec(), fv::<T>(&[0.5, 0.25, 2.125]));

    // Two reads of one element (index 0) accumulate in its one shadow.
    let (_, pb1) = index_rrule(CoDual::new(&x, shadow.clone()), CoDual::new(0, NoFData));
    let (_, pb2) = index_rrule(CoDual::new(&x, shadow.clone()), CoDual::new(0, NoFData));
    pb2(f(1.0));
    pb1(f(3.0));
    assert_eq!(shadow.to_vec(), fv::<T>(&[4.5, 0.25, 2.125]));

    // The pullback does not borrow the buffer: it may change before the pullback runs.
    let mut z = x.clone();
    let (y, pb) = index_rrule(CoDual::new(&z[..], shadow.clone()), CoDual::new(1, NoFData));
    z[1] = f(7.0);
    pb(f(1.0));
    assert_eq!((y.primal, z[1]), (f(2.0), f(7.0)));
    assert_eq!(shadow.to_vec(), fv::<T>(&[4.5, 1.25, 2.125]));

    // Reads through the handle of a `&mut` buffer.
    let h = shared::<T>(&[4.0, 5.0]);
    let dh = SharedVec::<T>::zeros(2);
    let (y, pb) = index_rrule(CoDual::new(&h, dh.clone()), CoDual::new(1, NoFData));
    assert_eq!(y.primal, f(5.0));
    pb(f(-1.0));
    assert_eq!(dh.to_vec(), fv::<T>(&[0.0, -1.0]));
}

fn index_out_of_range<T: Float>() {
    let x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let expected = panic_message(|| {
        let _ = black_box(&x[..])[black_box(3)];
    });
    assert!(expected.as_deref().unwrap().contains("the len is 3 but the index is 3"));
    let got = panic_message(|| {
        index_frule(Dual::new(&x[..], &x[..]), Dual::new(3, NoTangent));
    });
    assert_eq!(got, expected);
    let shadow = SharedVec::<T>::zeros(3);
    let got = panic_message(|| {
        let _ = index_rrule(CoDual::new(&x[..], shadow.clone()), CoDual::new(3, NoFData));
    });
    assert_eq!(got, expected);
    let h = SharedVec::from_vec(x.clone());
    let got = panic_message(|| {
        let _ = index_rrule(CoDual::new(&h, shadow.clone()), CoDual::new(3, NoFData));
    });
    assert_eq!(got, expected);
    let e: Vec<T> = Vec::new();
    let expected = panic_message(|| {
        let _ = black_box(&e[..])[black_box(0)];
    });
    let got = panic_message(|| {
        index_frule(Dual::new(&e[..], &e[..]), Dual::new(0, NoTangent));
    });
    assert_eq!(got, expected);
}

fn index_set_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[10.0, 20.0, 30.0]);
    let out = index_set_frule(
        Dual::new(&mut x[..], &mut dx[..]),
        Dual::new(0, NoTangent),
        Dual::new(f(5.0), f(50.0)),
    );
    assert_eq!(out, Dual::new((), NoTangent));
    index_set_frule(
        Dual::new(&mut x, &mut dx),
        Dual::new(2, NoTangent),
        Dual::new(f(6.0), f(60.0)),
    );
    assert_eq!((x, dx), (fv::<T>(&[5.0, 2.0, 6.0]), fv::<T>(&[50.0, 20.0, 60.0])));

    // Reverse: the shadow holds an earlier accumulation (0.5, 0.25, 0.125) on entry.
    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = shared::<T>(&[0.5, 0.25, 0.125]);
    let (y, pb) = index_set_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(1, NoFData),
        CoDual::new(f(7.0), NoFData),
    );
    assert_eq!(y, CoDual::new((), NoFData));
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 7.0, 3.0]));
    assert_eq!(dx.to_vec(), fv::<T>(&[0.5, 0.0, 0.125]));
    // The gradient with respect to the state after the write arrives in the shadow.
    dx.with_mut(|d| {
        d[0] += f(1.0);
        d[1] += f(4.0);
        d[2] += f(2.0);
    });
    let (_, _, v_bar) = pb(NoRData);
    assert_eq!(v_bar, f(4.0));
    assert_eq!(dx.to_vec(), fv::<T>(&[1.5, 0.25, 2.125]));
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
}

fn index_set_out_of_range<T: Float>() {
    let mut p: Vec<T> = fv(&[1.0, 2.0]);
    let expected = panic_message(|| black_box(&mut p[..])[black_box(2)] = f(0.0));
    assert!(expected.as_deref().unwrap().contains("the len is 2 but the index is 2"));
    let mut x: Vec<T> = fv(&[1.0, 2.0]);
    let mut dx: Vec<T> = fv(&[0.0, 0.0]);
    let got = panic_message(|| {
        index_set_frule(
            Dual::new(&mut x[..], &mut dx[..]),
            Dual::new(2, NoTangent),
            Dual::new(f(1.0), f(1.0)),
        );
    });
    assert_eq!(got, expected);
    let x = shared::<T>(&[1.0, 2.0]);
    let dx = shared::<T>(&[0.5, 0.5]);
    let got = panic_message(|| {
        let _ = index_set_rrule(
            CoDual::new(x.clone(), dx.clone()),
            CoDual::new(2, NoFData),
            CoDual::new(f(1.0), NoFData),
        );
    });
    assert_eq!(got, expected);
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0, 2.0]), fv::<T>(&[0.5, 0.5])));
}

fn overwrite_then_read<T: Float>() {
    // x[1] = v; y = x[1]; z = x[0]: the read after the write sees v, and its gradient goes to v.
    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = SharedVec::<T>::zeros(3);
    let (_, pb_set) = index_set_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(1, NoFData),
        CoDual::new(f(7.0), NoFData),
    );
    let (y, pb_y) = index_rrule(CoDual::new(&x, dx.clone()), CoDual::new(1, NoFData));
    let (z, pb_z) = index_rrule(CoDual::new(&x, dx.clone()), CoDual::new(0, NoFData));
    assert_eq!((y.primal, z.primal), (f(7.0), f(1.0)));
    pb_z(f(2.0));
    pb_y(f(3.0));
    let (_, _, v_bar) = pb_set(NoRData);
    assert_eq!(v_bar, f(3.0));
    assert_eq!(dx.to_vec(), fv::<T>(&[2.0, 0.0, 0.0]));
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));

    // Forward mode: the read after the write sees the written tangent.
    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[0.0, 0.0, 0.0]);
    index_set_frule(Dual::new(&mut x, &mut dx), Dual::new(1, NoTangent), Dual::new(f(7.0), f(0.5)));
    let y = index_frule(Dual::new(&x, &dx), Dual::new(1, NoTangent));
    assert_eq!(y, Dual::new(f(7.0), f(0.5)));
}

fn overwrite_twice<T: Float>() {
    // x[2] = a; x[2] = b; y = x[2] (the last index): a no longer reaches y.
    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = shared::<T>(&[0.0, 0.0, 0.25]);
    let (_, pb_a) = index_set_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(2, NoFData),
        CoDual::new(f(5.0), NoFData),
    );
    let (_, pb_b) = index_set_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(2, NoFData),
        CoDual::new(f(6.0), NoFData),
    );
    let (y, pb_y) = index_rrule(CoDual::new(&x, dx.clone()), CoDual::new(2, NoFData));
    assert_eq!(y.primal, f(6.0));
    pb_y(f(1.0));
    let (_, _, b_bar) = pb_b(NoRData);
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 5.0]));
    let (_, _, a_bar) = pb_a(NoRData);
    assert_eq!((a_bar, b_bar), (f(0.0), f(1.0)));
    assert_eq!(dx.to_vec(), fv::<T>(&[0.0, 0.0, 0.25]));
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
}

/// Checks one compound assignment `x[1] op= 4` on `x = [2, 3, 5]`, tangent `[10, 20, 30]`,
/// `dv = 2`; reverse with the shadow `[0.5, 0.25, 0.125]` on entry and `[1, 1.5, 0]` added
/// after the forward pass.
macro_rules! check_compound {
    ($T:ty, $frule:ident, $rrule:ident, new = $new:expr, d_new = $d_new:expr,
     v_bar = $v_bar:expr, dx1 = $dx1:expr) => {{
        let mut x: Vec<$T> = fv(&[2.0, 3.0, 5.0]);
        let mut dx: Vec<$T> = fv(&[10.0, 20.0, 30.0]);
        let out =
            $frule(Dual::new(&mut x, &mut dx), Dual::new(1, NoTangent), Dual::new(f(4.0), f(2.0)));
        assert_eq!(out, Dual::new((), NoTangent));
        assert_eq!(x, fv::<$T>(&[2.0, $new, 5.0]), stringify!($frule));
        assert_eq!(dx, fv::<$T>(&[10.0, $d_new, 30.0]), stringify!($frule));

        let x = shared::<$T>(&[2.0, 3.0, 5.0]);
        let dx = shared::<$T>(&[0.5, 0.25, 0.125]);
        let (_, pb) = $rrule(
            CoDual::new(x.clone(), dx.clone()),
            CoDual::new(1, NoFData),
            CoDual::new(f(4.0), NoFData),
        );
        assert_eq!(x.to_vec(), fv::<$T>(&[2.0, $new, 5.0]), stringify!($rrule));
        assert_eq!(dx.to_vec(), fv::<$T>(&[0.5, 0.0, 0.125]), stringify!($rrule));
        dx.with_mut(|d| {
            d[0] += f(1.0);
            d[1] += f(1.5);
        });
        let (_, _, v_bar) = pb(NoRData);
        assert_eq!(v_bar, f($v_bar), stringify!($rrule));
        assert_eq!(dx.to_vec(), fv::<$T>(&[1.5, $dx1, 0.125]), stringify!($rrule));
        assert_eq!(x.to_vec(), fv::<$T>(&[2.0, 3.0, 5.0]), stringify!($rrule));
    }};
}

fn compound_assign_direct<T: Float>() {
    check_compound!(
        T,
        index_add_assign_frule,
        index_add_assign_rrule,
        new = 7.0,
        d_new = 22.0,
        v_bar = 1.5,
        dx1 = 1.75
    );
    check_compound!(
        T,
        index_sub_assign_frule,
        index_sub_assign_rrule,
        new = -1.0,
        d_new = 18.0,
        v_bar = -1.5,
        dx1 = 1.75
    );
    // new = 3 * 4; d_new = 20 * 4 + 3 * 2; v̄ = 1.5 * 3; x̄ = 0.25 + 1.5 * 4.
    check_compound!(
        T,
        index_mul_assign_frule,
        index_mul_assign_rrule,
        new = 12.0,
        d_new = 86.0,
        v_bar = 4.5,
        dx1 = 6.25
    );
    // new = 3 / 4; d_new = (20 - 0.75 * 2) / 4; v̄ = -1.5 * 3 / 16; x̄ = 0.25 + 1.5 / 4.
    check_compound!(
        T,
        index_div_assign_frule,
        index_div_assign_rrule,
        new = 0.75,
        d_new = 4.625,
        v_bar = -0.28125,
        dx1 = 0.625
    );

    // The pullback restores the saved value, bit for bit, rather than recomputing it.
    let x = shared::<T>(&[0.1]);
    let dx = SharedVec::<T>::zeros(1);
    let (_, pb) = index_add_assign_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(0, NoFData),
        CoDual::new(f(0.2), NoFData),
    );
    pb(NoRData);
    assert_eq!(x.get(0).to_f64().to_bits(), f::<T>(0.1).to_f64().to_bits());
    assert_ne!((0.1_f64 + 0.2) - 0.2, 0.1, "recomputing would not restore 0.1");
}

fn compound_assign_out_of_range<T: Float>() {
    let mut p: Vec<T> = fv(&[1.0, 2.0]);
    let expected = panic_message(|| black_box(&mut p[..])[black_box(5)] += f(1.0));
    assert!(expected.as_deref().unwrap().contains("the len is 2 but the index is 5"));
    let x = shared::<T>(&[1.0, 2.0]);
    let dx = shared::<T>(&[0.5, 0.5]);
    let got = panic_message(|| {
        let _ = index_mul_assign_rrule(
            CoDual::new(x.clone(), dx.clone()),
            CoDual::new(5, NoFData),
            CoDual::new(f(1.0), NoFData),
        );
    });
    assert_eq!(got, expected);
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0, 2.0]), fv::<T>(&[0.5, 0.5])));
    let mut x: Vec<T> = fv(&[1.0, 2.0]);
    let mut dx: Vec<T> = fv(&[0.5, 0.5]);
    let got = panic_message(|| {
        index_div_assign_frule(
            Dual::new(&mut x[..], &mut dx[..]),
            Dual::new(5, NoTangent),
            Dual::new(f(1.0), f(1.0)),
        );
    });
    assert_eq!(got, expected);
}

fn vec_filled_direct<T: Float>() {
    let y = vec_filled_frule(Dual::new(f::<T>(2.0), f(0.5)), Dual::new(3, NoTangent));
    assert_eq!(y, Dual::new(fv::<T>(&[2.0, 2.0, 2.0]), fv::<T>(&[0.5, 0.5, 0.5])));
    let y = vec_filled_frule(Dual::new(f::<T>(2.0), f(0.5)), Dual::new(0, NoTangent));
    assert_eq!(y, Dual::new(Vec::new(), Vec::new()));

    let (y, pb) = vec_filled_rrule(CoDual::new(f::<T>(2.0), NoFData), CoDual::new(3, NoFData));
    assert_eq!(y.primal, fv::<T>(&[2.0, 2.0, 2.0]));
    assert_eq!(y.fdata.to_vec(), fv::<T>(&[0.0, 0.0, 0.0]));
    y.fdata.with_mut(|d| d.copy_from_slice(&fv::<T>(&[1.0, 2.0, 3.5])));
    assert_eq!(pb(NoRData), (f(6.5), NoRData));

    let (y, pb) = vec_filled_rrule(CoDual::new(f::<T>(2.0), NoFData), CoDual::new(0, NoFData));
    assert!(y.primal.is_empty() && y.fdata.is_empty());
    assert_eq!(pb(NoRData), (f(0.0), NoRData));
}

fn vec_from_array_direct<T: Float>() {
    let a: [T; 3] = [f(1.0), f(2.0), f(3.0)];
    let da: [T; 3] = [f(0.5), f(0.0), f(-1.0)];
    let y = vec_from_array_frule(Dual::new(a, da));
    assert_eq!(y, Dual::new(fv::<T>(&[1.0, 2.0, 3.0]), fv::<T>(&[0.5, 0.0, -1.0])));

    let (y, pb) = vec_from_array_rrule(CoDual::new(a, [NoFData; 3]));
    assert_eq!(y.primal, fv::<T>(&[1.0, 2.0, 3.0]));
    assert_eq!(y.fdata.to_vec(), fv::<T>(&[0.0, 0.0, 0.0]));
    y.fdata.with_mut(|d| d.copy_from_slice(&fv::<T>(&[4.0, 5.0, 6.0])));
    assert_eq!(pb(NoRData), ([f(4.0), f(5.0), f(6.0)],));

    let (y, pb) = vec_from_array_rrule::<T, 0>(CoDual::new([], []));
    assert!(y.primal.is_empty() && y.fdata.is_empty());
    assert_eq!(pb(NoRData), ([],));
}

fn vec_new_and_with_capacity_direct<T: Float>() {
    let y = vec_new_frule::<T>();
    assert!(y.primal.is_empty() && y.tangent.is_empty());
    let (y, pb) = vec_new_rrule::<T>();
    assert!(y.primal.is_empty() && y.fdata.is_empty());
    pb(NoRData);

    let y = vec_with_capacity_frule::<T>(Dual::new(5, NoTangent));
    assert!(y.primal.is_empty() && y.tangent.is_empty());
    assert!(y.primal.capacity() >= 5 && y.tangent.capacity() >= 5);
    let (y, pb) = vec_with_capacity_rrule::<T>(CoDual::new(5, NoFData));
    assert!(y.primal.is_empty() && y.fdata.is_empty());
    assert!(y.primal.capacity() >= 5);
    assert_eq!(pb(NoRData), (NoRData,));
}

fn push_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0]);
    let mut dx: Vec<T> = fv(&[0.5]);
    let out = push_frule(Dual::new(&mut x, &mut dx), Dual::new(f(2.0), f(3.0)));
    assert_eq!(out, Dual::new((), NoTangent));
    assert_eq!((x, dx), (fv::<T>(&[1.0, 2.0]), fv::<T>(&[0.5, 3.0])));

    // Onto an empty Vec.
    let x = SharedVec::<T>::zeros(0);
    let dx = SharedVec::<T>::zeros(0);
    let (_, pb) = push_rrule(CoDual::new(x.clone(), dx.clone()), CoDual::new(f(2.0), NoFData));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[2.0]), fv::<T>(&[0.0])));
    dx.add(0, f(1.5));
    assert_eq!(pb(NoRData), (NoRData, f(1.5)));
    assert!(x.is_empty() && dx.is_empty());

    // Onto a non-empty Vec whose shadow holds an accumulation.
    let x = shared::<T>(&[1.0, 2.0]);
    let dx = shared::<T>(&[0.5, 0.25]);
    let (_, pb) = push_rrule(CoDual::new(x.clone(), dx.clone()), CoDual::new(f(3.0), NoFData));
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
    dx.with_mut(|d| d.iter_mut().for_each(|g| *g += f(1.0)));
    assert_eq!(pb(NoRData), (NoRData, f(1.0)));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0, 2.0]), fv::<T>(&[1.5, 1.25])));
}

fn pop_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0, 2.0]);
    let mut dx: Vec<T> = fv(&[0.5, 3.0]);
    let y = pop_frule(Dual::new(&mut x, &mut dx));
    assert_eq!(y, Dual::new(Some(f(2.0)), Some(f(3.0))));
    assert_eq!((x, dx), (fv::<T>(&[1.0]), fv::<T>(&[0.5])));

    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = shared::<T>(&[0.1, 0.25, 0.5]);
    let (y, pb) = pop_rrule(CoDual::new(x.clone(), dx.clone()));
    assert_eq!(y, CoDual::new(Some(f(3.0)), Some(NoFData)));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0, 2.0]), fv::<T>(&[0.1, 0.25])));
    dx.add(0, f(1.0));
    assert_eq!(pb(Some(f(2.0))), (NoRData,));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0, 2.0, 3.0]), fv::<T>(&[1.1, 0.25, 2.5])));

    // A `None` cotangent of a `Some` result counts as zero.
    let x = shared::<T>(&[1.0]);
    let dx = shared::<T>(&[0.5]);
    let (_, pb) = pop_rrule(CoDual::new(x.clone(), dx.clone()));
    pb(None);
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0]), fv::<T>(&[0.5])));
}

fn pop_empty<T: Float>() {
    let mut x: Vec<T> = Vec::new();
    let mut dx: Vec<T> = Vec::new();
    assert_eq!(pop_frule(Dual::new(&mut x, &mut dx)), Dual::new(None, None));
    let x = SharedVec::<T>::zeros(0);
    let dx = SharedVec::<T>::zeros(0);
    let (y, pb) = pop_rrule(CoDual::new(x.clone(), dx.clone()));
    assert_eq!(y, CoDual::new(None, None));
    assert_eq!(pb(None), (NoRData,));
    assert_eq!(pb_none_then_some::<T>(), (0, 0));
    assert!(x.is_empty() && dx.is_empty());
}

/// `pop` of an empty Vec whose pullback is (wrongly) handed `Some`: still nothing to undo.
fn pb_none_then_some<T: Float>() -> (usize, usize) {
    let x = SharedVec::<T>::zeros(0);
    let dx = SharedVec::<T>::zeros(0);
    let (_, pb) = pop_rrule(CoDual::new(x.clone(), dx.clone()));
    pb(Some(f(1.0)));
    (x.len(), dx.len())
}

fn push_then_pop<T: Float>() {
    // Forward mode.
    let mut x: Vec<T> = fv(&[1.0]);
    let mut dx: Vec<T> = fv(&[0.0]);
    push_frule(Dual::new(&mut x, &mut dx), Dual::new(f(4.0), f(0.5)));
    let y = pop_frule(Dual::new(&mut x, &mut dx));
    assert_eq!(y, Dual::new(Some(f(4.0)), Some(f(0.5))));
    assert_eq!((x, dx), (fv::<T>(&[1.0]), fv::<T>(&[0.0])));

    // Reverse mode: v̄ = ȳ, and everything is back as it was.
    let x = shared::<T>(&[1.0]);
    let dx = shared::<T>(&[0.25]);
    let (_, pb_push) = push_rrule(CoDual::new(x.clone(), dx.clone()), CoDual::new(f(4.0), NoFData));
    let (y, pb_pop) = pop_rrule(CoDual::new(x.clone(), dx.clone()));
    assert_eq!(y.primal, Some(f(4.0)));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0]), fv::<T>(&[0.25])));
    pb_pop(Some(f(3.0)));
    assert_eq!(dx.to_vec(), fv::<T>(&[0.25, 3.0]));
    assert_eq!(pb_push(NoRData), (NoRData, f(3.0)));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[1.0]), fv::<T>(&[0.25])));
}

fn to_vec_and_clone_direct<T: Float>() {
    let x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let dx: Vec<T> = fv(&[0.5, 0.0, -1.0]);
    let y = to_vec_frule(Dual::new(&x[..], &dx[..]));
    assert_eq!(y, Dual::new(x.clone(), dx.clone()));
    let y = vec_clone_frule(Dual::new(&x, &dx));
    assert_eq!(y, Dual::new(x.clone(), dx.clone()));

    let shadow = shared::<T>(&[0.5, 0.25, 0.125]);
    let (y, pb) = to_vec_rrule(CoDual::new(&x[..], shadow.clone()));
    assert_eq!(y.primal, x);
    assert_eq!(y.fdata.to_vec(), fv::<T>(&[0.0, 0.0, 0.0]));
    assert!(!y.fdata.ptr_eq(&shadow));
    y.fdata.with_mut(|d| d.copy_from_slice(&fv::<T>(&[1.0, 2.0, 3.0])));
    assert_eq!(pb(NoRData), (NoRData,));
    assert_eq!(shadow.to_vec(), fv::<T>(&[1.5, 2.25, 3.125]));

    let (y, pb) = vec_clone_rrule(CoDual::new(&x, shadow.clone()));
    assert_eq!(y.primal, x);
    y.fdata.add(1, f(-2.0));
    pb(NoRData);
    assert_eq!(shadow.to_vec(), fv::<T>(&[1.5, 0.25, 3.125]));

    let e: Vec<T> = Vec::new();
    let (y, pb) = to_vec_rrule(CoDual::new(&e[..], SharedVec::zeros(0)));
    assert!(y.primal.is_empty() && y.fdata.is_empty());
    pb(NoRData);
}

fn fill_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[0.5, 0.5, 0.5]);
    fill_frule(Dual::new(&mut x[..], &mut dx[..]), Dual::new(f(4.0), f(-1.0)));
    assert_eq!((x, dx), (fv::<T>(&[4.0, 4.0, 4.0]), fv::<T>(&[-1.0, -1.0, -1.0])));

    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = shared::<T>(&[0.5, 0.25, 0.125]);
    let (_, pb) = fill_rrule(CoDual::new(x.clone(), dx.clone()), CoDual::new(f(4.0), NoFData));
    assert_eq!((x.to_vec(), dx.to_vec()), (fv::<T>(&[4.0, 4.0, 4.0]), fv::<T>(&[0.0, 0.0, 0.0])));
    dx.with_mut(|d| d.copy_from_slice(&fv::<T>(&[1.0, 2.0, 3.0])));
    assert_eq!(pb(NoRData), (NoRData, f(6.0)));
    assert_eq!(
        (x.to_vec(), dx.to_vec()),
        (fv::<T>(&[1.0, 2.0, 3.0]), fv::<T>(&[0.5, 0.25, 0.125]))
    );

    let x = SharedVec::<T>::zeros(0);
    let (_, pb) =
        fill_rrule(CoDual::new(x.clone(), SharedVec::zeros(0)), CoDual::new(f(4.0), NoFData));
    assert!(x.is_empty());
    assert_eq!(pb(NoRData).1, f(0.0));
}

fn copy_from_slice_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[0.0, 0.0, 0.0]);
    let src: Vec<T> = fv(&[7.0, 8.0, 9.0]);
    let d_src: Vec<T> = fv(&[0.5, 0.25, 0.125]);
    copy_from_slice_frule(Dual::new(&mut x[..], &mut dx[..]), Dual::new(&src[..], &d_src[..]));
    assert_eq!((x, dx), (src.clone(), d_src.clone()));

    let dst = shared::<T>(&[1.0, 2.0, 3.0]);
    let d_dst = shared::<T>(&[0.5, 0.25, 0.125]);
    let ds = shared::<T>(&[1.0, 1.0, 1.0]);
    let (_, pb) = copy_from_slice_rrule(
        CoDual::new(dst.clone(), d_dst.clone()),
        CoDual::new(&src[..], ds.clone()),
    );
    assert_eq!((dst.to_vec(), d_dst.to_vec()), (src.clone(), fv::<T>(&[0.0, 0.0, 0.0])));
    d_dst.with_mut(|d| d.copy_from_slice(&fv::<T>(&[1.0, 2.0, 3.0])));
    assert_eq!(pb(NoRData), (NoRData, NoRData));
    assert_eq!(ds.to_vec(), fv::<T>(&[2.0, 3.0, 4.0]));
    assert_eq!(d_dst.to_vec(), fv::<T>(&[0.5, 0.25, 0.125]));
    assert_eq!(dst.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));

    // Empty buffers.
    let e: Vec<T> = Vec::new();
    let (_, pb) = copy_from_slice_rrule(
        CoDual::new(SharedVec::<T>::zeros(0), SharedVec::zeros(0)),
        CoDual::new(&e[..], SharedVec::zeros(0)),
    );
    pb(NoRData);
}

fn copy_from_slice_length_mismatch<T: Float>() {
    let src: Vec<T> = fv(&[7.0, 8.0]);
    let mut p: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let expected = panic_message(|| black_box(&mut p[..]).copy_from_slice(black_box(&src[..])));
    let text = expected.clone().unwrap();
    assert!(text.contains('2') && text.contains('3'), "{text}");

    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[0.0, 0.0, 0.0]);
    let got = panic_message(|| {
        copy_from_slice_frule(Dual::new(&mut x[..], &mut dx[..]), Dual::new(&src[..], &src[..]));
    });
    assert_eq!(got, expected);

    let dst = shared::<T>(&[1.0, 2.0, 3.0]);
    let d_dst = shared::<T>(&[0.5, 0.25, 0.125]);
    let got = panic_message(|| {
        let _ = copy_from_slice_rrule(
            CoDual::new(dst.clone(), d_dst.clone()),
            CoDual::new(&src[..], SharedVec::zeros(2)),
        );
    });
    assert_eq!(got, expected);
    assert_eq!(dst.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
    assert_eq!(d_dst.to_vec(), fv::<T>(&[0.5, 0.25, 0.125]));
}

fn swap_direct<T: Float>() {
    let mut x: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dx: Vec<T> = fv(&[0.5, 0.25, 0.125]);
    swap_frule(Dual::new(&mut x, &mut dx), Dual::new(0, NoTangent), Dual::new(2, NoTangent));
    assert_eq!((x, dx), (fv::<T>(&[3.0, 2.0, 1.0]), fv::<T>(&[0.125, 0.25, 0.5])));

    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = shared::<T>(&[0.5, 0.25, 0.125]);
    let (_, pb) = swap_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(0, NoFData),
        CoDual::new(2, NoFData),
    );
    assert_eq!(
        (x.to_vec(), dx.to_vec()),
        (fv::<T>(&[3.0, 2.0, 1.0]), fv::<T>(&[0.125, 0.25, 0.5]))
    );
    dx.with_mut(|d| {
        d[0] += f(1.0);
        d[1] += f(2.0);
        d[2] += f(4.0);
    });
    assert_eq!(pb(NoRData), (NoRData, NoRData, NoRData));
    // old shadow + Pᵀ (1, 2, 4) = (0.5 + 4, 0.25 + 2, 0.125 + 1).
    assert_eq!(
        (x.to_vec(), dx.to_vec()),
        (fv::<T>(&[1.0, 2.0, 3.0]), fv::<T>(&[4.5, 2.25, 1.125]))
    );

    // Swapping an element with itself changes nothing.
    let (_, pb) = swap_rrule(
        CoDual::new(x.clone(), dx.clone()),
        CoDual::new(1, NoFData),
        CoDual::new(1, NoFData),
    );
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
    pb(NoRData);
    assert_eq!(dx.to_vec(), fv::<T>(&[4.5, 2.25, 1.125]));
}

fn swap_out_of_range<T: Float>() {
    let mut p: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let expected = panic_message(|| black_box(&mut p[..]).swap(black_box(0), black_box(3)));
    assert!(expected.as_deref().unwrap().contains("the len is 3 but the index is 3"));
    let x = shared::<T>(&[1.0, 2.0, 3.0]);
    let dx = SharedVec::<T>::zeros(3);
    let got = panic_message(|| {
        let _ = swap_rrule(
            CoDual::new(x.clone(), dx.clone()),
            CoDual::new(0, NoFData),
            CoDual::new(3, NoFData),
        );
    });
    assert_eq!(got, expected);
    assert_eq!(x.to_vec(), fv::<T>(&[1.0, 2.0, 3.0]));
    let mut y: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let mut dy: Vec<T> = fv(&[1.0, 2.0, 3.0]);
    let got = panic_message(|| {
        swap_frule(
            Dual::new(&mut y[..], &mut dy[..]),
            Dual::new(0, NoTangent),
            Dual::new(3, NoTangent),
        );
    });
    assert_eq!(got, expected);
}

fn sum_direct<T: Float>() {
    let x: Vec<T> = fv(&[1.0, 2.0, 3.5]);
    let dx: Vec<T> = fv(&[0.5, 0.25, 0.125]);
    assert_eq!(sum_frule(Dual::new(&x[..], &dx[..])), Dual::new(f(6.5), f(0.875)));
    let e: Vec<T> = Vec::new();
    let s = sum_frule(Dual::new(&e[..], &e[..]));
    assert_eq!(s.primal, f(0.0));

    let shadow = shared::<T>(&[0.5, 0.25, 0.125]);
    let (y, pb) = sum_rrule(CoDual::new(&x, shadow.clone()));
    assert_eq!(y.primal, f(6.5));
    assert_eq!(pb(f(2.0)), (NoRData,));
    assert_eq!(shadow.to_vec(), fv::<T>(&[2.5, 2.25, 2.125]));
    let (y, pb) = sum_rrule(CoDual::new(&e[..], SharedVec::zeros(0)));
    assert_eq!(y.primal, f(0.0));
    pb(f(1.0));
}

#[test]
fn sum_of_empty_matches_std_sign() {
    let e64: [f64; 0] = [];
    let e32: [f32; 0] = [];
    let s64 = sum_frule(Dual::new(&e64, &e64)).primal;
    let s32 = sum_frule(Dual::new(&e32, &e32)).primal;
    assert_eq!(s64.is_sign_negative(), e64.iter().sum::<f64>().is_sign_negative());
    assert_eq!(s32.is_sign_negative(), e32.iter().sum::<f32>().is_sign_negative());
    let x = [0.1_f64, 0.2, 0.3, 1e16, -1e16];
    assert_eq!(sum_frule(Dual::new(&x, &x)).primal, x.iter().sum::<f64>());
}

// ---------------------------------------------------------------------------------------------
// 2. test_rule! tests, for f64 and f32.

/// The primal functions, composite rules and `test_rule!` tests for one float type.
macro_rules! rule_tests {
    ($module:ident, $T:ty, rtol = $rtol:expr, atol = $atol:expr, dot_tol = $dot_tol:expr) => {
        mod $module {
            use super::*;
            type T = $T;
            const RTOL: f64 = $rtol;
            const ATOL: f64 = $atol;
            const DOT_TOL: f64 = $dot_tol;

            fn vals(xs: &[f64]) -> Vec<T> {
                fv(xs)
            }

            // -- the primals --------------------------------------------------------------

            fn len(x: &[T]) -> usize {
                x.len()
            }
            fn read(x: &[T], i: usize) -> T {
                x[i]
            }
            fn read_mut(x: &mut [T], i: usize) -> T {
                x[i]
            }
            fn set(x: &mut [T], i: usize, v: T) {
                x[i] = v
            }
            fn set_array(x: &mut [T; 3], i: usize, v: T) {
                x[i] = v
            }
            fn add_assign(x: &mut [T], i: usize, v: T) {
                x[i] += v
            }
            fn sub_assign(x: &mut [T], i: usize, v: T) {
                x[i] -= v
            }
            fn mul_assign(x: &mut [T], i: usize, v: T) {
                x[i] *= v
            }
            fn div_assign(x: &mut [T], i: usize, v: T) {
                x[i] /= v
            }
            fn filled(x: T, n: usize) -> Vec<T> {
                vec![x; n]
            }
            fn from_array(a: [T; 3]) -> Vec<T> {
                vec![a[0], a[1], a[2]]
            }
            fn with_capacity(n: usize) -> Vec<T> {
                Vec::with_capacity(n)
            }
            fn push(x: &mut Vec<T>, v: T) {
                x.push(v)
            }
            fn pop(x: &mut Vec<T>) -> Option<T> {
                x.pop()
            }
            fn to_vec(x: &[T]) -> Vec<T> {
                x.to_vec()
            }
            #[allow(clippy::ptr_arg)] // the rule under test is `Vec::clone`
            fn clone_vec(x: &Vec<T>) -> Vec<T> {
                x.clone()
            }
            fn fill(x: &mut [T], v: T) {
                x.fill(v)
            }
            fn copy(dst: &mut [T], src: &[T]) {
                dst.copy_from_slice(src)
            }
            fn swap(x: &mut [T], a: usize, b: usize) {
                x.swap(a, b)
            }
            fn sum(x: &[T]) -> T {
                x.iter().sum()
            }
            fn dot(a: &[T], b: &[T]) -> T {
                a.iter().zip(b).map(|(x, y)| x * y).sum()
            }

            // -- rules for `dot`, by hand and composed from `index` ------------------------

            fn dot_frule(a: Dual<&[T], &[T]>, b: Dual<&[T], &[T]>) -> Dual<T, T> {
                Dual::new(
                    dot(a.primal, b.primal),
                    dot(a.tangent, b.primal) + dot(a.primal, b.tangent),
                )
            }

            fn dot_rrule<'a>(
                a: CoDual<&'a [T], SharedVec<T>>,
                b: CoDual<&'a [T], SharedVec<T>>,
            ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, NoRData) + use<>) {
                let (ap, bp) = (a.primal.to_vec(), b.primal.to_vec());
                let (da, db) = (a.fdata, b.fdata);
                let y = dot(&ap, &bp);
                let pullback = move |g: T| {
                    // Two separate increments: `da` and `db` are one shadow when a and b alias.
                    da.with_mut(|d| d.iter_mut().zip(&bp).for_each(|(d, &x)| *d += g * x));
                    db.with_mut(|d| d.iter_mut().zip(&ap).for_each(|(d, &x)| *d += g * x));
                    (NoRData, NoRData)
                };
                (CoDual::new(y, NoFData), pullback)
            }

            /// `dot` as derived code would run it: a read rule per element, the pullbacks on a
            /// tape, run in reverse. `use<>`: the pullbacks of `index_rrule` do not borrow `a`
            /// or `b`, or this would not compile.
            fn dot_indexed_rrule<'a>(
                a: CoDual<&'a [T], SharedVec<T>>,
                b: CoDual<&'a [T], SharedVec<T>>,
            ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, NoRData) + use<>) {
                let mut tape = Vec::with_capacity(a.primal.len());
                let mut y: T = -0.0;
                for k in 0..a.primal.len() {
                    let (ak, pa) = index_rrule(
                        CoDual::new(a.primal, a.fdata.clone()),
                        CoDual::new(k, NoFData),
                    );
                    let (bk, pb) = index_rrule(
                        CoDual::new(b.primal, b.fdata.clone()),
                        CoDual::new(k, NoFData),
                    );
                    y += ak.primal * bk.primal;
                    tape.push((ak.primal, bk.primal, pa, pb));
                }
                let pullback = move |g: T| {
                    for (ak, bk, pa, pb) in tape.into_iter().rev() {
                        pb(g * ak);
                        pa(g * bk);
                    }
                    (NoRData, NoRData)
                };
                (CoDual::new(y, NoFData), pullback)
            }

            // -- composite rules, written as derived code would be -------------------------

            /// `x[0] *= v; let a = x[0]; x[1] = a; x.iter().sum()`.
            fn scale_copy_sum(x: &mut [T], v: T) -> T {
                x[0] *= v;
                let a = x[0];
                x[1] = a;
                x.iter().sum()
            }

            fn scale_copy_sum_frule(x: Dual<&mut [T], &mut [T]>, v: Dual<T, T>) -> Dual<T, T> {
                let (x, dx) = x.into_parts();
                index_mul_assign_frule(Dual::new(&mut *x, &mut *dx), Dual::new(0, NoTangent), v);
                let a = index_frule(Dual::new(&*x, &*dx), Dual::new(0, NoTangent));
                index_set_frule(Dual::new(&mut *x, &mut *dx), Dual::new(1, NoTangent), a);
                sum_frule(Dual::new(&*x, &*dx))
            }

            fn scale_copy_sum_rrule(
                x: CoDual<SharedVec<T>, SharedVec<T>>,
                v: CoDual<T, NoFData>,
            ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, T)) {
                let (x, dx) = x.into_parts();
                let (_, pb1) = index_mul_assign_rrule(
                    CoDual::new(x.clone(), dx.clone()),
                    CoDual::new(0, NoFData),
                    v,
                );
                let (a, pb2) = index_rrule(CoDual::new(&x, dx.clone()), CoDual::new(0, NoFData));
                let (_, pb3) =
                    index_set_rrule(CoDual::new(x.clone(), dx.clone()), CoDual::new(1, NoFData), a);
                let (s, pb4) = sum_rrule(CoDual::new(&x, dx));
                let pullback = move |g: T| {
                    pb4(g);
                    let (_, _, a_bar) = pb3(NoRData);
                    pb2(a_bar);
                    let (_, _, v_bar) = pb1(NoRData);
                    (NoRData, v_bar)
                };
                (s, pullback)
            }

            /// `x.push(v); let s = x.iter().sum(); (s, x.pop())`.
            fn push_sum_pop(x: &mut Vec<T>, v: T) -> (T, Option<T>) {
                x.push(v);
                let s = x.iter().sum();
                (s, x.pop())
            }

            fn push_sum_pop_frule(
                x: Dual<&mut Vec<T>, &mut Vec<T>>,
                v: Dual<T, T>,
            ) -> Dual<(T, Option<T>), (T, Option<T>)> {
                let (x, dx) = x.into_parts();
                push_frule(Dual::new(&mut *x, &mut *dx), v);
                let s = sum_frule(Dual::new(&*x, &*dx));
                let y = pop_frule(Dual::new(x, dx));
                Dual::new((s.primal, y.primal), (s.tangent, y.tangent))
            }

            fn push_sum_pop_rrule(
                x: CoDual<SharedVec<T>, SharedVec<T>>,
                v: CoDual<T, NoFData>,
            ) -> (
                CoDual<(T, Option<T>), (NoFData, Option<NoFData>)>,
                impl FnOnce((T, Option<T>)) -> (NoRData, T),
            ) {
                let (x, dx) = x.into_parts();
                let (_, pb_push) = push_rrule(CoDual::new(x.clone(), dx.clone()), v);
                let (s, pb_sum) = sum_rrule(CoDual::new(&x, dx.clone()));
                let (y, pb_pop) = pop_rrule(CoDual::new(x, dx));
                let out = CoDual::new((s.primal, y.primal), (NoFData, y.fdata));
                let pullback = move |(s_bar, y_bar): (T, Option<T>)| {
                    pb_pop(y_bar);
                    pb_sum(s_bar);
                    let (_, v_bar) = pb_push(NoRData);
                    (NoRData, v_bar)
                };
                (out, pullback)
            }

            /// `let mut v = Vec::new(); v.push(a); v.push(b); v`.
            #[allow(clippy::vec_init_then_push)] // the rules under test are `Vec::new` and `push`
            fn build(a: T, b: T) -> Vec<T> {
                let mut v = Vec::new();
                v.push(a);
                v.push(b);
                v
            }

            fn build_frule(a: Dual<T, T>, b: Dual<T, T>) -> Dual<Vec<T>, Vec<T>> {
                let mut v = vec_new_frule();
                push_frule(Dual::new(&mut v.primal, &mut v.tangent), a);
                push_frule(Dual::new(&mut v.primal, &mut v.tangent), b);
                v
            }

            fn build_rrule(
                a: CoDual<T, NoFData>,
                b: CoDual<T, NoFData>,
            ) -> (CoDual<Vec<T>, SharedVec<T>>, impl FnOnce(NoRData) -> (T, T)) {
                let (v, pb_new) = vec_new_rrule::<T>();
                let (v, dv) = v.into_parts();
                let h = SharedVec::from_vec(v); // the handle of a local that is mutated
                let (_, pb_a) = push_rrule(CoDual::new(h.clone(), dv.clone()), a);
                let (_, pb_b) = push_rrule(CoDual::new(h.clone(), dv.clone()), b);
                let out = CoDual::new(h.to_vec(), dv);
                let pullback = move |_: NoRData| {
                    let (_, b_bar) = pb_b(NoRData);
                    let (_, a_bar) = pb_a(NoRData);
                    pb_new(NoRData);
                    (a_bar, b_bar)
                };
                (out, pullback)
            }

            /// Reads from a buffer passed by `&mut`: reverse mode reads through `&handle`.
            fn read_mut_frule(
                x: Dual<&mut Vec<T>, &mut Vec<T>>,
                i: Dual<usize, NoTangent>,
            ) -> Dual<T, T> {
                index_frule(x, i)
            }

            fn read_mut_rrule(
                x: CoDual<SharedVec<T>, SharedVec<T>>,
                i: CoDual<usize, NoFData>,
            ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData, NoRData)) {
                // `&x.primal` is a local borrow: this compiles only because the pullback does not
                // capture it.
                index_rrule(CoDual::new(&x.primal, x.fdata), i)
            }

            // -- the tests ----------------------------------------------------------------

            #[test]
            fn len_rule() {
                let x = vals(&[1.0, 2.0, 3.0]);
                let e = vals(&[]);
                test_rule!(len(&x), frule = len_frule, rrule = len_rrule);
                test_rule!(len(&e), frule = len_frule, rrule = len_rrule);
            }

            #[test]
            fn index_rule() {
                let x = vals(&[1.0, -2.0, 3.0]);
                for (i, seed) in [(0, 1), (1, 2), (2, 3)] {
                    test_rule!(
                        read(&x, i),
                        frule = index_frule,
                        rrule = index_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL,
                        seed = seed
                    );
                }
                test_rule!(
                    read_mut(&mut x, 1),
                    frule = read_mut_frule,
                    rrule = read_mut_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn index_set_rule() {
                let x = vals(&[1.0, -2.0, 3.0]);
                for i in [0, 2] {
                    test_rule!(
                        set(&mut x, i, 0.5),
                        frule = index_set_frule,
                        rrule = index_set_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                }
                let a: [T; 3] = [1.0, -2.0, 3.0];
                test_rule!(
                    set_array(&mut a, 1, 0.5),
                    frule = index_set_frule,
                    rrule = index_set_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn compound_assign_rules() {
                let x = vals(&[1.5, -2.0, 3.0]);
                for (i, v) in [(0, 0.7), (2, -1.3)] {
                    test_rule!(
                        add_assign(&mut x, i, v),
                        frule = index_add_assign_frule,
                        rrule = index_add_assign_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                    test_rule!(
                        sub_assign(&mut x, i, v),
                        frule = index_sub_assign_frule,
                        rrule = index_sub_assign_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                    test_rule!(
                        mul_assign(&mut x, i, v),
                        frule = index_mul_assign_frule,
                        rrule = index_mul_assign_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                    test_rule!(
                        div_assign(&mut x, i, v),
                        frule = index_div_assign_frule,
                        rrule = index_div_assign_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                }
            }

            #[test]
            fn vec_filled_rule() {
                for n in [0, 1, 4] {
                    test_rule!(
                        filled(0.7, n),
                        frule = vec_filled_frule,
                        rrule = vec_filled_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                }
            }

            #[test]
            fn vec_from_array_rule() {
                let a: [T; 3] = [0.5, -1.0, 2.0];
                test_rule!(
                    from_array(a),
                    frule = vec_from_array_frule,
                    rrule = vec_from_array_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn vec_with_capacity_rule() {
                test_rule!(
                    with_capacity(4),
                    frule = vec_with_capacity_frule,
                    rrule = vec_with_capacity_rrule
                );
            }

            #[test]
            fn push_rule() {
                let x = vals(&[1.0, -2.0]);
                let e = vals(&[]);
                test_rule!(
                    push(&mut x, 0.5),
                    frule = push_frule,
                    rrule = push_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    push(&mut e, 0.5),
                    frule = push_frule,
                    rrule = push_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn pop_rule() {
                let x = vals(&[1.0, -2.0, 0.25]);
                let one = vals(&[3.0]);
                let e = vals(&[]);
                test_rule!(
                    pop(&mut x),
                    frule = pop_frule,
                    rrule = pop_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    pop(&mut one),
                    frule = pop_frule,
                    rrule = pop_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    pop(&mut e),
                    frule = pop_frule,
                    rrule = pop_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn to_vec_and_clone_rules() {
                let x = vals(&[1.0, -2.0, 3.0]);
                let e = vals(&[]);
                test_rule!(
                    to_vec(&x),
                    frule = to_vec_frule,
                    rrule = to_vec_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    to_vec(&e),
                    frule = to_vec_frule,
                    rrule = to_vec_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    clone_vec(&x),
                    frule = vec_clone_frule,
                    rrule = vec_clone_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn fill_rule() {
                let x = vals(&[1.0, -2.0, 3.0]);
                let e = vals(&[]);
                test_rule!(
                    fill(&mut x, 0.25),
                    frule = fill_frule,
                    rrule = fill_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    fill(&mut e, 0.25),
                    frule = fill_frule,
                    rrule = fill_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn copy_from_slice_rule() {
                let x = vals(&[1.0, -2.0, 3.0]);
                let y = vals(&[0.5, 0.25, -4.0]);
                test_rule!(
                    copy(&mut x, &y),
                    frule = copy_from_slice_frule,
                    rrule = copy_from_slice_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn swap_rule() {
                let x = vals(&[1.0, -2.0, 3.0]);
                for (a, b) in [(0, 2), (1, 1), (2, 1)] {
                    test_rule!(
                        swap(&mut x, a, b),
                        frule = swap_frule,
                        rrule = swap_rrule,
                        rtol = RTOL,
                        atol = ATOL,
                        dot_tol = DOT_TOL
                    );
                }
            }

            #[test]
            fn sum_rule() {
                let x = vals(&[1.0, -2.0, 3.0, 0.5]);
                let e = vals(&[]);
                test_rule!(
                    sum(&x),
                    frule = sum_frule,
                    rrule = sum_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    sum(&e),
                    frule = sum_frule,
                    rrule = sum_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn dot_rules_and_aliasing() {
                let x = vals(&[1.0, -2.0, 3.0]);
                let y = vals(&[0.5, 0.25, -4.0]);
                test_rule!(
                    dot(&x, &y),
                    frule = dot_frule,
                    rrule = dot_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    dot(&x, &x),
                    frule = dot_frule,
                    rrule = dot_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    dot(&x, &y),
                    frule = dot_frule,
                    rrule = dot_indexed_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    dot(&x, &x),
                    frule = dot_frule,
                    rrule = dot_indexed_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }

            #[test]
            fn composite_rules() {
                let x = vals(&[1.0, -2.0, 3.0]);
                test_rule!(
                    scale_copy_sum(&mut x, 0.7),
                    frule = scale_copy_sum_frule,
                    rrule = scale_copy_sum_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    push_sum_pop(&mut x, 0.7),
                    frule = push_sum_pop_frule,
                    rrule = push_sum_pop_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
                test_rule!(
                    build(0.7, -1.5),
                    frule = build_frule,
                    rrule = build_rrule,
                    rtol = RTOL,
                    atol = ATOL,
                    dot_tol = DOT_TOL
                );
            }
        }
    };
}

rule_tests!(f64_rules, f64, rtol = 1e-6, atol = 1e-6, dot_tol = 1e-9);
rule_tests!(f32_rules, f32, rtol = 1e-2, atol = 1e-2, dot_tol = 1e-4);

// ---------------------------------------------------------------------------------------------
// 3. Broken rules that the checks must reject, and property tests.

fn failure(r: Result<(), RuleTestFailure>) -> RuleTestFailure {
    match r {
        Ok(()) => panic!("a broken rule passed its rule test"),
        Err(e) => e,
    }
}

fn set(x: &mut [f64], i: usize, v: f64) {
    x[i] = v
}

/// `index_set_rrule` without the restoration of `x[i]`.
fn set_no_restore_rrule(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<f64, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, f64)) {
    let (x, dx) = x.into_parts();
    let i = i.primal;
    x.set(i, v.primal);
    let old_d = dx.set(i, 0.0);
    (CoDual::new((), NoFData), move |_: NoRData| (NoRData, NoRData, dx.set(i, old_d)))
}

/// `index_set_rrule` that leaves the overwritten element's gradient in the shadow.
fn set_no_zero_rrule(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
    i: CoDual<usize, NoFData>,
    v: CoDual<f64, NoFData>,
) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, NoRData, f64)) {
    let (x, dx) = x.into_parts();
    let i = i.primal;
    let old = x.set(i, v.primal);
    (CoDual::new((), NoFData), move |_: NoRData| {
        x.set(i, old);
        (NoRData, NoRData, dx.get(i))
    })
}

#[test]
fn broken_index_set_rules_are_rejected() {
    let x = vec![1.0, -2.0, 3.0];
    let e = failure(check_rule!(set(&mut x, 1, 0.5), rrule = set_no_restore_rrule, mode = reverse));
    assert_eq!(e.check, Check::StateNotRestored);
    let e = failure(check_rule!(set(&mut x, 1, 0.5), rrule = set_no_zero_rrule, mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
    check_rule!(set(&mut x, 1, 0.5), frule = index_set_frule, rrule = index_set_rrule).unwrap();
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A `dot` pullback that overwrites the shadows instead of incrementing them.
fn dot_overwrite_rrule<'a>(
    a: CoDual<&'a [f64], SharedVec<f64>>,
    b: CoDual<&'a [f64], SharedVec<f64>>,
) -> (CoDual<f64, NoFData>, impl FnOnce(f64) -> (NoRData, NoRData) + use<>) {
    let (ap, bp) = (a.primal.to_vec(), b.primal.to_vec());
    let (da, db) = (a.fdata, b.fdata);
    let y = dot(&ap, &bp);
    (CoDual::new(y, NoFData), move |g: f64| {
        da.assign(&bp.iter().map(|x| g * x).collect::<Vec<_>>());
        db.assign(&ap.iter().map(|x| g * x).collect::<Vec<_>>());
        (NoRData, NoRData)
    })
}

#[test]
fn overwriting_shadows_is_rejected_under_aliasing() {
    let x = vec![1.0, -2.0, 3.0];
    let e = failure(check_rule!(dot(&x, &x), rrule = dot_overwrite_rrule, mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}

fn pop(x: &mut Vec<f64>) -> Option<f64> {
    x.pop()
}

/// `pop_rrule` whose pullback forgets the result's cotangent.
fn pop_forgets_rrule(
    x: CoDual<SharedVec<f64>, SharedVec<f64>>,
) -> (CoDual<Option<f64>, Option<NoFData>>, impl FnOnce(Option<f64>) -> (NoRData,)) {
    let (x, dx) = x.into_parts();
    let y = x.pop();
    let d = dx.pop();
    (CoDual::new(y, y.map(|_| NoFData)), move |_: Option<f64>| {
        if let (Some(y), Some(d)) = (y, d) {
            x.push(y);
            dx.push(d);
        }
        (NoRData,)
    })
}

#[test]
fn broken_pop_rule_is_rejected() {
    let x = vec![1.0, -2.0, 3.0];
    let e = failure(check_rule!(pop(&mut x), rrule = pop_forgets_rrule, mode = reverse));
    assert_eq!(e.check, Check::ReverseVsFiniteDifferences);
}

fn fill(x: &mut [f64], v: f64) {
    x.fill(v)
}

/// `fill_frule` that leaves the tangent alone.
fn fill_no_tangent_frule(
    x: Dual<&mut [f64], &mut [f64]>,
    v: Dual<f64, f64>,
) -> Dual<(), NoTangent> {
    x.primal.fill(v.primal);
    Dual::new((), NoTangent)
}

#[test]
fn broken_fill_rule_is_rejected() {
    let x = vec![1.0, -2.0, 3.0];
    let e = failure(check_rule!(fill(&mut x, 0.5), frule = fill_no_tangent_frule, mode = forward));
    assert_eq!(e.check, Check::ForwardVsFiniteDifferences);
}

fn mul_assign(x: &mut [f64], i: usize, v: f64) {
    x[i] *= v
}

fn copy(dst: &mut [f64], src: &[f64]) {
    dst.copy_from_slice(src)
}

fn sum(x: &[f64]) -> f64 {
    x.iter().sum()
}

fn swap(x: &mut [f64], a: usize, b: usize) {
    x.swap(a, b)
}

fn ok(r: Result<(), RuleTestFailure>) -> Result<(), TestCaseError> {
    r.map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn prop_index_set((x, i) in strategies::vector_and_index::<f64>(1..8, -2.0, 2.0),
                      v in strategies::float::<f64>(-2.0, 2.0)) {
        ok(check_rule!(set(&mut x, i, v), frule = index_set_frule, rrule = index_set_rrule))?;
    }

    #[test]
    fn prop_index_mul_assign((x, i) in strategies::vector_and_index::<f64>(1..8, -2.0, 2.0),
                             v in strategies::float::<f64>(-2.0, 2.0)) {
        ok(check_rule!(mul_assign(&mut x, i, v), frule = index_mul_assign_frule,
            rrule = index_mul_assign_rrule))?;
    }

    #[test]
    fn prop_copy_from_slice(xy in (1usize..8).prop_flat_map(|n| (
        strategies::vector::<f64>(n..n + 1, -2.0, 2.0),
        strategies::vector::<f64>(n..n + 1, -2.0, 2.0),
    ))) {
        let (x, y) = xy;
        ok(check_rule!(copy(&mut x, &y), frule = copy_from_slice_frule,
            rrule = copy_from_slice_rrule))?;
    }

    #[test]
    fn prop_swap((x, a) in strategies::vector_and_index::<f64>(1..8, -2.0, 2.0), b in 0usize..8) {
        let b = b % x.len();
        ok(check_rule!(swap(&mut x, a, b), frule = swap_frule, rrule = swap_rrule))?;
    }

    #[test]
    fn prop_sum_and_dot(x in strategies::vector::<f64>(0..8, -2.0, 2.0)) {
        ok(check_rule!(sum(&x), frule = sum_frule, rrule = sum_rrule))?;
        // The reverse rule against a hand-computed gradient: all ones times ȳ.
        let shadow = SharedVec::zeros(x.len());
        let (y, pb) = sum_rrule(CoDual::new(&x[..], shadow.clone()));
        prop_assert_eq!(y.primal, x.iter().sum::<f64>());
        pb(1.5);
        prop_assert!(shadow.to_vec().iter().all(|&g| g == 1.5));
    }

    #[test]
    fn prop_fill_pullback(x in strategies::vector::<f64>(0..8, -2.0, 2.0),
                          seed in strategies::vector::<f64>(8..9, -2.0, 2.0),
                          v in strategies::float::<f64>(-2.0, 2.0)) {
        let n = x.len();
        let h = SharedVec::from_vec(x.clone());
        let dh = SharedVec::from_vec(seed[..n].iter().map(|s| s * 0.5).collect());
        let (_, pb) = fill_rrule(CoDual::new(h.clone(), dh.clone()), CoDual::new(v, NoFData));
        prop_assert!(h.to_vec().iter().all(|&e| e == v));
        dh.with_mut(|d| d.copy_from_slice(&seed[..n]));
        let (_, v_bar) = pb(NoRData);
        let expected: f64 = seed[..n].iter().sum();
        prop_assert!((v_bar - expected).abs() <= 1e-12);
        prop_assert_eq!(h.to_vec(), x);
        prop_assert_eq!(dh.to_vec(), seed[..n].iter().map(|s| s * 0.5).collect::<Vec<_>>());
    }
}
