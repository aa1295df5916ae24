"""The offline property rules on the text they are meant for: register / bit-field tables and
prose statements (a limit, a range, "X is N", "X = N", counts, bare mentions), each with the
rule that produced it, and the offline faithfulness check that must accept what they read."""

from __future__ import annotations

import pytest

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks
from edaqa_pipeline.extraction.datasheets.properties import extract_properties
from edaqa_pipeline.extraction.datasheets.prose_rules import sentence_properties
from edaqa_pipeline.extraction.datasheets.spec_rules import (
    register_name,
    table_kind,
    table_properties,
)
from edaqa_pipeline.extraction.datasheets.tables import read_table
from edaqa_pipeline.graphs.hwkg.faithfulness import judge, offline_verdict
from edaqa_pipeline.model import stable_id

REGISTER = [
    ["Field", "Bits", "Description", "Access", "Reset"],
    ["Reserved", "31:19", "Reserved", "R", "0"],
    ["dqc", "18:16", "DMA QoS control (see Section 2.13.3)", "R/W", "7"],
    ["bound", "15:0", "Bound", "R/W", "0xFFFF"],
]
CAPTION = "Table 10-1 Feature Disable Control Register (mfdc, at CSR 0x7F9)"


def test_register_table_one_property_per_field() -> None:
    view = read_table(REGISTER, CAPTION)
    assert table_kind(view) == "register"
    assert register_name(CAPTION) == "mfdc"
    got = [(r["name"], r["value"], r["conditions"], r["rule"]) for r in table_properties(view)]
    assert got == [
        ("mfdc dqc", "7", "bits 18:16; access R/W", "table:register"),
        ("mfdc bound", "0xFFFF", "bits 15:0; access R/W", "table:register"),
    ]  # the Reserved field is not a property
    assert "DMA QoS control" in table_properties(view)[0]["extra"]


@pytest.mark.parametrize(("sentence", "rule", "name", "value", "unit", "vmin", "vmax", "conditions"), [
    ("VDD shall not exceed 3.6 V.", "sentence:limit", "VDD", "3.6", "V", None, "3.6", ""),
    ("The supply voltage ranges from 1.71 V to 3.6 V at 25 °C.", "sentence:range", "supply voltage",
     "1.71 to 3.6", "V", "1.71", "3.6", "at 25 °C"),
    ("The maximum number of outstanding bus transactions is 255.", "sentence:is",
     "maximum number of outstanding bus transactions", "255", "", None, "255", ""),
    ("The standby current is 1.2 uA at 25 °C.", "sentence:is", "standby current", "1.2", "uA",
     None, None, "at 25 °C"),
    ("Electrical measurements are typically performed at T0 = 27°C (300K).", "sentence:equals",
     "T0", "27", "°C", None, None, ""),
    ("This is a throughput increase of 33%.", "sentence:of", "throughput increase", "33", "%", None, None, ""),
    ("Optional programmable interrupt controller supporting up to 255 external interrupts",
     "sentence:count", "external interrupts", "255", "", None, "255", ""),
    ("It has one out-of-pipeline 34-cycle latency divider.", "sentence:count", "latency divider", "34",
     "cycle", None, None, ""),
    ("The Spartan 2 bench-marked at about 428 Mbyte/sec, and was tested in hardware.",
     "sentence:mention", "Spartan 2 bench-marked", "428", "Mbyte/sec", None, None, ""),
    # a permitted range stated as two bounds, of a quantity its subject owns
    ("The clock input [CLK_I] MUST have a duty cycle that is no less than 40%, and no greater than 60%.",
     "sentence:bounds", "clock input [CLK_I] duty cycle", "40 to 60", "%", "40", "60", ""),
    ("The output voltage is no more than 1.9 V and no less than 1.7 V.", "sentence:bounds",
     "output voltage", "1.7 to 1.9", "V", "1.7", "1.9", ""),
    # a minimum length in clock cycles
    ("[RST_I] MUST be asserted for at least one complete clock cycle on all WISHBONE interfaces.",
     "sentence:cycles", "[RST_I] asserted", "one", "clock cycle", "one", None, ""),
    ("The nmi_int signal must be deasserted for a minimum of two full core clock cycles.",
     "sentence:cycles", "nmi_int signal deasserted", "two", "clock cycles", "two", None, ""),
    ("Multiplexed buses require at least two clock cycles to move the same information.",
     "sentence:cycles", "Multiplexed buses", "two", "clock cycles", "two", None, ""),
])
def test_prose_rules(sentence: str, rule: str, name: str, value: str, unit: str,
                     vmin: str | None, vmax: str | None, conditions: str) -> None:
    rows = sentence_properties(sentence)
    assert len(rows) == 1, rows
    r = rows[0]
    assert (r["rule"], r["name"], r["value"], r["unit"], r["value_min"], r["value_max"], r["conditions"]) == (
        rule, name, value, unit, vmin, vmax, conditions)
    assert r["extra"] == sentence  # the sentence is the property's context


@pytest.mark.parametrize("sentence", [
    "See Section 2.8.1 and Figure 1-2 for details.",
    "It is 3.3 V.",  # a pronoun is no name
    "The register at address 0x7C0 in the CSR space controls caching.",
    "Revision 1.9 of December 22, 2022.",
])
def test_prose_without_properties(sentence: str) -> None:
    assert sentence_properties(sentence) == []


def test_one_statement_per_number_and_conditions_are_not_values() -> None:
    rows = sentence_properties("for an 8bit data array the increment is 1, for a 16bit data array "
                               "the increment is 2, for a 32bit data array the increment is 4.")
    increments = [(r["value"], r["conditions"]) for r in rows if r["name"] == "increment"]
    assert increments == [("1", "for an 8bit data array"), ("2", "for a 16bit data array"),
                          ("4", "for a 32bit data array")]


def test_prose_properties_pass_the_offline_faithfulness_check() -> None:
    text = ("The core is a 9-stage, dual-issue pipeline. The 32-bit address space is divided into "
            "sixteen fixed-sized, contiguous 256MB regions. The nmi_int signal must be asserted for "
            "at least two full core clock cycles. Measurements use V DS = +0.05 V.")
    block = {"block_id": stable_id("blk", 1), "document": "p.pdf", "ordinal": 0, "kind": "paragraph",
             "section_path": ["1 Core"], "heading_level": 0, "text": text, "raw": text, "page": 3,
             "bbox": [0.0, 0.0, 1.0, 1.0], "meta": "{}"}
    chunks = datasheet_chunks([block])
    rows, _ = extract_properties(chunks, "processing")
    values = {(r["value"], r["unit"]) for r in rows}
    assert {("9", "stage"), ("256", "MB"), ("two", "clock cycles"), ("+0.05", "V")} <= values
    verdicts = judge(rows, {c["chunk_id"]: c["text"] for c in chunks})
    assert all(v.faithful for v in verdicts), [(r["name"], v.missing) for r, v in zip(rows, verdicts, strict=True)]
    # and it still refuses a number the chunk does not state
    assert not offline_verdict({**rows[0], "value": "11", "value_min": None, "value_max": None},
                               chunks[0]["text"]).faithful


@pytest.mark.parametrize("sentence", [
    "The core voltage must be at least 500 mV and at most 1.2 V.",  # two units: no one range
    "The SoC has a UART and the SPI controller requires 16 clock cycles.",
    "It has a reset that must be asserted for 2 clock cycles.",
    "If the core has a cache that is at least 4 KB and at most 64 KB, it is fast.",
    "The write latency is 1 cycle less than the read latency.",  # a difference, not a length
    "The device is 3 cycles faster than before.",
])
def test_bounds_and_cycles_refuse_what_they_cannot_name(sentence: str) -> None:
    rules = {r["rule"] for r in sentence_properties(sentence)}
    assert not rules & {"sentence:bounds", "sentence:cycles"}, sentence_properties(sentence)
