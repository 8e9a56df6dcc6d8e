import type { ConfigError } from "./config-error.ts";
import { locateLine } from "./locate.ts";

/**
 * A deployment written for the public roster validates here with the meaning
 * it has there (docs/coming-from-public-roster.md). Where ours spells a thing
 * otherwise, or deliberately means it differently, the public spelling is
 * taken and `roster validate` says so in one line naming the file, the line,
 * the field and our spelling: never a silent difference, never a refusal of
 * what the public roster documents.
 */
export function publicNotice(
  notices: ConfigError[],
  at: { file: string; text: string; pointer: string; field: string },
  message: string,
): void {
  notices.push({
    file: at.file,
    line: locateLine(at.text, at.pointer),
    field: at.field,
    message,
  });
}

/** One file read for public spellings: what it says, and where its notices and errors go. */
export interface PublicFile {
  file: string;
  text: string;
  notices: ConfigError[];
  errors: ConfigError[];
}

const fieldOf = (pointer: string) => pointer.split("/").filter(Boolean).join(".");

/** A notice at a JSON pointer into the file. */
export function noteAt(at: PublicFile, pointer: string, message: string): void {
  publicNotice(at.notices, { ...at, pointer, field: fieldOf(pointer) }, message);
}

/** A public spelling with a value neither roster can take: an error, as any other. */
export function refuseAt(at: PublicFile, pointer: string, message: string): void {
  at.errors.push({
    file: at.file,
    line: locateLine(at.text, pointer),
    field: fieldOf(pointer),
    message,
  });
}

/** `value[key]` when it is a TOML table (a plain object), to be read and rewritten in place. */
export function tableOf(value: unknown, key: string): Record<string, unknown> | undefined {
  if (!isTable(value)) return undefined;
  const inner = value[key];
  return isTable(inner) ? inner : undefined;
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A whole number of at least `least`, as TOML gives it. */
export const isWhole = (value: unknown, least: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= least;
