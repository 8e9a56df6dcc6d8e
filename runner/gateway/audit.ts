import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { RequestFacts } from "./request-facts.ts";

/**
 * One JSON line per decision in audit/decisions.jsonl. Secrets never reach the
 * file: the values of credential-bearing headers are redacted and bodies are
 * never stored. Each line is one synchronous write() on an O_APPEND descriptor:
 * whole under any concurrency (other processes appending included), and on
 * disk before the response goes back, so a crash loses no decision.
 */
export type AuditVerdict = "allow" | "deny" | "tunnel";

export interface DecisionRecord {
  decision_id: string;
  ts: string;
  verdict: AuditVerdict;
  rule: string | null;
  subject: string | null;
  run_id: string | null;
  /** The request facts as judged (header values of credentials redacted). */
  request: Omit<RequestFacts, "subject" | "runId">;
  status: number;
  spend?: Record<string, number>;
  injected?: string[];
  note?: string;
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

let counter = 0;
function decisionId(): string {
  counter = (counter + 1) % 0xffffff;
  return `${process.hrtime.bigint().toString(16)}-${counter.toString(16)}`;
}

export class AuditLog {
  private fd: number | undefined;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.fd = openSync(join(dir, "decisions.jsonl"), "a", 0o600);
  }

  record(
    facts: RequestFacts,
    outcome: {
      verdict: AuditVerdict;
      rule: string | undefined;
      status: number;
      spend?: Record<string, number>;
      injected?: string[];
      note?: string;
    },
  ): DecisionRecord {
    const record: DecisionRecord = {
      decision_id: decisionId(),
      ts: new Date().toISOString(),
      verdict: outcome.verdict,
      rule: outcome.rule ?? null,
      subject: facts.subject ?? null,
      run_id: facts.runId ?? null,
      request: {
        protocol: facts.protocol,
        method: facts.method,
        host: facts.host,
        port: facts.port,
        path: facts.path,
        query: facts.query,
        headers: redactHeaders(facts.headers),
        bodySize: facts.bodySize,
        mcp: facts.mcp,
      },
      status: outcome.status,
      ...(outcome.spend && Object.keys(outcome.spend).length ? { spend: outcome.spend } : {}),
      ...(outcome.injected?.length ? { injected: outcome.injected } : {}),
      ...(outcome.note ? { note: outcome.note } : {}),
    };
    if (this.fd !== undefined) writeSync(this.fd, `${JSON.stringify(record)}\n`);
    return record;
  }

  async close(): Promise<void> {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
