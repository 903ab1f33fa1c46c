#!/usr/bin/env bash
# bench/gpu_instrument_costs.py on the device machine, from the repo root, with the wheels carried (carry: .whl; the
# database's wheels and tlparse's, bench/README.md): the table goes to $OUT/gpu_instrument_costs.txt, progress to
# stdout. Under 9 minutes on an H200 (--budget-s 510 stops launching before that).
#   bash bench/gpu_instrument_costs.sh [--processes 3] [--only complexnet]
set -uo pipefail
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site PATH="/tmp/site/bin:$PATH"
fi
[ -x /tmp/site/bin/tlparse ] && export COMPILE_LAB_TLPARSE=/tmp/site/bin/tlparse
echo "tlparse: ${COMPILE_LAB_TLPARSE:-$(command -v tlparse || echo 'not found: the overhead leaves its report out')}"
export PYTHONUNBUFFERED=1
python3 -m bench.gpu_instrument_costs "$@" -o "${OUT:-.}/gpu_instrument_costs.txt"
