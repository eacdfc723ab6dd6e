//! The problems as the peer crates differentiate them: written once, generic over a [`Scalar`]
//! that each peer's number type implements (`easy_ml::differentiation::Record` and
//! `reverse::Var`, the operator-overloading tapes; `num_dual::DualVec`, vector forward mode;
//! `num_dual::HyperDual64`, second-order forward mode for Hessian-vector products).
//!
//! This file is compiled into the bench (`#[path]`) and into the crate's tests, the only
//! targets that see the peers (dev-dependencies). Every problem takes its differentiable
//! inputs as one flat vector, in the order of the derived gradient's arguments,
//! and keeps the index loops of its `#[differentiable]` version.
#![allow(clippy::needless_range_loop)]

use easy_ml::differentiation::{Record, WengertList};
use easy_ml::numeric::extra::{Cos, Exp, Ln, Sin};
use nalgebra::{DVector, Dim, SVector, allocator::Allocator};
use num_dual::{DualNum, DualVec, HyperDual64};

/// A number type of a peer crate, with the operations the problems use. Binary operations take
/// references so that `num-dual`'s heap-allocated vector duals are not cloned needlessly.
pub trait Scalar: Clone {
    /// The value.
    fn val(&self) -> f64;
    /// A constant (no derivative), made in the same context as `self`.
    fn constant_like(&self, c: f64) -> Self;
    /// `self + o`.
    fn add(&self, o: &Self) -> Self;
    /// `self − o`.
    fn sub(&self, o: &Self) -> Self;
    /// `self · o`.
    fn mul(&self, o: &Self) -> Self;
    /// `self + c` for a constant `c`.
    fn add_c(&self, c: f64) -> Self;
    /// `self · c` for a constant `c`.
    fn mul_c(&self, c: f64) -> Self;
    /// `sin self`.
    fn sin(&self) -> Self;
    /// `cos self`.
    fn cos(&self) -> Self;
    /// `exp self`.
    fn exp(&self) -> Self;
    /// `ln self`.
    fn ln(&self) -> Self;
    /// `max(self, 0)`.
    fn relu(&self) -> Self {
        if self.val() > 0.0 { self.clone() } else { self.constant_like(0.0) }
    }
}

impl<'a> Scalar for Record<'a, f64> {
    fn val(&self) -> f64 {
        self.number
    }
    fn constant_like(&self, c: f64) -> Self {
        Record::constant(c)
    }
    fn add(&self, o: &Self) -> Self {
        *self + *o
    }
    fn sub(&self, o: &Self) -> Self {
        *self - *o
    }
    fn mul(&self, o: &Self) -> Self {
        *self * *o
    }
    fn add_c(&self, c: f64) -> Self {
        *self + c
    }
    fn mul_c(&self, c: f64) -> Self {
        *self * c
    }
    fn sin(&self) -> Self {
        Sin::sin(self)
    }
    fn cos(&self) -> Self {
        Cos::cos(self)
    }
    fn exp(&self) -> Self {
        Exp::exp(self)
    }
    fn ln(&self) -> Self {
        Ln::ln(self)
    }
}

impl<'a> Scalar for reverse::Var<'a> {
    fn val(&self) -> f64 {
        self.val
    }
    fn constant_like(&self, c: f64) -> Self {
        self.tape.add_var(c)
    }
    fn add(&self, o: &Self) -> Self {
        *self + *o
    }
    fn sub(&self, o: &Self) -> Self {
        *self - *o
    }
    fn mul(&self, o: &Self) -> Self {
        *self * *o
    }
    fn add_c(&self, c: f64) -> Self {
        *self + c
    }
    fn mul_c(&self, c: f64) -> Self {
        *self * c
    }
    fn sin(&self) -> Self {
        reverse::Var::sin(self)
    }
    fn cos(&self) -> Self {
        reverse::Var::cos(self)
    }
    fn exp(&self) -> Self {
        reverse::Var::exp(self)
    }
    fn ln(&self) -> Self {
        reverse::Var::ln(self)
    }
}

impl<D: Dim> Scalar for DualVec<f64, D>
where
    nalgebra::DefaultAllocator: Allocator<D>,
{
    fn val(&self) -> f64 {
        self.re
    }
    fn constant_like(&self, c: f64) -> Self {
        DualVec::from_re(c)
    }
    fn add(&self, o: &Self) -> Self {
        self + o
    }
    fn sub(&self, o: &Self) -> Self {
        self - o
    }
    fn mul(&self, o: &Self) -> Self {
        self * o
    }
    fn add_c(&self, c: f64) -> Self {
        self.clone() + c
    }
    fn mul_c(&self, c: f64) -> Self {
        self.clone() * c
    }
    fn sin(&self) -> Self {
        DualNum::sin(self)
    }
    fn cos(&self) -> Self {
        DualNum::cos(self)
    }
    fn exp(&self) -> Self {
        DualNum::exp(self)
    }
    fn ln(&self) -> Self {
        DualNum::ln(self)
    }
}

/// `num-dual`'s hyper-dual numbers (`re + eps1 ε₁ + eps2 ε₂ + eps1eps2 ε₁ε₂`), for
/// Hessian-vector products (see [`num_dual_hvp`]).
impl Scalar for HyperDual64 {
    fn val(&self) -> f64 {
        self.re
    }
    fn constant_like(&self, c: f64) -> Self {
        HyperDual64::from_re(c)
    }
    fn add(&self, o: &Self) -> Self {
        *self + *o
    }
    fn sub(&self, o: &Self) -> Self {
        *self - *o
    }
    fn mul(&self, o: &Self) -> Self {
        *self * *o
    }
    fn add_c(&self, c: f64) -> Self {
        *self + c
    }
    fn mul_c(&self, c: f64) -> Self {
        *self * c
    }
    fn sin(&self) -> Self {
        DualNum::sin(self)
    }
    fn cos(&self) -> Self {
        DualNum::cos(self)
    }
    fn exp(&self) -> Self {
        DualNum::exp(self)
    }
    fn ln(&self) -> Self {
        DualNum::ln(self)
    }
}

/// A scalar function of one flat vector of inputs, generic over the peers' number types.
pub trait Objective {
    /// The function at `x`.
    fn eval<S: Scalar>(&self, x: &[S]) -> S;
}

/// The value and gradient through `easy-ml`'s `Record`s, on a `WengertList` the caller keeps
/// (cleared here, so its capacity is reused from call to call).
pub fn easy_ml_gradient<O: Objective>(
    list: &WengertList<f64>,
    f: &O,
    x: &[f64],
) -> (f64, Vec<f64>) {
    list.clear();
    let vars: Vec<Record<'_, f64>> = x.iter().map(|v| Record::variable(*v, list)).collect();
    let y = f.eval(&vars);
    let d = y.derivatives();
    (y.number, vars.iter().map(|v| d[v]).collect())
}

/// The value and gradient through `reverse`'s `Var`s, on a `Tape` the caller keeps (cleared
/// here, so its capacity is reused from call to call).
pub fn reverse_gradient<O: Objective>(tape: &reverse::Tape, f: &O, x: &[f64]) -> (f64, Vec<f64>) {
    use reverse::Gradient;
    tape.clear();
    let vars = tape.add_vars(x);
    let y = f.eval(&vars);
    let g = y.grad();
    (y.val, g.wrt(&vars))
}

/// The value and gradient through `num-dual`'s `gradient` with dynamically sized vector duals
/// (`DualDVec64`): one forward pass carrying `x.len()` directional derivatives.
pub fn num_dual_gradient<O: Objective>(f: &O, x: &[f64]) -> (f64, Vec<f64>) {
    let (v, g) =
        num_dual::gradient(|v: DVector<_>| f.eval(v.as_slice()), &DVector::from_column_slice(x));
    (v, g.as_slice().to_vec())
}

/// [`num_dual_gradient`] with statically sized vector duals (`DualSVec64<N>`, on the stack),
/// what a user picks when the number of inputs is small and known.
pub fn num_dual_gradient_static<O: Objective, const N: usize>(f: &O, x: &[f64]) -> (f64, Vec<f64>) {
    let (v, g) = num_dual::gradient(
        |v: SVector<_, N>| f.eval(v.as_slice()),
        &SVector::<f64, N>::from_column_slice(x),
    );
    (v, g.as_slice().to_vec())
}

/// The value, gradient (into `g`) and Hessian-vector product `H v` (into `hv`) through
/// `num-dual`'s `HyperDual64`: `num-dual` has no reverse mode, so component `i` of `H v` takes
/// one forward pass with `ε₁` along `eᵢ` and `ε₂` along `v` (its `ε₁ε₂` part is `eᵢᵀ H v`, its
/// `ε₁` part `∂f/∂xᵢ`): `x.len()` passes, over one buffer of inputs the caller keeps.
pub fn num_dual_hvp<O: Objective>(
    f: &O,
    x: &[f64],
    v: &[f64],
    buf: &mut Vec<HyperDual64>,
    g: &mut [f64],
    hv: &mut [f64],
) -> f64 {
    buf.clear();
    buf.extend(x.iter().zip(v).map(|(x, v)| HyperDual64::new(*x, 0.0, *v, 0.0)));
    let mut value = 0.0;
    for i in 0..x.len() {
        buf[i].eps1 = 1.0;
        let y = f.eval(buf);
        buf[i].eps1 = 0.0;
        value = y.re;
        g[i] = y.eps1;
        hv[i] = y.eps1eps2;
    }
    value
}

fn sum_of<S: Scalar>(v: &[S]) -> S {
    let mut s = v[0].constant_like(0.0);
    for u in v {
        s = s.add(u);
    }
    s
}

/// `sum_1000`, `_sum_1000`: `Σ xᵢ`.
pub struct Sum;
impl Objective for Sum {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        sum_of(x)
    }
}

/// `sum_sin_1000`, `sum_sin_chain_1000`, `_sum_sin_1000`: `Σ sin xᵢ`.
pub struct SumSin;
impl Objective for SumSin {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        let mut s = x[0].constant_like(0.0);
        for u in x {
            s = s.add(&u.sin());
        }
        s
    }
}

/// `naive_map_sin_cos_exp`: `sin xᵢ + cos xᵢ + exp xᵢ` into a buffer, then summed.
pub struct NaiveMapSinCosExp;
impl Objective for NaiveMapSinCosExp {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        let y: Vec<S> = x.iter().map(|v| v.sin().add(&v.cos()).add(&v.exp())).collect();
        sum_of(&y)
    }
}

/// `rosenbrock_1000`.
pub struct Rosenbrock;
impl Objective for Rosenbrock {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        let mut s = x[0].constant_like(0.0);
        for i in 0..x.len() - 1 {
            let a = x[i + 1].sub(&x[i].mul(&x[i]));
            let b = x[i].mul_c(-1.0).add_c(1.0);
            s = s.add(&a.mul(&a).mul_c(100.0)).add(&b.mul(&b));
        }
        s
    }
}

/// `kron_sum` over `x = [A, B]` (`na × na` then `nb × nb`, row-major): the product built
/// into a buffer, then summed.
pub struct KronSum {
    /// Width of `A`.
    pub na: usize,
    /// Width of `B`.
    pub nb: usize,
}
impl Objective for KronSum {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        let (na, nb) = (self.na, self.nb);
        let (a, b) = x.split_at(na * na);
        let n = na * nb;
        let mut k = vec![x[0].constant_like(0.0); n * n];
        for i in 0..na {
            for j in 0..na {
                for r in 0..nb {
                    for c in 0..nb {
                        k[(i * nb + r) * n + j * nb + c] = a[i * na + j].mul(&b[r * nb + c]);
                    }
                }
            }
        }
        sum_of(&k)
    }
}

/// `simple_mlp` over `x = [w1, b1, w2, b2]` (see `Mlp::flatten`).
pub struct SimpleMlp<'d> {
    /// Input, hidden and output widths.
    pub widths: (usize, usize, usize),
    /// Inputs, `batch × inputs`.
    pub x: &'d [f64],
    /// Targets, `batch × outputs`.
    pub y: &'d [f64],
}
impl Objective for SimpleMlp<'_> {
    fn eval<S: Scalar>(&self, p: &[S]) -> S {
        let (ni, nh, no) = self.widths;
        let (w1, rest) = p.split_at(nh * ni);
        let (b1, rest) = rest.split_at(nh);
        let (w2, b2) = rest.split_at(no * nh);
        let zero = p[0].constant_like(0.0);
        let mut h = vec![zero.clone(); nh];
        let mut loss = zero;
        for s in 0..self.x.len() / ni {
            for j in 0..nh {
                let mut z = b1[j].clone();
                for i in 0..ni {
                    z = z.add(&w1[j * ni + i].mul_c(self.x[s * ni + i]));
                }
                h[j] = z.relu();
            }
            for o in 0..no {
                let mut out = b2[o].clone();
                for j in 0..nh {
                    out = out.add(&w2[o * nh + j].mul(&h[j]));
                }
                let e = out.mul_c(-1.0).add_c(self.y[s * no + o]);
                loss = loss.add(&e.mul(&e));
            }
        }
        loss
    }
}

fn logsumexp<S: Scalar>(v: &[S]) -> S {
    let m = v.iter().fold(f64::NEG_INFINITY, |a, b| a.max(b.val()));
    let mut s = v[0].constant_like(0.0);
    for u in v {
        s = s.add(&u.add_c(-m).exp());
    }
    s.ln().add_c(m)
}

/// `gmm` over `x = [alphas, means, icf]` (ADBench's objective, see `problems::gmm`).
pub struct Gmm<'d> {
    /// Dimension.
    pub d: usize,
    /// Components.
    pub k: usize,
    /// Points, `n × d`.
    pub x: &'d [f64],
    /// Wishart `gamma`.
    pub gamma: f64,
    /// Wishart `m`.
    pub m: usize,
}
impl Objective for Gmm<'_> {
    fn eval<S: Scalar>(&self, p: &[S]) -> S {
        let (d, k) = (self.d, self.k);
        let icf_sz = d * (d + 1) / 2;
        let (alphas, rest) = p.split_at(k);
        let (means, icf) = rest.split_at(k * d);
        let zero = p[0].constant_like(0.0);
        let mut qdiags = Vec::with_capacity(k * d);
        let mut sum_qs = Vec::with_capacity(k);
        for c in 0..k {
            let mut s = zero.clone();
            for j in 0..d {
                s = s.add(&icf[c * icf_sz + j]);
                qdiags.push(icf[c * icf_sz + j].exp());
            }
            sum_qs.push(s);
        }
        let n = self.x.len() / d;
        let mut xc = vec![zero.clone(); d];
        let mut qxc = vec![zero.clone(); d];
        let mut main = vec![zero.clone(); k];
        let mut slse = zero.clone();
        for i in 0..n {
            for c in 0..k {
                for j in 0..d {
                    xc[j] = means[c * d + j].mul_c(-1.0).add_c(self.x[i * d + j]);
                }
                for j in 0..d {
                    qxc[j] = qdiags[c * d + j].mul(&xc[j]);
                }
                let mut idx = c * icf_sz + d;
                for col in 0..d {
                    for row in col + 1..d {
                        qxc[row] = qxc[row].add(&icf[idx].mul(&xc[col]));
                        idx += 1;
                    }
                }
                let mut sq = zero.clone();
                for q in &qxc {
                    sq = sq.add(&q.mul(q));
                }
                main[c] = alphas[c].add(&sum_qs[c]).sub(&sq.mul_c(0.5));
            }
            slse = slse.add(&logsumexp(&main));
        }
        let mut prior = zero;
        let g2 = self.gamma * self.gamma;
        for c in 0..k {
            let mut frobenius = p[0].constant_like(0.0);
            for q in &qdiags[c * d..(c + 1) * d] {
                frobenius = frobenius.add(&q.mul(q));
            }
            for q in &icf[c * icf_sz + d..(c + 1) * icf_sz] {
                frobenius = frobenius.add(&q.mul(q));
            }
            prior = prior.add(&frobenius.mul_c(0.5 * g2)).sub(&sum_qs[c].mul_c(self.m as f64));
        }
        let nf = n as f64;
        let constant = -nf * d as f64 * 0.5 * (2.0 * std::f64::consts::PI).ln()
            - k as f64 * crate::problems::gmm::wishart_constant(d, self.gamma, self.m);
        slse.sub(&logsumexp(alphas).mul_c(nf)).add(&prior).add_c(constant)
    }
}

/// `ode_euler_1000` over `x = [a, b, c, d, u0, v0]`.
pub struct OdeEuler {
    /// Number of Euler steps.
    pub steps: usize,
}
impl Objective for OdeEuler {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        let h = crate::problems::ode::STEP;
        let (a, b, c, d) = (&x[0], &x[1], &x[2], &x[3]);
        let (mut u, mut v) = (x[4].clone(), x[5].clone());
        for _ in 0..self.steps {
            let uv = u.mul(&v);
            let du = a.mul(&u).sub(&b.mul(&uv));
            let dv = d.mul(&uv).sub(&c.mul(&v));
            u = u.add(&du.mul_c(h));
            v = v.add(&dv.mul_c(h));
        }
        u.mul(&u).add(&v.mul(&v))
    }
}

/// `recursive` over `x[0..=depth]`.
pub struct Recursive {
    /// Depth of the recursion.
    pub depth: usize,
}
fn recurse<S: Scalar>(x: &[S], depth: usize) -> S {
    if depth == 0 {
        return x[0].clone();
    }
    let inner = recurse(x, depth - 1);
    x[depth].mul(&inner).sin().add(&x[depth])
}
impl Objective for Recursive {
    fn eval<S: Scalar>(&self, x: &[S]) -> S {
        recurse(x, self.depth)
    }
}
