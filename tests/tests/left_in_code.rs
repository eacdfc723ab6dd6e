//! What people leave in numerical code (issue 14, item 10): printing (`println!`, `print!`,
//! `eprintln!`, `eprint!`, with format strings capturing names, `{x}`, `{x:.3}`), and `dbg!`
//! around a value, run on primal values with no derivative; `use`, `const` and `fn` items at the
//! top of the body (a nested `fn` is differentiated itself). The gradients are checked by
//! `test_rule!` in both modes.

#![allow(clippy::needless_range_loop, clippy::dbg_macro, clippy::print_with_newline)] // as users leave them

use mooncake_runtime::prelude::*;

#[differentiable]
fn printed_loss(x: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let r = w * x[i] - 1.0;
        s += r * r;
        if i == 0 {
            println!("first residual {r:.3}, weight {}", w);
        }
    }
    eprintln!("loss {s} over {} points ({{braces}} kept)", x.len());
    s
}

#[differentiable]
fn debugged(x: f64, y: f64) -> f64 {
    let z = dbg!(x * y) + 1.0;
    print!("z = {z}; ");
    eprint!("{}\n", z.sin());
    dbg!(z.sin()) * dbg!(y)
}

#[differentiable]
fn with_items(x: &[f64], w: f64) -> f64 {
    use std::f64::consts::PI;
    const K: f64 = 2.0;
    fn helper(v: f64, w: f64) -> f64 {
        (w * v).sin() * K
    }
    #[differentiable]
    fn marked(v: f64) -> f64 {
        v * v
    }
    let mut s = 0.0;
    for v in x.iter() {
        s += helper(*v, w) * PI + marked(*v);
    }
    s
}

#[test]
fn items_in_the_body() {
    let x = vec![0.3, -1.2, 0.8];
    test_rule!(with_items(&x, 0.7));
}

#[test]
fn printing_and_dbg_keep_the_derivative() {
    let x = vec![0.3, -1.2, 0.8];
    test_rule!(printed_loss(&x, 0.7));
    test_rule!(debugged(0.4, -1.3));
    let (v, (gx, gy)) = value_and_gradient!(debugged(0.4, -1.3));
    assert_eq!(v, debugged(0.4, -1.3));
    let z = 0.4f64 * -1.3 + 1.0;
    assert!((gx - z.cos() * -1.3 * -1.3).abs() < 1e-12);
    assert!((gy - (z.cos() * 0.4 * -1.3 + z.sin())).abs() < 1e-12);
}

/// A loss chosen by a `String` argument, compared with literals either way round.
#[differentiable]
fn loss_by_name(x: &[f64], kind: String) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += if kind == "l2" {
            v * v
        } else if "l1" == kind {
            v.abs()
        } else if kind != "huber" {
            v.sin()
        } else if v.abs() < 1.0 {
            0.5 * v * v
        } else {
            v.abs() - 0.5
        };
    }
    s
}

/// The same by a `&str`, matched on.
#[differentiable]
fn loss_by_str(x: &[f64], kind: &str) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += match kind {
            "l2" => v * v,
            "l1" => v.abs(),
            _ => v.sin(),
        };
    }
    s
}

#[test]
fn strings_choose_the_branch() {
    let x = vec![0.3, -1.7, 0.9];
    for kind in ["l2", "l1", "huber", "other"] {
        test_rule!(loss_by_name(&x, kind.to_string()));
        let (v, (g, _)) = value_and_gradient!(loss_by_str(&x, kind));
        assert_eq!(v, loss_by_str(&x, kind));
        // Against forward mode, one direction per element, and finite differences.
        for i in 0..3 {
            let mut t = vec![0.0; 3];
            t[i] = 1.0;
            let (_, d) = value_and_derivative!(loss_by_str(&x, kind), (t, NoTangent));
            assert!((d - g[i]).abs() < 1e-12, "{kind}: {d} against {}", g[i]);
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += 1e-6;
            xm[i] -= 1e-6;
            let fd = (loss_by_str(&xp, kind) - loss_by_str(&xm, kind)) / 2e-6;
            assert!((fd - g[i]).abs() < 1e-6, "{kind}: {fd} against {}", g[i]);
        }
    }
}

#[derive(Tangent, Clone, Debug)]
struct Spring {
    k: f64,
    rest: f64,
}

/// `Box<f64>` and `Box<S>` arguments: `*b` reads the value, `s.k` a field through the box; a
/// box built and returned (clippy would have the arguments unboxed; users box them all the same).
#[differentiable]
#[allow(clippy::boxed_local)]
fn boxed_energy(b: Box<f64>, s: Box<Spring>) -> f64 {
    let d = *b - s.rest;
    0.5 * s.k * d * d + b.sin()
}

#[differentiable]
fn boxed_scale(x: f64) -> Box<f64> {
    Box::new(2.0 * x)
}

#[differentiable]
fn through_boxes(x: f64, k: f64) -> f64 {
    let b = boxed_scale(x);
    boxed_energy(b, Box::new(Spring { k, rest: 0.5 }))
}

#[test]
fn boxed_arguments() {
    test_rule!(boxed_energy(Box::new(1.3), Box::new(Spring { k: 2.0, rest: 0.5 })));
    test_rule!(boxed_scale(0.7));
    test_rule!(through_boxes(0.7, 1.5));
    let (_, (db, ds)) =
        value_and_gradient!(boxed_energy(Box::new(1.3), Box::new(Spring { k: 2.0, rest: 0.5 })));
    assert!((db - (2.0 * 0.8 + 1.3_f64.cos())).abs() < 1e-12);
    assert!((ds.k - 0.5 * 0.8 * 0.8).abs() < 1e-12 && (ds.rest + 2.0 * 0.8).abs() < 1e-12);
}
