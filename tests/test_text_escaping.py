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


_PAGE = '''
import streamlit as st
from kmviz.ui.text import md_escape

for i, text in enumerate({texts!r}):
    with st.container(key=f"t-{{i}}"):
        st.markdown(md_escape(text))
'''


@pytest.mark.slow
@pytest.mark.browser
def test_escaped_text_renders_without_links_or_icons_in_chromium(tmp_path):
    """What a browser shows: no <a> and no material icon (before the fix: 3 links, 1 icon)."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium not found")
    playwright = pytest.importorskip("playwright.sync_api")
    texts = ["see http://evil.example/x now", "www.evil.example", "mail bob@evil.example",
             "icon :material/home: emoji :smile: colour :red[alarm]"]
    (tmp_path / "page.py").write_text(_PAGE.format(texts=texts))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(tmp_path / "page.py"),
                             "--server.headless", "true", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}")
            page.wait_for_selector(f".st-key-t-{len(texts) - 1}", timeout=60_000)
            for i, text in enumerate(texts):
                block = page.locator(f".st-key-t-{i}")
                assert block.locator("a").count() == 0, text
                assert block.locator("[data-testid='stIconMaterial']").count() == 0, text
                assert block.inner_text().replace("\u2060", "") == text
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
