//! `Self` in the methods of a `#[differentiable] impl` block, written out as the block's type
//! before the rules are derived: the dispatch impls that carry a method's signature
//! (`MethodFrule`, `RecvMarker`, ..) are impls of other types, where `Self` names the dual or the
//! marker, not the user's type. Only the copy the rules are derived from is rewritten; the block
//! itself is emitted as written.
//!
//! * a type `Self` becomes the block's type (`-> Self`, `o: Self`, `Vec<Self>`);
//! * `Self::Output` of a trait impl becomes `<V3 as Add>::Output`, and of an inherent impl
//!   `<V3>::X`;
//! * an expression path `Self::new(..)`, `Self::ZERO` becomes `<V3>::new(..)`, `<V3>::ZERO`;
//! * the path of a struct literal or pattern `Self { .. }`, `Self::Variant(..)` becomes the
//!   type's path without its generic arguments (which inference supplies).

use syn::visit_mut::{self, VisitMut};

/// Rewrites `Self` in `f` (see the module's documentation).
pub(crate) fn write_out_self(f: &mut syn::ImplItemFn, imp: &syn::ItemImpl) {
    let ty = (*imp.self_ty).clone();
    // The block's associated types (`type Output = Self;`), written out themselves.
    let mut assoc = Vec::new();
    for item in &imp.items {
        if let syn::ImplItem::Type(t) = item {
            let mut v = SelfType {
                ty: ty.clone(),
                trait_path: imp.trait_.as_ref().map(|t| t.1.clone()),
                assoc: Vec::new(),
            };
            let mut at = t.ty.clone();
            v.visit_type_mut(&mut at);
            assoc.push((t.ident.clone(), at));
        }
    }
    let mut v = SelfType { ty, trait_path: imp.trait_.as_ref().map(|t| t.1.clone()), assoc };
    v.visit_impl_item_fn_mut(f);
}

struct SelfType {
    ty: syn::Type,
    trait_path: Option<syn::Path>,
    /// The block's associated types: `Self::Output` is the type the block gives it.
    assoc: Vec<(syn::Ident, syn::Type)>,
}

fn starts_with_self(p: &syn::Path) -> bool {
    p.leading_colon.is_none() && p.segments.first().is_some_and(|s| s.ident == "Self")
}

impl SelfType {
    /// The block's type as a path, if it is one: without its generic arguments (a struct
    /// literal's or a pattern's, which inference completes), or with them as a turbofish (an
    /// expression's, `Poly::<T>`).
    fn type_path(&self, turbofish: bool) -> Option<syn::Path> {
        let syn::Type::Path(tp) = &self.ty else { return None };
        if tp.qself.is_some() {
            return None;
        }
        let mut p = tp.path.clone();
        for s in p.segments.iter_mut() {
            match &mut s.arguments {
                syn::PathArguments::AngleBracketed(a) if turbofish => {
                    a.colon2_token = Some(Default::default())
                }
                args => *args = syn::PathArguments::None,
            }
        }
        Some(p)
    }

    /// `Self::rest` as a path qualified by the block's type (`<V3 as Add>::Output`, `<V3>::new`).
    fn qualified(&self, path: &syn::Path, with_trait: bool) -> (syn::QSelf, syn::Path) {
        let rest: Vec<syn::PathSegment> = path.segments.iter().skip(1).cloned().collect();
        let (position, mut segments) = match (&self.trait_path, with_trait) {
            (Some(t), true) => (t.segments.len(), t.segments.clone()),
            _ => (0, syn::punctuated::Punctuated::new()),
        };
        segments.extend(rest);
        let qself = syn::QSelf {
            lt_token: Default::default(),
            ty: Box::new(self.ty.clone()),
            position,
            as_token: (position > 0).then(Default::default),
            gt_token: Default::default(),
        };
        // `<V3>::new` keeps its `::` in the path; `<V3 as Add>::Output` has the trait's.
        let leading_colon = if position == 0 {
            Some(Default::default())
        } else {
            self.trait_path.as_ref().and_then(|t| t.leading_colon)
        };
        (qself, syn::Path { leading_colon, segments })
    }

    /// `Self` at the start of `path` replaced by the block's type path (see
    /// [`SelfType::type_path`]); `false` if it is not a path.
    fn rebase(&self, path: &mut syn::Path, turbofish: bool) -> bool {
        let Some(base) = self.type_path(turbofish) else { return false };
        let mut segments = base.segments;
        segments.extend(path.segments.iter().skip(1).cloned());
        *path = syn::Path { leading_colon: base.leading_colon, segments };
        true
    }
}

impl VisitMut for SelfType {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(tp) = t
            && tp.qself.is_none()
            && starts_with_self(&tp.path)
        {
            if tp.path.segments.len() == 1 {
                *t = self.ty.clone();
            } else if tp.path.segments.len() == 2
                && let Some((_, at)) =
                    self.assoc.iter().find(|(n, _)| *n == tp.path.segments[1].ident)
            {
                *t = at.clone();
            } else {
                // An associated type: of the implemented trait where there is one.
                let (qself, path) = self.qualified(&tp.path, true);
                *t = syn::Type::Path(syn::TypePath { qself: Some(qself), path });
            }
            return;
        }
        visit_mut::visit_type_mut(self, t);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Path(p) if p.qself.is_none() && starts_with_self(&p.path) => {
                // `Self` as a value (a unit struct), `Self::new(..)`: `V3::new(..)`,
                // `Poly::<T>::new(..)`.
                let turbofish = p.path.segments.len() > 1;
                if !self.rebase(&mut p.path, turbofish) && turbofish {
                    let (qself, path) = self.qualified(&p.path, false);
                    p.qself = Some(qself);
                    p.path = path;
                }
                return;
            }
            syn::Expr::Struct(s) if s.qself.is_none() && starts_with_self(&s.path) => {
                self.rebase(&mut s.path, false);
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, e);
    }

    fn visit_pat_mut(&mut self, p: &mut syn::Pat) {
        match p {
            syn::Pat::Struct(s) if s.qself.is_none() && starts_with_self(&s.path) => {
                self.rebase(&mut s.path, false);
            }
            syn::Pat::TupleStruct(s) if s.qself.is_none() && starts_with_self(&s.path) => {
                self.rebase(&mut s.path, false);
            }
            syn::Pat::Path(s) if s.qself.is_none() && starts_with_self(&s.path) => {
                self.rebase(&mut s.path, false);
            }
            _ => {}
        }
        visit_mut::visit_pat_mut(self, p);
    }

    // Items nested in a method have their own `Self`.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
