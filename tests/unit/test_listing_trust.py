"""A listing kept in the worker's home (runner.worker.listing_cache) is a file anyone with the home can write: the
worker offers from it only what it was asked to offer (its families' members, its own import paths), never an import
path the file adds, and a file that does not read is listed anew instead of stopping the worker's start."""
import json

from runner.worker import listing_cache
from runner.worker.model_offer import MoreModels
from runner.zoo import quick_listing


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


def test_a_listing_another_worker_published_is_offered_cut_to_this_workers_families_and_kept(tmp_path, monkeypatch):
    """An empty home (a pod's emptyDir): the families' listing a worker with the same key published is offered at
    once, only this worker's families' members, and kept in the home."""
    more = MoreModels([], use_families=False)
    more.families = ["hf"]
    published = {"models": [model("hf:GPT2LMHeadModel"), model("timm:resnet18"), model("labpkg.models:make"),
                            model("evilpkg.payload:run")],
                 "refused": {"hf:*": "not here", "labpkg.models:make": "no such module"}, "families": {"hf": "5.0"}}
    asked = []
    monkeypatch.setattr(MoreModels, "_begin", lambda self, *a: None)  # no listing child here
    more.start({}, tmp_path, gpu=False, home=tmp_path, published=lambda key: asked.append(key) or published)
    key = listing_cache.key(more.families, more.imports, False)
    assert asked == [listing_cache.digest(key)]
    assert set(more.entries) == {"hf:GPT2LMHeadModel"} and more.from_cache and more.changed.is_set()
    assert more.refused == {"hf:*": "not here"}
    assert set(families_of(listing_cache.load(tmp_path, key))) == {"hf:GPT2LMHeadModel"}  # kept for the next start
    assert more.snapshot()[2] == {"key": asked[0], "families": {"hf": "5.0"}}
    # a home that keeps its own listing does not ask the database
    again = MoreModels([], use_families=False)
    again.families = ["hf"]
    again.start({}, tmp_path, gpu=False, home=tmp_path, published=lambda key: asked.append(key) or None)
    assert len(asked) == 1 and set(again.entries) == {"hf:GPT2LMHeadModel"}


def test_without_a_good_published_listing_the_child_lists(tmp_path, monkeypatch):
    """Nothing published, a row that does not read, a database that fails, or import paths of its own (listed before
    a draining worker claims): the worker starts and its listing child lists."""
    begun = []
    monkeypatch.setattr(MoreModels, "_begin", lambda self, *a: begun.append(a))

    def fails(key):
        raise RuntimeError("database is locked")

    forged = [None, {"models": [1, "x"], "families": "abc"}, {"models": [model("hf:A")], "refused": ["a"]},
              {"models": [model("hf:A")], "families": [1]}, {"models": [{"name": "hf:A", "params": "x"}]}]
    sources = quick_listing.listing(["hf"], False)  # what the worker offers meanwhile where transformers is here
    for n, got in enumerate([*(lambda key, g=g: g for g in forged), fails]):
        more = MoreModels([], use_families=False)
        more.families = ["hf"]
        more.start({}, tmp_path / str(n), gpu=False, home=tmp_path / str(n), published=got)
        assert len(begun) == n + 1 and not more.from_cache and more.snapshot()[2] is None, n
        assert set(more.entries) == set(families_of(sources) if sources else ()), n  # nothing of the forged rows
    asked = []
    mine = MoreModels(["labpkg.models:make"], use_families=False)
    mine.families = ["hf"]
    mine.start({}, tmp_path / "imports", gpu=False, home=tmp_path / "imports",
               published=lambda key: asked.append(key) or {"models": [model("hf:A")]})
    assert asked == [] and mine.entries == {} and len(begun) == len(forged) + 2


def families_of(listed: dict) -> list[str]:
    return [m["name"] for m in listed["models"]]
