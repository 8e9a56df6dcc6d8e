/**
 * Main-content extraction on the shared corpus, side by side in one run:
 * fetch_pages' extractor (Readability over linkedom, then turndown to markdown),
 * Readability over linkedom (its plain textContent), Defuddle over linkedom
 * (what the public roster uses, markdown output), and a naive cheerio body-text
 * extractor. Word-F1 against the corpus' expected article, and time per page.
 *   npx tsx bench/extraction.ts
 */
import { performance } from "node:perf_hooks";
import { Readability } from "@mozilla/readability";
import * as cheerio from "cheerio";
import { Defuddle } from "defuddle/node";
import { parseHTML } from "linkedom";
import { htmlToMarkdown } from "../extensions/lib/extract.ts";
import {
  CORPUS_DIR,
  corpusAvailable,
  loadCorpus,
  markdownWords,
  wordF1,
  words,
} from "./harness.ts";

if (!corpusAvailable()) {
  console.error(`no corpus at ${CORPUS_DIR}`);
  process.exit(1);
}
const pages = loadCorpus();
const URL_BASE = "https://example.test/article/";

type Extractor = (html: string) => Promise<string[]> | string[];
const extractors: Record<string, Extractor> = {
  "fetch_pages (readability+linkedom → markdown)": (html) =>
    markdownWords(htmlToMarkdown(html, URL_BASE).markdown),
  "@mozilla/readability + linkedom (textContent)": (html) => {
    const { document } = parseHTML(html);
    const article = new Readability(
      document as unknown as ConstructorParameters<typeof Readability>[0],
    ).parse();
    return words(article?.textContent ?? "");
  },
  "defuddle + linkedom (markdown)": async (html) => {
    const { document } = parseHTML(html);
    const result = await Defuddle(document as unknown as Parameters<typeof Defuddle>[0], URL_BASE, {
      markdown: true,
    });
    return markdownWords(result.content ?? "");
  },
  "naive cheerio body text": (html) => {
    const $ = cheerio.load(html);
    $("script, style, noscript, nav, header, footer, aside").remove();
    return words($("body").text());
  },
};

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const rows: string[] = [];
let baselineMs = 0;
for (const [name, extract] of Object.entries(extractors)) {
  const times: number[] = [];
  let f1 = 0;
  for (const page of pages) {
    const started = performance.now();
    let got: string[] = [];
    try {
      got = await extract(page.source);
    } catch {
      got = [];
    }
    times.push(performance.now() - started);
    f1 += wordF1(got, words(page.expectedText)).f1;
  }
  times.sort((a, b) => a - b);
  const median = quantile(times, 0.5);
  if (!baselineMs) baselineMs = median;
  rows.push(
    `| ${name} | ${(f1 / pages.length).toFixed(3)} | ${median.toFixed(1)} | ${quantile(times, 0.95).toFixed(1)} | ${(median / baselineMs).toFixed(2)}x |`,
  );
}
console.log(`${pages.length} pages, Node ${process.version}\n`);
console.log("| extractor | mean word-F1 | median ms/page | p95 ms/page | median vs fetch_pages |");
console.log("|---|---|---|---|---|");
for (const row of rows) console.log(row);
