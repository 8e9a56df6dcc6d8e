import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BOX_HOME, RUN_PI } from "../../boundary/box/layout.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { outcomesSince } from "../../records/journal/journal.ts";
import { listRuns, readRecord } from "../../records/run-records/run-record.ts";
import { readMemory } from "../memory/read.ts";
import { type CompiledPrompt, compilePrompt, type TaskOrigin } from "../prompt/compile.ts";
import { readPurpose } from "../prompt/purpose.ts";

/**
 * What the run owner (run.ts) hands pi: the prompt compiled for this run and
 * kept in its record's folder, and the command line that carries it in the
 * mode the caller drives pi in.
 */
/**
 * How pi is driven: `json`, one task whose events stream out (a one-shot run
 * or a task); `rpc`, turn by turn over stdin (a session). The prompt is the
 * owner's to compile and hand over.
 */
export interface EngineDrive {
  mode: "json" | "rpc";
  /** The task's words; a session's come turn by turn instead (""). */
  task: string;
  taskId?: string;
  session?: { channel: string; provider: string; replyBy: string; trusted: boolean };
  /** A task filed from a chat session: its channel's purpose is in the prompt too. */
  origin?: TaskOrigin;
}

/**
 * pi's command line: the system prompt appended, and in json mode the task as
 * its input. Its session is named by the worker's prompt-cache key, which pi
 * sends as the provider's cache key (prompt_cache_key where the API takes
 * one): the session folder is the box's own, so nothing earlier is resumed.
 */
export function piCommand(mode: EngineDrive["mode"], prompt: CompiledPrompt): string[] {
  const session = ["--session-dir", `${BOX_HOME}/session`, "--session-id", prompt.cacheKey];
  const base = [RUN_PI, "--mode", mode, ...session];
  const system = ["--append-system-prompt", prompt.system];
  return mode === "json" ? [...base, ...system, prompt.input] : [...base, ...system];
}

/** Compiles the prompt (a failure refuses the run) and keeps what the engine was told. */
export async function writePrompt(
  dir: string,
  engine: EngineDrive,
  facts: {
    worker: WorkerView;
    identity: string;
    id: string;
    ceiling_min: number;
    paths: RosterPaths;
  },
): Promise<CompiledPrompt> {
  // the run before this one (its record is the newest but this run's own): its start bounds "since your last run"
  const previous = listRuns(facts.paths.state, facts.worker.name).find(
    (run) => run.id !== facts.id,
  );
  const since = previous ? readRecord(previous.dir)?.started_at : undefined;
  // read as the prompt is compiled: what the run is told is what a session later compares with
  const channel = engine.session?.channel ?? engine.origin?.channel;
  const purpose = channel ? readPurpose(facts.paths, channel) : undefined;
  // a session's notes head its first turn (session.ts), read when it opens
  const memory = engine.session ? undefined : await readMemory(facts.paths, facts.worker.name);
  let prompt: CompiledPrompt;
  try {
    prompt = compilePrompt({
      worker: facts.worker,
      identity: facts.identity,
      task: engine.task,
      runId: facts.id,
      ceiling_min: facts.ceiling_min,
      ...(engine.taskId ? { taskId: engine.taskId } : {}),
      ...(engine.session ? { session: engine.session } : {}),
      ...(engine.origin ? { origin: engine.origin } : {}),
      ...(purpose ? { purpose } : {}),
      ...(memory ? { memory } : {}),
      outcomes: outcomesSince(facts.paths, facts.worker.name, since),
    });
  } catch (error) {
    throw new RosterError(`the prompt can't be compiled: ${errorMessage(error)}`, { exitCode: 2 });
  }
  await mkdir(join(dir, "prompt"), { recursive: true });
  await writeFile(join(dir, "prompt/system.md"), prompt.system);
  await writeFile(join(dir, "prompt/cache-key"), `${prompt.cacheKey}\n`);
  if (!engine.session) await writeFile(join(dir, "prompt/input.md"), prompt.input);
  return prompt;
}
