import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { costOf } from "../../runner/boundary/gateway/spend/prices.ts";
import { isModelCall, UsageMeter } from "../../runner/boundary/gateway/spend/usage.ts";
import {
  anthropicJson,
  anthropicStream,
  chatJson,
  chatStream,
  responsesStream,
  type Tokens,
} from "../support/usage-model.ts";

/** The usage meter against each provider's wire format, fed in awkward pieces. */
const tokens: Tokens = { model: "claude-sonnet-4-5", input: 300, output: 200, cacheRead: 100 };

async function meter(body: string | Buffer, type: string, encoding?: string, piece = 7) {
  const meterFor = UsageMeter.for(type, encoding);
  if (!meterFor) return undefined;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  // small pieces: events, lines and UTF-8 characters are cut at every point
  for (let at = 0; at < bytes.length; at += piece) meterFor.push(bytes.subarray(at, at + piece));
  return meterFor.finish();
}

const expected = {
  model: "claude-sonnet-4-5",
  input: 300,
  output: 200,
  cache_read: 100,
  cache_write: 0,
};

describe("the usage meter", () => {
  it("reads Anthropic Messages as JSON and as a stream", async () => {
    expect(await meter(anthropicJson(tokens), "application/json")).toEqual(expected);
    expect(await meter(anthropicStream(tokens), "text/event-stream; charset=utf-8")).toEqual(
      expected,
    );
  });

  it("reads Chat Completions (cached tokens split out of prompt_tokens) and Responses", async () => {
    expect(await meter(chatJson(tokens), "application/json")).toEqual(expected);
    expect(await meter(chatStream(tokens), "text/event-stream")).toEqual(expected);
    expect(await meter(responsesStream(tokens), "text/event-stream")).toEqual(expected);
  });

  it("reads a gzipped body, and lines cut anywhere including inside a character", async () => {
    expect(await meter(gzipSync(chatJson(tokens)), "application/json", "gzip")).toEqual(expected);
    const wide = { ...tokens, model: "modèle-ünï" };
    expect((await meter(chatStream(wide), "text/event-stream", undefined, 1))?.model).toBe(
      "modèle-ünï",
    );
  });

  it("reports nothing for answers without usage, broken JSON or other types", async () => {
    expect(await meter('{"ok":true}', "application/json")).toBeUndefined();
    expect(await meter('{"usage": {"input_tok', "application/json")).toBeUndefined();
    expect(await meter("data: [DONE]\n\n", "text/event-stream")).toBeUndefined();
    expect(await meter("hello", "text/plain")).toBeUndefined();
    expect(await meter(Buffer.from("not gzip"), "application/json", "gzip")).toBeUndefined();
    // a decompression bomb (100 MB of empty lines, then usage) is given up on, not inflated whole
    const bomb = gzipSync(
      Buffer.concat([Buffer.alloc(100 * 1024 * 1024, 0x0a), Buffer.from(chatStream(tokens))]),
    );
    expect(await meter(bomb, "text/event-stream", "gzip", 64 * 1024)).toBeUndefined();
    const small = gzipSync(
      Buffer.concat([Buffer.alloc(1024, 0x0a), Buffer.from(chatStream(tokens))]),
    );
    expect(await meter(small, "text/event-stream", "gzip")).toEqual(expected);
  });

  it("meters only generation endpoints, and prices known models", () => {
    expect(isModelCall("POST", "/v1/messages")).toBe(true);
    expect(isModelCall("POST", "/v1/chat/completions")).toBe(true);
    expect(isModelCall("POST", "/v1/responses")).toBe(true);
    expect(isModelCall("GET", "/v1/models")).toBe(false);
    const usage = { ...expected, cache_write: 0 };
    // 300 × $3 + 200 × $15 + 100 × $0.30 per million
    expect(costOf(usage, [])).toBeCloseTo(0.00393, 8);
    expect(
      costOf({ ...usage, model: "claude-sonnet-4-5" }, [
        { model: "claude-*", input: 1, output: 1 },
      ]),
    ).toBeCloseTo(0.0006, 8);
    expect(costOf({ ...usage, model: "scripted-1" }, [])).toBeUndefined();
  });
});
