//! Planning, before any code is written: which locals carry adjoints or none (`Inactive`:
//! integers and buffers of integers or `bool`s), which hold references or handles, which are
//! viewed fields, which blocks sit in loops; and `Reverse::new`, which decides per block and per
//! value what the rule keeps and what it recomputes (replay, counters, sinks, store records).

use super::*;

/// Locals that hold references (arguments declared `&T` or `&mut T`, and plain copies of
/// them), and which of those are `&mut`: a field read through one sends its gradient to the
/// field's shadow.
pub(super) fn ref_locals(body: &Body) -> (Vec<bool>, Vec<bool>) {
    let mut refs = vec![false; body.locals.len()];
    let mut mut_refs = vec![false; body.locals.len()];
    for l in body.args() {
        if let Some(syn::Type::Reference(r)) = &body.locals[l.index()].ty {
            refs[l.index()] = true;
            mut_refs[l.index()] = r.mutability.is_some();
        }
    }
    super::normalise::mark_copies(body, &mut refs);
    (refs, mut_refs)
}

/// `+ - * / %`, unary `-` and `as`: the statements that are arithmetic on floats and carry no
/// derivative on integers.
pub(super) fn is_arithmetic(rv: &Rvalue) -> bool {
    match rv {
        Rvalue::Binary(op, ..) => op.is_arithmetic(),
        Rvalue::Unary(UnOp::Neg, _) | Rvalue::Cast(..) => true,
        _ => false,
    }
}

/// The integer types, whose arithmetic has no derivative.
pub(crate) const INT_TYPES: &[&str] =
    &["usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128"];

fn is_int_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| INT_TYPES.iter().any(|t| i == t)))
}

/// An integer literal: unsuffixed (Rust never gives one a float type) or with an integer suffix.
pub(super) fn is_int_literal(c: &TokenStream) -> bool {
    syn::parse2::<syn::LitInt>(c.clone())
        .is_ok_and(|l| l.suffix().is_empty() || INT_TYPES.contains(&l.suffix()))
}

/// What syntax alone tells of the locals that carry no derivative.
pub(super) struct Inactive {
    /// Locals known to be integers: declared with an integer type, assigned an integer literal,
    /// a `len()`, a cast to an integer type, arithmetic with an integer operand (Rust has no
    /// mixed integer / float arithmetic, and a local has one type), or an element of an integer
    /// buffer. Their arithmetic statements get no reverse code: no pullback, no tape. The other
    /// integers keep their rules, whose pullbacks carry `NoRData`.
    pub(super) ints: Vec<bool>,
    /// Buffers known to hold integers, `bool`s or `char`s (`&[usize]`, `vec![0usize; n]`,
    /// `vec![false; n]`, a `Vec<usize>` grown by `push`): a load from one is a plain read, with
    /// no rule, no tape and no adjoint.
    pub(super) bufs: Vec<bool>,
    /// Locals that only hold a named constant or a copy of one (`ir::constant_locals`), also in
    /// `bufs`: assigned with no derivative, their copies (`W.to_vec()`, `W[1..]`) on the
    /// primal.
    pub(super) consts: Vec<bool>,
    /// Matrices and arrays the syntax shows (`Body::matrices`): values with a shadow rather
    /// than rdata, whose sums and negations keep their rules (not inline adjoints).
    pub(super) matrices: Vec<bool>,
    /// Values whose type the function's text does not show, read from a named field (`p.pos`)
    /// or computed by arithmetic from one: perhaps a value of a user type, whose `+` is its
    /// `Add` method's rule (`rev::UserValue`), so their sums and negations keep their
    /// rules (not inline adjoints, which are a number's).
    pub(super) opaque: Vec<bool>,
}

/// The element type of a buffer type (`[T]`, `[T; N]`, `Vec<T>`, behind any references).
pub(crate) fn buffer_element(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Reference(r) => buffer_element(&r.elem),
        syn::Type::Paren(p) => buffer_element(&p.elem),
        syn::Type::Slice(s) => Some(&s.elem),
        syn::Type::Array(a) => Some(&a.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
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

/// `bool` or `char`: scalars with no derivative that are not integers.
pub(super) fn is_flag_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| i == "bool" || i == "char"))
}

/// A `bool` or `char` literal.
pub(super) fn is_flag_literal(c: &TokenStream) -> bool {
    matches!(syn::parse2::<syn::Lit>(c.clone()), Ok(syn::Lit::Bool(_) | syn::Lit::Char(_)))
}

pub(super) fn inactive_locals(body: &Body) -> Inactive {
    let declared = |f: fn(&syn::Type) -> bool| -> Vec<bool> {
        body.locals.iter().map(|d| d.ty.as_ref().is_some_and(f)).collect()
    };
    let mut ints = declared(is_int_type);
    let mut flags = declared(is_flag_type);
    let mut int_bufs = declared(|t| buffer_element(t).is_some_and(is_int_type));
    let mut flag_bufs = declared(|t| buffer_element(t).is_some_and(is_flag_type));
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                if !p.projections.is_empty() {
                    continue;
                }
                let int_operand = |o: &Operand| match o {
                    Operand::Use(q) => q.projections.is_empty() && ints[q.local.index()],
                    Operand::Const(c) => is_int_literal(c),
                    Operand::Ref(..) => false,
                };
                let flag_operand = |o: &Operand| match o {
                    Operand::Use(q) => q.projections.is_empty() && flags[q.local.index()],
                    Operand::Const(c) => is_flag_literal(c),
                    Operand::Ref(..) => false,
                };
                // An element of a known buffer.
                let element_of = |bufs: &[bool]| {
                    matches!(rv, Rvalue::Use(Operand::Use(q))
                        if matches!(access(q), Some(Access::Index(base, _)) if bufs[base.index()]))
                };
                let copy_of = |bufs: &[bool]| {
                    matches!(rv, Rvalue::Use(Operand::Use(q))
                        if q.projections.is_empty() && bufs[q.local.index()])
                        || matches!(rv, Rvalue::Method { receiver, method, .. }
                            if (method == "to_vec" || method == "clone" || method == "__sub_to_vec")
                                && receiver.projections.is_empty()
                                && bufs[receiver.local.index()])
                };
                let built_of = |operand: &dyn Fn(&Operand) -> bool| match rv {
                    Rvalue::VecRepeat(o, _) | Rvalue::Repeat(o, _) => operand(o),
                    Rvalue::VecList(ops) | Rvalue::Array(ops) => {
                        !ops.is_empty() && ops.iter().all(operand)
                    }
                    _ => false,
                };
                // A buffer that integers or flags are pushed onto holds them.
                let pushed = match rv {
                    Rvalue::Method { receiver, method, args }
                        if (method == "push" || method == "resize")
                            && receiver.projections.is_empty() =>
                    {
                        match args.as_slice() {
                            [v] | [_, v] => {
                                Some((receiver.local.index(), int_operand(v), flag_operand(v)))
                            }
                            _ => None,
                        }
                    }
                    // `x.extend_from_slice(&s)` of a buffer of integers or flags.
                    Rvalue::Method { receiver, method, args }
                        if method == "extend_from_slice" && receiver.projections.is_empty() =>
                    {
                        match args.as_slice() {
                            [Operand::Use(q) | Operand::Ref(q, _)] if q.projections.is_empty() => {
                                let b = q.local.index();
                                Some((receiver.local.index(), int_bufs[b], flag_bufs[b]))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let l = p.local.index();
                let int = match rv {
                    Rvalue::Use(o) => int_operand(o) || element_of(&int_bufs),
                    Rvalue::Binary(op, a, c) if op.is_arithmetic() => {
                        int_operand(a) || int_operand(c)
                    }
                    Rvalue::Unary(UnOp::Neg, a) => int_operand(a),
                    Rvalue::Cast(_, ty) => is_int_type(ty),
                    Rvalue::Method { receiver, method, args } => {
                        (method == "len" && args.is_empty())
                            || (method == "__len2" && args.len() == 1)
                            || method == "__deep_len"
                            || (method == "__iter_sum"
                                && receiver.projections.is_empty()
                                && int_bufs[receiver.local.index()])
                    }
                    _ => false,
                };
                let flag = match rv {
                    Rvalue::Use(o) => flag_operand(o) || element_of(&flag_bufs),
                    _ => false,
                };
                let int_buf = copy_of(&int_bufs) || built_of(&int_operand);
                let flag_buf = copy_of(&flag_bufs) || built_of(&flag_operand);
                let mut updates =
                    vec![(0, l, int), (1, l, flag), (2, l, int_buf), (3, l, flag_buf)];
                if let Some((r, int, flag)) = pushed {
                    updates.extend([(2, r, int), (3, r, flag)]);
                }
                for (set, l, now) in updates {
                    let set = match set {
                        0 => &mut ints,
                        1 => &mut flags,
                        2 => &mut int_bufs,
                        _ => &mut flag_bufs,
                    };
                    if now && !set[l] {
                        set[l] = true;
                        changed = true;
                    }
                }
            }
        }
    }
    let consts = super::super::ir::constant_locals(body);
    let bufs = (0..body.locals.len()).map(|l| int_bufs[l] || flag_bufs[l] || consts[l]).collect();
    let opaque = super::super::ir::opaque_locals(body, &ints);
    Inactive { ints, bufs, consts, matrices: body.matrices.clone(), opaque }
}

/// For tests: of the arithmetic statements (`+ - * / %`, unary `-`, `as`), how many of those
/// on integers, and how many of the others, get no reverse code and how many get a rule.
#[cfg(test)]
pub(crate) fn arithmetic_kinds(body: &Body) -> ((usize, usize), (usize, usize)) {
    let (refs, _) = ref_locals(body);
    let inactive = inactive_locals(body);
    let (mut on_ints, mut others) = ((0, 0), (0, 0));
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !is_arithmetic(rv) || !p.projections.is_empty() {
                continue;
            }
            let count = if inactive.ints[p.local.index()] { &mut on_ints } else { &mut others };
            match kind(p, rv, &refs, &inactive) {
                Kind::NoDerivative => count.0 += 1,
                _ => count.1 += 1,
            }
        }
    }
    (on_ints, others)
}

/// The field views of a normalised body (see [`view_fields`]): `(view, base, field path)`.
pub(super) fn field_views(body: &Body) -> Vec<(Local, Local, Vec<syn::Member>)> {
    body.blocks[BlockId::ENTRY.index()]
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Assign(p, Rvalue::Use(Operand::Ref(q, false)))
                if p.projections.is_empty() =>
            {
                match access(q) {
                    Some(Access::Field(base, path)) if shared_stable_arg(body, base) => {
                        Some((p.local, base, path))
                    }
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// The locals of a normalised body held through handles: `&mut` arguments, buffer arguments
/// by value, buffers built or held, and copies of them.
pub(super) fn handle_locals(body: &Body) -> Vec<bool> {
    let (_, mut_refs) = ref_locals(body);
    let mut handles: Vec<bool> = (0..body.locals.len())
        .map(|l| {
            let l = Local(l as u32);
            body.args().any(|a| a == l) && (mut_refs[l.index()] || buffer_arg(body, l))
        })
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                let l = p.local.index();
                if !p.projections.is_empty() || l == 0 || handles[l] {
                    continue;
                }
                let copy = matches!(rv, Rvalue::Use(Operand::Use(q))
                    if q.projections.is_empty() && handles[q.local.index()]);
                if builds_handle(rv) || copy {
                    handles[l] = true;
                    changed = true;
                }
            }
        }
    }
    handles
}

/// The blocks that can run more than once per call: those on a cycle of the control-flow
/// graph. (The structured program may place code that runs once inside a loop's node, as the
/// arm that leaves it: such code is not in a loop here.)
pub(super) fn blocks_in_loops(body: &Body) -> BTreeSet<BlockId> {
    let succs: Vec<Vec<BlockId>> =
        body.blocks.iter().map(|b| b.terminator.kind.successors()).collect();
    let mut out = BTreeSet::new();
    for b in 0..body.blocks.len() {
        let mut seen = vec![false; body.blocks.len()];
        let mut stack: Vec<BlockId> = succs[b].clone();
        while let Some(n) = stack.pop() {
            if n.index() == b {
                out.insert(BlockId(b as u32));
                break;
            }
            if n.index() >= seen.len() || std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            stack.extend(succs[n.index()].iter().copied());
        }
    }
    out
}

impl<'a> Reverse<'a> {
    pub(crate) fn new(
        body: &'a Body,
        names: &'a Names,
        structured: &Node,
        box_all_calls: bool,
    ) -> Self {
        let in_loop = blocks_in_loops(body);
        let (mut refs, mut_refs) = ref_locals(body);
        let views = field_views(body);
        for (v, _, _) in &views {
            refs[v.index()] = true;
        }
        let inactive = inactive_locals(body);
        let handles = handle_locals(body);
        // A value the function holds (not through a handle or a reference): `&mut` of it is
        // lent to a call through a fresh handle (`rev::lend_mut`).
        let value_local = |l: Local| !handles[l.index()] && !refs[l.index()];
        let mut adjoint = vec![false; body.locals.len()];
        adjoint[0] = true;
        for l in body.args() {
            adjoint[l.index()] = true;
        }
        for b in &body.blocks {
            for s in &b.statements {
                if let StatementKind::Assign(p, rv) = &s.kind {
                    match kind(p, rv, &refs, &inactive) {
                        Kind::FieldCopy(base, _) => {
                            adjoint[p.local.index()] = true;
                            adjoint[base.index()] = true;
                        }
                        Kind::Build(parts) => {
                            adjoint[p.local.index()] = true;
                            for l in parts.into_iter().filter_map(|(_, l)| l) {
                                adjoint[l.index()] = true;
                            }
                        }
                        Kind::Copy(y) => {
                            adjoint[p.local.index()] = true;
                            adjoint[y.index()] = true;
                        }
                        Kind::Rule(ops) | Kind::RuleArray(ops) => {
                            adjoint[p.local.index()] = true;
                            let lent = loaned_locals(rv, &|l| value_local(l));
                            for l in ops.into_iter().flatten().chain(lent.into_iter().map(|x| x.0))
                            {
                                adjoint[l.index()] = true;
                            }
                        }
                        Kind::Linear(parts) => {
                            // `len()` (no operand) needs no adjoint of its own.
                            adjoint[p.local.index()] |= !parts.is_empty();
                            for (l, _) in parts {
                                if let Some(l) = l {
                                    adjoint[l.index()] = true;
                                }
                            }
                        }
                        Kind::NoDerivative => {}
                    }
                }
            }
        }
        // Integers carry no gradient (their rdata is `NoRData`). A local known to be one that
        // only copies and statements with no derivative assign, and that no call borrows
        // mutably, gets no adjoint: the reverse sweep writes nothing for its copies, or for the
        // indices of loads and stores.
        let mut keep = vec![false; body.locals.len()];
        for s in body.blocks.iter().flat_map(|b| &b.statements) {
            if let StatementKind::Assign(p, rv) = &s.kind {
                let k = kind(p, rv, &refs, &inactive);
                if !matches!(k, Kind::Copy(_) | Kind::NoDerivative | Kind::Linear(_)) {
                    keep[p.local.index()] = true;
                }
                // The result's cotangent goes to the local returned.
                if let (Kind::Copy(y), true) = (&k, p.local == Local::RETURN) {
                    keep[y.index()] = true;
                }
                for (l, _) in loaned_locals(rv, &|l| value_local(l)) {
                    keep[l.index()] = true;
                }
            }
        }
        for l in 1 + body.n_args..body.locals.len() {
            if inactive.ints[l] && !keep[l] {
                adjoint[l] = false;
            }
        }
        let stable_args = {
            let mut stable = vec![false; body.locals.len()];
            for l in body.args() {
                stable[l.index()] = refs[l.index()];
            }
            for b in &body.blocks {
                for s in &b.statements {
                    if let StatementKind::Assign(p, _) = &s.kind
                        && p.projections.is_empty()
                    {
                        stable[p.local.index()] = false;
                    }
                }
            }
            for (v, _, _) in &views {
                stable[v.index()] = true;
            }
            stable
        };
        let captured_locals = {
            let mut assigned = vec![0usize; body.locals.len()];
            let mut in_loop_def = vec![false; body.locals.len()];
            for (bi, b) in body.blocks.iter().enumerate() {
                for s in &b.statements {
                    if let StatementKind::Assign(p, _) = &s.kind
                        && p.projections.is_empty()
                    {
                        assigned[p.local.index()] += 1;
                        in_loop_def[p.local.index()] |= in_loop.contains(&BlockId(bi as u32));
                    }
                }
            }
            let args: BTreeSet<Local> = body.args().collect();
            (0..body.locals.len())
                .map(|l| {
                    l != 0
                        && handles[l]
                        && !args.contains(&Local(l as u32))
                        && !inactive.bufs[l]
                        && assigned[l] == 1
                        && !in_loop_def[l]
                        && !stable_args[l]
                })
                .collect::<Vec<bool>>()
        };
        let index_only: Vec<bool> =
            stable_args.iter().zip(&captured_locals).map(|(a, b)| *a || *b).collect();
        let mut r = Reverse {
            body,
            names,
            in_loop,
            adjoint,
            refs,
            mut_refs,
            inactive,
            box_all_calls,
            calls_out: std::cell::Cell::new(false),
            windows: windows::Windows::default(),
            rerun: std::cell::Cell::new(false),
            labels: std::cell::Cell::new(None),
            pool_tapes: false,
            debug: false,
            float_params: Vec::new(),
            ret_ty: quote!(_),
            stable_args,
            index_only,
            captured_locals,
            handles,
            replays: Vec::new(),
            copied: Vec::new(),
            views,
            counters: counters::Counters::default(),
            sinks: Vec::new(),
            direct: false,
            stored: Vec::new(),
            fresh: Vec::new(),
            zero_shadow: Vec::new(),
            value_buffers: super::nested::value_buffer_locals(body),
            nested_buffers: super::nested::nested_buffer_locals(body),
            twin_calls: false,
        };
        r.stored = vec![false; body.locals.len()];
        for block in &body.blocks {
            for s in &block.statements {
                if let StatementKind::Assign(p, Rvalue::Use(_)) = &s.kind
                    && let Some(Access::Index(base, _)) = access(p)
                    && r.captured_locals[base.index()]
                    && !r.inactive.bufs[base.index()]
                {
                    r.stored[base.index()] = true;
                }
            }
        }
        r.fresh = r.fresh_stores();
        r.zero_shadow = r.zero_shadows();
        r.replays = (0..body.blocks.len()).map(|b| r.plan_replay(BlockId(b as u32))).collect();
        r.counters = counters::plan(body, structured, &mut r.replays, &r.inactive.ints);
        r.copied = r.replayed(|p| &p.args);
        r.direct = r.direct_sinks();
        let loaded = r.loaded_bases();
        r.sinks = (0..body.locals.len())
            .map(|l| r.copied[l] || (r.direct && loaded[l] && !r.captured_locals[l]))
            .collect();
        r.windows = r.plan_windows(structured);
        for (h, l) in std::mem::take(&mut r.windows.record) {
            let record = r.counters.records.entry(h).or_default();
            if !record.contains(&l) {
                record.push(l);
            }
        }
        r
    }

    /// A value the function holds (see `loaned_locals`).
    pub(super) fn value_local(&self, l: Local) -> bool {
        !self.handles[l.index()] && !self.refs[l.index()]
    }

    /// The buffers whose loads tape only the index and add into a captured shadow.
    pub(super) fn loaded_bases(&self) -> Vec<bool> {
        let mut loaded = vec![false; self.body.locals.len()];
        for block in &self.body.blocks {
            for s in &block.statements {
                if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                    && p.projections.is_empty()
                    && let Some(Access::Index(base, _)) = access(q)
                    && self.index_only[base.index()]
                    && !self.inactive.bufs[base.index()]
                {
                    loaded[base.index()] = true;
                }
            }
        }
        loaded
    }

    /// The locals that some re-run block's plan lists in `part` (see `replay`): the values read
    /// from slots (`snapshots`), the arguments read from copies (`args`).
    pub(super) fn replayed(&self, part: fn(&replay::Replay) -> &Vec<Local>) -> Vec<bool> {
        let mut out = vec![false; self.body.locals.len()];
        for l in self.replays.iter().flatten().flat_map(part) {
            out[l.index()] = true;
        }
        out
    }

    /// Whether the pullback assigns `l` (a re-run block assigns or restores it): a fresh local
    /// there.
    pub(super) fn replayed_local(&self, l: Local) -> bool {
        self.counters.records.values().any(|r| r.contains(&l))
            || self.replays.iter().enumerate().any(|(b, plan)| {
                plan.as_ref().is_some_and(|plan| {
                    plan.ints.contains(&l)
                        || plan.values.contains(&l)
                        || plan.snapshots.contains(&l)
                        || plan.statements.iter().any(|i| {
                            matches!(&self.body.blocks[b].statements[*i].kind,
                            StatementKind::Assign(p, _) if p.projections.is_empty() && p.local == l)
                        })
                })
            })
    }

    /// The statements of block `b` that keep an entry for the reverse sweep (those with a
    /// rule), in order.
    pub(super) fn entries(&self, b: BlockId) -> Vec<usize> {
        self.body.blocks[b.index()]
            .statements
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                matches!(&s.kind, StatementKind::Assign(p, rv)
                    if matches!(kind(p, rv, &self.refs, &self.inactive), Kind::Rule(_) | Kind::RuleArray(_)))
            })
            .map(|(i, _)| i)
            .collect()
    }
}
