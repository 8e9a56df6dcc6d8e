import { Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { workerOfSubject, workerSubject } from "../../../ground/config/subject.ts";
import { type BoundedLines, eachBoundedLine } from "../../../ground/files/bounded-lines.ts";
import { readSegment } from "../../../ground/files/rotation/read-across.ts";
import { SETTLE_MS } from "../../../ground/files/rotation/rotate.ts";
import { logSegments, type Segment } from "../../../ground/files/rotation/segments.ts";
import type { DecisionRecord } from "../audit/audit.ts";
import { Rejudge, same } from "./replay-judge.ts";
import { type Decided, requestSaid, whatTheLineSays } from "./replay-record.ts";

/**
 * `roster policy replay`: every request the audit log recorded, judged again
 * by the door's own ruling under a config (the deployment's, or a draft's),
 * and each decision that would flip listed by worker and by the rule under
 * the old and the new decision, with counts and the three latest examples.
 * The log is streamed (eachBoundedLine), across the files it was rotated
 * into, oldest first (eachLogLine): memory holds the groups, never the log. What the line says was decided is replay-record.ts; judging it again
 * with what the line no longer keeps is replay-judge.ts. A line that can't be
 * judged again is counted under its reason, never guessed.
 */
export interface ReplayOptions {
  /** Only lines written at or after this time (ms since the epoch). */
  since?: number;
  /** Only this worker's requests. */
  worker?: string;
  /** A line longer than this is skipped and counted (lines are bounded far below it: audit/cuts.ts). */
  maxLineBytes?: number;
}

export interface ReplayExample {
  ts: string;
  run_id: string | null;
  /** Method and URL. */
  request: string;
}

/** Decisions of one worker that went from one verdict and rule to another. */
export interface ReplayGroup {
  /** The worker that sent them; empty when no worker did (no token). */
  worker: string;
  from: Decided;
  to: Decided;
  count: number;
  /** The latest three. */
  examples: ReplayExample[];
}

export interface NotReplayed {
  reason: string;
  count: number;
  examples: ReplayExample[];
}

export interface ReplayReport {
  /** Lines read from the log (decisions and anything else in it). */
  lines: number;
  /** Door decisions within --since and --worker. */
  decisions: number;
  replayed: number;
  unchanged: number;
  /** Decisions whose verdict would change, and their groups. */
  flipped: number;
  flips: ReplayGroup[];
  /** Decisions with the same verdict under another rule, and their groups. */
  reruled: number;
  reruledGroups: ReplayGroup[];
  /** Decisions that were not the policy's or can't be judged again, by reason. */
  notReplayed: NotReplayed[];
  skipped: {
    /** Longer than maxLineBytes. */
    tooLong: number;
    /** Not JSON, or not the shape of a decision. */
    unreadable: number;
    /** The action host's own records (dispositions), which share the file. */
    notDecisions: number;
  };
  /** Groups past the most a report lists (their decisions are in the counts). */
  groupsLeftOut: number;
}

export const MAX_LINE_BYTES = 256 * 1024;
/** Groups (and reasons) a report keeps: a log of many workers and rules still fits in memory. */
const MAX_GROUPS = 1000;
const EXAMPLES = 3;

export function replayLog(
  file: string,
  config: LoadedConfig,
  options: ReplayOptions = {},
): ReplayReport {
  const rejudge = new Rejudge(config);
  const report: ReplayReport = {
    lines: 0,
    decisions: 0,
    replayed: 0,
    unchanged: 0,
    flipped: 0,
    flips: [],
    reruled: 0,
    reruledGroups: [],
    notReplayed: [],
    skipped: { tooLong: 0, unreadable: 0, notDecisions: 0 },
    groupsLeftOut: 0,
  };
  const flips = new Groups();
  const reruled = new Groups();
  const reasons = new Map<string, NotReplayed>();
  const subject = options.worker ? workerSubject(options.worker) : undefined;
  const since = options.since;
  // a deployment no box has used yet has no log: nothing to replay
  eachLogLine(file, options.maxLineBytes ?? MAX_LINE_BYTES, since, {
    tooLong: () => {
      report.lines++;
      report.skipped.tooLong++;
    },
    line: (text) => {
      report.lines++;
      // cheap looks first: most lines of a long log are outside the window or another worker's
      if (since !== undefined) {
        const ts = TS.exec(text.slice(0, 160))?.[1];
        if (ts !== undefined && Date.parse(ts) < since) return;
      }
      if (subject && !text.includes(`"subject":${JSON.stringify(subject)}`)) return;
      const record = decisionOf(text);
      if (record === "other") return void report.skipped.notDecisions++;
      if (!record) return void report.skipped.unreadable++;
      if (since !== undefined && !(Date.parse(record.ts) >= since)) return;
      if (subject && record.subject !== subject) return;
      report.decisions++;
      const was = whatTheLineSays(record);
      const now = was.kind === "decided" ? rejudge.judge(record) : was;
      if (was.kind === "not" || now.kind === "not") {
        const reason = was.kind === "not" ? was.reason : now.kind === "not" ? now.reason : "";
        let seen = reasons.get(reason);
        if (!seen && reasons.size < MAX_GROUPS) {
          seen = { reason, count: 0, examples: [] };
          reasons.set(reason, seen);
        }
        if (!seen) return void report.groupsLeftOut++;
        seen.count++;
        keepExample(seen.examples, record);
        return;
      }
      report.replayed++;
      if (same(was.decided, now.decided)) return void report.unchanged++;
      const flip = was.decided.verdict !== now.decided.verdict;
      if (flip) report.flipped++;
      else report.reruled++;
      const kept = (flip ? flips : reruled).add(record, was.decided, now.decided);
      if (!kept) report.groupsLeftOut++;
    },
  });
  report.flips = flips.sorted();
  report.reruledGroups = reruled.sorted();
  report.notReplayed = [...reasons.values()].sort((a, b) => b.count - a.count);
  return report;
}

/**
 * Every line of the log and of the files rotated out of it, oldest first,
 * each bounded as eachBoundedLine bounds it; the files rotated out before
 * `since` hold no line as new and are not read (the door may still append
 * to the file it had open for a moment after the rename: SETTLE_MS).
 */
function eachLogLine(
  file: string,
  maxLineBytes: number,
  since: number | undefined,
  reader: BoundedLines,
): void {
  const gzipped = (segment: Segment) =>
    readSegment(segment, (text) =>
      Buffer.byteLength(text) > maxLineBytes ? reader.tooLong() : reader.line(text),
    );
  for (const segment of logSegments(file)) {
    const rotatedAt = segment.rotatedAt;
    if (since !== undefined && rotatedAt !== undefined && rotatedAt < since - SETTLE_MS) continue;
    if (segment.compressed) {
      gzipped(segment);
      continue;
    }
    try {
      eachBoundedLine(segment.path, maxLineBytes, reader);
    } catch {
      // gzipped between listing and reading: the same lines, in the .gz
      if (rotatedAt !== undefined)
        gzipped({ ...segment, path: `${segment.path}.gz`, compressed: true });
    }
  }
}

/** The line's ts, read before the whole line is parsed (the gateway writes it second). */
const TS = /"ts":"([^"]{1,40})"/;

/** Groups by worker and by the verdicts and rules before and after. */
class Groups {
  private readonly groups = new Map<string, ReplayGroup>();

  /** False when the group is past the most kept. */
  add(record: DecisionRecord, from: Decided, to: Decided): boolean {
    const worker = record.subject ? workerOfSubject(record.subject) : "";
    const key = JSON.stringify([worker, from.verdict, from.rule, to.verdict, to.rule]);
    let group = this.groups.get(key);
    if (!group) {
      if (this.groups.size >= MAX_GROUPS) return false;
      group = { worker, from, to, count: 0, examples: [] };
      this.groups.set(key, group);
    }
    group.count++;
    keepExample(group.examples, record);
    return true;
  }

  /** By worker, then the largest first. */
  sorted(): ReplayGroup[] {
    return [...this.groups.values()].sort(
      (a, b) => a.worker.localeCompare(b.worker) || b.count - a.count,
    );
  }
}

function keepExample(examples: ReplayExample[], record: DecisionRecord): void {
  examples.push({ ts: record.ts, run_id: record.run_id, request: requestSaid(record) });
  if (examples.length > EXAMPLES) examples.shift();
}

/**
 * What replay reads of a line: the shape the gateway writes (audit.ts
 * DecisionRecord), checked so a line of another shape is counted, not judged.
 */
const ReplayedLine = TypeCompiler.Compile(
  Type.Object({
    ts: Type.String(),
    verdict: Type.String(),
    rule: Type.Union([Type.String(), Type.Null()]),
    subject: Type.Union([Type.String(), Type.Null()]),
    run_id: Type.Union([Type.String(), Type.Null()]),
    actor: Type.Optional(Type.Literal("page")),
    origins: Type.Optional(Type.Array(Type.String())),
    status: Type.Number(),
    note: Type.Optional(Type.String()),
    request: Type.Object({
      protocol: Type.Union([Type.Literal("http"), Type.Literal("https")]),
      method: Type.String(),
      host: Type.String(),
      port: Type.Number(),
      path: Type.String(),
      query: Type.String(),
      headers: Type.Record(Type.String(), Type.String()),
      bodySize: Type.Number(),
      mcp: Type.Union([
        Type.Object({ method: Type.String(), tool: Type.Optional(Type.String()) }),
        Type.Null(),
      ]),
    }),
  }),
);

/** A door decision from a line; "other" for a line of another kind; undefined when unreadable. */
function decisionOf(text: string): DecisionRecord | "other" | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  // the action host's dispositions share the file (view.ts)
  if (!("request" in value)) return "other";
  return ReplayedLine.Check(value) ? (value as DecisionRecord) : undefined;
}
