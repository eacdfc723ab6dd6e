//! `#[derive(Tangent)]`: the generated tangent, fdata, rdata, shadow and handle types of user
//! structs, and their `Primal` impls, checked against the promised types and concrete numbers.

#![deny(warnings)]

use mooncake_runtime::TestRng;
use mooncake_runtime::prelude::*;
use std::marker::PhantomData;

/// Compiles only if `A` and `B` are the same type.
fn same<T: ?Sized>(_: PhantomData<T>, _: PhantomData<T>) {}

fn p<T: ?Sized>() -> PhantomData<T> {
    PhantomData
}

// ---------------------------------------------------------------------------------------------
// The items under test.

/// A model with a buffer, a scalar and a non-differentiable count.
#[derive(Tangent, Clone, Debug, PartialEq)]
pub struct Model {
    /// Weights.
    pub w: Vec<f64>,
    /// Bias.
    pub b: f64,
    n: usize,
}

/// Scalars only: value-identified.
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f32,
}

/// A tuple struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Pair(f64, Vec<f64>);

/// A generic struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Gen<T> {
    x: T,
    w: Vec<T>,
}

/// A struct borrowing a slice.
#[derive(Tangent, Clone, Debug)]
struct View<'a> {
    x: &'a [f64],
    s: f64,
}

/// A const-generic struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Arr<const N: usize> {
    x: [f64; N],
}

/// A derived struct inside another.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Outer {
    inner: Model,
    p: Point,
    scale: f64,
}

/// A generic struct holding a derived generic struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Wrap<T> {
    g: Gen<T>,
    s: T,
}

/// A struct written by a `macro_rules!` macro (its field types arrive as invisible groups).
macro_rules! make_struct {
    ($name:ident, $t:ty) => {
        #[derive(Tangent, Clone, Debug, PartialEq)]
        struct $name {
            x: $t,
            v: Vec<$t>,
        }
    };
}
make_struct!(FromMacro, f64);

/// A unit struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Unit;

/// A struct with no fields, in braces.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Empty {}

/// A fieldless enum: non-differentiable.
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Mode {
    Fast,
    Slow,
}

/// Field names that generated code might trip on, a raw identifier, `Self` in a field type,
/// a default type parameter, a where clause and a bound.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Awkward<T: Copy = f64>
where
    T: PartialEq,
{
    r#type: T,
    other: Option<T>,
    rng: [T; 2],
    _marker: u8,
    itself: Tag<Self>,
}

/// A non-differentiable tag with a hand-written `Primal` impl, to check that the derive composes
/// with one.
#[derive(Clone, Debug, PartialEq)]
struct Tag<X>(PhantomData<X>);

impl<X> Primal for Tag<X> {
    type Tangent = NoTangent;
    type TangentRef = NoTangent;
    type FData = NoFData;
    type RData = NoRData;
    type Shadow = NoFData;
    type Handle = ();
    fn zero_tangent(&self) -> NoTangent {
        NoTangent
    }
    fn random_tangent(&self, _: &mut TestRng) -> NoTangent {
        NoTangent
    }
    fn zero_fdata(&self) -> NoFData {
        NoFData
    }
    fn zero_rdata(&self) -> NoRData {
        NoRData
    }
    fn zero_shadow(&self) -> NoFData {
        NoFData
    }
    fn split_tangent(_: NoTangent) -> (NoFData, NoRData) {
        (NoFData, NoRData)
    }
    fn join_tangent(_: &NoFData, _: NoRData) -> NoTangent {
        NoTangent
    }
    fn tangent_to_shadow(_: NoTangent) -> NoFData {
        NoFData
    }
    fn shadow_to_tangent(_: &NoFData) -> NoTangent {
        NoTangent
    }
    fn tangent_ref(t: &NoTangent) -> &NoTangent {
        t
    }
    fn tangent_mut(t: &mut NoTangent) -> &mut NoTangent {
        t
    }
    fn to_handle(&self) {}
    fn load_handle(&mut self, _: &()) {}
    fn perturb(&mut self, _: &NoTangent, _: f64) {}
    fn inner_difference(_: &NoTangent, _: &Self, _: &Self) -> f64 {
        0.0
    }
    fn approx_eq(&self, _: &Self, _: f64, _: f64) -> bool {
        true
    }
}

fn model() -> Model {
    Model { w: vec![1.0, 2.0, 3.0], b: 0.5, n: 7 }
}

// ---------------------------------------------------------------------------------------------
// The associated types are exactly the promised ones.

#[test]
fn associated_types_are_the_generated_structs() {
    same(p::<<Model as Primal>::Tangent>(), p::<ModelTangent>());
    same(p::<<Model as Primal>::TangentRef>(), p::<ModelTangent>());
    same(p::<<Model as Primal>::FData>(), p::<ModelFData>());
    same(p::<<Model as Primal>::RData>(), p::<ModelRData>());
    same(p::<<Model as Primal>::Shadow>(), p::<ModelShadow>());
    same(p::<<Model as Primal>::Handle>(), p::<ModelHandle>());
    // References: the blanket impl, fdata = the shadow.
    same(p::<<&Model as Primal>::Tangent>(), p::<ModelTangent>());
    same(p::<<&Model as Primal>::FData>(), p::<ModelShadow>());
    same(p::<<&Model as Primal>::RData>(), p::<NoRData>());
    same(p::<<&mut Model as Primal>::FData>(), p::<ModelShadow>());
    same(p::<<&mut Model as Primal>::Handle>(), p::<ModelHandle>());
}

#[test]
fn field_types_follow_the_fields() {
    let m = model();
    let t: ModelTangent = m.zero_tangent();
    let (w, b, n): (Vec<f64>, f64, NoTangent) = (t.w, t.b, t.n);
    assert_eq!((w, b, n), (vec![0.0; 3], 0.0, NoTangent));

    let f: ModelFData = m.zero_fdata();
    let (w, b, n): (SharedVec<f64>, NoFData, NoFData) = (f.w, f.b, f.n);
    assert_eq!((w.to_vec(), b, n), (vec![0.0; 3], NoFData, NoFData));

    let r: ModelRData = m.zero_rdata();
    let (w, b, n): (NoRData, f64, NoRData) = (r.w, r.b, r.n);
    assert_eq!((w, b, n), (NoRData, 0.0, NoRData));

    let s: ModelShadow = m.zero_shadow();
    let (w, b, n): (SharedVec<f64>, SharedCell<f64>, NoFData) = (s.w, s.b, s.n);
    assert_eq!((w.to_vec(), b.get(), n), (vec![0.0; 3], 0.0, NoFData));

    let h: ModelHandle = m.to_handle();
    let (w, b, n): (SharedVec<f64>, SharedCell<f64>, SharedCell<usize>) = (h.w, h.b, h.n);
    assert_eq!((w.to_vec(), b.get(), n.get()), (vec![1.0, 2.0, 3.0], 0.5, 7));
}

#[test]
fn scalar_only_struct_is_value_identified() {
    same(p::<<Point as Primal>::FData>(), p::<PointFData>());
    let pt = Point { x: 1.0, y: 2.0 };
    let r: PointRData = pt.zero_rdata();
    let (x, y): (f64, f32) = (r.x, r.y);
    assert_eq!((x, y), (0.0, 0.0));
    let f = pt.zero_fdata();
    assert_eq!((f.x, f.y), (NoFData, NoFData));
    assert_eq!(std::mem::size_of::<PointFData>(), 0);
    assert_eq!(std::mem::size_of::<<Point as Primal>::FData>(), 0);
    assert_eq!(std::mem::size_of::<PointRData>(), std::mem::size_of::<(f64, f32)>());
    // The gradient travels in rdata.
    let (f, r) = Point::split_tangent(PointTangent { x: 3.0, y: 4.0 });
    assert_eq!(std::mem::size_of_val(&f), 0);
    assert_eq!(r, PointRData { x: 3.0, y: 4.0 });
    assert_eq!(Point::join_tangent(&f, r), PointTangent { x: 3.0, y: 4.0 });
}

// ---------------------------------------------------------------------------------------------
// split / join, shadows.

#[test]
fn split_puts_buffers_in_fdata_and_scalars_in_rdata() {
    let t = ModelTangent { w: vec![1.0, 2.0, 3.0], b: 4.0, n: NoTangent };
    let (f, r) = Model::split_tangent(t.clone());
    assert_eq!(f.w.to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(r.b, 4.0);
    assert_eq!(r.w, NoRData);
    // The fdata is a shadow: a pullback increments it in place, through a clone.
    let alias = f.clone();
    alias.w.add(1, 10.0);
    // Every field's rdata is `Copy` (the `Vec`'s is `NoRData`), so the rdata is.
    let mut r2 = r;
    r2.b += 1.0;
    let joined = Model::join_tangent(&f, r2);
    assert_eq!(joined.w, vec![1.0, 12.0, 3.0]);
    assert_eq!(joined.b, 5.0);
    // Round trip.
    let (f, r) = Model::split_tangent(t.clone());
    assert_eq!(Model::join_tangent(&f, r), t);
}

#[test]
fn shadows_round_trip_and_alias() {
    let t = ModelTangent { w: vec![1.0, -1.0], b: 2.0, n: NoTangent };
    let s = Model::tangent_to_shadow(t.clone());
    let alias = s.clone();
    alias.b.add(0.5);
    alias.w.add(0, 1.0);
    assert_eq!(
        Model::shadow_to_tangent(&s),
        ModelTangent { w: vec![2.0, -1.0], b: 2.5, n: NoTangent }
    );
    // `increment_from` of the shadow and of the fdata is field-wise.
    let other = Model::tangent_to_shadow(t.clone());
    s.increment_from(&other);
    assert_eq!(s.w.to_vec(), vec![3.0, -2.0]);
    assert_eq!(s.b.get(), 4.5);
    let (f, _) = Model::split_tangent(t.clone());
    let (g, _) = Model::split_tangent(t);
    f.increment_from(&g);
    assert_eq!(f.w.to_vec(), vec![2.0, -2.0]);
}

#[test]
fn references_use_the_shadow() {
    let m = model();
    let r = &m;
    let f: ModelShadow = <&Model as Primal>::zero_fdata(&r);
    assert_eq!(f.w.len(), 3);
    let t = ModelTangent { w: vec![1.0, 2.0, 3.0], b: 4.0, n: NoTangent };
    let (f, rd) = <&Model as Primal>::split_tangent(t.clone());
    assert_eq!(rd, NoRData);
    assert_eq!(f.b.get(), 4.0);
    assert_eq!(<&Model as Primal>::join_tangent(&f, NoRData), t);

    let mut m2 = model();
    let mut rm = &mut m2;
    let h: ModelHandle = <&mut Model as Primal>::to_handle(&rm);
    h.b.set(9.0);
    <&mut Model as Primal>::load_handle(&mut rm, &h);
    <&mut Model as Primal>::perturb(&mut rm, &t, 1.0);
    assert_eq!(m2.b, 13.0);
    assert_eq!(m2.w, vec![2.0, 4.0, 6.0]);
}

// ---------------------------------------------------------------------------------------------
// Tangent spaces.

#[test]
fn zero_and_random_tangents_have_the_shapes_of_the_primal() {
    let m = model();
    let z = m.zero_tangent();
    assert_eq!(z.w, vec![0.0; 3]);
    assert_eq!(z.b, 0.0);
    let mut rng = TestRng::seed_from_u64(1);
    let t = m.random_tangent(&mut rng);
    assert_eq!(t.w.len(), 3);
    assert!(t.w.iter().all(|x| x.is_finite() && *x != 0.0));
    assert!(t.b != 0.0);
    // Drawn field by field, in field order, from the one generator.
    let mut rng = TestRng::seed_from_u64(1);
    let w = m.w.random_tangent(&mut rng);
    let b = m.b.random_tangent(&mut rng);
    assert_eq!(t, ModelTangent { w, b, n: NoTangent });
}

#[test]
fn tangent_space_is_field_wise() {
    let mut a = ModelTangent { w: vec![1.0, 2.0], b: 3.0, n: NoTangent };
    let b = ModelTangent { w: vec![10.0, 20.0], b: 30.0, n: NoTangent };
    assert_eq!(a.inner(&b), 10.0 + 40.0 + 90.0);
    a.increment(&b);
    assert_eq!(a.w, vec![11.0, 22.0]);
    assert_eq!(a.b, 33.0);
    a.scale(2.0);
    assert_eq!(a.w, vec![22.0, 44.0]);
    assert_eq!(a.b, 66.0);

    let mut r = PointRData { x: 1.0, y: 2.0 };
    r.increment(&PointRData { x: 0.5, y: 0.25 });
    assert_eq!(r, PointRData { x: 1.5, y: 2.25 });
    assert_eq!(r.inner(&PointRData { x: 2.0, y: 4.0 }), 3.0 + 9.0);
    r.scale(-1.0);
    assert_eq!(r, PointRData { x: -1.5, y: -2.25 });
}

#[test]
fn clone_debug_partial_eq() {
    let t = ModelTangent { w: vec![1.0], b: 2.0, n: NoTangent };
    assert_eq!(t.clone(), t);
    assert_ne!(t, ModelTangent { w: vec![1.0], b: 2.5, n: NoTangent });
    assert_eq!(format!("{t:?}"), "ModelTangent { w: [1.0], b: 2.0, n: NoTangent }");
    assert_eq!(format!("{:?}", PairTangent(1.0, vec![2.0])), "PairTangent(1.0, [2.0])");
    assert_eq!(format!("{:?}", UnitTangent), "UnitTangent");
    let h = model().to_handle();
    assert_eq!(
        format!("{h:?}"),
        "ModelHandle { w: SharedVec([1.0, 2.0, 3.0]), b: SharedCell(0.5), n: SharedCell(7) }"
    );
    // Cloning fdata aliases (the shadow is shared), as for the runtime's own types.
    let f = model().zero_fdata();
    let g = f.clone();
    g.w.add(0, 1.0);
    assert_eq!(f.w.get(0), 1.0);
}

// ---------------------------------------------------------------------------------------------
// Finite-difference support.

#[test]
fn perturb_inner_difference_and_approx_eq() {
    let a = model();
    let mut b = a.clone();
    let t = ModelTangent { w: vec![1.0, 0.0, -1.0], b: 2.0, n: NoTangent };
    b.perturb(&t, 0.5);
    assert_eq!(b.w, vec![1.5, 2.0, 2.5]);
    assert_eq!(b.b, 1.5);
    assert_eq!(b.n, 7);
    // <t, b - a> = 1 * 0.5 + 0 + (-1) * (-0.5) + 2 * 1.0
    assert_eq!(Model::inner_difference(&t, &b, &a), 0.5 + 0.5 + 2.0);
    assert!(!a.approx_eq(&b, 1e-8, 1e-8));
    let mut c = a.clone();
    c.b += 1e-12;
    assert!(a.approx_eq(&c, 1e-8, 1e-8));
    // The non-differentiable field must be equal exactly.
    let mut d = a.clone();
    d.n += 1;
    assert!(!a.approx_eq(&d, 1.0, 1.0));
}

#[test]
fn handles_round_trip_and_see_mutation() {
    let mut m = model();
    let h = m.to_handle();
    m.w[0] = 100.0;
    m.b = -1.0;
    m.n = 0;
    m.load_handle(&h);
    assert_eq!(m, model());
    // A mutation through the handle (as a pullback restoring state would do) is loaded back.
    let alias = h.clone();
    alias.w.set(2, 30.0);
    alias.b.set(0.25);
    alias.n.set(8);
    m.load_handle(&h);
    assert_eq!(m, Model { w: vec![1.0, 2.0, 30.0], b: 0.25, n: 8 });
}

// ---------------------------------------------------------------------------------------------
// The other shapes.

#[test]
fn tuple_struct() {
    same(p::<<Pair as Primal>::Tangent>(), p::<PairTangent>());
    let x = Pair(1.0, vec![2.0, 3.0]);
    let t: PairTangent = x.zero_tangent();
    let (a, b): (f64, Vec<f64>) = (t.0, t.1);
    assert_eq!((a, b), (0.0, vec![0.0, 0.0]));
    let (f, r) = Pair::split_tangent(PairTangent(5.0, vec![6.0, 7.0]));
    let (f0, f1): (NoFData, SharedVec<f64>) = (f.0, f.1.clone());
    let (r0, r1): (f64, NoRData) = (r.0, r.1);
    assert_eq!((f0, f1.to_vec(), r0, r1), (NoFData, vec![6.0, 7.0], 5.0, NoRData));
    assert_eq!(Pair::join_tangent(&f, r), PairTangent(5.0, vec![6.0, 7.0]));
    let mut y = x.clone();
    y.perturb(&PairTangent(1.0, vec![1.0, 1.0]), 1.0);
    assert_eq!(y, Pair(2.0, vec![3.0, 4.0]));
    assert_eq!(Pair::inner_difference(&PairTangent(1.0, vec![2.0, 3.0]), &y, &x), 1.0 + 2.0 + 3.0);
    let h = x.to_handle();
    h.1.set(0, -2.0);
    y.load_handle(&h);
    assert_eq!(y, Pair(1.0, vec![-2.0, 3.0]));
}

#[test]
fn unit_and_empty_structs() {
    same(p::<<Unit as Primal>::Tangent>(), p::<UnitTangent>());
    let t: UnitTangent = Unit.zero_tangent();
    assert_eq!(t, UnitTangent);
    assert_eq!(t.inner(&UnitTangent), 0.0);
    assert_eq!(std::mem::size_of::<UnitFData>(), 0);
    assert!(Unit.approx_eq(&Unit, 0.0, 0.0));
    let (f, r) = Unit::split_tangent(UnitTangent);
    assert_eq!(Unit::join_tangent(&f, r), UnitTangent);

    let e = Empty {};
    let t: EmptyTangent = e.zero_tangent();
    assert_eq!(t, EmptyTangent {});
    assert_eq!(format!("{t:?}"), "EmptyTangent");
    assert_eq!(Empty::inner_difference(&t, &e, &e), 0.0);
}

#[test]
fn generic_struct() {
    same(p::<<Gen<f64> as Primal>::Tangent>(), p::<GenTangent<f64>>());
    same(p::<<Gen<f32> as Primal>::RData>(), p::<GenRData<f32>>());
    let g = Gen { x: 2.0_f64, w: vec![1.0, 2.0] };
    let t: GenTangent<f64> = g.zero_tangent();
    let (x, w): (f64, Vec<f64>) = (t.x, t.w);
    assert_eq!((x, w), (0.0, vec![0.0, 0.0]));
    let t = GenTangent { x: 1.0, w: vec![2.0, 3.0], _marker: PhantomData };
    let (f, r) = Gen::<f64>::split_tangent(t.clone());
    assert_eq!(r.x, 1.0);
    assert_eq!(f.w.to_vec(), vec![2.0, 3.0]);
    assert_eq!(Gen::<f64>::join_tangent(&f, r), t);
    let mut t2 = t.clone();
    t2.increment(&t);
    assert_eq!(t2.w, vec![4.0, 6.0]);
    // A generic struct of non-differentiable data.
    let gi = Gen { x: 1_i32, w: vec![2] };
    let ti: GenTangent<i32> = gi.zero_tangent();
    assert_eq!((ti.x, ti.w), (NoTangent, vec![NoTangent]));
    // Generic code sees the derived impl through the bounds.
    fn norm2<T: Primal + Clone>(g: &Gen<T>, t: &GenTangent<T>) -> f64
    where
        Vec<T>: Primal,
    {
        let _ = g;
        t.inner(t)
    }
    assert_eq!(norm2(&g, &t), 1.0 + 4.0 + 9.0);
}

#[test]
fn struct_with_a_borrowed_slice() {
    let data = vec![1.0, 2.0, 3.0];
    let v = View { x: &data, s: 2.0 };
    same(p::<<View<'_> as Primal>::Tangent>(), p::<ViewTangent<'_>>());
    let t: ViewTangent<'_> = v.zero_tangent();
    let (x, s): (Vec<f64>, f64) = (t.x.clone(), t.s);
    assert_eq!((x, s), (vec![0.0; 3], 0.0));
    // A slice behind `&` is address-identified: its gradient lives in a shadow.
    let (f, r) =
        View::split_tangent(ViewTangent { x: vec![1.0, 1.0, 1.0], s: 5.0, _marker: PhantomData });
    let fx: SharedVec<f64> = f.x.clone();
    assert_eq!(fx.to_vec(), vec![1.0; 3]);
    assert_eq!((r.x, r.s), (NoRData, 5.0));
    // The handle of a shared reference is the reference.
    let h = v.to_handle();
    let hx: &[f64] = h.x;
    assert!(std::ptr::eq(hx, data.as_slice()));
    let mut v2 = View { x: &[], s: 0.0 };
    v2.load_handle(&h);
    assert_eq!((v2.x, v2.s), (&data[..], 2.0));
    assert!(v.approx_eq(&v2, 0.0, 0.0));
}

#[test]
fn const_generic_struct() {
    same(p::<<Arr<3> as Primal>::Tangent>(), p::<ArrTangent<3>>());
    let a = Arr { x: [1.0, 2.0, 3.0] };
    let t: ArrTangent<3> = a.zero_tangent();
    let x: [f64; 3] = t.x;
    assert_eq!(x, [0.0; 3]);
    // An array by value is value-identified element-wise.
    let (f, r) = Arr::<3>::split_tangent(ArrTangent { x: [1.0, 2.0, 3.0] });
    let fx: [NoFData; 3] = f.x;
    let rx: [f64; 3] = r.x;
    assert_eq!((fx, rx), ([NoFData; 3], [1.0, 2.0, 3.0]));
    assert_eq!(std::mem::size_of::<ArrFData<3>>(), 0);
    let mut b = a.clone();
    b.perturb(&ArrTangent { x: [1.0; 3] }, 2.0);
    assert_eq!(b.x, [3.0, 4.0, 5.0]);
    assert_eq!(Arr::inner_difference(&ArrTangent { x: [1.0, 0.0, 1.0] }, &b, &a), 4.0);
}

#[test]
fn nested_struct() {
    same(p::<<Outer as Primal>::Tangent>(), p::<OuterTangent>());
    let o = Outer { inner: model(), p: Point { x: 1.0, y: 2.0 }, scale: 3.0 };
    let t: OuterTangent = o.zero_tangent();
    let inner: ModelTangent = t.inner;
    let pt: PointTangent = t.p;
    assert_eq!(inner.w, vec![0.0; 3]);
    assert_eq!(pt, PointTangent { x: 0.0, y: 0.0 });

    let t = OuterTangent {
        inner: ModelTangent { w: vec![1.0, 2.0, 3.0], b: 4.0, n: NoTangent },
        p: PointTangent { x: 5.0, y: 6.0 },
        scale: 7.0,
    };
    let (f, r) = Outer::split_tangent(t.clone());
    let fi: ModelFData = f.inner.clone();
    let ri: ModelRData = r.inner;
    let rp: PointRData = r.p;
    assert_eq!(fi.w.to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!((ri.b, rp.x, rp.y, r.scale), (4.0, 5.0, 6.0, 7.0));
    assert_eq!(Outer::join_tangent(&f, r), t);
    assert_eq!(t.inner(&t), 1.0 + 4.0 + 9.0 + 16.0 + 25.0 + 36.0 + 49.0);

    let s: OuterShadow = Outer::tangent_to_shadow(t.clone());
    let sp: PointShadow = s.p.clone();
    assert_eq!(sp.x.get(), 5.0);
    assert_eq!(Outer::shadow_to_tangent(&s), t);

    let mut o2 = o.clone();
    let h = o.to_handle();
    h.inner.w.set(0, -1.0);
    h.p.x.set(-2.0);
    o2.load_handle(&h);
    assert_eq!(o2.inner.w[0], -1.0);
    assert_eq!(o2.p.x, -2.0);
}

#[test]
fn fieldless_enum_is_non_differentiable() {
    same(p::<<Mode as Primal>::Tangent>(), p::<NoTangent>());
    same(p::<<Mode as Primal>::TangentRef>(), p::<NoTangent>());
    same(p::<<Mode as Primal>::FData>(), p::<NoFData>());
    same(p::<<Mode as Primal>::RData>(), p::<NoRData>());
    same(p::<<Mode as Primal>::Shadow>(), p::<NoFData>());
    same(p::<<Mode as Primal>::Handle>(), p::<SharedRef<Mode>>());
    let mut m = Mode::Fast;
    assert!(m.approx_eq(&Mode::Fast, 0.0, 0.0));
    assert!(!m.approx_eq(&Mode::Slow, 1.0, 1.0));
    let h = m.to_handle();
    h.with_mut(|v| *v = Mode::Slow);
    m.load_handle(&h);
    assert_eq!(m, Mode::Slow);
    m.perturb(&NoTangent, 1.0);
    assert_eq!(m, Mode::Slow);
    assert_eq!(Mode::inner_difference(&NoTangent, &Mode::Fast, &Mode::Slow), 0.0);
    let mut rng = TestRng::seed_from_u64(3);
    assert_eq!(m.random_tangent(&mut rng), NoTangent);

    // As a field.
    #[derive(Tangent, Clone, Debug, PartialEq)]
    struct WithMode {
        mode: Mode,
        x: f64,
    }
    let w = WithMode { mode: Mode::Fast, x: 1.0 };
    let t = w.zero_tangent();
    assert_eq!((t.mode, t.x), (NoTangent, 0.0));
    assert!(!w.approx_eq(&WithMode { mode: Mode::Slow, x: 1.0 }, 1.0, 1.0));
}

#[test]
fn awkward_names_and_self() {
    let a: Awkward = Awkward {
        r#type: 1.0,
        other: Some(2.0),
        rng: [3.0, 4.0],
        _marker: 5,
        itself: Tag(PhantomData),
    };
    let t: AwkwardTangent = a.zero_tangent();
    let (ty, other, rng, marker, itself): (f64, Option<f64>, [f64; 2], NoTangent, NoTangent) =
        (t.r#type, t.other, t.rng, t._marker, t.itself);
    assert_eq!(ty, 0.0);
    assert_eq!(other, Some(0.0));
    assert_eq!(rng, [0.0; 2]);
    assert_eq!((marker, itself), (NoTangent, NoTangent));
    // The phantom field of the generated structs does not collide with the user's `_marker`.
    let t = a.zero_tangent();
    let _: PhantomData<_> = t._marker_;
    let mut rng = TestRng::seed_from_u64(5);
    let r = a.random_tangent(&mut rng);
    let mut b = a.clone();
    b.perturb(&r, 1.0);
    assert!(Awkward::inner_difference(&r, &b, &a) > 0.0);
    assert!(format!("{r:?}").starts_with("AwkwardTangent { type: "));
}

/// Items in a function body, a user type called `f64`, and locals named like the generated
/// code's: none of it leaks into the expansion.
#[test]
fn hygiene() {
    #[allow(non_camel_case_types, dead_code)]
    struct f64;
    #[allow(non_upper_case_globals, dead_code)]
    const other: u8 = 0;
    #[allow(non_upper_case_globals, dead_code)]
    const tangent: u8 = 0;

    #[derive(Tangent, Clone, Debug)]
    struct Local {
        x: core::primitive::f64,
    }
    let l = Local { x: 2.0 };
    assert!(l.approx_eq(&Local { x: 2.0 }, 0.0, 0.0));
    let t = LocalTangent { x: 1.0 };
    assert_eq!(Local::inner_difference(&t, &l, &Local { x: 1.0 }), 1.0);
    assert_eq!(t.inner(&t), 1.0);
}

#[test]
fn nested_generic_struct() {
    same(p::<<Wrap<f64> as Primal>::Tangent>(), p::<WrapTangent<f64>>());
    let w = Wrap { g: Gen { x: 1.0_f64, w: vec![2.0] }, s: 3.0 };
    let t: WrapTangent<f64> = w.zero_tangent();
    let g: GenTangent<f64> = t.g;
    assert_eq!((g.x, g.w, t.s), (0.0, vec![0.0], 0.0));
    let mut rng = TestRng::seed_from_u64(9);
    let t = w.random_tangent(&mut rng);
    let (f, r) = Wrap::<f64>::split_tangent(t.clone());
    assert_eq!(f.g.w.to_vec(), t.g.w);
    assert_eq!((r.g.x, r.s), (t.g.x, t.s));
    assert_eq!(Wrap::<f64>::join_tangent(&f, r), t);
}

#[test]
fn struct_from_a_macro() {
    let m = FromMacro { x: 1.0, v: vec![2.0, 3.0] };
    let t: FromMacroTangent = m.zero_tangent();
    let (x, v): (f64, Vec<f64>) = (t.x, t.v);
    assert_eq!((x, v), (0.0, vec![0.0, 0.0]));
    let (f, r) = FromMacro::split_tangent(FromMacroTangent { x: 1.0, v: vec![2.0, 3.0] });
    assert_eq!((r.x, f.v.to_vec()), (1.0, vec![2.0, 3.0]));
}
