import type { Command } from "commander";
import type { EngineKind } from "../box/engine.ts";
import { BOX_IMAGE, DEFAULT_BASE } from "../box/layout.ts";
import { errorMessage, RosterError, userFailure } from "../errors.ts";
import { configuredEngine } from "./configured-engine.ts";

// Implementations load when a command runs, so `roster --help` stays instant.

interface BuildFlags {
  worker?: string;
  base: string;
  tag: string;
  rebuildBase?: boolean;
  cache: boolean;
  verbose?: boolean;
  json?: boolean;
}

interface DoctorFlags {
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
  const { rosterPaths } = await import("../config/paths.ts");
  const { loadConfig } = await import("../config/load.ts");
  const { narrowestBox } = await import("../config/narrowing.ts");
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
  const { connectEngine } = await import("../box/connect.ts");
  const { formatSetup, setUpRunsc } = await import("../box/runtime-setup.ts");
  const setup = await setUpRunsc(await connectEngine(kind ? { kind } : {}));
  return { text: formatSetup(setup), json: { fix: setup } };
}

export function registerBoxCommands(program: Command): void {
  const box = program.command("box").description("the box image and the container engine");

  box
    .command("build")
    .description(
      "build the box image (builds a base from Debian packages when no registry answers)",
    )
    .option("--worker <name>", "build that worker's toolchain image (on the box image) instead")
    .option("--base <image>", "base image the Dockerfile builds on", DEFAULT_BASE)
    .option("--tag <image>", "tag for the built image", BOX_IMAGE)
    .option("--rebuild-base", "rebuild the Debian-built base even if one is cached")
    .option("--no-cache", "ignore the layer cache")
    .option("-v, --verbose", "show every line of build output")
    .option("--json", "print the result as JSON on stdout")
    .action(async (flags: BuildFlags) => {
      const { connectEngine } = await import("../box/connect.ts");
      const { buildBoxImage, formatBytes } = await import("../box/image-build.ts");
      const { consoleProgress } = await import("../box/progress.ts");
      const engine = await connectEngine(await configuredEngine());
      if (flags.worker) {
        const { rosterPaths } = await import("../config/paths.ts");
        const { loadWorker } = await import("../runs/provision.ts");
        const { ensureToolchainImage } = await import("../box/toolchain-image.ts");
        const { deploymentKey } = await import("../box/tools-volume.ts");
        const { projectToolchains, withProjects } = await import("../config/project-toolchain.ts");
        const { worker, config } = await loadWorker(rosterPaths(), flags.worker);
        const image = config.org.engine?.image ?? BOX_IMAGE;
        const progress = consoleProgress({ verbose: flags.verbose ?? false });
        if (!(await engine.image(image)))
          await buildBoxImage({ engine, progress, base: flags.base, tag: image });
        const toolchain = await ensureToolchainImage({
          engine,
          baseImage: image,
          worker: worker.name,
          toolchain: withProjects(
            worker.toolchain,
            (await projectToolchains(worker.mounts)).toolchain,
          ),
          progress,
          deployment: deploymentKey(config.root),
        });
        process.stdout.write(
          flags.json
            ? `${JSON.stringify({ worker: worker.name, ...toolchain, toolchain: worker.toolchain })}\n`
            : toolchain.tag === image
              ? `${worker.name} declares no [toolchain]: its runs use ${image}\n`
              : toolchain.built
                ? `built ${toolchain.tag} in ${toolchain.seconds.toFixed(1)}s\n`
                : `${toolchain.tag} is current (neither the box image nor the declaration changed)\n`,
        );
        return;
      }
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
    });

  box
    .command("doctor")
    .description(
      "check the container engine, the box image, the box runtime and the locked network",
    )
    .option("--image <image>", "box image to inspect", BOX_IMAGE)
    .option("--json", "print the report as JSON on stdout")
    .option("--fix", "register gVisor (runsc) with dockerd and reload it: the one-time set-up")
    .action(async (flags: DoctorFlags) => {
      const { boxDoctor, formatDoctor } = await import("../box/doctor.ts");
      const config = await doctorConfig();
      const fix = flags.fix ? await fixRunsc(config.kind) : undefined;
      const report = await boxDoctor({ image: flags.image, ...config });
      if (flags.json) process.stdout.write(`${JSON.stringify({ ...report, ...fix?.json })}\n`);
      else process.stdout.write(`${fix ? `${fix.text}\n` : ""}${formatDoctor(report)}\n`);
      if (!report.engine.ok || !report.image.present || report.runtime?.ok === false)
        process.exitCode = 1;
    });

  box
    .command("exec")
    .description(
      "run one command in a fresh box of a worker (its mounts, lockdown and gateway; no model) and print a JSON envelope",
    )
    .argument("<worker>", "the worker whose box it is")
    .argument("<command...>", "after --: the command, run by bash -o pipefail -c in ~/workspace")
    .option("--timeout <secs>", "kill the box after this many seconds", "600")
    .option("--local", "start the box from this process even when a server is running")
    .action(
      async (worker: string, words: string[], flags: { timeout: string; local?: boolean }) => {
        const timeoutSecs = Number(flags.timeout);
        if (!Number.isInteger(timeoutSecs) || timeoutSecs < 1)
          throw new RosterError(
            `--timeout must be a whole number of seconds (got "${flags.timeout}")`,
            { exitCode: 2 },
          );
        // the timeout is the box's ceiling: the one bound every run has
        const { ceilingProblem } = await import("../config/ceiling.ts");
        const problem = ceilingProblem(timeoutSecs / 60);
        if (problem) throw new RosterError(problem, { exitCode: 2 });
        const command = words.join(" ").trim();
        if (!command) throw new RosterError("the command is empty", { exitCode: 2 });
        const { rosterPaths } = await import("../config/paths.ts");
        const paths = rosterPaths();
        const abort = new AbortController();
        const onSignal = () => abort.abort();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        const started = Date.now();
        const note = (text: string) => process.stderr.write(`${text}\n`);
        try {
          const envelope = await (async () => {
            if (!flags.local) {
              // a running server takes it: its gateway, engine connection and modules are warm
              const { execThroughServer } = await import("../server/run-client.ts");
              const handed = await execThroughServer(
                paths,
                { worker, command, timeout_secs: timeoutSecs },
                { note, signal: abort.signal },
              );
              if (handed) return handed;
            }
            const { runExec } = await import("../runs/exec.ts");
            return runExec({ paths, worker, command, timeoutSecs, signal: abort.signal, note });
          })().catch((error: unknown) => {
            // the box never started (config, the engine, the gateway): still one envelope, and exit 2
            process.exitCode = userFailure(error)?.exitCode ?? 1;
            return {
              status: "error" as const,
              stdout: "",
              stderr: "",
              exit_code: null,
              duration_ms: Date.now() - started,
              error: errorMessage(error),
            };
          });
          process.stdout.write(`${JSON.stringify(envelope)}\n`);
          const { execExitCode } = await import("../runs/exec-envelope.ts");
          process.exitCode ??= execExitCode(envelope);
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      },
    );

  const copy =
    (direction: "in" | "out") =>
    async (worker: string, from: string, to: string, flags: { json?: boolean }) => {
      const { rosterPaths } = await import("../config/paths.ts");
      const { loadWorker } = await import("../runs/provision.ts");
      const store = await import("../store/copy.ts");
      const paths = rosterPaths();
      await loadWorker(paths, worker);
      const bytes =
        direction === "in"
          ? await store.copyIntoStore(paths, worker, from, to)
          : await store.copyOutOfStore(paths, worker, from, to);
      const storePath = direction === "in" ? to : from;
      process.stdout.write(
        flags.json
          ? `${JSON.stringify({ worker, direction, store_path: storePath, bytes })}\n`
          : `copied ${bytes} bytes ${direction === "in" ? `into ${worker}'s store at ${to}` : `from ${worker}'s store to ${to}`}\n`,
      );
    };
  box
    .command("cp-in")
    .description("copy one host file into a worker's store (never outside it)")
    .argument("<worker>")
    .argument("<host-file>")
    .argument("<store-path>", "a path inside the store, e.g. notes/today.md")
    .option("--json", "print the result as JSON")
    .action(copy("in"));
  box
    .command("cp-out")
    .description("copy one file out of a worker's store to the host")
    .argument("<worker>")
    .argument("<store-path>")
    .argument("<host-file>")
    .option("--json", "print the result as JSON")
    .action(copy("out"));

  box
    .command("prune")
    .description(
      "remove toolchain images and volumes no current worker uses (never what a running box holds)",
    )
    .option("--json", "print the report as JSON")
    .action(async (flags: { json?: boolean }) => {
      const { rosterPaths } = await import("../config/paths.ts");
      const { formatConfigError, loadConfig } = await import("../config/load.ts");
      const { connectEngine } = await import("../box/connect.ts");
      const { pruneToolchains } = await import("../box/prune.ts");
      const { formatBytes } = await import("../box/image-build.ts");
      const paths = rosterPaths();
      const config = loadConfig(paths.config, { vaultDir: paths.vault });
      // pruning by a config that can't be read could remove what a worker still uses
      if (config.errors.length)
        throw new RosterError(
          `config is invalid, nothing was pruned:\n${config.errors.map(formatConfigError).join("\n")}`,
          { exitCode: 2 },
        );
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
    });
}
