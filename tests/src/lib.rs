//! Shared helpers of the integration tests, and `#[differentiable]` functions that the tests call
//! from another crate (each file under `tests/` is its own crate).

use mooncake_runtime::prelude::*;

/// `ln(1 + e^x)`, computed stably: a function other crates differentiate through.
#[differentiable]
pub fn softplus(x: f64) -> f64 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

/// The mean of `x`.
#[differentiable]
pub fn mean(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    s / (x.len() as f64)
}

/// A cycle of mutual recursion (no attribute needed: each rule's pullback is in a pooled box).
pub mod recursion {
    use mooncake_runtime::prelude::*;

    /// `pong(1.1 x, n - 1) + 0.1 x`, and `x` at depth 0.
    #[differentiable]
    pub fn ping(x: f64, n: u32) -> f64 {
        if n == 0 { x } else { pong(x * 1.1, n - 1) + 0.1 * x }
    }

    /// `ping(sin x, n - 1) · x`, and `x²` at depth 0.
    #[differentiable]
    pub fn pong(x: f64, n: u32) -> f64 {
        if n == 0 { x * x } else { ping(x.sin(), n - 1) * x }
    }
}

/// A linear model: the parameters of [`prepared::loss`].
pub mod prepared {
    use mooncake_runtime::prelude::*;

    /// Weights and a bias.
    #[derive(Tangent, Clone, Debug)]
    pub struct Model {
        /// The weights, one per column.
        pub w: Vec<f64>,
        /// The bias.
        pub b: f64,
    }

    /// The model's prediction for row `row` of the row-major matrix `x`.
    #[differentiable]
    pub fn predict(m: &Model, x: &[f64], row: usize) -> f64 {
        let n = m.w.len();
        let mut s = m.b;
        for j in 0..n {
            s += m.w[j] * x[row * n + j];
        }
        s
    }

    /// A loss with a nested loop, a branch, a call, a `&mut` state argument and a scalar: what
    /// the prepared-gradient tests differentiate.
    #[differentiable]
    pub fn loss(m: &Model, x: &[f64], y: &[f64], state: &mut [f64], scale: f64) -> f64 {
        let mut total = 0.0;
        for r in 0..y.len() {
            let e = predict(m, x, r) - y[r];
            if e > 0.0 {
                total += e * e;
            } else {
                total += 0.5 * e * e;
            }
            state[r] = state[r] * 0.9 + e;
        }
        scale * total + state[0] * state[0]
    }

    /// A model with `cols` weights, `rows` rows of data and a state, all deterministic.
    pub fn data(rows: usize, cols: usize) -> (Model, Vec<f64>, Vec<f64>, Vec<f64>) {
        let m = Model { w: (0..cols).map(|j| 0.3 - 0.1 * j as f64).collect(), b: 0.2 };
        let x = (0..rows * cols).map(|i| ((i * 7 % 11) as f64 - 5.0) / 4.0).collect();
        let y = (0..rows).map(|r| (r as f64 * 0.37).sin()).collect();
        let state = (0..rows).map(|r| 0.1 * r as f64).collect();
        (m, x, y, state)
    }
}

/// The flat components of a tangent.
pub fn flat<T: FlatTangent>(t: &T) -> Vec<f64> {
    let mut out = Vec::new();
    t.extend_flat(&mut out);
    out
}

/// The second-order checks of one function of the argument tuple `x` (`hessian_corpus.rs`,
/// `second_order.rs`): `value` the function, `grad` its flat gradient at `f64` (reverse mode),
/// `hvp` the value, flat gradient and flat product of `hvp!` along a tangent, `hessian` what
/// `hessian!` returns. `hessian!`'s matrix against finite differences of `grad` and for
/// symmetry; along three random directions, `hvp!`'s value against the function, its gradient
/// against `hessian!`'s and central differences of the value, its product against central
/// differences of `grad` and against the matrix.
pub fn check_corpus<X>(
    name: &str,
    x: X,
    value: impl Fn(&X) -> f64,
    grad: impl Fn(&X) -> Vec<f64>,
    hvp: impl Fn(&X, &X::Tangent) -> (f64, Vec<f64>, Vec<f64>),
    hessian: impl Fn(&X) -> (f64, Vec<f64>, Jacobian),
) where
    X: Primal + Clone,
    X::Tangent: FlatTangent,
{
    use mooncake_runtime::TestRng;
    use mooncake_runtime::test_utils::{check_hessian, check_hvp, check_jacobian};
    let mut rng = TestRng::seed_from_u64(17);
    let n = x.zero_tangent().flat_len();
    let (_, g_h, h) = hessian(&x);
    assert_eq!(g_h.len(), n, "{name}: gradient length");
    check_hessian(&h, &x, &grad).unwrap_or_else(|e| panic!("{name}: Hessian: {e}"));
    for _ in 0..3 {
        let v = x.random_tangent(&mut rng);
        let (y, g, hv) = hvp(&x, &v);
        assert_eq!(y, value(&x), "{name}: value");
        assert_eq!(g, g_h, "{name}: the gradients of hvp! and hessian! differ");
        let gj = Jacobian::from_row_major(1, n, g).unwrap();
        check_jacobian(&gj, &x, &value).unwrap_or_else(|e| panic!("{name}: gradient: {e}"));
        check_hvp(&hv, &x, &v, &grad).unwrap_or_else(|e| panic!("{name}: {e}"));
        let hv_dense = h.mul_vec(&flat(&v));
        for (a, b) in hv.iter().zip(&hv_dense) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + a.abs()), "{name}: H v {a} but H·v {b}");
        }
    }
}

/// `check_corpus` of a function of one slice (`hessian_corpus.rs`, `second_order.rs`).
#[macro_export]
macro_rules! one_slice {
    ($f:ident, $x:expr) => {
        $crate::check_corpus(
            stringify!($f),
            $x,
            |x: &Vec<f64>| $f(x),
            |x| ::mooncake_runtime::value_and_gradient!($f(&x[..])).1.0,
            |x, v| {
                let (y, (g,), (h,)) = ::mooncake_runtime::hvp!($f(&x[..]), (v,));
                (y, g, h)
            },
            |x| ::mooncake_runtime::hessian!($f(&x[..])),
        )
    };
}

/// `check_corpus` of a function of two buffers (slices or `&Vec`s).
#[macro_export]
macro_rules! two_slices {
    ($f:ident, $x:expr, $y:expr) => {
        $crate::check_corpus(
            stringify!($f),
            ($x, $y),
            |p: &(Vec<f64>, Vec<f64>)| $f(&p.0, &p.1),
            |p| {
                let (_, (mut a, b)) = ::mooncake_runtime::value_and_gradient!($f(&p.0, &p.1));
                a.extend(b);
                a
            },
            |p, v| {
                let (y, (mut a, b), (mut ha, hb)) =
                    ::mooncake_runtime::hvp!($f(&p.0, &p.1), (&v.0, &v.1));
                a.extend(b);
                ha.extend(hb);
                (y, a, ha)
            },
            |p| ::mooncake_runtime::hessian!($f(&p.0, &p.1)),
        )
    };
}

/// `check_corpus` of a function of a slice and a scalar.
#[macro_export]
macro_rules! slice_and_scalar {
    ($f:ident, $x:expr, $a:expr) => {
        $crate::check_corpus(
            stringify!($f),
            ($x, $a),
            |p: &(Vec<f64>, f64)| $f(&p.0, p.1),
            |p| {
                let (_, (mut g, a)) = ::mooncake_runtime::value_and_gradient!($f(&p.0[..], p.1));
                g.push(a);
                g
            },
            |p, v| {
                let (y, (mut g, a), (mut h, ha)) =
                    ::mooncake_runtime::hvp!($f(&p.0, p.1), (&v.0, v.1));
                g.push(a);
                h.push(ha);
                (y, g, h)
            },
            |p| ::mooncake_runtime::hessian!($f(&p.0, p.1)),
        )
    };
}
