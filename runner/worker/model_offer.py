"""What a worker offers beyond its model files: the families its Python has (`hf:*` with transformers, `timm:*` with
timm and torchvision) and the lab's models named by import path (`work --model-import mypkg.models:make_model`).

They are listed by one child process in the background (runner.zoo.families: it imports the packages and runs the
lab's code, which the worker never does); until it ends the worker offers its files alone, and then publishes the
rest, with each import path it could not offer and why (the Submit page and `submit` say it when one is asked for).
A listing kept in the worker's home for the same packages and code (runner.worker.listing_cache) is offered at once,
while the child lists again in the background; what it finds replaces it where it differs. With none kept or
published, the families as their sources say them (runner.zoo.quick_listing: read as text, nothing imported) are
offered while the child lists.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

from lab.errors import first_line
from lab.spec import ModelInfo
from runner import zoo
from runner.child.capture.tlparse_report import NICE
from runner.worker import listing_cache
from runner.zoo import families, quick_listing

log = logging.getLogger("compile_lab.worker")
PROBLEMS = "model_file_problems"  # the capability naming each model file that does not read, and why
FAMILIES_ENV = "COMPILE_LAB_FAMILIES"  # 0: offer no families even where their packages are installed


class MoreModels:
    """The listing child's result: entries (by name) and refusals (name -> why); `changed` is set once it ended."""

    def __init__(self, imports: list[str], use_families: bool = True):
        self.imports = list(imports)
        use_families = use_families and os.environ.get(FAMILIES_ENV, "1") != "0"
        self.families = [f for f in families.FAMILIES if use_families and families.available(f)]
        self.entries: dict[str, zoo.ZooEntry] = {}
        self.refused: dict[str, str] = {}
        self.versions: dict[str, str] = {}
        self.changed = threading.Event()
        self.known = threading.Event()  # a listing is in hand: kept from an earlier start, or listed now
        self.from_cache = False  # what is offered is the kept listing; the background one has not ended yet
        self._thread: threading.Thread | None = None
        self._cache: tuple[Path, dict] | None = None  # where the listing is kept, and its key
        self._kept: dict | None = None  # the listing offered now, as listed
        self._later: tuple | None = None  # a kept listing's check, waiting for the worker to be idle
        self.key: str | None = None  # the listing's key, hashed (listing_cache.digest): published for other workers
        self.quick = False  # what is offered was read from the families' sources; the child has not ended yet
        self._lock = threading.Lock()  # entries, refused, versions and quick change together (the listing thread)

    @property
    def wanted(self) -> bool:
        return bool(self.families or self.imports)

    def start(self, env: dict, cwd: Path, gpu: bool, home: Path | None = None,
              published: Callable[[str], dict | None] | None = None) -> None:
        """List in the background; with `home`, offer its kept listing for this key at once (`changed` set), else
        the families' listing `published(key)` finds (one a worker with the same key published), kept in the home."""
        if not self.wanted:
            self.known.set()
            return
        if home is not None:
            k = listing_cache.key(self.families, self.imports, gpu)
            self._cache, self.key = (home, k), listing_cache.digest(k)
            kept, where = listing_cache.load(home, k), str(listing_cache.path(home, k))
            from_db = kept is None and published is not None and (kept := self._published(published)) is not None
            if from_db:
                where = "the database (another worker's, same key)"
            try:
                if kept is not None:
                    self._take(kept, quiet=True)
            except (KeyError, TypeError, ValueError, AttributeError) as e:  # a file that does not read: listed anew
                log.warning("worker: the kept listing %s does not read (%s); listing again", where, first_line(e))
                kept, self.entries, self.refused, self.versions = None, {}, {}, {}
            if kept is not None:
                if from_db:
                    listing_cache.save(home, k, kept)
                self.from_cache = True
                log.info("worker: offering the listing kept in %s while listing again", where)
                self.changed.set()
                self.known.set()
                self._later = (env, cwd, gpu)  # listed again once the worker is idle (refresh)
                return
            self._quick(gpu)
        self._begin(env, cwd, gpu)

    def _quick(self, gpu: bool) -> None:
        """Offer the families as their sources say them while the child lists (not where this worker has import
        paths: those are the child's alone to read). Not `known`: a draining worker waits for the child's."""
        if not self.families or self.imports:
            return
        try:
            found = quick_listing.listing(self.families, gpu)
        except Exception as e:  # noqa: BLE001 - a speed-up: the child's listing is the answer either way
            log.warning("worker: could not read the families' sources (%s); listing", first_line(e))
            return
        if found is None:
            return
        with self._lock:
            self._take(found, quiet=True)
            self.quick = True
        log.info("worker: offering %s read from the families' sources while listing", self._offered())
        self.changed.set()

    def _published(self, published: Callable[[str], dict | None]) -> dict | None:
        """The families' part of the listing a worker with this key published; None where there is none, where this
        worker has import paths (it lists those itself, before a draining worker's first claim), or where the
        lookup fails (a speed-up: a database error or a row that does not read only costs the listing's wait)."""
        if not self.families or self.imports:
            return None
        try:
            return self._families_only(published(self.key))
        except Exception as e:  # noqa: BLE001
            log.warning("worker: no published listing taken (%s); listing", first_line(e))
            return None

    def _families_only(self, listed: dict | None) -> dict | None:
        """A listing published by another worker, cut to this worker's families (its import paths it lists itself:
        their entries are its own to make); None where it names none of them."""
        if not isinstance(listed, dict) or not isinstance(listed.get("models"), list):
            return None
        mine = [m for m in listed["models"] if isinstance(m, dict) and families.family_of(str(m.get("name", "")))
                in self.families]
        if not mine:
            return None
        refused, versions = listed.get("refused") or {}, listed.get("families") or {}
        if not isinstance(refused, dict) or not isinstance(versions, dict):
            return None
        refused = {n: str(why) for n, why in refused.items() if isinstance(n, str) and n.endswith(":*")
                   and n[:-2] in self.families}
        return {"models": mine, "refused": refused, "families": {str(f): str(v) for f, v in versions.items()}}

    def _record(self) -> dict | None:
        """What the worker publishes of its listing for others with the same key: the key and the families'
        versions (the entries themselves are its published models)."""
        if self.key is None or not self.versions or not self.entries or self.quick:
            return None  # what the sources said is not offered to others as this key's listing
        return {"key": self.key, "families": dict(self.versions)}

    def snapshot(self) -> tuple[dict[str, zoo.ZooEntry], dict[str, str], dict | None]:
        """(entries, refused, the published record) of one listing: the listing thread may replace it meanwhile."""
        with self._lock:
            return dict(self.entries), dict(self.refused), self._record()

    def refresh(self) -> None:
        """The worker is idle: list again now, where a kept listing is offered and has not been checked yet. Not at
        the start: the listing child (torch and the families' imports, seconds of CPU) would run beside the first
        jobs' cold compiles and disturb them."""
        if self._later is not None:
            later, self._later = self._later, None
            self._begin(*later)

    def _begin(self, env: dict, cwd: Path, gpu: bool) -> None:
        self._thread = threading.Thread(target=self._list, args=(env, cwd, gpu), daemon=True, name="list models")
        self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Until a listing is in hand: the kept one at once, else the child's."""
        if self.wanted:
            self.known.wait(timeout)

    def _list(self, env: dict, cwd: Path, gpu: bool) -> None:
        with tempfile.TemporaryDirectory(prefix="compile-lab-models-") as tmp:
            out = Path(tmp) / "listing.json"
            # at the lowest CPU priority: a job's child may be compiling or timing beside it
            cmd = [*NICE, sys.executable, "-m", "runner.zoo.families", "list", "--out", str(out)]
            cmd += [a for f in self.families for a in ("--family", f)]
            cmd += [a for name in self.imports for a in ("--import", name)]
            cmd += ["--gpu"] if gpu else []
            try:
                done = subprocess.run(cmd, env={**env, **families.OFFLINE}, cwd=cwd, capture_output=True, text=True,
                                      timeout=families.LIST_TIMEOUT_S)
                listed = json.loads(out.read_text()) if done.returncode == 0 and out.exists() else None
                why = None if listed else f"the listing child exited {done.returncode}: {_tail(done.stderr)}"
            except (OSError, subprocess.TimeoutExpired, ValueError) as e:
                listed, why = None, first_line(e)
        if listed is not None and self._cache is not None:
            listing_cache.save(*self._cache, listed)
        with self._lock:  # what the worker reads (snapshot) is one listing, never half of two
            changed = True
            if listed is None and self.from_cache:  # the kept listing stays offered: the failure may be passing
                changed = False
                log.warning("worker: could not list its families and imported models again (%s); offering the kept "
                            "listing", why)
            elif listed is None:
                if self.quick:  # the sources' listing goes too: the packages did not list, their jobs would fail
                    self.entries, self.versions = {}, {}
                self.refused = {**{f"{f}:*": why for f in self.families}, **{n: why for n in self.imports}}
                log.warning("worker: could not list its families and imported models: %s", why)
            elif self.from_cache and json.dumps(listed, sort_keys=True) == json.dumps(self._kept, sort_keys=True):
                changed = False  # the same listing: nothing to publish again
            else:
                self._take(listed, quiet=False)
            self.from_cache = self.quick = False
        if changed:
            self.changed.set()
        self.known.set()

    def _take(self, listed: dict, quiet: bool) -> None:
        self._kept = listed
        # only what this worker was asked to offer: its families' members and its own import paths (a listing file
        # in the home naming any other import path would have the child import and run it)
        self.entries = {name: zoo.ZooEntry(info=info, path=None) for name, info in families.infos(listed).items()
                        if families.family_of(name) in self.families or name in self.imports}
        self.refused, self.versions = listed.get("refused", {}), listed.get("families", {})
        if quiet:
            return
        for name, reason in self.refused.items():
            log.warning("worker: not offering %s: %s", name, reason)
        log.info("worker: now offering %s", self._offered())

    def _offered(self) -> str:
        """Each family with its version and count of models, then each import path: what the log says is offered."""
        counts = {f: sum(n.startswith(f + ":") for n in self.entries) for f in self.versions}
        return ", ".join([f"{f} {v} ({counts[f]} models)" for f, v in self.versions.items()]
                         + [n for n in self.entries if families.is_import_path(n)]) or "nothing more"


def _tail(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def offered_catalog(engine, model: str, local: dict, device: str = "cuda") -> tuple[dict, list[str]]:
    """What a submission may name, and notes for the submitter: the models live workers publish and this machine's
    own model folders. A family member or import path no live worker lists yet is checked here where this Python
    can (the listing child workers run: the package and class exist, the lab's factory builds), else accepted to
    wait for a worker that offers it, saying so. One that workers tried and could not offer is refused with their
    reason, as is one this machine's check refuses."""
    from db import queue
    from lab.checks import SpecError

    catalog = {**queue.published_catalog(engine), **local}
    if model in catalog:
        return catalog, []
    refused = {name: (w.id, str(why)) for w in queue.live_workers(engine)
               for name, why in (w.capabilities.get("refused_models") or {}).items()}
    family = families.family_of(model)
    why = refused.get(model) or (refused.get(f"{family}:*") if family else None)
    if why:
        worker, reason = why
        raise SpecError("model", f"{model!r} is not offered: worker {worker} could not offer it: {reason}")
    if not (family or families.is_import_path(model)):
        return catalog, []  # an unknown zoo name: the sweep's check names the known ones
    info, reason = checked_here(model, device == "cuda")
    if reason:
        raise SpecError("model", f"{model!r} cannot be run: {reason} (checked on this machine)")
    if info is None:  # nothing here to check it with: it waits, and the Queue says for what
        needs = (f"a worker with {' and '.join(families.FAMILY_PACKAGES[family])} installed" if family
                 else f"a worker started with --model-import {model}")
        info = ModelInfo(name=model, description=f"waits for {needs}", source="pending", open_args=True)
        return {**catalog, model: info}, [
            f"no live worker offers {model} yet and this machine cannot check it: its jobs wait for {needs}"]
    note = [] if family else [f"{model} checked here; its jobs wait for a worker started with --model-import {model}"]
    return {**catalog, model: info}, note


def checked_here(model: str, gpu: bool) -> tuple[object, str | None]:
    """(its ModelInfo, None) when this machine's Python lists the model as a worker would, (None, why not) when it
    refuses it, (None, None) when this machine cannot tell (the family's packages or the import are not here)."""
    family = families.family_of(model)
    if family and not families.available(family):
        return None, None
    if not family and importlib.util.find_spec(model.partition(":")[0].split(".")[0]) is None:
        return None, None
    with tempfile.TemporaryDirectory(prefix="compile-lab-check-") as tmp:
        out = Path(tmp) / "listing.json"
        cmd = [sys.executable, "-m", "runner.zoo.families", "list", "--out", str(out),
               *(("--family", family) if family else ("--import", model)), *(["--gpu"] if gpu else [])]
        try:
            done = subprocess.run(cmd, env={**os.environ, **families.OFFLINE}, capture_output=True, text=True,
                                  timeout=families.LIST_TIMEOUT_S)
            listed = json.loads(out.read_text()) if done.returncode == 0 and out.exists() else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            listed = None
    if listed is None:
        return None, None  # the check itself broke: a worker decides
    found = families.infos(listed).get(model)
    if found is not None:
        return found, None
    refused = listed.get("refused", {})
    why = refused.get(model) or refused.get(f"{family}:*")
    if why:
        return None, why
    return None, f"{family} {listed.get('families', {}).get(family, '')} has no model named {model.split(':', 1)[1]!r}"
