import { createHash, randomBytes } from "node:crypto";

/**
 * PKCE (RFC 7636) with S256, and the `state` that ties a redirect to the
 * sign-in that asked for it: both 32 random bytes, base64url. The verifier
 * never leaves this process before the code exchange, so a code that leaks
 * from the browser on its way to the loopback is worth nothing to anyone else.
 */
export interface Pkce {
  verifier: string;
  challenge: string;
  method: "S256";
}

export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier, "ascii").digest("base64url");
  return { verifier, challenge, method: "S256" };
}

export function newState(): string {
  return randomBytes(32).toString("base64url");
}
