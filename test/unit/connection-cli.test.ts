/**
 * `roster connection` through the real CLI, without the gateway: the catalog,
 * the files add writes, the secret kept off the command line, grant and revoke
 * that keep a hand-edited file's comments, refusals that change nothing, and rm.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { ROSTER_BIN, runRoster, runRosterWithInput } from "../support/cli.ts";
import { spawnInPty } from "../support/pty.ts";

const SECRET = "s3cret-token-9f8e7d";

describe("roster connection", () => {
  let root: string;
  let paths: RosterPaths;
  const env = () => ({ ROSTER_ROOT: root });
  const roster = (args: string[]) => runRoster(args, env());
  const withSecret = (args: string[], secret = SECRET) =>
    runRosterWithInput(args, `${secret}\n`, env());
  const file = (name: string) => join(paths.config, "connections", `${name}.toml`);

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-conn-"));
    paths = rosterPaths({ ROSTER_ROOT: root });
    expect((await roster(["init"])).code).toBe(0);
    const scout = await roster(["worker", "add", "scout"]);
    expect(scout.code, scout.stderr).toBe(0);
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("lists every built-in recipe with what it grants and injects, never a secret", async () => {
    const json = await roster(["connection", "catalog", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const recipes = JSON.parse(json.stdout) as Array<{ name: string; kind: string }>;
    expect(recipes.map((recipe) => recipe.name)).toEqual(
      expect.arrayContaining([
        "github",
        "gitlab",
        "openai",
        "anthropic",
        "bearer",
        "smtp",
        "slack",
        "discord",
        "mcp",
        "host-dir",
        "host-repo",
      ]),
    );
    const text = await roster(["connection", "catalog"]);
    expect(text.stdout).toContain("grants:  HTTPS to api.github.com");
    expect(text.stdout).toContain("injects: x-api-key: {key}");
  });

  it("adds a bearer API from a piped secret: the file a person would write, the secret in the vault only", async () => {
    const added = await withSecret([
      "connection",
      "add",
      "api",
      "--from",
      "bearer",
      "--host",
      "api.test",
      "--worker",
      "elf",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(`${added.stdout}${added.stderr}`).not.toContain(SECRET);
    const text = readFileSync(file("api"), "utf8");
    expect(text).toContain('hosts = ["api.test"]');
    expect(text).toContain('inject_value = "Bearer {token}"');
    expect(text).toMatch(/^\[grant\.elf\]$/m);
    expect(text).not.toContain(SECRET);
    const vault = join(paths.vault, "api.json");
    expect(JSON.parse(readFileSync(vault, "utf8"))).toEqual({ token: SECRET });
    expect(statSync(vault).mode & 0o777).toBe(0o600);
    expect((await roster(["validate"])).code).toBe(0);
    const ls = await roster(["connection", "ls"]);
    expect(ls.stdout).toMatch(/^api {2}service {2}granted to elf {2}ok/m);
  });

  it("asks for the secret on a terminal without showing what is typed", async () => {
    const pty = spawnInPty(
      [
        process.execPath,
        ROSTER_BIN,
        "connection",
        "add",
        "api",
        "--from",
        "bearer",
        "--host",
        "a.test",
      ],
      env(),
    );
    try {
      // no grantee was named: it asks (empty: none yet), then the secret
      await pty.waitFor(/grant it to which worker\?.*: /);
      pty.write("\r");
      await pty.waitFor(/secret for api \(not shown\): /);
      pty.write(`${SECRET}\r`);
      expect(await pty.exited).toBe(0);
    } finally {
      pty.kill();
    }
    expect(pty.output).toContain("stored its secret");
    expect(pty.output).not.toContain(SECRET);
    expect(JSON.parse(readFileSync(join(paths.vault, "api.json"), "utf8"))).toEqual({
      token: SECRET,
    });
  });

  it("takes the recipe from the name, as `connection add github --worker elf`", async () => {
    const added = await withSecret(["connection", "add", "github", "--worker", "scout"]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain("(from recipe github)");
    expect(readFileSync(file("github"), "utf8")).toMatch(/^\[grant\.scout\]$/m);
  });

  it("asks on a terminal for what the recipe needs and the flags don't give", async () => {
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "connection", "add", "api"], env());
    try {
      await pty.waitFor(/which recipe\? \(github, .*\): /);
      pty.write("bearer\r");
      await pty.waitFor(/the API's host \(e\.g\. api\.example\.com\): /);
      pty.write("api.example.test\r");
      await pty.waitFor(/grant it to which worker\?.*: /);
      pty.write("scout\r");
      await pty.waitFor(/secret for api \(not shown\): /);
      pty.write(`${SECRET}\r`);
      expect(await pty.exited).toBe(0);
    } finally {
      pty.kill();
    }
    const written = readFileSync(file("api"), "utf8");
    expect(written).toContain("api.example.test");
    expect(written).toMatch(/^\[grant\.scout\]$/m);
    expect(pty.output).not.toContain(SECRET);
  });

  it("on a terminal, an OAuth recipe asks for its client, shows the scopes, then the consent link", async () => {
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "connection", "add", "linear"], env());
    try {
      await pty.waitFor(
        /the OAuth client id the provider gave roster \(https:\/\/linear\.app\S*\): /,
      );
      pty.write("lin-client-1\r");
      await pty.waitFor(/grant it to which worker\?.*: /);
      pty.write("scout\r");
      await pty.waitFor(/client secret for linear \(not shown; empty for a public client\): /);
      pty.write(`${SECRET}\r`);
      await pty.waitFor(/scopes asked for: read/);
      await pty.waitFor(/waiting for the answer at http:\/\/127\.0\.0\.1:\d+\/callback/);
    } finally {
      pty.kill();
    }
    const link = new URL(
      / {2}(https:\/\/linear\.app\/oauth\/authorize\S+)/.exec(pty.output)?.[1] ?? "",
    );
    expect(link.searchParams.get("client_id")).toBe("lin-client-1");
    expect(link.searchParams.get("scope")).toBe("read");
    expect(link.searchParams.get("code_challenge_method")).toBe("S256");
    expect(pty.output).not.toContain(SECRET);
    // nothing is written before consent comes back
    expect(existsSync(file("linear"))).toBe(false);
  });

  it("refuses a secret on the command line, an unknown recipe, a missing host and an unknown worker, changing nothing", async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ["connection", "add", "api", "--from", "bearer", "--host", "a.test", "--secret", SECRET],
        /never taken on the command line/,
      ],
      [["connection", "add", "api", "--from", "nosuch"], /no recipe "nosuch": one of github/],
      [
        ["connection", "add", "api", "--from", "bearer"],
        /nothing was asked and nothing changed; missing: --host <name> \(the API's host\)/,
      ],
      [["connection", "add", "api"], /missing: --from <recipe> \(one of github, gitlab,/],
      [
        ["connection", "add", "api", "--from", "bearer", "--host", "a.test", "--worker", "ghost"],
        /refused, nothing changed: \S*config\/connections\/api\.toml:\d+: grant\.ghost: no worker named "ghost"/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await withSecret(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.split("\n").filter(Boolean).length).toBeLessThanOrEqual(2);
      expect(existsSync(file("api"))).toBe(false);
      expect(existsSync(join(paths.vault, "api.json"))).toBe(false);
    }
    const empty = await runRosterWithInput(
      ["connection", "add", "api", "--from", "bearer", "--host", "a.test"],
      "",
      env(),
    );
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("no secret given");
    expect(existsSync(file("api"))).toBe(false);
  });

  it("grants and revokes by editing one line, keeping a hand-written file's comments", async () => {
    const hand = `# our billing API — ask Dana before widening
hosts = ["billing.test"]   # prod only
methods = ["GET", "POST"]

[grant.elf]  # elf reconciles invoices
`;
    await writeFile(file("billing"), hand);
    const granted = await roster(["connection", "grant", "billing", "scout"]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout).toContain("granted billing to scout");
    expect(readFileSync(file("billing"), "utf8")).toBe(`${hand}[grant.scout]\n`);
    const again = await roster(["connection", "grant", "billing", "scout"]);
    expect(again.stdout).toContain("already granted to scout; nothing changed");

    const revoked = await roster(["connection", "revoke", "billing", "elf"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = readFileSync(file("billing"), "utf8");
    expect(after).toContain("# our billing API — ask Dana before widening");
    expect(after).toContain("# prod only");
    expect(after).not.toContain("[grant.elf]");
    expect(after).toContain("[grant.scout]");

    const ghost = await roster(["connection", "grant", "billing", "ghost"]);
    expect(ghost.code).toBe(2);
    expect(ghost.stderr).toContain('no worker named "ghost"');
    expect(readFileSync(file("billing"), "utf8")).toBe(after);
  });

  it("rewrites an inline grant table and says its comments were not kept", async () => {
    await writeFile(file("inline"), `hosts = ["x.test"]\ngrant = { elf = {} }\n`);
    const granted = await roster(["connection", "grant", "inline", "--org"]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout).toContain("comments were not kept");
    const ls = await roster(["connection", "ls", "--json"]);
    const rows = JSON.parse(ls.stdout) as Array<{
      name: string;
      grantees: string[];
      state: string;
    }>;
    expect(rows.find((row) => row.name === "inline")).toMatchObject({
      grantees: ["elf", "org"],
      state: "disabled",
    });
  });

  it("adds a host folder, and removes a connection and its secret only with --yes", async () => {
    const folder = await mkdtemp(join(tmpdir(), "roster-conn-dir-"));
    try {
      const dir = await roster([
        "connection",
        "add",
        "notes",
        "--from",
        "host-dir",
        "--path",
        folder,
        "--org",
      ]);
      expect(dir.code, dir.stderr).toBe(0);
      expect(readFileSync(file("notes"), "utf8")).toContain(`path = "${folder}"\nmode = "ro"`);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
    expect(
      (await withSecret(["connection", "add", "api", "--from", "bearer", "--host", "a.test"])).code,
    ).toBe(0);
    const asked = await roster(["connection", "rm", "api"]);
    expect(asked.code).toBe(2);
    expect(asked.stderr).toContain("nothing removed without --yes");
    expect(existsSync(file("api"))).toBe(true);
    const removed = await roster(["connection", "rm", "api", "--yes"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain("connections/api.toml");
    expect(removed.stdout).toContain("vault/api.json");
    expect(existsSync(file("api"))).toBe(false);
    expect(existsSync(join(paths.vault, "api.json"))).toBe(false);
  });

  it("binds a Discord bot to its one worker in worker.toml's [channels], keeping the file's comments", async () => {
    const workerToml = join(paths.config, "workers", "scout", "worker.toml");
    await writeFile(workerToml, `${readFileSync(workerToml, "utf8")}# kept: a note by hand\n`);
    const added = await withSecret([
      "connection",
      "add",
      "discord",
      "--from",
      "discord",
      "--worker",
      "scout",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('scout listens on discord as "discord"');
    const text = readFileSync(workerToml, "utf8");
    expect(text).toMatch(/^\[channels\]\ndiscord = "discord"$/m);
    expect(text).toContain("# kept: a note by hand");
    expect((await roster(["validate"])).code).toBe(0);
    // the worker as the server's listeners will read it: this bot is bound to it
    const shown = await roster(["worker", "show", "scout", "--json"]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ channels: { bots: { discord: "discord" } } });
    // added again under another name: scout keeps the bot it has
    const other = await withSecret([
      "connection",
      "add",
      "discord-2",
      "--from",
      "discord",
      "--worker",
      "scout",
    ]);
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toContain('scout already listens on discord as "discord"');
  });

  it("adds the binding under a [channels] table the worker already has", async () => {
    const workerToml = join(paths.config, "workers", "scout", "worker.toml");
    await writeFile(
      workerToml,
      `${readFileSync(workerToml, "utf8")}\n[channels] # bots\nslack = "slack"\n`,
    );
    const added = await withSecret([
      "connection",
      "add",
      "discord",
      "--from",
      "discord",
      "--worker",
      "scout",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(readFileSync(workerToml, "utf8")).toMatch(
      /^\[channels\] # bots\ndiscord = "discord"\nslack = "slack"$/m,
    );
  });

  it("binds no worker when the bot is granted to more than one, and says how to", async () => {
    expect((await roster(["worker", "add", "imp"])).code).toBe(0);
    const added = await withSecret([
      "connection",
      "add",
      "discord",
      "--from",
      "discord",
      "--worker",
      "scout",
      "--worker",
      "imp",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain("no worker was bound: a discord bot serves one worker");
    for (const worker of ["scout", "imp"])
      expect(
        readFileSync(join(paths.config, "workers", worker, "worker.toml"), "utf8"),
      ).not.toContain("[channels]");
  });

  it("binds a Slack bot and names the app token its listener still needs", async () => {
    const added = await withSecret([
      "connection",
      "add",
      "team-slack",
      "--from",
      "slack",
      "--worker",
      "scout",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(readFileSync(join(paths.config, "workers", "scout", "worker.toml"), "utf8")).toMatch(
      /^\[channels\]\nslack = "team-slack"$/m,
    );
    expect(added.stdout).toContain(
      "its listener also needs app_token: roster login team-slack --field app_token=… (it says so until then)",
    );
    expect((await roster(["connection", "rm", "team-slack", "--yes"])).code).toBe(0);
    await writeFile(
      join(paths.config, "workers", "scout", "worker.toml"),
      readFileSync(join(paths.config, "workers", "scout", "worker.toml"), "utf8").replace(
        /\[channels\]\nslack = "team-slack"\n/,
        "",
      ),
    );
  });

  it("stores a Slack bot token as the field the slack sender reads, keeping an app token stored before", async () => {
    await mkdir(paths.vault, { recursive: true, mode: 0o700 });
    await writeFile(join(paths.vault, "slack.json"), JSON.stringify({ app_token: "xapp-kept" }), {
      mode: 0o600,
    });
    const added = await withSecret([
      "connection",
      "add",
      "slack",
      "--from",
      "slack",
      "--worker",
      "scout",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(paths.vault, "slack.json"), "utf8"))).toEqual({
      app_token: "xapp-kept",
      bot_token: SECRET,
    });
    expect(readFileSync(file("slack"), "utf8")).toContain('inject_value = "Bearer {bot_token}"');
    // the app token was there already: bound, and nothing more to ask
    expect(added.stdout).toContain('scout listens on slack as "slack"');
    expect(added.stdout).not.toContain("also needs");
  });
});
