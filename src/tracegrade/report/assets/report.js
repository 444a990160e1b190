// The report's table and sample views, drawn from the JSON island. All data reaches the
// page as text nodes (textContent), never as markup, so a transcript cannot inject any.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("tg-data").textContent);
  const metrics = data.metrics;
  const rows = data.rows;
  const PAGE = 50;
  const state = { search: "", status: "", metric: "", outcome: "", sort: "i", desc: false, page: 0 };
  let order = rows.map(function (_, position) { return position; });
  let haystacks = null;
  const byIndex = new Map();
  rows.forEach(function (row, position) { byIndex.set(row.i, position); });
  const chunks = new Map();

  // What opening a sample shows (its conversation, calls and metric details) lives in
  // islands of data.chunk samples each, parsed when first needed.
  // They come after this script: the table is in use while the browser reads them. An
  // island is whole once the next element after it has been read.
  function arrived(number) {
    return document.readyState !== "loading" ||
      document.querySelector('script[data-chunk="' + (number + 1) + '"], #tg-views-end') !== null;
  }

  function detail(position) {
    const number = Math.floor(position / data.chunk);
    let chunk = chunks.get(number);
    if (chunk === undefined) {
      if (!arrived(number)) return null;
      const island = document.querySelector('script[data-chunk="' + number + '"]');
      chunk = island ? JSON.parse(island.textContent) : [];
      if (chunks.size >= 50) chunks.delete(chunks.keys().next().value);
      chunks.set(number, chunk);
    }
    return chunk[position % data.chunk] || {};
  }

  function el(tag, className, children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children || []) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
    }
    return node;
  }
  function $(id) { return document.getElementById(id); }
  function fmt(value) { return value === null || value === undefined ? "—" : value.toFixed(4).replace(/\.?0+$/, "") || "0"; }
  function json(value) { return value === undefined ? "" : JSON.stringify(value); }
  function label(row) { return row.id === null || row.id === undefined ? "record " + row.i : String(row.id); }
  function clip(text, size) { return text.length > size ? text.slice(0, size - 1) + "…" : text; }

  // A metric that does not apply to the row has no value, a reason and p === -1; one
  // that failed has no value, its error as the reason and p === null.
  function notApplicable(row, m) { return row.p[m] === -1; }
  function errored(row, m) { return row.v[m] === null && row.r[m] !== null && row.p[m] !== -1; }

  function firstFailing(row) {
    if (row.s === "rejected") return "rejected: " + row.rej;
    for (let m = 0; m < metrics.length; m++) {
      if (row.p[m] === 0 || errored(row, m)) return metrics[m] + ": " + row.r[m];
    }
    return "";
  }

  function haystack(row, position) {
    const parts = [label(row), row.s, row.rej || ""];
    if (row.r) parts.push(row.r.join(" "));
    const view = data.searchViews ? detail(position).x : undefined;
    if (view) {
      for (const message of view.messages || []) {
        parts.push(message[1]);
        if (message[2]) parts.push(json(message[2]));
      }
      parts.push(view.input || "", view.response || "", view.reference || "", json(view.expected));
    }
    return parts.join("\n").toLowerCase();
  }

  function matches(row) {
    if (state.status && row.s !== state.status) return false;
    if (state.outcome) {
      const columns = state.metric === "" ? metrics.map(function (_, m) { return m; }) : [Number(state.metric)];
      const hit = columns.some(function (m) {
        if (row.s === "rejected") return false;
        if (state.outcome === "error") return errored(row, m);
        if (state.outcome === "pass") return row.p[m] === 1;
        if (state.outcome === "na") return notApplicable(row, m);
        return row.p[m] === 0 || errored(row, m);
      });
      if (!hit) return false;
    } else if (state.metric !== "") {
      const m = Number(state.metric);
      if (row.s === "rejected" || (row.v[m] === null && row.r[m] === null)) return false;
    }
    return true;
  }

  function sortKey(row) {
    if (state.sort === "i") return row.i;
    if (state.sort === "id") return label(row);
    if (state.sort === "s") return row.s;
    const value = row.s === "rejected" ? null : row.v[Number(state.sort)];
    return value === null ? null : value;
  }

  function refilter() {
    const needle = state.search.trim().toLowerCase();
    if (needle && haystacks === null && data.searchViews && document.readyState === "loading") {
      $("shown").textContent = "the search runs once the page has read every conversation";
      document.addEventListener("DOMContentLoaded", refilter, { once: true });
      return;
    }
    if (needle && haystacks === null) haystacks = rows.map(haystack);
    order = [];
    for (let position = 0; position < rows.length; position++) {
      const row = rows[position];
      if (!matches(row)) continue;
      if (needle && haystacks[position].indexOf(needle) < 0) continue;
      order.push(position);
    }
    const keys = new Map(order.map(function (position) { return [position, sortKey(rows[position])]; }));
    const sign = state.desc ? -1 : 1;
    order.sort(function (a, b) {
      const x = keys.get(a), y = keys.get(b);
      if (x === y) return rows[a].i - rows[b].i;
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    state.page = Math.min(state.page, Math.max(0, Math.ceil(order.length / PAGE) - 1));
    drawTable();
    window.tracegradeFiltered = (window.tracegradeFiltered || 0) + 1;
  }

  function valueCell(row, m) {
    if (row.s === "rejected") return el("td", "num muted", ["—"]);
    if (notApplicable(row, m)) return el("td", "num muted", ["n/a"]);
    if (row.v[m] === null) {
      return row.r[m] === null ? el("td", "num muted", ["—"]) : el("td", "num fail", ["error"]);
    }
    return el("td", "num " + (row.p[m] === 1 ? "pass" : "fail"), [fmt(row.v[m])]);
  }

  function drawTable() {
    const body = document.querySelector("#table tbody");
    const start = state.page * PAGE;
    const fragment = document.createDocumentFragment();
    for (const position of order.slice(start, start + PAGE)) {
      const row = rows[position];
      const line = el("tr", "row", [
        el("td", "num", [row.i]),
        el("td", "mono", [label(row)]),
        el("td", null, [el("span", "badge " + row.s, [row.s])]),
      ]);
      for (let m = 0; m < metrics.length; m++) line.append(valueCell(row, m));
      line.append(el("td", "reason", [clip(firstFailing(row), 160)]));
      line.tabIndex = 0;
      line.dataset.index = String(row.i);
      fragment.append(line);
    }
    body.replaceChildren(fragment);
    const pages = Math.max(1, Math.ceil(order.length / PAGE));
    $("page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("shown").textContent = order.length + " of " + rows.length + " samples";
    $("prev-page").disabled = state.page === 0;
    $("next-page").disabled = state.page >= pages - 1;
    for (const header of document.querySelectorAll("#table th[data-sort]")) {
      header.classList.toggle("sorted", header.dataset.sort === state.sort);
      header.classList.toggle("desc", header.dataset.sort === state.sort && state.desc);
    }
  }

  function callText(call) {
    if (!call) return "";
    const args = call[1];
    if (args === null || args === undefined) return call[0];
    if (typeof args === "string") return call[0] + "(" + args + ")";
    const parts = Object.keys(args).map(function (key) { return key + "=" + json(args[key]); });
    return call[0] + "(" + parts.join(", ") + ")";
  }

  const KIND_TEXT = {
    matched: "matched", arguments: "wrong arguments", out_of_order: "out of order",
    missing: "missing", extra: "extra",
  };
  const KIND_CLASS = {
    matched: "matched", arguments: "arguments", out_of_order: "out-of-order",
    missing: "missing", extra: "extra",
  };

  function callsOf(view) {
    if (!view.calls) {
      view.calls = [];
      for (const message of view.messages || []) for (const call of message[2] || []) view.calls.push(call);
    }
    return view.calls;
  }

  function argumentList(diff, args) {
    const list = el("ul", "args", []);
    for (const [key, verdict, want, got] of diff) {
      const name = key === "" ? "(arguments)" : key;
      let text;
      if (verdict === "same") text = name + " = " + json(key === "" ? args : args[key]);
      else if (verdict === "missing") text = name + ": missing (expected " + json(want) + ")";
      else if (verdict === "extra") text = name + " = " + json(got) + " (not expected)";
      else text = name + ": expected " + json(want) + ", got " + json(got);
      list.append(el("li", "arg " + verdict, [text]));
    }
    return list;
  }

  function diffTable(view) {
    const table = el("table", "diff", [
      el("thead", null, [el("tr", null, [el("th", null, ["verdict"]), el("th", null, ["expected"]), el("th", null, ["actual"]), el("th", null, ["arguments"])])]),
    ]);
    const body = el("tbody", null, []);
    const calls = callsOf(view);
    for (const [kind, actual, expected, args] of view.diff) {
      body.append(el("tr", "call " + KIND_CLASS[kind], [
        el("td", null, [el("span", "badge " + KIND_CLASS[kind], [KIND_TEXT[kind]])]),
        el("td", "mono", [expected === null ? "—" : callText(view.expected[expected])]),
        el("td", "mono", [actual === null ? "—" : callText(calls[actual])]),
        el("td", null, [args.length ? argumentList(args, calls[actual][1]) : ""]),
      ]));
    }
    table.append(body);
    return table;
  }

  function callKinds(view) {
    const kinds = new Map();
    for (const [kind, actual] of view.diff || []) if (actual !== null) kinds.set(actual, kind);
    return kinds;
  }

  function transcript(view) {
    const box = el("div", "chat", []);
    const kinds = callKinds(view);
    let position = 0;
    for (const message of view.messages) {
      const [role, text, calls, callId] = message;
      const bubble = el("div", "msg " + role, [el("div", "who", [role === "ai" ? "AI" : role + (callId ? " · " + callId : "")])]);
      if (text) bubble.append(el("pre", "text", [text]));
      for (const call of calls || []) {
        const kind = kinds.get(position);
        const line = el("div", "tool-call mono", [callText(call)]);
        if (call[2]) line.append(el("span", "muted", [" · " + call[2]]));
        if (kind) line.append(" ", el("span", "badge " + KIND_CLASS[kind], [KIND_TEXT[kind]]));
        bubble.append(line);
        position++;
      }
      box.append(bubble);
    }
    return box;
  }

  function texts(view) {
    const list = el("dl", "facts", []);
    for (const key of ["input", "response", "reference"]) {
      if (view[key] === undefined) continue;
      list.append(el("dt", null, [key]), el("dd", null, [el("pre", null, [view[key]])]));
    }
    return list;
  }

  function scoresTable(row, found) {
    const body = el("tbody", null, []);
    for (let m = 0; m < metrics.length; m++) {
      if (row.v[m] === null && row.r[m] === null) continue;
      const failed = errored(row, m);
      const verdict = notApplicable(row, m) ? el("span", "badge", ["not applicable"]) : failed ? el("span", "badge failed", ["error"]) : el("span", "badge " + (row.p[m] === 1 ? "pass" : "fail"), [row.p[m] === 1 ? "pass" : "fail"]);
      const reason = el("td", null, [el("div", failed ? "fail" : null, [row.r[m] || ""])]);
      const details = found && found[m];
      if (details) {
        reason.append(el("details", null, [el("summary", "muted", ["details"]), el("pre", null, [JSON.stringify(details, null, 2)])]));
      }
      body.append(el("tr", "score", [el("td", "mono", [metrics[m]]), el("td", "num", [notApplicable(row, m) ? "n/a" : fmt(row.v[m])]), el("td", null, [verdict]), reason]));
    }
    return el("table", "scores", [el("thead", null, [el("tr", null, [el("th", null, ["metric"]), el("th", "num", ["value"]), el("th", null, ["verdict"]), el("th", null, ["reason"])])]), body]);
  }

  function drawSample(position) {
    const row = rows[position];
    const at = order.indexOf(position);
    const pending = detail(position) === null;
    const more = pending ? {} : detail(position);
    const view = more.x;
    const box = $("sample");
    const nav = el("div", "sample-nav", [
      el("button", "prev", ["‹ previous"]), el("button", "back", ["back to the table"]), el("button", "next", ["next ›"]),
      el("span", "muted", [at >= 0 ? "sample " + (at + 1) + " of " + order.length + " shown" : "not among the samples shown"]),
    ]);
    nav.querySelector(".prev").addEventListener("click", function () { step(-1); });
    nav.querySelector(".next").addEventListener("click", function () { step(1); });
    nav.querySelector(".back").addEventListener("click", function () { location.hash = "samples"; });
    const title = el("h2", null, ["Sample ", el("span", "mono", [label(row)]), " ", el("span", "badge " + row.s, [row.s])]);
    const facts = el("p", "muted", ["record " + row.i + (row.task !== undefined ? " · task " + row.task : "") + (row.place ? " · " + row.place : "")]);
    const parts = [nav, title, facts];
    if (row.s === "rejected") {
      parts.push(el("p", "fail", ["rejected: " + row.rej]));
    } else {
      parts.push(el("h3", null, ["Scores"]), scoresTable(row, more.d));
      if (view && view.diff) parts.push(el("h3", null, ["Tool calls: expected and actual"]), diffTable(view));
      else if (view && callsOf(view).length) parts.push(el("h3", null, ["Tool calls"]), el("ol", "mono", callsOf(view).map(function (call) { return el("li", null, [callText(call)]); })));
      if (view && view.messages) parts.push(el("h3", null, ["Conversation"]), transcript(view));
      if (view) parts.push(texts(view));
      if (pending) {
        parts.push(el("p", "muted", ["The conversation is still being read; it shows here once the page has loaded."]));
        document.addEventListener("DOMContentLoaded", function () {
          if (!$("sample").hidden && $("sample").dataset.index === String(row.i)) drawSample(position);
        }, { once: true });
      }
      if (!view && !data.views) parts.push(el("p", "muted", ["The input records were not available, so the conversation is not shown."]));
    }
    box.replaceChildren.apply(box, parts);
    box.dataset.index = String(row.i);
    show("sample");
    window.scrollTo(0, 0);
  }

  function show(which) {
    $("sample").hidden = which !== "sample";
    $("samples").hidden = which === "sample";
    $("overview").hidden = which === "sample";
  }

  function step(delta) {
    const current = byIndex.get(Number($("sample").dataset.index));
    let at = order.indexOf(current);
    if (at < 0) at = delta > 0 ? -1 : order.length;
    const next = at + delta;
    if (next < 0 || next >= order.length) return;
    location.hash = "sample-" + rows[order[next]].i;
  }

  function route() {
    const found = /^#sample-(\d+)$/.exec(location.hash);
    if (found && byIndex.has(Number(found[1]))) {
      drawSample(byIndex.get(Number(found[1])));
      return;
    }
    show("table");
    if (location.hash === "#samples") $("samples").scrollIntoView();
  }

  function keys(event) {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    const inSample = !$("sample").hidden;
    if (event.key === "Escape") {
      if (typing) event.target.blur();
      else if (inSample) location.hash = "samples";
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "/") {
      event.preventDefault();
      if (inSample) location.hash = "samples";
      $("search").focus();
    } else if (inSample && (event.key === "j" || event.key === "ArrowRight")) {
      step(1);
    } else if (inSample && (event.key === "k" || event.key === "ArrowLeft")) {
      step(-1);
    } else if (!inSample && event.key === "Enter") {
      const focused = document.activeElement;
      const index = focused && focused.dataset && focused.dataset.index;
      if (index !== undefined) location.hash = "sample-" + index;
      else if (order.length) location.hash = "sample-" + rows[order[state.page * PAGE]].i;
    } else if (!inSample && (event.key === "j" || event.key === "k")) {
      const lines = Array.from(document.querySelectorAll("#table tbody tr"));
      const at = lines.indexOf(document.activeElement);
      const next = lines[Math.max(0, Math.min(lines.length - 1, at + (event.key === "j" ? 1 : -1)))];
      if (next) next.focus();
    }
  }

  let typingTimer = 0;
  $("search").addEventListener("input", function (event) {
    clearTimeout(typingTimer);
    typingTimer = setTimeout(function () { state.search = event.target.value; state.page = 0; refilter(); }, 150);
  });
  for (const id of ["status", "metric", "outcome"]) {
    $(id).addEventListener("change", function (event) { state[id] = event.target.value; state.page = 0; refilter(); });
  }
  $("prev-page").addEventListener("click", function () { state.page--; drawTable(); });
  $("next-page").addEventListener("click", function () { state.page++; drawTable(); });
  for (const header of document.querySelectorAll("#table th[data-sort]")) {
    header.addEventListener("click", function () {
      const key = header.dataset.sort;
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      refilter();
    });
  }
  document.querySelector("#table tbody").addEventListener("click", function (event) {
    const line = event.target.closest("tr");
    if (line) location.hash = "sample-" + line.dataset.index;
  });
  $("to-overview").addEventListener("click", function (event) { event.preventDefault(); location.hash = ""; show("table"); window.scrollTo(0, 0); });
  document.addEventListener("keydown", keys);
  window.addEventListener("hashchange", route);

  if (!data.searchViews) $("search").placeholder = "search ids and reasons ( / )";
  refilter();
  route();
  document.documentElement.dataset.ready = "1";
  window.tracegradeReady = performance.now();
})();
