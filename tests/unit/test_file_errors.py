"""Errors about a file a person names quote nothing of it (runner.cli.files, lab.traffic, runner.zoo): `submit
--traffic FILE`, `export --jobs FILE` (and stdin) and a models folder's files are refused with the flag, the file and
where in it (line, item), exit code 2 and nothing stored, and a secret the file holds appears nowhere in the output."""
import pytest

from db.database import get_engine
from db.engine import reading
from db.models import Sweep
from lab import traffic
from lab.checks import SpecError
from lab.spec import ExperimentSpec, ModelInfo, ParamInfo
from runner import zoo
from tests.conftest import run_cli

pytestmark = pytest.mark.subprocess  # each starts `python -m runner`: the subprocess tier

SECRET = "ghp_Zx9SECRETtoken4815162342"


def refused(done, *said: str) -> str:
    """The one error line of a refused command, after checking it says each of `said` and no part of the secret."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    for part in (SECRET, "481516234", "hunter2"):
        assert part not in done.stdout + done.stderr, done.stderr
    for words in said:
        assert words in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize("content, where", [
    (f"GITHUB_TOKEN={SECRET}\n", "item 1 is not a size"),
    (f"8\n16\n\nexport GITHUB_TOKEN={SECRET}\n", "line 4, item 1 is not a size"),
    (f"8: 30\npassword: hunter2 {SECRET}\n", "line 2 is not a histogram line"),
    (f"PATH=/usr/bin:/bin\0TOKEN={SECRET}\0HOME=/root\0", "it is not a histogram"),  # an environ's shape
    ("8\n4815162342\n", "line 2, item 1 is not a size"),  # more digits than a size has
    ("8\n481516234\n", "line 2, item 1: a size must be within 1..16,777,216"),
])
def test_a_traffic_file_that_is_no_stream_is_named_with_where_never_quoted(db_url, tmp_path, content, where):
    stream = tmp_path / "calls.txt"
    stream.write_bytes(content.encode())
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--device", "cpu",
                   "--traffic", str(stream))
    assert refused(done, f"error: --traffic: {stream}: {where}").count("\n") == 1  # one line
    with reading(get_engine(db_url)) as s:
        assert s.query(Sweep).count() == 0


def test_traffic_from_proc_self_environ_prints_no_environment(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--device", "cpu",
                   "--traffic", "/proc/self/environ", env={"COMPILE_LAB_TEST_TOKEN": SECRET})
    assert "COMPILE_LAB_TEST_TOKEN" not in refused(done, "--traffic: /proc/self/environ: ")


def test_a_stream_past_the_model_s_range_says_which_call_not_which_size(db_url, tmp_path):
    stream = tmp_path / "calls.txt"
    stream.write_text("8\n16\n481516\n")  # a number the file holds, inside 1..2**24 but past transformer's seq_len
    done = run_cli("submit", "--db", db_url, "--model", "transformer", "--batch", "1", "--device", "cpu",
                   "--traffic", str(stream))
    assert "481516" not in refused(done, "the first: call 3", "seq_len range 1..65536")
    info = ModelInfo("m", "a model", params=(ParamInfo("seq_len", 8, maximum=64),), size_dim="seq_len")
    with pytest.raises(SpecError) as e:
        ExperimentSpec(model="m", batch_size=1, traffic=traffic.make("8\n4815"), device="cpu").check_model({"m": info})
    assert "4815" not in str(e.value) and "call 2" in str(e.value)


def test_a_jobs_file_that_lists_no_ids_is_named_with_where_never_quoted(db_url, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text(f"12 13\n14 TOKEN={SECRET}\n")
    refused(run_cli("export", "--db", db_url, "--format", "csv", "--jobs", str(ids)),
            f"error: --jobs {ids}: line 2, item 2 is not a job id")
    ids.write_bytes(b"PATH=/bin\0TOKEN=" + SECRET.encode() + b"\0")
    refused(run_cli("export", "--db", db_url, "--format", "json", "--jobs", str(ids)), "line 1, item 1")


def test_job_ids_on_stdin_that_are_no_ids_are_not_echoed(db_url):
    import subprocess
    import sys

    from tests.conftest import ROOT

    done = subprocess.run([sys.executable, "-m", "runner", "export", "--db", db_url, "--format", "csv", "--jobs", "-"],
                          cwd=ROOT, input=f"1\n{SECRET}\n", capture_output=True, text=True, timeout=120)
    refused(done, "error: --jobs -: line 2, item 1 is not a job id")


@pytest.mark.parametrize("content", [
    b"\xff\xfe" + SECRET.encode(),  # not UTF-8 (the decoder's message quotes the bytes it stopped at)
    f"DESCRIPTION = 'x'\nSIZE_DIM = '{SECRET}'\ndef build(): pass\ndef example_inputs(b): pass\n".encode(),
])
def test_a_model_file_that_is_refused_is_named_never_quoted(tmp_path, content):
    (tmp_path / "leaky.py").write_bytes(content)
    with pytest.raises(zoo.ModelFileError) as e:
        zoo.catalog([tmp_path])
    assert str(e.value).startswith(f"{tmp_path / 'leaky.py'}: ") and SECRET not in str(e.value), str(e.value)
    done = run_cli("models", "--models-dir", str(tmp_path))
    refused(done, "leaky.py")
