/**
 * A person's filing (`roster task add`, `/task add` from chat): turns the
 * flags into a task or a recurring template, checked field by field before
 * anything is written.
 */
import { ceilingProblem } from "../../ground/config/ceiling.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { scheduleZone } from "../../ground/config/time-zone.ts";
import { RosterError } from "../../ground/errors.ts";
import {
  newTaskId,
  type Standing,
  type Task,
  updateList,
  updateTasks,
} from "../../records/task-list/store.ts";
import { dependencyProblem } from "./readiness.ts";
import { applyTemplates } from "./template-edit.ts";

/** The filing's flags, named as `roster task add` takes them. */
export interface AddFlags {
  ceiling?: string;
  at?: string;
  cron?: string;
  every?: string;
  window?: string;
  after?: string;
  /** The worker's own standing instead of the operator's: it waits at the budget's soft stop. */
  proactive?: boolean;
  json?: boolean;
}

/**
 * `roster task add`: a task, or with --cron/--every a recurring template,
 * checked field by field (the flag named in the error) before anything is
 * written. The operator's filings have owner standing unless --proactive
 * files them as the worker's own (they wait while a budget limit stands at
 * or above its soft stop, and owner tasks go first).
 */
const usage = { exitCode: 2 } as const;

const standingOf = (flags: Pick<AddFlags, "proactive">): Standing =>
  flags.proactive ? "proactive" : "owner";

export async function fileOperatorTask(
  paths: RosterPaths,
  worker: string,
  prompt: string,
  flags: AddFlags,
  by: string,
): Promise<string> {
  const config = loadConfig(paths.config);
  if (!config.workers.has(worker)) throw new RosterError(`no worker named "${worker}"`, usage);
  const ceiling = flags.ceiling === undefined ? undefined : Number(flags.ceiling);
  if (ceiling !== undefined) {
    const problem = ceilingProblem(ceiling);
    if (problem) throw new RosterError(`--ceiling: ${problem}`, usage);
  }
  if (flags.cron !== undefined || flags.every !== undefined || flags.window !== undefined)
    return addTemplate(paths, worker, prompt, { ...flags, ceiling }, by, scheduleZone(config.org));
  if (flags.at && !(/Z$/.test(flags.at) && Number.isFinite(Date.parse(flags.at))))
    throw new RosterError(
      `--at ${flags.at}: an RFC 3339 time in UTC, e.g. 2026-12-01T09:00:00Z`,
      usage,
    );
  const after = flags.after
    ?.split(",")
    .map((id) => id.trim())
    .filter(Boolean);
  const entry: Task = {
    id: newTaskId(),
    prompt,
    ceiling_min: ceiling ?? 30,
    ...(flags.at ? { at: flags.at } : {}),
    ...(after?.length ? { depends_on: after } : {}),
    state: "pending",
    filed_at: new Date().toISOString(),
    filed_by: by,
    standing: standingOf(flags),
  };
  const list = await updateTasks(paths, worker, (current) => {
    const problem = dependencyProblem([entry], new Set(current.tasks.map((one) => one.id)));
    if (problem) throw new RosterError(`--after: ${problem}`, usage);
    return [...current.tasks, entry];
  });
  return flags.json
    ? `${JSON.stringify(entry)}\n`
    : `${entry.id} pending for ${worker}${flags.proactive ? " (proactive: waits at the budget's soft stop)" : ""} (list version ${list.version})\n`;
}

async function addTemplate(
  paths: RosterPaths,
  worker: string,
  prompt: string,
  flags: Omit<AddFlags, "ceiling"> & { ceiling: number | undefined },
  by: string,
  zone: string,
): Promise<string> {
  if (flags.at || flags.after)
    throw new RosterError("--at and --after are for one task, not with --cron or --every", usage);
  if (flags.cron === undefined && flags.every === undefined)
    throw new RosterError("--window needs --cron or --every", usage);
  const now = new Date();
  let added: ReturnType<typeof applyTemplates>[number] | undefined;
  const list = await updateList(paths, worker, (current) => {
    const mine = (current.recurring ?? []).filter((one) => !one.system);
    const recurring = applyTemplates(
      current.recurring ?? [],
      [
        ...mine.map((one) => ({ ...one })),
        {
          prompt,
          ...(flags.cron !== undefined ? { cron: flags.cron } : {}),
          ...(flags.every !== undefined ? { every: flags.every } : {}),
          ...(flags.window ? { window: flags.window } : {}),
          ...(flags.ceiling !== undefined ? { ceiling_min: flags.ceiling } : {}),
        },
      ],
      { by, standing: standingOf(flags), now, zone },
    );
    added = recurring.at(-1);
    return { tasks: current.tasks, recurring };
  }).catch((error: unknown) => {
    // the field names of set_tasks, said as the flags that carry them
    if (error instanceof RosterError)
      throw new RosterError(
        error.message.replace(/^recurring\.\d+\.?(\w*)/, (_all, field: string) =>
          field ? `--${field === "ceiling_min" ? "ceiling" : field}` : "--cron/--every",
        ),
        usage,
      );
    throw error;
  });
  if (!added) throw new RosterError("the template was not added", usage);
  return flags.json
    ? `${JSON.stringify(added)}\n`
    : `${added.id} for ${worker}: ${flags.cron ? `cron "${flags.cron}"` : `every ${flags.every}`}${flags.window ? ` within ${flags.window}` : ""}, next ${added.next_at} (list version ${list.version})\n`;
}
