import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, normalize, sep } from "node:path";
import { formatConfigError } from "../../../ground/config/config-error.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import { replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import { withFileLockWaiting } from "../../../ground/files/file-lock.ts";
import { runPolicyTests } from "./tests.ts";

/**
 * An edit of the operator's config made by roster itself (an approved access
 * request, a rollback): never written until the config it would make loads
 * without an error and passes its own `[[test]]` cases, exactly as `roster
 * validate` would judge it. The edit is tried on a copy first, so the live
 * config is never half-edited or broken by roster; then each file is replaced
 * atomically, under one lock so two edits don't interleave.
 */
export interface ConfigFileEdit {
  /** A TOML file's path under the config folder (`org.toml`, `workers/elf/worker.toml`). */
  file: string;
  /** Its new text; undefined removes the file. */
  text: string | undefined;
}

export type EditOutcome =
  | { ok: true; written: string[] }
  | { ok: false; problems: string[]; written: [] };

/** What the edit is computed from: the config's files as they are now, read under the edit's lock. */
export type CurrentText = (file: string) => string | undefined;

export interface EditOptions {
  vaultDir?: string;
  /** How long another edit may hold the lock before this one gives up. */
  waitMs?: number;
}

function modeOf(path: string): number | undefined {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return undefined;
  }
}

/** A path an edit may name: relative, inside the config, a TOML file at most three folders down. */
export function editPathProblem(file: string): string | undefined {
  const clean = normalize(file);
  if (isAbsolute(file) || clean.startsWith("..") || clean.split(sep).includes(".."))
    return `${file}: an edit names a file inside the config folder`;
  if (!clean.endsWith(".toml")) return `${file}: an edit writes only .toml files`;
  if (clean.split(sep).length > 4) return `${file}: an edit reaches at most three folders down`;
  return undefined;
}

/**
 * The config the edits would make, loaded and tested on a copy: every load
 * error and failed test, said with the live config's paths; empty when it
 * would be taken.
 */
export function vetConfigEdit(
  root: string,
  edits: readonly ConfigFileEdit[],
  options: EditOptions = {},
): string[] {
  const bad = edits.map((edit) => editPathProblem(edit.file)).filter((one) => one !== undefined);
  if (bad.length) return bad;
  const scratch = mkdtempSync(join(tmpdir(), "roster-config-edit-"));
  try {
    const copy = join(scratch, "config");
    if (existsSync(root)) cpSync(root, copy, { recursive: true });
    else mkdirSync(copy);
    for (const edit of edits) {
      const path = join(copy, edit.file);
      if (edit.text === undefined) rmSync(path, { force: true });
      else {
        mkdirSync(dirname(path), { recursive: true });
        replaceFileSync(path, edit.text, { mode: 0o644 });
      }
    }
    const loaded = loadConfig(copy, options.vaultDir ? { vaultDir: options.vaultDir } : {});
    const problems = [...loaded.errors, ...runPolicyTests(loaded).failures].map(formatConfigError);
    // the copy's paths are nobody's: say them as the live config's
    return problems.map((problem) => problem.split(copy).join(root));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Computes the edits from the config as it is under the lock, vets them, and
 * writes them when the config they make is good. Refused edits write nothing.
 */
export async function applyConfigEdit(
  root: string,
  compute: (current: CurrentText) => ConfigFileEdit[],
  options: EditOptions = {},
): Promise<EditOutcome> {
  mkdirSync(root, { recursive: true });
  return withFileLockWaiting(
    join(root, ".edit.lock"),
    "editing the config",
    options.waitMs ?? 10_000,
    async () => {
      const current: CurrentText = (file) => {
        if (editPathProblem(file)) return undefined;
        try {
          return readFileSync(join(root, file), "utf8");
        } catch {
          return undefined;
        }
      };
      const edits = compute(current);
      const problems = vetConfigEdit(root, edits, options);
      if (problems.length) return { ok: false, problems, written: [] };
      for (const edit of edits) {
        const path = join(root, edit.file);
        if (edit.text === undefined) rmSync(path, { force: true });
        else {
          mkdirSync(dirname(path), { recursive: true });
          // a file keeps its permission bits; a new one is readable as `roster init` makes them
          replaceFileSync(path, edit.text, { mode: modeOf(path) ?? 0o644 });
        }
      }
      return { ok: true, written: edits.map((edit) => edit.file) };
    },
  );
}
