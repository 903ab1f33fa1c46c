"""A listing kept in the worker's home (runner.worker.listing_cache) is a file anyone with the home can write: the
worker offers from it only what it was asked to offer (its families' members, its own import paths), never an import
path the file adds, and a file that does not read is listed anew instead of stopping the worker's start."""
import json

from runner.worker import listing_cache
from runner.worker.model_offer import MoreModels


def model(name: str) -> dict:
    return {"name": name, "description": "a model", "params": []}


def test_a_kept_listing_offers_only_what_the_worker_was_asked_to_offer(tmp_path, monkeypatch):
    more = MoreModels(["labpkg.models:make"], use_families=False)
    listed = {"models": [model("labpkg.models:make"), model("evilpkg.payload:run"), model("hf:NotAFamilyHere")],
              "refused": {}, "families": {}}
    key = listing_cache.key(more.families, more.imports, False)
    listing_cache.save(tmp_path, key, listed)
    monkeypatch.setattr(MoreModels, "_begin", lambda self, *a: None)  # no listing child here
    more.start({}, tmp_path, gpu=False, home=tmp_path)
    assert set(more.entries) == {"labpkg.models:make"}


def test_a_kept_listing_that_does_not_read_is_listed_again(tmp_path, monkeypatch):
    more = MoreModels(["labpkg.models:make"], use_families=False)
    key = listing_cache.key(more.families, more.imports, False)
    listing_cache.save(tmp_path, key, {"models": [{"no name": 1}], "refused": {}, "families": {}})
    begun = []
    monkeypatch.setattr(MoreModels, "_begin", lambda self, *a: begun.append(a))
    more.start({}, tmp_path, gpu=False, home=tmp_path)
    assert begun and more.entries == {} and not more.from_cache
    assert json.loads(listing_cache.path(tmp_path, key).read_text())  # the file is left for the listing to replace
