import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PolicyRequest, policyCheck } from "../../runner/boundary/gateway/policy/check.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { waitForDecision } from "../support/audit.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * `roster policy check` says what the door does: each request below is sent
 * through the real gateway by a run of elf, and the same request asked of
 * the policy; the verdict and the deciding rule must be the door's (its
 * audit line), for allows, denies (by a rule and by no rule), an MCP call
 * a gate grant holds and one it lets through. The check names the
 * credential and where it goes, never its value, and the meters it charges.
 */

let api: Upstream;
let env: GatewayEnv;
let token: string;
const SECRET = "REAL-POLICY-SECRET";

const orgToml = (caFile: string) => `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "api.test" = "127.0.0.1" }

[[grant]]
name = "api-no-secrets"
verdict = "deny"
match = { host = "api.test", pathPrefix = "/secrets" }

[[grant]]
name = "tools-hold-deletes"
verdict = "gate"
match = { host = "api.test", mcp = { tool = "delete_*" } }

[[grant]]
name = "tools"
verdict = "allow"
match = { host = "api.test", pathPrefix = "/mcp", method = ["POST"] }

[[grant]]
name = "api-read"
verdict = "allow"
match = { host = "api.test", method = ["GET"] }
inject = { credential = "apikey", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[budget]
currencies = ["calls"]

[[budget.meter]]
match = { rule = "api-read" }
spend = { calls = 1 }

[[budget.limit]]
currency = "calls"
window = "day"
max = 1000
`;

const call = (tool: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: tool, arguments: {} },
  });

interface Case {
  name: string;
  method: string;
  path: string;
  body?: string;
  /** The MCP tool its body calls. */
  tool?: string;
  verdict: "allow" | "deny" | "gate";
  rule: string | undefined;
}

const CASES: Case[] = [
  {
    name: "an allowed read",
    method: "GET",
    path: "/v1/items?q=1",
    verdict: "allow",
    rule: "api-read",
  },
  {
    name: "a deny rule",
    method: "GET",
    path: "/secrets/key",
    verdict: "deny",
    rule: "api-no-secrets",
  },
  { name: "no rule at all", method: "PUT", path: "/v1/items", verdict: "deny", rule: undefined },
  {
    name: "an MCP call let through",
    method: "POST",
    path: "/mcp",
    body: call("echo"),
    tool: "echo",
    verdict: "allow",
    rule: "tools",
  },
  {
    name: "an MCP call a gate holds",
    method: "POST",
    path: "/mcp",
    body: call("delete_repo"),
    tool: "delete_repo",
    verdict: "gate",
    rule: "tools-hold-deletes",
  },
];

beforeAll(async () => {
  api = await Upstream.start({ tls: true, names: ["api.test"] });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "upstream-ca.pem");
  await writeFile(caFile, api.certificate?.caPem ?? "");
  await env.writeOrg(orgToml(caFile));
  await env.restart(); // upstream CAs are read at start
  await env.writeVault("apikey", { token: SECRET });
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  token = await env.token("elf", "run-policy-1");
});
afterAll(async () => {
  await env?.cleanup();
  await api?.stop();
});

const config = () => loadConfig(env.paths.config, { vaultDir: env.paths.vault });

describe("roster policy check agrees with the door", () => {
  it.each(CASES)("$name", async (one) => {
    const url = `https://api.test:${api.port}${one.path}`;
    const headers: Record<string, string> = one.body ? { "content-type": "application/json" } : {};
    const before = Date.now();
    await viaProxy(proxyUrlFor(env, token), url, {
      method: one.method,
      headers,
      ...(one.body ? { body: one.body } : {}),
      ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
    });
    const door = await waitForDecision(
      env.paths.audit,
      (line) =>
        line.run_id === "run-policy-1" &&
        line.request.method === one.method &&
        line.request.path === (one.path.split("?")[0] ?? "") &&
        (line.request.mcp?.tool ?? undefined) === one.tool &&
        Date.parse(line.ts) >= before - 1000,
    );
    const asked: PolicyRequest = {
      worker: "elf",
      method: one.method,
      url,
      headers,
      ...(one.body ? { body: Buffer.from(one.body) } : {}),
    };
    const check = policyCheck(config(), asked);
    expect(door.verdict).toBe(one.verdict);
    expect(check.verdict).toBe(one.verdict);
    expect(check.rule).toBe(door.rule ?? undefined);
    expect(check.rule).toBe(one.rule);
  });

  it("names the credential and where it goes, never its value; the meters; the rule's line", () => {
    const check = policyCheck(config(), {
      worker: "elf",
      method: "GET",
      url: `https://api.test:${api.port}/v1/items`,
    });
    expect(check.credential).toEqual({ name: "apikey", headers: ["authorization"] });
    expect(check.meters).toEqual({ calls: 1 });
    const line = orgToml("x").split("\n").indexOf('name = "api-read"') + 1;
    expect(check.source).toBe(`${join(env.paths.config, "org.toml")}:${line}`);
    expect(JSON.stringify(check)).not.toContain(SECRET);
  });

  it("is a command: the verdict in words or JSON, a deny with the hint the box would read", async () => {
    const rosterEnv = { ROSTER_ROOT: env.root };
    const words = await runRoster(
      ["policy", "check", "elf", "PUT", `https://api.test:${api.port}/v1/items`],
      rosterEnv,
    );
    expect(words.code, words.stderr).toBe(0);
    expect(words.stdout).toMatch(/^deny {2}403 {2}no rule\n/);
    expect(words.stdout).toContain("hint:");
    const json = await runRoster(
      ["policy", "check", "elf", "GET", `https://api.test:${api.port}/v1/items`, "--json"],
      rosterEnv,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({
      verdict: "allow",
      rule: "api-read",
      credential: { name: "apikey" },
    });
    const unknown = await runRoster(
      ["policy", "check", "nobody", "GET", "https://api.test/"],
      rosterEnv,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no worker named "nobody"');
  });
});
