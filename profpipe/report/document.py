"""Report, file: one self-contained HTML file from the pages (profpipe/report/pages.py).

Everything is inlined: the page payload as JSON, plotly.js (from the plotly package, which ships the bundle), the
report's own script and style (profpipe/report/assets). A Content-Security-Policy of default-src 'none' stops the
page from loading anything, so it opens offline (on a login node, from a CI artifact or a ticket) and
cannot reach any host. The file is written next to its target and renamed into place.
"""
from __future__ import annotations

import json
import math
import os
from functools import cache
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).parent / "assets"


def render(title: str, subtitle: str, pages: list[dict[str, Any]], footer: str) -> str:
    """The HTML text of a report."""
    payload = {"title": title, "subtitle": subtitle, "pages": pages, "footer": footer}
    parts = {"STYLE": _asset("report.css"), "DATA": _script_json(payload), "PLOTLY": _plotly(),
             "SCRIPT": _asset("report.js")}
    html = _asset("report.html")
    for name, content in parts.items():  # in the template's order: the last match is the template's own marker
        head, marker, tail = html.rpartition(f"/*{name}*/")
        if not marker:
            raise RuntimeError(f"report template lacks /*{name}*/")
        html = head + content + tail
    return html


def write(path: Path, html: str) -> None:
    """Write `html` to `path` atomically (a temporary file beside it, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(html, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _script_json(payload: dict[str, Any]) -> str:
    """`payload` as JSON that is safe inside a <script> element: no NaN/inf (JSON has none: they become null) and
    no '</' or line separators that would end the element or the script early."""
    text = json.dumps(_finite(payload), ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


@cache
def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


@cache
def _plotly() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()
