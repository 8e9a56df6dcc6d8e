/**
 * fetch_pages: what the model passes, normalised; each page fetched through the
 * proxy with limits, decoded, reduced to its main content as markdown (or text,
 * JSON, PDF text), and cut at a per-page cap with a marker that says exactly
 * how to read on. Results come back in the order asked, whatever finished first.
 */
import { spawn } from "node:child_process";
import { decodeText, looksBinary } from "./charset.ts";
import { htmlToMarkdown } from "./extract.ts";
import {
  DEFAULT_LIMITS,
  type Fetched,
  FetchFailure,
  fetchWithLimits,
  gatewayRefusal,
} from "./http.ts";
import { RenderSession, renderedNote } from "./render/session.ts";
import { renderReason } from "./render/when.ts";

export interface PageOptions {
  /** Character offset to start each page at (to read on after a cut). */
  start: number;
  maxChars: number;
  concurrency: number;
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal | undefined;
  /** true: render every HTML page in the box's browser; false: never; unset: when it needs it (render/when.ts). */
  render?: boolean | undefined;
  /** The call's browser, opened when a first page needs it. */
  renderer?: RenderSession | undefined;
}

export const PAGE_DEFAULTS: PageOptions = {
  start: 0,
  maxChars: 24_000,
  concurrency: 4,
  timeoutMs: 20_000,
  maxBytes: 5 * 1024 * 1024,
};

export interface PageResult {
  requested: string;
  url: string;
  title: string;
  text: string;
  error?: string;
  /** Read from the DOM its scripts built, in the box's browser. */
  rendered?: boolean;
}

/** Splits comma- or space-joined URLs, keeps http(s) only, drops duplicates, keeps order. */
export function normaliseUrls(inputs: string[]): { urls: string[]; rejected: string[] } {
  const urls: string[] = [];
  const rejected: string[] = [];
  for (const piece of inputs.flatMap((input) => input.split(/[\s,]+/)).filter(Boolean)) {
    const candidate = piece.replace(/^[<("']+|[>)"'.;]+$/g, "");
    let parsed: URL;
    try {
      parsed = new URL(candidate);
    } catch {
      rejected.push(piece);
      continue;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      rejected.push(piece);
      continue;
    }
    parsed.hash = "";
    const url = parsed.toString();
    if (!urls.includes(url)) urls.push(url);
  }
  return { urls, rejected };
}

async function pdfToText(body: Buffer, signal?: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn("pdftotext", ["-layout", "-", "-"], {
      stdio: ["pipe", "pipe", "ignore"],
      ...(signal ? { signal } : {}),
    });
    const out: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.on("error", () => resolve(undefined));
    child.on("close", (code) =>
      resolve(code === 0 ? Buffer.concat(out).toString("utf8") : undefined),
    );
    child.stdin.on("error", () => undefined);
    child.stdin.end(body);
  });
}

async function render(
  fetched: Fetched,
  options: PageOptions,
): Promise<{ title: string; text: string; rendered?: boolean }> {
  const type = (fetched.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const notes: string[] = [];
  if (fetched.timedOut)
    notes.push("(the page did not finish loading in time; this is what arrived)");
  if (fetched.truncated)
    notes.push(
      `(the page is larger than ${Math.round(options.maxBytes / 1024 / 1024)} MB; only the start was read)`,
    );
  const withNotes = (text: string) => [...notes, text].filter(Boolean).join("\n\n");
  if (type === "application/pdf" || fetched.body.subarray(0, 5).toString("latin1") === "%PDF-") {
    const text = await pdfToText(fetched.body, options.signal);
    return {
      title: "",
      text: withNotes(text ?? "(a PDF, and pdftotext is not available to read it)"),
    };
  }
  if (looksBinary(fetched.body)) {
    return {
      title: "",
      text: withNotes(
        `(binary content served as ${type || "unknown type"}, ${fetched.body.length} bytes; not shown)`,
      ),
    };
  }
  const text = decodeText(fetched.body, fetched.headers["content-type"]);
  if (!text.trim()) return { title: "", text: withNotes("(the page is empty)") };
  if (
    type === "text/html" ||
    type === "application/xhtml+xml" ||
    (!type && /<html|<body|<p[\s>]/i.test(text.slice(0, 2000)))
  ) {
    const extracted = htmlToMarkdown(text, fetched.url);
    const reason =
      options.render === false
        ? undefined
        : options.render
          ? "asked for"
          : renderReason(text, extracted.markdown);
    if (reason && options.renderer) {
      const rendered = await options.renderer.render(fetched.url);
      if (typeof rendered === "string") notes.push(`(not rendered: ${rendered})`);
      else {
        const after = htmlToMarkdown(rendered.html, rendered.url);
        if (after.markdown) {
          notes.unshift(renderedNote(rendered, reason));
          return {
            title: after.title || extracted.title,
            text: withNotes(after.markdown),
            rendered: true,
          };
        }
        notes.push(`(rendered, but its DOM had no readable text: this is the page as served)`);
      }
    }
    return {
      title: extracted.title,
      text: withNotes(extracted.markdown || "(the page has no readable text)"),
    };
  }
  if (type.includes("json")) {
    try {
      return { title: "", text: withNotes(JSON.stringify(JSON.parse(text), null, 2)) };
    } catch {
      return { title: "", text: withNotes(text) };
    }
  }
  return { title: "", text: withNotes(text) };
}

/** Cuts to [start, start+maxChars) with a marker that tells the model how to read on. */
export function pageWindow(text: string, start: number, maxChars: number, url: string): string {
  if (start >= text.length && text.length > 0) {
    return `(start=${start} is past the end: this page has ${text.length} characters)`;
  }
  const end = Math.min(text.length, start + maxChars);
  const slice = text.slice(start, end);
  if (start === 0 && end === text.length) return slice;
  const before = start > 0 ? `[… characters 0–${start} skipped]\n\n` : "";
  const after =
    end < text.length
      ? `\n\n[… truncated: showing characters ${start}–${end} of ${text.length}. To read on, call fetch_pages with urls=["${url}"] and start=${end}.]`
      : "";
  return `${before}${slice}${after}`;
}

export async function fetchOne(requested: string, options: PageOptions): Promise<PageResult> {
  try {
    const fetched = await fetchWithLimits(requested, {
      ...DEFAULT_LIMITS,
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes,
      signal: options.signal,
    });
    const refusal = gatewayRefusal(fetched);
    if (refusal) return { requested, url: fetched.url, title: "", text: "", error: refusal };
    if (fetched.status >= 400) {
      return {
        requested,
        url: fetched.url,
        title: "",
        text: "",
        error: `HTTP ${fetched.status} from ${new URL(fetched.url).host}`,
      };
    }
    const page = await render(fetched, options);
    return {
      requested,
      url: fetched.url,
      title: page.title,
      text: pageWindow(page.text, options.start, options.maxChars, fetched.url),
      ...(page.rendered ? { rendered: true } : {}),
    };
  } catch (error) {
    const reason =
      error instanceof FetchFailure ? error.message : `failed: ${(error as Error).message}`;
    return { requested, url: requested, title: "", text: "", error: reason };
  }
}

export async function fetchPages(urls: string[], given: PageOptions): Promise<PageResult[]> {
  // a browser only when a page needs one, and never past this call
  const renderer = given.render === false ? undefined : (given.renderer ?? new RenderSession());
  const options = { ...given, renderer };
  try {
    return await fetchAll(urls, options);
  } finally {
    if (renderer && renderer !== given.renderer) await renderer.close();
  }
}

async function fetchAll(urls: string[], options: PageOptions): Promise<PageResult[]> {
  const results: PageResult[] = new Array(urls.length);
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const index = next++;
      const url = urls[index];
      if (url !== undefined) results[index] = await fetchOne(url, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, urls.length) }, worker));
  return results;
}

export function renderPages(results: PageResult[], rejected: string[]): string {
  const sections = results.map((page) => {
    const heading = `## ${page.title || page.url}\nURL: ${page.url}${page.url !== page.requested ? ` (asked for ${page.requested})` : ""}`;
    return page.error
      ? `${heading}\n\n(could not read this page: ${page.error})`
      : `${heading}\n\n${page.text}`;
  });
  if (rejected.length) sections.push(`(skipped, not http(s) URLs: ${rejected.join(", ")})`);
  return sections.join("\n\n---\n\n") || "(no URLs to fetch)";
}
