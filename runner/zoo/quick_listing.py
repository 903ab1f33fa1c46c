"""The families' listing read from their installed sources as text, without importing them: no torch, no package
code run, so the worker itself may read it (runner.worker.model_offer). A first start with no kept or published
listing offers it at once; the listing child's own (runner.zoo.families) replaces it when it ends. On a GPU host the
child imports torch and the packages first (15.5 s on an H200, a first start in an empty home); this reads source
files in about a second.

- hf: the class names of transformers' auto mappings (the heads family_hf offers), read from
  transformers/models/auto/modeling_auto.py, where they are literal (model type, class name) pairs.
- timm: the functions decorated with `register_model` in timm/models/*.py (what `timm.list_models()` gives), each
  with its default input size where its default pretrained config says it plainly: the first `generate_default_cfgs`
  key of that architecture, its `input_size=` (or in a `**dict({...})`) or its config helper's literal default,
  through helpers that call helpers. A model whose size is not plain there is left to the child (30 of timm
  1.0.31's 1,371; the 1,341 read agree with timm's own).

Anything unexpected (a package laid out otherwise, a file that does not parse) leaves that family out: the child's
listing is then its only one, as before."""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from pathlib import Path

from runner.zoo import family_entries


def _package_dir(name: str) -> Path | None:
    """The installed package's folder, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def hf_names(root: Path) -> list[str] | None:
    """family_hf.names()'s classes, from modeling_auto.py's literal mappings; None where any mapping is not there."""
    try:
        tree = ast.parse((root / "models" / "auto" / "modeling_auto.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    found: dict[str, list] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in family_entries.HF_HEADS and isinstance(node.value, ast.Call)
                and node.value.args):
            try:
                found[node.targets[0].id] = list(ast.literal_eval(node.value.args[0]))
            except (ValueError, TypeError, SyntaxError):
                return None
    if set(found) != set(family_entries.HF_HEADS):
        return None
    out: dict[str, None] = {}
    for mapping in family_entries.HF_HEADS:
        for pair in found[mapping]:
            if isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str):
                out.setdefault(pair[1], None)
    return sorted(out)


def _registered(fn: ast.FunctionDef) -> bool:
    return any((isinstance(d, ast.Name) and d.id == "register_model")
               or (isinstance(d, ast.Attribute) and d.attr == "register_model") for d in fn.decorator_list)


def _helper_sizes(tree: ast.Module) -> dict[str, tuple | None]:
    """Module-level config helpers (`_cfg`) -> the 'input_size' they return: from a returned dict literal, or from a
    returned call of another helper with `**dict({...}, **kwargs)` (timm's `_tcfg` over `_cfg`); None where a helper
    is not read this way."""
    returns = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            found = [n.value for n in fn.body if isinstance(n, ast.Return) and n.value is not None]
            if len(found) == 1:
                returns[fn.name] = found[0]
    out: dict[str, tuple | None] = {}

    def size(name: str, seen: tuple = ()) -> tuple | None:
        if name in out or name in seen or name not in returns:
            return out.get(name)
        value, got = returns[name], None
        if isinstance(value, ast.Dict):
            got = _literal_key(value, "input_size")
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            got = _kwargs_size(value) or size(value.func.id, (*seen, name))
        out[name] = got
        return got

    for name in returns:
        size(name)
    return {k: v for k, v in out.items() if v is not None}


def _literal_key(d: ast.Dict, key: str):
    for k, v in zip(d.keys, d.values):
        if isinstance(k, ast.Constant) and k.value == key:
            try:
                return ast.literal_eval(v)
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def _kwargs_size(call: ast.Call):
    """'input_size' given to a call: `input_size=...`, or inside `**dict({...}, **kwargs)` / `**{...}`."""
    for kw in call.keywords:
        if kw.arg == "input_size":
            try:
                return ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError):
                return None
        if kw.arg is None:
            v = kw.value
            if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "dict" and v.args \
                    and isinstance(v.args[0], ast.Dict):
                v = v.args[0]
            if isinstance(v, ast.Dict) and (got := _literal_key(v, "input_size")) is not None:
                return got
    return None


def _default_cfgs(tree: ast.Module) -> ast.Dict | None:
    """The dict given to `generate_default_cfgs`: written in the call, or assigned to the name it is given."""
    dicts = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if isinstance(value, ast.Dict):
            dicts[node.targets[0].id] = value
        elif (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "generate_default_cfgs"
              and value.args):
            arg = value.args[0]
            return arg if isinstance(arg, ast.Dict) else dicts.get(arg.id) if isinstance(arg, ast.Name) else None
    return None


def _size_of(cfg: ast.expr, helpers: dict[str, tuple]) -> int | None:
    """The input size a default pretrained config says plainly, or None."""
    if not isinstance(cfg, ast.Call):
        return None
    size = _kwargs_size(cfg)
    if size is None and any(kw.arg is None and not _plain_dict(kw.value) for kw in cfg.keywords):
        return None  # **more: anything may be in it
    if size is None:
        size = helpers.get(getattr(cfg.func, "id", ""))
    ok = isinstance(size, tuple) and len(size) == 3 and all(isinstance(n, int) for n in size)
    return size[-1] if ok else None


def _plain_dict(v: ast.expr) -> bool:
    return isinstance(v, ast.Dict) or (isinstance(v, ast.Call) and getattr(v.func, "id", None) == "dict"
                                       and bool(v.args) and isinstance(v.args[0], ast.Dict))


def timm_sizes(root: Path) -> dict[str, int | None] | None:
    """Every registered timm model -> its default input size where the sources say it plainly (else None)."""
    out: dict[str, int | None] = {}
    files = sorted((root / "models").glob("*.py"))
    if not files:
        return None
    for path in files:
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError, ValueError):
            return None
        names = [fn.name for fn in tree.body if isinstance(fn, ast.FunctionDef) and _registered(fn)]
        if not names:
            continue
        helpers, cfgs, sizes = _helper_sizes(tree), _default_cfgs(tree), {}
        for key, cfg in zip(cfgs.keys, cfgs.values) if cfgs is not None else ():
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                sizes.setdefault(key.value.split(".")[0], _size_of(cfg, helpers))  # the first tag is the default
        for name in names:
            out[name] = sizes.get(name)
    return out or None


def listing(families: list[str], gpu: bool) -> dict | None:
    """The listing child's answer for these families, as far as the sources say it plainly (a family they do not
    say is left out); None where they say nothing. On a CPU worker every timm model is offered (its size is the
    CPU's default)."""
    out: dict = {"models": [], "refused": {}, "families": {}}
    for family in families:
        package = {"hf": "transformers", "timm": "timm"}.get(family)
        root, version = (_package_dir(package), _version(package)) if package else (None, None)
        if root is None or version is None:
            continue
        if family == "hf" and (names := hf_names(root)) is not None:
            out["models"] += [family_entries.hf(cls, gpu) for cls in names]
        elif family == "timm" and (sizes := timm_sizes(root)) is not None:
            out["models"] += [family_entries.timm(name, size or 0, gpu) for name, size in sorted(sizes.items())
                              if size is not None or not gpu]
        else:
            continue
        out["families"][family] = version
    return out if out["families"] else None
