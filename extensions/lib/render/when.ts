/**
 * When fetch_pages renders a page rather than reading it as served: when the
 * tool asks (`render: true`), or when the served HTML has scripts and either
 * little a person could read (the text arrives by script) or the mark of an
 * app shell (an empty mount element — #root, #app, #__next, #__nuxt — that
 * the scripts fill). A page without scripts reads the same either way, so it
 * is never rendered unasked.
 */
import { parseHTML } from "linkedom";

/** Below this many readable characters, a page with scripts is rendered. */
export const THIN_TEXT_CHARS = 400;

const MOUNTS = ["#root", "#app", "#__next", "#__nuxt", "#svelte", "[data-reactroot]"];

/** Why this page should be rendered, in words for the answer; undefined when it reads as served. */
export function renderReason(html: string, markdown: string): string | undefined {
  if (!/<script[\s>]/i.test(html)) return undefined;
  const readable = markdown
    .replace(/!?\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/\s+/g, " ")
    .trim().length;
  if (readable < THIN_TEXT_CHARS)
    return `its served HTML has ${readable} readable characters and scripts`;
  const { document } = parseHTML(html);
  for (const selector of MOUNTS) {
    const mount = document.querySelector(selector);
    if (mount && (mount.textContent ?? "").trim() === "")
      return `it is an app shell (an empty ${selector} its scripts fill)`;
  }
  return undefined;
}
