"""A team's record of its sweeps (db.team, runner.cli.sweeps) on SQLite and PostgreSQL: the submitter, tags and notes
(edited after the fact, who and when recorded), archive, delete (jobs, results, artifacts and cache bundles gone, the
baselines and bundles it also removes listed first and compared at the delete, the deletion recorded), and a pinned
baseline whose deltas read the same in `runner report --baseline` as in db.baseline_rows (what Results and Compare
show)."""
import gzip
import json

import pytest
from sqlalchemy import func, select

from db import caches, queue, reports, team
from db.baseline_rows import with_baseline
from db.database import get_engine
from db.engine import reading
from db.models import Artifact, Baseline, CompileCache, Job, JobStatus, LabEvent, Result, Sweep, SweepTag
from db.results import export_records
from lab.checks import SpecError
from lab.sweep import SweepRequest
from runner import zoo
from tests.conftest import run_cli

WORKER = "host:1:any:test"


def run(engine, tags=(), note="", batch=(1,), ms=1.0, first=2.0, mode="default", name=""):
    """A sweep of simplenet on the CPU whose jobs are finished with these numbers (no child: the numbers are
    the test's), one artifact each and a kept compile cache bundle for the first."""
    request = SweepRequest(model="simplenet", batch_sizes=list(batch), device="cpu", tags=tags, note=note,
                           modes=[mode], name=name, process_repeats=1)
    sweep_id, job_ids, _ = queue.submit(engine, request, zoo.model_infos(zoo.catalog()), created_by="ada@lab")
    for _ in job_ids:
        claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=[
                         {"name": "output_code", "bytes": 4, "truncated": False, "data": gzip.compress(b"code")}],
                     result={"eager_ms": 2.0, "compiled_ms": ms, "speedup": 2.0 / ms, "eager_first_call_s": 0.01,
                             "compiled_first_call_s": first, "first_call_cache": "cold", "device_name": "cpu-x",
                             "detail": {}})
    caches.store(engine, f"{sweep_id:064d}", {"torch": "t"}, job_ids[0], b"bundle", {}, signature=None)
    return sweep_id, job_ids


@pytest.fixture
def lab(any_db_url):
    engine = get_engine(any_db_url)
    queue.register_worker(engine, WORKER, "host", 1, None, {"devices": ["cpu"]})
    return engine, any_db_url


def count(engine, model, *where) -> int:
    with reading(engine) as s:
        return s.scalar(select(func.count()).select_from(model).where(*where))


def test_tags_and_note_are_stored_with_the_submission_and_edited_with_a_record(lab):
    engine, url = lab
    sweep_id, _ = run(engine, tags=["Nightly", "gpt2", "nightly"], note="before the\nupgrade")
    m = team.meta(engine)[sweep_id]
    assert (m.submitter, m.tags, m.note) == ("ada@lab", ("gpt2", "nightly"), "before the\nupgrade")
    assert team.edit_tags(engine, sweep_id, "bob@lab", add=["a100"], remove=["gpt2"]) == ("a100", "nightly")
    team.set_note(engine, sweep_id, "bob@lab", "after")
    (note_event, tag_event) = team.events(engine, sweep_id)[:2]
    assert (note_event.actor, note_event.action, note_event.detail) == (
        "bob@lab", "note", {"before": "before the\nupgrade", "after": "after"})
    assert tag_event.detail == {"added": ["a100"], "removed": ["gpt2"]}
    record = export_records(engine, sweep_ids=[sweep_id])[0]
    assert (record["submitter"], record["tags"], record["note"]) == ("ada@lab", ["a100", "nightly"], "after")


@pytest.mark.parametrize("field,value,words", [
    ("tags", ["<b>x</b>"], "is not a tag"), ("tags", ["=cmd"], "is not a tag"),
    ("tags", [f"t{i}" for i in range(21)], "at most 20"), ("note", "a\x1b[2Jb", "control character"),
    ("note", "x" * 2001, "at most 2,000")])
@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_bad_tags_and_notes_are_refused_by_field_with_nothing_stored(lab, field, value, words):
    engine, _ = lab
    with pytest.raises(SpecError) as e:
        queue.submit(engine, SweepRequest.from_dict({"model": "simplenet", "batch_sizes": [1], "device": "cpu",
                                                     field: value}), zoo.model_infos(zoo.catalog()))
    assert e.value.field == field and words in str(e.value)
    assert count(engine, Sweep) == 0 and count(engine, SweepTag) == 0


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_report_and_export_by_tag_and_archived_sweeps_leave_the_default_views(lab):
    engine, url = lab
    a, _ = run(engine, tags=["nightly"], batch=(1,))
    b, _ = run(engine, tags=["nightly", "a100"], batch=(2,))
    c, _ = run(engine, batch=(4,))
    report = lambda *flags: json.loads(run_cli("report", "--db", url, "--format", "json", *flags).stdout)  # noqa: E731
    assert sorted(r["batch_size"] for r in report("--tag", "nightly")) == [1, 2]
    assert [r["batch_size"] for r in report("--tag", "nightly", "--tag", "A100")] == [2]
    assert run_cli("report", "--db", url, "--tag", "nobody").returncode == 2  # no sweep carries it: said, not []
    team.archive(engine, c, "bob@lab")
    assert sorted(r["batch_size"] for r in report()) == [1, 2]  # archived: out of the default view
    assert [r["batch_size"] for r in report("--archived", "yes")] == [4]
    assert [r["batch_size"] for r in report("--sweep", str(c))] == [4]  # asked for by id: shown
    done = run_cli("export", "--db", url, "--format", "json", "--tag", "a100")
    assert [r["sweep_id"] for r in json.loads(done.stdout)] == [b]
    team.archive(engine, c, "bob@lab", restore=True)
    assert sorted(r["batch_size"] for r in report()) == [1, 2, 4]
    assert [e.action for e in team.events(engine, c)] == ["restore", "archive"]
    bad = run_cli("report", "--db", url, "--tag", "<script>")
    assert bad.returncode == 2 and "--tag" not in bad.stdout and "is not a tag" in bad.stderr


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_delete_removes_jobs_results_artifacts_and_bundles_and_records_it(lab):
    engine, url = lab
    keep, kept_jobs = run(engine)
    gone, gone_jobs = run(engine, tags=["x"], note="n", name="to delete")
    team.pin_baseline(engine, "simplenet", gone, "bob@lab")
    pinned_at = team.baselines(engine)["simplenet"].pinned_at
    listing = [f"sweep {gone}: also removes the baseline of simplenet (the whole sweep), pinned by bob@lab at "
               f"{pinned_at:%Y-%m-%d %H:%M} UTC",
               f"sweep {gone}: also removes 1 compile cache bundle kept from its jobs (6 bytes), which portable jobs "
               "of any sweep load"]
    refused = run_cli("delete", "--db", url, str(gone))  # no terminal to ask on, no --yes
    assert refused.returncode == 2 and refused.stdout.splitlines() == listing
    assert refused.stderr.splitlines() == ["error: delete: not asked on a terminal; pass --yes to delete without asking "
                                           "(and to remove what is listed above with it)"]
    assert count(engine, Job, Job.sweep_id == gone) == 1 and team.baselines(engine)["simplenet"].sweep_id == gone
    done = run_cli("delete", "--db", url, str(gone), "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [*listing, f"sweep {gone}: deleted (1 job, 1 artifact, 1 cache bundle, "
                                                  "1 baseline)"]
    for model, where in ((Job, Job.id.in_(gone_jobs)), (Result, Result.job_id.in_(gone_jobs)),
                         (Artifact, Artifact.job_id.in_(gone_jobs)), (CompileCache, CompileCache.job_id.in_(gone_jobs)),
                         (Sweep, Sweep.id == gone), (SweepTag, SweepTag.sweep_id == gone)):
        assert count(engine, model, where) == 0, model
    assert count(engine, Job, Job.id.in_(kept_jobs)) == 1 and count(engine, Artifact) == 1
    assert team.baselines(engine) == {}  # the pin went with the sweep
    (event,) = [e for e in team.events(engine) if e.action == "delete"]
    assert event.sweep_id == gone and event.detail["name"] == "to delete" and event.detail["jobs"] == 1
    assert event.detail["baselines"] == [{"model": "simplenet", "config": None, "pinned_by": "bob@lab",
                                          "pinned_at": pinned_at.isoformat(sep=" ", timespec="seconds")}]
    assert (event.detail["cache_bundles"], event.detail["cache_bundle_bytes"]) == (1, 6)
    assert event.actor.count("@") == 1  # the CLI's user@host
    assert count(engine, LabEvent, LabEvent.action == "delete") == 1


def counts_of(engine, sweep_id: int) -> tuple[int, ...]:
    """What a delete of the sweep would touch: its sweep row, jobs, results, artifacts, bundles kept from its jobs and
    baselines pinned to it."""
    jobs = select(Job.id).where(Job.sweep_id == sweep_id)
    return (count(engine, Sweep, Sweep.id == sweep_id), count(engine, Job, Job.sweep_id == sweep_id),
            count(engine, Result, Result.job_id.in_(jobs)), count(engine, Artifact, Artifact.job_id.in_(jobs)),
            count(engine, CompileCache, CompileCache.job_id.in_(jobs)),
            count(engine, Baseline, Baseline.sweep_id == sweep_id))


def test_delete_lists_the_baselines_and_bundles_it_also_removes_and_records_whose(lab):
    engine, _ = lab
    keep, _ = run(engine)
    gone, _ = run(engine, batch=(1, 2), mode="max-autotune")
    team.pin_baseline(engine, "simplenet", gone, "bob@lab")
    listing = team.also_removed(engine, gone)
    (pin,) = listing.baselines
    assert (pin.model, pin.config, pin.pinned_by) == ("simplenet", None, "bob@lab")
    assert (len(listing.bundle_ids), listing.bundle_bytes) == (1, 6) and len(listing.lines()) == 2
    with pytest.raises(team.ListingChanged, match="not what was confirmed \\(nothing else\\)") as refused:
        team.delete_sweep(engine, gone, "ada@lab")  # confirming nothing else, while a baseline would go
    assert refused.value.now == listing and counts_of(engine, gone) == (1, 2, 2, 2, 1, 1)
    counts = team.delete_sweep(engine, gone, "ada@lab", confirmed=listing)
    assert counts_of(engine, gone) == (0, 0, 0, 0, 0, 0) and counts_of(engine, keep) == (1, 1, 1, 1, 1, 0)
    (event,) = [e for e in team.events(engine) if e.action == "delete"]
    assert event.detail["baselines"] == [pin.to_dict()] and event.detail["baselines"][0]["pinned_by"] == "bob@lab"
    assert (event.detail["cache_bundles"], event.detail["cache_bundle_bytes"]) == (1, 6) == (counts["cache_bundles"],
                                                                                            counts["cache_bundle_bytes"])
    assert team.delete_sweep(engine, keep, "ada@lab", confirmed=team.also_removed(engine, keep))["baselines"] == []


def test_a_pin_or_a_bundle_that_came_after_the_listing_refuses_the_delete_until_confirmed(lab):
    """The list a person confirmed is compared with what the delete's transaction finds: nothing that appeared in
    between goes without being shown."""
    engine, _ = lab
    gone, jobs = run(engine)
    shown = team.also_removed(engine, gone)  # the bundle alone
    team.pin_baseline(engine, "simplenet", gone, "eve@lab")  # meanwhile, someone pins it
    with pytest.raises(team.ListingChanged, match="pinned by eve@lab") as refused:
        team.delete_sweep(engine, gone, "ada@lab", confirmed=shown)
    assert counts_of(engine, gone) == (1, 1, 1, 1, 1, 1) and not [e for e in team.events(engine) if e.action == "delete"]
    shown = refused.value.now
    caches.store(engine, "f" * 64, {"torch": "t"}, jobs[0], b"another", {}, signature=None)  # and a bundle is kept
    with pytest.raises(team.ListingChanged, match="2 compile cache bundles"):
        team.delete_sweep(engine, gone, "ada@lab", confirmed=shown)
    assert counts_of(engine, gone) == (1, 1, 1, 1, 2, 1)
    team.delete_sweep(engine, gone, "ada@lab", confirmed=team.also_removed(engine, gone))
    assert counts_of(engine, gone) == (0, 0, 0, 0, 0, 0)


def test_a_sweep_with_open_jobs_is_not_deleted(lab):
    engine, _ = lab
    sweep_id, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1], device="cpu"),
                               zoo.model_infos(zoo.catalog()))[:2]
    with pytest.raises(team.TeamError, match="still queued or running"):
        team.delete_sweep(engine, sweep_id, "ada@lab")
    assert count(engine, Sweep, Sweep.id == sweep_id) == 1 and team.events(engine) == []


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_baseline_deltas_read_the_same_in_the_report_and_the_rows_the_pages_show(lab):
    engine, url = lab
    base, _ = run(engine, ms=1.0, first=2.0)
    newer, _ = run(engine, ms=0.8, first=3.5, mode="max-autotune")
    assert run_cli("baseline", "--db", url, "simplenet", "--sweep", str(base)).returncode == 0
    rows = {r["config"]: r for r in with_baseline(engine, reports.report(engine))}
    (pinned,) = [r for r in rows.values() if r["baseline"] == "pinned"]
    (other,) = [r for r in rows.values() if r["baseline"] != "pinned"]
    assert pinned["vs_baseline_latency_pct"] == 0 and pinned["vs_baseline_first_call_s"] == 0
    assert other["vs_baseline_latency_pct"] == pytest.approx(-20.0)
    assert other["vs_baseline_first_call_s"] == pytest.approx(1.5)
    cli = {r["config"]: r for r in json.loads(run_cli("report", "--db", url, "--format", "json",
                                                      "--baseline").stdout)}
    for config, r in rows.items():
        for key in ("baseline", "vs_baseline_latency_pct", "vs_baseline_first_call_s", "vs_baseline_break_even_calls"):
            assert cli[config][key] == r[key], (config, key)
    md = run_cli("report", "--db", url, "--baseline").stdout
    assert "latency vs baseline %" in md and "-20" in md
    assert team.baselines(engine)["simplenet"].sweep_id == base
    assert [e.action for e in team.events(engine)] == ["baseline"]


def test_a_deleted_sweeps_ids_are_not_given_to_the_next_one(lab):
    """On SQLite a new row took the largest id + 1: the newest sweep deleted, the next one took its id and its
    jobs theirs, and links, exports and the deletion's record named different work."""
    engine, _ = lab
    run(engine)
    gone, gone_jobs = run(engine, batch=(1, 2))
    team.delete_sweep(engine, gone, "ada@lab", confirmed=team.also_removed(engine, gone))
    after, after_jobs = run(engine)
    assert after > gone and min(after_jobs) > max(gone_jobs)
    assert [e.action for e in team.events(engine, after)] == []  # the deletion's record stays with the deleted id


def test_tags_are_split_at_commas_in_each_item_and_a_windows_note_is_kept():
    from lab.team import check_note, check_tags

    assert check_tags(["a,b", "c d", "A"]) == ("a", "b", "c", "d")
    assert check_note("line one\r\nline two") == "line one\nline two"
    with pytest.raises(SpecError, match="U\\+202E"):
        check_note("RTL:\u202eevil")


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_row_pooling_the_baselines_runs_with_others_is_compared_not_called_pinned(lab):
    """The baseline's configuration run again by another sweep: the pooled row is compared, not called the baseline."""
    engine, _ = lab
    base, _ = run(engine, ms=1.0)
    again, _ = run(engine, ms=1.2)  # the same configuration: the whole-database answer pools both
    team.pin_baseline(engine, "simplenet", base, "ada@lab")
    (row,) = with_baseline(engine, reports.report(engine))
    assert row["baseline"] == f"sweep {base}" and row["vs_baseline_latency_pct"] is not None
    (own,) = with_baseline(engine, reports.report(engine, sweep_ids=[base]))
    assert own["baseline"] == "pinned" and own["vs_baseline_latency_pct"] == 0
