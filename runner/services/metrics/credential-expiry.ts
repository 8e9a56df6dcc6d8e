import { Gauge, type Registry } from "prom-client";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { readCredentialMeta } from "../../ground/vault/credential-meta.ts";
import { vaultNames } from "../../ground/vault/vault-file.ts";

/**
 * Seconds until each vault credential with a known expiry stops working
 * (negative once it has): read from its age record, never from the secret,
 * so a scrape needs no vault key and can leak no value. An alert on it warns
 * before a token stops a worker at night.
 */
export function registerCredentialExpiry(registry: Registry, paths: RosterPaths): void {
  new Gauge({
    name: "roster_credential_expires_in_seconds",
    help: "Seconds until a vault credential expires (negative: expired), by credential name; only those with a known expiry",
    labelNames: ["credential"],
    registers: [registry],
    collect() {
      this.reset();
      const now = Date.now();
      for (const name of vaultNames(paths.vault)) {
        const expires = readCredentialMeta(paths.vault, name)?.expires_at;
        if (expires) this.set({ credential: name }, Math.round((Date.parse(expires) - now) / 1000));
      }
    },
  });
}
