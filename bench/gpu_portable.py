"""A team's warm cache on a GPU, through the real worker: per configuration, a cold job on one worker (it keeps its
compile cache bundle in the database), a portable job of the same spec on a second worker with a fresh home (a
colleague on another host: a fresh cache directory plus that bundle), then two warm jobs on the first worker (the
first fills its persistent cache, the second is the warm reference). Prints first calls and each cache layer.

    python -m bench.gpu_portable [--out DIR] [--device cpu --small]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

from bench.drive import ROOT, drain, submit_all
from db.database import get_engine
from db.results import export_records

CONFIGS = {  # name: submit flags (GPU sizes; --small shrinks them for a CPU smoke run)
    "complexnet-default": ["--model", "complexnet", "--batch", "32"],
    "complexnet-reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
}
SMALL = {"32": "4", "complexnet": "tiny"}
# the order jobs run in: (cache, the worker home that drains it)
STEPS = (("cold", "host-a"), ("portable", "host-b"), ("warm", "host-a"), ("warm", "host-a"))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--device", default="cuda")
    p.add_argument("--small", action="store_true", help="the tiny fixture model (a CPU smoke run of this script)")
    p.add_argument("--only", action="append")
    p.add_argument("--iters", default="10")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'bench.db'}"
    chosen = {(name.replace("complexnet", "tiny") if args.small else name): [SMALL.get(f, f) if args.small else f
                                                                             for f in CONFIGS[name]]
              for name in args.only or CONFIGS}
    if args.small:  # reduce-overhead is CUDA graphs: on the CPU it compiles like default
        chosen = {k: v for k, v in chosen.items() if "reduce-overhead" not in v} or chosen
    models = ["--models-dir", str(ROOT / "tests" / "fixture_models")]
    key = out / "cache.key"  # the bench's own signing key: workers load and keep only bundles signed with one
    key.write_text(secrets.token_hex(32) + "\n")
    key.chmod(0o600)
    ids: dict[str, list[tuple[str, int]]] = {name: [] for name in chosen}
    walls = []
    for cache, home in STEPS:  # one step at a time: the portable job must find the cold job's bundle stored
        step = submit_all(db, {f"{name} {cache}": flags for name, flags in chosen.items()}, "--device", args.device,
                          "--iters", args.iters, "--timeout", "1800", "--cache", cache, "--trace", "false", *models)
        for name in chosen:
            ids[name] += [(cache, j) for j in step.get(f"{name} {cache}", [])]
        walls.append(drain(db, out, args.device, *models, "--cache-key-file", str(key), home=str(out / home)))
    recs = {r["job_id"]: r for r in export_records(get_engine(db))}
    print(f"{'config':<28} {'cache':<9} {'job':>4} {'first s':>8} {'vs cold':>8} {'fxgraph h/m':>11} "
          f"{'aot h/m':>8} {'triton h/m':>10} {'bundle':>10} {'kernel libs':>11} {'load s':>7}  note")
    for name, jobs in ids.items():
        cold = next((recs[j]["compiled_first_call_s"] for c, j in jobs if c == "cold"
                     and recs[j]["status"] == "succeeded"), None)
        for cache, job_id in jobs:
            r = recs[job_id]
            if r["status"] != "succeeded":
                print(f"{name:<28} {cache:<9} {job_id:>4} {r['status']}: {(r['error'] or '')[:160]}")
                continue
            layers = r["cache_layers"] or {}
            hm = {k: f"{(layers.get(k) or {}).get('hit', 0)}/{(layers.get(k) or {}).get('miss', 0)}"
                  for k in ("fxgraph", "aotautograd", "triton")}
            mega = r["mega_cache"] or {}
            loaded, saved = mega.get("loaded") or {}, mega.get("saved") or {}
            bundle = (mega.get("source") or {}).get("bytes") or saved.get("bytes")
            libs = (f"{loaded.get('kernel_libraries')}>{loaded.get('kernel_libraries_built')}" if loaded
                    else str(saved.get("kernel_libraries", "")))
            first, load_s = r["compiled_first_call_s"], loaded.get("load_s")
            print(f"{name:<28} {cache:<9} {job_id:>4} {first:>8.2f} "
                  f"{(f'{cold / first:.1f}x' if cold else '-'):>8} {hm['fxgraph']:>11} {hm['aotautograd']:>8} "
                  f"{hm['triton']:>10} {(f'{bundle:,}' if bundle else '-'):>10} {libs:>11} "
                  f"{(f'{load_s:.2f}' if load_s is not None else '-'):>7}  "
                  f"{mega.get('note', '')[:100]}")
    first = next(iter(recs.values()), {})
    print(f"\nportable: a fresh cache directory on a second worker home plus the cold job's bundle (torch's mega-cache "
          f"and inductor's compiled kernel libraries); warm: the first worker's own cache (its first warm job fills "
          f"it). kernel libs: restored>rebuilt here (portable), kept (cold).\nworker wall times "
          f"{', '.join(f'{w:.0f}' for w in walls)} s; device: {first.get('device_name')}, torch "
          f"{first.get('torch_version')}, triton {first.get('triton_version')}")
    (out / "records.json").write_text(json.dumps(list(recs.values()), default=str, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
