import { mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BUSY_MARK, StallWatchdog } from "../../runner/work/runs/stall-watchdog.ts";

/** The watchdog on real timers and a real $HOME folder: short windows, generous margins. */
const WINDOW = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("StallWatchdog", () => {
  let home: string;
  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), "roster-stall-"));
  });
  afterEach(async () => {
    await rm(home, { recursive: true, force: true });
  });

  const watch = () => {
    const stalls: number[] = [];
    const dog = new StallWatchdog(WINDOW, home, (quiet) => stalls.push(quiet));
    return { dog, stalls };
  };

  it("calls a stall once, after a quiet window", async () => {
    const { dog, stalls } = watch();
    dog.start();
    await sleep(WINDOW * 3);
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toBeGreaterThanOrEqual(WINDOW);
  });

  it("is held off by activity, and fires once activity stops", async () => {
    const { dog, stalls } = watch();
    dog.start();
    for (let i = 0; i < 12; i++) {
      await sleep(WINDOW / 4);
      dog.activity();
    }
    expect(stalls).toEqual([]);
    await sleep(WINDOW * 2);
    expect(stalls).toHaveLength(1);
  });

  it("counts a fresh busy mark as a sign of life", async () => {
    const { dog, stalls } = watch();
    dog.start();
    for (let i = 0; i < 12; i++) {
      await sleep(WINDOW / 4);
      await writeFile(join(home, BUSY_MARK), "");
    }
    expect(stalls).toEqual([]);
    dog.stop();
  });

  it("ignores a mark dated in the future, and never follows a symlink", async () => {
    const { dog, stalls } = watch();
    await writeFile(join(home, "elsewhere"), "");
    await symlink(join(home, "elsewhere"), join(home, BUSY_MARK));
    dog.start();
    for (let i = 0; i < 8; i++) {
      await sleep(WINDOW / 4);
      await writeFile(join(home, "elsewhere"), "");
    }
    expect(stalls).toHaveLength(1);

    await rm(join(home, BUSY_MARK));
    await writeFile(join(home, BUSY_MARK), "");
    const future = new Date(Date.now() + 3_600_000);
    await utimes(join(home, BUSY_MARK), future, future);
    const second = watch();
    second.dog.start();
    await sleep(WINDOW * 3);
    expect(second.stalls).toHaveLength(1);
  });

  it("is silent once stopped, and starts its window afresh on start", async () => {
    const { dog, stalls } = watch();
    dog.start();
    await sleep(WINDOW / 2);
    dog.stop();
    await sleep(WINDOW * 2);
    expect(stalls).toEqual([]);
    dog.start();
    await sleep(WINDOW / 2);
    expect(stalls).toEqual([]);
    await sleep(WINDOW * 2);
    expect(stalls).toHaveLength(1);
  });
});
