//! What a loop records where it exits, for the blocks inside it that the reverse sweep runs again
//! (issue 13, `reverse/counters.rs`): a value that an inner loop reads and that no loop between
//! the block and some outer loop assigns is recorded once per execution of that outer loop, not
//! once per execution of the innermost loop. `kron_sum`'s shape: `aij`, read by the two inner
//! loops, is recorded by the loop over `r`, the product's length `n` once for the whole nest.
//!
//! The shapes here are the ones where the outer record must hold on every path: a loop left by
//! `break` or `continue` between the record and the block, a `while` loop, a value read by two
//! sibling loops, and an integer the middle loop steps (which stays in the inner loop's record).
//! `test_rule!` checks both modes against central finite differences and each other, and that
//! the arguments are left as they were; each function is also checked against the same sum
//! written directly.

#![allow(clippy::needless_range_loop)] // written as users write them

use approx::assert_relative_eq;
use mooncake_runtime::prelude::*;

/// The sum of the Kronecker product `a ⊗ b` weighted by `w`, built by four loops (`aij` is read
/// by the two inner ones; `n` by the innermost).
#[differentiable]
fn weighted_kron(a: &[f64], b: &[f64], w: &[f64], na: usize, nb: usize) -> f64 {
    let n = na * nb;
    let mut k = vec![0.0; n * n];
    for i in 0..na {
        for j in 0..na {
            let aij = a[i * na + j];
            for r in 0..nb {
                for c in 0..nb {
                    k[(i * nb + r) * n + j * nb + c] = aij * b[r * nb + c];
                }
            }
        }
    }
    let mut s = 0.0;
    for e in 0..n * n {
        s += w[e] * k[e];
    }
    s
}

fn weighted_kron_direct(a: &[f64], b: &[f64], w: &[f64], na: usize, nb: usize) -> f64 {
    let n = na * nb;
    let mut s = 0.0;
    for i in 0..na {
        for j in 0..na {
            for r in 0..nb {
                for c in 0..nb {
                    s += w[(i * nb + r) * n + j * nb + c] * a[i * na + j] * b[r * nb + c];
                }
            }
        }
    }
    s
}

/// The middle loop left early by `break` and `continue`, so that the outer loop's record is
/// pushed where the middle loop's is not; `scale` is read by the innermost loop only.
#[differentiable]
fn rows_until(x: &[f64], y: &[f64], rows: usize, cols: usize, stop: usize) -> f64 {
    let mut out = vec![0.0; rows * cols];
    let mut total = 0.0;
    for i in 0..rows {
        let scale = x[i] * x[i] + 1.0;
        for j in 0..rows {
            if j == stop {
                break;
            }
            if j == i {
                continue;
            }
            for c in 0..cols {
                out[i * cols + c] = scale * y[j * cols + c];
            }
            for c in 0..cols {
                total += out[i * cols + c] * x[j];
            }
        }
    }
    total
}

fn rows_until_direct(x: &[f64], y: &[f64], rows: usize, cols: usize, stop: usize) -> f64 {
    let mut total = 0.0;
    for i in 0..rows {
        for j in 0..rows.min(stop) {
            if j != i {
                for c in 0..cols {
                    total += (x[i] * x[i] + 1.0) * y[j * cols + c] * x[j];
                }
            }
        }
    }
    total
}

/// `while` loops around a counted one, with an index the middle loop steps (`idx`, recorded by
/// the inner loop's exit as before) beside a value it never assigns (`m`).
#[differentiable]
fn stepped_and_fixed(x: &[f64], q: &[f64], d: usize) -> f64 {
    let m = q[0] * 0.5;
    let mut buf = vec![0.0; d];
    let mut total = 0.0;
    let mut p = 0;
    while p + d <= x.len() {
        let mut idx = 1;
        let mut col = 0;
        while col < d {
            for row in col..d {
                buf[row] = m * x[p + col] + q[idx];
                idx += 1;
            }
            for row in col..d {
                total += buf[row] * buf[row];
            }
            col += 1;
        }
        p += d;
    }
    total
}

fn stepped_and_fixed_direct(x: &[f64], q: &[f64], d: usize) -> f64 {
    let m = q[0] * 0.5;
    let mut total = 0.0;
    for p in x.chunks_exact(d) {
        let mut idx = 1;
        for col in 0..d {
            for _row in col..d {
                let v = m * p[col] + q[idx];
                total += v * v;
                idx += 1;
            }
        }
    }
    total
}

#[test]
fn a_value_read_by_inner_loops_is_recorded_by_the_outer_one() {
    let (na, nb) = (3, 2);
    let a: Vec<f64> = (0..na * na).map(|i| 0.3 + 0.2 * i as f64).collect();
    let b: Vec<f64> = (0..nb * nb).map(|i| -0.7 + 0.45 * i as f64).collect();
    let n = na * nb;
    let w: Vec<f64> = (0..n * n).map(|e| ((e * 7) % 11) as f64 * 0.1 - 0.4).collect();
    assert_relative_eq!(
        weighted_kron(&a, &b, &w, na, nb),
        weighted_kron_direct(&a, &b, &w, na, nb),
        max_relative = 1e-12
    );
    test_rule!(weighted_kron(&a, &b, &w, na, nb));
    // The gradient of `a[i, j]` is `Σ_rc w[..] b[r, c]`, of `b[r, c]` `Σ_ij w[..] a[i, j]`.
    let (_, (ga, gb, gw, _, _)) = value_and_gradient!(weighted_kron(&a, &b, &w, na, nb));
    for i in 0..na {
        for j in 0..na {
            let mut want = 0.0;
            for r in 0..nb {
                for c in 0..nb {
                    want += w[(i * nb + r) * n + j * nb + c] * b[r * nb + c];
                }
            }
            assert_relative_eq!(ga[i * na + j], want, max_relative = 1e-12);
        }
    }
    for r in 0..nb {
        for c in 0..nb {
            let mut want = 0.0;
            for i in 0..na {
                for j in 0..na {
                    want += w[(i * nb + r) * n + j * nb + c] * a[i * na + j];
                }
            }
            assert_relative_eq!(gb[r * nb + c], want, max_relative = 1e-12);
        }
    }
    // Row `1 = i nb + r` and column `1 = j nb + c` of the product: `i = j = 0`, `r = c = 1`.
    assert_relative_eq!(gw[n + 1], a[0] * b[nb + 1], max_relative = 1e-12);
}

#[test]
fn the_outer_record_holds_when_the_middle_loop_breaks_or_continues() {
    let (rows, cols) = (4, 3);
    let x = [0.5, -1.2, 0.9, 1.7];
    let y: Vec<f64> = (0..rows * cols).map(|e| 0.25 * e as f64 - 1.1).collect();
    for stop in [0, 2, 3, 9] {
        assert_relative_eq!(
            rows_until(&x, &y, rows, cols, stop),
            rows_until_direct(&x, &y, rows, cols, stop),
            max_relative = 1e-12
        );
        test_rule!(rows_until(&x, &y, rows, cols, stop));
    }
}

#[test]
fn a_stepped_index_beside_a_fixed_value_in_while_loops() {
    let d = 3;
    let x = [0.5, -1.2, 0.9, 1.7, -0.3, 0.8];
    let q = [0.9, 0.1, -0.4, 0.6, 1.3, -0.8, 0.2];
    assert_relative_eq!(
        stepped_and_fixed(&x, &q, d),
        stepped_and_fixed_direct(&x, &q, d),
        max_relative = 1e-12
    );
    test_rule!(stepped_and_fixed(&x, &q, d));
}
