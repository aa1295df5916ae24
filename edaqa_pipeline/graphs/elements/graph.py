"""The heterogeneous element graph G_d = (V_d, E_d) of the paper (section 3.1), by explicit rules.

Nodes (``ELEMENTS_SCHEMA``), one per reader-visible unit of a parsed document:

==========  =====================================================================
type        from
==========  =====================================================================
clause      a heading with a number or identifier ("3.2 Limits", "Annex A.1 ...")
section     any other heading (its scope: the blocks up to the next heading of the
            same or a higher level)
paragraph   paragraph, bullet list, block quote, admonition (``note_label`` holds
            note / warning / ...), HTML
table       a pipe or PDF table; its data rows are ``table_row`` parts (one line each)
figure      an image (Markdown image, ``<img>``, PDF figure; a table of ``<img>`` cells)
caption     "Figure 3: ..." / "Table 2 - ..." next to its figure/table, an emphasised
            line right under a figure, a PDF figure/table caption
step        each top-level item of an ordered list (a procedure step)
code        a code block
==========  =====================================================================

Each node keeps its raw text (exact source lines), canonical identifiers, an offline summary,
and metadata: document, section path, line span (Markdown) or page + bbox (PDF), version label.

Edges (``EDGES_SCHEMA``); every edge records the rule that made it:

structural
  ``contains``      section -> its direct elements and subsections; table -> rows
                    (``contains.section``, ``contains.subsection``, ``contains.row``)
  ``precedes``      consecutive block-level elements in reading order; consecutive rows
  ``same_section``  direct elements of one section at most 3 positions apart (the full
                    clique is quadratic on long sections; ``precedes`` chains the rest)
  ``step_next``     item i -> item i+1 of an ordered list; the last item -> the first item of
                    the next ordered list of the same section when its numbering continues
                    (lists interrupted by a code block: "1. ...", code, "2. ...")
referential
  ``clause_ref``    "see Section 3.2" / "Clause 4" / "§4" -> the clause with that number
                    (``clause_ref.label``); a Markdown link to ``#anchor`` or to another
                    manual -> that document's section (``markdown_link``)
  ``table_ref``     "Table 3" -> the table labelled 3 (``table_ref.label``; the 3rd table of
                    the document when no table has a label: ``table_ref.ordinal``);
                    "the `-foo` option of `bar`" / "`bar -foo`" -> the row documenting -foo
                    in bar's options table (``option_of_command``)
  ``figure_ref``    "Figure 2" / "Fig. 2" -> the figure labelled 2 (or the 2nd, as above)
  ``caption_of``    caption -> its figure or table (adjacency; ``caption_of.adjacent``)
  ``same_identifier`` elements sharing a canonical command / qualified option / variable /
                    message id / file / API name: each occurrence -> the identifier's
                    defining element (its options-table row, the code block invoking it, the
                    section named after it; else its first occurrence); across documents,
                    each document's defining element -> the corpus-wide one. Identifiers in
                    more than 12 documents are hubs and get no cross-document edge.
  ``version_of``    corresponding elements of two versions of one document (same file under
  ``supersedes``    two corpus roots): newer -> older; ``supersedes`` when the text changed.

``build_document`` (``document_graph.py``, running the rule groups of ``node_rules.py`` and
``link_rules.py`` over a ``builder.DocumentBuilder``; patterns in ``rules.py``, schemas in
``schema.py``) makes a document's nodes and its in-document edges (per-document asset);
``corpus_edges`` (``corpus_graph.py``) adds the cross-document edges (links between manuals,
cross-document ``same_identifier``, versions); ``graph_checks.py`` holds the checks. This
module is the package's one import point for all of them.
"""


from edaqa_pipeline.graphs.elements.corpus_graph import (
    apply_versions,
    build_corpus,
    corpus_edges,
    document_edges,
    resolve_link,
    source_path_map,
    version_edges,
    version_rank,
    version_roots,
)
from edaqa_pipeline.graphs.elements.document_graph import build_document
from edaqa_pipeline.graphs.elements.graph_checks import (
    dangling_edge_problems,
    frames,
    graph_problems,
    provenance_problems,
    step_chain_problems,
)
from edaqa_pipeline.graphs.elements.link_rules import definition_rank, identifier_links, option_rows
from edaqa_pipeline.graphs.elements.rules import (
    YEAR,
    clause_label,
    document_version,
    first_word,
    is_auxiliary_heading,
    row_key,
    slug,
)
from edaqa_pipeline.graphs.elements.schema import (
    EDGE_STRUCT,
    EDGES_SCHEMA,
    ELEMENT_TYPES,
    ELEMENTS_SCHEMA,
    LINKABLE_KINDS,
    MAX_IDENTIFIER_DOCS,
    MAX_IDENTIFIER_FANOUT,
    NOTE_LABELS,
    REFERENTIAL,
    RELATIONS,
    SAME_SECTION_WINDOW,
    STRUCTURAL,
    edge_row,
)

__all__ = [
    "EDGES_SCHEMA",
    "EDGE_STRUCT",
    "ELEMENTS_SCHEMA",
    "ELEMENT_TYPES",
    "LINKABLE_KINDS",
    "MAX_IDENTIFIER_DOCS",
    "MAX_IDENTIFIER_FANOUT",
    "NOTE_LABELS",
    "REFERENTIAL",
    "RELATIONS",
    "SAME_SECTION_WINDOW",
    "STRUCTURAL",
    "YEAR",
    "apply_versions",
    "build_corpus",
    "build_document",
    "clause_label",
    "corpus_edges",
    "dangling_edge_problems",
    "definition_rank",
    "document_edges",
    "document_version",
    "edge_row",
    "first_word",
    "frames",
    "graph_problems",
    "identifier_links",
    "is_auxiliary_heading",
    "option_rows",
    "provenance_problems",
    "resolve_link",
    "row_key",
    "slug",
    "source_path_map",
    "step_chain_problems",
    "version_edges",
    "version_rank",
    "version_roots",
]
