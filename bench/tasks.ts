/**
 * The dispatcher's tick at scale: 1,000 recurring templates across 50
 * workers, with 0, 200 and 2,000 finished tasks on each worker's list. For
 * each: the median time of a quiet tick (nothing due), of a tick that fires
 * every template at once, and the process's RSS after. Boxes are not started
 * (the cap is 0): this measures the calendar and the lists, not Docker.
 *   npx tsx bench/tasks.ts
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  readTasks,
  type Task,
  type Template,
  updateList,
} from "../runner/records/task-list/store.ts";
import { Dispatcher } from "../runner/services/server/dispatch.ts";
import { makeRosterRoot } from "./harness.ts";

const WORKERS = 50;
const TEMPLATES_PER_WORKER = 20;
const QUIET_TICKS = 15;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const workers = Array.from({ length: WORKERS }, (_, index) => `w${String(index).padStart(2, "0")}`);
for (const worker of workers) {
  await mkdir(join(root.paths.config, "workers", worker), { recursive: true });
  await writeFile(
    join(root.paths.config, "workers", worker, "worker.toml"),
    `name = "${worker}"\n`,
  );
}

const start = Date.parse("2026-12-01T00:00:00Z");
const template = (worker: string, index: number, nextAt: number): Template => ({
  id: `r-${worker}${String(index).padStart(4, "0")}`,
  prompt: `chore ${index} of ${worker}`,
  every: "1h",
  ceiling_min: 20,
  filed_at: new Date(start).toISOString(),
  filed_by: "cli:bench",
  standing: "owner",
  next_at: new Date(nextAt).toISOString(),
});
const finishedTask = (worker: string, index: number): Task => ({
  id: `t-${(index + 0x10000000).toString(16)}`,
  prompt: `an old chore ${index} of ${worker}, done long ago; its note says what it did`,
  ceiling_min: 20,
  state: "done",
  filed_at: new Date(start - 86_400_000).toISOString(),
  filed_by: "cli:bench",
  standing: "owner",
  run_id: `2026-11-30-00-00-00-${index}`,
  finished_at: new Date(start - 86_000_000).toISOString(),
  note: "done: the chore was finished and the result filed",
});

/** Every worker's list: `finished` done tasks, no open ones, its templates next due at `nextAt`. */
async function setLists(finished: number, nextAt: number): Promise<void> {
  for (const worker of workers)
    await updateList(root.paths, worker, () => ({
      tasks: Array.from({ length: finished }, (_, index) => finishedTask(worker, index)),
      recurring: Array.from({ length: TEMPLATES_PER_WORKER }, (_, index) =>
        template(worker, index, nextAt),
      ),
    }));
}

const rows: string[] = [];
for (const finished of [0, 200, 2000]) {
  let now = new Date(start);
  const dispatcher = new Dispatcher({
    paths: root.paths,
    cap: 0,
    note: () => undefined,
    clock: () => now,
  });
  // quiet: every template is due in an hour
  await setLists(finished, start + 3_600_000);
  const quiet: number[] = [];
  for (let tick = 0; tick < QUIET_TICKS; tick++) {
    const began = performance.now();
    await dispatcher.tick();
    quiet.push(performance.now() - began);
  }
  // firing: the clock reaches every template's time at once
  now = new Date(start + 3_600_000 + 1_000);
  const began = performance.now();
  await dispatcher.tick();
  const firing = performance.now() - began;
  const filed = workers.reduce(
    (sum, worker) =>
      sum + readTasks(root.paths, worker).tasks.filter((t) => t.state === "pending").length,
    0,
  );
  if (filed !== WORKERS * TEMPLATES_PER_WORKER)
    throw new Error(`the firing tick filed ${filed} tasks, not ${WORKERS * TEMPLATES_PER_WORKER}`);
  const rss = process.memoryUsage().rss / 1024 / 1024;
  rows.push(
    `| ${finished} | ${median(quiet).toFixed(1)} | ${firing.toFixed(0)} | ${rss.toFixed(0)} |`,
  );
}
await root.cleanup();

process.stdout.write(
  [
    `Dispatcher ticks, ${WORKERS} workers × ${TEMPLATES_PER_WORKER} templates (no boxes started):`,
    "",
    "| finished tasks per worker | quiet tick ms (median) | tick firing all 1,000 ms | RSS MiB after |",
    "|---|---|---|---|",
    ...rows,
    "",
  ].join("\n"),
);
