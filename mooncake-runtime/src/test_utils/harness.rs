//! The checks behind `test_rule!`.

use super::slots::SlotValues;
use crate::dual::{CoDual, Dual};
use crate::rng::TestRng;
use crate::tangent::{FData, Primal, TangentSpace, close};
use std::fmt::{self, Debug};

/// How an argument is passed to the function under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// By value: `f(x)`.
    Val,
    /// By shared reference: `f(&x)`.
    Ref,
    /// By mutable reference: `f(&mut x)`.
    Mut,
}

/// Tolerances, seed and modes of a rule test.
#[derive(Clone, Debug)]
pub struct Config {
    /// Relative tolerance of the finite-difference checks (Mooncake's default, `1e-3`).
    pub rtol: f64,
    /// Absolute tolerance of the finite-difference checks (Mooncake's default, `1e-3`).
    pub atol: f64,
    /// Relative and absolute tolerance of the forward/reverse agreement check.
    pub dot_tol: f64,
    /// Seed of the random tangents and cotangents.
    pub seed: u64,
    /// The finite-difference step sizes to try; a check passes if any of them agrees.
    pub steps: Vec<f64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rtol: 1e-3,
            atol: 1e-3,
            dot_tol: 1e-6,
            seed: 1,
            steps: vec![3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5, 1e-6],
        }
    }
}

/// Which check of a rule test failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// A rule's primal output differs from the primal function's.
    PrimalOutput,
    /// An argument's state after a rule differs from its state after the primal function.
    ArgumentState,
    /// The primal function produced a non-finite output, so derivatives cannot be checked.
    NonFinitePrimal,
    /// The forward rule disagrees with finite differences.
    ForwardVsFiniteDifferences,
    /// The reverse rule disagrees with finite differences.
    ReverseVsFiniteDifferences,
    /// The forward and reverse rules disagree (`<ȳ, J ẋ> != <J^T ȳ, ẋ>`).
    ForwardVsReverse,
    /// An argument passed by `&mut` is not back to its value on entry after the pullback.
    StateNotRestored,
}

impl Check {
    fn describe(self) -> &'static str {
        match self {
            Check::PrimalOutput => "the rule's primal output differs from the primal function's",
            Check::ArgumentState => {
                "an argument's state after the rule differs from its state after the primal function"
            }
            Check::NonFinitePrimal => "the primal function's output is not finite at this input",
            Check::ForwardVsFiniteDifferences => {
                "the forward rule disagrees with finite differences"
            }
            Check::ReverseVsFiniteDifferences => {
                "the reverse rule disagrees with finite differences"
            }
            Check::ForwardVsReverse => {
                "the forward and reverse rules disagree (<ȳ, J ẋ> != <J^T ȳ, ẋ>)"
            }
            Check::StateNotRestored => {
                "an argument passed by `&mut` is not restored to its value on entry after the pullback"
            }
        }
    }
}

/// A failed rule test: which check, for which argument, with the numbers.
#[derive(Clone, Debug)]
pub struct RuleTestFailure {
    /// The call under test, as written.
    pub call: String,
    /// Which check failed.
    pub check: Check,
    /// The argument concerned, as written in the call, if the check is about one.
    pub argument: Option<String>,
    /// The numbers.
    pub details: String,
}

impl fmt::Display for RuleTestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule test of `{}` failed: {}", self.call, self.check.describe())?;
        if let Some(arg) = &self.argument {
            write!(f, ", for argument `{arg}`")?;
        }
        write!(f, ".\n{}", self.details)
    }
}

impl std::error::Error for RuleTestFailure {}

/// A rule test: the values of the arguments, how each is passed, and the configuration.
/// `test_rule!` builds one and calls [`RuleTest::run`]; use it directly to test rules whose
/// calls the macro cannot write.
#[derive(Clone, Debug)]
pub struct RuleTest<V> {
    call: String,
    values: V,
    kinds: Vec<ArgKind>,
    names: Vec<String>,
    config: Config,
}

type NoFrule<V, R> =
    fn(&mut V, &mut <V as SlotValues>::Tangents) -> Dual<R, <R as Primal>::Tangent>;
type NoPullback<V, R> = fn(<R as Primal>::RData, &mut <V as SlotValues>::Tangents);
type NoRrule<V, R> = fn(
    &V,
    &<V as SlotValues>::Handles,
    &<V as SlotValues>::Shadows,
    &<V as SlotValues>::FDatas,
) -> (CoDual<R, <R as Primal>::FData>, NoPullback<V, R>);

struct Failure {
    check: Check,
    slot: Option<usize>,
    details: String,
}

type Checked<T> = Result<T, Failure>;

impl<V: SlotValues> RuleTest<V> {
    /// A test of `call` (for messages) over `values`, one per slot, passed as `kinds` say and
    /// named `names` in messages.
    ///
    /// # Panics
    /// If `kinds` or `names` does not have one entry per slot.
    pub fn new(call: &str, values: V, kinds: &[ArgKind], names: &[&str]) -> Self {
        assert_eq!(kinds.len(), V::LEN, "mooncake: RuleTest::new needs one ArgKind per slot");
        assert_eq!(names.len(), V::LEN, "mooncake: RuleTest::new needs one name per slot");
        RuleTest {
            call: call.to_owned(),
            values,
            kinds: kinds.to_vec(),
            names: names.iter().map(|s| (*s).to_owned()).collect(),
            config: Config::default(),
        }
    }

    /// Replaces the configuration.
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    fn fail(&self, f: Failure) -> RuleTestFailure {
        RuleTestFailure {
            call: self.call.clone(),
            check: f.check,
            argument: f.slot.map(|k| self.names[k].clone()),
            details: f.details,
        }
    }

    /// Checks a forward rule and a reverse rule against the primal, finite differences and each
    /// other.
    ///
    /// * `primal(values)` calls the function under test on the slots.
    /// * `frule(values, tangents)` calls the forward rule, each argument a `Dual` of a slot and
    ///   its tangent (mutated in place for `&mut` arguments).
    /// * `rrule(values, handles, shadows, fdatas)` calls the reverse rule, each argument a
    ///   `CoDual` built from its slot (by value), the slot and its shadow (`&`), or the slot's
    ///   handle and shadow (`&mut`); it returns the output `CoDual` and a pullback that takes
    ///   the output's rdata and adds the gradient carried by by-value arguments' rdata into
    ///   the tangents it is given.
    pub fn run<R, P, F, RR, PB>(
        &self,
        mut primal: P,
        mut frule: F,
        mut rrule: RR,
    ) -> Result<(), RuleTestFailure>
    where
        R: Primal + Debug,
        P: FnMut(&mut V) -> R,
        F: FnMut(&mut V, &mut V::Tangents) -> Dual<R, R::Tangent>,
        RR: FnMut(&V, &V::Handles, &V::Shadows, &V::FDatas) -> (CoDual<R, R::FData>, PB),
        PB: FnOnce(R::RData, &mut V::Tangents),
    {
        self.run_inner(&mut primal, Some(&mut frule), Some(&mut rrule)).map_err(|f| self.fail(f))
    }

    /// Checks a forward rule only (see [`RuleTest::run`]).
    pub fn run_forward<R, P, F>(&self, mut primal: P, mut frule: F) -> Result<(), RuleTestFailure>
    where
        R: Primal + Debug,
        P: FnMut(&mut V) -> R,
        F: FnMut(&mut V, &mut V::Tangents) -> Dual<R, R::Tangent>,
    {
        self.run_inner(&mut primal, Some(&mut frule), None::<&mut NoRrule<V, R>>)
            .map_err(|f| self.fail(f))
    }

    /// Checks a reverse rule only (see [`RuleTest::run`]).
    pub fn run_reverse<R, P, RR, PB>(
        &self,
        mut primal: P,
        mut rrule: RR,
    ) -> Result<(), RuleTestFailure>
    where
        R: Primal + Debug,
        P: FnMut(&mut V) -> R,
        RR: FnMut(&V, &V::Handles, &V::Shadows, &V::FDatas) -> (CoDual<R, R::FData>, PB),
        PB: FnOnce(R::RData, &mut V::Tangents),
    {
        self.run_inner(&mut primal, None::<&mut NoFrule<V, R>>, Some(&mut rrule))
            .map_err(|f| self.fail(f))
    }

    fn run_inner<R, P, F, RR, PB>(
        &self,
        primal: &mut P,
        frule: Option<&mut F>,
        rrule: Option<&mut RR>,
    ) -> Checked<()>
    where
        R: Primal + Debug,
        P: FnMut(&mut V) -> R,
        F: FnMut(&mut V, &mut V::Tangents) -> Dual<R, R::Tangent>,
        RR: FnMut(&V, &V::Handles, &V::Shadows, &V::FDatas) -> (CoDual<R, R::FData>, PB),
        PB: FnOnce(R::RData, &mut V::Tangents),
    {
        let cfg = &self.config;
        let mut rng = TestRng::seed_from_u64(cfg.seed);
        let x0 = &self.values;
        let mut s_p = x0.clone();
        let y_p = primal(&mut s_p);
        if !y_p.approx_eq(&y_p, 0.0, 0.0) {
            return Err(Failure {
                check: Check::NonFinitePrimal,
                slot: None,
                details: format!("primal output: {y_p:?}"),
            });
        }

        // Random direction ẋ, and random cotangents ȳ of the output and of every slot's state
        // after the call (shaped like the state after the primal: a `push` grows it).
        let xdot = x0.random_tangents(&mut rng);
        let ybar_out = y_p.random_tangent(&mut rng);
        let ybar_state = s_p.random_tangents(&mut rng);
        let differentiable: Vec<bool> =
            (0..V::LEN).map(|k| V::inner(&xdot, &xdot, k) > 0.0).collect();

        // <ȳ, ẏ> for an output tangent and the slots' tangents after a forward rule.
        let pair = |out: &R::Tangent, state: &V::Tangents| -> f64 {
            ybar_out.inner(out) + (0..V::LEN).map(|j| V::inner(&ybar_state, state, j)).sum::<f64>()
        };

        // Central differences of <ȳ, F(x)> along ẋ restricted to slot k, for each step size.
        let mut fd = |k: usize| -> Vec<(f64, f64)> {
            let dir = V::restrict(&xdot, k);
            cfg.steps
                .iter()
                .map(|&h| {
                    let mut sp = x0.clone();
                    sp.perturb(&dir, h);
                    let mut sm = x0.clone();
                    sm.perturb(&dir, -h);
                    let yp = primal(&mut sp);
                    let ym = primal(&mut sm);
                    let mut total = R::inner_difference(&ybar_out, &yp, &ym);
                    // The state of a slot the call cannot change is left out (see `identity`).
                    for j in (0..V::LEN).filter(|j| self.kinds[*j] == ArgKind::Mut) {
                        total += V::inner_difference(&ybar_state, &sp, &sm, j);
                    }
                    (h, total / (2.0 * h))
                })
                .collect()
        };
        let fds: Vec<Vec<(f64, f64)>> =
            (0..V::LEN).map(|k| if differentiable[k] { fd(k) } else { Vec::new() }).collect();

        // A slot passed by value or by `&` is not changed by the call: the cotangent of its
        // state pairs with its own tangent, `<ȳ_k, ẋ_k>`, on both sides of every check. It stays
        // in (it is what shows a pullback that overwrites a shadow rather than adding into it),
        // but the comparisons are made without it, and the tolerances leave it out: as large as
        // the rest, it hid a 5% error in the derivative of the output (`x³`'s rule at 0.7).
        let identity = |k: usize| -> f64 {
            if self.kinds[k] == ArgKind::Mut { 0.0 } else { V::inner(&ybar_state, &xdot, k) }
        };
        // What rounding leaves of it once taken out of a rule's inner products: a bound of
        // `Σ |ȳ_i ẋ_i|` (Cauchy-Schwarz) at a relative 1e-12, thousands of ulps and far below
        // any error of a derivative.
        let identity_rounding = |k: usize| -> f64 {
            if self.kinds[k] == ArgKind::Mut {
                0.0
            } else {
                1e-12 * (V::inner(&ybar_state, &ybar_state, k) * V::inner(&xdot, &xdot, k)).sqrt()
            }
        };
        // The absolute tolerance is relative to the size of the directions: `<ȳ, J ẋ>` scales
        // with `|ȳ| |ẋ|`, and a small random draw must not hide a wrong derivative.
        let ybar_norm = (ybar_out.inner(&ybar_out)
            + (0..V::LEN)
                .filter(|j| self.kinds[*j] == ArgKind::Mut)
                .map(|j| V::inner(&ybar_state, &ybar_state, j))
                .sum::<f64>())
        .sqrt();
        let scale =
            |k: usize| (ybar_norm * V::inner(&xdot, &xdot, k).sqrt()).max(f64::MIN_POSITIVE);
        let agrees = |k: usize, estimates: &[(f64, f64)], ad: f64| {
            let (id, tol) = (identity(k), cfg.atol * scale(k) + identity_rounding(k));
            estimates.iter().any(|&(_, e)| close(e, ad - id, cfg.rtol, tol))
        };
        let show = |estimates: &[(f64, f64)]| {
            estimates
                .iter()
                .map(|(h, e)| format!("{e:.9e} (h = {h:e})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let tolerances = |k: usize| {
            format!(
                "rtol = {:e}, atol = {:e} x |ȳ| |ẋ| = {:e}",
                cfg.rtol,
                cfg.atol,
                cfg.atol * scale(k)
            )
        };

        let mut forward_total = None;
        if let Some(frule) = frule {
            // Full direction: primal agreement, and <ȳ, J ẋ> for the dot-product check.
            let mut s = x0.clone();
            let mut t = xdot.clone();
            let d = frule(&mut s, &mut t);
            self.check_primal("forward", &d.primal, &y_p, &s, &s_p)?;
            forward_total = Some(pair(&d.tangent, &t));
            for k in (0..V::LEN).filter(|&k| differentiable[k]) {
                let mut s = x0.clone();
                let mut t = V::restrict(&xdot, k);
                let d = frule(&mut s, &mut t);
                let ad = pair(&d.tangent, &t);
                if !agrees(k, &fds[k], ad) {
                    let ad = ad - identity(k);
                    return Err(Failure {
                        check: Check::ForwardVsFiniteDifferences,
                        slot: Some(k),
                        details: format!(
                            "<ȳ, J ẋ> along ẋ = {} at {}:\n  forward rule:        {ad:.9e}\n  finite differences:  {}\n  ({})",
                            V::debug_tangent(&xdot, k),
                            x0.debug(k),
                            show(&fds[k]),
                            tolerances(k)
                        ),
                    });
                }
            }
        }

        if let Some(rrule) = rrule {
            let s = x0.clone();
            let handles = s.to_handles();
            let shadows = s.zero_shadows();
            let fdatas = s.zero_fdatas();
            let (out, pullback) = rrule(&s, &handles, &shadows, &fdatas);
            let mut s_fwd = x0.clone();
            s_fwd.load_handles(&handles);
            self.check_primal("reverse", &out.primal, &y_p, &s_fwd, &s_p)?;

            // Seed: the output's cotangent goes in as its fdata (in place) and rdata (to the
            // pullback); each by-reference slot's cotangent goes into its shadow.
            let by_reference: Vec<bool> = self.kinds.iter().map(|k| *k != ArgKind::Val).collect();
            V::seed_shadows(&shadows, &ybar_state, &by_reference);
            let (out_fdata, out_rdata) = R::split_tangent(ybar_out.clone());
            out.fdata.increment_from(&out_fdata);
            let mut grads = x0.zero_tangents();
            pullback(out_rdata, &mut grads);

            let mut s_after = x0.clone();
            s_after.load_handles(&handles);
            for k in 0..V::LEN {
                if self.kinds[k] == ArgKind::Mut && !V::approx_eq(&s_after, x0, k, 1e-12, 1e-12) {
                    return Err(Failure {
                        check: Check::StateNotRestored,
                        slot: Some(k),
                        details: format!(
                            "  on entry:            {}\n  after the pullback:  {}",
                            x0.debug(k),
                            s_after.debug(k)
                        ),
                    });
                }
            }

            let shadow_grads = V::shadow_tangents(&shadows);
            let mut reverse_total = 0.0;
            for k in 0..V::LEN {
                if self.kinds[k] == ArgKind::Val {
                    // A by-value argument is not changed by the call: the identity part of the
                    // adjoint passes its cotangent straight through.
                    V::increment(&mut grads, &ybar_state, k);
                } else {
                    V::increment(&mut grads, &shadow_grads, k);
                }
                if !differentiable[k] {
                    continue;
                }
                let ad = V::inner(&grads, &xdot, k);
                reverse_total += ad;
                if !agrees(k, &fds[k], ad) {
                    let ad = ad - identity(k);
                    return Err(Failure {
                        check: Check::ReverseVsFiniteDifferences,
                        slot: Some(k),
                        details: format!(
                            "<J^T ȳ, ẋ> along ẋ = {} at {}:\n  reverse rule:        {ad:.9e} (gradient {})\n  finite differences:  {}\n  ({})",
                            V::debug_tangent(&xdot, k),
                            x0.debug(k),
                            V::debug_tangent(&grads, k),
                            show(&fds[k]),
                            tolerances(k)
                        ),
                    });
                }
            }

            let id: f64 = (0..V::LEN).filter(|&k| differentiable[k]).map(identity).sum();
            if let Some(fwd) = forward_total
                && !close(fwd - id, reverse_total - id, cfg.dot_tol, cfg.dot_tol)
            {
                {
                    return Err(Failure {
                        check: Check::ForwardVsReverse,
                        slot: None,
                        details: format!(
                            "  forward  <ȳ, J ẋ>:    {fwd:.12e}\n  reverse  <J^T ȳ, ẋ>:  {reverse_total:.12e}\n  (tolerance {:e})",
                            cfg.dot_tol
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    fn check_primal<R: Primal + Debug>(
        &self,
        mode: &str,
        y: &R,
        y_p: &R,
        state: &V,
        state_p: &V,
    ) -> Checked<()> {
        if !y.approx_eq(y_p, 1e-9, 1e-12) {
            return Err(Failure {
                check: Check::PrimalOutput,
                slot: None,
                details: format!("  {mode} rule:     {y:?}\n  primal function:  {y_p:?}"),
            });
        }
        for k in 0..V::LEN {
            if !V::approx_eq(state, state_p, k, 1e-9, 1e-12) {
                return Err(Failure {
                    check: Check::ArgumentState,
                    slot: Some(k),
                    details: format!(
                        "  after the {mode} rule:      {}\n  after the primal function:  {}",
                        state.debug(k),
                        state_p.debug(k)
                    ),
                });
            }
        }
        Ok(())
    }
}
