"""User text (titles, ids, file names) shown as text, never as markup."""

from __future__ import annotations

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])")


def md_escape(text) -> str:
    """``text`` with every Markdown/HTML-significant character backslash-escaped, so that
    ``st.markdown`` shows it literally (no links, images, emphasis or math from user data)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", re.sub(r"\s+", " ", str(text)))


def pieces_markdown(pieces) -> str:
    """``[(text, bold), ...]`` as Markdown with every piece escaped."""
    return "".join(f"**{md_escape(t)}**" if bold else md_escape(t) for t, bold in pieces)
