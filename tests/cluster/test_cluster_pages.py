"""The scheduler on the dashboard (Streamlit's AppTest, a real SQLite file): the sidebar says how many scheduler jobs
wait and Slurm's reason, Queue lists them and where each placed worker runs, warns about a reason that is not a turn
to wait, and, for a lab with a launcher config, its button runs one real look on the test's Slurm cluster."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.markup import md
from dashboard.state.cluster_launch import CONFIG_ENV
from dashboard.state.embedded import ENV_SWITCH
from db import cluster, queue
from tests.conftest import ROOT, submit, wait_until

APP = str(ROOT / "dashboard" / "main.py")
PLACED = {"kind": "slurm", "job_id": "812_0", "node": "c12", "cpus": 8, "gpus": "0", "partition": "gpu",
          "pool": "h100", "time_limit": "4:00:00"}


@pytest.fixture
def lab(db_url, engine, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")  # no embedded worker: the rows below stand in for the cluster's
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    queue.register_worker(engine, "c12:1:gpu0:aa", "c12", 1, None,
                          {"devices": ["cuda", "cpu"], "torch_version": "2.13.0", "models": [], "scheduler": PLACED})
    waiting = [{"kind": "slurm", "name": "compile-lab-h100", "job_id": f"812_{i}", "pool": "h100", "state": "PENDING",
                "reason": reason, "submitted": "2026-11-28T17:05:00+01:00"}
               for i, reason in ((1, "Resources"), (2, "Resources"), (3, "ReqNodeNotAvail"))]
    cluster.publish_pending(engine, ["compile-lab-h100"], waiting, "login1", 42)
    return engine


def queue_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("screens/queue.py")
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_sidebar_and_queue_show_the_schedulers_pending_jobs_and_reasons(lab):
    at = queue_page()
    said = md("3 Slurm jobs pending (Resources: 2, ReqNodeNotAvail: 1)")  # as drawn: markdown-escaped
    assert any(said in c.value for c in at.sidebar.caption)
    assert any(e.label == f"Cluster scheduler: {said}" for e in at.expander)
    pending, placed = (d.value for d in at.dataframe if "scheduler job" in d.value or "where" in d.value)
    assert list(pending["scheduler job"]) == ["Slurm 812_1", "Slurm 812_2", "Slurm 812_3"]
    assert list(pending["why it waits (the scheduler's reason)"]) == ["Resources", "Resources", "ReqNodeNotAvail"]
    # one format, one time zone: Slurm's submit time (stored with the launcher's offset) and the last look
    assert set(pending["submitted"]) == {"2026-11-28 16:05:00 UTC"}
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", t) for t in pending["as of"])
    assert list(placed["where"]) == ["Slurm job 812_0 on node c12: 8 CPUs, GPU 0, partition gpu, time limit 4:00:00"]
    assert any("ReqNodeNotAvail" in w.value for w in at.warning)  # not a turn to wait: check the request
    assert not [b for b in at.button if b.key == "cluster_launch"]  # no launcher configured: no button


def test_the_launch_button_runs_one_look_on_the_cluster(lab, slurm, db_url, tmp_path, monkeypatch):
    config = slurm.config(tmp_path, max_workers=1, idle_exit_s=5)
    monkeypatch.setenv(CONFIG_ENV, str(config))
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    (job,) = submit(db_url, "--model", "tiny", "--batch", "2", "--backend", "eager", "--device", "cpu", "--iters", "2")
    at = queue_page()
    at.button(key="cluster_launch").click()
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("submitted Slurm job array" in s.value for s in at.success), [e.value for e in at.error]
    wait_until(lambda: queue.jobs_overview(lab, limit=5)[0]["status"] == "succeeded", 120,
               f"job {job} to run on the worker the button started")
