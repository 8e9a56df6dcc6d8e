import { type ChildProcess, execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boxContainerName, boxUser } from "../../runner/boundary/box/layout.ts";
import { restoreStore } from "../../runner/boundary/store/restore.ts";
import { listSnapshots, takeSnapshot } from "../../runner/boundary/store/snapshots.ts";
import { lockHostFile } from "../../runner/ground/files/host-lock.ts";
import { processAlive } from "../../runner/ground/files/process-alive.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { treeOf } from "../support/store-tree.ts";

/**
 * Restores and snapshots against boxes of the same worker: a run that starts
 * while a restore copies waits for it and finds the whole restored store;
 * and a box that swaps a store folder for a symlink to a host folder in a
 * tight loop, all through snapshots and restores, never gets a host file
 * into a snapshot nor makes the host write outside the store, nor gets what
 * a pass skipped described as the host file a link reached.
 */
const docker = await testDocker();

describe.skipIf(!docker)("restores and snapshots racing live boxes", () => {
  let deployment: RosterRoot;
  let store: string;
  let snapshots: string;
  let outside: string;
  const children: ChildProcess[] = [];
  const containers: string[] = [];

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    store = join(deployment.paths.data, "workers/elf/store");
    snapshots = join(deployment.paths.data, "workers/elf/store-snapshots");
    outside = await mkdtemp(join(tmpdir(), "roster-outside-"));
  });
  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const name of containers)
      await docker
        ?.getContainer(name)
        .remove({ force: true })
        .catch(() => undefined);
    await deployment?.cleanup();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  it("starts a run that comes during a restore only once the restore is done", async () => {
    mkdirSync(store, { recursive: true });
    const files = 30_000;
    const user = boxUser();
    for (let dir = 0; dir < 30; dir++) {
      mkdirSync(join(store, "tree", `d${dir}`), { recursive: true });
      for (let file = 0; file < files / 30; file++)
        writeFileSync(join(store, "tree", `d${dir}`, `f${file}`), `${dir}.${file}\n`);
    }
    writeFileSync(join(store, "marker"), "one\n");
    // made by the host, removed by the box: the box's own files
    execFileSync("chown", ["-R", `${user.uid}:${user.gid}`, store]);
    const whole = await takeSnapshot(
      deployment.paths,
      { worker: "elf" },
      { reason: "sweep", keep: 100, waitMs: 0 },
    );
    const wholeName = whole?.snapshot?.name ?? "";
    const gone = await deployment.roster(
      ["box", "exec", "elf", "--", "rm -rf ~/store/tree; echo two > ~/store/marker"],
      { timeoutMs: 120_000 },
    );
    expect(gone.code, gone.stderr).toBe(0);

    const restoring = deployment.spawnRoster(["worker", "restore", "elf", "--from", wholeName]);
    children.push(restoring);
    const restored = exited(restoring);
    // the restore has begun: it holds the worker's start lock (a shared take is refused),
    // or, at the latest, its copy back is under way (its keep-list is written just before)
    const startLock = join(deployment.paths.data, "workers/elf/start.lock");
    await waitFor(
      async () => {
        if (readdirSync(snapshots).some((name) => name.startsWith(".restore-keep-"))) return true;
        const probe = await open(startLock, "r+").catch(() => undefined);
        if (!probe) return undefined;
        try {
          return (await lockHostFile(probe, "shared", 0)) ? undefined : true;
        } finally {
          await probe.close();
        }
      },
      60_000,
      10,
    );
    const started = Date.now();
    const run = await deployment.roster(
      ["box", "exec", "elf", "--", "cat ~/store/marker; find ~/store/tree -type f | wc -l"],
      { timeoutMs: 120_000 },
    );
    const restore = await restored;
    expect(restore.code, restore.stderr).toBe(0);
    expect(run.code, `${run.stderr}${run.stdout}`).toBe(0);
    // the run's box found the store whole, as the snapshot has it
    const seen = (JSON.parse(run.stdout.trim()) as { stdout: string }).stdout;
    expect(seen.trim().split(/\s+/)).toEqual(["one", String(files)]);
    expect(run.stderr).toContain("elf's store is being restored: the run starts once it is done");
    console.log(
      `restore race: the run waited and finished ${((Date.now() - started) / 1000).toFixed(1)} s after the restore took the start lock`,
    );
  }, 180_000);

  it("keeps every host file out of snapshots and every write inside the store while a box swaps a folder for a symlink", async () => {
    // the host folder a box points its store folder at: what must never be read or written
    const secret = join(outside, "secret");
    mkdirSync(join(secret, "sub"), { recursive: true });
    for (let file = 0; file < 50; file++) writeFileSync(join(secret, `f${file}`), "HOST CANARY\n");
    writeFileSync(join(secret, "sub", "x"), "HOST CANARY\n");
    symlinkSync(join(secret, "f0"), join(secret, "link"));
    const secretBefore = treeOf(secret);
    // the first test's big tree would only make every pass slower
    rmSync(join(store, "tree"), { recursive: true, force: true });
    mkdirSync(join(store, "swapped", "sub"), { recursive: true });
    for (let file = 0; file < 50; file++)
      writeFileSync(join(store, "swapped", `f${file}`), `store ${file}\n`);
    writeFileSync(join(store, "swapped", "sub", "x"), "store\n");
    // a fifo the pass skips and names, in a folder swapped for a link to the host's /dev
    mkdirSync(join(store, "devs"));
    execFileSync("mkfifo", [join(store, "devs", "null")]);
    writeFileSync(join(store, "swapper.py"), SWAPPER, { mode: 0o644 });
    // where the box says how it ended and how far it got: no pass copies or deletes .locks
    mkdirSync(join(store, ".locks"), { recursive: true });

    const swapper = deployment.spawnRoster([
      "box",
      "exec",
      "elf",
      "--",
      // how it ended, where no restore removes it (.locks is never copied nor deleted)
      `python3 ~/store/swapper.py swapped=${secret} devs=/dev@0.001 2>~/store/.locks/swapper-stderr; echo $? >~/store/.locks/swapper-exit`,
    ]);
    children.push(swapper);
    await waitFor(() => existsSync(join(store, "swapper-ready")) || undefined);
    const record = await waitFor(() =>
      listRuns(deployment.paths.state, "elf")
        .map((run) => readRecord(run.dir))
        .find((found) => found?.state === "running"),
    );
    containers.push(boxContainerName(record.id));

    // snapshots while the box swaps: each pass finds the folder changed again
    let passes = 0;
    const named: string[] = [];
    const snapshotsUntil = Date.now() + 3_000;
    while (passes < 10 || Date.now() < snapshotsUntil) {
      const pass = await takeSnapshot(
        deployment.paths,
        { worker: "elf" },
        { reason: "sweep", keep: 100, waitMs: 5_000 },
      );
      named.push(...(pass?.changes.skipped ?? []).map((entry) => `${entry.path} (${entry.why})`));
      passes += 1;
    }

    // its runner dies and the box swaps on: no run is recorded as going, so a restore copies
    swapper.kill("SIGKILL");
    await waitFor(() => (processAlive(record.runner_pid ?? 0) ? undefined : true));
    let restores = 0;
    const restoresUntil = Date.now() + 3_000;
    while (restores < 6 || Date.now() < restoresUntil) {
      // the one before the newest: the store as an earlier pass found it
      const all = listSnapshots(deployment.paths, { worker: "elf" });
      const from = (all.at(-2) ?? all.at(-1))?.name ?? "";
      await restoreStore(deployment.paths, { worker: "elf" }, { from });
      restores += 1;
    }
    const running = await docker
      ?.getContainer(boxContainerName(record.id))
      .inspect()
      .catch((error: unknown) => ({ State: { Running: String(error) } }));
    const ended = () =>
      ["swapper-exit", "swapper-stderr"]
        .map((name) => {
          try {
            return readFileSync(join(store, ".locks", name), "utf8");
          } catch {
            return "";
          }
        })
        .join(" ");
    expect(running?.State.Running, `the swapping box ended: ${ended()}`).toBe(true);
    const swaps = readCount(join(store, ".locks", "swapper-count"));
    console.log(
      `swap race: ${passes} snapshot passes and ${restores} restores while the box swapped (${swaps} swaps by the last count)`,
    );

    // no host byte in any snapshot (grep -r does not follow links)
    const leaked = grepCount("HOST CANARY", snapshots);
    expect(leaked).toBe(0);
    // nothing written, removed or changed outside the store
    expect(treeOf(secret)).toEqual(secretBefore);
    // what a pass skipped is named as the store holds it, never as the host file a link reached
    for (const meta of listSnapshots(deployment.paths, { worker: "elf" }))
      named.push(...meta.skipped.map((entry) => `${entry.path} (${entry.why})`));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((entry) => entry.includes("device"))).toEqual([]);
  }, 180_000);
});

/**
 * The box's side: swaps each named store folder for a symlink to a host
 * folder and back (`name=target`, each in a thread of its own), as fast as it
 * can or holding each state a while (`@seconds`: a pass then often lists a
 * folder and looks again once it is a link), until its box is removed; it
 * survives a restore taking a folder or a link away.
 */
const SWAPPER = `
import os, sys, threading, time
S = os.path.expanduser("~/store")
os.chdir(S)
def attempt(step):
    try: step()
    except OSError: pass
def swap(name, target, hold):
    n = 0
    while True:
        attempt(lambda: os.rename(name, name + ".away"))
        attempt(lambda: os.symlink(target, name))
        if hold: time.sleep(hold)
        attempt(lambda: os.unlink(name))
        attempt(lambda: os.rename(name + ".away", name))
        if hold: time.sleep(hold)
        n += 1
        if n % 20000 == 0:
            attempt(lambda: open(".locks/swapper-count", "w").write(str(n)))
# name=target[@seconds each state is held; none: as fast as it can]
for arg in sys.argv[1:]:
    name, rest = arg.split("=", 1)
    target, _, hold = rest.partition("@")
    threading.Thread(target=swap, args=(name, target, float(hold or 0)), daemon=True).start()
open("swapper-ready", "w").close()
while True: time.sleep(60)
`;

/** A number the box wrote, 0 when it wrote none yet. */
function readCount(file: string): number {
  try {
    return Number(readFileSync(file, "utf8")) || 0;
  } catch {
    return 0;
  }
}

function grepCount(text: string, dir: string): number {
  try {
    return execFileSync("grep", ["-rl", text, dir], { encoding: "utf8" }).trim().split("\n").length;
  } catch {
    return 0; // grep exits 1 when nothing matches
  }
}

function exited(child: ChildProcess): Promise<{ code: number; stderr: string }> {
  const stderr: Buffer[] = [];
  child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
  return new Promise((resolve) => {
    child.once("exit", (code) =>
      resolve({ code: code ?? 1, stderr: Buffer.concat(stderr).toString() }),
    );
  });
}

async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 60_000,
  every = 50,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}
