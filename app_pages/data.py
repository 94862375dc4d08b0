"""Data: pick a built-in dataset, upload a file or give a path; inspect it; choose the split."""

import streamlit as st

from kmviz.ui import datasets as ds
from kmviz.ui.dataformats import format_options_form
from kmviz.ui.errors import show_described, user_errors
from kmviz.ui.forms import generator_options_form, reading_options_form, split_form
from kmviz.ui.state import StateKeys, init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, dataset_metrics, side_information
from kmviz.viz import count_distribution_figure, rating_histogram_figure

init_state()
collect_finished_job()
st.title("Data")

# the choice of a dataset: hidden in lesson mode (the lesson loads its own)
with st.container(key="data_choose"):
    local_dirs = ds.data_dirs()
    sources = ["Built-in", "Upload"] + (["Local path"] if local_dirs else [])
    if st.session_state.get("data_source") not in sources:
        st.session_state.pop("data_source", None)
    source = st.radio("Source", sources, horizontal=True, key="data_source")
    if not local_dirs:
        st.caption("Files on the server's disk can be loaded by path once the operator names "
                   "data directories: `kmviz app --data-dir DIR` (or the environment variable "
                   "KMVIZ_DATA_DIRS).")
    # Each Load button loads in its callback, which Streamlit runs before the next script run of
    # whichever page the user is on: a click followed at once by a change of page still loads.
    if source == "Built-in":
        entries = {e.name: e for e in ds.list_catalogue()}
        name = st.selectbox("Dataset", list(entries), key=ds.BUILTIN_KEY,
                            format_func=lambda n: entries[n].title)
        entry = entries[name]
        st.caption(f"{entry.description}  \nSource: {entry.source}  \nLicence: {entry.licence}")
        generator_options_form(ds.entry_defaults(entry), prefix=f"data_{name}")
        st.button("Load", key="data_load_builtin", type="primary", on_click=ds.load_clicked,
                  args=("built-in",))
    elif source == "Upload":
        up = st.file_uploader(
            f"Ratings file (up to {ds.upload_limit_mb()} MB): MovieLens u.data / ratings.dat "
            "/ ratings.csv, CSV or TSV triplets, a basket file (a line of items per user), a "
            "users x items table, Matrix Market .mtx, or a zip of any", type=ds.UPLOAD_TYPES,
            key=ds.UPLOAD_KEY)
        format_options_form(prefix=ds.UPLOAD_KEY)
        reading_options_form(prefix=ds.UPLOAD_KEY)
        if up is not None:
            st.button("Load upload", key="data_load_upload", type="primary",
                      on_click=ds.load_clicked, args=("upload",))
    else:
        st.caption("Paths inside " + ", ".join(md_escape(d) for d in local_dirs) +
                   " (the data directories the operator named); a relative path starts "
                   "from the first.")
        st.text_input("Path of a ratings file, MovieLens directory or zip", key=ds.PATH_KEY)
        format_options_form(prefix=ds.PATH_KEY)
        reading_options_form(prefix=ds.PATH_KEY)
        st.button("Load path", key="data_load_path", type="primary", on_click=ds.load_clicked,
                  args=("path",))
outcome = ds.pop_load_outcome()
if outcome is not None:
    if not outcome["ok"]:
        show_described(outcome)
    elif outcome.get("note"):
        st.warning(md_escape(outcome["note"]), icon=":material/warning:")

ratings, _ = ds.ensure_dataset()
spec = st.session_state[StateKeys.DATASET_SPEC]
if outcome is not None and not outcome["ok"]:
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
row_noun, column_noun = ratings.nouns  # the dataset's words: countries and years, ...
c2.plotly_chart(count_distribution_figure(ratings.user_counts(), what=row_noun))
c3.plotly_chart(count_distribution_figure(ratings.item_counts(), what=column_noun))

c1, c2 = st.columns([1, 2])
c1.dataframe(side_information(ratings), hide_index=True)
c2.dataframe(ratings.to_frame(limit=200).rename(columns={
    "user": row_noun, "item": column_noun, "item_name": f"{column_noun}_name",
    "user_name": f"{row_noun}_name"}), hide_index=True, height=260)

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
