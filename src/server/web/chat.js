// brisk's chat page: a conversation with the server's /v1/chat/completions, streamed; the
// conversation and the settings live in the browser's localStorage. Markdown goes through
// marked (Debian's libjs-marked) with raw HTML escaped and only http(s)/mailto links, code
// through highlight.js; without them the text is shown as plain text.
"use strict";
const $ = (id) => document.getElementById(id);
const STORE = "brisk-chat";
const state = { messages: [], settings: {}, controller: null };

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function safeUrl(href) {
  return /^(https?:|mailto:)/i.test(href || "") ? href : null;
}

function setUpMarkdown() {
  if (!window.marked) return null;
  const renderer = new marked.Renderer();
  renderer.html = (html) => escapeHtml(typeof html === "string" ? html : html.text || "");
  renderer.link = (href, title, text) => {
    const url = safeUrl(href);
    return url ? `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${text}</a>` : text;
  };
  renderer.image = (href, title, text) => escapeHtml(text || "");
  const highlight = (code, lang) => {
    if (!window.hljs) return escapeHtml(code);
    try {
      return lang && hljs.getLanguage(lang) ? hljs.highlight(lang, code).value : hljs.highlightAuto(code).value;
    } catch (e) {
      return escapeHtml(code);
    }
  };
  marked.setOptions({ renderer, highlight, gfm: true, breaks: false, headerIds: false, mangle: false });
  return (text) => marked.parse(text);
}
const markdown = setUpMarkdown();

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement("textarea");  // plain http: the old way
  area.value = text;
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
  return Promise.resolve();
}

function copyButton(getText) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "copy";
  b.textContent = "Copy";
  b.onclick = () => copyText(getText()).then(() => { b.textContent = "Copied"; setTimeout(() => (b.textContent = "Copy"), 1200); });
  return b;
}

function fillContent(el, m) {
  el.innerHTML = "";
  if (m.reasoning) {
    const d = document.createElement("details");
    d.className = "reasoning";
    d.innerHTML = "<summary>Reasoning</summary>";
    const p = document.createElement("div");
    p.textContent = m.reasoning;
    d.appendChild(p);
    el.appendChild(d);
  }
  const body = document.createElement("div");
  if (markdown && m.role !== "user") body.innerHTML = markdown(m.content);
  else body.style.whiteSpace = "pre-wrap", (body.textContent = m.content);
  for (const pre of body.querySelectorAll("pre")) pre.appendChild(copyButton(() => pre.querySelector("code")?.textContent || pre.textContent));
  el.appendChild(body);
  if (m.stopped) el.insertAdjacentHTML("beforeend", '<div class="stopped">(stopped)</div>');
}

function messageElement(m) {
  const div = document.createElement("div");
  div.className = "msg " + m.role;
  div.innerHTML = `<div class="role">${escapeHtml(m.role)}</div><div class="content"></div>`;
  fillContent(div.querySelector(".content"), m);
  if (m.role !== "error") div.appendChild(copyButton(() => m.content));
  return div;
}

function render() {
  const box = $("messages");
  box.innerHTML = "";
  for (const m of state.messages) box.appendChild(messageElement(m));
  box.scrollTop = box.scrollHeight;
}

function save() {
  localStorage.setItem(STORE, JSON.stringify({ messages: state.messages, settings: readSettings() }));
}

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE) || "{}");
    state.messages = Array.isArray(saved.messages) ? saved.messages.filter((m) => m && typeof m.content === "string") : [];
    const s = saved.settings || {};
    if (typeof s.system === "string") $("system").value = s.system;
    for (const k of ["temperature", "top-p", "max-tokens"]) if (s[k] !== undefined) $(k).value = s[k];
  } catch (e) {
    state.messages = [];
  }
}

function readSettings() {
  return { system: $("system").value, temperature: $("temperature").value, "top-p": $("top-p").value,
           "max-tokens": $("max-tokens").value };
}

function apiHeaders() {
  const h = { "Content-Type": "application/json" };
  const key = localStorage.getItem(STORE + "-key");
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

function requestBody() {
  const s = readSettings();
  const history = state.messages.filter((m) => m.role === "user" || m.role === "assistant").slice(0, -1)
    .map((m) => ({ role: m.role, content: m.content }));
  if (s.system.trim()) history.unshift({ role: "system", content: s.system });
  return { model: $("model").dataset.id || "brisk", messages: history, stream: true,
           temperature: Number(s.temperature), top_p: Number(s["top-p"]), max_tokens: Number(s["max-tokens"]) };
}

// The answer's SSE stream: each "data: {...}" chunk's delta goes into the last message.
async function readStream(response, answer, bubble) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", last = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).trim();
      buffer = buffer.slice(cut + 1);
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (data === "[DONE]") return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || "the server reported an error");
      const delta = (chunk.choices && chunk.choices[0] && chunk.choices[0].delta) || {};
      answer.content += delta.content || "";
      if (delta.reasoning_content) answer.reasoning = (answer.reasoning || "") + delta.reasoning_content;
    }
    if (Date.now() - last > 50) last = Date.now(), fillContent(bubble, answer), save();
  }
}

async function send(text) {
  state.messages.push({ role: "user", content: text });
  const answer = { role: "assistant", content: "" };
  state.messages.push(answer);
  render();
  const bubble = $("messages").lastChild.querySelector(".content");
  state.controller = new AbortController();
  $("send").hidden = true;
  $("stop").hidden = false;
  try {
    let response;
    for (let attempt = 0; attempt < 3; attempt++) {
      response = await fetch("/v1/chat/completions", { method: "POST", headers: apiHeaders(),
        body: JSON.stringify(requestBody()), signal: state.controller.signal });
      if (response.status !== 401) break;
      const key = window.prompt("This server needs an API key:");
      if (!key) break;
      localStorage.setItem(STORE + "-key", key);
    }
    if (!response.ok) {
      const err = await response.json().catch(() => ({}));
      throw new Error((err.error && err.error.message) || "HTTP " + response.status);
    }
    await readStream(response, answer, bubble);
  } catch (e) {
    if (e.name === "AbortError") answer.stopped = true;
    else state.messages.push({ role: "error", content: String(e.message || e) });
  } finally {
    state.controller = null;
    $("send").hidden = false;
    $("stop").hidden = true;
    save();
    render();
  }
}

function init() {
  load();
  render();
  fetch("/v1/models", { headers: apiHeaders() }).then((r) => r.json()).then((j) => {
    const id = j.data && j.data[0] && j.data[0].id;
    if (id) $("model").textContent = id, ($("model").dataset.id = id);
  }).catch(() => {});
  $("composer").onsubmit = (ev) => {
    ev.preventDefault();
    const text = $("input").value;
    if (!text.trim() || state.controller) return;
    $("input").value = "";
    send(text);
  };
  $("input").onkeydown = (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) ev.preventDefault(), $("composer").requestSubmit();
  };
  $("stop").onclick = () => state.controller && state.controller.abort();
  $("new-chat").onclick = () => { if (!state.controller) state.messages = [], save(), render(); };
  $("toggle-settings").onclick = () => {
    const s = $("settings");
    s.hidden = !s.hidden;
    $("toggle-settings").setAttribute("aria-expanded", String(!s.hidden));
  };
  for (const id of ["system", "temperature", "top-p", "max-tokens"]) $(id).onchange = save;
}

init();
