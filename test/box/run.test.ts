import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SENTINEL } from "../../runner/boundary/box/box-env.ts";
import { connectEngine } from "../../runner/boundary/box/connect.ts";
import { BOX_OPEN_FILES } from "../../runner/boundary/box/container-spec.ts";
import { BOX_IMAGE } from "../../runner/boundary/box/layout.ts";
import { liveRuns } from "../../runner/boundary/gateway/doors/identity.ts";
import { configDigest, readConfigFiles } from "../../runner/ground/config/config-digest.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** A turn that runs one bash command, and a turn that answers with the command's output. */
const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
const answerWithToolOutput: ScriptStep = (request) => {
  const tool = [...(request.body.messages ?? [])]
    .reverse()
    .find((message) => message.role === "tool");
  const content =
    typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
  return { text: `TOOL OUTPUT:\n${content}` };
};

/**
 * How long a container ran, as the engine recorded it: from its `start` event
 * to its `die` event (both engines' event log, Docker's and Podman's alike).
 * An engine may write its log a moment after the container is gone (Podman's
 * does), so the log is read again until both events are in it, for 10 s.
 */
async function lifetimeMs(engine: Docker, container: string, since: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const stream = await engine.getEvents({
      since: Math.floor(since / 1000),
      until: Math.ceil(Date.now() / 1000),
      filters: { container: [container] },
    });
    let text = "";
    for await (const chunk of stream) text += String(chunk);
    const events = text
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { Action?: string; timeNano?: number });
    const at = (action: string) => events.find((each) => each.Action === action)?.timeNano;
    const start = at("start");
    const die = at("die");
    if (start !== undefined && die !== undefined) return (die - start) / 1e6;
    if (Date.now() > deadline)
      throw new Error(`no start and die events for ${container} (saw ${text.trim() || "none"})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe.skipIf(!docker)("roster run", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let shared: string;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    shared = await mkdtemp(join(tmpdir(), "roster-mnt-"));
    await mkdir(join(shared, "ro"));
    await mkdir(join(shared, "rw"));
    await writeFile(join(shared, "ro/readme.txt"), "read me\n");
    const { chmod } = await import("node:fs/promises");
    await chmod(join(shared, "rw"), 0o777);
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "REAL-MODEL-KEY-42",
    });
    await writeFile(
      join(deployment.paths.config, "connections/reference.toml"),
      `kind = "host-dir"\npath = "${join(shared, "ro")}"\nmode = "ro"\n[grant.elf]\n`,
    );
    await writeFile(
      join(deployment.paths.config, "connections/scratch.toml"),
      `kind = "host-dir"\npath = "${join(shared, "rw")}"\nmode = "rw"\n[grant.org]\n`,
    );
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
    if (shared) await rm(shared, { recursive: true, force: true });
  });

  it("runs elf end to end: the model gets the compiled prompt through the gateway with the real key", {
    tags: ["runtime"],
  }, async () => {
    model.play({ text: "Hello from the scripted model." });
    const result = await deployment.roster(["run", "elf", "Say hello"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe("Hello from the scripted model.");

    const request = model.requests.at(-1);
    expect(request?.headers.authorization).toBe("Bearer REAL-MODEL-KEY-42");
    expect(JSON.stringify(model.requests)).not.toContain(SENTINEL);
    const system = request?.body.messages?.find((message) => message.role === "system");
    const systemText = JSON.stringify(system?.content);
    expect(systemText).toContain("[ROSTER SYSTEM BLOCK: IDENTITY]");
    expect(systemText).toContain("You are elf, a careful general-purpose worker.");
    expect(systemText).toContain("[ROSTER SYSTEM BLOCK: RUNTIME POLICY]");
    expect(systemText).toContain("scratch (host-dir): mounted at ~/mnt/scratch (read-write)");

    const [run] = listRuns(deployment.paths.state, "elf");
    expect(run).toBeDefined();
    const record = run ? readRecord(run.dir) : undefined;
    expect(record).toMatchObject({ state: "done", ended_by: "exit", exit_code: 0, kind: "box" });
    expect(readFileSync(join(run?.dir ?? "", "prompt/input.md"), "utf8")).toBe("Say hello");
    expect(readFileSync(join(run?.dir ?? "", "prompt/system.md"), "utf8")).toContain(
      "RUNTIME SCOPE",
    );

    const ls = await deployment.roster(["runs", "ls", "--json"]);
    expect(JSON.parse(ls.stdout)[0]).toMatchObject({ id: record?.id, state: "done" });
    const show = await deployment.roster(["runs", "show", (record?.id ?? "").slice(0, 22)]);
    expect(show.stdout).toContain("assistant: Hello from the scripted model.");
    expect(show.stdout).toContain("user: Say hello");
    // the record names the config the run started under, and the door's lines the one that
    // judged them: both read back by digest from the history
    const digest = configDigest(readConfigFiles(deployment.paths.config));
    expect(record?.config).toBe(digest);
    expect(show.stdout).toContain(`config    ${digest.slice(0, 12)}`);
    expect(show.stdout).toContain(`judged    by config ${digest.slice(0, 12)}`);
    const diff = await deployment.roster(["config", "diff", digest.slice(0, 12), "current"]);
    expect(diff.stdout, diff.stderr).toContain("the same files, byte for byte");
  });

  it("mounts each part of $HOME with the mode its writer decides", {
    tags: ["runtime"],
  }, async () => {
    const probe = [
      'w() { if ( : > "$1" ) 2>/dev/null; then echo "$2=writable"; else echo "$2=refused"; fi; }',
      "echo persisted > ~/store/marker && echo store=written",
      "echo x > ~/.roster-dotfile",
      "w ~/self/x self; w ~/self/config/x self-config; w ~/mnt/reference/x mnt-ro; w ~/mnt/scratch/x mnt-rw",
      "w /opt/roster/engine/x engine; w /x root; w ~/workspace/x workspace",
      "cat ~/mnt/reference/readme.txt",
    ].join("; ");
    model.play(bash(probe), answerWithToolOutput);
    const first = await deployment.roster(["run", "elf", "probe the mounts"]);
    expect(first.code, first.stderr).toBe(0);
    for (const expected of [
      "store=written",
      "self=refused",
      "self-config=refused",
      "mnt-ro=refused",
      "mnt-rw=writable",
      "engine=refused",
      "root=refused",
      "workspace=writable",
      "read me",
    ]) {
      expect(first.stdout).toContain(expected);
    }
    expect(existsSync(join(shared, "rw/x"))).toBe(true);
    // the live view shows the tool call and its result as they happen, on stderr
    expect(first.stderr).toContain("→ bash");
    expect(first.stderr).toContain("← ");

    model.play(
      bash("cat ~/store/marker; ls -a ~ | grep -c roster-dotfile || true"),
      answerWithToolOutput,
    );
    const second = await deployment.roster(["run", "elf", "look again"]);
    expect(second.stdout).toContain("persisted");
    expect(second.stdout).toMatch(/\n0\s*$/m);
  });

  it("kills a run at its ceiling: exit 2, recorded as ceiling", { tags: ["runtime"] }, async () => {
    model.play(bash("sleep 120"), { text: "never" });
    const started = Date.now();
    const result = await deployment.roster(["run", "--ceiling", "0.1", "elf", "sleep forever"]);
    expect(result.code).toBe(2);
    const [run] = listRuns(deployment.paths.state, "elf");
    const record = run ? readRecord(run.dir) : undefined;
    expect(record).toMatchObject({ state: "failed", ended_by: "ceiling", ceiling_min: 0.1 });
    // killed at 0.1 minutes of the box's life, as the engine saw it: from its start to its death
    // (not the 120 s its command asked for); the margin is the kill's own way through the engine
    const client = docker as NonNullable<typeof docker>;
    const lived = await lifetimeMs(client, record?.container ?? "", started);
    console.log(`a box with a 0.1-minute ceiling lived ${(lived / 1000).toFixed(2)} s`);
    expect(lived).toBeGreaterThanOrEqual(6_000);
    expect(lived).toBeLessThan(6_000 + 5_000);
  });

  it("reaps the box of a runner that was killed, and finishes its record", {
    tags: ["engine"],
  }, async () => {
    model.play(bash("sleep 300"));
    const asked = model.requests.length;
    const child = deployment.spawnRoster(["run", "elf", "hang around"]);
    const client = docker as NonNullable<typeof docker>;
    let containerId: string | undefined;
    for (let i = 0; i < 120 && !containerId; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      // the box this runner started (other deployments may run elf boxes now)
      const boxes = await client.listContainers({
        filters: { label: [`roster.runner.pid=${child.pid}`] },
      });
      if (boxes.length && model.requests.length > asked) containerId = boxes[0]?.Id;
    }
    expect(containerId).toBeDefined();
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    const [orphanRun] = listRuns(deployment.paths.state, "elf");
    expect(orphanRun ? readRecord(orphanRun.dir)?.state : undefined).toBe("running");
    // the killed runner left its token live
    expect(liveRuns(deployment.paths.identity).has(orphanRun?.id ?? "")).toBe(true);
    // another deployment's box on the same engine, whose runner pid means nothing here
    // (made as roster makes a box, so each engine's own limits apply)
    const engine = await connectEngine({ env: process.env });
    const theirsName = `roster-theirs-${Date.now()}`;
    const theirsBox = await engine.createBox({
      image: BOX_IMAGE,
      cmd: ["sleep", "300"],
      name: theirsName,
      labels: {
        "roster.worker": "elf",
        "roster.run": theirsName,
        "roster.runner.pid": String(child.pid),
        "roster.deployment": "another-deployment",
      },
    });
    await theirsBox.start();
    const theirs = client.getContainer(theirsName);

    const ls = await deployment.roster(["runs", "ls"]);
    expect(ls.stderr).toContain("reaped an orphaned box of elf");
    const remaining = await client.listContainers({
      all: true,
      filters: { id: [containerId ?? "none"] },
    });
    expect(remaining).toHaveLength(0);
    // this deployment's sweep reaped its own box and left the other one's running
    const kept = await theirs.inspect();
    await theirsBox.remove();
    expect(kept.State.Running).toBe(true);
    expect(ls.stderr).not.toContain(theirsName);
    expect(orphanRun ? readRecord(orphanRun.dir) : undefined).toMatchObject({
      state: "failed",
      ended_by: "crash",
    });
    // and the reaper revoked it: nothing can speak for that run any more, and its door goes
    expect(liveRuns(deployment.paths.identity).has(orphanRun?.id ?? "")).toBe(false);
  });

  it("stops the box on SIGTERM and records the signal", async () => {
    model.play(bash("sleep 300"));
    const asked = model.requests.length;
    const child = deployment.spawnRoster(["run", "elf", "wait for a signal"]);
    for (let i = 0; i < 120 && model.requests.length <= asked; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    child.kill("SIGTERM");
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(130);
    const [run] = listRuns(deployment.paths.state, "elf");
    expect(run ? readRecord(run.dir) : undefined).toMatchObject({
      state: "failed",
      ended_by: "signal",
    });
    const client = docker as NonNullable<typeof docker>;
    expect(
      // this run's box, not every elf box on the engine (other deployments may run one now)
      await client.listContainers({ all: true, filters: { label: [`roster.run=${run?.id}`] } }),
    ).toHaveLength(0);
  });

  it("exits promptly once the run is over: nothing holds the process after its record is final", async () => {
    model.play({ text: "done at once" });
    const child = deployment.spawnRoster(["run", "elf", "answer at once"]);
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    const exitedAt = Date.now();
    expect(code).toBe(0);
    const [run] = listRuns(deployment.paths.state, "elf");
    const record = run ? readRecord(run.dir) : undefined;
    expect(record?.state).toBe("done");
    // generous: what it guards against is a leftover timer or socket holding the process for seconds
    expect(exitedAt - Date.parse(String(record?.ended_at))).toBeLessThan(1000);
  });

  it("streams pi's events with --json", async () => {
    model.play({ text: "json mode" });
    const result = await deployment.roster(["run", "--json", "elf", "events please"]);
    expect(result.code, result.stderr).toBe(0);
    const events = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    expect(events[0]?.type).toBe("session");
    expect(events.at(-1)?.type).toBe("agent_settled");
  });

  it("gives exposed credentials to the box only as a sentinel, and its tools the gateway as their proxy", {
    tags: ["runtime"],
  }, async () => {
    const worker = join(deployment.paths.config, "workers/elf/worker.toml");
    const before = readFileSync(worker, "utf8");
    await writeFile(worker, `${before}\n[[expose]]\ncredential = "github"\nenv = "GITHUB_TOKEN"\n`);
    try {
      model.play(
        bash(
          [
            "curl -s -w '\\ngateway=%{http_code}\\n' https://example.invalid/ || true",
            'echo "token=$GITHUB_TOKEN"',
            "env | grep -c REAL-MODEL-KEY || true",
          ].join("; "),
        ),
        answerWithToolOutput,
      );
      const result = await deployment.roster(["run", "elf", "show the token"]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`token=${SENTINEL}`);
      expect(result.stdout).toMatch(/\n0\s*$/m);
      // a plain curl from the worker's bash tool goes to the gateway, which answers on the host
      // (that nothing else answers is the escape suite's, test/security/escape.test.ts): web-read
      // allows any https GET, so nothing refuses it (that would be a 403) and it is forwarded; the
      // host's resolver says the name does not exist (.invalid never does, RFC 6761; a host with
      // no resolver at all says EAI_AGAIN), and the gateway answers 502 naming the rule
      expect(result.stdout).toMatch(
        /\{"error":"upstream: (ENOTFOUND|EAI_AGAIN)","rule":"web-read"\}\ngateway=502/,
      );
    } finally {
      await writeFile(worker, before);
    }
  });

  it("gives the box the limits a worker narrowed to, and refuses a run that widens one", {
    tags: ["runtime"],
  }, async () => {
    const worker = join(deployment.paths.config, "workers/elf/worker.toml");
    const before = readFileSync(worker, "utf8");
    await writeFile(worker, `${before}\n[box]\nmemory = "512m"\npids_limit = 256\n`);
    try {
      model.play(
        // cgroup v2 files, or v1's where the host still mounts v1
        bash(
          "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; grep MemTotal /proc/meminfo; echo nofile=$(ulimit -Sn)/$(ulimit -Hn)",
        ),
        answerWithToolOutput,
      );
      const narrowed = await deployment.roster(["run", "elf", "show your limits"]);
      expect(narrowed.code, narrowed.stderr).toBe(0);
      if (process.env.ROSTER_TEST_RUNTIME === "runsc") {
        // gVisor shows a box no cgroup files: its kernel sizes the box's memory by
        // the limit; the pids limit holds at the host (test/box/gvisor.test.ts)
        expect(narrowed.stdout).toMatch(/MemTotal:\s+524288 kB/);
      } else {
        expect(narrowed.stdout).toContain(String(512 * 1024 * 1024));
        expect(narrowed.stdout).toMatch(/\b256\b/);
      }
      // open files: well under the gateway's, and the box can't raise its own
      expect(narrowed.stdout).toContain(`nofile=${BOX_OPEN_FILES}/${BOX_OPEN_FILES}`);

      await writeFile(worker, `${before}\n[box]\nmemory = "64g"\n`);
      const requests = model.requests.length;
      const widened = await deployment.roster(["run", "elf", "anything"]);
      expect(widened.code).toBe(2);
      expect(widened.stderr).toMatch(
        /worker\.toml:\d+: box\.memory: "64g" is more than org\.toml allows \("4g"\)/,
      );
      expect(model.requests.length).toBe(requests);
    } finally {
      await writeFile(worker, before);
    }
  });

  it("fails the run instead of cutting an identity over its limit", async () => {
    const worker = join(deployment.paths.config, "workers/elf/worker.toml");
    const before = readFileSync(worker, "utf8");
    await writeFile(worker, `${before}\n[context]\nidentity_max_chars = 10\n`);
    try {
      const requests = model.requests.length;
      const result = await deployment.roster(["run", "elf", "anything"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        /identity\.md is \d+ characters, over \[context\] identity_max_chars = 10/,
      );
      expect(model.requests.length).toBe(requests);
      const [run] = listRuns(deployment.paths.state, "elf");
      expect(run ? readRecord(run.dir) : undefined).toMatchObject({
        state: "failed",
        ended_by: "error",
      });
    } finally {
      await writeFile(worker, before);
    }
  });

  it("refuses broken config with file:line, exit 2, nothing started", async () => {
    const worker = join(deployment.paths.config, "workers/elf/worker.toml");
    const before = readFileSync(worker, "utf8");
    await writeFile(worker, `${before}\nsurprise = true\n`);
    try {
      const runsBefore = listRuns(deployment.paths.state).length;
      const result = await deployment.roster(["run", "elf", "anything"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/workers\/elf\/worker\.toml:3: surprise: unknown key/);
      expect(listRuns(deployment.paths.state)).toHaveLength(runsBefore);
      const validate = await deployment.roster(["validate"]);
      expect(validate.code).toBe(2);
      expect(validate.stdout).toMatch(/worker\.toml:3: surprise: unknown key/);
    } finally {
      await writeFile(worker, before);
    }
  });

  it("refuses before any container starts when the model credential is missing", async () => {
    await rm(join(deployment.paths.vault, "local-model.json"));
    const requests = model.requests.length;
    const runsBefore = listRuns(deployment.paths.state).length;
    const result = await deployment.roster(["run", "elf", "anything"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'no model credential "local-model" for openai-compatible: run `roster login local-model`',
    );
    expect(model.requests.length).toBe(requests);
    expect(listRuns(deployment.paths.state)).toHaveLength(runsBefore);
  });
});
