//! A fieldless enum: non-differentiable, like an integer. `Tangent = NoTangent`,
//! `FData = Shadow = NoFData`, `RData = NoRData`, `Handle = SharedRef<Self>` (a copy, so the enum
//! must be `Clone`); two values are "approximately equal" when they are the same variant.

use super::generics::ItemGenerics;
use super::{local, rt};
use crate::derive_tangent::model::Container;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn expand(container: &Container) -> TokenStream {
    let rt = rt();
    let generics = ItemGenerics::new(&container.ident, &container.generics);
    let self_ty = &generics.self_ty;
    let (impl_generics, _) = generics.for_impl();
    let clone = quote!(#rt::core::clone::Clone);
    let clone_bound = generics.bound(self_ty, generics.names.mentions(self_ty), &clone);
    let where_clause = generics.where_clause(&[clone_bound]);
    let (handle, value, other, tangent) =
        (local("handle"), local("value"), local("other"), local("tangent"));
    let f64_ty = quote!(#rt::core::primitive::f64);
    let bool_ty = quote!(#rt::core::primitive::bool);
    let discriminant = quote!(#rt::core::mem::discriminant);
    let check = clone_check(container, &rt);
    quote! {
        // No differentiable part: the API shows the gradient of such an argument as `NoTangent`.
        #[automatically_derived]
        impl #impl_generics #rt::api::NoDerivative for #self_ty #where_clause {}
        #[automatically_derived]
        impl #impl_generics #rt::Primal for #self_ty #where_clause {
            type Tangent = #rt::NoTangent;
            type TangentRef = #rt::NoTangent;
            type FData = #rt::NoFData;
            type RData = #rt::NoRData;
            type Shadow = #rt::NoFData;
            type Handle = #rt::SharedRef<Self>;

            #[inline(always)]
            fn zero_tangent(&self) -> #rt::NoTangent {
                #rt::NoTangent
            }
            #[inline(always)]
            fn random_tangent(&self, _: &mut #rt::TestRng) -> #rt::NoTangent {
                #rt::NoTangent
            }
            #[inline(always)]
            fn zero_fdata(&self) -> #rt::NoFData {
                #rt::NoFData
            }
            #[inline(always)]
            fn zero_rdata(&self) -> #rt::NoRData {
                #rt::NoRData
            }
            #[inline(always)]
            fn zero_shadow(&self) -> #rt::NoFData {
                #rt::NoFData
            }
            #[inline(always)]
            fn split_tangent(_: #rt::NoTangent) -> (#rt::NoFData, #rt::NoRData) {
                (#rt::NoFData, #rt::NoRData)
            }
            #[inline(always)]
            fn join_tangent(_: &#rt::NoFData, _: #rt::NoRData) -> #rt::NoTangent {
                #rt::NoTangent
            }
            #[inline(always)]
            fn tangent_to_shadow(_: #rt::NoTangent) -> #rt::NoFData {
                #rt::NoFData
            }
            #[inline(always)]
            fn shadow_to_tangent(_: &#rt::NoFData) -> #rt::NoTangent {
                #rt::NoTangent
            }
            #[inline(always)]
            fn tangent_ref(#tangent: &#rt::NoTangent) -> &#rt::NoTangent {
                #tangent
            }
            #[inline(always)]
            fn tangent_mut(#tangent: &mut #rt::NoTangent) -> &mut #rt::NoTangent {
                #tangent
            }
            fn to_handle(&self) -> #rt::SharedRef<Self> {
                #rt::SharedRef::new(#clone::clone(self))
            }
            fn load_handle(&mut self, #handle: &#rt::SharedRef<Self>) {
                #handle.with(|#value| #clone::clone_from(self, #value))
            }
            #[inline(always)]
            fn perturb(&mut self, _: &#rt::NoTangent, _: #f64_ty) {}
            #[inline(always)]
            fn inner_difference(_: &#rt::NoTangent, _: &Self, _: &Self) -> #f64_ty {
                0.0
            }
            #[inline]
            fn approx_eq(&self, #other: &Self, _: #f64_ty, _: #f64_ty) -> #bool_ty {
                #discriminant(self) == #discriminant(#other)
            }
        }
        #check
    }
}

/// A check that the enum is `Clone`, spanned on its name. Only for an enum without generic
/// parameters, whose type can be named outside an impl.
pub(super) fn clone_check(container: &Container, rt: &TokenStream) -> TokenStream {
    if !container.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &container.ident;
    quote! {
        const _: () = {
            #[diagnostic::on_unimplemented(
                message = "`#[derive(Tangent)]` on the enum `{Self}` needs `{Self}: Clone`",
                label = "this enum is not `Clone`",
                note = "a reverse-mode rule that takes `&mut {Self}` keeps a copy of the value, \
                        to restore it: add `#[derive(Clone)]` to the enum"
            )]
            trait __MooncakeEnumIsClone {}
            #[diagnostic::do_not_recommend]
            impl<T: #rt::core::clone::Clone> __MooncakeEnumIsClone for T {}
            fn __mooncake_enum_is_clone<T: __MooncakeEnumIsClone>() {}
            let _ = __mooncake_enum_is_clone::<#ident>;
        };
    }
}
