//! The error context of one expansion (`serde_derive`'s `Ctxt`): every stage reports into it and
//! goes on, so that the user sees all the problems of an item at once, combined into one
//! `compile_error!` per problem. Unlike serde's, dropping an unchecked context does not panic:
//! the macro never panics.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
    /// Errors already rendered as `compile_error!` invocations by another library (darling).
    rendered: RefCell<TokenStream>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An error spanning the tokens of `node` (from its first to its last token).
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, node: T, message: M) {
        self.errors.borrow_mut().push(syn::Error::new_spanned(node.into_token_stream(), message));
    }

    /// An error at `span`.
    pub(crate) fn error_at<M: Display>(&self, span: Span, message: M) {
        self.errors.borrow_mut().push(syn::Error::new(span, message));
    }

    /// A `syn` error (a parse error, say).
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// Errors rendered by another library as `compile_error!` tokens.
    pub(crate) fn rendered_errors(&self, tokens: TokenStream) {
        self.rendered.borrow_mut().extend(tokens);
    }

    /// `Ok` if nothing was reported, else every error as `compile_error!` tokens.
    pub(crate) fn check(self) -> Result<(), TokenStream> {
        let mut errors = self.errors.into_inner().into_iter();
        let mut rendered = self.rendered.into_inner();
        let combined = errors.next().map(|mut first| {
            errors.for_each(|e| first.combine(e));
            first
        });
        match combined {
            None if rendered.is_empty() => Ok(()),
            None => Err(rendered),
            Some(error) => {
                let mut tokens = error.to_compile_error();
                tokens.extend(std::mem::take(&mut rendered));
                Err(tokens)
            }
        }
    }
}
