//! Enum values in the body (issue 14, items 6 and 7): `Option`, `Result` and
//! `#[derive(Tangent)]` enums with data, kept in variables, passed, returned, built
//! (`Some(v)`, `Ok(v)`, `Err(e)`, `Act::Leaky(a)`) and taken apart (`match` arms binding a
//! variant's fields, `if let`, `let .. else`, `while let`, `?`, `unwrap`, `expect`,
//! `unwrap_or`, `is_some`, `is_none`, `is_ok`, `is_err`).
//!
//! Nothing here needs the enum's type: a variant is built by the runtime's
//! `enums::variant_new::<E, KEY>` from the tuple of its fields (`E` is `Option<_>`,
//! `Result<_, _>`, or the path before the variant's name), and taken apart by
//! `enums::variant_fields::<_, KEY>`, which the scrutinee's type dispatches (`KEY` is the
//! variant's name as a number, as for methods). Both are calls of rules, so their derivatives
//! need nothing more of the transforms. The tests (which variant, `None` or `Err`) are
//! [`Rvalue::Matches`] on primal values; "is a residual" is [`residual_pattern`].
//!
//! `Option`s that are made and taken apart at once (`x.first()`, chains ending in `max_by`)
//! keep their own lowering (`options.rs`), which computes no `Option` at all.

use super::forward::method_key;
use super::ir::{Local, Operand, Place, Projection, Rvalue, TerminatorKind, residual_pattern};
use super::lower::Lower;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat};

/// The methods of `Option` and `Result` taken apart here (on values that `options.rs` does
/// not know).
pub(super) const METHODS: &[&str] = &[
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_default",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "map",
    "map_or",
    "ok",
    "ok_or",
];

/// The enum a call `path(..)` builds a variant of, if the path names a variant by its syntax:
/// `Some` (`Option<_>`), `Ok` / `Err` (`Result<_, _>`), or `Enum::Variant` (a path of two or
/// more segments whose last two both start with a capital letter, as Rust style has enums and
/// their variants; `Self::Variant` too).
pub(super) fn variant_type(path: &syn::Path) -> Option<TokenStream> {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = names.last()?;
    let std_prefix = |ty: &str| {
        let head = &names[..names.len() - 1];
        head.is_empty()
            || head.last().is_some_and(|h| h == ty)
                && head[..head.len() - 1]
                    .iter()
                    .all(|s| matches!(s.as_str(), "std" | "core" | "option" | "result"))
    };
    match last.as_str() {
        "Some" if std_prefix("Option") => return Some(quote!(::core::option::Option<_>)),
        "Ok" | "Err" if std_prefix("Result") => return Some(quote!(::core::result::Result<_, _>)),
        _ => {}
    }
    let capital = |s: &String| s.starts_with(|c: char| c.is_ascii_uppercase());
    if names.len() >= 2 && capital(last) && capital(&names[names.len() - 2]) {
        let mut ty = path.clone();
        ty.segments.pop();
        // The punctuation left after the last segment goes too.
        let ty_segments = ty.segments.iter();
        let leading = ty.leading_colon;
        return Some(quote!(#leading #(#ty_segments)::*));
    }
    None
}

/// Whether a pattern `Path(..)` is a variant of an enum (rather than a tuple struct) by its
/// syntax: the paths [`variant_type`] knows.
fn is_variant_pattern(path: &syn::Path) -> bool {
    variant_type(path).is_some()
}

/// `pat` with every binding replaced by `_` (`Some(v)` is `Some(_)`, `n @ 1..=3` is `1..=3`):
/// the test of a pattern whose bindings are made apart.
fn without_bindings(pat: &Pat) -> Pat {
    struct Strip;
    impl VisitMut for Strip {
        fn visit_pat_mut(&mut self, p: &mut Pat) {
            if let Pat::Ident(pi) = p
                && pi.ident.to_string().starts_with(|c: char| c.is_lowercase() || c == '_')
            {
                *p = match pi.subpat.take() {
                    Some((_, sub)) => *sub,
                    None => Pat::Wild(syn::PatWild {
                        attrs: Vec::new(),
                        underscore_token: syn::Token![_](pi.ident.span()),
                    }),
                };
            }
            syn::visit_mut::visit_pat_mut(self, p);
        }
    }
    let mut p = pat.clone();
    Strip.visit_pat_mut(&mut p);
    p
}

impl Lower<'_> {
    /// `Some(a)`, `Ok(a)`, `Act::Leaky(a, b)` of the enum `ty`: the variant built from the
    /// tuple of its fields.
    pub(super) fn lower_variant_new(
        &mut self,
        func: &syn::Path,
        ty: TokenStream,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        span: Span,
    ) -> Operand {
        let ops = self.lower_operands(args.iter());
        let fields = self.emit(Rvalue::Tuple(ops), span);
        let name = func.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        self.build_variant(fields, ty, &name, span)
    }

    /// Whether `pat` (an arm's pattern, or that of `if let`) takes a variant apart, binding
    /// its fields: a tuple-struct pattern (`Some(v)`, `Ok((a, b))`, `Leaky(k)`) that binds.
    pub(super) fn binds_variant(pat: &Pat) -> bool {
        matches!(pat, Pat::TupleStruct(_) | Pat::Tuple(_)) && super::lower::pattern_binds(pat)
    }

    /// The test of an arm's pattern that binds a variant's fields: the pattern without its
    /// bindings.
    pub(super) fn variant_test(pat: &Pat) -> Pat {
        without_bindings(pat)
    }

    /// Binds the names of `pat`, a pattern the value in `scrutinee` matched: a variant's
    /// fields taken out as a tuple (`Some(v)`, `Act::Affine(a, b)`), each bound to its
    /// sub-pattern (a variant again, `Some(Ok(v))`, taken apart the same way), or the parts of
    /// a tuple (`(Some(x), None)`) bound one by one.
    pub(super) fn bind_variant(&mut self, pat: &Pat, scrutinee: Place, span: Span) {
        let elems_at = |base: &Place, i: usize, elem: &Pat| {
            let mut place = base.clone();
            place.projections.push(Projection::Field(syn::Member::Unnamed(syn::Index {
                index: i as u32,
                span: elem.span(),
            })));
            place
        };
        let (elems, base) = match pat {
            Pat::TupleStruct(ps) => {
                if ps.elems.iter().any(|e| matches!(e, Pat::Rest(_))) {
                    self.refuse(
                        ps,
                        "`..` in a pattern that binds a variant's fields is not supported; name \
                         each field (`_` for those not used)",
                    );
                    return;
                }
                let name = ps.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                let key = method_key(&name);
                let rule: syn::Path = syn::parse_quote_spanned!(span=>
                    ::mooncake_runtime::__private::enums::variant_fields::<_, #key>);
                let fields = self
                    .emit(Rvalue::Call { func: rule, args: vec![Operand::Use(scrutinee)] }, span);
                let Operand::Use(base) = fields else { return };
                (&ps.elems, base)
            }
            Pat::Tuple(pt) if !pt.elems.iter().any(|e| matches!(e, Pat::Rest(_))) => {
                (&pt.elems, scrutinee)
            }
            _ => {
                self.bind_pattern(pat, None, Operand::Use(scrutinee), span);
                return;
            }
        };
        // Directly in a tuple, a tuple-struct pattern is a variant (a tuple struct, which
        // cannot fail to match, is seldom matched); inside a variant, only the paths
        // `variant_type` knows are.
        let in_tuple = matches!(pat, Pat::Tuple(_));
        for (i, elem) in elems.iter().enumerate() {
            if !super::lower::pattern_binds(elem) {
                continue;
            }
            let place = elems_at(&base, i, elem);
            match elem {
                Pat::TupleStruct(inner) if in_tuple || is_variant_pattern(&inner.path) => {
                    let l = self.temp(elem.span());
                    self.assign(Place::local(l), Rvalue::Use(Operand::Use(place)), span);
                    self.bind_variant(elem, Place::local(l), span);
                }
                Pat::Tuple(_) => {
                    let l = self.temp(elem.span());
                    self.assign(Place::local(l), Rvalue::Use(Operand::Use(place)), span);
                    self.bind_variant(elem, Place::local(l), span);
                }
                _ => self.bind_pattern(elem, None, Operand::Use(place), span),
            }
        }
    }

    /// `if let PAT = e { a } else { b }` on a value `options.rs` does not know: the `match`
    /// `match e { PAT => a, _ => b }`.
    pub(super) fn lower_if_let_value(&mut self, i: &syn::ExprIf) -> Option<Operand> {
        let Expr::Let(l) = &*i.cond else { return None };
        let otherwise = match &i.else_branch {
            Some((_, e)) => (**e).clone(),
            None => block_expr(syn::Block { brace_token: Default::default(), stmts: Vec::new() }),
        };
        let then = block_expr(i.then_branch.clone());
        let m = match_expr(&l.expr, vec![arm((*l.pat).clone(), then), arm(wild(), otherwise)]);
        Some(self.lower_match(&m))
    }

    /// `while let PAT = e { body }` on a value `options.rs` does not know: `loop { match e {
    /// PAT => body, _ => break } }`, with the loop's label.
    pub(super) fn lower_while_let_value(&mut self, w: &syn::ExprWhile) -> Option<Operand> {
        let Expr::Let(l) = &*w.cond else { return None };
        if let Expr::MethodCall(m) = &*l.expr
            && m.method == "next"
            && m.args.is_empty()
        {
            return Some(self.refuse(
                &m.method,
                "`while let Some(v) = it.next()` over an iterator is not supported in \
                 #[differentiable] functions; write `for v in ..` over the iterator's source",
            ));
        }
        let brk = Expr::Break(syn::ExprBreak {
            attrs: Vec::new(),
            break_token: Default::default(),
            label: w.label.as_ref().map(|lb| lb.name.clone()),
            expr: None,
        });
        let body = block_expr(w.body.clone());
        let m = match_expr(&l.expr, vec![arm((*l.pat).clone(), body), arm(wild(), brk)]);
        let lp = syn::ExprLoop {
            attrs: Vec::new(),
            label: w.label.clone(),
            loop_token: Default::default(),
            body: syn::Block {
                brace_token: Default::default(),
                stmts: vec![syn::Stmt::Expr(Expr::Match(m), None)],
            },
        };
        Some(self.lower_expr(&Expr::Loop(lp)))
    }

    /// `let PAT = e else { .. };` on a value `options.rs` does not know: the names `PAT` binds,
    /// bound to `match e { PAT => (names..), _ => { .. } }`.
    pub(super) fn lower_let_else_value(&mut self, local: &syn::Local) -> bool {
        let Some(init) = &local.init else { return false };
        let Some((_, diverge)) = &init.diverge else { return false };
        let mut names = Vec::new();
        super::chains::pattern_names(&local.pat, &mut names);
        let span = local.span();
        let tuple_expr = Expr::Tuple(syn::ExprTuple {
            attrs: Vec::new(),
            paren_token: Default::default(),
            elems: names.iter().map(|n| path_expr(n.clone())).collect(),
        });
        let m = match_expr(
            &init.expr,
            vec![arm(local.pat.clone(), tuple_expr), arm(wild(), (**diverge).clone())],
        );
        let value = self.lower_match(&m);
        let tuple = Pat::Tuple(syn::PatTuple {
            attrs: Vec::new(),
            paren_token: Default::default(),
            elems: names
                .into_iter()
                .map(|n| {
                    Pat::Ident(syn::PatIdent {
                        attrs: Vec::new(),
                        by_ref: None,
                        mutability: None,
                        ident: n,
                        subpat: None,
                    })
                })
                .collect(),
        });
        self.bind_pattern(&tuple, None, value, span);
        true
    }

    /// `e?`: the output of `e`, or, if `e` is a residual (`None`, `Err(..)`), a return of
    /// that residual converted into the function's result (`None`, `Err(From::from(e))`).
    pub(super) fn lower_try(&mut self, t: &syn::ExprTry) -> Operand {
        let span = t.question_token.span();
        // `x.first()?` on an `Option` `options.rs` knows: its `match`, which builds none.
        if super::options::makes_option(&t.expr) {
            let v = syn::Ident::new("__mooncake_v", span);
            let some: Pat = syn::parse_quote_spanned!(span=> Some(__mooncake_v));
            let none: Pat = syn::parse_quote_spanned!(span=> None);
            let ret: Expr = syn::parse_quote_spanned!(span=> return ::core::option::Option::None);
            let m = match_expr(&t.expr, vec![arm(some, path_expr(v)), arm(none, ret)]);
            return self.lower_match(&m);
        }
        let v = self.lower_expr(&t.expr);
        let s = self.operand_local(v, t.expr.span());
        let test = self.temp(span);
        self.assign(
            Place::local(test),
            Rvalue::Matches(Place::local(s), residual_pattern(span)),
            span,
        );
        let residual = self.new_block();
        let output = self.new_block();
        self.terminate(
            TerminatorKind::Branch { cond: test, then: residual, otherwise: output },
            span,
        );
        self.switch_to(residual);
        let rule: syn::Path =
            syn::parse_quote_spanned!(span=> ::mooncake_runtime::__private::enums::try_residual);
        let r =
            self.emit(Rvalue::Call { func: rule, args: vec![Operand::Use(Place::local(s))] }, span);
        self.assign(Place::local(Local::RETURN), Rvalue::Use(r), span);
        self.terminate(TerminatorKind::Return, span);
        self.switch_to(output);
        self.try_output(s, quote!(""), span)
    }

    /// The output of the `Option` or `Result` in `s`, panicking with `message` if there is none.
    fn try_output(&mut self, s: Local, message: TokenStream, span: Span) -> Operand {
        let rule: syn::Path =
            syn::parse_quote_spanned!(span=> ::mooncake_runtime::__private::enums::try_output);
        let args = vec![Operand::Use(Place::local(s)), Operand::Const(message)];
        self.emit(Rvalue::Call { func: rule, args }, span)
    }

    /// `if s is a residual { residual(..) } else { output(..) }`, the value of either.
    fn on_residual(
        &mut self,
        s: Local,
        span: Span,
        residual: impl FnOnce(&mut Self) -> Operand,
        output: impl FnOnce(&mut Self) -> Operand,
    ) -> Operand {
        let test = self.temp(span);
        self.assign(
            Place::local(test),
            Rvalue::Matches(Place::local(s), residual_pattern(span)),
            span,
        );
        let result = self.temp(span);
        let (yes, no, join) = (self.new_block(), self.new_block(), self.new_block());
        self.terminate(TerminatorKind::Branch { cond: test, then: yes, otherwise: no }, span);
        self.switch_to(yes);
        let v = residual(self);
        self.assign(Place::local(result), Rvalue::Use(v), span);
        self.goto(join, span);
        self.switch_to(no);
        let v = output(self);
        self.assign(Place::local(result), Rvalue::Use(v), span);
        self.goto(join, span);
        self.switch_to(join);
        Operand::Use(Place::local(result))
    }

    /// `f(value)`: `f` a closure (inlined, as a closure bound by `let` is), a function's path,
    /// or the name of a closure bound by `let`.
    fn apply_to(&mut self, f: &Expr, value: Operand, span: Span) -> Operand {
        self.scoped(|cx| {
            let arg = arg_name(span);
            let l = cx.new_local(Some(arg.clone()), None, span);
            cx.assign(Place::local(l), Rvalue::Use(value), span);
            cx.bind(arg, l);
            let func = match f {
                Expr::Closure(c) => {
                    let name = syn::Ident::new("__mooncake_fn", span);
                    cx.define_closure(&name, c);
                    path_expr(name)
                }
                Expr::Path(p) if p.qself.is_none() => f.clone(),
                other => {
                    return cx.refuse(
                        other,
                        "pass a closure (`|v| ..`) or a function's name (`f64::sqrt`) here",
                    );
                }
            };
            let call = Expr::Call(syn::ExprCall {
                attrs: Vec::new(),
                func: Box::new(func),
                paren_token: Default::default(),
                args: std::iter::once(path_expr(arg_name(span))).collect(),
            });
            cx.lower_expr(&call)
        })
    }

    /// `Some(v)`.
    fn some(&mut self, v: Operand, span: Span) -> Operand {
        self.variant(v, quote!(::core::option::Option<_>), "Some", span)
    }

    /// The variant `name` of the enum `ty` holding `v`.
    fn variant(&mut self, v: Operand, ty: TokenStream, name: &str, span: Span) -> Operand {
        let fields = self.emit(Rvalue::Tuple(vec![v]), span);
        self.build_variant(fields, ty, name, span)
    }

    /// The variant `name` of the enum `ty` built from `fields`, a tuple.
    fn build_variant(
        &mut self,
        fields: Operand,
        ty: TokenStream,
        name: &str,
        span: Span,
    ) -> Operand {
        let key = method_key(name);
        let rule = quote_spanned!(span=>
            ::mooncake_runtime::__private::enums::variant_new::<#ty, #key>);
        match syn::parse2::<syn::Path>(rule) {
            Ok(rule) => self.emit(Rvalue::Call { func: rule, args: vec![fields] }, span),
            Err(_) => self.refuse(
                ty,
                "this path of an enum's variant is not supported; name it `Enum::Variant`",
            ),
        }
    }

    /// `e.unwrap()`, `e.expect(m)`, `e.unwrap_or(d)`, `e.is_some()`, `e.is_none()`, `e.is_ok()`,
    /// `e.is_err()` on an `Option` or `Result` value; `None` for other methods.
    pub(super) fn lower_try_method(&mut self, m: &syn::ExprMethodCall) -> Option<Operand> {
        let name = m.method.to_string();
        if !METHODS.contains(&name.as_str()) {
            return None;
        }
        let span = m.span();
        // `a.map(f)` of an array of known length (`[a, b, c]`, `x: [f64; 3]`): `[f(a[0]), ..]`.
        if name == "map"
            && m.args.len() == 1
            && let Some(n) = self.literal_array_len(&m.receiver)
        {
            let a = self.place_of(&m.receiver);
            let elems = (0..n)
                .map(|i| {
                    let k = self.temp(span);
                    self.assign(Place::local(k), Rvalue::Use(Operand::Const(quote!(#i))), span);
                    let mut place = a.clone();
                    if matches!(place.projections.last(), Some(Projection::Deref)) {
                        place.projections.pop();
                    }
                    place.projections.push(Projection::Index(k));
                    let v = self.emit(Rvalue::Use(Operand::Use(place)), span);
                    self.apply_to(&m.args[0], v, span)
                })
                .collect();
            return Some(self.emit(Rvalue::Array(elems), span));
        }
        let arity = match name.as_str() {
            "expect" | "unwrap_or" | "map" | "ok_or" => 1,
            "map_or" => 2,
            _ => 0,
        };
        if m.args.len() != arity {
            return None;
        }
        // An `Option` `options.rs` knows (`x.first().copied()`), as a value; one behind a
        // reference (`o: &Option<f64>`), the value behind it.
        let v = if super::options::makes_option(&m.receiver) {
            self.lower_option_value(&m.receiver)
        } else if let Some(place) = self.ref_place(&m.receiver) {
            Operand::Use(place)
        } else {
            self.lower_expr(&m.receiver)
        };
        let s = self.operand_local(v, m.receiver.span());
        let residual = || Rvalue::Matches(Place::local(s), residual_pattern(m.method.span()));
        Some(match name.as_str() {
            "unwrap" => self.try_output(
                s,
                quote_spanned!(span=> "called `unwrap()` on a `None` or `Err` value"),
                span,
            ),
            "expect" => {
                let msg = &m.args[0];
                self.try_output(s, quote!(#msg), span)
            }
            "is_none" | "is_err" => self.emit(residual(), span),
            "is_some" | "is_ok" => {
                let r = self.emit(residual(), span);
                self.emit(Rvalue::Unary(super::ir::UnOp::Not, r), span)
            }
            "map" => {
                // A residual kept as the mapped kind (`None`, the same `Err(e)`); or the output
                // split from the receiver's kind (`enums::Kind`, so that the receiver is used
                // once on each path), the closure applied, and the value wrapped as that kind.
                let rule = |name: &str| -> syn::Path {
                    let name = syn::Ident::new(name, span);
                    syn::parse_quote_spanned!(span=> ::mooncake_runtime::__private::enums::#name)
                };
                let s_op = Operand::Use(Place::local(s));
                self.on_residual(
                    s,
                    span,
                    |cx| {
                        cx.emit(
                            Rvalue::Call { func: rule("map_residual"), args: vec![s_op.clone()] },
                            span,
                        )
                    },
                    |cx| {
                        let pair = cx.emit(
                            Rvalue::Call { func: rule("try_split"), args: vec![s_op.clone()] },
                            span,
                        );
                        let Operand::Use(pair) = pair else { return super::lower::unit() };
                        let part = |i: u32| {
                            let mut p = pair.clone();
                            p.projections.push(Projection::Field(syn::Member::Unnamed(
                                syn::Index { index: i, span },
                            )));
                            Operand::Use(p)
                        };
                        let v = cx.apply_to(&m.args[0], part(0), span);
                        cx.emit(
                            Rvalue::Call { func: rule("map_wrap"), args: vec![v, part(1)] },
                            span,
                        )
                    },
                )
            }
            _ => {
                // `if residual { d } else { value }`, `d` evaluated first (as an argument is):
                // `unwrap_or(d)`, `unwrap_or_default()`, `map_or(d, f)` (`f(v)`), `ok()` (`None`
                // or `Some(v)`), `ok_or(e)` (`Err(e)` or `Ok(v)`).
                let result_ty = quote!(::core::result::Result<_, _>);
                let d = match name.as_str() {
                    "map_or" | "unwrap_or" => self.lower_expr(&m.args[0]),
                    "ok" => Operand::Const(quote_spanned!(span=> ::core::option::Option::None)),
                    "ok_or" => {
                        let e = self.lower_expr(&m.args[0]);
                        self.variant(e, result_ty.clone(), "Err", span)
                    }
                    _ => Operand::Const(quote_spanned!(span=> ::core::default::Default::default())),
                };
                self.on_residual(
                    s,
                    span,
                    |_| d,
                    |cx| {
                        let out = cx.try_output(s, quote!(""), span);
                        match name.as_str() {
                            "map_or" => cx.apply_to(&m.args[1], out, span),
                            "ok" => cx.some(out, span),
                            "ok_or" => cx.variant(out, result_ty, "Ok", span),
                            _ => out,
                        }
                    },
                )
            }
        })
    }
}

/// The name `apply_to` binds the value to.
fn arg_name(span: Span) -> syn::Ident {
    syn::Ident::new("__mooncake_arg", span)
}

/// `name` as an expression.
fn path_expr(name: syn::Ident) -> Expr {
    Expr::Path(syn::ExprPath { attrs: Vec::new(), qself: None, path: name.into() })
}

/// `{ .. }` as an expression.
fn block_expr(block: syn::Block) -> Expr {
    Expr::Block(syn::ExprBlock { attrs: Vec::new(), label: None, block })
}

/// `_`.
fn wild() -> Pat {
    Pat::Wild(syn::PatWild { attrs: Vec::new(), underscore_token: Default::default() })
}

/// `pat => body,`.
fn arm(pat: Pat, body: Expr) -> syn::Arm {
    syn::Arm {
        attrs: Vec::new(),
        pat,
        guard: None,
        fat_arrow_token: Default::default(),
        body: Box::new(body),
        comma: Some(Default::default()),
    }
}

/// `match e { arms }`, built as syntax (never parsed: `e` may be any expression).
fn match_expr(e: &Expr, arms: Vec<syn::Arm>) -> syn::ExprMatch {
    syn::ExprMatch {
        attrs: Vec::new(),
        match_token: Default::default(),
        expr: Box::new(e.clone()),
        brace_token: Default::default(),
        arms,
    }
}
