#!/usr/bin/env bash
# bench/gpu_instrument_costs.py on the device machine, from the repo root, with the wheels carried (carry: .whl; the
# database's wheels and tlparse's, bench/README.md): the table goes to $OUT/gpu_instrument_costs.txt, progress to
# stdout. Under 9 minutes on an H200 (--budget-s 510 stops launching before that).
#   bash bench/gpu_instrument_costs.sh [--processes 3] [--only complexnet]
set -uo pipefail
. bench/device_wheels.sh
echo "tlparse: ${COMPILE_LAB_TLPARSE:-$(command -v tlparse || echo 'not found: the overhead leaves its report out')}"
python3 -m bench.gpu_instrument_costs "$@" -o "${OUT:-.}/gpu_instrument_costs.txt"
