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
