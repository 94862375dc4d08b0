"""Data: pick a built-in dataset, upload a file or give a path; inspect it; choose the split."""

import streamlit as st

from kmviz.ui import datasets as ds
from kmviz.ui.errors import user_errors
from kmviz.ui.forms import generator_options_form, reading_options_form, split_form
from kmviz.ui.state import StateKeys, init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, dataset_metrics, side_information
from kmviz.viz import count_distribution_figure, rating_histogram_figure

init_state()
collect_finished_job()
st.title("Data")

local_dirs = ds.data_dirs()
sources = ["Built-in", "Upload"] + (["Local path"] if local_dirs else [])
if st.session_state.get("data_source") not in sources:
    st.session_state.pop("data_source", None)
source = st.radio("Source", sources, horizontal=True, key="data_source")
if not local_dirs:
    st.caption("Files on the server's disk can be loaded by path once the operator names "
               "data directories: `kmviz app --data-dir DIR` (or the environment variable "
               "KMVIZ_DATA_DIRS).")
loaded = spec = None
with user_errors("loading the dataset") as outcome:
    if source == "Built-in":
        entries = {e.name: e for e in ds.list_catalogue()}
        name = st.selectbox("Dataset", list(entries), key="data_builtin",
                            format_func=lambda n: entries[n].title)
        entry = entries[name]
        st.caption(f"{entry.description}  \nSource: {entry.source}  \nLicence: {entry.licence}")
        options = generator_options_form(ds.entry_defaults(entry), prefix=f"data_{name}")
        # the click is recorded by the callback (run before the page), so a click that lands
        # while the page is still rerunning (e.g. right after picking the dataset) is kept
        clicked = st.button("Load", key="data_load_builtin", type="primary",
                            on_click=st.session_state.__setitem__,
                            args=("data_load_requested", True))
        if st.session_state.pop("data_load_requested", False) or clicked:
            loaded = ds.load_builtin(name, tuple(sorted(options.items())))
            spec = {"kind": "built-in", "source": name, "options": options,
                    "title": entry.title, "licence": entry.licence, "provenance": entry.source}
    elif source == "Upload":
        up = st.file_uploader(
            f"Ratings file (up to {ds.upload_limit_mb()} MB): MovieLens u.data / ratings.dat "
            "/ ratings.csv, CSV or TSV triplets, Matrix Market .mtx, or a zip of a MovieLens "
            "directory", type=ds.UPLOAD_TYPES, key="data_upload")
        read_options = reading_options_form(prefix="data_upload")
        if up is not None and st.button("Load upload", key="data_load_upload", type="primary"):
            ds.check_upload_size(up.size, up.name)
            loaded = ds.load_uploaded(up.name, up.getvalue(),
                                      tuple(sorted(read_options.items())))
            spec = {"kind": "upload", "source": up.name, "options": read_options,
                    "title": up.name, "licence": "as supplied by you", "provenance": "upload"}
    else:
        st.caption("Paths inside " + ", ".join(md_escape(d) for d in local_dirs) +
                   " (the data directories the operator named); a relative path starts "
                   "from the first.")
        path = st.text_input("Path of a ratings file, MovieLens directory or zip",
                             key="data_path")
        read_options = reading_options_form(prefix="data_path")
        if st.button("Load path", key="data_load_path", type="primary"):
            loaded = ds.load_path(path, tuple(sorted(read_options.items())))
            spec = {"kind": "path", "source": path, "options": read_options, "title": path,
                    "licence": "see the data's own terms", "provenance": path}
    if loaded is not None:
        if note := ds.set_dataset(loaded, spec):
            st.warning(md_escape(note), icon=":material/warning:")
        st.toast(f"Loaded {md_escape(loaded.name)}: {loaded.n_users:,} users × "
                 f"{loaded.n_items:,} items, {loaded.n_ratings:,} ratings")

ratings, _ = ds.ensure_dataset()
spec = st.session_state[StateKeys.DATASET_SPEC]
if not outcome.ok:
    st.info("Still using: " + (md_escape(spec.get("title") or ratings.name) if ratings is not
                                None else "no dataset (none is loaded)") +
            ". The failed load changed nothing; fix the problem above and load again.",
            icon=":material/info:")
if ratings is None:
    st.info("No dataset loaded yet.")
    st.stop()

st.subheader(md_escape(spec.get("title") or ratings.name))
if spec.get("default"):
    st.caption("This is the built-in default every new session starts with; load another "
               "dataset above to change it.")
st.caption(f"Provenance: {md_escape(spec.get('provenance'))} · licence: "
           f"{md_escape(spec.get('licence'))} · fingerprint `{ratings.fingerprint()}`")
dataset_metrics(ratings)

c1, c2, c3 = st.columns(3)
c1.plotly_chart(rating_histogram_figure(ratings.values, r_min=ratings.r_min,
                                        r_max=ratings.r_max, implicit=ratings.implicit))
c2.plotly_chart(count_distribution_figure(ratings.user_counts(), what="user"))
c3.plotly_chart(count_distribution_figure(ratings.item_counts(), what="item"))

c1, c2 = st.columns([1, 2])
c1.dataframe(side_information(ratings), hide_index=True)
c2.dataframe(ratings.to_frame().head(200), hide_index=True, height=260)

st.subheader("Train / validation / test split")
params, applied = split_form(spec.get("split"))
if applied:
    with user_errors("splitting the data"):
        ds.apply_split(params)
split = st.session_state[StateKeys.SPLIT]
sizes = split.describe()
c = st.columns(3)
c[0].metric("training ratings", f"{sizes['train']:,}")
c[1].metric("validation ratings", f"{sizes['validation']:,}")
c[2].metric("test ratings", f"{sizes['test']:,}")
st.caption(f"Split: {'random ratings' if sizes['by'] == 'random' else 'per user'}, "
           f"seed {sizes['seed']}; the model trains on the training part only.")
st.page_link("app_pages/train.py", label="Next: train a model", icon=":material/arrow_forward:")
