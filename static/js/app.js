// Small page behaviours shared by every dashboard page. Everything works without it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // A part of the page refreshed after the session ended gets 401 and
  // "HX-Trigger: memory:signed-out" instead of the login page: say so once, with a link.
  function showSignedOut() {
    if (document.getElementById("signed-out")) return;
    var note = document.createElement("p");
    note.id = "signed-out";
    note.className = "alert alert--warning";
    note.setAttribute("role", "alert");
    note.dataset.testid = "signed-out";
    note.appendChild(document.createTextNode("You are signed out. "));
    var link = document.createElement("a");
    link.href = document.body.dataset.loginUrl + "?next=" +
      encodeURIComponent(window.location.pathname + window.location.search);
    link.textContent = "Log in again";
    note.appendChild(link);
    var main = document.getElementById("main");
    if (main) main.insertBefore(note, main.firstChild);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("memory:signed-out", showSignedOut);
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

  // Long summaries, notes, tool results and prompts ([data-clamp], with an id: one
  // without is left whole) show their first lines and a "Show all" button when they
  // overflow. What the reader opened stays open when htmx re-renders
  // the list (live updates), so the ids of opened blocks are remembered here.
  var expanded = new Set();

  function setExpanded(block, button, open) {
    block.classList.toggle("is-expanded", open);
    block.classList.toggle("is-clamped", !open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.textContent = open ? "Show less" : "Show all";
    if (open) expanded.add(block.id); else expanded.delete(block.id);
  }

  function clamp(block) {
    if (!block.id || block.dataset.clampReady) return;
    block.dataset.clampReady = "true";
    block.classList.add("clamp");
    // Hidden (e.g. in a closed <details>) or short enough: nothing to clamp.
    if (block.clientHeight === 0 || block.scrollHeight <= block.clientHeight + 4) {
      block.classList.remove("clamp");
      return;
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "button button--link clamp-toggle";
    button.setAttribute("aria-controls", block.id);
    button.dataset.testid = "clamp-toggle";
    button.addEventListener("click", function () {
      var open = !block.classList.contains("is-expanded");
      setExpanded(block, button, open);
      // Closing a long block must not leave the reader far below it.
      if (!open && block.getBoundingClientRect().top < 0) block.scrollIntoView({ block: "start" });
    });
    block.insertAdjacentElement("afterend", button);
    setExpanded(block, button, expanded.has(block.id));
  }

  function clampAll(root) {
    var scope = root && root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches("[data-clamp]")) clamp(scope);
    scope.querySelectorAll("[data-clamp]").forEach(clamp);
  }

  // An htmx form marked data-json-errors (the X-ray's Replay) is answered errors as JSON
  // in the API's shape, {"error", "issues"?}; htmx swaps no error answer, so say it in
  // the form's target. A 401 says "signed out" through its HX-Trigger instead.
  function showJsonError(event) {
    var form = event.detail.elt;
    var xhr = event.detail.xhr;
    if (!form || !form.matches || !form.matches("[data-json-errors]") || xhr.status === 401) return;
    var target = document.querySelector(form.getAttribute("hx-target"));
    if (!target) return;
    var text = "The request failed (" + xhr.status + ").";
    try {
      var body = JSON.parse(xhr.responseText);
      var issues = (body.issues || []).map(function (issue) {
        return (issue.path || []).join(".") + ": " + issue.message;
      });
      text = body.error + (issues.length ? ": " + issues.join("; ") : "") + ".";
    } catch (ignored) { /* not JSON: the status says enough */ }
    var note = document.createElement("p");
    note.className = "alert alert--error";
    note.setAttribute("role", "alert");
    note.dataset.testid = "request-error";
    note.textContent = text;
    target.replaceChildren(note);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("htmx:responseError", showJsonError);
    clampAll(document);
    // Content that htmx swaps in (message list refreshes, the turn-context panel).
    if (window.htmx) window.htmx.onLoad(clampAll);
  });
})();
