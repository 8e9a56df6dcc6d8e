/**
 * The box's MCP client against a real SDK server and a hostile one, on the
 * host (no box, no gateway: the servers speak plain HTTP here, and the box
 * tests cover the door): every failure comes back in time as an error that
 * says what happened, and the bound on a response holds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectServer } from "../../extensions/lib/mcp/connect.ts";
import { renderFailure, renderResult } from "../../extensions/lib/mcp/result.ts";
import { type HostileMcp, startHostileMcp } from "../support/mcp-hostile.ts";
import { type McpTestServer, startMcpServer } from "../support/mcp-server.ts";
import { startSseMcpServer } from "../support/mcp-sse-server.ts";

const LIMITS = { listMs: 3_000, callMs: 2_000, maxBytes: 4 * 1024 * 1024 };

describe("the box's MCP client", () => {
  let good: McpTestServer;
  let hostile: HostileMcp;
  beforeAll(async () => {
    good = await startMcpServer({
      name: "127.0.0.1",
      token: "right",
      dir: "/nonexistent-unused",
      tls: false,
      tools: [
        {
          name: "echo",
          description: "echo",
          inputSchema: { type: "object", properties: { say: { type: "string" } } },
          run: (args) => `you said ${String(args.say)}`,
        },
      ],
    });
    hostile = await startHostileMcp({ name: "127.0.0.1", dir: "/nonexistent-unused", tls: false });
  });
  afterAll(async () => {
    await Promise.all([good?.stop(), hostile?.stop()]);
  });

  it("speaks the older HTTP+SSE transport to a server that only has that", async () => {
    const sse = await startSseMcpServer([
      {
        name: "shout",
        description: "shout",
        inputSchema: { type: "object", properties: { say: { type: "string" } } },
        run: (args) => String(args.say).toUpperCase(),
      },
    ]);
    try {
      const server = await connectServer({ name: "old", transport: "sse", url: sse.url }, LIMITS);
      try {
        expect(server.tools).toEqual([expect.objectContaining({ name: "shout" })]);
        expect(renderResult(await server.call("shout", { say: "over sse" })).text).toBe("OVER SSE");
        expect(sse.calls).toEqual([{ tool: "shout", args: { say: "over sse" } }]);
      } finally {
        await server.close();
      }
    } finally {
      await sse.stop();
    }
  });

  it("a server that refuses the credential is named with what it answered, within the listing deadline", async () => {
    const started = Date.now();
    const failure = await connectServer(
      { name: "good", transport: "http", url: good.url },
      LIMITS,
    ).then(
      () => "connected",
      (error: Error) => error.message,
    );
    expect(failure).toMatch(/invalid_token/);
    expect(Date.now() - started).toBeLessThan(LIMITS.listMs + 500);
  });

  it("an endless stream, a huge answer and malformed JSON-RPC each fail their call in time; the good tool still answers", async () => {
    const server = await connectServer(
      { name: "hostile", transport: "http", url: hostile.url },
      LIMITS,
    );
    try {
      const outcome = async (tool: string) => {
        const started = Date.now();
        try {
          return { text: renderResult(await server.call(tool, {})).text, ms: Date.now() - started };
        } catch (error) {
          return { text: renderFailure("hostile", tool, error), ms: Date.now() - started };
        }
      };
      // at once, as pi runs a turn's calls: the cut answer fails its own call, not the other
      const [endless, huge] = await Promise.all([outcome("endless"), outcome("huge")]);
      expect(endless.text).toBe(
        "MCP server hostile failed on endless: no answer within 2 s; the call was cancelled",
      );
      expect(endless.ms).toBeLessThan(3_000);
      expect(huge.text).toBe(
        "MCP server hostile failed on huge: the server's response passed 4 MiB and was cut off",
      );
      const garbage = await outcome("garbage");
      expect(garbage.text).toMatch(
        /^MCP server hostile failed on garbage: its answer was not valid JSON-RPC/,
      );
      expect((await outcome("fine")).text).toBe("fine: all good");
      expect(hostile.asked).toContain("notifications/cancelled");
    } finally {
      await server.close();
    }
  });

  it("a stdio server that dies at start is reported with the end of its stderr", async () => {
    const failure = await connectServer(
      {
        name: "dies",
        transport: "stdio",
        command: [
          process.execPath,
          "-e",
          "console.error('cannot find module some-mcp-server'); process.exit(3)",
        ],
        env: {},
      },
      LIMITS,
    ).then(
      () => "connected",
      (error: Error) => error.message,
    );
    expect(failure).toMatch(/its stderr: cannot find module some-mcp-server/);
  });
});
