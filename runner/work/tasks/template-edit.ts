import { ceilingProblem } from "../../ground/config/ceiling.ts";
import { RosterError } from "../../ground/errors.ts";
import type { Template } from "../../records/task-list/store.ts";
import { type Cadence, cronProblem, intervalMs, nextFire, WINDOW_PATTERN } from "./schedule.ts";
import { HEARTBEAT_ID, newTemplate, type TemplateFiling } from "./templates.ts";

/**
 * A worker's recurring templates as it files them (set_tasks' `recurring`),
 * or the operator adds one: checked one field at a time with the field named,
 * then applied as a whole — entries with an id change that template (a new
 * cadence moves its next fire, an unchanged one keeps it), entries without
 * one are new (filed from where `filed` says), and the worker's templates it
 * leaves out are retired; a changed one keeps where it was filed from. The
 * host's templates (the heartbeat) are kept as they are and can't be named.
 */
export interface TemplateEntry {
  id?: string;
  prompt: string;
  cron?: string;
  every?: string;
  window?: string;
  ceiling_min?: number;
}

/** Why an entry can't be filed, as "<field>: reason", or undefined. */
export function templateProblem(entry: TemplateEntry, field: string): string | undefined {
  if (entry.id === HEARTBEAT_ID)
    return `${field}.id: ${HEARTBEAT_ID} is the host's heartbeat; its cadence is set in worker.toml (heartbeat = "30m" or "off"), not here`;
  if ((entry.cron === undefined) === (entry.every === undefined))
    return `${field}: give exactly one of cron ("0 9 * * 1-5") and every ("30m", "6h", "1d")`;
  if (entry.cron !== undefined) {
    const problem = cronProblem(entry.cron);
    if (problem) return `${field}.cron: ${problem}`;
  }
  if (entry.every !== undefined && intervalMs(entry.every) === undefined)
    return `${field}.every: "${entry.every}" is not an interval like "30m", "6h" or "1d"`;
  if (entry.window !== undefined && !new RegExp(WINDOW_PATTERN).test(entry.window))
    return `${field}.window: "${entry.window}" is not a window like "09:00-17:00" (24-hour, host-local)`;
  if (entry.ceiling_min !== undefined) {
    const problem = ceilingProblem(entry.ceiling_min);
    if (problem) return `${field}.ceiling_min: ${problem}`;
  }
  return undefined;
}

export const cadenceOfEntry = (entry: Pick<TemplateEntry, "cron" | "every">): Cadence =>
  entry.cron !== undefined ? { cron: entry.cron } : { every: entry.every ?? "" };

export function applyTemplates(
  current: Template[],
  entries: TemplateEntry[],
  filed: TemplateFiling,
): Template[] {
  entries.forEach((entry, index) => {
    const problem = templateProblem(entry, `recurring.${index}`);
    if (problem) throw new RosterError(`${problem}; nothing was changed`);
  });
  const byId = new Map(current.map((template) => [template.id, template]));
  const system = current.filter((template) => template.system);
  const edited = entries.map((entry): Template => {
    const existing = entry.id ? byId.get(entry.id) : undefined;
    if (entry.id && !existing)
      throw new RosterError(`no recurring template ${entry.id} on the list; nothing was changed`);
    const cadence = cadenceOfEntry(entry);
    if (!existing) return newTemplate({ ...entry, prompt: entry.prompt, cadence }, filed);
    const sameCadence = existing.cron === entry.cron && existing.every === entry.every;
    const { cron: _cron, every: _every, window: _window, ...rest } = existing;
    return {
      ...rest,
      prompt: entry.prompt,
      ...(cadence.cron !== undefined ? { cron: cadence.cron } : { every: cadence.every }),
      ...(entry.window ? { window: entry.window } : {}),
      ceiling_min: entry.ceiling_min ?? existing.ceiling_min,
      next_at: sameCadence
        ? existing.next_at
        : nextFire(cadence, filed.now, filed.zone).toISOString(),
    };
  });
  return [...system, ...edited];
}
