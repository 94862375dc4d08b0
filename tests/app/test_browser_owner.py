"""One owner per browser from the first request, and every loopback spelling private
(issue 35, defect 4). The two-tabs-at-once case in a real browser is
tests/browser/test_served_fits.py."""

import pytest

from kmviz import cli
from kmviz._hosts import is_loopback

LOOPBACK = ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "0:0:0:0:0:0:0:1",
            "0000:0000:0000:0000:0000:0000:0000:0001", "::ffff:127.0.0.1", "[::ffff:7f00:1]",
            "::1%lo", "localhost", "LOCALHOST", " localhost ", "localhost6", "ip6-localhost",
            "app.localhost"]
NOT_LOOPBACK = ["", None, "0.0.0.0", "::", "[::]", "192.168.1.4", "10.0.0.1", "::ffff:10.0.0.1",
                "2001:db8::1", "example.org", "localhost.example.org", "128.0.0.1", "::2"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_spellings(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_other_addresses_are_not_loopback(host):
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["::1", "[::1]", "0:0:0:0:0:0:0:1", "127.0.0.2"])
def test_a_private_app_on_any_loopback_spelling(monkeypatch, host):
    import streamlit as st

    from kmviz.ui import state

    monkeypatch.setattr(st, "get_option", lambda name: host if name == "server.address"
                        else None)
    monkeypatch.delenv(state.SHARED_RUNS_ENV, raising=False)
    assert state.private_app() and state.shared_runs() and state.fit_owner() is None


def test_a_served_app_is_not_private(monkeypatch):
    import streamlit as st

    from kmviz.ui import state

    for host in ("0.0.0.0", "::", "192.168.1.4"):
        monkeypatch.setattr(st, "get_option", lambda name, h=host: h)
        assert not state.private_app()


@pytest.mark.parametrize("host", ["[::1]", "0:0:0:0:0:0:0:1", "127.0.0.2", "localhost6"])
def test_the_cli_does_not_warn_on_loopback(monkeypatch, capsys, host):
    calls = []
    monkeypatch.setattr(cli, "_serve", lambda cmd, env=None, cwd=None: calls.append(cmd) or 0)
    assert cli.main(["app", "--host", host]) == 0
    assert capsys.readouterr().err == ""
    assert calls[0][5:7] == ["--server.address", host]
    assert cli.main(["app", "--host", "::"]) == 0
    assert capsys.readouterr().err.startswith("warning: the app listens on ::")


def test_the_new_browser_script_sets_the_cookie_only_if_absent_and_adopts_the_kept_one():
    from kmviz.ui.state import ADOPT_AFTER_MS, OWNER_COOKIE, _adopt_script

    secret = "0123456789abcdef" * 2
    script = _adopt_script(secret)
    assert script.startswith("<script>") and script.endswith("</script>")
    assert f"mine = '{secret}'" in script and f"{OWNER_COOKIE}=([0-9a-f]{{32}})" in script
    # set only when no tab has set one; reload when the browser kept another tab's
    assert script.index("if (!kept())") < script.index("document.cookie = name")
    assert "now !== mine" in script and "location.reload()" in script
    assert f"}}, {ADOPT_AFTER_MS});" in script
    for bad in ("", "x" * 32, secret[:-1], secret.upper(), "';alert(1);'" + "0" * 20):
        with pytest.raises(ValueError):
            _adopt_script(bad)
