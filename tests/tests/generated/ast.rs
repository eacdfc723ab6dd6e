//! The generator's two trees.
//!
//! * The **raw** tree is what proptest draws and shrinks. It is context-free: a reference to a
//!   variable, buffer, place or function is a small index that the resolver takes modulo what is
//!   in scope, so that every raw tree, and every shrink of one, resolves to a valid program.
//! * The **program** tree is what the raw tree resolves to: typed, named Rust in the subset,
//!   which the printer prints and the interpreter runs. Spots the interpreter may have to repair
//!   (magnitudes, distances to kinks and branch thresholds, indices) carry an id; the repairs
//!   live beside the tree in [`Repairs`].

use std::collections::BTreeMap;

// ---- raw tree ---------------------------------------------------------------------------------

/// One generated test case: functions (the first is the one `test_rule!` checks; the others are
/// helpers it may call), the inputs of the first, and the seed of the random tangents.
#[derive(Clone, Debug)]
pub struct RawCase {
    /// `funcs[0]` is the entry point; a function may call the ones after it, and recursive ones
    /// may call themselves and the recursive ones before them.
    pub funcs: Vec<RawFn>,
    /// One input per parameter of the entry point (extra ones are unused).
    pub inputs: Vec<RawInput>,
    /// Pass the same buffer twice when two shared-buffer parameters allow it.
    pub alias: bool,
    /// The seed `test_rule!` draws its tangents from.
    pub seed: u16,
}

/// A raw function.
#[derive(Clone, Debug)]
pub struct RawFn {
    /// Parameter types (a recursive function gets a leading `n: usize` as well).
    pub params: Vec<PTy>,
    /// The return type.
    pub ret: RTy,
    /// Recursive: `fn g(n: usize, ..) { if n == 0 { return base; } body; tail }`.
    pub recursive: bool,
    /// The body.
    pub body: Vec<RawStmt>,
    /// The value returned at the end.
    pub tail: RawTail,
    /// The value returned when `n == 0` (recursive functions).
    pub base: RawTail,
    /// A free function, one in a module, a method of `P`, or a generic function (helpers).
    pub kind: FnKind,
}

/// Kinds of helpers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnKind {
    /// `fn g(..)`
    Free,
    /// `mod inner { pub(super) fn g(..) }`, called as `inner::g`, `self::g`, `super::g`.
    Module,
    /// `impl P { fn g(&self, ..) }`
    MethodRef,
    /// `impl P { fn g(&mut self, ..) }`
    MethodMut,
    /// `impl P { fn g(self, ..) }`
    MethodVal,
    /// `fn g<T: Float>(x: T, ..) -> T` over its float parameters only.
    Generic,
}

/// Parameter types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PTy {
    /// `f64`
    F64,
    /// `f32` (entry point only), read as `x as f64`
    F32,
    /// `usize`
    Usize,
    /// `bool`
    Bool,
    /// `E`, a fieldless enum
    Enum,
    /// `&[f64]`
    Slice,
    /// `&mut [f64]`
    SliceMut,
    /// `&Vec<f64>`
    VecRef,
    /// `&mut Vec<f64>`
    VecMut,
    /// `Vec<f64>` (entry point only)
    VecVal,
    /// `mut x: Vec<f64>` (entry point only)
    VecValMut,
    /// `[f64; 3]` (entry point only)
    Arr,
    /// `mut x: [f64; 3]` (entry point only)
    ArrValMut,
    /// `&[f64; 3]` (entry point only)
    ArrRef,
    /// `&mut [f64; 3]` (entry point only)
    ArrMut,
    /// `&mut f64`
    F64Mut,
    /// `(f64, f64)`
    Tuple,
    /// `P` (a `Copy` struct of two floats)
    P,
    /// `&P`
    PRef,
    /// `&mut P`
    PMut,
    /// `S` (a struct with a float, an integer, a buffer and a nested `P`; entry point only)
    S,
    /// `&S`
    SRef,
    /// `&mut S`
    SMut,
}

impl PTy {
    /// Whether a helper (not the entry point) may take this type. Arrays passed between
    /// functions are issue 11's; `S` by value would need a clone of a struct at the call.
    pub fn helper_ok(self) -> bool {
        !matches!(
            self,
            PTy::VecVal
                | PTy::F32
                | PTy::VecValMut
                | PTy::Arr
                | PTy::ArrValMut
                | PTy::ArrRef
                | PTy::ArrMut
                | PTy::S
        )
    }
}

/// Return types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RTy {
    /// `f64`
    F64,
    /// `()`
    Unit,
    /// `(f64, f64)`
    Tuple,
    /// `Vec<f64>`
    Vec,
    /// `[f64; 3]` (entry point only)
    Arr,
    /// `P`
    P,
}

/// The raw input of one parameter: the resolver takes what the parameter's type needs.
#[derive(Clone, Debug)]
pub struct RawInput {
    /// Floats (at least one): a scalar takes the first, a buffer all of them.
    pub floats: Vec<f64>,
    /// An integer (taken modulo 5 for `usize`, 3 for `E`).
    pub int: u8,
    /// A `bool`.
    pub flag: bool,
}

/// A returned value: `fs` build a literal of the return type, or `pick` chooses a local of that
/// type (`pick % (count + 1) == 0` means the literal).
#[derive(Clone, Debug)]
pub struct RawTail {
    /// Float expressions for the components of a literal.
    pub fs: Vec<FE>,
    /// Which local of the return type, if any.
    pub pick: u8,
}

/// Float binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` by a divisor kept away from zero by an offset
    Div,
    /// `/` by `d * d + 1.0`
    DivSq,
    /// `%` by a positive constant
    Rem,
}

/// Unary float methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs, clippy::enum_variant_names)]
pub enum M1 {
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Exp,
    Exp2,
    ExpM1,
    Ln,
    Ln1p,
    Log2,
    Log10,
    Sqrt,
    Cbrt,
    Abs,
    Signum,
    Recip,
    ToDegrees,
    ToRadians,
    Floor,
    Ceil,
    Round,
    Trunc,
    Fract,
}

/// All unary methods, for strategies.
pub const M1_ALL: [M1; 31] = [
    M1::Sin,
    M1::Cos,
    M1::Tan,
    M1::Asin,
    M1::Acos,
    M1::Atan,
    M1::Sinh,
    M1::Cosh,
    M1::Tanh,
    M1::Asinh,
    M1::Acosh,
    M1::Atanh,
    M1::Exp,
    M1::Exp2,
    M1::ExpM1,
    M1::Ln,
    M1::Ln1p,
    M1::Log2,
    M1::Log10,
    M1::Sqrt,
    M1::Cbrt,
    M1::Abs,
    M1::Signum,
    M1::Recip,
    M1::ToDegrees,
    M1::ToRadians,
    M1::Floor,
    M1::Ceil,
    M1::Round,
    M1::Trunc,
    M1::Fract,
];

impl M1 {
    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            M1::Sin => "sin",
            M1::Cos => "cos",
            M1::Tan => "tan",
            M1::Asin => "asin",
            M1::Acos => "acos",
            M1::Atan => "atan",
            M1::Sinh => "sinh",
            M1::Cosh => "cosh",
            M1::Tanh => "tanh",
            M1::Asinh => "asinh",
            M1::Acosh => "acosh",
            M1::Atanh => "atanh",
            M1::Exp => "exp",
            M1::Exp2 => "exp2",
            M1::ExpM1 => "exp_m1",
            M1::Ln => "ln",
            M1::Ln1p => "ln_1p",
            M1::Log2 => "log2",
            M1::Log10 => "log10",
            M1::Sqrt => "sqrt",
            M1::Cbrt => "cbrt",
            M1::Abs => "abs",
            M1::Signum => "signum",
            M1::Recip => "recip",
            M1::ToDegrees => "to_degrees",
            M1::ToRadians => "to_radians",
            M1::Floor => "floor",
            M1::Ceil => "ceil",
            M1::Round => "round",
            M1::Trunc => "trunc",
            M1::Fract => "fract",
        }
    }

    /// Applies the method.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            M1::Sin => x.sin(),
            M1::Cos => x.cos(),
            M1::Tan => x.tan(),
            M1::Asin => x.asin(),
            M1::Acos => x.acos(),
            M1::Atan => x.atan(),
            M1::Sinh => x.sinh(),
            M1::Cosh => x.cosh(),
            M1::Tanh => x.tanh(),
            M1::Asinh => x.asinh(),
            M1::Acosh => x.acosh(),
            M1::Atanh => x.atanh(),
            M1::Exp => x.exp(),
            M1::Exp2 => x.exp2(),
            M1::ExpM1 => x.exp_m1(),
            M1::Ln => x.ln(),
            M1::Ln1p => x.ln_1p(),
            M1::Log2 => x.log2(),
            M1::Log10 => x.log10(),
            M1::Sqrt => x.sqrt(),
            M1::Cbrt => x.cbrt(),
            M1::Abs => x.abs(),
            M1::Signum => x.signum(),
            M1::Recip => x.recip(),
            M1::ToDegrees => x.to_degrees(),
            M1::ToRadians => x.to_radians(),
            M1::Floor => x.floor(),
            M1::Ceil => x.ceil(),
            M1::Round => x.round(),
            M1::Trunc => x.trunc(),
            M1::Fract => x.fract(),
        }
    }
}

/// Binary float methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum M2 {
    Atan2,
    Hypot,
    Powf,
    Min,
    Max,
    Log,
}

/// Float expressions (raw).
#[derive(Clone, Debug)]
pub enum FE {
    /// A readable float: a local, a parameter, `*a`, `*v`, a field.
    Var(u8),
    /// A literal from a small table.
    Lit(u8),
    /// A constant: `std::f64::consts::PI` and friends.
    Const(u8),
    /// A binary operator.
    Bin(FOp, Box<FE>, Box<FE>),
    /// Unary minus.
    Neg(Box<FE>),
    /// A unary method; `flags` bit 0: path syntax (`f64::sin(x)`), bits 1..: the domain map.
    Un(M1, u8, Box<FE>),
    /// A binary method; `flags` bit 0: path syntax.
    Bin2(M2, u8, Box<FE>, Box<FE>),
    /// `x.powi(k)`
    Powi(i8, Box<FE>),
    /// `a.mul_add(b, c)`
    MulAdd(Box<(FE, FE, FE)>),
    /// `x.clamp(lo, hi)` with constant bounds from a table.
    Clamp(u8, Box<FE>),
    /// `(i as f64)`
    Cast(Box<IE>),
    /// An element of a buffer.
    Elem(u8, Box<IE>),
    /// `x.iter().sum::<f64>()`
    Sum(u8),
    /// A call of a float-valued helper.
    Call(Box<RawCall>),
    /// `if c { a } else { b }`
    If(Box<(BE, FE, FE)>),
    /// `match i { .. }` with float arms.
    Match(Box<IE>, Vec<(RawPat, FE)>),
    /// `{ stmts; e }`
    Block(Vec<RawStmt>, Box<FE>),
    /// A component of the result of a helper returning `(f64, f64)` or `P`.
    CallField(Box<RawCall>, bool),
}

/// Integer (`usize`) expressions (raw).
#[derive(Clone, Debug)]
pub enum IE {
    /// A readable integer: a local, a parameter, a loop index, `s.k`.
    Var(u8),
    /// A literal 0..=4.
    Lit(u8),
    /// `a + b`
    Add(Box<IE>, Box<IE>),
    /// `a * b`
    Mul(Box<IE>, Box<IE>),
    /// `a % k` (k ≥ 1)
    Rem(Box<IE>, u8),
    /// `a / k` (k ≥ 1)
    Div(Box<IE>, u8),
    /// `x.len()`
    Len(u8),
    /// `a.min(b)`
    Min(Box<IE>, Box<IE>),
    /// `a.max(b)`
    Max(Box<IE>, Box<IE>),
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    /// The operator's token.
    pub fn token(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// Boolean expressions (raw).
#[derive(Clone, Debug)]
pub enum BE {
    /// A float comparison (`==` and `!=` become `<` and `>`): the threshold gets an offset
    /// when the interpreter finds it too close.
    CmpF(CmpOp, Box<FE>, Box<FE>),
    /// An integer comparison.
    CmpI(CmpOp, Box<IE>, Box<IE>),
    /// `a && b`
    And(Box<BE>, Box<BE>),
    /// `a || b`
    Or(Box<BE>, Box<BE>),
    /// `!a`
    Not(Box<BE>),
    /// A `bool` local or parameter.
    Var(u8),
    /// `true` / `false`
    Lit(bool),
    /// `x.is_finite()`
    IsFinite(Box<FE>),
}

/// A match pattern over `usize` (raw).
#[derive(Clone, Debug)]
pub enum RawPat {
    /// `k`
    Lit(u8),
    /// `a | b`
    Or(u8, u8),
    /// `a..=b`
    Range(u8, u8),
    /// `k if guard` (a binding with a guard)
    Guard(BE),
}

/// A call (raw): the callee, and pools of arguments the resolver takes from in parameter
/// order, by type.
#[derive(Clone, Debug)]
pub struct RawCall {
    /// Which function, among those this one may call.
    pub func: u8,
    /// Float arguments.
    pub fargs: Vec<FE>,
    /// Integer arguments.
    pub iargs: Vec<IE>,
    /// Buffer, reference and struct arguments (picks among the candidates of the type).
    pub picks: Vec<u8>,
    /// `bool` arguments.
    pub bargs: Vec<BE>,
}

/// Assignment operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AOp {
    /// `=`
    Set,
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=` (by a divisor `d * d + 1.0`)
    Div,
}

/// How a local buffer is built.
#[derive(Clone, Debug)]
pub enum VecInit {
    /// `vec![a, b, ..]`
    Lit(Vec<FE>),
    /// `vec![v; n]` (n ≥ 1)
    Rep(FE, IE),
    /// `Vec::with_capacity(n)` (or `Vec::new()`) then pushes (at least one).
    Pushed(bool, Vec<FE>),
    /// `x.to_vec()` of a buffer.
    ToVec(u8),
    /// `x.clone()` of a local or `Vec` buffer.
    Clone(u8),
}

/// What a `for` loop iterates over.
#[derive(Clone, Debug)]
pub enum RawIter {
    /// `lo..hi`, `lo..=hi`; `rev`; `step_by(k)`.
    Range { lo: IE, hi: IE, inclusive: bool, rev: bool, step: u8 },
    /// `x.iter()`, `x` / `&x`, `.enumerate()`, `.zip(y.iter())`: `kind` picks the form.
    Buf { buf: u8, other: u8, kind: u8 },
}

/// What a `match` statement matches on.
#[derive(Clone, Debug)]
pub enum Scrut {
    /// An integer with literal, `|`, range and guarded arms, and a final binding.
    Int(IE),
    /// `e % 3` with arms 0, 1, 2 and `_ => unreachable!()`.
    Mod3(IE),
    /// A `bool`.
    Bool(BE),
    /// A value of the enum `E`.
    Enum(u8),
}

/// Assertions and panics (raw).
#[derive(Clone, Debug)]
pub enum RawAssert {
    /// `assert!(x.len() > 0)`
    Len(u8),
    /// `debug_assert!(e.is_finite())`
    Finite(FE),
    /// `assert_eq!(x.len(), x.len())` of the same buffer
    EqLen(u8),
    /// `if i > 1000 { panic!(..) }`
    Panic(IE),
}

/// Statements (raw).
#[derive(Clone, Debug)]
pub enum RawStmt {
    /// `let [mut] x[: f64] = e;`, possibly shadowing the `shadow`-th visible variable.
    LetF { mutable: bool, annotate: bool, shadow: Option<u8>, init: FE },
    /// `let z; z = e;`
    LetLate(FE),
    /// `let mut k = i;`
    LetI(IE),
    /// `let b = c;`
    LetB(BE),
    /// `let [mut] v = <buffer>;`
    LetVec { mutable: bool, init: VecInit },
    /// `let [mut] a = [a, b, c];` / `[v; 3]`
    LetArr { mutable: bool, lit: bool, fs: Vec<FE> },
    /// `let t = (a, b);` or `let (a, b) = (..);`
    LetTuple { destructure: bool, a: FE, b: FE },
    /// `let p = P { x, y };` (or a tuple struct `Q(x, y)`), possibly destructured.
    LetStruct { q: bool, mutable: bool, destructure: bool, a: FE, b: FE },
    /// `let s = S { .. };` built from floats, an integer and a buffer.
    LetS { a: FE, k: IE, buf: u8, px: FE, py: FE },
    /// `let x = g(..);` of a helper returning a tuple, `Vec` or `P` (destructured or not).
    LetCall { call: RawCall, destructure: bool },
    /// `let r = loop { k += 1; if k > n { break e; } body };`
    LetLoop { bound: u8, label: bool, body: Vec<RawStmt>, exit: FE },
    /// Assignment to a float place.
    Assign { place: u8, index: IE, op: AOp, value: FE },
    /// `k += i` / `k = i` on an integer local.
    AssignI { var: u8, add: bool, value: IE },
    /// `v.push(e)`
    Push { buf: u8, value: FE },
    /// `if v.len() > 1 { v.pop(); }`
    Pop(u8),
    /// `x.fill(e)`
    Fill { buf: u8, value: FE },
    /// `x.swap(i, j)`
    Swap { buf: u8, i: IE, j: IE },
    /// `x.copy_from_slice(&y)` (lengths permitting)
    CopyFrom { dst: u8, src: u8 },
    /// `*s = t` of a `&mut Vec<f64>`
    Store { dst: u8, src: u8 },
    /// A call as a statement.
    Call(RawCall),
    /// `if` / `else if` / `else`
    If { cond: BE, then: Vec<RawStmt>, elifs: Vec<(BE, Vec<RawStmt>)>, els: Option<Vec<RawStmt>> },
    /// `match`
    Match { scrut: Scrut, arms: Vec<(RawPat, Vec<RawStmt>)> },
    /// `for`
    For { iter: RawIter, label: bool, body: Vec<RawStmt> },
    /// `let mut k = 0; while k < n [&& c] { k += 1; body }`
    While { bound: IE, cond: Option<BE>, label: bool, body: Vec<RawStmt> },
    /// `let mut k = 0; loop { k += 1; if k > n { break; } body }`
    Loop { bound: u8, label: bool, body: Vec<RawStmt> },
    /// `break` out of the `target`-th enclosing loop (from the innermost).
    Break(u8, FE),
    /// `continue` the `target`-th enclosing loop.
    Continue(u8),
    /// `return e;`
    Return(RawTail),
    /// An assertion or a panic that does not fire.
    Assert(RawAssert),
}

// ---- program tree -------------------------------------------------------------------------------

/// Types of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Ty {
    F64,
    F32,
    /// The type parameter `T: Float` of a generic function.
    T,
    Usize,
    Bool,
    E,
    /// `&[f64]`
    Slice,
    /// `&mut [f64]`
    SliceMut,
    /// `&Vec<f64>`
    VecRef,
    /// `&mut Vec<f64>`
    VecMut,
    /// `Vec<f64>`
    Vec,
    /// `[f64; 3]`
    Arr,
    /// `&[f64; 3]`
    ArrRef,
    /// `&mut [f64; 3]`
    ArrMut,
    /// `&mut f64`
    F64Mut,
    /// `&f64` (a loop element)
    ElemRef,
    /// `(f64, f64)`
    Tuple,
    P,
    PRef,
    PMut,
    Q,
    S,
    SRef,
    SMut,
    Unit,
}

/// The length of the arrays the generator uses.
pub const ARR_N: usize = 3;

impl Ty {
    /// The type as Rust writes it.
    pub fn rust(self) -> &'static str {
        match self {
            Ty::F64 => "f64",
            Ty::F32 => "f32",
            Ty::T => "T",
            Ty::Usize => "usize",
            Ty::Bool => "bool",
            Ty::E => "E",
            Ty::Slice => "&[f64]",
            Ty::SliceMut => "&mut [f64]",
            Ty::VecRef => "&Vec<f64>",
            Ty::VecMut => "&mut Vec<f64>",
            Ty::Vec => "Vec<f64>",
            Ty::Arr => "[f64; 3]",
            Ty::ArrRef => "&[f64; 3]",
            Ty::ArrMut => "&mut [f64; 3]",
            Ty::F64Mut => "&mut f64",
            Ty::ElemRef => "&f64",
            Ty::Tuple => "(f64, f64)",
            Ty::P => "P",
            Ty::PRef => "&P",
            Ty::PMut => "&mut P",
            Ty::Q => "Q",
            Ty::S => "S",
            Ty::SRef => "&S",
            Ty::SMut => "&mut S",
            Ty::Unit => "()",
        }
    }
}

/// A variable: its name and a unique id (names repeat under shadowing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    /// The name as printed.
    pub name: String,
    /// Unique within the function.
    pub id: usize,
}

/// Float and integer binary operators of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    /// The operator's token.
    pub fn token(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

/// Kinds of kinks and poles the interpreter measures the distance to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kink {
    /// Zero (`abs`, `signum`, `recip`, `cbrt`, a divisor), with the smallest distance allowed.
    Zero(f64),
    /// An integer (`floor`, `ceil`, `trunc`, `fract`).
    Integer,
    /// An integer plus one half (`round`).
    HalfInteger,
    /// A multiple of the given modulus (`%`).
    Multiple(f64),
    /// Another value (`min`, `max`): the distance between the two operands.
    Tie,
    /// Either of two bounds (`clamp`).
    Bounds(f64, f64),
}

/// Expressions of the program.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A float literal.
    F(f64),
    /// A `usize` literal.
    I(u64),
    /// An integer literal of an inferred type (the exponent of `powi`).
    SInt(i64),
    /// A `bool` literal.
    B(bool),
    /// A constant path, with its value.
    Const(&'static str, f64),
    /// A variable.
    Var(Var),
    /// `*e`
    Deref(Box<Expr>),
    /// `e.name` (`e.0` for tuples), with the field's position.
    Field(Box<Expr>, &'static str, usize),
    /// `base[index]`, or `base[index % m]` once the interpreter has needed it (`id`).
    Index { base: Box<Expr>, index: Box<Expr>, id: usize },
    /// An index kept in range by `% m` once the interpreter has needed it (`id`): the indices of
    /// `swap`.
    Wrap { index: Box<Expr>, id: usize },
    /// A binary operator (floats or integers; `ty` says which).
    Bin(BinOp, Box<Expr>, Box<Expr>, Ty),
    /// `-e`
    Neg(Box<Expr>),
    /// `!e`
    Not(Box<Expr>),
    /// `a op b` on floats or integers; a float comparison's right side gets the offset of `id`.
    Cmp { op: CmpOp, a: Box<Expr>, b: Box<Expr>, float: bool, id: usize },
    /// `a && b`
    And(Box<Expr>, Box<Expr>),
    /// `a || b`
    Or(Box<Expr>, Box<Expr>),
    /// A method of `f64` or `usize`: `recv.name(args)` or, with `path`, `f64::name(recv, args)`.
    Method { recv: Box<Expr>, name: &'static str, args: Vec<Expr>, path: bool },
    /// A value kept below `limit` in magnitude once the interpreter has needed it (`id`):
    /// printed as `((e) / limit).tanh() * limit` then.
    Squash { inner: Box<Expr>, limit: f64, id: usize },
    /// A value kept away from a kink: printed `(e + offset)` once the interpreter has needed an
    /// offset (`id`); the kink is the next operation's.
    Offset { inner: Box<Expr>, kink: Kink, id: usize },
    /// `e as ty`
    Cast(Box<Expr>, Ty),
    /// `x.len()`
    Len(Box<Expr>),
    /// `x.iter().sum::<f64>()`
    Sum(Box<Expr>),
    /// `x.is_finite()`
    IsFinite(Box<Expr>),
    /// A call of a generated function (its index in the program); `qualified` writes `self::g`
    /// for a function of the same module.
    Call { func: usize, args: Vec<Expr>, qualified: bool },
    /// `recv.g(args)`, a method of `P`: `by_ref` is `Some(mutable)` for `&self` / `&mut self`.
    MethodCall { func: usize, recv: Box<Expr>, by_ref: Option<bool>, args: Vec<Expr> },
    /// `&e` / `&mut e`
    Ref { mutable: bool, inner: Box<Expr> },
    /// `if c { a } else { b }`
    If(Box<Expr>, Box<Block>, Box<Block>),
    /// `match e { arms }`
    Match(Box<Expr>, Vec<Arm>),
    /// `{ block }`
    Block(Box<Block>),
    /// `loop { body }` with a value (the loop's id for `break`).
    Loop { label: Option<String>, id: usize, body: Box<Block> },
    /// `vec![a, b, ..]`
    VecLit(Vec<Expr>),
    /// `vec![v; n]`
    VecRep(Box<Expr>, Box<Expr>),
    /// `Vec::with_capacity(n)`, or `Vec::new()` without `n`.
    VecNew(Option<Box<Expr>>),
    /// `x.to_vec()`
    ToVec(Box<Expr>),
    /// `x.clone()`
    Clone(Box<Expr>),
    /// `[a, b, c]`
    ArrLit(Vec<Expr>),
    /// `[v; 3]`
    ArrRep(Box<Expr>),
    /// `(a, b)`
    Tuple(Vec<Expr>),
    /// `P { x: a, y: b }`, `Q(a, b)`, `S { .. }`: the type and its fields in order.
    Struct(Ty, Vec<Expr>),
    /// `E::A` ..
    Variant(u8),
}

/// A match arm.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The pattern.
    pub pat: Pat,
    /// An optional guard.
    pub guard: Option<Expr>,
    /// The arm's body.
    pub body: Block,
}

/// Patterns of the program.
#[derive(Clone, Debug)]
pub enum Pat {
    /// `_`
    Wild,
    /// A binding.
    Bind(Var),
    /// Integer literals joined by `|`.
    Ints(Vec<u64>),
    /// `a..=b`
    Range(u64, u64),
    /// `true` / `false`
    Bool(bool),
    /// `E::A` ..
    Variant(u8),
}

/// What a `let` binds.
#[derive(Clone, Debug)]
pub enum LetPat {
    /// `[mut] x`
    Var(Var, bool),
    /// `(a, b)`, `P { x, y }`, `Q(a, b)`: the type and the variables.
    Destructure(Ty, Vec<Var>),
}

/// How a `for` loop iterates.
#[derive(Clone, Debug)]
pub enum Iter {
    /// `lo..hi` / `lo..=hi`, maybe `.rev()` / `.step_by(k)`.
    Range { lo: Expr, hi: Expr, inclusive: bool, rev: bool, step: Option<u64> },
    /// `x.iter()`
    Elements(Expr),
    /// `x` (a reference) or `&x` (a value): `by_ref` says which to print.
    Direct(Expr, bool),
    /// `x.iter().enumerate()`
    Enumerate(Expr),
    /// `x.iter().zip(y.iter())`
    Zip(Expr, Expr),
}

/// What a `for` loop binds.
#[derive(Clone, Debug)]
pub enum ForPat {
    /// `i` or `v`
    One(Var),
    /// `(i, v)` / `(a, b)`
    Two(Var, Var),
}

/// Statements of the program.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// `let pat[: ty] = init;` (`init` absent: a late-initialised local).
    Let { pat: LetPat, ty: Option<Ty>, init: Option<Expr> },
    /// `place op= value`
    Assign { place: Expr, op: Option<BinOp>, value: Expr, id: usize },
    /// An expression statement (calls, methods with effects).
    Expr(Expr),
    /// `v.push(e)`
    Push(Expr, Expr),
    /// `if v.len() > 1 { v.pop(); }`
    Pop(Expr),
    /// `x.fill(e)`
    Fill(Expr, Expr),
    /// `x.swap(i, j)`
    Swap(Expr, Expr, Expr),
    /// `x.copy_from_slice(&y)`: `src_ref` prints the `&`; left out once the interpreter finds
    /// the lengths differ (`id`).
    CopyFrom(Expr, Expr, bool, usize),
    /// `if` chain
    If(Vec<(Expr, Block)>, Option<Block>),
    /// `match`
    Match(Expr, Vec<Arm>),
    /// `for pat in iter { body }`
    For { label: Option<String>, id: usize, pat: ForPat, iter: Iter, body: Block },
    /// `while cond { body }`
    While { label: Option<String>, id: usize, cond: Expr, body: Block },
    /// `loop { body }`
    Loop { label: Option<String>, id: usize, body: Block },
    /// `break ['l] [value]`: the id of the loop.
    Break { target: usize, label: Option<String>, value: Option<Expr> },
    /// `continue ['l]`
    Continue { target: usize, label: Option<String> },
    /// `return [value]`
    Return(Option<Expr>),
    /// `assert!(c)` / `debug_assert!(c)` (`debug`), with a message if `msg`.
    Assert { cond: Expr, debug: bool, msg: bool },
    /// `assert_eq!(a, b)`
    AssertEq(Expr, Expr),
    /// `if c { panic!("..") }`
    PanicIf(Expr),
    /// `match` arm body `unreachable!()`: used only as an arm.
    Unreachable,
}

/// A block: statements and an optional value.
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The statements.
    pub stmts: Vec<Stmt>,
    /// The value.
    pub tail: Option<Expr>,
}

/// A parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// The variable.
    pub var: Var,
    /// Its type.
    pub ty: Ty,
    /// `mut x: T`
    pub mutable: bool,
}

/// A function of the program.
#[derive(Clone, Debug)]
pub struct Func {
    /// Its name.
    pub name: String,
    /// Parameters.
    pub params: Vec<Param>,
    /// Return type.
    pub ret: Ty,
    /// It closes a cycle of mutual recursion (marked by a comment; it needs no attribute).
    pub mutual: bool,
    /// What kind of function (the receiver of a method is its first parameter, `self`).
    pub kind: FnKind,
    /// The body.
    pub body: Block,
}

/// An input value of the entry point.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A float.
    F(f64),
    /// An integer.
    I(u64),
    /// A `bool`.
    B(bool),
    /// A variant of `E`.
    E(u8),
    /// A buffer (also arrays).
    Buf(Vec<f64>),
    /// A tuple, `P`, `Q`, or `S` (fields in order).
    Rec(Vec<Value>),
}

/// A resolved program: functions (`funcs[0]` is checked), the entry's arguments, how each is
/// passed, and the seed of the tangents.
#[derive(Clone, Debug)]
pub struct Program {
    /// The functions.
    pub funcs: Vec<Func>,
    /// One value per parameter of `funcs[0]`, or `Alias(k)`: the same buffer as argument `k`.
    pub args: Vec<Arg>,
    /// The seed of `test_rule!`.
    pub seed: u64,
}

/// An argument of the checked call.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A value of its own.
    Own(Value),
    /// The same buffer as an earlier argument (both passed by `&`).
    Alias(usize),
}

/// The interpreter's repairs, by spot id: squash on, offset level, index wrapped.
#[derive(Clone, Debug, Default)]
pub struct Repairs {
    /// `Squash` spots switched on.
    pub squash: BTreeMap<usize, ()>,
    /// `Offset` spots and float comparisons: how many times shifted.
    pub offset: BTreeMap<usize, u32>,
    /// `Index` spots wrapped: `x[i % m]`, `m` the shortest length the buffer had there.
    pub wrap: BTreeMap<usize, u64>,
    /// Statements left out (`CopyFrom` of buffers of different lengths).
    pub skip: BTreeMap<usize, ()>,
    /// Compound assignments (`Assign` ids): 1 squashes the value, 2 rewrites as a squashed plain
    /// assignment.
    pub assign: BTreeMap<usize, u32>,
}

impl Repairs {
    /// The offset added at a spot.
    pub fn offset_of(&self, id: usize) -> f64 {
        // Shifts that are not multiples of each other nor of simple fractions.
        const SHIFTS: [f64; 8] = [0.0, 0.375, -0.625, 1.125, -1.75, 2.25, -2.875, 3.5];
        let k = self.offset.get(&id).copied().unwrap_or(0) as usize;
        SHIFTS[k.min(SHIFTS.len() - 1)]
    }
}
