//! The driver: draws cases, legalises them, writes a batch of them to a crate of its own under
//! `<target>/gen-tests/`, builds it once with a nested `cargo build` (its own target directory,
//! so the lock cargo holds on the workspace's while tests run does not matter), runs each case's
//! `check_rule!` (both modes, finite differences, forward against reverse, restored `&mut`
//! state) in one process, and shrinks each failure by compiling many one-step simplifications at
//! once and keeping the smallest that fails the same way.

use super::ast::*;
use super::interp::legalize;
use super::print::{batch_module, functions_text, plain_module, regression_test};
use super::resolve::{Avoid, resolve};
use super::shrink::candidates;
use super::strategy::raw_case;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a run does.
#[derive(Clone, Debug)]
pub struct Config {
    /// How many programs to check.
    pub cases: usize,
    /// The seed of the first batch (batch `k` uses `seed + k`).
    pub seed: u64,
    /// Programs per crate.
    pub batch: usize,
    /// Shrink failures.
    pub shrink: bool,
    /// How long to shrink one failure at most.
    pub shrink_time: Duration,
    /// Check only program `k` of the batch of `seed` (to reproduce a failure).
    pub only: Option<usize>,
    /// Constructs to leave out (known bugs).
    pub avoid: Avoid,
    /// The `mooncake-runtime` the batch crates depend on.
    pub runtime: PathBuf,
    /// Where the batch crates and their target directory go.
    pub work: PathBuf,
    /// The workspace's `Cargo.lock`, copied into each batch crate.
    pub lockfile: Option<PathBuf>,
}

/// A case that is ready to compile.
#[derive(Clone, Debug)]
pub struct Case {
    /// The raw case, for shrinking.
    pub raw: RawCase,
    /// What it resolved to.
    pub prog: Program,
    /// The interpreter's repairs.
    pub rep: Repairs,
}

impl Case {
    /// Resolves and legalises a raw case.
    pub fn new(raw: RawCase, avoid: Avoid) -> Result<Case, String> {
        // The interpreter recurses as deep as the program nests (expressions, blocks, calls),
        // with large frames in an unoptimised build: a thread with a large stack.
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn_scoped(s, move || {
                    let prog = resolve(&raw, avoid);
                    let rep = legalize(&prog)?;
                    Ok(Case { raw, prog, rep })
                })
                .expect("spawn the interpreter")
                .join()
                .expect("the interpreter does not panic")
        })
    }

    /// Its batch module's source.
    pub fn module(&self) -> String {
        batch_module(&self.prog, &self.rep)
    }

    fn size(&self) -> usize {
        functions_text(&self.prog, &self.rep).len()
    }
}

/// How a case ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every check passed.
    Ok,
    /// The primal's output was not finite: nothing to check (counted, not a failure).
    NonFinite,
    /// A failure: its kind (which shrinking keeps) and the message.
    Fail(String, String),
}

/// The failure kinds: which check failed, a compile error's code, a panic, a crash.
fn failure_kind(message: &str) -> String {
    if let Some(i) = message.find("failed: ") {
        let rest = &message[i + 8..];
        let end = rest.find([',', '.', '\n']).unwrap_or(rest.len());
        return format!("check: {}", &rest[..end]);
    }
    message.lines().next().unwrap_or("").chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// A failure found by a run, shrunk.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The kind kept while shrinking.
    pub kind: String,
    /// The message of the original failure.
    pub message: String,
    /// The case as drawn.
    pub original: Case,
    /// The smallest case found that fails the same way.
    pub shrunk: Case,
    /// The shrunk case's message (for compile errors, the compiler's full output).
    pub shrunk_message: String,
    /// Which batch and index drew it.
    pub origin: String,
}

/// The result of a run.
#[derive(Debug, Default)]
pub struct Report {
    /// Programs checked (compiled and run).
    pub checked: usize,
    /// Programs whose checks all passed.
    pub passed: usize,
    /// Programs with a non-finite primal output.
    pub non_finite: usize,
    /// Drawn raw cases the interpreter could not legalise (drawn again).
    pub rejected: usize,
    /// Rejections by reason.
    pub rejected_why: BTreeMap<String, usize>,
    /// Failures, shrunk.
    pub failures: Vec<Failure>,
    /// How many programs use each construct.
    pub coverage: BTreeMap<&'static str, usize>,
    /// Time spent compiling batches.
    pub build_time: Duration,
    /// Time spent running them.
    pub run_time: Duration,
    /// Time spent shrinking.
    pub shrink_time: Duration,
}

/// Constructs counted in the coverage report: a name and a piece of the printed program.
pub const FEATURES: &[(&str, &str)] = &[
    ("param f32", ": f32"),
    ("param &[f64]", ": &[f64]"),
    ("param &mut [f64]", ": &mut [f64]"),
    ("param &Vec<f64>", ": &Vec<f64>"),
    ("param &mut Vec<f64>", ": &mut Vec<f64>"),
    ("param Vec<f64>", ": Vec<f64>"),
    ("param [f64; 3]", ": [f64; 3]"),
    ("param &[f64; 3]", ": &[f64; 3]"),
    ("param &mut [f64; 3]", ": &mut [f64; 3]"),
    ("param &mut f64", ": &mut f64"),
    ("param usize", ": usize"),
    ("param bool", ": bool"),
    ("param (f64, f64)", ": (f64, f64)"),
    ("struct P", "P"),
    ("param &P", ": &P"),
    ("param &mut P", ": &mut P"),
    ("struct S", "S {"),
    ("param &S", ": &S"),
    ("param &mut S", ": &mut S"),
    ("tuple struct Q", "Q("),
    ("enum E", "E::"),
    ("returns ()", ") {\n"),
    ("returns (f64, f64)", "-> (f64, f64)"),
    ("returns Vec<f64>", "-> Vec<f64>"),
    ("returns [f64; 3]", "-> [f64; 3]"),
    ("returns P", "-> P"),
    ("let mut", "let mut "),
    ("let: f64", ": f64 ="),
    ("late init", ": f64;"),
    ("destructuring", "let ("),
    ("block expression", "= {\n"),
    ("compound assignment", " += "),
    ("*= ", " *= "),
    ("/=", " /= "),
    ("-=", " -= "),
    ("whole buffer store", "    *x"),
    ("if", "if "),
    ("else if", "else if"),
    ("if expression", "= if "),
    ("match", "match "),
    ("match range", "..="),
    ("match guard", " if "),
    ("unreachable!", "unreachable!"),
    ("for range", " in 0.."),
    (".rev()", ".rev()"),
    (".step_by", ".step_by("),
    (".iter()", ".iter() {"),
    (".enumerate()", ".enumerate()"),
    (".zip()", ".zip("),
    ("for over &x / x", " in &"),
    ("while", "while "),
    ("loop", "loop {"),
    ("break value", "break "),
    ("continue", "continue"),
    ("labels", "'l"),
    ("return", "return"),
    ("vec![a, b]", "vec!["),
    ("vec![v; n]", "; "),
    ("Vec::with_capacity", "Vec::with_capacity"),
    ("Vec::new", "Vec::new()"),
    (".push(", ".push("),
    (".pop()", ".pop()"),
    (".to_vec()", ".to_vec()"),
    (".clone()", ".clone()"),
    (".iter().sum", ".iter().sum"),
    (".len()", ".len()"),
    (".fill(", ".fill("),
    (".swap(", ".swap("),
    (".copy_from_slice(", ".copy_from_slice("),
    ("[a, b, c]", "= ["),
    ("integer arithmetic", " as f64"),
    ("&&", " && "),
    ("||", " || "),
    ("!", "!"),
    ("path syntax f64::", "f64::"),
    ("constants", "consts::"),
    ("calls", "g1("),
    ("module paths inner::", "inner::g"),
    ("module paths super::", "super::g"),
    ("paths self::", "self::g"),
    ("methods &self", "(&self"),
    ("methods &mut self", "(&mut self"),
    ("methods self", "(self"),
    ("generic functions", "<T: Float>"),
    ("recursion", "n - 1"),
    ("mutual recursion", "// closes a cycle of mutual recursion"),
    ("assert!", "assert!("),
    ("assert_eq!", "assert_eq!("),
    ("debug_assert!", "debug_assert!("),
    ("panic!", "panic!("),
    ("sin", ".sin()"),
    ("cos", "cos("),
    ("tan", "tan("),
    ("asin", "asin("),
    ("acos", "acos("),
    ("atan", "atan("),
    ("atan2", "atan2("),
    ("sinh", "sinh("),
    ("cosh", "cosh("),
    ("tanh", "tanh("),
    ("asinh", "asinh("),
    ("acosh", "acosh("),
    ("atanh", "atanh("),
    ("exp", "exp("),
    ("exp2", "exp2("),
    ("exp_m1", "exp_m1("),
    ("ln", "ln("),
    ("ln_1p", "ln_1p("),
    ("log", "log("),
    ("log2", "log2("),
    ("log10", "log10("),
    ("sqrt", "sqrt("),
    ("cbrt", "cbrt("),
    ("powi", "powi("),
    ("powf", "powf("),
    ("hypot", "hypot("),
    ("abs", "abs("),
    ("signum", "signum("),
    ("mul_add", "mul_add("),
    ("recip", "recip("),
    ("min", "min("),
    ("max", "max("),
    ("clamp", "clamp("),
    ("to_degrees", "to_degrees("),
    ("to_radians", "to_radians("),
    ("floor", "floor("),
    ("ceil", "ceil("),
    ("round", "round("),
    ("trunc", "trunc("),
    ("fract", "fract("),
    ("%", " % "),
    ("is_finite", "is_finite()"),
];

fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (k, chunk) in bytes.chunks_mut(8).enumerate() {
        let v = seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add((k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Draws `n` cases the interpreter accepts, deterministically from `seed`.
pub fn draw(n: usize, seed: u64, avoid: Avoid, report: &mut Report) -> Vec<Case> {
    let strategy = raw_case();
    let mut runner = TestRunner::new_with_rng(PtConfig::default(), seed_rng(seed));
    let mut out = Vec::new();
    while out.len() < n {
        let raw = strategy.new_tree(&mut runner).expect("a value").current();
        match Case::new(raw, avoid) {
            Ok(c) => out.push(c),
            Err(why) => {
                report.rejected += 1;
                *report.rejected_why.entry(why).or_insert(0) += 1;
            }
        }
    }
    out
}

const MAIN: &str = r#"#![allow(warnings, unconditional_panic)]
//! A batch of generated programs: `main` runs each one's `check()` and prints one line per
//! program; the driver reads them.
use std::io::Write;
@MODS@
fn main() {
    let from: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(0);
    let location = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let loc = location.clone();
    std::panic::set_hook(Box::new(move |info| {
        *loc.lock().unwrap() = info.location().map(|l| l.to_string()).unwrap_or_default();
    }));
    let cases: &[(usize, fn() -> Result<(), String>)] = &[@CASES@];
    let out = std::io::stdout();
    for &(k, check) in cases.iter().filter(|(k, _)| *k >= from) {
        { let mut o = out.lock(); writeln!(o, "start {k}").unwrap(); o.flush().unwrap(); }
        let line = match std::panic::catch_unwind(check) {
            Ok(Ok(())) => format!("ok {k}"),
            Ok(Err(e)) => format!("fail {k} {}", e.replace('\\', "\\\\").replace('\n', "\\n")),
            Err(p) => {
                let msg = p.downcast_ref::<&str>().map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let at = location.lock().unwrap().clone();
                format!("panic {k} panicked at {at}: {}", msg.replace('\\', "\\\\").replace('\n', "\\n"))
            }
        };
        let mut o = out.lock();
        writeln!(o, "{line}").unwrap();
        o.flush().unwrap();
    }
}
"#;

/// A batch crate on disk: `<work>/<pid>/<name>`, its package named after both, so that runs in
/// several processes (the target directory `<work>/target` is shared) do not meet.
struct Crate {
    dir: PathBuf,
    target: PathBuf,
    package: String,
}

impl Drop for Crate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let exe = self.target.join("debug").join(format!(
            "{}{}",
            self.package,
            std::env::consts::EXE_SUFFIX
        ));
        let _ = std::fs::remove_file(exe);
    }
}

impl Crate {
    fn new(cfg: &Config, name: &str) -> Crate {
        let id = std::process::id();
        let dir = cfg.work.join(format!("{id}")).join(name);
        let package = format!("gen-{name}-{id}");
        let src = dir.join("src");
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&src).expect("create the batch crate");
        let manifest = format!(
            "[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\nmooncake-runtime = {{ path = {:?} }}\n\n\
             [profile.dev]\ndebug = 0\nincremental = false\n\n[workspace]\n",
            cfg.runtime.display().to_string()
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).expect("write Cargo.toml");
        if let Some(lock) = &cfg.lockfile
            && !dir.join("Cargo.lock").exists()
        {
            let _ = std::fs::copy(lock, dir.join("Cargo.lock"));
        }
        Crate { dir, target: cfg.work.join("target"), package }
    }

    /// Writes the cases (keyed by their number) and `main.rs`.
    fn write(&self, cases: &[(usize, &Case)]) {
        let src = self.dir.join("src");
        for entry in std::fs::read_dir(&src).expect("src").flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        let mut mods = String::new();
        let mut list = Vec::new();
        for (k, c) in cases {
            std::fs::write(src.join(format!("case_{k}.rs")), c.module()).expect("write a case");
            std::fs::write(src.join(format!("plain_{k}.rs")), plain_module(&c.prog, &c.rep))
                .expect("write a case");
            let _ = writeln!(mods, "mod case_{k};\nmod plain_{k};");
            list.push(format!("({k}, case_{k}::check)"));
        }
        let main = MAIN.replace("@MODS@", &mods).replace("@CASES@", &list.join(", "));
        std::fs::write(src.join("main.rs"), main).expect("write main.rs");
    }

    fn cargo(&self) -> Command {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&self.dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .env("CARGO_TERM_COLOR", "never")
            .arg("build")
            .arg("--offline")
            .arg("--target-dir")
            .arg(&self.target);
        cmd
    }

    /// Builds; `Err` with the compiler's output.
    fn build(&self, short: bool) -> Result<(), String> {
        let mut cmd = self.cargo();
        if short {
            cmd.arg("--message-format=short");
        }
        let out = cmd.output().expect("run cargo");
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs the binary from case `from` on; the lines it printed, and whether it ended normally.
    fn run(&self, from: usize, timeout: Duration) -> (Vec<String>, bool) {
        let exe = self.target.join("debug").join(format!(
            "{}{}",
            self.package,
            std::env::consts::EXE_SUFFIX
        ));
        let mut child = Command::new(exe)
            .arg(from.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run the batch");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        loop {
            match rx.recv_timeout(timeout) {
                Ok(l) => lines.push(l),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return (lines, false);
                }
            }
        }
        let status = child.wait().expect("wait");
        (lines, status.success())
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Compiles the cases, finding the ones that do not compile: by the file the compiler names,
/// or by halving when it names none. Returns the ones that compile, and whether the last
/// successful build was of exactly those.
fn compile(
    krate: &Crate,
    cases: &[(usize, &Case)],
    failed: &mut BTreeMap<usize, String>,
) -> (Vec<usize>, bool) {
    let mut todo: Vec<usize> = cases.iter().map(|(k, _)| *k).collect();
    let pick = |ks: &[usize]| -> Vec<(usize, &Case)> {
        cases.iter().filter(|(k, _)| ks.contains(k)).map(|(k, c)| (*k, *c)).collect()
    };
    loop {
        if todo.is_empty() {
            return (todo, false);
        }
        krate.write(&pick(&todo));
        let Err(out) = krate.build(true) else { return (todo, true) };
        let mut blamed: BTreeMap<usize, String> = BTreeMap::new();
        for line in out.lines().filter(|l| l.contains("error")) {
            for (tag, prefix) in
                [("case_", ""), ("plain_", "generator error: the primal does not compile: ")]
            {
                let Some(i) = line.find(tag) else { continue };
                let digits: String =
                    line[i + tag.len()..].chars().take_while(char::is_ascii_digit).collect();
                if let Ok(k) = digits.parse::<usize>()
                    && todo.contains(&k)
                {
                    let e = blamed.entry(k).or_default();
                    if !prefix.is_empty() && !e.starts_with(prefix) {
                        *e = format!("{prefix}{e}");
                    }
                    e.push_str(line);
                    e.push('\n');
                }
            }
        }
        if blamed.is_empty() {
            if todo.len() == 1 {
                failed.insert(todo[0], out);
                return (vec![], false);
            }
            let (a, b) = todo.split_at(todo.len() / 2);
            let (mut ok, _) = compile(krate, &pick(a), failed);
            ok.extend(compile(krate, &pick(b), failed).0);
            return (ok, false);
        }
        todo.retain(|k| !blamed.contains_key(k));
        failed.extend(blamed);
    }
}

/// Compiles and runs cases; the outcome of each, by its number.
fn check(krate: &Crate, cases: &[(usize, &Case)], report: &mut Report) -> BTreeMap<usize, Outcome> {
    let mut outcomes = BTreeMap::new();
    let t = Instant::now();
    let mut failed = BTreeMap::new();
    let (ok, built) = compile(krate, cases, &mut failed);
    if !ok.is_empty() && !built {
        let set: Vec<(usize, &Case)> =
            cases.iter().filter(|(k, _)| ok.contains(k)).map(|(k, c)| (*k, *c)).collect();
        krate.write(&set);
        if let Err(out) = krate.build(true) {
            for k in &ok {
                failed.insert(*k, out.clone());
            }
            report.build_time += t.elapsed();
            return failed
                .into_iter()
                .map(|(k, msg)| (k, Outcome::Fail(compile_kind(&msg), msg)))
                .collect();
        }
    }
    report.build_time += t.elapsed();
    for (k, msg) in failed {
        outcomes.insert(k, Outcome::Fail(compile_kind(&msg), msg));
    }
    if ok.is_empty() {
        return outcomes;
    }
    let t = Instant::now();
    let mut from = 0;
    loop {
        let (lines, clean) = krate.run(from, Duration::from_secs(300));
        let mut started = None;
        for line in &lines {
            let mut parts = line.splitn(3, ' ');
            let (tag, k) =
                (parts.next().unwrap_or(""), parts.next().and_then(|k| k.parse::<usize>().ok()));
            let Some(k) = k else { continue };
            let rest = unescape(parts.next().unwrap_or(""));
            match tag {
                "start" => started = Some(k),
                "ok" => {
                    outcomes.insert(k, Outcome::Ok);
                    started = None;
                }
                "fail" if rest.contains("is not finite at this input") => {
                    outcomes.insert(k, Outcome::NonFinite);
                    started = None;
                }
                "fail" => {
                    outcomes.insert(k, Outcome::Fail(failure_kind(&rest), rest));
                    started = None;
                }
                "panic" => {
                    let kind = format!(
                        "panic: {}",
                        failure_kind(rest.split(": ").nth(1).unwrap_or(&rest))
                    );
                    outcomes.insert(k, Outcome::Fail(kind, rest));
                    started = None;
                }
                _ => {}
            }
        }
        if clean {
            break;
        }
        match started {
            Some(k) => {
                outcomes.insert(
                    k,
                    Outcome::Fail(
                        "crash".into(),
                        "the process died (stack overflow, abort or timeout)".into(),
                    ),
                );
                match ok.iter().find(|j| **j > k) {
                    Some(j) => from = *j,
                    None => break,
                }
            }
            None => break,
        }
    }
    report.run_time += t.elapsed();
    outcomes
}

fn compile_kind(msg: &str) -> String {
    // The first error code, or the first error line; the primal's errors are the generator's.
    if msg.starts_with("generator error") {
        return "generator error".into();
    }
    for line in msg.lines() {
        if let Some(i) = line.find("error[E") {
            return format!("compile error: {}", &line[i + 6..i + 11]);
        }
    }
    let first: String = msg
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .collect();
    format!("compile error: {first}")
}

/// An error line without its place and numbers: `src/case_3.rs:12:5: error[E0308]: ..` and
/// `src/case_7.rs:2:1: error[E0308]: ..` name the same failure.
fn normalise(line: &str) -> String {
    let line = match line.find("error") {
        Some(i) => &line[i..],
        None => line,
    };
    line.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// What a shrunk case must keep of the original failure: for a compile error, the original's
/// first error (among the candidate's errors, in any order); otherwise the kind.
fn signature(kind: &str, message: &str) -> String {
    if (kind.starts_with("compile error") || kind == "generator error")
        && let Some(line) = message.lines().find(|l| l.contains("error"))
    {
        return normalise(line);
    }
    kind.to_string()
}

fn matches_kind(o: &Outcome, kind: &str, sig: &str) -> bool {
    match o {
        Outcome::Fail(k, msg) if kind.starts_with("compile error") || kind == "generator error" => {
            (k.starts_with("compile error") || k == "generator error")
                && msg.lines().any(|l| normalise(l) == sig)
        }
        Outcome::Fail(k, _) => k == kind,
        _ => false,
    }
}

/// Shrinks a failing case: rounds of one-step simplifications, compiled many at a time,
/// smallest first; the smallest that fails the same way becomes the next case. A round that
/// finds none in one chunk tries the next chunk, until the candidates or the time run out.
fn shrink(
    cfg: &Config,
    case: &Case,
    kind: &str,
    message: &str,
    report: &mut Report,
) -> (Case, String) {
    let sig = signature(kind, message);
    const CHUNK: usize = 40;
    let t = Instant::now();
    let krate = Crate::new(cfg, "shrink");
    let mut best = case.clone();
    let mut best_msg = String::new();
    'rounds: while t.elapsed() < cfg.shrink_time {
        let mut seen = std::collections::HashSet::new();
        seen.insert(best.module());
        let best_size = best.size();
        let mut cands: Vec<Case> = candidates(&best.raw)
            .into_iter()
            .filter_map(|raw| Case::new(raw, cfg.avoid).ok())
            .filter(|c| c.size() <= best_size && seen.insert(c.module()))
            .collect();
        cands.sort_by_key(Case::size);
        for chunk in cands.chunks(CHUNK) {
            if t.elapsed() > cfg.shrink_time {
                break 'rounds;
            }
            let numbered: Vec<(usize, &Case)> = chunk.iter().enumerate().collect();
            let mut scratch = Report::default();
            let outcomes = check(&krate, &numbered, &mut scratch);
            let winner = numbered
                .iter()
                .find(|(k, _)| outcomes.get(k).is_some_and(|o| matches_kind(o, kind, &sig)));
            if let Some((k, c)) = winner {
                if let Some(Outcome::Fail(_, m)) = outcomes.get(k) {
                    best_msg = m.clone();
                }
                best = (*c).clone();
                if std::env::var_os("MOONCAKE_GEN_VERBOSE").is_some() {
                    eprintln!("shrink: {} bytes\n{}\n{best_msg}", best.size(), best.module());
                }
                continue 'rounds;
            }
        }
        break;
    }
    // The full compiler output for a compile error.
    if kind.starts_with("compile error") || kind == "generator error" {
        krate.write(&[(0, &best)]);
        if let Err(out) = krate.build(false) {
            // From the first error on (cargo's progress and other crates' warnings before it).
            let start = out.find("error").unwrap_or(0);
            let start = out[..start].rfind('\n').map_or(0, |i| i + 1);
            best_msg = out[start..].to_string();
        }
    }
    report.shrink_time += t.elapsed();
    (best, best_msg)
}

/// Runs `cfg.cases` programs in batches; failures shrunk if `cfg.shrink`.
pub fn run(cfg: &Config) -> Report {
    let mut report = Report::default();
    std::fs::create_dir_all(&cfg.work).expect("create the work directory");
    let krate = Crate::new(cfg, "batch");
    let mut done = 0;
    let mut batch_no = 0u64;
    while done < cfg.cases {
        let n = cfg.batch.min(cfg.cases - done);
        let seed = cfg.seed.wrapping_add(batch_no);
        let (n, first) = match cfg.only {
            Some(k) => (1, k),
            None => (n, 0),
        };
        let mut cases = draw(first + n, seed, cfg.avoid, &mut report);
        let cases: Vec<Case> = cases.drain(first..).collect();
        for c in &cases {
            let text = functions_text(&c.prog, &c.rep);
            for (name, needle) in FEATURES {
                if text.contains(needle) || c.module().contains(needle) {
                    *report.coverage.entry(name).or_insert(0) += 1;
                }
            }
        }
        let numbered: Vec<(usize, &Case)> =
            cases.iter().enumerate().map(|(j, c)| (first + j, c)).collect();
        let outcomes = check(&krate, &numbered, &mut report);
        for (j, c) in cases.iter().enumerate() {
            let k = first + j;
            report.checked += 1;
            match outcomes.get(&k) {
                Some(Outcome::Ok) => report.passed += 1,
                Some(Outcome::NonFinite) => report.non_finite += 1,
                Some(Outcome::Fail(kind, msg)) => {
                    let dir = cfg.work.join("failures");
                    let _ = std::fs::create_dir_all(&dir);
                    let file = dir.join(format!("seed{seed}_case_{k}.rs"));
                    let _ = std::fs::write(&file, c.module());
                    eprintln!(
                        "generated program {k} of batch seed {seed} fails: {kind} (source: {})",
                        file.display()
                    );
                    let (shrunk, shrunk_message) = if cfg.shrink {
                        shrink(cfg, c, kind, msg, &mut report)
                    } else {
                        (c.clone(), msg.clone())
                    };
                    report.failures.push(Failure {
                        kind: kind.clone(),
                        message: msg.clone(),
                        original: c.clone(),
                        shrunk,
                        shrunk_message,
                        origin: format!("MOONCAKE_GEN_SEED={seed} MOONCAKE_GEN_ONLY={k}"),
                    });
                }
                None => {
                    report.failures.push(Failure {
                        kind: "no result".into(),
                        message: "the batch printed nothing for this program".into(),
                        original: c.clone(),
                        shrunk: c.clone(),
                        shrunk_message: String::new(),
                        origin: format!("MOONCAKE_GEN_SEED={seed} MOONCAKE_GEN_ONLY={k}"),
                    });
                }
            }
        }
        done += if cfg.only.is_some() { cfg.cases } else { n };
        batch_no += 1;
        eprintln!(
            "generated programs: {done}/{} checked, {} failures so far ({:.0?} building, {:.0?} running)",
            cfg.cases,
            report.failures.len(),
            report.build_time,
            report.run_time
        );
    }
    report
}

/// Formats a program through rustfmt if it is installed, as is otherwise.
pub fn rustfmt(src: &str) -> String {
    use std::io::Write;
    let Ok(mut child) = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return src.to_string();
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(src.as_bytes());
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => src.to_string(),
    }
}

impl Failure {
    /// The shrunk program as a regression test, and what it printed.
    pub fn describe(&self, index: usize) -> String {
        let name = format!("generated_{index}");
        let test = rustfmt(&regression_test(&self.shrunk.prog, &self.shrunk.rep, &name));
        format!(
            "---- failure {index}: {} ({}; shrunk from {} to {} bytes)\n{}\n-- shrunk program (a regression test):\n{test}\n-- its failure:\n{}\n",
            self.kind,
            self.origin,
            self.original.size(),
            self.shrunk.size(),
            self.message.lines().take(12).collect::<Vec<_>>().join("\n"),
            self.shrunk_message.lines().take(60).collect::<Vec<_>>().join("\n"),
        )
    }
}

/// The workspace's target directory, found from the test executable (`<target>/debug/deps/..`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("target"))
}
