import { execFileSync } from "node:child_process";
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deploymentKey, TOOLS_LABELS } from "../../runner/boundary/box/tools-volume.ts";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import {
  listRuns,
  type RunRecord,
  readRecord,
} from "../../runner/records/run-records/run-record.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { runRoster, spawnRoster } from "./cli.ts";

/** A throwaway deployment (ROSTER_ROOT) made by `roster init`, pointed at the scripted model. */
export interface RosterRoot {
  root: string;
  paths: RosterPaths;
  gatewayPort: number;
  roster(
    args: string[],
    options?: { timeoutMs?: number },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  spawnRoster(args: string[]): ReturnType<typeof spawnRoster>;
  cleanup(): Promise<void>;
}

/**
 * Where freePort picks from: below the range the kernel hands out to outgoing
 * connections (net.ipv4.ip_local_port_range). A port picked inside that range
 * and closed again could become some connection's source port before the
 * server meant for it binds it, and that bind then fails (EADDRINUSE): with
 * the whole suite's connections going on around it, a rare server that
 * never starts.
 */
const PICK_FROM = 20_000;
/** Ports this process has handed out: never the same one twice. */
const handedOut = new Set<number>();

function ephemeralStart(): number {
  try {
    const start = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    return Number.isInteger(start) && start > 0 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether a listener can take this loopback port now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A loopback port nothing listens on, for a server a test starts a moment
 * later: picked at random below the ephemeral range (PICK_FROM), so no
 * outgoing connection can take it in between.
 */
export async function freePort(): Promise<number> {
  const end = ephemeralStart();
  if (end - PICK_FROM < 1_000)
    throw new Error(`ip_local_port_range starts at ${end}: no room below it to pick a port from`);
  for (let tries = 0; tries < 200; tries++) {
    const port = PICK_FROM + randomInt(end - PICK_FROM);
    if (handedOut.has(port)) continue;
    // taken before the check, so two picks at once never share one
    handedOut.add(port);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free loopback port between ${PICK_FROM} and ${end} in 200 tries`);
}

/** The port a listening server took; throws when it listens on none (a port 0 aims at nothing). */
export function listeningPort(server: { address(): string | AddressInfo | null }): number {
  const address = server.address();
  if (typeof address !== "object" || !address || !address.port)
    throw new Error(`the server is not listening on a TCP port (${JSON.stringify(address)})`);
  return address.port;
}

/**
 * The box runtime a test root's org.toml asks for: ROSTER_TEST_RUNTIME
 * ("runsc" runs the suites that use these roots under gVisor), else the
 * engine's default. Anything else is a mistake, said at once.
 */
export function testRuntime(env: NodeJS.ProcessEnv = process.env): "runc" | "runsc" | undefined {
  const runtime = env.ROSTER_TEST_RUNTIME;
  if (runtime === undefined || runtime === "") return undefined;
  if (runtime === "runc" || runtime === "runsc") return runtime;
  throw new Error(`ROSTER_TEST_RUNTIME must be runc or runsc (got ${JSON.stringify(runtime)})`);
}

export async function makeRosterRoot(
  modelBaseUrl: string,
  options: {
    modelKey?: string;
    extraOrg?: string;
    /** Lines added to org.toml's [gateway] table. */
    gatewayExtra?: string;
    runtime?: "runc" | "runsc";
  } = {},
): Promise<RosterRoot> {
  const root = await mkdtemp(join(tmpdir(), "roster-root-"));
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  const gatewayPort = await pointAtScriptedModel(paths, modelBaseUrl, options);
  const env = { ROSTER_ROOT: root };
  return {
    root,
    paths,
    gatewayPort,
    roster: (args, opts = {}) => runRoster(args, env, opts.timeoutMs),
    spawnRoster: (args) => spawnRoster(args, env),
    cleanup: async () => {
      await removeToolsVolumes(paths.config);
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Points an initialised deployment's org.toml at the scripted model and a free
 * gateway port (returned), with `extraOrg` appended and `gatewayExtra` added
 * to its [gateway] table.
 */
export async function pointAtScriptedModel(
  paths: RosterPaths,
  modelBaseUrl: string,
  options: {
    modelKey?: string;
    extraOrg?: string;
    gatewayExtra?: string;
    runtime?: "runc" | "runsc";
  } = {},
): Promise<number> {
  const runtime = options.runtime ?? testRuntime();
  const gatewayPort = await freePort();
  const example = await readFile(join(paths.config, "org.toml"), "utf8");
  const org = example
    .replace(
      /^\[model\][\s\S]*?\n\[engine\]/m,
      `[model]\nprovider = "openai-compatible"\nmodel = "scripted-1"\nbase_url = "${modelBaseUrl}"\n${options.modelKey ? 'credential = "local-model"\n' : ""}\n[engine]`,
    )
    .replace(/^\[box\]\n/m, runtime ? `[box]\nruntime = "${runtime}"\n` : "[box]\n")
    .replace(
      "port = 7300",
      `port = ${gatewayPort}${options.gatewayExtra ? `\n${options.gatewayExtra}` : ""}`,
    );
  await writeFile(join(paths.config, "org.toml"), `${org}\n${options.extraOrg ?? ""}`);
  if (options.modelKey)
    await storeCredential(paths.vault, "local-model", { key: options.modelKey });
  return gatewayPort;
}

/**
 * Has a deployment's gateway trust a test site's CA and answer its `names`
 * with loopback (org.toml's `[gateway] upstream_ca` and `resolve`): a local
 * HTTPS site reached under real-looking names, as a box would reach the web.
 */
export async function serveNamesLocally(
  deployment: { root: string; paths: RosterPaths },
  caPem: string,
  names: string[],
): Promise<void> {
  const caFile = join(deployment.root, `site-ca-${names[0] ?? "site"}.pem`);
  await writeFile(caFile, caPem);
  const orgFile = join(deployment.paths.config, "org.toml");
  const resolve = names.map((name) => `${JSON.stringify(name)} = "127.0.0.1"`).join(", ");
  const org = (await readFile(orgFile, "utf8")).replace(
    /\[gateway\]\n/,
    `[gateway]\nupstream_ca = ${JSON.stringify([caFile])}\nresolve = { ${resolve} }\n`,
  );
  await writeFile(orgFile, org);
}

/** A worker's newest run record in a deployment. */
export function latestRecord(paths: RosterPaths, worker: string): RunRecord | undefined {
  // by when each started, to the millisecond: run ids sort by the second only, so two runs
  // in one second (a fast machine makes them often) list in either order
  let latest: RunRecord | undefined;
  for (const run of listRuns(paths.state, worker)) {
    const record = readRecord(run.dir);
    if (record && (!latest || record.started_at > latest.started_at)) latest = record;
  }
  return latest;
}

/** The toolchain volumes a throwaway deployment's runs made (none without Docker). */
async function removeToolsVolumes(configRoot: string): Promise<void> {
  const label = `${TOOLS_LABELS.deployment}=${deploymentKey(configRoot)}`;
  try {
    const names = execFileSync("docker", ["volume", "ls", "-q", "--filter", `label=${label}`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    })
      .split("\n")
      .filter(Boolean);
    if (names.length) execFileSync("docker", ["volume", "rm", "-f", ...names], { stdio: "ignore" });
  } catch {
    // no Docker here, or a volume still in use: nothing this test can do about it
  }
}
