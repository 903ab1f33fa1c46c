#!/usr/bin/env bash
# bench.advise_vs_full on the device machine, one step a call, from the repo root, with the wheels carried (carry:
# .whl, and .advout from the second step on: the database the steps share). Each step writes its table, database and
# worker log to $OUT; copy advise_vs_full.db and advise_vs_full.json back into .advout/ before the next step.
#   bash bench/gpu_advise.sh searches     # the gpt2 and vit_tiny searches (about 3 + 3 minutes on an H200)
#   bash bench/gpu_advise.sh gpt2-half1   # the gpt2 full sweep's modes default and max-autotune-no-cudagraphs
#   bash bench/gpu_advise.sh gpt2-half2   # ... reduce-overhead and max-autotune
#   bash bench/gpu_advise.sh vit-full     # vit_tiny's full sweep (or vit-half1 / vit-half2 where it does not fit)
#   bash bench/gpu_advise.sh gpt2-search gpt2-half1   # several steps in one call, in order, sharing its time
set -uo pipefail
. bench/device_wheels.sh
out=.advout
mkdir -p "$out"
start=$(date +%s)
left() { echo $((545 - ($(date +%s) - start))); }
# the worker's home outside the carried .advout: a later call on the still-warm machine keeps the compile caches
run() { python3 -m bench.advise_vs_full --out "$out" --home /tmp/advise_home "$@"; }
step() {
  case "$1" in
    searches) run --model gpt2 --part search --deadline 270; run --model vit_tiny --part search --deadline "$(left)" ;;
    gpt2-search) run --model gpt2 --part search --deadline "$(left)" ;;
    vit-search) run --model vit_tiny --part search --deadline "$(left)" ;;
    gpt2-half1) run --model gpt2 --part full --half 1 --deadline "$(left)" ;;
    gpt2-half2) run --model gpt2 --part full --half 2 --deadline "$(left)" ;;
    vit-full) run --model vit_tiny --part full --deadline "$(left)" ;;
    vit-half1) run --model vit_tiny --part full --half 1 --deadline "$(left)" ;;
    vit-half2) run --model vit_tiny --part full --half 2 --deadline "$(left)" ;;
    *) echo "step: searches, gpt2-search, vit-search, gpt2-half1, gpt2-half2, vit-full, vit-half1, vit-half2" >&2
       exit 2 ;;
  esac
  cp "$out"/worker.log "${OUT:-.}/worker_$1.log" 2>/dev/null
  cp "$out"/advise_vs_full.db "$out"/advise_vs_full.json "$out"/advise_vs_full.md "${OUT:-.}/" 2>/dev/null
}
[ $# -gt 0 ] || set -- help
for s in "$@"; do  # several steps in one call share its 560 s, each given what is left
  [ "$(left)" -gt 60 ] || { echo "no time left for $s" >&2; break; }
  step "$s"
done
cp "$out"/advise_vs_full.db "$out"/advise_vs_full.json "$out"/advise_vs_full.md "${OUT:-.}/" 2>/dev/null
exit 0
