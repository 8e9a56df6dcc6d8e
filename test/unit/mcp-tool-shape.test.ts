/**
 * What the box makes of an MCP server's tools before pi and the model's
 * provider see them: hostile names and schemas are cut down or skipped with a
 * note, never thrown; the parameters always compile and validate in pi's
 * TypeBox, and stay within what providers accept.
 */
import { Compile } from "typebox/compile";
import { describe, expect, it } from "vitest";
import { renderFailure, renderResult } from "../../extensions/lib/mcp/result.ts";
import { readServers } from "../../extensions/lib/mcp/servers.ts";
import { shapeTools, toolName, toolParameters } from "../../extensions/lib/mcp/tool-shape.ts";

const PROVIDER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

describe("MCP tool names", () => {
  it("prefixes the server, keeps a clean name as is, and makes any other fit the providers' rule", () => {
    expect(toolName("tracker", "create_issue")).toBe("tracker__create_issue");
    const odd = ["rm -rf /", "ünïcödé tool", "a".repeat(300), "x\u0000y", "名前", "../../etc"];
    for (const name of odd) {
      const shaped = toolName("tracker", name);
      if (shaped !== undefined) expect(shaped).toMatch(PROVIDER_NAME);
    }
    // two long names that share their first 64 characters stay apart
    expect(toolName("t", `${"a".repeat(100)}1`)).not.toBe(toolName("t", `${"a".repeat(100)}2`));
  });

  it("skips tools with no name, no usable characters or a clashing name, and says which", () => {
    const { tools, notes } = shapeTools("srv", [
      { name: "ok", inputSchema: { type: "object" } },
      { inputSchema: {} },
      { name: 42 },
      { name: "名前" },
      { name: "o k" },
      { name: "o_k" },
      "not an object",
      null,
    ]);
    expect(tools.map((tool) => tool.name)).toEqual([
      "srv__ok",
      expect.stringMatching(/^srv__o_k_/),
      "srv__o_k",
    ]);
    expect(notes).toEqual(
      expect.arrayContaining([
        "srv: tool #1 skipped (no name)",
        "srv: tool #2 skipped (no name)",
        'srv: tool "名前" skipped (no usable characters in its name)',
        "srv: tool #6 skipped (no name)",
      ]),
    );
    expect(tools.map((tool) => tool.serverTool)).toEqual(["ok", "o k", "o_k"]);
  });

  it("bounds the number of tools and the description, and strips control characters", () => {
    const many = Array.from({ length: 500 }, (_, i) => ({
      name: `t${i}`,
      description: `line one\nline two\u0000${"x".repeat(5000)}`,
    }));
    const { tools, notes } = shapeTools("big", many);
    expect(tools.length).toBe(128);
    expect(notes.some((note) => note.includes("372 more tools skipped"))).toBe(true);
    expect(tools[0]?.description.length).toBeLessThan(1600);
    expect(tools[0]?.description.includes("\n")).toBe(false);
    expect(tools[0]?.description.includes(String.fromCharCode(0))).toBe(false);
  });
});

describe("MCP tool parameters", () => {
  const hostile: unknown[] = [
    undefined,
    null,
    "a string",
    [1, 2],
    { type: "string" },
    {
      type: "object",
      properties: { a: { $ref: "#/definitions/loop" } },
      definitions: { loop: { $ref: "#/definitions/loop" } },
    },
    {
      type: "object",
      properties: { "bad key!": { type: "string" }, ok: { type: "string", pattern: "(" } },
    },
    {
      type: "object",
      properties: { n: { type: "nonsense", enum: [{}, 1, "a"] } },
      required: ["n", "missing", 7],
    },
    {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 1000 }, (_, i) => [
          `p${i}`,
          { type: "string", description: "d".repeat(2000) },
        ]),
      ),
    },
    {
      type: "object",
      properties: {
        deep: JSON.parse(`${'{"type":"object","properties":{"x":'.repeat(50)}{}${"}}".repeat(50)}`),
      },
    },
    {
      type: "object",
      properties: { items: { type: "array", items: [{ type: "string" }] } },
      allOf: [{}],
      not: {},
    },
    {
      type: "object",
      properties: { u: { anyOf: Array.from({ length: 50 }, () => ({ type: "string" })) } },
    },
  ];

  it("always gives an object schema that pi's TypeBox compiles and that takes an empty or plain call", () => {
    for (const schema of hostile) {
      const { schema: shaped } = toolParameters(schema);
      expect(shaped.type).toBe("object");
      expect(JSON.stringify(shaped).length).toBeLessThanOrEqual(16_000);
      const validator = Compile(shaped);
      // a call naming nothing is judged by the schema, not a crash
      expect(() => validator.Check({})).not.toThrow();
      for (const name of Object.keys(shaped.properties as object))
        expect(name).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
    }
  });

  it("keeps a sound schema's meaning and reports what it cut", () => {
    const sound = {
      type: "object",
      properties: {
        title: { type: "string", minLength: 1 },
        labels: { type: "array", items: { type: "string", enum: ["bug", "docs"] } },
      },
      required: ["title"],
      additionalProperties: false,
    };
    const { schema, cuts } = toolParameters(sound);
    expect(schema).toEqual(sound);
    expect(cuts).toEqual([]);
    expect(toolParameters(hostile[6]).cuts).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/property names/),
        expect.stringMatching(/pattern/),
      ]),
    );
    expect(toolParameters(hostile[8]).cuts.join(" ")).toMatch(/more than 64 properties/);
  });
});

describe("MCP results and failures", () => {
  it("flattens content, names binary parts, and cuts a huge result saying so", () => {
    const { text, isError } = renderResult({
      content: [
        { type: "text", text: "hello" },
        { type: "image", mimeType: "image/png", data: "AAAA" },
        { type: "weird" },
        { type: "text", text: "x".repeat(200_000) },
      ],
    });
    expect(isError).toBe(false);
    expect(text).toMatch(/^hello\n\[image, image\/png, about 3 bytes: not shown\]/);
    expect(text.length).toBeLessThan(65_000);
    expect(text).toMatch(/cut: the result was \d+ characters/);
    expect(renderResult("garbage").isError).toBe(true);
    expect(
      renderResult({ isError: true, content: [{ type: "text", text: "no such issue" }] }),
    ).toEqual({ text: "no such issue", isError: true });
  });

  it("shows a JSON-RPC error's code and message as sent", () => {
    const error = Object.assign(
      new Error("MCP error -32050: denied by rule mcp-no-delete: ask for delete rights"),
      { code: -32050 },
    );
    expect(renderFailure("tracker", "delete_issue", error)).toBe(
      "MCP server tracker answered delete_issue with JSON-RPC error -32050: denied by rule mcp-no-delete: ask for delete rights",
    );
    expect(renderFailure("tracker", "x", new Error("fetch failed"))).toBe(
      "MCP server tracker failed on x: fetch failed",
    );
  });

  it("reads the host's list, leaving out entries that don't parse", () => {
    const { servers, notes } = readServers(
      JSON.stringify([
        { name: "a", transport: "http", url: "https://a.example/mcp" },
        { name: "b", transport: "stdio", command: ["node", "b.mjs"], env: {} },
        { name: "c", transport: "http", url: "http://plain.example" },
        { name: "A B", transport: "http", url: "https://x.example" },
        { name: "a", transport: "sse", url: "https://again.example" },
      ]),
    );
    expect(servers.map((server) => server.name)).toEqual(["a", "b"]);
    expect(notes.length).toBe(3);
    expect(readServers("{not json").notes).toEqual(["ROSTER_MCP_JSON is not JSON: no MCP servers"]);
  });
});
