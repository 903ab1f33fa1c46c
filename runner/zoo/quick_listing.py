"""The families' listing read from their installed sources as text, without importing them: no torch, no package
code run, so the worker itself may read it (runner.worker.model_offer). A first start with no kept or published
listing offers it at once; the listing child's own (runner.zoo.families) replaces it when it ends. On a GPU host the
child imports torch and the packages first (15.5 s on an H200, a first start in an empty home); this reads source
files in about a second.

- hf: the class names of transformers' auto mappings (the heads family_hf offers), read from
  transformers/models/auto/modeling_auto.py, where they are literal (model type, class name) pairs.
- timm: the functions decorated with `register_model` in timm/models/*.py (what `timm.list_models()` gives), each
  with its default input size where its pretrained configs say it plainly: the `generate_default_cfgs` keys of that
  architecture, its `input_size=` (or in a `**dict({...})`) or its config helper's literal default,
  through helpers that call helpers, where every tag of the architecture says the same (timm picks the default tag,
  weights first). Anything said otherwise (a name, a helper doing more than return, one that could put its own size
  over the caller's) leaves the model to the child: 103 of timm 1.0.31's 1,371; the 1,268 read agree with timm's.

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


UNREAD = "unread"  # said in a way not read here (not a literal, a helper doing more than return): left to the child


def _helper_sizes(tree: ast.Module) -> dict[str, tuple | str | None]:
    """Module-level config helpers (`_cfg`) -> the 'input_size' they give when the caller gives none: from a returned
    dict literal, or from a returned call of another helper (timm's `_tcfg` returns `_cfg(**dict({...}, **kwargs))`);
    None where a helper gives none, UNREAD where it is not read this way (a helper doing more than return)."""
    returns: dict[str, ast.expr | None] = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            ok = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
            returns[fn.name] = body[0].value if ok else None
    out: dict[str, tuple | str | None] = {}

    def size(name: str, seen: tuple = ()) -> tuple | str | None:
        if name in out:
            return out[name]
        if name in seen or returns.get(name) is None:
            return UNREAD
        value = returns[name]
        fn = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name)
        own = {fn.args.kwarg.arg} if fn.args.kwarg else set()  # its **kwargs: the caller's, passed on
        if isinstance(value, ast.Dict):
            got = _dict_size(value, own)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):  # the inner helper has the last word
            inner, got = size(value.func.id, (*seen, name)), _kwargs_size(value, own)  # where it is not read
            got = UNREAD if inner == UNREAD else inner if got is None else got
        else:
            got = UNREAD
        out[name] = got
        return got

    for name in returns:
        size(name)
    return out


def _literal(v: ast.expr) -> tuple | str:
    try:
        got = ast.literal_eval(v)
    except (ValueError, TypeError, SyntaxError):
        return UNREAD
    return got if isinstance(got, tuple) else UNREAD


def _dict_size(d: ast.Dict, passed: set[str]) -> tuple | str | None:
    """'input_size' in a dict literal as the caller's keywords would leave it: a `**` of anything but the caller's own
    keywords, or the caller's before the key (the helper's value would win over the caller's), is not read."""
    caller_seen = False
    for k, v in zip(d.keys, d.values):
        if k is None:
            if not (isinstance(v, ast.Name) and v.id in passed):
                return UNREAD
            caller_seen = True
        elif isinstance(k, ast.Constant) and k.value == "input_size":
            return UNREAD if caller_seen else _literal(v)
    return None


def _kwargs_size(call: ast.Call, passed: set[str]) -> tuple | str | None:
    """'input_size' a call gives: `input_size=...`, or inside `**{...}` / `**dict({...}, k=v, **kwargs)` (its
    keywords before its dict, as Python merges them); `**name` other than the caller's own keywords is not read."""
    for kw in call.keywords:
        if kw.arg == "input_size":
            return _literal(kw.value)
    for kw in call.keywords:
        if kw.arg is not None:
            continue
        v = kw.value
        if isinstance(v, ast.Name) and v.id in passed:
            continue
        if isinstance(v, ast.Dict):
            got = _dict_size(v, passed)
        elif isinstance(v, ast.Call) and getattr(v.func, "id", None) == "dict" and len(v.args) <= 1 \
                and (not v.args or isinstance(v.args[0], ast.Dict)):
            got = _kwargs_size(ast.Call(func=v.func, args=[], keywords=v.keywords), passed)
            if got is None and v.args:
                got = _dict_size(v.args[0], passed)
        else:
            got = UNREAD
        if got is not None:
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


def _size_of(cfg: ast.expr, helpers: dict[str, tuple | str | None]) -> tuple | None:
    """The input size one pretrained config says plainly, or None."""
    if not isinstance(cfg, ast.Call) or not isinstance(cfg.func, ast.Name):
        return None
    helper, size = helpers.get(cfg.func.id, UNREAD), _kwargs_size(cfg, set())
    if helper == UNREAD:  # a helper not read might put its own size over the caller's
        return None
    if size is None:
        size = helper
    ok = isinstance(size, tuple) and len(size) == 3 and all(isinstance(n, int) for n in size)
    return size if ok else None


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
                sizes.setdefault(key.value.split(".")[0], []).append(_size_of(cfg, helpers))
        for name in names:  # which tag is the default is timm's choice (weights first): read only where all agree
            said = sizes.get(name) or [None]
            out[name] = said[0][-1] if said[0] is not None and all(x == said[0] for x in said) else None
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
