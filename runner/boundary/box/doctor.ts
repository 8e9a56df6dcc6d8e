import { errorMessage } from "../../ground/errors.ts";
import {
  describeTrust,
  loadTrustStore,
  readUpstreamCa,
  type TrustSource,
} from "../gateway/trust/trust-store.ts";
import { connectEngine, engineEndpoint } from "./connect.ts";
import type { BoxEngine, EngineKind } from "./engine.ts";
import { splitList } from "./image-build.ts";
import { BOX_CONTRACT, BOX_IMAGE, LABELS } from "./layout.ts";
import { DEFAULT_RUNTIME } from "./runtime.ts";
import {
  formatRuntime,
  type RuntimeReport,
  runtimeReport,
  type WantedRuntimes,
} from "./runtime-report.ts";
import { sourceHash } from "./source-hash.ts";

/** What `roster box doctor` found: enough to tell a user what to fix first. */
export interface DoctorReport {
  /** The container engine: which kind, where, its version, or why it can't be reached. */
  engine: { ok: boolean; kind: EngineKind; endpoint: string; version?: string; error?: string };
  image: {
    name: string;
    present: boolean;
    id?: string;
    sizeBytes?: number;
    created?: string;
    engineVersion?: string;
    base?: string;
    extensions?: string[];
    /** The box contract it was built for (layout.ts BOX_CONTRACT). */
    contract?: string;
    /**
     * Whether it was built from the extensions/, box/ and engine/ on disk now
     * (its source label against a fresh hash); undefined for an image that is
     * not roster's own, which is never rebuilt for you.
     */
    current?: boolean;
  };
  /** The stores a gateway started from this environment verifies upstream TLS against. */
  trust: { ok: boolean; sources: TrustSource[]; error?: string };
  /** Which runtime boxes get and whether the engine has it (asked once Docker answers). */
  runtime?: RuntimeReport;
}

export async function boxDoctor(
  options: {
    image?: string;
    env?: NodeJS.ProcessEnv;
    upstreamCa?: string[];
    kind?: EngineKind;
    runtimes?: WantedRuntimes;
  } = {},
): Promise<DoctorReport> {
  const name = options.image ?? BOX_IMAGE;
  const where = {
    ...(options.env ? { env: options.env } : {}),
    ...(options.kind ? { kind: options.kind } : {}),
  };
  const endpoint = engineEndpoint(where);
  const report: DoctorReport = {
    engine: { ok: false, kind: endpoint.kind, endpoint: endpoint.describe },
    image: { name, present: false },
    trust: gatewayTrust(options.env ?? process.env, options.upstreamCa ?? []),
  };
  let engine: BoxEngine;
  try {
    engine = await connectEngine(where);
  } catch (error) {
    report.engine.error = errorMessage(error);
    return report;
  }
  const version = await engine.version();
  report.engine = { ...report.engine, ok: true, ...(version ? { version } : {}) };

  report.runtime = await runtimeReport(
    engine,
    options.runtimes ?? { org: DEFAULT_RUNTIME, workers: {} },
    options.env,
  ).catch((error: unknown) => ({
    org: DEFAULT_RUNTIME,
    workers: {},
    ok: false,
    runsc: { name: "runsc", registered: false, missingArgs: [] },
    error: errorMessage(error),
  }));

  const info = await engine.image(name);
  if (info) {
    const labels = info.labels;
    report.image = {
      name,
      present: true,
      id: info.id,
      sizeBytes: info.sizeBytes,
      created: info.created,
      engineVersion: labels[LABELS.engineVersion] ?? "unknown",
      base: labels[LABELS.baseImage] ?? "unknown",
      extensions: splitList(labels[LABELS.extensions]),
      contract: labels[LABELS.box] ?? "(none)",
    };
    if (name === BOX_IMAGE || labels[LABELS.tag] === name)
      report.image.current =
        labels[LABELS.source] === (await sourceHash({ env: options.env ?? process.env }));
  }

  return report;
}

/** The gateway reads the same stores from the same environment when it starts (gateway/upstream/pools.ts). */
function gatewayTrust(env: NodeJS.ProcessEnv, upstreamCa: string[]): DoctorReport["trust"] {
  try {
    return { ok: true, sources: loadTrustStore(env, readUpstreamCa(upstreamCa)).sources };
  } catch (error) {
    return { ok: false, sources: [], error: errorMessage(error) };
  }
}

export function formatDoctor(report: DoctorReport): string {
  const mark = (ok: boolean) => (ok ? "ok " : "-- ");
  const lines: string[] = [];
  lines.push(
    report.engine.ok
      ? `${mark(true)} engine   ${report.engine.version ?? `${report.engine.kind} (version unknown)`} at ${report.engine.endpoint}`
      : `${mark(false)} engine   ${report.engine.error}`,
  );
  const image = report.image;
  if (image.present) {
    lines.push(
      `${mark(true)} image    ${image.name} (${image.id?.slice(7, 19)}, ${Math.round((image.sizeBytes ?? 0) / 1e6)} MB, built ${image.created})`,
    );
    lines.push(`    engine   pi ${image.engineVersion} on ${image.base}`);
    lines.push(
      `    tools    ${image.extensions?.length ? image.extensions.join(", ") : "(no extensions)"}`,
    );
    if (image.contract !== BOX_CONTRACT) {
      lines.push(
        `${mark(false)} contract built for box contract ${image.contract}, roster needs ${BOX_CONTRACT}: run \`roster box build\``,
      );
    }
    if (image.current === false) {
      lines.push(
        `${mark(false)} sources  extensions/, box/ or engine/ changed since it was built: the next run rebuilds it (or \`roster box build\` now)`,
      );
    }
  } else if (report.engine.ok) {
    lines.push(`${mark(false)} image    ${image.name} is missing: run \`roster box build\``);
  }
  // the engine down is the one thing to fix first: said alone, as the image is
  if (!report.engine.ok) return lines.join("\n");
  const { trust } = report;
  if (!trust.ok) lines.push(`${mark(false)} trust    ${trust.error}`);
  else {
    const [first, ...rest] = describeTrust(trust.sources);
    lines.push(`${mark(true)} trust    upstream TLS is verified against ${first}`);
    for (const line of rest) lines.push(`             + ${line}`);
  }
  if (report.runtime) lines.push(...formatRuntime(report.runtime));
  return lines.join("\n");
}
