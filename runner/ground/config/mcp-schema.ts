import { type Static, Type } from "@sinclair/typebox";
import { Edges } from "./grant-schema.ts";

/**
 * The two ways a worker gets an MCP server. A remote one is a connection
 * (connections/<name>.toml, `kind = "mcp"`): the gateway lets the box reach its
 * host and injects its credential, like a service connection. An in-box one is
 * declared in worker.toml (`[[mcp]]`): the box starts the command and speaks
 * to it over stdio; its own traffic goes through the door like any other.
 * Either way the box learns the list from the host (ROSTER_MCP_JSON), never
 * from a file it can write.
 */

/** What an MCP server is called: the prefix of its tools' names (`<server>__<tool>`). */
export const MCP_SERVER_NAME = "^[a-z0-9][a-z0-9_-]{0,31}$";
const SERVER_NAME_WORDS = "lower-case letters, digits, '_' or '-', at most 32";

export const McpConnection = Type.Object(
  {
    kind: Type.Literal("mcp"),
    url: Type.String({
      pattern: "^https://[^\\s/?#]+(/[^\\s]*)?$",
      description: "an https:// URL (the server's MCP endpoint)",
    }),
    /** "http" (streamable HTTP, the default) or "sse" (the older HTTP+SSE transport). */
    transport: Type.Optional(Type.Union([Type.Literal("http"), Type.Literal("sse")])),
    /** How long one tool call may take, in seconds (default 60). */
    call_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    inject_header: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9-]+$" })),
    inject_value: Type.Optional(Type.String()),
    grant: Type.Optional(Edges),
  },
  { additionalProperties: false },
);
export type McpConnection = Static<typeof McpConnection>;

/** `[[mcp]]` in worker.toml. Its env is visible in the box: no secrets (the gateway injects those). */
export const McpServerDeclaration = Type.Object(
  {
    name: Type.String({ pattern: MCP_SERVER_NAME, description: SERVER_NAME_WORDS }),
    command: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'a command and its arguments, e.g. ["npx", "some-mcp-server"]',
    }),
    /** How long one tool call may take, in seconds (default 60). */
    call_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    env: Type.Optional(
      Type.Record(
        Type.String({
          pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
          description: "an environment variable name",
        }),
        Type.String(),
      ),
    ),
  },
  { additionalProperties: false },
);
export type McpServerDeclaration = Static<typeof McpServerDeclaration>;

/** One entry of ROSTER_MCP_JSON, the box's list (extensions/lib/mcp/servers.ts reads it). */
export type McpServerEntry = (
  | { name: string; transport: "http" | "sse"; url: string }
  | { name: string; transport: "stdio"; command: string[]; env: Record<string, string> }
) & { callTimeoutSecs?: number };
