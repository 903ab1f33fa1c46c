"""The table the GPU mode scripts print (bench/gpu_max_autotune.sh, bench/gpu_whole_vs_functions.sh): per
job, its configuration, first calls, steady state, speedup, break-even, recompiles and where the compiled
first call went.   python -m bench.modes_table DATABASE_URL"""
import json
import sys

from db.database import get_engine
from db.results import export_records


def main(url: str) -> None:
    f = lambda v, fmt: "-" if v is None else format(v, fmt)  # noqa: E731
    print(f"{'job':34} {'status':9} {'eager 1st s':>11} {'comp 1st s':>10} {'comp 2nd s':>10} {'eager ms':>9} "
          f"{'comp ms':>9} {'speedup':>7} {'break-even':>10} {'recompiles':>10}  first-call breakdown (s)")
    for r in export_records(get_engine(url)):
        parts = r["compile_breakdown_s"]
        parts = json.loads(parts) if isinstance(parts, str) else (parts or {})
        split = ", ".join(f"{k} {v:.1f}" for k, v in parts.items() if v is not None and v >= 0.05)
        args = " ".join(f"{k}={v}" for k, v in sorted((r["model_args"] or {}).items()) if k != "image_size")
        job = f"{r['model']} {args} bs {r['batch_size']} {r['mode']}".replace("  ", " ")
        print(f"{job:34} {r['status']:9} {f(r['eager_first_call_s'], '.2f'):>11} "
              f"{f(r['compiled_first_call_s'], '.1f'):>10} {f(r['compiled_second_call_s'], '.4f'):>10} "
              f"{f(r['eager_ms'], '.4f'):>9} {f(r['compiled_ms'], '.4f'):>9} {f(r['speedup'], '.3f'):>7} "
              f"{f(r['break_even_calls'], ',.0f'):>10} {f(r['recompiles'], 'd'):>10}  {split}"
              + (f"  ERROR {r['error'][:200]}" if r["error"] else ""))


if __name__ == "__main__":
    main(sys.argv[1])
