//! Nested containers (issue 14, item 5): `&[Vec<f64>]`, `&Vec<Vec<f64>>`, `Vec<Vec<f64>>`,
//! `&[[f64; N]]`, `&[(f64, f64)]`, `&[S]` and `Vec<S>` fields of `#[derive(Tangent)]` structs,
//! read by `a[i][j]`, `net.layers[l].w[j]`, by rows (`for row in a`, `let r = &a[i];`, `row[j]`,
//! `row.len()`, `row.iter()`, `layer.w[j]`), with rows and inner buffers passed to calls
//! (`dot(row, w)`, `dot(&a[i], w)`, `dot(&layer.w, x)`), in both modes; gradients shaped like
//! the input (`Vec<Vec<f64>>`, `NetTangent { layers: Vec<LayerTangent> }`). Writes into
//! buffers of buffers (`m[i][j] = v`, `+=`, a local `vec![vec![0.0; n]; m]`, a `&mut
//! Vec<Vec<f64>>` argument, rows and structs through `iter_mut()`) and into fields of structs in
//! buffers (`ps[k].x = v`, `p.x += ..` of `for p in ps.iter_mut()`) are covered; a buffer
//! method on a row (`m[i].push(v)`) is refused in reverse mode (UI `fail_nested_indexing.rs`).
//! `test_rule!` checks each function's rules against finite differences and against each other.
//! Copies of buffers of buffers (`u0.to_vec()`, `u.clone()`, `u = next;`) are copied row by
//! row (`heat_steps`), and rows borrowed from a buffer in a field (`for row in self.w.iter()`)
//! are read as that field's rows (`Dense::forward`). Elements of a `Vec` of structs in a field
//! borrowed by a loop (`for l in net.layers.iter() { l.b[0] }`), an inner loop over the rest of
//! a slice of structs (`cs.iter().skip(i + 1)`) and a loop over a local copy of one (`for c in
//! &copy`) were type errors in reverse mode until probe programs found them
//! (`elements_of_struct_buffers_in_fields_and_copies`), and rows and their elements borrowed
//! mutably in turn were refused (`rows_and_elements_borrowed_mutably`).

#![allow(clippy::needless_range_loop, clippy::ptr_arg)] // written as users write them

use mooncake_runtime::prelude::*;

#[differentiable]
fn frobenius_sq(a: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        for j in 0..a[i].len() {
            s += a[i][j] * a[i][j];
        }
    }
    s
}

#[differentiable]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

/// Least squares over a data set given as rows, the weights first.
#[differentiable]
fn least_squares(w: &[f64], xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for (row, y) in xs.iter().zip(ys.iter()) {
        let r = dot(row, w) - y;
        loss += r * r;
    }
    loss / xs.len() as f64
}

#[differentiable]
fn logistic_nll(w: &[f64], xs: &Vec<Vec<f64>>, labels: &[f64]) -> f64 {
    let mut nll = 0.0;
    for i in 0..xs.len() {
        let z = dot(&xs[i], w);
        let p = 1.0 / (1.0 + (-z).exp());
        nll -= labels[i] * p.ln() + (1.0 - labels[i]) * (1.0 - p).ln();
    }
    nll
}

#[differentiable]
fn rows_by_borrow(m: &Vec<Vec<f64>>, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        let row = &m[i];
        let mut d = 0.0;
        for j in 0..row.len() {
            d += row[j] * x[j];
        }
        s += d.tanh();
    }
    s
}

#[differentiable]
fn nested_iteration(m: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for row in m {
        let mut p = 1.0;
        for v in row.iter() {
            p *= v.cos();
        }
        s += p;
    }
    s + m[0].iter().map(|v| v * v).sum::<f64>()
}

#[differentiable]
fn points(ps: &[[f64; 2]], c: [f64; 2]) -> f64 {
    // Σ ‖p - c‖ over 2-d points.
    let mut s = 0.0;
    for p in ps.iter() {
        let (dx, dy) = (p[0] - c[0], p[1] - c[1]);
        s += (dx * dx + dy * dy).sqrt();
    }
    s
}

#[differentiable]
fn owned_matrix(m: Vec<Vec<f64>>) -> f64 {
    let mut t = 0.0;
    for i in 0..m.len() {
        t += m[i][i].exp() * m[i][0];
    }
    t
}

#[differentiable]
fn trace(m: [[f64; 2]; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 {
        s += m[i][i] * m[1 - i][i];
    }
    s
}

#[differentiable]
fn outer_product_trace(x: &[f64], n: usize) -> f64 {
    let mut m = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            m[i][j] = x[i] * x[j];
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        m[i][i] += 1.0;
        s += m[i][i] * m[i][0];
    }
    s
}

#[differentiable]
fn relax_rows(grid: &mut Vec<Vec<f64>>, k: f64) -> f64 {
    for i in 1..grid.len() - 1 {
        for j in 0..grid[i].len() {
            grid[i][j] = 0.5 * (grid[i - 1][j] + grid[i + 1][j]) * k;
        }
    }
    grid[1][0] * grid[1][1]
}

#[derive(Tangent, Clone, Copy, Debug)]
struct Particle {
    x: f64,
    v: f64,
}

#[differentiable]
fn drift(ps: &mut Vec<Particle>, dt: f64) -> f64 {
    for p in ps.iter_mut() {
        p.v -= dt * p.x;
        p.x += dt * p.v;
    }
    let mut e = 0.0;
    for p in ps.iter() {
        e += p.x * p.x + p.v * p.v;
    }
    ps[0].x = e;
    e * ps[0].x
}

#[differentiable]
fn rows_scaled(m: &mut Vec<Vec<f64>>, k: f64) -> f64 {
    for row in m.iter_mut() {
        for j in 0..row.len() {
            row[j] *= k;
        }
    }
    m[0][0] + m[1][1]
}

/// A dense layer: `n_out` rows of `n_in` weights, flat, and biases.
#[derive(Tangent, Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
    n_in: usize,
}

#[derive(Tangent, Clone, Debug)]
struct Net {
    layers: Vec<Layer>,
}

/// An MLP's output summed: `net.layers[l].w[o * n_in + i]`, written as by hand.
#[differentiable]
fn mlp(net: &Net, x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for l in 0..net.layers.len() {
        let n_in = net.layers[l].n_in;
        let n_out = net.layers[l].b.len();
        let mut next = vec![0.0; n_out];
        for o in 0..n_out {
            let mut z = net.layers[l].b[o];
            for i in 0..n_in {
                z += net.layers[l].w[o * n_in + i] * h[i];
            }
            next[o] = z.tanh();
        }
        h = next;
    }
    h.iter().sum()
}

/// The same network by its layers as a slice, each layer borrowed (`for layer in layers`),
/// its weights' rows lent to a call.
#[differentiable]
fn mlp_by_layers(layers: &[Layer], x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for layer in layers {
        let mut next = Vec::new();
        for o in 0..layer.b.len() {
            let row = &layer.w[o * layer.n_in..(o + 1) * layer.n_in];
            next.push((dot(row, &h) + layer.b[o]).tanh());
        }
        h = next;
    }
    h.iter().sum::<f64>() + dot(&layers[0].b, &layers[0].b)
}

#[differentiable]
fn pairs(ps: &[(f64, f64)]) -> f64 {
    let mut s = 0.0;
    for p in ps {
        s += p.0 * p.1.sin();
    }
    s + ps[0].0
}

fn net() -> Net {
    let layer = |n_in: usize, n_out: usize, seed: f64| Layer {
        w: (0..n_in * n_out).map(|k| ((k as f64 + 1.0) * seed).sin() * 0.5).collect(),
        b: (0..n_out).map(|k| ((k as f64 + 2.0) * seed).cos() * 0.1).collect(),
        n_in,
    };
    Net { layers: vec![layer(3, 4, 0.7), layer(4, 2, 1.3)] }
}

fn data() -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs: Vec<Vec<f64>> =
        (0..6).map(|i| (0..3).map(|j| ((i * 3 + j) as f64 * 0.37).sin()).collect()).collect();
    let ys: Vec<f64> = (0..6).map(|i| (i as f64 * 0.5).cos()).collect();
    (xs, ys)
}

#[test]
fn buffers_of_buffers_have_the_right_gradients() {
    let (xs, ys) = data();
    let w = vec![0.3, -0.2, 0.5];
    test_rule!(frobenius_sq(&xs));
    test_rule!(least_squares(&w, &xs, &ys));
    let labels: Vec<f64> = ys.iter().map(|y| if *y > 0.0 { 1.0 } else { 0.0 }).collect();
    test_rule!(logistic_nll(&w, &xs, &labels));
    test_rule!(rows_by_borrow(&xs, &w));
    test_rule!(nested_iteration(&xs));
    let ragged = vec![vec![0.1, 0.2, 0.3], vec![0.4], vec![0.5, 0.6]];
    test_rule!(frobenius_sq(&ragged));
    test_rule!(nested_iteration(&ragged));
    let ps = [[0.1, 0.2], [1.0, -0.5], [0.3, 0.9]];
    test_rule!(points(&ps, [0.5, 0.5]));
    let sq = vec![vec![0.1, 0.2], vec![0.3, 0.4]];
    test_rule!(owned_matrix(sq));
    test_rule!(trace([[1.0, 2.0], [3.0, 4.0]]));
    let n = net();
    test_rule!(mlp(&n, &w));
    test_rule!(mlp_by_layers(&n.layers, &w));
    let ps = vec![(0.1, 0.2), (0.7, -0.4), (1.1, 0.3)];
    test_rule!(pairs(&ps));
    test_rule!(outer_product_trace(&w, 3));
    let g = vec![vec![0.1, 0.2], vec![0.3, 0.4], vec![0.5, 0.6], vec![0.7, 0.8]];
    test_rule!(relax_rows(&mut g, 1.3));
    let ps = vec![Particle { x: 0.1, v: 0.2 }, Particle { x: -0.3, v: 0.05 }];
    test_rule!(drift(&mut ps, 0.1));
    let m = vec![vec![0.1, 0.2], vec![0.3, 0.4]];
    test_rule!(rows_scaled(&mut m, 1.3));
}

#[test]
fn structs_in_buffers_compute_what_the_primal_computes() {
    let (n, x) = (net(), vec![0.3, -0.2, 0.5]);
    let (v, (g, _)) = value_and_gradient!(mlp(&n, &x));
    assert_eq!(v, mlp(&n, &x));
    assert_eq!(
        v,
        value_and_gradient!(mlp_by_layers(&n.layers, &x)).0 - dot(&n.layers[0].b, &n.layers[0].b)
    );
    assert_eq!(g.layers.len(), 2);
    assert_eq!(g.layers[0].w.len(), 12);
    assert_eq!(g.layers[1].b.len(), 2);
}

#[test]
fn gradients_are_shaped_like_the_input() {
    let (xs, ys) = data();
    let w = vec![0.3, -0.2, 0.5];
    let (v, (gw, gx, gy)) = value_and_gradient!(least_squares(&w, &xs, &ys));
    assert_eq!(v, least_squares(&w, &xs, &ys));
    assert_eq!(gw.len(), 3);
    assert_eq!(gx.len(), 6);
    assert!(gx.iter().all(|r| r.len() == 3));
    assert_eq!(gy.len(), 6);
    // By hand: ∂/∂xs[i][j] = 2 r_i w_j / n.
    for i in 0..6 {
        let r = dot(&xs[i], &w) - ys[i];
        for j in 0..3 {
            assert!((gx[i][j] - 2.0 * r * w[j] / 6.0).abs() < 1e-12);
        }
    }
    let ragged = vec![vec![0.1, 0.2, 0.3], vec![0.4]];
    let (_, (g,)) = value_and_gradient!(frobenius_sq(&ragged));
    assert_eq!(g, vec![vec![0.2, 0.4, 0.6], vec![0.8]]);
}

/// Explicit steps of the heat equation on a grid copied from the argument, each step into a
/// copy of the last (`to_vec`, `clone` and a move of buffers of buffers).
#[differentiable]
fn heat_steps(u0: &[Vec<f64>], alpha: f64) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    for _ in 0..3 {
        let mut next = u.clone();
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                next[i][j] = u[i][j]
                    + alpha
                        * (u[i + 1][j] + u[i - 1][j] + u[i][j + 1] + u[i][j - 1] - 4.0 * u[i][j]);
            }
        }
        u = next;
    }
    u.iter().map(|r| r.iter().map(|v| v * v).sum::<f64>()).sum()
}

#[derive(Tangent, Clone, Debug)]
struct Dense {
    w: Vec<Vec<f64>>,
    b: Vec<f64>,
}

#[differentiable]
impl Dense {
    /// `relu(W x + b)`, the rows of `W` borrowed from the field.
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        let mut y = self.b.clone();
        for (i, row) in self.w.iter().enumerate() {
            for (j, wij) in row.iter().enumerate() {
                y[i] += wij * x[j];
            }
            y[i] = y[i].max(0.0);
        }
        y
    }
}

#[differentiable]
fn two_dense(l1: &Dense, l2: &Dense, x: &[f64]) -> f64 {
    let h = l1.forward(x);
    let o = l2.forward(&h);
    o.iter().map(|v| v * v).sum()
}

#[test]
fn copies_of_grids_and_rows_of_fields() {
    let g = vec![
        vec![0.1, 0.2, 0.3, 0.1],
        vec![0.4, 0.5, 0.6, 0.2],
        vec![0.7, 0.8, 0.9, 0.3],
        vec![0.2, 0.1, 0.4, 0.5],
    ];
    test_rule!(heat_steps(&g, 0.1));
    let l1 = Dense {
        w: vec![vec![0.5, -0.2], vec![0.3, 0.8], vec![-0.4, 0.1]],
        b: vec![0.1, -0.1, 0.2],
    };
    let l2 = Dense { w: vec![vec![1.0, 0.5, -0.3]], b: vec![0.2] };
    test_rule!(two_dense(&l1, &l2, &[0.3, 0.7]));
    // The gradient of the first layer's weights in closed form: with h = relu(W1 x + b1) and
    // o = W2 h + b2, d(o²)/dW1[i][j] = 2 o W2[0][i] [h_i > 0] x_j.
    let x = [0.3, 0.7];
    let (_, (g1, _, _)) = value_and_gradient!(two_dense(&l1, &l2, &x));
    let h: Vec<f64> =
        (0..3).map(|i| (l1.w[i][0] * x[0] + l1.w[i][1] * x[1] + l1.b[i]).max(0.0)).collect();
    let o = l2.w[0].iter().zip(&h).map(|(a, b)| a * b).sum::<f64>() + l2.b[0];
    for i in 0..3 {
        for j in 0..2 {
            let active = if h[i] > 0.0 { 1.0 } else { 0.0 };
            let expected = 2.0 * o * l2.w[0][i] * active * x[j];
            assert!((g1.w[i][j] - expected).abs() < 1e-14, "{i} {j}");
        }
    }
}

/// A `Vec` of structs in a field, iterated and its elements' fields read (`for l in
/// net.layers.iter() { l.b[..] }`): each borrow is read as the field's element (found by probe
/// programs: reverse mode copied the element as a number).
#[differentiable]
fn bias_energy(net: &Net) -> f64 {
    let mut s = 0.0;
    for l in net.layers.iter() {
        s += l.b[0] * l.b[1] + (l.n_in as f64) * l.w[0];
    }
    s
}

/// A particle of a pairwise interaction.
#[derive(Tangent, Clone, Debug)]
struct Charge {
    q: f64,
    x: f64,
}

/// The pairwise-interaction idiom: an inner loop over the rest of a slice of structs
/// (`.skip(i + 1)`), and over a local copy of it by reference (`for b in &copy`).
#[differentiable]
fn pair_energy(cs: &[Charge]) -> f64 {
    let mut u = 0.0;
    for (i, a) in cs.iter().enumerate() {
        for b in cs.iter().skip(i + 1) {
            u += a.q * b.q / (1.0 + (a.x - b.x) * (a.x - b.x));
        }
    }
    let copy = cs.to_vec();
    for c in &copy {
        u += 0.5 * c.q * c.x;
    }
    u
}

fn pair_energy_direct(cs: &[Charge]) -> f64 {
    let mut u = 0.0;
    for i in 0..cs.len() {
        for j in i + 1..cs.len() {
            let d = cs[i].x - cs[j].x;
            u += cs[i].q * cs[j].q / (1.0 + d * d);
        }
        u += 0.5 * cs[i].q * cs[i].x;
    }
    u
}

#[test]
fn elements_of_struct_buffers_in_fields_and_copies() {
    let n = net();
    test_rule!(bias_energy(&n));
    let (_, (g,)) = value_and_gradient!(bias_energy(&n));
    for (gl, l) in g.layers.iter().zip(&n.layers) {
        approx::assert_relative_eq!(gl.b[0], l.b[1], max_relative = 1e-12);
        approx::assert_relative_eq!(gl.b[1], l.b[0], max_relative = 1e-12);
        approx::assert_relative_eq!(gl.w[0], l.n_in as f64, max_relative = 1e-12);
    }
    let cs: Vec<Charge> =
        (0..4).map(|k| Charge { q: 0.5 + 0.3 * k as f64, x: (k as f64 * 0.9).sin() }).collect();
    approx::assert_relative_eq!(pair_energy(&cs), pair_energy_direct(&cs), max_relative = 1e-12);
    test_rule!(pair_energy(&cs));
}

/// Rows of an unwritten copy of a grid (`let u = u0.to_vec();`, `.clone()`), borrowed by a loop
/// and summed or indexed (found by probe programs: the copy was read as a buffer of numbers).
#[differentiable]
fn rows_of_a_copy(u0: &[Vec<f64>], v0: &Vec<Vec<f64>>) -> f64 {
    let u = u0.to_vec();
    let v = v0.clone();
    let mut s = 0.0;
    for row in u.iter() {
        s += row.iter().sum::<f64>() * row[1];
    }
    for row in v.iter() {
        s += row[0] * row[1];
    }
    s
}

#[test]
fn rows_of_copies_of_grids() {
    let z = vec![vec![0.5, 0.7, -0.2], vec![0.1, 0.2, 1.3]];
    test_rule!(rows_of_a_copy(&z, &z));
    let (_, (gu, gv)) = value_and_gradient!(rows_of_a_copy(&z, &z));
    for (r, row) in z.iter().enumerate() {
        let sum: f64 = row.iter().sum();
        approx::assert_relative_eq!(gu[r][0], row[1], max_relative = 1e-12);
        approx::assert_relative_eq!(gu[r][1], row[1] + sum, max_relative = 1e-12);
        approx::assert_relative_eq!(gv[r][0], row[1], max_relative = 1e-12);
        approx::assert_relative_eq!(gv[r][2], 0.0);
    }
}

/// A copy of a row of `&[[f64; 2]]` that is only read (`let p = ps[k]; p[0] * p[1]`): read as
/// the row itself (found by probe programs: the copy was held as a buffer of numbers).
#[differentiable]
fn copied_points(ps: &[[f64; 2]], w: f64) -> f64 {
    let mut s = 0.0;
    for k in 0..ps.len() {
        let p = ps[k];
        s += w * p[0] * p[1] + p[1];
    }
    s
}

#[test]
fn copies_of_rows_of_arrays() {
    let ps = vec![[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]];
    test_rule!(copied_points(&ps, 0.7));
    let (_, (g, gw)) = value_and_gradient!(copied_points(&ps, 0.7));
    for (gp, p) in g.iter().zip(&ps) {
        approx::assert_relative_eq!(gp[0], 0.7 * p[1], max_relative = 1e-12);
        approx::assert_relative_eq!(gp[1], 0.7 * p[0] + 1.0, max_relative = 1e-12);
    }
    approx::assert_relative_eq!(gw, 2.0 - 12.0 + 0.125, max_relative = 1e-12);
}

/// The squared norm of a point held by value.
#[differentiable]
fn norm2_of(p: [f64; 2]) -> f64 {
    p[0] * p[0] + p[1] * p[1]
}

/// The squared distance between two points held by value.
#[differentiable]
fn dist2_of(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1])
}

/// Rows of `&[[f64; 2]]` passed by value to functions taking arrays (`norm2_of(ps[k])`), as
/// geometry code passes points (found by probe programs: the row was loaded as a number, and
/// its adjoint had no add into the buffer's shadow).
#[differentiable]
fn point_energy(ps: &[[f64; 2]]) -> f64 {
    let mut s = 0.0;
    for k in 0..ps.len() {
        s += norm2_of(ps[k]);
    }
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            s += dist2_of(ps[i], ps[j]).sqrt();
        }
    }
    s
}

#[test]
fn rows_of_arrays_passed_by_value() {
    let ps = vec![[1.0, 2.0], [3.0, 4.0], [-0.5, 0.25]];
    test_rule!(point_energy(&ps));
    let (_, (g,)) = value_and_gradient!(point_energy(&ps));
    // Point 0: 2 p0 plus the unit vectors from the other points to it.
    let mut want = [2.0 * ps[0][0], 2.0 * ps[0][1]];
    for q in &ps[1..] {
        let d = ((ps[0][0] - q[0]).powi(2) + (ps[0][1] - q[1]).powi(2)).sqrt();
        want[0] += (ps[0][0] - q[0]) / d;
        want[1] += (ps[0][1] - q[1]) / d;
    }
    approx::assert_relative_eq!(g[0][0], want[0], max_relative = 1e-12);
    approx::assert_relative_eq!(g[0][1], want[1], max_relative = 1e-12);
}

/// Rows borrowed mutably and their elements borrowed mutably in turn (`for row in m.iter_mut()
/// { for v in row.iter_mut() { .. } }`), on a `&mut Vec<Vec<f64>>` argument and on a local grid.
/// Reverse mode refused it (`BorrowsInLocalsOrStdCalls`) until probe programs found it.
#[differentiable]
fn scale_rows_in_place(m: &mut Vec<Vec<f64>>, k: f64) {
    for row in m.iter_mut() {
        for v in row.iter_mut() {
            *v *= k;
        }
    }
}

#[differentiable]
fn squared_grid(x: &[f64]) -> f64 {
    let mut g = vec![vec![0.0; x.len()]; x.len()];
    for (i, row) in g.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = x[i] * x[j];
        }
    }
    for row in g.iter_mut() {
        for v in row.iter_mut() {
            *v *= *v;
        }
    }
    g.iter().map(|r| r.iter().sum::<f64>()).sum()
}

#[test]
fn rows_and_elements_borrowed_mutably() {
    let m = vec![vec![0.3, -1.2], vec![0.7, 1.4, 2.0]];
    test_rule!(scale_rows_in_place(&mut m, 1.5));
    let x = [0.3, -1.2, 2.0];
    test_rule!(squared_grid(&x));
    // Σ_ij x_i² x_j² = (Σ x²)²: gradient 4 x_i Σ x².
    let (v, (g,)) = value_and_gradient!(squared_grid(&x));
    let s: f64 = x.iter().map(|a| a * a).sum();
    assert!((v - s * s).abs() < 1e-12);
    for (gi, xi) in g.iter().zip(&x) {
        assert!((gi - 4.0 * xi * s).abs() < 1e-10);
    }
}

#[differentiable]
fn rows_made(x: &[f64]) -> Vec<Vec<f64>> {
    vec![vec![x[0], x[1]], vec![x[1] * x[0], x[0].sin()]]
}

#[differentiable]
fn pairs_made(x: &[f64]) -> Vec<[f64; 2]> {
    let mut out = Vec::new();
    for i in 0..x.len() - 1 {
        out.push([x[i], x[i + 1] * x[i + 1]]);
    }
    out
}

/// Loops over the rows of buffers whose type the text does not show: a call's result
/// (`Vec<Vec<f64>>`, `Vec<[f64; 2]>`) and a literal of rows (`vec![[a, b], [c, d]]`), by
/// `for row in p.iter()` and `for &row in q.iter()`, in both modes.
#[differentiable]
#[allow(clippy::useless_vec)] // a `Vec` of rows, as written
fn rows_iterated(x: &[f64]) -> f64 {
    let p = rows_made(x);
    let q = pairs_made(x);
    let o = vec![[x[0], x[2]], [x[1], 2.0 * x[2]]];
    let mut s = 0.0;
    for row in p.iter() {
        s += row[0] * row[1];
    }
    for &row in q.iter() {
        s += row[0] - row[1] * row[0];
    }
    for r in o.iter() {
        s += r[0] * r[1];
    }
    s
}

#[test]
fn rows_of_untyped_buffers_iterated() {
    test_rule!(rows_iterated(&[0.3, 0.7, -0.4][..]));
}

/// `Σᵢ (Σ_(j, a) a x[j])²`: a sparse matrix as rows of `(column, value)` pairs (a list of
/// lists), read by a `for` loop over the pairs, by index, and by an iterator chain over the
/// rows' pairs.
#[differentiable]
fn sparse_rows(a: &[Vec<(usize, f64)>], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, row) in a.iter().enumerate() {
        let mut y = 0.0;
        for &(j, v) in row.iter() {
            y += v * x[j];
        }
        for k in 0..a[i].len() {
            let (j, v) = a[i][k];
            y += 0.5 * v * x[j] * x[i];
        }
        s += y * y;
    }
    for row in a {
        s += row.iter().map(|&(j, v)| v * x[j].sin()).sum::<f64>();
    }
    s
}

/// A graph's edges as rows of index pairs, and of neighbours.
#[differentiable]
fn graph_energy(x: &[f64], edges: &[Vec<(usize, usize)>], nbrs: &[Vec<usize>]) -> f64 {
    let mut e = 0.0;
    for row in edges {
        for &(a, b) in row {
            e += (x[a] * x[b]).sin();
        }
    }
    for i in 0..x.len() {
        for &j in nbrs[i].iter() {
            let d = x[i] - x[j];
            e += d * d;
        }
    }
    e
}

#[test]
fn rows_of_pairs() {
    let a = vec![vec![(1, 0.5), (2, 2.0)], vec![(0, 1.5)], vec![]];
    let x = [0.5, -1.0, 2.0];
    test_rule!(sparse_rows(&*a, &x[..]));
    let (v, (_, gx)) = value_and_gradient!(sparse_rows(&a, &x));
    let (vf, (_, gf)) = value_and_gradient_forward!(sparse_rows(&a, &x));
    assert!((v - vf).abs() < 1e-12);
    for (r, f) in gx.iter().zip(&gf) {
        assert!((r - f).abs() < 1e-10, "{gx:?} {gf:?}");
    }
    let edges = vec![vec![(0, 1), (1, 2)], vec![(2, 2)]];
    let nbrs = vec![vec![1, 2], vec![0], vec![0, 1]];
    test_rule!(graph_energy(&x[..], &*edges, &*nbrs));
}

/// A particle system with a buffer of arrays in a field.
#[derive(Tangent, Clone, Debug)]
pub struct Cloud {
    /// Positions.
    pub pos: Vec<[f64; 2]>,
    /// Weights.
    pub w: Vec<f64>,
}

/// Buffers in fields cloned (`c.pos.clone()` of arrays, `c.w.to_vec()` of numbers), then
/// written and read.
#[differentiable]
fn cloned_fields(c: &Cloud, s: f64) -> f64 {
    let mut pos = c.pos.clone();
    let w = c.w.to_vec();
    for k in 0..pos.len() {
        pos[k][0] *= s;
    }
    let mut e = 0.0;
    for k in 0..pos.len() {
        e += w[k] * (pos[k][0] * pos[k][1]).sin();
    }
    e
}

#[test]
fn buffers_of_arrays_in_fields_cloned() {
    let c = Cloud { pos: vec![[1.0, 2.0], [-0.5, 0.3]], w: vec![0.7, 1.3] };
    test_rule!(cloned_fields(&c, 0.8));
}
