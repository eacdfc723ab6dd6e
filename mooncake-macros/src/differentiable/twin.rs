//! `#[differentiable(second_order)]`: the reverse rule of a function written over `f64`, derived
//! from a copy of it over a type parameter `__F: Float` (its twin), so that the rule also runs
//! on dual numbers (`T = Fwd<f64>`) for `hvp!` and `hessian!` (issue 16).
//!
//! Forward over reverse runs the derived reverse rule on numbers that carry a tangent. A rule
//! derived from a function generic over `T: Float` can (it is instantiated at `Fwd<f64>`); one
//! derived from a function that writes `f64` cannot. With the option, the macro writes the same
//! function over `__F` and derives `NAME_rrule_twin` from it: generic over `__F`, instantiated at
//! `f64` by `NAME_rrule_wrt` (whose signature stays the function's own, so that the gradient
//! macros see the types they always saw) and at `Fwd<f64>` by `hvp!`. The reverse rule is
//! derived once; the cost is the twin's rewrite and lowering, paid only by functions that ask.
//!
//! The rewrite, on the syntax tree:
//!
//! * the type `f64` becomes `__F` wherever it is written (arguments, result, `let` annotations,
//!   turbofish, closure parameters);
//! * a float literal `2.5` becomes `__F::from_f64(2.5)` (a constant of `__F`: lowering knows
//!   it), inside `vec![..]` too, and so do the float constants lowering itself writes (the
//!   start of a chain's `sum()`: [`retype_float_constants`]);
//! * `e as f64` of an integer becomes `__F::from_f64(e as f64)`;
//! * `f64::sqrt(x)` (a float method called through the type) becomes `(x).sqrt()`, and an
//!   associated constant or `std::f64::consts::PI` becomes `__F::from_f64(..)` of it.
//!
//! It is done only where it cannot change what the function means: a free function, not generic
//! (lifetimes aside), with arguments that are numbers, buffers of numbers or shared references
//! to buffers, a result `f64`, no `f32` anywhere, no names from outside the function (a `const`
//! keeps its type), no type but numbers, `Vec`s, arrays, slices, tuples and references (a type
//! alias keeps its `f64`), no items, no macros that mention floats but `vec!` and the standard
//! ones whose arguments are expressions (`assert!`, `panic!`, `println!`, ..), no float
//! patterns, no calls but `Vec`'s constructors and other free functions (see [`twin_call`]:
//! the twin calls their rules generic over the float), and every cast of an operand the text shows to
//! be an integer (an integer argument, literal, `len()`, a counter of a range loop or of
//! `enumerate()`, arithmetic of those, a `let` of one; a name bound to anything else anywhere
//! counts as unknown). Its lowering must then succeed and its statements be ones the generic
//! rules cover ([`uncovered`]). Anything else is refused with a message at the tokens in the
//! way ([`Refusal`]; UI test `fail_second_order.rs`).

use super::FnParts;
use super::ir::{Body, NUMBER_METHODS, Operand, Rvalue, StatementKind};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote_spanned};
use std::collections::{HashMap, HashSet};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::{self, VisitMut};

/// The name of the twin's type parameter.
pub(crate) const PARAM: &str = "__F";

/// The suffix of the marker beside each free function that says whether its
/// `NAME_rrule_twin` is generic over the float (`order_marker` in `mod.rs`).
pub(crate) const ORDER_MARKER: &str = "__order";

/// The integer types (the operand of a cast must be one of these).
const INTS: &[&str] =
    &["i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize"];

/// Methods of an integer whose result is an integer of the same type.
const INT_PRESERVING: &[&str] = &[
    "min",
    "max",
    "abs",
    "pow",
    "saturating_sub",
    "saturating_add",
    "saturating_mul",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "rem_euclid",
    "div_euclid",
    "isqrt",
];

/// Methods whose result is a `usize` or `u32` whatever the receiver.
const INT_RESULT: &[&str] = &["len", "count", "count_ones", "leading_zeros", "trailing_zeros"];

/// The twin of a function: its signature and body over `__F`.
pub(crate) struct Twin {
    pub(crate) sig: syn::Signature,
    pub(crate) block: syn::Block,
}

/// Why a function has no twin: where, and what to do instead.
pub(crate) type Refusal = (Span, String);

/// What every refusal ends with.
const INSTEAD: &str = "write the function generic over `T: Float` instead (`fn f<T: Float>(x: &[T]) -> T`, \
                       with `T::from_f64(2.0)` for constants): its reverse rule is generic already";

fn refuse<T>(span: Span, what: &str) -> Result<T, Refusal> {
    Err((
        span,
        format!(
            "`second_order` derives the reverse rule from a copy of this function over a float type parameter, and {what}; {INSTEAD}"
        ),
    ))
}

/// The twin of `func`, if its text allows one with certainty (see the module's documentation);
/// else the first thing that does not, and why.
pub(crate) fn twin(func: &FnParts<'_>) -> Result<Twin, Refusal> {
    let sig = func.sig;
    let name = sig.ident.span();
    if func.in_impl || super::is_associated(func) {
        return refuse(name, "a method cannot have one (`Self` and the receiver keep their types)");
    }
    if sig.asyncness.is_some() || sig.constness.is_some() || sig.variadic.is_some() {
        return refuse(name, "an `async` or `const` function cannot have one");
    }
    if let Some(p) =
        sig.generics.params.iter().find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        return refuse(p.span(), "a function with type or const parameters cannot have one");
    }
    if let Some(w) = &sig.generics.where_clause {
        return refuse(w.span(), "a `where` clause cannot be kept in it");
    }
    let mut any_float = false;
    for input in &sig.inputs {
        let syn::FnArg::Typed(t) = input else {
            return refuse(input.span(), "a method cannot have one");
        };
        if !matches!(&*t.pat, syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()) {
            return refuse(t.pat.span(), "an argument must be a plain name");
        }
        any_float |= mentions_f64(&t.ty);
        if !argument_type(&t.ty) {
            return refuse(
                t.ty.span(),
                "its arguments must be `f64`, integers, `bool`, or `Vec`s, arrays or shared references to slices of them (not `&mut`, not structs)",
            );
        }
    }
    match &sig.output {
        syn::ReturnType::Type(_, t) if is_named(t, "f64") => {}
        syn::ReturnType::Type(_, t) => return refuse(t.span(), "its result must be `f64`"),
        syn::ReturnType::Default => return refuse(name, "its result must be `f64`"),
    }
    if !any_float {
        return refuse(name, "no argument is a float");
    }
    if let Some(t) = find_ident(func.block.to_token_stream(), &["f32", "Self"]) {
        return refuse(t.span(), "`f32` and `Self` cannot be rewritten in it");
    }
    let (ints, bound) = int_names(sig, func.block);
    let mut rewrite = Rewrite { ints: &ints, bound: &bound, refusal: None };
    let mut tsig = sig.clone();
    rewrite.visit_signature_mut(&mut tsig);
    let mut block = func.block.clone();
    rewrite.visit_block_mut(&mut block);
    if let Some((span, what)) = rewrite.refusal {
        return refuse(span, &what);
    }
    let param = format_ident!("{}", PARAM, span = Span::call_site());
    tsig.generics.params.push(syn::parse_quote!(#param: ::mooncake_runtime::Float));
    Ok(Twin { sig: tsig, block })
}

/// The first statement of the twin's lowered body without a rule generic over `T: Float`, if
/// any: no calls but the `Vec` constructors, `T::from_f64` and float methods, methods among the
/// numbers' and the buffers' that generic code uses, no struct literals, casts to integers.
pub(crate) fn uncovered(body: &Body) -> Option<Refusal> {
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(_, rv) = &s.kind else { continue };
            let what = match rv {
                Rvalue::Use(_)
                | Rvalue::Binary(..)
                | Rvalue::Unary(..)
                | Rvalue::Tuple(_)
                | Rvalue::Array(_)
                | Rvalue::Repeat(..)
                | Rvalue::VecList(_)
                | Rvalue::VecRepeat(..)
                | Rvalue::Matches(..) => None,
                // To an integer, or `e as f64` of an integer inside `__F::from_f64(..)`.
                Rvalue::Cast(_, ty) if int_type(ty) || is_named(ty, "f64") => None,
                Rvalue::Cast(..) => Some("a cast to a type other than an integer".to_owned()),
                Rvalue::Method { method, .. } if super::batched::leaf_method(method) => None,
                Rvalue::Method { method, .. } => {
                    Some(format!("the method `{method}` has no rule generic over the float"))
                }
                Rvalue::Call { func, .. } if super::batched::leaf_call(func) => None,
                Rvalue::Call { func, .. } if twin_call(func) => None,
                Rvalue::Call { .. } => {
                    Some("it cannot call this function (its rule is over `f64`)".to_owned())
                }
                Rvalue::Struct { .. } | Rvalue::Convert(..) => {
                    Some("it cannot build structs".to_owned())
                }
            };
            if let Some(what) = what {
                return Some((s.span, what));
            }
        }
    }
    None
}

/// Whether a call of `path` in the twin calls another derived function's rule generic over the
/// float: a free function (every segment lowercase, none with type arguments, not through
/// `std` or `core`), whose `NAME_rrule_twin` is its reverse rule derived from its own twin
/// (`second_order`) or, for a function generic over `T: Float`, its reverse rule itself. A
/// function written over `f64` without `second_order` has an `NAME_rrule_twin` over `f64`:
/// the call then fails to type-check at the user's call, with `__F` where `f64` is expected.
pub(crate) fn twin_call(path: &syn::Path) -> bool {
    let segs = &path.segments;
    !segs.is_empty()
        && segs.iter().all(|s| {
            s.arguments.is_none() && !s.ident.to_string().starts_with(|c: char| c.is_uppercase())
        })
        && !matches!(segs[0].ident.to_string().as_str(), "std" | "core" | "mooncake_runtime")
}

/// `refuse` for a statement of the twin's body.
pub(crate) fn refusal(span: Span, what: &str) -> Refusal {
    match refuse::<()>(span, what) {
        Err(r) => r,
        Ok(()) => unreachable!("refuse always refuses"),
    }
}

/// Gives the twin's float constants that lowering itself wrote (the `0.0` a chain's `sum()`
/// starts from) the type `__F`: every float literal of the user's text was rewritten already,
/// and every float in the twin is an `__F`.
pub(crate) fn retype_float_constants(body: &mut Body) {
    fn fix(op: &mut Operand) {
        if let Operand::Const(c) = op
            && let Ok(lit) = syn::parse2::<syn::LitFloat>(c.clone())
        {
            let span = lit.span();
            let p = format_ident!("{}", PARAM, span = span);
            *c = quote_spanned!(span=> <#p as ::mooncake_runtime::Float>::from_f64(#lit));
        }
    }
    for b in &mut body.blocks {
        for s in &mut b.statements {
            let StatementKind::Assign(_, rv) = &mut s.kind else { continue };
            match rv {
                Rvalue::Use(o)
                | Rvalue::Unary(_, o)
                | Rvalue::Cast(o, _)
                | Rvalue::Repeat(o, _) => fix(o),
                Rvalue::Convert(_, o) => fix(o),
                Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => {
                    fix(a);
                    fix(b);
                }
                Rvalue::Call { args, .. }
                | Rvalue::Method { args, .. }
                | Rvalue::Tuple(args)
                | Rvalue::Array(args)
                | Rvalue::VecList(args) => args.iter_mut().for_each(fix),
                Rvalue::Struct { fields, .. } => fields.iter_mut().for_each(|(_, o)| fix(o)),
                Rvalue::Matches(..) => {}
            }
        }
    }
}

/// Whether `ty` is the path `name` alone.
fn is_named(ty: &syn::Type, name: &str) -> bool {
    match ty {
        syn::Type::Paren(p) => is_named(&p.elem, name),
        syn::Type::Group(g) => is_named(&g.elem, name),
        syn::Type::Path(p) => p.qself.is_none() && p.path.is_ident(name),
        _ => false,
    }
}

fn mentions_f64(ty: &syn::Type) -> bool {
    mentions(ty.to_token_stream(), &["f64"])
}

/// Whether the tokens contain one of the identifiers `names`, at any depth.
fn mentions(tokens: TokenStream, names: &[&str]) -> bool {
    find_ident(tokens, names).is_some()
}

/// The first of the identifiers `names` in the tokens, at any depth.
fn find_ident(tokens: TokenStream, names: &[&str]) -> Option<proc_macro2::Ident> {
    tokens.into_iter().find_map(|t| match t {
        TokenTree::Ident(i) if names.iter().any(|n| i == n) => Some(i),
        TokenTree::Group(g) => find_ident(g.stream(), names),
        _ => None,
    })
}

/// `f64`, an integer or `bool`.
fn number(t: &syn::Type) -> bool {
    is_named(t, "f64") || is_named(t, "bool") || int_type(t)
}

/// A number, or a buffer of numbers (`Vec<E>`, `[E; N]`; a slice only behind a reference).
fn value_type(ty: &syn::Type) -> bool {
    !matches!(ty, syn::Type::Slice(_)) && super::batched::number_or_buffer(ty, &number)
}

/// An argument's type: a number or buffer of numbers, or a shared reference to one or to a
/// slice of numbers.
fn argument_type(ty: &syn::Type) -> bool {
    match ty {
        // A shared reference to a buffer (not to a number: `&f64` in arithmetic has rules for
        // `f64` and `f32` only).
        syn::Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
            syn::Type::Slice(s) => number(&s.elem),
            syn::Type::Array(_) => value_type(&r.elem),
            inner => value_type(inner) && !number(inner),
        },
        syn::Type::Reference(_) => false,
        ty => value_type(ty),
    }
}

fn int_type(ty: &syn::Type) -> bool {
    INTS.iter().any(|i| is_named(ty, i))
}

/// The names the text shows to hold integers: every binding of the name is an integer argument,
/// a `let` with an integer type or value, or the counter of a loop over an integer range.
fn int_names(sig: &syn::Signature, block: &syn::Block) -> (HashSet<String>, HashSet<String>) {
    #[derive(Default)]
    struct Bindings {
        // name -> what each binding is bound to: `Ok(expr)` to judge, `Err(is_int)` known.
        of: HashMap<String, Vec<Result<syn::Expr, bool>>>,
    }
    impl Bindings {
        fn bind(&mut self, pat: &syn::Pat, ty: Option<&syn::Type>, value: Option<&syn::Expr>) {
            match pat {
                syn::Pat::Ident(p) => {
                    let what = match (ty, value) {
                        (Some(t), _) => Err(int_type(t)),
                        (None, Some(e)) => Ok(e.clone()),
                        (None, None) => Err(false),
                    };
                    self.of.entry(p.ident.to_string()).or_default().push(what);
                    if let Some((_, sub)) = &p.subpat {
                        self.bind(sub, None, None);
                    }
                }
                syn::Pat::Type(t) => self.bind(&t.pat, Some(&t.ty), value),
                other => {
                    // Any other pattern: every name in it is unknown.
                    struct Names<'b>(&'b mut Bindings);
                    impl<'ast> Visit<'ast> for Names<'_> {
                        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                            self.0.of.entry(p.ident.to_string()).or_default().push(Err(false));
                        }
                    }
                    Names(self).visit_pat(other);
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Bindings {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            self.bind(&l.pat, None, l.init.as_ref().map(|i| &*i.expr));
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            // `for (i, v) in xs.iter().enumerate()`: `i` is a `usize`, `v` unknown.
            if let syn::Pat::Tuple(t) = &*f.pat
                && t.elems.len() == 2
                && enumerated(&f.expr)
            {
                self.bind(&t.elems[0], Some(&syn::parse_quote!(usize)), None);
                self.bind(&t.elems[1], None, None);
                syn::visit::visit_expr_for_loop(self, f);
                return;
            }
            // The counter of a loop over a range: an integer if an end of the range is.
            let range = strip_range_adapters(&f.expr);
            match range {
                Some(r) => {
                    let ends: Vec<syn::Expr> =
                        r.start.iter().chain(r.end.iter()).map(|e| (**e).clone()).collect();
                    let any = ends.into_iter().reduce(|a, b| syn::parse_quote!((#a) + (#b)));
                    match any {
                        // `(a) + (b)` is an integer if either end is (see `int_expr`).
                        Some(e) => self.bind(&f.pat, None, Some(&e)),
                        None => self.bind(&f.pat, None, None),
                    }
                }
                None => self.bind(&f.pat, None, None),
            }
            syn::visit::visit_expr_for_loop(self, f);
        }
        fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
            for p in &c.inputs {
                self.bind(p, None, None);
            }
            syn::visit::visit_expr_closure(self, c);
        }
        fn visit_arm(&mut self, a: &'ast syn::Arm) {
            self.bind(&a.pat, None, None);
            syn::visit::visit_arm(self, a);
        }
        fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
            self.bind(&l.pat, None, None);
            syn::visit::visit_expr_let(self, l);
        }
    }
    let mut b = Bindings::default();
    for input in &sig.inputs {
        if let syn::FnArg::Typed(t) = input {
            b.bind(&t.pat, Some(&t.ty), None);
        }
    }
    b.visit_block(block);
    // Grow the set to a fixed point: a name is an integer once every binding of it is.
    let bound: HashSet<String> = b.of.keys().cloned().collect();
    let mut ints: HashSet<String> = HashSet::new();
    loop {
        let before = ints.len();
        for (name, binds) in &b.of {
            if ints.contains(name) {
                continue;
            }
            let all = binds.iter().all(|w| match w {
                Err(k) => *k,
                Ok(e) => int_expr(e, &ints),
            });
            if all {
                ints.insert(name.clone());
            }
        }
        if ints.len() == before {
            return (ints, bound);
        }
    }
}

/// Whether the iterator's items are `enumerate()`'s pairs (adapters that keep them after it).
fn enumerated(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Paren(p) => enumerated(&p.expr),
        syn::Expr::MethodCall(m) if m.method == "enumerate" => true,
        syn::Expr::MethodCall(m)
            if ["rev", "skip", "take", "step_by"].iter().any(|a| m.method == a) =>
        {
            enumerated(&m.receiver)
        }
        _ => false,
    }
}

/// The range under `.rev()` / `.step_by(k)` adapters, if the expression is one.
fn strip_range_adapters(e: &syn::Expr) -> Option<&syn::ExprRange> {
    match e {
        syn::Expr::Range(r) => Some(r),
        syn::Expr::Paren(p) => strip_range_adapters(&p.expr),
        syn::Expr::Group(g) => strip_range_adapters(&g.expr),
        syn::Expr::MethodCall(m) if m.method == "rev" || m.method == "step_by" => {
            strip_range_adapters(&m.receiver)
        }
        _ => None,
    }
}

/// Whether the text shows `e` to be an integer, given the integer names `ints`.
fn int_expr(e: &syn::Expr, ints: &HashSet<String>) -> bool {
    use syn::BinOp::*;
    match e {
        syn::Expr::Lit(l) => {
            matches!(&l.lit, syn::Lit::Int(i) if !matches!(i.suffix(), "f32" | "f64"))
        }
        syn::Expr::Path(p) => {
            p.qself.is_none() && p.path.get_ident().is_some_and(|i| ints.contains(&i.to_string()))
        }
        syn::Expr::Paren(p) => int_expr(&p.expr, ints),
        syn::Expr::Group(g) => int_expr(&g.expr, ints),
        syn::Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && int_expr(&u.expr, ints),
        syn::Expr::Binary(b) => match b.op {
            Add(_) | Sub(_) | Mul(_) | Div(_) | Rem(_) | BitAnd(_) | BitOr(_) | BitXor(_) => {
                int_expr(&b.left, ints) || int_expr(&b.right, ints)
            }
            Shl(_) | Shr(_) => int_expr(&b.left, ints),
            _ => false,
        },
        syn::Expr::Cast(c) => int_type(&c.ty),
        syn::Expr::MethodCall(m) => {
            let name = m.method.to_string();
            INT_RESULT.contains(&name.as_str())
                || (INT_PRESERVING.contains(&name.as_str()) && int_expr(&m.receiver, ints))
        }
        _ => false,
    }
}

/// The rewrite to `__F` (see the module's documentation); `refusal` is set at the first thing it
/// cannot rewrite with certainty.
struct Rewrite<'a> {
    ints: &'a HashSet<String>,
    /// Every name the function binds (arguments, `let`s, loop counters, closure parameters):
    /// any other name is an item from outside (a `const SCALE: f64`), whose type the rewrite
    /// cannot change.
    bound: &'a HashSet<String>,
    /// The first thing the rewrite cannot do with certainty, and why.
    refusal: Option<Refusal>,
}

impl Rewrite<'_> {
    /// Records the first refusal.
    fn no(&mut self, span: Span, what: &str) {
        if self.refusal.is_none() {
            self.refusal = Some((span, what.to_owned()));
        }
    }

    fn param(span: Span) -> syn::Ident {
        format_ident!("{}", PARAM, span = span)
    }

    /// `__F::from_f64(tokens)`.
    fn from_f64(tokens: TokenStream, span: Span) -> syn::Expr {
        let p = Self::param(span);
        syn::parse_quote_spanned!(span=> #p::from_f64(#tokens))
    }

    /// `vec![..]` with its elements rewritten, and the expressions of the standard macros that
    /// take some (`assert!`, `assert_eq!`, `panic!`, `println!`, ..: a float's `Display` and
    /// `Debug` are `Float`'s); any other macro must not mention floats.
    fn rewrite_macro(&mut self, mac: &mut syn::Macro) {
        const WITH_EXPRESSIONS: &[&str] = &[
            "assert",
            "assert_eq",
            "assert_ne",
            "debug_assert",
            "debug_assert_eq",
            "debug_assert_ne",
            "panic",
            "unreachable",
            "todo",
            "unimplemented",
            "print",
            "println",
            "eprint",
            "eprintln",
            "format",
        ];
        if WITH_EXPRESSIONS.iter().any(|m| mac.path.is_ident(m)) {
            let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
            match syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
                Ok(mut args) => {
                    for e in args.iter_mut() {
                        self.visit_expr_mut(e);
                    }
                    let span = mac.tokens.span();
                    mac.tokens = quote_spanned!(span=> #args);
                }
                Err(_) => self.no(mac.path.span(), "this macro's arguments could not be read"),
            }
            return;
        }
        if !mac.path.is_ident("vec") {
            let lit_float = |t: &TokenStream| {
                fn any_float(tokens: TokenStream) -> bool {
                    tokens.into_iter().any(|t| match t {
                        TokenTree::Literal(l) => {
                            let s = l.to_string();
                            syn::parse_str::<syn::LitFloat>(&s).is_ok()
                        }
                        TokenTree::Group(g) => any_float(g.stream()),
                        _ => false,
                    })
                }
                any_float(t.clone())
            };
            // A macro this rewrite does not read: accepted only if it shows no float.
            if lit_float(&mac.tokens) || mentions(mac.tokens.clone(), &["f64", "f32"]) {
                self.no(
                    mac.path.span(),
                    "a macro other than `vec!` that mentions a float cannot be rewritten in it",
                );
            }
            // Macros other than `vec!` reach the rule as checks of the primal; lowering decides.
            return;
        }
        let span = mac.tokens.span();
        // `vec![e; n]`
        if let Ok(mut rep) = syn::parse2::<VecRepeat>(mac.tokens.clone()) {
            self.visit_expr_mut(&mut rep.elem);
            self.visit_expr_mut(&mut rep.len);
            let (e, n) = (&rep.elem, &rep.len);
            mac.tokens = quote_spanned!(span=> #e; #n);
            return;
        }
        // `vec![a, b, ..]`
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        match syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            Ok(mut elems) => {
                for e in elems.iter_mut() {
                    self.visit_expr_mut(e);
                }
                mac.tokens = quote_spanned!(span=> #elems);
            }
            Err(_) => self.no(span, "this `vec!` could not be read"),
        }
    }
}

struct VecRepeat {
    elem: syn::Expr,
    len: syn::Expr,
}

impl syn::parse::Parse for VecRepeat {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let elem = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        let len = input.parse()?;
        Ok(VecRepeat { elem, len })
    }
}

impl VisitMut for Rewrite<'_> {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if is_named(ty, "f64") {
            let p = Self::param(ty.span());
            *ty = syn::parse_quote!(#p);
            return;
        }
        // Only types built from numbers, `Vec`, arrays, slices, tuples and references: a type
        // alias (`Real` for `f64`) or a user type would keep its `f64` inside.
        match ty {
            syn::Type::Path(p) => {
                let known = p.qself.is_none()
                    && match p.path.segments.len() {
                        1 => {
                            let id = &p.path.segments[0].ident;
                            id == "Vec" || id == "bool" || INTS.iter().any(|i| id == i)
                        }
                        _ => p
                            .path
                            .segments
                            .iter()
                            .map(|s| s.ident.to_string())
                            .eq(["std", "vec", "Vec"]),
                    };
                if !known {
                    self.no(
                        p.span(),
                        "a type other than numbers, `Vec`s, arrays, slices, tuples and references (a type alias, a user type) cannot be rewritten in it",
                    );
                    return;
                }
            }
            syn::Type::Array(_)
            | syn::Type::Slice(_)
            | syn::Type::Tuple(_)
            | syn::Type::Reference(_)
            | syn::Type::Paren(_)
            | syn::Type::Group(_)
            | syn::Type::Infer(_) => {}
            _ => {
                self.no(ty.span(), "this type cannot be rewritten in it");
                return;
            }
        }
        visit_mut::visit_type_mut(self, ty);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.refusal.is_some() {
            return;
        }
        let span = e.span();
        match e {
            syn::Expr::Lit(l) if matches!(&l.lit, syn::Lit::Float(f) if f.suffix() != "f32") => {
                let lit = l.to_token_stream();
                *e = Self::from_f64(lit, span);
            }
            syn::Expr::Lit(l) if matches!(&l.lit, syn::Lit::Int(i) if matches!(i.suffix(), "f32" | "f64")) =>
            {
                self.no(span, "write this literal with a decimal point (`2.0`)");
            }
            syn::Expr::Cast(c) => {
                if !int_expr(&c.expr, self.ints) {
                    self.no(
                        c.expr.span(),
                        "a cast is rewritten only of a value the text shows to be an integer (an integer argument or literal, `len()`, the counter of a loop over a range, arithmetic of these)",
                    );
                    return;
                }
                self.visit_expr_mut(&mut c.expr);
                if is_named(&c.ty, "f64") {
                    let inner = &c.expr;
                    *e = Self::from_f64(quote_spanned!(span=> (#inner) as f64), span);
                } else if !int_type(&c.ty) {
                    self.no(c.ty.span(), "a cast to this type cannot be rewritten in it");
                }
            }
            // `f64::sqrt(x, ..)`: the method on its first argument.
            syn::Expr::Call(c) => {
                if let syn::Expr::Path(p) = &*c.func
                    && p.qself.is_none()
                    && p.path.segments.len() == 2
                    && p.path.segments[0].ident == "f64"
                {
                    let method = p.path.segments[1].ident.clone();
                    if !NUMBER_METHODS.iter().any(|m| method == m)
                        || c.args.is_empty()
                        || !p.path.segments[1].arguments.is_none()
                    {
                        self.no(
                            p.span(),
                            "this function of `f64` has no rule generic over the float",
                        );
                        return;
                    }
                    for a in c.args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    let mut args = c.args.iter();
                    let first = args.next().expect("checked");
                    let rest: Vec<&syn::Expr> = args.collect();
                    *e = syn::parse_quote_spanned!(span=> (#first).#method(#(#rest),*));
                    return;
                }
                if let syn::Expr::Path(p) = &*c.func {
                    let segs = &p.path.segments;
                    let constructor = segs.len() == 2
                        && segs[0].ident == "Vec"
                        && (segs[1].ident == "new" || segs[1].ident == "with_capacity");
                    if !constructor {
                        // Another `#[differentiable]` function: its rule generic over the
                        // float is called (`NAME_rrule_twin`, see `twin_call`).
                        if !twin_call(&p.path) || p.qself.is_some() {
                            self.no(
                                p.span(),
                                "it can call only free functions named by a path without type arguments (another function generic over `T: Float` or marked `second_order`), not this",
                            );
                            return;
                        }
                        for a in c.args.iter_mut() {
                            self.visit_expr_mut(a);
                        }
                        return;
                    }
                }
                visit_mut::visit_expr_mut(self, e);
            }
            // `f64::EPSILON`, `std::f64::consts::PI`: constants of `f64`.
            syn::Expr::Path(p)
                if p.path.segments.iter().any(|s| s.ident == "f64") && p.qself.is_none() =>
            {
                let segs: Vec<String> =
                    p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
                let constant = matches!(segs.as_slice(), ["f64", c] if c.chars().all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_'))
                    || matches!(
                        segs.as_slice(),
                        ["std" | "core", "f64", "consts", _] | ["f64", "consts", _]
                    );
                if !constant {
                    self.no(p.span(), "this path through `f64` cannot be rewritten in it");
                    return;
                }
                let tokens = p.to_token_stream();
                *e = Self::from_f64(tokens, span);
            }
            // A name: one the function binds; an integer type's constant (`usize::MAX`); or
            // `Vec`'s constructors.
            syn::Expr::Path(p) => {
                let segs = &p.path.segments;
                let ok = p.qself.is_none()
                    && match segs.len() {
                        1 => self.bound.contains(&segs[0].ident.to_string()),
                        2 => {
                            INTS.iter().any(|i| segs[0].ident == i)
                                || (segs[0].ident == "Vec"
                                    && (segs[1].ident == "new" || segs[1].ident == "with_capacity"))
                        }
                        _ => false,
                    };
                if !ok {
                    self.no(
                        p.span(),
                        "a name from outside the function (a constant, a static, a function) keeps its type in it",
                    );
                }
            }
            syn::Expr::Macro(m) => self.rewrite_macro(&mut m.mac),
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        match s {
            syn::Stmt::Item(i) => {
                self.no(i.span(), "an item inside the body cannot be rewritten in it")
            }
            syn::Stmt::Macro(m) => self.rewrite_macro(&mut m.mac),
            _ => visit_mut::visit_stmt_mut(self, s),
        }
    }

    fn visit_pat_mut(&mut self, p: &mut syn::Pat) {
        match p {
            syn::Pat::Lit(_) | syn::Pat::Range(_) | syn::Pat::Macro(_) => {
                if mentions(p.to_token_stream(), &["f64"])
                    || p.to_token_stream().into_iter().any(|t| {
                        matches!(t, TokenTree::Literal(l) if syn::parse_str::<syn::LitFloat>(&l.to_string()).is_ok())
                    })
                {
                    self.no(p.span(), "a float pattern cannot be rewritten in it");
                }
            }
            _ => visit_mut::visit_pat_mut(self, p),
        }
    }
}
