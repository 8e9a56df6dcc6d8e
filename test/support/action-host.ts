/** Talking to the action host the way a box does: through the gateway, with a run's token. */
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "./gateway-env.ts";
import { viaProxy } from "./proxy-clients.ts";
import { SmtpSink } from "./smtp.ts";

export interface ActionReply {
  status: number;
  body: Record<string, unknown>;
}

/** POST `body` (JSON, or a raw string) to https://actions.roster.internal`path`. */
export async function postAction(
  env: GatewayEnv,
  token: string,
  path: string,
  body: unknown,
): Promise<ActionReply> {
  const response = await viaProxy(
    proxyUrlFor(env, token),
    `https://actions.roster.internal${path}`,
    {
      ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
      method: "POST",
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { "content-type": "application/json" },
    },
  );
  return { status: response.status, body: JSON.parse(response.body) as Record<string, unknown> };
}

export const submitAction = (env: GatewayEnv, token: string, envelope: unknown) =>
  postAction(env, token, "/submit", envelope);

/**
 * A gateway whose action host grants elf a gated `email-send`, with a real
 * SMTP server on the far side and its credential in the vault.
 */
export async function startEmailDesk(): Promise<{ env: GatewayEnv; smtp: SmtpSink }> {
  const smtp = await SmtpSink.start({ user: "roster", pass: "smtp-secret" });
  const env = await startGatewayEnv(`
[[action]]
name = "email-send"
executor = "email"
trust = "gate"
`);
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  await env.writeVault("smtp", smtp.vaultCredential("elf@roster.test"));
  // the gateway sees the new worker
  await new Promise((resolve) => setTimeout(resolve, 600));
  return { env, smtp };
}
