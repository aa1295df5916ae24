"""An answer about a change between releases: the change claims lead, each side verified on its
own row, and the answer's own claims follow only when they say something new."""

from __future__ import annotations

from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.graphs.release_changes import side_item
from edaqa_pipeline.service.release_answers import with_change_claims
from edaqa_pipeline_tests.llm_servers import ok
from edaqa_pipeline_tests.scripted_llm import client_of

HEADER = "| Switch Name | Description |\n| ----- | ----- |\n"
CHANGE = {
    "kind": "default_changed", "tool": "cts", "command": "clock_tree_synthesis", "option": "-cluster_size",
    "from_release": "or24", "to_release": "or26", "old_value": "20", "new_value": "30",
    "old_doc": "or24/cts.md", "old_start": 40, "old_end": 42,
    "old_text": HEADER + "| `-cluster_size` | Sinks per cluster. Allowed values are integers from 4 to 64. Default: `20`. |",
    "new_doc": "or26/cts.md", "new_start": 40, "new_end": 42,
    "new_text": HEADER + "| `-cluster_size` | Sinks per cluster. Allowed values are integers from 4 to 128. Default: `30`. |",
}
QUESTION = "What changed for -cluster_size between 2024 and 2026?"


def test_the_models_restatement_of_a_change_is_not_shown_twice(scripted_server):
    items = [side_item(CHANGE, "old"), side_item(CHANGE, "new")]
    server = scripted_server([ok({"not_in_documents": False, "claims": [
        {"text": "The default of `-cluster_size` is `30`.", "evidence": ["E2"]},
        {"text": "`-cluster_size` allows integers from 4 to 128.", "evidence": ["E2"]}]})])
    answer = answer_question(QUESTION, items, client_of(server), packed=True, quotes=False)
    assert answer.answerer == "llm:scripted" and len(answer.claims) == 2
    shown = with_change_claims(answer, [CHANGE])
    texts = [c.text for c in shown.claims]
    assert texts[:2] == ["The default of `-cluster_size` was `20`", "The default of `-cluster_size` is `30`"]
    assert [c.citations for c in shown.claims[:2]] == [("or24/cts.md:L42",), ("or26/cts.md:L42",)]
    assert texts[2:] == ["`-cluster_size` allows integers from 4 to 128."]  # the restated default is left out
    assert shown.lead.startswith("From or24 to or26")
