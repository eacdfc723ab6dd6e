//! `#[differentiable]`: lowers a function body to the AD IR ([`ir`]) and emits its rules beside
//! the untouched original.
//!
//! The stages, each in its own module with one-way dependencies:
//! [`parse`] (attribute arguments, signature) -> [`lower`] (syn to IR) -> [`verify`] ->
//! [`structure`] (control-flow graph to structured Rust) -> [`forward`] (the statement-wise
//! transform) -> [`codegen`] (tokens).

mod batched;
mod chains;
pub(crate) mod codegen;
pub(crate) mod errors;
pub(crate) mod forward;
pub(crate) mod ir;
mod lazy;
pub(crate) mod lower;
pub(crate) mod nested_ad;
mod options;
pub(crate) mod parse;
pub(crate) mod reverse;
mod self_type;
mod slices;
pub(crate) mod structure;
mod twin;
mod unroll;
mod variants;
pub(crate) mod verify;

#[cfg(test)]
mod golden;

use codegen::{Names, allow_attrs, rt, type_and_const_params};
use errors::Errors;
use ir::*;
use parse::unambiguous;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The expansion of `#[differentiable(attr)] item`.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _rt = codegen::RtScope::open();
    let mut errors = Errors::new();
    let args = parse::Args::parse(attr, &mut errors);
    match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(func)) => expand_fn(func, &args, errors),
        Ok(syn::Item::Impl(imp)) => expand_impl(imp, &args, errors),
        Ok(other) => {
            errors.error_spanned(
                item_keyword(&other),
                "#[differentiable] goes on a function, a method, or an `impl` block",
            );
            let errs = errors.finish().err().unwrap_or_default();
            quote!(#errs #other)
        }
        // A method inside an `impl` block arrives alone; it parses as a function. Anything
        // else that does not parse is given back untouched, so that rustc reports its errors.
        Err(_) => match syn::parse2::<syn::ItemFn>(item.clone()) {
            Ok(func) => expand_fn(func, &args, errors),
            Err(_) => {
                let _ = errors.finish();
                item
            }
        },
    }
}

fn item_keyword(item: &syn::Item) -> TokenStream {
    match item {
        syn::Item::Struct(s) => {
            let t = &s.struct_token;
            quote!(#t)
        }
        syn::Item::Enum(e) => {
            let t = &e.enum_token;
            quote!(#t)
        }
        syn::Item::Mod(m) => {
            let t = &m.mod_token;
            quote!(#t)
        }
        syn::Item::Trait(t) => {
            let t = &t.trait_token;
            quote!(#t)
        }
        syn::Item::Static(s) => {
            let t = &s.static_token;
            quote!(#t)
        }
        syn::Item::Const(c) => {
            let t = &c.const_token;
            quote!(#t)
        }
        other => quote!(#other),
    }
}

/// The parts of a function the transforms need, whether it is free or a method.
pub(crate) struct FnParts<'a> {
    pub(crate) vis: &'a syn::Visibility,
    pub(crate) sig: &'a syn::Signature,
    pub(crate) block: &'a syn::Block,
    /// Inside an `impl` block with type or const parameters.
    pub(crate) in_generic_impl: bool,
    /// Inside an `impl` block (known when the attribute is on the block).
    pub(crate) in_impl: bool,
    /// The type and const parameters of the enclosing `impl` block, which a method's pullback
    /// captures (`use<..>` must name them).
    pub(crate) impl_params: Vec<syn::Ident>,
    /// The type parameters among them (a boxed pullback bounds them by `'static`).
    pub(crate) impl_type_params: Vec<syn::Ident>,
    /// The first lifetime parameter of the enclosing `impl` block (`impl<'a> Data<'a>`), whose
    /// methods reverse mode does not cover yet.
    pub(crate) impl_lifetime: Option<Span>,
}

/// The first argument type that is a buffer of references (`rows: &[&[f64]]`,
/// `Vec<&[f64]>`), whose rows reverse mode does not borrow yet: its span.
fn borrowed_rows(sig: &parse::Sig) -> Option<Span> {
    fn element_is_reference(ty: &syn::Type) -> bool {
        match ty {
            syn::Type::Reference(r) => element_is_reference(&r.elem),
            syn::Type::Slice(s) => matches!(&*s.elem, syn::Type::Reference(_)),
            syn::Type::Array(a) => matches!(&*a.elem, syn::Type::Reference(_)),
            syn::Type::Path(_) => {
                reverse::buffer_element(ty).is_some_and(|e| matches!(e, syn::Type::Reference(_)))
            }
            _ => false,
        }
    }
    sig.args.iter().find(|a| element_is_reference(&a.ty)).map(|a| a.ty.span())
}

/// The first argument type that is a tuple holding a borrowed buffer (`p: (&[f64], &[f64])`),
/// which reverse mode does not take apart yet: its span.
fn borrowed_tuple_parts(sig: &parse::Sig) -> Option<Span> {
    let borrowed_buffer = |ty: &syn::Type| {
        matches!(ty, syn::Type::Reference(r) if matches!(&*r.elem, syn::Type::Slice(_) | syn::Type::Array(_))
            || reverse::buffer_element(&r.elem).is_some())
    };
    sig.args
        .iter()
        .find(|a| matches!(&a.ty, syn::Type::Tuple(t) if t.elems.iter().any(borrowed_buffer)))
        .map(|a| a.ty.span())
}

/// The first lifetime parameter of `imp` that its type names (`'a` of `impl<'a> Data<'a>`).
fn type_lifetime(imp: &syn::ItemImpl) -> Option<Span> {
    struct Named(Vec<syn::Ident>);
    impl<'ast> syn::visit::Visit<'ast> for Named {
        fn visit_lifetime(&mut self, l: &'ast syn::Lifetime) {
            self.0.push(l.ident.clone());
        }
    }
    let mut named = Named(Vec::new());
    syn::visit::Visit::visit_type(&mut named, &imp.self_ty);
    imp.generics
        .lifetimes()
        .map(|l| &l.lifetime)
        .find(|l| named.0.contains(&l.ident))
        .map(|l| l.span())
}

/// A path to the primal function, for a `let _ = path;` in its rules: so that a function used
/// only through its rules (by `value_and_gradient!`, say) does not count as dead code. A
/// function given alone is taken for a method if it has a receiver or mentions `Self`.
fn primal_path(func: &FnParts<'_>) -> TokenStream {
    let name = &func.sig.ident;
    let generics = type_and_const_params(&func.sig.generics);
    let turbofish = quote!(::<#(#generics),*>);
    if is_associated(func) { quote!(Self::#name #turbofish) } else { quote!(#name #turbofish) }
}

/// Whether the function is taken for an associated function: inside an `impl` block, or given
/// alone with a receiver or a mention of `Self`.
fn is_associated(func: &FnParts<'_>) -> bool {
    fn mentions_self(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "Self",
            proc_macro2::TokenTree::Group(g) => mentions_self(g.stream()),
            _ => false,
        })
    }
    let sig = func.sig;
    func.in_impl || func.sig.receiver().is_some() || mentions_self(quote!(#sig))
}

/// The path of the function's rule `NAME_suffix`, with its parameters left to inference.
fn own_rule_path(func: &FnParts<'_>, suffix: &str) -> TokenStream {
    let name = format_ident!("{}_{}", func.sig.ident, suffix, span = func.sig.ident.span());
    if is_associated(func) { quote!(Self::#name) } else { quote!(#name) }
}

/// `where` with the user's predicates, then `bounds`. The predicates are re-punctuated one by
/// one: the user's list may be empty (`where {`) or end in a comma (rustfmt's layout), and
/// pasting it whole before `, bounds` gave `where ,` or `,,` (found by the fuzz test).
fn where_clause(generics: &syn::Generics, bounds: &[TokenStream]) -> TokenStream {
    let user = generics.where_clause.iter().flat_map(|w| w.predicates.iter());
    quote!(where #(#user,)* #(#bounds),*)
}

/// A free function, or a method given on its own: the function, then its rules.
fn expand_fn(func: syn::ItemFn, args: &parse::Args, mut errors: Errors) -> TokenStream {
    let parts = FnParts {
        vis: &func.vis,
        sig: &func.sig,
        block: &func.block,
        in_generic_impl: false,
        in_impl: false,
        impl_params: Vec::new(),
        impl_type_params: Vec::new(),
        impl_lifetime: None,
    };
    let Rules { tokens: mut rules, batched, twin, .. } = rules_of(&parts, args, &mut errors);
    // The rules of `value_and_gradient!` of this function inside other differentiated code
    // (refusing stubs where it does not qualify), and the batched entry's stub where the
    // function has no batched rule; not for methods.
    if func.sig.receiver().is_none() && !is_associated(&parts) {
        let lanes_stub = !batched && !args.reverse_only;
        if args.forward_only {
            rules.extend(batched::stub(&func.vis, &func.sig, lanes_stub));
        } else {
            // A function with `second_order` gets the nested rules of its twin's signature (the
            // rules take `f64`s and call `hvp!`, which runs `NAME_rrule_twin`).
            let floats = float_params(&func.sig.generics);
            let (sig, floats) = match &twin {
                Some(t) => (&t.sig, vec![format_ident!("{}", twin::PARAM)]),
                None => (&func.sig, floats),
            };
            rules.extend(nested_ad::items(&func.vis, sig, &floats, lanes_stub, !args.reverse_only));
        }
    }
    match errors.finish() {
        Ok(()) => quote!(#func #rules),
        Err(errs) => quote!(#func #errs #rules),
    }
}

/// The expansion of `#[differentiable]` on the function `f` (source text), as text: for the
/// macro's own tests.
#[cfg(test)]
pub(crate) fn expand_source(f: &str) -> String {
    expand(TokenStream::new(), f.parse().expect("test source lexes")).to_string()
}

/// The text of the reverse rule `f_rrule_twin` or `f_rrule_wrt` derived from the function `f` (source text, with
/// no error): for the macro's own tests of what a reverse rule holds.
#[cfg(test)]
pub(crate) fn rrule_source(f: &str) -> String {
    let out = expand_source(f);
    assert!(!out.contains("compile_error"), "{out}");
    // The rule derived from a twin (`twin.rs`) where there is one.
    let start = out
        .find("fn f_rrule_twin")
        .or_else(|| out.find("fn f_rrule_wrt"))
        .expect("a reverse rule of a function named `f`");
    out[start..].to_string()
}

/// `#[mooncake_overlay] fn name(..) { body }` (seed 004, "Simplifying Code via Overlays"): the
/// rules of the existing function `name`, derived from this second body, which only AD sees.
/// The function itself is not emitted (the original keeps its body); a check that the
/// overlay's signature is the original's makes a mismatch an error at the overlay.
pub(crate) fn expand_overlay(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _rt = codegen::RtScope::open();
    let mut errors = Errors::new();
    let args = parse::Args::parse(attr, &mut errors);
    let func: syn::ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => {
            let _ = errors.finish();
            return syn::Error::new(
                e.span(),
                "#[mooncake_overlay] goes on a function with the same name and signature as the \
                 function it overlays, e.g. `#[mooncake_overlay] fn scale(x: f64) -> f64 { 3.0 * x }`",
            )
            .to_compile_error();
        }
    };
    let parts = FnParts {
        vis: &func.vis,
        sig: &func.sig,
        block: &func.block,
        in_generic_impl: false,
        in_impl: false,
        impl_params: Vec::new(),
        impl_type_params: Vec::new(),
        impl_lifetime: None,
    };
    let Rules { tokens: mut rules, batched, .. } = rules_of(&parts, &args, &mut errors);
    if !batched && func.sig.receiver().is_none() && !args.reverse_only {
        rules.extend(batched::stub(&func.vis, &func.sig, true));
    }
    // The original must exist with this signature (non-generic functions: a generic one has no
    // single function-pointer type to check against).
    let check = if func.sig.generics.params.is_empty() {
        let name = &func.sig.ident;
        let inputs = func.sig.inputs.iter().map(|a| match a {
            syn::FnArg::Typed(pt) => unambiguous(&pt.ty),
            syn::FnArg::Receiver(r) => unambiguous(&r.ty),
        });
        let output = match &func.sig.output {
            syn::ReturnType::Default => quote!(()),
            syn::ReturnType::Type(_, ty) => unambiguous(ty),
        };
        quote_spanned!(func.sig.ident.span()=>
            const _: fn(#(#inputs),*) -> #output = #name;
        )
    } else {
        quote!()
    };
    match errors.finish() {
        Ok(()) => quote!(#check #rules),
        Err(errs) => quote!(#errs #check #rules),
    }
}

/// An `impl` block: the block untouched, then an inherent `impl` with every method's rules and
/// the method-call dispatch impls for the methods that take `self`.
fn expand_impl(imp: syn::ItemImpl, args: &parse::Args, mut errors: Errors) -> TokenStream {
    parse::user_trait_bounds(&imp.generics, &mut errors);
    if errors.has_errors() {
        // The `impl` as written, and the one real error (no rules, whose follow-up errors
        // would bury it).
        let errs = errors.finish().err();
        return quote!(#imp #errs);
    }
    let mut rules = Vec::new();
    let mut dispatch = Vec::new();
    for item in &imp.items {
        if let syn::ImplItem::Fn(f) = item {
            // The copy the rules are derived from, with `Self` written out.
            let mut f = f.clone();
            self_type::write_out_self(&mut f, &imp);
            let f = &f;
            let parts = FnParts {
                vis: &f.vis,
                sig: &f.sig,
                block: &f.block,
                in_generic_impl: imp
                    .generics
                    .params
                    .iter()
                    .any(|p| !matches!(p, syn::GenericParam::Lifetime(_))),
                in_impl: true,
                impl_params: imp
                    .generics
                    .params
                    .iter()
                    .filter_map(|p| match p {
                        syn::GenericParam::Type(t) => Some(t.ident.clone()),
                        syn::GenericParam::Const(c) => Some(c.ident.clone()),
                        syn::GenericParam::Lifetime(_) => None,
                    })
                    .collect(),
                impl_type_params: imp
                    .generics
                    .params
                    .iter()
                    .filter_map(|p| match p {
                        syn::GenericParam::Type(t) => Some(t.ident.clone()),
                        _ => None,
                    })
                    .collect(),
                impl_lifetime: type_lifetime(&imp),
            };
            let Rules { tokens, sig, derived_rrule, .. } = rules_of(&parts, args, &mut errors);
            rules.push(tokens);
            if let Some(sig) = sig {
                // `reverse_only` derives no forward rule for the forward dispatch to call.
                if !args.reverse_only {
                    dispatch.push(method_dispatch(&imp, &f.sig, &sig));
                }
                if derived_rrule {
                    dispatch.push(method_dispatch_reverse(&imp, &f.sig, &sig));
                }
            }
        }
    }
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    let errs = errors.finish().err();
    quote!(
        #imp
        #errs
        impl #impl_generics #self_ty #where_clause {
            #(#rules)*
        }
        #(#dispatch)*
    )
}

/// The rules of one function (see [`rules_of`]) and what its callers need to know of them.
struct Rules {
    tokens: TokenStream,
    /// The parsed signature, when it is usable.
    sig: Option<parse::Sig>,
    /// Whether a reverse rule was derived (not a stub).
    derived_rrule: bool,
    /// Whether the batched entry `NAME__lanes` was emitted (`batched.rs`).
    batched: bool,
    /// The function's twin, with `second_order` (`twin.rs`).
    twin: Option<twin::Twin>,
}

/// The rules of one function: generated, or stubs with the right signature when the function
/// has errors (so that the user sees the real errors, not one per call site).
fn rules_of(parts: &FnParts<'_>, args: &parse::Args, errors: &mut Errors) -> Rules {
    let before = errors.has_errors();
    let sig = parse::signature(parts.sig, errors);
    let lsig = lower::Signature::of(&parts.sig.ident, &sig)
        .with_generics(&parts.sig.generics, &parts.impl_type_params);
    let failed_signature = errors.has_errors() && !before;
    let stubbed = |sig: parse::Sig, usable: bool| Rules {
        tokens: stubs(parts, &sig),
        sig: usable.then_some(sig),
        derived_rrule: false,
        batched: false,
        twin: None,
    };
    if failed_signature {
        return stubbed(sig, false);
    }
    let mut local = Errors::new();
    // Asked for by `second_order`; a function generic over `T: Float` is its own twin.
    let twin = if args.second_order && float_params(&parts.sig.generics).is_empty() {
        if args.forward_only {
            local.error(
                parts.sig.ident.span(),
                "`second_order` concerns the reverse rule, which `forward_only` does not derive; give one of them",
            );
            None
        } else {
            twin::twin(parts).map_err(|(span, why)| local.error(span, why)).ok()
        }
    } else {
        None
    };
    let body = lower::lower(&lsig, parts.block, &mut local);
    if !float_params(&parts.sig.generics).is_empty() {
        nested_ad::refuse_in_generic(&body, &mut local);
    }
    let rules = if local.has_errors() {
        None
    } else {
        generate(parts, &sig, &body, args, twin.as_ref(), &mut local)
    };
    let failed = local.has_errors();
    errors.absorb(local);
    match rules {
        Some((tokens, derived_rrule, batched)) if !failed => {
            Rules { tokens, sig: Some(sig), derived_rrule, batched, twin }
        }
        _ => stubbed(sig, true),
    }
}

/// Whether `ty` is a read-only view of an ndarray array (`ArrayView1<f64>`, `ArrayView2<'_, f32>`,
/// `ArrayView<f64, D>`): an argument derived code holds as an owned array (`views::owned_arg`).
pub(crate) fn view_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
    && p.path.segments.last().is_some_and(|s| {
        let name = s.ident.to_string();
        name.starts_with("ArrayView") && !name.starts_with("ArrayViewMut")
    }))
}

/// `let mut a = owned_arg(a);` for each argument declared with a view type (see [`view_type`]),
/// at the entry of a derived rule.
pub(crate) fn view_args(body: &Body, names: &Names) -> TokenStream {
    let rt = rt();
    let lets = body
        .args()
        .filter(|l| body.locals[l.index()].ty.as_ref().is_some_and(view_type))
        .map(|l| {
            let x = names.local(l);
            quote!(#[allow(unused_mut)] let mut #x = #rt::owned_arg(#x);)
        });
    quote!(#(#lets)*)
}

/// The type a `Dual` of a value of type `ty` has: `Dual<T, <T as Primal>::Tangent>`, or a dual
/// of references for a reference type.
pub(crate) fn dual_type(ty: &syn::Type) -> TokenStream {
    let rt = rt();
    match ty {
        syn::Type::Reference(r) => {
            let lt = &r.lifetime;
            let m = &r.mutability;
            let inner = &r.elem;
            quote_spanned!(ty.span()=> #rt::Dual<&#lt #m #inner, &#lt #m <#inner as #rt::Primal>::TangentRef>)
        }
        // Not around a trait object: `<dyn A + B as ..>` needs them.
        syn::Type::Paren(p)
            if !matches!(&*p.elem, syn::Type::TraitObject(_) | syn::Type::ImplTrait(_)) =>
        {
            dual_type(&p.elem)
        }
        other => quote_spanned!(ty.span()=> #rt::Dual<#other, <#other as #rt::Primal>::Tangent>),
    }
}

/// The type a `CoDual` of a value of type `ty` has in a reverse-mode rule:
/// `CoDual<T, <T as Primal>::FData>`.
pub(crate) fn codual_type(ty: &syn::Type) -> TokenStream {
    let rt = rt();
    match ty {
        // `<&T as Primal>::FData` is `<T as Primal>::Shadow`; written so, the type has one
        // elided lifetime, not two.
        syn::Type::Reference(r) if r.mutability.is_none() => {
            let inner = &r.elem;
            quote_spanned!(ty.span()=> #rt::CoDual<#ty, <#inner as #rt::Primal>::Shadow>)
        }
        // Memory behind `&mut` is seen through a shared handle, so that pullbacks can restore it.
        syn::Type::Reference(r) => {
            let inner = &r.elem;
            quote_spanned!(ty.span()=> #rt::CoDual<<#inner as #rt::Primal>::Handle, <#inner as #rt::Primal>::Shadow>)
        }
        _ => quote_spanned!(ty.span()=> #rt::CoDual<#ty, <#ty as #rt::Primal>::FData>),
    }
}

/// The rdata type of a value of type `ty` (`NoRData` for every reference).
pub(crate) fn rdata_type(ty: &syn::Type) -> TokenStream {
    use syn::visit_mut::VisitMut;
    let rt = rt();
    match ty {
        syn::Type::Reference(_) => quote_spanned!(ty.span()=> #rt::NoRData),
        // A view's, as a reference's (and without its elided lifetime, which a pullback's type
        // in the result could not name).
        ty if view_type(ty) => quote_spanned!(ty.span()=> #rt::NoRData),
        _ => {
            // A reference inside the type (`Option<&[f64]>`, `(&[f64], &[f64])`): its lifetime
            // named `'static` here, since the pullback's type in the result cannot name an
            // argument's elided one. A reference's rdata is `NoRData` whatever its lifetime,
            // so this is the same type.
            let mut ty = ty.clone();
            StaticLifetimes.visit_type_mut(&mut ty);
            quote_spanned!(ty.span()=> <#ty as #rt::Primal>::RData)
        }
    }
}

/// Gives every reference in a type the lifetime `'static` (see [`rdata_type`]).
struct StaticLifetimes;

impl syn::visit_mut::VisitMut for StaticLifetimes {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        r.lifetime = Some(syn::Lifetime::new("'static", r.and_token.span));
        syn::visit_mut::visit_type_reference_mut(self, r);
    }
    fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
        if l.ident == "_" {
            *l = syn::Lifetime::new("'static", l.span());
        }
    }
}

/// Whether every type parameter of `generics` is `'static` by its bounds (`T: Float`, whose
/// supertraits include `'static`, or `T: 'static`), and there is no const parameter: then the
/// derived reverse rule's tapes and boxed pullback are `'static` and can come from thread-local
/// pools (a `static` cannot name a parameter, but a pool holds its tapes type-erased, and each
/// instantiation takes back only tapes of its own type). A bound is read by its name, so a
/// user's own trait called `Float` that is not `'static` fails to compile in the derived rule.
fn static_params(generics: &syn::Generics) -> bool {
    let is_static = |b: &syn::TypeParamBound| match b {
        syn::TypeParamBound::Lifetime(l) => l.ident == "static",
        b => is_float_bound(b),
    };
    generics.params.iter().all(|p| match p {
        syn::GenericParam::Lifetime(_) => true,
        syn::GenericParam::Const(_) => false,
        syn::GenericParam::Type(t) => param_bounded(generics, t, is_static),
    })
}

/// The type parameters of `generics` bounded by `Float` (read by name, as in
/// [`static_params`]).
fn float_params(generics: &syn::Generics) -> Vec<syn::Ident> {
    generics
        .type_params()
        .filter(|t| param_bounded(generics, t, is_float_bound))
        .map(|t| t.ident.clone())
        .collect()
}

/// `Float`, by the last segment of its path.
fn is_float_bound(b: &syn::TypeParamBound) -> bool {
    matches!(b, syn::TypeParamBound::Trait(t) if t.path.segments.last().is_some_and(|s| s.ident == "Float"))
}

/// Whether type parameter `t` has a bound that `pred` accepts, in its list or in the where
/// clause.
fn param_bounded(
    generics: &syn::Generics,
    t: &syn::TypeParam,
    pred: impl Fn(&syn::TypeParamBound) -> bool,
) -> bool {
    t.bounds.iter().any(&pred)
        || generics.where_clause.iter().flat_map(|w| &w.predicates).any(|w| {
            matches!(w, syn::WherePredicate::Type(pt)
                if matches!(&pt.bounded_ty, syn::Type::Path(tp) if tp.qself.is_none() && tp.path.is_ident(&t.ident))
                    && pt.bounds.iter().any(&pred))
        })
}

/// The signatures of `NAME_rrule_wrt` and `NAME_rrule`: the first with a const parameter, the
/// mask of the arguments that get a gradient (`rev::Wrt`), given by a first argument so that
/// callers need not name the other parameters. With `boxed` (the rule boxes its pullback, see
/// `Reverse::boxes_own_pullback`), every type parameter is bounded by `'static`, as a boxed
/// pullback must be.
fn rrule_signatures(
    func: &FnParts<'_>,
    sig: &parse::Sig,
    names: &Names,
    boxed: bool,
    wrt_suffix: &str,
) -> (TokenStream, TokenStream) {
    let rt = rt();
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let mask = reverse::wrt_mask();
    let params: Vec<TokenStream> = sig
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let l = names.local(Local((i + 1) as u32));
            let ty = codual_type(&a.ty);
            quote!(mut #l: #ty)
        })
        .collect();
    let ret = codual_type(&sig.ret);
    let ret_rdata = rdata_type(&sig.ret);
    let arg_rdata: Vec<TokenStream> = sig.args.iter().map(|a| rdata_type(&a.ty)).collect();
    let mut bounds: Vec<TokenStream> = Vec::new();
    let generic = |ty: &syn::Type| is_type_param(ty, generics);
    for ty in sig.args.iter().map(|a| &a.ty).chain(std::iter::once(&sig.ret)) {
        match ty {
            // A reference's rdata is `NoRData`; bound the referent (a bound on `&T` would need a
            // named lifetime).
            syn::Type::Reference(r) => {
                let inner = &r.elem;
                if generic(inner) {
                    bounds.push(quote_spanned!(inner.span()=> #inner: #rt::Primal));
                }
            }
            _ if !generic(ty) => {}
            _ => {
                bounds.push(quote_spanned!(ty.span()=> #ty: #rt::Primal));
                bounds.push(
                    quote_spanned!(ty.span()=> <#ty as #rt::Primal>::RData: #rt::rev::ZeroRData),
                );
            }
        }
    }
    if boxed {
        let own = generics.params.iter().filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        });
        for t in own.chain(&func.impl_type_params) {
            bounds.push(quote!(#t: 'static));
        }
    }
    let where_clause = where_clause(generics, &bounds);
    // The pullback captures no lifetime of the arguments: only the type and const parameters.
    let captured: Vec<&syn::Ident> =
        func.impl_params.iter().chain(type_and_const_params(generics)).collect();
    let gparams: Vec<TokenStream> = generics.params.iter().map(|p| quote!(#p)).collect();
    let ident = &func.sig.ident;
    let (name_wrt, name) = (
        format_ident!("{}_{}", ident, wrt_suffix, span = ident.span()),
        format_ident!("{}_rrule", ident, span = ident.span()),
    );
    let doc_wrt = format!(
        "[`{ident}_rrule`] computing gradients only for the arguments whose bit is set in the mask \
         (`value_and_gradient!` with `Const(..)` arguments calls it)."
    );
    let doc = format!(
        "Reverse-mode rule of [`{ident}`], derived by `#[differentiable]`: each argument paired \
         with its fdata; returns the result paired with its fdata, and the pullback from the \
         result's rdata to one rdata per argument."
    );
    let with_mask = quote!(
        #[doc = #doc_wrt]
        #[doc(hidden)]
        #[allow(clippy::type_complexity)]
        #vis fn #name_wrt<#(#gparams,)* const #mask: u64>(
            _: #rt::rev::Wrt<#mask>, #(#params),*
        ) -> (
            #ret,
            impl ::core::ops::FnOnce(#ret_rdata) -> (#(#arg_rdata,)*)
                + use<#(#captured,)* #mask>
        ) #where_clause
    );
    let plain = quote!(
        #[doc = #doc]
        #[allow(clippy::type_complexity)]
        #vis fn #name<#(#gparams),*>(#(#params),*) -> (
            #ret,
            impl ::core::ops::FnOnce(#ret_rdata) -> (#(#arg_rdata,)*) + use<#(#captured),*>
        ) #where_clause
    );
    (with_mask, plain)
}

/// Whether `ty` is one of the type parameters of `generics` (`T`). The rules bound only such
/// types by `Primal`: a bound on any other type (`[f64; N]` with a const `N`, `Pair<T>`,
/// `Vec<T>`) would shadow the runtime's or the derived impl, whose associated types would then
/// no longer normalise; the impl's own requirements follow from the parameters' bounds, and a
/// type without `Primal` is reported by the signature's `<T as Primal>::..` anyway.
fn is_type_param(ty: &syn::Type, generics: &syn::Generics) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| {
            generics.params.iter().any(|g| matches!(g, syn::GenericParam::Type(t) if t.ident == *i))
        })
}

/// For a body reverse mode does not cover yet: a `NAME_rrule` whose every use is a compile
/// error naming the reason (instead of a bare "cannot find function").
/// The bound that fails carries the span of the first statement outside the subset, so that
/// the error's note points at the user's code that needs it.
fn rrule_stub(func: &FnParts<'_>, sig: &parse::Sig, reason: &str, at: Span) -> TokenStream {
    let plain = rrule_stub_named(func, sig, reason, at, false);
    let wrt = rrule_stub_named(func, sig, reason, at, true);
    quote!(#plain #wrt)
}

/// The stub of `NAME_rrule`, or with `wrt` of `NAME_rrule_wrt` (which takes the mask first).
fn rrule_stub_named(
    func: &FnParts<'_>,
    sig: &parse::Sig,
    reason: &str,
    at: Span,
    wrt: bool,
) -> TokenStream {
    let vis = &func.vis;
    let suffix = if wrt { "rrule_wrt" } else { "rrule" };
    let name = format_ident!("{}_{}", func.sig.ident, suffix, span = func.sig.ident.span());
    let reason = format_ident!("{}", reason, span = at);
    let bound = quote_spanned!(at=>
        __R: ::mooncake_runtime::__private::rev::ReverseModeNotYet<
            ::mooncake_runtime::__private::rev::unsupported::#reason
        >,
    );
    let params: Vec<syn::Ident> = (0..sig.args.len() + usize::from(wrt))
        .map(|i| format_ident!("__A{}", i, span = Span::mixed_site()))
        .collect();
    let doc = format!(
        "Reverse mode does not cover [`{}`] yet (it uses {reason}); this stub makes every call a \
         compile error that says so.",
        func.sig.ident
    );
    let hidden = wrt.then(|| quote!(#[doc(hidden)]));
    quote!(
        #[doc = #doc]
        #hidden
        #[allow(dead_code, clippy::extra_unused_type_parameters)]
        #vis fn #name<#(#params,)* __R>(#(_: #params),*) -> __R
        where
            #bound
        {
            ::core::unreachable!()
        }
    )
}

fn frule_signature(func: &FnParts<'_>, sig: &parse::Sig, names: &Names) -> TokenStream {
    let rt = rt();
    let vis = &func.vis;
    let name = format_ident!("{}_frule", func.sig.ident, span = func.sig.ident.span());
    let generics = &func.sig.generics;
    let params = sig.args.iter().enumerate().map(|(i, a)| {
        let l = names.local(Local((i + 1) as u32));
        let ty = dual_type(&a.ty);
        quote!(mut #l: #ty)
    });
    let ret = dual_type(&sig.ret);
    // Every argument and the result must have a tangent type.
    let mut bounds: Vec<TokenStream> = Vec::new();
    for ty in sig.args.iter().map(|a| &a.ty).chain(std::iter::once(&sig.ret)) {
        let inner = match ty {
            syn::Type::Reference(r) => &*r.elem,
            t => t,
        };
        if is_type_param(inner, generics) {
            bounds.push(quote_spanned!(inner.span()=> #inner: #rt::Primal));
        }
    }
    let where_clause = where_clause(generics, &bounds);
    let doc = format!(
        "Forward-mode rule of [`{}`](Self), derived by `#[differentiable]`: each argument paired \
         with its tangent, the result paired with its directional derivative.",
        func.sig.ident
    );
    let doc = doc.replace("(Self)", "");
    let (impl_generics, _, _) = generics.split_for_impl();
    let _ = impl_generics;
    let gparams = &generics.params;
    quote!(
        #[doc = #doc]
        #vis fn #name<#gparams>(#(#params),*) -> #ret #where_clause
    )
}

/// The forward rule's code where block `b` leaves the function: `return` of the result, or the
/// panic as written (its names read as primals).
fn forward_exit(body: &Body, names: &Names, b: BlockId) -> TokenStream {
    let t = &body.blocks[b.index()].terminator;
    match &t.kind {
        TerminatorKind::Return => {
            let r = names.local(Local::RETURN);
            quote_spanned!(t.span=> return #r;)
        }
        TerminatorKind::Panic(tokens) => {
            let tokens = names.substitute_primals(tokens.clone());
            quote_spanned!(t.span=> #tokens;)
        }
        _ => quote!(),
    }
}

/// The forward rule's test of the `bool` local `l`: its primal.
fn forward_cond(names: &Names, l: Local) -> TokenStream {
    let l = names.local(l);
    quote!(#l.primal)
}

/// The rules of a function whose body lowered without errors, derived from its twin (`twin`,
/// with `second_order`) in reverse mode where there is one; with whether a reverse rule was
/// derived (not a stub) and whether the batched entry was emitted.
fn generate(
    func: &FnParts<'_>,
    sig: &parse::Sig,
    body: &Body,
    args: &parse::Args,
    twin: Option<&twin::Twin>,
    errors: &mut Errors,
) -> Option<(TokenStream, bool, bool)> {
    let problems = verify::verify(body);
    if !problems.is_empty() {
        errors.error(
            func.sig.ident.span(),
            format!("internal error in #[differentiable] (the IR verifier failed: {}); please report this", problems.join("; ")),
        );
        return None;
    }
    let Some(structured) = structure::structure(body) else {
        errors.error(
            func.sig.ident.span(),
            "internal error in #[differentiable]: irreducible control flow; please report this",
        );
        return None;
    };
    let names = Names::new(body);
    let mut fwd = forward::Forward::new(body, &names);
    fwd.debug = args.debug;
    let decls = local_declarations(body, &names, |t| Some(dual_type(t)));
    // In reverse mode a buffer local may be held by value or through a handle: its type is
    // left to inference (a constructor into it is given its element type instead).
    let rdecls_of = |b: &Body| {
        local_declarations(b, &Names::new(b), |t| {
            reverse::buffer_element(t).is_none().then(|| codual_type(t))
        })
    };
    let stmts = |b: BlockId| fwd.block(body, b);
    let exit = |b| forward_exit(body, &names, b);
    let cond = |l| forward_cond(&names, l);
    let code = codegen::emit(&structured, &names, &stmts, &exit, &cond);
    let signature = frule_signature(func, sig, &names);
    let allow = allow_attrs();
    let ret_local = names.local(Local::RETURN);
    let ret_ty = dual_type(&sig.ret);
    let primal = primal_path(func);
    let items = lower::body_items(func.block);
    let owned_views = view_args(body, &names);
    let rt = rt();
    let frule = quote!(
        #allow
        #[inline]
        #signature {
            let _ = #primal;
            // The dialect of one direction (the runtime's `fwd::dialect`).
            #[allow(unused_imports)]
            use #rt::fwd::dialect::one::{
                self as __fwd, FloatConstOperand as _, OtherConstOperand as _,
            };
            #[allow(dead_code)]
            const __N: usize = 1;
            #owned_views
            #items
            let mut #ret_local: #ret_ty;
            #decls
            #code
        }
    );
    // The reverse rule is derived from the function's generic twin where it has one
    // (`twin.rs`: generic over `__F: Float`, so that `hvp!` runs it on dual numbers), else from
    // the function as written; `NAME_rrule` keeps the function's own signature either way.
    let twin_parts = twin.map(|t| FnParts {
        vis: func.vis,
        sig: &t.sig,
        block: &t.block,
        in_generic_impl: false,
        in_impl: false,
        impl_params: Vec::new(),
        impl_type_params: Vec::new(),
        impl_lifetime: None,
    });
    let twin_src = twin_parts
        .as_ref()
        .and_then(|p| twin_source(p).map_err(|(span, why)| errors.error(span, why)).ok());
    let plain_rbody;
    let (rfunc, rsig, rstructured, rbody, why) = match (&twin_src, &twin_parts) {
        (Some((tsig, tstructured, tnormal)), Some(parts)) => {
            (parts, tsig, tstructured, tnormal, None)
        }
        _ => {
            plain_rbody = reverse::normalise(body);
            let why = func
                .impl_lifetime
                .map(|at| ("MethodsOfTypesWithLifetimes", at))
                .or_else(|| borrowed_rows(sig).map(|at| ("BuffersOfBorrowedRows", at)))
                .or_else(|| borrowed_tuple_parts(sig).map(|at| ("TuplesOfBorrowedBuffers", at)))
                .or_else(|| reverse::unsupported_before_normalise(body))
                .or_else(|| reverse::unsupported(&plain_rbody, sig));
            (func, sig, &structured, &plain_rbody, why)
        }
    };
    let derived_rrule = why.is_none() && !args.forward_only;
    let rrule = match why {
        _ if args.forward_only => quote!(),
        None => {
            let rnames = Names::new(rbody);
            let mut rev = reverse::Reverse::new(rbody, &rnames, rstructured, args.recursive);
            rev.ret_ty = codual_type(&rsig.ret);
            rev.pool_tapes = !rfunc.in_generic_impl && static_params(&rfunc.sig.generics);
            rev.debug = args.debug;
            rev.float_params = float_params(&rfunc.sig.generics);
            let twin = !std::ptr::eq(rfunc, func);
            rev.twin_calls = twin;
            let (forward_pass, pullback, _) = rev.generate(rstructured);
            let boxed = rev.boxes_own_pullback();
            // The function's own signatures; and the twin's rule's, when there is one.
            let (wrt_signature, wrapper) = rrule_signatures(func, sig, &names, boxed, "rrule_wrt");
            let signature = if twin {
                rrule_signatures(rfunc, rsig, &names, boxed, "rrule_twin").0
            } else {
                wrt_signature.clone()
            };
            let ret_codual = codual_type(&rsig.ret);
            let ret_rdata = rdata_type(&rsig.ret);
            let rdecls = rdecls_of(rbody);
            // `NAME_rrule` is `NAME_rrule_wrt` with every argument's gradient wanted.
            let wrt_path = own_rule_path(func, "rrule_wrt");
            let arg_locals = (1..=sig.args.len()).map(|i| names.local(Local(i as u32)));
            let pullback = quote!(move |__ybar: #ret_rdata| { #pullback });
            // A rule that calls others hides its pullback's type (see
            // `Reverse::boxes_own_pullback`): in a box from a pool where it can have one (no
            // type or const parameters), else in a fresh box.
            let pullback = match (boxed, rev.pool_tapes) {
                (false, _) => pullback,
                (true, true) => quote!({
                    ::std::thread_local! {
                        static __PULLBACKS: #rt::rev::TapePool =
                            const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                    }
                    let __pb = #rt::rev::pool_pullback(&__PULLBACKS, #pullback);
                    move |__ybar: #ret_rdata| __pb.call(__ybar)
                }),
                (true, false) => quote!({
                    let __pb: ::std::boxed::Box<dyn ::core::ops::FnOnce(_) -> _> =
                        ::std::boxed::Box::new(#pullback);
                    __pb
                }),
            };
            // Derived from the twin: `NAME_rrule_twin` is the rule, generic over `__F`, and
            // `NAME_rrule_wrt` its instance at `f64`, with the function's own signature (the
            // gradient macros' inference needs the parameters' types: `vec![1.0]` is
            // `Vec<{float}>` until a parameter fixes it). Otherwise `NAME_rrule_twin` is
            // another name of `NAME_rrule_wrt`, which `hvp!` calls.
            let arg_locals: Vec<_> = arg_locals.collect();
            let instance = if twin {
                let twin_path = own_rule_path(func, "rrule_twin");
                let mask = reverse::wrt_mask();
                let marker = order_marker(func, true);
                quote!(
                    #allow
                    #[inline]
                    #wrt_signature {
                        #twin_path(#rt::rev::Wrt::<#mask>, #(#arg_locals),*)
                    }
                    #marker
                )
            } else {
                twin_alias(func)
            };
            quote!(
                #allow
                #[inline]
                #signature {
                    let _ = #primal;
                    #items
                    let mut #ret_local: #ret_codual;
                    #rdecls
                    #forward_pass
                    (#ret_local, #pullback)
                }
                #instance
                #allow
                #[inline]
                #wrapper {
                    #wrt_path(#rt::rev::Wrt::<{ u64::MAX }>, #(#arg_locals),*)
                }
            )
        }
        Some((reason, span)) => {
            let stub = rrule_stub(func, sig, reason, span);
            let alias = twin_alias(func);
            quote!(#stub #alias)
        }
    };
    if args.forward_only && args.reverse_only {
        errors.error(
            func.sig.ident.span(),
            "`forward_only` and `reverse_only` exclude each other; give at most one",
        );
    }
    let batched = !args.reverse_only && batched::qualifies(func, sig, body);
    let lanes = if batched { batched::items(func, sig, body, &code, &names) } else { quote!() };
    let frule = if args.reverse_only { quote!(#rrule) } else { quote!(#frule #rrule #lanes) };
    if args.dump_ir
        || std::env::var("MOONCAKE_DUMP_IR").is_ok_and(|v| v == "1" || func.sig.ident == v)
    {
        eprintln!("== #[differentiable] {}: primal IR\n{body}", func.sig.ident);
        eprintln!("== structured\n{structured}");
        eprintln!("== forward transform\n{}", forward::forward_text(body));
        eprintln!("== forward rule (tokens)\n{frule}");
    }
    Some((frule, derived_rrule, batched))
}

/// `use NAME_rrule_wrt as NAME_rrule_twin;` beside a free function whose reverse rule is not
/// derived from a twin: the name `hvp!` and `hessian!` call (see `twin.rs`); a rule generic over
/// `T: Float` is its own twin. Nothing for a method (a `use` cannot sit in an `impl` block;
/// `hvp!` calls `Type::f_rrule_wrt` for a path through a type).
fn twin_alias(func: &FnParts<'_>) -> TokenStream {
    if is_associated(func) {
        return TokenStream::new();
    }
    let ident = &func.sig.ident;
    let (wrt, twin) = (
        format_ident!("{}_rrule_wrt", ident, span = ident.span()),
        format_ident!("{}_rrule_twin", ident, span = ident.span()),
    );
    let vis = func.vis;
    let marker = order_marker(func, !float_params(&func.sig.generics).is_empty());
    quote!(
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #wrt as #twin;
        #marker
    )
}

/// `NAME__order`, beside a free function: a unit struct that implements `rev::FloatGeneric`
/// when the function's `NAME_rrule_twin` is generic over the float (`float_generic`: the
/// function is generic over `T: Float` or has a twin). The reverse rule of another function's
/// twin checks it before calling `NAME_rrule_twin` (`twin.rs`), so that calling a function over
/// `f64` from a `second_order` function is an error that says what to do, at the call.
pub(crate) fn order_marker(func: &FnParts<'_>, float_generic: bool) -> TokenStream {
    if is_associated(func) {
        return TokenStream::new();
    }
    let ident = &func.sig.ident;
    let name = format_ident!("{}{}", ident, twin::ORDER_MARKER, span = ident.span());
    let vis = func.vis;
    let rt = rt();
    let imp = float_generic.then(|| quote!(impl #rt::rev::FloatGeneric for #name {}));
    quote!(
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name;
        #imp
    )
}

/// The twin's signature, structured program and body normalised for reverse mode, if its
/// lowering succeeds, every statement is covered by rules generic over `T: Float`
/// ([`twin::uncovered`]) and reverse mode supports it; else where and why not.
fn twin_source(parts: &FnParts<'_>) -> Result<(parse::Sig, structure::Node, Body), twin::Refusal> {
    let name = parts.sig.ident.span();
    let mut scratch = Errors::new();
    let sig = parse::signature(parts.sig, &mut scratch);
    let lsig = lower::Signature::of(&parts.sig.ident, &sig)
        .with_generics(&parts.sig.generics, &parts.impl_type_params);
    let mut body = lower::lower(&lsig, parts.block, &mut scratch);
    if let Some(e) = scratch.take_first() {
        return Err(twin::refusal(e.span(), &format!("its copy could not be lowered ({e})")));
    }
    twin::retype_float_constants(&mut body);
    if let Some((span, what)) = twin::uncovered(&body) {
        return Err(twin::refusal(span, &what));
    }
    let problems = verify::verify(&body);
    let structured = structure::structure(&body);
    let (true, Some(structured)) = (problems.is_empty(), structured) else {
        return Err(twin::refusal(name, "its copy failed the IR's checks (please report this)"));
    };
    let rbody = reverse::normalise(&body);
    if let Some((reason, span)) =
        reverse::unsupported_before_normalise(&body).or_else(|| reverse::unsupported(&rbody, &sig))
    {
        return Err(twin::refusal(span, reason));
    }
    Ok((sig, structured, rbody))
}

/// `let mut __lN;` for every local that is assigned, typed where the user wrote a type.
fn local_declarations(
    body: &Body,
    names: &Names,
    typed: fn(&syn::Type) -> Option<TokenStream>,
) -> TokenStream {
    let mut assigned = vec![false; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, _) = &s.kind
                && p.projections.is_empty()
            {
                assigned[p.local.index()] = true;
            }
        }
    }
    // Written token by token into one stream: a `quote!` per local was 3-4% of an expansion.
    use proc_macro2::{Ident, Punct, Spacing, TokenTree};
    let mut out = TokenStream::new();
    for l in (body.n_args + 1..body.locals.len()).filter(|l| assigned[*l]) {
        let decl = &body.locals[l];
        let span = decl.span;
        let ty = decl.ty.as_ref().and_then(typed);
        let punct = |c| {
            let mut p = Punct::new(c, Spacing::Alone);
            p.set_span(span);
            TokenTree::Punct(p)
        };
        out.extend([
            TokenTree::Ident(Ident::new("let", span)),
            TokenTree::Ident(Ident::new("mut", span)),
            TokenTree::Ident(names.local(Local(l as u32))),
        ]);
        if let Some(ty) = ty {
            out.extend([punct(':')]);
            out.extend(ty);
        }
        out.extend([punct(';')]);
    }
    out
}

/// When the function has errors: rules with the right signature and a body that is never
/// reached, so that the user sees the real errors and not one per call site.
fn stubs(func: &FnParts<'_>, sig: &parse::Sig) -> TokenStream {
    let names = Names::with_locals(sig.args.len() + 1);
    let signature = frule_signature(func, sig, &names);
    let allow = allow_attrs();
    quote!(
        #allow
        #signature {
            ::core::unreachable!("#[differentiable] failed to expand this function")
        }
    )
}

/// What both dispatch generators start from: how the method takes `self`, its key (the hash of
/// its name) and the bounds of the impls; `None` for a function without `self`, or a generic
/// method, which cannot be named as one rule (it stays callable as `Type::method(..)`).
fn dispatch_basis(
    imp: &syn::ItemImpl,
    fsig: &syn::Signature,
    sig: &parse::Sig,
) -> Option<(parse::Receiver, u64, Vec<TokenStream>)> {
    let rt = rt();
    let recv = sig.args.first().and_then(|a| a.receiver)?;
    if !fsig.generics.params.is_empty() {
        return None;
    }
    let self_ty = &imp.self_ty;
    // A generic impl bounds its type parameters, not `Self`: a bound on `Self` would shadow the
    // derived impl, whose associated types (`FData`, `Handle`, `TangentRef`) would then no
    // longer normalise.
    let params: Vec<&syn::Ident> = imp
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    // An impl generic over constants or lifetimes only (`impl<const N: usize> State<N>`) needs
    // no bound: the derived impl has none for them, and `Self: Primal` would shadow it.
    let mut bounds = if imp.generics.params.is_empty() {
        vec![quote!(#self_ty: #rt::Primal)]
    } else {
        params.iter().map(|t| quote!(#t: #rt::Primal)).collect()
    };
    if let Some(w) = &imp.generics.where_clause {
        bounds.extend(w.predicates.iter().map(|p| quote!(#p)));
    }
    Some((recv, forward::method_key(&fsig.ident.to_string()), bounds))
}

/// The `MethodFrule` impls that let `x.method(args)` in derived code find `method`'s rule,
/// for each way the receiver can be held (by value, behind `&`, behind `&mut`).
fn method_dispatch(imp: &syn::ItemImpl, fsig: &syn::Signature, sig: &parse::Sig) -> TokenStream {
    let rt = rt();
    let Some((recv, key, bounds)) = dispatch_basis(imp, fsig, sig) else {
        return quote!();
    };
    let self_ty = &imp.self_ty;
    let rule = format_ident!("{}_frule", fsig.ident, span = fsig.ident.span());
    let arg_tys: Vec<TokenStream> = sig.args[1..].iter().map(|a| dual_type(&a.ty)).collect();
    let ret = dual_type(&sig.ret);
    let gparams = &imp.generics.params;
    let extra = |lts: &[&str]| -> TokenStream {
        let lts = lts.iter().map(|l| syn::Lifetime::new(l, Span::call_site()));
        quote!(#(#lts,)* #gparams)
    };
    let tangent = quote!(<#self_ty as #rt::Primal>::Tangent);
    let tref = quote!(<#self_ty as #rt::Primal>::TangentRef);
    let make =
        |generics: TokenStream, holder: TokenStream, receiver: TokenStream, value: TokenStream| {
            quote!(
                #[automatically_derived]
                impl<#generics> #rt::fwd::MethodFrule<#key, #self_ty> for &'__b mut #holder
                where #(#bounds),*
                {
                    type Receiver = #receiver;
                    type Rule = fn(#receiver #(, #arg_tys)*) -> #ret;
                    #[inline(always)]
                    fn method_frule(self) -> (Self::Receiver, Self::Rule) {
                        (#value, <#self_ty>::#rule)
                    }
                }
            )
        };
    let owned = quote!(#rt::Dual<#self_ty, #tangent>);
    let shared = quote!(#rt::Dual<&'__a #self_ty, &'__c #tref>);
    let unique = quote!(#rt::Dual<&'__a mut #self_ty, &'__c mut #tref>);
    match recv {
        parse::Receiver::Ref => {
            let r_b = quote!(#rt::Dual<&'__b #self_ty, &'__b #tref>);
            let r_a = quote!(#rt::Dual<&'__a #self_ty, &'__c #tref>);
            let mut out = make(
                extra(&["'__b"]),
                owned,
                r_b.clone(),
                quote!(#rt::Dual::new(&self.primal, &self.tangent)),
            );
            out.extend(make(extra(&["'__a", "'__c", "'__b"]), shared, r_a, quote!(*self)));
            out.extend(make(
                extra(&["'__a", "'__c", "'__b"]),
                unique,
                r_b,
                quote!(#rt::Dual::new(&*self.primal, &*self.tangent)),
            ));
            out
        }
        parse::Receiver::Mut => {
            let r_b = quote!(#rt::Dual<&'__b mut #self_ty, &'__b mut #tref>);
            let mut out = make(
                extra(&["'__b"]),
                owned,
                r_b.clone(),
                quote!(#rt::Dual::new(&mut self.primal, &mut self.tangent)),
            );
            out.extend(make(
                extra(&["'__a", "'__c", "'__b"]),
                unique,
                r_b,
                quote!(#rt::Dual::new(&mut *self.primal, &mut *self.tangent)),
            ));
            out
        }
        parse::Receiver::Value => {
            let r = quote!(#rt::Dual<#self_ty, #tangent>);
            let clone = |p: TokenStream| quote!(#rt::Dual::new(::core::clone::Clone::clone(#p.primal), ::core::clone::Clone::clone(#p.tangent)));
            let mut out = make(extra(&["'__b"]), owned, r.clone(), clone(quote!(&self)));
            out.extend(make(
                extra(&["'__a", "'__c", "'__b"]),
                shared,
                r.clone(),
                clone(quote!(self)),
            ));
            out.extend(make(extra(&["'__a", "'__c", "'__b"]), unique, r, clone(quote!(&*self))));
            out
        }
    }
}

/// The impls that let `x.method(args)` in derived reverse-mode code find `method`'s reverse
/// rule (see the runtime's `rev::UserMethodRrule`): for each way the receiver can be held that
/// the method allows, a `RecvMarker` impl on the receiver's `CoDual` type naming a marker, and a
/// `UserMethodRrule` impl on the marker that calls the rule. `&self` methods take receivers
/// behind `&` (as they are), held by value (lent with a fresh shadow, whose gradient becomes the
/// receiver's) and behind `&mut` (a copy read out of the handle, with the handle's shadow);
/// `&mut self` methods receivers behind `&mut` (a value held by the function is refused with a
/// compile error naming the reason); `self` methods receivers held by value and, for a `Copy`
/// type, behind `&` (a copy is passed; its gradient goes into the shadow). A generic `impl`
/// bounds its type parameters by `Primal` rather than `Self` (see [`dispatch_basis`]), so that
/// `<Self as Primal>::FData` and `::Handle` normalise through the derived impl.
fn method_dispatch_reverse(
    imp: &syn::ItemImpl,
    fsig: &syn::Signature,
    sig: &parse::Sig,
) -> TokenStream {
    let rt = rt();
    let Some((recv, key, bounds)) = dispatch_basis(imp, fsig, sig) else {
        return quote!();
    };
    let self_ty = &imp.self_ty;
    let rule = format_ident!("{}_rrule", fsig.ident, span = fsig.ident.span());
    let lt = syn::Lifetime::new("'__b", Span::call_site());
    let arg_tys: Vec<TokenStream> = sig.args[1..]
        .iter()
        .map(|a| {
            let mut ty = a.ty.clone();
            name_elided_lifetimes(&mut ty, &lt);
            codual_type(&ty)
        })
        .collect();
    let arg_rdata: Vec<TokenStream> = sig.args[1..].iter().map(|a| rdata_type(&a.ty)).collect();
    let idx: Vec<syn::Index> = (0..arg_tys.len()).map(syn::Index::from).collect();
    let ridx: Vec<syn::Index> = (1..=arg_tys.len()).map(syn::Index::from).collect();
    let ret = &sig.ret;
    let ret_codual = codual_type(ret);
    let ret_rdata = rdata_type(ret);
    let gparams = &imp.generics.params;
    // `use<..>` lists the parameters' names only: `use<T: Float>` does not parse (found by the
    // fuzz test).
    let gnames: Vec<TokenStream> = imp
        .generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Lifetime(l) => {
                let l = &l.lifetime;
                quote!(#l)
            }
            syn::GenericParam::Type(t) => {
                let i = &t.ident;
                quote!(#i)
            }
            syn::GenericParam::Const(c) => {
                let i = &c.ident;
                quote!(#i)
            }
        })
        .collect();
    let primal = quote!(#rt::Primal);
    let shadow = quote!(<#self_ty as #primal>::Shadow);
    let fdata = quote!(<#self_ty as #primal>::FData);
    let handle = quote!(<#self_ty as #primal>::Handle);
    // One kind of receiver: the marker impl on its `CoDual` type, and the rule impl on the
    // marker. `body` binds `__y` and `__pb` (the inner rule's pullback, or one of the same
    // shape), changing the caller's receiver `__recv` where the method does, `back` maps the inner pullback's results `__r` and the receiver's cotangent
    // after the call `__ra` to the receiver's before it. `extra` bounds sit under `for<..>`,
    // checked at use, so that a type without them only loses the impl.
    let kind = |marker: TokenStream,
                recv_ty: TokenStream,
                recv_rdata: TokenStream,
                body: TokenStream,
                back: TokenStream,
                extra: TokenStream,
                call: TokenStream| {
        quote!(
            #[automatically_derived]
            impl<'__a, #gparams> #rt::rev::RecvMarker<#key, #self_ty> for #recv_ty where #(#bounds,)* {
                type Marker = #rt::rev::#marker<#self_ty>;
            }
            #[automatically_derived]
            impl<#gparams> #rt::rev::UserMethodRrule<#key, #self_ty> for #rt::rev::#marker<#self_ty>
            where #(#bounds,)* #extra
            {
                type Recv<'__a> = #recv_ty;
                type Args<'__b> = (#(#arg_tys,)*);
                type Out = #ret;
                type RecvRData = #recv_rdata;
                type Rets = (#recv_rdata, #(#arg_rdata,)*);
                #[inline(always)]
                #[allow(clippy::type_complexity)]
                fn method_rrule<'__a, '__b>(
                    self,
                    __recv: &mut Self::Recv<'__a>,
                    __args: Self::Args<'__b>,
                ) -> (
                    #ret_codual,
                    impl ::core::ops::FnOnce(#ret_rdata, #recv_rdata) -> Self::Rets + use<#(#gnames),*>,
                ) {
                    #body
                    (__y, move |__ybar, __ra: #recv_rdata| {
                        let __r = #call;
                        (#back, #(__r.#ridx,)*)
                    })
                }
            }
        )
    };
    let args_after = quote!(#(, __args.#idx)*);
    // The receiver is passed on as a copy of the `CoDual` (a reference or a handle, and
    // shadows, which alias; a clone for `self` methods).
    let direct = quote!(
        let (__y, __pb) = <#self_ty>::#rule(::core::clone::Clone::clone(&*__recv) #args_after);
    );
    // By value, the receiver's rdata after the call adds to what the method gives.
    let add_ra = quote!({
        let mut __rd = __r.0;
        #rt::TangentSpace::increment(&mut __rd, &__ra);
        __rd
    });
    let by_ref = quote!(#rt::CoDual<&'__a #self_ty, #shadow>);
    let by_value = quote!(#rt::CoDual<#self_ty, #fdata>);
    let by_handle = quote!(#rt::CoDual<#handle, #shadow>);
    let no_rdata = quote!(#rt::NoRData);
    let value_rdata = quote!(<#self_ty as #primal>::RData);
    let ignore_ra = quote!({
        let _ = __ra;
        __r.0
    });
    let plain = quote!(__pb(__ybar));
    match recv {
        parse::Receiver::Ref => {
            let mut out = kind(
                quote!(ByRef),
                by_ref,
                no_rdata.clone(),
                direct,
                ignore_ra.clone(),
                quote!(),
                plain.clone(),
            );
            // Held by value: lent with a fresh shadow; the pullback turns what the shadow
            // gathered into the receiver's fdata and rdata.
            out.extend(kind(
                quote!(ByValue),
                by_value,
                value_rdata.clone(),
                quote!(
                    let __shadow = #primal::zero_shadow(&__recv.primal);
                    let (__y, __inner) = <#self_ty>::#rule(
                        #rt::CoDual::new(&__recv.primal, ::core::clone::Clone::clone(&__shadow))
                        #args_after
                    );
                    let __fdata = ::core::clone::Clone::clone(&__recv.fdata);
                    let __pb = move |__ybar| {
                        let __r = __inner(__ybar);
                        let __back = #rt::rev::ValueBack::<#self_ty>::new(__shadow, __fdata);
                        (#rt::rev::give_back(__back), #(__r.#ridx,)*)
                    };
                ),
                add_ra.clone(),
                quote!(),
                plain.clone(),
            ));
            // Behind `&mut`: a copy read out of the handle is lent, with the handle's shadow.
            out.extend(kind(
                quote!(ByHandle),
                by_handle,
                no_rdata,
                quote!(
                    let __value = <#self_ty as #rt::FromHandle>::from_handle(&__recv.primal);
                    let (__y, __pb) = <#self_ty>::#rule(
                        #rt::CoDual::new(&__value, ::core::clone::Clone::clone(&__recv.fdata))
                        #args_after
                    );
                ),
                ignore_ra,
                quote!(for<'__x> #self_ty: #rt::FromHandle),
                plain,
            ));
            out
        }
        parse::Receiver::Mut => {
            let mut out =
                kind(quote!(ByHandle), by_handle, no_rdata, direct, ignore_ra, quote!(), plain);
            // A value the function holds: moved into a fresh handle and shadow for the call and
            // copied back. The receiver's cotangent after the call goes into that shadow before
            // the method's pullback runs, and what the shadow holds after it (the gradient with
            // respect to the value before the call) becomes the receiver's fdata and rdata.
            out.extend(kind(
                quote!(ByValue),
                by_value,
                value_rdata.clone(),
                quote!(
                    let __handle = #primal::to_handle(&__recv.primal);
                    let __shadow = #primal::zero_shadow(&__recv.primal);
                    let (__y, __inner) = <#self_ty>::#rule(
                        #rt::CoDual::new(
                            ::core::clone::Clone::clone(&__handle),
                            ::core::clone::Clone::clone(&__shadow),
                        )
                        #args_after
                    );
                    #primal::load_handle(&mut __recv.primal, &__handle);
                    let __after_fdata = #primal::zero_fdata(&__recv.primal);
                    let __fdata = ::core::mem::replace(
                        &mut __recv.fdata,
                        ::core::clone::Clone::clone(&__after_fdata),
                    );
                    let __pb = move |(__ybar, __ra): (#ret_rdata, #value_rdata)| {
                        let __after_t = <#self_ty as #primal>::join_tangent(&__after_fdata, __ra);
                        #rt::FData::increment_from(
                            &__shadow,
                            &<#self_ty as #primal>::tangent_to_shadow(__after_t),
                        );
                        let __r = __inner(__ybar);
                        let __back = #rt::rev::ValueBack::<#self_ty>::new(__shadow, __fdata);
                        (#rt::rev::give_back(__back), #(__r.#ridx,)*)
                    };
                ),
                quote!(__r.0),
                quote!(),
                quote!(__pb((__ybar, __ra))),
            ));
            out
        }
        parse::Receiver::Value => {
            let mut out = kind(
                quote!(ByValue),
                by_value,
                value_rdata,
                direct,
                add_ra,
                quote!(),
                plain.clone(),
            );
            // Behind `&`, for a `Copy` type (`r.m()` of `r: &P`, a receiver lent to its own
            // arguments): a copy of the value is passed, and the receiver's gradient goes into
            // the shadow behind the reference.
            out.extend(kind(
                quote!(ByRef),
                by_ref,
                no_rdata,
                quote!(
                    let __value: #self_ty = *__recv.primal;
                    let (__y, __inner) = <#self_ty>::#rule(
                        #rt::CoDual::new(__value, #primal::zero_fdata(&__value))
                        #args_after
                    );
                    let __shadow = ::core::clone::Clone::clone(&__recv.fdata);
                    let __pb = move |__ybar| {
                        let __r = __inner(__ybar);
                        #primal::add_rdata_to_shadow(&__value, &__shadow, __r.0);
                        (#rt::NoRData, #(__r.#ridx,)*)
                    };
                ),
                ignore_ra,
                quote!(for<'__x> #self_ty: ::core::marker::Copy),
                plain,
            ));
            out
        }
    }
}

/// Gives every reference in `ty` without a lifetime the lifetime `lt`.
fn name_elided_lifetimes(ty: &mut syn::Type, lt: &syn::Lifetime) {
    struct Namer<'l>(&'l syn::Lifetime);
    impl syn::visit_mut::VisitMut for Namer<'_> {
        fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
            if r.lifetime.is_none() {
                r.lifetime = Some(self.0.clone());
            }
            syn::visit_mut::visit_type_reference_mut(self, r);
        }
    }
    syn::visit_mut::VisitMut::visit_type_mut(&mut Namer(lt), ty);
}
