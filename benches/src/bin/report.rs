//! Writes the generated part of `BENCHMARKS.md` from criterion's estimates.
//!
//! `bash benches/report.sh` runs the benches, then this program:
//! `report CRITERION_DIR BENCHMARKS.md`, with the machine described by the environment
//! variables `REPORT_CPU`, `REPORT_NPROC`, `REPORT_MEMORY`, `REPORT_RUSTC`, `REPORT_DATE`,
//! `REPORT_SETTINGS`, and optionally `REPORT_BUILD_SECONDS` (the clean build's time) and
//! `REPORT_EXPAND_LOG` (the output of the `expand` bench, for the expansions' sizes) and
//! `REPORT_CALLGRIND` (the table of `benches/callgrind.sh`: instructions per call).
//! Only the text between the markers `<!-- report:begin -->` and `<!-- report:end -->` is
//! replaced, so the analysis written around it stays; the build-time line and the callgrind
//! table are kept from the previous report when this run did not measure them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

const BEGIN: &str = "<!-- report:begin -->";
const END: &str = "<!-- report:end -->";

/// The problems, in the order of the report, with the ratio gradient / primal published for
/// Mooncake.jl and Enzyme where issue 6 sets it as the target.
const PROBLEMS: [(&str, &str, Option<f64>); 12] = [
    ("sum_1000", "`x.iter().sum()`, n = 1000", None),
    ("_sum_1000", "`while` loop over indices, n = 1000", Some(1.15)),
    ("sum_sin_1000", "`for v in x.iter() { s += v.sin() }`, n = 1000", Some(2.0)),
    ("sum_sin_chain_1000", "`x.iter().map(|v| v.sin()).sum()`, n = 1000", Some(2.0)),
    ("_sum_sin_1000", "`while` loop, `s += x[i].sin()`, n = 1000", Some(3.2)),
    (
        "naive_map_sin_cos_exp",
        "`y[i] = sin + cos + exp` into a built buffer, summed, n = 100",
        None,
    ),
    ("kron_sum", "sum of `A ⊗ B` built by loops, 20x20 and 20x20", None),
    ("simple_mlp", "2-layer MLP loss, 32-64-16, batch 32, params in a struct", None),
    ("rosenbrock_1000", "Rosenbrock, n = 1000", None),
    ("gmm", "ADBench GMM, d = 10, k = 5, n = 1000", None),
    (
        "ode_euler_1000",
        "1000 Euler steps of Lotka-Volterra, grad wrt 4 params + 2 initial values",
        None,
    ),
    ("recursive", "self-recursion of depth 100", None),
];

/// The entries of each problem's group, in the report's column order.
const ENTRIES: [(&str, &str); 9] = [
    ("primal", "primal"),
    ("derived_reverse", "ours, reverse (`value_and_gradient!`)"),
    ("derived_reverse_prepared", "ours, reverse, prepared"),
    ("derived_reverse_prepared_const", "ours, prepared, data `Const(..)`"),
    ("derived_forward", "ours, forward (1 direction)"),
    ("hand_gradient", "hand-written gradient"),
    ("easy_ml", "easy-ml (tape)"),
    ("reverse_tape", "reverse (tape)"),
    ("num_dual", "num-dual (vector duals)"),
];

/// The modes of `benches/callgrind.sh`, in the callgrind table's column order.
const MODES: [(&str, &str); 5] = [
    ("primal", "primal"),
    ("hand", "hand-written"),
    ("prepared", "ours, prepared"),
    ("reverse", "ours, unprepared (`value_and_gradient!`)"),
    ("const", "ours, prepared, data `Const(..)`"),
];

/// The heading of the callgrind table, by which the previous report's table is found.
const CALLGRIND: &str = "### Instructions per call (callgrind)";

/// The median of one criterion benchmark, in nanoseconds.
fn median(dir: &Path, group: &str, entry: &str) -> Option<f64> {
    let text =
        std::fs::read_to_string(dir.join(group).join(entry).join("new/estimates.json")).ok()?;
    let rest = &text[text.find("\"median\"")?..];
    let rest = &rest[rest.find("\"point_estimate\"")? + "\"point_estimate\"".len()..];
    let rest = rest.trim_start_matches([':', ' ']);
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}

/// A duration in nanoseconds, to three significant figures with a unit.
fn time(ns: f64) -> String {
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A ratio to two or three significant figures.
fn ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

/// A whole number with thousands separators (`1,234,567`).
fn count(n: f64) -> String {
    let digits = format!("{:.0}", n.abs());
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    if n < 0.0 { format!("-{s}") } else { s }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".to_string())
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| "unknown".to_string())
}

/// The table written by `benches/callgrind.sh`: instructions per call by problem and mode,
/// the number of calls each count is over, and the `# key: value` comments.
#[derive(Default)]
struct Counts {
    /// `(problem, mode)` to instructions per call.
    per_call: HashMap<(String, String), f64>,
    /// `(problem, mode)` to the number of calls the count is the average of.
    calls: HashMap<(String, String), u64>,
    /// The comments `# key: value`, as `(key, value)`.
    notes: Vec<(String, String)>,
}

impl Counts {
    /// Reads the tab-separated table (comments start with `#`; the header line starts with
    /// `problem`; lines that do not parse are skipped).
    fn parse(text: &str) -> Counts {
        let mut c = Counts::default();
        for line in text.lines() {
            if let Some(note) = line.strip_prefix('#') {
                if let Some((k, v)) = note.split_once(':') {
                    c.notes.push((k.trim().to_string(), v.trim().to_string()));
                }
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 3 || f[0] == "problem" {
                continue;
            }
            let Ok(n) = f[2].trim().parse() else { continue };
            let key = (f[0].to_string(), f[1].to_string());
            if let Some(Ok(calls)) = f.get(3).map(|x| x.trim().parse()) {
                c.calls.insert(key.clone(), calls);
            }
            c.per_call.insert(key, n);
        }
        c
    }

    /// The instructions per call of `problem` in `mode`.
    fn get(&self, problem: &str, mode: &str) -> Option<f64> {
        self.per_call.get(&(problem.to_string(), mode.to_string())).copied()
    }

    /// The comment `# key: value`'s value.
    fn note(&self, key: &str) -> Option<&str> {
        self.notes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The number of calls per count, as "N = 10" with the problems counted over another
    /// number in parentheses.
    fn calls(&self) -> String {
        let mut tally: Vec<(u64, usize)> = Vec::new();
        for &n in self.calls.values() {
            match tally.iter_mut().find(|(m, _)| *m == n) {
                Some((_, k)) => *k += 1,
                None => tally.push((n, 1)),
            }
        }
        let Some(&(common, _)) = tally.iter().max_by_key(|&&(n, k)| (k, n)) else {
            return "N unknown".to_string();
        };
        let others: Vec<String> = PROBLEMS
            .iter()
            .filter_map(|(name, _, _)| {
                let n = MODES
                    .iter()
                    .find_map(|(mode, _)| self.calls.get(&(name.to_string(), mode.to_string())))?;
                (*n != common).then(|| format!("`{name}`: {n}"))
            })
            .collect();
        if others.is_empty() {
            format!("N = {common}")
        } else {
            format!("N = {common} ({})", others.join(", "))
        }
    }
}

/// The callgrind subsection of the previous report: from its heading in `previous`'s generated
/// section up to the next heading or the end marker.
fn previous_callgrind(previous: &str) -> Option<&str> {
    let section = &previous[previous.find(BEGIN)?..];
    let section = &section[..section.find(END).unwrap_or(section.len())];
    let table = &section[section.find(CALLGRIND)?..];
    let end = table[CALLGRIND.len()..].find("\n### ").map_or(table.len(), |e| e + CALLGRIND.len());
    Some(table[..end].trim_end())
}

/// The callgrind subsection: rendered from the table at `REPORT_CALLGRIND` when it is set and
/// readable, else the previous report's, else a line saying it was not measured.
fn callgrind(previous: &str) -> String {
    let table = std::env::var("REPORT_CALLGRIND").ok().and_then(|p| {
        std::fs::read_to_string(&p)
            .map_err(|e| eprintln!("cannot read REPORT_CALLGRIND={p} ({e}): the table is kept"))
            .ok()
    });
    let Some(table) = table else {
        return match previous_callgrind(previous) {
            Some(kept) => format!("{kept}\n\n"),
            None => format!(
                "{CALLGRIND}\n\nNot measured (run `bash benches/report.sh` with valgrind on PATH \
                 and without `--no-callgrind`).\n\n"
            ),
        };
    };
    let c = Counts::parse(&table);
    let mut s = String::new();
    let _ = writeln!(s, "{CALLGRIND}\n");
    let _ = writeln!(
        s,
        "Instructions of one call under callgrind (`bash benches/callgrind.sh`: \
         `benches/examples/profile.rs` run with 1 and with N + 1 repetitions, the difference \
         of the two counts divided by N, so that start-up, the inputs and the first call \
         cancel; {}; glibc's `memset` and `memcpy` kept off `rep stosb` / `rep movsb`, which \
         callgrind counts per byte). Unlike the times above, these repeat from run to run, to \
         within 0.2% (the layout of the heap and stack moves with the environment). \
         Counted at commit {} on {}, {}.\n",
        c.calls(),
        c.note("commit").map_or("unknown".to_string(), |v| match v.split_once(' ') {
            Some((hash, rest)) => format!("`{hash}` {rest}"),
            None => format!("`{v}`"),
        }),
        c.note("date").unwrap_or("an unknown date"),
        c.note("valgrind").unwrap_or("valgrind"),
    );
    let _ = write!(s, "| problem |");
    for (_, title) in MODES {
        let _ = write!(s, " {title} |");
    }
    let _ = writeln!(s, " prepared / hand | `Const` / hand | prepared / primal |");
    let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (name, _, _) in PROBLEMS {
        let _ = write!(s, "| `{name}` |");
        for (mode, _) in MODES {
            let _ = write!(s, " {} |", opt(c.get(name, mode), count));
        }
        let prepared = c.get(name, "prepared");
        let r = |b: Option<f64>| prepared.zip(b).map(|(a, b)| a / b);
        let constant = c.get(name, "const").zip(c.get(name, "hand")).map(|(a, b)| a / b);
        let _ = writeln!(
            s,
            " {} | {} | {} |",
            opt(r(c.get(name, "hand")), ratio),
            opt(constant, ratio),
            opt(r(c.get(name, "primal")), ratio)
        );
    }
    let _ = writeln!(s);
    s
}

/// The Hessian-vector product problems (issue 16): the criterion group (also the problem of
/// `benches/callgrind.sh`) and what it computes.
const HVP_PROBLEMS: [(&str, &str); 2] = [
    ("hvp_rosenbrock_1000", "Rosenbrock, n = 1000"),
    ("hvp_gmm", "ADBench GMM, d = 10, k = 5, n = 1000, data `Const(..)` (330 parameters)"),
];

/// The Hessian-vector products subsection: medians of the `hvp_*` groups and their ratios, and
/// the callgrind counts of their modes when `REPORT_CALLGRIND` is set (else none: unlike the
/// callgrind table, these are not kept from the previous report).
fn hvp(dir: &Path) -> String {
    let counts = std::env::var("REPORT_CALLGRIND")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| Counts::parse(&t));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Hessian-vector products
"
    );
    let _ = writeln!(
        s,
        "`hvp!(.., cache = &mut HvpCache)` (forward over reverse: the derived reverse rule of a \
         copy of the problem generic over `T: Float`, run at `T = Fwd<f64>`; value, gradient and \
         `H v`) against the prepared gradient of the same copy (`value_and_gradient!` with a \
         `GradientCache`, at `f64`), a product written by hand (value, gradient and `H v`; \
         Rosenbrock only) and num-dual's `HyperDual64` (no reverse mode: one forward pass per \
         input component). Target (issue 16): ours HVP / ours gradient ≤ 3. Instructions per \
         call from `benches/callgrind.sh` (modes `gradient`, `prepared`, `hand`) where this \
         run counted them. ✓ met, ✗ missed.\n"
    );
    let _ = writeln!(
        s,
        "| problem | ours, gradient | ours, HVP | hand-written HVP | num-dual HVP | HVP / gradient | ours / hand | num-dual / ours | instructions: gradient | HVP | hand | HVP / gradient (instructions) | target |"
    );
    let _ = writeln!(
        s,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    for (name, what) in HVP_PROBLEMS {
        let m = |e: &str| median(dir, name, e);
        let (gradient, ours, hand, nd) =
            (m("gradient_prepared"), m("hvp_prepared"), m("hand_hvp"), m("num_dual_hvp"));
        let r = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let c = |mode: &str| counts.as_ref().and_then(|c| c.get(name, mode));
        let hvp_gradient = r(ours, gradient);
        let _ = writeln!(
            s,
            "| `{name}`: {what} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            opt(gradient, time),
            opt(ours, time),
            opt(hand, time),
            opt(nd, time),
            opt(hvp_gradient, ratio),
            opt(r(ours, hand), ratio),
            opt(r(nd, ours), ratio),
            opt(c("gradient"), count),
            opt(c("prepared"), count),
            opt(c("hand"), count),
            opt(r(c("prepared"), c("gradient")), ratio),
            opt(hvp_gradient.map(|x| x <= 3.0), |ok| (if ok { "✓ 3x" } else { "✗ 3x" })
                .to_string()),
        );
    }
    let _ = writeln!(s);
    s
}

/// The forward-mode gradients subsection (issue 16): `ode_euler_1000`'s six-input gradient by
/// one-direction passes and by one batched pass (`chunk = 6`), against num-dual's
/// `DualSVec64<6>` and the hand-written reverse gradient of the same group.
fn forward_gradients(dir: &Path) -> String {
    let name = "ode_euler_1000";
    let m = |e: &str| median(dir, name, e);
    let (primal, one, passes, batched, nd, hand) = (
        m("primal"),
        m("derived_forward"),
        m("derived_forward_gradient"),
        m("derived_forward_gradient_chunk6"),
        m("num_dual"),
        m("hand_gradient"),
    );
    let r = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    let mut s = String::new();
    let _ = writeln!(s, "### Forward-mode gradients\n");
    let _ = writeln!(
        s,
        "`value_and_gradient_forward!` of `ode_euler_1000` (6 inputs): six passes of the derived \
         forward rule carrying one direction each, and one pass of its batched form carrying all \
         six (`chunk = 6`, `Lanes<f64, 6>` tangents), against num-dual's `DualSVec64<6>` (one \
         pass, all six directions) and the hand-written reverse gradient. Target (issue 16): \
         batched faster than num-dual. ✓ met, ✗ missed.\n"
    );
    let _ = writeln!(
        s,
        "| problem | primal | one direction | 6 passes | 1 batched pass (`chunk = 6`) | num-dual `DualSVec64<6>` | hand-written reverse | num-dual / batched | 6 passes / batched | batched / hand | target |"
    );
    let _ =
        writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let target = r(nd, batched).map(|x| if x > 1.0 { "✓ faster" } else { "✗ faster" });
    let _ = writeln!(
        s,
        "| `{name}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        opt(primal, time),
        opt(one, time),
        opt(passes, time),
        opt(batched, time),
        opt(nd, time),
        opt(hand, time),
        opt(r(nd, batched), ratio),
        opt(r(passes, batched), ratio),
        opt(r(batched, hand), ratio),
        target.unwrap_or("–"),
    );
    let _ = writeln!(s);
    s
}

/// The problems written with a linear-algebra crate's matrices (issue 15): the criterion group
/// (also the problem of `benches/callgrind.sh`) and what it computes.
const LINALG_PROBLEMS: [(&str, &str); 4] = [
    ("mlp_nalgebra", "nalgebra `DMatrix`, 32-64-16, batch 32 (`simple_mlp`'s widths)"),
    ("mlp_nalgebra_128_256_128", "nalgebra `DMatrix`, 128-256-128, batch 70 (Mooncake.jl's)"),
    ("mlp_ndarray", "ndarray `Array2`, 32-64-16, batch 32"),
    ("mlp_ndarray_128_256_128", "ndarray `Array2`, 128-256-128, batch 70"),
];

/// The linear-algebra subsection: medians of the `mlp_nalgebra*` groups, their ratios to the
/// hand-written gradient, and the callgrind counts when `REPORT_CALLGRIND` is set.
fn linalg(dir: &Path) -> String {
    let counts = std::env::var("REPORT_CALLGRIND")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| Counts::parse(&t));
    let mut s = String::new();
    let _ = writeln!(s, "### `simple_mlp` with matrices\n");
    let _ = writeln!(
        s,
        "Mooncake.jl's `simple_mlp`, `Σ (W₂ relu(W₁ X) − Y)²` (no biases, `relu` as \
         `h.map(|v| v.max(0.0))`), written with nalgebra's `DMatrix` and with ndarray's \
         `Array2` (`benches/src/problems/linalg.rs`): every step is one of the crate's \
         kernels, in the primal, in our rules and in the hand-written gradient, which runs \
         them into preallocated matrices. Ours with gradients of all four matrices \
         (prepared) and with the data `Const(..)` (prepared; the hand-written gradient computes \
         the weights' only). Target (issue 15): ours, data `Const(..)`, / hand ≤ 1.5. \
         Instructions per call from `benches/callgrind.sh` where this run counted them. ✓ met, \
         ✗ missed.\n"
    );
    let _ = writeln!(
        s,
        "| problem | primal | ours, prepared | ours, data `Const(..)` | hand-written | ours / hand | `Const` / hand | instructions: `Const` | hand | `Const` / hand (instructions) | target |"
    );
    let _ =
        writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for (name, what) in LINALG_PROBLEMS {
        let m = |e: &str| median(dir, name, e);
        let (primal, ours, constant, hand) = (
            m("primal"),
            m("derived_reverse_prepared"),
            m("derived_reverse_prepared_const"),
            m("hand_gradient"),
        );
        let r = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let c = |mode: &str| counts.as_ref().and_then(|c| c.get(name, mode));
        let _ = writeln!(
            s,
            "| `{name}`: {what} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            opt(primal, time),
            opt(ours, time),
            opt(constant, time),
            opt(hand, time),
            opt(r(ours, hand), ratio),
            opt(r(constant, hand), ratio),
            opt(c("const"), count),
            opt(c("hand"), count),
            opt(r(c("const"), c("hand")), ratio),
            opt(r(constant, hand).map(|x| x <= 1.5), |ok| (if ok {
                "✓ 1.5x"
            } else {
                "✗ 1.5x"
            })
            .to_string()),
        );
    }
    let _ = writeln!(s);
    s
}

/// The generated section.
fn generate(dir: &Path, previous: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{BEGIN}");
    let _ =
        writeln!(s, "_Generated by `bash benches/report.sh` on {} (UTC)._\n", env("REPORT_DATE"));
    let _ = writeln!(
        s,
        "Machine: {} ({} logical CPUs, {} memory), {}; criterion {}; medians.\n",
        env("REPORT_CPU"),
        env("REPORT_NPROC"),
        env("REPORT_MEMORY"),
        env("REPORT_RUSTC"),
        env("REPORT_SETTINGS"),
    );
    let _ = writeln!(s, "### Median times\n");
    let _ = write!(s, "| problem |");
    for (_, title) in ENTRIES {
        let _ = write!(s, " {title} |");
    }
    let _ = write!(s, "\n| --- |");
    for _ in ENTRIES {
        let _ = write!(s, " ---: |");
    }
    let _ = writeln!(s);
    for (name, what, _) in PROBLEMS {
        let _ = write!(s, "| `{name}`: {what} |");
        for (entry, _) in ENTRIES {
            let _ = write!(s, " {} |", opt(median(dir, name, entry), time));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "\n### Ratios and targets\n");
    let _ = writeln!(
        s,
        "Targets (issue 6): ours / primal at or below the published Mooncake.jl / Enzyme ratio \
         (where one is given); ours / hand-written ≤ 1.3; the fastest tape crate at least 3x \
         slower than ours (tape / ours ≥ 3). \"ours\" is the prepared form \
         (`value_and_gradient!` with a `GradientCache`; the plain form where the prepared one \
         was not measured). ✓ met, ✗ missed.\n"
    );
    let _ = writeln!(
        s,
        "| problem | hand / primal | ours / primal | target | ours / hand | fastest tape / ours | num-dual / ours | forward / primal | targets |"
    );
    let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let mut met = 0;
    let mut missed = 0;
    for (name, _, target) in PROBLEMS {
        let m = |e: &str| median(dir, name, e);
        let primal = m("primal");
        let ours = m("derived_reverse_prepared").or(m("derived_reverse"));
        let hand = m("hand_gradient");
        let tape = match (m("easy_ml"), m("reverse_tape")) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let r = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let ours_primal = r(ours, primal);
        let ours_hand = r(ours, hand);
        let tape_ours = r(tape, ours);
        let mut marks = Vec::new();
        let mut mark = |label: &str, ok: Option<bool>| {
            if let Some(ok) = ok {
                if ok {
                    met += 1;
                } else {
                    missed += 1;
                }
                marks.push(format!("{} {label}", if ok { "✓" } else { "✗" }));
            }
        };
        mark("primal", target.and_then(|t| ours_primal.map(|x| x <= t)));
        mark("hand", ours_hand.map(|x| x <= 1.3));
        mark("tape", tape_ours.map(|x| x >= 3.0));
        let _ = writeln!(
            s,
            "| `{name}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            opt(r(hand, primal), ratio),
            opt(ours_primal, ratio),
            opt(target, ratio),
            opt(ours_hand, ratio),
            opt(tape_ours, ratio),
            opt(r(m("num_dual"), ours), ratio),
            opt(r(m("derived_forward"), primal), ratio),
            marks.join(", "),
        );
    }
    let _ = writeln!(s, "\nTargets met: {met}; missed: {missed}.\n");
    let _ = write!(s, "{}", hvp(dir));
    let _ = write!(s, "{}", forward_gradients(dir));
    let _ = write!(s, "{}", linalg(dir));
    let _ = write!(s, "{}", callgrind(previous));
    let _ = writeln!(s, "### Expansion of `#[differentiable]`\n");
    let _ = writeln!(
        s,
        "Median time of the macro's expansion function on each `#[differentiable]` function \
         of `benches/src/problems/` (`cargo bench -p mooncake-macros --bench expand`), and the \
         size of what it emits (the function, `NAME_frule` and `NAME_rrule`, as token text). Measured outside the compiler, on `proc_macro2`'s own token \
         types; inside rustc the token streams differ, so take these as the macro's own work.\n"
    );
    let sizes = std::env::var("REPORT_EXPAND_LOG")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let _ = writeln!(s, "| function | expansion time | emitted tokens (bytes of text) |");
    let _ = writeln!(s, "| --- | ---: | ---: |");
    let mut names: Vec<String> = std::fs::read_dir(dir.join("expand"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "report")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut total = 0.0;
    for name in &names {
        let t = median(dir, "expand", name);
        total += t.unwrap_or(0.0);
        let size = sizes
            .lines()
            .find_map(|l| l.strip_prefix(&format!("expand/{name}: ")))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("–");
        let _ = writeln!(s, "| `{name}` | {} | {size} |", opt(t, time));
    }
    let _ = writeln!(s, "| all {} | {} | |\n", names.len(), time(total));
    let _ = writeln!(s, "### Build time\n");
    let build = match std::env::var("REPORT_BUILD_SECONDS") {
        Ok(secs) => format!(
            "Build time from clean: {secs} s for `cargo build --release -p mooncake-benches --benches` \
             in an empty target directory (dependencies included; measured {}).",
            env("REPORT_DATE")
        ),
        Err(_) => previous
            .lines()
            .find(|l| l.starts_with("Build time from clean:"))
            .unwrap_or("Build time from clean: not measured (run `bash benches/report.sh` without `--no-build`).")
            .to_string(),
    };
    let _ = writeln!(s, "{build}");
    let _ = write!(s, "{END}");
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: report CRITERION_DIR BENCHMARKS.md");
        std::process::exit(2);
    }
    let (dir, out) = (Path::new(&args[1]), Path::new(&args[2]));
    let old = std::fs::read_to_string(out).unwrap_or_default();
    let section = generate(dir, &old);
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{section}{}", &old[..b], &old[e + END.len()..]),
        _ => format!("# Benchmarks\n\n{section}\n"),
    };
    if let Err(e) = std::fs::write(out, new) {
        eprintln!("cannot write {}: {e}", out.display());
        std::process::exit(1);
    }
    println!("wrote {}", out.display());
}
