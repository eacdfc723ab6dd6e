//! A driver for profiling one problem of the benchmark suite under a profiler (callgrind counts
//! instructions repeatably on a shared machine, where wall-clock times vary):
//!
//! ```sh
//! cargo build --profile bench -p mooncake-benches --example profile
//! valgrind --tool=callgrind target/release/examples/profile rosenbrock_1000 prepared 100
//! ```
//!
//! Arguments: the problem (a group name of `benches/gradients.rs`), the mode (`primal`,
//! `reverse` for `value_and_gradient!`, `prepared` for its cached form, `const` for the cached
//! form with the data arguments `Const(..)` (`simple_mlp`, `gmm`, `mlp_nalgebra*`, `mlp_ndarray*`), `hand` for the hand-written
//! gradient) and the number of repetitions (after one call outside the count,
//! which a profile can subtract by running with 0). The Hessian-vector product problems
//! (`hvp_rosenbrock_1000`, `hvp_gmm`, of the generic copies in `problems::second_order`) have
//! the modes `gradient` (the prepared gradient), `prepared` (`hvp!` with an `HvpCache`) and
//! `hand` (the hand-written product; Rosenbrock only). `ode_euler_1000` has two more:
//! `batched` (`value_and_gradient_forward!` with `chunk = 6`) and `num_dual` (num-dual's
//! `DualSVec64<6>`), the forward-mode gradients of BENCHMARKS.md. Prints a checksum, so that nothing is
//! optimised away. `bash benches/callgrind.sh` counts every problem and mode this way.
//!
//! Each problem has the sizes of its criterion group, and each mode is called as the group's
//! entry calls it (`primal`, `derived_reverse`, `derived_reverse_prepared`, `hand_gradient`):
//! the first argument through `black_box`, the gradient of the prepared form through
//! `black_box`, the plain form's result through `black_box` and dropped (as criterion does with
//! what a timed closure returns), so that a count here is of the code criterion times.

// `&*black_box(&x)`: the argument stays a reference in syntax, which is how
// `value_and_gradient!` tells a borrowed argument from one passed by value.
#![allow(clippy::borrow_deref_ref)]

use mooncake_benches::*;
use mooncake_runtime::prelude::*;
use std::hint::black_box;

// The peers' code, as the criterion bench includes it (`num_dual` mode of `ode_euler_1000`).
#[allow(dead_code, unreachable_pub)]
#[path = "../src/peers.rs"]
mod peers;

/// The problems, in the order of `benches/gradients.rs` (`benches/callgrind.sh` reads this list).
const PROBLEMS: [&str; 18] = [
    "sum_1000",
    "_sum_1000",
    "sum_sin_1000",
    "sum_sin_chain_1000",
    "_sum_sin_1000",
    "naive_map_sin_cos_exp",
    "rosenbrock_1000",
    "kron_sum",
    "simple_mlp",
    "gmm",
    "ode_euler_1000",
    "recursive",
    "hvp_rosenbrock_1000",
    "hvp_gmm",
    "mlp_nalgebra",
    "mlp_nalgebra_128_256_128",
    "mlp_ndarray",
    "mlp_ndarray_128_256_128",
];

/// Runs `f` once, then `reps` times, and sums what it returns.
fn repeat(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut s = f();
    for _ in 0..reps {
        s += black_box(f());
    }
    s
}

/// Dispatches one mode to `$primal`, `$hand`, `$reverse` (a `value_and_gradient!` call) or
/// `$prepared` (the same with a cache), each an expression written out by the caller.
macro_rules! modes {
    ($mode:expr, $reps:expr, $primal:expr, $hand:expr, $reverse:expr, $prepared:expr) => {
        modes!(@match $mode, $reps, $primal, $hand, $reverse, $prepared,
            "const" => panic!("this problem has no data argument: no `const` mode"))
    };
    (
        $mode:expr,
        $reps:expr,
        $primal:expr,
        $hand:expr,
        $reverse:expr,
        $prepared:expr,
        $constant:expr
    ) => {
        modes!(@match $mode, $reps, $primal, $hand, $reverse, $prepared,
            "const" => repeat($reps, || {
                let (v, g) = $constant;
                black_box(g);
                v
            }))
    };
    (
        @match $mode:expr,
        $reps:expr,
        $primal:expr,
        $hand:expr,
        $reverse:expr,
        $prepared:expr,
        $($constant:tt)*
    ) => {
        match $mode {
            $($constant)*,
            "primal" => repeat($reps, || $primal),
            "reverse" => repeat($reps, || black_box($reverse).0),
            "prepared" => repeat($reps, || {
                let (v, g) = $prepared;
                black_box(g);
                v
            }),
            "hand" => repeat($reps, || $hand),
            other => panic!("unknown mode {other}"),
        }
    };
}

/// Dispatches a problem over one vector `x` of length `n`.
macro_rules! vector {
    ($mode:expr, $reps:expr, $n:expr, $f:ident, $hand:ident) => {{
        let x = inputs($n, 1);
        let mut g = vec![0.0; $n];
        let mut cache = GradientCache::new();
        modes!(
            $mode,
            $reps,
            $f(black_box(&x)),
            $hand(black_box(&x), &mut g),
            value_and_gradient!($f(&*black_box(&x))),
            value_and_gradient!($f(&*black_box(&x)), cache = &mut cache)
        )
    }};
}

/// Dispatches one mode of a `problems::linalg` problem (`$f`, by hand `$hand`, at the sizes
/// `MLP_LINALG` gives the group `$name`).
macro_rules! linalg_modes {
    ($mode:expr, $reps:expr, $name:expr, $f:ident, $hand:ident, $inputs:ident, $Scratch:ident) => {{
        let Some(&(_, widths, batch)) = MLP_LINALG.iter().find(|p| p.0 == $name) else {
            panic!("unknown problem {}", $name)
        };
        let (w1, w2, x, y) = $inputs(widths, batch, 1);
        let (mut g1, mut g2) = (w1.clone() * 0.0, w2.clone() * 0.0);
        let mut scratch = $Scratch::new(widths, batch);
        let mut cache = GradientCache::new();
        modes!(
            $mode,
            $reps,
            $f(black_box(&w1), &w2, &x, &y),
            $hand(black_box(&w1), &w2, &x, &y, (&mut g1, &mut g2), &mut scratch),
            value_and_gradient!($f(&*black_box(&w1), &w2, &x, &y)),
            value_and_gradient!($f(&*black_box(&w1), &w2, &x, &y), cache = &mut cache),
            value_and_gradient!(
                $f(&*black_box(&w1), &w2, Const(&x), Const(&y)),
                cache = &mut cache
            )
        )
    }};
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 2 && args[1] == "--list" {
        for p in PROBLEMS {
            println!("{p}");
        }
        return;
    }
    if args.len() != 4 {
        eprintln!(
            "usage: profile PROBLEM primal|reverse|prepared|const|hand REPS, or profile --list"
        );
        std::process::exit(2);
    }
    let (problem, mode) = (args[1].as_str(), args[2].as_str());
    let reps: usize = args[3].parse().expect("REPS is a number");
    let checksum = match problem {
        "sum_1000" => vector!(mode, reps, 1000, sum_builtin, sum_gradient),
        "_sum_1000" => vector!(mode, reps, 1000, sum_loop, sum_gradient),
        "sum_sin_1000" => vector!(mode, reps, 1000, sum_sin_iter, sum_sin_gradient),
        "sum_sin_chain_1000" => vector!(mode, reps, 1000, sum_sin_chain, sum_sin_gradient),
        "_sum_sin_1000" => vector!(mode, reps, 1000, sum_sin_loop, sum_sin_gradient),
        "naive_map_sin_cos_exp" => {
            vector!(mode, reps, 100, naive_map_sin_cos_exp, naive_map_sin_cos_exp_gradient)
        }
        "rosenbrock_1000" => vector!(mode, reps, 1000, rosenbrock, rosenbrock_gradient),
        "kron_sum" => {
            let (na, nb) = (20, 20);
            let (a, b) = (inputs(na * na, 1), inputs(nb * nb, 2));
            let (mut ga, mut gb) = (vec![0.0; na * na], vec![0.0; nb * nb]);
            let mut cache = GradientCache::new();
            modes!(
                mode,
                reps,
                kron_sum(black_box(&a), &b, na, nb),
                kron_sum_gradient(black_box(&a), &b, na, nb, &mut ga, &mut gb),
                value_and_gradient!(kron_sum(&*black_box(&a), &b, na, nb)),
                value_and_gradient!(kron_sum(&*black_box(&a), &b, na, nb), cache = &mut cache)
            )
        }
        "simple_mlp" => {
            let (ni, nh, no, batch) = (32, 64, 16, 32);
            let p = Mlp::new(ni, nh, no, 1);
            let (x, y) = (inputs(batch * ni, 2), inputs(batch * no, 3));
            let mut g = p.zero_tangent();
            let mut scratch = vec![0.0; nh + no];
            let mut cache = GradientCache::new();
            modes!(
                mode,
                reps,
                simple_mlp(black_box(&p), &x, &y),
                simple_mlp_gradient(black_box(&p), &x, &y, &mut g, &mut scratch),
                value_and_gradient!(simple_mlp(&*black_box(&p), &x, &y)),
                value_and_gradient!(simple_mlp(&*black_box(&p), &x, &y), cache = &mut cache),
                value_and_gradient!(
                    simple_mlp(&*black_box(&p), Const(&x), Const(&y)),
                    cache = &mut cache
                )
            )
        }
        "gmm" => {
            let (d, k, n, gamma, m) = (10, 5, 1000, 1.0, 0);
            let icf_sz = d * (d + 1) / 2;
            let (al, me, ic, x) =
                (inputs(k, 1), inputs(k * d, 2), inputs(k * icf_sz, 3), inputs(n * d, 4));
            let mut ws = GmmWorkspace::new(k, d);
            let (mut ga, mut gm, mut gi) = (vec![0.0; k], vec![0.0; k * d], vec![0.0; k * icf_sz]);
            let mut cache = GradientCache::new();
            modes!(
                mode,
                reps,
                gmm_objective(black_box(&al), &me, &ic, &x, d, gamma, m),
                {
                    let g = (&mut ga[..], &mut gm[..], &mut gi[..]);
                    gmm_objective_gradient(black_box(&al), &me, &ic, &x, d, gamma, m, &mut ws, g)
                },
                value_and_gradient!(gmm_objective(&*black_box(&al), &me, &ic, &x, d, gamma, m)),
                value_and_gradient!(
                    gmm_objective(&*black_box(&al), &me, &ic, &x, d, gamma, m),
                    cache = &mut cache
                ),
                value_and_gradient!(
                    gmm_objective(
                        &*black_box(&al),
                        &me,
                        &ic,
                        Const(&x),
                        Const(d),
                        Const(gamma),
                        Const(m)
                    ),
                    cache = &mut cache
                )
            )
        }
        "ode_euler_1000" => {
            let steps = 1000;
            let (p, u0) = (vec![1.5, 1.0, 3.0, 1.0], vec![1.0, 0.8]);
            let (mut gp, mut gu) = (vec![0.0; 4], vec![0.0; 2]);
            let mut traj = vec![0.0; 2 * (steps + 1)];
            let mut cache = GradientCache::new();
            let flat = [&p[..], &u0[..]].concat();
            let peer = peers::OdeEuler { steps };
            match mode {
                // The forward-mode gradients of the table "Forward-mode gradients": one pass of
                // the batched rule carrying all six directions, and num-dual's vector dual.
                "batched" => repeat(reps, || {
                    let (v, g) = value_and_gradient_forward!(
                        ode_euler(&*black_box(&p), &u0, steps),
                        chunk = 6
                    );
                    black_box(g);
                    v
                }),
                "num_dual" => repeat(reps, || {
                    let (v, g) = peers::num_dual_gradient_static::<_, 6>(&peer, black_box(&flat));
                    black_box(g);
                    v
                }),
                _ => modes!(
                    mode,
                    reps,
                    ode_euler(black_box(&p), &u0, steps),
                    ode_euler_gradient(black_box(&p), &u0, steps, &mut traj, &mut gp, &mut gu),
                    value_and_gradient!(ode_euler(&*black_box(&p), &u0, steps)),
                    value_and_gradient!(ode_euler(&*black_box(&p), &u0, steps), cache = &mut cache)
                ),
            }
        }
        "recursive" => {
            let depth = 100;
            let x = inputs(depth + 1, 1);
            let (mut r, mut g) = (vec![0.0; depth + 1], vec![0.0; depth + 1]);
            let mut cache = GradientCache::new();
            modes!(
                mode,
                reps,
                recursive(black_box(&x), depth),
                recursive_gradient(black_box(&x), depth, &mut r, &mut g),
                value_and_gradient!(recursive(&*black_box(&x), depth)),
                value_and_gradient!(recursive(&*black_box(&x), depth), cache = &mut cache)
            )
        }
        "hvp_rosenbrock_1000" => {
            let n = 1000;
            let (x, dir) = (inputs(n, 1), inputs(n, 2));
            let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
            let mut gcache = GradientCache::new();
            let mut hcache = HvpCache::new();
            match mode {
                "gradient" => repeat(reps, || {
                    let (v, g) = value_and_gradient!(
                        rosenbrock_generic(&*black_box(&x)),
                        cache = &mut gcache
                    );
                    black_box(g);
                    v
                }),
                "prepared" => repeat(reps, || {
                    let (v, g, h) =
                        hvp!(rosenbrock_generic(&*black_box(&x)), &dir, cache = &mut hcache);
                    black_box((g, h));
                    v
                }),
                "hand" => repeat(reps, || rosenbrock_hvp(black_box(&x), &dir, &mut g, &mut hv)),
                other => panic!("unknown mode {other} (hvp problems: gradient, prepared, hand)"),
            }
        }
        "hvp_gmm" => {
            let (d, k, n, gamma, m) = (10, 5, 1000, 1.0, 0);
            let icf_sz = d * (d + 1) / 2;
            let (al, me, ic, x) =
                (inputs(k, 1), inputs(k * d, 2), inputs(k * icf_sz, 3), inputs(n * d, 4));
            let dir = inputs(k + k * d + k * icf_sz, 5);
            let (va, rest) = dir.split_at(k);
            let (vm, vi) = rest.split_at(k * d);
            let mut gcache = GradientCache::new();
            let mut hcache = HvpCache::new();
            match mode {
                "gradient" => repeat(reps, || {
                    let (v, g) = value_and_gradient!(
                        gmm_objective_generic(
                            &*black_box(&al),
                            &me,
                            &ic,
                            Const(&x),
                            Const(d),
                            Const(gamma),
                            Const(m)
                        ),
                        cache = &mut gcache
                    );
                    black_box(g);
                    v
                }),
                "prepared" => repeat(reps, || {
                    let (v, g, h) = hvp!(
                        gmm_objective_generic(
                            &*black_box(&al),
                            &me,
                            &ic,
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
                }),
                other => panic!("unknown mode {other} (hvp_gmm: gradient, prepared)"),
            }
        }
        linalg if linalg.starts_with("mlp_nalgebra") => {
            linalg_modes!(
                mode,
                reps,
                linalg,
                mlp_nalgebra,
                mlp_nalgebra_gradient,
                mlp_nalgebra_inputs,
                MlpScratch
            )
        }
        linalg if linalg.starts_with("mlp_ndarray") => {
            linalg_modes!(
                mode,
                reps,
                linalg,
                mlp_ndarray,
                mlp_ndarray_gradient,
                mlp_ndarray_inputs,
                NdScratch
            )
        }
        other => panic!("unknown problem {other}"),
    };
    println!("{problem} {mode} x{reps}: checksum {checksum}");
}
