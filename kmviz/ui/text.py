"""User text (titles, ids, file names) shown as text, never as markup."""

from __future__ import annotations

import re

from kmviz.viz._theme import plural

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])")


def md_escape(text) -> str:
    """``text`` with every Markdown/HTML-significant character backslash-escaped, so that
    ``st.markdown`` shows it literally (no links, images, emphasis or math from user data)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", re.sub(r"\s+", " ", str(text)))


def pieces_markdown(pieces) -> str:
    """``[(text, bold), ...]`` as Markdown with every piece escaped."""
    return "".join(f"**{md_escape(t)}**" if bold else md_escape(t) for t, bold in pieces)


#: How the metric vocabulary reads on metric cards and table headers.
_PART_NAMES = {"train": "training", "validation": "validation", "test": "test"}


def metric_label(name: str) -> str:
    """``validation_nrmse`` -> "validation NRMSE", ``test_precision_at_5`` -> "test
    precision@5"."""
    part, _, metric = name.partition("_")
    metric = metric.replace("_at_", "@").replace("_", " ")
    return f"{_PART_NAMES.get(part, part)} {metric.upper() if len(metric) <= 5 else metric}"


def size_phrase(ratings) -> str:
    """"185 countries × 57 years": the data's size in its own nouns (``Ratings.nouns``)."""
    row, column = getattr(ratings, "nouns", ("user", "item"))
    return (f"{ratings.n_users:,} {row if ratings.n_users == 1 else plural(row)} × "
            f"{ratings.n_items:,} {column if ratings.n_items == 1 else plural(column)}")
