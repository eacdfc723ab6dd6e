//! Enums as values inside derived rules: `Option`, `Result` and `#[derive(Tangent)]` enums
//! with data, built (`Some(v)`, `Ok(v)`, `Act::Leaky(a)`), taken apart by patterns (`match`,
//! `if let`, `let .. else`, `while let`), by `?` and by the methods that test or unwrap them.
//!
//! Derived code reaches a variant through [`Variant`], keyed by the variant's name
//! ([`crate::keys::method_key`]), so that the macro, which sees no types, names the variant and
//! the trait system finds the enum: `Some(v)` builds through `Variant<{ key("Some") }>` of
//! `Option<_>`, and `Some(v) => ..` takes apart through the same impl of whatever type the
//! scrutinee has. A variant's fields travel as a tuple (`(v,)` for `Some`), whose tangent,
//! fdata and rdata are the tuple's.
//!
//! `?`, `unwrap` and their kin go through [`TryValue`]: a value that is either an output
//! (`Some(v)`, `Ok(v)`) or a residual (`None`, `Err(e)`) that `?` returns, converted by
//! [`FromResidual`] into the function's own result type as `?` does (`Err(From::from(e))`).
//!
//! An error carries no derivative: the tangent of a `Result<T, E>` is that of its `Ok` value
//! (`Option<T::Tangent>`), so `E` may be any `Clone + Debug` type.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//!
//! #[differentiable]
//! fn safe_log(x: f64) -> Result<f64, String> {
//!     if x <= 0.0 {
//!         return Err(format!("log of {x}"));
//!     }
//!     Ok(x.ln())
//! }
//!
//! #[differentiable]
//! fn twice_log(x: f64) -> Result<f64, String> {
//!     let y = safe_log(x)?;
//!     Ok(2.0 * y)
//! }
//!
//! // The gradient of the `Ok` value, or the error unchanged:
//! let (y, (dx,)) = value_and_gradient!(twice_log(2.0)).unwrap();
//! assert!((y - 2.0 * 2.0_f64.ln()).abs() < 1e-12 && (dx - 1.0).abs() < 1e-12);
//! assert_eq!(value_and_gradient!(twice_log(-1.0)).unwrap_err(), "log of -1");
//! ```

// A reverse rule's type is its output and its pullback's signature, written out.
#![allow(clippy::type_complexity)]

use crate::dual::{CoDual, Dual};
use crate::keys::method_key;
use crate::tangent::{Primal, ZeroRData};

/// One variant of an enum, named by `KEY`, the [`method_key`] of the variant's name: how
/// derived code builds the variant from its fields and takes the fields back out, with their
/// tangents, fdata and rdata. Implemented here for `Option` (`Some`) and `Result` (`Ok`, `Err`)
/// and by `#[derive(Tangent)]` for each tuple variant of an enum.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no variant with data of this name that #[differentiable] code can build or take apart",
    label = "built or matched here",
    note = "put `#[derive(Tangent)]` on the enum (tuple variants such as `Leaky(f64)` are supported), or match on `Option` / `Result`"
)]
pub trait Variant<const KEY: u64>: Primal + Sized {
    /// The variant's fields, as a tuple.
    type Fields: Primal<RData: ZeroRData>;
    /// The variant holding `fields`.
    fn from_fields(fields: Self::Fields) -> Self;
    /// The fields of `self`, which is this variant (derived code tests it first).
    ///
    /// # Panics
    /// If `self` is another variant.
    fn into_fields(self) -> Self::Fields;
    /// The tangent of the variant holding fields with tangent `t`.
    fn tangent_from_fields(t: <Self::Fields as Primal>::Tangent) -> Self::Tangent;
    /// The fields' part of the tangent `t` of this variant (zero if `t` has none).
    fn tangent_into_fields(
        t: Self::Tangent,
        fields: &Self::Fields,
    ) -> <Self::Fields as Primal>::Tangent;
    /// The fdata of the variant holding fields with fdata `f`.
    fn fdata_from_fields(f: <Self::Fields as Primal>::FData) -> Self::FData;
    /// The fields' part of the fdata `f` of this variant (fresh zero fdata if `f` has none).
    fn fdata_into_fields(f: Self::FData, fields: &Self::Fields) -> <Self::Fields as Primal>::FData;
    /// The rdata of the variant holding fields with rdata `r`.
    fn rdata_from_fields(r: <Self::Fields as Primal>::RData) -> Self::RData;
    /// The fields' part of the rdata `r` (zero if `r` is of another variant or zero).
    fn rdata_into_fields(r: Self::RData) -> <Self::Fields as Primal>::RData;
}

/// The key of `Some`.
pub const SOME: u64 = method_key("Some");
/// The key of `Ok`.
pub const OK: u64 = method_key("Ok");
/// The key of `Err`.
pub const ERR: u64 = method_key("Err");

/// `Variant` of a variant holding one value `T` whose tangent, fdata and rdata are the enum's
/// wrapped in an `Option` (`Some` of `Option<T>`, `Ok` of `Result<T, E>`).
macro_rules! single_value_variant {
    ($key:ident for $ty:ty, [$($params:tt)*], $variant:path, $other:pat, $what:literal) => {
        impl<$($params)*> Variant<$key> for $ty {
            type Fields = (T,);
            #[inline(always)]
            fn from_fields(fields: (T,)) -> Self {
                $variant(fields.0)
            }
            #[inline(always)]
            fn into_fields(self) -> (T,) {
                match self {
                    $variant(v) => (v,),
                    $other => panic!($what),
                }
            }
            #[inline(always)]
            fn tangent_from_fields(t: (T::Tangent,)) -> Self::Tangent {
                Some(t.0)
            }
            #[inline(always)]
            fn tangent_into_fields(t: Self::Tangent, fields: &(T,)) -> (T::Tangent,) {
                (t.unwrap_or_else(|| fields.0.zero_tangent()),)
            }
            #[inline(always)]
            fn fdata_from_fields(f: (T::FData,)) -> Self::FData {
                Some(f.0)
            }
            #[inline(always)]
            fn fdata_into_fields(f: Self::FData, fields: &(T,)) -> (T::FData,) {
                (f.unwrap_or_else(|| fields.0.zero_fdata()),)
            }
            #[inline(always)]
            fn rdata_from_fields(r: (T::RData,)) -> Self::RData {
                Some(r.0)
            }
            #[inline(always)]
            fn rdata_into_fields(r: Self::RData) -> (T::RData,) {
                (r.unwrap_or_else(T::RData::zero),)
            }
        }
    };
}

single_value_variant!(SOME for Option<T>, [T: Primal<RData: ZeroRData> + Clone], Some, None,
    "mooncake: `Some(..)` taken apart from `None`");
single_value_variant!(OK for Result<T, E>,
    [T: Primal<RData: ZeroRData> + Clone, E: Clone + std::fmt::Debug + 'static], Ok, Err(_),
    "mooncake: `Ok(..)` taken apart from `Err(..)`");

/// `Err(e)`: the error has no derivative (see the module's documentation), so its tangent,
/// fdata and rdata are the error type's own zeros, and the `Result`'s are empty.
impl<T, E> Variant<ERR> for Result<T, E>
where
    T: Primal + Clone,
    E: Primal<RData: ZeroRData> + Clone + std::fmt::Debug + 'static,
{
    type Fields = (E,);
    #[inline(always)]
    fn from_fields(fields: (E,)) -> Self {
        Err(fields.0)
    }
    #[inline(always)]
    fn into_fields(self) -> (E,) {
        match self {
            Err(e) => (e,),
            Ok(_) => panic!("mooncake: `Err(..)` taken apart from `Ok(..)`"),
        }
    }
    #[inline(always)]
    fn tangent_from_fields(_: (E::Tangent,)) -> Self::Tangent {
        None
    }
    #[inline(always)]
    fn tangent_into_fields(_: Self::Tangent, fields: &(E,)) -> (E::Tangent,) {
        (fields.0.zero_tangent(),)
    }
    #[inline(always)]
    fn fdata_from_fields(_: (E::FData,)) -> Self::FData {
        None
    }
    #[inline(always)]
    fn fdata_into_fields(_: Self::FData, fields: &(E,)) -> (E::FData,) {
        (fields.0.zero_fdata(),)
    }
    #[inline(always)]
    fn rdata_from_fields(_: (E::RData,)) -> Self::RData {
        None
    }
    #[inline(always)]
    fn rdata_into_fields(_: Self::RData) -> (E::RData,) {
        (E::RData::zero(),)
    }
}

/// `Variant(fields..)` in forward mode: the variant, its tangent built from the fields'.
#[inline(always)]
pub fn variant_new_frule<E: Variant<K>, const K: u64>(
    fields: Dual<E::Fields, <E::Fields as Primal>::Tangent>,
) -> Dual<E, E::Tangent> {
    Dual::new(E::from_fields(fields.primal), E::tangent_from_fields(fields.tangent))
}

/// `Variant(fields..)` in reverse mode: the pullback takes the fields' rdata back out of the
/// variant's.
#[inline(always)]
pub fn variant_new_rrule<E: Variant<K>, const K: u64>(
    fields: CoDual<E::Fields, <E::Fields as Primal>::FData>,
) -> (CoDual<E, E::FData>, impl FnOnce(E::RData) -> (<E::Fields as Primal>::RData,)) {
    let y = CoDual::new(E::from_fields(fields.primal), E::fdata_from_fields(fields.fdata));
    (y, |r: E::RData| (E::rdata_into_fields(r),))
}

/// The fields of a variant a pattern binds (`Some(v) => ..`), in forward mode.
#[inline(always)]
pub fn variant_fields_frule<E: Variant<K>, const K: u64>(
    e: Dual<E, E::Tangent>,
) -> Dual<E::Fields, <E::Fields as Primal>::Tangent> {
    let fields = e.primal.into_fields();
    let t = E::tangent_into_fields(e.tangent, &fields);
    Dual::new(fields, t)
}

/// The fields of a variant a pattern binds, in reverse mode: the pullback puts their rdata
/// into the variant's.
///
/// The pullback is a function pointer: it captures nothing, and its type names `E` only through
/// the rdata types, so that a value that borrows (`Option<&[f64]>`) does not give the rule's
/// pullback its lifetime.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn variant_fields_rrule<E: Variant<K>, const K: u64>(
    e: CoDual<E, E::FData>,
) -> (
    CoDual<E::Fields, <E::Fields as Primal>::FData>,
    fn(<E::Fields as Primal>::RData) -> (E::RData,),
) {
    let fields = e.primal.into_fields();
    let f = E::fdata_into_fields(e.fdata, &fields);
    (CoDual::new(fields, f), |r| (E::rdata_from_fields(r),))
}

/// A value `?` takes apart: an output (`Some(v)`, `Ok(v)`) or a residual (`None`, `Err(e)`).
#[diagnostic::on_unimplemented(
    message = "`?`, `unwrap`, `map` and their kin in #[differentiable] code take apart `Option` and `Result`, not `{Self}`",
    label = "this is not an `Option` or a `Result`",
    note = "a value whose type the function's text does not show is taken for an `Option` or a `Result` by these methods; for a nalgebra or ndarray value (`z.map(|x| x * x)` of a call's result), declare the variable's type (`let z: DVector<f64> = g(v);`)"
)]
pub trait TryValue: Primal + Sized {
    /// What `?` gives when the value is not a residual.
    type Output: Primal<RData: ZeroRData>;
    /// Whether the value is a residual (`None`, `Err(..)`).
    fn is_residual(&self) -> bool;
    /// The output.
    ///
    /// # Panics
    /// If the value is a residual, with `message` (what `unwrap` or `expect` says).
    fn output(self, message: &str) -> Self::Output;
    /// The output's part of the tangent (zero if there is none).
    fn output_tangent(t: Self::Tangent, out: &Self::Output) -> <Self::Output as Primal>::Tangent;
    /// The output's part of the fdata (fresh zero fdata if there is none).
    fn output_fdata(f: Self::FData, out: &Self::Output) -> <Self::Output as Primal>::FData;
    /// The rdata of the value, from its output's.
    fn rdata_of_output(r: <Self::Output as Primal>::RData) -> Self::RData;
}

impl<T: Primal<RData: ZeroRData> + Clone> TryValue for Option<T> {
    type Output = T;
    #[inline(always)]
    fn is_residual(&self) -> bool {
        self.is_none()
    }
    #[inline(always)]
    fn output(self, message: &str) -> T {
        match self {
            Some(v) => v,
            None => panic!("{message}"),
        }
    }
    #[inline(always)]
    fn output_tangent(t: Self::Tangent, out: &T) -> T::Tangent {
        t.unwrap_or_else(|| out.zero_tangent())
    }
    #[inline(always)]
    fn output_fdata(f: Self::FData, out: &T) -> T::FData {
        f.unwrap_or_else(|| out.zero_fdata())
    }
    #[inline(always)]
    fn rdata_of_output(r: T::RData) -> Self::RData {
        Some(r)
    }
}

impl<T, E> TryValue for Result<T, E>
where
    T: Primal<RData: ZeroRData> + Clone,
    E: Clone + std::fmt::Debug + 'static,
{
    type Output = T;
    #[inline(always)]
    fn is_residual(&self) -> bool {
        self.is_err()
    }
    #[inline(always)]
    fn output(self, message: &str) -> T {
        match self {
            Ok(v) => v,
            Err(e) => panic!("{message}: {e:?}"),
        }
    }
    #[inline(always)]
    fn output_tangent(t: Self::Tangent, out: &T) -> T::Tangent {
        t.unwrap_or_else(|| out.zero_tangent())
    }
    #[inline(always)]
    fn output_fdata(f: Self::FData, out: &T) -> T::FData {
        f.unwrap_or_else(|| out.zero_fdata())
    }
    #[inline(always)]
    fn rdata_of_output(r: T::RData) -> Self::RData {
        Some(r)
    }
}

/// The result type of a function whose body applies `?` to a `T`: what `?` returns for a
/// residual, as std's `FromResidual` (`None`; `Err(From::from(e))`).
#[diagnostic::on_unimplemented(
    message = "`?` cannot turn a `{T}` into the function's result `{Self}`",
    label = "the function's result",
    note = "as in Rust, `?` on an `Option` needs a function returning an `Option`, and on a `Result` one returning a `Result` whose error type converts with `From`"
)]
pub trait FromResidual<T>: Primal {
    /// The result that `?` returns for the residual `t`.
    fn from_residual(t: T) -> Self;
}

impl<T, U: Primal + Clone> FromResidual<Option<T>> for Option<U> {
    #[inline(always)]
    fn from_residual(_: Option<T>) -> Self {
        None
    }
}

impl<T, E, U, F> FromResidual<Result<T, E>> for Result<U, F>
where
    U: Primal + Clone,
    F: From<E> + Clone + std::fmt::Debug + 'static,
{
    #[inline(always)]
    fn from_residual(t: Result<T, E>) -> Self {
        match t {
            Err(e) => Err(F::from(e)),
            Ok(_) => panic!("mooncake: `?` returned on an `Ok` value"),
        }
    }
}

/// Whether `t` is a residual: the test of `?`, `unwrap_or` and `is_none` / `is_err`, on the
/// primal (no derivative).
#[inline(always)]
pub fn is_residual<T: TryValue>(t: &T) -> bool {
    t.is_residual()
}

/// The output of `t` (`?` after the test, `unwrap`, `expect`), in forward mode.
#[inline(always)]
pub fn try_output_frule<T: TryValue, S: AsRef<str>, ST>(
    t: Dual<T, T::Tangent>,
    message: Dual<S, ST>,
) -> Dual<T::Output, <T::Output as Primal>::Tangent> {
    let out = t.primal.output(message.primal.as_ref());
    let d = T::output_tangent(t.tangent, &out);
    Dual::new(out, d)
}

/// The output of `t`, in reverse mode.
#[inline(always)]
pub fn try_output_rrule<T: TryValue, S: Primal<RData: ZeroRData> + AsRef<str>, SF>(
    t: CoDual<T, T::FData>,
    message: CoDual<S, SF>,
) -> (
    CoDual<T::Output, <T::Output as Primal>::FData>,
    impl FnOnce(<T::Output as Primal>::RData) -> (T::RData, S::RData),
) {
    let out = t.primal.output(message.primal.as_ref());
    let f = T::output_fdata(t.fdata, &out);
    (CoDual::new(out, f), |r| (T::rdata_of_output(r), S::RData::zero()))
}

/// What `?` returns for the residual `t`, as the function's result type `R`, in forward mode
/// (a constant: an error has no derivative).
#[inline(always)]
pub fn try_residual_frule<R: FromResidual<T>, T: Primal>(
    t: Dual<T, T::Tangent>,
) -> Dual<R, R::Tangent> {
    crate::forward::constant(R::from_residual(t.primal))
}

/// What `?` returns for the residual `t`, as the function's result type `R`, in reverse mode.
#[inline(always)]
pub fn try_residual_rrule<R: FromResidual<T>, T: Primal<RData: ZeroRData>>(
    t: CoDual<T, T::FData>,
) -> (CoDual<R, R::FData>, impl FnOnce(R::RData) -> (T::RData,)) {
    (crate::reverse::constant(R::from_residual(t.primal)), |_| (T::RData::zero(),))
}

/// The kind of an `Option` or `Result` `S` without its value (zero-sized, no derivative): what
/// the end of `map` needs once the value has gone into the closure.
pub struct Kind<S>(std::marker::PhantomData<fn() -> S>);

impl<S> Clone for Kind<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for Kind<S> {}
impl<S> std::fmt::Debug for Kind<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kind")
    }
}

/// `Option::map` / `Result::map` on a value of type `Self`: its output mapped to a `Y` and put
/// back together (`Some(y)`, `Ok(y)`), or its residual kept (`None`, the same `Err(e)`).
#[diagnostic::on_unimplemented(
    message = "`map` here is taken for `Option::map` or `Result::map`, but this value is a `{Self}`",
    label = "a value whose type the function's text does not show",
    note = "for a nalgebra or ndarray value (the result of a call, say), declare the variable's type (`let z: DVector<f64> = g(v);`), so that `map` is the matrix's own"
)]
pub trait TryMap<Y: Primal>: TryValue {
    /// `Option<Y>` or `Result<Y, E>`.
    type Mapped: Primal<Tangent = Option<Y::Tangent>, FData = Option<Y::FData>, RData = Option<Y::RData>>;
    /// The mapped value of an output mapped to `y`.
    fn mapped(y: Y) -> Self::Mapped;
    /// The mapped value of a residual.
    fn residual(from: Self) -> Self::Mapped;
}

impl<T: Primal<RData: ZeroRData> + Clone, Y: Primal + Clone> TryMap<Y> for Option<T> {
    type Mapped = Option<Y>;
    #[inline(always)]
    fn mapped(y: Y) -> Option<Y> {
        Some(y)
    }
    #[inline(always)]
    fn residual(_: Self) -> Option<Y> {
        None
    }
}

impl<T, E, Y> TryMap<Y> for Result<T, E>
where
    T: Primal<RData: ZeroRData> + Clone,
    E: Clone + std::fmt::Debug + 'static,
    Y: Primal + Clone,
{
    type Mapped = Result<Y, E>;
    #[inline(always)]
    fn mapped(y: Y) -> Result<Y, E> {
        Ok(y)
    }
    #[inline(always)]
    fn residual(from: Self) -> Result<Y, E> {
        match from {
            Err(e) => Err(e),
            Ok(_) => panic!("mooncake: the residual of an `Ok` value"),
        }
    }
}

/// The output of `s` and its kind (`map` before the closure), in forward mode.
#[inline(always)]
pub fn try_split_frule<S: TryValue>(
    s: Dual<S, S::Tangent>,
) -> Dual<(S::Output, Kind<S>), (<S::Output as Primal>::Tangent, crate::NoTangent)>
where
    Kind<S>: Primal<Tangent = crate::NoTangent>,
{
    let out = s.primal.output("");
    let t = S::output_tangent(s.tangent, &out);
    Dual::new((out, Kind(std::marker::PhantomData)), (t, crate::NoTangent))
}

/// The output of `s` and its kind, in reverse mode.
#[inline(always)]
pub fn try_split_rrule<S: TryValue>(
    s: CoDual<S, S::FData>,
) -> (
    CoDual<(S::Output, Kind<S>), (<S::Output as Primal>::FData, crate::NoFData)>,
    impl FnOnce((<S::Output as Primal>::RData, crate::NoRData)) -> (S::RData,),
)
where
    Kind<S>: Primal<FData = crate::NoFData, RData = crate::NoRData>,
{
    let out = s.primal.output("");
    let f = S::output_fdata(s.fdata, &out);
    (CoDual::new((out, Kind(std::marker::PhantomData)), (f, crate::NoFData)), |r: (_, _)| {
        (S::rdata_of_output(r.0),)
    })
}

/// `map`'s value for an output mapped to `y`, in forward mode.
#[inline(always)]
pub fn map_wrap_frule<S: TryMap<Y>, Y: Primal, K>(
    y: Dual<Y, Y::Tangent>,
    _: Dual<Kind<S>, K>,
) -> Dual<S::Mapped, Option<Y::Tangent>> {
    Dual::new(S::mapped(y.primal), Some(y.tangent))
}

/// `map`'s value for an output mapped to `y`, in reverse mode.
#[inline(always)]
pub fn map_wrap_rrule<S: TryMap<Y>, Y: Primal<RData: ZeroRData>, K>(
    y: CoDual<Y, Y::FData>,
    _: CoDual<Kind<S>, K>,
) -> (
    CoDual<S::Mapped, Option<Y::FData>>,
    impl FnOnce(Option<Y::RData>) -> (Y::RData, crate::NoRData),
) {
    (CoDual::new(S::mapped(y.primal), Some(y.fdata)), |r: Option<Y::RData>| {
        (r.unwrap_or_else(Y::RData::zero), crate::NoRData)
    })
}

/// `map`'s value for a residual, in forward mode.
#[inline(always)]
pub fn map_residual_frule<S: TryMap<Y>, Y: Primal>(
    s: Dual<S, S::Tangent>,
) -> Dual<S::Mapped, Option<Y::Tangent>> {
    Dual::new(S::residual(s.primal), None)
}

/// `map`'s value for a residual, in reverse mode.
#[inline(always)]
pub fn map_residual_rrule<S: TryMap<Y>, Y: Primal>(
    s: CoDual<S, S::FData>,
) -> (CoDual<S::Mapped, Option<Y::FData>>, impl FnOnce(Option<Y::RData>) -> (S::RData,))
where
    S::RData: ZeroRData,
{
    (CoDual::new(S::residual(s.primal), None), |_| (S::RData::zero(),))
}
