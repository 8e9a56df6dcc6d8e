import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { formatConfigError } from "../../../ground/config/config-error.ts";
import { type LoadedConfig, loadConfig } from "../../../ground/config/load.ts";
import { workerOfSubject } from "../../../ground/config/subject.ts";
import { replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import type { LogSnapshot } from "../../../ground/files/log-snapshot.ts";
import { policyCheck } from "./check.ts";
import type { ConfigFileEdit } from "./config-edit.ts";
import {
  eachRefusal,
  type GroupFilter,
  notForAGrant,
  RefusalGroups,
  requestOfLine,
} from "./refusal-groups.ts";

/**
 * A suggestion is printed only once the door's own ruling (check.ts) has
 * judged every refused request of its group again, on a copy of the config
 * with the suggestion made, and allowed each by the rule it adds. The copy
 * is made once; each candidate's edits are written into it, loaded, and put
 * back, so the live config is never touched.
 */
export interface Candidate {
  /** The group's key (RefusalGroups.key). */
  key: string;
  /** The config files the suggestion edits, as the operator would. */
  edits: ConfigFileEdit[];
  /** The rule that must then allow every request of the group. */
  rule: string;
  /** A connection it adds: judged as it will be once its secret is stored. */
  assumeStored?: boolean;
}

export type Verified = { ok: true; checked: number } | { ok: false; why: string };

/** The config each candidate makes, loaded on one scratch copy of the config folder. */
function loadCandidates(
  root: string,
  vaultDir: string | undefined,
  candidates: readonly Candidate[],
): Map<string, LoadedConfig | string> {
  const loaded = new Map<string, LoadedConfig | string>();
  const scratch = mkdtempSync(join(tmpdir(), "roster-suggest-"));
  const copy = join(scratch, "config");
  try {
    if (existsSync(root)) cpSync(root, copy, { recursive: true });
    else mkdirSync(copy);
    for (const candidate of candidates) {
      const before = candidate.edits.map((edit) => {
        const path = join(copy, edit.file);
        return { path, text: existsSync(path) ? readFileSync(path, "utf8") : undefined };
      });
      try {
        for (const edit of candidate.edits) write(join(copy, edit.file), edit.text);
        const config = loadConfig(copy, vaultDir && !candidate.assumeStored ? { vaultDir } : {});
        const problems = config.errors.map(formatConfigError);
        loaded.set(
          candidate.key,
          problems.length
            ? `the config would not load with it: ${problems[0]?.split(copy).join(root)}`
            : config,
        );
      } finally {
        for (const { path, text } of before) write(path, text);
      }
    }
    return loaded;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function write(path: string, text: string | undefined): void {
  if (text === undefined) rmSync(path, { force: true });
  else {
    mkdirSync(dirname(path), { recursive: true });
    replaceFileSync(path, text, { mode: 0o644 });
  }
}

/** The most distinct requests of one group judged again; one more repeats one already judged. */
const DISTINCT_KEPT = 10_000;

/**
 * Every candidate judged: the log's snapshot read again (the same lines), and
 * each refused request of a candidate's group asked of the config the
 * candidate makes. A request the door would still refuse, or allow by
 * another rule, rules the candidate out, with the reason.
 */
export function verifyCandidates(options: {
  root: string;
  vaultDir?: string;
  snapshot: LogSnapshot;
  filter: GroupFilter;
  grantNames: ReadonlySet<string>;
  candidates: readonly Candidate[];
}): Map<string, Verified> {
  const { candidates, grantNames } = options;
  const configs = loadCandidates(options.root, options.vaultDir, candidates);
  const rules = new Map(candidates.map((candidate) => [candidate.key, candidate.rule]));
  const results = new Map<string, Verified>();
  const judged = new Map<string, Set<string>>();
  for (const [key, config] of configs)
    results.set(
      key,
      typeof config === "string" ? { ok: false, why: config } : { ok: true, checked: 0 },
    );
  eachRefusal(options.snapshot, options.filter, (record) => {
    if (notForAGrant(record, grantNames)) return;
    const worker = workerOfSubject(record.subject ?? "");
    const key = RefusalGroups.key(worker, record.request.host);
    const config = configs.get(key);
    const result = results.get(key);
    if (!config || typeof config === "string" || !result?.ok) return;
    const asked = requestOfLine(record);
    const seen = judged.get(key) ?? new Set<string>();
    judged.set(key, seen);
    const shape = `${asked.method} ${asked.url} ${asked.channel ?? ""} ${JSON.stringify(asked.headers)}`;
    if (seen.has(shape)) return;
    if (seen.size < DISTINCT_KEPT) seen.add(shape);
    const verdict = policyCheck(config, asked);
    if (verdict.verdict === "allow" && verdict.rule === rules.get(key)) {
      result.checked++;
      return;
    }
    const by = verdict.rule ? ` by rule "${verdict.rule}"` : "";
    const words = verdict.error ? `: ${verdict.error}` : "";
    results.set(key, {
      ok: false,
      why: `with it the door would still ${verdict.verdict} ${asked.method} ${asked.url}${by}${words}`,
    });
  });
  return results;
}
