"""Figures of a PDF page: raster images and vector art become figure regions with captions.

Raster images and clusters of vector drawings with curves or diagonal strokes (outside
tables) become ``figure`` blocks whose text is the adjacent "Figure N" caption; the labels
drawn on them leave the prose (kept in the block's meta). A region whose text is mostly long
prose lines is a framed text box, not a figure; text over a large graphic on the first page is
the cover title and stays text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from edaqa_pipeline.parsing.pdf_layout import (
    FIGURE_CAPTION,
    TABLE_CAPTION,
    Box,
    Drawing,
    PdfFigure,
    PdfPage,
    PdfTable,
    TextLine,
    box_area,
    center_in,
    clusters,
    grow_box,
    intersect,
    text_width,
    touches,
    union_box,
    wraps_into,
    x_overlap,
)

_MIN_FIGURE_SIDE = 30.0  # points; smaller images and drawing clusters are icons, rules, bullets
CLUSTER_GAP = 8.0  # drawings closer than this belong to one figure
_LABEL_GAP = 20.0  # short text this close left or right of a figure is one of its labels
_CAPTION_GAP_BELOW = 60.0
_CAPTION_GAP_ABOVE = 40.0


def figure_regions(
    page_box: Box, images: Sequence[Box], drawings: Sequence[Drawing], tables: Sequence[PdfTable]
) -> list[PdfFigure]:
    """Raster images and clusters of drawings with curves or diagonal strokes, outside tables."""
    page_area = box_area(page_box)
    table_boxes = [grow_box(t.bbox, 3) for t in tables]

    def in_table(box: Box) -> bool:
        return any(center_in(box, t) for t in table_boxes)

    items: list[tuple[Box, str, int]] = [
        (box, "image", 0) for box in images if box_area(box) < 0.8 * page_area and not in_table(box)
    ]
    items += [(box, "vector", diagonal) for box, _, _, diagonal in drawings if not in_table(box)]
    regions: list[tuple[Box, set[str]]] = []
    for group in clusters([it[0] for it in items], CLUSTER_GAP):
        box = items[group[0]][0]
        for i in group[1:]:
            box = union_box(box, items[i][0])
        box = intersect(box, page_box)
        if box[2] - box[0] < _MIN_FIGURE_SIDE or box[3] - box[1] < _MIN_FIGURE_SIDE:
            continue
        kinds = {items[i][1] for i in group}
        if "image" not in kinds and sum(items[i][2] for i in group) < 2:
            continue  # straight ruling only: a frame, shading or the grid of a list
        if any(box_area(intersect(box, t)) >= 0.8 * box_area(t) for t in table_boxes):
            continue  # the ruling around a table
        regions.append((box, kinds))
    merged = True
    while merged:  # overlapping regions are one figure
        merged = False
        for i in range(len(regions)):
            for j in range(i + 1, len(regions)):
                if box_area(intersect(regions[i][0], regions[j][0])) > 0:
                    regions[i] = (
                        union_box(regions[i][0], regions[j][0]),
                        regions[i][1] | regions[j][1],
                    )
                    del regions[j]
                    merged = True
                    break
            if merged:
                break
    regions.sort(key=lambda r: (r[0][1], r[0][0]))
    return [
        PdfFigure(box, "+".join(k for k in ("image", "vector") if k in kinds))
        for box, kinds in regions
    ]


def _is_label(line: TextLine, fig: Box, lines_per_block: Counter[int]) -> bool:
    """Text drawn on a figure, a short label touching it, or one just left or right of it
    (dimension arrows)."""
    if center_in(line.bbox, grow_box(fig, 2)):
        return True
    if len(line.text.split()) > 5 or lines_per_block[line.block] > 3:
        return False
    if FIGURE_CAPTION.match(line.text) or TABLE_CAPTION.match(line.text):
        return False
    cy = (line.bbox[1] + line.bbox[3]) / 2
    beside = fig[1] <= cy <= fig[3] and touches(line.bbox, grow_box(fig, _LABEL_GAP))
    return beside or touches(line.bbox, grow_box(fig, 4))


def attach_figure_text(page: PdfPage) -> None:
    """Labels of a figure leave the prose; an adjacent 'Figure N' line becomes its caption.

    A region whose text is mostly long prose lines is a framed text box, not a figure. Text over
    a large graphic on the first page is the cover title: it stays text.
    """
    kept = []
    lines_per_block = Counter(ln.block for ln in page.lines)
    for fig in page.figures:
        inside = [
            ln for ln in page.lines if not ln.drop and _is_label(ln, fig.bbox, lines_per_block)
        ]
        chars = sum(len(ln.text) for ln in inside)
        prose = sum(len(ln.text) for ln in inside if len(ln.text.split()) >= 10)
        if chars >= 150 and prose >= 0.5 * chars:
            continue
        kept.append(fig)
        if page.number == 0 and box_area(fig.bbox) >= 0.35 * box_area(page.rect):
            continue
        for ln in inside:
            ln.drop = True
        fig.labels = [ln.text for ln in inside]
    page.figures = kept
    width = text_width(page)
    for fig in sorted(page.figures, key=lambda f: (f.bbox[1], f.bbox[0])):
        best: tuple[float, TextLine] | None = None
        for ln in page.lines:
            if ln.drop or not FIGURE_CAPTION.match(ln.text) or x_overlap(ln.bbox, fig.bbox) <= 0:
                continue
            below = ln.bbox[1] - fig.bbox[3]
            above = fig.bbox[1] - ln.bbox[3]
            if -5 <= below <= _CAPTION_GAP_BELOW:
                dist = max(below, 0.0)
            elif -5 <= above <= _CAPTION_GAP_ABOVE:
                dist = max(above, 0.0) + 1000.0  # a caption below wins over one above
            else:
                continue
            if best is None or dist < best[0]:
                best = (dist, ln)
        if best is None:
            continue
        caption = [best[1]]
        # short lines between the figure and a caption below it are labels too ("64-bit AXI4")
        top, bottom = (
            (fig.bbox[3], best[1].bbox[1]) if best[0] < 1000 else (best[1].bbox[3], fig.bbox[1])
        )
        between = (fig.bbox[0], top, fig.bbox[2], bottom)
        for ln in page.lines:
            if ln.drop or ln is best[1] or len(ln.text.split()) > 6:
                continue
            if center_in(ln.bbox, between):
                ln.drop = True
                fig.labels.append(ln.text)
        following = [ln for ln in page.lines if ln.block == best[1].block and not ln.drop]
        for ln in following[following.index(best[1]) + 1 :]:
            if not wraps_into(caption[-1], ln, width):
                break
            caption.append(ln)
        for ln in caption:
            ln.drop = True
        fig.caption = " ".join(ln.text for ln in caption)
