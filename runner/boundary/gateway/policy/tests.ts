import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { ConfigError } from "../../../ground/config/config-error.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import type { PlacedTest } from "../../../ground/config/policy-test-schema.ts";
import { type PolicyVerdict, policyCheck } from "./check.ts";

/**
 * The config's `[[test]]` cases run: each request asked of the door's own
 * ruling (check.ts) under this config, and held to what it expects. A case
 * it gets wrong is said as a config error at the test's line — the request,
 * what was expected and what the door would do — so `roster validate`
 * refuses a policy whose tests fail, exactly as it refuses a broken one.
 */
export function runPolicyTests(config: LoadedConfig): { ran: number; failures: ConfigError[] } {
  const failures: ConfigError[] = [];
  for (const placed of config.tests) {
    const failure = failureOf(config, placed);
    if (failure)
      failures.push({
        file: placed.file,
        line: placed.line,
        field: `test.${placed.index}`,
        message: failure,
      });
  }
  return { ran: config.tests.length, failures };
}

function failureOf(config: LoadedConfig, placed: PlacedTest): string | undefined {
  const { test } = placed;
  if (!config.workers.has(placed.worker))
    return `${test.request}: no worker named "${placed.worker}" sends it`;
  const space = test.request.indexOf(" ");
  const method = test.request.slice(0, space);
  const url = test.request.slice(space + 1);
  let body: Buffer | undefined;
  if (test.body_file) {
    const file = resolve(dirname(placed.file), test.body_file);
    try {
      body = readFileSync(file);
    } catch {
      return `${test.request}: its body_file ${file} can't be read`;
    }
  }
  const verdict = policyCheck(config, {
    worker: placed.worker,
    method,
    url,
    ...(test.headers ? { headers: test.headers } : {}),
    ...(body ? { body } : {}),
    ...(test.channel ? { channel: test.channel } : {}),
  });
  const wrongVerdict = verdict.verdict !== test.expect;
  const wrongRule = test.rule !== undefined && verdict.rule !== test.rule;
  if (!wrongVerdict && !wrongRule) return undefined;
  const expected = `${test.expect}${test.rule ? ` by rule "${test.rule}"` : ""}`;
  return `${test.request} (worker ${placed.worker}): expected ${expected}, the door would ${got(verdict)}`;
}

function got(verdict: PolicyVerdict): string {
  const by = verdict.rule
    ? ` by rule "${verdict.rule}"${verdict.source ? ` (${verdict.source})` : ""}`
    : " by no rule";
  return `${verdict.verdict}${by}`;
}
