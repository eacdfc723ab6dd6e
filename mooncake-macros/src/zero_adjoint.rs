//! `zero_adjoint!`: declares that existing functions have derivative zero (seed 004,
//! "Functions with Zero Adjoint") and generates their rules where it is invoked.
//!
//! ```text
//! zero_adjoint! {
//!     fn count_positive(x: &[f64]) -> usize;
//!     pub fn my_mod::tag<T: Float>(x: T, n: usize) -> f64;
//! }
//! ```
//!
//! For each signature `fn path::name(a: A, ..) -> R`:
//!
//! * `name_frule(a: Dual<A, <A as Primal>::Tangent>, ..) -> Dual<R, <R as Primal>::Tangent>`
//!   (`Dual<&T, &<T as Primal>::TangentRef>` for `a: &T`) calls the primal on the primals and
//!   pairs the result with `Primal::zero_tangent`;
//! * `name_rrule(a: CoDual<A, <A as Primal>::FData>, ..)` (`CoDual<&T, <T as Primal>::Shadow>`
//!   for `a: &T`) computes every argument's zero rdata (`Primal::zero_rdata`, `NoRData` for a
//!   reference) before the call, calls the primal, returns the result with fresh zero fdata
//!   (`Primal::constant_fdata`: nothing reads the result's gradient, and types whose rules can
//!   skip adding into it say so), and a pullback that returns those zero rdata. The pullback captures
//!   no lifetime (`+ use<..>` lists only the type and const parameters).
//!
//! Refused with a compile error: `&mut` arguments (a function that writes through a `&mut`
//! moves values around, so its adjoint is not zero in general), outputs that contain a
//! reference (the output would alias an input, and a fresh zero shadow would be wrong; the
//! seed's warning), `impl Trait`, receivers and patterns.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use crate::rule_sig::{Errors, RuleSig, allow_attrs, parse_list, rt};

const WHY_MUT: &str = "a function that writes through a `&mut` argument is not a zero-adjoint \
    function in general (a write moves values from one place to another, and their gradients \
    with them); write its rules by hand, or derive them with `#[differentiable]`";

const WHY_REF_OUT: &str = "`zero_adjoint!` cannot declare a function whose output is or holds \
    a reference: the output would alias an input, so giving it a fresh zero shadow would be \
    wrong (seed 004: only correct when the output aliases no input); return an owned value, or \
    write the rules by hand";

/// The entry point: `zero_adjoint! { sig; sig; .. }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let parsed = syn::parse::Parser::parse2(
        |input: syn::parse::ParseStream<'_>| {
            parse_list(
                input,
                |_| Ok(()),
                "`zero_adjoint! { fn name(x: &[f64], n: usize) -> f64; }`",
            )
        },
        input,
    );
    let sigs = match parsed {
        Ok(s) => s,
        Err(e) => return e.to_compile_error(),
    };
    let mut out = TokenStream::new();
    for (sig, ()) in &sigs {
        let mut local = Errors::default();
        sig.check(&mut local, WHY_MUT, WHY_REF_OUT);
        if local.any() {
            out.extend(local.to_compile_errors());
        } else {
            out.extend(rules(sig));
            out.extend(sig.wrt_forwarder());
        }
    }
    out
}

fn rules(sig: &RuleSig) -> TokenStream {
    let rt = rt();
    let vis = &sig.vis;
    let attrs = &sig.attrs;
    let allow = allow_attrs();
    let (params, where_clause) = sig.generics_and_bounds();
    let call = sig.call_path(&sig.path);
    // The call is spanned at the user's name, so that a declared signature that is not the
    // function's is reported there.
    let span = sig.name().span();
    let args_primal: Vec<TokenStream> =
        sig.arg_idents("__a").iter().map(|a| quote_spanned!(span=> #a.primal)).collect();
    let call = quote_spanned!(span=> #call(#(#args_primal),*));
    let ret = &sig.ret;
    let shown = sig.display_path();
    let args = sig.arg_idents("__a");
    let rdata = sig.arg_idents("__r");
    let y = syn::Ident::new("__y", proc_macro2::Span::mixed_site());
    let t = syn::Ident::new("__t", proc_macro2::Span::mixed_site());
    let captured = sig.type_and_const_params();

    // Forward mode.
    let fparams = sig.args.iter().zip(&args).map(|(arg, a)| match arg.referent() {
        Some(inner) => quote!(#a: #rt::Dual<&#inner, &<#inner as #rt::Primal>::TangentRef>),
        None => {
            let ty = &arg.ty;
            quote!(#a: #rt::Dual<#ty, <#ty as #rt::Primal>::Tangent>)
        }
    });
    let frule = sig.rule_name("frule");
    let fdoc = format!(
        "Forward-mode rule of `{shown}`, declared by `zero_adjoint!`: the primal result with a \
         zero tangent."
    );
    // Reverse mode.
    let (rparams, rtypes) = (sig.reverse_params(&args), sig.rdata_types());
    let rvalues =
        sig.args.iter().zip(&args).zip(&rdata).map(|((arg, a), r)| match arg.referent() {
            Some(_) => quote!(let #r = #rt::NoRData;),
            None => {
                let ty = &arg.ty;
                quote!(let #r = <#ty as #rt::Primal>::zero_rdata(&#a.primal);)
            }
        });
    let rrule = sig.rule_name("rrule");
    let rdoc = format!(
        "Reverse-mode rule of `{shown}`, declared by `zero_adjoint!`: the primal result with \
         fresh zero fdata, and a pullback that returns zero rdata for every argument."
    );
    let fn_token = &sig.fn_token;

    quote!(
        #(#attrs)*
        #[doc = #fdoc]
        #allow
        #[inline]
        #vis #fn_token #frule #params(#(#fparams),*) -> #rt::Dual<#ret, <#ret as #rt::Primal>::Tangent>
        #where_clause
        {
            let #y: #ret = #call;
            let #t = <#ret as #rt::Primal>::zero_tangent(&#y);
            #rt::Dual::new(#y, #t)
        }

        #(#attrs)*
        #[doc = #rdoc]
        #allow
        #[inline]
        #vis #fn_token #rrule #params(#(#rparams),*) -> (
            #rt::CoDual<#ret, <#ret as #rt::Primal>::FData>,
            impl ::core::ops::FnOnce(<#ret as #rt::Primal>::RData) -> (#(#rtypes,)*)
                + use<#(#captured),*>
        )
        #where_clause
        {
            #(#rvalues)*
            let #y: #ret = #call;
            let #t = <#ret as #rt::Primal>::constant_fdata(&#y);
            (
                #rt::CoDual::new(#y, #t),
                move |_: <#ret as #rt::Primal>::RData| (#(#rdata,)*),
            )
        }
    )
}
