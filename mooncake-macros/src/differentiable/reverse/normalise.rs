//! The IR rewrites reverse mode makes before planning: `normalise` and its passes (views of the
//! buffer fields of shared-reference arguments, loads hoisted and reused, buffers held through
//! handles, calls' temporaries), and the walks over a statement's operands and places they use.

use super::*;

/// Rewrites a body for reverse mode: a borrow of a buffer element that is only read (`for v in
/// x.iter()`) becomes a load of the element, dereferences of such locals disappear, and every
/// read through a projection becomes a load statement of its own, so that each load has a rule
/// and a pullback.
pub(crate) fn normalise(body: &Body) -> Body {
    let mut out = body.clone();
    aliased_arrays(&mut out);
    copied_fields_of_mut_refs(&mut out);
    clone_struct_arguments(&mut out);
    operators_read_borrows(&mut out);
    drop_unread_borrows(&mut out);
    mut_element_borrows(&mut out);
    super::scalarise::scalarise_arrays(&mut out);
    super::nested::clone_lent_elements(&mut out);
    super::nested::substitute_rows(&mut out);
    // 1. Locals that only ever hold a shared borrow of a buffer element.
    // Also a copy of such a local (`let w = v;` of a loop's element, as an iterator chain's
    // closure binds it), which then holds the same borrow.
    let mut elem_ref = vec![false; out.locals.len()];
    let mut other = vec![false; out.locals.len()];
    let mut copies: Vec<(Local, Local)> = Vec::new();
    for b in &out.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, rv) = &s.kind
                && p.projections.is_empty()
            {
                match rv {
                    Rvalue::Use(Operand::Ref(q, false))
                        if matches!(q.projections.last(), Some(Projection::Index(_))) =>
                    {
                        elem_ref[p.local.index()] = true
                    }
                    Rvalue::Use(Operand::Use(q))
                        if q.projections.is_empty() && q.local != p.local =>
                    {
                        copies.push((p.local, q.local));
                    }
                    _ => other[p.local.index()] = true,
                }
            }
        }
    }
    // A local assigned only element borrows and copies of locals that are themselves such
    // locals (the largest such set: drop a local while one of its copies' sources is not one).
    let copied: BTreeSet<Local> = copies.iter().map(|(d, _)| *d).collect();
    for (l, e) in elem_ref.iter_mut().enumerate() {
        *e = (*e || copied.contains(&Local(l as u32))) && !other[l];
    }
    loop {
        let mut changed = false;
        for (d, src) in &copies {
            if elem_ref[d.index()] && !elem_ref[src.index()] {
                elem_ref[d.index()] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let strip = |p: &mut Place| {
        if elem_ref[p.local.index()] && matches!(p.projections.first(), Some(Projection::Deref)) {
            p.projections.remove(0);
        }
    };
    // 2. Loads instead of element borrows, and no dereferences of them.
    for b in &mut out.blocks {
        for s in &mut b.statements {
            if let StatementKind::Assign(p, rv) = &mut s.kind {
                if elem_ref[p.local.index()]
                    && let Rvalue::Use(Operand::Ref(q, false)) = rv
                {
                    *rv = Rvalue::Use(Operand::Use(q.clone()));
                }
                for_each_place(rv, &mut |q| strip(q));
            }
            if let StatementKind::Check(tokens) = &mut s.kind {
                *tokens = borrow_markers(std::mem::take(tokens), &elem_ref);
            }
        }
        if let TerminatorKind::Panic(tokens) = &mut b.terminator.kind {
            *tokens = borrow_markers(std::mem::take(tokens), &elem_ref);
        }
    }
    // 2b. A method called on a reference to a number (`n.pow(2)`, `x.sin()` of `n: &mut usize`,
    //     `x: &f64`) is called on the number, read through the reference (rustc derefs the
    //     receiver; the rules take numbers by value).
    let scalar_refs: Vec<bool> = (0..out.locals.len())
        .map(|l| {
            l >= 1
                && l <= out.n_args
                && matches!(&out.locals[l].ty, Some(syn::Type::Reference(r)) if sinks::scalar_type(&r.elem))
        })
        .collect();
    for b in &mut out.blocks {
        for s in &mut b.statements {
            if let StatementKind::Assign(_, Rvalue::Method { receiver, .. }) = &mut s.kind
                && receiver.projections.is_empty()
                && scalar_refs[receiver.local.index()]
            {
                receiver.projections.push(Projection::Deref);
            }
        }
    }
    // 3. Every projected read in an operand becomes a load into a fresh temporary, and every
    //    store stores a plain operand.
    // Where a user method's receiver may be stored back (see `hoist`): a value the function
    // holds or an argument behind `&mut`, not a shared borrow.
    let mut borrowed = vec![false; out.locals.len()];
    for s in out.blocks.iter().flat_map(|b| &b.statements) {
        if let StatementKind::Assign(p, Rvalue::Use(Operand::Ref(..))) = &s.kind {
            borrowed[p.local.index()] = true;
        }
    }
    let n_args = out.n_args;
    let stores_back: Vec<bool> = (0..out.locals.len())
        .map(|l| {
            let ty = out.locals[l].ty.as_ref();
            if l >= 1 && l <= n_args {
                !matches!(ty, Some(syn::Type::Reference(r)) if r.mutability.is_none())
            } else {
                l > n_args && !borrowed[l] && !matches!(ty, Some(syn::Type::Reference(_)))
            }
        })
        .collect();
    let mut locals = std::mem::take(&mut out.locals);
    for b in &mut out.blocks {
        let mut statements = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            if let StatementKind::Assign(p, rv) = &mut s.kind
                && !p.projections.is_empty()
                && !matches!(rv, Rvalue::Use(Operand::Use(q)) if q.projections.is_empty())
                && !matches!(rv, Rvalue::Use(Operand::Const(_)))
            {
                locals.push(LocalDecl { name: None, ty: None, span: s.span });
                let t = Local((locals.len() - 1) as u32);
                let value = std::mem::replace(rv, Rvalue::Use(Operand::Use(Place::local(t))));
                // The value's own projected reads are hoisted below, in its own statement.
                let mut inner =
                    Statement { kind: StatementKind::Assign(Place::local(t), value), span: s.span };
                let after = hoist(&mut inner, &mut locals, &mut statements, &stores_back);
                statements.push(inner);
                statements.extend(after);
            }
            let after = hoist(&mut s, &mut locals, &mut statements, &stores_back);
            statements.push(s);
            statements.extend(after);
        }
        b.statements = statements;
    }
    out.locals = locals;
    super::nested::nested_reads(&mut out);
    // The value of a typed `let` is lowered into a temporary first: it has the declared type
    // too (so that a constructor into it, `let v: Vec<usize> = Vec::new();`, knows its
    // element type).
    let mut copies = Vec::new();
    for b in &out.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                && p.projections.is_empty()
                && q.projections.is_empty()
            {
                copies.push((p.local, q.local));
            }
        }
    }
    for (p, q) in copies {
        if out.locals[q.index()].ty.is_none() && q.index() > out.n_args {
            out.locals[q.index()].ty = out.locals[p.index()].ty.clone();
        }
    }
    // Again: the copies may have given a temporary an alias (the result's, `-> Vec3`).
    aliased_arrays(&mut out);
    hold_buffers(&mut out);
    reuse_loads(&mut out);
    hoist_field_loads(&mut out);
    view_fields(&mut out);
    out
}

/// A shared borrow of a local or of a field of one as an operator's operand (`&c * 2.0`,
/// `&a + &b`, `-&c`, `&net.w * x`) is the value itself: the reverse operator rules take their operands through `rev::operand`, which
/// copies a number and clones a matrix with its shadow.
fn operators_read_borrows(body: &mut Body) {
    // A local, or a field of one (`&net.w * x`), which normalising then loads.
    let read = |o: &mut Operand| {
        if let Operand::Ref(p, false) = o
            && p.projections.iter().all(|pr| matches!(pr, Projection::Field(_)))
        {
            *o = Operand::Use(p.clone());
        }
    };
    for b in &mut body.blocks {
        for s in &mut b.statements {
            match &mut s.kind {
                StatementKind::Assign(_, Rvalue::Binary(_, x, y)) => {
                    read(x);
                    read(y);
                }
                StatementKind::Assign(_, Rvalue::Unary(_, x)) => read(x),
                _ => {}
            }
        }
    }
}

/// 0. Mutable borrows of buffer elements (`for v in x.iter_mut() { *v = f(*v) }`, `let v = &mut
///    x[i];`): a local assigned only `&mut b[i]` of one buffer place `b`, and used only through
///    `*v` (or as a method's receiver, which rustc derefs), is replaced by the element itself:
///    each borrow becomes a copy of its index into a fresh local `k`, and every `*v` the place
///    `b[k]`. While the borrow lives nothing else can read or write `b` (borrowck), so the
///    element is what `*v` names; the index is copied at the borrow, as the borrow fixes it.
///
///    Borrows of elements of borrowed rows (`for row in m.iter_mut() { for v in
///    row.iter_mut() { *v *= k } }`) go from the inside out: a round replaces `v` by
///    `(*row)[j]`, the next `row` by `m[i]`.
fn mut_element_borrows(body: &mut Body) {
    for _ in 0..4 {
        if !mut_element_borrows_once(body) {
            break;
        }
    }
}

/// One round of [`mut_element_borrows`]; whether it replaced any borrow.
fn mut_element_borrows_once(body: &mut Body) -> bool {
    let (cand, base) = mut_element_locals(body);
    if !cand.iter().any(|c| *c) {
        return false;
    }
    let base = |v: Local| -> Place {
        match &base[v.index()] {
            Some(Some(b)) => b.clone(),
            _ => unreachable!("a candidate has a base"),
        }
    };
    substitute_borrows(body, &cand, &base, false);
    true
}

/// The locals [`mut_element_borrows`] replaces by the element they borrow, and the buffer place
/// each borrows. Reverse mode's check for methods of elements reads it too.
#[allow(clippy::type_complexity)]
pub(super) fn mut_element_locals(body: &Body) -> (Vec<bool>, Vec<Option<Option<Place>>>) {
    let n = body.locals.len();
    // The buffer place each candidate borrows (its projections but the last index), or None
    // once disqualified.
    let mut base: Vec<Option<Option<Place>>> = vec![None; n];
    let mut disqualified = vec![false; n];
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !p.projections.is_empty() {
                continue;
            }
            let l = p.local.index();
            match rv {
                Rvalue::Use(Operand::Ref(q, true))
                    if matches!(q.projections.last(), Some(Projection::Index(_)))
                        && q.local != p.local =>
                {
                    let mut b = q.clone();
                    b.projections.pop();
                    match &base[l] {
                        None => base[l] = Some(Some(b)),
                        Some(Some(prev)) if same_place(prev, &b) => {}
                        _ => disqualified[l] = true,
                    }
                }
                _ => disqualified[l] = true,
            }
        }
    }
    let mut cand: Vec<bool> =
        (0..n).map(|l| l > body.n_args && !disqualified[l] && base[l].is_some()).collect();
    if !cand.iter().any(|c| *c) {
        return (cand, base);
    }
    // Every use must be `*v` (first projection a dereference) or a method's receiver `v`; and
    // the base's own locals must be candidates of nothing (no borrow of a borrowed element).
    // `*v`, or a field or an element reached through the borrow (`p.x` of `p: &mut P`, which
    // rustc derefs).
    let deref_use = |p: &Place| {
        matches!(
            p.projections.first(),
            Some(Projection::Deref | Projection::Field(_) | Projection::Index(_))
        )
    };
    for b in &body.blocks {
        for s in &b.statements {
            match &s.kind {
                StatementKind::Assign(p, rv) => {
                    if !p.projections.is_empty() && cand[p.local.index()] && !deref_use(p) {
                        cand[p.local.index()] = false;
                    }
                    if p.projections.is_empty()
                        && cand[p.local.index()]
                        && let Rvalue::Use(Operand::Ref(q, true)) = rv
                    {
                        // The borrow itself: its base must not be a candidate.
                        cand[q.local.index()] = false;
                        continue;
                    }
                    let mut check = |q: &Place, receiver: bool| {
                        let l = q.local.index();
                        if cand[l] && !deref_use(q) && !(receiver && q.projections.is_empty()) {
                            // The borrow itself (`v = &mut b[i]`) is not a use.
                            cand[l] = false;
                        }
                    };
                    match rv {
                        Rvalue::Method { receiver, .. } => {
                            check(receiver, true);
                            let mut rv2 = rv.clone();
                            if let Rvalue::Method { receiver, .. } = &mut rv2 {
                                // Only the arguments are checked below.
                                *receiver = Place::local(Local(0));
                            }
                            for_each_operand(&mut rv2, &mut |o| {
                                if let Operand::Use(q) | Operand::Ref(q, _) = o {
                                    check(q, false);
                                }
                            });
                        }
                        _ => {
                            let mut rv2 = rv.clone();
                            for_each_place(&mut rv2, &mut |q| check(q, false));
                        }
                    }
                }
                StatementKind::Check(_) => {}
            }
        }
    }
    drop_named_candidates(body, &mut cand);
    (cand, base)
}

/// Drops the assignments of borrows of whole places to locals nothing reads (`let w = &net.w;`,
/// whose uses lowering resolved to the place itself: see `Lower::aliases`).
fn drop_unread_borrows(body: &mut Body) {
    let n = body.locals.len();
    let mut read = vec![false; n];
    for b in &body.blocks {
        for s in &b.statements {
            match &s.kind {
                StatementKind::Assign(p, rv) => {
                    if !p.projections.is_empty() {
                        read[p.local.index()] = true;
                    }
                    read_locals(p, rv, &mut |l| read[l.index()] = true);
                }
                StatementKind::Check(tokens) => locals_named_in(tokens, &mut read),
            }
        }
        match &b.terminator.kind {
            TerminatorKind::Branch { cond, .. } => read[cond.index()] = true,
            TerminatorKind::Panic(tokens) => locals_named_in(tokens, &mut read),
            _ => {}
        }
    }
    read[Local::RETURN.index()] = true;
    for b in &mut body.blocks {
        b.statements.retain(|s| {
            !matches!(&s.kind, StatementKind::Assign(p, Rvalue::Use(Operand::Ref(q, _)))
                if p.projections.is_empty()
                    && !read[p.local.index()]
                    && p.local.index() > body.n_args
                    && !matches!(q.projections.last(), Some(Projection::Index(_))))
        });
    }
}

/// The locals an assertion's or panic's text names (`__mooncake_local_N`), marked in `named`.
pub(super) fn locals_named_in(tokens: &TokenStream, named: &mut [bool]) {
    for tt in tokens.clone() {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                if let Some(k) = i
                    .to_string()
                    .strip_prefix("__mooncake_local_")
                    .and_then(|k| k.parse::<usize>().ok())
                    && k < named.len()
                {
                    named[k] = true;
                }
            }
            proc_macro2::TokenTree::Group(g) => locals_named_in(&g.stream(), named),
            _ => {}
        }
    }
}

/// Takes off the candidates that an assertion's or panic's text names (it reads them by name).
pub(super) fn drop_named_candidates(body: &Body, cand: &mut [bool]) {
    let mut named = vec![false; cand.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Check(tokens) = &s.kind {
                locals_named_in(tokens, &mut named);
            }
        }
        if let TerminatorKind::Panic(tokens) = &b.terminator.kind {
            locals_named_in(tokens, &mut named);
        }
    }
    for (c, n) in cand.iter_mut().zip(named) {
        *c &= !n;
    }
}

/// Replaces each candidate local `v`, assigned only borrows `&base(v)[i]` (or `&mut`), or copies
/// `base(v)[i]` of rows nothing writes, by the element it borrows or copies: each borrow becomes a copy of its index into a fresh local `k`, and every
/// place `v..` (or `*v..`) the place `base(v)[k]..`. With `lend`, a candidate passed on by value
/// (`dot(row, w)`) is lent as `&base(v)[k]`.
pub(super) fn substitute_borrows(
    body: &mut Body,
    cand: &[bool],
    base: &dyn Fn(Local) -> Place,
    lend: bool,
) {
    let mut index: Vec<Option<Local>> = vec![None; cand.len()];
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
    let is_cand = |l: Local| cand.get(l.index()).copied().unwrap_or(false);
    // A candidate whose base is itself a candidate (`e = &row[k]` of `row = &adj[i]`, rows of a
    // buffer of buffers of tuples) reaches the outer base in as many steps as there are levels.
    let subst = |q: &mut Place| {
        for _ in 0..cand.len() {
            if !is_cand(q.local) {
                break;
            }
            let mut e = base(q.local);
            e.projections.push(Projection::Index(index[q.local.index()].expect("a candidate")));
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
            if p.projections.is_empty() && is_cand(p.local) {
                let k = index[p.local.index()].expect("a candidate");
                match rv {
                    // `v = &b[i]` becomes `k = i`.
                    Rvalue::Use(Operand::Ref(q, _)) => {
                        if let Some(Projection::Index(i)) = q.projections.last() {
                            let i = *i;
                            *p = Place::local(k);
                            *rv = Rvalue::Use(Operand::Use(Place::local(i)));
                        }
                    }
                    // `w = v` of two candidates: their indices.
                    Rvalue::Use(Operand::Use(q))
                        if q.projections.is_empty() && is_cand(q.local) =>
                    {
                        let kq = index[q.local.index()].expect("a candidate");
                        *p = Place::local(k);
                        *rv = Rvalue::Use(Operand::Use(Place::local(kq)));
                    }
                    // `v = b[i]`, a copy of a row nothing writes while `v` is read: `k = i`.
                    Rvalue::Use(Operand::Use(q))
                        if matches!(q.projections.last(), Some(Projection::Index(_))) =>
                    {
                        if let Some(Projection::Index(i)) = q.projections.last() {
                            let i = *i;
                            *p = Place::local(k);
                            *rv = Rvalue::Use(Operand::Use(Place::local(i)));
                        }
                    }
                    _ => {}
                }
                continue;
            }
            subst(p);
            if lend {
                for_each_operand(rv, &mut |o| {
                    if let Operand::Use(q) = o
                        && q.projections.is_empty()
                        && is_cand(q.local)
                    {
                        *o = Operand::Ref(q.clone(), false);
                    }
                });
            }
            for_each_place(rv, &mut |q| subst(q));
        }
    }
}

/// Whether two places name the same place (same local, same projections).
pub(super) fn same_place(a: &Place, b: &Place) -> bool {
    a.local == b.local
        && a.projections.len() == b.projections.len()
        && a.projections.iter().zip(&b.projections).all(|(x, y)| match (x, y) {
            (Projection::Deref, Projection::Deref) => true,
            (Projection::Index(i), Projection::Index(j)) => i == j,
            (Projection::Field(m), Projection::Field(n)) => {
                quote!(#m).to_string() == quote!(#n).to_string()
            }
            _ => false,
        })
}

/// An assertion's or panic's reads of a local that held an element borrow and now holds the
/// element (`*e`, `e.is_finite()` of `for e in x.iter()`) read a borrow of it: `(&e)`, a
/// reference as in the primal.
pub(super) fn borrow_markers(tokens: TokenStream, elem_ref: &[bool]) -> TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(ref i) => {
                let s = i.to_string();
                let n = s.strip_prefix("__mooncake_local_").and_then(|n| n.parse::<usize>().ok());
                match n {
                    Some(n) if elem_ref.get(n) == Some(&true) => {
                        TokenTree::Group(Group::new(Delimiter::Parenthesis, quote!(&#tt)))
                    }
                    _ => tt,
                }
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), borrow_markers(g.stream(), elem_ref));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// Whether `l` is an argument `&T` (not `&mut`) the body never reassigns.
pub(super) fn shared_stable_arg(body: &Body, l: Local) -> bool {
    let (refs, mut_refs) = ref_locals(body);
    (1..=body.n_args).contains(&l.index())
        && refs[l.index()]
        && !mut_refs[l.index()]
        && !body.blocks.iter().flat_map(|b| &b.statements).any(|s| {
            matches!(&s.kind, StatementKind::Assign(p, _) if p.projections.is_empty() && p.local == l)
        })
}

/// 7. An element of a buffer field of a shared-reference argument, `p.w[i]` (`p: &S`, never
///    reassigned), is read through a view of the field made at entry (`v = &p.w;`, a local the
///    reverse sweep treats as a `&Vec<T>` argument): its loads then keep only their index, and
///    a block that reads it can be run again in the reverse sweep.
pub(super) fn view_fields(body: &mut Body) {
    let mut views: Vec<(Local, Vec<syn::Member>, Local)> = Vec::new();
    let mut stable = vec![false; body.locals.len()];
    for (l, s) in stable.iter_mut().enumerate() {
        *s = shared_stable_arg(body, Local(l as u32));
    }
    let mut locals = std::mem::take(&mut body.locals);
    for b in &mut body.blocks {
        for st in &mut b.statements {
            let span = st.span;
            let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &mut st.kind else {
                continue;
            };
            if !p.projections.is_empty() {
                continue;
            }
            let Some(Access::FieldIndex(base, path, index)) = access(q) else { continue };
            if !stable[base.index()] {
                continue;
            }
            let v = match views.iter().find(|(b_, p_, _)| *b_ == base && *p_ == path) {
                Some((_, _, v)) => *v,
                None => {
                    locals.push(LocalDecl { name: None, ty: None, span });
                    let v = Local((locals.len() - 1) as u32);
                    views.push((base, path.clone(), v));
                    v
                }
            };
            *q = Place { local: v, projections: vec![Projection::Index(index)] };
        }
    }
    body.locals = locals;
    let defs = views.into_iter().map(|(base, path, v)| Statement {
        kind: StatementKind::Assign(
            Place::local(v),
            Rvalue::Use(Operand::Ref(
                Place {
                    local: base,
                    projections: path.into_iter().map(Projection::Field).collect(),
                },
                false,
            )),
        ),
        span: proc_macro2::Span::call_site(),
    });
    let entry = &mut body.blocks[BlockId::ENTRY.index()].statements;
    let defs: Vec<Statement> = defs.collect();
    entry.splice(0..0, defs);
}

/// 6. A field `p.f` read inside a loop from a shared-reference argument the body never
///    reassigns is read once, at entry: it cannot change while the rule runs, and reading a
///    field cannot fail. The loop then keeps no tape entry for it, and a block that reads it
///    can be run again in the reverse sweep (it becomes a value assigned once, outside loops).
pub(super) fn hoist_field_loads(body: &mut Body) {
    let in_loop = blocks_in_loops(body);
    let (refs, mut_refs) = ref_locals(body);
    let mut assigned = vec![0usize; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, _) = &s.kind
                && p.projections.is_empty()
            {
                assigned[p.local.index()] += 1;
            }
        }
    }
    let n_args = body.n_args;
    let stable = |l: Local| {
        (1..=n_args).contains(&l.index())
            && refs[l.index()]
            && !mut_refs[l.index()]
            && assigned[l.index()] == 0
    };
    let mut moved = Vec::new();
    for (bi, b) in body.blocks.iter_mut().enumerate() {
        if !in_loop.contains(&BlockId(bi as u32)) {
            continue;
        }
        b.statements.retain(|s| {
            let hoist = matches!(&s.kind, StatementKind::Assign(p, Rvalue::Use(Operand::Use(q)))
                if p.projections.is_empty()
                    && assigned[p.local.index()] == 1
                    && matches!(access(q), Some(Access::Field(base, _)) if stable(base)));
            if hoist {
                moved.push(s.clone());
            }
            !hoist
        });
    }
    let entry = &mut body.blocks[BlockId::ENTRY.index()].statements;
    entry.splice(0..0, moved);
}

/// 5. A load `x[i]` of a shared-reference argument the body never reassigns, repeated in a
///    block with `i` unchanged, becomes a copy of the first one: the element cannot have
///    changed (a `&T` argument is immutable while the rule runs), and a copy costs the reverse
///    sweep nothing, where a load adds into the shadow.
pub(super) fn reuse_loads(body: &mut Body) {
    let (refs, mut_refs) = ref_locals(body);
    let mut assigned = vec![false; body.locals.len()];
    for b in &body.blocks {
        for s in &b.statements {
            if let StatementKind::Assign(p, _) = &s.kind
                && p.projections.is_empty()
            {
                assigned[p.local.index()] = true;
            }
        }
    }
    let stable = |l: Local| {
        body.args().any(|a| a == l)
            && refs[l.index()]
            && !mut_refs[l.index()]
            && !assigned[l.index()]
    };
    let stable: Vec<bool> = (0..body.locals.len()).map(|l| stable(Local(l as u32))).collect();
    for b in &mut body.blocks {
        // (base, index) -> the local holding the element.
        let mut available: Vec<(Local, Local, Local)> = Vec::new();
        for s in &mut b.statements {
            let StatementKind::Assign(p, rv) = &mut s.kind else { continue };
            if !p.projections.is_empty() {
                continue;
            }
            let l = p.local;
            let mut added = None;
            if let Rvalue::Use(Operand::Use(q)) = rv
                && let Some(Access::Index(base, index)) = access(q)
                && stable[base.index()]
            {
                match available.iter().find(|(x, i, _)| *x == base && *i == index) {
                    Some((_, _, t)) => *rv = Rvalue::Use(Operand::Use(Place::local(*t))),
                    None => added = Some((base, index, l)),
                }
            }
            // The local assigned invalidates the loads it indexes or holds.
            available.retain(|(_, i, t)| *i != l && *t != l);
            if let Some(entry) = added
                && entry.1 != l
            {
                available.push(entry);
            }
        }
    }
}

/// Whether argument `l` is a buffer passed by value (`Vec<T>`, `[T; N]`): held through a
/// handle from the rule's entry.
pub(super) fn buffer_arg(body: &Body, l: Local) -> bool {
    body.args().any(|a| a == l)
        && body.locals[l.index()]
            .ty
            .as_ref()
            .is_some_and(|t| !matches!(t, syn::Type::Reference(_)) && buffer_element(t).is_some())
}

/// Locals declared with a type the macro cannot see into that hold arrays (`a: Vec3`, `let p:
/// Vec3 = b.pos;` of `type Vec3 = [f64; 3];`, and the result a function `-> Vec3` builds): a
/// single name that is not a type parameter or a primitive, indexed somewhere and never reached
/// by a field, or assigned an array or `Vec` built in the body. Such a local is read as what its
/// uses show: a local's declared type is dropped (as if written `let p = b.pos;`), and an
/// argument's becomes `[_; _]`, an array by value (held through a handle, its gradient returned
/// as rdata).
fn aliased_arrays(body: &mut Body) {
    let n = body.locals.len();
    let mut indexed = vec![false; n];
    let mut fielded = vec![false; n];
    let mut built = vec![false; n];
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if p.projections.is_empty() && builds_handle(rv) {
            built[p.local.index()] = true;
        }
        // Read as a buffer of rows by the rules nested reads become (`c[i][j]`: `__get2`).
        if let Rvalue::Method { receiver, method, .. } = rv
            && receiver.projections.is_empty()
            && ["__get2", "__set2", "__len2", "__row_to_vec"].contains(&method.to_string().as_str())
        {
            indexed[receiver.local.index()] = true;
        }
        let mut rv2 = rv.clone();
        let mut note = |q: &Place| {
            let first = q.projections.iter().find(|pr| !matches!(pr, Projection::Deref));
            match first {
                Some(Projection::Index(_)) => indexed[q.local.index()] = true,
                Some(Projection::Field(_)) => fielded[q.local.index()] = true,
                _ => {}
            }
        };
        note(p);
        for_each_place(&mut rv2, &mut |q| note(q));
    }
    // A copy of a buffer built in the body holds one too (`let mut c = [[0.0; 2]; 2];`).
    mark_copies(body, &mut built);
    let opaque = |ty: &syn::Type| match ty {
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let s = &p.path.segments[0];
            let name = s.ident.to_string();
            s.arguments.is_none()
                && super::super::lower::user_type_name(&name, &body.type_params)
                && name != "Self"
        }
        _ => false,
    } && !super::super::lower::matrix_type(ty);
    for l in 1..n {
        let Some(ty) = &body.locals[l].ty else { continue };
        if !opaque(ty) || fielded[l] {
            continue;
        }
        if l <= body.n_args {
            if indexed[l] {
                body.locals[l].ty = Some(syn::parse_quote!([_; _]));
            }
        } else if indexed[l] || built[l] {
            body.locals[l].ty = None;
        }
    }
}

/// `let m = self.x;` of an array field of a `&mut` struct (`self.x: [f64; 2]`), indexed
/// afterwards: the field is seen through its handle, which has no length in its type, so the
/// copy is the field's elements copied into a buffer of the function's own (`to_vec`), indexed
/// as the array was.
fn copied_fields_of_mut_refs(body: &mut Body) {
    let (_, mut_refs) = super::plan::ref_locals(body);
    let indexed = super::nested::indexed_locals(body);
    for s in body.blocks.iter_mut().flat_map(|b| &mut b.statements) {
        let StatementKind::Assign(p, rv) = &mut s.kind else { continue };
        if p.projections.is_empty()
            && indexed[p.local.index()]
            && let Rvalue::Use(Operand::Use(q)) = rv
            && let Some(Access::Field(base, _)) = access(q)
            && mut_refs[base.index()]
        {
            let span = proc_macro2::Span::call_site();
            *rv = Rvalue::Method {
                receiver: q.clone(),
                method: syn::Ident::new("to_vec", span),
                args: Vec::new(),
            };
        }
    }
}

/// Marks every local assigned a copy (`p = q`) of a marked local, until nothing changes.
pub(super) fn mark_copies(body: &Body, marked: &mut [bool]) {
    let mut changed = true;
    while changed {
        changed = false;
        for s in body.blocks.iter().flat_map(|b| &b.statements) {
            if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                && p.projections.is_empty()
                && q.projections.is_empty()
                && marked[q.local.index()]
                && !marked[p.local.index()]
            {
                marked[p.local.index()] = true;
                changed = true;
            }
        }
    }
}

/// A value the rules return already held through a handle: a buffer built in the body, or a
/// conversion into one.
/// The locals some statement assigns a buffer built in the body ([`builds_handle`]).
pub(super) fn built_locals(body: &Body) -> Vec<bool> {
    let mut built = vec![false; body.locals.len()];
    for s in body.blocks.iter().flat_map(|b| &b.statements) {
        if let StatementKind::Assign(p, rv) = &s.kind
            && p.projections.is_empty()
            && builds_handle(rv)
        {
            built[p.local.index()] = true;
        }
    }
    built
}

pub(super) fn builds_handle(rv: &Rvalue) -> bool {
    match rv {
        Rvalue::VecRepeat(..) | Rvalue::VecList(_) | Rvalue::Array(_) | Rvalue::Repeat(..) => true,
        Rvalue::Call { func, .. } => {
            func.segments.len() == 2
                && func.segments[0].ident == "Vec"
                && (func.segments[1].ident == "new" || func.segments[1].ident == "with_capacity")
        }
        Rvalue::Method { method, .. } => {
            ["to_vec", "clone", "__sub_to_vec", "__row_to_vec", "__deep_to_vec", "__repeat_rows"]
                .contains(&method.to_string().as_str())
        }
        Rvalue::Convert(c, _) => matches!(c, Conversion::Hold | Conversion::Copy),
        _ => false,
    }
}

/// 4. Buffers: the buffer rules read and write buffers held through handles, so a local that
///    is indexed, measured or grown (or assigned a built buffer anywhere) is held through one
///    everywhere: a value assigned to it from a call, a method or a field is held
///    ([`Conversion::Hold`]); a copy of an array held through a handle that either side then
///    writes is a new handle ([`Conversion::Copy`]); and a local held through a handle is
///    released ([`Conversion::Release`]) when passed by value to a call, which takes a `Vec` or
///    an array.
pub(super) fn hold_buffers(body: &mut Body) {
    let n = body.locals.len();
    let (refs, _) = ref_locals(body);
    let is_arg = |l: Local| l.index() >= 1 && l.index() <= body.n_args;
    let (mut used, mut mutated) = (vec![false; n], vec![false; n]);
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if let Some(Access::Index(base, _)) = access(p) {
                used[base.index()] = true;
                mutated[base.index()] = true;
            }
            match rv {
                Rvalue::Use(Operand::Use(q)) => {
                    if let Some(Access::Index(base, _)) = access(q) {
                        used[base.index()] = true;
                    }
                }
                Rvalue::Method { receiver, method, args } if receiver.projections.is_empty() => {
                    let r = receiver.local.index();
                    let name = method.to_string();
                    if super::BUFFER_METHODS.contains(&name.as_str()) {
                        used[r] = true;
                    }
                    if super::WRITE_METHODS.contains(&name.as_str()) {
                        used[r] = true;
                        mutated[r] = true;
                    }
                    if ["copy_from_slice", "extend_from_slice", "__sub_assign"]
                        .contains(&name.as_str())
                        && let Some(Operand::Use(q) | Operand::Ref(q, _)) = args.last()
                        && q.projections.is_empty()
                    {
                        used[q.local.index()] = true;
                    }
                }
                _ => {}
            }
        }
    }
    // Locals held through handles: buffer arguments by value, locals indexed, measured or
    // grown, locals assigned a built buffer, and copies of any of them.
    let mut handles: Vec<bool> = (0..n)
        .map(|l| {
            let local = Local(l as u32);
            if is_arg(local) { buffer_arg(body, local) } else { l != 0 && used[l] && !refs[l] }
        })
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                let l = p.local.index();
                if !p.projections.is_empty() || l == 0 || handles[l] || is_arg(p.local) {
                    continue;
                }
                let copy_of_handle = matches!(rv, Rvalue::Use(Operand::Use(q))
                    if q.projections.is_empty() && handles[q.local.index()]);
                if builds_handle(rv) || copy_of_handle {
                    handles[l] = true;
                    changed = true;
                }
            }
        }
    }
    // How many statements read each local: a handle copied from a temporary read nowhere else
    // (`let mut k = vec![..];` lowers to a temporary and a copy) takes the temporary's handle,
    // since nothing can see the two alias.
    let mut reads = vec![0usize; n];
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            let mut named = BTreeSet::new();
            read_locals(p, rv, &mut |l| {
                named.insert(l);
            });
            for l in named {
                reads[l.index()] += 1;
            }
        }
    }
    let temporary: Vec<bool> =
        (0..n).map(|l| body.locals[l].name.is_none() && !is_arg(Local(l as u32))).collect();
    let mut locals = std::mem::take(&mut body.locals);
    for b in &mut body.blocks {
        let mut statements = Vec::with_capacity(b.statements.len());
        for mut s in std::mem::take(&mut b.statements) {
            let span = s.span;
            let fresh = |locals: &mut Vec<LocalDecl>| {
                locals.push(LocalDecl { name: None, ty: None, span });
                Local((locals.len() - 1) as u32)
            };
            if let StatementKind::Assign(p, rv) = &mut s.kind {
                // Buffers held through handles, passed by value to a call or put into a tuple
                // or a struct: released.
                let args = match rv {
                    Rvalue::Tuple(args) => Some(args),
                    Rvalue::Struct { fields, .. } => {
                        for (_, a) in fields.iter_mut() {
                            if let Operand::Use(q) = a
                                && q.projections.is_empty()
                                && handles[q.local.index()]
                            {
                                let t = fresh(&mut locals);
                                let release = Rvalue::Convert(Conversion::Release, a.clone());
                                statements.push(Statement {
                                    kind: StatementKind::Assign(Place::local(t), release),
                                    span,
                                });
                                *a = Operand::Use(Place::local(t));
                            }
                        }
                        None
                    }
                    Rvalue::Call { func, args }
                        if !(func.segments.len() == 2
                            && ["f64", "f32", "Vec"]
                                .iter()
                                .any(|t| func.segments[0].ident == t)) =>
                    {
                        Some(args)
                    }
                    Rvalue::Method { method, args, .. } if !reverse_method(&method.to_string()) => {
                        Some(args)
                    }
                    _ => None,
                };
                for a in args.into_iter().flatten() {
                    if let Operand::Use(q) = a
                        && q.projections.is_empty()
                        && handles[q.local.index()]
                    {
                        let t = fresh(&mut locals);
                        let release = Rvalue::Convert(Conversion::Release, a.clone());
                        statements.push(Statement {
                            kind: StatementKind::Assign(Place::local(t), release),
                            span,
                        });
                        *a = Operand::Use(Place::local(t));
                    }
                }
                // A buffer held through a handle, stored into a field of a struct held by
                // value: released.
                if let Some(Access::Field(base, _)) = access(p)
                    && !refs[base.index()]
                    && let Rvalue::Use(a) = rv
                    && matches!(a, Operand::Use(q)
                        if q.projections.is_empty() && handles[q.local.index()])
                {
                    let t = fresh(&mut locals);
                    let release = Rvalue::Convert(Conversion::Release, a.clone());
                    statements.push(Statement {
                        kind: StatementKind::Assign(Place::local(t), release),
                        span,
                    });
                    *a = Operand::Use(Place::local(t));
                }
                let l = p.local;
                if p.projections.is_empty()
                    && handles[l.index()]
                    && l != Local::RETURN
                    && !is_arg(l)
                    && !builds_handle(rv)
                {
                    match rv {
                        Rvalue::Use(Operand::Use(q)) if q.projections.is_empty() => {
                            let m = q.local.index();
                            if !handles[m] {
                                *rv = Rvalue::Convert(Conversion::Hold, Operand::Use(q.clone()));
                            } else if (mutated[l.index()] || mutated[m])
                                && !(temporary[m] && reads[m] == 1)
                            {
                                *rv = Rvalue::Convert(Conversion::Copy, Operand::Use(q.clone()));
                            }
                        }
                        Rvalue::Use(Operand::Use(_))
                        | Rvalue::Call { .. }
                        | Rvalue::Method { .. } => {
                            let t = fresh(&mut locals);
                            let value = std::mem::replace(
                                rv,
                                Rvalue::Convert(Conversion::Hold, Operand::Use(Place::local(t))),
                            );
                            statements.push(Statement {
                                kind: StatementKind::Assign(Place::local(t), value),
                                span,
                            });
                        }
                        _ => {}
                    }
                }
            }
            statements.push(s);
        }
        b.statements = statements;
    }
    body.locals = locals;
}

/// Moves the projected reads of a statement's operands (and of a method's receiver) into load
/// statements of their own, pushed on `statements` before it.
pub(super) fn hoist(
    s: &mut Statement,
    locals: &mut Vec<LocalDecl>,
    statements: &mut Vec<Statement>,
    stores_back: &[bool],
) -> Option<Statement> {
    let mut after = None;
    if let StatementKind::Assign(_, rv) = &mut s.kind
        && !matches!(rv, Rvalue::Use(Operand::Use(_)))
    {
        let span = s.span;
        // `match s.k { .. }`: the field is loaded, the pattern matched on the value.
        if let Rvalue::Matches(place, _) = rv
            && load_parts(place).is_some()
        {
            locals.push(LocalDecl { name: None, ty: None, span });
            let t = Local((locals.len() - 1) as u32);
            statements.push(Statement {
                kind: StatementKind::Assign(
                    Place::local(t),
                    Rvalue::Use(Operand::Use(place.clone())),
                ),
                span,
            });
            *place = Place::local(t);
        }
        if let Rvalue::Method { receiver, method, .. } = rv
            && load_parts(receiver).is_some()
            && !BUFFER_METHODS.contains(&method.to_string().as_str())
            && !WRITE_METHODS.contains(&method.to_string().as_str())
        {
            // `x[i].sin()`: the element is loaded, the method called on the value.
            locals.push(LocalDecl { name: None, ty: None, span });
            let t = Local((locals.len() - 1) as u32);
            statements.push(Statement {
                kind: StatementKind::Assign(
                    Place::local(t),
                    Rvalue::Use(Operand::Use(receiver.clone())),
                ),
                span,
            });
            // A user method on a field of a struct the function may change (`o.inner.scale(k)`
            // of `o: &mut Outer`, `m.a.shrink(k)` of a local `m`) may take `&mut self`: the
            // value it leaves is stored back into the field.
            let fields = receiver.projections.iter().any(|p| matches!(p, Projection::Field(_)))
                && receiver
                    .projections
                    .iter()
                    .all(|p| matches!(p, Projection::Field(_) | Projection::Deref));
            if fields
                && !reverse_method(&method.to_string())
                && stores_back.get(receiver.local.index()).copied().unwrap_or(false)
            {
                after = Some(Statement {
                    kind: StatementKind::Assign(
                        receiver.clone(),
                        Rvalue::Use(Operand::Use(Place::local(t))),
                    ),
                    span,
                });
            }
            *receiver = Place::local(t);
        }
        for_each_operand(rv, &mut |o| {
            if let Operand::Use(q) = o
                && !q.projections.is_empty()
            {
                locals.push(LocalDecl { name: None, ty: None, span });
                let t = Local((locals.len() - 1) as u32);
                statements.push(Statement {
                    kind: StatementKind::Assign(
                        Place::local(t),
                        Rvalue::Use(Operand::Use(q.clone())),
                    ),
                    span,
                });
                *o = Operand::Use(Place::local(t));
            }
        });
    }
    after
}

/// `p.clone()` of an argument `p: &S` whose type is a named type that is not a buffer or a
/// matrix (a `#[derive(Tangent)]` struct: `let mut q = p.clone();`, then `q.step(dt)`) is the
/// runtime's `__clone_value`: a copy with a zero fdata of its own, whose gradient its pullback
/// adds into `p`'s shadow (`rules::buffer::clone_ref_rrule`); of an argument `p: S`,
/// `__clone_owned` (`clone_value_rrule`: the gradient's fdata part into `p`'s fdata, its rdata
/// part returned as `p`'s). `clone` is otherwise read as a buffer's copy.
fn clone_struct_arguments(body: &mut Body) {
    let n_args = body.n_args;
    let params = &body.type_params.clone();
    use super::super::lower::{struct_ref_type, struct_type};
    // `Some("__clone_value")` for an argument `p: &S`, `Some("__clone_owned")` for `p: S`.
    let structs: Vec<Option<&str>> = body
        .locals
        .iter()
        .enumerate()
        .map(|(l, d)| match &d.ty {
            Some(ty) if l >= 1 && l <= n_args && struct_ref_type(ty, params) => {
                Some("__clone_value")
            }
            Some(ty) if l >= 1 && l <= n_args && struct_type(ty, params) => Some("__clone_owned"),
            _ => None,
        })
        .collect();
    if !structs.iter().any(|s| s.is_some()) {
        return;
    }
    for s in body.blocks.iter_mut().flat_map(|b| &mut b.statements) {
        if let StatementKind::Assign(_, Rvalue::Method { receiver, method, args }) = &mut s.kind
            && method == "clone"
            && args.is_empty()
            && receiver.projections.is_empty()
            && let Some(name) = structs[receiver.local.index()]
        {
            *method = syn::Ident::new(name, method.span());
        }
    }
}

pub(super) fn for_each_operand(rv: &mut Rvalue, f: &mut dyn FnMut(&mut Operand)) {
    match rv {
        Rvalue::Use(o)
        | Rvalue::Unary(_, o)
        | Rvalue::Cast(o, _)
        | Rvalue::Repeat(o, _)
        | Rvalue::Convert(_, o) => f(o),
        Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => {
            f(a);
            f(b);
        }
        Rvalue::Call { args, .. }
        | Rvalue::Tuple(args)
        | Rvalue::Array(args)
        | Rvalue::VecList(args) => args.iter_mut().for_each(f),
        Rvalue::Method { args, .. } => args.iter_mut().for_each(f),
        Rvalue::Struct { fields, .. } => fields.iter_mut().for_each(|(_, o)| f(o)),
        Rvalue::Matches(..) => {}
    }
}

/// Every place an rvalue reads or borrows.
/// The locals an assignment `place = rv` reads: the indices in `place`, and the locals and
/// indices of the places `rv` uses (not `place`'s base, which it writes).
pub(super) fn read_locals(place: &Place, rv: &Rvalue, f: &mut dyn FnMut(Local)) {
    let indices = |q: &Place, f: &mut dyn FnMut(Local)| {
        for pr in &q.projections {
            if let Projection::Index(i) = pr {
                f(*i);
            }
        }
    };
    indices(place, f);
    for_each_place_ref(rv, &mut |q| {
        f(q.local);
        indices(q, f);
    });
}

pub(crate) fn for_each_place_ref<'r>(rv: &'r Rvalue, f: &mut dyn FnMut(&'r Place)) {
    match rv {
        Rvalue::Method { receiver, args, .. } => {
            f(receiver);
            args.iter().for_each(|o| operand_place(o, f));
        }
        Rvalue::Matches(p, _) => f(p),
        Rvalue::Use(o)
        | Rvalue::Unary(_, o)
        | Rvalue::Cast(o, _)
        | Rvalue::Repeat(o, _)
        | Rvalue::Convert(_, o) => operand_place(o, f),
        Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => {
            operand_place(a, f);
            operand_place(b, f);
        }
        Rvalue::Call { args, .. }
        | Rvalue::Tuple(args)
        | Rvalue::Array(args)
        | Rvalue::VecList(args) => args.iter().for_each(|o| operand_place(o, f)),
        Rvalue::Struct { fields, .. } => fields.iter().for_each(|(_, o)| operand_place(o, f)),
    }
}

pub(super) fn operand_place<'r>(o: &'r Operand, f: &mut dyn FnMut(&'r Place)) {
    if let Operand::Use(p) | Operand::Ref(p, _) = o {
        f(p)
    }
}

pub(super) fn for_each_place(rv: &mut Rvalue, f: &mut dyn FnMut(&mut Place)) {
    if let Rvalue::Method { receiver, .. } | Rvalue::Matches(receiver, _) = rv {
        f(receiver);
    }
    for_each_operand(rv, &mut |o| {
        if let Operand::Use(p) | Operand::Ref(p, _) = o {
            f(p)
        }
    });
}
