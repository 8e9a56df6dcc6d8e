import {
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import type { DecisionRecord } from "../../boundary/gateway/audit/audit.ts";
import { type LogFilter, readDecisions } from "../../boundary/gateway/audit/view.ts";
import { AGENTS } from "../../ground/config/agent.ts";
import { shortDigest } from "../../ground/config/config-digest.ts";
import { columns } from "../../ground/text/table.ts";
import {
  listRuns,
  type RunLocation,
  type RunRecord,
  readRecord,
} from "../../records/run-records/run-record.ts";
import { agentEvents } from "./agent-events.ts";
import { BoxLines } from "./box-lines.ts";
import { LINE_MAX } from "./box-output.ts";
import { type PiEvent, textOf } from "./pi-events.ts";
import { SCRATCH_NOTE } from "./retention.ts";
import { describeSentinelLeak, sentinelLeakOf } from "./sentinel-mark.ts";

/** `roster runs ls` and `roster runs show`: run records made readable. */
export interface RunRow {
  id: string;
  worker: string;
  kind: string;
  state: string;
  started_at: string;
  ended_at: string | null;
  ended_by: string | null;
  exit_code: number | null;
  error: string | null;
  /** The task it ran, if any. */
  task_id?: string;
  /** The channel its input came from (a session's, or a task's filed there). */
  channel_id?: string;
}

export function runRows(stateRoot: string, worker?: string, limit = 20): RunRow[] {
  return listRuns(stateRoot, worker)
    .slice(0, limit)
    .flatMap((run) => {
      const record = readRecord(run.dir);
      return record ? [runRow(record)] : [];
    });
}

export function runRow(record: RunRecord): RunRow {
  return {
    id: record.id,
    worker: record.worker,
    kind: record.kind,
    state: record.state,
    started_at: record.started_at,
    ended_at: record.ended_at ?? null,
    ended_by: record.ended_by ?? null,
    exit_code: record.exit_code ?? null,
    error: record.error ?? null,
    ...(record.task_id ? { task_id: record.task_id } : {}),
    ...(record.channel_id ? { channel_id: record.channel_id } : {}),
  };
}

export function formatRows(rows: RunRow[]): string {
  if (rows.length === 0) return "no runs yet";
  const header = ["RUN", "WORKER", "KIND", "STATE", "ENDED BY", "STARTED (UTC)", "FOR"];
  const lines = rows.map((row) => [
    row.id,
    row.worker,
    row.kind,
    row.state,
    row.ended_by ?? "-",
    row.started_at.slice(0, 19).replace("T", " "),
    row.task_id ?? row.channel_id ?? "-",
  ]);
  return columns([header, ...lines]);
}

/**
 * How much of a run's event log `runs show` and the console read: its end.
 * The box wrote the log, up to `[box] max_output` (512 MiB by default), and
 * the console reads it in the server's process: reading it all would hold
 * that much and stall every other page meanwhile.
 */
export const CONVERSATION_TAIL_BYTES = 4 * 1024 * 1024;
/** One line of the conversation at most (a tool's arguments may be a whole file). */
const CONVERSATION_LINE_MAX = 2_000;

/**
 * The run's last events, read as the run read them (box-lines.ts), from the
 * last CONVERSATION_TAIL_BYTES of its log; `skipped` is how many bytes came
 * before them.
 */
function lastEventsOf(dir: string): { events: PiEvent[]; skipped: number } {
  const file = join(dir, "events.jsonl");
  if (!existsSync(file)) return { events: [], skipped: 0 };
  const fd = openSync(file, "r");
  let tail: Buffer;
  let skipped: number;
  try {
    const size = fstatSync(fd).size;
    skipped = Math.max(0, size - CONVERSATION_TAIL_BYTES);
    tail = Buffer.alloc(size - skipped);
    const read = readSync(fd, tail, 0, tail.length, skipped);
    tail = tail.subarray(0, read);
  } finally {
    closeSync(fd);
  }
  // a tail that starts mid-line starts at the next whole one
  if (skipped > 0) {
    const newline = tail.indexOf(0x0a);
    skipped += newline < 0 ? tail.length : newline + 1;
    tail = newline < 0 ? Buffer.alloc(0) : tail.subarray(newline + 1);
  }
  const events: PiEvent[] = [];
  // another agent's own stream, read as pi's (agent-events.ts)
  const reader = agentEvents(readRecord(dir));
  const lines = new BoxLines(LINE_MAX, (line) => {
    events.push(...reader.read(line));
  });
  lines.push(tail);
  lines.flush();
  return { events, skipped };
}

const cut = (line: string) =>
  line.length > CONVERSATION_LINE_MAX ? `${line.slice(0, CONVERSATION_LINE_MAX - 1)}…` : line;

/**
 * The conversation from the end of the event stream: user, assistant text,
 * tool calls and their results, each line cut to CONVERSATION_LINE_MAX; what
 * came before the part read is said, never read.
 */
export function conversation(dir: string): { lines: string[]; unread?: string } {
  const { events, skipped } = lastEventsOf(dir);
  const out: string[] = [];
  for (const event of events) {
    if (event.type === "message_end") {
      const message = event.message as {
        role?: string;
        content?: unknown;
        stopReason?: string;
        errorMessage?: string;
      };
      const text = textOf(message.content).trim();
      if (message.role === "user" && text) out.push(cut(`user: ${text}`));
      if (message.role === "assistant" && text) out.push(cut(`assistant: ${text}`));
      if (message.role === "assistant" && message.stopReason === "error")
        out.push(cut(`assistant: (model error: ${message.errorMessage ?? "unknown"})`));
    } else if (event.type === "tool_execution_start") {
      out.push(cut(`tool ${String(event.toolName)} ${JSON.stringify(event.args ?? {})}`));
    } else if (event.type === "tool_execution_end") {
      const result = event.result as { content?: unknown } | undefined;
      const text = textOf(result?.content).replace(/\s+/g, " ").trim();
      out.push(
        `  ${event.isError ? "error" : "result"}: ${text.length > 300 ? `${text.slice(0, 299)}…` : text}`,
      );
    }
  }
  return skipped
    ? {
        lines: out,
        unread: `(the first ${mebibytes(skipped)} of events.jsonl not shown: only its last ${mebibytes(CONVERSATION_TAIL_BYTES)} is read)`,
      }
    : { lines: out };
}

const mebibytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** A run's model calls as the gateway metered them: tokens by kind, and cost when priced. */
export interface RunUsage {
  calls: number;
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  /** Summed over the calls whose model has a price; absent when none had. */
  cost_usd?: number;
}

export function runUsage(decisions: DecisionRecord[], runId: string): RunUsage | undefined {
  const total: RunUsage = { calls: 0, input: 0, output: 0, cache_read: 0, cache_write: 0 };
  for (const decision of decisions) {
    const usage = decision.usage;
    if (decision.run_id !== runId || !usage) continue;
    total.calls++;
    total.input += usage.input;
    total.output += usage.output;
    total.cache_read += usage.cache_read;
    total.cache_write += usage.cache_write;
    if (usage.cost_usd !== undefined) total.cost_usd = (total.cost_usd ?? 0) + usage.cost_usd;
  }
  return total.calls ? total : undefined;
}

export function formatUsage(usage: RunUsage): string {
  const tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
  return `${tokens} tokens over ${usage.calls} model call(s) (input ${usage.input}, output ${usage.output}, cache read ${usage.cache_read}, cache write ${usage.cache_write})${usage.cost_usd !== undefined ? `, $${usage.cost_usd.toFixed(4)}` : ", cost unknown (no price for the model)"}`;
}

/** `roster runs show --json`: the record, its model usage, task and conversation, its files. */
export function runJson(run: RunLocation, auditDir?: string): Record<string, unknown> {
  const record = readRecord(run.dir);
  if (!record) return { id: run.id, error: "no record" };
  const usage = auditDir
    ? runUsage(readDecisions(auditDir, runFilter(record)), record.id)
    : undefined;
  const input = join(run.dir, "prompt/input.md");
  const talk = conversation(run.dir);
  const leak = auditDir ? sentinelLeakOf(auditDir, record) : record.sentinel_leak;
  return {
    ...record,
    ...(leak ? { sentinel_leak: leak } : {}),
    ...(usage ? { usage } : {}),
    path: run.dir,
    ...(existsSync(input) ? { task: readFileSync(input, "utf8").trim() } : {}),
    conversation: talk.lines,
    ...(talk.unread ? { conversation_unread: talk.unread } : {}),
    files: readdirSync(run.dir)
      .sort()
      .map((name) => {
        const stat = statSync(join(run.dir, name));
        return stat.isDirectory() ? { name, dir: true } : { name, bytes: stat.size };
      }),
  };
}

export function showRun(run: RunLocation, auditDir?: string): string {
  const record = readRecord(run.dir);
  if (!record) return `run ${run.id}: no record`;
  const decisions = auditDir ? readDecisions(auditDir, runFilter(record)) : [];
  const usage = runUsage(decisions, record.id);
  const leak = auditDir ? sentinelLeakOf(auditDir, record) : record.sentinel_leak;
  const lines = [
    `run       ${record.id}`,
    `worker    ${record.worker}${record.agent ? ` (agent ${AGENTS[record.agent].title})` : ""}`,
    `state     ${record.state}${record.ended_by ? ` (ended by ${record.ended_by})` : ""}`,
    `started   ${record.started_at}`,
    `ended     ${record.ended_at ?? "-"}`,
    `exit      ${record.exit_code ?? "-"}`,
    ...(record.error ? [`error     ${record.error}`] : []),
    ...(leak ? [`sentinel  ${describeSentinelLeak(leak)}`] : []),
    ...(usage ? [`model     ${formatUsage(usage)}`] : []),
    ...configLines(record, decisions),
    ...Object.entries(record.repos ?? {}).map(
      ([name, repo]) =>
        `repo      ${name}: ${repo.state} (base ${repo.base_commit.slice(0, 12)}${repo.produced_commit ? `, head ${repo.produced_commit.slice(0, 12)}` : ""})${repo.quarantine_ref ? ` kept at ${repo.quarantine_ref}` : ""}${repo.error ? ` — ${repo.error}` : ""}`,
    ),
    `path      ${run.dir}`,
  ];
  // its $HOME and clones gone by retention (retention.ts): say so before anyone looks for them
  const dropped = join(run.dir, SCRATCH_NOTE);
  if (existsSync(dropped)) lines.push(`scratch   ${readFileSync(dropped, "utf8").trim()}`);
  const input = join(run.dir, "prompt/input.md");
  if (existsSync(input)) lines.push("", "task:", readFileSync(input, "utf8").trim());
  const talk = conversation(run.dir);
  if (talk.lines.length || talk.unread)
    lines.push(
      "",
      "conversation:",
      ...(talk.unread ? [talk.unread] : []),
      ...talk.lines.slice(-50),
    );
  // what the run did to its store, as the snapshot pass after it found (store/passes.ts)
  const changes = join(run.dir, "store-changes.txt");
  if (existsSync(changes)) {
    const text = readFileSync(changes, "utf8").trimEnd().split("\n");
    lines.push("", "store changes:", ...text.slice(0, 40).map((line) => `  ${line}`));
    if (text.length > 40) lines.push(`  … ${text.length - 40} more lines in store-changes.txt`);
  }
  lines.push("", "files:");
  for (const name of readdirSync(run.dir).sort()) {
    const stat = statSync(join(run.dir, name));
    lines.push(`  ${name}${stat.isDirectory() ? "/" : `  ${stat.size} bytes`}`);
  }
  return lines.join("\n");
}

/**
 * The config the run started under and those its requests were judged by
 * (each audit line names one), by digest: `roster config diff` reads them back.
 */
function configLines(record: RunRecord, decisions: DecisionRecord[]): string[] {
  const judged = new Map<string, number>();
  for (const decision of decisions)
    if (decision.run_id === record.id && decision.config)
      judged.set(decision.config, (judged.get(decision.config) ?? 0) + 1);
  return [
    ...(record.config
      ? [
          `config    ${shortDigest(record.config)} (started under; roster config diff ${shortDigest(record.config)} current)`,
        ]
      : []),
    ...[...judged].map(
      ([digest, count]) =>
        `judged    by config ${shortDigest(digest)} (${count} decision(s) at the door)`,
    ),
  ];
}

/** One run's lines: none is older than the run, so files rotated out before it began are not read. */
function runFilter(record: RunRecord): LogFilter {
  const began = Date.parse(record.started_at);
  return { run: record.id, ...(Number.isFinite(began) ? { since: began } : {}) };
}
