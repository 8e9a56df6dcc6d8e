import { loadConfig } from "../../ground/config/load.ts";
import { oneLine } from "../../ground/text/message-parts.ts";
import { WAKE_MODES } from "../../records/channels/designations.ts";
import { listGates } from "../../records/gates/gate-record.ts";
import { listRuns } from "../../records/run-records/run-record.ts";
import { readTasks } from "../../records/task-list/store.ts";
import { gateRow } from "../actions/desk-view.ts";
import { commandSpec, type OptionKind, subSpec } from "../slash-catalogue/catalogue.ts";
import { configuredWorkers } from "../workers/list.ts";
import { allows, standingOf } from "./authority.ts";
import type { Asked } from "./core.ts";

/**
 * The choices a platform offers while an option is typed (Discord's
 * autocomplete): this worker's waiting proposals, its open tasks, its last
 * runs, the workers, the wake modes. Only someone who may read them gets
 * any, and never more than the platform shows (25, names of 100 characters).
 */
export interface Choice {
  name: string;
  value: string;
}

export const MAX_CHOICES = 25;
const NAME_MAX = 100;

export function completions(
  asked: Asked,
  named: { command: string; sub?: string | undefined; option: string; partial: string },
): Choice[] {
  const command = commandSpec(named.command);
  const sub = command ? subSpec(command, named.sub ?? command.bare.empty) : undefined;
  const option = sub?.options.find((one) => one.name === named.option);
  if (!sub || !option) return [];
  const chat = loadConfig(asked.paths.config).org.chat;
  if (!allows(standingOf(asked.asker, chat).standing, "look")) return [];
  const partial = named.partial.toLowerCase();
  return candidates(asked, option.kind)
    .filter(
      (one) =>
        one.value.toLowerCase().startsWith(partial) || one.name.toLowerCase().includes(partial),
    )
    .slice(0, MAX_CHOICES)
    .map((one) => ({ name: oneLine(one.name, NAME_MAX), value: one.value.slice(0, NAME_MAX) }));
}

function candidates({ paths, worker }: Asked, kind: OptionKind): Choice[] {
  switch (kind) {
    case "gate":
      return listGates(paths, worker)
        .filter((gate) => gate.state === "pending" || gate.state === "failed")
        .map((gate) => ({ name: gateRow(gate), value: gate.id }));
    case "task": {
      const list = readTasks(paths, worker);
      return [
        ...list.tasks
          .filter((task) => task.state !== "cancelled")
          .reverse()
          .map((task) => ({ name: `${task.id} ${task.state} ${task.prompt}`, value: task.id })),
        ...(list.recurring ?? []).map((one) => ({
          name: `${one.id} ${one.prompt}`,
          value: one.id,
        })),
      ];
    }
    case "run":
      return listRuns(paths.state, worker).map((run) => ({ name: run.id, value: run.id }));
    case "worker":
      return [...new Set([...configuredWorkers(paths), ...loadConfig(paths.config).workers.keys()])]
        .sort()
        .map((name) => ({ name, value: name }));
    case "mode":
      return WAKE_MODES.map((mode) => ({ name: mode, value: mode }));
    default:
      return [];
  }
}
