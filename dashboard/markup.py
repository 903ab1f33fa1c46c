"""Text a person typed (sweep names, errors, model and host names) shown as text, never as markup.

Streamlit renders Markdown in st.markdown, captions, alerts and page-link labels: a sweep named
`![x](http://tracker/pixel.png)` would make every viewer's browser fetch that image, and `[here](...)`
would be a link the lab never wrote. Plotly renders a subset of HTML in legends, hovers, titles and
annotations (`<a href>`, `<b>`, `<br>`). Each helper escapes for one of the two; apply it where a
value enters the markup, never to the page's own formatting around it."""
from __future__ import annotations

import html
import re

# every ASCII punctuation mark CommonMark lets a backslash escape, which covers Streamlit's own
# directives too (`:red[...]`, `:material/icon:`, `$...$` for LaTeX)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&'\"=^%@/])")


def md(text) -> str:
    """`text` for a Markdown context: every character literal, nothing becomes a link, image or style."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def plot(text) -> str:
    """`text` for a plotly label, legend, hover or annotation: tags and entities shown as typed."""
    return html.escape(str(text), quote=False)
