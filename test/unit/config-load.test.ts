import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { locateLine } from "../../runner/ground/config/locate.ts";

const roots: string[] = [];
async function configRoot(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-cfg-"));
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
const rel = (root: string) => (line: string) => line.replace(`${root}/`, "");

describe("config loading", () => {
  it("stamps scope: workers' deny grants first (workers sorted), then org grants, per-worker ones scoped", async () => {
    const root = await configRoot({
      "org.toml":
        '[[grant]]\nname = "o"\nverdict = "allow"\n\n[[grant]]\nname = "a"\nverdict = "allow"\nworkers = ["amy"]\n',
      "workers/zed/worker.toml": 'name = "zed"\n[[grant]]\nname = "z"\nverdict = "deny"\n',
      "workers/amy/worker.toml": 'name = "amy"\n[[grant]]\nname = "y"\nverdict = "deny"\n',
    });
    const config = loadConfig(root);
    expect(config.errors).toEqual([]);
    expect(config.grants.map((g) => [g.name, g.scope])).toEqual([
      ["y", "org/amy"],
      ["z", "org/zed"],
      ["o", "org"],
      ["a", "org/amy"],
    ]);
  });

  it("refuses a gate grant that names no MCP tool or no host, saying what it needs", async () => {
    const root = await configRoot({
      "org.toml": [
        '[[grant]]\nname = "loose"\nverdict = "gate"\nmatch = { host = "mcp.test" }\n',
        '[[grant]]\nname = "anywhere"\nverdict = "gate"\nmatch = { mcp = { tool = ["create_*"] } }\n',
        '[[grant]]\nname = "fine"\nverdict = "gate"\nmatch = { host = "mcp.test", mcp = { tool = ["create_*", "merge_*"] } }\n',
      ].join("\n"),
    });
    const errors = loadConfig(root).errors.map(formatConfigError).map(rel(root));
    expect(errors).toEqual([
      expect.stringMatching(
        /^org\.toml:3: grant\.0\.match\.mcp\.tool: a "gate" grant holds MCP tool calls/,
      ),
      expect.stringMatching(
        /^org\.toml:8: grant\.1\.match\.host: a "gate" grant holds MCP tool calls/,
      ),
    ]);
  });

  it("reports every error as file:line: field: message", async () => {
    const root = await configRoot({
      "org.toml": '[grant]\nname = "single table"\nverdict = "allow"\n',
      "workers/elf/worker.toml": 'name = "elves"\n',
      "workers/bad/worker.toml":
        'name = "bad"\ncolour = "red"\n[[grant]]\nname = "g"\nverdict = "deny"\nmatch = { port = 70000 }\n',
      "workers/syntax/worker.toml": 'name = "syntax"\n[[grant]\n',
    });
    const errors = loadConfig(root).errors.map(formatConfigError).map(rel(root));
    expect(errors).toEqual(
      expect.arrayContaining([
        "org.toml:1: grant: write [[grant]] (an array of tables), not [grant]",
        'workers/elf/worker.toml:1: name: must equal the folder name "elf" (found "elves")',
        "workers/bad/worker.toml:2: colour: unknown key",
        expect.stringMatching(/^workers\/bad\/worker\.toml:6: grant\.0\.match\.port: /),
        expect.stringMatching(/^workers\/syntax\/worker\.toml:2: \(syntax\): /),
      ]),
    );
  });

  it("refuses a connection whose env is one the box contract sets, naming file, line and field", async () => {
    const root = await configRoot({
      "org.toml": "",
      "workers/elf/worker.toml": 'name = "elf"\n',
      "connections/proxy.toml": 'hosts = ["api.example.com"]\nenv = "HTTPS_PROXY"\n',
      "connections/runs.toml": 'hosts = ["api.example.com"]\nenv = "ROSTER_RUN_ID"\n',
      "connections/fine.toml": 'hosts = ["api.example.com"]\nenv = "EXAMPLE_TOKEN"\n',
    });
    const loaded = loadConfig(root);
    expect(loaded.errors.map(formatConfigError).map(rel(root))).toEqual([
      "connections/proxy.toml:2: env: HTTPS_PROXY is reserved by the box contract; pick another name",
      "connections/runs.toml:2: env: ROSTER_RUN_ID is reserved by the box contract; pick another name",
    ]);
    expect([...loaded.connections.keys()]).toEqual(["fine"]);
  });

  it("names the file, line and field of a bad chat authority, channel class or knowledge setting", async () => {
    const root = await configRoot({
      "org.toml": [
        '[knowledge]\nwrite_from = "sometimes"\n',
        '[chat]\nadmins = ["irc:nick"]\n',
        '[chat.from_platform]\ndiscord_roles = ["moderators"]\ndiscord_guilds = ["our server"]\nslack_workspaces = ["t0lower"]\n',
        '[[grant]]\nname = "g"\nverdict = "allow"\nchannels = { surfaces = ["everywhere"] }\n',
        '[[action]]\nname = "note"\nexecutor = "message-user"\nchannels = { servers = ["Discord-1"] }\n',
      ].join("\n"),
      "workers/elf/worker.toml": 'name = "elf"\nwake = { surfaces = ["dm"], rooms = true }\n',
    });
    const errors = loadConfig(root).errors.map(formatConfigError).map(rel(root));
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^org\.toml:2: knowledge\.write_from: must be one of clean-room, any/,
        ),
        expect.stringMatching(/^org\.toml:4: chat\.admins\.0: must match/),
        expect.stringMatching(/^org\.toml:7: chat\.from_platform\.discord_roles\.0: /),
        expect.stringMatching(/^org\.toml:7: chat\.from_platform\.discord_guilds\.0: .*a guild id/),
        expect.stringMatching(
          /^org\.toml:7: chat\.from_platform\.slack_workspaces\.0: .*a team id like "T0123ABCD"/,
        ),
        `org.toml:15: grant.0.channels.surfaces.0: must be one of dm, room, term, none, public, private, or one channel's id (discord-…, slack-…, term-…, or the platform's own digits) (found "everywhere")`,
        expect.stringMatching(/^org\.toml:20: action\.0\.channels\.servers\.0: /),
        expect.stringMatching(/^workers\/elf\/worker\.toml:2: wake\.rooms: unknown key/),
      ]),
    );
  });

  it("warns when an exposure names a credential the vault doesn't hold", async () => {
    const root = await configRoot({
      "org.toml": '[[expose]]\ncredential = "github"\nenv = "GITHUB_TOKEN"\n',
      "vault/present.json": "{}",
    });
    const config = loadConfig(root, { vaultDir: join(root, "vault") });
    expect(config.errors).toEqual([]);
    expect(config.warnings).toEqual([
      'org.toml: GITHUB_TOKEN exposes credential "github", which is not in the vault: the box gets a placeholder nothing will replace',
    ]);
  });

  it("locates values inside array tables, sub-tables and inline tables", () => {
    const text = [
      "[[grant]]", // 1
      'name = "a"', // 2
      "[[grant]]", // 3
      'name = "b"', // 4
      "[grant.match]", // 5
      'host = "x"', // 6
      "[[grant]]", // 7
      'match = { host = "y" }', // 8
    ].join("\n");
    expect(locateLine(text, "/grant/1/name")).toBe(4);
    expect(locateLine(text, "/grant/1/match/host")).toBe(6);
    expect(locateLine(text, "/grant/2/match/host")).toBe(8);
  });
});
