"""Generate the sample PDF datasheet ``data/sample/nimbus_ldo_datasheet.pdf``.

The datasheet describes NX-LDO33, a fictional 3.3 V low-dropout regulator. It is part of the
original sample corpus of EDAQA and exercises the PDF path of the pipeline: prose paragraphs,
ruled specification tables that ``page.find_tables()`` detects, table and figure captions, a
vector block diagram and an embedded raster image.

The output is deterministic: the same pymupdf version always writes byte-identical files
(fixed metadata without dates, no random document id, in-memory generated image).

Usage::

    .venv/bin/python scripts/make_sample_datasheet.py [output.pdf]
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "data" / "sample" / "nimbus_ldo_datasheet.pdf"

PAGE_W, PAGE_H = 595.0, 842.0  # A4 in points
MARGIN = 50.0
BLACK = (0, 0, 0)
GREY = (0.35, 0.35, 0.35)
BLUE = (0.10, 0.25, 0.55)

METADATA = {
    "title": "NX-LDO33 300 mA Low-Dropout Regulator Datasheet",
    "author": "EDAQA sample corpus (fictional part)",
    "subject": "Fictional 3.3 V LDO regulator datasheet for the Nimbus sample corpus",
    "keywords": "LDO, regulator, datasheet, sample, Nimbus, EDAQA",
    "creator": "scripts/make_sample_datasheet.py",
    "producer": "pymupdf",
    "creationDate": "",
    "modDate": "",
    "trapped": "",
}

ELECTRICAL_HEADER = ["Parameter", "Symbol", "Conditions", "Min", "Typ", "Max", "Unit"]
ELECTRICAL_ROWS = [
    ["Input voltage range", "VIN", "-", "3.6", "-", "6.0", "V"],
    ["Output voltage", "VOUT", "IOUT = 1 mA", "3.234", "3.300", "3.366", "V"],
    ["Dropout voltage", "VDO", "IOUT = 300 mA", "-", "180", "250", "mV"],
    ["Quiescent current", "IQ", "IOUT = 0 mA", "-", "45", "60", "uA"],
    ["Line regulation", "REGLINE", "VIN = 3.6 V to 6.0 V", "-", "0.02", "0.08", "%/V"],
    ["Load regulation", "REGLOAD", "IOUT = 1 mA to 300 mA", "-", "0.4", "1.0", "%"],
    ["Current limit", "ILIM", "VOUT = 0.9 x VOUT(NOM)", "330", "450", "600", "mA"],
    ["Power supply rejection", "PSRR", "f = 1 kHz, IOUT = 10 mA", "-", "65", "-", "dB"],
]
ELECTRICAL_WIDTHS = [125, 55, 135, 40, 40, 40, 60]

RATINGS_HEADER = ["Parameter", "Symbol", "Min", "Max", "Unit"]
RATINGS_ROWS = [
    ["Input voltage", "VIN", "-0.3", "7.0", "V"],
    ["Enable pin voltage", "VEN", "-0.3", "VIN + 0.3", "V"],
    ["Output voltage", "VOUT", "-0.3", "4.0", "V"],
    ["Junction temperature", "TJ", "-40", "150", "\u00b0C"],
    ["Storage temperature", "TSTG", "-65", "150", "\u00b0C"],
    ["ESD rating, human body model", "VESD", "-", "2000", "V"],
]
RATINGS_WIDTHS = [175, 70, 70, 90, 90]


def paragraph(
    page: pymupdf.Page,
    y: float,
    text: str,
    *,
    size: float = 10.0,
    font: str = "helv",
    color=BLACK,
    height: float = 200.0,
) -> float:
    """Write a wrapped paragraph starting at ``y``; return the y below it."""
    rect = pymupdf.Rect(MARGIN, y, PAGE_W - MARGIN, y + height)
    rest = page.insert_textbox(
        rect, text, fontsize=size, fontname=font, color=color, lineheight=1.3
    )
    if rest < 0:
        raise ValueError(f"paragraph does not fit: {text[:40]!r}")
    return y + height - rest + 6.0


def heading(page: pymupdf.Page, y: float, text: str) -> float:
    page.insert_text((MARGIN, y + 12), text, fontsize=12.5, fontname="hebo", color=BLUE)
    return y + 22.0


def ruled_table(
    page: pymupdf.Page,
    x: float,
    y: float,
    widths: list[int],
    header: list[str],
    rows: list[list[str]],
    row_h: float = 19.0,
) -> float:
    """Draw a fully ruled table (outer frame and all inner lines); return its bottom y."""
    n_rows = len(rows) + 1
    total_w = float(sum(widths))
    bottom = y + n_rows * row_h
    shape = page.new_shape()
    # header background
    shape.draw_rect(pymupdf.Rect(x, y, x + total_w, y + row_h))
    shape.finish(color=None, fill=(0.88, 0.91, 0.96), width=0)
    for i in range(n_rows + 1):
        yy = y + i * row_h
        shape.draw_line((x, yy), (x + total_w, yy))
    xx = x
    for w in [0, *widths]:
        xx += w
        shape.draw_line((xx, y), (xx, bottom))
    shape.finish(color=BLACK, width=0.6)
    shape.commit()
    for r, cells in enumerate([header, *rows]):
        cx = x
        for w, text in zip(widths, cells, strict=True):
            font = "hebo" if r == 0 else "helv"
            cell = pymupdf.Rect(cx + 3, y + r * row_h + 3, cx + w - 3, y + (r + 1) * row_h)
            rest = page.insert_textbox(cell, text, fontsize=8.5, fontname=font, align=0)
            if rest < 0:
                raise ValueError(f"cell text does not fit: {text!r}")
            cx += w
    return bottom


def caption(page: pymupdf.Page, y: float, text: str) -> float:
    page.insert_text((MARGIN, y + 10), text, fontsize=9.5, fontname="hebo", color=BLACK)
    return y + 16.0


def footer(page: pymupdf.Page, number: int) -> None:
    page.draw_line((MARGIN, PAGE_H - 48), (PAGE_W - MARGIN, PAGE_H - 48), color=GREY, width=0.5)
    page.insert_text(
        (MARGIN, PAGE_H - 34),
        "NX-LDO33 - fictional part, written for the EDAQA sample corpus (CC0).",
        fontsize=8,
        fontname="helv",
        color=GREY,
    )
    page.insert_text(
        (PAGE_W - MARGIN - 40, PAGE_H - 34),
        f"Page {number}",
        fontsize=8,
        fontname="helv",
        color=GREY,
    )


def raster_icon(size: int = 48) -> pymupdf.Pixmap:
    """A small deterministic RGB image: a package top view with a pin-1 dot on a gradient."""
    data = bytearray()
    for yy in range(size):
        for xx in range(size):
            inside = 8 <= xx < size - 8 and 8 <= yy < size - 8
            pin = (xx - 14) ** 2 + (yy - 14) ** 2 <= 9
            lead = (not inside) and (yy % 8 in (2, 3, 4)) and (xx < 8 or xx >= size - 8)
            if pin:
                px = (230, 230, 230)
            elif inside:
                px = (40, 40, 48)
            elif lead:
                px = (190, 190, 200)
            else:
                shade = 200 + (xx + yy) * 50 // (2 * size)
                px = (shade, shade, 255)
            data.extend(px)
    return pymupdf.Pixmap(pymupdf.csRGB, size, size, bytes(data), False)


def block_diagram(page: pymupdf.Page, y: float) -> float:
    """Vector block diagram of the regulator plus an embedded raster package image."""
    shape = page.new_shape()
    bg = pymupdf.Rect(MARGIN + 90, y + 60, MARGIN + 190, y + 95)
    ea = pymupdf.Rect(MARGIN + 230, y + 60, MARGIN + 330, y + 95)
    pm = pymupdf.Rect(MARGIN + 230, y + 5, MARGIN + 330, y + 40)
    il = pymupdf.Rect(MARGIN + 90, y + 5, MARGIN + 190, y + 40)
    ts = pymupdf.Rect(MARGIN + 90, y + 115, MARGIN + 190, y + 150)
    fb = pymupdf.Rect(MARGIN + 370, y + 85, MARGIN + 400, y + 145)
    for r in (bg, ea, pm, il, ts):
        shape.draw_rect(r, radius=0.2)
    shape.draw_zigzag((fb.x0 + 15, fb.y0), (fb.x0 + 15, fb.y1), breadth=4)
    shape.finish(color=BLACK, fill=(0.95, 0.96, 0.99), width=0.8)
    # wires (polylines, no closed rectangles)
    shape.draw_polyline([(MARGIN, y + 22), (il.x0, y + 22)])  # VIN to current sense
    shape.draw_polyline([(il.x1, y + 22), (pm.x0, y + 22)])  # current sense to pass device
    shape.draw_polyline([(pm.x1, y + 22), (MARGIN + 460, y + 22)])  # pass device to VOUT
    shape.draw_polyline([(fb.x0 + 15, y + 22), (fb.x0 + 15, fb.y0)])
    shape.draw_polyline([(fb.x0 + 15, fb.y1), (fb.x0 + 15, y + 165)])  # divider to GND
    shape.draw_polyline([(fb.x0 + 15, y + 115), (ea.x1 - 20, y + 115), (ea.x1 - 20, ea.y1)])
    shape.draw_polyline([(bg.x1, y + 77), (ea.x0, y + 77)])  # reference to amplifier
    shape.draw_polyline([(ea.x0 + 50, ea.y0), (pm.x0 + 50, pm.y1)])  # amplifier drives gate
    shape.draw_polyline([(ts.x1, y + 132), (ea.x0 + 20, y + 132), (ea.x0 + 20, ea.y1)])
    shape.draw_polyline([(MARGIN, y + 132), (ts.x0, y + 132)])  # EN
    shape.draw_polyline([(MARGIN + 200, y + 165), (MARGIN + 460, y + 165)])  # GND rail
    shape.finish(color=BLACK, width=0.8, closePath=False)
    for cx, cy in (
        (MARGIN + 460, y + 22),
        (MARGIN, y + 22),
        (MARGIN, y + 132),
        (MARGIN + 460, y + 165),
    ):
        shape.draw_circle((cx, cy), 3)
    shape.finish(color=BLACK, fill=BLACK)
    shape.commit()
    for rect, label in (
        (bg, "Bandgap reference"),
        (ea, "Error amplifier"),
        (pm, "PMOS pass device"),
        (il, "Current limit"),
        (ts, "Thermal shutdown"),
    ):
        page.insert_textbox(
            pymupdf.Rect(rect.x0 + 2, rect.y0 + 12, rect.x1 - 2, rect.y1),
            label,
            fontsize=8,
            fontname="helv",
            align=1,
        )
    page.insert_text((fb.x1 + 4, fb.y0 + 32), "R1/R2", fontsize=8, fontname="helv")
    for text, pos in (
        ("VIN", (MARGIN, y + 15)),
        ("VOUT", (MARGIN + 445, y + 15)),
        ("EN", (MARGIN, y + 125)),
        ("GND", (MARGIN + 445, y + 180)),
    ):
        page.insert_text(pos, text, fontsize=8, fontname="hebo")
    icon = pymupdf.Rect(PAGE_W - MARGIN - 48, y + 60, PAGE_W - MARGIN, y + 108)
    page.insert_image(icon, pixmap=raster_icon())
    page.insert_text(
        (icon.x0 - 4, icon.y1 + 11), "DFN-6 top view", fontsize=7, fontname="helv", color=GREY
    )
    return y + 190.0


def build() -> pymupdf.Document:
    doc = pymupdf.open()

    # ---------------- page 1 ----------------
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((MARGIN, 78), "NX-LDO33", fontsize=24, fontname="hebo", color=BLUE)
    page.insert_text(
        (MARGIN, 100),
        "300 mA Low-Dropout Linear Regulator with 3.3 V Fixed Output",
        fontsize=13,
        fontname="helv",
        color=BLACK,
    )
    page.draw_line((MARGIN, 110), (PAGE_W - MARGIN, 110), color=BLUE, width=1.2)
    y = 124.0
    y = heading(page, y, "1 Description")
    y = paragraph(
        page,
        y,
        (
            "The NX-LDO33 is a low-dropout linear regulator that delivers up to 300 mA from an "
            "input supply between 3.6 V and 6.0 V. The output voltage is fixed at 3.3 V with an "
            "accuracy of 2 percent over load and line. The device is intended for the analog and "
            "I/O supplies of the Nimbus reference chip and is stable with a small ceramic output "
            "capacitor."
        ),
        height=70,
    )
    y = paragraph(
        page,
        y,
        (
            "The quiescent current is 45 uA. The dropout voltage is 180 mV at the full load of "
            "300 mA. When the EN pin is driven low, the regulator enters shutdown and the supply "
            "current falls below 1 uA. A foldback current "
            "limit and a thermal shutdown at 160 \u00b0C "
            "protect the device against short circuits and overload."
        ),
        height=70,
    )
    y = heading(page, y + 4, "2 Specifications")
    y = paragraph(
        page,
        y,
        (
            "Unless otherwise noted, the limits below apply "
            "at TA = 25 \u00b0C, VIN = 4.3 V, EN = VIN, "
            "CIN = 1 uF and COUT = 2.2 uF. Typical values are not production tested."
        ),
        height=40,
    )
    y = caption(page, y, "Table 1. Electrical Characteristics")
    y = ruled_table(page, MARGIN, y + 2, ELECTRICAL_WIDTHS, ELECTRICAL_HEADER, ELECTRICAL_ROWS)
    y = paragraph(
        page,
        y + 10,
        (
            "The output voltage tolerance of Table 1 includes the load regulation at IOUT = 1 mA. "
            "The minimum input voltage for full specified performance is 3.6 V; between 3.3 V and "
            "3.6 V the device operates in dropout and the output follows the input."
        ),
        height=55,
    )
    y = heading(page, y + 4, "3 Pin Functions")
    paragraph(
        page,
        y,
        (
            "VIN (pin 1): regulator input. EN (pin 3): enable input, active high, with an internal "
            "pull-down of 1 MOhm. VOUT (pin 6): regulated "
            "output. GND (pins 2 and 5 and the exposed "
            "pad): ground. Pin 4 is not connected."
        ),
        height=55,
    )
    footer(page, 1)

    # ---------------- page 2 ----------------
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    y = heading(page, 60.0, "4 Functional Block Diagram")
    y = paragraph(
        page,
        y,
        (
            "A bandgap reference drives the error amplifier, which controls the gate of the PMOS "
            "pass device. The internal resistor divider R1/R2 feeds the output voltage back to the "
            "amplifier. The current limit and thermal shutdown "
            "blocks override the amplifier during "
            "faults."
        ),
        height=55,
    )
    y = block_diagram(page, y + 6)
    y = caption(page, y, "Figure 1. Functional block diagram")
    y = heading(page, y + 12, "5 Absolute Maximum Ratings")
    y = paragraph(
        page,
        y,
        (
            "Stresses beyond those listed in Table 2 may cause permanent damage to the device. "
            "Operation at these limits is not implied; the device must be operated within the "
            "conditions of Table 1."
        ),
        height=42,
    )
    y = caption(page, y, "Table 2. Absolute Maximum Ratings")
    y = ruled_table(page, MARGIN, y + 2, RATINGS_WIDTHS, RATINGS_HEADER, RATINGS_ROWS)
    y = heading(page, y + 16, "6 Application Information")
    paragraph(
        page,
        y,
        (
            "An input capacitor of at least 1 uF and an "
            "output capacitor between 1 uF and 10 uF are "
            "required for stability. Place both capacitors within 5 mm of the device pins. The "
            "power dissipation is (VIN - VOUT) x IOUT; with VIN = 5.0 V and IOUT = 300 mA it is "
            "0.51 W, which keeps the junction below 125 \u00b0C on a four-layer board."
        ),
        height=70,
    )
    footer(page, 2)

    doc.set_metadata(METADATA)
    return doc


def save(doc: pymupdf.Document, out: Path) -> None:
    options = {"garbage": 4, "deflate": True, "no_new_id": True}
    if "reproducible" in inspect.signature(pymupdf.Document.save).parameters:
        options["reproducible"] = True
    out.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(out), **options)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    doc = build()
    save(doc, out)
    doc.close()
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
