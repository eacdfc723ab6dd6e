//! Primitive rules for scalars: arithmetic, the `std` float methods, compound assignment,
//! comparisons and numeric `as` casts, for `f32` and `f64` (through [`Float`]).
//!
//! Every primitive `NAME` has a forward-mode rule `NAME_frule` and a reverse-mode rule
//! `NAME_rrule`, generated side by side from **one** statement of the derivative, so the two modes
//! cannot disagree:
//!
//! | primitive | forward | reverse |
//! | --- | --- | --- |
//! | unary `f(x)` | `fn(Dual<T, T>) -> Dual<T, T>` | `fn(CoDual<T, NoFData>) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,))` |
//! | binary `f(a, b)` | `fn(Dual<T, T>, Dual<T, T>) -> Dual<T, T>` | pullback `FnOnce(T) -> (T, T)` |
//! | `x.mul_add(a, b)`, `x.clamp(lo, hi)` | three `Dual<T, T>` | pullback `FnOnce(T) -> (T, T, T)` |
//! | `x.powi(n)` | `n: Dual<i32, NoTangent>` | pullback `FnOnce(T) -> (T, NoRData)` |
//! | `*x OP= v` | `x: Dual<&mut T, &mut T>`, returns `Dual<(), NoTangent>` | `x: CoDual<SharedCell<T>, SharedCell<T>>`, pullback `FnOnce(NoRData) -> (NoRData, T)` |
//! | `a < b` etc. | returns `Dual<bool, NoTangent>` | pullback `FnOnce(NoRData) -> (T, T)` (zeros) |
//! | `x as U` | [`CastRule::cast_frule`] | [`CastRule::cast_rrule`] |
//!
//! Reverse-mode rules compute the local partial derivatives during the forward pass and capture
//! them (a few scalars, by copy) in the pullback: no heap allocation, nothing boxed.
//!
//! # Where the derivative is not defined
//!
//! At kinks and jumps the rules return one fixed element of the (Clarke) subdifferential, or the
//! derivative of the piece the primal value lies on, after ChainRules / Mooncake.jl; each rule
//! says what it returns, and where it departs from them and why. In brief:
//!
//! * `abs` at `±0`: `0`. `signum`: `0` everywhere (also at `0`, where it jumps).
//! * `floor`, `ceil`, `round`, `trunc`: `0` everywhere (also at their jumps);
//!   `fract`: `1` everywhere; `rem`: `(1, -q)` with `q` the integer quotient the primal used.
//! * `min`, `max` at a tie: the whole derivative goes to the **first** argument;
//!   `clamp(x, lo, hi)` at `x == lo` or `x == hi`: to `x`.
//! * `hypot(0, 0)`: `(0, 0)`. `atan2(0, 0)`: `(NaN, NaN)` (the function is not continuous there).
//! * `powf(x, p)` at `x == 0`: `d/dp = 0` (no NaN from `ln(0)`); `d/dx` is `0` for `p == 0`.
//! * `sqrt`, `cbrt` at `0`, `asin`, `acos` at `±1`, `acosh` at `1`: `±inf`, as the mathematics
//!   says. These rules, `powf` and `atan2` are *guarded* as in Mooncake.jl: a zero tangent or
//!   cotangent gives exactly `0` even where the derivative is infinite or NaN at a finite primal
//!   value, rather than `0 · inf = NaN` (see [`guarded_scale`]).
//! * Comparisons and casts to integers carry no derivative.

use crate::dual::{CoDual, Dual, NoFData, NoRData, NoTangent};
use crate::float::Float;
use crate::lanes::Directions;
use crate::shared::SharedCell;
use crate::tangent::Primal;

// ---------------------------------------------------------------------------------------------
// Rule generators. Each takes, per primitive, the primal expression and the derivative
// expression once, and emits the forward and the reverse rule from them.

/// `d * t`, the application of a partial derivative `d` to a tangent or cotangent `t`. With
/// `guarded`, exactly `0` when `t == 0`, also where `d` is infinite or NaN (see
/// [`guarded_scale`]).
macro_rules! scale {
    (; $d:expr, $t:expr) => {
        $d * $t
    };
    (guarded; $d:expr, $t:expr) => {
        guarded_scale($d, $t)
    };
}

/// `t.scale(d)`: `scale!` applied to a tangent of any [`Directions`] type (one direction or
/// several), in every direction.
macro_rules! scale_dir {
    (; $d:expr, $t:expr) => {
        $t.scale($d)
    };
    (guarded; $d:expr, $t:expr) => {
        $t.scale_guarded($d)
    };
}

/// Unary rules `y = f(x)`: `|x| primal => |y| dy/dx`. With `[guarded]` after the names, the
/// derivative is applied by [`guarded_scale`]. The forward tangent is `dy/dx * dx`, the
/// pullback maps `ȳ` to `(dy/dx * ȳ,)`.
macro_rules! unary_rules {
    ($(
        $(#[$doc:meta])*
        $frule:ident, $rrule:ident $([$mode:ident])?: |$x:ident| $primal:expr => |$y:tt| $deriv:expr;
    )*) => {$(
        #[doc = concat!("Forward-mode rule of `", stringify!($primal), "`: the tangent is `(",
            stringify!($deriv), ") * dx`, where `y` is the primal result. Reverse mode: [`",
            stringify!($rrule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $frule<T: Float, D: Directions<T>>(x: Dual<T, D>) -> Dual<T, D> {
            let $x = x.primal;
            let y: T = $primal;
            let $y = y;
            let d: T = $deriv;
            Dual::new(y, scale_dir!($($mode)?; d, x.tangent))
        }

        #[doc = concat!("Reverse-mode rule of `", stringify!($primal), "`: the pullback maps `ȳ` to `((",
            stringify!($deriv), ") * ȳ,)`, where `y` is the primal result. Forward mode: [`",
            stringify!($frule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $rrule<T: Float>(
            x: CoDual<T, NoFData>,
        ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,)) {
            let $x = x.primal;
            let y: T = $primal;
            let $y = y;
            let d: T = $deriv;
            (CoDual::new(y, NoFData), move |dy: T| (scale!($($mode)?; d, dy),))
        }
    )*};
}

/// Unary rules whose derivative is zero wherever it exists: the tangent and the gradient are an
/// exact `0` (not `0 * dx`, which would turn an infinite tangent into NaN).
macro_rules! zero_derivative_rules {
    ($(
        $(#[$doc:meta])*
        $frule:ident, $rrule:ident: |$x:ident| $primal:expr;
    )*) => {$(
        #[doc = concat!("Forward-mode rule of `", stringify!($primal),
            "`: piecewise constant, so the tangent is `0`. Reverse mode: [`",
            stringify!($rrule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $frule<T: Float, D: Directions<T>>(x: Dual<T, D>) -> Dual<T, D> {
            let $x = x.primal;
            Dual::new($primal, D::zero())
        }

        #[doc = concat!("Reverse-mode rule of `", stringify!($primal),
            "`: piecewise constant, so the pullback returns `(0,)`. Forward mode: [`",
            stringify!($frule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $rrule<T: Float>(
            x: CoDual<T, NoFData>,
        ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T,)) {
            let $x = x.primal;
            (CoDual::new($primal, NoFData), |_: T| (T::ZERO,))
        }
    )*};
}

/// Binary rules `y = f(a, b)`: `|a, b| primal => |y| (dy/da, dy/db)`. With
/// `, assign NAME_assign_frule, NAME_assign_rrule` also the rules of the compound assignment
/// `*a = f(*a, b)` through `&mut`, from the same partials.
macro_rules! binary_rules {
    ($(
        $(#[$doc:meta])*
        $frule:ident, $rrule:ident $(, assign $afrule:ident, $arrule:ident)? $([$mode:ident])?:
            |$a:ident, $b:ident| $primal:expr => |$y:tt| $partials:expr;
    )*) => {$(
        #[doc = concat!("Forward-mode rule of `", stringify!($primal),
            "`: the tangent is `da * a' + db * b'`, where `(da, db) = ", stringify!($partials),
            "` and `y` is the primal result. Reverse mode: [`", stringify!($rrule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $frule<T: Float, D: Directions<T>>(a: Dual<T, D>, b: Dual<T, D>) -> Dual<T, D> {
            let ($a, $b) = (a.primal, b.primal);
            let y: T = $primal;
            let $y = y;
            let (da, db): (T, T) = $partials;
            Dual::new(y, scale_dir!($($mode)?; da, a.tangent).plus(scale_dir!($($mode)?; db, b.tangent)))
        }

        #[doc = concat!("Reverse-mode rule of `", stringify!($primal),
            "`: the pullback maps `ȳ` to `(da * ȳ, db * ȳ)`, where `(da, db) = ",
            stringify!($partials), "` and `y` is the primal result. Forward mode: [`",
            stringify!($frule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $rrule<T: Float>(
            a: CoDual<T, NoFData>,
            b: CoDual<T, NoFData>,
        ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, T)) {
            let ($a, $b) = (a.primal, b.primal);
            let y: T = $primal;
            let $y = y;
            let (da, db): (T, T) = $partials;
            let pullback = move |dy: T| (scale!($($mode)?; da, dy), scale!($($mode)?; db, dy));
            (CoDual::new(y, NoFData), pullback)
        }

        $(
            #[doc = concat!("Forward-mode rule of the compound assignment `*x = ",
                stringify!($primal), "` with `", stringify!($a), " = *x`, `", stringify!($b),
                " = v`: updates the primal and the tangent of `x` in place (the new tangent is `da * x' + db * v'` with `(da, db) = ",
                stringify!($partials), "`). Reverse mode: [`", stringify!($arrule), "`].")]
            #[inline]
            pub fn $afrule<T: Float>(x: Dual<&mut T, &mut T>, v: Dual<T, T>) -> Dual<(), NoTangent> {
                let ($a, $b) = (*x.primal, v.primal);
                let y: T = $primal;
                let $y = y;
                let (da, db): (T, T) = $partials;
                *x.tangent = da * *x.tangent + db * v.tangent;
                *x.primal = y;
                Dual::new((), NoTangent)
            }

            #[doc = concat!("Reverse-mode rule of the compound assignment `*x = ",
                stringify!($primal), "` with `", stringify!($a), " = *x`, `", stringify!($b),
                " = v`, the `&mut T` seen through a [`SharedCell`] (primal) and a [`SharedCell`] \
                shadow.\n\nThe forward pass overwrites the primal cell. The pullback restores it \
                to its value on entry, reads the shadow `x̄` (the gradient with respect to the \
                value on exit), sets the shadow to `da * x̄` (the gradient with respect to the \
                value on entry) and returns `(NoRData, db * x̄)`, where `(da, db) = ",
                stringify!($partials), "`. Forward mode: [`", stringify!($afrule), "`].")]
            #[inline]
            pub fn $arrule<T: Float>(
                x: CoDual<SharedCell<T>, SharedCell<T>>,
                v: CoDual<T, NoFData>,
            ) -> (CoDual<(), NoFData>, impl FnOnce(NoRData) -> (NoRData, T)) {
                let CoDual { primal: cell, fdata: shadow } = x;
                let old = cell.get();
                let ($a, $b) = (old, v.primal);
                let y: T = $primal;
                let $y = y;
                let (da, db): (T, T) = $partials;
                cell.set(y);
                let pullback = move |_: NoRData| {
                    cell.set(old);
                    let dx = shadow.get();
                    shadow.set(da * dx);
                    (NoRData, db * dx)
                };
                (CoDual::new((), NoFData), pullback)
            }
        )?
    )*};
}

/// Binary rules that return one of their arguments (`min`, `max`): `|a, b| primal => first if
/// cond`. The derivative is `(1, 0)` when `cond` holds and `(0, 1)` otherwise, applied by
/// selection (an exact zero, never `0 * inf`).
macro_rules! select_rules {
    ($(
        $(#[$doc:meta])*
        $frule:ident, $rrule:ident: |$a:ident, $b:ident| $primal:expr => first if $first:expr;
    )*) => {$(
        #[doc = concat!("Forward-mode rule of `", stringify!($primal),
            "`: the tangent is `a'` when `", stringify!($first), "`, else `b'`. Reverse mode: [`",
            stringify!($rrule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $frule<T: Float, D: Directions<T>>(a: Dual<T, D>, b: Dual<T, D>) -> Dual<T, D> {
            let ($a, $b) = (a.primal, b.primal);
            let y: T = $primal;
            let tangent = if $first { a.tangent } else { b.tangent };
            Dual::new(y, tangent)
        }

        #[doc = concat!("Reverse-mode rule of `", stringify!($primal),
            "`: the pullback maps `ȳ` to `(ȳ, 0)` when `", stringify!($first),
            "`, else to `(0, ȳ)`. Forward mode: [`", stringify!($frule), "`].")]
        #[doc = ""]
        $(#[$doc])*
        #[inline]
        pub fn $rrule<T: Float>(
            a: CoDual<T, NoFData>,
            b: CoDual<T, NoFData>,
        ) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, T)) {
            let ($a, $b) = (a.primal, b.primal);
            let y: T = $primal;
            let first: bool = $first;
            let pullback = move |dy: T| if first { (dy, T::ZERO) } else { (T::ZERO, dy) };
            (CoDual::new(y, NoFData), pullback)
        }
    )*};
}

/// Comparisons `a OP b`: a `bool`, with no derivative. The pullback returns zero rdata for both
/// arguments.
macro_rules! comparison_rules {
    ($(
        $frule:ident, $rrule:ident: |$a:ident, $b:ident| $primal:expr;
    )*) => {$(
        #[doc = concat!("Forward-mode rule of the comparison `", stringify!($primal),
            "`: a `bool`, with tangent [`NoTangent`]. Reverse mode: [`", stringify!($rrule), "`].")]
        #[inline]
        pub fn $frule<T: Float, D: Directions<T>>(a: Dual<T, D>, b: Dual<T, D>) -> Dual<bool, NoTangent> {
            let ($a, $b) = (a.primal, b.primal);
            Dual::new($primal, NoTangent)
        }

        #[doc = concat!("Reverse-mode rule of the comparison `", stringify!($primal),
            "`: a `bool` carries no gradient, so the pullback returns `(0, 0)`. Forward mode: [`",
            stringify!($frule), "`].")]
        #[inline]
        pub fn $rrule<T: Float>(
            a: CoDual<T, NoFData>,
            b: CoDual<T, NoFData>,
        ) -> (CoDual<bool, NoFData>, impl FnOnce(NoRData) -> (T, T)) {
            let ($a, $b) = (a.primal, b.primal);
            (CoDual::new($primal, NoFData), |_: NoRData| (T::ZERO, T::ZERO))
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by several derivatives.

/// The derivative of `abs`: `1` for `x > 0`, `-1` for `x < 0`, `0` at `±0` (the subgradient
/// ChainRules picks, `sign(x)`), NaN at NaN. Not `x.signum()`, which is `±1` at `±0`.
#[inline(always)]
pub(crate) fn sign_or_zero<T: Float>(x: T) -> T {
    if x > T::ZERO {
        T::ONE
    } else if x < T::ZERO {
        -T::ONE
    } else if x.is_nan() {
        x
    } else {
        T::ZERO
    }
}

/// `d * t`, but exactly `0` when `t == 0`: a zero tangent (a constant) or a zero cotangent (an
/// output that does not matter) stays zero even where the derivative `d` is infinite or NaN at a
/// finite primal value (`sqrt` at `0`, `asin` at `±1`, `atan2` at the origin), instead of
/// turning into `0 · inf = NaN` and poisoning everything downstream. Mooncake.jl guards its
/// primitive rules the same way.
///
/// ```
/// use mooncake_runtime::rules::scalar::guarded_scale;
///
/// assert_eq!(guarded_scale(f64::INFINITY, 0.0), 0.0);
/// assert_eq!(guarded_scale(f64::INFINITY, 2.0), f64::INFINITY);
/// assert_eq!(guarded_scale(3.0, 2.0), 6.0);
/// ```
#[inline(always)]
pub fn guarded_scale<T: Float>(d: T, t: T) -> T {
    d.mul_guarded(t)
}

/// `1 - x²` computed as `(1 - x)(1 + x)`, accurate near `x = ±1`.
#[inline(always)]
fn one_minus_sq<T: Float>(x: T) -> T {
    (T::ONE - x) * (T::ONE + x)
}

// ---------------------------------------------------------------------------------------------
// Unary rules.

unary_rules! {
    /// `d(-x)/dx = -1`.
    neg_frule, neg_rrule: |x| -x => |_| -T::ONE;

    /// `d sin(x)/dx = cos(x)`.
    sin_frule, sin_rrule: |x| x.sin() => |_| x.cos();

    /// `d cos(x)/dx = -sin(x)`.
    cos_frule, cos_rrule: |x| x.cos() => |_| -x.sin();

    /// `d tan(x)/dx = 1 + tan(x)²`.
    tan_frule, tan_rrule: |x| x.tan() => |y| T::ONE + y * y;

    /// `d asin(x)/dx = 1 / sqrt(1 - x²)`, computed as `1 / sqrt((1 - x)(1 + x))` (accurate near
    /// `±1`): `+inf` at `x = ±1`, NaN outside `[-1, 1]`. Guarded: a zero tangent or cotangent gives exactly `0` there (see
    /// [`guarded_scale`]).
    asin_frule, asin_rrule [guarded]: |x| x.asin() => |_| one_minus_sq(x).sqrt().recip();

    /// `d acos(x)/dx = -1 / sqrt(1 - x²)`, computed as `-1 / sqrt((1 - x)(1 + x))`: `-inf` at
    /// `x = ±1`, NaN outside `[-1, 1]`. Guarded: a zero tangent or cotangent gives exactly `0` there (see
    /// [`guarded_scale`]).
    acos_frule, acos_rrule [guarded]: |x| x.acos() => |_| -one_minus_sq(x).sqrt().recip();

    /// `d atan(x)/dx = 1 / (1 + x²)`.
    atan_frule, atan_rrule: |x| x.atan() => |_| (T::ONE + x * x).recip();

    /// `d sinh(x)/dx = cosh(x)`.
    sinh_frule, sinh_rrule: |x| x.sinh() => |_| x.cosh();

    /// `d cosh(x)/dx = sinh(x)`.
    cosh_frule, cosh_rrule: |x| x.cosh() => |_| x.sinh();

    /// `d tanh(x)/dx = 1 / cosh(x)²` (`= 1 - tanh(x)²`, computed without the cancellation of the
    /// latter for large `|x|`).
    tanh_frule, tanh_rrule: |x| x.tanh() => |_| {
        let s = x.cosh().recip();
        s * s
    };

    /// `d asinh(x)/dx = 1 / sqrt(x² + 1)`, computed as `1 / hypot(x, 1)` (no overflow).
    asinh_frule, asinh_rrule: |x| x.asinh() => |_| x.hypot(T::ONE).recip();

    /// `d acosh(x)/dx = 1 / sqrt(x² - 1)`, computed as `1 / (sqrt(x - 1) sqrt(x + 1))`: `+inf`
    /// at `x = 1`, NaN below. Guarded: a zero tangent or cotangent gives exactly `0` there (see
    /// [`guarded_scale`]).
    acosh_frule, acosh_rrule [guarded]: |x| x.acosh() => |_| ((x - T::ONE).sqrt() * (x + T::ONE).sqrt()).recip();

    /// `d atanh(x)/dx = 1 / (1 - x²)`, computed as `1 / ((1 - x)(1 + x))`: `+inf` at `x = ±1`
    /// (where the primal is infinite too).
    atanh_frule, atanh_rrule: |x| x.atanh() => |_| one_minus_sq(x).recip();

    /// `d exp(x)/dx = exp(x)`.
    exp_frule, exp_rrule: |x| x.exp() => |y| y;

    /// `d exp2(x)/dx = exp2(x) ln(2)`.
    exp2_frule, exp2_rrule: |x| x.exp2() => |y| y * T::LN_2;

    /// `d exp_m1(x)/dx = exp(x)` (computed directly, not as `exp_m1(x) + 1`, which loses
    /// relative accuracy for very negative `x`).
    exp_m1_frule, exp_m1_rrule: |x| x.exp_m1() => |_| x.exp();

    /// `d ln(x)/dx = 1 / x`: `+inf` at `x = +0`.
    ln_frule, ln_rrule: |x| x.ln() => |_| x.recip();

    /// `d ln_1p(x)/dx = 1 / (1 + x)`.
    ln_1p_frule, ln_1p_rrule: |x| x.ln_1p() => |_| (T::ONE + x).recip();

    /// `d log2(x)/dx = 1 / (x ln(2))`.
    log2_frule, log2_rrule: |x| x.log2() => |_| (x * T::LN_2).recip();

    /// `d log10(x)/dx = 1 / (x ln(10))`.
    log10_frule, log10_rrule: |x| x.log10() => |_| (x * T::LN_10).recip();

    /// `d sqrt(x)/dx = 1 / (2 sqrt(x))`. At `x = 0` this is `+inf`, as the mathematics says: a
    /// nonzero tangent `dx` gives `±inf`. Guarded: a zero tangent or cotangent gives exactly `0` there (see
    /// [`guarded_scale`]).
    sqrt_frule, sqrt_rrule [guarded]: |x| x.sqrt() => |y| (T::TWO * y).recip();

    /// `d cbrt(x)/dx = 1 / (3 cbrt(x)²)`. At `x = 0` this is `+inf`, as the mathematics says: a
    /// nonzero tangent `dx` gives `±inf`. Guarded: a zero tangent or cotangent gives exactly `0` there (see
    /// [`guarded_scale`]).
    cbrt_frule, cbrt_rrule [guarded]: |x| x.cbrt() => |y| (T::from_i32(3) * y * y).recip();

    /// `d |x|/dx = sign(x)`. At `x = ±0`, where `abs` has a kink, the derivative is `0` (the
    /// subgradient ChainRules picks; note that `0.0_f64.signum()` is `1`, so this is not
    /// `signum`).
    abs_frule, abs_rrule: |x| x.abs() => |_| sign_or_zero(x);

    /// `d (1/x)/dx = -1 / x²`: `-inf` at `x = 0`.
    recip_frule, recip_rrule: |x| x.recip() => |y| -(y * y);

    /// `d to_degrees(x)/dx = 180 / pi`.
    to_degrees_frule, to_degrees_rrule: |x| x.to_degrees() => |_| T::RAD_TO_DEG;

    /// `d to_radians(x)/dx = pi / 180`.
    to_radians_frule, to_radians_rrule: |x| x.to_radians() => |_| T::DEG_TO_RAD;

    /// `d fract(x)/dx = 1`: `fract(x) = x - trunc(x)` and `trunc` is piecewise constant. At the
    /// jumps (integer `x`, where `fract` drops from just below `1` to `0`) the derivative of the
    /// piece the primal lies on is used: also `1`.
    fract_frule, fract_rrule: |x| x.fract() => |_| T::ONE;
}

zero_derivative_rules! {
    /// `signum` is `±1` away from zero (derivative `0`) and jumps at `±0` (and is NaN at NaN),
    /// where the derivative is not defined: the rule returns `0` everywhere, as ChainRules does
    /// for `sign` on reals.
    signum_frule, signum_rrule: |x| x.signum();

    /// `floor` jumps at the integers; the derivative there is taken to be `0` too (ChainRules).
    floor_frule, floor_rrule: |x| x.floor();

    /// `ceil` jumps at the integers; the derivative there is taken to be `0` too (ChainRules).
    ceil_frule, ceil_rrule: |x| x.ceil();

    /// `round` jumps at the half-integers; the derivative there is taken to be `0` too
    /// (ChainRules).
    round_frule, round_rrule: |x| x.round();

    /// `trunc` jumps at the nonzero integers; the derivative there is taken to be `0` too
    /// (ChainRules).
    trunc_frule, trunc_rrule: |x| x.trunc();
}

/// The forward-mode rule of `x.sin_cos()`: `(sin x, cos x)` with tangent `(cos x · dx, -sin x · dx)`.
/// Reverse mode: [`sin_cos_rrule`].
#[inline]
pub fn sin_cos_frule<T: Float, D: Directions<T>>(x: Dual<T, D>) -> Dual<(T, T), (D, D)> {
    let (s, c) = (x.primal.sin(), x.primal.cos());
    Dual::new((s, c), (x.tangent.scale(c), x.tangent.scale(-s)))
}

/// The reverse-mode rule of `x.sin_cos()` (the fdata of a pair is a pair of [`NoFData`]): the
/// pullback maps `(s̄, c̄)` to
/// `(cos x · s̄ - sin x · c̄,)`. Forward mode: [`sin_cos_frule`].
#[inline]
#[allow(clippy::type_complexity)]
pub fn sin_cos_rrule<T: Float>(
    x: CoDual<T, NoFData>,
) -> (CoDual<(T, T), (NoFData, NoFData)>, impl FnOnce((T, T)) -> (T,)) {
    let (s, c) = (x.primal.sin(), x.primal.cos());
    let pullback = move |(ds, dc): (T, T)| (c * ds - s * dc,);
    (CoDual::new((s, c), (NoFData, NoFData)), pullback)
}

// ---------------------------------------------------------------------------------------------
// Binary rules.

/// The partial derivatives of `x.powf(p)`, `y = x^p` (see [`powf_frule`] for the choices).
#[inline(always)]
fn powf_partials<T: Float>(x: T, p: T, y: T) -> (T, T) {
    let dx = if p == T::ZERO { T::ZERO } else { p * x.powf(p - T::ONE) };
    let dp = if x == T::ZERO { T::ZERO } else { y * x.abs().ln() };
    (dx, dp)
}

binary_rules! {
    /// `d(a + b) = (1, 1)`.
    add_frule, add_rrule, assign add_assign_frule, add_assign_rrule:
        |a, b| a + b => |_| (T::ONE, T::ONE);

    /// `d(a - b) = (1, -1)`.
    sub_frule, sub_rrule, assign sub_assign_frule, sub_assign_rrule:
        |a, b| a - b => |_| (T::ONE, -T::ONE);

    /// `d(a b) = (b, a)`.
    mul_frule, mul_rrule, assign mul_assign_frule, mul_assign_rrule:
        |a, b| a * b => |_| (b, a);

    /// `d(a / b) = (1 / b, -a / b²)`, the latter computed as `-y / b`.
    div_frule, div_rrule, assign div_assign_frule, div_assign_rrule:
        |a, b| a / b => |y| (b.recip(), -y / b);

    /// `a % b = a - b q` with `q = trunc(a / b)` the integer quotient, piecewise constant:
    /// `d(a % b) = (1, -q)`. `q` is recovered exactly as `round((a - y) / b)` from the primal
    /// result `y`. Where `a / b` is a nonzero integer, `%` jumps; there the rule returns the
    /// derivative of the piece the primal lies on, `(1, -a / b)`. (ChainRules returns NaN at
    /// every integer quotient, also at `a = 0` where `%` is smooth; we follow `trunc`'s convention
    /// of a finite derivative instead.)
    rem_frule, rem_rrule:
        |a, b| a % b => |y| (T::ONE, -((a - y) / b).round());

    /// `d atan2(a, b) = (b, -a) / (a² + b²)` (the squared radius computed as `hypot(a, b)²`, which
    /// does not overflow). At `(0, 0)`, where `atan2` is not continuous, the derivative is
    /// `(NaN, NaN)`, as in ChainRules. Guarded: a zero tangent or cotangent gives exactly `0`
    /// (see [`guarded_scale`]), so a constant argument at the origin is harmless.
    atan2_frule, atan2_rrule [guarded]:
        |a, b| a.atan2(b) => |_| {
            let r = a.hypot(b);
            (b / r / r, -a / r / r)
        };

    /// `rem_euclid(a, b) = a - b q` with `q` the Euclidean quotient, piecewise constant:
    /// `d = (1, -q)`, `q` recovered as `round((a - y) / b)` from the result (as for `%`).
    rem_euclid_frule, rem_euclid_rrule:
        |a, b| a.rem_euclid(b) => |y| (T::ONE, -((a - y) / b).round());

    /// `copysign(a, b) = |a| sgn(b)`: `d = (sgn(a) sgn(b), 0)`, and `0` at `a = ±0` (as `abs`).
    copysign_frule, copysign_rrule:
        |a, b| a.copysign(b) => |y| (
            if a == T::ZERO { T::ZERO } else { a.signum() * y.signum() },
            T::ZERO,
        );

    /// `d hypot(a, b) = (a, b) / hypot(a, b)`. At `(0, 0)`, where `hypot` has a cone-shaped kink,
    /// the derivative is `(0, 0)` (as ChainRules; the counterpart of `abs`'s `0` at `0`).
    hypot_frule, hypot_rrule:
        |a, b| a.hypot(b) => |y| {
            let r = if y == T::ZERO { T::ONE } else { y };
            (a / r, b / r)
        };

    /// `d x^p = (p x^(p-1), x^p ln|x|)` for the base `x = a` and the exponent `p = b`.
    ///
    /// Choices, after ChainRules' `_pow_grad_x` / `_pow_grad_p`:
    /// * `d/dx` is `0` when `p == 0` (`x^0 = 1` is constant, also at `x = 0`, where the formula
    ///   would give `0 · inf`). At `x = 0` it is otherwise `p 0^(p-1)`: `1` for `p = 1`, `0` for
    ///   `p > 1`, `+inf` for `0 < p < 1`, `-inf` for `p < 0`.
    /// * `d/dp` is `0` when `x == 0` (no NaN from `ln(0)`: for `p > 0`, `0^p = 0` on a whole
    ///   neighbourhood of `p`; for `p <= 0`, where ChainRules returns NaN, we return `0` as well so
    ///   that a constant exponent never poisons the base's tangent with `NaN · 0`).
    /// * For `x < 0` (only defined for integer `p`), `d/dp` uses `ln|x|`, the real part of the
    ///   complex logarithm, as ChainRules does.
    /// * Guarded (see [`guarded_scale`]): a zero tangent or cotangent gives exactly `0`, also
    ///   where `d/dx` is infinite (`x = 0`, `p < 1`).
    powf_frule, powf_rrule [guarded]:
        |a, b| a.powf(b) => |y| powf_partials(a, b, y);

    /// `d log_base(x) = (1 / (x ln(base)), -log_base(x) / (base ln(base)))` for `x.log(base)`
    /// (`x = a`, `base = b`).
    log_frule, log_rrule:
        |a, b| a.log(b) => |y| {
            let lb = b.ln();
            ((a * lb).recip(), -y / (b * lb))
        };
}

// ---------------------------------------------------------------------------------------------
// The arithmetic operators with one operand a constant.
//
// The forward rules of `+`, `-`, `*`, `/` above with the constant's term dropped: its tangent is
// zero, but `0 · t` is not `0` in IEEE arithmetic (`t` may be infinite or NaN), so the compiler
// keeps the general rule's product with a constant's zero tangent. A derived forward rule calls
// these where the macro sees a literal or a named constant as an operand (`STEP * du`,
// `x / 2.0`), through `forward::const_operand`. Each is the general rule's tangent, term for
// term, less the constant's. The constant is `c`, on the side of the operator it is on in the
// function's name.

/// `c + x`: the tangent is `x'` ([`add_frule`] with `a = c` constant).
#[inline(always)]
pub fn const_add_frule<T: Float, D: Directions<T>>(c: T, x: Dual<T, D>) -> Dual<T, D> {
    Dual::new(c + x.primal, x.tangent)
}

/// `x + c`: the tangent is `x'` ([`add_frule`] with `b = c` constant).
#[inline(always)]
pub fn add_const_frule<T: Float, D: Directions<T>>(x: Dual<T, D>, c: T) -> Dual<T, D> {
    Dual::new(x.primal + c, x.tangent)
}

/// `c - x`: the tangent is `-x'` ([`sub_frule`] with `a = c` constant).
#[inline(always)]
pub fn const_sub_frule<T: Float, D: Directions<T>>(c: T, x: Dual<T, D>) -> Dual<T, D> {
    Dual::new(c - x.primal, x.tangent.scale(-T::ONE))
}

/// `x - c`: the tangent is `x'` ([`sub_frule`] with `b = c` constant).
#[inline(always)]
pub fn sub_const_frule<T: Float, D: Directions<T>>(x: Dual<T, D>, c: T) -> Dual<T, D> {
    Dual::new(x.primal - c, x.tangent)
}

/// `c x`: the tangent is `c x'` ([`mul_frule`] with `a = c` constant).
#[inline(always)]
pub fn const_mul_frule<T: Float, D: Directions<T>>(c: T, x: Dual<T, D>) -> Dual<T, D> {
    Dual::new(c * x.primal, x.tangent.scale(c))
}

/// `x c`: the tangent is `c x'` ([`mul_frule`] with `b = c` constant).
#[inline(always)]
pub fn mul_const_frule<T: Float, D: Directions<T>>(x: Dual<T, D>, c: T) -> Dual<T, D> {
    Dual::new(x.primal * c, x.tangent.scale(c))
}

/// `c / x`: the tangent is `-(y / x) x'` with `y = c / x` ([`div_frule`] with `a = c`
/// constant).
#[inline(always)]
pub fn const_div_frule<T: Float, D: Directions<T>>(c: T, x: Dual<T, D>) -> Dual<T, D> {
    let y = c / x.primal;
    Dual::new(y, x.tangent.scale(-y / x.primal))
}

/// `x / c`: the tangent is `x' / c`, computed as `(1 / c) x'` ([`div_frule`] with `b = c`
/// constant).
#[inline(always)]
pub fn div_const_frule<T: Float, D: Directions<T>>(x: Dual<T, D>, c: T) -> Dual<T, D> {
    Dual::new(x.primal / c, x.tangent.scale(c.recip()))
}

select_rules! {
    /// `a.min(b)`: the derivative is `(1, 0)` where `a < b` and `(0, 1)` where `b < a`. At a tie
    /// (`a == b`), where it is not defined, the whole derivative goes to the **first** argument,
    /// `(1, 0)`. If one argument is NaN, `min` returns the other, and so does the derivative.
    min_frule, min_rrule: |a, b| a.min(b) => first if a <= b || b.is_nan();

    /// `a.max(b)`: the derivative is `(1, 0)` where `a > b` and `(0, 1)` where `b > a`. At a tie
    /// (`a == b`), where it is not defined, the whole derivative goes to the **first** argument,
    /// `(1, 0)`, as for `min` (ChainRules and Mooncake.jl give a tie of `max` to the second,
    /// after Julia's `max`; Rust's `max` returns either). If one argument is NaN, `max` returns
    /// the other, and so does the derivative.
    max_frule, max_rrule: |a, b| a.max(b) => first if a >= b || b.is_nan();
}

// ---------------------------------------------------------------------------------------------
// Ternary rules.

/// The forward-mode rule of `x.mul_add(a, b) = x a + b` (one rounding): the tangent is
/// `a · x' + x · a' + b'`. Reverse mode: [`mul_add_rrule`].
#[inline]
pub fn mul_add_frule<T: Float, D: Directions<T>>(
    x: Dual<T, D>,
    a: Dual<T, D>,
    b: Dual<T, D>,
) -> Dual<T, D> {
    let y = x.primal.mul_add(a.primal, b.primal);
    let tangent = x.tangent.scale(a.primal).plus(a.tangent.scale(x.primal)).plus(b.tangent);
    Dual::new(y, tangent)
}

/// The reverse-mode rule of `x.mul_add(a, b) = x a + b`: the pullback maps `ȳ` to
/// `(a ȳ, x ȳ, ȳ)`. Forward mode: [`mul_add_frule`].
#[inline]
pub fn mul_add_rrule<T: Float>(
    x: CoDual<T, NoFData>,
    a: CoDual<T, NoFData>,
    b: CoDual<T, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, T, T)) {
    let (x, a) = (x.primal, a.primal);
    let y = x.mul_add(a, b.primal);
    (CoDual::new(y, NoFData), move |dy: T| (a * dy, x * dy, dy))
}

/// Which argument `x.clamp(lo, hi)` returns, for its derivative: `0` for `x` (also at the bounds
/// and for NaN `x`), `1` for `lo`, `2` for `hi`.
#[inline(always)]
fn clamp_selects<T: Float>(x: T, lo: T, hi: T) -> u8 {
    if x < lo {
        1
    } else if x > hi {
        2
    } else {
        0
    }
}

/// The forward-mode rule of `x.clamp(lo, hi)`: the tangent of whichever argument is returned,
/// `x'` for `lo <= x <= hi`, `lo'` for `x < lo`, `hi'` for `x > hi`. At the bounds (`x == lo` or
/// `x == hi`), where the derivative is not defined, it goes to `x` (as ChainRules). Like the
/// primal, panics if `lo > hi` or either bound is NaN. Reverse mode: [`clamp_rrule`].
#[inline]
pub fn clamp_frule<T: Float, D: Directions<T>>(
    x: Dual<T, D>,
    lo: Dual<T, D>,
    hi: Dual<T, D>,
) -> Dual<T, D> {
    let y = x.primal.clamp(lo.primal, hi.primal);
    let tangent = match clamp_selects(x.primal, lo.primal, hi.primal) {
        0 => x.tangent,
        1 => lo.tangent,
        _ => hi.tangent,
    };
    Dual::new(y, tangent)
}

/// The reverse-mode rule of `x.clamp(lo, hi)`: the pullback sends `ȳ` to whichever argument is
/// returned, `x` for `lo <= x <= hi` (also at the bounds, as ChainRules), `lo` for `x < lo`, `hi`
/// for `x > hi`, and `0` to the others. Like the primal, panics if `lo > hi` or either bound is
/// NaN. Forward mode: [`clamp_frule`].
#[inline]
pub fn clamp_rrule<T: Float>(
    x: CoDual<T, NoFData>,
    lo: CoDual<T, NoFData>,
    hi: CoDual<T, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, T, T)) {
    let y = x.primal.clamp(lo.primal, hi.primal);
    let which = clamp_selects(x.primal, lo.primal, hi.primal);
    let pullback = move |dy: T| match which {
        0 => (dy, T::ZERO, T::ZERO),
        1 => (T::ZERO, dy, T::ZERO),
        _ => (T::ZERO, T::ZERO, dy),
    };
    (CoDual::new(y, NoFData), pullback)
}

// ---------------------------------------------------------------------------------------------
// Integer powers.

/// `d x^n/dx = n x^(n-1)`; `0` for `n == 0` (a constant, also at `x = 0`).
#[inline(always)]
fn powi_derivative<T: Float>(x: T, n: i32) -> T {
    match n.checked_sub(1) {
        _ if n == 0 => T::ZERO,
        Some(m) => T::from_i32(n) * x.powi(m),
        // n == i32::MIN: n - 1 overflows.
        None => T::from_i32(n) * x.powi(n) / x,
    }
}

/// The forward-mode rule of `x.powi(n)`: the tangent is `n x^(n-1) · x'`, and `0` for `n == 0`
/// (also at `x = 0`, where the formula would give `0 · inf`). At `x = 0`: `1` for `n = 1`, `0` for
/// `n > 1`, `±inf` for `n < 0`. The exponent is an integer: no tangent. Reverse mode:
/// [`powi_rrule`].
#[inline]
pub fn powi_frule<T: Float, D: Directions<T>>(
    x: Dual<T, D>,
    n: Dual<i32, NoTangent>,
) -> Dual<T, D> {
    let y = x.primal.powi(n.primal);
    Dual::new(y, x.tangent.scale(powi_derivative(x.primal, n.primal)))
}

/// The reverse-mode rule of `x.powi(n)`: the pullback maps `ȳ` to `(n x^(n-1) ȳ, NoRData)`, with
/// the same choices as [`powi_frule`].
#[inline]
pub fn powi_rrule<T: Float>(
    x: CoDual<T, NoFData>,
    n: CoDual<i32, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (T, NoRData)) {
    let y = x.primal.powi(n.primal);
    let d = powi_derivative(x.primal, n.primal);
    (CoDual::new(y, NoFData), move |dy: T| (d * dy, NoRData))
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

comparison_rules! {
    eq_frule, eq_rrule: |a, b| a == b;
    ne_frule, ne_rrule: |a, b| a != b;
    lt_frule, lt_rrule: |a, b| a < b;
    le_frule, le_rrule: |a, b| a <= b;
    gt_frule, gt_rrule: |a, b| a > b;
    ge_frule, ge_rrule: |a, b| a >= b;
}

// ---------------------------------------------------------------------------------------------
// Numeric `as` casts.

/// The rules of the numeric cast `x as To`, for every pair of primitive numeric types (`f32`,
/// `f64`, `i8` to `i128`, `isize`, `u8` to `u128`, `usize`), identity casts included.
///
/// * float to float: the tangent (and the gradient) is converted the same way, `dx as To`
///   (`f64 -> f32` rounds; the derivative of rounding is taken to be `1`).
/// * integer to float: the result is a float, but the input is discrete: zero tangent, and the
///   pullback returns [`NoRData`].
/// * float to integer: the result is discrete ([`NoTangent`]); the pullback returns a zero
///   gradient for the float.
/// * integer to integer: [`NoTangent`] / [`NoRData`].
///
/// ```
/// use mooncake_runtime::prelude::*;
/// use mooncake_runtime::rules::scalar::{cast_frule, cast_rrule};
///
/// let y = cast_frule::<f64, f32>(Dual::new(1.5, 2.0));
/// assert_eq!((y.primal, y.tangent), (1.5_f32, 2.0_f32));
/// let (n, pullback) = cast_rrule::<f64, i32>(CoDual::new(2.7, NoFData));
/// assert_eq!(n.primal, 2);
/// assert_eq!(pullback(NoRData), (0.0,));
/// ```
#[diagnostic::on_unimplemented(
    message = "mooncake has no rule for the cast `{Self} as {To}`",
    label = "no `CastRule<{To}>` for `{Self}`",
    note = "cast rules exist between the primitive numeric types: f32, f64, i8..i128, isize, u8..u128, usize"
)]
pub trait CastRule<To: Primal>: Primal + Sized {
    /// The forward-mode rule of `x as To`.
    fn cast_frule(x: Dual<Self, <Self as Primal>::Tangent>) -> Dual<To, <To as Primal>::Tangent>;

    /// The reverse-mode rule of `x as To`: the pullback maps the rdata of the result to a 1-tuple
    /// holding the rdata of `x`.
    #[allow(clippy::type_complexity)]
    fn cast_rrule(
        x: CoDual<Self, NoFData>,
    ) -> (CoDual<To, NoFData>, impl FnOnce(<To as Primal>::RData) -> (<Self as Primal>::RData,));
}

/// Generates the [`CastRule`] impls for every `from` in the first list and every `to` in the
/// second, by kind: `float_float`, `int_float`, `float_int`, `int_int`.
macro_rules! cast_rules {
    ($kind:ident: [$($from:ty),*] => $tos:tt) => {
        $( cast_rules!(@$kind $from => $tos); )*
    };
    (@float_float $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl CastRule<$to> for $from {
            #[inline]
            fn cast_frule(x: Dual<$from, $from>) -> Dual<$to, $to> {
                Dual::new(x.primal as $to, x.tangent as $to)
            }
            #[inline]
            fn cast_rrule(x: CoDual<$from, NoFData>) -> (CoDual<$to, NoFData>, impl FnOnce($to) -> ($from,)) {
                (CoDual::new(x.primal as $to, NoFData), |dy: $to| (dy as $from,))
            }
        }
    )*};
    (@int_float $from:ty => [$($to:ty),*]) => {$(
        impl CastRule<$to> for $from {
            #[inline]
            fn cast_frule(x: Dual<$from, NoTangent>) -> Dual<$to, $to> {
                Dual::new(x.primal as $to, 0.0)
            }
            #[inline]
            fn cast_rrule(x: CoDual<$from, NoFData>) -> (CoDual<$to, NoFData>, impl FnOnce($to) -> (NoRData,)) {
                (CoDual::new(x.primal as $to, NoFData), |_: $to| (NoRData,))
            }
        }
    )*};
    (@float_int $from:ty => [$($to:ty),*]) => {$(
        impl CastRule<$to> for $from {
            #[inline]
            fn cast_frule(x: Dual<$from, $from>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
            #[inline]
            fn cast_rrule(x: CoDual<$from, NoFData>) -> (CoDual<$to, NoFData>, impl FnOnce(NoRData) -> ($from,)) {
                (CoDual::new(x.primal as $to, NoFData), |_: NoRData| (0.0,))
            }
        }
    )*};
    (@int_int $from:ty => [$($to:ty),*]) => {$(
        #[allow(clippy::unnecessary_cast)]
        impl CastRule<$to> for $from {
            #[inline]
            fn cast_frule(x: Dual<$from, NoTangent>) -> Dual<$to, NoTangent> {
                Dual::new(x.primal as $to, NoTangent)
            }
            #[inline]
            fn cast_rrule(x: CoDual<$from, NoFData>) -> (CoDual<$to, NoFData>, impl FnOnce(NoRData) -> (NoRData,)) {
                (CoDual::new(x.primal as $to, NoFData), |_: NoRData| (NoRData,))
            }
        }
    )*};
}

cast_rules!(float_float: [f32, f64] => [f32, f64]);
cast_rules!(int_float:
    [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize] => [f32, f64]);
cast_rules!(float_int:
    [f32, f64] => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);
cast_rules!(int_int:
    [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]
    => [i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize]);

/// The forward-mode rule of `x as B`, for `A` and `B` primitive numeric types (see
/// [`CastRule`]): `cast_frule::<f64, f32>(x)`.
#[inline]
pub fn cast_frule<A: CastRule<B>, B: Primal>(x: Dual<A, A::Tangent>) -> Dual<B, B::Tangent> {
    A::cast_frule(x)
}

/// The reverse-mode rule of `x as B`, for `A` and `B` primitive numeric types (see
/// [`CastRule`]): `cast_rrule::<f64, f32>(x)`.
#[inline]
#[allow(clippy::type_complexity)]
pub fn cast_rrule<A: CastRule<B>, B: Primal>(
    x: CoDual<A, NoFData>,
) -> (CoDual<B, NoFData>, impl FnOnce(B::RData) -> (A::RData,)) {
    A::cast_rrule(x)
}

// ---------------------------------------------------------------------------------------------
// `T::from_f64(x)` in generic code over `T: Float`

/// Forward rule of `T::from_f64(x)` (`Float::from_f64`, a constant or a value in generic code):
/// the value and its tangent converted.
#[inline]
pub fn float_from_f64_frule<T: Float>(x: Dual<f64, f64>) -> Dual<T, T> {
    Dual::new(T::from_f64(x.primal), T::from_f64(x.tangent))
}

/// `T::from_f64(x)` itself, the primal of [`float_from_f64_frule`] / [`float_from_f64_rrule`]:
/// what a reverse sweep calls when it runs a block again instead of taping it.
#[inline(always)]
pub fn float_from_f64<T: Float>(x: f64) -> T {
    T::from_f64(x)
}

/// Forward rule of `T::from_i32(k)` (`Float::from_i32`, in generic code): the integer converted,
/// with a zero tangent.
#[inline]
pub fn float_from_i32_frule<T: Float>(k: Dual<i32, NoTangent>) -> Dual<T, T> {
    Dual::new(T::from_i32(k.primal), T::ZERO)
}

/// `T::from_i32(k)` itself, the primal of [`float_from_i32_frule`] / [`float_from_i32_rrule`].
#[inline(always)]
pub fn float_from_i32<T: Float>(k: i32) -> T {
    T::from_i32(k)
}

/// Reverse rule of `T::from_i32(k)`: the integer converted; nothing flows back to an integer.
#[inline]
pub fn float_from_i32_rrule<T: Float>(
    k: CoDual<i32, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (NoRData,) + use<T>) {
    (CoDual::new(T::from_i32(k.primal), NoFData), |_: T| (NoRData,))
}

/// Reverse rule of `T::from_f64(x)`: the value converted; the pullback converts the gradient
/// back.
#[inline]
pub fn float_from_f64_rrule<T: Float>(
    x: CoDual<f64, NoFData>,
) -> (CoDual<T, NoFData>, impl FnOnce(T) -> (f64,) + use<T>) {
    (CoDual::new(T::from_f64(x.primal), NoFData), |r: T| (r.to_f64(),))
}
