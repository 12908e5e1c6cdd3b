// Timeline marks: click (or Enter) shows the line below the chart.
(function () {
  document.querySelectorAll(".rd-timeline").forEach(function (fig) {
    var panel = fig.querySelector(".rd-tl-detail");
    fig.querySelectorAll(".tl-mark").forEach(function (m) {
      function show() { panel.textContent = m.getAttribute("data-detail"); panel.hidden = false; }
      m.addEventListener("click", show);
      m.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(); } });
    });
  });
})();
