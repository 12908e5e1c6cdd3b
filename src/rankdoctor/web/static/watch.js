// The watched-run page (/watch): each server-sent event carries the report fragment as the
// server rendered it after an update of the watch; it replaces the one shown. EventSource
// reconnects by itself when the connection drops (the server sends the latest again).
(function () {
  var box = document.getElementById("rd-watch");
  if (!box || !window.EventSource) return;
  var shown = parseInt(box.getAttribute("data-version"), 10);

  // report.js binds the timeline's marks once, at load: bind the new fragment's marks the same way
  function bindTimeline(root) {
    root.querySelectorAll(".rd-timeline").forEach(function (fig) {
      var panel = fig.querySelector(".rd-tl-detail");
      fig.querySelectorAll(".tl-mark").forEach(function (m) {
        function show() { panel.textContent = m.getAttribute("data-detail"); panel.hidden = false; }
        m.addEventListener("click", show);
        m.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(); } });
      });
    });
  }

  var source = new EventSource(box.getAttribute("data-events"));
  source.addEventListener("update", function (e) {
    var msg = JSON.parse(e.data);
    if (msg.version === shown) return;
    shown = msg.version;
    box.innerHTML = msg.html;  // rendered by this server from its own templates (autoescaped)
    box.setAttribute("data-version", String(msg.version));
    bindTimeline(box);
  });
})();
