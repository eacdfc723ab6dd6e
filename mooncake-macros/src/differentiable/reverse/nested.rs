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

/// Whether the declared type `ty` is a buffer whose elements are not numbers, behind references
/// or not (`&[Vec<f64>]`, `Vec<Vec<f64>>`, `&[[f64; 3]]`, `&[Layer]`, `Vec<(f64, f64)>`), in a
/// function whose type parameters are `params`.
fn deep_type(ty: &syn::Type, params: &[String]) -> bool {
    // Not a number: a buffer, a tuple, or a named type that is not a primitive (a type
    // parameter is taken for a number, which the subset's type parameters are).
    let not_a_number = |t: &syn::Type| match t {
        syn::Type::Tuple(t) => !t.elems.is_empty(),
        syn::Type::Path(p) => {
            let Some(last) = p.path.segments.last() else { return false };
            let name = last.ident.to_string();
            buffer_element(t).is_some()
                || (super::super::lower::user_type_name(&name, params)
                    && !matches!(name.as_str(), "Self"))
        }
        other => buffer_element(other).is_some(),
    };
    buffer_element(ty).is_some_and(not_a_number)
}

/// Whether `p` reaches into an element of a buffer: an index followed by more projections.
fn deep_place(p: &Place) -> bool {
    p.projections
        .iter()
        .position(|pr| matches!(pr, Projection::Index(_)))
        .is_some_and(|i| i + 1 < p.projections.len())
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

/// The locals holding buffers whose elements are not numbers: declared so, or reached into
/// (`a[i][j]`, `v[k].w`) somewhere.
pub(super) fn nested_locals(body: &Body) -> Vec<bool> {
    let n = body.locals.len();
    let mut nested: Vec<bool> = (0..n)
        .map(|l| body.locals[l].ty.as_ref().is_some_and(|t| deep_type(t, &body.type_params)))
        .collect();
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            let mut mark = |q: &Place| {
                if deep_place(q) && matches!(q.projections.first(), Some(Projection::Index(_))) {
                    nested[q.local.index()] = true;
                }
            };
            mark(p);
            let mut rv2 = rv.clone();
            for_each_place(&mut rv2, &mut |q| mark(q));
        }
    }
    // A buffer whose element, taken into a local (`row = p[i]`, `row = &p[i]`, as a loop over
    // `p.iter()` lowers), is indexed in turn (`row[0]`): a buffer of buffers, whatever its
    // declaration says (the result of a call, `vec![[a, b]]`).
    let indexed = indexed_locals(body);
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q) | Operand::Ref(q, false))) =
            &s.kind
            && p.projections.is_empty()
            && indexed[p.local.index()]
            && matches!(q.projections.as_slice(), [Projection::Index(_)])
            && !body.locals[q.local.index()]
                .ty
                .as_ref()
                .and_then(buffer_element)
                .is_some_and(|e| value_type(e, &body.type_params))
        {
            nested[q.local.index()] = true;
        }
    }
    nested
}

/// Whether `q` is an element of a buffer reached through fields and indices (`net.layers[k]`,
/// `layers[k]`, `net.blocks[i].layers[j]`): its last projection an index, no dereference.
fn element_place(q: &Place) -> bool {
    matches!(q.projections.last(), Some(Projection::Index(_)))
        && q.projections.iter().all(|pr| !matches!(pr, Projection::Deref))
}

/// The locals indexed somewhere (`x[i]`, `x[i].w`: a place whose first projection is an
/// index), which hold buffers.
pub(super) fn indexed_locals(body: &Body) -> Vec<bool> {
    locals_reached(body, |pr| matches!(pr, [Projection::Index(_), ..]))
}

/// The locals a field of which is reached somewhere (`l.b`, `(*l).b`).
fn fielded_locals(body: &Body) -> Vec<bool> {
    locals_reached(body, |pr| {
        matches!(pr, [Projection::Field(_), ..] | [Projection::Deref, Projection::Field(_), ..])
    })
}

/// The locals some place of the body reaches into by projections that `reached` accepts.
fn locals_reached(body: &Body, reached: impl Fn(&[Projection]) -> bool) -> Vec<bool> {
    let mut out = vec![false; body.locals.len()];
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        let mut rv2 = rv.clone();
        let mut note = |q: &Place| {
            if reached(&q.projections) {
                out[q.local.index()] = true;
            }
        };
        note(p);
        for_each_place(&mut rv2, &mut |q| note(q));
    }
    out
}

/// Whether a type is a value with a tangent of its own that a buffer may hold: a tuple, or a
/// named type that is not a buffer (a `#[derive(Tangent)]` struct; a type parameter among
/// `params` is taken for a number, which the subset's type parameters are).
fn value_type(e: &syn::Type, params: &[String]) -> bool {
    match e {
        syn::Type::Tuple(t) => !t.elems.is_empty(),
        syn::Type::Path(p) => {
            buffer_element(e).is_none()
                && p.path.segments.last().is_some_and(|s| {
                    super::super::lower::user_type_name(&s.ident.to_string(), params)
                })
        }
        _ => false,
    }
}

/// The locals holding buffers of structs or tuples: arguments declared so (`bodies: &mut
/// [Body]`, `pts: &[(f64, f64)]`); buffers an element of which has a field reached (`ps[k].x`)
/// or is given a user method (`bodies[i].advance(dt)`, directly or through a borrow), or into
/// which a struct or a tuple built in the body is pushed (`ps.push(P { .. })`); and copies of
/// those (`let mut bodies = init.to_vec();`, `.clone()`, moves).
pub(super) fn value_buffer_locals(body: &Body) -> Vec<bool> {
    let n = body.locals.len();
    let mut values: Vec<bool> = (0..n)
        .map(|l| {
            let element = body.locals[l].ty.as_ref().and_then(buffer_element);
            element.is_some_and(|e| value_type(e, &body.type_params))
        })
        .collect();
    let statements = || body.blocks.iter().flat_map(|b| &b.statements);
    let mut built = vec![false; n];
    let mut borrowed_from: Vec<Option<Local>> = vec![None; n];
    for s in statements() {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if !p.projections.is_empty() {
            continue;
        }
        match rv {
            Rvalue::Struct { .. } => built[p.local.index()] = true,
            Rvalue::Tuple(ops) if !ops.is_empty() => built[p.local.index()] = true,
            Rvalue::Use(Operand::Ref(q, _) | Operand::Use(q)) if one_index(q).is_some() => {
                borrowed_from[p.local.index()] = Some(q.local)
            }
            _ => {}
        }
    }
    for s in statements() {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        let mut rv2 = rv.clone();
        let mut note = |q: &Place| {
            if matches!(q.projections.as_slice(), [Projection::Index(_), Projection::Field(_), ..])
            {
                values[q.local.index()] = true;
            }
            // A field of an element taken into a local (`p.x` after `p = &ps[i]` or
            // `p = ps[i]`, as `for p in ps.iter()` lowers): a buffer of structs, whatever its
            // declaration says (a call's `Vec<P>`).
            if matches!(
                q.projections.as_slice(),
                [Projection::Field(_), ..] | [Projection::Deref, Projection::Field(_), ..]
            ) && let Some(base) = borrowed_from[q.local.index()]
            {
                values[base.index()] = true;
            }
        };
        note(p);
        for_each_place(&mut rv2, &mut |q| note(q));
        if let Rvalue::Method { receiver, method, args } = rv {
            let name = method.to_string();
            if !reverse_method(&name) {
                if one_index(receiver).is_some() {
                    values[receiver.local.index()] = true;
                } else if receiver.projections.is_empty()
                    && let Some(base) = borrowed_from[receiver.local.index()]
                {
                    values[base.index()] = true;
                }
            }
            // After normalising: an element put back (a user method ran on a copy of it), or a
            // field inside an element read or written by a rule (`ps[k].x`: `__deep(ps, k, .x)`).
            let field_after_index = match name.as_str() {
                "__deep_put" => true,
                "__deep" | "__deep_len" | "__deep_to_vec" => {
                    matches!(args.get(1), Some(Operand::Const(_)))
                }
                "__deep_set" => matches!(args.get(2), Some(Operand::Const(_))),
                _ => false,
            };
            if field_after_index && receiver.projections.is_empty() {
                values[receiver.local.index()] = true;
            }
            if name == "push"
                && receiver.projections.is_empty()
                && matches!(args.as_slice(), [Operand::Use(v)]
                    if v.projections.is_empty() && built[v.local.index()])
            {
                values[receiver.local.index()] = true;
            }
        }
    }
    propagate_copies(body, &mut values);
    values
}

/// Marks every copy of a marked local, and the source of every marked copy (moves, `to_vec`,
/// `clone`, the conversions normalising writes), until nothing changes: a copy holds what its
/// source holds.
fn propagate_copies(body: &Body, marked: &mut [bool]) {
    let statements = || body.blocks.iter().flat_map(|b| &b.statements);
    loop {
        let mut changed = false;
        for s in statements() {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            let source = match rv {
                Rvalue::Use(Operand::Use(q)) | Rvalue::Convert(_, Operand::Use(q)) => Some(q),
                Rvalue::Method { receiver, method, args }
                    if args.is_empty() && (method == "to_vec" || method == "clone") =>
                {
                    Some(receiver)
                }
                _ => None,
            };
            if p.projections.is_empty()
                && let Some(q) = source
                && q.projections.is_empty()
                && marked[q.local.index()] != marked[p.local.index()]
            {
                marked[p.local.index()] = true;
                marked[q.local.index()] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// The locals holding buffers of buffers in a normalised body: declared so or reached into
/// ([`nested_locals`]), the receivers of the rules of rows (`__get2`, `__len2`, `__row_to_vec`,
/// `__set2`) and the results of `__repeat_rows`, and copies of those.
pub(super) fn nested_buffer_locals(body: &Body) -> Vec<bool> {
    let mut nested = nested_locals(body);
    // A buffer pushed a buffer the function builds (`m.push(row)` after `row = Vec::new()`, a
    // `collect`, `vec![..]`, `[a, b]`): a buffer of rows, whatever its declaration says.
    let mut built = super::normalise::built_locals(body);
    propagate_copies(body, &mut built);
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        if let StatementKind::Assign(_, Rvalue::Method { receiver, method, args }) = &s.kind
            && method == "push"
            && receiver.projections.is_empty()
            && let [Operand::Use(a)] = args.as_slice()
            && a.projections.is_empty()
            && built[a.local.index()]
        {
            nested[receiver.local.index()] = true;
        }
    }
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, Rvalue::Method { receiver, method, .. }) = &s.kind else {
            continue;
        };
        let name = method.to_string();
        if matches!(name.as_str(), "__get2" | "__len2" | "__row_to_vec" | "__set2")
            && receiver.projections.is_empty()
        {
            nested[receiver.local.index()] = true;
        }
        if name == "__repeat_rows" && p.projections.is_empty() {
            nested[p.local.index()] = true;
        }
    }
    propagate_copies(body, &mut nested);
    nested
}

/// Whether a user method's receiver `q` (an element place) is an element of a buffer of
/// structs or tuples the function may write (`values`: [`value_buffer_locals`]): a `&mut`
/// argument (`bodies[i]` of `bodies: &mut [Body]`, or `sys.bodies[i]` of `sys: &mut System`,
/// whose field a method of an element shows to hold values), a `Vec` held by value, or a buffer
/// the function builds (`let mut bodies = init.to_vec();`). The method may write the element:
/// it runs on a copy put back after it, unless the method's result is stored into the
/// element's path (`i = bodies[i].next()`).
pub(super) fn written_element(
    locals: &[LocalDecl],
    n_args: usize,
    values: &[bool],
    q: &Place,
    dest: &Place,
) -> bool {
    let l = q.local;
    let through_field = matches!(q.projections.first(), Some(Projection::Field(_)));
    let arg = l.index() >= 1 && l.index() <= n_args;
    // A `&mut` argument, or a `Vec` held by value.
    let mut_arg = arg
        && match &locals[l.index()].ty {
            Some(syn::Type::Reference(r)) => r.mutability.is_some(),
            Some(t @ syn::Type::Path(_)) => buffer_element(t).is_some(),
            _ => false,
        };
    let holds = if arg {
        mut_arg && (through_field || values[l.index()])
    } else {
        l != Local::RETURN && !through_field && values[l.index()]
    };
    let index_written =
        q.projections.iter().any(|pr| matches!(pr, Projection::Index(i) if *i == dest.local))
            || dest.local == l;
    holds && !index_written
}

/// Whether `l` is an argument declared behind a shared reference (`bodies: &[Body]`, `net: &Net`):
/// nothing in it can be written while the rule runs.
pub(super) fn shared_arg(locals: &[LocalDecl], n_args: usize, l: Local) -> bool {
    l.index() >= 1
        && l.index() <= n_args
        && matches!(&locals[l.index()].ty, Some(syn::Type::Reference(r)) if r.mutability.is_none())
}

/// Step 0 of the module: a local bound to a shared borrow of an element that a user method or
/// function is given (`for l in net.layers.iter() { h = l.forward(&h); }`,
/// `let b = &bodies[i]; e += b.energy();`) holds a copy of the element instead
/// (`__deep_clone`, whose pullback adds the copy's gradient into the element's shadow). The
/// borrow is shared, so the methods called on it read it (`&self`, or `self` of a `Copy`
/// type): nothing written into the copy is lost. Its uses become uses of the copy: a receiver
/// as it is, an argument passed on by value (`f(l)`) lent as `&copy`, field reads (`l.w[j]`,
/// `(*l).b`) without the dereference. A local used any other way (copied, borrowed, compared,
/// named in an assertion) keeps the borrow, and with it what the rest of normalising does.
pub(super) fn clone_lent_elements(body: &mut Body) {
    // A user method called on an element behind a shared-reference argument
    // (`bodies[i].dist2(..)` of `bodies: &[Body]`) reads it: on a copy. On an element of a
    // buffer behind `&mut` (`bodies[i].advance(dt)` of `bodies: &mut [Body]`) it may write it:
    // on a copy, put back after the call (`__deep_put`).
    let n_args = body.n_args;
    let values = value_buffer_locals(body);
    for b in &mut body.blocks {
        let mut out = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            let mut put = None;
            if let StatementKind::Assign(dest, Rvalue::Method { receiver, method, .. }) =
                &mut s.kind
                && !reverse_method(&method.to_string())
                && element_place(receiver)
                && let shared = shared_arg(&body.locals, n_args, receiver.local)
                && (shared || written_element(&body.locals, n_args, &values, receiver, dest))
                && let Some((r, args)) = deep_parts(receiver)
            {
                body.locals.push(LocalDecl { name: None, ty: None, span: s.span });
                let t = Local((body.locals.len() - 1) as u32);
                let clone = Rvalue::Method {
                    receiver: r.clone(),
                    method: syn::Ident::new("__deep_clone", s.span),
                    args: args.clone(),
                };
                out.push(Statement {
                    kind: StatementKind::Assign(Place::local(t), clone),
                    span: s.span,
                });
                *receiver = Place::local(t);
                if !shared {
                    body.locals.push(LocalDecl { name: None, ty: None, span: s.span });
                    let u = Local((body.locals.len() - 1) as u32);
                    let mut put_args = vec![Operand::Use(Place::local(t))];
                    put_args.extend(args);
                    let rv = Rvalue::Method {
                        receiver: r,
                        method: syn::Ident::new("__deep_put", s.span),
                        args: put_args,
                    };
                    put = Some(Statement {
                        kind: StatementKind::Assign(Place::local(u), rv),
                        span: s.span,
                    });
                }
            }
            out.push(s);
            out.extend(put);
        }
        b.statements = out;
    }
    let cand = lent_element_locals(body);
    if !cand.iter().any(|c| *c) {
        return;
    }
    let strip = |q: &Place| {
        let mut q = q.clone();
        while matches!(q.projections.first(), Some(Projection::Deref)) {
            q.projections.remove(0);
        }
        q
    };
    for b in &mut body.blocks {
        for s in &mut b.statements {
            let StatementKind::Assign(p, rv) = &mut s.kind else { continue };
            if cand[p.local.index()]
                && let Rvalue::Use(Operand::Ref(q, false)) = rv
                && let Some((receiver, args)) = deep_parts(q)
            {
                *rv = Rvalue::Method {
                    receiver,
                    method: syn::Ident::new("__deep_clone", s.span),
                    args,
                };
                continue;
            }
            if let Rvalue::Method { receiver, .. } = rv
                && cand[receiver.local.index()]
            {
                *receiver = strip(receiver);
            }
            for_each_operand(rv, &mut |o| match o {
                Operand::Use(q) if q.projections.is_empty() && cand[q.local.index()] => {
                    *o = Operand::Ref(q.clone(), false);
                }
                Operand::Use(q) if cand[q.local.index()] => *q = strip(q),
                _ => {}
            });
        }
    }
}

/// The locals [`clone_lent_elements`] turns into copies: each bound only to a shared borrow of
/// an element, used as a user method's receiver or a user call's argument (at least once) and
/// otherwise only read through fields. Reverse mode's check for methods of elements reads it too.
pub(super) fn lent_element_locals(body: &Body) -> Vec<bool> {
    let n = body.locals.len();
    let mut cand = vec![false; n];
    let mut other = vec![false; n];
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        let l = p.local.index();
        match rv {
            Rvalue::Use(Operand::Ref(q, false))
                if p.projections.is_empty() && element_place(q) && q.local != p.local =>
            {
                cand[l] = true
            }
            _ => other[l] = true,
        }
    }
    for (l, c) in cand.iter_mut().enumerate() {
        *c = *c && !other[l] && l > body.n_args;
    }
    if !cand.iter().any(|c| *c) {
        return cand;
    }
    // The uses: a user method's receiver, an argument of a user function or method, a field
    // read; and at least one of the first two (elements of numbers keep their own path).
    let mut lent = vec![false; n];
    let strip = |q: &Place| {
        let mut q = q.clone();
        while matches!(q.projections.first(), Some(Projection::Deref)) {
            q.projections.remove(0);
        }
        q
    };
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if !p.projections.is_empty() && cand[p.local.index()] {
            cand[p.local.index()] = false;
        }
        if matches!(rv, Rvalue::Use(Operand::Ref(..))) && cand[p.local.index()] {
            continue;
        }
        let user = match rv {
            Rvalue::Call { func, .. } => {
                func.segments.first().is_none_or(|s| s.ident != "Vec" && s.ident != "std")
            }
            Rvalue::Method { method, .. } => !reverse_method(&method.to_string()),
            _ => false,
        };
        if let Rvalue::Method { receiver, .. } | Rvalue::Matches(receiver, _) = rv {
            let r = strip(receiver);
            if cand[r.local.index()] {
                if r.projections.is_empty() && user {
                    lent[r.local.index()] = true;
                } else if !matches!(r.projections.first(), Some(Projection::Field(_))) {
                    cand[r.local.index()] = false;
                }
            }
        }
        let mut rv2 = rv.clone();
        for_each_operand(&mut rv2, &mut |o| match o {
            Operand::Use(q) if q.projections.is_empty() && cand[q.local.index()] => {
                if user {
                    lent[q.local.index()] = true;
                } else {
                    cand[q.local.index()] = false;
                }
            }
            Operand::Use(q)
                if cand[q.local.index()]
                    && !matches!(strip(q).projections.first(), Some(Projection::Field(_))) =>
            {
                cand[q.local.index()] = false;
            }
            Operand::Ref(q, _) if cand[q.local.index()] => cand[q.local.index()] = false,
            _ => {}
        });
    }
    for (c, l) in cand.iter_mut().zip(&lent) {
        *c &= *l;
    }
    drop_named_candidates(body, &mut cand);
    cand
}

/// Step 1 of the module: rows borrowed into locals replaced by the rows.
pub(super) fn substitute_rows(body: &mut Body) {
    let n = body.locals.len();
    // Buffers of buffers and their copies (`let u = u0.to_vec(); for row in u.iter()`), and
    // buffers of structs or tuples (`let bs = bs0.to_vec(); for b in &bs`).
    let mut nested = nested_locals(body);
    propagate_copies(body, &mut nested);
    let values = value_buffer_locals(body);
    let nested: Vec<bool> = nested.into_iter().zip(values).map(|(a, b)| a || b).collect();
    // The buffer a row is borrowed from: a nested local (`&data[i]`), or a buffer in a field
    // (`&self.w[i]`), whose rows the borrow's own indexing shows to be buffers (`row[j]`).
    let row_base = |q: &Place| -> Option<Place> {
        let (last, prefix) = q.projections.split_last()?;
        if !matches!(last, Projection::Index(_))
            || !prefix.iter().all(|pr| matches!(pr, Projection::Field(_)))
            || (prefix.is_empty() && !nested[q.local.index()])
        {
            return None;
        }
        Some(Place { local: q.local, projections: prefix.to_vec() })
    };
    // Buffers nothing writes (no store into them, no `&mut` borrow, no method but reads): a
    // copy of a row of one (`let p = ps[k];` of `ps: &[[f64; 2]]`) holds what the row holds for
    // as long as the copy is not written.
    let unwritten = unwritten_locals(body);
    // Candidates: locals assigned only `&base[i]` of one such `base`, or only copies `base[i]`
    // of rows of an unwritten `base` (`copied`).
    let mut base: Vec<Option<Place>> = vec![None; n];
    let mut cand = vec![true; n];
    let mut copied = vec![false; n];
    let mut copies: Vec<(Local, Local)> = Vec::new();
    let indexed = indexed_locals(body);
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !p.projections.is_empty() {
                continue;
            }
            let l = p.local.index();
            match rv {
                Rvalue::Use(Operand::Ref(q, false))
                    if q.local != p.local
                        && let Some(rb) = row_base(q) =>
                {
                    match &base[l] {
                        None => base[l] = Some(rb),
                        Some(prev) if super::normalise::same_place(prev, &rb) => {}
                        _ => cand[l] = false,
                    }
                }
                // A copy of another row (`let row = item;`, as a chain's closure binds it).
                Rvalue::Use(Operand::Use(q)) if q.projections.is_empty() && q.local != p.local => {
                    copies.push((p.local, q.local));
                }
                // A copy of a row of an unwritten buffer (rows that are copied are arrays).
                Rvalue::Use(Operand::Use(q))
                    if q.local != p.local
                        && unwritten[q.local.index()]
                        && let Some(rb) = row_base(q) =>
                {
                    copied[l] = true;
                    match &base[l] {
                        None => base[l] = Some(rb),
                        Some(prev) if super::normalise::same_place(prev, &rb) => {}
                        _ => cand[l] = false,
                    }
                }
                _ => cand[l] = false,
            }
        }
    }
    // A copy takes its source's base; the largest consistent set (a copy of a non-candidate, or
    // of rows of two buffers, is none).
    loop {
        let mut changed = false;
        for &(d, src) in &copies {
            let (d, src) = (d.index(), src.index());
            if !cand[d] {
                continue;
            }
            let ok = cand[src] && base[src].is_some();
            match (ok, base[d].clone(), base[src].clone()) {
                (true, None, Some(b)) => {
                    base[d] = Some(b);
                    changed = true;
                }
                (true, Some(x), Some(y)) if super::normalise::same_place(&x, &y) => {}
                _ if base[src].is_none() && cand[src] => {}
                _ => {
                    cand[d] = false;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Locals with a field reached (`l.b`, `(*l).b`): elements of a buffer of structs.
    let fielded = fielded_locals(body);
    for (l, c) in cand.iter_mut().enumerate() {
        // A row of a buffer in a field must be indexed somewhere, or have a field reached (an
        // element of a buffer of structs in a field, `for l in net.layers.iter() { l.b }`), or
        // be a copy of one.
        let shown =
            base[l].as_ref().is_some_and(|b| b.projections.is_empty() || indexed[l] || fielded[l]);
        *c = *c && shown && l > body.n_args;
    }
    for &(d, src) in &copies {
        if cand[d.index()] && !cand[src.index()] {
            cand[d.index()] = false;
        }
    }
    if !cand.iter().any(|c| *c) {
        return;
    }
    // Uses: indexed (`row[j]`, `(*row)[j]`), a method's receiver, or passed on by value to a
    // call (`dot(row, w)`); nothing in an assertion's text.
    for b in &body.blocks {
        for s in &b.statements {
            match &s.kind {
                StatementKind::Assign(p, rv) => {
                    let l = p.local.index();
                    // The borrow or copy that defines the row.
                    let copy_of_row = copied[l]
                        && matches!(rv, Rvalue::Use(Operand::Use(q))
                            if matches!(q.projections.last(), Some(Projection::Index(_))));
                    if p.projections.is_empty()
                        && cand[l]
                        && (matches!(rv, Rvalue::Use(Operand::Ref(..))) || copy_of_row)
                    {
                        continue;
                    }
                    // A copy between rows.
                    if p.projections.is_empty()
                        && cand[l]
                        && matches!(rv, Rvalue::Use(Operand::Use(q)) if q.projections.is_empty() && cand[q.local.index()])
                    {
                        continue;
                    }
                    if cand[l] && !matches!(p.projections.first(), Some(Projection::Index(_))) {
                        // A write of the row itself (`row = ..` elsewhere, `*row = ..`).
                        cand[l] = false;
                    }
                    if p.projections.is_empty() && cand[l] && copied[l] {
                        // A copied row written whole.
                        cand[l] = false;
                    }
                    if copied[p.local.index()] {
                        // A write into a copied row (`p[0] = ..`): the copy differs from the row.
                        cand[p.local.index()] = false;
                    }
                    let call = matches!(rv, Rvalue::Call { .. })
                        || matches!(rv, Rvalue::Method { method, .. } if !reverse_method(&method.to_string()));
                    let mut rv2 = rv.clone();
                    if let Rvalue::Method { receiver, .. } = &mut rv2 {
                        // A receiver may be the row itself (`row.len()`).
                        *receiver = Place::local(Local(0));
                    }
                    for_each_operand(&mut rv2, &mut |o| match o {
                        // A copied row passed on by value stays a value (lent, it would be a
                        // reference to the row).
                        Operand::Use(q)
                            if q.projections.is_empty() && (!call || copied[q.local.index()]) =>
                        {
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
                StatementKind::Check(_) => {}
            }
        }
    }
    drop_named_candidates(body, &mut cand);
    if !cand.iter().any(|c| *c) {
        return;
    }
    let base = |v: Local| base[v.index()].clone().expect("a candidate has a base");
    substitute_borrows(body, &cand, &base, true);
}

/// The locals nothing writes after their one assignment: no store into them, no `&mut` borrow
/// of them, no method called on them but reads.
fn unwritten_locals(body: &Body) -> Vec<bool> {
    const READS: [&str; 5] = ["len", "iter", "__iter_sum", "to_vec", "clone"];
    let mut assigned = vec![0usize; body.locals.len()];
    let mut written = vec![false; body.locals.len()];
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if p.projections.is_empty() {
            assigned[p.local.index()] += 1;
        } else {
            written[p.local.index()] = true;
        }
        if let Rvalue::Method { receiver, method, .. } = rv
            && !READS.contains(&method.to_string().as_str())
        {
            written[receiver.local.index()] = true;
        }
        let mut rv2 = rv.clone();
        for_each_operand(&mut rv2, &mut |o| {
            if let Operand::Ref(q, true) = o {
                written[q.local.index()] = true;
            }
        });
    }
    (0..body.locals.len())
        .map(|l| {
            let arg = (1..=body.n_args).contains(&l);
            !written[l] && assigned[l] <= usize::from(!arg)
        })
        .collect()
}

/// The receiver and arguments of a deep read of `q` (`v[k].w[j]`, `net.layers[k].b`): the
/// place up to the first index (a local, or fields of it), then each further projection as an
/// argument (an index as its local, a field as a constant `.name`); `None` if a dereference
/// follows.
fn deep_parts(q: &Place) -> Option<(Place, Vec<Operand>)> {
    let first = q.projections.iter().position(|pr| matches!(pr, Projection::Index(_)))?;
    let prefix = &q.projections[..first];
    if !prefix.iter().all(|pr| matches!(pr, Projection::Field(_))) {
        return None;
    }
    let args = q.projections[first..]
        .iter()
        .map(|pr| match pr {
            Projection::Index(l) => Some(Operand::Use(Place::local(*l))),
            Projection::Field(m) => Some(Operand::Const(quote!(.#m))),
            Projection::Deref => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((Place { local: q.local, projections: prefix.to_vec() }, args))
}

/// Step 2 of the module: reads of elements and rows of buffers of buffers, and of numbers and
/// buffers inside the elements of buffers, become the rules' methods (after the loads are
/// hoisted, so that every read is a statement `t = base[i][j]`).
pub(super) fn nested_reads(body: &mut Body) {
    let nested = nested_locals(body);
    let any_deep = body.blocks.iter().flat_map(|b| &b.statements).any(|s| match &s.kind {
        StatementKind::Assign(p, rv) => {
            let mut found = deep_place(p);
            let mut rv2 = rv.clone();
            for_each_place(&mut rv2, &mut |q| found |= deep_place(q));
            // An element lent whole to a call or a method, or a user method's receiver.
            if let Rvalue::Method { receiver, method, .. } = rv {
                found |= (!reverse_method(&method.to_string()) || method == "clone")
                    && element_place(receiver);
                found |= method == "__deep_clone" || method == "__deep_put";
            }
            if matches!(rv, Rvalue::Call { .. } | Rvalue::Method { .. }) {
                for_each_operand(&mut rv2, &mut |o| {
                    found |= matches!(o, Operand::Ref(q, false) if element_place(q));
                });
            }
            found
        }
        StatementKind::Check(_) => false,
    });
    if !nested.iter().any(|b| *b) && !any_deep {
        return;
    }
    // Buffers declared with elements of a named type that is not a buffer (`&[Layer]`): an
    // element lent whole is copied as a value (`__deep_clone`), not as a row.
    let struct_rows: Vec<bool> = body
        .locals
        .iter()
        .map(|d| {
            d.ty.as_ref().and_then(buffer_element).is_some_and(|e| {
                matches!(e, syn::Type::Path(_)) && value_type(e, &body.type_params)
            })
        })
        .collect();
    // Locals that hold buffers (built, copied, declared or indexed), for `vec![row; n]`.
    let buffers: Vec<bool> = indexed_locals(body)
        .into_iter()
        .zip(super::normalise::built_locals(body))
        .map(|(a, b)| a || b)
        .collect();
    // Buffers whose elements are structs or tuples: declared so, or (for a buffer in a field of
    // an argument, `sys.bodies`) reached into through a field of an element somewhere
    // (`sys.bodies[k].pos`). The prefix of each such place up to its element's index.
    let mut value_buffers: Vec<(Local, Vec<Projection>)> = Vec::new();
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        let mut rv2 = rv.clone();
        let mut note = |q: &Place| {
            if let Some(i) = q.projections.iter().position(|pr| matches!(pr, Projection::Index(_)))
                && matches!(q.projections.get(i + 1), Some(Projection::Field(_)))
            {
                value_buffers.push((q.local, q.projections[..i].to_vec()));
            }
        };
        note(p);
        for_each_place(&mut rv2, &mut |q| note(q));
        // An element that a user method was called on (step 0) is a struct's.
        if let Rvalue::Method { receiver, method, .. } = rv
            && (method == "__deep_clone" || method == "__deep_put")
        {
            value_buffers.push((receiver.local, receiver.projections.clone()));
        }
    }
    // A local buffer reached into through a field of an element (`ps[1].m` of
    // `let ps = init.to_vec();`) holds structs too, whatever its declaration says.
    let mut struct_rows = struct_rows;
    for (l, pre) in &value_buffers {
        if pre.is_empty() {
            struct_rows[l.index()] = true;
        }
    }
    let row_of = |q: &Place| {
        one_index(q).filter(|_| nested[q.local.index()] && !struct_rows[q.local.index()])
    };
    let values = value_buffer_locals(body);
    let holds_values_at = |q: &Place| {
        let prefix = &q.projections[..q.projections.len() - 1];
        (prefix.is_empty() && (struct_rows[q.local.index()] || values[q.local.index()]))
            || value_buffers.iter().any(|(l, pre)| {
                let (a, b) = (
                    Place { local: *l, projections: pre.clone() },
                    Place { local: q.local, projections: prefix.to_vec() },
                );
                super::normalise::same_place(&a, &b)
            })
    };
    let n_args = body.n_args;
    let mut locals = std::mem::take(&mut body.locals);
    let ident = |name: &str, span: Span| syn::Ident::new(name, span);
    let method = |receiver: Place, name: &str, args: Vec<Operand>, span: Span| Rvalue::Method {
        receiver,
        method: syn::Ident::new(name, span),
        args,
    };
    // A read of the number at `q` inside a buffer, if `q` is one.
    let read = |q: &Place, span: Span| -> Option<Rvalue> {
        if let Some((i, j)) = two_indices(q) {
            return Some(method(
                Place::local(q.local),
                "__get2",
                vec![Operand::Use(Place::local(i)), Operand::Use(Place::local(j))],
                span,
            ));
        }
        if !deep_place(q) {
            return None;
        }
        let (receiver, args) = deep_parts(q)?;
        Some(method(receiver, "__deep", args, span))
    };
    for b in &mut body.blocks {
        let mut out = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            let span = s.span;
            let mut after = None;
            let fresh = |locals: &mut Vec<LocalDecl>| {
                locals.push(LocalDecl { name: None, ty: None, span });
                Local((locals.len() - 1) as u32)
            };
            // A copy of the row or buffer at `q` (`&data[i]`, `&layers[k].w`), if it is one.
            let copy = |q: &Place, out: &mut Vec<Statement>, locals: &mut Vec<LocalDecl>| {
                let rv = if let Some(k) = row_of(q) {
                    method(
                        Place::local(q.local),
                        "__row_to_vec",
                        vec![Operand::Use(Place::local(k))],
                        span,
                    )
                } else if deep_place(q) {
                    let (receiver, args) = deep_parts(q)?;
                    method(receiver, "__deep_to_vec", args, span)
                } else if element_place(q) {
                    // An element lent whole (`f(&net.layers[k])`, `g(&x[i])`): a copy.
                    let (receiver, args) = deep_parts(q)?;
                    method(receiver, "__deep_clone", args, span)
                } else {
                    return None;
                };
                let t = fresh(locals);
                out.push(Statement { kind: StatementKind::Assign(Place::local(t), rv), span });
                Some(t)
            };
            // `m[i][j] = v`: `__set2(m, i, j, v)`.
            if let StatementKind::Assign(p, Rvalue::Use(v)) = &s.kind
                && let Some((i, j)) = two_indices(p)
                && !matches!(v, Operand::Ref(..))
            {
                let t = fresh(&mut locals);
                let set = method(
                    Place::local(p.local),
                    "__set2",
                    vec![Operand::Use(Place::local(i)), Operand::Use(Place::local(j)), v.clone()],
                    span,
                );
                out.push(Statement { kind: StatementKind::Assign(Place::local(t), set), span });
                continue;
            }
            // `ps[k].x = v`, `layers[k].b[o] = v`: `__deep_set(ps, v, k, .x)`; `bodies[k] = b`
            // of a buffer of structs or tuples: `__deep_put(bodies, b, k)`.
            if let StatementKind::Assign(p, Rvalue::Use(v)) = &s.kind
                && !matches!(v, Operand::Ref(..))
                && let Some(name) = if deep_place(p) && two_indices(p).is_none() {
                    Some("__deep_set")
                } else if element_place(p) && !deep_place(p) && holds_values_at(p) {
                    Some("__deep_put")
                } else {
                    None
                }
                && let Some((receiver, path)) = deep_parts(p)
            {
                let t = fresh(&mut locals);
                let mut args = vec![v.clone()];
                args.extend(path);
                let store = method(receiver, name, args, span);
                out.push(Statement { kind: StatementKind::Assign(Place::local(t), store), span });
                continue;
            }
            // `bodies[k].clone()` of a buffer of structs or tuples: a copy of the element.
            if let StatementKind::Assign(_, rv) = &mut s.kind
                && let Rvalue::Method { receiver, method: m, args } = rv
                && m == "clone"
                && args.is_empty()
                && element_place(receiver)
                && !deep_place(receiver)
                && holds_values_at(receiver)
                && let Some((r, a)) = deep_parts(receiver)
            {
                *rv = method(r, "__deep_clone", a, span);
            }
            // `let q = ps[k];` (or `*p` of a loop's element) of a buffer of `Copy` structs or
            // tuples, where the copy was not replaced by the element (it is passed on, given a
            // method, or copied again): a copy of the element, as `clone()` is.
            if let StatementKind::Assign(p, rv) = &mut s.kind
                && p.projections.is_empty()
                && let Rvalue::Use(Operand::Use(q)) = rv
                && element_place(q)
                && !deep_place(q)
                && holds_values_at(q)
                && let Some((r, a)) = deep_parts(q)
            {
                *rv = method(r, "__deep_clone", a, span);
            }
            // `vec![row; n]` of a buffer `row`: a matrix of equal rows.
            if let StatementKind::Assign(_, rv) = &mut s.kind
                && let Rvalue::VecRepeat(Operand::Use(q), n) = rv.clone()
                && q.projections.is_empty()
                && buffers[q.local.index()]
            {
                *rv = method(q, "__repeat_rows", vec![n], span);
            }
            if let StatementKind::Assign(p, rv) = &mut s.kind
                && !deep_place(p)
            {
                match rv {
                    // `t = base[i][j]`, `t = v[k].w[j]`.
                    Rvalue::Use(Operand::Use(q)) if read(q, span).is_some() => {
                        *rv = read(q, span).expect("checked");
                    }
                    // `base[k].len()`, `v[k].w.len()`.
                    Rvalue::Method { receiver, method: m, args }
                        if m == "len" && args.is_empty() && row_of(receiver).is_some() =>
                    {
                        let k = row_of(receiver).expect("one index");
                        *rv = method(
                            Place::local(receiver.local),
                            "__len2",
                            vec![Operand::Use(Place::local(k))],
                            span,
                        );
                    }
                    Rvalue::Method { receiver, method: m, args }
                        if m == "len"
                            && args.is_empty()
                            && deep_place(receiver)
                            && deep_parts(receiver).is_some() =>
                    {
                        let (r, a) = deep_parts(receiver).expect("checked");
                        *rv = method(r, "__deep_len", a, span);
                    }
                    _ => {
                        if let Rvalue::Method { receiver, method: m, .. } = rv {
                            if BUFFER_METHODS.contains(&m.to_string().as_str()) {
                                // `base[k].to_vec()`, `v[k].w.iter().sum()`: on a copy.
                                if let Some(t) = copy(receiver, &mut out, &mut locals) {
                                    *receiver = Place::local(t);
                                }
                            } else if !reverse_method(&m.to_string())
                                && deep_place(receiver)
                                && two_indices(receiver).is_none()
                                && let Some((r, a)) = deep_parts(receiver)
                            {
                                // `cs[k].p.n()` of a user method: on a copy of the part (a
                                // struct, not a number), put back after the call unless the
                                // buffer is behind a shared reference (as step 0 does).
                                let t = fresh(&mut locals);
                                if !shared_arg(&locals, n_args, r.local) {
                                    let u = fresh(&mut locals);
                                    let mut put_args = vec![Operand::Use(Place::local(t))];
                                    put_args.extend(a.iter().cloned());
                                    let put = method(r.clone(), "__deep_put", put_args, span);
                                    after = Some(Statement {
                                        kind: StatementKind::Assign(Place::local(u), put),
                                        span,
                                    });
                                }
                                out.push(Statement {
                                    kind: StatementKind::Assign(
                                        Place::local(t),
                                        method(r, "__deep_clone", a, span),
                                    ),
                                    span,
                                });
                                *receiver = Place::local(t);
                            } else if let Some(load) = read(receiver, span) {
                                // `base[i][j].sin()`: the number loaded first.
                                let t = fresh(&mut locals);
                                out.push(Statement {
                                    kind: StatementKind::Assign(Place::local(t), load),
                                    span,
                                });
                                *receiver = Place::local(t);
                            }
                        }
                        // A row or an inner buffer lent to a call or a method: a copy.
                        if matches!(rv, Rvalue::Call { .. } | Rvalue::Method { .. }) {
                            for_each_operand(rv, &mut |o| {
                                if let Operand::Ref(q, false) = o
                                    && let Some(t) = copy(q, &mut out, &mut locals)
                                {
                                    *o = Operand::Ref(Place::local(t), false);
                                }
                            });
                        }
                    }
                }
            }
            out.push(s);
            out.extend(after);
        }
        b.statements = out;
    }
    body.locals = locals;
    let _ = ident;
}
