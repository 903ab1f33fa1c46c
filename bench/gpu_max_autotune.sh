#!/usr/bin/env bash
# On a GPU host: seed 004's "modes on ComplexModel" at a small image size, max-autotune included: what
# the first call costs per mode (and where it goes: dynamo, AOT, inductor, kernel compile, autotuning),
# the steady state it buys, and the recompiles. Cold compile caches, one worker.
#
#   bench/gpu_max_autotune.sh [IMAGE_SIZE=96] [TIMEOUT_S=420]
#   MODES="max-autotune" bench/gpu_max_autotune.sh 32 560    # one mode only (each mode is one job)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
SIZE=${1:-96}
TIMEOUT=${2:-420}
MODES=${MODES:-default reduce-overhead max-autotune}
mode_flags=$(for m in $MODES; do printf -- '--mode %s ' "$m"; done)
tmp=$(mktemp -d)
DB=${DB:-sqlite:///$tmp/modes.db}
"$PY" -m runner submit --db "$DB" --device cuda --model complexnet --arg image_size="$SIZE" --batch 32 \
    $mode_flags --cache cold --iters 30 --timeout "$TIMEOUT" \
    --name "complexnet ${SIZE}px modes" >/dev/null
. bench/drain_and_table.sh
