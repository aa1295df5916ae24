"""Hardware categories: how a document is classified, its initial block skeleton, and the
category-specific extraction descriptions (the paper's section I-B and I-C).

The paper defines four categories (sensor, processing, power, communication); our corpus adds
interface/bus specifications (Wishbone) and process/PDK specifications (IHP SG13G2, its I/O
pad library). A skeleton is only the starting hierarchy: routing creates blocks under it.

Each skeleton block carries ``keywords`` (regex fragments matched at word starts in headings
and table titles, used by the offline router) and ``synonyms`` (heading texts that name the
block itself, so routing does not create a child that repeats its parent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

CATEGORIES = ("sensor", "processing", "power", "communication", "interface", "process", "general")


@dataclass(frozen=True)
class SkeletonBlock:
    name: str
    keywords: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()
    children: tuple[SkeletonBlock, ...] = field(default_factory=tuple)


def _b(
    name: str, keywords: str = "", synonyms: str = "", *children: SkeletonBlock
) -> SkeletonBlock:
    kws = tuple(k.strip() for k in keywords.split("|") if k.strip())
    syn = tuple(s.strip().lower() for s in synonyms.split("|") if s.strip())
    return SkeletonBlock(name, kws, (name.lower(), *syn), tuple(children))


# Blocks every datasheet has, whatever its category.
COMMON = (
    _b(
        "General",
        "general information|overview|introduction|features|description",
        "general|general information|overview|introduction|features|description",
    ),
    _b(
        "Electrical Characteristics",
        "electrical characteristics|electrical specifications?|dc characteristics|"
        "ac characteristics|electrical parameters|specifications",
        "specifications|electrical specifications|characteristics|electrical parameters",
    ),
    _b(
        "Absolute Maximum Ratings",
        "absolute maximum|maximum ratings|abs\\.? max",
        "absolute maximum ratings|maximum ratings",
    ),
    _b(
        "Operating Conditions",
        "operating conditions|recommended operating|environmental|operating temperature",
        "recommended operating conditions",
    ),
    _b(
        "Package and Pins",
        "pin functions?|pin descriptions?|pinout|pin configuration|package|"
        "mechanical|ball map|footprint",
        "pins|pin functions|pin description|package",
    ),
)

SKELETONS: dict[str, tuple[SkeletonBlock, ...]] = {
    "sensor": (
        _b("Power", "power supply|supply|power consumption|current consumption|vdd|power modes?"),
        _b(
            "Sensing Elements",
            "sensor|sensing|measurement|accuracy|resolution|noise|"
            "sensitivity|full.scale|output data rate|odr|range",
        ),
        _b(
            "Host Interface",
            "interface|digital interface|serial|communication",
            "",
            _b("I2C", "i2c|i²c|twi"),
            _b("SPI", "spi\\b"),
            _b("UART", "uart"),
        ),
        _b("Configuration and Registers", "register|configuration|memory map|modes?\\b"),
    ),
    "processing": (
        _b(
            "Core",
            "core\\b|pipeline|instruction|cpu|execution|branch|isa\\b|risc-v|features|overview",
        ),
        _b("Memory", "memory|cache|iccm|dccm|sram|flash|rom\\b|tcm"),
        _b("Control/Status Registers", "registers?\\b|csrs?\\b", "registers|csrs"),
        _b("Interrupts", "interrupt|pic\\b|nmi|exception|trap|plic"),
        _b("Debug", "debug|trigger|jtag|breakpoint|trace"),
        _b("Power Management", "power management|power|halt|sleep|clock gating|pmu|low.power"),
        _b("Timers", "timers?\\b|counters?\\b|performance monitor"),
        _b("Bus Interfaces", "bus\\b|axi|ahb|dma|interconnect|system bus"),
        _b("Clocking and Reset", "clock|reset|pll"),
        _b("Peripherals", "peripheral|uart|spi\\b|i2c|gpio|adc|pwm"),
    ),
    "power": (
        _b("Input", "input voltage|input\\b|vin\\b|supply voltage|uvlo"),
        _b("Output", "output voltage|output\\b|vout|load current"),
        _b("Regulation", "regulation|accuracy|psrr|ripple|transient|noise"),
        _b("Protection", "protection|current limit|thermal shutdown|short.circuit|overvoltage"),
        _b("Control", "enable|shutdown|soft.start|control|power.good"),
        _b("Thermal", "thermal|junction|temperature|dissipation"),
        _b("Efficiency", "efficiency|dropout|quiescent"),
    ),
    "communication": (
        _b("Transmitter", "transmit|tx\\b|output power|modulation"),
        _b("Receiver", "receive|rx\\b|sensitivity|demodulat"),
        _b("Physical Layer", "rf\\b|antenna|phy\\b|channel|frequency band|radio"),
        _b("Protocol", "protocol|packet|frame|stack|mac\\b|link"),
        _b(
            "Host Interface",
            "host interface|interface|uart|spi\\b|i2c|usb|sdio",
            "",
            _b("UART", "uart"),
            _b("SPI", "spi\\b"),
            _b("I2C", "i2c|i²c"),
        ),
        _b("Power", "power supply|supply|current consumption|power modes?|sleep"),
    ),
    "interface": (
        _b("Signals", "signals?\\b|ports?\\b|tag types?|tags?\\b|signal description"),
        _b(
            "Bus Cycles",
            "bus cycles?|cycles?\\b|transfers?\\b|handshak|single read|"
            "block read|block write|rmw|read-modify-write|burst",
            "bus cycles",
        ),
        _b("Timing", "timing|clock|setup|hold"),
        _b(
            "Data Organization",
            "data organi[sz]ation|endian|granularity|byte ordering|"
            "nomenclature|byte lane|operand size",
        ),
        _b(
            "Interconnection",
            "interconnect|intercon|shared bus|crossbar|point.to.point|data flow|arbit",
        ),
        _b("Master Interface", "master"),
        _b("Slave Interface", "slave"),
        _b(
            "Compliance and Datasheets",
            "datasheet|complian|rules?\\b|permissions?|"
            "recommendations?|observations?|specification",
        ),
    ),
    "process": (
        _b(
            "Devices",
            "devices?\\b|transistors?",
            "devices",
            _b("MOS Transistors", "mos\\b|nmos|pmos|inmos|hv-[np]mos|mosfet|transistor"),
            _b("Bipolar Transistors", "bipolar|npn|pnp|hbt"),
            _b("Resistors", "resist|rsil|rppd|rhigh|sheet resistance"),
            _b("Capacitors", "capacit|mim\\b|varicap|varactor"),
            _b("Diodes", "diode|schottky"),
        ),
        _b(
            "Interconnect",
            "interconnect|metal|contacts?\\b|vias?\\b",
            "",
            _b("Metal Layers", "metal|topmetal"),
            _b("Contacts and Vias", "contacts?\\b|vias?\\b"),
        ),
        _b("Layer Stack", "layer thickness|thickness|layer stack|cross.section|oxide"),
        _b("Parasitics", "parasitic capacitances?|parasitics?"),
        _b("Reliability", "current densit|electromigration|reliability|lifetime"),
        _b(
            "Process Control",
            "process control|pass/fail|information parameters|"
            "measurement conditions|process flow|processing sequence",
        ),
        _b(
            "Cell Library",
            "cells?\\b|pads?\\b|iopad|i/o\\b|io\\b|inout|tri_?out|inputs?\\b|"
            "outputs?\\b|library|timing|power information|leakage|pin cap",
            "cells|cell library",
            _b("Timing", "timing|delay|slew|transition", "timing information|delay"),
            _b(
                "Power",
                "power information|power\\b|energy|leakage",
                "power information|power|internal power|leakage power",
            ),
            _b("Area and Pins", "area\\b|pin cap|pin capacitance", "area|pin capacitance"),
            _b("Function", "truth table|function", "truth table|functionality"),
        ),
    ),
    "general": (),
}

# What each category's extraction description asks for (paper: high-level descriptions with
# examples, not a list of target properties).
GENERAL_DESCRIPTION = (
    "Extract every engineering property explicitly stated in the chunk: power requirements "
    "(supply voltages, currents, power), communication interfaces and their parameters "
    "(e.g. I2C, SPI, UART, ADC, PWM, GPIO), signal characteristics (logic levels, timing, "
    "capacitance), operating environment (temperature, humidity, pressure ranges), connector, "
    "package and pin information, and any other quantitative or qualitative specification."
)
CATEGORY_DESCRIPTIONS: dict[str, str] = {
    "sensor": "Sensor: sensing characteristics and measurement performance, e.g. measurement "
    "range, precision and accuracy, resolution, noise, sensitivity, output data rate, "
    "operating modes and their current consumption.",
    "processing": "Processing component: core and instruction-set features, clock "
    "frequencies, memories and caches (sizes, protection), registers and their fields "
    "(bits, access, reset values), interrupts, debug, timers, bus interfaces, power states.",
    "power": "Power module: power conversion and regulation characteristics, e.g. input and "
    "output voltage ranges, output current, dropout voltage, efficiency, quiescent current, "
    "line/load regulation, PSRR, protection thresholds, thermal limits.",
    "communication": "Communication module: radio and link characteristics, e.g. frequency "
    "bands, output power, receiver sensitivity, data rates, supported protocols, host "
    "interfaces, current consumption per mode.",
    "interface": "Interface/bus specification: signals and their directions and widths, "
    "bus cycle types and handshakes, timing rules, data organisation (granularity, "
    "endianness, port sizes), tags, burst types and codes, and normative rules.",
    "process": "Process/PDK specification or cell library: device parameters (threshold "
    "voltages, saturation and off currents, breakdown voltages, gains, transit frequency), "
    "sheet resistances, capacitances, layer thicknesses, current densities, with the "
    "device geometry or measurement condition they apply to; cell areas, pin capacitances, "
    "delays and power per cell and timing arc.",
    "general": "",
}

# Signals per category, counted over a document's text to classify it.
_CATEGORY_SIGNALS: dict[str, str] = {
    "process": r"\bprocess (?:spec|specification|control|parameters)|\bpdk\b|\bbicmos\b|"
    r"\bsheet resistance|\bthreshold voltage|\bstandard cells?\b|\bcell library|\bio ?pad|"
    r"\bpad cells?\b|\bcell name\b|\bliberty\b|\blayer thickness|\bmetal\d\b",
    "interface": r"\bbus cycles?\b|\bmaster\b|\bslave\b|\binterconnect|\bhandshak|"
    r"\bbus (?:protocol|specification|interface)|\bintercon\b",
    "processing": r"\bcore\b|\bcpu\b|\binstructions?\b|\bpipeline|\bcsrs?\b|\brisc-v\b|"
    r"\bmicrocontroller|\bprocessor",
    "power": r"\bregulators?\b|\bldo\b|\bdropout|\bbuck\b|\bboost\b|\bconverter|\bquiescent",
    "sensor": r"\bsensors?\b|\baccelerometer|\bgyroscope|\bhumidity|\bmagnetometer",
    "communication": r"\btransceiver|\bwireless|\bbluetooth|\bwi-?fi\b|\bgnss\b|\brf\b|"
    r"\bmodem\b|\blora\b",
}
_SIGNALS = {k: re.compile(v, re.IGNORECASE) for k, v in _CATEGORY_SIGNALS.items()}


def classify(texts: Iterable[str], title: str = "") -> tuple[str, dict[str, int]]:
    """(category, hit counts): the category whose signals occur most in the text; the title
    counts ten times. ``general`` when nothing matches."""
    counts = dict.fromkeys(_SIGNALS, 0)
    for text in [title] * 10 + list(texts):
        for name, rx in _SIGNALS.items():
            counts[name] += len(rx.findall(text or ""))
    best = max(counts, key=lambda k: (counts[k], -list(counts).index(k)))
    return (best if counts[best] else "general"), counts


def skeleton(category: str) -> tuple[SkeletonBlock, ...]:
    """Top-level skeleton blocks of a category (category blocks first, then the common ones)."""
    return (*SKELETONS.get(category, ()), *COMMON)


def iter_blocks(
    blocks: tuple[SkeletonBlock, ...], parent: tuple[str, ...] = ()
) -> Iterable[tuple[tuple[str, ...], SkeletonBlock]]:
    """(path of names from the top, block) depth-first in declaration order."""
    for block in blocks:
        path = (*parent, block.name)
        yield path, block
        yield from iter_blocks(block.children, path)


__all__ = [
    "CATEGORIES",
    "CATEGORY_DESCRIPTIONS",
    "GENERAL_DESCRIPTION",
    "SKELETONS",
    "SkeletonBlock",
    "classify",
    "iter_blocks",
    "skeleton",
]
