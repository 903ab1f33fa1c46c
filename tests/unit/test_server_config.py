"""The server defaults a lab can trust (.streamlit/config.toml, read by `streamlit run` from the project root)."""
import tomllib

import pytest

from tests.conftest import ROOT


def test_bound_to_localhost_with_xsrf_protection_and_no_telemetry():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    assert config["server"]["enableXsrfProtection"] is True
    assert config["server"]["headless"] is True
    assert config["browser"]["gatherUsageStats"] is False
    assert config["server"]["fileWatcherType"] == "none"  # no half-reload of new code under a running app


def test_local_host_names_only_cors_on_and_no_error_details_in_the_browser():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert set(config["server"]["allowedHosts"]) == {"localhost", "127.0.0.1", "::1"}
    assert config["server"]["enableCORS"] is True
    assert config["client"]["showErrorDetails"] == "none"  # the traceback goes to the server's log


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_app_refuses_to_serve_beyond_localhost_unless_allowed(tmp_path, monkeypatch):
    """Started outside the project folder, Streamlit would not read .streamlit/config.toml."""
    import streamlit
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'lab.db'}")
    monkeypatch.setenv("COMPILE_LAB_EMBEDDED_WORKER", "0")
    real = streamlit.get_option  # config is read once per process: fake what a start elsewhere reads
    monkeypatch.setattr(streamlit, "get_option", lambda key: None if key == "server.address" else real(key))
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60)
    at.run()
    assert at.error and "listens beyond this machine" in at.error[0].value
    monkeypatch.setenv("COMPILE_LAB_ALLOW_REMOTE", "1")
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60)
    at.run()
    assert not at.error and not at.exception
