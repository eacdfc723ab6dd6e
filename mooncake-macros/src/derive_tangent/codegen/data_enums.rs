//! An enum with data (`enum Act { Relu, Leaky(f64), Affine(f64, f64) }`, tuple variants, no
//! generic parameters): four sibling enums, `ActTangent`, `ActFData`, `ActRData` and
//! `ActShadow`, each with a variant `Zero` (no derivative: a variant without data, or none yet)
//! and one variant per variant with data, holding its fields' tangents (fdata, rdata, shadows);
//! `Handle = SharedRef<Self>` (so the enum must be `Clone`). Tangents of two different variants
//! are not added (the first is kept): they belong to different points. The tangent's flat view
//! (`FlatTangent`, for Jacobians) is the components of its variant's fields; `Zero` has none.
//!
//! Each variant with data also implements the runtime's `enums::Variant<KEY>` (`KEY` the
//! variant's name as a number), through which `#[differentiable]` code builds it
//! (`Act::Leaky(a)`) and takes it apart (`Act::Leaky(k) => ..`).

use super::{local, rt};
use crate::derive_tangent::model::{Container, Variant};
use crate::differentiable::forward::method_key;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// The four sibling enums, by the `Primal` associated type they stand for.
const SIBLINGS: [&str; 4] = ["Tangent", "FData", "RData", "Shadow"];

/// The body of a match arm over two values of the same variant: the variant, the names bound
/// in the first and in the second, the field types.
type PairBody<'f> = dyn Fn(&Ident, &[Ident], &[Ident], &[syn::Type]) -> TokenStream + 'f;
/// The body of a match arm over one value: the variant, the names bound, the field types.
type ArmBody<'f> = dyn Fn(&Ident, &[Ident], &[syn::Type]) -> TokenStream + 'f;

struct Enum<'a> {
    rt: TokenStream,
    ident: &'a Ident,
    /// The variants with data: name and field types.
    data: Vec<(&'a Ident, &'a [syn::Type])>,
}

pub(crate) fn expand(container: &Container, variants: &[Variant]) -> TokenStream {
    let data = variants
        .iter()
        .filter(|v| v.with_fields.is_some())
        .map(|v| (&v.ident, v.tys.as_slice()))
        .collect();
    let e = Enum { rt: rt(), ident: &container.ident, data };
    let vis = &container.vis;
    let decls = SIBLINGS.iter().map(|s| e.decl(vis, s));
    let spaces = ["Tangent", "RData"].iter().map(|s| e.tangent_space_impl(s));
    let fdatas = ["FData", "Shadow"].iter().map(|s| e.fdata_impl(s));
    let variants = e.data.iter().map(|(v, tys)| e.variant_impl(v, tys));
    let copies = ["Tangent", "FData", "RData"].iter().map(|s| e.copy_impl(s));
    let partial_eq = e.partial_eq_impl();
    let zero = e.zero_rdata_impl();
    let flat = e.flat_tangent_impl();
    let primal = e.primal_impl();
    let from_handle = e.handle_reader_impl();
    let clone_check = super::enums::clone_check(container, &e.rt);
    quote! {
        #(#decls)*
        #(#copies)*
        #partial_eq
        #(#spaces)*
        #flat
        #zero
        #(#fdatas)*
        #primal
        #from_handle
        #(#variants)*
        #clone_check
    }
}

/// `a0, a1, ..` for `n` fields.
fn names(prefix: &str, n: usize) -> Vec<Ident> {
    (0..n).map(|i| local(&format!("{prefix}{i}"))).collect()
}

impl Enum<'_> {
    fn name(&self, sibling: &str) -> Ident {
        format_ident!("{}{}", self.ident, sibling)
    }

    /// `<T as Primal>::Assoc` for each field type.
    fn assoc_tys(&self, tys: &[syn::Type], sibling: &str) -> Vec<TokenStream> {
        let (rt, assoc) = (&self.rt, format_ident!("{}", sibling));
        tys.iter().map(|t| quote!(<#t as #rt::Primal>::#assoc)).collect()
    }

    fn decl(&self, vis: &syn::Visibility, sibling: &str) -> TokenStream {
        let name = self.name(sibling);
        let doc = format!(
            "The {} of [`{}`] (`#[derive(Tangent)]`): one variant per variant with data, holding \
             its fields' {}; `Zero` for none.",
            sibling.to_lowercase(),
            self.ident,
            sibling.to_lowercase()
        );
        let variants = self.data.iter().map(|(v, tys)| {
            let tys = self.assoc_tys(tys, sibling);
            let d = format!("The {} of `{}::{}`.", sibling.to_lowercase(), self.ident, v);
            quote!(#[doc = #d] #v(#(#tys),*))
        });
        quote! {
            #[doc = #doc]
            #[derive(Clone, Debug)]
            #[allow(dead_code)]
            #vis enum #name {
                /// No derivative: a variant without data, or zero.
                Zero,
                #(#variants,)*
            }
        }
    }

    /// `(Self::V(a0, ..), Self::V(b0, ..)) => body(a, b)` for each variant with data.
    fn pair_arms(&self, left: &Ident, right: &Ident, body: &PairBody<'_>) -> Vec<TokenStream> {
        self.data
            .iter()
            .map(|(v, tys)| {
                let (a, b) = (names("a", tys.len()), names("b", tys.len()));
                let body = body(v, &a, &b, tys);
                quote!((#left::#v(#(#a),*), #right::#v(#(#b),*)) => #body)
            })
            .collect()
    }

    /// `Self::V(a0, ..) => body(a)` for each variant with data.
    fn arms(&self, on: &Ident, body: &ArmBody<'_>) -> Vec<TokenStream> {
        self.data
            .iter()
            .map(|(v, tys)| {
                let a = names("a", tys.len());
                let body = body(v, &a, tys);
                quote!(#on::#v(#(#a),*) => #body)
            })
            .collect()
    }

    /// `Copy` where every field's is (a conditional impl, as for structs: the tangent of a
    /// `Copy` enum is then `Copy`, and so is its `Dual`, so the enum can be used after it is
    /// passed by value, as in the primal). The bounds are higher-ranked so that one that does not
    /// hold (a `Vec`'s) leaves the impl out instead of failing.
    fn copy_impl(&self, sibling: &str) -> TokenStream {
        let rt = &self.rt;
        let name = self.name(sibling);
        let bounds = self.data.iter().flat_map(|(_, tys)| self.assoc_tys(tys, sibling));
        quote! {
            #[automatically_derived]
            impl #rt::core::marker::Copy for #name
            where #(for<'__mooncake> #bounds: #rt::core::marker::Copy,)*
            {}
        }
    }

    /// `PartialEq` of the tangent, where every field's tangent has it.
    fn partial_eq_impl(&self) -> TokenStream {
        let rt = &self.rt;
        let name = self.name("Tangent");
        let bounds = self.data.iter().flat_map(|(_, tys)| self.assoc_tys(tys, "Tangent"));
        let arms = self.pair_arms(&name, &name, &|_, a, b, _| quote!(true #(&& #a == #b)*));
        let other = local("other");
        quote! {
            #[automatically_derived]
            #[allow(unreachable_patterns)]
            impl #rt::core::cmp::PartialEq for #name
            where #(for<'__mooncake> #bounds: #rt::core::cmp::PartialEq,)*
            {
                fn eq(&self, #other: &Self) -> #rt::core::primitive::bool {
                    match (self, #other) {
                        (#name::Zero, #name::Zero) => true,
                        #(#arms,)*
                        _ => false,
                    }
                }
            }
        }
    }

    fn tangent_space_impl(&self, sibling: &str) -> TokenStream {
        let rt = &self.rt;
        let name = self.name(sibling);
        let (other, a_p) = (local("other"), local("a"));
        let ts = quote!(#rt::TangentSpace);
        let increment =
            self.pair_arms(&name, &name, &|_, a, b, _| quote!({ #(#ts::increment(#a, #b);)* }));
        let inner =
            self.pair_arms(&name, &name, &|_, a, b, _| quote!(0.0 #(+ #ts::inner(#a, #b))*));
        let scale = self.arms(&name, &|_, a, _| quote!({ #(#ts::scale(#a, #a_p);)* }));
        let settle = self.arms(&name, &|_, a, _| quote!({ #(#ts::settle(#a);)* }));
        quote! {
            #[automatically_derived]
            #[allow(unreachable_patterns)]
            impl #ts for #name {
                fn increment(&mut self, #other: &Self) {
                    if let #name::Zero = self {
                        *self = #rt::core::clone::Clone::clone(#other);
                        return;
                    }
                    match (self, #other) {
                        #(#increment,)*
                        _ => {}
                    }
                }
                fn inner(&self, #other: &Self) -> #rt::core::primitive::f64 {
                    match (self, #other) {
                        #(#inner,)*
                        _ => 0.0,
                    }
                }
                fn scale(&mut self, #a_p: #rt::core::primitive::f64) {
                    match self {
                        #(#scale,)*
                        _ => {}
                    }
                }
                fn settle(&mut self) {
                    match self {
                        #(#settle,)*
                        _ => {}
                    }
                }
            }
        }
    }

    /// `impl FlatTangent` for the tangent (what `value_and_jacobian!` needs): the components
    /// of the variant's fields one after another, none for `Zero`. A Jacobian's basis tangents
    /// start from `zero_tangent`, which is the variant of the value, so its components are
    /// those of the value's variant. Absent, not an error, where a field's tangent has no flat
    /// view.
    fn flat_tangent_impl(&self) -> TokenStream {
        let rt = &self.rt;
        let name = self.name("Tangent");
        let flat = quote!(#rt::jac::FlatTangent);
        let bounds = self.data.iter().flat_map(|(_, tys)| self.assoc_tys(tys, "Tangent"));
        let usize_ty = quote!(#rt::core::primitive::usize);
        let f64_ty = quote!(#rt::core::primitive::f64);
        let bool_ty = quote!(#rt::core::primitive::bool);
        let (out, k, v, d) = (local("out"), local("k"), local("v"), local("d"));
        let len = self.arms(&name, &|_, a, tys| {
            let tts = self.assoc_tys(tys, "Tangent");
            if a.is_empty() { quote!(0) } else { quote!(#(<#tts as #flat>::flat_len(#a))+*) }
        });
        let extend = self.arms(&name, &|_, a, tys| {
            let tts = self.assoc_tys(tys, "Tangent");
            quote!({ #(<#tts as #flat>::extend_flat(#a, #out);)* })
        });
        let set = self.arms(&name, &|_, a, tys| {
            let tts = self.assoc_tys(tys, "Tangent");
            match (a.split_last(), tts.split_last()) {
                (Some((a_last, a_init)), Some((t_last, t_init))) => quote!({
                    #(
                        let #d = <#t_init as #flat>::flat_len(#a_init);
                        if #k < #d {
                            return <#t_init as #flat>::set_flat(#a_init, #k, #v);
                        }
                        let #k = #k - #d;
                    )*
                    <#t_last as #flat>::set_flat(#a_last, #k, #v)
                }),
                _ => quote!(false),
            }
        });
        // A variant `V()` would leave `k`, `v` and `out` unused.
        quote! {
            #[automatically_derived]
            #[allow(unused_variables)]
            impl #flat for #name
            where #(for<'__mooncake> #bounds: #flat,)*
            {
                #[inline]
                fn flat_len(&self) -> #usize_ty {
                    match self {
                        #name::Zero => 0,
                        #(#len,)*
                    }
                }
                #[inline]
                fn extend_flat(&self, #out: &mut #rt::std::vec::Vec<#f64_ty>) {
                    match self {
                        #name::Zero => {}
                        #(#extend)*
                    }
                }
                #[inline]
                fn set_flat(&mut self, #k: #usize_ty, #v: #f64_ty) -> #bool_ty {
                    match self {
                        #name::Zero => false,
                        #(#set)*
                    }
                }
            }
        }
    }

    fn zero_rdata_impl(&self) -> TokenStream {
        let rt = &self.rt;
        let name = self.name("RData");
        quote! {
            #[automatically_derived]
            impl #rt::rev::ZeroRData for #name {
                #[inline]
                fn zero() -> Self {
                    #name::Zero
                }
            }
        }
    }

    fn fdata_impl(&self, sibling: &str) -> TokenStream {
        let rt = &self.rt;
        let name = self.name(sibling);
        let other = local("other");
        let arms = self.pair_arms(
            &name,
            &name,
            &|_, a, b, _| quote!({ #(#rt::FData::increment_from(#a, #b);)* }),
        );
        quote! {
            #[automatically_derived]
            #[allow(unreachable_patterns)]
            impl #rt::FData for #name {
                fn increment_from(&self, #other: &Self) {
                    match (self, #other) {
                        #(#arms,)*
                        _ => {}
                    }
                }
            }
        }
    }

    fn primal_impl(&self) -> TokenStream {
        let rt = &self.rt;
        let e = self.ident;
        let p = quote!(#rt::Primal);
        let [t, f, r, s] = SIBLINGS.map(|n| self.name(n));
        let (rng, tangent, fdata, rdata, shadow, handle, value, other, h) = (
            local("rng"),
            local("tangent"),
            local("fdata"),
            local("rdata"),
            local("shadow"),
            local("handle"),
            local("value"),
            local("other"),
            local("h"),
        );
        let (a_p, b_p, rtol, atol) = (local("a"), local("b"), local("rtol"), local("atol"));
        let f64_ty = quote!(#rt::core::primitive::f64);
        let bool_ty = quote!(#rt::core::primitive::bool);
        let discriminant = quote!(#rt::core::mem::discriminant);
        let self_name: Ident = format_ident!("Self");
        // `match self { Self::V(a..) => Out::V(each(a)..), _ => Out::Zero }`.
        let each = |out: &Ident, call: &dyn Fn(&Ident) -> TokenStream| {
            let arms = self.arms(&self_name, &|v, a, _| {
                let calls = a.iter().map(call);
                quote!(#out::#v(#(#calls),*))
            });
            quote!(match self { #(#arms,)* _ => #out::Zero })
        };
        let zero_tangent = each(&t, &|a| quote!(#p::zero_tangent(#a)));
        let random_tangent = each(&t, &|a| quote!(#p::random_tangent(#a, #rng)));
        let zero_fdata = each(&f, &|a| quote!(#p::zero_fdata(#a)));
        let zero_rdata = each(&r, &|a| quote!(#p::zero_rdata(#a)));
        let fdata_of_shadow = self.pair_arms(
            &self_name,
            &s,
            &|v, a, b, _| quote!(#f::#v(#(#p::fdata_of_shadow(#a, #b)),*)),
        );
        let zero_shadow = each(&s, &|a| quote!(#p::zero_shadow(#a)));
        let split = self.arms(&t, &|v, a, tys| {
            let (fs, rs) = (names("f", a.len()), names("r", a.len()));
            quote!({
                #(let (#fs, #rs) = <#tys as #p>::split_tangent(#a);)*
                (#f::#v(#(#fs),*), #r::#v(#(#rs),*))
            })
        });
        let join = self.pair_arms(
            &f,
            &r,
            &|v, a, b, tys| quote!(#t::#v(#(<#tys as #p>::join_tangent(#a, #b)),*)),
        );
        let join_zero = self.arms(&f, &|v, a, tys| {
            quote!(#t::#v(#(<#tys as #p>::join_tangent(#a, #rt::rev::ZeroRData::zero())),*))
        });
        let to_shadow =
            self.arms(&t, &|v, a, tys| quote!(#s::#v(#(<#tys as #p>::tangent_to_shadow(#a)),*)));
        let from_shadow =
            self.arms(&s, &|v, a, tys| quote!(#t::#v(#(<#tys as #p>::shadow_to_tangent(#a)),*)));
        let perturb =
            self.pair_arms(&self_name, &t, &|_, a, b, _| quote!({ #(#p::perturb(#a, #b, #h);)* }));
        let inner_difference = self.data.iter().map(|(v, tys)| {
            let (ts, as_, bs) =
                (names("t", tys.len()), names("a", tys.len()), names("b", tys.len()));
            quote!((#t::#v(#(#ts),*), #e::#v(#(#as_),*), #e::#v(#(#bs),*)) =>
                0.0 #(+ <#tys as #p>::inner_difference(#ts, #as_, #bs))*)
        });
        let approx = self.pair_arms(
            &self_name,
            &self_name,
            &|_, a, b, _| quote!(true #(&& #p::approx_eq(#a, #b, #rtol, #atol))*),
        );
        let clone = quote!(#rt::core::clone::Clone);
        // Bounded on `Self: Clone` (higher-ranked, so that it is no error of its own): an enum
        // that is not `Clone` gets the one message of `enums::clone_check`.
        quote! {
            #[automatically_derived]
            #[allow(unreachable_patterns, unused_variables)]
            impl #p for #e where for<'__mooncake> #e: #clone {
                type Tangent = #t;
                type TangentRef = #t;
                type FData = #f;
                type RData = #r;
                type Shadow = #s;
                type Handle = #rt::SharedRef<Self>;

                fn zero_tangent(&self) -> #t {
                    #zero_tangent
                }
                fn random_tangent(&self, #rng: &mut #rt::TestRng) -> #t {
                    #random_tangent
                }
                fn zero_fdata(&self) -> #f {
                    #zero_fdata
                }
                fn zero_rdata(&self) -> #r {
                    #zero_rdata
                }
                fn fdata_of_shadow(&self, #shadow: &#s) -> #f {
                    match (self, #shadow) {
                        #(#fdata_of_shadow,)*
                        _ => #p::zero_fdata(self),
                    }
                }
                fn zero_shadow(&self) -> #s {
                    #zero_shadow
                }
                fn split_tangent(#tangent: #t) -> (#f, #r) {
                    match #tangent {
                        #(#split,)*
                        _ => (#f::Zero, #r::Zero),
                    }
                }
                fn join_tangent(#fdata: &#f, #rdata: #r) -> #t {
                    match (#fdata, #rdata) {
                        #(#join,)*
                        (#fdata, _) => match #fdata {
                            #(#join_zero,)*
                            _ => #t::Zero,
                        },
                    }
                }
                fn tangent_to_shadow(#tangent: #t) -> #s {
                    match #tangent {
                        #(#to_shadow,)*
                        _ => #s::Zero,
                    }
                }
                fn shadow_to_tangent(#shadow: &#s) -> #t {
                    match #shadow {
                        #(#from_shadow,)*
                        _ => #t::Zero,
                    }
                }
                #[inline(always)]
                fn tangent_ref(#tangent: &#t) -> &#t {
                    #tangent
                }
                #[inline(always)]
                fn tangent_mut(#tangent: &mut #t) -> &mut #t {
                    #tangent
                }
                fn to_handle(&self) -> #rt::SharedRef<Self> {
                    #rt::SharedRef::new(#clone::clone(self))
                }
                fn load_handle(&mut self, #handle: &#rt::SharedRef<Self>) {
                    #handle.with(|#value| #clone::clone_from(self, #value))
                }
                fn perturb(&mut self, #tangent: &#t, #h: #f64_ty) {
                    match (self, #tangent) {
                        #(#perturb,)*
                        _ => {}
                    }
                }
                fn inner_difference(#tangent: &#t, #a_p: &Self, #b_p: &Self) -> #f64_ty {
                    match (#tangent, #a_p, #b_p) {
                        #(#inner_difference,)*
                        (_, #a_p, #b_p) if #discriminant(#a_p) == #discriminant(#b_p) => 0.0,
                        _ => #f64_ty::NAN,
                    }
                }
                fn approx_eq(&self, #other: &Self, #rtol: #f64_ty, #atol: #f64_ty) -> #bool_ty {
                    match (self, #other) {
                        #(#approx,)*
                        (#a_p, #b_p) => #discriminant(#a_p) == #discriminant(#b_p),
                    }
                }
            }
        }
    }

    fn handle_reader_impl(&self) -> TokenStream {
        let rt = &self.rt;
        let e = self.ident;
        let handle = local("handle");
        quote! {
            #[automatically_derived]
            impl #rt::FromHandle for #e where for<'__mooncake> #e: #rt::core::clone::Clone {
                fn from_handle(#handle: &#rt::SharedRef<Self>) -> Self {
                    #handle.with(#rt::core::clone::Clone::clone)
                }
            }
        }
    }

    /// `Variant<KEY>` of the variant `v` with fields `tys`: built from and taken apart into the
    /// tuple of its fields.
    fn variant_impl(&self, v: &Ident, tys: &[syn::Type]) -> TokenStream {
        let rt = &self.rt;
        let e = self.ident;
        let p = quote!(#rt::Primal);
        let key = method_key(&v.to_string());
        let [t, f, r, _] = SIBLINGS.map(|n| self.name(n));
        let idx: Vec<syn::Index> = (0..tys.len()).map(syn::Index::from).collect();
        let a = names("a", tys.len());
        let (fields, x) = (local("fields"), local("x"));
        let fields_ty = quote!((#(#tys,)*));
        let message = format!("mooncake: `{e}::{v}(..)` taken apart from another variant of `{e}`");
        quote! {
            #[automatically_derived]
            #[allow(unreachable_patterns)]
            impl #rt::enums::Variant<#key> for #e where for<'__mooncake> #e: #rt::core::clone::Clone {
                type Fields = #fields_ty;
                #[inline]
                fn from_fields(#fields: #fields_ty) -> Self {
                    #e::#v(#(#fields.#idx),*)
                }
                #[inline]
                fn into_fields(self) -> #fields_ty {
                    match self {
                        #e::#v(#(#a),*) => (#(#a,)*),
                        _ => #rt::core::panic!(#message),
                    }
                }
                #[inline]
                fn tangent_from_fields(#x: <#fields_ty as #p>::Tangent) -> #t {
                    #t::#v(#(#x.#idx),*)
                }
                #[inline]
                fn tangent_into_fields(#x: #t, #fields: &#fields_ty) -> <#fields_ty as #p>::Tangent {
                    match #x {
                        #t::#v(#(#a),*) => (#(#a,)*),
                        _ => #p::zero_tangent(#fields),
                    }
                }
                #[inline]
                fn fdata_from_fields(#x: <#fields_ty as #p>::FData) -> #f {
                    #f::#v(#(#x.#idx),*)
                }
                #[inline]
                fn fdata_into_fields(#x: #f, #fields: &#fields_ty) -> <#fields_ty as #p>::FData {
                    match #x {
                        #f::#v(#(#a),*) => (#(#a,)*),
                        _ => #p::zero_fdata(#fields),
                    }
                }
                #[inline]
                fn rdata_from_fields(#x: <#fields_ty as #p>::RData) -> #r {
                    #r::#v(#(#x.#idx),*)
                }
                #[inline]
                fn rdata_into_fields(#x: #r) -> <#fields_ty as #p>::RData {
                    match #x {
                        #r::#v(#(#a),*) => (#(#a,)*),
                        _ => #rt::rev::ZeroRData::zero(),
                    }
                }
            }
        }
    }
}
