import { type Static, Type } from "@sinclair/typebox";

/**
 * Which agent a worker's box runs: pi (the engine roster is built on),
 * Claude Code or Codex (agent.ts says what each speaks).
 */
export const AgentKind = Type.Union([
  Type.Literal("pi"),
  Type.Literal("claude"),
  Type.Literal("codex"),
]);
export type AgentKind = Static<typeof AgentKind>;
