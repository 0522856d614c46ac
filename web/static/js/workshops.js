// podpath /workshops: the instructor's workshops and the form that creates
// one (POST /api/workshops). On success the page goes to the new workshop.
(function () {
  "use strict";
  const W = window.PodpathWS;
  const T = W.T;
  const $ = (id) => document.getElementById(id);

  // ---- the list ------------------------------------------------------------
  async function loadList() {
    try {
      renderList(await W.api("GET", "/workshops"));
    } catch (e) {
      $("ws-list-error").textContent = e.message;
      $("ws-list-error").hidden = false;
    }
  }

  function renderList(list) {
    list = list || [];
    $("ws-list").hidden = !list.length;
    $("ws-none").hidden = !!list.length;
    // Open and coming workshops first, then by start.
    const rank = { open: 0, preparing: 1, scheduled: 2, ended: 3 };
    list.sort((a, b) => (rank[a.state] ?? 9) - (rank[b.state] ?? 9) ||
      (a.state === "ended" ? new Date(b.startsAt) - new Date(a.startsAt) : new Date(a.startsAt) - new Date(b.startsAt)));
    const rows = list.map((w) => {
      const tr = W.el("tr");
      tr.dataset.workshop = w.id;
      tr.dataset.state = w.state;
      const title = W.el("td", "ws-list-title");
      const a = W.el("a", "", w.title);
      a.href = "/workshops/" + encodeURIComponent(w.id);
      title.appendChild(a);
      const state = W.el("td");
      const pill = W.el("span", "pill ws-state", W.stateText(w.state));
      pill.dataset.state = w.state;
      state.appendChild(pill);
      const start = W.el("td", "ws-list-when", W.when(w.startsAt));
      const seats = W.el("td", "num", (w.learners || 0) + " / " + (w.seats || 0));
      const open = W.el("td");
      const link = W.el("a", "button small secondary", T.wsopenlink);
      link.href = a.href;
      open.appendChild(link);
      tr.append(title, state, start, seats, open);
      return tr;
    });
    $("ws-list-body").replaceChildren(...rows);
  }

  // ---- the create form ---------------------------------------------------------
  async function loadLabs() {
    const box = $("ws-f-labs");
    try {
      const labs = await W.api("GET", "/labs");
      labs.sort((a, b) => a.order - b.order);
      box.replaceChildren(...labs.map((l) => {
        const label = W.el("label", "check");
        const input = document.createElement("input");
        input.type = "checkbox";
        input.name = "labs";
        input.value = l.id;
        label.append(input, " " + l.order + ". " + l.title);
        const meta = W.el("small", "", l.minutes + " " + T.mins);
        label.appendChild(meta);
        return label;
      }));
    } catch (e) {
      box.replaceChildren(W.el("span", "error", e.message));
    }
  }

  // datetime-local wants "YYYY-MM-DDTHH:MM" in local time.
  function localInput(d) {
    const p = (n) => String(n).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes());
  }

  // rfc3339 reads a datetime-local value (local time) as RFC 3339 in UTC.
  function rfc3339(value) {
    const d = new Date(value);
    if (!value || isNaN(d)) return "";
    return d.toISOString().replace(/\.\d{3}Z$/, "Z");
  }

  function defaults() {
    const start = new Date();
    start.setMinutes(0, 0, 0);
    start.setHours(start.getHours() + 1);
    const end = new Date(start.getTime() + 3 * 3600 * 1000);
    $("ws-f-starts").value = localInput(start);
    $("ws-f-ends").value = localInput(end);
    preparePlaceholder();
  }

  function preparePlaceholder() {
    const seats = parseInt($("ws-f-seats").value, 10);
    $("ws-f-prepare").placeholder = seats > 0 ? String(Math.round(seats * 0.7)) : "";
  }
  $("ws-f-seats").addEventListener("input", preparePlaceholder);

  function formError(text) {
    $("ws-create-error").textContent = text || "";
    $("ws-create-error").hidden = !text;
  }

  $("ws-create").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    formError("");
    const labs = Array.from(document.querySelectorAll('#ws-f-labs input[name="labs"]:checked')).map((i) => i.value);
    const startsAt = rfc3339($("ws-f-starts").value);
    const endsAt = rfc3339($("ws-f-ends").value);
    if (!$("ws-f-title").value.trim()) { $("ws-f-title").focus(); return; }
    if (!labs.length) { formError(T.wserrnolabs); return; }
    if (!startsAt || !endsAt || new Date(endsAt) <= new Date(startsAt)) { formError(T.wserrtimes); return; }
    const body = {
      title: $("ws-f-title").value.trim(),
      labs,
      seats: parseInt($("ws-f-seats").value, 10) || 0,
      startsAt,
      endsAt,
      guests: $("ws-f-guests").checked,
    };
    // Left empty, prepare and the lead time take the server's defaults.
    if ($("ws-f-prepare").value !== "") body.prepare = parseInt($("ws-f-prepare").value, 10);
    if ($("ws-f-lead").value !== "") body.prepareLeadMinutes = parseInt($("ws-f-lead").value, 10);
    const btn = $("ws-create-btn");
    const label = btn.textContent;
    btn.disabled = true;
    btn.textContent = T.wscreating;
    try {
      const w = await W.api("POST", "/workshops", body);
      location.href = "/workshops/" + encodeURIComponent(w.id);
    } catch (e) {
      formError(e.message);
      btn.disabled = false;
      btn.textContent = label;
    }
  });

  defaults();
  loadLabs();
  loadList();
})();
