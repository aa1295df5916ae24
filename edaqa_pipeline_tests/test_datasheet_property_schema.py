"""One definition of a datasheet property's fields, and the prompts built on it held fixed.

``extraction.datasheets.property_llm.DatasheetProperty`` defines the fields; the per-chunk
task (``ExtractedProperty``) and the one-shot baseline (``graphs.hwkg.oneshot``) extend it.
Each task's tool definition (the response model's JSON schema, as sent) and its response
cache key are pinned: a change to either re-asks every cached call of that task, so it must
be a deliberate one (then update the digests here).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest

from edaqa_pipeline.extraction.datasheets import property_llm
from edaqa_pipeline.extraction.datasheets.property_llm import (
    DatasheetProperty,
    ExtractedProperty,
    PropertyList,
)
from edaqa_pipeline.graphs.hwkg import oneshot
from edaqa_pipeline.graphs.hwkg.oneshot import OneShotGraph, OneShotProperty
from edaqa_pipeline.llm import cache_key, get_task
from edaqa_pipeline.llm.offline import OfflineClient
from edaqa_pipeline.llm.structured import tool_definition

PACKAGE = Path(__file__).resolve().parents[1] / "edaqa_pipeline"
SHARED = ("name", "description", "value", "value_min", "value_typ", "value_max", "unit", "conditions")
CHUNK = {"chunk_id": "c1", "document": "d.pdf", "text": "Supply voltage 3.3 V", "table": None, "kind": "text",
         "section_path": ["Electrical"], "title": "t", "page": 2}
PART = {"document": "d.pdf", "category": "power", "part": 0, "parts": 1, "text": CHUNK["text"], "chunks": [CHUNK]}


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value).encode("utf-8")).hexdigest()


def _key(task: str, inputs: dict, model: type) -> str:  # type: ignore[type-arg]
    spec = get_task(task)
    return cache_key(provider="openai", model="m", task=task, system_prompt=spec.system_prompt,
                     user_prompt=spec.render_user(inputs), schema=model.model_json_schema(), temperature=0.2)


def test_both_property_models_extend_the_one_definition() -> None:
    for model in (ExtractedProperty, OneShotProperty):
        assert issubclass(model, DatasheetProperty)
        assert tuple(model.model_fields)[:len(SHARED)] == SHARED
        for name in SHARED:
            assert model.model_fields[name].annotation == DatasheetProperty.model_fields[name].annotation
            assert model.model_fields[name].default == DatasheetProperty.model_fields[name].default
    assert tuple(DatasheetProperty.model_fields) == SHARED


def test_no_other_model_declares_the_property_fields() -> None:
    """Only ``DatasheetProperty`` declares ``value_min``/``value_typ``/``value_max`` in a class body."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                          and isinstance(s.target, ast.Name)}
                if fields & {"value_min", "value_typ", "value_max"}:
                    found.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.name}")
    assert found == ["extraction/datasheets/property_llm.py:DatasheetProperty"]


def test_tool_definitions_and_cache_keys_are_unchanged() -> None:
    assert _digest(tool_definition(PropertyList)) == (
        "5df59095ecaf88f58d34e0f0453cf109b1df64582ce2511e5a330447d5791a85")
    assert _digest(tool_definition(OneShotGraph)) == (
        "0e741571f9eb7157fda48851f1ac1de9de73eb16d995267fe10fe85aa172fb2d")
    assert _key(property_llm.TASK, property_llm.llm_inputs(CHUNK, "power"), PropertyList) == (
        "11c93a45cf9081271415a35add1143bf2044749ff891655e738272741c386c6c")
    assert _key(oneshot.TASK, PART, OneShotGraph) == (
        "36e1d93a88f6682456f0df001f719f18e525c5240d959950a254a9fffa2a49cb")


def test_the_one_shot_schema_keeps_its_own_wording() -> None:
    schema = OneShotGraph.model_json_schema()["$defs"]["OneShotProperty"]["properties"]
    assert {k: schema[k]["description"] for k in oneshot.ONESHOT_WORDING} == oneshot.ONESHOT_WORDING
    ours = PropertyList.model_json_schema()["$defs"]["ExtractedProperty"]["properties"]
    assert {k: ours[k]["description"] for k in SHARED} == {
        k: DatasheetProperty.model_fields[k].description for k in SHARED}


def test_offline_answers_fill_the_shared_fields_alike() -> None:
    client = OfflineClient()
    (chunk_prop,) = client.complete_structured(property_llm.TASK, property_llm.llm_inputs(CHUNK, "power"),
                                               PropertyList).properties  # type: ignore[attr-defined]
    (part_prop,) = client.complete_structured(oneshot.TASK, PART, OneShotGraph).properties  # type: ignore[attr-defined]
    assert chunk_prop.model_dump(include=set(SHARED)) == part_prop.model_dump(include=set(SHARED)) == {
        "name": "Supply voltage", "description": "", "value": "3.3", "value_min": None, "value_typ": None,
        "value_max": None, "unit": "V", "conditions": ""}
    assert chunk_prop.source_chunk_id == "c1"
    assert (part_prop.block, part_prop.reference) == ("General > Electrical", "Supply voltage 3.3 V")


def test_an_empty_answer_for_a_chunk_that_states_values_is_refused() -> None:
    """A model that answers "no properties" for a chunk the rules find a value in is asked
    again (and, failing that, the rules answer): an empty list is not a way out."""
    from edaqa_pipeline.extraction.datasheets.property_llm import validate_properties

    with pytest.raises(ValueError, match="the chunk states 1"):
        validate_properties(PropertyList(properties=[]), property_llm.llm_inputs(CHUNK, "power"))
    quiet = {**CHUNK, "text": "Revision history follows."}
    validate_properties(PropertyList(properties=[]), property_llm.llm_inputs(quiet, "power"))
