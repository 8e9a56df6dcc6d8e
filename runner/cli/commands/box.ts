/**
 * `roster box …`: declares the box image and container engine commands — their
 * arguments, flags and help. What each does lives in
 * runner/cli/does/box*.ts.
 */
import type { Command } from "commander";
import { BOX_IMAGE, DEFAULT_BASE } from "../../boundary/box/layout.ts";
import type { BuildFlags, DoctorFlags } from "../does/box.ts";
import type { ExecFlags } from "../does/worker-box.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesBox = () => import("../does/box.ts");
const doesWorkerBox = () => import("../does/worker-box.ts");

export function registerBoxCommands(program: Command): void {
  const box = program.command("box").description("the box image and the container engine");

  box
    .command("build")
    .description(
      "build the box image (builds a base from Debian packages when no registry answers)",
    )
    .option(
      "--worker <name>",
      "build that worker's image (its agent's layer and toolchain on the box image) instead",
    )
    .option(
      "--agent <agent>",
      "build that agent's layer (claude or codex) on the box image instead",
    )
    .option("--base <image>", "base image the Dockerfile builds on", DEFAULT_BASE)
    .option("--tag <image>", "tag for the built image", BOX_IMAGE)
    .option("--rebuild-base", "rebuild the Debian-built base even if one is cached")
    .option("--no-cache", "ignore the layer cache")
    .option("-v, --verbose", "show every line of build output")
    .option("--json", "print the result as JSON on stdout")
    .action(async (flags: BuildFlags) => (await doesBox()).buildImageCommand(flags));

  box
    .command("doctor")
    .description(
      "check the container engine, the box image, the box runtime and the locked network",
    )
    .option("--image <image>", "box image to inspect", BOX_IMAGE)
    .option("--json", "print the report as JSON on stdout")
    .option("--fix", "register gVisor (runsc) with dockerd and reload it: the one-time set-up")
    .action(async (flags: DoctorFlags) => (await doesBox()).doctorCommand(flags));

  box
    .command("exec")
    .description(
      "run one command in a fresh box of a worker (its mounts, lockdown and gateway; no model) and print a JSON envelope",
    )
    .argument("<worker>", "the worker whose box it is")
    .argument("<command...>", "after --: the command, run by bash -o pipefail -c in ~/workspace")
    .option("--timeout <secs>", "kill the box after this many seconds", "600")
    .option("--local", "start the box from this process even when a server is running")
    .action(async (worker: string, words: string[], flags: ExecFlags) =>
      (await doesWorkerBox()).execCommand(worker, words, flags),
    );

  box
    .command("cp-in")
    .description("copy one host file into a worker's store (never outside it)")
    .argument("<worker>")
    .argument("<host-file>")
    .argument("<store-path>", "a path inside the store, e.g. notes/today.md")
    .option("--json", "print the result as JSON")
    .action(async (worker: string, from: string, to: string, flags: { json?: boolean }) =>
      (await doesWorkerBox()).copyCommand("in", worker, from, to, flags),
    );
  box
    .command("cp-out")
    .description("copy one file out of a worker's store to the host")
    .argument("<worker>")
    .argument("<store-path>")
    .argument("<host-file>")
    .option("--json", "print the result as JSON")
    .action(async (worker: string, from: string, to: string, flags: { json?: boolean }) =>
      (await doesWorkerBox()).copyCommand("out", worker, from, to, flags),
    );

  box
    .command("prune")
    .description(
      "remove toolchain images and volumes no current worker uses (never what a running box holds)",
    )
    .option("--json", "print the report as JSON")
    .action(async (flags: { json?: boolean }) => (await doesBox()).pruneToolchainsCommand(flags));
}
