import type { ModelSection } from "./config-schema.ts";
import type { ScopedGrant } from "./grant-schema.ts";
import { hostName } from "./host-name.ts";
import { knownProvider, modelAuth } from "./providers.ts";

/**
 * The worker's model, as pi inside the box sees it (a provider with a sentinel
 * key) and as the gateway sees it (a grant that lets the model host through
 * with the real key injected). The real key never enters a box.
 */
export interface ModelEndpoint {
  provider: ModelSection["provider"];
  model: string;
  protocol: "http" | "https";
  host: string;
  port: number;
  baseUrl: string;
  /** Vault credential to inject; undefined for keyless local endpoints. */
  credential: string | undefined;
  /** Where pi's client reads its key from inside the box (it gets a sentinel). */
  keyEnv: string | undefined;
}

/**
 * Where the model's requests go and which vault credential rides along, with
 * the provider's defaults filled in: what a worker's [model] may not change.
 */
export function modelDestination(model: ModelSection): {
  base_url: string | undefined;
  credential: string | undefined;
} {
  const known = knownProvider(model.provider);
  return {
    base_url: model.base_url ?? known?.baseUrl,
    credential: model.credential ?? (known ? model.provider : undefined),
  };
}

export function modelEndpoint(model: ModelSection): ModelEndpoint {
  const known = knownProvider(model.provider);
  const destination = modelDestination(model);
  const baseUrl = destination.base_url ?? "";
  const url = new URL(baseUrl);
  const protocol = url.protocol === "http:" ? "http" : "https";
  return {
    provider: model.provider,
    model: model.model,
    protocol,
    host: hostName(url.hostname),
    port: Number(url.port || (protocol === "http" ? 80 : 443)),
    baseUrl,
    credential: destination.credential,
    keyEnv: known?.keyEnv,
  };
}

/** The gateway rule for the model host, named `model:<provider>`. */
export function modelGrant(model: ModelSection, scope: string, source: string): ScopedGrant {
  const endpoint = modelEndpoint(model);
  const grant: ScopedGrant = {
    name: `model:${model.provider}`,
    verdict: "allow",
    match: { host: endpoint.host, port: endpoint.port, protocol: endpoint.protocol },
    scope,
    source,
  };
  if (endpoint.credential) {
    grant.inject = {
      credential: endpoint.credential,
      headers: modelAuth(model.provider).map((entry) => ({ ...entry })),
    };
  }
  return grant;
}

/** pi's models.json and settings.json for this model, holding only a sentinel key. */
export function piAgentConfig(
  model: ModelSection,
  sentinel: string,
): { models: object; settings: object } {
  const endpoint = modelEndpoint(model);
  if (model.provider === "openai-compatible") {
    return {
      models: {
        providers: {
          roster: {
            baseUrl: endpoint.baseUrl,
            api: "openai-completions",
            apiKey: sentinel,
            models: [
              {
                id: model.model,
                contextWindow: model.context_window ?? 128_000,
                maxTokens: model.max_tokens ?? 8192,
              },
            ],
          },
        },
      },
      settings: { defaultProvider: "roster", defaultModel: model.model },
    };
  }
  return {
    models: { providers: {} },
    settings: { defaultProvider: model.provider, defaultModel: model.model },
  };
}
