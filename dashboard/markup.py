"""Text a person typed (sweep names, errors, model and host names) shown as text, never as markup: one helper for
Streamlit's Markdown, one for plotly's HTML subset, applied where a value enters the markup
(docs/dashboard-internals.md: what either would otherwise do)."""
from __future__ import annotations

import html
import re

# every ASCII punctuation mark CommonMark lets a backslash escape, which covers Streamlit's own
# directives too (`:red[...]`, `:material/icon:`, `$...$` for LaTeX)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&'\"=^%@/])")
# GitHub-flavoured Markdown turns a URL or e-mail address in the parsed text into a link, escaped or not (its
# autolink pass runs on text, after escapes are gone): an invisible word joiner where each would match (between
# `:` and `//`, `www` and `.`, after `@`) keeps it text. It travels with a copied name; nothing else shows it.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def md(text) -> str:
    """`text` for a Markdown context: every character literal, nothing becomes a link, image or style."""
    return _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, str(text)))


def plot(text) -> str:
    """`text` for a plotly label, legend, hover or annotation: tags and entities shown as typed."""
    return html.escape(str(text), quote=False)


# st.html draws the page's own tables of text (dashboard.panels.answer_table): the browser lays them out at once, where
# st.dataframe first loads its grid's code and measures every cell on a canvas. Scoped to TABLE_CLASS;
# colours inherit the theme's text, lines are a grey that reads on light and dark.
TABLE_CLASS = "cl-table"
COLUMN_KINDS = {"": "", "num": "text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap",
                "name": "min-width:8rem", "wide": "min-width:13rem"}  # a column's kind -> its style
TABLE_CSS = ("<style>"
             f".{TABLE_CLASS}{{max-height:44rem;overflow:auto;margin-bottom:.5rem}}"
             f".{TABLE_CLASS} table{{border-collapse:collapse;width:100%;font-size:.8125rem;line-height:1.3}}"
             f".{TABLE_CLASS} th,.{TABLE_CLASS} td{{padding:.25rem .35rem;text-align:left;vertical-align:top;"
             "border-bottom:1px solid rgba(128,128,128,.25)}"
             f".{TABLE_CLASS} th{{font-weight:600;vertical-align:bottom;border-bottom-color:rgba(128,128,128,.6)}}"
             + "".join(f".{TABLE_CLASS} .{kind}{{{style}}}" for kind, style in COLUMN_KINDS.items() if kind)
             + f".{TABLE_CLASS} th.num{{white-space:normal}}.{TABLE_CLASS} tr.grey td{{opacity:.5}}"
             f".{TABLE_CLASS} .note{{opacity:.68;font-size:.75rem;white-space:normal}}"
             f".{TABLE_CLASS} tr.grey .note{{opacity:1}}</style>")  # a faded row's notes say why: not fainter still


def table(header: list[str], rows: list[list], kinds: list[str] | None = None,
          grey: list[bool] | None = None) -> str:
    """An HTML table of text for st.html: every header and cell escaped, so a value shows as typed (a model named
    `<img src=x onerror=...>` is those characters, never an element); a cell given as two texts (what it says, its
    notes) draws the notes quieter, free to wrap in a column that keeps its numbers whole, both escaped. `kinds`:
    each column's COLUMN_KINDS key (num: a number, right-aligned; name and wide: text kept from narrowing); rows
    with `grey` set are drawn faded (a configuration with no answer)."""
    kinds = kinds or [""] * len(header)
    attrs = [f" class={kind}" if kind else "" for kind in kinds]
    if any(kind not in COLUMN_KINDS for kind in kinds):
        raise ValueError(f"column kinds must be among {sorted(COLUMN_KINDS)}: {kinds}")

    def text(cell) -> str:  # a cell of two texts (what it says, then its notes, drawn quieter), or one
        if isinstance(cell, tuple) and len(cell) == 2:
            return html.escape(str(cell[0])) + (f"<span class=note>{html.escape(str(cell[1]))}</span>" if cell[1] else "")
        return html.escape(str(cell))

    def tr(cells: list, tag: str, faded: bool = False) -> str:
        tds = "".join(f"<{tag}{attr}>{text(c)}</{tag}>" for attr, c in zip(attrs, cells))
        return f'<tr{" class=grey" if faded else ""}>{tds}</tr>'
    body = "".join(tr(r, "td", bool(grey and grey[k])) for k, r in enumerate(rows))
    return f"{TABLE_CSS}<div class={TABLE_CLASS}><table><thead>{tr(header, 'th')}</thead><tbody>{body}</tbody></table></div>"
