"""Text labels that never overlap: estimate each label's box in pixels, place the labels one
at a time (most important first) at the first of a few candidate spots where the box stays
clear of the boxes placed before it and inside the plot, and leave the rest to the hover.

Plotly does not move text to avoid collisions, so the figures that print labels beside
points (the whole-lattice implication graph) place them here, on the figure's own data:
:func:`boxes_overlap` is what the tests check the result with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Average advance of a character of the figures' sans-serif font, in ems (generous: capital
#: and wide letters), and the height of a line of text in ems.
CHAR_EM, LINE_EM = 0.62, 1.35


def text_width(text: str, font_px: float) -> float:
    """An upper estimate of ``text``'s width in pixels at ``font_px``."""
    return len(str(text)) * CHAR_EM * float(font_px)


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: "Box", gap: float = 0.0) -> bool:
        return not (self.x1 + gap <= other.x0 or other.x1 + gap <= self.x0
                    or self.y1 + gap <= other.y0 or other.y1 + gap <= self.y0)


#: Candidate spots of a label (Plotly ``textposition`` values), in the order tried.
SPOTS = ("top center", "bottom center")


def label_box(x_px: float, y_px: float, width: float, height: float, radius: float,
              spot: str) -> Box:
    """The box (pixels, y up) of a label of ``width`` x ``height`` at ``spot`` of a point
    of marker radius ``radius``."""
    if spot == "top center":
        return Box(x_px - width / 2, y_px + radius, x_px + width / 2, y_px + radius + height)
    if spot == "bottom center":
        return Box(x_px - width / 2, y_px - radius - height, x_px + width / 2, y_px - radius)
    raise ValueError(f"unknown label spot {spot!r}; use one of {', '.join(SPOTS)}")


def place_labels(x_px, y_px, texts, *, font_px: float, radius=6.0, order=None,
                 bounds: Box | None = None, spots=SPOTS, gap: float = 2.0,
                 avoid=()) -> list:
    """Where each label goes: a ``textposition`` from ``spots``, or None (hover only).

    Points are in pixels (y up); ``order`` lists the indices most important first (default:
    as given); ``bounds`` keeps every box inside the plot; ``avoid`` are boxes already taken
    (the markers, say), which a label may touch but not cross. Greedy: each label takes the
    first spot whose box clears the labels placed so far by ``gap`` pixels.
    """
    x_px, y_px = np.asarray(x_px, float), np.asarray(y_px, float)
    n = x_px.shape[0]
    radius = np.broadcast_to(np.asarray(radius, float), (n,))
    height = LINE_EM * font_px
    avoid, taken = list(avoid), []
    out: list = [None] * n
    for k in (range(n) if order is None else order):
        width = text_width(texts[k], font_px)
        for spot in spots:
            box = label_box(x_px[k], y_px[k], width, height, radius[k], spot)
            if bounds is not None and (box.x0 < bounds.x0 or box.x1 > bounds.x1
                                       or box.y0 < bounds.y0 or box.y1 > bounds.y1):
                continue
            if any(box.overlaps(t, gap) for t in taken) or any(
                    box.overlaps(a, -0.5) for a in avoid):
                continue
            taken.append(box)
            out[k] = spot
            break
    return out


def tick_budget(pixels: float, font_px: float) -> int:
    """How many horizontal tick labels (one line each) fit along ``pixels`` of an axis: one
    per line height of text, at least one."""
    return max(1, int(pixels // (LINE_EM * float(font_px))))


def thinned(n: int, budget: int) -> list[int]:
    """Every k-th of ``n`` positions (k as small as keeps them within ``budget``)."""
    step = max(1, -(-int(n) // max(1, int(budget))))
    return list(range(0, int(n), step))


def boxes_overlap(boxes, gap: float = 0.0) -> list[tuple[int, int]]:
    """Pairs of indices of ``boxes`` that overlap (closer than ``gap``)."""
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j], gap)]


__all__ = ["Box", "CHAR_EM", "LINE_EM", "SPOTS", "boxes_overlap", "label_box", "place_labels",
           "text_width", "thinned", "tick_budget"]
