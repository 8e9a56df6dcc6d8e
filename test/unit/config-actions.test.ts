import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { decideTrust, fieldMatches } from "../../runner/services/actions/trust.ts";

/** [[action]] and [[trust]]: org.toml grants, a worker.toml may only make more things wait. */
const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function load(files: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), "roster-actions-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  }
  const config = loadConfig(root);
  return {
    config,
    errors: config.errors.map(formatConfigError).map((line) => line.replace(`${root}/`, "")),
  };
}

const ORG = `[[action]]
name = "email-send"
executor = "email"
trust = "earned"

[[trust]]
intent = "email-send"
match = { to = "*@team.test" }
level = "auto"
`;

describe("action config", () => {
  it("scopes org grants and puts a worker's gating rules first", async () => {
    const { config, errors } = await load({
      "org.toml": `${ORG}\n[[action]]\nname = "note"\nexecutor = "message-user"\nworkers = ["elf"]\n`,
      "workers/elf/worker.toml": 'name = "elf"\n[[trust]]\nintent = "email-send"\nlevel = "gate"\n',
    });
    expect(errors).toEqual([]);
    expect(config.actions.map((action) => [action.name, action.scope])).toEqual([
      ["email-send", "org"],
      ["note", "org/elf"],
    ]);
    expect(config.trust.map((rule) => [rule.level, rule.scope])).toEqual([
      ["gate", "org/elf"],
      ["auto", "org"],
    ]);
  });

  it("grants nothing from a worker's own [[action]] (said), and refuses a worker that trusts itself more", async () => {
    const { config, errors } = await load({
      "org.toml": ORG,
      "workers/elf/worker.toml":
        'name = "elf"\n\n[[action]]\nname = "email-send"\nexecutor = "email"\ntrust = "auto"\n\n[[trust]]\nintent = "email-send"\nlevel = "auto"\n',
    });
    expect(errors).toEqual([
      'workers/elf/worker.toml:10: trust.0.level: "auto" would let "email-send" run without a human; a worker\'s [[trust]] may only gate (level = "gate"); a worker\'s config may only narrow the org\'s',
    ]);
    // the public roster grants a worker's own [[action]]; here only org.toml does, and validate says so
    expect(
      config.notices.map(formatConfigError).map((line) => line.split(`${config.root}/`).join("")),
    ).toEqual([
      'workers/elf/worker.toml:3: action.0: "email-send" is not granted: only org.toml grants actions here (an [[action]] there, with workers = ["elf"]); a worker\'s config may only narrow the org\'s',
    ]);
    expect(config.actions.map((action) => action.scope)).toEqual(["org"]);
  });

  it.each([
    [
      '[action]\nname = "x"\nexecutor = "email"\n',
      "org.toml:1: action: write [[action]] (an array of tables), not [action]",
    ],
    ['[[action]]\nname = "x"\nexecutor = "fax"\n', "org.toml:3: action.0.executor:"],
    [
      '[[action]]\nname = "x"\nexecutor = "email"\nworkers = ["ghost"]\n',
      'org.toml:4: action.0.workers: no worker named "ghost"',
    ],
    [
      '[[trust]]\nintent = "x"\nlevel = "maybe"\n',
      "org.toml:3: trust.0.level: must be one of auto, gate, earned",
    ],
  ])("names the line and field of a bad org entry: %j", async (toml, expected) => {
    const { errors } = await load({
      "org.toml": toml,
      "workers/elf/worker.toml": 'name = "elf"\n',
    });
    expect(errors[0]).toContain(expected);
  });
});

describe("trust", () => {
  const grant = {
    name: "email-send",
    executor: "email" as const,
    scope: "org",
    source: "org.toml",
  };
  const rule = {
    intent: "email-send",
    match: { to: "*@team.test" },
    level: "auto" as const,
    scope: "org",
    source: "org.toml",
  };

  it("matches lists element by element and addresses inside <…>", () => {
    expect(fieldMatches(["a@team.test", "Bob <b@team.test>"], "*@team.test")).toBe(true);
    expect(fieldMatches(["a@team.test", "e@else.test"], "*@team.test")).toBe(false);
    expect(fieldMatches([], "*")).toBe(false);
    expect(fieldMatches(undefined, "*")).toBe(false);
    expect(fieldMatches({ nested: 1 }, "*")).toBe(false);
  });

  it("the first rule in scope whose globs hold decides; none → the grant's default", () => {
    const decide = (to: string[]) =>
      decideTrust({ grant, rules: [rule], subject: "org/elf", payload: { to }, history: () => [] })
        .run;
    expect(decide(["x@team.test"])).toBe("auto");
    expect(decide(["x@else.test"])).toBe("gate");
    const scoped = { ...rule, scope: "org/zed" };
    expect(
      decideTrust({
        grant,
        rules: [scoped],
        subject: "org/elf",
        payload: { to: ["x@team.test"] },
        history: () => [],
      }).run,
    ).toBe("gate");
  });
});
