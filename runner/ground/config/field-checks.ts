import { ceilingProblem } from "./ceiling.ts";
import type { ConfigError } from "./config-error.ts";
import type { ModelSection } from "./config-schema.ts";
import { hostPatternProblem } from "./host-pattern.ts";
import { locateLine } from "./locate.ts";
import { zoneProblem } from "./time-zone.ts";

/** Checks of single fields the schema can't express, each reported as file:line: field: message. */
export function checkGrantHosts(
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

/** `[gateway] upstream_no_proxy`: host patterns as grants spell them. */
export function checkNoProxy(
  patterns: string[] | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  (patterns ?? []).forEach((pattern, index) => {
    const problem = hostPatternProblem(pattern);
    if (!problem) return;
    errors.push({
      file: display,
      line: locateLine(text, "/gateway/upstream_no_proxy"),
      field: `gateway.upstream_no_proxy.${index}`,
      message: `${JSON.stringify(pattern)}: ${problem}`,
    });
  });
}

/**
 * A `verdict = "gate"` grant holds MCP tool calls for the desk, so it must say
 * which: a `match.mcp.tool` (and a host, so its credential has one server).
 */
export function checkGateGrants(
  grants: { verdict: string; match?: { host?: unknown; mcp?: { tool?: unknown } } }[] | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  (grants ?? []).forEach((grant, index) => {
    if (grant.verdict !== "gate") return;
    const missing =
      grant.match?.mcp?.tool === undefined
        ? "mcp.tool"
        : grant.match.host === undefined
          ? "host"
          : undefined;
    if (!missing) return;
    errors.push({
      file: display,
      line: locateLine(text, `/grant/${index}/verdict`),
      field: `grant.${index}.match.${missing}`,
      message: `a "gate" grant holds MCP tool calls for approval: it needs match.${missing} (e.g. match = { host = "mcp.example.com", mcp = { tool = "create_*" } })`,
    });
  });
}

/** Env names the box contract owns: an exposure may not shadow them. */
const RESERVED_ENV =
  /^(HOME|TMPDIR|PATH|PI_CODING_AGENT_DIR|ANTHROPIC_API_KEY|OPENAI_API_KEY|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE|GIT_SSL_CAINFO|PIP_CERT|NODE_USE_ENV_PROXY|NO_PROXY|HTTPS?_PROXY|GIT_CONFIG_.*|ROSTER_.*)$/;

/** A service connection's `env` names the variable its sentinel rides in: never one the box contract sets. */
export function reservedEnvProblem(env: string | undefined): string | undefined {
  return env && RESERVED_ENV.test(env)
    ? `${env} is reserved by the box contract; pick another name`
    : undefined;
}

export function checkExposes(
  exposes: { env: string }[] | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  (exposes ?? []).forEach((expose, index) => {
    if (RESERVED_ENV.test(expose.env)) {
      errors.push({
        file: display,
        line: locateLine(text, `/expose/${index}/env`),
        field: `expose.${index}.env`,
        message: `${expose.env} is reserved by the box contract; pick another name`,
      });
    }
  });
}

export function checkModel(
  model: ModelSection | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  if (model?.provider === "openai-compatible" && !model.base_url) {
    errors.push({
      file: display,
      line: locateLine(text, "/model/provider"),
      field: "model.base_url",
      message: "required for provider openai-compatible",
    });
  }
}

/**
 * Names in one table must differ where they apply to the same worker: the
 * audit names the grant that decided, and an action's name is the intent a
 * worker proposes; two with one name for one worker would make either
 * ambiguous. The same name for different workers (`workers = [...]` lists
 * that don't meet) is how a rule says something per worker.
 */
export function checkUniqueNames(
  table: string,
  items: { name: string; workers?: string[] | undefined }[] | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const meet = (a: string[] | undefined, b: string[] | undefined) =>
    !a || !b || a.some((worker) => b.includes(worker));
  const list = items ?? [];
  list.forEach((item, index) => {
    const earlier = list.findIndex(
      (other, at) => at < index && other.name === item.name && meet(other.workers, item.workers),
    );
    if (earlier < 0) return;
    errors.push({
      file: display,
      line: locateLine(text, `/${table}/${index}/name`),
      field: `${table}.${index}.name`,
      message: `"${item.name}" is already the name of [[${table}]] ${earlier} (line ${locateLine(text, `/${table}/${earlier}/name`)}) for the same workers; each needs a name of its own`,
    });
  });
}

/** org.toml's `[schedule] timezone`: a zone this host's Intl knows. */
export function checkZone(
  value: { schedule?: { timezone?: string } },
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const zone = value.schedule?.timezone;
  const problem = zone === undefined ? undefined : zoneProblem(zone);
  if (problem)
    errors.push({
      file: display,
      line: locateLine(text, "/schedule/timezone"),
      field: "schedule.timezone",
      message: problem,
    });
}

/** Every ceiling a file sets ([box] session and turn ceilings, a heartbeat's) against the one bound. */
export function checkCeilings(
  value: {
    box?: { session_ceiling_min?: number; turn_ceiling_min?: number };
    heartbeat?: { ceiling_min?: number }[];
  },
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const check = (minutes: number | undefined, pointer: string, field: string) => {
    const problem = minutes === undefined ? undefined : ceilingProblem(minutes);
    if (problem)
      errors.push({ file: display, line: locateLine(text, pointer), field, message: problem });
  };
  check(value.box?.session_ceiling_min, "/box/session_ceiling_min", "box.session_ceiling_min");
  check(value.box?.turn_ceiling_min, "/box/turn_ceiling_min", "box.turn_ceiling_min");
  for (const [index, rule] of (value.heartbeat ?? []).entries())
    check(rule.ceiling_min, `/heartbeat/${index}/ceiling_min`, `heartbeat.${index}.ceiling_min`);
}
