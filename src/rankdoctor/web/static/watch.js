// The watched-run page (/watch): each server-sent event carries the report fragment as the
// server rendered it after an update of the watch; it replaces the one shown. EventSource
// reconnects by itself when the connection drops (the server sends the latest again).
(function () {
  var box = document.getElementById("rd-watch");
  if (!box || !window.EventSource) return;
  var shown = parseInt(box.getAttribute("data-version"), 10);

  var source = new EventSource(box.getAttribute("data-events"));
  source.addEventListener("update", function (e) {
    var msg = JSON.parse(e.data);
    if (msg.version === shown) return;
    shown = msg.version;
    box.innerHTML = msg.html;  // rendered by this server from its own templates (autoescaped)
    box.setAttribute("data-version", String(msg.version));
    window.rdBindTimeline(box);  // report.js, loaded before this script: the new fragment's timeline marks
  });
})();
