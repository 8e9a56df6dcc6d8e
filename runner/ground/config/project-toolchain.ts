import { Value, ValueErrorType } from "@sinclair/typebox/value";
import { parse, TomlError } from "smol-toml";
import { GitError, git } from "../git/git.ts";
import { type ConfigError, tomlSyntaxError } from "./config-error.ts";
import type { ConnectionMount } from "./connections.ts";
import { locateLine } from "./locate.ts";
import {
  ProjectToolchainSection,
  type Toolchain,
  type ToolchainSection,
} from "./toolchain-schema.ts";

/**
 * A project's own toolchain: `.roster/toolchain.toml` (the `[toolchain]` keys,
 * at the top level) in a `host-repo` a worker mounts adds its packages to the
 * toolchain of that worker's runs. It is read from the canonical repository's
 * branch (a gated repo's `branch`, else `main`), never from a run's clone, so
 * only what has landed counts; a repository without the file adds nothing.
 */
export const PROJECT_TOOLCHAIN = ".roster/toolchain.toml";

export interface ProjectToolchains {
  toolchain: Toolchain;
  errors: ConfigError[];
}

/** Reads and checks the declaration of every host-repo in `mounts`; problems name repo, line and field. */
export async function projectToolchains(mounts: ConnectionMount[]): Promise<ProjectToolchains> {
  const toolchain: Toolchain = { apt: [], npm: [], pip: [] };
  const errors: ConfigError[] = [];
  for (const mount of mounts) {
    // the worker's own knowledge repo configures nothing: its pushes could widen its own image
    if (mount.kind !== "host-repo" || mount.builtIn) continue;
    const branch = mount.gated?.branch ?? "main";
    const display = `${mount.name}:${branch}:${PROJECT_TOOLCHAIN}`;
    let text: string;
    try {
      text = await git(mount.path, ["show", `refs/heads/${branch}:${PROJECT_TOOLCHAIN}`], {
        maxBytes: 256 * 1024,
        timeoutMs: 30_000,
      });
    } catch (error) {
      // no such branch or no such file: the project declares nothing
      if (error instanceof GitError) continue;
      throw error;
    }
    let value: unknown;
    try {
      value = parse(text);
    } catch (error) {
      if (!(error instanceof TomlError)) throw error;
      errors.push(tomlSyntaxError(error, display));
      continue;
    }
    const problems = [...Value.Errors(ProjectToolchainSection, value)];
    for (const problem of problems) {
      const field = problem.path.split("/").filter(Boolean).join(".") || "(top level)";
      errors.push({
        file: display,
        line: locateLine(text, problem.path),
        field,
        message:
          problem.type === ValueErrorType.ObjectAdditionalProperties
            ? "unknown key"
            : problem.message,
      });
    }
    if (problems.length) continue;
    const declared = value as ToolchainSection;
    for (const key of ["apt", "npm", "pip"] as const)
      for (const entry of declared[key] ?? [])
        if (!toolchain[key].includes(entry)) toolchain[key].push(entry);
  }
  return { toolchain, errors };
}

/** The worker's toolchain with a project's added (each entry once). */
export function withProjects(worker: Toolchain, projects: Toolchain): Toolchain {
  const union = (a: string[], b: string[]) => [...a, ...b.filter((entry) => !a.includes(entry))];
  return {
    ...worker,
    apt: union(worker.apt, projects.apt),
    npm: union(worker.npm, projects.npm),
    pip: union(worker.pip, projects.pip),
  };
}
