import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askHealth } from "../../runner/boundary/gateway/process/health.ts";
import {
  type ConfigFile,
  configDigest,
  readConfigFiles,
} from "../../runner/ground/config/config-digest.ts";
import { keepConfig } from "../../runner/records/config-history/history.ts";
import { waitForDecision } from "../support/audit.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * Every config a gateway takes is kept once by its digest; each audit line
 * names the digest of the config that judged it, which `roster config diff`
 * reads back; `roster config history` lists each config once however often
 * it is taken; `roster config rollback` writes a kept config back byte for
 * byte (a file the old config lacked removed), tested like any edit.
 */

let plain: Upstream;
let env: GatewayEnv;

const ORG_A = `
[gateway]
resolve = { "plain.test" = "127.0.0.1" }

[[grant]]
name = "plain"
verdict = "allow"
match = { host = "plain.test", protocol = "http", method = ["GET"] }

[[test]]
request = "GET http://plain.test/items"
worker = "elf"
expect = "allow"
`;
// B lets POST through too, and adds a worker: one file changed, one added
const ORG_B = ORG_A.replace('method = ["GET"]', 'method = ["GET", "POST"]');

const config = () => env.paths.config;
const roster = (args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });

async function writeA(): Promise<void> {
  await writeFile(join(config(), "org.toml"), ORG_A);
  await rm(join(config(), "workers", "scout"), { recursive: true, force: true });
}

async function writeB(): Promise<void> {
  await writeFile(join(config(), "org.toml"), ORG_B);
  await mkdir(join(config(), "workers", "scout"), { recursive: true });
  await writeFile(join(config(), "workers", "scout", "worker.toml"), 'name = "scout"\n');
}

/** Waits for the gateway to judge by the config on disk now; returns its digest. */
async function taken(): Promise<string> {
  const digest = configDigest(readConfigFiles(config()));
  const deadline = Date.now() + 10_000;
  while ((await askHealth(env.gateway.port, 2_000))?.config?.live.digest !== digest) {
    if (Date.now() > deadline) throw new Error(`config ${digest} was not taken`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return digest;
}

const byPath = (files: ConfigFile[]) => files.map((file) => [file.path, file.bytes]);

beforeAll(async () => {
  plain = await Upstream.start({ tls: false });
  env = await startGatewayEnv("");
  await mkdir(join(config(), "workers", "elf"), { recursive: true });
  await writeFile(join(config(), "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await writeA();
  // [gateway] resolve is read at start
  await env.restart();
});
afterAll(async () => {
  await env?.cleanup();
  await plain?.stop();
});

describe("the config history", () => {
  it("keeps each config once, names it on every audit line, diffs and rolls back byte for byte", async () => {
    const a = await taken();
    const filesA = readConfigFiles(config());
    const token = await env.token("elf", "run-history-1");
    const url = `http://plain.test:${plain.port}/items`;
    expect((await viaProxy(proxyUrlFor(env, token), url)).status).toBe(200);
    const line = await waitForDecision(env.paths.audit, (r) => r.run_id === "run-history-1");
    expect(line.config).toBe(a);

    // B, A again, B again: each taken, each kept once
    await writeB();
    const b = await taken();
    await writeA();
    expect(await taken()).toBe(a);
    await writeB();
    expect(await taken()).toBe(b);

    const history = await roster(["config", "history", "--json"]);
    expect(history.code, history.stderr).toBe(0);
    const rows = JSON.parse(history.stdout) as Array<{
      digest: string;
      by: string;
      on_disk: boolean;
      changes: { added: string[]; removed: string[]; changed: string[] };
    }>;
    expect(rows.filter((row) => row.digest === a)).toHaveLength(1);
    expect(rows.filter((row) => row.digest === b)).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      digest: b,
      by: "gateway",
      on_disk: true,
      changes: { added: ["workers/scout/worker.toml"], removed: [], changed: ["org.toml"] },
    });
    expect(new Set(rows.map((row) => row.digest)).size).toBe(rows.length);

    // the audit line's digest, read back against the files now: the change since
    const diff = await roster(["config", "diff", (line.config ?? "").slice(0, 10), "current"]);
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain("2 file(s) differ");
    expect(diff.stdout).toContain(
      '-match = { host = "plain.test", protocol = "http", method = ["GET"] }',
    );
    expect(diff.stdout).toContain(
      '+match = { host = "plain.test", protocol = "http", method = ["GET", "POST"] }',
    );
    expect(diff.stdout).toContain("+++ b/workers/scout/worker.toml");
    const same = await roster(["config", "diff", b.slice(0, 8), "current", "--json"]);
    expect(JSON.parse(same.stdout)).toEqual({ a: b, b, files: [] });

    const back = await roster(["config", "rollback", a.slice(0, 12), "--json"]);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({
      ok: true,
      digest: a,
      written: ["org.toml"],
      removed: ["workers/scout/worker.toml"],
      replaced: b,
      on_disk: a,
    });
    // every file as it was, byte for byte, and no other
    expect(byPath(readConfigFiles(config()))).toEqual(byPath(filesA));
    expect(await taken()).toBe(a);
  });

  it("refuses to roll back to a config that fails its own [[test]] cases, writing nothing", async () => {
    const before = readConfigFiles(config());
    const failing = [
      ...before.filter((file) => file.path !== "org.toml"),
      {
        path: "org.toml",
        bytes: Buffer.from(ORG_A.replace('expect = "allow"', 'expect = "deny"')),
      },
    ];
    const digest = configDigest(failing);
    keepConfig(env.paths.data, { digest, files: failing }, "gateway");
    const refused = await roster(["config", "rollback", digest.slice(0, 12)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /was not written back: .*\n.*org\.toml:\d+: test\.0: GET http:\/\/plain\.test\/items \(worker elf\): expected deny/,
    );
    expect(byPath(readConfigFiles(config()))).toEqual(byPath(before));
    const unknown = await roster(["config", "diff", "ffff0000ffff0000", "current"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no kept config matches "ffff0000ffff0000"');
  });
});
