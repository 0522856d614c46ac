// podpath /workshops/{id}/learners/{learner}: over the learner's shoulder.
// One xterm.js terminal a node, on the workshop's terminal websocket
// (docs/TERMINAL.md's protocol: a JSON hello, then binary output) in watch
// mode, read-only; "Take over" reconnects in control mode, where keys go to
// the learner's shell, until "Stop taking over" or until the learner ends
// it (close code 4002). The page never resizes the learner's terminal.
(function () {
  "use strict";
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
      tabs.removeAll();
      sessionID = sid;
    }
    // The learner's web apps (traffic ports) open for the instructor too.
    const ports = document.getElementById("watch-ports");
    if (ports) {
      ports.hidden = !sid;
      if (sid) ports.href = "/sessions/" + encodeURIComponent(sid) + "/traffic";
    }
    for (const n of nodes) {
      const name = typeof n === "string" ? n : n.alias;
      if (name) tabs.add(name);
    }
    const have = tabs.nodes();
    if (!have.length) {
      status(W.fill(T.wsnocluster, { name: learnerName() }));
    } else if (!tabs.active || !tabs.get(tabs.active)) {
      selectTab(have[0]);
    }
    renderMode();
  }

  // ---- mode --------------------------------------------------------------------
  function renderMode() {
    const m = $("watch-mode");
    m.dataset.mode = mode;
    root.dataset.mode = mode;
    m.textContent = mode === "control" ? W.fill(T.wstyping, { name: learnerName() }) : T.wsreadonly;
    const can = !ended && termCount() > 0;
    $("watch-takeover").hidden = mode === "control";
    $("watch-takeover").disabled = !can;
    $("watch-release").hidden = mode !== "control";
  }

  function setMode(m) {
    if (m === "control" && (ended || !termCount())) return;
    mode = m;
    renderMode();
    // Each terminal connects again in the new mode; keys go out in control only.
    for (const node of tabs.nodes()) {
      const t = tabs.get(node);
      t.setInput(m === "control");
      t.reconnect();
    }
    if (m === "control" && tabs.active) tabs.get(tabs.active).focus();
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
  // The learner's terminal at the learner's size (the server's hello says
  // it): no resize goes to the learner's pty. Replies to terminal queries
  // never leave this page: the learner's own terminal answered them.
  const tabs = window.PodpathTerminal.tabs($("tabs"), $("term-host"), $("term-status"), (node) => ({
    url: () => (location.protocol === "https:" ? "wss" : "ws") + "://" + location.host + "/api" + base + "/terminal/" + encodeURIComponent(node) + "?mode=" + mode,
    input: mode === "control", sendResize: false, quietReadOnly: true, T,
    onClose: (ev) => {
      if (ev.code === 4002) {
        // The learner ended the take-over: back to watching.
        notice(W.fill(T.wslearnerended, { name: learnerName() }));
        if (mode === "control") setMode("watch");
        else tabs.get(node).reconnect();
        return true;
      }
      if (ended && ev.code !== 4000 && ev.code !== 4001) {
        const t = tabs.get(node);
        if (t) { t.tab.dataset.status = "closed"; if (tabs.active === node) status(node + ": " + T.wsended); }
        return true;
      }
      return false;
    },
  }));

  function selectTab(node) { tabs.select(node); }
  function termCount() { return tabs.nodes().length; }

  // ---- live: the workshop's events, for this learner's row -----------------------
  let es = null, esRetry = 0;
  function onRow(r) {
    if (String(r.id) !== String(learnerID)) return;
    const before = row;
    setRow(r);
    // A new session, or a cluster that just became ready: ask for the nodes.
    if ((r.sessionId || "") !== (sessionID || "") || (r.cluster === "ready" && (!before || before.cluster !== "ready" || !termCount()))) load();
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
    setInterval(() => { if (!ended && !termCount()) load(); }, 10000);
  });
})();
