// Small page behaviours shared by every dashboard page. Everything works without it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  document.addEventListener("DOMContentLoaded", function () {
    // The project switcher submits itself when a project is picked.
    document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () {
        if (select.form) select.form.submit();
      });
    });

    // "Copy" next to a one-time secret.
    document.querySelectorAll("[data-copy-target]").forEach(function (button) {
      button.addEventListener("click", function () {
        var input = document.getElementById(button.getAttribute("data-copy-target"));
        if (!input) return;
        input.select();
        var done = function () { button.textContent = "Copied"; };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
        } else {
          document.execCommand("copy");
          done();
        }
      });
    });
    document.querySelectorAll("[data-select-on-focus]").forEach(function (input) {
      input.addEventListener("focus", function () { input.select(); });
    });
  });
})();
