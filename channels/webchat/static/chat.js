// slashgate web chat. Plain JavaScript, no dependencies, nothing fetched from elsewhere.
// The page never decides anything the contract decides: completion comes from
// GET /v1/complete, the notice before sending from POST /v1/classify, replies from the
// server-sent events of POST /v1/messages. Agent text only ever reaches the DOM as text
// nodes (see renderMarkdown): no HTML from the agent is parsed.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const log = $("log");
  const scroller = $("scroller");
  const welcome = $("welcome");
  const nameInput = $("conversation-name");
  const input = $("input");
  const menu = $("menu");
  const hint = $("hint");
  const notice = $("notice");
  const chips = $("chips");
  const activity = $("activity");
  const stopButton = $("stop");
  const tokenForm = $("token-form");
  const tokenInput = $("token");

  // -- per-browser state ------------------------------------------------------------------

  const KEYS = { conversation: "slashgate.conversation", user: "slashgate.user", token: "slashgate.token" };

  function randomId(prefix) {
    const bytes = new Uint8Array(9);
    crypto.getRandomValues(bytes);
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function stored(key, make) {
    let value = localStorage.getItem(key);
    if (!value) {
      value = make();
      localStorage.setItem(key, value);
    }
    return value;
  }

  let conversation = stored(KEYS.conversation, () => randomId("web-"));
  const user = stored(KEYS.user, () => randomId("browser-"));

  // -- the /v1 API --------------------------------------------------------------------------

  function headers(extra) {
    const all = Object.assign({}, extra);
    const token = localStorage.getItem(KEYS.token);
    if (token) all.Authorization = "Bearer " + token;
    return all;
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function failure(response) {
    let message = response.status + " " + response.statusText;
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) message = body.error.message;
    } catch (_) {
      // not JSON: keep the status line
    }
    if (response.status === 401) askForToken();
    return new ApiError(response.status, message);
  }

  async function getJSON(path, signal) {
    const response = await fetch(path, { headers: headers(), signal });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  async function postJSON(path, body, signal) {
    const response = await fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  function askForToken() {
    if (!tokenForm.hidden) return;
    tokenForm.hidden = false;
    tokenInput.focus();
  }

  tokenForm.addEventListener("submit", (event) => {
    event.preventDefault();
    localStorage.setItem(KEYS.token, tokenInput.value.trim());
    tokenInput.value = "";
    tokenForm.hidden = true;
    input.focus();
    refresh();
    greet();
    suggest();
  });

  // -- safe Markdown: a small subset, built as DOM nodes from text ---------------------------

  const INLINE = new RegExp(
    [
      "(`+)([^`][\\s\\S]*?)\\1(?!`)", // code
      "\\*\\*(\\S(?:[\\s\\S]*?\\S)?)\\*\\*", // bold
      "(?<![\\w*])\\*(\\S(?:[^*]*?\\S)?)\\*(?![\\w*])", // italic *x*
      "(?<![\\w_])_(\\S(?:[^_]*?\\S)?)_(?![\\w_])", // italic _x_
      "\\[([^\\]\\n]+)\\]\\(([^()\\s]+)\\)", // link
      "(https?://[^\\s<>()]+[^\\s<>().,;:!?'\"])", // bare URL
    ].join("|"),
    "g",
  );

  function safeUrl(text) {
    try {
      const url = new URL(text);
      return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
    } catch (_) {
      return null;
    }
  }

  function link(href, label) {
    const a = document.createElement("a");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    a.textContent = label;
    return a;
  }

  function inline(text, parent) {
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      if (m.index > last) parent.append(text.slice(last, m.index));
      last = m.index + m[0].length;
      if (m[1] !== undefined) {
        const code = document.createElement("code");
        code.textContent = m[2];
        parent.append(code);
      } else if (m[3] !== undefined) {
        const strong = document.createElement("strong");
        inline(m[3], strong);
        parent.append(strong);
      } else if (m[4] !== undefined || m[5] !== undefined) {
        const em = document.createElement("em");
        inline(m[4] !== undefined ? m[4] : m[5], em);
        parent.append(em);
      } else if (m[6] !== undefined) {
        const href = safeUrl(m[7]);
        parent.append(href ? link(href, m[6]) : m[0]);
      } else {
        const href = safeUrl(m[8]);
        parent.append(href ? link(href, m[8]) : m[0]);
      }
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  function lines(parent, texts) {
    texts.forEach((text, i) => {
      if (i) parent.append(document.createElement("br"));
      inline(text, parent);
    });
  }

  const BLOCKS = {
    fence: /^\s*```/,
    heading: /^(#{1,6})\s+(.*)$/,
    quote: /^\s*>\s?(.*)$/,
    bullet: /^\s*[-*+]\s+(.*)$/,
    number: /^\s*\d+[.)]\s+(.*)$/,
    check: /^\[([ xX])\]\s+(.*)$/,
  };

  const continues = (line) =>
    /^\s+\S/.test(line) && !BLOCKS.fence.test(line) && !BLOCKS.quote.test(line) &&
    !BLOCKS.bullet.test(line) && !BLOCKS.number.test(line);

  function renderMarkdown(source) {
    const out = document.createDocumentFragment();
    const all = source.split("\n");
    let i = 0;
    while (i < all.length) {
      const line = all[i];
      if (!line.trim()) {
        i++;
        continue;
      }
      if (BLOCKS.fence.test(line)) {
        const body = [];
        i++;
        while (i < all.length && !BLOCKS.fence.test(all[i])) body.push(all[i++]);
        i++; // the closing fence (or the end of a reply still streaming)
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = body.join("\n");
        pre.append(code);
        out.append(pre);
        continue;
      }
      const heading = BLOCKS.heading.exec(line);
      if (heading) {
        const h = document.createElement("h" + Math.min(6, heading[1].length + 2));
        inline(heading[2], h);
        out.append(h);
        i++;
        continue;
      }
      if (BLOCKS.quote.test(line)) {
        const quoted = [];
        while (i < all.length && BLOCKS.quote.test(all[i])) quoted.push(BLOCKS.quote.exec(all[i++])[1]);
        const q = document.createElement("blockquote");
        lines(q, quoted);
        out.append(q);
        continue;
      }
      const kind = BLOCKS.bullet.test(line) ? "bullet" : BLOCKS.number.test(line) ? "number" : null;
      if (kind) {
        const list = document.createElement(kind === "bullet" ? "ul" : "ol");
        while (i < all.length && BLOCKS[kind].test(all[i])) {
          const li = document.createElement("li");
          let item = BLOCKS[kind].exec(all[i++])[1];
          const check = BLOCKS.check.exec(item);
          if (check) {
            li.className = "check";
            li.append(check[1] === " " ? "☐ " : "☑ ");
            item = check[2];
          }
          // Indented lines that start no block of their own go on with the item: its text
          // wrapped in the source (a soft break, as in Markdown).
          while (i < all.length && continues(all[i])) item += " " + all[i++].trim();
          inline(item, li);
          list.append(li);
        }
        out.append(list);
        continue;
      }
      const para = [];
      while (
        i < all.length && all[i].trim() &&
        !BLOCKS.fence.test(all[i]) && !BLOCKS.heading.test(all[i]) && !BLOCKS.quote.test(all[i]) &&
        !BLOCKS.bullet.test(all[i]) && !BLOCKS.number.test(all[i])
      ) para.push(all[i++]);
      const p = document.createElement("p");
      lines(p, para);
      out.append(p);
    }
    return out;
  }

  // -- the transcript -------------------------------------------------------------------------

  function chip(node) {
    const span = document.createElement("span");
    span.className = "chip chip-" + node.kind;
    span.textContent = node.raw;
    span.title = node.kind === "slash_command" ? "command /" + node.name : node.kind + ": " + (node.path || node.name);
    return span;
  }

  // Text with its command and reference nodes as chips (spans are UTF-16, as JS strings are).
  function withChips(parent, text, nodes) {
    parent.textContent = "";
    if (!nodes) {
      parent.textContent = text;
      return;
    }
    for (const node of nodes) parent.append(node.kind === "text" ? node.raw : chip(node));
  }

  function element(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function scrollDown() {
    scroller.scrollTop = scroller.scrollHeight;
  }

  class Turn {
    constructor(text, control) {
      this.text = text;
      this.control = control; // the stop button's /cancel: not counted as work
      this.state = "sending";
      this.markdown = "";
      this.cards = new Map();
      this.el = element("article", "turn");
      this.userEl = element("div", "user");
      this.userEl.textContent = text;
      this.agentEl = element("div", "agent pending");
      this.badge = element("span", "badge", "sending…");
      this.cardsEl = element("div", "cards");
      this.body = element("div", "body");
      this.footer = element("div", "meta");
      this.agentEl.append(this.badge, this.cardsEl, this.body, this.footer);
      this.el.append(this.userEl, this.agentEl);
      log.append(this.el);
      welcome.hidden = true;
      scrollDown();
    }

    setState(state, label) {
      this.state = state;
      this.agentEl.dataset.state = state;
      this.badge.textContent = label || "";
      this.badge.hidden = !label;
      updateActivity();
    }

    accepted(data) {
      const nodes = data.forwarded ? data.forwarded.payload.nodes : null;
      this.nodes = nodes;
      if (nodes) withChips(this.userEl, this.text, nodes);
      const earlier = turns.some((t) => t !== this && !t.control && t.state === "running");
      if (data.forwarded) this.setState(earlier ? "queued" : "running", earlier ? "queued" : "working…");
    }

    delta(text) {
      if (this.state !== "running") this.setState("running", "working…");
      this.markdown += text;
      this.renderSoon();
    }

    renderSoon() {
      if (this.frame) return;
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.body.replaceChildren(renderMarkdown(this.markdown));
        scrollDown();
      });
    }

    card(key, kind) {
      let card = this.cards.get(key);
      if (!card) {
        card = element("div", "card card-" + kind);
        this.cards.set(key, card);
        this.cardsEl.append(card);
      }
      return card;
    }

    event(name, data) {
      if (name === "tool") this.tool(data);
      else if (name === "permission") this.permission(data);
      else if (name === "status") this.status(data);
      else if (name === "plan" && Array.isArray(data.entries)) this.plan(data);
      else this.generic(name, data);
      scrollDown();
    }

    tool(data) {
      const card = this.card("tool:" + data.tool_id, "tool");
      if (data.title) card.dataset.title = data.title;
      const state = data.type === "ToolEnd" ? data.status || "completed" : "running";
      card.dataset.state = state;
      card.replaceChildren(
        element("span", "icon", state === "failed" ? "✖" : state === "completed" ? "✔" : "⚙"),
        element("span", "title", card.dataset.title || data.tool_id),
        element("span", "muted", " " + state),
      );
      const more = data.detail || data.output;
      if (more) {
        const details = element("details");
        details.append(element("summary", "", data.output ? "output" : "detail"), element("pre", "", more));
        card.append(details);
      }
    }

    permission(data) {
      const card = this.card("permission:" + data.request_id, "permission");
      card.replaceChildren(element("div", "title", "Permission needed: " + (data.title || "")));
      const row = element("div", "choices");
      for (const option of data.options || []) {
        const button = element("button", option.kind && option.kind.startsWith("reject") ? "reject" : "allow", option.name);
        button.type = "button";
        button.addEventListener("click", () => this.answer(card, data.request_id, option, row));
        row.append(button);
      }
      card.append(row);
      // Straight to the choice, unless that would interrupt someone typing.
      const first = row.querySelector("button");
      if (first && !input.value) first.focus();
    }

    async answer(card, requestId, option, row) {
      for (const button of row.querySelectorAll("button")) button.disabled = true;
      try {
        await postJSON("/v1/permissions/" + encodeURIComponent(requestId), {
          conversation,
          option: option.option_id,
        });
        row.replaceWith(element("div", "answer", "→ " + option.name));
      } catch (error) {
        row.replaceWith(element("div", "answer error", "Not answered: " + error.message));
      }
      input.focus();
    }

    status(data) {
      const card = this.card("status", "status");
      card.replaceChildren(element("span", "muted", "status: " + data.status + (data.detail ? " — " + data.detail : "")));
    }

    plan(data) {
      const card = this.card("plan", "plan");
      const list = element("ul", "checklist");
      for (const entry of data.entries) {
        const done = entry.status === "completed";
        const mark = done ? "☑ " : entry.status === "in_progress" ? "▶ " : "☐ ";
        list.append(element("li", done ? "done" : "", mark + (entry.content || entry.title || "")));
      }
      card.replaceChildren(element("div", "title", "Plan"), list);
    }

    generic(name, data) {
      const card = this.card("event:" + name, "event");
      const details = element("details");
      details.append(element("summary", "", name), element("pre", "", JSON.stringify(data, null, 2)));
      card.replaceChildren(details);
    }

    final(body) {
      this.showReply(body.reply);
      remember({ text: this.text, nodes: this.nodes || null, reply: body.reply });
      this.done();
    }

    showReply(reply) {
      if (reply === null) {
        this.agentEl.remove(); // addressed to another bot: no answer, as on every channel
        return;
      }
      this.markdown = reply.text;
      this.body.replaceChildren(renderMarkdown(reply.text));
      if (reply.category) {
        this.agentEl.classList.add("failed");
        this.agentEl.dataset.category = reply.category;
        this.footer.textContent = reply.category;
      } else if (reply.stop_reason && reply.stop_reason !== "end_turn") {
        this.footer.textContent = reply.stop_reason;
      }
    }

    static restore(entry) {
      const turn = new Turn(entry.text, false);
      if (entry.nodes) withChips(turn.userEl, entry.text, entry.nodes);
      turn.showReply(entry.reply);
      turn.agentEl.classList.remove("pending");
      turn.setState("done", "");
    }

    fail(message) {
      this.body.replaceChildren(element("p", "", "The request failed: " + message));
      this.agentEl.classList.add("failed");
      this.agentEl.dataset.category = "generic";
      this.done();
    }

    done() {
      this.agentEl.classList.remove("pending");
      for (const row of this.cardsEl.querySelectorAll(".choices")) row.replaceWith(element("div", "answer muted", "(turn over)"));
      this.setState("done", "");
      turns.splice(turns.indexOf(this), 1);
      const next = turns.find((t) => t.state === "queued"); // its turn comes now
      if (next && !this.control) next.setState("running", "working…");
      updateActivity();
      scrollDown();
      refresh(); // dynamic commands (/remember) show in the menu without a reload
    }
  }

  const turns = []; // in flight, oldest first

  // The transcript is kept per conversation in this browser (the last HISTORY turns), so a
  // reload shows what the conversation said; the runtime session lives on the server.
  const HISTORY = 100;
  const historyKey = () => "slashgate.history." + conversation;

  function history() {
    try {
      return JSON.parse(localStorage.getItem(historyKey()) || "[]");
    } catch (_) {
      return [];
    }
  }

  function remember(entry) {
    try {
      localStorage.setItem(historyKey(), JSON.stringify(history().concat([entry]).slice(-HISTORY)));
    } catch (_) {
      // storage full or refused: the transcript just is not kept
    }
  }

  function updateActivity() {
    const work = turns.filter((t) => !t.control);
    const running = work.filter((t) => t.state === "running").length;
    const queued = work.filter((t) => t.state === "queued").length;
    const parts = [];
    if (running) parts.push("working");
    if (queued) parts.push(queued + " queued");
    if (!running && !queued && work.length) parts.push("sending");
    activity.textContent = parts.join(" · ");
    document.body.classList.toggle("busy", work.length > 0);
    stopButton.disabled = work.length === 0;
  }

  // -- sending: POST /v1/messages as server-sent events ---------------------------------------

  async function send(text, control) {
    if (!control && !localStorage.getItem(nameKey())) nameAfter(text);
    const turn = new Turn(text, control);
    turns.push(turn);
    turn.setState("sending", "sending…");
    try {
      const response = await fetch("/v1/messages", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
        body: JSON.stringify({ conversation, user, text }),
      });
      if (!response.ok) throw await failure(response);
      let final = null;
      await readEvents(response, (name, data) => {
        if (name === "accepted") turn.accepted(data);
        else if (name === "delta") turn.delta(data.text);
        else if (name === "reply") final = data;
        else turn.event(name, data);
      });
      if (final) turn.final(final);
      else turn.fail("the connection closed before the reply");
    } catch (error) {
      turn.fail(error.message);
    }
  }

  async function readEvents(response, handle) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (data.length) handle(name, JSON.parse(data.join("\n")));
      }
      if (done) return;
    }
  }

  function submit() {
    const text = input.value;
    if (!text.trim()) return;
    input.value = "";
    classifySeq++;
    clearTimeout(classifyTimer);
    resize();
    closeMenu();
    showNotice(null);
    showChips(null);
    hint.textContent = "";
    send(text, false);
  }

  // -- the composer: completion menu, hint, notice, chips ------------------------------------

  let completion = null; // the last /v1/complete answer shown
  let active = 0;
  let dismissed = false; // Escape closed the menu: keep it closed until the next edit
  let completeSeq = 0;
  let shownSeq = 0; // the request whose answer the composer shows
  let classifySeq = 0;
  let classifyTimer = 0;

  function resize() {
    input.style.height = "auto";
    input.style.height = Math.min(input.scrollHeight, 200) + "px";
  }

  function closeMenu() {
    completion = null;
    menu.hidden = true;
    menu.replaceChildren();
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    notice.hidden = !notice.textContent;
  }

  function showMenu(answer) {
    completion = answer;
    active = 0;
    menu.replaceChildren();
    answer.items.forEach((item, index) => {
      const li = element("li", "option");
      li.id = "option-" + index;
      li.setAttribute("role", "option");
      li.append(element("span", "name", item.kind === "command" ? "/" + item.name : item.name));
      if (item.hint) li.append(element("span", "arg", usage(item.hint)));
      if (item.interactive_only) li.append(element("span", "tag", "TUI only"));
      else if (item.source === "gateway") li.append(element("span", "tag", "gateway"));
      else if (item.source === "dynamic") li.append(element("span", "tag", "dynamic"));
      if (item.description) li.append(element("span", "desc", item.description));
      li.addEventListener("mousedown", (event) => {
        event.preventDefault(); // keep the focus in the composer
        accept(index);
      });
      menu.append(li);
    });
    menu.hidden = false;
    notice.hidden = true; // Enter now accepts from the menu: the notice is for sending
    input.setAttribute("aria-expanded", "true");
    highlight(0);
  }

  function highlight(index) {
    const options = menu.children;
    if (!options.length) return;
    active = (index + options.length) % options.length;
    for (const [i, option] of Array.from(options).entries()) option.setAttribute("aria-selected", String(i === active));
    input.setAttribute("aria-activedescendant", options[active].id);
    options[active].scrollIntoView({ block: "nearest" });
  }

  function accept(index) {
    const item = completion.items[index];
    const value = input.value;
    const after = value.slice(completion.end);
    const insert = /^\s/.test(after) ? item.insert.trimEnd() : item.insert;
    input.value = value.slice(0, completion.start) + insert + after;
    const caret = completion.start + insert.length;
    input.setSelectionRange(caret, caret);
    closeMenu();
    showHint(item);
    input.focus();
    edited();
  }

  function showHint(item) {
    if (!item || (item.kind && item.kind !== "command")) {
      hint.textContent = "";
      return;
    }
    hint.textContent = "/" + item.name + (item.hint ? " " + usage(item.hint) : "") + (item.description ? " — " + item.description : "");
  }

  // The gateway's hint notation (gateway/inventory.py usage_hint): a free-form hint is
  // bracketed once; one in the notation (<env> [dry_run: boolean]) is shown as it is.
  function usage(text) {
    const trimmed = text.trim();
    return /[<[]/.test(trimmed) ? trimmed : "<" + trimmed + ">";
  }

  function showNotice(answer) {
    const rejection = answer && answer.rejection;
    notice.textContent = rejection ? rejection.text : "";
    notice.hidden = !rejection || !menu.hidden;
    notice.dataset.category = rejection ? rejection.category : "";
  }

  function showChips(answer) {
    chips.replaceChildren();
    if (!answer) return;
    for (const node of answer.payload.nodes || []) {
      if (node.kind === "file" || node.kind === "branch" || node.kind === "symbol") chips.append(chip(node));
    }
  }

  // An answer is for one text and caret: the composer as it is now, or it is outgrown.
  const current = (answer) => answer.value === input.value && answer.cursor === input.selectionStart;

  async function requestCompletion() {
    const seq = ++completeSeq;
    const value = input.value;
    const cursor = input.selectionStart;
    // A menu for older text closes at once (its span no longer fits, and Enter must send);
    // the answer for this text reopens it. Requests are never aborted: any of them may come
    // back first.
    if (completion && !current(completion)) closeMenu();
    // The user too: the menu offers them only what they may run (docs/access.md).
    const params = new URLSearchParams({ conversation, user, text: value, cursor: String(cursor) });
    let answer;
    try {
      answer = await getJSON("/v1/complete?" + params);
    } catch (_) {
      return; // the composer still works without completion
    }
    answer.value = value;
    answer.cursor = cursor;
    // Answers come back in any order: one for other text is dropped, and an older one never
    // replaces a newer one for the same text (a /remember in between may have changed it).
    if (!current(answer) || seq < shownSeq) return;
    shownSeq = seq;
    if (answer.context === "arguments") showHint(answer.command);
    else if (answer.context === "none" || !input.value) hint.textContent = "";
    if (!dismissed && answer.items.length && (answer.context === "command" || answer.context === "reference")) showMenu(answer);
    else closeMenu();
  }

  async function requestClassification() {
    const seq = ++classifySeq;
    const text = input.value;
    if (!text.trim()) {
      showNotice(null);
      showChips(null);
      return;
    }
    let answer;
    try {
      answer = await postJSON("/v1/classify", { conversation, text });
    } catch (_) {
      return;
    }
    if (seq !== classifySeq || text !== input.value) return;
    showNotice(answer);
    showChips(answer);
  }

  function edited() {
    resize();
    requestCompletion();
    clearTimeout(classifyTimer);
    classifyTimer = setTimeout(requestClassification, 120);
  }

  function refresh() {
    if (input.value && document.activeElement === input && !dismissed) requestCompletion();
  }

  input.addEventListener("input", () => {
    dismissed = false;
    edited();
  });
  // A cursor moved by click or arrow keys asks again (it may now sit in another token).
  input.addEventListener("click", () => requestCompletion());
  input.addEventListener("keyup", (event) => {
    if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) requestCompletion();
  });

  input.addEventListener("keydown", (event) => {
    if (event.isComposing) return;
    const shown = completion !== null && !menu.hidden;
    const open = shown && current(completion); // a menu for other text takes no keys but Escape
    if (open && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      highlight(active + (event.key === "ArrowDown" ? 1 : -1));
    } else if (open && (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey))) {
      event.preventDefault();
      accept(active);
    } else if (event.key === "Escape") {
      // Also before an answer on its way has opened the menu: it must not open it after.
      dismissed = true;
      if (shown) {
        event.preventDefault();
        closeMenu();
      }
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      submit();
    }
  });
  input.addEventListener("blur", () => setTimeout(() => {
    if (document.activeElement !== input) closeMenu();
  }, 0));

  $("send").addEventListener("click", () => {
    submit();
    input.focus();
  });
  stopButton.addEventListener("click", () => {
    send("/cancel", true);
    input.focus();
  });
  $("new-conversation").addEventListener("click", () => {
    localStorage.removeItem(historyKey());
    localStorage.removeItem(nameKey());
    conversation = randomId("web-");
    localStorage.setItem(KEYS.conversation, conversation);
    showName();
    log.replaceChildren();
    welcome.hidden = false;
    suggest();
    input.focus();
  });

  // -- the conversation's name: kept in this browser, named after its first message --------

  const NAME_LENGTH = 40;
  const nameKey = () => "slashgate.name." + conversation;

  function showName() {
    nameInput.value = localStorage.getItem(nameKey()) || "";
  }

  function keepName(text) {
    try {
      if (text) localStorage.setItem(nameKey(), text);
      else localStorage.removeItem(nameKey()); // the placeholder shows: "New conversation"
    } catch (_) {
      // storage full or refused: the name is just not kept
    }
    showName();
  }

  // The first words of a message, cut at a word where it is long.
  function nameAfter(text) {
    let name = text.replace(/\s+/g, " ").trim();
    if (name.length > NAME_LENGTH) {
      const cut = name.slice(0, NAME_LENGTH);
      const space = cut.lastIndexOf(" ");
      name = (space > NAME_LENGTH / 2 ? cut.slice(0, space) : cut) + "…";
    }
    keepName(name);
  }

  nameInput.addEventListener("change", () => keepName(nameInput.value.replace(/\s+/g, " ").trim()));
  nameInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      input.focus(); // the name is kept as the field loses the focus
    } else if (event.key === "Escape") {
      showName(); // as it was
      input.focus();
    }
  });

  // -- the first screen: who answers, and commands to try -----------------------------------

  const SUGGESTED = 4;
  const takesNothing = (command) => !command.hint && !(command.arguments && command.arguments.length);

  async function greet() {
    let agent;
    try {
      agent = await getJSON("/v1/agent");
    } catch (_) {
      return; // the plain "Hello!" stays
    }
    const name = element("strong", "", agent.name);
    name.id = "agent-name";
    $("greeting").replaceChildren("Hello! You are talking to ", name, ".");
    const about = $("about");
    const runtime = agent.runtime + " runtime" + (agent.version ? ", version " + agent.version : "");
    about.textContent = agent.description ? agent.description + " (" + runtime + ")" : runtime;
    about.hidden = false;
    input.placeholder = "Message " + agent.name + ", or / for commands";
  }

  // /help first, then the agent's own: those that run as they are before those that need
  // arguments (a click sends the first kind, and puts the second in the composer).
  function pick(commands, interactiveOnly) {
    const tui = new Set(interactiveOnly.map((name) => name.toLowerCase()));
    const help = commands.filter((c) => c.source === "gateway" && c.name === "help");
    const agent = commands.filter((c) => c.source !== "gateway" && !tui.has(c.name.toLowerCase()));
    return help.concat(agent.filter(takesNothing), agent.filter((c) => !takesNothing(c))).slice(0, SUGGESTED);
  }

  function suggestion(command) {
    const button = element("button", "suggestion");
    button.type = "button";
    button.append(element("span", "name", "/" + command.name));
    if (command.hint) button.append(element("span", "arg", usage(command.hint)));
    if (command.description) button.append(element("span", "desc", command.description));
    button.addEventListener("click", () => {
      if (takesNothing(command)) {
        send("/" + command.name, false);
      } else {
        input.value = "/" + command.name + " ";
        input.setSelectionRange(input.value.length, input.value.length);
        showHint(command);
        edited();
      }
      input.focus();
    });
    const li = element("li");
    li.append(button);
    return li;
  }

  // What /help lists to this browser's user in this conversation (the request also opens
  // the session, and tells early whether the server wants a token).
  async function suggest() {
    const asked = conversation;
    let answer;
    try {
      answer = await getJSON("/v1/commands?" + new URLSearchParams({ conversation, user }));
    } catch (_) {
      return;
    }
    if (asked !== conversation) return; // a newer conversation asks for itself
    $("suggestions").replaceChildren(...pick(answer.commands, answer.interactive_only).map(suggestion));
  }

  showName();
  for (const entry of history()) Turn.restore(entry);
  // Focused here, not by autofocus: that can focus the composer before this script has run,
  // and what was typed then got no completion and no notice.
  input.focus();
  greet();
  suggest();
})();
