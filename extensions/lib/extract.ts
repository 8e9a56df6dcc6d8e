/**
 * HTML → the main content → markdown. The extractor was chosen by measurement
 * (bench/extraction.ts on the shared corpus): Mozilla Readability over linkedom
 * has the best word-F1 at a few ms a page. turndown renders it, with GFM tables;
 * headings, lists, code blocks, links and image alt text are kept.
 */
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";
import { gfm } from "turndown-plugin-gfm";

export interface Extracted {
  title: string;
  markdown: string;
  /** "readability" when the main content was found; "body" when we fell back to the whole page. */
  method: "readability" | "body";
}

function markdownService(): TurndownService {
  const service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*",
  });
  service.use(gfm);
  service.remove(["script", "style", "noscript", "iframe"]);
  return service;
}

/** Never content: dropped before Readability looks (cheap, and keeps hostile markup small). */
const NEVER_CONTENT = "script, style, noscript, template, svg, canvas, iframe, object, embed";

/**
 * A docs page's callout (a note, a warning) is an `<aside>` inside its article
 * (Starlight, docutils' HTML5 writer, hand-written docs), and Readability drops
 * every aside in what it keeps. One whose class or role says it is a callout,
 * and which is not mostly links, is kept as a quotation: the "make retried side
 * effects idempotent" warning is the page's, not its chrome's.
 */
type ParsedDocument = ReturnType<typeof parseHTML>["document"];
const CALLOUT =
  /(?:^|[\s_-])(?:callout|admonition|note|notice|tip|hint|info|warning|caution|important|danger|alert)(?:$|[\s_-])/i;
function keepCallouts(document: ParsedDocument): void {
  for (const aside of document.querySelectorAll("article aside, main aside")) {
    if (!CALLOUT.test(aside.getAttribute("class") ?? "") && aside.getAttribute("role") !== "note")
      continue;
    const text = (aside.textContent ?? "").trim().length;
    let linked = 0;
    for (const link of aside.querySelectorAll("a"))
      linked += (link.textContent ?? "").trim().length;
    if (!text || linked / text >= 0.5) continue;
    const quote = document.createElement("blockquote");
    while (aside.firstChild) quote.appendChild(aside.firstChild);
    aside.replaceWith(quote);
  }
}

function absolutise(markdown: string, url: string): string {
  return markdown.replace(/\]\((?!https?:|mailto:|#|data:)([^)\s]+)/g, (whole, target: string) => {
    try {
      return `](${new URL(target, url).toString()}`;
    } catch {
      return whole;
    }
  });
}

export function htmlToMarkdown(html: string, url: string): Extracted {
  let { document } = parseHTML(html);
  // linkedom needs a root element; markup without one (or plain text served as HTML) gets wrapped
  if (!document.documentElement)
    document = parseHTML(`<!doctype html><html><body>${html}</body></html>`).document;
  for (const node of document.querySelectorAll(NEVER_CONTENT)) node.remove();
  keepCallouts(document);
  const fallbackTitle = (document.querySelector("title")?.textContent ?? "").trim();
  let article: ReturnType<Readability<string>["parse"]> = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
      charThreshold: 500,
    }).parse();
  } catch {
    article = null;
  }
  const service = markdownService();
  if (article?.content && (article.textContent ?? "").trim().length > 0) {
    return {
      title: (article.title ?? fallbackTitle).trim() || fallbackTitle,
      markdown: tidy(absolutise(service.turndown(article.content), url)),
      method: "readability",
    };
  }
  for (const node of document.querySelectorAll("nav, header, footer, aside")) node.remove();
  return {
    title: fallbackTitle,
    markdown: tidy(absolutise(service.turndown(document.body?.innerHTML ?? ""), url)),
    method: "body",
  };
}

function tidy(markdown: string): string {
  return markdown.replace(/\n{3,}/g, "\n\n").trim();
}
