#!/usr/bin/env bash
# Counts the instructions of one call of every problem of the benchmark suite under callgrind,
# in four modes: `primal`, `hand` (the hand-written gradient), `prepared`
# (`value_and_gradient!` with a `GradientCache`) and `reverse` (plain `value_and_gradient!`);
# and a fifth, `const` (the prepared form with the data arguments written `Const(..)`), for the
# problems whose data is an argument (`simple_mlp`, `gmm`, `mlp_nalgebra*`,
# `mlp_ndarray*`). The Hessian-vector product problems
# (`hvp_rosenbrock_1000`, `hvp_gmm`) have their own modes: `gradient` (the prepared gradient of
# the generic copy), `prepared` (`hvp!` with an `HvpCache`) and `hand` (Rosenbrock only).
# Wall-clock times on this shared machine move by 20% from run to run; these counts repeat.
#
#   bash benches/callgrind.sh                # all problems, into target/callgrind/instructions.tsv
#   bash benches/callgrind.sh --out FILE     # write the table to FILE instead
#   bash benches/callgrind.sh --no-build     # use target/release/examples/profile as built
#   bash benches/callgrind.sh gmm kron_sum   # only these problems
#
# The driver is `benches/examples/profile.rs` (`profile PROBLEM MODE REPS` calls the function
# REPS + 1 times; `profile --list` names the problems, which are the groups of
# `benches/benches/gradients.rs` with the same sizes). Each count is the difference of two
# runs, `(I(N + 1 reps) - I(1 rep)) / N`, so that process start-up, the inputs' construction,
# the first call (which fills a `GradientCache`) and the checksum's printing cancel; N is 10,
# and 5 for `gmm`.
#
# Output: a tab-separated file with the header `problem mode instructions_per_call calls` and
# one line per problem and mode (`calls` is N), after comment lines (`# key: value`: commit,
# date, valgrind and rustc versions). `bash benches/report.sh` runs this script and renders the
# file into BENCHMARKS.md (`benches/src/bin/report.rs`, environment variable
# `REPORT_CALLGRIND`).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
out="$target/callgrind/instructions.tsv"
build=1
only=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift ;;
        --no-build) build=0 ;;
        -*) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
        *) only+=("$1") ;;
    esac
    shift
done

command -v valgrind >/dev/null || { echo "valgrind is not on PATH" >&2; exit 1; }
start=$(date +%s)
if [ "$build" = 1 ]; then
    echo "== cargo build --profile bench -p mooncake-benches --example profile"
    cargo build --profile bench -p mooncake-benches --example profile
fi
profile="$target/release/examples/profile"

# The problems come from the driver; each must be a criterion group of the bench, so that the
# counts and the times are of the same problems.
mapfile -t problems < <("$profile" --list)
for p in "${problems[@]}"; do
    # (The groups of `problems::linalg` are named in its `MLP_LINALG`.)
    grep -q "\"$p\"" benches/benches/gradients.rs benches/src/problems/linalg.rs ||
        { echo "profile.rs names $p, which benches/benches/gradients.rs does not" >&2; exit 1; }
done
if [ ${#only[@]} -gt 0 ]; then
    for p in "${only[@]}"; do
        printf '%s\n' "${problems[@]}" | grep -qx -- "$p" || { echo "unknown problem $p" >&2; exit 2; }
    done
    problems=("${only[@]}")
fi

# glibc's memset and memcpy/memmove switch to `rep stosb` / `rep movsb` above a size threshold
# (2 KiB for memset here), and callgrind counts every iteration of a `rep` instruction, i.e.
# every byte, as one instruction: zeroing 8 KiB would count as ~8,200 instructions, where the
# vector loop below the threshold counts ~460. Raising both thresholds out of reach keeps
# glibc on its vector loops, so that a count measures work rather than bytes. The tunables'
# names are those of glibc 2.36 (`ld.so --list-tunables`); on this machine, under callgrind,
# they take memset of 4 KiB from 4,112 to 238 instructions and memcpy of 64 KiB from 65,535 to
# 6,170. (Loops of `rep stos`/`rep movs` that rustc inlines itself are still counted per
# element.)
export GLIBC_TUNABLES=glibc.cpu.x86_rep_stosb_threshold=0xffffffffffffffff:glibc.cpu.x86_rep_movsb_threshold=0xffffffffffffffff

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The instructions callgrind counts in `profile PROBLEM MODE REPS`.
count() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$profile" "$@" \
        >"$tmp/stdout" 2>"$tmp/stderr" ||
        { cat "$tmp/stderr" >&2; echo "valgrind failed on profile $*" >&2; exit 1; }
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/cg.out"
}

mkdir -p "$(dirname "$out")"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
    git diff --quiet HEAD -- || commit="$commit (with uncommitted changes)"
else
    commit=unknown
fi
{
    echo "# instructions per call under callgrind: (I(N + 1 reps) - I(1 rep)) / N, bash benches/callgrind.sh"
    echo "# commit: $commit"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M') (UTC)"
    echo "# valgrind: $(valgrind --version)"
    echo "# rustc: $(rustc --version)"
    printf 'problem\tmode\tinstructions_per_call\tcalls\n'
} >"$tmp/table.tsv"

printf '%-22s %5s %14s %14s %14s %14s %14s\n' problem calls primal hand prepared reverse const
for p in "${problems[@]}"; do
    case "$p" in
        gmm | hvp_gmm | mlp_nalgebra_128_256_128 | mlp_ndarray_128_256_128) n=5 ;;
        *) n=10 ;;
    esac
    # `const`: the prepared form with the data arguments `Const(..)`, where there are some.
    modes=(primal hand prepared reverse)
    case "$p" in
        simple_mlp | gmm | mlp_nalgebra* | mlp_ndarray*) modes+=(const) ;;
        hvp_rosenbrock_1000) modes=(gradient prepared hand) ;;
        hvp_gmm) modes=(gradient prepared) ;;
    esac
    row=()
    for mode in "${modes[@]}"; do
        one=$(count "$p" "$mode" 1)
        many=$(count "$p" "$mode" $((n + 1)))
        per=$(awk -v a="$one" -v b="$many" -v n="$n" 'BEGIN { printf "%.0f", (b - a) / n }')
        printf '%s\t%s\t%s\t%s\n' "$p" "$mode" "$per" "$n" >>"$tmp/table.tsv"
        row+=("$per")
    done
    case "$p" in
        hvp_*)
            # Other modes: named in the row (gradient, then the product, then by hand).
            line="$p"
            for i in "${!modes[@]}"; do line+="  ${modes[$i]} ${row[$i]}"; done
            echo "$line" ;;
        *)
            [ ${#row[@]} -eq 5 ] || row+=("-")
            printf '%-22s %5s %14s %14s %14s %14s %14s\n' "$p" "$n" "${row[@]}" ;;
    esac
done
mv "$tmp/table.tsv" "$out"
echo "== wrote $out in $(($(date +%s) - start)) s"
