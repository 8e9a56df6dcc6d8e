import { join } from "node:path";
import { agentFor } from "./agent.ts";
import type { AgentKind } from "./agent-schema.ts";
import type { BoxSection, ContextSection, MemorySection } from "./box-schema.ts";
import type { ModelSection } from "./config-schema.ts";
import { type ConnectionMount, connectionMount, grantedTo } from "./connections.ts";
import { type Heartbeat, heartbeatFor } from "./heartbeat.ts";
import { KNOWLEDGE_REPO, knowledgeDetail, knowledgeMount } from "./knowledge.ts";
import { type KnowledgeView, knowledgeMounts, narrowestKnowledge } from "./knowledge-limits.ts";
import type { LoadedConfig } from "./load.ts";
import type { McpServerEntry } from "./mcp-schema.ts";
import { mcpServersFor } from "./mcp-servers.ts";
import { narrowedModel, narrowestBox, narrowestContext, narrowestMemory } from "./narrowing.ts";
import { narrowestStore, type StoreLimits } from "./store-limits.ts";
import { type Toolchain, workerToolchain } from "./toolchain-schema.ts";

/**
 * One worker as everything that starts, prompts or settles its runs sees it:
 * the org's settings narrowed (never widened) by its worker.toml, and what it
 * is granted made concrete — its mounts, its sentinels, the connections its
 * prompt names, its MCP servers. The config it is read from was loaded and
 * checked whole first (load.ts).
 */

/** One worker's effective settings: org values, narrowed (never widened) by the worker's. */
export interface WorkerView {
  name: string;
  dir: string;
  /** The agent its box runs (agent.ts). */
  agent: AgentKind;
  model: ModelSection | undefined;
  context: Required<ContextSection>;
  /** How much of its own memory file a prompt carries ([memory]). */
  memory: Required<MemorySection>;
  box: Required<BoxSection>;
  mounts: ConnectionMount[];
  /** Env names that carry a sentinel (service connections granted to this worker). */
  sentinels: string[];
  /** Names of the connections granted to this worker, for the system prompt. */
  connections: Array<{ name: string; kind: string; detail: string }>;
  /** How large its store may grow, and the data filesystem's reserve (store-limits.ts). */
  store: StoreLimits;
  /** The worker's heartbeat (undefined: none, or switched off). */
  heartbeat: Heartbeat | undefined;
  /** Packages baked into its derived box image (org.toml's per ecosystem unless it has its own). */
  toolchain: Toolchain;
  /** The MCP servers its box connects to (ROSTER_MCP_JSON): granted connections, declared stdio ones. */
  mcp: McpServerEntry[];
  /** Its gated repos' switch, limits and who may write its own ([knowledge], knowledge-limits.ts). */
  knowledge: KnowledgeView;
}

/**
 * `dataRoot` (the deployment's data/) adds the worker's own knowledge repo to
 * its mounts: every caller that starts, pushes from or settles a run gives it.
 */
export function workerView(
  config: LoadedConfig,
  name: string,
  options: { dataRoot?: string } = {},
): WorkerView | undefined {
  const worker = config.workers.get(name);
  if (!worker) return undefined;
  const view: WorkerView = {
    name,
    dir: join(config.root, "workers", name),
    agent: agentFor(config.org, worker),
    // computed as the narrowest of org and worker, not validated-then-spread, so a
    // config that somehow skipped checkNarrowing still gets no more than the org's
    model: narrowedModel(config.org.model, worker.model),
    context: narrowestContext(config.org.context, worker.context),
    memory: narrowestMemory(config.org.memory, worker.memory),
    box: narrowestBox(config.org.box, worker.box),
    mounts: [],
    sentinels: [],
    connections: [],
    heartbeat: heartbeatFor(config.org.heartbeat, name, worker.heartbeat),
    store: narrowestStore(config.org.store, worker.store),
    toolchain: workerToolchain(config.org.toolchain, worker.toolchain),
    mcp: mcpServersFor(config.connections, name, worker),
    knowledge: narrowestKnowledge(config.org.knowledge, worker.knowledge),
  };
  for (const expose of [...(config.org.expose ?? []), ...(worker.expose ?? [])]) {
    if (!view.sentinels.includes(expose.env)) view.sentinels.push(expose.env);
  }
  for (const [connectionName, connection] of config.connections) {
    if (!grantedTo(connection, name)) continue;
    const mount = connectionMount(connectionName, connection);
    if (mount) {
      view.mounts.push(mount);
      view.connections.push({
        name: connectionName,
        kind: mount.kind,
        detail: mount.gated
          ? `a git clone of your own at ~/mnt/${connectionName} on branch run/<run-id> (read-write); origin is the real repo, read-only: commit there and land it on ${mount.gated.branch} with repo_push${mount.gated.writeFrom === "clean" ? "; a run that carried a conversation (a chat session, a task filed from one) may not push here (the clean-room rule)" : "; a push that names someone from this run's conversations is refused (the clean-room rule)"}`
          : `mounted at ~/mnt/${connectionName} (${mount.readOnly ? "read-only" : "read-write"})`,
      });
    } else if (connection.kind === "mcp") {
      view.connections.push({
        name: connectionName,
        kind: "mcp",
        detail: `the MCP server at ${connection.url}: its tools are yours as ${connectionName}__<tool>; the gateway adds the credential`,
      });
    } else if ("hosts" in connection) {
      if (connection.env) view.sentinels.push(connection.env);
      view.connections.push({
        name: connectionName,
        kind: "service",
        detail: `HTTPS to ${connection.hosts.join(", ")} (methods ${(connection.methods ?? ["*"]).join(", ")}); the gateway adds the credential${connection.env ? `; $${connection.env} holds a placeholder` : ""}`,
      });
    }
  }
  if (options.dataRoot) {
    const writeFrom = view.knowledge.write_from;
    view.mounts.push(knowledgeMount(options.dataRoot, name, writeFrom));
    view.connections.push({
      name: KNOWLEDGE_REPO,
      kind: "host-repo",
      detail: knowledgeDetail(writeFrom),
    });
  }
  // [knowledge] enabled = false: no gated repo reaches its runs, nor its prompt
  const gone = view.knowledge.enabled
    ? new Set<string>()
    : new Set(view.mounts.filter((mount) => mount.gated).map((mount) => mount.name));
  view.mounts = knowledgeMounts(view.mounts, view.knowledge);
  view.connections = view.connections.filter((connection) => !gone.has(connection.name));
  return view;
}
