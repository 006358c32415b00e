#!/usr/bin/env bash
# Every scenario set in gold, pipeline and pipeline --consult mode, JSON and replies files into
# OUT, for a byte-for-byte comparison of two checkouts (a refactor must not change a byte):
#   benchmarks/tools/bench_sweep.sh /tmp/before     # on the old commit
#   benchmarks/tools/bench_sweep.sh /tmp/after      # on the new one
#   benchmarks/tools/bench_sweep.sh --compare /tmp/before /tmp/after
set -u
if [ "${1:-}" = "--compare" ]; then
  same=0; diff=0; missing=0
  for f in "$2"/*.json "$2"/*.jsonl; do
    b=$(basename "$f")
    if [ ! -f "$3/$b" ]; then echo "missing $3/$b"; missing=$((missing + 1))
    elif cmp -s "$f" "$3/$b"; then same=$((same + 1))
    else echo "different $b"; diff=$((diff + 1)); fi
  done
  echo "identical=$same different=$diff missing=$missing"
  [ "$diff" -eq 0 ] && [ "$missing" -eq 0 ]
  exit
fi
out=$1; mkdir -p "$out"
cd "$(dirname "$0")/../.."
sets="../shared/bench/examples ../shared/bench/cumulative ../shared/bench/storylines-v1 ../shared/bench/storylines-v2
../shared/bench/zh benchmarks/scenarios/own benchmarks/scenarios/storylines benchmarks/scenarios/dev-extra
benchmarks/scenarios/confided benchmarks/scenarios/vignettes benchmarks/scenarios/storylines-heldout
benchmarks/scenarios/zh-own benchmarks/scenarios/zh-extra benchmarks/scenarios/zh-heldout
benchmarks/scenarios/multilingual"
# MODES: which of gold, pipeline and consult to run (default all three)
modes=${MODES:-gold pipeline consult}
for s in $sets; do
  n=$(basename "$s")
  for m in gold pipeline; do
    case " $modes " in *" $m "*) ;; *) continue ;; esac
    .venv/bin/epmem bench scenarios "$s" --mode $m --json "$out/$n-$m.json" --replies "$out/$n-$m.jsonl" > "$out/$n-$m.log" 2>&1
  done
  case " $modes " in *" consult "*)
    .venv/bin/epmem bench scenarios "$s" --mode pipeline --consult --json "$out/$n-consult.json" \
      --replies "$out/$n-consult.jsonl" > "$out/$n-consult.log" 2>&1 ;;
  esac
  echo "$n done $(date +%T)"
done
