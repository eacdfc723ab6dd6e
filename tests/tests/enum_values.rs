//! Enum values in derived rules (issue 14, items 6 and 7): `Option` and `Result` kept in
//! variables, passed, returned, built and taken apart by `match`, `if let`, `let .. else`,
//! `while let`, `?` and their methods, checked in both modes by `test_rule!`.

use mooncake_runtime::prelude::*;

#[differentiable]
fn safe_log(x: f64) -> Result<f64, String> {
    if x <= 0.0 {
        return Err(format!("log of {x}"));
    }
    Ok(x.ln())
}

#[differentiable]
fn twice_log(x: f64) -> Result<f64, String> {
    let y = safe_log(x)?;
    Ok(2.0 * y)
}

#[differentiable]
fn ratio(a: f64, b: f64) -> Option<f64> {
    if b == 0.0 { None } else { Some(a / b) }
}

#[differentiable]
fn ratio_or_zero(a: f64, b: f64) -> f64 {
    match ratio(a, b) {
        Some(r) => r * r,
        None => 0.0,
    }
}

#[test]
fn results_and_options() {
    test_rule!(twice_log(2.0));
    test_rule!(ratio_or_zero(1.5, 0.7));
    test_rule!(ratio(1.5, 0.7));
    let (y, (dx,)) = value_and_gradient!(twice_log(2.0)).unwrap();
    assert!((y - 2.0 * 2.0_f64.ln()).abs() < 1e-12);
    assert!((dx - 1.0).abs() < 1e-12);
    assert_eq!(value_and_gradient!(twice_log(-1.0)).unwrap_err(), "log of -1");
}

/// A custom error converted by `?` through `From`. An error built in the body is a value of
/// the function, so its type needs a tangent: `#[derive(Tangent)]` (a `usize` field has none).
#[derive(Tangent, Clone, Debug, PartialEq)]
enum FitError {
    Empty,
    Negative(usize),
}

#[derive(Clone, Debug, PartialEq)]
struct Wrapped(FitError);

impl From<FitError> for Wrapped {
    fn from(e: FitError) -> Self {
        Wrapped(e)
    }
}

#[differentiable]
fn checked_mean(x: &[f64]) -> Result<f64, FitError> {
    if x.is_empty() {
        return Err(FitError::Empty);
    }
    let mut s = 0.0;
    for (i, v) in x.iter().enumerate() {
        if *v < 0.0 {
            return Err(FitError::Negative(i));
        }
        s += v.sqrt();
    }
    Ok(s / x.len() as f64)
}

#[differentiable]
fn scaled_mean(x: &[f64], k: f64) -> Result<f64, Wrapped> {
    let m = checked_mean(x)?;
    Ok(k * m * m)
}

#[differentiable]
fn first_positive(x: &[f64]) -> Option<f64> {
    for v in x.iter() {
        if *v > 0.0 {
            return Some(*v);
        }
    }
    None
}

/// `?` on an `Option`, an `Option` kept in a variable and tested.
#[differentiable]
fn product_of_firsts(x: &[f64], y: &[f64]) -> Option<f64> {
    let a = first_positive(x)?;
    let b = first_positive(y);
    if b.is_none() {
        return Some(a);
    }
    Some(a * b.unwrap())
}

/// `if let`, `let .. else` and `unwrap_or` on values returned by calls.
#[differentiable]
fn branches(x: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    if let Some(v) = first_positive(x) {
        s += v.exp() * w;
    } else {
        s -= w;
    }
    let Some(m) = ratio(w, x[0]) else {
        return s;
    };
    s + m + ratio(x[1], w).unwrap_or(1.0) + first_positive(x).expect("a positive entry")
}

/// A `Result` matched with both arms binding, and `is_ok` / `is_err`.
#[differentiable]
fn recovered(x: f64, y: f64) -> f64 {
    let r = safe_log(x);
    let bonus = if r.is_ok() { 1.0 } else { 0.0 };
    let penalty = if safe_log(y).is_err() { y * y } else { 0.0 };
    match r {
        Ok(v) => v * y + bonus - penalty,
        Err(msg) => {
            assert!(!msg.is_empty());
            -y - penalty
        }
    }
}

/// An `Option` argument, tuples inside variants, and a guard on a bound field.
#[differentiable]
fn weighted(p: Option<(f64, f64)>, x: f64) -> f64 {
    match p {
        Some((a, b)) if a > 0.0 => a * x + b,
        Some((a, _)) => a * x * x,
        None => x,
    }
}

/// `while let` over values a function returns (a bisection-like shrinking step).
#[differentiable]
fn halve_above(x: f64, limit: f64) -> Option<f64> {
    if x > limit { Some(0.5 * x) } else { None }
}

#[differentiable]
fn shrink(x: f64, limit: f64) -> f64 {
    let mut v = x;
    let mut steps = 0;
    while let Some(h) = halve_above(v, limit) {
        v = h + 0.1 * limit;
        steps += 1;
        if steps > 50 {
            break;
        }
    }
    v
}

/// A `Some` built from a local and passed on to a call taking an `Option`.
#[differentiable]
fn passes_options(x: f64, flag: bool) -> f64 {
    let p = if flag { Some((x, 2.0 * x)) } else { None };
    weighted(p, x.sin()) + weighted(Some((x, 1.0)), 0.5)
}

#[test]
fn errors_pass_through_question_marks() {
    let x = vec![1.0, 4.0, 9.0];
    test_rule!(checked_mean(&x));
    test_rule!(scaled_mean(&x, 1.5));
    let (y, (g, dk)) = value_and_gradient!(scaled_mean(&x, 1.5)).unwrap();
    let m = (1.0 + 2.0 + 3.0) / 3.0;
    assert!((y - 1.5 * m * m).abs() < 1e-12);
    assert!((dk - m * m).abs() < 1e-12);
    for (gi, xi) in g.iter().zip(&x) {
        let want = 1.5 * 2.0 * m / (3.0 * 2.0 * xi.sqrt());
        assert!((gi - want).abs() < 1e-12, "{gi} against {want}");
    }
    let (bad, empty) = (vec![1.0, -1.0], Vec::<f64>::new());
    test_rule!(scaled_mean(&bad, 1.0));
    assert_eq!(
        value_and_gradient!(scaled_mean(&bad, 1.0)).unwrap_err(),
        Wrapped(FitError::Negative(1))
    );
    assert_eq!(
        value_and_gradient!(scaled_mean(&empty, 1.0)).unwrap_err(),
        Wrapped(FitError::Empty)
    );
    // The forward rule gives the same error.
    let d = scaled_mean_frule(Dual::new(&[2.0, -3.0][..], &[1.0, 1.0][..]), Dual::new(1.0, 0.0));
    assert_eq!(d.primal, Err(Wrapped(FitError::Negative(1))));
}

#[test]
fn options_kept_passed_and_returned() {
    let x = vec![-1.0, 0.3, 2.0];
    let y = vec![-2.0, -0.5, 1.7];
    test_rule!(first_positive(&x));
    test_rule!(product_of_firsts(&x, &y));
    test_rule!(product_of_firsts(&x, &[-1.0][..]));
    test_rule!(product_of_firsts(&[-1.0][..], &y));
    let negative = vec![-1.0];
    assert_eq!(value_and_gradient!(product_of_firsts(&negative, &y)), None);
    let (v, (gx, gy)) = value_and_gradient!(product_of_firsts(&x, &y)).unwrap();
    assert!((v - 0.3 * 1.7).abs() < 1e-12);
    assert_eq!(gx, vec![0.0, 1.7, 0.0]);
    assert_eq!(gy, vec![0.0, 0.0, 0.3]);
    test_rule!(branches(&x, 0.8));
    test_rule!(branches(&[-1.0, 0.5][..], 0.8));
    test_rule!(recovered(2.5, 0.7));
    test_rule!(recovered(-2.5, 0.7));
    test_rule!(recovered(2.5, -0.7));
    test_rule!(weighted(Some((0.5, 2.0)), 1.3));
    test_rule!(weighted(Some((-0.5, 2.0)), 1.3));
    test_rule!(weighted(None, 1.3));
    test_rule!(shrink(37.0, 2.0));
    test_rule!(passes_options(0.9, true));
    test_rule!(passes_options(0.9, false));
}

#[test]
fn prepared_and_pullback_forms_take_options() {
    let x = vec![1.0, 4.0, 9.0];
    let mut cache = GradientCache::new();
    for _ in 0..3 {
        let (y, (g, dk)) = value_and_gradient!(scaled_mean(&x, 2.0), cache = &mut cache).unwrap();
        let (y2, (g2, dk2)) = value_and_gradient!(scaled_mean(&x, 2.0)).unwrap();
        assert_eq!((y, *dk), (y2, dk2));
        assert_eq!(g, &g2);
    }
    let (y, (g,)) = value_and_pullback!(first_positive(&x), Some(3.0));
    assert_eq!(y, Some(1.0));
    assert_eq!(g, vec![3.0, 0.0, 0.0]);
}

#[test]
#[should_panic(expected = "a positive entry")]
fn expect_panics_with_its_message() {
    let x = vec![-1.0, -0.5];
    let _ = value_and_gradient!(branches(&x, 0.8));
}

/// Messages built from literals, `format!` reading locals, and a `Result` of a tuple.
#[differentiable]
fn bounded(x: f64, lo: f64, hi: f64) -> Result<(f64, f64), String> {
    if lo >= hi {
        return Err("empty interval".to_string());
    }
    let width = hi - lo;
    if x < lo || x > hi {
        return Err(format!("{x} is outside [{lo}, {hi}] of width {width:.2}"));
    }
    let t = (x - lo) / width;
    Ok((t, t * t * width))
}

#[differentiable]
fn bounded_sum(x: f64, lo: f64, hi: f64) -> f64 {
    match bounded(x, lo, hi) {
        Ok((t, s)) => t + s,
        Err(_) => 0.0,
    }
}

#[test]
fn messages_and_tuples_in_results() {
    test_rule!(bounded_sum(0.3, -1.0, 2.0));
    test_rule!(bounded_sum(3.0, -1.0, 2.0));
    test_rule!(bounded(0.3, -1.0, 2.0));
    let (y, _) = value_and_pullback!(bounded(0.3, -1.0, 2.0), Some((1.0, 0.0)));
    assert!(y.is_ok());
    assert_eq!(bounded(5.0, 0.0, 1.0), Err("5 is outside [0, 1] of width 1.00".to_string()));
    let d = bounded_frule(Dual::new(5.0, 1.0), Dual::new(0.0, 0.0), Dual::new(1.0, 0.0));
    assert_eq!(d.primal, Err("5 is outside [0, 1] of width 1.00".to_string()));
    let (r, pb) = bounded_rrule(
        CoDual::new(2.0, NoFData),
        CoDual::new(1.0, NoFData),
        CoDual::new(0.0, NoFData),
    );
    assert_eq!(r.primal, Err("empty interval".to_string()));
    assert_eq!(pb(None), (-0.0, -0.0, -0.0));
}

/// An activation with a parameter: an enum with data under `#[derive(Tangent)]`.
#[derive(Tangent, Clone, Copy, Debug, PartialEq)]
enum Act {
    Relu,
    Leaky(f64),
    Affine(f64, f64),
}

#[differentiable]
fn activate(act: Act, z: f64) -> f64 {
    match act {
        Act::Relu => z.max(0.0),
        Act::Leaky(k) => {
            if z > 0.0 {
                z
            } else {
                k * z
            }
        }
        Act::Affine(a, b) => a * z + b,
    }
}

#[differentiable]
fn layer(w: &[f64], x: &[f64], act: Act) -> f64 {
    let mut s = 0.0;
    for (wi, xi) in w.iter().zip(x) {
        s += activate(act, wi * xi);
    }
    s
}

/// Variants built in the body from computed fields, and `if let` on one.
#[differentiable]
fn built(k: f64, z: f64) -> f64 {
    let a = if k > 1.0 { Act::Affine(k, k * k) } else { Act::Leaky(0.5 * k) };
    let extra = if let Act::Affine(p, _) = a { p } else { 0.0 };
    activate(a, z) + activate(Act::Relu, z) + extra
}

/// A struct holding an enum with data, behind `&`.
#[derive(Tangent, Clone, Debug)]
struct Unit {
    w: f64,
    act: Act,
}

#[differentiable]
fn unit_output(u: &Unit, x: f64) -> f64 {
    match u.act {
        Act::Leaky(k) => k * u.w * x,
        Act::Affine(a, b) => a * u.w * x + b,
        Act::Relu => (u.w * x).max(0.0),
    }
}

#[test]
fn enums_with_data() {
    for act in [Act::Relu, Act::Leaky(0.1), Act::Affine(1.5, -0.3)] {
        test_rule!(activate(act, -0.7));
        test_rule!(activate(act, 0.4));
        let (w, x) = (vec![0.5, -1.0, 2.0], vec![1.0, 0.3, -0.8]);
        test_rule!(layer(&w, &x, act));
        let u = Unit { w: 0.8, act };
        test_rule!(unit_output(&u, 1.3));
    }
    test_rule!(built(0.6, -0.4));
    test_rule!(built(1.6, -0.4));
    // The gradient with respect to the enum is the enum's tangent, variant by variant.
    let (_, (g, _)) = value_and_gradient!(activate(Act::Leaky(0.1), -2.0));
    assert_eq!(g, ActTangent::Leaky(-2.0));
    let (_, (g, _)) = value_and_gradient!(activate(Act::Affine(1.5, -0.3), 2.0));
    assert_eq!(g, ActTangent::Affine(2.0, 1.0));
    let (_, (g, _)) = value_and_gradient!(activate(Act::Relu, 2.0));
    assert_eq!(g, ActTangent::Zero);
    let u = Unit { w: 0.8, act: Act::Leaky(0.1) };
    let (_, (gu, _)) = value_and_gradient!(unit_output(&u, 1.3));
    assert_eq!(gu.act, ActTangent::Leaky(0.8 * 1.3));
}

/// An enum whose variants hold a buffer and a struct, built and returned by one function and
/// taken apart by another.
#[derive(Tangent, Clone, Debug)]
enum Kernel {
    Weights(Vec<f64>),
    Gauss(f64),
}

#[differentiable]
fn make_kernel(scale: f64, n: usize) -> Kernel {
    if n > 0 {
        let mut w = vec![0.0; n];
        for (i, wi) in w.iter_mut().enumerate() {
            *wi = scale / (1.0 + i as f64);
        }
        Kernel::Weights(w)
    } else {
        Kernel::Gauss(scale)
    }
}

#[differentiable]
fn apply_kernel(scale: f64, x: &[f64], n: usize) -> f64 {
    let k = make_kernel(scale, n);
    match k {
        Kernel::Weights(w) => {
            let mut s = 0.0;
            for i in 0..w.len() {
                s += w[i] * x[i];
            }
            s
        }
        Kernel::Gauss(h) => {
            let mut s = 0.0;
            for v in x.iter() {
                s += (-v * v / (h * h)).exp();
            }
            s
        }
    }
}

#[test]
fn enums_holding_buffers() {
    let x = vec![0.3, -1.2, 0.8];
    test_rule!(apply_kernel(1.7, &x, 3));
    test_rule!(apply_kernel(1.7, &x, 0));
    test_rule!(make_kernel(1.7, 2));
    let (y, (ds, dx, _)) = value_and_gradient!(apply_kernel(2.0, &x, 2));
    assert!((y - (2.0 * 0.3 + 1.0 * -1.2)).abs() < 1e-12);
    assert!((ds - (0.3 - 0.6)).abs() < 1e-12);
    assert_eq!(dx, vec![2.0, 1.0, 0.0]);
}

/// `map`, `map_or`, `ok`, `ok_or`, `unwrap_or_default` on values, tuple patterns of variants,
/// an `Option` of a chain kept in a variable.
#[differentiable]
fn combinators(a: Option<f64>, x: f64) -> f64 {
    let doubled = a.map(|v| v * x).unwrap_or(1.0);
    let logged = safe_log(x).map(f64::exp).unwrap_or_default();
    let via = a.map_or(0.5, |v| v.sin());
    let back = safe_log(x).ok().unwrap_or(0.0) + a.ok_or("none".to_string()).unwrap_or(2.0);
    doubled + logged + via + back
}

#[differentiable]
fn pair_of_options(a: Option<f64>, b: Option<f64>) -> f64 {
    match (a, b) {
        (Some(x), Some(y)) => x * y,
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => 0.0,
    }
}

#[differentiable]
fn kept_maximum(x: &[f64]) -> f64 {
    let m = x.iter().copied().reduce(f64::max);
    let p = x.iter().position(|v| *v < 0.0);
    match (m, p) {
        (Some(m), Some(i)) => m * x[i],
        (Some(m), None) => m,
        _ => 0.0,
    }
}

#[test]
fn combinators_and_tuples_of_options() {
    test_rule!(combinators(Some(0.4), 1.7));
    test_rule!(combinators(None, 1.7));
    test_rule!(combinators(Some(0.4), -1.7));
    test_rule!(pair_of_options(Some(0.4), Some(1.5)));
    test_rule!(pair_of_options(None, Some(1.5)));
    test_rule!(pair_of_options(None, None));
    test_rule!(kept_maximum(&[0.4, -1.5, 2.0]));
    test_rule!(kept_maximum(&[0.4, 1.5, 2.0]));
}

// An `Option` field of a struct behind `&`, a tuple of `Option`s matched, an `Option` from a
// chain kept, `map` on an argument, `?` on a `Result` kept, an enum loss chosen per element, a
// `match` with `continue` in a loop.

#[derive(Tangent, Clone, Debug)]
struct Cfg {
    scale: f64,
    clip: Option<f64>,
}

#[differentiable]
fn s1(cfg: &Cfg, x: f64) -> f64 {
    let y = cfg.scale * x;
    if let Some(c) = cfg.clip { y.min(c) } else { y }
}

#[differentiable]
fn s2(a: Option<f64>, b: Option<f64>) -> f64 {
    match (a, b) {
        (Some(x), Some(y)) => x * y,
        (Some(x), None) => x,
        _ => 0.0,
    }
}

#[differentiable]
fn s3(x: &[f64]) -> f64 {
    let m = x.iter().copied().reduce(f64::max);
    m.unwrap_or(0.0)
}

#[differentiable]
fn s4(a: Option<f64>) -> f64 {
    a.map(|v| v * 2.0).unwrap_or(1.0)
}

#[differentiable]
fn s5(x: f64) -> Result<f64, String> {
    let y = if x > 0.0 { Ok(x.sqrt()) } else { Err(format!("negative {x}")) };
    let z = y?;
    Ok(z + 1.0)
}

#[derive(Tangent, Clone, Copy, Debug)]
enum Loss {
    L2,
    Huber(f64),
}

#[differentiable]
fn s6(r: &[f64], loss: Loss) -> f64 {
    let mut s = 0.0;
    for v in r.iter() {
        s += match loss {
            Loss::L2 => v * v,
            Loss::Huber(d) => {
                if v.abs() <= d {
                    0.5 * v * v
                } else {
                    d * (v.abs() - 0.5 * d)
                }
            }
        };
    }
    s
}

#[differentiable]
fn s7(x: f64) -> Option<f64> {
    if x > 0.0 { Some(x.ln()) } else { None }
}

#[differentiable]
fn s8(xs: &[f64]) -> f64 {
    let mut total = 0.0;
    for x in xs.iter() {
        match s7(*x) {
            Some(l) => total += l,
            None => continue,
        }
    }
    total
}

#[test]
fn options_in_structs_loops_and_matches() {
    test_rule!(s1(&Cfg { scale: 2.0, clip: Some(1.5) }, 0.5));
    test_rule!(s1(&Cfg { scale: 2.0, clip: Some(1.5) }, 1.5));
    test_rule!(s1(&Cfg { scale: 2.0, clip: None }, 1.5));
    test_rule!(s2(Some(0.5), Some(2.0)));
    test_rule!(s2(Some(0.5), None));
    test_rule!(s3(&[0.5, 2.0, 1.0]));
    test_rule!(s4(Some(0.5)));
    test_rule!(s4(None));
    test_rule!(s5(2.0));
    test_rule!(s6(&[0.5, -2.0, 1.0], Loss::Huber(1.0)));
    test_rule!(s6(&[0.5, -2.0, 1.0], Loss::L2));
    test_rule!(s8(&[0.5, -2.0, 1.0]));
}

/// Known `Option`s (`x.get(i).copied()`, `v.pop()`) kept in variables and passed on, and their
/// value methods.
#[differentiable]
fn kept_known_options(x: &[f64], i: usize) -> f64 {
    let a = x.get(i).copied();
    let b = x.first().copied().map_or(0.0, |v| v * 2.0);
    let mut stack = x.to_vec();
    let top = stack.pop();
    let c = first_of(a, top);
    a.unwrap_or(-1.0) + b + c + stack.len() as f64
}

#[differentiable]
fn first_of(a: Option<f64>, b: Option<f64>) -> f64 {
    match a {
        Some(v) => v,
        None => b.unwrap_or(0.0),
    }
}

#[test]
fn known_options_kept_as_values() {
    test_rule!(kept_known_options(&[0.5, -1.5, 2.0], 1));
    test_rule!(kept_known_options(&[0.5, -1.5, 2.0], 7));
}

// An `Option` field of a struct behind `&mut` matched in a `&mut self` method (with an
// associated constant), an `f32` function with attributes, a generic norm with a where clause,
// an `Option<(f64, usize)>` best-so-far updated under a guard and returned.

#[derive(Tangent, Clone, Debug)]
struct Opt {
    lr: f64,
    momentum: Option<f64>,
    vel: Vec<f64>,
}

#[differentiable]
impl Opt {
    const EPS: f64 = 1e-8;
    fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        for i in 0..params.len() {
            let g = grad[i];
            let v = match self.momentum {
                Some(m) => m * self.vel[i] + g,
                None => g,
            };
            self.vel[i] = v;
            params[i] -= self.lr * v / (v.abs() + Self::EPS).sqrt();
        }
    }
}

#[differentiable]
fn w1(o: &mut Opt, p: &mut [f64], g: &[f64]) {
    o.step(p, g);
}

/// A doc comment, an attribute, f32.
#[differentiable]
#[inline]
pub(crate) fn w2(x: f32, y: f32) -> f32 {
    (x * y).sin() + x.powf(1.5)
}

#[differentiable]
#[allow(clippy::multiple_bound_locations)]
fn w3<T: Float>(x: &[T]) -> T
where
    T: Copy,
{
    let mut s = T::zero();
    for v in x.iter() {
        s += *v * *v;
    }
    s.sqrt()
}

#[differentiable]
fn w4(x: &[f64]) -> Option<(f64, usize)> {
    let mut best: Option<(f64, usize)> = None;
    for (i, &v) in x.iter().enumerate() {
        match best {
            Some((b, _)) if b >= v => {}
            _ => best = Some((v, i)),
        }
    }
    best
}

#[differentiable]
fn w5(x: &[f64]) -> f64 {
    match w4(x) {
        Some((v, i)) => v * (i as f64 + 1.0),
        None => 0.0,
    }
}

#[test]
fn options_behind_mut_and_kept_best() {
    let o = Opt { lr: 0.1, momentum: Some(0.9), vel: vec![0.1, -0.2] };
    let (p, g) = (vec![1.0, 2.0], vec![0.3, -0.5]);
    test_rule!(w1(&mut o.clone(), &mut p, &g));
    test_rule!(w2(0.5f32, 1.2f32));
    test_rule!(w3(&[0.5, 1.2, -0.3][..]));
    test_rule!(w5(&[0.5, 1.2, -0.3][..]));
}

// `let Some((i, m)) = x.iter().enumerate().max_by(..) else { .. };`: the tuple kept as values,
// `*m` read as `m` (it was a type error in the expansion).

#[differentiable]
fn z1(x: &[f64]) -> f64 {
    let Some((i, m)) = x.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) else {
        return 0.0;
    };
    *m * (i as f64 + 1.0)
}

#[test]
fn let_else_on_a_tuple_kept_by_max_by() {
    test_rule!(z1(&[0.5, 1.2, -0.3][..]));
}

// Enums and `Option`s behind `&` matched (`match k { Kernel2::Weights(w) => .. }` of
// `k: &Kernel2`, `match &kernel`): the value taken apart, its buffers' gradients landing in the
// reference's shadow (`Primal::fdata_of_shadow`); a struct holding a `Vec` inside a variant.

#[derive(Tangent, Clone, Debug)]
enum Kernel2 {
    Weights(Vec<f64>),
    Gauss(f64),
}

#[differentiable]
fn b1(k: &Kernel2, x: &[f64]) -> f64 {
    match k {
        Kernel2::Weights(w) => w.iter().zip(x).map(|(a, b)| a * b).sum(),
        Kernel2::Gauss(h) => x.iter().map(|v| (-v * v / (h * h)).exp()).sum(),
    }
}

#[differentiable]
fn b2(o: &Option<f64>, x: f64) -> f64 {
    match o {
        Some(v) => v * x,
        None => x,
    }
}

#[derive(Tangent, Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: f64,
}

#[derive(Tangent, Clone, Debug)]
enum Block {
    Dense(Layer),
    Skip,
}

#[differentiable]
fn b3(blocks: &Block, x: &[f64]) -> f64 {
    match blocks {
        Block::Dense(l) => {
            let mut s = l.b;
            for (w, v) in l.w.iter().zip(x) {
                s += w * v;
            }
            s.tanh()
        }
        Block::Skip => x.iter().sum(),
    }
}

#[differentiable]
fn b4(k: f64, x: &[f64]) -> f64 {
    let kernel = if k > 0.0 { Kernel2::Gauss(k) } else { Kernel2::Weights(vec![k, 2.0 * k]) };
    match &kernel {
        Kernel2::Gauss(h) => *h * x[0],
        Kernel2::Weights(w) => w[0] * x[1],
    }
}

#[test]
fn enums_behind_references() {
    test_rule!(b3(&Block::Dense(Layer { w: vec![0.3, -0.2], b: 0.1 }), &[0.1, 0.5][..]));
    test_rule!(b3(&Block::Skip, &[0.1, 0.5][..]));
    test_rule!(b4(0.7, &[0.1, 0.5][..]));
    test_rule!(b4(-0.7, &[0.1, 0.5][..]));
    test_rule!(b1(&Kernel2::Gauss(0.7), &[0.1, 0.5][..]));
    test_rule!(b1(&Kernel2::Weights(vec![0.3, 0.2]), &[0.1, 0.5][..]));
    test_rule!(b2(&Some(0.4), 0.5));
}

// `Option<Vec<f64>>` and `Result<Vec<f64>, String>` returned and taken apart (also by `?`), an
// enum whose variants hold arrays, an `Option<Vec<f64>>` field matched behind `&`.

#[differentiable]
fn c1(x: &[f64], flag: bool) -> Option<Vec<f64>> {
    if !flag {
        return None;
    }
    let mut v = x.to_vec();
    for e in v.iter_mut() {
        *e *= 2.0;
    }
    Some(v)
}

#[differentiable]
fn c2(x: &[f64]) -> f64 {
    match c1(x, true) {
        Some(v) => v.iter().sum(),
        None => 0.0,
    }
}

#[differentiable]
fn c3(x: &[f64]) -> Result<Vec<f64>, String> {
    if x.is_empty() {
        return Err("empty".to_string());
    }
    Ok(x.iter().map(|v| v.exp()).collect())
}

#[differentiable]
fn c4(x: &[f64]) -> Result<f64, String> {
    let e = c3(x)?;
    Ok(e.iter().sum::<f64>().ln())
}

#[derive(Tangent, Clone, Copy, Debug)]
enum Shape {
    Point([f64; 2]),
    Circle([f64; 2], f64),
}

#[differentiable]
fn c5(s: Shape, q: [f64; 2]) -> f64 {
    match s {
        Shape::Point(p) => (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2),
        Shape::Circle(c, r) => ((c[0] - q[0]).powi(2) + (c[1] - q[1]).powi(2)).sqrt() - r,
    }
}

#[derive(Tangent, Clone, Debug)]
struct PriorModel {
    w: Vec<f64>,
    prior: Option<Vec<f64>>,
}

#[differentiable]
fn c6(m: &PriorModel) -> f64 {
    let mut s: f64 = m.w.iter().map(|v| v * v).sum();
    if let Some(p) = &m.prior {
        for (a, b) in m.w.iter().zip(p.iter()) {
            s += (a - b).powi(2);
        }
    }
    s
}

#[test]
fn options_and_results_of_buffers() {
    test_rule!(c2(&[0.1, 0.5][..]));
    test_rule!(c4(&[0.1, 0.5][..]));
    test_rule!(c5(Shape::Point([0.1, 0.5]), [1.0, 2.0]));
    test_rule!(c5(Shape::Circle([0.1, 0.5], 0.3), [1.0, 2.0]));
    test_rule!(c6(&PriorModel { w: vec![0.1, 0.5], prior: Some(vec![0.2, 0.1]) }));
    test_rule!(c6(&PriorModel { w: vec![0.1, 0.5], prior: None }));
}

// The methods of an `Option` behind `&` (`p.unwrap_or(..)`, `p.map(..)`, `p.is_some()` of
// `p: &Option<f64>`).

#[differentiable]
fn g3(p: &Option<f64>, x: f64) -> f64 {
    let old = p.unwrap_or(0.0);
    let m = p.map(|v| v * x).unwrap_or(x);
    old * x + m + if p.is_some() { 1.0 } else { 0.0 }
}

#[test]
fn option_methods_behind_references() {
    test_rule!(g3(&Some(0.3), 0.7));
    test_rule!(g3(&None, 0.7));
}

// A method returning `Option<f64>` (a table lookup with an early `return Some(..)`), its
// `unwrap_or` with a default read through `last()`, `if let Some(&v)` on `find`, `clamp`.

#[derive(Tangent, Clone, Debug)]
struct Table {
    xs: Vec<f64>,
    ys: Vec<f64>,
}

#[differentiable]
impl Table {
    fn lookup(&self, x: f64) -> Option<f64> {
        for i in 1..self.xs.len() {
            if x <= self.xs[i] {
                let t = (x - self.xs[i - 1]) / (self.xs[i] - self.xs[i - 1]);
                return Some(self.ys[i - 1] + t * (self.ys[i] - self.ys[i - 1]));
            }
        }
        None
    }
}

#[differentiable]
fn k1(tab: &Table, x: f64) -> f64 {
    tab.lookup(x).unwrap_or(*tab.ys.last().unwrap())
}

#[differentiable]
fn k2(x: &[f64]) -> f64 {
    if let Some(&v) = x.iter().find(|&&v| v > 0.5) { v * v } else { 0.0 }
}

#[differentiable]
fn k3(x: f64, lo: f64, hi: f64) -> f64 {
    let c = x.clamp(lo, hi);
    let r = (x as i64) as f64;
    c * c + r + f64::EPSILON
}

#[test]
fn lookups_finds_and_clamps() {
    let tab = Table { xs: vec![0.0, 1.0, 2.0], ys: vec![0.5, 1.5, 0.7] };
    test_rule!(k1(&tab, 0.4));
    test_rule!(k1(&tab, 1.4));
    test_rule!(k1(&tab, 2.5));
    test_rule!(k2(&[0.1, 0.7, 0.9][..]));
    test_rule!(k3(0.3, -1.0, 1.0));
}
