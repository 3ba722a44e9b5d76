// The Memory pages (issue 8 item 6): a form with data-confirm asks before it submits
// (deleting a fact, restoring an older one). Listening on the document keeps it working
// for the fragments live.js swaps in.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();
