//! `Option`s that numerical code makes and takes apart at once, lowered as the test and the
//! read a person would write without them: `x.first()`, `x.last()`, `x.get(i)` (with
//! `.copied()` / `.cloned()`) and the chains ending in `max_by`, `min_by` or `reduce`, taken
//! apart by `.unwrap()`, `.expect(..)`, `.unwrap_or(d)`, `.unwrap_or_else(|| d)`,
//! `.is_some()`, `.is_none()`, `if let Some(v) = ..`, `let Some(v) = .. else { .. }` or a
//! `match` with `Some(v)` and `None` (or `_`) arms. So `x.get(i).copied().unwrap_or(0.0)` is
//! `if i < x.len() { x[i] } else { 0.0 }`, and its derivative is that of the branch taken.
//!
//! An `Option` kept in a variable or passed on is not an `Option` here: the message of the
//! call that made it says what to write instead.

use super::ir::Operand;
use super::lower::Lower;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// An `Option` written out: statements computing it, the test of `Some`, and the expression of
/// the value inside (meaningful only when the test holds).
struct OptionParts {
    stmts: TokenStream,
    some: TokenStream,
    /// A place (`x[__i]`) or the name of a local.
    value: TokenStream,
    /// Whether `value` is a place the `Option` holds a reference to (`x.get(i)` holds `&x[i]`).
    by_ref: bool,
    /// Whether the `Option` holds a reference in Rust's types while `value` is the number it
    /// refers to (`x.iter().max_by(..)`): a `*` before it is dropped.
    deref_free: bool,
    /// Whether `value` is a tuple of values that Rust types as a tuple holding references
    /// (`x.iter().enumerate().max_by(..)`: see `chains::keeps_tuple_of_refs`).
    values: bool,
}

/// The methods that take an `Option` apart.
const TERMINALS: &[&str] =
    &["unwrap", "expect", "unwrap_or", "unwrap_or_else", "is_some", "is_none"];

/// `e` without parentheses around it.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// Whether `e` names a place without computing anything (a name, a field, `self`), so that it
/// may be written twice.
fn plain_place(e: &Expr) -> bool {
    match strip(e) {
        Expr::Path(p) => p.qself.is_none() && p.path.get_ident().is_some(),
        Expr::Field(f) => plain_place(&f.base),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => plain_place(&u.expr),
        _ => false,
    }
}

/// Whether `m` takes apart an `Option` this module knows (`x.get(i).copied().unwrap_or(0.0)`).
pub(super) fn is_terminal(m: &syn::ExprMethodCall) -> bool {
    TERMINALS.contains(&m.method.to_string().as_str()) && makes_option(&m.receiver)
}

/// Whether `m` calls a method other than those of [`TERMINALS`] on an `Option` this module
/// knows (`x.first().map(..)`), which is refused with [`MISUSED`].
pub(super) fn is_misused(m: &syn::ExprMethodCall) -> bool {
    let name = m.method.to_string();
    let known = TERMINALS.contains(&name.as_str())
        || matches!(name.as_str(), "copied" | "cloned")
        || (name == "map" && m.args.len() == 1);
    !known && makes_option(&m.receiver)
}

/// The message for a method of `Option` this module does not take apart.
pub(super) const MISUSED: &str = "this method of `Option` is not supported in #[differentiable] \
     functions; take the `Option` apart with `.unwrap()`, `.expect(..)`, `.unwrap_or(..)`, \
     `.unwrap_or_else(|| ..)`, `.is_some()`, `.is_none()`, `if let Some(v) = ..`, \
     `let Some(v) = .. else { .. }` or `match`, and compute with the value";

/// Whether `e` makes an `Option` this module knows.
pub(super) fn makes_option(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(m) => makes_option_call(m),
        _ => false,
    }
}

/// [`makes_option`] of a method call.
pub(super) fn makes_option_call(m: &syn::ExprMethodCall) -> bool {
    match (m.method.to_string().as_str(), m.args.len()) {
        ("copied" | "cloned" | "map", 0..=1) => makes_option(&m.receiver),
        ("first" | "last", 0) => {
            !super::chains::is_iterator(&m.receiver) && plain_place(&m.receiver)
        }
        ("get", 1) => !super::chains::is_iterator(&m.receiver) && plain_place(&m.receiver),
        ("pop", 0) => !super::chains::is_iterator(&m.receiver) && plain_place(&m.receiver),
        ("max_by" | "min_by" | "reduce" | "position" | "find", 1) => super::chains::ends_chain(m),
        _ => false,
    }
}

/// Whether `*e` should be lowered as `e`: `e` takes apart an `Option` of a reference whose
/// value this module computes as the number itself (`*x.iter().max_by(..).unwrap()`).
pub(super) fn deref_free(e: &Expr) -> bool {
    fn holds_number_for_ref(e: &Expr) -> bool {
        match strip(e) {
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "max_by" | "min_by" | "reduce" | "find" => super::chains::source_by_ref_items(m),
                _ => false,
            },
            _ => false,
        }
    }
    match strip(e) {
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "unwrap" | "expect" | "unwrap_or" | "unwrap_or_else"
            ) && makes_option(&m.receiver) =>
        {
            holds_number_for_ref(&m.receiver)
        }
        _ => false,
    }
}

impl Lower<'_> {
    /// The parts of the `Option` `e` makes; `Err` once an error is reported.
    fn option_parts(&mut self, e: &Expr) -> Result<OptionParts, ()> {
        let Expr::MethodCall(m) = strip(e) else { unreachable!("checked by makes_option") };
        let span = m.method.span();
        let name = m.method.to_string();
        match name.as_str() {
            "copied" | "cloned" => {
                let mut p = self.option_parts(&m.receiver)?;
                p.by_ref = false;
                p.deref_free = false;
                Ok(p)
            }
            // `opt.map(|v| ..)`: the closure applied to the value (only when there is one).
            "map" => {
                let mut p = self.option_parts(&m.receiver)?;
                let Expr::Closure(c) = strip(&m.args[0]) else {
                    self.refuse(&m.args[0], "pass a closure (`|v| ..`) to `Option::map`");
                    return Err(());
                };
                if c.inputs.len() != 1 {
                    self.refuse(&m.args[0], "pass a closure of one parameter to `Option::map`");
                    return Err(());
                }
                let (mut pat, mut body) = (c.inputs[0].clone(), (*c.body).clone());
                if p.values || p.deref_free {
                    let (values, names) = super::chains::values_pattern(&pat);
                    syn::visit_mut::VisitMut::visit_expr_mut(
                        &mut super::chains::StripDerefs(&names),
                        &mut body,
                    );
                    pat = values;
                }
                let value = &p.value;
                let value = if p.by_ref { quote!(&#value) } else { quote!(#value) };
                p.value = quote_spanned!(span=> { let #pat = #value; #body });
                p.by_ref = false;
                p.deref_free = false;
                p.values = false;
                Ok(p)
            }
            "first" | "last" | "get" => {
                let x = &m.receiver;
                let i = syn::Ident::new("__mooncake_index", Span::mixed_site());
                let stmts = match name.as_str() {
                    "first" => quote_spanned!(span=> let #i: usize = 0;),
                    "last" => quote_spanned!(span=>
                        let #i: usize = if #x.len() > 0 { #x.len() - 1 } else { 0 };),
                    _ => {
                        let a = &m.args[0];
                        quote_spanned!(span=> let #i: usize = #a;)
                    }
                };
                Ok(OptionParts {
                    stmts,
                    some: quote_spanned!(span=> #i < #x.len()),
                    value: quote_spanned!(span=> #x[#i]),
                    by_ref: true,
                    deref_free: false,
                    values: false,
                })
            }
            "pop" => {
                // `v.pop()`: the last element, read then cut off (only when there is one).
                let x = &m.receiver;
                let n = syn::Ident::new("__mooncake_len", Span::mixed_site());
                let t = syn::Ident::new("__mooncake_popped", Span::mixed_site());
                Ok(OptionParts {
                    stmts: quote_spanned!(span=> let #n: usize = #x.len();),
                    some: quote_spanned!(span=> #n > 0),
                    value: quote_spanned!(span=> { let #t = #x[#n - 1]; #x.truncate(#n - 1); #t }),
                    by_ref: false,
                    deref_free: false,
                    values: false,
                })
            }
            _ => {
                let parts = self.chain_parts(m)?;
                let by_ref = super::chains::source_by_ref_items(m);
                Ok(OptionParts {
                    stmts: parts.stmts,
                    some: parts.some.unwrap_or_else(|| quote!(true)),
                    value: parts.value,
                    by_ref: false,
                    deref_free: by_ref && m.method != "position",
                    values: super::chains::keeps_tuple_of_refs(m),
                })
            }
        }
    }

    /// The `Option` `e` makes (a known one, [`makes_option`]) as a value, kept in a variable or
    /// passed on: `{ stmts; if some { Some(value) } else { None } }` (see `variants.rs`). One that
    /// holds a reference in Rust's types (`x.first()`) is refused with a message asking for
    /// `.copied()`.
    pub(super) fn lower_option_value(&mut self, e: &Expr) -> Operand {
        let Ok(p) = self.option_parts(e) else { return super::lower::unit() };
        if p.by_ref || p.deref_free || p.values {
            return self.refuse(
                e,
                "this `Option` holds a reference to an element; add `.copied()` to keep it in a \
                 variable or pass it on (`x.first().copied()`), or take it apart at once",
            );
        }
        let (stmts, some, value) = (&p.stmts, &p.some, &p.value);
        let tokens = quote!({
            #stmts
            if #some {
                ::core::option::Option::Some(#value)
            } else {
                ::core::option::Option::None
            }
        });
        self.lower_option_tokens(tokens, e.span())
    }

    /// `opt.unwrap()` and the other methods of [`TERMINALS`] on an `Option` this module knows.
    pub(super) fn lower_option_terminal(&mut self, m: &syn::ExprMethodCall) -> Operand {
        let Ok(p) = self.option_parts(&m.receiver) else { return super::lower::unit() };
        let span = m.method.span();
        let OptionParts { stmts, some, value, by_ref, deref_free, .. } = p;
        let value = if by_ref { quote_spanned!(span=> &#value) } else { value };
        let tokens = match (m.method.to_string().as_str(), m.args.len()) {
            ("unwrap", 0) => quote_spanned!(span=> {
                #stmts
                assert!(#some, "called `Option::unwrap()` on a `None` value");
                #value
            }),
            ("expect", 1) => {
                let msg = &m.args[0];
                quote_spanned!(span=> { #stmts assert!(#some, "{}", #msg); #value })
            }
            ("unwrap_or", 1) => {
                let d = &m.args[0];
                // The default of an `Option` of a reference computed as the number: the number.
                let d = if deref_free { quote!(*(#d)) } else { quote!(#d) };
                let t = syn::Ident::new("__mooncake_default", Span::mixed_site());
                quote_spanned!(span=> { #stmts let #t = #d; if #some { #value } else { #t } })
            }
            ("unwrap_or_else", 1) => match strip(&m.args[0]) {
                Expr::Closure(c) if c.inputs.is_empty() => {
                    let body = &c.body;
                    let body = if deref_free { quote!(*(#body)) } else { quote!(#body) };
                    quote_spanned!(span=> { #stmts if #some { #value } else { #body } })
                }
                Expr::Path(f) => {
                    quote_spanned!(span=> { #stmts if #some { #value } else { #f() } })
                }
                other => {
                    return self.refuse(
                        other,
                        "pass a closure with no parameters (`|| 0.0`) to `unwrap_or_else`",
                    );
                }
            },
            // The value is taken too, for what taking it does (`v.pop().is_some()` pops).
            ("is_some" | "is_none", 0) => {
                let s = syn::Ident::new("__mooncake_some", Span::mixed_site());
                let result = if m.method == "is_some" { quote!(#s) } else { quote!(!#s) };
                quote_spanned!(span=> { #stmts let #s = #some; if #s { let _ = #value; } #result })
            }
            _ => return self.refuse(&m.method, MISUSED),
        };
        self.lower_option_tokens(tokens, m.span())
    }

    /// `Some(pat)` of an `if let`, `let .. else` or `match` against an `Option` this module
    /// knows: the `let` binding `pat` to the value (`&v` against a reference binds the element
    /// itself), or `Err` once an error is reported.
    fn bind_some(
        &mut self,
        pat: &Pat,
        p: &OptionParts,
    ) -> Result<(TokenStream, Vec<syn::Ident>), ()> {
        let inner = match pat {
            Pat::TupleStruct(ts)
                if ts.qself.is_none() && ts.path.is_ident("Some") && ts.elems.len() == 1 =>
            {
                &ts.elems[0]
            }
            other => {
                self.refuse(other, "write `Some(v)` (or `Some(&v)`, `Some(_)`) here");
                return Err(());
            }
        };
        let value = &p.value;
        if p.values {
            // A tuple kept as values: `&v` parts bind `v`; the arm reads `*v` as `v`.
            let (values, names) = super::chains::values_pattern(inner);
            return Ok((quote!(let #values = #value;), names));
        }
        Ok((
            match (inner, p.by_ref) {
                (Pat::Reference(r), true) => {
                    let name = &r.pat;
                    quote!(let #name = #value;)
                }
                (Pat::Reference(r), false) if p.deref_free => {
                    let name = &r.pat;
                    quote!(let #name = #value;)
                }
                (Pat::Wild(_), _) => quote!(let _ = #value;),
                (pat, true) => quote!(let #pat = &#value;),
                (pat, false) => quote!(let #pat = #value;),
            },
            Vec::new(),
        ))
    }

    /// `if let Some(v) = opt { .. } else { .. }` on an `Option` this module knows; `None` for
    /// any other `if let`.
    pub(super) fn lower_if_let(&mut self, i: &syn::ExprIf) -> Option<Operand> {
        let Expr::Let(l) = &*i.cond else { return None };
        if !makes_option(&l.expr) {
            return None;
        }
        let Ok(p) = self.option_parts(&l.expr) else { return Some(super::lower::unit()) };
        let Ok((bind, names)) = self.bind_some(&l.pat, &p) else {
            return Some(super::lower::unit());
        };
        let (stmts, some) = (&p.stmts, &p.some);
        let mut then = i.then_branch.clone();
        syn::visit_mut::VisitMut::visit_block_mut(
            &mut super::chains::StripDerefs(&names),
            &mut then,
        );
        let otherwise = match &i.else_branch {
            Some((_, e)) => quote!(else #e),
            None => quote!(),
        };
        let tokens = quote_spanned!(i.span()=> {
            #stmts
            if #some { #bind #then } #otherwise
        });
        Some(self.lower_option_tokens(tokens, i.span()))
    }

    /// `while let Some(v) = opt { .. }` on an `Option` this module knows (`stack.pop()`,
    /// `x.get(i)`): `loop { stmts; if !some { break; } let v = value; body }`, with the loop's
    /// label; `None` for any other `while let`.
    pub(super) fn lower_while_let(&mut self, w: &syn::ExprWhile) -> Option<Operand> {
        let Expr::Let(l) = &*w.cond else { return None };
        if !makes_option(&l.expr) {
            return None;
        }
        let Ok(p) = self.option_parts(&l.expr) else { return Some(super::lower::unit()) };
        let Ok((bind, names)) = self.bind_some(&l.pat, &p) else {
            return Some(super::lower::unit());
        };
        let mut body = w.body.clone();
        syn::visit_mut::VisitMut::visit_block_mut(
            &mut super::chains::StripDerefs(&names),
            &mut body,
        );
        let (stmts, some, label) = (&p.stmts, &p.some, &w.label);
        let tokens = quote_spanned!(w.span()=> #label loop {
            #stmts
            if !(#some) { break; }
            #bind
            #body
        });
        Some(self.lower_option_tokens(tokens, w.span()))
    }

    /// `let Some(v) = opt else { .. };` on an `Option` this module knows: the value of the
    /// block `{ stmts; if !some { else } value }`, to be bound to `v`, with the pattern to bind
    /// it; `None` for any other `let .. else`.
    pub(super) fn lower_let_else(&mut self, local: &syn::Local) -> Option<(Pat, Operand)> {
        let init = local.init.as_ref()?;
        let (_, diverge) = init.diverge.as_ref()?;
        if !makes_option(&init.expr) {
            return None;
        }
        let unit = || {
            let wild =
                Pat::Wild(syn::PatWild { attrs: Vec::new(), underscore_token: Default::default() });
            Some((wild, super::lower::unit()))
        };
        let Ok(p) = self.option_parts(&init.expr) else { return unit() };
        let inner = match &local.pat {
            Pat::TupleStruct(ts)
                if ts.qself.is_none() && ts.path.is_ident("Some") && ts.elems.len() == 1 =>
            {
                ts.elems[0].clone()
            }
            other => {
                self.refuse(other, "write `let Some(v) = .. else { .. };` here");
                return unit();
            }
        };
        let (stmts, some, value) = (&p.stmts, &p.some, &p.value);
        let (pat, value) = match (inner, p.by_ref || p.deref_free) {
            (Pat::Reference(r), true) => ((*r.pat).clone(), quote!(#value)),
            (pat, true) if p.by_ref => (pat, quote!(&#value)),
            (pat, _) => (pat, quote!(#value)),
        };
        let tokens = quote_spanned!(local.span()=> {
            #stmts
            if !(#some) #diverge
            #value
        });
        Some((pat, self.lower_option_tokens(tokens, local.span())))
    }

    /// `match opt { Some(v) => a, None => b }` (or `_ => b`) on an `Option` this module knows;
    /// `None` for any other `match`.
    pub(super) fn lower_option_match(&mut self, m: &syn::ExprMatch) -> Option<Operand> {
        if !makes_option(&m.expr) {
            return None;
        }
        let Ok(p) = self.option_parts(&m.expr) else { return Some(super::lower::unit()) };
        let is_none = |pat: &Pat| match pat {
            Pat::Ident(pi) => pi.ident == "None" && pi.subpat.is_none(),
            Pat::Path(pp) => pp.path.is_ident("None"),
            Pat::Wild(_) => true,
            _ => false,
        };
        let (some_arm, none_arm) = match m.arms.as_slice() {
            [a, b] if !is_none(&a.pat) && is_none(&b.pat) => (a, b),
            [a, b] if is_none(&a.pat) && !is_none(&b.pat) && !matches!(a.pat, Pat::Wild(_)) => {
                (b, a)
            }
            _ => {
                return Some(self.refuse(
                    m.match_token,
                    "a `match` on an `Option` needs exactly a `Some(v)` arm and a `None` (or `_`) \
                     arm, without guards",
                ));
            }
        };
        if let Some((if_token, _)) = some_arm.guard.as_ref().or(none_arm.guard.as_ref()) {
            return Some(self.refuse(
                if_token,
                "guards in a `match` on an `Option` are not supported; test inside the arm",
            ));
        }
        let Ok((bind, names)) = self.bind_some(&some_arm.pat, &p) else {
            return Some(super::lower::unit());
        };
        let (stmts, some) = (&p.stmts, &p.some);
        let mut a = (*some_arm.body).clone();
        syn::visit_mut::VisitMut::visit_expr_mut(&mut super::chains::StripDerefs(&names), &mut a);
        let b = &none_arm.body;
        let tokens = quote_spanned!(m.span()=> {
            #stmts
            if #some { #bind #a } else { #b }
        });
        Some(self.lower_option_tokens(tokens, m.span()))
    }

    fn lower_option_tokens(&mut self, tokens: TokenStream, span: Span) -> Operand {
        match syn::parse2::<Expr>(tokens) {
            Ok(e) => self.lower_expr(&e),
            Err(_) => self.refuse(
                quote_spanned!(span=> __mooncake),
                "this use of an `Option` is not supported in #[differentiable] functions",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_taken_apart_expand_without_errors() {
        for f in [
            "fn f(x: &[f64], i: usize) -> f64 { x.get(i).copied().unwrap_or(0.0) }",
            "fn f(x: &[f64]) -> f64 { *x.first().unwrap() * x.last().copied().unwrap() }",
            "fn f(x: &[f64]) -> f64 { if let Some(v) = x.get(2) { *v } else { 1.0 } }",
            "fn f(x: &[f64]) -> f64 { let Some(&v) = x.last() else { return 0.0; }; v }",
            "fn f(x: &[f64]) -> f64 { match x.first() { Some(v) => v * 2.0, None => 0.0 } }",
            "fn f(x: &[f64]) -> f64 { x.iter().copied().max_by(|a, b| a.total_cmp(b)).unwrap() }",
            "fn f(x: &[f64]) -> f64 { *x.iter().min_by(|a, b| a.partial_cmp(b).unwrap()).unwrap() }",
            "fn f(x: &[f64]) -> f64 { x.iter().copied().reduce(f64::max).unwrap_or(0.0) }",
        ] {
            let out = crate::differentiable::expand_source(f);
            assert!(!out.contains("compile_error"), "{f}: {out}");
        }
    }

    #[test]
    fn an_option_not_taken_apart_is_built_or_refused() {
        // An `Option` of values is built (`variants.rs`); one of references stays refused.
        let out = crate::differentiable::expand_source(
            "fn f(x: &[f64]) -> f64 { let m = x.iter().copied().reduce(f64::max); 0.0 }",
        );
        assert!(!out.contains("compile_error"), "{out}");
        let out = crate::differentiable::expand_source(
            "fn f(x: &[f64]) -> f64 { let m = x.iter().reduce(|a, b| if a > b { a } else { b }); 0.0 }",
        );
        assert!(out.contains("returns an `Option`"), "{out}");
        let out = crate::differentiable::expand_source(
            "fn f(x: &[(f64, f64)]) -> f64 { match x.get(0) { Some(v) if v.0 > 0.0 => 1.0, _ => 0.0 } }",
        );
        assert!(out.contains("guards in a `match` on an `Option`"), "{out}");
    }
    /// `a.map(f)` of an array of known length is unrolled (`[f(a[0]), ..]`), never taken for
    /// `Option::map`, also for a local bound to such a map.
    #[test]
    fn array_map_of_known_length_is_unrolled() {
        let out = crate::differentiable::expand_source(
            "fn u3(state: [f64; 3], dt: f64) -> f64 { let next = state.map(|v| v + dt * v.sin()); let scaled = next.map(f64::sqrt); scaled[0] + scaled[1] * scaled[2] }",
        );
        assert!(!out.contains("map_residual"), "{out}");
    }
}
