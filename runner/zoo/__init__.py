"""The model zoo: built-in models (runner/zoo/builtin/) and a lab's own (`work --models-dir DIR`).

A model is one Python file; its file name is the model's name. It defines:

    DESCRIPTION = "one line"                      # literal
    PARAMS = {"image_size": 224,                  # literal: size parameters and their defaults,
              "scope": {"default": "model", "choices": ["model", "functions"]}}
    TASKS = ("inference", "training")             # optional literal
    SIZE_DIM = "batch"                            # optional: what batch sizes and the schedule vary
    REQUIRES = ("torchvision",)                   # optional: skipped where these are not installed
    STOCHASTIC = False                            # optional: True if outputs are random by design
    BLOCKS = "layers"                             # optional: the containers of repeated blocks (a name or
                                                  # a list of dotted names); `--scope blocks` compiles each
                                                  # block in them instead of the whole model

    def build(**params) -> torch.nn.Module
    def example_inputs(batch_size, **params) -> tuple of tensors (CPU, float32 or integer)
    def compile(module, compile_fn, **params) -> callable     # optional; default compile_fn(module)

The literals are read with `ast`, so listing models (worker start, `submit`, `models`) never imports
torch or runs lab code; only the child process imports the file.
"""
from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lab.spec import TASKS, ModelInfo, ParamInfo
from runner.zoo.loading import load_path

BUILTIN_DIR = Path(__file__).parent / "builtin"
_LITERALS = ("DESCRIPTION", "PARAMS", "TASKS", "SIZE_DIM", "REQUIRES", "STOCHASTIC", "BLOCKS")


class ModelFileError(ValueError):
    """A model file in a models directory does not follow the zoo's format."""


@dataclass(frozen=True)
class ZooEntry:
    info: ModelInfo
    path: Path | None  # None: a family member or an import path (runner.zoo.families), loaded by its name
    stochastic: bool = False


def read_entry(path: Path, source: str) -> ZooEntry | None:
    """The metadata of one model file, or None when its REQUIRES are not installed."""
    try:  # bytes: Python's own rules for the file's encoding. Its message may quote the file: only where is said
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as e:
        where = f" at line {e.lineno}" if getattr(e, "lineno", None) else ""
        raise ModelFileError(f"{path}: not valid Python{where} (`python -m py_compile` says why)") from None
    lit: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in _LITERALS:
                try:
                    lit[name] = ast.literal_eval(node.value)
                except ValueError:
                    raise ModelFileError(f"{path}: {name} must be a literal") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = {"build", "example_inputs"} - defined
    if "DESCRIPTION" not in lit or missing:
        what = ", ".join(sorted(missing | ({"DESCRIPTION"} - set(lit))))
        raise ModelFileError(f"{path}: a model file must define {what}")
    for module in lit.get("REQUIRES", ()):
        if importlib.util.find_spec(module) is None:
            return None
    params = []
    for pname, p in lit.get("PARAMS", {}).items():
        if isinstance(p, dict):
            p = dict(p)
            params.append(ParamInfo(name=pname, default=p.pop("default"), choices=tuple(p.pop("choices", ())),
                                    **{k: v for k, v in p.items() if k in ("minimum", "maximum", "help")}))
        else:
            params.append(ParamInfo(name=pname, default=p))
    tasks = tuple(lit.get("TASKS", TASKS))
    size_dim = lit.get("SIZE_DIM", "batch")
    if size_dim != "batch" and size_dim not in {p.name for p in params}:
        raise ModelFileError(f"{path}: SIZE_DIM names none of its PARAMS")
    blocks = lit.get("BLOCKS", ())
    blocks = (blocks,) if isinstance(blocks, str) else tuple(blocks)
    if not all(isinstance(b, str) and b for b in blocks):
        raise ModelFileError(f"{path}: BLOCKS must name attributes (a string or a list of strings)")
    info = ModelInfo(name=path.stem, description=str(lit["DESCRIPTION"]), params=tuple(params),
                     tasks=tasks, size_dim=size_dim, source=source, blocks=blocks)
    return ZooEntry(info=info, path=path.resolve(), stochastic=bool(lit.get("STOCHASTIC", False)))


def catalog(models_dirs: Iterable[str | Path] = ()) -> dict[str, ZooEntry]:
    """Built-in models, then each lab directory's (a lab model may not shadow a built-in one); a file that does not
    read raises ModelFileError."""
    entries, problems = read_folders(models_dirs)
    if problems:
        raise ModelFileError(problems[0])
    return entries


def read_folders(models_dirs: Iterable[str | Path] = ()) -> tuple[dict[str, ZooEntry], list[str]]:
    """What catalog() reads, but a file that does not read is left out and named, with why, in the second part: one
    broken file (a syntax error half-way through an edit) leaves its folder's other models offered."""
    entries: dict[str, ZooEntry] = {}
    problems: list[str] = []
    for directory, source in [(BUILTIN_DIR, "builtin")] + [(Path(d), str(d)) for d in models_dirs]:
        if not directory.is_dir():
            raise ModelFileError(f"--models-dir {directory}: not a directory")
        for path in sorted(directory.glob("*.py")):
            if path.name.startswith("_"):
                continue
            try:
                entry = read_entry(path, source)
            except ModelFileError as e:
                problems.append(str(e))
                continue
            if entry is None:
                continue
            if entry.info.name in entries:
                problems.append(f"{path}: model {entry.info.name!r} is already defined by "
                                f"{entries[entry.info.name].path}")
                continue
            entries[entry.info.name] = entry
    return entries, problems


def model_infos(entries: dict[str, ZooEntry]) -> dict[str, ModelInfo]:
    return {name: e.info for name, e in entries.items()}


def resolve(name: str, models_dirs: Iterable[str | Path] = ()) -> ZooEntry | None:
    """The entry for a model name in the child: a file of the zoo or a models folder, or a family member or an
    import path (runner.zoo.families), found by its name without listing its family."""
    from runner.zoo import families

    family = families.family_of(name)
    if family:
        size_dim = "seq_len" if family == "hf" else "batch"
        return ZooEntry(info=ModelInfo(name=name, description=name, size_dim=size_dim, source=family), path=None)
    if families.is_import_path(name):
        module = importlib.import_module(name.partition(":")[0])
        size_dim = getattr(module, "SIZE_DIM", "batch") if ":" not in name else "batch"
        return ZooEntry(info=ModelInfo(name=name, description=name, size_dim=size_dim, source="import"), path=None,
                        stochastic=bool(getattr(module, "STOCHASTIC", False)) if ":" not in name else False)
    return catalog(models_dirs).get(name)


def load_module(entry: ZooEntry, task: str = "inference"):
    """Import a model file (in the child process only: this runs the file's code and imports torch); a family
    member or an import path, bound to its name and the task (runner.zoo.families.bind)."""
    if entry.path is None:
        from runner.zoo import families

        return families.bind(entry.info.name, task)
    return load_path(f"compile_lab_model_{entry.info.name}", entry.path)
