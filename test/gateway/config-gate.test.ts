import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askHealth, type HealthAnswer } from "../../runner/boundary/gateway/process/health.ts";
import { configDigest, readConfigFiles } from "../../runner/ground/config/config-digest.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The door takes a changed config only when it passes its own `[[test]]`
 * cases: one that fails is refused, the last good config keeps judging
 * (a request its grant allows is still allowed), and the gateway says
 * which config was refused and which case failed, on its log and at
 * /healthz (what `roster server status` reads). A config that fails from
 * the start has nothing good before it: everything is denied, naming the case.
 */

let plain: Upstream;
const envs: GatewayEnv[] = [];

const orgToml = (method: string) => `
[gateway]
resolve = { "plain.test" = "127.0.0.1" }

[[grant]]
name = "plain"
verdict = "allow"
match = { host = "plain.test", protocol = "http", method = ["${method}"] }

[[test]]
request = "GET http://plain.test/items"
worker = "elf"
expect = "allow"
rule = "plain"
`;

/** A gateway started on `org` and the worker elf, its notes from then on in `notes`. */
async function gatewayWith(org: string, notes: string[]): Promise<GatewayEnv> {
  const env = await startGatewayEnv("", { note: (text) => notes.push(text) });
  envs.push(env);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await writeFile(join(env.paths.config, "org.toml"), org);
  await env.restart();
  return env;
}

async function healthOf(env: GatewayEnv): Promise<HealthAnswer> {
  const health = await askHealth(env.gateway.port, 2_000);
  if (!health) throw new Error("the gateway did not answer /healthz");
  return health;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  plain = await Upstream.start({ tls: false });
});
afterAll(async () => {
  for (const env of envs) await env.cleanup();
  await plain?.stop();
});

describe("a config that fails its own [[test]] cases", () => {
  it("is refused: the last good config keeps judging, and the log and /healthz name the case", async () => {
    const notes: string[] = [];
    const env = await gatewayWith(orgToml("GET"), notes);
    const good = configDigest(readConfigFiles(env.paths.config));
    const token = await env.token("elf", "run-config-gate-1");
    const url = `http://plain.test:${plain.port}/items`;
    expect((await viaProxy(proxyUrlFor(env, token), url)).status).toBe(200);
    expect((await healthOf(env)).config).toMatchObject({ live: { digest: good, usable: true } });

    // the grant narrowed to POST: the case that says GET is allowed now fails
    await env.writeOrg(orgToml("POST"));
    const refusing = configDigest(readConfigFiles(env.paths.config));
    const health = await until("the refusal at /healthz", async () => {
      const answer = await healthOf(env);
      return answer.config?.refused ? answer : undefined;
    });
    expect(health.config?.live).toMatchObject({ digest: good, usable: true });
    expect(health.config?.refused?.digest).toBe(refusing);
    expect(health.config?.refused?.problems).toEqual([
      expect.stringMatching(
        /org\.toml:\d+: test\.0: GET http:\/\/plain\.test\/items \(worker elf\): expected allow by rule "plain", the door would deny/,
      ),
    ]);
    // the old grant still judges: GET is allowed, by the rule the refused config dropped
    const kept = await viaProxy(proxyUrlFor(env, token), url);
    expect(kept.status).toBe(200);
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.run_id === "run-config-gate-1" && record.verdict === "allow",
    );
    expect(line.rule).toBe("plain");
    // said once on the gateway's log, with the case and the config that stays live
    const said = notes.filter((note) => note.includes("refused"));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`config ${refusing.slice(0, 12)} refused`);
    expect(said[0]).toContain(`keeps judging by config ${good.slice(0, 12)}`);
    expect(said[0]).toMatch(/org\.toml:\d+: test\.0: GET http:\/\/plain\.test\/items/);

    // fixed (the case now expects the narrower grant's answer): taken, the refusal gone
    await env.writeOrg(
      orgToml("POST").replace('expect = "allow"\nrule = "plain"', 'expect = "deny"'),
    );
    const fixed = configDigest(readConfigFiles(env.paths.config));
    const taken = await until("the fixed config taken", async () => {
      const answer = await healthOf(env);
      return answer.config?.live.digest === fixed ? answer : undefined;
    });
    expect(taken.config?.refused).toBeUndefined();
    expect((await viaProxy(proxyUrlFor(env, token), url)).status).toBe(403);
  });

  it("at start, with nothing good before it: everything is denied, naming the case", async () => {
    const notes: string[] = [];
    const env = await gatewayWith(orgToml("POST"), notes);
    const token = await env.token("elf", "run-config-gate-2");
    const refused = await viaProxy(proxyUrlFor(env, token), `http://plain.test:${plain.port}/x`, {
      method: "POST",
    });
    expect(refused.status).toBe(403);
    expect((JSON.parse(refused.body) as { hint: string }).hint).toMatch(
      /fails its own \[\[test\]\] cases, so everything is denied: .*org\.toml:\d+: test\.0: GET http:\/\/plain\.test\/items/,
    );
    expect((await healthOf(env)).config?.live).toMatchObject({ usable: false });
    expect(notes.some((note) => /can't be used: .*test\.0/.test(note))).toBe(true);
  });
});
