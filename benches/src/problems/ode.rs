//! `ode_euler_1000`: explicit Euler steps of the Lotka–Volterra system
//! `u' = a u − b u v`, `v' = −c v + d u v`, the loss a function of the final state, its
//! gradient taken with respect to the parameters `(a, b, c, d)` and the initial state.

use mooncake_runtime::prelude::*;

/// The step size of [`ode_euler`].
pub const STEP: f64 = 0.01;

/// `u(T)² + v(T)²` after `steps` Euler steps of size [`STEP`] from `(u0[0], u0[1])`, with
/// parameters `p = (a, b, c, d)`.
#[differentiable]
pub fn ode_euler(p: &[f64], u0: &[f64], steps: usize) -> f64 {
    let (a, b, c, d) = (p[0], p[1], p[2], p[3]);
    let mut u = u0[0];
    let mut v = u0[1];
    let mut k = 0;
    while k < steps {
        let du = a * u - b * u * v;
        let dv = d * u * v - c * v;
        u += STEP * du;
        v += STEP * dv;
        k += 1;
    }
    u * u + v * v
}

/// The gradient of [`ode_euler`] by hand: the trajectory is stored in `traj` (at least
/// `2 (steps + 1)` entries), then swept backwards.
pub fn ode_euler_gradient(
    p: &[f64],
    u0: &[f64],
    steps: usize,
    traj: &mut [f64],
    gp: &mut [f64],
    gu0: &mut [f64],
) -> f64 {
    let (a, b, c, d) = (p[0], p[1], p[2], p[3]);
    let (mut u, mut v) = (u0[0], u0[1]);
    for k in 0..steps {
        traj[2 * k] = u;
        traj[2 * k + 1] = v;
        let du = a * u - b * u * v;
        let dv = d * u * v - c * v;
        u += STEP * du;
        v += STEP * dv;
    }
    let value = u * u + v * v;
    let (mut bu, mut bv) = (2.0 * u, 2.0 * v);
    let (mut ba, mut bb, mut bc, mut bd) = (0.0, 0.0, 0.0, 0.0);
    for k in (0..steps).rev() {
        let (u, v) = (traj[2 * k], traj[2 * k + 1]);
        // u' = u + h (a u − b u v), v' = v + h (d u v − c v).
        let (hu, hv) = (STEP * bu, STEP * bv);
        ba += hu * u;
        bb -= hu * u * v;
        bc -= hv * v;
        bd += hv * u * v;
        let nu = bu + hu * (a - b * v) + hv * d * v;
        let nv = bv + hu * (-b * u) + hv * (d * u - c);
        bu = nu;
        bv = nv;
    }
    gp.copy_from_slice(&[ba, bb, bc, bd]);
    gu0.copy_from_slice(&[bu, bv]);
    value
}
