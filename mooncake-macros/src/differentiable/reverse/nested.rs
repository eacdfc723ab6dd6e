//! Buffers of buffers read in reverse mode (`data: &[Vec<f64>]`, `m: &Vec<Vec<f64>>`, `&[[f64;
//! 3]]`): the normalisation that turns them into what the rules take.
//!
//! 1. A local that only borrows rows of one such buffer (`for row in data.iter()`, `let r =
//!    &data[i];`) and is only indexed, measured or passed on is replaced by the row itself: each
//!    borrow becomes a copy of its index `k`, and every use of the local the place `data[k]`
//!    (the buffer cannot change while the row is borrowed).
//! 2. A read `data[i][j]` becomes `__get2(data, i, j)` (a rule whose pullback adds into the
//!    shadow's row), `data[i].len()` becomes `__len2(data, i)`, and a row lent to a call
//!    (`dot(&data[i], w)`) a copy of it (`__row_to_vec`, whose pullback adds the copy's gradient
//!    into the row's shadow).
//!
//! Writes into a buffer of buffers stay refused (`NestedIndexing`).

use super::*;

/// Whether the declared type `ty` is a buffer of buffers, behind references or not
/// (`&[Vec<f64>]`, `Vec<Vec<f64>>`, `&[[f64; 3]]`, `&mut Vec<[f64; 2]>`).
fn nested_type(ty: &syn::Type) -> bool {
    fn buffer_elem(ty: &syn::Type) -> Option<&syn::Type> {
        match ty {
            syn::Type::Reference(r) => buffer_elem(&r.elem),
            syn::Type::Paren(p) => buffer_elem(&p.elem),
            syn::Type::Slice(s) => Some(&s.elem),
            syn::Type::Array(a) => Some(&a.elem),
            syn::Type::Path(p) => {
                let last = p.path.segments.last()?;
                if last.ident != "Vec" {
                    return None;
                }
                match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }
    buffer_elem(ty).and_then(buffer_elem).is_some()
}

fn two_indices(p: &Place) -> Option<(Local, Local)> {
    match p.projections.as_slice() {
        [Projection::Index(i), Projection::Index(j)] => Some((*i, *j)),
        _ => None,
    }
}

fn one_index(p: &Place) -> Option<Local> {
    match p.projections.as_slice() {
        [Projection::Index(i)] => Some(*i),
        _ => None,
    }
}

/// The locals holding buffers of buffers: declared so, or indexed twice somewhere.
fn nested_locals(body: &Body) -> Vec<bool> {
    let n = body.locals.len();
    let mut nested: Vec<bool> =
        (0..n).map(|l| body.locals[l].ty.as_ref().is_some_and(nested_type)).collect();
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            let mut mark = |q: &Place| {
                if two_indices(q).is_some() {
                    nested[q.local.index()] = true;
                }
            };
            mark(p);
            let mut rv2 = rv.clone();
            for_each_place(&mut rv2, &mut |q| mark(q));
        }
    }
    nested
}

/// Step 1 of the module: rows borrowed into locals replaced by the rows.
pub(super) fn substitute_rows(body: &mut Body) {
    let n = body.locals.len();
    let nested = nested_locals(body);
    if !nested.iter().any(|b| *b) {
        return;
    }
    // Candidates: locals assigned only `&base[i]` of one nested `base`.
    let mut base: Vec<Option<Local>> = vec![None; n];
    let mut cand = vec![true; n];
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !p.projections.is_empty() {
                continue;
            }
            let l = p.local.index();
            match rv {
                Rvalue::Use(Operand::Ref(q, false))
                    if one_index(q).is_some() && nested[q.local.index()] && q.local != p.local =>
                {
                    match base[l] {
                        None => base[l] = Some(q.local),
                        Some(prev) if prev == q.local => {}
                        _ => cand[l] = false,
                    }
                }
                _ => cand[l] = false,
            }
        }
    }
    for (l, c) in cand.iter_mut().enumerate() {
        *c = *c && base[l].is_some() && l > body.n_args;
    }
    if !cand.iter().any(|c| *c) {
        return;
    }
    // Uses: indexed (`row[j]`, `(*row)[j]`), a method's receiver, or passed on by value to a
    // call (`dot(row, w)`); nothing in an assertion's text.
    let mentions = |tokens: &TokenStream, l: usize| {
        let name = format!("__mooncake_local_{l}");
        fn walk(t: TokenStream, name: &str) -> bool {
            t.into_iter().any(|tt| match tt {
                proc_macro2::TokenTree::Ident(i) => i == name,
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), name),
                _ => false,
            })
        }
        walk(tokens.clone(), &name)
    };
    for b in &body.blocks {
        for s in &b.statements {
            match &s.kind {
                StatementKind::Assign(p, rv) => {
                    let l = p.local.index();
                    if p.projections.is_empty()
                        && cand[l]
                        && matches!(rv, Rvalue::Use(Operand::Ref(..)))
                    {
                        continue;
                    }
                    if cand[l] && !matches!(p.projections.first(), Some(Projection::Index(_))) {
                        // A write of the row itself (`row = ..` elsewhere, `*row = ..`).
                        cand[l] = false;
                    }
                    let call = matches!(rv, Rvalue::Call { .. })
                        || matches!(rv, Rvalue::Method { method, .. } if !reverse_method(&method.to_string()));
                    let mut rv2 = rv.clone();
                    if let Rvalue::Method { receiver, .. } = &mut rv2 {
                        // A receiver may be the row itself (`row.len()`).
                        *receiver = Place::local(Local(0));
                    }
                    for_each_operand(&mut rv2, &mut |o| match o {
                        Operand::Use(q) if q.projections.is_empty() && !call => {
                            cand[q.local.index()] = false;
                        }
                        Operand::Ref(q, _) if q.projections.is_empty() => {
                            cand[q.local.index()] = false;
                        }
                        _ => {}
                    });
                    if let Rvalue::Matches(q, _) = rv
                        && q.projections.is_empty()
                    {
                        cand[q.local.index()] = false;
                    }
                }
                StatementKind::Check(tokens) => {
                    for (l, c) in cand.iter_mut().enumerate() {
                        if *c && mentions(tokens, l) {
                            *c = false;
                        }
                    }
                }
            }
        }
        if let TerminatorKind::Panic(tokens) = &b.terminator.kind {
            for (l, c) in cand.iter_mut().enumerate() {
                if *c && mentions(tokens, l) {
                    *c = false;
                }
            }
        }
    }
    if !cand.iter().any(|c| *c) {
        return;
    }
    let mut index: Vec<Option<Local>> = vec![None; n];
    for (l, c) in cand.iter().enumerate() {
        if *c {
            body.locals.push(LocalDecl {
                name: None,
                ty: Some(syn::parse_quote!(usize)),
                span: body.locals[l].span,
            });
            index[l] = Some(Local((body.locals.len() - 1) as u32));
        }
    }
    let row = |v: Local| -> Place {
        let (Some(b), Some(k)) = (base[v.index()], index[v.index()]) else {
            unreachable!("a candidate has a base and an index")
        };
        Place { local: b, projections: vec![Projection::Index(k)] }
    };
    let subst = |q: &mut Place| {
        if cand[q.local.index()] {
            let mut e = row(q.local);
            let rest = if matches!(q.projections.first(), Some(Projection::Deref)) {
                q.projections.drain(1..).collect::<Vec<_>>()
            } else {
                std::mem::take(&mut q.projections)
            };
            e.projections.extend(rest);
            *q = e;
        }
    };
    for b in &mut body.blocks {
        for s in &mut b.statements {
            let StatementKind::Assign(p, rv) = &mut s.kind else { continue };
            if p.projections.is_empty() && cand[p.local.index()] {
                // `row = &base[i]` becomes `k = i`.
                if let Rvalue::Use(Operand::Ref(q, false)) = rv
                    && let Some(i) = one_index(q)
                {
                    *p = Place::local(index[p.local.index()].expect("a candidate has an index"));
                    *rv = Rvalue::Use(Operand::Use(Place::local(i)));
                }
                continue;
            }
            subst(p);
            // A row passed on by value is lent: `&base[k]`.
            for_each_operand(rv, &mut |o| {
                if let Operand::Use(q) = o
                    && q.projections.is_empty()
                    && cand[q.local.index()]
                {
                    *o = Operand::Ref(q.clone(), false);
                }
            });
            for_each_place(rv, &mut |q| subst(q));
        }
    }
}

/// Step 2 of the module: reads of elements and rows of buffers of buffers become the rules'
/// methods (after the loads are hoisted, so that every read is a statement `t = base[i][j]`).
pub(super) fn nested_reads(body: &mut Body) {
    let nested = nested_locals(body);
    if !nested.iter().any(|b| *b) {
        return;
    }
    let row_of = |q: &Place| one_index(q).filter(|_| nested[q.local.index()]);
    let mut locals = std::mem::take(&mut body.locals);
    let ident = |name: &str, span: Span| syn::Ident::new(name, span);
    for b in &mut body.blocks {
        let mut out = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            let span = s.span;
            if let StatementKind::Assign(p, rv) = &mut s.kind
                && two_indices(p).is_none()
            {
                let get2 = |q: &Place| -> Option<Rvalue> {
                    let (i, j) = two_indices(q)?;
                    Some(Rvalue::Method {
                        receiver: Place::local(q.local),
                        method: ident("__get2", span),
                        args: vec![Operand::Use(Place::local(i)), Operand::Use(Place::local(j))],
                    })
                };
                match rv {
                    // `t = base[i][j]`.
                    Rvalue::Use(Operand::Use(q)) if two_indices(q).is_some() => {
                        *rv = get2(q).expect("two indices");
                    }
                    // `base[k].len()`.
                    Rvalue::Method { receiver, method, args }
                        if method == "len" && args.is_empty() && row_of(receiver).is_some() =>
                    {
                        let k = row_of(receiver).expect("one index");
                        *rv = Rvalue::Method {
                            receiver: Place::local(receiver.local),
                            method: ident("__len2", span),
                            args: vec![Operand::Use(Place::local(k))],
                        };
                    }
                    _ => {
                        // `base[i][j].sin()`: the element loaded first.
                        if let Rvalue::Method { receiver, .. } = rv
                            && let Some(load) = get2(receiver)
                        {
                            locals.push(LocalDecl { name: None, ty: None, span });
                            let t = Local((locals.len() - 1) as u32);
                            out.push(Statement {
                                kind: StatementKind::Assign(Place::local(t), load),
                                span,
                            });
                            *receiver = Place::local(t);
                        }
                        // A row lent to a call, or the receiver of a buffer method
                        // (`base[k].to_vec()`): a copy of the row.
                        let mut copy = |q: &Place, out: &mut Vec<Statement>| -> Option<Local> {
                            let k = row_of(q)?;
                            locals.push(LocalDecl { name: None, ty: None, span });
                            let t = Local((locals.len() - 1) as u32);
                            out.push(Statement {
                                kind: StatementKind::Assign(
                                    Place::local(t),
                                    Rvalue::Method {
                                        receiver: Place::local(q.local),
                                        method: ident("__row_to_vec", span),
                                        args: vec![Operand::Use(Place::local(k))],
                                    },
                                ),
                                span,
                            });
                            Some(t)
                        };
                        if let Rvalue::Method { receiver, method, .. } = rv
                            && BUFFER_METHODS.contains(&method.to_string().as_str())
                            && let Some(t) = copy(receiver, &mut out)
                        {
                            *receiver = Place::local(t);
                        }
                        let lends = matches!(rv, Rvalue::Call { .. })
                            || matches!(rv, Rvalue::Method { .. });
                        if lends {
                            for_each_operand(rv, &mut |o| {
                                if let Operand::Ref(q, false) = o
                                    && let Some(t) = copy(q, &mut out)
                                {
                                    *o = Operand::Ref(Place::local(t), false);
                                }
                            });
                        }
                    }
                }
            }
            out.push(s);
        }
        b.statements = out;
    }
    body.locals = locals;
}
