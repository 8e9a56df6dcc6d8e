import { readdirSync, statSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";

/**
 * A log that grows for the deployment's life is kept as its live file
 * (`decisions.jsonl`, appended to) and the files rotated out of it, named by
 * when they were rotated: `decisions.20261206T210000123Z.jsonl`, gzipped
 * once no writer can still hold them (`….jsonl.gz`). The stamp sorts as
 * text, so the segments read in the order their lines were written.
 */
export interface Segment {
  path: string;
  /** When it was rotated out (ms); undefined for the live file. */
  rotatedAt: number | undefined;
  compressed: boolean;
  bytes: number;
  ino: number;
}

const STAMP = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/;

/** The stamp a file rotated at `ms` is named by. */
export function stampOf(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, "");
}

function msOf(stamp: string): number | undefined {
  const m = STAMP.exec(stamp);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, ms] = m;
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
}

/** `decisions.jsonl` → ["decisions", ".jsonl"]; a name without an extension keeps "" */
function split(file: string): [string, string] {
  const name = basename(file);
  const ext = extname(name);
  return [name.slice(0, name.length - ext.length), ext];
}

/** The name the live file takes when it is rotated at `ms`. */
export function rotatedPath(file: string, ms: number): string {
  const [stem, ext] = split(file);
  return join(dirname(file), `${stem}.${stampOf(ms)}${ext}`);
}

/**
 * The log's segments, oldest first, the live file last (when it exists).
 * Anything else in the folder — another log, a merged channel's archive, a
 * half-written `.gz.tmp` — is not one of them.
 */
export function logSegments(file: string): Segment[] {
  const dir = dirname(file);
  const [stem, ext] = split(file);
  const prefix = `${stem}.`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rotated: Segment[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const compressed = name.endsWith(`${ext}.gz`);
    const rest = name.slice(prefix.length, name.length - ext.length - (compressed ? 3 : 0));
    if (!compressed && !name.endsWith(ext)) continue;
    const rotatedAt = msOf(rest);
    if (rotatedAt === undefined) continue;
    const stat = statSync(join(dir, name), { throwIfNoEntry: false });
    if (!stat?.isFile()) continue;
    rotated.push({
      path: join(dir, name),
      rotatedAt,
      compressed,
      bytes: stat.size,
      ino: stat.ino,
    });
  }
  // a stamp rotated twice in one millisecond can't happen (the rotation lock);
  // the plain file sorts before its own .gz only while both briefly exist
  rotated.sort(
    (a, b) =>
      (a.rotatedAt ?? 0) - (b.rotatedAt ?? 0) || Number(a.compressed) - Number(b.compressed),
  );
  const deduped = rotated.filter(
    (segment, i) => !(segment.compressed && rotated[i - 1]?.rotatedAt === segment.rotatedAt),
  );
  const live = statSync(file, { throwIfNoEntry: false });
  if (live?.isFile())
    deduped.push({
      path: file,
      rotatedAt: undefined,
      compressed: false,
      bytes: live.size,
      ino: live.ino,
    });
  return deduped;
}
