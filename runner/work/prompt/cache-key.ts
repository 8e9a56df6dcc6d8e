import { createHash } from "node:crypto";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { ENGINE_PIN } from "../../ground/version.ts";
import type { PromptBlock } from "./prompt-block.ts";

/**
 * A worker's prompt-cache key: one name for every run of a worker whose
 * prompt begins the same, so a provider that routes by it (OpenAI's
 * `prompt_cache_key`) sends them to the cache that already holds that
 * beginning. It is a hash of the engine (the agent, the pinned pi, the model:
 * each changes what precedes or reads our blocks), the worker, and the text
 * of the blocks every run begins with (compile.ts puts them first): the
 * identity, roster's runtime policy and the connections. A change to any of
 * these is a new key, as it is a new cache. pi sends its session id as the
 * key (engine-prompt.ts gives it this one); `roster runs context` shows it.
 */
export const STABLE_LABELS: readonly string[] = ["IDENTITY", "RUNTIME POLICY", "CONNECTIONS"];

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** What the engine is: the agent, pi's pinned version, the model it is told to use. */
export function engineFingerprint(worker: Pick<WorkerView, "agent" | "model">): string {
  const model = worker.model ? `${worker.model.provider}/${worker.model.model}` : "default";
  return `${worker.agent} pi@${ENGINE_PIN} ${model}`;
}

/** The hash of the leading blocks every run of the worker begins with, as the prompt renders them. */
export function stablePrefixHash(blocks: ReadonlyArray<Pick<PromptBlock, "label" | "content">>): {
  hash: string;
  blocks: number;
} {
  const stable: string[] = [];
  for (const block of blocks) {
    if (!STABLE_LABELS.includes(block.label)) break;
    stable.push(`[ROSTER SYSTEM BLOCK: ${block.label}]\n${block.content.trim()}`);
  }
  return { hash: sha256(stable.join("\n\n")), blocks: stable.length };
}

/** The key: letters, digits and '-', 31 characters (pi takes it as a session id; OpenAI up to 64). */
export function promptCacheKey(engine: string, worker: string, prefixHash: string): string {
  return `roster-${sha256(`${engine}\n${worker}\n${prefixHash}`).slice(0, 24)}`;
}
