import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { vetConfigEdit } from "../../runner/boundary/gateway/policy/config-edit.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { approveGate, denyGate } from "../../runner/services/actions/desk.ts";
import { showGate } from "../../runner/services/actions/desk-view.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { formatTrust, trustOf } from "../../runner/services/actions/trust-view.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * request_access through the real gateway: a proposal that carries the exact
 * edit of org.toml, held for a human whatever trust says, written on approval
 * through the config's own validation and tests, and obeyed by the door on
 * the next request; a refused edit and a denial leave the config as it was.
 */
let api: Upstream;
let env: GatewayEnv;
let orgFile: string;
let workerFile: string;

const ask = async (payload: Record<string, unknown>) =>
  submitAction(env, await env.token("elf", "run-access"), { intent: "request-access", payload });
const access = (methods: string[], path_prefix: string, host = "api.test") => ({
  host,
  methods,
  path_prefix,
  why: "to file the items the lead asked for",
});
const send = async (method: string, path: string) =>
  (
    await viaProxy(
      proxyUrlFor(env, await env.token("elf", "run-access")),
      `https://api.test:${api.port}${path}`,
      {
        method,
        ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
      },
    )
  ).status;
/** The door's answer once it has read the config again (it checks every 500 ms). */
const sendUntil = async (method: string, path: string, status: number) => {
  const deadline = Date.now() + 5000;
  let got = await send(method, path);
  while (got !== status && Date.now() < deadline) got = await send(method, path);
  return got;
};

beforeAll(async () => {
  api = await Upstream.start({ tls: true, names: ["api.test"] });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "upstream-ca.pem");
  await writeFile(caFile, api.certificate?.caPem ?? "");
  workerFile = join(env.paths.config, "workers", "elf", "worker.toml");
  await mkdir(join(workerFile, ".."), { recursive: true });
  await writeFile(workerFile, 'name = "elf"\n');
  orgFile = join(env.paths.config, "org.toml");
  await env.writeOrg(`[gateway]
upstream_ca = ["${caFile}"]
resolve = { "api.test" = "127.0.0.1" }

[[grant]]
name = "api-read"
verdict = "allow"
match = { host = "api.test", method = "GET" }

# every trust there is says run it unasked: an access request waits for a human all the same
[[action]]
name = "request-access"
executor = "access"
trust = "auto"

[[trust]]
intent = "request-access"
level = "auto"
workers = ["elf"]
`);
  await env.restart(); // upstream CAs are read at start
});
afterAll(async () => {
  await env?.cleanup();
  await api?.stop();
});

describe("request_access", () => {
  it("waits for a human whatever trust says, shows the exact diff, and once approved the door lets the next request through", async () => {
    expect(await send("POST", "/v1/items/1")).toBe(403);
    const filed = await ask(access(["POST"], "/v1/items/", "API.test"));
    expect(filed.status).toBe(202);
    expect(String(filed.body.message)).toContain("an access request always waits for a human");
    const config = loadConfig(env.paths.config, { vaultDir: env.paths.vault });
    expect(formatTrust("elf", trustOf(env.paths, config, "elf"))).toMatch(
      /request-access → access\n\s+gate\s+always: an access request always waits for a human, whatever the rules say\n/,
    );
    const gate = findGate(env.paths, String(filed.body.gate_id));
    const shown = showGate(env.paths, gate);
    expect(shown).toContain(
      "POST https://api.test/v1/items/ for elf: to file the items the lead asked for",
    );
    expect(shown).toContain(`+[[grant]]
+name = "${/access-elf-[0-9a-f]{8}/.exec(shown)?.[0]}"
+verdict = "allow"
+match = { protocol = "https", host = "api.test", method = ["POST"], pathPrefix = "/v1/items/" }
+workers = ["elf"]`);
    expect(shown).toContain('+request = "POST https://api.test/v1/items/"');

    const done = await approveGate(env.paths, gate, { by: "test" });
    expect(done).toMatchObject({ state: "executed", result: { status: "ok", file: "org.toml" } });
    expect(vetConfigEdit(env.paths.config, [])).toEqual([]);
    expect(await sendUntil("POST", "/v1/items/1", 200)).toBe(200);
    expect(await send("PUT", "/v1/items/1")).toBe(403);
    expect(await send("POST", "/v2/items")).toBe(403);
  });

  it("refuses at once a wildcard, an internal address, an unknown method, a path the door reads otherwise, and what is already allowed", async () => {
    const refused = [
      await ask(access(["GET"], "/", "*.api.test")),
      await ask(access(["POST"], "/", "169.254.169.254")),
      await ask(access(["POST"], "/", "localhost")),
      await ask(access(["BREW"], "/")),
      await ask(access(["POST"], "v1/")),
      await ask(access(["POST"], "/a/../b")),
      await ask(access(["GET"], "/v1/")),
    ];
    expect(refused.map((reply) => reply.status)).toEqual([400, 409, 409, 400, 400, 409, 409]);
    const said = refused.map((reply) => String(reply.body.error));
    expect(said[1]).toContain("payload.host: 169.254.169.254: an internal address");
    expect(said[5]).toContain('the door reads it as "/b"');
    expect(said[6]).toContain(
      'already allowed: the door lets GET https://api.test/v1/ through (rule "api-read")',
    );
  });

  it("an approval the config refuses fails with the problems and changes nothing; a denial keeps its reason", async () => {
    const filed = await ask(access(["DELETE"], "/v1/items/"));
    expect(filed.status).toBe(202);
    // meanwhile the worker is denied the whole API: the grant's own test would fail
    await writeFile(
      workerFile,
      'name = "elf"\n\n[[grant]]\nname = "no-api"\nverdict = "deny"\nmatch = { host = "api.test" }\n',
    );
    const before = readFileSync(orgFile, "utf8");
    const failed = await approveGate(env.paths, findGate(env.paths, String(filed.body.gate_id)), {
      by: "test",
    });
    expect(failed.state).toBe("failed");
    expect(failed.error).toMatch(
      /^the config refused the grant and was left as it was: .*DELETE https:\/\/api\.test\/v1\/items\/ \(worker elf\): expected allow by rule "access-elf-[0-9a-f]{8}", the door would deny by rule "no-api"/,
    );
    expect(readFileSync(orgFile, "utf8")).toBe(before);
    await writeFile(workerFile, 'name = "elf"\n');

    const asked = await ask(access(["PATCH"], "/v1/items/"));
    const denied = await denyGate(env.paths, findGate(env.paths, String(asked.body.gate_id)), {
      by: "test",
      note: "use PUT on the item instead",
    });
    expect(denied).toMatchObject({ state: "denied", decision_note: "use PUT on the item instead" });
    expect(readFileSync(orgFile, "utf8")).toBe(before);
    expect(await sendUntil("PATCH", "/v1/items/1", 403)).toBe(403);
    expect(readJournal(env.paths, "elf", 50)).toContainEqual(
      expect.objectContaining({
        kind: "denied",
        intent: "request-access",
        detail: { by: "test", note: "use PUT on the item instead" },
      }),
    );
  });
});
