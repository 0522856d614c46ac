// podpath lab page: steps, checks, provisioning progress and one terminal
// tab per node. Talks to the JSON API (docs/API.md), server-sent events and
// the terminal websocket (docs/TERMINAL.md).
(function () {
  "use strict";
  const root = document.getElementById("lab");
  const sessionID = root.dataset.session;
  const lang = root.dataset.lang;
  const T = JSON.parse(document.getElementById("i18n").textContent);
  const csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  const $ = (id) => document.getElementById(id);

  let session = null;      // the latest SessionView
  let currentStep = null;  // the step shown
  let checking = false;

  // ---- API ---------------------------------------------------------------
  async function api(method, path, body) {
    const opts = { method, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch("/api" + path + (path.includes("?") ? "&" : "?") + "lang=" + lang, opts);
    if (res.status === 204) return null;
    const data = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) throw new Error(data.error || res.statusText);
    return data;
  }

  // ---- session and provisioning ------------------------------------------
  function setSession(s) {
    session = s;
    root.dataset.state = s.state === "ended" ? "ended" : s.sandbox.state;
    renderStepList();
    renderOverlay();
    if (!currentStep) showStep(s.currentStep || (s.steps[s.steps.length - 1] || {}).id);
    if (s.sandbox.state === "ready") ensureTerminals();
    $("extend-btn").disabled = s.extensions >= s.maxExtensions || s.state !== "active";
    $("extend-btn").hidden = s.endsBy === "class";
    renderWorkshop();
    tick(); // the clock shows at once, not a second later
  }

  async function refresh() {
    setSession(await api("GET", "/sessions/" + sessionID));
  }

  function renderOverlay() {
    const sb = session.sandbox;
    const overlay = $("overlay");
    const show = session.state === "ended" || ["requested", "provisioning", "failed", "deleted", "expiring"].includes(sb.state);
    overlay.hidden = !show;
    if (!show) return;
    $("overlay-actions").hidden = true;
    $("overlay-error").hidden = true;
    $("overlay-text").hidden = $("overlay-results").hidden = true;
    $("overlay-home").hidden = $("stages").hidden = false;
    if (session.state === "ended") {
      renderEnded();
      return;
    }
    if (sb.state === "failed") {
      $("overlay-title").textContent = T.failedTitle;
      $("overlay-error").textContent = sb.error || "";
      $("overlay-error").hidden = false;
      $("overlay-actions").hidden = false;
      $("retry-btn").hidden = false;
    } else {
      $("overlay-title").textContent = T.provisioning;
    }
    $("overlay-queue").hidden = !sb.queuePosition;
    if (sb.queuePosition) $("overlay-queue").textContent = T.queued + " " + sb.queuePosition;
    renderStages(sb.progress || []);
  }

  // An ended session's overlay: its cluster is gone, so no stages. A
  // session the workshop's end ended says the class is over, and what the
  // learner can still do: see their results, and (with an account of their
  // own, not a guest's) take labs as usual.
  function renderEnded() {
    const w = session.workshop;
    const classOver = !!w && w.state === "ended";
    const guest = root.dataset.guest === "true";
    $("overlay-title").textContent = classOver ? T.classended : T.ended;
    $("overlay-text").textContent = classOver ? fill(guest ? T.endedguest : T.endedlearner, { title: w.title || "" }) : "";
    $("overlay-text").hidden = !classOver;
    $("overlay-results").hidden = !classOver;
    $("overlay-home").hidden = classOver && guest; // a guest has no labs left to go back to
    $("overlay-actions").hidden = false;
    $("retry-btn").hidden = true;
    $("overlay-queue").hidden = true;
    $("stages").hidden = true;
  }

  // Stages: the latest event of each stage, in the order they started.
  function renderStages(events) {
    const byStage = new Map();
    for (const e of events) byStage.set(e.stage, e);
    const list = $("stages");
    list.innerHTML = "";
    for (const e of byStage.values()) {
      const li = document.createElement("li");
      li.className = e.failed ? "failed" : e.done ? "done" : "running";
      li.dataset.stage = e.stage;
      li.textContent = e.title;
      const t = document.createElement("span");
      t.className = "t";
      t.textContent = (e.elapsedMs / 1000).toFixed(0) + " s";
      li.appendChild(t);
      list.appendChild(li);
    }
    const last = events[events.length - 1];
    provisionStart = last ? Date.now() - last.elapsedMs : provisionStart;
  }
  let provisionStart = null;
  setInterval(() => {
    if (!session || $("overlay").hidden || !provisionStart || session.sandbox.state !== "provisioning") {
      $("overlay-elapsed").textContent = "";
      return;
    }
    $("overlay-elapsed").textContent = Math.round((Date.now() - provisionStart) / 1000) + " s";
  }, 1000);

  function connectEvents() {
    const es = new EventSource("/api/sessions/" + sessionID + "/events?lang=" + lang);
    es.addEventListener("session", (ev) => setSession(JSON.parse(ev.data)));
    es.addEventListener("progress", (ev) => {
      if (!session) return;
      session.sandbox.progress = (session.sandbox.progress || []).concat([JSON.parse(ev.data)]);
      session.sandbox.queuePosition = 0;
      renderOverlay();
    });
    es.addEventListener("queue", (ev) => {
      if (!session) return;
      session.sandbox.queuePosition = JSON.parse(ev.data).position;
      renderOverlay();
    });
    es.addEventListener("state", () => refresh());
    es.addEventListener("attempt", (ev) => {
      const a = JSON.parse(ev.data);
      if (a.stepId === currentStep && !checking) renderAttempt(a);
      refresh();
    });
    es.addEventListener("expiring", () => showBanner(session && session.endsBy === "class" ? T.classendssoon : T.expiresoon));
    // A workshop's session: the instructor's message, a take-over, the hand.
    es.addEventListener("broadcast", (ev) => {
      const b = JSON.parse(ev.data);
      if (session && session.workshop) { session.workshop.broadcast = b && b.message ? b : null; renderWorkshop(); }
    });
    es.addEventListener("takeover", (ev) => {
      const d = JSON.parse(ev.data);
      if (session && session.workshop) { session.workshop.takeover = d.active ? { instructor: d.instructor, since: d.since } : null; renderWorkshop(); }
    });
    es.addEventListener("hand", (ev) => {
      const d = JSON.parse(ev.data);
      if (session && session.workshop) { session.workshop.hand = !!d.raised; renderWorkshop(); }
    });
    es.addEventListener("ended", () => { refresh(); closeTerminals(); });
  }

  function showBanner(text) {
    const b = $("banner");
    b.textContent = text;
    b.hidden = !text;
  }

  // ---- a workshop's session ---------------------------------------------------
  // SessionView.workshop is set for the sessions of a workshop: its title,
  // the instructor's broadcast, the learner's raised hand and an
  // instructor's take-over of the terminal.
  function renderWorkshop() {
    const w = session && session.workshop;
    $("workshop-bar").hidden = !w;
    if (!w) {
      $("broadcast").hidden = $("takeover-banner").hidden = $("hand-note").hidden = true;
      return;
    }
    const over = session.state !== "active";
    $("workshop-title").textContent = w.title || "";
    renderBroadcast(w.broadcast);
    // A guest's next lab cannot start once the workshop ended.
    $("end-next").hidden = w.state === "ended" && root.dataset.guest === "true";
    // The hand is for help in a running session: gone once it ended.
    $("hand-btn").hidden = over;
    if (over) {
      $("hand-note").hidden = $("takeover-banner").hidden = true;
      return;
    }
    const raised = !!w.hand;
    const hb = $("hand-btn");
    hb.dataset.raised = String(raised);
    hb.setAttribute("aria-pressed", String(raised));
    $("hand-label").textContent = raised ? T.lowerhand : T.askhelp;
    $("hand-note").hidden = !raised;
    const to = w.takeover;
    $("takeover-banner").hidden = !to;
    $("takeover-text").textContent = to ? fill(T.takeoverbanner, { name: to.instructor || "" }) : "";
  }

  // The instructor's broadcast: a bar below the top bar, above the steps
  // and the terminals, seen wherever the learner has scrolled. Hiding it
  // hides this message (remembered in the browser); a new one shows again.
  const broadcastSeen = "podpath-broadcast-hidden-" + sessionID;
  // A message is its text and when it was sent, to the second (the event
  // and the stored copy carry different fractions).
  function broadcastSig(b) { return b && b.message ? Math.floor((Date.parse(b.at) || 0) / 1000) + "\n" + b.message : ""; }
  function renderBroadcast(b) {
    const msg = b && b.message;
    const box = $("broadcast");
    let hidden = "";
    try { hidden = localStorage.getItem(broadcastSeen) || ""; } catch (e) { /* no storage: always shown */ }
    const show = !!msg && broadcastSig(b) !== hidden;
    if (show && (box.hidden || box.dataset.sig !== broadcastSig(b))) {
      // A new message: make it catch the eye once.
      box.classList.remove("fresh");
      void box.offsetWidth;
      box.classList.add("fresh");
    }
    box.dataset.sig = broadcastSig(b);
    if (box.hidden === show) {
      box.hidden = !show;
      window.dispatchEvent(new Event("resize")); // the terminal gains or loses the bar's height
    }
    $("broadcast-text").textContent = msg || "";
    const at = msg && b.at ? new Date(b.at) : null;
    $("broadcast-at").textContent = at && !isNaN(at) ? at.toLocaleTimeString(lang === "zh" ? "zh-CN" : "en", { hour: "2-digit", minute: "2-digit" }) : "";
    if (at && !isNaN(at)) $("broadcast-at").dateTime = b.at;
  }
  $("broadcast-close").addEventListener("click", () => {
    const box = $("broadcast");
    try { localStorage.setItem(broadcastSeen, box.dataset.sig || ""); } catch (e) { /* no storage */ }
    box.hidden = true;
    window.dispatchEvent(new Event("resize"));
  });

  $("hand-btn").addEventListener("click", async () => {
    if (!session || !session.workshop) return;
    const raised = !session.workshop.hand;
    $("hand-btn").disabled = true;
    try {
      await api("POST", "/sessions/" + sessionID + "/hand", { raised });
      session.workshop.hand = raised;
      renderWorkshop();
    } catch (e) { showBanner(e.message); }
    finally { $("hand-btn").disabled = false; }
  });

  $("takeover-end").addEventListener("click", async () => {
    $("takeover-end").disabled = true;
    try {
      await api("POST", "/sessions/" + sessionID + "/takeover/end");
      if (session && session.workshop) { session.workshop.takeover = null; renderWorkshop(); }
    } catch (e) { showBanner(e.message); }
    finally { $("takeover-end").disabled = false; }
  });

  // ---- countdown and extend -----------------------------------------------
  // The countdown is the session's hard end (its lifetime, which Extend
  // moves, or the class's end): it does not move while the learner works.
  // Being away has a deadline of its own (the idle timeout), warned of in a
  // banner of its own only as it nears, and pushed back by anything the
  // learner does on the page: keys in the terminal reach the server
  // themselves; reading and clicking are told to it at most every 30 s.
  let lastInput = Date.now(), lastTouch = Date.now();
  function activity() {
    lastInput = Date.now();
    if (!session || session.state !== "active" || Date.now() - lastTouch < 30000) return;
    lastTouch = Date.now();
    api("POST", "/sessions/" + sessionID + "/touch").catch(() => {});
  }
  for (const ev of ["keydown", "pointerdown", "wheel", "touchstart"]) window.addEventListener(ev, activity, { capture: true, passive: true });

  function clock(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(sec).padStart(2, "0");
  }

  function tick() {
    const idle = $("idle-banner");
    if (!session || session.state !== "active") {
      $("timer").textContent = "–:––";
      idle.hidden = true;
      return;
    }
    const byClass = session.endsBy === "class";
    $("timer-label").textContent = byClass ? T.classends : T.timeleft;
    const left = new Date(session.endsAt) - Date.now();
    $("timer").textContent = clock(left);
    const warn = left < session.warnBeforeSeconds * 1000;
    $("timer").classList.toggle("warn", warn);
    if (warn && $("banner").hidden) showBanner(byClass ? T.classendssoon : T.expiresoon);
    if (session.idleTimeoutSeconds) {
      const idleAt = Math.max(new Date(session.idleDeadline).getTime(), lastInput + session.idleTimeoutSeconds * 1000);
      const idleLeft = idleAt - Date.now();
      const near = idleLeft < session.warnBeforeSeconds * 1000 && idleAt < new Date(session.endsAt).getTime();
      idle.hidden = !near;
      if (near) $("idle-text").textContent = fill(T.idlewarn, { time: clock(idleLeft) });
    } else {
      idle.hidden = true;
    }
  }
  setInterval(tick, 1000);
  $("idle-continue").addEventListener("click", () => { lastTouch = 0; activity(); tick(); });

  $("extend-btn").addEventListener("click", async () => {
    try { setSession(await api("POST", "/sessions/" + sessionID + "/extend")); showBanner(""); }
    catch (e) { showBanner(e.message); }
  });
  $("end-form").addEventListener("submit", (ev) => { if (!confirm(T.endconfirm)) ev.preventDefault(); });
  $("retry-btn").addEventListener("click", async () => {
    try { setSession(await api("POST", "/sessions/" + sessionID + "/retry")); } catch (e) { showBanner(e.message); }
  });

  // ---- steps ---------------------------------------------------------------
  function renderStepList() {
    for (const st of session.steps) {
      const li = document.querySelector('#step-list li[data-step="' + st.id + '"]');
      if (!li) continue;
      li.className = st.status + (st.id === currentStep ? " current" : "");
      li.title = T[st.status === "failed" ? "failed" : st.status] || st.status;
    }
    renderSummary(session.summary);
  }

  // ---- the end of the lab ----------------------------------------------------
  // The server sends a summary once every step is passed or skipped: which
  // ones, the time taken, and the takeaways (which it holds back until then,
  // as they name some answers). The next lab's Start is in the page already.
  function renderSummary(sum) {
    const box = $("lab-end");
    const wasShown = !box.hidden;
    box.hidden = !sum;
    if (!sum) return;
    const total = sum.passed.length + sum.skipped.length;
    $("end-count").textContent = fill(T.endcount, { passed: sum.passed.length, skipped: sum.skipped.length, total });
    $("end-time").textContent = fill(T.endtime, { time: duration(sum.durationMs) });
    const skipped = new Set(sum.skipped.map((s) => s.id));
    const steps = $("end-steps");
    steps.innerHTML = "";
    for (const st of session.steps) {
      const li = document.createElement("li");
      const was = skipped.has(st.id) ? "skipped" : "passed";
      li.className = was;
      li.dataset.step = st.id;
      li.textContent = st.title + " — " + T[was];
      steps.appendChild(li);
    }
    // A Killercoda scenario's finish text, rendered and sanitized by the
    // server as a step's text is.
    const finish = $("end-finish");
    finish.innerHTML = sum.finishHtml || "";
    finish.hidden = !sum.finishHtml;
    $("end-takeaways-title").hidden = !(sum.takeaways || []).length;
    const tk = $("end-takeaways");
    tk.innerHTML = "";
    for (const line of sum.takeaways || []) {
      const li = document.createElement("li");
      li.textContent = line;
      tk.appendChild(li);
    }
    if (!wasShown) box.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
  }

  function duration(ms) {
    const s = Math.round(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (h) return h + " " + T.hours + " " + m + " " + T.mins;
    if (m) return m + " " + T.mins + " " + sec + " " + T.secs;
    return sec + " " + T.secs;
  }

  document.querySelectorAll("#step-list li").forEach((li) => {
    li.querySelector("button").addEventListener("click", () => showStep(li.dataset.step));
  });

  async function showStep(id) {
    if (!id) return;
    currentStep = id;
    const v = await api("GET", "/sessions/" + sessionID + "/steps/" + id);
    const body = $("step-body");
    body.innerHTML = v.html;
    decorateCode(body);
    const intro = $("intro");
    if (intro) {
      // The introduction belongs to the first step, open until it is tried.
      intro.hidden = !!session && session.steps[0].id !== id;
      intro.open = !v.attempts;
    }
    $("answer-box").hidden = !v.needsAnswer;
    $("answer-label").textContent = v.answerLabel || T.answer;
    $("answer").value = (v.lastAttempt && v.lastAttempt.answer) || "";
    $("skip-btn").hidden = !!v.noSkip;
    document.querySelectorAll(".layer").forEach((el) => el.classList.toggle("on", v.layers.includes(el.dataset.layer)));
    $("results").innerHTML = "";
    if (v.lastAttempt) renderAttempt(v.lastAttempt);
    updateNext(v.status);
    if (session) renderStepList();
  }

  function updateNext(status) {
    const idx = session ? session.steps.findIndex((s) => s.id === currentStep) : -1;
    const hasNext = idx >= 0 && idx < session.steps.length - 1;
    $("next-btn").hidden = !(hasNext && (status === "passed" || status === "skipped"));
  }
  $("next-btn").addEventListener("click", () => {
    const idx = session.steps.findIndex((s) => s.id === currentStep);
    if (idx >= 0 && idx < session.steps.length - 1) showStep(session.steps[idx + 1].id);
  });

  function renderAttempt(a) {
    const ul = $("results");
    ul.innerHTML = "";
    ul.dataset.passed = a.passed;
    if (a.error) {
      const li = document.createElement("li");
      li.className = "result failed";
      li.textContent = a.error;
      ul.appendChild(li);
    }
    for (const r of a.results || []) {
      const li = document.createElement("li");
      li.className = "result " + (r.passed ? "passed" : "failed");
      const name = document.createElement("div");
      name.className = "name";
      name.textContent = (r.passed ? "✓ " : "✗ ") + pick(r.name);
      li.appendChild(name);
      const obs = document.createElement("div");
      obs.className = "observed";
      obs.textContent = fill(T.observed, { text: r.observed });
      li.appendChild(obs);
      if (!r.passed && r.feedback) {
        const fb = document.createElement("div");
        fb.className = "feedback";
        fb.textContent = pick(r.feedback);
        if (session && session.mode === "challenge" && !r.probeError) {
          // In a challenge the learner reads the state first; a hint is
          // there when asked for, behind a closed "Show a hint".
          const d = document.createElement("details");
          d.className = "hint";
          const sum = document.createElement("summary");
          sum.textContent = T.showhint;
          d.append(sum, fb);
          li.appendChild(d);
        } else {
          li.appendChild(fb);
        }
      }
      ul.appendChild(li);
    }
    updateNext(a.passed ? (a.kind === "skip" ? "skipped" : "passed") : "failed");
  }

  function pick(text) {
    if (!text) return "";
    if (typeof text === "string") return text;
    return text[lang] || text.en || "";
  }

  async function attempt(kind) {
    if (checking) return;
    checking = true;
    const btn = kind === "solve" ? $("skip-btn") : $("check-btn");
    const label = btn.textContent;
    btn.textContent = T.checking;
    $("check-btn").disabled = $("skip-btn").disabled = true;
    $("results").innerHTML = "";
    try {
      const body = kind === "check" && !$("answer-box").hidden ? { answer: $("answer").value } : undefined;
      const a = await api("POST", "/sessions/" + sessionID + "/steps/" + currentStep + "/" + kind, body);
      renderAttempt(a);
      await refresh();
    } catch (e) {
      const li = document.createElement("li");
      li.className = "result failed";
      li.textContent = e.message;
      $("results").appendChild(li);
    } finally {
      btn.textContent = label;
      $("check-btn").disabled = $("skip-btn").disabled = false;
      checking = false;
      reveal($("results"));
    }
  }
  // reveal scrolls el into view when it is not: a check's result is what
  // the learner waits for, and it may be below the fold.
  function reveal(el) {
    const r = el.getBoundingClientRect();
    if (r.top >= 0 && r.bottom <= window.innerHeight) return;
    el.scrollIntoView({ block: r.height > window.innerHeight * 0.8 ? "start" : "nearest" });
  }
  $("check-btn").addEventListener("click", () => attempt("check"));
  $("skip-btn").addEventListener("click", () => { if (confirm(T.skipconfirm)) attempt("solve"); });
  $("answer").addEventListener("keydown", (ev) => { if (ev.key === "Enter") attempt("check"); });

  // Code blocks get a "copy" button, and commands the server marked
  // data-run (guided mode) a "run in terminal" button. In challenge mode
  // commands come inside a closed <details class="show-me"> instead.
  function decorateCode(container) {
    container.querySelectorAll("pre").forEach((pre) => {
      const code = pre.querySelector("code");
      if (!code) return;
      const bar = document.createElement("div");
      bar.className = "code-bar";
      const node = pre.dataset.node;
      if (node) {
        const tag = document.createElement("span");
        tag.className = "code-node";
        tag.textContent = node;
        bar.appendChild(tag);
      }
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "code-copy";
      copy.textContent = T.copy;
      copy.addEventListener("click", () => {
        copyText(code.textContent);
        copy.textContent = T.copied;
        setTimeout(() => (copy.textContent = T.copy), 1200);
      });
      bar.appendChild(copy);
      if (pre.dataset.run === "true") {
        const run = document.createElement("button");
        run.type = "button";
        run.className = "code-run";
        run.textContent = "▶ " + T.run;
        run.addEventListener("click", () => runInTerminal(node || tabs.active, code.textContent));
        bar.appendChild(run);
      }
      pre.insertBefore(bar, code);
    });
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text);
      return;
    }
    const ta = document.createElement("textarea");
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
  }

  function runInTerminal(node, text) {
    if (!tabs.get(node)) node = tabs.active;
    const t = tabs.select(node);
    if (!t) return;
    // As Killercoda's "exec interrupt": a program left running (kubectl
    // get pods -w) is stopped first instead of swallowing the command; the
    // server types it once the shell is at its prompt (docs/TERMINAL.md).
    t.run(text, true);
    t.focus();
  }

  // ---- terminals -----------------------------------------------------------
  const tabs = window.PodpathTerminal.tabs($("tabs"), $("term-host"), $("term-status"), (node) => ({
    url: (term) => (location.protocol === "https:" ? "wss" : "ws") + "://" + location.host + "/api/sessions/" + sessionID + "/terminal/" + encodeURIComponent(node) + "?cols=" + term.cols + "&rows=" + term.rows,
    input: true, sendResize: true, T,
    onDropped: (text) => showBanner(text),
  }));

  function ensureTerminals() {
    let nodes = [];
    try { nodes = typeof session.sandbox.nodes === "string" ? JSON.parse(session.sandbox.nodes) : session.sandbox.nodes; } catch (e) { nodes = []; }
    if (!nodes || !nodes.length) return;
    for (const n of nodes) tabs.add(n.alias);
    if (!tabs.active) tabs.select(nodes[0].alias);
  }

  function closeTerminals() { tabs.closeAll(); }

  // Start: the event stream's first event is the whole session.
  connectEvents();
})();
