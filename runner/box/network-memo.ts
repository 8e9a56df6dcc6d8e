import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LockedNetwork } from "./network.ts";

/**
 * The locked network as last verified, remembered in the state root so a run
 * can start its gateway on the network's bridge address before it has even
 * loaded its Docker client. A memo is believed only while the host still has
 * the bridge Docker made for that very network id (`br-<id prefix>`): a
 * network removed or recreated (a new id), a daemon elsewhere (DOCKER_HOST)
 * or one that lost it fails that check, and the run asks Docker as before.
 * Neither its addresses nor its options can change under the same id (Docker
 * can't edit a network), so the masquerade check made when it was written
 * holds.
 */
const MEMO = "network.json";

export function recallLockedNetwork(stateRoot: string, name: string): LockedNetwork | undefined {
  let memo: Partial<LockedNetwork>;
  try {
    memo = JSON.parse(readFileSync(join(stateRoot, MEMO), "utf8")) as Partial<LockedNetwork>;
  } catch {
    return undefined;
  }
  const { id, subnet, gateway } = memo;
  if (memo.name !== name || typeof id !== "string" || !/^[0-9a-f]{12,64}$/.test(id))
    return undefined;
  if (typeof subnet !== "string" || typeof gateway !== "string") return undefined;
  // os.networkInterfaces() leaves out a bridge no box is attached to (no carrier),
  // so the device is looked for in sysfs; its address can't change under one id
  if (!existsSync(`/sys/class/net/br-${id.slice(0, 12)}`)) return undefined;
  return { name, id, subnet, gateway };
}

/** Best effort: the memo only saves the next run a question to Docker, so failing to write it (a full disk) costs nothing but that. */
export function rememberLockedNetwork(stateRoot: string, network: LockedNetwork): void {
  const file = join(stateRoot, MEMO);
  // beside it, then renamed over: a reader sees the old memo or the new one, never half
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(stateRoot, { recursive: true });
    writeFileSync(temporary, `${JSON.stringify(network)}\n`);
    renameSync(temporary, file);
  } catch {
    rmSync(temporary, { force: true });
  }
}
