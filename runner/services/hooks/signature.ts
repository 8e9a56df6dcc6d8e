import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { WebhookScheme } from "../../ground/config/webhook-schema.ts";

/**
 * Whether a delivery was signed with the hook's secret, checked before
 * anything of it is read. Two schemes:
 *
 * - "github": `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw
 *   body (GitHub's own). GitHub signs no time, so a replay is stopped by its
 *   delivery id (`X-GitHub-Delivery`) and its signature, both remembered
 *   (deliveries.ts): the same body sent again under a new id is a replay too.
 * - "hmac-sha256", for any other sender: `X-Roster-Timestamp: <unix seconds>`,
 *   optionally `X-Roster-Delivery: <id>`, and `X-Roster-Signature:
 *   sha256=<hex>`, the HMAC-SHA256 of `<timestamp>.<id>.<raw body>` (id empty
 *   when none is sent). A timestamp more than 5 minutes from the host's clock
 *   is refused, and the id (or, without one, the signature) is remembered, so
 *   a captured delivery can't be sent again, now or later, nor sent again
 *   under another id.
 *
 * Signatures are compared in constant time, as bytes of equal length.
 */
export const REPLAY_WINDOW_SECS = 5 * 60;

export type Verdict =
  | {
      ok: true;
      delivery: string;
      event?: string;
      /** Every key a repeat of this delivery would be known by (the id, and for GitHub the signature). */
      keys: string[];
    }
  | { ok: false; reason: string };

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

const mac = (secret: string, parts: Array<string | Buffer>) => {
  const hmac = createHmac("sha256", secret);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
};

/** `sha256=<64 hex>` as bytes, or undefined when it isn't that. */
function presented(value: string | undefined): Buffer | undefined {
  const hex = /^sha256=([0-9a-fA-F]{64})$/.exec(value?.trim() ?? "")?.[1];
  return hex ? Buffer.from(hex, "hex") : undefined;
}

const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/** A delivery id as a sender gives it: printable, short, one line. */
const ID = /^[\x21-\x7e]{1,128}$/;

export function verify(
  scheme: WebhookScheme,
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  now: number = Date.now(),
): Verdict {
  return scheme === "github"
    ? verifyGithub(secret, headers, body)
    : verifyGeneric(secret, headers, body, now);
}

function verifyGithub(secret: string, headers: IncomingHttpHeaders, body: Buffer): Verdict {
  const signature = presented(header(headers, "x-hub-signature-256"));
  if (!signature) return { ok: false, reason: "no X-Hub-Signature-256: sha256=<hex> header" };
  if (!same(signature, mac(secret, [body])))
    return { ok: false, reason: "X-Hub-Signature-256 does not match the body" };
  const delivery = header(headers, "x-github-delivery") ?? "";
  const event = header(headers, "x-github-event") ?? "";
  if (!ID.test(delivery)) return { ok: false, reason: "no usable X-GitHub-Delivery header" };
  if (!/^[a-z_]{1,64}$/.test(event))
    return { ok: false, reason: "no usable X-GitHub-Event header" };
  return { ok: true, delivery, event, keys: [delivery, `mac:${signature.toString("hex")}`] };
}

function verifyGeneric(
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  now: number,
): Verdict {
  const signature = presented(header(headers, "x-roster-signature"));
  if (!signature) return { ok: false, reason: "no X-Roster-Signature: sha256=<hex> header" };
  const stamp = header(headers, "x-roster-timestamp") ?? "";
  if (!/^\d{1,12}$/.test(stamp))
    return { ok: false, reason: "no X-Roster-Timestamp header (unix seconds)" };
  const id = header(headers, "x-roster-delivery") ?? "";
  if (id && !ID.test(id)) return { ok: false, reason: "X-Roster-Delivery is not a usable id" };
  const expected = mac(secret, [`${stamp}.${id}.`, body]);
  if (!same(signature, expected))
    return {
      ok: false,
      reason: "X-Roster-Signature does not match timestamp, delivery id and body",
    };
  // only a signed timestamp is worth judging: a forged one says nothing
  const skew = Math.abs(now / 1000 - Number(stamp));
  if (skew > REPLAY_WINDOW_SECS)
    return {
      ok: false,
      reason: `X-Roster-Timestamp is ${Math.round(skew)} s from this host's clock (at most ${REPLAY_WINDOW_SECS} s)`,
    };
  const delivery = id || `mac:${signature.toString("hex")}`;
  return { ok: true, delivery, keys: [delivery] };
}

/** What a sender puts in X-Roster-Signature (for its docs, and for tests that sign as a sender would). */
export function signGeneric(
  secret: string,
  stamp: string,
  id: string,
  body: Buffer | string,
): string {
  return `sha256=${mac(secret, [`${stamp}.${id}.`, typeof body === "string" ? Buffer.from(body) : body]).toString("hex")}`;
}
