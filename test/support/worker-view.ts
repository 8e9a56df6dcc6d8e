import { narrowestKnowledge } from "../../runner/ground/config/knowledge-limits.ts";
import {
  BOX_DEFAULTS,
  CONTEXT_DEFAULTS,
  MEMORY_DEFAULTS,
} from "../../runner/ground/config/narrowing.ts";
import { narrowestStore } from "../../runner/ground/config/store-limits.ts";
import type { WorkerView } from "../../runner/ground/config/worker-view.ts";

/**
 * A worker as the loader would see it with nothing configured (every default),
 * for tests of what is built from one (the prompt); `overrides` replace fields.
 * Not a double of anything: the defaults are the loader's own.
 */
export function defaultWorkerView(overrides: Partial<WorkerView> = {}): WorkerView {
  return {
    name: "elf",
    dir: "/nowhere",
    agent: "pi",
    model: undefined,
    context: CONTEXT_DEFAULTS,
    memory: MEMORY_DEFAULTS,
    box: BOX_DEFAULTS,
    mounts: [],
    sentinels: [],
    connections: [],
    heartbeat: undefined,
    store: narrowestStore(undefined, undefined),
    toolchain: { apt: [], npm: [], pip: [] },
    mcp: [],
    knowledge: narrowestKnowledge(undefined, undefined),
    ...overrides,
  };
}
