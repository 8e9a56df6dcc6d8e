import type { AgentKind } from "./agent-schema.ts";
import type { ConfigError } from "./config-error.ts";
import type { ModelSection, OrgConfig, WorkerConfig } from "./config-schema.ts";
import type { GrantMatch, ScopedGrant } from "./grant-schema.ts";
import { locateLine } from "./locate.ts";
import { workerSubject } from "./subject.ts";

/**
 * What each agent a box can run speaks. The box, its door, its tools and its
 * proposals are the same for each (docs/agents.md); what differs is the
 * program that talks to the model, so each speaks only its own provider's
 * protocol.
 */
export const DEFAULT_AGENT: AgentKind = "pi";

interface AgentFacts {
  /** What a person calls it. */
  title: string;
  /** The [model] providers whose protocol it speaks. */
  providers: ModelSection["provider"][];
  /** The protocol, as an error names it. */
  protocol: string;
  /** roster feeds it a warm session's turns one by one on stdin (else its sessions run pi). */
  sessions: boolean;
}

export const AGENTS: Record<AgentKind, AgentFacts> = {
  pi: {
    title: "pi",
    providers: ["anthropic", "openai", "openai-compatible"],
    protocol: "any of roster's",
    sessions: true,
  },
  claude: {
    title: "Claude Code",
    providers: ["anthropic"],
    protocol: "Anthropic's Messages API",
    // stream JSON in and out: one user message a line, one result a turn
    sessions: true,
  },
  codex: {
    title: "Codex",
    providers: ["openai", "openai-compatible"],
    protocol: "OpenAI's Responses API",
    // its streaming mode is a JSON-RPC server of its own: one thread, a turn/start a turn
    sessions: true,
  },
};

/** The worker's agent: its worker.toml's, else org.toml's `[engine] agent`, else pi. */
export function agentFor(org: OrgConfig, worker: WorkerConfig | undefined): AgentKind {
  return worker?.agent ?? org.engine?.agent ?? DEFAULT_AGENT;
}

/**
 * An agent that can't speak the model's provider is refused at load: its
 * first request would only fail at the door or at the provider. Checked where
 * an agent is named (org.toml's `[engine] agent`, a worker.toml's `agent`);
 * the provider is always the org's (a worker may not change it).
 */
export function checkAgent(
  org: OrgConfig,
  worker: WorkerConfig | undefined,
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const agent = worker ? worker.agent : org.engine?.agent;
  const provider = org.model?.provider;
  if (!agent || !provider || AGENTS[agent].providers.includes(provider)) return;
  errors.push({
    file: display,
    line: locateLine(text, worker ? "/agent" : "/engine/agent"),
    field: worker ? "agent" : "engine.agent",
    message: `${JSON.stringify(agent)}: ${AGENTS[agent].title} speaks only ${AGENTS[agent].protocol}, and the model's provider is "${provider}" (it needs provider ${AGENTS[agent].providers.map((name) => `"${name}"`).join(" or ")})`,
  });
}

/**
 * What an agent sends home beside its model calls, refused for its worker
 * under a rule that names it (`agent:<agent>`), before any grant could let it
 * through: Claude Code still asks api.anthropic.com for its settings and
 * policy limits under /api/ with the key attached, with every switch for its
 * non-essential traffic on (agent-env.ts); the model grant for that host
 * would otherwise inject the real key there too.
 */
const AGENT_DENIES: Record<AgentKind, GrantMatch[]> = {
  pi: [],
  claude: [{ host: "api.anthropic.com", pathPrefix: "/api/" }],
  codex: [],
};

export function agentDenyGrants(agent: AgentKind, worker: string, source: string): ScopedGrant[] {
  return AGENT_DENIES[agent].map((match) => ({
    name: `agent:${agent}`,
    verdict: "deny",
    match,
    scope: workerSubject(worker),
    source,
  }));
}
