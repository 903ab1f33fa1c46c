"""The server defaults a lab can trust (.streamlit/config.toml, read by `streamlit run` from the project root)."""
import tomllib

from tests.conftest import ROOT


def test_bound_to_localhost_with_xsrf_protection_and_no_telemetry():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    assert config["server"]["enableXsrfProtection"] is True
    assert config["server"]["headless"] is True
    assert config["browser"]["gatherUsageStats"] is False
