//! The derived rules against the primal and a hand-written gradient, in the same run.
//!
//! `cargo bench -p mooncake-benches --bench gradients` prints, per problem and size, the time
//! of the primal, the hand-written gradient, the derived forward rule (one directional
//! derivative) and `value_and_gradient!` (the derived reverse rule); divide by the primal's
//! and the hand-written gradient's time for the ratios the README reports.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mooncake_benches::{
    inputs, least_squares, least_squares_frule, least_squares_gradient, least_squares_rrule,
    sum_gradient, sum_iter, sum_iter_frule, sum_iter_rrule, sum_loop, sum_loop_frule,
    sum_loop_rrule, sum_sin, sum_sin_frule, sum_sin_gradient, sum_sin_rrule,
};
use mooncake_runtime::prelude::*;
use std::hint::black_box;

fn bench_sums(c: &mut Criterion) {
    let n = 1000;
    let x = inputs(n, 1);
    let dx = inputs(n, 2);
    let mut g = vec![0.0; n];
    let mut group = c.benchmark_group("sum_1000");
    group.bench_function("primal", |b| b.iter(|| sum_iter(black_box(&x))));
    group.bench_function("hand_gradient", |b| b.iter(|| sum_gradient(black_box(&x), &mut g)));
    group.bench_function("derived_forward", |b| {
        b.iter(|| sum_iter_frule(Dual::new(black_box(&x[..]), &dx[..])).tangent)
    });
    group.bench_function("derived_reverse", |b| {
        b.iter(|| value_and_gradient!(sum_iter(black_box(&x))))
    });
    group.finish();
    let mut group = c.benchmark_group("_sum_1000");
    group.bench_function("primal", |b| b.iter(|| sum_loop(black_box(&x))));
    group.bench_function("hand_gradient", |b| b.iter(|| sum_gradient(black_box(&x), &mut g)));
    group.bench_function("derived_forward", |b| {
        b.iter(|| sum_loop_frule(Dual::new(black_box(&x[..]), &dx[..])).tangent)
    });
    group.bench_function("derived_reverse", |b| {
        b.iter(|| value_and_gradient!(sum_loop(black_box(&x))))
    });
    group.finish();
}

fn bench_sum_sin(c: &mut Criterion) {
    let mut group = c.benchmark_group("sum_sin");
    for n in [100usize, 1000, 10_000] {
        let x = inputs(n, 1);
        let dx = inputs(n, 2);
        let mut g = vec![0.0; n];
        group.bench_with_input(BenchmarkId::new("primal", n), &x, |b, x| {
            b.iter(|| sum_sin(black_box(x)))
        });
        group.bench_with_input(BenchmarkId::new("hand_gradient", n), &x, |b, x| {
            b.iter(|| sum_sin_gradient(black_box(x), &mut g))
        });
        group.bench_with_input(BenchmarkId::new("derived_forward", n), &x, |b, x| {
            b.iter(|| sum_sin_frule(Dual::new(black_box(&x[..]), &dx[..])).tangent)
        });
        group.bench_with_input(BenchmarkId::new("derived_reverse", n), &x, |b, x| {
            b.iter(|| value_and_gradient!(sum_sin(black_box(x))))
        });
    }
    group.finish();
}

fn bench_least_squares(c: &mut Criterion) {
    let mut group = c.benchmark_group("least_squares");
    for (rows, cols) in [(100usize, 10usize), (1000, 10)] {
        let (a, y, w) = (inputs(rows * cols, 1), inputs(rows, 2), inputs(cols, 3));
        let (da, dy, dw) = (vec![0.0; rows * cols], vec![0.0; rows], inputs(cols, 4));
        let mut g = vec![0.0; cols];
        let id = format!("{rows}x{cols}");
        group.bench_function(BenchmarkId::new("primal", &id), |b| {
            b.iter(|| least_squares(black_box(&a), &y, &w))
        });
        group.bench_function(BenchmarkId::new("hand_gradient", &id), |b| {
            b.iter(|| least_squares_gradient(black_box(&a), &y, &w, &mut g))
        });
        group.bench_function(BenchmarkId::new("derived_forward", &id), |b| {
            b.iter(|| {
                least_squares_frule(
                    Dual::new(black_box(&a[..]), &da[..]),
                    Dual::new(&y[..], &dy[..]),
                    Dual::new(&w[..], &dw[..]),
                )
                .tangent
            })
        });
        group.bench_function(BenchmarkId::new("derived_reverse", &id), |b| {
            b.iter(|| value_and_gradient!(least_squares(black_box(&a), &y, &w)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_sums, bench_sum_sin, bench_least_squares);
criterion_main!(benches);
