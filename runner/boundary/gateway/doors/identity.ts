import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Run tokens: the only thing that tells the gateway who is asking. Minted per
 * run, kept host-side in state/identity/<token>.json (0600, never mounted),
 * revoked when the run ends. The box holds the token only as proxy userinfo.
 *
 * A ready box (one started before the run it will serve) holds a token minted
 * unbound: state/identity/<token>.ready, which nothing resolves, so the
 * gateway refuses it and opens no door for its run. Binding it at hand-off
 * renames it to <token>.json in one step: from then on it is a run's token
 * like any other.
 */
export interface Identity {
  /** `org/<worker>` */
  subject: string;
  runId: string;
  /**
   * The channels the run's input came from (its session's, the chat a task
   * was filed from), [] for none: what a grant or an action limited to a
   * class of channels is judged by. Absent on a token that doesn't say,
   * which no such grant admits.
   */
  origins?: string[];
  /**
   * Set by the door, never by a token: `page` is a request that reached the
   * run's own door with no token (the renderer's browser; caller.ts), which
   * may read for the run but never act as it.
   */
  actor?: "page";
}

/** A live token's file; a ready (unbound) one's. */
const LIVE = ".json";
const READY = ".ready";

const TOKEN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function mintToken(dir: string, identity: Identity): Promise<string> {
  return writeToken(dir, identity, LIVE);
}

/** A token for a ready box: refused everywhere until bindToken makes it live. */
export async function mintReadyToken(dir: string, identity: Identity): Promise<string> {
  return writeToken(dir, identity, READY);
}

/**
 * Makes a ready token live (the run it was minted for has been handed its
 * box). Fails if it was never minted ready or was revoked meanwhile: a box
 * whose token can't be bound must not serve the run. `origins` are the run's
 * own (a task's channels, known only at hand-off): written into the ready
 * file before it goes live, so the token says them from its first request.
 */
export async function bindToken(
  dir: string,
  token: string,
  origins?: readonly string[],
): Promise<void> {
  if (!TOKEN.test(token)) throw new Error("not a run token");
  const ready = join(dir, `${token}${READY}`);
  if (origins) {
    // the file it was minted in, rewritten in place: a token revoked meanwhile is never made again
    const file = await open(ready, "r+");
    try {
      const minted = parseIdentity(await file.readFile("utf8"));
      if (!minted) throw new Error("its ready token can't be read");
      await file.truncate(0);
      await file.write(tokenText({ ...minted, origins: [...origins] }), 0);
    } finally {
      await file.close();
    }
  }
  await rename(ready, join(dir, `${token}${LIVE}`));
}

/** A token file's text. */
const tokenText = (identity: Identity) =>
  `${JSON.stringify({
    subject: identity.subject,
    run_id: identity.runId,
    ...(identity.origins ? { origins: identity.origins } : {}),
  })}\n`;

async function writeToken(dir: string, identity: Identity, suffix: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const token = randomUUID();
  const file = join(dir, `${token}${suffix}`);
  await writeFile(file, tokenText(identity), { mode: 0o600 });
  await chmod(file, 0o600);
  return token;
}

export async function revokeToken(dir: string, token: string): Promise<void> {
  if (!TOKEN.test(token)) return;
  await rm(join(dir, `${token}${LIVE}`), { force: true });
  await rm(join(dir, `${token}${READY}`), { force: true });
}

/**
 * Revokes every token of one run: what a crashed runner left live. Its box
 * is gone; with its token revoked the gateway's sweep closes its door too.
 */
export async function revokeRunTokens(dir: string, runId: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const suffix = [LIVE, READY].find((ending) => name.endsWith(ending));
    if (!suffix) continue;
    const token = name.slice(0, -suffix.length);
    if (readIdentity(join(dir, name))?.runId === runId) await revokeToken(dir, token);
  }
}

/** The identity behind a token, or undefined for a malformed, unknown, unbound or revoked one. */
export function resolveToken(dir: string, token: string | undefined): Identity | undefined {
  if (!token || !TOKEN.test(token)) return undefined;
  return readIdentity(join(dir, `${token}${LIVE}`));
}

function readIdentity(file: string): Identity | undefined {
  try {
    return parseIdentity(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

function parseIdentity(text: string): Identity | undefined {
  try {
    const raw = JSON.parse(text) as {
      subject?: unknown;
      run_id?: unknown;
      origins?: unknown;
    };
    if (typeof raw.subject !== "string" || typeof raw.run_id !== "string") return undefined;
    const origins =
      Array.isArray(raw.origins) && raw.origins.every((one) => typeof one === "string")
        ? (raw.origins as string[])
        : undefined;
    return { subject: raw.subject, runId: raw.run_id, ...(origins ? { origins } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * The runs whose tokens are live now (run id → identity): what a gateway may
 * open a door for. Read from the folder itself, so a gateway restarted in place
 * finds the runs that were going on before it.
 */
export function liveRuns(dir: string): Map<string, Identity> {
  const runs = new Map<string, Identity>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return runs;
  }
  for (const name of names) {
    if (!name.endsWith(LIVE)) continue;
    const identity = resolveToken(dir, name.slice(0, -LIVE.length));
    if (identity) runs.set(identity.runId, identity);
  }
  return runs;
}

/**
 * resolveToken for the gateway's hot path: a token's identity is read once,
 * and after that each request only asks whether its file is still there — a
 * revoked token (file removed, by whichever process ends the run) is refused
 * at its very next request, as before, for a fraction of the cost of reading
 * and parsing the file again. Bounded, so a flood of made-up tokens can't
 * grow it (unknown tokens are never cached).
 */
export class TokenResolver {
  private readonly known = new Map<string, Identity>();

  constructor(
    private readonly dir: string,
    private readonly limit = 4096,
  ) {}

  resolve(token: string | undefined): Identity | undefined {
    if (!token || !TOKEN.test(token)) return undefined;
    const cached = this.known.get(token);
    if (cached) {
      if (existsSync(join(this.dir, `${token}${LIVE}`))) return cached;
      this.known.delete(token);
      return undefined;
    }
    const identity = resolveToken(this.dir, token);
    if (identity) {
      if (this.known.size >= this.limit) {
        const oldest = this.known.keys().next().value;
        if (oldest !== undefined) this.known.delete(oldest);
      }
      this.known.set(token, identity);
    }
    return identity;
  }
}

/** The user part of `Proxy-Authorization: Basic base64(token:x)`. */
export function tokenFromProxyAuthorization(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon >= 0 ? decoded.slice(0, colon) : decoded;
}

/** The proxy URL a box is given: the token as userinfo, a placebo password so git doesn't prompt. */
export function proxyUrl(token: string, host: string, port: number): string {
  return `http://${token}:x@${host}:${port}`;
}
