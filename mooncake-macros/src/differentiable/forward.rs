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
use proc_macro2::{Span, TokenStream, TokenTree};
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
    /// The type parameters of the function and its `impl` block (numbers, not structs).
    type_params: &'a [String],
    /// Locals known to hold shared references (arguments declared `&T`, and locals assigned a
    /// shared borrow): a method called on a field of one is given a shared receiver.
    pub(crate) shared_ref: Vec<bool>,
    /// Arguments declared `&mut T`: passed on, they are reborrowed, as Rust does implicitly.
    mut_ref: Vec<bool>,
    /// Locals holding integers computed from integer literals alone ([`literal_ints`]).
    literal_int: Vec<bool>,
    /// Per block and statement: whether the statement's method receiver is borrowed shared
    /// ([`shared_receivers`]).
    shared_receiver: Vec<Vec<bool>>,
    /// Locals that only hold a named constant ([`constant_locals`]): their elements and fields
    /// are read as constants, so that a table of constants (`const W: [f64; 3]`, a
    /// `const V: &[f64]`, a constant struct) needs no tangent in either dialect.
    constants: Vec<bool>,
    /// Locals whose type the text does not show, read from named fields (`ir::opaque_locals`):
    /// their arithmetic goes through `__fwd::field_add` and its kin, which a value of a user type
    /// answers with its operator trait's method.
    opaque: Vec<bool>,
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
        let literal_int = literal_ints(body);
        let shared_receiver = shared_receivers(body, &shared_ref);
        let constants = constant_locals(body);
        let opaque = super::ir::opaque_locals(body, &vec![false; body.locals.len()]);
        Forward {
            names,
            debug: false,
            locals: &body.locals,
            type_params: &body.type_params,
            shared_ref,
            mut_ref,
            literal_int,
            shared_receiver,
            constants,
            opaque,
        }
    }

    /// An operand whose type the text does not show: a named field (`p.pos`) or a local
    /// computed from one (see [`Forward::opaque`]).
    fn opaque_operand(&self, o: &Operand) -> bool {
        let Operand::Use(q) = o else { return false };
        match q.projections.last() {
            None => self.opaque[q.local.index()],
            Some(Projection::Field(syn::Member::Named(_))) => true,
            Some(_) => false,
        }
    }

    fn operand(&self, op: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match op {
            Operand::Use(place) if place.projections.is_empty() => {
                let l = self.names.local(place.local);
                quote_spanned!(span=> #l)
            }
            // An element or field of a named constant (`W[k]`, `P0.a`): a constant itself.
            Operand::Use(place)
                if !place.projections.is_empty() && self.constants[place.local.index()] =>
            {
                let p = place_half(self.names, place, "primal");
                quote_spanned!(span=> (&__fwd::Const::new(::core::clone::Clone::clone(&#p)))
                    .constant(__fwd::Chunk::<__N>))
            }
            // Behind a reference, a field read by value is a copy (Rust allows no move there):
            // the primal is `Copy`, its tangent (a derived struct's) is cloned.
            Operand::Use(place)
                if self.shared_ref[place.local.index()] || self.mut_ref[place.local.index()] =>
            {
                let p = place_half(self.names, place, "primal");
                let t = place_half(self.names, place, "tangent");
                // A value behind the reference (`*k` of `k: &E`, `m.prior` of `m: &Model`,
                // matched): a copy (a move out of a reference would not compile).
                let p = if !place.projections.is_empty() {
                    quote!(::core::clone::Clone::clone(&#p))
                } else {
                    p
                };
                quote_spanned!(span=> #rt::Dual::new(#p, ::core::clone::Clone::clone(&#t)))
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
            Operand::Const(c) => {
                let c = self.names.substitute_primals(c.clone());
                // Through the dialect's autoref (see `dialect`): a batched rule gives a number
                // or a buffer zero lanes and any other constant its ordinary tangent.
                quote_spanned!(span=> (&__fwd::Const::new(#c)).constant(__fwd::Chunk::<__N>))
            }
        }
    }

    /// An operand re-wrapped so that coercions (`&Vec<f64>` to `&[f64]`) apply when it is
    /// passed to a function.
    fn argument(&self, op: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        if self.is_mut_ref_local(op) {
            return self.argument_value(op, span);
        }
        let v = self.operand(op, span);
        quote_spanned!(span=> { let __d = #v; #rt::Dual::new(__d.primal, __d.tangent) })
    }

    /// Whether `op` is a `&mut` argument passed on as it is (reborrowed, as Rust does).
    fn is_mut_ref_local(&self, op: &Operand) -> bool {
        matches!(op, Operand::Use(p) if p.projections.is_empty() && self.mut_ref[p.local.index()])
    }

    /// The value of an argument: the operand, or a reborrow of a `&mut` argument.
    fn argument_value(&self, op: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match op {
            Operand::Use(p) if self.is_mut_ref_local(op) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #rt::Dual::new(&mut *#l.primal, &mut *#l.tangent))
            }
            _ => self.operand(op, span),
        }
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
        // A field or element of a named constant (`PRIOR.scale.ln()`): a constant.
        if self.constants[place.local.index()] {
            return Receiver::Value(self.operand(&Operand::Use(place.clone()), span));
        }
        let p = place_half(self.names, place, "primal");
        let t = place_half(self.names, place, "tangent");
        Receiver::Value(if self.shared_ref[place.local.index()] {
            quote_spanned!(span=> #rt::Dual::new(&#p, &#t))
        } else {
            quote_spanned!(span=> #rt::Dual::new(&mut #p, &mut #t))
        })
    }

    /// The receiver of a method call that must not borrow it mutably (see
    /// [`shared_receivers`]): a `Dual` of shared references to the place.
    fn shared_receiver(&self, place: &Place, span: Span) -> Receiver {
        let rt = rt();
        if !place.projections.is_empty() && self.constants[place.local.index()] {
            return self.receiver(place, span);
        }
        if self.shared_ref[place.local.index()] {
            return self.receiver(place, span);
        }
        let p = place_half(self.names, place, "primal");
        let t = place_half(self.names, place, "tangent");
        Receiver::Value(if place.projections.is_empty() && self.mut_ref[place.local.index()] {
            quote_spanned!(span=> #rt::Dual::new(&*#p, &*#t))
        } else {
            quote_spanned!(span=> #rt::Dual::new(&#p, &#t))
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
        // A batched rule's buffer methods have rules of their own (`fwd::lanes`), under a key
        // of their own, which the dialect picks.
        let name = method.to_string();
        let key = if super::batched::LANES_BUFFER_METHODS.contains(&name.as_str()) {
            let (one, lanes) = (method_key(&name), method_key(&format!("__lanes_{name}")));
            quote!({ __fwd::key(#one, #lanes) })
        } else {
            let k = method_key(&name);
            quote!(#k)
        };
        // The arguments are evaluated before the receiver is borrowed, as Rust's two-phase
        // borrows allow (`v.push(v[0])`): each is read into a variable of its own, then
        // re-wrapped at the call so that coercions still apply.
        let vars: Vec<_> =
            (0..args.len()).map(|i| format_ident!("__a{}", i, span = Span::mixed_site())).collect();
        // A `&mut` argument given to a buffer method that only reads it (`w.copy_from_slice(v)`)
        // is reborrowed shared, as rustc does, so that it may be read while it is iterated.
        let reads_only = ["copy_from_slice", "extend_from_slice", "__sub_assign"]
            .contains(&method.to_string().as_str());
        let values = args.iter().map(|a| match a {
            Operand::Use(p) if reads_only && self.is_mut_ref_local(a) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #rt::Dual::new(&*#l.primal, &*#l.tangent))
            }
            _ => self.argument_value(a, span),
        });
        let args =
            vars.iter().map(|v| quote_spanned!(span=> #rt::Dual::new(#v.primal, #v.tangent)));
        let m = method.span();
        let (setup, borrow) = match receiver {
            Receiver::Local(l) => (quote!(), quote!(&mut #l)),
            Receiver::Value(v) => (quote!(let mut __recv = #v;), quote!(&mut __recv)),
        };
        let setup = quote!(#(let #vars = #values;)* #setup);
        // The argument of the dispatch call is a name with the method's own (user) span, so that
        // a missing rule is reported at the user's method call rather than at the attribute.
        let receiver_name = syn::Ident::new("__mooncake_receiver", m);
        let setup = quote!(#setup let #receiver_name = #borrow;);
        let borrow = quote!(#receiver_name);
        // The trait path carries the method's span, so that a missing rule is reported at the
        // user's method call.
        let trait_path = quote_spanned!(method.span()=> __fwd::MethodRule);
        quote_spanned!(method.span()=> {
            #setup
            let (__r, __f) = #trait_path::<#key, _>::method_frule(#borrow);
            __f(__r #(, #args)*)
        })
    }

    /// The primal value of an operand that [`is_literal_int`] accepts.
    fn literal_primal(&self, op: &Operand, span: Span) -> TokenStream {
        match op {
            Operand::Const(c) => {
                let c = self.names.substitute_primals(c.clone());
                quote_spanned!(span=> (#c))
            }
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #l.primal)
            }
            Operand::Ref(..) => unreachable!("not an integer literal"),
        }
    }

    /// The forward-mode value of `rv`; `shared` borrows a method's receiver shared.
    fn rvalue(&self, rv: &Rvalue, shared: bool, span: Span) -> TokenStream {
        let rt = rt();
        let op = |o: &Operand| self.operand(o, span);
        if let Some(tokens) = self.literal_arithmetic(rv, span) {
            return tokens;
        }
        match rv {
            // A change of representation (reverse mode only) is the value itself.
            Rvalue::Use(o) | Rvalue::Convert(_, o) => op(o),
            // `mode == "l2"` (`mode: String` or `&str`): the primal against the literal, whose
            // type differs from a `String`'s.
            Rvalue::Binary(bin @ (BinOp::Eq | BinOp::Ne), a, b)
                if str_literal(a).is_some() || str_literal(b).is_some() =>
            {
                let (value, lit) = match str_literal(b) {
                    Some(l) => (a, l),
                    None => (b, str_literal(a).expect("checked")),
                };
                let v = op(value);
                let name = if *bin == BinOp::Eq { quote!(eq_literal) } else { quote!(ne_literal) };
                quote_spanned!(span=> #rt::fwd::#name(&#v, #lit))
            }
            // A constant operand of `+`, `-`, `*`, `/`: the runtime picks the rule that takes it
            // as a number when both are floats (`fwd::const_operand`).
            Rvalue::Binary(bin @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b)
                if float_constant(a) != float_constant(b) =>
            {
                // (An operand read from a field, whose type the text does not show: the
                // operator dispatched by type, `__fwd::field_add` and its kin.)
                let field = self.opaque_operand(a) || self.opaque_operand(b);
                let (name, f) = match (bin, field) {
                    (BinOp::Add, false) => ("add", quote!(__fwd::add)),
                    (BinOp::Sub, false) => ("sub", quote!(__fwd::sub)),
                    (BinOp::Mul, false) => ("mul", quote!(__fwd::mul)),
                    (_, false) => ("div", quote!(__fwd::div)),
                    (BinOp::Add, true) => ("add", quote!(__fwd::field_add)),
                    (BinOp::Sub, true) => ("sub", quote!(__fwd::field_sub)),
                    (BinOp::Mul, true) => ("mul", quote!(__fwd::field_mul)),
                    (_, true) => ("div", quote!(__fwd::field_div)),
                };
                let side = if float_constant(a) { "l" } else { "r" };
                let method = format_ident!("{}_{}", name, side, span = span);
                let (a, b) = (op(a), op(b));
                quote_spanned!(span=> (&__fwd::ConstOperand::new(#a, #b)).#method(#f))
            }
            // An operand whose type the text does not show, read from a field: arithmetic
            // dispatched by type (a user type's is its operator trait's method).
            Rvalue::Binary(bin @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b)
                if [a, b].iter().any(|o| self.opaque_operand(o)) =>
            {
                let (a, b) = (op(a), op(b));
                let f = match bin {
                    BinOp::Add => quote_spanned!(span=> __fwd::field_add),
                    BinOp::Sub => quote_spanned!(span=> __fwd::field_sub),
                    BinOp::Mul => quote_spanned!(span=> __fwd::field_mul),
                    _ => quote_spanned!(span=> __fwd::field_div),
                };
                quote_spanned!(span=> #f(#a, #b))
            }
            Rvalue::Binary(bin, a, b) => {
                let (a, b) = (op(a), op(b));
                let f = match bin {
                    // The dialect's arithmetic (a batched rule's: `fwd::lanes::Arith`), with
                    // the user's span, so that operands with no arithmetic (values of a user type
                    // read from fields) are reported at the user's expression.
                    BinOp::Add => quote_spanned!(span=> __fwd::add),
                    BinOp::Sub => quote_spanned!(span=> __fwd::sub),
                    BinOp::Mul => quote_spanned!(span=> __fwd::mul),
                    BinOp::Div => quote_spanned!(span=> __fwd::div),
                    BinOp::Rem => quote_spanned!(span=> __fwd::rem),
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
            Rvalue::Unary(UnOp::Neg, a) if self.opaque_operand(a) => {
                let a = op(a);
                quote_spanned!(span=> __fwd::field_neg(#a))
            }
            Rvalue::Unary(UnOp::Neg, a) => {
                let a = op(a);
                quote_spanned!(span=> __fwd::neg(#a))
            }
            Rvalue::Unary(UnOp::Not, a) => {
                let a = op(a);
                quote_spanned!(span=> ::core::ops::Not::not(#a))
            }
            Rvalue::Cast(a, ty) => {
                let a = op(a);
                quote_spanned!(span=> __fwd::cast::<_, #ty, __N>(#a))
            }
            Rvalue::Call { func, args } => self.call(func, args, span),
            // `p.clone()` of an argument `p: &S` of a struct type: the value and its tangent
            // cloned (`clone` is otherwise a buffer's rule).
            Rvalue::Method { receiver, method, args }
                if method == "clone"
                    && args.is_empty()
                    && receiver.projections.is_empty()
                    && self.locals[receiver.local.index()].ty.as_ref().is_some_and(|t| {
                        super::lower::struct_ref_type(t, self.type_params)
                            || super::lower::struct_type(t, self.type_params)
                    }) =>
            {
                let l = self.names.local(receiver.local);
                let by_value = self.locals[receiver.local.index()]
                    .ty
                    .as_ref()
                    .is_some_and(|t| super::lower::struct_type(t, self.type_params));
                let amp = if by_value { quote!(&) } else { quote!() };
                quote_spanned!(span=> #rt::Dual::new(
                    ::core::clone::Clone::clone(#amp #l.primal),
                    ::core::clone::Clone::clone(#amp #l.tangent),
                ))
            }
            // `x.sort_by(cmp)` with a comparator of keys: the permutation that sorts the keys,
            // applied to the value and its tangent.
            Rvalue::Method { receiver, method, args }
                if method == "__sort_by_keys" && args.len() == 3 =>
            {
                let p = place_half(self.names, receiver, "primal");
                let t = place_half(self.names, receiver, "tangent");
                let keys = match &args[0] {
                    Operand::Use(k) => place_half(self.names, k, "primal"),
                    other => op(other),
                };
                let flag = |o: &Operand| match o {
                    Operand::Const(c) => c.clone(),
                    other => op(other),
                };
                let (desc, total) = (flag(&args[1]), flag(&args[2]));
                quote_spanned!(span=> {
                    #rt::rules::buffer::sort_by_keys_frule(&mut #p[..], &mut #t[..], &#keys[..], #desc, #total);
                    #rt::Dual::new((), #rt::NoTangent)
                })
            }
            // `x[k].clone()` of an element (a struct, a tuple, a row): the element's value and
            // its tangent cloned, whatever the element's type.
            Rvalue::Method { receiver, method, args }
                if method == "clone"
                    && args.is_empty()
                    && matches!(receiver.projections.last(), Some(Projection::Index(_)))
                    && !self.constants[receiver.local.index()] =>
            {
                let p = place_half(self.names, receiver, "primal");
                let t = place_half(self.names, receiver, "tangent");
                quote_spanned!(span=> #rt::Dual::new(
                    ::core::clone::Clone::clone(&#p),
                    ::core::clone::Clone::clone(&#t),
                ))
            }
            Rvalue::Method { receiver, method, args } => {
                let r = if shared {
                    self.shared_receiver(receiver, span)
                } else {
                    self.receiver(receiver, span)
                };
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
                // The tangent is written field by field into the struct's zero tangent: a
                // derived tangent of a generic struct has a marker field a literal would need.
                quote_spanned!(span=> {
                    #(let #vars = #vals;)*
                    let __p = #path { #(#members: #vars.primal),* };
                    let mut __t = #rt::Primal::zero_tangent(&__p);
                    #(__t.#members = #vars.tangent;)*
                    #rt::Dual::new(__p, __t)
                })
            }
            Rvalue::Matches(place, pat) => {
                let test = super::ir::matches_tokens(place_half(self.names, place, "primal"), pat);
                quote_spanned!(span=> #rt::Dual::new(#test, #rt::NoTangent))
            }
        }
    }

    /// Arithmetic on integers computed from literals alone, done on the primal values with
    /// Rust's own operators, so that the literals' type is inferred from where the result is
    /// used, as in the primal (`0..1 * 2` indexing a slice is a `usize` range): through the
    /// operator traits on `Dual`, whose output is an associated type, rustc cannot infer it
    /// backwards and falls back to `i32`.
    fn literal_arithmetic(&self, rv: &Rvalue, span: Span) -> Option<TokenStream> {
        let rt = rt();
        let lit = |o: &Operand| is_literal_int(o, &self.literal_int);
        let value = match rv {
            Rvalue::Binary(bin, a, b) if is_arithmetic(*bin) && lit(a) && lit(b) => {
                let (a, b) = (self.literal_primal(a, span), self.literal_primal(b, span));
                let op = match bin {
                    BinOp::Add => quote!(+),
                    BinOp::Sub => quote!(-),
                    BinOp::Mul => quote!(*),
                    BinOp::Div => quote!(/),
                    BinOp::Rem => quote!(%),
                    BinOp::BitAnd => quote!(&),
                    BinOp::BitOr => quote!(|),
                    BinOp::BitXor => quote!(^),
                    BinOp::Shl => quote!(<<),
                    _ => quote!(>>),
                };
                quote_spanned!(span=> #a #op #b)
            }
            Rvalue::Unary(un, a) if lit(a) => {
                let a = self.literal_primal(a, span);
                match un {
                    UnOp::Neg => quote_spanned!(span=> -#a),
                    UnOp::Not => quote_spanned!(span=> !#a),
                }
            }
            _ => return None,
        };
        Some(quote_spanned!(span=> #rt::Dual::new(#value, #rt::NoTangent)))
    }

    fn call(&self, func: &syn::Path, args: &[Operand], span: Span) -> TokenStream {
        let segments: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        // `f64::sin(x)`: the method on the first argument.
        if let [ty, _] = segs.as_slice()
            && (*ty == "f64" || *ty == "f32")
            && !args.is_empty()
        {
            // A literal receiver takes the path's type, as in Rust (`f64::atan(0.5)`): the
            // method's dispatch needs it known.
            let first = match &args[0] {
                Operand::Const(c) => {
                    let c = self.names.substitute_primals(c.clone());
                    let ty = &func.segments[0].ident;
                    quote_spanned!(span=> __fwd::constant::<#ty, __N>(#c))
                }
                a => self.operand(a, span),
            };
            let method = &func.segments[1].ident;
            return self.method_call(Receiver::Value(first), method, &args[1..], span);
        }
        match segs.as_slice() {
            ["Vec", "new"] | ["std", "vec", "Vec", "new"] => {
                return quote_spanned!(span=> __fwd::vec_new::<_, __N>());
            }
            ["Vec", "with_capacity"] | ["std", "vec", "Vec", "with_capacity"]
                if args.len() == 1 =>
            {
                let n = self.operand(&args[0], span);
                return quote_spanned!(span=> __fwd::vec_with_capacity::<_, __N>(#n));
            }
            // `T::from_f64(x)` in generic code (lowered to the runtime's `float_from_f64::<T>`).
            ["mooncake_runtime", "__private", "float_from_f64"] if args.len() == 1 => {
                let x = self.operand(&args[0], span);
                let last = func.segments.last().map(|s| &s.arguments);
                let ty = match last {
                    Some(syn::PathArguments::AngleBracketed(a)) => {
                        let a = &a.args;
                        quote!(#a)
                    }
                    _ => quote!(_),
                };
                return quote_spanned!(span=> __fwd::float_from_f64_frule::<#ty, __N>(#x));
            }
            _ => {}
        }
        let rule = rule_path(func, "frule");
        // A variant's fields taken out of a local (`match &w { Some(w) => .. }` in a loop, of
        // `w: Option<Vec<f64>>` or `Option<&[f64]>`): out of a copy, since Rust binds them by
        // reference and the local is read again (a `Copy` value's copy is free).
        if let ["mooncake_runtime", "__private", "enums", "variant_fields"] = segs.as_slice()
            && let [Operand::Use(p)] = args
            && p.projections.is_empty()
        {
            let v = self.operand(&args[0], span);
            return quote_spanned!(span=> #rule(::core::clone::Clone::clone(&#v)));
        }
        let args = args.iter().map(|a| self.argument(a, span));
        quote_spanned!(span=> #rule(#(#args),*))
    }

    /// The forward-mode code of the statements of block `b`.
    pub(crate) fn block(&self, body: &Body, b: BlockId) -> TokenStream {
        let s = body.blocks[b.index()]
            .statements
            .iter()
            .enumerate()
            .map(|(i, s)| self.statement(s, self.shared_receiver[b.index()][i]));
        quote!(#(#s)*)
    }

    /// The forward-mode code of one statement; `shared` borrows a method's receiver shared.
    fn statement(&self, s: &Statement, shared: bool) -> TokenStream {
        let span = s.span;
        match &s.kind {
            StatementKind::Assign(place, rv) => {
                let value = self.rvalue(rv, shared, span);
                if place.projections.is_empty() {
                    let l = self.names.local(place.local);
                    let check = if self.debug {
                        let what = match &self.locals[place.local.index()].name {
                            Some(n) => format!("`{n}`"),
                            None => "an intermediate value".to_owned(),
                        };
                        quote_spanned!(span=> {
                            #[allow(unused_imports)]
                            use __fwd::{DebugCheck as _, DebugCheckFallback as _};
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

/// The string literal an operand is, if it is one (`"l2"`).
fn str_literal(o: &Operand) -> Option<TokenStream> {
    match o {
        Operand::Const(c) => match syn::parse2::<syn::Expr>(c.clone()) {
            Ok(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. })) => Some(c.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a binary operator is arithmetic (its result has its left operand's type), rather
/// than a comparison.
/// Whether `o` is a constant that may be a float: a literal other than an integer one, or a path
/// (`STEP`, `std::f64::consts::PI`, whose type the macro cannot see). An operator with exactly
/// one such operand goes through `fwd::const_operand`.
fn float_constant(o: &Operand) -> bool {
    let Operand::Const(c) = o else { return false };
    let tokens: Vec<TokenTree> = c.clone().into_iter().collect();
    match tokens.as_slice() {
        [TokenTree::Literal(l)] => {
            let l = l.to_string();
            let digits = l.starts_with(|c: char| c.is_ascii_digit());
            let float = l.contains(['.', 'e', 'E']) && !l.starts_with("0x")
                || l.ends_with("f64")
                || l.ends_with("f32");
            digits && float
        }
        [] => false,
        path => path.iter().all(|t| match t {
            TokenTree::Ident(i) => !i.to_string().starts_with("__mooncake_local_"),
            TokenTree::Punct(p) => p.as_char() == ':',
            _ => false,
        }),
    }
}

fn is_arithmetic(op: BinOp) -> bool {
    !matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
}

/// Whether a constant is an integer literal (`2`, `-1`, `3usize`).
fn is_int_literal(c: &TokenStream) -> bool {
    let int = |l: &syn::LitInt| !matches!(l.suffix(), "f32" | "f64");
    match syn::parse2::<syn::Expr>(c.clone()) {
        Ok(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(l), .. })) => int(&l),
        Ok(syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. })) => {
            matches!(&*expr, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(l), .. }) if int(l))
        }
        _ => false,
    }
}

/// Whether an operand is an integer literal or a local of [`literal_ints`].
fn is_literal_int(op: &Operand, literal: &[bool]) -> bool {
    match op {
        Operand::Const(c) => is_int_literal(c),
        Operand::Use(p) => p.projections.is_empty() && literal[p.local.index()],
        Operand::Ref(..) => false,
    }
}

/// The locals (not arguments) holding integers computed from integer literals alone: every
/// assignment of the local is a literal, a copy of such a local, or arithmetic on them. The
/// largest such set, so that a counter that only literals and itself assign (`let mut k = 0;
/// .. k += 1;`) is one: its type, like the literals', is known only from where it is used.
pub(crate) fn literal_ints(body: &Body) -> Vec<bool> {
    let mut literal = vec![false; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, _) = &s.kind
                && p.projections.is_empty()
                && p.local.index() > body.n_args
            {
                literal[p.local.index()] = true;
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                if !literal[p.local.index()] {
                    continue;
                }
                let lit = |o: &Operand| is_literal_int(o, &literal);
                let ok = p.projections.is_empty()
                    && match rv {
                        Rvalue::Use(a) | Rvalue::Unary(_, a) => lit(a),
                        Rvalue::Binary(bin, a, b) => is_arithmetic(*bin) && lit(a) && lit(b),
                        _ => false,
                    };
                if !ok {
                    literal[p.local.index()] = false;
                    changed = true;
                }
            }
        }
    }
    literal
}

/// Every local a place names: its base and its index locals.
fn place_locals(p: &Place, out: &mut Vec<Local>) {
    out.push(p.local);
    for pr in &p.projections {
        if let Projection::Index(i) = pr {
            out.push(*i);
        }
    }
}

/// Every local a statement reads (for a store `p.w[i] = v`, `p` and `i` too).
fn statement_uses(s: &Statement) -> Vec<Local> {
    let mut out = Vec::new();
    match &s.kind {
        StatementKind::Assign(place, rv) => {
            if !place.projections.is_empty() {
                place_locals(place, &mut out);
            }
            let operand = |o: &Operand, out: &mut Vec<Local>| match o {
                Operand::Use(p) | Operand::Ref(p, _) => place_locals(p, out),
                Operand::Const(_) => {}
            };
            match rv {
                Rvalue::Use(o) | Rvalue::Convert(_, o) | Rvalue::Unary(_, o) => {
                    operand(o, &mut out)
                }
                Rvalue::Cast(o, _) | Rvalue::Repeat(o, _) => operand(o, &mut out),
                Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => {
                    operand(a, &mut out);
                    operand(b, &mut out);
                }
                Rvalue::Call { args, .. }
                | Rvalue::Tuple(args)
                | Rvalue::Array(args)
                | Rvalue::VecList(args) => args.iter().for_each(|a| operand(a, &mut out)),
                Rvalue::Method { receiver, args, .. } => {
                    place_locals(receiver, &mut out);
                    args.iter().for_each(|a| operand(a, &mut out));
                }
                Rvalue::Struct { fields, .. } => {
                    fields.iter().for_each(|(_, a)| operand(a, &mut out))
                }
                Rvalue::Matches(p, _) => place_locals(p, &mut out),
            }
        }
        StatementKind::Check(tokens) => marker_locals(tokens.clone(), &mut out),
    }
    out
}

/// The locals an assertion's tokens name (lowering's `__mooncake_local_N` markers).
fn marker_locals(tokens: TokenStream, out: &mut Vec<Local>) {
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                let s = i.to_string();
                if let Some(n) = s.strip_prefix("__mooncake_local_").and_then(|n| n.parse().ok()) {
                    out.push(Local(n));
                }
            }
            proc_macro2::TokenTree::Group(g) => marker_locals(g.stream(), out),
            _ => {}
        }
    }
}

/// Whether two places may overlap: one's path is a prefix of the other's, up to indices (any
/// two indices may be equal) and dereferences; two different fields are disjoint.
fn overlap(a: &Place, b: &Place) -> bool {
    a.local == b.local
        && a.projections.iter().zip(&b.projections).all(|pair| match pair {
            (Projection::Field(x), Projection::Field(y)) => x == y,
            _ => true,
        })
}

/// Which method calls must borrow their receiver shared rather than mutably: those whose
/// receiver overlaps a place lent shared to a local that is still used after the call (`v` of
/// `for v in x.iter()`, whose element borrow `v = &x[i]` lives across `x.len()` or
/// `x[0].max(a)` in the loop). The primal compiles, so such a method takes `&self` or `self`;
/// the generated code's `&mut` borrow of the receiver would conflict with the element's
/// borrow. Found by liveness over the IR; a receiver that is already shared needs nothing.
pub(crate) fn shared_receivers(body: &Body, shared_ref: &[bool]) -> Vec<Vec<bool>> {
    let n = body.locals.len();
    // The places each local borrows shared: a borrow `&x[i]`, a tuple of them, or a copy.
    let mut lent: Vec<Vec<Place>> = vec![Vec::new(); n];
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                if !p.projections.is_empty() {
                    continue;
                }
                let mut found = Vec::new();
                let mut operand = |o: &Operand| match o {
                    Operand::Ref(q, false) => found.push(q.clone()),
                    Operand::Use(q) if q.projections.is_empty() => {
                        found.extend(lent[q.local.index()].iter().cloned())
                    }
                    _ => {}
                };
                match rv {
                    Rvalue::Use(o) => operand(o),
                    Rvalue::Tuple(os) | Rvalue::Array(os) => os.iter().for_each(&mut operand),
                    _ => {}
                }
                for q in found {
                    let key = q.to_string();
                    if q.local != p.local
                        && !lent[p.local.index()].iter().any(|x| x.to_string() == key)
                    {
                        lent[p.local.index()].push(q);
                        changed = true;
                    }
                }
            }
        }
    }
    let mut out: Vec<Vec<bool>> =
        body.blocks.iter().map(|b| vec![false; b.statements.len()]).collect();
    // A receiver lent shared to the call's own arguments (`p.g(&p)`, `p.g(r)` with `r = &p`).
    for (bi, b) in body.blocks.iter().enumerate() {
        for (i, s) in b.statements.iter().enumerate() {
            let StatementKind::Assign(_, Rvalue::Method { receiver, args, .. }) = &s.kind else {
                continue;
            };
            out[bi][i] = !shared_ref[receiver.local.index()]
                && args.iter().any(|a| match a {
                    Operand::Ref(q, false) => overlap(q, receiver),
                    Operand::Use(q) if q.projections.is_empty() => {
                        lent[q.local.index()].iter().any(|l| overlap(l, receiver))
                    }
                    _ => false,
                });
        }
    }
    if lent.iter().all(Vec::is_empty) {
        return out;
    }
    // Liveness: a local is live after a statement if a later statement reads it before any
    // assignment of the whole local.
    let terminator_uses = |b: &Block| match &b.terminator.kind {
        TerminatorKind::Branch { cond, .. } => vec![*cond],
        _ => Vec::new(),
    };
    let def = |s: &Statement| match &s.kind {
        StatementKind::Assign(p, _) if p.projections.is_empty() => Some(p.local),
        _ => None,
    };
    let transfer = |b: &Block, live: &mut Vec<bool>, mut at: Option<&mut Vec<Vec<bool>>>| {
        for l in terminator_uses(b) {
            live[l.index()] = true;
        }
        for (i, s) in b.statements.iter().enumerate().rev() {
            if let Some(at) = at.as_deref_mut() {
                at[i] = live.clone();
            }
            if let Some(d) = def(s) {
                live[d.index()] = false;
            }
            for u in statement_uses(s) {
                live[u.index()] = true;
            }
        }
    };
    let mut live_in = vec![vec![false; n]; body.blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (bi, b) in body.blocks.iter().enumerate().rev() {
            let mut live = vec![false; n];
            for succ in b.terminator.kind.successors() {
                for (l, x) in live_in[succ.index()].iter().enumerate() {
                    live[l] |= *x;
                }
            }
            transfer(b, &mut live, None);
            if live != live_in[bi] {
                live_in[bi] = live;
                changed = true;
            }
        }
    }
    for (bi, b) in body.blocks.iter().enumerate() {
        let mut live = vec![false; n];
        for succ in b.terminator.kind.successors() {
            for (l, x) in live_in[succ.index()].iter().enumerate() {
                live[l] |= *x;
            }
        }
        let mut after = vec![Vec::new(); b.statements.len()];
        transfer(b, &mut live, Some(&mut after));
        for (i, s) in b.statements.iter().enumerate() {
            let StatementKind::Assign(_, Rvalue::Method { receiver, .. }) = &s.kind else {
                continue;
            };
            out[bi][i] |= !shared_ref[receiver.local.index()]
                && lent
                    .iter()
                    .enumerate()
                    .any(|(v, places)| after[i][v] && places.iter().any(|q| overlap(q, receiver)));
        }
    }
    out
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
    // A user type's method named like a number's, marked by lowering (`USER_METHOD`), has the
    // method's own key.
    let name = name.strip_prefix(super::ir::USER_METHOD).unwrap_or(name);
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
    let literal = literal_ints(body);
    let lit = |o: &Operand| is_literal_int(o, &literal);
    let plain = |o: &Operand| o.to_string().trim_start_matches("const ").to_owned();
    let mut out = String::new();
    for (i, block) in body.blocks.iter().enumerate() {
        let _ = writeln!(out, "bb{i}:");
        for s in &block.statements {
            let line = match &s.kind {
                StatementKind::Assign(p, rv) => {
                    let rhs = match rv {
                        Rvalue::Binary(b, x, y) if is_arithmetic(*b) && lit(x) && lit(y) => {
                            format!("{}({}, {}) on primals", b.name(), plain(x), plain(y))
                        }
                        Rvalue::Unary(u, x) if lit(x) => {
                            let name = if *u == UnOp::Neg { "neg" } else { "not" };
                            format!("{name}({}) on primals", plain(x))
                        }
                        Rvalue::Use(o) | Rvalue::Convert(_, o) => op(o),
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
