//! Blocks of a loop that store into a buffer built in the body and that the reverse sweep runs
//! again (issue 13, `reverse/replay.rs`, `Replay::stores`): the block's tape keeps the records of
//! its stores (the index and the element overwritten) and, per execution, only the integers the
//! loop does not record itself; its loads and products are computed again in the reverse sweep,
//! from the arguments and from the buffers built in the body, which hold there what they held
//! in the forward sweep (every later store has been undone by then). `gmm`'s shape: scratch
//! buffers made after a first loop, rewritten per point and read back by a triangular product.
//!
//! Each shape the planner accepts is here beside the ones it must refuse (a load of the buffer
//! the block stores into; a buffer made where an early `return` may skip it). `test_rule!`
//! checks both modes against central finite differences and each other, that the arguments are
//! left as they were, and, in these debug builds, every access through a window.

#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)] // written as users write them

use mooncake_runtime::prelude::*;

/// `gmm`'s inner loops on their own: per point, `xc = x - mu` and `qxc = diag(q) xc + L xc` with
/// `L` strictly lower triangular, then `|qxc|²`; the scratch buffers are made after a first
/// loop.
#[differentiable]
fn triangular_quadratic(x: &[f64], mu: &[f64], q: &[f64], d: usize) -> f64 {
    let n = x.len() / d;
    let mut diag = vec![0.0; d];
    for j in 0..d {
        diag[j] = q[j].exp();
    }
    let mut xc = vec![0.0; d];
    let mut qxc = vec![0.0; d];
    let mut total = 0.0;
    for i in 0..n {
        for j in 0..d {
            xc[j] = x[i * d + j] - mu[j];
        }
        for j in 0..d {
            qxc[j] = diag[j] * xc[j];
        }
        let mut idx = d;
        for col in 0..d {
            for row in (col + 1)..d {
                qxc[row] += q[idx] * xc[col];
                idx += 1;
            }
        }
        let mut sq = 0.0;
        for j in 0..d {
            sq += qxc[j] * qxc[j];
        }
        total += -0.5 * sq;
    }
    total
}

/// The same quadratic form written out by hand, for a check that does not go through the rule.
fn triangular_quadratic_direct(x: &[f64], mu: &[f64], q: &[f64], d: usize) -> f64 {
    let mut total = 0.0;
    for p in x.chunks(d) {
        let xc: Vec<f64> = p.iter().zip(mu).map(|(a, b)| a - b).collect();
        let mut idx = d;
        let mut qxc: Vec<f64> = (0..d).map(|j| q[j].exp() * xc[j]).collect();
        for col in 0..d {
            for row in (col + 1)..d {
                qxc[row] += q[idx] * xc[col];
                idx += 1;
            }
        }
        total -= 0.5 * qxc.iter().map(|v| v * v).sum::<f64>();
    }
    total
}

/// A block that reads the buffer it stores into (`b[j] = b[j] * x[j] + ..`): the value loaded
/// would be read again after the store, so the block stays on the tape.
#[differentiable]
fn update_in_place(x: &[f64], steps: usize) -> f64 {
    let n = x.len();
    let mut b = vec![1.0; n];
    for _ in 0..steps {
        for j in 0..n {
            b[j] = b[j] * x[j] + 0.25;
        }
    }
    let mut s = 0.0;
    for j in 0..n {
        s += b[j] * b[j];
    }
    s
}

/// A store at the next index from a load at this one (`b[j + 1] = b[j] * x[j]`): a prefix
/// product, the same refusal.
#[differentiable]
fn shifted_store(x: &[f64]) -> f64 {
    let n = x.len();
    let mut b = vec![0.0; n + 1];
    b[0] = 1.0;
    for j in 0..n {
        b[j + 1] = b[j] * x[j];
    }
    let mut s = 0.0;
    for j in 0..n + 1 {
        s += b[j];
    }
    s
}

/// A scratch buffer made after a loop that may `return` early: the pullback cannot hold it (it
/// may never have been made), so the loads of it stay on the tape; both paths differentiated.
#[differentiable]
fn scratch_after_early_return(x: &[f64], cap: f64) -> f64 {
    let n = x.len();
    for i in 0..n {
        if x[i] > cap {
            return x[i] * x[i];
        }
    }
    let mut h = vec![0.0; n];
    let mut loss = 0.0;
    for s in 0..3 {
        let t = s as f64 + 0.5;
        for j in 0..n {
            h[j] = x[j] * t;
        }
        let mut o = 0.0;
        for j in 0..n {
            o += h[j] * x[j];
        }
        loss += o * o;
    }
    loss
}

/// Two stores in one block, into two buffers, and a later block of the same iteration that
/// reads one of them: the records of both on the block's tape.
#[differentiable]
fn two_stores(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut a = vec![0.0; n];
    let mut b = vec![0.0; n];
    let mut s = 0.0;
    for k in 0..4 {
        let w = k as f64 * 0.3 + 1.0;
        for j in 0..n {
            a[j] = x[j] * w;
            b[j] = y[j] - w;
        }
        for j in 0..n {
            s += a[j] * b[j] + a[j] * a[j];
        }
    }
    s
}

/// A store under a branch of the loop's body, and a value carried from one iteration to the
/// next (`c`), which the block's tape keeps with the record.
#[differentiable]
fn carried_value_and_branch(x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    let mut s = 0.0;
    for r in 0..3 {
        let mut c = 0.5 + r as f64;
        for j in 0..n {
            c = c * 0.9 + x[j];
            h[j] = c * x[j];
            if x[j] > 0.0 {
                h[j] = h[j] * 2.0;
            }
        }
        for j in 0..n {
            s += h[j] * h[j];
        }
    }
    s
}

/// `&mut` output written by a loop whose block re-runs with its records, then read back.
#[differentiable]
fn into_mut_output(x: &[f64], out: &mut [f64]) -> f64 {
    let n = x.len();
    let mut t = vec![0.0; n];
    let mut s = 0.0;
    for r in 0..2 {
        let k = 1.0 + r as f64;
        for j in 0..n {
            t[j] = x[j] * k;
        }
        for j in 0..n {
            out[j] += t[j] * t[j];
            s += out[j];
        }
    }
    s
}

/// Two buffers written in turn from each other (`b` from `a`, then `a` from `b`), each store
/// block run again with its records: every re-run load reads a buffer the sweep has put back.
#[differentiable]
fn ping_pong(x: &[f64], steps: usize) -> f64 {
    let n = x.len();
    let mut a = x.to_vec();
    let mut b = vec![0.0; n];
    for _ in 0..steps {
        for i in 0..n {
            b[i] = a[i] * 0.5 + x[i];
        }
        for i in 0..n {
            a[i] = b[i] * b[i] - 0.1;
        }
    }
    a.iter().sum::<f64>() + b.iter().sum::<f64>()
}

/// A load of the buffer in a block before the branch, the store after it (two blocks of one
/// iteration), with a counter stepped beside the loop's.
#[differentiable]
fn split_blocks(x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    let mut s = 0.0;
    let mut idx = 0;
    for r in 0..3 {
        for i in 0..n {
            let old = h[i];
            if x[i] > 0.0 {
                s += old * x[i];
            }
            h[i] = x[i] * (r as f64 + 1.0) + 0.5;
            idx += 1;
        }
    }
    s + h.iter().sum::<f64>() + idx as f64
}

/// A `while` loop with a `break` whose stores are run again.
#[differentiable]
fn while_break_store(x: &[f64], cap: f64) -> f64 {
    let n = x.len();
    let mut h = vec![0.0; n];
    let mut total = 0.0;
    for r in 0..2 {
        let mut i = 0;
        while i < n {
            h[i] = x[i] * (r as f64 + 2.0);
            total += h[i];
            if total > cap {
                break;
            }
            i += 1;
        }
    }
    total + h[0]
}

/// A buffer zeroed, then accumulated at a second counter stepped across a nested loop.
#[differentiable]
fn strided(x: &[f64], m: usize) -> f64 {
    let n = x.len() / m;
    let mut acc = vec![0.0; m];
    let mut out = 0.0;
    for rep in 0..2 {
        for j in 0..m {
            acc[j] = 0.0;
        }
        let mut k = 0;
        for _ in 0..n {
            for j in 0..m {
                acc[j] += x[k] * (rep as f64 + 1.0);
                k += 1;
            }
        }
        for j in 0..m {
            out += acc[j] * acc[j];
        }
    }
    out
}

#[test]
fn triangular_products_of_scratch_buffers() {
    let d = 4;
    let x: Vec<f64> = (0..3 * d).map(|k| ((k * 7 % 11) as f64 - 5.0) * 0.2).collect();
    let mu = [0.1, -0.2, 0.3, 0.05];
    let q: Vec<f64> = (0..d * (d + 1) / 2).map(|k| 0.1 * k as f64 - 0.4).collect();
    test_rule!(triangular_quadratic(&x, &mu, &q, d));
    let (y, (gx, gmu, gq, _)) = value_and_gradient!(triangular_quadratic(&x, &mu, &q, d));
    assert!((y - triangular_quadratic_direct(&x, &mu, &q, d)).abs() < 1e-12);
    // The gradient against central differences of the direct form, component by component.
    let h = 1e-6;
    let fd = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    for k in 0..q.len() {
        let g = fd(&|e| {
            let mut q2 = q.clone();
            q2[k] += e;
            triangular_quadratic_direct(&x, &mu, &q2, d)
        });
        assert!((g - gq[k]).abs() < 1e-6 * (1.0 + g.abs()), "q[{k}]: {g} vs {}", gq[k]);
    }
    // Translation invariance: moving every point and the mean together changes nothing.
    let sum_x: Vec<f64> = (0..d).map(|j| (0..3).map(|i| gx[i * d + j]).sum()).collect();
    for j in 0..d {
        assert!((sum_x[j] + gmu[j]).abs() < 1e-10, "{} vs {}", sum_x[j], gmu[j]);
    }
}

#[test]
fn loads_of_the_stored_buffer_keep_the_block_on_the_tape() {
    test_rule!(update_in_place(&[0.5, -1.2, 0.9], 3));
    test_rule!(shifted_store(&[0.5, -1.2, 0.9, 1.1]));
    // The prefix products, by hand: 1 + x0 + x0 x1 + ...
    let x = [0.5, -1.2, 0.9, 1.1];
    let (_, (g,)) = value_and_gradient!(shifted_store(&x));
    let expect = [
        1.0 + x[1] + x[1] * x[2] + x[1] * x[2] * x[3],
        x[0] + x[0] * x[2] + x[0] * x[2] * x[3],
        x[0] * x[1] + x[0] * x[1] * x[3],
        x[0] * x[1] * x[2],
    ];
    for k in 0..4 {
        assert!((g[k] - expect[k]).abs() < 1e-12, "{k}: {} vs {}", g[k], expect[k]);
    }
}

#[test]
fn buffers_made_after_an_early_return() {
    // The loop runs through: the scratch buffer is made and used.
    test_rule!(scratch_after_early_return(&[0.5, -1.2, 0.9], 2.0));
    // The early return is taken: the buffer is never made.
    test_rule!(scratch_after_early_return(&[0.5, 3.0, 0.9], 2.0));
    let (y, (g, _)) = value_and_gradient!(scratch_after_early_return(&[0.5, 3.0, 0.9], 2.0));
    assert_eq!(y, 9.0);
    assert_eq!(g, [0.0, 6.0, 0.0]);
}

#[test]
fn several_stores_branches_carried_values_and_outputs() {
    test_rule!(two_stores(&[0.5, -1.2, 0.9], &[0.3, 0.2, -0.7]));
    test_rule!(carried_value_and_branch(&[0.5, -1.2, 0.9, 0.1]));
    let out = vec![0.1, 0.2, -0.3];
    test_rule!(into_mut_output(&[0.5, -1.2, 0.9], &mut out));
}

#[test]
fn buffers_written_in_turn_split_blocks_breaks_and_strides() {
    test_rule!(ping_pong(&[0.3, -0.5, 0.8], 3));
    test_rule!(split_blocks(&[0.3, -0.5, 0.8]));
    test_rule!(while_break_store(&[0.3, 0.5, 0.8], 2.0));
    test_rule!(while_break_store(&[0.3, 0.5, 0.8], 100.0));
    test_rule!(strided(&[0.3, -0.5, 0.8, 0.1, 0.2, 0.7], 2));
}
