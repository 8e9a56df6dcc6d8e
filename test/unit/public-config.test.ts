import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { afterEach, describe, expect, it } from "vitest";
import { KNOWLEDGE_WRITE_DEFAULT, KnowledgeSection } from "../../runner/ground/config/knowledge.ts";
import {
  formatConfigError,
  type LoadedConfig,
  loadConfig,
} from "../../runner/ground/config/load.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { type WorkerView, workerView } from "../../runner/ground/config/worker-view.ts";
import { compilePrompt } from "../../runner/work/prompt/compile.ts";
import { checkAndHold, gatedTarget, PushRefused } from "../../runner/work/repos/push.ts";
import { commitAndBundle, fakeRunWithClone, makeCanonical } from "../support/repos.ts";

/**
 * org.toml, worker.toml and providers.toml as the public roster's docs write
 * them (written here from its documented keys): they validate, every place
 * ours spells or means a thing otherwise is one notice, and what each key
 * means there is what a run gets here — read through the worker's view, the
 * prompt and the push checks, not only the parse.
 */
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A deployment under ROSTER_ROOT=<tmp>: its config files written, its paths. */
function deployment(files: Record<string, string>): RosterPaths {
  const root = mkdtempSync(join(tmpdir(), "roster-public-"));
  roots.push(root);
  const paths = rosterPaths({ ROSTER_ROOT: root });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(paths.config, path, ".."), { recursive: true });
    writeFileSync(join(paths.config, path), text);
  }
  return paths;
}

const lines = (config: LoadedConfig, paths: RosterPaths, kind: "notices" | "errors") =>
  config[kind].map(formatConfigError).map((line) => line.replaceAll(`${paths.config}/`, ""));

const ORG = [
  "# org.toml as the public roster documents it",
  "[box]",
  "pids_limit = 0",
  'cpus = "1.5"',
  "",
  "[context]",
  "briefing_max_chars = 300",
  "",
  "[memory]",
  "enabled = true",
  "recall_max_notes = 12",
  "recall_char_budget = 3000",
  "",
  "[knowledge]",
  "enabled = true",
  'write_from = "any-run"',
  "max_file_chars = 50000",
  "max_repo_bytes = 20000000",
  "max_deletions_ungated = 5",
  "",
  "[[grant]]",
  'name = "model-api"',
  'match = { host = "api.anthropic.com", port = 443 }',
  'verdict = "allow"',
  'inject = { credential = "claude", provider = "anthropic" }',
  "",
  "[[grant]]",
  'name = "github-api"',
  'match = { host = "api.github.com", port = 443 }',
  'verdict = "allow"',
  'inject = { credential = "gh", provider = "github" }',
  "",
  "[[grant]]",
  'name = "acme-api"',
  'match = { host = "api.acme.test", port = 443 }',
  'verdict = "allow"',
  'inject = { credential = "acme", provider = "acme" }',
  "",
  "[[action]]",
  'name = "repo-push"',
  'executor = "knowledge"',
  'trust = "gate"',
  "",
].join("\n");

const PROVIDERS = [
  "[acme]",
  'auth = "api_key"',
  'inject = [{ header = "x-acme-key", value = "{key}" }]',
  'connection = { hosts = ["api.acme.test"], env = "ACME_TOKEN" }',
  "",
].join("\n");

const DOBBY = [
  'name = "dobby"',
  'heartbeat = "every 45 mins"',
  "",
  "[context]",
  "briefing_max_chars = 200",
  "",
  "[memory]",
  "recall_max_notes = 30",
  "recall_char_budget = 2000",
  "",
  "[knowledge]",
  'write_from = "clean-room"',
  "max_file_chars = 10000",
  "max_deletions_ungated = 3",
  "",
  "[[action]]",
  'name = "email-send"',
  'executor = "email"',
  "",
].join("\n");

const KREACHER = [
  'name = "kreacher"',
  'heartbeat = "90s"',
  "",
  "[memory]",
  "enabled = false",
  "",
  "[knowledge]",
  "enabled = false",
  "",
].join("\n");

const WINKY = ['name = "winky"', 'heartbeat = "every 2 days"', ""].join("\n");

function publicDeployment() {
  const notes = makeCanonical({ "README.md": "# notes\n" });
  roots.push(join(notes, ".."));
  const paths = deployment({
    "org.toml": ORG,
    "providers.toml": PROVIDERS,
    "workers/dobby/worker.toml": DOBBY,
    "workers/kreacher/worker.toml": KREACHER,
    "workers/winky/worker.toml": WINKY,
    // a gated repo as the public roster's docs write one: no write_from of its own
    "connections/notes.toml": `kind = "host-repo"\npath = "${notes}"\nwrite = "gated"\n\n[grant.org]\n`,
  });
  return { paths, notes, config: loadConfig(paths.config) };
}

function viewOf(config: LoadedConfig, paths: RosterPaths, name: string): WorkerView {
  const view = workerView(config, name, { dataRoot: paths.data });
  if (!view) throw new Error(`no worker ${name}`);
  return view;
}

const gatedOf = (view: WorkerView, name: string) =>
  view.mounts.find((mount) => mount.name === name)?.gated;

// "any-run" is our spelling too once [knowledge] takes the public spellings of write_from
const ANY_RUN_IS_OURS = Value.Check(KnowledgeSection.properties.write_from, "any-run");

describe("a deployment written for the public roster", () => {
  it("validates with every difference said once, as file:line: field", () => {
    const { paths, config } = publicDeployment();
    expect(lines(config, paths, "errors")).toEqual([]);
    const headers = (h: string, v: string) => `headers = [{ header = "${h}", value = "${v}" }]`;
    expect(lines(config, paths, "notices")).toEqual([
      'providers.toml:1: acme: auth, connection not read here: `roster login acme` stores its credential and a connection file names its own hosts and env; only inject is read, for a [[grant]] whose inject.provider = "acme"',
      "org.toml:11: memory.recall_max_notes: taken as max_notes = 12 (our spelling)",
      "org.toml:12: memory.recall_char_budget: taken as max_chars = 3000 (our spelling)",
      ...(ANY_RUN_IS_OURS
        ? []
        : ['org.toml:16: knowledge.write_from: "any-run" taken as "any" (our spelling)']),
      "org.toml:17: knowledge.max_file_chars: taken as max_file_bytes = 50000 (our spelling): counted in bytes, not characters, so a file of non-ASCII text reaches it sooner",
      "org.toml:3: box.pids_limit: 0 means no limit in the public roster; here a box always has one, so 1024 applies (the default)",
      'org.toml:4: box.cpus: "1.5" taken as 1.5 (our spelling: a number)',
      `org.toml:25: grant.0.inject.provider: taken as anthropic's headers (our spelling: ${headers("x-api-key", "{key}")})`,
      `org.toml:31: grant.1.inject.provider: roster knows the headers of anthropic and openai only (and what providers.toml declares): "gh" goes as its default here, ${headers("authorization", "Bearer {token}")}; name headers in this inject if "github" wants others`,
      `org.toml:37: grant.2.inject.provider: taken as providers.toml's inject for "acme" (our spelling: ${headers("x-acme-key", "{key}")})`,
      `org.toml:41: action.0.executor: "knowledge" taken as "repo" (our spelling): it lands a run's commits on a gated repo (repo_push)`,
      'workers/dobby/worker.toml:2: heartbeat: "every 45 mins" taken as "45m" (our spelling)',
      "workers/dobby/worker.toml:8: memory.recall_max_notes: 30 is more than org.toml's max_notes (12); a worker's config may only narrow the org's here, so 12 applies",
      "workers/dobby/worker.toml:9: memory.recall_char_budget: taken as max_chars = 2000 (our spelling)",
      "workers/dobby/worker.toml:13: knowledge.max_file_chars: taken as max_file_bytes = 10000 (our spelling): counted in bytes, not characters, so a file of non-ASCII text reaches it sooner",
      `workers/dobby/worker.toml:16: action.0: "email-send" is not granted: only org.toml grants actions here (an [[action]] there, with workers = ["dobby"]); a worker's config may only narrow the org's`,
      'workers/kreacher/worker.toml:2: heartbeat: "90s" taken as "2m": a heartbeat is counted in whole minutes here, so it is rounded up',
      "workers/kreacher/worker.toml:5: memory.enabled: false taken as max_notes = 0 (our spelling): no notes from ~/store/memory/memory.jsonl reach a prompt; the file stays the worker's",
      'workers/winky/worker.toml:2: heartbeat: "every 2 days" taken as "2d" (our spelling)',
      'org.toml:16: knowledge.write_from: in the public roster "any-run" is also the default of every gated host-repo connection; here it covers each worker\'s own knowledge repo and task list, and connections/notes.toml keeps the clean-room rule: set write_from there to let any run push',
    ]);
  });

  it("means what it means there: limits, switches, heartbeats, headers and actions as runs get them", () => {
    const { paths, config } = publicDeployment();
    const dobby = viewOf(config, paths, "dobby");
    // pids_limit = 0 keeps a limit; the CPUs are a number
    expect(dobby.box).toMatchObject({ pids_limit: 1024, cpus: 1.5 });
    expect(dobby.context.briefing_max_chars).toBe(200);
    // its recall: the org's 12 notes (it asked for 30), its own 2000 characters
    expect(dobby.memory).toEqual({ max_notes: 12, max_chars: 2000 });
    expect(dobby.heartbeat?.every).toBe("45m");
    expect(dobby.knowledge).toEqual({
      enabled: true,
      write_from: KNOWLEDGE_WRITE_DEFAULT,
      max_file_bytes: 10000,
      max_repo_bytes: 20000000,
      max_deletions_ungated: 3,
    });
    // the knowledge limits hold over every gated repo it gets, its own and the connection
    for (const repo of ["notes", "knowledge"])
      expect(gatedOf(dobby, repo)).toMatchObject({ maxFileBytes: 10000, maxDeletionsUngated: 3 });

    const winky = viewOf(config, paths, "winky");
    expect(winky.heartbeat?.every).toBe("2d");
    expect(winky.memory).toEqual({ max_notes: 12, max_chars: 3000 });
    expect(winky.context.briefing_max_chars).toBe(300);
    expect(winky.knowledge.write_from).not.toBe(KNOWLEDGE_WRITE_DEFAULT);
    expect(gatedOf(winky, "notes")).toMatchObject({ maxFileBytes: 50000, maxDeletionsUngated: 5 });

    // memory and knowledge switched off: no notes, no gated repo in its runs or its prompt
    const kreacher = viewOf(config, paths, "kreacher");
    expect(kreacher.heartbeat?.every).toBe("2m");
    expect(kreacher.memory.max_notes).toBe(0);
    expect(kreacher.knowledge.enabled).toBe(false);
    expect(kreacher.mounts.filter((mount) => mount.gated)).toEqual([]);
    expect(kreacher.connections.map((connection) => connection.name)).toEqual([]);

    const injectOf = (name: string) => config.grants.find((grant) => grant.name === name)?.inject;
    expect(injectOf("model-api")).toEqual({
      credential: "claude",
      headers: [{ header: "x-api-key", value: "{key}" }],
    });
    expect(injectOf("acme-api")).toEqual({
      credential: "acme",
      headers: [{ header: "x-acme-key", value: "{key}" }],
    });
    expect(injectOf("github-api")).toEqual({ credential: "gh" });
    // org.toml's action under our executor; the worker's own [[action]] grants nothing
    expect(config.actions.map((action) => [action.name, action.executor, action.scope])).toEqual([
      ["repo-push", "repo", "org"],
    ]);
  });

  it("a prompt carries no memory notes where memory is off, and no more outcomes than briefing_max_chars", () => {
    const { paths, config } = publicDeployment();
    const note = { id: "n1", text: "Harry likes socks", pinned: true };
    const base = { identity: "", task: "go", runId: "r1", ceiling_min: 5 };
    const off = compilePrompt({
      ...base,
      worker: viewOf(config, paths, "kreacher"),
      memory: { notes: [note], skipped: 0 },
    });
    expect(off.system).not.toContain("Harry likes socks");
    const on = compilePrompt({
      ...base,
      worker: viewOf(config, paths, "winky"),
      memory: { notes: [note], skipped: 0 },
    });
    expect(on.system).toContain("Harry likes socks");

    const outcomes = Array.from({ length: 40 }, (_, i) => `executed email-send (g-${i}): sent`);
    const briefed = compilePrompt({ ...base, worker: viewOf(config, paths, "dobby"), outcomes });
    const block = briefed.system.split("[ROSTER SYSTEM BLOCK: OUTCOMES SINCE YOUR LAST RUN]\n")[1];
    const kept = (block ?? "").split("\n").filter((line) => line.startsWith("executed"));
    expect(kept.at(-1)).toContain("(g-39)");
    expect(kept.join("\n").length).toBeLessThanOrEqual(200);
    expect(block).toMatch(/\(\d+ earlier ones omitted\)/);
  });

  it("a push is held to the knowledge limits, and finds no repo where knowledge is off", async () => {
    const { paths, notes, config } = publicDeployment();
    expect(config.errors).toEqual([]);
    expect(() => gatedTarget(paths, "kreacher", "notes")).toThrow(
      new PushRefused(
        "payload.repo: gated repos are switched off for kreacher ([knowledge] enabled = false)",
      ),
    );
    expect(gatedTarget(paths, "winky", "notes").maxRepoBytes).toBe(20000000);

    // dobby: files up to 10000 bytes; the repo at most what org.toml's max_repo_bytes says
    writeFileSync(
      join(paths.config, "org.toml"),
      ORG.replace("max_repo_bytes = 20000000", "max_repo_bytes = 12000"),
    );
    const push = async (runId: string, files: Record<string, string>) => {
      const clone = await fakeRunWithClone({
        paths,
        worker: "dobby",
        runId,
        connection: "notes",
        canonical: notes,
      });
      for (const [path, text] of Object.entries(files)) writeFileSync(join(clone, path), text);
      const head = commitAndBundle(clone, runId);
      return checkAndHold({
        paths,
        worker: "dobby",
        runId,
        repo: "notes",
        head,
        confirmBulkDelete: false,
        runDir: join(clone, "..", ".."),
        cloneMode: "write",
        readRunContext: () => ({ run: runId, kind: "task", channels: [], people: [] }),
      });
    };
    await expect(push("2026-12-01-10-00-00-r1", { "big.md": "x".repeat(10001) })).rejects.toThrow(
      /"big\.md" is 10001 bytes, over the per-file limit of 10000/,
    );
    await expect(
      push("2026-12-01-10-00-00-r2", { "a.md": "a".repeat(7000), "b.md": "b".repeat(7000) }),
    ).rejects.toThrow(/over \[knowledge\] max_repo_bytes = 12000/);
    await expect(push("2026-12-01-10-00-00-r3", { "a.md": "a".repeat(7000) })).resolves.toEqual({
      commits: 1,
      files: 1,
      deletions: 0,
    });
  });
});

describe("public spellings with values neither roster takes", () => {
  it("are errors naming the file, line and the public key", () => {
    const paths = deployment({
      "org.toml": [
        "[box]",
        'cpus = "lots"',
        "",
        "[memory]",
        "recall_max_notes = -1",
        'enabled = "no"',
        "",
        "[knowledge]",
        "max_file_chars = 0",
        "",
        "[[grant]]",
        'name = "x"',
        'match = { host = "a.test", port = 443 }',
        'verdict = "allow"',
        'inject = { credential = "c", provider = 7 }',
        "",
      ].join("\n"),
      "workers/elf/worker.toml": 'name = "elf"\nheartbeat = "every fortnight"\n',
    });
    const config = loadConfig(paths.config);
    expect(lines(config, paths, "errors")).toEqual([
      "org.toml:5: memory.recall_max_notes: must be a whole number, 0 or more (found -1)",
      'org.toml:6: memory.enabled: must be true or false (found "no")',
      "org.toml:9: knowledge.max_file_chars: must be a whole number, 1 or more (found 0)",
      'org.toml:2: box.cpus: must be a number of CPUs, like 2 or 1.5 (found "lots")',
      "org.toml:15: grant.0.inject.provider: must be a provider's name (found 7)",
      'workers/elf/worker.toml:2: heartbeat: an interval like "30m", "6h" or "1d", or "off" (found "every fortnight")',
    ]);
  });

  it("a worker's [knowledge] may only narrow the org's, as there", () => {
    const paths = deployment({
      "org.toml": "[knowledge]\nenabled = false\nmax_repo_bytes = 1000\n",
      "workers/elf/worker.toml": [
        'name = "elf"',
        "[knowledge]",
        "enabled = true",
        'write_from = "any-run"',
        "max_repo_bytes = 2000",
        "",
      ].join("\n"),
    });
    const config = loadConfig(paths.config);
    expect(lines(config, paths, "errors")).toEqual([
      "workers/elf/worker.toml:3: knowledge.enabled: true switches on the gated repos org.toml switches off ([knowledge] enabled = false); a worker's config may only narrow the org's",
      `workers/elf/worker.toml:4: knowledge.write_from: ${JSON.stringify(config.workers.get("elf")?.knowledge?.write_from ?? "any-run")} lets runs that carried a conversation write where org.toml keeps the clean-room rule ("clean-room" by default); a worker's config may only narrow the org's`,
      "workers/elf/worker.toml:5: knowledge.max_repo_bytes: 2000 is more than org.toml allows (1000); a worker's config may only narrow the org's",
    ]);
  });
});
