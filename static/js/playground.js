// The playground's chat pane (issue 4 item 4).
//
// POSTs a turn to the chat route (JSON, X-CSRFToken from the csrftoken cookie), shows the
// reply as it streams in over the thread's WebSocket (chat.delta frames, re-dispatched by
// live.js as "memory:event"), then refreshes the server-rendered messages and stats and
// loads the turn-context fragment. A transient send's exchange (nothing stored) stays in
// the message list where it was sent, marked "not stored", until the page is reloaded.
// The pending "sending…" bubble of the user's message is dropped as soon as the stored
// message shows in the list (a live update can bring it before the reply), so the
// message is on the page once.
// Message text is only ever set with textContent.
(function () {
  "use strict";

  function start() {
    var root = document.getElementById("live-root");
    var form = document.getElementById("chat-form");
    if (!root || !form) return;
    var chatUrl = root.dataset.chatUrl;
    var input = document.getElementById("chat-input");
    var sendButton = document.getElementById("chat-send");
    var systemPrompt = document.getElementById("chat-system-prompt");
    var messageLimit = document.getElementById("chat-message-limit");
    var verbose = document.getElementById("chat-verbose");
    var transient = document.getElementById("chat-transient");
    var pendingList = document.getElementById("chat-pending");
    var scroller = document.getElementById("chat-scroll");
    var errorBox = document.getElementById("chat-error");
    var stateEl = document.getElementById("chat-state");
    var lastTurn = document.getElementById("last-turn");
    var recallBox = document.getElementById("recall-payload");
    var idleText = stateEl ? stateEl.textContent : "";
    var transientText = "Transient: the model gets no memory tools and nothing is stored · Enter sends";

    var current = null; // the turn this page is sending: {user, assistant, turnId}
    // Transient exchanges shown on this page, each after the stored message that was the
    // newest when it was sent ({after: sequence number, items: [li, li]}). They are not
    // stored, so a refresh of the messages panel drops them: place() puts them back.
    var transients = [];
    var streams = new Map(); // turnId -> bubble, for turns streamed from any page
    // Turns whose stored reply is already shown. Their chat.delta frames can still arrive
    // after the HTTP answer (the WebSocket is a separate path) and must not start a bubble.
    var finished = new Set();

    function csrfToken() {
      var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
      if (match) return decodeURIComponent(match[1]);
      var field = form.querySelector("input[name=csrfmiddlewaretoken]");
      return field ? field.value : "";
    }

    function nearBottom() {
      return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    }
    function toBottom() { scroller.scrollTop = scroller.scrollHeight; }

    function bubble(role, label, text) {
      var li = document.createElement("li");
      li.className = "message message--" + role + " message--pending";
      li.dataset.testid = "pending-" + role;
      var meta = document.createElement("div");
      meta.className = "message__meta";
      var roleEl = document.createElement("span");
      roleEl.className = "role role--" + role;
      roleEl.textContent = role;
      var note = document.createElement("span");
      note.textContent = label;
      meta.append(roleEl, note);
      var content = document.createElement("div");
      content.className = "message__content user-text";
      // Isolated like the server-rendered messages (app.css): an override character in
      // what was typed cannot reorder the page around it.
      content.dir = "auto";
      content.textContent = text;
      li.append(meta, content);
      var stick = nearBottom();
      pendingList.append(li);
      if (stick) toBottom();
      return { li: li, note: note, content: content };
    }
    function drop(b) { if (b && b.li.parentNode) b.li.parentNode.removeChild(b.li); }

    function messageList() { return document.querySelector("#messages > ol.message-list"); }
    function newestSeq() {
      var list = messageList();
      var rows = list ? list.querySelectorAll(":scope > li[data-seq]") : [];
      return rows.length ? Number(rows[rows.length - 1].dataset.seq) : 0;
    }
    // Put each transient exchange back where it happened: before the first stored row
    // newer than the one it followed (or at the end), in the server-rendered list.
    function place() {
      var list = messageList();
      if (!list) return;
      transients.forEach(function (t) {
        var rows = list.querySelectorAll(":scope > li[data-seq]");
        var next = null;
        for (var i = 0; i < rows.length; i++) {
          if (Number(rows[i].dataset.seq) > t.after) { next = rows[i]; break; }
        }
        t.items.forEach(function (li) { list.insertBefore(li, next); });
      });
    }

    function setState(text) { if (stateEl) stateEl.textContent = text; }
    function setBusy(busy) {
      sendButton.disabled = busy;
      form.setAttribute("aria-busy", busy ? "true" : "false");
      setState(busy ? "Waiting for the reply…" : (transient && transient.checked ? transientText : idleText));
    }
    if (transient) transient.addEventListener("change", function () { if (!current) setBusy(false); });

    function clearError() {
      errorBox.hidden = true;
      errorBox.replaceChildren();
    }
    function showError(title, lines) {
      errorBox.replaceChildren();
      var strong = document.createElement("strong");
      strong.textContent = title;
      errorBox.append(strong);
      if (lines && lines.length) {
        var ul = document.createElement("ul");
        lines.forEach(function (line) {
          var li = document.createElement("li");
          li.textContent = line;
          ul.append(li);
        });
        errorBox.append(ul);
      }
      errorBox.hidden = false;
    }

    function refreshPanels() {
      var jobs = [
        htmx.ajax("GET", root.dataset.messagesUrl, { source: "#messages", target: "#messages", swap: "outerHTML" }),
        htmx.ajax("GET", root.dataset.statsUrl, { source: "#stats", target: "#stats", swap: "outerHTML" }),
      ];
      return Promise.all(jobs).catch(function () {});
    }

    function loadTurnContext(turnId) {
      var template = root.dataset.turnUrlTemplate;
      if (!template || turnId === undefined || turnId === null) return;
      var url = template.replace(root.dataset.turnPlaceholder, String(turnId));
      htmx.ajax("GET", url, { source: "#turn-context", target: "#turn-context", swap: "innerHTML" });
    }

    function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

    function describeTurn(body) {
      var parts = [];
      if (body.transient) {
        parts.push("Transient send: nothing stored, no memory tools");
      } else if (body.userMessage && body.assistantMessage) {
        parts.push("Turn stored: #" + body.userMessage.sequenceNumber + " → #" + body.assistantMessage.sequenceNumber);
      }
      if (body.prepare) {
        parts.push("prepare: " + plural(body.prepare.messageCount, "message") +
          (body.prepare.truncated ? ", truncated" : "") + (body.prepare.compacted ? ", with summary" : ""));
      }
      if (body.recallSummary) {
        parts.push("recall: " + plural(body.recallSummary.episodeCount, "episode") + ", " + plural(body.recallSummary.factCount, "fact") +
          (body.recallSummary.hasContext ? "" : ", no context"));
      }
      if (body.compacted) parts.push("compacted");
      lastTurn.textContent = parts.join(" · ");
      lastTurn.hidden = parts.length === 0;
      if (body.recall !== undefined) {
        recallBox.querySelector("pre").textContent = JSON.stringify(body.recall, null, 2);
        recallBox.hidden = false;
      } else {
        recallBox.hidden = true;
      }
    }

    function issueLines(body) {
      if (!body || !Array.isArray(body.issues)) return [];
      return body.issues.map(function (issue) {
        var path = Array.isArray(issue.path) && issue.path.length ? issue.path.join(".") + ": " : "";
        return path + (issue.message || JSON.stringify(issue));
      });
    }

    // What each ModelError kind (memoryapp.llm.port) means, for the failed turn's box.
    var KIND_TEXT = {
      unavailable: "The model could not be reached or refused the request (unavailable): " +
        "Gemini is unreachable from the server, or GEMINI_API_KEY is missing or wrong. Check the network and the key.",
      timeout: "The model did not answer in time (timeout): try again.",
      rate_limited: "The model's rate limit or quota was reached (rate_limited): wait a minute and try again.",
      bad_response: "The model's answer was empty or could not be read (bad_response): try again.",
    };
    function failureLines(body) {
      var lines = [];
      if (body && typeof body.detail === "string" && body.detail) lines.push(body.detail);
      var kind = body && typeof body.kind === "string" ? body.kind : "";
      if (kind) lines.push(KIND_TEXT[kind] || "Kind of failure: " + kind);
      if (!lines.length) lines.push((body && body.error) || "Model call failed");
      return lines;
    }

    // The stored row of the message this page is sending, once a refresh of the list
    // (live update or our own) brings it: the first user row after the newest row when
    // it was sent, with the same text. Then the pending bubble is dropped.
    function mergeStored() {
      if (!current || current.transient || !current.user.li.parentNode) return;
      var list = messageList();
      var rows = list ? list.querySelectorAll(":scope > li[data-seq][data-role=user]") : [];
      for (var i = 0; i < rows.length; i++) {
        if (Number(rows[i].dataset.seq) <= current.after) continue;
        var text = rows[i].querySelector("[data-testid=message-content]");
        if (text && text.textContent.replace(/\r\n/g, "\n") === current.content.replace(/\r\n/g, "\n")) {
          drop(current.user);
          return;
        }
      }
    }

    function noXray() {
      // A transient send is not stored: it has no X-ray, and the panel must not keep
      // showing an earlier turn's (or the "send a message" placeholder) under its line.
      var box = document.getElementById("turn-context");
      var p = document.createElement("p");
      p.className = "muted";
      p.dataset.testid = "transient-no-xray";
      p.textContent = "A transient send is not stored, so it has no X-ray: the line above says what prepare " +
        "and recall gave it. Each stored reply keeps its X-ray (its \u201cX-ray of turn\u201d link).";
      box.replaceChildren(p);
    }

    async function send() {
      if (!chatUrl || current) return;
      var content = input.value;
      if (!content.trim()) {
        showError("Write a message first.");
        input.focus();
        return;
      }
      clearError();
      var payload = { content: content, verbose: verbose.checked };
      var isTransient = Boolean(transient && transient.checked);
      if (isTransient) payload.transient = true;
      // Disabled on an agent's thread: no messageLimit sends the agent's whole window.
      var limit = messageLimit.disabled ? "" : messageLimit.value.trim();
      if (limit !== "") payload.messageLimit = Number(limit);
      if (systemPrompt.value.trim()) payload.systemPrompt = systemPrompt.value;

      current = {
        after: newestSeq(),
        content: content,
        transient: isTransient,
        turnId: null,
        user: bubble("user", isTransient ? "transient · sending…" : "sending…", content),
        assistant: bubble("assistant", "thinking…", ""),
      };
      input.value = "";
      setBusy(true);

      var response;
      var body = null;
      try {
        response = await fetch(chatUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "X-CSRFToken": csrfToken(),
          },
          body: JSON.stringify(payload),
        });
        try { body = await response.json(); } catch (err) { body = null; }
      } catch (err) {
        finish();
        input.value = content;
        showError("Could not reach the server; your message was not sent.", [String(err)]);
        return;
      }

      var turn = current;
      if (body && body.turnId !== undefined && body.turnId !== null) finished.add(body.turnId);
      if (turn.turnId !== null) finished.add(turn.turnId);
      if (response.status === 200 && body && body.transient) {
        // Nothing was stored: the two bubbles stay, marked, and nothing is refreshed.
        showTransient(turn, body);
      } else if (response.status === 201 && body) {
        if (body.turnId !== undefined) streams.delete(body.turnId);
        describeTurn(body);
        loadTurnContext(body.turnId);
        await refreshPanels();
        drop(turn.user);
        drop(turn.assistant);
        toBottom();
      } else if (response.status === 502) {
        var kept = body && body.userMessage ? " Your message is kept as #" + body.userMessage.sequenceNumber + " above." : "";
        showError("The model call failed." + kept, failureLines(body));
        if (isTransient) input.value = content; // nothing was stored: keep the text to resend
        await refreshPanels();
        drop(turn.user);
        drop(turn.assistant);
      } else if (response.status === 400) {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError((body && body.error) || "The request was not valid.", issueLines(body));
      } else if (response.status === 401) {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError("You are logged out. Log in again (in another tab, to keep this text) and resend.");
      } else if (response.status === 413) {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError((body && body.error) || "The message is too large.", issueLines(body));
      } else if (response.status === 403) {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError("Not allowed: your session may have expired or the CSRF check failed. Reload the page and try again.");
      } else if (response.status === 404) {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError("This thread is gone, or you are no longer a member of its project.");
      } else {
        drop(turn.user);
        drop(turn.assistant);
        input.value = content;
        showError("Unexpected answer from the server (HTTP " + response.status + ").",
          body && body.error ? [body.error] : []);
      }
      finish();
    }

    function showTransient(turn, body) {
      [turn.user, turn.assistant].forEach(function (b) {
        b.li.classList.remove("message--pending");
        b.li.classList.add("message--transient");
        b.li.title = "Transient send: not stored, gone when you reload";
        b.note.textContent = "";
        var badge = document.createElement("span");
        badge.className = "badge badge--transient";
        badge.dataset.testid = "transient-badge";
        badge.textContent = "not stored";
        b.note.append(badge);
      });
      turn.user.li.dataset.testid = "transient-user";
      turn.assistant.li.dataset.testid = "transient-assistant";
      turn.assistant.content.textContent = body.assistantMessage ? body.assistantMessage.content : "";
      var hint = document.createElement("p");
      hint.className = "message__hint";
      hint.textContent = "Transient: the model saw this, nothing was stored; it is gone when you reload.";
      turn.assistant.li.append(hint);
      transients.push({ after: turn.after, items: [turn.user.li, turn.assistant.li] });
      place();
      describeTurn(body);
      noXray();
      toBottom();
    }

    function finish() {
      if (current && current.turnId !== null) streams.delete(current.turnId);
      current = null;
      setBusy(false);
      input.focus();
    }

    // Streaming: chat.delta pieces go into the bubble of their turn. The first piece of
    // an unknown turn while this page is sending belongs to this page's turn.
    document.addEventListener("memory:event", function (event) {
      var frame = event.detail;
      var data = frame.data || {};
      if (frame.event === "chat.delta") {
        if (finished.has(data.turnId)) return;
        var b = streams.get(data.turnId);
        if (!b) {
          if (current && current.turnId === null) {
            current.turnId = data.turnId;
            if (window.memoryLive && window.memoryLive.own) window.memoryLive.own(data.turnId);
            b = current.assistant;
          } else {
            b = bubble("assistant", "streaming…", "");
          }
          streams.set(data.turnId, b);
        }
        var stick = nearBottom();
        b.li.classList.add("message--streaming");
        b.note.textContent = "streaming…";
        b.content.textContent += typeof data.text === "string" ? data.text : "";
        if (stick) toBottom();
      } else if (frame.event === "chat.done" || frame.event === "chat.error") {
        // Another page's turn: its stored messages arrive with live.js's refresh.
        var other = streams.get(data.turnId);
        if (!(current && current.turnId === data.turnId)) finished.add(data.turnId);
        if (other && !(current && current.turnId === data.turnId)) {
          streams.delete(data.turnId);
          if (frame.event === "chat.error") {
            other.note.textContent = "failed: " + (data.error || "model call failed");
            window.setTimeout(function () { drop(other); }, 4000);
          } else {
            document.addEventListener("memory:refreshed", function () { drop(other); }, { once: true });
          }
        }
      }
    });

    // Keep the newest message in view when the list is re-rendered, unless the reader
    // scrolled up to read older ones.
    var stickOnSwap = true;
    document.body.addEventListener("htmx:beforeSwap", function () { stickOnSwap = nearBottom(); });
    // Panels the server pushed (live.js swaps them without an htmx request).
    document.addEventListener("memory:beforeswap", function () { stickOnSwap = nearBottom(); });
    document.body.addEventListener("htmx:afterSettle", function () { place(); mergeStored(); if (stickOnSwap) toBottom(); });
    document.addEventListener("memory:refreshed", function () { place(); mergeStored(); if (stickOnSwap) toBottom(); });

    // The page's first Tab stop ("Skip to the message input") puts the cursor in the box.
    var skip = document.querySelector("a.skip-link[href='#chat-input']");
    if (skip) skip.addEventListener("click", function (event) { event.preventDefault(); input.focus(); });

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send();
    });
    input.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || event.isComposing || event.shiftKey || event.altKey) return;
      event.preventDefault();
      send();
    });

    toBottom();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
