/**
 * The shared extraction corpus (third-party pages, read in place and never
 * copied into the project) and the word-overlap score used on it.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as cheerio from "cheerio";
import { PROJECT_ROOT } from "../../runner/version.ts";

export const CORPUS_DIR =
  process.env.ROSTER_CORPUS_DIR ?? join(PROJECT_ROOT, "../shared/corpus/readability");

export interface CorpusPage {
  name: string;
  source: string;
  expectedText: string;
  title: string;
}

export function corpusAvailable(): boolean {
  return existsSync(CORPUS_DIR);
}

export function loadCorpus(): CorpusPage[] {
  return readdirSync(CORPUS_DIR, { withFileTypes: true })
    .filter(
      (entry) => entry.isDirectory() && existsSync(join(CORPUS_DIR, entry.name, "source.html")),
    )
    .map((entry) => {
      const dir = join(CORPUS_DIR, entry.name);
      const meta = existsSync(join(dir, "expected-metadata.json"))
        ? (JSON.parse(readFileSync(join(dir, "expected-metadata.json"), "utf8")) as {
            title?: string;
          })
        : {};
      return {
        name: entry.name,
        source: readFileSync(join(dir, "source.html"), "utf8"),
        expectedText: cheerio
          .load(readFileSync(join(dir, "expected.html"), "utf8"))
          .root()
          .text(),
        title: meta.title ?? "",
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Words of markdown as a reader sees them: link targets and markup dropped. */
export function markdownWords(markdown: string): string[] {
  const text = markdown
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\]\([^)]*\)/g, "]")
    .replace(/[#*_`>|[\]-]+/g, " ");
  return words(text);
}

export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export interface Score {
  precision: number;
  recall: number;
  f1: number;
}

/** Multiset word overlap: how much of what we kept is right, and how much of what's right we kept. */
export function wordF1(got: string[], expected: string[]): Score {
  const counts = new Map<string, number>();
  for (const word of expected) counts.set(word, (counts.get(word) ?? 0) + 1);
  let overlap = 0;
  for (const word of got) {
    const left = counts.get(word) ?? 0;
    if (left > 0) {
      overlap++;
      counts.set(word, left - 1);
    }
  }
  if (got.length === 0 && expected.length === 0) return { precision: 1, recall: 1, f1: 1 };
  const precision = got.length ? overlap / got.length : 0;
  const recall = expected.length ? overlap / expected.length : 0;
  const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, f1 };
}

export function sameTitle(got: string, expected: string): boolean {
  const norm = (text: string) => words(text).join(" ");
  return norm(got) === norm(expected);
}
