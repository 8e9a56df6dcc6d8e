import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";

/**
 * The console's per-install secret, and the two halves of a browser's
 * session derived from it (see origin.ts for why there are two). The login
 * link carries the key once; each login then opens a session of its own:
 * a random id in a cookie (HttpOnly, SameSite=Strict, MACed for the
 * console's port, so no other port's or forged id logs in), and a token
 * for that session alone, which the page keeps in its origin's storage and
 * sends back on every request that reads or changes anything. No derived
 * value reveals the key, and all change when the key file is removed (a new
 * key is made at the next start, and every session ends).
 */
export interface ConsoleKey {
  /** The value the login link carries. */
  key: string;
  /** A new session for the console on `port`: the cookie's value and the session's token. */
  open(port: number): { cookie: string; token: string };
  /** The session a cookie names, or undefined when it was not made here for this port. */
  sessionOf(cookie: string | undefined, port: number): string | undefined;
  /** The token of session `id` on `port`: another session's does not match. */
  token(id: string, port: number): string;
}

const derive = (key: string, purpose: string) =>
  createHmac("sha256", key).update(`roster console ${purpose}`).digest("base64url");

const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;

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
  const mac = (id: string, port: number) => derive(key, `session ${port} ${id}`);
  const token = (id: string, port: number) => derive(key, `token ${port} ${id}`);
  return {
    key,
    open(port) {
      const id = randomBytes(16).toString("base64url");
      return { cookie: `${id}.${mac(id, port)}`, token: token(id, port) };
    },
    sessionOf(cookie, port) {
      const [id, presented] = (cookie ?? "").split(".");
      if (!id || !SESSION_ID.test(id)) return undefined;
      return matches(presented, mac(id, port)) ? id : undefined;
    },
    token,
  };
}

/** Constant-time comparison of a presented value with the expected one. */
export function matches(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== "string") return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
