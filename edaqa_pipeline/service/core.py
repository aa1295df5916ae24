"""``EdaqaService``: one opened storage root and the retrievers built on it.

Every way of asking (``edaqa ask``, ``edaqa eval``, the HTTP server, an MCP tool, an answer
page) needs the same steps: load the index once, build a method's retriever once, retrieve,
answer, and show the cited lines. Doing them here keeps the surfaces thin and their answers
identical: the record ``answer`` returns is the one ``edaqa ask --json`` prints and ``POST
/ask`` returns.

Concurrency: a retriever holds no per-query state (``retrieval/record.py``: everything a call
produces is in its ``Retrieval``), so built retrievers are used by any number of threads at
once. Only building takes a lock, so that two first requests for a method build it once.
Whether a surface serialises answering (a local model serves one request at a time) is the
surface's decision, not forced here.

Releases (``corpus.releases``): on a storage root that holds several releases of the same
manuals every question is about one release: the one the caller names, else the one the
question names ("in the 2024 docs"), else the newest by date. Each release gets its own view
of the snapshot (``IndexSnapshot.restricted``) and its own retrievers, so ranking, fusion and
packing never see another release's lines; what a method reads beside the snapshot (a graph
over every document) is filtered out of its items as well.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edaqa_pipeline.corpus.releases import ReleaseError, Releases
from edaqa_pipeline.service.clients import answer_settings
from edaqa_pipeline.service.errors import CONFLICT, NOT_FOUND, ServiceError
from edaqa_pipeline.service.requests import check_k, check_method, check_question
from edaqa_pipeline.service.sources import (
    CONTEXT_LINES,
    SourceLines,
    check_range,
    context_window,
    document_lines,
)

if TYPE_CHECKING:
    from edaqa_pipeline.generation.answer_claims import ClaimListener
    from edaqa_pipeline.generation.followup import Turn
    from edaqa_pipeline.retrieval.record import Retrieval, Retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot


def load_snapshot(storage: str | Path) -> IndexSnapshot:
    """The index at ``storage``; ``ServiceError`` when there is none (404) or it was built
    with another encoder than the configured one (409)."""
    from edaqa_pipeline.retrieval.snapshot import (
        EncoderMismatchError,
        IndexSnapshot,
        NotIndexedError,
    )

    try:
        return IndexSnapshot.load(Path(storage))
    except NotIndexedError as exc:
        raise ServiceError(str(exc), status=NOT_FOUND) from None
    except EncoderMismatchError as exc:
        raise ServiceError(str(exc), status=CONFLICT) from None


class EdaqaService:
    """The API under every surface: methods, documents, retrieve, answer, read source lines."""

    def __init__(self, snapshot: IndexSnapshot) -> None:
        from edaqa_pipeline.registry import available_methods

        self.snapshot = snapshot
        self.methods: list[str] = available_methods(snapshot.storage)
        try:
            self.releases = Releases.load(snapshot.storage)
        except ReleaseError as exc:
            raise ServiceError(str(exc), status=CONFLICT) from None
        self._views: dict[str, IndexSnapshot] = {}
        self._changes: list[dict[str, Any]] | None = None
        self._retrievers: dict[tuple[str, str | None, int], tuple[Retriever, Any]] = {}
        self._lines: dict[str, tuple[list[str], list[str]]] = {}
        self._build_lock = threading.Lock()

    @classmethod
    def open(cls, storage: str | Path) -> EdaqaService:
        """The service over the index at ``storage`` (``ServiceError`` when there is none)."""
        return cls(load_snapshot(storage))

    @property
    def storage(self) -> Path:
        return self.snapshot.storage

    @property
    def documents(self) -> list[str]:
        """The indexed documents: paths relative to the corpus folder, ``RELEASE/PATH`` where
        the storage root holds releases."""
        return list(self.snapshot.documents)

    # --- releases ---------------------------------------------------------------------------

    def check_release(self, release: Any) -> str | None:
        """``release`` if this storage root holds it (None stays None), else 404."""
        if release is None or release == "":
            return None
        if not isinstance(release, str):
            raise ServiceError("'release' must be a release name", param="release")
        if release not in self.releases.names:
            known = ", ".join(self.releases.names) or "none: it holds one corpus indexed without --release"
            raise ServiceError(f"{release!r} is not a release of {self.storage} (releases: {known})",
                               status=NOT_FOUND, param="release")
        return release

    def pick_release(self, question: str, release: Any = None,
                     earlier: Sequence[str] = ()) -> tuple[str | None, str]:
        """The release a question is about, and why: ``asked`` (the caller named it),
        ``named in the question``, ``named earlier`` (the latest of ``earlier``, a
        conversation's user turns, that names one: "and its default?" after "in the 2024
        docs, ...") or ``newest``; (None, "") without releases."""
        release = self.check_release(release)
        if release is not None:
            return release, "asked"
        if not self.releases:
            return None, ""
        routed = self.releases.route(question)
        if routed:
            return routed, "named in the question"
        for turn in reversed(earlier):
            if routed := self.releases.route(turn):
                return routed, "named earlier"
        return self.releases.newest, "newest"

    def release_changes(self) -> list[dict[str, Any]]:
        """The rows of ``release_changes`` (read once; [] without releases or the table)."""
        if self._changes is None:
            from edaqa_pipeline.service.changes import changes_table

            table = changes_table(self.storage) if self.releases else None
            self._changes = table.to_dicts() if table is not None else []
        return self._changes

    def release_snapshot(self, release: str | None) -> IndexSnapshot:
        """The snapshot of one release (the whole snapshot for None)."""
        if release is None:
            return self.snapshot
        with self._build_lock:
            if release not in self._views:
                self._views[release] = self.snapshot.restricted(
                    self.releases.documents_of(release, self.snapshot.documents))
            return self._views[release]

    def within(self, result: Retrieval, release: str | None) -> Retrieval:
        """``result`` without items of other releases (a method reading a graph over every
        document could reach them)."""
        if release is None:
            return result

        def keep(items: Sequence[Any]) -> tuple[Any, ...]:
            return tuple(i for i in items if self.releases.release_of(i.doc) == release)

        return replace(result, items=keep(result.items), steps=tuple(keep(s) for s in result.steps),
                       trace={**result.trace, "release": release})

    # --- retrievers -------------------------------------------------------------------------

    def check_method(self, method: Any) -> str:
        """``method`` if it is built here, else ``ServiceError`` (404)."""
        return check_method(method, self.methods, self.storage)

    def retriever(self, method: Any, answerer: Any = None, release: str | None = None) -> Retriever:
        """The retriever of ``method`` for ``answerer`` (the LLM client a method may use, None
        = offline rules), built and warmed on first use, then reused. 404 for a method that
        is not built, 409 when building it fails (e.g. no trained encoder)."""
        method = self.check_method(method)
        key = (method, release, id(answerer))
        built = self._retrievers.get(key)
        if built is None:
            snapshot = self.release_snapshot(release)
            with self._build_lock:
                built = self._retrievers.get(key)
                if built is None:
                    # the answerer is kept with the retriever so its id is never reused
                    built = (self._build(method, answerer, snapshot), answerer)
                    self._retrievers[key] = built
        return built[0]

    def retrievers(self, methods: Sequence[str], answerer: Any = None,
                   release: str | None = None) -> dict[str, Retriever]:
        """The retrievers of ``methods`` (built and warmed), in order."""
        return {m: self.retriever(m, answerer, release) for m in methods}

    def routed(self, methods: Sequence[str], answerer: Any = None,
               release: Any = None) -> dict[str, ReleaseRouted]:
        """Per method, a retriever that asks each question within its release (``release``
        for every question when given, else ``pick_release``'s); on a storage root with
        releases every release's retriever is built now, so no question pays for a build."""
        release = self.check_release(release)
        for name in [release] if release else self.releases.names or [None]:
            self.retrievers(methods, answerer, name)
        return {m: ReleaseRouted(self, m, answerer, release) for m in methods}

    def _build(self, method: str, answerer: Any, snapshot: IndexSnapshot) -> Retriever:
        from edaqa_pipeline.registry import MethodNotBuiltError, UnknownMethodError, make_retriever
        from edaqa_pipeline.retrieval.snapshot import NoTrainedEncoderError

        try:
            retriever = make_retriever(method, snapshot, llm=answerer)
        except (UnknownMethodError, MethodNotBuiltError, NoTrainedEncoderError) as exc:
            raise ServiceError(str(exc), status=CONFLICT, param="model") from None
        if hasattr(retriever, "warm"):  # load models and indexes now, not in a query's time
            retriever.warm()
        return retriever

    def warm(self, *methods: str, answerer: Any = None, release: str | None = None) -> None:
        """Load what a first query would (the base encoder and its ONNX export, and the
        retrievers of ``methods`` for ``release``), so reported retrieval times are the queries' own."""
        self.snapshot.base.encode(["warm up"])
        for method in methods:
            self.retriever(method, answerer, release)

    # --- asking -----------------------------------------------------------------------------

    def check_request(self, question: Any, method: Any, k: Any) -> tuple[str, str, int]:
        """The validated ``(question, method, k)`` of a request, or ``ServiceError``."""
        return check_question(question), self.check_method(method), check_k(k)

    def retrieve(self, question: Any, method: Any, k: Any, answerer: Any = None,
                 release: Any = None) -> Retrieval:
        """The ``Retrieval`` of ``method`` for ``question`` (``k`` items) within the release
        the question is about (``pick_release``), or, for a question about what changed
        between two releases, both sides of those changes (``route``)."""
        question, method, k = self.check_request(question, method, k)
        return self.route(question, method, k, answerer, release).result

    def route(self, question: str, method: str, k: int, answerer: Any = None, release: Any = None,
              earlier: Sequence[str] = ()) -> Routed:
        """Retrieval for a checked request. A question asking what changed between two
        releases (``Releases.change_pair``; never when the caller names a release) gets both
        sides of the changes it is about (``release_changes``); one about something that did
        not change is retrieved in the newer release. Any other question is retrieved in the
        release ``pick_release`` gives. ``build_ms``: building that release's retriever (on its
        first question), which a caller leaves out of the question's retrieval time."""
        from edaqa_pipeline.retrieval.record import Retrieval
        from edaqa_pipeline.service.release_answers import asked_changes, change_items

        asked = self.check_release(release)
        chosen, why = self.pick_release(question, asked, earlier)
        pair = None if asked or not self.release_changes() else self.releases.change_pair(question)
        recognised, changes = asked_changes(self.release_changes(), question, pair) if pair else (False, [])
        pair = pair if recognised else None  # a change question about nothing it can name: as usual
        if pair:  # what changed: both sides of each change; nothing changed: the newer release
            chosen, why = pair[1], (f"changes from {pair[0]}" if changes else f"no change since {pair[0]}")
        started = time.perf_counter()
        if changes:
            lines = self.snapshot.line_structure  # the parser's kind of each cited line
            items = tuple(replace(item, line_kinds=lines.kinds(item.doc, span), line_subjects=lines.subjects(item.doc, span))
                          for item in change_items(changes, k)
                          for span in [range(item.start_line, item.end_line + 1)])
            shown = {(i.doc, i.start_line) for i in items}
            changes = [c for c in changes if (c["old_doc"], c["old_start"]) in shown
                       or (c["new_doc"], c["new_start"]) in shown]
            return Routed(Retrieval(method, question, items), chosen, why, changes, pair, 0.0)
        retriever = self.retriever(method, answerer, chosen)  # built once per release
        build_ms = (time.perf_counter() - started) * 1000
        result = self.within(retriever.retrieve(question, k), chosen)
        return Routed(result, chosen, why, [], pair, build_ms)

    def answer(self, question: Any, method: Any, k: Any, answerer: Any = None, *,
               earlier: Sequence[Turn] = (), temperature: float = 0.0, max_tokens: int | None = None,
               on_claim: ClaimListener | None = None, release: Any = None) -> dict[str, Any]:
        """Retrieve, answer with ``answerer`` (an LLM client, None = extractive) and return
        the record ``edaqa ask --json`` prints (also ``POST /ask``).

        ``earlier``: the turns of a conversation before ``question``; a follow-up that
        names nothing of its own is made standalone first (``generation/followup.py``) and
        the record says so. ``temperature`` and ``max_tokens`` go to the model that writes
        the answer; ``on_claim`` receives each verified claim as the model writes it."""
        from edaqa_pipeline.generation.answer import ANSWER_TASKS, answer_question
        from edaqa_pipeline.generation.followup import standalone_question
        from edaqa_pipeline.graphs.release_changes import as_record
        from edaqa_pipeline.llm.scope import request_scope
        from edaqa_pipeline.service.release_answers import with_change_claims

        question, method, k = self.check_request(question, method, k)
        self.check_release(release)
        started = time.perf_counter()
        rewrite = standalone_question(question, earlier, answerer)
        routed = self.route(rewrite.question, method, k, answerer, release,
                            [*(t.text for t in earlier if t.role == "user"), question])
        result, release, release_from = routed.result, routed.release, routed.why
        changes, pair = routed.changes, routed.pair
        retrieval_ms = (time.perf_counter() - started) * 1000 - routed.build_ms
        started = time.perf_counter()
        with request_scope(max_tokens=max_tokens, answer_tasks=ANSWER_TASKS):
            answer = answer_question(rewrite.question, list(result.items), answerer,
                                     **answer_settings().kwargs(), draft=result.draft, temperature=temperature, on_claim=on_claim)
        if changes:  # each change's sides, verified against their own rows, lead the answer
            answer = with_change_claims(answer, changes)
        answer_ms = (time.perf_counter() - started) * 1000
        ids = {n.item.evidence_id: n.id for n in answer.evidence}
        fallbacks = list(result.trace.get("model_fallbacks", ()))  # model steps of the retrieval
        return {
            "question": rewrite.question, **rewrite.to_json(), "method": method,
            **({"release": release, "release_from": release_from} if release else {}),
            **({"changes": [as_record(c) for c in changes]} if pair else {}), **answer.to_json(),
            **({"retrieval_fallbacks": fallbacks} if fallbacks else {}),
            "retrieval_ms": round(retrieval_ms, 2), "answer_ms": round(answer_ms, 2),
            "evidence": [{**({"id": ids[e.evidence_id]} if e.evidence_id in ids else {}),
                          **({"release": self.releases.release_of(e.doc)} if release else {}), **e.to_json()}
                         for e in result.items],
        }

    # --- source lines -----------------------------------------------------------------------

    def read_lines(self, document: Any, start: Any, end: Any) -> SourceLines:
        """Lines ``start``..``end`` (1-based, inclusive) of an indexed Markdown document, as
        the storage root holds them; 404 for a document that is not indexed, 400 for a bad
        or too long range (at most ``sources.MAX_LINES``)."""
        document = self.check_document(document)
        lines, anchors = self._document_lines(document)
        start, end = check_range(document, start, end, len(lines))
        return SourceLines(document, start, end, tuple(lines[start - 1:end]), len(lines),
                           anchors[start - 1])

    def read_context(self, document: Any, start: Any, end: Any,
                     context: int = CONTEXT_LINES) -> tuple[SourceLines, SourceLines]:
        """The cited lines ``start``..``end`` (checked as ``read_lines`` checks them) and the
        lines to show with them: up to ``context`` more on each side (``sources.context_window``)."""
        cited = self.read_lines(document, start, end)
        first, last = context_window(cited.start, cited.end, cited.n_lines, context)
        return cited, self.read_lines(cited.document, first, last)

    def check_document(self, document: Any) -> str:
        """``document`` if it is indexed here, else ``ServiceError`` (404)."""
        if not isinstance(document, str) or document not in self.snapshot.documents:
            raise ServiceError(f"{document!r} is not an indexed document of {self.storage}",
                               status=NOT_FOUND, param="document")
        return document

    def _document_lines(self, document: str) -> tuple[list[str], list[str]]:
        # read once: the snapshot is a fixed view of the storage, and so are its lines
        lines = self._lines.get(document)
        if lines is None:
            lines = self._lines.setdefault(document, document_lines(self.storage, document))
        return lines


class ReleaseRouted:
    """A method's retrieval through the service: each question within the release it is
    about (what an evaluation runs, so its figures are those of ``ask``)."""

    def __init__(self, service: EdaqaService, method: str, answerer: Any, release: str | None) -> None:
        self.service, self.method, self.answerer, self.release = service, method, answerer, release

    def retrieve(self, question: str, k: int) -> Retrieval:
        return self.service.route(question, self.method, k, self.answerer, self.release).result


@dataclass(frozen=True)
class Routed:
    """A question's retrieval and what decided it: the release (and why), the changes it is
    about (a question about what changed) and the pair of releases compared."""

    result: Retrieval
    release: str | None
    why: str
    changes: list[dict[str, Any]]
    pair: tuple[str, str] | None
    build_ms: float  # building the release's retriever, on its first question
