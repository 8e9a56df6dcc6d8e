/**
 * What `roster box build | doctor | prune` do: build the box and toolchain
 * images, report on the engine and runtime, and drop toolchains no worker uses.
 * The CLI only declares these commands; this module is loaded when one runs.
 */

import type { BoxEngine, EngineKind } from "../../boundary/box/engine.ts";
import { BOX_IMAGE } from "../../boundary/box/layout.ts";
import { configuredEngine } from "../../ground/config/configured-engine.ts";
import { RosterError } from "../../ground/errors.ts";

export interface BuildFlags {
  worker?: string;
  agent?: string;
  base: string;
  tag: string;
  rebuildBase?: boolean;
  cache: boolean;
  verbose?: boolean;
  json?: boolean;
}

export interface DoctorFlags {
  image: string;
  json?: boolean;
  fix?: boolean;
}

/**
 * What doctor reads of this root's config: `[gateway] upstream_ca`, and the
 * runtime each worker's box gets (nothing, and runc, when there is no root or
 * it can't be read).
 */
async function doctorConfig(): Promise<{
  upstreamCa: string[];
  runtimes: { org: string; workers: Record<string, string> };
  kind?: EngineKind;
}> {
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const { loadConfig } = await import("../../ground/config/load.ts");
  const { narrowestBox } = await import("../../ground/config/narrowing.ts");
  try {
    const config = loadConfig(rosterPaths().config);
    const workers: Record<string, string> = {};
    for (const [name, worker] of config.workers)
      workers[name] = narrowestBox(config.org.box, worker.box).runtime;
    const kind = config.org.engine?.kind;
    return {
      upstreamCa: config.org.gateway?.upstream_ca ?? [],
      runtimes: { org: narrowestBox(config.org.box, undefined).runtime, workers },
      ...(kind ? { kind } : {}),
    };
  } catch {
    return { upstreamCa: [], runtimes: { org: "runc", workers: {} } };
  }
}

/** `--fix`: the set-up gVisor needs, done before the report so the report shows its result. */
async function fixRunsc(
  kind: EngineKind | undefined,
): Promise<{ text: string; json: { fix: object } }> {
  const { connectEngine } = await import("../../boundary/box/connect.ts");
  const { formatSetup, setUpRunsc } = await import("../../boundary/box/runtime-setup.ts");
  const setup = await setUpRunsc(await connectEngine(kind ? { kind } : {}));
  return { text: formatSetup(setup), json: { fix: setup } };
}

/** `roster box build`: the box image, or with --worker that worker's toolchain image on it. */
export async function buildImageCommand(flags: BuildFlags): Promise<void> {
  const { connectEngine } = await import("../../boundary/box/connect.ts");
  const { buildBoxImage, formatBytes } = await import("../../boundary/box/image-build.ts");
  const { consoleProgress } = await import("../../boundary/box/progress.ts");
  const engine = await connectEngine(await configuredEngine());
  if (flags.worker) return buildToolchainImage(engine, flags.worker, flags);
  if (flags.agent) return buildAgentLayer(engine, flags.agent, flags);
  const built = await buildBoxImage({
    engine,
    progress: consoleProgress({ verbose: flags.verbose ?? false }),
    base: flags.base,
    tag: flags.tag,
    rebuildBase: flags.rebuildBase ?? false,
    noCache: !flags.cache,
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(built)}\n`);
    return;
  }
  process.stdout.write(
    [
      `built ${built.tag} in ${built.seconds.toFixed(1)}s`,
      `  image    ${built.id}`,
      `  size     ${formatBytes(built.sizeBytes)}`,
      `  engine   pi ${built.engineVersion}`,
      `  base     ${built.base}`,
      `  tools    ${built.extensions.length ? built.extensions.join(", ") : "(no extensions)"}`,
      "",
    ].join("\n"),
  );
}

/** `roster box doctor`: the report, after `--fix` when asked so the report shows its result. */
export async function doctorCommand(flags: DoctorFlags): Promise<void> {
  const { boxDoctor, formatDoctor } = await import("../../boundary/box/doctor.ts");
  const config = await doctorConfig();
  const fix = flags.fix ? await fixRunsc(config.kind) : undefined;
  const report = await boxDoctor({ image: flags.image, ...config });
  // the vault is the host's side of the boundary: whether its secrets are sealed at rest
  const { vaultLine } = await import("./connection-age.ts");
  const vault = vaultLine();
  // the host's Node: the machine's, or the one `npm ci` brought in where the machine's is too old
  const { hostNode, hostNodeOrigin } = await import("../../ground/host-node.ts");
  const node = hostNode();
  // the logs that grow with the deployment, and what [retention] keeps of them
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const { doctorLogs, formatDoctorLogs } = await import("./doctor-logs.ts");
  const paths = rosterPaths();
  const logs = await doctorLogs(paths);
  if (flags.json)
    process.stdout.write(
      `${JSON.stringify({ ...report, ...vault.json, node, logs, ...fix?.json })}\n`,
    );
  else {
    // an engine that is down is the one thing to fix first: a vault that is fine waits its turn
    const vaultText =
      report.engine.ok || !vault.ok ? `${vault.ok ? "ok " : "-- "} vault    ${vault.line}\n` : "";
    const nodeText = report.engine.ok
      ? `ok  node     ${node.version} at ${node.path} (${hostNodeOrigin(node)})\n`
      : "";
    const logsText =
      report.engine.ok || !logs.ok ? `${formatDoctorLogs(logs, paths).join("\n")}\n` : "";
    process.stdout.write(
      `${fix ? `${fix.text}\n` : ""}${formatDoctor(report)}\n${vaultText}${nodeText}${logsText}`,
    );
  }
  if (
    !report.engine.ok ||
    !report.image.present ||
    report.runtime?.ok === false ||
    !vault.ok ||
    !logs.ok
  )
    process.exitCode = 1;
}

/** `roster box build --worker`: that worker's toolchain image, on the box image (built first if missing). */
async function buildToolchainImage(
  engine: BoxEngine,
  workerName: string,
  flags: BuildFlags,
): Promise<void> {
  const { buildBoxImage } = await import("../../boundary/box/image-build.ts");
  const { consoleProgress } = await import("../../boundary/box/progress.ts");
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const { loadWorker } = await import("../../work/runs/start-1-provision.ts");
  const { ensureWorkerImage } = await import("../../boundary/box/worker-image.ts");
  const { deploymentKey } = await import("../../boundary/box/tools-volume.ts");
  const { projectToolchains, withProjects } = await import(
    "../../ground/config/project-toolchain.ts"
  );
  const { worker, config } = await loadWorker(rosterPaths(), workerName);
  const image = config.org.engine?.image ?? BOX_IMAGE;
  const progress = consoleProgress({ verbose: flags.verbose ?? false });
  if (!(await engine.image(image)))
    await buildBoxImage({ engine, progress, base: flags.base, tag: image });
  const built = await ensureWorkerImage({
    engine,
    baseImage: image,
    worker: worker.name,
    agent: worker.agent,
    toolchain: withProjects(worker.toolchain, (await projectToolchains(worker.mounts)).toolchain),
    progress,
    deployment: deploymentKey(config.root),
  });
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ worker: worker.name, agent: worker.agent, ...built, built: built.builtNow.length > 0, toolchain: worker.toolchain })}\n`
      : built.tag === image
        ? `${worker.name} runs pi and declares no [toolchain]: its runs use ${image}\n`
        : built.builtNow.length
          ? `built ${built.builtNow.join(" and ")} in ${built.seconds.toFixed(1)}s\n`
          : `${built.tag} is current (neither the box image, the agent nor the declaration changed)\n`,
  );
}

/** `roster box build --agent`: that agent's layer on the box image (built first if missing). */
async function buildAgentLayer(engine: BoxEngine, agent: string, flags: BuildFlags): Promise<void> {
  const { buildBoxImage } = await import("../../boundary/box/image-build.ts");
  const { consoleProgress } = await import("../../boundary/box/progress.ts");
  const { ensureAgentImage } = await import("../../boundary/box/agent-image.ts");
  if (agent !== "claude" && agent !== "codex")
    throw new RosterError(`--agent: "${agent}" is not an agent with a layer (claude or codex)`, {
      exitCode: 2,
    });
  const image = flags.tag;
  const progress = consoleProgress({ verbose: flags.verbose ?? false });
  if (!(await engine.image(image)))
    await buildBoxImage({ engine, progress, base: flags.base, tag: image });
  const built = await ensureAgentImage({ engine, baseImage: image, agent, progress });
  const size = (await engine.image(built.tag))?.sizeBytes ?? 0;
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ agent, ...built, sizeBytes: size })}\n`
      : built.built
        ? `built ${built.tag} in ${built.seconds.toFixed(1)}s\n`
        : `${built.tag} is current (neither the box image nor the pin changed)\n`,
  );
}

/** `roster box prune`: toolchain images and volumes no current worker uses. */
export async function pruneToolchainsCommand(flags: { json?: boolean }): Promise<void> {
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const { loadValidConfig } = await import("../../ground/config/valid-config.ts");
  const { connectEngine } = await import("../../boundary/box/connect.ts");
  const { pruneToolchains } = await import("../../boundary/box/prune.ts");
  const { formatBytes } = await import("../../boundary/box/image-build.ts");
  const paths = rosterPaths();
  // pruning by a config that can't be read could remove what a worker still uses
  const config = loadValidConfig(paths, "nothing was pruned");
  const engine = await connectEngine(
    config.org.engine?.kind ? { kind: config.org.engine.kind } : {},
  );
  const report = await pruneToolchains(engine, config, config.org.engine?.image ?? BOX_IMAGE);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  for (const item of report.removed)
    process.stdout.write(`removed ${item.kind} ${item.name} (${formatBytes(item.bytes)})\n`);
  for (const item of report.kept)
    process.stdout.write(`kept ${item.kind} ${item.name}: ${item.why}\n`);
  process.stdout.write(
    `${report.removed.length ? `freed ${formatBytes(report.freedBytes)}` : "nothing to prune"}\n`,
  );
}
