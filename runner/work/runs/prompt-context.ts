import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { listRuns, type RunLocation } from "../../records/run-records/run-record.ts";
import { stablePrefixHash } from "../prompt/cache-key.ts";
import { readTurns } from "../prompt/turn-record.ts";

/**
 * `roster runs context`: what the model was told, block by block, read back
 * from the prompt the run kept (prompt/system.md, the blocks headed
 * `[ROSTER SYSTEM BLOCK: <label>]`, and prompt/input.md, the task): each
 * block's size in characters and in tokens (estimated at four characters a
 * token), a hash of its text, whether it changed since the worker's previous
 * run that kept a prompt, and where a provider's prompt cache can reach: the
 * leading blocks byte-identical to that run's. Also the worker's prompt-cache
 * key the run was given (prompt/cache-key, prompt/cache-key.ts) against the
 * previous run's, and for a warm session each turn as it was handed in
 * (prompt/turns/, prompt/turn-record.ts).
 */
export interface ContextBlock {
  label: string;
  chars: number;
  /** Estimated: about four characters a token. */
  tokens: number;
  /** The first 12 hex digits of the text's SHA-256. */
  hash: string;
  /** Against the previous run that kept a prompt: unchanged, changed, new, or no previous run. */
  since: "same" | "changed" | "new" | "first";
  content: string;
}

export interface PromptContext {
  run: string;
  worker: string;
  previous: string | undefined;
  blocks: ContextBlock[];
  /** How many leading blocks are byte-identical to the previous run's (a cached prefix can reach that far). */
  cachedPrefix: number;
  /** The prompt-cache key the run was given; undefined for a run from before keys were kept. */
  cacheKey: string | undefined;
  /** The previous run's, to compare. */
  previousCacheKey: string | undefined;
  /** The blocks every run of the worker begins with, hashed as the key hashes them. */
  stablePrefix: { blocks: number; hash: string };
  /** A warm session's turns, as handed to the engine. */
  turns: Array<{ turn: number; chars: number; input: string }>;
}

function cacheKeyOf(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, "prompt", "cache-key"), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

const HEADER = /^\[ROSTER SYSTEM BLOCK: (.+)\]$/;
const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 12);

/** The blocks of a run's kept prompt; undefined when it kept none (a command run, a run that never started). */
export function promptBlocks(
  dir: string,
): Array<Pick<ContextBlock, "label" | "content">> | undefined {
  let system: string;
  try {
    system = readFileSync(join(dir, "prompt", "system.md"), "utf8");
  } catch {
    return undefined;
  }
  const blocks: Array<{ label: string; lines: string[] }> = [];
  for (const line of system.split("\n")) {
    const header = HEADER.exec(line);
    if (header?.[1]) blocks.push({ label: header[1], lines: [] });
    else blocks.at(-1)?.lines.push(line);
  }
  const out = blocks.map((block) => ({
    label: block.label,
    content: block.lines.join("\n").trim(),
  }));
  try {
    out.push({
      label: "TASK (input)",
      content: readFileSync(join(dir, "prompt", "input.md"), "utf8"),
    });
  } catch {
    // a session's input comes turn by turn: no task block
  }
  return out;
}

export function promptContext(stateRoot: string, run: RunLocation): PromptContext | undefined {
  const blocks = promptBlocks(run.dir);
  if (!blocks) return undefined;
  // the newest earlier run of the worker that kept a prompt
  const earlier = listRuns(stateRoot, run.worker).filter((one) => one.id < run.id);
  let previous: { id: string; blocks: Map<string, string>; cacheKey?: string } | undefined;
  let previousOrder: string[] = [];
  for (const one of earlier) {
    const kept = promptBlocks(one.dir);
    if (!kept) continue;
    const key = cacheKeyOf(one.dir);
    previous = {
      id: one.id,
      blocks: new Map(kept.map((block) => [block.label, hashOf(block.content)])),
      ...(key ? { cacheKey: key } : {}),
    };
    previousOrder = kept.map((block) => hashOf(`${block.label}\n${block.content}`));
    break;
  }
  const shown = blocks.map((block): ContextBlock => {
    const hash = hashOf(block.content);
    const before = previous?.blocks.get(block.label);
    return {
      ...block,
      chars: block.content.length,
      tokens: Math.ceil(block.content.length / 4),
      hash,
      since: !previous
        ? "first"
        : before === undefined
          ? "new"
          : before === hash
            ? "same"
            : "changed",
    };
  });
  let cachedPrefix = 0;
  while (
    cachedPrefix < shown.length &&
    cachedPrefix < previousOrder.length &&
    previousOrder[cachedPrefix] ===
      hashOf(`${shown[cachedPrefix]?.label}\n${shown[cachedPrefix]?.content}`)
  )
    cachedPrefix++;
  const stable = stablePrefixHash(blocks);
  return {
    run: run.id,
    worker: run.worker,
    previous: previous?.id,
    blocks: shown,
    cachedPrefix,
    cacheKey: cacheKeyOf(run.dir),
    previousCacheKey: previous?.cacheKey,
    stablePrefix: { blocks: stable.blocks, hash: stable.hash.slice(0, 12) },
    turns: readTurns(run.dir).map((one) => ({ ...one, chars: one.input.length })),
  };
}

/** The key, and whether the previous run had the same (then a provider routes both to one cache). */
function keyLine(context: PromptContext): string {
  const { cacheKey, previousCacheKey, previous } = context;
  const since = !cacheKey
    ? "none kept (a run from before roster kept them)"
    : !previousCacheKey
      ? cacheKey
      : `${cacheKey} (${cacheKey === previousCacheKey ? "the same as" : `changed since ${previousCacheKey} of`} ${previous})`;
  return `prompt-cache key: ${since}; its stable prefix is the first ${context.stablePrefix.blocks} blocks, ${context.stablePrefix.hash}`;
}

/**
 * The context as a table, the cache boundary drawn where it falls, and the
 * session's turns counted; with `all`, each block's text and each turn too.
 */
export function formatContext(context: PromptContext, all: boolean): string {
  const lines = [
    `run ${context.run} of ${context.worker}${context.previous ? `, against its previous run ${context.previous}` : " (its first run with a kept prompt)"}`,
    keyLine(context),
    "",
  ];
  context.blocks.forEach((block, index) => {
    if (context.previous && index === context.cachedPrefix)
      lines.push(
        `── cache boundary: the ${index} block${index === 1 ? "" : "s"} above are byte-identical to ${context.previous}'s ──`,
      );
    const mark = { same: " ", changed: "*", new: "+", first: " " }[block.since];
    lines.push(
      `${mark} ${block.label.padEnd(30)} ${String(block.chars).padStart(7)} chars ${String(block.tokens).padStart(6)} tokens  ${block.hash}${block.since === "changed" ? "  changed" : block.since === "new" ? "  new" : ""}`,
    );
    if (all) lines.push(...block.content.split("\n").map((line) => `    ${line}`), "");
  });
  const total = context.blocks.reduce((sum, block) => sum + block.chars, 0);
  lines.push(
    "",
    `${total} characters, about ${Math.ceil(total / 4)} tokens (estimated: four characters a token)`,
  );
  if (context.turns.length) {
    lines.push(
      "",
      `${context.turns.length} turn(s) of the session${all ? ":" : " (--all shows each)"}`,
    );
    if (all)
      for (const turn of context.turns)
        lines.push(
          `── turn ${turn.turn}, ${turn.chars} chars ──`,
          ...turn.input.split("\n").map((line) => `    ${line}`),
        );
  }
  return lines.join("\n");
}
