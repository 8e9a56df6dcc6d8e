import { type Static, Type } from "@sinclair/typebox";
import type { RetentionPolicy } from "../files/rotation/rotate.ts";
import { parseByteSize } from "../text/byte-size.ts";
import { AGE_PATTERN, ageMs } from "./store-limits.ts";

/**
 * `[retention]` in org.toml: how much of each log that grows with the
 * deployment is kept (files/rotation/). The top-level keys apply to every
 * log; `[retention.audit]`, `[retention.journal]` and `[retention.channel]`
 * change them for one kind.
 *
 * The defaults keep one log at no more than `max_file` live plus `keep_size`
 * rotated (80 MiB), and about ten times that in lines, since rotated files
 * are gzipped: a small team's deployment (a few workers and channels, some
 * twenty logs) stays under 2 GiB of logs however long it runs, and most
 * logs never come near it.
 */
const SIZE = { pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$", description: 'a size like "16m" or "1g"' };
const AGE = { pattern: AGE_PATTERN, description: 'an age like "12h" or "90d"' };

const RetentionKeys = {
  /** The live file is rotated once it holds this much. */
  max_file: Type.Optional(Type.String(SIZE)),
  /** …or once it has been live this long ("0d": by size only). */
  rotate_after: Type.Optional(Type.String(AGE)),
  /** Rotated files older than this are deleted. */
  keep: Type.Optional(Type.String(AGE)),
  /** Rotated files past this size in all (gzipped, as stored) are deleted, oldest first. */
  keep_size: Type.Optional(Type.String(SIZE)),
};

const RetentionKind = Type.Object(RetentionKeys, { additionalProperties: false });

export const RetentionSection = Type.Object(
  {
    ...RetentionKeys,
    audit: Type.Optional(RetentionKind),
    journal: Type.Optional(RetentionKind),
    channel: Type.Optional(RetentionKind),
  },
  { additionalProperties: false },
);
export type RetentionSection = Static<typeof RetentionSection>;

/** The kinds of log retention knows (work/retention/logs.ts lists each one's files). */
export type LogKind = "audit" | "journal" | "channel";

export const RETENTION_DEFAULTS = {
  max_file: "16m",
  rotate_after: "30d",
  keep: "365d",
  keep_size: "64m",
} as const;

/**
 * The spend ledger's floor: a month's budget window must be read whole from
 * it, so nothing of it younger than this goes (budget.ts reads across).
 */
export const LEDGER_FLOOR_MS = 32 * 86_400_000;

type Keys = { [K in keyof typeof RETENTION_DEFAULTS]?: string };

/** What retention keeps of a log of this kind: the kind's own keys, then the section's, then the defaults. */
export function retentionPolicy(
  section: RetentionSection | undefined,
  kind: LogKind,
  floorMs = 0,
): RetentionPolicy {
  const own: Keys = section?.[kind] ?? {};
  const pick = (key: keyof typeof RETENTION_DEFAULTS) =>
    own[key] ?? section?.[key] ?? RETENTION_DEFAULTS[key];
  const size = (key: "max_file" | "keep_size") =>
    parseByteSize(pick(key)) || parseByteSize(RETENTION_DEFAULTS[key]);
  const age = (key: "rotate_after" | "keep") =>
    ageMs(pick(key)) ?? ageMs(RETENTION_DEFAULTS[key]) ?? 0;
  return {
    maxFileBytes: size("max_file"),
    rotateAfterMs: age("rotate_after"),
    keepMs: age("keep"),
    keepBytes: size("keep_size"),
    floorMs,
  };
}
