import { type Command, Option } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";

// Implementations load when a command runs, so `roster --help` stays instant.

interface AddFlags {
  from: string;
  host?: string[];
  url?: string;
  path?: string;
  rw?: boolean;
  worker?: string[];
  org?: boolean;
  field?: string[];
  secretEnv?: string;
  secret?: string;
  verify?: boolean;
  verifyPath?: string;
  as?: string;
}

const repeat = (value: string, previous: string[] = []) => [...previous, value];

const NO_SECRET_ARGUMENT =
  "a secret is never taken on the command line (shell history, ps): pipe it on stdin, name an env variable with --secret-env, or type it when asked";

/** `roster connection …`: services, host folders and repos a worker may use, from recipes. */
export function registerConnectionCommands(program: Command): void {
  const connection = program
    .command("connection")
    .description("what workers may reach: connections/<name>.toml from recipes, and their secrets");

  connection
    .command("catalog")
    .description("the built-in recipes: what each grants and what the gateway injects")
    .option("--json", "print the recipes as JSON")
    .action(async (flags: { json?: boolean }) => {
      const { RECIPES, grantsOf, injectsOf } = await import("../connections/recipes.ts");
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(RECIPES, null, 2)}\n`);
        return;
      }
      for (const recipe of RECIPES) {
        process.stdout.write(
          `${recipe.name}\n  ${recipe.summary}\n  grants:  ${grantsOf(recipe)}\n  injects: ${injectsOf(recipe)}\n${recipe.verify ? `  verify:  ${recipe.verify.method} ${recipe.verify.path}\n` : ""}`,
        );
      }
    });

  connection
    .command("add <name>")
    .description(
      "write connections/<name>.toml from a recipe and store its secret (from stdin, --secret-env, or asked for)",
    )
    .requiredOption("--from <recipe>", "the recipe (roster connection catalog)")
    .option("--host <host>", "the API's host, instead of the recipe's (repeatable)", repeat)
    .option("--url <url>", "mcp: the server's https:// endpoint")
    .option("--path <folder>", "host-dir / host-repo: the folder on the host")
    .option("--rw", "host-dir: mounted read-write")
    .option("--worker <worker>", "grant it to this worker (repeatable)", repeat)
    .option("--org", "grant it to every worker")
    .option(
      "--field <name=value>",
      "a non-secret vault field beside the secret (smtp: port, user, from)",
      repeat,
    )
    .option("--secret-env <VAR>", "read the secret from this environment variable")
    .option("--verify", "then make one real call through the gateway and say whether it works")
    .option("--verify-path <path>", "the path --verify asks for (bearer: default /)")
    .option("--as <worker>", "verify as this grantee (default: the first)")
    .addOption(new Option("--secret <value>").hideHelp())
    .action(async (name: string, flags: AddFlags) => {
      if (flags.secret !== undefined) throw new RosterError(NO_SECRET_ARGUMENT, { exitCode: 2 });
      const { addConnection } = await import("../connections/manage.ts");
      const { readSecret } = await import("../connections/secret-input.ts");
      const paths = rosterPaths();
      const added = await addConnection(paths, {
        name,
        from: flags.from,
        hosts: flags.host ?? [],
        ...(flags.url !== undefined ? { url: flags.url } : {}),
        ...(flags.path !== undefined ? { path: flags.path } : {}),
        ...(flags.rw ? { readWrite: true } : {}),
        edges: [...(flags.worker ?? []), ...(flags.org ? ["org"] : [])],
        ...(flags.verifyPath !== undefined ? { verifyPath: flags.verifyPath } : {}),
        fields: parseFields(flags.field ?? []),
        secret: () => readSecret({ label: name, secretEnv: flags.secretEnv }),
      });
      if (added.file)
        process.stdout.write(`wrote ${added.file} (from recipe ${added.recipe.name})\n`);
      if (added.stored)
        process.stdout.write(
          `stored its secret in ${added.stored} (mode 0600; only the gateway reads it)\n`,
        );
      if (added.recipe.note) process.stdout.write(`note: ${added.recipe.note}\n`);
      if (flags.verify) await verifyAndSay(name, flags);
    });

  connection
    .command("secret <name>")
    .description("store or replace a connection's secret (from stdin, --secret-env, or asked for)")
    .option("--secret-env <VAR>", "read the secret from this environment variable")
    .option("--verify", "then make one real call through the gateway and say whether it works")
    .option("--as <worker>", "verify as this grantee (default: the first)")
    .addOption(new Option("--secret <value>").hideHelp())
    .action(
      async (
        name: string,
        flags: { secretEnv?: string; secret?: string; verify?: boolean; as?: string },
      ) => {
        if (flags.secret !== undefined) throw new RosterError(NO_SECRET_ARGUMENT, { exitCode: 2 });
        const { storeSecret } = await import("../connections/manage.ts");
        const { readSecret } = await import("../connections/secret-input.ts");
        const stored = await storeSecret(rosterPaths(), name, () =>
          readSecret({ label: name, secretEnv: flags.secretEnv }),
        );
        process.stdout.write(`stored the secret of "${name}" in ${stored} (mode 0600)\n`);
        if (flags.verify) await verifyAndSay(name, flags);
      },
    );

  connection
    .command("verify <name>")
    .description(
      "one real call through the gateway, as a grantee would make it: ok, the status, or why it failed",
    )
    .option("--as <worker>", "as this grantee (default: the first)")
    .option("--verify-path <path>", "ask for this path instead of the recipe's")
    .action(async (name: string, flags: { as?: string; verifyPath?: string }) => {
      await verifyAndSay(name, flags);
    });

  for (const [verb, grant] of [
    ["grant", true],
    ["revoke", false],
  ] as const) {
    connection
      .command(`${verb} <name> [worker]`)
      .description(
        grant
          ? "let a worker (or, with --org, every worker) use the connection: adds [grant.<worker>]"
          : "take the connection from a worker (or --org): removes [grant.<worker>]",
      )
      .option("--org", "every worker ([grant.org])")
      .action(async (name: string, worker: string | undefined, flags: { org?: boolean }) => {
        if ((worker === undefined) === !flags.org)
          throw new RosterError(`${verb} needs one worker, or --org`, { exitCode: 2 });
        const edge = flags.org ? "org" : (worker ?? "");
        const { grantConnection } = await import("../connections/manage.ts");
        const change = await grantConnection(rosterPaths(), name, edge, grant);
        const who = edge === "org" ? "every worker (org)" : edge;
        if (!change.changed) {
          process.stdout.write(
            `${name} is ${grant ? "already" : "not"} granted to ${who}; nothing changed\n`,
          );
          return;
        }
        process.stdout.write(
          `${grant ? "granted" : "revoked"} ${name} ${grant ? "to" : "from"} ${who} in ${change.file}${change.kept ? "" : " (its inline grant table was rewritten, so its comments were not kept)"}\n`,
        );
      });
  }

  connection
    .command("ls")
    .description("every connection: kind, grantees, and ok / disabled (no secret) / failing verify")
    .option("--json", "print them as JSON")
    .action(async (flags: { json?: boolean }) => {
      const { listConnections } = await import("../connections/manage.ts");
      const rows = listConnections(rosterPaths());
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(rows)}\n`);
        return;
      }
      if (!rows.length) {
        process.stdout.write(
          "no connections (roster connection catalog, then roster connection add)\n",
        );
        return;
      }
      for (const row of rows)
        process.stdout.write(
          `${row.name}  ${row.kind}  granted to ${row.grantees.length ? row.grantees.join(", ") : "nobody"}  ${row.state}: ${row.detail}\n`,
        );
    });

  connection
    .command("rm <name>")
    .description(
      "remove connections/<name>.toml and its vault secret (says what, and does it only with --yes)",
    )
    .option("--yes", "really remove them")
    .action(async (name: string, flags: { yes?: boolean }) => {
      const { removalOf, removeConnection } = await import("../connections/manage.ts");
      const paths = rosterPaths();
      if (!flags.yes) {
        const would = removalOf(paths, name);
        if (!would.length)
          throw new RosterError(`no connection named "${name}": nothing to remove`, {
            exitCode: 2,
          });
        throw new RosterError(`would remove ${would.join(", ")}; nothing removed without --yes`, {
          exitCode: 2,
          hint: `roster connection rm ${name} --yes`,
        });
      }
      const removed = await removeConnection(paths, name);
      process.stdout.write(`removed ${removed.join(", ")}\n`);
    });
}

async function verifyAndSay(
  name: string,
  flags: { as?: string | undefined; verifyPath?: string | undefined },
): Promise<void> {
  const { verifyConnection } = await import("../connections/verify.ts");
  const result = await verifyConnection(rosterPaths(), name, {
    ...(flags.as !== undefined ? { as: flags.as } : {}),
    ...(flags.verifyPath !== undefined ? { verifyPath: flags.verifyPath } : {}),
  });
  process.stdout.write(
    `verify ${name} (as ${result.as}): ${result.ok ? result.detail : `failing: ${result.detail}`}\n`,
  );
  if (!result.ok) process.exitCode = 1;
}

function parseFields(entries: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf("=");
    if (at < 1) throw new RosterError(`--field ${entry}: expected name=value`, { exitCode: 2 });
    fields[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return fields;
}
