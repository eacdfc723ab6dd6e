//! Token-level helpers on field types: which generic parameters a type mentions, and `Self`
//! replaced by the item's own type (a generated struct's `Self` is another type).
//!
//! Working on tokens rather than on syn's tree also covers types written with a macro.

use proc_macro2::{Group, Ident, Spacing, TokenStream, TokenTree};
use quote::{ToTokens, quote_spanned};

/// The generic parameters of the item, by name.
#[derive(Default)]
pub(crate) struct ParamNames {
    pub(crate) types_and_consts: Vec<Ident>,
    pub(crate) lifetimes: Vec<Ident>,
}

/// What a type mentions of the item's generic parameters.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Mentions {
    /// Nothing: the type is concrete.
    Nothing,
    /// Lifetime parameters only.
    Lifetimes,
    /// A type or const parameter.
    Params,
}

impl ParamNames {
    pub(crate) fn mentions(&self, ty: &TokenStream) -> Mentions {
        let mut found = Mentions::Nothing;
        self.walk(ty.clone(), &mut found);
        found
    }

    fn walk(&self, tokens: TokenStream, found: &mut Mentions) {
        let mut after_quote = false;
        for tree in tokens {
            let quote = matches!(&tree, TokenTree::Punct(p) if p.as_char() == '\''
                && p.spacing() == Spacing::Joint);
            match tree {
                TokenTree::Ident(ident) if after_quote => {
                    if self.lifetimes.contains(&ident) {
                        *found = (*found).max(Mentions::Lifetimes);
                    }
                }
                TokenTree::Ident(ident) => {
                    if self.types_and_consts.contains(&ident) {
                        *found = Mentions::Params;
                    }
                }
                TokenTree::Group(group) => self.walk(group.stream(), found),
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
            after_quote = quote;
        }
    }
}

/// `tokens` with every `Self` replaced by `self_ty` (by `<self_ty>` before `::`).
pub(crate) fn replace_self(tokens: TokenStream, self_ty: &TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = TokenStream::new();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) if ident == "Self" => {
                let path_follows = matches!(
                    (trees.get(i + 1), trees.get(i + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
                );
                let span = ident.span();
                if path_follows {
                    out.extend(quote_spanned!(span=> <#self_ty>));
                } else {
                    out.extend(quote_spanned!(span=> #self_ty));
                }
            }
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), replace_self(group.stream(), self_ty));
                new.set_span(group.span());
                out.extend(std::iter::once(TokenTree::Group(new)));
            }
            other => other.to_tokens(&mut out),
        }
    }
    out
}

/// `tokens` with every lifetime named in `lifetimes` replaced by `'static`.
pub(crate) fn lifetimes_to_static(tokens: TokenStream, lifetimes: &[Ident]) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while let Some(tree) = trees.get(i) {
        match (tree, trees.get(i + 1)) {
            (TokenTree::Punct(p), Some(TokenTree::Ident(ident)))
                if p.as_char() == '\''
                    && p.spacing() == Spacing::Joint
                    && lifetimes.contains(ident) =>
            {
                let lifetime = syn::Lifetime::new("'static", ident.span());
                lifetime.to_tokens(&mut out);
                i += 2;
                continue;
            }
            (TokenTree::Group(group), _) => {
                let mut new =
                    Group::new(group.delimiter(), lifetimes_to_static(group.stream(), lifetimes));
                new.set_span(group.span());
                out.extend(std::iter::once(TokenTree::Group(new)));
            }
            (other, _) => other.to_tokens(&mut out),
        }
        i += 1;
    }
    out
}
