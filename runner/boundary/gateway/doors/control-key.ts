import { randomBytes, timingSafeEqual } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The key that opens and closes run doors. The gateway's loopback port is
 * reachable by every process on the host, and a door control route changes
 * what a box reaches (a door closed cuts a running box off; a door opened is a
 * run's identity on a socket): a request to one must carry this key, which
 * lives beside the run tokens in state/identity (0700, 0600, never mounted),
 * so only the deployment's own user can read it. Made once by whichever of
 * the gateway and the runner asks first, and kept across restarts, so a
 * gateway restarted in place still answers the runs that were going on.
 */
export const CONTROL_HEADER = "x-roster-control";
const FILE = "control.key";

export function controlKey(identityDir: string): string {
  const file = join(identityDir, FILE);
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    mkdirSync(identityDir, { recursive: true, mode: 0o700 });
    // written whole aside, then linked in place: two first askers at once make one key,
    // and nobody reads a key half written
    const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(aside, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    try {
      linkSync(aside, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      rmSync(aside, { force: true });
    }
    return readFileSync(file, "utf8").trim();
  }
}

/** Whether a request's header carries the key (compared in constant time). */
export function carriesKey(header: string | string[] | undefined, key: string): boolean {
  if (typeof header !== "string" || header.length !== key.length) return false;
  return timingSafeEqual(Buffer.from(header), Buffer.from(key));
}
