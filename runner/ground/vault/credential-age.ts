import {
  type CredentialMeta,
  type ExpiryWord,
  expiryOf,
  readCredentialMeta,
  spanWords,
} from "./credential-meta.ts";

/**
 * A credential's age as a person is shown it, in one place so `roster
 * connection ls` and the console's connections page mark the same
 * credentials with the same words: read from its record of age (never the
 * secret, so no vault key is needed and no value can leak).
 */
export type Age = CredentialMeta & { expiry?: ExpiryWord };

/** A credential's age and how near its end it is; undefined when none is recorded. */
export function ageOf(vault: string, name: string, now = Date.now()): Age | undefined {
  const meta = readCredentialMeta(vault, name);
  if (!meta) return undefined;
  const expiry = expiryOf(meta, now);
  return { ...meta, ...(expiry ? { expiry } : {}) };
}

export interface AgePhrases {
  /** `set 3d ago (connection secret by cli:ann)` */
  set: string;
  /** `EXPIRES in 2d`, `EXPIRED 3d ago`, `expires in 89d`, or that the gateway renews it; none without an expiry. */
  expiry?: string;
}

export function agePhrases(age: Age, now = Date.now()): AgePhrases {
  const set = `set ${spanWords(now - Date.parse(age.set_at))} ago (${age.set_by})`;
  if (!age.expires_at) return { set };
  const left = Date.parse(age.expires_at) - now;
  if (age.renews) return { set, expiry: "the gateway renews its token" };
  if (age.expiry === "expired") return { set, expiry: `EXPIRED ${spanWords(left)} ago` };
  if (age.expiry === "expiring") return { set, expiry: `EXPIRES in ${spanWords(left)}` };
  return { set, expiry: `expires in ${spanWords(left)}` };
}
