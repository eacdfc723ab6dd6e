//! Raw case to program: scoping, typing, names, and the rules that keep every program valid
//! Rust in the subset by construction.
//!
//! Every raw index is taken modulo the candidates in scope of the wanted type; with none, the
//! resolver falls back to a literal or drops the statement. It also keeps to the borrow rules
//! (a buffer iterated by `for v in x.iter()` is not written in the loop; an argument lent
//! `&mut` to a call is not read by the call's other arguments), bounds loops (integer bounds
//! are capped with `.min(k)`), makes recursion terminate (a recursive function's calls of
//! recursive functions pass `n - 1` behind `if n == 0 { return .. }`), and puts the spots the
//! interpreter may repair around operations with a restricted domain.

use super::ast::*;

/// Switches for constructs that fail, or failed, for a known reason, each found by this
/// generator (the README's "Testing" section lists them with their shrunk programs), so that a
/// run can look past a bug while it is open. [`Avoid::known`] sets those still open at the
/// recorded run; [`Avoid::all`] sets every one, to check a runtime older than their fixes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Avoid {
    /// `for v in x { .. *v .. }` over a `&[f64]` / `&Vec<f64>` parameter (both modes; fixed,
    /// `generated_shrunk.rs`).
    pub direct_iteration_deref: bool,
    /// `v.push(e)` where `e` reads `v` (forward mode: a borrow error in the expansion; fixed,
    /// `generated_shrunk.rs`).
    pub push_reads_itself: bool,
    /// Integer arithmetic on literals only, `0..1 * 2` (forward mode: typed `i32`; fixed,
    /// `generated_shrunk.rs`).
    pub int_literal_arith: bool,
    /// `x.clone()` of a `Vec<f64>` behind a reference: `&mut Vec<f64>` (forward mode: no rule),
    /// `&Vec<f64>` (forward mode: "lifetime may not live long enough"; fixed, `generated_shrunk.rs`).
    pub clone_vec_behind_ref: bool,
    /// `(n..=1).rev()`, an inclusive reversed range ending in a literal (forward mode: the
    /// literal is typed `i32`; fixed, `generated_shrunk.rs`).
    pub inclusive_rev_range: bool,
    /// `x.len()` or `x[0].max(a)` in a loop over `x.iter()` where `x` is not a shared reference
    /// (forward mode: a borrow error in the expansion; fixed, `generated_shrunk.rs`): such loops read `x`
    /// through their element only.
    pub reads_of_iterated_mut: bool,
    /// `assert!(x.len() > 0)` of an array held by value (reverse mode: no `len` on the handle;
    /// then forward mode: no rule; fixed, `generated_shrunk.rs`).
    pub assert_len_of_array: bool,
    /// `s.k.min(i)`, an integer method on an integer field of a struct held by value (forward
    /// mode: no rule for the `&mut usize` receiver; fixed, `generated_shrunk.rs`).
    pub int_field_method: bool,
    /// A `Copy` struct `P` consumed (passed by value, a `self` receiver, destructured) and used
    /// again (forward mode: the `Dual` of a `Copy` struct was not `Copy`, "use of moved value";
    /// fixed, `generated_shrunk.rs`).
    pub copy_struct_reused: bool,
    /// `self.g(self.x)`, a method's argument reading its receiver (a borrow error in the
    /// expansion: the receiver is lent before the arguments are read; fixed, `generated_shrunk.rs`).
    pub method_arg_reads_receiver: bool,
    /// An assertion reading a loop's element, `debug_assert!((*e).is_finite())` in
    /// `for e in x.iter()` (reverse mode: the element is a loaded value there, not a reference; fixed with
    /// `generator_regressions::names_inside_assertions`).
    pub assert_reads_loop_element: bool,
    /// `debug_assert!(self::g(a) > 0.0)` in a method (a syntax error in the expansion: the
    /// assertion's `self` is rewritten; fixed with `generator_regressions::names_inside_assertions`).
    pub self_path_in_method_assert: bool,
    /// A `&Vec<f64>` (a local lent, a parameter, a field) given to a method's `&[f64]` or
    /// `&mut [f64]` parameter (reverse mode: the method dispatch did not coerce it; fixed with
    /// `generator_regressions::vec_to_slice_parameters_of_methods`).
    pub method_vec_to_slice_arg: bool,
    /// Statements in a block inside an assertion, `debug_assert!({ let x = x; x }.is_finite())`
    /// (a syntax error in the expansion: the assertion's `let` pattern is rewritten; fixed with
    /// `generator_regressions::names_inside_assertions`).
    pub block_in_assert: bool,
    /// Side effects inside an operand: `x[0] + g(x)` with `g` writing `x`, `a * { a = 2.0; a }`
    /// (both modes: the derived code read the left operand after the right one had run, so
    /// rule and primal computed different values; fixed, `generated_shrunk.rs`). Calls inside expressions
    /// take no `&mut`, and blocks inside expressions write only their own locals.
    pub operand_order: bool,
    /// `s.w.fill(v)`, `s.w.push(v)`, .. on a buffer field of a struct held by value in a local
    /// (reverse mode: "does not cover this function yet", `BorrowsInLocalsOrStdCalls`; a
    /// documented refusal, README "Feature table", pinned by `fail_reverse_field_method.rs`).
    pub buffer_method_on_local_field: bool,
    /// `k.max(1)` or `(k + 4).min(6)` on an integer local initialised by a literal after a
    /// loop, `for i in 0..2 {} let k: usize = 0; k.max(1)` (reverse mode: "type annotations
    /// needed"; fixed, `generated_shrunk.rs`): integer methods get a literal receiver, `1_usize.max(k)`.
    pub int_local_method: bool,
    /// `x0.g1(&x0)`, a method's receiver also lent to it as an argument (both modes: a borrow
    /// error in the expansion, the receiver being lent `&mut` to the dispatch; fixed with
    /// `generator_regressions::receiver_lent_to_its_own_arguments`).
    pub receiver_lent_as_argument: bool,
    /// `w.copy_from_slice(v)` inside `for e in v.iter()`, `v: &mut Vec<f64>`: a buffer iterated
    /// by `iter()` and not a shared reference, lent in the loop's body (forward mode: a borrow
    /// error in the expansion; fixed with `generator_regressions::buffers_lent_while_iterated`).
    pub iterated_buffer_lent: bool,
    /// Side effects in a method's arguments on its receiver: `a.max({ a = 3.0 * x; 0.1 })`,
    /// `(*m).mul_add(2.0, { *m = x; 0.0 })` (both modes: the derived code reads the receiver
    /// after the arguments have run, so rule and primal compute different values; fixed with
    /// `generator_regressions::receiver_read_before_arguments`).
    pub receiver_order: bool,
    /// A `&mut` argument passed on to a `&` parameter, `g(x)` with `x: &mut [f64]` and
    /// `g(y: &[f64])` (reverse mode: refused with "cannot pass a `&mut` argument on to a `&`
    /// parameter as it is"; a documented refusal, README "Feature table", pinned by
    /// `fail_mut_argument_to_shared.rs`).
    pub mut_arg_to_shared_param: bool,
}

impl Avoid {
    /// What a run leaves out: the constructs reverse mode refuses by design, with a message
    /// (`buffer_method_on_local_field`, `mut_arg_to_shared_param`), and those of any bug still
    /// open (none at the recorded run).
    pub fn known() -> Avoid {
        Avoid {
            buffer_method_on_local_field: true,
            mut_arg_to_shared_param: true,
            ..Avoid::default()
        }
    }

    /// Every switch on.
    pub fn all() -> Avoid {
        Avoid {
            direct_iteration_deref: true,
            push_reads_itself: true,
            int_literal_arith: true,
            clone_vec_behind_ref: true,
            inclusive_rev_range: true,
            reads_of_iterated_mut: true,
            assert_len_of_array: true,
            int_field_method: true,
            copy_struct_reused: true,
            method_arg_reads_receiver: true,
            operand_order: true,
            int_local_method: true,
            assert_reads_loop_element: true,
            self_path_in_method_assert: true,
            block_in_assert: true,
            method_vec_to_slice_arg: true,
            receiver_order: true,
            iterated_buffer_lent: true,
            receiver_lent_as_argument: true,
            ..Avoid::known()
        }
    }
}

const LITS: [f64; 8] = [0.5, 1.0, 2.0, 0.25, 1.5, 3.0, 0.1, 0.75];
const CONSTS: [(&str, f64); 4] = [
    ("std::f64::consts::PI", std::f64::consts::PI),
    ("std::f64::consts::E", std::f64::consts::E),
    ("std::f64::consts::SQRT_2", std::f64::consts::SQRT_2),
    ("std::f64::consts::LN_2", std::f64::consts::LN_2),
];
const CLAMPS: [(f64, f64); 3] = [(-1.0, 1.0), (-0.5, 2.0), (0.0, 3.0)];
const MODULI: [f64; 3] = [0.7, 1.3, 2.5];
/// Integer inputs and integer arguments are at most this.
const INT_MAX: u64 = 4;
/// Magnitude kept in storage (locals, buffers, fields, arguments, results).
const STORE_LIMIT: f64 = 100.0;

/// The signature of a function, as callers see it.
#[derive(Clone, Debug)]
struct Sig {
    /// Every parameter's type (a recursive function's `n` first; not a method's receiver).
    params: Vec<Ty>,
    /// The declared parameters (not `n`), with `mut` bindings.
    decl: Vec<(Ty, bool)>,
    ret: Ty,
    recursive: bool,
    kind: FnKind,
    /// The receiver's type, for a method of `P`.
    recv: Option<Ty>,
}

#[derive(Clone, Debug)]
struct Local {
    var: Var,
    ty: Ty,
    mutable: bool,
    /// The recursion depth `n`: never shadowed, never assigned.
    depth: bool,
    /// A loop counter: never assigned by generated statements.
    counter: bool,
    /// Moved away (a `Vec` stored whole at the top level).
    moved: bool,
    /// Upper bound of an integer's value, for loop bounds.
    bound: u64,
}

#[derive(Clone, Debug)]
struct LoopCx {
    id: usize,
    label: Option<String>,
    value: bool,
}

/// A buffer in scope: how to name it, and what may be done to it.
#[derive(Clone, Debug)]
struct BufCand {
    expr: Expr,
    ty: Ty,
    root: usize,
    writable: bool,
    growable: bool,
}

struct Fx<'a> {
    sigs: &'a [Sig],
    me: usize,
    avoid: Avoid,
    locals: Vec<Local>,
    marks: Vec<usize>,
    next_var: usize,
    ids: &'a mut usize,
    loops: Vec<LoopCx>,
    /// Roots that may not be written (iterated, or lent `&mut` to the call being resolved).
    frozen: Vec<usize>,
    /// Roots iterated by an enclosing `for .. in x.iter()` that are not shared references.
    iterated: Vec<usize>,
    /// Roots that may not be read (lent `&mut` to the call being resolved).
    unreadable: Vec<usize>,
    in_rec_body: bool,
    /// Resolving an assertion's condition.
    in_assert: bool,
    /// Resolving the arguments of a method (see `Avoid::receiver_order`).
    in_method_args: usize,
    /// Inside a loop header's expressions: no `break` / `continue` there.
    no_jumps: usize,
    /// Loops nesting (of any kind) around the current statement.
    loop_depth: usize,
    /// Blocks nesting around the current statement (0: the function's body).
    block_depth: usize,
    ret: Ty,
    mutual: bool,
    counters: [usize; 12],
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Fx<'_> {
    fn id(&mut self) -> usize {
        *self.ids += 1;
        *self.ids
    }

    fn fresh(&mut self, prefix: &'static str) -> Var {
        const PREFIXES: [&str; 12] = ["a", "k", "c", "v", "r", "t", "p", "q", "s", "i", "e", "m"];
        let slot = PREFIXES.iter().position(|p| *p == prefix).expect("known prefix");
        let n = self.counters[slot];
        self.counters[slot] += 1;
        self.next_var += 1;
        Var { name: format!("{prefix}{n}"), id: self.next_var }
    }

    fn bind(&mut self, var: Var, ty: Ty, mutable: bool, bound: u64) {
        self.locals.push(Local {
            var,
            ty,
            mutable,
            depth: false,
            counter: false,
            moved: false,
            bound,
        });
    }

    fn push_scope(&mut self) {
        self.marks.push(self.locals.len());
    }

    fn pop_scope(&mut self) {
        let m = self.marks.pop().expect("scope");
        self.locals.truncate(m);
    }

    /// Locals visible by name (innermost binding of each name), innermost first.
    fn visible(&self) -> Vec<&Local> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for l in self.locals.iter().rev() {
            if seen.contains(&l.var.name.as_str()) {
                continue;
            }
            seen.push(&l.var.name);
            if !l.moved && !self.unreadable.contains(&l.var.id) {
                out.push(l);
            }
        }
        out.reverse();
        out
    }

    fn var(l: &Local) -> Expr {
        Expr::Var(l.var.clone())
    }

    fn field(e: Expr, name: &'static str, k: usize) -> Expr {
        Expr::Field(bx(e), name, k)
    }

    fn f64_reads(&self) -> Vec<Expr> {
        let mut out = Vec::new();
        for l in self.visible() {
            let v = Self::var(l);
            match l.ty {
                Ty::F64 | Ty::T => out.push(v),
                Ty::F32 => out.push(Expr::Cast(bx(v), Ty::F64)),
                Ty::F64Mut | Ty::ElemRef => out.push(Expr::Deref(bx(v))),
                Ty::Tuple | Ty::Q => {
                    out.push(Self::field(v.clone(), "0", 0));
                    out.push(Self::field(v, "1", 1));
                }
                Ty::P | Ty::PRef | Ty::PMut => {
                    out.push(Self::field(v.clone(), "x", 0));
                    out.push(Self::field(v, "y", 1));
                }
                Ty::S | Ty::SRef | Ty::SMut => {
                    out.push(Self::field(v.clone(), "a", 0));
                    let p = Self::field(v, "p", 3);
                    out.push(Self::field(p.clone(), "x", 0));
                    out.push(Self::field(p, "y", 1));
                }
                _ => {}
            }
        }
        out
    }

    fn int_reads(&self) -> Vec<(Expr, u64)> {
        let mut out = Vec::new();
        for l in self.visible() {
            match l.ty {
                Ty::Usize => out.push((Self::var(l), l.bound)),
                Ty::S | Ty::SRef | Ty::SMut => {
                    out.push((Self::field(Self::var(l), "k", 1), INT_MAX));
                }
                _ => {}
            }
        }
        out
    }

    fn bool_reads(&self) -> Vec<Expr> {
        self.visible().into_iter().filter(|l| l.ty == Ty::Bool).map(Self::var).collect()
    }

    fn buffers(&self) -> Vec<BufCand> {
        let mut out = Vec::new();
        for l in self.visible() {
            let v = Self::var(l);
            let root = l.var.id;
            let free = !self.frozen.contains(&root);
            let (writable, growable) = match l.ty {
                Ty::Slice | Ty::VecRef | Ty::ArrRef => (false, false),
                Ty::SliceMut | Ty::ArrMut => (free, false),
                Ty::VecMut => (free, free),
                Ty::Vec => (free && l.mutable, free && l.mutable),
                Ty::Arr => (free && l.mutable, false),
                Ty::S | Ty::SRef | Ty::SMut => {
                    let w = match l.ty {
                        Ty::S => free && l.mutable,
                        Ty::SMut => free,
                        _ => false,
                    };
                    out.push(BufCand {
                        expr: Self::field(v, "w", 2),
                        ty: Ty::Vec,
                        root,
                        writable: w,
                        growable: w,
                    });
                    continue;
                }
                _ => continue,
            };
            out.push(BufCand { expr: v, ty: l.ty, root, writable, growable });
        }
        out
    }

    /// Buffers a slice method that writes (`fill`, `swap`, `copy_from_slice`) may take.
    fn slice_method_targets(&self) -> Vec<BufCand> {
        self.buffers().into_iter().filter(|b| b.writable && self.method_ok(b)).collect()
    }

    /// Whether a buffer method may be called on `b` (see `Avoid::buffer_method_on_local_field`).
    fn method_ok(&self, b: &BufCand) -> bool {
        !(self.avoid.buffer_method_on_local_field
            && matches!(b.expr, Expr::Field(..))
            && self.locals.iter().any(|l| l.var.id == b.root && l.ty == Ty::S))
    }

    /// Writable float places (not buffer elements).
    fn f64_places(&self) -> Vec<(Expr, usize)> {
        let mut out = Vec::new();
        for l in self.visible() {
            if self.frozen.contains(&l.var.id) {
                continue;
            }
            let v = Self::var(l);
            let root = l.var.id;
            match (l.ty, l.mutable) {
                (Ty::F64, true) => out.push((v, root)),
                (Ty::F64Mut, _) => out.push((Expr::Deref(bx(v)), root)),
                (Ty::Tuple | Ty::Q, true) => {
                    out.push((Self::field(v.clone(), "0", 0), root));
                    out.push((Self::field(v, "1", 1), root));
                }
                (Ty::P, true) | (Ty::PMut, _) => {
                    out.push((Self::field(v.clone(), "x", 0), root));
                    out.push((Self::field(v, "y", 1), root));
                }
                (Ty::S, true) | (Ty::SMut, _) => {
                    out.push((Self::field(v.clone(), "a", 0), root));
                    let p = Self::field(v, "p", 3);
                    out.push((Self::field(p.clone(), "x", 0), root));
                    out.push((Self::field(p, "y", 1), root));
                }
                _ => {}
            }
        }
        out
    }

    // ---- expressions -------------------------------------------------------------------

    fn lit(k: u8) -> Expr {
        Expr::F(LITS[k as usize % LITS.len()])
    }

    fn squash(&mut self, e: Expr, limit: f64) -> Expr {
        let id = self.id();
        Expr::Squash { inner: bx(e), limit, id }
    }

    fn offset(&mut self, e: Expr, kink: Kink) -> Expr {
        let id = self.id();
        Expr::Offset { inner: bx(e), kink, id }
    }

    fn store(&mut self, e: Expr) -> Expr {
        self.squash(e, STORE_LIMIT)
    }

    fn method(recv: Expr, name: &'static str, args: Vec<Expr>, path: bool) -> Expr {
        Expr::Method { recv: bx(recv), name, args, path }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, bx(a), bx(b), Ty::F64)
    }

    /// `e * e + c` with `e` kept below `limit` (`e.powi(2) + c` if `e` calls a function: a
    /// call written twice would run twice).
    fn square_plus(&mut self, e: Expr, c: f64, limit: f64) -> Expr {
        let e = self.squash(e, limit);
        let sq = if e.calls() {
            Self::method(e, "powi", vec![Expr::SInt(2)], false)
        } else {
            Self::bin(BinOp::Mul, e.clone(), e)
        };
        Self::bin(BinOp::Add, sq, Expr::F(c))
    }

    fn positive(&mut self, e: Expr, map: u8, base: f64) -> Expr {
        match map % 3 {
            0 => self.square_plus(e, base.max(0.5), 10.0),
            1 => {
                let off = self.offset(e, Kink::Zero(1e-3));
                Self::bin(
                    BinOp::Add,
                    Self::method(off, "abs", vec![], false),
                    Expr::F(base.max(0.5)),
                )
            }
            _ => {
                let e = self.squash(e, 3.0);
                let ex = Self::method(e, "exp", vec![], false);
                if base > 1.0 { Self::bin(BinOp::Add, ex, Expr::F(base)) } else { ex }
            }
        }
    }

    fn unit_interval(&mut self, e: Expr, map: u8) -> Expr {
        match map % 3 {
            0 => Self::bin(BinOp::Mul, Self::method(e, "tanh", vec![], false), Expr::F(0.9)),
            1 => Self::bin(BinOp::Mul, Self::method(e, "sin", vec![], false), Expr::F(0.9)),
            _ if e.calls() => {
                Self::bin(BinOp::Mul, Self::method(e, "atan", vec![], false), Expr::F(0.6))
            }
            _ => {
                let e = self.squash(e, 10.0);
                let d = Self::bin(
                    BinOp::Add,
                    Self::bin(BinOp::Mul, e.clone(), e.clone()),
                    Expr::F(1.0),
                );
                Self::bin(BinOp::Div, e, d)
            }
        }
    }

    fn fe(&mut self, raw: &FE) -> Expr {
        match raw {
            FE::Var(k) => self.fe_var(*k),
            FE::Lit(k) => Self::lit(*k),
            FE::Const(k) => {
                let (p, v) = CONSTS[*k as usize % CONSTS.len()];
                Expr::Const(p, v)
            }
            FE::Bin(op, a, b) => {
                let a = self.fe(a);
                match op {
                    FOp::Add => Self::bin(BinOp::Add, a, self.fe(b)),
                    FOp::Sub => Self::bin(BinOp::Sub, a, self.fe(b)),
                    FOp::Mul => {
                        let a = self.squash(a, STORE_LIMIT);
                        let b = self.fe(b);
                        let b = self.squash(b, STORE_LIMIT);
                        Self::bin(BinOp::Mul, a, b)
                    }
                    FOp::Div => {
                        let b = self.fe(b);
                        let b = self.offset(b, Kink::Zero(0.25));
                        Self::bin(BinOp::Div, a, b)
                    }
                    FOp::DivSq => {
                        let b = self.fe(b);
                        let d = self.square_plus(b, 1.0, 10.0);
                        Self::bin(BinOp::Div, a, d)
                    }
                    FOp::Rem => {
                        let m = match **b {
                            FE::Lit(k) => MODULI[k as usize % MODULI.len()],
                            _ => MODULI[1],
                        };
                        let a = self.offset(a, Kink::Multiple(m));
                        Self::bin(BinOp::Rem, a, Expr::F(m))
                    }
                }
            }
            FE::Neg(a) => Expr::Neg(bx(self.fe(a))),
            FE::Un(m, flags, a) => {
                let path = flags & 1 == 1;
                let map = flags >> 1;
                let a = self.fe(a);
                let arg = match m {
                    M1::Sin | M1::Cos | M1::Atan | M1::Tanh | M1::Asinh | M1::ToRadians => a,
                    M1::Tan => match map % 3 {
                        0 => Self::method(a, "tanh", vec![], false),
                        1 => Self::method(a, "sin", vec![], false),
                        _ => Self::bin(
                            BinOp::Mul,
                            Self::method(a, "atan", vec![], false),
                            Expr::F(0.9),
                        ),
                    },
                    M1::Asin | M1::Acos | M1::Atanh => self.unit_interval(a, map),
                    M1::Sinh | M1::Cosh | M1::Exp | M1::ExpM1 => self.squash(a, 5.0),
                    M1::Exp2 => self.squash(a, 7.0),
                    M1::ToDegrees => self.squash(a, 10.0),
                    M1::Ln | M1::Log2 | M1::Log10 | M1::Sqrt => self.positive(a, map, 0.5),
                    M1::Ln1p => self.positive(a, map, 0.5),
                    M1::Acosh => self.positive(a, map, 1.5),
                    M1::Cbrt => self.offset(a, Kink::Zero(0.05)),
                    M1::Recip => self.offset(a, Kink::Zero(0.25)),
                    M1::Abs | M1::Signum => self.offset(a, Kink::Zero(1e-3)),
                    M1::Floor | M1::Ceil | M1::Trunc | M1::Fract => self.offset(a, Kink::Integer),
                    M1::Round => self.offset(a, Kink::HalfInteger),
                };
                Self::method(arg, m.name(), vec![], path)
            }
            FE::Bin2(m, flags, a, b) => {
                let path = flags & 1 == 1;
                let a = self.fe(a);
                self.in_method_args += 1;
                let b = self.fe(b);
                self.in_method_args -= 1;
                match m {
                    M2::Atan2 => {
                        let b = self.square_plus(b, 0.5, 10.0);
                        Self::method(a, "atan2", vec![b], path)
                    }
                    M2::Hypot => Self::method(a, "hypot", vec![b], path),
                    M2::Powf => {
                        let base = self.square_plus(a, 0.5, 3.0);
                        let ex = self.squash(b, 2.0);
                        Self::method(base, "powf", vec![ex], path)
                    }
                    M2::Min | M2::Max => {
                        let b = self.offset(b, Kink::Tie);
                        let name = if *m == M2::Min { "min" } else { "max" };
                        Self::method(a, name, vec![b], path)
                    }
                    M2::Log => {
                        let x = self.square_plus(a, 0.5, 10.0);
                        let base = self.square_plus(b, 1.5, 10.0);
                        Self::method(x, "log", vec![base], path)
                    }
                }
            }
            FE::Powi(k, a) => {
                let a = self.fe(a);
                let base = if *k < 0 { self.square_plus(a, 0.5, 3.0) } else { self.squash(a, 5.0) };
                Self::method(base, "powi", vec![Expr::SInt(i64::from(*k))], false)
            }
            FE::MulAdd(abc) => {
                let (a, b, c) = &**abc;
                let a = self.fe(a);
                let a = self.squash(a, STORE_LIMIT);
                self.in_method_args += 1;
                let b = self.fe(b);
                let b = self.squash(b, STORE_LIMIT);
                let c = self.fe(c);
                self.in_method_args -= 1;
                Self::method(a, "mul_add", vec![b, c], false)
            }
            FE::Clamp(k, a) => {
                let (lo, hi) = CLAMPS[*k as usize % CLAMPS.len()];
                let a = self.fe(a);
                let a = self.offset(a, Kink::Bounds(lo, hi));
                Self::method(a, "clamp", vec![Expr::F(lo), Expr::F(hi)], false)
            }
            FE::Cast(i) => Expr::Cast(bx(self.ie(i).0), Ty::F64),
            FE::Elem(b, i) => {
                let bufs = self.buffers();
                if bufs.is_empty() {
                    return self.fe_var(*b);
                }
                let b = bufs[*b as usize % bufs.len()].clone();
                let (index, _) = self.ie(i);
                let index = fold_array_index(b.ty, index);
                let id = self.id();
                Expr::Index { base: bx(b.expr), index: bx(index), id }
            }
            FE::Sum(b) => {
                let bufs = self.buffers();
                if bufs.is_empty() {
                    return self.fe_var(*b);
                }
                Expr::Sum(bx(bufs[*b as usize % bufs.len()].expr.clone()))
            }
            FE::Call(c) => match self.call(c, Some(&[Ty::F64]), true) {
                Some((e, _)) => e,
                None => self.fe_var(c.func),
            },
            FE::CallField(c, second) => match self.call(c, Some(&[Ty::Tuple, Ty::P]), true) {
                Some((e, Ty::Tuple)) => {
                    if *second {
                        Self::field(e, "1", 1)
                    } else {
                        Self::field(e, "0", 0)
                    }
                }
                Some((e, _)) => {
                    if *second {
                        Self::field(e, "y", 1)
                    } else {
                        Self::field(e, "x", 0)
                    }
                }
                None => self.fe_var(c.func),
            },
            FE::If(cab) => {
                let (c, a, b) = &**cab;
                let c = self.be(c);
                let a = self.fe(a);
                let b = self.fe(b);
                Expr::If(
                    bx(c),
                    Box::new(Block { stmts: vec![], tail: Some(a) }),
                    Box::new(Block { stmts: vec![], tail: Some(b) }),
                )
            }
            FE::Match(i, arms) => {
                let (scrut, _) = self.scrutinee(i);
                let mut out = Vec::new();
                let last = arms.len() - 1;
                for (k, (pat, e)) in arms.iter().enumerate() {
                    if k == last {
                        let body = self.fe(e);
                        out.push(Arm {
                            pat: Pat::Wild,
                            guard: None,
                            body: Block { stmts: vec![], tail: Some(body) },
                        });
                    } else {
                        self.push_scope();
                        let (pat, guard) = self.pat(pat);
                        let body = self.fe(e);
                        self.pop_scope();
                        out.push(Arm {
                            pat,
                            guard,
                            body: Block { stmts: vec![], tail: Some(body) },
                        });
                    }
                }
                Expr::Match(bx(scrut), out)
            }
            FE::Block(_, e) if self.in_assert && self.avoid.block_in_assert => self.fe(e),
            FE::Block(stmts, e) => {
                let saved = self.frozen.len();
                if self.operand_rules() {
                    let outer: Vec<usize> = self.locals.iter().map(|l| l.var.id).collect();
                    self.frozen.extend(outer);
                }
                self.push_scope();
                self.block_depth += 1;
                let stmts = self.stmts(stmts);
                let tail = self.fe(e);
                self.block_depth -= 1;
                self.pop_scope();
                self.frozen.truncate(saved);
                if stmts.is_empty() {
                    return tail;
                }
                Expr::Block(Box::new(Block { stmts, tail: Some(tail) }))
            }
        }
    }

    /// The body of a generic function: an expression over its `T` parameters with operators
    /// and the methods that need no constant (no literal can be a `T`).
    fn generic(&mut self, raw: &FE) -> Expr {
        let g = |fx: &mut Self, e: &FE| bx(fx.generic(e));
        match raw {
            FE::Bin(op, a, b) => {
                let op = match op {
                    FOp::Sub => BinOp::Sub,
                    FOp::Mul => BinOp::Mul,
                    _ => BinOp::Add,
                };
                Expr::Bin(op, g(self, a), g(self, b), Ty::F64)
            }
            FE::Neg(a) => Expr::Neg(g(self, a)),
            FE::Un(m, _, a) => {
                let name = match m {
                    M1::Cos => "cos",
                    M1::Tanh => "tanh",
                    M1::Atan => "atan",
                    M1::Asinh => "asinh",
                    _ => "sin",
                };
                Self::method(*g(self, a), name, vec![], false)
            }
            FE::Bin2(_, _, a, b) => {
                let a = *g(self, a);
                Self::method(a, "hypot", vec![*g(self, b)], false)
            }
            FE::MulAdd(abc) => {
                let (a, b, c) = &**abc;
                let (a, b, c) = (*g(self, a), *g(self, b), *g(self, c));
                Self::method(a, "mul_add", vec![b, c], false)
            }
            FE::Powi(k, a) => Self::method(
                *g(self, a),
                "powi",
                vec![Expr::SInt(i64::from(k.rem_euclid(3)) + 1)],
                false,
            ),
            other => {
                let k = match other {
                    FE::Var(k) | FE::Lit(k) | FE::Const(k) => *k,
                    _ => 0,
                };
                self.fe_var(k)
            }
        }
    }

    /// The returned value plus what the body's locals hold (floats, buffer sums, first fields),
    /// so that what the body computes reaches the output and the checks (like Csmith's
    /// checksum of all variables).
    fn checksum(&mut self, tail: Expr, first_local: usize) -> Expr {
        let mut terms = Vec::new();
        for l in self.visible() {
            if !self.locals[first_local..].iter().any(|m| m.var.id == l.var.id) || l.counter {
                continue;
            }
            let v = Self::var(l);
            match l.ty {
                Ty::F64 => terms.push(v),
                Ty::Vec | Ty::Arr => terms.push(Expr::Sum(bx(v))),
                Ty::Tuple | Ty::Q => terms.push(Self::field(v, "0", 0)),
                Ty::P => terms.push(Self::field(v, "x", 0)),
                _ => {}
            }
        }
        let skip = terms.len().saturating_sub(6);
        let Some(sum) = terms.into_iter().skip(skip).reduce(|a, b| Self::bin(BinOp::Add, a, b))
        else {
            return tail;
        };
        let inner = match tail {
            Expr::Squash { inner, .. } => *inner,
            other => other,
        };
        self.store(Self::bin(BinOp::Add, inner, sum))
    }

    /// A function's value with the checksum of its locals added to its first float.
    fn with_checksum(&mut self, tail: Expr, first_local: usize) -> Expr {
        match tail {
            Expr::Tuple(mut es) => {
                es[0] = self.checksum(es[0].clone(), first_local);
                Expr::Tuple(es)
            }
            Expr::VecLit(mut es) => {
                es[0] = self.checksum(es[0].clone(), first_local);
                Expr::VecLit(es)
            }
            Expr::ArrLit(mut es) => {
                es[0] = self.checksum(es[0].clone(), first_local);
                Expr::ArrLit(es)
            }
            Expr::Struct(Ty::P, mut es) => {
                es[0] = self.checksum(es[0].clone(), first_local);
                Expr::Struct(Ty::P, es)
            }
            e @ (Expr::Var(_) | Expr::ToVec(_) | Expr::Struct(..)) => e,
            e => self.checksum(e, first_local),
        }
    }

    fn fe_var(&self, k: u8) -> Expr {
        let reads = self.f64_reads();
        if reads.is_empty() { Self::lit(k) } else { reads[k as usize % reads.len()].clone() }
    }

    /// An integer expression and an upper bound of its value.
    fn ie(&mut self, raw: &IE) -> (Expr, u64) {
        let (e, b) = self.ie_unfolded(raw);
        if self.avoid.int_literal_arith
            && let Some(k) = const_value(&e)
        {
            return (Expr::I(k), k);
        }
        (e, b)
    }

    /// `a op b` on integers, folded if both are literals and the switch says so.
    fn int_bin(&self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let e = Expr::Bin(op, bx(a), bx(b), Ty::Usize);
        match const_value(&e) {
            Some(k) if self.avoid.int_literal_arith => Expr::I(k),
            _ => e,
        }
    }

    fn ie_unfolded(&mut self, raw: &IE) -> (Expr, u64) {
        let int = |op, a: Expr, b: Expr| Expr::Bin(op, bx(a), bx(b), Ty::Usize);
        match raw {
            IE::Var(k) => {
                let reads = self.int_reads();
                if reads.is_empty() {
                    (Expr::I(u64::from(*k % 5)), u64::from(*k % 5))
                } else {
                    reads[*k as usize % reads.len()].clone()
                }
            }
            IE::Lit(k) => (Expr::I(u64::from(*k)), u64::from(*k)),
            IE::Add(a, b) => {
                let (a, x) = self.ie(a);
                let (b, y) = self.ie(b);
                (int(BinOp::Add, a, b), x + y)
            }
            IE::Mul(a, b) => {
                let (a, x) = self.ie(a);
                let (b, y) = self.ie(b);
                (int(BinOp::Mul, a, b), x * y)
            }
            IE::Rem(a, k) => {
                let (a, _) = self.ie(a);
                let k = u64::from(*k).max(1);
                (int(BinOp::Rem, a, Expr::I(k)), k - 1)
            }
            IE::Div(a, k) => {
                let (a, x) = self.ie(a);
                let k = u64::from(*k).max(1);
                (int(BinOp::Div, a, Expr::I(k)), x / k)
            }
            IE::Len(b) => {
                let bufs: Vec<BufCand> = self.buffers().into_iter().collect();
                if bufs.is_empty() {
                    return (Expr::I(1), 1);
                }
                (Expr::Len(bx(bufs[*b as usize % bufs.len()].expr.clone())), 8)
            }
            IE::Min(a, b) | IE::Max(a, b) => {
                let (mut a, mut x) = self.ie(a);
                let (mut b, mut y) = self.ie(b);
                let min = matches!(raw, IE::Min(..));
                if !self.int_receiver_ok(&a) {
                    if !self.int_receiver_ok(&b) {
                        return (a, x);
                    }
                    std::mem::swap(&mut a, &mut b);
                    std::mem::swap(&mut x, &mut y);
                }
                let bound = if min { x.min(y) } else { x.max(y) };
                (Self::method(a, if min { "min" } else { "max" }, vec![b], false), bound)
            }
        }
    }

    /// A `match` scrutinee.
    fn scrutinee(&mut self, raw: &IE) -> (Expr, u64) {
        self.ie(raw)
    }

    /// An integer no larger than `cap`: `e.min(cap)` unless its bound says so already.
    /// Whether an integer method may be called on `e` (see `Avoid::int_field_method` and
    /// `Avoid::int_local_method`).
    fn int_receiver_ok(&self, e: &Expr) -> bool {
        !(self.avoid.int_field_method && matches!(e, Expr::Field(..))
            || self.avoid.int_local_method && !matches!(e, Expr::I(_)))
    }

    fn ie_capped(&mut self, raw: &IE, cap: u64) -> (Expr, u64) {
        let (e, b) = self.ie(raw);
        if b <= cap {
            (e, b)
        } else if !self.int_receiver_ok(&e) {
            (Self::method(Expr::I(cap), "min", vec![e], false), cap)
        } else {
            (Self::method(e, "min", vec![Expr::I(cap)], false), cap)
        }
    }

    fn be(&mut self, raw: &BE) -> Expr {
        match raw {
            BE::CmpF(op, a, b) => {
                let op = match op {
                    CmpOp::Eq => CmpOp::Lt,
                    CmpOp::Ne => CmpOp::Gt,
                    o => *o,
                };
                let a = self.fe(a);
                let b = self.fe(b);
                let id = self.id();
                Expr::Cmp { op, a: bx(a), b: bx(b), float: true, id }
            }
            BE::CmpI(op, a, b) => {
                let (a, _) = self.ie(a);
                let (b, _) = self.ie(b);
                let id = self.id();
                Expr::Cmp { op: *op, a: bx(a), b: bx(b), float: false, id }
            }
            BE::And(a, b) => Expr::And(bx(self.be(a)), bx(self.be(b))),
            BE::Or(a, b) => Expr::Or(bx(self.be(a)), bx(self.be(b))),
            BE::Not(a) => Expr::Not(bx(self.be(a))),
            BE::Var(k) => {
                let reads = self.bool_reads();
                if reads.is_empty() {
                    Expr::B(k % 2 == 0)
                } else {
                    reads[*k as usize % reads.len()].clone()
                }
            }
            BE::Lit(b) => Expr::B(*b),
            BE::IsFinite(e) => Expr::IsFinite(bx(self.fe(e))),
        }
    }

    fn pat(&mut self, raw: &RawPat) -> (Pat, Option<Expr>) {
        match raw {
            RawPat::Lit(k) => (Pat::Ints(vec![u64::from(*k)]), None),
            RawPat::Or(a, b) => {
                let (a, b) = (u64::from(*a), u64::from(*b));
                if a == b { (Pat::Ints(vec![a]), None) } else { (Pat::Ints(vec![a, b]), None) }
            }
            RawPat::Range(a, n) => (Pat::Range(u64::from(*a), u64::from(*a) + u64::from(*n)), None),
            RawPat::Guard(g) => {
                let v = self.fresh("m");
                self.bind(v.clone(), Ty::Usize, false, 100);
                let guard = self.be(g);
                (Pat::Bind(v), Some(guard))
            }
        }
    }

    // ---- calls ---------------------------------------------------------------------------

    /// The functions this one may call, and whether each call is a recursive one (`n - 1`).
    fn callees(&self) -> Vec<(usize, bool)> {
        let me = &self.sigs[self.me];
        let mut out = Vec::new();
        for (j, sig) in self.sigs.iter().enumerate() {
            let recursive_call = me.recursive && sig.recursive && self.in_rec_body;
            if j > self.me {
                if sig.recursive && me.recursive && !self.in_rec_body {
                    // A recursive callee from a recursive function's base: skip, keep it simple.
                    continue;
                }
                if sig.recursive && me.recursive && self.loop_depth > 0 {
                    continue;
                }
                out.push((j, recursive_call));
            } else if recursive_call && self.loop_depth == 0 && j != 0 {
                // Several times: a call back to an earlier recursive function (mutual recursion)
                // is otherwise rare.
                for _ in 0..4 {
                    out.push((j, true));
                }
            }
        }
        out
    }

    /// Resolves a call; `want` restricts the callee's return type.
    fn call(&mut self, raw: &RawCall, want: Option<&[Ty]>, in_expr: bool) -> Option<(Expr, Ty)> {
        let no_mut = in_expr && self.operand_rules();
        let callees: Vec<(usize, bool)> = self
            .callees()
            .into_iter()
            .filter(|(j, _)| {
                let sig = &self.sigs[*j];
                !no_mut || !(sig.params.iter().any(|t| is_mut(*t)) || sig.recv == Some(Ty::PMut))
            })
            .filter(|(j, _)| {
                let ret = if self.sigs[*j].ret == Ty::T { Ty::F64 } else { self.sigs[*j].ret };
                want.is_none_or(|w| w.contains(&ret))
            })
            .collect();
        if callees.is_empty() {
            return None;
        }
        let (j, rec) = callees[raw.func as usize % callees.len()];
        let sig = self.sigs[j].clone();
        // A method's receiver first: lent `&mut` for `&mut self`.
        let mut picks0 = raw.picks.iter().copied().rev();
        let receiver = match sig.recv {
            Some(rty) => {
                let cands = self.receivers(rty);
                if cands.is_empty() {
                    return None;
                }
                let pick = picks0.next().unwrap_or(0) as usize;
                Some(cands[pick % cands.len()].clone())
            }
            None => None,
        };
        // Reference arguments first: a root lent `&mut` may not appear in the other arguments.
        let mut args: Vec<Option<Expr>> = vec![None; sig.params.len()];
        let mut picks = raw.picks.iter().copied().chain(std::iter::repeat(0));
        let mut lent_mut: Vec<usize> = Vec::new();
        let mut lent: Vec<usize> = Vec::new();
        let receiver_root = receiver.as_ref().map(|(_, root, _)| *root);
        if let Some((_, root, by_ref)) = &receiver {
            lent.push(*root);
            if by_ref.is_none() && self.avoid.copy_struct_reused {
                lent_mut.push(*root);
            }
            if *by_ref == Some(true) || by_ref.is_some() && self.avoid.method_arg_reads_receiver {
                lent_mut.push(*root);
            }
        }
        for (k, ty) in sig.params.iter().enumerate() {
            if matches!(ty, Ty::F64 | Ty::T | Ty::Usize | Ty::Bool | Ty::Tuple | Ty::P) {
                continue;
            }
            let pick = picks.next().unwrap_or(0);
            let method_slice = sig.recv.is_some()
                && self.avoid.method_vec_to_slice_arg
                && matches!(ty, Ty::Slice | Ty::SliceMut);
            let cands: Vec<(Expr, usize)> = self
                .ref_candidates(*ty)
                .into_iter()
                .filter(|(_, root)| {
                    !lent_mut.contains(root) && (!is_mut(*ty) || !lent.contains(root))
                })
                .filter(|(_, root)| {
                    let receiver =
                        self.avoid.receiver_lent_as_argument && receiver_root == Some(*root);
                    let iterated = self.avoid.iterated_buffer_lent && self.iterated.contains(root);
                    !receiver && !iterated
                })
                .filter(|(e, root)| {
                    !method_slice
                        || matches!(e, Expr::Var(_))
                            && self.locals.iter().any(|l| {
                                l.var.id == *root && matches!(l.ty, Ty::Slice | Ty::SliceMut)
                            })
                })
                .collect();
            if cands.is_empty() {
                return None;
            }
            let (e, root) = cands[pick as usize % cands.len()].clone();
            if is_mut(*ty) {
                lent_mut.push(root);
            }
            lent.push(root);
            args[k] = Some(e);
        }
        // Borrows taken for the call live through the other arguments: no writes to what is
        // lent, no reads of what is lent `&mut`.
        let saved = self.unreadable.len();
        let saved_frozen = self.frozen.len();
        self.unreadable.extend(lent_mut.iter().copied());
        self.frozen.extend(lent.iter().copied());
        let mut consumed: Vec<Expr> = Vec::new();
        let method_args = usize::from(sig.recv.is_some());
        self.in_method_args += method_args;
        let mut fargs = raw.fargs.iter();
        let mut iargs = raw.iargs.iter();
        let mut bargs = raw.bargs.iter();
        for (k, ty) in sig.params.iter().enumerate() {
            if args[k].is_some() {
                continue;
            }
            let mut next_f = |fx: &mut Self| match fargs.next() {
                Some(f) => {
                    let e = fx.fe(f);
                    fx.store(e)
                }
                None => Self::lit(k as u8),
            };
            args[k] = Some(match ty {
                Ty::F64 | Ty::T => next_f(self),
                Ty::Usize if k == 0 && sig.recursive => {
                    if rec {
                        let n = self.locals.iter().find(|l| l.depth).expect("depth").var.clone();
                        Expr::Bin(BinOp::Sub, bx(Expr::Var(n)), bx(Expr::I(1)), Ty::Usize)
                    } else {
                        match iargs.next() {
                            Some(i) => self.ie_capped(i, 3).0,
                            None => Expr::I(2),
                        }
                    }
                }
                Ty::Usize => match iargs.next() {
                    Some(i) => self.ie_capped(i, INT_MAX).0,
                    None => Expr::I(1),
                },
                Ty::Bool => match bargs.next() {
                    Some(b) => self.be(b),
                    None => Expr::B(true),
                },
                Ty::Tuple => {
                    let tuples: Vec<Expr> = self
                        .visible()
                        .into_iter()
                        .filter(|l| l.ty == Ty::Tuple)
                        .map(Self::var)
                        .collect();
                    let pick = picks.next().unwrap_or(0) as usize;
                    if !tuples.is_empty() && pick.is_multiple_of(2) {
                        tuples[pick / 2 % tuples.len()].clone()
                    } else {
                        let a = next_f(self);
                        let b = next_f(self);
                        Expr::Tuple(vec![a, b])
                    }
                }
                Ty::P => {
                    let ps: Vec<Expr> = self
                        .visible()
                        .into_iter()
                        .filter_map(|l| match l.ty {
                            _ if self.avoid.copy_struct_reused && !self.at_top() => None,
                            _ if self.avoid.copy_struct_reused && lent.contains(&l.var.id) => None,
                            Ty::P => Some(Self::var(l)),
                            Ty::S if self.avoid.copy_struct_reused => None,
                            Ty::S | Ty::SRef | Ty::SMut => Some(Self::field(Self::var(l), "p", 3)),
                            _ => None,
                        })
                        .collect();
                    let pick = picks.next().unwrap_or(0) as usize;
                    if !ps.is_empty() && pick.is_multiple_of(2) {
                        let e = ps[pick / 2 % ps.len()].clone();
                        consumed.push(e.clone());
                        if let (Expr::Var(v), true) = (&e, self.avoid.copy_struct_reused) {
                            self.unreadable.push(v.id);
                        }
                        e
                    } else {
                        let a = next_f(self);
                        let b = next_f(self);
                        Expr::Struct(Ty::P, vec![a, b])
                    }
                }
                _ => unreachable!("reference arguments are resolved first"),
            });
        }
        self.unreadable.truncate(saved);
        self.frozen.truncate(saved_frozen);
        self.in_method_args -= method_args;
        if let Some((recv, _, None)) = &receiver {
            consumed.push(recv.clone());
        }
        if self.avoid.copy_struct_reused {
            for e in consumed {
                self.consume(&e);
            }
        }
        if j < self.me {
            // A call back to an earlier recursive function closes a cycle.
            self.mutual = true;
        }
        let args = args.into_iter().map(|a| a.expect("every argument")).collect();
        let ret = if sig.ret == Ty::T { Ty::F64 } else { sig.ret };
        match receiver {
            Some((recv, _, by_ref)) => {
                Some((Expr::MethodCall { func: j, recv: bx(recv), by_ref, args }, ret))
            }
            None => {
                let in_method = self.sigs[self.me].recv.is_some();
                let qualified = j % 3 == 2
                    && !(self.avoid.self_path_in_method_assert && self.in_assert && in_method);
                Some((Expr::Call { func: j, args, qualified }, ret))
            }
        }
    }

    /// Receivers for a method of `P` taking `rty` (`&P`, `&mut P`, `P`): the expression, its
    /// root, and how it is lent.
    /// Whether expressions may not write what an enclosing operand or receiver reads (see
    /// `Avoid::operand_order` and `Avoid::receiver_order`).
    /// Inside an assertion, always: an assertion that changes a variable is refused.
    fn operand_rules(&self) -> bool {
        self.in_assert
            || self.avoid.operand_order
            || self.avoid.receiver_order && self.in_method_args > 0
    }

    /// At the function's top level: not in a loop or a nested block.
    fn at_top(&self) -> bool {
        self.loop_depth == 0 && self.block_depth == 0
    }

    /// Marks a `P` local as moved (see `Avoid::copy_struct_reused`).
    fn consume(&mut self, e: &Expr) {
        if let Expr::Var(v) = e
            && let Some(l) = self.locals.iter_mut().rev().find(|l| l.var.id == v.id)
        {
            l.moved = true;
        }
    }

    fn receivers(&self, rty: Ty) -> Vec<(Expr, usize, Option<bool>)> {
        let mut out = Vec::new();
        for l in self.visible() {
            let root = l.var.id;
            let frozen = self.frozen.contains(&root);
            let ok = match (rty, l.ty) {
                (Ty::PRef, Ty::P | Ty::PRef | Ty::PMut) => Some(Some(false)),
                (Ty::PMut, Ty::P) if l.mutable && !frozen => Some(Some(true)),
                (Ty::PMut, Ty::PMut) if !frozen => Some(Some(true)),
                (Ty::P, Ty::P) if !self.avoid.copy_struct_reused || self.at_top() => Some(None),
                _ => None,
            };
            if let Some(by_ref) = ok {
                out.push((Self::var(l), root, by_ref));
            }
        }
        out
    }

    /// Arguments for a reference (or enum) parameter, with the root each borrows.
    fn ref_candidates(&self, ty: Ty) -> Vec<(Expr, usize)> {
        let mut out = Vec::new();
        let r = |e: Expr, mutable: bool| Expr::Ref { mutable, inner: bx(e) };
        for l in self.visible() {
            let v = Self::var(l);
            let root = l.var.id;
            let frozen = self.frozen.contains(&root);
            let mut_to_shared = matches!(
                (ty, l.ty),
                (Ty::Slice | Ty::VecRef, Ty::SliceMut | Ty::VecMut)
                    | (Ty::PRef, Ty::PMut)
                    | (Ty::SRef, Ty::SMut)
            );
            if mut_to_shared && self.avoid.mut_arg_to_shared_param {
                continue;
            }
            let fw = |f: &'static str, k: usize| Self::field(v.clone(), f, k);
            match (ty, l.ty) {
                (Ty::E, Ty::E) => out.push((v, root)),
                (Ty::Slice, Ty::Slice | Ty::SliceMut | Ty::VecRef | Ty::VecMut) => {
                    out.push((v, root))
                }
                (Ty::Slice | Ty::VecRef, Ty::Vec) => out.push((r(v, false), root)),
                (Ty::Slice | Ty::VecRef, Ty::SRef) => out.push((r(fw("w", 2), false), root)),
                (Ty::VecRef, Ty::VecRef | Ty::VecMut) => out.push((v, root)),
                (Ty::SliceMut, Ty::SliceMut | Ty::VecMut) if !frozen => out.push((v, root)),
                (Ty::SliceMut | Ty::VecMut, Ty::SMut) if !frozen => {
                    out.push((r(fw("w", 2), true), root))
                }
                (Ty::VecMut, Ty::VecMut) if !frozen => out.push((v, root)),
                (Ty::F64Mut, Ty::F64Mut) if !frozen => out.push((v, root)),
                (Ty::F64Mut, Ty::F64) if l.mutable && !frozen => out.push((r(v, true), root)),
                (Ty::F64Mut, Ty::SMut) if !frozen => {
                    out.push((r(fw("a", 0), true), root));
                    out.push((r(Self::field(fw("p", 3), "x", 0), true), root));
                }
                (Ty::F64Mut, Ty::PMut) if !frozen => out.push((r(fw("y", 1), true), root)),
                (Ty::PRef, Ty::PRef | Ty::PMut) => out.push((v, root)),
                (Ty::PRef, Ty::P) => out.push((r(v, false), root)),
                (Ty::PRef, Ty::SRef) => out.push((r(fw("p", 3), false), root)),
                (Ty::PMut, Ty::PMut) if !frozen => out.push((v, root)),
                (Ty::PMut, Ty::SMut) if !frozen => out.push((r(fw("p", 3), true), root)),
                (Ty::SRef, Ty::SRef | Ty::SMut) => out.push((v, root)),
                (Ty::SRef, Ty::S) => out.push((r(v, false), root)),
                (Ty::SMut, Ty::SMut) if !frozen => out.push((v, root)),
                _ => {}
            }
        }
        if ty == Ty::E && out.is_empty() {
            out.push((Expr::Variant(1), usize::MAX));
        }
        out
    }

    // ---- statements --------------------------------------------------------------------

    fn stmts(&mut self, raw: &[RawStmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in raw {
            let diverges =
                matches!(s, RawStmt::Break(..) | RawStmt::Continue(_) | RawStmt::Return(_));
            let before = out.len();
            self.stmt(s, &mut out);
            if diverges && out.len() > before {
                break;
            }
        }
        out
    }

    fn block(&mut self, raw: &[RawStmt]) -> Block {
        self.push_scope();
        self.block_depth += 1;
        let stmts = self.stmts(raw);
        self.block_depth -= 1;
        self.pop_scope();
        Block { stmts, tail: None }
    }

    fn let_var(&mut self, var: Var, mutable: bool, ty: Ty, init: Expr, annotate: bool) -> Stmt {
        let ty_ann = (annotate || !init.pinned()).then_some(ty);
        Stmt::Let { pat: LetPat::Var(var, mutable), ty: ty_ann, init: Some(init) }
    }

    fn label(&mut self, labelled: bool, id: usize) -> Option<String> {
        labelled.then(|| format!("'l{id}"))
    }

    fn loop_id(&mut self) -> usize {
        self.id()
    }

    /// `let mut k = 0;` for a loop's counter.
    fn counter(&mut self, bound: u64, out: &mut Vec<Stmt>) -> Var {
        let k = self.fresh("k");
        out.push(Stmt::Let {
            pat: LetPat::Var(k.clone(), true),
            ty: Some(Ty::Usize),
            init: Some(Expr::I(0)),
        });
        self.locals.push(Local {
            var: k.clone(),
            ty: Ty::Usize,
            mutable: true,
            depth: false,
            counter: true,
            moved: false,
            bound,
        });
        k
    }

    fn incr(k: &Var) -> Stmt {
        Stmt::Assign { place: Expr::Var(k.clone()), op: Some(BinOp::Add), value: Expr::I(1), id: 0 }
    }

    fn loop_body(&mut self, cx: LoopCx, prefix: Vec<Stmt>, raw: &[RawStmt]) -> Block {
        self.loops.push(cx);
        self.loop_depth += 1;
        let mut body = self.block(raw);
        self.loop_depth -= 1;
        self.loops.pop();
        let mut stmts = prefix;
        stmts.append(&mut body.stmts);
        Block { stmts, tail: None }
    }

    fn tail(&mut self, raw: &RawTail, ty: Ty) -> Option<Expr> {
        let mut fs = raw.fs.iter();
        let mut f = |fx: &mut Self| match fs.next() {
            Some(e) => {
                let e = fx.fe(e);
                fx.store(e)
            }
            None => Expr::F(1.0),
        };
        let locals: Vec<Expr> =
            self.visible().into_iter().filter(|l| l.ty == ty && !l.depth).map(Self::var).collect();
        let pick = raw.pick as usize % (locals.len() + 1);
        if pick > 0 && ty != Ty::F64 && ty != Ty::Unit {
            return Some(locals[pick - 1].clone());
        }
        Some(match ty {
            Ty::Unit => return None,
            Ty::F64 => f(self),
            Ty::Tuple => {
                let a = f(self);
                let b = f(self);
                Expr::Tuple(vec![a, b])
            }
            Ty::P => {
                let a = f(self);
                let b = f(self);
                Expr::Struct(Ty::P, vec![a, b])
            }
            Ty::Vec => {
                let bufs = self.buffers();
                if !bufs.is_empty() && raw.pick % 3 == 1 {
                    Expr::ToVec(bx(bufs[raw.pick as usize % bufs.len()].expr.clone()))
                } else {
                    let a = f(self);
                    let b = f(self);
                    Expr::VecLit(vec![a, b])
                }
            }
            Ty::Arr => {
                let a = f(self);
                let b = f(self);
                let c = f(self);
                Expr::ArrLit(vec![a, b, c])
            }
            other => unreachable!("return type {other:?}"),
        })
    }

    fn vec_source(&mut self, src: u8) -> Option<Expr> {
        // A `Vec<f64>` value from a buffer: moved at the top level, cloned elsewhere.
        let bufs = self.buffers();
        if bufs.is_empty() {
            return None;
        }
        let b = bufs[src as usize % bufs.len()].clone();
        if b.ty == Ty::Vec && matches!(b.expr, Expr::Var(_)) {
            if self.block_depth == 0 && self.loop_depth == 0 && src.is_multiple_of(2) {
                let id = b.root;
                if let Some(l) = self.locals.iter_mut().rev().find(|l| l.var.id == id) {
                    l.moved = true;
                }
                return Some(b.expr);
            }
            return Some(Expr::Clone(bx(b.expr)));
        }
        Some(Expr::ToVec(bx(b.expr)))
    }

    fn stmt(&mut self, raw: &RawStmt, out: &mut Vec<Stmt>) {
        match raw {
            RawStmt::LetF { mutable, annotate, shadow, init } => {
                let e = self.fe(init);
                let e = self.store(e);
                let var = match shadow {
                    Some(k) => {
                        let names: Vec<Var> = self
                            .visible()
                            .into_iter()
                            .filter(|l| !l.depth && !l.counter && l.var.name != "self")
                            .map(|l| l.var.clone())
                            .collect();
                        if names.is_empty() {
                            self.fresh("a")
                        } else {
                            self.next_var += 1;
                            Var {
                                name: names[*k as usize % names.len()].name.clone(),
                                id: self.next_var,
                            }
                        }
                    }
                    None => self.fresh("a"),
                };
                out.push(self.let_var(var.clone(), *mutable, Ty::F64, e, *annotate));
                self.bind(var, Ty::F64, *mutable, 0);
            }
            RawStmt::LetLate(init) => {
                let e = self.fe(init);
                let e = self.store(e);
                let var = self.fresh("a");
                let ty = (!e.pinned()).then_some(Ty::F64);
                out.push(Stmt::Let { pat: LetPat::Var(var.clone(), false), ty, init: None });
                let id = self.id();
                out.push(Stmt::Assign { place: Expr::Var(var.clone()), op: None, value: e, id });
                self.bind(var, Ty::F64, false, 0);
            }
            RawStmt::LetI(i) => {
                let (e, _) = self.ie(i);
                let var = self.fresh("k");
                out.push(self.let_var(var.clone(), true, Ty::Usize, e, false));
                self.bind(var, Ty::Usize, true, 100);
            }
            RawStmt::LetB(b) => {
                let e = self.be(b);
                let var = self.fresh("c");
                out.push(self.let_var(var.clone(), false, Ty::Bool, e, false));
                self.bind(var, Ty::Bool, false, 0);
            }
            RawStmt::LetVec { mutable, init } => {
                let var = self.fresh("v");
                let (e, mutable, pushes) = match init {
                    VecInit::Lit(fs) => {
                        let es = fs
                            .iter()
                            .map(|f| {
                                let e = self.fe(f);
                                self.store(e)
                            })
                            .collect();
                        (Expr::VecLit(es), *mutable, vec![])
                    }
                    VecInit::Rep(f, n) => {
                        let e = self.fe(f);
                        let e = self.store(e);
                        let (n, _) = self.ie_capped(n, 4);
                        let n = self.int_bin(BinOp::Add, n, Expr::I(1));
                        (Expr::VecRep(bx(e), bx(n)), *mutable, vec![])
                    }
                    VecInit::Pushed(cap, fs) => {
                        let n = if *cap { Some(bx(Expr::I(fs.len() as u64))) } else { None };
                        let es: Vec<Expr> = fs
                            .iter()
                            .map(|f| {
                                let e = self.fe(f);
                                self.store(e)
                            })
                            .collect();
                        (Expr::VecNew(n), true, es)
                    }
                    VecInit::ToVec(b) => {
                        match self.buffers().get(*b as usize % self.buffers().len().max(1)) {
                            Some(b) => (Expr::ToVec(bx(b.expr.clone())), *mutable, vec![]),
                            None => (Expr::VecLit(vec![Expr::F(1.0)]), *mutable, vec![]),
                        }
                    }
                    VecInit::Clone(b) => {
                        let vecs: Vec<Expr> = self
                            .buffers()
                            .into_iter()
                            .filter(|c| matches!(c.ty, Ty::Vec | Ty::VecRef | Ty::VecMut))
                            .filter(|c| {
                                !(self.avoid.clone_vec_behind_ref
                                    && (c.ty != Ty::Vec || matches!(c.expr, Expr::Field(..))))
                            })
                            .map(|c| c.expr)
                            .collect();
                        if vecs.is_empty() {
                            (Expr::VecLit(vec![Expr::F(0.5), Expr::F(2.0)]), *mutable, vec![])
                        } else {
                            (
                                Expr::Clone(bx(vecs[*b as usize % vecs.len()].clone())),
                                *mutable,
                                vec![],
                            )
                        }
                    }
                };
                let annotate = matches!(e, Expr::VecNew(None));
                out.push(self.let_var(var.clone(), mutable, Ty::Vec, e, annotate));
                for p in pushes {
                    out.push(Stmt::Push(Expr::Var(var.clone()), p));
                }
                self.bind(var, Ty::Vec, mutable, 0);
            }
            RawStmt::LetArr { mutable, lit, fs } => {
                let es: Vec<Expr> = fs
                    .iter()
                    .map(|f| {
                        let e = self.fe(f);
                        self.store(e)
                    })
                    .collect();
                let e = if *lit {
                    Expr::ArrLit(es)
                } else {
                    Expr::ArrRep(bx(es.into_iter().next().expect("one")))
                };
                let var = self.fresh("r");
                out.push(self.let_var(var.clone(), *mutable, Ty::Arr, e, false));
                self.bind(var, Ty::Arr, *mutable, 0);
            }
            RawStmt::LetTuple { destructure, a, b } => {
                let a = self.fe(a);
                let a = self.store(a);
                let b = self.fe(b);
                let b = self.store(b);
                let init = Expr::Tuple(vec![a, b]);
                if *destructure {
                    let (u, w) = (self.fresh("a"), self.fresh("a"));
                    let ty = (!init.pinned()).then_some(Ty::Tuple);
                    out.push(Stmt::Let {
                        pat: LetPat::Destructure(Ty::Tuple, vec![u.clone(), w.clone()]),
                        ty,
                        init: Some(init),
                    });
                    self.bind(u, Ty::F64, false, 0);
                    self.bind(w, Ty::F64, false, 0);
                } else {
                    let t = self.fresh("t");
                    out.push(self.let_var(t.clone(), false, Ty::Tuple, init, false));
                    self.bind(t, Ty::Tuple, false, 0);
                }
            }
            RawStmt::LetStruct { q, mutable, destructure, a, b } => {
                let ty = if *q { Ty::Q } else { Ty::P };
                let existing: Vec<Expr> =
                    self.visible().into_iter().filter(|l| l.ty == ty).map(Self::var).collect();
                let may_consume = !self.avoid.copy_struct_reused || self.at_top();
                if *destructure && !existing.is_empty() && may_consume {
                    let src = existing[existing.len() - 1].clone();
                    if self.avoid.copy_struct_reused {
                        self.consume(&src);
                    }
                    let (u, w) = (self.fresh("a"), self.fresh("a"));
                    out.push(Stmt::Let {
                        pat: LetPat::Destructure(ty, vec![u.clone(), w.clone()]),
                        ty: None,
                        init: Some(src),
                    });
                    self.bind(u, Ty::F64, false, 0);
                    self.bind(w, Ty::F64, false, 0);
                    return;
                }
                let a = self.fe(a);
                let a = self.store(a);
                let b = self.fe(b);
                let b = self.store(b);
                let var = self.fresh(if *q { "q" } else { "p" });
                out.push(Stmt::Let {
                    pat: LetPat::Var(var.clone(), *mutable),
                    ty: None,
                    init: Some(Expr::Struct(ty, vec![a, b])),
                });
                self.bind(var, ty, *mutable, 0);
            }
            RawStmt::LetS { a, k, buf, px, py } => {
                let a = self.fe(a);
                let a = self.store(a);
                let (k, _) = self.ie_capped(k, INT_MAX);
                let Some(w) = self.vec_source(*buf) else { return };
                let px = self.fe(px);
                let px = self.store(px);
                let py = self.fe(py);
                let py = self.store(py);
                let var = self.fresh("s");
                let mutable = buf % 3 == 0;
                let init = Expr::Struct(Ty::S, vec![a, k, w, Expr::Struct(Ty::P, vec![px, py])]);
                out.push(Stmt::Let {
                    pat: LetPat::Var(var.clone(), mutable),
                    ty: None,
                    init: Some(init),
                });
                self.bind(var, Ty::S, mutable, 0);
            }
            RawStmt::LetCall { call, destructure } => {
                let Some((e, ret)) = self.call(call, None, false) else { return };
                match ret {
                    Ty::Unit => out.push(Stmt::Expr(e)),
                    Ty::F64 => {
                        let v = self.fresh("a");
                        out.push(self.let_var(v.clone(), *destructure, Ty::F64, e, false));
                        self.bind(v, Ty::F64, *destructure, 0);
                    }
                    Ty::Tuple | Ty::P if *destructure => {
                        let (u, w) = (self.fresh("a"), self.fresh("a"));
                        out.push(Stmt::Let {
                            pat: LetPat::Destructure(ret, vec![u.clone(), w.clone()]),
                            ty: None,
                            init: Some(e),
                        });
                        self.bind(u, Ty::F64, false, 0);
                        self.bind(w, Ty::F64, false, 0);
                    }
                    Ty::Tuple | Ty::P | Ty::Vec => {
                        let v = self.fresh(match ret {
                            Ty::Tuple => "t",
                            Ty::P => "p",
                            _ => "v",
                        });
                        let mutable = ret == Ty::Vec && *destructure;
                        out.push(Stmt::Let {
                            pat: LetPat::Var(v.clone(), mutable),
                            ty: None,
                            init: Some(e),
                        });
                        self.bind(v, ret, mutable, 0);
                    }
                    other => unreachable!("helpers do not return {other:?}"),
                }
            }
            RawStmt::LetLoop { bound, label, body, exit } => {
                let k = self.counter(u64::from(*bound), out);
                let id = self.loop_id();
                let label = self.label(*label, id);
                let exit_value = {
                    // Drawn before the loop's context is pushed, but placed in the loop: a
                    // `break` in it would bind to the wrong loop.
                    self.no_jumps += 1;
                    let e = self.fe(exit);
                    self.no_jumps -= 1;
                    self.store(e)
                };
                let check = Stmt::If(
                    vec![(
                        Expr::Cmp {
                            op: CmpOp::Gt,
                            a: bx(Expr::Var(k.clone())),
                            b: bx(Expr::I(u64::from(*bound))),
                            float: false,
                            id: 0,
                        },
                        Block {
                            stmts: vec![Stmt::Break {
                                target: id,
                                label: None,
                                value: Some(exit_value),
                            }],
                            tail: None,
                        },
                    )],
                    None,
                );
                let cx = LoopCx { id, label: label.clone(), value: true };
                let body = self.loop_body(cx, vec![Self::incr(&k), check], body);
                let var = self.fresh("a");
                let init = Expr::Loop { label, id, body: Box::new(body) };
                out.push(Stmt::Let {
                    pat: LetPat::Var(var.clone(), false),
                    ty: Some(Ty::F64),
                    init: Some(init),
                });
                self.bind(var, Ty::F64, false, 0);
            }
            RawStmt::Assign { place, index, op, value } => {
                let scalars = self.f64_places();
                let bufs: Vec<BufCand> =
                    self.buffers().into_iter().filter(|b| b.writable).collect();
                let n = scalars.len() + bufs.len();
                if n == 0 {
                    return;
                }
                let k = *place as usize % n;
                let target = if k < scalars.len() {
                    scalars[k].0.clone()
                } else {
                    let b = bufs[k - scalars.len()].clone();
                    // `v[i] = ..` on a `Vec` borrows `v` mutably before evaluating `i`.
                    let vec_like =
                        matches!(b.ty, Ty::Vec | Ty::VecMut) || matches!(b.expr, Expr::Field(..));
                    if vec_like {
                        self.unreadable.push(b.root);
                    }
                    let (i, _) = self.ie(index);
                    if vec_like {
                        self.unreadable.pop();
                    }
                    let i = fold_array_index(b.ty, i);
                    let id = self.id();
                    Expr::Index { base: bx(b.expr), index: bx(i), id }
                };
                let v = self.fe(value);
                let (op, v) = match op {
                    AOp::Set => (None, v),
                    AOp::Add => (Some(BinOp::Add), v),
                    AOp::Sub => (Some(BinOp::Sub), v),
                    AOp::Mul => (Some(BinOp::Mul), v),
                    AOp::Div => (Some(BinOp::Div), self.square_plus(v, 1.0, 10.0)),
                };
                let id = self.id();
                out.push(Stmt::Assign { place: target, op, value: v, id });
            }
            RawStmt::AssignI { var, add, value } => {
                let cands: Vec<Var> = self
                    .visible()
                    .into_iter()
                    .filter(|l| l.ty == Ty::Usize && l.mutable && !l.counter && !l.depth)
                    .filter(|l| !self.frozen.contains(&l.var.id))
                    .map(|l| l.var.clone())
                    .collect();
                if cands.is_empty() {
                    return;
                }
                let v = cands[*var as usize % cands.len()].clone();
                let (e, _) = self.ie_capped(value, 10);
                out.push(Stmt::Assign {
                    place: Expr::Var(v),
                    op: add.then_some(BinOp::Add),
                    value: e,
                    id: 0,
                });
            }
            RawStmt::Push { buf, value } => {
                let bufs: Vec<BufCand> = self
                    .buffers()
                    .into_iter()
                    .filter(|b| b.growable && self.method_ok(b))
                    .collect();
                if bufs.is_empty() {
                    return;
                }
                let b = bufs[*buf as usize % bufs.len()].clone();
                if self.avoid.push_reads_itself {
                    self.unreadable.push(b.root);
                }
                // `v.push(e)` reserves `v` before `e` runs: `e` may read `v`, not write it.
                self.frozen.push(b.root);
                let e = self.fe(value);
                self.frozen.pop();
                if self.avoid.push_reads_itself {
                    self.unreadable.pop();
                }
                let e = self.store(e);
                out.push(Stmt::Push(b.expr, e));
            }
            RawStmt::Pop(buf) => {
                let bufs: Vec<BufCand> = self
                    .buffers()
                    .into_iter()
                    .filter(|b| b.growable && b.ty == Ty::VecMut)
                    .collect();
                if bufs.is_empty() {
                    return;
                }
                out.push(Stmt::Pop(bufs[*buf as usize % bufs.len()].expr.clone()));
            }
            RawStmt::Fill { buf, value } => {
                let bufs = self.slice_method_targets();
                if bufs.is_empty() {
                    return;
                }
                let b = bufs[*buf as usize % bufs.len()].clone();
                self.unreadable.push(b.root);
                let e = self.fe(value);
                self.unreadable.pop();
                let e = self.store(e);
                out.push(Stmt::Fill(b.expr, e));
            }
            RawStmt::Swap { buf, i, j } => {
                let bufs = self.slice_method_targets();
                if bufs.is_empty() {
                    return;
                }
                let b = bufs[*buf as usize % bufs.len()].clone();
                // A slice method on a `Vec` borrows it mutably (through `DerefMut`) before its
                // arguments are evaluated: they may not read it.
                self.unreadable.push(b.root);
                let wrap = |fx: &mut Self, i: &IE| {
                    let (i, _) = fx.ie(i);
                    let id = fx.id();
                    Expr::Wrap { index: bx(i), id }
                };
                let (i, j) = (wrap(self, i), wrap(self, j));
                self.unreadable.pop();
                out.push(Stmt::Swap(b.expr, i, j));
            }
            RawStmt::CopyFrom { dst, src } => {
                let bufs = self.buffers();
                let targets = self.slice_method_targets();
                let dsts: Vec<&BufCand> = targets.iter().collect();
                if dsts.is_empty() {
                    return;
                }
                let d = dsts[*dst as usize % dsts.len()];
                // `&s.w` of a struct held by value, lent to a call, is outside the reverse
                // subset; of a `&S` or `&mut S` argument it is in.
                let lendable = |b: &BufCand| {
                    !matches!(b.expr, Expr::Field(..))
                        || self
                            .locals
                            .iter()
                            .any(|l| l.var.id == b.root && matches!(l.ty, Ty::SRef | Ty::SMut))
                };
                let iterated = |b: &BufCand| {
                    self.avoid.iterated_buffer_lent && self.iterated.contains(&b.root)
                };
                let srcs: Vec<&BufCand> = bufs
                    .iter()
                    .filter(|b| b.root != d.root && lendable(b) && !iterated(b))
                    .collect();
                if srcs.is_empty() {
                    return;
                }
                let s = srcs[*src as usize % srcs.len()];
                let by_ref = matches!(s.ty, Ty::Vec | Ty::Arr) || matches!(s.expr, Expr::Field(..));
                let (d, s) = (d.expr.clone(), s.expr.clone());
                let id = self.id();
                out.push(Stmt::CopyFrom(d, s, by_ref, id));
            }
            RawStmt::Store { dst, src } => {
                let dsts: Vec<BufCand> = self
                    .buffers()
                    .into_iter()
                    .filter(|b| {
                        b.writable && (b.ty == Ty::VecMut || matches!(b.expr, Expr::Field(..)))
                    })
                    .collect();
                if dsts.is_empty() {
                    return;
                }
                let d = dsts[*dst as usize % dsts.len()].clone();
                let Some(v) = self.vec_source(*src) else { return };
                let place = match d.ty {
                    Ty::VecMut => Expr::Deref(bx(d.expr)),
                    _ => d.expr,
                };
                out.push(Stmt::Assign { place, op: None, value: v, id: 0 });
            }
            RawStmt::Call(c) => {
                if let Some((e, _)) = self.call(c, None, false) {
                    out.push(Stmt::Expr(e));
                }
            }
            RawStmt::If { cond, then, elifs, els } => {
                let mut arms = Vec::new();
                let c = self.be(cond);
                let b = self.block(then);
                arms.push((c, b));
                for (c, b) in elifs {
                    let c = self.be(c);
                    let b = self.block(b);
                    arms.push((c, b));
                }
                let els = els.as_ref().map(|b| self.block(b));
                out.push(Stmt::If(arms, els));
            }
            RawStmt::Match { scrut, arms } => self.match_stmt(scrut, arms, out),
            RawStmt::For { iter, label, body } => self.for_stmt(iter, *label, body, out),
            RawStmt::While { bound, cond, label, body } => {
                let (b, bound_v) = self.ie_capped(bound, 5);
                let k = self.counter(bound_v, out);
                self.no_jumps += 1;
                let mut c = Expr::Cmp {
                    op: CmpOp::Lt,
                    a: bx(Expr::Var(k.clone())),
                    b: bx(b),
                    float: false,
                    id: 0,
                };
                if let Some(extra) = cond {
                    c = Expr::And(bx(c), bx(self.be(extra)));
                }
                self.no_jumps -= 1;
                let id = self.loop_id();
                let label = self.label(*label, id);
                let cx = LoopCx { id, label: label.clone(), value: false };
                let body = self.loop_body(cx, vec![Self::incr(&k)], body);
                out.push(Stmt::While { label, id, cond: c, body });
            }
            RawStmt::Loop { bound, label, body } => {
                let k = self.counter(u64::from(*bound), out);
                let id = self.loop_id();
                let label = self.label(*label, id);
                let check = Stmt::If(
                    vec![(
                        Expr::Cmp {
                            op: CmpOp::Gt,
                            a: bx(Expr::Var(k.clone())),
                            b: bx(Expr::I(u64::from(*bound))),
                            float: false,
                            id: 0,
                        },
                        Block {
                            stmts: vec![Stmt::Break { target: id, label: None, value: None }],
                            tail: None,
                        },
                    )],
                    None,
                );
                let cx = LoopCx { id, label: label.clone(), value: false };
                let body = self.loop_body(cx, vec![Self::incr(&k), check], body);
                out.push(Stmt::Loop { label, id, body });
            }
            // An assertion may not leave the code around it (the macro refuses it).
            RawStmt::Break(..) | RawStmt::Continue(_) | RawStmt::Return(_) if self.in_assert => {}
            RawStmt::Break(t, e) => {
                let Some(cx) = self.jump_target(*t) else { return };
                let value = if cx.value {
                    let v = self.fe(e);
                    Some(self.store(v))
                } else {
                    None
                };
                let label = if self.loops.last().map(|l| l.id) == Some(cx.id) {
                    None
                } else {
                    cx.label.clone()
                };
                out.push(Stmt::Break { target: cx.id, label, value });
            }
            RawStmt::Continue(t) => {
                let Some(cx) = self.jump_target(*t) else { return };
                let label = if self.loops.last().map(|l| l.id) == Some(cx.id) {
                    None
                } else {
                    cx.label.clone()
                };
                out.push(Stmt::Continue { target: cx.id, label });
            }
            RawStmt::Return(t) => {
                let v = self.tail(t, self.ret);
                out.push(Stmt::Return(v));
            }
            RawStmt::Assert(a) => match a {
                RawAssert::Len(b) | RawAssert::EqLen(b) => {
                    let bufs: Vec<BufCand> = self
                        .buffers()
                        .into_iter()
                        .filter(|c| !(self.avoid.assert_len_of_array && c.ty == Ty::Arr))
                        .collect();
                    if bufs.is_empty() {
                        return;
                    }
                    let x = bufs[*b as usize % bufs.len()].expr.clone();
                    if matches!(a, RawAssert::Len(_)) {
                        let cond = Expr::Cmp {
                            op: CmpOp::Gt,
                            a: bx(Expr::Len(bx(x))),
                            b: bx(Expr::I(0)),
                            float: false,
                            id: 0,
                        };
                        out.push(Stmt::Assert { cond, debug: false, msg: true });
                    } else {
                        out.push(Stmt::AssertEq(Expr::Len(bx(x.clone())), Expr::Len(bx(x))));
                    }
                }
                RawAssert::Finite(e) => {
                    let saved = self.unreadable.len();
                    if self.avoid.assert_reads_loop_element {
                        let held: Vec<usize> = self
                            .locals
                            .iter()
                            .filter(|l| l.ty == Ty::ElemRef)
                            .map(|l| l.var.id)
                            .collect();
                        self.unreadable.extend(held);
                    }
                    self.in_assert = true;
                    let e = self.fe(e);
                    self.in_assert = false;
                    self.unreadable.truncate(saved);
                    out.push(Stmt::Assert { cond: Expr::IsFinite(bx(e)), debug: true, msg: false });
                }
                RawAssert::Panic(i) => {
                    let (e, _) = self.ie(i);
                    let cond = Expr::Cmp {
                        op: CmpOp::Gt,
                        a: bx(e),
                        b: bx(Expr::I(1_000_000)),
                        float: false,
                        id: 0,
                    };
                    out.push(Stmt::PanicIf(cond));
                }
            },
        }
    }

    fn jump_target(&self, t: u8) -> Option<LoopCx> {
        if self.no_jumps > 0 || self.loops.is_empty() {
            return None;
        }
        let n = self.loops.len();
        let k = n - 1 - (t as usize % n);
        let cx = &self.loops[k];
        if k == n - 1 || cx.label.is_some() {
            Some(cx.clone())
        } else {
            Some(self.loops[n - 1].clone())
        }
    }

    fn match_stmt(&mut self, scrut: &Scrut, arms: &[(RawPat, Vec<RawStmt>)], out: &mut Vec<Stmt>) {
        let body = |fx: &mut Self, k: usize| fx.block(&arms[k % arms.len()].1);
        match scrut {
            Scrut::Int(i) => {
                let (e, _) = self.scrutinee(i);
                let mut res = Vec::new();
                let last = arms.len() - 1;
                for (k, (pat, b)) in arms.iter().enumerate() {
                    self.push_scope();
                    let (pat, guard) = if k == last {
                        if k % 2 == 0 {
                            (Pat::Wild, None)
                        } else {
                            let v = self.fresh("m");
                            self.bind(v.clone(), Ty::Usize, false, 100);
                            (Pat::Bind(v), None)
                        }
                    } else {
                        self.pat(pat)
                    };
                    let b = self.block(b);
                    self.pop_scope();
                    res.push(Arm { pat, guard, body: b });
                }
                if !matches!(res.last().map(|a| &a.pat), Some(Pat::Wild | Pat::Bind(_)))
                    || res.last().is_some_and(|a| a.guard.is_some())
                {
                    res.push(Arm { pat: Pat::Wild, guard: None, body: Block::default() });
                }
                out.push(Stmt::Match(e, res));
            }
            Scrut::Mod3(i) => {
                let (e, _) = self.ie(i);
                let e = self.int_bin(BinOp::Rem, e, Expr::I(3));
                let mut res: Vec<Arm> = (0..3u64)
                    .map(|k| Arm {
                        pat: Pat::Ints(vec![k]),
                        guard: None,
                        body: body(self, k as usize),
                    })
                    .collect();
                res.push(Arm {
                    pat: Pat::Wild,
                    guard: None,
                    body: Block { stmts: vec![Stmt::Unreachable], tail: None },
                });
                out.push(Stmt::Match(e, res));
            }
            Scrut::Bool(b) => {
                let e = self.be(b);
                let res = vec![
                    Arm { pat: Pat::Bool(true), guard: None, body: body(self, 0) },
                    Arm { pat: Pat::Bool(false), guard: None, body: body(self, 1) },
                ];
                out.push(Stmt::Match(e, res));
            }
            Scrut::Enum(k) => {
                let es: Vec<Expr> =
                    self.visible().into_iter().filter(|l| l.ty == Ty::E).map(Self::var).collect();
                let e = if es.is_empty() {
                    Expr::Variant(*k % 3)
                } else {
                    es[*k as usize % es.len()].clone()
                };
                let mut res = Vec::new();
                let n = if arms.len() >= 3 { 3 } else { arms.len() };
                for v in 0..n {
                    res.push(Arm { pat: Pat::Variant(v as u8), guard: None, body: body(self, v) });
                }
                if n < 3 {
                    res.push(Arm { pat: Pat::Wild, guard: None, body: Block::default() });
                }
                out.push(Stmt::Match(e, res));
            }
        }
    }

    fn for_stmt(&mut self, iter: &RawIter, label: bool, body: &[RawStmt], out: &mut Vec<Stmt>) {
        let id = self.loop_id();
        let label = self.label(label, id);
        self.no_jumps += 1;
        let resolved = match iter {
            RawIter::Range { lo, hi, inclusive, rev, step } => {
                let (lo, _) = self.ie_capped(lo, 3);
                let (hi, hb) = self.ie_capped(hi, 6);
                let step = (*step >= 2 && !*rev).then_some(u64::from(*step));
                let inclusive = *inclusive && !(*rev && self.avoid.inclusive_rev_range);
                Some((Iter::Range { lo, hi, inclusive, rev: *rev, step }, None, hb + 1))
            }
            RawIter::Buf { buf, other, kind } => {
                let bufs = self.buffers();
                if bufs.is_empty() {
                    None
                } else {
                    let b = bufs[*buf as usize % bufs.len()].clone();
                    let o = bufs[*other as usize % bufs.len()].clone();
                    let direct_ok = match b.ty {
                        Ty::Slice | Ty::VecRef | Ty::ArrRef => {
                            !self.avoid.direct_iteration_deref && matches!(b.expr, Expr::Var(_))
                        }
                        Ty::Vec | Ty::Arr => matches!(b.expr, Expr::Var(_)),
                        _ => false,
                    };
                    let it = match kind % 4 {
                        1 if direct_ok => {
                            Iter::Direct(b.expr.clone(), matches!(b.ty, Ty::Vec | Ty::Arr))
                        }
                        2 => Iter::Enumerate(b.expr.clone()),
                        3 => Iter::Zip(b.expr.clone(), o.expr.clone()),
                        _ => Iter::Elements(b.expr.clone()),
                    };
                    let roots = if matches!(it, Iter::Zip(..)) {
                        vec![b.root, o.root]
                    } else {
                        vec![b.root]
                    };
                    Some((it, Some(roots), 8))
                }
            }
        };
        self.no_jumps -= 1;
        let Some((iter, roots, bound)) = resolved else { return };
        self.push_scope();
        let pat = match &iter {
            Iter::Range { .. } => {
                let i = self.fresh("i");
                self.bind(i.clone(), Ty::Usize, false, bound);
                ForPat::One(i)
            }
            Iter::Elements(_) | Iter::Direct(..) => {
                let e = self.fresh("e");
                self.bind(e.clone(), Ty::ElemRef, false, 0);
                ForPat::One(e)
            }
            Iter::Enumerate(_) => {
                let i = self.fresh("i");
                let e = self.fresh("e");
                self.bind(i.clone(), Ty::Usize, false, 8);
                self.bind(e.clone(), Ty::ElemRef, false, 0);
                ForPat::Two(i, e)
            }
            Iter::Zip(..) => {
                let a = self.fresh("e");
                let b = self.fresh("e");
                self.bind(a.clone(), Ty::ElemRef, false, 0);
                self.bind(b.clone(), Ty::ElemRef, false, 0);
                ForPat::Two(a, b)
            }
        };
        let saved = self.frozen.len();
        let saved_unreadable = self.unreadable.len();
        let saved_iterated = self.iterated.len();
        if let Some(roots) = &roots {
            let held: Vec<usize> = roots
                .iter()
                .copied()
                .filter(|r| {
                    self.locals.iter().any(|l| {
                        l.var.id == *r
                            && !matches!(l.ty, Ty::Slice | Ty::VecRef | Ty::ArrRef | Ty::SRef)
                    })
                })
                .collect();
            self.iterated.extend(held);
        }
        if let Some(roots) = roots {
            if self.avoid.reads_of_iterated_mut {
                let held_mut: Vec<usize> = roots
                    .iter()
                    .copied()
                    .filter(|r| {
                        self.locals.iter().any(|l| {
                            l.var.id == *r
                                && !matches!(l.ty, Ty::Slice | Ty::VecRef | Ty::ArrRef | Ty::SRef)
                        })
                    })
                    .collect();
                self.unreadable.extend(held_mut);
            }
            self.frozen.extend(roots);
        }
        let cx = LoopCx { id, label: label.clone(), value: false };
        let body = self.loop_body(cx, vec![], body);
        self.frozen.truncate(saved);
        self.unreadable.truncate(saved_unreadable);
        self.iterated.truncate(saved_iterated);
        self.pop_scope();
        out.push(Stmt::For { label, id, pat, iter, body });
    }
}

/// The value of an integer expression without variables.
pub fn const_value(e: &Expr) -> Option<u64> {
    match e {
        Expr::I(k) => Some(*k),
        Expr::Bin(op, a, b, Ty::Usize) => {
            let (a, b) = (const_value(a)?, const_value(b)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => a.checked_div(b),
                BinOp::Rem => a.checked_rem(b),
            }
        }
        Expr::Method { recv, name, args, .. } => {
            let (a, b) = (const_value(recv)?, const_value(args.first()?)?);
            Some(if *name == "min" { a.min(b) } else { a.max(b) })
        }
        _ => None,
    }
}

/// A constant index into an array is checked at compile time (`unconditional_panic`, an error
/// even in code that never runs): folded into range.
fn fold_array_index(ty: Ty, index: Expr) -> Expr {
    match (ty, const_value(&index)) {
        (Ty::Arr | Ty::ArrRef | Ty::ArrMut, Some(k)) if k >= ARR_N as u64 => {
            Expr::I(k % ARR_N as u64)
        }
        _ => index,
    }
}

fn is_mut(ty: Ty) -> bool {
    matches!(ty, Ty::SliceMut | Ty::VecMut | Ty::ArrMut | Ty::F64Mut | Ty::PMut | Ty::SMut)
}

fn param_ty(p: PTy) -> (Ty, bool) {
    match p {
        PTy::F64 => (Ty::F64, false),
        PTy::F32 => (Ty::F32, false),
        PTy::Usize => (Ty::Usize, false),
        PTy::Bool => (Ty::Bool, false),
        PTy::Enum => (Ty::E, false),
        PTy::Slice => (Ty::Slice, false),
        PTy::SliceMut => (Ty::SliceMut, false),
        PTy::VecRef => (Ty::VecRef, false),
        PTy::VecMut => (Ty::VecMut, false),
        PTy::VecVal => (Ty::Vec, false),
        PTy::VecValMut => (Ty::Vec, true),
        PTy::Arr => (Ty::Arr, false),
        PTy::ArrValMut => (Ty::Arr, true),
        PTy::ArrRef => (Ty::ArrRef, false),
        PTy::ArrMut => (Ty::ArrMut, false),
        PTy::F64Mut => (Ty::F64Mut, false),
        PTy::Tuple => (Ty::Tuple, false),
        PTy::P => (Ty::P, false),
        PTy::PRef => (Ty::PRef, false),
        PTy::PMut => (Ty::PMut, false),
        PTy::S => (Ty::S, false),
        PTy::SRef => (Ty::SRef, false),
        PTy::SMut => (Ty::SMut, false),
    }
}

fn ret_ty(r: RTy) -> Ty {
    match r {
        RTy::F64 => Ty::F64,
        RTy::Unit => Ty::Unit,
        RTy::Tuple => Ty::Tuple,
        RTy::Vec => Ty::Vec,
        RTy::Arr => Ty::Arr,
        RTy::P => Ty::P,
    }
}

fn input(ty: Ty, raw: &RawInput) -> Value {
    let f = |k: usize| raw.floats[k % raw.floats.len()];
    match ty {
        Ty::F64 | Ty::F64Mut => Value::F(f(0)),
        Ty::F32 => Value::F(f64::from(f(0) as f32)),
        Ty::Usize => Value::I(u64::from(raw.int) % (INT_MAX + 1)),
        Ty::Bool => Value::B(raw.flag),
        Ty::E => Value::E(raw.int % 3),
        Ty::Slice | Ty::SliceMut | Ty::VecRef | Ty::VecMut | Ty::Vec => {
            Value::Buf(raw.floats.clone())
        }
        Ty::Arr | Ty::ArrRef | Ty::ArrMut => Value::Buf((0..ARR_N).map(f).collect()),
        Ty::Tuple | Ty::P | Ty::PRef | Ty::PMut => Value::Rec(vec![Value::F(f(0)), Value::F(f(1))]),
        Ty::S | Ty::SRef | Ty::SMut => Value::Rec(vec![
            Value::F(f(0)),
            Value::I(u64::from(raw.int) % (INT_MAX + 1)),
            Value::Buf(raw.floats.clone()),
            Value::Rec(vec![Value::F(f(1)), Value::F(f(2))]),
        ]),
        other => unreachable!("parameter type {other:?}"),
    }
}

/// Resolves a raw case into a program.
pub fn resolve(raw: &RawCase, avoid: Avoid) -> Program {
    let sigs: Vec<Sig> = raw
        .funcs
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let fparams: Vec<PTy> =
                f.params.iter().copied().filter(|p| k == 0 || p.helper_ok()).collect();
            let mut kind = if k == 0 { FnKind::Free } else { f.kind };
            if kind == FnKind::Generic && !fparams.contains(&PTy::F64) {
                kind = FnKind::Free;
            }
            let recursive = f.recursive && k > 0 && matches!(kind, FnKind::Free | FnKind::Module);
            let decl: Vec<(Ty, bool)> = match kind {
                FnKind::Generic => {
                    fparams.iter().filter(|p| **p == PTy::F64).map(|_| (Ty::T, false)).collect()
                }
                _ => fparams.iter().map(|p| param_ty(*p)).collect(),
            };
            let mut params: Vec<Ty> = Vec::new();
            if recursive {
                params.push(Ty::Usize);
            }
            params.extend(decl.iter().map(|(t, _)| *t));
            let mut ret = ret_ty(f.ret);
            if k > 0 && ret == Ty::Arr {
                ret = Ty::F64;
            }
            if kind == FnKind::Generic {
                ret = Ty::T;
            }
            let recv = match kind {
                FnKind::MethodRef => Some(Ty::PRef),
                FnKind::MethodMut => Some(Ty::PMut),
                FnKind::MethodVal => Some(Ty::P),
                _ => None,
            };
            Sig { params, decl, ret, recursive, kind, recv }
        })
        .collect();
    let mut ids = 0usize;
    let mut funcs = Vec::new();
    for (k, f) in raw.funcs.iter().enumerate() {
        let sig = &sigs[k];
        let mut fx = Fx {
            sigs: &sigs,
            me: k,
            avoid,
            locals: Vec::new(),
            marks: Vec::new(),
            next_var: 0,
            ids: &mut ids,
            loops: Vec::new(),
            frozen: Vec::new(),
            iterated: Vec::new(),
            unreadable: Vec::new(),
            in_rec_body: false,
            in_assert: false,
            in_method_args: 0,
            no_jumps: 0,
            loop_depth: 0,
            block_depth: 0,
            ret: sig.ret,
            mutual: false,
            counters: [0; 12],
        };
        let mut params = Vec::new();
        if let Some(rty) = sig.recv {
            fx.next_var += 1;
            let me = Var { name: "self".into(), id: fx.next_var };
            fx.bind(me.clone(), rty, false, 0);
            params.push(Param { var: me, ty: rty, mutable: false });
        }
        if sig.recursive {
            fx.next_var += 1;
            let n = Var { name: "n".into(), id: fx.next_var };
            fx.locals.push(Local {
                var: n.clone(),
                ty: Ty::Usize,
                mutable: false,
                depth: true,
                counter: false,
                moved: false,
                bound: 3,
            });
            params.push(Param { var: n, ty: Ty::Usize, mutable: false });
        }
        for (j, &(ty, mutable)) in sig.decl.iter().enumerate() {
            fx.next_var += 1;
            let var = Var { name: format!("x{j}"), id: fx.next_var };
            fx.bind(var.clone(), ty, mutable, INT_MAX);
            params.push(Param { var, ty, mutable });
        }
        let mut stmts = Vec::new();
        if sig.recursive {
            let base = fx.tail(&f.base, sig.ret);
            let n = params[0].var.clone();
            stmts.push(Stmt::If(
                vec![(
                    Expr::Cmp {
                        op: CmpOp::Eq,
                        a: bx(Expr::Var(n)),
                        b: bx(Expr::I(0)),
                        float: false,
                        id: 0,
                    },
                    Block { stmts: vec![Stmt::Return(base)], tail: None },
                )],
                None,
            ));
            fx.in_rec_body = true;
        }
        let tail = if sig.kind == FnKind::Generic {
            Some(fx.generic(f.tail.fs.first().unwrap_or(&FE::Var(0))))
        } else {
            let first_local = fx.locals.len();
            stmts.extend(fx.stmts(&f.body));
            let ends = matches!(stmts.last(), Some(Stmt::Return(_)));
            if ends {
                None
            } else {
                fx.tail(&f.tail, sig.ret).map(|t| fx.with_checksum(t, first_local))
            }
        };
        let mutual = fx.mutual;
        funcs.push(Func {
            name: if k == 0 { "f".into() } else { format!("g{k}") },
            params,
            ret: sig.ret,
            mutual,
            kind: sig.kind,
            body: Block { stmts, tail },
        });
    }
    let entry = &funcs[0];
    let mut args: Vec<Arg> = Vec::new();
    let mut first_shared: Option<(usize, Ty)> = None;
    for (k, p) in entry.params.iter().enumerate() {
        if raw.alias && matches!(p.ty, Ty::Slice | Ty::VecRef) {
            if let Some((j, _)) = first_shared {
                args.push(Arg::Alias(j));
                continue;
            }
            first_shared = Some((k, p.ty));
        }
        args.push(Arg::Own(input(p.ty, &raw.inputs[k % raw.inputs.len()])));
    }
    Program { funcs, args, seed: u64::from(raw.seed) }
}

impl Expr {
    /// Whether the expression calls a generated function (anywhere inside it).
    pub fn calls(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Call { .. } | Expr::MethodCall { .. }));
        found
    }

    /// Calls `f` on the expression and every expression inside it, blocks included.
    fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        let block = |b: &Block, f: &mut dyn FnMut(&Expr)| {
            for s in &b.stmts {
                s.visit(f);
            }
            if let Some(t) = &b.tail {
                t.visit(f);
            }
        };
        match self {
            Expr::F(_) | Expr::I(_) | Expr::SInt(_) | Expr::B(_) | Expr::Const(..) => {}
            Expr::Var(_) | Expr::Variant(_) | Expr::VecNew(None) => {}
            Expr::Deref(a) | Expr::Field(a, ..) | Expr::Neg(a) | Expr::Not(a) => a.visit(f),
            Expr::Cast(a, _) | Expr::Len(a) | Expr::Sum(a) | Expr::IsFinite(a) => a.visit(f),
            Expr::ToVec(a) | Expr::Clone(a) | Expr::ArrRep(a) => a.visit(f),
            Expr::Squash { inner, .. } | Expr::Offset { inner, .. } | Expr::Ref { inner, .. } => {
                inner.visit(f)
            }
            Expr::Wrap { index, .. } => index.visit(f),
            Expr::VecNew(Some(n)) => n.visit(f),
            Expr::Index { base, index, .. } => {
                base.visit(f);
                index.visit(f);
            }
            Expr::Bin(_, a, b, _) | Expr::And(a, b) | Expr::Or(a, b) | Expr::VecRep(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Cmp { a, b, .. } => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Method { recv, args, .. } => {
                recv.visit(f);
                args.iter().for_each(|a| a.visit(f));
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| a.visit(f)),
            Expr::MethodCall { recv, args, .. } => {
                recv.visit(f);
                args.iter().for_each(|a| a.visit(f));
            }
            Expr::VecLit(es) | Expr::ArrLit(es) | Expr::Tuple(es) | Expr::Struct(_, es) => {
                es.iter().for_each(|a| a.visit(f))
            }
            Expr::If(c, a, b) => {
                c.visit(f);
                block(a, f);
                block(b, f);
            }
            Expr::Match(s, arms) => {
                s.visit(f);
                for arm in arms {
                    if let Some(g) = &arm.guard {
                        g.visit(f);
                    }
                    block(&arm.body, f);
                }
            }
            Expr::Block(b) | Expr::Loop { body: b, .. } => block(b, f),
        }
    }

    /// Whether the expression's type is fixed without the context (it mentions a typed
    /// variable, call, field or path); a literal-only expression is `{float}` until unified,
    /// and a method call on it would not compile.
    pub fn pinned(&self) -> bool {
        match self {
            Expr::F(_) | Expr::I(_) => false,
            Expr::B(_) | Expr::Const(..) | Expr::Var(_) | Expr::Call { .. } => true,
            Expr::MethodCall { .. } => true,
            Expr::Len(_) | Expr::Sum(_) | Expr::Cast(..) | Expr::IsFinite(_) => true,
            Expr::Deref(_) | Expr::Field(..) | Expr::Index { .. } => true,
            Expr::Variant(_) | Expr::Struct(..) | Expr::Cmp { .. } => true,
            Expr::Bin(_, a, b, _) => a.pinned() || b.pinned(),
            Expr::Wrap { index, .. } => index.pinned(),
            Expr::Neg(a) | Expr::Not(a) => a.pinned(),
            Expr::And(..) | Expr::Or(..) => true,
            Expr::Method { .. } | Expr::SInt(_) => true,
            Expr::Squash { inner, .. } | Expr::Offset { inner, .. } => inner.pinned(),
            Expr::Ref { inner, .. } => inner.pinned(),
            Expr::If(_, a, b) => {
                a.tail.as_ref().is_some_and(Expr::pinned)
                    || b.tail.as_ref().is_some_and(Expr::pinned)
            }
            Expr::Match(_, arms) => {
                arms.iter().any(|a| a.body.tail.as_ref().is_some_and(Expr::pinned))
            }
            Expr::Block(b) => b.tail.as_ref().is_some_and(Expr::pinned),
            Expr::Loop { .. } => false,
            Expr::VecLit(es) | Expr::ArrLit(es) => es.iter().any(Expr::pinned),
            Expr::Tuple(es) => es.iter().all(Expr::pinned),
            Expr::VecRep(e, _) | Expr::ArrRep(e) => e.pinned(),
            Expr::VecNew(_) => false,
            Expr::ToVec(_) | Expr::Clone(_) => true,
        }
    }
}

impl Stmt {
    /// Calls `f` on every expression of the statement, nested blocks included.
    fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        let block = |b: &Block, f: &mut dyn FnMut(&Expr)| {
            for s in &b.stmts {
                s.visit(f);
            }
            if let Some(t) = &b.tail {
                t.visit(f);
            }
        };
        match self {
            Stmt::Let { init, .. } => {
                if let Some(e) = init {
                    e.visit(f);
                }
            }
            Stmt::Assign { place, value, .. } => {
                place.visit(f);
                value.visit(f);
            }
            Stmt::Expr(e) | Stmt::Pop(e) | Stmt::PanicIf(e) => e.visit(f),
            Stmt::Assert { cond, .. } => cond.visit(f),
            Stmt::Push(a, b) | Stmt::Fill(a, b) | Stmt::AssertEq(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Stmt::CopyFrom(a, b, ..) => {
                a.visit(f);
                b.visit(f);
            }
            Stmt::Swap(a, b, c) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
            Stmt::If(arms, els) => {
                for (c, b) in arms {
                    c.visit(f);
                    block(b, f);
                }
                if let Some(b) = els {
                    block(b, f);
                }
            }
            Stmt::Match(s, arms) => {
                s.visit(f);
                for arm in arms {
                    if let Some(g) = &arm.guard {
                        g.visit(f);
                    }
                    block(&arm.body, f);
                }
            }
            Stmt::For { iter, body, .. } => {
                match iter {
                    Iter::Range { lo, hi, .. } => {
                        lo.visit(f);
                        hi.visit(f);
                    }
                    Iter::Elements(e) | Iter::Direct(e, _) | Iter::Enumerate(e) => e.visit(f),
                    Iter::Zip(a, b) => {
                        a.visit(f);
                        b.visit(f);
                    }
                }
                block(body, f);
            }
            Stmt::While { cond, body, .. } => {
                cond.visit(f);
                block(body, f);
            }
            Stmt::Loop { body, .. } => block(body, f),
            Stmt::Break { value, .. } => {
                if let Some(v) = value {
                    v.visit(f);
                }
            }
            Stmt::Return(v) => {
                if let Some(v) = v {
                    v.visit(f);
                }
            }
            Stmt::Continue { .. } | Stmt::Unreachable => {}
        }
    }
}
