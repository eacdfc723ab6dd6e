//! `kron_sum`: the sum of the Kronecker product of two square matrices, the product built by
//! loops into a buffer and then summed (Mooncake.jl: `sum(kron(x, y))`).

use mooncake_runtime::prelude::*;

/// `Σ (A ⊗ B)` for `A` (`na × na`) and `B` (`nb × nb`), both row-major: the product is written
/// into a buffer of `(na nb)²` entries, `K[i nb + k, j nb + l] = A[i, j] B[k, l]`, then summed.
#[differentiable]
pub fn kron_sum(a: &[f64], b: &[f64], na: usize, nb: usize) -> f64 {
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
    k.iter().sum::<f64>()
}

/// The gradient of [`kron_sum`] by hand: the product's cotangent is all ones, so the adjoint
/// visits each product once without storing it (`Ā[i, j] += B[k, l]`, `B̄[k, l] += A[i, j]`).
pub fn kron_sum_gradient(
    a: &[f64],
    b: &[f64],
    na: usize,
    nb: usize,
    ga: &mut [f64],
    gb: &mut [f64],
) -> f64 {
    ga.fill(0.0);
    gb.fill(0.0);
    let mut s = 0.0;
    for (aij, gaij) in a[..na * na].iter().zip(ga.iter_mut()) {
        for (bkl, gbkl) in b[..nb * nb].iter().zip(gb.iter_mut()) {
            s += aij * bkl;
            *gaij += bkl;
            *gbkl += aij;
        }
    }
    s
}
