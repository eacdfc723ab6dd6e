#!/usr/bin/env bash
# Instructions of the `#[differentiable]` expansion of each function of the benchmark suite,
# under callgrind: repeatable where the times of `cargo bench -p mooncake-macros --bench expand`
# move with the machine's load.
#
#   bash benches/expansion.sh                 # build the expansion bench, count every function
#   bash benches/expansion.sh --bin PATH      # count with an expansion bench binary built before
#                                             # (for instance at another commit, to compare)
#
# The bench binary (`mooncake-macros/benches/expand.rs`) expands every function once at start
# (to print the sizes), then, with `--bench FILTER --test`, once more each function FILTER
# matches. The count of a function is I(--bench expand/NAME$ --test) - I(--bench <nothing>
# --test): one expansion, and criterion's bookkeeping for one benchmark (small and the same for
# every function). Output: `function<TAB>instructions`, one line per function.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift ;;
        *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "valgrind is not on PATH" >&2; exit 1; }
if [ -z "$bin" ]; then
    bin=$(cargo bench -p mooncake-macros --bench expand --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
fi
[ -x "$bin" ] || { echo "no expansion bench binary at '$bin'" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
count() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$bin" --bench "$1" --test \
        >/dev/null 2>&1
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/cg.out"
}
base=$(count '^$')
for f in sum_builtin sum_loop sum_sin_iter sum_sin_loop naive_map_sin_cos_exp rosenbrock kron_sum \
    simple_mlp logsumexp wishart_constant gmm_objective ode_euler recursive; do
    printf '%s\t%s\n' "$f" $(($(count "expand/$f\$") - base))
done
