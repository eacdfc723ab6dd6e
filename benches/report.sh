#!/usr/bin/env bash
# Runs the benchmark suite (benches/benches/gradients.rs) and the expansion bench
# (mooncake-macros/benches/expand.rs), counts instructions per call under callgrind
# (benches/callgrind.sh, when valgrind is on PATH), measures the benches crate's build time from
# clean, and writes the generated section of BENCHMARKS.md (between its report markers; the
# analysis around it is kept).
#
#   bash benches/report.sh                # full run: clean build timed, criterion defaults (~25 min)
#   bash benches/report.sh --quick        # short criterion settings, for a look (~8 min)
#   bash benches/report.sh --no-build     # skip the clean build (the previous build time is kept)
#   bash benches/report.sh --no-callgrind # skip the callgrind counts (~1 min; previous table kept)
#   bash benches/report.sh -- FILTER      # pass FILTER on to criterion (e.g. `-- gmm`); the
#                                         # callgrind counts are of every problem all the same
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
build=1
callgrind=1
filter=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --no-build) build=0 ;;
        --no-callgrind) callgrind=0 ;;
        --) shift; filter=("$@"); break ;;
        *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done

target="${CARGO_TARGET_DIR:-target}"
criterion_args=()
settings="default settings (3 s warm-up, 5 s measurement, 100 samples; 10 for the slow groups)"
if [ "$quick" = 1 ]; then
    criterion_args=(--warm-up-time 1 --measurement-time 2)
    settings="short settings (1 s warm-up, 2 s measurement)"
fi

if [ "$build" = 1 ]; then
    clean="$(mktemp -d)"
    echo "== timing a build from clean in $clean"
    start=$(date +%s.%N)
    CARGO_TARGET_DIR="$clean" cargo build --release -p mooncake-benches --benches
    end=$(date +%s.%N)
    rm -rf "$clean"
    export REPORT_BUILD_SECONDS
    REPORT_BUILD_SECONDS=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
    echo "== build from clean: ${REPORT_BUILD_SECONDS} s"
fi

echo "== cargo bench -p mooncake-benches --bench gradients"
cargo bench -p mooncake-benches --bench gradients -- "${criterion_args[@]}" "${filter[@]}"
echo "== cargo bench -p mooncake-macros --bench expand"
expand_log="$(mktemp)"
cargo bench -p mooncake-macros --bench expand -- "${criterion_args[@]}" | tee "$expand_log"

# Instructions per call (benches/callgrind.sh), after the timings so that valgrind does not run
# beside them. Without a table (skipped, or the script failed) the report keeps the previous one.
callgrind_tsv="$(mktemp)"
if [ "$callgrind" = 0 ]; then
    echo "== --no-callgrind: the callgrind table is skipped (the previous one is kept)"
elif ! command -v valgrind >/dev/null; then
    echo "== valgrind is not on PATH: the callgrind table is skipped (the previous one is kept)"
elif bash benches/callgrind.sh --out "$callgrind_tsv"; then
    export REPORT_CALLGRIND="$callgrind_tsv"
else
    echo "== benches/callgrind.sh failed: the callgrind table is skipped (the previous one is kept)"
fi

export REPORT_CPU REPORT_NPROC REPORT_MEMORY REPORT_RUSTC REPORT_DATE REPORT_SETTINGS REPORT_EXPAND_LOG
REPORT_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
REPORT_NPROC=$(nproc)
REPORT_MEMORY=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
REPORT_RUSTC=$(rustc --version)
REPORT_DATE=$(date -u '+%Y-%m-%d %H:%M')
REPORT_SETTINGS="$settings"
REPORT_EXPAND_LOG="$expand_log"
cargo run --release -q -p mooncake-benches --bin report -- "$target/criterion" BENCHMARKS.md
rm -f "$expand_log" "$callgrind_tsv"
