//! Nested AD: `value_and_gradient!` written inside a `#[differentiable]` function, whose rules
//! then differentiate the gradient (forward over reverse in `NAME_frule`, a Hessian-vector
//! product in the pullback of `NAME_rrule`). Every outer function is checked by `test_rule!`
//! (both modes against central finite differences, and against each other) and, where the
//! derivative has a closed form, against it.

use mooncake_runtime::prelude::*;

/// A potential with a non-trivial Hessian: `Σ (x_i⁴ / 4 + k x_i x_{i+1})`.
#[differentiable]
fn potential<T: Float>(x: &[T], k: T) -> T {
    let mut u = T::zero();
    for i in 0..x.len() {
        u += x[i] * x[i] * x[i] * x[i] * T::from_f64(0.25);
        if i + 1 < x.len() {
            u += k * x[i] * x[i + 1];
        }
    }
    u
}

/// A particle driven by the gradient of the potential: `steps` explicit steps of
/// `x ← x − dt ∇U(x)`, then the potential where it ends.
#[differentiable]
fn relaxed_energy(x0: &[f64], k: f64, dt: f64, steps: usize) -> f64 {
    let mut x = x0.to_vec();
    for _ in 0..steps {
        let (_, (g, _)) = value_and_gradient!(potential(&x, k));
        for i in 0..x.len() {
            x[i] -= dt * g[i];
        }
    }
    potential(&x, k)
}

#[test]
fn a_particle_driven_by_a_gradient() {
    let x0 = vec![0.8, -0.3, 0.5, 1.1];
    for steps in [0, 1, 3] {
        test_rule!(relaxed_energy(&x0, 0.7, 0.05, steps));
    }
    // Forward against reverse through the API as well.
    let (y, (gx, gk, gdt, _)) = value_and_gradient!(relaxed_energy(&x0, 0.7, 0.05, 3));
    let tx = [0.3, -0.2, 0.1, 0.4];
    let (y2, dy) = value_and_derivative!(
        relaxed_energy(&x0, 0.7, 0.05, 3),
        (tx.to_vec(), 0.5, -1.5, NoTangent)
    );
    assert_eq!(y, y2);
    let want: f64 = gx.iter().zip(&tx).map(|(g, t)| g * t).sum::<f64>() + 0.5 * gk - 1.5 * gdt;
    assert!((dy - want).abs() < 1e-12 * (1.0 + want.abs()), "{dy} against {want}");
}

/// One step with a closed form: `U(x) = Σ x⁴ / 4`, `y = x − lr x³`, `e = Σ y⁴ / 4`, so
/// `de/dx = y³ (1 − 3 lr x²)` and `de/dlr = −Σ y³ x³`.
#[differentiable]
fn quartic<T: Float>(x: &[T]) -> T {
    let mut u = T::zero();
    for v in x.iter() {
        u += *v * *v * *v * *v * T::from_f64(0.25);
    }
    u
}

#[differentiable]
fn one_step(x: &[f64], lr: f64) -> f64 {
    let (_, (g,)) = value_and_gradient!(quartic(x));
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i] - lr * g[i];
    }
    quartic(&y)
}

#[test]
fn one_step_matches_its_closed_form() {
    let x = vec![0.5, -1.0, 0.25];
    let lr = 0.1;
    let (e, (gx, glr)) = value_and_gradient!(one_step(&x, lr));
    let y: Vec<f64> = x.iter().map(|v| v - lr * v * v * v).collect();
    assert!((e - y.iter().map(|v| v.powi(4) / 4.0).sum::<f64>()).abs() < 1e-14);
    for i in 0..3 {
        let want = y[i].powi(3) * (1.0 - 3.0 * lr * x[i] * x[i]);
        assert!((gx[i] - want).abs() < 1e-13, "{} against {want}", gx[i]);
    }
    let want: f64 = -(0..3).map(|i| y[i].powi(3) * x[i].powi(3)).sum::<f64>();
    assert!((glr - want).abs() < 1e-13);
    test_rule!(one_step(&x, lr));
}

/// A saddle of `L(z, θ) = ½ z² − θ z + ¼ z⁴` approached by gradient descent in `z`, then a loss
/// of where it lands: the derivative runs through every step's gradient (`∂²L/∂z²` in the
/// pullback, `∂²L/∂z∂θ` through `θ`).
#[differentiable]
fn inner_loss<T: Float>(z: T, theta: T) -> T {
    T::from_f64(0.5) * z * z - theta * z + T::from_f64(0.25) * z * z * z * z
}

#[differentiable]
fn fitted(theta: f64, z0: f64, rate: f64) -> f64 {
    let mut z = z0;
    let mut k = 0;
    while k < 20 {
        let (_, (gz, _)) = value_and_gradient!(inner_loss(z, theta));
        z -= rate * gz;
        k += 1;
    }
    (z - 0.3) * (z - 0.3)
}

#[test]
fn gradient_descent_inside_a_model() {
    test_rule!(fitted(0.8, 0.1, 0.2));
    test_rule!(fitted(-0.4, 1.0, 0.1));
    // At the fixed point z* of `z − θ + z³ = 0`, dz*/dθ = 1 / (1 + 3 z*²): after enough steps the
    // derivative of z* through the unrolled descent approaches it.
    #[differentiable]
    fn settled(theta: f64) -> f64 {
        let mut z = 0.0;
        for _ in 0..200 {
            let (_, (gz, _)) = value_and_gradient!(inner_loss(z, theta));
            z -= 0.3 * gz;
        }
        z
    }
    let (z, (dz,)) = value_and_gradient!(settled(0.8));
    assert!((z - 0.8 + z * z * z).abs() < 1e-12);
    assert!((dz - 1.0 / (1.0 + 3.0 * z * z)).abs() < 1e-10, "{dz}");
}

/// Newton steps inside a model: `x ← x − g / h` with `g` the gradient and `h` the curvature
/// along one coordinate, both from nested gradients.
#[differentiable]
fn cosh_well<T: Float>(x: T, c: T) -> T {
    (x - c).cosh() + T::from_f64(0.1) * x * x
}

#[differentiable]
fn newton_solved(c: f64, x0: f64) -> f64 {
    let mut x = x0;
    for _ in 0..4 {
        let (_, (g, _)) = value_and_gradient!(cosh_well(x, c));
        let (_, (gp, _)) = value_and_gradient!(cosh_well(x + 1e-3, c));
        x -= g / ((gp - g) / 1e-3);
    }
    x * x
}

#[test]
fn newton_steps_inside_a_model() {
    test_rule!(newton_solved(0.5, 0.2));
}

/// Arguments of every kind the nested rules take: by value, arrays, `Vec`s, integers, and
/// `Const(..)` (whose place in the result is `NoTangent`).
#[differentiable]
#[allow(clippy::ptr_arg)]
fn mixed<T: Float>(a: [T; 2], v: Vec<T>, w: &Vec<T>, s: T, n: usize) -> T {
    let mut acc = a[0] * a[1] * s;
    for i in 0..v.len() {
        acc += (v[i] * w[i]).sin() * T::from_f64(n as f64);
    }
    acc * acc
}

#[differentiable]
fn uses_mixed(a: [f64; 2], v: &[f64], s: f64) -> f64 {
    let w = v.to_vec();
    let (y, (ga, gv, gw, gs, _)) = value_and_gradient!(mixed(a, v.to_vec(), &w, s, 2));
    let mut r = y + ga[0] * ga[1] + gs;
    for i in 0..gv.len() {
        r += gv[i] * gw[i];
    }
    r
}

#[differentiable]
fn uses_constants(a: [f64; 2], v: &[f64], s: f64) -> f64 {
    let w = v.to_vec();
    let (y, (ga, gv, gw, gs, _)) =
        value_and_gradient!(mixed(Const(a), v.to_vec(), &w, Const(s), 2));
    let _ = (ga, gs);
    let mut r = y;
    for i in 0..gv.len() {
        r += gv[i] * gw[i];
    }
    r
}

#[test]
fn arguments_of_every_kind() {
    let v = vec![0.4, -0.9, 0.3];
    test_rule!(uses_mixed([0.7, -0.2], &v, 1.3));
    test_rule!(uses_constants([0.7, -0.2], &v, 1.3));
    let (_, (ga, _, gs)) = value_and_gradient!(uses_constants([0.7, -0.2], &v, 1.3));
    // The constants' own gradients are dropped, but the result still depends on them.
    assert!(ga[0] != 0.0 && gs != 0.0);
}

/// The inner function's argument is changed after the nested gradient is taken: the pullback
/// must differentiate the gradient at the value it had then.
#[differentiable]
fn changed_after(x: &mut [f64], k: f64) -> f64 {
    let (u, (g, _)) = value_and_gradient!(potential(&*x, k));
    for i in 0..x.len() {
        x[i] = x[i] * 2.0 + g[i];
    }
    let (u2, (g2, gk)) = value_and_gradient!(potential(&*x, k));
    u + u2 * g2[0] + gk
}

#[test]
fn arguments_changed_after_the_gradient() {
    let x = vec![0.3, -0.6, 0.9];
    test_rule!(changed_after(&mut x, 0.4));
}

/// `value_and_derivative!` inside: the slope of the potential along a direction that is itself
/// an argument, used as a step size.
#[differentiable]
fn line_searched(x: &[f64], d: &[f64], k: f64) -> f64 {
    let (u, slope) = value_and_derivative!(potential(x, k), (d.to_vec(), 0.0));
    let mut y = x.to_vec();
    for i in 0..y.len() {
        y[i] -= 0.1 * slope * d[i];
    }
    u + potential(&y, k) * slope
}

#[differentiable]
fn slopes_of_every_kind(a: [f64; 2], v: &[f64], s: f64) -> f64 {
    let w = v.to_vec();
    let (y, dy) = value_and_derivative!(
        mixed(a, v.to_vec(), &w, s, 3),
        ([s, 1.0], w.clone(), v.to_vec(), a[0], NoTangent)
    );
    y * dy
}

#[test]
fn derivatives_inside() {
    let (x, d) = (vec![0.4, -0.8, 1.2], vec![0.5, 0.25, -1.0]);
    test_rule!(line_searched(&x, &d, 0.6));
    test_rule!(slopes_of_every_kind([0.7, -0.2], &[0.4, -0.9, 0.3], 1.3));
    // The slope itself against the gradient inside the primal.
    let (_, (g, _)) = value_and_gradient!(potential(&x, 0.6));
    let (_, slope) = value_and_derivative!(potential(&x, 0.6), (d.clone(), 0.0));
    let want: f64 = g.iter().zip(&d).map(|(g, d)| g * d).sum();
    assert!((slope - want).abs() < 1e-12);
}

/// The inner function in another module, with a named lifetime and its bound in a `where`
/// clause.
mod physics {
    use mooncake_runtime::prelude::*;

    /// A spring chain's energy.
    #[differentiable]
    #[allow(clippy::needless_lifetimes)]
    pub fn springs<'a, T>(x: &'a [T], stiffness: T) -> T
    where
        T: Float,
    {
        let mut e = T::zero();
        for i in 1..x.len() {
            let d = x[i] - x[i - 1] - T::one();
            e += T::from_f64(0.5) * stiffness * d * d * d * d;
        }
        e
    }
}

#[differentiable]
fn force_norm(x: &[f64], stiffness: f64) -> f64 {
    let (_, (f, _)) = value_and_gradient!(physics::springs(x, stiffness));
    let mut s = 0.0;
    for v in f.iter() {
        s += v * v;
    }
    s.sqrt()
}

#[test]
fn inner_functions_in_other_modules() {
    test_rule!(force_norm(&[0.0, 1.3, 2.1, 3.9], 2.0));
}

/// A nested gradient in a method of a `#[differentiable] impl` block, its constants in fields.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Relaxation {
    k: f64,
    dt: f64,
}

#[differentiable]
impl Relaxation {
    fn run(&self, x0: &[f64]) -> f64 {
        let mut x = x0.to_vec();
        for _ in 0..3 {
            let (_, (g, _)) = value_and_gradient!(potential(&x, self.k));
            for i in 0..x.len() {
                x[i] -= self.dt * g[i];
            }
        }
        potential(&x, self.k)
    }
}

#[differentiable]
fn relax(r: &Relaxation, x0: &[f64]) -> f64 {
    r.run(x0)
}

#[test]
fn nested_gradients_in_methods() {
    let r = Relaxation { k: 0.7, dt: 0.05 };
    test_rule!(relax(&r, &[0.3, -0.7, 1.1]));
}
