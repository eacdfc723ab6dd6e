//! Where the reverse sweep adds the gradients of the loads `x[i]` of an argument: a sink
//! (`rev::Sink`), plain memory borrowed once per sweep instead of a `RefCell` borrow per
//! element.
//!
//! An argument whose loads are re-run (see `replay`) always gets one; its memory is the
//! shadow itself when nothing else can borrow that shadow during the sweep, else zeroed memory
//! added into the shadow at the end. The shadow can be borrowed directly for the whole sweep
//! when the function hands none of its arguments to anything that could reach their shadows
//! while the sweep runs: every use of a buffer or struct argument (or of a view of a buffer
//! field) is a load by index, a `len()`, or the read of an integer field. Calls, rules,
//! methods, copies of a reference and stores then never see an argument, so no pullback but
//! the sweep's own inline adds touches an argument's shadow. Two arguments may still share a
//! shadow (`f(&v, &v)` inside another rule): the runtime then buffers the second (see
//! `rev::sink`).

use super::super::ir::*;
use super::{Access, Reverse, access};

/// Whether `ty` is a plain number or `bool` (its codual carries no shadow).
pub(crate) fn scalar_type(ty: &syn::Type) -> bool {
    const SCALARS: &[&str] = &[
        "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64",
        "u128", "usize", "bool", "char",
    ];
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| SCALARS.contains(&i.to_string().as_str())))
}

impl Reverse<'_> {
    /// Whether no use of an argument can reach its shadow but the loads' inline adds (see the
    /// module documentation).
    pub(super) fn direct_sinks(&self) -> bool {
        let body = self.body;
        // The locals to watch: arguments that may carry a shadow, and the views of their
        // buffer fields.
        let mut watched = vec![false; body.locals.len()];
        for l in body.args() {
            let ty = body.locals[l.index()].ty.as_ref();
            watched[l.index()] = !ty.is_some_and(scalar_type) && !self.inactive.bufs[l.index()];
        }
        for (v, _, _) in &self.views {
            watched[v.index()] = true;
        }
        let is_watched = |l: Local| watched[l.index()];
        let operand_ok = |o: &Operand| match o {
            Operand::Use(p) | Operand::Ref(p, _) => !is_watched(p.local),
            Operand::Const(_) => true,
        };
        for b in &body.blocks {
            for s in &b.statements {
                let StatementKind::Assign(place, rv) = &s.kind else {
                    // An assertion reads primal values only.
                    continue;
                };
                if is_watched(place.local) {
                    // A view is made at entry; anything else writes an argument.
                    if self.views.iter().any(|(v, _, _)| *v == place.local) {
                        continue;
                    }
                    return false;
                }
                let ok = match rv {
                    Rvalue::Use(Operand::Use(q)) if is_watched(q.local) => match access(q) {
                        Some(Access::Index(base, _)) => self.index_only[base.index()],
                        Some(Access::Field(..)) => self.inactive.ints[place.local.index()],
                        _ => false,
                    },
                    Rvalue::Method { receiver, method, args } if is_watched(receiver.local) => {
                        receiver.projections.is_empty() && method == "len" && args.is_empty()
                    }
                    Rvalue::Use(o) | Rvalue::Unary(_, o) | Rvalue::Cast(o, _) => operand_ok(o),
                    Rvalue::Convert(_, o) | Rvalue::Repeat(o, _) => operand_ok(o),
                    Rvalue::Binary(_, a, c) | Rvalue::VecRepeat(a, c) => {
                        operand_ok(a) && operand_ok(c)
                    }
                    Rvalue::Call { args, .. }
                    | Rvalue::Tuple(args)
                    | Rvalue::Array(args)
                    | Rvalue::VecList(args) => args.iter().all(operand_ok),
                    Rvalue::Method { receiver, args, .. } => {
                        !is_watched(receiver.local) && args.iter().all(operand_ok)
                    }
                    Rvalue::Struct { fields, .. } => fields.iter().all(|(_, o)| operand_ok(o)),
                    // A pattern test reads the primal value only.
                    Rvalue::Matches(..) => true,
                };
                if !ok {
                    return false;
                }
            }
        }
        true
    }
}
