//! The keys of method-call dispatch, shared by both modes: a method's name as a number
//! ([`method_key`]), and the key types that keep the runtime's impls for floats, integers and
//! buffers apart from each other and from user methods.

use std::marker::PhantomData;

/// The key of a method name in `MethodFrule` and `MethodRrule`: 64-bit FNV-1a of the name. The macro computes
/// the same function at expansion time.
pub const fn method_key(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

/// Key type of the runtime's method rules on floats of type `F`.
pub struct FloatKey<F>(PhantomData<F>);
/// Key type of the runtime's method rules on integers of type `I`.
pub struct IntKey<I>(PhantomData<I>);
/// Key type of the runtime's method rules on buffers of element type `E`.
pub struct BufferKey<E>(PhantomData<E>);

/// The key of a user type `K`'s rules reached by type where the function's text does not show
/// the value to be one: its method through the numbers' method path (`rev::MethodRrule`), and
/// forward mode's arithmetic on values read from fields (`fwd::dialect::one::FieldAdd` and its
/// kin). Apart from [`FloatKey`] and [`IntKey`], so that the impls never overlap.
pub struct UserKey<K>(PhantomData<K>);

/// The integer methods with no derivative that each mode gives a rule (beside `min`, `max`,
/// `pow`, `abs`), by family, for every integer type (the second of each pair is the type
/// `abs_diff` returns): `$rules!(@binary T, Out: names..)`, `$rules!(@unary T, Out: names..)`,
/// `$rules!(@checked T: names..)` (an `Option`) and `$rules!(@clamp T)`, where `$rules` is the
/// mode's macro writing one family's impls. One list, so that both modes have the same methods.
macro_rules! integer_method_families {
    ($rules:ident) => {
        $crate::keys::integer_method_families!(@types $rules: i8 => u8, i16 => u16, i32 => u32, i64 => u64,
            i128 => u128, isize => usize, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
            u128 => u128, usize => usize);
    };
    (@types $rules:ident: $($t:ty => $u:ty),*) => {$(
        $rules!(@binary $t, $t: saturating_add, saturating_sub, saturating_mul,
            wrapping_add, wrapping_sub, wrapping_mul, rem_euclid, div_euclid);
        $rules!(@binary $t, $u: abs_diff);
        $rules!(@unary $t, u32: count_ones, count_zeros, leading_zeros, trailing_zeros);
        $rules!(@checked $t: checked_add, checked_sub, checked_mul, checked_div, checked_rem);
        $rules!(@clamp $t);
    )*};
}

pub(crate) use integer_method_families;
