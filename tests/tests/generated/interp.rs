//! An interpreter of generated programs, used to legalise them before they are compiled: it
//! runs the entry point on its inputs and stops at the first spot that needs a repair (a value
//! above its magnitude limit, a kink or branch threshold closer than the finite differences can
//! tell apart, an index out of range, buffers of different lengths copied), so that
//! [`legalize`] can switch the repair on and run again. What it cannot repair (a step budget
//! exceeded, an assertion that fires) rejects the program: the generator draws another.
//!
//! Floats are computed with the same `f64` methods the compiled program calls, so the values it
//! sees are the compiled program's.

use super::ast::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The largest magnitude kept in storage (the resolver's squash limit at stores).
const STORE_LIMIT: f64 = 100.0;
/// Statements and loop iterations one run may execute.
const BUDGET: u64 = 200_000;
/// Offsets tried at one spot before giving up.
const MAX_OFFSET_LEVEL: u32 = 7;

#[derive(Clone, Debug)]
enum V {
    F(f64),
    I(u64),
    B(bool),
    E(u8),
    Buf(Vec<f64>),
    Rec(Vec<V>),
    Ref(Place),
    Unit,
}

#[derive(Clone, Debug)]
struct Place {
    slot: Rc<RefCell<V>>,
    path: Vec<usize>,
}

/// Why a run stopped.
#[derive(Debug)]
enum Stop {
    /// A spot needs a repair.
    Repair(Spot),
    /// The program cannot be used.
    Invalid(String),
    /// `break`, `continue` or `return` inside an expression, on its way to its target.
    Flow(Flow),
}

#[derive(Debug)]
enum Spot {
    Squash(usize),
    Offset(usize),
    Wrap(usize, u64),
    Assign(usize),
    Skip(usize),
}

type R<T> = Result<T, Stop>;

fn invalid<T>(msg: impl Into<String>) -> R<T> {
    Err(Stop::Invalid(msg.into()))
}

#[derive(Debug)]
enum Flow {
    Normal,
    Break(usize, Option<V>),
    Continue(usize),
    Return(V),
}

struct Interp<'a> {
    prog: &'a Program,
    rep: &'a Repairs,
    steps: u64,
    depth: usize,
    /// Check distances to kinks and thresholds (at the inputs themselves, not at the nearby
    /// points finite differences visit).
    margins: bool,
}

type Env = HashMap<usize, Rc<RefCell<V>>>;

fn slot(v: V) -> Rc<RefCell<V>> {
    Rc::new(RefCell::new(v))
}

/// Reads the value at `path` inside `v`, following references.
fn read_at(v: &V, path: &[usize]) -> R<V> {
    let Some((&k, rest)) = path.split_first() else { return Ok(v.clone()) };
    match v {
        V::Ref(p) => {
            let mut full = p.path.clone();
            full.extend_from_slice(path);
            let inner = p.slot.borrow();
            read_at(&inner, &full)
        }
        V::Rec(fields) => read_at(&fields[k], rest),
        V::Buf(b) => match b.get(k) {
            Some(x) if rest.is_empty() => Ok(V::F(*x)),
            Some(_) => invalid("path through a float"),
            None => invalid("index out of range after checks"),
        },
        other => invalid(format!("cannot project {other:?}")),
    }
}

/// Applies `f` to the value at `path` inside `v`, following references.
fn with_at<T>(v: &mut V, path: &[usize], f: &mut dyn FnMut(&mut V) -> R<T>) -> R<T> {
    if let V::Ref(p) = v {
        let mut full = p.path.clone();
        full.extend_from_slice(path);
        let s = p.slot.clone();
        let mut inner = s.borrow_mut();
        return with_at(&mut inner, &full, f);
    }
    let Some((&k, rest)) = path.split_first() else { return f(v) };
    match v {
        V::Rec(fields) => with_at(&mut fields[k], rest, f),
        V::Buf(b) if rest.is_empty() => match b.get_mut(k) {
            Some(x) => {
                let mut tmp = V::F(*x);
                let r = f(&mut tmp)?;
                match tmp {
                    V::F(y) => *x = y,
                    other => return invalid(format!("stored {other:?} in a float buffer")),
                }
                Ok(r)
            }
            None => invalid("index out of range after checks"),
        },
        other => invalid(format!("cannot project {other:?} mutably")),
    }
}

fn read(p: &Place) -> R<V> {
    let v = p.slot.borrow();
    read_at(&v, &p.path)
}

fn write(p: &Place, value: V) -> R<()> {
    let mut v = p.slot.borrow_mut();
    let mut value = Some(value);
    with_at(&mut v, &p.path, &mut |t| {
        *t = value.take().expect("once");
        Ok(())
    })
}

fn buf_len(p: &Place) -> R<usize> {
    let mut v = p.slot.borrow_mut();
    with_at(&mut v, &p.path, &mut |t| match t {
        V::Buf(b) => Ok(b.len()),
        other => invalid(format!("len of {other:?}")),
    })
}

fn with_buf<T>(p: &Place, mut f: impl FnMut(&mut Vec<f64>) -> R<T>) -> R<T> {
    let mut v = p.slot.borrow_mut();
    with_at(&mut v, &p.path, &mut |t| match t {
        V::Buf(b) => f(b),
        other => invalid(format!("buffer expected, got {other:?}")),
    })
}

fn deref_value(v: V) -> R<V> {
    match v {
        V::Ref(p) => deref_value(read(&p)?),
        other => Ok(other),
    }
}

fn as_f(v: V) -> R<f64> {
    match deref_value(v)? {
        V::F(x) => Ok(x),
        other => invalid(format!("float expected, got {other:?}")),
    }
}

fn as_i(v: V) -> R<u64> {
    match deref_value(v)? {
        V::I(x) => Ok(x),
        other => invalid(format!("integer expected, got {other:?}")),
    }
}

fn as_b(v: V) -> R<bool> {
    match deref_value(v)? {
        V::B(x) => Ok(x),
        other => invalid(format!("bool expected, got {other:?}")),
    }
}

fn as_buf(v: V) -> R<Vec<f64>> {
    match deref_value(v)? {
        V::Buf(x) => Ok(x),
        other => invalid(format!("buffer expected, got {other:?}")),
    }
}

fn near_integer(x: f64) -> f64 {
    (x - x.round()).abs()
}

fn too_close(kink: Kink, v: f64) -> bool {
    const GAP: f64 = 1e-3;
    match kink {
        Kink::Zero(d) => v.abs() < d,
        Kink::Integer => near_integer(v) < GAP,
        Kink::HalfInteger => near_integer(v - 0.5) < GAP,
        Kink::Multiple(m) => {
            let k = (v / m).round();
            k != 0.0 && (v - k * m).abs() < GAP
        }
        Kink::Tie => false,
        Kink::Bounds(lo, hi) => (v - lo).abs() < GAP || (v - hi).abs() < GAP,
    }
}

fn tie(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3 * (1.0 + a.abs() + b.abs())
}

fn squash(v: f64, limit: f64) -> f64 {
    (v / limit).tanh() * limit
}

impl Interp<'_> {
    fn tick(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > BUDGET { invalid("step budget exceeded") } else { Ok(()) }
    }

    fn offset(&self, id: usize) -> f64 {
        self.rep.offset_of(id)
    }

    fn offset_stop(&self, id: usize) -> Stop {
        if self.rep.offset.get(&id).copied().unwrap_or(0) >= MAX_OFFSET_LEVEL {
            Stop::Invalid("a kink or threshold cannot be avoided".into())
        } else {
            Stop::Repair(Spot::Offset(id))
        }
    }

    fn place(&mut self, e: &Expr, env: &mut Env) -> R<Place> {
        match e {
            Expr::Var(v) => match env.get(&v.id) {
                Some(s) => Ok(Place { slot: s.clone(), path: vec![] }),
                None => invalid(format!("unbound {}", v.name)),
            },
            Expr::Deref(inner) => match self.eval(inner, env)? {
                V::Ref(p) => Ok(p),
                other => invalid(format!("deref of {other:?}")),
            },
            Expr::Field(base, _, k) => {
                let mut p = self.place(base, env)?;
                p.path.push(*k);
                Ok(p)
            }
            Expr::Index { base, index, id } => {
                let i = as_i(self.eval(index, env)?)? as usize;
                let mut p = self.place(base, env)?;
                let len = buf_len(&p)?;
                let i = match self.rep.wrap.get(id) {
                    Some(m) => i % *m as usize,
                    None => i,
                };
                if i >= len {
                    if len == 0 {
                        return invalid("index into an empty buffer");
                    }
                    return Err(Stop::Repair(Spot::Wrap(*id, len as u64)));
                }
                p.path.push(i);
                Ok(p)
            }
            other => {
                let v = self.eval(other, env)?;
                Ok(Place { slot: slot(v), path: vec![] })
            }
        }
    }

    fn eval_f(&mut self, e: &Expr, env: &mut Env) -> R<f64> {
        let v = self.eval(e, env)?;
        as_f(v)
    }

    fn eval(&mut self, e: &Expr, env: &mut Env) -> R<V> {
        let v = match e {
            Expr::F(x) => V::F(*x),
            Expr::I(x) => V::I(*x),
            Expr::SInt(x) => V::F(*x as f64),
            Expr::B(x) => V::B(*x),
            Expr::Const(_, x) => V::F(*x),
            Expr::Var(_) | Expr::Field(..) | Expr::Index { .. } => {
                let p = self.place(e, env)?;
                read(&p)?
            }
            Expr::Deref(inner) => match self.eval(inner, env)? {
                V::Ref(p) => read(&p)?,
                other => return invalid(format!("deref of {other:?}")),
            },
            Expr::Bin(op, a, b, ty) => {
                if *ty == Ty::F64 {
                    let (x, y) = (self.eval_f(a, env)?, self.eval_f(b, env)?);
                    V::F(match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        BinOp::Div => x / y,
                        BinOp::Rem => x % y,
                    })
                } else {
                    let x = as_i(self.eval(a, env)?)?;
                    let y = as_i(self.eval(b, env)?)?;
                    V::I(
                        match op {
                            BinOp::Add => x.checked_add(y),
                            BinOp::Sub => x.checked_sub(y),
                            BinOp::Mul => x.checked_mul(y),
                            BinOp::Div => x.checked_div(y),
                            BinOp::Rem => x.checked_rem(y),
                        }
                        .filter(|v| *v < 1 << 40)
                        .ok_or_else(|| Stop::Invalid("integer overflow".into()))?,
                    )
                }
            }
            Expr::Wrap { index, id } => {
                let i = as_i(self.eval(index, env)?)?;
                V::I(match self.rep.wrap.get(id) {
                    Some(m) => i % m,
                    None => i,
                })
            }
            Expr::Neg(a) => V::F(-self.eval_f(a, env)?),
            Expr::Not(a) => V::B(!as_b(self.eval(a, env)?)?),
            Expr::Cmp { op, a, b, float, id } => {
                let r = if *float {
                    let x = self.eval_f(a, env)?;
                    let y = self.eval_f(b, env)? + self.offset(*id);
                    if self.margins && tie(x, y) {
                        return Err(self.offset_stop(*id));
                    }
                    match op {
                        CmpOp::Lt => x < y,
                        CmpOp::Le => x <= y,
                        CmpOp::Gt => x > y,
                        CmpOp::Ge => x >= y,
                        CmpOp::Eq => x == y,
                        CmpOp::Ne => x != y,
                    }
                } else {
                    let x = as_i(self.eval(a, env)?)?;
                    let y = as_i(self.eval(b, env)?)?;
                    match op {
                        CmpOp::Lt => x < y,
                        CmpOp::Le => x <= y,
                        CmpOp::Gt => x > y,
                        CmpOp::Ge => x >= y,
                        CmpOp::Eq => x == y,
                        CmpOp::Ne => x != y,
                    }
                };
                V::B(r)
            }
            Expr::And(a, b) => V::B(as_b(self.eval(a, env)?)? && as_b(self.eval(b, env)?)?),
            Expr::Or(a, b) => V::B(as_b(self.eval(a, env)?)? || as_b(self.eval(b, env)?)?),
            Expr::Method { recv, name, args, .. } => {
                let r = deref_value(self.eval(recv, env)?)?;
                if let V::I(x) = r {
                    let y = as_i(self.eval(&args[0], env)?)?;
                    return Ok(V::I(if *name == "min" { x.min(y) } else { x.max(y) }));
                }
                let x = as_f(r)?;
                let mut fargs = Vec::new();
                for a in args {
                    fargs.push(self.eval_f(a, env)?);
                }
                if matches!(*name, "min" | "max")
                    && self.margins
                    && tie(x, fargs[0])
                    && let Some(Expr::Offset { id, .. }) = args.first()
                {
                    return Err(self.offset_stop(*id));
                }
                V::F(apply_method(name, x, &fargs)?)
            }
            Expr::Squash { inner, limit, id } => {
                let x = self.eval_f(inner, env)?;
                if self.rep.squash.contains_key(id) {
                    V::F(squash(x, *limit))
                } else if !x.is_finite() || x.abs() > *limit {
                    return Err(Stop::Repair(Spot::Squash(*id)));
                } else {
                    V::F(x)
                }
            }
            Expr::Offset { inner, kink, id } => {
                let x = self.eval_f(inner, env)? + self.offset(*id);
                if self.margins && too_close(*kink, x) {
                    return Err(self.offset_stop(*id));
                }
                V::F(x)
            }
            Expr::Cast(a, _) => match deref_value(self.eval(a, env)?)? {
                V::I(x) => V::F(x as f64),
                V::F(x) => V::F(x),
                other => return invalid(format!("cast of {other:?}")),
            },
            Expr::Len(a) => V::I(as_buf(self.eval(a, env)?)?.len() as u64),
            Expr::Sum(a) => V::F(as_buf(self.eval(a, env)?)?.iter().sum::<f64>()),
            Expr::IsFinite(a) => V::B(self.eval_f(a, env)?.is_finite()),
            Expr::Call { func, args, .. } => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a, env)?);
                }
                self.call(*func, vals)?
            }
            Expr::MethodCall { func, recv, by_ref, args } => {
                let r = match by_ref {
                    Some(_) => V::Ref(self.place(recv, env)?),
                    None => deref_value(self.eval(recv, env)?)?,
                };
                let mut vals = vec![r];
                for a in args {
                    vals.push(self.eval(a, env)?);
                }
                self.call(*func, vals)?
            }
            Expr::Ref { inner, .. } => V::Ref(self.place(inner, env)?),
            Expr::If(c, a, b) => {
                if as_b(self.eval(c, env)?)? {
                    return self.block_value(a, env);
                }
                return self.block_value(b, env);
            }
            Expr::Match(scrut, arms) => {
                let s = deref_value(self.eval(scrut, env)?)?;
                for arm in arms {
                    if let Some(bound) = self.matches(&arm.pat, &s) {
                        if let Some((var, v)) = &bound {
                            env.insert(var.id, slot(v.clone()));
                        }
                        if let Some(g) = &arm.guard
                            && !as_b(self.eval(g, env)?)?
                        {
                            continue;
                        }
                        return self.block_value(&arm.body, env);
                    }
                }
                return invalid("no arm matches");
            }
            Expr::Block(b) => return self.block_value(b, env),
            Expr::Loop { id, body, .. } => loop {
                self.tick()?;
                match self.block(body, env)? {
                    Flow::Normal => {}
                    Flow::Continue(t) if t == *id => {}
                    Flow::Break(t, v) if t == *id => return Ok(v.unwrap_or(V::Unit)),
                    other => return Err(Stop::Flow(other)),
                }
            },
            Expr::VecLit(es) | Expr::ArrLit(es) => {
                let mut b = Vec::new();
                for e in es {
                    b.push(self.eval_f(e, env)?);
                }
                V::Buf(b)
            }
            Expr::VecRep(e, n) => {
                let x = self.eval_f(e, env)?;
                let n = as_i(self.eval(n, env)?)? as usize;
                V::Buf(vec![x; n])
            }
            Expr::ArrRep(e) => V::Buf(vec![self.eval_f(e, env)?; ARR_N]),
            Expr::VecNew(n) => {
                if let Some(n) = n {
                    self.eval(n, env)?;
                }
                V::Buf(Vec::new())
            }
            Expr::ToVec(a) | Expr::Clone(a) => V::Buf(as_buf(self.eval(a, env)?)?),
            Expr::Tuple(es) | Expr::Struct(_, es) => {
                let mut fields = Vec::new();
                for e in es {
                    fields.push(deref_value(self.eval(e, env)?)?);
                }
                V::Rec(fields)
            }
            Expr::Variant(k) => V::E(*k),
        };
        Ok(v)
    }

    fn block_value(&mut self, b: &Block, env: &mut Env) -> R<V> {
        match self.block(b, env)? {
            Flow::Normal => match &b.tail {
                Some(t) => self.eval(t, env),
                None => Ok(V::Unit),
            },
            other => Err(Stop::Flow(other)),
        }
    }

    fn matches(&self, pat: &Pat, v: &V) -> Option<Option<(Var, V)>> {
        let ok = match (pat, v) {
            (Pat::Wild, _) => true,
            (Pat::Bind(var), _) => return Some(Some((var.clone(), v.clone()))),
            (Pat::Ints(ks), V::I(x)) => ks.contains(x),
            (Pat::Range(a, b), V::I(x)) => (a..=b).contains(&x),
            (Pat::Bool(b), V::B(x)) => b == x,
            (Pat::Variant(k), V::E(x)) => k == x,
            _ => false,
        };
        ok.then_some(None)
    }

    fn call(&mut self, func: usize, args: Vec<V>) -> R<V> {
        self.depth += 1;
        if self.depth > 64 {
            return invalid("recursion too deep");
        }
        let f = &self.prog.funcs[func];
        let mut env = Env::new();
        for (p, a) in f.params.iter().zip(args) {
            let a = match p.ty {
                Ty::F64
                | Ty::F32
                | Ty::T
                | Ty::Usize
                | Ty::Bool
                | Ty::E
                | Ty::Vec
                | Ty::Arr
                | Ty::Tuple
                | Ty::P
                | Ty::S => deref_value(a)?,
                _ => a,
            };
            env.insert(p.var.id, slot(a));
        }
        let flow = self.block(&f.body, &mut env)?;
        let out = match flow {
            Flow::Normal => match &f.body.tail {
                Some(t) => match self.eval(t, &mut env) {
                    Err(Stop::Flow(Flow::Return(v))) => v,
                    other => other?,
                },
                None => V::Unit,
            },
            Flow::Return(v) => v,
            other => return invalid(flow_name(&other)),
        };
        self.depth -= 1;
        deref_value(out)
    }

    fn block(&mut self, b: &Block, env: &mut Env) -> R<Flow> {
        for s in &b.stmts {
            self.tick()?;
            match self.stmt(s, env) {
                Ok(Flow::Normal) => {}
                Ok(other) | Err(Stop::Flow(other)) => return Ok(other),
                Err(e) => return Err(e),
            }
        }
        Ok(Flow::Normal)
    }

    fn assign(
        &mut self,
        place: &Expr,
        op: Option<BinOp>,
        value: &Expr,
        id: usize,
        env: &mut Env,
    ) -> R<()> {
        let v = self.eval(value, env)?;
        let p = self.place(place, env)?;
        let v = deref_value(v)?;
        let Some(op) = op else {
            if let (V::F(x), true) = (&v, id != 0)
                && (!x.is_finite() || x.abs() > STORE_LIMIT)
            {
                return invalid("stored value above the limit");
            }
            return write(&p, v);
        };
        let old = read(&p)?;
        match (old, v) {
            (V::I(x), V::I(y)) => {
                let r = match op {
                    BinOp::Add => x.checked_add(y),
                    _ => None,
                };
                write(
                    &p,
                    V::I(
                        r.filter(|r| *r < 1 << 40)
                            .ok_or_else(|| Stop::Invalid("integer overflow".into()))?,
                    ),
                )
            }
            (V::F(x), V::F(y)) => {
                let level = self.rep.assign.get(&id).copied().unwrap_or(0);
                let f = |x: f64, y: f64| match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    BinOp::Rem => x % y,
                };
                let r = match level {
                    0 => f(x, y),
                    1 => f(x, squash(y, assign_limit(op))),
                    _ => squash(f(x, y), STORE_LIMIT),
                };
                if level < 2 && (!r.is_finite() || r.abs() > STORE_LIMIT) {
                    return Err(Stop::Repair(Spot::Assign(id)));
                }
                write(&p, V::F(r))
            }
            (a, b) => invalid(format!("compound assignment of {a:?} and {b:?}")),
        }
    }

    fn stmt(&mut self, s: &Stmt, env: &mut Env) -> R<Flow> {
        match s {
            Stmt::Let { pat, init, .. } => {
                let v = match init {
                    Some(e) => deref_value(self.eval(e, env)?)?,
                    None => V::Unit,
                };
                match pat {
                    LetPat::Var(var, _) => {
                        env.insert(var.id, slot(v));
                    }
                    LetPat::Destructure(_, vars) => {
                        let V::Rec(fields) = v else { return invalid("destructure a non-record") };
                        for (var, f) in vars.iter().zip(fields) {
                            env.insert(var.id, slot(f));
                        }
                    }
                }
            }
            Stmt::Assign { place, op, value, id } => self.assign(place, *op, value, *id, env)?,
            Stmt::Expr(e) => {
                self.eval(e, env)?;
            }
            Stmt::Push(b, e) => {
                let x = self.eval_f(e, env)?;
                let p = self.place(b, env)?;
                with_buf(&p, |b| {
                    b.push(x);
                    Ok(())
                })?;
            }
            Stmt::Pop(b) => {
                let p = self.place(b, env)?;
                with_buf(&p, |b| {
                    if b.len() > 1 {
                        b.pop();
                    }
                    Ok(())
                })?;
            }
            Stmt::Fill(b, e) => {
                let x = self.eval_f(e, env)?;
                let p = self.place(b, env)?;
                with_buf(&p, |b| {
                    b.fill(x);
                    Ok(())
                })?;
            }
            Stmt::Swap(b, ie, je) => {
                let i = as_i(self.eval(ie, env)?)? as usize;
                let j = as_i(self.eval(je, env)?)? as usize;
                let p = self.place(b, env)?;
                let len = buf_len(&p)?;
                for (k, e) in [(i, ie), (j, je)] {
                    if k >= len {
                        let Expr::Wrap { id, .. } = e else { return invalid("swap index") };
                        if len == 0 {
                            return invalid("swap in an empty buffer");
                        }
                        return Err(Stop::Repair(Spot::Wrap(*id, len as u64)));
                    }
                }
                with_buf(&p, |b| {
                    b.swap(i, j);
                    Ok(())
                })?;
            }
            Stmt::CopyFrom(d, src, _, id) => {
                if self.rep.skip.contains_key(id) {
                    return Ok(Flow::Normal);
                }
                let src = as_buf(self.eval(src, env)?)?;
                let p = self.place(d, env)?;
                if buf_len(&p)? != src.len() {
                    return Err(Stop::Repair(Spot::Skip(*id)));
                }
                with_buf(&p, |b| {
                    b.copy_from_slice(&src);
                    Ok(())
                })?;
            }
            Stmt::If(arms, els) => {
                for (c, b) in arms {
                    if as_b(self.eval(c, env)?)? {
                        return self.block(b, env);
                    }
                }
                if let Some(b) = els {
                    return self.block(b, env);
                }
            }
            Stmt::Match(scrut, arms) => {
                let s = deref_value(self.eval(scrut, env)?)?;
                for arm in arms {
                    if let Some(bound) = self.matches(&arm.pat, &s) {
                        if let Some((var, v)) = &bound {
                            env.insert(var.id, slot(v.clone()));
                        }
                        if let Some(g) = &arm.guard
                            && !as_b(self.eval(g, env)?)?
                        {
                            continue;
                        }
                        return self.block(&arm.body, env);
                    }
                }
                return invalid("no arm matches");
            }
            Stmt::For { id, pat, iter, body, .. } => {
                let items: Vec<(Option<V>, Option<V>)> = match iter {
                    Iter::Range { lo, hi, inclusive, rev, step } => {
                        let lo = as_i(self.eval(lo, env)?)?;
                        let hi = as_i(self.eval(hi, env)?)?;
                        let mut xs: Vec<u64> =
                            if *inclusive { (lo..=hi).collect() } else { (lo..hi).collect() };
                        if *rev {
                            xs.reverse();
                        }
                        if let Some(k) = step {
                            xs = xs.into_iter().step_by(*k as usize).collect();
                        }
                        xs.into_iter().map(|x| (Some(V::I(x)), None)).collect()
                    }
                    Iter::Elements(b) | Iter::Direct(b, _) => {
                        let p = self.place(b, env)?;
                        let n = buf_len(&p)?;
                        (0..n).map(|i| (Some(V::Ref(elem(&p, i))), None)).collect()
                    }
                    Iter::Enumerate(b) => {
                        let p = self.place(b, env)?;
                        let n = buf_len(&p)?;
                        (0..n).map(|i| (Some(V::I(i as u64)), Some(V::Ref(elem(&p, i))))).collect()
                    }
                    Iter::Zip(a, b) => {
                        let p = self.place(a, env)?;
                        let q = self.place(b, env)?;
                        let n = buf_len(&p)?.min(buf_len(&q)?);
                        (0..n)
                            .map(|i| (Some(V::Ref(elem(&p, i))), Some(V::Ref(elem(&q, i)))))
                            .collect()
                    }
                };
                for (a, b) in items {
                    self.tick()?;
                    match pat {
                        ForPat::One(v) => {
                            env.insert(v.id, slot(a.expect("one")));
                        }
                        ForPat::Two(x, y) => {
                            env.insert(x.id, slot(a.expect("first")));
                            env.insert(y.id, slot(b.expect("second")));
                        }
                    }
                    match self.block(body, env)? {
                        Flow::Normal => {}
                        Flow::Continue(t) if t == *id => {}
                        Flow::Break(t, _) if t == *id => break,
                        other => return Ok(other),
                    }
                }
            }
            Stmt::While { id, cond, body, .. } => {
                while as_b(self.eval(cond, env)?)? {
                    self.tick()?;
                    match self.block(body, env)? {
                        Flow::Normal => {}
                        Flow::Continue(t) if t == *id => {}
                        Flow::Break(t, _) if t == *id => break,
                        other => return Ok(other),
                    }
                }
            }
            Stmt::Loop { id, body, .. } => loop {
                self.tick()?;
                match self.block(body, env)? {
                    Flow::Normal => {}
                    Flow::Continue(t) if t == *id => {}
                    Flow::Break(t, _) if t == *id => break,
                    other => return Ok(other),
                }
            },
            Stmt::Break { target, value, .. } => {
                let v = match value {
                    Some(e) => Some(deref_value(self.eval(e, env)?)?),
                    None => None,
                };
                return Ok(Flow::Break(*target, v));
            }
            Stmt::Continue { target, .. } => return Ok(Flow::Continue(*target)),
            Stmt::Return(v) => {
                let v = match v {
                    Some(e) => deref_value(self.eval(e, env)?)?,
                    None => V::Unit,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Assert { cond, .. } | Stmt::PanicIf(cond) => {
                let c = as_b(self.eval(cond, env)?)?;
                if c == matches!(s, Stmt::PanicIf(_)) {
                    return invalid("an assertion fires");
                }
            }
            Stmt::AssertEq(a, b) => {
                let (a, b) = (as_i(self.eval(a, env)?)?, as_i(self.eval(b, env)?)?);
                if a != b {
                    return invalid("assert_eq! fires");
                }
            }
            Stmt::Unreachable => return invalid("unreachable!() reached"),
        }
        Ok(Flow::Normal)
    }
}

fn elem(p: &Place, i: usize) -> Place {
    let mut q = p.clone();
    q.path.push(i);
    q
}

fn flow_name(f: &Flow) -> &'static str {
    match f {
        Flow::Normal => "normal",
        Flow::Break(..) => "break escapes its loop",
        Flow::Continue(_) => "continue escapes its loop",
        Flow::Return(_) => "return",
    }
}

/// The limit a compound assignment's value is squashed to at repair level 1.
pub fn assign_limit(op: BinOp) -> f64 {
    match op {
        BinOp::Mul => 1.0,
        _ => 10.0,
    }
}

fn apply_method(name: &str, x: f64, a: &[f64]) -> R<f64> {
    for m in M1_ALL {
        if m.name() == name {
            return Ok(m.apply(x));
        }
    }
    Ok(match name {
        "atan2" => x.atan2(a[0]),
        "hypot" => x.hypot(a[0]),
        "powf" => x.powf(a[0]),
        "powi" => x.powi(a[0] as i32),
        "min" => x.min(a[0]),
        "max" => x.max(a[0]),
        "log" => x.log(a[0]),
        "mul_add" => x.mul_add(a[0], a[1]),
        "clamp" => x.clamp(a[0], a[1]),
        other => return invalid(format!("unknown method {other}")),
    })
}

fn to_v(v: &Value) -> V {
    match v {
        Value::F(x) => V::F(*x),
        Value::I(x) => V::I(*x),
        Value::B(x) => V::B(*x),
        Value::E(x) => V::E(*x),
        Value::Buf(b) => V::Buf(b.clone()),
        Value::Rec(fs) => V::Rec(fs.iter().map(to_v).collect()),
    }
}

/// Runs the entry point once with the given repairs.
/// Moves every float of an input by up to `size`, deterministically from `seed`.
fn perturb(v: &Value, size: f64, seed: &mut u64) -> Value {
    let mut next = || {
        // splitmix64
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * size
    };
    match v {
        Value::F(x) => Value::F(x + next()),
        Value::Buf(b) => Value::Buf(b.iter().map(|x| x + next()).collect()),
        Value::Rec(fs) => Value::Rec(fs.iter().map(|f| perturb(f, size, seed)).collect()),
        other => other.clone(),
    }
}

/// Runs the entry point once with the given repairs, at the inputs moved by up to `size` (with
/// the distances to kinks checked only when `size` is zero).
fn run(prog: &Program, rep: &Repairs, size: f64, seed: u64) -> R<()> {
    let mut it = Interp { prog, rep, steps: 0, depth: 0, margins: size == 0.0 };
    let entry = &prog.funcs[0];
    let mut slots: Vec<Rc<RefCell<V>>> = Vec::new();
    let mut args = Vec::new();
    let mut seed = seed;
    for (p, a) in entry.params.iter().zip(&prog.args) {
        let s = match a {
            Arg::Own(v) => slot(to_v(&perturb(v, size, &mut seed))),
            Arg::Alias(k) => slots[*k].clone(),
        };
        slots.push(s.clone());
        let by_value = matches!(
            p.ty,
            Ty::F64
                | Ty::F32
                | Ty::Usize
                | Ty::Bool
                | Ty::E
                | Ty::Vec
                | Ty::Arr
                | Ty::Tuple
                | Ty::P
                | Ty::S
        );
        args.push(if by_value {
            s.borrow().clone()
        } else {
            V::Ref(Place { slot: s, path: vec![] })
        });
    }
    let out = it.call(0, args)?;
    if let V::F(x) = out
        && !x.is_finite()
    {
        return invalid("non-finite result");
    }
    Ok(())
}

/// How far from its inputs the program must run within its limits too: the largest step of
/// the finite differences (3e-2) times a tangent entry of about three.
const NEIGHBOURHOOD: f64 = 0.1;
/// Points of the neighbourhood tried.
const NEARBY: u64 = 8;

/// Finds the repairs that make the program run within its limits, by running it and repairing
/// the spot it stops at until it runs through, at its inputs and at points nearby (where
/// finite differences may take another branch); `Err` if it cannot be repaired.
pub fn legalize(prog: &Program) -> Result<Repairs, String> {
    let mut rep = Repairs::default();
    for _ in 0..400 {
        let mut result = run(prog, &rep, 0.0, 0);
        for k in 1..=NEARBY {
            if result.is_err() {
                break;
            }
            result = run(prog, &rep, NEIGHBOURHOOD, prog.seed.wrapping_mul(31).wrapping_add(k));
        }
        match result {
            Ok(()) => return Ok(rep),
            Err(Stop::Invalid(msg)) => return Err(msg),
            Err(Stop::Flow(f)) => return Err(format!("{} escapes the function", flow_name(&f))),
            Err(Stop::Repair(spot)) => match spot {
                Spot::Squash(id) => {
                    rep.squash.insert(id, ());
                }
                Spot::Offset(id) => *rep.offset.entry(id).or_insert(0) += 1,
                Spot::Wrap(id, len) => {
                    let m = rep.wrap.entry(id).or_insert(len);
                    *m = (*m).min(len);
                }
                Spot::Assign(id) => *rep.assign.entry(id).or_insert(0) += 1,
                Spot::Skip(id) => {
                    rep.skip.insert(id, ());
                }
            },
        }
    }
    Err("too many repairs".into())
}
