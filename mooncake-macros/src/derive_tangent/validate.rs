//! Validation: what `#[derive(Tangent)]` refuses, each refusal spanned on the narrowest offending
//! tokens and saying what to do instead. Everything is reported, not just the first problem.

use super::ctxt::Ctxt;
use super::model::{Body, Container};

/// What the item is, once it passed.
pub(crate) enum Shape {
    /// A struct (named, tuple or unit).
    Struct,
    /// An enum whose variants all have no fields: non-differentiable.
    FieldlessEnum,
    /// An enum with tuple variants holding data: sibling enums of their fields' tangents.
    DataEnum,
}

pub(crate) fn validate(cx: &Ctxt, container: &Container) -> Shape {
    match &container.body {
        Body::Struct { .. } => {
            if let Some(span) = container.repr_packed {
                cx.error_at(
                    span,
                    "`#[derive(Tangent)]` does not support `#[repr(packed)]` structs: the derived \
                     code borrows every field, which a packed struct does not allow — remove \
                     `packed`, or implement `Primal` for the struct by hand",
                );
            }
            Shape::Struct
        }
        Body::Enum { variants } => {
            if variants.iter().all(|v| v.with_fields.is_none()) {
                return Shape::FieldlessEnum;
            }
            for v in variants.iter().filter(|v| v.named) {
                if let Some(with_fields) = &v.with_fields {
                    cx.error_spanned_by(
                        with_fields,
                        "`#[derive(Tangent)]` supports enum variants with unnamed fields \
                         (`Leaky(f64)`); write this variant's fields unnamed, or hold them in a \
                         struct (`Scaled(Params)`)",
                    );
                }
            }
            if let Some(param) = container.generics.params.first() {
                cx.error_spanned_by(
                    param,
                    "`#[derive(Tangent)]` supports generic structs and fieldless enums, but not yet \
                     generic enums with data: name the types of the fields, or implement \
                     `Primal` for the enum by hand",
                );
            }
            Shape::DataEnum
        }
    }
}
