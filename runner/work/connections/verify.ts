import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Static } from "@sinclair/typebox";
import { ProxyAgent, request } from "undici";
import { mintToken, revokeToken } from "../../boundary/gateway/doors/identity.ts";
import { DEFAULT_GATEWAY_PORT } from "../../boundary/gateway/settings/defaults.ts";
import { caFiles } from "../../boundary/gateway/trust/ca.ts";
import type { ServiceConnection } from "../../ground/config/connection-schema.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { leaseGateway } from "../runs/gateway-lease.ts";
import { readState, updateState, type VerifyResult } from "./connection-state.ts";
import { findRecipe, recipes, type VerifyCall } from "./recipes.ts";

/**
 * `--verify`: one real request through the gateway, made the way a box makes
 * it — through the gateway's proxy port with a run token minted for one of
 * the connection's grantees — so the gateway judges it by the connection's
 * own rule and injects the credential from the vault itself. Nothing here
 * reads the secret. The result is one line, and is kept for `connection ls`.
 */
type Service = Static<typeof ServiceConnection>;

/** Retries while a running gateway has not yet re-read a config this command just wrote. */
const RELOAD_WAIT_MS = 700;
const ATTEMPTS = 3;
const TIMEOUT_MS = 30_000;

export async function verifyConnection(
  paths: RosterPaths,
  name: string,
  options: {
    as?: string;
    verifyPath?: string;
    /** The run the check's token names (rotate.ts: a candidate's run); a fresh verify run otherwise. */
    runId?: string;
    /** Kept for `connection ls` (default); a candidate's failed check is not the connection's state. */
    remember?: boolean;
  } = {},
): Promise<VerifyResult> {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  const connection = config.connections.get(name);
  if (!connection)
    throw new RosterError(`no connection named "${name}" (connections/${name}.toml)`, {
      exitCode: 2,
    });
  if (connection.kind === "mcp")
    throw new RosterError(
      `"${name}" is an MCP connection: a run checks it, listing its tools at start (a server that fails is named in the run's prompt)`,
      { exitCode: 2, hint: `roster run <worker> "list your ${name}__ tools"` },
    );
  if (!("hosts" in connection))
    throw new RosterError(
      `"${name}" is a ${connection.kind} connection: there is no request to verify it with`,
      { exitCode: 2 },
    );
  const first = config.errors[0];
  if (first)
    throw new RosterError(
      `the config has problems, so the gateway would deny everything: ${first.file}:${first.line}: ${first.field}: ${first.message}`,
      { exitCode: 2, hint: "roster validate lists them" },
    );
  const grantee = options.as ?? granteeOf(connection, [...config.workers.keys()]);
  if (!grantee)
    throw new RosterError(
      `"${name}" is granted to no worker, and verify calls as one of its grantees`,
      { exitCode: 2, hint: `roster connection grant ${name} <worker>, then verify again` },
    );
  const state = readState(paths, name);
  const host = connection.hosts.find((pattern) => !pattern.includes("*"));
  if (!host)
    throw new RosterError(`"${name}" names only wildcard hosts: there is no one host to call`, {
      exitCode: 2,
    });
  const call = verifyCall(recipeOf(state.recipe, host), options.verifyPath ?? state.verify_path);

  const lease = await leaseGateway({
    paths,
    port: config.org.gateway?.port ?? DEFAULT_GATEWAY_PORT,
    env: process.env,
  });
  const runId = options.runId ?? `verify-${name}-${randomUUID().slice(0, 8)}`;
  const token = await mintToken(paths.identity, {
    subject: `org/${grantee}`,
    runId,
    // a call from the command line: started from no channel
    origins: [],
  });
  let result: Outcome;
  try {
    const ca = await readFile(caFiles(paths.ca).cert, "utf8");
    result = await callThrough(lease.port, token, ca, host, call);
    for (let attempt = 1; attempt < ATTEMPTS && result.refusedByGateway; attempt++) {
      await new Promise((done) => setTimeout(done, RELOAD_WAIT_MS));
      result = await callThrough(lease.port, token, ca, host, call);
    }
  } finally {
    await revokeToken(paths.identity, token);
    await lease.release();
  }
  const { refusedByGateway: _, ...kept } = result;
  const final: VerifyResult = { ...kept, at: new Date().toISOString(), as: grantee };
  if (options.remember !== false) await updateState(paths, name, { last_verify: final });
  return final;
}

/** A hand-written file has no recipe on record: a recipe whose hosts include its host stands in. */
function recipeOf(recipe: string | undefined, host: string): string | undefined {
  return recipe ?? recipes().find((candidate) => candidate.hosts?.includes(host))?.name;
}

/**
 * Whether a check means anything for this connection: its recipe's own call,
 * or a `--verify-path` on record. Without one, verify asks for "/", which a
 * wrong secret may pass as well as a right one.
 */
export function hasVerifyCall(paths: RosterPaths, name: string, hosts: string[]): boolean {
  const state = readState(paths, name);
  if (state.verify_path !== undefined) return true;
  const host = hosts.find((pattern) => !pattern.includes("*")) ?? "";
  const recipe = recipeOf(state.recipe, host);
  return (recipe ? findRecipe(recipe) : undefined)?.verify !== undefined;
}

/** Who the verify request comes from: `--as`, else the first worker granted it (any worker for an org grant). */
function granteeOf(connection: Service, workers: string[]): string | undefined {
  const edges = Object.keys(connection.grant ?? {}).sort();
  const worker = edges.find((edge) => edge !== "org");
  if (worker) return worker;
  return edges.includes("org") ? workers.sort()[0] : undefined;
}

function verifyCall(recipeName: string | undefined, path: string | undefined): VerifyCall {
  const recipe = recipeName ? findRecipe(recipeName) : undefined;
  const call = recipe?.verify ?? { method: "GET", path: "/" };
  return path !== undefined ? { ...call, path: path.startsWith("/") ? path : `/${path}` } : call;
}

type Outcome = Omit<VerifyResult, "at" | "as"> & { refusedByGateway?: boolean };

async function callThrough(
  port: number,
  token: string,
  ca: string,
  host: string,
  call: VerifyCall,
): Promise<Outcome> {
  const agent = new ProxyAgent({
    uri: `http://127.0.0.1:${port}`,
    token: `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
    proxyTunnel: true,
    requestTls: { ca },
  });
  const where = `${call.method} https://${host}${call.path}`;
  try {
    const response = await request(`https://${host}${call.path}`, {
      dispatcher: agent,
      method: call.method,
      headers: { "user-agent": "roster-connection-verify", ...(call.headers ?? {}) },
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    const status = response.statusCode;
    const text = (await response.body.text()).slice(0, 4096);
    const verdict = response.headers["x-roster-verdict"];
    if (typeof verdict === "string") {
      const body = jsonOf(text);
      const rule = typeof body?.rule === "string" ? `, rule ${body.rule}` : "";
      const said = [body?.error, body?.hint].filter((part) => typeof part === "string").join(": ");
      return {
        ok: false,
        status,
        detail: `refused by the gateway (${status} ${verdict}${rule}): ${said || where}`,
        refusedByGateway: verdict === "deny",
      };
    }
    const gatewayBody = jsonOf(text);
    if (
      (status === 502 || status === 504) &&
      typeof gatewayBody?.error === "string" &&
      "rule" in gatewayBody
    ) {
      // the gateway could not reach the API: DNS, connect, TLS, timeouts
      return { ok: false, status, detail: `${where} failed at the gateway: ${gatewayBody.error}` };
    }
    // what the API said, in one line: the reason a person acts on
    const said = text.trim() ? ` (${text.trim().split("\n")[0]?.slice(0, 200)})` : "";
    if (status === 401 || status === 403)
      return {
        ok: false,
        status,
        detail: `the API refused the credential: ${where} answered ${status}${said}`,
      };
    if (status >= 400) return { ok: false, status, detail: `${where} answered ${status}${said}` };
    if (call.okField && jsonOf(text)?.[call.okField] !== true) {
      const reason = jsonOf(text)?.error;
      return {
        ok: false,
        status,
        detail: `the API refused the credential: ${where} answered ${call.okField}=false${typeof reason === "string" ? ` (${reason})` : ""}`,
      };
    }
    return { ok: true, status, detail: `ok: ${where} answered ${status}` };
  } catch (error) {
    return { ok: false, detail: `${where} failed: ${errorMessage(error)}` };
  } finally {
    await agent.close();
  }
}

function jsonOf(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
