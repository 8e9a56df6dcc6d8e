import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { renderInjection } from "../../runner/boundary/gateway/credentials/vault.ts";
import { judge } from "../../runner/boundary/gateway/judging/judge.ts";
import { normalisePath } from "../../runner/boundary/gateway/judging/request-facts.ts";
import { connectionProvider } from "../../runner/ground/config/connection-providers.ts";
import { connectionMount, grantedTo } from "../../runner/ground/config/connections.ts";
import { listenerScope } from "../../runner/ground/config/edge-scope.ts";
import { knowledgeMount } from "../../runner/ground/config/knowledge.ts";
import {
  formatConfigError,
  type LoadedConfig,
  loadConfig,
} from "../../runner/ground/config/load.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import type { ChannelMessage, ListenerHost } from "../../runner/services/listeners/child.ts";
import { handOver } from "../../runner/services/listeners/hand-over.ts";
import { addEdge, edgesOf } from "../../runner/work/connections/connection-file.ts";
import { findRecipe } from "../../runner/work/connections/recipes.ts";
import { runRoster } from "../support/cli.ts";
import { facts } from "../support/facts.ts";

/**
 * Connection files written as the public roster documents them (its
 * docs/connections.md and configuration): they validate here with no error,
 * each place roster holds them otherwise is one notice, and what the gateway
 * then decides proves the meaning, not just the parse.
 */
const roots: string[] = [];
// the host's pi settings would name a model for a deployment without [model]: none here
beforeAll(() => {
  vi.stubEnv("PI_CODING_AGENT_DIR", join(tmpdir(), "roster-no-pi-settings"));
});
afterAll(async () => {
  vi.unstubAllEnvs();
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function deployment(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "roster-public-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

const WORKERS = {
  "org.toml": "",
  "workers/dobby/worker.toml": 'name = "dobby"\n',
  "workers/kdemo/worker.toml": 'name = "kdemo"\n',
  "workers/elf/worker.toml": 'name = "elf"\n',
};

/** Each connection's secret stored, so every one compiles to rules. */
const stored = (...names: string[]) =>
  Object.fromEntries(names.map((name) => [`vault/${name}.json`, "{}"]));

async function load(
  files: Record<string, string>,
): Promise<{ root: string; config: LoadedConfig }> {
  const root = await deployment({ ...WORKERS, ...files });
  return { root, config: loadConfig(join(root), { vaultDir: join(root, "vault") }) };
}

const said = (root: string, list: LoadedConfig["notices"]) =>
  list.map(formatConfigError).map((line) => line.replace(`${root}/`, ""));

/** What the door decides for a worker's request, and by which rule. */
function door(
  config: LoadedConfig,
  worker: string,
  method: string,
  host: string,
  path = "/",
): [string, string | undefined] {
  const decision = judge(
    config.grants,
    // the path as the gateway judges it: decoded, dot-segments resolved
    facts({ subject: `org/${worker}`, method, host, path: normalisePath(path) }),
    "request",
  );
  return [decision.verdict, decision.rule?.name];
}

const DISCORD = [
  "# connections/discord.toml, as the public roster's docs scope a bot",
  'provider = "discord"',
  'env      = "DISCORD_TOKEN"',
  'hosts    = ["discord.com"]',
  "",
  "[grant.dobby]",
  'servers  = ["1015381923845"]',
  'surfaces = ["1451951375079"]',
  "",
  "[grant.kdemo]",
  'surfaces = ["public", "dm"]',
  "",
].join("\n");

describe("connection files written for the public roster", () => {
  it("a provider's connection takes that provider's header; a model provider's needs no hosts or env", async () => {
    const { root, config } = await load({
      "connections/github.toml": [
        'provider = "github"',
        'hosts = ["api.github.com", "github.com"]',
        'env = "GH_TOKEN"',
        "",
        "[grant.dobby]",
        "",
      ].join("\n"),
      "connections/anthropic.toml": 'provider = "anthropic"\n\n[grant.org]\n',
      "connections/acme.toml": [
        'provider = "acme"',
        'hosts = ["api.acme.com"]',
        'env = "ACME_TOKEN"',
        'methods = ["GET"]',
        "",
        "[grant.elf]",
        "",
      ].join("\n"),
      "connections/codex.toml": 'provider = "openai-codex"\n\n[grant.org]\n',
      ...stored("github", "anthropic", "acme", "codex"),
    });
    expect(config.errors).toEqual([]);
    expect(said(root, config.notices)).toEqual([
      'connections/acme.toml:1: provider: roster knows no provider "acme": the gateway sends authorization: Bearer {token} from the vault credential "acme"; set inject_header and inject_value to say otherwise',
      "connections/anthropic.toml:1: provider: the gateway sends Anthropic an API key here (x-api-key: {key}, stored by roster login anthropic); a Claude sign-in (OAuth) is not taken",
      "connections/codex.toml:1: provider: roster has no ChatGPT sign-in to inject, so this connection grants nothing here; give Codex workers an OpenAI key instead (roster login openai)",
      // no [model]: the model connection is the model (public-model.ts); no host pi settings here
      "connections/anthropic.toml:1: provider: org.toml has no [model]: workers use anthropic's claude-sonnet-4-5 (roster's default) with this connection's key, reached by those its edges grant; write [model] in org.toml to choose",
    ]);

    // github: dobby's alone, with the header `roster connection add github` writes here
    expect(door(config, "dobby", "POST", "api.github.com", "/repos/o/r/issues")).toEqual([
      "allow",
      "connection:github",
    ]);
    expect(door(config, "kdemo", "GET", "api.github.com")[0]).toBe("deny");
    const github = judge(
      config.grants,
      facts({ subject: "org/dobby", host: "github.com" }),
      "request",
    );
    const headers = renderInjection(
      github.rule?.inject?.headers ?? [],
      { token: "t0k" },
      "github.com",
    );
    expect(headers.get("authorization")).toBe(
      `Basic ${Buffer.from("x-access-token:t0k").toString("base64")}`,
    );

    // anthropic: every worker, on the provider's own API, with its key's header
    const model = judge(
      config.grants,
      facts({
        subject: "org/elf",
        method: "POST",
        host: "api.anthropic.com",
        path: "/v1/messages",
      }),
      "request",
    );
    expect([model.verdict, model.rule?.name]).toEqual(["allow", "connection:anthropic"]);
    expect(
      renderInjection(model.rule?.inject?.headers ?? [], { key: "k" }, "api.anthropic.com"),
    ).toEqual(new Map([["x-api-key", "k"]]));
    expect(config.connections.get("anthropic")).toMatchObject({ hosts: ["api.anthropic.com"] });

    // an unknown provider: a bearer token, and its methods held
    expect(door(config, "elf", "GET", "api.acme.com")).toEqual(["allow", "connection:acme"]);
    expect(door(config, "elf", "DELETE", "api.acme.com")[0]).toBe("deny");

    // a provider roster can't take grants nothing, to anyone
    expect(door(config, "elf", "POST", "chatgpt.com", "/backend-api/codex/responses")[0]).toBe(
      "deny",
    );
    expect(config.grants.some((grant) => grant.name === "connection:codex")).toBe(false);
  });

  it("a provider providers.toml declares gives the header it declares", async () => {
    const { root, config } = await load({
      "providers.toml": '[acme]\ninject = [{ header = "x-acme-key", value = "{token}" }]\n',
      "connections/acme.toml":
        'provider = "acme"\nhosts = ["api.acme.com"]\nenv = "ACME_TOKEN"\n\n[grant.elf]\n',
      ...stored("acme"),
    });
    expect(config.errors).toEqual([]);
    expect(said(root, config.notices)).toEqual([]);
    const decision = judge(
      config.grants,
      facts({ subject: "org/elf", host: "api.acme.com" }),
      "request",
    );
    expect(decision.rule?.name).toBe("connection:acme");
    expect(
      renderInjection(decision.rule?.inject?.headers ?? [], { token: "t" }, "api.acme.com"),
    ).toEqual(new Map([["x-acme-key", "t"]]));
  });

  it("a Discord edge's servers and surfaces hold at the door: listed ids open, the rest is refused, never widened", async () => {
    const { root, config } = await load({
      "connections/discord.toml": DISCORD,
      ...stored("discord"),
    });
    expect(config.errors).toEqual([]);
    expect(said(root, config.notices)).toEqual([
      "connections/discord.toml:6: grant.dobby: the box may call /api/v10/channels/<id> for the 1 channel listed and /api/v10/guilds/<id> for the 1 server listed (/api/v10 only); roster refuses the listed servers' channels by their paths and DMs, which the public roster's door would open, since a request's path shows no channel's server nor whether it is a DM",
      "connections/discord.toml:10: grant.kdemo: the box may call /api/v10/channels/<id> for a channel its bot's listener recorded as public from the platform's permissions (none recorded: refused) (/api/v10 only); roster refuses DMs, which the public roster's door would open, since a request's path shows no channel's server nor whether it is a DM",
    ]);

    const post = (worker: string, path: string) =>
      door(config, worker, "POST", "discord.com", path);
    const get = (worker: string, path: string) => door(config, worker, "GET", "discord.com", path);
    // dobby: its channel and its server
    expect(post("dobby", "/api/v10/channels/1451951375079/messages")).toEqual([
      "allow",
      "connection:discord",
    ]);
    expect(get("dobby", "/api/v10/guilds/1015381923845/channels")).toEqual([
      "allow",
      "connection:discord",
    ]);
    // not another channel (not even one of its server: a path doesn't say), nor another server
    expect(post("dobby", "/api/v10/channels/2222/messages")).toEqual([
      "deny",
      "connection:discord:deny-unscoped-channels",
    ]);
    expect(get("dobby", "/api/v10/guilds/999/channels")).toEqual([
      "deny",
      "connection:discord:deny-unscoped-servers",
    ]);
    // nor the same channels through another version of the API, or a walk around the prefix
    expect(post("dobby", "/api/v9/channels/2222/messages")).toEqual([
      "deny",
      "connection:discord:deny-unscoped-api-versions",
    ]);
    expect(post("dobby", "/api/channels/2222/messages")[0]).toBe("deny");
    expect(post("dobby", "/api/v10/channels/1451951375079/../2222/messages")).toEqual([
      "deny",
      "connection:discord:deny-unscoped-channels",
    ]);
    // the rest of the API, as an empty edge gives it
    expect(get("dobby", "/api/v10/users/@me")).toEqual(["allow", "connection:discord"]);
    // kdemo names classes only: no channel by its path, the rest of the API still
    expect(post("kdemo", "/api/v10/channels/1451951375079/messages")).toEqual([
      "deny",
      "connection:discord:deny-unscoped-channels",
    ]);
    expect(get("kdemo", "/api/v10/gateway/bot")).toEqual(["allow", "connection:discord"]);
    // elf has no edge: nothing
    expect(get("elf", "/api/v10/users/@me")).toEqual(["deny", undefined]);
  });

  it("a Discord edge narrows the bot's listener the public roster's way: ids, servers, DMs unless classes leave them out", async () => {
    const { config } = await load({ "connections/discord.toml": DISCORD, ...stored("discord") });
    const dobby = listenerScope(config.connections, "discord", "dobby");
    const kdemo = listenerScope(config.connections, "discord", "kdemo");
    const elf = listenerScope(config.connections, "discord", "elf");
    if (!dobby || !kdemo || !elf) throw new Error("a provider's edges narrow its listener");
    expect(dobby("discord-1015381923845-777")).toBe(true); // a channel of its server
    expect(dobby("discord-555-1451951375079")).toBe(true); // its channel, in another server
    expect(dobby("discord-555-777")).toBe(false);
    expect(dobby("discord-dm-42")).toBe(true); // DMs by default
    expect(kdemo("discord-dm-42")).toBe(true); // "dm" named
    expect(kdemo("discord-1015381923845-777")).toBe(false); // "public": no class recorded for it
    expect(elf("discord-dm-42")).toBe(false); // no edge: nothing
    // a bot whose connection names no provider (roster's own file) hears every channel, as before
    const { config: ours } = await load({
      "connections/discord.toml": 'hosts = ["discord.com"]\n\n[grant.dobby]\n',
      ...stored("discord"),
    });
    expect(listenerScope(ours.connections, "discord", "elf")).toBeUndefined();
  });

  it("the bot's listener drops what comes from outside the worker's edge, and hands on the rest", async () => {
    const { root, config } = await load({
      "connections/discord.toml": DISCORD,
      ...stored("discord"),
    });
    const within = listenerScope(config.connections, "discord", "dobby");
    const heard: string[] = [];
    const host: ListenerHost = {
      worker: "dobby",
      paths: rosterPaths({ ROSTER_ROOT: root }),
      ...(within ? { within } : {}),
      chat: () => undefined,
      status: () => undefined,
      event: () => undefined,
      deliver: async (message: ChannelMessage) => {
        heard.push(`woke: ${message.channel}`);
      },
      record: (message: ChannelMessage) => {
        heard.push(`kept: ${message.channel}`);
      },
      decide: async () => ({ text: "", private: true, settled: false }),
      command: async () => ({ text: "", room: false }),
      complete: async () => [],
      note: () => undefined,
    };
    const say = (channel: string, id: string) =>
      handOver(host, {
        channel,
        id,
        later: (a, b) => BigInt(a) > BigInt(b),
        platformChannel: channel.split("-").at(-1) ?? "",
        fromBot: false,
        direct: channel.includes("-dm-"),
        mentioned: true,
        message: async () => ({
          channel,
          author: "jane",
          author_id: "7",
          standing: "member",
          text: "hello",
        }),
        hooks: { onStart: () => undefined, onDone: () => undefined, onFailed: () => undefined },
      });
    await say("discord-1015381923845-777", "1");
    await say("discord-555-777", "2");
    await say("discord-dm-42", "3");
    expect(heard).toEqual(["woke: discord-1015381923845-777", "woke: discord-dm-42"]);
  });

  it('the older edges mean the same edges: workers = […] (or imps), scope = "org" with one [restrict], channels for surfaces', async () => {
    const { root, config } = await load({
      "connections/gitlab.toml": [
        'provider = "gitlab"',
        'hosts = ["gitlab.com"]',
        'env = "GITLAB_TOKEN"',
        'workers = ["dobby", "kdemo"]',
        "",
      ].join("\n"),
      "connections/notion.toml": [
        'provider = "notion"',
        'hosts = ["api.notion.com"]',
        'env = "NOTION_TOKEN"',
        'imps = ["elf"]',
        "",
      ].join("\n"),
      "connections/looper.toml": [
        'provider = "discord"',
        'hosts = ["discord.com"]',
        'env = "LOOPER_TOKEN"',
        'scope = "org"',
        "",
        "[restrict]",
        'channels = ["1451951375079"]',
        "",
      ].join("\n"),
      ...stored("gitlab", "notion", "looper"),
    });
    expect(config.errors).toEqual([]);
    expect(said(root, config.notices)).toEqual([
      "connections/looper.toml:6: restrict: the box may call /api/v10/channels/<id> for the 1 channel listed (/api/v10 only); roster refuses DMs, which the public roster's door would open, since a request's path shows no channel's server nor whether it is a DM",
      "connections/notion.toml:1: provider: Notion is signed in here by OAuth consent (roster connection add notion --oauth) and sent as authorization: Bearer {access}; for an integration token set inject_header and inject_value",
    ]);
    expect(config.connections.get("gitlab")?.grant).toEqual({ dobby: {}, kdemo: {} });
    expect(config.connections.get("looper")?.grant).toEqual({
      org: { surfaces: ["1451951375079"] },
    });
    for (const worker of ["dobby", "kdemo"])
      expect(door(config, worker, "GET", "gitlab.com", "/api/v4/user")).toEqual([
        "allow",
        "connection:gitlab",
      ]);
    expect(door(config, "elf", "GET", "gitlab.com")[0]).toBe("deny");
    expect(door(config, "elf", "GET", "api.notion.com", "/v1/users/me")).toEqual([
      "allow",
      "connection:notion",
    ]);
    // scope = "org": every worker, each held to the one channel
    for (const worker of ["dobby", "kdemo", "elf"]) {
      expect(
        door(config, worker, "POST", "discord.com", "/api/v10/channels/1451951375079/messages"),
      ).toEqual(["allow", "connection:looper"]);
      expect(door(config, worker, "POST", "discord.com", "/api/v10/channels/1/messages")).toEqual([
        "deny",
        "connection:looper:deny-unscoped-channels",
      ]);
    }
    // roster's own grant and revoke rewrite the older form as tables
    const text = readFileSync(join(root, "connections/gitlab.toml"), "utf8");
    expect(edgesOf(text, "gitlab.toml")).toEqual(["dobby", "kdemo"]);
    const granted = addEdge(text, "gitlab.toml", "elf");
    expect(granted?.kept).toBe(false);
    expect(granted?.text).not.toMatch(/workers/);
    expect(edgesOf(granted?.text ?? "", "gitlab.toml")).toEqual(["dobby", "elf", "kdemo"]);
  });

  it("write_from is spelled one way, the public roster's, and roster's older spellings still mean the same", async () => {
    const bare = await mkdtemp(join(tmpdir(), "roster-public-repo-"));
    roots.push(bare);
    execFileSync("git", ["init", "--bare", "--quiet", bare]);
    const repo = (writeFrom: string) =>
      `kind = "host-repo"\npath = "${bare}"\nwrite = "gated"\nwrite_from = "${writeFrom}"\n\n[grant.org]\n`;
    const { root, config } = await load({
      "org.toml": '[knowledge]\nwrite_from = "any"\n',
      "connections/any-run.toml": repo("any-run"),
      "connections/clean-room.toml": repo("clean-room"),
      "connections/any.toml": repo("any"),
      "connections/clean.toml": repo("clean"),
      "connections/notes.toml": `kind = "host-dir"\npath = "${bare}"\nworkers = ["dobby"]\n`,
      "connections/shelf.toml": `kind = "host-dir"\npath = "${bare}"\nscope = "org"\n`,
    });
    expect(config.errors).toEqual([]);
    expect(said(root, config.notices)).toEqual([]);
    const writeFrom = (name: string) => {
      const connection = config.connections.get(name);
      return connection && connectionMount(name, connection)?.gated?.writeFrom;
    };
    expect(["any-run", "any", "clean-room", "clean"].map(writeFrom)).toEqual([
      "any",
      "any",
      "clean",
      "clean",
    ]);
    expect(config.connections.get("any")).toMatchObject({ write_from: "any-run" });
    expect(config.connections.get("clean")).toMatchObject({ write_from: "clean-room" });
    // [knowledge]: "any" read as "any-run", and the worker's own repo takes any run's push
    expect(config.org.knowledge?.write_from).toBe("any-run");
    expect(knowledgeMount(root, "elf", config.org.knowledge?.write_from).gated?.writeFrom).toBe(
      "any",
    );
    // the older mount edges
    const notes = config.connections.get("notes");
    const shelf = config.connections.get("shelf");
    if (!notes || !shelf) throw new Error("both mounts load");
    expect(["dobby", "kdemo"].map((worker) => grantedTo(notes, worker))).toEqual([true, false]);
    expect(["dobby", "kdemo", "elf"].every((worker) => grantedTo(shelf, worker))).toBe(true);
  });

  it("refuses, naming file, line and field, what neither roster would take", async () => {
    const { root, config } = await load({
      "connections/github.toml": [
        'provider = "github"',
        'hosts = ["api.github.com"]',
        'env = "GH_TOKEN"',
        "",
        "[grant.dobby]",
        'servers = ["1"]',
        "",
      ].join("\n"),
      "connections/discord.toml": [
        'provider = "discord"',
        'hosts = ["discord.com"]',
        'env = "DISCORD_TOKEN"',
        "",
        "[grant.dobby]",
        'servers = ["public"]',
        'surfaces = ["../guilds"]',
        'regions = ["eu"]',
        "",
      ].join("\n"),
      "connections/both.toml": 'hosts = ["a.test"]\nworkers = ["dobby"]\n\n[grant.kdemo]\n',
      "connections/loose.toml": 'hosts = ["a.test"]\n\n[restrict]\nservers = ["1"]\n',
      "connections/nobody.toml": 'hosts = ["a.test"]\nworkers = ["nobody"]\n',
      "connections/nohosts.toml": 'provider = "gitlab"\nenv = "GITLAB_TOKEN"\n',
      ...stored("github", "discord", "both", "loose", "nobody", "nohosts"),
    });
    expect(said(root, config.errors)).toEqual([
      "connections/both.toml:2: workers: write [grant.<worker>] tables or the older workers / scope / [restrict] keys, not both",
      'connections/discord.toml:6: grant.dobby.servers: "public" is a class of surfaces: it belongs in surfaces = […]',
      "connections/discord.toml:7: grant.dobby.surfaces: \"../guilds\" is not an id (letters, digits, '_' or '-') nor a class (public, private, dm)",
      'connections/discord.toml:8: grant.dobby.regions: provider "discord" has no dimension "regions" (it has: servers, surfaces)',
      'connections/github.toml:6: grant.dobby.servers: provider "github" narrows by no dimension: an edge here is an empty table',
      'connections/loose.toml:3: restrict: [restrict] narrows the edges of workers = […] or scope = "org", and this file has neither: write [grant.<worker>] tables',
      'connections/nobody.toml:2: workers: no worker named "nobody"',
      'connections/nohosts.toml:1: hosts: needs hosts = ["api.example.com", …] (provider "gitlab" is not a model provider, whose API roster would know)',
    ]);
    expect([...config.connections.keys()]).toEqual([]);
  });

  it("ours by name agrees with what `roster connection add <provider>` writes here", () => {
    for (const name of [
      "github",
      "gitlab",
      "notion",
      "linear",
      "openai",
      "anthropic",
      "discord",
      "slack",
    ])
      expect(connectionProvider(name)?.inject, name).toEqual(findRecipe(name)?.inject);
  });

  it("roster validate takes the files with exit 0 and says each notice in one line; a secret stored takes the provider's field", async () => {
    const root = await mkdtemp(join(tmpdir(), "roster-public-cli-"));
    roots.push(root);
    const env = { ROSTER_ROOT: root, ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" };
    expect((await runRoster(["init"], env)).code).toBe(0);
    await writeFile(
      join(root, "config/connections/anthropic.toml"),
      'provider = "anthropic"\n\n[grant.org]\n',
    );
    await writeFile(
      join(root, "config/connections/gitlab.toml"),
      'provider = "gitlab"\nhosts = ["gitlab.com"]\nenv = "GITLAB_TOKEN"\nworkers = ["elf"]\n',
    );
    const validated = await runRoster(["validate", "--json"], env);
    expect(validated.code, validated.stderr).toBe(0);
    const report = JSON.parse(validated.stdout) as { ok: boolean; notices: unknown[] };
    expect(report.ok).toBe(true);
    expect(report.notices).toEqual([expect.objectContaining({ line: 1, field: "provider" })]);
    const plain = await runRoster(["validate"], env);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(
      /^notice: .*connections\/anthropic\.toml:1: provider: the gateway sends Anthropic an API key here/m,
    );

    const secret = await runRoster(["connection", "secret", "anthropic", "--secret-env", "KEY"], {
      ...env,
      KEY: "sk-test",
    });
    expect(secret.code, secret.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(root, "data/vault/anthropic.json"), "utf8"))).toMatchObject(
      {
        key: "sk-test",
      },
    );
  });
});
