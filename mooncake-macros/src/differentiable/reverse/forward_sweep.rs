//! The forward sweep: each statement's primal work and what it keeps for the reverse sweep (a
//! pullback, an index, a record), the re-run form of a replayed block's statements, calls and
//! methods with their arguments and loans, and stores.

use super::*;

/// `call` inside `rev::lend` for each loan: a buffer held through a handle, or a value the
/// function holds (with a fresh shadow), lent for the call only. Without loans, the call; with
/// them, `(output, pullback, (what each loan gives back, ..))`, the last for the reverse pass
/// (`rev::give_back`).
pub(super) fn lend(call: TokenStream, loans: Vec<Loan>, span: Span) -> TokenStream {
    if loans.is_empty() {
        return call;
    }
    let rt = rt();
    let mut nested = call;
    // A field of a `&mut` argument gives nothing back (its shadow is the field's own).
    let (fields, loans): (Vec<Loan>, Vec<Loan>) =
        loans.into_iter().partition(|(_, _, k)| *k == LoanKind::Field);
    for (l, b, _) in fields.iter().rev() {
        nested = quote_spanned!(span=> {
            let (__r, ()) = #rt::rev::lend_field(&#l, |#b| #nested);
            __r
        });
    }
    if loans.is_empty() {
        return nested;
    }
    let mut pat = quote!((__o, __pb));
    let backs: Vec<syn::Ident> =
        (0..loans.len()).map(|k| format_ident!("__bk{}", k, span = Span::mixed_site())).collect();
    for ((l, b, kind), bk) in loans.iter().zip(&backs).rev() {
        nested = if *kind == LoanKind::Mut {
            quote_spanned!(span=> #rt::rev::lend_mut(&mut #l, |#b| #nested))
        } else {
            quote_spanned!(span=> #rt::rev::lend(&#l, |#b| #nested))
        };
        pat = quote!((#pat, #bk));
    }
    quote_spanned!(span=> {
        let #pat = #nested;
        (__o, __pb, (#(#backs,)*))
    })
}

/// How a loan is lent to a call (see [`lend`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LoanKind {
    /// A local, shared.
    Shared,
    /// A value the function holds, mutably.
    Mut,
    /// A field of a `&mut` argument, shared: borrowed out of its handle; nothing to give back.
    Field,
}

/// A loan: what is lent (an expression), the name the call sees it by, and how.
pub(super) type Loan = (TokenStream, syn::Ident, LoanKind);

/// Whether any loan gives something back (every kind but [`LoanKind::Field`]).
pub(super) fn gives_back(loans: &[Loan]) -> bool {
    loans.iter().any(|(_, _, k)| *k != LoanKind::Field)
}

/// The locals `&v` and `&mut v` lend to a call or a user method (see [`lend`]), in argument
/// order, each with whether it is lent mutably (`&mut v` of a value the function holds, which
/// `lent_mut` tells: buffers held through handles are passed as they are).
pub(super) fn loaned_locals(rv: &Rvalue, lent_mut: &dyn Fn(Local) -> bool) -> Vec<(Local, bool)> {
    let args = match rv {
        Rvalue::Call { func, args }
            if !(func.segments.len() == 2
                && (func.segments[0].ident == "f64"
                    || func.segments[0].ident == "f32"
                    || func.segments[0].ident == "Vec")) =>
        {
            args
        }
        Rvalue::Method { method, args, .. } if !reverse_method(&method.to_string()) => args,
        _ => return Vec::new(),
    };
    let mut loans: Vec<(Local, bool)> = args
        .iter()
        .filter_map(|a| match a {
            Operand::Ref(p, false) if !matches!(access(p), Some(Access::Field(..))) => {
                Some((p.local, false))
            }
            Operand::Ref(p, true) if p.projections.is_empty() && lent_mut(p.local) => {
                Some((p.local, true))
            }
            _ => None,
        })
        .collect();
    if let Rvalue::Method { receiver, .. } = rv
        && receiver_lent(rv, lent_mut)
    {
        loans.push((receiver.local, false));
    }
    loans
}

/// Whether `rv` is a method of a user type whose receiver, a value the function holds
/// (`value_local`), is also lent shared to the call's arguments (`p.g(&p)`): the method takes
/// `&self` or `self`, and the receiver is lent shared to the call as well (see [`lend`]),
/// giving its gradient back through the loan rather than through the method's pullback.
pub(super) fn receiver_lent(rv: &Rvalue, value_local: &dyn Fn(Local) -> bool) -> bool {
    matches!(rv, Rvalue::Method { receiver, method, args }
        if !reverse_method(&method.to_string())
            && receiver.projections.is_empty()
            && value_local(receiver.local)
            && args.iter().any(|a| matches!(a, Operand::Ref(q, false)
                if q.local == receiver.local && q.projections.is_empty())))
}

impl Reverse<'_> {
    /// An assertion's or a panic's tokens with each local's primal value: through
    /// `rev::view` for a local held through a handle.
    pub(super) fn substitute_primals(&self, tokens: TokenStream) -> TokenStream {
        let rt = rt();
        self.names.substitute(tokens, &|l| {
            let x = self.names.local(l);
            if self.handles[l.index()] {
                quote!(#rt::rev::view(&#x.primal))
            } else {
                quote!(#x.primal)
            }
        })
    }

    pub(super) fn codual_operand(&self, o: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #l)
            }
            Operand::Const(c) => {
                let c = self.substitute_primals(c.clone());
                quote_spanned!(span=> #rt::rev::constant(#c))
            }
            Operand::Ref(..) => quote!(::core::unreachable!()),
        }
    }

    /// An operand of an operator's rule: a local through `rev::operand` (a copy of a number,
    /// an owned clone of a matrix, so that the local stays usable and the rule's pullback
    /// borrows nothing), a constant built.
    pub(super) fn rule_operand(&self, o: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #rt::rev::operand(&#l))
            }
            other => self.codual_operand(other, span),
        }
    }

    /// An operand moved into a tuple or a struct: a local is passed (cloned: a copy for values,
    /// an `Rc` increment for shadows), a constant built.
    pub(super) fn passed_operand(&self, o: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #rt::rev::pass(&#l))
            }
            other => self.codual_operand(other, span),
        }
    }

    pub(super) fn primal_operand(&self, o: &Operand, span: Span) -> TokenStream {
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #l.primal)
            }
            Operand::Const(c) => {
                let c = self.substitute_primals(c.clone());
                quote_spanned!(span=> (#c))
            }
            Operand::Ref(..) => quote!(::core::unreachable!()),
        }
    }

    /// The forward-pass code of a pure statement (see `replay`) of a block the reverse sweep
    /// runs again: its primal value only, with no rule and no pullback.
    pub(super) fn forward_primal_statement(
        &self,
        b: BlockId,
        i: usize,
        s: &Statement,
    ) -> TokenStream {
        let rt = rt();
        let span = s.span;
        let StatementKind::Assign(place, rv) = &s.kind else {
            return self.forward_statement(b, i, s);
        };
        if self.is_fresh(b, i)
            && let (Some(Access::Index(base, index)), Rvalue::Use(value)) = (access(place), rv)
        {
            // A store that keeps no record, in a block run again: the store alone.
            let v = self.codual_operand(value, span);
            let (base, index) = (self.names.local(base), self.names.local(index));
            return quote_spanned!(span=> #rt::rev::store_fresh(&#base, #index.primal, #v););
        }
        if !place.projections.is_empty()
            || !matches!(kind(place, rv, &self.refs, &self.inactive), Kind::Rule(_))
        {
            return self.forward_statement(b, i, s);
        }
        let x = self.names.local(place.local);
        let mark = if self.adjoint[place.local.index()] {
            let m = marker(place.local);
            quote!(#m = #rt::rev::marker(&#x);)
        } else {
            quote!()
        };
        let op = |o: &Operand| self.primal_operand(o, span);
        // An argument needs no parentheses around a constant (they would draw `unused_parens`).
        let arg = |o: &Operand| match o {
            Operand::Const(c) => self.substitute_primals(c.clone()),
            other => op(other),
        };
        let value = match rv {
            Rvalue::Binary(bin, a, c) => {
                let (pa, pc) = (op(a), op(c));
                let o = match bin {
                    BinOp::Add => quote!(+),
                    BinOp::Sub => quote!(-),
                    BinOp::Mul => quote!(*),
                    BinOp::Div => quote!(/),
                    _ => quote!(%),
                };
                quote_spanned!(span=> #pa #o #pc)
            }
            Rvalue::Unary(_, a) => {
                let pa = op(a);
                quote_spanned!(span=> -#pa)
            }
            Rvalue::Cast(a, ty) => {
                let pa = op(a);
                quote_spanned!(span=> #pa as #ty)
            }
            Rvalue::Method { receiver, method, args } => {
                let r = self.names.local(receiver.local);
                // A comparison's argument, whose `&` lowering dropped, is lent again.
                let lent = if method == "total_cmp" || method == "partial_cmp" {
                    quote!(&)
                } else {
                    quote!()
                };
                let args = args.iter().map(arg);
                quote_spanned!(span=> #r.primal.#method(#(#lent #args),*))
            }
            Rvalue::Call { func, args } => {
                let args = args.iter().map(arg);
                quote_spanned!(span=> #func(#(#args),*))
            }
            Rvalue::Use(Operand::Use(q)) => match access(q) {
                Some(Access::Index(base, index)) if !self.stable_args[base.index()] => {
                    let (b_, i_) = (self.names.local(base), self.names.local(index));
                    quote_spanned!(span=> #rt::rev::read_at(&#b_, #i_.primal))
                }
                _ => return self.forward_statement(b, i, s),
            },
            _ => return self.forward_statement(b, i, s),
        };
        quote_spanned!(span=> #x = #rt::CoDual::new(#value, #rt::NoFData); #mark)
    }

    /// The forward-pass code of statement `i` of block `b`.
    pub(super) fn forward_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let span = s.span;
        let (place, rv) = match &s.kind {
            StatementKind::Assign(p, rv) => (p, rv),
            StatementKind::Check(tokens) => {
                let t = self.substitute_primals(tokens.clone());
                return quote_spanned!(span=> #t;);
            }
        };
        if !place.projections.is_empty() {
            return self.forward_store(b, i, place, rv, span);
        }
        if self.views.iter().any(|(v, _, _)| *v == place.local) {
            // Made at entry (see `generate`).
            return quote!();
        }
        let x = self.names.local(place.local);
        let mark = if self.adjoint[place.local.index()] {
            let m = marker(place.local);
            quote!(#m = #rt::rev::marker(&#x);)
        } else {
            quote!()
        };
        let no_derivative = |value: TokenStream| quote_spanned!(span=> #x = #rt::CoDual::new(#value, #rt::NoFData); #mark);
        if matches!(kind(place, rv, &self.refs, &self.inactive), Kind::Linear(_)) {
            // No rule and no tape: the primal operation, with its adjoint inline in the
            // pullback.
            // A sum or a negation of values the function holds: `rev::linear`, whose bound
            // refuses data with a shadow (a matrix: its gradient is not rdata) with a message
            // instead of a type error further on.
            // (The path written out, so that the error's span is the user's operator.)
            let linear = |value: TokenStream| quote_spanned!(span=> #x = ::mooncake_runtime::__private::rev::linear(#value); #mark);
            let value = match rv {
                Rvalue::Binary(op, a, c) => {
                    let (pa, pc) = (self.primal_operand(a, span), self.primal_operand(c, span));
                    return linear(if *op == BinOp::Sub {
                        quote!(#pa - #pc)
                    } else {
                        quote!(#pa + #pc)
                    });
                }
                Rvalue::Unary(_, a) => {
                    let pa = self.primal_operand(a, span);
                    return linear(quote!(-#pa));
                }
                // `v[k].w.len()`: on the primal.
                Rvalue::Method { receiver, method, args } if method == "__deep_len" => {
                    let r = self.buffer_receiver(receiver, span);
                    let (lets, path) = self.deep_path(args, span);
                    quote_spanned!(span=> { #lets #rt::rev::as_read(&#r).primal #path .len() })
                }
                // `base[k].len()` of a buffer of buffers.
                Rvalue::Method { receiver, method, args } if method == "__len2" => {
                    let r = self.buffer_receiver(receiver, span);
                    let k = self.primal_operand(&args[0], span);
                    quote_spanned!(span=> #rt::rules::buffer::row_len(#rt::rev::as_read(&#r).primal, #k))
                }
                // `p.w.len()`: the field's own `len` (a `Vec`, an array, or behind `&mut` a
                // handle).
                Rvalue::Method { receiver, .. }
                    if let Some(Access::Field(base, path)) = access(receiver) =>
                {
                    let (b_, f) = (self.names.local(base), field_path(&path));
                    quote_spanned!(span=> #b_.primal #f .len())
                }
                Rvalue::Method { receiver, .. } => {
                    let r = self.buffer_receiver(receiver, span);
                    quote_spanned!(span=> #rt::rev::len_of(&#r))
                }
                _ => quote!(::core::unreachable!()),
            };
            return no_derivative(value);
        }
        let mut into_handle = false;
        // A buffer of numbers built by a rule of the runtime's: its handle gives its memory
        // back to the pool of large buffers (`rev::into_kept_handle`).
        let mut kept = false;
        let mut array_len: Option<TokenStream> = None;
        let mut has_loans = false;
        // The element type of a buffer built into a local declared `Vec<T>` or `[T; N]`, for
        // the constructor (the local itself is left untyped: see `local_declarations`).
        let declared = self.body.locals[place.local.index()].ty.as_ref().and_then(buffer_element);
        let elem = declared.map(|e| quote!(::<#e>)).unwrap_or_default();
        let elem_n = declared.map(|e| quote!(::<#e, _>)).unwrap_or_default();
        let (call, boxed) = match rv {
            Rvalue::Use(Operand::Use(p)) if p.projections.is_empty() => {
                let y = self.names.local(p.local);
                if place.local == Local::RETURN {
                    // The result, whose type the signature fixes: a buffer built in the body
                    // (held through a handle) is returned as a `Vec` with the same shadow, or
                    // as an array.
                    let (link, ty) = (return_link((b.index(), i)), return_type((b.index(), i)));
                    return quote_spanned!(span=> {
                        let (__v, __link) = #rt::rev::as_result(&#y);
                        #x = __v;
                        #link = ::core::option::Option::Some(__link);
                        #ty = #rt::rev::type_marker(&#y);
                        #mark
                    });
                }
                return quote_spanned!(span=> #x = #rt::rev::pass(&#y); #mark);
            }
            Rvalue::Use(Operand::Use(p)) => match access(p) {
                // An element or a field of a named constant (`W[k]`, `PTS[k]`, `P0.a`): a
                // constant, whatever its type.
                Some(
                    Access::Index(base, _)
                    | Access::Field(base, _)
                    | Access::FieldIndex(base, _, _),
                ) if self.inactive.consts[base.index()] => {
                    let v = super::super::forward::place_half(self.names, p, "primal");
                    return quote_spanned!(span=>
                        #x = #rt::rev::constant(::core::clone::Clone::clone(&#v));
                        #mark
                    );
                }
                Some(Access::Index(base, index)) if self.inactive.bufs[base.index()] => {
                    // An element of an integer or `bool` buffer: read, nothing kept.
                    let (b_, i_) = (self.names.local(base), self.names.local(index));
                    return no_derivative(
                        quote_spanned!(span=> #rt::rev::read_at(&#b_, #i_.primal)),
                    );
                }
                Some(Access::Index(base, index)) if self.index_only[base.index()] => {
                    // The element's value; only the index goes on the tape.
                    let (b_, i_) = (self.names.local(base), self.names.local(index));
                    let t = tape((b.index(), i));
                    // The element's codual with its type's zero fdata: `NoFData` for a number,
                    // a row of a buffer of arrays (`ps[k]` of `&[[f64; 2]]`, passed on by value)
                    // or a tuple of a buffer of tuples (a copy of `&entries[a..]`) its own.
                    let codual = |v: TokenStream| quote!(#rt::rev::constant(#v));
                    if self.rerun.get()
                        && let Some(&k) = self.windows.reads.get(&(b.index(), i))
                    {
                        // Run again in the reverse sweep: through the window of the copy (see
                        // `windows`).
                        let (w, slot) = (windows::window_name(k), self.window_slot(k));
                        let v = codual(quote!(#rt::rev::window_read(&#w, #slot, #i_.primal)));
                        return quote_spanned!(span=>
                            #x = #v;
                            #mark
                            let #t: usize = #i_.primal;
                        );
                    }
                    if !self.rerun.get()
                        && let Some(&k) = self.windows.fwd_reads.get(&(b.index(), i))
                    {
                        // Through the window the loop cut at its entry (see `windows`).
                        let w = windows::window_name(k);
                        let slot = self.fwd_slot(self.windows.list[k].header);
                        let v = codual(quote!(#rt::rev::window_read(&#w, #slot, #i_.primal)));
                        return quote_spanned!(span=>
                            #x = #v;
                            #mark
                            let #t: usize = #i_.primal;
                        );
                    }
                    let v = codual(quote!(#rt::rev::read_at(&#b_, #i_.primal)));
                    return quote_spanned!(span=>
                        #x = #v;
                        #mark
                        let #t: usize = #i_.primal;
                    );
                }
                Some(Access::Index(base, index)) => {
                    let (base, index) = (self.names.local(base), self.names.local(index));
                    (
                        quote_spanned!(span=> #rt::rules::buffer::index_rrule(#rt::rev::as_read(&#base), #index)),
                        false,
                    )
                }
                Some(Access::Deref(base))
                    if self.refs[base.index()] && !self.mut_refs[base.index()] =>
                {
                    // `*x` of `x: &T`: a copy, its gradient into `x`'s shadow.
                    let base = self.names.local(base);
                    (quote_spanned!(span=> #rt::rev::ref_load_rrule(&#base)), false)
                }
                Some(Access::Deref(base)) => {
                    let base = self.names.local(base);
                    (quote_spanned!(span=> #rt::rev::handle_load_rrule(&#base)), false)
                }
                Some(Access::Field(base, path)) if self.mut_refs[base.index()] => {
                    let view = self.field_view(base, &path, span);
                    (quote_spanned!(span=> #rt::rev::handle_load_rrule(&#view)), false)
                }
                Some(Access::Field(base, path)) => {
                    let f = field_path(&path);
                    let b = self.names.local(base);
                    if self.refs[base.index()] {
                        (
                            quote_spanned!(span=> #rt::rev::shadow_load_rrule(&#b.primal #f, &#b.fdata #f)),
                            false,
                        )
                    } else {
                        // A field of a value: copied; its gradient goes into the base's adjoint.
                        return quote_spanned!(span=>
                            #x = #rt::CoDual::new(#b.primal #f, ::core::clone::Clone::clone(&#b.fdata #f));
                            #mark
                        );
                    }
                }
                Some(Access::FieldIndex(base, path, index)) if !self.refs[base.index()] => {
                    // An element of a buffer field of a struct held by value.
                    let (b_, i_, m) =
                        (self.names.local(base), self.names.local(index), marker(base));
                    let f = field_path(&path);
                    (
                        quote_spanned!(span=> #rt::rev::value_field_index_load_rrule(
                            &#b_.primal #f, &#b_.fdata #f, #i_.primal, #m, |__d| &mut __d #f,
                        )),
                        false,
                    )
                }
                Some(Access::FieldIndex(base, path, index)) => {
                    let view = self.field_view(base, &path, span);
                    let index = self.names.local(index);
                    (
                        quote_spanned!(span=> #rt::rules::buffer::index_rrule(#rt::rev::as_read(&#view), #index)),
                        false,
                    )
                }
                None => return quote!(::core::unreachable!();),
            },
            Rvalue::Use(o) => {
                let v = self.codual_operand(o, span);
                return quote_spanned!(span=> #x = #v; #mark);
            }
            Rvalue::Matches(p, pat) => {
                let y = self.names.local(p.local);
                return no_derivative(crate::differentiable::ir::matches_tokens(
                    quote!(#y.primal),
                    pat,
                ));
            }
            Rvalue::Convert(c, o) => {
                let v = self.codual_operand(o, span);
                let call = match c {
                    Conversion::Hold => {
                        quote_spanned!(span=> {
                            let (__o, __link) = #rt::rev::hold_value(#rt::rev::pass(&#v));
                            (__o, #rt::rev::hold_pullback(__link))
                        })
                    }
                    Conversion::Release => quote_spanned!(span=> #rt::rev::release_rrule(&#v)),
                    // A copy of a buffer of buffers or of structs: element by element.
                    Conversion::Copy
                        if matches!(o, Operand::Use(q) if q.projections.is_empty()
                            && (self.value_buffers[q.local.index()]
                                || self.nested_buffers[q.local.index()])) =>
                    {
                        quote_spanned!(span=> #rt::rev::values_copy_rrule(&#v))
                    }
                    Conversion::Copy => quote_spanned!(span=> #rt::rev::copy_rrule(&#v)),
                };
                (call, false)
            }
            Rvalue::Unary(UnOp::Not, a) => {
                let a = self.primal_operand(a, span);
                return no_derivative(quote!(!#a));
            }
            Rvalue::Binary(op, a, c) => {
                let (pa, pc) = (self.primal_operand(a, span), self.primal_operand(c, span));
                let prim = |t: TokenStream| no_derivative(quote!(#pa #t #pc));
                match op {
                    BinOp::Eq => return prim(quote!(==)),
                    BinOp::Ne => return prim(quote!(!=)),
                    BinOp::Lt => return prim(quote!(<)),
                    BinOp::Le => return prim(quote!(<=)),
                    BinOp::Gt => return prim(quote!(>)),
                    BinOp::Ge => return prim(quote!(>=)),
                    BinOp::BitAnd => return prim(quote!(&)),
                    BinOp::BitOr => return prim(quote!(|)),
                    BinOp::BitXor => return prim(quote!(^)),
                    BinOp::Shl => return prim(quote!(<<)),
                    BinOp::Shr => return prim(quote!(>>)),
                    _ => {}
                }
                if self.inactive.ints[place.local.index()] {
                    let t = match op {
                        BinOp::Add => quote!(+),
                        BinOp::Sub => quote!(-),
                        BinOp::Mul => quote!(*),
                        BinOp::Div => quote!(/),
                        _ => quote!(%),
                    };
                    return prim(t);
                }
                let name = format_ident!("{}", op.name());
                let (a, c) = (self.rule_operand(a, span), self.rule_operand(c, span));
                (quote_spanned!(span=> #rt::rev::#name(#a, #c)), false)
            }
            Rvalue::Unary(UnOp::Neg, a) if self.inactive.ints[place.local.index()] => {
                let a = self.primal_operand(a, span);
                return no_derivative(quote!(-#a));
            }
            Rvalue::Cast(a, ty) if self.inactive.ints[place.local.index()] => {
                let a = self.primal_operand(a, span);
                return no_derivative(quote!(#a as #ty));
            }
            Rvalue::Unary(UnOp::Neg, a) => {
                let a = self.rule_operand(a, span);
                (quote_spanned!(span=> #rt::rev::neg(#a)), false)
            }
            Rvalue::Cast(a, ty) => {
                let a = self.codual_operand(a, span);
                (quote_spanned!(span=> #rt::rev::cast::<_, #ty>(#a)), false)
            }
            Rvalue::Tuple(ops) => {
                let vars: Vec<syn::Ident> = (0..ops.len())
                    .map(|i| format_ident!("__e{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = ops.iter().map(|o| self.passed_operand(o, span));
                return quote_spanned!(span=> {
                    #(let #vars = #vals;)*
                    #x = #rt::CoDual::new((#(#vars.primal,)*), (#(#vars.fdata,)*));
                    #mark
                });
            }
            Rvalue::Struct { path, fields } => {
                let vars: Vec<syn::Ident> = (0..fields.len())
                    .map(|i| format_ident!("__f{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = fields.iter().map(|(_, o)| self.passed_operand(o, span));
                let members: Vec<&syn::Member> = fields.iter().map(|(m, _)| m).collect();
                // The fdata is written field by field into the struct's zero fdata: a derived
                // fdata struct of a generic struct has a marker field a literal would need.
                return quote_spanned!(span=> {
                    #(let #vars = #vals;)*
                    let __p = #path { #(#members: #vars.primal),* };
                    let mut __fd = #rt::Primal::zero_fdata(&__p);
                    #(__fd.#members = #vars.fdata;)*
                    #x = #rt::CoDual::new(__p, __fd);
                    #mark
                });
            }
            Rvalue::VecRepeat(v, n) => {
                into_handle = true;
                kept = true;
                let (v, n) = (self.codual_operand(v, span), self.codual_operand(n, span));
                (quote_spanned!(span=> #rt::rules::buffer::vec_filled_rrule #elem(#v, #n)), false)
            }
            // An array built in the body is held through a handle, like a `Vec`.
            // `[row; N]` of a row the function holds, into a buffer of rows (`[[0.0; 3]; 3]`).
            // A held row repeated is a buffer of rows, whether or not the text indexes it twice
            // (`[[0.0; 2]; 2]` repeated again by `vec![..; n]`).
            Rvalue::Repeat(Operand::Use(q), n)
                if q.projections.is_empty() && self.handles[q.local.index()] =>
            {
                into_handle = true;
                array_len = Some(quote!({ #n }));
                let r = self.names.local(q.local);
                (
                    quote_spanned!(span=> #rt::rules::buffer::repeat_rows_rrule(#rt::rev::pass(&#r), #rt::rev::constant::<usize>(#n))),
                    false,
                )
            }
            // `[r0, r1]` / `vec![r0, r1]` of rows the function holds (`[[a, b], [c, d]]`).
            Rvalue::VecList(ops) | Rvalue::Array(ops)
                if !self.value_buffers[place.local.index()]
                    && !ops.is_empty()
                    && ops.iter().all(|o| {
                        matches!(o, Operand::Use(q)
                        if q.projections.is_empty() && self.handles[q.local.index()])
                    }) =>
            {
                into_handle = true;
                if matches!(rv, Rvalue::Array(_)) {
                    let n = ops.len();
                    array_len = Some(quote!(#n));
                }
                let rows = ops.iter().filter_map(|o| match o {
                    Operand::Use(q) => {
                        let r = self.names.local(q.local);
                        Some(quote_spanned!(span=> #rt::rev::pass(&#r)))
                    }
                    _ => None,
                });
                (
                    quote_spanned!(span=> #rt::rules::buffer::vec_from_rows_rrule([#(#rows),*])),
                    false,
                )
            }
            Rvalue::Repeat(v, n) => {
                into_handle = true;
                array_len = Some(quote!({ #n }));
                let v = self.codual_operand(v, span);
                (
                    quote_spanned!(span=> #rt::rules::buffer::vec_filled_rrule #elem(#v, #rt::rev::constant::<usize>(#n))),
                    false,
                )
            }
            Rvalue::VecList(ops) | Rvalue::Array(ops) => {
                into_handle = true;
                if matches!(rv, Rvalue::Array(_)) {
                    let n = ops.len();
                    array_len = Some(quote!(#n));
                }
                let vars: Vec<syn::Ident> = (0..ops.len())
                    .map(|i| format_ident!("__e{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = ops.iter().map(|o| self.codual_operand(o, span));
                let n = ops.len();
                // `vec![a, b]` and `[a, b]` of structs or tuples: each element keeps its fdata.
                let call = if self.value_buffers[place.local.index()] {
                    quote!(#rt::rules::buffer::vec_from_values_rrule([#(#vars),*]))
                } else {
                    quote!(#rt::rules::buffer::vec_from_array_rrule #elem_n(#rt::CoDual::new([#(#vars.primal),*], [#rt::NoFData; #n])))
                };
                (
                    quote_spanned!(span=> {
                        #(let #vars = #vals;)*
                        #call
                    }),
                    false,
                )
            }
            Rvalue::Call { func, args }
                if func.segments.len() == 2
                    && func.segments[0].ident == "Vec"
                    && (func.segments[1].ident == "new"
                        || func.segments[1].ident == "with_capacity") =>
            {
                into_handle = true;
                if func.segments[1].ident == "new" {
                    (quote_spanned!(span=> #rt::rules::buffer::vec_new_rrule #elem()), false)
                } else {
                    let n = args
                        .first()
                        .map(|a| self.codual_operand(a, span))
                        .unwrap_or_else(|| quote!(::core::unreachable!()));
                    (
                        quote_spanned!(span=> #rt::rules::buffer::vec_with_capacity_rrule #elem(#n)),
                        false,
                    )
                }
            }
            Rvalue::Call { func, args } => {
                let segs: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
                if segs.len() == 2 && (segs[0] == "f64" || segs[0] == "f32") && !args.is_empty() {
                    // `f64::sin(x)`: the method on the first argument.
                    let recv = self.codual_operand(&args[0], span);
                    let method = &func.segments[1].ident;
                    let key = method_key(&method.to_string());
                    let rest = args[1..].iter().map(|a| self.codual_operand(a, span));
                    (
                        quote_spanned!(method.span()=> {
                            #rt::rev::MethodRrule::<#key, _, _>::method_rrule(#recv, (#(#rest,)*))
                        }),
                        false,
                    )
                } else {
                    let runtime =
                        func.segments.first().is_some_and(|s| s.ident == "mooncake_runtime");
                    // In a twin, another function's rule generic over the float, every
                    // argument's gradient wanted.
                    let (rule, wrt, check) = if self.twin_calls && !runtime {
                        // The callee's marker says whether its rule is generic over the float.
                        let marker = super::super::forward::sibling_path(
                            func,
                            super::super::twin::ORDER_MARKER,
                        );
                        let at = func.segments.last().map_or(span, |s| s.ident.span());
                        (
                            rule_path(func, "rrule_twin"),
                            quote_spanned!(span=> #rt::rev::Wrt::<{ u64::MAX }>,),
                            quote_spanned!(at=> #rt::rev::second_order_callee::<#marker>();),
                        )
                    } else {
                        (rule_path(func, "rrule"), quote!(), quote!())
                    };
                    let (args, loans) = self.call_arguments(args, span);
                    has_loans = gives_back(&loans);
                    let call =
                        lend(quote_spanned!(span=> { #check #rule(#wrt #(#args),*) }), loans, span);
                    // The runtime's own rules (enum variants, `T::from_f64`) call nothing back.
                    if func.segments.first().is_none_or(|s| s.ident != "mooncake_runtime") {
                        self.calls_out.set(true);
                    }
                    // A call of itself needs no box here: the rule boxes its own pullback.
                    (call, self.box_all_calls)
                }
            }
            // A copy of a named constant or of a range of one (`W.to_vec()`, `&W[1..]`): a
            // constant.
            Rvalue::Method { receiver, method, args }
                if self.inactive.consts[place.local.index()] && receiver.projections.is_empty() =>
            {
                let r = self.names.local(receiver.local);
                let value = match (method.to_string().as_str(), args.as_slice()) {
                    ("__sub_to_vec", [lo, hi]) => {
                        let (lo, hi) =
                            (self.primal_operand(lo, span), self.primal_operand(hi, span));
                        quote_spanned!(span=> #r.primal[#lo..#hi].to_vec())
                    }
                    ("to_vec", []) => quote_spanned!(span=> #r.primal.to_vec()),
                    _ => quote_spanned!(span=> ::core::clone::Clone::clone(&#r.primal)),
                };
                return quote_spanned!(span=> #x = #rt::rev::constant(#value); #mark);
            }
            Rvalue::Method { receiver, method, args }
                if method == "__iter_sum"
                    && receiver.projections.is_empty()
                    && self.inactive.bufs[receiver.local.index()] =>
            {
                // A sum of integers: on the primal.
                let _ = args;
                let r = self.names.local(receiver.local);
                return no_derivative(quote_spanned!(span=> #rt::rev::sum_of(&#r)));
            }
            Rvalue::Method { receiver, method, args }
                if args.is_empty() && (method == "len" || method == "__iter_sum") =>
            {
                let r = self.buffer_receiver(receiver, span);
                let rule = if method == "len" { quote!(len_rrule) } else { quote!(sum_rrule) };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::#rule(#rt::rev::as_read(&#r))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.is_empty() && (method == "to_vec" || method == "clone") =>
            {
                into_handle = true;
                let r = self.buffer_receiver(receiver, span);
                let l = receiver.local.index();
                // A buffer in a field (`f0.pos.clone()`) may hold anything the text does not
                // show (arrays, structs): copied element by element, as buffers of values are.
                let rule = if !receiver.projections.is_empty()
                    || self.value_buffers[l]
                    || self.nested_buffers[l]
                {
                    quote!(values_to_vec_rrule)
                } else {
                    kept = true;
                    quote!(to_vec_rrule)
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::#rule(#rt::rev::as_read(&#r))),
                    false,
                )
            }
            // `p.clone()` of a struct behind `&` (`normalise::clone_struct_arguments`).
            Rvalue::Method { receiver, method, .. } if method == "__clone_value" => {
                let r = self.names.local(receiver.local);
                (
                    quote_spanned!(span=> {
                        let (__o, __pb) = #rt::rules::buffer::clone_ref_rrule(#rt::rev::pass(&#r));
                        (__o, move |__r| { __pb(__r); (#rt::NoRData,) })
                    }),
                    false,
                )
            }
            // `p.clone()` of a struct held by value.
            Rvalue::Method { receiver, method, .. } if method == "__clone_owned" => {
                let r = self.names.local(receiver.local);
                (
                    quote_spanned!(span=> {
                        let (__o, __pb) = #rt::rules::buffer::clone_value_rrule(&#r);
                        (__o, move |__r| (__pb(__r),))
                    }),
                    false,
                )
            }
            // A copy of an element lent whole to a user function or method (`nested`, step 0).
            Rvalue::Method { receiver, method, args } if method == "__deep_clone" => {
                let r = self.buffer_receiver(receiver, span);
                let (lets, path) = self.deep_path(args, span);
                let nos = (0..=args.len()).map(|_| quote!(#rt::NoRData));
                (
                    quote_spanned!(span=> {
                        #lets
                        let (__o, __pb) = #rt::rules::buffer::deep_clone_rrule(
                            #rt::rev::as_read(&#r),
                            move |__p: &[_]| ::core::clone::Clone::clone(&__p #path),
                            move |__d: &mut [_], __t| #rt::rules::buffer::add_tangent(&mut __d #path, &__t),
                        );
                        (__o, move |__r| { __pb(__r); (#(#nos,)*) })
                    }),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if method == "__deep" || method == "__deep_to_vec" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let (lets, path) = self.deep_path(args, span);
                let nos = (0..=args.len()).map(|_| quote!(#rt::NoRData));
                let call = if method == "__deep" {
                    quote_spanned!(span=> #rt::rules::buffer::deep_read_rrule(
                        #rt::rev::as_read(&#r),
                        move |__p: &[_]| __p #path,
                        move |__d: &mut [_], __r| #rt::rules::buffer::add_rdata_to(&mut __d #path, __r),
                    ))
                } else {
                    // Held as its type is: a `Vec` field as a `Vec`, an array field as an array.
                    quote_spanned!(span=> #rt::rules::buffer::deep_to_vec_rrule(
                        #rt::rev::as_read(&#r),
                        move |__p: &[_]| ::core::clone::Clone::clone(&__p #path),
                        move |__d: &mut [_], __g: &[_]| #rt::rules::buffer::add_row(&mut __d #path, __g),
                    ))
                };
                (
                    quote_spanned!(span=> {
                        #lets
                        let (__o, __pb) = #call;
                        (__o, move |__r| { __pb(__r); (#(#nos,)*) })
                    }),
                    false,
                )
            }
            // A number stored inside an element (`__deep_set`), or the copy of an element a
            // user method ran on put back (`__deep_put`, `nested`, step 0).
            Rvalue::Method { receiver, method, args }
                if (method == "__deep_set" || method == "__deep_put") && !args.is_empty() =>
            {
                let r = self.buffer_receiver(receiver, span);
                let v = self.codual_operand(&args[0], span);
                let (lets, path) = self.deep_path(&args[1..], span);
                let nos = (1..args.len()).map(|_| quote!(#rt::NoRData));
                let rule = if method == "__deep_set" {
                    quote!(deep_write_rrule)
                } else {
                    quote!(deep_put_rrule)
                };
                (
                    quote_spanned!(span=> {
                        #lets
                        let (__o, __pb) = #rt::rules::buffer::#rule(
                            #rt::rev::as_write(&#r),
                            move |__p: &mut [_]| &mut __p #path,
                            move |__d: &mut [_]| &mut __d #path,
                            #v,
                        );
                        (__o, move |__r| (#rt::NoRData, __pb(__r), #(#nos,)*))
                    }),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 3 && method == "__set2" => {
                let r = self.buffer_receiver(receiver, span);
                let (a, c, v) = (
                    self.codual_operand(&args[0], span),
                    self.codual_operand(&args[1], span),
                    self.codual_operand(&args[2], span),
                );
                (
                    quote_spanned!(span=> #rt::rules::buffer::set2_rrule(#rt::rev::as_write(&#r), #a, #c, #v)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 1 && method == "__repeat_rows" =>
            {
                into_handle = true;
                let r = self.buffer_receiver(receiver, span);
                let n = self.codual_operand(&args[0], span);
                (
                    quote_spanned!(span=> #rt::rules::buffer::repeat_rows_rrule(#rt::rev::pass(&#r), #n)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 2
                    && method == "__get2"
                    && receiver.projections.is_empty()
                    && self.inactive.bufs[receiver.local.index()] =>
            {
                // `C[i][j]` of a table of constants: read, nothing kept.
                let r = self.names.local(receiver.local);
                let (a, c) =
                    (self.primal_operand(&args[0], span), self.primal_operand(&args[1], span));
                return no_derivative(quote_spanned!(span=> #rt::rev::read2_at(&#r, #a, #c)));
            }
            Rvalue::Method { receiver, method, args } if args.len() == 2 && method == "__get2" => {
                let r = self.buffer_receiver(receiver, span);
                let (a, c) =
                    (self.codual_operand(&args[0], span), self.codual_operand(&args[1], span));
                (
                    quote_spanned!(span=> #rt::rules::buffer::get2_rrule(#rt::rev::as_read(&#r), #a, #c)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 1 && method == "__row_to_vec" =>
            {
                // The rule returns the copy in its handle.
                let r = self.buffer_receiver(receiver, span);
                let a = self.codual_operand(&args[0], span);
                (
                    quote_spanned!(span=> #rt::rules::buffer::row_to_vec_rrule(#rt::rev::as_read(&#r), #a)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 2 && method == "__sub_to_vec" =>
            {
                into_handle = true;
                let r = self.buffer_receiver(receiver, span);
                let (a, c) =
                    (self.codual_operand(&args[0], span), self.codual_operand(&args[1], span));
                (
                    quote_spanned!(span=> #rt::rules::buffer::sub_to_vec_rrule(#rt::rev::as_read(&#r), #a, #c)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 2 && method == "__sub_assign" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let a = self.codual_operand(&args[0], span);
                let src = match &args[1] {
                    Operand::Use(p) | Operand::Ref(p, _) => self.buffer_receiver(p, span),
                    Operand::Const(_) => return quote!(::core::unreachable!();),
                };
                (
                    quote_spanned!(span=> #rt::rules::buffer::sub_assign_rrule(#rt::rev::as_write(&#r), #a, #rt::rev::as_read(&#src))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 1 && method == "fill" => {
                let r = self.buffer_receiver(receiver, span);
                let v = self.codual_operand(&args[0], span);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::fill_rrule(#rt::rev::as_write(&#r), #v)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 2 && method == "swap" => {
                let r = self.buffer_receiver(receiver, span);
                let (a, c) =
                    (self.codual_operand(&args[0], span), self.codual_operand(&args[1], span));
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::swap_rrule(#rt::rev::as_write(&#r), #a, #c)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 2 && method == "__sort_by" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let (a, c) =
                    (self.codual_operand(&args[0], span), self.codual_operand(&args[1], span));
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::sort_by_rrule(#rt::rev::as_write(&#r), #a, #c)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 3 && method == "__sort_by_keys" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let args = args.iter().map(|a| self.codual_operand(a, span));
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::sort_by_keys_rrule(#rt::rev::as_write(&#r), #(#args),*)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.is_empty() && method == "reverse" => {
                let r = self.buffer_receiver(receiver, span);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::reverse_rrule(#rt::rev::as_write(&#r))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 1 && method == "copy_from_slice" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let src = match &args[0] {
                    Operand::Use(p) | Operand::Ref(p, _) => self.buffer_receiver(p, span),
                    Operand::Const(_) => return quote!(::core::unreachable!();),
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::copy_from_slice_rrule(#rt::rev::as_write(&#r), #rt::rev::as_read(&#src))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if args.len() == 1 && method == "extend_from_slice" =>
            {
                let r = self.buffer_receiver(receiver, span);
                let src = match &args[0] {
                    Operand::Use(p) | Operand::Ref(p, _) => self.buffer_receiver(p, span),
                    Operand::Const(_) => return quote!(::core::unreachable!();),
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::extend_from_slice_rrule(#rt::rev::as_write(&#r), #rt::rev::as_read(&#src))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if (args.is_empty() && method == "clear")
                    || (args.len() == 1 && method == "truncate")
                    || (args.len() == 2 && method == "resize") =>
            {
                let r = self.buffer_receiver(receiver, span);
                let rule = format_ident!("{}_rrule", method.to_string());
                let args = args.iter().map(|a| self.codual_operand(a, span));
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::#rule(#rt::rev::as_write(&#r) #(, #args)*)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.is_empty() && method == "pop" => {
                let r = self.buffer_receiver(receiver, span);
                let rule = if receiver.projections.is_empty()
                    && self.value_buffers[receiver.local.index()]
                {
                    quote!(pop_value_rrule)
                } else {
                    quote!(pop_rrule)
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::#rule(#rt::rev::as_write(&#r))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 1 && method == "push" => {
                let r = self.buffer_receiver(receiver, span);
                let mut v = self.codual_operand(&args[0], span);
                let l = receiver.local.index();
                let rule = if receiver.projections.is_empty() && self.value_buffers[l] {
                    quote!(push_value_rrule)
                } else if receiver.projections.is_empty() && self.nested_buffers[l] {
                    // A row (a buffer the function holds) onto a buffer of rows: its handle
                    // passed on cloned, since an array pushed is copied and read again
                    // (`joints.push(p); .. p[0]`); the rule copies the row's values.
                    if matches!(&args[0], Operand::Use(p) if p.projections.is_empty()) {
                        v = quote_spanned!(span=> #rt::rev::pass(&#v));
                    }
                    quote!(push_row_rrule)
                } else {
                    quote!(push_rrule)
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::#rule(#rt::rev::as_write(&#r), #v)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if reverse_method(&method.to_string()) => {
                // A float or integer method of the runtime (or a float-named method of an
                // array): the receiver passed on (copied; an array cloned, since it may be used
                // again).
                let r = self.names.local(receiver.local);
                let key = method_key(&method.to_string());
                let args = args.iter().map(|a| self.codual_operand(a, span));
                let recv_name = syn::Ident::new("__mooncake_receiver", method.span());
                let trait_path =
                    quote_spanned!(method.span()=> ::mooncake_runtime::__private::rev::MethodRrule);
                let pass = quote_spanned!(method.span()=> ::mooncake_runtime::__private::rev::pass);
                (
                    quote_spanned!(method.span()=> {
                        let #recv_name = #pass(&#r);
                        #trait_path::<#key, _, _>::method_rrule(#recv_name, (#(#args,)*))
                    }),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } => {
                // A method of a user type: through the marker of how its receiver is held.
                self.calls_out.set(true);
                let r = self.names.local(receiver.local);
                let key = method_key(&method.to_string());
                let lent_receiver = receiver_lent(rv, &|l| self.value_local(l));
                let (args, mut loans) = self.call_argument_parts(args, span);
                // A receiver lent shared to its own arguments (`p.g(&p)`, so the method takes
                // `&self` or `self`) is lent shared to the call too, as the last loan.
                let loan = format_ident!("__loan_recv", span = Span::mixed_site());
                let held = format_ident!("__recv", span = Span::mixed_site());
                let (r, take_loan) = if lent_receiver {
                    loans.push((quote!(#r), loan.clone(), LoanKind::Shared));
                    (quote!(#held), quote!(let mut #held = #loan;))
                } else {
                    (quote_spanned!(span=> #r), quote!())
                };
                has_loans = gives_back(&loans);
                let recv_name = syn::Ident::new("__mooncake_receiver", method.span());
                let rev = quote_spanned!(method.span()=> ::mooncake_runtime::__private::rev);
                // The receiver is lent mutably (a `&mut self` method on a value the function
                // holds changes it); the arguments are evaluated first, as they may read it.
                // Each argument is read into a variable of its own, then re-wrapped in the
                // tuple the dispatch takes, where its parameter type is known and coercions
                // apply (`&Vec<f64>` to `&[f64]`).
                let vars: Vec<_> = (0..args.len())
                    .map(|i| format_ident!("__a{}", i, span = Span::mixed_site()))
                    .collect();
                let values = args.iter().map(|(v, _)| v);
                let params: Vec<_> = args.iter().zip(&vars).map(|((_, f), v)| f(v)).collect();
                let call = quote_spanned!(method.span()=> {
                    #(let #vars = #values;)*
                    #take_loan
                    let #recv_name = #rev::method_marker::<#key, _, _>(&#r);
                    #rev::UserMethodRrule::<#key, _>::method_rrule(
                        #recv_name,
                        &mut #r,
                        (#(#params,)*),
                    )
                });
                (lend(call, loans, span), false)
            }
        };
        let t = tape((b.index(), i));
        // With loans, the tape keeps what each loan gives back beside the pullback.
        let entry = if has_loans { quote!((__pb, __bk)) } else { quote!(__pb) };
        let boxing = if boxed {
            quote!(let __pb: ::std::boxed::Box<dyn ::core::ops::FnOnce(_) -> _> = ::std::boxed::Box::new(__pb);)
        } else {
            quote!()
        };
        let value = match (into_handle, array_len) {
            // An array keeps its length in its handle's type.
            (true, Some(n)) => quote!(#rt::rev::into_array_handle::<_, _, #n>(__o)),
            (true, None) if kept => quote!(#rt::rev::into_kept_handle(__o)),
            (true, None) => quote!(#rt::rev::into_handle(__o)),
            (false, _) => quote!(__o),
        };
        let bind = if has_loans { quote!((__o, __pb, __bk)) } else { quote!((__o, __pb)) };
        quote_spanned!(span=> let #t = {
            let #bind = #call;
            #boxing
            #x = #value;
            #mark
            #entry
        };)
    }

    /// The arguments of a call or of a user method: each a `CoDual` re-wrapped so that
    /// coercions apply, and the loans (`&v` of a buffer held through a handle, lent for the
    /// call only: see [`lend`]).
    pub(super) fn call_arguments(
        &self,
        args: &[Operand],
        span: Span,
    ) -> (Vec<TokenStream>, Vec<Loan>) {
        let (args, loans) = self.call_argument_parts(args, span);
        let args = args
            .into_iter()
            .map(|(value, finish)| {
                let c = syn::Ident::new("__c", Span::mixed_site());
                let finish = finish(&c);
                quote_spanned!(span=> { let #c = #value; #finish })
            })
            .collect();
        (args, loans)
    }

    /// [`Self::call_arguments`] in two parts each: the argument's value, evaluated where the
    /// caller puts it, and the expression that turns a variable holding it into the parameter
    /// (where the parameter's type is known).
    #[allow(clippy::type_complexity)]
    pub(super) fn call_argument_parts(
        &self,
        args: &[Operand],
        span: Span,
    ) -> (Vec<(TokenStream, Box<dyn Fn(&syn::Ident) -> TokenStream>)>, Vec<Loan>) {
        let rt = rt();
        let rewrap = {
            let rt = rt.clone();
            move |c: &syn::Ident| quote_spanned!(span=> #rt::CoDual::new(#c.primal, #c.fdata))
        };
        // A handle lent as `&mut` (`rev::MutArg`): the parameter it becomes is the callee's.
        let mut_arg = |l: Local| -> (TokenStream, Box<dyn Fn(&syn::Ident) -> TokenStream>) {
            let l = self.names.local(l);
            let value = quote_spanned!(span=> #rt::rev::MutArg::new(#rt::rev::pass(&#l)));
            (value, Box::new(move |c| quote_spanned!(span=> #c.into_param())))
        };
        let mut loans = Vec::new();
        let args = args
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let v = match a {
                    // `&s.field` of `s: &mut T`, lent shared: the field's value borrowed out of
                    // its handle for the call's statement, with the field's shadow.
                    Operand::Ref(p, false)
                        if let Some(Access::Field(base, path)) = access(p)
                            && self.mut_refs[base.index()] =>
                    {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        let view = self.field_view(base, &path, span);
                        loans.push((view, b.clone(), LoanKind::Field));
                        // As the parameter takes it: an array field, whose handle holds a
                        // `Vec`, lent as the array (`rhs(&c.x)` of `fn rhs(x: &[f64; 2])`).
                        let rt = rt.clone();
                        let finish: Box<dyn Fn(&syn::Ident) -> TokenStream> =
                            Box::new(move |c: &syn::Ident| {
                                quote_spanned!(span=> #rt::CoDual::new(#rt::rev::into_parameter(#c.primal), #c.fdata))
                            });
                        return (quote_spanned!(span=> #b), finish);
                    }
                    // `&p.field` of a struct held by value, shared: the field with its shadow
                    // (a buffer's, which its fdata is), where the callee's pullback adds.
                    Operand::Ref(p, false)
                        if let Some(Access::Field(base, path)) = access(p)
                            && !self.refs[base.index()] =>
                    {
                        let (b, f) = (self.names.local(base), field_path(&path));
                        // A field that is not a buffer is refused at the field's name.
                        let at = path.last().map_or(span, syn::spanned::Spanned::span);
                        let (primal, fdata) =
                            (quote_spanned!(at=> &#b.primal #f), quote!(&#b.fdata #f));
                        quote_spanned!(at=>
                            ::mooncake_runtime::__private::rev::value_field_loan(#primal, #fdata))
                    }
                    // `&r.field` of `r: &T`, `&mut r.field` of `r: &mut T`.
                    Operand::Ref(p, _) if let Some(Access::Field(base, path)) = access(p) => {
                        self.field_view(base, &path, span)
                    }
                    // A `&mut` argument passed on: to a `&mut` parameter as it is; to a `&`
                    // one, refused with a message (`rev::MutArg`).
                    Operand::Use(p)
                        if p.projections.is_empty() && self.mut_refs[p.local.index()] =>
                    {
                        return mut_arg(p.local);
                    }
                    // `&mut v` of a value the function holds: lent through a fresh handle,
                    // read back after the call (`rev::lend_mut`).
                    Operand::Ref(p, true)
                        if p.projections.is_empty() && self.value_local(p.local) =>
                    {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        let l = self.names.local(p.local);
                        loans.push((quote!(#l), b.clone(), LoanKind::Mut));
                        quote_spanned!(span=> #b)
                    }
                    // `&mut v` of a buffer held through a handle: to a `&mut` parameter as it
                    // is; to a `&` one (which Rust coerces to), refused with a message, as a
                    // `&mut` argument passed on is.
                    Operand::Ref(p, true) => return mut_arg(p.local),
                    Operand::Use(p) => {
                        let l = self.names.local(p.local);
                        quote_spanned!(span=> #rt::rev::pass(&#l))
                    }
                    Operand::Ref(p, false) => {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        let l = self.names.local(p.local);
                        loans.push((quote!(#l), b.clone(), LoanKind::Shared));
                        quote_spanned!(span=> #b)
                    }
                    other => self.codual_operand(other, span),
                };
                let finish: Box<dyn Fn(&syn::Ident) -> TokenStream> = Box::new(rewrap.clone());
                (v, finish)
            })
            .collect();
        (args, loans)
    }

    /// Whether the rule returns its pullback boxed (`Box<dyn FnOnce>` behind its `impl
    /// FnOnce`), after `generate`: when the body calls a user function or method, which may
    /// call this function back (mutual recursion). A rule whose pullback type is a box cannot
    /// contain itself, so every cycle of calls between such rules compiles; a function that
    /// calls none is a leaf, part of no cycle, and keeps its pullback unboxed (inlined into its
    /// callers' reverse sweeps, as in a hot loop). A boxed pullback is `'static`: the rule's
    /// type parameters get that bound.
    pub(crate) fn boxes_own_pullback(&self) -> bool {
        self.calls_out.get()
    }

    /// The index variables and the path of a deep read's arguments (see `nested::deep_parts`):
    /// `let __k0: usize = i; ..` and `[__k0] .w [__k1]`.
    pub(super) fn deep_path(&self, args: &[Operand], span: Span) -> (TokenStream, TokenStream) {
        let mut lets = TokenStream::new();
        let mut path = TokenStream::new();
        for (n, a) in args.iter().enumerate() {
            match a {
                Operand::Const(field) => path.extend(field.clone()),
                other => {
                    let k = format_ident!("__k{}", n, span = Span::mixed_site());
                    let v = self.primal_operand(other, span);
                    lets.extend(quote_spanned!(span=> let #k: usize = #v;));
                    path.extend(quote!([#k]));
                }
            }
        }
        (lets, path)
    }

    /// A buffer method's receiver: a local, or a view of a buffer field (`p.w`).
    pub(super) fn buffer_receiver(&self, receiver: &Place, span: Span) -> TokenStream {
        match access(receiver) {
            Some(Access::Field(base, path)) => self.field_view(base, &path, span),
            _ => {
                let b = self.names.local(receiver.local);
                quote_spanned!(span=> #b)
            }
        }
    }

    /// The `CoDual` of a field `base.path` of a reference argument: through the field's handle
    /// behind `&mut` (`rev::handle_view`), in place behind `&` (`rev::field_view`); each with
    /// the field's own shadow.
    pub(super) fn field_view(&self, base: Local, path: &[syn::Member], span: Span) -> TokenStream {
        self.view(self.mut_refs[base.index()], base, path, span)
    }

    /// [`Self::field_view`] with the choice made by the caller: stores always go through the
    /// field's handle.
    pub(super) fn view(
        &self,
        handle: bool,
        base: Local,
        path: &[syn::Member],
        span: Span,
    ) -> TokenStream {
        let rt = rt();
        let (b, f) = (self.names.local(base), field_path(path));
        if handle {
            quote_spanned!(span=> #rt::rev::handle_view(&#b.primal #f, &#b.fdata #f))
        } else {
            quote_spanned!(span=> #rt::rev::field_view(&#b.primal #f, &#b.fdata #f))
        }
    }

    /// The forward-pass code of a store `x[i] = v` or `*x = v` (statement `i` of block `b`).
    pub(super) fn forward_store(
        &self,
        b: BlockId,
        i: usize,
        place: &Place,
        rv: &Rvalue,
        span: Span,
    ) -> TokenStream {
        let rt = rt();
        let Rvalue::Use(value) = rv else {
            return quote!(::core::unreachable!(););
        };
        let v = self.codual_operand(value, span);
        let call = match access(place) {
            Some(Access::Index(base, index)) if self.is_fresh(b, i) => {
                // No record: the index alone (see `fresh`).
                let (base, index) = (self.names.local(base), self.names.local(index));
                let t = tape((b.index(), i));
                return quote_spanned!(span=>
                    let #t: usize = #index.primal;
                    #rt::rev::store_fresh(&#base, #t, #v);
                );
            }
            Some(Access::Index(base, index)) if self.stored[base.index()] => {
                // A record on the tape, undone inline (see `rev::store_at`).
                let zero = self.zero_shadow[base.index()];
                let (base, index) = (self.names.local(base), self.names.local(index));
                let t = tape((b.index(), i));
                if zero {
                    // The shadow is zero: the record holds the element only (see
                    // `rev::store_zero_at`).
                    return quote_spanned!(span=> let #t = #rt::rev::store_zero_at(&#base, #index.primal, #v););
                }
                return quote_spanned!(span=> let #t = #rt::rev::store_at(&#base, #index.primal, #v););
            }
            Some(Access::Index(base, index)) => {
                let (base, index) = (self.names.local(base), self.names.local(index));
                quote_spanned!(span=> #rt::rules::buffer::index_set_rrule(#rt::rev::as_write(&#base), #index, #v))
            }
            Some(Access::Deref(base)) => {
                let base = self.names.local(base);
                // The runtime's path placed at the statement, so that a value with no store rule
                // (an enum stored through `&mut`) is reported at the user's store.
                let rt = rt_at(span);
                quote_spanned!(span=> #rt::rev::store_rrule(&#base, #v))
            }
            // A field of a struct held by value: written in place; the pullback takes the
            // field's gradient out of the struct's.
            Some(Access::Field(base, path)) if !self.refs[base.index()] => {
                let (b_, m, f) = (self.names.local(base), marker(base), field_path(&path));
                quote_spanned!(span=> {
                    let __v = #v;
                    #b_.primal #f = __v.primal;
                    #b_.fdata #f = __v.fdata;
                    ((), #rt::rev::value_field_store_pullback(#m, |__d| &mut __d #f))
                })
            }
            Some(Access::FieldIndex(base, path, index)) if !self.refs[base.index()] => {
                let (b_, i_, m) = (self.names.local(base), self.names.local(index), marker(base));
                let f = field_path(&path);
                quote_spanned!(span=> ((), #rt::rev::value_field_index_store_rrule(
                    &mut #b_.primal #f, &#b_.fdata #f, #i_.primal, #v, #m, |__d| &mut __d #f,
                )))
            }
            Some(Access::Field(base, path)) => {
                let view = self.view(true, base, &path, span);
                let rt = rt_at(span);
                quote_spanned!(span=> #rt::rev::store_rrule(&#view, #v))
            }
            Some(Access::FieldIndex(base, path, index)) => {
                let view = self.view(true, base, &path, span);
                let index = self.names.local(index);
                quote_spanned!(span=> #rt::rules::buffer::index_set_rrule(#rt::rev::as_write(&#view), #index, #v))
            }
            None => return quote!(::core::unreachable!();),
        };
        let t = tape((b.index(), i));
        quote_spanned!(span=> let #t = {
            let (_, __pb) = #call;
            __pb
        };)
    }
}

impl Reverse<'_> {
    /// The forward sweep of block `b`'s statements: each one's code, the slot of a value a re-run
    /// block reads, the shadow of a handle whose loads add into it, and the block's tape entry
    /// (its integers and carried values, for a block the reverse sweep runs again).
    pub(super) fn forward_block(
        &self,
        b: BlockId,
        captured: &[bool],
        snapshots: &[bool],
    ) -> TokenStream {
        let (rt, body) = (rt(), self.body);
        let block = &body.blocks[b.index()];
        let replayed = self.replays[b.index()].is_some();
        let s = block.statements.iter().enumerate().map(|(i, s)| {
            // A block the reverse sweep runs again keeps nothing: the primal alone.
            let mut code = if replayed {
                self.forward_primal_statement(b, i, s)
            } else {
                self.forward_statement(b, i, s)
            };
            // `#[differentiable(debug)]`: a float just computed is checked to be finite.
            if self.debug
                && let StatementKind::Assign(p, _) = &s.kind
                && p.projections.is_empty()
                && p.local != Local::RETURN
            {
                let l = self.names.local(p.local);
                let what = match &body.locals[p.local.index()].name {
                    Some(n) => format!("`{n}`"),
                    None => "an intermediate value".to_owned(),
                };
                code.extend(quote_spanned!(s.span=> {
                    #[allow(unused_imports)]
                    use #rt::{fwd::DebugCheckFallback as _, rev::DebugCheck as _};
                    (&#l).mooncake_debug_check(#what, ::core::line!());
                }));
            }
            // A value some re-run block reads is kept in its slot when it is assigned.
            match &s.kind {
                StatementKind::Assign(p, _)
                    if p.projections.is_empty() && snapshots[p.local.index()] =>
                {
                    let (l, slot) = (self.names.local(p.local), snapshot_slot(p.local));
                    quote!(#code #slot = ::core::option::Option::Some(#rt::rev::pass(&#l));)
                }
                // A handle whose loads add into its shadow: the shadow, captured.
                StatementKind::Assign(p, _)
                    if p.projections.is_empty()
                        && self.captured_locals[p.local.index()]
                        && captured[p.local.index()] =>
                {
                    let (l, sh) = (self.names.local(p.local), shadow_capture(p.local));
                    let handle = if self.stored[p.local.index()] {
                        let hp = primal_capture(p.local);
                        quote!(#hp = ::core::option::Option::Some(#rt::rev::primal_handle(&#l));)
                    } else {
                        quote!()
                    };
                    quote!(#code #sh = ::core::option::Option::Some(#rt::rev::shadow_of(&#l)); #handle)
                }
                _ => code,
            }
        });
        if let Some(plan) = &self.replays[b.index()] {
            // Re-run in the reverse sweep: only the integers and the values carried by the
            // loop that it reads are taped, at its start, and the records of its stores, at its
            // end.
            if !plan.tapes() {
                return quote!(#(#s)*);
            }
            let (t, ints) = (block_tape(b), plan.ints.iter().map(|l| self.names.local(*l)));
            let values = plan.values.iter().map(|l| self.names.local(*l));
            if plan.stores.is_empty() {
                return quote!(#t.push((#(#ints.primal,)* #(#rt::rev::pass(&#values),)*)); #(#s)*);
            }
            // The integers and values as they are at the start, the records once made.
            let starts: Vec<syn::Ident> = (0..plan.ints.len() + plan.values.len())
                .map(|k| format_ident!("__s{}", k, span = Span::mixed_site()))
                .collect();
            let now =
                ints.map(|x| quote!(#x.primal)).chain(values.map(|x| quote!(#rt::rev::pass(&#x))));
            let records = plan.stores.iter().map(|i| tape((b.index(), *i)));
            return quote!(#(let #starts = #now;)* #(#s)* #t.push((#(#starts,)* #(#records,)*)););
        }
        let entries = self.entries(b);
        let record = if entries.is_empty() {
            quote!()
        } else {
            let (t, es) = (block_tape(b), entries.iter().map(|i| tape((b.index(), *i))));
            if self.in_loop.contains(&b) {
                quote!(#t.push((#(#es,)*));)
            } else {
                quote!(#t = ::core::option::Option::Some((#(#es,)*));)
            }
        };
        quote!(#(#s)* #record)
    }

    /// Where the loop with header `h` exits, the integers (and values) its re-run blocks read (see
    /// `counters`).
    pub(super) fn loop_exit(&self, h: BlockId) -> TokenStream {
        let Some(record) = self.counters.records.get(&h) else { return quote!() };
        let rt = rt();
        let t = loop_tape(h);
        let xs = record.iter().map(|l| {
            let x = self.names.local(*l);
            if self.counters.whole.contains(l) {
                quote!(#rt::rev::pass(&#x))
            } else {
                quote!(#x.primal)
            }
        });
        if self.counters.nested.contains(&h) {
            // With the trip count (see `Control::counted_in_record`).
            let count = super::control::trips(h);
            quote!(#t.push((#(#xs,)* #count,));)
        } else {
            quote!(#t = ::core::option::Option::Some((#(#xs,)*));)
        }
    }
}
