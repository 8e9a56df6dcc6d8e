import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Legible refusals: a status, `x-roster-verdict`, the deciding rule, and a JSON
 * body a model can act on. Never a hang, never a bare reset.
 */
export type VerdictHeader = "deny" | "budget" | "credential-outage";

export interface Refusal {
  status: number;
  verdict?: VerdictHeader;
  rule?: string | undefined;
  retryAfterSeconds?: number;
  body: Record<string, unknown>;
}

export function denied(
  rule: string | undefined,
  hint: string,
  error = "denied by gateway (deny)",
): Refusal {
  return { status: 403, verdict: "deny", rule, body: { error, rule: rule ?? null, hint } };
}

export function refusalHeaders(refusal: Refusal): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (refusal.verdict) headers["x-roster-verdict"] = refusal.verdict;
  if (refusal.rule) headers["x-roster-rule"] = refusal.rule;
  if (refusal.retryAfterSeconds !== undefined)
    headers["retry-after"] = String(refusal.retryAfterSeconds);
  return headers;
}

export function sendRefusal(
  res: ServerResponse,
  refusal: Refusal,
  options: { close?: boolean } = {},
): void {
  const body = JSON.stringify(refusal.body);
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res.writeHead(refusal.status, {
    ...refusalHeaders(refusal),
    "content-length": Buffer.byteLength(body),
    ...(options.close ? { connection: "close" } : {}),
  });
  res.end(body);
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  413: "Payload Too Large",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** A refusal as the bytes of a whole HTTP/1.1 response that closes its connection. */
export function rawRefusal(refusal: Refusal): string {
  const body = JSON.stringify(refusal.body);
  const headers = {
    ...refusalHeaders(refusal),
    "content-length": String(Buffer.byteLength(body)),
    connection: "close",
  };
  const head = [
    `HTTP/1.1 ${refusal.status} ${REASONS[refusal.status] ?? "Error"}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join("\r\n");
  return `${head}\r\n\r\n${body}`;
}

/** A refusal written straight onto a raw socket (CONNECT replies, upgrades, parse errors). */
export function writeRawRefusal(socket: Duplex, refusal: Refusal): void {
  if (socket.destroyed) return;
  socket.end(rawRefusal(refusal));
}
