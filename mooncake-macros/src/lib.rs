//! Procedural macros of Mooncake for Rust. Users reach them through `mooncake_runtime`.

use proc_macro::TokenStream;

/// placeholder
#[proc_macro_derive(Tangent, attributes(tangent))]
pub fn derive_tangent(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}

/// placeholder
#[proc_macro]
pub fn test_rule(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
