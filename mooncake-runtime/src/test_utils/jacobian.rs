//! Checking Jacobians against finite differences, for any argument and result types whose
//! tangents have a flat view ([`FlatTangent`]): vectors, arrays, tuples, derived structs and
//! enums.
//!
//! [`fd_jacobian`] is the central-difference Jacobian of a function of one argument; it steps
//! along the basis tangents of the argument with [`Primal::perturb`] and reads each difference of
//! results off component by component with [`Primal::inner_difference`], so it needs no flat
//! view of the primal values, only of their tangents. [`check_jacobian`] compares a block that
//! [`value_and_jacobian!`](crate::value_and_jacobian) returned with it, column by column, trying
//! several step sizes as [`test_rule!`](crate::prelude::test_rule) does (a column passes if any
//! step agrees), and says which entry disagrees and by how much when none does.
//!
//! The argument is taken by value (an owned `Vec<f64>` for a function of `&[f64]`): perturbing a
//! shared reference is a no-op. The other arguments are captured by the closure.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::test_utils::check_jacobian;
//!
//! #[differentiable]
//! fn polar(r: f64, theta: f64) -> [f64; 2] {
//!     [r * theta.cos(), r * theta.sin()]
//! }
//!
//! let (r, theta) = (2.0, 0.3);
//! let (_, (jr, jt)) = value_and_jacobian!(polar(r, theta), mode = reverse);
//! check_jacobian(&jr, &r, |r| polar(*r, theta)).unwrap();
//! check_jacobian(&jt, &theta, |t| polar(r, *t)).unwrap();
//! // A wrong block is an error naming the entry.
//! let wrong = Jacobian::from_row_major(2, 1, vec![0.0, 0.0]).unwrap();
//! let e = check_jacobian(&wrong, &theta, |t| polar(r, *t)).unwrap_err();
//! assert!(e.to_string().contains("entry (1, 0) is 0 where central differences give 1.91"), "{e}");
//! ```

use crate::jacobian::{FlatTangent, Jacobian};
use crate::tangent::Primal;
use std::fmt;

/// The tolerances and step sizes of [`check_jacobian_with`].
#[derive(Clone, Debug)]
pub struct JacobianConfig {
    /// Relative tolerance: an entry passes if `|ad - fd| <= atol + rtol * max(|ad|, |fd|)`.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// The finite-difference step sizes to try; a column passes if any of them agrees.
    pub steps: Vec<f64>,
}

impl Default for JacobianConfig {
    /// `rtol = 1e-6`, `atol = 1e-8`, steps from `1e-3` to `1e-7`: tight enough to catch a wrong
    /// entry of a smooth `f64` function, loose enough for central differences to meet.
    fn default() -> Self {
        JacobianConfig { rtol: 1e-6, atol: 1e-8, steps: vec![1e-3, 1e-4, 1e-5, 1e-6, 1e-7] }
    }
}

/// A Jacobian block that disagrees with finite differences (or has another shape).
#[derive(Clone, Debug)]
pub struct JacobianMismatch {
    message: String,
}

impl fmt::Display for JacobianMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JacobianMismatch {}

/// The basis tangent of component `k` of `p`.
///
/// # Panics
/// If `p` has no more than `k` components.
fn basis<P: Primal + ?Sized>(p: &P, k: usize) -> P::Tangent
where
    P::Tangent: FlatTangent,
{
    let mut t = p.zero_tangent();
    assert!(t.set_flat(k, 1.0), "component {k} of a value with {} components", t.flat_len());
    t
}

/// The central-difference derivative of `f` at `x` along input component `j`, step `h`:
/// `<e_i, f(x + h e_j) - f(x - h e_j)> / 2h` for each output basis tangent `e_i` in `units`.
fn fd_column<X, Y>(
    x: &X,
    j: usize,
    h: f64,
    units: &[Y::Tangent],
    f: &mut impl FnMut(&X) -> Y,
) -> Vec<f64>
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    let e = basis(x, j);
    let (mut xp, mut xm) = (x.clone(), x.clone());
    xp.perturb(&e, h);
    xm.perturb(&e, -h);
    let (yp, ym) = (f(&xp), f(&xm));
    for y in [&yp, &ym] {
        let m = y.zero_tangent().flat_len();
        assert_eq!(
            m,
            units.len(),
            "mooncake: a perturbed argument changed the number of result components: {} at the \
             point, {m} at a step of {h} along component {j}",
            units.len()
        );
    }
    units.iter().map(|e| Y::inner_difference(e, &yp, &ym) / (2.0 * h)).collect()
}

/// What both the finite-difference Jacobian and its check start from: the number of the
/// result's components `m`, of the argument's `n`, and the result's `m` basis tangents.
fn at_point<X, Y>(x: &X, f: &mut impl FnMut(&X) -> Y) -> (usize, usize, Vec<Y::Tangent>)
where
    X: Primal,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    let y0 = f(x);
    let m = y0.zero_tangent().flat_len();
    let n = x.zero_tangent().flat_len();
    (m, n, (0..m).map(|i| basis(&y0, i)).collect())
}

/// The central-difference Jacobian of `f` at `x` with step `h` along each basis tangent of `x`:
/// `rows` = the components of `f(x)`, `cols` = those of `x`, counted as [`FlatTangent`] lists
/// them.
///
/// # Panics
/// If a perturbed argument gives a result with another number of components.
pub fn fd_jacobian<X, Y>(x: &X, h: f64, mut f: impl FnMut(&X) -> Y) -> Jacobian
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    let (m, n, units) = at_point(x, &mut f);
    let mut j = Jacobian::zeros(m, n).into_vec();
    for c in 0..n {
        for (i, v) in fd_column(x, c, h, &units, &mut f).into_iter().enumerate() {
            j[i * n + c] = v;
        }
    }
    Jacobian::from_row_major(m, n, j).unwrap_or_else(|| unreachable!("an m x n buffer"))
}

/// Checks `block` (a Jacobian of `f` with respect to its argument at `x`, as
/// [`value_and_jacobian!`](crate::value_and_jacobian) returns it) against central finite
/// differences with the default [`JacobianConfig`].
pub fn check_jacobian<X, Y>(
    block: &Jacobian,
    x: &X,
    f: impl FnMut(&X) -> Y,
) -> Result<(), JacobianMismatch>
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    check_jacobian_with(&JacobianConfig::default(), block, x, f)
}

/// [`check_jacobian`] with the tolerances and steps of `config`.
pub fn check_jacobian_with<X, Y>(
    config: &JacobianConfig,
    block: &Jacobian,
    x: &X,
    mut f: impl FnMut(&X) -> Y,
) -> Result<(), JacobianMismatch>
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
    Y: Primal,
    Y::Tangent: FlatTangent,
{
    let (m, n, units) = at_point(x, &mut f);
    if block.shape() != (m, n) {
        return Err(JacobianMismatch {
            message: format!(
                "the block is {} x {}, but the result has {m} components and the argument {n}",
                block.rows(),
                block.cols()
            ),
        });
    }
    for c in 0..n {
        let ad = block.column(c);
        // The worst entry at each step: (excess over the tolerance, row, fd, step).
        let mut best: Option<(f64, usize, f64, f64)> = None;
        for &h in &config.steps {
            let fd = fd_column(x, c, h, &units, &mut f);
            // NaN counts as the worst excess.
            let worst = ad
                .iter()
                .zip(&fd)
                .enumerate()
                .map(|(i, (a, b))| {
                    let allowed = config.atol + config.rtol * a.abs().max(b.abs());
                    let excess = (a - b).abs() - allowed;
                    (if excess.is_nan() { f64::INFINITY } else { excess }, i, *b)
                })
                .max_by(|x, y| x.0.total_cmp(&y.0));
            match worst {
                Some((excess, i, b)) if excess > 0.0 => {
                    if best.is_none_or(|(e, ..)| excess < e) {
                        best = Some((excess, i, b, h));
                    }
                }
                // No rows, or every entry within the tolerance.
                _ => {
                    best = None;
                    break;
                }
            }
        }
        if let Some((_, i, b, h)) = best {
            return Err(JacobianMismatch {
                message: format!(
                    "column {c} (argument component {c}) disagrees with finite differences at \
                     every step tried ({:?}); at the closest (step {h}), entry ({i}, {c}) is {} \
                     where central differences give {b} (rtol {}, atol {})",
                    config.steps, ad[i], config.rtol, config.atol
                ),
            });
        }
    }
    Ok(())
}
