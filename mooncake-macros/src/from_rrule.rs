//! `from_rrule!`: adapts a rule written in the non-mutating ChainRules style into a full
//! reverse-mode rule (seed 004, "Using ChainRules.jl").
//!
//! ```text
//! from_rrule! {
//!     fn my_dot(a: &[f64], b: &[f64]) -> f64 => my_dot_chainrule;
//! }
//! ```
//!
//! The chain rule takes the primal arguments as the primal does and returns
//! `(value, pullback)`, where the pullback maps the output's cotangent, as the output's
//! *tangent* type, to a tuple of the arguments' cotangents, as their *tangent* types
//! (`Vec<f64>` for a slice). For each signature `fn path::name(a: A, ..) -> R => chain`,
//! `name_rrule` takes `CoDual`s (`CoDual<&T, <T as Primal>::Shadow>` for `a: &T`,
//! `CoDual<A, <A as Primal>::FData>` otherwise), calls `chain` on the primals, returns the
//! value with fresh zero fdata, and a pullback that joins the output's fdata and rdata into its
//! tangent (`Primal::join_tangent`), calls the chain rule's pullback, and splits each returned
//! tangent: the fdata part is *added* into the argument's fdata (`FData::increment_from`), the
//! rdata part is returned. The forward rule is not generated.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Token;
use syn::spanned::Spanned;

use crate::rule_sig::{Errors, RuleSig, allow_attrs, parse_list, rt};

const WHY_MUT: &str = "a chain rule does not mutate its arguments, so `from_rrule!` cannot \
    adapt a function with a `&mut` argument: write its `NAME_rrule` by hand (it must restore \
    the primal state in its pullback), or derive it with `#[differentiable]`";

const WHY_REF_OUT: &str = "`from_rrule!` cannot adapt a function whose output is or holds a \
    reference: the output would alias an input, whose shadow the rule cannot name; return an \
    owned value, or write the rule by hand";

/// The entry point: `from_rrule! { sig => chain_rule; .. }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let parsed = syn::parse::Parser::parse2(
        |input: syn::parse::ParseStream<'_>| {
            parse_list(
                input,
                |input| {
                    if !input.peek(Token![=>]) {
                        return Err(input.error(
                            "expected `=> chain_rule` after the signature, naming the function \
                             that returns `(value, pullback)`",
                        ));
                    }
                    input.parse::<Token![=>]>()?;
                    input.parse::<syn::Path>()
                },
                "`from_rrule!(fn my_dot(a: &[f64], b: &[f64]) -> f64 => my_dot_chainrule);`",
            )
        },
        input,
    );
    let sigs = match parsed {
        Ok(s) => s,
        Err(e) => return e.to_compile_error(),
    };
    let mut out = TokenStream::new();
    for (sig, chain) in &sigs {
        let mut errors = Errors::default();
        sig.check(&mut errors, WHY_MUT, WHY_REF_OUT);
        if errors.any() {
            out.extend(errors.to_compile_errors());
        } else {
            out.extend(rrule(sig, chain));
            out.extend(sig.wrt_forwarder());
        }
    }
    out
}

fn rrule(sig: &RuleSig, chain: &syn::Path) -> TokenStream {
    let rt = rt();
    let site = Span::mixed_site();
    let vis = &sig.vis;
    let attrs = &sig.attrs;
    let allow = allow_attrs();
    let (params, where_clause) = sig.generics_and_bounds();
    let call = sig.call_path(chain);
    let span = chain.span();
    let args_primal: Vec<TokenStream> =
        sig.arg_idents("__a").iter().map(|a| quote_spanned!(span=> #a.primal)).collect();
    let call = quote_spanned!(span=> #call(#(#args_primal),*));
    let ret = &sig.ret;
    let shown = sig.display_path();
    let chain_shown = quote!(#chain).to_string().replace(' ', "");
    let args = sig.arg_idents("__a");
    let fdata = sig.arg_idents("__fd");
    let tangents = sig.arg_idents("__t");
    let y = syn::Ident::new("__y", site);
    let yf = syn::Ident::new("__yf", site);
    let yf_pb = syn::Ident::new("__yf_pb", site);
    let pb = syn::Ident::new("__pb", site);
    let ry = syn::Ident::new("__ry", site);
    let ty_out = syn::Ident::new("__ty", site);
    let f = syn::Ident::new("__f", site);
    let r = syn::Ident::new("__r", site);
    let captured = sig.type_and_const_params();

    let (rparams, rtypes) = (sig.reverse_params(&args), sig.rdata_types());
    let splits =
        sig.args.iter().zip(&fdata).zip(&tangents).map(|((arg, fd), t)| match arg.referent() {
            Some(inner) => quote!({
                #rt::FData::increment_from(
                    &#fd,
                    &<#inner as #rt::Primal>::tangent_to_shadow(#t),
                );
                #rt::NoRData
            }),
            None => {
                let ty = &arg.ty;
                quote!({
                    let (#f, #r) = <#ty as #rt::Primal>::split_tangent(#t);
                    #rt::FData::increment_from(&#fd, &#f);
                    #r
                })
            }
        });
    let name = sig.rule_name("rrule");
    let doc = format!(
        "Reverse-mode rule of `{shown}`, adapted by `from_rrule!` from the chain rule \
         `{chain_shown}`."
    );
    let fn_token = &sig.fn_token;

    quote!(
        #(#attrs)*
        #[doc = #doc]
        #allow
        #[inline]
        #vis #fn_token #name #params(#(#rparams),*) -> (
            #rt::CoDual<#ret, <#ret as #rt::Primal>::FData>,
            impl ::core::ops::FnOnce(<#ret as #rt::Primal>::RData) -> (#(#rtypes,)*)
                + use<#(#captured),*>
        )
        #where_clause
        {
            #(let #fdata = #args.fdata;)*
            let (#y, #pb): (#ret, _) = #call;
            let #yf = <#ret as #rt::Primal>::zero_fdata(&#y);
            let #yf_pb = ::core::clone::Clone::clone(&#yf);
            (
                #rt::CoDual::new(#y, #yf),
                move |#ry: <#ret as #rt::Primal>::RData| {
                    let #ty_out = <#ret as #rt::Primal>::join_tangent(&#yf_pb, #ry);
                    let (#(#tangents,)*) = #pb(#ty_out);
                    (#(#splits,)*)
                },
            )
        }
    )
}
