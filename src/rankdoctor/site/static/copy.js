// A copy button on every command block.
document.querySelectorAll("pre.cmd").forEach(function (pre) {
  var b = document.createElement("button");
  b.className = "copy"; b.type = "button"; b.textContent = "copy";
  b.addEventListener("click", function () {
    var text = pre.querySelector("code").innerText;
    if (navigator.clipboard) { navigator.clipboard.writeText(text); }
    b.textContent = "copied";
    setTimeout(function () { b.textContent = "copy"; }, 1200);
  });
  pre.appendChild(b);
});
