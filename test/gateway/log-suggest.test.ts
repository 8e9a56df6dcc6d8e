import { readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForDecision } from "../support/audit.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * `roster gateway log --denied --suggest`: real requests refused by the real
 * door, then the suggestions read from its log — the narrowest grant, a
 * connection that serves the host, and the groups no grant would answer —
 * and a suggested grant, added as printed, lets exactly those requests through.
 */
let api: Upstream;
let env: GatewayEnv;
let orgFile: string;
const send = async (worker: string, method: string, url: string) => {
  const token = await env.token(worker, `run-${worker}-suggest`);
  return viaProxy(proxyUrlFor(env, token), url, {
    method,
    ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
  });
};
const roster = (...args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });

beforeAll(async () => {
  api = await Upstream.start({ tls: true, names: ["api.test", "api.tracker.test"] });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "upstream-ca.pem");
  await writeFile(caFile, api.certificate?.caPem ?? "");
  for (const worker of ["elf", "scout"]) {
    await mkdir(join(env.paths.config, "workers", worker), { recursive: true });
    await writeFile(
      join(env.paths.config, "workers", worker, "worker.toml"),
      `name = "${worker}"\n`,
    );
  }
  await mkdir(join(env.paths.config, "connections"), { recursive: true });
  await writeFile(
    join(env.paths.config, "connections", "tracker.toml"),
    'hosts = ["api.tracker.test"]\n\n[grant.scout]\n',
  );
  await env.writeVault("tracker", { token: "tracker-secret" });
  orgFile = join(env.paths.config, "org.toml");
  await env.writeOrg(`[gateway]
upstream_ca = ["${caFile}"]
resolve = { "api.test" = "127.0.0.1", "api.tracker.test" = "127.0.0.1" }

[[grant]]
name = "no-secrets"
verdict = "deny"
match = { host = "api.test", pathPrefix = "/secrets" }

[[grant]]
name = "api-read"
verdict = "allow"
match = { host = "api.test", method = "GET" }
`);
  await env.restart(); // upstream CAs are read at start
  const at = `https://api.test:${api.port}`;
  const refused = [
    await send("elf", "POST", `${at}/v1/items/1`),
    await send("elf", "PUT", `${at}/v1/items/2?draft=1`),
    await send("elf", "POST", `${at}/secrets/key`),
    await send("elf", "GET", "https://api.github.com/user"),
    // refused before any connection: port 443, where the connection serves it
    await send("elf", "GET", "https://api.tracker.test/issues"),
    await send("elf", "GET", "http://169.254.169.254/latest/meta-data"),
    await send("scout", "DELETE", `${at}/v1/items/3`),
  ];
  expect(refused.map((response) => response.status)).toEqual([403, 403, 403, 403, 403, 403, 403]);
  await waitForDecision(env.paths.audit, (line) => line.subject === "org/scout");
});
afterAll(async () => {
  await env?.cleanup();
  await api?.stop();
});

describe("roster gateway log --denied --suggest", () => {
  it("says the narrowest grant, the connection that serves a host, and why the rest get none", async () => {
    const words = await roster("gateway", "log", "--denied", "--suggest", "--worker", "elf");
    expect(words.code, words.stderr).toBe(0);
    const out = words.stdout;
    expect(out).toContain(`elf → api.test: 2 refused (POST, PUT), the last at`);
    expect(out).toContain(
      `  add to ${orgFile} (the door allows every one of them with it):
    [[grant]]
    name = "elf-api.test"
    verdict = "allow"
    match = { protocol = "https", host = "api.test", method = ["POST", "PUT"], pathPrefix = "/v1/items/" }
    workers = ["elf"]
`,
    );
    expect(out).toMatch(
      /elf → api\.github\.com: 1 refused \(GET\).*\n {2}run: roster connection add github --worker elf\n {2}\(the door allows every one of them with it, once its secret is stored\)/,
    );
    expect(out).toMatch(
      /elf → api\.tracker\.test: 1 refused \(GET\).*\n {2}run: roster connection grant tracker elf\n/,
    );
    const none = out.slice(out.indexOf("no suggestion:"));
    expect(none).toContain(
      'elf → api.test: 1 refused: the grant "no-secrets" refuses them on purpose: change that rule, not add one',
    );
    expect(none).toContain(
      "elf → 169.254.169.254: 1 refused: an internal address (link-local or cloud metadata): a grant naming it would lift the SSRF guard",
    );
    expect(out).not.toContain("scout");
  });

  it("--json: one line a suggestion; the grant, added as printed, admits those requests and no others", async () => {
    const json = await roster("gateway", "log", "--suggest", "--worker", "elf", "--json");
    expect(json.code, json.stderr).toBe(0);
    const lines = json.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const grant = lines.find((line) => line.host === "api.test" && line.suggestion);
    expect(grant).toMatchObject({
      worker: "elf",
      refused: 2,
      methods: ["POST", "PUT"],
      suggestion: { kind: "grant", file: "org.toml", rule: "elf-api.test" },
      verified: true,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({ host: "169.254.169.254", suggestion: null, refused: 1 }),
    );
    const toml = String((grant?.suggestion as { toml?: string } | undefined)?.toml);
    await env.writeOrg(`${await readFile(orgFile, "utf8")}\n${toml}`);
    const at = `https://api.test:${api.port}`;
    expect((await send("elf", "POST", `${at}/v1/items/1`)).status).toBe(200);
    expect((await send("elf", "PUT", `${at}/v1/items/2`)).status).toBe(200);
    expect((await send("elf", "POST", `${at}/v2/other`)).status).toBe(403);
    expect((await send("scout", "DELETE", `${at}/v1/items/3`)).status).toBe(403);
  });
});
