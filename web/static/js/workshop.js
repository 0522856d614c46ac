// podpath /workshops/{id}: the instructor's page. The join code and link,
// the clusters being prepared, the broadcast, extend and end, and the live
// board (learners × steps), kept current by /api/workshops/{id}/events:
// `board` replaces everything, `learner` one row, `workshop` the header,
// `ended` says the workshop is over. Every text from the API goes in as
// textContent: names, check names and observed values are the learners'.
(function () {
  "use strict";
  const W = window.PodpathWS;
  const T = W.T;
  const $ = (id) => document.getElementById(id);
  const root = $("workshop");
  const wsID = root.dataset.workshop;
  const base = "/workshops/" + wsID;

  let workshop = null;          // the latest WorkshopView
  let steps = [];               // the board's columns
  let stepByKey = new Map();
  let stepsSig = "";
  const learners = new Map();   // id -> {row: LearnerRow, at: when it came (ms)}
  const trs = new Map();        // id -> <tr>
  const actions = new Map();    // id -> the row's Watch and Reset (kept across updates: an open Reset stays open)
  let sortBy = "progress";
  let ended = false;
  let es = null;

  // ---- header: title, code, clusters, broadcast ----------------------------
  function renderWorkshop(w) {
    if (!w) return;
    workshop = w;
    $("ws-title").textContent = w.title;
    document.title = w.title + " · podpath";
    const st = $("ws-state");
    st.textContent = W.stateText(w.state);
    st.dataset.state = w.state;
    root.dataset.state = w.state;
    $("ws-when").textContent = W.when(w.startsAt) + " – " + W.when(w.endsAt) +
      " · " + (w.learners || 0) + " / " + (w.seats || 0) + " " + T.wsseats +
      (w.labs && w.labs.length ? " · " + w.labs.map((l) => l.title).join(", ") : "");
    renderCode(w.code || "");
    const url = $("ws-join-url");
    url.textContent = w.joinUrl || "";
    url.href = w.joinUrl || "#";
    renderClusters(w.clusters);
    const msg = w.broadcast && w.broadcast.message;
    $("ws-broadcast-now").hidden = !msg;
    $("ws-broadcast-current").textContent = msg ? msg + (w.broadcast.at ? " (" + W.clock(w.broadcast.at) + ")" : "") : "";
    if (w.state === "ended") setEnded();
  }

  // The code in its groups (ABCDE-FGHJK; an older six-letter code in
  // threes), one letter a box, to read out loud; a screen reader gets the
  // letters one by one.
  function renderCode(code) {
    const box = $("ws-code");
    box.dataset.code = code;
    const letters = code.replace(/-/g, "");
    box.setAttribute("aria-label", T.wsjoincode + ": " + letters.split("").join(" "));
    const groups = code.includes("-") ? code.split("-") : letters.match(/.{1,3}/g) || [];
    const parts = [];
    groups.forEach((g, gi) => {
      g.split("").forEach((ch, i) => {
        const s = W.el("span", "ch", ch);
        if (gi > 0 && i === 0) s.classList.add("gap");
        parts.push(s);
      });
    });
    box.replaceChildren(...parts);
  }

  function renderClusters(c) {
    if (c && workshop && workshop.state === "ended") {
      // Every cluster of the class was deleted: nothing to wait for.
      $("ws-ready").textContent = T.wsclustersended;
      $("ws-ready").dataset.full = "ended";
      $("ws-cluster-detail").textContent = $("ws-eta").textContent = "";
      $("ws-capacity").hidden = true;
      return;
    }
    if (!c) {
      $("ws-ready").textContent = $("ws-cluster-detail").textContent = $("ws-eta").textContent = "";
      $("ws-capacity").hidden = true;
      return;
    }
    // A prepared cluster a learner took counts as ready: it was, in time.
    const ready = Math.min((c.ready || 0) + (c.claimed || 0), c.target || 0);
    $("ws-ready").textContent = W.fill(T.wsready, { ready: ready, target: c.target || 0 });
    $("ws-ready").dataset.full = String(ready >= (c.target || 0));
    $("ws-cluster-detail").textContent = W.fill(T.wsclusterdetail, { creating: c.creating || 0, claimed: c.claimed || 0 });
    const eta = c.etaSeconds || 0;
    $("ws-eta").textContent = eta > 0 && ready < (c.target || 0) ? W.fill(T.wseta, { min: Math.max(1, Math.ceil(eta / 60)) }) : "";
    const note = $("ws-capacity");
    note.textContent = c.capacityNote || "";
    note.hidden = !c.capacityNote;
    note.classList.toggle("warn", c.fits === false);
    note.setAttribute("role", c.fits === false ? "alert" : "note");
  }

  function setEnded() {
    if (ended) return;
    ended = true;
    root.dataset.state = "ended";
    $("ws-ended").hidden = false;
    if (workshop && workshop.state !== "ended") {
      // The stream's "ended" says so before the next workshop view does.
      workshop.state = "ended";
      $("ws-state").textContent = W.stateText("ended");
      $("ws-state").dataset.state = "ended";
      renderClusters(workshop.clusters);
    }
    document.querySelectorAll(".ws-needs-live, #ws-broadcast-msg").forEach((b) => { b.disabled = true; });
    for (const a of actions.values()) a.querySelectorAll("button, select").forEach((b) => { b.disabled = true; });
    if (es) { es.close(); es = null; }
    live("ended");
    // The end lowered every hand and ended every session: the board once
    // more, as it is now.
    W.api("GET", base + "/board").then(setBoard).catch(() => {});
  }

  // ---- the board -------------------------------------------------------------
  function setBoard(b) {
    renderWorkshop(b.workshop);
    setSteps(b.steps || []);
    learners.clear();
    const now = Date.now();
    for (const r of b.learners || []) learners.set(r.id, { row: r, at: now });
    for (const id of Array.from(trs.keys())) if (!learners.has(id)) { trs.get(id).remove(); trs.delete(id); actions.delete(id); }
    for (const id of learners.keys()) renderRow(id);
    sortRows();
  }

  function setSteps(list) {
    const sig = list.map((s) => s.key).join("\n");
    steps = list;
    stepByKey = new Map(list.map((s, i) => [s.key, Object.assign({ index: i }, s)]));
    if (sig === stepsSig) return;
    stepsSig = sig;
    actions.clear(); // their step choices changed
    renderHead();
  }

  function renderHead() {
    const top = W.el("tr");
    const sub = W.el("tr");
    for (const [text, cls] of [[T.wslearner, "learner"], [T.wsprogress, "num"], [T.wscurrent, "current"], [T.wsidle, "idle"]]) {
      const th = W.el("th", cls, text);
      th.rowSpan = 2;
      th.scope = "col";
      top.appendChild(th);
    }
    // One group a lab, one column a step.
    let group = null;
    steps.forEach((s, i) => {
      if (!group || group.dataset.lab !== s.lab) {
        group = W.el("th", "lab-group", s.labTitle || s.lab);
        group.dataset.lab = s.lab;
        group.scope = "colgroup";
        top.appendChild(group);
      }
      group.colSpan = steps.filter((x) => x.lab === s.lab).length;
      const th = W.el("th", "step-col");
      th.scope = "col";
      th.dataset.step = s.key;
      th.title = (s.labTitle || s.lab) + " — " + s.title;
      th.appendChild(W.el("span", "step-num", String(i + 1 - firstIndexOfLab(s.lab))));
      th.appendChild(W.el("span", "step-title", s.title));
      sub.appendChild(th);
    });
    $("ws-board-head").replaceChildren(top, sub);
  }

  function firstIndexOfLab(lab) {
    return steps.findIndex((s) => s.lab === lab);
  }

  function upsert(r) {
    learners.set(r.id, { row: r, at: Date.now() });
    renderRow(r.id);
    sortRows();
  }

  function stepLabel(key) {
    const s = stepByKey.get(key);
    if (!s) return key || "–";
    return (s.index + 1 - firstIndexOfLab(s.lab)) + ". " + s.title;
  }

  function renderRow(id) {
    const { row: r } = learners.get(id);
    const tr = W.el("tr", "learner-row");
    tr.dataset.learner = r.id;
    tr.classList.toggle("stuck", !!r.stuck);
    tr.classList.toggle("hand", !!r.hand);
    tr.classList.toggle("taken-over", !!r.takeover);

    // Who: the name, badges and flags, Watch and Reset.
    const who = W.el("th", "learner");
    who.scope = "row";
    const name = W.el("div", "name");
    name.appendChild(W.el("span", "learner-name", r.name));
    if (r.guest) name.appendChild(W.el("span", "badge guest", T.wsguest));
    who.appendChild(name);
    const flags = W.el("div", "flags");
    if (r.hand) {
      const f = W.el("span", "flag hand", "✋ " + T.wshandup);
      if (r.handAt) f.title = W.clock(r.handAt);
      flags.appendChild(f);
    }
    if (r.stuck) {
      const f = W.el("span", "flag stuck", T.wsstuck);
      f.title = r.stuckWhy || "";
      flags.appendChild(f);
    }
    if (r.takeover) {
      const f = W.el("span", "badge takeover", W.fill(T.wstakenover, { name: r.takeover.instructor }));
      if (r.takeover.since) f.title = W.clock(r.takeover.since);
      flags.appendChild(f);
    }
    if (r.cluster && r.cluster !== "ready") flags.appendChild(W.el("span", "badge cluster", W.fill(T.wscluster, { state: T["wscl_" + r.cluster] || r.cluster })));
    if (flags.childNodes.length) who.appendChild(flags);
    if (r.stuck && r.stuckWhy) who.appendChild(W.el("div", "stuck-why", r.stuckWhy));
    who.appendChild(actionsFor(r));
    tr.appendChild(who);

    tr.appendChild(W.el("td", "num progress", (r.passed || 0) + " / " + (r.total || 0)));

    const cur = W.el("td", "current");
    cur.appendChild(W.el("div", "", r.currentStep ? stepLabel(r.currentStep) : "–"));
    const since = W.el("div", "note since");
    cur.appendChild(since);
    tr.appendChild(cur);
    tr.appendChild(W.el("td", "idle"));

    for (const s of steps) {
      const c = (r.cells || {})[s.key] || { status: "pending" };
      const td = W.el("td", "cell");
      td.dataset.step = s.key;
      td.dataset.status = c.status || "pending";
      if (s.key === r.currentStep) td.classList.add("at");
      if (c.attempts) td.appendChild(W.el("span", "attempts", String(c.attempts)));
      if (c.hints) td.appendChild(W.el("span", "hints", String(c.hints)));
      td.title = cellTitle(s, c);
      tr.appendChild(td);
    }

    const old = trs.get(id);
    if (old) old.replaceWith(tr);
    else $("ws-board-body").appendChild(tr);
    trs.set(id, tr);
    tick(id);
    $("ws-no-learners").hidden = learners.size > 0;
  }

  function cellTitle(s, c) {
    const status = c.status || "pending";
    const lines = [s.title + ": " + (T[status === "failed" ? "failedcheck" : status] || status)];
    if (c.attempts) lines.push(W.plural("wsattempts", c.attempts));
    if (c.hints) lines.push(W.plural("wshints", c.hints));
    if (status === "failed" && c.check) lines.push(W.fill(T.wsfailedon, { check: c.check }));
    if (status === "failed" && c.observed) lines.push(W.fill(T.observed, { text: c.observed }));
    if (c.at) lines.push(W.when(c.at));
    return lines.join("\n");
  }

  // The row's Watch link and Reset form, made once a learner.
  function actionsFor(r) {
    let box = actions.get(r.id);
    if (box) {
      box.querySelector(".watch-link").classList.toggle("disabled", !r.sessionId);
      return box;
    }
    box = W.el("div", "row-actions");
    const watch = W.el("a", "watch-link", T.wswatch);
    watch.href = base + "/learners/" + encodeURIComponent(r.id);
    watch.classList.toggle("disabled", !r.sessionId);
    box.appendChild(watch);

    const det = W.el("details", "reset");
    det.appendChild(W.el("summary", "", T.wsreset));
    const form = W.el("form", "reset-form");
    const label = W.el("label", "", T.wsresetfrom + " ");
    const sel = document.createElement("select");
    sel.name = "fromStep";
    const all = W.el("option", "", T.wsresetall);
    all.value = "";
    sel.appendChild(all);
    let group = null;
    for (const s of steps) {
      if (!group || group.dataset.lab !== s.lab) {
        group = document.createElement("optgroup");
        group.label = s.labTitle || s.lab;
        group.dataset.lab = s.lab;
        sel.appendChild(group);
      }
      const o = W.el("option", "", stepLabel(s.key));
      o.value = s.key;
      group.appendChild(o);
    }
    label.appendChild(sel);
    const go = W.el("button", "button small danger", T.wsreset);
    go.type = "submit";
    const err = W.el("span", "reset-error");
    form.append(label, go, err);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const cur = learners.get(r.id);
      const who = cur ? cur.row.name : r.name;
      const from = sel.value;
      const q = from ? W.fill(T.wsresetconfirm, { name: who, step: (stepByKey.get(from) || { title: from }).title }) : W.fill(T.wsresetallconfirm, { name: who });
      if (!confirm(q)) return;
      go.disabled = true;
      err.textContent = "";
      try {
        const row = await W.api("POST", base + "/learners/" + encodeURIComponent(r.id) + "/reset", { fromStep: from });
        det.open = false;
        if (row && row.id) upsert(row);
      } catch (e) {
        err.textContent = e.message;
      } finally {
        go.disabled = ended;
      }
    });
    det.appendChild(form);
    box.appendChild(det);
    if (ended) box.querySelectorAll("button, select").forEach((b) => { b.disabled = true; });
    actions.set(r.id, box);
    return box;
  }

  // Idle time and time on the step, counted on from when the row came.
  function tick(id) {
    const l = learners.get(id), tr = trs.get(id);
    if (!l || !tr) return;
    const gone = (Date.now() - l.at) / 1000;
    const idle = tr.querySelector("td.idle");
    idle.textContent = l.row.sessionId || l.row.idleSeconds ? W.duration((l.row.idleSeconds || 0) + gone) : "–";
    const since = tr.querySelector(".since");
    since.textContent = l.row.currentStep && l.row.stepSince ? W.fill(T.wsonstep, { time: W.duration((Date.now() - new Date(l.row.stepSince)) / 1000) }) : "";
  }
  setInterval(() => { for (const id of learners.keys()) tick(id); }, 1000);

  // ---- sorting ---------------------------------------------------------------
  function byName(a, b) { return String(a.name).localeCompare(String(b.name), W.lang === "zh" ? "zh-CN" : "en"); }
  function onStepFor(r) { return r.stepSince ? Date.now() - new Date(r.stepSince) : 0; }
  const sorts = {
    progress: (a, b) => (b.passed || 0) - (a.passed || 0) || byName(a, b),
    stuck: (a, b) => (b.stuck ? 1 : 0) - (a.stuck ? 1 : 0) || (b.hand ? 1 : 0) - (a.hand ? 1 : 0) ||
      onStepFor(b) - onStepFor(a) || byName(a, b),
    name: byName,
  };

  function sortRows() {
    const rows = Array.from(learners.values()).map((l) => l.row).sort(sorts[sortBy] || sorts.progress);
    const body = $("ws-board-body");
    for (const r of rows) body.appendChild(trs.get(r.id));
    $("ws-no-learners").hidden = rows.length > 0;
  }
  $("ws-sort").addEventListener("change", () => { sortBy = $("ws-sort").value; sortRows(); });

  // ---- live updates ----------------------------------------------------------
  function live(state) {
    const l = $("ws-live");
    l.dataset.live = state;
    l.textContent = state === "off" ? T.wsoffline : "";
  }

  let retry = 0;
  function connect() {
    if (ended) return;
    es = new EventSource("/api" + base + "/events?lang=" + W.lang);
    live("connecting");
    es.onopen = () => { retry = 0; live("on"); };
    es.addEventListener("board", (ev) => setBoard(JSON.parse(ev.data)));
    es.addEventListener("learner", (ev) => upsert(JSON.parse(ev.data)));
    es.addEventListener("workshop", (ev) => renderWorkshop(JSON.parse(ev.data)));
    es.addEventListener("ended", (ev) => {
      try { const w = JSON.parse(ev.data); if (w && w.id) renderWorkshop(w); } catch (e) { /* no data */ }
      setEnded();
    });
    es.onerror = () => {
      if (!es || es.readyState !== EventSource.CLOSED) { live("connecting"); return; }
      // The browser gave up (the server answered with an error): try again.
      live("off");
      es = null;
      retry = Math.min(retry + 1, 6);
      setTimeout(connect, 1000 * retry * retry);
    };
  }

  // ---- actions ---------------------------------------------------------------
  function say(text, isError) {
    const m = $("ws-action-msg");
    m.textContent = text || "";
    m.hidden = !text;
    m.classList.toggle("error", !!isError);
  }

  async function act(btn, fn) {
    btn.disabled = true;
    say("");
    try { await fn(); } catch (e) { say(e.message, true); } finally { btn.disabled = ended; }
  }

  $("ws-copy-url").addEventListener("click", () => {
    const b = $("ws-copy-url");
    if (!workshop || !workshop.joinUrl) return;
    W.copyText(workshop.joinUrl).then(() => {
      b.textContent = T.copied;
      setTimeout(() => (b.textContent = T.copy), 1200);
    });
  });

  $("ws-rotate").addEventListener("click", (ev) => {
    if (!confirm(T.wsrotateconfirm)) return;
    act(ev.currentTarget, async () => renderWorkshop(await W.api("POST", base + "/code")));
  });

  async function broadcast(message) {
    await W.api("POST", base + "/broadcast", { message });
    if (workshop) {
      workshop.broadcast = message ? { message, at: new Date().toISOString() } : null;
      renderWorkshop(workshop);
    }
  }
  $("ws-broadcast-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("ws-broadcast-send"), async () => {
      await broadcast($("ws-broadcast-msg").value.trim());
      $("ws-broadcast-msg").value = "";
    });
  });
  $("ws-broadcast-clear").addEventListener("click", (ev) => {
    act(ev.currentTarget, async () => { await broadcast(""); $("ws-broadcast-msg").value = ""; });
  });

  $("ws-extend").addEventListener("click", (ev) => {
    act(ev.currentTarget, async () => {
      const r = await W.api("POST", base + "/extend", { minutes: 15 });
      say(W.plural("wsextended", (r && r.extended) || 0));
    });
  });

  $("ws-end").addEventListener("click", (ev) => {
    if (!confirm(T.wsendconfirm)) return;
    act(ev.currentTarget, async () => {
      const w = await W.api("POST", base + "/end");
      renderWorkshop(w);
      setEnded();
    });
  });

  // ---- start: the board once (to show a 404 or 403), then the stream ------
  (async () => {
    try {
      const b = await W.api("GET", base + "/board");
      $("ws-main").hidden = false;
      setBoard(b);
    } catch (e) {
      $("ws-error").textContent = e.message;
      $("ws-error").hidden = false;
      root.dataset.state = "error";
      return;
    }
    connect();
  })();
})();
