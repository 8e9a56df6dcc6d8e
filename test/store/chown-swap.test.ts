import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyIntoStore } from "../../runner/boundary/store/copy.ts";
import { withStoreLock } from "../../runner/boundary/store/store-lock.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * The host is root and hands what it makes in a store to the box's user. A
 * live box of the worker watches for what the host makes there (a folder on
 * the way of `box cp-in`, the temporary it writes beside the file, the
 * store's `.locks` folder) and swaps each for a symlink to a root-owned host
 * file, in a tight loop. The host file must keep its owner: every chown goes
 * to a descriptor the host holds, or to the link itself.
 */
const docker = await testDocker();
const root = process.getuid?.() === 0;

/** The box's side: swaps whatever the host makes for a link to the victim, until killed. */
const SWAPPER = `
import os, sys, time
S = os.path.expanduser("~/store"); V = sys.argv[1]; IN = S + "/in"
os.makedirs(IN, exist_ok=True)
open(S + "/swapper-ready", "w").close()
def swap_for_link(path, is_dir):
    try:
        if is_dir: os.rmdir(path)
        else:
            os.symlink(V, path + ".l"); os.rename(path + ".l", path); return
        os.symlink(V, path)
    except OSError: pass
while True:
    for name in os.listdir(IN):
        path = IN + "/" + name
        if name.endswith(".tmp"): swap_for_link(path, False)
        elif name.startswith("d") and not os.path.islink(path): swap_for_link(path, True)
        try:
            for inner in os.listdir(path):
                if inner.endswith(".tmp"): swap_for_link(path + "/" + inner, False)
        except OSError: pass
    try: os.unlink(S + "/.locks/store")
    except OSError: pass
    swap_for_link(S + "/.locks", True)
    try:
        if os.path.islink(S + "/.locks"): os.unlink(S + "/.locks")
    except OSError: pass
`;

describe.skipIf(!docker || !root)("chown in a store a live box swaps under the host", () => {
  let deployment: RosterRoot;
  let outside: string;
  let swapper: ChildProcess | undefined;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    outside = await mkdtemp(join(tmpdir(), "roster-outside-"));
  });
  afterAll(async () => {
    if (swapper) await stop(swapper);
    await deployment?.cleanup();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  it("never hands a host file to the box's user, however fast the box swaps", async () => {
    const store = join(deployment.paths.data, "workers/elf/store");
    const victim = join(outside, "root-owned.txt");
    writeFileSync(victim, "the host's\n");
    mkdirSync(store, { recursive: true });
    const script = join(store, "swapper.py");
    writeFileSync(script, SWAPPER, { mode: 0o644 });
    const source = join(outside, "cp-in.txt");
    writeFileSync(source, "from the host\n");

    swapper = deployment.spawnRoster([
      "box",
      "exec",
      "elf",
      "--",
      `python3 ~/store/swapper.py ${victim}`,
    ]);
    await waitFor(() => existsSync(join(store, "swapper-ready")) || undefined);

    // the host does what it does in a store, over and over, while the box swaps
    let attempts = 0;
    let refused = 0;
    const until = Date.now() + 8_000;
    while (Date.now() < until && statSync(victim).uid === 0) {
      attempts += 1;
      for (const path of [`in/f${attempts}.txt`, `in/d${attempts}/f.txt`])
        await copyIntoStore(deployment.paths, "elf", source, path).catch(() => (refused += 1));
      await withStoreLock(store, 0, async () => undefined).catch(() => (refused += 1));
    }
    console.log(`chown swap: ${attempts} rounds, ${refused} refusals`);
    expect(statSync(victim).uid).toBe(0);
    expect(statSync(victim).gid).toBe(0);
    expect(attempts).toBeGreaterThan(20);
  }, 60_000);
});

async function waitFor<T>(probe: () => T | undefined, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
