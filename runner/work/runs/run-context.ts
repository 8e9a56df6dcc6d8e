import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import { isChannelId } from "../../records/channels/ids.ts";
import { homeOf, surfacesOf } from "../../records/channels/links.ts";
import { readMessages } from "../../records/channels/store.ts";
import { type RunRecord, readRecord, runDir } from "../../records/run-records/run-record.ts";
import { readTasks } from "../../records/task-list/store.ts";
import { type Participant, RunContext } from "../repos/provenance.ts";

/**
 * A run's provenance, `run-context.json` in its record folder: the channels
 * its input came from and the people who spoke there. A session serves its
 * channel; a task filed from a chat carries that channel (and the channels the
 * filing run itself carried); a one-shot run from the command line carries
 * none. The clean-room rule (repos/clean-room.ts) reads it: a run with any
 * channel carried conversation content. Written by the host in a folder no
 * box can write; the people are read again from the channels' records when a
 * push is judged, so someone who spoke after the run began counts too. Its
 * shape is repos/provenance.ts, beside the rule that judges it.
 */
export const RUN_CONTEXT = "run-context.json";

/** The people who spoke in these channels (people only: workers and bots are not participants). */
export function participants(paths: RosterPaths, channels: readonly string[]): Participant[] {
  const seen = new Map<string, Participant>();
  // a linked surface's messages are kept in its channel's history: read there too
  for (const channel of new Set([...channels, ...channels.map((one) => homeRead(paths, one))])) {
    for (const message of readMessages(paths, channel)) {
      if (message.role !== "user") continue;
      const handle = message.author_id.replace(/^[a-z]+:/, "");
      const key = `${message.author}\u0000${handle}`;
      if (!seen.has(key)) seen.set(key, { name: message.author, handle });
    }
  }
  return [...seen.values()];
}

/** A linked channel's members, or the channel; links that can't be read: the channel (in no class then). */
function originsOf(paths: RosterPaths, channel: string): string[] {
  try {
    return surfacesOf(paths, channel);
  } catch {
    return [channel];
  }
}

function homeRead(paths: RosterPaths, channel: string): string {
  try {
    return homeOf(paths, channel);
  } catch {
    return channel;
  }
}

/** The channels a run's input came from, from what the host knows of it. */
export function channelsOf(
  paths: RosterPaths,
  record: Pick<RunRecord, "worker" | "kind" | "channel_id" | "task_id">,
): string[] {
  // a linked channel's session serves its member surfaces: they are where its input comes from
  if (record.kind === "session")
    return record.channel_id ? originsOf(paths, record.channel_id) : [];
  if (record.kind !== "task" || !record.task_id) return [];
  const task = readTasks(paths, record.worker).tasks.find((one) => one.id === record.task_id);
  // a task missing from its list is unknown ground: counted as conversation (fail closed)
  if (!task) return [`task:${record.task_id}`];
  return [...new Set([...(task.channel ? [task.channel] : []), ...(task.context_channels ?? [])])];
}

/** Writes the run's provenance as it is now into its record folder. */
export async function writeRunContext(
  paths: RosterPaths,
  dir: string,
  record: Pick<RunRecord, "id" | "worker" | "kind" | "channel_id" | "task_id">,
): Promise<RunContext> {
  const channels = channelsOf(paths, record);
  const context: RunContext = {
    run: record.id,
    kind: record.kind,
    channels,
    people: participants(paths, channels.filter(isChannel)),
  };
  await replaceFile(join(dir, RUN_CONTEXT), `${JSON.stringify(context, null, 2)}\n`, {
    mode: 0o644,
  });
  return context;
}

/** "task:<id>" and "run:<id>" stand for provenance that could not be known: no history to read. */
const isChannel = (id: string) => isChannelId(id);

/**
 * A run's provenance for judging: its run-context.json with the people read
 * again from its channels; a run without one (older than this file) is
 * judged from its record. No record at all is unknown ground, read as a run
 * that carried conversation.
 */
export function readRunContext(paths: RosterPaths, worker: string, runId: string): RunContext {
  const dir = runDir(paths.state, worker, runId);
  let channels: string[] | undefined;
  let kind = "unknown";
  try {
    const parsed: unknown = JSON.parse(readFileSync(join(dir, RUN_CONTEXT), "utf8"));
    if (Value.Check(RunContext, parsed)) ({ channels, kind } = parsed);
  } catch {
    // missing or unreadable: from the record below
  }
  if (!channels) {
    const record = readRecord(dir);
    kind = record?.kind ?? kind;
    channels = record ? channelsOf(paths, record) : [`run:${runId}`];
  }
  return { run: runId, kind, channels, people: participants(paths, channels.filter(isChannel)) };
}
