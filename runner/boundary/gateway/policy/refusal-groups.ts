import { isIP } from "node:net";
import { join } from "node:path";
import { workerOfSubject, workerSubject } from "../../../ground/config/subject.ts";
import {
  eachSnapshotLine,
  type LogSnapshot,
  snapshotOf,
} from "../../../ground/files/log-snapshot.ts";
import type { DecisionRecord } from "../audit/audit.ts";
import type { PolicyRequest } from "./check.ts";
import { grantHostProblem } from "./grant-text.ts";

/**
 * The refusals of the audit log put in groups a grant could answer: one
 * group per worker and host, with the methods, protocols and the longest
 * common path prefix its requests had (what `roster gateway log --denied
 * --suggest` suggests from). Only a refusal the grants decided — no grant
 * matched — can be answered by a grant; every other refusal (a budget, a
 * missing credential, a full audit share, a closed host service, a page's
 * limits, a bad body, an upstream's failure, a rule that refuses on
 * purpose) is counted with the reason no grant would change it.
 */
export interface RefusalGroup {
  worker: string;
  host: string;
  count: number;
  methods: Set<string>;
  protocols: Set<"http" | "https">;
  /** The longest common path prefix so far, in segments, and whether every path was this one. */
  segments: string[];
  path: string;
  samePath: boolean;
  lastTs: string;
}

export interface Unanswered {
  worker: string | undefined;
  host: string;
  why: string;
  count: number;
}

export interface GroupFilter {
  /** Only this worker's refusals. */
  worker?: string;
  /** Only this run's (any prefix of its id). */
  run?: string;
}

const CUT = /…\[\d+ more characters cut\]$/;

/** A path as it can be judged again: an audit line's cut one keeps what came before its last `/`. */
export function judgedPath(path: string): string {
  if (!CUT.test(path)) return path;
  const kept = path.replace(CUT, "");
  return kept.slice(0, kept.lastIndexOf("/") + 1) || "/";
}

/** Why no grant would let this refused line through; undefined when a grant could. */
export function notForAGrant(
  record: DecisionRecord,
  grantNames: ReadonlySet<string>,
): string | undefined {
  const { request } = record;
  if (record.verdict !== "deny") {
    if (record.note === "budget") return "a budget's cap refused them after a grant allowed them";
    if (record.note === "credential-outage")
      return "a grant allowed them; its credential could not be had";
    return `a grant allowed them; then the upstream failed (${record.note ?? record.status})`;
  }
  if (record.rule !== null)
    return grantNames.has(record.rule)
      ? `the grant "${record.rule}" refuses them on purpose: change that rule, not add one`
      : `refused under rule "${record.rule}", which no grant overrides`;
  if (record.status !== 403)
    return `refused ${record.status} before any grant was asked (${record.note ?? "a request or body the door can't judge"})`;
  if (record.note) return `refused for another reason: ${record.note}`;
  if (!record.subject?.startsWith("org/")) return "no worker sent them: a grant has nobody to name";
  if (request.mcp) return "MCP calls: grant their tools by name (match.mcp), see gateway.md";
  if (request.method === "CONNECT" || !request.path)
    return "raw tunnels: only a tunnel grant passes them";
  const hostProblem = grantHostProblem(request.host);
  if (hostProblem) return hostProblem.slice(hostProblem.indexOf(": ") + 2);
  return undefined;
}

/** The request a refused line was, as `policyCheck` asks it again (cut paths where they still match). */
export function requestOfLine(record: DecisionRecord): PolicyRequest {
  const { request } = record;
  const host = isIP(request.host) === 6 ? `[${request.host}]` : request.host;
  const path = judgedPath(request.path).split("/").map(encodeURIComponent).join("/");
  const query = request.query && !CUT.test(request.query) ? `?${request.query}` : "";
  return {
    worker: workerOfSubject(record.subject ?? ""),
    method: request.method,
    url: `${request.protocol}://${host}:${request.port}${path}${query}`,
    headers: request.headers,
    // a line keeps every origin; a check asks from one, which is all a run from one channel has
    ...(record.origins?.length === 1 && record.origins[0] ? { channel: record.origins[0] } : {}),
  };
}

const segmentsOf = (path: string) => path.slice(1).split("/");

/** Groups built as the log is read, so the log is never held whole. */
export class RefusalGroups {
  readonly groups = new Map<string, RefusalGroup>();
  readonly unanswered = new Map<string, Unanswered>();

  constructor(private readonly grantNames: ReadonlySet<string>) {}

  static key(worker: string, host: string): string {
    return `${worker}\u0000${host}`;
  }

  /** The group a refused line belongs to, or why it belongs to none (counted). */
  add(record: DecisionRecord): void {
    const why = notForAGrant(record, this.grantNames);
    const worker = record.subject ? workerOfSubject(record.subject) : undefined;
    const host = record.request.host;
    if (why) {
      const key = `${worker ?? ""}\u0000${host}\u0000${why}`;
      const seen = this.unanswered.get(key) ?? { worker, host, why, count: 0 };
      seen.count++;
      this.unanswered.set(key, seen);
      return;
    }
    const path = judgedPath(record.request.path);
    const key = RefusalGroups.key(worker ?? "", host);
    const group = this.groups.get(key);
    if (!group) {
      this.groups.set(key, {
        worker: worker ?? "",
        host,
        count: 1,
        methods: new Set([record.request.method]),
        protocols: new Set([record.request.protocol]),
        segments: segmentsOf(path),
        path,
        samePath: true,
        lastTs: record.ts,
      });
      return;
    }
    group.count++;
    group.methods.add(record.request.method);
    group.protocols.add(record.request.protocol);
    group.lastTs = record.ts;
    if (path === group.path) return;
    group.samePath = false;
    const next = segmentsOf(path);
    let common = 0;
    while (
      common < group.segments.length &&
      common < next.length &&
      group.segments[common] === next[common]
    )
      common++;
    group.segments = group.segments.slice(0, common);
  }
}

/**
 * The narrowest prefix that admits every path of a group: the one path
 * itself when there was one, else the common segments ending at a `/`.
 */
export function prefixOf(group: RefusalGroup): string {
  if (group.samePath) return group.path;
  const kept = group.segments.filter(
    (segment, at) => segment !== "" || at < group.segments.length - 1,
  );
  return kept.length ? `/${kept.join("/")}/` : "/";
}

/**
 * Each refused decision the filter names in the log as it stood at the
 * snapshot (its rotated files, then the live file as far as it went), read
 * a chunk at a time: the suggestion reads the same lines twice (grouping,
 * then verifying), so a line written meanwhile is in neither, and a
 * rotation meanwhile changes neither (files/log-snapshot.ts).
 */
export function eachRefusal(
  snapshot: LogSnapshot,
  filter: GroupFilter,
  take: (record: DecisionRecord) => void,
): void {
  const subject = filter.worker ? workerSubject(filter.worker) : undefined;
  eachSnapshotLine(snapshot, (line) => {
    if (!line.includes('"status":4') && !line.includes('"status":5')) return;
    if ((subject && !line.includes(`"${subject}"`)) || (filter.run && !line.includes(filter.run)))
      return;
    let record: DecisionRecord;
    try {
      record = JSON.parse(line) as DecisionRecord;
    } catch {
      return;
    }
    // an upstream's own 4xx or 5xx is an answer, not the door's refusal
    if (!record.request || record.status < 400 || (record.verdict !== "deny" && !record.note))
      return;
    if (subject && record.subject !== subject) return;
    if (filter.run && !(record.run_id ?? "").startsWith(filter.run)) return;
    take(record);
  });
}

/** The decision log now: what both readings read. */
export function logSnapshot(auditDir: string): LogSnapshot {
  return snapshotOf(join(auditDir, "decisions.jsonl"));
}
