// Timeline marks: click (or Enter) shows the line below the chart. rdBindTimeline(root) binds
// the marks under root: at load for the page, and again by the watch page (watch.js) for each
// report fragment it swaps in.
window.rdBindTimeline = function (root) {
  root.querySelectorAll(".rd-timeline").forEach(function (fig) {
    var panel = fig.querySelector(".rd-tl-detail");
    fig.querySelectorAll(".tl-mark").forEach(function (m) {
      function show() { panel.textContent = m.getAttribute("data-detail"); panel.hidden = false; }
      m.addEventListener("click", show);
      m.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(); } });
    });
  });
};
window.rdBindTimeline(document);
