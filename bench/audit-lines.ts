/**
 * Door decisions for the console benches, written by the gateway's own
 * AuditLog: 40 hosts, subjects and runs in turn, one refusal in nine.
 */
import type { AuditLog } from "../runner/boundary/gateway/audit/audit.ts";
import type { RequestFacts } from "../runner/boundary/gateway/judging/request-facts.ts";

export const HOSTS = Array.from({ length: 40 }, (_, i) => `host${i}.example.com`);

export function writeDecisions(
  audit: AuditLog,
  from: number,
  count: number,
  workers: string[],
): void {
  for (let i = from; i < from + count; i++) {
    const facts: RequestFacts = {
      subject: `org/${workers[i % workers.length]}`,
      runId: `run-${i % 1000}`,
      origins: [],
      protocol: "https",
      method: i % 5 ? "GET" : "POST",
      host: HOSTS[i % HOSTS.length] ?? "x",
      port: 443,
      path: `/v1/items/${i}`,
      query: "",
      headers: { "user-agent": "bench", authorization: "Bearer x" },
      bodySize: i % 1000,
      mcp: null,
    };
    audit.record(facts, {
      verdict: i % 9 ? "allow" : "deny",
      rule: i % 9 ? "api" : undefined,
      status: i % 9 ? 200 : 403,
    });
  }
}
