//! Slice views as iterators (issue 14, item 3, part): `windows(k)`, `chunks(k)` and
//! `chunks_exact(k)` in `for` loops and as the source of iterator chains, their views indexed
//! and measured. Both rules of each function are checked by `test_rule!`.

#![allow(clippy::needless_range_loop)] // views are indexed, as the subset needs

use mooncake_runtime::prelude::*;

#[differentiable]
fn total_variation(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        s += (w[1] - w[0]).abs();
    }
    s
}

#[differentiable]
fn smoothness(x: &[f64]) -> f64 {
    x.windows(3).map(|w| (w[0] - 2.0 * w[1] + w[2]).powi(2)).sum()
}

/// Rows of a row-major matrix, times a vector.
#[differentiable]
fn row_norms(a: &[f64], v: &[f64]) -> f64 {
    let mut s = 0.0;
    for row in a.chunks_exact(v.len()) {
        let mut dot = 0.0;
        for j in 0..row.len() {
            dot += row[j] * v[j];
        }
        s += dot * dot;
    }
    s
}

/// Chunks with a shorter last one.
#[differentiable]
fn chunk_maxima(x: &[f64], k: usize) -> f64 {
    x.chunks(k)
        .map(|c| {
            let mut m = c[0];
            for j in 1..c.len() {
                m = m.max(c[j]);
            }
            m
        })
        .sum()
}

/// A view over a field of a struct.
#[derive(Tangent, Clone, Debug, PartialEq)]
struct Series {
    y: Vec<f64>,
    scale: f64,
}

#[differentiable]
fn series_energy(s: &Series) -> f64 {
    let mut e = 0.0;
    for w in s.y.windows(2) {
        let d = w[1] - w[0];
        e += s.scale * d * d;
    }
    e
}

fn xs(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * seed).sin() + 0.1 * i as f64).collect()
}

#[test]
fn views_have_the_right_gradients() {
    let x = xs(7, 0.9);
    test_rule!(total_variation(&x));
    test_rule!(smoothness(&x));
    let (a, v) = (xs(6, 0.7), xs(3, 1.3));
    test_rule!(row_norms(&a, &v));
    test_rule!(chunk_maxima(&x, 3));
    test_rule!(chunk_maxima(&x, 7));
    let s = Series { y: xs(5, 0.4), scale: 1.5 };
    test_rule!(series_energy(&s));
}

#[test]
fn views_compute_what_they_say() {
    let x = [1.0, 3.0, 2.0, 5.0, -1.0];
    assert_eq!(value_and_gradient!(total_variation(&x)).0, 2.0 + 1.0 + 3.0 + 6.0);
    // Chunks [1, 3], [2, 5], [-1]: maxima 3 + 5 - 1.
    let (v, (g, _)) = value_and_gradient!(chunk_maxima(&x, 2));
    assert_eq!(v, 7.0);
    assert_eq!(g, [0.0, 1.0, 0.0, 1.0, 1.0]);
    // Too short for a window: an empty loop.
    let one = vec![2.0];
    assert_eq!(value_and_gradient!(total_variation(&one)).0, 0.0);
}

/// A window sub-sliced (`w[1..]`), iterated and passed on whole (`dot3(w)`); rows of
/// `chunks_mut(k).enumerate()` iterated mutably.
#[differentiable]
fn window_tails(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(3) {
        s += w[1..].iter().sum::<f64>() * w[0] + dot3(w);
    }
    s
}

#[differentiable]
fn dot3(w: &[f64]) -> f64 {
    w[0] * w[1] + w[2]
}

#[differentiable]
fn scale_rows(m: &mut [f64], k: usize) -> f64 {
    for (r, row) in m.chunks_mut(k).enumerate() {
        for v in row.iter_mut() {
            *v *= (r + 1) as f64;
        }
    }
    m.iter().map(|v| v * v).sum()
}

#[test]
fn views_passed_on_sliced_and_enumerated() {
    let x = vec![0.3, -0.1, 0.8, 0.5, 0.2];
    test_rule!(window_tails(&*x));
    test_rule!(scale_rows(&mut x.clone(), 2));
    assert_eq!(value_and_gradient!(window_tails(&x)).0, window_tails(&x));
    let (mut a, mut b) = (x.clone(), x.clone());
    assert_eq!(value_and_gradient!(scale_rows(&mut a, 2)).0, scale_rows(&mut b, 2));
}

#[differentiable]
fn chunk_read_past_its_end(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (k, c) in x.chunks(2).enumerate() {
        if k == 0 {
            s += c[2];
        } else {
            s += c[0];
        }
    }
    s
}

#[differentiable]
fn window_range_past_its_end(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(2) {
        s += w[1..3].iter().sum::<f64>();
    }
    s
}

/// An index past a view panics as indexing the view does, with Rust's message, in both modes
/// (it read the buffer's next element before).
#[test]
#[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
fn views_indexed_past_their_end_panic_in_reverse_mode() {
    let _ = value_and_gradient!(chunk_read_past_its_end(&[1.0, 2.0, 3.0, 4.0]));
}

#[test]
#[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
fn views_indexed_past_their_end_panic_in_forward_mode() {
    let x = [1.0, 2.0, 3.0, 4.0];
    let _ = value_and_derivative!(chunk_read_past_its_end(&x), (&[1.0; 4][..],));
}

#[test]
#[should_panic(expected = "range end index 3 out of range for slice of length 2")]
fn view_ranges_past_their_end_panic() {
    let _ = value_and_gradient!(window_range_past_its_end(&[1.0, 2.0, 3.0, 4.0]));
}

#[differentiable]
fn views_of_views(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in x.chunks(4) {
        for r in c.chunks(2) {
            s += r[0] * r[r.len() - 1];
        }
        for w in c.windows(3) {
            s += w[2] - w[0] * w[1];
        }
    }
    for c in x[1..].chunks_exact(3) {
        s += c[0] * c[2];
    }
    for w in x[2..x.len() - 1].windows(2) {
        s += w[0].sin() * w[1];
    }
    s
}

/// Views of a view (`for r in c.chunks(2)` inside `for c in x.chunks(4)`) and of a range of a
/// buffer (`x[1..].chunks_exact(3)`), in both modes; a last chunk shorter than the others too.
#[test]
fn views_of_views_and_of_ranges() {
    let x: Vec<f64> = (0..10).map(|i| 0.3 + 0.17 * i as f64).collect();
    test_rule!(views_of_views(&x));
    // The value as the primal computes it (views taken by std).
    assert!((value_and_gradient!(views_of_views(&x)).0 - views_of_views(&x)).abs() < 1e-12);
}

/// Views zipped with elements of another buffer, on either side, in `for` loops and chains,
/// stopping at the shorter side as `zip` does (`x` has a short last chunk and more chunks than
/// `y` has elements in the second loop).
#[differentiable]
fn zipped_views(x: &[f64], y: &[f64], out: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for (row, &yi) in x.chunks(2).zip(y.iter()) {
        s += yi * row[0] * row[row.len() - 1];
    }
    for (yi, pair) in y[1..].iter().zip(x.chunks_exact(2)) {
        s += (yi - pair[1]).powi(2);
    }
    for (w, o) in x.windows(2).zip(out.iter_mut()) {
        *o = w[1] - w[0];
    }
    s + x.chunks(2).zip(y).map(|(c, v)| v * c[0].sin()).sum::<f64>()
}

#[test]
fn views_zipped_with_elements() {
    let x = [0.5, -1.0, 2.0, 0.3, 1.1];
    let y = [0.7, -0.2];
    let mut out = [0.0; 3];
    let plain = {
        let mut o = out;
        zipped_views(&x, &y, &mut o)
    };
    let (v, _) = value_and_gradient!(zipped_views(&x, &y, &mut out));
    assert!((v - plain).abs() < 1e-12);
    let out = vec![0.0; 3];
    test_rule!(zipped_views(&x[..], &y[..], &mut out));
}
