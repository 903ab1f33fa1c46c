# Sourced by the GPU mode scripts once their jobs are queued in $DB: drain them with one worker (no
# calibration), print bench.modes_table's table and whether any CUDA process was left behind.
# Needs PY, DB and tmp set by the caller.
start=$(date +%s)
"$PY" -m runner work --db "$DB" --home "$tmp/home" --drain --no-calibrate 2>"$tmp/worker.log" \
    || { echo "worker failed; log:"; tail -n 40 "$tmp/worker.log"; exit 1; }
echo "worker done in $(( $(date +%s) - start )) s"
"$PY" -m bench.modes_table "$DB"
echo "CUDA processes left: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
