/**
 * How far past its limit a box gets before the disk watch (runs/disk-watch.ts)
 * stops it: the worst case of a limit kept by polling. A box writes as fast as
 * it can (`dd` of 3 GB from /dev/zero in 1 MiB blocks) into its store, limited
 * to 200m, and into its $HOME, limited to 200m; then the same into a store
 * that already holds 50,000 small files, so each `du` takes longer. What is on
 * disk when the box is gone, less the limit, is the overshoot. Also measured:
 * the box's own write rate (150 MB into $HOME, as dd reports it). Needs Docker
 * and the box image.
 *   npx tsx bench/disk-overshoot.ts
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { diskUsage } from "../runner/ground/files/disk-usage.ts";
import { listRuns } from "../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../runner/work/runs/exec-envelope.ts";
import { makeRosterRoot } from "./harness.ts";

const MB = 1024 * 1024;
const LIMIT_MB = 200;
const ROUNDS = 5;

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
try {
  await writeFile(
    join(root.paths.config, "workers/elf/worker.toml"),
    `name = "elf"\n\n[store]\nmax_size = "${LIMIT_MB}m"\nhome_max_size = "${LIMIT_MB}m"\n`,
  );
  const store = join(root.paths.data, "workers/elf/store");
  const exec = async (command: string) => {
    const started = performance.now();
    const result = await root.roster(["box", "exec", "elf", "--timeout", "300", "--", command], {
      timeoutMs: 400_000,
    });
    const envelope = JSON.parse(result.stdout.trim() || "{}") as ExecEnvelope;
    return { envelope, ms: performance.now() - started };
  };
  const folderOf = (runId: string | undefined) =>
    listRuns(root.paths.state, "elf").find((run) => run.id === runId)?.dir ?? "";

  const fill = (dir: string) =>
    `dd if=/dev/zero of=${dir}/fill.bin bs=1M count=3000 status=none; echo wrote`;
  const rows: string[] = [];
  const measure = async (label: string, dir: string, folder: (runId: string) => string[]) => {
    const overs: number[] = [];
    const seen: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { envelope } = await exec(fill(dir));
      if (envelope.reason !== "disk") throw new Error(`${label}: ${JSON.stringify(envelope)}`);
      const sizes = await diskUsage(folder(envelope.run_id ?? ""));
      const size = sizes.reduce((sum, value) => sum + value, 0);
      overs.push(size / MB - LIMIT_MB);
      // what the watch saw when it stopped the box: the rest came while it was being killed
      const said = / holds? ([\d.]+)([mg]) on disk/.exec(envelope.error ?? "");
      seen.push(Number(said?.[1]) * (said?.[2] === "g" ? 1024 : 1) - LIMIT_MB);
      // from the host: a box started on a store over its limit would be stopped at once
      await rm(join(store, "fill.bin"), { force: true });
    }
    rows.push(
      `| ${label} | ${seen.map((value) => `${value.toFixed(0)}`).join(", ")} | ${overs.map((value) => `${value.toFixed(0)}`).join(", ")} | ${Math.max(...overs).toFixed(0)} MB |`,
    );
  };
  await measure("store, empty", "$HOME/store", () => [store]);
  await measure("$HOME", "$HOME", (runId) => [
    join(folderOf(runId), "home"),
    join(folderOf(runId), "repos"),
  ]);
  // 50,000 files of 1 kB in the store: each look costs a walk of them
  for (let dir = 0; dir < 50; dir++) {
    await mkdir(join(store, "tree", `d${dir}`), { recursive: true });
    for (let file = 0; file < 1000; file++)
      await writeFile(join(store, "tree", `d${dir}`, `f${file}`), "x".repeat(1000));
  }
  const duStarted = performance.now();
  await diskUsage([store]);
  const duMs = performance.now() - duStarted;
  await measure(`store, 50,000 files (one du: ${duMs.toFixed(0)} ms)`, "$HOME/store", () => [
    store,
  ]);

  // the box's own write rate, nothing near a limit: 150 MB, as dd itself reports it
  const rate = await exec("dd if=/dev/zero of=$HOME/rate.bin bs=1M count=150 2>&1 | tail -1");
  console.log(`\nthe box's dd into $HOME: ${rate.envelope.stdout.trim()}\n`);
  console.log(
    `| ${LIMIT_MB}m limit, dd of 3 GB | MB over when the watch stopped it | MB over once the box was gone | worst |`,
  );
  console.log("| --- | --- | --- | --- |");
  for (const row of rows) console.log(row);
} finally {
  await root.cleanup();
}
