//! The tangent / fdata / rdata types of the standard library's types (DESIGN.md section 3) and
//! the operations on them.

use mooncake_runtime::prelude::*;
use mooncake_runtime::{SharedVec, TestRng};
use std::marker::PhantomData;

/// Compiles only if `A` and `B` are the same type.
fn same<A: ?Sized + Same<B>, B: ?Sized>(_: PhantomData<A>, _: PhantomData<B>) {}
trait Same<B: ?Sized> {}
impl<A: ?Sized> Same<A> for A {}

macro_rules! assert_types {
    ($p:ty => tangent $t:ty, fdata $f:ty, rdata $r:ty) => {
        same(PhantomData::<<$p as Primal>::Tangent>, PhantomData::<$t>);
        same(PhantomData::<<$p as Primal>::FData>, PhantomData::<$f>);
        same(PhantomData::<<$p as Primal>::RData>, PhantomData::<$r>);
    };
}

#[test]
fn associated_types_are_as_designed() {
    assert_types!(f64 => tangent f64, fdata NoFData, rdata f64);
    assert_types!(f32 => tangent f32, fdata NoFData, rdata f32);
    assert_types!(i32 => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(usize => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(u8 => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(i128 => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(bool => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(char => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(() => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(String => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(&str => tangent NoTangent, fdata NoFData, rdata NoRData);
    assert_types!(Vec<f64> => tangent Vec<f64>, fdata SharedVec<f64>, rdata NoRData);
    assert_types!([f64] => tangent Vec<f64>, fdata SharedVec<f64>, rdata NoRData);
    assert_types!(&[f64] => tangent Vec<f64>, fdata SharedVec<f64>, rdata NoRData);
    assert_types!(&mut [f64] => tangent Vec<f64>, fdata SharedVec<f64>, rdata NoRData);
    assert_types!(&Vec<f64> => tangent Vec<f64>, fdata SharedVec<f64>, rdata NoRData);
    assert_types!(&mut Vec<f32> => tangent Vec<f32>, fdata SharedVec<f32>, rdata NoRData);
    assert_types!([f64; 3] => tangent [f64; 3], fdata [NoFData; 3], rdata [f64; 3]);
    assert_types!(&[f64; 3] => tangent [f64; 3], fdata SharedVec<f64>, rdata NoRData);
    assert_types!(&mut f64 => tangent f64, fdata SharedCell<f64>, rdata NoRData);
    assert_types!(&f64 => tangent f64, fdata SharedCell<f64>, rdata NoRData);
    assert_types!((f64, usize) => tangent (f64, NoTangent), fdata (NoFData, NoFData), rdata (f64, NoRData));
    assert_types!((f64, Vec<f64>) => tangent (f64, Vec<f64>), fdata (NoFData, SharedVec<f64>), rdata (f64, NoRData));
    assert_types!(
        (f64, f64, f64, f64, f64, f64, f64, usize)
            => tangent (f64, f64, f64, f64, f64, f64, f64, NoTangent),
               fdata (NoFData, NoFData, NoFData, NoFData, NoFData, NoFData, NoFData, NoFData),
               rdata (f64, f64, f64, f64, f64, f64, f64, NoRData)
    );
    assert_types!(Option<f64> => tangent Option<f64>, fdata Option<NoFData>, rdata Option<f64>);
    assert_types!(Vec<Vec<f64>> => tangent Vec<Vec<f64>>, fdata SharedVec<Vec<f64>>, rdata NoRData);
    // What a reference to a tangent points at, for forward-mode reference arguments.
    same(PhantomData::<<[f64] as Primal>::TangentRef>, PhantomData::<[f64]>);
    same(PhantomData::<<Vec<f64> as Primal>::TangentRef>, PhantomData::<Vec<f64>>);
    // Non-differentiable data costs nothing.
    assert_eq!(std::mem::size_of::<<(usize, bool, char) as Primal>::Tangent>(), 0);
    assert_eq!(std::mem::size_of::<<[f64; 8] as Primal>::FData>(), 0);
}

#[test]
fn zero_and_random_tangents_have_the_primal_shape() {
    let mut rng = TestRng::seed_from_u64(7);
    let x = vec![1.0_f64, 2.0, 3.0];
    assert_eq!(x.zero_tangent(), vec![0.0; 3]);
    let t = x.random_tangent(&mut rng);
    assert_eq!(t.len(), 3);
    assert!(t.iter().all(|v| v.is_finite()) && t.iter().any(|v| *v != 0.0));
    let a = [1.0_f32; 4];
    assert_eq!(a.zero_tangent(), [0.0; 4]);
    let tup = (2.0_f64, 5_usize, vec![1.0_f32]);
    let (t0, t1, t2) = tup.random_tangent(&mut rng);
    assert!(t0 != 0.0);
    assert_eq!(t1, NoTangent);
    assert_eq!(t2.len(), 1);
    assert_eq!(Some(1.5_f64).zero_tangent(), Some(0.0));
    assert_eq!(None::<f64>.zero_tangent(), None);
    let s: &[f64] = &[1.0, 2.0];
    assert_eq!(s.zero_tangent(), vec![0.0, 0.0]);
    assert_eq!(2.5_f64.zero_rdata(), 0.0);
    assert_eq!(x.zero_fdata().to_vec(), vec![0.0; 3]);
}

#[test]
fn random_tangents_are_reproducible_and_roughly_standard_normal() {
    let x = vec![0.0_f64; 20_000];
    let a = x.random_tangent(&mut TestRng::seed_from_u64(3));
    let b = x.random_tangent(&mut TestRng::seed_from_u64(3));
    let c = x.random_tangent(&mut TestRng::seed_from_u64(4));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let n = a.len() as f64;
    let mean = a.iter().sum::<f64>() / n;
    let var = a.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    assert!(mean.abs() < 0.05, "mean {mean}");
    assert!((var - 1.0).abs() < 0.05, "variance {var}");
}

#[test]
fn tangent_space_operations() {
    let mut a = vec![1.0_f64, 2.0];
    a.increment(&vec![0.5, -1.0]);
    assert_eq!(a, vec![1.5, 1.0]);
    assert_eq!(a.inner(&vec![2.0, 3.0]), 6.0);
    a.scale(2.0);
    assert_eq!(a, vec![3.0, 2.0]);

    let mut t = (1.0_f32, NoTangent, [1.0_f64, 2.0]);
    t.increment(&(2.0, NoTangent, [1.0, 1.0]));
    assert_eq!(t, (3.0, NoTangent, [2.0, 3.0]));
    assert_eq!(t.inner(&(1.0, NoTangent, [1.0, 1.0])), 8.0);

    let mut o: Option<f64> = None;
    o.increment(&Some(2.0));
    assert_eq!(o, Some(2.0));
    assert_eq!(o.inner(&None), 0.0);
    // Accumulates in f64 even for f32 tangents.
    assert_eq!(16_777_216.0_f32.inner(&1.0), 16_777_216.0);
}

#[test]
#[should_panic(expected = "cannot add a tangent of length 1 to one of length 2")]
fn incrementing_by_a_tangent_of_another_length_is_an_error() {
    let mut a = vec![1.0_f64, 2.0];
    a.increment(&vec![1.0]);
}

#[test]
fn split_and_join_send_values_to_rdata_and_buffers_to_fdata() {
    let (f, r) = <(f64, Vec<f64>)>::split_tangent((2.0, vec![3.0, 4.0]));
    assert_eq!(f.0, NoFData);
    assert_eq!(f.1.to_vec(), vec![3.0, 4.0]);
    assert_eq!(r, (2.0, NoRData));
    // Joining copies out of the shadow: a later write to the shadow does not change it.
    let joined = <(f64, Vec<f64>)>::join_tangent(&f, r);
    f.1.set(0, 100.0);
    assert_eq!(joined, (2.0, vec![3.0, 4.0]));

    let (f, r) = <&[f64]>::split_tangent(vec![1.0, 2.0]);
    assert_eq!((f.to_vec(), r), (vec![1.0, 2.0], NoRData));
    let (f, r) = <&mut f64>::split_tangent(1.5);
    assert_eq!((f.get(), r), (1.5, NoRData));
    assert_eq!(<&mut f64>::join_tangent(&f, NoRData), 1.5);
    let (f, r) = <[f64; 2]>::split_tangent([1.0, 2.0]);
    assert_eq!((f, r), ([NoFData; 2], [1.0, 2.0]));
    assert_eq!(<[f64; 2]>::join_tangent(&f, r), [1.0, 2.0]);
    assert_eq!(<Option<f64>>::split_tangent(Some(3.0)), (Some(NoFData), Some(3.0)));
}

#[test]
fn shadows_alias_on_clone_and_increment_in_place() {
    let x = [1.0_f64, 2.0, 3.0];
    let shadow = x.zero_shadow();
    let alias = shadow.clone();
    alias.add(2, 1.0);
    alias.increment_from(&SharedVec::from_vec(vec![1.0, 1.0, 1.0]));
    assert_eq!(<[f64; 3]>::shadow_to_tangent(&shadow), [1.0, 1.0, 2.0]);
    // Incrementing a shadow by itself doubles it.
    shadow.increment_from(&alias);
    assert_eq!(shadow.to_vec(), vec![2.0, 2.0, 4.0]);
}

#[test]
#[should_panic(expected = "cannot increment a shadow of length 2 by one of length 3")]
fn incrementing_a_shadow_by_one_of_another_length_is_an_error() {
    SharedVec::<f64>::zeros(2).increment_from(&SharedVec::zeros(3));
}

#[test]
fn handles_round_trip_and_see_mutation() {
    let mut v = vec![1.0_f64, 2.0];
    let h = v.to_handle();
    h.push(3.0);
    h.set(0, -1.0);
    v.load_handle(&h);
    assert_eq!(v, vec![-1.0, 2.0, 3.0]);

    let mut s = [1.0_f64, 2.0];
    let slice: &mut [f64] = &mut s;
    let h = slice.to_handle();
    h.set(1, 5.0);
    slice.load_handle(&h);
    assert_eq!(s, [1.0, 5.0]);

    let mut x = 2.0_f32;
    let h = x.to_handle();
    h.set(4.0);
    x.load_handle(&h);
    assert_eq!(x, 4.0);

    let mut t = (1.0_f64, 3_usize);
    let h = t.to_handle();
    h.1.set(4);
    t.load_handle(&h);
    assert_eq!(t, (1.0, 4));

    let mut name = String::from("a");
    let h = name.to_handle();
    h.with_mut(|s| s.push('b'));
    name.load_handle(&h);
    assert_eq!(name, "ab");
}

#[test]
#[should_panic(expected = "a slice argument cannot change length")]
fn a_slice_cannot_grow_through_its_handle() {
    let mut s = [1.0_f64, 2.0];
    let slice: &mut [f64] = &mut s;
    let h = slice.to_handle();
    h.push(3.0);
    slice.load_handle(&h);
}

#[test]
fn perturb_inner_difference_and_approx_eq() {
    let mut x = vec![1.0_f64, 2.0];
    x.perturb(&vec![1.0, -1.0], 0.5);
    assert_eq!(x, vec![1.5, 1.5]);
    let d = <Vec<f64>>::inner_difference(&vec![2.0, 1.0], &vec![3.0, 1.0], &vec![1.0, 0.0]);
    assert_eq!(d, 2.0 * 2.0 + 1.0);
    // Lengths that differ cannot be compared: NaN makes every check fail loudly.
    assert!(<Vec<f64>>::inner_difference(&vec![1.0], &vec![1.0, 2.0], &vec![1.0]).is_nan());
    assert!(1.0_f64.approx_eq(&1.0005, 1e-3, 0.0));
    assert!(!1.0_f64.approx_eq(&1.01, 1e-3, 1e-3));
    assert!(f64::NAN.approx_eq(&f64::NAN, 0.0, 0.0));
    assert!(!(1.0_f64, 3_usize).approx_eq(&(1.0, 4), 1.0, 1.0));
    assert!(!vec![1.0_f64].approx_eq(&vec![1.0, 1.0], 1.0, 1.0));
    // Integers are not perturbed.
    let mut n = (3_usize, 1.0_f64);
    n.perturb(&(NoTangent, 1.0), 0.25);
    assert_eq!(n, (3, 1.25));
    let mut o = Some(1.0_f32);
    o.perturb(&Some(2.0), 0.5);
    assert_eq!(o, Some(2.0));
}

#[test]
fn references_see_the_referent() {
    let x = vec![1.0_f64, 2.0];
    let r: &Vec<f64> = &x;
    assert_eq!(r.zero_tangent(), vec![0.0, 0.0]);
    assert_eq!(r.zero_fdata().to_vec(), vec![0.0, 0.0]);
    assert_eq!(r.zero_rdata(), NoRData);
    let mut y = [1.0_f64, 2.0];
    let m: &mut [f64; 2] = &mut y;
    m.perturb(&[1.0, 1.0], 1.0);
    assert_eq!(y, [2.0, 3.0]);
}
