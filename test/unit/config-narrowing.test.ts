import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { judge } from "../../runner/boundary/gateway/judging/judge.ts";
import {
  formatConfigError,
  type LoadedConfig,
  loadConfig,
} from "../../runner/ground/config/load.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";
import { parseByteSize } from "../../runner/ground/text/byte-size.ts";
import { facts } from "../support/facts.ts";

/** A worker.toml may only narrow org.toml: every widening is an error, and none takes effect. */

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function load(
  files: Record<string, string>,
): Promise<{ root: string; config: LoadedConfig }> {
  const root = await mkdtemp(join(tmpdir(), "roster-narrow-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return { root, config: loadConfig(root) };
}

function errorLines(root: string, config: LoadedConfig): string[] {
  return config.errors.map(formatConfigError).map((line) => line.replace(`${root}/`, ""));
}

function viewOf(config: LoadedConfig, name: string) {
  const view = workerView(config, name);
  if (!view) throw new Error(`no worker ${name}`);
  return view;
}

const NARROW = "a worker's config may only narrow the org's";

const ORG_BOX = `[box]
pids_limit = 512
memory = "2g"
cpus = 1
egress_lockdown = true

[context]
task_max_chars = 1000
`;

const elf = (body: string) => `name = "elf"\n\n${body}`;

/** The session clocks (and the box runtime) every worker gets when neither file sets them. */
const SESSION_DEFAULTS = {
  runtime: "runc",
  max_output: "512m",
  session_ceiling_min: 60,
  turn_ceiling_min: 15,
  chat_idle_secs: 90,
  talk_idle_secs: 300,
  stall_after: "5m",
  render_secs: 15,
};
const HISTORY_DEFAULTS = {
  history_max_messages: 25,
  history_max_chars: 6_000,
  purpose_max_chars: 2_000,
};

describe("[box] and [context]: a worker may only lower the org's limits", () => {
  it.each([
    ["pids_limit = 4096", "box.pids_limit", "4096 is more than org.toml allows (512)"],
    ['memory = "8g"', "box.memory", '"8g" is more than org.toml allows ("2g")'],
    ['memory = "2049m"', "box.memory", '"2049m" is more than org.toml allows ("2g")'],
    ["cpus = 1.5", "box.cpus", "1.5 is more than org.toml allows (1)"],
    [
      'max_output = "1g"',
      "box.max_output",
      '"1g" is more than org.toml allows ("512m" by default)',
    ],
    [
      "session_ceiling_min = 600",
      "box.session_ceiling_min",
      "600 is more than org.toml allows (60 by default)",
    ],
    [
      "chat_idle_secs = 91",
      "box.chat_idle_secs",
      "91 is more than org.toml allows (90 by default)",
    ],
    [
      "egress_lockdown = false",
      "box.egress_lockdown",
      "false switches off a protection org.toml keeps on (true)",
    ],
    [
      'stall_after = "6m"',
      "box.stall_after",
      '"6m" is more than org.toml allows ("5m" by default)',
    ],
    [
      'stall_after = "off"',
      "box.stall_after",
      '"off" switches off a protection org.toml keeps on ("5m" by default)',
    ],
  ])(
    "[box] %s is refused, naming file:line, field and the org's value",
    async (line, field, says) => {
      const { root, config } = await load({
        "org.toml": ORG_BOX,
        "workers/elf/worker.toml": elf(`[box]\n${line}\n`),
      });
      expect(errorLines(root, config)).toEqual([
        `workers/elf/worker.toml:4: ${field}: ${says}; ${NARROW}`,
      ]);
    },
  );

  it("stall_after: a worker's shorter window wins, and 'off' in org.toml leaves the worker free to set one", async () => {
    const { config } = await load({
      "org.toml": '[box]\nstall_after = "1h"\n',
      "workers/elf/worker.toml": elf('[box]\nstall_after = "90s"\n'),
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(config.errors).toEqual([]);
    expect(viewOf(config, "elf").box.stall_after).toBe("90s");
    expect(viewOf(config, "bob").box.stall_after).toBe("1h");

    const off = await load({
      "org.toml": '[box]\nstall_after = "off"\n',
      "workers/elf/worker.toml": elf('[box]\nstall_after = "10m"\n'),
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(off.config.errors).toEqual([]);
    expect(viewOf(off.config, "elf").box.stall_after).toBe("10m");
    expect(viewOf(off.config, "bob").box.stall_after).toBe("off");

    const bad = await load({ "org.toml": '[box]\nstall_after = "0m"\n' });
    expect(errorLines(bad.root, bad.config).join("\n")).toMatch(/org\.toml:2: box\.stall_after/);
  });

  it("a [context] limit above the org's is refused", async () => {
    const { root, config } = await load({
      "org.toml": ORG_BOX,
      "workers/elf/worker.toml": elf(
        "[context]\nidentity_max_chars = 100\ntask_max_chars = 5000\n",
      ),
    });
    expect(errorLines(root, config)).toEqual([
      `workers/elf/worker.toml:5: context.task_max_chars: 5000 is more than org.toml allows (1000); ${NARROW}`,
    ]);
  });

  it("when org.toml leaves a limit unset, the runner's default is what the worker may not exceed", async () => {
    const { root, config } = await load({
      "org.toml": '[engine]\nimage = "roster-box:latest"\n',
      "workers/elf/worker.toml": elf(
        '[box]\npids_limit = 2048\nmemory = "5g"\ncpus = 3\negress_lockdown = false\n\n[context]\nmax_injected_chars = 50000\n',
      ),
    });
    expect(errorLines(root, config)).toEqual([
      `workers/elf/worker.toml:4: box.pids_limit: 2048 is more than org.toml allows (1024 by default); ${NARROW}`,
      `workers/elf/worker.toml:5: box.memory: "5g" is more than org.toml allows ("4g" by default); ${NARROW}`,
      `workers/elf/worker.toml:6: box.cpus: 3 is more than org.toml allows (2 by default); ${NARROW}`,
      `workers/elf/worker.toml:7: box.egress_lockdown: false switches off a protection org.toml keeps on (true by default); ${NARROW}`,
      `workers/elf/worker.toml:10: context.max_injected_chars: 50000 is more than org.toml allows (48000 by default); ${NARROW}`,
    ]);
  });

  it("a worker without org.toml compares with the defaults too, and equal values pass", async () => {
    const { config } = await load({
      "workers/elf/worker.toml": elf('[box]\npids_limit = 1024\nmemory = "4096m"\ncpus = 2\n'),
    });
    expect(config.errors).toEqual([]);
    expect(viewOf(config, "elf").box).toEqual({
      pids_limit: 1024,
      memory: "4g",
      cpus: 2,
      egress_lockdown: true,
      ...SESSION_DEFAULTS,
    });
  });

  it("narrowing is accepted and is what the worker gets; other workers keep the org's", async () => {
    const { config } = await load({
      "org.toml": ORG_BOX,
      "workers/elf/worker.toml": elf(
        '[box]\npids_limit = 128\nmemory = "512m"\ncpus = 0.5\nturn_ceiling_min = 5\ntalk_idle_secs = 30\nrender_secs = 5\n\n[context]\ntask_max_chars = 400\nhistory_max_chars = 1000\n',
      ),
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(config.errors).toEqual([]);
    const view = viewOf(config, "elf");
    expect(view.box).toEqual({
      pids_limit: 128,
      memory: "512m",
      cpus: 0.5,
      egress_lockdown: true,
      ...SESSION_DEFAULTS,
      turn_ceiling_min: 5,
      talk_idle_secs: 30,
      render_secs: 5,
    });
    expect(view.context).toEqual({
      identity_max_chars: 12_000,
      task_max_chars: 400,
      max_injected_chars: 48_000,
      ...HISTORY_DEFAULTS,
      history_max_chars: 1000,
      briefing_max_chars: 4_000,
    });
    expect(viewOf(config, "bob").box).toEqual({
      pids_limit: 512,
      memory: "2g",
      cpus: 1,
      egress_lockdown: true,
      ...SESSION_DEFAULTS,
    });
  });

  it("a worker may keep the lockdown on where the org turned it off, not the other way", async () => {
    const { config } = await load({
      "org.toml": "[box]\negress_lockdown = false\n",
      "workers/elf/worker.toml": elf("[box]\negress_lockdown = true\n"),
      "workers/bob/worker.toml": 'name = "bob"\n\n[box]\negress_lockdown = false\n',
    });
    expect(config.errors).toEqual([]);
    expect(viewOf(config, "elf").box.egress_lockdown).toBe(true);
    expect(viewOf(config, "bob").box.egress_lockdown).toBe(false);
  });

  it("workerView narrows on its own, even for a config that skipped validation", async () => {
    const { config } = await load({
      "org.toml": `${ORG_BOX}\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n`,
      "workers/elf/worker.toml": elf(""),
    });
    expect(config.errors).toEqual([]);
    // what a widening worker.toml would have produced had the loader not refused it
    config.workers.set("elf", {
      name: "elf",
      box: {
        pids_limit: 1_000_000,
        memory: "64g",
        cpus: 64,
        egress_lockdown: false,
        session_ceiling_min: 100_000,
        chat_idle_secs: 0,
      },
      context: { task_max_chars: 1_000_000 },
      model: { provider: "openai-compatible", base_url: "http://evil.test/v1", model: "m" },
    });
    const view = viewOf(config, "elf");
    expect(view.box).toEqual({
      pids_limit: 512,
      memory: "2g",
      cpus: 1,
      egress_lockdown: true,
      ...SESSION_DEFAULTS,
    });
    expect(view.context.task_max_chars).toBe(1000);
    expect(view.model).toEqual({ provider: "anthropic", model: "m" });
    // values Docker reads as "no limit" never get through either
    config.workers.set("elf", { name: "elf", box: { pids_limit: -1, memory: "0k", cpus: 0 } });
    expect(viewOf(config, "elf").box).toEqual({
      pids_limit: 512,
      memory: "2g",
      cpus: 1,
      egress_lockdown: true,
      ...SESSION_DEFAULTS,
    });
  });

  it("memory sizes compare in bytes", () => {
    expect(parseByteSize("4g")).toBe(4 * 1024 ** 3);
    expect(parseByteSize("4096m")).toBe(parseByteSize("4g"));
    expect(parseByteSize("1.5G")).toBe(1.5 * 1024 ** 3);
    expect(parseByteSize("512k")).toBe(512 * 1024);
    expect(parseByteSize("lots")).toBe(0);
  });
});

describe("[[grant]]: a worker may only add deny grants", () => {
  it.each([
    ["allow", "an allow grant"],
    ["tunnel", "a tunnel grant"],
  ])(
    "a worker's %s grant is refused, pointing at org.toml's workers list",
    async (verdict, kind) => {
      const { root, config } = await load({
        "org.toml": "",
        "workers/elf/worker.toml": elf(
          `[[grant]]\nname = "mine"\nverdict = "${verdict}"\nmatch = { host = "api.example.com" }\n`,
        ),
      });
      expect(errorLines(root, config)).toEqual([
        `workers/elf/worker.toml:5: grant.0.verdict: "mine" is ${kind}; a worker's config may only add deny grants (a per-worker allowance belongs in org.toml: a [[grant]] with workers = ["elf"])`,
      ]);
      // nothing from the refused grant reaches the gateway
      expect(config.grants.filter((grant) => grant.scope === "org/elf")).toEqual([]);
    },
  );

  it("a worker's grant may not inject a credential, even on a deny", async () => {
    const { root, config } = await load({
      "workers/elf/worker.toml": elf(
        '[[grant]]\nname = "sneaky"\nverdict = "deny"\ninject = { credential = "github" }\n',
      ),
    });
    expect(errorLines(root, config)).toEqual([
      `workers/elf/worker.toml:6: grant.0.inject: "sneaky" injects credential "github"; a worker's config may not inject credentials (that belongs in org.toml: a [[grant]] with workers = ["elf"])`,
    ]);
  });

  it("a worker's deny grant denies for that worker, before every org allow, and not for others", async () => {
    const { config } = await load({
      "org.toml":
        '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n\n[[grant]]\nname = "web-read"\nverdict = "allow"\nmatch = { host = "*" }\n',
      "workers/elf/worker.toml": elf(
        '[[grant]]\nname = "no-anthropic"\nverdict = "deny"\nmatch = { host = "api.anthropic.com" }\n\n[[grant]]\nname = "no-evil"\nverdict = "deny"\nmatch = { host = "evil.test" }\n',
      ),
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(config.errors).toEqual([]);
    expect(config.grants.slice(0, 2).map((g) => [g.name, g.scope])).toEqual([
      ["no-anthropic", "org/elf"],
      ["no-evil", "org/elf"],
    ]);
    const elfEvil = judge(config.grants, facts({ host: "evil.test" }), "request");
    expect([elfEvil.verdict, elfEvil.rule?.name]).toEqual(["deny", "no-evil"]);
    // the org's model grant (allow, with injection) does not pre-empt the worker's deny
    const elfModel = judge(config.grants, facts({ host: "api.anthropic.com" }), "connect");
    expect([elfModel.verdict, elfModel.rule?.name]).toEqual(["deny", "no-anthropic"]);
    const bobEvil = judge(
      config.grants,
      facts({ subject: "org/bob", host: "evil.test" }),
      "request",
    );
    expect([bobEvil.verdict, bobEvil.rule?.name]).toEqual(["allow", "web-read"]);
    const bobModel = judge(
      config.grants,
      facts({ subject: "org/bob", host: "api.anthropic.com" }),
      "request",
    );
    expect([bobModel.verdict, bobModel.rule?.name]).toEqual(["allow", "model:anthropic"]);
  });

  it("an org grant with workers = [...] applies only to those workers, in its place", async () => {
    const { config } = await load({
      "org.toml":
        '[[grant]]\nname = "github"\nverdict = "allow"\nworkers = ["elf", "amy"]\nmatch = { host = "api.github.com" }\n\n[[grant]]\nname = "no-github"\nverdict = "deny"\nmatch = { host = "api.github.com" }\n',
      "workers/elf/worker.toml": elf(""),
      "workers/amy/worker.toml": 'name = "amy"\n',
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(config.errors).toEqual([]);
    expect(config.grants.map((g) => [g.name, g.scope])).toEqual([
      ["github", "org/elf"],
      ["github", "org/amy"],
      ["no-github", "org"],
    ]);
    expect(config.grants[0]).not.toHaveProperty("workers");
    const github = { host: "api.github.com" };
    for (const [subject, verdict] of [
      ["org/elf", "allow"],
      ["org/amy", "allow"],
      ["org/bob", "deny"],
    ]) {
      expect(judge(config.grants, facts({ ...github, subject }), "request").verdict).toBe(verdict);
    }
  });

  it("an org grant naming a worker that does not exist is an error with file:line", async () => {
    const { root, config } = await load({
      "org.toml":
        '[[grant]]\nname = "web"\nverdict = "allow"\n\n[[grant]]\nname = "github"\nverdict = "allow"\nworkers = ["elf", "ghost"]\n',
      "workers/elf/worker.toml": elf(""),
    });
    expect(errorLines(root, config)).toEqual([
      'org.toml:8: grant.1.workers: no worker named "ghost" (workers are the folders under workers/)',
    ]);
  });

  it("workers = [...] belongs to org.toml only", async () => {
    const { root, config } = await load({
      "workers/elf/worker.toml": elf(
        '[[grant]]\nname = "x"\nverdict = "deny"\nworkers = ["elf"]\n',
      ),
    });
    expect(errorLines(root, config)).toEqual([
      "workers/elf/worker.toml:6: grant.0.workers: unknown key",
    ]);
  });
});

describe("[model]: a worker picks the model, never where its credential goes", () => {
  const ORG_MODEL = '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n';
  const CHOICE =
    "a worker may pick model, max_tokens and context_window; provider, base_url and credential decide where the model credential goes, and only org.toml says that";

  it.each([
    [
      'base_url = "https://evil.test"',
      "model.base_url",
      '"https://evil.test" is not org.toml\'s ("https://api.anthropic.com")',
    ],
    ['provider = "openai"', "model.provider", '"openai" is not org.toml\'s ("anthropic")'],
    ['credential = "github"', "model.credential", '"github" is not org.toml\'s ("anthropic")'],
  ])("%s is refused, naming the org's value", async (line, field, says) => {
    const { root, config } = await load({
      "org.toml": ORG_MODEL,
      "workers/elf/worker.toml": elf(`[model]\n${line}\n`),
    });
    expect(errorLines(root, config)).toEqual([
      `workers/elf/worker.toml:4: ${field}: ${says}; ${CHOICE}`,
    ]);
  });

  it("a different model id and sizes are accepted, over the org's endpoint and credential", async () => {
    const { config } = await load({
      "org.toml": ORG_MODEL,
      "workers/elf/worker.toml": elf(
        '[model]\nprovider = "anthropic"\nbase_url = "https://api.anthropic.com"\ncredential = "anthropic"\nmodel = "claude-opus-4-1"\nmax_tokens = 4096\n',
      ),
      "workers/bob/worker.toml": 'name = "bob"\n',
    });
    expect(config.errors).toEqual([]);
    expect(viewOf(config, "elf").model).toEqual({
      provider: "anthropic",
      model: "claude-opus-4-1",
      max_tokens: 4096,
    });
    expect(viewOf(config, "bob").model).toEqual({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
    });
    // one model rule, the org's: a worker's [model] adds no host or credential of its own
    expect(config.grants.map((g) => [g.name, g.scope])).toEqual([["model:anthropic", "org"]]);
  });

  it("an openai-compatible org's base_url is the one a worker must keep", async () => {
    const { root, config } = await load({
      "org.toml":
        '[model]\nprovider = "openai-compatible"\nmodel = "local"\nbase_url = "http://10.0.0.5:8000/v1"\n',
      "workers/elf/worker.toml": elf(
        '[model]\nbase_url = "http://10.0.0.6:8000/v1"\ncredential = "x"\n',
      ),
    });
    expect(errorLines(root, config)).toEqual([
      `workers/elf/worker.toml:4: model.base_url: "http://10.0.0.6:8000/v1" is not org.toml's ("http://10.0.0.5:8000/v1"); ${CHOICE}`,
      `workers/elf/worker.toml:5: model.credential: "x" is not org.toml's (none); ${CHOICE}`,
    ]);
  });

  it("with no [model] in org.toml, a worker's [model] grants itself nothing", async () => {
    const { root, config } = await load({
      "org.toml": "",
      "workers/elf/worker.toml": elf(
        '[model]\nprovider = "openai-compatible"\nmodel = "m"\nbase_url = "http://10.0.0.5:8000/v1"\n',
      ),
      "workers/bob/worker.toml": 'name = "bob"\n\n[model]\nmodel = "m"\n',
    });
    expect(errorLines(root, config)).toEqual([
      "workers/bob/worker.toml:3: model: org.toml grants no model (it has no [model]) for this to adjust",
      `workers/elf/worker.toml:4: model.provider: "openai-compatible": org.toml grants no model (it has no [model]); ${CHOICE}`,
      `workers/elf/worker.toml:6: model.base_url: "http://10.0.0.5:8000/v1": org.toml grants no model (it has no [model]); ${CHOICE}`,
    ]);
    expect(config.grants).toEqual([]);
  });
});

describe("heartbeat: org.toml or the worker's own worker.toml starts one", () => {
  it("a worker gets the org's heartbeat, its own cadence, or none when it says off; anything else is refused", async () => {
    const org = '[[heartbeat]]\nworkers = ["elf", "bob"]\nevery = "30m"\n';
    const { config } = await load({
      "org.toml": org,
      "workers/elf/worker.toml": elf(""),
      "workers/bob/worker.toml": 'name = "bob"\nheartbeat = "off"\n',
      "workers/eve/worker.toml": 'name = "eve"\n',
      "workers/ann/worker.toml": 'name = "ann"\nheartbeat = "2h"\n',
    });
    expect(config.errors).toEqual([]);
    expect(viewOf(config, "elf").heartbeat).toMatchObject({ every: "30m", ceilingMin: 10 });
    expect(viewOf(config, "bob").heartbeat).toBeUndefined();
    expect(viewOf(config, "eve").heartbeat).toBeUndefined();
    // its own cadence, with the default prompt and ceiling (no org rule lists it)
    expect(viewOf(config, "ann").heartbeat).toMatchObject({ every: "2h", ceilingMin: 10 });
    const { root, config: widening } = await load({
      "org.toml": org,
      "workers/elf/worker.toml": elf('heartbeat = "every other day"\n'),
    });
    expect(errorLines(root, widening).join("\n")).toContain("workers/elf/worker.toml:3: heartbeat");
  });

  it("refuses a schedule zone the host doesn't know, naming the line and field", async () => {
    const { root, config } = await load({
      "org.toml": '[schedule]\ntimezone = "Mars/Olympus_Mons"\n',
      "workers/elf/worker.toml": elf(""),
    });
    expect(errorLines(root, config).join("\n")).toMatch(
      /org\.toml:2: schedule\.timezone: "Mars\/Olympus_Mons" is not a time zone this host knows/,
    );
    const { config: fine } = await load({
      "org.toml": '[schedule]\ntimezone = "Europe/Berlin"\n',
      "workers/elf/worker.toml": elf(""),
    });
    expect(fine.errors).toEqual([]);
  });
});
