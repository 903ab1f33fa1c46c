"""Who is at the browser. Sign-in is off by default; COMPILE_LAB_SIGNIN=oidc (Streamlit's st.login) or proxy (a
trusted reverse proxy's header) turns it on, and then no page, data or route is served to nobody. The rules:
docs/operations.md ("Sign-in for a team") and docs/dashboard-internals.md."""
from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import streamlit as st

from dashboard.markup import md

ENV_MODE = "COMPILE_LAB_SIGNIN"
ENV_HEADER = "COMPILE_LAB_PROXY_HEADER"
ENV_PROXIES = "COMPILE_LAB_PROXY_ADDRESSES"
DEFAULT_HEADER = "X-Forwarded-User"
MODES = ("off", "oidc", "proxy")
OIDC_FIELDS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")
# uvicorn, Streamlit's server, takes a connection's address from its X-Forwarded-For header when the connection comes
# from one of these (its default: the loopback addresses). The address checked here may then be the header's.
ENV_UVICORN_FORWARDED = "FORWARDED_ALLOW_IPS"
UVICORN_FORWARDED_DEFAULT = "127.0.0.1,::1"
LOOPBACK = ("127.0.0.1", "::1")  # what st.context.ip_address reports as None
MAX_ID = 200  # sweeps.created_by's width

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Identity:
    id: str  # stable: recorded as a sweep's submitter and as the actor of a change, compared when cancelling
    name: str  # shown beside the id; under OIDC the provider's name claim, which nobody vouches for: never compared
    email: str | None = None  # an address the provider vouches for: shown, and owns sweeps recorded under it

    @property
    def shown(self) -> str:
        """Who this is, in one line: the verified address, else the id."""
        return self.email or self.id

    @property
    def ids(self) -> tuple[str, ...]:
        """Every submitter that is this person: the id, and the verified address sweeps were once recorded under."""
        return (self.id, self.email) if self.email and self.email != self.id else (self.id,)

    def owns(self, submitter: str | None) -> bool:
        return submitter is not None and submitter in self.ids


@dataclass(frozen=True)
class SignIn:
    """The sign-in settings; `problem` set: sign-in was asked for and cannot work, so every page is refused."""
    mode: str = "off"
    problem: str | None = None
    header: str = DEFAULT_HEADER
    proxies: tuple[Network, ...] = ()
    rewriters: tuple[Network, ...] | None = ()  # where uvicorn believes X-Forwarded-For; None: from anywhere ("*")
    auth_found: bool = False  # an [auth] section exists (said in the sidebar while sign-in is off)

    @property
    def on(self) -> bool:
        return self.mode != "off"


def networks(text: str) -> tuple[Network, ...]:
    """'10.0.0.2, 192.168.1.0/24 ::1' -> networks; a ValueError names what is no address."""
    out = []
    for part in [p for p in re.split(r"[,\s]+", text or "") if p]:
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an IP address or network (e.g. 10.0.0.2 or 10.0.0.0/24)") from None
    return tuple(out)


def settings(env: Mapping[str, str], auth: Mapping | None, authlib: bool = True) -> SignIn:
    """The sign-in mode from the environment and the secrets file's [auth] section; never raises."""
    mode = (env.get(ENV_MODE) or "off").strip().lower()
    found = bool(auth)
    if mode == "off":
        return SignIn(auth_found=found)
    if mode == "oidc":
        missing = [f for f in OIDC_FIELDS if not (auth or {}).get(f)]
        problem = (f"{ENV_MODE}=oidc, but the secrets file has no [auth] section" if not auth
                   else f"{ENV_MODE}=oidc, but [auth] in the secrets file lacks {', '.join(missing)}" if missing
                   else f"{ENV_MODE}=oidc needs Authlib (pip install Authlib)" if not authlib else None)
        return SignIn("oidc", problem, auth_found=found)
    if mode == "proxy":
        header = (env.get(ENV_HEADER) or DEFAULT_HEADER).strip()
        if not re.fullmatch(r"[A-Za-z0-9-]+", header):
            return SignIn("proxy", f"{ENV_HEADER}={header!r} is not a header name")
        try:
            proxies = networks(env.get(ENV_PROXIES, ""))
        except ValueError as e:
            return SignIn("proxy", f"{ENV_PROXIES}: {e}")
        if not proxies:
            return SignIn("proxy", f"{ENV_MODE}=proxy, but {ENV_PROXIES} names no proxy address")
        forwarded = env.get(ENV_UVICORN_FORWARDED, UVICORN_FORWARDED_DEFAULT)
        rewriters = None if forwarded.strip() == "*" else _lenient_networks(forwarded)
        return SignIn("proxy", None, header, proxies, rewriters, found)
    return SignIn(mode, f"{ENV_MODE}={mode!r}: use one of {', '.join(MODES)}")


def _lenient_networks(text: str) -> tuple[Network, ...]:
    out = []
    for part in [p for p in re.split(r"[,\s]+", text) if p]:
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:  # a name uvicorn matches literally (a unix socket): never an IP peer
            pass
    return tuple(out)


def _address(text: str):
    ip = ipaddress.ip_address(text)
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped else ip


def _inside(ip, nets: Sequence[Network]) -> bool:
    return any(ip.version == n.version and ip in n for n in nets)


def untrusted(s: SignIn, peer: str | None, forwarded_for: bool) -> str | None:
    """Why a connection from `peer` (None: this machine's loopback, as st.context.ip_address says it) is not the
    proxy's; None when it is. With an X-Forwarded-For header, uvicorn may have put the header's address in place of
    the connection's: believed only when every address uvicorn takes the header from is a proxy too."""
    shown = peer or "this machine"
    try:
        candidates = [_address(p) for p in (LOOPBACK if peer is None else (peer,))]
    except ValueError:
        return f"this connection's address ({shown}) is no IP address"
    if not any(_inside(ip, s.proxies) for ip in candidates):
        return f"this connection comes from {shown}, which is not the lab's proxy ({ENV_PROXIES})"
    if forwarded_for and (s.rewriters is None or not all(
            any(r.version == p.version and r.subnet_of(p) for p in s.proxies) for r in s.rewriters)):
        return (f"the server may have taken this connection's address from its X-Forwarded-For header: start it with "
                f"{ENV_UVICORN_FORWARDED}= (empty) so that the address checked is the connection's own")
    return None


def proxy_identity(s: SignIn, peer: str | None, values: Sequence[str], forwarded_for: bool) -> Identity | None:
    """The person the proxy names in `values` (every value of the header), if the connection is the proxy's."""
    if proxy_refusal(s, peer, values, forwarded_for):
        return None
    who = values[0].strip()[:MAX_ID]
    return Identity(who, who)


def proxy_refusal(s: SignIn, peer: str | None, values: Sequence[str], forwarded_for: bool) -> str | None:
    """Why nobody is signed in by the proxy on this connection (None: someone is). Two values of the header are
    refused: one of them came from the browser."""
    why = untrusted(s, peer, forwarded_for)
    if why:
        return why
    if len(values) > 1:
        return f"the {s.header} header came {len(values)} times"
    if not values or not values[0].strip():
        return f"the proxy named nobody (no {s.header} header)"
    return None


def subject_id(iss: str, sub: str) -> str:
    """A person under OIDC: `iss#sub` (an issuer is a URL without a fragment, so the first `#` parts the two). When
    that is longer than a sweep's submitter column holds (or the issuer breaks the rule), a digest of both instead:
    cutting it short could make two people one."""
    ident = f"{iss}#{sub}"
    if len(ident) <= MAX_ID and "#" not in iss:
        return ident
    return "oidc-sha256:" + hashlib.sha256(json.dumps([iss, sub]).encode()).hexdigest()


def _text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def from_claims(user: Mapping) -> Identity | None:
    """The person an OIDC sign-in names (st.user's claims: the ID token's), or None when nobody is signed in or the
    claims name no subject. Only `iss` and `sub` say who it is; `email` counts only with `email_verified` true (a
    provider that leaves the claim out, or sends anything but true, vouches for nothing)."""
    if not user or user.get("is_logged_in") is not True:
        return None
    iss, sub = _text(user.get("iss")), _text(user.get("sub"))
    if iss is None or sub is None:
        return None
    email = _text(user.get("email")) if user.get("email_verified") is True else None
    ident = subject_id(iss, sub)
    name = _text(user.get("name")) or _text(user.get("preferred_username")) or email or ident
    return Identity(ident, name, email)


def _auth_section() -> dict:
    try:  # st.secrets, not Streamlit's own reader: AppTest's secrets reach it
        if not st.secrets.load_if_toml_exists():
            return {}
        section = st.secrets.get("auth")
    except Exception:  # an unreadable secrets file: as if it had no [auth] (oidc then refuses, saying so)
        return {}
    return section.to_dict() if hasattr(section, "to_dict") else dict(section or {})


def config() -> SignIn:
    from streamlit.auth_util import is_authlib_installed

    return settings(os.environ, _auth_section(), is_authlib_installed())


def current(s: SignIn) -> Identity | None:
    """The person signed in to this session, under settings `s` (None: nobody, or sign-in off)."""
    if s.problem or not s.on:
        return None
    if s.mode == "oidc":
        return from_claims(st.user.to_dict())
    headers = st.context.headers
    return proxy_identity(s, st.context.ip_address, headers.get_all(s.header), "x-forwarded-for" in headers)


def gate() -> Identity | None:
    """The frame's first step: the signed-in person (None with sign-in off). With sign-in on and nobody signed in,
    the page shows a sign-in button (oidc) or says why not (proxy), and stops."""
    s = config()
    if s.problem:
        st.error(f"Sign-in is switched on but cannot work: {md(s.problem)}. No page is served until it is fixed "
                 "(docs/operations.md, “Sign-in for a team”).", icon=":material/lock:")
        st.stop()
    if not s.on:
        return None
    who = current(s)
    if who is not None:
        return who
    st.title("Compile Lab")
    if s.mode == "oidc":
        st.info("Sign in to see this lab's experiments and submit your own.", icon=":material/lock:")
        st.button("Sign in", type="primary", icon=":material/login:", on_click=st.login)
    else:
        headers = st.context.headers
        why = proxy_refusal(s, st.context.ip_address, headers.get_all(s.header), "x-forwarded-for" in headers)
        st.error(f"Not signed in: {md(why)}. This lab signs people in through its proxy: open it at the proxy's "
                 "address.", icon=":material/lock:")
    st.stop()


def acting() -> Identity | None:
    """The signed-in person a page acts for; None with sign-in off. Stops the page when sign-in is on and nobody is
    signed in (a fragment reruns without the frame's gate)."""
    s = config()
    if not s.on and not s.problem:
        return None
    who = current(s)
    if who is None:
        st.error("Sign in first.", icon=":material/lock:")
        st.stop()
    return who


def sidebar(who: Identity | None) -> None:
    """Who is signed in, with a sign-out button; with sign-in off, that anyone here may submit and cancel."""
    if who is None:
        s = config()
        hint = f" (the secrets file has an [auth] section: `{ENV_MODE}=oidc` turns it on)" if s.auth_found else ""
        st.caption(f":material/lock_open: Sign-in is off: anyone who opens this page may submit sweeps and cancel "
                   f"any job{hint}.")
        return
    oidc = config().mode == "oidc"
    st.markdown(f":material/person: Signed in as **{md(who.shown)}**")
    if who.name not in (who.shown, who.id):  # a name nobody vouches for: said to be the provider's, under the id
        st.caption(f"{md(who.name)}: your provider's name for you")
    if who.id != who.shown:
        st.caption(f"Recorded as {md(who.id)}")
    elif oidc:
        st.caption("Your provider vouches for no e-mail address: the lab knows you by this subject.")
    if oidc:
        st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="signout")


def refusal(request) -> str | None:
    """Why a request to a file route beside the pages is refused (None: it is served): the pages' rule, from the
    request's own cookie or proxy header."""
    s = config()
    if s.problem:
        return "Sign-in is switched on but misconfigured: nothing is served until it is fixed."
    if not s.on:
        return None
    if s.mode == "oidc":
        who = from_claims(_cookie_user(request))
    else:
        peer = request.client.host if request.client else ""
        who = proxy_identity(s, peer, request.headers.getlist(s.header), "x-forwarded-for" in request.headers)
    return None if who else "Sign in first: this lab's pages and files are for signed-in people."


def _cookie_user(request) -> dict:
    """The claims in Streamlit's signed identity cookie, checked as its WebSocket checks them (signature, and the
    origin it was issued for); {} when absent or not valid. Streamlit's reader is internal: any change fails closed."""
    try:
        from streamlit.auth_util import get_origin_from_redirect_uri
        from streamlit.web.server.starlette import starlette_websocket as ws
        from streamlit.web.server.starlette.starlette_server_config import USER_COOKIE_NAME

        decoded = ws._get_signed_cookie_with_chunks(dict(request.cookies), USER_COOKIE_NAME)
        origin = get_origin_from_redirect_uri()
        return ws._parse_decoded_user_cookie(decoded, origin) if decoded and origin else {}
    except Exception:
        return {}
