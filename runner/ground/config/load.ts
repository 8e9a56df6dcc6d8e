import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { ActionGrant, Scoped, TrustRule } from "./action-schema.ts";
import { agentDenyGrants, agentFor, checkAgent } from "./agent.ts";
import { BotBindings } from "./bot-bindings.ts";
import { type CompiledMeter, compileMeters } from "./budget-cel.ts";
import type { ConfigError } from "./config-error.ts";
import { type OrgConfig, orgSchema, type WorkerConfig, workerSchema } from "./config-schema.ts";
import {
  CONNECTION_KINDS,
  type ConnectionConfig,
  type ConnectionFile,
} from "./connection-schema.ts";
import { mountProblem, serviceGrants } from "./connections.ts";
import { checkEngineDir } from "./engine-dir.ts";
import {
  checkCeilings,
  checkExposes,
  checkGateGrants,
  checkGrantHosts,
  checkModel,
  checkNoProxy,
  checkUniqueNames,
  checkZone,
  reservedEnvProblem,
} from "./field-checks.ts";
import type { ScopedGrant, ScopedLimit } from "./grant-schema.ts";
import { KNOWLEDGE_REPO } from "./knowledge.ts";
import { locateLine } from "./locate.ts";
import { checkMcpNames, mcpConnectionNameProblem } from "./mcp-servers.ts";
import { modelGrant } from "./model.ts";
import { checkNarrowing, scopeOrgGrants, scopeToWorkers, workerDenyGrants } from "./narrowing.ts";
import type { PlacedTest } from "./policy-test-schema.ts";
import { placeTests } from "./policy-tests.ts";
import { adoptPublicOrg, adoptPublicWorker, noteKnowledgeDefault } from "./public-config.ts";
import { readConnectionFile } from "./public-connection.ts";
import { modelFromConnections } from "./public-model.ts";
import { type ProviderTemplates, readProviders } from "./public-providers.ts";
import type { PublicFile } from "./public-spelling.ts";
import { workerSubject } from "./subject.ts";
import { readToml, validateToml } from "./toml-file.ts";
import { checkWebhooks } from "./webhooks.ts";
import { spellWriteFrom } from "./write-from.ts";

/**
 * Loads and validates the operator's config: org.toml, every
 * workers/<w>/worker.toml and connections/<name>.toml. Every problem is
 * collected (not just the first) as `file:line: field: message`; a config with
 * any error is unusable, and callers fail closed on it.
 */
export { type ConfigError, formatConfigError } from "./config-error.ts";

export interface LoadedConfig {
  root: string;
  org: OrgConfig;
  workers: Map<string, WorkerConfig>;
  connections: Map<string, ConnectionConfig>;
  /** Workers' deny grants first, so no broader allow pre-empts them; then connection, model, org. */
  grants: ScopedGrant[];
  /** Action grants and trust rules, scope stamped (org.toml's; a worker's trust rules gate only). */
  actions: Scoped<ActionGrant>[];
  trust: Scoped<TrustRule>[];
  /** org.toml's meters, their CEL compiled once here (budget-cel.ts). */
  meters: CompiledMeter[];
  limits: ScopedLimit[];
  /** `[[test]]` cases of org.toml and each worker.toml, placed (policy-tests.ts). */
  tests: PlacedTest[];
  errors: ConfigError[];
  warnings: string[];
  /**
   * Where the config is spelled as the public roster spells it and ours means
   * it differently or spells it otherwise (public-spelling.ts): accepted, and
   * said by `roster validate`, one line each, never on every run.
   */
  notices: ConfigError[];
}

const CONNECTION_NAME = /^[a-z0-9_-]+$/;

export function loadConfig(root: string, options: { vaultDir?: string } = {}): LoadedConfig {
  const errors: ConfigError[] = [];
  const loaded: LoadedConfig = {
    root,
    org: {},
    workers: new Map(),
    connections: new Map(),
    grants: [],
    actions: [],
    trust: [],
    meters: [],
    limits: [],
    tests: [],
    errors,
    warnings: [],
    notices: [],
  };
  const workersDir = join(root, "workers");
  const reading: Reading = {
    loaded,
    errors,
    // paths under the working directory read short; anything else stays absolute
    show: (path: string) => {
      const near = relative(process.cwd(), path);
      return near && !near.startsWith("..") ? near : path;
    },
    names: existsSync(workersDir)
      ? readdirSync(workersDir, { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => entry.name)
          .sort()
      : [],
    providers: new Map(),
  };
  const providersFile = join(root, "providers.toml");
  reading.providers = readProviders(
    providersFile,
    reading.show(providersFile),
    errors,
    loaded.notices,
  );
  // the order of the grants is the order of precedence: a worker's own denials first
  const org = readOrg(reading, join(root, "org.toml"));
  const workerGrants = readWorkers(reading, workersDir);
  const connectionGrants = readConnections(reading, join(root, "connections"), options.vaultDir);
  if (org.anyRun) noteKnowledgeDefault(org.anyRun, loaded.connections);
  // the public roster's deployments name their model by a connection (public-model.ts)
  if (!loaded.org.model) {
    const model = modelFromConnections(
      loaded.connections,
      (path) => reading.show(join(root, path)),
      loaded.notices,
      errors,
    );
    if (model) loaded.org.model = model;
  }
  // an MCP connection allows every tool of its server: it comes after org.toml's grants, so
  // those can deny or gate some of its tools and the connection answers for the rest
  const isMcp = (grant: ScopedGrant) =>
    loaded.connections.get(grant.name.replace(/^connection:/, ""))?.kind === "mcp";
  loaded.grants = [
    ...workerGrants,
    ...connectionGrants.filter((grant) => !isMcp(grant)),
    ...org.modelGrants,
    ...org.orgGrants,
    ...connectionGrants.filter(isMcp),
  ];
  for (const [name, worker] of loaded.workers) {
    const file = join(workersDir, name, "worker.toml");
    const text = worker.mcp ? readFileSync(file, "utf8") : "";
    errors.push(...checkMcpNames(loaded.connections, name, worker, reading.show(file), text));
  }
  if (options.vaultDir) warnUnstoredExposures(loaded, options.vaultDir);
  return loaded;
}

/** What every part of one load shares: the result so far, its errors, how paths show, the workers' names. */
interface Reading {
  loaded: LoadedConfig;
  errors: ConfigError[];
  show: (path: string) => string;
  names: string[];
  /** providers.toml's header templates, for a grant's `inject.provider` (public-providers.ts). */
  providers: ProviderTemplates;
}

/** org.toml: its checks, its scoped grants, actions and trust, the model's grant, budgets. */
function readOrg(
  reading: Reading,
  orgFile: string,
): { orgGrants: ScopedGrant[]; modelGrants: ScopedGrant[]; anyRun?: PublicFile } {
  const { loaded, errors, show, names } = reading;
  const none = { orgGrants: [], modelGrants: [] };
  if (!existsSync(orgFile)) return none;
  const raw = readToml(orgFile, show(orgFile), errors);
  if (!raw) return none;
  // the public roster's spellings read as ours first, each said (public-config.ts)
  const at: PublicFile = { file: show(orgFile), text: raw.text, notices: loaded.notices, errors };
  const adopted = adoptPublicOrg(raw.value, at, reading.providers);
  const org = validateToml<OrgConfig>(raw, show(orgFile), orgSchema(), errors);
  if (!org) return none;
  spellWriteFrom(org.value.knowledge);
  const where = show(orgFile);
  checkGrantHosts(org.value.grant, where, org.text, errors);
  checkNoProxy(org.value.gateway?.upstream_no_proxy, where, org.text, errors);
  checkGateGrants(org.value.grant, where, org.text, errors);
  checkUniqueNames("grant", org.value.grant, where, org.text, errors);
  checkUniqueNames("action", org.value.action, where, org.text, errors);
  checkModel(org.value.model, where, org.text, errors);
  checkExposes(org.value.expose, where, org.text, errors);
  checkCeilings(org.value, where, org.text, errors);
  checkZone(org.value, where, org.text, errors);
  checkEngineDir(org.value, where, org.text, errors);
  checkAgent(org.value, undefined, where, org.text, errors);
  checkWebhooks(org.value.webhook, names, where, org.text, errors);
  loaded.org = org.value;
  loaded.tests.push(...placeTests(org.value.test, where, org.text, undefined, errors));
  const orgGrants = scopeOrgGrants(org.value.grant, names, where, org.text, errors);
  loaded.actions = scopeToWorkers(org.value.action, "action", names, where, org.text, errors);
  loaded.trust = scopeToWorkers(org.value.trust, "trust", names, where, org.text, errors);
  const modelGrants =
    org.value.model && !errors.length ? [modelGrant(org.value.model, "org", where)] : [];
  loaded.meters.push(
    ...compileMeters(org.value.budget?.meter ?? [], {
      file: where,
      text: org.text,
      errors,
      notices: loaded.notices,
    }),
  );
  for (const limit of org.value.budget?.limit ?? []) loaded.limits.push({ ...limit, scope: "org" });
  return { orgGrants, modelGrants, ...(adopted.anyRun ? { anyRun: at } : {}) };
}

/** Each workers/<name>/worker.toml: checked, narrowed against the org, its grants and limits. */
function readWorkers(reading: Reading, workersDir: string): ScopedGrant[] {
  const { loaded, errors, show, names } = reading;
  const workerGrants: ScopedGrant[] = [];
  const bindings = new BotBindings();
  for (const name of names) {
    const file = join(workersDir, name, "worker.toml");
    if (!existsSync(file)) continue;
    const raw = readToml(file, show(file), errors);
    if (!raw) continue;
    const at: PublicFile = { file: show(file), text: raw.text, notices: loaded.notices, errors };
    adoptPublicWorker(raw.value, at, loaded.org, reading.providers);
    const worker = validateToml<WorkerConfig>(raw, show(file), workerSchema(), errors);
    if (!worker) continue;
    spellWriteFrom(worker.value.knowledge);
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
    checkExposes(worker.value.expose, show(file), worker.text, errors);
    checkUniqueNames("mcp", worker.value.mcp, show(file), worker.text, errors);
    checkCeilings({ box: worker.value.box ?? {} }, show(file), worker.text, errors);
    errors.push(...checkNarrowing(loaded.org, worker.value, show(file), worker.text));
    checkAgent(loaded.org, worker.value, show(file), worker.text, errors);
    errors.push(...bindings.claim(name, worker.value.channels, show(file), worker.text));
    loaded.workers.set(name, worker.value);
    loaded.tests.push(...placeTests(worker.value.test, show(file), worker.text, name, errors));
    // no model grant of its own: a worker's [model] keeps the org's endpoint and credential
    workerGrants.push(...workerDenyGrants(worker.value, show(file)));
    workerGrants.push(...agentDenyGrants(agentFor(loaded.org, worker.value), name, show(file)));
    // a worker's own gating rules come before the org's, so they can only make more wait
    loaded.trust.unshift(
      ...(worker.value.trust ?? [])
        .filter((rule) => rule.level === "gate")
        .map((rule) => ({ ...rule, scope: workerSubject(name), source: show(file) })),
    );
    for (const limit of worker.value.budget?.limit ?? [])
      loaded.limits.push({ ...limit, scope: workerSubject(name) });
  }
  return workerGrants;
}

/** Each connections/<name>.toml: its kind, its checks, the grants it compiles to. */
/** What a well-formed connection file still may not say: where, and why. */
function connectionProblem(
  name: string,
  connection: ConnectionConfig,
  text: string,
): Omit<ConfigError, "file"> | undefined {
  const mount = mountProblem(connection);
  if (mount) return { line: locateLine(text, "/path"), field: "path", message: mount };
  if (connection.kind === "mcp") {
    const named = mcpConnectionNameProblem(name);
    return named ? { line: 1, field: "(file name)", message: named } : undefined;
  }
  const reserved =
    connection.kind === undefined || connection.kind === "service"
      ? reservedEnvProblem(connection.env)
      : undefined;
  return reserved ? { line: locateLine(text, "/env"), field: "env", message: reserved } : undefined;
}

function readConnections(
  reading: Reading,
  connectionsDir: string,
  vaultDir: string | undefined,
): ScopedGrant[] {
  const { loaded, errors, show, names } = reading;
  const connectionGrants: ScopedGrant[] = [];
  const connectionFiles = existsSync(connectionsDir)
    ? readdirSync(connectionsDir)
        .filter((f) => f.endsWith(".toml"))
        .sort()
    : [];
  for (const fileName of connectionFiles) {
    const name = fileName.slice(0, -".toml".length);
    const file = join(connectionsDir, fileName);
    if (!CONNECTION_NAME.test(name)) {
      errors.push({
        file: show(file),
        line: 1,
        field: "(file name)",
        message: "connection names are lower-case letters, digits, '_' or '-'",
      });
      continue;
    }
    if (name === KNOWLEDGE_REPO) {
      errors.push({
        file: show(file),
        line: 1,
        field: "(file name)",
        message: `"${KNOWLEDGE_REPO}" is reserved for every worker's own knowledge repo (data/workers/<w>/knowledge.git); rename the file`,
      });
      continue;
    }
    const raw = readToml(file, show(file), errors);
    if (!raw) continue;
    const kind = (raw.value as { kind?: unknown }).kind ?? "service";
    const variant = typeof kind === "string" ? CONNECTION_KINDS[kind] : undefined;
    if (!variant) {
      errors.push({
        file: show(file),
        line: locateLine(raw.text, "/kind"),
        field: "kind",
        message: `must be one of ${Object.keys(CONNECTION_KINDS).join(", ")} (found ${JSON.stringify(kind)})`,
      });
      continue;
    }
    const spelled = validateToml<ConnectionFile>(raw, show(file), variant, errors);
    // the public roster's spellings read into ours, each difference said (public-connection.ts)
    const connection =
      spelled &&
      readConnectionFile(spelled.value, {
        name,
        file: show(file),
        text: raw.text,
        workers: names,
        declared: (provider) => reading.providers.get(provider),
        errors,
        notices: loaded.notices,
      });
    if (!connection) continue;
    const problem = connectionProblem(name, connection, raw.text);
    if (problem) {
      errors.push({ file: show(file), ...problem });
      continue;
    }
    loaded.connections.set(name, connection);
    const compiled = serviceGrants(name, connection, show(file), vaultDir);
    connectionGrants.push(...compiled.grants);
    if (compiled.warning) loaded.warnings.push(compiled.warning);
  }
  return connectionGrants;
}

/** An exposure whose credential is not in the vault gives the box a placeholder: said, not refused. */
function warnUnstoredExposures(loaded: LoadedConfig, vaultDir: string): void {
  const exposures = [
    ...(loaded.org.expose ?? []).map((expose) => ({ expose, where: "org.toml" })),
    ...[...loaded.workers].flatMap(([name, worker]) =>
      (worker.expose ?? []).map((expose) => ({ expose, where: `workers/${name}/worker.toml` })),
    ),
  ];
  for (const { expose, where } of exposures) {
    if (!existsSync(join(vaultDir, `${expose.credential}.json`))) {
      loaded.warnings.push(
        `${where}: ${expose.env} exposes credential "${expose.credential}", which is not in the vault: the box gets a placeholder nothing will replace`,
      );
    }
  }
}
