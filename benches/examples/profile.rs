//! A driver for profiling one problem of the benchmark suite under a profiler (callgrind counts
//! instructions repeatably on a shared machine, where wall-clock times vary):
//!
//! ```sh
//! cargo build --profile bench -p mooncake-benches --example profile
//! valgrind --tool=callgrind target/release/examples/profile rosenbrock_1000 prepared 100
//! ```
//!
//! Arguments: the problem (a group name of `benches/gradients.rs`), the mode (`primal`,
//! `reverse` for `value_and_gradient!`, `prepared` for its cached form, `hand` for the
//! hand-written gradient) and the number of repetitions (after one call outside the count,
//! which a profile can subtract by running with 0). Prints a checksum, so that nothing is
//! optimised away.

// `&*black_box(&x)`: the argument stays a reference in syntax, which is how
// `value_and_gradient!` tells a borrowed argument from one passed by value.
#![allow(clippy::borrow_deref_ref)]

use mooncake_benches::*;
use mooncake_runtime::prelude::*;
use std::hint::black_box;

/// Runs `f` once, then `reps` times, and sums what it returns.
fn repeat(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut s = f();
    for _ in 0..reps {
        s += black_box(f());
    }
    s
}

/// Dispatches a problem over one vector `x` of length `n`.
macro_rules! vector {
    ($mode:expr, $reps:expr, $n:expr, $f:ident, $hand:ident) => {{
        let x = inputs($n, 1);
        let mut g = vec![0.0; $n];
        let mut cache = GradientCache::new();
        match $mode {
            "primal" => repeat($reps, || $f(black_box(&x))),
            "reverse" => repeat($reps, || value_and_gradient!($f(&*black_box(&x))).1.0[0]),
            "prepared" => repeat($reps, || {
                value_and_gradient!($f(&*black_box(&x)), cache = &mut cache).1.0[0]
            }),
            "hand" => repeat($reps, || $hand(black_box(&x), &mut g)),
            other => panic!("unknown mode {other}"),
        }
    }};
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: profile PROBLEM primal|reverse|prepared|hand REPS");
        std::process::exit(2);
    }
    let (problem, mode) = (args[1].as_str(), args[2].as_str());
    let reps: usize = args[3].parse().expect("REPS is a number");
    let checksum = match problem {
        "sum_1000" => vector!(mode, reps, 1000, sum_builtin, sum_gradient),
        "_sum_1000" => vector!(mode, reps, 1000, sum_loop, sum_gradient),
        "sum_sin_1000" => vector!(mode, reps, 1000, sum_sin_iter, sum_sin_gradient),
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
            match mode {
                "primal" => repeat(reps, || kron_sum(black_box(&a), &b, na, nb)),
                "reverse" => repeat(reps, || value_and_gradient!(kron_sum(&a, &b, na, nb)).0),
                "prepared" => repeat(reps, || {
                    value_and_gradient!(kron_sum(&a, &b, na, nb), cache = &mut cache).0
                }),
                "hand" => repeat(reps, || kron_sum_gradient(&a, &b, na, nb, &mut ga, &mut gb)),
                other => panic!("unknown mode {other}"),
            }
        }
        "simple_mlp" => {
            let p = Mlp::new(32, 64, 16, 1);
            let (x, y) = (inputs(32 * 32, 2), inputs(32 * 16, 3));
            let mut g = p.zero_tangent();
            let mut scratch = vec![0.0; 64 + 16];
            let mut cache = GradientCache::new();
            match mode {
                "primal" => repeat(reps, || simple_mlp(black_box(&p), &x, &y)),
                "reverse" => repeat(reps, || value_and_gradient!(simple_mlp(&p, &x, &y)).0),
                "prepared" => repeat(reps, || {
                    value_and_gradient!(simple_mlp(&p, &x, &y), cache = &mut cache).0
                }),
                "hand" => repeat(reps, || simple_mlp_gradient(&p, &x, &y, &mut g, &mut scratch)),
                other => panic!("unknown mode {other}"),
            }
        }
        "gmm" => {
            let (d, k, n, gamma, m) = (10, 5, 1000, 1.0, 0);
            let icf_sz = d * (d + 1) / 2;
            let (al, me, ic, x) =
                (inputs(k, 1), inputs(k * d, 2), inputs(k * icf_sz, 3), inputs(n * d, 4));
            let mut ws = GmmWorkspace::new(k, d);
            let (mut ga, mut gm, mut gi) = (vec![0.0; k], vec![0.0; k * d], vec![0.0; ic.len()]);
            let mut cache = GradientCache::new();
            match mode {
                "primal" => {
                    repeat(reps, || gmm_objective(black_box(&al), &me, &ic, &x, d, gamma, m))
                }
                "reverse" => repeat(reps, || {
                    value_and_gradient!(gmm_objective(&al, &me, &ic, &x, d, gamma, m)).0
                }),
                "prepared" => repeat(reps, || {
                    value_and_gradient!(
                        gmm_objective(&al, &me, &ic, &x, d, gamma, m),
                        cache = &mut cache
                    )
                    .0
                }),
                "hand" => repeat(reps, || {
                    let g = (&mut ga[..], &mut gm[..], &mut gi[..]);
                    gmm_objective_gradient(&al, &me, &ic, &x, d, gamma, m, &mut ws, g)
                }),
                other => panic!("unknown mode {other}"),
            }
        }
        "ode_euler_1000" => {
            let (p, u0, steps) = (vec![1.5, 1.0, 3.0, 1.0], vec![1.0, 0.8], 1000);
            let (mut gp, mut gu, mut traj) = (vec![0.0; 4], vec![0.0; 2], vec![0.0; 2002]);
            let mut cache = GradientCache::new();
            match mode {
                "primal" => repeat(reps, || ode_euler(black_box(&p), &u0, steps)),
                "reverse" => repeat(reps, || value_and_gradient!(ode_euler(&p, &u0, steps)).0),
                "prepared" => repeat(reps, || {
                    value_and_gradient!(ode_euler(&p, &u0, steps), cache = &mut cache).0
                }),
                "hand" => {
                    repeat(reps, || ode_euler_gradient(&p, &u0, steps, &mut traj, &mut gp, &mut gu))
                }
                other => panic!("unknown mode {other}"),
            }
        }
        "recursive" => {
            let x = inputs(101, 1);
            let (mut r, mut g) = (vec![0.0; 101], vec![0.0; 101]);
            let mut cache = GradientCache::new();
            match mode {
                "primal" => repeat(reps, || recursive(black_box(&x), 100)),
                "reverse" => repeat(reps, || value_and_gradient!(recursive(&x, 100)).0),
                "prepared" => {
                    repeat(reps, || value_and_gradient!(recursive(&x, 100), cache = &mut cache).0)
                }
                "hand" => repeat(reps, || recursive_gradient(&x, 100, &mut r, &mut g)),
                other => panic!("unknown mode {other}"),
            }
        }
        other => panic!("unknown problem {other}"),
    };
    println!("{problem} {mode} x{reps}: checksum {checksum}");
}
