import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { mintToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { type ReplayReport, replayLog } from "../../runner/boundary/gateway/policy/replay.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * `roster policy replay` finds exactly what an edit changes: requests are
 * sent through the real gateway by two runs of elf (one whose token names
 * its channels, none of them; one whose token names none, as every line
 * before the field was), the audit log they leave is judged again under the
 * unchanged config (nothing flips) and under a draft in another folder
 * (--config) that drops a deny rule, adds a write grant, gates a tool, adds
 * a rule matching a header the log redacts and one limited to DMs. The
 * flips must be exactly the three the edit makes; the two requests whose
 * verdict turns on what the log doesn't keep are counted, with why, and so
 * is a JSON-RPC batch (refused whatever the grants say).
 */

let api: Upstream;
let env: GatewayEnv;
let draft: string;
const RUN = "run-replay-1" as const;
const OLD_RUN = "run-replay-old" as const;

const grants = (caFile: string, edited: boolean) => `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "api.test" = "127.0.0.1" }
${
  edited
    ? ""
    : `
[[grant]]
name = "api-no-secrets"
verdict = "deny"
match = { host = "api.test", pathPrefix = "/secrets" }
`
}
[[grant]]
name = "tools-hold-deletes"
verdict = "gate"
match = { host = "api.test", mcp = { tool = "delete_*" } }
${
  edited
    ? `
[[grant]]
name = "tools-hold-echo"
verdict = "gate"
match = { host = "api.test", mcp = { tool = "echo" } }

[[grant]]
name = "api-write"
verdict = "allow"
match = { host = "api.test", method = ["PUT"] }

[[grant]]
name = "api-token-only"
verdict = "deny"
match = { host = "api.test", headerContains = { authorization = "Bearer admin" } }

[[grant]]
name = "api-dm-only"
verdict = "allow"
match = { host = "api.test", pathPrefix = "/v1/dm" }
channels = { surfaces = ["dm"] }
`
    : ""
}
[[grant]]
name = "tools"
verdict = "allow"
match = { host = "api.test", pathPrefix = "/mcp", method = ["POST"] }

[[grant]]
name = "api-read"
verdict = "allow"
match = { host = "api.test", method = ["GET"] }
`;

const call = (tool: string) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool } });
const JSON_BODY = { "content-type": "application/json" };

/** What each run sends: the method, the path, and its headers and body. */
const SENT: Array<[typeof RUN | typeof OLD_RUN, string, string, Record<string, string>?, string?]> =
  [
    [RUN, "GET", "/v1/items"],
    [RUN, "GET", "/secrets/key"],
    [RUN, "PUT", "/v1/items"],
    [RUN, "POST", "/mcp", JSON_BODY, call("echo")],
    [RUN, "POST", "/mcp", JSON_BODY, call("delete_repo")],
    [RUN, "POST", "/mcp", JSON_BODY, `[${call("echo")}]`],
    [RUN, "GET", "/v1/me", { authorization: "Bearer someone" }],
    [RUN, "GET", "/v1/dm/notes"],
    [OLD_RUN, "GET", "/v1/dm/notes"],
  ];

beforeAll(async () => {
  api = await Upstream.start({ tls: true, names: ["api.test"] });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "upstream-ca.pem");
  await writeFile(caFile, api.certificate?.caPem ?? "");
  await env.writeOrg(grants(caFile, false));
  await env.restart(); // upstream CAs are read at start
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  draft = await mkdtemp(join(tmpdir(), "roster-draft-"));
  await mkdir(join(draft, "workers", "elf"), { recursive: true });
  await writeFile(join(draft, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await writeFile(join(draft, "org.toml"), grants(caFile, true));

  const tokens = {
    [RUN]: await mintToken(env.paths.identity, { subject: "org/elf", runId: RUN, origins: [] }),
    [OLD_RUN]: await env.token("elf", OLD_RUN),
  };
  const ca = readFileSync(join(env.paths.ca, "ca.crt"), "utf8");
  for (const [run, method, path, headers, body] of SENT)
    await viaProxy(proxyUrlFor(env, tokens[run]), `https://api.test:${api.port}${path}`, {
      method,
      ca,
      ...(headers ? { headers } : {}),
      ...(body ? { body } : {}),
    });
  // every line is written once its exchange ends
  const deadline = Date.now() + 5000;
  while (readDecisions(env.paths.audit).length < SENT.length && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 25));
});
afterAll(async () => {
  await env?.cleanup();
  await api?.stop();
  if (draft) await rm(draft, { recursive: true, force: true });
});

const log = () => join(env.paths.audit, "decisions.jsonl");
const replay = (root: string) =>
  replayLog(log(), loadConfig(root, { vaultDir: env.paths.vault }), { worker: "elf" });
const reasons = (report: ReplayReport) =>
  Object.fromEntries(report.notReplayed.map((one) => [one.reason, one.count]));

describe("roster policy replay", () => {
  it("finds no flip under the config the log was written under", () => {
    const report = replay(env.paths.config);
    expect(report.decisions).toBe(SENT.length);
    expect(report.flipped).toBe(0);
    expect(report.reruled).toBe(0);
    expect(reasons(report)).toEqual({ "a JSON-RPC batch, refused whatever the grants say": 1 });
    expect(report.replayed).toBe(SENT.length - 1);
    expect(report.unchanged).toBe(SENT.length - 1);
  });

  it("finds exactly the flips a draft makes, and says which lines turn on what the log doesn't keep", () => {
    const report = replay(draft);
    const flips = report.flips.map((group) => ({
      worker: group.worker,
      from: group.from,
      to: group.to,
      count: group.count,
      examples: group.examples.map((example) => example.request.replace(`:${api.port}`, "")),
    }));
    expect(flips).toEqual([
      {
        worker: "elf",
        from: { verdict: "deny", rule: "api-no-secrets" },
        to: { verdict: "allow", rule: "api-read" },
        count: 1,
        examples: ["GET https://api.test/secrets/key"],
      },
      {
        worker: "elf",
        from: { verdict: "deny", rule: null },
        to: { verdict: "allow", rule: "api-write" },
        count: 1,
        examples: ["PUT https://api.test/v1/items"],
      },
      {
        worker: "elf",
        from: { verdict: "allow", rule: "tools" },
        to: { verdict: "gate", rule: "tools-hold-echo" },
        count: 1,
        examples: ["POST https://api.test/mcp"],
      },
    ]);
    expect(report.flips[0]?.examples[0]?.run_id).toBe(RUN);
    expect(report.flipped).toBe(3);
    expect(report.reruled).toBe(0);
    expect(reasons(report)).toEqual({
      "a JSON-RPC batch, refused whatever the grants say": 1,
      'rule "api-token-only" matches its authorization header, which the log keeps redacted': 1,
      'rule "api-dm-only" is only for runs from surfaces dm, and the line keeps no channels (written before lines kept them, or its run\'s token named none)': 1,
    });
    // the DM-only rule is judged for the run whose line names its channels (none: not a DM)
    expect(report.unchanged).toBe(3);
  });

  it("is a command: words by worker and rule, JSON, and exit 1 only when something flips", async () => {
    const rosterEnv = { ROSTER_ROOT: env.root };
    const same = await runRoster(["policy", "replay"], rosterEnv);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain(`replayed ${SENT.length - 1} of ${SENT.length} decisions`);
    expect(same.stdout).toContain("none would flip");
    const edited = await runRoster(
      ["policy", "replay", "--config", draft, "--worker", "elf", "--since", "1h"],
      rosterEnv,
    );
    expect(edited.code, edited.stderr).toBe(1);
    expect(edited.stdout).toContain("3 would flip:\n  elf\n");
    expect(edited.stdout).toContain('    deny "api-no-secrets" → allow "api-read"  1\n');
    expect(edited.stdout).toMatch(
      new RegExp(`      GET https://api\\.test:${api.port}/secrets/key {2}\\S+ {2}run ${RUN}\n`),
    );
    expect(edited.stdout).toContain("3 not replayed:");
    const json = await runRoster(["policy", "replay", "--config", draft, "--json"], rosterEnv);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ config: draft, flipped: 3, decisions: 9 });
    const bad = await runRoster(["policy", "replay", "--since", "yesterday"], rosterEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--since yesterday: expected a span");
  });
});
