// podpath workshop pages: what workshops.js, workshop.js and watch.js
// share. The page's words come as JSON in <script id="i18n">; the API is
// docs/API.md's (errors are {"error": "..."}; cookie-authenticated writes
// carry the X-CSRF-Token header).
(function () {
  "use strict";
  const T = JSON.parse(document.getElementById("i18n").textContent);
  const csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  const lang = document.documentElement.lang === "zh" ? "zh" : "en";

  // api calls /api + path and answers the JSON (null for 204). A failure
  // throws an Error with the API's message and the HTTP status.
  async function api(method, path, body) {
    const opts = { method, headers: { "X-CSRF-Token": csrf, Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch("/api" + path + (path.includes("?") ? "&" : "?") + "lang=" + lang, opts);
    if (res.status === 204) return null;
    const data = await res.json().catch(() => ({ error: res.statusText || String(res.status) }));
    if (!res.ok) {
      const err = new Error((data && data.error) || res.statusText);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  // fill puts values into a text's {names}.
  function fill(text, values) {
    return String(text).replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
  }

  // plural fills the text for a count n ({n}), in its singular form
  // (key + "_one") where the language has one and n is 1.
  function plural(key, n, values) {
    const k = n === 1 && T[key + "_one"] !== undefined ? key + "_one" : key;
    return fill(T[k] || key, Object.assign({ n }, values || {}));
  }

  // duration says a number of seconds the short way: 42 s, 5 min, 1 h 5 min.
  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (h) return h + " " + T.hours + " " + m + " " + T.mins;
    if (m) return m + " " + T.mins;
    return sec + " " + T.secs;
  }

  const locale = lang === "zh" ? "zh-CN" : "en";
  // when is an RFC 3339 time as the reader's local date and time.
  function when(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d)) return "";
    return d.toLocaleString(locale, { dateStyle: "medium", timeStyle: "short" });
  }
  function clock(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d)) return "";
    return d.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
  }

  // el makes an element: el("span", "pill guest", "text"). Text goes in as
  // textContent, never as HTML: names and observed values are the
  // learners' own text.
  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const ta = document.createElement("textarea");
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
    return Promise.resolve();
  }

  // stateText names a workshop's state in the page's language.
  function stateText(state) {
    return T["wsstate" + state] || state || "";
  }

  window.PodpathWS = { T, csrf, lang, api, fill, plural, duration, when, clock, el, copyText, stateText };
})();
