import { deflateSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { firstDuplicateKey } from "../../runner/boundary/gateway/mcp/json-duplicate-keys.ts";
import {
  DECODED_MAX_BYTES,
  mightBeJson,
  readMcp,
} from "../../runner/boundary/gateway/mcp/reading.ts";

/**
 * The gateway's one reading of a JSON-RPC body, by table: every way a box may
 * write a message its server still runs is read as that message, and every
 * way the gateway can't be sure of is refused on a host that speaks MCP.
 */
const call = (tool: string) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool } });
const json = { "content-type": "application/json" };
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe("reading an MCP message as its server would", () => {
  it.each([
    ["application/json", {}],
    ["Application/JSON", {}],
    ["APPLICATION/JSON; charset=utf-8", {}],
    ['application/json; Charset="UTF8"', {}],
    ["text/plain", {}],
    ["", {}],
  ])("reads a tools/call sent as %j", (type, extra) => {
    const headers: Record<string, string> = { ...extra };
    if (type) headers["content-type"] = type;
    const read = readMcp(headers, Buffer.from(call("delete_repo")), "mcp");
    expect(read).toMatchObject({
      kind: "message",
      mcp: { method: "tools/call", tool: "delete_repo" },
    });
  });

  it("drops a UTF-8 byte-order mark and undoes gzip, deflate and br", () => {
    const body = Buffer.from(call("delete_repo"));
    const cases: Array<[Record<string, string>, Buffer]> = [
      [json, Buffer.concat([BOM, body])],
      [{ ...json, "content-encoding": "gzip" }, gzipSync(body)],
      [{ ...json, "content-encoding": "Deflate" }, deflateSync(body)],
      [{ ...json, "content-encoding": "gzip, deflate" }, deflateSync(gzipSync(body))],
      [{ ...json, "content-encoding": "identity" }, body],
    ];
    for (const [headers, bytes] of cases) {
      expect(readMcp(headers, bytes, "mcp")).toMatchObject({ mcp: { tool: "delete_repo" } });
    }
  });

  it.each([
    [
      "another charset",
      { "content-type": "application/json; charset=utf-16le" },
      Buffer.from(call("x"), "utf16le"),
      /charset "utf-16le"/,
    ],
    [
      "two charsets",
      { "content-type": "application/json; charset=utf-8; charset=latin1" },
      Buffer.from(call("x")),
      /charset "latin1"/,
    ],
    [
      "an unknown encoding",
      { ...json, "content-encoding": "compress" },
      Buffer.from(call("x")),
      /Content-Encoding "compress"/,
    ],
    [
      "a broken gzip",
      { ...json, "content-encoding": "gzip" },
      Buffer.from(call("x")),
      /could not be decoded/,
    ],
    [
      "a gzip bomb",
      { ...json, "content-encoding": "gzip" },
      gzipSync(Buffer.alloc(DECODED_MAX_BYTES + 1, 32)),
      /within 4 MiB/,
    ],
    [
      "invalid UTF-8",
      json,
      Buffer.concat([
        Buffer.from(call("x")).subarray(0, -3),
        Buffer.from([0xff]),
        Buffer.from("}}"),
      ]),
      /not valid UTF-8/,
    ],
    [
      "a repeated key",
      json,
      Buffer.from(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\\u0061me":"delete_repo"}}',
      ),
      /"name" appears twice/,
    ],
    [
      "form data",
      { "content-type": "application/x-www-form-urlencoded" },
      Buffer.from("method=tools/call"),
      /not JSON/,
    ],
    [
      "JSON that is no message",
      json,
      Buffer.from('{"hello":1}'),
      /neither a JSON-RPC request nor a response/,
    ],
    [
      "a method that isn't a string",
      json,
      Buffer.from('{"jsonrpc":"2.0","id":1,"method":["tools/call"]}'),
      /method is not a string/,
    ],
    [
      "a tools/call with no tool",
      json,
      Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}'),
      /without a tool name/,
    ],
  ])("refuses %s on a host that speaks MCP", (_name, headers, body, reason) => {
    const read = readMcp(headers, body, "mcp");
    expect(read.kind).toBe("unreadable");
    expect(read.kind === "unreadable" ? read.reason : "").toMatch(reason);
  });

  it("passes a JSON-RPC response and flags a batch", () => {
    expect(readMcp(json, Buffer.from('{"jsonrpc":"2.0","id":3,"result":{}}'), "mcp")).toEqual({
      kind: "response",
    });
    expect(readMcp(json, Buffer.from(`[${call("echo")}]`), "mcp")).toEqual({ kind: "batch" });
    expect(readMcp(json, Buffer.from("[]"), "mcp")).toEqual({ kind: "batch" });
  });

  it("elsewhere reads JSON bodies for the audit line and lets the rest pass", () => {
    expect(readMcp({ "content-type": "TEXT/JSON" }, Buffer.from(call("echo")), "no")).toMatchObject(
      { mcp: { tool: "echo" } },
    );
    expect(readMcp({ "content-type": "text/plain" }, Buffer.from(call("echo")), "no")).toEqual({
      kind: "none",
    });
    expect(readMcp(json, Buffer.from("not json"), "no")).toEqual({ kind: "none" });
    expect(readMcp(json, Buffer.from("[1,2]"), "no")).toEqual({ kind: "none" });
    expect(readMcp(json, Buffer.from(`[${call("echo")}]`), "no")).toEqual({ kind: "batch" });
  });
});

describe("where an MCP rule names no host, so any host may speak MCP", () => {
  it("judges a message, passes what is no message, and refuses what could be JSON but can't be read", () => {
    const model = Buffer.from(
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    );
    expect(readMcp(json, model, "maybe")).toEqual({ kind: "none" });
    expect(readMcp({ "content-type": "image/png" }, Buffer.from([0x89, 0x50]), "maybe")).toEqual({
      kind: "none",
    });
    expect(
      readMcp({ "content-type": "text/plain" }, Buffer.from(call("delete_repo")), "maybe"),
    ).toMatchObject({
      mcp: { tool: "delete_repo" },
    });
    for (const [headers, body] of [
      [{ "content-type": "application/json; charset=utf-16le" }, Buffer.from(call("x"), "utf16le")],
      [{ "content-type": "text/plain" }, Buffer.from(call("x"), "utf16le")],
      [
        { "content-type": "application/octet-stream", "content-encoding": "zstd" },
        Buffer.from("x"),
      ],
      [
        { "content-type": "text/plain" },
        Buffer.from(' {"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","name":"b"}}'),
      ],
    ] as Array<[Record<string, string>, Buffer]>) {
      expect(readMcp(headers, body, "maybe").kind).toBe("unreadable");
    }
  });

  it("reads large bodies that could be JSON and lets uploads stream", () => {
    expect(mightBeJson({})).toBe(true);
    expect(mightBeJson({ "content-type": "Application/Json" })).toBe(true);
    expect(mightBeJson({ "content-type": "text/plain; charset=utf-16" })).toBe(true);
    expect(mightBeJson({ "content-type": "image/png", "content-encoding": "gzip" })).toBe(true);
    expect(mightBeJson({ "content-type": "image/png" })).toBe(false);
    expect(mightBeJson({ "content-type": "multipart/form-data; boundary=x" })).toBe(false);
  });
});

describe("duplicate keys", () => {
  it("finds a repeated key at any depth, decoded, and ignores arrays and values", () => {
    expect(firstDuplicateKey('{"a":1,"b":{"c":1,"c":2}}')).toBe("c");
    expect(firstDuplicateKey('{"a":"a","b":["a","a"],"c":{"a":1}}')).toBeUndefined();
    expect(firstDuplicateKey('{"\\"":1,"\\u0022":2}')).toBe('"');
    expect(firstDuplicateKey('[{"a":1},{"a":1}]')).toBeUndefined();
  });

  it("reads in linear time: a megabyte of keys in one pass", () => {
    const keys = Array.from({ length: 50_000 }, (_, index) => `"k${index}":"${"v".repeat(8)}"`);
    const text = `{${keys.join(",")},"k7":0}`;
    expect(firstDuplicateKey(text)).toBe("k7");
  });
});
