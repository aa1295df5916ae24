"""HTML manuals -> the same block model as Markdown, with the site chrome dropped.

Why lxml: libxml2's HTML parser is fast, well kept, recovers from malformed markup the way
browsers do, and reports the source line of every element, which becomes each block's HTML
provenance. Why a Markdown rendition: the page's content is written out once as Markdown
(headings, paragraphs, pipe tables with their header row, fenced code, lists, admonitions as
``> **Note:**`` quotes) and parsed by ``parse_markdown``, so an HTML manual gets exactly the
blocks, line kinds, table rows and code lines a Markdown manual gets, and nothing downstream
knows the difference. A block's ``start_line``/``end_line`` are lines of that rendition (what
evidence and claims quote); its ``meta`` adds what a user opens: the element ``anchor``
(``cts.html#sink-clustering``) and ``html_lines``, the span of source lines of the elements
it came from.

The content root is the page's main region (``role="main"``, ``<main>``, ``<article>``,
Sphinx's ``div.body``); navigation, sidebars, search, headers, footers, permalink marks and
"edit on GitHub" / "view source" links are dropped before anything is written.
"""

from __future__ import annotations

import codecs
import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

import lxml.etree
import lxml.html

from edaqa_pipeline.model import sha256_bytes
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.text.markup import fence_for, fence_mark, pipe_table

_MAIN_XPATHS = (
    "//*[@role='main']", "//main", "//article", "//div[contains(concat(' ', @class, ' '), ' body ')]",
    "//div[@id='content']", "//body",
)  # fmt: skip
_CHROME_TAGS = {"nav", "header", "footer", "aside", "form", "script", "style", "noscript",
                "template", "button", "input", "select", "textarea", "iframe", "svg"}
_CHROME_ROLES = {"navigation", "search", "banner", "contentinfo", "complementary"}
_CHROME_CLASS = re.compile(
    r"(?:^|\s)(?:headerlink|sphinxsidebar\w*|related|sidebar\w*|toc-drawer|toctree-wrapper|"
    r"breadcrumbs?|wy-breadcrumbs\w*|rst-footer-buttons|prev-next\w*|footer\w*|edit-this-page|"
    r"skip-link|navbar\w*|searchbox|theme-switcher\w*|back-to-top|copybtn)(?:\s|$)")
_CHROME_LINK = re.compile(r"^\s*(?:edit (?:on github|this page)|view (?:page )?source|show source|"
                          r"suggest an edit|open an issue)\s*$", re.I)
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_BLOCK_TAGS = {"p", "pre", "table", "ul", "ol", "dl", "blockquote", "h1", "h2", "h3", "h4", "h5",
               "h6", "div", "section", "figure", "hr", "img", "article", "main", "details"}
_ADMONITION_CLASS = re.compile(r"(?:^|\s)admonition(?:\s|$)")
_ADMONITION_LABELS = ("note", "warning", "caution", "important", "tip", "hint", "attention",
                      "danger", "error", "seealso", "todo")


# labels the Encoding Standard (WHATWG) maps elsewhere than Python does: browsers read a page
# declared ASCII or Latin-1 as Windows-1252, and a UTF-16 label on a page without a
# byte-order mark as UTF-8 (the meta tag was readable as ASCII, so the bytes are not UTF-16)
_WHATWG_CHARSETS = {
    **dict.fromkeys(("us-ascii", "ascii", "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1",
                     "iso_8859-1", "cp819", "ibm819", "windows-1252", "x-cp1252"), "cp1252"),
    **dict.fromkeys(("utf-16", "utf-16le", "utf-16be", "unicode", "ucs-2"), "utf-8"),
}


def decode_html(data: bytes, document: str) -> str:
    """The page's text: BOM, then a declared ``<meta charset>``, then UTF-8, then Windows-1252
    (what browsers assume for undeclared legacy pages). Empty and binary input is refused."""
    if not data.strip():
        raise DocumentError(document, "file is empty (no HTML content)")
    head = data[:8192]
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise DocumentError(document, "UTF-32 text (by its byte-order mark): not an encoding HTML "
                            "pages may use; save it as UTF-8")
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        offset = head.index(b"\x00")
        raise DocumentError(document, f"binary content: NUL byte at offset {offset}; not an HTML page")
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                      (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(name, errors="replace")
    declared = _CHARSET.search(data[:4096])
    if declared:
        name = declared.group(1).decode("ascii").lower()
        try:
            codec = codecs.lookup(_WHATWG_CHARSETS.get(name, name))
        except LookupError:
            raise DocumentError(document, f"declared charset {name!r} is unknown") from None
        try:
            return data.decode(codec.name, errors="replace")
        except LookupError:  # "hex", "base64", "zlib": codecs Python has, not character sets
            raise DocumentError(document, f"declared charset {name!r} is not a character encoding") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _classes(el: Any) -> str:
    return str(el.get("class") or "")


def _is_chrome(el: Any) -> bool:
    if not isinstance(el.tag, str):
        return False
    if _ADMONITION_CLASS.search(_classes(el)):
        return False  # docutils may write an admonition as <aside class="admonition note">
    if el.tag in _CHROME_TAGS or str(el.get("role") or "") in _CHROME_ROLES:
        return True
    if _CHROME_CLASS.search(_classes(el)):
        return True
    return el.tag == "a" and bool(_CHROME_LINK.match(el.text_content() or ""))


def _drop(el: Any) -> None:
    """Remove ``el`` but keep its tail text in the document."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    prev = el.getprevious()
    parent.remove(el)
    if tail:
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail


def content_root(tree: Any) -> Any:
    """The page's main region, with its chrome removed."""
    root = next((found[0] for xp in _MAIN_XPATHS if (found := tree.xpath(xp))), tree)
    for el in list(root.iter()):
        if el is not root and el.getparent() is not None and _is_chrome(el):
            _drop(el)
    for el in list(root.iter(lxml.etree.Comment, lxml.etree.ProcessingInstruction)):
        _drop(el)
    return root


def _inline(el: Any) -> str:
    """One line of inline text: code in backticks, links as Markdown links (the element graph
    resolves them to the page and section they point at), whitespace folded."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if not isinstance(node.tag, str):
            parts.append(node.tail or "")
            return
        if node.tag == "br":
            parts.append(" ")
        elif node.tag in ("code", "kbd", "samp", "tt"):
            text = re.sub(r"\s+", " ", node.text_content()).strip()
            parts.append(f"`{text}`" if text and "`" not in text else text)
        elif node.tag == "img":
            parts.append(str(node.get("alt") or ""))
        elif node.tag == "a" and node.get("href") and not str(node.get("href")).startswith("javascript:"):
            text = _inline(node).replace("]", "\\]")
            parts.append(f"[{text}]({str(node.get('href')).replace(' ', '%20')})" if text else "")
        else:
            parts.append(node.text or "")
            for child in node:
                walk(child)
        parts.append(node.tail or "")

    parts.append(el.text or "")
    for child in el:
        walk(child)
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _code_language(el: Any) -> str:
    for node in (el, *el.iterancestors()):
        match = re.search(r"(?:highlight|language|lang)-([A-Za-z0-9_+-]+)", _classes(node))
        if match and match.group(1) not in ("default", "none", "text"):
            return match.group(1).lower()
        if node.tag in ("div", "section") and "highlight" not in _classes(node):
            break
    return ""


@dataclass
class _Rendition:
    """The Markdown rendition of a page and, per rendition line, its provenance."""

    lines: list[str] = field(default_factory=list)
    provenance: list[tuple[str, int, int]] = field(default_factory=list)  # anchor, html lines
    anchor: str = ""

    def block(self, el: Any, text_lines: list[str]) -> None:
        if not any(line.strip() for line in text_lines):
            return
        first = el.sourceline or 0
        # the serialised element has the source's line breaks (lxml keeps whitespace text)
        last = first + lxml.etree.tostring(el, encoding=str, with_tail=False).count("\n")
        if self.lines:
            self.lines.append("")
            self.provenance.append((self.anchor, first, first))
        for line in text_lines:
            self.lines.append(line)
            self.provenance.append((self.anchor, first, last))


# a line of page text that Markdown would read as the start of a block: a heading, a quote, a
# list item, a fence, a thematic break, a link reference definition or an HTML block (a tag
# that opens one, or a whole line that is one tag). "# of nets" in a <p> is prose.
_HTML_BLOCK_TAGS = (
    "address|article|aside|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|"
    "fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|"
    "link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|"
    "td|tfoot|th|thead|title|tr|track|ul"
)
_BLOCK_START = re.compile(
    r"^(?:#{1,6}(?:\s|$)|>|[-+*](?:\s|$)|\d{1,9}[.)](?:\s|$)|([-*_])(?:\s*\1){2,}\s*$|"
    r"\[[^\]]+\]:|<(?:script|pre|style|textarea)(?:[\s>]|$)|<[!?]|"
    rf"</?(?:{_HTML_BLOCK_TAGS})(?:[\s>]|/>|$)|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>\s*$)",
    re.I,
)
_ORDINAL = re.compile(r"^(\d{1,9})([.)])")


def _literal(line: str) -> str:
    """``line`` of page text as Markdown that reads back as that same text, not as markup: a
    backslash before the character that would open a block (``\\# of nets``, ``2024\\. That``)."""
    if not _BLOCK_START.match(line) and not fence_mark(line):
        return line
    return _ORDINAL.sub(r"\1\\\2", line, count=1) if line[0].isdigit() else "\\" + line


def _table_lines(el: Any) -> list[str]:
    rows = [tr for tr in el.iter("tr") if next(tr.iterancestors("table"), None) is el]
    grid = [[c for c in tr if isinstance(c.tag, str) and c.tag in ("th", "td")] for tr in rows]
    grid = [r for r in grid if r]
    if not grid:
        return []
    head_rows = [r for r, tr in zip(grid, rows, strict=False)
                 if tr.getparent() is not None and tr.getparent().tag == "thead"]
    header = head_rows[-1] if head_rows else grid[0]
    body = [r for r in grid if r is not header and r not in head_rows]
    return pipe_table([[_inline(c) for c in r] for r in (header, *body)]).split("\n")


def _fence_lines(pre: Any) -> list[str]:
    """A ``<pre>`` as a fenced code block in the language of its highlight class."""
    code = pre.text_content().rstrip("\n")
    fence = fence_for(code)
    return [f"{fence}{_code_language(pre)}", *code.split("\n"), fence]


def _holds_code(el: Any) -> bool:
    return isinstance(el.tag, str) and next(el.iter("pre"), None) is not None


def _item_parts(li: Any) -> list[tuple[str, Any]]:
    """The item's content in order: ("text", element holding a run of inline content) and
    ("code", the element holding a ``<pre>``, Sphinx's ``div.highlight`` or the pre itself)."""
    parts: list[tuple[str, Any]] = []
    run = lxml.html.Element("span")
    run.text = li.text
    for child in list(li):
        if _holds_code(child):
            parts.append(("text", run))
            parts.append(("code", child))
            run = lxml.html.Element("span")
            run.text = child.tail
        else:
            run.append(copy.deepcopy(child))
    parts.append(("text", run))
    return parts


def _list_lines(el: Any, depth: int = 0) -> list[str]:
    out: list[str] = []
    first = str(el.get("start") or "1").strip()
    first_number = int(first) if re.fullmatch(r"\+?\d{1,8}", first) else 1  # Markdown has no negative numbers
    for number, li in enumerate((c for c in el if c.tag == "li"), first_number):
        marker = f"{number}." if el.tag == "ol" else "-"
        nested = [c for c in li if isinstance(c.tag, str) and c.tag in ("ul", "ol")]
        for sub in nested:
            sub.tail = f" {sub.tail}" if sub.tail else sub.tail
            _drop(sub)  # its tail text stays in the item
        lead = "  " * depth * 2
        indent = " " * (len(lead) + len(marker) + 1)
        lines: list[str] = []
        # code in an item stays code: a fence indented under the item's text, the text after
        # it a paragraph of the item after the fence, in the page's order
        for kind, part in _item_parts(li):
            if kind == "code":
                for pre in (p for p in part.iter("pre") if not any(a.tag == "pre" for a in p.iterancestors())):
                    lines.extend(indent + line if line else line for line in _fence_lines(pre))
            elif text := _inline(part):
                lines.append(_literal(text))
        if not lines or lines[0].startswith(indent):  # an item that opens with code
            lines.insert(0, "")
        out.append(f"{lead}{marker} {lines[0]}".rstrip())
        out.extend(line if line.startswith(indent) or not line else indent + line for line in lines[1:])
        for sub in nested:
            out.extend(_list_lines(sub, depth + 1))
    return out


def _admonition_label(el: Any) -> str:
    classes = _classes(el).split()
    return next((c for c in classes if c in _ADMONITION_LABELS), "note")


def _render(el: Any, out: _Rendition) -> None:
    """Write the block-level content of ``el`` in document order."""
    if el.get("id"):
        out.anchor = str(el.get("id"))
    loose = (el.text or "").strip()
    if loose and el.tag not in ("table", "pre"):
        out.block(el, [_literal(re.sub(r"\s+", " ", loose))])
    for child in el:
        if not isinstance(child.tag, str):
            continue
        _render_child(child, out)
        tail = (child.tail or "").strip()
        if tail:
            out.block(child, [_literal(re.sub(r"\s+", " ", tail))])


def _render_child(el: Any, out: _Rendition) -> None:
    tag = el.tag
    if re.fullmatch(r"h[1-6]", tag):
        out.anchor = str(el.get("id") or out.anchor)
        out.block(el, [f"{'#' * int(tag[1])} {_inline(el)}"])
    elif tag == "p":
        out.block(el, [_literal(_inline(el))])
    elif tag == "pre":
        out.block(el, _fence_lines(el))
    elif tag == "table":
        out.block(el, _table_lines(el))
    elif tag in ("ul", "ol"):
        out.block(el, _list_lines(el))
    elif tag == "dl":
        terms = [(c.tag, _inline(c)) for c in el if c.tag in ("dt", "dd")]
        out.block(el, [f"- **{t}**" if k == "dt" else f"  {_literal(t)}" for k, t in terms if t])
    elif tag == "blockquote":
        out.block(el, ["> " + _literal(_inline(el))])
    elif tag == "img":
        out.block(el, [f"![{el.get('alt') or ''}]({el.get('src') or ''})"])
    elif tag == "hr":
        return
    elif _ADMONITION_CLASS.search(_classes(el)):
        for title in el.xpath(".//*[contains(@class, 'admonition-title')]"):
            _drop(title)
        out.block(el, [f"> **{_admonition_label(el).capitalize()}:** {_inline(el)}"])
    elif tag in _BLOCK_TAGS or any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in el):
        _render(el, out)
    else:
        out.block(el, [_literal(_inline(el))])


def render_markdown(text: str, document: str) -> tuple[str, _Rendition, str]:
    """(Markdown rendition, its line provenance, page title) of an HTML page's content."""
    try:
        tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", text, count=1))
    except (lxml.etree.ParserError, ValueError) as exc:
        raise DocumentError(document, f"not parseable as HTML: {exc}") from None
    title = re.sub(r"\s+", " ", "".join(tree.xpath("//title//text()"))).strip()
    out = _Rendition()
    _render(content_root(tree), out)
    if not any(line.strip() for line in out.lines) and title:
        # a page that is all chrome (a site's search page): indexed as its title alone, so a
        # built site indexes completely; its one block says what the page is
        out.block(tree.xpath("//title")[0], [f"# {title}"])
    return "\n".join(out.lines) + "\n", out, title


def parse_html(data: bytes, document: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse an HTML page into a document row and block rows (see ``BLOCKS_SCHEMA``)."""
    markdown, rendition, title = render_markdown(decode_html(data, document), document)
    if not any(line.strip() for line in rendition.lines):
        raise DocumentError(document, "no content: the page has neither a title nor text outside "
                                      "the site chrome")
    doc, blocks = parse_markdown(markdown.encode("utf-8"), document)
    for block in blocks:
        anchor, first, last = rendition.provenance[block["start_line"] - 1]
        ends = [rendition.provenance[i - 1][2] for i in range(block["start_line"], block["end_line"] + 1)]
        meta = json.loads(block["meta"])
        meta.update({"anchor": anchor, "html_lines": [first, max([last, *ends])]})
        block["meta"] = json.dumps(meta, sort_keys=True, ensure_ascii=False)
    doc.update({"format": "html", "source_sha256": sha256_bytes(data), "n_bytes": len(data),
                "title": doc["title"] if doc["title"] != document else (title or document)})
    return doc, blocks
