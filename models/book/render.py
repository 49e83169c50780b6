"""Offline Altair rendering: charts draw with no CDN on the static site and natively in JupyterLab.

Altair's default renderer fetches vega, vega-lite and vega-embed from a CDN,
which a reader behind a locked-down network never reaches. This module
registers an Altair renderer named ``"offline"`` with two output forms:

- **site** (:func:`site_html`, made at build time from a notebook's stored spec by
  ``book/_ext/stored_outputs.py``): a ``<div>`` whose id is a hash of the spec (so the same spec
  gives byte-identical pages) and a small script that calls the global ``vegaEmbed``. The site
  loads that global once per page from its own vendored bundle (``book/_vendor/vega/vega-embed-bundle.js``).
- **notebook** (default): the chart compiled to a Vega 5 spec (``application/vnd.vega.v5+json``) that
  JupyterLab and VS Code draw with their own bundled Vega, a PNG of it, the Vega-Lite spec itself under
  its own version's mimetype (:data:`SPEC_MIMETYPE`, which JupyterLab 4 does not draw: it is the source,
  for tools and tests that read a stored chart) and a plain-text line. The specs
  are Vega-Lite 6 (Altair 6) while JupyterLab 4 bundles Vega-Lite 5.6, which warns on every newer spec;
  compiled by vl-convert's Vega-Lite 5 (:data:`NOTEBOOK_VEGALITE`) they are plain Vega 5, which it draws
  as is. The PNG is there because JupyterLab's Vega renderer otherwise adds one to the output as soon as it
  draws a chart, which marks a notebook modified the moment it opens (nbval skips PNGs). JupyterLab ranks
  ``text/html`` above Vega, so the notebook form must not carry HTML or the chart would be a script looking
  for a missing global.

Both forms are pure functions of the spec, with every float rounded to
:data:`models.book.stored.CHART` significant digits, so nbval's stored outputs
compare equal on every run and on every CPU (a fitted curve's last digits
differ between BLAS kernels; a chart cannot show them anyway). Importing
:mod:`models.book.charts` calls :func:`enable`.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import math
import textwrap
from typing import Any, ContextManager, Iterator

import altair as alt
import pandas as pd
from altair.utils import schemapi

from models.book.stored import CHART, significant

RENDERER_NAME = "offline"
# JupyterLab 4 and VS Code draw Vega 5 specs natively; the book's Vega-Lite 6 specs are compiled down with
# vl-convert's newest Vega-Lite 5 (every spec feature the book uses exists in it).
NOTEBOOK_MIMETYPE = "application/vnd.vega.v5+json"
NOTEBOOK_VEGALITE = "5.21"
SPEC_MIMETYPE = f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.lstrip('v').split('.')[0]}+json"
EMBED_OPTIONS = {"actions": False, "renderer": "svg"}
# Key in a spec's usermeta: {signal name: the text each position of that range input stands for}.  Vega
# prints a range input's raw value beside it; an explorer over an uneven grid (1, 2, 4, 8) moves over
# positions, so the site's script prints the value at the position instead.
SLIDER_VALUES = "sliderValues"


def _portable(obj: Any) -> Any:
    """The spec with floats rounded to CHART significant digits, NaN and infinities as None (JSON null:
    Vega reads it as missing)."""
    if isinstance(obj, float):
        return significant(obj, CHART) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _portable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_portable(v) for v in obj]
    return obj


# Text sizes every chart is drawn with (px at the chart's own size): beside 16 px prose, Vega's 10 and 11 px
# defaults read as footnotes; 13 px stays at least 12 px on a phone, where a chart is drawn at 92% or more.
TEXT_PX = 13
TITLE_PX = 16
SUBTITLE_PX = 14
# Average advance of a title's and a subtitle's characters (px), to wrap them to the chart's width.
TITLE_CHAR_PX = 9.0
SUBTITLE_CHAR_PX = 7.0
AXIS_TITLE_CHAR_PX = 7.5  # an axis title's characters (px, bold)
LEGEND_CHAR_PX = 7.5  # a legend label's characters (px), to fit a legend's rows to a phone
LABEL_LIMIT_PX = 260  # the longest label drawn whole (a legend's, or an axis's that sets a limit) at TEXT_PX
_TEXT_CONFIG = {
    "axis": {"labelFontSize": TEXT_PX, "titleFontSize": TEXT_PX},
    # A legend's swatch is drawn whole even where its mark is translucent (a confidence band at 20%).
    "legend": {"labelFontSize": TEXT_PX, "titleFontSize": TEXT_PX, "symbolOpacity": 1, "labelLimit": LABEL_LIMIT_PX},
    # Category labels (arrival rates) too many for the band at 13 px: some are left out, none run together.
    "axisBand": {"labelOverlap": "greedy"},
    "header": {"labelFontSize": TEXT_PX, "titleFontSize": TEXT_PX},
    "title": {"fontSize": TITLE_PX, "subtitleFontSize": SUBTITLE_PX},
    "text": {"fontSize": TEXT_PX},
}
_FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize")
_NOT_SPEC = ("data", "datasets", "usermeta")  # where a key is a data field, not a spec property


def _title_parts(spec: dict[str, Any]) -> tuple[str, str]:
    """The chart's title and subtitle as plain one-line text ('' where it has none)."""
    title = spec.get("title")
    if not isinstance(title, dict):
        title = {"text": title} if title else {}
    def flat(text: Any) -> str:
        return " ".join(str(t) for t in ([] if text is None else [text] if isinstance(text, str) else text))
    return flat(title.get("text")), flat(title.get("subtitle"))


def _width(spec: dict[str, Any]) -> float:
    """The chart's width in px as Vega-Lite lays it out, roughly (plots only: axes and legends not counted)."""
    if "hconcat" in spec:
        return sum(_width(v) for v in spec["hconcat"]) + 20 * (len(spec["hconcat"]) - 1)
    inner = [_width(v) for k in ("vconcat", "concat", "layer") for v in spec.get(k, [])]
    if isinstance(spec.get("spec"), dict):
        inner.append(_width(spec["spec"]))
    own = spec.get("width")
    return max([own if isinstance(own, (int, float)) else 0.0, *inner] or [300.0]) or 300.0


def _wrapped(text: Any, chars: int) -> Any:
    """A title's text as lines of at most ``chars`` characters (a list draws one line each); the author's own
    lines are kept and only broken further."""
    lines = [text] if isinstance(text, str) else list(text)
    out = [piece for line in lines for piece in (textwrap.wrap(str(line), max(chars, 20)) or [""])]
    return out[0] if len(out) == 1 else out


def _described(title: str, subtitle: str) -> str:
    """What a screen reader says a chart is: its title, then its caption."""
    return f"{title.rstrip('.')}. {subtitle}".strip() if subtitle else title


def dressed(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as every chart of the book is drawn, in JupyterLab and on the site (a pure, idempotent function):
    text of at least TEXT_PX, legend swatches whole, a title and subtitle wrapped to the chart's width (JupyterLab
    cuts a line past it), and a ``description`` (Vega's ARIA label: the chart's title and caption)."""
    def lifted(node: Any) -> Any:
        if isinstance(node, list):
            return [lifted(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: (v if k in _NOT_SPEC else max(v, TEXT_PX) if k in _FONT_KEYS and isinstance(v, (int, float))
                   else lifted(v)) for k, v in node.items()}
        if isinstance(out.get("labelLimit"), (int, float)):  # a limit set for 10 px labels, and the room kept for them
            out["labelLimit"] = max(out["labelLimit"], LABEL_LIMIT_PX)
            for key in ("minExtent", "maxExtent"):
                if isinstance(out.get(key), (int, float)):
                    out[key] = max(out[key], LABEL_LIMIT_PX + 5)
        return out

    out = lifted(spec)
    config = dict(out.get("config", {}))
    for part, values in _TEXT_CONFIG.items():
        config[part] = {**values, **config.get(part, {})}
    out["config"] = config
    title = out.get("title")
    if isinstance(title, (str, list)):
        title = out["title"] = {"text": title}
    if isinstance(title, dict) and title.get("text"):
        width = _width(out)
        title = out["title"] = dict(title, text=_wrapped(title["text"], int(width // TITLE_CHAR_PX)))
        if title.get("subtitle"):
            title["subtitle"] = _wrapped(title["subtitle"], int(width // SUBTITLE_CHAR_PX))
    if "description" not in out and _title_parts(out)[0]:
        out["description"] = _described(*_title_parts(out))
    return out


def _csv_cell(value: Any) -> Any:
    """A value as a CSV cell: null as empty, a whole float without its '.0'."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)[:-2] if repr(value).endswith(".0") else repr(value)
    return value


def _parse_as(values: list[Any]) -> str | None:
    """The Vega-Lite parse type of a column ('number', 'boolean'), or None to keep its text."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "number"
    return None


def _as_csv(rows: list[Any]) -> tuple[str, dict[str, str]] | None:
    """Rows of a chart's data as CSV text and their parse types, or None for data that is not flat rows."""
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    keys = list(dict.fromkeys(k for r in rows for k in r))
    if not keys or any(isinstance(v, (dict, list)) for r in rows for v in r.values()):
        return None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(keys)
    writer.writerows([_csv_cell(r.get(k)) for k in keys] for r in rows)
    parse = {k: kind for k in keys if (kind := _parse_as([r.get(k) for r in rows])) is not None}
    return buffer.getvalue(), parse


def compact(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the site sends it: each inline dataset once, as CSV (its field names once, not once a row),
    in the spec's top-level ``datasets``, and every use of it naming it with its parse types.

    A chart's data is most of a page's weight (an explorer's sweep, a timeline's bars); as JSON rows every row
    repeats every field name, and a dataset two panels draw was written twice.
    """
    datasets: dict[str, Any] = dict(spec.get("datasets", {}))

    def walk(node: Any, key: str = "") -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict) or key in ("datasets", "usermeta", "values"):
            return node
        out = {k: walk(v, k) for k, v in node.items()}
        data = out.get("data")
        if key != "data" and isinstance(data, dict) and isinstance(data.get("values"), list) and "format" not in data:
            flat = _as_csv(data["values"])
            if flat is not None:
                text, parse = flat
                name = "data-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
                datasets[name] = text
                fmt: dict[str, Any] = {"type": "csv", "parse": parse}
                out["data"] = {"name": name, "format": fmt, **{k: v for k, v in data.items() if k != "values"}}
        return out

    out = walk(spec)
    if datasets:
        out["datasets"] = datasets
    return out


def _spec_json(spec: dict[str, Any]) -> str:
    """The spec as canonical JSON (sorted keys), the input of the deterministic div id."""
    return json.dumps(_portable(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def chart_id(spec: dict[str, Any]) -> str:
    """A deterministic HTML id for a chart: the same spec always gets the same id."""
    return "vl-" + hashlib.sha256(_spec_json(spec).encode("utf-8")).hexdigest()[:16]


def _script_safe(text: str) -> str:
    """JSON text made safe inside a <script> element (no '</script>' or HTML comment openers)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _controls(spec: dict[str, Any]) -> list[str]:
    """The names of a chart's bound inputs (an explorer's sliders and lists), as the page shows them."""
    return [str(p["bind"].get("name") or p["name"]).strip() for p in spec.get("params", [])
            if isinstance(p, dict) and isinstance(p.get("bind"), dict) and "input" in p["bind"]]


def description(spec: dict[str, Any]) -> str:
    """What a chart shows, for a screen reader: its caption, and for an explorer the inputs that redraw it."""
    text = _title_parts(spec)[1]
    controls = _controls(spec)
    if controls:
        text += (" " if text else "") + f"Below the chart, {', '.join(controls)} choose what it draws."
    return text


def site_html(spec: dict[str, Any], embed_options: dict[str, Any] | None = None) -> str:
    """The static-site HTML for one chart: a div with a hash id, a script calling the page's vegaEmbed (now, or
    once the page is parsed if the bundle is deferred), and the chart's description for screen readers."""
    div_id = chart_id(spec)
    shown = dressed(_portable(spec))
    title = _title_parts(shown)[0]
    options = dict(EMBED_OPTIONS, **(embed_options or {}))
    spec_text = _script_safe(_spec_json(compact(shown)))
    opts_text = _script_safe(json.dumps(options, sort_keys=True, separators=(",", ":")))
    label_text = _script_safe(json.dumps(title, ensure_ascii=False))
    about = description(shown)
    return (
        # Before the chart, so it is in the page when the chart's first draw names it.
        (f'<p hidden id="{div_id}-description" class="latch-chart-description">{html.escape(about)}</p>\n'
         if about else "")
        + f'<div id="{html.escape(div_id)}" class="latch-chart"></div>\n'
        "<script>\n"
        "(function () {\n"
        "  var me = document.currentScript;\n"
        "  var el = (me && me.previousElementSibling && me.previousElementSibling.id === "
        f'"{div_id}") ? me.previousElementSibling : document.getElementById("{div_id}");\n'
        f"  var spec = {spec_text};\n"
        f"  var opts = {opts_text};\n"
        f"  var title = {label_text}, described = {json.dumps(div_id + '-description')};\n"
        "  var view = null, laidOutAt = 0, resizing = null;\n"
        "  function draw(room) {\n"
        "    if (window.latchThemeCharts) { window.latchThemeCharts(); }  // site-chrome.js: in the page's theme\n"
        "    if (typeof window.vegaEmbed !== 'function') {\n"
        "      el.textContent = 'This chart needs the book\\'s vega bundle: open it from the built site "
        "or run the notebook in JupyterLab.';\n"
        "      return;\n"
        "    }\n"
        "    if (view) { view.finalize(); view = null; }\n"
        "    if (!room) { el.dataset.narrowed = ''; el.dataset.laidOut = ''; laidOutAt = el.clientWidth; }\n"
        "    window.vegaEmbed(el, room ? narrow(spec, room) : spec, opts).then(function (result) {\n"
        "      view = result.view;\n"
        "      // Named by its title and described by its caption (Vega labels it with the whole description).\n"
        "      if (title) { el.setAttribute('aria-label', title); }\n"
        "      if (document.getElementById(described)) { el.setAttribute('aria-describedby', described); }\n"
        "      showValues(el, spec);\n"
        "      var svg = el.querySelector('svg');\n"
        "      var over = svg ? Number(svg.getAttribute('width')) - el.clientWidth : 0;\n"
        "      var next = room ? room - over - 10 : el.clientWidth - 120;\n"
        "      var tries = Number(el.dataset.narrowed || 0);\n"
        "      if (over > 1 && next >= 120 && (!room || (tries >= 1 && tries < 4))) {\n"
        "        el.dataset.narrowed = String(room ? tries + 1 : 1);\n"
        "        draw(next);\n"
        "      } else {\n"
        "        el.dataset.laidOut = 'true';  // final layout (the browser tests wait for it)\n"
        "      }\n"
        "    }).catch(function (err) {\n"
        "      el.textContent = 'Chart error: ' + err;\n"
        "      console.error(err);\n"
        "    });\n"
        "  }\n"
        "  function narrow(spec, room) {\n"
        "    // The chart laid out again for a narrow column: panels side by side go one above the other, and\n"
        "    // no panel is wider than room px (a wider page draws it as built; CSS scales what still overflows).\n"
        "    var out = JSON.parse(JSON.stringify(spec));\n"
        "    function lines(text, size) {\n"
        "      var out = [], line = '';\n"
        "      [].concat(text).join(' ').split(' ').forEach(function (word) {\n"
        "        if (line && (line + ' ' + word).length * size > room) { out.push(line); line = word; }\n"
        "        else { line = line ? line + ' ' + word : word; }\n"
        "      });\n"
        "      return line ? out.concat([line]) : out;\n"
        "    }\n"
        "    var LEGENDS = ['color', 'fill', 'stroke', 'shape', 'strokeDash', 'size'];\n"
        "    function fitLegend(channel) {  // a legend above or below the plot wraps to the room, its title above\n"
        "      var legend = channel && channel.legend, names = channel && channel.scale && channel.scale.domain;\n"
        "      if (!legend || typeof legend !== 'object' || ['top', 'bottom'].indexOf(legend.orient) < 0) { return; }\n"
        "      var known = Array.isArray(names) && names.length > 0;\n"
        "      if (!known) { names = ['a label of some length']; }  // entries not in the spec: one a row at most\n"
        "      var longest = Math.max.apply(null, names.map(function (n) { return String(n).length; }));\n"
        f"      var entry = 28 + {LEGEND_CHAR_PX} * longest;  // a swatch, its gap and a label (px)\n"
        "      var fit = Math.max(1, Math.floor(room / entry));\n"
        "      if ((!known || names.length * entry > room) && (!legend.columns || legend.columns > fit)) {\n"
        "        legend.columns = fit;\n"
        "        legend.titleOrient = 'top';\n"
        "      }\n"
        "    }\n"
        "    (function fit(v) {\n"
        "      if (v.hconcat) { v.vconcat = v.hconcat; delete v.hconcat; }\n"
        "      Object.keys(v.encoding || {}).forEach(function (k) {\n"
        "        var channel = v.encoding[k];  // a legend beside the plot goes below it, where it has the width\n"
        "        if (LEGENDS.indexOf(k) >= 0 && channel && channel.legend !== null && typeof channel === 'object') {\n"
        "          channel.legend = Object.assign({}, channel.legend);\n"
        "          if (['top', 'bottom'].indexOf(channel.legend.orient) < 0) { channel.legend.orient = 'bottom'; }\n"
        "        }\n"
        "        fitLegend(channel);\n"
        "        // an x axis's title wider than the plot widens the chart: it wraps to the room instead\n"
        f"        if (k === 'x' && channel && typeof channel.title === 'string' && channel.title.length * {AXIS_TITLE_CHAR_PX} > room) {{\n"
        f"          channel.title = lines(channel.title, {AXIS_TITLE_CHAR_PX});\n"
        "        }\n"
        "      });\n"
        "      if (v.title && v.title.text) {  // titles and captions wrap to the room (px per character)\n"
        f"        v.title.text = lines(v.title.text, {TITLE_CHAR_PX});\n"
        f"        if (v.title.subtitle) {{ v.title.subtitle = lines(v.title.subtitle, {SUBTITLE_CHAR_PX}); }}\n"
        "      }\n"
        "      if (v.mark === 'text' || (v.mark && v.mark.type === 'text')) {  // a text line is cut to the room\n"
        "        v.mark = Object.assign(typeof v.mark === 'string' ? {type: 'text'} : v.mark, {limit: room});\n"
        "      }\n"
        "      ['vconcat', 'concat', 'layer'].forEach(function (k) { (v[k] || []).forEach(fit); });\n"
        "      if (v.spec) { fit(v.spec); }\n"
        "      if (typeof v.width === 'number' && v.width > room) { v.width = room; }\n"
        "    })(out);\n"
        "    return out;\n"
        "  }\n"
        "  function showValues(root, spec) {\n"
        f"    var texts = (spec.usermeta || {{}})[{json.dumps(SLIDER_VALUES)}] || {{}};\n"
        "    Object.keys(texts).forEach(function (name) {\n"
        "      var input = root.querySelector('input[type=range][name=\"' + name + '\"]');\n"
        "      var out = input && input.nextElementSibling;\n"
        "      if (!out) { return; }\n"
        "      function show() { out.textContent = texts[name][Number(input.value)]; }\n"
        "      input.addEventListener('input', show);\n"
        "      input.addEventListener('change', show);\n"
        "      show();\n"
        "    });\n"
        "  }\n"
        "  window.addEventListener('resize', function () {  // a new column width: lay the chart out anew\n"
        "    clearTimeout(resizing);\n"
        "    resizing = setTimeout(function () { if (Math.abs(el.clientWidth - laidOutAt) > 1) { draw(0); } }, 150);\n"
        "  });\n"
        "  // The page turned light or dark (book/_static/site-chrome.js themes each draw): draw again.\n"
        "  window.addEventListener('latch:theme', function () { draw(0); });\n"
        "  // The vega bundle may load with defer (after this script, before the page's DOMContentLoaded) or late.\n"
        "  if (typeof window.vegaEmbed === 'function' || document.readyState === 'complete') { draw(0); }\n"
        "  else if (document.readyState === 'loading') {\n"
        "    document.addEventListener('DOMContentLoaded', function () {\n"
        "      if (typeof window.vegaEmbed === 'function') { draw(0); }\n"
        "      else { window.addEventListener('load', function () { draw(0); }); }\n"
        "    });\n"
        "  }\n"
        "  else { window.addEventListener('load', function () { draw(0); }); }\n"
        "})();\n"
        "</script>"
    )


def _describe(spec: dict[str, Any]) -> str:
    """A one-line plain-text stand-in naming the chart (for consoles and text-only viewers)."""
    title = spec.get("title")
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, list):
        title = " ".join(str(t) for t in title)
    return f"<Altair chart{': ' + str(title) if title else ''}>"


def _subcharts(chart: Any) -> Iterator[Any]:
    """The chart and every chart nested in it (layers, concatenations, a facet's inner spec)."""
    yield chart
    for attr in ("layer", "hconcat", "vconcat", "concat"):
        inner = getattr(chart, attr, alt.Undefined)
        if isinstance(inner, list):
            for sub in inner:
                yield from _subcharts(sub)
    inner = getattr(chart, "spec", alt.Undefined)
    if isinstance(inner, alt.SchemaBase):
        yield from _subcharts(inner)


def unchecked() -> ContextManager[None]:
    """Build charts without Altair's schema check on every object (a live panel's redraw; the book's
    charts are built checked, by the same functions)."""
    return schemapi.debug_mode(False)


def quick_spec(chart: Any) -> dict[str, Any]:
    """The chart's Vega-Lite dict in milliseconds, for a live panel that redraws on every control change.

    ``chart.to_dict()`` checks the whole spec against the Vega-Lite schema and walks every data row
    (0.1 to 0.5 s for a timeline); here each chart's data is set aside as a named top-level dataset
    before the walk, and the check is skipped: the same chart builders draw the book's checked charts.
    """
    datasets: dict[str, Any] = {}
    swapped = []
    for sub in _subcharts(chart):
        data = getattr(sub, "data", alt.Undefined)
        values = data._kwds.get("values") if isinstance(data, alt.Data) else None
        if isinstance(data, pd.DataFrame):
            values = records(data)
        if isinstance(values, list):
            name = f"panel-data-{len(datasets)}"
            datasets[name] = values
            swapped.append((sub, data))
            sub.data = alt.Data(name=name)
    try:
        with unchecked():
            spec = chart.to_dict(validate=False)
    finally:
        for sub, data in swapped:
            sub.data = data
    if datasets:
        spec["datasets"] = {**spec.get("datasets", {}), **datasets}
    return spec


def notebook_bundle(spec: dict[str, Any]) -> dict[str, Any]:
    """The mime bundle JupyterLab draws natively for a Vega-Lite spec: the spec compiled to Vega 5 (floats
    rounded), its PNG (so JupyterLab has no PNG of its own to add), the spec and a plain-text stand-in."""
    import vl_convert as vlc  # a large native library: loaded only when a chart is compiled for a notebook

    source = _portable(spec)
    vega = _portable(vlc.vegalite_to_vega(source, vl_version=NOTEBOOK_VEGALITE))
    png = base64.b64encode(vlc.vega_to_png(vega, scale=1)).decode("ascii")
    return {NOTEBOOK_MIMETYPE: vega, SPEC_MIMETYPE: source, "image/png": png, "text/plain": _describe(spec)}


def offline_renderer(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """The 'offline' Altair renderer: the notebook bundle of the dressed spec (the site's form is made from the
    stored spec, dressed again: the same)."""
    return notebook_bundle(dressed(spec))


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as the JSON rows a spec inlines (no index; NaN as null; floats to 10 digits)."""
    return json.loads(df.to_json(orient="records", double_precision=10))


def _inline_values(data: Any) -> Any:
    """The book's Altair data transformer: a chart's DataFrame goes into its spec as plain JSON rows.

    A chart keeps its DataFrame until the spec is written, so building and combining charts never copies
    rows; Altair's default would also cap the rows and name each dataset by a hash of its unrounded values
    (which differ in the last digits between CPUs, so stored outputs would too).
    """
    return {"values": records(data)} if isinstance(data, pd.DataFrame) else data


def enable() -> None:
    """Register and enable the offline renderer and the data transformer (idempotent); call once before
    displaying charts."""
    alt.renderers.register(RENDERER_NAME, offline_renderer)
    alt.renderers.enable(RENDERER_NAME)
    alt.data_transformers.register(RENDERER_NAME, _inline_values)
    alt.data_transformers.enable(RENDERER_NAME)
    alt.data_transformers.consolidate_datasets = False
