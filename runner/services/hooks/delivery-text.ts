import type { IncomingHttpHeaders } from "node:http";
import type { WebhookRule } from "../../ground/config/webhook-schema.ts";

/**
 * What a verified delivery says, as the message a relayed task quotes
 * (work/tasks/relay.ts frames it as untrusted): the hook, the delivery id,
 * GitHub's event, action, repository and sender when it has them, then the
 * body as compact JSON (or text), cut to BODY_MAX_CHARS. Every part of it was
 * chosen by whoever made the sender send it, so it is only ever quoted.
 */
export const BODY_MAX_CHARS = 8_000;

export interface DeliveryText {
  /** The sender label the prompt quotes: `github:<event>`, or the hook's name. */
  from: string;
  message: string;
  /** GitHub's `action` when the body has one (for the audit line). */
  action?: string;
}

const text = (value: unknown, max = 200): string | undefined =>
  typeof value === "string" && value.trim() ? value.replace(/\s+/g, " ").slice(0, max) : undefined;

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;

/** The body as JSON when it is JSON (GitHub's form encoding: its `payload` field), else undefined. */
export function parseBody(headers: IncomingHttpHeaders, body: Buffer): unknown {
  const raw = body.toString("utf8");
  const type = String(headers["content-type"] ?? "").toLowerCase();
  const json = type.startsWith("application/x-www-form-urlencoded")
    ? (new URLSearchParams(raw).get("payload") ?? "")
    : raw;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

export function deliveryText(
  hook: Pick<WebhookRule, "name" | "scheme">,
  delivery: string,
  event: string | undefined,
  headers: IncomingHttpHeaders,
  body: Buffer,
): DeliveryText {
  const parsed = parseBody(headers, body);
  const action = text(field(parsed, "action"), 64);
  const repository = text(field(field(parsed, "repository"), "full_name"));
  const sender = text(field(field(parsed, "sender"), "login"));
  const shown = parsed === undefined ? body.toString("utf8") : JSON.stringify(parsed);
  const cut =
    shown.length > BODY_MAX_CHARS
      ? `${shown.slice(0, BODY_MAX_CHARS)}… (${shown.length - BODY_MAX_CHARS} more characters cut)`
      : shown;
  const lines = [
    `webhook: ${hook.name} (delivery ${delivery.startsWith("mac:") ? "without an id" : delivery})`,
    ...(event ? [`event: ${event}${action ? ` (action: ${action})` : ""}`] : []),
    ...(!event && action ? [`action: ${action}`] : []),
    ...(repository ? [`repository: ${repository}`] : []),
    ...(sender ? [`sender: ${sender}`] : []),
    `body (${parsed === undefined ? "text" : "JSON"}, ${body.length} bytes):`,
    cut,
  ];
  return {
    from: hook.scheme === "github" && event ? `github:${event}` : hook.name,
    message: lines.join("\n"),
    ...(action ? { action } : {}),
  };
}
