//! Repeated prepared Hessian-vector products and Hessians (`hvp!(.., cache = &mut cache)`,
//! `hessian!(.., cache = &mut cache)`) allocate nothing of their own after the first call:
//! counted by a global allocator that counts every allocation of the process, without the test
//! harness (whose threads would allocate while it counts), as `allocation_free.rs` does for
//! gradients.
//!
//! The function's own reverse rule allocates nothing either once its tapes are pooled: a
//! function generic over `T: Float` (which `hvp!` needs) pools its loop tapes and its callees'
//! pullbacks like a non-generic one, its instantiations (`f64` for the gradient, `Fwd<f64>` for
//! the product) sharing each site's pool. The test checks (1) a function without loops or calls
//! and (2) one with loops, a branch and a call, gradients and products interleaved.

#![allow(clippy::needless_range_loop)] // index loops, as written

use mooncake_runtime::prelude::*;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Straight-line code: no loop, no call.
#[differentiable]
fn straight<T: Float>(x: &[T], a: T, c: &[T]) -> T {
    let u = x[0] * x[1] * c[0] + (x[2] * a).sin();
    let v = if x[3] > T::ZERO { x[3].sqrt() * u } else { x[3] * x[3] - u };
    u * v + a.tanh() * x[0] + c[1] * x[1].exp()
}

/// The prediction for row `row` of the row-major matrix `x`.
#[differentiable]
fn predict<T: Float>(w: &[T], b: T, x: &[T], row: usize) -> T {
    let n = w.len();
    let mut s = b;
    for j in 0..n {
        s += w[j] * x[row * n + j];
    }
    s
}

/// A loss with a loop, a branch and a call, as `allocation_free.rs`'s.
#[differentiable]
fn loss<T: Float>(w: &[T], b: T, x: &[T], y: &[T]) -> T {
    let mut total = T::ZERO;
    for r in 0..y.len() {
        let e = predict(w, b, x, r) - y[r];
        if e > T::ZERO {
            total += e * e * e.tanh();
        } else {
            total += T::from_f64(0.5) * e * e;
        }
    }
    total + b.sin() * b
}

fn main() {
    // (1) No allocation at all.
    let x = vec![0.3, -1.2, 0.8, 2.0];
    let c = vec![1.5, -0.5];
    let (u, v) = (vec![1.0, -0.5, 0.25, 2.0], vec![0.0, 1.0, 0.0, -1.0]);
    let mut cache = HvpCache::new();
    let (first, ..) = hvp!(straight(&x, 0.7, Const(&c)), (&u, 1.0, NoTangent), cache = &mut cache);
    let region = Region::new(GLOBAL);
    let mut sums = [0.0; 10];
    for (k, s) in sums.iter_mut().enumerate() {
        let d = if k % 2 == 0 { &u } else { &v };
        let (y, (g, ga, _), (h, ha, _)) =
            hvp!(straight(&x, 0.7, Const(&c)), (d, 1.0, NoTangent), cache = &mut cache);
        *s = y + g[0] + *ga + h[1] + *ha;
    }
    let stats = region.change();
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "repeated prepared Hessian-vector products allocated: {stats:?}"
    );
    assert!(sums.iter().all(|s| s.is_finite()));
    // The same numbers as the plain form, which does allocate.
    let region = Region::new(GLOBAL);
    let (y0, (g0, ga0, _), (h0, ha0, _)) = hvp!(straight(&x, 0.7, Const(&c)), (&v, 1.0, NoTangent));
    assert!(region.change().allocations > 0);
    let (y1, (g1, ga1, _), (h1, ha1, _)) =
        hvp!(straight(&x, 0.7, Const(&c)), (&v, 1.0, NoTangent), cache = &mut cache);
    assert_eq!((y1, g1, *ga1, h1, *ha1), (y0, &g0, ga0, &h0, ha0));
    assert_eq!(first, y0);

    // The prepared Hessian too: 4 + 1 products per call, nothing allocated.
    let mut hcache = HvpCache::new();
    let (h0, ..) = hessian!(straight(&x, 0.7, Const(&c)), cache = &mut hcache);
    let region = Region::new(GLOBAL);
    for s in sums.iter_mut() {
        let (y, g, h) = hessian!(straight(&x, 0.7, Const(&c)), cache = &mut hcache);
        *s = y + g[4] + h[(1, 2)];
    }
    let stats = region.change();
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "repeated prepared Hessians allocated: {stats:?}"
    );
    assert_eq!(h0, straight(&x, 0.7, &c));
    let (_, g, h) = hessian!(straight(&x, 0.7, Const(&c)));
    let (_, gc, hc) = hessian!(straight(&x, 0.7, Const(&c)), cache = &mut hcache);
    assert_eq!((&g[..], &h), (gc, hc));

    // (2) With loops and a call, the gradient (at `f64`) and the product (at `Fwd<f64>`)
    // interleaved: nothing allocated either.
    let (cols, rows) = (4, 30);
    let w: Vec<f64> = (0..cols).map(|i| 0.3 - 0.2 * i as f64).collect();
    let xm: Vec<f64> = (0..rows * cols).map(|i| (i as f64 * 0.37).sin()).collect();
    let ym: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.11).cos()).collect();
    let mut gcache = GradientCache::new();
    let mut hcache = HvpCache::new();
    for _ in 0..2 {
        let _ = value_and_gradient!(loss(&w, 0.4, Const(&xm), Const(&ym)), cache = &mut gcache);
        let _ = hvp!(
            loss(&w, 0.4, Const(&xm), Const(&ym)),
            (&u, 1.0, NoTangent, NoTangent),
            cache = &mut hcache
        );
    }
    let region = Region::new(GLOBAL);
    let _ = value_and_gradient!(loss(&w, 0.4, Const(&xm), Const(&ym)), cache = &mut gcache);
    let gradient = region.change();
    let region = Region::new(GLOBAL);
    let _ = hvp!(
        loss(&w, 0.4, Const(&xm), Const(&ym)),
        (&v, 1.0, NoTangent, NoTangent),
        cache = &mut hcache
    );
    let product = region.change();
    assert_eq!(
        (gradient.allocations, gradient.reallocations),
        (0, 0),
        "a prepared gradient of a generic function with loops allocated: {gradient:?}"
    );
    assert_eq!(
        (product.allocations, product.reallocations),
        (0, 0),
        "a prepared Hessian-vector product of a generic function with loops allocated: {product:?}"
    );
    println!(
        "hvp_allocation_free: repeated prepared gradients and Hessian-vector products of generic \
         functions allocate nothing"
    );
}
