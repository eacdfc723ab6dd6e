//! Reverse mode (seed 002): `NAME_rrule`, the forward sweep and the pullback of a body, from the
//! same IR and the same structured control flow as forward mode (REVERSE-CODEGEN.md's shape).
//!
//! * The forward sweep is the primal's structured program over `CoDual` locals. A statement
//!   with a derivative keeps what its adjoint needs on its block's tape (one tuple per
//!   execution, a slot outside loops): a pullback for calls and rules, an index for a load, a
//!   record for a store, nothing for arithmetic whose operands are still at hand; blocks the
//!   reverse sweep can run again keep nothing but integers.
//! * The pullback runs the structured program backwards (`control`): loops by their recorded
//!   trip counts, branches by the arm recorded, jumps by the exit recorded. Each statement's
//!   adjoint is written inline where its kind allows (arithmetic, copies, builds, loads into
//!   sinks) and through its kept pullback otherwise. The adjoint of a local is reset when the
//!   local is assigned, since the value it had before does not reach that point.
//!
//! Each local's adjoint has the local's rdata type, fixed through a zero-sized marker that the
//! forward sweep assigns beside the local (a marker is always initialised, the local need not
//! be).
//!
//! A call keeps its callee's pullback as the callee's rule returns it (an `impl FnOnce` the
//! compiler can inline). A rule that calls user functions or methods returns its pullback
//! boxed, so that recursion and cycles of mutual recursion do not make a pullback type contain
//! itself (see [`Reverse::boxes_own_pullback`]); leaves stay unboxed.
//! `#[differentiable(recursive)]` boxes every call's pullback as well (no longer needed).
//!
//! The files, by concern: `normalise` (IR rewrites before planning), `plan` (activity, what is
//! kept and what recomputed: `Reverse::new`), with `replay` (blocks run again), `counters`
//! (integers recorded per loop), `sinks` (where loads' adjoints go), `fresh` (stores that keep
//! no record); `forward_sweep` and
//! `reverse_sweep` (each statement's code in either sweep), `control` (the structured program
//! in both directions); this file, the `Reverse` state, the names generated code uses, and
//! `generate`, which puts the pieces together.

mod control;
mod counters;
mod forward_sweep;
mod fresh;
mod nested;
mod normalise;
mod plan;
mod replay;
mod reverse_sweep;
mod scalarise;
mod sinks;
mod windows;

use forward_sweep::*;
pub(crate) use normalise::for_each_place_ref;
pub(crate) use normalise::normalise;
use normalise::*;
pub(crate) use plan::INT_TYPES;
#[cfg(test)]
#[allow(unused_imports)] // not by the expansion bench, which compiles this crate's source
pub(crate) use plan::arithmetic_kinds;
pub(crate) use plan::buffer_element;
use plan::*;
use reverse_sweep::*;
pub(crate) use sinks::scalar_type;

use super::codegen::{Names, rt, rt_at};
use super::forward::{method_key, rule_path};
use super::ir::*;
use super::parse;
use super::structure::Node;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeSet;

/// Why a body, before it is normalised, is outside the slice reverse mode covers so far: a
/// method of a user type on an element of a buffer (`xs[i].m()`), which normalising would read
/// as a row of a nested buffer (a type error in the expansion); the name of a type in the
/// runtime's `reverse::unsupported`.
pub(crate) fn unsupported_before_normalise(body: &Body) -> Option<(&'static str, Span)> {
    // Locals bound to a borrow of an element (`for l in net.layers.iter()`, `let b = &xs[i];`)
    // that normalising does not turn into copies (`nested::clone_lent_elements`).
    let copied = nested::lent_element_locals(body);
    // Locals bound to `&mut` borrows of elements that normalising replaces by the element (a
    // method called on one is then a method on the element, put back after it when the buffer
    // is a `&mut` argument of structs or tuples).
    let (substituted, bases) = normalise::mut_element_locals(body);
    let values = nested::value_buffer_locals(body);
    let (locals, n_args) = (&body.locals, body.n_args);
    let no_deref = |p: &Place| p.projections.iter().all(|pr| !matches!(pr, Projection::Deref));
    let mut element_refs = vec![false; body.locals.len()];
    let statements = || body.blocks.iter().flat_map(|b| &b.statements);
    for s in statements() {
        if let StatementKind::Assign(p, Rvalue::Use(Operand::Ref(q, _))) = &s.kind
            && p.projections.is_empty()
            && !copied[p.local.index()]
            && q.projections.iter().any(|pr| matches!(pr, Projection::Index(_)))
        {
            let l = p.local.index();
            // The element `base[i]` the borrow stands for, as `written_element` reads it.
            let written = substituted[l]
                && matches!(&bases[l], Some(Some(b)) if no_deref(b)
                    && nested::written_element(locals, n_args, &values, q, &Place::local(Local(0))));
            element_refs[l] = !written;
        }
    }
    for s in statements() {
        if let StatementKind::Assign(dest, Rvalue::Method { receiver, method, .. }) = &s.kind
            && !reverse_method(&method.to_string())
            && ((matches!(receiver.projections.last(), Some(Projection::Index(_)))
                && !((nested::shared_arg(locals, n_args, receiver.local)
                    || nested::written_element(locals, n_args, &values, receiver, dest))
                    && no_deref(receiver)))
                || (element_refs[receiver.local.index()]
                    && receiver.projections.iter().all(|pr| matches!(pr, Projection::Deref))))
        {
            return Some(("MethodsOfElements", method.span()));
        }
    }
    None
}

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
    // `&p.w` of a struct `p` the function holds by value, lent shared: the field with its
    // shadow (`rev::value_field_loan`, for fields whose shadow is their fdata: buffers).
    let field_of_value = |p: &Place| {
        matches!(access(p), Some(Access::Field(base, _))
            if !body.args().any(|a| a == base)
                && !matches!(&body.locals[base.index()].ty, Some(syn::Type::Reference(_))))
    };
    let call_arg_ok = |a: &Operand| {
        operand_ok(a)
            || matches!(a, Operand::Ref(p, false) if field_of_value(p))
            || matches!(a, Operand::Ref(p, _) if plain(p))
            || matches!(a, Operand::Ref(p, m) if field_of_ref(p, *m))
            // `&s.w` of an argument `s: &mut S`: the field borrowed out of its handle.
            || matches!(a, Operand::Ref(p, false) if field_of_ref(p, true))
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
                            || (["copy_from_slice", "extend_from_slice", "__sub_assign"]
                                .contains(&name.as_str())
                                && matches!(a, Operand::Ref(p, false)
                                    if plain(p)
                                        || field_of_ref(p, false)
                                        || field_of_ref(p, true)
                                        || field_of_value(p)))
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
        || BUFFER_METHODS.contains(&name)
        || WRITE_METHODS.contains(&name)
        || name == "__clone_value"
        || name == "__clone_owned"
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
const BUFFER_METHODS: &[&str] = &[
    "len",
    "__iter_sum",
    "to_vec",
    "clone",
    "__sub_to_vec",
    "__get2",
    "__len2",
    "__row_to_vec",
    "__deep",
    "__deep_len",
    "__deep_to_vec",
    "__deep_clone",
    "__repeat_rows",
];

/// The buffer methods that write, whose receiver may be a buffer field of a `&mut` argument
/// (`s.w.push(v)`).
const WRITE_METHODS: &[&str] = &[
    "push",
    "pop",
    "fill",
    "swap",
    "reverse",
    "__sort_by",
    "__sort_by_keys",
    "copy_from_slice",
    "clear",
    "truncate",
    "resize",
    "extend_from_slice",
    "__sub_assign",
    "__set2",
    "__deep_set",
    "__deep_put",
];

fn load_parts(p: &Place) -> Option<Access> {
    access(p)
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
    /// Buffers of structs or tuples (`nested::value_buffer_locals`): copied and grown by rules
    /// of their own.
    value_buffers: Vec<bool>,
    /// Buffers whose elements are not numbers (`nested::nested_locals`): copied element by
    /// element like `value_buffers`.
    nested_buffers: Vec<bool>,
    /// The rule is derived from a function's twin (`second_order`, `twin.rs`): every call of
    /// another function calls its rule generic over the float, `NAME_rrule_twin`.
    pub(crate) twin_calls: bool,
    /// `#[differentiable(recursive)]`: every call boxes its pullback.
    box_all_calls: bool,
    /// Whether tapes come from thread-local pools (`rev::take_tape`): only in functions without
    /// type or const parameters, since a pooled tape's type must be `'static` and a `static`
    /// cannot depend on a parameter.
    pub(crate) pool_tapes: bool,
    /// `#[differentiable(debug)]`: the forward sweep checks that each float it computes is
    /// finite.
    pub(crate) debug: bool,
    /// The function's type parameters bounded by `Float` (`T` in `fn f<T: Float>`): a call
    /// `T::from_f64(c)` is a float function like `f64::from`, which a re-run block may repeat.
    pub(crate) float_params: Vec<syn::Ident>,
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
    /// Per block, the stores into those buffers that keep no record (see `fresh`).
    fresh: Vec<Vec<bool>>,
    /// The buffers of `stored` built from a constructor, whose shadow is zero throughout the
    /// forward sweep: their stores' records hold no shadow (see `fresh`).
    zero_shadow: Vec<bool>,
    /// Whether those sinks may borrow the shadows directly (see `sinks`).
    direct: bool,
    /// Set while generating: whether the body calls a function or a method of a user type
    /// (whose rule may call this one back; see [`Reverse::boxes_own_pullback`]).
    calls_out: std::cell::Cell<bool>,
    /// The windows of the sinks in the loops' reverse sweeps (see `windows`).
    windows: windows::Windows,
    /// Set while generating the statements a re-run block runs again (see `windows`).
    rerun: std::cell::Cell<bool>,
    /// Where the structured program's nodes and labels are, made for the windows and kept for
    /// the control flow's analysis.
    labels: std::cell::Cell<Option<control::Labels>>,
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

impl<'a> Reverse<'a> {
    /// The statements of the forward pass and the pullback's block dispatch.
    pub(crate) fn generate(&self, structured: &Node) -> (TokenStream, TokenStream, TokenStream) {
        let rt = rt();
        let body = self.body;
        let labels = self.labels.take().unwrap_or_else(|| control::Labels::of(structured));
        let mut control = control::Control::new(structured, labels);
        // Buffers built in the body (held through handles): a loop that only loads from one
        // borrows it once, and one whose reverse only adds into its shadow borrows that once.
        let handles: Vec<Local> = (0..body.locals.len())
            .map(|l| Local(l as u32))
            .filter(|l| self.handles[l.index()])
            .collect();
        control.guards = control::Guards::new(
            handles.iter().map(|l| self.names.local(*l)).collect(),
            handles.iter().map(|l| shadow_capture(*l)).collect(),
        );
        control.guards.windows = self.shadow_windows();
        control.counted_in_record = self
            .counters
            .records
            .keys()
            .copied()
            .filter(|h| self.counters.nested.contains(h))
            .collect();
        // A block whose statements touch no such buffer: its code (in either sweep, re-run or
        // not) names none of them or their shadows.
        control.guards.quiet = body
            .blocks
            .iter()
            .map(|b| {
                !b.statements.iter().any(|s| match &s.kind {
                    StatementKind::Check(_) => true,
                    StatementKind::Assign(p, rv) => {
                        let mut touches = self.handles[p.local.index()];
                        for_each_place_ref(rv, &mut |q| touches |= self.handles[q.local.index()]);
                        touches
                    }
                })
            })
            .collect();
        // The shadows of stable arguments that loads read, captured once per call, and of
        // buffers built in the body that loads read or stores write.
        let mut captured = self.loaded_bases();
        for (l, s) in self.stored.iter().enumerate() {
            captured[l] |= *s;
        }
        let snapshots = self.replayed(|p| &p.snapshots);
        let stmts = |b: BlockId| self.forward_block(b, &captured, &snapshots);
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
        let loop_exit = |h: BlockId| self.loop_exit(h);
        let fwd_windows = |h: BlockId| self.fwd_window_decls(h);
        let code = control.forward(structured, &stmts, &exit, &cond, &loop_exit, &fwd_windows);

        // Tapes and markers.
        let mut decls = Vec::new();
        let mut give_back = Vec::new();
        // One tape per block inside a loop (one slot per block outside), holding per execution
        // the tuple of its statements' entries.
        for bi in 0..body.blocks.len() {
            let b = BlockId(bi as u32);
            let has_tape = match &self.replays[bi] {
                Some(plan) => plan.tapes(),
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
        } else if let Some(k) = (!control::holds_loop(structured))
            .then(|| control::count_pushes(&code))
            .filter(|k| *k <= FIXED_TAPE_MAX)
        {
            // Each recording site runs at most once: a fixed tape on the stack.
            quote!(let mut __ctl = #rt::rev::FixedTape::<#k>::new();)
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
            // A buffer the reverse sweep reads again (through its copy) gives the sink its
            // length, so that an add into the sink at an index its load just checked needs no
            // check of its own (the shadow has the buffer's length).
            let slice = if copied[l.index()] {
                let x = self.names.local(l);
                quote!(#rt::rev::fit_sink(#g.slice_mut(), #live, #rt::rev::len_of(&#x)))
            } else {
                quote!(#g.slice_mut())
            };
            rebind.push(quote!(
                let mut #g = #rt::rev::sink(&#sh, #n, #direct && #live, &[#(#made),*], #sink_pool);
                let mut #acc = #slice;
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
            quote!(#v = #rt::rev::field_slice_view(&#b_.primal #f, &#b_.fdata #f);)
        });
        for (v, _, _) in &self.views {
            if self.adjoint[v.index()] {
                let (m, x) = (marker(*v), self.names.local(*v));
                decls.push(quote!(#m = #rt::rev::marker(&#x);));
            }
        }
        let owned_views = super::view_args(body, self.names);
        let forward = quote!(
            #owned_views
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
        let reverse_block = |b: BlockId| self.reverse_block(b);
        // Where the reverse sweep enters a loop, the integers its exit recorded.
        let loop_entry = |h: BlockId| self.loop_entry(h);
        let loop_windows = |h: BlockId, m: TokenStream| self.window_decls(h, m);
        let sweep = control.reverse(structured, &reverse_block, &loop_entry, &loop_windows);
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
                    if matches!(&**elem, syn::Type::Infer(_)) {
                        // Of a type alias (`a: Vec3`): the element type from the handle.
                        quote!(#rt::rev::held_array_rdata(&#x))
                    } else {
                        quote!(#rt::rev::array_rdata::<#elem, _>(&#x.fdata))
                    }
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

/// The most recording sites a body with no loop may have for its control tape to be a
/// [`FixedTape`](mooncake_runtime's `rev::FixedTape`) on the stack; the pullback holds it, and a
/// recursive rule's pullback is moved into and out of its pooled box at every level.
const FIXED_TAPE_MAX: usize = 16;
