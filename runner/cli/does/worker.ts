/**
 * What `roster worker add | ls | show | rm | pause | resume` do: make, list,
 * describe, archive, pause and resume workers. The CLI only declares these commands; this module is loaded when
 * one runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { workerNameProblem } from "../../ground/config/worker-name.ts";
import { confirmedUnless } from "../../ground/confirm.ts";
import { RosterError } from "../../ground/errors.ts";
import { operatorName } from "../../ground/operator.ts";

/** A bad worker name refused before anything is read, by the loader's rule. */
export function checkName(name: string): void {
  const problem = workerNameProblem(name);
  if (problem) throw new RosterError(problem, { exitCode: 2 });
}

/** `roster worker add`: its files, store and knowledge repo, after the config is validated. */
export async function addWorkerCommand(name: string, flags: { json?: boolean }): Promise<void> {
  checkName(name);
  const { addWorker } = await import("../../services/workers/add.ts");
  const added = await addWorker(rosterPaths(), name);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(added)}
`
      : `added worker ${name}:\n${added.created.map((path) => `  ${path}`).join("\n")}\nsay what it is for in its identity.md; roster run ${name} "…" runs it\n`,
  );
}

/** `roster worker ls`: every worker, as a table or one JSON object a line. */
export async function listWorkersCommand(flags: { json?: boolean }): Promise<void> {
  const { formatWorkerRows, workerRows } = await import("../../services/workers/list.ts");
  const rows = workerRows(rosterPaths());
  if (flags.json) {
    for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
    return;
  }
  process.stdout.write(`${formatWorkerRows(rows)}\n`);
}

/** `roster worker show`: one worker as the gateway sees it, refused on an invalid config. */
export async function showWorkerCommand(name: string, flags: { json?: boolean }): Promise<void> {
  checkName(name);
  const { loadValidConfig } = await import("../../ground/config/valid-config.ts");
  const paths = rosterPaths();
  const config = loadValidConfig(paths);
  const { formatWorkerDetail, workerDetail } = await import("../../services/workers/show.ts");
  const detail = workerDetail(paths, config, name);
  if (!detail)
    throw new RosterError(`no worker named "${name}"`, {
      exitCode: 2,
      hint: "roster worker ls lists them",
    });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(detail)}\n`);
    return;
  }
  const { formatTrust } = await import("../../services/actions/trust-view.ts");
  process.stdout.write(formatWorkerDetail(detail, formatTrust(name, detail.trust)));
}

/** `roster worker rm`: its config, data and records move to the archive; asks unless --yes. */
export async function removeWorkerCommand(
  name: string,
  flags: { yes?: boolean; json?: boolean },
): Promise<void> {
  checkName(name);
  const paths = rosterPaths();
  const { archiveDir, archiveWorker } = await import("../../services/workers/archive.ts");
  const question = `remove worker ${name}? its config and data move to ${archiveDir(paths, name)}`;
  if (!(await confirmedUnless(flags.yes, question))) return;
  const archived = await archiveWorker(paths, name);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(archived)}\n`
      : `removed worker ${name}; nothing was deleted:\n${archived.moved.map(([from, to]) => `  ${from} -> ${to}`).join("\n")}\n`,
  );
}

/** A worker the config declares, or a usage error naming it. */
async function declared(name: string): Promise<void> {
  checkName(name);
  const { loadConfig } = await import("../../ground/config/load.ts");
  if (!loadConfig(rosterPaths().config).workers.has(name))
    throw new RosterError(`no worker named "${name}"`, { exitCode: 2 });
}

/** `roster worker pause`: no box of it starts until resumed; said who paused it and why. */
export async function pauseWorkerCommand(name: string, reason: string): Promise<void> {
  await declared(name);
  const { pauseSaid, pauseWorker } = await import("../../records/workers/pause.ts");
  const pause = pauseWorker(rosterPaths(), name, operatorName(), reason || undefined);
  process.stdout.write(`${pauseSaid(name, pause)}\n`);
}

/** `roster worker resume`: a paused worker may run again. */
export async function resumeWorkerCommand(name: string): Promise<void> {
  await declared(name);
  const { resumeWorker } = await import("../../records/workers/pause.ts");
  process.stdout.write(
    resumeWorker(rosterPaths(), name) ? `${name} may run again\n` : `${name} was not paused\n`,
  );
}

/**
 * `roster worker knowledge`: the path of the worker's bare knowledge repo, and
 * nothing else on stdout, so `git -C "$(roster worker knowledge elf)" log`
 * works; with --json its head commit too.
 */
export async function knowledgeCommand(name: string, flags: { json?: boolean }): Promise<void> {
  await declared(name);
  const { existsSync } = await import("node:fs");
  const { knowledgePath } = await import("../../ground/config/knowledge.ts");
  const path = knowledgePath(rosterPaths().data, name);
  if (!existsSync(path))
    throw new RosterError(`${name} has no knowledge repo yet (${path})`, {
      exitCode: 1,
      hint: "its first run, or roster worker add, makes it",
    });
  if (!flags.json) {
    process.stdout.write(`${path}\n`);
    return;
  }
  const { execFileSync } = await import("node:child_process");
  let head: string | null = null;
  try {
    head = execFileSync("git", ["-C", path, "rev-parse", "--verify", "-q", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    // an empty repo: nothing landed yet
  }
  process.stdout.write(`${JSON.stringify({ worker: name, path, head })}\n`);
}
