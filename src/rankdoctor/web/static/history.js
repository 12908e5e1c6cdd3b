// The incident page's resolve form: POST the fix with this server run's token (the guard
// refuses a browser's POST without it), then show what was saved.
(function () {
  "use strict";
  var form = document.getElementById("rd-resolve");
  if (!form) return;
  var status = document.getElementById("rd-resolve-status");
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var headers = { "Content-Type": "application/json" };
    headers[form.dataset.tokenHeader] = form.dataset.token;
    status.textContent = "saving…";
    fetch(form.dataset.url, { method: "POST", headers: headers, body: JSON.stringify({ fix: form.elements.fix.value }) })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        if (!res.ok) { status.textContent = "not saved: " + (res.body.detail || "error"); return; }
        var fix = document.getElementById("rd-fix");
        fix.textContent = res.body.fix;
        fix.classList.remove("muted");
        status.textContent = "saved";
      })
      .catch(function (e) { status.textContent = "not saved: " + e; });
  });
})();
