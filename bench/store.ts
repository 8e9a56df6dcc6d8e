/**
 * Store snapshots: what the pass after a run costs, in time and in disk, for
 * a 10,000-file, 200 MB store in which the run changed 10 files, side by side
 * with `cp -a` of the same store (what a plain copy per run would cost). The
 * pass is the real one (store/snapshots.ts: a dry-run comparison, then rsync
 * --link-dest against the previous snapshot, under the store lock).
 *
 *   npx tsx bench/store.ts            (no Docker needed; rsync on PATH)
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { listSnapshots, takeSnapshot } from "../runner/boundary/store/snapshots.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";

const FILES = 10_000;
const FILE_BYTES = 20_000; // 200 MB in all
const CHANGED = 10;
const ROUNDS = 3;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};
/** KiB on disk; du counts a file hard-linked twice once. */
const du = (...dirs: string[]) =>
  Number(
    (
      execFileSync("du", ["-sk", "-c", ...dirs], { encoding: "utf8" })
        .trim()
        .split("\n")
        .at(-1) ?? ""
    ).split(/\s+/)[0],
  );
const mb = (kib: number) => `${(kib / 1024).toFixed(1)} MB`;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const root = mkdtempSync(join(tmpdir(), "roster-bench-store-"));
try {
  const paths = rosterPaths({ ROSTER_ROOT: root });
  const store = join(paths.data, "workers/bench/store");
  for (let dir = 0; dir < 100; dir++) {
    mkdirSync(join(store, `d${dir}`), { recursive: true });
    for (let file = 0; file < FILES / 100; file++)
      writeFileSync(join(store, `d${dir}`, `f${file}`), randomBytes(FILE_BYTES));
  }
  const target = { worker: "bench" };
  const snapshotsDir = join(paths.data, "workers/bench/store-snapshots");
  const pass = async () => {
    const start = performance.now();
    const result = await takeSnapshot(paths, target, {
      reason: "run",
      keep: 100,
      waitMs: 0,
    });
    if (!result?.snapshot) throw new Error("the pass kept no snapshot");
    return performance.now() - start;
  };
  const storeKiB = du(store);
  console.log(
    `store: ${FILES} files, ${mb(storeKiB)} on disk; each round a run changed ${CHANGED} files`,
  );

  const first = await pass();
  const full: number[] = [];
  const snap: number[] = [];
  const snapDisk: number[] = [];
  const copyDisk: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < CHANGED; i++)
      writeFileSync(
        join(store, `d${(round * 7 + i * 13) % 100}`, `f${i}`),
        randomBytes(FILE_BYTES),
      );
    const before = du(snapshotsDir);
    snap.push(await pass());
    snapDisk.push(du(snapshotsDir) - before);
    const copy = join(root, `copy-${round}`);
    const start = performance.now();
    execFileSync("cp", ["-a", store, copy]);
    full.push(performance.now() - start);
    copyDisk.push(du(copy));
  }
  const count = listSnapshots(paths, target).length;
  console.log(
    `\n| after a run that changed ${CHANGED} files (median of ${ROUNDS}) | time | disk added |`,
  );
  console.log("| --- | --- | --- |");
  console.log(
    `| roster's snapshot (compare, then rsync --link-dest) | ${secs(median(snap))} | ${mb(median(snapDisk))} |`,
  );
  console.log(`| \`cp -a\` of the store | ${secs(median(full))} | ${mb(median(copyDisk))} |`);
  console.log(
    `| snapshot / cp -a | ${(median(snap) / median(full)).toFixed(2)}x | ${(median(snapDisk) / median(copyDisk)).toFixed(3)}x |`,
  );
  console.log(
    `\nthe first snapshot (nothing to link against, a whole copy): ${secs(first)}; ${count} snapshots in all take ${mb(du(snapshotsDir))}`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
