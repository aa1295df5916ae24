"""The extractive answer does not depend on the process: a unit's score is a sum over sets of
question words, and Python orders a set of strings by hashes that change from process to
process (``PYTHONHASHSEED``). Summed in set order, two units of equal score could swap places
between two runs of the same evaluation (a different first claim for the same evidence)."""

from __future__ import annotations

import os
import subprocess
import sys

SCORE = """
from edaqa_pipeline.generation import extractive as X
scorer = X._Scorer("Which alpha beta gamma delta epsilon zeta values?")
scorer.weight = {"alpha": 0.32, "beta": 0.15, "delta": 0.65, "epsilon": 0.07, "gamma": 0.54,
                 "valu": 0.37, "zeta": 0.06}
unit = X.Unit("The alpha beta gamma delta epsilon zeta values are listed.", "E1", 0, 0, "sentence")
print(repr(scorer.score(unit)))
"""


def test_a_units_score_is_the_same_whatever_the_hash_seed():
    scores = set()
    for seed in range(4):  # in set order these four seeds give 3.66 and 3.6599999999999997
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run([sys.executable, "-c", SCORE], capture_output=True, text=True, env=env,
                              timeout=120, check=True)
        scores.add(done.stdout.strip())
    assert len(scores) == 1, scores
