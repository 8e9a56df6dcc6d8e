/**
 * bench/'s one way into the test kit: the scripted models (Chat Completions,
 * Anthropic's Messages, OpenAI's Responses) and the MCP doubles
 * (which the project keeps in test/support/, with every double), the test CA,
 * throwaway roster roots (one whose worker runs Claude Code or Codex) and the
 * CLI's path. A benchmark measures the same
 * parts the suite proves; naming them in one place keeps that dependency one
 * arrow that can be read, not one per benchmark.
 */

export { agentDeployment } from "../test/support/agent-deployment.ts";
export { AnthropicModelServer } from "../test/support/anthropic-model-server.ts";
export { testBrowser } from "../test/support/browser.ts";
export { bindElf, chatWorker, serverFor, until } from "../test/support/chat-turns.ts";
export { ROSTER_BIN } from "../test/support/cli.ts";
export {
  CORPUS_DIR,
  corpusAvailable,
  loadCorpus,
  markdownWords,
  wordF1,
  words,
} from "../test/support/corpus.ts";
export { DiscordStandIn } from "../test/support/discord-stand-in.ts";
export {
  listeningPort,
  makeGatewayRoot,
  startGatewayProcess,
} from "../test/support/gateway-process.ts";
export { connectMcp } from "../test/support/mcp-clients.ts";
export { McpUpstream } from "../test/support/mcp-upstream.ts";
export { ModelServer, type RecordedRequest } from "../test/support/model-server.ts";
export { ResponsesModelServer } from "../test/support/responses-model-server.ts";
export { freePort, makeRosterRoot, type RosterRoot } from "../test/support/roster-root.ts";
export { makeServerCertificate } from "../test/support/test-ca.ts";
