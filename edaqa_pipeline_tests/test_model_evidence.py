"""What a model reads of the evidence (the answering lines with their frame, verified whole)
and what follows its claims (the extractive quotes they do not state).

The model is played by the scripted OpenAI-compatible server, which records the prompt it was
sent; the same path against a real local model is in test_answer_smollm2.py."""

from __future__ import annotations

from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.generation.evidence import number_evidence
from edaqa_pipeline.generation.model_evidence import GAP, frame_offsets, model_inputs
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline_tests.llm_servers import ok
from edaqa_pipeline_tests.scripted_llm import client_of

OPTION_LINES = (
    "### Clock Tree Synthesis", "", "The `clock_tree_synthesis` command builds the clock tree.", "",
    "#### Options", "", "| Switch Name | Description |", "| ----- | ----- |",
    "| `-buf_list` | Buffers to use. |", "| `-root_buf` | The buffer at the root of the tree. |",
    "| `-wire_unit` | Unit of the wire segments. |",
    "| `-sink_clustering_enable` | Enables pre-clustering of sinks. |",
    "| `-sink_clustering_size` | Maximum number of sinks per cluster. The default value is `20`. |",
)
OPTIONS = EvidenceItem(chunk_id="c1", doc="cts.md", score=1.0, path="test", start_line=60,
                       end_line=60 + len(OPTION_LINES) - 1, text="\n".join(OPTION_LINES))
UNRELATED = EvidenceItem(
    chunk_id="c2", doc="grt.md", score=0.5, path="test", start_line=10, end_line=11,
    text="The `global_route` command routes the design.\nIt writes guides.",
)
QUESTION = "What is the default maximum number of sinks per cluster with -sink_clustering_size?"


def test_a_table_row_is_shown_with_its_header_rule_and_heading():
    kinds = ["heading", "blank", "table_header", "table_rule", "table_row", "table_row"]
    assert frame_offsets(kinds, 5, 5) == {0, 2, 3, 5}
    assert frame_offsets(["text", "text"], 1, 1) == {1}  # no heading above: the line alone


def test_the_model_reads_the_answering_lines_each_item_keeping_its_id():
    numbered = number_evidence([UNRELATED, OPTIONS], packed=True)
    shown = model_inputs(QUESTION, numbered, max_units=1)
    assert [e["id"] for e in shown] == ["E2"]  # the item nothing answers is left out
    lines = shown[0]["text"].split("\n")
    assert lines[0] == "#### Options" and lines[-1].startswith("| `-sink_clustering_size`")
    assert "| Switch Name | Description |" in lines and GAP in lines
    assert "`-root_buf`" not in shown[0]["text"]
    assert len(shown[0]["line_kinds"]) == len(lines)
    # 0 units: the whole pack, as the offline rules read it
    assert model_inputs(QUESTION, numbered, max_units=0) == [n.as_input() for n in numbered]


def test_the_prompt_shows_the_answering_lines_and_claims_are_verified_on_the_whole_item(scripted_server):
    # the model cites E1 for the command's purpose, a sentence it was not shown: the claim is
    # checked against the whole item, which states it, and cited by that sentence's line
    server = scripted_server([ok({"not_in_documents": False, "claims": [
        {"text": "The default value of `-sink_clustering_size` is `20`.", "evidence": ["E1"]},
        {"text": "The `clock_tree_synthesis` command builds the clock tree.", "evidence": ["E1"]},
        {"text": "The default value of `-sink_clustering_size` is `30`.", "evidence": ["E1"]}]}),
        ok({"not_in_documents": False, "claims": []})])
    answer = answer_question(QUESTION, [OPTIONS], client_of(server), model_units=1, quotes=False)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "| `-sink_clustering_size` |" in prompt and "`-root_buf`" not in prompt
    assert "builds the clock tree" not in prompt
    assert [(c.text, c.citations) for c in answer.claims] == [
        ("The default value of `-sink_clustering_size` is `20`.", ("cts.md:L72",)),
        ("The `clock_tree_synthesis` command builds the clock tree.", ("cts.md:L62",))]
    assert [d["text"] for d in answer.dropped] == ["The default value of `-sink_clustering_size` is `30`."]
    # with 0 units the model reads the whole item
    whole = scripted_server([ok({"not_in_documents": True, "claims": []})])
    answer_question(QUESTION, [OPTIONS], client_of(whole), model_units=0)
    assert "`-root_buf`" in whole.requests[0]["messages"][-1]["content"]


def test_a_model_answer_is_followed_by_the_quotes_it_does_not_state(scripted_server):
    # the model states the default; the extractive claims of other lines follow it, labelled,
    # and none repeats a line the model's claim cites
    claim = {"text": "The default value of `-sink_clustering_size` is `20`.", "evidence": ["E2"]}
    question = "How do I enable sink clustering, and what is the default cluster size?"
    server = scripted_server([ok({"not_in_documents": False, "claims": [claim]})])
    answer = answer_question(question, [UNRELATED, OPTIONS], client_of(server))
    assert answer.answerer == "llm:scripted" and answer.claims[0].text == claim["text"]
    assert not answer.claims[0].quoted and answer.claims[0].citations == ("cts.md:L72",)
    quotes = answer.claims[1:]
    assert quotes and all(c.quoted for c in quotes) and len(answer.claims) <= 5
    assert all("cts.md:L72" not in c.citations for c in quotes)
    assert any("-sink_clustering_enable" in c.text for c in quotes)
    assert answer.to_json()["claims"][1]["quoted"] is True and "quoted" not in answer.to_json()["claims"][0]
    # without quotes the model's claims stand alone
    alone = scripted_server([ok({"not_in_documents": False, "claims": [claim]})])
    assert [c.text for c in answer_question(question, [UNRELATED, OPTIONS], client_of(alone), quotes=False).claims] == [
        claim["text"]]


def test_a_client_that_falls_back_offline_answers_from_the_whole_items(scripted_server):
    # the model's view holds one unit; a server that fails leaves the client's offline rules,
    # which must read what the extractive answer reads: the whole items, not the model's view
    from edaqa_pipeline.llm import OfflineClient
    from edaqa_pipeline_tests.llm_servers import http_error

    server = scripted_server([http_error(500)] * 4)
    client = client_of(server, fallback=OfflineClient())
    question = "How do I enable sink clustering, and what is the default cluster size?"
    answer = answer_question(question, [UNRELATED, OPTIONS], client, model_units=1)
    extractive = answer_question(question, [UNRELATED, OPTIONS])
    assert answer.answerer == "extractive" and "offline rules" in answer.reason
    assert len(extractive.claims) == 2  # the option rows of both parts of the question
    assert [(c.text, c.citations) for c in answer.claims] == [(c.text, c.citations) for c in extractive.claims]
