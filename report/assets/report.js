// lmeval report: the sample browser. Vanilla JS, no network: every byte it reads is inline in this page
// (the JSON data block "lmeval-meta" and one "lmeval-task-N" block per task, parsed when first shown).
(function () {
  "use strict";
  var PAGE_SIZE = 20;
  var metaEl = document.getElementById("lmeval-meta");
  if (!metaEl) return;
  var meta = JSON.parse(metaEl.textContent);
  var cache = {};
  var state = { task: 0, filter: "", metric: "", wrong: false, flipped: false, q: "", page: 0 };
  var root = document.getElementById("browser");

  function el(tag, attrs, html) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function task(i) {
    if (!cache[i]) cache[i] = JSON.parse(document.getElementById("lmeval-task-" + i).textContent);
    return cache[i];
  }
  function runLabel(r) { return meta.runs[r].label; }

  // Whitespace made visible, the same rule as `lmeval diff` (diff/render.py visible_line): trailing
  // spaces and inner runs of two or more spaces as ␣, tabs →, newlines ↵, CR ␍, no-break spaces ⍽;
  // indentation and single inner spaces stay as they are.
  function visibleLine(line) {
    var nl = line.endsWith("\n");
    var body = nl ? line.slice(0, -1) : line;
    var cr = body.endsWith("\r");
    if (cr) body = body.slice(0, -1);
    var tail = "";
    var m = /[ \t]+$/.exec(body);
    if (m) { tail = m[0].replace(/ /g, "␣"); body = body.slice(0, m.index); }
    var indent = body.length - body.replace(/^ +/, "").length;
    body = body.slice(0, indent) + body.slice(indent).replace(/ {2,}/g, function (x) { return "␣".repeat(x.length); }) + tail;
    body = body.replace(/\t/g, "→").replace(/\u00a0/g, "⍽").replace(/\r/g, "␍");
    return body + (cr ? "␍" : "") + (nl ? "↵" : "");
  }
  function visibleLines(text) {
    var out = [];
    var re = /[^\n]*\n|[^\n]+$/g;
    var m;
    while ((m = re.exec(text)) !== null) { if (m[0] === "") break; out.push(visibleLine(m[0])); }
    return out.length ? out : [""];
  }
  function visibleInline(s) {
    s = s.replace(/\t/g, "→").replace(/\r/g, "␍").replace(/\n/g, "↵").replace(/\u00a0/g, "⍽");
    var core = s.replace(/^ +| +$/g, "");
    if (!core) return "␣".repeat(s.length);
    var lead = s.length - s.replace(/^ +/, "").length;
    var trail = s.length - s.replace(/ +$/, "").length;
    return "␣".repeat(lead) + core + "␣".repeat(trail);
  }
  function marks(s) { return esc(s).replace(/[␣↵→␍⍽]+/g, function (x) { return '<span class="ws">' + x + "</span>"; }); }
  function showText(text) { return marks(visibleLines(text).join("\n")); }
  function showInline(text) { return marks(visibleInline(text)); }
  window.lmevalVisible = { line: visibleLine, lines: visibleLines, inline: visibleInline };

  function num(x, d) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "string") return x;
    return Number.isInteger(x) && d === undefined ? String(x) : x.toFixed(d === undefined ? 4 : d);
  }

  // ---- data access
  function entry(t, r) {
    var e = t.per_run[String(r)];
    return e;
  }
  function promptEntry(t, r) {
    var e = entry(t, r);
    if (e && e.same_as !== undefined) return entry(t, e.same_as);
    return e;
  }
  // a document's own prompt part / continuations; a number there means "the same as run N's"
  function ctxOf(t, r, k) {
    var p = promptEntry(t, r);
    if (!p || !p.ctx) return null;
    var v = p.ctx[k];
    return typeof v === "number" ? ctxOf(t, v, k) : v;
  }
  function contOf(t, r, k) {
    var p = promptEntry(t, r);
    if (!p || !p.cont) return null;
    var v = p.cont[k];
    return typeof v === "number" ? contOf(t, v, k) : v;
  }
  function score(t, r, k) {
    var e = entry(t, r);
    if (!e) return null;
    var s = e.score[state.filter];
    if (!s || !s[state.metric]) return null;
    var v = s[state.metric][k];
    return typeof v === "number" ? v : null;
  }
  function hib(t) {
    for (var i = 0; i < t.metrics.length; i++) if (t.metrics[i].key === state.metric) return t.metrics[i].hib;
    return true;
  }
  function isWrong(t, k) {
    var up = hib(t);
    for (var i = 0; i < t.runs.length; i++) {
      var v = score(t, t.runs[i], k);
      if (v !== null && (up ? v < 1 : v > 0)) return true;
    }
    return false;
  }
  function isFlipped(t, k) {
    var seen = null;
    for (var i = 0; i < t.runs.length; i++) {
      var v = score(t, t.runs[i], k);
      if (v === null) continue;
      if (seen === null) seen = v; else if (v !== seen) return true;
    }
    return false;
  }
  function haystack(t, k) {
    if (!t._hay) t._hay = [];
    if (t._hay[k] === undefined) {
      var parts = [String(t.ids[k]), t.target[k] === null ? "" : String(t.target[k])];
      if (t.choices && t.choices[k]) parts.push(t.choices[k].join("\n"));
      t.runs.forEach(function (r) {
        var c = ctxOf(t, r, k), e = entry(t, r);
        if (c !== null && c !== undefined) parts.push(Array.isArray(c) ? c.join("\n") : c);
        if (e.resp && e.resp[k]) parts.push(e.resp[k]);
        for (var f in e.filtered) if (e.filtered[f][k]) parts.push(e.filtered[f][k]);
      });
      t._hay[k] = parts.join("\n").toLowerCase();
    }
    return t._hay[k];
  }
  function matches(t) {
    var q = state.q.trim().toLowerCase();
    var docq = /^doc:\s*(\d+)$/.exec(q);
    var out = [];
    for (var k = 0; k < t.ids.length; k++) {
      if (docq) { if (String(t.ids[k]) !== docq[1]) continue; }
      else if (q && haystack(t, k).indexOf(q) < 0) continue;
      if (state.wrong && !isWrong(t, k)) continue;
      if (state.flipped && !isFlipped(t, k)) continue;
      out.push(k);
    }
    return out;
  }
  function goldIndices(t, k) {
    var tg = t.target[k];
    var ch = t.choices ? t.choices[k] : null;
    if (tg === null || !ch) return [];
    if (/^\d+$/.test(tg)) return [parseInt(tg, 10)];
    if (tg.charAt(0) === "[") {
      try { return JSON.parse(tg).map(function (x) { return typeof x === "number" ? x : ch.indexOf(x); }); } catch (e) { return []; }
    }
    var i = ch.indexOf(tg);
    return i >= 0 ? [i] : [];
  }

  // ---- rendering one document
  function promptHtml(t, k) {
    var groups = [];
    t.runs.forEach(function (r) {
      var p = promptEntry(t, r);
      var c = ctxOf(t, r, k);
      if (c === null || c === undefined) return;
      var key = JSON.stringify([p.prefix, c, p.fewshot ? p.fewshot[k] : null]);
      var g = groups.find(function (x) { return x.key === key; });
      if (g) g.runs.push(r); else groups.push({ key: key, runs: [r], p: p, ctx: c });
    });
    if (!groups.length) return '<p class="dim">prompt not available (plan file not found)</p>';
    return groups.map(function (g) {
      var who = t.runs.length > 1 ? '<div class="who">' + g.runs.map(function (r) {
        return '<span class="tag run' + (r % 8) + '">' + esc(runLabel(r)) + "</span>";
      }).join(" ") + "</div>" : "";
      var fs = g.p.fewshot && g.p.fewshot[k] ? '<span class="dim">few-shot examples: ' + esc(g.p.fewshot[k].join(", ")) + "</span>" : "";
      if (fs) who = who ? who.replace("</div>", " " + fs + "</div>") : '<div class="who">' + fs + "</div>";
      var pre = "";
      if (g.p.prefix) {
        pre = '<details class="prefix"><summary>shared prefix: ' + g.p.prefix.length.toLocaleString("en-US") +
          " characters, the same for every document of this task</summary><pre class=\"prompt\">" +
          showText(g.p.prefix) + "</pre></details>";
      }
      var ctx = g.ctx;
      var body = Array.isArray(ctx)
        ? ctx.map(function (c, i) { return '<div class="dim">instance ' + i + "</div><pre class=\"prompt\">" + showText(c) + "</pre>"; }).join("")
        : '<pre class="prompt">' + showText(ctx) + "</pre>";
      return '<div class="promptbox">' + who + pre + imagesHtml(g.p, k) + body + "</div>";
    }).join("");
  }
  // the images a document's prompt shows (plans/plan/media.py), as thumbnails in the order the model gets them
  function imagesHtml(p, k) {
    var imgs = p.images ? p.images[k] : null;
    if (!imgs) return "";
    return '<div class="thumbs">' + imgs.map(function (m, i) {
      var title = "image " + i + ": " + m.sha + " " + m.w + "x" + m.h + " " + m.mime + " " + m.size + " bytes";
      if (!m.src) return '<span class="thumb-missing" title="' + esc(title) + '">image ' + i + " " + esc(m.sha) + ": " + esc(m.problem || "not available") + "</span>";
      return '<figure class="thumb"><img src="' + esc(m.src) + '" alt="' + esc(title) + '" title="' + esc(title) +
        '"><figcaption>' + esc(m.sha) + " " + m.w + "x" + m.h + "</figcaption></figure>";
    }).join("") + "</div>";
  }
  function choicesHtml(t, k) {
    var conts = null;
    t.runs.forEach(function (r) { var c = contOf(t, r, k); if (!conts && c) conts = c; });
    var ch = t.choices ? t.choices[k] : null;
    var n = conts ? conts.length : (ch ? ch.length : 0);
    t.runs.forEach(function (r) { var e = entry(t, r); if (e.ll && e.ll[k]) n = Math.max(n, e.ll[k].length); });
    if (!n) return "";
    var gold = goldIndices(t, k);
    var head = "<tr><th></th><th>" + (conts ? "continuation" : "choice") + "</th>" + t.runs.map(function (r) {
      return '<th class="run' + (r % 8) + '">' + esc(runLabel(r)) + " log-likelihood</th>";
    }).join("") + "</tr>";
    var best = {};
    t.runs.forEach(function (r) {
      var e = entry(t, r);
      if (!e.ll || !e.ll[k]) return;
      var b = -1;
      e.ll[k].forEach(function (v, i) { if (typeof v === "number" && (b < 0 || v > e.ll[k][b])) b = i; });
      best[r] = b;
    });
    var rows = [];
    for (var i = 0; i < n; i++) {
      var text = conts ? conts[i] : (ch ? ch[i] : "");
      var cells = t.runs.map(function (r) {
        var e = entry(t, r);
        var v = e.ll && e.ll[k] ? e.ll[k][i] : null;
        var g = e.greedy && e.greedy[k] ? e.greedy[k][i] : null;
        var cls = best[r] === i && n > 1 ? ' class="best"' : "";
        return "<td" + cls + ' data-run="' + r + '">' + num(v, meta.ll_digits) + (g === 1 ? ' <span class="dim" title="every token was the argmax">greedy</span>' : "") + "</td>";
      }).join("");
      var isGold = gold.indexOf(i) >= 0;
      rows.push("<tr" + (isGold ? ' class="gold"' : "") + "><td>" + (isGold ? "★" : i) + '</td><td class="choice">' +
        (text === null || text === undefined ? "" : showInline(text)) + "</td>" + cells + "</tr>");
    }
    return '<table class="choices">' + head + rows.join("") + "</table>";
  }
  function responsesHtml(t, k) {
    var out = [];
    t.runs.forEach(function (r) {
      var e = entry(t, r);
      if (!e.resp) return;
      var resp = e.resp[k];
      var filt = e.filtered[state.filter] ? e.filtered[state.filter][k] : null;
      var fin = e.finish ? e.finish[k] : null;
      var reps = e.repeats && e.repeats[k] ? e.repeats[k] : null;
      var rsn = e.reasoning ? e.reasoning[k] : null;
      var ans = e.answer ? e.answer[k] : null;
      var split = (rsn !== null && rsn !== undefined) || (ans !== null && ans !== undefined && e.reasoning);
      out.push('<div class="resp"><span class="tag run' + (r % 8) + '">' + esc(runLabel(r)) + "</span> " +
        (fin ? '<span class="dim">finish: ' + esc(fin) + "</span>" : "") +
        (resp === null || resp === undefined ? ' <span class="warn">no response</span>' : split ?
          '<details class="reasoning"><summary>reasoning (' + (rsn === null || rsn === undefined ? "none" : (e.reasoning_chars[k] + " chars" + (e.reasoning_tokens && e.reasoning_tokens[k] !== null && e.reasoning_tokens[k] !== undefined ? ", " + e.reasoning_tokens[k] + " tokens" : ""))) + ')</summary><pre class="response">' + showText(rsn || "") + "</pre></details>" +
          '<div>answer:</div><pre class="response answer">' + showText(ans || "") + "</pre>" +
          "<details><summary>whole response</summary><pre class=\"response\">" + showText(resp) + "</pre></details>" :
          '<pre class="response">' + showText(resp) + "</pre>") +
        (filt !== null && filt !== undefined ? '<div>filtered (' + esc(state.filter) + '): <code class="filtered">' + showInline(filt) + "</code></div>" : "") +
        (reps ? "<details><summary>" + reps.length + " samples</summary>" + reps.map(function (x) { return '<pre class="response">' + showText(x) + "</pre>"; }).join("") + "</details>" : "") +
        "</div>");
    });
    return out.join("");
  }
  function docHtml(t, k) {
    var badges = t.runs.map(function (r) {
      var v = score(t, r, k);
      var ok = v === null ? "" : ((hib(t) ? v >= 1 : v <= 0) ? " ok" : " bad");
      return '<span class="score run' + (r % 8) + ok + '" data-run="' + r + '" data-value="' + (v === null ? "" : v) + '">' +
        esc(runLabel(r)) + ": " + esc(state.metric) + " " + num(v) + "</span>";
    }).join(" ");
    var tg = t.target[k];
    return '<article class="doc" data-doc="' + t.ids[k] + '"><h4>doc ' + t.ids[k] + " " + badges + "</h4>" +
      '<div class="target">target: <code>' + (tg === null ? "–" : showInline(String(tg))) + "</code></div>" +
      promptHtml(t, k) + choicesHtml(t, k) + responsesHtml(t, k) + "</article>";
  }

  // ---- controls
  var ui = {};
  function option(value, text, selected) {
    var o = el("option", { value: value }, esc(text));
    if (selected) o.selected = true;
    return o;
  }
  function build() {
    if (!meta.tasks.length) { root.innerHTML = "<p>No samples.</p>"; return; }
    var controls = el("div", { class: "controls" });
    ui.task = el("select", { id: "s-task", "aria-label": "task" });
    meta.tasks.forEach(function (x, i) { ui.task.appendChild(option(i, x.name + " (" + x.n + ")")); });
    ui.filter = el("select", { id: "s-filter", "aria-label": "filter" });
    ui.metric = el("select", { id: "s-metric", "aria-label": "metric" });
    ui.wrong = el("input", { type: "checkbox", id: "s-wrong" });
    ui.flipped = el("input", { type: "checkbox", id: "s-flipped" });
    if (meta.runs.length < 2) ui.flipped.disabled = true;
    ui.search = el("input", { type: "search", id: "s-search", placeholder: "search prompts, targets, responses; doc:ID", size: "36" });
    ui.count = el("span", { id: "s-count", class: "count" });
    function lab(text, input, after) {
      var l = el("label");
      if (after) { l.appendChild(input); l.appendChild(document.createTextNode(" " + text)); }
      else { l.appendChild(document.createTextNode(text + " ")); l.appendChild(input); }
      return l;
    }
    var wrongLabel = lab("wrong only", ui.wrong, true);
    wrongLabel.title = "documents the metric scores below its best value (1, or 0 when lower is better) in at least one run";
    var flippedLabel = lab("flipped between runs", ui.flipped, true);
    flippedLabel.title = "documents whose metric value differs between the runs";
    [lab("Task", ui.task), lab("Filter", ui.filter), lab("Metric", ui.metric), wrongLabel, flippedLabel, ui.search,
      ui.count].forEach(function (x) { controls.appendChild(x); });
    var pager = el("div", { class: "pager" });
    ui.prev = el("button", { id: "s-prev", type: "button" }, "‹ Prev");
    ui.page = el("span", { id: "s-page" });
    ui.next = el("button", { id: "s-next", type: "button" }, "Next ›");
    [ui.prev, ui.page, ui.next].forEach(function (x) { pager.appendChild(x); });
    ui.docs = el("div", { id: "s-docs" });
    root.appendChild(controls);
    root.appendChild(pager);
    root.appendChild(ui.docs);
    ui.task.addEventListener("change", function () { selectTask(+ui.task.value); });
    ui.filter.addEventListener("change", function () { state.filter = ui.filter.value; state.page = 0; render(); });
    ui.metric.addEventListener("change", function () { state.metric = ui.metric.value; state.page = 0; render(); });
    ui.wrong.addEventListener("change", function () { state.wrong = ui.wrong.checked; state.page = 0; render(); });
    ui.flipped.addEventListener("change", function () { state.flipped = ui.flipped.checked; state.page = 0; render(); });
    ui.search.addEventListener("input", function () { state.q = ui.search.value; state.page = 0; render(); });
    ui.prev.addEventListener("click", function () { if (state.page > 0) { state.page--; render(); } });
    ui.next.addEventListener("click", function () { state.page++; render(); });
    selectTask(0);
  }
  function selectTask(i) {
    state.task = i;
    state.page = 0;
    ui.task.value = String(i);
    var t = task(i);
    ui.filter.innerHTML = "";
    t.filters.forEach(function (f, j) { ui.filter.appendChild(option(f, f, j === 0)); });
    state.filter = t.filters.length ? t.filters[0] : "";
    ui.metric.innerHTML = "";
    t.metrics.forEach(function (m, j) { ui.metric.appendChild(option(m.key, m.key + (m.hib ? " ↑" : " ↓"), j === 0)); });
    state.metric = t.metrics.length ? t.metrics[0].key : "";
    render();
  }
  function render() {
    var t = task(state.task);
    var hits = matches(t);
    var pages = Math.max(1, Math.ceil(hits.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * PAGE_SIZE;
    var shown = hits.slice(start, start + PAGE_SIZE);
    ui.count.textContent = hits.length + " of " + t.ids.length + " documents";
    ui.count.setAttribute("data-matches", String(hits.length));
    ui.page.textContent = "page " + (state.page + 1) + " of " + pages;
    ui.prev.disabled = state.page === 0;
    ui.next.disabled = state.page >= pages - 1;
    ui.docs.innerHTML = shown.map(function (k) { return docHtml(t, k); }).join("") ||
      '<p class="dim">No document matches.</p>';
  }
  function fromHash() {
    var m = /^#doc\/(.+)\/(\d+)$/.exec(decodeURIComponent(location.hash));
    if (!m) return;
    var i = meta.tasks.findIndex(function (x) { return x.name === m[1]; });
    if (i < 0) return;
    selectTask(i);
    ui.search.value = "doc:" + m[2];
    state.q = ui.search.value;
    ui.wrong.checked = state.wrong = false;
    ui.flipped.checked = state.flipped = false;
    render();
    root.scrollIntoView();
  }
  build();
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
