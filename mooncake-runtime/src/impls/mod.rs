//! [`crate::tangent::Primal`] and [`crate::tangent::TangentSpace`] for the types of the
//! standard library. One file per family of types.

mod buffers;
mod compound;
mod nondiff;
mod references;
mod scalars;
