//! The reverse sweep: each statement's adjoint code (`Kind` classifies a statement by how its
//! adjoint is written: inline for arithmetic, copies, builds and loads; through the pullback the
//! forward sweep kept otherwise), and the guards of constant arguments' adjoints (`rev::Wrt`).

use super::*;

impl Reverse<'_> {
    /// The argument (counted from 0) whose shadow `l`'s is: an argument's own, or a view of a
    /// field of one.
    pub(super) fn arg_root(&self, l: Local) -> Option<u32> {
        if (1..=self.body.n_args).contains(&l.index()) {
            return Some(l.0 - 1);
        }
        let (_, base, _) = self.views.iter().find(|(v, _, _)| *v == l)?;
        self.arg_root(*base)
    }

    /// Whether the gradient of argument `l` is wanted: a constant under the rule's mask (see
    /// `rev::Wrt`).
    pub(super) fn live_arg(&self, l: Local) -> TokenStream {
        let rt = rt();
        let (k, mask) = (l.0 - 1, wrt_mask());
        quote!(#rt::rev::live(#mask, #k))
    }

    /// Whether adds into `l`'s shadow may be skipped when its argument's gradient is not
    /// wanted (see [`Self::live_arg`]): `None` unless the shadow is that of an argument the body
    /// never writes (or a view of one of its fields), which then only collects the gradient:
    /// nothing the sweep reads flows through it.
    pub(super) fn live(&self, l: Local) -> Option<TokenStream> {
        let root = Local(self.arg_root(l)? + 1);
        let collects_only = self.stable_args[root.index()] && !self.mut_refs[root.index()];
        collects_only.then(|| self.live_arg(root))
    }

    /// `add` (an addition into argument memory of the adjoint in `ax`), done only when that
    /// argument's gradient is wanted; the adjoint is consumed either way.
    pub(super) fn guard_arg_add(
        &self,
        base: Local,
        ax: &syn::Ident,
        add: TokenStream,
    ) -> TokenStream {
        let rt = rt();
        match self.live(base) {
            Some(live) => quote!(if #live { #add } else { let _ = #rt::rev::take(&mut #ax); }),
            None => add,
        }
    }
}

/// How a statement is transformed.
pub(super) enum Kind {
    /// `x = y`: the adjoint moves from `x` to `y`.
    Copy(Local),
    /// `x = base.path` of a struct held by value: the adjoint moves into that field of the
    /// base's adjoint.
    FieldCopy(Local, Vec<syn::Member>),
    /// `x = (a, b, ..)` or `x = S { f: a, .. }`: linear; the adjoint of `x` is split by member
    /// into the operands.
    Build(Vec<(syn::Member, Option<Local>)>),
    /// `x = constant` or a value with no derivative (comparisons, `!`, bit operations,
    /// `matches!`): the adjoint of `x` is dropped.
    NoDerivative,
    /// A rule with a pullback: its operands (`None` for constants), one per rdata the pullback
    /// returns, in order.
    Rule(Vec<Option<Local>>),
    /// A rule whose pullback returns one array of rdata (`vec![a, b, ..]`): its operands, one
    /// per element.
    RuleArray(Vec<Option<Local>>),
    /// `a + b`, `a - b`, `-a` on values: linear with coefficients ±1, so the reverse pass adds
    /// the adjoint into the operands (negated where the flag says) with no rule and no tape.
    /// A buffer's `len()`, whose derivative is zero, is a `Linear` of no operand.
    Linear(Vec<(Option<Local>, bool)>),
}

pub(super) fn operand_local(o: &Operand) -> Option<Local> {
    match o {
        Operand::Use(p) if p.projections.is_empty() => Some(p.local),
        _ => None,
    }
}

pub(super) fn kind(place: &Place, rv: &Rvalue, refs: &[bool], inactive: &Inactive) -> Kind {
    let ints = &inactive.ints;
    // A named constant, or a copy of one.
    if place.projections.is_empty() && inactive.consts[place.local.index()] {
        return Kind::NoDerivative;
    }
    // A read or a sum of an integer or `bool` buffer: no derivative.
    if place.projections.is_empty()
        && let Rvalue::Use(Operand::Use(q)) = rv
        && let Some(Access::Index(base, _)) = access(q)
        && inactive.bufs[base.index()]
    {
        return Kind::NoDerivative;
    }
    if let Rvalue::Method { receiver, method, .. } = rv
        && (method == "__iter_sum" || method == "__get2")
        && receiver.projections.is_empty()
        && inactive.bufs[receiver.local.index()]
    {
        return Kind::NoDerivative;
    }
    // Operands behind references keep their rules, which add into shadows.
    // (A matrix held by value has a shadow, not rdata: its sums keep their rules too.)
    let by_value = |o: &Operand| match o {
        Operand::Use(p) => {
            p.projections.is_empty()
                && !refs[p.local.index()]
                && !inactive.matrices.get(p.local.index()).copied().unwrap_or(false)
                && !inactive.opaque.get(p.local.index()).copied().unwrap_or(false)
        }
        Operand::Const(_) => true,
        Operand::Ref(..) => false,
    };
    // A sum into a matrix is a sum of matrices (or of a matrix and a number), whatever the
    // operands look like.
    let into_matrix = inactive.matrices.get(place.local.index()).copied().unwrap_or(false);
    if place.projections.is_empty() && !ints[place.local.index()] && !into_matrix {
        match rv {
            Rvalue::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if by_value(a) && by_value(b) => {
                return Kind::Linear(vec![
                    (operand_local(a), false),
                    (operand_local(b), *op == BinOp::Sub),
                ]);
            }
            Rvalue::Unary(UnOp::Neg, a) if by_value(a) => {
                return Kind::Linear(vec![(operand_local(a), true)]);
            }
            _ => {}
        }
    }
    // A buffer's `len()` (an integer): computed on the primal, no rule, no tape.
    if place.projections.is_empty()
        && let Rvalue::Method { method, args, .. } = rv
        && ((method == "len" && args.is_empty())
            || (method == "__len2" && args.len() == 1)
            || method == "__deep_len")
    {
        return Kind::Linear(Vec::new());
    }
    if !place.projections.is_empty() {
        // A store of a plain operand.
        let value = match rv {
            Rvalue::Use(o) => operand_local(o),
            _ => None,
        };
        return match access(place) {
            Some(Access::Index(base, index)) => Kind::Rule(vec![Some(base), Some(index), value]),
            Some(Access::Deref(base)) => Kind::Rule(vec![Some(base), value]),
            // A field of a struct held by value: its gradient is taken out of the struct's.
            Some(Access::Field(base, _)) if !refs[base.index()] => {
                Kind::Rule(vec![Some(base), value])
            }
            Some(Access::FieldIndex(base, _, index)) if !refs[base.index()] => {
                Kind::Rule(vec![Some(base), Some(index), value])
            }
            // A field of a struct behind `&mut`, through the field's handle.
            Some(Access::Field(_, _)) => Kind::Rule(vec![None, value]),
            Some(Access::FieldIndex(_, _, index)) => Kind::Rule(vec![None, Some(index), value]),
            None => Kind::NoDerivative,
        };
    }
    if ints[place.local.index()] && is_arithmetic(rv) {
        // Integer arithmetic: no reverse code at all.
        return Kind::NoDerivative;
    }
    match rv {
        Rvalue::Use(Operand::Use(p)) if p.projections.is_empty() => Kind::Copy(p.local),
        Rvalue::Use(Operand::Use(p)) => match access(p) {
            Some(Access::Index(base, index)) => Kind::Rule(vec![Some(base), Some(index)]),
            Some(Access::Deref(base)) => Kind::Rule(vec![Some(base)]),
            // Behind a reference the field's gradient goes into its shadow cell.
            Some(Access::Field(base, _)) if refs[base.index()] => Kind::Rule(Vec::new()),
            Some(Access::Field(base, path)) => Kind::FieldCopy(base, path),
            Some(Access::FieldIndex(base, _, index)) if !refs[base.index()] => {
                Kind::Rule(vec![Some(base), Some(index)])
            }
            Some(Access::FieldIndex(_, _, index)) => Kind::Rule(vec![None, Some(index)]),
            None => Kind::NoDerivative,
        },
        Rvalue::Use(_) | Rvalue::Matches(..) => Kind::NoDerivative,
        Rvalue::Binary(op, a, b) if op.is_arithmetic() => {
            Kind::Rule(vec![operand_local(a), operand_local(b)])
        }
        Rvalue::Binary(..) => Kind::NoDerivative,
        Rvalue::Unary(UnOp::Neg, a) | Rvalue::Cast(a, _) => Kind::Rule(vec![operand_local(a)]),
        Rvalue::Unary(UnOp::Not, _) => Kind::NoDerivative,
        Rvalue::Call { args, .. } => Kind::Rule(args.iter().map(operand_local).collect()),
        Rvalue::VecRepeat(x, n) => Kind::Rule(vec![operand_local(x), operand_local(n)]),
        Rvalue::Tuple(ops) => Kind::Build(
            ops.iter()
                .enumerate()
                .map(|(i, o)| (syn::Member::Unnamed(syn::Index::from(i)), operand_local(o)))
                .collect(),
        ),
        Rvalue::Struct { fields, .. } => {
            Kind::Build(fields.iter().map(|(m, o)| (m.clone(), operand_local(o))).collect())
        }
        Rvalue::VecList(ops) | Rvalue::Array(ops) => {
            Kind::RuleArray(ops.iter().map(operand_local).collect())
        }
        Rvalue::Repeat(o, _) => Kind::Rule(vec![operand_local(o), None]),
        Rvalue::Convert(_, o) => Kind::Rule(vec![operand_local(o)]),
        Rvalue::Method { receiver, args, .. } => {
            // A buffer field's gradient lives in its shadow: nothing to add to the base; a
            // receiver lent to the call gives its gradient back through the loan.
            let lent = receiver_lent(rv, &|l| !refs[l.index()]);
            let base =
                if receiver.projections.is_empty() && !lent { Some(receiver.local) } else { None };
            let mut v = vec![base];
            v.extend(args.iter().map(operand_local));
            Kind::Rule(v)
        }
    }
}

impl Reverse<'_> {
    /// The reverse of a store into a buffer built in the body: `unstore` (the gradient of the
    /// value stored) accumulated into the stored operand's adjoint, if it has one.
    fn give_stored(&self, value: &Operand, unstore: TokenStream) -> TokenStream {
        let rt = rt();
        match value {
            Operand::Use(v) if v.projections.is_empty() && self.adjoint[v.local.index()] => {
                let av = adj(v.local);
                quote!(#rt::rev::accumulate(&mut #av, #unstore);)
            }
            _ => quote!(let _ = #unstore;),
        }
    }

    /// The reverse-pass code of statement `i` of block `b`.
    pub(super) fn reverse_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let StatementKind::Assign(place, rv) = &s.kind else {
            return quote!();
        };
        let ax = adj(place.local);
        let store = !place.projections.is_empty();
        if let Some(Access::Index(base, _)) = access(place)
            && self.is_fresh(b, i)
            && let Rvalue::Use(value) = rv
        {
            // A store that kept no record: the value's gradient is what the shadow gathered
            // at the index, which goes back to zero (see `fresh`).
            let (t, sh, hp) = (tape((b.index(), i)), shadow_capture(base), primal_capture(base));
            return self.give_stored(value, quote!(#rt::rev::unstore_fresh(&#sh, &#hp, #t)));
        }
        if let Some(Access::Index(base, _)) = access(place)
            && self.stored[base.index()]
            && let Rvalue::Use(value) = rv
        {
            // A store into a buffer built in the body, undone from its record (see
            // `rev::unstore_at`).
            let (t, sh, hp) = (tape((b.index(), i)), shadow_capture(base), primal_capture(base));
            if self.zero_shadow[base.index()] {
                // The record holds no shadow (see `rev::store_zero_at`).
                let unstore = quote!(#rt::rev::unstore_zero_at(&#sh, &#hp, #t));
                return self.give_stored(value, unstore);
            }
            return self.give_stored(value, quote!(#rt::rev::unstore_at(&#sh, &#hp, #t)));
        }
        if let (true, Rvalue::Use(Operand::Use(p))) = (place.projections.is_empty(), rv)
            && let Some(Access::Index(base, _)) = access(p)
            && self.index_only[base.index()]
            && !self.inactive.bufs[base.index()]
        {
            // A load of a stable argument: the index from the tape, the adjoint into the
            // shadow captured at entry.
            let t = tape((b.index(), i));
            if let Some(&k) = self.windows.at.get(&(b.index(), i)) {
                // Into the sink's window in this loop (see `windows`).
                let (w, slot) = (windows::window_name(k), self.window_slot(k));
                let add =
                    quote!(#rt::rev::window_add(&mut #w, #slot, #t, #rt::rev::take(&mut #ax)););
                return self.guard_arg_add(base, &ax, add);
            }
            if self.sinks[base.index()] {
                // Into the argument's sink (see `sinks`).
                let acc = accumulator(base);
                let add = quote!(#rt::rev::acc_add(&mut *#acc, #t, #rt::rev::take(&mut #ax)););
                return self.guard_arg_add(base, &ax, add);
            }
            let sh = shadow_capture(base);
            let add = quote!(#rt::rev::shadow_add(&#sh, #t, #rt::rev::take(&mut #ax)););
            return self.guard_arg_add(base, &ax, add);
        }
        match kind(place, rv, &self.refs, &self.inactive) {
            Kind::Build(parts) => {
                let accs = parts.iter().map(|(m, l)| match l {
                    Some(l) if self.adjoint[l.index()] => {
                        let al = adj(*l);
                        quote!(#rt::rev::accumulate(&mut #al, __r.#m);)
                    }
                    _ => quote!(let _ = __r.#m;),
                });
                quote!({ let __r = #rt::rev::take(&mut #ax); #(#accs)* })
            }
            Kind::FieldCopy(base, path) => {
                let f = field_path(&path);
                let ab = adj(base);
                quote!({ let __r = #rt::rev::take(&mut #ax); #rt::rev::accumulate(&mut #ab #f, __r); })
            }
            Kind::Linear(parts) if parts.is_empty() => {
                if self.adjoint[place.local.index()] {
                    quote!(let _ = #rt::rev::take(&mut #ax);)
                } else {
                    quote!()
                }
            }
            Kind::Linear(parts) => {
                let adds = parts.iter().filter_map(|(l, negated)| {
                    let l = l.filter(|l| self.adjoint[l.index()])?;
                    let al = adj(l);
                    Some(if *negated {
                        quote!({
                            let mut __n = ::core::clone::Clone::clone(&__r);
                            #rt::TangentSpace::scale(&mut __n, -1.0);
                            #rt::rev::accumulate(&mut #al, __n);
                        })
                    } else {
                        quote!(#rt::rev::accumulate(&mut #al, ::core::clone::Clone::clone(&__r));)
                    })
                });
                quote!({ let __r = #rt::rev::take(&mut #ax); #(#adds)* })
            }
            Kind::Copy(y) if place.local == Local::RETURN => {
                // The result's cotangent, mapped back to the local returned (into its shadow,
                // for an array built in the body and held through a handle).
                let ay = adj(y);
                let ret = &self.ret_ty;
                let (link, ty) = (return_link((b.index(), i)), return_type((b.index(), i)));
                quote!({
                    let __r = #rt::rev::take(&mut #ax);
                    let __link = match #link.take() { ::core::option::Option::Some(l) => l, ::core::option::Option::None => ::core::unreachable!() };
                    #rt::rev::accumulate(&mut #ay, #rt::rev::return_adjoint::<#ret, _>(#ty, __link, __r));
                })
            }
            Kind::Copy(_) if !self.adjoint[place.local.index()] => quote!(),
            Kind::Copy(y) if !self.adjoint[y.index()] => quote!(let _ = #rt::rev::take(&mut #ax);),
            Kind::Copy(y) => {
                let ay = adj(y);
                quote!({ let __r = #rt::rev::take(&mut #ax); #rt::rev::accumulate(&mut #ay, __r); })
            }
            Kind::NoDerivative => {
                if self.adjoint[place.local.index()] {
                    quote!(let _ = #rt::rev::take(&mut #ax);)
                } else {
                    quote!()
                }
            }
            Kind::Rule(ops) | Kind::RuleArray(ops) => {
                let array =
                    matches!(kind(place, rv, &self.refs, &self.inactive), Kind::RuleArray(_));
                let pop = tape((b.index(), i));
                // A store has no output value: its pullback takes `NoRData` (and, for a field of
                // a struct held by value, the struct's gradient, which it gives back without
                // the field's).
                let seed = match access(place) {
                    Some(Access::Field(base, _) | Access::FieldIndex(base, _, _))
                        if store && !self.refs[base.index()] =>
                    {
                        let ab = adj(base);
                        quote!(#rt::NoRData, #rt::rev::take(&mut #ab))
                    }
                    _ if store => quote!(#rt::NoRData),
                    _ => quote!(#rt::rev::take(&mut #ax)),
                };
                let accs = ops.iter().enumerate().map(|(k, o)| {
                    let idx = syn::Index::from(k);
                    let part = if array { quote!(__r.0[#k]) } else { quote!(__r.#idx) };
                    match o {
                        Some(l) if self.adjoint[l.index()] => {
                            let al = adj(*l);
                            quote!(#rt::rev::accumulate(&mut #al, #part);)
                        }
                        _ => quote!(let _ = #part;),
                    }
                });
                // A method of a user type: its pullback also takes the receiver's cotangent
                // after the call (which a `&mut self` method transforms) and returns the one
                // before it, so the receiver's adjoint is taken, not just added to.
                let seed = match rv {
                    Rvalue::Method { .. } if receiver_lent(rv, &|l| self.value_local(l)) => {
                        // Behind the loan's `&`: no cotangent of its own.
                        quote!(#seed, #rt::NoRData)
                    }
                    Rvalue::Method { receiver, method, .. }
                        if !reverse_method(&method.to_string())
                            && receiver.projections.is_empty() =>
                    {
                        if self.adjoint[receiver.local.index()] {
                            let ar = adj(receiver.local);
                            quote!(#seed, #rt::rev::take(&mut #ar))
                        } else {
                            // A receiver no derivative reaches (an integer): a zero cotangent.
                            quote!(#seed, #rt::rev::zero())
                        }
                    }
                    _ => seed,
                };
                let loaned = loaned_locals(rv, &|l| self.value_local(l));
                let (take_entry, seeds, backs) = if loaned.is_empty() {
                    (quote!(let __pb = #pop;), quote!(), quote!())
                } else {
                    // A value lent mutably: its adjoint after the call seeds the loan's shadow,
                    // which the callee's pullback turns into its adjoint before the call.
                    let seeds =
                        loaned.iter().enumerate().filter(|(_, (_, m))| *m).map(|(k, (l, _))| {
                            let al = adj(*l);
                            let idx = syn::Index::from(k);
                            quote!(#rt::rev::seed_back(&__bk.#idx, #rt::rev::take(&mut #al));)
                        });
                    let gives = loaned.iter().enumerate().map(|(k, (l, _))| {
                        let al = adj(*l);
                        let idx = syn::Index::from(k);
                        quote!(#rt::rev::accumulate(&mut #al, #rt::rev::give_back(__bk.#idx));)
                    });
                    (quote!(let (__pb, __bk) = #pop;), quote!(#(#seeds)*), quote!(#(#gives)*))
                };
                quote!({
                    #take_entry
                    #seeds
                    let __r = __pb(#seed);
                    #(#accs)*
                    #backs
                })
            }
        }
    }
}

impl Reverse<'_> {
    /// The reverse sweep of block `b`: its steps of recorded integers undone, its tape entry
    /// taken (or, for a block run again, its integers and values restored and its statements
    /// run again), then each statement's adjoint code, last statement first.
    pub(super) fn reverse_block(&self, b: BlockId) -> TokenStream {
        let (rt, body) = (rt(), self.body);
        let block = &body.blocks[b.index()];
        let rev =
            block.statements.iter().enumerate().rev().map(|(i, s)| self.reverse_statement(b, i, s));
        // The steps the block made of recorded integers, undone (see `counters`).
        let steps = &self.counters.undo[b.index()];
        let undo = steps.iter().map(|st| {
            let (x, by) = (self.names.local(st.local), &st.by);
            let value = if st.adds { quote!(#x.primal - (#by)) } else { quote!(#x.primal + (#by)) };
            quote!(#x = #rt::CoDual::new(#value, #rt::NoFData);)
        });
        let undo = quote!(#(#undo)*);
        if let Some(plan) = &self.replays[b.index()] {
            // The block again: its integers from the tape, its values from their slots, its
            // statements (which make their pullbacks anew), then their reverse.
            let restore = if !plan.tapes() {
                quote!()
            } else {
                let t = block_tape(b);
                let tmps: Vec<syn::Ident> = (0..plan.ints.len())
                    .map(|k| format_ident!("__in{}", k, span = Span::mixed_site()))
                    .collect();
                let vtmps: Vec<syn::Ident> = (0..plan.values.len())
                    .map(|k| format_ident!("__iv{}", k, span = Span::mixed_site()))
                    .collect();
                let ints = plan.ints.iter().map(|l| self.names.local(*l));
                let values = plan.values.iter().map(|l| self.names.local(*l));
                // With the records of its stores, named as a taped block's entries.
                let records = plan.stores.iter().map(|i| tape((b.index(), *i)));
                quote!(
                    let (#(#tmps,)* #(#vtmps,)* #(#records,)*) = match #t.pop() {
                        ::core::option::Option::Some(e) => e,
                        ::core::option::Option::None => ::core::unreachable!(),
                    };
                    #(#ints = #rt::CoDual::new(#tmps, #rt::NoFData);)*
                    #(#values = #vtmps;)*
                )
            };
            let snaps = plan.snapshots.iter().map(|l| {
                let (x, slot) = (self.names.local(*l), snapshot_slot(*l));
                quote!(#x = match &#slot {
                    ::core::option::Option::Some(v) => #rt::rev::pass(v),
                    ::core::option::Option::None => ::core::unreachable!(),
                };)
            });
            // The statements run again read the copies' windows (see `windows`).
            self.rerun.set(true);
            let again: Vec<TokenStream> = (0..block.statements.len())
                .filter_map(|i| {
                    if plan.statements.contains(&i) {
                        return Some(self.forward_statement(b, i, &block.statements[i]));
                    }
                    if !plan.indices.contains(&i) {
                        return None;
                    }
                    // A load whose value is not needed, or a store that keeps no record: its
                    // index.
                    let StatementKind::Assign(p, Rvalue::Use(value)) = &block.statements[i].kind
                    else {
                        return None;
                    };
                    let q = match value {
                        _ if self.is_fresh(b, i) => p,
                        Operand::Use(q) => q,
                        _ => return None,
                    };
                    let Some(Access::Index(_, index)) = access(q) else { return None };
                    let (t, i_) = (tape((b.index(), i)), self.names.local(index));
                    Some(quote!(let #t: usize = #i_.primal;))
                })
                .collect();
            self.rerun.set(false);
            // The integers it steps again are put back to their values at its start.
            let mut stepped: Vec<Local> = steps.iter().map(|st| st.local).collect();
            stepped.sort();
            stepped.dedup();
            let save = stepped.iter().map(|l| {
                let (x, v) = (self.names.local(*l), start_value(*l));
                quote!(let #v = #x.primal;)
            });
            let reset = stepped.iter().map(|l| {
                let (x, v) = (self.names.local(*l), start_value(*l));
                quote!(#x = #rt::CoDual::new(#v, #rt::NoFData);)
            });
            return quote!(#undo #restore #(#snaps)* #(#save)* #(#again)* #(#reset)* #(#rev)*);
        }
        let entries = self.entries(b);
        let take = if entries.is_empty() {
            quote!()
        } else {
            let (t, es) = (block_tape(b), entries.iter().map(|i| tape((b.index(), *i))));
            let get = if self.in_loop.contains(&b) { quote!(pop()) } else { quote!(take()) };
            quote!(let (#(#es,)*) = match #t.#get {
                ::core::option::Option::Some(e) => e,
                ::core::option::Option::None => ::core::unreachable!(),
            };)
        };
        quote!(#undo #take #(#rev)*)
    }

    /// Where the reverse sweep enters the loop with header `h`, the integers (and values) its exit
    /// recorded.
    pub(super) fn loop_entry(&self, h: BlockId) -> TokenStream {
        let rt = rt();
        let Some(record) = self.counters.records.get(&h) else { return quote!() };
        let t = loop_tape(h);
        let tmps: Vec<syn::Ident> = (0..record.len())
            .map(|k| format_ident!("__in{}", k, span = Span::mixed_site()))
            .collect();
        let restore = record.iter().zip(&tmps).map(|(l, tmp)| {
            let x = self.names.local(*l);
            if self.counters.whole.contains(l) {
                quote!(#x = #tmp;)
            } else {
                quote!(#x = #rt::CoDual::new(#tmp, #rt::NoFData);)
            }
        });
        let nested = self.counters.nested.contains(&h);
        let get = if nested { quote!(pop()) } else { quote!(take()) };
        // A nested loop's record holds its trip count last (see `Control::counted_in_record`).
        let count = if nested { quote!(__n,) } else { quote!() };
        quote!(
            let (#(#tmps,)* #count) = match #t.#get {
                ::core::option::Option::Some(e) => e,
                ::core::option::Option::None => ::core::unreachable!(),
            };
            #(#restore)*
        )
    }
}
