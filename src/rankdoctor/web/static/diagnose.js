// The diagnose page. Logs are read and filtered here, in the browser: only lines that
// match a signature (plus a little context, launcher summaries, tracebacks and each
// rank's first and last line) are kept, the user sees and edits that selection, and only
// the selection is sent. Original line numbers travel along in `meta`.
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("rd-config").textContent);
  var $ = function (id) { return document.getElementById(id); };
  var files = [];        // {name, bytes, source: File|string}
  var prepared = [];     // {name, bytes, lines, kept: [[n, text, hit]], off: Set, full: [lines]|null, binary}
  var patterns = null;
  var generation = 0;
  var redacted = null;   // {key, files: [{name, byLine: Map(n -> [text, marks])}], replaced} for the current selection
  var redactKey = null;  // the selection a redaction was last asked for

  // -- patterns ---------------------------------------------------------------------
  function compile(list) {
    var out = [];
    list.forEach(function (p) {
      try { out.push(new RegExp(p.regex, p.ignore_case ? "i" : "")); } catch (e) { /* Python-only syntax: the broad keep patterns still catch such lines */ }
    });
    return out;
  }
  function loadPatterns() {
    if (patterns) { return Promise.resolve(patterns); }
    return fetch("/api/signatures").then(function (r) {
      if (!r.ok) { throw new Error("could not load the signatures (" + r.status + ")"); }
      return r.json();
    }).then(function (doc) {
      patterns = {
        hit: compile(doc.signatures).concat(compile(doc.keep)),
        prefixes: doc.rank_prefixes.map(function (s) { return new RegExp(s); }),
        ctx: doc.context,
        skipped: doc.signatures.length + doc.keep.length
      };
      patterns.skipped -= patterns.hit.length;
      return patterns;
    });
  }

  // -- reading ----------------------------------------------------------------------
  var ANSI = /\x1b\[[0-9;?]*[ -\/]*[@-~]/g;
  function Filter(p, keepFull) {
    this.p = p; this.n = 0; this.kept = new Map(); this.before = []; this.after = 0; this.tb = 0;
    this.first = {}; this.last = {}; this.tail = []; this.full = keepFull ? [] : null; this.nul = 0; this.chars = 0;
  }
  Filter.prototype.keep = function (n, text, hit) {
    var had = this.kept.get(n);
    this.kept.set(n, [n, text, hit || (had ? had[2] : false)]);
  };
  Filter.prototype.line = function (raw) {
    var n = ++this.n, c = this.p.ctx;
    if (raw.charCodeAt(raw.length - 1) === 13) { raw = raw.slice(0, -1); }
    if (this.full) { this.full.push(raw); }
    if (n <= 50) { for (var k = 0; k < raw.length; k++) { if (raw.charCodeAt(k) === 0) { this.nul++; } } this.chars += raw.length; }
    var probe = raw.length > 8192 ? raw.slice(0, 8192) : raw;
    probe = probe.indexOf("\x1b") >= 0 ? probe.replace(ANSI, "") : probe;
    var hit = false;
    for (var i = 0; i < this.p.hit.length; i++) { if (this.p.hit[i].test(probe)) { hit = true; break; } }
    for (var j = 0; j < this.p.prefixes.length; j++) {
      var m = this.p.prefixes[j].exec(probe);
      if (m) {
        var key = m[0].trim();
        if (!(key in this.first)) { this.first[key] = n; this.keep(n, raw, false); }
        this.last[key] = [n, raw];
        break;
      }
    }
    if (hit) {
      var self = this;
      this.before.forEach(function (b) { self.keep(b[0], b[1], false); });
      this.before = [];
      this.keep(n, raw, true);
      this.after = c.after;
      if (/Traceback \(most recent call last\)/.test(probe)) { this.tb = c.traceback; }
      else if (this.tb && /(?:Error|Exception)\b/.test(probe)) { this.tb = 0; }
    } else if (this.after > 0 || this.tb > 0 || n <= c.head) {
      this.keep(n, raw, false);
      if (this.after > 0) { this.after--; }
      if (this.tb > 0) { this.tb--; }
    } else {
      this.before.push([n, raw]);
      if (this.before.length > c.before) { this.before.shift(); }
    }
    this.tail.push([n, raw]);
    if (this.tail.length > c.tail) { this.tail.shift(); }
  };
  Filter.prototype.finish = function () {
    var self = this;
    this.tail.forEach(function (t) { self.keep(t[0], t[1], false); });
    Object.keys(this.last).forEach(function (k) { self.keep(self.last[k][0], self.last[k][1], false); });
    var kept = Array.from(this.kept.values()).sort(function (a, b) { return a[0] - b[0]; });
    return { lines: this.n, kept: kept, full: this.full, binary: this.chars > 0 && this.nul > this.chars / 10 };
  };

  function isGzip(blob) {
    return blob.slice(0, 2).arrayBuffer().then(function (b) {
      var u = new Uint8Array(b);
      return u.length === 2 && u[0] === 0x1f && u[1] === 0x8b;
    });
  }
  function textStream(source) {
    if (typeof source === "string") { return Promise.resolve(new Blob([source]).stream().pipeThrough(new TextDecoderStream())); }
    return isGzip(source).then(function (gz) {
      var s = source.stream();
      if (gz) { s = s.pipeThrough(new DecompressionStream("gzip")); }
      return s.pipeThrough(new TextDecoderStream());
    });
  }
  function prepare(f, p) {
    var filter = new Filter(p, f.bytes <= cfg.sendAllLimit);
    var rest = "";
    return textStream(f.source).then(function (stream) {
      var reader = stream.getReader();
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) {
            if (rest) { filter.line(rest); }
            return filter.finish();
          }
          var parts = (rest + r.value).split("\n");
          rest = parts.pop();
          for (var i = 0; i < parts.length; i++) { filter.line(parts[i]); }
          return pump();
        });
      }
      return pump();
    }).then(function (res) {
      res.name = f.name; res.bytes = f.bytes; res.off = new Set();
      return res;
    }).catch(function (err) {
      return { name: f.name, bytes: f.bytes, lines: 0, kept: [], full: null, off: new Set(), error: String(err && err.message || err) };
    });
  }

  // -- showing what will be sent ------------------------------------------------------
  function esc(s) { return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function sendAll() { return $("send-all").checked && !$("send-all").disabled; }
  function redactOn() { return $("redact").checked; }

  // -- redaction: the server redacts the selection (one redactor, the one the tests hold
  // to 0 leaks); the preview shows its answer, and the same answer is what gets sent ------
  function selection() {
    var all = sendAll(), out = [];
    prepared.forEach(function (f, fi) {
      if (f.error || f.binary) { return; }
      var chosen = all ? f.full.map(function (t, i) { return [i + 1, t]; }) : f.kept.filter(function (k) { return !f.off.has(k[0]); });
      if (!chosen.length) { return; }
      out.push({ fi: fi, f: f, name: f.name, numbers: all ? null : chosen.map(function (k) { return k[0]; }), lines: chosen.map(function (k) { return k[1]; }) });
    });
    return out;
  }
  function keyOf(sel) { return JSON.stringify(sel.map(function (s) { return [s.fi, s.name, s.numbers, s.lines.length]; })); }
  function askRedaction(sel) {
    var headers = { "Content-Type": "application/json" };
    headers[cfg.tokenHeader] = cfg.token;
    var body = JSON.stringify({ files: sel.map(function (s) { return { name: s.name, lines: s.lines }; }) });
    return fetch("/api/redact", { method: "POST", body: body, headers: headers }).then(function (r) {
      if (!r.ok) { throw new Error("could not redact the selection (" + r.status + ")"); }
      return r.json();
    }).then(function (doc) {
      var files = [];
      sel.forEach(function (s, i) {
        var byLine = new Map(), d = doc.files[i];
        d.lines.forEach(function (t, j) { byLine.set(s.numbers ? s.numbers[j] : j + 1, [t, d.marks[j]]); });
        files[s.fi] = { name: d.name, lines: d.lines, byLine: byLine };
      });
      return { key: keyOf(sel), files: files, replaced: doc.replaced };
    });
  }
  function refreshRedaction() {
    if (!redactOn()) { redacted = null; redactKey = null; return; }
    var sel = selection(), key = keyOf(sel);
    if (key === redactKey) { return; }
    redactKey = key;
    if (!sel.length) { redacted = null; return; }
    askRedaction(sel).then(function (r) {
      if (r.key !== redactKey) { return; }  // the selection changed meanwhile
      redacted = r; render();
    }).catch(function (err) { status(String(err.message || err), true); });
  }
  function marked(text, marks) {
    var out = "", pos = 0;
    (marks || []).forEach(function (m) {
      out += esc(text.slice(pos, m[0])) + '<mark class="red" title="' + esc(m[2] + ": " + m[3]).replace(/"/g, "&quot;") + '">' + esc(text.slice(m[0], m[1])) + "</mark>";
      pos = m[1];
    });
    return out + esc(text.slice(pos));
  }
  function lineHtml(fi, n, raw, on) {
    var r = on && redactOn() && redacted && redacted.files[fi] && redacted.files[fi].byLine.get(n);
    return r ? marked(r[0], r[1]) : esc(raw);
  }
  function redactNote() {
    if (!redactOn()) { return "Redaction is off: the lines are sent as they are."; }
    if (!redacted || redacted.key !== keyOf(selection())) { return "Redacting the selection…"; }
    var kinds = Object.keys(redacted.replaced);
    if (!kinds.length) { return "Redaction is on: nothing private found in the selection."; }
    return "Redaction is on: replaced " + kinds.map(function (k) { return redacted.replaced[k] + " " + k; }).join(", ") + " (highlighted; hover one for the original).";
  }
  function blocks(kept) {
    var out = [], cur = null;
    kept.forEach(function (k) {
      if (cur && k[0] === cur[cur.length - 1][0] + 1) { cur.push(k); } else { cur = [k]; out.push(cur); }
    });
    return out;
  }
  function kb(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB"; }
  function render() {
    var box = $("preview"), html = [], total = 0, sent = 0, bytes = 0;
    prepared.forEach(function (f, fi) {
      total += f.lines; bytes += f.bytes;
      html.push('<div class="pf" data-file="' + fi + '"><h3>' + esc(f.name) + "</h3>");
      if (f.error || f.binary) {
        html.push('<p class="all-note">' + (f.error ? "could not read: " + esc(f.error) : "not a text log (binary data); it will not be sent") + "</p></div>");
        return;
      }
      if (sendAll()) {
        sent += f.lines;
        html.push('<p class="all-note">all ' + f.lines + " lines (" + kb(f.bytes) + ") will be sent</p></div>");
        return;
      }
      var bl = blocks(f.kept), prev = 0;
      bl.forEach(function (b, bi) {
        var gap = b[0][0] - prev - 1;
        if (gap > 0) { html.push('<div class="gap">⋯ ' + gap + " line" + (gap === 1 ? "" : "s") + " not sent ⋯</div>"); }
        html.push('<div class="blk"><div class="blk-head"><span>lines ' + b[0][0] + (b.length > 1 ? "–" + b[b.length - 1][0] : "") +
          '</span><button type="button" class="rm-block" data-file="' + fi + '" data-block="' + bi + '">remove block</button></div>');
        b.forEach(function (k) {
          var on = !f.off.has(k[0]);
          if (on) { sent++; }
          html.push('<label class="ln' + (k[2] ? " hit" : "") + (on ? "" : " off") + '"><input type="checkbox" data-file="' + fi + '" data-line="' + k[0] + '"' +
            (on ? " checked" : "") + '><span class="no">' + k[0] + "</span><code>" + lineHtml(fi, k[0], k[1], on) + "</code></label>");
        });
        html.push("</div>");
        prev = b[b.length - 1][0];
      });
      if (f.lines > prev) { html.push('<div class="gap">⋯ ' + (f.lines - prev) + " line" + (f.lines - prev === 1 ? "" : "s") + " not sent ⋯</div>"); }
      html.push("</div>");
    });
    box.innerHTML = html.join("");
    refreshRedaction();
    $("redact-note").textContent = redactNote();
    var small = prepared.every(function (f) { return f.full; });
    $("send-all").disabled = !small;
    $("send-all-note").textContent = small ? "(small logs only)" : "(only for logs under " + kb(cfg.sendAllLimit) + ")";
    $("summary").textContent = sent + " of " + total + " lines from " + prepared.length + " file" + (prepared.length === 1 ? "" : "s") + " (" + kb(bytes) + ")" +
      (patterns && patterns.skipped ? " · " + patterns.skipped + " patterns could not run here" : "");
    $("review").hidden = prepared.length === 0;
    $("diagnose").disabled = sent === 0;
    var link = $("review-link");  // the preview is below the button: say what the button sends
    link.hidden = prepared.length === 0;
    link.textContent = (sendAll() ? "sends every line" : "sends " + sent + " of " + total + " lines") + " · review below ↓";
  }

  $("preview").addEventListener("change", function (e) {
    var t = e.target;
    if (!t.matches("input[type=checkbox]")) { return; }
    var f = prepared[+t.dataset.file], n = +t.dataset.line;
    if (t.checked) { f.off.delete(n); } else { f.off.add(n); }
    render();
  });
  $("preview").addEventListener("click", function (e) {
    var t = e.target;
    if (!t.classList.contains("rm-block")) { return; }
    var f = prepared[+t.dataset.file];
    blocks(f.kept)[+t.dataset.block].forEach(function (k) { f.off.add(k[0]); });
    render();
  });
  $("send-all").addEventListener("change", render);
  $("redact").addEventListener("change", render);

  // -- inputs -------------------------------------------------------------------------
  function status(text, error) { var s = $("status"); s.textContent = text || ""; s.className = "status" + (error ? " error" : ""); }
  function allInputs() {
    var list = files.slice();
    var text = $("paste").value;
    if (text.trim()) { list.unshift({ name: "pasted.log", bytes: new Blob([text]).size, source: text }); }
    return list;
  }
  function refresh() {
    var gen = ++generation;
    var inputs = allInputs();
    renderFiles();
    if (!inputs.length) { prepared = []; render(); status(""); return Promise.resolve(); }
    status("reading " + inputs.length + " input" + (inputs.length === 1 ? "" : "s") + "…");
    return loadPatterns().then(function (p) {
      return Promise.all(inputs.map(function (f) { return prepare(f, p); }));
    }).then(function (res) {
      if (gen !== generation) { return; }
      prepared = res; render(); status("");
    }).catch(function (err) { status(String(err.message || err), true); });
  }
  function renderFiles() {
    $("file-list").innerHTML = files.map(function (f, i) {
      return '<li><span class="name">' + esc(f.name) + '</span><span class="muted">' + kb(f.bytes) + '</span><button type="button" data-remove="' + i + '" aria-label="remove">remove</button></li>';
    }).join("");
  }
  function displayName(file, path) {
    var name = path || file.webkitRelativePath || file.name;
    return name.replace(/^\/+/, "").replace(/\.gz$/i, "");
  }
  function addFiles(list) {
    list.forEach(function (x) { files.push({ name: displayName(x.file, x.path), bytes: x.file.size, source: x.file }); });
    refresh();
  }
  $("file-list").addEventListener("click", function (e) {
    var i = e.target.dataset.remove;
    if (i !== undefined) { files.splice(+i, 1); refresh(); }
  });
  $("file-input").addEventListener("change", function (e) {
    addFiles(Array.from(e.target.files).map(function (f) { return { file: f }; }));
    e.target.value = "";
  });
  var drop = $("drop");
  ["dragenter", "dragover"].forEach(function (ev) { drop.addEventListener(ev, function (e) { e.preventDefault(); drop.classList.add("over"); }); });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  function walk(entry) {  // a dropped folder: every file in it, with its path (rank hints)
    if (entry.isFile) {
      return new Promise(function (ok) { entry.file(function (f) { ok([{ file: f, path: entry.fullPath }]); }, function () { ok([]); }); });
    }
    var reader = entry.createReader(), all = [];
    return new Promise(function (ok) {
      (function more() {
        reader.readEntries(function (batch) {
          if (!batch.length) { Promise.all(all.map(walk)).then(function (r) { ok([].concat.apply([], r)); }); return; }
          all = all.concat(batch); more();
        }, function () { ok([]); });
      })();
    });
  }
  drop.addEventListener("drop", function (e) {
    e.preventDefault(); drop.classList.remove("over");
    var items = Array.from(e.dataTransfer.items || []);
    var entries = items.map(function (it) { return it.webkitGetAsEntry && it.webkitGetAsEntry(); }).filter(Boolean);
    if (entries.length) { Promise.all(entries.map(walk)).then(function (r) { addFiles([].concat.apply([], r)); }); }
    else { addFiles(Array.from(e.dataTransfer.files).map(function (f) { return { file: f }; })); }
  });
  var timer = null;
  $("paste").addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refresh, 350); });

  document.querySelectorAll("button.sample").forEach(function (b) {
    b.addEventListener("click", function () {
      status("loading sample " + b.dataset.sample + "…");
      fetch("/api/samples/" + encodeURIComponent(b.dataset.sample)).then(function (r) {
        if (!r.ok) { throw new Error("could not load the sample (" + r.status + ")"); }
        return r.json();
      }).then(function (doc) {
        $("paste").value = "";
        files = doc.files.map(function (f) { return { name: f.name, bytes: new Blob([f.text]).size, source: f.text }; });
        return refresh();
      }).then(function () {
        if (!$("diagnose").disabled) { $("diagnose").focus(); }  // the list is below the button: bring it back into view
      }).catch(function (err) { status(String(err.message || err), true); });
    });
  });

  // -- sending ------------------------------------------------------------------------
  function runsOf(numbers) {
    var runs = [];
    numbers.forEach(function (n) {
      var r = runs[runs.length - 1];
      if (r && r[0] + r[1] === n) { r[1]++; } else { runs.push([n, 1]); }
    });
    return runs;
  }
  function send(sel, red) {
    var form = new FormData(), meta = { files: [] }, size = 0;
    sel.forEach(function (s) {
      var rf = red && red.files[s.fi];
      var name = rf ? rf.name : s.name, lines = rf ? rf.lines : s.lines;
      var blob = new Blob([lines.join("\n") + "\n"], { type: "text/plain" });
      size += blob.size;
      form.append("files", blob, name);
      meta.files.push({ name: name, lines: s.f.lines, bytes: s.f.bytes, runs: s.numbers ? runsOf(s.numbers) : [[1, s.f.lines]] });
    });
    if (size > cfg.maxUploadBytes) { throw new Error("the selection is " + kb(size) + ", over the server's limit of " + kb(cfg.maxUploadBytes) + ": untick some lines"); }
    form.append("meta", JSON.stringify(meta));
    status("diagnosing " + kb(size) + "…");
    var headers = {};
    headers[cfg.tokenHeader] = cfg.token;  // the server refuses a browser's POST without this page's token
    var url = "/api/reports" + ($("hung").checked ? "?hung=true" : "");  // as `rankdoctor diagnose --hung`
    return fetch(url, { method: "POST", body: form, headers: headers }).then(function (r) {
      return r.json().catch(function () { return { detail: "the server answered " + r.status }; }).then(function (doc) {
        if (!r.ok) { throw new Error(doc.detail || ("the server answered " + r.status)); }
        return doc;
      });
    });
  }
  $("diagnose").addEventListener("click", function () {
    var sel = selection();
    if (!sel.length) { status("nothing selected to send", true); return; }
    $("diagnose").disabled = true;
    // what is sent is what the preview shows: the selection, redacted by the server when
    // redaction is on (asked again here, so a change made a moment ago is included)
    var ready = redactOn() ? (redacted && redacted.key === keyOf(sel) ? Promise.resolve(redacted) : askRedaction(sel)) : Promise.resolve(null);
    ready.then(function (red) { return send(sel, red); })
      .then(function (doc) { window.location.href = doc.url; })
      .catch(function (err) { status(String(err.message || err), true); $("diagnose").disabled = false; });
  });

  refresh();
})();
