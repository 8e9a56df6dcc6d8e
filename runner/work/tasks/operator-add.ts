/**
 * A person's filing (`roster task add`, `/task add` from chat): turns the
 * flags into a task or a recurring template, checked field by field before
 * anything is written.
 */
import { ceilingProblem } from "../../ground/config/ceiling.ts";
import { connectionMount, grantedTo } from "../../ground/config/connections.ts";
import { type LoadedConfig, loadConfig } from "../../ground/config/load.ts";
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
  /** Code work in this gated host-repo connection (the public roster's spelling), landing on `base`. */
  repo?: string;
  base?: string;
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
  if (flags.base !== undefined && flags.repo === undefined)
    throw new RosterError("--base names the branch of a --repo; give --repo too", usage);
  if (flags.repo !== undefined) prompt = codePrompt(config, worker, prompt, flags.repo, flags.base);
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

/**
 * `--repo P [--base R]`: code work in a gated host-repo connection granted to
 * the worker. Its box has a clone at ~/mnt/P on a branch of its own, and a
 * change lands on the connection's branch through repo_push; a `--base` other
 * than that branch is refused, since nothing would land there.
 */
function codePrompt(
  config: LoadedConfig,
  worker: string,
  prompt: string,
  repo: string,
  base: string | undefined,
): string {
  const connection = config.connections.get(repo);
  const mount = connection ? connectionMount(repo, connection) : undefined;
  if (!connection || mount?.kind !== "host-repo" || !grantedTo(connection, worker))
    throw new RosterError(
      `--repo ${repo}: no host-repo connection "${repo}" granted to ${worker} (roster connection ls; add one with --from host-repo)`,
      usage,
    );
  if (!mount.gated)
    throw new RosterError(
      `--repo ${repo}: "${repo}" is read-only (write = "ro" in connections/${repo}.toml); code work lands through write = "gated"`,
      usage,
    );
  const branch = mount.gated.branch;
  if (base !== undefined && base !== branch)
    throw new RosterError(
      `--base ${base}: "${repo}" lands changes on ${branch} (branch in connections/${repo}.toml), not ${base}`,
      usage,
    );
  return `${prompt}\n\n(Code work in the repo "${repo}": your clone of it is at ~/mnt/${repo}, on a branch of its own from ${branch}. Commit there and land the change on ${branch} with repo_push.)`;
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
