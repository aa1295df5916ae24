"""ChipMind's parameters (``ChipMindConfig``) and the paper's sampling temperatures.

The retrieval defaults were tuned on the dev set of the 2026 OpenROAD manuals
(``data/dev/openroad_dev.jsonl``; sweep in docs/chipmind.md), never on ORD-QA.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edaqa_pipeline.graphs.chipkg.passages import PPRSeeds

# ChipMind section 4.1: "sampling temperature 0.7 for generative tasks and 0.2 for
# evaluation". Generative: Reason, Formulate-Sub-Query, Synthesize-Answer and the belief-state
# summaries of Algorithm 1; judgements about the evidence (DetectUncertainty) and the target
# anchor of a query are evaluations.
GENERATIVE_TEMPERATURE = 0.7
EVALUATION_TEMPERATURE = 0.2


@dataclass(frozen=True)
class ChipMindConfig:
    k0: int = 8  # initial retrieval size (Algorithm 1, line 1)
    delta_k: int = 2  # expansion step
    tau: float = 0.01  # MIG threshold: expand while MIG_t > tau
    k_max: int = 10  # cap of one adaptive retrieval (also capped by retrieve()'s k)
    fixed_k: int = 8  # the per-step K when adaptive_k is off (= k0: adaptive K only adds)
    summary_sentences: int = 4  # size of the extractive summary
    seeds: PPRSeeds = field(default_factory=PPRSeeds)  # PPR seeding and damping (graphs.chipkg.passages)
    max_iterations: int = 6  # Reason -> sub-query -> retrieve rounds after the question
    cover_threshold: float = 0.9  # a clause is covered when this share of its words is found
    clause_vectors: str = "contextual"  # contextual (one encoder pass) | separate
    evidence_chars: int = 600  # per passage, in the prompts of the reasoning tasks
    all_named_entities: bool = True  # offline CSA filter: every entity the query names is a target
    adaptive_k: bool = True
    anchor_filter: bool = True
    iterate: bool = True
