import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/**
 * Every page's frame. Everything a worker wrote goes through `html`'s
 * escaping (a value in a template is text unless it is itself a template),
 * and no page carries inline script or style: the CSP allows only the
 * console's own two files.
 */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const NAV = [
  ["/", "Overview"],
  ["/approvals", "Approvals"],
  ["/tasks", "Tasks"],
  ["/runs", "Runs"],
  ["/store", "Store"],
  ["/sessions", "Sessions"],
  ["/door", "Door"],
  ["/connections", "Connections"],
] as const;

/**
 * What a navigation gets that carries the cookie but not the session's token
 * (a browser never sends it with a navigation): no data, only the script,
 * which asks for the same address again with the token its origin's storage
 * holds and shows what comes back. A listener that took the cookie gets this
 * and no more (origin.ts).
 */
export function shell(): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="console-shell" content="1">
<title>roster</title>
<link rel="stylesheet" href="/console.css">
<script src="/console.js" defer></script>
</head>
<body><main><p class="muted">Loading…</p></main></body>
</html>`;
}

export function page(options: { title: string; current: string; csrf: string; body: Html }): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${options.csrf}">
<title>${options.title} · roster</title>
<link rel="stylesheet" href="/console.css">
<script src="/console.js" defer></script>
</head>
<body>
<header><strong>roster</strong>
<nav>${NAV.map(
    ([href, label]) =>
      html`<a href="${href}"${options.current === href ? html` aria-current="page"` : ""}>${label}</a>`,
  )}</nav>
</header>
<main>
<h1>${options.title}</h1>
${options.body}
</main>
</body>
</html>`;
}

/**
 * A part of a page that follows the feed: the script refetches `fragment`
 * (the same page, only this part) when one of `kinds` happens — about
 * `about` only ("worker/id": one run's page hears only that run's events).
 */
export function live(kinds: string, fragment: string, body: Html, about?: string): Html {
  return html`<section id="live" data-live="${kinds}" data-fragment="${fragment}"${about ? html` data-about="${about}"` : ""}>${body}</section>`;
}

export const when = (iso: string | null | undefined) =>
  iso ? iso.slice(0, 19).replace("T", " ") : "–";

export function duration(start: string, end: string | null | undefined): string {
  if (!end) return "–";
  const ms = Date.parse(end) - Date.parse(start);
  if (!Number.isFinite(ms) || ms < 0) return "–";
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

export const CSS = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; }
header { display: flex; gap: 2rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid #8884; }
nav a { margin-right: 1rem; text-decoration: none; }
nav a[aria-current] { font-weight: bold; text-decoration: underline; }
main { padding: 0 1.2rem 2rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #8883; vertical-align: top; }
pre { white-space: pre-wrap; word-break: break-word; background: #8881; padding: .6rem; border-radius: 4px; }
.gate { border: 1px solid #8885; border-radius: 6px; padding: .6rem 1rem; margin: 1rem 0; }
.state { font-weight: bold; }
.allow, .executed, .done { color: #2a7; }
.deny, .denied, .failed { color: #c33; }
.pending, .running { color: #c80; }
form.inline { display: inline; }
form.filters input, form.filters select { margin-right: .5rem; }
.muted { opacity: .7; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(18rem, 1fr)); gap: 1rem; margin: 1rem 0 2rem; }
.card { border: 1px solid #8885; border-radius: 8px; padding: .6rem 1rem; }
.card h2 { font-size: 1.1rem; margin: .2rem 0 .6rem; display: flex; justify-content: space-between; gap: .5rem; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem .8rem; margin: 0; font-size: .9rem; }
.card dt { opacity: .7; }
.card dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.limit { display: flex; flex-direction: column; margin-bottom: .3rem; }
.limit meter { width: 100%; height: .7rem; }
.pictures { display: grid; gap: 2rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 34rem), 1fr)); }
figure.picture { margin: 0; }
figcaption { font-weight: bold; margin-bottom: .4rem; }
figure.picture h3 { font-size: .85rem; margin: .6rem 0 .2rem; opacity: .8; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .tick { font-size: 11px; fill: currentColor; opacity: .75; }
svg.chart .axis { stroke: currentColor; opacity: .3; }
.legend { font-size: .8rem; margin: .2rem 0; }
.key { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin: 0 .3rem 0 .6rem; vertical-align: middle; }
rect.allow { fill: #2a7; } .key.allow { background: #2a7; }
rect.deny { fill: #c33; } .key.deny { background: #c33; }
rect.pending { fill: #c80; } .key.pending { background: #c80; }
rect.s0 { fill: #3b7dd8; } .key.s0 { background: #3b7dd8; }
rect.s1 { fill: #8e5bd0; } .key.s1 { background: #8e5bd0; }
rect.s2 { fill: #9bb8e8; } .key.s2 { background: #9bb8e8; }
rect.s3 { fill: #d85b9b; } .key.s3 { background: #d85b9b; }
rect.s4 { fill: #3bb5b0; } .key.s4 { background: #3bb5b0; }
rect.s5 { fill: #b08a3b; } .key.s5 { background: #b08a3b; }
rect.s6 { fill: #6b8e23; } .key.s6 { background: #6b8e23; }
rect.s7 { fill: #777; } .key.s7 { background: #777; }
details.numbers { margin-top: .4rem; }
a.button { display: inline-block; padding: .15rem .6rem; border: 1px solid #8888; border-radius: 4px; text-decoration: none; }
pre.paths { margin: .3rem 0; font-size: .8rem; }
.table-wrap { overflow-x: auto; }
@media (max-width: 40rem) {
  header { flex-wrap: wrap; gap: .4rem 1rem; padding: .5rem .8rem; }
  nav { display: flex; flex-wrap: wrap; gap: .2rem .8rem; }
  nav a { margin-right: 0; padding: .3rem 0; }
  main { padding: 0 .8rem 2rem; }
  table { font-size: .8rem; display: block; overflow-x: auto; }
  .gate button, .gate input { font-size: 1rem; min-height: 2.4rem; }
  form.filters label { display: block; margin: .3rem 0; }
}
`;

export const SCRIPT = `
// The session's token lives in this origin's storage (no other port's page
// can read it): the login link's redirect hands it over in the address's
// fragment, which never leaves the browser. A navigation brings only a shell;
// the page itself is fetched with the token and shown.
const KEY = "roster-console-session";
const handed = new URLSearchParams(location.hash.slice(1)).get("session");
if (handed) {
  localStorage.setItem(KEY, handed);
  history.replaceState(null, "", location.pathname + location.search);
}
const token = localStorage.getItem(KEY) || "";

// Synchronous on purpose: the page is whole before its load event, as a page
// served at once would be (an anchor scrolls to its element, and whatever
// waits for the load sees the page, not the shell).
const showPage = () => {
  if (!document.querySelector("meta[name=console-shell]")) return;
  if (!token) {
    const main = document.querySelector("main");
    if (main) {
      main.innerHTML = "<h1>Log in first</h1><p></p>";
      main.querySelector("p").textContent =
        "Open the login link roster server start printed (it carries this install's key).";
    }
    return;
  }
  const request = new XMLHttpRequest();
  request.open("GET", location.href, false);
  request.setRequestHeader("x-console-session", token);
  request.send();
  const fresh = new DOMParser().parseFromString(request.responseText, "text/html");
  document.title = fresh.title;
  const meta = fresh.querySelector("meta[name=csrf-token]");
  if (meta) document.head.append(document.adoptNode(meta));
  document.body.replaceWith(document.adoptNode(fresh.body));
  if (location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
};

// Live parts of a page: one EventSource; on a relevant event, the part is
// fetched again from the server (already escaped there) and swapped in.
const follow = () => {
  const part = document.getElementById("live");
  if (!part || !window.EventSource) return;
  const kinds = (part.dataset.live || "").split(" ").filter(Boolean);
  const source = new EventSource("/events?session=" + encodeURIComponent(token));
  let queued = false;
  const refresh = () => {
    if (queued) return;
    queued = true;
    setTimeout(async () => {
      queued = false;
      const response = await fetch(part.dataset.fragment, {
        headers: { "x-console-session": token },
      });
      if (response.ok) part.innerHTML = await response.text();
    }, 25);
  };
  const about = part.dataset.about;
  for (const kind of kinds)
    source.addEventListener(kind, (event) => {
      // a run's events name their run: a page about one run ignores the others'
      if (about && event.data && event.data !== about) return;
      refresh();
    });
};

showPage();
follow();
`;

/** A page of one sentence: a refusal, a not-found, a login hint. */
export function plain(title: string, text: string): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · roster</title><link rel="stylesheet" href="/console.css"></head>
<body><main><h1>${title}</h1><p>${text}</p></main></body></html>`;
}
