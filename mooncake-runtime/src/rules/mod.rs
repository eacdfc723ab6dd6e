//! The primitive rules: a forward-mode rule (`NAME_frule`) and a reverse-mode rule
//! (`NAME_rrule`) for each primitive operation, written once and side by side.
//!
//! * [`scalar`]: arithmetic, `std` float methods, comparisons and casts on `f32` and `f64`.
//! * [`buffer`]: reads, writes and growth of slices, `Vec`s and arrays.
//! * [`stop_gradient`](mod@stop_gradient): the identity with derivative zero.
//! * [`boxes`]: a `Box<T>` opened and built.
//! * [`defaults`](mod@defaults): `T::default()`.

pub mod boxes;
pub mod buffer;
pub mod defaults;
pub mod scalar;
pub mod stop_gradient;
