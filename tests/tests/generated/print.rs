//! Program to Rust source, with the interpreter's repairs applied. Precedence-aware (operands
//! get parentheses only where Rust needs them), and literals whose type nothing else fixes get a
//! suffix where a method is called on them (`0.5_f64.sin()`).

use super::ast::*;
use super::interp::assign_limit;
use super::resolve::const_value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Precedence levels, loosest first.
const TOP: u8 = 0;
const OR: u8 = 1;
const AND: u8 = 2;
const CMP: u8 = 3;
const ADD: u8 = 4;
const MUL: u8 = 5;
const CAST: u8 = 6;
const UNARY: u8 = 7;
const POSTFIX: u8 = 8;
const ATOM: u8 = 9;

struct Printer<'a> {
    prog: &'a Program,
    rep: &'a Repairs,
    types: BTreeSet<&'static str>,
    /// Print the primal alone: no `#[differentiable]`, no `Tangent`.
    plain: bool,
    /// The function being printed (calls are written relative to its module).
    current: usize,
}

fn float(x: f64) -> String {
    format!("{x:?}")
}

fn indent(n: usize) -> String {
    "    ".repeat(n)
}

impl Printer<'_> {
    fn ty(&mut self, t: Ty) -> &'static str {
        match t {
            Ty::P | Ty::PRef | Ty::PMut => {
                self.types.insert("P");
            }
            Ty::S | Ty::SRef | Ty::SMut => {
                self.types.insert("S");
                self.types.insert("P");
            }
            Ty::Q => {
                self.types.insert("Q");
            }
            Ty::E => {
                self.types.insert("E");
            }
            _ => {}
        }
        t.rust()
    }

    fn paren(s: String, prec: u8, min: u8) -> String {
        if prec < min { format!("({s})") } else { s }
    }

    /// `e` as an operand needing at least precedence `min`; `sfx`: literals get a suffix.
    fn expr(&mut self, e: &Expr, min: u8, sfx: bool, ind: usize) -> String {
        let (s, prec) = self.expr_inner(e, min, sfx, ind);
        Self::paren(s, prec, min)
    }

    /// A method receiver: postfix precedence, suffixed literals if its type is not fixed.
    fn recv(&mut self, e: &Expr, sfx: bool, ind: usize) -> String {
        self.expr(e, POSTFIX, sfx || !e.pinned(), ind)
    }

    fn squashed(
        &mut self,
        inner: &Expr,
        limit: f64,
        min: u8,
        sfx: bool,
        ind: usize,
    ) -> (String, u8) {
        let sfx = sfx || !inner.pinned();
        if limit == 1.0 {
            return (format!("{}.tanh()", self.expr(inner, POSTFIX, sfx, ind)), POSTFIX);
        }
        let _ = min;
        let q = format!("{} / {}", self.expr(inner, MUL + 1, sfx, ind), float(limit));
        (format!("({q}).tanh() * {}", float(limit)), MUL)
    }

    fn expr_inner(&mut self, e: &Expr, min: u8, sfx: bool, ind: usize) -> (String, u8) {
        match e {
            Expr::F(x) => (if sfx { format!("{}_f64", float(*x)) } else { float(*x) }, ATOM),
            Expr::I(x) => (if sfx { format!("{x}_usize") } else { x.to_string() }, ATOM),
            Expr::SInt(x) => (x.to_string(), if *x < 0 { UNARY } else { ATOM }),
            Expr::B(b) => (b.to_string(), ATOM),
            Expr::Const(p, _) => ((*p).to_string(), ATOM),
            Expr::Var(v) => (v.name.clone(), ATOM),
            Expr::Deref(a) => (format!("*{}", self.expr(a, UNARY, sfx, ind)), UNARY),
            Expr::Field(a, name, _) => {
                (format!("{}.{name}", self.expr(a, POSTFIX, sfx, ind)), POSTFIX)
            }
            Expr::Index { base, index, id } => {
                let b = self.expr(base, POSTFIX, sfx, ind);
                match self.rep.wrap.get(id) {
                    Some(m) => match const_value(index) {
                        Some(k) => (format!("{b}[{}]", k % m), POSTFIX),
                        None => {
                            let i = self.expr(index, MUL, !index.pinned(), ind);
                            (format!("{b}[{i} % {m}]"), POSTFIX)
                        }
                    },
                    None => (format!("{b}[{}]", self.expr(index, TOP, false, ind)), POSTFIX),
                }
            }
            Expr::Wrap { index, id } => match self.rep.wrap.get(id) {
                Some(m) if const_value(index).is_some() => {
                    (format!("{}", const_value(index).unwrap_or(0) % m), ATOM)
                }
                Some(m) => (format!("{} % {m}", self.expr(index, MUL, !index.pinned(), ind)), MUL),
                None => self.expr_inner(index, min, sfx, ind),
            },
            Expr::Bin(op, a, b, _) => {
                let p = match op {
                    BinOp::Add | BinOp::Sub => ADD,
                    _ => MUL,
                };
                let l = self.expr(a, p, sfx, ind);
                let r = self.expr(b, p + 1, sfx, ind);
                (format!("{l} {} {r}", op.token()), p)
            }
            Expr::Neg(a) => (format!("-{}", self.expr(a, UNARY, sfx, ind)), UNARY),
            Expr::Not(a) => (format!("!{}", self.expr(a, UNARY, sfx, ind)), UNARY),
            Expr::Cmp { op, a, b, float: fl, id } => {
                let l = self.expr(a, CMP + 1, false, ind);
                let off = if *fl { self.rep.offset_of(*id) } else { 0.0 };
                let r = if off == 0.0 {
                    self.expr(b, CMP + 1, false, ind)
                } else {
                    let r = self.expr(b, ADD, !b.pinned() && !a.pinned(), ind);
                    if off > 0.0 {
                        format!("{r} + {}", float(off))
                    } else {
                        format!("{r} - {}", float(-off))
                    }
                };
                (format!("{l} {} {r}", op.token()), CMP)
            }
            Expr::And(a, b) => (
                format!(
                    "{} && {}",
                    self.expr(a, AND, false, ind),
                    self.expr(b, AND + 1, false, ind)
                ),
                AND,
            ),
            Expr::Or(a, b) => (
                format!("{} || {}", self.expr(a, OR, false, ind), self.expr(b, OR + 1, false, ind)),
                OR,
            ),
            Expr::Method { recv, name, args, path } => {
                let args: Vec<String> =
                    args.iter().map(|a| self.expr(a, TOP, false, ind)).collect();
                if *path {
                    let r = self.expr(recv, TOP, false, ind);
                    let mut all = vec![r];
                    all.extend(args);
                    (format!("f64::{name}({})", all.join(", ")), POSTFIX)
                } else {
                    (format!("{}.{name}({})", self.recv(recv, sfx, ind), args.join(", ")), POSTFIX)
                }
            }
            Expr::Squash { inner, limit, id } => {
                if self.rep.squash.contains_key(id) {
                    self.squashed(inner, *limit, min, sfx, ind)
                } else {
                    self.expr_inner(inner, min, sfx, ind)
                }
            }
            Expr::Offset { inner, id, .. } => {
                let off = self.rep.offset_of(*id);
                if off == 0.0 {
                    return self.expr_inner(inner, min, sfx, ind);
                }
                let l = self.expr(inner, ADD, sfx, ind);
                if off > 0.0 {
                    (format!("{l} + {}", float(off)), ADD)
                } else {
                    (format!("{l} - {}", float(-off)), ADD)
                }
            }
            Expr::Cast(a, t) => {
                let s = format!("{} as {}", self.expr(a, UNARY, sfx, ind), t.rust());
                // Parenthesised as any operand: `i as f64 < x` does not parse.
                (s, if min > TOP { TOP } else { CAST })
            }
            Expr::Len(a) => (format!("{}.len()", self.expr(a, POSTFIX, sfx, ind)), POSTFIX),
            Expr::Sum(a) => {
                (format!("{}.iter().sum::<f64>()", self.expr(a, POSTFIX, sfx, ind)), POSTFIX)
            }
            Expr::IsFinite(a) => (format!("{}.is_finite()", self.recv(a, sfx, ind)), POSTFIX),
            Expr::Call { func, args, qualified } => {
                let args: Vec<String> =
                    args.iter().map(|a| self.expr(a, TOP, false, ind)).collect();
                (format!("{}({})", self.path(*func, *qualified), args.join(", ")), POSTFIX)
            }
            Expr::MethodCall { func, recv, args, .. } => {
                let r = self.expr(recv, POSTFIX, false, ind);
                let args: Vec<String> =
                    args.iter().map(|a| self.expr(a, TOP, false, ind)).collect();
                (format!("{r}.{}({})", self.prog.funcs[*func].name, args.join(", ")), POSTFIX)
            }
            Expr::Ref { mutable, inner } => {
                let m = if *mutable { "&mut " } else { "&" };
                (format!("{m}{}", self.expr(inner, UNARY, sfx, ind)), UNARY)
            }
            Expr::If(c, a, b) => {
                let c = self.expr(c, TOP, false, ind);
                let a = self.block_expr(a, ind, sfx);
                let b = self.block_expr(b, ind, sfx);
                (format!("if {c} {a} else {b}"), TOP)
            }
            Expr::Match(scrut, arms) => {
                let s = self.expr(scrut, TOP, !scrut.pinned(), ind);
                (self.match_text(&s, arms, ind, sfx), TOP)
            }
            Expr::Block(b) => (self.block_expr(b, ind, sfx), TOP),
            Expr::Loop { label, body, .. } => {
                let l = label.as_ref().map(|l| format!("{l}: ")).unwrap_or_default();
                (format!("{l}loop {}", self.block_expr(body, ind, sfx)), TOP)
            }
            Expr::VecLit(es) => (format!("vec![{}]", self.list(es, ind)), ATOM),
            Expr::VecRep(e, n) => (
                format!(
                    "vec![{}; {}]",
                    self.expr(e, TOP, false, ind),
                    self.expr(n, TOP, false, ind)
                ),
                ATOM,
            ),
            Expr::VecNew(Some(n)) => {
                (format!("Vec::with_capacity({})", self.expr(n, TOP, false, ind)), POSTFIX)
            }
            Expr::VecNew(None) => ("Vec::new()".into(), POSTFIX),
            Expr::ToVec(a) => (format!("{}.to_vec()", self.expr(a, POSTFIX, sfx, ind)), POSTFIX),
            Expr::Clone(a) => (format!("{}.clone()", self.expr(a, POSTFIX, sfx, ind)), POSTFIX),
            Expr::ArrLit(es) => (format!("[{}]", self.list(es, ind)), ATOM),
            Expr::ArrRep(e) => (format!("[{}; {ARR_N}]", self.expr(e, TOP, false, ind)), ATOM),
            Expr::Tuple(es) => (format!("({})", self.list(es, ind)), ATOM),
            Expr::Struct(t, es) => {
                let name = self.ty(*t);
                let fs: Vec<String> = es.iter().map(|e| self.expr(e, TOP, false, ind)).collect();
                let s = match t {
                    Ty::P => format!("P {{ x: {}, y: {} }}", fs[0], fs[1]),
                    Ty::Q => format!("Q({}, {})", fs[0], fs[1]),
                    Ty::S => {
                        format!("S {{ a: {}, k: {}, w: {}, p: {} }}", fs[0], fs[1], fs[2], fs[3])
                    }
                    other => unreachable!("struct {other:?} ({name})"),
                };
                (s, ATOM)
            }
            Expr::Variant(k) => {
                self.ty(Ty::E);
                (format!("E::{}", ["A", "B", "C"][*k as usize % 3]), ATOM)
            }
        }
    }

    fn list(&mut self, es: &[Expr], ind: usize) -> String {
        es.iter().map(|e| self.expr(e, TOP, false, ind)).collect::<Vec<_>>().join(", ")
    }

    /// A block as an expression: `{ a }` on one line when it has no statements.
    fn block_expr(&mut self, b: &Block, ind: usize, sfx: bool) -> String {
        if b.stmts.is_empty()
            && let Some(t) = &b.tail
        {
            return format!("{{ {} }}", self.expr(t, TOP, sfx, ind));
        }
        self.block_sfx(b, ind, sfx)
    }

    fn block(&mut self, b: &Block, ind: usize) -> String {
        self.block_sfx(b, ind, false)
    }

    fn block_sfx(&mut self, b: &Block, ind: usize, sfx: bool) -> String {
        let mut s = String::from("{\n");
        for st in &b.stmts {
            self.stmt(st, ind + 1, &mut s);
        }
        if let Some(t) = &b.tail {
            let _ = writeln!(s, "{}{}", indent(ind + 1), self.expr(t, TOP, sfx, ind + 1));
        }
        s.push_str(&indent(ind));
        s.push('}');
        s
    }

    fn pat(&mut self, p: &Pat) -> String {
        match p {
            Pat::Wild => "_".into(),
            Pat::Bind(v) => v.name.clone(),
            Pat::Ints(ks) => ks.iter().map(u64::to_string).collect::<Vec<_>>().join(" | "),
            Pat::Range(a, b) => format!("{a}..={b}"),
            Pat::Bool(b) => b.to_string(),
            Pat::Variant(k) => {
                self.ty(Ty::E);
                format!("E::{}", ["A", "B", "C"][*k as usize % 3])
            }
        }
    }

    fn match_text(&mut self, scrut: &str, arms: &[Arm], ind: usize, sfx: bool) -> String {
        let mut s = format!("match {scrut} {{\n");
        for arm in arms {
            let pat = self.pat(&arm.pat);
            let guard = arm
                .guard
                .as_ref()
                .map(|g| format!(" if {}", self.expr(g, TOP, false, ind + 1)))
                .unwrap_or_default();
            let body = if matches!(arm.body.stmts.as_slice(), [Stmt::Unreachable])
                && arm.body.tail.is_none()
            {
                "unreachable!(),".to_string()
            } else {
                let b = self.block_expr(&arm.body, ind + 1, sfx);
                if arm.body.stmts.is_empty() && arm.body.tail.is_some() {
                    format!("{},", &b[2..b.len() - 2])
                } else {
                    b
                }
            };
            let _ = writeln!(s, "{}{pat}{guard} => {body}", indent(ind + 1));
        }
        s.push_str(&indent(ind));
        s.push('}');
        s
    }

    fn label(l: &Option<String>) -> String {
        l.as_ref().map(|l| format!("{l}: ")).unwrap_or_default()
    }

    fn stmt(&mut self, st: &Stmt, ind: usize, out: &mut String) {
        let pad = indent(ind);
        let line = match st {
            Stmt::Let { pat, ty, init } => {
                let p = match pat {
                    LetPat::Var(v, m) => format!("{}{}", if *m { "mut " } else { "" }, v.name),
                    LetPat::Destructure(t, vs) => {
                        let n: Vec<&str> = vs.iter().map(|v| v.name.as_str()).collect();
                        match t {
                            Ty::Tuple => format!("({}, {})", n[0], n[1]),
                            Ty::P => {
                                self.ty(Ty::P);
                                format!("P {{ x: {}, y: {} }}", n[0], n[1])
                            }
                            Ty::Q => {
                                self.ty(Ty::Q);
                                format!("Q({}, {})", n[0], n[1])
                            }
                            other => unreachable!("destructure {other:?}"),
                        }
                    }
                };
                let t = ty.map(|t| format!(": {}", self.ty(t))).unwrap_or_default();
                match init {
                    Some(e) => format!("let {p}{t} = {};", self.expr(e, TOP, false, ind)),
                    None => format!("let {p}{t};"),
                }
            }
            Stmt::Assign { place, op, value, id } => {
                let level = self.rep.assign.get(id).copied().unwrap_or(0);
                let pl = self.expr(place, TOP, false, ind);
                match (op, level) {
                    (None, _) => format!("{pl} = {};", self.expr(value, TOP, false, ind)),
                    (Some(op), 0) => {
                        format!("{pl} {}= {};", op.token(), self.expr(value, TOP, false, ind))
                    }
                    (Some(op), 1) => {
                        let (v, _) = self.squashed(value, assign_limit(*op), TOP, false, ind);
                        format!("{pl} {}= {v};", op.token())
                    }
                    (Some(op), _) => {
                        let p = if matches!(op, BinOp::Add | BinOp::Sub) { ADD } else { MUL };
                        let l = self.expr(place, p, false, ind);
                        let r = self.expr(value, p + 1, false, ind);
                        let inner = Self::paren(format!("{l} {} {r}", op.token()), p, MUL);
                        format!("{pl} = ({inner} / 100.0).tanh() * 100.0;")
                    }
                }
            }
            Stmt::Expr(e) => format!("{};", self.expr(e, TOP, false, ind)),
            Stmt::Push(b, e) => {
                format!(
                    "{}.push({});",
                    self.expr(b, POSTFIX, false, ind),
                    self.expr(e, TOP, false, ind)
                )
            }
            Stmt::Pop(b) => {
                let b = self.expr(b, POSTFIX, false, ind);
                format!("if {b}.len() > 1 {{\n{pad}    {b}.pop();\n{pad}}}")
            }
            Stmt::Fill(b, e) => {
                format!(
                    "{}.fill({});",
                    self.expr(b, POSTFIX, false, ind),
                    self.expr(e, TOP, false, ind)
                )
            }
            Stmt::Swap(b, i, j) => format!(
                "{}.swap({}, {});",
                self.expr(b, POSTFIX, false, ind),
                self.expr(i, TOP, false, ind),
                self.expr(j, TOP, false, ind)
            ),
            Stmt::CopyFrom(d, src, by_ref, id) => {
                if self.rep.skip.contains_key(id) {
                    return;
                }
                let amp = if *by_ref { "&" } else { "" };
                format!(
                    "{}.copy_from_slice({amp}{});",
                    self.expr(d, POSTFIX, false, ind),
                    self.expr(src, UNARY, false, ind)
                )
            }
            Stmt::If(arms, els) => {
                let mut s = String::new();
                for (k, (c, b)) in arms.iter().enumerate() {
                    if k > 0 {
                        s.push_str(" else ");
                    }
                    let _ =
                        write!(s, "if {} {}", self.expr(c, TOP, false, ind), self.block(b, ind));
                }
                if let Some(b) = els {
                    let _ = write!(s, " else {}", self.block(b, ind));
                }
                s
            }
            Stmt::Match(scrut, arms) => {
                let sc = self.expr(scrut, TOP, !scrut.pinned(), ind);
                self.match_text(&sc, arms, ind, false)
            }
            Stmt::For { label, pat, iter, body, .. } => {
                let p = match pat {
                    ForPat::One(v) => v.name.clone(),
                    ForPat::Two(a, b) => format!("({}, {})", a.name, b.name),
                };
                let it = match iter {
                    Iter::Range { lo, hi, inclusive, rev, step } => {
                        let sfx = !lo.pinned() && !hi.pinned();
                        let r = format!(
                            "{}{}{}",
                            self.expr(lo, ADD, false, ind),
                            if *inclusive { "..=" } else { ".." },
                            self.expr(hi, ADD, sfx, ind)
                        );
                        if *rev {
                            format!("({r}).rev()")
                        } else if let Some(k) = step {
                            format!("({r}).step_by({k})")
                        } else {
                            r
                        }
                    }
                    Iter::Elements(b) => format!("{}.iter()", self.expr(b, POSTFIX, false, ind)),
                    Iter::Direct(b, by_ref) => {
                        format!(
                            "{}{}",
                            if *by_ref { "&" } else { "" },
                            self.expr(b, UNARY, false, ind)
                        )
                    }
                    Iter::Enumerate(b) => {
                        format!("{}.iter().enumerate()", self.expr(b, POSTFIX, false, ind))
                    }
                    Iter::Zip(a, b) => format!(
                        "{}.iter().zip({}.iter())",
                        self.expr(a, POSTFIX, false, ind),
                        self.expr(b, POSTFIX, false, ind)
                    ),
                };
                format!("{}for {p} in {it} {}", Self::label(label), self.block(body, ind))
            }
            Stmt::While { label, cond, body, .. } => {
                format!(
                    "{}while {} {}",
                    Self::label(label),
                    self.expr(cond, TOP, false, ind),
                    self.block(body, ind)
                )
            }
            Stmt::Loop { label, body, .. } => {
                format!("{}loop {}", Self::label(label), self.block(body, ind))
            }
            Stmt::Break { label, value, .. } => {
                let l = label.as_ref().map(|l| format!(" {l}")).unwrap_or_default();
                let v = value
                    .as_ref()
                    .map(|v| format!(" {}", self.expr(v, TOP, false, ind)))
                    .unwrap_or_default();
                format!("break{l}{v};")
            }
            Stmt::Continue { label, .. } => {
                let l = label.as_ref().map(|l| format!(" {l}")).unwrap_or_default();
                format!("continue{l};")
            }
            Stmt::Return(v) => match v {
                Some(v) => format!("return {};", self.expr(v, TOP, false, ind)),
                None => "return;".into(),
            },
            Stmt::Assert { cond, debug, msg } => {
                let c = self.expr(cond, TOP, false, ind);
                let m = if *msg { ", \"a buffer is never empty\"" } else { "" };
                format!("{}!({c}{m});", if *debug { "debug_assert" } else { "assert" })
            }
            Stmt::AssertEq(a, b) => {
                format!(
                    "assert_eq!({}, {});",
                    self.expr(a, TOP, false, ind),
                    self.expr(b, TOP, false, ind)
                )
            }
            Stmt::PanicIf(c) => {
                let c = self.expr(c, TOP, false, ind);
                format!("if {c} {{\n{pad}    panic!(\"too large: {{}}\", 1);\n{pad}}}")
            }
            Stmt::Unreachable => "unreachable!();".into(),
        };
        let _ = writeln!(out, "{pad}{line}");
    }

    /// How the current function names function `j`: through the module `inner` or `super`,
    /// sometimes with `self::`.
    fn path(&self, j: usize, qualified: bool) -> String {
        let name = &self.prog.funcs[j].name;
        let inside = |k: usize| self.prog.funcs[k].kind == FnKind::Module;
        match (inside(self.current), inside(j)) {
            (false, true) => format!("inner::{name}"),
            (true, false) => format!("super::{name}"),
            _ if qualified => format!("self::{name}"),
            _ => name.clone(),
        }
    }

    fn func(&mut self, f: &Func, ind: usize) -> String {
        let pad = indent(ind);
        let method = matches!(f.kind, FnKind::MethodRef | FnKind::MethodMut | FnKind::MethodVal);
        let params: Vec<String> = f
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| match (method, k, f.kind) {
                (true, 0, FnKind::MethodRef) => "&self".to_string(),
                (true, 0, FnKind::MethodMut) => "&mut self".to_string(),
                (true, 0, _) => "self".to_string(),
                _ => format!(
                    "{}{}: {}",
                    if p.mutable { "mut " } else { "" },
                    p.var.name,
                    self.ty(p.ty)
                ),
            })
            .collect();
        let ret = if f.ret == Ty::Unit { String::new() } else { format!(" -> {}", self.ty(f.ret)) };
        let attr = if self.plain || method {
            String::new()
        } else if f.mutual {
            // Mutual recursion needs no attribute of its own (the rules of functions that call
            // others box their pullbacks).
            format!("{pad}// closes a cycle of mutual recursion\n{pad}#[differentiable]\n")
        } else {
            format!("{pad}#[differentiable]\n")
        };
        let vis = if f.kind == FnKind::Module { "pub(super) " } else { "" };
        let generics = if f.kind == FnKind::Generic { "<T: Float>" } else { "" };
        format!(
            "{attr}{pad}{vis}fn {}{generics}({}){ret} {}\n",
            f.name,
            params.join(", "),
            self.block(&f.body, ind)
        )
    }

    /// Every function: free ones, then the methods of `P` in one `impl` block, then the
    /// functions of the module `inner`.
    fn items(&mut self, ind: usize) -> String {
        let pad = indent(ind);
        let mut free = String::new();
        let mut methods = String::new();
        let mut module = String::new();
        for (k, f) in self.prog.funcs.iter().enumerate() {
            self.current = k;
            match f.kind {
                FnKind::MethodRef | FnKind::MethodMut | FnKind::MethodVal => {
                    if !methods.is_empty() {
                        methods.push('\n');
                    }
                    methods.push_str(&self.func(f, ind + 1));
                }
                FnKind::Module => {
                    module.push('\n');
                    module.push_str(&self.func(f, ind + 1));
                }
                _ => {
                    free.push_str(&self.func(f, ind));
                    free.push('\n');
                }
            }
        }
        if !methods.is_empty() {
            self.ty(Ty::P);
            let attr = if self.plain { String::new() } else { format!("{pad}#[differentiable]\n") };
            free.push_str(&format!("{attr}{pad}impl P {{\n{methods}{pad}}}\n\n"));
        }
        if !module.is_empty() {
            let prelude = if self.plain { "" } else { "\n    use mooncake_runtime::prelude::*;" };
            let prelude = prelude.replace("\n", &format!("\n{pad}"));
            free.push_str(&format!(
                "{pad}mod inner {{\n{pad}    use super::*;{prelude}\n{module}{pad}}}\n\n"
            ));
        }
        free
    }

    fn value(&mut self, v: &Value, ty: Ty) -> String {
        match (v, ty) {
            (Value::F(x), Ty::F32) => format!("{}_f32", *x as f32),
            (Value::F(x), _) => float(*x),
            (Value::I(x), _) => x.to_string(),
            (Value::B(b), _) => b.to_string(),
            (Value::E(k), _) => {
                self.ty(Ty::E);
                format!("E::{}", ["A", "B", "C"][*k as usize % 3])
            }
            (Value::Buf(b), Ty::Arr | Ty::ArrRef | Ty::ArrMut) => {
                format!("[{}]", b.iter().map(|x| float(*x)).collect::<Vec<_>>().join(", "))
            }
            (Value::Buf(b), _) => {
                format!("vec![{}]", b.iter().map(|x| float(*x)).collect::<Vec<_>>().join(", "))
            }
            (Value::Rec(fs), Ty::Tuple) => {
                format!("({}, {})", self.value(&fs[0], Ty::F64), self.value(&fs[1], Ty::F64))
            }
            (Value::Rec(fs), Ty::P | Ty::PRef | Ty::PMut) => {
                self.ty(Ty::P);
                format!(
                    "P {{ x: {}, y: {} }}",
                    self.value(&fs[0], Ty::F64),
                    self.value(&fs[1], Ty::F64)
                )
            }
            (Value::Rec(fs), _) => {
                self.ty(Ty::S);
                format!(
                    "S {{ a: {}, k: {}, w: {}, p: {} }}",
                    self.value(&fs[0], Ty::F64),
                    self.value(&fs[1], Ty::Usize),
                    self.value(&fs[2], Ty::Vec),
                    self.value(&fs[3], Ty::P)
                )
            }
        }
    }

    /// The `let`s of the inputs and the call as `test_rule!` / `check_rule!` take it.
    fn call(&mut self, ind: usize) -> (String, String) {
        let pad = indent(ind);
        let entry = &self.prog.funcs[0];
        let mut lets = String::new();
        let mut args = Vec::new();
        for (k, (p, a)) in entry.params.iter().zip(&self.prog.args).enumerate() {
            let passed_mut = matches!(
                p.ty,
                Ty::SliceMut | Ty::VecMut | Ty::ArrMut | Ty::F64Mut | Ty::PMut | Ty::SMut
            );
            let name = match a {
                Arg::Own(v) => {
                    let v = self.value(v, p.ty);
                    let m = if self.plain && passed_mut { "mut " } else { "" };
                    let _ = writeln!(lets, "{pad}let {m}a{k} = {v};");
                    format!("a{k}")
                }
                Arg::Alias(j) => format!("a{j}"),
            };
            let pass = match p.ty {
                Ty::F64
                | Ty::F32
                | Ty::Usize
                | Ty::Bool
                | Ty::E
                | Ty::Vec
                | Ty::Arr
                | Ty::Tuple
                | Ty::P
                | Ty::S => name,
                Ty::SliceMut | Ty::VecMut | Ty::ArrMut | Ty::F64Mut | Ty::PMut | Ty::SMut => {
                    format!("&mut {name}")
                }
                _ => format!("&{name}"),
            };
            args.push(pass);
        }
        (lets, format!("f({}), seed = {}", args.join(", "), self.prog.seed))
    }

    fn type_defs(&self, ind: usize) -> String {
        let pad = indent(ind);
        let mut s = String::new();
        let tangent = if self.plain { "" } else { "Tangent, " };
        let copy = format!("#[derive({tangent}Clone, Copy, Debug, PartialEq)]");
        if self.types.contains("P") {
            let _ = writeln!(
                s,
                "{pad}{copy}\n{pad}struct P {{\n{pad}    x: f64,\n{pad}    y: f64,\n{pad}}}\n"
            );
        }
        if self.types.contains("Q") {
            let _ = writeln!(s, "{pad}{copy}\n{pad}struct Q(f64, f64);\n");
        }
        if self.types.contains("S") {
            let _ = writeln!(
                s,
                "{pad}#[derive({tangent}Clone, Debug, PartialEq)]\n{pad}struct S {{\n{pad}    a: f64,\n{pad}    k: usize,\n{pad}    w: Vec<f64>,\n{pad}    p: P,\n{pad}}}\n"
            );
        }
        if self.types.contains("E") {
            let _ = writeln!(
                s,
                "{pad}{copy}\n{pad}enum E {{\n{pad}    A,\n{pad}    B,\n{pad}    C,\n{pad}}}\n"
            );
        }
        s
    }
}

/// The program as a module file of the batch crate: its items and `pub fn check()`, which runs
/// `check_rule!` on the entry point.
pub fn batch_module(prog: &Program, rep: &Repairs) -> String {
    let mut p = Printer { prog, rep, types: BTreeSet::new(), plain: false, current: 0 };
    let fns = p.items(0);
    let (lets, call) = p.call(1);
    let types = p.type_defs(0);
    // A scalar result of arguments that are not `&mut`: the batched forward gradient
    // (`chunk = 3`) against one direction per pass, which must agree to the bit.
    let entry = &prog.funcs[0];
    let batched = if entry.ret == Ty::F64
        && !entry.params.iter().any(|p| {
            matches!(
                p.ty,
                Ty::SliceMut | Ty::VecMut | Ty::ArrMut | Ty::F64Mut | Ty::PMut | Ty::SMut
            )
        }) {
        // Arguments by value are cloned (`check_rule!` and the first gradient used them).
        let inner = call.split(", seed").next().unwrap_or_default();
        let inner = inner.strip_prefix("f(").and_then(|c| c.strip_suffix(')')).unwrap_or_default();
        let cloned: Vec<String> = inner
            .split(", ")
            .filter(|a| !a.is_empty())
            .map(|a| if a.starts_with('&') { a.to_string() } else { format!("{a}.clone()") })
            .collect();
        let args = format!("f({})", cloned.join(", "));
        format!(
            "    let one = value_and_gradient_forward!({args});\n    let three = value_and_gradient_forward!({args}, chunk = 3);\n    if format!(\"{{one:?}}\") != format!(\"{{three:?}}\") {{\n        return Err(format!(\"batched forward gradient {{three:?}} against one direction per pass {{one:?}}\"));\n    }}\n"
        )
    } else {
        String::new()
    };
    format!(
        "use mooncake_runtime::prelude::*;\n\n{types}{fns}/// Checks `f` in both modes.\npub fn check() -> Result<(), String> {{\n{lets}    check_rule!({call}).map_err(|e| e.to_string())?;\n{batched}    Ok(())\n}}\n"
    )
}

/// The primal program alone (no attributes, no check): if this does not compile, the generator
/// is wrong, not the macro.
pub fn plain_module(prog: &Program, rep: &Repairs) -> String {
    let mut p = Printer { prog, rep, types: BTreeSet::new(), plain: true, current: 0 };
    let fns = p.items(0);
    let (lets, call) = p.call(1);
    let types = p.type_defs(0);
    let call = call.split(", seed").next().unwrap_or_default();
    format!(
        "use mooncake_runtime::prelude::*;\n\n{types}{fns}/// Calls `f`.\npub fn call() {{\n{lets}    let _ = {call};\n}}\n"
    )
}

/// The program as a regression test: a module with its items and a `#[test]`.
pub fn regression_test(prog: &Program, rep: &Repairs, name: &str) -> String {
    let mut p = Printer { prog, rep, types: BTreeSet::new(), plain: false, current: 0 };
    let fns = p.items(1);
    let (lets, call) = p.call(2);
    let types = p.type_defs(1);
    format!(
        "mod {name} {{\n    use mooncake_runtime::prelude::*;\n\n{types}{fns}    #[test]\n    fn regression() {{\n{lets}        test_rule!({call});\n    }}\n}}\n"
    )
}

/// The functions alone (for reading and for the coverage count).
pub fn functions_text(prog: &Program, rep: &Repairs) -> String {
    let mut p = Printer { prog, rep, types: BTreeSet::new(), plain: false, current: 0 };
    p.items(0)
}
