"""Sign-in through Streamlit's AppTest, on a real SQLite file (the browser tests, tests/e2e/test_signin_browser.py,
sign in at a real provider): with sign-in on and nobody signed in, every page is the sign-in button alone; signed in,
the sidebar names the person, a submit records them as the sweep's submitter and Queue cancels their jobs only; with
sign-in off, Queue says anyone may cancel; a sign-in asked for but not configured serves nothing."""
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.markup import WORD_JOINER
from dashboard.state.embedded import ENV_SWITCH
from db import queue
from db.engine import reading
from db.models import Job, Sweep
from lab.sweep import SweepRequest
from runner import zoo
from tests.conftest import ROOT
from tests.unit.test_signin import AUTH

APP = str(ROOT / "dashboard" / "main.py")
ISS = "https://id.example.org"
ALICE = {"is_logged_in": True, "iss": ISS, "sub": "alice", "email": "alice@example.org", "email_verified": True,
         "name": "Alice Example"}
# another account at the provider that claims Alice's address and name, which the provider does not vouch for
MALLORY = {"is_logged_in": True, "iss": ISS, "sub": "mallory", "email": "alice@example.org", "name": "Alice Example"}


@pytest.fixture
def lab(db_url, engine, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")
    monkeypatch.setenv("COMPILE_LAB_SIGNIN", "oidc")
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(engine, "host:1:any:test", "host", 1, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "2.13.0", "models": models})
    req = SweepRequest(model="simplenet", batch_sizes=[1], device="cpu", process_repeats=1)
    _, (bobs,), _ = queue.submit(engine, req, None, created_by="bob@gpu-host")
    _, (alices,), _ = queue.submit(engine, req, None, created_by="alice@example.org")
    return {"engine": engine, "bobs": bobs, "alices": alices}


def page(name: str, user: dict, secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = secrets if secrets is not None else AUTH
    at.user = user
    at.switch_page(f"screens/{name}.py")
    return at.run()


def sidebar_text(at: AppTest) -> str:
    """The sidebar's words as a person reads them (Markdown's escapes and word joiners dropped)."""
    text = " ".join(str(e.value) for e in [*at.sidebar.markdown, *at.sidebar.caption])
    return text.replace("\\", "").replace(WORD_JOINER, "")


def shown(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("title", "markdown", "caption", "info", "error", "metric", "text")
                    for e in getattr(at, kind))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
@pytest.mark.parametrize("name", ["submit", "queue", "results", "compare", "job"])
def test_nobody_signed_in_sees_the_sign_in_button_alone(lab, name):
    at = page(name, {"is_logged_in": False})
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"] and not at.sidebar.children
    assert not (at.text_input or at.dataframe or at.metric), name
    assert "bob" not in shown(at) and "simplenet" not in shown(at)


def test_signed_in_the_sidebar_names_the_person_and_a_submit_records_them(lab):
    at = page("submit", ALICE)
    assert not at.exception
    sidebar = sidebar_text(at)
    assert "Signed in as **alice@example.org**" in sidebar and "Sign out" in [b.label for b in at.sidebar.button]
    assert "Alice Example: your provider's name for you" in sidebar
    at.button(key="f_submit").click().run()
    assert not at.exception
    with reading(lab["engine"]) as s:
        assert s.query(Sweep).order_by(Sweep.id.desc()).first().created_by == f"{ISS}#alice"


def test_an_account_claiming_alice_s_address_unverified_is_not_alice(lab):
    at = page("queue", MALLORY)
    assert not at.exception
    sidebar = sidebar_text(at)
    assert f"Signed in as **{ISS}#mallory**" in sidebar and "alice@" not in sidebar
    assert "vouches for no e-mail address" in sidebar
    box = next(t for t in at.text_input if t.label == "Job ids")
    box.input(str(lab["alices"]))
    next(b for b in at.button if b.label == "Cancel jobs").click().run()
    assert not at.exception and not at.success
    assert any("only its submitter may cancel it" in e.value for e in at.error)
    with reading(lab["engine"]) as s:
        assert s.get(Job, lab["alices"]).status == "queued"


def test_queue_cancels_the_submitter_s_jobs_only(lab):
    at = page("queue", ALICE)
    assert any("You may cancel the jobs of sweeps you submitted" in c.value for c in at.caption)
    box = next(t for t in at.text_input if t.label == "Job ids")
    box.input(f"{lab['bobs']}, {lab['alices']}")
    next(b for b in at.button if b.label == "Cancel jobs").click().run()
    assert not at.exception
    assert any(f"Cancelled #{lab['alices']}" in s.value for s in at.success)
    assert any("only its submitter may cancel it" in e.value for e in at.error)
    with reading(lab["engine"]) as s:
        assert {j: s.get(Job, j).status for j in (lab["bobs"], lab["alices"])} == {
            lab["bobs"]: "queued", lab["alices"]: "cancelled"}


def test_with_sign_in_off_the_queue_says_anyone_may_cancel(lab, monkeypatch):
    monkeypatch.setenv("COMPILE_LAB_SIGNIN", "off")
    at = page("queue", {})
    assert any("Sign-in is off: anyone who opens this page may cancel any job" in c.value for c in at.caption)
    assert any("Sign-in is off" in c.value for c in at.sidebar.caption)
    box = next(t for t in at.text_input if t.label == "Job ids")
    box.input(str(lab["bobs"]))
    next(b for b in at.button if b.label == "Cancel jobs").click().run()
    assert any(f"Cancelled #{lab['bobs']}" in s.value for s in at.success)


def test_sign_in_asked_for_but_not_configured_serves_nothing(lab):
    at = page("submit", ALICE, secrets={"client_id": "lab"})  # [auth] without its other fields
    assert not at.exception
    assert [e.value for e in at.error][0].startswith("Sign-in is switched on but cannot work")
    assert not at.button and not at.sidebar.children and not at.title
