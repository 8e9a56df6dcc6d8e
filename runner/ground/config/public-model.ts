import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { ConfigError } from "./config-error.ts";
import type { ModelSection } from "./config-schema.ts";
import type { ConnectionConfig } from "./connection-schema.ts";
import { type KnownProvider, PROVIDERS } from "./providers.ts";

/**
 * The model of a deployment written for the public roster: it has no
 * [model]; a connection file naming a model provider (`provider =
 * "anthropic"`, `"openai"`) holds the key, and pi on the host says which
 * model (its settings.json `defaultProvider` / `defaultModel`), else pi's
 * choice. Here, when org.toml has no [model] and exactly one such connection
 * is there (or the host's pi names the provider of one), that connection is
 * the model: its provider, its vault credential, the host's pi model or
 * roster's default for the provider, said in one notice. The connection's
 * own edges still decide who reaches the model host: no org-wide model grant
 * is added, so a worker its edges leave out is refused at the door, as there.
 */

/** What roster picks for a provider when nothing names a model (a notice says which). */
export const DEFAULT_MODELS: Record<KnownProvider, string> = {
  anthropic: "claude-sonnet-4-5",
  openai: "gpt-4.1",
};

/** The host's pi defaults (PI_CODING_AGENT_DIR, else ~/.pi/agent): what the public roster's boxes were given. */
export function hostPiDefaults(
  env: NodeJS.ProcessEnv = process.env,
): { provider?: string; model?: string; file: string } | undefined {
  const dir = env.PI_CODING_AGENT_DIR || join(env.HOME || homedir(), ".pi", "agent");
  const file = join(dir, "settings.json");
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const settings = value as Record<string, unknown>;
  const text = (key: string) =>
    typeof settings[key] === "string" && settings[key] ? (settings[key] as string) : undefined;
  const provider = text("defaultProvider");
  const model = text("defaultModel");
  return { ...(provider ? { provider } : {}), ...(model ? { model } : {}), file };
}

const isKnown = (name: string | undefined): name is KnownProvider =>
  name !== undefined && Object.hasOwn(PROVIDERS, name);

/**
 * The model the connections make, or undefined with the reason pushed to
 * `errors` (two model connections, nothing to choose between them) or nothing
 * said (no model connection: a run says "no model configured").
 */
export function modelFromConnections(
  connections: ReadonlyMap<string, ConnectionConfig>,
  show: (name: string) => string,
  notices: ConfigError[],
  errors: ConfigError[],
  env: NodeJS.ProcessEnv = process.env,
): ModelSection | undefined {
  const models = [...connections]
    .map(([name, connection]) => ({
      name,
      provider: "provider" in connection ? connection.provider : undefined,
    }))
    .filter((one): one is { name: string; provider: KnownProvider } => isKnown(one.provider));
  if (!models.length) return undefined;
  const pi = hostPiDefaults(env);
  const chosen =
    models.length === 1 ? models[0] : models.find((one) => one.provider === pi?.provider);
  if (!chosen) {
    errors.push({
      file: show("org.toml"),
      line: 1,
      field: "model",
      message: `no [model], and the model connections ${models.map((one) => show(`connections/${one.name}.toml`)).join(", ")} leave it open: write [model] provider = "…" and model = "…"`,
    });
    return undefined;
  }
  const fromPi = pi?.model && (pi.provider === undefined || pi.provider === chosen.provider);
  const model = fromPi && pi?.model ? pi.model : DEFAULT_MODELS[chosen.provider];
  notices.push({
    file: show(`connections/${chosen.name}.toml`),
    line: 1,
    field: "provider",
    message: `org.toml has no [model]: workers use ${chosen.provider}'s ${model} (${fromPi ? `the host's pi default, ${pi?.file}` : "roster's default"}) with this connection's key, reached by those its edges grant; write [model] in org.toml to choose`,
  });
  return { provider: chosen.provider, model, credential: chosen.name };
}
