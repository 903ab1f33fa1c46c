#!/usr/bin/env bash
# bench.honest_answers on the device machine, one or more steps a call (each call <= 10 minutes), from the repo root
# with the wheels carried (carry: .whl). Each step writes under $OUT/ha (the seed sweeps and their reference) or
# $OUT/real (models by name); copy them back and read the table here:
#   python -m bench.honest_answers table --out DIR --one-database
#   bash bench/gpu_honest.sh sweeps        # sweeps A and B of the seed configurations (about 190 s + 200 s on an H200),
#                                          # B in A's database (A's processes its history, as a lab's second sweep)
#   bash bench/gpu_honest.sh sweeps-noisy  # the same for the three configurations whose processes scatter most
#                                          # (about 200 s): how many processes B plans from A's
#   bash bench/gpu_honest.sh ref1 ref2     # the cold harness reference in two halves (about 490 s + 430 s): each call
#                                          # one; or reuse bench/results/h200_harness_reference_cold_2026-11-29.jsonl
#   bash bench/gpu_honest.sh timm          # timm resnet50 inference by name beside 2 script processes (about 250 s)
#   bash bench/gpu_honest.sh bert-ref      # BERT masked-LM training's reference, to 2 processes
#   bash bench/gpu_honest.sh fork          # bench.fork_vs_fresh: fresh, forked, forked + gc.freeze, forked + own heap
#                                          # (runner.child.prewarm.own_heap), then + huge pages, 2 processes a way -> $OUT/fork
#   bash bench/gpu_honest.sh cold-trace    # bench.cold_first_call, worker jobs with and without their compile trace
#                                          # beside fresh scripts, 4 repeats (about 350 s) -> $OUT/cold
#   bash bench/gpu_honest.sh parents       # bench.parent_effect: 3 preloaded parents x 3 forked children beside 9
#                                          # fresh processes, one warm cache, mlp:64 then simplenet:32 (about 300 s)
#   bash bench/gpu_honest.sh cold-order    # the same with the worker's jobs sincos first, 3 repeats: does a job's
#                                          # place in its worker move its cold first call?
#   bash bench/gpu_honest.sh paired1; ...paired2; ...paired3   # sweep A beside the cold reference, a configuration
#                                          # at a time (honest_answers paired: the machine's drift on both alike), in
#                                          # three calls of about 410, 360 and 420 s; copy each call's ha/ to DIR1..3:
#     python -m bench.honest_answers merge --out DIR --label A --from DIR1 --from DIR2 --from DIR3
#   cp DIR/sweep-A.db .whl/ && bash bench/gpu_honest.sh sweepB   # a plain sweep B (about 215 s: the per-job overhead)
#                                          # in A's database, as a lab's second sweep: A's processes its history
#     cp DIR4/sweep-B.db DIR/ && python -m bench.honest_answers table --out DIR --one-database --overhead-of B
#   interleaved, five calls back to back: the cold reference one fresh process per configuration between and
#   around the sweeps, so both meet the lease's host alike (its pace moves over minutes); each call's ha/ to DIR1..5:
#     bash bench/gpu_honest.sh refround   # (about 300 s) then: sweepA (about 200 s), refround,
#     cp DIR2/sweep-A.db .whl/ && bash bench/gpu_honest.sh sweepB, then refround
#     cat DIR1/reference.jsonl DIR3/reference.jsonl DIR5/reference.jsonl > DIR/reference.jsonl  (sweep-A.db, sweep-B.db
#     beside it), python -m bench.honest_answers table --out DIR --one-database
#   bash bench/gpu_honest.sh ref-more      # the bimodal configurations' reference to 6 processes (3 more each
#                                          # where $OUT/ha/reference.jsonl already holds 3: copy the kept one there first)
set -uo pipefail
. bench/device_wheels.sh
start=$(date +%s)
left() { echo $((560 - ($(date +%s) - start))); }
mkdir -p "${OUT:-.}/ha" "${OUT:-.}/real"
# A fresh machine's first compile reads its compilers and headers from a cold page cache (gcc, ptxas, triton's and
# inductor's files): on the 2026-12-02 leases simplenet's first compile of a lease read 3.02 s (a reference process)
# and 4.16 s (a worker's first job) against the reference's median 2.73 s (a hypothesis, not yet run with this step).
# One throwaway compile in its own caches first, so neither side's first process pays for the machine.
( d=$(mktemp -d) && TORCHINDUCTOR_CACHE_DIR=$d/i TRITON_CACHE_DIR=$d/t timeout 120 python3 -c "
import torch
f = torch.compile(lambda x: (x.sin() * 2 + 1).relu().sum(dim=-1))
f(torch.randn(64, 64, device='cuda' if torch.cuda.is_available() else 'cpu'))" >/dev/null 2>&1; rm -rf "$d" ) || true
ha() { timeout "$(left)" python3 -m bench.honest_answers "$@"; }
step() {
  case "$1" in
    sweeps) ha sweep --out "$OUT/ha" --label A --device cuda
            ha sweep --out "$OUT/ha" --label B --device cuda --continue "$OUT/ha/sweep-A.db" ;;
    sweeps-noisy) ha sweep --out "$OUT/ha" --label A --device cuda --only "mlp bs64 default" --only sincos \
                    --only "simplenet bs32 dynamic=true"
                  ha sweep --out "$OUT/ha" --label B --device cuda --continue "$OUT/ha/sweep-A.db" \
                    --only "mlp bs64 default" --only sincos --only "simplenet bs32 dynamic=true" ;;
    ref1) ha reference --out "$OUT/ha" --device cuda --cold --only simplenet --only "mlp bs64" --only sincos ;;
    ref2) ha reference --out "$OUT/ha" --device cuda --cold --only complexnet --only convnetmix --only resnet18 ;;
    timm) ha sweep --out "$OUT/real" --label A --set real --only "resnet50 bs32 inference"
          ha reference --out "$OUT/real" --set real --only "resnet50 bs32 inference" --ref-processes 2 ;;
    bert-ref) ha reference --out "$OUT/real" --set real --only "bert-mlm bs32 seq512 training" --ref-processes 2 ;;
    fork) mkdir -p "$OUT/fork"
          timeout "$(left)" python3 -m bench.fork_vs_fresh --device cuda --model mlp:64 --model simplenet:32:reduce-overhead \
            --model sincos:10000 --repeat 2 --iters 10 -o "$OUT/fork/fork_vs_fresh.txt" 2> "$OUT/fork/runs.log" ;;
    parents) mkdir -p "$OUT/parents"
          for m in mlp:64 simplenet:32; do timeout "$(left)" python3 -m bench.parent_effect --device cuda --model "$m" \
            --parents 3 --children 3 -o "$OUT/parents/parent_effect_${m%%:*}.txt" 2>> "$OUT/parents/runs.log"; done ;;
    cold-order) mkdir -p "$OUT/cold"
          timeout "$(left)" python3 -m bench.cold_first_call --device cuda --repeat 3 --model sincos:10000 \
            --model mlp:64 --model simplenet:32 -o "$OUT/cold/cold_first_call_order.txt" 2> "$OUT/cold/runs.log" ;;
    cold-trace) mkdir -p "$OUT/cold"
          timeout "$(left)" python3 -m bench.cold_first_call --device cuda --repeat 4 --trace both --model mlp:64 \
            --model sincos:10000 -o "$OUT/cold/cold_first_call_trace_both.txt" 2> "$OUT/cold/runs.log" ;;
    ref-more) ha reference --out "$OUT/ha" --device cuda --cold --ref-processes 6 --only "mlp bs64 default" \
                --only "simplenet bs32 reduce-overhead" --only "complexnet bs32 reduce-overhead" --only sincos ;;
    paired1) ha paired --out "$OUT/ha" --device cuda --cold --sides A --only simplenet --only "mlp bs64 default" ;;
    paired2) ha paired --out "$OUT/ha" --device cuda --cold --sides A --only "mlp bs64 reduce-overhead" --only sincos \
               --only "complexnet bs32 default" ;;
    paired3) ha paired --out "$OUT/ha" --device cuda --cold --sides A --only "complexnet bs32 reduce-overhead" \
               --only convnetmix --only resnet18 ;;
    sweepA) ha sweep --out "$OUT/ha" --label A --device cuda ;;
    refround) ha reference --out "$OUT/ha" --device cuda --cold --ref-processes 1 ;;
    sweepB) ha sweep --out "$OUT/ha" --label B --device cuda $([ -f .whl/sweep-A.db ] && echo --continue .whl/sweep-A.db) ;;
    *) echo "step: sweeps, sweeps-noisy, ref1, ref2, refround, sweepA, paired1, paired2, paired3, sweepB, timm, bert-ref, fork, cold-trace, cold-order, parents, ref-more" >&2
       exit 2 ;;
  esac
}
[ $# -gt 0 ] || set -- help
for s in "$@"; do
  [ "$(left)" -gt 60 ] || { echo "no time left for $s" >&2; break; }
  step "$s"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>/dev/null
git log --oneline -1 >> "$OUT/gpu.txt" 2>/dev/null
git diff --quiet HEAD 2>/dev/null || echo "(the tree sent differs from that commit: diff $(git diff HEAD | sha1sum | cut -c1-12))" >> "$OUT/gpu.txt"
exit 0
