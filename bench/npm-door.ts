/**
 * `npm install <package>` inside a box, through the door and the gateway,
 * against the same install straight from the host, side by side in one run.
 * Both use the registry the host's npm is configured for (read at run time,
 * never written down) and a fresh, empty cache every round, so every tarball
 * crosses the network each time. The box reaches the registry as any worker
 * would: the example org's web-read grant (GET to any host), the gateway's
 * upstream TLS verified against what the host trusts (Node's roots, the
 * host's store, upstream_ca). Rounds alternate host and box; the ratio is the
 * median box time over the median host time. Needs Docker, root, the box
 * image and a reachable registry.
 *   npx tsx bench/npm-door.ts [package] [rounds]
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { makeRosterRoot, ROSTER_BIN } from "./harness.ts";
import { median, timed } from "./timing.ts";

const run = promisify(execFile);

const PACKAGE = process.argv[2] ?? "express";
const ROUNDS = Number(process.argv[3] ?? 3);
const registry = execFileSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).trim();
if (!/^https:\/\//.test(registry))
  throw new Error(`the host's npm registry is not an https URL (${registry || "none"})`);

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const env = { ROSTER_ROOT: root.root };
const install = `npm install ${PACKAGE} --registry=${registry} --no-audit --no-fund --loglevel=error`;

/** Packages an install put in node_modules (each folder with a package.json, scoped ones included). */
function counted(listing: string): number {
  return listing.split("\n").filter((line) => line.endsWith("/package.json")).length;
}

async function hostRound(): Promise<{ ms: number; packages: number }> {
  const dir = mkdtempSync(join(tmpdir(), "roster-bench-npm-"));
  try {
    const script = `cd ${dir} && ${install} --cache ${join(dir, ".cache")}`;
    const ms = await timed(["sh", "-c", script]);
    const listing = execFileSync(
      "sh",
      [
        "-c",
        `cd ${dir} && ls -d node_modules/*/package.json node_modules/@*/*/package.json 2>/dev/null || true`,
      ],
      { encoding: "utf8" },
    );
    return { ms, packages: counted(listing) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function boxRound(): Promise<{ ms: number; packages: number }> {
  const script = `mkdir -p /tmp/p && cd /tmp/p && ${install} --cache /tmp/p/.cache && ls -d node_modules/*/package.json node_modules/@*/*/package.json 2>/dev/null || true`;
  const argv = ["box", "exec", "elf", "--local", "--timeout", "600", "--", script];
  const started = performance.now();
  const { stdout } = await run(ROSTER_BIN, argv, {
    env: { ...process.env, ...env },
    maxBuffer: 1 << 24,
  });
  const ms = performance.now() - started;
  // the envelope is JSON on stdout
  const envelope = JSON.parse(stdout) as { stdout?: string; status?: string };
  if (envelope.status !== "ok")
    throw new Error(`the box's install did not succeed: ${stdout.slice(0, 400)}`);
  return { ms, packages: counted(envelope.stdout ?? "") };
}

const host: number[] = [];
const box: number[] = [];
let packages = { host: 0, box: 0 };
try {
  for (let i = 0; i < ROUNDS; i++) {
    const h = await hostRound();
    const b = await boxRound();
    host.push(h.ms);
    box.push(b.ms);
    packages = { host: h.packages, box: b.packages };
  }
} finally {
  await root.cleanup();
}
const seconds = (values: number[]) => values.map((ms) => (ms / 1000).toFixed(1)).join(", ");
console.log(`npm install ${PACKAGE}, ${ROUNDS} alternating rounds, a fresh cache each:\n`);
console.log("| where | packages | seconds per round | median s |");
console.log("|---|---|---|---|");
console.log(`| host | ${packages.host} | ${seconds(host)} | ${(median(host) / 1000).toFixed(1)} |`);
console.log(
  `| box, through the door | ${packages.box} | ${seconds(box)} | ${(median(box) / 1000).toFixed(1)} |`,
);
console.log(
  `\nbox / host: ${(median(box) / median(host)).toFixed(2)}x (the box's time includes starting it)`,
);
