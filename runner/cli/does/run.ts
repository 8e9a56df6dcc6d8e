/**
 * What `roster run` and `roster runs ls | show` do: one run of a worker (handed
 * to a running server when there is one), and the run records. The CLI only
 * declares these commands; this module is loaded when one runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";

export interface RunFlags {
  ceiling: string;
  json?: boolean;
  local?: boolean;
}

/** `roster run`: the prompt is checked as the run owner would check it, before anything starts. */
export async function runCommand(worker: string, words: string[], flags: RunFlags): Promise<void> {
  const ceiling_min = Number(flags.ceiling);
  if (Number.isNaN(ceiling_min))
    throw new RosterError(
      `--ceiling must be a positive number of minutes (got "${flags.ceiling}")`,
      { exitCode: 2 },
    );
  // refused here as the run owner would refuse it, before anything starts
  const { ceilingProblem } = await import("../../ground/config/ceiling.ts");
  const problem = ceilingProblem(ceiling_min);
  if (problem) throw new RosterError(problem, { exitCode: 2 });
  const prompt = words.join(" ").trim();
  if (!prompt) throw new RosterError("the prompt is empty", { exitCode: 2 });
  const paths = rosterPaths();
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    if (!flags.local) {
      // a running server takes the run: its gateway, engine connection and modules are warm
      const { runThroughServer } = await import("../../services/server/run-client.ts");
      const handed = await runThroughServer(
        paths,
        { worker, prompt, ceiling_min, json: flags.json ?? false },
        {
          write: (text) => process.stdout.write(text),
          note: (text) => process.stderr.write(`${text}\n`),
          signal: abort.signal,
        },
      );
      if (handed) {
        const r = handed.run;
        if (!flags.json && r)
          process.stderr.write(
            `run ${r.id}: ${r.state} (${r.ended_by}${r.exit_code !== undefined ? `, exit ${r.exit_code}` : ""}; run by the server)\n`,
          );
        process.exitCode = handed.exitCode;
        return;
      }
    }
    // started here: the chat platforms' terms first (cli/main.ts says why not before), then
    // the roots a first run makes
    await import("../../services/chat/platforms.ts");
    const { initRoots } = await import("./init.ts");
    const created = await initRoots(paths);
    if (created.some((path) => path.endsWith("org.toml")))
      process.stderr.write(`roster: initialised ${paths.config} from org.example.toml\n`);
    const { runOneShot } = await import("../../work/runs/oneshot.ts");
    const result = await runOneShot({
      paths,
      worker,
      prompt,
      ceiling_min,
      json: flags.json ?? false,
      signal: abort.signal,
      write: (text) => process.stdout.write(text),
      note: (text) => process.stderr.write(`${text}\n`),
    });
    if (!flags.json && result.record) {
      const r = result.record;
      process.stderr.write(
        `run ${r.id}: ${r.state} (${r.ended_by}${r.exit_code !== undefined ? `, exit ${r.exit_code}` : ""})\n`,
      );
    }
    process.exitCode = result.exitCode;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** `roster runs ls`: recent runs, newest first, after recording any the engine shows ended. */
export async function listRunsCommand(flags: {
  worker?: string;
  limit: string;
  json?: boolean;
}): Promise<void> {
  const paths = rosterPaths();
  try {
    const { connectEngine } = await import("../../boundary/box/connect.ts");
    const { configuredEngine } = await import("../../ground/config/configured-engine.ts");
    const { reapAndRecord } = await import("../../work/runs/start-1-provision.ts");
    const engine = await connectEngine(await configuredEngine());
    await reapAndRecord(engine, paths, (text) => process.stderr.write(`${text}\n`));
  } catch {
    // without an engine the records are still worth showing
  }
  const { formatRows, runRows } = await import("../../work/runs/runs-view.ts");
  const rows = runRows(paths.state, flags.worker, Number(flags.limit) || 20);
  process.stdout.write(flags.json ? `${JSON.stringify(rows)}\n` : `${formatRows(rows)}\n`);
}

/** `roster runs show`: one run, found by any unique prefix of its id. */
export async function showRunCommand(prefix: string, flags: { json?: boolean }): Promise<void> {
  const { findRun } = await import("../../records/run-records/run-record.ts");
  const { runJson, showRun } = await import("../../work/runs/runs-view.ts");
  const paths = rosterPaths();
  const found = findRun(paths.state, prefix);
  if ("error" in found) throw new RosterError(found.error, { exitCode: 2 });
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(runJson(found, paths.audit))}\n`
      : `${showRun(found, paths.audit)}\n`,
  );
}

/** `roster runs context`: the run's prompt, block by block, against the worker's previous run. */
export async function runContextCommand(
  prefix: string,
  flags: { all?: boolean; json?: boolean },
): Promise<void> {
  const { findRun } = await import("../../records/run-records/run-record.ts");
  const { formatContext, promptContext } = await import("../../work/runs/prompt-context.ts");
  const paths = rosterPaths();
  const found = findRun(paths.state, prefix);
  if ("error" in found) throw new RosterError(found.error, { exitCode: 2 });
  const context = promptContext(paths.state, found);
  if (!context)
    throw new RosterError(
      `run ${found.id} kept no prompt (a command in a box, or a run that never started)`,
      {
        exitCode: 2,
      },
    );
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(
          flags.all
            ? context
            : {
                ...context,
                blocks: context.blocks.map(({ content: _content, ...block }) => block),
                turns: context.turns.map(({ input: _input, ...turn }) => turn),
              },
        )}\n`
      : `${formatContext(context, flags.all === true)}\n`,
  );
}
