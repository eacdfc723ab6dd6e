//! Every hand-written gradient against central finite differences and against the derived
//! gradient (`value_and_gradient!`, plain and prepared, twice on one cache), every derived rule through `test_rule!` (both modes against
//! finite differences and each other), and every peer's gradient against the hand-written one.
//! Sizes are small so that `cargo test --workspace` stays fast; the bench repeats the
//! agreement checks at the benchmarked sizes before timing.

use super::peers::{self, Objective};
use super::*;
use mooncake_runtime::prelude::*;
use mooncake_runtime::test_utils::check_hvp;
use problems::gmm::GmmWorkspace;

/// Agreement of the derived gradient with the hand-written one (rounding only).
const EXACT: f64 = 1e-10;
/// Agreement of finite differences with the hand-written gradient.
const FD: f64 = 1e-6;

/// Checks the three peers on `f` against the hand-written `(value, gradient)`.
fn check_peers<O: Objective>(name: &str, f: &O, x: &[f64], hand: (f64, &[f64])) {
    let list = easy_ml::differentiation::WengertList::new();
    let (v, g) = peers::easy_ml_gradient(&list, f, x);
    assert_agrees(&format!("{name}: easy-ml"), (v, &g), hand, EXACT);
    // A second call on the same, cleared list gives the same result.
    let (v, g) = peers::easy_ml_gradient(&list, f, x);
    assert_agrees(&format!("{name}: easy-ml, list reused"), (v, &g), hand, EXACT);
    let tape = reverse::Tape::new();
    let (v, g) = peers::reverse_gradient(&tape, f, x);
    assert_agrees(&format!("{name}: reverse"), (v, &g), hand, EXACT);
    let (v, g) = peers::reverse_gradient(&tape, f, x);
    assert_agrees(&format!("{name}: reverse, tape reused"), (v, &g), hand, EXACT);
    let (v, g) = peers::num_dual_gradient(f, x);
    assert_agrees(&format!("{name}: num-dual"), (v, &g), hand, EXACT);
}

/// Checks the hand-written `(value, gradient)` against the primal and central differences.
fn check_hand(name: &str, primal: impl Fn(&[f64]) -> f64, x: &[f64], hand: (f64, &[f64])) {
    let fd = central_differences(&primal, x, 1e-6);
    assert_agrees(&format!("{name}: hand vs finite differences"), (primal(x), &fd), hand, FD);
}

#[test]
fn sums() {
    let x = inputs(40, 1);
    let mut g = vec![0.0; x.len()];
    for (name, primal) in
        [("sum_builtin", sum_builtin as fn(&[f64]) -> f64), ("sum_loop", sum_loop)]
    {
        let v = sum_gradient(&x, &mut g);
        check_hand(name, primal, &x, (v, &g));
    }
    test_rule!(sum_builtin(&x));
    test_rule!(sum_loop(&x));
    let v = sum_gradient(&x, &mut g);
    let (v1, (g1,)) = value_and_gradient!(sum_builtin(&x));
    assert_agrees("sum_builtin: derived", (v1, &g1), (v, &g), EXACT);
    let (v2, (g2,)) = value_and_gradient!(sum_loop(&x));
    assert_agrees("sum_loop: derived", (v2, &g2), (v, &g), EXACT);
    let (mut c1, mut c2) = (GradientCache::new(), GradientCache::new());
    for _ in 0..2 {
        let (p1, (q1,)) = value_and_gradient!(sum_builtin(&x), cache = &mut c1);
        assert_agrees("sum_builtin: prepared", (p1, q1), (v, &g), EXACT);
        let (p2, (q2,)) = value_and_gradient!(sum_loop(&x), cache = &mut c2);
        assert_agrees("sum_loop: prepared", (p2, q2), (v, &g), EXACT);
    }
    check_peers("sum", &peers::Sum, &x, (v, &g));
}

#[test]
fn sum_sins() {
    let x = inputs(40, 2);
    let mut g = vec![0.0; x.len()];
    let v = sum_sin_gradient(&x, &mut g);
    check_hand("sum_sin_iter", sum_sin_iter, &x, (v, &g));
    check_hand("sum_sin_loop", sum_sin_loop, &x, (v, &g));
    check_hand("sum_sin_chain", sum_sin_chain, &x, (v, &g));
    test_rule!(sum_sin_iter(&x));
    test_rule!(sum_sin_chain(&x));
    test_rule!(sum_sin_loop(&x));
    let (v1, (g1,)) = value_and_gradient!(sum_sin_iter(&x));
    assert_agrees("sum_sin_iter: derived", (v1, &g1), (v, &g), EXACT);
    let (v2, (g2,)) = value_and_gradient!(sum_sin_loop(&x));
    assert_agrees("sum_sin_loop: derived", (v2, &g2), (v, &g), EXACT);
    let (mut c1, mut c2) = (GradientCache::new(), GradientCache::new());
    for _ in 0..2 {
        let (p1, (q1,)) = value_and_gradient!(sum_sin_iter(&x), cache = &mut c1);
        assert_agrees("sum_sin_iter: prepared", (p1, q1), (v, &g), EXACT);
        let (p2, (q2,)) = value_and_gradient!(sum_sin_loop(&x), cache = &mut c2);
        assert_agrees("sum_sin_loop: prepared", (p2, q2), (v, &g), EXACT);
    }
    check_peers("sum_sin", &peers::SumSin, &x, (v, &g));
}

#[test]
fn naive_map() {
    let x = inputs(30, 3);
    let mut g = vec![0.0; x.len()];
    let v = naive_map_sin_cos_exp_gradient(&x, &mut g);
    check_hand("naive_map_sin_cos_exp", naive_map_sin_cos_exp, &x, (v, &g));
    test_rule!(naive_map_sin_cos_exp(&x));
    let (dv, (dg,)) = value_and_gradient!(naive_map_sin_cos_exp(&x));
    assert_agrees("naive_map_sin_cos_exp: derived", (dv, &dg), (v, &g), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pg,)) = value_and_gradient!(naive_map_sin_cos_exp(&x), cache = &mut cache);
        assert_agrees("naive_map_sin_cos_exp: prepared", (pv, pg), (v, &g), EXACT);
    }
    check_peers("naive_map_sin_cos_exp", &peers::NaiveMapSinCosExp, &x, (v, &g));
}

#[test]
fn rosenbrock_problem() {
    let x = inputs(30, 4);
    let mut g = vec![0.0; x.len()];
    let v = rosenbrock_gradient(&x, &mut g);
    check_hand("rosenbrock", rosenbrock, &x, (v, &g));
    test_rule!(rosenbrock(&x));
    let (dv, (dg,)) = value_and_gradient!(rosenbrock(&x));
    assert_agrees("rosenbrock: derived", (dv, &dg), (v, &g), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pg,)) = value_and_gradient!(rosenbrock(&x), cache = &mut cache);
        assert_agrees("rosenbrock: prepared", (pv, pg), (v, &g), EXACT);
    }
    check_peers("rosenbrock", &peers::Rosenbrock, &x, (v, &g));
}

#[test]
fn kron() {
    let (na, nb) = (3, 4);
    let (a, b) = (inputs(na * na, 5), inputs(nb * nb, 6));
    let (mut ga, mut gb) = (vec![0.0; na * na], vec![0.0; nb * nb]);
    let v = kron_sum_gradient(&a, &b, na, nb, &mut ga, &mut gb);
    let flat = [&a[..], &b[..]].concat();
    let hand = [&ga[..], &gb[..]].concat();
    let primal = |z: &[f64]| kron_sum(&z[..na * na], &z[na * na..], na, nb);
    check_hand("kron_sum", primal, &flat, (v, &hand));
    test_rule!(kron_sum(&a, &b, na, nb));
    let (dv, (dga, dgb, _, _)) = value_and_gradient!(kron_sum(&a, &b, na, nb));
    assert_agrees("kron_sum: derived", (dv, &[dga, dgb].concat()), (v, &hand), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pa, pb, _, _)) =
            value_and_gradient!(kron_sum(&a, &b, na, nb), cache = &mut cache);
        assert_agrees("kron_sum: prepared", (pv, &[&pa[..], &pb[..]].concat()), (v, &hand), EXACT);
    }
    check_peers("kron_sum", &peers::KronSum { na, nb }, &flat, (v, &hand));
}

#[test]
fn mlp() {
    let (ni, nh, no, batch) = (3, 5, 2, 4);
    let p = Mlp::new(ni, nh, no, 7);
    let (x, y) = (inputs(batch * ni, 8), inputs(batch * no, 9));
    let mut g = p.zero_tangent();
    let mut scratch = vec![0.0; nh + no];
    let v = simple_mlp_gradient(&p, &x, &y, &mut g, &mut scratch);
    let hand = g.flatten();
    let primal = |z: &[f64]| {
        let mut q = p.clone();
        let (w1, rest) = z.split_at(nh * ni);
        let (b1, rest) = rest.split_at(nh);
        let (w2, b2) = rest.split_at(no * nh);
        (q.w1, q.b1, q.w2, q.b2) = (w1.to_vec(), b1.to_vec(), w2.to_vec(), b2.to_vec());
        simple_mlp(&q, &x, &y)
    };
    check_hand("simple_mlp", primal, &p.flatten(), (v, &hand));
    test_rule!(simple_mlp(&p, &x, &y));
    let (dv, (dp, _, _)) = value_and_gradient!(simple_mlp(&p, &x, &y));
    assert_agrees("simple_mlp: derived", (dv, &dp.flatten()), (v, &hand), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pp, _, _)) = value_and_gradient!(simple_mlp(&p, &x, &y), cache = &mut cache);
        assert_agrees("simple_mlp: prepared", (pv, &pp.flatten()), (v, &hand), EXACT);
    }
    let f = peers::SimpleMlp { widths: (ni, nh, no), x: &x, y: &y };
    check_peers("simple_mlp", &f, &p.flatten(), (v, &hand));
}

/// Small GMM inputs: `(alphas, means, icf, x)` for `d`, `k`, `n`.
fn gmm_inputs(d: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let icf_sz = d * (d + 1) / 2;
    (inputs(k, 10), inputs(k * d, 11), inputs(k * icf_sz, 12), inputs(n * d, 13))
}

#[test]
fn gmm() {
    let (d, k, n, gamma, m) = (3, 2, 5, 1.5, 2);
    let (alphas, means, icf, x) = gmm_inputs(d, k, n);
    let mut ws = GmmWorkspace::new(k, d);
    let (mut ga, mut gm, mut gi) = (vec![0.0; k], vec![0.0; k * d], vec![0.0; icf.len()]);
    let v = gmm_objective_gradient(
        &alphas,
        &means,
        &icf,
        &x,
        d,
        gamma,
        m,
        &mut ws,
        (&mut ga, &mut gm, &mut gi),
    );
    let hand = [&ga[..], &gm[..], &gi[..]].concat();
    let flat = [&alphas[..], &means[..], &icf[..]].concat();
    let primal = |z: &[f64]| {
        let (a, rest) = z.split_at(k);
        let (mu, q) = rest.split_at(k * d);
        gmm_objective(a, mu, q, &x, d, gamma, m)
    };
    check_hand("gmm", primal, &flat, (v, &hand));
    test_rule!(gmm_objective(&alphas, &means, &icf, &x, d, gamma, m));
    let (dv, (da, dm, di, _, _, _, _)) =
        value_and_gradient!(gmm_objective(&alphas, &means, &icf, &x, d, gamma, m));
    assert_agrees("gmm: derived", (dv, &[da, dm, di].concat()), (v, &hand), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pa, pm, pi, ..)) = value_and_gradient!(
            gmm_objective(&alphas, &means, &icf, &x, d, gamma, m),
            cache = &mut cache
        );
        let pg = [&pa[..], &pm[..], &pi[..]].concat();
        assert_agrees("gmm: prepared", (pv, &pg), (v, &hand), EXACT);
    }
    check_peers("gmm", &peers::Gmm { d, k, x: &x, gamma, m }, &flat, (v, &hand));
}

#[test]
fn wishart_constant_matches_a_direct_sum() {
    // ln Γ_d(a) = d(d−1)/4 ln π + Σⱼ ln Γ(a + (1 − j)/2); for d = 1 and a = n_w / 2 with
    // n_w = 1 + m + 1 = 4 (m = 2): ln Γ(2) = 0, so the constant is 4 (ln γ − ½ ln 2).
    let gamma: f64 = 1.5;
    let c = problems::gmm::wishart_constant(1, gamma, 2);
    assert!((c - 4.0 * (gamma.ln() - 0.5 * 2.0_f64.ln())).abs() < 1e-14, "{c}");
    // d = 2, m = 0: n_w = 3, ln Γ_2(3/2) = ½ ln π + ln Γ(3/2) + ln Γ(1) = ½ ln π + ln(√π / 2).
    let pi = std::f64::consts::PI;
    let expect =
        3.0 * 2.0 * (gamma.ln() - 0.5 * 2.0_f64.ln()) - (0.5 * pi.ln() + (pi.sqrt() / 2.0).ln());
    let c = problems::gmm::wishart_constant(2, gamma, 0);
    assert!((c - expect).abs() < 1e-14, "{c} vs {expect}");
}

#[test]
fn ode() {
    let steps = 50;
    let (p, u0) = (vec![1.5, 1.0, 3.0, 1.0], vec![1.0, 0.8]);
    let (mut gp, mut gu) = (vec![0.0; 4], vec![0.0; 2]);
    let mut traj = vec![0.0; 2 * (steps + 1)];
    let v = ode_euler_gradient(&p, &u0, steps, &mut traj, &mut gp, &mut gu);
    let hand = [&gp[..], &gu[..]].concat();
    let flat = [&p[..], &u0[..]].concat();
    check_hand("ode_euler", |z: &[f64]| ode_euler(&z[..4], &z[4..], steps), &flat, (v, &hand));
    test_rule!(ode_euler(&p, &u0, steps));
    let (dv, (dp, du, _)) = value_and_gradient!(ode_euler(&p, &u0, steps));
    assert_agrees("ode_euler: derived", (dv, &[dp, du].concat()), (v, &hand), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pp, pu, _)) = value_and_gradient!(ode_euler(&p, &u0, steps), cache = &mut cache);
        assert_agrees("ode_euler: prepared", (pv, &[&pp[..], &pu[..]].concat()), (v, &hand), EXACT);
    }
    let f = peers::OdeEuler { steps };
    check_peers("ode_euler", &f, &flat, (v, &hand));
    let (vs, gs) = peers::num_dual_gradient_static::<_, 6>(&f, &flat);
    assert_agrees("ode_euler: num-dual, static", (vs, &gs), (v, &hand), EXACT);
}

#[test]
fn recursive_problem() {
    let depth = 12;
    let x = inputs(depth + 1, 14);
    let (mut r, mut g) = (vec![0.0; depth + 1], vec![0.0; depth + 1]);
    let v = recursive_gradient(&x, depth, &mut r, &mut g);
    check_hand("recursive", |z: &[f64]| recursive(z, depth), &x, (v, &g));
    test_rule!(recursive(&x, depth));
    let (dv, (dg, _)) = value_and_gradient!(recursive(&x, depth));
    assert_agrees("recursive: derived", (dv, &dg), (v, &g), EXACT);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pg, _)) = value_and_gradient!(recursive(&x, depth), cache = &mut cache);
        assert_agrees("recursive: prepared", (pv, pg), (v, &g), EXACT);
    }
    check_peers("recursive", &peers::Recursive { depth }, &x, (v, &g));
}

#[test]
fn the_checks_catch_a_wrong_gradient() {
    let x = inputs(10, 15);
    let mut g = vec![0.0; x.len()];
    let v = sum_sin_gradient(&x, &mut g);
    let mut wrong = g.clone();
    wrong[3] += 1e-6;
    let caught = std::panic::catch_unwind(|| assert_agrees("wrong", (v, &wrong), (v, &g), EXACT));
    assert!(caught.is_err());
    let caught = std::panic::catch_unwind(|| check_hand("wrong", sum_sin_loop, &x, (v, &wrong)));
    assert!(caught.is_err());
    assert_eq!(relative_difference(&[1.0, f64::NAN], &[1.0, 2.0]), f64::INFINITY);
    assert_eq!(relative_difference(&[1.0], &[1.0, 2.0]), f64::INFINITY);
}

/// Agreement of two Hessian-vector products computed by different means (rounding only).
const HVP_EXACT: f64 = 1e-9;

#[test]
fn rosenbrock_second_order() {
    let x = inputs(30, 4);
    let dir = inputs(30, 5);
    let (v, (g,)) = value_and_gradient!(rosenbrock(&x));
    // The generic copy at f64: the original's value and gradient.
    let (gv, (gg,)) = value_and_gradient!(rosenbrock_generic(&x));
    assert_agrees("rosenbrock_generic: derived", (gv, &gg), (v, &g), EXACT);
    assert_agrees("rosenbrock_generic: primal", (rosenbrock_generic(&x), &[]), (v, &[]), EXACT);
    // Ours: plain and prepared (twice on one cache), against central differences of the gradient.
    let (hy, (hg,), (hv,)) = hvp!(rosenbrock_generic(&x), &dir);
    assert_agrees("rosenbrock: hvp! gradient", (hy, &hg), (v, &g), EXACT);
    let grad = |z: &Vec<f64>| value_and_gradient!(rosenbrock(z)).1.0;
    check_hvp(&hv, &x, &dir, grad).unwrap_or_else(|e| panic!("rosenbrock: {e}"));
    let mut cache = HvpCache::new();
    for _ in 0..2 {
        let (py, (pg,), (ph,)) = hvp!(rosenbrock_generic(&x), &dir, cache = &mut cache);
        assert_agrees("rosenbrock: prepared hvp!", (py, ph), (hy, &hv), HVP_EXACT);
        assert_agrees("rosenbrock: prepared hvp! gradient", (py, pg), (v, &g), EXACT);
    }
    // By hand.
    let (mut hand_g, mut hand_hv) = (vec![0.0; 30], vec![0.0; 30]);
    let hand_y = rosenbrock_hvp(&x, &dir, &mut hand_g, &mut hand_hv);
    assert_agrees("rosenbrock: hand gradient", (hand_y, &hand_g), (v, &g), EXACT);
    assert_agrees("rosenbrock: hand hvp", (hand_y, &hand_hv), (hy, &hv), HVP_EXACT);
    // num-dual's hyper-dual numbers, one pass per component.
    let (mut nd_g, mut nd_hv, mut buf) = (vec![0.0; 30], vec![0.0; 30], Vec::new());
    for _ in 0..2 {
        let nd_y =
            peers::num_dual_hvp(&peers::Rosenbrock, &x, &dir, &mut buf, &mut nd_g, &mut nd_hv);
        assert_agrees("rosenbrock: num-dual gradient", (nd_y, &nd_g), (v, &g), EXACT);
        assert_agrees("rosenbrock: num-dual hvp", (nd_y, &nd_hv), (hy, &hv), HVP_EXACT);
    }
}

#[test]
fn gmm_second_order() {
    let (d, k, n, gamma, m) = (3, 2, 5, 1.5, 2);
    let (alphas, means, icf, x) = gmm_inputs(d, k, n);
    let flat = [&alphas[..], &means[..], &icf[..]].concat();
    let dir = inputs(flat.len(), 14);
    let (va, rest) = dir.split_at(k);
    let (vm, vi) = rest.split_at(k * d);
    let (v, (da, dm, di, ..)) =
        value_and_gradient!(gmm_objective(&alphas, &means, &icf, &x, d, gamma, m));
    let g = [da, dm, di].concat();
    // The generic copy at f64 (the data as constants, as `hvp!` gets it).
    let y = gmm_objective_generic(&alphas, &means, &icf, &x, d, gamma, m);
    assert_agrees("gmm_objective_generic: primal", (y, &[]), (v, &[]), EXACT);
    let (gv, (ga, gm, gi, ..)) = value_and_gradient!(gmm_objective_generic(
        &alphas,
        &means,
        &icf,
        Const(&x),
        Const(d),
        Const(gamma),
        Const(m)
    ));
    assert_agrees("gmm_objective_generic: derived", (gv, &[ga, gm, gi].concat()), (v, &g), EXACT);
    let (hy, (hga, hgm, hgi, ..), (ha, hm, hi, ..)) = hvp!(
        gmm_objective_generic(&alphas, &means, &icf, Const(&x), Const(d), Const(gamma), Const(m)),
        (va, vm, vi, NoTangent, NoTangent, NoTangent, NoTangent)
    );
    assert_agrees("gmm: hvp! gradient", (hy, &[hga, hgm, hgi].concat()), (v, &g), EXACT);
    let hv = [ha, hm, hi].concat();
    let grad = |z: &Vec<f64>| {
        let (a, rest) = z.split_at(k);
        let (mu, q) = rest.split_at(k * d);
        let (_, (ga, gm, gi, ..)) = value_and_gradient!(gmm_objective(a, mu, q, &x, d, gamma, m));
        [ga, gm, gi].concat()
    };
    check_hvp(&hv, &flat, &dir, grad).unwrap_or_else(|e| panic!("gmm: {e}"));
    let mut cache = HvpCache::new();
    for _ in 0..2 {
        let (py, _, (pa, pm, pi, ..)) = hvp!(
            gmm_objective_generic(
                &alphas,
                &means,
                &icf,
                Const(&x),
                Const(d),
                Const(gamma),
                Const(m)
            ),
            (va, vm, vi, NoTangent, NoTangent, NoTangent, NoTangent),
            cache = &mut cache
        );
        let ph = [&pa[..], &pm[..], &pi[..]].concat();
        assert_agrees("gmm: prepared hvp!", (py, &ph), (hy, &hv), HVP_EXACT);
    }
    // num-dual's hyper-dual numbers, one pass per component.
    let f = peers::Gmm { d, k, x: &x, gamma, m };
    let (mut nd_g, mut nd_hv, mut buf) = (vec![0.0; flat.len()], vec![0.0; flat.len()], Vec::new());
    let nd_y = peers::num_dual_hvp(&f, &flat, &dir, &mut buf, &mut nd_g, &mut nd_hv);
    assert_agrees("gmm: num-dual gradient", (nd_y, &nd_g), (v, &g), EXACT);
    assert_agrees("gmm: num-dual hvp", (nd_y, &nd_hv), (hy, &hv), HVP_EXACT);
}

/// The hand-written gradient of a `problems::linalg` problem against finite differences, the
/// derived rules through `test_rule!`, and the derived gradients (plain, and prepared with the
/// data `Const(..)`) against the hand-written one. `$unflat` builds a weight matrix of the
/// crate from `(rows, columns, column-major entries)`.
macro_rules! linalg_problem {
    ($f:ident, $hand:ident, $inputs:ident, $Scratch:ident, $unflat:expr) => {{
        let widths = (3, 5, 2);
        let (w1, w2, x, y) = $inputs(widths, 4, 7);
        let (mut g1, mut g2) = (w1.clone() * 0.0, w2.clone() * 0.0);
        let mut scratch = $Scratch::new(widths, 4);
        let v = $hand(&w1, &w2, &x, &y, (&mut g1, &mut g2), &mut scratch);
        let flat = |a: &[f64], b: &[f64]| -> Vec<f64> { [a, b].concat() };
        let (s1, s2) = (shape(&w1), shape(&w2));
        let hand = flat(&entries(&g1), &entries(&g2));
        let primal = |p: &[f64]| {
            let a = $unflat(s1, &p[..s1.0 * s1.1]);
            let b = $unflat(s2, &p[s1.0 * s1.1..]);
            $f(&a, &b, &x, &y)
        };
        let name = stringify!($f);
        check_hand(name, primal, &flat(&entries(&w1), &entries(&w2)), (v, &hand));
        test_rule!($f(&w1, &w2, &x, &y));
        let (dv, (d1, d2, _, _)) = value_and_gradient!($f(&w1, &w2, &x, &y));
        assert_agrees(name, (dv, &flat(&entries(&d1), &entries(&d2))), (v, &hand), EXACT);
        let mut cache = GradientCache::new();
        for _ in 0..2 {
            let (pv, (p1, p2, _, _)) =
                value_and_gradient!($f(&w1, &w2, Const(&x), Const(&y)), cache = &mut cache);
            let got = flat(&entries(p1), &entries(p2));
            assert_agrees(name, (pv, &got), (v, &hand), EXACT);
        }
    }};
}

/// A matrix's shape and entries, column-major, for both crates.
trait Entries {
    fn shape_of(&self) -> (usize, usize);
    fn column_major(&self) -> Vec<f64>;
}

impl Entries for nalgebra::DMatrix<f64> {
    fn shape_of(&self) -> (usize, usize) {
        self.shape()
    }
    fn column_major(&self) -> Vec<f64> {
        self.iter().copied().collect()
    }
}

impl Entries for ndarray::Array2<f64> {
    fn shape_of(&self) -> (usize, usize) {
        self.dim()
    }
    fn column_major(&self) -> Vec<f64> {
        self.t().iter().copied().collect()
    }
}

fn shape(m: &impl Entries) -> (usize, usize) {
    m.shape_of()
}

fn entries(m: &impl Entries) -> Vec<f64> {
    m.column_major()
}

#[test]
fn mlp_nalgebra_gradients() {
    linalg_problem!(
        mlp_nalgebra,
        mlp_nalgebra_gradient,
        mlp_nalgebra_inputs,
        MlpScratch,
        |(r, c): (usize, usize), e: &[f64]| nalgebra::DMatrix::from_column_slice(r, c, e)
    );
}

#[test]
fn mlp_ndarray_gradients() {
    linalg_problem!(
        mlp_ndarray,
        mlp_ndarray_gradient,
        mlp_ndarray_inputs,
        NdScratch,
        |(r, c): (usize, usize), e: &[f64]| {
            ndarray::Array2::from_shape_fn((r, c), |(i, j)| e[j * r + i])
        }
    );
}
