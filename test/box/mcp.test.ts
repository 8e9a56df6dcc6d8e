/**
 * MCP through the door, end to end: a real box running pi with the scripted
 * model, the real gateway, a real MCP server (the official SDK, bearer auth,
 * TLS) on the host, a hostile one, and a stdio server started in the box.
 */
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { testDocker } from "../support/docker.ts";
import { type HostileMcp, startHostileMcp } from "../support/mcp-hostile.ts";
import { type McpTestServer, startMcpServer } from "../support/mcp-server.ts";
import { ModelServer, type RecordedRequest, textOf } from "../support/model-server.ts";
import { freePort, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();
const SECRET = "tracker-secret-7f3a91c2";
/** The hostile server's call deadline (its connection's call_timeout_secs). */
const CALL_TIMEOUT_SECS = 5;

/** The tool results the model was sent in this request, by tool call id order. */
function toolResults(request: RecordedRequest): string[] {
  return (request.body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => textOf(m.content));
}
const toolNames = (request: RecordedRequest | undefined) =>
  (request?.body.tools ?? []).map((tool) => tool.function.name);
const systemPrompt = (request: RecordedRequest | undefined) =>
  textOf(request?.body.messages?.find((m) => m.role === "system")?.content);

describe.skipIf(!docker)("MCP end to end: a real box, the real gateway, real MCP servers", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let tracker: McpTestServer;
  let hostile: HostileMcp;
  let docs: Upstream;
  let blocked: Upstream;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
    const dir = deployment.root;
    tracker = await startMcpServer({
      name: "mcp.test",
      token: SECRET,
      dir,
      tools: [
        {
          name: "lookup",
          description: "Look an issue up by id",
          inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
          run: (args) => `issue ${String(args.id)}: open, assigned to nobody`,
        },
        {
          name: "delete_issue",
          description: "Delete an issue",
          inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
          run: (args) => `deleted ${String(args.id)}`,
        },
        {
          name: "close_issue",
          description: "Close an issue",
          inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
          run: (args) => `closed ${String(args.id)}`,
        },
      ],
    });
    hostile = await startHostileMcp({ name: "hostile.test", dir });
    docs = await Upstream.start({
      tls: true,
      names: ["docs.test"],
      handler: (_req, res) => {
        res.writeHead(200).end("DOCS-PAGE-OK");
      },
    });
    blocked = await Upstream.start({
      tls: true,
      names: ["blocked.test"],
      handler: (_req, res) => {
        res.writeHead(200).end("BLOCKED-CONTENT");
      },
    });
    const caFiles = [tracker.caFile, hostile.caFile];
    for (const [name, upstream] of [
      ["docs", docs],
      ["blocked", blocked],
    ] as const) {
      const file = join(dir, `${name}-ca.pem`);
      await writeFile(file, upstream.certificate?.caPem ?? "");
      caFiles.push(file);
    }
    const { config, vault, data } = deployment.paths;
    const names = ["mcp.test", "hostile.test", "docs.test", "blocked.test", "down.test"];
    const orgFile = join(config, "org.toml");
    const org = (await readFile(orgFile, "utf8"))
      .replace(
        /\[gateway\]\n/,
        `[gateway]\nupstream_ca = ${JSON.stringify(caFiles)}\nresolve = { ${names.map((n) => `"${n}" = "127.0.0.1"`).join(", ")} }\n`,
      )
      // no web-read: the only hosts a box reaches are the ones granted here
      .replace(
        /\[\[grant\]\]\nname = "web-read"\nverdict = "allow"\nmatch = [^\n]*\n/,
        '[[grant]]\nname = "docs"\nverdict = "allow"\nmatch = { host = "docs.test", method = "GET" }\n' +
          // org.toml narrows the tracker connection: one tool refused, one held for a human
          '\n[[grant]]\nname = "tracker-deletes"\nverdict = "deny"\nmatch = { host = "mcp.test", mcp = { tool = "delete_*" } }\n' +
          '\n[[grant]]\nname = "tracker-closes"\nverdict = "gate"\nmatch = { host = "mcp.test", mcp = { tool = ["close_*"] } }\ninject = { credential = "tracker" }\n',
      )
      // the config's own test of web-read now says what this one does (else no run starts)
      .replace(/expect = "allow"\nrule = "web-read"\n/, 'expect = "deny"\n');
    if (org.includes('rule = "web-read"')) throw new Error("org.toml still tests web-read");
    await writeFile(orgFile, org);
    await mkdir(join(config, "connections"), { recursive: true });
    const connection = (url: string, extra = "") =>
      `kind = "mcp"\nurl = "${url}"\n${extra}\n[grant.elf]\n`;
    await writeFile(join(config, "connections/tracker.toml"), connection(tracker.url));
    await writeFile(
      join(config, "connections/hostile.toml"),
      connection(hostile.url, `call_timeout_secs = ${CALL_TIMEOUT_SECS}\n`),
    );
    await writeFile(
      join(config, "connections/down.toml"),
      connection(`https://down.test:${await freePort()}/mcp`),
    );
    await storeCredential(vault, "tracker", { token: SECRET });
    await storeCredential(vault, "hostile", { token: "hostile-token" });
    await storeCredential(vault, "down", { token: "down-token" });
    // the stdio server lives in the worker's store, where the box can run it
    const store = join(data, "workers", "elf", "store");
    await mkdir(store, { recursive: true });
    await copyFile(
      join(import.meta.dirname, "../fixtures/mcp/fetch-server.mjs"),
      join(store, "fetch-server.mjs"),
    );
    const workerFile = join(config, "workers/elf/worker.toml");
    await writeFile(
      workerFile,
      `${await readFile(workerFile, "utf8")}\n[[mcp]]\nname = "fetcher"\ncommand = ["node", "/home/worker/store/fetch-server.mjs"]\n`,
    );
  });
  afterAll(async () => {
    await model?.stop();
    await Promise.all([tracker?.stop(), hostile?.stop(), docs?.stop(), blocked?.stop()]);
    await deployment?.cleanup();
  });

  it("lists a granted server's tools and calls one: the gateway adds the token, the box never holds it", async () => {
    model.reset();
    const before = model.requests.length;
    model.play(
      { toolCalls: [{ name: "tracker__lookup", arguments: { id: "42" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "env; ls -la ~ ~/.roster 2>&1" } }] },
      { text: "done" },
    );
    const run = await deployment.roster(["run", "elf", "look up issue 42"], { timeoutMs: 240_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = model.requests.slice(before);
    const first = requests[0];
    expect(toolNames(first)).toEqual(
      expect.arrayContaining(["tracker__lookup", "hostile__fine", "fetcher__fetch_url"]),
    );
    expect(toolNames(first).some((name) => name.startsWith("down__"))).toBe(false);
    // a dead server is a note at start, not a failed run
    expect(systemPrompt(first)).toMatch(/- down: unavailable/);
    expect(tracker.calls).toEqual([{ tool: "lookup", args: { id: "42" } }]);
    expect(tracker.authorizations.length).toBeGreaterThan(1);
    expect(tracker.authorizations.every((header) => header === `Bearer ${SECRET}`)).toBe(true);
    expect(toolResults(requests[1] as RecordedRequest).at(-1)).toBe(
      "issue 42: open, assigned to nobody",
    );
    const env = toolResults(requests[2] as RecordedRequest).at(-1) ?? "";
    expect(env).toContain("ROSTER_MCP_JSON=");
    // neither the box's environment nor anything the model was sent holds the token
    expect(JSON.stringify(requests)).not.toContain(SECRET);
  });

  it("org.toml narrows the connection: a refused tool names its rule, a gated one waits for a human and runs once", async () => {
    model.reset();
    const before = model.requests.length;
    const calls = tracker.calls.length;
    model.play(
      { toolCalls: [{ name: "tracker__delete_issue", arguments: { id: "7" } }] },
      { toolCalls: [{ name: "tracker__close_issue", arguments: { id: "8" } }] },
      { text: "asked" },
    );
    const run = await deployment.roster(["run", "elf", "tidy the tracker"], { timeoutMs: 240_000 });
    expect(run.code, run.stderr).toBe(0);
    const requests = model.requests.slice(before);
    // the refusal reaches the model as the JSON-RPC error the gateway wrote, naming the rule
    expect(toolResults(requests[1] as RecordedRequest).at(-1)).toMatch(/tracker-deletes/);
    const held = toolResults(requests[2] as RecordedRequest).at(-1) ?? "";
    expect(held).toMatch(/held for human approval: proposal g-[0-9a-f]+/);
    // neither reached the server
    expect(tracker.calls.length).toBe(calls);

    const gateId = /g-[0-9a-f]+/.exec(held)?.[0] ?? "";
    const listed = await deployment.roster(["approvals", "ls"]);
    expect(listed.stdout).toContain(gateId);
    expect(listed.stdout).toMatch(/close_issue \{"id":"8"\}/);
    const approved = await deployment.roster(["approvals", "approve", gateId]);
    expect(approved.stdout, approved.stderr).toContain(`${gateId} executed`);
    await deployment.roster(["approvals", "approve", gateId]);
    expect(tracker.calls.slice(calls)).toEqual([{ tool: "close_issue", args: { id: "8" } }]);
    expect(tracker.authorizations.at(-1)).toBe(`Bearer ${SECRET}`);
  });

  it("a hostile server costs errors the model can read: no hung turn, no crashed pi", async () => {
    model.reset();
    const before = model.requests.length;
    model.play(
      {
        toolCalls: [
          { name: "hostile__endless", arguments: {} },
          { name: "hostile__huge", arguments: {} },
          { name: "hostile__garbage", arguments: {} },
          { name: "hostile__fine", arguments: {} },
        ],
      },
      { text: "survived" },
    );
    const run = await deployment.roster(["run", "elf", "try the hostile tools"], {
      timeoutMs: 240_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const requests = model.requests.slice(before);
    const names = toolNames(requests[0]);
    // the broken names are skipped or made safe, the rest registered
    expect(names).toEqual(
      expect.arrayContaining(["hostile__fine", "hostile__loop", "hostile__strange"]),
    );
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(systemPrompt(requests[0])).toMatch(/hostile: tool #6 skipped \(no name\)/);
    const results = toolResults(requests[1] as RecordedRequest);
    expect(results).toHaveLength(4);
    const [endless, huge, garbage, fine] = results;
    // the call's own deadline ended the endless one: the client gave up on it and cancelled it
    expect(endless).toBe(
      `MCP server hostile failed on endless: no answer within ${CALL_TIMEOUT_SECS} s; the call was cancelled`,
    );
    // and the turn went on from there: the four calls (run at once) took that deadline and
    // little more, from the model's answer with them to its next request with their results
    const waited = (requests[1]?.arrivedAt ?? 0) - (requests[0]?.arrivedAt ?? 0);
    expect(waited).toBeGreaterThanOrEqual(CALL_TIMEOUT_SECS * 1000);
    expect(waited).toBeLessThan(CALL_TIMEOUT_SECS * 1000 + 10_000);
    expect(huge).toMatch(/hostile failed on huge: /);
    expect(huge?.length).toBeLessThan(5_000);
    expect(garbage).toMatch(/hostile failed on garbage: its answer was not valid JSON-RPC/);
    expect(fine).toBe("fine: all good");
  });

  it("a stdio server in the box reaches a granted host through the door and is refused an ungranted one", async () => {
    model.reset();
    const before = model.requests.length;
    model.play(
      {
        toolCalls: [
          { name: "fetcher__fetch_url", arguments: { url: `https://docs.test:${docs.port}/` } },
          {
            name: "fetcher__fetch_url",
            arguments: { url: `https://blocked.test:${blocked.port}/` },
          },
        ],
      },
      { text: "fetched" },
    );
    const run = await deployment.roster(["run", "elf", "fetch two pages"], { timeoutMs: 240_000 });
    expect(run.code, run.stderr).toBe(0);
    const [granted, refused] = toolResults(model.requests.slice(before)[1] as RecordedRequest);
    expect(granted).toBe("status 200: DOCS-PAGE-OK");
    expect(refused).toMatch(/^status 403: /);
    expect(docs.seen).toHaveLength(1);
    expect(blocked.seen).toHaveLength(0);
  });
});
