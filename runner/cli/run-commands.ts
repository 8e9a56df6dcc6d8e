import { createInterface } from "node:readline/promises";
import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { knownProvider } from "../config/providers.ts";
import { RosterError } from "../errors.ts";

export function registerRunCommands(program: Command): void {
  program
    .command("init")
    .description("create the config, data and state roots with one worker, elf (never overwrites)")
    .action(async () => {
      const { initRoots } = await import("../config/init.ts");
      const paths = rosterPaths();
      const created = await initRoots(paths);
      process.stdout.write(
        created.length
          ? `created:\n${created.map((p) => `  ${p}`).join("\n")}\n`
          : `already set up at ${paths.config}\n`,
      );
    });

  program
    .command("validate")
    .description("check every config file; prints file:line: field: message per problem")
    .option("--json", "print the problems as JSON")
    .action(async (flags: { json?: boolean }) => {
      const { formatConfigError, loadConfig, workerView } = await import("../config/load.ts");
      const { projectToolchains } = await import("../config/project-toolchain.ts");
      const paths = rosterPaths();
      const config = loadConfig(paths.config, { vaultDir: paths.vault });
      // the toolchains projects declare in the repos workers mount, each repo once
      if (!config.errors.length) {
        const seen = new Set<string>();
        for (const name of config.workers.keys()) {
          const mounts = (workerView(config, name)?.mounts ?? []).filter(
            (mount) => !seen.has(mount.name),
          );
          for (const mount of mounts) seen.add(mount.name);
          config.errors.push(...(await projectToolchains(mounts)).errors);
        }
      }
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ ok: config.errors.length === 0, errors: config.errors, warnings: config.warnings })}\n`,
        );
      } else {
        for (const warning of config.warnings) process.stderr.write(`warning: ${warning}\n`);
        for (const error of config.errors) process.stdout.write(`${formatConfigError(error)}\n`);
        if (config.errors.length === 0)
          process.stdout.write(
            `config ok (${paths.config}): ${config.workers.size} worker(s), ${config.grants.length} rule(s)\n`,
          );
      }
      if (config.errors.length) process.exitCode = 2;
    });

  program
    .command("login <credential>")
    .description(
      "store a credential in the vault: a model key (from ANTHROPIC_API_KEY / OPENAI_API_KEY, or a prompt), or named fields",
    )
    .option(
      "--field <name=value>",
      "store this field (repeatable), e.g. --field host=smtp.example.com --field port=465",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(async (credential: string, flags: { field?: string[] }) => {
      const paths = rosterPaths();
      if (flags.field?.length) {
        const fields: Record<string, string> = {};
        for (const entry of flags.field) {
          const at = entry.indexOf("=");
          if (at < 1)
            throw new RosterError(`--field ${entry}: expected name=value`, { exitCode: 2 });
          fields[entry.slice(0, at)] = entry.slice(at + 1);
        }
        const { storeCredential } = await import("../runs/credentials.ts");
        await storeCredential(paths.vault, credential, fields);
        process.stdout.write(
          `stored credential "${credential}" (${Object.keys(fields).join(", ")}) in ${paths.vault} (mode 0600; never in a box)\n`,
        );
        return;
      }
      const envName = knownProvider(credential)?.keyEnv;
      let key = envName ? process.env[envName] : undefined;
      if (!key) {
        if (!process.stdin.isTTY) {
          throw new RosterError(
            `no key for "${credential}": set ${envName ?? "the key"} or run this in a terminal to type it`,
            { exitCode: 2 },
          );
        }
        const rl = createInterface({ input: process.stdin, output: process.stderr });
        key = (await rl.question(`key for ${credential}: `)).trim();
        rl.close();
      }
      if (!key) throw new RosterError("no key given; nothing stored", { exitCode: 2 });
      const { storeCredential } = await import("../runs/credentials.ts");
      await storeCredential(paths.vault, credential, { key });
      process.stdout.write(
        `stored credential "${credential}" in ${paths.vault} (mode 0600; only the gateway reads it)\n`,
      );
    });

  program
    .command("run <worker> <prompt...>")
    .description("run a worker once in a locked box and print its answer")
    .option("--ceiling <minutes>", "wall-clock limit in minutes", "30")
    .option("--json", "stream pi's JSON events on stdout instead of the readable view")
    .option("--local", "start the box from this process even when a server is running")
    .action(
      async (
        worker: string,
        words: string[],
        flags: { ceiling: string; json?: boolean; local?: boolean },
      ) => {
        const ceiling_min = Number(flags.ceiling);
        if (Number.isNaN(ceiling_min))
          throw new RosterError(
            `--ceiling must be a positive number of minutes (got "${flags.ceiling}")`,
            { exitCode: 2 },
          );
        // refused here as the run owner would refuse it, before anything starts
        const { ceilingProblem } = await import("../config/ceiling.ts");
        const problem = ceilingProblem(ceiling_min);
        if (problem) throw new RosterError(problem, { exitCode: 2 });
        const prompt = words.join(" ").trim();
        if (!prompt) throw new RosterError("the prompt is empty", { exitCode: 2 });
        const paths = rosterPaths();
        const { initRoots } = await import("../config/init.ts");
        const created = await initRoots(paths);
        if (created.some((path) => path.endsWith("org.toml")))
          process.stderr.write(`roster: initialised ${paths.config} from org.example.toml\n`);
        const abort = new AbortController();
        const onSignal = () => abort.abort();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        try {
          if (!flags.local) {
            // a running server takes the run: its gateway, engine connection and modules are warm
            const { runThroughServer } = await import("../server/run-client.ts");
            const handed = await runThroughServer(
              paths,
              { worker, prompt, ceiling_min, json: flags.json ?? false },
              {
                write: (text) => process.stdout.write(text),
                note: (text) => process.stderr.write(`${text}\n`),
                signal: abort.signal,
              },
            );
            if (handed) {
              const r = handed.run;
              if (!flags.json && r)
                process.stderr.write(
                  `run ${r.id}: ${r.state} (${r.ended_by}${r.exit_code !== undefined ? `, exit ${r.exit_code}` : ""}; run by the server)\n`,
                );
              process.exitCode = handed.exitCode;
              return;
            }
          }
          const { runOneShot } = await import("../runs/oneshot.ts");
          const result = await runOneShot({
            paths,
            worker,
            prompt,
            ceiling_min,
            json: flags.json ?? false,
            signal: abort.signal,
            write: (text) => process.stdout.write(text),
            note: (text) => process.stderr.write(`${text}\n`),
          });
          if (!flags.json && result.record) {
            const r = result.record;
            process.stderr.write(
              `run ${r.id}: ${r.state} (${r.ended_by}${r.exit_code !== undefined ? `, exit ${r.exit_code}` : ""})\n`,
            );
          }
          process.exitCode = result.exitCode;
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      },
    );

  const runs = program.command("runs").description("run records");
  runs
    .command("ls")
    .description("recent runs, newest first")
    .option("--worker <worker>", "only this worker's runs")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print JSON rows")
    .action(async (flags: { worker?: string; limit: string; json?: boolean }) => {
      const paths = rosterPaths();
      try {
        const { connectEngine } = await import("../box/connect.ts");
        const { configuredEngine } = await import("./configured-engine.ts");
        const { reapAndRecord } = await import("../runs/provision.ts");
        const engine = await connectEngine(await configuredEngine());
        await reapAndRecord(engine, paths, (text) => process.stderr.write(`${text}\n`));
      } catch {
        // without an engine the records are still worth showing
      }
      const { formatRows, runRows } = await import("../runs/runs-view.ts");
      const rows = runRows(paths.state, flags.worker, Number(flags.limit) || 20);
      process.stdout.write(flags.json ? `${JSON.stringify(rows)}\n` : `${formatRows(rows)}\n`);
    });
  runs
    .command("prune")
    .description(
      "drop the $HOME and repo clones of runs that ended longer ago than --older-than (default [store] scratch_keep); their records stay",
    )
    .option("--older-than <age>", 'an age like "3d", "12h", "90m" or "0s"')
    .option("--worker <worker>", "only this worker's runs")
    .option("--json", "print what was dropped as JSON")
    .action(async (flags: { olderThan?: string; worker?: string; json?: boolean }) => {
      const { pruneRunsCommand } = await import("../runs/prune-command.ts");
      await pruneRunsCommand(rosterPaths(), flags);
    });
  runs
    .command("show <run>")
    .description(
      "one run: its record, model tokens and cost, task, conversation and files (any unique prefix of its id)",
    )
    .action(async (prefix: string) => {
      const { findRun } = await import("../runs/run-record.ts");
      const { showRun } = await import("../runs/runs-view.ts");
      const paths = rosterPaths();
      const found = findRun(paths.state, prefix);
      if ("error" in found) throw new RosterError(found.error, { exitCode: 2 });
      process.stdout.write(`${showRun(found, paths.audit)}\n`);
    });
}
