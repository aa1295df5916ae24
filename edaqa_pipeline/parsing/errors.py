"""The one error type for input a parser cannot accept.

A ``DocumentError`` always names the document and says what is wrong in words a user can act
on ("file is empty", "invalid UTF-8 at byte 1234", "PDF is encrypted"). The pipeline fails only
that document's partition with it; every other document still indexes.
"""

from __future__ import annotations


class DocumentError(ValueError):
    """A source document that cannot be parsed, with the reason."""

    def __init__(self, document: str, problem: str) -> None:
        self.document = document
        self.problem = problem
        super().__init__(f"{document}: {problem}")
