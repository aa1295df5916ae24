"""Datasheet value helpers: numbers, units, symbol-font glyphs and heading numbers.

What a number, a unit or a number-with-unit cell is in a datasheet (``55 MHz``, ``µA/µm``,
``0xFFFF_FFFF``, ``3.300`` = ``3.3``), so extraction, faithfulness and retrieval agree on it.
Words, tokens, stems and stop words are the shared ones of ``edaqa_pipeline.text.tokens``.
"""

from __future__ import annotations

import math
import re
import unicodedata

from edaqa_pipeline.parsing.pdf_layout import SYMBOL_PRIVATE_USE

# Prefixes and base units seen in datasheets and process specifications. A unit is a base with
# an optional SI prefix, an optional exponent, optionally divided by another unit
# ("µA/µm", "fF/µm²", "ppm/K", "%/V", "mA/Via", "LOG10 (A/µm)" is handled by the caller).
_PREFIX = "[yzafpnuµμmckKMGT]?"
_BASE = (
    r"V|A|W|Hz|s|F|pf|nf|uf|µf|ff|H|Ω|Ohm|ohm|ohms|Ohms|B|b|bit|bits|byte|bytes|Byte|Bytes|g|m|J|"
    r"°C|℃|°F|K|dB|dBm|dBc|ppm|%|percent|cycles?|clocks?|CNT|Cnt|VIA|Via|via|sq|□|LSB|lsb|"
    r"SLICE|slices?|Mbyte|Kbyte|Gbyte|Mbps|Gbps|kbps|bps|baud|dec|rpm|lux|Pa|hPa|kPa|mil|in"
)
_UNIT_ATOM = rf"(?:{_PREFIX}(?:{_BASE})(?:[²³23])?)"
UNIT_RE = rf"(?:{_UNIT_ATOM}(?:\s?[/·*]\s?{_UNIT_ATOM})*(?:/[A-Za-z]+)?)"
_UNIT_FULL = re.compile(rf"^\(?\s*{UNIT_RE}\s*\)?$")
_LOG_UNIT = re.compile(r"^LOG10\s*\(.+\)$", re.IGNORECASE)

NUMBER_RE = r"[-+±−–]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
HEX_RE = r"0[xX][0-9A-Fa-f_]+|\d[0-9A-Fa-f_]*[hH]|\d+'[bhdBHD][0-9A-Fa-f_xXzZ]+"
_NUMBER_FULL = re.compile(rf"^(?:{NUMBER_RE}|{HEX_RE})$")
_NUMBER_WITH_UNIT = re.compile(rf"^(?P<num>{NUMBER_RE})\s*(?P<unit>{UNIT_RE})?$")
_NUMBER_LIST = re.compile(rf"^(?:{NUMBER_RE})(?:\s+(?:{NUMBER_RE}))+$")
_LABELLED_NUMBER = re.compile(
    rf"^(?:min|max|typ|target|nom)\.?\s+(?P<num>{NUMBER_RE})$", re.IGNORECASE
)
# Numbers written as words in prose ("at least two full core clock cycles", "sixteen regions").
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "sixteen": 16, "twenty": 20,
    "thirty-two": 32, "sixty-four": 64,
}  # fmt: skip
_WORD_OF = {v: k for k, v in NUMBER_WORDS.items()}
EMPTY_VALUES = frozenset({"", "-", "–", "—", "−", "n/a", "N/A", "na", "NA", "tbd", "TBD", "/"})

_NUMBERING = re.compile(
    r"^(?:(?:chapter|appendix|part|section)\s+[\dA-Z]{1,3}\s*[–\-:.]?\s*"
    r"|(?:\d{1,2}|[A-Z])(?:\.\d{1,3})+\.?\s+|\d{1,2}\.?\s+(?=[A-Za-z])|[A-Z]\.\s+)",
    re.IGNORECASE,
)


# Glyphs of the Symbol font that PDF text layers report in the private use area.
def decode_symbols(text: str) -> str:
    """Symbol-font private-use glyphs to the characters they draw (U+F057 -> "Ω")."""
    return text.translate(SYMBOL_PRIVATE_USE)


def normalise(text: str) -> str:
    """NFKC, lower case, one space, unified micro sign and dashes (for comparisons)."""
    text = unicodedata.normalize("NFKC", decode_symbols(text or ""))
    text = text.replace("μ", "µ").replace("−", "-").replace("–", "-").replace("—", "-")
    text = text.replace("’", "'").replace("‘", "'")
    return " ".join(text.lower().split())


def is_empty_value(cell: str | None) -> bool:
    return cell is None or cell.strip() in EMPTY_VALUES


def is_number(cell: str) -> bool:
    """A plain number (signed, decimal, with thousands separators) or a hex/Verilog literal."""
    return bool(_NUMBER_FULL.match(cell.strip()))


def split_number_unit(cell: str) -> tuple[str, str] | None:
    """ "55 MHz" -> ("55", "MHz"); "3.3" -> ("3.3", ""); "Min 1.35" -> ("1.35", ""); else None."""
    text = cell.strip()
    labelled = _LABELLED_NUMBER.match(text)
    if labelled:
        return labelled.group("num"), ""
    if is_number(text):
        return text, ""
    match = _NUMBER_WITH_UNIT.match(text)
    if match and match.group("unit"):
        return match.group("num").strip(), match.group("unit").strip()
    bit = re.match(rf"^({NUMBER_RE})-(bits?|bytes?)$", text, re.IGNORECASE)
    if bit:
        return bit.group(1), bit.group(2)
    return None


def is_numeric_cell(cell: str) -> bool:
    """A cell holding a number, a number with a unit, or a hex literal."""
    return split_number_unit(cell) is not None


def is_number_list(cell: str) -> bool:
    return bool(_NUMBER_LIST.match(cell.strip()))


def is_unit(text: str) -> bool:
    """``text`` is a unit on its own ("V", "µA/µm", "(pf)", "fF/µm²", "LOG10 (A/µm)")."""
    text = text.strip()
    if not text or len(text) > 24:
        return False
    return bool(_UNIT_FULL.match(text) or _LOG_UNIT.match(text))


_HEADER_UNIT = re.compile(r"[(\[]\s*([^()\[\]]{1,16}?)\s*[)\]]")


def header_unit(label: str) -> tuple[str, str]:
    """("Voltage (V)") -> ("Voltage", "V"); the last bracketed unit wins; label kept when none.

    "Delay(ns) Slew(ns)" -> ("Delay Slew", "ns").
    """
    units = [m for m in _HEADER_UNIT.finditer(label) if is_unit(m.group(1))]
    if not units:
        return label.strip(), ""
    stripped = _HEADER_UNIT.sub(lambda m: " " if is_unit(m.group(1)) else m.group(0), label)
    return " ".join(stripped.split()), units[-1].group(1).strip()


def strip_numbering(heading: str) -> str:
    """ "2.8.1 Region Access Control Register (mrac)" -> "Region Access Control Register (mrac)";
    "Chapter 3 – WISHBONE Classic Bus Cycles" -> "WISHBONE Classic Bus Cycles"."""
    text = heading.strip()
    for _ in range(2):
        new = _NUMBERING.sub("", text).strip(" –-:.")
        if new == text or not new:
            break
        text = new
    return text or heading.strip()


def number_variants(value: str) -> set[str]:
    """Spellings under which a number may occur in a source text ("3.300" -> {"3.300", "3.3"},
    "2" -> {"2", "two"}, "two" -> {"two", "2"})."""
    text = normalise(value).replace(" ", "")
    text = text.lstrip("+±")
    out = {text}
    if text in NUMBER_WORDS:
        return {text, str(NUMBER_WORDS[text])}
    if text.startswith("-"):
        out.add(text[1:])
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        return out
    if math.isfinite(number):
        out.add(f"{number:g}")
        if number == int(number):
            out.add(str(int(number)))
            if int(number) in _WORD_OF:
                out.add(_WORD_OF[int(number)])
    return out
