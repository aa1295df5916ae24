"""Numbers and their units in text: the one reading of "50 um", "-0.53 V" or "380 µA/µm".

Claim verification compares a number a claim states with the numbers of the lines it cites,
and a unit is part of the number (``50 um`` is not ``50 ns``). The rules here decide what
counts as a number (``5`` is not in ``0.5`` or ``15``; a minus written as a sign belongs to
the number, the one in ``1-100`` does not) and write every unit one way (``microns`` ->
``um``, ``µA/µm`` -> ``ua/um``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# minus signs as PDFs and typeset datasheets write them (U+2212 minus, U+2013 en dash)
MINUS_SIGNS = "-\u2212\u2013"
# a number: hexadecimal (0x1F), decimal with an optional exponent (1e-7, 5E3), with its sign
# when a minus stands before it as a sign (not "1-100")
NUMBER = re.compile(
    rf"(?<![\w.])((?:(?<![^\s,(\[=:`])[{MINUS_SIGNS}])?"
    r"(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))(?![\w]|\.\d)"
)
_UNIT_CHARS = "A-Za-z\u00b5\u03bc\u03a9\u2126°%²³"  # micro sign, Greek mu, omega, ohm sign
_UNIT_AFTER = re.compile(rf"^`?\s*([{_UNIT_CHARS}]+(?:/[{_UNIT_CHARS}]+)*)")
_UNIT_SPLIT = re.compile(r"[\s,;()\[\]|=:`*]+")
# spellings of one unit: a claim may write "microns" where the manual writes "um"
UNITS: dict[str, str] = {
    **dict.fromkeys(("um", "µm", "micron", "microns", "micrometer", "micrometers"), "um"),
    **dict.fromkeys(("um²", "µm²", "um2", "µm2"), "um2"),
    **dict.fromkeys(("af", "attofarad", "attofarads"), "af"),
    **dict.fromkeys(("cnt", "contact", "contacts"), "cnt"),
    **dict.fromkeys(("dec", "decade"), "dec"),
    **dict.fromkeys(("mω", "mohm", "milliohm", "milliohms"), "mohm"),
    **dict.fromkeys(("□", "sq", "square"), "sq"),
    **dict.fromkeys(("nm", "nanometer", "nanometers"), "nm"),
    **dict.fromkeys(("mm", "millimeter", "millimeters"), "mm"),
    **dict.fromkeys(("ps", "picosecond", "picoseconds"), "ps"),
    **dict.fromkeys(("ns", "nanosecond", "nanoseconds"), "ns"),
    **dict.fromkeys(("us", "µs", "microsecond", "microseconds"), "us"),
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("s", "sec", "second", "seconds"), "s"),
    **dict.fromkeys(("ff", "femtofarad", "femtofarads"), "ff"),
    **dict.fromkeys(("pf", "picofarad", "picofarads"), "pf"),
    **dict.fromkeys(("nf", "nanofarad", "nanofarads"), "nf"),
    **dict.fromkeys(("v", "volt", "volts"), "v"),
    **dict.fromkeys(("mv", "millivolt", "millivolts"), "mv"),
    **dict.fromkeys(("a", "amp", "amps", "ampere", "amperes"), "a"),
    **dict.fromkeys(("ma", "milliamp", "milliamps", "milliampere", "milliamperes"), "ma"),
    **dict.fromkeys(("ua", "µa", "microamp", "microamps", "microampere", "microamperes"), "ua"),
    **dict.fromkeys(("na", "nanoamp", "nanoamps", "nanoampere", "nanoamperes"), "na"),
    **dict.fromkeys(("w", "watt", "watts"), "w"),
    **dict.fromkeys(("mw", "milliwatt", "milliwatts"), "mw"),
    **dict.fromkeys(("uw", "µw", "microwatt", "microwatts"), "uw"),
    **dict.fromkeys(("hz", "hertz"), "hz"),
    **dict.fromkeys(("khz", "kilohertz"), "khz"),
    **dict.fromkeys(("mhz", "megahertz"), "mhz"),
    **dict.fromkeys(("ghz", "gigahertz"), "ghz"),
    **dict.fromkeys(("ohm", "ohms", "Ω"), "ohm"),
    **dict.fromkeys(("kohm", "kohms", "kω"), "kohm"),
    # case decides the prefix here: mΩ is a milliohm, MΩ a megaohm (looked up before lowering)
    **dict.fromkeys(("MΩ", "Mohm", "MOhm", "megohm", "megohms", "megaohm", "megaohms"), "megohm"),
    **dict.fromkeys(("%", "percent", "pct"), "%"),
    **dict.fromkeys(("db", "decibel", "decibels"), "db"),
    **dict.fromkeys(("dbm",), "dbm"),
    **dict.fromkeys(("°c", "celsius"), "°c"),
    **dict.fromkeys(("bit", "bits"), "bit"),
    **dict.fromkeys(("byte", "bytes"), "byte"),
    **dict.fromkeys(("cycle", "cycles"), "cycle"),
}


def unit_at(text: str, end: int) -> str:
    """The normalised unit written right after a number ending at ``end`` ("" when none)."""
    match = _UNIT_AFTER.match(text[end:])
    if not match:
        return "%" if text[end:].lstrip("` ")[:1] == "%" else ""
    return normalised_unit(match.group(1))


def normalised_unit(word: str) -> str:
    """A unit in one spelling (``microns`` -> ``um``, ``µA/µm`` -> ``ua/um``); "" when ``word``
    is not a unit. Every part of a compound unit must be one."""
    word = word.replace("\u03bc", "\u00b5").replace("\u2126", "\u03a9")  # Greek mu, ohm sign
    parts = [UNITS.get(p, UNITS.get(p.lower(), "")) for p in word.split("/")]
    return "/".join(parts) if all(parts) else ""


def number_text(token: str) -> str:
    """A number token in one spelling: any minus sign written ``-`` (``−0.53`` -> ``-0.53``)."""
    return token.translate(_MINUS) if token[:1] in MINUS_SIGNS else token


_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})


def number_matches(number: str, text: str) -> Iterator[re.Match[str]]:
    """Where ``number`` occurs in ``text`` as that number: one of the text's numbers, whole and
    with its sign. ``5`` is not in ``0.5``, ``15``, ``5e3`` or ``0x5``; ``0.53`` is not where
    the text says ``-0.53`` or ``−0.53`` (a sign before it makes another number); ``7`` is not
    the exponent of ``1e-7``."""
    wanted = number_text(number)
    for match in NUMBER.finditer(text):
        if number_text(match.group(1)) == wanted:
            yield match


def units_named(text: str) -> set[str]:
    """The normalised units ``text`` names anywhere (``µA/µm`` names ``ua``)."""
    return {normalised_unit(w.strip(".")) for w in _UNIT_SPLIT.split(text)} - {""}
