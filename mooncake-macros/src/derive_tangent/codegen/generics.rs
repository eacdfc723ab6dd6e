//! The item's generic parameters as the generated items use them: carried over unchanged
//! (bounds and defaults included), plus where-clauses for the field types, and the marker that
//! keeps type and lifetime parameters used.

use super::tokens::{Mentions, ParamNames, replace_self};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{GenericParam, Lifetime};

pub(crate) struct ItemGenerics<'a> {
    generics: &'a syn::Generics,
    pub(crate) names: ParamNames,
    /// The item's own type, `S<T, 'a, N>`.
    pub(crate) self_ty: TokenStream,
    /// The lifetime of the `for<'_> ..` bounds on concrete types (see [`ItemGenerics::bound`]).
    hrtb: Lifetime,
}

impl<'a> ItemGenerics<'a> {
    pub(crate) fn new(ident: &Ident, generics: &'a syn::Generics) -> Self {
        let mut names = ParamNames::default();
        for param in &generics.params {
            match param {
                GenericParam::Type(t) => names.types_and_consts.push(t.ident.clone()),
                GenericParam::Const(c) => names.types_and_consts.push(c.ident.clone()),
                GenericParam::Lifetime(l) => names.lifetimes.push(l.lifetime.ident.clone()),
            }
        }
        let (_, ty_generics, _) = generics.split_for_impl();
        let self_ty = quote!(#ident #ty_generics);
        let mut hrtb_name = String::from("__mooncake");
        while names.lifetimes.iter().any(|l| *l == hrtb_name) {
            hrtb_name.push('_');
        }
        let hrtb = Lifetime::new(&format!("'{hrtb_name}"), Span::call_site());
        ItemGenerics { generics, names, self_ty, hrtb }
    }

    /// The parameter list of a generated struct: the item's, bounds and defaults included.
    pub(crate) fn decl_params(&self) -> TokenStream {
        // `Generics` prints its parameters only, not its where clause.
        self.generics.to_token_stream()
    }

    /// `(impl generics, type generics)`, as `split_for_impl` gives them.
    pub(crate) fn for_impl(&self) -> (TokenStream, TokenStream) {
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        (impl_generics.to_token_stream(), ty_generics.to_token_stream())
    }

    /// The user's where predicates, then `extra`, as a where clause (empty if there are none).
    pub(crate) fn where_clause(&self, extra: &[TokenStream]) -> TokenStream {
        let user = self
            .generics
            .where_clause
            .iter()
            .flat_map(|w| w.predicates.iter())
            .map(|p| replace_self(p.to_token_stream(), &self.self_ty));
        let predicates: Vec<TokenStream> = user.chain(extra.iter().cloned()).collect();
        if predicates.is_empty() { TokenStream::new() } else { quote!(where #(#predicates,)*) }
    }

    /// The predicate `subject: bound`. A predicate on a concrete type (one that mentions no
    /// parameter) is written `for<'__mooncake> subject: bound`: rustc rejects a plain concrete
    /// predicate that does not hold (a "trivial bound") at the item that states it, while the
    /// higher-ranked form merely makes the item unusable. So a field type that does not implement
    /// `Primal` gives one error (the check on the field, see `structs.rs`) rather than one per
    /// generated item, and an optional impl (`Debug` of the handle) is simply absent when its
    /// predicate fails.
    pub(crate) fn bound(
        &self,
        subject: &TokenStream,
        mentions: Mentions,
        bound: &TokenStream,
    ) -> TokenStream {
        match mentions {
            Mentions::Nothing => {
                let hrtb = &self.hrtb;
                quote!(for<#hrtb> #subject: #bound)
            }
            Mentions::Lifetimes | Mentions::Params => quote!(#subject: #bound),
        }
    }

    /// `PhantomData<(fn() -> *const T, fn() -> &'a (), ..)>` if the item has type or lifetime
    /// parameters: the generated structs mention them only inside `<F as Primal>::..`
    /// projections, which do not count as uses. Covariant, and neutral for auto traits and drop
    /// checking.
    pub(crate) fn marker_ty(&self, rt: &TokenStream) -> Option<TokenStream> {
        let mut parts = Vec::new();
        for param in &self.generics.params {
            match param {
                GenericParam::Type(t) => {
                    let ident = &t.ident;
                    parts.push(quote!(fn() -> *const #ident));
                }
                GenericParam::Lifetime(l) => {
                    let lifetime = &l.lifetime;
                    parts.push(quote!(fn() -> &#lifetime ()));
                }
                GenericParam::Const(_) => {}
            }
        }
        if parts.is_empty() {
            None
        } else {
            Some(quote!(#rt::core::marker::PhantomData<(#(#parts,)*)>))
        }
    }
}
