//! `#[derive(Tangent)]`: the tangent, fdata, rdata, shadow and handle types of a user struct,
//! and its `Primal` impl (DESIGN.md §3; Mooncake's "friendly tangents").
//!
//! The stages, with one-way dependencies:
//!
//! 1. [`model`]: the derive input, read with darling, as a [`model::Container`];
//! 2. [`validate`]: what is refused (enum variants with named fields, generic enums with data,
//!    unions, `#[repr(packed)]`), with spanned
//!    errors that say what to do instead;
//! 3. [`codegen`]: the generated items.
//!
//! Every stage reports into one [`ctxt::Ctxt`], so all problems are shown together. On error only
//! the `compile_error!`s are emitted (a derive never re-emits the item, so it is untouched).
//!
//! For `struct S { w: Vec<f64>, b: f64 }` the derive generates
//!
//! ```text
//! pub struct STangent { pub w: <Vec<f64> as Primal>::Tangent, pub b: <f64 as Primal>::Tangent }
//! pub struct SFData   { pub w: <Vec<f64> as Primal>::FData,   pub b: <f64 as Primal>::FData }
//! pub struct SRData   { .. ::RData }   pub struct SShadow { .. ::Shadow }
//! pub struct SHandle  { .. ::Handle }
//! impl Primal for S { type Tangent = STangent; type FData = SFData; .. }  // field-wise
//! ```
//!
//! with `Clone`, `Debug`, `PartialEq` and `TangentSpace` / `FData` impls on the new structs. A
//! fieldless enum is non-differentiable (`NoTangent`); an enum with data in tuple variants gets
//! sibling enums instead (`codegen/data_enums.rs`).

mod codegen;
mod ctxt;
mod model;
#[cfg(test)]
mod tests;
mod validate;

use proc_macro2::TokenStream;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let cx = ctxt::Ctxt::new();
    let container = model::parse(&cx, input);
    let shape = container.as_ref().map(|container| validate::validate(&cx, container));
    if let Err(errors) = cx.check() {
        return errors;
    }
    match (container, shape) {
        (Some(container), Some(shape)) => codegen::expand(&container, &shape),
        // `parse` reports whenever it gives nothing, so `check` returned above.
        _ => TokenStream::new(),
    }
}
