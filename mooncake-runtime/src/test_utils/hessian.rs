//! Checking Hessian-vector products and Hessians against central finite differences of the
//! gradient, as [`check_jacobian`](super::check_jacobian) checks Jacobians: several step sizes,
//! a product passing if any step agrees within the tolerances of a
//! [`JacobianConfig`], a failure naming the component that disagrees.
//!
//! The gradient is any function of the argument (typically `value_and_gradient!` of the same
//! function at `f64`), flattened: so the check measures `H v` against differences of a gradient
//! computed another way, never the product against itself.
//!
//! ```
//! use mooncake_runtime::prelude::*;
//! use mooncake_runtime::test_utils::{check_hessian, check_hvp};
//!
//! #[differentiable]
//! fn f<T: Float>(x: &[T]) -> T {
//!     x[0] * x[0] * x[1] + x[1].exp()
//! }
//!
//! let grad = |x: &Vec<f64>| value_and_gradient!(f(&x[..])).1.0;
//! let (x, v) = (vec![1.0, 0.5], vec![0.3, -2.0]);
//! let (_, _, (hv,)) = hvp!(f(&x), (&v,));
//! check_hvp(&hv, &x, &v, grad).unwrap();
//! let (_, _, h) = hessian!(f(&x));
//! check_hessian(&h, &x, grad).unwrap();
//! // A wrong product is an error naming the component.
//! let e = check_hvp(&[0.0, 0.0], &x, &v, grad).unwrap_err();
//! assert!(e.to_string().contains("component 0 is 0 where central differences give -3."), "{e}");
//! ```

use super::jacobian::JacobianConfig;
use crate::jacobian::{FlatTangent, Jacobian};
use crate::tangent::Primal;
use std::fmt;

/// A Hessian-vector product or a Hessian that disagrees with finite differences of the
/// gradient (or has another shape); its message names the component.
///
/// ```
/// use mooncake_runtime::test_utils::check_hvp;
///
/// let e = check_hvp(&[1.0], &2.0, &1.0, |x: &f64| vec![3.0 * x * x]).unwrap_err();
/// assert!(e.to_string().starts_with("the Hessian-vector product disagrees"), "{e}");
/// ```
#[derive(Clone, Debug)]
pub struct HvpMismatch {
    message: String,
}

impl fmt::Display for HvpMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HvpMismatch {}

/// The central difference of the gradient along `v`: `(∇f(x + h v) - ∇f(x - h v)) / 2h`.
///
/// ```
/// use mooncake_runtime::test_utils::fd_hvp;
///
/// // f(x) = x_0² x_1, ∇f = (2 x_0 x_1, x_0²), H e_0 = (2 x_1, 2 x_0).
/// let grad = |x: &Vec<f64>| vec![2.0 * x[0] * x[1], x[0] * x[0]];
/// let hv = fd_hvp(&vec![1.0, 3.0], &vec![1.0, 0.0], 1e-4, grad);
/// assert!((hv[0] - 6.0).abs() < 1e-8 && (hv[1] - 2.0).abs() < 1e-8);
/// ```
///
/// # Panics
/// If the gradient changes length between the two points.
pub fn fd_hvp<X: Primal + Clone>(
    x: &X,
    v: &X::Tangent,
    h: f64,
    mut grad: impl FnMut(&X) -> Vec<f64>,
) -> Vec<f64> {
    let (mut xp, mut xm) = (x.clone(), x.clone());
    xp.perturb(v, h);
    xm.perturb(v, -h);
    let (gp, gm) = (grad(&xp), grad(&xm));
    assert_eq!(gp.len(), gm.len(), "mooncake: the gradient changed length at a step of {h}");
    gp.iter().zip(&gm).map(|(a, b)| (a - b) / (2.0 * h)).collect()
}

/// Checks `hv`, a Hessian-vector product of `f` at `x` along `v` flattened as
/// [`FlatTangent`] lists the components, against central differences of `grad` (the flat
/// gradient of `f`) along `v`, with the default [`JacobianConfig`].
///
/// ```
/// use mooncake_runtime::test_utils::check_hvp;
///
/// let grad = |x: &Vec<f64>| vec![2.0 * x[0] * x[1], x[0] * x[0]];
/// check_hvp(&[6.0, 2.0], &vec![1.0, 3.0], &vec![1.0, 0.0], grad).unwrap();
/// assert!(check_hvp(&[6.0, 2.5], &vec![1.0, 3.0], &vec![1.0, 0.0], grad).is_err());
/// ```
pub fn check_hvp<X: Primal + Clone>(
    hv: &[f64],
    x: &X,
    v: &X::Tangent,
    grad: impl FnMut(&X) -> Vec<f64>,
) -> Result<(), HvpMismatch> {
    check_hvp_with(&JacobianConfig::default(), hv, x, v, grad)
}

/// [`check_hvp`] with the tolerances and steps of `config`.
///
/// ```
/// use mooncake_runtime::test_utils::{JacobianConfig, check_hvp_with};
///
/// let loose = JacobianConfig { rtol: 0.1, ..JacobianConfig::default() };
/// let grad = |x: &Vec<f64>| vec![2.0 * x[0] * x[1], x[0] * x[0]];
/// check_hvp_with(&loose, &[6.1, 2.0], &vec![1.0, 3.0], &vec![1.0, 0.0], grad).unwrap();
/// ```
pub fn check_hvp_with<X: Primal + Clone>(
    config: &JacobianConfig,
    hv: &[f64],
    x: &X,
    v: &X::Tangent,
    mut grad: impl FnMut(&X) -> Vec<f64>,
) -> Result<(), HvpMismatch> {
    let n = grad(x).len();
    if hv.len() != n {
        return Err(HvpMismatch {
            message: format!("the product has {} components, the gradient {n}", hv.len()),
        });
    }
    // The worst component at the closest step: (excess over the tolerance, index, fd, step).
    let mut best: Option<(f64, usize, f64, f64)> = None;
    for &h in &config.steps {
        let fd = fd_hvp(x, v, h, &mut grad);
        let worst = hv
            .iter()
            .zip(&fd)
            .enumerate()
            .map(|(i, (a, b))| {
                let allowed = config.atol + config.rtol * a.abs().max(b.abs());
                let excess = (a - b).abs() - allowed;
                (if excess.is_nan() { f64::INFINITY } else { excess }, i, *b)
            })
            .max_by(|p, q| p.0.total_cmp(&q.0));
        match worst {
            Some((excess, i, b)) if excess > 0.0 => {
                if best.is_none_or(|(e, ..)| excess < e) {
                    best = Some((excess, i, b, h));
                }
            }
            _ => return Ok(()),
        }
    }
    match best {
        Some((_, i, b, h)) => Err(HvpMismatch {
            message: format!(
                "the Hessian-vector product disagrees with central differences of the gradient \
                 at every step tried ({:?}); at the closest (step {h}), component {i} is {} where \
                 central differences give {b} (rtol {}, atol {})",
                config.steps, hv[i], config.rtol, config.atol
            ),
        }),
        None => Ok(()),
    }
}

/// Checks `h`, the Hessian of `f` at `x` (as [`hessian!`](macro@crate::hessian) returns it),
/// column by column against central differences of `grad` along the basis tangents of `x`, and checks
/// that it is symmetric (within the same tolerances), with the default [`JacobianConfig`].
///
/// ```
/// use mooncake_runtime::Jacobian;
/// use mooncake_runtime::test_utils::check_hessian;
///
/// let grad = |x: &Vec<f64>| vec![2.0 * x[0] * x[1], x[0] * x[0]];
/// let h = Jacobian::from_row_major(2, 2, vec![6.0, 2.0, 2.0, 0.0]).unwrap();
/// check_hessian(&h, &vec![1.0, 3.0], grad).unwrap();
/// let not_symmetric = Jacobian::from_row_major(2, 2, vec![6.0, 2.0, 2.5, 0.0]).unwrap();
/// let e = check_hessian(&not_symmetric, &vec![1.0, 3.0], grad).unwrap_err();
/// assert!(e.to_string().contains("not symmetric"), "{e}");
/// ```
pub fn check_hessian<X>(
    h: &Jacobian,
    x: &X,
    grad: impl FnMut(&X) -> Vec<f64>,
) -> Result<(), HvpMismatch>
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
{
    check_hessian_with(&JacobianConfig::default(), h, x, grad)
}

/// [`check_hessian`] with the tolerances and steps of `config`.
///
/// ```
/// use mooncake_runtime::Jacobian;
/// use mooncake_runtime::test_utils::{JacobianConfig, check_hessian_with};
///
/// let loose = JacobianConfig { rtol: 0.1, ..JacobianConfig::default() };
/// let grad = |x: &Vec<f64>| vec![2.0 * x[0] * x[1], x[0] * x[0]];
/// let h = Jacobian::from_row_major(2, 2, vec![6.1, 2.0, 2.0, 0.0]).unwrap();
/// check_hessian_with(&loose, &h, &vec![1.0, 3.0], grad).unwrap();
/// ```
pub fn check_hessian_with<X>(
    config: &JacobianConfig,
    h: &Jacobian,
    x: &X,
    mut grad: impl FnMut(&X) -> Vec<f64>,
) -> Result<(), HvpMismatch>
where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
{
    let n = x.zero_tangent().flat_len();
    if h.shape() != (n, n) {
        return Err(HvpMismatch {
            message: format!(
                "the Hessian is {} x {}, but the argument has {n} components",
                h.rows(),
                h.cols()
            ),
        });
    }
    for i in 0..n {
        for j in 0..i {
            let (a, b) = (h[(i, j)], h[(j, i)]);
            if (a - b).abs() > config.atol + config.rtol * a.abs().max(b.abs()) {
                return Err(HvpMismatch {
                    message: format!(
                        "the Hessian is not symmetric: ({i}, {j}) is {a}, ({j}, {i}) is {b}"
                    ),
                });
            }
        }
    }
    for j in 0..n {
        let mut e = x.zero_tangent();
        e.set_flat(j, 1.0);
        check_hvp_with(config, &h.column(j), x, &e, &mut grad)
            .map_err(|e| HvpMismatch { message: format!("column {j}: {e}") })?;
    }
    Ok(())
}
