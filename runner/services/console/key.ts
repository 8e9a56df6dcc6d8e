import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";

/**
 * The console's per-install secret. The login link carries it once; the
 * browser then holds a cookie derived from it and the console's port
 * (HttpOnly, SameSite=Strict; see origin.ts), and every state-changing
 * request also carries a CSRF token derived from it. No derived value
 * reveals the key, and all change when the key file is removed (a new key is
 * made at the next start).
 */
export interface ConsoleKey {
  /** The value the login link carries. */
  key: string;
  /** The session cookie's value for the console on `port`: another port's does not log in. */
  session(port: number): string;
  /** The CSRF token forms and scripts send back. */
  csrf: string;
}

const derive = (key: string, purpose: string) =>
  createHmac("sha256", key).update(`roster console ${purpose}`).digest("base64url");

export function consoleKey(paths: RosterPaths): ConsoleKey {
  const file = join(paths.state, "console.key");
  let key: string;
  try {
    key = readFileSync(file, "utf8").trim();
  } catch {
    key = "";
  }
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) {
    mkdirSync(paths.state, { recursive: true });
    key = randomBytes(32).toString("base64url");
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return {
    key,
    session: (port) => derive(key, `session ${port}`),
    csrf: derive(key, "csrf"),
  };
}

/** Constant-time comparison of a presented value with the expected one. */
export function matches(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== "string") return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
