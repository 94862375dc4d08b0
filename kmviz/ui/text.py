"""User text (titles, ids, file names) shown as text, never as markup."""

from __future__ import annotations

import re

from kmviz.viz._theme import plural

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])")
#: WORD JOINER: invisible, neither a space nor punctuation, so the renderer's pattern
#: matching (which runs on the text after the backslash escapes are removed) does not see a
#: link or a shortcode where it stands.
_JOINER = "\u2060"
# GFM autolink literals (https://..., www.x.y) count only after a space or punctuation:
# a joiner in front disarms them. An e-mail needs a letter or digit right after the "@".
_URL_START = re.compile(r"(?i)(?=https?://[-\w]+\.[-\w]|www\.[-\w])")
_EMAIL_AT = re.compile(r"(?<=[-.\w+])@(?=[-\w]+\.[-\w])")
# Icon and emoji shortcodes (:material/home:, :smile:) and colour directives (:red[x]).
_SHORTCODE_COLON = re.compile(r":(?=[\w+-])")


def md_escape(text) -> str:
    """``text`` with every Markdown/HTML-significant character backslash-escaped, so that
    ``st.markdown`` shows it literally: no links (bare URLs and e-mail addresses included),
    images, emphasis, math, icon or emoji shortcodes from user data."""
    text = re.sub(r"\s+", " ", str(text))
    text = _URL_START.sub(_JOINER, text)
    text = _EMAIL_AT.sub("@" + _JOINER, text)
    text = _SHORTCODE_COLON.sub(":" + _JOINER, text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


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
