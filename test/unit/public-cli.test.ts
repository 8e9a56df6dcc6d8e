import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";

/**
 * The public roster's command tree as a user of it types it, through the real
 * `roster` against a deployment `roster init` made: a bare noun shows its
 * list (or the server its status) instead of help, `-V` names the commit,
 * `worker knowledge` prints the repo's path, bare `talk` the workers.
 */
let root: string;
const env = () => ({ ROSTER_ROOT: root });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "roster-public-cli-"));
  const init = await runRoster(["init"], env());
  expect(init.code).toBe(0);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the public roster's command tree", () => {
  it("-V and --version print the version, the commit this checkout is at and the Node", async () => {
    const head = execFileSync("git", ["-C", PROJECT_ROOT, "rev-parse", "--short", "HEAD"], {
      encoding: "utf8",
    }).trim();
    for (const flag of ["-V", "--version"]) {
      const result = await runRoster([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(
        new RegExp(
          `^\\d+\\.\\d+\\.\\d+ \\(${head}(\\+dirty)?\\) on Node v\\d+\\.\\d+\\.\\d+ \\(.+\\)\\n$`,
        ),
      );
    }
  });

  it.each([
    ["worker", "worker ls"],
    ["connection", "connection ls"],
    ["channel", "channel ls"],
    ["server channel", "channel ls"],
    ["server approvals", "approvals ls"],
    ["server runs", "runs ls"],
    ["worker task", "task ls"],
    ["server", "server status"],
  ])("bare `roster %s` is `roster %s`", async (spelled, ours) => {
    const [bare, full] = await Promise.all([
      runRoster(spelled.split(" "), env()),
      runRoster(ours.split(" "), env()),
    ]);
    expect(bare).toEqual(full);
    expect(bare.stdout).not.toMatch(/^Usage:/m);
    // the server's status says no server runs (exit 1); every list is an ordinary exit
    expect(bare.code).toBe(spelled === "server" ? 1 : 0);
  });

  it("`worker` lists the worker init made, and `worker --help` is still help", async () => {
    const [bare, help] = await Promise.all([
      runRoster(["worker"], env()),
      runRoster(["worker", "--help"], env()),
    ]);
    expect(bare.stdout).toMatch(/^elf\s+idle\b/m);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: roster worker/m);
  });

  it("`server deploy` validates and `server run --help` is `server start`'s", async () => {
    const [deploy, validate, run, start] = await Promise.all([
      runRoster(["server", "deploy"], env()),
      runRoster(["validate"], env()),
      runRoster(["server", "run", "--help"], env()),
      runRoster(["server", "start", "--help"], env()),
    ]);
    expect(deploy).toEqual(validate);
    expect(deploy.code).toBe(0);
    expect(run).toEqual(start);
    expect(run.stdout).toMatch(/--cap/);
  });

  it("`worker knowledge` prints the path of the worker's bare knowledge repo, for git -C", async () => {
    const result = await runRoster(["worker", "knowledge", "elf"], env());
    expect(result.code).toBe(0);
    const path = result.stdout.trim();
    expect(path).toBe(join(root, "data", "workers", "elf", "knowledge.git"));
    expect(
      execFileSync("git", ["-C", path, "rev-parse", "--is-bare-repository"], {
        encoding: "utf8",
      }).trim(),
    ).toBe("true");
    const json = await runRoster(["worker", "knowledge", "elf", "--json"], env());
    expect(JSON.parse(json.stdout)).toMatchObject({ worker: "elf", path });
    const missing = await runRoster(["worker", "knowledge", "nobody"], env());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no worker named "nobody"/);
  });

  it("bare `talk` lists the workers to talk to and exits 0", async () => {
    const result = await runRoster(["talk"], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ {2}elf$/m);
    expect(result.stdout).toMatch(/roster talk <worker>/);
  });

  const connection = (name: string) => join(root, "config", "connections", `${name}.toml`);

  it("`connection add --name --host --header --env --method` writes what they say, and validates", async () => {
    const added = await runRosterWithInput(
      [
        "connection",
        "add",
        "--name",
        "weather",
        "--host",
        "api.weather.example",
        "--header",
        "Authorization: Token {token}",
        "--env",
        "WEATHER_TOKEN",
        "--method",
        "GET",
        "--method",
        "post",
        "--worker",
        "elf",
      ],
      "s3cret-weather\n",
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    const text = readFileSync(connection("weather"), "utf8");
    expect(text).toMatch(/^hosts = \["api.weather.example"\]$/m);
    expect(text).toMatch(/^methods = \["GET", "POST"\]$/m);
    expect(text).toMatch(/^env = "WEATHER_TOKEN"$/m);
    expect(text).toMatch(/^inject_header = "authorization"$/m);
    expect(text).toMatch(/^inject_value = "Token \{token\}"$/m);
    expect(text).toMatch(/^\[grant\.elf\]$/m);
    expect(text).not.toContain("s3cret-weather");
    const valid = await runRoster(["validate"], env());
    expect(valid.code, valid.stderr).toBe(0);
  });

  it("bare `connection add` off a terminal names the services to pick from and changes nothing", async () => {
    const result = await runRosterWithInput(["connection", "add"], "", env());
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/missing: the service to connect \(one of github, .*discord/);
    const bad = await runRosterWithInput(
      ["connection", "add", "github", "--auth", "password"],
      "",
      env(),
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--auth password: expected api_key .* or oauth/);
    expect(existsSync(connection("github"))).toBe(false);
  });

  it("`connection add discord --use channel` binds the listener and grants no box", async () => {
    const added = await runRosterWithInput(
      ["connection", "add", "discord", "--worker", "elf", "--use", "channel"],
      "bot-token\n",
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    expect(readFileSync(connection("discord"), "utf8")).not.toMatch(/^\[grant\./m);
    expect(readFileSync(join(root, "config", "workers", "elf", "worker.toml"), "utf8")).toMatch(
      /^discord = "discord"$/m,
    );
  });

  it("`connection grant --restrict` writes the edge's dimensions, replaces them, and refuses what the provider lacks", async () => {
    const grant = (...restrict: string[]) =>
      runRoster(
        ["connection", "grant", "discord", "elf", ...restrict.flatMap((r) => ["--restrict", r])],
        env(),
      );
    const first = await grant("servers=1234", "surfaces=5678,dm");
    expect(first.code, first.stderr).toBe(0);
    let text = readFileSync(connection("discord"), "utf8");
    expect(text).toMatch(/^provider = "discord"$/m);
    expect(text).toMatch(/^\[grant\.elf\]\nservers = \["1234"\]\nsurfaces = \["5678", "dm"\]$/m);
    // the comments a person reads stay
    expect(text).toMatch(/^# Who may use it/m);
    const again = await grant("servers=1234", "surfaces=5678,dm");
    expect(again.stdout).toMatch(/already granted to elf; nothing changed/);
    const narrower = await grant("surfaces=public");
    expect(narrower.code, narrower.stderr).toBe(0);
    text = readFileSync(connection("discord"), "utf8");
    expect(text).toMatch(/^\[grant\.elf\]\nsurfaces = \["public"\]\n?$/m);
    expect(text).not.toMatch(/servers =/);
    expect(text).toMatch(/^# Who may use it/m);
    const wrong = await grant("servers=a.b");
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/discord\.toml:\d+: grant\.elf\.servers: "a\.b" is not an id/);
    expect(readFileSync(connection("discord"), "utf8")).toBe(text);
    const weather = await runRoster(
      ["connection", "grant", "weather", "elf", "--restrict", "servers=1"],
      env(),
    );
    expect(weather.code).toBe(2);
    expect(weather.stderr).toMatch(/narrows by no dimension/);
  });
});
