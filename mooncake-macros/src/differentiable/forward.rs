//! Forward mode: the IR, statement by statement, over `Dual`s (seed 001, "Derived Rules").
//!
//! Every local of the primal becomes a `Dual` local; control flow is the primal's, branching on
//! primal values; every statement becomes the same computation on `(primal, tangent)` pairs:
//!
//! * a place `p.w[i]` is the pair of places `(p.primal.w[i], p.tangent.w[i])` (a tangent has
//!   the primal's field names and shape, so projections apply to both halves);
//! * constants are duals with a zero tangent;
//! * operators and casts go through the runtime's operator impls on `Dual`, which call the
//!   primitive rules;
//! * a call `g(a, b)` is a call `g_frule(a, b)` (derived or hand-written), each argument
//!   re-wrapped with `Dual::new` so that the compiler's coercions apply as in the primal call;
//! * a method call `x.m(a)` goes through the runtime trait `MethodFrule`, keyed by the method's
//!   name, so that the receiver's *type* chooses the rule.

use super::codegen::{Names, rt};
use super::ir::*;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The tokens of a place, on its primal (`half = "primal"`) or tangent half.
pub(crate) fn place_half(names: &Names, place: &Place, half: &str) -> TokenStream {
    let half = format_ident!("{}", half);
    let base = names.local(place.local);
    let mut tokens = quote!(#base.#half);
    for p in &place.projections {
        tokens = match p {
            Projection::Field(m) => quote!(#tokens.#m),
            Projection::Index(i) => {
                let i = names.local(*i);
                quote!(#tokens[#i.primal])
            }
            Projection::Deref => quote!((*#tokens)),
        };
    }
    tokens
}

/// How a method call's receiver is reached: a local borrowed in place, or a value (a `Dual` of
/// references to a projected place, or a temporary) put in a variable first.
enum Receiver {
    Local(TokenStream),
    Value(TokenStream),
}

/// The generator of forward-mode statements for one body.
pub(crate) struct Forward<'a> {
    pub(crate) names: &'a Names,
    /// Insert run-time checks that every float the rule computes is finite.
    pub(crate) debug: bool,
    locals: &'a [LocalDecl],
    /// Locals known to hold shared references (arguments declared `&T`, and locals assigned a
    /// shared borrow): a method called on a field of one is given a shared receiver.
    pub(crate) shared_ref: Vec<bool>,
    /// Arguments declared `&mut T`: passed on, they are reborrowed, as Rust does implicitly.
    mut_ref: Vec<bool>,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(body: &'a Body, names: &'a Names) -> Self {
        let mut shared_ref = vec![false; body.locals.len()];
        let mut mut_ref = vec![false; body.locals.len()];
        for l in body.args() {
            if let Some(syn::Type::Reference(r)) = &body.locals[l.index()].ty {
                shared_ref[l.index()] = r.mutability.is_none();
                mut_ref[l.index()] = r.mutability.is_some();
            }
        }
        // Propagate through plain copies, to a fixed point.
        let mut changed = true;
        while changed {
            changed = false;
            for block in &body.blocks {
                for s in &block.statements {
                    if let StatementKind::Assign(p, Rvalue::Use(op)) = &s.kind {
                        if !p.projections.is_empty() || shared_ref[p.local.index()] {
                            continue;
                        }
                        let shared = match op {
                            Operand::Ref(_, false) => true,
                            Operand::Use(q) => {
                                q.projections.is_empty() && shared_ref[q.local.index()]
                            }
                            _ => false,
                        };
                        if shared {
                            shared_ref[p.local.index()] = true;
                            changed = true;
                        }
                    }
                }
            }
        }
        Forward { names, debug: false, locals: &body.locals, shared_ref, mut_ref }
    }

    fn operand(&self, op: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match op {
            Operand::Use(place) if place.projections.is_empty() => {
                let l = self.names.local(place.local);
                quote_spanned!(span=> #l)
            }
            Operand::Use(place) => {
                let p = place_half(self.names, place, "primal");
                let t = place_half(self.names, place, "tangent");
                quote_spanned!(span=> #rt::Dual::new(#p, #t))
            }
            Operand::Ref(place, mutable) => {
                let p = place_half(self.names, place, "primal");
                let t = place_half(self.names, place, "tangent");
                if *mutable {
                    quote_spanned!(span=> #rt::Dual::new(&mut #p, &mut #t))
                } else {
                    quote_spanned!(span=> #rt::Dual::new(&#p, &#t))
                }
            }
            Operand::Const(c) => quote_spanned!(span=> #rt::fwd::constant(#c)),
        }
    }

    /// An operand re-wrapped so that coercions (`&Vec<f64>` to `&[f64]`) apply when it is
    /// passed to a function.
    fn argument(&self, op: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        if let Operand::Use(p) = op
            && p.projections.is_empty()
            && self.mut_ref[p.local.index()]
        {
            let l = self.names.local(p.local);
            return quote_spanned!(span=> #rt::Dual::new(&mut *#l.primal, &mut *#l.tangent));
        }
        let v = self.operand(op, span);
        quote_spanned!(span=> { let __d = #v; #rt::Dual::new(__d.primal, __d.tangent) })
    }

    /// The receiver of a method call, as a `Dual` value to be borrowed mutably: the local
    /// itself, or a `Dual` of references to a projected place (shared when the place is behind
    /// a shared reference).
    fn receiver(&self, place: &Place, span: Span) -> Receiver {
        let rt = rt();
        if place.projections.is_empty() {
            let l = self.names.local(place.local);
            return Receiver::Local(quote_spanned!(span=> #l));
        }
        let p = place_half(self.names, place, "primal");
        let t = place_half(self.names, place, "tangent");
        Receiver::Value(if self.shared_ref[place.local.index()] {
            quote_spanned!(span=> #rt::Dual::new(&#p, &#t))
        } else {
            quote_spanned!(span=> #rt::Dual::new(&mut #p, &mut #t))
        })
    }

    fn method_call(
        &self,
        receiver: Receiver,
        method: &syn::Ident,
        args: &[Operand],
        span: Span,
    ) -> TokenStream {
        let rt = rt();
        let key = method_key(&method.to_string());
        let args = args.iter().map(|a| self.argument(a, span));
        let m = method.span();
        let (setup, borrow) = match receiver {
            Receiver::Local(l) => (quote!(), quote!(&mut #l)),
            Receiver::Value(v) => (quote!(let mut __recv = #v;), quote!(&mut __recv)),
        };
        // The argument of the dispatch call is a name with the method's own (user) span, so that
        // a missing rule is reported at the user's method call rather than at the attribute.
        let receiver_name = syn::Ident::new("__mooncake_receiver", m);
        let setup = quote!(#setup let #receiver_name = #borrow;);
        let borrow = quote!(#receiver_name);
        // The trait path carries the method's span, so that a missing rule is reported at the
        // user's method call.
        let trait_path =
            quote_spanned!(method.span()=> ::mooncake_runtime::__private::fwd::MethodFrule);
        let _ = &rt;
        quote_spanned!(method.span()=> {
            #setup
            let (__r, __f) = #trait_path::<#key, _>::method_frule(#borrow);
            __f(__r #(, #args)*)
        })
    }

    pub(crate) fn rvalue(&self, rv: &Rvalue, span: Span) -> TokenStream {
        let rt = rt();
        let op = |o: &Operand| self.operand(o, span);
        match rv {
            Rvalue::Use(o) => op(o),
            Rvalue::Binary(bin, a, b) => {
                let (a, b) = (op(a), op(b));
                let f = match bin {
                    BinOp::Add => quote!(::core::ops::Add::add),
                    BinOp::Sub => quote!(::core::ops::Sub::sub),
                    BinOp::Mul => quote!(::core::ops::Mul::mul),
                    BinOp::Div => quote!(::core::ops::Div::div),
                    BinOp::Rem => quote!(::core::ops::Rem::rem),
                    BinOp::BitAnd => quote!(::core::ops::BitAnd::bitand),
                    BinOp::BitOr => quote!(::core::ops::BitOr::bitor),
                    BinOp::BitXor => quote!(::core::ops::BitXor::bitxor),
                    BinOp::Shl => quote!(::core::ops::Shl::shl),
                    BinOp::Shr => quote!(::core::ops::Shr::shr),
                    cmp => {
                        let name = format_ident!("{}", cmp.name());
                        quote!(#rt::fwd::#name)
                    }
                };
                quote_spanned!(span=> #f(#a, #b))
            }
            Rvalue::Unary(UnOp::Neg, a) => {
                let a = op(a);
                quote_spanned!(span=> ::core::ops::Neg::neg(#a))
            }
            Rvalue::Unary(UnOp::Not, a) => {
                let a = op(a);
                quote_spanned!(span=> ::core::ops::Not::not(#a))
            }
            Rvalue::Cast(a, ty) => {
                let a = op(a);
                quote_spanned!(span=> #rt::fwd::cast::<_, #ty>(#a))
            }
            Rvalue::Call { func, args } => self.call(func, args, span),
            Rvalue::Method { receiver, method, args } => {
                let r = self.receiver(receiver, span);
                self.method_call(r, method, args, span)
            }
            Rvalue::Tuple(ops) | Rvalue::Array(ops) | Rvalue::VecList(ops) => {
                let vars: Vec<_> = (0..ops.len())
                    .map(|i| format_ident!("__e{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = ops.iter().map(op);
                let (p, t) = match rv {
                    Rvalue::Tuple(_) => (quote!((#(#vars.primal,)*)), quote!((#(#vars.tangent,)*))),
                    Rvalue::Array(_) => (quote!([#(#vars.primal),*]), quote!([#(#vars.tangent),*])),
                    _ => (
                        quote!(::std::vec![#(#vars.primal),*]),
                        quote!(::std::vec![#(#vars.tangent),*]),
                    ),
                };
                quote_spanned!(span=> { #(let #vars = #vals;)* #rt::Dual::new(#p, #t) })
            }
            Rvalue::Repeat(x, n) => {
                let x = op(x);
                quote_spanned!(span=> { let __x = #x; #rt::Dual::new([__x.primal; #n], [__x.tangent; #n]) })
            }
            Rvalue::VecRepeat(x, n) => {
                let (x, n) = (op(x), op(n));
                quote_spanned!(span=> {
                    let __x = #x;
                    let __n = #n;
                    #rt::Dual::new(::std::vec![__x.primal; __n.primal], ::std::vec![__x.tangent; __n.primal])
                })
            }
            Rvalue::Struct { path, fields } => {
                let vars: Vec<_> = (0..fields.len())
                    .map(|i| format_ident!("__f{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = fields.iter().map(|(_, o)| op(o));
                let members: Vec<_> = fields.iter().map(|(m, _)| m).collect();
                let tangent_path = tangent_path(path);
                quote_spanned!(span=> {
                    #(let #vars = #vals;)*
                    #rt::Dual::new(
                        #path { #(#members: #vars.primal),* },
                        #tangent_path { #(#members: #vars.tangent),* },
                    )
                })
            }
            Rvalue::Matches(place, pat) => {
                let p = place_half(self.names, place, "primal");
                quote_spanned!(span=> #rt::Dual::new(::core::matches!(#p, #pat), #rt::NoTangent))
            }
        }
    }

    fn call(&self, func: &syn::Path, args: &[Operand], span: Span) -> TokenStream {
        let rt = rt();
        let segments: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        // `f64::sin(x)`: the method on the first argument.
        if let [ty, _] = segs.as_slice()
            && (*ty == "f64" || *ty == "f32")
            && !args.is_empty()
        {
            let first = self.operand(&args[0], span);
            let method = &func.segments[1].ident;
            return self.method_call(Receiver::Value(first), method, &args[1..], span);
        }
        match segs.as_slice() {
            ["Vec", "new"] | ["std", "vec", "Vec", "new"] => {
                return quote_spanned!(span=> #rt::fwd::vec_new());
            }
            ["Vec", "with_capacity"] | ["std", "vec", "Vec", "with_capacity"]
                if args.len() == 1 =>
            {
                let n = self.operand(&args[0], span);
                return quote_spanned!(span=> #rt::fwd::vec_with_capacity(#n));
            }
            _ => {}
        }
        let rule = rule_path(func, "frule");
        let args = args.iter().map(|a| self.argument(a, span));
        quote_spanned!(span=> #rule(#(#args),*))
    }

    /// The forward-mode code of one statement.
    pub(crate) fn statement(&self, s: &Statement) -> TokenStream {
        let span = s.span;
        match &s.kind {
            StatementKind::Assign(place, rv) => {
                let value = self.rvalue(rv, span);
                if place.projections.is_empty() {
                    let l = self.names.local(place.local);
                    let check = if self.debug {
                        let rt = rt();
                        let what = match &self.locals[place.local.index()].name {
                            Some(n) => format!("`{n}`"),
                            None => "an intermediate value".to_owned(),
                        };
                        quote_spanned!(span=> {
                            #[allow(unused_imports)]
                            use #rt::fwd::{DebugCheck as _, DebugCheckFallback as _};
                            (&#l).mooncake_debug_check(#what, ::core::line!());
                        })
                    } else {
                        quote!()
                    };
                    quote_spanned!(span=> #l = #value; #check)
                } else {
                    let p = place_half(self.names, place, "primal");
                    let t = place_half(self.names, place, "tangent");
                    quote_spanned!(span=> { let __v = #value; #p = __v.primal; #t = __v.tangent; })
                }
            }
            StatementKind::Check(tokens) => {
                let t = self.names.substitute_primals(tokens.clone());
                quote_spanned!(span=> #t;)
            }
        }
    }
}

/// `m::f` to `m::f_frule` (keeping generic arguments).
pub(crate) fn rule_path(func: &syn::Path, suffix: &str) -> syn::Path {
    let mut path = func.clone();
    if let Some(last) = path.segments.last_mut() {
        last.ident = format_ident!("{}_{}", last.ident, suffix, span = last.ident.span());
    }
    path
}

/// `m::S` to `m::STangent` (keeping generic arguments): the tangent type `#[derive(Tangent)]`
/// generates.
pub(crate) fn tangent_path(path: &syn::Path) -> syn::Path {
    sibling_path(path, "Tangent")
}

/// `m::S` to `m::S{suffix}`: one of the types `#[derive(Tangent)]` generates beside `S`.
pub(crate) fn sibling_path(path: &syn::Path, suffix: &str) -> syn::Path {
    let mut p = path.clone();
    if let Some(last) = p.segments.last_mut() {
        last.ident = format_ident!("{}{}", last.ident, suffix, span = last.ident.span());
    }
    p
}

/// The key of a method name in the runtime's `MethodFrule` / `MethodRrule` traits: FNV-1a, as
/// `mooncake_runtime::__private::method_key` computes it.
pub(crate) fn method_key(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The text form of the forward transform: the primal's blocks, each statement written as the
/// forward-mode operation that replaces it. Pinned by the golden tests.
pub(crate) fn forward_text(body: &Body) -> String {
    use std::fmt::Write;
    let op = |o: &Operand| match o {
        Operand::Const(_) => format!("constant({})", o.to_string().trim_start_matches("const ")),
        other => format!("{other}"),
    };
    let ops = |os: &[Operand]| os.iter().map(op).collect::<Vec<_>>().join(", ");
    let mut out = String::new();
    for (i, block) in body.blocks.iter().enumerate() {
        let _ = writeln!(out, "bb{i}:");
        for s in &block.statements {
            let line = match &s.kind {
                StatementKind::Assign(p, rv) => {
                    let rhs = match rv {
                        Rvalue::Use(o) => op(o),
                        Rvalue::Binary(b, x, y) => format!("{}({}, {})", b.name(), op(x), op(y)),
                        Rvalue::Unary(UnOp::Neg, x) => format!("neg({})", op(x)),
                        Rvalue::Unary(UnOp::Not, x) => format!("not({})", op(x)),
                        Rvalue::Cast(x, t) => format!("cast::<{}>({})", quote::quote!(#t), op(x)),
                        Rvalue::Call { func, args } => {
                            let r = rule_path(func, "frule");
                            format!(
                                "{}({})",
                                quote::quote!(#r).to_string().replace(' ', ""),
                                ops(args)
                            )
                        }
                        Rvalue::Method { receiver, method, args } => {
                            format!(
                                "MethodFrule<\"{method}\">(&mut {receiver}{}{})",
                                if args.is_empty() { "" } else { ", " },
                                ops(args)
                            )
                        }
                        Rvalue::Tuple(xs) => format!("dual_tuple({})", ops(xs)),
                        Rvalue::Array(xs) => format!("dual_array({})", ops(xs)),
                        Rvalue::VecList(xs) => format!("dual_vec({})", ops(xs)),
                        Rvalue::Repeat(x, n) => format!("dual_repeat({}; {})", op(x), n),
                        Rvalue::VecRepeat(x, n) => format!("dual_vec_repeat({}; {})", op(x), op(n)),
                        Rvalue::Struct { path, fields } => {
                            let t = tangent_path(path);
                            let fs = fields
                                .iter()
                                .map(|(m, o)| format!("{}: {}", quote::quote!(#m), op(o)))
                                .collect::<Vec<_>>()
                                .join(", ");
                            format!(
                                "dual_struct<{}, {}>{{ {fs} }}",
                                quote::quote!(#path).to_string().replace(' ', ""),
                                quote::quote!(#t).to_string().replace(' ', "")
                            )
                        }
                        Rvalue::Matches(p, pat) => {
                            format!("matches(primal {p}, {})", quote::quote!(#pat))
                        }
                    };
                    format!("{p} = {rhs}")
                }
                StatementKind::Check(_) => "check on primal values".to_owned(),
            };
            let _ = writeln!(out, "    {line}");
        }
        let t = match &block.terminator.kind {
            TerminatorKind::Goto(b) => format!("goto {b}"),
            TerminatorKind::Branch { cond, then, otherwise } => {
                format!("branch primal {cond} -> [{then}, {otherwise}]")
            }
            TerminatorKind::Return => "return _0".to_owned(),
            TerminatorKind::Panic(_) => "panic".to_owned(),
        };
        let _ = writeln!(out, "    {t}");
    }
    out
}
