//! `#[derive(Tangent)]` (placeholder, being written).

use proc_macro2::TokenStream;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
