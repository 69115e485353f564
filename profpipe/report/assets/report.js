/* profpipe report: draws the pages of the JSON payload in #report-data (built by profpipe/report/pages.py).
 * Each page is a list of sections; a section's `kind` picks its renderer below. Pages are drawn when first
 * shown, so the file opens fast whatever its size; every drawn chart gets data-points (the number of values it
 * plots) for the browser tests. Nothing here loads anything from the network. */
"use strict";

const REPORT = JSON.parse(document.getElementById("report-data").textContent);
const PLOT_CONFIG = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"]};
const drawn = new Set();

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/* ---- number formats (the payload's columns name theirs) ----
 * One Intl.NumberFormat per precision, made once: Number.toLocaleString with options builds a new one per call,
 * most of the time of a table of a few thousand cells. */
const DIGITS = [0, 1, 2, 3].map(n => new Intl.NumberFormat("en", {maximumFractionDigits: n}).format);
const FORMATS = {
  ms: v => DIGITS[3](v),
  num: v => DIGITS[3](v),
  int: v => DIGITS[0](v),
  pct: v => DIGITS[1](100 * v) + " %",
  mib: v => DIGITS[1](v),
  bytes: v => v >= 1048576 ? (v / 1048576).toFixed(1) + " MiB" : v >= 1024 ? (v / 1024).toFixed(1) + " KiB" : v + " B",
  bw: v => DIGITS[2](v / 1e9) + " GB/s",
  bool: v => v ? "yes" : "",
  text: v => String(v),
};
function formatted(value, format) {
  if (value === null || value === undefined) return "";
  return (FORMATS[format] || FORMATS.text)(value);
}

/* ---- fuzzy match: exact > prefix > substring > letters in order (as `profpipe search`) ---- */
function matchRank(text, term) {
  const hay = String(text).toLowerCase();
  if (!term) return 0;
  if (hay === term) return 4;
  if (hay.startsWith(term)) return 3;
  if (hay.includes(term)) return 2;
  let at = 0;
  for (const ch of term) {
    at = hay.indexOf(ch, at);
    if (at < 0) return -1;
    at += 1;
  }
  return 1;
}

/* ---- sections ---- */
function facts(section) {
  return el("dl", {class: "facts"}, section.items.map(([label, value]) => [el("dt", {}, label), el("dd", {}, value)]));
}

function text(section) {
  return el("div", {class: "text"},
    (section.paragraphs || []).map(p => el("p", {}, p)),
    section.code ? el("pre", {}, section.code) : null);
}

function empty(section) {
  return el("p", {class: "empty"}, section.why);
}

function plot(holder, figure) {
  const points = figure.data.reduce((sum, trace) =>
    sum + ((trace.x || trace.values || trace.z || []).length || 0), 0);
  holder.dataset.points = String(points);
  const layout = Object.assign({margin: {t: 40, r: 20}, autosize: true,
    legend: {orientation: "h", traceorder: "normal", x: 0, y: 1.02, yanchor: "bottom"}}, figure.layout);
  Plotly.react(holder, figure.data, layout, PLOT_CONFIG);
  if (figure.link && !holder.dataset.link) {  /* a warehouse trend: a click on a run's point opens its report */
    holder.dataset.link = figure.link;
    holder.on("plotly_click", event => {
      const point = event.points && event.points[0];
      if (point && point.x !== undefined) window.location.href = holder.dataset.link.replace("{run}", encodeURIComponent(point.x));
    });
  }
  holder.dataset.rendered = "true";
}

function chart(section) {
  const holder = el("div", {class: "chart", "data-chart": section.id});
  const box = el("div", {class: "chart-box"});
  if (section.variants) {
    const select = el("select", {"data-selector": section.id, onchange: () => plot(holder, section.variants[select.value].figure)},
      section.variants.map((variant, i) => el("option", {value: String(i)}, variant.label)));
    box.append(el("label", {class: "selector"}, section.selector + " ", select));
  }
  box.append(holder);
  box.draw = () => plot(holder, section.variants ? section.variants[0].figure : section.figure);
  return box;
}

function table(section) {
  const wrap = el("div", {class: "table-wrap", "data-table": section.id});
  const rows = section.rows.map((values, index) => ({values, index}));
  let order = null;
  let term = "";
  const body = el("tbody");
  const count = el("span", {class: "count"});
  const detail = el("div", {class: "drill"});
  const searchColumns = section.columns.map((c, i) => c.search ? i : -1).filter(i => i >= 0);

  function redraw() {
    let shown = rows;
    if (term) {
      shown = rows.map(row => ({row, rank: Math.max(...searchColumns.map(i => matchRank(row.values[i] ?? "", term)))}))
        .filter(hit => hit.rank > 0)
        .sort((a, b) => b.rank - a.rank || a.row.index - b.row.index)
        .map(hit => hit.row);
    }
    if (order) {
      const {column, direction} = order;
      shown = [...shown].sort((a, b) => {
        const x = a.values[column], y = b.values[column];
        if (x === y) return a.index - b.index;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * direction;
      });
    }
    body.replaceChildren(...shown.map(row => {
      const tr = el("tr", {}, row.values.map((v, i) => el("td", {class: ["text", "link"].includes(section.columns[i].format) ? "" : "n"},
        section.columns[i].format === "link" && v ? el("a", {href: v}, v) : formatted(v, section.columns[i].format))));
      if (section.drill) {
        tr.classList.add("clickable");
        tr.addEventListener("click", () => showDetail(row.values));
      }
      return tr;
    }));
    count.textContent = `${shown.length} of ${rows.length} rows` + (section.total > rows.length ? ` (top ${rows.length} of ${section.total})` : "");
  }

  function showDetail(values) {
    const drill = section.drill;
    const key = drill.key.map(i => values[i]).join("\u0000");
    const child = drill.rows[key] || [];
    detail.replaceChildren(el("h4", {}, `${drill.title}: ${drill.key.map(i => values[i]).join(" / ")}`),
      child.length ? el("table", {class: "data"},
        el("thead", {}, el("tr", {}, drill.columns.map(c => el("th", {}, c.label)))),
        el("tbody", {}, child.map(r => el("tr", {}, r.map((v, i) => el("td", {class: drill.columns[i].format === "text" ? "" : "n"},
          formatted(v, drill.columns[i].format)))))))
        : el("p", {class: "empty"}, drill.none));
  }

  const head = el("tr", {}, section.columns.map((c, i) => el("th", {
    title: c.help || "", onclick: () => {
      order = order && order.column === i ? {column: i, direction: -order.direction} : {column: i, direction: c.format === "text" ? 1 : -1};
      redraw();
    }}, c.label)));
  if (searchColumns.length) {
    wrap.append(el("input", {type: "search", class: "search", placeholder: "search by " +
      searchColumns.map(i => section.columns[i].label).join(" or "),
      oninput: event => { term = event.target.value.trim().toLowerCase(); redraw(); }}));
  }
  wrap.append(count, el("div", {class: "scroll"}, el("table", {class: "data"}, el("thead", {}, head), body)), detail);
  redraw();
  return wrap;
}

/* The step chart: one rank's steps (stacked phases, input-bound and slow-rank steps marked), or one step
 * across all ranks (slow ranks marked). Its two selectors are the rank and the step. */
function steps(section) {
  const data = section.data;
  const ranks = [...new Set(data.rank)];
  const stepNames = [...new Set(data.step)].sort((a, b) => a - b);
  const holder = el("div", {class: "chart", "data-chart": section.id});
  const rankSelect = el("select", {"data-selector": "rank"}, ranks.map(r => el("option", {value: String(r)}, `rank ${r}`)));
  const stepSelect = el("select", {"data-selector": "step"}, el("option", {value: "all"}, "all steps"),
    stepNames.map(s => el("option", {value: String(s)}, `step ${s}`)));
  const phases = section.phases;

  function figure() {
    const step = stepSelect.value;
    const rows = data.rank.map((_, i) => i).filter(i => step === "all" ? data.rank[i] === Number(rankSelect.value) : data.step[i] === Number(step));
    const x = rows.map(i => step === "all" ? data.step[i] : `rank ${data.rank[i]}`);
    const traces = phases.map(p => ({type: "bar", name: p.label, x, y: rows.map(i => data[p.key][i]), marker: {color: p.color}}));
    if (data.communication_ms.some(v => v !== null)) {
      traces.push({type: "scatter", mode: "lines+markers", name: "communication not overlapped", x,
        y: rows.map(i => data.communication_ms[i]), line: {color: "#7f3c8d"}});
    }
    const top = rows.map(i => Math.max(data.total_ms[i] ?? 0, data.input_wait_ms[i] ?? 0));
    const bound = rows.filter(i => data.input_bound[i]);
    if (bound.length) {
      traces.push({type: "scatter", mode: "markers", name: "input-bound step", x: bound.map(i => x[rows.indexOf(i)]),
        y: bound.map(i => top[rows.indexOf(i)] * 1.05), marker: {symbol: "triangle-down", size: 10, color: "#d62728"}});
    }
    const slow = rows.filter(i => data.is_slow[i]);
    if (slow.length) {
      traces.push({type: "scatter", mode: "markers", name: "slow rank (over 5 % behind the fastest)", x: slow.map(i => x[rows.indexOf(i)]),
        y: slow.map(i => top[rows.indexOf(i)] * 1.1), marker: {symbol: "star", size: 12, color: "#ff7f0e"}});
    }
    return {data: traces, layout: {barmode: "stack", xaxis: {title: {text: step === "all" ? `steps of rank ${rankSelect.value}` : `step ${step}, every rank`},
      type: "category"}, yaxis: {title: {text: "ms"}}}};
  }
  const box = el("div", {class: "chart-box"},
    el("label", {class: "selector"}, "Rank ", rankSelect), el("label", {class: "selector"}, " Step ", stepSelect), holder);
  rankSelect.addEventListener("change", () => plot(holder, figure()));
  stepSelect.addEventListener("change", () => plot(holder, figure()));
  box.draw = () => plot(holder, figure());
  return box;
}

function findings(section) {
  if (!section.items.length) return el("p", {class: "empty"}, section.none);
  return el("ol", {class: "findings"}, section.items.map(f => el("li", {class: "sev-" + f.severity},
    el("span", {class: "severity"}, f.severity), " ", el("b", {}, f.title), el("code", {}, f.rule),
    el("p", {}, f.summary), el("p", {class: "suggestion"}, f.suggestion),
    f.evidence_sql ? el("details", {}, el("summary", {}, "evidence SQL"), el("pre", {}, f.evidence_sql)) : null)));
}

const RENDERERS = {facts, text, empty, chart, table, steps, findings};

function drawPage(page, node) {
  if (drawn.has(page.id)) return;
  drawn.add(page.id);
  const lazy = [];
  for (const section of page.sections) {
    const body = RENDERERS[section.kind](section);
    node.append(el("section", {class: section.lazy ? "section lazy" : "section"}, section.title ? el("h3", {}, section.title) : null,
      section.note ? el("p", {class: "note"}, section.note) : null, body));
    if (body.draw && section.lazy) lazy.push(body);
    else if (body.draw) body.draw();
  }
  if (lazy.length) drawWhenNear(lazy);
}

/* Sections marked `lazy` (the warehouse report's trend charts and runs table) are not laid out while out of
 * view (class lazy: CSS content-visibility), and their charts (a point per run, each a tenth of a second or more
 * to draw) are drawn when they come within LAZY_MARGIN px of the view, so the page opens with its first
 * screen drawn and the charts below are drawn as they are scrolled to. Those already near the view are drawn at
 * once (waiting for the observer's first report would cost a paint of the page without them). Until drawn a
 * chart is an empty box of the drawn chart's height (data-lazy="waiting"), so nothing moves when it is drawn. */
const LAZY_MARGIN = 200;
function drawWhenNear(boxes) {
  const draw = box => {
    box.querySelector(".chart").dataset.lazy = "drawn";
    box.draw();
  };
  const observer = new IntersectionObserver(entries => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      draw(entry.target);
    }
  }, {rootMargin: `${LAZY_MARGIN}px 0px`});
  for (const box of boxes) box.querySelector(".chart").dataset.lazy = "waiting";
  for (const box of boxes) {
    const rect = box.getBoundingClientRect();
    const near = rect.height > 0 && rect.top < window.innerHeight + LAZY_MARGIN && rect.bottom > -LAZY_MARGIN;
    if (near) draw(box);
    else observer.observe(box);
  }
}

function show(id) {
  const page = REPORT.pages.find(p => p.id === id) || REPORT.pages[0];
  for (const node of document.querySelectorAll(".page")) node.hidden = node.dataset.page !== page.id;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.page === page.id);
  drawPage(page, document.querySelector(`.page[data-page="${page.id}"]`));
}

function main() {
  document.title = REPORT.title;
  const nav = el("nav", {}, REPORT.pages.map(page => el("a", {href: "#" + page.id, "data-page": page.id,
    class: page.sections.every(s => s.kind === "empty") ? "no-data" : "", onclick: () => show(page.id)}, page.title)));
  const pages = REPORT.pages.map(page => el("main", {class: "page", "data-page": page.id, hidden: ""}, el("h2", {}, page.title)));
  document.body.append(el("header", {}, el("h1", {}, REPORT.title), el("p", {class: "sub"}, REPORT.subtitle)), nav, ...pages,
    el("footer", {}, REPORT.footer));
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  show(location.hash.slice(1));
}

/* plotly.js comes gzipped and base64-encoded in #plotly-gzip-base64 (profpipe/report/document.py): the browser's
 * DecompressionStream inflates it and it runs in the global scope (it sets window.Plotly); the pages are built
 * after that. The CSP's 'unsafe-eval' allows the eval, and nothing is fetched, so it works from file:// too. */
async function loadPlotly() {
  const packed = atob(document.getElementById("plotly-gzip-base64").textContent);
  const bytes = new Uint8Array(packed.length);  /* a plain loop: Uint8Array.from with a map function is 10x slower */
  for (let i = 0; i < packed.length; i++) bytes[i] = packed.charCodeAt(i);
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  (0, eval)(await new Response(inflated).text());
}

loadPlotly().then(main, error => {
  document.body.append(el("p", {class: "load-error"}, `The charts' library could not be loaded (${error}); the ` +
    "report needs a browser with DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 or later)."));
  throw error;
});
