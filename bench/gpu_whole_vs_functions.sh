#!/usr/bin/env bash
# On a GPU host: seed 004's "whole model vs function-level" (the Submit preset): LocalOptimizedNetwork at
# 224x224, batch 16, max-autotune, compiled as a whole or only its two heavy functions. Cold compile
# caches, one worker, one job per scope. Prints bench.modes_table's table.
#
#   bench/gpu_whole_vs_functions.sh [TIMEOUT_S=280]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
TIMEOUT=${1:-280}
tmp=$(mktemp -d)
DB=${DB:-sqlite:///$tmp/whole_vs_functions.db}
for scope in model functions; do
    "$PY" -m runner submit --db "$DB" --device cuda --model localopt --arg image_size=224 --arg scope=$scope \
        --batch 16 --mode max-autotune --cache cold --iters 30 --timeout "$TIMEOUT" \
        --name "whole model vs function-level ($scope)" >/dev/null
done
. bench/drain_and_table.sh
