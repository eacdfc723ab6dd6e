//! The seed corpus: every real input of the macros in the workspace's tests, UI tests, examples
//! and benchmark problems (read from the files at run time, so it grows with them), plus, for
//! each `#[differentiable]` function, the inputs the other macros would get for it (its
//! signature for `zero_adjoint!` and `from_rrule!`, a call of it for the API macros).

use super::Target;
use quote::{ToTokens, quote};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One input of one macro, as text (tokens carry spans, which the fuzz loop resets per input).
#[derive(Clone, Debug)]
pub(crate) struct Seed {
    pub(crate) target: Target,
    /// The attribute's arguments (attribute macros only).
    pub(crate) attr: String,
    pub(crate) input: String,
    /// The file it comes from.
    pub(crate) origin: String,
}

/// The directories the seeds are read from, relative to the workspace root.
const DIRS: [&str; 4] = ["tests/tests", "ui-tests/tests/ui", "examples", "benches/src"];

/// Every seed, in a fixed order (files sorted by path), without duplicates.
pub(crate) fn seeds() -> Vec<Seed> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut out: Vec<Seed> = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        // UI tests may be meant not to parse; their tokens are still mutated through others.
        let Ok(parsed) = syn::parse_file(&text) else { continue };
        let origin = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let mut c = Collect { origin, out: Vec::new() };
        c.visit_file(&parsed);
        for s in c.out {
            if !out.iter().any(|o| o.target == s.target && o.attr == s.attr && o.input == s.input) {
                out.push(s);
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

struct Collect {
    origin: String,
    out: Vec<Seed>,
}

/// The macro an attribute names, if it is one of ours.
fn attribute_target(attr: &syn::Attribute) -> Option<Target> {
    let name = attr.path().segments.last()?.ident.to_string();
    match name.as_str() {
        "differentiable" => Some(Target::Differentiable),
        "mooncake_overlay" => Some(Target::Overlay),
        "frule" => Some(Target::Frule),
        "rrule" => Some(Target::Rrule),
        _ => None,
    }
}

/// The tokens an attribute macro gets as its arguments.
fn attribute_args(attr: &syn::Attribute) -> String {
    match &attr.meta {
        syn::Meta::Path(_) => String::new(),
        syn::Meta::List(l) => l.tokens.to_string(),
        syn::Meta::NameValue(nv) => nv.value.to_token_stream().to_string(),
    }
}

impl Collect {
    fn push(&mut self, target: Target, attr: String, input: String) {
        self.out.push(Seed { target, attr, input, origin: self.origin.clone() });
    }

    /// An item carrying one of our attributes: the item without that attribute (what the
    /// compiler hands the macro), once per such attribute.
    fn attributed<T: Clone + ToTokens>(
        &mut self,
        item: &T,
        attrs: &[syn::Attribute],
        strip: impl Fn(&mut T, usize),
    ) {
        for (i, a) in attrs.iter().enumerate() {
            if let Some(target) = attribute_target(a) {
                let mut stripped = item.clone();
                strip(&mut stripped, i);
                self.push(target, attribute_args(a), stripped.to_token_stream().to_string());
            }
        }
    }

    /// `#[derive(.., Tangent, ..)]` on a type: the type without that attribute.
    fn derived<T: Clone + ToTokens>(
        &mut self,
        item: &T,
        attrs: &[syn::Attribute],
        strip: impl Fn(&mut T, usize),
    ) {
        for (i, a) in attrs.iter().enumerate() {
            if a.path().is_ident("derive")
                && a.meta.to_token_stream().to_string().contains("Tangent")
            {
                let mut stripped = item.clone();
                strip(&mut stripped, i);
                self.push(
                    Target::DeriveTangent,
                    String::new(),
                    stripped.to_token_stream().to_string(),
                );
            }
        }
    }

    /// The inputs of the other macros for a `#[differentiable]` function `sig`.
    fn companions(&mut self, sig: &syn::Signature) {
        let name = &sig.ident;
        let chain = quote::format_ident!("{}_chainrule", name);
        self.push(Target::ZeroAdjoint, String::new(), quote!(#sig;).to_string());
        self.push(Target::FromRrule, String::new(), quote!(#sig => #chain;).to_string());
        let mut args = Vec::new();
        let mut tangents = Vec::new();
        for (i, a) in sig.inputs.iter().enumerate() {
            let v = quote::format_ident!("a{}", i);
            let t = quote::format_ident!("t{}", i);
            let syn::FnArg::Typed(pt) = a else { continue };
            args.push(match &*pt.ty {
                syn::Type::Reference(r) if r.mutability.is_some() => quote!(&mut #v),
                syn::Type::Reference(_) => quote!(&#v),
                _ => quote!(#v),
            });
            tangents.push(t);
        }
        let call = quote!(#name(#(#args),*));
        self.push(Target::ValueAndGradient, String::new(), call.to_string());
        self.push(Target::ValueAndPullback, String::new(), quote!(#call, 1.0).to_string());
        self.push(
            Target::ValueAndDerivative,
            String::new(),
            quote!(#call, (#(#tangents,)*)).to_string(),
        );
        self.push(Target::TestRule, String::new(), call.to_string());
        self.push(Target::Hvp, String::new(), quote!(#call, (#(#tangents,)*)).to_string());
        self.push(Target::Hessian, String::new(), call.to_string());
    }
}

impl<'ast> Visit<'ast> for Collect {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.attributed(f, &f.attrs, |f, i| {
            f.attrs.remove(i);
        });
        if f.attrs.iter().any(|a| attribute_target(a) == Some(Target::Differentiable)) {
            self.companions(&f.sig);
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.attributed(i, &i.attrs, |i, k| {
            i.attrs.remove(k);
        });
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        // A method with its own attribute arrives alone.
        self.attributed(f, &f.attrs, |f, i| {
            f.attrs.remove(i);
        });
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.derived(s, &s.attrs, |s, i| {
            s.attrs.remove(i);
        });
        syn::visit::visit_item_struct(self, s);
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        self.derived(e, &e.attrs, |e, i| {
            e.attrs.remove(i);
        });
        syn::visit::visit_item_enum(self, e);
    }

    fn visit_item_union(&mut self, u: &'ast syn::ItemUnion) {
        self.derived(u, &u.attrs, |u, i| {
            u.attrs.remove(i);
        });
        syn::visit::visit_item_union(self, u);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let target = match m.path.segments.last().map(|s| s.ident.to_string()).as_deref() {
            Some("zero_adjoint") => Some(Target::ZeroAdjoint),
            Some("from_rrule") => Some(Target::FromRrule),
            Some("value_and_derivative") => Some(Target::ValueAndDerivative),
            Some("value_and_gradient") => Some(Target::ValueAndGradient),
            Some("value_and_pullback") => Some(Target::ValueAndPullback),
            Some("test_rule") => Some(Target::TestRule),
            Some("check_rule") => Some(Target::CheckRule),
            Some("hvp") => Some(Target::Hvp),
            Some("hessian") => Some(Target::Hessian),
            _ => None,
        };
        if let Some(t) = target {
            self.push(t, String::new(), m.tokens.to_string());
        }
        syn::visit::visit_macro(self, m);
    }
}
