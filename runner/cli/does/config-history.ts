/**
 * What `roster config history | diff | rollback` do: list the configs kept
 * by digest (records/config-history/), show what changed between two of
 * them, and write an old one back through the one vetted edit
 * (policy/config-edit.ts). The CLI only declares these commands; this
 * module is loaded when one runs.
 */
import { createTwoFilesPatch } from "diff";
import {
  type ConfigFile,
  configDigest,
  configFilePaths,
  readConfigFiles,
  shortDigest,
} from "../../ground/config/config-digest.ts";
import { type RosterPaths, rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import {
  type HistoryEntry,
  keepConfig,
  keptFiles,
  readHistory,
  resolveKept,
} from "../../records/config-history/history.ts";

/** What one config changed against the one kept before it. */
interface Changes {
  added: string[];
  removed: string[];
  changed: string[];
}

function changesOf(
  before: HistoryEntry["files"] | undefined,
  after: HistoryEntry["files"],
): Changes {
  const was = before ?? {};
  return {
    added: Object.keys(after).filter((path) => !(path in was)),
    removed: Object.keys(was).filter((path) => !(path in after)),
    changed: Object.keys(after).filter((path) => path in was && was[path] !== after[path]),
  };
}

function saidChanges(changes: Changes, first: boolean): string {
  const said = [
    ...changes.added.map((path) => `+${path}`),
    ...changes.removed.map((path) => `-${path}`),
    ...changes.changed.map((path) => `~${path}`),
  ];
  if (first) return `first kept (${changes.added.length} file(s))`;
  return said.length ? said.join(" ") : "(same files)";
}

/** `roster config history`: newest first, the config on disk now marked. */
export async function configHistoryCommand(flags: {
  limit: string;
  json?: boolean;
}): Promise<void> {
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new RosterError(`--limit ${flags.limit}: expected a whole number, 1 or more`, {
      exitCode: 2,
    });
  const paths = rosterPaths();
  const entries = readHistory(paths.data);
  const onDisk = configDigest(readConfigFiles(paths.config));
  const rows = entries.slice(0, limit).map((entry, at) => {
    const previous = entries[at + 1];
    return {
      digest: entry.digest,
      at: entry.at,
      by: entry.by,
      on_disk: entry.digest === onDisk,
      first: previous === undefined,
      changes: changesOf(previous?.files, entry.files),
    };
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  if (!rows.length) {
    process.stdout.write(
      `no config kept yet (a gateway, the server or a run keeps each one it takes)\n`,
    );
    return;
  }
  const lines = rows.map(
    (row) =>
      `${row.on_disk ? "*" : " "} ${shortDigest(row.digest)}  ${row.at.slice(0, 19).replace("T", " ")}  ${row.by.padEnd(8)}  ${saidChanges(row.changes, row.first)}`,
  );
  const now = rows.some((row) => row.on_disk)
    ? "* the config on disk now"
    : `the config on disk now (${shortDigest(onDisk)}) is not kept yet: nothing has taken it`;
  process.stdout.write(`${lines.join("\n")}\n\n${now}\n`);
}

/** A config named on the command line: `current` (the files on disk) or a kept digest. */
function configNamed(paths: RosterPaths, name: string): { digest: string; files: ConfigFile[] } {
  if (name === "current") {
    const files = readConfigFiles(paths.config);
    return { digest: configDigest(files), files };
  }
  const found = resolveKept(paths.data, name);
  if (typeof found !== "string") throw new RosterError(found.error, { exitCode: 2 });
  return { digest: found, files: keptFiles(paths.data, found) };
}

/** `roster config diff <a> <b>`: a unified diff for each file that differs. */
export async function configDiffCommand(
  a: string,
  b: string,
  flags: { json?: boolean },
): Promise<void> {
  const paths = rosterPaths();
  const from = configNamed(paths, a);
  const to = configNamed(paths, b);
  const before = new Map(from.files.map((file) => [file.path, file.bytes]));
  const after = new Map(to.files.map((file) => [file.path, file.bytes]));
  const all = [...new Set([...before.keys(), ...after.keys()])].sort();
  const files = all.flatMap((path) => {
    const old = before.get(path);
    const now = after.get(path);
    if (old && now && old.equals(now)) return [];
    const change = !old ? "added" : !now ? "removed" : "changed";
    const diff = createTwoFilesPatch(
      old ? `a/${path}` : "/dev/null",
      now ? `b/${path}` : "/dev/null",
      old?.toString("utf8") ?? "",
      now?.toString("utf8") ?? "",
      shortDigest(from.digest),
      shortDigest(to.digest),
      { context: 3 },
    );
    return [{ path, change, diff }];
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ a: from.digest, b: to.digest, files })}\n`);
    return;
  }
  const named = (digest: string, name: string) =>
    `${shortDigest(digest)}${name === "current" ? " (current)" : ""}`;
  const head = `config ${named(from.digest, a)} -> ${named(to.digest, b)}`;
  process.stdout.write(
    files.length
      ? `${head}: ${files.length} file(s) differ\n${files.map((file) => file.diff).join("")}`
      : `${head}: the same files, byte for byte\n`,
  );
}

/**
 * `roster config rollback <digest>`: the kept config's files written back,
 * byte for byte, and the config's other files removed, as one edit that is
 * loaded and tested on a copy first (a config that fails is not written).
 * The config it replaces is kept first, so a rollback can be undone.
 */
export async function configRollbackCommand(
  name: string,
  flags: { json?: boolean },
): Promise<void> {
  const paths = rosterPaths();
  const found = resolveKept(paths.data, name);
  if (typeof found !== "string") throw new RosterError(found.error, { exitCode: 2 });
  const texts = new Map<string, string>();
  for (const file of keptFiles(paths.data, found)) {
    const text = file.bytes.toString("utf8");
    // an edit writes text: a file that is not UTF-8 could not come back byte for byte
    if (!Buffer.from(text, "utf8").equals(file.bytes))
      throw new RosterError(
        `config ${shortDigest(found)}: ${file.path} is not UTF-8 text, so it can't be written back byte for byte; nothing was written`,
        { exitCode: 2 },
      );
    texts.set(file.path, text);
  }
  const replaced = readConfigFiles(paths.config);
  const replacedDigest = configDigest(replaced);
  keepConfig(paths.data, { digest: replacedDigest, files: replaced }, "rollback");
  const { applyConfigEdit } = await import("../../boundary/gateway/policy/config-edit.ts");
  const removed: string[] = [];
  const outcome = await applyConfigEdit(
    paths.config,
    (current) => {
      const gone = configFilePaths(paths.config).filter((path) => !texts.has(path));
      removed.push(...gone);
      return [
        ...[...texts]
          .filter(([path, text]) => current(path) !== text)
          .map(([file, text]) => ({ file, text })),
        ...gone.map((file) => ({ file, text: undefined })),
      ];
    },
    { vaultDir: paths.vault },
  );
  if (!outcome.ok) {
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ ok: false, digest: found, problems: outcome.problems })}\n`,
      );
    else
      process.stderr.write(
        `roster: config ${shortDigest(found)} was not written back: the config it makes would not be taken:\n${outcome.problems.join("\n")}\n`,
      );
    process.exitCode = 2;
    return;
  }
  const written = outcome.written.filter((file) => !removed.includes(file));
  const now = configDigest(readConfigFiles(paths.config));
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ ok: true, digest: found, written, removed, replaced: replacedDigest, on_disk: now })}\n`,
    );
    return;
  }
  const did = [
    written.length ? `wrote ${written.join(", ")}` : "",
    removed.length ? `removed ${removed.join(", ")}` : "",
  ].filter(Boolean);
  process.stdout.write(
    `${did.length ? `config ${shortDigest(found)} is back (${did.join("; ")})` : `the config on disk already is ${shortDigest(found)}`}; it replaced ${shortDigest(replacedDigest)}, kept in the history\n`,
  );
  // an edit made between the write and this read is someone else's: say it, don't hide it
  if (now !== found)
    process.stdout.write(
      `note: the config on disk is now ${shortDigest(now)}: it changed again after the rollback\n`,
    );
}
