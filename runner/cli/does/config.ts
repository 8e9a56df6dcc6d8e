/**
 * What `roster init | validate | login` do: set up the roots, check every
 * config file, and put credentials in the vault. The CLI only declares these
 * commands; this module is loaded when one runs.
 */
import { createInterface } from "node:readline/promises";
import { rosterPaths } from "../../ground/config/paths.ts";
import { knownProvider } from "../../ground/config/providers.ts";
import { RosterError } from "../../ground/errors.ts";

/** `roster init`: the config, data and state roots, never overwriting what is there. */
export async function initCommand(): Promise<void> {
  const { initRoots } = await import("./init.ts");
  const paths = rosterPaths();
  const created = await initRoots(paths);
  process.stdout.write(
    created.length
      ? `created:\n${created.map((p) => `  ${p}`).join("\n")}\n`
      : `already set up at ${paths.config}\n`,
  );
}

/** `roster validate`: every problem as file:line: field: message, the toolchains repos declare, and the policy's [[test]] cases. */
export async function validateCommand(flags: { json?: boolean }): Promise<void> {
  const { formatConfigError, loadConfig } = await import("../../ground/config/load.ts");
  const { workerView } = await import("../../ground/config/worker-view.ts");
  const { projectToolchains } = await import("../../ground/config/project-toolchain.ts");
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
  // the policy's own tests, asked of the door's ruling once the config reads whole
  let tests = 0;
  if (!config.errors.length) {
    const { runPolicyTests } = await import("../../boundary/gateway/policy/tests.ts");
    const run = runPolicyTests(config);
    tests = run.ran;
    config.errors.push(...run.failures);
  }
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ ok: config.errors.length === 0, errors: config.errors, warnings: config.warnings, notices: config.notices, tests })}\n`,
    );
  } else {
    for (const warning of config.warnings) process.stderr.write(`warning: ${warning}\n`);
    for (const notice of config.notices)
      process.stderr.write(`notice: ${formatConfigError(notice)}\n`);
    for (const error of config.errors) process.stdout.write(`${formatConfigError(error)}\n`);
    if (config.errors.length === 0)
      process.stdout.write(
        `config ok (${paths.config}): ${config.workers.size} worker(s), ${config.grants.length} rule(s), ${tests} policy test(s) passed\n`,
      );
  }
  if (config.errors.length) process.exitCode = 2;
}

/** `roster login`: a model key (from the environment or typed), or named fields with --field. */
export async function loginCommand(
  credential: string,
  flags: { field?: string[]; expires?: string },
): Promise<void> {
  const paths = rosterPaths();
  const { originOf } = await import("./connection-age.ts");
  const origin = { command: "login", ...originOf(flags.expires) };
  if (flags.field?.length) {
    const fields: Record<string, string> = {};
    for (const entry of flags.field) {
      const at = entry.indexOf("=");
      if (at < 1) throw new RosterError(`--field ${entry}: expected name=value`, { exitCode: 2 });
      fields[entry.slice(0, at)] = entry.slice(at + 1);
    }
    const { storeCredential } = await import("../../work/runs/credentials.ts");
    await storeCredential(paths.vault, credential, fields, origin);
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
  const { storeCredential } = await import("../../work/runs/credentials.ts");
  await storeCredential(paths.vault, credential, { key }, origin);
  process.stdout.write(
    `stored credential "${credential}" in ${paths.vault} (mode 0600; only the gateway reads it)\n`,
  );
}
