"""Models a worker offers beyond the zoo's files: families by name (`hf:GPT2LMHeadModel`, `timm:resnet50`, where the
worker's Python has the package) and a lab's own models by import path (`work --model-import mypkg.models:make_model`).

A family or an import path is read in a child process (`python -m runner.zoo.families list ...`), never in the
worker: listing imports the package (and torch), and an import path runs the lab's code. The child prints what the
worker publishes: each model's metadata, and for each import path that failed, why (no such module, a factory that
raises, a model that would need a download: workers build offline). The job's child resolves a name the same way
(`resolve`), without listing anything.

An import path names either a factory, `module:function`, whose keyword parameters with integer defaults are the
model's size parameters and which returns `(nn.Module, inputs)` with `inputs(batch_size)` giving the input tensors;
or a module that follows the model-file protocol (runner.zoo), `module` alone.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
from pathlib import Path
from types import SimpleNamespace

from lab.spec import TASKS, ModelInfo
from runner.zoo.loading import load_path

HERE = Path(__file__).parent
FAMILIES = {"hf": HERE / "family_hf.py", "timm": HERE / "family_timm.py"}
FAMILY_PACKAGES = {"hf": ("transformers",), "timm": ("timm", "torchvision")}
# what a worker's children run under: nothing is fetched (a model needing a download fails, and says so)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
LIST_TIMEOUT_S = 300


def family_of(name: str) -> str | None:
    prefix = name.split(":", 1)[0] if ":" in name else None
    return prefix if prefix in FAMILIES else None


def is_import_path(name: str) -> bool:
    """`pkg.mod:factory` or `pkg.mod` (dotted identifiers), and not a family's name."""
    if family_of(name):
        return False
    module, _, attr = name.partition(":")
    parts = module.split(".")
    return (len(parts) > 1 or bool(attr)) and all(p.isidentifier() for p in parts) and (not attr or attr.isidentifier())


def available(family: str) -> bool:
    return all(importlib.util.find_spec(p) is not None for p in FAMILY_PACKAGES[family])


# -- in the child: a name to something with build() and example_inputs() --------------------------------------------
def bind(name: str, task: str):
    """The loaded model of a family member or an import path, shaped like a zoo model file's module."""
    family = family_of(name)
    if family:
        module = load_path(f"compile_lab_family_{family}", FAMILIES[family])
        member = name.split(":", 1)[1]
        return SimpleNamespace(build=lambda **p: module.build(member, task, **p),
                               example_inputs=lambda batch, **p: module.example_inputs(member, task, batch, **p))
    module_name, _, attr = name.partition(":")
    module = importlib.import_module(module_name)
    if not attr:
        return module  # the model-file protocol
    factory, made = getattr(module, attr), {}

    def build(**params):
        model, inputs = factory(**params)
        made["inputs"] = inputs
        return model

    def example_inputs(batch, **params):
        if "inputs" not in made:
            build(**params)
        return made["inputs"](batch)

    return SimpleNamespace(build=build, example_inputs=example_inputs)


# -- in the listing child --------------------------------------------------------------------------------------------
def _info_dict(name: str, description: str, params: list[dict], **more) -> dict:
    return {"name": name, "description": description, "params": params, "tasks": list(TASKS), **more}


def probe_import(name: str) -> dict:
    """Import a lab's model and build it once on the meta device (no memory, no weights; on the host where the model
    cannot be built there), offline; its metadata, or raises with the reason."""
    import torch

    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise ValueError(f"no module named {e.name!r} on this worker's Python path") from None
    if attr:
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise ValueError(f"module {module_name!r} has no function {attr!r}")
        params = [{"name": k, "default": p.default} for k, p in inspect.signature(factory).parameters.items()
                  if isinstance(p.default, int) and not isinstance(p.default, bool)]
        description = (inspect.getdoc(factory) or f"{name} (a lab's factory)").splitlines()[0]
        made = _build_once(lambda: factory(**{p["name"]: p["default"] for p in params}), torch)
        if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module)
                and callable(made[1])):
            raise ValueError(f"{name} must return (an nn.Module, a function of the batch size giving its inputs); "
                             f"it returned {type(made).__name__}")
        return _info_dict(name, description, params, source="import")
    missing = [f for f in ("DESCRIPTION", "build", "example_inputs") if not hasattr(module, f)]
    if missing:
        raise ValueError(f"module {module_name!r} follows no model protocol: it defines no {', '.join(missing)} "
                         "(name a factory as module:function)")
    raw = getattr(module, "PARAMS", {})
    params = [dict(p, name=k) if isinstance(p, dict) else {"name": k, "default": p} for k, p in raw.items()]
    _build_once(lambda: module.build(**{p["name"]: p["default"] for p in params}), torch)
    return _info_dict(name, str(module.DESCRIPTION), params, tasks=list(getattr(module, "TASKS", TASKS)),
                      size_dim=getattr(module, "SIZE_DIM", "batch"), source="import")


def _build_once(make, torch):
    try:
        with torch.device("meta"):
            return make()
    except Exception as meta_error:  # noqa: BLE001 - some models need real tensors to build: the host then
        if _needs_download(meta_error):
            raise ValueError(f"it needs a download (workers build offline): {_first(meta_error)}") from None
        try:
            return make()
        except Exception as e:  # noqa: BLE001 - the lab's code: any failure is its reason
            why = "it needs a download (workers build offline)" if _needs_download(e) else "building it raised"
            raise ValueError(f"{why}: {_first(e)}") from None


def _needs_download(e: BaseException) -> bool:
    text = f"{type(e).__name__} {e}".lower()
    return any(w in text for w in ("offline", "localentrynotfound", "connection", "urlopen", "hf_hub", "download"))


def _first(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:400]


def listing(families: list[str], imports: list[str], gpu: bool) -> dict:
    """Everything one worker offers beyond its files, and what it could not offer, with why."""
    out: dict = {"models": [], "refused": {}, "families": {}}
    for family in families:
        try:
            module = load_path(f"compile_lab_family_{family}", FAMILIES[family])
            out["models"] += module.listing(gpu)
            package = importlib.import_module(FAMILY_PACKAGES[family][0])
            out["families"][family] = getattr(package, "__version__", "?")
        except Exception as e:  # noqa: BLE001 - a broken install: this family is not offered, and why is logged
            out["refused"][f"{family}:*"] = _first(e)
    for name in imports:
        try:
            out["models"].append(probe_import(name))
        except Exception as e:  # noqa: BLE001 - each failure is the model's reason
            out["refused"][name] = str(e) if isinstance(e, ValueError) else _first(e)
    return out


def infos(listed: dict) -> dict[str, ModelInfo]:
    return {m["name"]: ModelInfo.from_dict(m) for m in listed.get("models", [])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m runner.zoo.families")
    p.add_argument("step", choices=("list",))
    p.add_argument("--family", action="append", default=[], choices=tuple(FAMILIES))
    p.add_argument("--import", dest="imports", action="append", default=[])
    p.add_argument("--gpu", action="store_true", help="GPU-sized defaults (else CPU-sized)")
    p.add_argument("--out", required=True, help="write the JSON here")
    args = p.parse_args(argv)
    os.environ.update(OFFLINE)
    result = listing(args.family, args.imports, args.gpu)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
