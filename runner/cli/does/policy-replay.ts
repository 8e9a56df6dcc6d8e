/**
 * What `roster policy replay` does: the audit log's requests judged again by
 * the door's own ruling (boundary/gateway/policy/replay.ts) under the
 * deployment's config or a draft's, and what would flip printed by worker
 * and rule, or as one JSON object. Exit 0 when nothing would flip, 1 when
 * something would (a script can gate a config change on it), 2 on bad input
 * or a broken config. Loaded only when the command runs.
 */
import { join, resolve } from "node:path";
import type { ReplayGroup, ReplayReport } from "../../boundary/gateway/policy/replay.ts";
import type { Decided } from "../../boundary/gateway/policy/replay-record.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";

export interface PolicyReplayFlags {
  since?: string;
  worker?: string;
  config?: string;
  json?: boolean;
}

export async function policyReplayCommand(flags: PolicyReplayFlags): Promise<void> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  const { formatConfigError } = await import("../../ground/config/config-error.ts");
  const { replayLog } = await import("../../boundary/gateway/policy/replay.ts");
  const paths = rosterPaths();
  const root = flags.config ? resolve(flags.config) : paths.config;
  const since = flags.since === undefined ? undefined : sinceOf(flags.since, Date.now());
  const config = loadConfig(root, { vaultDir: paths.vault });
  const broken = config.errors[0];
  if (broken)
    throw refuse(
      `${root}: the config is broken, so nothing can be judged: ${formatConfigError(broken)}`,
    );
  const log = join(paths.audit, "decisions.jsonl");
  const report = replayLog(log, config, {
    ...(since !== undefined ? { since } : {}),
    ...(flags.worker ? { worker: flags.worker } : {}),
  });
  const context = {
    log,
    config: root,
    since: since === undefined ? null : new Date(since).toISOString(),
    worker: flags.worker ?? null,
  };
  process.stdout.write(
    flags.json ? `${JSON.stringify({ ...context, ...report })}\n` : said(report, context),
  );
  if (report.flipped > 0) process.exitCode = 1;
}

const refuse = (message: string) => new RosterError(message, { exitCode: 2 });

const UNIT_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `--since`: a span back from now (30m, 12h, 7d, 2w) or a date (2025-03-01, an ISO time). */
export function sinceOf(text: string, now: number): number {
  const span = /^([0-9]{1,6})([smhdw])$/.exec(text.trim());
  if (span?.[1] && span[2]) return now - Number(span[1]) * (UNIT_MS[span[2]] ?? 0);
  const at = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isFinite(at)) return at;
  throw refuse(`--since ${text}: expected a span (30m, 12h, 7d, 2w) or a date (2025-03-01)`);
}

const decidedSaid = (decided: Decided): string =>
  decided.verdict === "intercept"
    ? "intercepted (judged request by request)"
    : `${decided.verdict} ${decided.rule === null ? "(no rule)" : `"${decided.rule}"`}`;

function said(
  report: ReplayReport,
  context: { log: string; config: string; since: string | null; worker: string | null },
): string {
  const within = [
    ...(context.since ? [`since ${context.since}`] : []),
    ...(context.worker ? [`worker ${context.worker}`] : []),
  ];
  if (!report.lines) return `no decisions in ${context.log}: nothing to replay\n`;
  const lines = [
    `replayed ${report.replayed} of ${report.decisions} decisions${within.length ? ` (${within.join(", ")})` : ""} from ${context.log} under ${context.config}`,
  ];
  lines.push(report.flipped ? `${report.flipped} would flip:` : "none would flip");
  let worker: string | undefined;
  for (const group of report.flips) {
    if (group.worker !== worker) {
      worker = group.worker;
      lines.push(`  ${worker || "(no worker)"}`);
    }
    lines.push(...groupSaid(group));
  }
  if (report.reruled)
    lines.push(
      `${report.reruled} keep their verdict under another rule:`,
      ...report.reruledGroups.flatMap((group) => groupSaid(group, group.worker || "(no worker)")),
    );
  const notReplayed = report.notReplayed.reduce((sum, reason) => sum + reason.count, 0);
  if (notReplayed) {
    lines.push(`${notReplayed} not replayed:`);
    for (const reason of report.notReplayed) {
      lines.push(`    ${reason.count}  ${reason.reason}`);
      for (const example of reason.examples) lines.push(`      ${exampleSaid(example)}`);
    }
  }
  const { tooLong, unreadable } = report.skipped;
  if (tooLong || unreadable)
    lines.push(
      `skipped: ${[
        ...(tooLong ? [`${tooLong} lines too long to be a decision`] : []),
        ...(unreadable ? [`${unreadable} lines not a decision's JSON`] : []),
      ].join(", ")}`,
    );
  if (report.groupsLeftOut)
    lines.push(`${report.groupsLeftOut} decisions are in groups past the most listed`);
  return `${lines.join("\n")}\n`;
}

function groupSaid(group: ReplayGroup, who?: string): string[] {
  return [
    `    ${who ? `${who}: ` : ""}${decidedSaid(group.from)} → ${decidedSaid(group.to)}  ${group.count}`,
    ...group.examples.map((example) => `      ${exampleSaid(example)}`),
  ];
}

const exampleSaid = (example: ReplayGroup["examples"][number]) =>
  `${example.request}  ${example.ts}${example.run_id ? `  run ${example.run_id}` : ""}`;
