import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Appends one JSON line to a log file (journal, audit, inbox, channel history)
 * in a single write() on an O_APPEND descriptor: concurrent writers, other
 * processes included, never tear or interleave a line.
 */
export function appendJsonLine(
  file: string,
  value: unknown,
  /** Files a box reads through a mount (the journal) must be readable by its user. */
  modes: AppendModes = { file: 0o600, dir: 0o700 },
): void {
  appendJsonLines(file, [value], modes);
}

export interface AppendModes {
  file: number;
  dir: number;
}

/** Several lines in the same single write(): a reader sees all of them or none. */
export function appendJsonLines(
  file: string,
  values: readonly unknown[],
  modes: AppendModes = { file: 0o600, dir: 0o700 },
): void {
  if (values.length === 0) return;
  mkdirSync(dirname(file), { recursive: true, mode: modes.dir });
  const fd = openSync(file, "a", modes.file);
  try {
    writeSync(fd, values.map((value) => `${JSON.stringify(value)}\n`).join(""));
  } finally {
    closeSync(fd);
  }
}
