"""Issue 13 through AppTest: Local path only under the operator's data directories, runs that
belong to the session that made them, uploads that name themselves and take the loaders'
options, one upload limit, "Still using" after a failed load, error messages as text."""

import io
import zipfile

import pytest

from kmviz.runs import RunStore
from kmviz.ui.datasets import MAX_UPLOAD_MB, check_upload_size
from kmviz.ui.state import NOT_YOURS, StateKeys
from kmviz.ui.text import md_escape
from tests.app.apphelpers import (DATA, KM_DUAL, RUNS, button, goto,
                                  load_planted, new_session, only_run, plain_text, train)

SECRET = "root:x:0:0:the-secret-line"


def _upload(at, name: str, content: bytes, **options):
    """Upload ``content`` as ``name`` on the Data page, with reading options set by key."""
    goto(at, DATA)
    at.radio(key="data_source").set_value("Upload").run()
    at.file_uploader(key="data_upload").upload(name, content, "text/csv")
    at.run()
    for key, value in options.items():
        widget = f"data_upload_{key}"
        if key.endswith("_col"):
            at.text_input(key=widget).input(value)
        else:
            at.selectbox(key=widget).set_value(value)
    at.button(key="data_load_upload").click().run()
    assert not at.exception, at.exception
    return at


def _ratings_csv(n_users=8, n_items=6) -> bytes:
    rows = "user,item,rating\n" + "".join(f"{u},{i},{(u * 7 + i * 3) % 5 + 1}\n"
                                          for u in range(n_users) for i in range(n_items)
                                          if (u + i) % 3)
    return rows.encode()


# ------------------------------------------------------------------------- Local path
def test_local_path_is_not_offered_without_data_dirs(monkeypatch):
    monkeypatch.delenv("KMVIZ_DATA_DIRS", raising=False)
    at = goto(new_session(), DATA)
    assert at.radio(key="data_source").options == ["Built-in", "Upload"]
    assert any("kmviz app --data-dir DIR" in c.value for c in at.caption)


def test_local_path_outside_the_data_dirs_is_refused_and_nothing_of_it_is_shown(
        tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "ok.csv").write_bytes(_ratings_csv())
    secret = tmp_path / "secret.csv"
    secret.write_text(f"user,item,rating\n{SECRET},1,1\n")
    (data / "sneaky.csv").symlink_to(secret)
    monkeypatch.setenv("KMVIZ_DATA_DIRS", str(data))
    at = goto(new_session(), DATA)
    assert at.radio(key="data_source").options == ["Built-in", "Upload", "Local path"]
    at.radio(key="data_source").set_value("Local path").run()
    for typed in (str(secret), "sneaky.csv", "../secret.csv", "/etc/passwd"):
        at.text_input(key="data_path").input(typed)
        at.button(key="data_load_path").click().run()
        assert not at.exception and len(at.error) == 1, typed
        shown = " ".join(str(e.value) for e in [*at.error, *at.info, *at.caption])
        assert "outside the data directories" in plain_text(at.error[0].value), typed
        assert "the\\-secret\\-line" not in shown and "root:x" not in shown, typed
        assert at.session_state[StateKeys.DATASET_SPEC]["default"], typed  # unchanged
    at.text_input(key="data_path").input("ok.csv")  # relative to the data directory
    at.button(key="data_load_path").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[StateKeys.DATASET].n_users == 8


# ------------------------------------------------------------------------- uploads
def test_upload_errors_name_the_upload_not_the_servers_temporary_file():
    at = _upload(new_session(), "my ratings.csv",
                 b"user,item,rating\n1,10,4\n2,11,not-a-number\n")
    message = plain_text(at.error[0].value)
    assert message.startswith("my ratings.csv, line 3")
    assert "kmviz-upload" not in message and "/tmp" not in message
    # inside a zip: the archive's own name and the member
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inner/r.csv", "user,item,rating\n1,10,4\n2,11,oops\n")
    at = _upload(at, "archive.zip", buf.getvalue())
    message = plain_text(at.error[0].value)
    assert "archive.zip" in message and "r.csv" in message, message
    assert "kmviz-" not in message and "/tmp" not in message, message


@pytest.mark.slow
def test_the_upload_form_takes_the_options_the_error_messages_suggest():
    # Latin-1, semicolons, unknown column names in another order, a repeated pair
    text = "film;person;stars\n" + "".join(f"Café {i};u{u};{(u + i) % 5 + 1}\n"
                                           for u in range(6) for i in range(4))
    text += "Café 0;u0;1\n"
    content = text.encode("latin-1")
    at = _upload(new_session(), "films.csv", content)
    first = plain_text(at.error[0].value)
    assert "encoding='latin-1'" in first  # the message names the option ...
    assert at.selectbox(key="data_upload_encoding").label == "Encoding (encoding=)"  # the form
    at = _upload(at, "films.csv", content, encoding="latin-1", delimiter=";")
    second = plain_text(at.error[0].value)  # read now, but the films taken for users
    assert "duplicates='mean'" in second and "user 'Café 0'" in second, second
    at = _upload(at, "films.csv", content, encoding="latin-1", delimiter=";",
                 user_col="person", item_col="film", value_col="stars")
    assert "duplicates='mean'" in plain_text(at.error[0].value)
    assert at.selectbox(key="data_upload_duplicates").label == \
        "Repeated user-item pairs (duplicates=)"
    at = _upload(at, "films.csv", content, encoding="latin-1", delimiter=";",
                 user_col="person", item_col="film", value_col="stars", duplicates="mean")
    assert not at.error, [e.value for e in at.error]
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings.n_users == 6 and ratings.n_items == 4 and ratings.n_ratings == 24
    assert "Café 0" in list(map(str, ratings.item_ids))
    spec = at.session_state[StateKeys.DATASET_SPEC]
    assert spec["options"] == {"encoding": "latin-1", "delimiter": ";", "user_col": "person",
                               "item_col": "film", "value_col": "stars",
                               "duplicates": "mean"}


def test_the_upload_limit_is_one_number_in_the_widget_the_label_and_the_check():
    import streamlit as st

    at = goto(new_session(), DATA)
    at.radio(key="data_source").set_value("Upload").run()
    assert st.get_option("server.maxUploadSize") == MAX_UPLOAD_MB  # the widget's limit
    (uploader,) = at.get("file_uploader")
    assert f"(up to {MAX_UPLOAD_MB} MB)" in uploader.proto.label
    assert uploader.proto.max_upload_size_mb == MAX_UPLOAD_MB  # what the browser enforces
    check_upload_size(MAX_UPLOAD_MB * 1024 * 1024, "fits.csv")
    with pytest.raises(ValueError, match=f"big.csv is {MAX_UPLOAD_MB + 1}.0 MB; uploads are "
                                         f"limited to {MAX_UPLOAD_MB} MB"):
        check_upload_size((MAX_UPLOAD_MB + 1) * 1024 * 1024, "big.csv")


def test_after_a_failed_load_the_page_says_which_dataset_is_still_loaded():
    at = load_planted(new_session())
    title = at.session_state[StateKeys.DATASET_SPEC]["title"]
    at = _upload(at, "bad.csv", b"user,item,rating\n1,2,x\n")
    assert at.error
    still = [i.value for i in at.info if i.value.startswith("Still using:")]
    assert still and still[0].startswith(f"Still using: {md_escape(title)}."), still
    # a good load afterwards: no such sentence
    at = _upload(at, "good.csv", _ratings_csv())
    assert not at.error and not [i for i in at.info if "Still using" in i.value]


def test_error_messages_that_quote_a_file_render_as_text():
    at = _upload(new_session(), "x.csv", b"user,item,rating\n1,2,**b** [y](http://z)\n")
    (error,) = at.error
    assert "](http" not in error.value and "**b**" not in error.value
    assert "**b** [y](http://z)" in plain_text(error.value)


# ------------------------------------------------------------------------- run owners
@pytest.fixture()
def served(monkeypatch):
    """The app as served to others (``kmviz app --host 0.0.0.0``): per-browser owners."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    monkeypatch.delenv("KMVIZ_SHARED_RUNS", raising=False)
    yield
    config.set_option("server.address", before)


@pytest.fixture()
def a_run_of_session_a(served):
    """Session A uploads its own data and trains on it; the run is saved with that data."""
    at = _upload(new_session(), "private.csv", _ratings_csv(10, 6))
    assert not at.error
    at = train(at, D=2, max_iter=1, tol=None)
    return at, only_run(at)


@pytest.mark.slow
def test_another_sessions_run_is_read_only(a_run_of_session_a, monkeypatch):
    monkeypatch.delenv("KMVIZ_SHARED_RUNS", raising=False)
    a, run = a_run_of_session_a
    assert RunStore().load_meta(run.run_id)["owner"] == a.session_state[StateKeys.OWNER]
    goto(a, RUNS)  # the owner: everything enabled, no lock sentence
    assert not [i for i in a.info if i.value == NOT_YOURS]
    assert not a.text_input[0].disabled and not a.button(key="runs_delete").disabled
    b = goto(new_session(), RUNS)
    assert b.session_state[StateKeys.OWNER] != a.session_state[StateKeys.OWNER]
    assert b.selectbox(key="runs_one").value == run.run_id  # listed ...
    assert [i.value for i in b.info if i.value == NOT_YOURS]  # ... read-only, saying why
    assert b.text_input[0].disabled and b.text_area[0].disabled
    assert button(b, "Save name and note").disabled
    assert b.button(key="runs_delete").disabled
    downloads = {d.label: d.disabled for d in b.get("download_button")}
    assert downloads["Arrays NPZ"] and downloads["Whole run (zip)"]
    assert not downloads["Trace CSV"]
    assert not b.button(key="runs_rerun").disabled
    # the store refuses too, whatever the page shows
    with pytest.raises(ValueError, match="belongs to someone else"):
        RunStore().delete(run.run_id, owner=b.session_state[StateKeys.OWNER])
    assert run.run_id in RunStore()
    # the Explore pages show B the run's curves, not the data it was trained on
    goto(b, KM_DUAL)
    b.selectbox(key="explore_run_km").set_value(run.run_id).run()
    assert not b.exception and NOT_YOURS.split(":")[0] in plain_text(b.info[0].value)
    assert b.session_state[StateKeys.RUNS][run.run_id].split is None


@pytest.mark.slow
def test_rerun_of_another_sessions_run_restores_settings_not_its_data(a_run_of_session_a,
                                                                      monkeypatch):
    monkeypatch.delenv("KMVIZ_SHARED_RUNS", raising=False)
    a, run = a_run_of_session_a
    b = goto(new_session(), RUNS)
    mine = b.session_state[StateKeys.DATASET]
    b.button(key="runs_rerun").click().run()
    assert not b.exception and [t.value for t in b.title] == ["Train"]
    assert b.session_state[StateKeys.DATASET] is mine  # A's upload is not loaded into B
    assert b.session_state[StateKeys.DATASET_SPEC]["default"]
    assert "made by another session" in plain_text(b.info[0].value)
    assert b.number_input(key="train_km_D").value == 2  # the settings are restored
    # the owner's re-run does bring its data back
    goto(a, DATA)
    load_planted(a)
    goto(a, RUNS)
    a.selectbox(key="runs_one").set_value(run.run_id).run()
    a.button(key="runs_rerun").click().run()
    assert "split saved with the run" in plain_text(a.info[0].value)
    assert a.session_state[StateKeys.DATASET].n_users == 10


@pytest.mark.slow
def test_shared_runs_let_every_session_manage_every_run(a_run_of_session_a, monkeypatch):
    _, run = a_run_of_session_a
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")
    b = goto(new_session(), RUNS)
    assert not [i for i in b.info if i.value == NOT_YOURS]
    b.text_input[0].input("renamed by B")
    button(b, "Save name and note").click().run()
    assert not b.error and RunStore().load_meta(run.run_id)["label"] == "renamed by B"
    b.button(key="runs_delete").click().run()
    b.button(key="runs_delete_yes").click().run()
    assert not b.error and run.run_id not in RunStore()



def test_a_private_app_gives_every_run_to_the_person_at_the_keyboard(monkeypatch):
    """On the default loopback address, a run saved by another tab (or before a restart, or
    by the CLI) is the local user's, with every Explore page and every button."""
    monkeypatch.delenv("KMVIZ_SHARED_RUNS", raising=False)
    a = _upload(new_session(), "mine.csv", _ratings_csv(10, 6))
    a = train(a, D=2, max_iter=1, tol=None)
    run = only_run(a)
    b = goto(new_session(), RUNS)  # a new tab, a reload or a restarted server
    assert b.session_state[StateKeys.OWNER] != a.session_state[StateKeys.OWNER]
    assert not [i for i in b.info if i.value == NOT_YOURS]
    assert not b.button(key="runs_delete").disabled
    goto(b, KM_DUAL)
    b.selectbox(key="explore_run_km").set_value(run.run_id).run()
    assert not b.exception
    assert b.session_state[StateKeys.RUNS][run.run_id].split is not None  # its data too


def test_a_served_browser_keeps_its_runs_after_a_reload(served, monkeypatch):
    """The owner comes from the browser's cookie: a new session with the same cookie (a
    reload, or the same browser after a server restart) owns what the first one saved."""
    from kmviz.ui import state

    first = new_session()  # its first run
    html = [e for e in first.get("html")
            if state.OWNER_COOKIE in str(getattr(e, "proto", e))]
    assert html, "a browser without the cookie is given one"
    monkeypatch.setattr(state, "_browser_secret", lambda: "0123456789abcdef" * 2)
    a = _upload(new_session(), "mine.csv", _ratings_csv(10, 6))
    a = train(a, D=2, max_iter=1, tol=None)
    run = only_run(a)
    again = goto(new_session(), RUNS)  # the reload: same cookie
    assert again.session_state[StateKeys.OWNER] == a.session_state[StateKeys.OWNER] \
        == state.owner_from_secret("0123456789abcdef" * 2)
    assert RunStore().load_meta(run.run_id)["owner"] == again.session_state[StateKeys.OWNER]
    assert not [i for i in again.info if i.value == NOT_YOURS]
    assert not again.button(key="runs_delete").disabled
    assert not [e for e in again.get("html")
                if state.OWNER_COOKIE in str(getattr(e, "proto", e))]  # set once only
    # another browser (another cookie) sees it read-only
    monkeypatch.setattr(state, "_browser_secret", lambda: "f" * 32)
    other = goto(new_session(), RUNS)
    assert [i.value for i in other.info if i.value == NOT_YOURS]


def test_a_malformed_cookie_is_replaced_not_trusted(monkeypatch):
    from kmviz.ui import state

    class Context:
        cookies = {state.OWNER_COOKIE: "<script>alert(1)</script>"}

    monkeypatch.setattr(state.st, "context", Context())
    assert state._browser_secret() is None
    Context.cookies = {state.OWNER_COOKIE: "ab" * 16}
    assert state._browser_secret() == "ab" * 16
    assert state.owner_from_secret("ab" * 16).startswith("app:")
    assert "ab" * 16 not in state.owner_from_secret("ab" * 16)  # the secret is not stored
