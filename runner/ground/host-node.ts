import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, realpathSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { PROJECT_ROOT } from "./version.ts";

/**
 * The Node roster runs on. package.json's "engines" says the oldest supported
 * (22); on a machine whose Node is older, `npm ci` brings in the one the box's
 * offline base pins and .cache/host-node names it (scripts/host-node.mjs), and
 * bin/roster.mjs starts on that. `roster -V` and `roster box doctor` say which.
 */

const MARKER = join(PROJECT_ROOT, ".cache", "host-node");

/** The oldest Node major roster supports, from package.json's "engines" (">=22"). */
export function nodeFloor(): number {
  const raw: unknown = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8"));
  const engines =
    typeof raw === "object" && raw !== null
      ? (raw as { engines?: { node?: unknown } }).engines
      : {};
  const range = typeof engines?.node === "string" ? engines.node : "";
  const floor = /^>=\s*(\d+)/.exec(range)?.[1];
  // a floor that can't be read refuses every Node rather than none
  return floor ? Number(floor) : Number.POSITIVE_INFINITY;
}

/** One line refusing this Node when it is older than the floor; undefined when it will do. */
export function oldNodeRefusal(version = process.versions.node): string | undefined {
  const floor = nodeFloor();
  if (Number(version.split(".")[0]) >= floor) return undefined;
  return `this is Node v${version} (${process.execPath}), and roster needs Node ${floor} or newer: \`npm ci\` brings in a supported one, which \`npx roster\` runs on`;
}

export interface HostNode {
  /** process.version of the Node running roster. */
  version: string;
  path: string;
  /** Whether it is the one `npm ci` brought in (.cache/host-node names it). */
  broughtIn: boolean;
  /** When brought in: the machine's own `node` on PATH, if there is one. */
  machine?: { version: string; path: string };
}

function samePath(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** The first `node` on PATH outside the brought-in Node's folder (bin/roster.mjs put that first). */
function machineNode(own: string): HostNode["machine"] {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir || samePath(dir, own)) continue;
    const path = join(dir, "node");
    try {
      accessSync(path, constants.X_OK);
    } catch {
      continue;
    }
    const answer = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 5_000 });
    const version = answer.stdout?.trim();
    if (answer.status === 0 && version) return { version, path };
  }
  return undefined;
}

/** Which Node this is, and whether `npm ci` brought it in. Asks the machine's `node` its version when it did. */
export function hostNode(): HostNode {
  const named = existsSync(MARKER) ? readFileSync(MARKER, "utf8").split("\n")[0]?.trim() : "";
  const broughtIn = Boolean(named) && samePath(named ?? "", process.execPath);
  const node: HostNode = { version: process.version, path: process.execPath, broughtIn };
  if (broughtIn) {
    const machine = machineNode(dirname(process.execPath));
    if (machine) node.machine = machine;
  }
  return node;
}

/** Where it came from: "brought in by npm ci; the machine's is v20.20.2", or "the machine's". */
export function hostNodeOrigin(node: HostNode): string {
  if (!node.broughtIn) return "the machine's";
  const machine = node.machine
    ? `the machine's is ${node.machine.version}`
    : "no other node on PATH";
  return `brought in by npm ci; ${machine}`;
}

/** "Node v24.22.3 (brought in by npm ci; the machine's is v20.20.2)", or "Node v22.12.0 (the machine's)". */
export function describeHostNode(node: HostNode): string {
  return `Node ${node.version} (${hostNodeOrigin(node)})`;
}
