import type { LoadedConfig } from "../../../ground/config/load.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import type { TelemetrySection } from "../../../ground/config/server-schema.ts";
import { actionSpans } from "../../../ground/telemetry/action-spans.ts";
import { tracingFor } from "../../../ground/telemetry/tracing.ts";
import { parseByteSize } from "../../../ground/text/byte-size.ts";
import { checkVaultOpens } from "../../../ground/vault/vault-file.ts";
import { watchJournal } from "../../../records/journal/journal.ts";
import { AUDIT_MAX_PER_RUN_DEFAULT, AuditLog, type DecisionRecord } from "../audit/audit.ts";
import type { DoorMetrics } from "../audit/door-metrics.ts";
import { bodyBudgetFor } from "../bodies/budget.ts";
import { Credentials } from "../credentials/inject.ts";
import { readCredential } from "../credentials/vault.ts";
import type { ActionHandler, ActionHostFactory } from "../exchange/action-host.ts";
import type { ServerDeps } from "../exchange/server.ts";
import { testedConfigSource } from "../policy/vetting.ts";
import type { ConfigSource } from "../settings/config-source.ts";
import { type GatewayTimeouts, resolveTimeouts } from "../settings/defaults.ts";
import { type BudgetBook, Budgets } from "../spend/budget.ts";
import { type BudgetLink, SharedBudgets } from "../spend/shared-budgets.ts";
import { CertificateAuthority } from "../trust/ca.ts";
import { ClosedPorts } from "../upstream/closed-ports.ts";
import { upstreamsFor } from "../upstream/pools.ts";

/**
 * What every proxy server of one gateway process shares, wired in one place
 * for the gateway (gateway.ts) and for each of its shards (shard.ts).
 */
export interface DepsOptions {
  paths: RosterPaths;
  actions: ActionHostFactory;
  timeouts?: Partial<GatewayTimeouts>;
  closedPorts?: number[];
}

/** What a shard takes from its parent rather than keeping its own. */
export interface SharedParts {
  /** The parent's counters, asked over the link. */
  budgets: BudgetLink;
  /** The parent's action host, asked over the link. */
  actions: ActionHandler;
  /** How many shards share the held-body bound. */
  of: number;
}

/** This process's own counters, or (a shard's) the parent's through the link; kept to the config. */
function budgetsFor(config: ConfigSource, paths: RosterPaths, shared?: SharedParts): BudgetBook {
  const loaded = config.get();
  const prices = (org: LoadedConfig["org"]) => org.budget?.price ?? [];
  if (shared) {
    const book = new SharedBudgets(shared.budgets, prices(loaded.org));
    config.onChange((next) => book.reconfigure(prices(next.org)));
    return book;
  }
  const own = new Budgets(paths.audit, loaded.meters, loaded.limits, prices(loaded.org));
  config.onChange((next) => own.reconfigure(next.meters, next.limits, prices(next.org)));
  return own;
}

/** What every proxy server of one gateway shares: config, audit, budgets, upstreams, the desk. */
export async function serverDeps(
  options: DepsOptions,
  /** A shard's: the budgets and the action host are its parent's (shard.ts). */
  shared?: SharedParts,
): Promise<ServerDeps> {
  const { paths } = options;
  // a sealed vault its key does not open stops the start with one line naming the file
  checkVaultOpens(paths.vault);
  const config = testedConfigSource(paths.config, { vaultDir: paths.vault });
  const loaded = config.get();
  const section = loaded.org.gateway ?? {};
  const ca = await CertificateAuthority.open(paths.ca);
  const auditShare = (org: typeof loaded.org) =>
    parseByteSize(org.gateway?.audit_max_per_run ?? AUDIT_MAX_PER_RUN_DEFAULT);
  const audit = new AuditLog(paths.audit, auditShare(loaded.org));
  // each line names the config that judged it, which the history keeps (keepTaken)
  audit.configDigest = () => config.digest;
  config.onChange((next) => {
    audit.maxPerRun = auditShare(next.org);
  });
  const budgets = budgetsFor(config, paths, shared);
  const timeouts = resolveTimeouts(section.timeouts, options.timeouts);
  // the console's and the gateway's own ports are closed by every gateway (embedded ones
  // too), by name and by the address a name resolves to
  const closed = ClosedPorts.forConfig(loaded.org, options.closedPorts);
  // the parent proxy's credential is read from the vault at each new tunnel, never kept
  const upstreams = upstreamsFor(section, timeouts, closed, (name) =>
    readCredential(paths.vault, name),
  );
  const maxBodyBytes = section.max_body_bytes ?? 64 * 1024 * 1024;
  // held bodies are bounded per process: a shard holds its share of the whole bound
  const bodies = bodyBudgetFor(maxBodyBytes, shared?.of ?? 1);
  // counted and traced only where a monitoring stack reads them: the libraries load for nobody else
  const metrics = await watchDoor(audit, loaded.org.telemetry);
  return {
    ...(metrics ? { metrics } : {}),
    config,
    audit,
    budgets,
    upstreams,
    actions: shared ? shared.actions : options.actions(paths, config),
    credentials: new Credentials({ vaultDir: paths.vault, auditDir: paths.audit, upstreams }),
    maxBodyBytes,
    bodies,
    closed,
    ca,
    identityDir: paths.identity,
    configRoot: paths.config,
    resolve: upstreams.options.resolve,
    timeouts,
  };
}

/**
 * What telemetry asks of the door, told of every audit line from now on: its
 * metrics (`metrics_listen`), returned for /metrics, and its decisions as
 * spans under their runs (`otlp_endpoint`), sent before the audit log closes.
 */
async function watchDoor(
  audit: AuditLog,
  telemetry: TelemetrySection | undefined,
): Promise<DoorMetrics | undefined> {
  const observers: Array<(record: DecisionRecord, seconds: number) => void> = [];
  let metrics: DoorMetrics | undefined;
  if (telemetry?.metrics_listen) {
    const { DoorMetrics } = await import("../audit/door-metrics.ts");
    const made = new DoorMetrics();
    metrics = made;
    observers.push((record, seconds) => made.record(record, seconds));
  }
  const tracing = tracingFor(telemetry?.otlp_endpoint, "roster-gateway");
  if (tracing) {
    const { doorSpans } = await import("../audit/door-spans.ts");
    const traced = await tracing;
    observers.push(doorSpans(traced));
    // the action host answers in this process: its decisions join their runs' traces
    watchJournal(actionSpans(traced));
    audit.onClose = () => traced.shutdown().catch(() => undefined);
  }
  if (observers.length)
    audit.observer = (record, seconds) => {
      for (const observe of observers) observe(record, seconds);
    };
  return metrics;
}
