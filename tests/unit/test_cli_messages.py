"""What the CLI says when a command names something that is not there, in-process (runner.cli.main.main) on a real
SQLite file: one line on stderr naming it and exit code 2, not an empty table and 0."""
from db import queue, team
from db.database import get_engine
from lab.sweep import SweepRequest
from lab.wording import count, ids
from runner import zoo
from runner.cli.main import main


def sweep(url, tags=()):
    request = SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", tags=list(tags), process_repeats=1)
    return queue.submit(get_engine(url), request, zoo.model_infos(zoo.catalog()), created_by="ada@lab")[0]


def test_report_and_export_refuse_a_tag_no_sweep_carries(db_url, capsys):
    sweep(db_url, tags=["nightly"])
    for command in ("report", "export"):
        assert main([command, "--db", db_url, "--format", "json", "--tag", "nosuchtag"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == "error: --tag: no sweep carries the tag nosuchtag\n"
    assert main(["report", "--db", db_url, "--tag", "Nightly", "--format", "json"]) == 0  # a known tag: its rows
    capsys.readouterr()


def test_delete_refuses_an_id_that_is_no_sweep(db_url, capsys):
    kept = sweep(db_url)
    assert main(["delete", "--db", db_url, str(kept + 1), "--yes"]) == 2
    assert capsys.readouterr().err == f"error: delete: no such sweep: {kept + 1}\n"
    assert kept in team.meta(get_engine(db_url))


def test_counts_and_ids_read_in_the_singular_and_the_plural():
    assert [count(n, "job") for n in (0, 1, 2, 2500)] == ["0 jobs", "1 job", "2 jobs", "2,500 jobs"]
    assert [ids(x) for x in ([10], [10, 11], [10, 11, 12], [3, 5, 6])] == ["id 10", "ids 10, 11", "ids 10–12",
                                                                           "ids 3, 5, 6"]


def test_submit_says_1_job_not_1_jobs(db_url, capsys):
    assert main(["submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[-1] == f"sweep 1: 1 job queued (id {out.strip()})"
    assert main(["submit", "--db", db_url, "--model", "simplenet", "--batch", "8,16", "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[-1] == f"sweep 2: 2 jobs queued (ids {', '.join(out.split())})"


def test_submit_without_device_on_a_cpu_only_lab_says_to_pass_device_cpu(db_url, capsys):
    engine = get_engine(db_url)
    queue.register_worker(engine, "box:1:any:test", "box", 1, None, {"devices": ["cpu"]})
    assert main(["submit", "--db", db_url, "--model", "simplenet", "--batch", "8"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("error: --device: no live worker offers cuda (the default), one offers cpu: pass "
                                 "--device cpu, or --device cuda to queue for a GPU worker still to come\n")
    assert team.meta(engine) == {}  # nothing stored
    assert main(["submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--device", "cuda"]) == 0  # asked for
    queue.register_worker(engine, "gpu:1:0:test", "gpu", 1, None, {"devices": ["cuda", "cpu"]})
    assert main(["submit", "--db", db_url, "--model", "simplenet", "--batch", "8"]) == 0
    capsys.readouterr()


def test_no_text_a_person_reads_counts_with_a_bracketed_plural():
    """Counts read as sentences ("1 run", "3 runs"; lab.wording.count): no "run(s)" in a string of the pages, charts,
    CLI, worker notes or logs. "(s)" after a space is the seconds unit ("timeout (s)") and stays."""
    import ast
    import re

    from tests.conftest import ROOT
    found = []
    for folder in ("lab", "dashboard", "runner", "db"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        re.search(r"[a-z]\(s\)", node.value):  # log lines too: the worker's are read
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
    assert not found, found


def test_the_graph_break_preset_is_scaled_for_the_cpu():
    """ConvNetMix compiles one more graph per head its RNG picks: at the seed's size (5 heads, width 32, batch 32) a
    CPU took 495-747 s; the CPU's values are smaller on each of the three, the GPU's stay the seed's."""
    from dashboard.data.presets import PRESETS
    preset = PRESETS["fullgraph-break"]
    gpu, cpu = preset.form_values(gpu_sizes=True), preset.form_values(gpu_sizes=False)
    assert gpu["batch_sizes"] == "32" and "params" not in gpu
    assert int(cpu["batch_sizes"]) < 32 and cpu["params"]["heads"] < 5 and cpu["params"]["width"] < 32
    assert cpu["fullgraphs"] == gpu["fullgraphs"] == ["false", "true"]  # the question the seed asks stays
