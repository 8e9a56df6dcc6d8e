import { userInfo } from "node:os";
import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";

/** `roster task add | ls | show`: a worker's task list (the daemon dispatches it). */
export function registerTaskCommands(program: Command): void {
  const task = program.command("task").description("a worker's task list");

  task
    .command("add <worker> <prompt...>")
    .description("put a task on a worker's list")
    .option("--ceiling <minutes>", "wall-clock ceiling of its run in minutes (at most 1440)", "30")
    .option("--at <time>", "not before this time (RFC 3339 in UTC, ending in Z)")
    .option("--json", "the task as JSON")
    .action(
      async (
        worker: string,
        prompt: string[],
        flags: { ceiling: string; at?: string; json?: boolean },
      ) => {
        const paths = rosterPaths();
        const { loadConfig } = await import("../config/load.ts");
        const { RosterError } = await import("../errors.ts");
        const { newTaskId, updateTasks } = await import("../tasks/store.ts");
        const { ceilingProblem } = await import("../config/ceiling.ts");
        if (!loadConfig(paths.config).workers.has(worker))
          throw new RosterError(`no worker named "${worker}"`, { exitCode: 2 });
        const ceiling_min = Number(flags.ceiling);
        const problem = ceilingProblem(ceiling_min);
        if (problem) throw new RosterError(problem, { exitCode: 2 });
        if (flags.at && !(/Z$/.test(flags.at) && Number.isFinite(Date.parse(flags.at))))
          throw new RosterError(
            `--at ${flags.at}: an RFC 3339 time in UTC, e.g. 2026-12-01T09:00:00Z`,
            {
              exitCode: 2,
            },
          );
        const entry = {
          id: newTaskId(),
          prompt: prompt.join(" "),
          ceiling_min,
          ...(flags.at ? { at: flags.at } : {}),
          state: "pending" as const,
          filed_at: new Date().toISOString(),
          filed_by: `cli:${process.env.USER ?? userInfo().username}`,
        };
        const list = await updateTasks(paths, worker, (current) => [...current.tasks, entry]);
        process.stdout.write(
          flags.json
            ? `${JSON.stringify(entry)}\n`
            : `${entry.id} pending for ${worker} (list version ${list.version})\n`,
        );
      },
    );

  task
    .command("ls [worker]")
    .description("tasks, newest first")
    .option("--json", "one JSON task per line")
    .action(async (worker: string | undefined, flags: { json?: boolean }) => {
      const { allTasks } = await import("../tasks/store.ts");
      const tasks = allTasks(rosterPaths(), worker);
      if (flags.json) {
        for (const one of tasks) process.stdout.write(`${JSON.stringify(one)}\n`);
        return;
      }
      if (!tasks.length) process.stdout.write("no tasks\n");
      for (const one of tasks) {
        const prompt = one.prompt.replace(/\s+/g, " ");
        process.stdout.write(
          `${one.id}  ${one.state.padEnd(12)} ${one.worker.padEnd(12)} ${one.filed_at.slice(0, 16).replace("T", " ")}  ${prompt.length > 70 ? `${prompt.slice(0, 69)}…` : prompt}\n`,
        );
      }
    });

  task
    .command("show <id>")
    .description("one task in full (any unique id prefix)")
    .option("--json", "the task as JSON")
    .action(async (id: string, flags: { json?: boolean }) => {
      const { findTask } = await import("../tasks/store.ts");
      const one = findTask(rosterPaths(), id);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(one, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        [
          `task      ${one.id} (${one.state})`,
          `worker    ${one.worker}`,
          `filed     ${one.filed_at} by ${one.filed_by}`,
          `ceiling   ${one.ceiling_min} min${one.at ? `, not before ${one.at}` : ""}`,
          "",
          one.prompt,
          "",
        ].join("\n"),
      );
    });
}
