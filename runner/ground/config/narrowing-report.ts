/**
 * How checkNarrowing (narrowing.ts) says what a worker.toml widened: one
 * config error per place, at its line. And the checks that need none of the
 * org's defaults: the tables only org.toml may fill ([[grant]] beyond deny,
 * [[action]], [[trust]] that does not gate) and where the model credential goes.
 */
import type { ConfigError } from "./config-error.ts";
import type { ModelSection, WorkerConfig, WorkerModelSection } from "./config-schema.ts";
import { locateLine } from "./locate.ts";
import { modelDestination } from "./model.ts";

export const NARROW_ONLY = "a worker's config may only narrow the org's";

export interface NarrowingReport {
  /** One error at a JSON pointer into the worker's file. */
  at(pointer: string, message: string): void;
  /** A worker's value over the org's (or over the default, when the org left it unset). */
  tooMuch(pointer: string, value: unknown, orgValue: unknown, isDefault: boolean): void;
  /** What the org allows, said as the error says it. */
  allowed(value: unknown, isDefault: boolean): string;
}

/** A report that adds each error to `errors`, located in the worker's `file` (whose text is `text`). */
export function narrowingReport(
  errors: ConfigError[],
  file: string,
  text: string,
): NarrowingReport {
  const at = (pointer: string, message: string) => {
    errors.push({
      file,
      line: locateLine(text, pointer),
      field: pointer.split("/").filter(Boolean).join("."),
      message,
    });
  };
  const allowed = (value: unknown, isDefault: boolean) =>
    `${JSON.stringify(value)}${isDefault ? " by default" : ""}`;
  const tooMuch = (pointer: string, value: unknown, orgValue: unknown, isDefault: boolean) =>
    at(
      pointer,
      `${JSON.stringify(value)} is more than org.toml allows (${allowed(orgValue, isDefault)}); ${NARROW_ONLY}`,
    );
  return { at, tooMuch, allowed };
}

/** A worker's [[grant]] may only deny and inject nothing; its [[action]] grants nothing; its [[trust]] only gates. */
export function checkWorkerTables(worker: WorkerConfig, { at }: NarrowingReport): void {
  (worker.grant ?? []).forEach((grant, index) => {
    const elsewhere = `a [[grant]] with workers = ["${worker.name}"]`;
    if (grant.verdict !== "deny")
      at(
        `/grant/${index}/verdict`,
        `"${grant.name}" is ${grant.verdict === "allow" ? "an allow" : `a ${grant.verdict}`} grant; a worker's config may only add deny grants (a per-worker allowance belongs in org.toml: ${elsewhere})`,
      );
    if (grant.inject)
      at(
        `/grant/${index}/inject`,
        `"${grant.name}" injects credential "${grant.inject.credential}"; a worker's config may not inject credentials (that belongs in org.toml: ${elsewhere})`,
      );
  });

  (worker.action ?? []).forEach((action, index) => {
    at(
      `/action/${index}`,
      `"${action.name}" grants an action; only org.toml grants actions (an [[action]] there, with workers = ["${worker.name}"]); ${NARROW_ONLY}`,
    );
  });
  (worker.trust ?? []).forEach((rule, index) => {
    if (rule.level !== "gate")
      at(
        `/trust/${index}/level`,
        `"${rule.level}" would let "${rule.intent}" run without a human; a worker's [[trust]] may only gate (level = "gate"); ${NARROW_ONLY}`,
      );
  });
}

const MODEL_DESTINATION = ["provider", "base_url", "credential"] as const;
const MODEL_CHOICE =
  "a worker may pick model, max_tokens and context_window; provider, base_url and credential decide where the model credential goes, and only org.toml says that";

/** A worker may pick its model and sizes, never where the model credential goes. */
export function checkModel(
  org: ModelSection | undefined,
  worker: WorkerModelSection | undefined,
  at: (pointer: string, message: string) => void,
): void {
  if (!worker) return;
  if (!org) {
    const set = MODEL_DESTINATION.filter((key) => worker[key] !== undefined);
    for (const key of set)
      at(
        `/model/${key}`,
        `${JSON.stringify(worker[key])}: org.toml grants no model (it has no [model]); ${MODEL_CHOICE}`,
      );
    if (!set.length)
      at("/model", `org.toml grants no model (it has no [model]) for this to adjust`);
    return;
  }
  const orgValues = { provider: org.provider, ...modelDestination(org) };
  for (const key of MODEL_DESTINATION) {
    const value = worker[key];
    if (value === undefined || value === orgValues[key]) continue;
    const orgValue = orgValues[key];
    at(
      `/model/${key}`,
      `${JSON.stringify(value)} is not org.toml's (${orgValue === undefined ? "none" : JSON.stringify(orgValue)}); ${MODEL_CHOICE}`,
    );
  }
}
