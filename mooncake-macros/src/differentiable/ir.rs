//! # The AD IR
//!
//! The intermediate representation that `#[differentiable]` lowers a function body into, and
//! that the forward- and reverse-mode transforms work on. This file is its specification.
//!
//! ## Shape
//!
//! A [`Body`] is a control-flow graph of basic [`Block`]s over *locals*, in the style of rustc's
//! MIR: a local may be assigned many times (Rust's `let mut`), and every read names a [`Place`]
//! (a local followed by projections). Mutable locals rather than SSA, because:
//!
//! * the source is Rust, whose variables are already mutable locals: lowering is direct, and
//!   generated code keeps one Rust variable per local, so rustc's type inference, borrow
//!   checking and definite-initialisation analysis see the same program the user wrote;
//! * forward mode is statement-by-statement and needs no value numbering;
//! * reverse mode keeps one adjoint per local: the adjoint of `x = f(a)` adds
//!   `f'(a)^T x̄` into `ā` and resets `x̄`, and the values `f'` needs are saved on tapes.
//!
//! ## Invariants (checked by [`crate::differentiable::verify`] after every pass in tests and
//! debug builds)
//!
//! 1. Block `0` is the entry block; it has no predecessors.
//! 2. Every block has exactly one [`Terminator`]; every block id a terminator names exists.
//! 3. Every local a statement, terminator or place names exists; locals `1..=n_args` are the
//!    arguments in order; local `0` is the return place.
//! 4. Statements are flat: operands are places or constants, never nested expressions.
//! 5. Every statement and terminator carries the span of the user tokens it came from.
//! 6. Every block is reachable from the entry block (lowering removes dead blocks).
//! 7. The graph is reducible (it comes from structured Rust), so codegen can rebuild structured
//!    Rust from it.
//!
//! ## Text form
//!
//! [`Body`] implements `Display`; the golden tests pin it. Example (`fn f(x: f64) -> f64 {
//! if x > 0.0 { x.sin() } else { -x } }`):
//!
//! ```text
//! fn f(_1: f64 /* x */) -> f64 {
//!     let _2: bool;
//!     bb0: {
//!         _2 = gt(_1, const 0.0);
//!         branch _2 -> [true: bb1, false: bb2];
//!     }
//!     ...
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use std::fmt;

/// A local variable: `Local(0)` is the return place, `1..=n` the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Local(pub(crate) u32);

/// A basic block; `BlockId(0)` is the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct BlockId(pub(crate) u32);

impl Local {
    /// The return place.
    pub(crate) const RETURN: Local = Local(0);

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

impl BlockId {
    /// The entry block.
    pub(crate) const ENTRY: BlockId = BlockId(0);

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// What the IR knows of a local: the user's name (if it is a user variable), its declared type
/// (if the user wrote one, or it is an argument), and where it was declared.
#[derive(Clone, Debug)]
pub(crate) struct LocalDecl {
    /// The user's name, for messages and the text form.
    pub(crate) name: Option<syn::Ident>,
    /// The declared type, if any; otherwise rustc infers it.
    pub(crate) ty: Option<syn::Type>,
    /// Where the local was declared.
    pub(crate) span: Span,
}

/// One step of a [`Place`]'s path.
#[derive(Clone, Debug)]
pub(crate) enum Projection {
    /// `.name` or `.0`.
    Field(syn::Member),
    /// `[i]`, the index held in a local.
    Index(Local),
    /// `*`.
    Deref,
}

/// A memory location: a local followed by projections (`p.w[_3]`).
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) local: Local,
    pub(crate) projections: Vec<Projection>,
}

impl Place {
    pub(crate) fn local(local: Local) -> Self {
        Place { local, projections: Vec::new() }
    }
}

/// An operand of a statement.
#[derive(Clone, Debug)]
pub(crate) enum Operand {
    /// The value in a place (copied if `Copy`, moved otherwise, as Rust does).
    Use(Place),
    /// `&place` or `&mut place`.
    Ref(Place, bool),
    /// A literal or a path to a constant (`std::f64::consts::PI`); its derivative is zero.
    Const(TokenStream),
}

/// Binary operators. `&&` and `||` are not here: they are lowered to control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Not,
}

/// The right-hand side of an assignment. Every operator, call and constructor is one of these,
/// and each is turned into a call of a rule by the transforms.
#[derive(Clone, Debug)]
pub(crate) enum Rvalue {
    /// A plain copy or move, or a borrow.
    Use(Operand),
    /// `a op b`.
    Binary(BinOp, Operand, Operand),
    /// `op a`.
    Unary(UnOp, Operand),
    /// `path(args)`: a call of a function or associated function.
    Call { func: syn::Path, args: Vec<Operand> },
    /// `receiver.method(args)`, the receiver a place (it may be borrowed, mutated or moved).
    Method { receiver: Place, method: syn::Ident, args: Vec<Operand> },
    /// `(a, b, ..)`.
    Tuple(Vec<Operand>),
    /// `[a, b, ..]`.
    Array(Vec<Operand>),
    /// `[x; n]`, `n` a constant expression.
    Repeat(Operand, TokenStream),
    /// `Path { field: a, .. }` or `Path(a, ..)` (tuple structs come as fields `0`, `1`, ..).
    Struct { path: syn::Path, fields: Vec<(syn::Member, Operand)> },
    /// `a as T`.
    Cast(Operand, syn::Type),
    /// `vec![a, b, ..]`.
    VecList(Vec<Operand>),
    /// `vec![x; n]`.
    VecRepeat(Operand, Operand),
    /// Whether the value in a place matches a pattern without bindings (`1..=3`, `Mode::A`,
    /// `true`): a `bool` with no derivative.
    Matches(Place, syn::Pat),
    /// Reverse mode only, inserted by `reverse::normalise`: the same value held another way
    /// (see [`Conversion`]). Lowering never produces it.
    Convert(Conversion, Operand),
}

impl Rvalue {
    /// The operands, in order (not a method's receiver or a `Matches`' place, which are places).
    pub(crate) fn operands(&self) -> Vec<&Operand> {
        match self {
            Rvalue::Use(o)
            | Rvalue::Unary(_, o)
            | Rvalue::Cast(o, _)
            | Rvalue::Repeat(o, _)
            | Rvalue::Convert(_, o) => vec![o],
            Rvalue::Binary(_, a, b) | Rvalue::VecRepeat(a, b) => vec![a, b],
            Rvalue::Call { args, .. }
            | Rvalue::Tuple(args)
            | Rvalue::Array(args)
            | Rvalue::VecList(args)
            | Rvalue::Method { args, .. } => args.iter().collect(),
            Rvalue::Struct { fields, .. } => fields.iter().map(|(_, o)| o).collect(),
            Rvalue::Matches(..) => Vec::new(),
        }
    }
}

/// The pattern that [`Rvalue::Matches`] uses for "the value is a residual" (`None`, `Err(..)`:
/// the test of `?`, `unwrap_or`, `is_none`, ...), which no Rust pattern says for both
/// `Option` and `Result`: written `__mooncake_residual` in the text form, tested through the
/// runtime's `TryValue` trait.
pub(crate) fn residual_pattern(span: Span) -> syn::Pat {
    syn::Pat::Verbatim(quote::quote_spanned!(span=> __mooncake_residual))
}

/// The test `value` matches `pat` (see [`Rvalue::Matches`] and [`residual_pattern`]), on
/// primal values.
pub(crate) fn matches_tokens(value: TokenStream, pat: &syn::Pat) -> TokenStream {
    match pat {
        syn::Pat::Verbatim(v) if v.to_string() == "__mooncake_residual" => {
            quote::quote!(::mooncake_runtime::__private::enums::is_residual(&#value))
        }
        _ => quote::quote!(::core::matches!(#value, #pat)),
    }
}

/// How reverse mode changes the way a buffer (a `Vec` or an array) is held: by value, as rules
/// return it, or through a shared handle, which the buffer rules read and write and their
/// pullbacks restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// A buffer value (a call's result, a field) moved into a handle, because the body indexes,
    /// measures or grows it; the pullback gives the gradient the handle's shadow gathered back
    /// as the value's rdata (an array's) or leaves it in the shared shadow (a `Vec`'s).
    Hold,
    /// A buffer held through a handle, copied out as the value (a `Vec` or an array, whichever
    /// the callee takes) passed by value to a call.
    Release,
    /// A copy of a buffer held through a handle into a new handle (`let mut y = x;` of an
    /// array, then written): a new shadow, added into the old one by the pullback.
    Copy,
}

/// A statement.
#[derive(Clone, Debug)]
pub(crate) struct Statement {
    pub(crate) kind: StatementKind,
    pub(crate) span: Span,
}

/// What a statement does.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // built once per expansion; boxing would only add noise
pub(crate) enum StatementKind {
    /// `place = rvalue`.
    Assign(Place, Rvalue),
    /// A side effect with no derivative that the primal must still perform: `assert!`,
    /// `debug_assert!`, `assert_eq!` (the macro call, with its operands read from places).
    Check(TokenStream),
}

/// How a block ends.
#[derive(Clone, Debug)]
pub(crate) struct Terminator {
    pub(crate) kind: TerminatorKind,
    pub(crate) span: Span,
}

/// How a block ends.
#[derive(Clone, Debug)]
pub(crate) enum TerminatorKind {
    /// Go to a block.
    Goto(BlockId),
    /// Go to `then` if the `bool` local holds `true`, else to `otherwise`.
    Branch { cond: Local, then: BlockId, otherwise: BlockId },
    /// Return the value of the return place.
    Return,
    /// Diverge: `panic!`, `unreachable!` (the macro call, kept as written).
    Panic(TokenStream),
}

impl TerminatorKind {
    /// The blocks control can go to next.
    pub(crate) fn successors(&self) -> Vec<BlockId> {
        match self {
            TerminatorKind::Goto(b) => vec![*b],
            TerminatorKind::Branch { then, otherwise, .. } => vec![*then, *otherwise],
            TerminatorKind::Return | TerminatorKind::Panic(_) => Vec::new(),
        }
    }
}

/// A basic block: statements, then one terminator.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) statements: Vec<Statement>,
    pub(crate) terminator: Terminator,
}

/// A function body in the IR.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    /// The function's name.
    pub(crate) name: syn::Ident,
    /// Local declarations, indexed by [`Local`]. Entry 0 is the return place, then the
    /// arguments.
    pub(crate) locals: Vec<LocalDecl>,
    /// The number of arguments.
    pub(crate) n_args: usize,
    /// The return type (`()` when the function returns nothing).
    pub(crate) ret_ty: syn::Type,
    /// The names of the type parameters of the function and of the `impl` block around it (a
    /// named type among them is not a user's struct).
    pub(crate) type_params: Vec<String>,
    /// Basic blocks, indexed by [`BlockId`]; 0 is the entry.
    pub(crate) blocks: Vec<Block>,
    /// Whether each local holds a matrix or array of nalgebra or ndarray, as far as the syntax
    /// tells (declared or bound as one, or the value of arithmetic on one): address-identified
    /// values, whose sums reverse mode sends through rules. Indexed by [`Local`]; locals added
    /// after lowering are not in it (read with `get`).
    pub(crate) matrices: Vec<bool>,
}

impl Body {
    pub(crate) fn args(&self) -> impl Iterator<Item = Local> {
        (1..=self.n_args as u32).map(Local)
    }

    /// The predecessors of every block.
    pub(crate) fn predecessors(&self) -> Vec<Vec<BlockId>> {
        let mut preds = vec![Vec::new(); self.blocks.len()];
        for (i, b) in self.blocks.iter().enumerate() {
            for s in b.terminator.kind.successors() {
                if let Some(p) = preds.get_mut(s.index())
                    && !p.contains(&BlockId(i as u32))
                {
                    p.push(BlockId(i as u32));
                }
            }
        }
        preds
    }
}

// ---------------------------------------------------------------------------------------------
// Text form.

fn tokens(t: &impl quote::ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    // Tighten rustc-style token spacing for readability.
    s.replace(" :: ", "::").replace(" . ", ".").replace("& ", "&").replace(" ,", ",")
}

impl fmt::Display for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "_{}", self.0)
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bb{}", self.0)
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.local.to_string();
        for p in &self.projections {
            s = match p {
                Projection::Field(m) => format!("{s}.{}", tokens(m)),
                Projection::Index(i) => format!("{s}[{i}]"),
                Projection::Deref => format!("(*{s})"),
            };
        }
        f.write_str(&s)
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Use(p) => write!(f, "{p}"),
            Operand::Ref(p, false) => write!(f, "&{p}"),
            Operand::Ref(p, true) => write!(f, "&mut {p}"),
            Operand::Const(t) => write!(f, "const {}", tokens(t)),
        }
    }
}

impl BinOp {
    /// `+ - * / %`: the operators with a derivative (on floats).
    pub(crate) fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::BitAnd => "bitand",
            BinOp::BitOr => "bitor",
            BinOp::BitXor => "bitxor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
        }
    }
}

fn list(ops: &[Operand]) -> String {
    ops.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Rvalue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rvalue::Use(o) => write!(f, "{o}"),
            Rvalue::Binary(op, a, b) => write!(f, "{}({a}, {b})", op.name()),
            Rvalue::Unary(UnOp::Neg, a) => write!(f, "neg({a})"),
            Rvalue::Unary(UnOp::Not, a) => write!(f, "not({a})"),
            Rvalue::Call { func, args } => write!(f, "call {}({})", tokens(func), list(args)),
            Rvalue::Method { receiver, method, args } => {
                write!(f, "method {receiver}.{method}({})", list(args))
            }
            Rvalue::Tuple(ops) => write!(f, "({})", list(ops)),
            Rvalue::Array(ops) => write!(f, "[{}]", list(ops)),
            Rvalue::Repeat(o, n) => write!(f, "[{o}; {}]", tokens(n)),
            Rvalue::Struct { path, fields } => {
                let fs = fields
                    .iter()
                    .map(|(m, o)| format!("{}: {o}", tokens(m)))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(f, "{} {{ {fs} }}", tokens(path))
            }
            Rvalue::Cast(o, t) => write!(f, "{o} as {}", tokens(t)),
            Rvalue::VecList(ops) => write!(f, "vec![{}]", list(ops)),
            Rvalue::VecRepeat(o, n) => write!(f, "vec![{o}; {n}]"),
            Rvalue::Matches(p, pat) => write!(f, "matches({p}, {})", tokens(pat)),
            Rvalue::Convert(c, o) => write!(f, "{}({o})", format!("{c:?}").to_lowercase()),
        }
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decl = |l: usize| {
            let d = &self.locals[l];
            let ty = d.ty.as_ref().map(tokens).unwrap_or_else(|| "_".into());
            let name = d.name.as_ref().map(|n| format!(" /* {n} */")).unwrap_or_default();
            format!("_{l}: {ty}{name}")
        };
        let args: Vec<String> = (1..=self.n_args).map(decl).collect();
        writeln!(f, "fn {}({}) -> {} {{", self.name, args.join(", "), tokens(&self.ret_ty))?;
        for l in (self.n_args + 1)..self.locals.len() {
            writeln!(f, "    let {};", decl(l))?;
        }
        for (i, b) in self.blocks.iter().enumerate() {
            writeln!(f, "    bb{i}: {{")?;
            for s in &b.statements {
                match &s.kind {
                    StatementKind::Assign(p, r) => writeln!(f, "        {p} = {r};")?,
                    StatementKind::Check(t) => writeln!(f, "        check {};", tokens(t))?,
                }
            }
            match &b.terminator.kind {
                TerminatorKind::Goto(t) => writeln!(f, "        goto -> {t};")?,
                TerminatorKind::Branch { cond, then, otherwise } => {
                    writeln!(f, "        branch {cond} -> [true: {then}, false: {otherwise}];")?
                }
                TerminatorKind::Return => writeln!(f, "        return;")?,
                TerminatorKind::Panic(t) => writeln!(f, "        panic {};", tokens(t))?,
            }
            writeln!(f, "    }}")?;
        }
        writeln!(f, "}}")
    }
}

/// The mark lowering puts before the name of a user type's method named like a number's
/// (`__user_powi` for `c.powi(3)` of a user value): reverse mode dispatches it as a user
/// method; its key (`forward::method_key`) is the method's own.
pub(crate) const USER_METHOD: &str = "__user_";

/// The names of buffer methods that reverse mode gives the runtime's buffer rules by name: a
/// user type's method so named is marked by lowering as a user method (`USER_METHOD`), like one
/// named as a number's.
pub(crate) const BUFFER_NAMED: &[&str] = &[
    "len",
    "to_vec",
    "push",
    "pop",
    "fill",
    "swap",
    "reverse",
    "copy_from_slice",
    "clear",
    "truncate",
    "resize",
    "extend_from_slice",
];

/// The float and integer methods the runtime has rules for in both modes (`f64::sin`, ..,
/// `i64::pow`): none writes its receiver. Lowering and the reverse transform each add the
/// buffer methods they treat the same way.
pub(crate) const NUMBER_METHODS: &[&str] = &[
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
    "copysign",
    "powf",
    "powi",
    "pow",
    "log",
    "min",
    "max",
    "mul_add",
    "clamp",
    "sin_cos",
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_sign_positive",
    "is_sign_negative",
    "total_cmp",
    "partial_cmp",
    "is_lt",
    "is_le",
    "is_gt",
    "is_ge",
    "is_eq",
    "is_ne",
    "saturating_add",
    "saturating_sub",
    "saturating_mul",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "rem_euclid",
    "div_euclid",
    "abs_diff",
    "checked_add",
    "checked_sub",
    "checked_mul",
    "checked_div",
    "checked_rem",
    "count_ones",
    "count_zeros",
    "leading_zeros",
    "trailing_zeros",
];

/// The locals that only ever hold a named constant (`W` of `const W: [f64; 3]`, read as
/// `W[k]`, `W.len()`, `W.iter()`, or copied, `let w = W;`): every assignment to one is the
/// constant's path or a copy of another such local, and nothing writes into one, borrows it
/// mutably or calls a method on it other than one that reads. Their loads carry no derivative
/// (reverse mode's `Inactive::bufs`; forward mode reads their elements as constants): a constant has no shadow to take adjoints.
pub(crate) fn constant_locals(body: &Body) -> Vec<bool> {
    const READS: [&str; 8] =
        ["len", "__iter_sum", "__get2", "__len2", "__deep_len", "to_vec", "clone", "__sub_to_vec"];
    let n = body.locals.len();
    // `Some(true)`: only constants assigned so far; `Some(false)`: something else.
    let mut only: Vec<Option<bool>> = vec![None; n];
    let mut spoiled = vec![false; n];
    let statements = || body.blocks.iter().flat_map(|b| &b.statements);
    for s in statements() {
        let StatementKind::Assign(p, rv) = &s.kind else { continue };
        if !p.projections.is_empty() {
            spoiled[p.local.index()] = true;
        }
        match rv {
            Rvalue::Method { receiver, method, .. }
                if !READS.contains(&method.to_string().as_str())
                    && !NUMBER_METHODS.iter().any(|m| method == m) =>
            {
                spoiled[receiver.local.index()] = true;
            }
            _ => {}
        }
        for o in rv.operands() {
            if let Operand::Ref(q, true) = o {
                spoiled[q.local.index()] = true;
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for s in statements() {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !p.projections.is_empty() {
                continue;
            }
            let constant = match rv {
                Rvalue::Use(Operand::Const(c)) => syn::parse2::<syn::Lit>(c.clone()).is_err(),
                // A copy of one, or an element or field of one (`W[k]`, `P0.a`).
                // (Not of a local a store changes: `let mut c = P0; c.a = x;`.)
                Rvalue::Use(Operand::Use(q)) => {
                    q.projections.iter().all(|pr| !matches!(pr, Projection::Deref))
                        && only[q.local.index()] == Some(true)
                        && !spoiled[q.local.index()]
                }
                // A copy of a constant or of a range of one (`W.to_vec()`, `&W[1..]`).
                Rvalue::Method { receiver, method, .. }
                    if ["to_vec", "clone", "__sub_to_vec"]
                        .contains(&method.to_string().as_str()) =>
                {
                    receiver.projections.is_empty()
                        && only[receiver.local.index()] == Some(true)
                        && !spoiled[receiver.local.index()]
                }
                _ => false,
            };
            let l = p.local.index();
            let now = match only[l] {
                None => Some(constant),
                Some(was) => Some(was && constant),
            };
            if now != only[l] {
                only[l] = now;
                changed = true;
            }
        }
    }
    (0..n).map(|l| l > body.n_args && only[l] == Some(true) && !spoiled[l]).collect()
}

/// Locals whose type the function's text does not show, perhaps values of a user type: no
/// declared type, not among `ints`, and assigned a named field's value (`let v = p.vel;`), a
/// method's result (other than a number's method's), a copy of such a local, or arithmetic
/// with one as operand. Their arithmetic is dispatched by
/// type (forward mode's `fwd::dialect::one::FieldAdd` and its kin; reverse mode keeps the rules
/// of their sums, `rev::UserValue`).
pub(crate) fn opaque_locals(body: &Body, ints: &[bool]) -> Vec<bool> {
    let mut opaque = vec![false; body.locals.len()];
    let candidate = |l: Local| body.locals[l.index()].ty.is_none() && !ints[l.index()];
    let mut changed = true;
    while changed {
        changed = false;
        for s in body.blocks.iter().flat_map(|b| &b.statements) {
            let StatementKind::Assign(p, rv) = &s.kind else { continue };
            if !p.projections.is_empty() || opaque[p.local.index()] || !candidate(p.local) {
                continue;
            }
            let of = |o: &Operand| match o {
                Operand::Use(q) => match q.projections.last() {
                    None => opaque[q.local.index()],
                    Some(Projection::Field(syn::Member::Named(_))) => true,
                    Some(_) => false,
                },
                _ => false,
            };
            let now = match rv {
                Rvalue::Use(o) => of(o),
                Rvalue::Binary(op, a, b) if op.is_arithmetic() => of(a) || of(b),
                Rvalue::Unary(UnOp::Neg, a) => of(a),
                // A method's result, other than a number's method's or one of the lowering's
                // own (`__iter_sum`, ..): perhaps a user type's (`a.cross(&b)`).
                Rvalue::Method { method, .. } => {
                    let name = method.to_string();
                    !NUMBER_METHODS.contains(&name.as_str()) && !name.starts_with("__")
                }
                _ => false,
            };
            if now {
                opaque[p.local.index()] = true;
                changed = true;
            }
        }
    }
    opaque
}
