//! `#[differentiable]`: lowers a function body to the AD IR ([`ir`]) and emits its rules beside
//! the untouched original.
//!
//! The stages, each in its own module with one-way dependencies:
//! [`parse`] (attribute arguments, signature) -> [`lower`] (syn to IR) -> [`verify`] ->
//! [`structure`] (control-flow graph to structured Rust) -> [`forward`] (the statement-wise
//! transform) -> [`codegen`] (tokens).

pub(crate) mod codegen;
pub(crate) mod errors;
pub(crate) mod forward;
pub(crate) mod ir;
pub(crate) mod lower;
pub(crate) mod parse;
pub(crate) mod structure;
pub(crate) mod verify;

#[cfg(test)]
mod smoke;

use codegen::{Names, allow_attrs, rt};
use errors::Errors;
use ir::*;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The expansion of `#[differentiable(attr)] item`.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::new();
    let args = parse::Args::parse(attr, &mut errors);
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            // Not a function (or not valid Rust): say so, and give the item back untouched so
            // that rustc reports its own syntax errors.
            let e = syn::Error::new(
                Span::call_site(),
                "#[differentiable] goes on a function (`fn`), or on a method inside an `impl` block",
            );
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let sig = parse::signature(&func.sig, &mut errors);
    let lsig = lower::Signature {
        name: &func.sig.ident,
        args: sig.args.iter().map(|a| (a.name.clone(), a.ty.clone(), a.receiver.is_some())).collect(),
        ret_ty: sig.ret.clone(),
    };
    let body = if errors.has_errors() { None } else { Some(lower::lower(&lsig, &func.block, &mut errors)) };
    let rules = match (body, errors.has_errors()) {
        (Some(body), false) => generate(&func, &sig, &body, &args, &mut errors),
        _ => None,
    };
    match (errors.finish(), rules) {
        (Ok(()), Some(rules)) => quote!(#func #rules),
        (Err(errs), _) => {
            let stubs = stubs(&func, &sig);
            quote!(#func #errs #stubs)
        }
        (Ok(()), None) => {
            let e = syn::Error::new(func.sig.ident.span(), "internal error in #[differentiable]: no rules generated; please report this")
                .to_compile_error();
            quote!(#func #e)
        }
    }
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
        syn::Type::Paren(p) => dual_type(&p.elem),
        other => quote_spanned!(ty.span()=> #rt::Dual<#other, <#other as #rt::Primal>::Tangent>),
    }
}

fn frule_signature(func: &syn::ItemFn, sig: &parse::Sig, names: &Names) -> TokenStream {
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
        bounds.push(quote_spanned!(inner.span()=> #inner: #rt::Primal));
    }
    let where_clause = match &generics.where_clause {
        Some(w) => {
            let preds = &w.predicates;
            quote!(where #preds, #(#bounds),*)
        }
        None => quote!(where #(#bounds),*),
    };
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

fn generate(
    func: &syn::ItemFn,
    sig: &parse::Sig,
    body: &Body,
    args: &parse::Args,
    errors: &mut Errors,
) -> Option<TokenStream> {
    let problems = verify::verify(body);
    if !problems.is_empty() {
        errors.error(
            func.sig.ident.span(),
            format!("internal error in #[differentiable] (the IR verifier failed: {}); please report this", problems.join("; ")),
        );
        return None;
    }
    let Some(structured) = structure::structure(body) else {
        errors.error(func.sig.ident.span(), "internal error in #[differentiable]: irreducible control flow; please report this");
        return None;
    };
    let names = Names::new(body);
    let fwd = forward::Forward::new(body, &names);
    let decls = local_declarations(body, &names);
    let stmts = |b: BlockId| {
        let s = body.blocks[b.index()].statements.iter().map(|s| fwd.statement(s));
        quote!(#(#s)*)
    };
    let exit = |b: BlockId| {
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
    };
    let cond = |l: Local| {
        let l = names.local(l);
        quote!(#l.primal)
    };
    let code = codegen::emit(&structured, &names, &stmts, &exit, &cond);
    let signature = frule_signature(func, sig, &names);
    let allow = allow_attrs();
    let ret_local = names.local(Local::RETURN);
    let ret_ty = dual_type(&sig.ret);
    let frule = quote!(
        #allow
        #[inline]
        #signature {
            let mut #ret_local: #ret_ty;
            #decls
            #code
        }
    );
    if args.dump_ir || std::env::var("MOONCAKE_DUMP_IR").is_ok_and(|v| v == "1" || v == func.sig.ident.to_string()) {
        eprintln!("== #[differentiable] {}: primal IR\n{body}", func.sig.ident);
        eprintln!("== structured\n{structured:#?}");
        eprintln!("== forward rule\n{frule}");
    }
    Some(frule)
}

/// `let mut __lN;` for every local that is assigned, typed where the user wrote a type.
fn local_declarations(body: &Body, names: &Names) -> TokenStream {
    let mut assigned = vec![false; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, _) = &s.kind {
                if p.projections.is_empty() {
                    assigned[p.local.index()] = true;
                }
            }
        }
    }
    let decls = (body.n_args + 1..body.locals.len()).filter(|l| assigned[*l]).map(|l| {
        let name = names.local(Local(l as u32));
        match &body.locals[l].ty {
            Some(ty) => {
                let ty = dual_type(ty);
                quote!(let mut #name: #ty;)
            }
            None => quote!(let mut #name;),
        }
    });
    quote!(#(#decls)*)
}

/// When the function has errors: rules with the right signature and a body that is never
/// reached, so that the user sees the real errors and not one per call site.
fn stubs(func: &syn::ItemFn, sig: &parse::Sig) -> TokenStream {
    let names = Names { n_locals: sig.args.len() + 1 };
    let signature = frule_signature(func, sig, &names);
    let allow = allow_attrs();
    quote!(
        #allow
        #signature {
            ::core::unreachable!("#[differentiable] failed to expand this function")
        }
    )
}
