import type { Command } from "commander";
import { BOX_IMAGE, DEFAULT_BASE } from "../box/layout.ts";

// Implementations load when a command runs, so `roster --help` stays instant.

interface BuildFlags {
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
}

export function registerBoxCommands(program: Command): void {
  const box = program.command("box").description("the box image and the container engine");

  box
    .command("build")
    .description(
      "build the box image (builds a base from Debian packages when no registry answers)",
    )
    .option("--base <image>", "base image the Dockerfile builds on", DEFAULT_BASE)
    .option("--tag <image>", "tag for the built image", BOX_IMAGE)
    .option("--rebuild-base", "rebuild the Debian-built base even if one is cached")
    .option("--no-cache", "ignore the layer cache")
    .option("-v, --verbose", "show every line of build output")
    .option("--json", "print the result as JSON on stdout")
    .action(async (flags: BuildFlags) => {
      const { connectDocker } = await import("../box/docker.ts");
      const { buildBoxImage, formatBytes } = await import("../box/image-build.ts");
      const { consoleProgress } = await import("../box/progress.ts");
      const { client } = await connectDocker();
      const built = await buildBoxImage({
        docker: client,
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
    .description("check Docker, the box image and the locked network")
    .option("--image <image>", "box image to inspect", BOX_IMAGE)
    .option("--json", "print the report as JSON on stdout")
    .action(async (flags: DoctorFlags) => {
      const { boxDoctor, formatDoctor } = await import("../box/doctor.ts");
      const report = await boxDoctor({ image: flags.image });
      process.stdout.write(
        flags.json ? `${JSON.stringify(report)}\n` : `${formatDoctor(report)}\n`,
      );
      if (!report.docker.ok || !report.image.present) process.exitCode = 1;
    });
}
