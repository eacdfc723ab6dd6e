//! Stores that keep no record: `k[i] = v` into a buffer built in the body (`let mut k =
//! vec![0.0; n];`) where nothing has read `k` before the store can run.
//!
//! A store's record (the index, the element it overwrote and that element's shadow, see
//! `rev::store_at`) serves two readers in the reverse sweep: pullbacks of earlier statements
//! that read the buffer's values again (a call's rule given `&k`, a re-run load of `k`), which
//! must see the element as it was; and the shadow, which a caller or a call may have written
//! before the store. For a buffer fresh from a constructor, whose values and shadow no
//! statement has read or written before the store can run, neither reader exists: the element
//! it overwrote is one no pullback reads again, and its shadow is still the constructor's zero.
//! The reverse of such a store is then `v̄ = k̄[i]; k̄[i] = 0` (`rev::unstore_fresh`), which needs
//! only the index: the block that holds the store can even be run again (see `replay`) instead
//! of taped.
//!
//! "Before" is by control flow: a statement precedes the store when it comes earlier in the
//! same block or its block can reach the store's (so a read anywhere in a loop precedes every
//! store of that loop). Reads are every use of `k` but its definition, stores into it and
//! `k.len()`.

use super::super::ir::*;
use super::normalise::read_locals;
use super::{Access, Reverse, access};

impl Reverse<'_> {
    /// Whether statement `i` of block `b` is a store that keeps no record.
    pub(super) fn is_fresh(&self, b: BlockId, i: usize) -> bool {
        self.fresh.get(b.index()).and_then(|s| s.get(i)).copied().unwrap_or(false)
    }

    /// For each block, which of its statements are stores that keep no record (see the module
    /// documentation); computed after `stored`.
    pub(super) fn fresh_stores(&self) -> Vec<Vec<bool>> {
        let body = self.body;
        let mut out: Vec<Vec<bool>> =
            body.blocks.iter().map(|b| vec![false; b.statements.len()]).collect();
        let fresh: Vec<Local> = (0..body.locals.len())
            .map(|l| Local(l as u32))
            .filter(|l| self.stored[l.index()] && self.fresh_buffer(*l))
            .collect();
        if fresh.is_empty() {
            return out;
        }
        let reach = reachable(body);
        for k in fresh {
            let reads = self.reads_of(k);
            for (bi, block) in body.blocks.iter().enumerate() {
                for (i, s) in block.statements.iter().enumerate() {
                    let StatementKind::Assign(p, Rvalue::Use(_)) = &s.kind else { continue };
                    if !matches!(access(p), Some(Access::Index(base, _)) if base == k) {
                        continue;
                    }
                    let before =
                        reads.iter().any(|(rb, ri)| (*rb == bi && *ri < i) || reach[*rb][bi]);
                    out[bi][i] = !before;
                }
            }
        }
        out
    }

    /// The buffers of `stored` built from a constructor (see [`Self::fresh_buffer`]). The
    /// shadow of one is zero whenever the forward sweep stores into it: it starts at zero,
    /// every store writes zero into it (a rule's forward pass records the shadow of what it
    /// overwrites and zeroes it; only pullbacks add into shadows), and no pullback runs before
    /// the reverse sweep. A record of such a store need not keep the shadow.
    pub(super) fn zero_shadows(&self) -> Vec<bool> {
        (0..self.body.locals.len())
            .map(|l| self.stored[l] && self.fresh_buffer(Local(l as u32)))
            .collect()
    }

    /// A buffer assigned once, from a constructor whose shadow starts at zero (`vec![c; n]`,
    /// `vec![a, b]`, `[c; N]`, `[a, b]`), directly or through a temporary that nothing else
    /// reads (moved, or copied into a new handle, whose shadow starts at zero as well).
    fn fresh_buffer(&self, k: Local) -> bool {
        let body = self.body;
        let defs = |l: Local| -> Vec<&Rvalue> {
            body.blocks
                .iter()
                .flat_map(|b| &b.statements)
                .filter_map(|s| match &s.kind {
                    StatementKind::Assign(p, rv) if p.projections.is_empty() && p.local == l => {
                        Some(rv)
                    }
                    _ => None,
                })
                .collect()
        };
        let constructor = |rv: &Rvalue| {
            matches!(
                rv,
                Rvalue::VecRepeat(..) | Rvalue::VecList(_) | Rvalue::Repeat(..) | Rvalue::Array(_)
            )
        };
        let [rv] = defs(k)[..] else { return false };
        match rv {
            rv if constructor(rv) => true,
            Rvalue::Use(Operand::Use(t)) | Rvalue::Convert(Conversion::Copy, Operand::Use(t))
                if t.projections.is_empty() && t.local != k =>
            {
                let [trv] = defs(t.local)[..] else { return false };
                constructor(trv) && self.reads_of(t.local).len() == 1
            }
            _ => false,
        }
    }

    /// The statements that read `l` (as `(block, statement)`): every statement naming it but
    /// its definitions, stores into it (`l[i] = v`) and `l.len()`.
    fn reads_of(&self, l: Local) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (bi, block) in self.body.blocks.iter().enumerate() {
            for (i, s) in block.statements.iter().enumerate() {
                let StatementKind::Assign(p, rv) = &s.kind else { continue };
                if let Rvalue::Method { receiver, method, args } = rv
                    && receiver.projections.is_empty()
                    && method == "len"
                    && args.is_empty()
                {
                    continue;
                }
                // The place's base is written, not read (but a store into a field of it reads
                // the base's handle).
                let mut named = !p.projections.is_empty()
                    && p.local == l
                    && !matches!(access(p), Some(Access::Index(..)));
                read_locals(p, rv, &mut |x| named |= x == l);
                if named {
                    out.push((bi, i));
                }
            }
        }
        out
    }
}

/// `reach[a][b]`: whether control can go from the end of block `a` to block `b` (by one edge or
/// more, so a block in a loop reaches itself).
fn reachable(body: &Body) -> Vec<Vec<bool>> {
    let n = body.blocks.len();
    let succ: Vec<Vec<BlockId>> =
        body.blocks.iter().map(|b| b.terminator.kind.successors()).collect();
    (0..n)
        .map(|a| {
            let mut seen = vec![false; n];
            let mut stack: Vec<BlockId> = succ[a].clone();
            while let Some(b) = stack.pop() {
                if b.index() < n && !seen[b.index()] {
                    seen[b.index()] = true;
                    stack.extend(succ[b.index()].iter().copied());
                }
            }
            seen
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// How many stores of `f`'s reverse rule keep no record, and how many keep one (through a
    /// loop's guard or not).
    fn stores(f: &str) -> (usize, usize) {
        let out = crate::differentiable::expand(
            proc_macro2::TokenStream::new(),
            f.parse().expect("test source lexes"),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let count = |names: &[&str]| names.iter().map(|n| out.matches(n).count()).sum();
        (
            count(&["rev :: store_fresh", "rev :: guarded_store ("]),
            count(&[
                "rev :: store_at",
                "rev :: guarded_store_at",
                "rev :: store_zero_at",
                "rev :: guarded_store_zero_at",
                "rev :: slice_store_zero_at",
            ]),
        )
    }

    #[test]
    fn a_buffer_written_before_it_is_read_keeps_no_record() {
        let kron = "fn f(a: &[f64], n: usize) -> f64 {
            let mut k = vec![0.0; n * n];
            for i in 0..n { for j in 0..n { k[i * n + j] = a[i] * a[j]; } }
            k.iter().sum::<f64>()
        }";
        assert_eq!(stores(kron), (1, 0));
        let array =
            "fn f(x: f64) -> f64 { let mut r = [0.0; 3]; r[0] = x; r[2] = x * x; r[0] + r[2] }";
        assert_eq!(stores(array).1, 0);
    }

    #[test]
    fn a_store_after_a_read_keeps_its_record() {
        // Read by a call between two stores: the second store keeps a record.
        let between = "fn f(x: &[f64]) -> f64 {
            let mut k = vec![0.0; 2];
            k[0] = x[0];
            let s = k.iter().sum::<f64>();
            k[0] = x[1] * s;
            k.iter().sum::<f64>()
        }";
        assert_eq!(stores(between), (1, 1));
        // Read in the loop that writes it: every store of the loop keeps one.
        let reused = "fn f(x: &[f64]) -> f64 {
            let mut h = vec![0.0; 2];
            let mut s = 0.0;
            for i in 0..x.len() { h[0] = x[i]; s += h[0] * h[0]; }
            s
        }";
        assert_eq!(stores(reused), (0, 1));
        // A buffer that is not fresh from a constructor (a copy of an argument).
        let copied = "fn f(x: &[f64]) -> f64 { let mut k = x.to_vec(); k[0] = 2.0 * x[1]; k.iter().sum::<f64>() }";
        assert_eq!(stores(copied).0, 0);
    }

    #[test]
    fn records_of_constructed_buffers_hold_no_shadow() {
        let source = |f: &str| {
            crate::differentiable::expand(
                proc_macro2::TokenStream::new(),
                f.parse().expect("test source lexes"),
            )
            .to_string()
        };
        // Built by `vec![..]`: its shadow is zero whenever the forward sweep stores into it.
        let reused = source(
            "fn f(x: &[f64]) -> f64 { let mut h = vec![0.0; 2]; let mut s = 0.0; \
             for i in 0..x.len() { h[0] = x[i]; s += h[0] * h[0]; } s }",
        );
        assert!(reused.contains("store_zero_at") && !reused.contains("rev :: store_at"));
        assert!(reused.contains("unstore_zero_at"));
        // A copy of an argument read before the store: its record keeps the shadow.
        let copied = source(
            "fn f(x: &[f64]) -> f64 { let mut k = x.to_vec(); let a = k[0]; \
             k[0] = 2.0 * x[1]; a * k.iter().sum::<f64>() }",
        );
        assert!(copied.contains("rev :: store_at") && !copied.contains("store_zero_at"));
    }
}
