"""dashboard.markup.md: a text for Markdown is shown as typed. The browser side (no image fetched, no link made)
is tests/e2e/test_markup_browser.py; here, what md() hands Streamlit."""
import re

from dashboard.markup import WORD_JOINER, md

# the patterns by which GitHub-flavoured Markdown makes links of plain text (remark-gfm's autolink pass, as
# Streamlit's frontend bundles it): they run on parsed text, where backslash escapes are already gone
URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE)
EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)")


def parsed(escaped: str) -> str:
    """The text a CommonMark parser keeps of md()'s output: each backslash escape is its character."""
    return re.sub(r"\\(.)", r"\1", escaped)


def test_urls_and_addresses_stay_text_and_read_as_typed():
    for text in ("see http://tracker.invalid/x.png", "HTTPS://a.b", "www.example.org", "WWW.Example.org",
                 "ops@lab.example.org", "[docs](https://a.b/c) ![i](http://t.invalid/p.png) **b** :red[r]"):
        text_shown = parsed(md(text))
        assert not URL.search(text_shown) and not EMAIL.search(text_shown), text
        assert text_shown.replace(WORD_JOINER, "") == text


def test_plain_text_is_unchanged_but_for_escapes():
    assert parsed(md("resnet18 · bs 8 (2.13.0+cu128)")) == "resnet18 · bs 8 (2.13.0+cu128)"
