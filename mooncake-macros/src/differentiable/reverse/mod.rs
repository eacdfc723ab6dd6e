//! Reverse mode (seed 002): the forward pass and the pullback of a body, from the same IR.
//!
//! This first slice covers bodies over *values* (scalars, integers, `bool`, and calls to other
//! rules): every place is a plain local, and nothing is borrowed. For such a body:
//!
//! * the forward pass is the primal's structured control flow over `CoDual` locals; each
//!   statement with a derivative calls its rule and keeps the pullback: in a single slot
//!   (`Option`) if its block runs at most once, on a typed stack (`Vec`) if its block is inside
//!   a loop;
//! * a block with more than one predecessor pushes the predecessor it was entered from on the
//!   block stack, so the reverse pass knows where to go back to; blocks with one predecessor push
//!   nothing;
//! * the pullback walks the blocks backwards (a `loop { match block { .. } }` state machine:
//!   the reverse of a reducible graph need not be reducible), running each statement's
//!   pullback in reverse order on its local's adjoint and adding the results into the
//!   operands' adjoints. The adjoint of a local is reset when the local is assigned, since the
//!   value it had before does not reach that point.
//!
//! Each local's adjoint has the local's rdata type, fixed through a zero-sized marker that the
//! forward pass assigns beside the local (a marker is always initialised, the local need not
//! be).
//!
//! A call keeps its callee's pullback as the callee's rule returns it (an `impl FnOnce` the
//! compiler can inline). A rule that calls user functions or methods returns its pullback
//! boxed, so that recursion and cycles of mutual recursion do not make a pullback type contain
//! itself (see [`Reverse::boxes_own_pullback`]); leaves stay unboxed.
//! `#[differentiable(recursive)]` boxes every call's pullback as well (no longer needed).

mod control;
mod counters;
mod replay;
mod sinks;

use super::codegen::{Names, rt};
use super::forward::{method_key, rule_path};
use super::ir::*;
use super::parse;
use super::structure::Node;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeSet;

/// Why a (normalised) body is outside the slice reverse mode covers so far, if it is: the name
/// of a type in the runtime's `reverse::unsupported`.
pub(crate) fn unsupported(body: &Body, sig: &parse::Sig) -> Option<(&'static str, Span)> {
    let _ = sig;
    let plain = |p: &Place| p.projections.is_empty();
    // `&r.field` of an argument `r: &T`, `&mut r.field` of an argument `r: &mut T`: lent to a
    // call as the field with its shadow (and its handle, behind `&mut`).
    let field_of_ref = |p: &Place, mutable: bool| {
        matches!(access(p), Some(Access::Field(base, _))
            if body.args().any(|a| a == base)
                && matches!(&body.locals[base.index()].ty,
                    Some(syn::Type::Reference(r)) if r.mutability.is_some() == mutable))
    };
    let operand_ok = |o: &Operand| match o {
        Operand::Use(p) => plain(p),
        Operand::Ref(..) => false,
        Operand::Const(_) => true,
    };
    // What a call (or a method of a user type) may be given: values, borrows of locals, and
    // fields of reference arguments.
    // `&*v` of an argument `v: &mut T`: lent as `&T` for the call.
    let reborrow = |p: &Place| {
        matches!(p.projections.as_slice(), [Projection::Deref])
            && matches!(&body.locals[p.local.index()].ty,
                Some(syn::Type::Reference(r)) if r.mutability.is_some())
            && body.args().any(|a| a == p.local)
    };
    let call_arg_ok = |a: &Operand| {
        operand_ok(a)
            || matches!(a, Operand::Ref(p, _) if plain(p))
            || matches!(a, Operand::Ref(p, m) if field_of_ref(p, *m))
            || matches!(a, Operand::Ref(p, false) if reborrow(p))
    };
    // `a[i][j]`: an element of an element (arrays of arrays, `Vec<Vec<f64>>`).
    let nested = |p: &Place| {
        p.projections.iter().filter(|pr| matches!(pr, Projection::Index(_))).count() > 1
    };
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(place, rv) = &s.kind else { continue };
            let mut places = vec![place];
            for_each_place_ref(rv, &mut |p| places.push(p));
            if places.iter().any(|p| nested(p)) {
                return Some(("NestedIndexing", s.span));
            }
            if !plain(place) {
                // A store: `x[i] = v` or `*x = v`, the value already a plain operand.
                let stored_ok =
                    access(place).is_some() && matches!(rv, Rvalue::Use(o) if operand_ok(o));
                if !stored_ok {
                    return Some(("WritesThroughPlaces", s.span));
                }
                continue;
            }
            let ok = match rv {
                Rvalue::Use(Operand::Use(p)) => plain(p) || load_parts(p).is_some(),
                // A view of a buffer field of a shared-reference argument (`view_fields`).
                Rvalue::Use(Operand::Ref(p, false)) if field_of_ref(p, false) => true,
                Rvalue::Use(o) | Rvalue::Unary(_, o) | Rvalue::Cast(o, _) => operand_ok(o),
                Rvalue::Binary(_, a, b) => operand_ok(a) && operand_ok(b),
                Rvalue::Call { func, args } => {
                    let segs: Vec<String> =
                        func.segments.iter().map(|s| s.ident.to_string()).collect();
                    let vec_ctor = matches!(segs.as_slice(), [v, f] if v == "Vec" && (f == "new" || f == "with_capacity"));
                    let std_path = segs.first().is_some_and(|s| s == "Vec" || s == "std");
                    (vec_ctor || !std_path) && args.iter().all(call_arg_ok)
                }
                Rvalue::Method { receiver, method, args } => {
                    let name = method.to_string();
                    // A buffer method on a buffer field: read-only methods on any reference
                    // argument's field, writing ones behind `&mut`.
                    let field_receiver = matches!(access(receiver), Some(Access::Field(..)))
                        && (BUFFER_METHODS.contains(&name.as_str())
                            || (WRITE_METHODS.contains(&name.as_str())
                                && field_of_ref(receiver, true)));
                    // `copy_from_slice(&src)` reads a buffer argument or a buffer field.
                    let arg_ok = |a: &Operand| {
                        operand_ok(a)
                            || (name == "copy_from_slice"
                                && matches!(a, Operand::Ref(p, false)
                                    if plain(p) || field_of_ref(p, false) || field_of_ref(p, true)))
                    };
                    if reverse_method(&name) {
                        (plain(receiver) || field_receiver) && args.iter().all(arg_ok)
                    } else {
                        // A method of a user type: through `MethodRrule`, which the method's
                        // `#[differentiable] impl` block implements.
                        plain(receiver) && args.iter().all(call_arg_ok)
                    }
                }
                Rvalue::Matches(p, _) => plain(p),
                Rvalue::VecRepeat(a, b) => operand_ok(a) && operand_ok(b),
                Rvalue::VecList(ops) => ops.iter().all(operand_ok),
                Rvalue::Tuple(ops) => ops.iter().all(operand_ok),
                Rvalue::Struct { fields, .. } => fields.iter().all(|(_, o)| operand_ok(o)),
                Rvalue::Array(ops) => ops.iter().all(operand_ok),
                Rvalue::Repeat(o, _) | Rvalue::Convert(_, o) => operand_ok(o),
            };
            if !ok {
                return Some(("BorrowsInLocalsOrStdCalls", s.span));
            }
        }
    }
    None
}

/// The methods the slice differentiates with the runtime's rules: its float and integer
/// methods, and the buffer methods (`__iter_sum` is `x.iter().sum()`). Methods of user types go
/// through their own dispatch.
pub(super) fn reverse_method(name: &str) -> bool {
    NUMBER_METHODS.contains(&name)
        || [
            "len",
            "__iter_sum",
            "push",
            "pop",
            "to_vec",
            "clone",
            "fill",
            "swap",
            "copy_from_slice",
        ]
        .contains(&name)
}

/// The projected places the slice reads and writes: `base[index]` and `*base`, with plain
/// locals.
#[derive(Clone)]
enum Access {
    Index(Local, Local),
    Deref(Local),
    /// A scalar field, through any number of fields (`p.inner.x`).
    Field(Local, Vec<syn::Member>),
    /// An element of a buffer field (`p.w[i]`).
    FieldIndex(Local, Vec<syn::Member>, Local),
}

fn access(p: &Place) -> Option<Access> {
    match p.projections.as_slice() {
        [Projection::Index(i)] => Some(Access::Index(p.local, *i)),
        [Projection::Deref] => Some(Access::Deref(p.local)),
        projections => {
            let (last, fields) = match projections.split_last() {
                Some((Projection::Index(i), rest)) => (Some(*i), rest),
                _ => (None, projections),
            };
            let path: Option<Vec<syn::Member>> = fields
                .iter()
                .map(|pr| match pr {
                    Projection::Field(m) => Some(m.clone()),
                    _ => None,
                })
                .collect();
            match (path, last) {
                (Some(path), None) if !path.is_empty() => Some(Access::Field(p.local, path)),
                (Some(path), Some(i)) if !path.is_empty() => {
                    Some(Access::FieldIndex(p.local, path, i))
                }
                _ => None,
            }
        }
    }
}

/// The fields of `path` as a token path (`.inner.x`).
fn field_path(path: &[syn::Member]) -> TokenStream {
    quote!(#(.#path)*)
}

/// The buffer methods, whose receiver may be a buffer field (`p.w.len()`).
const BUFFER_METHODS: &[&str] = &["len", "__iter_sum", "to_vec", "clone"];

/// The buffer methods that write, whose receiver may be a buffer field of a `&mut` argument
/// (`s.w.push(v)`).
const WRITE_METHODS: &[&str] = &["push", "pop", "fill", "swap", "copy_from_slice"];

fn load_parts(p: &Place) -> Option<Access> {
    access(p)
}

/// Locals that hold references (arguments declared `&T` or `&mut T`, and plain copies of
/// them), and which of those are `&mut`: a field read through one sends its gradient to the
/// field's shadow.
fn ref_locals(body: &Body) -> (Vec<bool>, Vec<bool>) {
    let mut refs = vec![false; body.locals.len()];
    let mut mut_refs = vec![false; body.locals.len()];
    for l in body.args() {
        if let Some(syn::Type::Reference(r)) = &body.locals[l.index()].ty {
            refs[l.index()] = true;
            mut_refs[l.index()] = r.mutability.is_some();
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                    && p.projections.is_empty()
                    && q.projections.is_empty()
                    && refs[q.local.index()]
                    && !refs[p.local.index()]
                {
                    refs[p.local.index()] = true;
                    changed = true;
                }
            }
        }
    }
    (refs, mut_refs)
}

/// `+ - * / %`, unary `-` and `as`: the statements that are arithmetic on floats and carry no
/// derivative on integers.
fn is_arithmetic(rv: &Rvalue) -> bool {
    match rv {
        Rvalue::Binary(op, ..) => op.is_arithmetic(),
        Rvalue::Unary(UnOp::Neg, _) | Rvalue::Cast(..) => true,
        _ => false,
    }
}

/// The integer types, whose arithmetic has no derivative.
const INT_TYPES: &[&str] =
    &["usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128"];

fn is_int_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| INT_TYPES.iter().any(|t| i == t)))
}

/// An integer literal: unsuffixed (Rust never gives one a float type) or with an integer suffix.
fn is_int_literal(c: &TokenStream) -> bool {
    syn::parse2::<syn::LitInt>(c.clone())
        .is_ok_and(|l| l.suffix().is_empty() || INT_TYPES.contains(&l.suffix()))
}

/// What syntax alone tells of the locals that carry no derivative.
pub(crate) struct Inactive {
    /// Locals known to be integers: declared with an integer type, assigned an integer literal,
    /// a `len()`, a cast to an integer type, arithmetic with an integer operand (Rust has no
    /// mixed integer / float arithmetic, and a local has one type), or an element of an integer
    /// buffer. Their arithmetic statements get no reverse code: no pullback, no tape. The other
    /// integers keep their rules, whose pullbacks carry `NoRData`.
    ints: Vec<bool>,
    /// Buffers known to hold integers, `bool`s or `char`s (`&[usize]`, `vec![0usize; n]`,
    /// `vec![false; n]`, a `Vec<usize>` grown by `push`): a load from one is a plain read, with
    /// no rule, no tape and no adjoint.
    bufs: Vec<bool>,
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
fn is_flag_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| i == "bool" || i == "char"))
}

/// A `bool` or `char` literal.
fn is_flag_literal(c: &TokenStream) -> bool {
    matches!(syn::parse2::<syn::Lit>(c.clone()), Ok(syn::Lit::Bool(_) | syn::Lit::Char(_)))
}

fn inactive_locals(body: &Body) -> Inactive {
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
                            if (method == "to_vec" || method == "clone")
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
                        if method == "push" && receiver.projections.is_empty() =>
                    {
                        match args.as_slice() {
                            [v] => Some((receiver.local.index(), int_operand(v), flag_operand(v))),
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
    let bufs = int_bufs.iter().zip(&flag_bufs).map(|(a, b)| *a || *b).collect();
    Inactive { ints, bufs }
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

/// Rewrites a body for reverse mode: a borrow of a buffer element that is only read (`for v in
/// x.iter()`) becomes a load of the element, dereferences of such locals disappear, and every
/// read through a projection becomes a load statement of its own, so that each load has a rule
/// and a pullback.
pub(crate) fn normalise(body: &Body) -> Body {
    let mut out = body.clone();
    // 1. Locals that only ever hold a shared borrow of a buffer element.
    let mut elem_ref = vec![false; out.locals.len()];
    let mut other = vec![false; out.locals.len()];
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
                    _ => other[p.local.index()] = true,
                }
            }
        }
    }
    for (e, o) in elem_ref.iter_mut().zip(&other) {
        *e &= !*o;
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
                hoist(&mut inner, &mut locals, &mut statements);
                statements.push(inner);
            }
            hoist(&mut s, &mut locals, &mut statements);
            statements.push(s);
        }
        b.statements = statements;
    }
    out.locals = locals;
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
    hold_buffers(&mut out);
    reuse_loads(&mut out);
    hoist_field_loads(&mut out);
    view_fields(&mut out);
    out
}

/// An assertion's or panic's reads of a local that held an element borrow and now holds the
/// element (`*e`, `e.is_finite()` of `for e in x.iter()`) read a borrow of it: `(&e)`, a
/// reference as in the primal.
fn borrow_markers(tokens: TokenStream, elem_ref: &[bool]) -> TokenStream {
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
fn shared_stable_arg(body: &Body, l: Local) -> bool {
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
fn view_fields(body: &mut Body) {
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

/// The field views of a normalised body (see [`view_fields`]): `(view, base, field path)`.
fn field_views(body: &Body) -> Vec<(Local, Local, Vec<syn::Member>)> {
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

/// 6. A field `p.f` read inside a loop from a shared-reference argument the body never
///    reassigns is read once, at entry: it cannot change while the rule runs, and reading a
///    field cannot fail. The loop then keeps no tape entry for it, and a block that reads it
///    can be run again in the reverse sweep (it becomes a value assigned once, outside loops).
fn hoist_field_loads(body: &mut Body) {
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
fn reuse_loads(body: &mut Body) {
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
fn buffer_arg(body: &Body, l: Local) -> bool {
    body.args().any(|a| a == l)
        && body.locals[l.index()]
            .ty
            .as_ref()
            .is_some_and(|t| !matches!(t, syn::Type::Reference(_)) && buffer_element(t).is_some())
}

/// The locals of a normalised body held through handles: `&mut` arguments, buffer arguments
/// by value, buffers built or held, and copies of them.
fn handle_locals(body: &Body) -> Vec<bool> {
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

/// A value the rules return already held through a handle: a buffer built in the body, or a
/// conversion into one.
fn builds_handle(rv: &Rvalue) -> bool {
    match rv {
        Rvalue::VecRepeat(..) | Rvalue::VecList(_) | Rvalue::Array(_) | Rvalue::Repeat(..) => true,
        Rvalue::Call { func, .. } => {
            func.segments.len() == 2
                && func.segments[0].ident == "Vec"
                && (func.segments[1].ident == "new" || func.segments[1].ident == "with_capacity")
        }
        Rvalue::Method { method, .. } => method == "to_vec" || method == "clone",
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
fn hold_buffers(body: &mut Body) {
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
                    if ["len", "__iter_sum", "to_vec", "clone"].contains(&name.as_str()) {
                        used[r] = true;
                    }
                    if ["push", "pop", "fill", "swap", "copy_from_slice"].contains(&name.as_str()) {
                        used[r] = true;
                        mutated[r] = true;
                    }
                    if name == "copy_from_slice"
                        && let [Operand::Use(q) | Operand::Ref(q, _)] = args.as_slice()
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
                            } else if mutated[l.index()] || mutated[m] {
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
fn hoist(s: &mut Statement, locals: &mut Vec<LocalDecl>, statements: &mut Vec<Statement>) {
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
}

fn for_each_operand(rv: &mut Rvalue, f: &mut dyn FnMut(&mut Operand)) {
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
fn for_each_place_ref<'r>(rv: &'r Rvalue, f: &mut dyn FnMut(&'r Place)) {
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

fn operand_place<'r>(o: &'r Operand, f: &mut dyn FnMut(&'r Place)) {
    if let Operand::Use(p) | Operand::Ref(p, _) = o {
        f(p)
    }
}

fn for_each_place(rv: &mut Rvalue, f: &mut dyn FnMut(&mut Place)) {
    if let Rvalue::Method { receiver, .. } | Rvalue::Matches(receiver, _) = rv {
        f(receiver);
    }
    for_each_operand(rv, &mut |o| {
        if let Operand::Use(p) | Operand::Ref(p, _) = o {
            f(p)
        }
    });
}

/// How a statement is transformed.
enum Kind {
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

fn operand_local(o: &Operand) -> Option<Local> {
    match o {
        Operand::Use(p) if p.projections.is_empty() => Some(p.local),
        _ => None,
    }
}

fn kind(place: &Place, rv: &Rvalue, refs: &[bool], inactive: &Inactive) -> Kind {
    let ints = &inactive.ints;
    // A read or a sum of an integer or `bool` buffer: no derivative.
    if place.projections.is_empty()
        && let Rvalue::Use(Operand::Use(q)) = rv
        && let Some(Access::Index(base, _)) = access(q)
        && inactive.bufs[base.index()]
    {
        return Kind::NoDerivative;
    }
    if let Rvalue::Method { receiver, method, .. } = rv
        && method == "__iter_sum"
        && receiver.projections.is_empty()
        && inactive.bufs[receiver.local.index()]
    {
        return Kind::NoDerivative;
    }
    // Operands behind references keep their rules, which add into shadows.
    let by_value = |o: &Operand| match o {
        Operand::Use(p) => p.projections.is_empty() && !refs[p.local.index()],
        Operand::Const(_) => true,
        Operand::Ref(..) => false,
    };
    if place.projections.is_empty() && !ints[place.local.index()] {
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
        && method == "len"
        && args.is_empty()
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

/// `call` inside `rev::lend` for each loan: a buffer held through a handle, or a value the
/// function holds (with a fresh shadow), lent for the call only. Without loans, the call; with
/// them, `(output, pullback, (what each loan gives back, ..))`, the last for the reverse pass
/// (`rev::give_back`).
fn lend(call: TokenStream, loans: Vec<(syn::Ident, syn::Ident, bool)>, span: Span) -> TokenStream {
    if loans.is_empty() {
        return call;
    }
    let rt = rt();
    let mut nested = call;
    let mut pat = quote!((__o, __pb));
    let backs: Vec<syn::Ident> =
        (0..loans.len()).map(|k| format_ident!("__bk{}", k, span = Span::mixed_site())).collect();
    for ((l, b, mutable), bk) in loans.iter().zip(&backs).rev() {
        nested = if *mutable {
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

/// The locals `&v` and `&mut v` lend to a call or a user method (see [`lend`]), in argument
/// order, each with whether it is lent mutably (`&mut v` of a value the function holds, which
/// `lent_mut` tells: buffers held through handles are passed as they are).
fn loaned_locals(rv: &Rvalue, lent_mut: &dyn Fn(Local) -> bool) -> Vec<(Local, bool)> {
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
fn receiver_lent(rv: &Rvalue, value_local: &dyn Fn(Local) -> bool) -> bool {
    matches!(rv, Rvalue::Method { receiver, method, args }
        if !reverse_method(&method.to_string())
            && receiver.projections.is_empty()
            && value_local(receiver.local)
            && args.iter().any(|a| matches!(a, Operand::Ref(q, false)
                if q.local == receiver.local && q.projections.is_empty())))
}

/// The blocks that can run more than once per call: those on a cycle of the control-flow
/// graph. (The structured program may place code that runs once inside a loop's node, as the
/// arm that leaves it: such code is not in a loop here.)
fn blocks_in_loops(body: &Body) -> BTreeSet<BlockId> {
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

pub(crate) struct Reverse<'a> {
    body: &'a Body,
    names: &'a Names,
    in_loop: BTreeSet<BlockId>,
    /// Locals with an adjoint.
    adjoint: Vec<bool>,
    /// Locals that hold references.
    refs: Vec<bool>,
    /// Arguments declared `&mut T`, seen through handles.
    mut_refs: Vec<bool>,
    /// Integers and buffers of integers or `bool`s (see [`Inactive`]).
    inactive: Inactive,
    /// `#[differentiable(recursive)]`: every call boxes its pullback.
    box_all_calls: bool,
    /// Whether tapes come from thread-local pools (`rev::take_tape`): only in functions without
    /// type or const parameters, since a pooled tape's type must be `'static` and a `static`
    /// cannot depend on a parameter.
    pub(crate) pool_tapes: bool,
    /// The result's `CoDual` type.
    pub(crate) ret_ty: TokenStream,
    /// Arguments the body never assigns: a load `x[i]` of one tapes only `i`, and its adjoint
    /// goes into the argument's shadow, captured once per call (see [`shadow_capture`]).
    stable_args: Vec<bool>,
    /// Buffers whose loads `x[i]` tape only `i` and add their adjoint into a shadow captured
    /// once: the stable arguments, and handles assigned once outside loops (their shadow is
    /// captured into a slot when they are assigned: see [`shadow_capture`]).
    index_only: Vec<bool>,
    /// The locals of `index_only` that are not arguments.
    captured_locals: Vec<bool>,
    /// Locals held through handles (`&mut` arguments, buffers built or held): an assertion
    /// reads them through `rev::view`.
    handles: Vec<bool>,
    /// The blocks the reverse sweep runs again instead of taping them (see `replay`).
    replays: Vec<Option<replay::Replay>>,
    /// The arguments those blocks read from copies made at entry.
    copied: Vec<bool>,
    /// Views of buffer fields of shared-reference arguments, made at entry (`view_fields`):
    /// `(view, base, field path)`.
    views: Vec<(Local, Local, Vec<syn::Member>)>,
    /// The integers the loops record for their re-run blocks (see `counters`).
    counters: counters::Counters,
    /// The arguments whose loads add their adjoints into a sink (see `sinks`).
    sinks: Vec<bool>,
    /// Buffers built in the body whose stores `x[i] = v` tape a plain record and are undone
    /// inline (`rev::store_at`): the handles of `captured_locals`.
    stored: Vec<bool>,
    /// Whether those sinks may borrow the shadows directly (see `sinks`).
    direct: bool,
    /// Set while generating: whether the body calls a function or a method of a user type
    /// (whose rule may call this one back; see [`Reverse::boxes_own_pullback`]).
    calls_out: std::cell::Cell<bool>,
}

/// The slot holding the handle of a buffer built in the body whose stores are undone inline
/// (see `rev::primal_handle`).
fn primal_capture(l: Local) -> syn::Ident {
    format_ident!("__hp{}", l.0, span = Span::mixed_site())
}

/// The local holding the shadow of argument `l`, captured once per call.
fn shadow_capture(l: Local) -> syn::Ident {
    format_ident!("__sh{}", l.0, span = Span::mixed_site())
}

/// What statement `s.1` of block `s.0` keeps for the reverse sweep (its pullback, or an index),
/// a local of the forward sweep put on its block's tape (see [`block_tape`]).
fn tape(s: (usize, usize)) -> syn::Ident {
    format_ident!("__t{}_{}", s.0, s.1, span = Span::mixed_site())
}

/// The slot of a value a re-run block reads, assigned once outside loops (see `replay`).
fn snapshot_slot(l: Local) -> syn::Ident {
    format_ident!("__snap{}", l.0, span = Span::mixed_site())
}

/// The memory of the sink of an argument's loads (see `sinks`).
fn accumulator(l: Local) -> syn::Ident {
    format_ident!("__acc{}", l.0, span = Span::mixed_site())
}

/// The copy of an argument a re-run block reads (see `replay`).
fn replay_copy(l: Local) -> syn::Ident {
    format_ident!("__cp{}", l.0, span = Span::mixed_site())
}

/// The record of the loop with header `h` (see `counters`): a tape for a loop inside a loop, a
/// slot for one outside.
fn loop_tape(h: BlockId) -> syn::Ident {
    format_ident!("__tx{}", h.0, span = Span::mixed_site())
}

/// The value a recorded integer had at the start of a re-run block (see `counters`).
fn start_value(l: Local) -> syn::Ident {
    format_ident!("__st{}", l.0, span = Span::mixed_site())
}

/// The tape of block `b` (a slot outside loops): per execution, the tuple of its statements'
/// entries.
fn block_tape(b: BlockId) -> syn::Ident {
    format_ident!("__tb{}", b.0, span = Span::mixed_site())
}

/// The slot holding what the reverse pass of a `return` needs (see `rev::AsResult`).
fn return_link(s: (usize, usize)) -> syn::Ident {
    format_ident!("__rl{}_{}", s.0, s.1, span = Span::mixed_site())
}

/// The type marker of the local a `return` returns.
fn return_type(s: (usize, usize)) -> syn::Ident {
    format_ident!("__rt{}_{}", s.0, s.1, span = Span::mixed_site())
}

/// The thread-local pool of a tape (see `rev::take_tape`).
fn pool(s: (usize, usize)) -> syn::Ident {
    format_ident!("__POOL{}_{}", s.0, s.1, span = Span::mixed_site())
}

fn adj(l: Local) -> syn::Ident {
    format_ident!("__a{}", l.0, span = Span::mixed_site())
}

/// The const parameter of `NAME_rrule_wrt` whose bits say which arguments get a gradient (see
/// `rev::Wrt`).
pub(crate) fn wrt_mask() -> syn::Ident {
    format_ident!("__WRT", span = Span::mixed_site())
}

fn marker(l: Local) -> syn::Ident {
    format_ident!("__m{}", l.0, span = Span::mixed_site())
}

impl Reverse<'_> {
    /// The argument (counted from 0) whose shadow `l`'s is: an argument's own, or a view of a
    /// field of one.
    fn arg_root(&self, l: Local) -> Option<u32> {
        if (1..=self.body.n_args).contains(&l.index()) {
            return Some(l.0 - 1);
        }
        let (_, base, _) = self.views.iter().find(|(v, _, _)| *v == l)?;
        self.arg_root(*base)
    }

    /// Whether the gradient of argument `l` is wanted: a constant under the rule's mask (see
    /// `rev::Wrt`).
    fn live_arg(&self, l: Local) -> TokenStream {
        let rt = rt();
        let (k, mask) = (l.0 - 1, wrt_mask());
        quote!(#rt::rev::live(#mask, #k))
    }

    /// Whether adds into `l`'s shadow may be skipped when its argument's gradient is not
    /// wanted (see [`Self::live_arg`]): `None` unless the shadow is that of an argument the body
    /// never writes (or a view of one of its fields), which then only collects the gradient:
    /// nothing the sweep reads flows through it.
    fn live(&self, l: Local) -> Option<TokenStream> {
        let root = Local(self.arg_root(l)? + 1);
        let collects_only = self.stable_args[root.index()] && !self.mut_refs[root.index()];
        collects_only.then(|| self.live_arg(root))
    }

    /// `add` (an addition into argument memory of the adjoint in `ax`), done only when that
    /// argument's gradient is wanted; the adjoint is consumed either way.
    fn guard_arg_add(&self, base: Local, ax: &syn::Ident, add: TokenStream) -> TokenStream {
        let rt = rt();
        match self.live(base) {
            Some(live) => quote!(if #live { #add } else { let _ = #rt::rev::take(&mut #ax); }),
            None => add,
        }
    }
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
            pool_tapes: false,
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
        };
        r.replays = (0..body.blocks.len()).map(|b| r.plan_replay(BlockId(b as u32))).collect();
        r.counters = counters::plan(body, structured, &mut r.replays, &r.inactive.ints);
        r.copied = r.replayed(|p| &p.args);
        r.direct = r.direct_sinks();
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
        let loaded = r.loaded_bases();
        r.sinks = (0..body.locals.len())
            .map(|l| r.copied[l] || (r.direct && loaded[l] && !r.captured_locals[l]))
            .collect();
        r
    }

    /// A value the function holds (see `loaned_locals`).
    fn value_local(&self, l: Local) -> bool {
        !self.handles[l.index()] && !self.refs[l.index()]
    }

    /// The buffers whose loads tape only the index and add into a captured shadow.
    fn loaded_bases(&self) -> Vec<bool> {
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
    fn replayed(&self, part: fn(&replay::Replay) -> &Vec<Local>) -> Vec<bool> {
        let mut out = vec![false; self.body.locals.len()];
        for l in self.replays.iter().flatten().flat_map(part) {
            out[l.index()] = true;
        }
        out
    }

    /// Whether the pullback assigns `l` (a re-run block assigns or restores it): a fresh local
    /// there.
    fn replayed_local(&self, l: Local) -> bool {
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

    /// An assertion's or a panic's tokens with each local's primal value: through
    /// `rev::view` for a local held through a handle.
    fn substitute_primals(&self, tokens: TokenStream) -> TokenStream {
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

    /// The statements of block `b` that keep an entry for the reverse sweep (those with a
    /// rule), in order.
    fn entries(&self, b: BlockId) -> Vec<usize> {
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

    fn codual_operand(&self, o: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #l)
            }
            Operand::Const(c) => quote_spanned!(span=> #rt::rev::constant(#c)),
            Operand::Ref(..) => quote!(::core::unreachable!()),
        }
    }

    /// An operand moved into a tuple or a struct: a local is passed (cloned: a copy for values,
    /// an `Rc` increment for shadows), a constant built.
    fn passed_operand(&self, o: &Operand, span: Span) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #rt::rev::pass(&#l))
            }
            other => self.codual_operand(other, span),
        }
    }

    fn primal_operand(&self, o: &Operand, span: Span) -> TokenStream {
        match o {
            Operand::Use(p) => {
                let l = self.names.local(p.local);
                quote_spanned!(span=> #l.primal)
            }
            Operand::Const(c) => quote_spanned!(span=> (#c)),
            Operand::Ref(..) => quote!(::core::unreachable!()),
        }
    }

    /// The forward-pass code of a pure statement (see `replay`) of a block the reverse sweep
    /// runs again: its primal value only, with no rule and no pullback.
    fn forward_primal_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let span = s.span;
        let StatementKind::Assign(place, rv) = &s.kind else {
            return self.forward_statement(b, i, s);
        };
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
            Operand::Const(c) => c.clone(),
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
                let args = args.iter().map(arg);
                quote_spanned!(span=> #r.primal.#method(#(#args),*))
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
    fn forward_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
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
            let value = match rv {
                Rvalue::Binary(op, a, c) => {
                    let (pa, pc) = (self.primal_operand(a, span), self.primal_operand(c, span));
                    if *op == BinOp::Sub { quote!(#pa - #pc) } else { quote!(#pa + #pc) }
                }
                Rvalue::Unary(_, a) => {
                    let pa = self.primal_operand(a, span);
                    quote!(-#pa)
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
                    return quote_spanned!(span=>
                        #x = #rt::CoDual::new(#rt::rev::read_at(&#b_, #i_.primal), #rt::NoFData);
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
                return no_derivative(quote!(::core::matches!(#y.primal, #pat)));
            }
            Rvalue::Convert(c, o) => {
                let v = self.codual_operand(o, span);
                let call = match c {
                    Conversion::Hold => {
                        quote_spanned!(span=> #rt::rev::hold_rrule(#rt::rev::pass(&#v)))
                    }
                    Conversion::Release => quote_spanned!(span=> #rt::rev::release_rrule(&#v)),
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
                let (a, c) = (self.codual_operand(a, span), self.codual_operand(c, span));
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
                let a = self.codual_operand(a, span);
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
                let (v, n) = (self.codual_operand(v, span), self.codual_operand(n, span));
                (quote_spanned!(span=> #rt::rules::buffer::vec_filled_rrule #elem(#v, #n)), false)
            }
            // An array built in the body is held through a handle, like a `Vec`.
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
                (
                    quote_spanned!(span=> {
                        #(let #vars = #vals;)*
                        #rt::rules::buffer::vec_from_array_rrule #elem_n(#rt::CoDual::new([#(#vars.primal),*], [#rt::NoFData; #n]))
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
                    let rule = rule_path(func, "rrule");
                    let (args, loans) = self.call_arguments(args, span);
                    has_loans = !loans.is_empty();
                    let call = lend(quote_spanned!(span=> #rule(#(#args),*)), loans, span);
                    self.calls_out.set(true);
                    // A call of itself needs no box here: the rule boxes its own pullback.
                    (call, self.box_all_calls)
                }
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
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::to_vec_rrule(#rt::rev::as_read(&#r))),
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
            Rvalue::Method { receiver, method, args } if args.is_empty() && method == "pop" => {
                let r = self.buffer_receiver(receiver, span);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::pop_rrule(#rt::rev::as_write(&#r))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 1 && method == "push" => {
                let r = self.buffer_receiver(receiver, span);
                let v = self.codual_operand(&args[0], span);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::push_rrule(#rt::rev::as_write(&#r), #v)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if reverse_method(&method.to_string()) => {
                // A float or integer method of the runtime.
                let r = self.names.local(receiver.local);
                let key = method_key(&method.to_string());
                let args = args.iter().map(|a| self.codual_operand(a, span));
                let recv_name = syn::Ident::new("__mooncake_receiver", method.span());
                let trait_path =
                    quote_spanned!(method.span()=> ::mooncake_runtime::__private::rev::MethodRrule);
                (
                    quote_spanned!(method.span()=> {
                        let #recv_name = #r;
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
                    loans.push((r, loan.clone(), false));
                    (quote!(#held), quote!(let mut #held = #loan;))
                } else {
                    (quote_spanned!(span=> #r), quote!())
                };
                has_loans = !loans.is_empty();
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
    fn call_arguments(
        &self,
        args: &[Operand],
        span: Span,
    ) -> (Vec<TokenStream>, Vec<(syn::Ident, syn::Ident, bool)>) {
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
    fn call_argument_parts(
        &self,
        args: &[Operand],
        span: Span,
    ) -> (
        Vec<(TokenStream, Box<dyn Fn(&syn::Ident) -> TokenStream>)>,
        Vec<(syn::Ident, syn::Ident, bool)>,
    ) {
        let rt = rt();
        let rewrap = {
            let rt = rt.clone();
            move |c: &syn::Ident| quote_spanned!(span=> #rt::CoDual::new(#c.primal, #c.fdata))
        };
        let mut loans = Vec::new();
        let args = args
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let v = match a {
                    // `&r.field` of `r: &T`, `&mut r.field` of `r: &mut T`.
                    Operand::Ref(p, _) if let Some(Access::Field(base, path)) = access(p) => {
                        self.field_view(base, &path, span)
                    }
                    // A `&mut` argument passed on: to a `&mut` parameter as it is; to a `&`
                    // one, refused with a message (`rev::MutArg`).
                    Operand::Use(p)
                        if p.projections.is_empty() && self.mut_refs[p.local.index()] =>
                    {
                        let l = self.names.local(p.local);
                        let value =
                            quote_spanned!(span=> #rt::rev::MutArg::new(#rt::rev::pass(&#l)));
                        let finish: Box<dyn Fn(&syn::Ident) -> TokenStream> =
                            Box::new(move |c| quote_spanned!(span=> #c.into_param()));
                        return (value, finish);
                    }
                    // `&mut v` of a value the function holds: lent through a fresh handle,
                    // read back after the call (`rev::lend_mut`).
                    Operand::Ref(p, true)
                        if p.projections.is_empty() && self.value_local(p.local) =>
                    {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        loans.push((self.names.local(p.local), b.clone(), true));
                        quote_spanned!(span=> #b)
                    }
                    Operand::Use(p) | Operand::Ref(p, true) => {
                        let l = self.names.local(p.local);
                        quote_spanned!(span=> #rt::rev::pass(&#l))
                    }
                    Operand::Ref(p, false) => {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        loans.push((self.names.local(p.local), b.clone(), false));
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

    /// A buffer method's receiver: a local, or a view of a buffer field (`p.w`).
    fn buffer_receiver(&self, receiver: &Place, span: Span) -> TokenStream {
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
    fn field_view(&self, base: Local, path: &[syn::Member], span: Span) -> TokenStream {
        self.view(self.mut_refs[base.index()], base, path, span)
    }

    /// [`Self::field_view`] with the choice made by the caller: stores always go through the
    /// field's handle.
    fn view(&self, handle: bool, base: Local, path: &[syn::Member], span: Span) -> TokenStream {
        let rt = rt();
        let (b, f) = (self.names.local(base), field_path(path));
        if handle {
            quote_spanned!(span=> #rt::rev::handle_view(&#b.primal #f, &#b.fdata #f))
        } else {
            quote_spanned!(span=> #rt::rev::field_view(&#b.primal #f, &#b.fdata #f))
        }
    }

    /// The forward-pass code of a store `x[i] = v` or `*x = v` (statement `i` of block `b`).
    fn forward_store(
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
            Some(Access::Index(base, index)) if self.stored[base.index()] => {
                // A record on the tape, undone inline (see `rev::store_at`).
                let (base, index) = (self.names.local(base), self.names.local(index));
                let t = tape((b.index(), i));
                return quote_spanned!(span=> let #t = #rt::rev::store_at(&#base, #index.primal, #v););
            }
            Some(Access::Index(base, index)) => {
                let (base, index) = (self.names.local(base), self.names.local(index));
                quote_spanned!(span=> #rt::rules::buffer::index_set_rrule(#rt::rev::as_write(&#base), #index, #v))
            }
            Some(Access::Deref(base)) => {
                let base = self.names.local(base);
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

    /// The reverse-pass code of statement `i` of block `b`.
    fn reverse_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let StatementKind::Assign(place, rv) = &s.kind else {
            return quote!();
        };
        let ax = adj(place.local);
        let store = !place.projections.is_empty();
        if let Some(Access::Index(base, _)) = access(place)
            && self.stored[base.index()]
            && let Rvalue::Use(value) = rv
        {
            // A store into a buffer built in the body, undone from its record (see
            // `rev::unstore_at`).
            let (t, sh, hp) = (tape((b.index(), i)), shadow_capture(base), primal_capture(base));
            let give = match value {
                Operand::Use(v) if v.projections.is_empty() && self.adjoint[v.local.index()] => {
                    let av = adj(v.local);
                    quote!(#rt::rev::accumulate(&mut #av, __r);)
                }
                _ => quote!(let _ = __r;),
            };
            return quote!({ let __r = #rt::rev::unstore_at(&#hp, &#sh, #t); #give });
        }
        if let (true, Rvalue::Use(Operand::Use(p))) = (place.projections.is_empty(), rv)
            && let Some(Access::Index(base, _)) = access(p)
            && self.index_only[base.index()]
            && !self.inactive.bufs[base.index()]
        {
            // A load of a stable argument: the index from the tape, the adjoint into the
            // shadow captured at entry.
            let t = tape((b.index(), i));
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
                    Some(l) => {
                        let al = adj(*l);
                        quote!(#rt::rev::accumulate(&mut #al, __r.#m);)
                    }
                    None => quote!(let _ = __r.#m;),
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
                    let al = adj((*l)?);
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
                        Some(l) => {
                            let al = adj(*l);
                            quote!(#rt::rev::accumulate(&mut #al, #part);)
                        }
                        None => quote!(let _ = #part;),
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
                        let ar = adj(receiver.local);
                        quote!(#seed, #rt::rev::take(&mut #ar))
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

    /// The statements of the forward pass and the pullback's block dispatch.
    pub(crate) fn generate(&self, structured: &Node) -> (TokenStream, TokenStream, TokenStream) {
        let rt = rt();
        let body = self.body;
        let mut control = control::Control::new(structured);
        // Buffers built in the body (held through handles): a loop that only loads from one
        // borrows it once, and one whose reverse only adds into its shadow borrows that once.
        let handles: Vec<Local> = (0..body.locals.len())
            .map(|l| Local(l as u32))
            .filter(|l| self.handles[l.index()])
            .collect();
        control.guards = control::Guards {
            reads: handles.iter().map(|l| self.names.local(*l)).collect(),
            adds: handles.iter().map(|l| shadow_capture(*l)).collect(),
        };
        // The shadows of stable arguments that loads read, captured once per call, and of
        // buffers built in the body that loads read or stores write.
        let mut captured = self.loaded_bases();
        for (l, s) in self.stored.iter().enumerate() {
            captured[l] |= *s;
        }
        let snapshots = self.replayed(|p| &p.snapshots);
        let stmts = |b: BlockId| {
            let block = &body.blocks[b.index()];
            let replayed = self.replays[b.index()].is_some();
            let s = block.statements.iter().enumerate().map(|(i, s)| {
                // A block the reverse sweep runs again keeps nothing: the primal alone.
                let code = if replayed {
                    self.forward_primal_statement(b, i, s)
                } else {
                    self.forward_statement(b, i, s)
                };
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
                // loop that it reads are taped, at its start.
                let start = if plan.ints.is_empty() && plan.values.is_empty() {
                    quote!()
                } else {
                    let (t, ints) = (block_tape(b), plan.ints.iter().map(|l| self.names.local(*l)));
                    let values = plan.values.iter().map(|l| self.names.local(*l));
                    quote!(#t.push((#(#ints.primal,)* #(#rt::rev::pass(&#values),)*));)
                };
                return quote!(#start #(#s)*);
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
        };
        let exit = |b: BlockId| {
            let t = &body.blocks[b.index()].terminator;
            match &t.kind {
                TerminatorKind::Panic(tokens) => {
                    let tokens = self.substitute_primals(tokens.clone());
                    quote_spanned!(t.span=> #tokens;)
                }
                _ => quote!(),
            }
        };
        let cond = |l: Local| {
            let l = self.names.local(l);
            quote!(#l.primal)
        };
        // Where a loop exits, the integers its re-run blocks read (see `counters`).
        let loop_exit = |h: BlockId| {
            let Some(record) = self.counters.records.get(&h) else { return quote!() };
            let (t, xs) = (loop_tape(h), record.iter().map(|l| self.names.local(*l)));
            if self.counters.nested.contains(&h) {
                quote!(#t.push((#(#xs.primal,)*));)
            } else {
                quote!(#t = ::core::option::Option::Some((#(#xs.primal,)*));)
            }
        };
        let code = control.forward(structured, &stmts, &exit, &cond, &loop_exit);

        // Tapes and markers.
        let mut decls = Vec::new();
        let mut give_back = Vec::new();
        // One tape per block inside a loop (one slot per block outside), holding per execution
        // the tuple of its statements' entries.
        for bi in 0..body.blocks.len() {
            let b = BlockId(bi as u32);
            let has_tape = match &self.replays[bi] {
                Some(plan) => !plan.ints.is_empty() || !plan.values.is_empty(),
                None => !self.entries(b).is_empty(),
            };
            if !has_tape {
                continue;
            }
            let t = block_tape(b);
            if self.in_loop.contains(&b) {
                if self.pool_tapes {
                    let p = pool((bi, 0));
                    decls.push(quote!(
                        ::std::thread_local! {
                            static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                        }
                        let mut #t = #rt::rev::take_tape(&#p);
                    ));
                    give_back.push(quote!(#rt::rev::give_tape(&#p, #t);));
                } else {
                    decls.push(quote!(let mut #t = ::std::vec::Vec::new();));
                }
            } else {
                decls.push(quote!(let mut #t = ::core::option::Option::None;));
            }
        }
        // The loops' records (see `counters`): a tape for a loop inside a loop, pooled like
        // the blocks' tapes; a slot for one outside.
        for h in self.counters.records.keys() {
            let t = loop_tape(*h);
            if !self.counters.nested.contains(h) {
                decls.push(quote!(let mut #t = ::core::option::Option::None;));
            } else if self.pool_tapes {
                let p = pool((h.index(), 1));
                decls.push(quote!(
                    ::std::thread_local! {
                        static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                    }
                    let mut #t = #rt::rev::take_tape(&#p);
                ));
                give_back.push(quote!(#rt::rev::give_tape(&#p, #t);));
            } else {
                decls.push(quote!(let mut #t = ::std::vec::Vec::new();));
            }
        }
        for (bi, block) in body.blocks.iter().enumerate() {
            for (i, s) in block.statements.iter().enumerate() {
                if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                    && p.local == Local::RETURN
                    && p.projections.is_empty()
                    && q.projections.is_empty()
                {
                    let (link, ty) = (return_link((bi, i)), return_type((bi, i)));
                    decls.push(quote!(
                        let mut #link = ::core::option::Option::None;
                        let mut #ty = ::core::marker::PhantomData;
                    ));
                }
            }
        }
        for l in 0..body.locals.len() {
            if self.adjoint[l] {
                let m = marker(Local(l as u32));
                decls.push(quote!(let mut #m = ::core::marker::PhantomData;));
            }
        }
        for l in body.args() {
            let (m, x) = (marker(l), self.names.local(l));
            decls.push(quote!(#m = #rt::rev::marker(&#x);));
        }
        // The control tape (see `control`): pooled like the statements' tapes.
        let ctl = if !control.needs_tape() {
            quote!()
        } else if self.pool_tapes {
            let p = pool((usize::MAX, 0));
            give_back.push(quote!(#rt::rev::give_tape(&#p, __ctl);));
            quote!(
                ::std::thread_local! {
                    static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                }
                let mut __ctl: ::std::boxed::Box<::std::vec::Vec<usize>> = #rt::rev::take_tape(&#p);
            )
        } else {
            quote!(let mut __ctl: ::std::vec::Vec<usize> = ::std::vec::Vec::new();)
        };
        // Arrays passed by value are held through a handle, like buffers built in the body, so
        // that the buffer rules apply; their gradient, gathered in the handle's shadow, is
        // returned as rdata at the end of the pullback.
        let to_handles = body.args().filter(|l| buffer_arg(body, *l)).map(|l| {
            let x = self.names.local(l);
            if matches!(body.locals[l.index()].ty, Some(syn::Type::Array(_))) {
                quote!(let mut #x = #rt::rev::array_into_handle(#x);)
            } else {
                // A `Vec` by value: its shadow stays the caller's.
                quote!(let mut #x = #rt::rev::into_handle(#x);)
            }
        });
        // Arguments the re-run blocks read (see `replay`): copied at entry, seen as themselves
        // (with their shadows) in the pullback.
        let copied = &self.copied;
        for (l, c) in copied.iter().enumerate() {
            captured[l] |= *c;
        }
        // A handle assigned in the body has its shadow captured into a slot when it is
        // assigned (see `stmts`), taken out at the start of the pullback.
        let mut slot_captures = Vec::new();
        let captures: Vec<TokenStream> = (0..body.locals.len())
            .filter(|l| captured[*l])
            .map(|l| {
                let (x, sh) = (self.names.local(Local(l as u32)), shadow_capture(Local(l as u32)));
                if self.captured_locals[l] {
                    slot_captures.push(quote!(let #sh = #rt::rev::captured_shadow(#sh);));
                    if self.stored[l] {
                        let hp = primal_capture(Local(l as u32));
                        slot_captures.push(quote!(let #hp = #rt::rev::captured_shadow(#hp);));
                        return quote!(
                            let mut #sh = ::core::option::Option::None;
                            let mut #hp = ::core::option::Option::None;
                        );
                    }
                    quote!(let mut #sh = ::core::option::Option::None;)
                } else {
                    quote!(let #sh = #rt::rev::shadow_of(&#x);)
                }
            })
            .collect();
        let mut rebind = Vec::new();
        let mut flushes = Vec::new();
        let copies: Vec<TokenStream> = (0..body.locals.len())
            .filter(|l| copied[*l])
            .map(|l| {
                let l = Local(l as u32);
                let (x, cp, sh) = (self.names.local(l), replay_copy(l), shadow_capture(l));
                rebind.push(quote!(
                    let #x = #rt::CoDual::new(#rt::rev::replay_view(&#cp), ::core::clone::Clone::clone(&#sh));
                ));
                if self.pool_tapes {
                    let p = pool((usize::MAX, l.index()));
                    give_back.push(quote!(#rt::rev::give_replay_copy(&#p, #cp);));
                    quote!(
                        ::std::thread_local! {
                            static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                        }
                        let #cp = #rt::rev::replay_copy(&#x, ::core::option::Option::Some(&#p));
                    )
                } else {
                    quote!(let #cp = #rt::rev::replay_copy(&#x, ::core::option::Option::None);)
                }
            })
            .collect();
        // The sinks of the loads' adjoints (see `sinks`), made and closed in the same order.
        let direct = self.direct;
        let mut made: Vec<TokenStream> = Vec::new();
        let mut sink_lens = Vec::new();
        for l in (0..body.locals.len()).filter(|l| self.sinks[*l]) {
            let l = Local(l as u32);
            let (sh, acc) = (shadow_capture(l), accumulator(l));
            let g = format_ident!("__g{}", l.0, span = Span::mixed_site());
            let sink_pool = if self.pool_tapes {
                let p = pool((usize::MAX - 1, l.index()));
                rebind.push(quote!(
                    ::std::thread_local! {
                        static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                    }
                ));
                quote!(::core::option::Option::Some(&#p))
            } else {
                quote!(::core::option::Option::None)
            };
            // Lengths first: a sink may borrow a shadow another one shares.
            let n = format_ident!("__n{}", l.0, span = Span::mixed_site());
            // The sink of an argument whose gradient is not wanted holds nothing.
            let live = self.live(l).unwrap_or_else(|| quote!(true));
            sink_lens.push(quote!(let #n = if #live { #sh.len() } else { 0 };));
            rebind.push(quote!(
                let mut #g = #rt::rev::sink(&#sh, #n, #direct && #live, &[#(#made),*], #sink_pool);
                let #acc = #g.slice_mut();
            ));
            flushes.push(quote!(#rt::rev::close_sink(&#sh, #g, #sink_pool);));
            made.push(quote!(#sh.addr()));
        }
        // The slots of the values the re-run blocks read that were assigned once, outside
        // loops.
        let slots = (0..body.locals.len()).filter(|l| snapshots[*l]).map(|l| {
            let slot = snapshot_slot(Local(l as u32));
            quote!(let mut #slot = ::core::option::Option::None;)
        });
        let views = self.views.iter().map(|(v, base, path)| {
            let (v, b_, f) = (self.names.local(*v), self.names.local(*base), field_path(path));
            quote!(#v = #rt::rev::field_view(&#b_.primal #f, &#b_.fdata #f);)
        });
        for (v, _, _) in &self.views {
            if self.adjoint[v.index()] {
                let (m, x) = (marker(*v), self.names.local(*v));
                decls.push(quote!(#m = #rt::rev::marker(&#x);));
            }
        }
        let forward = quote!(
            #(#to_handles)*
            #(#views)*
            #(#captures)*
            #(#copies)*
            #(#slots)*
            #(#decls)*
            #ctl
            '__body: { #code }
        );
        // The snapshot slots, moved into locals of the pullback (which the optimiser keeps in
        // registers across the reverse sweep's loops).
        let snapshot_locals = (0..body.locals.len()).filter(|l| snapshots[*l]).map(|l| {
            let slot = snapshot_slot(Local(l as u32));
            quote!(let #slot = #slot;)
        });
        // The locals the re-run blocks assign, fresh in the pullback, typed as in the forward
        // sweep where the user wrote a type (`let k: usize = 0;` then `k.min(..)`).
        let fresh =
            (0..body.locals.len()).filter(|l| self.replayed_local(Local(*l as u32))).map(|l| {
                let x = self.names.local(Local(l as u32));
                let typed = body.locals[l]
                    .ty
                    .as_ref()
                    .filter(|t| buffer_element(t).is_none())
                    .map(super::codual_type);
                match typed {
                    Some(ty) => quote!(let mut #x: #ty;),
                    None => quote!(let mut #x;),
                }
            });

        // The pullback: adjoints, then the blocks backwards.
        let adjoints = (0..body.locals.len()).filter(|l| self.adjoint[*l] && *l != 0).map(|l| {
            let (a, m) = (adj(Local(l as u32)), marker(Local(l as u32)));
            quote!(let mut #a = #rt::rev::zero_of(#m);)
        });
        let reverse_block = |b: BlockId| {
            let block = &body.blocks[b.index()];
            let rev = block
                .statements
                .iter()
                .enumerate()
                .rev()
                .map(|(i, s)| self.reverse_statement(b, i, s));
            // The steps the block made of recorded integers, undone (see `counters`).
            let steps = &self.counters.undo[b.index()];
            let undo = steps.iter().map(|st| {
                let (x, by) = (self.names.local(st.local), &st.by);
                let value =
                    if st.adds { quote!(#x.primal - (#by)) } else { quote!(#x.primal + (#by)) };
                quote!(#x = #rt::CoDual::new(#value, #rt::NoFData);)
            });
            let undo = quote!(#(#undo)*);
            if let Some(plan) = &self.replays[b.index()] {
                // The block again: its integers from the tape, its values from their slots, its
                // statements (which make their pullbacks anew), then their reverse.
                let restore = if plan.ints.is_empty() && plan.values.is_empty() {
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
                    quote!(
                        let (#(#tmps,)* #(#vtmps,)*) = match #t.pop() {
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
                let again = (0..block.statements.len()).filter_map(|i| {
                    if plan.statements.contains(&i) {
                        return Some(self.forward_statement(b, i, &block.statements[i]));
                    }
                    if !plan.indices.contains(&i) {
                        return None;
                    }
                    // A load whose value is not needed: its index.
                    let StatementKind::Assign(_, Rvalue::Use(Operand::Use(q))) =
                        &block.statements[i].kind
                    else {
                        return None;
                    };
                    let Some(Access::Index(_, index)) = access(q) else { return None };
                    let (t, i_) = (tape((b.index(), i)), self.names.local(index));
                    Some(quote!(let #t: usize = #i_.primal;))
                });
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
        };
        // Where the reverse sweep enters a loop, the integers its exit recorded.
        let loop_entry = |h: BlockId| {
            let Some(record) = self.counters.records.get(&h) else { return quote!() };
            let t = loop_tape(h);
            let tmps: Vec<syn::Ident> = (0..record.len())
                .map(|k| format_ident!("__in{}", k, span = Span::mixed_site()))
                .collect();
            let xs = record.iter().map(|l| self.names.local(*l));
            let get =
                if self.counters.nested.contains(&h) { quote!(pop()) } else { quote!(take()) };
            quote!(
                let (#(#tmps,)*) = match #t.#get {
                    ::core::option::Option::Some(e) => e,
                    ::core::option::Option::None => ::core::unreachable!(),
                };
                #(#xs = #rt::CoDual::new(#tmps, #rt::NoFData);)*
            )
        };
        let sweep = control.reverse(structured, &reverse_block, &loop_entry);
        // The reverse sweep pops exactly what the forward sweep pushed.
        let ctl_check = if control.needs_tape() {
            quote!(::core::debug_assert!(__ctl.is_empty(), "mooncake: the control tape of a reverse rule was not consumed exactly");)
        } else {
            quote!()
        };
        let a0 = adj(Local::RETURN);
        let m0 = marker(Local::RETURN);
        let args: Vec<TokenStream> = body
            .args()
            .map(|l| {
                let rdata = if let Some(syn::Type::Array(arr)) = &body.locals[l.index()].ty {
                    let x = self.names.local(l);
                    let elem = &arr.elem;
                    quote!(#rt::rev::array_rdata::<#elem, _>(&#x.fdata))
                } else {
                    let a = adj(l);
                    quote!(#a)
                };
                // Zero for an argument whose gradient is not wanted, so that what only its
                // adjoint needed is dead code.
                let live = self.live_arg(l);
                quote!(#rt::rev::wrt_rdata(#live, #rdata))
            })
            .collect();
        let pullback = quote!(
            let _ = #m0;
            let mut #a0 = __ybar;
            #(#adjoints)*
            #(#slot_captures)*
            #(#sink_lens)*
            #(#snapshot_locals)*
            #(#rebind)*
            #(#fresh)*
            #sweep
            #(#flushes)*
            #ctl_check
            #(#give_back)*
            (#(#args,)*)
        );
        let captures = quote!();
        (forward, pullback, captures)
    }
}
