import { join } from "node:path";
import { errorMessage } from "../../../ground/errors.ts";
import { appendJsonLine } from "../../../ground/files/append-line.ts";
import { withFileLockWaiting } from "../../../ground/files/file-lock.ts";
import { REFRESH } from "../../../ground/vault/credential-meta.ts";
import { writeVaultCredential } from "../../../ground/vault/vault-file.ts";
import type { Upstreams } from "../upstream/pools.ts";
import { candidateFor } from "./candidate.ts";
import { refreshAccessToken, TokenRefusal } from "./token-endpoint.ts";
import { type Credential, readCredential } from "./vault.ts";

/**
 * The vault as admission sees it: a credential ready to inject. An OAuth
 * credential — `access`, `refresh`, `expires` (ms since the epoch) and
 * `token_url`, with `client_id`/`client_secret` when the provider wants them
 * (sent in the form, or as HTTP Basic when `client_auth` is "basic") —
 * is refreshed by the gateway once it is within a minute of expiring:
 *
 * - once per credential however many requests wait (they share one refresh
 *   in this process, and a lock beside the file makes gateways sharing the
 *   vault take turns, the later one finding the token already fresh);
 * - the new token written with the atomic replace, so a gateway killed
 *   mid-refresh leaves the old file or the new one, whole;
 * - each refresh written to audit/credentials.jsonl: name, outcome, new
 *   expiry, never a token;
 * - a failed refresh answered 503 naming the credential while the old token
 *   has expired (until then it still works, and is used), and not tried again
 *   for RETRY_AFTER_MS unless the vault file gets a new refresh token.
 */
export type Ready =
  | { kind: "ok"; credential: Credential }
  | { kind: "missing" }
  /** A sealed file the vault key does not open: the reason names the file. */
  | { kind: "unreadable"; reason: string }
  | { kind: "refresh-failed"; reason: string };

/** How long before its expiry a token is refreshed. */
export const REFRESH_EARLY_MS = 60_000;
/** How long a failed refresh is remembered before the endpoint is asked again. */
export const RETRY_AFTER_MS = 30_000;
/** How long a request waits for another gateway's refresh of the same credential. */
const LOCK_WAIT_MS = 30_000;

export interface CredentialsOptions {
  vaultDir: string;
  auditDir: string;
  upstreams: Upstreams;
  now?: () => number;
}

export class Credentials {
  private readonly flights = new Map<string, Promise<Ready>>();
  private readonly failures = new Map<
    string,
    { refresh: unknown; until: number; reason: string }
  >();
  private readonly now: () => number;

  constructor(private readonly options: CredentialsOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * The credential to inject now: as stored, or refreshed first when it is
   * about to expire. A `connection rotate` check's run gets the candidate
   * secret instead (candidate.ts), never refreshed nor stored.
   */
  ready(name: string, runId?: string): Ready | Promise<Ready> {
    let credential: Credential | undefined;
    try {
      const candidate = runId ? candidateFor(this.options.vaultDir, runId, name) : undefined;
      if (candidate) return { kind: "ok", credential: candidate };
      credential = readCredential(this.options.vaultDir, name);
    } catch (error) {
      return { kind: "unreadable", reason: errorMessage(error) };
    }
    if (!credential) return { kind: "missing" };
    if (!refreshDue(credential, this.now())) return { kind: "ok", credential };
    const failed = this.failures.get(name);
    if (failed && failed.refresh === credential.refresh && failed.until > this.now())
      return this.fallback(credential, failed.reason);
    // read and joined in one turn: a flight leaves the map only after its file is replaced
    let flight = this.flights.get(name);
    if (!flight) {
      flight = this.refresh(name).finally(() => this.flights.delete(name));
      this.flights.set(name, flight);
    }
    return flight;
  }

  private refresh(name: string): Promise<Ready> {
    const { vaultDir } = this.options;
    const lock = join(vaultDir, `.${name}.lock`);
    return withFileLockWaiting(lock, `credential "${name}"`, LOCK_WAIT_MS, async () => {
      // read again under the lock: another gateway may have refreshed it meanwhile
      let current: Credential | undefined;
      try {
        current = readCredential(vaultDir, name);
      } catch (error) {
        return { kind: "unreadable", reason: errorMessage(error) } as const;
      }
      if (!current) return { kind: "missing" } as const;
      if (!refreshDue(current, this.now())) return { kind: "ok", credential: current } as const;
      try {
        const next = await this.exchange(name, current);
        await writeVaultCredential(vaultDir, name, next, { command: REFRESH });
        this.failures.delete(name);
        this.audit({ credential: name, outcome: "refreshed", expires: next.expires ?? null });
        return { kind: "ok", credential: next } as const;
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.failures.set(name, {
          refresh: current.refresh,
          until: this.now() + RETRY_AFTER_MS,
          reason,
        });
        this.audit({ credential: name, outcome: "failed", reason });
        return this.fallback(current, reason);
      }
    }).catch((error: unknown) => ({
      kind: "refresh-failed" as const,
      reason: error instanceof Error ? error.message : String(error),
    }));
  }

  /** Asks the token endpoint; the credential as it will be stored. */
  private async exchange(name: string, current: Credential): Promise<Credential> {
    const where = `data/vault/${name}.json`;
    const refresh = current.refresh;
    if (typeof refresh !== "string" || refresh.length === 0)
      throw new TokenRefusal(`${where}: refresh must be a non-empty string`);
    const tokenUrl = httpsUrl(current.token_url);
    if (!tokenUrl) throw new TokenRefusal(`${where}: token_url must be an https:// URL`);
    for (const field of ["client_id", "client_secret"] as const) {
      const value = current[field];
      if (value !== undefined && typeof value !== "string")
        throw new TokenRefusal(`${where}: ${field} must be a string`);
    }
    const auth = current.client_auth;
    if (auth !== undefined && auth !== "body" && auth !== "basic")
      throw new TokenRefusal(`${where}: client_auth must be "body" or "basic"`);
    const clientId = current.client_id;
    const clientSecret = current.client_secret;
    const granted = await refreshAccessToken(this.options.upstreams, {
      tokenUrl,
      refreshToken: refresh,
      client: {
        ...(typeof clientId === "string" ? { id: clientId } : {}),
        ...(typeof clientSecret === "string" ? { secret: clientSecret } : {}),
        ...(auth !== undefined ? { auth } : {}),
      },
    });
    const next: Credential = { ...current, access: granted.access };
    if (granted.refresh) next.refresh = granted.refresh;
    // no lifetime given: the token is taken as lasting, and refreshed no more until one is stored
    if (granted.expiresInSecs !== undefined)
      next.expires = this.now() + Math.round(granted.expiresInSecs * 1000);
    else delete next.expires;
    return next;
  }

  /** A failed refresh: the old token while it still works, else the failure. */
  private fallback(credential: Credential, reason: string): Ready {
    const expires = credential.expires;
    return typeof expires === "number" && expires > this.now()
      ? { kind: "ok", credential }
      : { kind: "refresh-failed", reason };
  }

  private audit(entry: Record<string, unknown>): void {
    try {
      appendJsonLine(join(this.options.auditDir, "credentials.jsonl"), {
        ts: new Date(this.now()).toISOString(),
        ...entry,
      });
    } catch {
      // a full disk must not turn a working token into an outage; the refresh stands
    }
  }
}

/**
 * Due for a refresh: it holds a refresh token and an expiry within
 * REFRESH_EARLY_MS. An `expires` that is not a number with a refresh token
 * beside it is due too: the refresh stores a number in its place.
 */
export function refreshDue(credential: Credential, now: number): boolean {
  if (credential.refresh === undefined) return false;
  const expires = credential.expires;
  if (expires === undefined) return false;
  return typeof expires !== "number" || expires - now <= REFRESH_EARLY_MS;
}

function httpsUrl(value: unknown): URL | undefined {
  if (typeof value !== "string") return undefined;
  try {
    const url = new URL(value);
    return url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}
