//! The problems of issue 6, each measured in one criterion group (named after Mooncake.jl's
//! suite where it has the problem), with these entries:
//!
//! | entry | what is timed |
//! | --- | --- |
//! | `primal` | the function |
//! | `derived_reverse` | `value_and_gradient!` (the derived reverse rule; gradients of every argument) |
//! | `derived_reverse_prepared` | `value_and_gradient!(.., cache = &mut cache)`: the prepared form, reusing a `GradientCache` (no allocation after the first call) |
//! | `derived_forward` | the derived forward rule, one directional derivative |
//! | `hand_gradient` | the gradient written by hand (adjoint of the same algorithm, allocation-free) |
//! | `easy_ml` | `easy-ml`'s `Record`s on a reused `WengertList` (tape, reverse mode) |
//! | `reverse_tape` | the `reverse` crate's `Var`s on a reused `Tape` (tape, reverse mode) |
//! | `num_dual` | `num-dual`'s `gradient` with vector duals (forward mode, all directions at once) |
//!
//! and two groups of Hessian-vector products (issue 16), `hvp_rosenbrock_1000` and `hvp_gmm`,
//! of the generic copies in `problems::second_order`: `gradient_prepared` (the prepared
//! gradient at `f64`), `hvp_prepared` (`hvp!(.., cache = &mut HvpCache)`), `hand_hvp` (by hand;
//! Rosenbrock only) and `num_dual_hvp` (`HyperDual64`, one forward pass per input component).
//!
//! Before timing a problem, every gradient is checked against the hand-written one to 1e-8
//! relative (max norm) and the forward rule against the gradient's inner product with its
//! direction; a disagreement panics. `bash benches/report.sh` runs this bench and writes
//! `BENCHMARKS.md`.

// `&*black_box(&x)`: the argument stays a reference in syntax, which is how
// `value_and_gradient!` tells a borrowed argument from one passed by value.
#![allow(clippy::borrow_deref_ref)]

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use mooncake_benches::*;
use mooncake_runtime::prelude::*;
use std::hint::black_box;

#[allow(dead_code, unreachable_pub)]
#[path = "../src/peers.rs"]
mod peers;
use peers::Objective;

/// `peers.rs` names the problems' constants through `crate::problems`.
use mooncake_benches::problems;

/// The agreement every gradient must reach with the hand-written one before timing.
const RTOL: f64 = 1e-8;

/// Panics unless `got` agrees with the hand-written `(value, gradient)`.
fn check(problem: &str, what: &str, got: (f64, &[f64]), hand: (f64, &[f64])) {
    assert_agrees(&format!("{problem}: {what} vs hand-written"), got, hand, RTOL);
}

/// Panics unless the forward rule's directional derivative `dir` along `v` agrees with
/// `<gradient, v>` (relative to `Σ |gᵢ vᵢ|`, so that cancellation cannot hide an error).
fn check_forward(problem: &str, (value, dir): (f64, f64), hand: (f64, &[f64]), v: &[f64]) {
    let dot: f64 = hand.1.iter().zip(v).map(|(g, v)| g * v).sum();
    let scale: f64 = hand.1.iter().zip(v).map(|(g, v)| (g * v).abs()).sum();
    assert!(
        (dir - dot).abs() <= RTOL * scale.max(f64::MIN_POSITIVE),
        "{problem}: forward rule {dir} vs <gradient, v> = {dot}"
    );
    assert_agrees(&format!("{problem}: forward value"), (value, &[]), (hand.0, &[]), RTOL);
}

/// Checks and times the three peers on `f` at `x` (`num_dual` through `nd`, so that a problem
/// with few inputs can use statically sized duals).
fn peers<O: Objective>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    problem: &str,
    f: &O,
    x: &[f64],
    hand: (f64, &[f64]),
    nd: fn(&O, &[f64]) -> (f64, Vec<f64>),
) {
    let list = easy_ml::differentiation::WengertList::new();
    let (v, g) = peers::easy_ml_gradient(&list, f, x);
    check(problem, "easy-ml", (v, &g), hand);
    group.bench_function("easy_ml", |b| b.iter(|| peers::easy_ml_gradient(&list, f, black_box(x))));
    let tape = reverse::Tape::new();
    let (v, g) = peers::reverse_gradient(&tape, f, x);
    check(problem, "reverse", (v, &g), hand);
    group.bench_function("reverse_tape", |b| {
        b.iter(|| peers::reverse_gradient(&tape, f, black_box(x)))
    });
    let (v, g) = nd(f, x);
    check(problem, "num-dual", (v, &g), hand);
    group.bench_function("num_dual", |b| b.iter(|| nd(f, black_box(x))));
}

/// One group per problem over a single vector `x`: `sum_1000`, `_sum_1000`, `sum_sin_1000`,
/// `sum_sin_chain_1000`, `_sum_sin_1000`, `naive_map_sin_cos_exp`, `rosenbrock_1000`.
macro_rules! vector_problem {
    ($c:expr, $name:literal, $n:expr, $f:ident, $frule:ident, $hand:ident, $peer:expr) => {{
        let n: usize = $n;
        let x = inputs(n, 1);
        let v = inputs(n, 2);
        let mut g = vec![0.0; n];
        let hv = $hand(&x, &mut g);
        let hand = (hv, &g[..]);
        let (dv, (dg,)) = value_and_gradient!($f(&x));
        check($name, "derived reverse", (dv, &dg), hand);
        let mut cache = GradientCache::new();
        for _ in 0..2 {
            let (pv, (pg,)) = value_and_gradient!($f(&x), cache = &mut cache);
            check($name, "derived reverse, prepared", (pv, pg), hand);
        }
        let d = $frule(Dual::new(&x[..], &v[..]));
        check_forward($name, (d.primal, d.tangent), hand, &v);
        let mut group = $c.benchmark_group($name);
        group.bench_function("primal", |b| b.iter(|| $f(black_box(&x))));
        group.bench_function("derived_reverse", |b| {
            b.iter(|| value_and_gradient!($f(&*black_box(&x))))
        });
        group.bench_function("derived_reverse_prepared", |b| {
            b.iter(|| {
                let (v, g) = value_and_gradient!($f(&*black_box(&x)), cache = &mut cache);
                black_box(g);
                v
            })
        });
        group.bench_function("derived_forward", |b| {
            b.iter(|| $frule(Dual::new(black_box(&x[..]), &v[..])).tangent)
        });
        let mut hg = g.clone();
        group.bench_function("hand_gradient", |b| b.iter(|| $hand(black_box(&x), &mut hg)));
        peers(&mut group, $name, &$peer, &x, (hv, &g), peers::num_dual_gradient);
        group.finish();
    }};
}

fn vectors(c: &mut Criterion) {
    vector_problem!(c, "sum_1000", 1000, sum_builtin, sum_builtin_frule, sum_gradient, peers::Sum);
    vector_problem!(c, "_sum_1000", 1000, sum_loop, sum_loop_frule, sum_gradient, peers::Sum);
    vector_problem!(
        c,
        "sum_sin_1000",
        1000,
        sum_sin_iter,
        sum_sin_iter_frule,
        sum_sin_gradient,
        peers::SumSin
    );
    vector_problem!(
        c,
        "sum_sin_chain_1000",
        1000,
        sum_sin_chain,
        sum_sin_chain_frule,
        sum_sin_gradient,
        peers::SumSin
    );
    vector_problem!(
        c,
        "_sum_sin_1000",
        1000,
        sum_sin_loop,
        sum_sin_loop_frule,
        sum_sin_gradient,
        peers::SumSin
    );
    vector_problem!(
        c,
        "naive_map_sin_cos_exp",
        100,
        naive_map_sin_cos_exp,
        naive_map_sin_cos_exp_frule,
        naive_map_sin_cos_exp_gradient,
        peers::NaiveMapSinCosExp
    );
    vector_problem!(
        c,
        "rosenbrock_1000",
        1000,
        rosenbrock,
        rosenbrock_frule,
        rosenbrock_gradient,
        peers::Rosenbrock
    );
}

fn kron(c: &mut Criterion) {
    let name = "kron_sum";
    let (na, nb) = (20, 20);
    let (a, b) = (inputs(na * na, 1), inputs(nb * nb, 2));
    let (va, vb) = (inputs(na * na, 3), inputs(nb * nb, 4));
    let (mut ga, mut gb) = (vec![0.0; na * na], vec![0.0; nb * nb]);
    let hv = kron_sum_gradient(&a, &b, na, nb, &mut ga, &mut gb);
    let g = [&ga[..], &gb[..]].concat();
    let hand = (hv, &g[..]);
    let (dv, (dga, dgb, _, _)) = value_and_gradient!(kron_sum(&a, &b, na, nb));
    check(name, "derived reverse", (dv, &[dga, dgb].concat()), hand);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pa, pb, _, _)) =
            value_and_gradient!(kron_sum(&a, &b, na, nb), cache = &mut cache);
        check(name, "derived reverse, prepared", (pv, &[&pa[..], &pb[..]].concat()), hand);
    }
    let fwd = || {
        kron_sum_frule(
            Dual::new(black_box(&a[..]), &va[..]),
            Dual::new(&b[..], &vb[..]),
            Dual::new(na, NoTangent),
            Dual::new(nb, NoTangent),
        )
    };
    let d = fwd();
    check_forward(name, (d.primal, d.tangent), hand, &[&va[..], &vb[..]].concat());
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.bench_function("primal", |bn| bn.iter(|| kron_sum(black_box(&a), &b, na, nb)));
    group.bench_function("derived_reverse", |bn| {
        bn.iter(|| value_and_gradient!(kron_sum(&*black_box(&a), &b, na, nb)))
    });
    group.bench_function("derived_reverse_prepared", |bn| {
        bn.iter(|| {
            let (v, g) =
                value_and_gradient!(kron_sum(&*black_box(&a), &b, na, nb), cache = &mut cache);
            black_box(g);
            v
        })
    });
    group.bench_function("derived_forward", |bn| bn.iter(|| fwd().tangent));
    group.bench_function("hand_gradient", |bn| {
        bn.iter(|| kron_sum_gradient(black_box(&a), &b, na, nb, &mut ga, &mut gb))
    });
    let flat = [&a[..], &b[..]].concat();
    peers(&mut group, name, &peers::KronSum { na, nb }, &flat, hand, peers::num_dual_gradient);
    group.finish();
}

fn mlp(c: &mut Criterion) {
    let name = "simple_mlp";
    let (ni, nh, no, batch) = (32, 64, 16, 32);
    let p = Mlp::new(ni, nh, no, 1);
    let (x, y) = (inputs(batch * ni, 2), inputs(batch * no, 3));
    let mut g = p.zero_tangent();
    let mut scratch = vec![0.0; nh + no];
    let hv = simple_mlp_gradient(&p, &x, &y, &mut g, &mut scratch);
    let flat_g = g.flatten();
    let hand = (hv, &flat_g[..]);
    let (dv, (dp, _, _)) = value_and_gradient!(simple_mlp(&p, &x, &y));
    check(name, "derived reverse", (dv, &dp.flatten()), hand);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pp, _, _)) = value_and_gradient!(simple_mlp(&p, &x, &y), cache = &mut cache);
        check(name, "derived reverse, prepared", (pv, &pp.flatten()), hand);
    }
    let mut tp = p.zero_tangent();
    let dir = inputs(flat_g.len(), 4);
    let (w1, rest) = dir.split_at(nh * ni);
    let (b1, rest) = rest.split_at(nh);
    let (w2, b2) = rest.split_at(no * nh);
    (tp.w1, tp.b1, tp.w2, tp.b2) = (w1.to_vec(), b1.to_vec(), w2.to_vec(), b2.to_vec());
    let (zx, zy) = (vec![0.0; x.len()], vec![0.0; y.len()]);
    let fwd = || {
        simple_mlp_frule(
            Dual::new(black_box(&p), &tp),
            Dual::new(&x[..], &zx[..]),
            Dual::new(&y[..], &zy[..]),
        )
    };
    let d = fwd();
    check_forward(name, (d.primal, d.tangent), hand, &dir);
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.bench_function("primal", |bn| bn.iter(|| simple_mlp(black_box(&p), &x, &y)));
    group.bench_function("derived_reverse", |bn| {
        bn.iter(|| value_and_gradient!(simple_mlp(&*black_box(&p), &x, &y)))
    });
    group.bench_function("derived_reverse_prepared", |bn| {
        bn.iter(|| {
            let (v, g) =
                value_and_gradient!(simple_mlp(&*black_box(&p), &x, &y), cache = &mut cache);
            black_box(g);
            v
        })
    });
    // The data as constants: no gradient for `x` and `y` (which the hand-written one skips).
    let mut ccache = GradientCache::new();
    for _ in 0..2 {
        let (cv, (cp, _, _)) =
            value_and_gradient!(simple_mlp(&p, Const(&x), Const(&y)), cache = &mut ccache);
        check(name, "derived reverse, prepared, Const data", (cv, &cp.flatten()), hand);
    }
    group.bench_function("derived_reverse_prepared_const", |bn| {
        bn.iter(|| {
            let (v, g) = value_and_gradient!(
                simple_mlp(&*black_box(&p), Const(&x), Const(&y)),
                cache = &mut ccache
            );
            black_box(g);
            v
        })
    });
    group.bench_function("derived_forward", |bn| bn.iter(|| fwd().tangent));
    group.bench_function("hand_gradient", |bn| {
        bn.iter(|| simple_mlp_gradient(black_box(&p), &x, &y, &mut g, &mut scratch))
    });
    let f = peers::SimpleMlp { widths: (ni, nh, no), x: &x, y: &y };
    peers(&mut group, name, &f, &p.flatten(), hand, peers::num_dual_gradient);
    group.finish();
}

fn gmm(c: &mut Criterion) {
    let name = "gmm";
    let (d, k, n, gamma, m) = (10, 5, 1000, 1.0, 0);
    let icf_sz = d * (d + 1) / 2;
    let (alphas, means, icf, x) =
        (inputs(k, 1), inputs(k * d, 2), inputs(k * icf_sz, 3), inputs(n * d, 4));
    let mut ws = GmmWorkspace::new(k, d);
    let (mut ga, mut gm, mut gi) = (vec![0.0; k], vec![0.0; k * d], vec![0.0; k * icf_sz]);
    let hv = gmm_objective_gradient(
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
    let g = [&ga[..], &gm[..], &gi[..]].concat();
    let hand = (hv, &g[..]);
    let (dv, (da, dm, di, _, _, _, _)) =
        value_and_gradient!(gmm_objective(&alphas, &means, &icf, &x, d, gamma, m));
    check(name, "derived reverse", (dv, &[da, dm, di].concat()), hand);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pa, pm, pi, ..)) = value_and_gradient!(
            gmm_objective(&alphas, &means, &icf, &x, d, gamma, m),
            cache = &mut cache
        );
        check(name, "derived reverse, prepared", (pv, &[&pa[..], &pm[..], &pi[..]].concat()), hand);
    }
    let dir = inputs(g.len(), 5);
    let (dira, rest) = dir.split_at(k);
    let (dirm, diri) = rest.split_at(k * d);
    let zx = vec![0.0; x.len()];
    let fwd = || {
        gmm_objective_frule(
            Dual::new(black_box(&alphas[..]), dira),
            Dual::new(&means[..], dirm),
            Dual::new(&icf[..], diri),
            Dual::new(&x[..], &zx[..]),
            Dual::new(d, NoTangent),
            Dual::new(gamma, 0.0),
            Dual::new(m, NoTangent),
        )
    };
    let fd = fwd();
    check_forward(name, (fd.primal, fd.tangent), hand, &dir);
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.bench_function("primal", |bn| {
        bn.iter(|| gmm_objective(black_box(&alphas), &means, &icf, &x, d, gamma, m))
    });
    group.bench_function("derived_reverse", |bn| {
        bn.iter(|| {
            value_and_gradient!(gmm_objective(&*black_box(&alphas), &means, &icf, &x, d, gamma, m))
        })
    });
    group.bench_function("derived_reverse_prepared", |bn| {
        bn.iter(|| {
            let (v, g) = value_and_gradient!(
                gmm_objective(&*black_box(&alphas), &means, &icf, &x, d, gamma, m),
                cache = &mut cache
            );
            black_box(g);
            v
        })
    });
    // The data as constants: no gradient for `x`, `d`, `gamma`, `m`.
    let mut ccache = GradientCache::new();
    for _ in 0..2 {
        let (cv, (ca, cm, ci, ..)) = value_and_gradient!(
            gmm_objective(&alphas, &means, &icf, Const(&x), Const(d), Const(gamma), Const(m)),
            cache = &mut ccache
        );
        let grad = [&ca[..], &cm[..], &ci[..]].concat();
        check(name, "derived reverse, prepared, Const data", (cv, &grad), hand);
    }
    group.bench_function("derived_reverse_prepared_const", |bn| {
        bn.iter(|| {
            let (v, g) = value_and_gradient!(
                gmm_objective(
                    &*black_box(&alphas),
                    &means,
                    &icf,
                    Const(&x),
                    Const(d),
                    Const(gamma),
                    Const(m)
                ),
                cache = &mut ccache
            );
            black_box(g);
            v
        })
    });
    group.bench_function("derived_forward", |bn| bn.iter(|| fwd().tangent));
    group.bench_function("hand_gradient", |bn| {
        bn.iter(|| {
            gmm_objective_gradient(
                black_box(&alphas),
                &means,
                &icf,
                &x,
                d,
                gamma,
                m,
                &mut ws,
                (&mut ga, &mut gm, &mut gi),
            )
        })
    });
    let flat = [&alphas[..], &means[..], &icf[..]].concat();
    let f = peers::Gmm { d, k, x: &x, gamma, m };
    peers(&mut group, name, &f, &flat, hand, peers::num_dual_gradient);
    group.finish();
}

fn ode(c: &mut Criterion) {
    let name = "ode_euler_1000";
    let steps = 1000;
    let (p, u0) = (vec![1.5, 1.0, 3.0, 1.0], vec![1.0, 0.8]);
    let (vp, vu) = (inputs(4, 1), inputs(2, 2));
    let (mut gp, mut gu) = (vec![0.0; 4], vec![0.0; 2]);
    let mut traj = vec![0.0; 2 * (steps + 1)];
    let hv = ode_euler_gradient(&p, &u0, steps, &mut traj, &mut gp, &mut gu);
    let g = [&gp[..], &gu[..]].concat();
    let hand = (hv, &g[..]);
    let (dv, (dp, du, _)) = value_and_gradient!(ode_euler(&p, &u0, steps));
    check(name, "derived reverse", (dv, &[dp, du].concat()), hand);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pp, pu, _)) = value_and_gradient!(ode_euler(&p, &u0, steps), cache = &mut cache);
        check(name, "derived reverse, prepared", (pv, &[&pp[..], &pu[..]].concat()), hand);
    }
    let fwd = || {
        ode_euler_frule(
            Dual::new(black_box(&p[..]), &vp[..]),
            Dual::new(&u0[..], &vu[..]),
            Dual::new(steps, NoTangent),
        )
    };
    let d = fwd();
    check_forward(name, (d.primal, d.tangent), hand, &[&vp[..], &vu[..]].concat());
    let (fv, (fp, fu, _)) = value_and_gradient_forward!(ode_euler(&p, &u0, steps));
    check(name, "derived forward gradient", (fv, &[fp, fu].concat()), hand);
    let (bv, (bp, bu, _)) = value_and_gradient_forward!(ode_euler(&p, &u0, steps), chunk = 6);
    check(name, "derived forward gradient, chunk = 6", (bv, &[bp, bu].concat()), hand);
    let mut group = c.benchmark_group(name);
    group.bench_function("primal", |bn| bn.iter(|| ode_euler(black_box(&p), &u0, steps)));
    // The whole gradient by forward mode: six passes of one direction each, and one batched
    // pass carrying all six (`chunk = 6`, the derived rule's batched form).
    group.bench_function("derived_forward_gradient", |bn| {
        bn.iter(|| value_and_gradient_forward!(ode_euler(&*black_box(&p), &u0, steps)))
    });
    group.bench_function("derived_forward_gradient_chunk6", |bn| {
        bn.iter(|| value_and_gradient_forward!(ode_euler(&*black_box(&p), &u0, steps), chunk = 6))
    });
    group.bench_function("derived_reverse", |bn| {
        bn.iter(|| value_and_gradient!(ode_euler(&*black_box(&p), &u0, steps)))
    });
    group.bench_function("derived_reverse_prepared", |bn| {
        bn.iter(|| {
            let (v, g) =
                value_and_gradient!(ode_euler(&*black_box(&p), &u0, steps), cache = &mut cache);
            black_box(g);
            v
        })
    });
    group.bench_function("derived_forward", |bn| bn.iter(|| fwd().tangent));
    group.bench_function("hand_gradient", |bn| {
        bn.iter(|| ode_euler_gradient(black_box(&p), &u0, steps, &mut traj, &mut gp, &mut gu))
    });
    let flat = [&p[..], &u0[..]].concat();
    // Six inputs: statically sized vector duals, as a num-dual user would write.
    let f = peers::OdeEuler { steps };
    peers(&mut group, name, &f, &flat, hand, peers::num_dual_gradient_static::<_, 6>);
    group.finish();
}

fn recursion(c: &mut Criterion) {
    let name = "recursive";
    let depth = 100;
    let x = inputs(depth + 1, 1);
    let v = inputs(depth + 1, 2);
    let (mut r, mut g) = (vec![0.0; depth + 1], vec![0.0; depth + 1]);
    let hv = recursive_gradient(&x, depth, &mut r, &mut g);
    let hand = (hv, &g[..]);
    let (dv, (dg, _)) = value_and_gradient!(recursive(&x, depth));
    check(name, "derived reverse", (dv, &dg), hand);
    let mut cache = GradientCache::new();
    for _ in 0..2 {
        let (pv, (pg, _)) = value_and_gradient!(recursive(&x, depth), cache = &mut cache);
        check(name, "derived reverse, prepared", (pv, pg), hand);
    }
    let fwd = || recursive_frule(Dual::new(black_box(&x[..]), &v[..]), Dual::new(depth, NoTangent));
    let d = fwd();
    check_forward(name, (d.primal, d.tangent), hand, &v);
    let mut group = c.benchmark_group(name);
    group.bench_function("primal", |bn| bn.iter(|| recursive(black_box(&x), depth)));
    group.bench_function("derived_reverse", |bn| {
        bn.iter(|| value_and_gradient!(recursive(&*black_box(&x), depth)))
    });
    group.bench_function("derived_reverse_prepared", |bn| {
        bn.iter(|| {
            let (v, g) = value_and_gradient!(recursive(&*black_box(&x), depth), cache = &mut cache);
            black_box(g);
            v
        })
    });
    group.bench_function("derived_forward", |bn| bn.iter(|| fwd().tangent));
    let mut hg = g.clone();
    group.bench_function("hand_gradient", |bn| {
        bn.iter(|| recursive_gradient(black_box(&x), depth, &mut r, &mut hg))
    });
    peers(&mut group, name, &peers::Recursive { depth }, &x, hand, peers::num_dual_gradient);
    group.finish();
}

/// The agreement of two Hessian-vector products computed by different means before timing.
const HVP_RTOL: f64 = 1e-8;

/// `hvp_rosenbrock_1000`: Hessian-vector products of the 1,000-dimensional Rosenbrock function
/// (the generic copy `rosenbrock_generic`), against its prepared gradient.
fn hvp_rosenbrock(c: &mut Criterion) {
    let name = "hvp_rosenbrock_1000";
    let n = 1000;
    let (x, dir) = (inputs(n, 1), inputs(n, 2));
    let (mut hg, mut hh) = (vec![0.0; n], vec![0.0; n]);
    let hy = rosenbrock_hvp(&x, &dir, &mut hg, &mut hh);
    let mut gcache = GradientCache::new();
    let mut hcache = HvpCache::new();
    for _ in 0..2 {
        let (v, (g,)) = value_and_gradient!(rosenbrock_generic(&x), cache = &mut gcache);
        check(name, "gradient, prepared", (v, g), (hy, &hg));
        let (v, (g,), (h,)) = hvp!(rosenbrock_generic(&x), &dir, cache = &mut hcache);
        check(name, "hvp! gradient", (v, g), (hy, &hg));
        assert_agrees(&format!("{name}: hvp! vs hand"), (v, h), (hy, &hh), HVP_RTOL);
    }
    let (mut ng, mut nh, mut buf) = (vec![0.0; n], vec![0.0; n], Vec::new());
    let ny = peers::num_dual_hvp(&peers::Rosenbrock, &x, &dir, &mut buf, &mut ng, &mut nh);
    check(name, "num-dual gradient", (ny, &ng), (hy, &hg));
    assert_agrees(&format!("{name}: num-dual vs hand"), (ny, &nh), (hy, &hh), HVP_RTOL);
    let mut group = c.benchmark_group(name);
    group.bench_function("gradient_prepared", |b| {
        b.iter(|| {
            let (v, g) =
                value_and_gradient!(rosenbrock_generic(&*black_box(&x)), cache = &mut gcache);
            black_box(g);
            v
        })
    });
    group.bench_function("hvp_prepared", |b| {
        b.iter(|| {
            let (v, g, h) = hvp!(rosenbrock_generic(&*black_box(&x)), &dir, cache = &mut hcache);
            black_box((g, h));
            v
        })
    });
    group.bench_function("hand_hvp", |b| {
        b.iter(|| rosenbrock_hvp(black_box(&x), &dir, &mut hg, &mut hh))
    });
    group.sample_size(10);
    group.bench_function("num_dual_hvp", |b| {
        b.iter(|| {
            peers::num_dual_hvp(&peers::Rosenbrock, black_box(&x), &dir, &mut buf, &mut ng, &mut nh)
        })
    });
    group.finish();
}

/// `hvp_gmm`: Hessian-vector products of `gmm` (the generic copy `gmm_objective_generic`, the
/// data as `Const(..)`), against its prepared gradient. No hand-written product (see
/// `problems::second_order`).
fn hvp_gmm(c: &mut Criterion) {
    let name = "hvp_gmm";
    let (d, k, n, gamma, m) = (10, 5, 1000, 1.0, 0);
    let icf_sz = d * (d + 1) / 2;
    let (alphas, means, icf, x) =
        (inputs(k, 1), inputs(k * d, 2), inputs(k * icf_sz, 3), inputs(n * d, 4));
    let flat = [&alphas[..], &means[..], &icf[..]].concat();
    let dir = inputs(flat.len(), 5);
    let (va, rest) = dir.split_at(k);
    let (vm, vi) = rest.split_at(k * d);
    let mut ws = GmmWorkspace::new(k, d);
    let (mut ga, mut gm, mut gi) = (vec![0.0; k], vec![0.0; k * d], vec![0.0; k * icf_sz]);
    let hy = gmm_objective_gradient(
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
    let hg = [&ga[..], &gm[..], &gi[..]].concat();
    let mut gcache = GradientCache::new();
    let mut hcache = HvpCache::new();
    let mut ours = Vec::new();
    for _ in 0..2 {
        let (v, (pa, pm, pi, ..)) = value_and_gradient!(
            gmm_objective_generic(
                &alphas,
                &means,
                &icf,
                Const(&x),
                Const(d),
                Const(gamma),
                Const(m)
            ),
            cache = &mut gcache
        );
        check(name, "gradient, prepared", (v, &[&pa[..], &pm[..], &pi[..]].concat()), (hy, &hg));
        let (v, (pa, pm, pi, ..), (ha, hm, hi, ..)) = hvp!(
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
            cache = &mut hcache
        );
        check(name, "hvp! gradient", (v, &[&pa[..], &pm[..], &pi[..]].concat()), (hy, &hg));
        ours = [&ha[..], &hm[..], &hi[..]].concat();
    }
    let f = peers::Gmm { d, k, x: &x, gamma, m };
    let (mut ng, mut nh, mut buf) = (vec![0.0; flat.len()], vec![0.0; flat.len()], Vec::new());
    let ny = peers::num_dual_hvp(&f, &flat, &dir, &mut buf, &mut ng, &mut nh);
    check(name, "num-dual gradient", (ny, &ng), (hy, &hg));
    assert_agrees(&format!("{name}: num-dual vs hvp!"), (ny, &nh), (hy, &ours), HVP_RTOL);
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.bench_function("gradient_prepared", |bn| {
        bn.iter(|| {
            let (v, g) = value_and_gradient!(
                gmm_objective_generic(
                    &*black_box(&alphas),
                    &means,
                    &icf,
                    Const(&x),
                    Const(d),
                    Const(gamma),
                    Const(m)
                ),
                cache = &mut gcache
            );
            black_box(g);
            v
        })
    });
    group.bench_function("hvp_prepared", |bn| {
        bn.iter(|| {
            let (v, g, h) = hvp!(
                gmm_objective_generic(
                    &*black_box(&alphas),
                    &means,
                    &icf,
                    Const(&x),
                    Const(d),
                    Const(gamma),
                    Const(m)
                ),
                (va, vm, vi, NoTangent, NoTangent, NoTangent, NoTangent),
                cache = &mut hcache
            );
            black_box((g, h));
            v
        })
    });
    group.bench_function("num_dual_hvp", |bn| {
        bn.iter(|| peers::num_dual_hvp(&f, black_box(&flat), &dir, &mut buf, &mut ng, &mut nh))
    });
    group.finish();
}

/// One group of `simple_mlp` with a crate's matrices: `primal`, `derived_reverse_prepared`
/// (gradients of all four matrices), `derived_reverse_prepared_const` (the data `Const(..)`, as
/// the hand-written gradient) and `hand_gradient` (the crate's kernels into preallocated
/// matrices), after checking both gradients against the hand-written one.
macro_rules! linalg_group {
    ($c:expr, $name:expr, $widths:expr, $batch:expr, $f:ident, $hand:ident, $inputs:ident, $Scratch:ident) => {{
        let (name, widths, batch) = ($name, $widths, $batch);
        let (w1, w2, x, y) = $inputs(widths, batch, 1);
        let (mut g1, mut g2) = (w1.clone() * 0.0, w2.clone() * 0.0);
        let mut scratch = $Scratch::new(widths, batch);
        let hv = $hand(&w1, &w2, &x, &y, (&mut g1, &mut g2), &mut scratch);
        let hg: Vec<f64> = g1.iter().chain(g2.iter()).copied().collect();
        let hand = (hv, &hg[..]);
        let mut cache = GradientCache::new();
        let mut ccache = GradientCache::new();
        for _ in 0..2 {
            let (v, (p1, p2, _, _)) = value_and_gradient!($f(&w1, &w2, &x, &y), cache = &mut cache);
            let flat: Vec<f64> = p1.iter().chain(p2.iter()).copied().collect();
            check(name, "derived reverse, prepared", (v, &flat), hand);
            let (v, (p1, p2, _, _)) =
                value_and_gradient!($f(&w1, &w2, Const(&x), Const(&y)), cache = &mut ccache);
            let flat: Vec<f64> = p1.iter().chain(p2.iter()).copied().collect();
            check(name, "derived reverse, prepared, Const data", (v, &flat), hand);
        }
        let mut group = $c.benchmark_group(name);
        group.sample_size(10);
        group.bench_function("primal", |bn| bn.iter(|| $f(black_box(&w1), &w2, &x, &y)));
        group.bench_function("derived_reverse_prepared", |bn| {
            bn.iter(|| {
                let (v, g) =
                    value_and_gradient!($f(&*black_box(&w1), &w2, &x, &y), cache = &mut cache);
                black_box(g);
                v
            })
        });
        group.bench_function("derived_reverse_prepared_const", |bn| {
            bn.iter(|| {
                let (v, g) = value_and_gradient!(
                    $f(&*black_box(&w1), &w2, Const(&x), Const(&y)),
                    cache = &mut ccache
                );
                black_box(g);
                v
            })
        });
        group.bench_function("hand_gradient", |bn| {
            bn.iter(|| $hand(black_box(&w1), &w2, &x, &y, (&mut g1, &mut g2), &mut scratch))
        });
        group.finish();
    }};
}

/// `simple_mlp` with nalgebra's and ndarray's matrices ([`mlp_nalgebra`], [`mlp_ndarray`]), at
/// the sizes of [`MLP_LINALG`].
fn linalg(c: &mut Criterion) {
    for (name, widths, batch) in MLP_LINALG {
        if name.starts_with("mlp_nalgebra") {
            linalg_group!(
                c,
                name,
                widths,
                batch,
                mlp_nalgebra,
                mlp_nalgebra_gradient,
                mlp_nalgebra_inputs,
                MlpScratch
            );
        } else {
            linalg_group!(
                c,
                name,
                widths,
                batch,
                mlp_ndarray,
                mlp_ndarray_gradient,
                mlp_ndarray_inputs,
                NdScratch
            );
        }
    }
}

criterion_group!(benches, vectors, kron, mlp, gmm, ode, recursion, hvp_rosenbrock, hvp_gmm, linalg);
criterion_main!(benches);
