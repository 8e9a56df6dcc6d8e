import { errorMessage } from "../errors.ts";
import {
  describeTrust,
  loadTrustStore,
  readUpstreamCa,
  type TrustSource,
} from "../gateway/trust-store.ts";
import { connectDocker, dockerEndpoint } from "./docker.ts";
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
  docker: { ok: boolean; endpoint: string; version?: string; error?: string };
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
    runtimes?: WantedRuntimes;
  } = {},
): Promise<DoctorReport> {
  const name = options.image ?? BOX_IMAGE;
  const endpoint = await dockerEndpoint(options.env);
  const report: DoctorReport = {
    docker: { ok: false, endpoint: endpoint.describe },
    image: { name, present: false },
    trust: gatewayTrust(options.env ?? process.env, options.upstreamCa ?? []),
  };
  let docker: Awaited<ReturnType<typeof connectDocker>>;
  try {
    docker = await connectDocker(options.env);
  } catch (error) {
    report.docker.error = errorMessage(error);
    return report;
  }
  const version = await docker.client.version().catch(() => undefined);
  report.docker = {
    ok: true,
    endpoint: docker.describe,
    ...(version ? { version: version.Version } : {}),
  };

  report.runtime = await runtimeReport(
    docker.client,
    options.runtimes ?? { org: DEFAULT_RUNTIME, workers: {} },
    options.env,
  ).catch((error: unknown) => ({
    org: DEFAULT_RUNTIME,
    workers: {},
    ok: false,
    runsc: { name: "runsc", registered: false, missingArgs: [] },
    error: errorMessage(error),
  }));

  try {
    const info = await docker.client.getImage(name).inspect();
    const labels = info.Config?.Labels ?? {};
    report.image = {
      name,
      present: true,
      id: info.Id,
      sizeBytes: info.Size,
      created: info.Created,
      engineVersion: labels[LABELS.engineVersion] ?? "unknown",
      base: labels[LABELS.baseImage] ?? "unknown",
      extensions: splitList(labels[LABELS.extensions]),
      contract: labels[LABELS.box] ?? "(none)",
    };
    if (name === BOX_IMAGE || labels[LABELS.tag] === name)
      report.image.current =
        labels[LABELS.source] === (await sourceHash({ env: options.env ?? process.env }));
  } catch (error) {
    if ((error as { statusCode?: unknown }).statusCode !== 404) throw error;
  }

  return report;
}

/** The gateway reads the same stores from the same environment when it starts (upstreams.ts). */
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
    report.docker.ok
      ? `${mark(true)} docker   ${report.docker.version ?? "(version unknown)"} at ${report.docker.endpoint}`
      : `${mark(false)} docker   ${report.docker.error}`,
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
  } else if (report.docker.ok) {
    lines.push(`${mark(false)} image    ${image.name} is missing: run \`roster box build\``);
  }
  // Docker down is the one thing to fix first: said alone, as the image is
  if (!report.docker.ok) return lines.join("\n");
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
