// Offline search over the encyclopedia: words, or a pasted log line. Entries whose
// signatures match the pasted text come first.
(function () {
  var index = window.RANKDOCTOR_INDEX || [];
  var compiled = index.map(function (e) {
    return e.signatures.map(function (s) {
      try { return new RegExp(s.re, s.i ? "i" : ""); } catch (err) { return null; }
    }).filter(Boolean);
  });
  var texts = index.map(function (e) {
    return [(e.id + " " + e.title + " " + e["class"] + " " + e.tags.join(" ") + " " + e.systems.join(" ") + " " + e.summary).toLowerCase(),
            (e.lines || "").toLowerCase()];
  });
  function idf(w) {  // rare words weigh more than words every entry contains
    var df = 0;
    texts.forEach(function (t) { if (t[0].indexOf(w) >= 0 || t[1].indexOf(w) >= 0) { df += 1; } });
    return Math.log(1 + index.length / (1 + df));
  }
  function search(q) {
    var words = (q.toLowerCase().match(/[a-z0-9_]{3,}/g) || []);
    var weights = {};
    words.forEach(function (w) { weights[w] = idf(w); });
    var out = [];
    index.forEach(function (e, i) {
      var matched = compiled[i].some(function (rx) { return q.split(/\r?\n/).some(function (l) { return rx.test(l); }); });
      var hay = texts[i][0], lines = texts[i][1];
      var score = matched ? 100 : 0;
      words.forEach(function (w) {
        if (hay.indexOf(w) < 0 && lines.indexOf(w) < 0) { return; }
        var weight = (e.title.toLowerCase().indexOf(w) >= 0 || e.id.indexOf(w) >= 0) ? 2 : 1;
        score += weights[w] * (weight + (lines.indexOf(w) >= 0 ? 1 : 0));
      });
      if (score > 0) { out.push({ e: e, score: score, matched: matched }); }
    });
    out.sort(function (a, b) { return b.score - a.score || (a.e.id < b.e.id ? -1 : 1); });
    return out.slice(0, 25);
  }
  function show(q) {
    var box = document.getElementById("results");
    var list = document.getElementById("results-list");
    if (!box || !q) { return; }
    var hits = search(q);
    list.innerHTML = "";
    hits.forEach(function (h) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = "entries/" + h.e.id + ".html"; a.textContent = h.e.title;
      li.appendChild(a);
      var why = document.createElement("div"); why.className = "why";
      why.textContent = h.e["class"] + (h.matched ? " — its signature matches the pasted line" : "");
      li.appendChild(why);
      list.appendChild(li);
    });
    document.getElementById("results-title").textContent = hits.length + " result(s)";
    box.hidden = false;
  }
  var params = new URLSearchParams(window.location.search);
  var q = params.get("q");
  var input = document.querySelector("form.search input");
  if (q) { input.value = q; show(q); }
  input.addEventListener("input", function () { show(input.value); });
})();
