//! Code generation: the tokens of the derived items, from a validated [`Container`].
//!
//! Generated code reaches the runtime only through `::mooncake_runtime::__private`; its local
//! variables are hygienic (`Span::mixed_site`), and primitive types are spelled
//! `core::primitive::..` so that a user's type named `f64` cannot capture them.

mod data_enums;
mod enums;
mod generics;
mod structs;
mod tokens;

use super::model::{Body, Container};
use super::validate::Shape;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

pub(crate) fn expand(container: &Container, shape: &Shape) -> TokenStream {
    match (shape, &container.body) {
        (Shape::Struct, Body::Struct { style, fields }) => {
            structs::expand(container, *style, fields)
        }
        (Shape::FieldlessEnum, Body::Enum { .. }) => enums::expand(container),
        (Shape::DataEnum, Body::Enum { variants }) => data_enums::expand(container, variants),
        // `validate` gives the shape of the body it saw; anything else is a bug here, reported
        // rather than panicked on.
        _ => quote! {
            ::core::compile_error!("internal error in `#[derive(Tangent)]`: shape mismatch");
        },
    }
}

/// The runtime, as generated code reaches it.
fn rt() -> TokenStream {
    quote!(::mooncake_runtime::__private)
}

/// A local variable of generated code. `Span::mixed_site` keeps it from the user's local
/// variables, but not from the user's constants (a parameter named like a constant in scope is
/// a constant pattern): hence also the `__` prefix.
fn local(name: &str) -> Ident {
    Ident::new(&format!("__{name}"), Span::mixed_site())
}
