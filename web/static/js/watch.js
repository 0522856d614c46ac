// podpath /workshops/{id}/learners/{learner}: over the learner's shoulder.
// One xterm.js terminal a node, on the workshop's terminal websocket
// (docs/TERMINAL.md's protocol: a JSON hello, then binary output) in watch
// mode, read-only; "Take over" reconnects in control mode, where keys go to
// the learner's shell, until "Stop taking over" or until the learner ends
// it (close code 4002). The page never resizes the learner's terminal.
(function () {
  "use strict";
  // A terminal's answer to a query: CSI ... c|R|n|t (device attributes,
  // cursor position, status, window reports) or OSC ... BEL|ST (colours).
  const TERMINAL_REPLY = /^\x1b(\[[?>=]?[\d;]*[cRnt]|\][\d;]+[^\x07\x1b]*(\x07|\x1b\\))$/;
  const W = window.PodpathWS;
  const T = W.T;
  const $ = (id) => document.getElementById(id);
  const root = $("watch");
  const wsID = root.dataset.workshop;
  const learnerID = root.dataset.learner;
  const base = "/workshops/" + wsID + "/learners/" + learnerID;

  let row = null;            // the learner's LearnerRow
  let sessionID = null;      // the session the terminals belong to
  let mode = "watch";        // or "control"
  let ended = false;
  const terms = {};          // node -> terminal tab
  let activeNode = null;
  const labSteps = {};       // lab id -> Promise of its steps

  function learnerName() { return (row && row.name) || ""; }

  // ---- the learner -------------------------------------------------------------
  async function load() {
    let r;
    try {
      r = await W.api("GET", base);
    } catch (e) {
      $("watch-error").textContent = e.message;
      $("watch-error").hidden = false;
      return false;
    }
    setRow(r);
    setNodes(r.nodes || [], r.sessionId || "");
    return true;
  }

  function setRow(r) {
    row = r;
    $("watch-name").textContent = W.fill(T.wswatching, { name: r.name });
    document.title = r.name + " · podpath";
    renderStep(r);
    const to = $("watch-takenover");
    // Someone else (or this page) typing in the learner's terminal.
    to.hidden = !r.takeover || mode === "control";
    to.textContent = r.takeover ? W.fill(T.wstakenover, { name: r.takeover.instructor }) : "";
    renderMode();
  }

  function renderStep(r) {
    const el = $("watch-step");
    if (!r.currentStep) { el.textContent = ""; return; }
    el.textContent = r.currentStep;
    const [lab, step] = r.currentStep.split("/");
    if (!labSteps[lab]) labSteps[lab] = W.api("GET", "/labs/" + encodeURIComponent(lab)).then((l) => l.steps || []).catch(() => []);
    labSteps[lab].then((list) => {
      if (!row || row.currentStep !== r.currentStep) return;
      const i = list.findIndex((s) => s.id === step);
      if (i >= 0) el.textContent = (i + 1) + ". " + list[i].title;
    });
  }

  function setNodes(nodes, sid) {
    if (sid !== sessionID) {
      // Another session (the learner started the next lab): other nodes.
      closeTerminals();
      sessionID = sid;
    }
    for (const n of nodes) {
      const name = typeof n === "string" ? n : n.alias;
      if (name && !terms[name]) terms[name] = makeTerminal(name);
    }
    const have = Object.keys(terms);
    if (!have.length) {
      status(W.fill(T.wsnocluster, { name: learnerName() }));
    } else if (!activeNode || !terms[activeNode]) {
      selectTab(have[0]);
    }
    renderMode();
  }

  function closeTerminals() {
    for (const [name, t] of Object.entries(terms)) {
      t.close();
      t.tab.remove();
      t.el.remove();
      delete terms[name];
    }
    activeNode = null;
  }

  // ---- mode --------------------------------------------------------------------
  function renderMode() {
    const m = $("watch-mode");
    m.dataset.mode = mode;
    root.dataset.mode = mode;
    m.textContent = mode === "control" ? W.fill(T.wstyping, { name: learnerName() }) : T.wsreadonly;
    const can = !ended && Object.keys(terms).length > 0;
    $("watch-takeover").hidden = mode === "control";
    $("watch-takeover").disabled = !can;
    $("watch-release").hidden = mode !== "control";
  }

  function setMode(m) {
    if (m === "control" && (ended || !Object.keys(terms).length)) return;
    mode = m;
    renderMode();
    for (const t of Object.values(terms)) t.setMode(m);
    if (m === "control" && activeNode) terms[activeNode].term.focus();
  }

  $("watch-takeover").addEventListener("click", () => { notice(""); setMode("control"); });
  $("watch-release").addEventListener("click", () => setMode("watch"));

  function notice(text) {
    $("watch-notice").textContent = text || "";
    $("watch-notice").hidden = !text;
  }

  function status(text) {
    $("term-status").textContent = text || "";
  }

  // ---- terminals -------------------------------------------------------------
  function selectTab(node) {
    activeNode = node;
    for (const [name, t] of Object.entries(terms)) {
      const on = name === node;
      t.tab.classList.toggle("on", on);
      t.tab.setAttribute("aria-selected", on);
      t.el.hidden = !on;
      if (on) { t.open(); setTimeout(() => t.fit(), 0); }
    }
  }

  function makeTerminal(node) {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.className = "term-tab";
    tab.dataset.node = node;
    tab.setAttribute("role", "tab");
    tab.appendChild(W.el("span", "dot"));
    tab.appendChild(document.createTextNode(node));
    tab.addEventListener("click", () => selectTab(node));
    $("tabs").appendChild(tab);
    const el = W.el("div", "term");
    el.dataset.node = node;
    el.hidden = true;
    $("term-host").appendChild(el);

    const term = new window.Terminal({
      cursorBlink: false, disableStdin: true, fontSize: 14, scrollback: 5000, convertEol: false,
      fontFamily: '"DejaVu Sans Mono", "Menlo", "Consolas", monospace',
      theme: { background: "#0f1720", foreground: "#d8dee9", cursor: "#f0c674" },
    });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    const encoder = new TextEncoder();
    let ws = null, opened = false, closedForGood = false, retry = 0, fixedSize = false, sockMode = "watch";

    const t = {
      tab, el, term,
      open() {
        if (opened) return;
        opened = true;
        term.open(el);
        fit.fit();
        connect();
      },
      // Fits the terminal to the window, here only: no resize goes to
      // the learner's terminal.
      fit() {
        if (!opened || fixedSize) return;
        try { fit.fit(); } catch (e) { /* hidden */ }
      },
      setMode() {
        term.options.disableStdin = mode !== "control";
        term.options.cursorBlink = mode === "control";
        if (!opened || sockMode === mode) return;
        const old = ws;
        ws = null;
        if (old) old.close(1000, "mode change");
        retry = 0;
        connect();
      },
      close() { closedForGood = true; if (ws) ws.close(1000, "page left"); },
    };

    function tabStatus(s, cls) {
      tab.dataset.status = cls || s;
      if (node === activeNode) status(s ? node + ": " + s : "");
    }

    function connect() {
      if (closedForGood) return;
      const proto = location.protocol === "https:" ? "wss" : "ws";
      sockMode = mode;
      const sock = new WebSocket(proto + "://" + location.host + "/api" + base + "/terminal/" + encodeURIComponent(node) + "?mode=" + sockMode);
      ws = sock;
      sock.binaryType = "arraybuffer";
      tabStatus(T.connecting, "connecting");
      sock.onopen = () => { if (sock === ws) { retry = 0; tabStatus("", "open"); } };
      sock.onmessage = (ev) => {
        if (sock !== ws) return;
        if (typeof ev.data !== "string") { term.write(new Uint8Array(ev.data)); return; }
        let msg;
        try { msg = JSON.parse(ev.data); } catch (e) { return; }
        if (msg.type === "hello") {
          if (msg.replayed) term.reset();
          // Should the server say the learner's terminal size, show it at that size.
          if (msg.cols > 0 && msg.rows > 0) { fixedSize = true; term.resize(msg.cols, msg.rows); }
        }
        if (msg.type === "exit") term.write("\r\n\x1b[33m" + msg.reason + "\x1b[0m\r\n");
        // Watch mode's "read-only" answer to a key is not worth a line each time.
        if (msg.type === "error" && sockMode === "control") term.write("\r\n\x1b[31m" + msg.message + "\x1b[0m\r\n");
      };
      sock.onclose = (ev) => {
        if (sock !== ws || closedForGood) return; // replaced by a reconnect in the other mode
        if (ev.code === 4002) {
          // The learner ended the take-over: back to watching.
          ws = null;
          notice(W.fill(T.wslearnerended, { name: learnerName() }));
          if (mode === "control") setMode("watch");
          else connect();
          return;
        }
        // 4000: the shell exited; 4001: opened elsewhere; 1008, 1009: too much. Wait for a click.
        if (ev.code === 4000 || ev.code === 4001 || ev.code === 1008 || ev.code === 1009) {
          tabStatus((ev.reason || "closed") + " — " + T.reconnect, "closed");
          showReconnect();
          return;
        }
        if (ended) { tabStatus(T.wsended, "closed"); return; }
        tabStatus(T.connecting, "connecting");
        retry = Math.min(retry + 1, 6);
        setTimeout(() => { if (sock === ws) connect(); }, 500 * retry);
      };
    }

    function showReconnect() {
      const b = W.el("button", "button small reconnect", T.reconnect);
      b.type = "button";
      b.addEventListener("click", () => { b.remove(); term.write("\r\n"); connect(); });
      el.appendChild(b);
    }

    term.onData((d) => {
      // xterm.js answers queries in the output it is shown (device
      // attributes, cursor position, colours); the learner's own terminal
      // answered them already, and sent from here they arrive as typing
      // ("0;276;0c" at the prompt). Only keys go to the learner's shell.
      if (TERMINAL_REPLY.test(d)) return;
      if (mode === "control" && sockMode === "control" && ws && ws.readyState === 1) ws.send(encoder.encode(d));
    });
    return t;
  }

  window.addEventListener("resize", () => { if (activeNode && terms[activeNode]) terms[activeNode].fit(); });

  // ---- live: the workshop's events, for this learner's row -----------------------
  let es = null, esRetry = 0;
  function onRow(r) {
    if (String(r.id) !== String(learnerID)) return;
    const before = row;
    setRow(r);
    // A new session, or a cluster that just became ready: ask for the nodes.
    if ((r.sessionId || "") !== (sessionID || "") || (r.cluster === "ready" && (!before || before.cluster !== "ready" || !Object.keys(terms).length))) load();
  }
  function connectEvents() {
    es = new EventSource("/api/workshops/" + wsID + "/events?lang=" + W.lang);
    es.onopen = () => { esRetry = 0; };
    es.addEventListener("board", (ev) => {
      const b = JSON.parse(ev.data);
      const r = (b.learners || []).find((l) => String(l.id) === String(learnerID));
      if (r) onRow(r);
      if (b.workshop && b.workshop.state === "ended") setEnded();
    });
    es.addEventListener("learner", (ev) => onRow(JSON.parse(ev.data)));
    es.addEventListener("workshop", (ev) => { const w = JSON.parse(ev.data); if (w.state === "ended") setEnded(); });
    es.addEventListener("ended", () => setEnded());
    es.onerror = () => {
      if (!es || es.readyState !== EventSource.CLOSED || ended) return;
      es = null;
      esRetry = Math.min(esRetry + 1, 6);
      setTimeout(connectEvents, 1000 * esRetry * esRetry);
    };
  }

  function setEnded() {
    if (ended) return;
    ended = true;
    notice(T.wsended);
    if (es) { es.close(); es = null; }
    if (mode === "control") setMode("watch");
    renderMode();
  }

  // Start: the learner (a 404 or 403 shows here), then the live row. Until
  // the learner has a cluster, ask again now and then: a cluster becoming
  // ready is not one of the events.
  load().then((ok) => {
    if (!ok) return;
    connectEvents();
    setInterval(() => { if (!ended && !Object.keys(terms).length) load(); }, 10000);
  });
})();
