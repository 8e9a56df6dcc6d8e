import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { diskKiB, treeOf } from "../support/store-tree.ts";

/**
 * What snapshots cost: a 200 MB store, one file changed per run by real
 * runs, keeps its last 14 snapshots (`[store] snapshots = 14`) in at most
 * 1.1x the disk of one copy, since every unchanged file is a hard link to the
 * snapshot before (du counts a hard-linked file once).
 */
const docker = await testDocker();

describe.skipIf(!docker)("store snapshots on disk", () => {
  let deployment: RosterRoot;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
  });
  afterAll(async () => {
    await deployment?.cleanup();
  });

  const exec = async (command: string) => {
    const result = await deployment.roster(["box", "exec", "elf", "--", command], {
      timeoutMs: 180_000,
    });
    expect(result.code, result.stderr).toBe(0);
  };

  it("keeps 14 snapshots of a 200 MB store, one file changed per run, in at most 1.1x one copy", async () => {
    const store = join(deployment.paths.data, "workers/elf/store");
    const snapshots = join(deployment.paths.data, "workers/elf/store-snapshots");
    await exec(
      "mkdir -p ~/store/data && cd ~/store/data && for i in $(seq 1 200); do head -c 1048576 /dev/urandom > f$i; done",
    );
    for (let run = 1; run <= 15; run++)
      await exec(`head -c 1048576 /dev/urandom > ~/store/data/f${run}`);

    const names = readdirSync(snapshots).filter((name) => /^\d{8}-\d{6}\.\d{3}$/.test(name));
    expect(names).toHaveLength(14);
    const copy = diskKiB(store);
    const all = diskKiB(snapshots);
    expect(copy).toBeGreaterThan(200 * 1024);
    expect(all / copy).toBeLessThanOrEqual(1.1);
    // the newest snapshot is the store as the last run left it
    expect(treeOf(join(snapshots, names.sort().at(-1) ?? ""))).toEqual(treeOf(store));
    console.log(
      `14 snapshots of a ${Math.round(copy / 1024)} MB store: ${Math.round(all / 1024)} MB (${(all / copy).toFixed(3)}x one copy)`,
    );
  }, 900_000);
});
