import { createHash } from "node:crypto";
import {
  type Dirent,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { type ConfigFile, configDigest } from "../../ground/config/config-digest.ts";
import { RosterError } from "../../ground/errors.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";
import { writeNewDurablySync } from "../../ground/files/durable-write.ts";
import { linesFromEnd } from "../../ground/files/tail-lines.ts";

/**
 * Every config roster takes, kept once by its digest (ground/config/config-digest.ts):
 * data/config-history/<digest>/ holds its files byte for byte, and
 * data/config-history/index.jsonl one line when it was first kept — its
 * digest, when, by what (the server's gateway, a standalone gateway, a
 * run, a rollback keeping the config it replaces) and each file's SHA-256,
 * so a listing says what changed without opening a snapshot. A config taken
 * again is already there and adds nothing. Audit lines and run records name
 * configs by digest; this is where a digest is read back (`roster config`).
 */
export type TakenBy = "server" | "gateway" | "run" | "rollback";

export const HistoryEntry = Type.Object({
  digest: Type.String({ pattern: "^[0-9a-f]{64}$" }),
  at: Type.String(),
  by: Type.Union([
    Type.Literal("server"),
    Type.Literal("gateway"),
    Type.Literal("run"),
    Type.Literal("rollback"),
  ]),
  /** Each file's path under the config folder, and the SHA-256 of its bytes. */
  files: Type.Record(Type.String(), Type.String()),
});
export type HistoryEntry = Static<typeof HistoryEntry>;

const DIGEST = /^[0-9a-f]{64}$/;
/** The most of the index's end a listing reads, however long the deployment has lived. */
const INDEX_READ_BYTES = 8 * 1024 * 1024;

export function historyDir(dataRoot: string): string {
  return join(dataRoot, "config-history");
}

const indexFile = (dataRoot: string) => join(historyDir(dataRoot), "index.jsonl");

/**
 * Keeps a config's files under its digest, once: its folder is written
 * whole beside the history (each file fsynced) and renamed into place, so a
 * digest's folder holds all its files or does not exist; then its index line
 * is appended. Returns whether this call kept it (false: it already was,
 * or another process kept it first).
 */
export function keepConfig(
  dataRoot: string,
  taken: { digest: string; files: readonly ConfigFile[] },
  by: TakenBy,
): boolean {
  const { digest, files } = taken;
  if (!DIGEST.test(digest) || configDigest(files) !== digest)
    throw new Error(`config history: the files given are not those of config ${digest}`);
  const root = historyDir(dataRoot);
  const dir = join(root, digest);
  if (existsSync(dir)) return false;
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const temporary = join(root, `.${digest}.${process.pid}.${Date.now()}.tmp`);
  try {
    for (const file of files) {
      const path = join(temporary, file.path);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeNewDurablySync(path, file.bytes, 0o600);
    }
    mkdirSync(temporary, { recursive: true, mode: 0o700 });
    renameSync(temporary, dir);
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    // kept by another process between the check and the rename: kept once, by it
    if (existsSync(dir)) return false;
    throw error;
  }
  appendJsonLine(indexFile(dataRoot), {
    digest,
    at: new Date().toISOString(),
    by,
    files: Object.fromEntries(files.map((file) => [file.path, sha256(file.bytes)])),
  } satisfies HistoryEntry);
  return true;
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * The kept configs, newest first, each once (at the time it was first kept),
 * read from the index's end; a line that is not an entry is skipped.
 */
export function readHistory(dataRoot: string): HistoryEntry[] {
  const newestFirst: HistoryEntry[] = [];
  linesFromEnd(
    indexFile(dataRoot),
    (line) => {
      try {
        const entry: unknown = JSON.parse(line);
        if (Value.Check(HistoryEntry, entry)) newestFirst.push(entry);
      } catch {
        // a torn or foreign line says nothing
      }
      return true;
    },
    INDEX_READ_BYTES,
  );
  // two processes keeping one config at once may both have written a line: the first counts
  const first = new Map<string, HistoryEntry>();
  for (const entry of [...newestFirst].reverse())
    if (!first.has(entry.digest)) first.set(entry.digest, entry);
  return [...first.values()].reverse();
}

/** The digests kept (their folders), in no order. */
export function keptDigests(dataRoot: string): string[] {
  try {
    return readdirSync(historyDir(dataRoot)).filter((name) => DIGEST.test(name));
  } catch {
    return [];
  }
}

/** A kept config by its digest or any unique prefix of it (at least 4 hex digits). */
export function resolveKept(dataRoot: string, prefix: string): string | { error: string } {
  const wanted = prefix.toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(wanted))
    return {
      error: `"${prefix}": a config is named by its digest, or 4 or more of its first hex digits`,
    };
  const matches = keptDigests(dataRoot).filter((digest) => digest.startsWith(wanted));
  if (matches.length === 1 && matches[0]) return matches[0];
  if (!matches.length)
    return { error: `no kept config matches "${prefix}" (roster config history lists them)` };
  return {
    error: `"${prefix}" matches ${matches.length} kept configs: ${matches
      .slice(0, 5)
      .map((digest) => digest.slice(0, 16))
      .join(", ")}…`,
  };
}

/** A kept config's files, sorted by path, checked against its digest. */
export function keptFiles(dataRoot: string, digest: string): ConfigFile[] {
  const dir = join(historyDir(dataRoot), digest);
  const files: ConfigFile[] = [];
  const visit = (folder: string, prefix: string) => {
    const entries: Dirent[] = readdirSync(folder, { withFileTypes: true });
    for (const entry of entries) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) visit(join(folder, entry.name), `${path}/`);
      else if (entry.isFile()) files.push({ path, bytes: readFileSync(join(folder, entry.name)) });
    }
  };
  visit(dir, "");
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // a snapshot changed on disk since it was kept is not that config any more
  if (configDigest(files) !== digest)
    throw new RosterError(
      `config history: ${dir} no longer holds config ${digest} (its files were changed)`,
    );
  return files;
}
