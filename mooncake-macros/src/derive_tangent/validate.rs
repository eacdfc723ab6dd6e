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
            if let Some(variant) = variants.iter().find_map(|v| v.with_fields.as_ref()) {
                cx.error_spanned_by(
                    variant,
                    "`#[derive(Tangent)]` supports structs and fieldless enums; a variant with \
                     fields has no tangent type yet — write the enum's tangent by hand (implement \
                     `Primal` for it) or use a struct",
                );
            }
            Shape::FieldlessEnum
        }
    }
}
