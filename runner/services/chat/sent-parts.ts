import { createHash } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { sentPartsFile } from "../../records/gates/gate-record.ts";

/**
 * What a chat executor has already delivered of a message it sends in parts,
 * kept beside the gate (one fsynced JSON line per part, written as soon as the
 * far side accepted it). A retry of the same approval (the same key) skips
 * what went out and resumes after the last part delivered: Slack's
 * chat.postMessage has no idempotency key, and Discord's nonce dedupes for a
 * few minutes only, while a human may approve a failed send again hours later.
 * (A crash between the far side accepting a part and its line being written
 * can still post that part twice; the window is one local write.)
 */
export interface SentParts {
  /** The far side's id for part `index` when it already went to `target` with this text. */
  sent(index: number, target: string, text: string): string | undefined;
  record(index: number, target: string, text: string, id: string): void;
}

interface Line {
  part: number;
  target: string;
  sha: string;
  id: string;
}

const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32);

export function sentParts(paths: RosterPaths, worker: string, key: string): SentParts {
  // the key is a gate id; anything else is hashed into a file name
  const id = /^[A-Za-z0-9_-]{1,64}$/.test(key) ? key : `k-${digest(key)}`;
  const file = sentPartsFile(paths, { worker, id });
  const lines: Line[] = [];
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    // nothing sent yet
  }
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    try {
      lines.push(JSON.parse(raw) as Line);
    } catch {
      // a line cut by a crash: that part counts as not sent
    }
  }
  return {
    sent: (index, target, part) =>
      lines.find((l) => l.part === index && l.target === target && l.sha === digest(part))?.id,
    record: (index, target, part, id) => {
      const line: Line = { part: index, target, sha: digest(part), id };
      mkdirSync(dirname(file), { recursive: true });
      const fd = openSync(file, "a", 0o600);
      try {
        writeSync(fd, `${JSON.stringify(line)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      lines.push(line);
    },
  };
}
