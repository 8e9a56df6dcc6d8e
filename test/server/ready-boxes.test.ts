import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { proxyUrl } from "../../runner/boundary/gateway/doors/identity.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { newTaskId, readTasks, updateTasks } from "../../runner/records/task-list/store.ts";
import { REFILL_AFTER_TAKE_MS } from "../../runner/work/ready/pool.ts";
import { readReadyStatus, readyStatusFile } from "../../runner/work/ready/server-pool.ts";
import { testDocker } from "../support/docker.ts";
import { textOf } from "../support/model-server.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { type ReadyServer, readyServer, boxRunning as running } from "../support/ready-server.ts";
import { mainOf, makeCanonical, sh, writeRepoConnection } from "../support/repos.ts";
import { latestRecord } from "../support/roster-root.ts";

/**
 * Ready boxes (docs/ready-boxes.md) through a real server, real boxes and the
 * real gateway: a run handed to the server takes the box made for it and
 * another is made behind it, once the run has had a moment of the host;
 * before hand-off the box's token is refused and it has no record; two runs
 * never share one; a config edit or a dead box means the run starts the
 * usual way, and still succeeds.
 */
const docker = await testDocker();
const ROOM = "discord-111111111111111-222222222222222";

describe.skipIf(!docker)("ready boxes in the server", () => {
  let kept: ReadyServer;
  const ready = () => readReadyStatus(kept.deployment.paths);
  /**
   * The one ready box there is, once the server has made it (and not the one
   * named), and once it says what the box holds when `measured`.
   */
  const nextReady = (not?: string, measured = false) =>
    kept.waitFor(
      () => {
        const now = ready();
        const box = now.length === 1 && now[0]?.run !== not ? now[0] : undefined;
        return box && (!measured || box.memory_bytes !== undefined) ? box : undefined;
      },
      `the server to make a ready box${measured ? " and measure it" : ""}`,
    );

  /** The tools declared to the model in its latest request. */
  const toolNames = () =>
    (kept.model.requests.at(-1)?.body.tools ?? []).map((tool) => tool.function.name);

  beforeAll(async () => {
    kept = await readyServer({});
    // a grant only for runs no channel started (a command line, a schedule)
    await appendFile(
      join(kept.deployment.paths.config, "org.toml"),
      '\n[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "gate"\nchannels = { surfaces = ["none"] }\n',
    );
    await kept.start();
  }, 120_000);
  beforeEach(() => {
    kept.model.reset();
    kept.model.requests.length = 0;
  });
  afterAll(async () => {
    await kept?.stop();
  });

  it("a run takes the ready box made for it, and another is made behind it; before that its token is refused", async () => {
    // the first run finds none: the worker ran, so the pool makes one behind it
    kept.model.play({ text: "first, the usual way" });
    const first = await kept.deployment.roster(["run", "elf", "first"]);
    expect(first.code, first.stderr).toBe(0);
    const box = await nextReady(undefined, true);
    expect(running(box.container)).toBe(true);
    expect(box.memory_bytes).toBeGreaterThan(0);

    // before hand-off: no record, and a token the gateway refuses (no identity, no door)
    const dir = runDir(kept.deployment.paths.state, "elf", box.run);
    expect(existsSync(join(dir, "run.json"))).toBe(false);
    const unbound = readdirSync(kept.deployment.paths.identity).filter((name) =>
      name.endsWith(".ready"),
    );
    expect(unbound).toHaveLength(1);
    const token = unbound[0]?.slice(0, -".ready".length) ?? "";
    const refused = await viaProxy(
      proxyUrl(token, "127.0.0.1", kept.deployment.gatewayPort),
      "http://ready.test/",
    );
    expect(refused.status).toBe(403);
    const status = await kept.deployment.roster(["server", "status"]);
    expect(status.stdout).toContain(`ready boxes: 1`);
    expect(status.stdout).toMatch(new RegExp(`${box.run}  elf  made .* \\d+ MiB`));

    // the hand-off: this run is that box's, told its own run id and task
    kept.model.play({ text: "second, in a ready box" });
    // before the take, whatever the hand-off then costs on a busy machine
    const handing = Date.now();
    const second = await kept.deployment.roster(["run", "elf", "the second task"], {
      timeoutMs: 60_000,
    });
    expect(second.code, `${second.stderr}\nserver log:\n${kept.log()}`).toBe(0);
    expect(second.stdout).toBe("second, in a ready box\n");
    // its run id was chosen when the box was made: the record is found by it
    expect(readRecord(dir)).toMatchObject({
      id: box.run,
      state: "done",
      ended_by: "exit",
      runner_pid: kept.pid(),
    });
    const asked = kept.model.requests.at(-1)?.body.messages ?? [];
    expect(textOf(asked.find((m) => m.role === "system")?.content)).toContain(`run: ${box.run}`);
    expect(textOf(asked.find((m) => m.role === "user")?.content)).toContain("the second task");
    // not a task's run: no outcome to report, none offered
    expect(toolNames()).toContain("message_user");
    expect(toolNames()).not.toContain("task_complete");
    // its box is gone with its run, its token too; another is ready for the next
    await kept.waitFor(() => !running(box.container), "the used box to go");
    expect(existsSync(join(kept.deployment.paths.identity, `${token}.json`))).toBe(false);
    const behind = await nextReady(box.run);
    expect(behind.container).not.toBe(box.container);
    // and it was made only once the run had had the host for its start (pool.ts):
    // its create came at least the hold after the take, so after the command began
    const madeAt = Date.parse(
      JSON.parse(
        execFileSync("docker", ["inspect", "-f", "{{json .Created}}", behind.container], {
          encoding: "utf8",
        }),
      ) as string,
    );
    expect(madeAt - handing).toBeGreaterThanOrEqual(REFILL_AFTER_TAKE_MS);
  }, 240_000);

  it("a task's run in a ready box reports its outcome and is judged by the task's channel (both learned at hand-off)", async () => {
    const box = await nextReady();
    kept.model.play(
      { toolCalls: [{ name: "message_user", arguments: { text: "the room asked" } }] },
      { toolCalls: [{ name: "task_complete", arguments: { note: "12 apples" } }] },
    );
    // a task filed from a room: its run's input comes from there, whichever box serves it
    const id = newTaskId();
    await updateTasks(kept.deployment.paths, "elf", (current) => [
      ...current.tasks,
      {
        id,
        prompt: "count the apples",
        ceiling_min: 10,
        state: "pending",
        filed_at: new Date().toISOString(),
        filed_by: "run:run-in-the-room",
        standing: "owner",
        channel: ROOM,
        reply_to: false,
      },
    ]);
    const task = () => readTasks(kept.deployment.paths, "elf").tasks.find((one) => one.id === id);
    await kept.waitFor(
      () => task()?.state === "done" || task()?.state === "needs-review",
      "the task to settle",
    );
    expect(task()).toMatchObject({ state: "done", note: "12 apples" });
    // in the box made for it
    expect(readRecord(runDir(kept.deployment.paths.state, "elf", box.run))).toMatchObject({
      task_id: id,
    });
    expect(toolNames()).toContain("task_complete");
    // the grant is only for runs no channel started: this one came from the room
    const journal = readJournal(kept.deployment.paths, "elf").filter(
      (event) => event.run_id === box.run && event.intent === "message-user",
    );
    expect(journal.map((event) => event.kind)).toEqual(["action-refused"]);
    expect(journal[0]?.detail).toContain(`this run started from ${ROOM}`);
  }, 120_000);

  it("two runs at once never share one", async () => {
    const box = await nextReady();
    kept.model.play({ text: "one" }, { text: "two" });
    const [a, b] = await Promise.all([
      kept.deployment.roster(["run", "elf", "at once, a"]),
      kept.deployment.roster(["run", "elf", "at once, b"]),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const ids = [a, b].map((result) => /run (\S+): done/.exec(result.stderr)?.[1] ?? "");
    // one of them took the ready box, the other started the usual way
    expect(ids.filter((id) => id === box.run)).toHaveLength(1);
    expect(ids.filter((id) => id !== box.run && id.length > 0)).toHaveLength(1);
    const containers = ids.map(
      (id) =>
        JSON.parse(
          readFileSync(join(runDir(kept.deployment.paths.state, "elf", id), "run.json"), "utf8"),
        ).container as string,
    );
    expect(containers[0]).not.toBe(containers[1]);
  }, 240_000);

  it("a config edit discards the pool: the next run starts the usual way", async () => {
    const box = await nextReady();
    expect(running(box.container)).toBe(true);
    await appendFile(join(kept.deployment.paths.config, "workers/elf/worker.toml"), "\n# edited\n");
    kept.model.play({ text: "after the edit" });
    const run = await kept.deployment.roster(["run", "elf", "after an edit"]);
    expect(run.code, run.stderr).toBe(0);
    expect(latestRecord(kept.deployment.paths, "elf")?.id).not.toBe(box.run);
    await kept.waitFor(() => !running(box.container), "the stale ready box to go");
    expect(existsSync(runDir(kept.deployment.paths.state, "elf", box.run))).toBe(false);
  }, 240_000);

  it("a ready box that died is skipped, and the run still succeeds", async () => {
    const box = await nextReady();
    execFileSync("docker", ["kill", box.container], { stdio: "ignore" });
    kept.model.play({ text: "despite a dead box" });
    const run = await kept.deployment.roster(["run", "elf", "go on"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("despite a dead box\n");
    expect(latestRecord(kept.deployment.paths, "elf")?.id).not.toBe(box.run);
  }, 240_000);

  it("a ready box whose door the box can no longer see is discarded, and the run starts the usual way", async () => {
    const box = await nextReady();
    expect(running(box.container)).toBe(true);
    // the folder the box has mounted is replaced on the host: a door opened there can't reach it
    const door = join(kept.deployment.paths.state, "doors", `gateway@${box.run}`);
    expect(existsSync(door)).toBe(true);
    rmSync(door, { recursive: true });
    mkdirSync(door);
    kept.model.play({ text: "through a door of its own" });
    const run = await kept.deployment.roster(["run", "elf", "go on"]);
    expect(run.code, `${run.stderr}\nserver log:\n${kept.log()}`).toBe(0);
    expect(run.stdout).toBe("through a door of its own\n");
    expect(run.stderr).toContain(`ready box ${box.run} not used (its door folder was made again`);
    expect(latestRecord(kept.deployment.paths, "elf")?.id).not.toBe(box.run);
    await kept.waitFor(() => !running(box.container), "the unfit ready box to go");
    expect(existsSync(runDir(kept.deployment.paths.state, "elf", box.run))).toBe(false);
    expect(existsSync(door)).toBe(false);
  }, 240_000);

  it("a ready box whose repo clone fell behind its landing branch is discarded, and the run starts from the new head", async () => {
    const canonical = makeCanonical({ "README.md": "v1\n" });
    const before = await nextReady();
    await writeRepoConnection(kept.deployment.paths, "src", canonical, "elf");
    // the connection is a config edit: the next box is made with the repo cloned
    kept.model.play({ text: "with the repo" });
    expect((await kept.deployment.roster(["run", "elf", "clone it"])).code).toBe(0);
    const box = await nextReady(before.run);
    expect(running(box.container)).toBe(true);
    // another run lands a commit: the ready box's clone is now behind
    const work = join(kept.deployment.root, "seed-work");
    execFileSync("git", ["clone", "-q", canonical, work]);
    sh(work, ["commit", "-q", "--allow-empty", "-m", "landed meanwhile"]);
    sh(work, ["push", "-q", "origin", "main"]);
    const head = mainOf(canonical);
    kept.model.play({ text: "from the new head" });
    const run = await kept.deployment.roster(["run", "elf", "go on"]);
    expect(run.code, `${run.stderr}\nserver log:\n${kept.log()}`).toBe(0);
    const record = latestRecord(kept.deployment.paths, "elf");
    expect(record?.id).not.toBe(box.run);
    expect(record?.repos?.src?.base_commit).toBe(head);
    expect(kept.log()).toContain(`ready box ${box.run} for elf discarded: repo src moved on`);
    await kept.waitFor(() => !running(box.container), "the stale ready box to go");
  }, 240_000);

  it("stops with the server: no ready box, token or folder left behind", async () => {
    const box = await nextReady();
    // aimed at a box that runs: "not running" afterwards then means the server removed it
    expect(running(box.container)).toBe(true);
    await kept.stopServer();
    expect(running(box.container)).toBe(false);
    expect(readdirSync(kept.deployment.paths.identity).filter((n) => n.endsWith(".ready"))).toEqual(
      [],
    );
    expect(existsSync(runDir(kept.deployment.paths.state, "elf", box.run))).toBe(false);
  }, 120_000);
});

describe.skipIf(!docker)("ready boxes under the server's cap", () => {
  let kept: ReadyServer;

  beforeAll(async () => {
    kept = await readyServer({ idleSecs: 10, cap: 1 });
    // a second worker, whose run needs the room elf's ready box holds
    const imp = join(kept.deployment.paths.config, "workers/imp");
    mkdirSync(imp);
    writeFileSync(join(imp, "worker.toml"), 'name = "imp"\n');
    writeFileSync(join(imp, "identity.md"), "You are imp, a test worker.\n");
    await kept.start();
  }, 120_000);
  afterAll(async () => {
    await kept?.stop();
  });

  it("a run gets the room a ready box held, and a ready box nobody takes goes after ready_idle_secs", async () => {
    kept.model.play({ text: "elf ran" });
    const first = await kept.deployment.roster(["run", "elf", "first"]);
    expect(first.code, first.stderr).toBe(0);
    const elfBox = await kept.waitFor(
      () => readReadyStatus(kept.deployment.paths).find((box) => box.worker === "elf"),
      "a ready box for elf",
      90_000,
    );
    expect(running(elfBox.container)).toBe(true);

    // the cap is 1: imp's run needs the room, so elf's ready box is given up for it
    kept.model.play({ text: "imp ran" });
    const imp = await kept.deployment.roster(["run", "imp", "second"]);
    expect(imp.code, `${imp.stderr}\nserver log:\n${kept.log()}`).toBe(0);
    expect(imp.stdout).toBe("imp ran\n");
    expect(kept.log()).toContain(`ready box ${elfBox.run} for elf discarded: room for a run`);
    expect(running(elfBox.container)).toBe(false);
    expect(latestRecord(kept.deployment.paths, "imp")?.ended_by).toBe("exit");

    // with the room back, the pool refills; nobody takes it, so it goes after 10 s and
    // no other is made (nobody asked within that time either)
    const idle = await kept.waitFor(
      () => readReadyStatus(kept.deployment.paths)[0],
      "a ready box",
      90_000,
    );
    expect(running(idle.container)).toBe(true);
    await kept.waitFor(
      () =>
        kept.log().includes(`ready box ${idle.run} for ${idle.worker} discarded: untaken for 10 s`),
      "the idle ready box to be discarded",
      30_000,
    );
    await kept.waitFor(() => !running(idle.container), "the idle box to go");
    // two more ticks (the status is written on each): a box made on either would show
    const status = readyStatusFile(kept.deployment.paths);
    for (let tick = 0; tick < 2; tick++) {
      const seen = statSync(status).mtimeMs;
      await kept.waitFor(() => statSync(status).mtimeMs > seen, "the server's next tick", 30_000);
    }
    expect(readReadyStatus(kept.deployment.paths)).toEqual([]);
    expect(readdirSync(kept.deployment.paths.identity).filter((n) => n.endsWith(".ready"))).toEqual(
      [],
    );
  }, 240_000);
});

describe.skipIf(!docker)("box exec in a ready box", () => {
  let kept: ReadyServer;
  const exec = async (command: string) => {
    const result = await kept.deployment.roster(["box", "exec", "elf", "--", command]);
    return { ...result, envelope: JSON.parse(result.stdout) as Record<string, unknown> };
  };

  beforeAll(async () => {
    kept = await readyServer({});
    // a grant only for runs no channel started (a command line, a schedule)
    await appendFile(
      join(kept.deployment.paths.config, "org.toml"),
      '\n[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "gate"\nchannels = { surfaces = ["none"] }\n',
    );
    await kept.start();
  }, 120_000);
  afterAll(async () => {
    await kept?.stop();
  });

  it("a command runs in the box made for commands: its own output, exit code and run id", async () => {
    const first = await exec("true");
    expect(first.envelope, first.stderr).toMatchObject({ status: "ok", exit_code: 0 });
    const box = await kept.waitFor(
      () => readReadyStatus(kept.deployment.paths).find((entry) => entry.exec),
      "a ready box for commands",
      90_000,
    );
    expect(running(box.container)).toBe(true);
    // a command box runs no engine and holds no run: no record before hand-off
    expect(existsSync(join(runDir(kept.deployment.paths.state, "elf", box.run), "run.json"))).toBe(
      false,
    );

    // quotes, a newline and stdin at its end reach the command as a plain exec has them
    const run = await exec(
      `printf '%s|' "$ROSTER_RUN_ID" "two words"; cat; printf 'a\\nb'; exit 3`,
    );
    expect(run.envelope, `${run.stderr}\nserver log:\n${kept.log()}`).toMatchObject({
      status: "failed",
      exit_code: 3,
      run_id: box.run,
      stdout: `${box.run}|two words|a\nb`,
    });
    expect(readRecord(runDir(kept.deployment.paths.state, "elf", box.run))).toMatchObject({
      kind: "exec",
      state: "failed",
      exit_code: 3,
    });
    await kept.waitFor(() => !running(box.container), "the used box to go");
    // another is made behind it; a run's box is a different kind and serves no command
    const behind = await kept.waitFor(
      () =>
        readReadyStatus(kept.deployment.paths).find((entry) => entry.exec && entry.run !== box.run),
      "another ready box for commands",
      90_000,
    );
    expect(behind.container).not.toBe(box.container);
  }, 240_000);
});
