//! Repeated prepared gradients (`value_and_gradient!(.., cache = &mut cache)`) of the same
//! function at the same sizes allocate nothing after the first call: counted by a global
//! allocator that counts every allocation of the process. It runs without the test harness
//! (`harness = false`: a `main` of its own), whose threads would otherwise allocate while it
//! counts (seen on a loaded machine: 4 allocations of the harness in the counted region).

use mooncake_runtime::prelude::*;
use mooncake_tests::prepared::*;
use mooncake_tests::recursion;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    no_allocation_after_the_first_call();
    built_buffers_reuse_their_memory();
    loans_of_numbers_seed_in_place();
    println!("allocation_free: repeated prepared gradients allocate nothing");
}

fn no_allocation_after_the_first_call() {
    let (m, x, y, mut state) = data(50, 4);
    let mut cache = GradientCache::new();
    // The first call prepares the cache and fills the tape pools.
    let (first, _) = value_and_gradient!(loss(&m, &x, &y, &mut state, 0.5), cache = &mut cache);
    let region = Region::new(GLOBAL);
    let mut values = [0.0; 10];
    for v in values.iter_mut() {
        let (value, (gm, ..)) =
            value_and_gradient!(loss(&m, &x, &y, &mut state, 0.5), cache = &mut cache);
        *v = value + 0.0 * gm.b;
    }
    let stats = region.change();
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "repeated prepared gradients allocated: {stats:?}"
    );
    assert!(values.iter().all(|v| *v == first));
    // Recursion (here mutual) too: one pooled box per level, reused.
    let mut rcache = GradientCache::new();
    let (first, _) = value_and_gradient!(recursion::ping(0.7, 20), cache = &mut rcache);
    let region = Region::new(GLOBAL);
    for v in values.iter_mut() {
        let (value, (dx, _)) = value_and_gradient!(recursion::ping(0.7, 20), cache = &mut rcache);
        *v = value + 0.0 * dx;
    }
    let stats = region.change();
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "repeated prepared gradients of a recursive function allocated: {stats:?}"
    );
    assert!(values.iter().all(|v| *v == first));
    // The plain form, by contrast, allocates its shadows and gradients on every call: the
    // counter does count.
    let region = Region::new(GLOBAL);
    let _ = value_and_gradient!(loss(&m, &x, &y, &mut state, 0.5));
    assert!(region.change().allocations > 0);
}

/// A product built into a large buffer and a large copy of an argument, then reduced.
#[differentiable]
fn outer_sum(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() * y.len();
    let mut k = vec![0.0; n];
    for i in 0..x.len() {
        for j in 0..y.len() {
            k[i * y.len() + j] = x[i] * y[j];
        }
    }
    let mut c = x.to_vec();
    for v in c.iter_mut() {
        *v = *v * *v;
    }
    k.iter().sum::<f64>() + c.iter().sum::<f64>()
}

/// Buffers a reverse rule builds (`vec![0.0; n]`, `x.to_vec()`), when large, get their memory
/// from a pool of the thread's and give it back after the pullback: a repeated gradient
/// allocates only small bookkeeping, not the buffers again (whose pages the kernel would fault
/// in at every call once the allocator had returned them).
fn built_buffers_reuse_their_memory() {
    let x: Vec<f64> = (0..20_000).map(|k| (k as f64 * 0.37).sin()).collect();
    let y = [0.5, -1.5, 2.0];
    let mut cache = GradientCache::new();
    let (first, (gx, gy)) = value_and_gradient!(outer_sum(&x, &y), cache = &mut cache);
    let (sum_y, sum_x) = (y.iter().sum::<f64>(), x.iter().sum::<f64>());
    assert!((gx[7] - (sum_y + 2.0 * x[7])).abs() < 1e-9 && (gy[1] - sum_x).abs() < 1e-6);
    let region = Region::new(GLOBAL);
    for _ in 0..10 {
        let (value, _) = value_and_gradient!(outer_sum(&x, &y), cache = &mut cache);
        assert_eq!(value, first);
    }
    let stats = region.change();
    // The product (60,000 numbers), its shadow, the copy and its shadow are 1.3 MB a call.
    assert!(
        stats.bytes_allocated < 10 * 4096,
        "repeated gradients allocated their built buffers again: {stats:?}"
    );
}

#[differentiable]
fn bump(s: &mut f64, c: f64) {
    *s = *s * c + 1.0;
}

#[differentiable]
fn bumped(x: f64) -> f64 {
    let mut s = x;
    for _ in 0..100 {
        bump(&mut s, x);
    }
    s
}

/// A local number lent `&mut` to a call gets a handle and a shadow (two allocations per loan
/// today); the reverse pass seeds the shadow in place (`Primal::move_cotangent_to_shadow`),
/// where a seed through tangents made a third.
fn loans_of_numbers_seed_in_place() {
    let mut cache = GradientCache::new();
    let (first, _) = value_and_gradient!(bumped(0.9), cache = &mut cache);
    let region = Region::new(GLOBAL);
    let (value, (dx,)) = value_and_gradient!(bumped(0.9), cache = &mut cache);
    let stats = region.change();
    assert_eq!(value, first);
    assert!(dx.is_finite());
    assert!(stats.allocations <= 200, "100 loans allocated {} times", stats.allocations);
}
