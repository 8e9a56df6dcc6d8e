/** Request facts as the gateway builds them, for judging rules by table in unit tests. */
import type { RequestFacts } from "../../runner/boundary/gateway/judging/request-facts.ts";

export const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({
  subject: "org/elf",
  runId: "r1",
  origins: [],
  protocol: "https",
  method: "GET",
  host: "api.example.com",
  port: 443,
  path: "/",
  query: "",
  headers: {},
  bodySize: 0,
  mcp: null,
  ...over,
});
