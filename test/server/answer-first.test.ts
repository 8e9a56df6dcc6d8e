import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { listSnapshots, lockStoreOf, storeDir } from "../../runner/boundary/store/snapshots.ts";
import { withStoreLock } from "../../runner/boundary/store/store-lock.ts";
import { processAlive } from "../../runner/ground/files/process-alive.ts";
import { type RunRecord, readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { readServerState } from "../../runner/services/server/state.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { type RunServer, startRunServer } from "../support/run-server.ts";

/**
 * A run handed to a running server answers as soon as its box has exited:
 * the CLI prints the answer and exits while the server takes the store
 * snapshot and finishes the record. The worker's next run waits for that
 * snapshot, and a server killed before it is taken takes it at its next start.
 * The snapshot is held back in a real way: by a store with many new files, or
 * by the store lock held as a box inside `roster-lock store` holds it.
 */
const docker = await testDocker();

describe.skipIf(!docker)("a handed run's answer before its bookkeeping", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let server: RunServer | undefined;

  const elf = { worker: "elf" };
  const recordOf = (id: string) => readRecord(runDir(deployment.paths.state, "elf", id));
  const idOf = (stderr: string) => /run (\S+): done/.exec(stderr)?.[1] ?? "";

  /** Holds elf's store lock until the returned release is called. */
  async function holdStoreLock(): Promise<() => Promise<void>> {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let taken: () => void = () => undefined;
    const isTaken = new Promise<void>((resolve) => {
      taken = resolve;
    });
    const holding = withStoreLock(lockStoreOf(deployment.paths, elf), 5_000, async () => {
      taken();
      await held;
    });
    await Promise.race([isTaken, holding]);
    return async () => {
      release();
      await holding;
    };
  }

  async function startServer(): Promise<void> {
    server = await startRunServer(deployment);
  }

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
    await mkdir(storeDir(deployment.paths, elf), { recursive: true });
    // the server's daily sweep of every store is not due: each snapshot here is a run's
    await writeFile(
      join(deployment.paths.state, "store-sweep.json"),
      `${JSON.stringify({ at: new Date().toISOString() })}\n`,
    );
    await startServer();
  });
  beforeEach(() => {
    model.reset();
  });
  afterAll(async () => {
    await server?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("exits with its answer before the snapshot of a store with many new files is taken", async () => {
    // the host writes 3,000 files the run's snapshot must copy
    const store = storeDir(deployment.paths, elf);
    await mkdir(join(store, "many"), { recursive: true });
    for (let i = 0; i < 3000; i++)
      await writeFile(join(store, "many", `f${i}.txt`), `file ${i}\n`.repeat(20));
    model.play({ text: "answered first" });
    const run = await deployment.roster(["run", "elf", "say something"]);
    const exitedAt = Date.now();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("answered first\n");
    expect(run.stderr).toMatch(/run \S+: done \(exit, exit 0; run by the server\)/);
    const id = idOf(run.stderr);
    // the record's end was written before the answer; its bookkeeping after the CLI was gone
    const settled = await until(
      () => (recordOf(id)?.settled_at ? recordOf(id) : undefined),
      "the run's bookkeeping to be done",
    );
    expect(settled).toMatchObject({ state: "done", ended_by: "exit", exit_code: 0 });
    expect(settled.pending).toBeUndefined();
    expect(Date.parse(settled.ended_at ?? "")).toBeLessThanOrEqual(exitedAt);
    expect(Date.parse(settled.settled_at ?? "")).toBeGreaterThan(exitedAt);
    const snapshot = listSnapshots(deployment.paths, elf).find((meta) => meta.run === id);
    expect(snapshot?.added).toBeGreaterThanOrEqual(3000);
    expect(existsSync(join(runDir(deployment.paths.state, "elf", id), "store-changes.txt"))).toBe(
      true,
    );
  });

  it("the worker's next run waits for the snapshot the last one still owes", async () => {
    const release = await holdStoreLock();
    let first: RunRecord | undefined;
    try {
      model.play({ text: "one" }, { text: "two" });
      const one = await deployment.roster(["run", "elf", "first"]);
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout).toBe("one\n");
      // answered while its snapshot waits for the store lock: finished, the snapshot pending
      first = recordOf(idOf(one.stderr));
      expect(first).toMatchObject({ state: "done", ended_by: "exit" });
      expect(first?.pending).toBeDefined();
      const asked = model.requests.length;
      const two = deployment.spawnRoster(["run", "elf", "second"]);
      let said = "";
      let out = "";
      two.stderr.on("data", (chunk: Buffer) => {
        said += chunk.toString();
      });
      two.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      const twoExited = new Promise<number | null>((resolve) => two.once("exit", resolve));
      await until(() => /taking its store snapshot/.test(said), "the second run to wait", 60_000);
      // waiting: its box has not asked the model, and the first run's snapshot is still owed
      expect(model.requests.length).toBe(asked);
      expect(recordOf(first?.id ?? "")?.pending).toBeDefined();
      await release();
      await until(() => model.requests.length > asked, "the second run to ask the model");
      const askedAt = Date.now();
      expect(await twoExited, said).toBe(0);
      expect(out).toBe("two\n");
      const settled = recordOf(first?.id ?? "");
      expect(settled?.pending).toBeUndefined();
      expect(Date.parse(settled?.settled_at ?? "")).toBeLessThanOrEqual(askedAt);
      // and the second's own bookkeeping is done before the next test writes to the store
      const second = idOf(said);
      await until(() => recordOf(second)?.settled_at, "the second run's bookkeeping");
    } finally {
      await release();
    }
  });

  it("a server killed between an answer and its snapshot takes the snapshot at its next start", async () => {
    // something new in the store, so the snapshot owed is a real one
    await writeFile(join(storeDir(deployment.paths, elf), "late.txt"), "written late\n");
    const release = await holdStoreLock();
    let id = "";
    try {
      model.play({ text: "before the kill" });
      const run = await deployment.roster(["run", "elf", "answer, then lose the server"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe("before the kill\n");
      id = idOf(run.stderr);
      expect(recordOf(id)?.pending).toBeDefined();
      // the server itself, by the pid it runs as (the command may be a wrapper around it)
      const pid = readServerState(deployment.paths)?.pid ?? 0;
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, "SIGKILL");
      await until(() => !processAlive(pid), "the server to be gone", 10_000);
    } finally {
      await release();
    }
    // nobody took it: the record still says the snapshot is owed
    expect(recordOf(id)).toMatchObject({ state: "done", pending: expect.anything() });
    expect(listSnapshots(deployment.paths, elf).some((meta) => meta.run === id)).toBe(false);

    const again = await deployment.roster(["server", "start", "--once", "--no-listen"]);
    expect(again.code, again.stderr).toBe(0);
    expect(`${again.stdout}${again.stderr}`).toContain(
      `run ${id} had answered before the last server stopped; its snapshot is taken and its record finished`,
    );
    const record = recordOf(id);
    expect(record).toMatchObject({ state: "done", ended_by: "exit", exit_code: 0 });
    expect(record?.pending).toBeUndefined();
    expect(record?.settled_at).toBeDefined();
    expect(listSnapshots(deployment.paths, elf).some((meta) => meta.run === id)).toBe(true);
  });
});
