import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { TSchema } from "@sinclair/typebox";
import { Value, ValueErrorType } from "@sinclair/typebox/value";
import { parse, TomlError } from "smol-toml";
import { OrgConfig, WorkerConfig } from "./config-schema.ts";
import type { BudgetMeter, ScopedGrant, ScopedLimit } from "./grant-schema.ts";
import { hostPatternProblem } from "./host-pattern.ts";
import { locateLine } from "./locate.ts";

/**
 * Loads and validates the operator's config: org.toml and every
 * workers/<w>/worker.toml. Every problem is collected (not just the first) as
 * `file:line: field: message`; a config with any error is unusable, and callers
 * fail closed on it.
 */
export interface ConfigError {
  file: string;
  line: number;
  field: string;
  message: string;
}

export function formatConfigError(error: ConfigError): string {
  return `${error.file}:${error.line}: ${error.field}: ${error.message}`;
}

export interface LoadedConfig {
  root: string;
  org: OrgConfig;
  workers: Map<string, WorkerConfig>;
  /** Org grants first, then each worker's (workers sorted), scope stamped. */
  grants: ScopedGrant[];
  meters: BudgetMeter[];
  limits: ScopedLimit[];
  errors: ConfigError[];
}

const ARRAY_TABLES = new Set(["grant", "meter", "limit"]);

function parseFile<T>(
  file: string,
  display: string,
  schema: TSchema,
  errors: ConfigError[],
): { value: T; text: string } | undefined {
  const text = readFileSync(file, "utf8");
  let data: unknown;
  try {
    data = parse(text);
  } catch (error) {
    if (error instanceof TomlError) {
      errors.push({
        file: display,
        line: error.line,
        field: "(syntax)",
        message: error.message.split("\n")[0] ?? "invalid TOML",
      });
    } else throw error;
    return undefined;
  }
  const before = errors.length;
  for (const problem of Value.Errors(schema, data)) {
    const field = problem.path.split("/").filter(Boolean).join(".") || "(top level)";
    const last = problem.path.split("/").at(-1) ?? "";
    let message = problem.message;
    if (
      ARRAY_TABLES.has(last) &&
      problem.value &&
      typeof problem.value === "object" &&
      !Array.isArray(problem.value)
    ) {
      message = `write [[${field}]] (an array of tables), not [${field}]`;
    } else if (problem.type === ValueErrorType.ObjectAdditionalProperties) {
      message = "unknown key";
    } else if (problem.type === ValueErrorType.Union) {
      const options = ((problem.schema as { anyOf?: { const?: unknown }[] }).anyOf ?? []).map(
        (option) => option.const,
      );
      if (options.length && options.every((option) => typeof option === "string")) {
        message = `must be one of ${options.join(", ")} (found ${JSON.stringify(problem.value)})`;
      }
    }
    const duplicate = errors
      .slice(before)
      .some((seen) => seen.field === field && seen.message === message);
    if (!duplicate) {
      errors.push({ file: display, line: locateLine(text, problem.path), field, message });
    }
  }
  if (errors.length > before) return undefined;
  return { value: data as T, text };
}

function checkGrantHosts(
  grants: { match?: { host?: string | string[] } }[] | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  (grants ?? []).forEach((grant, index) => {
    const hosts = grant.match?.host;
    for (const host of Array.isArray(hosts) ? hosts : hosts ? [hosts] : []) {
      const problem = hostPatternProblem(host);
      if (problem) {
        errors.push({
          file: display,
          line: locateLine(text, `/grant/${index}/match/host`),
          field: `grant.${index}.match.host`,
          message: `${JSON.stringify(host)}: ${problem}`,
        });
      }
    }
  });
}

export function loadConfig(root: string): LoadedConfig {
  const errors: ConfigError[] = [];
  // paths under the working directory read short; anything else stays absolute
  const show = (path: string) => {
    const near = relative(process.cwd(), path);
    return near && !near.startsWith("..") ? near : path;
  };
  const loaded: LoadedConfig = {
    root,
    org: {},
    workers: new Map(),
    grants: [],
    meters: [],
    limits: [],
    errors,
  };

  const orgFile = join(root, "org.toml");
  if (existsSync(orgFile)) {
    const org = parseFile<OrgConfig>(orgFile, show(orgFile), OrgConfig, errors);
    if (org) {
      checkGrantHosts(org.value.grant, show(orgFile), org.text, errors);
      loaded.org = org.value;
      for (const grant of org.value.grant ?? []) {
        loaded.grants.push({ ...grant, scope: "org", source: show(orgFile) });
      }
      loaded.meters.push(...(org.value.budget?.meter ?? []));
      for (const limit of org.value.budget?.limit ?? [])
        loaded.limits.push({ ...limit, scope: "org" });
    }
  }

  const workersDir = join(root, "workers");
  const names = existsSync(workersDir)
    ? readdirSync(workersDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
        .sort()
    : [];
  for (const name of names) {
    const file = join(workersDir, name, "worker.toml");
    if (!existsSync(file)) continue;
    const worker = parseFile<WorkerConfig>(file, show(file), WorkerConfig, errors);
    if (!worker) continue;
    if (worker.value.name !== name || name === "org") {
      errors.push({
        file: show(file),
        line: locateLine(worker.text, "/name"),
        field: "name",
        message:
          name === "org"
            ? `"org" is reserved; rename the folder`
            : `must equal the folder name "${name}" (found "${worker.value.name}")`,
      });
      continue;
    }
    checkGrantHosts(worker.value.grant, show(file), worker.text, errors);
    loaded.workers.set(name, worker.value);
    for (const grant of worker.value.grant ?? []) {
      loaded.grants.push({ ...grant, scope: `org/${name}`, source: show(file) });
    }
    for (const limit of worker.value.budget?.limit ?? []) {
      loaded.limits.push({ ...limit, scope: `org/${name}` });
    }
  }
  return loaded;
}
