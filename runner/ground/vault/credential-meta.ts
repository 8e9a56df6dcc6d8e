import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { RosterError } from "../errors.ts";
import { replaceFile } from "../files/atomic-replace.ts";

/**
 * A credential's age, kept beside it in data/vault/<name>.meta.json: when it
 * was set, by which command (and person), and when it expires where that is
 * known. A file of its own, never fields in the credential, so the gateway's
 * `{field}` templates can't render it into a request, and `connection ls`
 * and the metrics read it without the vault key. It holds no secret.
 */
export const CredentialMeta = Type.Object({
  set_at: Type.String(),
  /** The command, and who ran it: `connection secret by cli:alice`, `oauth refresh`. */
  set_by: Type.String(),
  expires_at: Type.Optional(Type.String()),
  /** An OAuth token the gateway refreshes itself: its expiry is no deadline for the operator. */
  renews: Type.Optional(Type.Boolean()),
  /** When the gateway last refreshed it (an OAuth token): `set_at` stays the sign-in. */
  refreshed_at: Type.Optional(Type.String()),
});
export type CredentialMeta = Static<typeof CredentialMeta>;

export interface CredentialOrigin {
  /** `login`, `connection secret`, `connection add`, `connection rotate`, `oauth refresh`. */
  command: string;
  /** `cli:<user>` where a person did it. */
  operator?: string;
  /** An expiry the operator gave (--expires); an OAuth token's own `expires` wins. */
  expiresAt?: Date;
  now?: Date;
}

/** The command the gateway names when it refreshes an OAuth token in place (credentials/inject.ts). */
export const REFRESH = "oauth refresh";

export function metaFile(dir: string, name: string): string {
  return join(dir, `${name}.meta.json`);
}

export async function writeCredentialMeta(
  dir: string,
  name: string,
  credential: Record<string, unknown>,
  origin: CredentialOrigin,
): Promise<void> {
  const own = typeof credential.expires === "number" ? new Date(credential.expires) : undefined;
  const expires = own ?? origin.expiresAt;
  const now = (origin.now ?? new Date()).toISOString();
  // a refresh is the gateway keeping a sign-in alive, not a new secret: its age is the sign-in's
  const before = origin.command === REFRESH ? readCredentialMeta(dir, name) : undefined;
  const meta: CredentialMeta = {
    set_at: before?.set_at ?? now,
    set_by:
      before?.set_by ??
      (origin.operator ? `${origin.command} by ${origin.operator}` : origin.command),
    ...(before ? { refreshed_at: now } : {}),
    ...(expires ? { expires_at: expires.toISOString() } : {}),
    ...(own && typeof credential.refresh === "string" ? { renews: true } : {}),
  };
  await replaceFile(metaFile(dir, name), `${JSON.stringify(meta)}\n`, { mode: 0o600 });
}

/** The record of age, undefined for a credential stored before ages were kept (or a damaged record). */
export function readCredentialMeta(dir: string, name: string): CredentialMeta | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(metaFile(dir, name), "utf8"));
    return Value.Check(CredentialMeta, parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** `--expires`: an RFC 3339 time, or a span from now (`30d`, `12h`, `2w`). */
export function parseExpires(text: string, now = new Date()): Date {
  const span = /^(\d+)([hdw])$/.exec(text.trim());
  if (span) {
    const hours = { h: 1, d: 24, w: 24 * 7 }[span[2] as "h" | "d" | "w"];
    return new Date(now.getTime() + Number(span[1]) * hours * 3_600_000);
  }
  const at = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(
    text.trim(),
  )
    ? new Date(text.trim())
    : undefined;
  if (!at || Number.isNaN(at.getTime()))
    throw new RosterError(
      `--expires ${text}: expected an RFC 3339 time (2027-03-01T00:00:00Z, or a date) or a span such as 30d, 12h, 2w`,
      { exitCode: 2 },
    );
  return at;
}

/** How near its end a credential is: what `connection ls` marks and the metrics export. */
export type ExpiryWord = "expired" | "expiring" | "ok";
export const EXPIRING_WITHIN_MS = 7 * 24 * 3_600_000;

export function expiryOf(
  meta: CredentialMeta | undefined,
  now = Date.now(),
): ExpiryWord | undefined {
  if (!meta?.expires_at || meta.renews) return undefined;
  const left = Date.parse(meta.expires_at) - now;
  return left <= 0 ? "expired" : left <= EXPIRING_WITHIN_MS ? "expiring" : "ok";
}

/** `3d`, `5h`, `12m`: an age or a time left, for a line a person reads. */
export function spanWords(ms: number): string {
  const abs = Math.abs(ms);
  if (abs >= 86_400_000) return `${Math.floor(abs / 86_400_000)}d`;
  if (abs >= 3_600_000) return `${Math.floor(abs / 3_600_000)}h`;
  return `${Math.max(0, Math.floor(abs / 60_000))}m`;
}
