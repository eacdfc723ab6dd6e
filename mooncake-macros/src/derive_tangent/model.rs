//! Parsing: the derive input, read with darling, and converted into [`Container`], the model the
//! later stages work on.
//!
//! darling 0.24 is built on syn 3 while this crate uses syn 2. Both share `proc-macro2` and
//! `quote`, so the boundary is crossed here, once, by re-parsing the tokens of each piece with
//! syn 2 (spans are kept). Nothing outside this module sees a syn 3 type.

use super::ctxt::Ctxt;
use crate::differentiable::parse::unambiguous_type;
use darling::ast::{Data, Fields, Style};
use darling::{FromDeriveInput, FromField, FromVariant};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote};
use syn as dsyn;

/// What darling reads from the item. `#[derive(Tangent)]` has no attributes of its own yet;
/// `repr` is forwarded to find `#[repr(packed)]`.
#[derive(FromDeriveInput)]
#[darling(forward_attrs(repr))]
struct InputModel {
    ident: Ident,
    vis: dsyn::Visibility,
    generics: dsyn::Generics,
    data: Data<VariantModel, FieldModel>,
    attrs: Vec<dsyn::Attribute>,
}

#[derive(FromField)]
struct FieldModel {
    ident: Option<Ident>,
    ty: dsyn::Type,
}

#[derive(FromVariant)]
struct VariantModel {
    ident: Ident,
    fields: Fields<dsyn::Field>,
}

/// The item `#[derive(Tangent)]` is on.
pub(crate) struct Container {
    pub(crate) ident: Ident,
    pub(crate) vis: syn::Visibility,
    /// With the where clause.
    pub(crate) generics: syn::Generics,
    pub(crate) body: Body,
    /// The span of `packed` in a `#[repr(packed)]` or `#[repr(packed(N))]`.
    pub(crate) repr_packed: Option<Span>,
}

pub(crate) enum Body {
    Struct { style: Style, fields: Vec<Field> },
    Enum { variants: Vec<Variant> },
}

pub(crate) struct Field {
    /// `None` for a positional field.
    pub(crate) ident: Option<Ident>,
    pub(crate) ty: syn::Type,
}

pub(crate) struct Variant {
    /// The variant's name and its fields (`B(f64)`, `C { x: f64 }`); `None` for a unit variant.
    pub(crate) with_fields: Option<TokenStream>,
    /// The variant's name.
    pub(crate) ident: Ident,
    /// Whether its fields are named (`C { x: f64 }`).
    pub(crate) named: bool,
    /// The types of its fields, in order.
    pub(crate) tys: Vec<syn::Type>,
}

/// Reads `input`; reports into `cx` and returns `None` if it cannot.
pub(crate) fn parse(cx: &Ctxt, input: TokenStream) -> Option<Container> {
    let input: dsyn::DeriveInput = match dsyn::parse2(input) {
        Ok(input) => input,
        Err(e) => {
            // A derive is only ever given an item that parsed; say something useful anyway.
            cx.error_at(e.span(), e);
            return None;
        }
    };
    if let dsyn::Data::Union(union) = &input.data {
        cx.error_at(
            union.union_token.span,
            "`#[derive(Tangent)]` supports structs and fieldless enums, not unions: which field \
             of a union is live is not known, so it has no tangent type — implement `Primal` for \
             it by hand, or use a struct",
        );
        return None;
    }
    let model = match InputModel::from_derive_input(&input) {
        Ok(model) => model,
        Err(e) => {
            cx.rendered_errors(e.write_errors());
            return None;
        }
    };
    convert(cx, model)
}

fn convert(cx: &Ctxt, model: InputModel) -> Option<Container> {
    let vis = reparse::<syn::Visibility>(cx, &model.vis);
    let generics = reparse_generics(cx, &model.generics);
    let repr_packed = find_repr_packed(cx, &model.attrs);
    let body = match model.data {
        Data::Struct(fields) => {
            let (style, fields) = fields.split();
            let fields: Option<Vec<Field>> = fields
                .into_iter()
                // A trait-object type with `+` is put in parentheses: pasted into
                // `<T as Primal>` it would not parse (found by the fuzz test).
                .map(|f| {
                    let ty = reparse::<syn::Type>(cx, &f.ty)?;
                    Some(Field { ident: f.ident, ty: unambiguous_type(&ty) })
                })
                .collect();
            Body::Struct { style, fields: fields? }
        }
        Data::Enum(variants) => Body::Enum {
            variants: variants
                .into_iter()
                .map(|v| {
                    let with_fields = match v.fields.style {
                        Style::Unit => None,
                        Style::Tuple | Style::Struct => {
                            let (ident, fields) = (&v.ident, &v.fields);
                            Some(quote!(#ident #fields))
                        }
                    };
                    let named = matches!(v.fields.style, Style::Struct);
                    let tys: Option<Vec<syn::Type>> = v
                        .fields
                        .fields
                        .iter()
                        .map(|f| reparse::<syn::Type>(cx, &f.ty).map(|t| unambiguous_type(&t)))
                        .collect();
                    Some(Variant { with_fields, ident: v.ident, named, tys: tys? })
                })
                .collect::<Option<Vec<_>>>()?,
        },
    };
    Some(Container { ident: model.ident, vis: vis?, generics: generics?, body, repr_packed })
}

/// The syn 2 value of a syn 3 node, through its tokens.
fn reparse<T: syn::parse::Parse>(cx: &Ctxt, node: &impl ToTokens) -> Option<T> {
    syn::parse2(node.to_token_stream()).map_err(|e| cx.syn_error(e)).ok()
}

fn reparse_generics(cx: &Ctxt, generics: &dsyn::Generics) -> Option<syn::Generics> {
    // `Generics` prints its parameters only; the where clause is printed (and parsed) apart.
    let mut converted = reparse::<syn::Generics>(cx, generics)?;
    if let Some(where_clause) = &generics.where_clause {
        converted.where_clause = Some(reparse::<syn::WhereClause>(cx, where_clause)?);
    }
    Some(converted)
}

/// The span of `packed` in the first `#[repr(.., packed, ..)]`.
fn find_repr_packed(cx: &Ctxt, attrs: &[dsyn::Attribute]) -> Option<Span> {
    let mut packed = None;
    for attr in attrs {
        let Some(attr) = reparse_attribute(cx, attr) else {
            continue;
        };
        if !attr.path().is_ident("repr") {
            continue;
        }
        // Anything `repr` accepts that the walk below does not understand is rustc's to judge.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("packed") && packed.is_none() {
                packed = meta.path.get_ident().map(Ident::span);
            }
            if meta.input.peek(syn::token::Paren) {
                let _ = meta.input.parse::<proc_macro2::Group>();
            }
            Ok(())
        });
    }
    packed
}

fn reparse_attribute(cx: &Ctxt, attr: &dsyn::Attribute) -> Option<syn::Attribute> {
    use syn::parse::Parser;
    syn::Attribute::parse_outer
        .parse2(attr.to_token_stream())
        .map_err(|e| cx.syn_error(e))
        .ok()?
        .into_iter()
        .next()
}
