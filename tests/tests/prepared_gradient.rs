//! The prepared form of `value_and_gradient!` (`cache = &mut GradientCache`): the same
//! gradients as the plain form, and a clear refusal of other sizes or another function. (That
//! it allocates nothing after the first call is `allocation_free.rs`, alone in its binary so
//! that no other test allocates while it counts.)

use mooncake_runtime::prelude::*;
use mooncake_tests::prepared::*;

#[test]
fn same_gradients_as_the_plain_form() {
    let (m, x, y, mut state) = data(6, 3);
    let entry = state.clone();
    let (v, (gm, gx, gy, gs, gscale)) = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5));
    assert_eq!(state, entry);
    let mut cache = GradientCache::new();
    for _ in 0..3 {
        let (v2, (cm, cx, cy, cs, cscale)) =
            value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
        assert_eq!(v, v2);
        assert_eq!((&gm.w, gm.b), (&cm.w, cm.b));
        assert_eq!((&gx, &gy, &gs, gscale), (cx, cy, cs, *cscale));
        assert_eq!(state, entry, "the &mut argument is back to its value on entry");
    }
    // And the gradients are right: against forward mode along a direction.
    let dm = ModelTangent { w: vec![0.5, -1.0, 0.25], b: 2.0 };
    let dx: Vec<f64> = (0..18).map(|i| (i as f64 * 0.3).cos()).collect();
    let mut state2 = state.clone();
    let (_, dir) = value_and_derivative!(
        loss(&m, &x, &y, &mut state2, 1.5),
        (dm.clone(), dx.clone(), vec![0.0; 6], vec![0.0; 6], 0.0)
    );
    let (_, (cm, cx, ..)) =
        value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
    let dot = cm.w.iter().zip(&dm.w).map(|(a, b)| a * b).sum::<f64>()
        + cm.b * dm.b
        + cx.iter().zip(&dx).map(|(a, b)| a * b).sum::<f64>();
    assert!((dot - dir).abs() <= 1e-10 * dir.abs().max(1.0), "{dot} vs {dir}");
}

#[test]
#[should_panic(
    expected = "argument 2 of `loss` is a buffer of length 12, where the cache was prepared for length 18"
)]
fn other_sizes_are_refused() {
    let (m, x, y, mut state) = data(6, 3);
    let mut cache = GradientCache::new();
    let _ = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
    let short = x[..12].to_vec();
    let _ = value_and_gradient!(loss(&m, &short, &y, &mut state, 1.5), cache = &mut cache);
}

#[test]
#[should_panic(
    expected = "argument 1 of `loss` is a buffer of length 2, where the cache was prepared for length 3"
)]
fn other_sizes_inside_a_struct_are_refused() {
    let (mut m, x, y, mut state) = data(6, 3);
    let mut cache = GradientCache::new();
    let _ = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
    m.w.pop();
    let _ = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
}

#[differentiable]
fn other(x: &[f64]) -> f64 {
    x.iter().sum::<f64>()
}

#[test]
#[should_panic(expected = "this GradientCache was prepared for `loss`, not `other`")]
fn another_function_is_refused() {
    let (m, x, y, mut state) = data(6, 3);
    let mut cache = GradientCache::new();
    let _ = value_and_gradient!(loss(&m, &x, &y, &mut state, 1.5), cache = &mut cache);
    let (plain, _) = value_and_gradient!(other(&x));
    assert_eq!(plain, other(&x));
    let _ = value_and_gradient!(other(&x), cache = &mut cache);
}
