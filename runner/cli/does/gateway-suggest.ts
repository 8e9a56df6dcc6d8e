/**
 * `roster gateway log --denied --suggest`: for each worker and host the
 * grants refused, the narrowest change that would admit every refused
 * request of it — `roster connection grant` when a connection already
 * serves the host, `roster connection add` when a recipe does, else one
 * `[[grant]]` for org.toml (exact host, the methods seen, the longest
 * common path prefix, that worker only) — each printed only after the
 * door's own ruling allowed every one of those requests with it. Groups no
 * grant would change are listed with the reason. Loaded when it runs.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import {
  appendedToml,
  grantToml,
  type NarrowGrant,
} from "../../boundary/gateway/policy/grant-text.ts";
import {
  eachRefusal,
  type GroupFilter,
  logSnapshot,
  prefixOf,
  type RefusalGroup,
  RefusalGroups,
  type Unanswered,
} from "../../boundary/gateway/policy/refusal-groups.ts";
import { type Candidate, verifyCandidates } from "../../boundary/gateway/policy/suggest.ts";
import { hostMatches } from "../../ground/config/host-pattern.ts";
import { type LoadedConfig, loadConfig } from "../../ground/config/load.ts";
import { type RosterPaths, rosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { RosterError } from "../../ground/errors.ts";
import { addEdge, renderConnection } from "../../work/connections/connection-file.ts";
import { recipes } from "../../work/connections/recipes.ts";

/** The most groups judged and shown, the most refused first: each costs a load of the config. */
const MOST_GROUPS = 50;

interface Proposed extends Candidate {
  group: RefusalGroup;
  /** What the operator does: a command to run, or text to add to a file. */
  command?: string;
  text?: string;
  file: string;
}

export async function suggestCommand(flags: GroupFilter & { json?: boolean }): Promise<void> {
  const paths = rosterPaths();
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  const broken = config.errors[0];
  if (broken)
    throw new RosterError(
      `${broken.file}:${broken.line ?? 0}: ${broken.message} — a broken config refuses everything; mend it first (roster validate)`,
      { exitCode: 2 },
    );
  if (flags.worker && !config.workers.has(flags.worker))
    throw new RosterError(`no worker named "${flags.worker}" in ${paths.config}`, { exitCode: 2 });
  const filter: GroupFilter = {
    ...(flags.worker ? { worker: flags.worker } : {}),
    ...(flags.run ? { run: flags.run } : {}),
  };
  const grantNames = new Set(config.grants.map((grant) => grant.name));
  const snapshot = logSnapshot(paths.audit);
  const groups = new RefusalGroups(grantNames);
  eachRefusal(snapshot, filter, (record) => groups.add(record));

  const ranked = [...groups.groups.values()].sort((a, b) => b.count - a.count);
  const unanswered = [...groups.unanswered.values()].sort((a, b) => b.count - a.count);
  const taken = new Set(grantNames);
  const proposed: Proposed[] = [];
  for (const group of ranked.slice(0, MOST_GROUPS)) {
    if (!config.workers.has(group.worker)) {
      unanswered.push({ ...group, why: `no worker named "${group.worker}" in the config now` });
      continue;
    }
    proposed.push(proposalFor(paths, config, group, taken));
  }
  const verified = verifyCandidates({
    root: paths.config,
    vaultDir: paths.vault,
    snapshot,
    filter,
    grantNames,
    candidates: proposed,
  });
  const said: string[] = [];
  for (const one of proposed) {
    const result = verified.get(one.key);
    if (result?.ok) said.push(flags.json ? suggestionJson(one) : suggestionWords(paths, one));
    else unanswered.push({ ...one.group, why: result?.ok === false ? result.why : "not judged" });
  }
  if (flags.json) {
    for (const line of said) process.stdout.write(`${line}\n`);
    for (const none of unanswered) process.stdout.write(`${unansweredJson(none)}\n`);
    return;
  }
  const more = ranked.length - MOST_GROUPS;
  const out = [
    said.length ? said.join("\n\n") : "no refusal here that a grant would answer",
    ...(more > 0
      ? [`(${more} more worker and host pairs, refused less often: narrow with --worker or --run)`]
      : []),
    ...(unanswered.length
      ? ["", "no suggestion:", ...unanswered.map((none) => `  ${unansweredWords(none)}`)]
      : []),
  ];
  process.stdout.write(`${out.join("\n")}\n`);
}

/** The narrowest change for one group: a connection that serves its host, else a grant of its own. */
function proposalFor(
  paths: RosterPaths,
  config: LoadedConfig,
  group: RefusalGroup,
  taken: Set<string>,
): Proposed {
  const key = RefusalGroups.key(group.worker, group.host);
  const subject = workerSubject(group.worker);
  const serving = config.grants.find(
    (grant) =>
      grant.name.startsWith("connection:") &&
      grant.verdict === "allow" &&
      hostsOf(grant).some((pattern) => hostMatches(pattern, group.host)),
  );
  const name = serving?.name.slice("connection:".length);
  const connectionFile = (connection: string) => join("connections", `${connection}.toml`);
  if (
    serving &&
    name &&
    !config.grants.some((g) => g.name === serving.name && scopeApplies(g.scope, subject))
  ) {
    const file = connectionFile(name);
    const text = readFileSync(join(paths.config, file), "utf8");
    const edited = addEdge(text, file, group.worker);
    if (edited)
      return {
        key,
        group,
        file,
        rule: serving.name,
        edits: [{ file, text: edited.text }],
        command: `roster connection grant ${name} ${group.worker}`,
      };
  }
  const recipe = recipes().find(
    (one) => one.kind === "service" && !one.bindsChannel && one.hosts?.includes(group.host),
  );
  if (recipe && !existsSync(join(paths.config, connectionFile(recipe.name)))) {
    const file = connectionFile(recipe.name);
    const hosts = recipe.hosts ?? [];
    return {
      key,
      group,
      file,
      rule: `connection:${recipe.name}`,
      assumeStored: true,
      edits: [
        {
          file,
          text: renderConnection({ name: recipe.name, recipe, hosts, edges: [group.worker] }),
        },
      ],
      command: `roster connection add ${recipe.name} --worker ${group.worker}${recipe.secretField ? "" : " --oauth"}`,
    };
  }
  const grant: NarrowGrant = {
    name: uniqueName(`${group.worker}-${group.host}`, taken),
    worker: group.worker,
    host: group.host,
    protocols: [...group.protocols].sort(),
    methods: [...group.methods].sort(),
    pathPrefix: prefixOf(group),
  };
  const text = grantToml(grant);
  const file = "org.toml";
  const current = existsSync(join(paths.config, file))
    ? readFileSync(join(paths.config, file), "utf8")
    : undefined;
  return {
    key,
    group,
    file,
    rule: grant.name,
    text,
    edits: [{ file, text: appendedToml(current, text) }],
  };
}

const hostsOf = (grant: { match?: { host?: string | string[] } }): string[] => {
  const host = grant.match?.host;
  return host === undefined ? [] : Array.isArray(host) ? host : [host];
};

function uniqueName(base: string, taken: Set<string>): string {
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
  taken.add(name);
  return name;
}

const refusedSaid = (group: Pick<RefusalGroup, "worker" | "host" | "count">) =>
  `${group.worker} → ${group.host}: ${group.count} refused`;

function suggestionWords(paths: RosterPaths, one: Proposed): string {
  const { group } = one;
  const head = `${refusedSaid(group)} (${[...group.methods].sort().join(", ")}), the last at ${group.lastTs.slice(0, 19)}Z`;
  const checked = `the door allows every one of them with it${one.assumeStored ? ", once its secret is stored" : ""}`;
  if (one.command) return `${head}\n  run: ${one.command}\n  (${checked})`;
  const indented = (one.text ?? "").trimEnd().replace(/^/gm, "    ");
  return `${head}\n  add to ${join(paths.config, one.file)} (${checked}):\n${indented}`;
}

function suggestionJson(one: Proposed): string {
  const { group } = one;
  return JSON.stringify({
    worker: group.worker,
    host: group.host,
    refused: group.count,
    methods: [...group.methods].sort(),
    last: group.lastTs,
    suggestion: one.command
      ? { kind: "connection", command: one.command, file: one.file, rule: one.rule }
      : { kind: "grant", file: one.file, toml: one.text, rule: one.rule },
    verified: true,
  });
}

function unansweredWords(none: Unanswered): string {
  return `${refusedSaid({ ...none, worker: none.worker ?? "?" })}: ${none.why}`;
}

function unansweredJson(none: Unanswered): string {
  return JSON.stringify({
    worker: none.worker ?? null,
    host: none.host,
    refused: none.count,
    suggestion: null,
    why: none.why,
  });
}
