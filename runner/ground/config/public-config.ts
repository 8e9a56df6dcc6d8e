import { Value } from "@sinclair/typebox/value";
import type { MemorySection } from "./box-schema.ts";
import { executorNames } from "./chat-schema.ts";
import { type OrgConfig, WorkerConfig } from "./config-schema.ts";
import { publicInterval } from "./heartbeat.ts";
import { KnowledgeSection } from "./knowledge.ts";
import { narrowestBox, narrowestMemory } from "./narrowing.ts";
import { adoptInjectProviders, type ProviderTemplates } from "./public-providers.ts";
import { isTable, isWhole, noteAt, type PublicFile, refuseAt, tableOf } from "./public-spelling.ts";

/**
 * org.toml and worker.toml as the public roster writes them, read into ours
 * before the schema sees them (docs/coming-from-public-roster.md): a key it
 * spells otherwise is rewritten to ours with a notice naming our spelling; a
 * key ours deliberately means otherwise is taken as ours means it, or left
 * out, with a notice saying exactly what happens here. Never wider than the
 * file asks: where ours cannot honour "no limit" the limit stays. A value
 * neither roster could take is an error at the public key's own line.
 */

/** Rewrites org.toml's public spellings in place; says whether it wrote `[knowledge] write_from = "any-run"`. */
export function adoptPublicOrg(
  config: unknown,
  at: PublicFile,
  providers: ProviderTemplates,
): { anyRun: boolean } {
  if (!isTable(config)) return { anyRun: false };
  adoptMemory(config, at, undefined);
  const anyRun = adoptKnowledge(config, at);
  const box = narrowestBox(undefined, undefined);
  adoptBox(config, at, { pids: box.pids_limit, cpus: box.cpus, whose: "the default" });
  adoptInjectProviders(config, at, providers);
  adoptExecutors(config, at);
  return { anyRun };
}

/** Rewrites a worker.toml's public spellings in place, against the org's settings (already read). */
export function adoptPublicWorker(
  config: unknown,
  at: PublicFile,
  org: OrgConfig,
  providers: ProviderTemplates,
): void {
  if (!isTable(config)) return;
  adoptHeartbeat(config, at);
  adoptMemory(config, at, narrowestMemory(org.memory, undefined));
  adoptKnowledge(config, at);
  const box = narrowestBox(org.box, undefined);
  adoptBox(config, at, {
    pids: box.pids_limit,
    cpus: box.cpus,
    whose: org.box ? "org.toml's, or the default" : "the default",
  });
  adoptInjectProviders(config, at, providers);
  dropWorkerActions(config, at);
}

/** Our heartbeat: "30m", "6h", "1d" or "off". */
const OUR_HEARTBEAT = new RegExp(WorkerConfig.properties.heartbeat.pattern ?? "^off$");

function adoptHeartbeat(config: Record<string, unknown>, at: PublicFile): void {
  const beat = config.heartbeat;
  if (typeof beat !== "string" || OUR_HEARTBEAT.test(beat)) return;
  const read = publicInterval(beat);
  // anything else is left to the schema, whose error says what is wanted
  if (!read || !OUR_HEARTBEAT.test(read.every)) return;
  config.heartbeat = read.every;
  noteAt(
    at,
    "/heartbeat",
    read.rounded
      ? `${JSON.stringify(beat)} taken as ${JSON.stringify(read.every)}: a heartbeat is counted in whole minutes here, so it is rounded up`
      : `${JSON.stringify(beat)} taken as ${JSON.stringify(read.every)} (our spelling)`,
  );
}

const MEMORY_NAMES = [
  ["recall_max_notes", "max_notes"],
  ["recall_char_budget", "max_chars"],
] as const;

/** `[memory]`: the recall bounds under our names, `enabled = false` as no notes at all. */
function adoptMemory(
  config: Record<string, unknown>,
  at: PublicFile,
  orgLimits: Required<MemorySection> | undefined,
): void {
  const memory = tableOf(config, "memory");
  if (!memory) return;
  for (const [theirs, ours] of MEMORY_NAMES) {
    if (!(theirs in memory)) continue;
    const value = memory[theirs];
    delete memory[theirs];
    const pointer = `/memory/${theirs}`;
    if (!isWhole(value, 0))
      refuseAt(at, pointer, `must be a whole number, 0 or more (found ${JSON.stringify(value)})`);
    else if (ours in memory)
      refuseAt(at, pointer, `is the public roster's spelling of ${ours}, also set here: keep one`);
    else if (orgLimits && value > orgLimits[ours])
      // the public roster lets a worker raise its recall; here a worker's config only narrows
      noteAt(
        at,
        pointer,
        `${value} is more than org.toml's ${ours} (${orgLimits[ours]}); a worker's config may only narrow the org's here, so ${orgLimits[ours]} applies`,
      );
    else {
      memory[ours] = value;
      noteAt(at, pointer, `taken as ${ours} = ${value} (our spelling)`);
    }
  }
  if (!("enabled" in memory)) return;
  const enabled = memory.enabled;
  delete memory.enabled;
  if (typeof enabled !== "boolean")
    refuseAt(at, "/memory/enabled", `must be true or false (found ${JSON.stringify(enabled)})`);
  else if (!enabled) {
    memory.max_notes = 0;
    noteAt(
      at,
      "/memory/enabled",
      "false taken as max_notes = 0 (our spelling): no notes from ~/store/memory/memory.jsonl reach a prompt; the file stays the worker's",
    );
  } else if (orgLimits?.max_notes === 0)
    noteAt(
      at,
      "/memory/enabled",
      "true, where org.toml switches memory off: a worker's config may only narrow the org's here, so it stays off",
    );
}

/** `[knowledge]`: "any-run" as ours spells it, `max_file_chars` as our byte limit. */
function adoptKnowledge(config: Record<string, unknown>, at: PublicFile): boolean {
  const knowledge = tableOf(config, "knowledge");
  if (!knowledge) return false;
  const anyRun = knowledge.write_from === "any-run";
  if (anyRun && !Value.Check(KnowledgeSection.properties.write_from, "any-run")) {
    knowledge.write_from = "any";
    noteAt(at, "/knowledge/write_from", `"any-run" taken as "any" (our spelling)`);
  }
  if ("max_file_chars" in knowledge) {
    const value = knowledge.max_file_chars;
    delete knowledge.max_file_chars;
    const pointer = "/knowledge/max_file_chars";
    if (!isWhole(value, 1))
      refuseAt(at, pointer, `must be a whole number, 1 or more (found ${JSON.stringify(value)})`);
    else if ("max_file_bytes" in knowledge)
      refuseAt(
        at,
        pointer,
        "is the public roster's spelling of max_file_bytes, also set here: keep one",
      );
    else {
      knowledge.max_file_bytes = value;
      noteAt(
        at,
        pointer,
        `taken as max_file_bytes = ${value} (our spelling): counted in bytes, not characters, so a file of non-ASCII text reaches it sooner`,
      );
    }
  }
  return anyRun;
}

/** `[box]`: "no limit" (0) keeps ours, a count of CPUs written as a string is a number. */
function adoptBox(
  config: Record<string, unknown>,
  at: PublicFile,
  applies: { pids: number; cpus: number; whose: string },
): void {
  const box = tableOf(config, "box");
  if (!box) return;
  const pids = box.pids_limit;
  if (typeof pids === "number" && Number.isInteger(pids) && pids <= 0) {
    delete box.pids_limit;
    noteAt(
      at,
      "/box/pids_limit",
      `${pids} means no limit in the public roster; here a box always has one, so ${applies.pids} applies (${applies.whose})`,
    );
  }
  let cpus = box.cpus;
  if (typeof cpus === "string") {
    const count = /^\s*[0-9]+(\.[0-9]+)?\s*$/.test(cpus) ? Number(cpus) : Number.NaN;
    if (Number.isNaN(count)) {
      refuseAt(
        at,
        "/box/cpus",
        `must be a number of CPUs, like 2 or 1.5 (found ${JSON.stringify(cpus)})`,
      );
      delete box.cpus;
      return;
    }
    if (count > 0) {
      box.cpus = count;
      noteAt(at, "/box/cpus", `${JSON.stringify(cpus)} taken as ${count} (our spelling: a number)`);
      return;
    }
    cpus = count;
  }
  if (cpus === 0) {
    delete box.cpus;
    noteAt(
      at,
      "/box/cpus",
      `0 means no limit to the public roster's engine; here a box always has one, so ${applies.cpus} applies (${applies.whose})`,
    );
  }
}

/** `[[action]] executor = "knowledge"`: our repo executor, which lands a run's commits on a gated repo. */
function adoptExecutors(config: Record<string, unknown>, at: PublicFile): void {
  const actions = config.action;
  if (!Array.isArray(actions) || executorNames().includes("knowledge")) return;
  actions.forEach((action, index) => {
    if (!isTable(action) || action.executor !== "knowledge") return;
    action.executor = "repo";
    noteAt(
      at,
      `/action/${index}/executor`,
      `"knowledge" taken as "repo" (our spelling): it lands a run's commits on a gated repo (repo_push)`,
    );
  });
}

/**
 * A worker.toml `[[action]]`: the public roster grants it to that worker;
 * here only org.toml grants actions, so it is left out, said at each entry.
 */
function dropWorkerActions(config: Record<string, unknown>, at: PublicFile): void {
  const actions = config.action;
  if (!Array.isArray(actions)) return;
  delete config.action;
  const worker = typeof config.name === "string" ? config.name : "<worker>";
  actions.forEach((action, index) => {
    const name = isTable(action) && typeof action.name === "string" ? action.name : "this action";
    noteAt(
      at,
      `/action/${index}`,
      `${JSON.stringify(name)} is not granted: only org.toml grants actions here (an [[action]] there, with workers = ["${worker}"]); a worker's config may only narrow the org's`,
    );
  });
}

/**
 * `[knowledge] write_from = "any-run"` is, in the public roster, also the
 * default of every gated host-repo connection; here it is the worker's own
 * knowledge repo's and its task list's, and a connection that names no
 * `write_from` keeps the clean-room rule. Said once, naming those files.
 */
export function noteKnowledgeDefault(
  at: PublicFile,
  connections: ReadonlyMap<string, { kind?: string; write?: string; write_from?: string }>,
): void {
  const strict = [...connections]
    .filter(([, c]) => c.kind === "host-repo" && c.write === "gated" && c.write_from === undefined)
    .map(([name]) => `connections/${name}.toml`);
  if (!strict.length) return;
  noteAt(
    at,
    "/knowledge/write_from",
    `in the public roster "any-run" is also the default of every gated host-repo connection; here it covers each worker's own knowledge repo and task list, and ${strict.join(", ")} keep${strict.length === 1 ? "s" : ""} the clean-room rule: set write_from there to let any run push`,
  );
}
