/**
 * MCP servers in the operator's config: a `kind = "mcp"` connection compiles
 * to a gateway rule for its host with the credential injected, and together
 * with worker.toml's `[[mcp]]` becomes the list a worker's box is given.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { boxEnvironment } from "../../runner/boundary/box/box-env.ts";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";
import { addConnection } from "../../runner/work/connections/manage.ts";

const roots: string[] = [];
async function configRoot(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-mcp-cfg-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

const TRACKER = 'kind = "mcp"\nurl = "https://mcp.tracker.example:8443/mcp"\n\n[grant.elf]\n';

describe("MCP servers in config", () => {
  it("compiles an mcp connection to a rule for its host and port, credential injected, for the granted worker only", async () => {
    const root = await configRoot({
      "org.toml": "",
      "workers/elf/worker.toml": 'name = "elf"\n',
      "workers/imp/worker.toml": 'name = "imp"\n',
      "connections/tracker.toml": TRACKER,
    });
    const config = loadConfig(root);
    expect(config.errors).toEqual([]);
    const rule = config.grants.find((grant) => grant.name === "connection:tracker");
    expect(rule).toMatchObject({
      verdict: "allow",
      scope: "org/elf",
      match: { host: ["mcp.tracker.example"], port: 8443, method: ["GET", "POST", "DELETE"] },
      inject: { credential: "tracker", headers: [{ header: "authorization" }] },
    });
    expect(workerView(config, "elf")?.mcp).toEqual([
      { name: "tracker", transport: "http", url: "https://mcp.tracker.example:8443/mcp" },
    ]);
    expect(workerView(config, "imp")?.mcp).toEqual([]);
  });

  it("puts an mcp connection after org.toml's grants, so they can deny or gate some of its tools", async () => {
    const root = await configRoot({
      "org.toml":
        '[[grant]]\nname = "tracker-deletes"\nverdict = "deny"\nmatch = { host = "mcp.tracker.example", mcp = { tool = "delete_*" } }\n',
      "workers/elf/worker.toml": 'name = "elf"\n',
      "connections/tracker.toml": TRACKER,
      "connections/api.toml": 'hosts = ["api.example.com"]\n\n[grant.elf]\n',
    });
    const config = loadConfig(root);
    expect(config.errors).toEqual([]);
    const at = (name: string) => config.grants.findIndex((grant) => grant.name === name);
    expect(at("tracker-deletes")).toBeGreaterThan(-1);
    expect(at("connection:tracker")).toBeGreaterThan(at("tracker-deletes"));
    // a service connection still comes before org.toml's grants
    expect(at("connection:api")).toBeGreaterThan(-1);
    expect(at("connection:api")).toBeLessThan(at("tracker-deletes"));
  });

  it("adds worker.toml's stdio servers after the granted ones, and hands the box the list", async () => {
    const root = await configRoot({
      "org.toml": "",
      "workers/elf/worker.toml":
        'name = "elf"\n\n[[mcp]]\nname = "notes"\ncommand = ["node", "/opt/tools/notes.mjs"]\nenv = { NOTES_DIR = "/home/worker/store/notes" }\n',
      "connections/tracker.toml": TRACKER.replace("\n\n", '\ntransport = "sse"\n\n'),
    });
    const config = loadConfig(root);
    expect(config.errors.map(formatConfigError)).toEqual([]);
    const mcp = workerView(config, "elf")?.mcp ?? [];
    expect(mcp.map((server) => [server.name, server.transport])).toEqual([
      ["tracker", "sse"],
      ["notes", "stdio"],
    ]);
    const env = boxEnvironment({
      token: "t",
      gatewayHost: "127.0.0.1",
      gatewayPort: 7300,
      runId: "r",
      mcpJson: JSON.stringify(mcp),
    });
    expect(JSON.parse(env.ROSTER_MCP_JSON ?? "[]")[1]).toEqual({
      name: "notes",
      transport: "stdio",
      command: ["node", "/opt/tools/notes.mjs"],
      env: { NOTES_DIR: "/home/worker/store/notes" },
    });
  });

  it("refuses a plain-http url, a name that can't prefix tools, and two servers with one name", async () => {
    const root = await configRoot({
      "org.toml": "",
      "workers/elf/worker.toml": 'name = "elf"\n\n[[mcp]]\nname = "tracker"\ncommand = ["x"]\n',
      "workers/imp/worker.toml":
        'name = "imp"\n\n[[mcp]]\nname = "ok"\ncommand = ["x"]\n\n[[mcp]]\nname = "Bad Name"\ncommand = ["y"]\n',
      "connections/tracker.toml": TRACKER,
      "connections/plain.toml": 'kind = "mcp"\nurl = "http://mcp.example/mcp"\n',
      "connections/_hidden.toml": 'kind = "mcp"\nurl = "https://mcp.example/mcp"\n',
    });
    const errors = loadConfig(root)
      .errors.map(formatConfigError)
      .map((line) => line.replace(`${root}/`, ""));
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^connections\/plain\.toml:2: url: .*https:\/\//),
        expect.stringMatching(
          /^connections\/_hidden\.toml:1: \(file name\): an MCP connection's name/,
        ),
        expect.stringMatching(/^workers\/imp\/worker\.toml:8: mcp\.1\.name: lower-case/),
        expect.stringMatching(
          /^workers\/elf\/worker\.toml:4: mcp\.0\.name: "tracker" is already the name of the MCP connection connections\/tracker\.toml/,
        ),
      ]),
    );
  });
});

describe("the mcp recipe", () => {
  it('writes a kind = "mcp" connection from --url that loads and grants, the secret in the vault only', async () => {
    const root = await configRoot({
      "config/org.toml": "",
      "config/workers/elf/worker.toml": 'name = "elf"\n',
    });
    const paths = rosterPaths({ ROSTER_ROOT: root });
    await mkdir(paths.vault, { recursive: true });
    await mkdir(join(paths.config, "connections"), { recursive: true });
    const added = await addConnection(paths, {
      name: "tracker",
      from: "mcp",
      hosts: [],
      url: "https://mcp.tracker.example/mcp",
      edges: ["elf"],
      fields: {},
      secret: async () => "s3cret-value",
    });
    const text = await readFile(added.file ?? "", "utf8");
    expect(text).toContain('kind = "mcp"\nurl = "https://mcp.tracker.example/mcp"');
    expect(text).not.toContain("s3cret-value");
    const config = loadConfig(paths.config, { vaultDir: paths.vault });
    expect(config.errors).toEqual([]);
    expect(workerView(config, "elf")?.mcp.map((server) => server.name)).toEqual(["tracker"]);
    await expect(
      addConnection(paths, {
        name: "other",
        from: "mcp",
        hosts: ["x.example"],
        edges: [],
        fields: {},
        secret: async () => "s",
      }),
    ).rejects.toThrow(/--from mcp takes --url, not --host or --path/);
    await expect(
      addConnection(paths, {
        name: "other",
        from: "mcp",
        hosts: [],
        url: "http://x.example/mcp",
        edges: [],
        fields: {},
        secret: async () => "s",
      }),
    ).rejects.toThrow(/needs --url https:/);
  });
});
