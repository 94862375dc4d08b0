"""User text renders as text: no live links from bare URLs or e-mail addresses and no icon
or emoji shortcodes (issue 24, item 5)."""

import re
import unicodedata

import pytest

from kmviz.ui.text import md_escape, pieces_markdown

HOSTILE = [
    "see http://evil.example/x?q=1 now",
    "HTTPS://Evil.Example",
    "http://www.evil.example",
    "www.evil.example and www.evil",
    "(www.evil.example)",
    "mail bob.x+y@mail.example.co please",
    "<bob@evil.example>",
    "Toy Story (1995) :material/home: :smile: :+1: :red[alarm]",
    "[x](http://evil.example) ![i](http://evil.example/i.png)",
]


def _shown(markdown: str) -> str:
    """The text the renderer matches links and shortcodes on: escapes removed."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _boundary(text: str, i: int, email: bool = False) -> bool:
    """GFM's rule: a literal autolink starts at the text's start or after a space or
    punctuation (an e-mail not after '/')."""
    if i == 0:
        return True
    c = text[i - 1]
    ok = c.isspace() or unicodedata.category(c).startswith("P") or c in "$+<=>^`|~"
    return ok and not (email and c == "/")


def _autolinks(text: str) -> list[str]:
    found = []
    for m in re.finditer(r"(?i)(https?://|www(?=\.))([-.\w]+)", text):
        domain = (m.group(1) if m.group(1).lower().startswith("w") else "") + m.group(2)
        if _boundary(text, m.start()) and len(domain.split(".")) >= 2:
            found.append(m.group(0))
    for m in re.finditer(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", text):
        if _boundary(text, m.start(), email=True):
            found.append(m.group(0))
    return found


def test_the_oracle_sees_the_links_of_raw_text():
    for text in HOSTILE[:7]:
        assert _autolinks(text), text


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_has_no_live_links_or_shortcodes(text):
    shown = _shown(md_escape(text))
    assert not _autolinks(shown), shown
    assert not re.search(r":material/\w+:", shown) and not re.search(r":[\w+-]+:", shown)
    assert not re.search(r":[a-z]+\[", shown)
    # it still reads the same: only invisible word joiners were added
    assert shown.replace("\u2060", "") == re.sub(r"\s+", " ", text)


def test_bold_pieces_are_disarmed_too():
    md = pieces_markdown([("liked by ", False), ("bob@evil.example", True)])
    assert md.startswith("liked by **") and not _autolinks(_shown(md))
