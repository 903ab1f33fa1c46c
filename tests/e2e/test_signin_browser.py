"""Sign-in in a real browser (dashboard.state.auth).

OIDC: a real OpenID Connect provider (oidc-provider-mock's server, started here on a free port) and the app started
with `[auth]` secrets pointing at it: the sign-in flow through the provider's page, the signed-in person in the sidebar
and (as the provider's subject) as the submitter of a sweep submitted from the form, cancel allowed on one's own sweep
(and on one recorded under one's verified address) and refused on another's, sign-out through the provider, and a
browser with no session that sees the sign-in prompt only and stores nothing. Two other accounts at the provider
claim Alice's address and name, one without `email_verified`, one with it false: neither is Alice, neither is shown as
her, neither may cancel her jobs.

Proxy mode: the user header is believed on a connection from the proxy's address, and ignored on one from any other:
two relays add the header to every request as a reverse proxy does, one connecting to the app from 127.0.0.1 (the
proxy's address), one from 127.0.0.2."""
import base64
import os
import re
import secrets
import socket
import threading
from contextlib import contextmanager

import pytest
from sqlalchemy import func, select

from dashboard.markup import WORD_JOINER
from db import queue
from db.database import get_engine
from db.engine import reading
from db.models import Job, Sweep
from lab.sweep import SweepRequest
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_markup_browser import register_worker
from tests.e2e.test_server_handshake import running_app
from tests.faults.outage import pipe

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
ALICE = {"email": "alice@example.org", "email_verified": True, "name": "Alice Example"}
# accounts whose e-mail claim is Alice's address, which the provider does not vouch for
IMPOSTORS = {"mallory": {"email": "alice@example.org", "name": "Alice Example"},  # no email_verified (Entra ID's way)
             "eve": {"email": "alice@example.org", "email_verified": False, "name": "Alice Example"}}


def jobs(engine) -> int:
    with reading(engine) as s:
        return s.scalar(select(func.count()).select_from(Job))


def sidebar(page) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text().replace(WORD_JOINER, "") if page.locator(
        '[data-testid="stSidebar"]').count() else ""


@pytest.fixture
def oidc_lab(tmp_path):
    from oidc_provider_mock import User, run_server_in_thread

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    register_worker(engine)  # Submit offers the models of live workers
    # another person's sweep, from the CLI (the OS user is its submitter)
    _, (theirs,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1], device="cpu",
                                                        process_repeats=1), None, created_by="bob@gpu-host")
    users = [User(sub="alice", claims=ALICE)] + [User(sub=sub, claims=c) for sub, c in IMPOSTORS.items()]
    with run_server_in_thread(user_claims=users) as provider:
        issuer = f"http://127.0.0.1:{provider.server_port}"  # another host name than the app's: cookies apart
        alice_req = SweepRequest(model="simplenet", batch_sizes=[1], device="cpu", process_repeats=1)
        # Alice's sweeps: one under her subject, one under her address (recorded so before subjects were the person)
        _, (alices,), _ = queue.submit(engine, alice_req, None, created_by=f"{issuer}#alice")
        _, (legacy,), _ = queue.submit(engine, alice_req, None, created_by="alice@example.org")
        (tmp_path / "secrets.toml").write_text(
            "[auth]\n"
            'redirect_uri = "http://localhost:{port}/oauth2callback"\n'  # Streamlit fills in its port
            f'cookie_secret = "{secrets.token_hex(32)}"\n'
            'client_id = "compile-lab"\n'
            'client_secret = "not-a-secret-here"\n'
            f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n')
        with running_app(tmp_path, url, {"COMPILE_LAB_SIGNIN": "oidc"}, "--secrets.files",
                      str(tmp_path / "secrets.toml")) as port:
            yield {"url": f"http://localhost:{port}", "engine": engine, "theirs": theirs, "issuer": issuer,
                   "alices": alices, "legacy": legacy}


def sign_in(chromium, lab: dict, account: str):
    """A fresh browser context signed in at the provider as `account` (one of its predefined users); its page, on
    Submit with the form and the sidebar's account block drawn."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(lab["url"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/oauth2/authorize"))  # the provider's own page
    page.get_by_role("button", name=account, exact=True).click()  # its predefined user
    page.wait_for_url(re.compile(r"^http://localhost:\d+/"))
    page.get_by_role("button", name="Submit 1 job").wait_for()
    # the sidebar's account block can be drawn after the form, and line by line: read the sidebar only once its last
    # element, the sign-out button (after the name and subject lines), is there
    page.locator('[data-testid="stSidebar"]').get_by_text("Signed in as").first.wait_for()
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Sign out").wait_for()
    return page


def cancel_on_queue(page, ids: list[int]) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Queue").click()
    page.wait_for_url(re.compile(r"/queue"))
    page.get_by_text("You may cancel the jobs of sweeps you submitted").wait_for()
    page.get_by_role("textbox", name="Job ids").fill(", ".join(map(str, ids)))
    page.get_by_role("button", name="Cancel jobs").click()


def refusals(page) -> str:
    errors = page.locator('[data-testid="stAlertContentError"]').filter(has_text="only its submitter may cancel it")
    errors.first.wait_for()
    return errors.first.inner_text().replace(WORD_JOINER, "")


def test_oidc_sign_in_submit_cancel_and_sign_out(oidc_lab, browser, tmp_path):  # noqa: F811
    engine, base, issuer = oidc_lab["engine"], oidc_lab["url"], oidc_lab["issuer"]
    page = sign_in(browser, oidc_lab, "alice")
    submit = page.get_by_role("button", name="Submit 1 job")
    # her verified address names her; her provider's name for her is said to be that; she is recorded as her subject
    assert "Signed in as alice@example.org" in sidebar(page) and "Alice Example: your provider's name for you" in \
        sidebar(page) and f"Recorded as {issuer}#alice" in sidebar(page)
    # the file routes beside the pages know the session's cookie: the report is looked up (this job has none)
    assert page.request.get(f"{base}/tlparse/{oidc_lab['theirs']}/index.html").status == 404
    submit.click()
    page.get_by_text(re.compile(r"1 job queued")).wait_for()
    with reading(engine) as s:
        mine = s.scalars(select(Sweep).order_by(Sweep.id.desc())).first()
        (job,) = s.scalars(select(Job.id).where(Job.sweep_id == mine.id)).all()
        assert mine.created_by == f"{issuer}#alice"

    # cancel: one's own jobs (the one recorded under her verified address too), yes; a job of another's sweep, no
    # (with the reason), and it stays queued
    cancel_on_queue(page, [job, oidc_lab["legacy"], oidc_lab["theirs"]])
    page.get_by_text(f"Cancelled #{job} (was queued), #{oidc_lab['legacy']} (was queued)").wait_for()
    assert f"job {oidc_lab['theirs']}: its sweep was submitted by bob@gpu-host" in refusals(page)
    with reading(engine) as s:
        assert [s.get(Job, j).status for j in (job, oidc_lab["legacy"], oidc_lab["theirs"], oidc_lab["alices"])] == [
            "cancelled", "cancelled", "queued", "queued"]
    # the sweep says who submitted it (the Queue's record panel; its table says so too, in a canvas grid)
    page.get_by_text("A sweep's record").click()
    caption = page.get_by_text(re.compile(r"^Submitted by")).first
    caption.wait_for()
    assert caption.inner_text().replace(WORD_JOINER, "") == f"Submitted by {issuer}#alice"
    page.screenshot(path=str(tmp_path / "signed-in-queue.png"))

    # sign out: through the provider's end-session page, back to the sign-in prompt
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/oauth2/end_session"))
    page.get_by_role("button", name="End session").click()
    page.get_by_role("button", name="Sign in").wait_for()
    assert "Alice" not in page.content()
    page.goto(base + "/queue")
    page.get_by_role("button", name="Sign in").wait_for()
    assert "Alice" not in page.content() and page.get_by_role("textbox", name="Job ids").count() == 0


@pytest.mark.parametrize("account", list(IMPOSTORS))
def test_oidc_an_account_claiming_alice_s_address_unverified_is_not_alice(oidc_lab, browser, account, tmp_path):  # noqa: F811
    engine, issuer = oidc_lab["engine"], oidc_lab["issuer"]
    page = sign_in(browser, oidc_lab, account)
    shown = sidebar(page)
    assert "alice@example.org" not in shown and "Signed in as Alice" not in shown, shown
    assert f"Signed in as {issuer}#{account}" in shown and "vouches for no e-mail address" in shown, shown
    page.get_by_role("button", name="Submit 1 job").click()
    page.get_by_text(re.compile(r"1 job queued")).wait_for()
    with reading(engine) as s:
        assert s.scalars(select(Sweep.created_by).order_by(Sweep.id.desc())).first() == f"{issuer}#{account}"
        assert s.scalar(select(func.count()).select_from(Sweep).where(
            Sweep.created_by.in_(["alice@example.org", f"{issuer}#alice"]))) == 2  # Alice's own two, no more

    # Alice's jobs, under her subject and under her address: both refused, both still queued
    cancel_on_queue(page, [oidc_lab["alices"], oidc_lab["legacy"]])
    refused = refusals(page)
    assert f"job {oidc_lab['alices']}: its sweep was submitted by {issuer}#alice" in refused, refused
    assert f"job {oidc_lab['legacy']}: its sweep was submitted by alice@example.org" in refused, refused
    assert page.get_by_text(re.compile(r"^Cancelled")).count() == 0
    with reading(engine) as s:
        assert [s.get(Job, j).status for j in (oidc_lab["alices"], oidc_lab["legacy"])] == ["queued", "queued"]
    # the sweep it submitted is recorded and shown as its own subject, never as Alice
    page.get_by_text("A sweep's record").click()
    caption = page.get_by_text(re.compile(r"^Submitted by")).first
    caption.wait_for()
    assert caption.inner_text().replace(WORD_JOINER, "") == f"Submitted by {issuer}#{account}"
    page.screenshot(path=str(tmp_path / f"impostor-{account}.png"))


def test_oidc_a_browser_without_a_session_sees_nothing_and_stores_nothing(oidc_lab, browser, tmp_path):  # noqa: F811
    engine, base = oidc_lab["engine"], oidc_lab["url"]
    before = jobs(engine)
    context = browser.new_context(viewport={"width": 1400, "height": 1100})  # no cookies
    page = context.new_page()
    page.set_default_timeout(60_000)
    for path in ("/", "/submit", "/queue", "/results", f"/job?job={oidc_lab['theirs']}"):
        page.goto(base + path)
        page.get_by_role("button", name="Sign in").wait_for()
        page.wait_for_timeout(300)  # a page that ran on would have drawn by now
        main = page.locator('[data-testid="stMain"]').inner_text()
        assert "Sign in to see this lab" in main, (path, main)
        for leak in ("Submit", "Workers alive", "simplenet", "bob", "Database", "Queue"):
            assert leak not in main + sidebar(page), (path, leak)
    # the file routes beside the pages refuse too
    for route in (f"/tlparse/{oidc_lab['theirs']}/index.html", "/export/any-token/csv"):
        got = page.request.get(base + route)
        assert got.status == 401 and "Sign in first" in got.text(), (route, got.status)
    # a forged identity cookie (not signed with the lab's secret) is no session either
    forged = base64.b64encode(b'{"is_logged_in": true, "email": "bob@gpu-host"}').decode()
    context.add_cookies([{"name": "_streamlit_user", "value": f"2|1:0|10:1700000000|15:_streamlit_user|{forged}|00",
                          "url": base}])
    page.goto(base + "/queue")
    page.get_by_role("button", name="Sign in").wait_for()
    page.screenshot(path=str(tmp_path / "signed-out.png"))
    assert jobs(engine) == before
    with reading(engine) as s:
        assert s.get(Job, oidc_lab["theirs"]).status == "queued"
    context.close()


def with_header(head: bytes, header: tuple[str, str]) -> bytes:
    """A request's head (through its blank line) with `header` added, as a reverse proxy adds it. A plain request
    also gets `Connection: close`, so that the browser's next request opens a new connection and gets the header
    too; a WebSocket upgrade keeps its `Connection: Upgrade`."""
    lines = head[:-4].split(b"\r\n")
    upgrade = any(line.lower().startswith(b"upgrade:") for line in lines[1:])
    if not upgrade:
        lines = [line for line in lines if not line.lower().startswith(b"connection:")] + [b"Connection: close"]
    return b"\r\n".join([*lines, f"{header[0]}: {header[1]}".encode()]) + b"\r\n\r\n"


@contextmanager
def relay_from(source: str, port: int, header: tuple[str, str] | None = None):
    """A TCP relay on a free port to the app's `port`, its connections to the app made from address `source` (what
    the app sees as the peer); with `header`, it adds that header to every request, the WebSocket's upgrade included,
    as the lab's reverse proxy does (a browser's own extra headers do not reach the WebSocket in every Chromium).
    Yields the relay's port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def connect(client: socket.socket):
        upstream = socket.socket()
        try:
            upstream.bind((source, 0))
            upstream.connect(("127.0.0.1", port))
        except OSError:  # the app is gone: the browser sees the connection closed, not a hang
            client.close(), upstream.close()
            return
        if header is not None:
            got = b""
            while b"\r\n\r\n" not in got:
                if not (data := client.recv(65536)):
                    client.close(), upstream.close()
                    return
                got += data
            head, rest = got.split(b"\r\n\r\n", 1)
            upstream.sendall(with_header(head + b"\r\n\r\n", header) + rest)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            threading.Thread(target=connect, args=(client,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_proxy_header_is_believed_from_the_proxy_address_only(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    register_worker(engine)
    env = {"COMPILE_LAB_SIGNIN": "proxy", "COMPILE_LAB_PROXY_ADDRESSES": "127.0.0.1",
           "FORWARDED_ALLOW_IPS": ""}  # as docs/operations.md says: the address checked is the connection's own
    carol = ("X-Forwarded-User", "carol@example.org")  # what the proxy adds to every request
    with running_app(tmp_path, url, env) as port, relay_from("127.0.0.1", port, carol) as proxy, \
            relay_from("127.0.0.2", port, carol) as elsewhere:
        trusted = browser.new_context(viewport={"width": 1400, "height": 1100})
        page = trusted.new_page()
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{proxy}/")
        page.get_by_role("button", name="Submit 1 job").wait_for()
        page.locator('[data-testid="stSidebar"]').get_by_text("Signed in as").first.wait_for()  # drawn after the form
        assert "Signed in as carol@example.org" in sidebar(page)
        # the workers' block is drawn after the account block: a sign-out button would be there by then
        page.locator('[data-testid="stSidebar"]').get_by_text("Workers alive").wait_for()
        assert page.get_by_role("button", name="Sign out").count() == 0  # the proxy holds the session
        assert page.request.get(f"http://localhost:{proxy}/tlparse/1/index.html").status == 404  # looked up: no job 1
        trusted.close()

        for where, why in ((elsewhere, "comes from 127.0.0.2, which is not the lab's proxy"),
                           (port, "the proxy named nobody (no X-Forwarded-User header)")):
            other = browser.new_context(viewport={"width": 1400, "height": 1100})
            page = other.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"http://localhost:{where}/queue")
            page.get_by_text("Not signed in").wait_for()
            assert why in page.locator('[data-testid="stMain"]').inner_text(), where
            page.wait_for_timeout(300)
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert "carol" not in main + sidebar(page) and "Workers alive" not in sidebar(page), (where, main)
            assert page.get_by_role("textbox", name="Job ids").count() == 0
            assert page.request.get(f"http://localhost:{where}/tlparse/1/index.html").status == 401
            other.close()
    assert jobs(engine) == 0
