import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/**
 * Model usage read from the provider's own answer, as it passes: the token
 * counts Anthropic Messages, OpenAI Chat Completions and Responses (and
 * OpenAI-compatible servers that report `usage`) put in a JSON body or in the
 * events of a stream. The box gets every byte as it comes; the meter only
 * looks at a copy. A stream is read event by event (only the line being
 * assembled is kept, and a line past MAX_LINE is skipped); a JSON body is
 * kept up to MAX_JSON for one parse at its end. A compressed body is
 * inflated on the side for the same reading.
 */
export interface ModelUsage {
  model?: string;
  /** Input tokens not read from a cache. */
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}

const MAX_JSON = 8 * 1024 * 1024;
const MAX_LINE = 1024 * 1024;
/** Past this much inflated output a body is not metered (a decompression bomb costs little). */
const MAX_INFLATED = 64 * 1024 * 1024;
const USAGE = Buffer.from('"usage"');
const DATA = Buffer.from("data:");

/** Calls the meter looks at: a POST to a model API's generation endpoint. */
export function isModelCall(method: string, path: string): boolean {
  return method === "POST" && /\/(chat\/completions|completions|responses|messages)$/.test(path);
}

const num = (value: unknown) => (typeof value === "number" && value >= 0 ? value : 0);

/** The usage one parsed body or event reports (undefined when it reports none). */
export function usageOf(message: unknown): Partial<ModelUsage> | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const m = message as Record<string, unknown>;
  // Anthropic's message_start carries the message; Responses' completion event the response
  const inner = (m.message ?? m.response) as Record<string, unknown> | undefined;
  const usage = (m.usage ?? inner?.usage) as Record<string, unknown> | undefined | null;
  const model = typeof m.model === "string" ? m.model : (inner?.model as string | undefined);
  if (!usage || typeof usage !== "object") return model ? { model } : undefined;
  const out: Partial<ModelUsage> = model ? { model } : {};
  if ("prompt_tokens" in usage || "completion_tokens" in usage) {
    // Chat Completions: prompt_tokens counts the cached part too
    const cached = num((usage.prompt_tokens_details as Record<string, unknown>)?.cached_tokens);
    out.input = Math.max(0, num(usage.prompt_tokens) - cached);
    out.cache_read = cached;
    out.output = num(usage.completion_tokens);
  } else if ("input_tokens_details" in usage || "output_tokens_details" in usage) {
    // Responses: input_tokens counts the cached part too
    const cached = num((usage.input_tokens_details as Record<string, unknown>)?.cached_tokens);
    out.input = Math.max(0, num(usage.input_tokens) - cached);
    out.cache_read = cached;
    out.output = num(usage.output_tokens);
  } else {
    // Anthropic: input_tokens excludes cache reads and writes; a delta's output is cumulative
    if ("input_tokens" in usage) out.input = num(usage.input_tokens);
    if ("output_tokens" in usage) out.output = num(usage.output_tokens);
    if ("cache_read_input_tokens" in usage) out.cache_read = num(usage.cache_read_input_tokens);
    if ("cache_creation_input_tokens" in usage)
      out.cache_write = num(usage.cache_creation_input_tokens);
  }
  return out;
}

export class UsageMeter {
  private found: Partial<ModelUsage> = {};
  private seen = false;
  private json: Buffer[] | undefined = [];
  private jsonBytes = 0;
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private skipping = false;
  /** The body could not be read whole (it would not inflate, or inflated past the cap). */
  private unreadable = false;
  private readonly inflater: Transform | undefined;
  private readonly inflated: Promise<void>;

  constructor(
    private readonly kind: "json" | "sse",
    encoding: string | undefined,
  ) {
    const coding = (encoding ?? "").trim().toLowerCase();
    this.inflater =
      coding === "gzip" || coding === "x-gzip"
        ? createGunzip()
        : coding === "br"
          ? createBrotliDecompress()
          : coding === "deflate"
            ? createInflate()
            : undefined;
    const inflater = this.inflater;
    this.inflated = inflater
      ? new Promise((resolve) => {
          let inflatedBytes = 0;
          inflater.on("data", (chunk: Buffer) => {
            inflatedBytes += chunk.length;
            if (inflatedBytes <= MAX_INFLATED) this.read(chunk);
            else {
              this.unreadable = true;
              inflater.destroy();
              resolve();
            }
          });
          inflater.on("end", resolve);
          // a body that does not inflate is simply not metered
          inflater.on("error", () => {
            this.unreadable = true;
            resolve();
          });
        })
      : Promise.resolve();
  }

  /** The meter for a response, or undefined when it is not one a model reports usage in. */
  static for(
    contentType: string | undefined,
    encoding: string | undefined,
  ): UsageMeter | undefined {
    const type = (contentType ?? "").toLowerCase();
    if (type.includes("text/event-stream")) return new UsageMeter("sse", encoding);
    if (type.includes("json")) return new UsageMeter("json", encoding);
    return undefined;
  }

  /** A copy of a body chunk, as it goes to the box. */
  push(chunk: Buffer): void {
    if (this.unreadable) return;
    if (this.inflater) this.inflater.write(chunk);
    else this.read(chunk);
  }

  /** The usage the whole body reported, once it has ended (undefined if none). */
  async finish(): Promise<ModelUsage | undefined> {
    if (this.inflater) {
      if (!this.unreadable) this.inflater.end();
      await this.inflated;
    }
    if (this.unreadable) return undefined;
    if (this.kind === "json" && this.json) {
      try {
        this.merge(usageOf(JSON.parse(Buffer.concat(this.json).toString("utf8"))));
      } catch {
        // not JSON after all: nothing to meter
      }
    } else if (this.kind === "sse" && !this.skipping) this.event(Buffer.concat(this.partial));
    if (!this.seen) return undefined;
    return {
      ...(this.found.model ? { model: this.found.model } : {}),
      input: this.found.input ?? 0,
      output: this.found.output ?? 0,
      cache_read: this.found.cache_read ?? 0,
      cache_write: this.found.cache_write ?? 0,
    };
  }

  private read(chunk: Buffer): void {
    if (this.kind === "json") {
      if (!this.json) return;
      this.jsonBytes += chunk.length;
      if (this.jsonBytes > MAX_JSON) this.json = undefined;
      else this.json.push(chunk);
      return;
    }
    // lines are found and filtered as bytes: only a line that mentions "usage" is decoded
    let from = 0;
    let newline = chunk.indexOf(10, from);
    while (newline >= 0) {
      const segment = chunk.subarray(from, newline);
      if (!this.skipping)
        this.event(this.partial.length ? Buffer.concat([...this.partial, segment]) : segment);
      this.partial = [];
      this.partialBytes = 0;
      this.skipping = false;
      from = newline + 1;
      newline = chunk.indexOf(10, from);
    }
    if (this.skipping || from >= chunk.length) return;
    this.partialBytes += chunk.length - from;
    if (this.partialBytes > MAX_LINE) {
      this.partial = [];
      this.partialBytes = 0;
      this.skipping = true;
    } else this.partial.push(chunk.subarray(from));
  }

  /** One line of an event stream: only `data:` lines about usage matter. */
  private event(line: Buffer): void {
    // every wire format puts its counts under "usage": other events (the bulk of
    // a stream, its content) are never decoded or parsed
    if (!line.includes(USAGE) || !line.subarray(0, 5).equals(DATA)) return;
    const data = line.toString("utf8", 5).trim();
    if (!data.startsWith("{")) return;
    try {
      this.merge(usageOf(JSON.parse(data)));
    } catch {
      // a data line that is not JSON carries no usage
    }
  }

  private merge(usage: Partial<ModelUsage> | undefined): void {
    if (!usage) return;
    if (usage.model) this.found.model ??= usage.model;
    for (const field of ["input", "output", "cache_read", "cache_write"] as const) {
      const value = usage[field];
      if (value === undefined) continue;
      this.seen = true;
      // streams repeat or grow counts (a delta's output is cumulative): the largest is the total
      this.found[field] = Math.max(this.found[field] ?? 0, value);
    }
  }
}
