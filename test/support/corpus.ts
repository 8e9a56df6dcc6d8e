/**
 * The shared extraction corpus (third-party pages, read in place and never
 * copied into the project) and the word-overlap score used on it.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import * as cheerio from "cheerio";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

/** Where the shared corpus lives: beside the project root, never inside it. */
const SHARED_CORPUS = "../shared/corpus";

const isFolder = (path: string) => existsSync(path) && statSync(path).isDirectory();

/**
 * The project root as its files say (symlinks resolved), and the path the run
 * was started from when that is the same folder reached another way (a
 * checkout behind a symlink): `../shared/corpus` is looked for beside each.
 */
function projectRoots(): string[] {
  const roots = [PROJECT_ROOT];
  const started = process.env.PWD;
  if (started && isFolder(started) && realpathSync(started) === realpathSync(PROJECT_ROOT))
    roots.push(started);
  return roots;
}

/**
 * The readability pages: ROSTER_CORPUS_DIR when set (a folder it names that is
 * not there fails loudly in loadCorpus, never skips), else
 * `../shared/corpus/readability` beside the project root. `absent` says why
 * there is none, only when no `../shared/corpus` is there at all: a corpus that
 * is there but broken is a failure, not a reason to skip.
 */
function locateCorpus(): { dir: string; absent?: string } {
  const named = process.env.ROSTER_CORPUS_DIR;
  if (named) return { dir: named };
  const candidates = [...new Set(projectRoots().map((root) => join(root, SHARED_CORPUS)))];
  const found = candidates.find(isFolder);
  if (found) return { dir: join(found, "readability") };
  return {
    dir: join(candidates[0] ?? SHARED_CORPUS, "readability"),
    absent: `no ${SHARED_CORPUS} beside the project root (looked for ${candidates.join(" and ")}; ROSTER_CORPUS_DIR can name its readability folder elsewhere)`,
  };
}

const located = locateCorpus();
export const CORPUS_DIR = located.dir;

export interface CorpusPage {
  name: string;
  source: string;
  expectedText: string;
  title: string;
}

/** Why there is no corpus here, or undefined when there is one to read. */
export function corpusAbsence(): string | undefined {
  return located.absent;
}

export function corpusAvailable(): boolean {
  return located.absent === undefined;
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
