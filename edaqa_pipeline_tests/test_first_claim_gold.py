"""The first-claim metric: does the answer's first claim cite a gold line?"""

from edaqa_pipeline.evaluation.runner import cites_gold


def test_a_citation_overlapping_a_gold_span_counts() -> None:
    gold = [("cts.md", 70, 75, None)]
    assert cites_gold(["cts.md:L74"], gold)
    assert cites_gold(["cts.md:L60-L70"], gold)
    assert not cites_gold(["cts.md:L76-L80"], gold)
    assert not cites_gold(["pdn.md:L74"], gold)


def test_a_gold_span_without_lines_is_met_by_any_citation_of_its_document() -> None:
    gold = [("spec.pdf", None, None, 3)]
    assert cites_gold(["spec.pdf:L12"], gold)
    assert not cites_gold(["other.pdf:L12"], gold)


def test_malformed_citations_are_ignored() -> None:
    assert not cites_gold(["cts.md", "L74"], [("cts.md", 70, 75, None)])
