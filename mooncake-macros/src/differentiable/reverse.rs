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
//! A call keeps its callee's pullback unboxed (an `impl FnOnce` the compiler can inline), except
//! where the call can recurse: a call of the function itself, and every call in a function
//! marked `#[differentiable(recursive)]` (one function of each cycle of mutual recursion), since
//! an `impl FnOnce` pullback cannot contain itself.

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
pub(crate) fn unsupported(body: &Body, sig: &parse::Sig) -> Option<&'static str> {
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
    let call_arg_ok = |a: &Operand| {
        operand_ok(a)
            || matches!(a, Operand::Ref(p, _) if plain(p))
            || matches!(a, Operand::Ref(p, m) if field_of_ref(p, *m))
    };
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(place, rv) = &s.kind else { continue };
            if !plain(place) {
                // A store: `x[i] = v` or `*x = v`, the value already a plain operand.
                let stored_ok =
                    access(place).is_some() && matches!(rv, Rvalue::Use(o) if operand_ok(o));
                if !stored_ok {
                    return Some("WritesThroughPlaces");
                }
                continue;
            }
            let ok = match rv {
                Rvalue::Use(Operand::Use(p)) => plain(p) || load_parts(p).is_some(),
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
                    let field_receiver = BUFFER_METHODS.contains(&name.as_str())
                        && matches!(access(receiver), Some(Access::Field(..)));
                    // `copy_from_slice(&src)` reads a buffer argument.
                    let arg_ok = |a: &Operand| {
                        operand_ok(a)
                            || (name == "copy_from_slice"
                                && matches!(a, Operand::Ref(p, false) if plain(p)))
                    };
                    if REVERSE_METHODS.contains(&name.as_str()) {
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
                Rvalue::Repeat(o, _) => operand_ok(o),
            };
            if !ok {
                return Some("BorrowsInLocalsOrStdCalls");
            }
        }
    }
    None
}

/// The methods the slice differentiates: the runtime's float and integer methods, and the
/// read-only buffer methods. Methods of user types are not in the slice yet.
const REVERSE_METHODS: &[&str] = &[
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "exp_m1",
    "ln",
    "ln_1p",
    "log2",
    "log10",
    "sqrt",
    "cbrt",
    "abs",
    "signum",
    "recip",
    "to_degrees",
    "to_radians",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fract",
    "atan2",
    "hypot",
    "powf",
    "log",
    "min",
    "max",
    "mul_add",
    "clamp",
    "powi",
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_sign_positive",
    "is_sign_negative",
    "pow",
    "len",
    "__iter_sum",
    "push",
    "pop",
    "to_vec",
    "clone",
    "fill",
    "swap",
    "copy_from_slice",
];

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

/// Locals known to be integers, from syntax alone: declared with an integer type, assigned an
/// integer literal, a `len()`, a cast to an integer type, or arithmetic with an integer operand
/// (Rust has no mixed integer / float arithmetic, and a local has one type). Their arithmetic
/// statements get no reverse code: no pullback, no tape. The others keep their rules, whose
/// pullbacks on integers carry `NoRData`.
fn int_locals(body: &Body) -> Vec<bool> {
    let mut ints: Vec<bool> =
        body.locals.iter().map(|d| d.ty.as_ref().is_some_and(is_int_type)).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                if !p.projections.is_empty() || ints[p.local.index()] {
                    continue;
                }
                let int_operand = |o: &Operand| match o {
                    Operand::Use(q) => q.projections.is_empty() && ints[q.local.index()],
                    Operand::Const(c) => is_int_literal(c),
                    Operand::Ref(..) => false,
                };
                let int = match rv {
                    Rvalue::Use(o) => int_operand(o),
                    Rvalue::Binary(op, a, c) if op.is_arithmetic() => {
                        int_operand(a) || int_operand(c)
                    }
                    Rvalue::Unary(UnOp::Neg, a) => int_operand(a),
                    Rvalue::Cast(_, ty) => is_int_type(ty),
                    Rvalue::Method { method, args, .. } => method == "len" && args.is_empty(),
                    _ => false,
                };
                if int {
                    ints[p.local.index()] = true;
                    changed = true;
                }
            }
        }
    }
    ints
}

/// For tests: of the arithmetic statements (`+ - * / %`, unary `-`, `as`), how many of those
/// on integers, and how many of the others, get no reverse code and how many get a rule.
#[cfg(test)]
pub(crate) fn arithmetic_kinds(body: &Body) -> ((usize, usize), (usize, usize)) {
    let (refs, _) = ref_locals(body);
    let ints = int_locals(body);
    let (mut on_ints, mut others) = ((0, 0), (0, 0));
    for b in &body.blocks {
        for s in &b.statements {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !is_arithmetic(rv) || !p.projections.is_empty() {
                continue;
            }
            let count = if ints[p.local.index()] { &mut on_ints } else { &mut others };
            match kind(p, rv, &refs, &ints) {
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
    out
}

/// Moves the projected reads of a statement's operands (and of a method's receiver) into load
/// statements of their own, pushed on `statements` before it.
fn hoist(s: &mut Statement, locals: &mut Vec<LocalDecl>, statements: &mut Vec<Statement>) {
    if let StatementKind::Assign(_, rv) = &mut s.kind
        && !matches!(rv, Rvalue::Use(Operand::Use(_)))
    {
        let span = s.span;
        if let Rvalue::Method { receiver, method, .. } = rv
            && load_parts(receiver).is_some()
            && !BUFFER_METHODS.contains(&method.to_string().as_str())
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
        Rvalue::Use(o) | Rvalue::Unary(_, o) | Rvalue::Cast(o, _) | Rvalue::Repeat(o, _) => f(o),
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

fn kind(place: &Place, rv: &Rvalue, refs: &[bool], ints: &[bool]) -> Kind {
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
            Rvalue::Method { method, args, .. } if method == "len" && args.is_empty() => {
                return Kind::Linear(Vec::new());
            }
            _ => {}
        }
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
        Rvalue::Method { receiver, args, .. } => {
            // A buffer field's gradient lives in its shadow: nothing to add to the base.
            let base = if receiver.projections.is_empty() { Some(receiver.local) } else { None };
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
fn lend(call: TokenStream, loans: Vec<(syn::Ident, syn::Ident)>, span: Span) -> TokenStream {
    if loans.is_empty() {
        return call;
    }
    let rt = rt();
    let mut nested = call;
    let mut pat = quote!((__o, __pb));
    let backs: Vec<syn::Ident> =
        (0..loans.len()).map(|k| format_ident!("__bk{}", k, span = Span::mixed_site())).collect();
    for ((l, b), bk) in loans.iter().zip(&backs).rev() {
        nested = quote_spanned!(span=> #rt::rev::lend(&#l, |#b| #nested));
        pat = quote!((#pat, #bk));
    }
    quote_spanned!(span=> {
        let #pat = #nested;
        (__o, __pb, (#(#backs,)*))
    })
}

/// The locals `&v` lends to a call or a user method (see [`lend`]), in argument order.
fn loaned_locals(rv: &Rvalue) -> Vec<Local> {
    let args = match rv {
        Rvalue::Call { func, args }
            if !(func.segments.len() == 2
                && (func.segments[0].ident == "f64"
                    || func.segments[0].ident == "f32"
                    || func.segments[0].ident == "Vec")) =>
        {
            args
        }
        Rvalue::Method { method, args, .. }
            if !REVERSE_METHODS.contains(&method.to_string().as_str()) =>
        {
            args
        }
        _ => return Vec::new(),
    };
    args.iter()
        .filter_map(|a| match a {
            Operand::Ref(p, false) if !matches!(access(p), Some(Access::Field(..))) => {
                Some(p.local)
            }
            _ => None,
        })
        .collect()
}

/// Blocks inside a loop of the structured program.
fn blocks_in_loops(node: &Node, in_loop: bool, out: &mut BTreeSet<BlockId>) {
    match node {
        Node::Seq(ns) => ns.iter().for_each(|n| blocks_in_loops(n, in_loop, out)),
        Node::Block(_, n) => blocks_in_loops(n, in_loop, out),
        Node::Loop(_, n) => blocks_in_loops(n, true, out),
        Node::If(_, t, e) => {
            blocks_in_loops(t, in_loop, out);
            blocks_in_loops(e, in_loop, out);
        }
        Node::Statements(b) if in_loop => {
            out.insert(*b);
        }
        _ => {}
    }
}

pub(crate) struct Reverse<'a> {
    body: &'a Body,
    names: &'a Names,
    in_loop: BTreeSet<BlockId>,
    preds: Vec<Vec<BlockId>>,
    /// Locals with an adjoint.
    adjoint: Vec<bool>,
    /// Locals that hold references.
    refs: Vec<bool>,
    /// Arguments declared `&mut T`, seen through handles.
    mut_refs: Vec<bool>,
    /// Locals known to be integers (see [`int_locals`]).
    ints: Vec<bool>,
    /// The function's name: its calls of itself box their pullbacks.
    name: &'a syn::Ident,
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
}

/// The local holding the shadow of argument `l`, captured once per call.
fn shadow_capture(l: Local) -> syn::Ident {
    format_ident!("__sh{}", l.0, span = Span::mixed_site())
}

fn tape(s: (usize, usize)) -> syn::Ident {
    format_ident!("__t{}_{}", s.0, s.1, span = Span::mixed_site())
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

fn marker(l: Local) -> syn::Ident {
    format_ident!("__m{}", l.0, span = Span::mixed_site())
}

impl<'a> Reverse<'a> {
    pub(crate) fn new(
        body: &'a Body,
        names: &'a Names,
        structured: &Node,
        name: &'a syn::Ident,
        box_all_calls: bool,
    ) -> Self {
        let mut in_loop = BTreeSet::new();
        blocks_in_loops(structured, false, &mut in_loop);
        let (refs, mut_refs) = ref_locals(body);
        let ints = int_locals(body);
        let mut adjoint = vec![false; body.locals.len()];
        adjoint[0] = true;
        for l in body.args() {
            adjoint[l.index()] = true;
        }
        for b in &body.blocks {
            for s in &b.statements {
                if let StatementKind::Assign(p, rv) = &s.kind {
                    match kind(p, rv, &refs, &ints) {
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
                            for l in ops.into_iter().flatten().chain(loaned_locals(rv)) {
                                adjoint[l.index()] = true;
                            }
                        }
                        Kind::Linear(parts) => {
                            adjoint[p.local.index()] = true;
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
            stable
        };
        Reverse {
            body,
            names,
            in_loop,
            preds: body.predecessors(),
            adjoint,
            refs,
            mut_refs,
            ints,
            name,
            box_all_calls,
            pool_tapes: false,
            ret_ty: quote!(_),
            stable_args,
        }
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

    /// The forward-pass code of statement `i` of block `b`.
    fn forward_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let span = s.span;
        let (place, rv) = match &s.kind {
            StatementKind::Assign(p, rv) => (p, rv),
            StatementKind::Check(tokens) => {
                let t = self.names.substitute_primals(tokens.clone());
                return quote_spanned!(span=> #t;);
            }
        };
        if !place.projections.is_empty() {
            return self.forward_store(b, i, place, rv, span);
        }
        let x = self.names.local(place.local);
        let mark = if self.adjoint[place.local.index()] {
            let m = marker(place.local);
            quote!(#m = #rt::rev::marker(&#x);)
        } else {
            quote!()
        };
        let no_derivative = |value: TokenStream| quote_spanned!(span=> #x = #rt::CoDual::new(#value, #rt::NoFData); #mark);
        if matches!(kind(place, rv, &self.refs, &self.ints), Kind::Linear(_)) {
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
                Rvalue::Method { receiver, .. } => {
                    let r = self.buffer_receiver(receiver, span);
                    quote_spanned!(span=> #rt::rev::len_of(&#r))
                }
                _ => quote!(::core::unreachable!()),
            };
            return no_derivative(value);
        }
        let mut into_handle = false;
        let mut has_loans = false;
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
                Some(Access::Index(base, index)) if self.stable_args[base.index()] => {
                    // The element's value; only the index goes on the tape.
                    let (b_, i_) = (self.names.local(base), self.names.local(index));
                    let t = tape((b.index(), i));
                    let store = if self.in_loop.contains(&b) {
                        quote!(#t.push(#i_.primal);)
                    } else {
                        quote!(#t = ::core::option::Option::Some(#i_.primal);)
                    };
                    return quote_spanned!(span=>
                        #x = #rt::CoDual::new(#rt::rev::read_at(&#b_, #i_.primal), #rt::NoFData);
                        #mark
                        #store
                    );
                }
                Some(Access::Index(base, index)) => {
                    let (base, index) = (self.names.local(base), self.names.local(index));
                    (
                        quote_spanned!(span=> #rt::rules::buffer::index_rrule(#rt::rev::as_read(&#base), #index)),
                        false,
                    )
                }
                Some(Access::Deref(base)) => {
                    let base = self.names.local(base);
                    (quote_spanned!(span=> #rt::rev::cell_load_rrule(&#base)), false)
                }
                Some(Access::Field(base, path)) if self.mut_refs[base.index()] => {
                    let view = self.field_view(base, &path, span);
                    (quote_spanned!(span=> #rt::rev::cell_load_rrule(&#view)), false)
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
                if self.ints[place.local.index()] {
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
            Rvalue::Unary(UnOp::Neg, a) if self.ints[place.local.index()] => {
                let a = self.primal_operand(a, span);
                return no_derivative(quote!(-#a));
            }
            Rvalue::Cast(a, ty) if self.ints[place.local.index()] => {
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
                let fdata_path = super::forward::sibling_path(path, "FData");
                return quote_spanned!(span=> {
                    #(let #vars = #vals;)*
                    #x = #rt::CoDual::new(
                        #path { #(#members: #vars.primal),* },
                        #fdata_path { #(#members: #vars.fdata),* },
                    );
                    #mark
                });
            }
            Rvalue::VecRepeat(v, n) => {
                into_handle = true;
                let (v, n) = (self.codual_operand(v, span), self.codual_operand(n, span));
                (quote_spanned!(span=> #rt::rules::buffer::vec_filled_rrule(#v, #n)), false)
            }
            // An array built in the body is held through a handle, like a `Vec`.
            Rvalue::Repeat(v, n) => {
                into_handle = true;
                let v = self.codual_operand(v, span);
                (
                    quote_spanned!(span=> #rt::rules::buffer::vec_filled_rrule(#v, #rt::rev::constant::<usize>(#n))),
                    false,
                )
            }
            Rvalue::VecList(ops) | Rvalue::Array(ops) => {
                into_handle = true;
                let vars: Vec<syn::Ident> = (0..ops.len())
                    .map(|i| format_ident!("__e{}", i, span = Span::mixed_site()))
                    .collect();
                let vals = ops.iter().map(|o| self.codual_operand(o, span));
                let n = ops.len();
                (
                    quote_spanned!(span=> {
                        #(let #vars = #vals;)*
                        #rt::rules::buffer::vec_from_array_rrule(#rt::CoDual::new([#(#vars.primal),*], [#rt::NoFData; #n]))
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
                    (quote_spanned!(span=> #rt::rules::buffer::vec_new_rrule()), false)
                } else {
                    let n = args
                        .first()
                        .map(|a| self.codual_operand(a, span))
                        .unwrap_or_else(|| quote!(::core::unreachable!()));
                    (quote_spanned!(span=> #rt::rules::buffer::vec_with_capacity_rrule(#n)), false)
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
                    (call, self.box_all_calls || self.calls_itself(func))
                }
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
                    Operand::Use(p) | Operand::Ref(p, _) => self.names.local(p.local),
                    Operand::Const(_) => return quote!(::core::unreachable!();),
                };
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::copy_from_slice_rrule(#rt::rev::as_write(&#r), #rt::rev::as_read(&#src))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.is_empty() && method == "pop" => {
                let r = self.names.local(receiver.local);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::pop_rrule(#rt::rev::as_write(&#r))),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args } if args.len() == 1 && method == "push" => {
                let r = self.names.local(receiver.local);
                let v = self.codual_operand(&args[0], span);
                (
                    quote_spanned!(method.span()=> #rt::rules::buffer::push_rrule(#rt::rev::as_write(&#r), #v)),
                    false,
                )
            }
            Rvalue::Method { receiver, method, args }
                if REVERSE_METHODS.contains(&method.to_string().as_str()) =>
            {
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
                let r = self.names.local(receiver.local);
                let key = method_key(&method.to_string());
                let (args, loans) = self.call_arguments(args, span);
                has_loans = !loans.is_empty();
                let recv_name = syn::Ident::new("__mooncake_receiver", method.span());
                let rev = quote_spanned!(method.span()=> ::mooncake_runtime::__private::rev);
                // The receiver is lent mutably (a `&mut self` method on a value the function
                // holds changes it); the arguments are evaluated first, as they may read it.
                let call = quote_spanned!(method.span()=> {
                    let __args = (#(#args,)*);
                    let #recv_name = #rev::method_marker::<#key, _, _>(&#r);
                    #rev::UserMethodRrule::<#key, _>::method_rrule(#recv_name, &mut #r, __args)
                });
                (lend(call, loans, span), false)
            }
        };
        let t = tape((b.index(), i));
        // With loans, the tape keeps what each loan gives back beside the pullback.
        let entry = if has_loans { quote!((__pb, __bk)) } else { quote!(__pb) };
        let store = if self.in_loop.contains(&b) {
            quote!(#t.push(#entry);)
        } else {
            quote!(#t = ::core::option::Option::Some(#entry);)
        };
        let boxing = if boxed {
            quote!(let __pb: ::std::boxed::Box<dyn ::core::ops::FnOnce(_) -> _> = ::std::boxed::Box::new(__pb);)
        } else {
            quote!()
        };
        let value = if into_handle { quote!(#rt::rev::into_handle(__o)) } else { quote!(__o) };
        let bind = if has_loans { quote!((__o, __pb, __bk)) } else { quote!((__o, __pb)) };
        quote_spanned!(span=> {
            let #bind = #call;
            #boxing
            #x = #value;
            #mark
            #store
        })
    }

    /// The arguments of a call or of a user method: each a `CoDual` re-wrapped so that
    /// coercions apply, and the loans (`&v` of a buffer held through a handle, lent for the
    /// call only: see [`lend`]).
    fn call_arguments(
        &self,
        args: &[Operand],
        span: Span,
    ) -> (Vec<TokenStream>, Vec<(syn::Ident, syn::Ident)>) {
        let rt = rt();
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
                    Operand::Use(p) | Operand::Ref(p, true) => {
                        let l = self.names.local(p.local);
                        quote_spanned!(span=> #rt::rev::pass(&#l))
                    }
                    Operand::Ref(p, false) => {
                        let b = format_ident!("__loan{}", k, span = Span::mixed_site());
                        loans.push((self.names.local(p.local), b.clone()));
                        quote_spanned!(span=> #b)
                    }
                    other => self.codual_operand(other, span),
                };
                quote_spanned!(span=> { let __c = #v; #rt::CoDual::new(__c.primal, __c.fdata) })
            })
            .collect();
        (args, loans)
    }

    /// Whether `func` names the function being differentiated (`f`, `self::f`, `Self::f`): a
    /// call that recurses, whose pullback must be boxed.
    fn calls_itself(&self, func: &syn::Path) -> bool {
        let segs: Vec<&syn::Ident> = func.segments.iter().map(|s| &s.ident).collect();
        match segs.as_slice() {
            [f] => *f == self.name,
            [q, f] => *f == self.name && (*q == "self" || *q == "Self"),
            _ => false,
        }
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
            Some(Access::Index(base, index)) => {
                let (base, index) = (self.names.local(base), self.names.local(index));
                quote_spanned!(span=> #rt::rules::buffer::index_set_rrule(#rt::rev::as_write(&#base), #index, #v))
            }
            Some(Access::Deref(base)) => {
                let base = self.names.local(base);
                quote_spanned!(span=> #rt::rev::store_rrule(&#base, #v))
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
        let store = if self.in_loop.contains(&b) {
            quote!(#t.push(__pb);)
        } else {
            quote!(#t = ::core::option::Option::Some(__pb);)
        };
        quote_spanned!(span=> {
            let (_, __pb) = #call;
            #store
        })
    }

    /// The reverse-pass code of statement `i` of block `b`.
    fn reverse_statement(&self, b: BlockId, i: usize, s: &Statement) -> TokenStream {
        let rt = rt();
        let StatementKind::Assign(place, rv) = &s.kind else {
            return quote!();
        };
        let ax = adj(place.local);
        let store = !place.projections.is_empty();
        if let (true, Rvalue::Use(Operand::Use(p))) = (place.projections.is_empty(), rv)
            && let Some(Access::Index(base, _)) = access(p)
            && self.stable_args[base.index()]
        {
            // A load of a stable argument: the index from the tape, the adjoint into the
            // shadow captured at entry.
            let t = tape((b.index(), i));
            let pop = if self.in_loop.contains(&b) {
                quote!(match #t.pop() { ::core::option::Option::Some(i) => i, ::core::option::Option::None => ::core::unreachable!() })
            } else {
                quote!(match #t.take() { ::core::option::Option::Some(i) => i, ::core::option::Option::None => ::core::unreachable!() })
            };
            let sh = shadow_capture(base);
            return quote!({
                let __i: usize = #pop;
                #rt::rev::shadow_add(&#sh, __i, #rt::rev::take(&mut #ax));
            });
        }
        match kind(place, rv, &self.refs, &self.ints) {
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
                let array = matches!(kind(place, rv, &self.refs, &self.ints), Kind::RuleArray(_));
                let t = tape((b.index(), i));
                let pop = if self.in_loop.contains(&b) {
                    quote!(match #t.pop() { ::core::option::Option::Some(__pb) => __pb, ::core::option::Option::None => ::core::unreachable!() })
                } else {
                    quote!(match #t.take() { ::core::option::Option::Some(__pb) => __pb, ::core::option::Option::None => ::core::unreachable!() })
                };
                // A store has no output value: its pullback takes `NoRData`.
                let seed =
                    if store { quote!(#rt::NoRData) } else { quote!(#rt::rev::take(&mut #ax)) };
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
                    Rvalue::Method { receiver, method, .. }
                        if !REVERSE_METHODS.contains(&method.to_string().as_str())
                            && receiver.projections.is_empty() =>
                    {
                        let ar = adj(receiver.local);
                        quote!(#seed, #rt::rev::take(&mut #ar))
                    }
                    _ => seed,
                };
                let loaned = loaned_locals(rv);
                let (take_entry, backs) = if loaned.is_empty() {
                    (quote!(let __pb = #pop;), quote!())
                } else {
                    let gives = loaned.iter().enumerate().map(|(k, l)| {
                        let al = adj(*l);
                        let idx = syn::Index::from(k);
                        quote!(#rt::rev::accumulate(&mut #al, #rt::rev::give_back(__bk.#idx));)
                    });
                    (quote!(let (__pb, __bk) = #pop;), quote!(#(#gives)*))
                };
                quote!({
                    #take_entry
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
        let needs_stack = self.preds.iter().any(|p| p.len() > 1);
        let stmts = |b: BlockId| {
            let block = &body.blocks[b.index()];
            let push = if self.preds[b.index()].len() > 1 {
                quote!(__stack.push(__prev);)
            } else {
                quote!()
            };
            let s =
                block.statements.iter().enumerate().map(|(i, s)| self.forward_statement(b, i, s));
            let leaves_to_merge =
                block.terminator.kind.successors().iter().any(|t| self.preds[t.index()].len() > 1);
            let id = b.0;
            let prev = if leaves_to_merge { quote!(__prev = #id;) } else { quote!() };
            quote!(#push #(#s)* #prev)
        };
        let exit = |b: BlockId| {
            let t = &body.blocks[b.index()].terminator;
            match &t.kind {
                TerminatorKind::Return => {
                    let id = b.0;
                    quote_spanned!(t.span=> __exit = #id; break '__body;)
                }
                TerminatorKind::Panic(tokens) => {
                    let tokens = self.names.substitute_primals(tokens.clone());
                    quote_spanned!(t.span=> #tokens;)
                }
                _ => quote!(),
            }
        };
        let cond = |l: Local| {
            let l = self.names.local(l);
            quote!(#l.primal)
        };
        let code = super::codegen::emit(structured, self.names, &stmts, &exit, &cond);

        // Tapes and markers.
        let mut decls = Vec::new();
        let mut give_back = Vec::new();
        for (bi, block) in body.blocks.iter().enumerate() {
            for (i, s) in block.statements.iter().enumerate() {
                if let StatementKind::Assign(p, rv) = &s.kind
                    && matches!(
                        kind(p, rv, &self.refs, &self.ints),
                        Kind::Rule(_) | Kind::RuleArray(_)
                    )
                {
                    let t = tape((bi, i));
                    if self.in_loop.contains(&BlockId(bi as u32)) {
                        if self.pool_tapes {
                            let p = pool((bi, i));
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
        let stack = if needs_stack && self.pool_tapes {
            let p = pool((usize::MAX, 0));
            give_back.push(quote!(#rt::rev::give_tape(&#p, __stack);));
            quote!(
                ::std::thread_local! {
                    static #p: #rt::rev::TapePool = const { ::core::cell::RefCell::new(::std::vec::Vec::new()) };
                }
                let mut __stack: ::std::boxed::Box<::std::vec::Vec<u32>> = #rt::rev::take_tape(&#p);
                let mut __prev: u32 = 0;
            )
        } else if needs_stack {
            quote!(let mut __stack: ::std::vec::Vec<u32> = ::std::vec::Vec::new(); let mut __prev: u32 = 0;)
        } else {
            quote!(let mut __prev: u32 = 0;)
        };
        // Arrays passed by value are held through a handle, like buffers built in the body, so
        // that the buffer rules apply; their gradient, gathered in the handle's shadow, is
        // returned as rdata at the end of the pullback.
        let array_args: Vec<Local> = body
            .args()
            .filter(|l| matches!(body.locals[l.index()].ty, Some(syn::Type::Array(_))))
            .collect();
        let to_handles = array_args.iter().map(|l| {
            let x = self.names.local(*l);
            quote!(let mut #x = #rt::rev::array_into_handle(#x);)
        });
        // The shadows of stable arguments that loads read, captured once per call.
        let mut captured = vec![false; body.locals.len()];
        for block in &body.blocks {
            for s in &block.statements {
                if let StatementKind::Assign(p, Rvalue::Use(Operand::Use(q))) = &s.kind
                    && p.projections.is_empty()
                    && let Some(Access::Index(base, _)) = access(q)
                    && self.stable_args[base.index()]
                {
                    captured[base.index()] = true;
                }
            }
        }
        let captures = (0..body.locals.len()).filter(|l| captured[*l]).map(|l| {
            let (x, sh) = (self.names.local(Local(l as u32)), shadow_capture(Local(l as u32)));
            quote!(let #sh = #rt::rev::shadow_of(&#x);)
        });
        let forward = quote!(
            #(#to_handles)*
            #(#captures)*
            #(#decls)*
            #stack
            let mut __exit: u32 = 0;
            '__body: { #code }
        );

        // The pullback: adjoints, then the blocks backwards.
        let adjoints = (0..body.locals.len()).filter(|l| self.adjoint[*l] && *l != 0).map(|l| {
            let (a, m) = (adj(Local(l as u32)), marker(Local(l as u32)));
            quote!(let mut #a = #rt::rev::zero_of(#m);)
        });
        let arms = body.blocks.iter().enumerate().map(|(bi, block)| {
            let b = BlockId(bi as u32);
            let rev: Vec<TokenStream> =
                block.statements.iter().enumerate().rev().map(|(i, s)| self.reverse_statement(b, i, s)).collect();
            let preds = &self.preds[bi];
            let next = if bi == 0 {
                quote!(break;)
            } else if preds.len() == 1 {
                let p = preds[0].0;
                quote!(__b = #p;)
            } else {
                quote!(__b = match __stack.pop() { ::core::option::Option::Some(p) => p, ::core::option::Option::None => ::core::unreachable!() };)
            };
            let id = bi as u32;
            quote!(#id => { #(#rev)* #next })
        });
        let a0 = adj(Local::RETURN);
        let m0 = marker(Local::RETURN);
        let args: Vec<TokenStream> = body
            .args()
            .map(|l| {
                if let Some(syn::Type::Array(arr)) = &body.locals[l.index()].ty {
                    let x = self.names.local(l);
                    let elem = &arr.elem;
                    quote!(#rt::rev::array_rdata::<#elem, _>(&#x.fdata))
                } else {
                    let a = adj(l);
                    quote!(#a)
                }
            })
            .collect();
        let pullback = quote!(
            let _ = #m0;
            let mut #a0 = __ybar;
            #(#adjoints)*
            let mut __b: u32 = __exit;
            loop {
                match __b {
                    #(#arms)*
                    _ => ::core::unreachable!(),
                }
            }
            #(#give_back)*
            (#(#args,)*)
        );
        let captures = quote!();
        (forward, pullback, captures)
    }
}
