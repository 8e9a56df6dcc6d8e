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
  ["/approvals", "Approvals"],
  ["/runs", "Runs"],
  ["/sessions", "Sessions"],
  ["/door", "Door"],
] as const;

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
 * (the same page, only this part) when one of `kinds` happens.
 */
export function live(kinds: string, fragment: string, body: Html): Html {
  return html`<section id="live" data-live="${kinds}" data-fragment="${fragment}">${body}</section>`;
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
`;

export const SCRIPT = `
// Live parts of a page: one EventSource; on a relevant event, the part is
// fetched again from the server (already escaped there) and swapped in.
const part = document.getElementById("live");
if (part && window.EventSource) {
  const kinds = (part.dataset.live || "").split(" ").filter(Boolean);
  const source = new EventSource("/events");
  let queued = false;
  const refresh = () => {
    if (queued) return;
    queued = true;
    setTimeout(async () => {
      queued = false;
      const response = await fetch(part.dataset.fragment, { credentials: "same-origin" });
      if (response.ok) part.innerHTML = await response.text();
    }, 25);
  };
  for (const kind of kinds) source.addEventListener(kind, refresh);
}
`;
