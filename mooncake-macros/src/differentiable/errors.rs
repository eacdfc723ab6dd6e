//! The error context of one expansion: every mistake found is recorded here and reported
//! together, so the user sees all of them at once. Like serde_derive's `Ctxt`, it must be
//! consumed: dropping it with errors unreported is a bug, caught in debug builds.

use proc_macro2::{Span, TokenStream};
use std::fmt::Display;

pub(crate) struct Errors {
    errors: Option<syn::Error>,
    consumed: bool,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Errors { errors: None, consumed: false }
    }

    /// Records an error at `span`.
    pub(crate) fn error(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error spanning `tokens` (first to last token where the compiler allows).
    pub(crate) fn error_spanned(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(e),
            None => self.errors = Some(e),
        }
    }

    pub(crate) fn has_errors(&self) -> bool {
        self.errors.is_some()
    }

    /// Moves every error of `other` into `self`.
    pub(crate) fn absorb(&mut self, mut other: Errors) {
        other.consumed = true;
        if let Some(e) = other.errors.take() {
            self.push(e);
        }
    }

    /// Consumes the context for work the user did not write (the lowering of a function's
    /// generic twin, `twin.rs`): its first error, if any, which the caller words anew.
    pub(crate) fn take_first(mut self) -> Option<syn::Error> {
        self.consumed = true;
        self.errors.take().and_then(|e| e.into_iter().next())
    }

    /// Consumes the context: `Err` with every error as `compile_error!`s, or `Ok`.
    pub(crate) fn finish(mut self) -> Result<(), TokenStream> {
        self.consumed = true;
        match self.errors.take() {
            Some(e) => Err(e.to_compile_error()),
            None => Ok(()),
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.consumed && self.errors.is_some() && !std::thread::panicking() {
            debug_assert!(false, "mooncake-macros: an error context was dropped unreported");
        }
    }
}
