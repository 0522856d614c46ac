// podpath terminals: the one terminal client of every page that shows a
// node's shell (the lab page, and the instructor's watch and take-over
// page). A terminal is xterm.js on one websocket of docs/TERMINAL.md's
// protocol; tabs hold one terminal per node.
//
// What every page gets from here, and why it is in one place:
// - Replies to terminal queries never reach the shell as typing. xterm.js
//   answers queries (device attributes, cursor position, colours) in the
//   output it is shown, as if typed: the replay a reattaching page is sent
//   holds the queries tmux made when it attached, and their answers
//   arrived at the shell as "0;276;0c" at the prompt. Nothing in a node's
//   shell needs the answers (tmux and vim do without), so none is sent.
// - A command from a "run in terminal" button is never lost or corrupted:
//   it waits for the connection and goes as one `run` message, which the
//   server types in when the shell is ready for it (docs/TERMINAL.md,
//   "Run in terminal").
(function () {
  "use strict";

  // A terminal's answer to a query: CSI ... c|R|n|t (device attributes,
  // cursor position, status, window reports) or OSC ... BEL|ST (colours).
  const REPLY = /^\x1b(\[[?>=]?[\d;]*[cRnty]|\][\d;]+[^\x07\x1b]*(\x07|\x1b\\)|\[\??[\d;]*\$y|P[\d>!|][^\x1b]*\x1b\\)$/;

  // How long a run waits for its terminal's connection before it is given
  // up with a message.
  const RUN_WAIT_MS = 20000;

  const THEME = { background: "#0f1720", foreground: "#d8dee9", cursor: "#f0c674" };
  const FONT = '"DejaVu Sans Mono", "Menlo", "Consolas", monospace';

  // create makes one terminal in el. opts:
  //   url()              the websocket URL (asked again at each connect)
  //   input              keys go to the shell (false: read-only, setInput changes it)
  //   sendResize         tell the server the window's size
  //   onStatus(text, cls) connection state for the tab ("", "open"; text, "connecting"|"closed")
  //   onHello(msg)       the server's hello
  //   onClose(ev)        return true when the page handles the close itself
  //   onDropped(text)    a run was given up (no connection)
  //   T                  the page's words (connecting, reconnect, rundropped)
  function create(el, opts) {
    const T = opts.T || {};
    const term = new window.Terminal({
      cursorBlink: opts.input !== false, disableStdin: opts.input === false,
      fontSize: 14, scrollback: 5000, convertEol: false, fontFamily: FONT, theme: THEME,
    });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    const encoder = new TextEncoder();
    let ws = null, opened = false, closedForGood = false, retry = 0, ready = false;
    let input = opts.input !== false;
    let fixedSize = false; // the server told the size to show (a watcher)
    let queue = [];        // runs waiting for the connection

    const t = {
      term,
      el,
      // open shows the terminal and connects; a tab not shown yet is not
      // connected (nothing to draw into).
      open() {
        if (opened) return;
        opened = true;
        term.open(el);
        // Focusing the terminal must not scroll the page: xterm.js's input
        // is a textarea that follows the cursor, and a browser scrolls a
        // focused element into view.
        if (term.textarea) {
          const focus = term.textarea.focus.bind(term.textarea);
          term.textarea.focus = (o) => focus(Object.assign({ preventScroll: true }, o || {}));
        }
        try { fit.fit(); } catch (e) { /* hidden */ }
        connect();
      },
      fit() {
        if (!opened || fixedSize) return;
        try { fit.fit(); } catch (e) { return; }
        if (opts.sendResize && ws && ws.readyState === 1) ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
      },
      focus() { term.focus(); },
      // run types command into the shell once it is connected; interrupt
      // stops a program left running first (Ctrl-C).
      run(command, interrupt) {
        const msg = JSON.stringify({ type: "run", command: String(command).replace(/\n+$/, ""), interrupt: !!interrupt });
        if (ready && ws && ws.readyState === 1) { ws.send(msg); return; }
        const item = { msg, timer: null };
        item.timer = setTimeout(() => drop(item), RUN_WAIT_MS);
        queue.push(item);
        if (!opened) t.open();
      },
      setInput(on) {
        input = !!on;
        term.options.disableStdin = !input;
        term.options.cursorBlink = input;
      },
      // reconnect opens a new websocket now (a watcher changing mode).
      reconnect() {
        const old = ws;
        ws = null;
        ready = false;
        if (old) old.close(1000, "reconnect");
        retry = 0;
        if (opened) connect();
      },
      close() {
        closedForGood = true;
        for (const item of queue) clearTimeout(item.timer);
        queue = [];
        if (ws) ws.close(1000, "page left");
      },
      showReconnect,
    };

    function drop(item) {
      const i = queue.indexOf(item);
      if (i < 0) return;
      queue.splice(i, 1);
      if (opts.onDropped) opts.onDropped(T.rundropped || "the terminal is not connected: the command was not run");
    }

    function flush() {
      const items = queue;
      queue = [];
      for (const item of items) {
        clearTimeout(item.timer);
        ws.send(item.msg);
      }
    }

    function status(text, cls) { if (opts.onStatus) opts.onStatus(text, cls); }

    function connect() {
      if (closedForGood) return;
      const sock = new WebSocket(opts.url(term));
      ws = sock;
      ready = false;
      sock.binaryType = "arraybuffer";
      status(T.connecting, "connecting");
      sock.onopen = () => { if (sock === ws) { retry = 0; status("", "open"); } };
      sock.onmessage = (ev) => {
        if (sock !== ws) return;
        if (typeof ev.data !== "string") {
          term.write(new Uint8Array(ev.data));
          return;
        }
        let msg;
        try { msg = JSON.parse(ev.data); } catch (e) { return; }
        if (msg.type === "hello") {
          if (msg.replayed) term.reset();
          if (msg.cols > 0 && msg.rows > 0 && !opts.sendResize) { fixedSize = true; term.resize(msg.cols, msg.rows); }
          ready = true;
          if (opts.onHello) opts.onHello(msg);
          // The window may have changed size since the URL was made.
          if (opts.sendResize && !fixedSize) t.fit();
          flush();
        }
        if (msg.type === "exit") term.write("\r\n\x1b[33m" + msg.reason + "\x1b[0m\r\n");
        if (msg.type === "error" && (input || !opts.quietReadOnly)) term.write("\r\n\x1b[31m" + msg.message + "\x1b[0m\r\n");
      };
      sock.onclose = (ev) => {
        if (sock !== ws || closedForGood) return;
        ready = false;
        if (opts.onClose && opts.onClose(ev)) return;
        // 4000: the shell exited; 4001: opened elsewhere; 1008, 1009: too much. Wait for a click.
        if (ev.code === 4000 || ev.code === 4001 || ev.code === 1008 || ev.code === 1009) {
          status((ev.reason || "closed") + " — " + T.reconnect, "closed");
          showReconnect();
          return;
        }
        status(T.connecting, "connecting");
        retry = Math.min(retry + 1, 6);
        setTimeout(() => { if (sock === ws) connect(); }, 500 * retry);
      };
    }

    function showReconnect() {
      if (el.querySelector(".reconnect")) return;
      const b = document.createElement("button");
      b.type = "button";
      b.className = "button small reconnect";
      b.textContent = T.reconnect;
      b.addEventListener("click", () => { b.remove(); term.write("\r\n"); connect(); });
      el.appendChild(b);
    }

    term.onData((d) => {
      // A terminal's answer to a query is not the learner's typing.
      if (REPLY.test(d)) return;
      if (input && ready && ws && ws.readyState === 1) ws.send(encoder.encode(d));
    });
    return t;
  }

  // tabs keeps one terminal per node in a tab strip: tabsEl holds the tab
  // buttons, hostEl the terminals, statusEl the active tab's connection
  // state. options(node) are create's options for that node's terminal.
  function tabs(tabsEl, hostEl, statusEl, options) {
    const terms = {};
    let active = null;
    const api = {
      get(node) { return terms[node]; },
      nodes() { return Object.keys(terms); },
      get active() { return active; },
      add(node) {
        if (terms[node]) return terms[node];
        const tab = document.createElement("button");
        tab.type = "button";
        tab.className = "term-tab";
        tab.dataset.node = node;
        tab.setAttribute("role", "tab");
        const dot = document.createElement("span");
        dot.className = "dot";
        tab.appendChild(dot);
        tab.appendChild(document.createTextNode(node));
        tab.addEventListener("click", () => api.select(node));
        tabsEl.appendChild(tab);
        const el = document.createElement("div");
        el.className = "term";
        el.dataset.node = node;
        el.hidden = true;
        hostEl.appendChild(el);
        const o = Object.assign({}, options(node));
        const onStatus = o.onStatus;
        o.onStatus = (text, cls) => {
          tab.dataset.status = cls || text;
          tab.dataset.statusText = text || "";
          if (node === active) statusEl.textContent = text ? node + ": " + text : "";
          if (onStatus) onStatus(text, cls);
        };
        const t = create(el, o);
        t.tab = tab;
        terms[node] = t;
        return t;
      },
      select(node) {
        if (!terms[node]) return null;
        active = node;
        for (const [name, t] of Object.entries(terms)) {
          const on = name === node;
          t.tab.classList.toggle("on", on);
          t.tab.setAttribute("aria-selected", String(on));
          t.el.hidden = !on;
          if (on) {
            t.open();
            const text = t.tab.dataset.statusText || "";
            statusEl.textContent = text ? node + ": " + text : "";
            setTimeout(() => t.fit(), 0);
          }
        }
        return terms[node];
      },
      // removeAll closes and removes every terminal (another session's nodes).
      removeAll() {
        for (const [name, t] of Object.entries(terms)) {
          t.close();
          t.tab.remove();
          t.el.remove();
          delete terms[name];
        }
        active = null;
      },
      closeAll() { for (const t of Object.values(terms)) t.close(); },
    };
    window.addEventListener("resize", () => { if (active && terms[active]) terms[active].fit(); });
    return api;
  }

  window.PodpathTerminal = { create, tabs, REPLY };
})();
