import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { FollowingAppender } from "../../../ground/files/following-appender.ts";
import { parseByteSize } from "../../../ground/text/byte-size.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import type { McpOutcome } from "../mcp/outcome.ts";
import type { ModelUsage } from "../spend/usage.ts";
import { AUDIT_ORIGINS, cutHeaders, cutStrings } from "./cuts.ts";
import { Tripwire } from "./tripwire.ts";

/**
 * One JSON line per decision in audit/decisions.jsonl. Secrets never reach the
 * file: the values of credential-bearing headers are redacted and bodies are
 * never stored. Each line is one synchronous write() on an O_APPEND descriptor:
 * whole under any concurrency (other processes appending included), and on
 * disk before the response goes back, so a crash loses no decision. What a box
 * chose is cut to stated lengths first (cuts.ts): a line stays small.
 */
/** `gate`: an MCP tool call held for the approval desk (nothing was forwarded). */
export type AuditVerdict = "allow" | "deny" | "tunnel" | "gate";

/** How a forwarded body ended: whole, cut short upstream (FIN/RST, stall), or abandoned by the box. */
export type TransferOutcome = "complete" | "truncated" | "aborted";

export interface AuditOutcome {
  verdict: AuditVerdict;
  rule: string | undefined;
  status: number;
  spend?: Record<string, number>;
  injected?: string[];
  note?: string;
  /** Response body bytes passed to the box (forwarded exchanges and tunnels). */
  bytes?: number;
  outcome?: TransferOutcome;
  /** A model call's tokens as its provider reported them, and their price when known. */
  usage?: ModelUsage & { cost_usd?: number };
  /** A budget refusal: which cap, and when its window resets (a run stopped by it says so). */
  budget?: { detail: string; retry_after_secs: number };
  /** A forwarded tools/call whose answer reported a JSON-RPC error or a failed tool. */
  mcp_answer?: McpOutcome;
  /** The digest of the config that judged it (ground/config/config-digest.ts), taken when it was decided. */
  config?: string;
}

export interface DecisionRecord extends Omit<AuditOutcome, "rule"> {
  decision_id: string;
  ts: string;
  rule: string | null;
  subject: string | null;
  run_id: string | null;
  /** `page`: the run's renderer, not the run itself (caller.ts); absent for the run. */
  actor?: "page";
  /**
   * The channels the run's input came from, as its token says (absent: the
   * token names none): what a grant limited to a class of channels judged,
   * so `roster policy replay` can judge the line again.
   */
  origins?: string[];
  /** The request facts as judged (header values of credentials redacted). */
  request: Omit<RequestFacts, "subject" | "runId" | "origins" | "actor">;
}

const REDACTED = new Set([
  "authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
  "proxy-authorization",
]);

export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = REDACTED.has(name.toLowerCase()) ? "<redacted>" : value;
  }
  return out;
}

const configOf = (digest: string | undefined) => (digest ? { config: digest } : {});

let counter = 0;
function decisionId(): string {
  counter = (counter + 1) % 0xffffff;
  return `${process.hrtime.bigint().toString(16)}-${counter.toString(16)}`;
}

/**
 * The one writer of an exchange's audit line: whatever paths the exchange
 * takes (refused, forwarded, cut short, abandoned, the gateway stopping), at
 * most one line is written, so "one line per decision" holds by structure.
 */
export class DecisionLine {
  private held: AuditOutcome | undefined;
  private done = false;
  /** When the exchange began, for its duration in the door's metrics. */
  private readonly started = performance.now();

  constructor(
    private readonly log: AuditLog,
    private readonly facts: RequestFacts,
  ) {}

  /** Writes the line now; later calls are ignored. */
  write(outcome: AuditOutcome): void {
    if (this.done) return;
    this.done = true;
    this.log.release(this);
    this.log.record(this.facts, outcome, this.started);
  }

  /** The decision is made but the transfer goes on: written by `finish`, or as aborted if the gateway stops first. */
  hold(outcome: AuditOutcome): void {
    if (this.done) return;
    // the config that judged it, not one taken while the transfer went on
    const config = outcome.config ?? this.log.configDigest?.();
    this.held = config ? { ...outcome, config } : outcome;
    this.log.track(this);
  }

  finish(transfer: {
    outcome: TransferOutcome;
    bytes: number;
    note?: string;
    usage?: AuditOutcome["usage"];
    mcp_answer?: McpOutcome;
    /** What the meters that read the answer spent (added to what was spent before it). */
    spend?: Record<string, number>;
  }): void {
    const held = this.held;
    if (!held) return;
    const note = [held.note, transfer.note].filter(Boolean).join("; ");
    this.write({
      ...held,
      bytes: transfer.bytes,
      outcome: transfer.outcome,
      ...(note ? { note } : {}),
      ...(transfer.spend ? { spend: addSpends(held.spend ?? {}, transfer.spend) } : {}),
      ...(transfer.usage ? { usage: transfer.usage } : {}),
      ...(transfer.mcp_answer ? { mcp_answer: transfer.mcp_answer } : {}),
    });
  }

  /** For the log's shutdown: a held transfer the gateway is about to cut. */
  abandon(note: string): void {
    if (this.held) this.finish({ outcome: "aborted", bytes: 0, note });
  }
}

function addSpends(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const sum = { ...a };
  for (const [currency, amount] of Object.entries(b)) sum[currency] = (sum[currency] ?? 0) + amount;
  return sum;
}

/** The rule the door's refusal of a run whose audit is full names (admission.ts). */
export const AUDIT_FULL_RULE = "audit-full";

/** How the note of a run's last line begins: what follows it is the door's, not the grants'. */
export const AUDIT_FULL_NOTE = "this run's audit is full";

/** `[gateway] audit_max_per_run`'s default: what one run's requests may add to the audit log. */
export const AUDIT_MAX_PER_RUN_DEFAULT = "64m";
/** The share every line without a run (no door, no token: a host process) counts against. */
const UNIDENTIFIED = "";
/** Runs whose audit bytes are remembered at once; the one written to longest ago is forgotten first. */
const RUNS_COUNTED = 10_000;

export class AuditLog {
  /** Follows the file across a rotation (records/retention sweeps it). */
  private readonly out: FollowingAppender;
  private readonly open = new Set<DecisionLine>();
  /** Bytes each run's requests have added to the log (from this gateway's start). */
  private readonly written = new Map<string, number>();
  /** Runs past their share: their requests are refused (admission.ts) and not written. */
  private readonly full = new Set<string>();
  /** Marks each run a `sentinel-leak` line names, in a file of its own (tripwire.ts). */
  private readonly tripwire: Tripwire;

  /** Told of each line as it is written, with its exchange's seconds (the door's metrics and spans). */
  observer: ((record: DecisionRecord, seconds: number) => void) | undefined;
  /** The digest of the config judging now (the gateway's ConfigSource): each line names it. */
  configDigest: (() => string) | undefined;
  /** Awaited as the log closes: what the observer still holds goes out (the door's spans). */
  onClose: (() => Promise<unknown>) | undefined;

  /**
   * A box chooses how many requests its run makes, and each is a line on the
   * host's disk: past `maxPerRun` bytes a run's audit is full, one line says
   * so, and the door refuses the run's later requests (it serves nothing it
   * can't record) without writing them.
   */
  constructor(
    readonly dir: string,
    public maxPerRun = parseByteSize(AUDIT_MAX_PER_RUN_DEFAULT),
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.out = new FollowingAppender(join(dir, "decisions.jsonl"), 0o600);
    this.tripwire = new Tripwire(dir);
  }

  /** Whether this run's audit is full: the door refuses what it would add. */
  isFull(runId: string | undefined): boolean {
    return this.full.has(runId ?? UNIDENTIFIED);
  }

  /** A line for one exchange; see DecisionLine. */
  line(facts: RequestFacts): DecisionLine {
    return new DecisionLine(this, facts);
  }

  track(line: DecisionLine): void {
    this.open.add(line);
  }

  release(line: DecisionLine): void {
    this.open.delete(line);
  }

  record(facts: RequestFacts, outcome: AuditOutcome, started?: number): DecisionRecord {
    // headers first (in number), then every string of the line: a box chose most of them
    const record: DecisionRecord = cutStrings({
      decision_id: decisionId(),
      ts: new Date().toISOString(),
      verdict: outcome.verdict,
      rule: outcome.rule ?? null,
      subject: facts.subject ?? null,
      run_id: facts.runId ?? null,
      ...(facts.actor ? { actor: facts.actor } : {}),
      ...(facts.origins ? { origins: facts.origins.slice(0, AUDIT_ORIGINS) } : {}),
      ...configOf(outcome.config ?? this.configDigest?.()),
      request: {
        protocol: facts.protocol,
        method: facts.method,
        host: facts.host,
        port: facts.port,
        path: facts.path,
        query: facts.query,
        headers: cutHeaders(redactHeaders(facts.headers)),
        bodySize: facts.bodySize,
        mcp: facts.mcp,
      },
      status: outcome.status,
      ...(outcome.spend && Object.keys(outcome.spend).length ? { spend: outcome.spend } : {}),
      ...(outcome.injected?.length ? { injected: outcome.injected } : {}),
      ...(outcome.note ? { note: outcome.note } : {}),
      ...(outcome.outcome ? { outcome: outcome.outcome, bytes: outcome.bytes ?? 0 } : {}),
      ...(outcome.usage ? { usage: outcome.usage } : {}),
      ...(outcome.budget ? { budget: outcome.budget } : {}),
      ...(outcome.mcp_answer ? { mcp_answer: outcome.mcp_answer } : {}),
    });
    this.write(record);
    this.tripwire.observe(record);
    if (started !== undefined) this.observer?.(record, (performance.now() - started) / 1000);
    return record;
  }

  /** One line, within its run's share of the log. */
  private write(record: DecisionRecord): void {
    if (this.out.closed) return;
    const text = `${JSON.stringify(record)}\n`;
    // lines no run's token or door names share one share: nobody may write without bound
    const runId = record.run_id ?? UNIDENTIFIED;
    if (this.full.has(runId)) return;
    const before = this.written.get(runId) ?? 0;
    const bytes = Buffer.byteLength(text);
    if (before + bytes <= this.maxPerRun) {
      // kept in the order last written: the first key is the run written to longest ago
      this.written.delete(runId);
      this.written.set(runId, before + bytes);
      if (this.written.size > RUNS_COUNTED) {
        const oldest = this.written.keys().next().value;
        if (oldest !== undefined) this.written.delete(oldest);
      }
      this.out.write(text);
      return;
    }
    // the line that crosses is the run's last: it says so, and nothing of the run follows it
    this.written.delete(runId);
    this.full.add(runId);
    const full = `${AUDIT_FULL_NOTE} (${before} bytes; audit_max_per_run ${this.maxPerRun}): its later requests are refused and not written`;
    this.out.write(
      `${JSON.stringify({ ...record, note: record.note ? `${record.note}; ${full}` : full })}\n`,
    );
  }

  async close(): Promise<void> {
    for (const line of [...this.open]) line.abandon("the gateway stopped mid-transfer");
    this.out.close();
    await this.tripwire.flush();
    await this.onClose?.();
  }
}
