// Phalanx dashboard: the few things htmx does not do by itself.
(function () {
  "use strict";
  var flash = function (text, cls) {
    var el = document.getElementById("flash");
    if (!el) return;
    el.textContent = text;
    el.className = cls || "";
  };
  // htmx leaves 4xx/5xx answers unswapped: show what the server said.
  document.body.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var text = xhr.responseText || "";
    try { text = JSON.parse(text).error || text; } catch (_) { /* plain text */ }
    flash(xhr.status + ": " + text, "error");
  });
  // The simulation report: post the chosen file's text, show the answer.
  var input = document.getElementById("sim-file");
  if (input) {
    input.addEventListener("change", function () {
      var file = input.files && input.files[0];
      if (!file) return;
      var csrf = document.querySelector('meta[name="csrf-token"]').content;
      file.text().then(function (text) {
        return fetch("/ui/sim", {
          method: "POST",
          headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf,
                    "X-File-Name": file.name},
          body: text,
          credentials: "same-origin"
        });
      }).then(function (r) { return r.text(); }).then(function (html) {
        document.getElementById("report").innerHTML = html;
      }).catch(function (err) { flash(String(err), "error"); });
    });
  }
})();
