//! Lowering: a syn function body to the IR of [`super::ir`].
//!
//! Expressions become flat statements over fresh temporaries; `if`, `match`, loops, `break`,
//! `continue`, `return`, `&&` and `||` become blocks and terminators; the `for` loops of the
//! supported subset are desugared to index loops. Anything outside the subset is reported to
//! the error context with the narrowest span and a sentence saying what to do instead, and
//! lowering goes on so that every error is reported at once.

use super::errors::Errors;
use super::ir::*;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};

/// The function signature, as lowering needs it.
pub(crate) struct Signature<'a> {
    pub(crate) name: &'a syn::Ident,
    /// One entry per argument: its name (`self` for a receiver) and declared type.
    pub(crate) args: Vec<(syn::Ident, syn::Type, bool)>,
    pub(crate) ret_ty: syn::Type,
    /// The function's type parameters, whose names are not types of user values.
    pub(crate) type_params: Vec<String>,
}

impl<'a> Signature<'a> {
    /// The signature with the type parameters of `generics` recorded, and those of the `impl`
    /// block around the function (`impl_params`).
    pub(crate) fn with_generics(
        mut self,
        generics: &syn::Generics,
        impl_params: &[syn::Ident],
    ) -> Self {
        self.type_params = generics
            .type_params()
            .map(|p| p.ident.to_string())
            .chain(impl_params.iter().map(ToString::to_string))
            .collect();
        self
    }

    /// The signature of a function named `name`, from its parsed signature.
    pub(crate) fn of(name: &'a syn::Ident, sig: &super::parse::Sig) -> Self {
        Signature {
            name,
            args: sig
                .args
                .iter()
                .map(|a| (a.name.clone(), a.ty.clone(), a.receiver.is_some()))
                .collect(),
            ret_ty: sig.ret.clone(),
            type_params: Vec::new(),
        }
    }
}

/// Lowers `body` (the function's block) with the argument names of `sig` in scope.
pub(crate) fn lower(sig: &Signature<'_>, body: &syn::Block, errors: &mut Errors) -> Body {
    let mut cx = Lower {
        errors,
        locals: Vec::new(),
        blocks: Vec::new(),
        current: BlockId::ENTRY,
        scopes: vec![Vec::new()],
        closures: vec![Vec::new()],
        top: true,
        write_backs: Vec::new(),
        lend_mut: false,
        slice_copies: Default::default(),
        aliases: Default::default(),
        loops: Vec::new(),
        references: std::collections::HashMap::new(),
        unboxed: Default::default(),
        array_lens: Default::default(),
        matrices: Default::default(),
        typed_matrix: false,
        user_values: Default::default(),
        type_params: sig.type_params.clone(),
        expect_user_value: false,
        f32_locals: Default::default(),
        sum_into_matrix: false,
        number_refs: Default::default(),
        unroll_factor: 1,
    };
    cx.locals.push(LocalDecl { name: None, ty: Some(sig.ret_ty.clone()), span: sig.ret_ty.span() });
    for (name, ty, _) in &sig.args {
        let l = cx.new_local(Some(name.clone()), Some(ty.clone()), name.span());
        cx.bind(name.clone(), l);
    }
    cx.new_block();
    // A `Box<T>` argument is opened at entry: its name is the value inside (see `unboxed`).
    for (k, (name, ty, _)) in sig.args.iter().enumerate() {
        if is_box(ty) {
            let span = name.span();
            let l = cx.new_local(Some(name.clone()), None, span);
            let func = syn::parse_quote_spanned!(span=>
                ::mooncake_runtime::__private::rules::boxes::unbox);
            let arg = Operand::Use(Place::local(Local(k as u32 + 1)));
            cx.assign(Place::local(l), Rvalue::Call { func, args: vec![arg] }, span);
            cx.bind(name.clone(), l);
            cx.unboxed.insert(l);
        }
    }
    let body = &super::chains::free_zips(body);
    let value = cx.lower_block(body);
    if cx.reachable() {
        let span = body.brace_token.span.close();
        cx.assign(Place::local(Local::RETURN), Rvalue::Use(value), span);
        cx.terminate(TerminatorKind::Return, span);
    }
    let mut matrices: Vec<bool> = cx
        .locals
        .iter()
        .map(|d| {
            d.ty.as_ref().is_some_and(|t| matrix_type(t) && !matches!(t, syn::Type::Reference(_)))
        })
        .collect();
    for l in &cx.matrices {
        matrices[l.index()] = true;
    }
    let mut out = Body {
        matrices,
        name: sig.name.clone(),
        locals: cx.locals,
        n_args: sig.args.len(),
        ret_ty: sig.ret_ty.clone(),
        type_params: cx.type_params.clone(),
        blocks: cx
            .blocks
            .into_iter()
            .map(|b| Block {
                statements: b.statements,
                terminator: b.terminator.unwrap_or(Terminator {
                    kind: TerminatorKind::Panic(quote!(::core::unreachable!())),
                    span: Span::call_site(),
                }),
            })
            .collect(),
    };
    remove_unreachable_blocks(&mut out);
    out
}

struct BlockBuilder {
    statements: Vec<Statement>,
    terminator: Option<Terminator>,
}

struct LoopCtx {
    label: Option<String>,
    break_to: BlockId,
    continue_to: BlockId,
    /// Where `break value` puts its value (`loop` only).
    result: Option<Local>,
}

pub(super) struct Lower<'e> {
    errors: &'e mut Errors,
    locals: Vec<LocalDecl>,
    blocks: Vec<BlockBuilder>,
    current: BlockId,
    scopes: Vec<Vec<(syn::Ident, Local)>>,
    loops: Vec<LoopCtx>,
    /// Locals bound without a declared type to a reference (`let y = &v;`, `let y = x;` of a
    /// reference argument), and whether it is `&mut`: a local has one type, so they hold a
    /// reference of that kind wherever they are used.
    references: std::collections::HashMap<Local, bool>,
    /// Closures bound by `let` (`let sq = |v: f64| v * v;`), per scope as `scopes`: a call
    /// inlines the body (see `chains`). `None` marks a name rebound to a value since.
    pub(super) closures: Vec<Vec<(syn::Ident, Option<std::rc::Rc<super::chains::ClosureDef>>)>>,
    /// Whether the block being lowered is the function's body (whose `fn`, `const` and `use`
    /// items the rules repeat: see `body_items`).
    top: bool,
    /// Sub-slices lent mutably (`&mut x[a..b]`) as copies, to be written back (see `slices`).
    pub(super) write_backs: Vec<super::slices::WriteBack>,
    /// Whether a sub-slice lowered now is lent mutably (`&mut x[a..b]`, the receiver of a
    /// method that writes, a `for` over `iter_mut`).
    pub(super) lend_mut: bool,
    /// The copies sub-slices are read into (see `slices`): a name bound to `&x[a..b]` names
    /// the copy, and is lent (`&copy`) where it is passed on.
    pub(super) slice_copies: std::collections::HashSet<Local>,
    /// Names bound to a borrow of a whole place (`let w = &net.w;`, `let r = &v;`, `let c = &mut
    /// s.count;`): the place and whether the borrow is `&mut`. A use of the name is the place
    /// itself (`w[i]` is `net.w[i]`, `*c` is `s.count`), and the name passed on bare is the
    /// borrow (`f(w)` is `f(&net.w)`): the borrowed place cannot change otherwise while the
    /// borrow lives. The local itself is assigned the borrow too, for what reads it by name (an
    /// assertion's text); reverse mode drops that assignment when nothing does.
    pub(super) aliases: std::collections::HashMap<Local, (Place, bool)>,
    /// The values of `Box<T>` arguments, opened at entry: `*b` is `b` itself.
    unboxed: std::collections::HashSet<Local>,
    /// Locals bound without a type to an array whose length the syntax gives (`let y =
    /// x.map(f);` of `x: [f64; 3]`): see `literal_array_len`.
    array_lens: std::collections::HashMap<Local, usize>,
    /// Locals bound to a matrix or array of nalgebra or ndarray, as far as the syntax tells
    /// (see `matrix_like`): their `map(f)` is the element-wise map, not an `Option`'s.
    /// (A `Vec`: few locals are matrices, and a std `HashSet` would draw another `RandomState`,
    /// which moves the expansion's instruction counts: see BENCHMARKS.md.)
    matrices: Vec<Local>,
    /// Locals of `matrices` bound to matrices of `f32` (see `f32_matrix`).
    f32_locals: Vec<Local>,
    /// Set while lowering the value of a `let` declared with a matrix type: the partial sums of
    /// its top-level `+` / `-` chain are matrices (taken by `lower_binary`).
    sum_into_matrix: bool,
    /// Loop variables bound to an element of a matrix (`for v in m.iter()`): the primal's `v` is
    /// a reference, the IR's the number, so `*v` reads `v`.
    pub(super) number_refs: Vec<Local>,
    /// Whether a local was declared with a matrix type (`matrix_type`): with `matrices`, whether
    /// the function may hold matrices at all, before which no temporary is tested for one.
    typed_matrix: bool,
    /// Variables bound to values of user types (see [`Lower::user_value_like`]): arithmetic on
    /// them is their operator traits' methods.
    user_values: Vec<Local>,
    /// The function's type parameters (see [`Signature::type_params`]).
    type_params: Vec<String>,
    /// Set while the right operand of `+` or `-` of a user value is lowered: that operand is a
    /// user value too (`Add<V3> for V3`), so a product in it (`pos + self.vel * dt`) has one on
    /// its left. Taken by the first binary operation lowered.
    expect_user_value: bool,
    /// How many copies of the innermost body being lowered the loops around it make by being
    /// unrolled (see `unroll`).
    pub(super) unroll_factor: usize,
}

impl Lower<'_> {
    /// Whether an error was reported so far.
    pub(super) fn has_errors(&self) -> bool {
        self.errors.has_errors()
    }

    /// The length of `e` if it is an array whose length the syntax gives: a literal (`[a, b]`,
    /// `[v; 3]`) or a variable declared with an array type of literal length (`x: [f64; 3]`,
    /// also behind `&`).
    pub(super) fn literal_array_len(&self, e: &Expr) -> Option<usize> {
        fn of_type(ty: &syn::Type) -> Option<usize> {
            match ty {
                syn::Type::Array(a) => match &a.len {
                    Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse().ok(),
                    _ => None,
                },
                syn::Type::Reference(r) => of_type(&r.elem),
                syn::Type::Paren(p) => of_type(&p.elem),
                _ => None,
            }
        }
        match e {
            Expr::Array(a) => Some(a.elems.len()),
            Expr::Repeat(r) => match &*r.len {
                Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse().ok(),
                _ => None,
            },
            Expr::Paren(p) => self.literal_array_len(&p.expr),
            Expr::Path(p) => {
                let l = self.lookup(p.path.get_ident()?)?;
                if let Some(n) = self.array_lens.get(&l) {
                    return Some(*n);
                }
                of_type(self.locals[l.index()].ty.as_ref()?)
            }
            Expr::MethodCall(m) if m.method == "map" && m.args.len() == 1 => {
                self.literal_array_len(&m.receiver)
            }
            _ => None,
        }
    }
}

impl Lower<'_> {
    /// `*r` if `e` is a variable declared `&T` or `&mut T` (not a slice nor `str`): the value a
    /// method of `Option` / `Result` takes apart.
    pub(super) fn ref_place(&mut self, e: &Expr) -> Option<Place> {
        let Expr::Path(p) = e else { return None };
        let l = self.lookup(p.path.get_ident()?)?;
        let Some(syn::Type::Reference(r)) = &self.locals[l.index()].ty else { return None };
        if matches!(&*r.elem, syn::Type::Slice(_))
            || matches!(&*r.elem, syn::Type::Path(tp) if tp.path.is_ident("str"))
        {
            return None;
        }
        Some(Place { local: l, projections: vec![Projection::Deref] })
    }

    /// `*k` if `e` is a variable declared `&T` (not `&mut`, nor a slice or `str`) or `&place`:
    /// the place a `match` on a reference takes apart.
    fn shared_ref_place(&mut self, e: &Expr) -> Option<Place> {
        match e {
            Expr::Reference(r) if r.mutability.is_none() => self.lower_place(&r.expr),
            Expr::Path(p) if p.qself.is_none() => {
                let l = self.lookup(p.path.get_ident()?)?;
                let Some(syn::Type::Reference(r)) = &self.locals[l.index()].ty else { return None };
                if r.mutability.is_some() || matches!(&*r.elem, syn::Type::Slice(_)) {
                    return None;
                }
                if matches!(&*r.elem, syn::Type::Path(tp) if tp.path.is_ident("str")) {
                    return None;
                }
                Some(Place { local: l, projections: vec![Projection::Deref] })
            }
            _ => None,
        }
    }
}

/// Whether `ty` is `Box<T>` (by its last path segment).
fn is_box(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Box"
            && matches!(s.arguments, syn::PathArguments::AngleBracketed(_))))
}

/// `place.f`: a field of the place. A field of a dereference (`(*r).f`, `let S { f, .. } =
/// *r;`) is the field itself, as Rust's field access reads through references: the IR's field
/// of a reference is the field of its referent.
fn push_field(place: &mut Place, member: syn::Member) {
    if matches!(place.projections.last(), Some(Projection::Deref)) {
        place.projections.pop();
    }
    place.projections.push(Projection::Field(member));
}

/// `place[i]`, written as indexing reads it: through any reference, so `(*r)[i]` is `r[i]`.
fn push_index(place: &mut Place, i: Local) {
    if matches!(place.projections.last(), Some(Projection::Deref)) {
        place.projections.pop();
    }
    place.projections.push(Projection::Index(i));
}

pub(super) fn unit() -> Operand {
    Operand::Const(quote!(()))
}

impl Lower<'_> {
    // ---- building blocks ------------------------------------------------------------------

    pub(super) fn new_local(
        &mut self,
        name: Option<syn::Ident>,
        ty: Option<syn::Type>,
        span: Span,
    ) -> Local {
        if !self.typed_matrix && ty.as_ref().is_some_and(matrix_type) {
            self.typed_matrix = true;
        }
        self.locals.push(LocalDecl { name, ty, span });
        Local((self.locals.len() - 1) as u32)
    }

    pub(super) fn temp(&mut self, span: Span) -> Local {
        self.new_local(None, None, span)
    }

    pub(super) fn new_block(&mut self) -> BlockId {
        self.blocks.push(BlockBuilder { statements: Vec::new(), terminator: None });
        BlockId((self.blocks.len() - 1) as u32)
    }

    pub(super) fn switch_to(&mut self, b: BlockId) {
        self.current = b;
    }

    fn reachable(&self) -> bool {
        self.blocks[self.current.index()].terminator.is_none()
    }

    fn push(&mut self, kind: StatementKind, span: Span) {
        if !self.reachable() {
            // Code after `return` / `break`: lowered into a fresh block that the clean-up pass
            // removes, so that its errors are still reported.
            let b = self.new_block();
            self.switch_to(b);
        }
        self.blocks[self.current.index()].statements.push(Statement { kind, span });
    }

    pub(super) fn assign(&mut self, place: Place, rvalue: Rvalue, span: Span) {
        self.push(StatementKind::Assign(place, rvalue), span);
    }

    /// Puts `rvalue` in a fresh temporary and returns it as an operand.
    pub(super) fn emit(&mut self, rvalue: Rvalue, span: Span) -> Operand {
        let t = self.temp(span);
        self.assign(Place::local(t), rvalue, span);
        Operand::Use(Place::local(t))
    }

    pub(super) fn terminate(&mut self, kind: TerminatorKind, span: Span) {
        if !self.reachable() {
            let b = self.new_block();
            self.switch_to(b);
        }
        self.blocks[self.current.index()].terminator = Some(Terminator { kind, span });
    }

    pub(super) fn goto(&mut self, target: BlockId, span: Span) {
        self.terminate(TerminatorKind::Goto(target), span);
    }

    // ---- scopes ----------------------------------------------------------------------------

    pub(super) fn bind(&mut self, name: syn::Ident, local: Local) {
        if self.closures.iter().flatten().any(|(n, _)| *n == name)
            && let Some(scope) = self.closures.last_mut()
        {
            // The name no longer calls the closure.
            scope.push((name.clone(), None));
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, local));
        }
    }

    pub(super) fn lookup(&self, name: &syn::Ident) -> Option<Local> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
    }

    /// The place and kind of the borrow `e` names, if it is a name bound to one (see
    /// `aliases`).
    pub(super) fn alias_of(&self, e: &Expr) -> Option<(Place, bool)> {
        match e {
            Expr::Paren(p) => self.alias_of(&p.expr),
            Expr::Group(g) => self.alias_of(&g.expr),
            Expr::Path(p) if p.qself.is_none() => {
                let l = self.lookup(p.path.get_ident()?)?;
                self.aliases.get(&l).cloned()
            }
            _ => None,
        }
    }

    pub(super) fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(Vec::new());
        self.closures.push(Vec::new());
        let out = f(self);
        self.scopes.pop();
        self.closures.pop();
        out
    }

    // ---- blocks and statements -------------------------------------------------------------

    fn lower_block(&mut self, block: &syn::Block) -> Operand {
        let top = std::mem::replace(&mut self.top, false);
        self.scoped(|cx| cx.lower_stmts(&block.stmts, top))
    }

    /// The statements of a block, in its scope; the value of the last if it has no `;`.
    fn lower_stmts(&mut self, stmts: &[Stmt], top: bool) -> Operand {
        let cx = self;
        {
            let mut value = unit();
            let n = stmts.len();
            for (i, stmt) in stmts.iter().enumerate() {
                let last = i + 1 == n;
                // `let (a, b) = x.split_at_mut(k);`, `let r = &mut x[lo..hi];`: the rest of the
                // block sees the parts through `x` (see `slices::PartView`).
                if let Stmt::Local(local) = stmt
                    && let Some((lets, views)) = cx.part_views(local, cx.locals.len())
                {
                    match super::slices::rewrite_part_uses(&stmts[i + 1..], &views) {
                        Ok(rest) => {
                            for s in &lets {
                                if let Stmt::Local(l) = s {
                                    cx.lower_let(l);
                                } else if let Stmt::Macro(m) = s {
                                    cx.lower_expr(&Expr::Macro(syn::ExprMacro {
                                        attrs: Vec::new(),
                                        mac: m.mac.clone(),
                                    }));
                                }
                            }
                            return cx.lower_stmts(&rest, top);
                        }
                        Err(bad) => {
                            cx.errors.error_spanned(
                                bad,
                                "a part of a buffer kept in a local (`split_at_mut`, `&mut x[a..b]`) \
                                 is supported indexed, measured, passed on and iterated; not \
                                 rebound or named in a macro: write `x[k + j]` instead",
                            );
                            return unit();
                        }
                    }
                }
                // `let (i, m) = x.iter().enumerate().max_by(..).unwrap();`: the tuple is kept as
                // values, so `&m` binds `m` and the rest of the block reads `*m` as `m`.
                if let Stmt::Local(local) = stmt
                    && let Some(init) = &local.init
                    && let Expr::MethodCall(t) = &*init.expr
                    && match &init.diverge {
                        // `let (i, m) = x.iter().enumerate().max_by(..).unwrap();`
                        None => {
                            super::options::is_terminal(t)
                                && matches!(&*t.receiver, Expr::MethodCall(chain)
                                    if super::chains::keeps_tuple_of_refs(chain))
                        }
                        // `let Some((i, m)) = x.iter().enumerate().max_by(..) else { .. };`
                        Some(_) => super::chains::keeps_tuple_of_refs(t),
                    }
                {
                    let (pat, names) = super::chains::values_pattern(&local.pat);
                    let mut local = local.clone();
                    local.pat = pat;
                    cx.lower_let(&local);
                    let mut rest = stmts[i + 1..].to_vec();
                    for s in &mut rest {
                        syn::visit_mut::VisitMut::visit_stmt_mut(
                            &mut super::chains::StripDerefs(&names),
                            s,
                        );
                    }
                    return cx.lower_stmts(&rest, top);
                }
                // `let squares = x.iter().map(..);`, consumed later: the chain written where the
                // name is used (see `lazy`).
                if let Stmt::Local(local) = stmt
                    && let Some(init) = &local.init
                    && init.diverge.is_none()
                    && super::lazy::is_lazy_chain(&init.expr)
                    && !cx.is_element_map(&init.expr)
                    && let Some(name) = super::lazy::simple_name(&local.pat)
                    && stmts[i + 1..].iter().any(|s| super::lazy::mentions(s, name))
                {
                    let mut free = Vec::new();
                    super::chains::free_names(&init.expr, &mut free);
                    match super::lazy::substitute(&stmts[i + 1..], name, &init.expr, &free) {
                        Ok(rest) => return cx.lower_stmts(&rest, top),
                        Err(at) => {
                            cx.errors.error_spanned(
                                at,
                                "this rebinds a name that an iterator kept in a variable reads, \
                                 before the iterator is used; use the iterator first, or give \
                                 this binding another name",
                            );
                            return unit();
                        }
                    }
                }
                match stmt {
                    Stmt::Local(local) => cx.lower_let(local),
                    // An empty statement (`x;;`): syn gives it as an empty verbatim expression,
                    // which was refused with no span (found by the fuzz test).
                    Stmt::Expr(Expr::Verbatim(tokens), Some(_)) if tokens.is_empty() => {}
                    Stmt::Expr(e, None) if last => value = cx.lower_expr(e),
                    Stmt::Expr(e, _) => {
                        cx.lower_expr(e);
                    }
                    // Repeated in the rules (see `body_items`).
                    Stmt::Item(item) if top && body_item(item) => {}
                    Stmt::Item(item) => cx.errors.error_spanned(
                        item,
                        "only `fn`, `const` and `use` items at the top level of a \
                         #[differentiable] body are supported; move this item out of the \
                         function (or, if it is one of those, to the top level of the body)",
                    ),
                    Stmt::Macro(m) => {
                        let e = Expr::Macro(syn::ExprMacro {
                            attrs: m.attrs.clone(),
                            mac: m.mac.clone(),
                        });
                        let v = cx.lower_expr(&e);
                        if last && m.semi_token.is_none() {
                            value = v;
                        }
                    }
                }
            }
            value
        }
    }

    pub(super) fn lower_let_stmt(&mut self, local: &syn::Local) {
        self.lower_let(local);
    }

    fn lower_let(&mut self, local: &syn::Local) {
        if self.lower_split_at(local).is_some() {
            return;
        }
        // `let p: [f64; 3] = c.try_into().unwrap();` of a slice: the array of its elements,
        // after the length check the conversion makes.
        if let Some(local) = slice_to_array(local) {
            return self.lower_let(&local);
        }
        // `let r = &mut x[a..b];`: the copy's write-back would have no place.
        if let Some(init) = &local.init
            && let Expr::Reference(r) = &*init.expr
            && r.mutability.is_some()
            && super::slices::is_sub_slice(&r.expr)
        {
            self.errors.error_spanned(
                r,
                "a `&mut` sub-slice kept in a local is supported of a buffer named by a variable or \
                 a field (`let w = &mut x[a..b];`); otherwise pass `&mut x[a..b]` to the \
                 call that writes it, or write through `x` with indices (`x[a + j] = ..`)",
            );
        }
        if let Some((pat, value)) = self.lower_let_else(local) {
            self.bind_pattern(&pat, None, value, local.span());
            return;
        }
        if self.lower_let_else_value(local) {
            return;
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some((*pt.ty).clone())),
            p => (p, None),
        };
        match &local.init {
            Some(init)
                if ty.is_none()
                    && let (Pat::Ident(pi), Expr::Closure(c)) = (pat, &*init.expr)
                    && pi.subpat.is_none()
                    && pi.by_ref.is_none() =>
            {
                // `let f = |..| ..;`: kept, and inlined where it is called.
                self.define_closure(&pi.ident, c);
            }
            Some(init) => {
                let len = if ty.is_none() { self.literal_array_len(&init.expr) } else { None };
                let matrix = self.matrix_like(&init.expr);
                // A user value, or a clone of one behind a reference (`let g = h.clone();` of
                // `h: &Hist`), which is a value.
                let cloned = matches!(strip_parens(&init.expr), Expr::MethodCall(m)
                    if m.method == "clone" && m.args.is_empty() && self.user_receiver_like(&m.receiver));
                let user_value =
                    ty.is_none() && !matrix && (self.user_value_like(&init.expr) || cloned);
                let f32_init = matrix && self.f32_matrix(&init.expr);
                // `let z: Array1<f64> = a + b + c;`: every partial sum is a matrix.
                self.sum_into_matrix = ty.as_ref().is_some_and(matrix_type)
                    && matches!(strip_parens(&init.expr), Expr::Binary(_));
                let value = self.lower_expr(&init.expr);
                self.sum_into_matrix = false;
                // `let z: Array1<f64> = a + b;`: the value is a matrix, whatever its operands
                // look like (see `Body::matrices`).
                if ty.as_ref().is_some_and(matrix_type) {
                    self.mark_local(&value);
                }
                self.bind_pattern(pat, ty, value, local.span());
                if let (Some(n), Pat::Ident(pi)) = (len, pat)
                    && let Some(l) = self.lookup(&pi.ident)
                {
                    self.array_lens.insert(l, n);
                }
                if let (true, Pat::Ident(pi)) = (user_value, pat)
                    && let Some(l) = self.lookup(&pi.ident)
                {
                    self.user_values.push(l);
                }
                if let (true, Pat::Ident(pi)) = (matrix, pat)
                    && let Some(l) = self.lookup(&pi.ident)
                {
                    self.matrices.push(l);
                    if f32_init {
                        self.f32_locals.push(l);
                    }
                }
            }
            None => {
                // `let x;` (assigned later) or `let x: T;`.
                match pat {
                    Pat::Ident(pi) if pi.subpat.is_none() => {
                        let l = self.new_local(Some(pi.ident.clone()), ty, pi.ident.span());
                        self.bind(pi.ident.clone(), l);
                    }
                    other => self.errors.error_spanned(
                        other,
                        "a `let` without an initial value must bind a single name",
                    ),
                }
            }
        }
    }

    /// Binds an irrefutable pattern to `value`: a name, `_`, a tuple, a struct or a tuple
    /// struct of such patterns, as `let` and `for` allow.
    pub(super) fn bind_pattern(
        &mut self,
        pat: &Pat,
        ty: Option<syn::Type>,
        value: Operand,
        span: Span,
    ) {
        match pat {
            Pat::Ident(pi) => {
                if pi.by_ref.is_some() {
                    self.errors.error_spanned(
                        pi.by_ref,
                        "`ref` bindings are not supported; bind by value and borrow with `&`",
                    );
                }
                if let Some((at, _)) = &pi.subpat {
                    self.errors
                        .error_spanned(at, "`@` patterns are only supported in `match` arms");
                }
                // `let w = &net.w;`: `w` names the place (see `aliases`).
                if let Operand::Ref(q, mutable) = &value
                    && pi.mutability.is_none()
                    && !matches!(q.projections.last(), Some(Projection::Index(_)))
                    && !q.projections.iter().any(|p| matches!(p, Projection::Deref))
                    && !self.slice_copies.contains(&q.local)
                {
                    let (q, mutable) = (q.clone(), *mutable);
                    let l = self.new_local(Some(pi.ident.clone()), ty, pi.ident.span());
                    self.references.insert(l, mutable);
                    self.assign(Place::local(l), Rvalue::Use(value), span);
                    self.aliases.insert(l, (q, mutable));
                    self.bind(pi.ident.clone(), l);
                    return;
                }
                // `let s = &x[a..b];`: `s` names the copy (see `slices`).
                if let Operand::Ref(q, false) = &value
                    && q.projections.is_empty()
                    && self.slice_copies.contains(&q.local)
                    && pi.mutability.is_none()
                    && ty.is_none()
                {
                    self.references.insert(q.local, false);
                    self.bind(pi.ident.clone(), q.local);
                    return;
                }
                let l = self.new_local(Some(pi.ident.clone()), ty, pi.ident.span());
                let reference = match &value {
                    Operand::Ref(_, mutable) => Some(*mutable),
                    Operand::Use(q) => self.reference_kind(q),
                    Operand::Const(_) => None,
                };
                if let Some(mutable) = reference {
                    self.references.insert(l, mutable);
                }
                self.assign(Place::local(l), Rvalue::Use(value), span);
                self.bind(pi.ident.clone(), l);
            }
            Pat::Wild(_) => {
                // Evaluate for side effects only (already done).
            }
            Pat::Paren(p) => self.bind_pattern(&p.pat, ty, value, span),
            // `for &v in x`, `let &v = r;`: the referent, by value.
            Pat::Reference(r) if r.mutability.is_none() => {
                let value = match value {
                    Operand::Ref(q, _) => Operand::Use(q),
                    Operand::Use(mut q) => {
                        q.projections.push(Projection::Deref);
                        Operand::Use(q)
                    }
                    other => other,
                };
                self.bind_pattern(&r.pat, ty, value, span)
            }
            Pat::Type(pt) => self.bind_pattern(&pt.pat, Some((*pt.ty).clone()), value, span),
            Pat::Tuple(pt) => {
                // A tuple behind a shared reference whose type the declarations give (`for (x,
                // y) in data.iter()` of `data: &[(Vec<f64>, f64)]`): a buffer in it is bound by
                // reference, as Rust's default binding mode does, and names its place.
                let by_ref: Vec<bool> = match &value {
                    Operand::Ref(q, false) => self.tuple_buffers(q, pt.elems.len()),
                    _ => Vec::new(),
                };
                let base = self.operand_place(value, ty, span);
                for (i, elem) in pt.elems.iter().enumerate() {
                    if matches!(elem, Pat::Rest(_)) {
                        self.errors.error_spanned(
                            elem,
                            "`..` in tuple patterns is not supported; name each element",
                        );
                        continue;
                    }
                    let mut place = base.clone();
                    let index = syn::Index { index: i as u32, span: elem.span() };
                    push_field(&mut place, syn::Member::Unnamed(index));
                    let bound = if by_ref.get(i).copied().unwrap_or(false) {
                        Operand::Ref(place, false)
                    } else {
                        Operand::Use(place)
                    };
                    self.bind_pattern(elem, None, bound, span);
                }
            }
            Pat::Struct(ps) => {
                if let Some(rest) = &ps.rest {
                    // `S { a, .. }`: the other fields are simply not bound.
                    let _ = rest;
                }
                let base = self.operand_place(value, ty, span);
                for field in &ps.fields {
                    let mut place = base.clone();
                    push_field(&mut place, field.member.clone());
                    self.bind_pattern(&field.pat, None, Operand::Use(place), span);
                }
            }
            Pat::TupleStruct(ps) => {
                let base = self.operand_place(value, ty, span);
                for (i, elem) in ps.elems.iter().enumerate() {
                    let mut place = base.clone();
                    let index = syn::Index { index: i as u32, span: elem.span() };
                    push_field(&mut place, syn::Member::Unnamed(index));
                    self.bind_pattern(elem, None, Operand::Use(place), span);
                }
            }
            // `let [p, v] = state;`: each element read by its index.
            Pat::Slice(ps) if !ps.elems.iter().any(|e| matches!(e, Pat::Rest(_))) => {
                let base = self.operand_place(value, ty, span);
                for (i, elem) in ps.elems.iter().enumerate() {
                    let k = self.temp(elem.span());
                    self.assign(
                        Place::local(k),
                        Rvalue::Use(Operand::Const(quote!(#i))),
                        elem.span(),
                    );
                    let mut place = base.clone();
                    push_index(&mut place, k);
                    self.bind_pattern(elem, None, Operand::Use(place), span);
                }
            }
            other => {
                self.errors.error_spanned(
                    other,
                    "this pattern is not supported in `let` or `for`; bind a name, a tuple, an \
                     array of names (`[a, b]`) or a struct",
                );
                // The names it binds stay known, so that their uses report nothing more.
                let mut names = Vec::new();
                super::chains::pattern_names(other, &mut names);
                for n in names {
                    let l = self.new_local(Some(n.clone()), None, n.span());
                    self.bind(n, l);
                }
            }
        }
    }

    /// Binds a `for` loop's pattern to its item: a tuple pattern against a tuple item part by
    /// part; anything else against the item as one value.
    fn bind_item(&mut self, pat: &Pat, item: Item, pat_span: Span, span: Span) {
        match (pat, item) {
            (Pat::Tuple(pt), Item::Tuple(items))
                if pt.elems.len() == items.len()
                    && !pt.elems.iter().any(|p| matches!(p, Pat::Rest(_))) =>
            {
                for (p, it) in pt.elems.iter().zip(items) {
                    self.bind_item(p, it, p.span(), span);
                }
            }
            (Pat::Paren(pp), item) => self.bind_item(&pp.pat, item, pat_span, span),
            // `&v` of an element of a matrix: `v` is the number.
            (Pat::Reference(r), Item::Number(o)) => {
                self.bind_item(&r.pat, Item::Leaf(o), r.pat.span(), span)
            }
            // `v` of an element of a matrix: the number, and `*v` reads it.
            (Pat::Ident(pi), Item::Number(o)) if pi.subpat.is_none() => {
                self.bind_pattern(pat, None, o, pat_span);
                if let Some(l) = self.lookup(&pi.ident) {
                    self.number_refs.push(l);
                }
            }
            (pat, item) => {
                let value = self.item_operand(item, span);
                self.bind_pattern(pat, None, value, pat_span);
            }
        }
    }

    fn item_operand(&mut self, item: Item, span: Span) -> Operand {
        match item {
            Item::Leaf(o) | Item::Number(o) => o,
            Item::Tuple(items) => {
                let ops = items.into_iter().map(|i| self.item_operand(i, span)).collect();
                self.emit(Rvalue::Tuple(ops), span)
            }
        }
    }

    /// Whether `place` is a local holding a reference, and if so whether it is `&mut`: declared
    /// with a reference type (an argument `x: &[f64]`, `let y: &mut Vec<f64> = ..`), or bound to
    /// a borrow or to a copy of such a local. `None` for anything else, or when syntax cannot
    /// tell.
    fn reference_kind(&self, place: &Place) -> Option<bool> {
        if !place.projections.is_empty() {
            return None;
        }
        match &self.locals[place.local.index()].ty {
            Some(syn::Type::Reference(r)) => Some(r.mutability.is_some()),
            Some(_) => None,
            None => self.references.get(&place.local).copied(),
        }
    }

    /// A place holding `value`: the place itself if it is one, else a fresh local.
    /// For a place `q` that the declared type of its local shows to be a tuple of `n` elements
    /// (through indices of buffers and positional fields: `data[k]` of `data: &[(Vec<f64>,
    /// f64)]`), which of its elements are buffers; empty where the type is not known.
    fn tuple_buffers(&self, q: &Place, n: usize) -> Vec<bool> {
        fn strip(t: &syn::Type) -> &syn::Type {
            match t {
                syn::Type::Reference(r) => strip(&r.elem),
                syn::Type::Paren(p) => strip(&p.elem),
                other => other,
            }
        }
        fn element(t: &syn::Type) -> Option<&syn::Type> {
            match strip(t) {
                syn::Type::Slice(s) => Some(&s.elem),
                syn::Type::Array(a) => Some(&a.elem),
                syn::Type::Path(p) => {
                    let last = p.path.segments.last()?;
                    match &last.arguments {
                        syn::PathArguments::AngleBracketed(a) if last.ident == "Vec" => {
                            match a.args.first()? {
                                syn::GenericArgument::Type(t) => Some(t),
                                _ => None,
                            }
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        let Some(mut ty) = self.locals[q.local.index()].ty.as_ref() else { return Vec::new() };
        for pr in &q.projections {
            ty = match (pr, strip(ty)) {
                (Projection::Index(_), t) => match element(t) {
                    Some(e) => e,
                    None => return Vec::new(),
                },
                (Projection::Field(syn::Member::Unnamed(i)), syn::Type::Tuple(t)) => {
                    match t.elems.iter().nth(i.index as usize) {
                        Some(e) => e,
                        None => return Vec::new(),
                    }
                }
                _ => return Vec::new(),
            };
        }
        match strip(ty) {
            syn::Type::Tuple(t) if t.elems.len() == n => {
                t.elems.iter().map(|e| element(e).is_some()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn operand_place(&mut self, value: Operand, ty: Option<syn::Type>, span: Span) -> Place {
        match value {
            Operand::Use(p) if ty.is_none() => p,
            other => {
                let l = self.new_local(None, ty, span);
                self.assign(Place::local(l), Rvalue::Use(other), span);
                Place::local(l)
            }
        }
    }

    // ---- expressions ----------------------------------------------------------------------

    pub(super) fn refuse(&mut self, tokens: impl ToTokens, message: &str) -> Operand {
        self.errors.error_spanned(tokens, message);
        unit()
    }

    /// The place an expression denotes, if it is a place expression (a local, a field, an
    /// index, a dereference); `None` for any other expression.
    fn lower_place(&mut self, e: &Expr) -> Option<Place> {
        match e {
            Expr::Path(p) if p.qself.is_none() => {
                let ident = p.path.get_ident()?;
                let l = self.lookup(ident)?;
                Some(match self.aliases.get(&l) {
                    Some((q, _)) => q.clone(),
                    None => Place::local(l),
                })
            }
            Expr::Paren(p) => self.lower_place(&p.expr),
            Expr::Group(g) => self.lower_place(&g.expr),
            Expr::Field(f) => {
                let mut base = self.place_of(&f.base);
                push_field(&mut base, f.member.clone());
                Some(base)
            }
            Expr::Index(ix) if super::slices::range_index(ix).is_some() => {
                let mutable = std::mem::replace(&mut self.lend_mut, false);
                self.sub_slice(ix, mutable)
            }
            Expr::Index(ix) if self.is_matrix_element(ix) => {
                // An element of a matrix: read by its method (`elements` in the runtime), into
                // a temporary.
                let (receiver, index) = self.lower_matrix_index(ix);
                let method = syn::Ident::new("__element", ix.span());
                let v =
                    self.emit(Rvalue::Method { receiver, method, args: vec![index] }, ix.span());
                Some(self.operand_place(v, None, ix.span()))
            }
            Expr::Index(ix) => {
                let mut base = self.place_of(&ix.expr);
                let i = self.lower_expr(&ix.index);
                let il = match i {
                    Operand::Use(Place { local, projections }) if projections.is_empty() => local,
                    other => {
                        let t = self.temp(ix.index.span());
                        self.assign(Place::local(t), Rvalue::Use(other), ix.index.span());
                        t
                    }
                };
                push_index(&mut base, il);
                Some(base)
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                if super::options::deref_free(&u.expr) {
                    return Some(self.place_of(&u.expr));
                }
                // `*c` of `let c = &mut s.count;`: the place.
                if let Some((q, _)) = self.alias_of(&u.expr) {
                    return Some(q);
                }
                // `*v` of an element of a matrix bound by a `for` loop: the number.
                if let Expr::Path(p) = strip_parens(&u.expr)
                    && let Some(l) = p.path.get_ident().and_then(|i| self.lookup(i))
                    && self.number_refs.contains(&l)
                {
                    return Some(Place::local(l));
                }
                // `*b` of a `Box<T>` argument: the value, opened at entry.
                if let Expr::Path(p) = &*u.expr
                    && let Some(ident) = p.path.get_ident()
                    && let Some(l) = self.lookup(ident)
                    && self.unboxed.contains(&l)
                {
                    return Some(Place::local(l));
                }
                let mut base = self.place_of(&u.expr);
                base.projections.push(Projection::Deref);
                Some(base)
            }
            _ => None,
        }
    }

    /// The place of `e`, evaluating it into a fresh local if it is not a place expression.
    pub(super) fn place_of(&mut self, e: &Expr) -> Place {
        match self.lower_place(e) {
            Some(p) => p,
            None => {
                let v = self.lower_expr(e);
                self.operand_place(v, None, e.span())
            }
        }
    }

    pub(super) fn lower_expr(&mut self, e: &Expr) -> Operand {
        let span = e.span();
        match e {
            Expr::Lit(lit) => Operand::Const(lit.to_token_stream()),
            Expr::Path(p) => {
                // A name bound to a borrow, passed on bare: the borrow.
                if let Some((q, mutable)) = self.alias_of(e) {
                    return Operand::Ref(q, mutable);
                }
                if let Some(place) = self.lower_place(e) {
                    return Operand::Use(place);
                }
                if p.path.get_ident().is_some() && p.qself.is_none() {
                    let ident = &p.path.segments[0].ident;
                    if self.closures.iter().flatten().any(|(n, _)| n == ident) {
                        // A closure bound by `let`, used other than called or passed to an
                        // iterator adaptor (handed to a function, stored).
                        return self.refuse(
                            p,
                            "a closure bound by `let` can be called (`f(x)`) or passed to an \
                             iterator adaptor (`x.iter().map(f)`), not used as a value; to \
                             hand it to a function, write the closure's body as a separate \
                             #[differentiable] function and call that",
                        );
                    }
                    let name = ident.to_string();
                    if name.chars().next().is_some_and(|c| c.is_lowercase()) {
                        return self.refuse(
                            p,
                            "this name is not a local variable or argument of the function; \
                             global mutable state is not supported (seed 000), and a global \
                             constant must be written with an uppercase name or a path",
                        );
                    }
                }
                Operand::Const(p.to_token_stream())
            }
            Expr::Paren(p) => self.lower_expr(&p.expr),
            Expr::Group(g) => self.lower_expr(&g.expr),
            Expr::Field(_) | Expr::Index(_) => {
                let place = self.place_of(e);
                Operand::Use(place)
            }
            Expr::Unary(u) => match u.op {
                syn::UnOp::Deref(_) => {
                    let place = self.place_of(e);
                    Operand::Use(place)
                }
                syn::UnOp::Neg(_) => {
                    // A negative literal stays a constant.
                    if let Expr::Lit(lit) = &*u.expr {
                        return Operand::Const(quote_spanned!(span=> -#lit));
                    }
                    if self.user_value_like(&u.expr) {
                        // `-v` of a user type: `Neg::neg`.
                        let a = self.lower_expr(&u.expr);
                        let receiver = Place::local(self.operand_local(a, span));
                        let method = syn::Ident::new("neg", u.op.span());
                        return self.emit(Rvalue::Method { receiver, method, args: vec![] }, span);
                    }
                    let a = self.lower_expr(&u.expr);
                    let v = self.emit(Rvalue::Unary(UnOp::Neg, a), span);
                    self.mark_matrix(&u.expr, &v);
                    v
                }
                syn::UnOp::Not(_) => {
                    let a = self.lower_expr(&u.expr);
                    self.emit(Rvalue::Unary(UnOp::Not, a), span)
                }
                _ => self.refuse(u, "this unary operator is not supported"),
            },
            Expr::Binary(b) => self.lower_binary(b),
            Expr::Assign(a) => {
                let value = self.lower_expr(&a.right);
                self.assign_to(&a.left, value, span);
                unit()
            }
            Expr::Call(c) => {
                let v = self.lower_call(c);
                self.mark_matrix(e, &v);
                v
            }
            Expr::MethodCall(m) => {
                let v = self.lower_method_call(m);
                self.mark_matrix(e, &v);
                v
            }
            Expr::Tuple(t) => {
                if t.elems.is_empty() {
                    return unit();
                }
                let ops = self.lower_operands(t.elems.iter());
                self.emit(Rvalue::Tuple(ops), span)
            }
            Expr::Array(a) => {
                let ops = self.lower_operands(a.elems.iter());
                self.emit(Rvalue::Array(ops), span)
            }
            Expr::Repeat(r) => {
                let v = self.lower_expr(&r.expr);
                self.emit(Rvalue::Repeat(v, r.len.to_token_stream()), span)
            }
            Expr::Struct(s) => {
                if s.qself.is_some() {
                    return self.refuse(s, "qualified struct paths are not supported");
                }
                // `S { x, ..base }`: a copy of `base` with the fields written (the fields are
                // evaluated first, as Rust does).
                if let Some(rest) = &s.rest {
                    let ops = self.lower_operands(s.fields.iter().map(|f| &f.expr));
                    // `..Default::default()`: the struct's default, a constant of its type.
                    let base = if is_default_call(rest) {
                        let path = &s.path;
                        let func = syn::parse_quote_spanned!(rest.span()=>
                            ::mooncake_runtime::__private::rules::defaults::default_value::<#path>);
                        self.emit(Rvalue::Call { func, args: Vec::new() }, rest.span())
                    } else {
                        self.lower_expr(rest)
                    };
                    let t = self.temp(span);
                    self.assign(Place::local(t), Rvalue::Use(base), span);
                    for (f, op) in s.fields.iter().zip(ops) {
                        let mut place = Place::local(t);
                        place.projections.push(Projection::Field(f.member.clone()));
                        self.assign(place, Rvalue::Use(op), span);
                    }
                    return Operand::Use(Place::local(t));
                }
                let ops = self.lower_operands(s.fields.iter().map(|f| &f.expr));
                let fields = s.fields.iter().map(|f| f.member.clone()).zip(ops).collect();
                self.emit(Rvalue::Struct { path: s.path.clone(), fields }, span)
            }
            Expr::Cast(c) => {
                let v = self.lower_expr(&c.expr);
                self.emit(Rvalue::Cast(v, (*c.ty).clone()), span)
            }
            Expr::Reference(r) => {
                if let Expr::Array(_) | Expr::Lit(_) = &*r.expr {
                    // `&[1.0, 2.0]`: borrow a temporary.
                }
                if r.mutability.is_some() && super::slices::is_sub_slice(&r.expr) {
                    self.lend_mut = true;
                }
                if r.mutability.is_some()
                    && let Expr::Index(ix) = strip_parens(&r.expr)
                    && self.is_matrix_element(ix)
                {
                    return self.refuse(
                        r,
                        "a `&mut` borrow of an element of a matrix or array is not supported in \
                         #[differentiable] functions; read the element, and write the new value \
                         back with `m[(i, j)] = x`",
                    );
                }
                let place = self.place_of(&r.expr);
                self.lend_mut = false;
                Operand::Ref(place, r.mutability.is_some())
            }
            Expr::Block(b) => {
                if let Some(label) = &b.label {
                    return self
                        .refuse(label, "labelled blocks are not supported; use a labelled loop");
                }
                self.lower_block(&b.block)
            }
            Expr::If(i) => self.lower_if(i),
            Expr::Match(m) => self.lower_match(m),
            Expr::While(w) => self.lower_while(w),
            Expr::Loop(l) => self.lower_loop(l),
            Expr::ForLoop(f) => self.lower_for(f),
            Expr::Break(b) => self.lower_break(b),
            Expr::Continue(c) => {
                let label = c.label.as_ref().map(|l| l.ident.to_string());
                if let Some(i) = self.find_loop(label.as_deref(), c) {
                    let target = self.loops[i].continue_to;
                    self.goto(target, span);
                }
                unit()
            }
            Expr::Return(r) => {
                let value = match &r.expr {
                    Some(e) => self.lower_expr(e),
                    None => unit(),
                };
                self.assign(Place::local(Local::RETURN), Rvalue::Use(value), span);
                self.terminate(TerminatorKind::Return, span);
                unit()
            }
            Expr::Macro(m) => self.lower_macro(&m.mac),
            Expr::Unsafe(u) => self.refuse(
                u.unsafe_token,
                "`unsafe` blocks are not supported in #[differentiable] functions; move the unsafe \
                 code into a function with a hand-written rule or `zero_adjoint!`",
            ),
            Expr::Async(a) => self
                .refuse(a.async_token, "`async` is not supported in #[differentiable] functions"),
            Expr::Await(a) => self
                .refuse(a.await_token, "`.await` is not supported in #[differentiable] functions"),
            Expr::Closure(c) => self.refuse(
                c.or1_token,
                "a closure is supported bound by `let` (`let f = |v: f64| ..;`, then called), \
                 passed to an iterator adaptor (`x.iter().map(|v| ..)`), or to a matrix's \
                 `map` or `from_fn` (`DMatrix::from_fn(r, c, |i, j| ..)`); here, write a \
                 separate #[differentiable] function",
            ),
            Expr::RawAddr(r) => {
                self.refuse(r, "raw pointers are not supported in #[differentiable] functions")
            }
            Expr::Try(t) => self.lower_try(t),
            Expr::Let(l) => {
                // The names it binds stay known, so that their uses report nothing more.
                let mut names = Vec::new();
                super::chains::pattern_names(&l.pat, &mut names);
                for n in names {
                    let local = self.new_local(Some(n.clone()), None, n.span());
                    self.bind(n, local);
                }
                self.refuse(
                    l.let_token,
                    "`let` chains (`if let .. && ..`) are not supported in #[differentiable] \
                     functions; nest an `if` inside the `if let`",
                )
            }
            Expr::Range(r) => {
                self.refuse(r, "ranges are only supported as the iterator of a `for` loop")
            }
            Expr::TryBlock(t) => self.refuse(t.try_token, "`try` blocks are not supported"),
            Expr::Yield(y) => self.refuse(y.yield_token, "`yield` is not supported"),
            Expr::Const(c) => self.refuse(
                c.const_token,
                "inline `const` blocks are not supported; use a constant item",
            ),
            other => self
                .refuse(other, "this expression is not supported in #[differentiable] functions"),
        }
    }

    /// `left = value`, where `left` is a place, `_`, or a tuple or array of them (a
    /// destructuring assignment, `(a, b) = (b, a + b);`: the value is whole before any part of
    /// it is stored).
    fn assign_to(&mut self, left: &Expr, value: Operand, span: Span) {
        match left {
            // `_ = value;`
            Expr::Infer(_) => {}
            Expr::Paren(p) => self.assign_to(&p.expr, value, span),
            Expr::Tuple(t) => {
                let base = self.operand_place(value, None, span);
                for (i, e) in t.elems.iter().enumerate() {
                    let mut place = base.clone();
                    place.projections.push(Projection::Field(syn::Member::Unnamed(syn::Index {
                        index: i as u32,
                        span: e.span(),
                    })));
                    self.assign_to(e, Operand::Use(place), span);
                }
            }
            Expr::Array(a) => {
                let base = self.operand_place(value, None, span);
                for (i, e) in a.elems.iter().enumerate() {
                    let k = self.temp(e.span());
                    self.assign(Place::local(k), Rvalue::Use(Operand::Const(quote!(#i))), e.span());
                    let mut place = base.clone();
                    push_index(&mut place, k);
                    self.assign_to(e, Operand::Use(place), span);
                }
            }
            Expr::Index(ix) if self.is_matrix_element(ix) => {
                self.write_matrix_element(ix, None, value, span);
            }
            _ => match self.lower_place(left) {
                Some(place) => self.assign(place, Rvalue::Use(value), span),
                None => self.errors.error_spanned(
                    left,
                    "can only assign to a variable, a field, an index, `*reference`, or a tuple \
                     or array of them",
                ),
            },
        }
    }

    fn lower_binary(&mut self, b: &syn::ExprBinary) -> Operand {
        use syn::BinOp as B;
        let span = b.span();
        let expected_user_value = std::mem::take(&mut self.expect_user_value);
        let simple = |op: &B| -> Option<BinOp> {
            Some(match op {
                B::Add(_) | B::AddAssign(_) => BinOp::Add,
                B::Sub(_) | B::SubAssign(_) => BinOp::Sub,
                B::Mul(_) | B::MulAssign(_) => BinOp::Mul,
                B::Div(_) | B::DivAssign(_) => BinOp::Div,
                B::Rem(_) | B::RemAssign(_) => BinOp::Rem,
                B::BitAnd(_) | B::BitAndAssign(_) => BinOp::BitAnd,
                B::BitOr(_) | B::BitOrAssign(_) => BinOp::BitOr,
                B::BitXor(_) | B::BitXorAssign(_) => BinOp::BitXor,
                B::Shl(_) | B::ShlAssign(_) => BinOp::Shl,
                B::Shr(_) | B::ShrAssign(_) => BinOp::Shr,
                B::Eq(_) => BinOp::Eq,
                B::Ne(_) => BinOp::Ne,
                B::Lt(_) => BinOp::Lt,
                B::Le(_) => BinOp::Le,
                B::Gt(_) => BinOp::Gt,
                B::Ge(_) => BinOp::Ge,
                _ => return None,
            })
        };
        let is_compound = |op: &B| {
            matches!(
                op,
                B::AddAssign(_)
                    | B::SubAssign(_)
                    | B::MulAssign(_)
                    | B::DivAssign(_)
                    | B::RemAssign(_)
                    | B::BitAndAssign(_)
                    | B::BitOrAssign(_)
                    | B::BitXorAssign(_)
                    | B::ShlAssign(_)
                    | B::ShrAssign(_)
            )
        };
        let compound = is_compound(&b.op);
        match (&b.op, simple(&b.op)) {
            (B::And(_), _) | (B::Or(_), _) => {
                // Short-circuit: lowered to control flow.
                let is_and = matches!(b.op, B::And(_));
                let result = self.temp(span);
                let l = self.lower_expr(&b.left);
                let cond = self.operand_local(l, b.left.span());
                let rhs = self.new_block();
                let short = self.new_block();
                let join = self.new_block();
                let (then, otherwise) = if is_and { (rhs, short) } else { (short, rhs) };
                self.terminate(TerminatorKind::Branch { cond, then, otherwise }, span);
                self.switch_to(short);
                let k = if is_and { quote!(false) } else { quote!(true) };
                self.assign(Place::local(result), Rvalue::Use(Operand::Const(k)), span);
                self.goto(join, span);
                self.switch_to(rhs);
                let r = self.lower_expr(&b.right);
                self.assign(Place::local(result), Rvalue::Use(r), span);
                self.goto(join, span);
                self.switch_to(join);
                Operand::Use(Place::local(result))
            }
            (_, Some(op))
                if compound
                    && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
                    && self.bound_user_value(&b.left) =>
            {
                // `p += v` of a user type: `AddAssign::add_assign(&mut p, v)`.
                let value = self.lower_expr(&b.right);
                let Some(receiver) = self.lower_place(&b.left) else {
                    return self.refuse(&b.left, "can only assign to a variable or a field");
                };
                let name = format!("{}_assign", op_method(op));
                let method = syn::Ident::new(&name, b.op.span());
                self.emit(Rvalue::Method { receiver, method, args: vec![value] }, span);
                unit()
            }
            (_, Some(op)) if compound => {
                let value = self.lower_expr(&b.right);
                let value = self.deref_float_ref(value, op, span);
                if let Expr::Index(ix) = strip_parens(&b.left)
                    && self.is_matrix_element(ix)
                {
                    self.write_matrix_element(ix, Some(op), value, span);
                    return unit();
                }
                match self.lower_place(&b.left) {
                    Some(place) => {
                        let current = Operand::Use(place.clone());
                        let v = self.emit(Rvalue::Binary(op, current, value), span);
                        self.assign(place, Rvalue::Use(v), span);
                    }
                    None => self.errors.error_spanned(
                        &b.left,
                        "can only assign to a variable, a field, an index or `*reference`",
                    ),
                }
                unit()
            }
            (_, Some(op)) => {
                // The left spine of `a + b - c * d ..` is walked in a loop: a sum of a thousand
                // terms recursed a thousand deep, overflowing the compiler's 8 MiB stack in a
                // debug build of the macro (found by the fuzz test). Same order as recursion:
                // the leftmost operand, then each right operand and its operation.
                let mut spine = vec![(op, &*b.right, span)];
                let mut left = &*b.left;
                while let Expr::Binary(inner) = left
                    && let Some(op) = simple(&inner.op)
                    && !is_compound(&inner.op)
                {
                    spine.push((op, &*inner.right, inner.span()));
                    left = &inner.left;
                }
                // Arithmetic on values of user types (`a + b` of `a: V3`) is their operator
                // traits' methods (`a.add(b)`), which `#[differentiable] impl Add for V3`
                // differentiates.
                let arithmetic =
                    |op: &BinOp| matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div);
                // The right operand of `+` / `-` of a user value is one too: a product there
                // whose left operand is a field or a method's result is one of its own.
                let expected = expected_user_value
                    && matches!(strip_parens(left), Expr::Field(_) | Expr::MethodCall(_))
                    && spine.iter().all(|(op, _, _)| matches!(op, BinOp::Mul | BinOp::Div));
                if spine.iter().all(|(op, _, _)| arithmetic(op))
                    && (expected
                        || self.user_value_like(left)
                        || spine.last().is_some_and(|(op, r, _)| {
                            matches!(op, BinOp::Add | BinOp::Sub) && self.user_value_like(r)
                        }))
                {
                    let mut value = self.lower_expr(left);
                    for (op, right, span) in spine.into_iter().rev() {
                        self.expect_user_value = matches!(op, BinOp::Add | BinOp::Sub)
                            && matches!(strip_parens(right), Expr::Binary(_));
                        let r = self.lower_expr(right);
                        self.expect_user_value = false;
                        let receiver = Place::local(self.operand_local(value, span));
                        let method = syn::Ident::new(op_method(op), span);
                        value = self.emit(Rvalue::Method { receiver, method, args: vec![r] }, span);
                    }
                    return value;
                }
                let mut value = self.lower_expr(left);
                if let Some((op, first_right, span)) = spine.last() {
                    value = self.deref_float_ref(value, *op, *span);
                    value = self.hold_if_written(value, [*first_right]);
                }
                // Each partial result holds a matrix if an operand so far does (see
                // `Body::matrices`).
                let into_matrix = std::mem::take(&mut self.sum_into_matrix);
                let mut matrix =
                    into_matrix || (self.may_hold_matrices() && self.matrix_like(left));
                for (op, right, span) in spine.into_iter().rev() {
                    let r = self.lower_expr(right);
                    let r = self.deref_float_ref(r, op, span);
                    matrix = matrix || (self.may_hold_matrices() && self.matrix_like(right));
                    value = self.emit(Rvalue::Binary(op, value, r), span);
                    if matrix && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
                        self.mark_local(&value);
                    }
                }
                value
            }
            _ => self.refuse(b.op, "this operator is not supported"),
        }
    }

    /// An operand of arithmetic that is a `&f64` or `&f32` argument (`2.0 * x` with `x: &f64`,
    /// which Rust's operators on references allow) read through the reference into a temporary,
    /// so that the operation sees a number, as it does for `2.0 * *x`.
    fn deref_float_ref(&mut self, op: Operand, bin: BinOp, span: Span) -> Operand {
        let Operand::Use(place) = &op else { return op };
        if !bin.is_arithmetic() || !place.projections.is_empty() {
            return op;
        }
        let Some(syn::Type::Reference(r)) = &self.locals[place.local.index()].ty else {
            return op;
        };
        let float = matches!(&*r.elem, syn::Type::Path(p)
            if p.qself.is_none() && (p.path.is_ident("f64") || p.path.is_ident("f32")));
        if r.mutability.is_some() || !float {
            return op;
        }
        let deref = Place { local: place.local, projections: vec![Projection::Deref] };
        self.emit(Rvalue::Use(Operand::Use(deref)), span)
    }

    /// Lowers operands left to right, as Rust evaluates them. An operand that reads a variable
    /// which a later operand may write (`[a, { a += 1.0; a }]`, `a * { a = 2.0; a }`) is read
    /// into a temporary first: the statement that uses the operands reads its places only after
    /// every operand's statements have run.
    pub(super) fn lower_operands<'x>(
        &mut self,
        exprs: impl IntoIterator<Item = &'x Expr>,
    ) -> Vec<Operand> {
        let exprs: Vec<&Expr> = exprs.into_iter().collect();
        let mut out = Vec::with_capacity(exprs.len());
        for (i, e) in exprs.iter().enumerate() {
            let op = self.lower_expr(e);
            out.push(self.hold_if_written(op, exprs[i + 1..].iter().copied()));
        }
        out
    }

    /// `op`, or a temporary holding it if it reads a named variable that one of `later` may
    /// write (see [`may_write`]).
    fn hold_if_written<'x>(
        &mut self,
        op: Operand,
        later: impl IntoIterator<Item = &'x Expr>,
    ) -> Operand {
        let Operand::Use(place) = &op else { return op };
        let Some(name) = self.locals[place.local.index()].name.clone() else { return op };
        // A `&mut` reference passed on as it is (`g(x)`) lets the callee write through it.
        let passed_on = self.reference_kind(&Place::local(place.local)) == Some(true);
        if !later.into_iter().any(|e| may_write(e.to_token_stream(), &name, passed_on)) {
            return op;
        }
        let span = self.locals[place.local.index()].span;
        self.emit(Rvalue::Use(op), span)
    }

    /// A local holding `value` (the local itself when `value` is a bare local).
    pub(super) fn operand_local(&mut self, value: Operand, span: Span) -> Local {
        match value {
            Operand::Use(Place { local, projections }) if projections.is_empty() => local,
            other => {
                let t = self.temp(span);
                self.assign(Place::local(t), Rvalue::Use(other), span);
                t
            }
        }
    }

    /// `swap(&mut a, &mut b)` (by any path ending in `mem::swap`) as
    /// `{ let t = a; a = b; b = t; }`, and `mem::replace(&mut a, v)` as `{ let t = a; a = v; t }`,
    /// when `a` and `b` are variables of the function: the moves they stand for, which both
    /// modes differentiate. `None` for anything else.
    fn mem_swap_or_replace(&mut self, func: &syn::Path, c: &syn::ExprCall) -> Option<Expr> {
        let names: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
        let name = names.last()?.as_str();
        // (Not a bare `swap(..)`: the function's own `swap` may be something else.)
        let qualified = names.len() >= 2 && names[names.len() - 2] == "mem";
        if !qualified || c.args.len() != 2 {
            return None;
        }
        // `&mut v` of a variable `v` of the function (not a borrow held in a local), or of a
        // field of one (`&mut self.u`, `&mut s.next`: a simulation's two buffers).
        let variable = |e: &Expr| -> Option<Expr> {
            let Expr::Reference(r) = strip_parens(e) else { return None };
            r.mutability?;
            let mut root = strip_parens(&r.expr);
            let mut field = false;
            while let Expr::Field(f) = root {
                field = true;
                root = strip_parens(&f.base);
            }
            let Expr::Path(p) = root else { return None };
            let id = p.path.get_ident()?;
            let local = self.lookup(id)?;
            // A field of a struct the function holds by value (behind a reference, the moves
            // would read a buffer out of a handle, which reverse mode does not).
            let by_value = !field || self.reference_kind(&Place::local(local)).is_none();
            (by_value && self.alias_of(&r.expr).is_none()).then(|| strip_parens(&r.expr).clone())
        };
        let a = variable(&c.args[0])?;
        let span = c.span();
        let t = syn::Ident::new("__mooncake_swapped", Span::mixed_site());
        match name {
            "swap" => {
                let b = variable(&c.args[1])?;
                Some(syn::parse_quote_spanned!(span=> { let #t = #a; #a = #b; #b = #t; }))
            }
            "replace" => {
                let v = &c.args[1];
                Some(syn::parse_quote_spanned!(span=> { let #t = #a; #a = #v; #t }))
            }
            _ => None,
        }
    }

    fn lower_call(&mut self, c: &syn::ExprCall) -> Operand {
        let span = c.span();
        let func = match &*c.func {
            Expr::Path(p) if p.qself.is_none() => p.path.clone(),
            other => {
                return self.refuse(
                    other,
                    "only calls of functions named by a path are supported (`f(x)`, `m::f(x)`, \
                     `Type::f(x)`); calling a value such as a closure is not",
                );
            }
        };
        if let Some(ident) = func.get_ident()
            && let Some(def) = self.lookup_closure(ident)
        {
            return self.call_closure(&def, c);
        }
        if let Some(ident) = func.get_ident()
            && self.lookup(ident).is_some()
        {
            return self.refuse(
                ident,
                "calling a variable is not supported (a closure bound by `let` can be called); \
                 call a #[differentiable] function by name",
            );
        }
        if let Some(block) = from_fn_loops(&func, c) {
            return self.lower_expr(&block);
        }
        // `usize::min(a, b)`, `i32::pow(2, 3)` (an integer's method called through its type) and
        // `std::cmp::min(a, b)` / `cmp::max(a, b)`: the method on the first argument (a literal
        // one typed by the path, as Rust types it).
        if let Some(m) = integer_method_by_path(&func, c) {
            return self.lower_method_call(&m);
        }
        // `std::mem::swap(&mut a, &mut b)` and `mem::replace(&mut a, v)` of variables: the moves
        // they stand for.
        if let Some(block) = self.mem_swap_or_replace(&func, c) {
            return self.lower_expr(&block);
        }
        if func.segments.len() >= 2 && func.segments[func.segments.len() - 2].ident == "mem" {
            return self.refuse(
                &c.func,
                "of `std::mem`, `swap(&mut a, &mut b)` and `replace(&mut a, v)` of variables of \
                 the function and of fields of structs it holds by value are supported; for \
                 buffers in fields behind a reference (`&mut self.u`), copy the new values over \
                 (`self.u.copy_from_slice(&self.next)`); swap elements of a buffer with `x.swap(i, j)`, and \
                 write other moves out (`let t = a; a = b; b = t;`)",
            );
        }
        // `SVector::new(a, b, c)` of nalgebra: a call of the runtime's `svector3(a, b, c)`, whose
        // rules the associated function cannot have (its length is the arguments'). Not
        // `Vector3::new(..)` or `Matrix3::new(..)`: a call like a user type's `new`, whose rules
        // the prelude's `NewVector3` / `NewMatrix3` give nalgebra's types, so that a user's own
        // type named `Vector3` keeps its own.
        let k = func.segments.len();
        if k >= 2 && func.segments[k - 1].ident == "new" && (2..=4).contains(&c.args.len()) {
            let ty = func.segments[k - 2].ident.to_string();
            let n = c.args.len();
            if ty == "SVector" {
                let span = c.span();
                let args = self.lower_operands(c.args.iter());
                let name = format_ident!("svector{}", n, span = span);
                let func =
                    syn::parse_quote_spanned!(span=> ::mooncake_runtime::linalg::fixed::#name);
                return self.emit(Rvalue::Call { func, args }, span);
            }
        }
        // `Axis(k)` of ndarray: a call of the runtime's `axis(k)` (a value without derivative),
        // not a struct built field by field.
        if func.segments.last().is_some_and(|s| s.ident == "Axis") && c.args.len() == 1 {
            let span = c.span();
            let k = self.lower_expr(&c.args[0]);
            let func = syn::parse_quote_spanned!(span=> ::mooncake_runtime::nd::rules::axis);
            return self.emit(Rvalue::Call { func, args: vec![k] }, span);
        }
        let last = func.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        // `S::default()` (`#[derive(Default)]` or an `impl Default`, with or without rules of
        // its own): a constant, since it has no arguments to differentiate through.
        if func.segments.len() >= 2
            && last == "default"
            && c.args.is_empty()
            && func.segments.last().is_some_and(|s| s.arguments.is_none())
        {
            let ty = syn::Path {
                leading_colon: func.leading_colon,
                segments: func.segments.iter().take(func.segments.len() - 1).cloned().collect(),
            };
            let trait_path = ty.segments.last().is_some_and(|s| s.ident == "Default");
            if !trait_path {
                let func = syn::parse_quote_spanned!(span=>
                    ::mooncake_runtime::__private::rules::defaults::default_value::<#ty>);
                return self.emit(Rvalue::Call { func, args: Vec::new() }, span);
            }
        }
        // `String::from("..")`, `String::new()` (an error's message): a constant.
        if func.segments.len() == 2
            && func.segments[0].ident == "String"
            && ((last == "from"
                && matches!(
                    c.args.first(),
                    Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }))
                )
                && c.args.len() == 1)
                || (last == "new" && c.args.is_empty()))
        {
            return Operand::Const(quote!(#c));
        }
        // `Box::new(x)`.
        if func.segments.len() == 2
            && func.segments[0].ident == "Box"
            && last == "new"
            && c.args.len() == 1
        {
            let args = self.lower_operands(c.args.iter());
            let func = syn::parse_quote_spanned!(span=>
                ::mooncake_runtime::__private::rules::boxes::new);
            return self.emit(Rvalue::Call { func, args }, span);
        }
        // `Some(v)`, `Ok(v)`, `Act::Leaky(a)`: an enum's variant.
        if let Some(ty) = super::variants::variant_type(&func) {
            return self.lower_variant_new(&func, ty, &c.args, span);
        }
        if last.chars().next().is_some_and(char::is_uppercase) {
            // `Pair(a, b)`: a tuple struct's constructor.
            let ops = self.lower_operands(c.args.iter());
            let fields = c
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| syn::Member::Unnamed(syn::Index { index: i as u32, span: a.span() }))
                .zip(ops)
                .collect();
            return self.emit(Rvalue::Struct { path: func, fields }, span);
        }
        // `T::from_f64(x)` of `T: Float` (generic code, a type parameter of the function or of
        // its `impl`, a twin's `__F`, or `f64` / `f32`): the runtime's conversion, which has
        // rules for any `T`.
        let float_param = |s: &syn::PathSegment| {
            let name = s.ident.to_string();
            s.arguments.is_none()
                && (name == "f64"
                    || name == "f32"
                    || name == super::twin::PARAM
                    || self.type_params.contains(&name))
        };
        // The start of a chain's kept item (`chains::counted`): the default of its type, a
        // constant.
        if c.args.is_empty()
            && func.segments.iter().map(|s| s.ident.to_string()).eq([
                "mooncake_runtime",
                "__private",
                "item_default",
            ])
        {
            return Operand::Const(quote_spanned!(span=> ::core::default::Default::default()));
        }
        // `T::zero()` (the prelude's `ZeroRData::zero`) of a float type: the constant zero.
        if func.segments.len() == 2
            && last == "zero"
            && c.args.is_empty()
            && float_param(&func.segments[0])
        {
            let ty = &func.segments[0];
            return Operand::Const(quote_spanned!(span=> <#ty as ::mooncake_runtime::Float>::ZERO));
        }
        // `T::one()` (`Float::one`) of a float type: the constant one.
        if func.segments.len() == 2
            && last == "one"
            && c.args.is_empty()
            && float_param(&func.segments[0])
        {
            let ty = &func.segments[0];
            return Operand::Const(quote_spanned!(span=> <#ty as ::mooncake_runtime::Float>::ONE));
        }
        // `f64::from(k)` (`f32::from`) of an integer or a float: the lossless conversion, which
        // is the cast `k as f64` (the casts' rules carry a float's derivative).
        if func.segments.len() == 2
            && last == "from"
            && c.args.len() == 1
            && ["f64", "f32"].iter().any(|t| func.segments[0].ident == t)
            && func.segments[0].arguments.is_none()
        {
            let ident = &func.segments[0].ident;
            let ty: syn::Type = syn::parse_quote_spanned!(ident.span()=> #ident);
            let v = self.lower_expr(&c.args[0]);
            return self.emit(Rvalue::Cast(v, ty), span);
        }
        // `T::from_f64(2.5)` of a literal: a constant of `T`, with no rule and nothing to tape.
        if func.segments.len() == 2
            && last == "from_f64"
            && c.args.len() == 1
            && float_param(&func.segments[0])
            && is_float_literal(&c.args[0])
        {
            let (ty, arg) = (&func.segments[0], &c.args[0]);
            return Operand::Const(
                quote_spanned!(span=> <#ty as ::mooncake_runtime::Float>::from_f64(#arg)),
            );
        }
        // `T::from_f64(x)`, `T::from_i32(k)`: the runtime's conversions, with rules for any `T`.
        let func = if func.segments.len() == 2
            && (last == "from_f64" || last == "from_i32")
            && c.args.len() == 1
            && float_param(&func.segments[0])
        {
            let ty = &func.segments[0];
            let conversion = format_ident!("float_{}", last, span = func.segments[1].ident.span());
            syn::parse_quote_spanned!(func.segments[1].ident.span()=>
                ::mooncake_runtime::__private::#conversion::<#ty>)
        } else {
            func
        };
        let mark = self.write_backs.len();
        let args = self.lower_operands(c.args.iter());
        let args = self.lend_slice_copies(args);
        let out = self.emit(Rvalue::Call { func, args }, span);
        // `f(&mut x[a..b])`: the copy lent is written back now.
        self.flush_write_backs(mark, span);
        out
    }

    fn lower_method_call(&mut self, m: &syn::ExprMethodCall) -> Operand {
        let span = m.span();
        let name = m.method.to_string();
        // `x.iter().sum::<T>()` and `x.iter().sum()`.
        if name == "sum"
            && m.args.is_empty()
            && let Expr::MethodCall(inner) = &*m.receiver
            && inner.method == "iter"
            && inner.args.is_empty()
        {
            // (Of a matrix or array: its own `sum`.)
            let name = if self.matrix_like(&inner.receiver) { "sum" } else { "__iter_sum" };
            let place = self.place_of(&inner.receiver);
            let method = syn::Ident::new(name, m.method.span());
            return self.emit(Rvalue::Method { receiver: place, method, args: Vec::new() }, span);
        }
        // `a.mean().unwrap()` (or `.expect(..)`) of an ndarray array: its `__mean` (ndarray's
        // `mean` is an `Option`, `None` only for an empty array).
        if matches!(name.as_str(), "unwrap" | "expect")
            && let Expr::MethodCall(inner) = strip_parens(&m.receiver)
            && (inner.method == "mean" || inner.method == "try_inverse")
            && inner.args.is_empty()
            && self.matrix_like(&inner.receiver)
        {
            // (And nalgebra's `m.try_inverse().unwrap()`: its `__inverse`.)
            let name = if inner.method == "mean" { "__mean" } else { "__inverse" };
            let receiver = self.place_of(&inner.receiver);
            let method = syn::Ident::new(name, inner.method.span());
            return self.emit(Rvalue::Method { receiver, method, args: Vec::new() }, span);
        }
        // An `Option` made and taken apart at once (`x.get(i).copied().unwrap_or(0.0)`).
        if super::options::is_terminal(m) {
            return self.lower_option_terminal(m);
        }
        // `"message".to_string()` (an error's message): a constant.
        if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }) = &*m.receiver
            && m.args.is_empty()
            && matches!(name.as_str(), "to_string" | "to_owned" | "into")
        {
            return Operand::Const(quote!(#m));
        }
        // `v.extend(chain)`: `for e in chain { v.push(e) }` (`*e` for items Rust has as
        // references, `v.extend(x.iter())`).
        if name == "extend" && m.args.len() == 1 && super::lazy::is_lazy_chain(&m.args[0]) {
            let chain = &m.args[0];
            let probe = syn::ExprMethodCall {
                attrs: Vec::new(),
                receiver: Box::new(chain.clone()),
                dot_token: Default::default(),
                method: syn::Ident::new("count", span),
                turbofish: None,
                paren_token: Default::default(),
                args: Default::default(),
            };
            let by_ref = super::chains::source_by_ref_items(&probe);
            let e = syn::Ident::new("__mooncake_item", span);
            let item: Expr = if by_ref {
                syn::parse_quote_spanned!(span=> *#e)
            } else {
                syn::parse_quote_spanned!(span=> #e)
            };
            let receiver = &m.receiver;
            let push = syn::ExprMethodCall {
                attrs: Vec::new(),
                receiver: receiver.clone(),
                dot_token: Default::default(),
                method: syn::Ident::new("push", span),
                turbofish: None,
                paren_token: Default::default(),
                args: std::iter::once(item).collect(),
            };
            let pat: Pat = syn::parse_quote_spanned!(span=> #e);
            let for_loop = syn::ExprForLoop {
                attrs: Vec::new(),
                label: None,
                for_token: Default::default(),
                pat: Box::new(pat),
                in_token: Default::default(),
                expr: Box::new(chain.clone()),
                body: syn::Block {
                    brace_token: Default::default(),
                    stmts: vec![Stmt::Expr(Expr::MethodCall(push), Some(Default::default()))],
                },
            };
            return self.lower_expr(&Expr::ForLoop(for_loop));
        }
        // `m.map(|v| ..)` of a matrix, `a.mapv(f)` of an array: element by element.
        if self.is_element_map_call(m) {
            return self.lower_element_map(m);
        }
        // `opt.unwrap()`, `res.is_ok()`, ...: an `Option` or `Result` value taken apart.
        if let Some(op) = self.lower_try_method(m) {
            return op;
        }
        // `let o = x.get(i).copied();`, `v.pop()` passed on: a known `Option` kept as a value.
        if matches!(name.as_str(), "first" | "last" | "get" | "pop" | "copied" | "cloned" | "map")
            && super::options::makes_option_call(m)
        {
            return self.lower_option_value(&Expr::MethodCall(m.clone()));
        }
        if super::options::is_misused(m) {
            return self.refuse(&m.method, super::options::MISUSED);
        }
        // A chain ending in a consumer (`x.iter().map(..).sum()`): the loop it stands for.
        if let Some(op) = self.lower_chain(m) {
            return op;
        }
        // An adaptor anywhere else in the receiver chain is refused at the adaptor.
        let mut chain: &Expr = &m.receiver;
        while let Expr::MethodCall(inner) = chain {
            let inner_name = inner.method.to_string();
            if super::chains::ends_chain(inner) || self.is_element_map(chain) {
                // A chain's value (`x.iter().map(..).sum::<f64>().ln()`), or a matrix mapped
                // element by element (`m.map(f).sum()`): lowered on its own.
                break;
            }
            if ITERATOR_ADAPTORS.contains(&inner_name.as_str()) && inner_name != "iter" {
                return self.refuse(&inner.method, super::chains::MESSAGE);
            }
            chain = &inner.receiver;
        }
        if ITERATOR_ADAPTORS.contains(&name.as_str()) {
            return self.refuse(&m.method, super::chains::MESSAGE);
        }
        if let Some(turbofish) = &m.turbofish {
            return self.refuse(
                turbofish,
                "method calls with explicit generic arguments are not supported yet",
            );
        }
        // A method that reads, on a named constant (`W.len()`, `W.iter()`, `STEP.sqrt()`): the
        // constant is read into a temporary like any other value. Any other method on a name
        // that is not a local could be one on global state (`COUNTER.fetch_add(1, ..)`).
        // (Not `get`, which is also how a `OnceLock` or a `Cell` in a static is read.)
        let reads = (READ_ONLY_BUFFER_METHODS.contains(&name.as_str()) && name != "get")
            || super::ir::NUMBER_METHODS.contains(&name.as_str())
            || name == "is_empty";
        let constant = |p: &syn::ExprPath| {
            p.path
                .get_ident()
                .is_some_and(|i| i.to_string().starts_with(|c: char| c.is_uppercase()))
        };
        match &*m.receiver {
            Expr::Path(p) if reads && constant(p) => {}
            Expr::Path(p)
                if self.lower_place(&m.receiver).is_none() && p.path.get_ident().is_some() =>
            {
                return self.refuse(
                    &m.receiver,
                    "a method call on a name that is not a local variable or argument: global \
                     (mutable) state is not supported in #[differentiable] functions",
                );
            }
            _ => {}
        }
        // `[a, b, ..].concat()` of slices: a copy of `a` extended by the others
        // (`a.to_vec()`, then `extend_from_slice(b)`, ..), whose rules are the buffers'.
        if name == "concat"
            && m.args.is_empty()
            && let Some(parts) = concat_parts(&m.receiver)
            && let Some((first, rest)) = parts.split_first()
        {
            let copy = syn::ExprMethodCall {
                receiver: Box::new(first.clone()),
                method: syn::Ident::new("to_vec", m.method.span()),
                args: syn::punctuated::Punctuated::new(),
                turbofish: None,
                ..m.clone()
            };
            let v = self.lower_method_call(&copy);
            if let Operand::Use(p) = &v {
                for e in rest {
                    let arg = self.lower_expr(e);
                    let method = syn::Ident::new("extend_from_slice", m.method.span());
                    self.emit(
                        Rvalue::Method { receiver: p.clone(), method, args: vec![arg] },
                        span,
                    );
                }
            }
            return v;
        }
        // `x.is_empty()`: `x.len() == 0` (no derivative, as `len`).
        if name == "is_empty" && m.args.is_empty() {
            let len = syn::ExprMethodCall {
                method: syn::Ident::new("len", m.method.span()),
                ..m.clone()
            };
            let n = self.lower_method_call(&len);
            return self.emit(Rvalue::Binary(BinOp::Eq, n, Operand::Const(quote!(0usize))), span);
        }
        // `m.len()` of a matrix or array: its number of elements, by a method of the runtime
        // (`len` is read as a buffer's length everywhere else, `clone` as a buffer's copy);
        // `m.clone()` (`clone_owned()` in nalgebra) of one: a copy with a shadow of its own.
        let matrix_method = match name.as_str() {
            "len" => Some("__matrix_len"),
            "clone" | "clone_owned" => Some("__matrix_clone"),
            _ => None,
        };
        if let Some(method) = matrix_method
            && m.args.is_empty()
            && self.matrix_like(&m.receiver)
        {
            let receiver = self.place_of(&m.receiver);
            let method = syn::Ident::new(method, m.method.span());
            return self.emit(Rvalue::Method { receiver, method, args: Vec::new() }, span);
        }
        // `x[a..b].len()`: no copy.
        if name == "len"
            && m.args.is_empty()
            && let Some(n) = self.sub_slice_len(&m.receiver)
        {
            return n;
        }
        let mark = self.write_backs.len();
        if super::slices::is_sub_slice(&m.receiver)
            && !READ_ONLY_BUFFER_METHODS.contains(&name.as_str())
        {
            self.lend_mut = true;
        }
        let mut receiver = self.place_of(&m.receiver);
        self.lend_mut = false;
        // Rust evaluates the receiver before the arguments. Where an argument assigns the
        // receiver's variable (`a.max({ a = 3.0 * x; 0.1 })`, `(*m).mul_add(2.0, { *m = x; 0.0 })`),
        // the method takes its receiver by value (borrowck refuses the other kinds), so it is
        // read into a temporary first. Method calls on it in the arguments are not writes here:
        // with a `&mut self` method they may be (`s.update(s.get())`), and a copy would lose them.
        if let Some(name) = self.locals[receiver.local.index()].name.clone() {
            let passed_on = !receiver.projections.is_empty()
                && self.reference_kind(&Place::local(receiver.local)) == Some(true);
            if m.args.iter().any(|e| may_write_by(e.to_token_stream(), &name, passed_on, false)) {
                let t = self.temp(span);
                self.assign(Place::local(t), Rvalue::Use(Operand::Use(receiver)), span);
                receiver = Place::local(t);
            }
        }
        // `v.sort_by(|a, b| a.partial_cmp(b).unwrap())` (or `b` before `a`, `total_cmp`,
        // `sort_unstable_by`): a permutation, with a rule of its own (`__sort_by`).
        let (method, args) = if matches!(name.as_str(), "sort_by" | "sort_unstable_by")
            && m.args.len() == 1
        {
            // A comparator of keys (`|&a, &b| x[a].partial_cmp(&x[b]).unwrap()`): the keys
            // computed first (`recv.iter().map(|&a| x[a]).collect()`), then the permutation
            // that sorts them (`__sort_by_keys`, no derivative through the keys).
            if super::chains::sort_order(&m.args[0]).is_none()
                && let Some((pat, key, descending, total)) = super::chains::sort_key(&m.args[0])
            {
                let recv = &m.receiver;
                let keys: Expr = syn::parse_quote_spanned!(span=>
                    (#recv).iter().map(|#pat| #key).collect::<::std::vec::Vec<_>>()
                );
                let keys = self.lower_expr(&keys);
                let keys = Operand::Use(Place::local(self.operand_local(keys, span)));
                let flag = |b: bool| Operand::Const(if b { quote!(true) } else { quote!(false) });
                let method = syn::Ident::new("__sort_by_keys", m.method.span());
                let args = vec![keys, flag(descending), flag(total)];
                return self.emit(Rvalue::Method { receiver, method, args }, span);
            }
            let Some((descending, total)) = super::chains::sort_order(&m.args[0]) else {
                return self.refuse(
                    &m.args[0],
                    "`sort_by` is supported with a comparator of the elements themselves \
                     (`|a, b| a.partial_cmp(b).unwrap()`, `|a, b| b.total_cmp(a)`, \
                     `f64::total_cmp`) or of one key computed the same way from each \
                     (`|&i, &j| x[i].partial_cmp(&x[j]).unwrap()`, `|a, b| b.1.total_cmp(&a.1)`); \
                     for another comparator, sort in a `for` loop or write a hand rule",
                );
            };
            let flag = |b: bool| Operand::Const(if b { quote!(true) } else { quote!(false) });
            (syn::Ident::new("__sort_by", m.method.span()), vec![flag(descending), flag(total)])
        } else {
            // `a.total_cmp(&b)`, `a.partial_cmp(&b)` of numbers: the number compared with is
            // passed by value (the rules take numbers).
            let compare = matches!(name.as_str(), "total_cmp" | "partial_cmp")
                && !self.user_value_like(&m.receiver);
            let args = self.lower_operands(m.args.iter().map(|a| match a {
                Expr::Reference(r) if compare && r.mutability.is_none() => &*r.expr,
                a => a,
            }));
            // A user type's method named like a number's (`c.powi(3)`, `v.abs()` of a user
            // value): marked as the user's (`method_key` reads through the mark), so that
            // reverse mode dispatches it as a user method.
            // The same of a method named like a buffer's (`h.push(v)`, `h.len()` of a user
            // type's value or reference), which reverse mode would otherwise take for the
            // buffer rule of that name.
            let user = (NUMBER_METHODS.contains(&name.as_str())
                && self.user_value_like(&m.receiver))
                || (BUFFER_NAMED.contains(&name.as_str()) && self.user_receiver_like(&m.receiver));
            let method = if user {
                syn::Ident::new(&format!("{USER_METHOD}{name}"), m.method.span())
            } else {
                m.method.clone()
            };
            (method, self.lend_slice_copies(args))
        };
        let out = self.emit(Rvalue::Method { receiver, method, args }, span);
        self.flush_write_backs(mark, span);
        out
    }

    /// Whether the function may hold a matrix: a local declared or bound as one so far.
    fn may_hold_matrices(&self) -> bool {
        self.typed_matrix || !self.matrices.is_empty()
    }

    /// Records the temporary holding `e`'s value as a matrix if `e` is one (`matrix_like`); a
    /// constructor called by a matrix type's path (`DMatrix::zeros(..)`) is one in any function.
    fn mark_matrix(&mut self, e: &Expr, v: &Operand) {
        if (self.may_hold_matrices() || matches!(e, Expr::Call(_))) && self.matrix_like(e) {
            self.mark_local(v);
        }
    }

    /// Records the temporary `v` as holding a matrix (see `Body::matrices`).
    fn mark_local(&mut self, v: &Operand) {
        if let Operand::Use(p) = v
            && p.projections.is_empty()
            && self.locals[p.local.index()].name.is_none()
            && !self.matrices.contains(&p.local)
        {
            self.matrices.push(p.local);
        }
    }

    /// Whether `p` is a variable holding a matrix or array (declared or bound as one): a `for`
    /// loop over its elements reads them by its element method.
    fn matrix_place(&self, p: &Place) -> bool {
        p.projections.is_empty()
            && (self.matrices.contains(&p.local)
                || self.locals[p.local.index()].ty.as_ref().is_some_and(matrix_type))
    }

    /// Whether `m[..]` is an element of a matrix or array: a base that [`Lower::matrix_like`]
    /// accepts, or any base indexed by a pair (`m[(i, j)]`, `a[[i, j]]`), which no `Vec` or
    /// slice is. Not a range of a slice.
    fn is_matrix_element(&self, ix: &syn::ExprIndex) -> bool {
        match strip_parens(&ix.index) {
            Expr::Tuple(t) => t.elems.len() == 2,
            Expr::Array(a) => a.elems.len() == 2,
            Expr::Range(_) => false,
            _ => self.matrix_like(&ix.expr),
        }
    }

    /// The base of `m[i]` (an element of a matrix) and its index, lowered in Rust's order.
    fn lower_matrix_index(&mut self, ix: &syn::ExprIndex) -> (Place, Operand) {
        let base = self.place_of(&ix.expr);
        let index = self.lower_expr(&ix.index);
        (base, index)
    }

    /// `m[..] = value` (or `m[..] op= value`) of an element of a matrix: its write method,
    /// after a read for a compound assignment. The matrix must be a variable: a write into a
    /// field's matrix would be a write into a copy.
    fn write_matrix_element(
        &mut self,
        ix: &syn::ExprIndex,
        op: Option<BinOp>,
        value: Operand,
        span: Span,
    ) {
        let (base, index) = self.lower_matrix_index(ix);
        if !base.projections.is_empty() {
            self.errors.error_spanned(
                &ix.expr,
                "writing an element of a matrix or array is supported in #[differentiable] \
                 functions only for a variable or argument holding the matrix (`m[(i, j)] = x` \
                 with `m: &mut DMatrix<f64>` or `let mut m = ..`), not for one in a field or \
                 behind another reference",
            );
            return;
        }
        let value = match op {
            Some(op) => {
                let method = syn::Ident::new("__element", ix.span());
                let (receiver, args) = (base.clone(), vec![index.clone()]);
                let current = self.emit(Rvalue::Method { receiver, method, args }, ix.span());
                self.emit(Rvalue::Binary(op, current, value), span)
            }
            None => value,
        };
        let method = syn::Ident::new("__set_element", span);
        self.emit(Rvalue::Method { receiver: base, method, args: vec![index, value] }, span);
    }

    /// Whether `e` is a matrix or array of nalgebra or ndarray, as far as the syntax tells: a
    /// variable declared with such a type or bound to such a value, a constructor called by
    /// such a type's path, or arithmetic, `transpose` / `t()` / `component_mul` / `map` /
    /// `mapv` / `clone` / `column` / `row` of one. An `Option` never is (no operator or constructor makes one).
    pub(super) fn matrix_like(&self, e: &Expr) -> bool {
        match e {
            Expr::Paren(p) => self.matrix_like(&p.expr),
            Expr::Reference(r) => self.matrix_like(&r.expr),
            Expr::Path(p) if p.qself.is_none() => {
                let Some(l) = p.path.get_ident().and_then(|i| self.lookup(i)) else {
                    return false;
                };
                self.matrices.contains(&l)
                    || self.locals[l.index()].ty.as_ref().is_some_and(matrix_type)
            }
            Expr::Binary(b) => {
                matches!(
                    b.op,
                    syn::BinOp::Add(_)
                        | syn::BinOp::Sub(_)
                        | syn::BinOp::Mul(_)
                        | syn::BinOp::Div(_)
                ) && (self.matrix_like(&b.left) || self.matrix_like(&b.right))
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.matrix_like(&u.expr),
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "transpose" | "t" | "component_mul" | "component_div" | "map" | "mapv"
                | "clone" | "clone_owned" | "to_owned" | "abs" | "column" | "row" => {
                    self.matrix_like(&m.receiver)
                }
                "unwrap" | "expect" => match &*m.receiver {
                    Expr::Call(c) => self.matrix_like(&Expr::Call(c.clone())),
                    _ => false,
                },
                _ => false,
            },
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => {
                    p.path.segments.len() >= 2
                        && MATRIX_TYPES.contains(&p.path.segments[0].ident.to_string().as_str())
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether the text shows that `e` is a value of a user type (a `#[derive(Tangent)]` struct
    /// held by value, whose operators are its own): a variable declared with such a type
    /// (`a: V3`, `lower::struct_type`) or bound to such a value, a struct literal (`V3 { .. }`),
    /// `Type::new(..)` of such a type, `clone()` of one, or arithmetic with one on the left (on
    /// either side of `+` and `-`). Matrices are not (`matrix_like`); a reference is not.
    /// Whether `e` is a value of a user type ([`Self::user_value_like`]), or a local declared as a
    /// reference to one (`h: &Hist`, `self` of `&mut self`) or a clone of one.
    fn user_receiver_like(&self, e: &Expr) -> bool {
        if self.user_value_like(e) {
            return true;
        }
        match e {
            Expr::Paren(p) => self.user_receiver_like(&p.expr),
            Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => {
                self.user_receiver_like(&m.receiver)
            }
            Expr::Path(p) if p.qself.is_none() => {
                let Some(l) = p.path.get_ident().and_then(|i| self.lookup(i)) else {
                    return false;
                };
                matches!(&self.locals[l.index()].ty, Some(syn::Type::Reference(r))
                    if self.user_type(&r.elem))
            }
            _ => false,
        }
    }

    /// Whether `p` names a user type, going by the capital letter: not the standard library's
    /// (`NOT_USER_VALUES`), not a matrix type, not a type parameter.
    fn user_path(&self, p: &syn::Path) -> bool {
        p.segments.last().is_some_and(|s| {
            let name = s.ident.to_string();
            name.starts_with(|c: char| c.is_uppercase())
                && !NOT_USER_VALUES.contains(&name.as_str())
                && !MATRIX_TYPES.contains(&name.as_str())
                && !self.type_params.contains(&name)
        })
    }

    /// Whether the declared type `t` is a user type: a path [`Self::user_path`] accepts that is
    /// neither a matrix nor a buffer.
    fn user_type(&self, t: &syn::Type) -> bool {
        !matrix_type(t)
            && super::reverse::buffer_element(t).is_none()
            && matches!(t, syn::Type::Path(tp) if tp.qself.is_none() && self.user_path(&tp.path))
    }

    pub(super) fn user_value_like(&self, e: &Expr) -> bool {
        match e {
            Expr::Paren(p) => self.user_value_like(&p.expr),
            Expr::Path(p) if p.qself.is_none() => {
                let Some(l) = p.path.get_ident().and_then(|i| self.lookup(i)) else {
                    return false;
                };
                self.user_values.contains(&l)
                    || self.locals[l.index()].ty.as_ref().is_some_and(|t| self.user_type(t))
            }
            Expr::Struct(s) => s.qself.is_none() && self.user_path(&s.path),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => {
                    let segs = &p.path.segments;
                    // `V3::new(..)`, `S::default()`.
                    (segs.len() >= 2
                        && segs.last().is_some_and(|s| s.ident == "new" || s.ident == "default")
                        && self.user_path(&syn::Path {
                            leading_colon: None,
                            segments: segs.iter().take(segs.len() - 1).cloned().collect(),
                        }))
                        // A tuple struct's constructor (`Meters(x)`).
                        || (p.qself.is_none() && self.user_path(&p.path))
                }
                _ => false,
            },
            Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => {
                self.user_value_like(&m.receiver)
            }
            Expr::Binary(b) => match b.op {
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) => {
                    self.user_value_like(&b.left) || self.user_value_like(&b.right)
                }
                syn::BinOp::Mul(_) | syn::BinOp::Div(_) => self.user_value_like(&b.left),
                _ => false,
            },
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.user_value_like(&u.expr),
            // An element of a buffer declared with elements of a user type (`pts[i]` of `pts:
            // &[V3]`).
            Expr::Index(ix) => match strip_parens(&ix.expr) {
                Expr::Path(p) if p.qself.is_none() => p
                    .path
                    .get_ident()
                    .and_then(|i| self.lookup(i))
                    .and_then(|l| self.locals[l.index()].ty.as_ref())
                    .and_then(super::reverse::buffer_element)
                    .is_some_and(|e| self.user_type(e)),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `e` is a variable bound to a user value by the text (`let p = V3::new(..)`,
    /// `let mut q = p0;` of one), not only declared with a capitalised type, which an alias of a
    /// float may be: `p += v` of one is `AddAssign::add_assign`, which floats have no rule of.
    fn bound_user_value(&self, e: &Expr) -> bool {
        match strip_parens(e) {
            Expr::Path(p) if p.qself.is_none() => p
                .path
                .get_ident()
                .and_then(|i| self.lookup(i))
                .is_some_and(|l| self.user_values.contains(&l)),
            _ => false,
        }
    }

    /// Whether the text shows that `e` is a matrix or array of `f32` (a variable declared with
    /// such a type, or bound to arithmetic or methods of one): the element type of an untyped
    /// `map` closure.
    fn f32_matrix(&self, e: &Expr) -> bool {
        fn names_f32(ty: &syn::Type) -> bool {
            ty.to_token_stream()
                .into_iter()
                .any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "f32"))
                || matches!(ty, syn::Type::Reference(r) if names_f32(&r.elem))
        }
        match e {
            Expr::Paren(p) => self.f32_matrix(&p.expr),
            Expr::Reference(r) => self.f32_matrix(&r.expr),
            Expr::Unary(u) => self.f32_matrix(&u.expr),
            Expr::Binary(b) => self.f32_matrix(&b.left) || self.f32_matrix(&b.right),
            Expr::MethodCall(m) => self.f32_matrix(&m.receiver),
            Expr::Path(p) if p.qself.is_none() => {
                let Some(l) = p.path.get_ident().and_then(|i| self.lookup(i)) else {
                    return false;
                };
                self.f32_locals.contains(&l)
                    || self.locals[l.index()]
                        .ty
                        .as_ref()
                        .is_some_and(|t| matrix_type(t) && names_f32(t))
            }
            _ => false,
        }
    }

    /// Whether `e` is `m.map(f)` of a matrix (`matrix_like`) or `a.mapv(f)` of anything but an
    /// iterator: a map element by element, lowered by `lower_element_map`.
    pub(super) fn is_element_map(&self, e: &Expr) -> bool {
        let Expr::MethodCall(m) = e else { return false };
        self.is_element_map_call(m)
    }

    /// [`Lower::is_element_map`] of a method call.
    fn is_element_map_call(&self, m: &syn::ExprMethodCall) -> bool {
        m.args.len() == 1
            && match m.method.to_string().as_str() {
                "mapv" => !super::lazy::is_lazy_chain(&m.receiver),
                "map" => self.matrix_like(&m.receiver),
                _ => false,
            }
    }

    /// `m.map(|v| body)` of a matrix or `a.mapv(f)` of an array: the call
    /// `map_elements(&m, f)` of the runtime, `f` the closure's forward rule
    /// (`mooncake_runtime::ElementMap`: the closure written out as a nested
    /// `#[differentiable(forward_only)]` function of one scalar, whose forward rule the rules of
    /// `map_elements` apply to each element). The closure may read only its parameter,
    /// constants and functions; a function path (`f64::tanh`, a `#[differentiable]`
    /// function) is the closure calling it.
    fn lower_element_map(&mut self, m: &syn::ExprMethodCall) -> Operand {
        let span = m.span();
        let site = proc_macro2::Span::call_site();
        let v = syn::Ident::new("__mooncake_v", site);
        let (param, ty, ret, body): (TokenStream, syn::Type, syn::Type, TokenStream) = match &m.args
            [0]
        {
            Expr::Closure(c) if c.inputs.len() == 1 => {
                let (pat, ty) = match &c.inputs[0] {
                    Pat::Type(pt) => (&*pt.pat, Some((*pt.ty).clone())),
                    p => (p, None),
                };
                let Pat::Ident(pi) = pat else {
                    return self.refuse(
                            pat,
                            "the closure given to `map` / `mapv` of a matrix or array takes the element by \
                             value as a plain name (`|v| ..`); for ndarray's `map`, which passes `&v`, \
                             write `mapv`",
                        );
                };
                let mut free = Vec::new();
                super::chains::free_names(&c.body, &mut free);
                if let Some(name) =
                    free.iter().find(|n| **n != pi.ident && self.lookup(n).is_some())
                {
                    return self.refuse(
                            name,
                            "the closure given to `map` / `mapv` of a matrix or array may read only its \
                             parameter, constants and functions, not a variable of the function: combine it \
                             with the matrix outside the map (`m.map(f) * s`, `component_mul`), or loop \
                             over the elements",
                        );
                }
                // Untyped: the matrix's element type where the text shows it, else `f64`.
                let ty = ty.unwrap_or_else(|| {
                    if self.f32_matrix(&m.receiver) {
                        syn::parse_quote_spanned!(site=> f32)
                    } else {
                        syn::parse_quote_spanned!(site=> f64)
                    }
                });
                let ret = match &c.output {
                    syn::ReturnType::Type(_, t) => (**t).clone(),
                    syn::ReturnType::Default => ty.clone(),
                };
                let b = &c.body;
                let mutability = &pi.mutability;
                let name = &pi.ident;
                // A closure's block is the function's body as it is (no second braces).
                let body = match &**b {
                    Expr::Block(blk) if blk.label.is_none() && blk.attrs.is_empty() => {
                        let stmts = &blk.block.stmts;
                        quote!(#(#stmts)*)
                    }
                    other => quote!(#other),
                };
                (quote!(#mutability #name), ty, ret, body)
            }
            Expr::Path(p) if p.qself.is_none() => {
                let f64_ty: syn::Type = syn::parse_quote_spanned!(site=> f64);
                let ty = match p.path.segments.first() {
                    Some(s) if s.ident == "f32" && p.path.segments.len() == 2 => {
                        syn::parse_quote_spanned!(site=> f32)
                    }
                    _ if self.f32_matrix(&m.receiver) => syn::parse_quote_spanned!(site=> f32),
                    _ => f64_ty,
                };
                (quote!(#v), ty.clone(), ty, quote!(#p(#v)))
            }
            other => {
                return self.refuse(
                    other,
                    "`map` / `mapv` of a matrix or array in #[differentiable] code takes a closure \
                         of one element (`|v| v.max(0.0)`) or a function's path (`f64::tanh`)",
                );
            }
        };
        let f = syn::Ident::new("__mooncake_element", site);
        let frule = syn::Ident::new("__mooncake_element_frule", site);
        let map = quote_spanned!(span=> {
            #[allow(non_snake_case, dead_code, unused_mut, unused_parens, clippy::all)]
            #[::mooncake_runtime::differentiable(forward_only)]
            fn #f(#param: #ty) -> #ret { #body }
            ::mooncake_runtime::__private::ElementMap::new(#frule)
        });
        let receiver = self.place_of(&m.receiver);
        let func: syn::Path = syn::parse_quote_spanned!(m.method.span()=> ::mooncake_runtime::__private::map_elements);
        // Lent shared: as it is if the receiver already holds a reference (`w: &DMatrix<f64>`).
        let receiver = if self.reference_kind(&receiver).is_some() {
            Operand::Use(receiver)
        } else {
            Operand::Ref(receiver, false)
        };
        let args = vec![receiver, Operand::Const(map)];
        self.emit(Rvalue::Call { func, args }, span)
    }

    fn lower_macro(&mut self, mac: &syn::Macro) -> Operand {
        let span = mac.span();
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        match name.as_str() {
            "vec" => {
                let parsed = mac.parse_body_with(|input: syn::parse::ParseStream<'_>| {
                    if input.is_empty() {
                        return Ok(VecMacro::List(Vec::new()));
                    }
                    let first: Expr = input.parse()?;
                    if input.peek(syn::Token![;]) {
                        input.parse::<syn::Token![;]>()?;
                        let n: Expr = input.parse()?;
                        return Ok(VecMacro::Repeat(first, n));
                    }
                    let mut items = vec![first];
                    while input.peek(syn::Token![,]) {
                        input.parse::<syn::Token![,]>()?;
                        if input.is_empty() {
                            break;
                        }
                        items.push(input.parse()?);
                    }
                    Ok(VecMacro::List(items))
                });
                match parsed {
                    Ok(VecMacro::List(items)) => {
                        let ops = self.lower_operands(items.iter());
                        self.emit(Rvalue::VecList(ops), span)
                    }
                    Ok(VecMacro::Repeat(x, n)) => {
                        let x = self.lower_expr(&x);
                        let x = self.hold_if_written(x, [&n]);
                        let n = self.lower_expr(&n);
                        self.emit(Rvalue::VecRepeat(x, n), span)
                    }
                    Err(e) => {
                        self.errors.push(e);
                        unit()
                    }
                }
            }
            "assert" | "assert_eq" | "assert_ne" | "debug_assert" | "debug_assert_eq"
            | "debug_assert_ne" => {
                // Kept with zero derivative. Its arguments must only read variables: they are
                // evaluated on primal values by the generated code.
                let tokens = self.check_macro(mac);
                self.push(StatementKind::Check(tokens), span);
                unit()
            }
            "println" | "print" | "eprintln" | "eprint" => {
                // Printing: run by the forward pass on primal values, no derivative.
                let mac = self.explicit_captures(mac);
                let tokens = self.check_macro(&mac);
                self.push(StatementKind::Check(tokens), span);
                unit()
            }
            "matches" => {
                // `matches!(e, pat)`: the test of a pattern without bindings, on primal values.
                let parsed = mac.parse_body_with(|input: syn::parse::ParseStream<'_>| {
                    let e: Expr = input.parse()?;
                    input.parse::<syn::Token![,]>()?;
                    let pat = Pat::parse_multi_with_leading_vert(input)?;
                    if input.peek(syn::Token![if]) {
                        return Err(input.error(
                            "a guard in `matches!` is not supported; test it with `&&` after",
                        ));
                    }
                    let _ = input.parse::<Option<syn::Token![,]>>()?;
                    Ok((e, pat))
                });
                match parsed {
                    Ok((e, pat)) => {
                        // Names it binds are unused: the test is that of the pattern without.
                        let place = self.place_of(&e);
                        self.emit(Rvalue::Matches(place, Self::variant_test(&pat)), span)
                    }
                    Err(e) => {
                        self.errors.push(e);
                        unit()
                    }
                }
            }
            "format" => {
                // A `String` computed on primal values (an error's message): a constant of the
                // derivative, whose names codegen reads as the variables' primal values.
                let mac = self.explicit_captures(mac);
                Operand::Const(self.check_macro(&mac))
            }
            "dbg" => self.lower_dbg(mac),
            "value_and_gradient" => self.lower_nested_gradient(mac),
            "value_and_derivative" => self.lower_nested_derivative(mac),
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                let mac = self.explicit_captures(mac);
                let tokens = self.check_macro(&mac);
                self.terminate(TerminatorKind::Panic(tokens), span);
                unit()
            }
            _ => self.refuse(
                &mac.path,
                "this macro is not supported in #[differentiable] functions (supported: `vec!`, \
                 `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert!`, `panic!`, \
                 `unreachable!`, `println!`, `print!`, `eprintln!`, `eprint!`, `dbg!`, `format!`, \
                 `matches!`, `value_and_gradient!`, `value_and_derivative!`); call a function \
                 instead",
            ),
        }
    }

    /// The tokens of an assertion or panic macro, with every variable it names replaced by a
    /// placeholder that codegen resolves to the variable's primal value.
    /// `mac` with the names its format string captures (`"{x}"`, `"{x:.3}"`) passed as named
    /// arguments (`__mooncake_fmt_x = x`), so that they are read like the other arguments.
    /// Only a format string that is the macro's first token is rewritten.
    fn explicit_captures(&self, mac: &syn::Macro) -> syn::Macro {
        let mut tts: Vec<proc_macro2::TokenTree> = mac.tokens.clone().into_iter().collect();
        let Some(proc_macro2::TokenTree::Literal(lit)) = tts.first() else { return mac.clone() };
        let Ok(s) = syn::parse2::<syn::LitStr>(quote!(#lit)) else { return mac.clone() };
        let text = s.value();
        let (mut out, mut names) = (String::new(), Vec::<String>::new());
        let chars: Vec<char> = text.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            out.push(c);
            k += 1;
            if c != '{' {
                if c == '}' && chars.get(k) == Some(&'}') {
                    out.push('}');
                    k += 1;
                }
                continue;
            }
            if chars.get(k) == Some(&'{') {
                out.push('{');
                k += 1;
                continue;
            }
            let start = k;
            while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                k += 1;
            }
            let name: String = chars[start..k].iter().collect();
            let is_name = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_');
            if is_name
                && let Ok(ident) = syn::parse_str::<syn::Ident>(&name)
                && self.lookup(&ident).is_some()
            {
                out.push_str("__mooncake_fmt_");
                if !names.contains(&name) {
                    names.push(name.clone());
                }
            }
            out.push_str(&name);
        }
        if names.is_empty() {
            return mac.clone();
        }
        let new_lit = syn::LitStr::new(&out, s.span());
        tts[0] = match quote!(#new_lit).into_iter().next() {
            Some(t) => t,
            None => return mac.clone(),
        };
        let mut tokens: TokenStream = tts.into_iter().collect();
        for n in names {
            let (arg, value) = (
                syn::Ident::new(&format!("__mooncake_fmt_{n}"), s.span()),
                syn::Ident::new(&n, s.span()),
            );
            tokens.extend(quote!(, #arg = #value));
        }
        let mut mac = mac.clone();
        mac.tokens = tokens;
        mac
    }

    /// The path a nested `value_and_gradient!` (or, with `derivative`, `value_and_derivative!`)
    /// of `call` calls (`f__nested_gradient`), or the refusal of a callee that is not a path or
    /// of a `&mut` argument.
    fn nested_call_path(
        &mut self,
        call: &syn::ExprCall,
        derivative: bool,
    ) -> Result<syn::Path, Operand> {
        let func = match &*call.func {
            Expr::Path(p) if p.qself.is_none() => super::nested_ad::call_path(&p.path, derivative),
            _ => None,
        };
        let Some(func) = func else {
            return Err(self.refuse(&call.func, "expected a call of a function named by a path"));
        };
        let mac = if derivative { "value_and_derivative" } else { "value_and_gradient" };
        for arg in &call.args {
            if let Expr::Reference(r) = arg
                && r.mutability.is_some()
            {
                let message = format!(
                    "`{mac}!` does not take `&mut` arguments inside a #[differentiable] \
                     function: pass the value as `&x`"
                );
                return Err(self.refuse(arg, &message));
            }
        }
        Ok(func)
    }

    /// `value_and_gradient!(f(a, b))` in a differentiated body: a call of
    /// `f__nested_gradient(a, b)`, whose rules `#[differentiable]` emitted beside `f` (see
    /// `nested_ad`). A `Const(e)` argument is passed as `e` and its gradient replaced by
    /// `NoTangent`, as the macro's own result has it.
    fn lower_nested_gradient(&mut self, mac: &syn::Macro) -> Operand {
        let parsed = mac.parse_body_with(|input: syn::parse::ParseStream<'_>| {
            let call = crate::api::parse_call(input)?;
            let _ = input.parse::<Option<syn::Token![,]>>()?;
            if !input.is_empty() {
                return Err(input.error(
                    "the prepared form (`cache = ..`) is not supported inside a \
                     #[differentiable] function: write `value_and_gradient!(f(..))`",
                ));
            }
            Ok(call)
        });
        let call = match parsed {
            Ok(c) => c,
            Err(e) => {
                self.errors.push(e);
                return unit();
            }
        };
        let func = match self.nested_call_path(&call, false) {
            Ok(f) => f,
            Err(refused) => return refused,
        };
        let mut consts = Vec::new();
        let mut args = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::new();
        for arg in &call.args {
            let (is_const, arg) = crate::api::constant(arg);
            consts.push(is_const);
            args.push(arg);
        }
        let span = call.span();
        let inner = nested_call(&func, &call, args);
        if !consts.contains(&true) {
            return self.lower_call(&inner);
        }
        let r = syn::Ident::new("__mooncake_nested", Span::mixed_site());
        let grads = consts.iter().enumerate().map(|(k, c)| {
            let k = syn::Index::from(k);
            if *c {
                quote_spanned!(span=> ::mooncake_runtime::__private::nested::no_tangent())
            } else {
                quote_spanned!(span=> #r.1.#k)
            }
        });
        let block: Expr = syn::parse_quote_spanned!(span=> {
            let #r = #inner;
            (#r.0, (#(#grads,)*))
        });
        self.lower_expr(&block)
    }

    /// `value_and_derivative!(f(a, b), (ta, tb))` in a differentiated body: a call of
    /// `f__nested_derivative(a, b, ta, tb)` (see `nested_ad`); a tangent `NoTangent` is the
    /// runtime's constant of it.
    fn lower_nested_derivative(&mut self, mac: &syn::Macro) -> Operand {
        let parsed = mac.parse_body_with(|input: syn::parse::ParseStream<'_>| {
            let call = crate::api::parse_call(input)?;
            input.parse::<syn::Token![,]>()?;
            let tangents: Expr = input.parse()?;
            let _ = input.parse::<Option<syn::Token![,]>>()?;
            if !input.is_empty() {
                return Err(
                    input.error("expected `value_and_derivative!(f(args..), (t1, t2, ..))`")
                );
            }
            Ok((call, tangents))
        });
        let (call, tangents) = match parsed {
            Ok(c) => c,
            Err(e) => {
                self.errors.push(e);
                return unit();
            }
        };
        let n = call.args.len();
        let tangents: Vec<Expr> = match crate::api::ungroup(tangents) {
            Expr::Tuple(t) if t.elems.len() == n => t.elems.into_iter().collect(),
            Expr::Paren(p) if n == 1 => vec![*p.expr],
            other => {
                return self.refuse(
                    &other,
                    "inside a #[differentiable] function, write the tangents of \
                     `value_and_derivative!` out as a tuple, one per argument: `(t1, t2, ..)`",
                );
            }
        };
        let func = match self.nested_call_path(&call, true) {
            Ok(f) => f,
            Err(refused) => return refused,
        };
        let mut args: syn::punctuated::Punctuated<Expr, syn::Token![,]> = call.args.clone();
        for t in tangents {
            let no_tangent = matches!(&t, Expr::Path(p) if p.qself.is_none()
                && p.path.segments.last().is_some_and(|s| s.ident == "NoTangent"));
            args.push(if no_tangent {
                syn::parse_quote_spanned!(t.span()=> ::mooncake_runtime::__private::nested::no_tangent())
            } else {
                t
            });
        }
        self.lower_call(&nested_call(&func, &call, args))
    }

    /// `dbg!(e)`: the value of `e`, printed by the forward pass as `dbg!` prints it.
    fn lower_dbg(&mut self, mac: &syn::Macro) -> Operand {
        let span = mac.span();
        let Ok(e) = mac.parse_body::<Expr>() else {
            return self.refuse(mac, "`dbg!` is supported with one expression");
        };
        let text = quote!(#e).to_string();
        let print: syn::Macro = syn::parse_quote_spanned!(span=>
            eprintln!("[{}:{}:{}] {} = {:#?}", file!(), line!(), column!(), #text, #e)
        );
        let tokens = self.check_macro(&print);
        self.push(StatementKind::Check(tokens), span);
        self.lower_expr(&e)
    }

    fn check_macro(&mut self, mac: &syn::Macro) -> TokenStream {
        let (tokens, write) = self.rename_idents(mac.tokens.clone());
        if let Some(span) = leaves(mac.tokens.clone(), &mut false) {
            self.errors.push(syn::Error::new(
                span,
                "an assertion or panic in a #[differentiable] function may not return from the \
                 function or leave its loops (`return`, `?`, `break`, `continue`): it runs on \
                 primal values, outside the derivative; write the control flow outside it",
            ));
        }
        if let Some(span) = write {
            self.errors.push(syn::Error::new(
                span,
                "an assertion or panic in a #[differentiable] function may not change the \
                 function's variables: it runs on primal values, outside the derivative; make \
                 the change before it",
            ));
        }
        let path = &mac.path;
        let delim = &mac.delimiter;
        let body = match delim {
            syn::MacroDelimiter::Paren(_) => quote!((#tokens)),
            syn::MacroDelimiter::Bracket(_) => quote!([#tokens]),
            syn::MacroDelimiter::Brace(_) => quote!({#tokens}),
        };
        quote_spanned!(mac.span()=> #path! #body)
    }

    /// Replaces identifiers that name locals by `__mooncake_local_N` markers, which codegen
    /// turns into reads of the local's primal value. Identifiers that cannot name a local are
    /// kept: field and method names after `.`, path segments before or after `::`, macro names,
    /// field names in struct literals, and names bound inside the tokens themselves (`let`
    /// patterns, `for` patterns and closure parameters, from their binding on).
    /// Also returns the first place where the tokens change a local (assign to it, through a
    /// projection too, or borrow it `&mut`).
    fn rename_idents(&self, tokens: TokenStream) -> (TokenStream, Option<Span>) {
        let mut writes = Vec::new();
        let out = self.rename_in(tokens, &mut Vec::new(), false, &mut writes);
        (out, writes.first().copied())
    }

    fn rename_in(
        &self,
        tokens: TokenStream,
        bound: &mut Vec<String>,
        braces: bool,
        writes: &mut Vec<Span>,
    ) -> TokenStream {
        use proc_macro2::{Spacing, TokenTree as Tt};
        let tts: Vec<Tt> = tokens.into_iter().collect();
        let outer = bound.len();
        let punct =
            |k: usize, c: char| matches!(tts.get(k), Some(Tt::Punct(p)) if p.as_char() == c);
        let joint =
            |k: usize| matches!(tts.get(k), Some(Tt::Punct(p)) if p.spacing() == Spacing::Joint);
        let path_sep = |k: usize| punct(k, ':') && joint(k) && punct(k + 1, ':');
        // Names bound by a `let` take effect after its `;`; those of `for` and closures at once.
        let mut pending: Vec<String> = Vec::new();
        // Inside a `let` / `for` pattern (until `=`, `:`, `;` or `in`), or closure parameters.
        let mut pattern: Option<&str> = None;
        let mut out = Vec::with_capacity(tts.len());
        for k in 0..tts.len() {
            let tt = tts[k].clone();
            match &tt {
                Tt::Ident(i) => {
                    let name = i.to_string();
                    if let Some(kind) = pattern {
                        if name == "in" && kind == "for" {
                            pattern = None;
                        } else if name != "mut" && name != "ref" && !path_sep(k + 1) {
                            let binding = name.starts_with(|c: char| c.is_lowercase() || c == '_');
                            if binding && !(k > 0 && path_sep(k.saturating_sub(2))) {
                                if kind == "let" {
                                    pending.push(name);
                                } else {
                                    bound.push(name);
                                }
                            }
                        }
                        out.push(tt);
                        continue;
                    }
                    if name == "let" || name == "for" {
                        pattern = Some(if name == "let" { "let" } else { "for" });
                        out.push(tt);
                        continue;
                    }
                    let after_dot = k > 0 && punct(k - 1, '.') && !(k > 1 && punct(k - 2, '.'));
                    let in_path = path_sep(k + 1) || (k > 1 && path_sep(k - 2));
                    let macro_name = punct(k + 1, '!') && !punct(k + 2, '=');
                    let field_name = braces && punct(k + 1, ':') && !path_sep(k + 1);
                    let shadowed = bound.contains(&name);
                    let renamed = if after_dot || in_path || macro_name || field_name || shadowed {
                        None
                    } else {
                        self.lookup(i)
                    };
                    if renamed.is_some() && writes_at(&tts, k) {
                        writes.push(i.span());
                    }
                    match renamed {
                        Some(l) => out.push(Tt::Ident(syn::Ident::new(
                            &format!("__mooncake_local_{}", l.0),
                            i.span(),
                        ))),
                        None => out.push(tt),
                    }
                }
                Tt::Punct(p) => {
                    let c = p.as_char();
                    match pattern {
                        Some("let") if (c == '=' && !joint(k)) || c == ';' => pattern = None,
                        Some("let") if c == ':' && !path_sep(k) && !(k > 0 && path_sep(k - 1)) => {
                            pattern = None
                        }
                        Some("closure") if c == '|' => pattern = None,
                        None if c == '|' && !joint(k) && !(k > 0 && punct(k - 1, '|')) => {
                            // A closure's parameters start at a `|` in operand position.
                            let operand_position = k == 0
                                || matches!(&tts[k - 1], Tt::Punct(q) if q.as_char() != ')')
                                || matches!(&tts[k - 1], Tt::Ident(q) if q == "move");
                            if operand_position {
                                pattern = Some("closure");
                            }
                        }
                        _ => {}
                    }
                    if c == ';' {
                        bound.append(&mut pending);
                    }
                    out.push(tt);
                }
                Tt::Group(g) => {
                    let inner = if pattern.is_some() {
                        // A tuple or struct pattern: its names are bindings.
                        let mut names = Vec::new();
                        collect_pattern_names(g.stream(), &mut names);
                        match pattern {
                            Some("let") => pending.extend(names),
                            _ => bound.extend(names),
                        }
                        g.stream()
                    } else {
                        let brace = g.delimiter() == proc_macro2::Delimiter::Brace;
                        self.rename_in(g.stream(), bound, brace, writes)
                    };
                    let mut ng = proc_macro2::Group::new(g.delimiter(), inner);
                    ng.set_span(g.span());
                    out.push(Tt::Group(ng));
                }
                Tt::Literal(_) => out.push(tt),
            }
        }
        bound.truncate(outer);
        out.into_iter().collect()
    }

    // ---- control flow ---------------------------------------------------------------------

    fn lower_if(&mut self, i: &syn::ExprIf) -> Operand {
        let span = i.span();
        if let Some(op) = self.lower_if_let(i) {
            return op;
        }
        if let Some(op) = self.lower_if_let_value(i) {
            return op;
        }
        let c = self.lower_expr(&i.cond);
        let cond = self.operand_local(c, i.cond.span());
        let result = self.temp(span);
        let then = self.new_block();
        let otherwise = self.new_block();
        let join = self.new_block();
        self.terminate(TerminatorKind::Branch { cond, then, otherwise }, span);
        self.switch_to(then);
        let v = self.lower_block(&i.then_branch);
        if self.reachable() {
            self.assign(Place::local(result), Rvalue::Use(v), span);
            self.goto(join, span);
        }
        self.switch_to(otherwise);
        let v = match &i.else_branch {
            Some((_, e)) => self.lower_expr(e),
            None => unit(),
        };
        if self.reachable() {
            self.assign(Place::local(result), Rvalue::Use(v), span);
            self.goto(join, span);
        }
        self.switch_to(join);
        Operand::Use(Place::local(result))
    }

    pub(super) fn lower_match(&mut self, m: &syn::ExprMatch) -> Operand {
        if let Some(op) = self.lower_option_match(m) {
            return op;
        }
        let span = m.span();
        // `match k { E::V(x) => .. }` of `k: &E`: the value behind the reference taken apart,
        // its fields bound by value (Rust binds them by reference: their `*` is dropped).
        let (scrutinee, by_ref) = match self.shared_ref_place(&m.expr) {
            Some(place) => (place, true),
            None => (self.place_of(&m.expr), false),
        };
        let result = self.temp(span);
        let join = self.new_block();
        // `A(x) | B(x) => body` that binds: one arm per alternative, each with the body.
        let arms: Vec<syn::Arm> = m
            .arms
            .iter()
            .flat_map(|arm| match &arm.pat {
                Pat::Or(o) if pattern_binds(&arm.pat) => o
                    .cases
                    .iter()
                    .map(|case| syn::Arm { pat: case.clone(), ..arm.clone() })
                    .collect::<Vec<_>>(),
                _ => vec![arm.clone()],
            })
            .collect();
        for arm in &arms {
            let arm_span = arm.pat.span();
            // Test the pattern, then the guard, then run the body.
            let (binding, pattern) = match &arm.pat {
                Pat::Ident(pi)
                    if pi.by_ref.is_none() && pi.subpat.is_none() && is_binding_name(&pi.ident) =>
                {
                    (Some(pi.ident.clone()), None)
                }
                Pat::Ident(pi) if pi.by_ref.is_none() => match &pi.subpat {
                    Some((_, sub)) => (Some(pi.ident.clone()), Some((**sub).clone())),
                    None => (None, Some(arm.pat.clone())),
                },
                Pat::Wild(_) => (None, None),
                // `Some(v) =>`, `Ok((a, b)) =>`, `Act::Leaky(k) =>`: a variant's fields bound.
                p if Self::binds_variant(p) => (None, Some(Self::variant_test(p))),
                p => {
                    if pattern_binds(p) {
                        self.errors.error_spanned(
                            p,
                            "patterns that bind parts of a value are not supported in `match` yet; \
                             match on the parts with `if`/`else`",
                        );
                    }
                    (None, Some(p.clone()))
                }
            };
            let next = self.new_block();
            if let Some(pat) = pattern {
                let t = self.temp(arm_span);
                self.assign(Place::local(t), Rvalue::Matches(scrutinee.clone(), pat), arm_span);
                let body = self.new_block();
                self.terminate(
                    TerminatorKind::Branch { cond: t, then: body, otherwise: next },
                    arm_span,
                );
                self.switch_to(body);
            }
            self.scoped(|cx| {
                if Self::binds_variant(&arm.pat) {
                    cx.bind_variant(&arm.pat, scrutinee.clone(), arm_span);
                }
                if let Some(name) = binding {
                    let l = cx.new_local(Some(name.clone()), None, name.span());
                    cx.assign(
                        Place::local(l),
                        Rvalue::Use(Operand::Use(scrutinee.clone())),
                        arm_span,
                    );
                    cx.bind(name, l);
                }
                if let Some((_, guard)) = &arm.guard {
                    let g = cx.lower_expr(guard);
                    let cond = cx.operand_local(g, guard.span());
                    let body = cx.new_block();
                    cx.terminate(
                        TerminatorKind::Branch { cond, then: body, otherwise: next },
                        guard.span(),
                    );
                    cx.switch_to(body);
                }
                let body = if by_ref {
                    let (_, names) = super::chains::values_pattern(&arm.pat);
                    let mut names = names;
                    super::chains::pattern_names(&arm.pat, &mut names);
                    let mut body = (*arm.body).clone();
                    syn::visit_mut::VisitMut::visit_expr_mut(
                        &mut super::chains::StripDerefs(&names),
                        &mut body,
                    );
                    body
                } else {
                    (*arm.body).clone()
                };
                let v = cx.lower_expr(&body);
                if cx.reachable() {
                    cx.assign(Place::local(result), Rvalue::Use(v), arm.body.span());
                    cx.goto(join, arm.body.span());
                }
            });
            self.switch_to(next);
        }
        // No arm matched: impossible for a match rustc accepted.
        self.terminate(TerminatorKind::Panic(quote!(::core::unreachable!())), span);
        self.switch_to(join);
        Operand::Use(Place::local(result))
    }

    fn label_of(label: &Option<syn::Label>) -> Option<String> {
        label.as_ref().map(|l| l.name.ident.to_string())
    }

    fn lower_while(&mut self, w: &syn::ExprWhile) -> Operand {
        let span = w.span();
        if let Some(op) = self.lower_while_let(w) {
            return op;
        }
        if let Some(op) = self.lower_while_let_value(w) {
            return op;
        }
        let header = self.new_block();
        let body = self.new_block();
        let exit = self.new_block();
        self.goto(header, span);
        self.switch_to(header);
        let c = self.lower_expr(&w.cond);
        let cond = self.operand_local(c, w.cond.span());
        self.terminate(TerminatorKind::Branch { cond, then: body, otherwise: exit }, span);
        self.switch_to(body);
        self.loops.push(LoopCtx {
            label: Self::label_of(&w.label),
            break_to: exit,
            continue_to: header,
            result: None,
        });
        self.lower_block(&w.body);
        self.loops.pop();
        if self.reachable() {
            self.goto(header, span);
        }
        self.switch_to(exit);
        unit()
    }

    fn lower_loop(&mut self, l: &syn::ExprLoop) -> Operand {
        let span = l.span();
        let result = self.temp(span);
        let body = self.new_block();
        let exit = self.new_block();
        self.goto(body, span);
        self.switch_to(body);
        self.loops.push(LoopCtx {
            label: Self::label_of(&l.label),
            break_to: exit,
            continue_to: body,
            result: Some(result),
        });
        self.lower_block(&l.body);
        self.loops.pop();
        if self.reachable() {
            self.goto(body, span);
        }
        self.switch_to(exit);
        Operand::Use(Place::local(result))
    }

    fn find_loop(&mut self, label: Option<&str>, at: impl ToTokens) -> Option<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => self.loops.iter().rposition(|c| c.label.as_deref() == Some(l)),
        };
        if found.is_none() {
            self.errors.error_spanned(at, "`break` or `continue` outside a loop of this function");
        }
        found
    }

    fn lower_break(&mut self, b: &syn::ExprBreak) -> Operand {
        let span = b.span();
        let label = b.label.as_ref().map(|l| l.ident.to_string());
        let Some(i) = self.find_loop(label.as_deref(), b) else {
            return unit();
        };
        if let Some(e) = &b.expr {
            let v = self.lower_expr(e);
            match self.loops[i].result {
                Some(r) => self.assign(Place::local(r), Rvalue::Use(v), span),
                None => {
                    return self.refuse(e, "`break` with a value is only allowed in `loop`");
                }
            }
        } else if let Some(r) = self.loops[i].result {
            self.assign(Place::local(r), Rvalue::Use(unit()), span);
        }
        let target = self.loops[i].break_to;
        self.goto(target, span);
        unit()
    }

    /// `for PAT in ITER { BODY }`, for the iterators of the supported subset, as an index loop:
    ///
    /// ```text
    /// (init)  counter = start; end = ..
    /// header: c = counter < end (or > for `.rev()`); branch c -> [body, exit]
    /// body:   (`.rev()`: counter -= 1) PAT = element(counter); BODY; goto latch
    /// latch:  (forward: counter += step) goto header
    /// ```
    pub(super) fn lower_for(&mut self, f: &syn::ExprForLoop) -> Operand {
        let span = f.span();
        // `for (a, b) in &pairs[1..] { .. *b .. }`: a tuple pattern binds references to the
        // parts of a shared item; the parts are bound as values here, so their `*` is dropped
        // (an iteration by `&mut` or through adaptors binds as before).
        let item_pattern = match (&*f.pat, &*f.expr) {
            (Pat::Tuple(_), e) if items_lent(e) => Some(&*f.pat),
            // `for (i, (a, b)) in pairs.iter().enumerate()`: the item is the second part.
            (Pat::Tuple(t), Expr::MethodCall(m))
                if m.method == "enumerate"
                    && m.args.is_empty()
                    && items_lent(&m.receiver)
                    && t.elems.len() == 2
                    && matches!(&t.elems[1], Pat::Tuple(_)) =>
            {
                Some(&t.elems[1])
            }
            _ => None,
        };
        if let Some(item) = item_pattern {
            let (_, names) = super::chains::values_pattern(item);
            let mut body = f.body.clone();
            syn::visit_mut::VisitMut::visit_block_mut(
                &mut super::chains::StripDerefs(&names),
                &mut body,
            );
            if body != f.body {
                let f = syn::ExprForLoop { body, ..f.clone() };
                return self.lower_for(&f);
            }
        }
        // `for k in 0..3`: one copy of the body per value.
        if let Some(op) = self.lower_unrolled(f) {
            return op;
        }
        // `for w in x.windows(k)` (and `chunks`, `chunks_exact`): an index loop.
        if let Some(op) = self.lower_views(f) {
            return op;
        }
        // `for v in a.chain(b)`: a loop over each.
        if let Some(op) = self.lower_chained_for(f) {
            return op;
        }
        // `for v in x.iter().filter(..)`: the source's loop, the adaptors in its body.
        if let Some(op) = self.lower_adapted_for(f) {
            return op;
        }
        // `for v in x[a..b].iter_mut()` / `&mut x[a..]`: over a copy, written back after.
        let mark = self.write_backs.len();
        let op = self.lower_for_loop(f);
        self.flush_write_backs(mark, span);
        op
    }

    fn lower_for_loop(&mut self, f: &syn::ExprForLoop) -> Operand {
        let span = f.span();
        let Some(plan) = self.plan_for(&f.expr) else {
            return unit();
        };
        let counter = self.temp(span);
        let end = self.temp(span);
        let header = self.new_block();
        let body = self.new_block();
        let latch = self.new_block();
        let exit = self.new_block();
        let one = Operand::Const(quote!(1));
        match &plan {
            ForPlan::Range { start, end: e, inclusive, rev, .. } => {
                if *rev {
                    // Counts down from the end: `counter` is one past the next element.
                    let top = if *inclusive {
                        self.emit(Rvalue::Binary(BinOp::Add, e.clone(), one.clone()), span)
                    } else {
                        e.clone()
                    };
                    self.assign(Place::local(counter), Rvalue::Use(top), span);
                    self.assign(Place::local(end), Rvalue::Use(start.clone()), span);
                } else {
                    self.assign(Place::local(counter), Rvalue::Use(start.clone()), span);
                    self.assign(Place::local(end), Rvalue::Use(e.clone()), span);
                }
            }
            ForPlan::Elements { places, window, .. } => {
                let mut len: Option<Operand> = None;
                for (p, kind) in places {
                    let matrix = self.matrix_place(p);
                    if matrix && *kind == ElemKind::Mut {
                        self.errors.error_spanned(
                            &f.expr,
                            "iterating mutably over a matrix or array is not supported in \
                             #[differentiable] functions; write its elements in an index loop \
                             (`for i in 0..m.len() { m[i] = .. }`)",
                        );
                    }
                    let len_method = if matrix { "__matrix_len" } else { "len" };
                    let l = self.emit(
                        Rvalue::Method {
                            receiver: p.clone(),
                            method: syn::Ident::new(len_method, span),
                            args: Vec::new(),
                        },
                        span,
                    );
                    len = Some(match len {
                        None => l,
                        Some(prev) => {
                            let prev_place = self.operand_place(prev, None, span);
                            self.emit(
                                Rvalue::Method {
                                    receiver: prev_place,
                                    method: syn::Ident::new("min", span),
                                    args: vec![l],
                                },
                                span,
                            )
                        }
                    });
                }
                let len = len.unwrap_or_else(|| Operand::Const(quote!(0usize)));
                // The window `lo..hi` of the elements visited, narrowed by `.skip` and `.take`
                // from the front, or from the back after a `.rev()`.
                let (mut lo, mut hi) = (Operand::Const(quote!(0usize)), len);
                let mut back = false;
                for op in window {
                    let k = match op {
                        WindowOp::Rev => {
                            back = !back;
                            continue;
                        }
                        WindowOp::Skip(k) | WindowOp::Take(k) => k.clone(),
                    };
                    let room = self.emit(Rvalue::Binary(BinOp::Sub, hi.clone(), lo.clone()), span);
                    let room = self.operand_place(room, None, span);
                    let k = self.emit(
                        Rvalue::Method {
                            receiver: room,
                            method: syn::Ident::new("min", span),
                            args: vec![k],
                        },
                        span,
                    );
                    match (op, back) {
                        (WindowOp::Skip(_), false) => {
                            lo = self.emit(Rvalue::Binary(BinOp::Add, lo, k), span);
                        }
                        (WindowOp::Skip(_), true) => {
                            hi = self.emit(Rvalue::Binary(BinOp::Sub, hi, k), span);
                        }
                        (WindowOp::Take(_), false) => {
                            hi = self.emit(Rvalue::Binary(BinOp::Add, lo.clone(), k), span);
                        }
                        (WindowOp::Take(_), true) => {
                            lo = self.emit(Rvalue::Binary(BinOp::Sub, hi.clone(), k), span);
                        }
                        (WindowOp::Rev, _) => {}
                    }
                }
                if back {
                    // Counts down, as a reversed range: `counter` is one past the next element.
                    self.assign(Place::local(counter), Rvalue::Use(hi), span);
                    self.assign(Place::local(end), Rvalue::Use(lo), span);
                } else {
                    self.assign(Place::local(counter), Rvalue::Use(lo), span);
                    self.assign(Place::local(end), Rvalue::Use(hi), span);
                }
            }
        }
        self.goto(header, span);

        self.switch_to(header);
        let c = self.temp(span);
        let reversed = match &plan {
            ForPlan::Range { rev, .. } => *rev,
            ForPlan::Elements { window, .. } => {
                window.iter().filter(|w| matches!(w, WindowOp::Rev)).count() % 2 == 1
            }
        };
        let cmp = match &plan {
            _ if reversed => BinOp::Gt,
            ForPlan::Range { inclusive: true, .. } => BinOp::Le,
            _ => BinOp::Lt,
        };
        self.assign(
            Place::local(c),
            Rvalue::Binary(
                cmp,
                Operand::Use(Place::local(counter)),
                Operand::Use(Place::local(end)),
            ),
            span,
        );
        self.terminate(TerminatorKind::Branch { cond: c, then: body, otherwise: exit }, span);

        self.switch_to(body);
        if reversed {
            let dec = self.emit(
                Rvalue::Binary(BinOp::Sub, Operand::Use(Place::local(counter)), one.clone()),
                span,
            );
            self.assign(Place::local(counter), Rvalue::Use(dec), span);
        }
        self.loops.push(LoopCtx {
            label: Self::label_of(&f.label),
            break_to: exit,
            continue_to: latch,
            result: None,
        });
        self.scoped(|cx| {
            let element = match &plan {
                ForPlan::Range { .. } => Item::Leaf(Operand::Use(Place::local(counter))),
                ForPlan::Elements { places, enumerate, shape, .. } => {
                    let items: Vec<Item> = places
                        .iter()
                        .map(|(p, kind)| {
                            if cx.matrix_place(p) {
                                // An element of a matrix: read by its method (see
                                // `is_matrix_element`), held as the number.
                                let method = syn::Ident::new("__element", span);
                                let args = vec![Operand::Use(Place::local(counter))];
                                let receiver = p.clone();
                                let v = cx.emit(Rvalue::Method { receiver, method, args }, span);
                                return match kind {
                                    ElemKind::Value => Item::Leaf(v),
                                    _ => Item::Number(v),
                                };
                            }
                            let mut place = p.clone();
                            place.projections.push(Projection::Index(counter));
                            Item::Leaf(match kind {
                                ElemKind::Ref => Operand::Ref(place, false),
                                ElemKind::Mut => Operand::Ref(place, true),
                                ElemKind::Value => Operand::Use(place),
                            })
                        })
                        .collect();
                    let item = shape.item(&mut items.into_iter());
                    if *enumerate {
                        Item::Tuple(vec![Item::Leaf(Operand::Use(Place::local(counter))), item])
                    } else {
                        item
                    }
                }
            };
            cx.bind_item(&f.pat, element, f.pat.span(), span);
            cx.lower_block(&f.body);
        });
        self.loops.pop();
        if self.reachable() {
            self.goto(latch, span);
        }
        self.switch_to(latch);
        if let (ForPlan::Range { step, .. } | ForPlan::Elements { step, .. }, false) =
            (&plan, reversed)
        {
            let step = step.clone().unwrap_or(one);
            let inc = self
                .emit(Rvalue::Binary(BinOp::Add, Operand::Use(Place::local(counter)), step), span);
            self.assign(Place::local(counter), Rvalue::Use(inc), span);
        }
        self.goto(header, span);
        self.switch_to(exit);
        unit()
    }

    /// Recognises the iterators of the supported subset.
    fn plan_for(&mut self, iter: &Expr) -> Option<ForPlan> {
        match iter {
            Expr::Paren(p) => self.plan_for(&p.expr),
            Expr::Range(r) => {
                let (Some(start), Some(end)) = (&r.start, &r.end) else {
                    self.errors
                        .error_spanned(r, "`for` over a range needs both ends (`a..b` or `a..=b`)");
                    return None;
                };
                let start = self.lower_expr(start);
                let end = self.lower_expr(end);
                Some(ForPlan::Range {
                    start,
                    end,
                    inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                    rev: false,
                    step: None,
                })
            }
            Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                match self.plan_for(&m.receiver)? {
                    ForPlan::Range { start, end, inclusive, rev: false, step: None } => {
                        Some(ForPlan::Range { start, end, inclusive, rev: true, step: None })
                    }
                    ForPlan::Elements { places, enumerate, step: None, shape, mut window } => {
                        window.push(WindowOp::Rev);
                        Some(ForPlan::Elements { places, enumerate, step: None, shape, window })
                    }
                    _ => {
                        self.errors.error_spanned(
                            &m.method,
                            "`.rev()` is supported on a range (`(a..b).rev()`) and on elements \
                             (`x.iter().rev()`)",
                        );
                        None
                    }
                }
            }
            Expr::MethodCall(m)
                if (m.method == "skip" || m.method == "take") && m.args.len() == 1 =>
            {
                match self.plan_for(&m.receiver)? {
                    ForPlan::Elements { places, enumerate, step: None, shape, mut window } => {
                        let k = self.lower_expr(&m.args[0]);
                        window.push(if m.method == "skip" {
                            WindowOp::Skip(k)
                        } else {
                            WindowOp::Take(k)
                        });
                        Some(ForPlan::Elements { places, enumerate, step: None, shape, window })
                    }
                    _ => {
                        self.errors.error_spanned(
                            &m.method,
                            "`.skip(k)` and `.take(k)` are supported on elements (`x.iter().skip(1)`, \
                             zipped and enumerated too); for a range, change its ends",
                        );
                        None
                    }
                }
            }
            Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                match self.plan_for(&m.receiver)? {
                    ForPlan::Range { start, end, inclusive, rev: false, step: None } => {
                        let step = self.lower_expr(&m.args[0]);
                        Some(ForPlan::Range { start, end, inclusive, rev: false, step: Some(step) })
                    }
                    // `x.iter().step_by(k)`, after `skip` / `take`: every `k`-th index of the
                    // window.
                    ForPlan::Elements { places, enumerate: false, step: None, shape, window }
                        if !window.iter().any(|w| matches!(w, WindowOp::Rev)) =>
                    {
                        let step = self.lower_expr(&m.args[0]);
                        Some(ForPlan::Elements {
                            places,
                            enumerate: false,
                            step: Some(step),
                            shape,
                            window,
                        })
                    }
                    _ => {
                        self.errors.error_spanned(
                            &m.method,
                            "`.step_by(k)` is supported on a range (`(a..b).step_by(k)`) and on \
                             elements (`x.iter().step_by(k)`, after `.skip(..)` / `.take(..)`), \
                             not after `.rev()`, `.enumerate()` or `.zip(..)`",
                        );
                        None
                    }
                }
            }
            Expr::MethodCall(m)
                if (m.method == "iter" || m.method == "iter_mut") && m.args.is_empty() =>
            {
                self.lend_mut = m.method == "iter_mut" && super::slices::is_sub_slice(&m.receiver);
                let place = self.place_of(&m.receiver);
                self.lend_mut = false;
                let kind = if m.method == "iter" { ElemKind::Ref } else { ElemKind::Mut };
                Some(ForPlan::over(place, kind))
            }
            Expr::MethodCall(m) if m.method == "enumerate" && m.args.is_empty() => {
                match self.plan_for(&m.receiver)? {
                    ForPlan::Elements { places, enumerate: false, step: None, shape, window }
                        if window.is_empty() =>
                    {
                        let window = Vec::new();
                        Some(ForPlan::Elements {
                            places,
                            enumerate: true,
                            step: None,
                            shape,
                            window,
                        })
                    }
                    _ => {
                        self.errors.error_spanned(
                            &m.method,
                            "`.enumerate()` is only supported on `x.iter()` or a zip of them",
                        );
                        None
                    }
                }
            }
            Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => {
                // A side narrowed by `skip(k)` / `take(k)` (`x.iter().skip(1).zip(x.iter())`)
                // is the sub-slice's elements (`x[1..].iter()`).
                let left = sub_slice_side(&m.receiver);
                let right = sub_slice_side(&m.args[0]);
                let left = self.plan_for(left.as_ref().unwrap_or(&m.receiver))?;
                let right = self.plan_for(right.as_ref().unwrap_or(&m.args[0]))?;
                match (left, right) {
                    (
                        ForPlan::Elements {
                            places: mut a,
                            enumerate: false,
                            step: None,
                            shape: sa,
                            window: wa,
                        },
                        ForPlan::Elements {
                            places: b,
                            enumerate: false,
                            step: None,
                            shape: sb,
                            window: wb,
                        },
                    ) if wa.is_empty() && wb.is_empty() => {
                        a.extend(b);
                        let shape = Shape::Zip(Box::new(sa), Box::new(sb));
                        let window = Vec::new();
                        Some(ForPlan::Elements {
                            places: a,
                            enumerate: false,
                            step: None,
                            shape,
                            window,
                        })
                    }
                    _ => {
                        self.errors.error_spanned(
                            &m.method,
                            "`.zip()` in a `for` loop's source is supported between elements \
                             (`x.iter()`, `&x[a..b]`, `x.iter().skip(k)`, `x.iter().take(k)`), \
                             not with a side reversed, stepped or enumerated: write an index loop \
                             (`for i in 0..n { .. x[i] .. y[n - 1 - i] .. }`)",
                        );
                        None
                    }
                }
            }
            Expr::Reference(r) => {
                self.lend_mut = r.mutability.is_some() && super::slices::is_sub_slice(&r.expr);
                let place = self.place_of(&r.expr);
                self.lend_mut = false;
                let kind = if r.mutability.is_some() { ElemKind::Mut } else { ElemKind::Ref };
                Some(ForPlan::over(place, kind))
            }
            e if self.alias_of(e).is_some() => {
                // `for v in w` of `let w = &net.w;`: by reference, as over `&net.w`.
                let (place, mutable) = self.alias_of(e).expect("checked");
                let kind = if mutable { ElemKind::Mut } else { ElemKind::Ref };
                Some(ForPlan::over(place, kind))
            }
            e if self.lower_place(e).is_some() => {
                let place = self.place_of(e);
                // `for v in x` over a reference iterates the referent's elements by reference,
                // as `for v in x.iter()` (`iter_mut()` for `&mut`) does; over a buffer held by
                // value, by value.
                let kind = match self.reference_kind(&place) {
                    Some(false) => ElemKind::Ref,
                    Some(true) => ElemKind::Mut,
                    None => ElemKind::Value,
                };
                Some(ForPlan::over(place, kind))
            }
            // `for c in W` of a named constant, `for v in [a, b, c]` of an array literal: by
            // value, over a temporary holding it.
            e if match e {
                Expr::Array(a) => !a.elems.is_empty(),
                Expr::Repeat(_) => true,
                Expr::Path(p) => {
                    p.qself.is_none()
                        && p.path.segments.last().is_some_and(|s| {
                            s.ident.to_string().starts_with(|c: char| c.is_uppercase())
                        })
                }
                _ => false,
            } =>
            {
                let place = self.place_of(e);
                Some(ForPlan::over(place, ElemKind::Value))
            }
            other => {
                self.errors.error_spanned(
                    other,
                    "this iterator is not supported in a #[differentiable] `for` loop; supported: \
                     `a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(k)`, `x.iter()`, `&x`, \
                     `x.iter().enumerate()`, `x.iter().zip(y.iter())`, and on elements `.rev()`, \
                     `.skip(k)`, `.take(k)`; `x.windows(k)`, `x.chunks(k)`, `x.chunks_exact(k)`; \
                     otherwise write an index loop",
                );
                None
            }
        }
    }
}

/// What a `for` loop binds each iteration: an operand, or a tuple of them (`enumerate`,
/// `zip`), bound part by part to a tuple pattern without building the tuple.
enum Item {
    Leaf(Operand),
    /// An element of a matrix, held as the number where the primal has a reference to it (see
    /// `number_refs`).
    Number(Operand),
    Tuple(Vec<Item>),
}

#[allow(clippy::large_enum_variant)] // one per `vec!`, never stored
enum VecMacro {
    List(Vec<Expr>),
    Repeat(Expr, Expr),
}

#[derive(Clone, Copy, PartialEq)]
enum ElemKind {
    Ref,
    Mut,
    Value,
}

#[allow(clippy::large_enum_variant)] // one per `for` loop, never stored
enum ForPlan {
    Range {
        start: Operand,
        end: Operand,
        inclusive: bool,
        rev: bool,
        step: Option<Operand>,
    },
    Elements {
        places: Vec<(Place, ElemKind)>,
        enumerate: bool,
        step: Option<Operand>,
        shape: Shape,
        /// `.skip(a)`, `.take(b)` and `.rev()` applied to the elements, in order.
        window: Vec<WindowOp>,
    },
}

impl ForPlan {
    /// The elements of one buffer, taken as `kind` says, with no adaptors.
    fn over(place: Place, kind: ElemKind) -> Self {
        ForPlan::Elements {
            places: vec![(place, kind)],
            enumerate: false,
            step: None,
            shape: Shape::Leaf,
            window: Vec::new(),
        }
    }
}

/// A step narrowing or turning the elements a `for` loop visits.
enum WindowOp {
    Skip(Operand),
    Take(Operand),
    Rev,
}

/// How the elements of a `for` loop's places nest in its item: one place, or a zip of two
/// (`a.iter().zip(b.iter()).zip(c.iter())` gives `((a, b), c)`), the places in order.
enum Shape {
    Leaf,
    Zip(Box<Shape>, Box<Shape>),
}

impl Shape {
    /// The item of this shape, taking its leaves from `leaves` in order.
    fn item(&self, leaves: &mut impl Iterator<Item = Item>) -> Item {
        match self {
            Shape::Leaf => leaves.next().unwrap_or(Item::Tuple(Vec::new())),
            Shape::Zip(a, b) => Item::Tuple(vec![a.item(leaves), b.item(leaves)]),
        }
    }
}

/// Buffer methods that only read their receiver: on a sub-slice (`x[a..b].to_vec()`), the copy
/// needs no write-back.
const READ_ONLY_BUFFER_METHODS: &[&str] =
    &["len", "iter", "to_vec", "clone", "sum", "first", "last", "get"];

/// Whether `ty` is a matrix or array type of nalgebra or ndarray (behind references too).
/// Whether `ty` is `&S` of a named type that is neither a buffer nor a matrix (a
/// `#[derive(Tangent)]` struct, going by the capital letter), whose `clone()` is the value's
/// copy rather than a buffer's. `params` are the function's type parameters (numbers).
pub(crate) fn struct_ref_type(ty: &syn::Type, params: &[String]) -> bool {
    matches!(ty, syn::Type::Reference(r) if r.mutability.is_none() && struct_type(&r.elem, params))
}

/// Whether `ty` is a named type that is neither a buffer nor a matrix, nor one of the type
/// parameters `params` (see [`struct_ref_type`]).
pub(crate) fn struct_type(ty: &syn::Type, params: &[String]) -> bool {
    !matrix_type(ty)
        && super::reverse::buffer_element(ty).is_none()
        && matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| user_type_name(&s.ident.to_string(), params)))
}

/// Whether a named type's last segment is a user's type rather than a primitive or one of the
/// function's type parameters `params`: capitalised (`Body`, `P`) and not a parameter.
pub(crate) fn user_type_name(name: &str, params: &[String]) -> bool {
    name.starts_with(|c: char| c.is_uppercase()) && !params.iter().any(|p| p == name)
}

pub(crate) fn matrix_type(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => matrix_type(&r.elem),
        syn::Type::Paren(p) => matrix_type(&p.elem),
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            let name = s.ident.to_string();
            MATRIX_TYPES.contains(&name.as_str())
                || name.starts_with("Matrix")
                || name.starts_with("Vector")
        }),
        _ => false,
    }
}

/// `DMatrix::from_fn(r, c, |i, j| body)`, `DVector::from_fn(n, |i, _| body)` (nalgebra, `f64`: the
/// constructors by path are) and
/// `Array2::from_shape_fn(shape, |(i, j)| body)`, `Array1::from_shape_fn(n, |i| body)`
/// (ndarray), written as the loops they run: a zero matrix of the shape, each element written
/// with the closure's body, which may read the function's variables. `None` for any other
/// call.
fn from_fn_loops(func: &syn::Path, c: &syn::ExprCall) -> Option<Expr> {
    let segs: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
    let [ty, f] = segs.as_slice() else { return None };
    let Some(Expr::Closure(cl)) = c.args.last() else { return None };
    let site = Span::mixed_site();
    let (m, i, j) = (
        syn::Ident::new("__mooncake_m", site),
        syn::Ident::new("__mooncake_i", site),
        syn::Ident::new("__mooncake_j", site),
    );
    let head = &func.segments[0];
    let body = &cl.body;
    let params: Vec<&Pat> = cl.inputs.iter().collect();
    let span = c.span();
    let (zeros, bind, index) = match (ty.as_str(), f.as_str(), c.args.len(), params.as_slice()) {
        ("DMatrix", "from_fn", 3, [pi, pj]) => {
            let (r, cc) = (&c.args[0], &c.args[1]);
            (
                quote_spanned!(span=> #head::zeros(#r, #cc)),
                quote!(let #pi = #i; let #pj = #j;),
                quote!((#i, #j)),
            )
        }
        ("DVector", "from_fn", 2, [pi, pj]) => {
            let n = &c.args[0];
            (
                quote_spanned!(span=> #head::zeros(#n)),
                quote!(let #pi = #i; let #pj = #j;),
                quote!((#i, #j)),
            )
        }
        ("Array2", "from_shape_fn", 2, [p]) => {
            let shape = &c.args[0];
            (
                quote_spanned!(span=> #head::zeros(#shape)),
                quote!(let #p = (#i, #j);),
                quote!([#i, #j]),
            )
        }
        ("Array1", "from_shape_fn", 2, [p]) => {
            let n = &c.args[0];
            (quote_spanned!(span=> #head::zeros(#n)), quote!(let #p = #i;), quote!(#i))
        }
        _ => return None,
    };
    // An `Array1`'s elements are a vector's: one loop.
    let one_loop = ty == "Array1";
    let (rows, cols) = if ty == "Array1" || ty == "DVector" {
        (quote!(#m.len()), quote!(1usize))
    } else {
        (quote!(#m.nrows()), quote!(#m.ncols()))
    };
    let loops = if one_loop {
        quote!(for #i in 0..#rows { #bind #m[#index] = #body; })
    } else if ty == "DVector" {
        quote!(for #i in 0..#rows { let #j = 0usize; #bind #m[#i] = #body; })
    } else {
        quote!(for #j in 0..#cols { for #i in 0..#rows { #bind #m[#index] = #body; } })
    };
    let _ = cols;
    Some(syn::parse_quote_spanned!(span=> {
        let mut #m = #zeros;
        #loops
        #m
    }))
}

/// `e` without the parentheses around it.
pub(super) fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

/// The matrix and array types of nalgebra and ndarray whose `map` / `mapv` is element-wise
/// (with any name starting `Matrix` or `Vector`: `Matrix3`, `Vector2`, ...).
const MATRIX_TYPES: &[&str] = &[
    "DMatrix",
    "DVector",
    "RowDVector",
    "SMatrix",
    "SVector",
    "RowSVector",
    "OMatrix",
    "Array",
    "Array1",
    "Array2",
    "Array3",
    "ArrayD",
    "ArrayView",
    "ArrayView1",
    "ArrayView2",
    "ArrayViewD",
];

const ITERATOR_ADAPTORS: &[&str] = &[
    "map",
    "filter",
    "fold",
    "for_each",
    "filter_map",
    "flat_map",
    "any",
    "all",
    "collect",
    "product",
    "take",
    "skip",
    "chain",
    "windows",
    "chunks",
    "scan",
    "reduce",
    "max_by",
    "min_by",
    "position",
    "find",
    "rev",
    "zip",
    "enumerate",
    "step_by",
    "iter_mut",
    "into_iter",
    "iter",
];

/// Whether `ident` in a pattern is a binding (lowercase) rather than a constant or a unit
/// variant (uppercase, as Rust style has them).
fn is_binding_name(ident: &syn::Ident) -> bool {
    ident.to_string().chars().next().is_some_and(|c| c.is_lowercase() || c == '_')
}

/// Whether a pattern binds any name.
pub(super) fn pattern_binds(p: &Pat) -> bool {
    match p {
        Pat::Ident(pi) => is_binding_name(&pi.ident) || pi.subpat.is_some(),
        Pat::Or(o) => o.cases.iter().any(pattern_binds),
        Pat::Paren(pp) => pattern_binds(&pp.pat),
        Pat::Reference(r) => pattern_binds(&r.pat),
        Pat::Slice(s) => s.elems.iter().any(pattern_binds),
        Pat::Struct(s) => s.fields.iter().any(|f| pattern_binds(&f.pat)),
        Pat::Tuple(t) => t.elems.iter().any(pattern_binds),
        Pat::TupleStruct(t) => t.elems.iter().any(pattern_binds),
        Pat::Type(t) => pattern_binds(&t.pat),
        _ => false,
    }
}

/// Methods of the supported subset that never write their receiver (float and integer
/// methods, buffer reads): a call of one in a later operand does not make an earlier read of the
/// receiver need a temporary.
fn read_only_method(name: &str) -> bool {
    NUMBER_METHODS.contains(&name)
        || ["sin_cos", "len", "iter", "sum", "to_vec", "clone"].contains(&name)
}

/// Whether `tokens` (an expression) may write the variable `name`: assign or compound-assign
/// to it or through a projection of it (`name = ..`, `name[i] += ..`, `name.f = ..`), borrow it
/// mutably (`&mut name`), or call a method on it (which may take `&mut self`). By tokens, so
/// that every kind of expression and statement inside is seen; a shadowing `let name = ..` is
/// taken for a write too, which only costs a copy. With `passed_on` (`name` is a `&mut`
/// reference), so is `name` passed on bare (`g(name)`, `(name, ..)`), which lends it.
fn may_write(tokens: TokenStream, name: &syn::Ident, passed_on: bool) -> bool {
    may_write_by(tokens, name, passed_on, true)
}

/// [`may_write`], counting method calls on `name` as writes only with `methods`.
fn may_write_by(tokens: TokenStream, name: &syn::Ident, passed_on: bool, methods: bool) -> bool {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let punct =
        |i: usize, c: char| matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) if may_write_by(g.stream(), name, passed_on, methods) => {
                return true;
            }
            TokenTree::Ident(id) if id == name => {
                // A field or path segment of the same name is another thing.
                if i > 0 && (punct(i - 1, '.') || punct(i - 1, ':')) {
                    continue;
                }
                // A `let` binding a new variable of the same name (counted as a write only for
                // operands, where a copy is harmless; a receiver copied would lose the changes
                // of a `&mut self` method).
                let ident_at =
                    |k: usize, w: &str| matches!(tts.get(k), Some(TokenTree::Ident(m)) if m == w);
                if !methods
                    && ((i >= 1 && ident_at(i - 1, "let"))
                        || (i >= 2 && ident_at(i - 1, "mut") && ident_at(i - 2, "let")))
                {
                    // The rest of the block sees the new variable: only the initializer, up
                    // to the `;`, may still write the old one.
                    let end = (i + 1..tts.len()).find(|k| punct(*k, ';')).unwrap_or(tts.len());
                    let init: TokenStream = tts[i + 1..end].iter().cloned().collect();
                    return may_write_by(init, name, passed_on, methods);
                }
                if i >= 2
                    && punct(i - 2, '&')
                    && matches!(&tts[i - 1], TokenTree::Ident(m) if m == "mut")
                {
                    return true;
                }
                // Past the projections: `.field`, `.0`, `[index]`.
                let mut j = i + 1;
                loop {
                    match (tts.get(j), tts.get(j + 1), tts.get(j + 2)) {
                        (Some(TokenTree::Punct(p)), Some(TokenTree::Ident(_)), next)
                            if p.as_char() == '.' =>
                        {
                            if methods
                                && matches!(next, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
                                && !matches!(&tts[j + 1], TokenTree::Ident(m)
                                    if read_only_method(&m.to_string()))
                            {
                                return true; // a method call that may take `&mut self`
                            }
                            j += 2;
                        }
                        (Some(TokenTree::Punct(p)), Some(TokenTree::Literal(_)), _)
                            if p.as_char() == '.' =>
                        {
                            j += 2
                        }
                        (Some(TokenTree::Group(g)), _, _)
                            if g.delimiter() == Delimiter::Bracket =>
                        {
                            j += 1
                        }
                        _ => break,
                    }
                }
                // Passed on bare: the last thing in its group, or followed by `,`.
                if passed_on
                    && j == i + 1
                    && !(i > 0 && punct(i - 1, '*'))
                    && (tts.get(j).is_none() || punct(j, ','))
                {
                    return true;
                }
                // An assignment operator: `=`, or `op=`, but not `==`, `<=`, `>=`, `!=`.
                let mut op = String::new();
                while let Some(TokenTree::Punct(p)) = tts.get(j) {
                    op.push(p.as_char());
                    j += 1;
                    if p.spacing() == Spacing::Alone {
                        break;
                    }
                }
                if matches!(
                    op.as_str(),
                    "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "^=" | "&=" | "|=" | "<<=" | ">>="
                ) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Removes blocks unreachable from the entry and renumbers the rest (invariant 6).
pub(crate) fn remove_unreachable_blocks(body: &mut Body) {
    let n = body.blocks.len();
    let mut seen = vec![false; n];
    let mut stack = vec![BlockId::ENTRY];
    while let Some(b) = stack.pop() {
        if b.index() >= n || seen[b.index()] {
            continue;
        }
        seen[b.index()] = true;
        stack.extend(body.blocks[b.index()].terminator.kind.successors());
    }
    let mut map = vec![None; n];
    let mut next = 0u32;
    for (i, s) in seen.iter().enumerate() {
        if *s {
            map[i] = Some(BlockId(next));
            next += 1;
        }
    }
    let remap = |b: BlockId| map[b.index()].unwrap_or(b);
    let blocks = std::mem::take(&mut body.blocks);
    body.blocks = blocks
        .into_iter()
        .enumerate()
        .filter(|(i, _)| seen[*i])
        .map(|(_, mut b)| {
            b.terminator.kind = match b.terminator.kind {
                TerminatorKind::Goto(t) => TerminatorKind::Goto(remap(t)),
                TerminatorKind::Branch { cond, then, otherwise } => {
                    TerminatorKind::Branch { cond, then: remap(then), otherwise: remap(otherwise) }
                }
                other => other,
            };
            b
        })
        .collect();
}

/// The names a pattern's tokens bind (lowercase identifiers that are not path segments, field
/// names of a struct pattern or `mut` / `ref`).
fn collect_pattern_names(tokens: TokenStream, names: &mut Vec<String>) {
    use proc_macro2::TokenTree as Tt;
    let tts: Vec<Tt> = tokens.into_iter().collect();
    let punct = |k: usize, c: char| matches!(tts.get(k), Some(Tt::Punct(p)) if p.as_char() == c);
    for (k, tt) in tts.iter().enumerate() {
        match tt {
            Tt::Ident(i) => {
                let name = i.to_string();
                let binding = name.starts_with(|c: char| c.is_lowercase() || c == '_')
                    && name != "mut"
                    && name != "ref";
                // Path segments (`a::b`) and field names (`P { x: a }`) bind nothing.
                let before_colon = punct(k + 1, ':');
                let after_path = k > 1 && punct(k - 1, ':') && punct(k - 2, ':');
                if binding && !before_colon && !after_path {
                    names.push(name);
                }
            }
            Tt::Group(g) => collect_pattern_names(g.stream(), names),
            _ => {}
        }
    }
}

/// Whether the identifier at `tts[k]` is changed there: borrowed `&mut`, or assigned (`=` or a
/// compound assignment) directly or through projections (`.f`, `.0`, `[i]`), or dereferenced
/// and assigned (`*x = ..`).
fn writes_at(tts: &[proc_macro2::TokenTree], k: usize) -> bool {
    use proc_macro2::{Delimiter, Spacing, TokenTree as Tt};
    let punct = |i: usize, c: char| matches!(tts.get(i), Some(Tt::Punct(p)) if p.as_char() == c);
    if k >= 2 && punct(k - 2, '&') && matches!(&tts[k - 1], Tt::Ident(m) if m == "mut") {
        return true;
    }
    let mut j = k + 1;
    loop {
        match (tts.get(j), tts.get(j + 1)) {
            (Some(Tt::Punct(p)), Some(Tt::Ident(_) | Tt::Literal(_)))
                if p.as_char() == '.'
                    && !matches!(tts.get(j + 2), Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis) =>
            {
                j += 2
            }
            (Some(Tt::Group(g)), _) if g.delimiter() == Delimiter::Bracket => j += 1,
            _ => break,
        }
    }
    let mut op = String::new();
    while let Some(Tt::Punct(p)) = tts.get(j) {
        op.push(p.as_char());
        j += 1;
        if p.spacing() == Spacing::Alone {
            break;
        }
    }
    matches!(
        op.as_str(),
        "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "^=" | "&=" | "|=" | "<<=" | ">>="
    )
}

/// Where `tokens` (an assertion's) leave the code around them: `return`, `?`, a labelled
/// `break` or `continue`, or an unlabelled one with no loop of their own before it (`looped`:
/// a loop keyword seen so far).
fn leaves(tokens: TokenStream, looped: &mut bool) -> Option<Span> {
    use proc_macro2::TokenTree as Tt;
    let tts: Vec<Tt> = tokens.into_iter().collect();
    for (k, tt) in tts.iter().enumerate() {
        match tt {
            Tt::Ident(i) if i == "return" => return Some(i.span()),
            Tt::Ident(i) if i == "loop" || i == "while" || i == "for" => *looped = true,
            Tt::Ident(i) if i == "break" || i == "continue" => {
                let labelled = matches!(tts.get(k + 1), Some(Tt::Punct(p)) if p.as_char() == '\'');
                if labelled || !*looped {
                    return Some(i.span());
                }
            }
            Tt::Punct(p) if p.as_char() == '?' => return Some(p.span()),
            Tt::Group(g) => {
                if let Some(span) = leaves(g.stream(), looped) {
                    return Some(span);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether an item of a function's body is one the rules repeat: a nested `fn` (differentiated
/// itself), a `const` or a `use`.
fn body_item(item: &syn::Item) -> bool {
    matches!(item, syn::Item::Fn(_) | syn::Item::Const(_) | syn::Item::Use(_))
}

/// The items at the top level of a function's body, as the rules repeat them at the start of
/// theirs: a nested `fn` with `#[differentiable]` added (so that its rules exist where the
/// rules' calls look for them), `const` and `use` items as written.
pub(crate) fn body_items(block: &syn::Block) -> TokenStream {
    let mut out = TokenStream::new();
    for stmt in &block.stmts {
        let Stmt::Item(item) = stmt else { continue };
        match item {
            syn::Item::Fn(f) => {
                let marked = f
                    .attrs
                    .iter()
                    .any(|a| a.path().segments.last().is_some_and(|s| s.ident == "differentiable"));
                if marked {
                    out.extend(quote!(#f));
                } else {
                    out.extend(quote!(#[::mooncake_runtime::differentiable] #f));
                }
            }
            // A `use` the rules may not need (`use std::mem;` of a `mem::swap` they write out).
            syn::Item::Use(u) => out.extend(quote!(#[allow(unused_imports)] #u)),
            item if body_item(item) => out.extend(quote!(#item)),
            _ => {}
        }
    }
    out
}

/// A float literal, possibly negated and in parentheses (`2.5`, `-1e-3`, `(0.5)`).
fn is_float_literal(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(l) => matches!(l.lit, syn::Lit::Float(_)),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => is_float_literal(&u.expr),
        syn::Expr::Paren(p) => is_float_literal(&p.expr),
        _ => false,
    }
}

/// The call `func(args)` standing for the nested macro's `call` (its span and parentheses).
fn nested_call(
    func: &syn::Path,
    call: &syn::ExprCall,
    args: syn::punctuated::Punctuated<Expr, syn::Token![,]>,
) -> syn::ExprCall {
    let span = call.span();
    syn::ExprCall {
        attrs: Vec::new(),
        func: Box::new(syn::parse_quote_spanned!(span=> #func)),
        paren_token: call.paren_token,
        args,
    }
}

/// Capitalised names that are not types of user values (see [`Lower::user_value_like`]).
const NOT_USER_VALUES: &[&str] = &[
    "Some", "Ok", "Err", "None", "String", "Vec", "Option", "Result", "Box", "Rc", "Fwd", "Dual",
    "Lanes",
];

/// The method of the operator trait of an arithmetic operation (`Add::add`, ..).
fn op_method(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        _ => "div",
    }
}

/// The slices of `[a, b, ..].concat()` (also behind `&`).
fn concat_parts(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Array(a) => Some(a.elems.iter().cloned().collect()),
        Expr::Reference(r) if r.mutability.is_none() => concat_parts(&r.expr),
        Expr::Paren(p) => concat_parts(&p.expr),
        _ => None,
    }
}

/// `x.iter().skip(k)` as `x[k..].iter()`, `x.iter().take(k)` as `x[..k].iter()` (and the same
/// of `iter_mut`): a side of a `zip` in a `for` loop's source, whose window is then the
/// sub-slice's.
fn sub_slice_side(e: &Expr) -> Option<Expr> {
    let Expr::MethodCall(w) = e else { return None };
    let Expr::MethodCall(it) = &*w.receiver else { return None };
    if w.args.len() != 1 || !it.args.is_empty() {
        return None;
    }
    let (recv, k, method) = (&it.receiver, &w.args[0], &it.method);
    let range: Expr = match w.method.to_string().as_str() {
        "skip" => syn::parse_quote_spanned!(w.method.span()=> #k..),
        "take" => syn::parse_quote_spanned!(w.method.span()=> ..#k),
        _ => return None,
    };
    match method.to_string().as_str() {
        "iter" => Some(syn::parse_quote_spanned!(w.method.span()=> #recv[#range].iter())),
        "iter_mut" => Some(syn::parse_quote_spanned!(w.method.span()=> #recv[#range].iter_mut())),
        _ => None,
    }
}

/// `usize::min(a, b)` / `i32::pow(2, 3)` of an integer type's method with a rule, and
/// `std::cmp::min(a, b)` / `cmp::max(a, b)`, as the method call on the first argument; an
/// integer literal first argument takes the path's type as its suffix.
fn integer_method_by_path(func: &syn::Path, c: &syn::ExprCall) -> Option<syn::ExprMethodCall> {
    let names: Vec<String> = func.segments.iter().map(|s| s.ident.to_string()).collect();
    let (first, rest) =
        c.args.iter().collect::<Vec<_>>().split_first().map(|(f, r)| (*f, r.to_vec()))?;
    let (method, suffix) = match names.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [ty, m]
            if super::reverse::INT_TYPES.contains(ty)
                && func.segments.iter().all(|s| s.arguments.is_none())
                && NUMBER_METHODS.contains(m) =>
        {
            (func.segments[1].ident.clone(), Some(ty.to_string()))
        }
        [.., "cmp", m @ ("min" | "max")] if c.args.len() == 2 => {
            (syn::Ident::new(m, func.segments.last()?.ident.span()), None)
        }
        _ => return None,
    };
    let receiver: Expr = match (first, &suffix) {
        (Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }), Some(ty))
            if i.suffix().is_empty() =>
        {
            let lit = syn::LitInt::new(&format!("{}{ty}", i.base10_digits()), i.span());
            syn::parse_quote_spanned!(i.span()=> #lit)
        }
        (e, _) => e.clone(),
    };
    Some(syn::ExprMethodCall {
        attrs: Vec::new(),
        receiver: Box::new(receiver),
        dot_token: Default::default(),
        method,
        turbofish: None,
        paren_token: c.paren_token,
        args: rest.into_iter().cloned().collect(),
    })
}

/// `let p: [T; N] = s.try_into().unwrap();` (or `.expect(..)`) of a slice `s` named by a path,
/// with `N` a literal of at most 16: `let p: [T; N] = { assert_eq!(s.len(), N, ..); [s[0], ..,
/// s[N - 1]] };`, the array of the slice's elements after the check the conversion makes.
fn slice_to_array(local: &syn::Local) -> Option<syn::Local> {
    let Pat::Type(pt) = &local.pat else { return None };
    let syn::Type::Array(arr) = &*pt.ty else { return None };
    let n: usize = match &arr.len {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse().ok()?,
        _ => return None,
    };
    if n == 0 || n > 16 {
        return None;
    }
    let init = local.init.as_ref().filter(|i| i.diverge.is_none())?;
    let Expr::MethodCall(un) = &*init.expr else { return None };
    if !(un.method == "unwrap" && un.args.is_empty() || un.method == "expect" && un.args.len() == 1)
    {
        return None;
    }
    let Expr::MethodCall(ti) = &*un.receiver else { return None };
    if ti.method != "try_into" || !ti.args.is_empty() {
        return None;
    }
    let span = ti.method.span();
    // The slice: a name (`c`), or a range of a buffer (`x[a..b]`, `&x[a..]`, which a loop over
    // `chunks_exact` reads its chunk as).
    let mut s = &*ti.receiver;
    loop {
        s = match s {
            Expr::Reference(r) if r.mutability.is_none() => &r.expr,
            Expr::Paren(p) => &p.expr,
            _ => break,
        };
    }
    let (elems, len): (Vec<Expr>, Expr) = match s {
        Expr::Path(p) if p.path.get_ident().is_some() => (
            (0..n).map(|k| syn::parse_quote_spanned!(span=> #p[#k])).collect(),
            syn::parse_quote_spanned!(span=> #p.len()),
        ),
        Expr::Index(ix) => {
            let Expr::Range(r) = &*ix.index else { return None };
            let base = &ix.expr;
            let start: Expr = match &r.start {
                Some(a) => (**a).clone(),
                None => syn::parse_quote_spanned!(span=> 0usize),
            };
            let len: Expr = match (&r.end, &r.limits) {
                (Some(b), syn::RangeLimits::HalfOpen(_)) => {
                    syn::parse_quote_spanned!(span=> (#b) - (#start))
                }
                (Some(b), syn::RangeLimits::Closed(_)) => {
                    syn::parse_quote_spanned!(span=> (#b) + 1 - (#start))
                }
                (None, _) => syn::parse_quote_spanned!(span=> #base.len() - (#start)),
            };
            ((0..n).map(|k| syn::parse_quote_spanned!(span=> #base[(#start) + #k])).collect(), len)
        }
        _ => return None,
    };
    let value: Expr = syn::parse_quote_spanned!(span=> {
        ::core::assert_eq!(#len, #n, "could not convert slice to array: lengths differ");
        [#(#elems),*]
    });
    let mut out = local.clone();
    out.init =
        Some(syn::LocalInit { eq_token: init.eq_token, expr: Box::new(value), diverge: None });
    Some(out)
}

/// Whether `e` is `Default::default()` (or `std::default::Default::default()`).
fn is_default_call(e: &Expr) -> bool {
    matches!(strip_parens(e), Expr::Call(c) if c.args.is_empty()
        && matches!(&*c.func, Expr::Path(p) if p.qself.is_none()
            && p.path.segments.len() >= 2
            && p.path.segments.iter().rev().take(2).map(|s| s.ident.to_string())
                .eq(["default".to_string(), "Default".to_string()])))
}

/// Whether a `for` loop's iterable lends each item of a buffer as it is, shared (`&x`,
/// `&x[a..]`, `x.iter()`, `x[a..].iter()`): a tuple pattern then destructures the item. (Through
/// `enumerate` or `zip` the items are tuples of references, which the chains' lowering binds.)
fn items_lent(e: &Expr) -> bool {
    match e {
        Expr::Reference(r) => r.mutability.is_none(),
        Expr::MethodCall(m) => m.method == "iter" && m.args.is_empty(),
        Expr::Paren(p) => items_lent(&p.expr),
        _ => false,
    }
}
