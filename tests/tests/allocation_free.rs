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
