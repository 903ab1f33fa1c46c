"""Sign-in's decisions (dashboard.state.auth) and the cancel permission (db.submitters): which mode the environment and
the secrets file ask for, and every way a sign-in that cannot work refuses instead of serving the lab open; when a
proxy's header is believed; who an OIDC sign-in names; and a cancel refused to anyone but the sweep's submitter."""
import pytest

from dashboard.state import auth
from dashboard.state.auth import Identity, settings
from db import queue, submitters
from db.database import get_engine
from db.engine import reading
from db.models import Job, Sweep
from lab.sweep import SweepRequest

AUTH = {"redirect_uri": "https://lab.example.org/oauth2callback", "cookie_secret": "x" * 32, "client_id": "lab",
        "client_secret": "s", "server_metadata_url": "https://id.example.org/.well-known/openid-configuration"}
PROXY = {"COMPILE_LAB_SIGNIN": "proxy", "COMPILE_LAB_PROXY_ADDRESSES": "10.0.0.2, 192.168.7.0/24",
         "FORWARDED_ALLOW_IPS": ""}


def test_sign_in_is_off_by_default_even_with_auth_secrets():
    assert settings({}, None) == auth.SignIn()
    assert not settings({}, AUTH).on and settings({}, AUTH).auth_found  # said in the sidebar, not switched on
    assert settings({"COMPILE_LAB_SIGNIN": " OFF "}, None).mode == "off"


def test_oidc_needs_every_auth_field_and_authlib():
    on = {"COMPILE_LAB_SIGNIN": "oidc"}
    assert settings(on, AUTH) == auth.SignIn("oidc", None, auth_found=True)
    assert "no [auth] section" in settings(on, None).problem
    partial = {k: v for k, v in AUTH.items() if k not in ("client_secret", "cookie_secret")}
    assert settings(on, partial).problem.endswith("lacks cookie_secret, client_secret")
    assert "Authlib" in settings(on, AUTH, authlib=False).problem


def test_proxy_mode_needs_addresses_and_a_header_name():
    s = settings(PROXY, None)
    assert s.mode == "proxy" and s.problem is None and s.header == "X-Forwarded-User" and len(s.proxies) == 2
    assert settings({**PROXY, "COMPILE_LAB_PROXY_HEADER": "X-Auth-Email"}, None).header == "X-Auth-Email"
    assert "names no proxy address" in settings({"COMPILE_LAB_SIGNIN": "proxy"}, None).problem
    assert "'proxy.example' is not an IP address" in settings(
        {**PROXY, "COMPILE_LAB_PROXY_ADDRESSES": "proxy.example"}, None).problem
    assert "is not a header name" in settings({**PROXY, "COMPILE_LAB_PROXY_HEADER": "X User:"}, None).problem


def test_an_unknown_mode_refuses_instead_of_serving_open():
    s = settings({"COMPILE_LAB_SIGNIN": "yes"}, AUTH)
    assert s.on and "use one of off, oidc, proxy" in s.problem


def test_the_proxy_header_is_believed_from_a_proxy_address_only():
    s = settings(PROXY, None)
    assert auth.proxy_identity(s, "10.0.0.2", ["carol@example.org"], False) == Identity("carol@example.org",
                                                                                        "carol@example.org")
    assert auth.proxy_identity(s, "192.168.7.40", ["carol"], False) is not None  # a network
    assert auth.proxy_identity(s, "::ffff:10.0.0.2", ["carol"], False) is not None  # IPv4 on a dual-stack socket
    for peer in ("10.0.0.3", None, "not-an-address"):  # another host; this machine (not listed); nonsense
        assert auth.proxy_identity(s, peer, ["carol"], False) is None, peer
    assert "comes from 10.0.0.3, which is not the lab's proxy" in auth.proxy_refusal(s, "10.0.0.3", ["carol"], False)
    assert auth.proxy_refusal(s, "10.0.0.2", [], False) == "the proxy named nobody (no X-Forwarded-User header)"
    assert auth.proxy_refusal(s, "10.0.0.2", ["carol", "mallory"], False) == "the X-Forwarded-User header came 2 times"
    loopback = settings({**PROXY, "COMPILE_LAB_PROXY_ADDRESSES": "127.0.0.1"}, None)
    assert auth.proxy_identity(loopback, None, ["carol"], False) is not None  # a proxy on this machine


def test_an_address_uvicorn_may_have_taken_from_x_forwarded_for_is_not_believed():
    """uvicorn replaces the peer by X-Forwarded-For's address when the peer is in FORWARDED_ALLOW_IPS (default the
    loopback ones): someone on this machine could then claim the proxy's address."""
    default = settings({k: v for k, v in PROXY.items() if k != "FORWARDED_ALLOW_IPS"}, None)
    assert auth.proxy_identity(default, "10.0.0.2", ["carol"], False) is not None  # no header: the real peer
    assert "FORWARDED_ALLOW_IPS= (empty)" in auth.proxy_refusal(default, "10.0.0.2", ["carol"], True)
    assert auth.proxy_identity(settings(PROXY, None), "10.0.0.2", ["carol"], True) is not None  # uvicorn trusts nobody
    anywhere = settings({**PROXY, "FORWARDED_ALLOW_IPS": "*"}, None)
    assert auth.proxy_identity(anywhere, "10.0.0.2", ["carol"], True) is None
    within = settings({**PROXY, "FORWARDED_ALLOW_IPS": "10.0.0.2"}, None)  # only from the proxy itself
    assert auth.proxy_identity(within, "10.0.0.2", ["carol"], True) is not None


ISS = "https://id.example.org"


def claims(**extra) -> dict:
    return {"is_logged_in": True, "iss": ISS, "sub": "u-1", **extra}


def test_an_oidc_sign_in_is_the_issuer_s_subject_whatever_its_e_mail_claim_says():
    assert auth.from_claims({}) is None and auth.from_claims({"is_logged_in": False, "iss": ISS, "sub": "u"}) is None
    subject = f"{ISS}#u-1"
    # no email_verified (Microsoft Entra ID, Okta's thin ID tokens): the address is not the person, nor shown
    absent = auth.from_claims(claims(email="alice@example.org", name="Alice Example"))
    assert absent == Identity(subject, "Alice Example", None) and absent.shown == subject
    assert absent.ids == (subject,) and not absent.owns("alice@example.org")
    # email_verified false, or anything but true (a string is no vouching): the same
    for verified in (False, "true", 1, None):
        who = auth.from_claims(claims(email="alice@example.org", email_verified=verified))
        assert (who.id, who.email, who.name) == (subject, None, subject), verified
    # vouched for: shown, and it owns the sweeps once recorded under it; the person is still the subject
    alice = auth.from_claims(claims(email="alice@example.org", email_verified=True, preferred_username="ann"))
    assert alice == Identity(subject, "ann", "alice@example.org") and alice.shown == "alice@example.org"
    assert alice.owns(subject) and alice.owns("alice@example.org") and not alice.owns("bob@gpu-host")
    assert not alice.owns(None) and not alice.owns("u-1")  # a bare subject: any issuer's


def test_an_oidc_sign_in_without_a_subject_or_an_issuer_is_nobody():
    assert auth.from_claims({"is_logged_in": True, "email": "a@x", "email_verified": True}) is None
    assert auth.from_claims({"is_logged_in": True, "iss": ISS, "email": "a@x", "email_verified": True}) is None
    assert auth.from_claims({"is_logged_in": True, "sub": "u-1", "name": "A"}) is None
    assert auth.from_claims(claims(sub="")) is None and auth.from_claims(claims(sub=" ")) is None
    assert auth.from_claims(claims(sub=123)) is None and auth.from_claims(claims(iss=None)) is None


def test_two_issuers_with_the_same_subject_are_two_people():
    here = auth.from_claims(claims(sub="42", email="a@x", email_verified=True))
    there = auth.from_claims({"is_logged_in": True, "iss": "https://other.example.org", "sub": "42"})
    assert here.id != there.id and not there.owns(here.id) and not here.owns(there.id)
    # an issuer that ends where another's subject begins: still two
    assert auth.subject_id("https://a.example/x", "y") != auth.subject_id("https://a.example/x#y", "")
    assert auth.subject_id("https://a#b", "c") != auth.subject_id("https://a", "b#c")


def test_a_subject_too_long_for_the_submitter_column_is_a_digest_never_cut_short():
    long_a, long_b = "s" * 300 + "a", "s" * 300 + "b"  # the same first 200 characters
    a, b = (auth.from_claims(claims(sub=s)).id for s in (long_a, long_b))
    assert a != b and len(a) <= auth.MAX_ID and len(b) <= auth.MAX_ID and a.startswith("oidc-sha256:")
    assert auth.from_claims(claims(sub=long_a)).id == a  # stable: the same person every time


@pytest.fixture
def two_sweeps(db_url):
    engine = get_engine(db_url)
    req = SweepRequest(model="simplenet", batch_sizes=[1], device="cpu", process_repeats=1)
    _, (alice,), _ = queue.submit(engine, req, None, created_by="alice@example.org")
    _, (cli,), _ = queue.submit(engine, req, None)  # the CLI's way: the OS user
    return engine, alice, cli


def test_cancel_is_allowed_to_the_submitter_only_with_sign_in_on(two_sweeps):
    engine, alice, cli = two_sweeps
    assert submitters.submitter(engine, cli) == queue.whoami() and submitters.submitter(engine, 999) is None
    with pytest.raises(submitters.NotSubmitter, match=f"job {cli}: its sweep was submitted by .*; only its submitter"):
        submitters.cancel_as(engine, cli, "alice@example.org")
    with pytest.raises(queue.QueueError, match="no such job"):
        submitters.cancel_as(engine, 999, "alice@example.org")
    assert submitters.cancel_as(engine, alice, "alice@example.org") == "queued"
    with reading(engine) as s:
        assert {j.id: j.status for j in s.query(Job)} == {alice: "cancelled", cli: "queued"}
        assert {sw.created_by for sw in s.query(Sweep)} == {"alice@example.org", queue.whoami()}


def test_cancel_by_one_person_s_ids_a_subject_and_a_verified_address(two_sweeps):
    engine, alice, cli = two_sweeps  # alice's sweep was recorded under her address, before subjects
    subject = f"{ISS}#u-1"
    with pytest.raises(submitters.NotSubmitter):
        submitters.cancel_as(engine, alice, (subject,))  # her subject alone: no address vouched for
    assert submitters.cancel_as(engine, alice, (subject, "alice@example.org")) == "queued"
    with pytest.raises(submitters.NotSubmitter):
        submitters.cancel_as(engine, cli, (subject, "alice@example.org"))


def test_cancel_with_sign_in_off_is_anyone_s(two_sweeps):
    engine, alice, cli = two_sweeps
    assert [submitters.cancel_as(engine, j, None) for j in (alice, cli)] == ["queued", "queued"]
