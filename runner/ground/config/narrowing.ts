import { formatByteSize, parseByteSize } from "../text/byte-size.ts";
import { DEFAULT_LIMITS } from "./box-limits.ts";
import type { BoxSection, ContextSection, MemorySection } from "./box-schema.ts";
import type { ConfigError } from "./config-error.ts";
import type { ModelSection, OrgConfig, WorkerConfig, WorkerModelSection } from "./config-schema.ts";
import { durationMs } from "./duration.ts";
import type { OrgGrant, ScopedGrant } from "./grant-schema.ts";
import { checkKnowledge } from "./knowledge-limits.ts";
import { locateLine } from "./locate.ts";
import {
  checkModel,
  checkWorkerTables,
  NARROW_ONLY,
  type NarrowingReport,
  narrowingReport,
} from "./narrowing-report.ts";
import { homeSize, STORE_DEFAULTS } from "./store-limits.ts";
import { workerSubject } from "./subject.ts";

/**
 * Config narrows downward: org.toml grants, a worker.toml may only narrow
 * (lower limits, deny grants, never a protection switched off). A worker may
 * one day propose edits to its own worker.toml, so nothing it can write there
 * may give it more than the org does. The loader reports every widening
 * (checkNarrowing); workerView computes limits with the narrowest-of helpers
 * below, so even a config that skipped validation gets no more than the org's.
 */

/** What the runner applies when org.toml leaves a [box] key unset. */
export const BOX_DEFAULTS: Required<BoxSection> = {
  pids_limit: DEFAULT_LIMITS.pids,
  memory: formatByteSize(DEFAULT_LIMITS.memoryBytes),
  cpus: DEFAULT_LIMITS.cpus,
  max_output: "512m",
  egress_lockdown: true,
  session_ceiling_min: 60,
  turn_ceiling_min: 15,
  chat_idle_secs: 90,
  talk_idle_secs: 300,
  stall_after: "5m",
  runtime: "runc",
  render_secs: 15,
};

/** [box] keys that are plain numbers: a worker's smaller one wins. */
const BOX_TIME_KEYS = [
  "session_ceiling_min",
  "turn_ceiling_min",
  "chat_idle_secs",
  "talk_idle_secs",
  "render_secs",
] as const;

/** What the runner applies when org.toml leaves a [context] key unset. */
export const CONTEXT_DEFAULTS: Required<ContextSection> = {
  identity_max_chars: 12_000,
  task_max_chars: 24_000,
  max_injected_chars: 48_000,
  history_max_messages: 25,
  history_max_chars: 6_000,
  // a purpose says what a channel is for in a few paragraphs; more is cut, never fatal
  purpose_max_chars: 2_000,
  // what became of the worker's proposals since its last run: the newest kept
  briefing_max_chars: 4_000,
};

const CONTEXT_KEYS = Object.keys(CONTEXT_DEFAULTS) as Array<keyof ContextSection>;

/** What the runner applies when org.toml leaves a [memory] key unset: enough for who's who, small beside the prompt. */
export const MEMORY_DEFAULTS: Required<MemorySection> = {
  max_notes: 40,
  max_chars: 6_000,
};

const MEMORY_KEYS = Object.keys(MEMORY_DEFAULTS) as Array<keyof MemorySection>;

/** The worker's number when it is a real, smaller limit; otherwise the org's. */
function lower(org: number, worker: number | undefined, least: number): number {
  return worker !== undefined && Number.isFinite(worker) && worker >= least && worker < org
    ? worker
    : org;
}

/**
 * The box limits a worker gets: the lower of org (or default) and worker for
 * each number, and the lockdown on when either side keeps it on.
 */
export function narrowestBox(
  org: BoxSection | undefined,
  worker: BoxSection | undefined,
): Required<BoxSection> {
  const base = { ...BOX_DEFAULTS, ...org };
  // a size that does not parse would reach the engine as 0 bytes, which it reads as "no limit"
  const orgBytes = parseByteSize(base.memory);
  const orgMemory = orgBytes > 0 ? base.memory : BOX_DEFAULTS.memory;
  const workerBytes = worker?.memory ? parseByteSize(worker.memory) : 0;
  return {
    // the engine reads a pids limit of 0 or less as unlimited, so only positive values narrow
    pids_limit: lower(base.pids_limit, worker?.pids_limit, 1),
    memory:
      worker?.memory && workerBytes > 0 && workerBytes < parseByteSize(orgMemory)
        ? worker.memory
        : orgMemory,
    cpus: lower(base.cpus, worker?.cpus, Number.MIN_VALUE),
    max_output: smallerSize(base.max_output, worker?.max_output, BOX_DEFAULTS.max_output),
    egress_lockdown: base.egress_lockdown !== false || worker?.egress_lockdown === true,
    ...timeLimits(base, worker),
    stall_after: narrowerStall(base.stall_after, worker?.stall_after),
    // gVisor is the stronger box: either side asking for it gets it
    runtime: base.runtime === "runsc" || worker?.runtime === "runsc" ? "runsc" : "runc",
  };
}

/** The worker's size when it is a real, smaller one; the org's (or the default, if the org's is not a size). */
function smallerSize(org: string, worker: string | undefined, fallback: string): string {
  const orgSize = parseByteSize(org) > 0 ? org : fallback;
  const own = worker ? parseByteSize(worker) : 0;
  return worker && own > 0 && own < parseByteSize(orgSize) ? worker : orgSize;
}

/** The worker's stall window when it is a real, shorter one; "off" never beats a window. */
function narrowerStall(org: string, worker: string | undefined): string {
  const orgMs = durationMs(org);
  const workerMs = worker === undefined ? undefined : durationMs(worker);
  if (workerMs === undefined) return orgMs === undefined ? "off" : org;
  return orgMs === undefined || workerMs < orgMs ? (worker ?? org) : org;
}

function timeLimits(
  base: Required<BoxSection>,
  worker: BoxSection | undefined,
): Pick<Required<BoxSection>, (typeof BOX_TIME_KEYS)[number]> {
  const pick = (key: (typeof BOX_TIME_KEYS)[number]) =>
    lower(base[key], worker?.[key], Number.MIN_VALUE);
  return {
    session_ceiling_min: pick("session_ceiling_min"),
    turn_ceiling_min: pick("turn_ceiling_min"),
    chat_idle_secs: pick("chat_idle_secs"),
    talk_idle_secs: pick("talk_idle_secs"),
    render_secs: pick("render_secs"),
  };
}

/** The prompt size limits a worker gets: the lower of org (or default) and worker. */
export function narrowestContext(
  org: ContextSection | undefined,
  worker: ContextSection | undefined,
): Required<ContextSection> {
  const base = { ...CONTEXT_DEFAULTS, ...org };
  const out = { ...base };
  for (const key of CONTEXT_KEYS) out[key] = lower(base[key], worker?.[key], 0);
  return out;
}

/** The memory bounds a worker gets: the lower of org (or default) and worker. */
export function narrowestMemory(
  org: MemorySection | undefined,
  worker: MemorySection | undefined,
): Required<MemorySection> {
  const base = { ...MEMORY_DEFAULTS, ...org };
  const out = { ...base };
  for (const key of MEMORY_KEYS) out[key] = lower(base[key], worker?.[key], 0);
  return out;
}

/**
 * The worker's model: the org's, with only the worker's choice of model id and
 * token sizes laid over it. Provider, base_url and credential always stay the
 * org's, so the injected credential goes only where org.toml sends it.
 */
export function narrowedModel(
  org: ModelSection | undefined,
  worker: WorkerModelSection | undefined,
): ModelSection | undefined {
  if (!org) return undefined;
  const model: ModelSection = { ...org };
  if (worker?.model !== undefined) model.model = worker.model;
  if (worker?.max_tokens !== undefined) model.max_tokens = worker.max_tokens;
  if (worker?.context_window !== undefined) model.context_window = worker.context_window;
  return model;
}

/**
 * org.toml grants with their scope stamped: "org" for every worker, or one
 * `org/<name>` copy per worker a `workers` list names, in place (order is
 * what the judge goes by). A name that is no worker is an error.
 */
export function scopeOrgGrants(
  grants: OrgGrant[] | undefined,
  workerNames: string[],
  file: string,
  text: string,
  errors: ConfigError[],
): ScopedGrant[] {
  return scopeToWorkers(grants, "grant", workerNames, file, text, errors);
}

/** The same stamping for any org.toml table with a `workers` list ([[grant]], [[action]], [[trust]]). */
export function scopeToWorkers<T extends { workers?: string[] | undefined }>(
  items: T[] | undefined,
  table: string,
  workerNames: string[],
  file: string,
  text: string,
  errors: ConfigError[],
): Array<Omit<T, "workers"> & { scope: string; source: string }> {
  const scoped: Array<Omit<T, "workers"> & { scope: string; source: string }> = [];
  (items ?? []).forEach((item, index) => {
    const { workers, ...rest } = item;
    if (!workers) {
      scoped.push({ ...rest, scope: "org", source: file });
      return;
    }
    for (const name of workers) {
      if (workerNames.includes(name)) {
        scoped.push({ ...rest, scope: workerSubject(name), source: file });
      } else {
        errors.push({
          file,
          line: locateLine(text, `/${table}/${index}/workers`),
          field: `${table}.${index}.workers`,
          message: `no worker named "${name}" (workers are the folders under workers/)`,
        });
      }
    }
  });
  return scoped;
}

/**
 * A worker's grants as the gateway gets them: deny grants only. The loader has
 * already reported any other kind as an error; dropping them here as well
 * means a widening grant can never reach the judge.
 */
export function workerDenyGrants(worker: WorkerConfig, file: string): ScopedGrant[] {
  return (worker.grant ?? [])
    .filter((grant) => grant.verdict === "deny" && !grant.inject)
    .map((grant) => ({ ...grant, scope: workerSubject(worker.name), source: file }));
}

/** Every place a worker.toml asks for more than org.toml grants, as config errors. */
export function checkNarrowing(
  org: OrgConfig,
  worker: WorkerConfig,
  file: string,
  text: string,
): ConfigError[] {
  const errors: ConfigError[] = [];
  const report = narrowingReport(errors, file, text);
  // in this order: the errors come out in it
  checkResources(org, worker, report);
  checkProtections(org, worker, report);
  checkPromptSizes(org, worker, report);
  checkKnowledge(org.knowledge, worker.knowledge, report);
  checkWorkerTables(worker, report);
  checkModel(org.model, worker.model, report.at);
  return errors;
}

/** How much the box gets: processes, memory, the store and $HOME, output, CPUs. */
function checkResources(org: OrgConfig, worker: WorkerConfig, { tooMuch }: NarrowingReport): void {
  const box = worker.box ?? {};
  const orgBox = org.box ?? {};
  const effectiveBox = { ...BOX_DEFAULTS, ...orgBox };
  if (box.pids_limit !== undefined && box.pids_limit > effectiveBox.pids_limit)
    tooMuch(
      "/box/pids_limit",
      box.pids_limit,
      effectiveBox.pids_limit,
      orgBox.pids_limit === undefined,
    );
  if (box.memory !== undefined && parseByteSize(box.memory) > parseByteSize(effectiveBox.memory))
    tooMuch("/box/memory", box.memory, effectiveBox.memory, orgBox.memory === undefined);
  for (const key of ["max_size", "home_max_size"] as const) {
    const store = worker.store?.[key];
    // an org's $HOME limit unset is its store's (store-limits.ts)
    const orgSet = key === "home_max_size" ? homeSize(org.store) : org.store?.[key];
    const orgStore = orgSet ?? STORE_DEFAULTS[key];
    if (store !== undefined && parseByteSize(store) > parseByteSize(orgStore))
      tooMuch(`/store/${key}`, store, orgStore, orgSet === undefined);
  }
  if (
    box.max_output !== undefined &&
    parseByteSize(box.max_output) > parseByteSize(effectiveBox.max_output)
  )
    tooMuch(
      "/box/max_output",
      box.max_output,
      effectiveBox.max_output,
      orgBox.max_output === undefined,
    );
  if (box.cpus !== undefined && box.cpus > effectiveBox.cpus)
    tooMuch("/box/cpus", box.cpus, effectiveBox.cpus, orgBox.cpus === undefined);
}

/** The protections a worker may not switch off, and the clocks it may only shorten. */
function checkProtections(
  org: OrgConfig,
  worker: WorkerConfig,
  { at, tooMuch, allowed }: NarrowingReport,
): void {
  const box = worker.box ?? {};
  const orgBox = org.box ?? {};
  const effectiveBox = { ...BOX_DEFAULTS, ...orgBox };
  if (box.egress_lockdown === false && effectiveBox.egress_lockdown !== false)
    at(
      "/box/egress_lockdown",
      `false switches off a protection org.toml keeps on (${allowed(true, orgBox.egress_lockdown === undefined)}); ${NARROW_ONLY}`,
    );

  if (box.runtime !== undefined && box.runtime !== "runsc" && effectiveBox.runtime === "runsc")
    at(
      "/box/runtime",
      `${JSON.stringify(box.runtime)} drops the gVisor kernel org.toml requires (runtime = "runsc"); ${NARROW_ONLY}`,
    );

  for (const key of BOX_TIME_KEYS) {
    const value = box[key];
    if (value !== undefined && value > effectiveBox[key])
      tooMuch(`/box/${key}`, value, effectiveBox[key], orgBox[key] === undefined);
  }
  const orgStall = durationMs(effectiveBox.stall_after);
  if (box.stall_after !== undefined && orgStall !== undefined) {
    const stall = durationMs(box.stall_after);
    if (stall === undefined)
      at(
        "/box/stall_after",
        `"off" switches off a protection org.toml keeps on (${allowed(effectiveBox.stall_after, orgBox.stall_after === undefined)}); ${NARROW_ONLY}`,
      );
    else if (stall > orgStall)
      tooMuch(
        "/box/stall_after",
        box.stall_after,
        effectiveBox.stall_after,
        orgBox.stall_after === undefined,
      );
  }
}

/** The prompt's size limits and the memory's bounds: each a number the worker may only lower. */
function checkPromptSizes(
  org: OrgConfig,
  worker: WorkerConfig,
  { tooMuch }: NarrowingReport,
): void {
  const context = worker.context ?? {};
  for (const key of CONTEXT_KEYS) {
    const value = context[key];
    const orgValue = org.context?.[key];
    const limit = orgValue ?? CONTEXT_DEFAULTS[key];
    if (value !== undefined && value > limit)
      tooMuch(`/context/${key}`, value, limit, orgValue === undefined);
  }

  for (const key of MEMORY_KEYS) {
    const value = worker.memory?.[key];
    const orgValue = org.memory?.[key];
    const limit = orgValue ?? MEMORY_DEFAULTS[key];
    if (value !== undefined && value > limit)
      tooMuch(`/memory/${key}`, value, limit, orgValue === undefined);
  }
}
