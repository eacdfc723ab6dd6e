//! Generated inputs: Rust that parses (mostly) but lies outside what the macros accept.
//! Closures, `async`, `unsafe`, `const` blocks, generics with lifetimes and const parameters,
//! where clauses, trait and impl items of every kind, macros in bodies, every pattern form,
//! labelled blocks, `let .. else`, nested items, references to references, arrays of arrays,
//! raw pointers, `dyn` and `impl Trait` types, tuple structs, enums with data, unions, and
//! calls with every way of passing an argument. Every decision comes from the choice sequence;
//! its zero is the simplest alternative.

use super::choices::Choices;
use super::{Case, Target, lex};

/// The generator: a choice sequence and a size budget (each nested construct costs one).
pub(crate) struct Gen<'a, 'b> {
    c: &'a mut Choices<'b>,
    budget: usize,
    /// The names in scope, in the subset generator.
    scope: Vec<String>,
}

/// An input for one of the macros.
pub(crate) fn generated(c: &mut Choices<'_>) -> Case {
    let mut g = Gen { c, budget: 60, scope: Vec::new() };
    let k = g.c.below(28);
    let (target, attr, input) = match k {
        20..=25 => (Target::Differentiable, g.diff_attr(), g.subset_fn(false)),
        26 => (Target::Differentiable, g.diff_attr(), g.subset_impl()),
        0..=6 => (Target::Differentiable, g.diff_attr(), g.item_fn(3, false)),
        7 | 8 => (Target::Differentiable, g.diff_attr(), g.impl_block()),
        9 => (Target::Differentiable, g.diff_attr(), g.other_item()),
        10 => (Target::Overlay, g.diff_attr(), g.item_fn(2, false)),
        11 | 12 => (Target::DeriveTangent, String::new(), g.type_item()),
        13 => (Target::ZeroAdjoint, String::new(), g.rule_sigs(false)),
        14 => (Target::FromRrule, String::new(), g.rule_sigs(true)),
        15 => (Target::ValueAndDerivative, String::new(), g.api_input(0)),
        16 => {
            let t = *g.c.pick(&[Target::ValueAndGradient, Target::ValueAndPullback]);
            let with_ybar = usize::from(t == Target::ValueAndPullback) + 1;
            (t, String::new(), g.api_input(with_ybar))
        }
        17 => {
            (*g.c.pick(&[Target::TestRule, Target::CheckRule]), String::new(), g.test_rule_input())
        }
        18 | 19 => {
            let t = *g.c.pick(&[Target::Frule, Target::Rrule]);
            let attr = g.rule_attr();
            (t, attr, g.rule_fn(t == Target::Frule))
        }
        _ => (Target::Overlay, g.diff_attr(), g.subset_fn(false)),
    };
    Case { target, attr: lex(&attr), input: lex(&input) }
}

const IDENTS: &[&str] = &[
    "x", "y", "n", "i", "v", "s", "acc", "w", "p", "f", "g", "z", "_x", "r#match", "__l0", "__d",
    "__t0", "x_frule", "self_", "T", "N",
];
const SCALARS: &[&str] =
    &["f64", "f32", "usize", "i32", "bool", "u8", "i64", "char", "str", "String", "()", "!"];
const METHODS: &[&str] = &[
    "sin",
    "len",
    "iter",
    "map",
    "zip",
    "clone",
    "into",
    "unwrap",
    "powi",
    "sum",
    "enumerate",
    "rev",
    "step_by",
    "push",
    "pop",
    "max",
    "abs",
    "to_vec",
    "iter_mut",
    "filter",
    "fold",
    "collect",
    "as_ref",
    "borrow_mut",
    "get",
    "swap",
    "chunks",
    "windows",
    "first",
    "sqrt",
    "mul_add",
    "atan2",
    "min",
    "hypot",
    "fill",
    "copy_from_slice",
    "await_",
];
const MACROS: &[&str] = &[
    "vec![{e}; 3]",
    "vec![{e}, {e}]",
    "vec![]",
    "println!(\"{{}}\", {e})",
    "format!(\"{{{e}}}\")",
    "assert!({e})",
    "assert_eq!({e}, {e})",
    "debug_assert!({e} > 0.0, \"msg {{}}\", {e})",
    "panic!()",
    "panic!(\"{{}}\", {e})",
    "unreachable!()",
    "matches!({e}, Some(_) | None)",
    "dbg!({e})",
    "todo!()",
    "my_macro!{{ {e} }}",
    "core::panic!({e})",
    "std::vec![{e}]",
    "include!(\"x.rs\")",
    "concat!(\"a\", 1)",
    "core::arch::asm!(\"nop\")",
    "thread_local!{{ static T: f64 = 1.0; }}",
    "m::m![{e}]",
];

impl Gen<'_, '_> {
    fn pick<'s>(&mut self, items: &'s [&'s str]) -> &'s str {
        self.c.pick::<&str>(items)
    }

    /// Whether a nested construct fits in the budget at `depth`.
    fn deeper(&mut self, depth: usize) -> bool {
        if depth == 0 || self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    fn ident(&mut self) -> String {
        self.pick(IDENTS).to_string()
    }

    /// Zero to `max` items, separated by `sep`.
    fn list(&mut self, max: usize, sep: &str, mut item: impl FnMut(&mut Self) -> String) -> String {
        let n = self.c.below(max + 1);
        (0..n).map(|_| item(self)).collect::<Vec<_>>().join(sep)
    }

    fn lifetime(&mut self) -> &'static str {
        self.c.pick::<&str>(&["'a", "'static", "'_", "'b"])
    }

    // Types.

    fn ty(&mut self, depth: usize) -> String {
        if !self.deeper(depth) {
            return self.pick(SCALARS).to_string();
        }
        let d = depth - 1;
        match self.c.below(24) {
            0 => self.pick(SCALARS).to_string(),
            1 => format!("&{}", self.ty(d)),
            2 => format!("&mut {}", self.ty(d)),
            3 => format!("&{} {}", self.lifetime(), self.ty(d)),
            4 => format!("&&{}", self.ty(d)),
            5 => format!("&mut &mut {}", self.ty(d)),
            6 => format!("[{}]", self.ty(d)),
            7 => format!(
                "[{}; {}]",
                self.ty(d),
                self.pick(&["3", "N", "{ N + 1 }", "0", "usize::MAX"])
            ),
            8 => format!("[[{}; 2]; 3]", self.ty(d)),
            9 => format!("Vec<{}>", self.ty(d)),
            10 => format!("({}, {})", self.ty(d), self.ty(d)),
            11 => format!("({},)", self.ty(d)),
            12 => format!("Option<{}>", self.ty(d)),
            13 => format!("Box<dyn Fn({}) -> {}>", self.ty(d), self.ty(d)),
            14 => format!("impl Iterator<Item = {}>", self.ty(d)),
            15 => format!("*const {}", self.ty(d)),
            16 => format!("*mut {}", self.ty(d)),
            17 => format!("fn({}) -> {}", self.ty(d), self.ty(d)),
            18 => self
                .pick(&["T", "Self", "Self::Out", "<T as Tr>::Out", "U<'a, 3>", "S<{ N }>"])
                .to_string(),
            19 => format!("dyn Tr<{}> + 'static", self.ty(d)),
            20 => format!("std::vec::Vec<{}>", self.ty(d)),
            21 => self
                .pick(&[
                    "_",
                    "ty!()",
                    "for<'c> fn(&'c f64)",
                    "unsafe extern \"C\" fn()",
                    "impl Sized",
                ])
                .to_string(),
            22 => format!("Rc<RefCell<{}>>", self.ty(d)),
            _ => format!("Dual<{}, {}>", self.ty(d), self.ty(d)),
        }
    }

    // Patterns.

    fn pat(&mut self, depth: usize) -> String {
        if !self.deeper(depth) {
            return self.ident();
        }
        let d = depth - 1;
        match self.c.below(22) {
            0 => self.ident(),
            1 => "_".into(),
            2 => format!("mut {}", self.ident()),
            3 => format!("ref {}", self.ident()),
            4 => format!("ref mut {}", self.ident()),
            5 => format!("({}, {})", self.pat(d), self.pat(d)),
            6 => format!("[{}, .., {}]", self.pat(d), self.pat(d)),
            7 => format!("[{}, rest @ ..]", self.pat(d)),
            8 => format!("S {{ a, b: {}, .. }}", self.pat(d)),
            9 => format!("S({}, ..)", self.pat(d)),
            10 => format!("Some({})", self.pat(d)),
            11 => "None".into(),
            12 => "1 | 2".into(),
            13 => self
                .pick(&[
                    "1..=3",
                    "..=3",
                    "'a'..='z'",
                    "0.0..1.0",
                    "-1",
                    "i32::MIN..",
                    "\"lit\"",
                    "true",
                ])
                .to_string(),
            14 => format!("&{}", self.pat(d)),
            15 => format!("&mut {}", self.pat(d)),
            16 => format!("{} @ Some(_)", self.ident()),
            17 => "E::V { .. }".into(),
            18 => "(..)".into(),
            19 => format!("{} | {}", self.pat(d), self.pat(d)),
            20 => "const { 1 }".into(),
            _ => "<T as Tr>::C".to_string(),
        }
    }

    // Expressions.

    fn leaf(&mut self) -> String {
        self.pick(&[
            "x",
            "y",
            "1.0",
            "2",
            "n",
            "v[i]",
            "self.w",
            "Self::K",
            "p.0",
            "true",
            "\"s\"",
            "'c'",
            "f64::MAX",
            "core::f64::consts::PI",
            "i as f64",
            "()",
            "[]",
            "..",
            "x.y.z",
            "1e400",
            "0usize",
            "r#match",
            "b'x'",
            "-0.0",
            "*x",
            "**x",
            "&&x",
            "self",
            "N",
        ])
        .to_string()
    }

    fn expr(&mut self, depth: usize) -> String {
        if !self.deeper(depth) {
            return self.leaf();
        }
        let d = depth - 1;
        match self.c.below(52) {
            0 => self.leaf(),
            1 => {
                let op = self.pick(&[
                    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">",
                    ">=", "&&", "||", "..", "..=",
                ]);
                format!("{} {op} {}", self.expr(d), self.expr(d))
            }
            2 => format!(
                "{}{}",
                self.pick(&["-", "!", "*", "&", "&mut ", "&&", "&raw const ", "&raw mut "]),
                self.expr(d)
            ),
            3 => {
                let m = self.pick(METHODS);
                let args = self.list(2, ", ", |g| g.expr(d));
                format!("{}.{m}({args})", self.expr(d))
            }
            4 => {
                let f = self.pick(&[
                    "g",
                    "self::g",
                    "<T as Tr>::g",
                    "Vec::<f64>::new",
                    "g::<3>",
                    "crate::m::g",
                    "super::g",
                    "f",
                    "Self::new",
                    "T::default",
                    "(g)",
                    "S",
                    "x.f",
                ]);
                let args = self.list(3, ", ", |g| g.arg_expr(d));
                format!("{f}({args})")
            }
            5 => format!("{}[{}]", self.expr(d), self.expr(d)),
            6 => format!("{}.{}", self.expr(d), self.pick(&["f", "0", "1", "w", "await", "len"])),
            7 => format!("({}, {})", self.expr(d), self.expr(d)),
            8 => format!("[{}, {}]", self.expr(d), self.expr(d)),
            9 => format!("[{}; {}]", self.expr(d), self.pick(&["3", "n", "N"])),
            10 => format!("({})", self.expr(d)),
            11 => self.block(d),
            12 => format!("unsafe {}", self.block(d)),
            13 => format!("async {}", self.block(d)),
            14 => format!("async move {}", self.block(d)),
            15 => format!("const {}", self.block(d)),
            16 => format!("|{}| {}", self.list(2, ", ", |g| g.closure_param(d)), self.expr(d)),
            17 => format!("move || {}", self.expr(d)),
            18 => format!("|&(a, b): &(f64, f64)| -> f64 {}", self.block(d)),
            19 => format!("if {} {} else {}", self.cond(d), self.block(d), self.block(d)),
            20 => format!("if {} {}", self.cond(d), self.block(d)),
            21 => format!(
                "if let {} = {} {} else {}",
                self.pat(d),
                self.expr(d),
                self.block(d),
                self.block(d)
            ),
            22 => {
                let arms = self.list(3, " ", |g| {
                    let guard =
                        if g.c.maybe(30) { format!(" if {}", g.expr(d)) } else { String::new() };
                    format!("{}{guard} => {},", g.pat(d), g.expr(d))
                });
                format!("match {} {{ {arms} _ => {} }}", self.expr(d), self.expr(d))
            }
            23 => format!("loop {{ break {}; }}", self.expr(d)),
            24 => format!("'a: loop {{ break 'a {}; }}", self.expr(d)),
            25 => format!(
                "'b: {{ if {} {{ break 'b {}; }} {} }}",
                self.cond(d),
                self.expr(d),
                self.expr(d)
            ),
            26 => format!("while {} {}", self.cond(d), self.block(d)),
            27 => format!("while let {} = {} {}", self.pat(d), self.expr(d), self.block(d)),
            28 => format!("for {} in {} {}", self.pat(d), self.iter_expr(d), self.block(d)),
            29 => format!("{}?", self.expr(d)),
            30 => format!("{}.await", self.expr(d)),
            31 => format!("{} as {}", self.expr(d), self.ty(d)),
            32 => format!("return {}", self.expr(d)),
            33 => self
                .pick(&["return", "break", "continue", "break 'a", "continue 'a", "yield 1"])
                .to_string(),
            34 => format!("S {{ a: {}, ..{} }}", self.expr(d), self.expr(d)),
            35 => format!("S {{ a: {}, b }}", self.expr(d)),
            36 => format!("S({})", self.expr(d)),
            37 => {
                let m = self.pick(MACROS);
                let mut out = String::new();
                for (i, part) in m.split("{e}").enumerate() {
                    if i > 0 {
                        out.push_str(&self.expr(d));
                    }
                    out.push_str(&part.replace("{{", "{").replace("}}", "}"));
                }
                out
            }
            38 => format!("{} = {}", self.place(d), self.expr(d)),
            39 => format!(
                "{} {} {}",
                self.place(d),
                self.pick(&["+=", "-=", "*=", "/=", "%=", "^=", "<<=", "|="]),
                self.expr(d)
            ),
            40 => format!("try {}", self.block(d)),
            41 => {
                format!("if let Some(a) = {} && {} {}", self.expr(d), self.expr(d), self.block(d))
            }
            42 => format!("#[allow(unused)] {}", self.block(d)),
            43 => format!("{}::<{}>()", self.pick(&["g", "x.sum", "Vec::new", "f"]), self.ty(d)),
            44 => format!("({})(x)", self.expr(d)),
            45 => format!("{}.0.1", self.expr(d)),
            46 => format!("{}[..{}]", self.expr(d), self.expr(d)),
            47 => format!("_ = {}", self.expr(d)),
            48 => format!("({}, _) = {}", self.place(d), self.expr(d)),
            49 => format!("static || {}", self.expr(d)),
            50 => format!("async || {}", self.expr(d)),
            _ => format!(
                "{}.{}::<{}>({})",
                self.expr(d),
                self.pick(METHODS),
                self.ty(d),
                self.expr(d)
            ),
        }
    }

    fn arg_expr(&mut self, depth: usize) -> String {
        match self.c.below(6) {
            0 => self.expr(depth),
            1 => format!("&{}", self.expr(depth)),
            2 => format!("&mut {}", self.expr(depth)),
            3 => format!("&{}.{}", self.ident(), self.pick(&["w", "0", "inner.w"])),
            4 => format!("&mut {}[{}..]", self.ident(), self.expr(depth)),
            _ => format!("{}.clone()", self.ident()),
        }
    }

    fn cond(&mut self, depth: usize) -> String {
        match self.c.below(4) {
            0 => format!("{} > 0.0", self.expr(depth)),
            1 => format!("let {} = {}", self.pat(depth), self.expr(depth)),
            _ => self.expr(depth),
        }
    }

    fn iter_expr(&mut self, depth: usize) -> String {
        match self.c.below(10) {
            0 => "0..n".into(),
            1 => format!("{}..={}", self.expr(depth), self.expr(depth)),
            2 => "x.iter()".into(),
            3 => "&x".into(),
            4 => "x.iter().enumerate()".into(),
            5 => "x.iter().zip(y.iter())".into(),
            6 => "(0..n).rev().step_by(2)".into(),
            7 => "x.iter_mut()".into(),
            8 => "&mut x".into(),
            _ => self.expr(depth),
        }
    }

    fn place(&mut self, depth: usize) -> String {
        match self.c.below(8) {
            0 => self.ident(),
            1 => format!("{}[{}]", self.ident(), self.expr(depth)),
            2 => format!("*{}", self.ident()),
            3 => format!("{}.w[{}]", self.ident(), self.expr(depth)),
            4 => format!("{}.0", self.ident()),
            5 => format!("**{}", self.ident()),
            6 => format!("(*{}).b", self.ident()),
            _ => format!("{}[{}][{}]", self.ident(), self.expr(depth), self.expr(depth)),
        }
    }

    fn closure_param(&mut self, depth: usize) -> String {
        if self.c.maybe(50) {
            format!("{}: {}", self.pat(depth), self.ty(depth))
        } else {
            self.pat(depth)
        }
    }

    fn block(&mut self, depth: usize) -> String {
        let stmts = self.list(3, " ", |g| g.stmt(depth));
        let tail = if self.c.maybe(70) { self.expr(depth) } else { String::new() };
        format!("{{ {stmts} {tail} }}")
    }

    fn stmt(&mut self, depth: usize) -> String {
        let d = depth.saturating_sub(1);
        match self.c.below(22) {
            0 => format!("let {} = {};", self.pat(d), self.expr(d)),
            1 => format!("let {}: {} = {};", self.pat(d), self.ty(d), self.expr(d)),
            2 => format!("let {};", self.pat(d)),
            3 => format!(
                "let {} = {} else {{ return {}; }};",
                self.pat(d),
                self.expr(d),
                self.expr(d)
            ),
            4 => format!("{};", self.expr(d)),
            5 => self.item_fn(d, false),
            6 => "struct L;".into(),
            7 => format!("const C: {} = {};", self.ty(d), self.expr(d)),
            8 => format!("static mut S: {} = {};", self.ty(d), self.expr(d)),
            9 => "use std::f64::consts::*;".into(),
            10 => "macro_rules! m { ($e:expr) => { $e }; }".into(),
            11 => format!("impl S {{ {} }}", self.item_fn(d, true)),
            12 => format!("#[allow(unused)] let {} = {};", self.pat(d), self.expr(d)),
            13 => ";".into(),
            14 => format!("let _ = {};", self.expr(d)),
            15 => format!("{} = {};", self.place(d), self.expr(d)),
            16 => format!("{} += {};", self.place(d), self.expr(d)),
            17 => format!("let mut {} = {};", self.ident(), self.expr(d)),
            18 => format!(
                "{}!({});",
                self.pick(&["m", "println", "assert", "vec", "dbg", "debug_assert_eq"]),
                self.expr(d)
            ),
            19 => format!("extern \"C\" {{ fn ext(x: {}); }}", self.ty(d)),
            20 => format!("#[differentiable] fn inner(x: f64) -> f64 {}", self.block(d)),
            _ => format!("trait Tr {{ fn m(&self) -> {}; }}", self.ty(d)),
        }
    }

    // Items.

    fn generics(&mut self) -> String {
        if !self.c.maybe(40) {
            return String::new();
        }
        let params = self.list(3, ", ", |g| {
            g.pick(&[
                "T",
                "T: Float",
                "'a",
                "'a: 'b",
                "const N: usize",
                "const N: usize = 3",
                "T: ?Sized + Tr<X = f64>",
                "F: Fn(f64) -> f64",
                "T: Copy + 'a",
                "#[cfg(x)] U",
                "const B: bool",
                "T = f64",
                "impl",
            ])
            .to_string()
        });
        format!("<{params}>")
    }

    fn where_clause(&mut self) -> String {
        if !self.c.maybe(25) {
            return String::new();
        }
        let preds = self.list(3, ", ", |g| {
            g.pick(&[
                "T: Float",
                "'a: 'b",
                "for<'c> F: Fn(&'c f64)",
                "[f64; N]: Sized",
                "T: Primal<Tangent = T>",
                "Self: Sized",
                "Vec<T>: Clone",
                "T:",
            ])
            .to_string()
        });
        // rustfmt ends a where clause with a comma.
        let comma = if !preds.is_empty() && self.c.maybe(40) { "," } else { "" };
        format!(" where {preds}{comma}")
    }

    fn fn_arg(&mut self, in_impl: bool, depth: usize) -> String {
        let k = self.c.below(if in_impl { 16 } else { 12 });
        match k {
            0..=3 => format!("{}: {}", self.ident(), self.ty(depth)),
            4 => format!("mut {}: {}", self.ident(), self.ty(depth)),
            5 => format!("({}, {}): (f64, f64)", self.ident(), self.ident()),
            6 => "S { a, .. }: S".into(),
            7 => format!("_: {}", self.ty(depth)),
            8 => format!("#[allow(unused)] {}: {}", self.ident(), self.ty(depth)),
            9 => "[a, b]: [f64; 2]".to_string(),
            10 => "...".into(),
            11 => format!("ref {}: f64", self.ident()),
            _ => self
                .pick(&[
                    "&self",
                    "&mut self",
                    "self",
                    "mut self",
                    "self: Box<Self>",
                    "&'a self",
                    "self: &Self",
                ])
                .to_string(),
        }
    }

    fn item_fn(&mut self, depth: usize, in_impl: bool) -> String {
        let mut head = String::new();
        if self.c.maybe(15) {
            head.push_str(self.pick(&[
                "#[inline] ",
                "#[doc = \"d\"] ",
                "#[differentiable] ",
                "#[cfg(test)] ",
                "#[must_use] ",
            ]));
        }
        if self.c.maybe(20) {
            head.push_str(self.pick(&["pub ", "pub(crate) ", "pub(in crate::m) ", "pub(super) "]));
        }
        if self.c.maybe(20) {
            head.push_str(self.pick(&[
                "const ",
                "async ",
                "unsafe ",
                "extern \"C\" ",
                "default ",
                "const async unsafe ",
            ]));
        }
        let name = self.pick(&["f", "g", "r#match", "self_", "f_frule", "new", "__m0"]);
        let generics = self.generics();
        let args = self.list(3, ", ", |g| g.fn_arg(in_impl, depth));
        let ret = if self.c.maybe(75) { format!(" -> {}", self.ty(depth)) } else { String::new() };
        let wh = self.where_clause();
        let body = if self.c.maybe(3) { ";".to_string() } else { self.block(depth) };
        format!("{head}fn {name}{generics}({args}){ret}{wh} {body}")
    }

    fn impl_item(&mut self) -> String {
        match self.c.below(10) {
            0..=4 => self.item_fn(2, true),
            5 => format!("const C: {} = {};", self.ty(1), self.expr(1)),
            6 => format!("type Out = {};", self.ty(1)),
            7 => "m!();".into(),
            8 => "fn f(&self);".into(),
            _ => format!("#[differentiable(debug)] {}", self.item_fn(1, true)),
        }
    }

    fn impl_block(&mut self) -> String {
        let unsafety = if self.c.maybe(5) { "unsafe " } else { "" };
        let generics = self.generics();
        let tr = if self.c.maybe(30) {
            self.pick(&["Tr for ", "Add<f64> for ", "!Send for ", "Fn(f64) for ", "<T> Tr for "])
                .to_string()
        } else {
            String::new()
        };
        let ty = self.pick(&[
            "S",
            "S<T>",
            "Point",
            "[f64]",
            "&'a S",
            "dyn Tr",
            "(f64, f64)",
            "Vec<f64>",
            "S<N>",
            "<T as Tr>::Out",
            "_",
        ]);
        let wh = self.where_clause();
        let items = self.list(3, " ", Self::impl_item);
        format!("{unsafety}impl{generics} {tr}{ty}{wh} {{ {items} }}")
    }

    fn other_item(&mut self) -> String {
        match self.c.below(12) {
            0 => format!("struct S {{ a: {} }}", self.ty(2)),
            1 => "trait Tr { fn f(&self) -> f64 { 1.0 } }".into(),
            2 => format!("mod m {{ {} }}", self.item_fn(1, false)),
            3 => format!("const C: f64 = {};", self.expr(2)),
            4 => "static S: f64 = 1.0;".into(),
            5 => "use std::f64::consts::PI;".into(),
            6 => "macro_rules! m { () => {} }".into(),
            7 => "extern \"C\" { fn ext(x: f64) -> f64; }".into(),
            8 => "type A<T> = Vec<T>;".into(),
            9 => "enum E { A(f64), B }".into(),
            10 => "extern crate core as c;".into(),
            _ => "union U { a: f64, b: u64 }".into(),
        }
    }

    fn field(&mut self) -> String {
        let attr = if self.c.maybe(10) {
            self.pick(&["#[tangent(skip)] ", "#[serde(skip)] ", "#[cfg(x)] ", "#[doc = \"f\"] "])
        } else {
            ""
        };
        let vis = if self.c.maybe(30) {
            self.pick(&["pub ", "pub(crate) ", "pub(in crate::m) ", "pub(self) "])
        } else {
            ""
        };
        format!("{attr}{vis}{}", self.ty(2))
    }

    fn type_item(&mut self) -> String {
        let attr = if self.c.maybe(20) {
            self.pick(&[
                "#[repr(C)] ",
                "#[repr(C, packed)] ",
                "#[repr(packed(2))] ",
                "#[repr(u8)] ",
                "#[repr(transparent)] ",
                "#[derive(Clone)] ",
                "#[tangent] ",
            ])
        } else {
            ""
        };
        let vis = if self.c.maybe(30) { "pub " } else { "" };
        let generics = self.generics();
        let wh = self.where_clause();
        match self.c.below(8) {
            0 | 1 => {
                let fields = self.list(3, ", ", |g| {
                    let name =
                        g.pick(&["a", "b", "w", "r#type", "tangent", "__m", "primal", "self_"]);
                    format!("{name}: {}", g.field())
                });
                format!("{attr}{vis}struct S{generics}{wh} {{ {fields} }}")
            }
            2 => {
                let fields = self.list(3, ", ", Self::field);
                format!("{attr}{vis}struct S{generics}({fields}){wh};")
            }
            3 => format!("{attr}{vis}struct S{generics}{wh};"),
            4 => {
                let variants = self.list(4, ", ", |g| match g.c.below(5) {
                    0 => g.pick(&["A", "B", "C"]).to_string(),
                    1 => format!("A({})", g.ty(1)),
                    2 => format!("B {{ x: {} }}", g.ty(1)),
                    3 => format!("C = {}", g.pick(&["1", "-1", "1 << 3", "N"])),
                    _ => "#[default] D".into(),
                });
                format!("{attr}{vis}enum E{generics}{wh} {{ {variants} }}")
            }
            5 => format!(
                "{attr}{vis}union U{generics}{wh} {{ a: {}, b: {} }}",
                self.ty(1),
                self.ty(1)
            ),
            6 => format!("{attr}{vis}enum E {{}}"),
            _ => format!("{attr}{vis}struct S{generics}{wh} {{ a: {}, b: Box<S> }}", self.ty(2)),
        }
    }

    fn diff_attr(&mut self) -> String {
        if !self.c.maybe(25) {
            return String::new();
        }
        self.list(3, ", ", |g| {
            g.pick(&[
                "debug",
                "recursive",
                "forward_only",
                "reverse_only",
                "second_order",
                "second_order",
                "forward_only, second_order",
                "foo = 1",
                "debug = true",
                "forward_only, reverse_only",
                "1",
                "\"s\"",
                "a::b",
                "debug(x)",
            ])
            .to_string()
        })
    }

    /// `sig; sig; ..` for `zero_adjoint!`, with `=> chain` for `from_rrule!`.
    fn rule_sigs(&mut self, arrow: bool) -> String {
        let n = 1 + self.c.below(3);
        let mut out = String::new();
        for _ in 0..n {
            let vis = if self.c.maybe(20) { "pub " } else { "" };
            let path = self.pick(&[
                "f",
                "m::f",
                "crate::m::f",
                "<T as Tr>::f",
                "Self::f",
                "f::<T>",
                "r#fn",
                "f_frule",
            ]);
            let generics = self.generics();
            let in_impl = self.c.maybe(10);
            let args = self.list(3, ", ", |g| g.fn_arg(in_impl, 2));
            let ret = if self.c.maybe(75) { format!(" -> {}", self.ty(2)) } else { String::new() };
            let wh = self.where_clause();
            let body = if self.c.maybe(5) { " { 1.0 }" } else { "" };
            let tail = if arrow {
                self.pick(&[" => f_chainrule", " => m::g::<T>", "", " =>", " => |x| x", " => 1"])
                    .to_string()
            } else {
                String::new()
            };
            let sep = self.pick(&["; ", ";", " ", ", ", ";; "]);
            out.push_str(&format!("{vis}fn {path}{generics}({args}){ret}{wh}{body}{tail}{sep}"));
        }
        out
    }

    /// A call for the API macros, then tangents (`tail == 0`), nothing or a cache (1), or a
    /// cotangent (2).
    fn api_input(&mut self, tail: usize) -> String {
        let call = match self.c.below(6) {
            0..=2 => {
                let f = self.pick(&[
                    "f",
                    "m::f",
                    "Type::f",
                    "<T as Tr>::f",
                    "f::<3>",
                    "(f)",
                    "x.f",
                    "r#match",
                ]);
                let args = self.list(3, ", ", |g| g.arg_expr(1));
                format!("{f}({args})")
            }
            3 => format!("s.f({})", self.arg_expr(1)),
            4 => self.expr(2),
            _ => "{ f(x) }".to_string(),
        };
        let rest = match tail {
            0 => match self.c.below(5) {
                0 => format!(", ({})", self.list(3, ", ", |g| g.expr(1))),
                1 => format!(", ({},)", self.expr(1)),
                2 => format!(", {}", self.expr(1)),
                3 => String::new(),
                _ => format!(", ({}), extra", self.expr(1)),
            },
            1 => match self.c.below(5) {
                0 => String::new(),
                1 => ", cache = &mut cache".into(),
                2 => format!(", {} = {}", self.pick(&["cache", "cahce", "c"]), self.expr(1)),
                3 => ", cache =".into(),
                _ => format!(", {}", self.expr(1)),
            },
            _ => match self.c.below(3) {
                0 => format!(", {}", self.expr(1)),
                1 => String::new(),
                _ => format!(", {}, {}", self.expr(1), self.expr(1)),
            },
        };
        format!("{call}{rest}")
    }

    fn test_rule_input(&mut self) -> String {
        let mut out = self.api_input(3);
        let opts = self.list(3, "", |g| {
            let key = g.pick(&[
                "frule", "rrule", "mode", "rtol", "atol", "dot_tol", "seed", "fruel", "mode",
            ]);
            let value = match g.c.below(4) {
                0 => g.pick(&["forward", "reverse", "f_frule", "1e-6", "42", "both"]).to_string(),
                1 => g.expr(1),
                2 => String::new(),
                _ => "|x| x".into(),
            };
            format!(", {key} = {value}")
        });
        out.push_str(&opts);
        out
    }

    fn rule_attr(&mut self) -> String {
        match self.c.below(8) {
            0..=2 => {
                format!("for = {}", self.pick(&["f", "m::f", "Type::f", "f::<T>", "<T as Tr>::f"]))
            }
            3 => String::new(),
            4 => "for f".into(),
            5 => "for =".into(),
            6 => format!("for = f, {}", self.pick(&["debug", "for = g", "x"])),
            _ => self.pick(&["f", "= f", "for = 1", "for = |x| x"]).to_string(),
        }
    }

    /// A function shaped like a hand-written rule: `Dual` / `CoDual` arguments and result.
    fn rule_fn(&mut self, forward: bool) -> String {
        let wrap = if forward { "Dual" } else { "CoDual" };
        let args = self.list(3, ", ", |g| match g.c.below(6) {
            0..=2 => format!("{}: {wrap}<{}, {}>", g.ident(), g.ty(1), g.ty(1)),
            3 => format!("{}: {}", g.ident(), g.ty(2)),
            4 => "&self".into(),
            _ => format!("{}: {wrap}<{}>", g.ident(), g.ty(1)),
        });
        let ret = match self.c.below(5) {
            0 | 1 => format!(" -> {wrap}<{}, {}>", self.ty(1), self.ty(1)),
            2 => {
                format!(" -> ({wrap}<{}, {}>, impl FnOnce(f64) -> (f64,))", self.ty(1), self.ty(1))
            }
            3 => String::new(),
            _ => format!(" -> {}", self.ty(2)),
        };
        let generics = self.generics();
        format!("fn f_rule{generics}({args}){ret} {{ todo!() }}")
    }

    // Functions inside the subset (the differentiable Rust of the README's table), with now
    // and then a construct outside it: these reach the later stages (structuring, the forward
    // and reverse transforms) that refused inputs never get to. Names are drawn from those in
    // scope (`self.scope`), so that most functions are accepted.

    /// One of `candidates` whose root name (`p` of `p.w[0]`, `e` of `*e`) is in scope, or
    /// whose root is not a name (a literal).
    fn have(&mut self, candidates: &[&str]) -> Option<String> {
        let ok: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| {
                let root: String = c
                    .trim_start_matches(['*', '&', '('])
                    .chars()
                    .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                    .collect();
                root.is_empty()
                    || root.starts_with(|ch: char| ch.is_ascii_digit())
                    || self.scope.contains(&root)
            })
            .collect();
        if ok.is_empty() { None } else { Some(ok[self.c.below(ok.len())].to_string()) }
    }

    fn declare(&mut self, name: &str) {
        self.scope.push(name.to_string());
    }

    fn subset_fn(&mut self, in_impl: bool) -> String {
        self.scope.clear();
        let name = self.pick(&["f", "g", "loss", "step"]);
        let mut args: Vec<String> = Vec::new();
        if in_impl {
            args.push(self.pick(&["&self", "&mut self", "self"]).to_string());
            self.declare("self");
        }
        for _ in 0..1 + self.c.below(4) {
            let arg = self.pick(&[
                "x: f64",
                "n: usize",
                "v: &[f64]",
                "w: &mut [f64]",
                "u: Vec<f64>",
                "a: [f64; 3]",
                "b: bool",
                "p: &Params",
                "q: &mut Params",
                "t: (f64, f64)",
                "m: &mut f64",
                "k: i32",
                "r: &Vec<f64>",
                "o: &mut Vec<f64>",
                "y: f32",
                "pt: Point",
                "c: &[f64; 2]",
            ]);
            let arg_name = arg.split(':').next().unwrap_or_default().to_string();
            if !self.scope.contains(&arg_name) {
                self.declare(&arg_name);
                args.push(arg.to_string());
            }
        }
        let ret = self.pick(&[
            " -> f64",
            " -> f64",
            "",
            " -> Vec<f64>",
            " -> (f64, f64)",
            " -> usize",
            " -> [f64; 2]",
            " -> Point",
            " -> bool",
        ]);
        let generics = if self.c.maybe(10) { "<T: Float>" } else { "" };
        let mut body = String::new();
        if !self.c.maybe(20) {
            body.push_str("let mut s = 0.0; ");
            self.declare("s");
        }
        for _ in 0..self.c.below(6) {
            body.push_str(&self.sstmt(3));
            body.push(' ');
        }
        let tail = match ret {
            " -> f64" => self.fexpr(3),
            " -> Vec<f64>" => self
                .have(&["u", "vec![x; n]", "v.to_vec()", "acc", "s.clone()", "vec![1.0, 2.0]"])
                .unwrap_or_default(),
            " -> (f64, f64)" => format!("({}, {})", self.fexpr(2), self.fexpr(2)),
            " -> usize" => self.iexpr(2),
            " -> [f64; 2]" => format!("[{}, {}]", self.fexpr(2), self.fexpr(2)),
            " -> Point" => format!("Point {{ x: {}, y: {} }}", self.fexpr(2), self.fexpr(2)),
            " -> bool" => self.cond_s(2),
            _ => String::new(),
        };
        format!("fn {name}{generics}({}){ret} {{ {body}{tail} }}", args.join(", "))
    }

    fn subset_impl(&mut self) -> String {
        let ty = self.pick(&["Params", "Point", "Model"]);
        let methods = (0..1 + self.c.below(3)).map(|_| self.subset_fn(true)).collect::<Vec<_>>();
        format!("impl {ty} {{ {} }}", methods.join(" "))
    }

    fn literal(&mut self) -> String {
        self.pick(&["1.0", "0.5", "2.0", "-1.0", "0.0", "std::f64::consts::PI", "1e-3"]).to_string()
    }

    fn fvar(&mut self) -> String {
        match self.have(&[
            "x",
            "s",
            "z",
            "e",
            "acc_f",
            "t.0",
            "p.b",
            "q.b",
            "*m",
            "pt.x",
            "self.b",
            "a[0]",
            "y",
            "c[1]",
            "*e",
            "px",
            "popped.unwrap_or(0.0)",
        ]) {
            Some(v) => v,
            None => self.literal(),
        }
    }

    fn buffer(&mut self, writable: bool) -> Option<String> {
        if writable {
            self.have(&["w", "o", "q.w", "acc", "u", "self.w", "a"])
        } else {
            self.have(&["v", "w", "u", "r", "o", "a", "p.w", "q.w", "acc", "self.w", "c"])
        }
    }

    fn fexpr(&mut self, depth: usize) -> String {
        if !self.deeper(depth) {
            return if self.c.maybe(30) { self.literal() } else { self.fvar() };
        }
        let d = depth - 1;
        match self.c.below(26) {
            0 => self.fvar(),
            1 => {
                let op = self.pick(&["+", "-", "*", "/", "%"]);
                format!("{} {op} {}", self.fexpr(d), self.fexpr(d))
            }
            2 => format!("-{}", self.fexpr(d)),
            3 => match self.buffer(false) {
                Some(b) => format!("{b}[{}]", self.iexpr(d)),
                None => self.fvar(),
            },
            4 => format!(
                "({}).{}()",
                self.fexpr(d),
                self.pick(&["sin", "cos", "exp", "ln", "sqrt", "abs", "tanh", "floor", "recip"])
            ),
            5 => format!(
                "({}).{}({})",
                self.fexpr(d),
                self.pick(&["powf", "max", "min", "atan2", "hypot"]),
                self.fexpr(d)
            ),
            6 => format!(
                "({}).powi({})",
                self.fexpr(d),
                self.have(&["2", "3", "k"]).unwrap_or_default()
            ),
            7 => format!("({} as f64)", self.iexpr(d)),
            8 => format!(
                "if {} {{ {} }} else {{ {} }}",
                self.cond_s(d),
                self.fexpr(d),
                self.fexpr(d)
            ),
            9 => format!(
                "match {} {{ 0 => {}, 1..=3 => {}, _ => {} }}",
                self.iexpr(d),
                self.fexpr(d),
                self.fexpr(d),
                self.fexpr(d)
            ),
            10 => format!(
                "{}({})",
                self.pick(&["g", "h", "inner::cube", "Self::helper", "square"]),
                self.fexpr(d)
            ),
            11 => match self.have(&["v", "u", "w", "p", "acc", "q"]) {
                Some(b) => {
                    format!("{}(&{b}, {})", self.pick(&["dot", "sum_of", "m::norm"]), self.fexpr(d))
                }
                None => self.fvar(),
            },
            12 => match self.have(&["v", "u", "w", "r"]) {
                Some(b) => format!("{b}.iter().sum::<f64>()"),
                None => self.fvar(),
            },
            13 => format!("{{ let z = {}; z * {} }}", self.fexpr(d), self.fexpr(d)),
            14 => format!("loop {{ if {} {{ break {}; }} }}", self.cond_s(d), self.fexpr(d)),
            15 => format!("({}).mul_add({}, {})", self.fexpr(d), self.fexpr(d), self.fexpr(d)),
            16 => format!("f64::max({}, {})", self.fexpr(d), self.fexpr(d)),
            17 => match self.have(&["p", "q", "pt", "self"]) {
                Some(r) => format!(
                    "{r}.{}({})",
                    self.pick(&["predict", "norm", "dot", "scale"]),
                    self.fexpr(d)
                ),
                None => self.fvar(),
            },
            18 => format!("stop_gradient({})", self.fexpr(d)),
            19 => match self.have(&["y", "k", "n", "b"]) {
                Some(v) => format!("({v} as f64)"),
                None => self.fvar(),
            },
            20 => format!("({})", self.fexpr(d)),
            21 => match self.have(&["t"]) {
                Some(t) => format!("{t}.0 * {t}.1"),
                None => self.fvar(),
            },
            22 => match self.have(&["v", "u", "w"]) {
                Some(b) => format!("{b}.len() as f64"),
                None => self.fvar(),
            },
            23 => match self.have(&["v", "w"]) {
                Some(b) => format!("{b}[{} * 2 + {}]", self.iexpr(d), self.iexpr(d)),
                None => self.fvar(),
            },
            24 => match self.have(&["p"]) {
                Some(_) => format!("p.w[{}] * p.b", self.iexpr(d)),
                None => self.fvar(),
            },
            _ => {
                // Now and then, anything at all.
                if self.c.maybe(30) { self.expr(d) } else { self.fvar() }
            }
        }
    }

    fn iexpr(&mut self, depth: usize) -> String {
        if !self.deeper(depth) {
            return self
                .have(&["i", "j", "n", "0", "1", "2", "k as usize", "v.len()", "n - 1"])
                .unwrap_or_default();
        }
        let d = depth - 1;
        match self.c.below(6) {
            0 => format!("{} + 1", self.iexpr(d)),
            1 => format!(
                "{} % {}",
                self.iexpr(d),
                self.have(&["3", "n", "v.len()"]).unwrap_or_default()
            ),
            2 => format!("{} * {}", self.iexpr(d), self.iexpr(d)),
            3 => format!("({}).min({})", self.iexpr(d), self.iexpr(d)),
            4 => match self.have(&["v", "u", "w", "p.w", "acc"]) {
                Some(b) => format!("{b}.len()"),
                None => "1".into(),
            },
            _ => format!("({} as usize)", self.fexpr(d)),
        }
    }

    fn cond_s(&mut self, depth: usize) -> String {
        let d = depth.saturating_sub(1);
        match self.c.below(7) {
            0 => format!("{} > {}", self.fexpr(d), self.fexpr(d)),
            1 => format!("{} < {}", self.iexpr(d), self.iexpr(d)),
            2 => self.have(&["b"]).unwrap_or_else(|| "true".into()),
            3 => format!("!({})", self.cond_s(d)),
            4 => format!("{} && {}", self.cond_s(d), self.cond_s(d)),
            5 => format!("{} || {} == {}", self.cond_s(d), self.iexpr(d), self.iexpr(d)),
            _ => format!("{} != 0.0", self.fexpr(d)),
        }
    }

    /// A block; the names it declares go out of scope after it.
    fn sblock(&mut self, depth: usize, declares: &[&str]) -> String {
        let outer = self.scope.len();
        for d in declares {
            self.declare(d);
        }
        let n = self.c.below(4);
        let body = (0..n).map(|_| self.sstmt(depth)).collect::<Vec<_>>().join(" ");
        self.scope.truncate(outer);
        format!("{{ {body} }}")
    }

    fn sstmt(&mut self, depth: usize) -> String {
        let d = depth.saturating_sub(1);
        if !self.deeper(depth) {
            return match self.have(&["s"]) {
                Some(_) => format!("s += {};", self.fvar()),
                None => format!("let _ = {};", self.fvar()),
            };
        }
        match self.c.below(30) {
            0 | 1 => {
                let name = self.pick(&["s", "z", "acc_f"]);
                let e = self.fexpr(d);
                self.declare(name);
                format!("let mut {name} = {e};")
            }
            2 => {
                let name = self.pick(&["s", "z"]);
                let e = self.fexpr(d);
                self.declare(name);
                format!("let {name}: f64 = {e};")
            }
            3 => match self.have(&["s", "z", "x", "*m", "q.b", "acc_f"]) {
                Some(place) => format!(
                    "{place} {} {};",
                    self.pick(&["+=", "-=", "*=", "/=", "="]),
                    self.fexpr(d)
                ),
                None => format!("let _ = {};", self.fexpr(d)),
            },
            4 => match self.buffer(true) {
                Some(b) => format!(
                    "{b}[{}] {} {};",
                    self.iexpr(d),
                    self.pick(&["=", "+=", "*=", "-="]),
                    self.fexpr(d)
                ),
                None => format!("let _ = {};", self.fexpr(d)),
            },
            5 => format!("for i in 0..{} {}", self.iexpr(d), self.sblock(d, &["i"])),
            6 => match self.have(&["v", "u", "w"]) {
                Some(b) => {
                    format!("for (i, e) in {b}.iter().enumerate() {}", self.sblock(d, &["i", "e"]))
                }
                None => String::new(),
            },
            7 => match self.have(&["v.iter()", "&u", "u.iter()", "r.iter()", "&a", "&v"]) {
                Some(it) => format!("for e in {it} {}", self.sblock(d, &["e"])),
                None => String::new(),
            },
            8 => match (self.have(&["v"]), self.have(&["u", "w", "r"])) {
                (Some(a), Some(b)) => format!(
                    "for (e, f) in {a}.iter().zip({b}.iter()) {}",
                    self.sblock(d, &["e", "f"])
                ),
                _ => String::new(),
            },
            9 => format!("for j in (0..{}).rev() {}", self.iexpr(d), self.sblock(d, &["j"])),
            10 => format!("for j in (0..{}).step_by(2) {}", self.iexpr(d), self.sblock(d, &["j"])),
            11 => format!("while {} {}", self.cond_s(d), self.sblock(d, &[])),
            12 => format!(
                "if {} {} else {}",
                self.cond_s(d),
                self.sblock(d, &[]),
                self.sblock(d, &[])
            ),
            13 => {
                format!("for i in 0..{} {{ if {} {{ continue; }} }}", self.iexpr(d), self.cond_s(d))
            }
            14 => format!("loop {{ if {} {{ break; }} }}", self.cond_s(d)),
            15 => format!("if {} {{ return {}; }}", self.cond_s(d), self.fexpr(d)),
            16 => {
                let s = format!(
                    "let mut acc = Vec::with_capacity({}); acc.push({});",
                    self.iexpr(d),
                    self.fexpr(d)
                );
                self.declare("acc");
                s
            }
            17 => match self.have(&["acc", "o", "u"]) {
                Some(b) => format!("{b}.push({});", self.fexpr(d)),
                None => String::new(),
            },
            18 => match self.have(&["o", "acc", "u"]) {
                Some(b) => {
                    self.declare("popped");
                    format!("let popped = {b}.pop();")
                }
                None => String::new(),
            },
            19 => {
                let s = format!("let (z, e) = ({}, {});", self.fexpr(d), self.fexpr(d));
                self.declare("z");
                self.declare("e");
                s
            }
            20 => format!(
                "'outer: for i in 0..3 {{ for j in 0..i {{ if {} {{ continue 'outer; }} }} }}",
                self.cond_s(d)
            ),
            21 => format!("assert!({});", self.cond_s(d)),
            22 => match self.have(&["v", "w", "u"]) {
                Some(b) => {
                    self.declare("acc");
                    format!("let mut acc = {b}.to_vec();")
                }
                None => String::new(),
            },
            23 => match self.have(&["m", "w", "o", "q"]) {
                Some(r) => format!(
                    "*{r} = {};",
                    self.have(&["s", "t", "u.clone()", "x", "acc.clone()"])
                        .unwrap_or_else(|| "vec![0.0; 3]".into())
                ),
                None => String::new(),
            },
            24 => match self.have(&["q", "w", "o", "self"]) {
                Some(r) => format!(
                    "{r}.{}({});",
                    self.pick(&["update", "swap", "fill", "scale"]),
                    self.fexpr(d)
                ),
                None => String::new(),
            },
            25 => match self.have(&["v", "u", "p"]) {
                Some(r) => {
                    self.declare("rv");
                    format!("let rv = &{r};")
                }
                None => String::new(),
            },
            26 => match self.have(&["pt"]) {
                Some(pt) => {
                    self.declare("px");
                    format!("let Point {{ x: px, y: _ }} = {pt};")
                }
                None => String::new(),
            },
            27 => format!(
                "match {} {{ 0 => {{}} 1 | 2 => return {}, _ => {{}} }}",
                self.iexpr(d),
                self.fexpr(d)
            ),
            28 => {
                self.declare("i");
                "let mut i = 0; while i < 3 { i += 1; }".to_string()
            }
            _ => {
                if self.c.maybe(30) {
                    self.stmt(d)
                } else {
                    String::new()
                }
            }
        }
    }
}
