/**
 * DuckDuckGo's keyless HTML endpoint: one GET per query, the result page parsed
 * with cheerio. Result links come wrapped in a redirect (/l/?uddg=…) and are
 * unwrapped to the real URL; ads (result--ad, y.js links) are dropped.
 */
import * as cheerio from "cheerio";
import { decodeText } from "../charset.ts";
import { DEFAULT_LIMITS, FetchFailure, fetchWithLimits, gatewayRefusal } from "../http.ts";
import { type SearchBackend, SearchFailure, type SearchResult } from "./backend.ts";

export const DUCKDUCKGO_HTML = "https://html.duckduckgo.com/html/";

export function unwrapResultUrl(href: string): string | undefined {
  let url: URL;
  try {
    url = new URL(href, "https://duckduckgo.com/");
  } catch {
    return undefined;
  }
  if (url.hostname.endsWith("duckduckgo.com")) {
    if (url.pathname.startsWith("/y.js")) return undefined; // an ad
    const target = url.searchParams.get("uddg");
    if (!target) return undefined;
    return unwrapResultUrl(target) ?? undefined;
  }
  return url.protocol === "http:" || url.protocol === "https:" ? url.toString() : undefined;
}

const clean = (text: string) => text.replace(/\s+/g, " ").trim();

/** Parses a result page; throws when the page is not a result page at all (a block page, a captcha). */
export function parseResultPage(html: string, limit = 10): SearchResult[] {
  const $ = cheerio.load(html);
  const blocks = $(".result");
  if (blocks.length === 0 && $(".no-results, .result--no-result").length === 0) {
    throw new SearchFailure(
      "the answer was not a DuckDuckGo result page (it may be rate-limiting; try again later)",
    );
  }
  const results: SearchResult[] = [];
  const seen = new Set<string>();
  blocks.each((_, element) => {
    const block = $(element);
    if (block.hasClass("result--ad") || block.hasClass("result--no-result")) return;
    const link = block.find("a.result__a").first();
    const url = unwrapResultUrl(link.attr("href") ?? "");
    if (!url || seen.has(url)) return;
    seen.add(url);
    results.push({
      title: clean(link.text()),
      url,
      snippet: clean(block.find(".result__snippet").first().text()),
    });
  });
  return results.slice(0, limit);
}

export class DuckDuckGo implements SearchBackend {
  readonly name = "duckduckgo";
  constructor(
    private readonly endpoint = DUCKDUCKGO_HTML,
    private readonly limit = 10,
  ) {}

  async search(query: string, signal?: AbortSignal): Promise<SearchResult[]> {
    const url = `${this.endpoint}?q=${encodeURIComponent(query)}`;
    let fetched: Awaited<ReturnType<typeof fetchWithLimits>>;
    try {
      fetched = await fetchWithLimits(url, {
        ...DEFAULT_LIMITS,
        timeoutMs: 15_000,
        maxBytes: 2 * 1024 * 1024,
        signal,
      });
    } catch (error) {
      throw new SearchFailure(error instanceof FetchFailure ? error.message : String(error));
    }
    const refusal = gatewayRefusal(fetched);
    if (refusal) throw new SearchFailure(refusal);
    if (fetched.status !== 200) throw new SearchFailure(`HTTP ${fetched.status} from DuckDuckGo`);
    return parseResultPage(decodeText(fetched.body, fetched.headers["content-type"]), this.limit);
  }
}
