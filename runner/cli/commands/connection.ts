/**
 * `roster connection …`: declares the commands for what workers may reach —
 * their arguments, flags and help. What each does lives in
 * runner/cli/does/connection*.ts.
 */
import { type Command, Option } from "commander";
import type { AddFlags, PublicAddFlags, SecretFlags } from "../does/connection.ts";
import type { RotateFlags } from "../does/connection-age.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesConnection = () => import("../does/connection.ts");
const doesAge = () => import("../does/connection-age.ts");

const repeat = (value: string, previous: string[] = []) => [...previous, value];

/** `roster connection …`: services, host folders and repos a worker may use, from recipes. */
export function registerConnectionCommands(program: Command): void {
  const connection = program
    .command("connection")
    .description("what workers may reach: connections/<name>.toml from recipes, and their secrets");

  connection
    .command("catalog")
    .description("the built-in recipes: what each grants and what the gateway injects")
    .option("--json", "print the recipes as JSON")
    .action(async (flags: { json?: boolean }) => (await doesConnection()).catalogCommand(flags));

  declareAddCommand(connection);

  connection
    .command("secret <name>")
    .description(
      "store or replace a connection's secret (from stdin, --secret-env, or asked for); a name no connection has is a credential of a user and a password (the parent proxy's upstream_proxy_auth, SMTP's): --field user=… and the password as the secret",
    )
    .option(
      "--field <name=value>",
      "a non-secret vault field stored beside the secret, e.g. user=alice (repeatable)",
      repeat,
    )
    .option("--secret-env <VAR>", "read the secret from this environment variable")
    .option("--verify", "then make one real call through the gateway and say whether it works")
    .option("--as <worker>", "verify as this grantee (default: the first)")
    .option(
      "--expires <when>",
      "when the secret expires: an RFC 3339 time or a span (30d, 12h, 2w); ls marks it a week before",
    )
    .addOption(new Option("--secret <value>").hideHelp())
    .action(async (name: string, flags: SecretFlags) =>
      (await doesConnection()).storeSecretCommand(name, flags),
    );

  connection
    .command("rotate <name>")
    .description(
      "replace a connection's secret only once the new one passes a check through the gateway; on failure the old one stays live",
    )
    .option("--secret-env <VAR>", "read the new secret from this environment variable")
    .option("--as <worker>", "check as this grantee (default: the first)")
    .option("--force", "swap it in unverified when the connection has no verify call")
    .option(
      "--expires <when>",
      "when the secret expires: an RFC 3339 time or a span (30d, 12h, 2w); ls marks it a week before",
    )
    .option("--json", "print the outcome as JSON")
    .action(async (name: string, flags: RotateFlags) =>
      (await doesAge()).rotateCommand(name, flags),
    );

  connection
    .command("encrypt")
    .description(
      "encrypt every plaintext vault file with the vault key (ROSTER_VAULT_KEY_FILE or systemd's roster-vault-key)",
    )
    .option("--json", "print the outcome as JSON")
    .action(async (flags: { json?: boolean }) => (await doesAge()).encryptCommand(flags));

  connection
    .command("verify <name>")
    .description(
      "one real call through the gateway, as a grantee would make it: ok, the status, or why it failed",
    )
    .option("--as <worker>", "as this grantee (default: the first)")
    .option("--verify-path <path>", "ask for this path instead of the recipe's")
    .action(async (name: string, flags: { as?: string; verifyPath?: string }) =>
      (await doesConnection()).verifyCommand(name, flags),
    );

  for (const [verb, grant] of [
    ["grant", true],
    ["revoke", false],
  ] as const) {
    const command = connection
      .command(`${verb} <name> [worker]`)
      .description(
        grant
          ? "let a worker (or, with --org, every worker) use the connection: adds [grant.<worker>]"
          : "take the connection from a worker (or --org): removes [grant.<worker>]",
      )
      .option("--org", "every worker ([grant.org])");
    if (grant)
      command.option(
        "--restrict <dim=ids>",
        "narrow the edge to the provider's dimensions, e.g. servers=1234 or surfaces=public,dm (repeatable; replaces the edge's)",
        repeat,
      );
    command.action(
      async (
        name: string,
        worker: string | undefined,
        flags: { org?: boolean; restrict?: string[] },
      ) => (await doesConnection()).grantCommand(verb, name, worker, flags),
    );
  }

  connection
    .command("ls")
    .description(
      "every connection: kind, grantees, ok / disabled (no secret) / failing verify, its secret's age, and EXPIRES within 7 days or EXPIRED",
    )
    .option("--json", "print them as JSON")
    .action(async (flags: { json?: boolean }) =>
      (await doesConnection()).listConnectionsCommand(flags),
    );

  connection
    .command("rm <name>")
    .description(
      "remove connections/<name>.toml and its vault secret, first revoking OAuth tokens at the provider (says what, and does it only with --yes)",
    )
    .option("--yes", "really remove them")
    .action(async (name: string, flags: { yes?: boolean }) =>
      (await doesConnection()).removeConnectionCommand(name, flags),
    );
}

/** `roster connection add`: the most flags of any command, one for each thing a recipe may need. */
function declareAddCommand(connection: Command): void {
  connection
    .command("add [name]")
    .description(
      "write connections/<name>.toml from a recipe and store its secret (from stdin, --secret-env, or asked for); on a terminal, asks for what the recipe needs and the flags don't give (with no name, the service to connect)",
    )
    .option("--name <name>", "the connection's name when it differs from the service named first")
    .option(
      "--from <recipe>",
      "the recipe (roster connection catalog); the name itself when it names one",
    )
    .option("--host <host>", "the API's host, instead of the recipe's (repeatable)", repeat)
    .option("--url <url>", "mcp: the server's https:// endpoint")
    .option("--path <folder>", "host-dir / host-repo: the folder on the host")
    .option("--rw", "host-dir: mounted read-write")
    .option(
      "--header <template>",
      'the header the gateway injects, instead of the recipe\'s: "Authorization: Bearer {token}"',
    )
    .option("--env <VAR>", "the variable a granted box sees, holding a stand-in for the secret")
    .option(
      "--method <method>",
      "an HTTP method the box may use (repeatable; default: the recipe's)",
      repeat,
    )
    .option(
      "--use <use>",
      "a chat bot: set up only this use, capability (boxes call its API) or channel (its listener serves the worker) (repeatable)",
      repeat,
    )
    .option("--auth <method>", "api_key (paste a secret) or oauth (sign in, as --oauth)")
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
    .option(
      "--expires <when>",
      "when the secret expires: an RFC 3339 time or a span (30d, 12h, 2w); ls marks it a week before",
    )
    .option(
      "--oauth",
      "sign in by consent in a browser (authorization code with PKCE) instead of a secret",
    )
    .option(
      "--device",
      "sign in by the device flow: a code to enter on any browser (implies --oauth)",
    )
    .option("--client-id <id>", "--oauth: the client id the provider gave roster")
    .option("--client-secret-env <VAR>", "--oauth: read the client's secret from this variable")
    .option(
      "--scope <scope>",
      "--oauth: ask for this scope instead of the recipe's (repeatable)",
      repeat,
    )
    .option(
      "--callback-port <port>",
      "--oauth: the loopback port, when the provider wants a fixed one",
    )
    .option("--declare", "--oauth to any provider: its endpoints from --issuer or the URLs below")
    .option("--issuer <url>", "--declare: read the endpoints from this issuer's discovery document")
    .option("--authorize-url <url>", "--declare: the authorization endpoint")
    .option("--token-url <url>", "--declare: the token endpoint")
    .option("--device-url <url>", "--declare: the device authorization endpoint")
    .option("--revoke-url <url>", "--declare: the revocation endpoint (rm revokes there)")
    .addOption(new Option("--secret <value>").hideHelp())
    .action(async (name: string | undefined, flags: Partial<AddFlags> & PublicAddFlags) =>
      (await doesConnection()).addConnectionCommand(name, flags),
    );
}
