// Live updates of a thread page (issue 4 item 3).
//
// Opens ws://<host>/ws/threads/<id>/?projectId=<pid> and, on every event of the thread,
// re-fetches the messages and stats fragments with htmx (the server renders them, so
// message content is escaped by Django's templates, never built from strings here).
// Every frame is also re-dispatched as a "memory:event" DOM event for playground.js.
//
// Cheap with many tabs open (issue 10 item 5). The thread page and the playground open
// their socket with ?fragments=1: the server renders the messages and stats panels once
// per burst of events for every such tab and sends them as one "thread.fragments" frame
// (playground.fragments), which is swapped in here, so these tabs refetch nothing after
// an event. Other pages (and everything after a reconnect) refetch with htmx: events are
// coalesced into one refetch per burst (REFRESH_DELAY_MS after the first), and while a
// chat turn streams on the thread (a chat.delta seen, no chat.done yet) nothing is
// refetched at all: the turn's own appends and compactions are picked up by one refresh
// when it ends, so open tabs do not compete with the turn for the server.
(function () {
  "use strict";

  var REFRESH_DELAY_MS = 250;
  // A turn whose chat.done never came (a dropped frame) stops holding refreshes back.
  var TURN_HOLD_MAX_MS = 30000;
  var MAX_BACKOFF_MS = 15000;
  var CODE_FORBIDDEN = 4403;
  // The session ended (logout, expiry, password change): playground.consumers.
  var CODE_SIGNED_OUT = 4401;

  function start() {
    var root = document.getElementById("live-root");
    if (!root || !root.dataset.wsPath || !window.WebSocket) return;
    var statusEl = document.getElementById("live-status");
    var attempt = 0;
    var wanted = { messages: false, stats: false, jobs: false, live: false };
    var timer = null;
    var inFlight = false;
    var turnsStreaming = new Map(); // turnId -> when its first chat.delta came
    var ownTurns = new Set(); // turns this page sent: playground.js refreshes after them
    var signedOut = false;
    // The server sends this page its rendered panels (thread.fragments).
    var pushed = /[?&]fragments=1(&|$)/.test(root.dataset.wsPath);

    function setStatus(state, text) {
      if (!statusEl) return;
      statusEl.dataset.state = state;
      statusEl.textContent = text;
    }

    function turnRunning() {
      var now = Date.now();
      turnsStreaming.forEach(function (since, turnId) {
        if (now - since > TURN_HOLD_MAX_MS) turnsStreaming.delete(turnId);
      });
      return turnsStreaming.size > 0;
    }

    function refreshNow() {
      timer = null;
      if (turnRunning()) return; // chat.done schedules the refresh
      if (inFlight) { schedule({}); return; }
      var jobs = [];
      var messages = document.getElementById("messages");
      // Older pages stay put: only the newest page follows the thread.
      if (wanted.messages && messages && !messages.dataset.before) {
        jobs.push(htmx.ajax("GET", root.dataset.messagesUrl, { source: "#messages", target: "#messages", swap: "outerHTML" }));
      }
      if (wanted.stats && document.getElementById("stats")) {
        jobs.push(htmx.ajax("GET", root.dataset.statsUrl, { source: "#stats", target: "#stats", swap: "outerHTML" }));
      }
      if (wanted.jobs && root.dataset.jobsUrl && document.getElementById("jobs")) {
        jobs.push(htmx.ajax("GET", root.dataset.jobsUrl, { source: "#jobs", target: "#jobs", swap: "outerHTML" }));
      }
      // Other live fragments (the Agents, Memories and dataset pages) name their own URL.
      if (wanted.messages || wanted.live) {
        document.querySelectorAll("[data-live-url][id]").forEach(function (el) {
          var sel = "#" + el.id;
          jobs.push(htmx.ajax("GET", el.dataset.liveUrl, { source: sel, target: sel, swap: "outerHTML" }));
        });
      }
      wanted = { messages: false, stats: false, jobs: false, live: false };
      if (!jobs.length) return;
      inFlight = true;
      Promise.all(jobs).then(done, done);
      function done() {
        inFlight = false;
        document.dispatchEvent(new CustomEvent("memory:refreshed"));
      }
    }

    // Bursts of events (a bulk import, a compaction) collapse into one refresh.
    function schedule(parts) {
      if (parts.messages) wanted.messages = true;
      if (parts.stats) wanted.stats = true;
      if (parts.jobs) wanted.jobs = true;
      if (parts.live) wanted.live = true;
      if (timer === null) timer = window.setTimeout(refreshNow, REFRESH_DELAY_MS);
    }
    window.memoryLive = {
      refresh: function () { schedule({ messages: true, stats: true, jobs: true, live: true }); },
      // The playground marks the turn it sent: its own refresh follows the POST's answer.
      own: function (turnId) { ownTurns.add(turnId); },
    };

    // One panel from a thread.fragments frame, in place of the one on the page. The
    // thread page's paging links push their URL (the server renders them without).
    function swapPanel(id, html) {
      var current = document.getElementById(id);
      if (!current || typeof html !== "string") return;
      if (id === "messages" && root.dataset.pushUrl === "true") {
        var template = document.createElement("template");
        template.innerHTML = html;
        template.content.querySelectorAll("a[hx-get]").forEach(function (a) { a.setAttribute("hx-push-url", "true"); });
        var fresh = template.content.firstElementChild;
        if (!fresh) return;
        html = fresh.outerHTML;
      }
      htmx.swap(current, html, { swapStyle: "outerHTML" });
    }

    function applyPanels(data) {
      if (!data) return;
      document.dispatchEvent(new CustomEvent("memory:beforeswap"));
      var messages = document.getElementById("messages");
      // Older pages stay put: only the newest page follows the thread.
      if (messages && !messages.dataset.before) swapPanel("messages", data.messages);
      swapPanel("stats", data.stats);
      document.dispatchEvent(new CustomEvent("memory:refreshed"));
    }

    function handle(frame) {
      if (!frame || typeof frame.event !== "string") return;
      document.dispatchEvent(new CustomEvent("memory:event", { detail: frame }));
      switch (frame.event) {
        case "thread.fragments":
          applyPanels(frame.data);
          break;
        case "chat.delta":
          if (frame.data && !turnsStreaming.has(frame.data.turnId)) turnsStreaming.set(frame.data.turnId, Date.now());
          break;
        case "chat.done":
        case "chat.error":
          if (frame.data) turnsStreaming.delete(frame.data.turnId);
          if (frame.data && ownTurns.delete(frame.data.turnId)) break;
          if (!pushed) schedule({ messages: true, stats: true });
          break;
        case "message.appended":
        case "thread.compacted":
        case "thread.changed":
          if (!pushed) schedule({ messages: true, stats: true });
          break;
        case "compaction.failed":
          if (!pushed) schedule({ stats: true });
          break;
        case "job.changed":
          schedule({ jobs: true });
          break;
        case "dataset.changed":
          schedule({ live: true });
          break;
        case "thread.deleted":
          setStatus("closed", "this thread was deleted");
          break;
        default:
          break;
      }
    }

    function connect() {
      var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
      var socket = new WebSocket(scheme + window.location.host + root.dataset.wsPath);
      setStatus("connecting", "connecting…");
      socket.addEventListener("open", function () {
        var reconnected = attempt > 0;
        attempt = 0;
        setStatus("open", "live");
        // Catch up on anything that happened while the socket was down.
        if (reconnected) schedule({ messages: true, stats: true, jobs: true, live: true });
      });
      socket.addEventListener("message", function (event) {
        var frame;
        try { frame = JSON.parse(event.data); } catch (err) { return; }
        handle(frame);
      });
      socket.addEventListener("close", function (event) {
        if (event.code === CODE_SIGNED_OUT || signedOut) {
          setStatus("signed-out", "signed out");
          document.body.dispatchEvent(new CustomEvent("memory:signed-out"));
          return;
        }
        if (event.code === CODE_FORBIDDEN) {
          setStatus("denied", "live updates not allowed");
          return;
        }
        attempt += 1;
        var delay = Math.min(MAX_BACKOFF_MS, 500 * Math.pow(2, attempt));
        setStatus("closed", "offline, retrying…");
        window.setTimeout(connect, delay);
      });
    }

    // An htmx refresh answered "signed out" (memoryapp.middleware.HtmxSignedOutMiddleware).
    document.body.addEventListener("memory:signed-out", function () {
      signedOut = true;
      setStatus("signed-out", "signed out");
    });

    connect();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
